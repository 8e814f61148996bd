/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Congestion control through the engine's entry points, with two devices
 * and a wire the test carries frames over by hand (so it can set ECN CE on
 * the way, as a switch would):
 *  - data packets are ECN-capable (ECT(0)) with the DSCP of the path's
 *    traffic class (106: DSCP 26, as NCCL_IB_TC=106 asks);
 *  - a CE-marked packet makes the receiver send one CNP, framed as Annex
 *    A17.9.2 says, and no more than one per QP per cnp_interval_ns;
 *  - the CNP makes the sender cut its rate, and the pacer then holds its
 *    data packets to that rate, telling the host when to come back through
 *    ur_dev_next_deadline; an unlimited QP is not paced at all.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cc_spec.h"
#include "engine.h"
#include "fake_host.h"
#include "frame.h"
#include "ur_util.h"

#define NBUF 256
#define QPN_A 0x11
#define QPN_B 0x22
#define BUFLEN (1u << 20)
#define T0 1000000000ull

/* Each device's host holds the frames it sends, in order, until the test carries them. */
static struct fake_host host_a, host_b, *ha = &host_a, *hb = &host_b;

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

static struct ur_dev *da, *db;
static struct ur_qp *qa, *qb;
static struct ur_cq cqa, cqb;
static struct ur_mr *mra, *mrb;
static uint8_t *bufa, *bufb;

static const uint8_t mac_a[6] = {0x02, 0, 0, 0, 0, 0xa};
static const uint8_t mac_b[6] = {0x02, 0, 0, 0, 0, 0xb};
static const uint8_t ip_a[4] = {10, 62, 0, 1};
static const uint8_t ip_b[4] = {10, 62, 0, 2};

static void connect(struct ur_qp *q, const uint8_t *smac, const uint8_t *dmac, const uint8_t *sip,
		    const uint8_t *dip, uint32_t dqpn, uint8_t tclass)
{
	struct ur_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = UR_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = UR_ACCESS_LOCAL_WRITE | UR_ACCESS_REMOTE_WRITE | UR_ACCESS_REMOTE_READ;
	ck_assert_int_eq(ur_qp_modify(q, &a, UR_QP_STATE | UR_QP_PKEY_INDEX | UR_QP_PORT |
					      UR_QP_ACCESS_FLAGS, T0), 0);
	a.qp_state = UR_QPS_RTR;
	a.path_mtu = 5;
	a.dest_qp_num = dqpn;
	a.rq_psn = 0x100;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	memcpy(a.av.path.smac, smac, 6);
	memcpy(a.av.path.dmac, dmac, 6);
	ur_gid_from_v4(&a.av.path.sgid, sip);
	ur_gid_from_v4(&a.av.path.dgid, dip);
	a.av.path.hop_limit = 64;
	a.av.path.tclass = tclass;
	a.av.path.udp_sport = 0xc123;
	a.av.resolved = 1;
	ck_assert_int_eq(ur_qp_modify(q, &a, UR_QP_STATE | UR_QP_AV | UR_QP_PATH_MTU |
					      UR_QP_DEST_QPN | UR_QP_RQ_PSN |
					      UR_QP_MAX_DEST_RD_ATOMIC | UR_QP_MIN_RNR_TIMER, T0), 0);
	a.qp_state = UR_QPS_RTS;
	a.sq_psn = 0x100;
	a.timeout = 20;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	ck_assert_int_eq(ur_qp_modify(q, &a, UR_QP_STATE | UR_QP_SQ_PSN | UR_QP_TIMEOUT |
					      UR_QP_RETRY_CNT | UR_QP_RNR_RETRY |
					      UR_QP_MAX_QP_RD_ATOMIC, T0), 0);
}

static void make_pair(const struct ur_dev_config *cfg, uint8_t tclass)
{
	struct ur_qp_init qi;

	host_init(ha, 1);
	host_init(hb, 2);
	bufa = calloc(1, BUFLEN);
	bufb = calloc(1, BUFLEN);
	ck_assert(bufa && bufb);
	ck_assert_int_eq(ur_dev_create(cfg, &fake_host_ops, ha, NULL, &da), 0);
	ck_assert_int_eq(ur_dev_create(cfg, &fake_host_ops, hb, NULL, &db), 0);
	ck_assert_int_eq(ur_cq_init(&cqa, 4096, NULL), 0);
	ck_assert_int_eq(ur_cq_init(&cqb, 4096, NULL), 0);
	ck_assert_int_eq(ur_dev_reg_mr(da, (uintptr_t)bufa, bufa, BUFLEN, UR_ACCESS_LOCAL_WRITE, 1,
				       &mra), 0);
	ck_assert_int_eq(ur_dev_reg_mr(db, (uintptr_t)bufb, bufb, BUFLEN,
				       UR_ACCESS_LOCAL_WRITE | UR_ACCESS_REMOTE_WRITE |
					   UR_ACCESS_REMOTE_READ,
				       1, &mrb), 0);
	memset(&qi, 0, sizeof(qi));
	qi.type = UR_QPT_RC;
	qi.pd = 1;
	qi.max_send_wr = 64;
	qi.max_recv_wr = 64;
	qi.max_send_sge = 1;
	qi.max_recv_sge = 1;
	qi.send_cq = qi.recv_cq = &cqa;
	qi.qpn = QPN_A;
	ck_assert_int_eq(ur_qp_create(da, &qi, &qa), 0);
	qi.send_cq = qi.recv_cq = &cqb;
	qi.qpn = QPN_B;
	ck_assert_int_eq(ur_qp_create(db, &qi, &qb), 0);
	connect(qa, mac_a, mac_b, ip_a, ip_b, QPN_B, tclass);
	connect(qb, mac_b, mac_a, ip_b, ip_a, QPN_A, tclass);
}

static void pair_default(uint8_t tclass)
{
	struct ur_dev_config cfg;

	ur_dev_config_default(&cfg);
	make_pair(&cfg, tclass);
}

static void teardown(void)
{
	/* hand back every frame the test did not deliver */
	fake_host_drop_held(ha);
	fake_host_drop_held(hb);
	ur_qp_destroy(qa);
	ur_qp_destroy(qb);
	ur_dev_dereg_mr(da, mra);
	ur_dev_dereg_mr(db, mrb);
	ur_dev_destroy(da);
	ur_dev_destroy(db);
	ur_cq_fini(&cqa);
	ur_cq_fini(&cqb);
	fake_host_check_idle(ha);
	fake_host_check_idle(hb);
	fake_host_fini(ha);
	fake_host_fini(hb);
	free(bufa);
	free(bufb);
}

static void post_rdma(uint32_t opcode, uint32_t len)
{
	struct ur_wq *sq = ur_qp_sq(qa);
	struct ur_send_wqe *w = ur_wq_reserve(sq, 0);

	ck_assert_ptr_nonnull(w);
	memset(w, 0, sq->stride);
	w->opcode = opcode;
	w->flags = UR_SEND_SIGNALED;
	w->signaled = 1;
	w->length = len;
	w->num_sge = 1;
	w->sge[0].addr = (uintptr_t)bufa;
	w->sge[0].length = len;
	w->sge[0].lkey = mra->key;
	w->remote_addr = (uintptr_t)bufb;
	w->rkey = mrb->key;
	ur_wq_commit(sq, 1);
	ur_qp_doorbell(qa);
}

static void post_write(uint32_t len)
{
	post_rdma(UR_WR_RDMA_WRITE, len);
}

static unsigned run(struct ur_dev *d, uint64_t now)
{
	ur_dev_poll(d, now);
	return ur_dev_tx(d, now, 256);
}

static uint8_t *ip_of(struct fake_host *x, unsigned i)
{
	return x->buf[i] + UR_ETH_HLEN;
}

/* A switch marks the packet: CE in the IPv4 header, checksum fixed (the ICRC masks both). */
static void mark_ce(struct fake_host *x, unsigned i)
{
	uint8_t *ip = ip_of(x, i);

	ip[1] |= UR_ECN_CE;
	ur_put_be16(ip + 10, 0);
	ur_put_be16(ip + 10, ur_ipv4_csum(ip, UR_IPV4_HLEN));
}

/* Carry the oldest frame of `from` to `to` at `now`, CE-marked or not; returns its opcode. */
static uint8_t deliver(struct fake_host *from, struct ur_dev *to, uint64_t now, bool ce)
{
	unsigned i;

	ck_assert_uint_gt(from->nheld, 0);
	i = fake_host_take(from);
	uint8_t op = from->buf[i][UR_ETH_HLEN + UR_IPV4_HLEN + UR_UDP_HLEN];

	if (ce)
		mark_ce(from, i);
	ur_dev_rx(to, from->buf[i], from->len[i], now);
	fake_host_release(from, i);
	return op;
}

static unsigned count_opcode(struct fake_host *x, uint8_t op)
{
	unsigned n = 0;

	for (unsigned k = 0; k < x->nheld; k++)
		n += x->buf[fake_host_held(x, k)][UR_ETH_HLEN + UR_IPV4_HLEN + UR_UDP_HLEN] == op;
	return n;
}

START_TEST(test_data_is_ect_with_dscp)
{
	/* tclass 106 (NCCL_IB_TC=106): DSCP 26, and ECT(0) whatever its ECN bits */
	static const uint8_t tcs[] = {106, 0, 104, 107};
	static const uint8_t want[] = {106, 2, 106, 106};
	uint8_t tc = tcs[_i];

	pair_default(tc);
	post_write(3 * 4096);
	ck_assert_uint_eq(run(da, T0), 3);
	for (unsigned k = 0; k < 3; k++) {
		uint8_t tos = ip_of(ha, fake_host_held(ha, k))[1];

		ck_assert_uint_eq(tos, want[_i]);
		ck_assert_uint_eq(tos >> 2, tc >> 2);
		ck_assert_uint_eq(tos & UR_ECN_MASK, UR_ECN_ECT0);
	}
	teardown();
}
END_TEST

START_TEST(test_cnp_for_ce)
{
	struct ur_pkt pkt;
	const uint8_t *bth;
	const uint64_t *cb, *ca;
	unsigned i;

	pair_default(106);
	post_write(2 * 4096);
	ck_assert_uint_eq(run(da, T0), 2);
	deliver(ha, db, T0 + 1000, true);
	deliver(ha, db, T0 + 1100, false);
	run(db, T0 + 1200);
	cb = ur_dev_counters(db);
	ck_assert_uint_eq(cb[UR_CTR_np_ecn_marked_roce_packets], 1);
	ck_assert_uint_eq(cb[UR_CTR_np_cnp_sent], 1);
	ck_assert_uint_eq(count_opcode(hb, UR_OP_CNP), 1);
	/* the CNP goes first, ahead of the ACK */
	i = fake_host_held(hb, 0);
	ck_assert_uint_eq(hb->len[i], UR_ETH_HLEN + UR_IPV4_HLEN + UR_UDP_HLEN + 12 + 16 + 4);
	ck_assert_int_eq(ur_frame_parse(&pkt, hb->buf[i], hb->len[i]), UR_PARSE_OK); /* ICRC too */
	ck_assert_uint_eq(pkt.opcode, 0x81);
	ck_assert_uint_eq(pkt.dqpn, QPN_A); /* the QP that sent the marked packet */
	ck_assert_uint_eq(pkt.psn, 0);
	ck_assert_uint_eq(pkt.tos, 48 << 2); /* cnp_dscp 48, Not-ECT */
	ck_assert_uint_eq(pkt.udp_sport, 0xc123);
	bth = (const uint8_t *)pkt.bth;
	ck_assert_uint_eq(bth[1], 0);    /* SE, M, pad, TVer */
	ck_assert_uint_eq(ur_get_be16(bth + 2), 0xffff);
	ck_assert_uint_eq(bth[4], 0x40); /* BECN */
	ck_assert_uint_eq(bth[8], 0);    /* no AckReq */
	for (unsigned k = 12; k < 28; k++)
		ck_assert_uint_eq(bth[k], 0); /* 16 reserved bytes */
	ck_assert(memcmp(pkt.sgid.raw + 12, ip_b, 4) == 0 && memcmp(pkt.dgid.raw + 12, ip_a, 4) == 0);

	/* the reaction point: A's QP is now rate limited (100 Gb/s line, one cut) */
	ck_assert_uint_eq(ur_qp_rate_kbps(qa), 0);
	deliver(hb, da, T0 + 2000, false);
	ca = ur_dev_counters(da);
	ck_assert_uint_eq(ca[UR_CTR_rp_cnp_handled], 1);
	ck_assert_uint_eq(ca[UR_CTR_rp_cnp_ignored], 0);
	ck_assert_uint_eq(ur_qp_rate_kbps(qa), 50048829);
	teardown();
}
END_TEST

START_TEST(test_cnp_at_most_one_per_interval)
{
	/* 13 CE-marked packets 1 us apart, interval 4 us: CNPs at 0, 4, 8, 12 us */
	const uint64_t *cb;
	unsigned cnps = 0;

	pair_default(106);
	post_write(13 * 4096);
	ck_assert_uint_eq(run(da, T0), 13);
	for (unsigned k = 0; k < 13; k++) {
		deliver(ha, db, T0 + k * 1000, true);
		run(db, T0 + k * 1000);
		cnps += count_opcode(hb, UR_OP_CNP);
		fake_host_drop_held(hb);
	}
	cb = ur_dev_counters(db);
	ck_assert_uint_eq(cb[UR_CTR_np_ecn_marked_roce_packets], 13);
	ck_assert_uint_eq(cb[UR_CTR_np_cnp_sent], 4);
	ck_assert_uint_eq(cnps, 4);
	teardown();
}
END_TEST

START_TEST(test_np_and_rp_switches)
{
	struct ur_dev_config cfg;
	const uint64_t *cb, *ca;

	/* ecn_np off: marked packets are counted, no CNP */
	ur_dev_config_default(&cfg);
	cfg.ecn_np = false;
	make_pair(&cfg, 106);
	post_write(4096);
	run(da, T0);
	deliver(ha, db, T0 + 1000, true);
	run(db, T0 + 1000);
	cb = ur_dev_counters(db);
	ck_assert_uint_eq(cb[UR_CTR_np_ecn_marked_roce_packets], 1);
	ck_assert_uint_eq(cb[UR_CTR_np_cnp_sent], 0);
	ck_assert_uint_eq(count_opcode(hb, UR_OP_CNP), 0);
	teardown();

	/* dcqcn off: CNPs arrive and are ignored, nothing is paced */
	ur_dev_config_default(&cfg);
	cfg.dcqcn = false;
	make_pair(&cfg, 106);
	post_write(4096);
	run(da, T0);
	deliver(ha, db, T0 + 1000, true);
	run(db, T0 + 1000);
	ck_assert_uint_eq(deliver(hb, da, T0 + 2000, false), UR_OP_CNP);
	ca = ur_dev_counters(da);
	ck_assert_uint_eq(ca[UR_CTR_rp_cnp_ignored], 1);
	ck_assert_uint_eq(ca[UR_CTR_rp_cnp_handled], 0);
	ck_assert_uint_eq(ur_qp_rate_kbps(qa), 0);
	teardown();
}
END_TEST

/* Make A rate limited: one marked packet, its CNP delivered at `t`. */
static void limit_a(uint64_t t)
{
	post_write(4096);
	ck_assert_uint_eq(run(da, t - 3000), 1);
	deliver(ha, db, t - 2000, true);
	run(db, t - 2000);
	while (hb->nheld) /* the CNP and the ACK */
		deliver(hb, da, t, false);
	run(da, t);
	ck_assert_uint_gt(ur_qp_rate_kbps(qa), 0);
}

START_TEST(test_pacer_enforces_the_rate)
{
	struct ur_dev_config cfg;
	uint64_t rate, now, gap_ps = 0, first = 0, last = 0;
	unsigned sent = 0, burst;

	/* a 10 Gb/s port: one cut leaves 5004883 kb/s; no increases, so it stays */
	ur_dev_config_default(&cfg);
	cfg.link_rate_mbps = 10000;
	cfg.dcqcn_params.rpg_byte_reset = 0;
	cfg.dcqcn_params.rpg_time_reset_us = 0;
	make_pair(&cfg, 106);
	limit_a(T0);
	rate = ur_qp_rate_kbps(qa);
	ck_assert_uint_eq(rate, 5004883);

	post_write(64 * 4096);
	now = T0 + 10000;
	/* the QP idled: it may catch up about two packet times, no more */
	burst = run(da, now);
	ck_assert_uint_ge(burst, 2);
	ck_assert_uint_le(burst, 3);
	fake_host_drop_held(ha);
	/* the host learns when to come back, and not a nanosecond earlier works */
	ck_assert_uint_gt(ur_dev_next_deadline(da), now);
	ck_assert_uint_eq(run(da, ur_dev_next_deadline(da) - 1), 0);
	/* then exactly one packet per deadline */
	while (sent < 40) {
		now = ur_dev_next_deadline(da);
		ck_assert_uint_eq(run(da, now), 1);
		if (!sent)
			first = now;
		else
			gap_ps = (uint64_t)(ha->len[fake_host_held(ha, 0)] + 24) * 8000000000ull / rate;
		last = now;
		sent++;
		fake_host_drop_held(ha);
	}
	/* 39 gaps of (frame + 24 bytes) at 5004883 kb/s, to the nanosecond */
	ck_assert_uint_le(last - first, 39 * gap_ps / 1000 + 1);
	ck_assert_uint_ge(last - first, 39 * gap_ps / 1000 - 1);
	teardown();
}
END_TEST

START_TEST(test_unlimited_qp_is_not_paced)
{
	pair_default(106);
	post_write(32 * 4096);
	/* the whole message in one call, and no deadline sooner than the ACK timeout */
	ck_assert_uint_eq(run(da, T0), 32);
	ck_assert_uint_ge(ur_dev_next_deadline(da), T0 + (4096ull << 20));
	teardown();
}
END_TEST

/* A frame whose receiver is behind (tx_put's hold_ns) pauses its QP, DCQCN or not. */
START_TEST(test_receiver_behind_holds_the_qp)
{
	uint64_t *ca;

	pair_default(106);
	ca = ur_dev_counters(da);
	ha->opt.hold_ns = 50000;
	post_write(4 * 4096);
	/* one packet, then nothing until the pause is over, and the host knows when */
	ck_assert_uint_eq(run(da, T0), 1);
	ck_assert_uint_eq(ur_dev_next_deadline(da), T0 + 50000);
	ck_assert_uint_eq(run(da, T0 + 49999), 0);
	ck_assert_uint_eq(run(da, T0 + 50000), 1);
	ck_assert_uint_eq(ca[UR_CTR_tx_held_for_receiver], 2);
	/* the receiver caught up: after this pause the rest leaves at once */
	ha->opt.hold_ns = 0;
	ck_assert_uint_eq(run(da, T0 + 99999), 0);
	ck_assert_uint_eq(run(da, T0 + 100000), 2);
	ck_assert_uint_eq(ca[UR_CTR_tx_held_for_receiver], 2);
	ck_assert_uint_eq(ur_qp_rate_kbps(qa), 0);
	teardown();
}
END_TEST

/* A READ responder held on the last response of its turn still gets its turn back. */
START_TEST(test_held_read_responder_comes_back)
{
	pair_default(106);
	post_rdma(UR_WR_RDMA_READ, 4 * 4096);
	ck_assert_uint_eq(run(da, T0), 1);
	deliver(ha, db, T0, false);
	hb->opt.hold_ns = 50000;
	ur_dev_poll(db, T0);
	/* a turn of one packet: the hold lands on the last packet it may send */
	ck_assert_uint_eq(ur_dev_tx(db, T0, 1), 1);
	ck_assert_uint_eq(run(db, T0 + 49999), 0);
	hb->opt.hold_ns = 0;
	ck_assert_uint_eq(run(db, T0 + 50000), 3);
	teardown();
}
END_TEST

START_TEST(test_limiter_released_at_line_rate)
{
	uint64_t now = T0;

	pair_default(106);
	limit_a(T0);
	fake_host_drop_held(ha);
	/* no more CNPs: 26 rate-increase timer events (300 us each) reach the line rate */
	for (unsigned k = 0; k < 25; k++) {
		now += 300000;
		run(da, now);
		ck_assert_uint_gt(ur_qp_rate_kbps(qa), 0);
	}
	now += 300000;
	run(da, now);
	ck_assert_uint_eq(ur_qp_rate_kbps(qa), 0);
	/* and unpaced again */
	fake_host_drop_held(ha);
	post_write(16 * 4096);
	ck_assert_uint_eq(run(da, now + 1), 16);
	teardown();
}
END_TEST

START_TEST(test_cc_spec)
{
	struct ur_dev_config cfg;
	char err[128], text[2048];

	ur_dev_config_default(&cfg);
	ck_assert_int_eq(ur_cc_spec_apply(&cfg, "paper,rpg_ai_rate=7,line_rate=25G,"
					  "min_time_between_cnps=10,cnp_dscp=46,clamp_tgt_rate=0",
					  err, sizeof(err)), 0);
	ck_assert(cfg.dcqcn && cfg.ecn_np);
	ck_assert_uint_eq(cfg.dcqcn_params.rpg_time_reset_us, 55);
	ck_assert_uint_eq(cfg.dcqcn_params.rpg_ai_rate_mbps, 7);
	ck_assert(!cfg.dcqcn_params.clamp_tgt_rate);
	ck_assert_uint_eq(cfg.link_rate_mbps, 25000);
	ck_assert_uint_eq(cfg.cnp_interval_ns, 10000);
	ck_assert_uint_eq(cfg.cnp_dscp, 46);
	ck_assert_int_eq(ur_cc_spec_apply(&cfg, "np", err, sizeof(err)), 0);
	ck_assert(!cfg.dcqcn && cfg.ecn_np);
	ck_assert_int_eq(ur_cc_spec_apply(&cfg, "none,nvidia", err, sizeof(err)), 0);
	ck_assert(!cfg.dcqcn && !cfg.ecn_np);
	ck_assert_uint_eq(cfg.dcqcn_params.rpg_time_reset_us, 300);
	ck_assert_uint_eq(cfg.cnp_interval_ns, 4000);
	ck_assert_int_eq(ur_cc_spec_apply(&cfg, "rpg_nonsense=1", err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(ur_cc_spec_apply(&cfg, "cnp_dscp=64", err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(ur_cc_spec_apply(&cfg, "line_rate=fast", err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(ur_cc_spec_apply(&cfg, "clamp_tgt_rate=2", err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(ur_cc_spec_format(&cfg, text, sizeof(text)), 0);
	ck_assert_ptr_nonnull(strstr(text, "rpg_time_reset=300\n"));
	ck_assert_ptr_nonnull(strstr(text, "dce_tcp_g=1019\n"));
}
END_TEST

static Suite *cc_suite(void)
{
	Suite *s = suite_create("cc");
	TCase *tc = tcase_create("ecn and dcqcn in the engine");

	tcase_add_loop_test(tc, test_data_is_ect_with_dscp, 0, 4);
	tcase_add_test(tc, test_cnp_for_ce);
	tcase_add_test(tc, test_cnp_at_most_one_per_interval);
	tcase_add_test(tc, test_np_and_rp_switches);
	tcase_add_test(tc, test_pacer_enforces_the_rate);
	tcase_add_test(tc, test_unlimited_qp_is_not_paced);
	tcase_add_test(tc, test_limiter_released_at_line_rate);
	tcase_add_test(tc, test_receiver_behind_holds_the_qp);
	tcase_add_test(tc, test_held_read_responder_comes_back);
	tcase_add_test(tc, test_cc_spec);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(cc_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
