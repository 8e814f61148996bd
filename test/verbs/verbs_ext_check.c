/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * verbs_ext_check: the provider-side extended verbs through the stock
 * libibverbs, on QPs of one device connected to each other (loopback):
 *   cq_ex    ibv_create_cq_ex and every ibv_wc_read_* accessor on RC SEND,
 *            WRITE_WITH_IMM, READ and UD completions; completion timestamps
 *            monotonic, within the test's run on the device clock
 *            (ibv_query_rt_values_ex) and the wall clock; refused wc_flags
 *   rereg    ibv_rereg_mr of the translation, the PD and the access, with
 *            traffic before and after; a WRITE after remote write was taken
 *            away fails with IBV_WC_REM_ACCESS_ERR and lands nowhere
 *   odp      an on-demand region in fresh MAP_NORESERVE pages, written
 *            remotely; ibv_advise_mr and its refusals; implicit ODP, with a
 *            WRITE to an unmapped address refused, not crashing the process
 *   dm       device memory: memcpy to and from it, a zero-based MR on it
 *            written and read remotely, its budget and refusals
 *   pdom     a thread domain and a parent domain whose allocator counts its
 *            calls (a CQ's ring, a QP's work queues); a CQ and a QP on it
 *            carry traffic
 * Exit 0 means pass.
 *   verbs_ext_check [DEVICE [GID_INDEX]]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_util.h"

#define BUF 65536
#define QKEY 0x11111111u
#define ALL_ACCESS                                                                                 \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |               \
	 IBV_ACCESS_REMOTE_ATOMIC)
#define EX_FLAGS                                                                                   \
	(IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |                             \
	 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static union ibv_gid gid;
static int gid_index = 1;

static uint64_t wall_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static uint64_t dev_clock(void)
{
	struct ibv_values_ex v = {.comp_mask = IBV_VALUES_MASK_RAW_CLOCK};
	int err = ibv_query_rt_values_ex(ctx, &v);

	CHECK(!err && v.comp_mask == IBV_VALUES_MASK_RAW_CLOCK, "query_rt_values_ex: %d", err);
	return (uint64_t)v.raw_clock.tv_sec * 1000000000ull + (uint64_t)v.raw_clock.tv_nsec;
}

static struct ibv_qp *make_qp(struct ibv_pd *p, enum ibv_qp_type t, struct ibv_cq *scq,
			      struct ibv_cq *rcq)
{
	struct ibv_qp_init_attr a = {0};
	struct ibv_qp *qp;

	a.qp_type = t;
	a.send_cq = scq;
	a.recv_cq = rcq;
	a.cap.max_send_wr = a.cap.max_recv_wr = 32;
	a.cap.max_send_sge = a.cap.max_recv_sge = 2;
	qp = ibv_create_qp(p, &a);
	if (!qp)
		vtest_die("create_qp");
	return qp;
}

static void rc_connect(struct ibv_qp *qp, uint32_t dqpn)
{
	vtest_connect_rc(qp, dqpn, &gid, gid_index, 0x100,
			 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			     IBV_ACCESS_REMOTE_ATOMIC);
}

static void ud_ready(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		vtest_die("UD INIT");
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		vtest_die("UD RTR");
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		vtest_die("UD RTS");
}

static void post_recv(struct ibv_qp *qp, uint64_t wr_id, void *buf, uint32_t len, uint32_t lkey)
{
	struct ibv_sge s = {(uintptr_t)buf, len, lkey};
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &s, .num_sge = 1}, *bad;

	if (ibv_post_recv(qp, &wr, &bad))
		vtest_die("post_recv");
}

/* One signaled request of one SGE; rkey/raddr for WRITE and READ. */
static void post(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, void *buf, uint32_t len,
		 uint32_t lkey, uint32_t rkey, uint64_t raddr, uint32_t imm)
{
	struct ibv_sge s = {(uintptr_t)buf, len, lkey};
	struct ibv_send_wr wr = {.wr_id = wr_id,
				 .sg_list = &s,
				 .num_sge = 1,
				 .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;

	wr.imm_data = htonl(imm);
	wr.wr.rdma.rkey = rkey;
	wr.wr.rdma.remote_addr = raddr;
	if (ibv_post_send(qp, &wr, &bad))
		vtest_die("post_send");
}

/* ---- cq_ex ---- */

struct rec {
	uint64_t wr_id, ts, wall;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint32_t vendor_err, byte_len, imm, qp_num, src_qp, slid;
	unsigned wc_flags;
	uint8_t sl, dlid_path_bits;
};

static void read_rec(struct ibv_cq_ex *cq, struct rec *r)
{
	r->wr_id = cq->wr_id;
	r->status = cq->status;
	r->opcode = ibv_wc_read_opcode(cq);
	r->vendor_err = ibv_wc_read_vendor_err(cq);
	r->byte_len = ibv_wc_read_byte_len(cq);
	r->wc_flags = ibv_wc_read_wc_flags(cq);
	r->imm = (r->wc_flags & IBV_WC_WITH_INV) ? ibv_wc_read_invalidated_rkey(cq)
						 : ntohl(ibv_wc_read_imm_data(cq));
	r->qp_num = ibv_wc_read_qp_num(cq);
	r->src_qp = ibv_wc_read_src_qp(cq);
	r->slid = ibv_wc_read_slid(cq);
	r->sl = ibv_wc_read_sl(cq);
	r->dlid_path_bits = ibv_wc_read_dlid_path_bits(cq);
	r->ts = ibv_wc_read_completion_ts(cq);
	r->wall = ibv_wc_read_completion_wallclock_ns(cq);
}

/* Up to n completions in one batch (start, next..., end), waiting for the first. */
static int poll_ex(struct ibv_cq_ex *cq, struct rec *r, int n)
{
	struct ibv_poll_cq_attr attr = {0};
	int got = 0, err;

	for (int i = 0; i < 2000000; i++) {
		err = ibv_start_poll(cq, &attr);
		if (err != ENOENT)
			break;
		if (i > 1000)
			usleep(10);
	}
	CHECK(!err, "start_poll: %d", err);
	if (err)
		return 0;
	read_rec(cq, &r[got++]);
	while (got < n && !(err = ibv_next_poll(cq)))
		read_rec(cq, &r[got++]);
	CHECK(got == n || err == ENOENT, "next_poll: %d", err);
	ibv_end_poll(cq);
	return got;
}

/* Exactly n completions, in as many batches as it takes. */
static void poll_n(struct ibv_cq_ex *cq, struct rec *r, int n)
{
	int got = 0;

	while (got < n) {
		int k = poll_ex(cq, r + got, n - got);

		if (!k)
			break;
		got += k;
	}
}

static uint64_t ts_first, ts_last_seen;
static uint64_t run_t0, run_w0;

/* Timestamps in order within a CQ, and inside the run on both clocks. */
static void check_times(const char *what, const struct rec *r, int n, uint64_t *prev)
{
	uint64_t t1 = dev_clock(), w1 = wall_ns();

	for (int i = 0; i < n; i++) {
		CHECK(r[i].ts >= run_t0 && r[i].ts <= t1,
		      "%s #%d: timestamp %llu outside the run [%llu, %llu]", what, i,
		      (unsigned long long)r[i].ts, (unsigned long long)run_t0,
		      (unsigned long long)t1);
		CHECK(r[i].ts >= *prev, "%s #%d: timestamp %llu before the previous %llu", what, i,
		      (unsigned long long)r[i].ts, (unsigned long long)*prev);
		/* the two clocks are read a few microseconds apart: 1 ms of slack */
		CHECK(r[i].wall + 1000000 >= run_w0 && r[i].wall <= w1 + 1000000,
		      "%s #%d: wall clock %llu outside the run [%llu, %llu]", what, i,
		      (unsigned long long)r[i].wall, (unsigned long long)run_w0,
		      (unsigned long long)w1);
		*prev = r[i].ts;
		if (!ts_first)
			ts_first = r[i].ts;
		ts_last_seen = r[i].ts;
	}
}

static struct ibv_cq_ex *make_cq_ex(uint64_t flags)
{
	struct ibv_cq_init_attr_ex a = {.cqe = 64, .wc_flags = flags};

	return ibv_create_cq_ex(ctx, &a);
}

static void test_cq_ex(void)
{
	struct ibv_device_attr_ex dx;
	struct ibv_cq_init_attr_ex bad = {.cqe = 16};
	struct ibv_cq_ex *ca, *cb, *cu1, *cu2;
	struct ibv_qp *qa, *qb, *u1, *u2;
	struct ibv_mr *ma, *mb;
	uint8_t *ba = aligned_alloc(4096, BUF), *bb = aligned_alloc(4096, BUF);
	struct rec r[16];
	uint64_t prev_a = 0, prev_b = 0, prev_u = 0;
	struct ibv_ah *ah;
	struct ibv_ah_attr aha = {0};
	struct ibv_wc wc;

	CHECK(!ibv_query_device_ex(ctx, NULL, &dx), "query_device_ex");
	CHECK(dx.completion_timestamp_mask == UINT64_MAX && dx.hca_core_clock == 1000000,
	      "completion_timestamp_mask %#llx hca_core_clock %llu kHz",
	      (unsigned long long)dx.completion_timestamp_mask,
	      (unsigned long long)dx.hca_core_clock);
	/* refusals: what uroce cannot answer, as mlx5 refuses it */
	bad.wc_flags = IBV_WC_EX_WITH_CVLAN;
	CHECK(!ibv_create_cq_ex(ctx, &bad) && errno == EOPNOTSUPP, "CVLAN: errno %d", errno);
	bad.wc_flags = IBV_WC_EX_WITH_FLOW_TAG;
	CHECK(!ibv_create_cq_ex(ctx, &bad) && errno == EOPNOTSUPP, "FLOW_TAG: errno %d", errno);
	bad.wc_flags = 1ull << 40;
	CHECK(!ibv_create_cq_ex(ctx, &bad) && errno == EOPNOTSUPP, "wc_flags bit 40: errno %d",
	      errno);
	bad.wc_flags = 0;
	bad.comp_mask = 1u << 7;
	CHECK(!ibv_create_cq_ex(ctx, &bad) && errno == EINVAL, "comp_mask bit 7: errno %d", errno);
	bad.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
	bad.parent_domain = pd; /* a plain PD is not a parent domain */
	CHECK(!ibv_create_cq_ex(ctx, &bad) && errno == EINVAL, "a plain PD as parent: errno %d",
	      errno);

	ca = make_cq_ex(EX_FLAGS);
	cb = make_cq_ex(EX_FLAGS);
	cu1 = make_cq_ex(EX_FLAGS);
	cu2 = make_cq_ex(EX_FLAGS);
	if (!ca || !cb || !cu1 || !cu2 || !ba || !bb)
		vtest_die("create_cq_ex");
	memset(ba, 0, BUF);
	memset(bb, 0, BUF);
	ma = ibv_reg_mr(pd, ba, BUF, ALL_ACCESS);
	mb = ibv_reg_mr(pd, bb, BUF, ALL_ACCESS);
	if (!ma || !mb)
		vtest_die("reg_mr");
	qa = make_qp(pd, IBV_QPT_RC, ibv_cq_ex_to_cq(ca), ibv_cq_ex_to_cq(ca));
	qb = make_qp(pd, IBV_QPT_RC, ibv_cq_ex_to_cq(cb), ibv_cq_ex_to_cq(cb));
	rc_connect(qa, qb->qp_num);
	rc_connect(qb, qa->qp_num);
	/* nothing there yet: ENOENT, and the CQ stays usable */
	CHECK(ibv_start_poll(ca, &(struct ibv_poll_cq_attr){0}) == ENOENT, "empty start_poll");

	/* SEND, WRITE_WITH_IMM, READ */
	for (int i = 0; i < 4096; i++)
		ba[i] = (uint8_t)(i * 13 + 1);
	post_recv(qb, 100, bb + 32768, 4096, mb->lkey);
	post_recv(qb, 101, bb + 40960, 4096, mb->lkey);
	post(qa, IBV_WR_SEND, 1, ba, 1000, ma->lkey, 0, 0, 0);
	post(qa, IBV_WR_RDMA_WRITE_WITH_IMM, 2, ba, 3000, ma->lkey, mb->rkey, (uintptr_t)bb,
	     0xfeed);
	post(qa, IBV_WR_RDMA_READ, 3, ba + 8192, 2000, ma->lkey, mb->rkey, (uintptr_t)bb, 0);
	poll_n(ca, r, 3);
	for (int i = 0; i < 3; i++)
		CHECK(r[i].status == IBV_WC_SUCCESS && r[i].wr_id == (uint64_t)i + 1 &&
			  r[i].qp_num == qa->qp_num && r[i].vendor_err == 0,
		      "send completion %d: status %d wr_id %llu qp %#x", i, r[i].status,
		      (unsigned long long)r[i].wr_id, r[i].qp_num);
	CHECK(r[0].opcode == IBV_WC_SEND && r[1].opcode == IBV_WC_RDMA_WRITE &&
		  r[2].opcode == IBV_WC_RDMA_READ && r[2].byte_len == 2000,
	      "send opcodes %d %d %d, READ byte_len %u", r[0].opcode, r[1].opcode, r[2].opcode,
	      r[2].byte_len);
	check_times("RC requester", r, 3, &prev_a);
	CHECK(!memcmp(ba + 8192, ba, 2000), "READ data");
	poll_n(cb, r, 2);
	CHECK(r[0].status == IBV_WC_SUCCESS && r[0].wr_id == 100 && r[0].opcode == IBV_WC_RECV &&
		  r[0].byte_len == 1000 && !(r[0].wc_flags & IBV_WC_WITH_IMM) &&
		  r[0].qp_num == qb->qp_num && r[0].slid == 0 && r[0].dlid_path_bits == 0,
	      "RC SEND receive: status %d opcode %d byte_len %u flags %#x", r[0].status,
	      r[0].opcode, r[0].byte_len, r[0].wc_flags);
	CHECK(r[1].status == IBV_WC_SUCCESS && r[1].wr_id == 101 &&
		  r[1].opcode == IBV_WC_RECV_RDMA_WITH_IMM && r[1].byte_len == 3000 &&
		  (r[1].wc_flags & IBV_WC_WITH_IMM) && r[1].imm == 0xfeed,
	      "WRITE_WITH_IMM receive: opcode %d byte_len %u flags %#x imm %#x", r[1].opcode,
	      r[1].byte_len, r[1].wc_flags, r[1].imm);
	check_times("RC responder", r, 2, &prev_b);
	CHECK(!memcmp(bb + 32768, ba, 1000) && !memcmp(bb, ba, 3000), "SEND/WRITE data");

	/* a batch of eight in one start/next/end, then ibv_poll_cq on the same CQ */
	for (int i = 0; i < 9; i++)
		post(qa, IBV_WR_RDMA_WRITE, 10 + (uint64_t)i, ba, 64, ma->lkey, mb->rkey,
		     (uintptr_t)bb + 64 * (uint64_t)i, 0);
	usleep(20000);
	{
		int got = 0;

		while (got < 8) {
			int k = poll_ex(ca, r + got, 8 - got);

			if (!k)
				break;
			got += k;
		}
		CHECK(got == 8, "8 WRITE completions, got %d", got);
		for (int i = 0; i < got; i++)
			CHECK(r[i].wr_id == 10 + (uint64_t)i && r[i].opcode == IBV_WC_RDMA_WRITE,
			      "batch #%d: wr_id %llu", i, (unsigned long long)r[i].wr_id);
		check_times("batch", r, got, &prev_a);
	}
	wc = vtest_wait_wc(ibv_cq_ex_to_cq(ca));
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 18,
	      "ibv_poll_cq after a batch: wr_id %llu", (unsigned long long)wc.wr_id);

	/* UD: source QP, GRH flag, the packet type in sl */
	u1 = make_qp(pd, IBV_QPT_UD, ibv_cq_ex_to_cq(cu1), ibv_cq_ex_to_cq(cu1));
	u2 = make_qp(pd, IBV_QPT_UD, ibv_cq_ex_to_cq(cu2), ibv_cq_ex_to_cq(cu2));
	ud_ready(u1);
	ud_ready(u2);
	aha.is_global = 1;
	aha.grh.dgid = gid;
	aha.grh.sgid_index = (uint8_t)gid_index;
	aha.grh.hop_limit = 64;
	aha.port_num = 1;
	ah = ibv_create_ah(pd, &aha);
	if (!ah)
		vtest_die("create_ah");
	post_recv(u2, 200, bb + 49152, 1024, mb->lkey);
	{
		struct ibv_sge s = {(uintptr_t)ba, 500, ma->lkey};
		struct ibv_send_wr wr = {.wr_id = 300,
					 .sg_list = &s,
					 .num_sge = 1,
					 .opcode = IBV_WR_SEND_WITH_IMM,
					 .send_flags = IBV_SEND_SIGNALED},
				   *badw;

		wr.imm_data = htonl(0x1234);
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = u2->qp_num;
		wr.wr.ud.remote_qkey = QKEY;
		if (ibv_post_send(u1, &wr, &badw))
			vtest_die("UD post_send");
	}
	poll_n(cu1, r, 1);
	CHECK(r[0].status == IBV_WC_SUCCESS && r[0].opcode == IBV_WC_SEND && r[0].wr_id == 300,
	      "UD send completion");
	check_times("UD requester", r, 1, &prev_u);
	prev_u = 0;
	poll_n(cu2, r, 1);
	CHECK(r[0].status == IBV_WC_SUCCESS && r[0].opcode == IBV_WC_RECV && r[0].byte_len == 540 &&
		  r[0].src_qp == u1->qp_num && r[0].qp_num == u2->qp_num &&
		  (r[0].wc_flags & IBV_WC_GRH) && (r[0].wc_flags & IBV_WC_WITH_IMM) &&
		  r[0].imm == 0x1234 && r[0].slid == 0,
	      "UD receive: status %d byte_len %u src_qp %#x (want %#x) flags %#x imm %#x sl %u",
	      r[0].status, r[0].byte_len, r[0].src_qp, u1->qp_num, r[0].wc_flags, r[0].imm,
	      r[0].sl);
	check_times("UD responder", r, 1, &prev_u);
	CHECK(!memcmp(bb + 49152 + 40, ba, 500), "UD data after the GRH");

	/* accessors only for what was asked: a CQ of BYTE_LEN alone works with ibv_poll_cq */
	{
		struct ibv_cq_ex *small = make_cq_ex(IBV_WC_EX_WITH_BYTE_LEN);

		CHECK(small && !small->read_completion_ts && small->read_byte_len,
		      "a CQ without timestamps has no timestamp accessor");
		if (small)
			ibv_destroy_cq(ibv_cq_ex_to_cq(small));
	}
	ibv_destroy_ah(ah);
	ibv_destroy_qp(qa);
	ibv_destroy_qp(qb);
	ibv_destroy_qp(u1);
	ibv_destroy_qp(u2);
	ibv_destroy_cq(ibv_cq_ex_to_cq(ca));
	ibv_destroy_cq(ibv_cq_ex_to_cq(cb));
	ibv_destroy_cq(ibv_cq_ex_to_cq(cu1));
	ibv_destroy_cq(ibv_cq_ex_to_cq(cu2));
	ibv_dereg_mr(ma);
	ibv_dereg_mr(mb);
	free(ba);
	free(bb);
}

/* ---- rereg ---- */

struct pair {
	struct ibv_cq *cq;
	struct ibv_qp *req, *resp;
	struct ibv_mr *mr; /* the requester's */
	uint8_t *buf;
};

static void make_pair(struct pair *p, struct ibv_pd *req_pd, struct ibv_pd *resp_pd)
{
	p->cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	p->buf = aligned_alloc(4096, BUF);
	if (!p->cq || !p->buf)
		vtest_die("pair");
	memset(p->buf, 0, BUF);
	p->mr = ibv_reg_mr(req_pd, p->buf, BUF, ALL_ACCESS);
	if (!p->mr)
		vtest_die("pair reg_mr");
	p->req = make_qp(req_pd, IBV_QPT_RC, p->cq, p->cq);
	p->resp = make_qp(resp_pd, IBV_QPT_RC, p->cq, p->cq);
	rc_connect(p->req, p->resp->qp_num);
	rc_connect(p->resp, p->req->qp_num);
}

static void drop_pair(struct pair *p)
{
	ibv_destroy_qp(p->req);
	ibv_destroy_qp(p->resp);
	ibv_destroy_cq(p->cq);
	ibv_dereg_mr(p->mr);
	free(p->buf);
}

/* A WRITE of len bytes from the pair's buffer; its completion status. */
static enum ibv_wc_status write_to(struct pair *p, uint32_t rkey, uint64_t raddr, uint32_t len,
				   uint8_t seed)
{
	struct ibv_wc wc;

	for (uint32_t i = 0; i < len; i++)
		p->buf[i] = (uint8_t)(seed + i * 7);
	post(p->req, IBV_WR_RDMA_WRITE, seed, p->buf, len, p->mr->lkey, rkey, raddr, 0);
	wc = vtest_wait_wc(p->cq);
	return wc.status;
}

static enum ibv_wc_status read_from(struct pair *p, uint32_t rkey, uint64_t raddr, uint32_t len)
{
	struct ibv_wc wc;

	post(p->req, IBV_WR_RDMA_READ, 1, p->buf + 32768, len, p->mr->lkey, rkey, raddr, 0);
	wc = vtest_wait_wc(p->cq);
	return wc.status;
}

static bool landed(const uint8_t *dst, uint32_t len, uint8_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		if (dst[i] != (uint8_t)(seed + i * 7))
			return false;
	return true;
}

static void test_rereg(void)
{
	struct ibv_pd *pd2 = ibv_alloc_pd(ctx);
	uint8_t *b1 = aligned_alloc(4096, BUF), *b2 = aligned_alloc(4096, BUF);
	struct pair p1, p2;
	struct ibv_mr *m;
	uint32_t lkey, rkey;
	enum ibv_wc_status st;
	int r;

	if (!pd2 || !b1 || !b2)
		vtest_die("rereg setup");
	memset(b1, 0, BUF);
	memset(b2, 0, BUF);
	make_pair(&p1, pd, pd);	 /* responder in pd */
	make_pair(&p2, pd, pd2); /* responder in pd2 */
	m = ibv_reg_mr(pd, b1, BUF, ALL_ACCESS);
	if (!m)
		vtest_die("reg_mr");
	lkey = m->lkey;
	rkey = m->rkey;
	st = write_to(&p1, rkey, (uintptr_t)b1 + 100, 5000, 3);
	CHECK(st == IBV_WC_SUCCESS && landed(b1 + 100, 5000, 3), "WRITE before rereg: %d", st);

	/* refusals: the library's (unknown flags) and the provider's (none, bad access) */
	errno = 0;
	r = ibv_rereg_mr(m, 1 << 6, NULL, NULL, 0, 0);
	CHECK(r == IBV_REREG_MR_ERR_INPUT && errno == EINVAL, "unknown flag: %d errno %d", r,
	      errno);
	errno = 0;
	r = ibv_rereg_mr(m, 0, NULL, NULL, 0, 0);
	CHECK(r == IBV_REREG_MR_ERR_CMD && errno == EINVAL, "no flag: %d errno %d", r, errno);
	errno = 0;
	r = ibv_rereg_mr(m, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, IBV_ACCESS_REMOTE_WRITE);
	CHECK(r == IBV_REREG_MR_ERR_CMD && errno == EINVAL,
	      "remote write without local write: %d errno %d", r, errno);

	/* a new translation: same keys, the data lands in the new buffer only */
	r = ibv_rereg_mr(m, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, b2, BUF, 0);
	CHECK(!r && m->lkey == lkey && m->rkey == rkey && m->addr == b2,
	      "rereg translation: %d, keys %#x/%#x", r, m->lkey, m->rkey);
	st = write_to(&p1, rkey, (uintptr_t)b2 + 200, 6000, 5);
	CHECK(st == IBV_WC_SUCCESS && landed(b2 + 200, 6000, 5) && landed(b1 + 100, 5000, 3),
	      "WRITE after new translation: %d", st);
	/* the local key follows too: a SEND from it carries b2's bytes */
	post_recv(p1.resp, 9, p1.buf + 40960, 4096, p1.mr->lkey);
	post(p1.req, IBV_WR_SEND, 9, b2 + 200, 1000, lkey, 0, 0, 0);
	CHECK(vtest_wait_wc(p1.cq).status == IBV_WC_SUCCESS &&
		  vtest_wait_wc(p1.cq).status == IBV_WC_SUCCESS && landed(p1.buf + 40960, 1000, 5),
	      "SEND from the new translation");

	/* a new PD: the QP in pd2 may use it now */
	r = ibv_rereg_mr(m, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0);
	CHECK(!r && m->pd == pd2, "rereg PD: %d", r);
	CHECK(ibv_dealloc_pd(pd2) == EBUSY, "pd2 holds the MR and a QP");
	st = write_to(&p2, rkey, (uintptr_t)b2 + 300, 2000, 7);
	CHECK(st == IBV_WC_SUCCESS && landed(b2 + 300, 2000, 7), "WRITE in the new PD: %d", st);

	/* remote write taken away: READ still served, WRITE refused and lands nowhere */
	r = ibv_rereg_mr(m, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	CHECK(!r, "rereg access: %d", r);
	st = read_from(&p2, rkey, (uintptr_t)b2 + 300, 2000);
	CHECK(st == IBV_WC_SUCCESS && landed(p2.buf + 32768, 2000, 7),
	      "READ after access change: %d", st);
	memset(b2 + 8192, 0xee, 4096);
	st = write_to(&p2, rkey, (uintptr_t)b2 + 8192, 4096, 9);
	CHECK(st == IBV_WC_REM_ACCESS_ERR, "WRITE without remote write: status %d, want %d", st,
	      IBV_WC_REM_ACCESS_ERR);
	{
		bool untouched = true;

		for (int i = 0; i < 4096; i++)
			untouched &= b2[8192 + i] == 0xee;
		CHECK(untouched, "a refused WRITE changed memory");
	}
	drop_pair(&p1);
	drop_pair(&p2);
	CHECK(!ibv_dereg_mr(m), "dereg_mr");
	CHECK(!ibv_dealloc_pd(pd2), "dealloc pd2");
	free(b1);
	free(b2);
}

/* ---- on-demand paging ---- */

static int resident_pages(void *p, size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), n = (len + pg - 1) / pg;
	unsigned char *v = calloc(n, 1);
	int count = 0;

	if (!v || mincore(p, len, v))
		return -1;
	for (size_t i = 0; i < n; i++)
		count += v[i] & 1;
	free(v);
	return count;
}

static void test_odp(void)
{
	const size_t len = 64u << 20;
	struct ibv_device_attr_ex dx;
	struct pair p;
	struct ibv_mr *m, *plain;
	uint8_t *fresh;
	enum ibv_wc_status st;
	int r, before, after;
	uint32_t want = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
			IBV_ODP_SUPPORT_READ;

	CHECK(!ibv_query_device_ex(ctx, NULL, &dx), "query_device_ex");
	CHECK((dx.odp_caps.general_caps & IBV_ODP_SUPPORT) &&
		  (dx.odp_caps.per_transport_caps.rc_odp_caps & want) == want,
	      "odp caps %#llx rc %#x", (unsigned long long)dx.odp_caps.general_caps,
	      dx.odp_caps.per_transport_caps.rc_odp_caps);
	make_pair(&p, pd, pd);
	fresh = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		     -1, 0);
	if (fresh == MAP_FAILED)
		vtest_die("mmap");
	m = ibv_reg_mr(pd, fresh, len, IBV_ACCESS_ON_DEMAND | ALL_ACCESS);
	CHECK(m != NULL, "reg_mr ON_DEMAND: %s", strerror(errno));
	if (!m)
		return;
	before = resident_pages(fresh + (32u << 20), 1u << 20);
	/* 1 MiB into pages nobody touched, 16 KiB at a time */
	for (uint32_t off = 0; off < (1u << 20); off += 16384) {
		st = write_to(&p, m->rkey, (uintptr_t)fresh + (32u << 20) + off, 16384,
			      (uint8_t)(off >> 14));
		if (st != IBV_WC_SUCCESS ||
		    !landed(fresh + (32u << 20) + off, 16384, (uint8_t)(off >> 14))) {
			CHECK(0, "WRITE into fresh ODP pages at +%u: %d", off, st);
			break;
		}
	}
	after = resident_pages(fresh + (32u << 20), 1u << 20);
	CHECK(before == 0 && after == 256, "resident pages before %d after %d (of 256)", before,
	      after);

	/* advise_mr: prefetch makes pages resident; its refusals */
	plain = p.mr;
	r = ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, IBV_ADVISE_MR_FLAG_FLUSH,
			  &(struct ibv_sge){(uintptr_t)fresh + (40u << 20), 1u << 20, m->lkey}, 1);
	CHECK(!r && resident_pages(fresh + (40u << 20), 1u << 20) == 256,
	      "advise PREFETCH_WRITE: %d, %d pages resident", r,
	      resident_pages(fresh + (40u << 20), 1u << 20));
	r = ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0,
			  &(struct ibv_sge){(uintptr_t)fresh + (48u << 20), 8192, m->lkey}, 1);
	CHECK(!r, "advise PREFETCH: %d", r);
	r = ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 1u << 5,
			  &(struct ibv_sge){(uintptr_t)fresh, 4096, m->lkey}, 1);
	CHECK(r == EINVAL, "advise with unknown flags: %d", r);
	r = ibv_advise_mr(pd, (enum ibv_advise_mr_advice)77, 0,
			  &(struct ibv_sge){(uintptr_t)fresh, 4096, m->lkey}, 1);
	CHECK(r == EOPNOTSUPP, "advise 77: %d", r);
	r = ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0,
			  &(struct ibv_sge){(uintptr_t)p.buf, 4096, plain->lkey}, 1);
	CHECK(r == ENOENT, "advise on a region that is not on-demand: %d", r);
	r = ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0,
			  &(struct ibv_sge){(uintptr_t)fresh + len - 4096, 8192, m->lkey}, 1);
	CHECK(r == EFAULT, "advise past the region's end: %d", r);

	/* implicit ODP: the whole address space, its holes refused */
	if (dx.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT) {
		struct ibv_mr *im =
		    ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_ON_DEMAND | ALL_ACCESS);
		uint8_t *hole;

		CHECK(im != NULL, "implicit reg_mr: %s", strerror(errno));
		if (im) {
			st = write_to(&p, im->rkey, (uintptr_t)fresh + (56u << 20), 8192, 11);
			CHECK(st == IBV_WC_SUCCESS && landed(fresh + (56u << 20), 8192, 11),
			      "WRITE through the implicit region: %d", st);
			r = ibv_advise_mr(
			    pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, 0,
			    &(struct ibv_sge){(uintptr_t)fresh + (60u << 20), 65536, im->lkey}, 1);
			CHECK(!r, "advise on the implicit region: %d", r);
			hole = mmap(NULL, 65536, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (hole != MAP_FAILED) {
				munmap(hole, 65536);
				r = ibv_advise_mr(
				    pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0,
				    &(struct ibv_sge){(uintptr_t)hole, 4096, im->lkey}, 1);
				CHECK(r == EFAULT, "advise on an unmapped range: %d", r);
				st = write_to(&p, im->rkey, (uintptr_t)hole, 4096, 13);
				CHECK(st == IBV_WC_REM_ACCESS_ERR,
				      "WRITE to an unmapped address: %d, want %d", st,
				      IBV_WC_REM_ACCESS_ERR);
			}
			CHECK(!ibv_dereg_mr(im), "dereg implicit");
		}
	} else {
		printf("odp: implicit ODP not offered by the device (kernel before 5.14?)\n");
	}
	CHECK(!ibv_dereg_mr(m), "dereg ODP");
	drop_pair(&p);
	munmap(fresh, len);
}

/* ---- device memory ---- */

static void test_dm(void)
{
	struct ibv_device_attr_ex dx;
	struct ibv_alloc_dm_attr da = {.length = 8192};
	struct ibv_dm *dm, *big;
	struct ibv_mr *m;
	struct pair p;
	uint8_t out[4096], in[64];
	enum ibv_wc_status st;

	CHECK(!ibv_query_device_ex(ctx, NULL, &dx) && dx.max_dm_size >= 8192, "max_dm_size %llu",
	      (unsigned long long)dx.max_dm_size);
	da.length = dx.max_dm_size + 1;
	CHECK(!ibv_alloc_dm(ctx, &da) && errno == ENOMEM, "more than max_dm_size: errno %d", errno);
	da.length = 8192;
	dm = ibv_alloc_dm(ctx, &da);
	if (!dm)
		vtest_die("alloc_dm");
	da.length = dx.max_dm_size;
	big = ibv_alloc_dm(ctx, &da);
	CHECK(!big && errno == ENOMEM, "the device's memory is shared: errno %d", errno);
	memset(in, 0x5a, sizeof(in));
	CHECK(!ibv_memcpy_to_dm(dm, 64, in, sizeof(in)), "memcpy_to_dm");
	CHECK(ibv_memcpy_to_dm(dm, 8192 - 32, in, sizeof(in)) == EFAULT, "memcpy past the end");
	CHECK(!ibv_reg_dm_mr(pd, dm, 0, 8192, IBV_ACCESS_LOCAL_WRITE) && errno == EINVAL,
	      "a DM MR that is not zero-based: errno %d", errno);
	m = ibv_reg_dm_mr(pd, dm, 0, 8192,
			  IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			      IBV_ACCESS_REMOTE_READ);
	if (!m)
		vtest_die("reg_dm_mr");
	CHECK(ibv_rereg_mr(m, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, IBV_ACCESS_LOCAL_WRITE) ==
		  IBV_REREG_MR_ERR_CMD,
	      "rereg of a DM region");
	make_pair(&p, pd, pd);
	/* zero-based: the remote address is the offset into the region */
	st = write_to(&p, m->rkey, 1024, 3000, 21);
	CHECK(st == IBV_WC_SUCCESS && !ibv_memcpy_from_dm(out, dm, 1024, 3000) &&
		  landed(out, 3000, 21),
	      "WRITE into device memory: %d", st);
	st = read_from(&p, m->rkey, 64, 64);
	CHECK(st == IBV_WC_SUCCESS && !memcmp(p.buf + 32768, in, 64), "READ from device memory: %d",
	      st);
	CHECK(ibv_free_dm(dm) == EBUSY, "free_dm with an MR on it");
	drop_pair(&p);
	CHECK(!ibv_dereg_mr(m), "dereg DM MR");
	CHECK(!ibv_free_dm(dm), "free_dm");
}

/* ---- parent domain ---- */

struct counting {
	int allocs, frees, wrong_ctx;
	uint64_t types;
};

static void *count_alloc(struct ibv_pd *p, void *pd_context, size_t size, size_t alignment,
			 uint64_t type)
{
	struct counting *c = pd_context;
	void *mem = NULL;

	(void)p;
	c->allocs++;
	c->types |= 1ull << (type & 63);
	if (posix_memalign(&mem, alignment < sizeof(void *) ? sizeof(void *) : alignment, size))
		return NULL;
	return mem;
}

static void count_free(struct ibv_pd *p, void *pd_context, void *ptr, uint64_t type)
{
	struct counting *c = pd_context;

	(void)p;
	(void)type;
	c->frees++;
	free(ptr);
}

static void test_parent_domain(void)
{
	struct counting cnt = {0};
	struct ibv_td *td;
	struct ibv_pd *pdom;
	struct ibv_parent_domain_init_attr pa = {0};
	struct ibv_cq_init_attr_ex ca = {.cqe = 32, .wc_flags = EX_FLAGS};
	struct ibv_cq_ex *cq;
	struct ibv_qp *qa, *qb;
	struct ibv_mr *m;
	uint8_t *buf = aligned_alloc(4096, BUF);
	struct rec r[2];

	CHECK(!ibv_alloc_td(ctx, &(struct ibv_td_init_attr){.comp_mask = 1}) && errno == EINVAL,
	      "alloc_td with comp_mask 1");
	td = ibv_alloc_td(ctx, &(struct ibv_td_init_attr){0});
	if (!td || !buf)
		vtest_die("alloc_td");
	pa.pd = pd;
	pa.td = td;
	pa.comp_mask =
	    IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	pa.alloc = count_alloc;
	pa.free = count_free;
	pa.pd_context = &cnt;
	pdom = ibv_alloc_parent_domain(ctx, &pa);
	if (!pdom)
		vtest_die("alloc_parent_domain");
	CHECK(pdom->context == ctx, "the parent domain's context");
	CHECK(ibv_dealloc_td(td) == EBUSY, "a TD under a parent domain is busy");
	CHECK(ibv_dealloc_pd(pd) == EBUSY, "a PD under a parent domain is busy");
	pa.pd = pdom;
	CHECK(!ibv_alloc_parent_domain(ctx, &pa) && errno == EINVAL, "a parent of a parent");
	pa.pd = pd;

	ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
	ca.parent_domain = pdom;
	cq = ibv_create_cq_ex(ctx, &ca);
	if (!cq)
		vtest_die("create_cq_ex on the parent domain");
	CHECK(cnt.allocs == 1 && (cnt.types & (1ull << 5)),
	      "the CQ's ring from the allocator: %d calls, types %#llx", cnt.allocs,
	      (unsigned long long)cnt.types);
	memset(buf, 0, BUF);
	m = ibv_reg_mr(pdom, buf, BUF, ALL_ACCESS);
	if (!m)
		vtest_die("reg_mr on the parent domain");
	qa = make_qp(pdom, IBV_QPT_RC, ibv_cq_ex_to_cq(cq), ibv_cq_ex_to_cq(cq));
	CHECK(cnt.allocs == 3 && (cnt.types & (1ull << 1)),
	      "the QP's send and receive queues from the allocator: %d calls, types %#llx",
	      cnt.allocs, (unsigned long long)cnt.types);
	qb = make_qp(pd, IBV_QPT_RC, ibv_cq_ex_to_cq(cq), ibv_cq_ex_to_cq(cq));
	CHECK(cnt.allocs == 3, "a QP on the plain PD used the allocator");
	rc_connect(qa, qb->qp_num);
	rc_connect(qb, qa->qp_num);
	for (int i = 0; i < 512; i++)
		buf[i] = (uint8_t)i;
	/* qb (plain PD) writes into the parent domain's MR: one protection domain */
	post_recv(qa, 1, buf + 8192, 1024, m->lkey);
	post(qb, IBV_WR_SEND, 2, buf, 512, m->lkey, 0, 0, 0);
	poll_n(cq, r, 2);
	CHECK(r[0].status == IBV_WC_SUCCESS && r[1].status == IBV_WC_SUCCESS &&
		  !memcmp(buf + 8192, buf, 512),
	      "SEND between a QP on the parent domain and one on its PD: %d %d", r[0].status,
	      r[1].status);
	/* resize moves the ring to a new one from the allocator */
	CHECK(!ibv_resize_cq(ibv_cq_ex_to_cq(cq), 200) && cnt.allocs == 4 && cnt.frees == 1,
	      "resize: allocs %d frees %d", cnt.allocs, cnt.frees);
	CHECK(ibv_dealloc_pd(pdom) == EBUSY, "a parent domain with objects is busy");
	ibv_destroy_qp(qa);
	ibv_destroy_qp(qb);
	ibv_dereg_mr(m);
	ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
	CHECK(cnt.allocs == cnt.frees && cnt.allocs == 4, "allocs %d frees %d", cnt.allocs,
	      cnt.frees);
	CHECK(!ibv_dealloc_pd(pdom), "dealloc parent domain");
	CHECK(!ibv_dealloc_td(td), "dealloc td");
	free(buf);
}

int main(int argc, char **argv)
{
	const char *want = argc > 1 ? argv[1] : NULL;

	vtest_name = "verbs_ext_check";
	if (argc > 2)
		gid_index = atoi(argv[2]);
	ctx = vtest_open_device(want);
	if (!(pd = ibv_alloc_pd(ctx)) || ibv_query_gid(ctx, 1, gid_index, &gid))
		vtest_die("open device");
	run_t0 = dev_clock();
	run_w0 = wall_ns();
	test_cq_ex();
	test_rereg();
	test_odp();
	test_dm();
	test_parent_domain();
	if (vtest_failures) {
		fprintf(stderr, "verbs_ext_check: %d failures\n", vtest_failures);
		return 1;
	}
	printf("verbs_ext: PASS: cq_ex accessors on RC SEND/WRITE_IMM/READ and UD, timestamps "
	       "in order over %.1f ms; rereg of translation, PD and access; ODP into fresh "
	       "pages, advise_mr, implicit ODP; device memory; parent domain allocator\n",
	       (double)(ts_last_seen - ts_first) / 1e6);
	return 0;
}
