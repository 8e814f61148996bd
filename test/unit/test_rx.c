/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Hostile input on the receive path: frames a stranger, a broken peer or a
 * damaged link could send, fed to ur_dev_rx against an RC and a UC QP.
 * Every malformed or unexpected packet is either dropped under exactly one
 * named counter, with no state change and nothing transmitted, or answered
 * with the NAK IBTA prescribes (9.7.5.2, 9.9.3); memory the sender has no
 * right to is never touched; what we transmit carries no stale bytes.
 *
 * The host is test/common/fake_host.c: a small pool of frame buffers filled
 * with a poison byte each time they are lent, so any byte of a transmitted
 * frame the engine did not write shows up; every frame sent is kept for parsing.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "fake_host.h"
#include "frame.h"
#include "icrc.h"
#include "psn.h"
#include "device.h" /* white box: the ACK hold's setting */
#include "qp.h"     /* white box: the pacer's next_tx_ns */

#define POOL 8
#define MAX_SENT 64
#define POISON 0xee
#define POISON2 0x11
#define PD 3
#define OTHER_PD 4
#define RC_QPN 0x11
#define UC_QPN 0x12
#define PEER_QPN 0x123
#define RQ_PSN 0xfffff0 /* the expected PSN crosses the 24-bit wrap */
#define SQ_PSN 0xfffff8
#define MTU_ENUM 3	/* 1024 bytes */
#define MTU 1024
#define BUF_LEN 65536
#define IOVA 0x7f0000100000ull /* keys' users see this address, not the pointer */
#define CQ_DEPTH 256

/* ---- the fake host: a small pool, poisoned buffers, every frame sent kept ---- */

static struct fake_host host;
static uint8_t poison = POISON; /* the byte lent buffers are filled with */

static const struct fake_host_opts host_opts = {
    .nbufs = POOL,
    .keep = FAKE_HOST_COPY,
    .copies = MAX_SENT,
    .seed = 0x853c49e6748fea9bull,
    .fail = fake_host_ck_fail,
};

/* ---- the fixture: one device, an RC and a UC QP at RTS, three regions ---- */

static const uint8_t my_mac[6] = {0x02, 0, 0, 0, 0, 0x11};
static const uint8_t peer_mac[6] = {0x02, 0, 0, 0, 0, 0x22};
static const uint8_t my_ip[4] = {10, 0, 0, 1};
static const uint8_t peer_ip[4] = {10, 0, 0, 2};
static const uint8_t stranger_ip[4] = {10, 0, 0, 3};
static const uint8_t other_local_ip[4] = {10, 0, 0, 9};

static struct ur_dev *dev;
static struct ur_cq scq, rcq;
static struct ur_qp *rc, *uc;
static uint8_t *mem;       /* BUF_LEN bytes: mr_rw */
static uint8_t *mem_ro;    /* BUF_LEN bytes: mr_ro (remote read only) */
static uint8_t *mem_other; /* BUF_LEN bytes: mr_other (another PD) */
static struct ur_mr *mr_rw, *mr_ro, *mr_other;
static uint64_t now;
static uint64_t snap[UR_CTR_COUNT];

static const uint32_t all_remote = UR_ACCESS_LOCAL_WRITE | UR_ACCESS_REMOTE_WRITE |
				   UR_ACCESS_REMOTE_READ | UR_ACCESS_REMOTE_ATOMIC;

static uint8_t pattern(uint32_t i)
{
	return (uint8_t)((i * 7 + 1) & 0x7f); /* never POISON */
}

static void qp_attr(struct ur_qp_attr *a, uint32_t access)
{
	memset(a, 0, sizeof(*a));
	a->qp_access_flags = access;
	a->port_num = 1;
	memcpy(a->av.path.smac, my_mac, 6);
	memcpy(a->av.path.dmac, peer_mac, 6);
	ur_gid_from_v4(&a->av.path.sgid, my_ip);
	ur_gid_from_v4(&a->av.path.dgid, peer_ip);
	a->av.path.hop_limit = 64;
	a->av.path.udp_sport = 0xc000;
	a->av.resolved = 1;
	a->path_mtu = MTU_ENUM;
	a->dest_qp_num = PEER_QPN;
	a->rq_psn = RQ_PSN;
	a->sq_psn = SQ_PSN;
	a->max_dest_rd_atomic = 4;
	a->max_rd_atomic = 4;
	a->min_rnr_timer = 1;
	a->timeout = 14;
	a->retry_cnt = 7;
	a->rnr_retry = 7;
}

static void to_state(struct ur_qp *q, const struct ur_qp_attr *base, enum ur_qp_state st,
		     uint32_t mask)
{
	struct ur_qp_attr a = *base;

	a.qp_state = st;
	ck_assert_int_eq(ur_qp_modify(q, &a, mask | UR_QP_STATE, now), 0);
}

/* Bring a QP from RESET to `st` (at most RTS) with remote access `access`. */
static void bring_up(struct ur_qp *q, enum ur_qp_type type, uint32_t access, enum ur_qp_state st)
{
	struct ur_qp_attr a;
	bool rc_type = type == UR_QPT_RC;

	qp_attr(&a, access);
	if (st == UR_QPS_RESET)
		return;
	to_state(q, &a, UR_QPS_INIT, UR_QP_PKEY_INDEX | UR_QP_PORT | UR_QP_ACCESS_FLAGS);
	if (st == UR_QPS_INIT)
		return;
	to_state(q, &a, UR_QPS_RTR,
		 UR_QP_AV | UR_QP_PATH_MTU | UR_QP_DEST_QPN | UR_QP_RQ_PSN |
			 (rc_type ? UR_QP_MAX_DEST_RD_ATOMIC | UR_QP_MIN_RNR_TIMER : 0));
	if (st == UR_QPS_RTR)
		return;
	to_state(q, &a, UR_QPS_RTS,
		 UR_QP_SQ_PSN | (rc_type ? UR_QP_TIMEOUT | UR_QP_RETRY_CNT | UR_QP_RNR_RETRY |
						   UR_QP_MAX_QP_RD_ATOMIC
					 : 0));
}

static struct ur_qp *make_qp(enum ur_qp_type type, uint32_t qpn)
{
	struct ur_qp_init init = {
	    .type = type,
	    .qpn = qpn,
	    .pd = PD,
	    .send_cq = &scq,
	    .recv_cq = &rcq,
	    .max_send_wr = 16,
	    .max_recv_wr = 16,
	    .max_send_sge = 2,
	    .max_recv_sge = 2,
	    .max_inline_data = 64,
	};
	struct ur_qp *q;

	ck_assert_int_eq(ur_qp_create(dev, &init, &q), 0);
	return q;
}

/* Take a QP back through RESET and up again: a failed QP is reused. */
static void reconnect(struct ur_qp *q, enum ur_qp_type type, uint32_t access)
{
	struct ur_qp_attr a;

	qp_attr(&a, access);
	to_state(q, &a, UR_QPS_RESET, 0);
	bring_up(q, type, access, UR_QPS_RTS);
}

static void post_recv(struct ur_qp *q, uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct ur_wq *rq = ur_qp_rq(q);
	struct ur_recv_wqe *r = ur_wq_reserve(rq, 0);

	ck_assert_ptr_nonnull(r);
	memset(r, 0, rq->stride);
	r->wr_id = wr_id;
	r->num_sge = 1;
	r->length = len;
	r->sge[0].addr = IOVA + off;
	r->sge[0].length = len;
	r->sge[0].lkey = mr_rw->key;
	ur_wq_commit(rq, 1);
}

static void setup(void)
{
	struct ur_dev_config cfg;
	struct fake_host_opts opts = host_opts;

	opts.poison = true;
	opts.poison_byte = poison;
	ck_assert_int_eq(fake_host_init(&host, &opts), 0);
	ur_dev_config_default(&cfg);
	ck_assert_int_eq(ur_dev_create(&cfg, &fake_host_ops, &host, NULL, &dev), 0);
	ck_assert_int_eq(ur_cq_init(&scq, CQ_DEPTH, &scq), 0);
	ck_assert_int_eq(ur_cq_init(&rcq, CQ_DEPTH, &rcq), 0);
	mem = calloc(1, BUF_LEN);
	mem_ro = calloc(1, BUF_LEN);
	mem_other = calloc(1, BUF_LEN);
	ck_assert(mem && mem_ro && mem_other);
	ck_assert_int_eq(ur_dev_reg_mr(dev, IOVA, mem, BUF_LEN, all_remote, PD, &mr_rw), 0);
	ck_assert_int_eq(ur_dev_reg_mr(dev, IOVA + BUF_LEN, mem_ro, BUF_LEN,
				       UR_ACCESS_LOCAL_WRITE | UR_ACCESS_REMOTE_READ, PD, &mr_ro),
			 0);
	ck_assert_int_eq(ur_dev_reg_mr(dev, IOVA + 2 * BUF_LEN, mem_other, BUF_LEN, all_remote,
				       OTHER_PD, &mr_other),
			 0);
	now = 1000000000ull;
	rc = make_qp(UR_QPT_RC, RC_QPN);
	uc = make_qp(UR_QPT_UC, UC_QPN);
	bring_up(rc, UR_QPT_RC, all_remote, UR_QPS_RTS);
	bring_up(uc, UR_QPT_UC, all_remote, UR_QPS_RTS);
	/* the QPs' first transmissions (none expected) are not the test's */
	ur_dev_poll(dev, now);
	ur_dev_tx(dev, now, 64);
	host.nsent = 0;
}

static void teardown(void)
{
	/* every completion the engine made, the test looked at */
	fake_host_check_cq_drained(&host, &scq, "the send CQ");
	fake_host_check_cq_drained(&host, &rcq, "the receive CQ");
	ur_qp_destroy(rc);
	ur_qp_destroy(uc);
	if (mr_rw)
		ur_dev_dereg_mr(dev, mr_rw);
	ur_dev_dereg_mr(dev, mr_ro);
	ur_dev_dereg_mr(dev, mr_other);
	ur_dev_destroy(dev);
	ur_cq_fini(&scq);
	ur_cq_fini(&rcq);
	free(mem);
	free(mem_ro);
	free(mem_other);
	fake_host_check_idle(&host);
	fake_host_fini(&host);
}

/* ---- building frames as a peer (or a stranger) would ---- */

struct spec {
	uint8_t opcode;
	uint32_t dqpn;
	uint32_t psn;
	const uint8_t *sip, *dip; /* IPv4; default peer -> me */
	uint16_t pkey;		  /* 0: 0xffff */
	bool ackreq;
	uint32_t len;		  /* payload bytes */
	int pad;		  /* -1: the right pad */
	uint64_t va;		  /* RETH / AtomicETH */
	uint32_t rkey;
	uint32_t dmalen;
	uint64_t swap_add, compare;
	uint8_t syndrome;	  /* AETH */
	uint32_t msn;
	uint32_t ieth;		  /* IETH R_Key */
	uint32_t qkey, sqpn;	  /* DETH */
};

struct frame {
	uint8_t b[UR_FRAME_MAX + 64];
	uint32_t len;
	uint32_t bth; /* offset of the BTH */
};

static struct spec req(uint8_t opcode, uint32_t psn, uint32_t len)
{
	struct spec s = {
	    .opcode = opcode,
	    .dqpn = (opcode & UR_TRANSPORT_MASK) == UR_TRANSPORT_UC ? UC_QPN : RC_QPN,
	    .psn = psn,
	    .len = len,
	    .pad = -1,
	    .ackreq = true,
	};

	return s;
}

static void build(struct frame *f, const struct spec *s)
{
	const struct ur_opcode_info *op = ur_opcode_get(s->opcode);
	struct ur_frame_tmpl t;
	struct ur_path p;
	uint8_t *h;
	uint32_t pad = s->pad < 0 ? (4 - (s->len & 3)) & 3 : (uint32_t)s->pad;
	uint32_t hdr_len = op->kind ? op->hdr_len : 12;
	uint32_t roce_len = hdr_len + s->len + ((s->pad < 0) ? pad : 0) + UR_ICRC_SIZE;
	struct ur_bth *bth;

	memset(&p, 0, sizeof(p));
	memcpy(p.smac, peer_mac, 6);
	memcpy(p.dmac, my_mac, 6);
	ur_gid_from_v4(&p.sgid, s->sip ? s->sip : peer_ip);
	ur_gid_from_v4(&p.dgid, s->dip ? s->dip : my_ip);
	p.hop_limit = 64;
	p.udp_sport = 0xc000;
	ur_frame_tmpl_init(&t, &p);
	memset(f->b, 0, sizeof(f->b));
	f->bth = ur_frame_tmpl_emit(&t, f->b, roce_len, 0, 0);
	h = f->b + f->bth;
	bth = (struct ur_bth *)h;
	ur_bth_set_opcode(bth, s->opcode);
	ur_bth_set_padcnt(bth, pad);
	ur_bth_set_pkey(bth, s->pkey ? s->pkey : 0xffff);
	ur_bth_set_dqpn(bth, s->dqpn);
	ur_bth_set_ackreq(bth, s->ackreq);
	ur_bth_set_psn(bth, s->psn & UR_PSN_MASK);
	if (op->hdrs & UR_HDR_RETH) {
		struct ur_reth *r = (struct ur_reth *)(h + op->off_reth);

		ur_reth_set_va(r, s->va);
		ur_reth_set_rkey(r, s->rkey);
		ur_reth_set_dmalen(r, s->dmalen);
	}
	if (op->hdrs & UR_HDR_ATMETH) {
		struct ur_atmeth *a = (struct ur_atmeth *)(h + op->off_atmeth);

		ur_atmeth_set_va(a, s->va);
		ur_atmeth_set_rkey(a, s->rkey);
		ur_atmeth_set_swap_add(a, s->swap_add);
		ur_atmeth_set_compare(a, s->compare);
	}
	if (op->hdrs & UR_HDR_AETH) {
		struct ur_aeth *a = (struct ur_aeth *)(h + op->off_aeth);

		ur_aeth_set_syndrome(a, s->syndrome);
		ur_aeth_set_msn(a, s->msn);
	}
	if (op->hdrs & UR_HDR_IETH)
		ur_ieth_set_rkey((struct ur_ieth *)(h + op->off_ieth), s->ieth);
	if (op->hdrs & UR_HDR_DETH) {
		ur_deth_set_qkey((struct ur_deth *)(h + op->off_deth), s->qkey);
		ur_deth_set_sqpn((struct ur_deth *)(h + op->off_deth), s->sqpn);
	}
	for (uint32_t i = 0; i < s->len; i++)
		h[hdr_len + i] = pattern(i);
	f->len = f->bth + roce_len;
	ur_frame_seal(&t, f->b, f->len);
}

/* Recompute the ICRC after editing a frame (IPv4, no VLAN). */
static void reseal(struct frame *f)
{
	const uint8_t *l3 = f->b + 14;
	uint32_t l3_len = f->len - 14 - UR_ICRC_SIZE;

	ur_icrc_store(f->b + 14 + l3_len, ur_icrc_compute(l3, l3_len));
}

/* ---- running the engine and looking at what it did ---- */

static void snapshot(void)
{
	memcpy(snap, ur_dev_counters(dev), sizeof(snap));
}

static uint64_t delta(enum ur_counter c)
{
	return ur_dev_counters(dev)[c] - snap[c];
}

/* The counters that moved since the snapshot, for failure messages. */
static const char *moved(void)
{
	static char s[512];
	size_t n = 0;

	s[0] = 0;
	for (unsigned c = 0; c < UR_CTR_COUNT && n < sizeof(s) - 64; c++)
		if (delta(c))
			n += (size_t)snprintf(s + n, sizeof(s) - n, "%s+%llu ", ur_counter_names[c],
					      (unsigned long long)delta(c));
	return s;
}

/* Exactly one counter moved, by one: the packet was dropped for one reason. */
static void assert_dropped_as(enum ur_counter c)
{
	uint64_t others = 0;

	for (unsigned i = 0; i < UR_CTR_COUNT; i++)
		if (i != c)
			others += delta(i);
	ck_assert_msg(delta(c) == 1 && others == 0, "want %s+1 only, got: %s", ur_counter_names[c],
		      moved());
}

/* Accepted by the device for a QP, then dropped by the QP for one reason. */
static void assert_qp_dropped_as(enum ur_counter c)
{
	uint64_t others = 0;

	for (unsigned i = 0; i < UR_CTR_COUNT; i++)
		if (i != c && i != UR_CTR_rx_packets && i != UR_CTR_rx_bytes)
			others += delta(i);
	ck_assert_msg(delta(c) == 1 && delta(UR_CTR_rx_packets) == 1 && others == 0,
		      "want %s+1 and rx_packets+1 only, got: %s", ur_counter_names[c], moved());
}

static unsigned sent_before;

static void pump(void)
{
	for (int i = 0; i < 4; i++) {
		ur_dev_poll(dev, now);
		ur_dev_tx(dev, now, 64);
	}
	now += 1000;
}

static void rx_only(const struct frame *f)
{
	ur_dev_rx(dev, f->b, f->len, now);
}

/* Inject one frame and let the engine answer. */
static void inject(const struct frame *f)
{
	sent_before = host.nsent;
	rx_only(f);
	pump();
}

static void send_spec(const struct spec *s)
{
	struct frame f;

	build(&f, s);
	inject(&f);
}

static unsigned sent_since(void)
{
	return host.nsent - sent_before;
}

/* Parse frame `k` we transmitted. */
static void parse_sent(unsigned k, struct ur_pkt *pkt)
{
	uint32_t len;
	const uint8_t *f;

	ck_assert_uint_lt(k, host.nsent);
	f = fake_host_frame(&host, k, &len);
	ck_assert_int_eq(ur_frame_parse(pkt, f, len), UR_PARSE_OK);
}

/* Frame `k` we sent must be an RC ACKNOWLEDGE with `syndrome` for `psn`. */
static void assert_ack_frame(unsigned k, uint8_t syndrome, uint32_t psn)
{
	struct ur_pkt pkt;
	uint8_t syn;

	parse_sent(k, &pkt);
	ck_assert_msg(pkt.opcode == UR_OP_RC_ACKNOWLEDGE, "answered with %s",
		      ur_opcode_name(pkt.opcode));
	syn = ur_aeth_syndrome((const struct ur_aeth *)((const uint8_t *)pkt.bth + 12));
	ck_assert_msg(syn == syndrome, "syndrome %#x, want %#x (counters: %s)", syn, syndrome,
		      moved());
	ck_assert_uint_eq(pkt.psn, psn & UR_PSN_MASK);
	ck_assert_uint_eq(pkt.dqpn, PEER_QPN);
}

/* The last frame sent must be an RC ACKNOWLEDGE with `syndrome` for `psn`. */
static void assert_answer(uint8_t syndrome, uint32_t psn)
{
	ck_assert_msg(sent_since() >= 1, "no answer sent (counters: %s)", moved());
	assert_ack_frame(host.nsent - 1, syndrome, psn);
}

static unsigned drain(struct ur_cq *cq, struct ur_cqe *out, unsigned max)
{
	unsigned n = 0;
	struct ur_cqe tmp;

	while (n < max && ur_cq_poll(cq, out ? &out[n] : &tmp, 1) == 1)
		n++;
	return n;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* A valid RDMA WRITE ONLY of `len` bytes to offset `off` of mr_rw. */
static struct spec write_only(uint32_t psn, uint32_t off, uint32_t len)
{
	struct spec s = req(UR_OP_RC_WRITE_ONLY, psn, len);

	s.va = IOVA + off;
	s.rkey = mr_rw->key;
	s.dmalen = len;
	return s;
}

/* ---- 1. frames that are not whole, not intact or not well formed ---- */

/* Every truncation of a valid WRITE: dropped as truncated, memory untouched. */
START_TEST(test_truncated_every_length)
{
	struct spec s = write_only(RQ_PSN, 0, 100);
	struct frame f;

	build(&f, &s);
	for (uint32_t len = 0; len < f.len; len++) {
		struct frame t = f;

		t.len = len;
		snapshot();
		inject(&t);
		assert_dropped_as(UR_CTR_rx_drop_truncated);
		ck_assert_uint_eq(sent_since(), 0);
	}
	ck_assert(all_zero(mem, BUF_LEN));
	/* Ethernet may pad a frame: bytes after the IP packet are no harm */
	f.len += 16;
	snapshot();
	inject(&f);
	ck_assert_uint_eq(delta(UR_CTR_rx_packets), 1);
	ck_assert_uint_eq(delta(UR_CTR_rx_write_requests), 1);
	for (uint32_t i = 0; i < 100; i++)
		ck_assert_uint_eq(mem[i], pattern(i));
}
END_TEST

/* UDP and IP lengths that disagree with each other are truncation too. */
START_TEST(test_inconsistent_lengths)
{
	struct spec s = write_only(RQ_PSN, 0, 64);
	struct frame f, t;
	uint8_t *ip;

	build(&f, &s);
	ip = f.b + 14;
	/* UDP says 4 bytes less than IP */
	t = f;
	ur_put_be16(t.b + 14 + 20 + 4, ur_get_be16(ip + 20 + 4) - 4);
	reseal(&t);
	snapshot();
	inject(&t);
	assert_dropped_as(UR_CTR_rx_drop_truncated);
	/* IP says 4 bytes less than the frame holds (and UDP agrees with the frame) */
	t = f;
	ur_put_be16(t.b + 14 + 2, ur_get_be16(ip + 2) - 4);
	ur_put_be16(t.b + 14 + 10, 0);
	ur_put_be16(t.b + 14 + 10, ur_ipv4_csum(t.b + 14, 20));
	snapshot();
	inject(&t);
	assert_dropped_as(UR_CTR_rx_drop_truncated);
	/* a bad IPv4 header checksum */
	t = f;
	t.b[14 + 10] ^= 0x40;
	snapshot();
	inject(&t);
	assert_dropped_as(UR_CTR_rx_drop_bad_ip);
	ck_assert(all_zero(mem, BUF_LEN));
}
END_TEST

/*
 * One flipped bit anywhere in the transport part (BTH to ICRC): refused,
 * under one counter (most under rx_icrc_errors; an opcode, pad or version
 * change is refused by the BTH checks first). BTH byte 4 is excluded: its
 * bits are masked out of the ICRC (A17.3.3), so a flip there is legitimate.
 */
START_TEST(test_bit_flip_anywhere)
{
	struct spec s = write_only(RQ_PSN, 0, 37);
	struct frame f;

	build(&f, &s);
	for (uint32_t off = f.bth; off < f.len; off++) {
		for (unsigned bit = 0; bit < 8; bit += 3) {
			struct frame t = f;
			uint64_t drops = 0;

			if (off == f.bth + 4)
				continue;
			t.b[off] ^= (uint8_t)(1u << bit);
			snapshot();
			inject(&t);
			ck_assert_msg(delta(UR_CTR_rx_packets) == 0, "flip at %u bit %u accepted: %s",
				      off - f.bth, bit, moved());
			for (unsigned c = 0; c < UR_CTR_COUNT; c++)
				drops += delta(c);
			ck_assert_msg(drops == 1, "flip at %u bit %u: %s", off - f.bth, bit, moved());
			if (off >= f.bth + 28)
				assert_dropped_as(UR_CTR_rx_icrc_errors);
			ck_assert_uint_eq(sent_since(), 0);
		}
	}
	ck_assert(all_zero(mem, BUF_LEN));
}
END_TEST

/* Pad counts that do not describe the payload (9.2.6 / 9.7.5.1.1 length checks). */
START_TEST(test_bad_pad_count)
{
	struct spec s;
	struct frame f;

	/* pad larger than the payload */
	s = write_only(RQ_PSN, 0, 0);
	s.pad = 3;
	build(&f, &s);
	snapshot();
	inject(&f);
	assert_dropped_as(UR_CTR_rx_drop_bad_bth);

	/* a payload that is not whole words (pad 0 on 5 bytes) */
	s = write_only(RQ_PSN, 0, 5);
	s.pad = 0;
	build(&f, &s);
	snapshot();
	inject(&f);
	assert_dropped_as(UR_CTR_rx_drop_bad_bth);

	/* payload on an ACK, which has none */
	s = req(UR_OP_RC_ACKNOWLEDGE, SQ_PSN, 4);
	build(&f, &s);
	snapshot();
	inject(&f);
	assert_dropped_as(UR_CTR_rx_drop_bad_bth);

	/* an opcode uroce does not speak (RD) and a transport version other than 0 */
	s = req(0x40, RQ_PSN, 0);
	build(&f, &s);
	snapshot();
	inject(&f);
	assert_dropped_as(UR_CTR_rx_drop_bad_bth);
	s = write_only(RQ_PSN, 0, 8);
	build(&f, &s);
	f.b[f.bth + 1] |= 0x01; /* TVer */
	reseal(&f);
	snapshot();
	inject(&f);
	assert_dropped_as(UR_CTR_rx_drop_bad_bth);
	ck_assert(all_zero(mem, BUF_LEN));
}
END_TEST

/* ---- 2. packets that are well formed but not for us, or not now ---- */

START_TEST(test_unknown_qp)
{
	static const uint32_t qpns[] = {0, 1, 0x13, 0x999, 0xffffff};

	for (unsigned i = 0; i < sizeof(qpns) / sizeof(qpns[0]); i++) {
		struct spec s = write_only(RQ_PSN, 0, 16);

		s.dqpn = qpns[i];
		snapshot();
		send_spec(&s);
		assert_dropped_as(UR_CTR_rx_drop_unknown_qp);
		ck_assert_uint_eq(sent_since(), 0);
	}
	ck_assert(all_zero(mem, BUF_LEN));
}
END_TEST

/* An opcode of another transport service than the QP's (9.6.1.2). */
START_TEST(test_wrong_transport)
{
	struct spec s;

	s = req(UR_OP_UC_SEND_ONLY, RQ_PSN, 8);
	s.dqpn = RC_QPN;
	snapshot();
	send_spec(&s);
	assert_dropped_as(UR_CTR_rx_drop_wrong_transport);

	s = req(UR_OP_RC_SEND_ONLY, RQ_PSN, 8);
	s.dqpn = UC_QPN;
	snapshot();
	send_spec(&s);
	assert_dropped_as(UR_CTR_rx_drop_wrong_transport);

	s = req(UR_OP_UD_SEND_ONLY, RQ_PSN, 8);
	s.dqpn = RC_QPN;
	snapshot();
	send_spec(&s);
	assert_dropped_as(UR_CTR_rx_drop_wrong_transport);

	s = req(UR_OP_RC_ACKNOWLEDGE, SQ_PSN, 0);
	s.dqpn = UC_QPN;
	snapshot();
	send_spec(&s);
	assert_dropped_as(UR_CTR_rx_drop_wrong_transport);

	s = req(UR_OP_RC_READ_REQUEST, RQ_PSN, 0);
	s.dqpn = UC_QPN;
	snapshot();
	send_spec(&s);
	assert_dropped_as(UR_CTR_rx_drop_wrong_transport);
	ck_assert_uint_eq(host.nsent, 0);
	ck_assert_uint_eq(ur_qp_state(rc), UR_QPS_RTS);
	ck_assert_uint_eq(ur_qp_state(uc), UR_QPS_RTS);
}
END_TEST

/* Requests reach only a QP in RTR or later; responses only one that sends (10.3.1). */
START_TEST(test_wrong_state)
{
	static const enum ur_qp_state sts[] = {UR_QPS_RESET, UR_QPS_INIT, UR_QPS_ERR};
	struct ur_qp_attr a;
	struct spec s;

	qp_attr(&a, all_remote);
	for (unsigned i = 0; i < 3; i++) {
		to_state(rc, &a, UR_QPS_RESET, 0);
		if (sts[i] == UR_QPS_ERR)
			to_state(rc, &a, UR_QPS_ERR, 0);
		else
			bring_up(rc, UR_QPT_RC, all_remote, sts[i]);
		s = write_only(RQ_PSN, 0, 16);
		snapshot();
		send_spec(&s);
		assert_dropped_as(UR_CTR_rx_drop_bad_qp_state);
		s = req(UR_OP_RC_ACKNOWLEDGE, SQ_PSN, 0);
		snapshot();
		send_spec(&s);
		assert_dropped_as(UR_CTR_rx_drop_bad_qp_state);
	}
	/* RTR: requests yes, responses no */
	to_state(rc, &a, UR_QPS_RESET, 0);
	bring_up(rc, UR_QPT_RC, all_remote, UR_QPS_RTR);
	s = req(UR_OP_RC_ACKNOWLEDGE, SQ_PSN, 0);
	snapshot();
	send_spec(&s);
	assert_dropped_as(UR_CTR_rx_drop_bad_qp_state);
	s = write_only(RQ_PSN, 0, 16);
	snapshot();
	send_spec(&s);
	ck_assert_uint_eq(delta(UR_CTR_rx_write_requests), 1);
	assert_answer(UR_AETH_ACK | UR_AETH_CREDIT_INVALID, RQ_PSN);
	ck_assert_uint_eq(host.nsent, 1);
}
END_TEST

/*
 * A connected QP takes packets only from its peer: the source address must
 * be the QP's destination and the destination address the QP's source, as
 * Soft-RoCE checks (rxe_recv.c check_addr).
 */
START_TEST(test_wrong_peer)
{
	struct spec s;

	s = write_only(RQ_PSN, 0, 16);
	s.sip = stranger_ip;
	snapshot();
	send_spec(&s);
	assert_dropped_as(UR_CTR_rx_drop_wrong_peer);

	s = write_only(RQ_PSN, 0, 16);
	s.dip = other_local_ip;
	snapshot();
	send_spec(&s);
	assert_dropped_as(UR_CTR_rx_drop_wrong_peer);

	s = req(UR_OP_UC_SEND_ONLY, RQ_PSN, 8);
	s.sip = stranger_ip;
	snapshot();
	send_spec(&s);
	assert_dropped_as(UR_CTR_rx_drop_wrong_peer);

	/* a stranger's ACK/NAK does not touch the requester either */
	s = req(UR_OP_RC_ACKNOWLEDGE, SQ_PSN, 0);
	s.syndrome = UR_AETH_NAK | UR_NAK_REM_ACCESS_ERR;
	s.sip = stranger_ip;
	snapshot();
	send_spec(&s);
	assert_dropped_as(UR_CTR_rx_drop_wrong_peer);

	ck_assert_uint_eq(host.nsent, 0);
	ck_assert(all_zero(mem, BUF_LEN));
	ck_assert_uint_eq(ur_qp_state(rc), UR_QPS_RTS);
	ck_assert_uint_eq(ur_qp_state(uc), UR_QPS_RTS);
	/* and the peer itself is still heard */
	s = write_only(RQ_PSN, 0, 16);
	snapshot();
	send_spec(&s);
	ck_assert_uint_eq(delta(UR_CTR_rx_write_requests), 1);
}
END_TEST

/* A UD QP takes datagrams from anyone, but only with its Q_Key (the DETH check). */
START_TEST(test_ud_wrong_qkey)
{
	struct ur_qp *ud = make_qp(UR_QPT_UD, 0x13);
	struct ur_qp_attr a;
	struct spec s;

	qp_attr(&a, 0);
	a.qkey = 0x11112222;
	to_state(ud, &a, UR_QPS_INIT, UR_QP_PKEY_INDEX | UR_QP_PORT | UR_QP_QKEY);
	to_state(ud, &a, UR_QPS_RTR, 0);
	to_state(ud, &a, UR_QPS_RTS, UR_QP_SQ_PSN);
	s = req(UR_OP_UD_SEND_ONLY, RQ_PSN, 16);
	s.dqpn = 0x13;
	s.sip = stranger_ip;
	s.qkey = 0x11112223;
	s.sqpn = 0x77;
	snapshot();
	send_spec(&s);
	assert_dropped_as(UR_CTR_rx_drop_qkey);
	s.qkey = 0x11112222;
	snapshot();
	send_spec(&s);
	ck_assert_uint_eq(delta(UR_CTR_rx_packets), 1);
	ur_qp_destroy(ud);
}
END_TEST

/* A CNP (A17.9.2) for a QP, from `sip` to `dip` (NULL: peer -> me). */
static struct spec cnp(uint32_t dqpn, const uint8_t *sip, const uint8_t *dip)
{
	struct spec s = req(UR_OP_CNP, 0, 0);

	s.dqpn = dqpn;
	s.ackreq = false;
	s.sip = sip;
	s.dip = dip;
	return s;
}

/*
 * A selective-repeat control datagram (UDP 4792) from the peer: HELLO is
 * taken (and answered with AGREE), a type this version does not know is
 * dropped under rx_drop_unsupported, not ignored without a count.
 */
START_TEST(test_sr_ctrl_unknown_type)
{
	struct ur_sr_ctrl m;
	struct ur_frame_tmpl t;
	struct ur_path p;
	struct frame f;
	struct ur_qp *q;

	dev->cfg.retx_mode = UR_RETX_SR; /* white box: QPs made from now on run SR */
	q = make_qp(UR_QPT_RC, 0x21);
	bring_up(q, UR_QPT_RC, all_remote, UR_QPS_RTS);
	pump(); /* its HELLO */
	memset(&p, 0, sizeof(p));
	memcpy(p.smac, peer_mac, 6);
	memcpy(p.dmac, my_mac, 6);
	ur_gid_from_v4(&p.sgid, peer_ip);
	ur_gid_from_v4(&p.dgid, my_ip);
	p.hop_limit = 64;
	p.udp_sport = 0xc000;
	ur_frame_tmpl_init(&t, &p);
	memset(&m, 0, sizeof(m));
	ur_put_be32(m.magic, UR_SR_MAGIC);
	m.version = 1;
	m.type = 7;
	ur_put_be16(m.window, 256);
	ur_put_be32(m.dqpn, 0x21);
	ur_put_be32(m.sqpn, PEER_QPN);
	f.len = ur_frame_build_ctrl(&t, f.b, &m, sizeof(m));
	snapshot();
	inject(&f);
	assert_dropped_as(UR_CTR_rx_drop_unsupported);
	ck_assert_uint_eq(sent_since(), 0);
	m.type = UR_SR_HELLO;
	f.len = ur_frame_build_ctrl(&t, f.b, &m, sizeof(m));
	snapshot();
	inject(&f);
	ck_assert_msg(!strcmp(moved(), "sr_negotiated+1 "), "HELLO moved %s", moved());
	ck_assert_uint_eq(sent_since(), 1); /* the AGREE */
	ur_qp_destroy(q);
	dev->cfg.retx_mode = UR_RETX_GBN;
}
END_TEST

/*
 * A CNP slows its QP down (rp_cnp_handled), so it must pass the checks every
 * other packet passes: from the QP's peer, to the QP's own address, to a QP
 * that can send (RTR and later). A stranger's CNPs were all obeyed.
 */
START_TEST(test_cnp_only_from_the_peer)
{
	struct ur_qp_attr a;
	struct spec s;

	s = cnp(RC_QPN, stranger_ip, NULL);
	snapshot();
	send_spec(&s);
	assert_dropped_as(UR_CTR_rx_drop_wrong_peer);
	s = cnp(RC_QPN, NULL, other_local_ip);
	snapshot();
	send_spec(&s);
	assert_dropped_as(UR_CTR_rx_drop_wrong_peer);
	s = cnp(UC_QPN, stranger_ip, NULL);
	snapshot();
	send_spec(&s);
	assert_dropped_as(UR_CTR_rx_drop_wrong_peer);
	s = cnp(0x777, NULL, NULL);
	snapshot();
	send_spec(&s);
	assert_dropped_as(UR_CTR_rx_drop_unknown_qp);
	ck_assert_uint_eq(ur_dev_counters(dev)[UR_CTR_rp_cnp_handled], 0);

	/* the peer's is obeyed, in RTS and in RTR (its READ responses are ECN-capable) */
	s = cnp(RC_QPN, NULL, NULL);
	snapshot();
	send_spec(&s);
	ck_assert_msg(delta(UR_CTR_rp_cnp_handled) == 1 && delta(UR_CTR_rx_packets) == 1,
		      "peer's CNP: %s", moved());
	qp_attr(&a, all_remote);
	to_state(rc, &a, UR_QPS_RESET, 0);
	bring_up(rc, UR_QPT_RC, all_remote, UR_QPS_RTR);
	snapshot();
	send_spec(&s);
	ck_assert_msg(delta(UR_CTR_rp_cnp_handled) == 1, "CNP in RTR: %s", moved());

	/* a QP that sends nothing takes none */
	to_state(rc, &a, UR_QPS_RESET, 0);
	snapshot();
	send_spec(&s);
	assert_dropped_as(UR_CTR_rx_drop_bad_qp_state);
	bring_up(rc, UR_QPT_RC, all_remote, UR_QPS_INIT);
	snapshot();
	send_spec(&s);
	assert_dropped_as(UR_CTR_rx_drop_bad_qp_state);
	to_state(rc, &a, UR_QPS_ERR, 0);
	snapshot();
	send_spec(&s);
	assert_dropped_as(UR_CTR_rx_drop_bad_qp_state);
	ck_assert_uint_eq(host.nsent, 0);
}
END_TEST

START_TEST(test_bad_pkey)
{
	struct spec s = write_only(RQ_PSN, 0, 16);

	s.pkey = 0x8001;
	snapshot();
	send_spec(&s);
	assert_dropped_as(UR_CTR_rx_drop_bad_pkey);
	ck_assert_uint_eq(host.nsent, 0);
}
END_TEST

/* ---- 3. requests that break the protocol: NAKs (9.7.5.2) ---- */

/* A class C error: NAK `syndrome` at `psn`, then the QP is in ERR. */
static void assert_class_c(uint8_t nak, uint32_t psn)
{
	assert_answer(UR_AETH_NAK | nak, psn);
	ck_assert_uint_eq(ur_qp_state(rc), UR_QPS_ERR);
	reconnect(rc, UR_QPT_RC, all_remote);
	drain(&rcq, NULL, CQ_DEPTH);
}

/* MIDDLE or LAST without a FIRST, or a new message inside another (C9-93). */
START_TEST(test_opcode_out_of_sequence)
{
	struct spec s;

	s = req(UR_OP_RC_WRITE_MIDDLE, RQ_PSN, MTU);
	snapshot();
	send_spec(&s);
	ck_assert_uint_eq(delta(UR_CTR_rx_drop_bad_opcode_seq), 1);
	assert_class_c(UR_NAK_INVALID_REQ, RQ_PSN);

	s = req(UR_OP_RC_SEND_LAST, RQ_PSN, 8);
	snapshot();
	send_spec(&s);
	ck_assert_uint_eq(delta(UR_CTR_rx_drop_bad_opcode_seq), 1);
	assert_class_c(UR_NAK_INVALID_REQ, RQ_PSN);

	post_recv(rc, 1, 0, 4096);
	s = req(UR_OP_RC_SEND_FIRST, RQ_PSN, MTU);
	send_spec(&s);
	ck_assert_uint_eq(sent_since(), 1); /* the ACK it asked for */
	s = write_only(RQ_PSN + 1, 0, 16);
	snapshot();
	send_spec(&s);
	ck_assert_uint_eq(delta(UR_CTR_rx_drop_bad_opcode_seq), 1);
	assert_class_c(UR_NAK_INVALID_REQ, RQ_PSN + 1);
}
END_TEST

/* Lengths that do not match the MTU, the RETH or the receive buffer (9.7.5.1.5). */
START_TEST(test_bad_lengths)
{
	struct ur_cqe c[4];
	struct spec s;

	/* WRITE ONLY carrying more than its RETH says */
	s = write_only(RQ_PSN, 0, 100);
	s.dmalen = 50;
	send_spec(&s);
	assert_class_c(UR_NAK_INVALID_REQ, RQ_PSN);

	/* a FIRST shorter than the MTU */
	s = req(UR_OP_RC_WRITE_FIRST, RQ_PSN, 100);
	s.va = IOVA;
	s.rkey = mr_rw->key;
	s.dmalen = 5000;
	send_spec(&s);
	assert_class_c(UR_NAK_INVALID_REQ, RQ_PSN);

	/* a SEND ONLY longer than the MTU */
	post_recv(rc, 2, 0, 8192);
	s = req(UR_OP_RC_SEND_ONLY, RQ_PSN, MTU + 4);
	send_spec(&s);
	assert_class_c(UR_NAK_INVALID_REQ, RQ_PSN);

	/* a SEND longer than the receive buffer: LOC_LEN_ERR here, NAK there */
	post_recv(rc, 3, 0, 64);
	s = req(UR_OP_RC_SEND_ONLY, RQ_PSN, 68);
	snapshot();
	send_spec(&s);
	ck_assert_uint_eq(delta(UR_CTR_resp_local_length_error), 1);
	ck_assert_uint_eq(drain(&rcq, c, 4), 1);
	ck_assert_uint_eq(c[0].wr_id, 3);
	ck_assert_uint_eq(c[0].status, UR_WC_LOC_LEN_ERR);
	assert_answer(UR_AETH_NAK | UR_NAK_INVALID_REQ, RQ_PSN);
	ck_assert_uint_eq(ur_qp_state(rc), UR_QPS_ERR);
	ck_assert(all_zero(mem + 64, BUF_LEN - 64));
}
END_TEST

/* PSNs far ahead: one sequence NAK per gap (C9-112), then silence; far behind: duplicates. */
START_TEST(test_psn_far_outside_window)
{
	struct spec s;

	s = write_only(RQ_PSN + 0x400000, 0, 16);
	snapshot();
	send_spec(&s);
	ck_assert_uint_eq(delta(UR_CTR_out_of_sequence), 1);
	assert_answer(UR_AETH_NAK | UR_NAK_PSN_SEQ_ERR, RQ_PSN);
	s.psn = RQ_PSN + 0x7fffff;
	snapshot();
	send_spec(&s);
	ck_assert_uint_eq(delta(UR_CTR_out_of_sequence), 1);
	ck_assert_uint_eq(delta(UR_CTR_rx_drop_out_of_window), 1);
	ck_assert_uint_eq(sent_since(), 0);
	ck_assert(all_zero(mem, BUF_LEN));

	/* far behind: executed long ago as far as we can tell; acknowledged, not executed */
	s = write_only(RQ_PSN - 0x400000, 0, 16);
	snapshot();
	send_spec(&s);
	ck_assert_uint_eq(delta(UR_CTR_duplicate_request), 1);
	assert_answer(UR_AETH_ACK | UR_AETH_CREDIT_INVALID, RQ_PSN - 1);
	ck_assert(all_zero(mem, BUF_LEN));
	/* a READ far behind has nothing to replay */
	s = req(UR_OP_RC_READ_REQUEST, RQ_PSN - 0x400000, 0);
	s.va = IOVA;
	s.rkey = mr_rw->key;
	s.dmalen = 16;
	snapshot();
	send_spec(&s);
	ck_assert_uint_eq(delta(UR_CTR_rx_drop_out_of_window), 1);
	ck_assert_uint_eq(sent_since(), 0);

	/* the expected PSN still works */
	s = write_only(RQ_PSN, 0, 16);
	snapshot();
	send_spec(&s);
	ck_assert_uint_eq(delta(UR_CTR_rx_write_requests), 1);
	ck_assert_uint_eq(ur_qp_state(rc), UR_QPS_RTS);
}
END_TEST

/*
 * No receive WQE: an RNR NAK for the SEND (9.7.5.2.8). The packets the
 * requester had already sent behind it are dropped quietly: a sequence NAK
 * would replace the RNR NAK, and the requester counts repeated sequence
 * NAKs as retries, so a receiver merely slow to post would end the QP with
 * RETRY_EXC_ERR although rnr_retry is infinite.
 */
START_TEST(test_rnr_then_pipelined_packets)
{
	struct ur_cqe c[4];
	struct spec s;

	s = req(UR_OP_RC_SEND_ONLY, RQ_PSN, 16);
	snapshot();
	send_spec(&s);
	ck_assert_uint_eq(delta(UR_CTR_out_of_buffer), 1);
	assert_answer(UR_AETH_RNR_NAK | 1, RQ_PSN);
	for (uint32_t k = 1; k <= 3; k++) {
		s = req(UR_OP_RC_SEND_ONLY, RQ_PSN + k, 16);
		snapshot();
		send_spec(&s);
		ck_assert_msg(sent_since() == 0, "answered %u with %u frames: %s", k, sent_since(),
			      moved());
		ck_assert_uint_eq(delta(UR_CTR_rx_drop_out_of_window), 1);
	}
	/* the retry after the RNR timer finds a receive WQE */
	post_recv(rc, 5, 0, 64);
	s = req(UR_OP_RC_SEND_ONLY, RQ_PSN, 16);
	send_spec(&s);
	assert_answer(UR_AETH_ACK | UR_AETH_CREDIT_INVALID, RQ_PSN);
	ck_assert_uint_eq(drain(&rcq, c, 4), 1);
	ck_assert_uint_eq(c[0].status, UR_WC_SUCCESS);
	ck_assert_uint_eq(ur_qp_state(rc), UR_QPS_RTS);
}
END_TEST

/* A NAK waiting to leave is not replaced by a plain ACK: it says more (9.7.5.2.2). */
START_TEST(test_nak_not_overwritten_by_ack)
{
	struct spec s;
	struct frame f;

	/* a gap: sequence NAK pending; then a duplicate arrives before it leaves */
	s = write_only(RQ_PSN + 2, 0, 16);
	build(&f, &s);
	sent_before = host.nsent;
	rx_only(&f);
	s = write_only(RQ_PSN - 1, 0, 16);
	build(&f, &s);
	rx_only(&f);
	pump();
	ck_assert_uint_eq(sent_since(), 1);
	assert_answer(UR_AETH_NAK | UR_NAK_PSN_SEQ_ERR, RQ_PSN);
}
END_TEST

/* Responses that answer nothing we asked (C9-102 ghosts, 9.7.5.2.4). */
START_TEST(test_stray_responses)
{
	struct spec s;

	s = req(UR_OP_RC_ACKNOWLEDGE, SQ_PSN + 0x100, 0);
	snapshot();
	send_spec(&s);
	assert_qp_dropped_as(UR_CTR_rx_drop_ghost_ack);
	s = req(UR_OP_RC_READ_RESPONSE_ONLY, SQ_PSN, 16);
	snapshot();
	send_spec(&s);
	assert_qp_dropped_as(UR_CTR_rx_drop_ghost_ack);
	s = req(UR_OP_RC_ATOMIC_ACKNOWLEDGE, SQ_PSN, 0);
	snapshot();
	send_spec(&s);
	assert_qp_dropped_as(UR_CTR_rx_drop_ghost_ack);
	ck_assert_uint_eq(host.nsent, 0);
	ck_assert_uint_eq(ur_qp_state(rc), UR_QPS_RTS);
	ck_assert(ur_cq_empty(&scq));
}
END_TEST

/* ---- 4. memory access: R_Key, PD, bounds, access rights (10.6.3, 9.7.5.1.3) ---- */

/* A refused access: NAK remote access error, counted, memory unchanged. */
static void assert_access_refused(const struct spec *s)
{
	snapshot();
	send_spec(s);
	ck_assert_msg(delta(UR_CTR_resp_remote_access_errors) == 1, "counters: %s", moved());
	assert_class_c(UR_NAK_REM_ACCESS_ERR, s->psn);
	ck_assert(all_zero(mem, BUF_LEN));
	ck_assert(all_zero(mem_other, BUF_LEN));
	ck_assert(all_zero(mem_ro, BUF_LEN));
}

/*
 * A class C error was NAKed and the NAK has not left yet (9.9.3.1.3): the
 * requests the peer sent behind the bad one arrive, are not executed, and
 * are each counted as dropped, under one reason, as every packet received
 * is either processed or counted.
 */
START_TEST(test_requests_behind_a_pending_error_nak)
{
	struct frame bad, next, more;
	struct spec s;

	s = write_only(RQ_PSN, 0, 16);
	s.rkey = 0xdeadbeef;
	build(&bad, &s);
	s = write_only(RQ_PSN + 1, 64, 16);
	build(&next, &s);
	s = write_only(RQ_PSN + 2, 128, 16);
	build(&more, &s);

	sent_before = host.nsent;
	rx_only(&bad); /* in one receive burst with the two behind it */
	snapshot();
	rx_only(&next);
	assert_qp_dropped_as(UR_CTR_rx_drop_error_nak_pending);
	snapshot();
	rx_only(&more);
	assert_qp_dropped_as(UR_CTR_rx_drop_error_nak_pending);
	pump();
	assert_answer(UR_AETH_NAK | UR_NAK_REM_ACCESS_ERR, RQ_PSN);
	ck_assert_uint_eq(sent_since(), 1);
	ck_assert(all_zero(mem, BUF_LEN));
	ck_assert_uint_eq(ur_qp_state(rc), UR_QPS_ERR);
}
END_TEST

START_TEST(test_rkey_checks)
{
	struct spec s;

	/* a key nobody holds, the index of a real one with another tag, index 0 */
	s = write_only(RQ_PSN, 0, 16);
	s.rkey = 0xdeadbeef;
	assert_access_refused(&s);
	s.rkey = mr_rw->key ^ 1;
	assert_access_refused(&s);
	s.rkey = mr_rw->key & 0xfff;
	assert_access_refused(&s);
	/* a region of another protection domain */
	s = write_only(RQ_PSN, 0, 16);
	s.va = IOVA + 2 * BUF_LEN;
	s.rkey = mr_other->key;
	assert_access_refused(&s);
	/* a region without remote write */
	s = write_only(RQ_PSN, 0, 16);
	s.va = IOVA + BUF_LEN;
	s.rkey = mr_ro->key;
	assert_access_refused(&s);
	/* bounds: one byte over the end, before the start */
	s = write_only(RQ_PSN, BUF_LEN - 15, 16);
	assert_access_refused(&s);
	s = write_only(RQ_PSN, 0, 16);
	s.va = IOVA - 1;
	assert_access_refused(&s);
	/* address + length wraps around 2^64 */
	s = write_only(RQ_PSN, 0, 16);
	s.va = UINT64_MAX - 7;
	assert_access_refused(&s);
	/* a RETH length of 4 GiB - 1 from inside the region (the FIRST checks the whole) */
	s = req(UR_OP_RC_WRITE_FIRST, RQ_PSN, MTU);
	s.va = IOVA;
	s.rkey = mr_rw->key;
	s.dmalen = 0xffffffff;
	assert_access_refused(&s);
	/* READ: past the end; from a region of another PD */
	s = req(UR_OP_RC_READ_REQUEST, RQ_PSN, 0);
	s.va = IOVA + BUF_LEN - 8;
	s.rkey = mr_rw->key;
	s.dmalen = 9;
	assert_access_refused(&s);
	s.va = IOVA + 2 * BUF_LEN;
	s.rkey = mr_other->key;
	s.dmalen = 8;
	assert_access_refused(&s);
	s.va = UINT64_MAX - 3;
	s.rkey = mr_rw->key;
	s.dmalen = 0x10;
	assert_access_refused(&s);
	/* atomics: a region without atomic access, past the end */
	s = req(UR_OP_RC_FETCH_ADD, RQ_PSN, 0);
	s.va = IOVA + BUF_LEN;
	s.rkey = mr_ro->key;
	s.swap_add = 1;
	assert_access_refused(&s);
	s.va = IOVA + BUF_LEN - 4 + 4;
	s.rkey = mr_rw->key;
	assert_access_refused(&s);
	/* a misaligned atomic is an invalid request (9.4.5) */
	s.va = IOVA + 4;
	send_spec(&s);
	assert_class_c(UR_NAK_INVALID_REQ, RQ_PSN);
	ck_assert(all_zero(mem, BUF_LEN));
}
END_TEST

/* The QP's own remote access attributes are checked before any key (10.2.1.4). */
START_TEST(test_qp_access_flags)
{
	struct ur_qp_attr a;
	struct spec s;

	qp_attr(&a, UR_ACCESS_LOCAL_WRITE);
	to_state(rc, &a, UR_QPS_RTS, UR_QP_ACCESS_FLAGS);
	s = write_only(RQ_PSN, 0, 16);
	snapshot();
	send_spec(&s);
	ck_assert_uint_eq(delta(UR_CTR_resp_remote_access_errors), 1);
	assert_answer(UR_AETH_NAK | UR_NAK_REM_ACCESS_ERR, RQ_PSN);
	ck_assert_uint_eq(ur_qp_state(rc), UR_QPS_ERR);

	for (int k = 0; k < 2; k++) {
		reconnect(rc, UR_QPT_RC, UR_ACCESS_LOCAL_WRITE | UR_ACCESS_REMOTE_WRITE);
		if (k == 0) {
			s = req(UR_OP_RC_READ_REQUEST, RQ_PSN, 0);
			s.dmalen = 8;
		} else {
			s = req(UR_OP_RC_COMPARE_SWAP, RQ_PSN, 0);
		}
		s.va = IOVA;
		s.rkey = mr_rw->key;
		snapshot();
		send_spec(&s);
		ck_assert_uint_eq(delta(UR_CTR_resp_remote_access_errors), 1);
		assert_answer(UR_AETH_NAK | UR_NAK_REM_ACCESS_ERR, RQ_PSN);
	}
	ck_assert(all_zero(mem, BUF_LEN));
}
END_TEST

/* Deregistration takes effect at once, in the middle of a WRITE (C10-?: the key is checked per packet). */
START_TEST(test_dereg_mid_write)
{
	struct spec s;

	memset(mem, 0, BUF_LEN);
	s = req(UR_OP_RC_WRITE_FIRST, RQ_PSN, MTU);
	s.va = IOVA;
	s.rkey = mr_rw->key;
	s.dmalen = 3 * MTU;
	s.ackreq = false;
	send_spec(&s);
	ck_assert_uint_eq(mem[0], pattern(0));
	ur_dev_dereg_mr(dev, mr_rw);
	mr_rw = NULL;
	s = req(UR_OP_RC_WRITE_MIDDLE, RQ_PSN + 1, MTU);
	snapshot();
	send_spec(&s);
	ck_assert_uint_eq(delta(UR_CTR_resp_remote_access_errors), 1);
	assert_answer(UR_AETH_NAK | UR_NAK_REM_ACCESS_ERR, RQ_PSN + 1);
	ck_assert(all_zero(mem + MTU, BUF_LEN - MTU));
}
END_TEST

/* A READ accepted before the region goes, answered after: no byte leaves. */
START_TEST(test_dereg_before_read_response)
{
	struct spec s;
	struct frame f;

	for (uint32_t i = 0; i < BUF_LEN; i++)
		mem[i] = pattern(i);
	s = req(UR_OP_RC_READ_REQUEST, RQ_PSN, 0);
	s.va = IOVA;
	s.rkey = mr_rw->key;
	s.dmalen = 3 * MTU;
	build(&f, &s);
	snapshot();
	sent_before = host.nsent;
	rx_only(&f);
	ck_assert_uint_eq(delta(UR_CTR_rx_read_requests), 1);
	ur_dev_dereg_mr(dev, mr_rw);
	mr_rw = NULL;
	pump();
	ck_assert_uint_eq(delta(UR_CTR_resp_remote_access_errors), 1);
	ck_assert_uint_eq(sent_since(), 1); /* the NAK, no READ response */
	assert_answer(UR_AETH_NAK | UR_NAK_REM_ACCESS_ERR, RQ_PSN);
	ck_assert_uint_eq(ur_qp_state(rc), UR_QPS_ERR);
}
END_TEST

/*
 * A READ response the pacer holds back (DCQCN cut the QP's rate) waits for
 * the pace timer, and the transmit pass returns meanwhile: it used to put
 * the QP straight back on the round robin and spin on it forever.
 */
START_TEST(test_paced_read_response_waits)
{
	struct spec s;

	s = req(UR_OP_RC_READ_REQUEST, RQ_PSN, 0);
	s.va = IOVA;
	s.rkey = mr_rw->key;
	s.dmalen = 3 * MTU;
	rc->next_tx_ns = now + 100000;
	snapshot();
	send_spec(&s);
	ck_assert_uint_eq(delta(UR_CTR_rx_read_requests), 1);
	ck_assert_uint_eq(sent_since(), 0);
	now += 100000;
	pump();
	ck_assert_uint_eq(sent_since(), 3);
	ck_assert_uint_eq(ur_qp_state(rc), UR_QPS_RTS);
}
END_TEST

/* A READ request for `len` bytes at offset `off` of mr_rw, or a FetchAdd of 1 there. */
static struct spec rd_atomic_req(bool read, uint32_t psn, uint32_t off, uint32_t len)
{
	struct spec s = req(read ? UR_OP_RC_READ_REQUEST : UR_OP_RC_FETCH_ADD, psn, 0);

	s.va = IOVA + off;
	s.rkey = mr_rw->key;
	s.dmalen = len;
	s.swap_add = 1;
	return s;
}

/*
 * A requester that sends more READs and atomics than the responder's
 * max_dest_rd_atomic (4 here) before any is answered gets a NAK Invalid
 * Request for the first one past the limit, and the excess is never
 * executed. Like every class C error here the NAK stops the responder: the
 * answers still owed are not sent, since the requester's QP goes to the
 * error state on that NAK anyway. (Soft-RoCE instead recycles its oldest
 * resource, so a retry of that one would be answered from another request's
 * state; uroce keeps every resource it advertised.) Once answers have left,
 * the same resources serve any number of new requests.
 */
START_TEST(test_too_many_reads_and_atomics)
{
	struct spec s;
	struct frame f;
	uint64_t word;
	unsigned before;

	for (uint32_t i = 0; i < BUF_LEN; i++)
		mem[i] = 0;
	snapshot();
	sent_before = host.nsent;
	for (uint32_t k = 0; k < 4; k++) {
		s = rd_atomic_req(k % 2 == 0, RQ_PSN + k, 8 * k, k % 2 == 0 ? 64 : 8);
		build(&f, &s);
		rx_only(&f);
	}
	/* the fifth, an atomic, finds every resource busy */
	s = rd_atomic_req(false, RQ_PSN + 4, 0x100, 8);
	build(&f, &s);
	rx_only(&f);
	pump();
	ck_assert_uint_eq(delta(UR_CTR_rx_read_requests), 2);
	ck_assert_uint_eq(delta(UR_CTR_rx_atomic_requests), 2);
	ck_assert_uint_eq(sent_since(), 1);
	assert_answer(UR_AETH_NAK | UR_NAK_INVALID_REQ, RQ_PSN + 4);
	ck_assert_uint_eq(ur_qp_state(rc), UR_QPS_ERR);
	memcpy(&word, mem + 0x100, 8);
	ck_assert_uint_eq(word, 0); /* not executed */
	memcpy(&word, mem + 8, 8);
	ck_assert_uint_eq(word, 1);

	/* answered before the next arrive: four resources serve any number */
	reconnect(rc, UR_QPT_RC, all_remote);
	drain(&rcq, NULL, CQ_DEPTH);
	before = host.nsent;
	for (uint32_t k = 0; k < 12; k++) {
		s = rd_atomic_req(k % 3 != 0, RQ_PSN + k, 0x200, 8);
		send_spec(&s);
		ck_assert_uint_eq(sent_since(), 1);
	}
	ck_assert_uint_eq(host.nsent - before, 12);
	ck_assert_uint_eq(ur_qp_state(rc), UR_QPS_RTS);
	memcpy(&word, mem + 0x200, 8);
	ck_assert_uint_eq(word, 4);
}
END_TEST

/* Queue a request on the RC QP from `len` bytes of mr_rw at `addr` (no doorbell). */
static void post_request(uint64_t wr_id, enum ur_wr_opcode op, uint64_t addr, uint32_t len)
{
	struct ur_wq *sq = ur_qp_sq(rc);
	struct ur_send_wqe *w = ur_wq_reserve(sq, 0);

	ck_assert_ptr_nonnull(w);
	memset(w, 0, sq->stride);
	w->wr_id = wr_id;
	w->opcode = op;
	w->length = len;
	w->remote_addr = 0x1000;
	w->rkey = 0x5555;
	w->num_sge = 1;
	w->sge[0].addr = addr;
	w->sge[0].length = len;
	w->sge[0].lkey = mr_rw->key;
	ur_wq_commit(sq, 1);
}

/* One pass that reaches its transmit stage `dt` ns after it started receiving. */
static void late_transmit_stage(uint64_t dt)
{
	now += dt;
	ur_dev_poll(dev, now);
	ur_dev_tx(dev, now, 64);
}

/* The peer's WRITE of 16 bytes with PSN `psn` comes in; a pass `dt` later
 * reaches its transmit stage. */
static void peer_write_then_stage(uint32_t psn, uint64_t dt)
{
	struct spec s = write_only(psn, 0, 16);
	struct frame f;

	build(&f, &s);
	sent_before = host.nsent;
	rx_only(&f);
	late_transmit_stage(dt);
}

/* Our requester is busy: from now on our ACKs wait for requests. */
static void requester_asks_for_acks(void)
{
	dev->cfg.ack_delay_ns = 50000;
	post_request(0, UR_WR_RDMA_WRITE, IOVA, 8);
	ur_qp_doorbell(rc);
	sent_before = host.nsent;
	pump();
	ck_assert_uint_eq(sent_since(), 1);
}

/*
 * An ACK held for the next request (our requester sent lately) is held
 * from the transmit stage of the pass that received the request: a pass
 * that took 60 us to take in its burst used to find a 50 us hold over
 * already, and its ACK left alone, ahead of the answer it was waiting for.
 */
START_TEST(test_ack_hold_starts_at_the_transmit_stage)
{
	requester_asks_for_acks();
	peer_write_then_stage(RQ_PSN, 60000);
	ck_assert_uint_eq(sent_since(), 0);
	late_transmit_stage(49000);
	ck_assert_uint_eq(sent_since(), 0);
	late_transmit_stage(2000); /* no request came: the hold is over */
	ck_assert_uint_eq(sent_since(), 1);
	assert_answer(UR_AETH_ACK | UR_AETH_CREDIT_INVALID, RQ_PSN);
}
END_TEST

/*
 * The peer's WRITE asks for an ACK while our requester is busy, so the ACK
 * is held; 40 us later the application answers with `op` of `npkts`
 * packets, and the transmit stages that follow (30 us apart) may send one
 * packet each: all of the answer and the ACK.
 */
static void answer_one_packet_a_stage(enum ur_wr_opcode op, unsigned npkts)
{
	requester_asks_for_acks();
	peer_write_then_stage(RQ_PSN, 1000);
	ck_assert_uint_eq(sent_since(), 0);
	now += 40000;
	post_request(1, op, IOVA, npkts * MTU);
	ur_qp_doorbell(rc);
	for (unsigned i = 0; i <= npkts; i++) {
		now += 30000;
		ur_dev_poll(dev, now);
		ur_dev_tx(dev, now, 1);
	}
	ck_assert_uint_eq(sent_since(), npkts + 1);
}

/*
 * A held ACK stays behind the whole answer, however many transmit stages the
 * answer takes, though the hold runs out meanwhile: let go in the middle it
 * completes the peer's request, and the peer spins on memory the rest of
 * the answer is still to fill (ib_write_lat -s 524288 over memif: 577 us a
 * round instead of 118).
 */
START_TEST(test_held_ack_rides_behind_a_whole_answer)
{
	struct ur_pkt pkt;

	answer_one_packet_a_stage(UR_WR_RDMA_WRITE, 4);
	for (unsigned k = 0; k < 4; k++) {
		parse_sent(sent_before + k, &pkt);
		ck_assert_msg(pkt.opcode != UR_OP_RC_ACKNOWLEDGE, "the ACK left before packet %u", k);
	}
	assert_answer(UR_AETH_ACK | UR_AETH_CREDIT_INVALID, RQ_PSN);
}
END_TEST

/*
 * A held ACK leads an answer that completes at the peer, a SEND, just ahead
 * of its last packet: the peer sees its request complete before the answer,
 * as from a NIC that ACKs at once (ib_send_lat -e, on one completion
 * channel, polls its send CQ once on whichever CQ's event came first).
 */
START_TEST(test_held_ack_goes_ahead_of_a_sends_last_packet)
{
	struct ur_pkt pkt;

	answer_one_packet_a_stage(UR_WR_SEND, 3);
	for (unsigned k = 0; k < 2; k++) {
		parse_sent(sent_before + k, &pkt);
		ck_assert_msg(pkt.opcode != UR_OP_RC_ACKNOWLEDGE, "the ACK left before packet %u", k);
	}
	assert_ack_frame(sent_before + 2, UR_AETH_ACK | UR_AETH_CREDIT_INVALID, RQ_PSN);
	parse_sent(sent_before + 3, &pkt);
	ck_assert_msg(pkt.opcode == UR_OP_RC_SEND_LAST, "the answer ended with %s",
		      ur_opcode_name(pkt.opcode));
}
END_TEST

/*
 * How long an ACK waits is learned from how long the application took to
 * answer: an answer that came after the ACK had left alone makes the next
 * ACK wait long enough for one as slow, and ACKs that get no answer at all
 * wait less and less.
 */
START_TEST(test_ack_hold_learns_the_answer_time)
{
	requester_asks_for_acks();
	/* the answer comes 150 us after the request: the 50 us hold missed it */
	peer_write_then_stage(RQ_PSN, 0);
	late_transmit_stage(51000);
	ck_assert_uint_eq(sent_since(), 1);
	now += 99000;
	post_request(1, UR_WR_RDMA_WRITE, IOVA, 8);
	ur_qp_doorbell(rc);
	late_transmit_stage(0);
	ck_assert_uint_eq(sent_since(), 2);

	/* the next ACK waits for an answer that takes 100 us, and rides behind it */
	peer_write_then_stage(ur_psn_add(RQ_PSN, 1), 0);
	late_transmit_stage(100000);
	ck_assert_uint_eq(sent_since(), 0);
	post_request(2, UR_WR_RDMA_WRITE, IOVA, 8);
	ur_qp_doorbell(rc);
	late_transmit_stage(0);
	late_transmit_stage(0);
	ck_assert_uint_eq(sent_since(), 2);
	assert_answer(UR_AETH_ACK | UR_AETH_CREDIT_INVALID, ur_psn_add(RQ_PSN, 1));

	/* no answer comes: this one waits the learned time (over 250 us) ... */
	peer_write_then_stage(ur_psn_add(RQ_PSN, 2), 0);
	late_transmit_stage(250000);
	ck_assert_uint_eq(sent_since(), 0);
	late_transmit_stage(50000);
	ck_assert_uint_eq(sent_since(), 1);
	/* ... and, unanswered, the next one half as long */
	peer_write_then_stage(ur_psn_add(RQ_PSN, 3), 0);
	late_transmit_stage(100000);
	ck_assert_uint_eq(sent_since(), 0);
	late_transmit_stage(50000);
	ck_assert_uint_eq(sent_since(), 1);
	assert_answer(UR_AETH_ACK | UR_AETH_CREDIT_INVALID, ur_psn_add(RQ_PSN, 3));
}
END_TEST

/* ack.c's UR_ACK_HOLD_MAX_NS: the longest an ACK may be held (this QP's
 * timeout, 67 ms, allows it) */
#define ACK_HOLD_LIMIT_NS 1000000ull
#define STREAM_MSGS 200

/* A stream of the peer's one-packet WRITEs, RQ_PSN + k arriving at arrived[k]. */
struct ack_watch {
	uint64_t arrived[STREAM_MSGS];
	unsigned n;	  /* WRITEs arrived */
	unsigned unacked; /* the first not acknowledged yet */
	uint64_t worst;	  /* the longest an arrived WRITE waited for its ACK */
	unsigned acks;
	uint32_t req_psn; /* the PSN of our last request */
};

/* fake_host's on_frame: an ACK leaves now. */
static void watch_frame(void *ctx, const uint8_t *frame, uint32_t len)
{
	struct ack_watch *w = ctx;
	struct ur_pkt pkt;

	ck_assert_int_eq(ur_frame_parse(&pkt, frame, len), UR_PARSE_OK);
	if (pkt.opcode != UR_OP_RC_ACKNOWLEDGE) {
		w->req_psn = pkt.psn;
		return;
	}
	w->worst = UR_MAX(w->worst, now - w->arrived[w->unacked]);
	w->unacked = ur_psn_diff(pkt.psn, RQ_PSN) + 1;
	w->acks++;
}

static void watch_start(struct ack_watch *w)
{
	memset(w, 0, sizeof(*w));
	w->req_psn = SQ_PSN; /* requester_asks_for_acks's WRITE */
	host.opt.ctx = w;
	host.opt.on_frame = watch_frame;
}

static void watch_stop(void)
{
	host.opt.on_frame = NULL;
}

/* Take in the next WRITE now. */
static void watch_arrival(struct ack_watch *w)
{
	struct spec s = write_only(ur_psn_add(RQ_PSN, w->n), 0, 16);
	struct frame f;

	ck_assert_uint_lt(w->n, STREAM_MSGS);
	build(&f, &s);
	w->arrived[w->n++] = now;
	rx_only(&f);
}

/* After a pass: how long the oldest WRITE not acknowledged has waited so far. */
static void watch_pass(struct ack_watch *w)
{
	if (w->unacked < w->n)
		w->worst = UR_MAX(w->worst, now - w->arrived[w->unacked]);
}

/*
 * However the hold restarts for each new message, it never keeps an ACK
 * longer than its limit since the first packet it acknowledges arrived. A
 * WRITE every 30 us, each answered by a WRITE of ours, with one packet to
 * send a pass (a busy device): the answer leaves, and the next WRITE holds
 * the ACK again before it could follow. The hold and its limit restarted
 * with each message, and no ACK left while the stream lasted (6 ms here).
 */
START_TEST(test_ack_hold_limit_counts_from_the_first_message)
{
	struct ack_watch w;

	requester_asks_for_acks();
	watch_start(&w);
	for (unsigned k = 0; k < STREAM_MSGS; k++) {
		/* the peer's ACK of our last WRITE comes first: our send queue never fills */
		struct spec ack = req(UR_OP_RC_ACKNOWLEDGE, w.req_psn, 0);
		struct frame f;

		now += 30000;
		build(&f, &ack);
		rx_only(&f);
		drain(&scq, NULL, CQ_DEPTH);
		watch_arrival(&w);
		post_request(10 + k, UR_WR_RDMA_WRITE, IOVA, 8);
		ur_qp_doorbell(rc);
		ur_dev_poll(dev, now);
		ur_dev_tx(dev, now, 1);
		watch_pass(&w);
	}
	watch_stop();
	/* the limit, and the pass that finds it over */
	ck_assert_msg(w.worst <= ACK_HOLD_LIMIT_NS + 30000,
		      "a WRITE waited %llu us for its ACK (%u ACKs sent)",
		      (unsigned long long)w.worst / 1000, w.acks);
	ck_assert_uint_gt(w.acks, 0);
}
END_TEST

/*
 * A stream one way, with a rare message back (UCX's flow-control grants: 28
 * SENDs back against 8,800) is not a ping-pong: each message that came
 * since our last request and got no answer makes the next ACK less worth
 * holding. One WRITE of ours every 50 of the peer's, arriving 10 us apart:
 * the ACKs of at most the two after ours wait, the rest leave in the pass
 * that received their message. Every ACK used to wait while WRITEs kept
 * coming, up to when the stream paused.
 */
START_TEST(test_one_way_stream_is_no_ping_pong)
{
	struct ack_watch w;
	unsigned late = 0;

	requester_asks_for_acks();
	watch_start(&w);
	for (unsigned k = 0; k < STREAM_MSGS; k++) {
		now += 10000;
		if (k % 50 == 25) {
			post_request(10 + k, UR_WR_RDMA_WRITE, IOVA, 8);
			ur_qp_doorbell(rc);
		}
		watch_arrival(&w);
		ur_dev_poll(dev, now);
		ur_dev_tx(dev, now, 64);
		watch_pass(&w);
		if (w.unacked < w.n) /* this WRITE's ACK waits */
			late++;
	}
	watch_stop();
	/* five requests of ours (one before the stream), up to two held ACKs each */
	ck_assert_msg(late <= 10, "%u of %u ACKs waited (the longest %llu us)", late, STREAM_MSGS,
		      (unsigned long long)w.worst / 1000);
}
END_TEST

/*
 * SEND with Invalidate may only invalidate memory windows and fast-registered
 * regions (10.6.7.2); uroce has neither, so a peer naming one of our
 * registered regions must not disable it: the receive fails with
 * REM_INV_REQ_ERR and the requester gets an invalid request NAK.
 */
START_TEST(test_send_with_invalidate_refused)
{
	struct ur_cqe c[4];
	struct spec s;

	post_recv(rc, 9, 1024, 64);
	s = req(UR_OP_RC_SEND_ONLY_INV, RQ_PSN, 16);
	s.ieth = mr_rw->key;
	snapshot();
	send_spec(&s);
	ck_assert_uint_eq(drain(&rcq, c, 4), 1);
	ck_assert_uint_eq(c[0].wr_id, 9);
	ck_assert_uint_eq(c[0].status, UR_WC_REM_INV_REQ_ERR);
	assert_class_c(UR_NAK_INVALID_REQ, RQ_PSN);
	/* the region still works */
	s = write_only(RQ_PSN, 0, 16);
	snapshot();
	send_spec(&s);
	ck_assert_uint_eq(delta(UR_CTR_rx_write_requests), 1);
	ck_assert_uint_eq(mem[15], pattern(15));
}
END_TEST

/* ---- 5. nothing stale leaves: pads zeroed, READ responses exactly as long as asked ---- */

/* Pad bytes are zero and the frame ends with the ICRC right after them. */
static void check_frame_shape(unsigned k)
{
	struct ur_pkt pkt;
	uint32_t pad, len;
	const uint8_t *f = fake_host_frame(&host, k, &len);

	parse_sent(k, &pkt);
	pad = ur_bth_padcnt(pkt.bth);
	ck_assert_msg(all_zero(pkt.payload + pkt.payload_len, pad), "frame %u (%s): pad not zero",
		      k, ur_opcode_name(pkt.opcode));
	ck_assert_uint_eq(pkt.payload + pkt.payload_len + pad + UR_ICRC_SIZE - f, len);
}

static void scenario_read_responses(void)
{
	static const uint32_t lens[] = {1, 2, 3, 5, MTU - 1, MTU + 1, 2 * MTU + 3};
	uint32_t psn = RQ_PSN;
	struct spec s;

	for (uint32_t i = 0; i < BUF_LEN; i++)
		mem[i] = pattern(i);
	for (unsigned n = 0; n < sizeof(lens) / sizeof(lens[0]); n++) {
		uint32_t got = 0, npkts = (lens[n] + MTU - 1) / MTU;

		s = req(UR_OP_RC_READ_REQUEST, psn, 0);
		s.va = IOVA + 100 * n;
		s.rkey = mr_rw->key;
		s.dmalen = lens[n];
		send_spec(&s);
		ck_assert_uint_eq(sent_since(), npkts);
		for (unsigned k = sent_before; k < host.nsent; k++) {
			struct ur_pkt pkt;

			check_frame_shape(k);
			parse_sent(k, &pkt);
			ck_assert_uint_eq(pkt.op->kind, UR_KIND_READ_RESP);
			for (uint32_t i = 0; i < pkt.payload_len; i++)
				ck_assert_uint_eq(pkt.payload[i], mem[100 * n + got + i]);
			got += pkt.payload_len;
		}
		ck_assert_uint_eq(got, lens[n]);
		psn += npkts;
	}
	/* acknowledgements, NAKs and atomic acknowledgements */
	s = req(UR_OP_RC_SEND_ONLY, psn, 3); /* no receive WQE: RNR NAK */
	send_spec(&s);
	check_frame_shape(host.nsent - 1);
	s = req(UR_OP_RC_FETCH_ADD, psn, 0);
	s.va = IOVA + 8;
	s.rkey = mr_rw->key;
	s.swap_add = 5;
	send_spec(&s);
	check_frame_shape(host.nsent - 1);
	s = write_only(psn + 1, 0, 7);
	send_spec(&s);
	check_frame_shape(host.nsent - 1);
	s = write_only(psn + 0x1000, 0, 7); /* sequence NAK */
	send_spec(&s);
	check_frame_shape(host.nsent - 1);
}

static void scenario_requests(void)
{
	static const uint32_t lens[] = {1, 2, 3, 5, 6, 7};

	for (uint32_t i = 0; i < BUF_LEN; i++)
		mem[i] = pattern(i);
	for (unsigned n = 0; n < sizeof(lens) / sizeof(lens[0]); n++)
		post_request(n, n & 1 ? UR_WR_SEND : UR_WR_RDMA_WRITE, IOVA + 64 * n, lens[n]);
	ur_qp_doorbell(rc);
	sent_before = host.nsent;
	pump();
	ck_assert_uint_eq(sent_since(), 6);
	for (unsigned k = sent_before; k < host.nsent; k++)
		check_frame_shape(k);
}

/*
 * Run a scenario twice, each time with the host's buffers poisoned with a
 * different byte: the engine is deterministic, so any byte that differs
 * between the two runs is one it never wrote, i.e. stale memory it sent.
 */
static void same_frames_whatever_the_poison(void (*scenario)(void))
{
	static uint8_t first[MAX_SENT][UR_FRAME_MAX];
	static uint32_t first_len[MAX_SENT];
	unsigned n;

	scenario();
	n = host.nsent;
	ck_assert_uint_gt(n, 0);
	ck_assert_uint_le(n, MAX_SENT);
	for (unsigned k = 0; k < n; k++) {
		const uint8_t *f = fake_host_frame(&host, k, &first_len[k]);

		memcpy(first[k], f, first_len[k]);
	}
	teardown();
	poison = POISON2;
	setup();
	scenario();
	poison = POISON;
	ck_assert_uint_eq(host.nsent, n);
	for (unsigned k = 0; k < n; k++) {
		uint32_t len;
		const uint8_t *f = fake_host_frame(&host, k, &len);

		ck_assert_uint_eq(len, first_len[k]);
		for (uint32_t i = 0; i < first_len[k]; i++)
			ck_assert_msg(f[i] == first[k][i],
				      "frame %u byte %u was never written (%#x, then %#x)", k, i,
				      first[k][i], f[i]);
	}
}

START_TEST(test_responses_exact_and_clean)
{
	same_frames_whatever_the_poison(scenario_read_responses);
}
END_TEST

START_TEST(test_requests_clean)
{
	same_frames_whatever_the_poison(scenario_requests);
}
END_TEST

/* ---- 6. UC: no acknowledgements; a lost packet costs one message, never the QP (9.8.3) ---- */

static void uc_recv(uint64_t wr_id, uint32_t off)
{
	post_recv(uc, wr_id, off, 4096);
}

START_TEST(test_uc_gap_resynchronises)
{
	struct ur_cqe c[4];
	struct spec s;

	uc_recv(1, 0);
	/* a whole message lost: the next one starts a new message at its own PSN */
	s = req(UR_OP_UC_SEND_ONLY, RQ_PSN + 5, 40);
	snapshot();
	send_spec(&s);
	ck_assert_uint_eq(sent_since(), 0); /* UC never acknowledges */
	ck_assert_uint_eq(drain(&rcq, c, 4), 1);
	ck_assert_uint_eq(c[0].status, UR_WC_SUCCESS);
	ck_assert_uint_eq(c[0].byte_len, 40);
	ck_assert_uint_eq(mem[39], pattern(39));
	/* and the one after it too */
	uc_recv(2, 4096);
	s = req(UR_OP_UC_SEND_ONLY, RQ_PSN + 6, 8);
	send_spec(&s);
	ck_assert_uint_eq(drain(&rcq, c, 4), 1);
	ck_assert_uint_eq(c[0].wr_id, 2);
	ck_assert_uint_eq(c[0].status, UR_WC_SUCCESS);
	ck_assert_uint_eq(host.nsent, 0);
	ck_assert_uint_eq(ur_qp_state(uc), UR_QPS_RTS);
}
END_TEST

START_TEST(test_uc_lost_middle_drops_message)
{
	struct ur_cqe c[4];
	struct spec s;

	uc_recv(1, 0);
	s = req(UR_OP_UC_SEND_FIRST, RQ_PSN, MTU);
	send_spec(&s);
	/* the MIDDLE is lost; the LAST must not complete a message with a hole */
	s = req(UR_OP_UC_SEND_LAST, RQ_PSN + 2, 16);
	snapshot();
	send_spec(&s);
	ck_assert_uint_eq(delta(UR_CTR_rx_drop_uc_message), 1);
	ck_assert(ur_cq_empty(&rcq));
	/* a MIDDLE out of nowhere: discarded until a message starts */
	s = req(UR_OP_UC_SEND_MIDDLE, RQ_PSN + 3, MTU);
	snapshot();
	send_spec(&s);
	ck_assert_uint_eq(delta(UR_CTR_rx_drop_uc_resync), 1);
	ck_assert(ur_cq_empty(&rcq));
	/* the next whole message lands in the receive WQE the broken one had */
	s = req(UR_OP_UC_SEND_ONLY, RQ_PSN + 4, 24);
	send_spec(&s);
	ck_assert_uint_eq(drain(&rcq, c, 4), 1);
	ck_assert_uint_eq(c[0].wr_id, 1);
	ck_assert_uint_eq(c[0].status, UR_WC_SUCCESS);
	ck_assert_uint_eq(c[0].byte_len, 24);
	ck_assert_uint_eq(host.nsent, 0);
	ck_assert_uint_eq(ur_qp_state(uc), UR_QPS_RTS);
}
END_TEST

/*
 * A UC packet at the expected PSN whose opcode does not continue the open
 * message (or continues none) is a broken message too: it is dropped, and
 * never lands in, or completes again, a receive WQE that already completed.
 */
START_TEST(test_uc_opcode_out_of_sequence)
{
	struct ur_cqe c[4];
	struct spec s;

	uc_recv(1, 0);
	s = req(UR_OP_UC_SEND_ONLY, RQ_PSN, 8);
	send_spec(&s);
	ck_assert_uint_eq(drain(&rcq, c, 4), 1);
	ck_assert_uint_eq(c[0].wr_id, 1);
	memset(mem, 0, BUF_LEN);
	/* a LAST with no message open */
	s = req(UR_OP_UC_SEND_LAST, RQ_PSN + 1, 16);
	snapshot();
	send_spec(&s);
	ck_assert_uint_eq(delta(UR_CTR_rx_drop_uc_message), 1);
	ck_assert(ur_cq_empty(&rcq));
	/* a SEND's LAST inside a WRITE */
	s = req(UR_OP_UC_WRITE_FIRST, RQ_PSN + 2, MTU);
	s.va = IOVA + 4096;
	s.rkey = mr_rw->key;
	s.dmalen = MTU + 16;
	send_spec(&s);
	s = req(UR_OP_UC_SEND_LAST, RQ_PSN + 3, 16);
	snapshot();
	send_spec(&s);
	ck_assert_uint_eq(delta(UR_CTR_rx_drop_uc_message), 1);
	ck_assert(ur_cq_empty(&rcq));
	ck_assert(all_zero(mem, 4096)); /* the completed WQE's buffer */
	/* the next message starts afresh, in a new receive WQE */
	uc_recv(2, 0);
	s = req(UR_OP_UC_SEND_ONLY, RQ_PSN + 4, 24);
	send_spec(&s);
	ck_assert_uint_eq(drain(&rcq, c, 4), 1);
	ck_assert_uint_eq(c[0].wr_id, 2);
	ck_assert_uint_eq(c[0].byte_len, 24);
	ck_assert_uint_eq(ur_qp_state(uc), UR_QPS_RTS);
}
END_TEST

/* A UC peer's bad WRITE is dropped: it cannot take our QP down (no NAK exists for UC). */
START_TEST(test_uc_bad_write_dropped)
{
	struct spec s;

	s = req(UR_OP_UC_WRITE_ONLY, RQ_PSN, 16);
	s.va = IOVA;
	s.rkey = mr_rw->key ^ 0x10;
	s.dmalen = 16;
	snapshot();
	send_spec(&s);
	ck_assert_uint_eq(delta(UR_CTR_resp_remote_access_errors), 1);
	ck_assert_uint_eq(delta(UR_CTR_rx_drop_uc_message), 1);
	s = req(UR_OP_UC_WRITE_ONLY, RQ_PSN + 1, 16);
	s.va = IOVA;
	s.rkey = mr_rw->key;
	s.dmalen = 8; /* shorter than the payload */
	snapshot();
	send_spec(&s);
	ck_assert_uint_eq(delta(UR_CTR_rx_drop_uc_message), 1);
	ck_assert(all_zero(mem, BUF_LEN));
	ck_assert_uint_eq(host.nsent, 0);
	ck_assert_uint_eq(ur_qp_state(uc), UR_QPS_RTS);
	s.psn = RQ_PSN + 2;
	s.dmalen = 16;
	send_spec(&s);
	ck_assert_uint_eq(mem[15], pattern(15));
}
END_TEST

static Suite *rx_suite(void)
{
	Suite *s = suite_create("rx");
	TCase *tf = tcase_create("frames");
	TCase *td = tcase_create("dispatch");
	TCase *tp = tcase_create("protocol");
	TCase *ta = tcase_create("access");
	TCase *tl = tcase_create("leaks");
	TCase *tu = tcase_create("uc");
	TCase *all[] = {tf, td, tp, ta, tl, tu};

	for (unsigned i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		tcase_add_checked_fixture(all[i], setup, teardown);
		tcase_set_timeout(all[i], 120);
		suite_add_tcase(s, all[i]);
	}
	tcase_add_test(tf, test_truncated_every_length);
	tcase_add_test(tf, test_inconsistent_lengths);
	tcase_add_test(tf, test_bit_flip_anywhere);
	tcase_add_test(tf, test_bad_pad_count);
	tcase_add_test(td, test_unknown_qp);
	tcase_add_test(td, test_wrong_transport);
	tcase_add_test(td, test_wrong_state);
	tcase_add_test(td, test_wrong_peer);
	tcase_add_test(td, test_bad_pkey);
	tcase_add_test(td, test_cnp_only_from_the_peer);
	tcase_add_test(td, test_sr_ctrl_unknown_type);
	tcase_add_test(td, test_ud_wrong_qkey);
	tcase_add_test(tp, test_opcode_out_of_sequence);
	tcase_add_test(tp, test_bad_lengths);
	tcase_add_test(tp, test_psn_far_outside_window);
	tcase_add_test(tp, test_stray_responses);
	tcase_add_test(tp, test_rnr_then_pipelined_packets);
	tcase_add_test(tp, test_nak_not_overwritten_by_ack);
	tcase_add_test(tp, test_requests_behind_a_pending_error_nak);
	tcase_add_test(ta, test_rkey_checks);
	tcase_add_test(ta, test_qp_access_flags);
	tcase_add_test(ta, test_dereg_mid_write);
	tcase_add_test(ta, test_dereg_before_read_response);
	tcase_add_test(tp, test_paced_read_response_waits);
	tcase_add_test(tp, test_ack_hold_starts_at_the_transmit_stage);
	tcase_add_test(tp, test_held_ack_rides_behind_a_whole_answer);
	tcase_add_test(tp, test_held_ack_goes_ahead_of_a_sends_last_packet);
	tcase_add_test(tp, test_ack_hold_learns_the_answer_time);
	tcase_add_test(tp, test_ack_hold_limit_counts_from_the_first_message);
	tcase_add_test(tp, test_one_way_stream_is_no_ping_pong);
	tcase_add_test(ta, test_send_with_invalidate_refused);
	tcase_add_test(tp, test_too_many_reads_and_atomics);
	tcase_add_test(tl, test_responses_exact_and_clean);
	tcase_add_test(tl, test_requests_clean);
	tcase_add_test(tu, test_uc_gap_resynchronises);
	tcase_add_test(tu, test_uc_lost_middle_drops_message);
	tcase_add_test(tu, test_uc_bad_write_dropped);
	tcase_add_test(tu, test_uc_opcode_out_of_sequence);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	sr = srunner_create(rx_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
