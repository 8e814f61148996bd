/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * contexts: many contexts of one device in one process reach each other,
 * as the contexts of a NIC do. Stock libibverbs only; it knows nothing of
 * uroce and would pass on any RoCE device.
 *
 *   contexts [-d DEV] [-g GID_INDEX] [-n CONTEXTS] [-b BULK_WRITES]
 *   contexts [-d DEV] [-g GID_INDEX] -u LOOPS
 *
 * Opens CONTEXTS contexts (default 64) of DEV (default uroce0) and pairs
 * them: context 2k with 2k+1, an RC QP in each, connected through the
 * device's own GID. On every pair: SEND, RDMA WRITE with immediate, RDMA
 * READ, FETCH_AND_ADD and COMPARE_AND_SWAP, every byte and returned value
 * checked. On pair 0 also BULK_WRITES (default 2000) 16 KiB writes with up
 * to 64 outstanding and the pair's send completions in event mode (a
 * completion channel, ibv_req_notify_cq, ibv_get_cq_event), the
 * destination checked after. Every context also has a UD QP and sends
 * one datagram to the next context's, checked with its GRH and source QP,
 * and a UC QP whose receives come from a shared receive queue: SEND with
 * immediate, WRITE and WRITE with immediate on every pair, every byte checked.
 * Then context 1 closes with its objects still there, as a program that
 * exits without cleaning up: the other pairs keep working. Exit 0 pass,
 * 1 fail (the reason printed), 77 the device is missing.
 *
 * With -u, instead: one context stays open (the device stays open with
 * it), and LOOPS times another opens, makes a PD, a parent domain, a CQ,
 * an MR, an RC and a UD QP and an AH, and closes with all of them still
 * there. Run it with the device's limits (UROCE_LIMITS) below LOOPS: each
 * close must give back what the context held, or the loop hits a limit.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>

#define BUF_SIZE (1u << 20) /* per context: send, receive, write and read areas */
#define MSG 4096u
#define BULK_SIZE 16384u
#define BULK_DEPTH 64
#define UD_QKEY 0x11111111u
#define WAIT_NS 10000000000ull

struct side {
	struct ibv_context *ctx;
	union ibv_gid gid;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch; /* pair 0's first context only */
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct ibv_qp *rc, *ud, *uc;
	struct ibv_srq *srq; /* the UC QP's receives */
	struct ibv_ah *ah; /* to the next context's UD QP */
};

static const char *dev_name = "uroce0";
static int gid_idx = 1;
static int nctx = 64;
static int bulk = 2000;

static int fail(const char *what, int ctx_i)
{
	fprintf(stderr, "contexts: FAIL: %s (context %d)%s%s\n", what, ctx_i, errno ? ": " : "",
		errno ? strerror(errno) : "");
	return -1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint8_t pattern(int ctx_i, uint32_t off)
{
	return (uint8_t)(ctx_i * 31 + off * 7 + (off >> 8));
}

/* One completion from s's CQ, polled, within WAIT_NS. */
static int poll_one(struct side *s, int i, struct ibv_wc *wc)
{
	uint64_t end = now_ns() + WAIT_NS;
	int n;

	while (!(n = ibv_poll_cq(s->cq, 1, wc)))
		if (now_ns() > end)
			return errno = ETIMEDOUT, fail("no completion", i);
	if (n < 0)
		return fail("ibv_poll_cq", i);
	if (wc->status != IBV_WC_SUCCESS) {
		fprintf(stderr, "contexts: FAIL: context %d: wr_id %" PRIu64 " completed %s\n", i,
			wc->wr_id, ibv_wc_status_str(wc->status));
		return -1;
	}
	return 0;
}

static int open_side(struct side *s, struct ibv_device *dev, int i)
{
	struct ibv_port_attr pa;

	memset(s, 0, sizeof(*s));
	s->ctx = ibv_open_device(dev);
	if (!s->ctx)
		return fail("ibv_open_device", i);
	if (ibv_query_port(s->ctx, 1, &pa) || ibv_query_gid(s->ctx, 1, gid_idx, &s->gid))
		return fail("query port/gid", i);
	s->pd = ibv_alloc_pd(s->ctx);
	if (i == 0 && !(s->ch = ibv_create_comp_channel(s->ctx)))
		return fail("ibv_create_comp_channel", i);
	s->cq = ibv_create_cq(s->ctx, 512, NULL, s->ch, 0);
	s->buf = aligned_alloc(4096, BUF_SIZE);
	if (!s->pd || !s->cq || !s->buf)
		return fail("pd/cq/buffer", i);
	memset(s->buf, 0, BUF_SIZE);
	s->mr = ibv_reg_mr(s->pd, s->buf, BUF_SIZE,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	if (!s->mr)
		return fail("ibv_reg_mr", i);
	struct ibv_qp_init_attr rc = {.send_cq = s->cq, .recv_cq = s->cq, .qp_type = IBV_QPT_RC,
				      .cap = {.max_send_wr = 128, .max_recv_wr = 16,
					      .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp_init_attr ud = rc;

	struct ibv_qp_init_attr uc = rc;
	struct ibv_srq_init_attr srq = {.attr = {.max_wr = 16, .max_sge = 1}};

	ud.qp_type = IBV_QPT_UD;
	uc.qp_type = IBV_QPT_UC;
	s->rc = ibv_create_qp(s->pd, &rc);
	s->ud = ibv_create_qp(s->pd, &ud);
	s->srq = ibv_create_srq(s->pd, &srq);
	uc.srq = s->srq;
	s->uc = s->srq ? ibv_create_qp(s->pd, &uc) : NULL;
	if (!s->rc || !s->ud || !s->uc)
		return fail("ibv_create_qp or ibv_create_srq", i);
	return 0;
}

static struct ibv_ah_attr ah_to(const struct side *peer)
{
	struct ibv_ah_attr ah = {.is_global = 1, .port_num = 1};

	ah.grh.dgid = peer->gid;
	ah.grh.sgid_index = (uint8_t)gid_idx;
	ah.grh.hop_limit = 64;
	return ah;
}

/* s's RC or UC QP (rc) to the same QP of peer: INIT, RTR, RTS, with RC's extras. */
static int connect_qp(struct ibv_qp *qp, const struct ibv_qp *to, const struct side *peer, bool rc,
		      int i)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1,
				.qp_access_flags = rc ? IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
								IBV_ACCESS_REMOTE_ATOMIC
						      : IBV_ACCESS_REMOTE_WRITE};
	int rtr = 0, rts = 0;

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				      IBV_QP_ACCESS_FLAGS))
		return fail(rc ? "RC to INIT" : "UC to INIT", i);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = to->qp_num;
	a.rq_psn = rc ? 100 : 200;
	a.ah_attr = ah_to(peer);
	if (rc) {
		a.max_dest_rd_atomic = 16;
		a.min_rnr_timer = 1;
		rtr = IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	}
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				      IBV_QP_RQ_PSN | rtr))
		return fail(rc ? "RC to RTR" : "UC to RTR", i);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = rc ? 100 : 200;
	if (rc) {
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 16;
		rts = IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	}
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | rts))
		return fail(rc ? "RC to RTS" : "UC to RTS", i);
	return 0;
}

static int ready_ud(struct side *s, const struct side *next, int i)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = UD_QKEY};
	struct ibv_ah_attr ah = ah_to(next);

	if (ibv_modify_qp(s->ud, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		return fail("UD to INIT", i);
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(s->ud, &a, IBV_QP_STATE))
		return fail("UD to RTR", i);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (ibv_modify_qp(s->ud, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		return fail("UD to RTS", i);
	s->ah = ibv_create_ah(s->pd, &ah);
	if (!s->ah)
		return fail("ibv_create_ah", i);
	return 0;
}

static int post_recv(struct side *s, struct ibv_qp *qp, uint32_t off, uint32_t len, uint64_t id)
{
	struct ibv_sge sge = {(uintptr_t)s->buf + off, len, s->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = id, .sg_list = &sge, .num_sge = 1}, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

static int post_srq_recv(struct side *s, uint32_t off, uint32_t len, uint64_t id)
{
	struct ibv_sge sge = {(uintptr_t)s->buf + off, len, s->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = id, .sg_list = &sge, .num_sge = 1}, *bad;

	return ibv_post_srq_recv(s->srq, &wr, &bad);
}

static int post_send_qp(struct side *s, struct ibv_qp *qp, struct ibv_send_wr *wr, uint32_t off,
			uint32_t len)
{
	struct ibv_sge sge = {(uintptr_t)s->buf + off, len, s->mr->lkey};
	struct ibv_send_wr *bad;

	wr->sg_list = &sge;
	wr->num_sge = 1;
	wr->send_flags |= IBV_SEND_SIGNALED;
	return ibv_post_send(qp, wr, &bad);
}

static int post_send(struct side *s, struct ibv_send_wr *wr, uint32_t off, uint32_t len)
{
	return post_send_qp(s, s->rc, wr, off, len);
}

/* Buffer areas of each context */
enum { SEND_AT = 0, RECV_AT = 0x10000, WRITE_AT = 0x20000, READ_AT = 0x30000,
       ATOMIC_AT = 0x40000, OLD_AT = 0x40040, UD_AT = 0x50000, UC_AT = 0x60000,
       BULK_AT = 0x80000 };

/* p holds len bytes of context from's pattern, starting `skew` into it. */
static int check_bytes(const uint8_t *p, int from, uint32_t skew, uint32_t len, const char *what,
		       int i)
{
	for (uint32_t k = 0; k < len; k++)
		if (p[k] != pattern(from, k + skew)) {
			fprintf(stderr, "contexts: FAIL: context %d: %s byte %u is %#x, not %#x\n", i,
				what, k, p[k], pattern(from, k + skew));
			return -1;
		}
	return 0;
}

/* SEND, WRITE with immediate, READ, FETCH_ADD, CMP_SWP from a to b. */
static int pair_ops(struct side *a, struct side *b, int ia, int ib)
{
	struct ibv_wc wc;
	uint64_t *target = (uint64_t *)(b->buf + ATOMIC_AT), *old = (uint64_t *)(a->buf + OLD_AT);

	for (uint32_t k = 0; k < MSG; k++) {
		a->buf[SEND_AT + k] = pattern(ia, k);
		a->buf[WRITE_AT + k] = pattern(ia, k + 1);
		b->buf[READ_AT + k] = pattern(ib, k);
	}
	*target = 1000 + (uint64_t)ib;
	if (post_recv(b, b->rc, RECV_AT, MSG, 1) || post_recv(b, b->rc, RECV_AT, MSG, 2))
		return fail("post_recv", ib);

	struct ibv_send_wr send = {.wr_id = 10, .opcode = IBV_WR_SEND};
	if (post_send(a, &send, SEND_AT, MSG) || poll_one(a, ia, &wc) || poll_one(b, ib, &wc))
		return -1;
	if (wc.opcode != IBV_WC_RECV || wc.byte_len != MSG || wc.qp_num != b->rc->qp_num ||
	    check_bytes(b->buf + RECV_AT, ia, 0, MSG, "SEND", ib))
		return errno = 0, fail("SEND completion or data", ib);

	struct ibv_send_wr write = {.wr_id = 11, .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				    .imm_data = htonl(0xabc0000u + (uint32_t)ia)};
	write.wr.rdma.remote_addr = (uintptr_t)b->buf + WRITE_AT;
	write.wr.rdma.rkey = b->mr->rkey;
	if (post_send(a, &write, WRITE_AT, MSG) || poll_one(a, ia, &wc) || poll_one(b, ib, &wc))
		return -1;
	if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM || ntohl(wc.imm_data) != 0xabc0000u + (uint32_t)ia)
		return errno = 0, fail("WRITE_WITH_IMM completion", ib);
	if (check_bytes(b->buf + WRITE_AT, ia, 1, MSG, "WRITE", ib))
		return -1;

	struct ibv_send_wr read = {.wr_id = 12, .opcode = IBV_WR_RDMA_READ};
	read.wr.rdma.remote_addr = (uintptr_t)b->buf + READ_AT;
	read.wr.rdma.rkey = b->mr->rkey;
	if (post_send(a, &read, READ_AT, MSG) || poll_one(a, ia, &wc))
		return -1;
	if (wc.opcode != IBV_WC_RDMA_READ || check_bytes(a->buf + READ_AT, ib, 0, MSG, "READ", ia))
		return errno = 0, fail("READ completion or data", ia);

	struct ibv_send_wr fa = {.wr_id = 13, .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD};
	fa.wr.atomic.remote_addr = (uintptr_t)target;
	fa.wr.atomic.rkey = b->mr->rkey;
	fa.wr.atomic.compare_add = 5;
	if (post_send(a, &fa, OLD_AT, 8) || poll_one(a, ia, &wc))
		return -1;
	if (wc.opcode != IBV_WC_FETCH_ADD || *old != 1000 + (uint64_t)ib ||
	    *target != 1005 + (uint64_t)ib)
		return errno = 0, fail("FETCH_AND_ADD", ia);

	struct ibv_send_wr cs = {.wr_id = 14, .opcode = IBV_WR_ATOMIC_CMP_AND_SWP};
	cs.wr.atomic.remote_addr = (uintptr_t)target;
	cs.wr.atomic.rkey = b->mr->rkey;
	cs.wr.atomic.compare_add = 1005 + (uint64_t)ib;
	cs.wr.atomic.swap = 7;
	if (post_send(a, &cs, OLD_AT, 8) || poll_one(a, ia, &wc))
		return -1;
	if (wc.opcode != IBV_WC_COMP_SWAP || *old != 1005 + (uint64_t)ib || *target != 7)
		return errno = 0, fail("COMPARE_AND_SWAP", ia);
	return 0;
}

/*
 * UC from a to b, b's receives from its SRQ: SEND with immediate, WRITE
 * (no completion at b: its bytes are checked after the next message, which
 * a UC QP delivers in order) and WRITE with immediate.
 */
static int pair_uc(struct side *a, struct side *b, int ia, int ib)
{
	const uint32_t send_at = UC_AT, write_at = UC_AT + MSG, recv_at = UC_AT + 2 * MSG;
	struct ibv_wc wc;

	for (uint32_t k = 0; k < MSG; k++) {
		a->buf[send_at + k] = pattern(ia, k + 5);
		a->buf[write_at + k] = pattern(ia, k + 6);
	}
	if (post_srq_recv(b, recv_at, MSG, 30) || post_srq_recv(b, recv_at + MSG, 0, 31))
		return fail("ibv_post_srq_recv", ib);

	struct ibv_send_wr send = {.wr_id = 32, .opcode = IBV_WR_SEND_WITH_IMM,
				   .imm_data = htonl(0x5c0000u + (uint32_t)ia)};
	if (post_send_qp(a, a->uc, &send, send_at, MSG) || poll_one(a, ia, &wc) ||
	    poll_one(b, ib, &wc))
		return -1;
	if (wc.opcode != IBV_WC_RECV || wc.wr_id != 30 || wc.byte_len != MSG ||
	    wc.qp_num != b->uc->qp_num || !(wc.wc_flags & IBV_WC_WITH_IMM) ||
	    ntohl(wc.imm_data) != 0x5c0000u + (uint32_t)ia)
		return errno = 0, fail("UC SEND_WITH_IMM completion through the SRQ", ib);
	if (check_bytes(b->buf + recv_at, ia, 5, MSG, "UC SEND", ib))
		return -1;

	struct ibv_send_wr write = {.wr_id = 33, .opcode = IBV_WR_RDMA_WRITE};
	write.wr.rdma.remote_addr = (uintptr_t)b->buf + write_at;
	write.wr.rdma.rkey = b->mr->rkey;
	if (post_send_qp(a, a->uc, &write, write_at, MSG) || poll_one(a, ia, &wc))
		return -1;
	struct ibv_send_wr imm = {.wr_id = 34, .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				  .imm_data = htonl(0x5d0000u + (uint32_t)ia)};
	imm.wr.rdma.remote_addr = (uintptr_t)b->buf + recv_at + MSG;
	imm.wr.rdma.rkey = b->mr->rkey;
	if (post_send_qp(a, a->uc, &imm, write_at, 0) || poll_one(a, ia, &wc) ||
	    poll_one(b, ib, &wc))
		return -1;
	if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM || wc.wr_id != 31 || wc.byte_len != 0 ||
	    wc.qp_num != b->uc->qp_num || !(wc.wc_flags & IBV_WC_WITH_IMM) ||
	    ntohl(wc.imm_data) != 0x5d0000u + (uint32_t)ia)
		return errno = 0, fail("UC WRITE_WITH_IMM completion through the SRQ", ib);
	return check_bytes(b->buf + write_at, ia, 6, MSG, "UC WRITE", ib);
}

/* The next send completion of a's CQ, waiting on its channel. */
static int wait_event(struct side *a, struct ibv_wc *wc)
{
	struct pollfd p = {.fd = a->ch->fd, .events = POLLIN};
	struct ibv_cq *cq;
	void *cq_ctx;
	int n;

	for (;;) {
		n = ibv_poll_cq(a->cq, 1, wc);
		if (n)
			return n < 0 || wc->status != IBV_WC_SUCCESS
				   ? (errno = 0, fail(ibv_wc_status_str(wc->status), 0))
				   : 0;
		if (ibv_req_notify_cq(a->cq, 0))
			return fail("ibv_req_notify_cq", 0);
		/* a completion that came before the arm raises no event */
		n = ibv_poll_cq(a->cq, 1, wc);
		if (n)
			return n < 0 || wc->status != IBV_WC_SUCCESS
				   ? (errno = 0, fail(ibv_wc_status_str(wc->status), 0))
				   : 0;
		if (poll(&p, 1, (int)(WAIT_NS / 1000000)) != 1)
			return errno = ETIMEDOUT, fail("no completion event", 0);
		if (ibv_get_cq_event(a->ch, &cq, &cq_ctx))
			return fail("ibv_get_cq_event", 0);
		ibv_ack_cq_events(cq, 1);
	}
}

/* Pair 0: many WRITEs in flight between two contexts, sends in event mode. */
static int bulk_writes(struct side *a, struct side *b)
{
	uint32_t slots = (BUF_SIZE - BULK_AT) / BULK_SIZE;
	int posted = 0, done = 0;
	struct ibv_wc wc;

	for (uint32_t k = 0; k < BUF_SIZE - BULK_AT; k++)
		a->buf[BULK_AT + k] = pattern(0, k + 3);
	while (done < bulk) {
		while (posted < bulk && posted - done < BULK_DEPTH) {
			uint32_t off = BULK_AT + (uint32_t)(posted % (int)slots) * BULK_SIZE;
			struct ibv_send_wr w = {.wr_id = 100 + (uint64_t)posted,
						.opcode = IBV_WR_RDMA_WRITE};

			w.wr.rdma.remote_addr = (uintptr_t)b->buf + off;
			w.wr.rdma.rkey = b->mr->rkey;
			if (post_send(a, &w, off, BULK_SIZE))
				return fail("post bulk write", 0);
			posted++;
		}
		if (wait_event(a, &wc))
			return -1;
		if (wc.wr_id != 100 + (uint64_t)done)
			return errno = 0, fail("bulk completions out of order", 0);
		done++;
	}
	return check_bytes(b->buf + BULK_AT, 0, 3, BUF_SIZE - BULK_AT, "bulk WRITE", 1);
}

/* CPU time of this process's threads named `name` (0 if none), or of the calling thread. */
static uint64_t cpu_ns(const char *name)
{
	char path[64], comm[32];
	uint64_t sum = 0;
	struct timespec ts;
	struct dirent *e;
	DIR *d;

	if (!name) {
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
		return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	}
	d = opendir("/proc/self/task");
	while (d && (e = readdir(d))) {
		FILE *f;
		pid_t tid = (pid_t)atoi(e->d_name);

		snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
		f = tid > 0 ? fopen(path, "r") : NULL;
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && !strncmp(comm, name, strlen(name)) &&
		    /* a thread's CPU clock, as Linux numbers it (clock_getcpuclockid's) */
		    !clock_gettime((clockid_t)((~(unsigned)tid << 3) | 6), &ts))
			sum += (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
		fclose(f);
	}
	if (d)
		closedir(d);
	return sum;
}

/* Poll s's CQ up to its next receive, counting the send completions on the way. */
static int poll_recv(struct side *s, int i, uint64_t *sends)
{
	struct ibv_wc wc;

	do {
		if (poll_one(s, i, &wc))
			return -1;
		*sends += wc.opcode == IBV_WC_SEND;
	} while (wc.opcode != IBV_WC_RECV);
	return 0;
}

/*
 * A polling ping-pong of small SENDs between a and b for `ms`, after
 * another context armed its CQ (bulk_writes): a program that armed a CQ
 * once and polls since (UCX does) runs the device itself, and the
 * provider's own threads (uroce's progress thread; a NIC has none) must
 * stay off the CPU it needs, not take frames from under it. They may run
 * now and then (housekeeping), not a quarter of the poller's time.
 */
static int polled_pingpong(struct side *a, struct side *b, int ia, int ib, unsigned ms)
{
	uint64_t end = now_ns() + (uint64_t)ms * 1000000ull, own0, dev0, own, dev, rounds = 0;
	uint64_t sent = 0, done = 0;
	struct ibv_wc wc;

	own0 = cpu_ns(NULL);
	dev0 = cpu_ns("uroce-progress");
	while (now_ns() < end) {
		struct ibv_send_wr ping = {.wr_id = 20, .opcode = IBV_WR_SEND};
		struct ibv_send_wr pong = {.wr_id = 21, .opcode = IBV_WR_SEND};

		/* each side answers as soon as the other's message is in, and
		 * reaps its send completions as they come: waiting for them
		 * first would wait out the ACK each holds for that answer
		 * (docs/progress-and-cpu.md) */
		if (post_recv(b, b->rc, RECV_AT, 64, 3) || post_recv(a, a->rc, RECV_AT, 64, 4))
			return fail("post_recv", ib);
		if (post_send(a, &ping, SEND_AT, 64))
			return fail("post ping", ia);
		if (poll_recv(b, ib, &done))
			return -1;
		if (post_send(b, &pong, SEND_AT, 64))
			return fail("post pong", ib);
		if (poll_recv(a, ia, &done))
			return -1;
		sent += 2;
		rounds++;
	}
	own = cpu_ns(NULL) - own0;
	dev = cpu_ns("uroce-progress") - dev0;
	for (struct side *x = a; done < sent; x = x == a ? b : a)
		if (ibv_poll_cq(x->cq, 1, &wc) == 1) {
			if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_SEND)
				return errno = 0, fail("a last send completion", ia);
			done++;
		} else if (now_ns() > end + WAIT_NS) {
			return errno = ETIMEDOUT, fail("send completions missing", ia);
		}
	printf("contexts: %" PRIu64 " polled round trips in %u ms after an arm elsewhere: "
	       "the poller used %.0f ms of CPU, the provider's threads %.0f ms\n",
	       rounds, ms, (double)own / 1e6, (double)dev / 1e6);
	if (dev * 4 > own)
		return errno = 0, fail("the provider's threads competed with the polling program", ia);
	return 0;
}

/* Context i's datagram to context i+1 (mod n), with its GRH. */
static int ud_ring(struct side *s, int n)
{
	struct ibv_wc wc;

	for (int i = 0; i < n; i++) {
		struct side *to = &s[(i + 1) % n];

		if (post_recv(to, to->ud, UD_AT, 40 + 256, 20))
			return fail("post UD receive", (i + 1) % n);
	}
	for (int i = 0; i < n; i++) {
		struct side *to = &s[(i + 1) % n];
		struct ibv_sge sge = {(uintptr_t)s[i].buf + UD_AT + 0x1000, 256, s[i].mr->lkey};
		struct ibv_send_wr wr = {.wr_id = 21, .sg_list = &sge, .num_sge = 1,
					 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED},
				   *bad;

		for (uint32_t k = 0; k < 256; k++)
			s[i].buf[UD_AT + 0x1000 + k] = pattern(i, k + 9);
		wr.wr.ud.ah = s[i].ah;
		wr.wr.ud.remote_qpn = to->ud->qp_num;
		wr.wr.ud.remote_qkey = UD_QKEY;
		if (ibv_post_send(s[i].ud, &wr, &bad))
			return fail("UD send", i);
	}
	/* each context completes its send and its receive, in either order */
	for (int j = 0; j < n; j++) {
		int from = (j + n - 1) % n;
		bool sent = false, got = false;

		while (!sent || !got) {
			if (poll_one(&s[j], j, &wc))
				return -1;
			if (wc.wr_id == 21 && wc.opcode == IBV_WC_SEND && !sent) {
				sent = true;
				continue;
			}
			if (wc.wr_id != 20 || got || wc.opcode != IBV_WC_RECV ||
			    wc.byte_len != 40 + 256 || wc.src_qp != s[from].ud->qp_num ||
			    !(wc.wc_flags & IBV_WC_GRH)) {
				fprintf(stderr,
					"contexts: UD: wr_id %" PRIu64 " opcode %d, %u bytes, from QP %#x "
					"(sent by %#x), flags %#x\n",
					wc.wr_id, wc.opcode, wc.byte_len, wc.src_qp, s[from].ud->qp_num,
					wc.wc_flags);
				return errno = 0, fail("UD completion (length, source QP, GRH)", j);
			}
			got = true;
			if (check_bytes(s[j].buf + UD_AT + 40, from, 9, 256, "UD", j))
				return -1;
		}
	}
	return 0;
}

static void close_side(struct side *s)
{
	if (s->ah)
		ibv_destroy_ah(s->ah);
	if (s->rc)
		ibv_destroy_qp(s->rc);
	if (s->ud)
		ibv_destroy_qp(s->ud);
	if (s->uc)
		ibv_destroy_qp(s->uc);
	if (s->srq)
		ibv_destroy_srq(s->srq);
	if (s->mr)
		ibv_dereg_mr(s->mr);
	if (s->cq)
		ibv_destroy_cq(s->cq);
	if (s->ch)
		ibv_destroy_comp_channel(s->ch);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	if (s->ctx)
		ibv_close_device(s->ctx);
	free(s->buf);
	memset(s, 0, sizeof(*s));
}

/* Contexts closed with their objects, one after another, as a long-running untidy program. */
static int untidy_loop(struct ibv_device *dev, int loops)
{
	struct side held, t;
	int rc = -1;

	if (open_side(&held, dev, 0))
		goto out;
	for (int k = 0; k < loops; k++) {
		struct ibv_parent_domain_init_attr pa = {0};
		struct ibv_ah_attr ah;

		if (open_side(&t, dev, k + 1))
			goto out;
		pa.pd = t.pd;
		if (!ibv_alloc_parent_domain(t.ctx, &pa)) {
			fail("ibv_alloc_parent_domain", k + 1);
			goto out_t;
		}
		ah = ah_to(&held);
		if (!(t.ah = ibv_create_ah(t.pd, &ah))) {
			fail("ibv_create_ah", k + 1);
			goto out_t;
		}
		if (ibv_close_device(t.ctx)) {
			fail("ibv_close_device", k + 1);
			goto out_t;
		}
		free(t.buf);
		memset(&t, 0, sizeof(t));
	}
	printf("contexts: %d contexts closed with a PD, a parent domain, a CQ, an MR, an SRQ, "
	       "3 QPs and an AH each: ok\n",
	       loops);
	rc = 0;
	goto out;
out_t:
	close_side(&t);
out:
	close_side(&held);
	return rc;
}

int main(int argc, char **argv)
{
	struct ibv_device **list, *dev = NULL;
	struct side *s;
	int opt, rc = 1, n, untidy = 0;
	uint64_t t0;

	while ((opt = getopt(argc, argv, "d:g:n:b:u:")) != -1) {
		switch (opt) {
		case 'd': dev_name = optarg; break;
		case 'g': gid_idx = atoi(optarg); break;
		case 'n': nctx = atoi(optarg); break;
		case 'b': bulk = atoi(optarg); break;
		case 'u': untidy = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: contexts [-d DEV] [-g GID] [-n CONTEXTS] [-b BULK] "
					"[-u LOOPS]\n");
			return 1;
		}
	}
	if (nctx < 4 || nctx % 2) {
		fprintf(stderr, "contexts: -n takes an even number, at least 4\n");
		return 1;
	}
	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev_name))
			dev = list[i];
	if (!dev) {
		fprintf(stderr, "contexts: no device %s\n", dev_name);
		return 77;
	}
	if (untidy) {
		rc = untidy_loop(dev, untidy) ? 1 : 0;
		ibv_free_device_list(list);
		printf("contexts: %s\n", rc ? "FAIL" : "PASS");
		return rc;
	}
	s = calloc((size_t)nctx, sizeof(*s));
	t0 = now_ns();
	for (int i = 0; i < nctx; i++)
		if (open_side(&s[i], dev, i))
			goto out;
	printf("contexts: %d contexts open in %.1f ms\n", nctx, (double)(now_ns() - t0) / 1e6);
	for (int i = 0; i < nctx; i++)
		if (connect_qp(s[i].rc, s[i ^ 1].rc, &s[i ^ 1], true, i) ||
		    connect_qp(s[i].uc, s[i ^ 1].uc, &s[i ^ 1], false, i) ||
		    ready_ud(&s[i], &s[(i + 1) % nctx], i))
			goto out;
	for (int i = 0; i < nctx; i += 2)
		if (pair_ops(&s[i], &s[i + 1], i, i + 1) || pair_ops(&s[i + 1], &s[i], i + 1, i))
			goto out;
	printf("contexts: RC SEND, WRITE_WITH_IMM, READ, FETCH_ADD, CMP_SWP on %d pairs: ok\n",
	       nctx / 2);
	if (ud_ring(s, nctx))
		goto out;
	printf("contexts: UD datagrams around %d contexts: ok\n", nctx);
	for (int i = 0; i < nctx; i += 2)
		if (pair_uc(&s[i], &s[i + 1], i, i + 1) || pair_uc(&s[i + 1], &s[i], i + 1, i))
			goto out;
	printf("contexts: UC SEND_WITH_IMM, WRITE, WRITE_WITH_IMM into SRQs on %d pairs: ok\n",
	       nctx / 2);
	t0 = now_ns();
	if (bulk_writes(&s[0], &s[1]))
		goto out;
	printf("contexts: %d x %u B WRITEs, context 0 to 1, event mode: ok, %.0f MB/s\n", bulk,
	       BULK_SIZE, (double)bulk * BULK_SIZE / ((double)(now_ns() - t0) / 1e3));
	if (polled_pingpong(&s[2], &s[3], 2, 3, 1000))
		goto out;
	printf("contexts: polled ping-pong after an arm: ok\n");
	/* a context closed with its objects, as a program that exits untidy */
	if (ibv_close_device(s[1].ctx))
		goto out;
	free(s[1].buf);
	memset(&s[1], 0, sizeof(s[1]));
	if (pair_ops(&s[2], &s[3], 2, 3))
		goto out;
	printf("contexts: context 1 closed with its QPs and MRs; pair 2-3 still works: ok\n");
	rc = 0;
out:
	for (int i = 0; i < nctx; i++)
		close_side(&s[i]);
	free(s);
	ibv_free_device_list(list);
	printf("contexts: %s\n", rc ? "FAIL" : "PASS");
	return rc;
}
