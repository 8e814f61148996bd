/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The cap on unacknowledged packets is per peer (transport/peer.c), through
 * the engine's entry points: one sending device with QPs to two peers, and
 * a wire the test carries frames over by hand. One peer never answers (a
 * stopped process: its frames are lost and it sends no ACK); the other
 * does. Then:
 *  - the QPs to the peer that answers go on: every WRITE to it completes;
 *  - the QPs to the silent peer together never have more than the cap out,
 *    nor do those to the other, in any round (checked both by the engine's
 *    count and by the distinct PSNs seen on the wire toward the silent one).
 * A peer is a destination GID and a block of 4096 destination QP numbers:
 * run once with the two peers as two processes behind one address (one
 * receiving device, QPs in blocks 1 and 2) and once as two addresses with
 * QP numbers in the same block.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "fake_host.h"
#include "frame.h"
#include "peer.h"
#include "psn.h"
#include "qp.h"
#include "ur_util.h"
#include "wire.h"

#define NBUF 1024
#define NQP 4	  /* QPs to each peer */
#define CAP 64	  /* max_peer_inflight */
#define MSG 16384 /* 16 packets at path MTU 1024 */
#define DEPTH 16  /* WRITEs outstanding per QP: 256 packets, 4 QPs 1024 */
#define WRITES 64 /* per QP to the peer that answers */
#define BUFLEN (1u << 20)
#define T0 1000000000ull
#define QPN_A 0x100

static struct fake_host host_a, host_b, host_c;
static struct ur_dev *da, *db, *dc;
static struct ur_cq cqa, cqb, cqc;
static struct ur_mr *mra, *mrb, *mrc;
static uint8_t *bufa, *bufb, *bufc;

static const uint8_t mac_a[6] = {0x02, 0, 0, 0, 0, 0xa};
static const uint8_t mac_b[6] = {0x02, 0, 0, 0, 0, 0xb};
static const uint8_t mac_c[6] = {0x02, 0, 0, 0, 0, 0xc};
static const uint8_t ip_a[4] = {10, 63, 0, 1};
static const uint8_t ip_b[4] = {10, 63, 0, 2};
static const uint8_t ip_c[4] = {10, 63, 0, 3};

/* A peer as the sender sees it, and where its QPs live. */
struct peer {
	struct ur_dev *dev;
	struct fake_host *host;
	struct ur_mr *mr;
	uint8_t *buf; /* its memory, which the WRITEs fill */
	const uint8_t *mac, *ip;
	uint32_t qpn;	       /* its first QP's number */
	struct ur_qp *rq[NQP]; /* its QPs */
	struct ur_qp *sq[NQP]; /* the sender's QPs to it */
	unsigned posted[NQP], done[NQP];
};

static struct peer peers[2]; /* [0] answers, [1] is stopped */

static void host_init(struct fake_host *x, uint64_t seed)
{
	const struct fake_host_opts o = {
	    .nbufs = NBUF,
	    .keep = FAKE_HOST_HOLD,
	    .seed = seed,
	    .fail = fake_host_ck_fail,
	};

	ck_assert_int_eq(fake_host_init(x, &o), 0);
}

static void connect(struct ur_qp *q, const uint8_t *smac, const uint8_t *dmac, const uint8_t *sip,
		    const uint8_t *dip, uint32_t dqpn)
{
	struct ur_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = UR_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = UR_ACCESS_LOCAL_WRITE | UR_ACCESS_REMOTE_WRITE;
	ck_assert_int_eq(
	    ur_qp_modify(q, &a, UR_QP_STATE | UR_QP_PKEY_INDEX | UR_QP_PORT | UR_QP_ACCESS_FLAGS,
			 T0),
	    0);
	a.qp_state = UR_QPS_RTR;
	a.path_mtu = 3; /* 1024 */
	a.dest_qp_num = dqpn;
	a.rq_psn = 0xfffff0; /* across the PSN wrap */
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	memcpy(a.av.path.smac, smac, 6);
	memcpy(a.av.path.dmac, dmac, 6);
	ur_gid_from_v4(&a.av.path.sgid, sip);
	ur_gid_from_v4(&a.av.path.dgid, dip);
	a.av.path.hop_limit = 64;
	a.av.path.udp_sport = 0xc123;
	a.av.resolved = 1;
	ck_assert_int_eq(ur_qp_modify(q, &a,
				      UR_QP_STATE | UR_QP_AV | UR_QP_PATH_MTU | UR_QP_DEST_QPN |
					  UR_QP_RQ_PSN | UR_QP_MAX_DEST_RD_ATOMIC |
					  UR_QP_MIN_RNR_TIMER,
				      T0),
			 0);
	a.qp_state = UR_QPS_RTS;
	a.sq_psn = 0xfffff0;
	a.timeout = 20; /* 4 s: no retransmission in the test's few microseconds */
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	ck_assert_int_eq(ur_qp_modify(q, &a,
				      UR_QP_STATE | UR_QP_SQ_PSN | UR_QP_TIMEOUT | UR_QP_RETRY_CNT |
					  UR_QP_RNR_RETRY | UR_QP_MAX_QP_RD_ATOMIC,
				      T0),
			 0);
}

static struct ur_qp *make_qp(struct ur_dev *d, struct ur_cq *cq, uint32_t qpn)
{
	struct ur_qp_init qi;
	struct ur_qp *q;

	memset(&qi, 0, sizeof(qi));
	qi.type = UR_QPT_RC;
	qi.pd = 1;
	qi.max_send_wr = 64;
	qi.max_recv_wr = 4;
	qi.max_send_sge = 1;
	qi.max_recv_sge = 1;
	qi.send_cq = qi.recv_cq = cq;
	qi.qpn = qpn;
	ck_assert_int_eq(ur_qp_create(d, &qi, &q), 0);
	return q;
}

static void make_dev(struct fake_host *h, uint64_t seed, struct ur_cq *cq, uint8_t **buf,
		     struct ur_mr **mr, struct ur_dev **d)
{
	struct ur_dev_config cfg;

	ur_dev_config_default(&cfg);
	cfg.max_peer_inflight = CAP;
	host_init(h, seed);
	*buf = calloc(1, BUFLEN);
	ck_assert_ptr_nonnull(*buf);
	ck_assert_int_eq(ur_dev_create(&cfg, &fake_host_ops, h, NULL, d), 0);
	ck_assert_int_eq(ur_cq_init(cq, 4096, NULL), 0);
	ck_assert_int_eq(ur_dev_reg_mr(*d, (uintptr_t)*buf, *buf, BUFLEN,
				       UR_ACCESS_LOCAL_WRITE | UR_ACCESS_REMOTE_WRITE, 1, mr),
			 0);
}

/* two_hosts: the peers are B and C, QPs in block 1 each; else both on B, blocks 1 and 2. */
static void setup(bool two_hosts)
{
	make_dev(&host_a, 1, &cqa, &bufa, &mra, &da);
	make_dev(&host_b, 2, &cqb, &bufb, &mrb, &db);
	make_dev(&host_c, 3, &cqc, &bufc, &mrc, &dc);
	memset(peers, 0, sizeof(peers));
	peers[0] = (struct peer){.dev = db,
				 .host = &host_b,
				 .mr = mrb,
				 .buf = bufb,
				 .mac = mac_b,
				 .ip = ip_b,
				 .qpn = 0x1000};
	if (two_hosts)
		peers[1] = (struct peer){.dev = dc,
					 .host = &host_c,
					 .mr = mrc,
					 .buf = bufc,
					 .mac = mac_c,
					 .ip = ip_c,
					 .qpn = 0x1100};
	else
		peers[1] = (struct peer){.dev = db,
					 .host = &host_b,
					 .mr = mrb,
					 .buf = bufb,
					 .mac = mac_b,
					 .ip = ip_b,
					 .qpn = 0x2000};
	for (int p = 0; p < 2; p++)
		for (int i = 0; i < NQP; i++) {
			struct peer *x = &peers[p];
			uint32_t sqpn = QPN_A + (uint32_t)(p * NQP + i);

			x->sq[i] = make_qp(da, &cqa, sqpn);
			x->rq[i] =
			    make_qp(x->dev, x->dev == db ? &cqb : &cqc, x->qpn + (uint32_t)i);
			connect(x->sq[i], mac_a, x->mac, ip_a, x->ip, x->qpn + (uint32_t)i);
			connect(x->rq[i], x->mac, mac_a, x->ip, ip_a, sqpn);
		}
}

static void teardown(void)
{
	fake_host_drop_held(&host_a);
	fake_host_drop_held(&host_b);
	fake_host_drop_held(&host_c);
	for (int p = 0; p < 2; p++)
		for (int i = 0; i < NQP; i++) {
			ur_qp_destroy(peers[p].sq[i]);
			ur_qp_destroy(peers[p].rq[i]);
		}
	/* every peer went with the last QP bound to it */
	ck_assert_uint_eq(da->npeers, 0);
	ur_dev_dereg_mr(da, mra);
	ur_dev_dereg_mr(db, mrb);
	ur_dev_dereg_mr(dc, mrc);
	ur_dev_destroy(da);
	ur_dev_destroy(db);
	ur_dev_destroy(dc);
	ur_cq_fini(&cqa);
	ur_cq_fini(&cqb);
	ur_cq_fini(&cqc);
	fake_host_check_idle(&host_a);
	fake_host_check_idle(&host_b);
	fake_host_check_idle(&host_c);
	fake_host_fini(&host_a);
	fake_host_fini(&host_b);
	fake_host_fini(&host_c);
	free(bufa);
	free(bufb);
	free(bufc);
}

static void post_write(struct peer *x, int i)
{
	struct ur_wq *sq = ur_qp_sq(x->sq[i]);
	struct ur_send_wqe *w = ur_wq_reserve(sq, 0);

	ck_assert_ptr_nonnull(w);
	memset(w, 0, sq->stride);
	w->wr_id = (uint64_t)(x - peers) << 8 | (uint64_t)i;
	w->opcode = UR_WR_RDMA_WRITE;
	w->flags = UR_SEND_SIGNALED;
	w->signaled = 1;
	w->length = MSG;
	w->num_sge = 1;
	w->sge[0].addr = (uintptr_t)bufa;
	w->sge[0].length = MSG;
	w->sge[0].lkey = mra->key;
	w->remote_addr = (uintptr_t)x->buf;
	w->rkey = x->mr->key;
	ur_wq_commit(sq, 1);
	x->posted[i]++;
}

static const struct ur_bth *bth_of(struct fake_host *h, unsigned b)
{
	return (const struct ur_bth *)(h->buf[b] + UR_ETH_HLEN + UR_IPV4_HLEN + UR_UDP_HLEN);
}

/* The sender's view: packets of its QPs to peer p not yet acknowledged. */
static uint32_t engine_inflight(int p)
{
	return peers[p].sq[0]->peer->inflight;
}

static void run_fanout(bool two_hosts)
{
	/* request PSNs seen on the wire toward the stopped peer, per QP */
	static bool seen[NQP][1 << 12];
	unsigned to_stopped = 0, completed = 0;
	uint64_t now = T0;
	struct ur_cqe c[64];

	setup(two_hosts);
	memset(seen, 0, sizeof(seen));
	ck_assert_ptr_ne(peers[0].sq[0]->peer, peers[1].sq[0]->peer);
	for (int p = 0; p < 2; p++)
		for (int i = 0; i < NQP; i++) {
			ck_assert_ptr_eq(peers[p].sq[i]->peer, peers[p].sq[0]->peer);
			for (int k = 0; k < DEPTH; k++)
				post_write(&peers[p], i);
			ur_qp_doorbell(peers[p].sq[i]);
		}
	for (int round = 0; round < 2000 && completed < NQP * WRITES; round++) {
		int n;

		now += 1000;
		ur_dev_poll(da, now);
		ur_dev_tx(da, now, 256);
		for (int p = 0; p < 2; p++)
			ck_assert_uint_le(engine_inflight(p), CAP);
		/* the wire: to the stopped peer, lost; the rest delivered */
		while (host_a.nheld) {
			unsigned b = fake_host_take(&host_a);
			const struct ur_bth *h = bth_of(&host_a, b);
			uint32_t dqpn = ur_bth_dqpn(h);
			const uint8_t *dip = host_a.buf[b] + UR_ETH_HLEN + 16;
			struct peer *x = NULL;

			for (int p = 0; p < 2; p++)
				if (!memcmp(dip, peers[p].ip, 4) && dqpn - peers[p].qpn < NQP)
					x = &peers[p];
			ck_assert_ptr_nonnull(x);
			if (x == &peers[1]) {
				uint32_t i = dqpn - x->qpn;
				uint32_t off = (ur_bth_psn(h) - 0xfffff0) & UR_PSN_MASK;

				ck_assert_uint_lt(off, 1u << 12);
				to_stopped += !seen[i][off];
				seen[i][off] = true;
			} else {
				ur_dev_rx(x->dev, host_a.buf[b], host_a.len[b], now);
			}
			fake_host_release(&host_a, b);
		}
		/* the stopped peer never had more than the cap from us */
		ck_assert_uint_le(to_stopped, CAP);
		for (struct ur_dev *d = db; d; d = d == db ? dc : NULL) {
			struct fake_host *h = d == db ? &host_b : &host_c;

			ur_dev_poll(d, now);
			ur_dev_tx(d, now, 256);
			while (h->nheld) {
				unsigned b = fake_host_take(h);

				ur_dev_rx(da, h->buf[b], h->len[b], now);
				fake_host_release(h, b);
			}
		}
		while ((n = ur_cq_poll(&cqa, c, 64)) > 0)
			for (int k = 0; k < n; k++) {
				struct peer *x = &peers[c[k].wr_id >> 8];
				int i = (int)(c[k].wr_id & 0xff);

				ck_assert_uint_eq(c[k].status, UR_WC_SUCCESS);
				ck_assert_ptr_eq(x, &peers[0]);
				completed++;
				if (++x->done[i] + DEPTH <= WRITES) {
					post_write(x, i);
					ur_qp_doorbell(x->sq[i]);
				}
			}
	}
	/* every WRITE to the peer that answers completed, none to the stopped one */
	ck_assert_uint_eq(completed, NQP * WRITES);
	/* the stopped peer got exactly its share, and holds it */
	ck_assert_uint_eq(to_stopped, CAP);
	ck_assert_uint_eq(engine_inflight(1), CAP);
	ck_assert_uint_eq(engine_inflight(0), 0);
	ck_assert_uint_eq(ur_peer_max_inflight(da), CAP);
	teardown();
}

START_TEST(test_two_processes_one_address)
{
	run_fanout(false);
}
END_TEST

START_TEST(test_two_addresses)
{
	run_fanout(true);
}
END_TEST

/*
 * A QP moved to another peer (RESET, then a new destination) leaves the old
 * one, which is freed with its last QP; QPs that wait for room on a peer
 * go back on the round robin when another QP of that peer goes away.
 */
START_TEST(test_rebind_and_release)
{
	struct ur_peer *stopped;
	struct ur_qp *q;
	uint32_t held;
	struct ur_qp_attr a;

	setup(false);
	ck_assert_uint_eq(da->npeers, 2);
	for (int i = 0; i < NQP; i++) {
		for (int k = 0; k < DEPTH; k++)
			post_write(&peers[1], i);
		ur_qp_doorbell(peers[1].sq[i]);
	}
	ur_dev_poll(da, T0 + 1000);
	ur_dev_tx(da, T0 + 1000, 1024);
	fake_host_drop_held(&host_a);
	stopped = peers[1].sq[0]->peer;
	ck_assert_uint_eq(stopped->inflight, CAP);
	ck_assert_ptr_nonnull(stopped->capped);

	/* one of the QPs that sent them goes back to RESET: its share comes
	 * back, the waiting QPs are on the round robin again and take it */
	q = peers[1].sq[0];
	held = q->inflight_counted;
	ck_assert_uint_gt(held, 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = UR_QPS_RESET;
	ck_assert_int_eq(ur_qp_modify(q, &a, UR_QP_STATE, T0 + 2000), 0);
	ck_assert_uint_eq(stopped->inflight, CAP - held);
	ck_assert_ptr_null(stopped->capped);
	ck_assert_uint_eq(ur_dev_tx(da, T0 + 2000, 1024), held);
	fake_host_drop_held(&host_a);
	ck_assert_uint_eq(stopped->inflight, CAP);
	ck_assert_ptr_nonnull(stopped->capped);

	/* a QP waiting for room that is given another destination (as
	 * SQD -> SQD may) takes its count along and its turn back */
	{
		struct ur_qp *w = stopped->capped;
		struct ur_gid g;
		uint32_t n = w->inflight_counted;

		ur_gid_from_v4(&g, ip_c);
		ck_assert_int_eq(ur_peer_bind(da, w, &g, 0x1000), 0);
		ck_assert_uint_eq(da->npeers, 3);
		ck_assert(!w->capped && w->in_ready);
		ck_assert_ptr_ne(stopped->capped, w);
		ck_assert_uint_eq(stopped->inflight, CAP - n);
		ck_assert_uint_eq(w->peer->inflight, n);
		ck_assert_uint_eq(w->peer->refs, 1);
		/* and back: the peer it leaves is freed */
		ck_assert_int_eq(
		    ur_peer_bind(da, w, &stopped->gid, stopped->block << da->cfg.peer_qpn_shift),
		    0);
		ck_assert_ptr_eq(w->peer, stopped);
		ck_assert_uint_eq(da->npeers, 2);
		ck_assert_uint_eq(stopped->inflight, CAP);
	}

	/* ...then to the peer that answers: it leaves the stopped one */
	connect(q, mac_a, mac_b, ip_a, ip_b, peers[0].qpn);
	ck_assert_ptr_eq(q->peer, peers[0].sq[0]->peer);
	ck_assert_uint_eq(q->peer->refs, NQP + 1);
	ck_assert_uint_eq(stopped->refs, NQP - 1);
	ck_assert_uint_eq(da->npeers, 2);
	teardown();
}
END_TEST

static Suite *peer_cap_suite(void)
{
	Suite *s = suite_create("peer_cap");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_two_processes_one_address);
	tcase_add_test(tc, test_two_addresses);
	tcase_add_test(tc, test_rebind_and_release);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(peer_cap_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
