/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * verbs_faults: checks of one verbs device through the stock libibverbs API
 * alone, in one process (QPs talk to each other on the same device). It
 * knows nothing about uroce and would run against any RoCE device.
 *
 *   verbs_faults [-d DEV] [-g GID_INDEX] TEST [N]
 *
 *  limits     the limits query_device and create_qp advertise are enforced
 *             with the verbs errors: CQ, WQ and SRQ depths, SGEs, inline
 *             size, rd_atomic; post_send/post_recv past the queue depth or
 *             the SGE limit fail with ENOMEM/EINVAL and *bad_wr at the
 *             first WR refused, and every WR before it was posted.
 *  counts     exactly max_{pd,mr,cq,qp,srq,ah} objects can exist; the next
 *             create fails with ENOMEM; freeing one makes room for one.
 *             Needs small limits (UROCE_LIMITS on uroce), refuses > 5000.
 *  busy       a CQ, SRQ or PD still in use is not destroyed (EBUSY), and
 *             then is, once its users are gone.
 *  errreset N N rounds: a QP pair moves data (verified), one QP is put in
 *             the error state (by a modify, or by a remote access error),
 *             everything outstanding flushes, both go back through RESET
 *             to RTS and are used again.
 *  keyguess   an attacker knowing one rkey of a peer tries the keys of the
 *             peer's other regions by their table index (the same tag, or
 *             no tag): every guess is refused with REM_ACCESS_ERR and no
 *             byte changes.
 *  asyncflood hundreds of QP errors whose asynchronous events the program
 *             never reads (most programs never call ibv_get_async_event),
 *             on two QP pairs; then every QP is destroyed: no call may hang.
 *  conform    what a conformance suite asks of any device: a CQ on a
 *             completion vector the context does not have is EINVAL;
 *             phys_port_cnt_ex equals phys_port_cnt; create_qp_ex with
 *             IBV_QP_INIT_ATTR_CREATE_FLAGS and no flag works, with a flag
 *             the device lacks fails EOPNOTSUPP or EINVAL; ibv_import_device
 *             on the context's command fd works or fails EOPNOTSUPP;
 *             modify_qp without a required attribute, or with an address
 *             without a GRH, is EINVAL.
 *  retryexc   an RC QP whose peer never answers: RETRY_EXC_ERR in the CQE,
 *             the QP in ERR, and no asynchronous event for it (Soft-RoCE
 *             and mlx5 raise none: the completion is the report).
 *  cycles N   N rounds of creating and destroying every kind of object
 *             (and every 100 rounds the whole device context): heap bytes
 *             in use, file descriptors, threads and files in the run
 *             directory (--run-dir) must not grow.
 *
 * Exit 0: pass; 1: fail (the reason is printed); 77: skipped.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define NSEC 1000000000ull

static const char *dev_name;
static int gid_idx = 1;
static const char *run_dir;
static int failures;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "verbs_faults: FAIL: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	failures++;
}

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond))                                                                       \
			fail(__VA_ARGS__);                                                         \
	} while (0)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC + (uint64_t)ts.tv_nsec;
}

/* ---- the device ---- */

struct dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_device_attr_ex attr;
	union ibv_gid gid;
};

static struct ibv_context *open_ctx(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	if (!list)
		return NULL;
	for (int i = 0; list[i]; i++) {
		if (dev_name && strcmp(ibv_get_device_name(list[i]), dev_name))
			continue;
		ctx = ibv_open_device(list[i]);
		break;
	}
	ibv_free_device_list(list);
	return ctx;
}

static int dev_open(struct dev *d)
{
	memset(d, 0, sizeof(*d));
	d->ctx = open_ctx();
	if (!d->ctx) {
		fprintf(stderr, "verbs_faults: no device %s\n", dev_name ? dev_name : "");
		return -1;
	}
	if (ibv_query_device_ex(d->ctx, NULL, &d->attr) ||
	    ibv_query_gid(d->ctx, 1, gid_idx, &d->gid)) {
		fprintf(stderr, "verbs_faults: query_device/query_gid failed\n");
		return -1;
	}
	d->pd = ibv_alloc_pd(d->ctx);
	return d->pd ? 0 : -1;
}

static void dev_close(struct dev *d)
{
	if (d->pd)
		ibv_dealloc_pd(d->pd);
	if (d->ctx)
		ibv_close_device(d->ctx);
}

static struct ibv_qp *make_qp(struct dev *d, struct ibv_cq *cq, struct ibv_srq *srq,
			      uint32_t wr, uint32_t sge, uint32_t inl)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.srq = srq,
		.qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = wr, .max_recv_wr = srq ? 0 : wr, .max_send_sge = sge,
			.max_recv_sge = sge, .max_inline_data = inl},
	};

	return ibv_create_qp(d->pd, &ia);
}

/* RESET -> INIT -> RTR -> RTS towards `dqpn` on this device. */
static int connect_qp(struct dev *d, struct ibv_qp *qp, uint32_t dqpn, uint32_t my_psn,
		      uint32_t peer_psn, int timeout, int retry)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
	};
	int r;

	r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					 IBV_QP_ACCESS_FLAGS);
	if (r)
		return r;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = peer_psn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = d->gid;
	a.ah_attr.grh.sgid_index = (uint8_t)gid_idx;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					 IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					 IBV_QP_MIN_RNR_TIMER);
	if (r)
		return r;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = (uint8_t)timeout;
	a.retry_cnt = (uint8_t)retry;
	a.rnr_retry = 7;
	a.sq_psn = my_psn;
	a.max_rd_atomic = 4;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					 IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static int to_state(struct ibv_qp *qp, enum ibv_qp_state st)
{
	struct ibv_qp_attr a = {.qp_state = st};

	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return (enum ibv_qp_state)-1;
	return a.qp_state;
}

/* Poll `n` completions within `ms`; returns how many came. */
static int poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n, unsigned ms)
{
	uint64_t end = now_ns() + (uint64_t)ms * 1000000;
	int got = 0;

	while (got < n && now_ns() < end) {
		int k = ibv_poll_cq(cq, n - got, wc + got);

		if (k < 0)
			return got;
		got += k;
	}
	return got;
}

/* ---- limits ---- */

static void expect_null_errno(void *p, int want, const char *what)
{
	if (p) {
		fail("%s: created, want errno %s", what, strerror(want));
		return;
	}
	CHECK(errno == want, "%s: errno %s, want %s", what, strerror(errno), strerror(want));
}

static void qp_cap_limit(struct dev *d, struct ibv_cq *cq, const char *field, int which,
			 uint32_t limit)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp *qp;
	char what[96];

	for (int over = 0; over < 2; over++) {
		memset(&ia, 0, sizeof(ia));
		ia.send_cq = ia.recv_cq = cq;
		ia.qp_type = IBV_QPT_RC;
		ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
		ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
		uint32_t *f = which == 0   ? &ia.cap.max_send_wr
			      : which == 1 ? &ia.cap.max_recv_wr
			      : which == 2 ? &ia.cap.max_send_sge
			      : which == 3 ? &ia.cap.max_recv_sge
					   : &ia.cap.max_inline_data;

		*f = limit + (uint32_t)over;
		qp = ibv_create_qp(d->pd, &ia);
		snprintf(what, sizeof(what), "create_qp %s = %u (limit %u)", field, *f, limit);
		if (over) {
			expect_null_errno(qp, EINVAL, what);
			if (qp)
				ibv_destroy_qp(qp);
			continue;
		}
		if (!qp) {
			fail("%s: %s", what, strerror(errno));
			continue;
		}
		CHECK(*f >= limit, "%s: granted %u", what, *f);
		ibv_destroy_qp(qp);
	}
}

static int test_limits(struct dev *d)
{
	const struct ibv_device_attr *a = &d->attr.orig_attr;
	struct ibv_cq *cq, *big;
	struct ibv_srq_init_attr sa;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	struct ibv_qp_init_attr ia;
	struct ibv_send_wr *swr, *bad;
	struct ibv_recv_wr *rwr, *rbad;
	struct ibv_sge sge[40];
	struct ibv_wc wc[64];
	static uint8_t buf[65536];
	struct ibv_mr *mr;
	uint32_t inl, depth;
	int r, n;

	printf("limits: max_qp_wr %d max_sge %d max_cqe %d max_srq_wr %d max_srq_sge %d "
	       "max_qp_rd_atom %d max_qp_init_rd_atom %d\n",
	       a->max_qp_wr, a->max_sge, a->max_cqe, a->max_srq_wr, a->max_srq_sge,
	       a->max_qp_rd_atom, a->max_qp_init_rd_atom);
	/* CQ depth */
	expect_null_errno(ibv_create_cq(d->ctx, a->max_cqe + 1, NULL, NULL, 0), EINVAL,
			  "create_cq above max_cqe");
	expect_null_errno(ibv_create_cq(d->ctx, 0, NULL, NULL, 0), EINVAL, "create_cq of 0");
	big = ibv_create_cq(d->ctx, a->max_cqe, NULL, NULL, 0);
	CHECK(big && big->cqe >= a->max_cqe, "create_cq of max_cqe: %s",
	      big ? "too small" : strerror(errno));
	if (big)
		ibv_destroy_cq(big);
	cq = ibv_create_cq(d->ctx, 256, NULL, NULL, 0);
	if (!cq) {
		fail("create_cq: %s", strerror(errno));
		return -1;
	}
	r = ibv_resize_cq(cq, a->max_cqe + 1);
	CHECK(r == EINVAL, "resize_cq above max_cqe: %s", strerror(r));

	/* QP capabilities */
	qp_cap_limit(d, cq, "max_send_wr", 0, (uint32_t)a->max_qp_wr);
	qp_cap_limit(d, cq, "max_recv_wr", 1, (uint32_t)a->max_qp_wr);
	qp_cap_limit(d, cq, "max_send_sge", 2, (uint32_t)a->max_sge);
	qp_cap_limit(d, cq, "max_recv_sge", 3, (uint32_t)a->max_sge);
	/* inline: the device says its limit through what create_qp grants */
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 1;
	ia.cap.max_inline_data = 1u << 20;
	qp = ibv_create_qp(d->pd, &ia);
	expect_null_errno(qp, EINVAL, "create_qp with 1 MiB of inline data");
	for (inl = 4096; inl && !qp; inl /= 2) {
		ia.cap.max_inline_data = inl;
		qp = ibv_create_qp(d->pd, &ia);
	}
	if (!qp) {
		fail("no inline size accepted");
		return -1;
	}
	inl = ia.cap.max_inline_data;
	ibv_destroy_qp(qp);
	printf("limits: largest inline size granted %u\n", inl);

	/* SRQ */
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = (uint32_t)a->max_srq_wr + 1;
	sa.attr.max_sge = 1;
	expect_null_errno(ibv_create_srq(d->pd, &sa), EINVAL, "create_srq above max_srq_wr");
	sa.attr.max_wr = 16;
	sa.attr.max_sge = (uint32_t)a->max_srq_sge + 1;
	expect_null_errno(ibv_create_srq(d->pd, &sa), EINVAL, "create_srq above max_srq_sge");
	sa.attr.max_sge = 1;
	srq = ibv_create_srq(d->pd, &sa);
	CHECK(srq, "create_srq: %s", strerror(errno));

	/* posting: a QP that takes work but starts none (SQD), its receives in INIT */
	qp = make_qp(d, cq, NULL, 8, 2, 64);
	if (!qp) {
		fail("create_qp: %s", strerror(errno));
		return -1;
	}
	mr = ibv_reg_mr(d->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	if (!mr) {
		fail("reg_mr: %s", strerror(errno));
		return -1;
	}
	for (int i = 0; i < 40; i++)
		sge[i] = (struct ibv_sge){(uintptr_t)buf + 64 * i, 16, mr->lkey};
	if (connect_qp(d, qp, qp->qp_num, 100, 100, 14, 7) || to_state(qp, IBV_QPS_SQD)) {
		fail("bringing the QP to SQD");
		return -1;
	}
	/* more SGEs than granted */
	{
		struct ibv_send_wr w = {.wr_id = 1, .sg_list = sge, .opcode = IBV_WR_SEND};
		struct ibv_recv_wr rw = {.wr_id = 1, .sg_list = sge};

		w.num_sge = (int)ia.cap.max_send_sge + 1;
		ibv_query_qp(qp, &(struct ibv_qp_attr){0}, 0, &ia);
		w.num_sge = (int)ia.cap.max_send_sge + 1;
		r = ibv_post_send(qp, &w, &bad);
		CHECK(r == EINVAL && bad == &w, "post_send with %d SGEs (max %u): %s", w.num_sge,
		      ia.cap.max_send_sge, strerror(r));
		rw.num_sge = (int)ia.cap.max_recv_sge + 1;
		r = ibv_post_recv(qp, &rw, &rbad);
		CHECK(r == EINVAL && rbad == &rw, "post_recv with %d SGEs (max %u): %s",
		      rw.num_sge, ia.cap.max_recv_sge, strerror(r));
		/* inline data one byte longer than granted */
		w.num_sge = 1;
		w.send_flags = IBV_SEND_INLINE;
		sge[0].length = ia.cap.max_inline_data + 1;
		r = ibv_post_send(qp, &w, &bad);
		CHECK(r == EINVAL && bad == &w, "post_send of %u inline bytes (max %u): %s",
		      sge[0].length, ia.cap.max_inline_data, strerror(r));
		sge[0].length = 16;
	}
	/* one WR more than the send queue holds: ENOMEM at the last, the rest posted */
	depth = ia.cap.max_send_wr;
	swr = calloc(depth + 1, sizeof(*swr));
	for (uint32_t i = 0; i <= depth; i++) {
		swr[i] = (struct ibv_send_wr){.wr_id = 1000 + i, .sg_list = sge, .num_sge = 1,
					      .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
					      .next = i < depth ? &swr[i + 1] : NULL};
	}
	r = ibv_post_send(qp, swr, &bad);
	CHECK(r == ENOMEM && bad == &swr[depth], "post_send of %u WRs on a queue of %u: %s, bad_wr %td",
	      depth + 1, depth, strerror(r), bad ? bad - swr : -1);
	r = ibv_post_send(qp, &swr[depth], &bad);
	CHECK(r == ENOMEM, "post_send on a full queue: %s", strerror(r));
	/* receives likewise */
	depth = ia.cap.max_recv_wr;
	rwr = calloc(depth + 1, sizeof(*rwr));
	for (uint32_t i = 0; i <= depth; i++)
		rwr[i] = (struct ibv_recv_wr){.wr_id = 2000 + i, .sg_list = sge, .num_sge = 1,
					      .next = i < depth ? &rwr[i + 1] : NULL};
	r = ibv_post_recv(qp, rwr, &rbad);
	CHECK(r == ENOMEM && rbad == &rwr[depth], "post_recv of %u WRs on a queue of %u: %s",
	      depth + 1, depth, strerror(r));
	/* everything that was accepted is there: the error state flushes it, in order */
	to_state(qp, IBV_QPS_ERR);
	n = poll_n(cq, wc, 64, 2000);
	CHECK(n == (int)(ia.cap.max_send_wr + ia.cap.max_recv_wr),
	      "%d completions after ERR, want %u", n, ia.cap.max_send_wr + ia.cap.max_recv_wr);
	for (int i = 0; i < n; i++)
		CHECK(wc[i].status == IBV_WC_WR_FLUSH_ERR, "WR %" PRIu64 ": %s", wc[i].wr_id,
		      ibv_wc_status_str(wc[i].status));
	free(swr);
	free(rwr);
	ibv_destroy_qp(qp);

	/* rd_atomic above the device's */
	qp = make_qp(d, cq, NULL, 4, 1, 0);
	if (qp) {
		struct ibv_qp_attr at = {.qp_state = IBV_QPS_INIT, .port_num = 1};

		ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					       IBV_QP_ACCESS_FLAGS);
		memset(&at, 0, sizeof(at));
		at.qp_state = IBV_QPS_RTR;
		at.path_mtu = IBV_MTU_1024;
		at.dest_qp_num = qp->qp_num;
		at.max_dest_rd_atomic = (uint8_t)(a->max_qp_rd_atom + 1);
		at.ah_attr.is_global = 1;
		at.ah_attr.grh.dgid = d->gid;
		at.ah_attr.grh.sgid_index = (uint8_t)gid_idx;
		at.ah_attr.port_num = 1;
		r = ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
						   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
						   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
		CHECK(r == EINVAL, "max_dest_rd_atomic %d (max %d): %s", at.max_dest_rd_atomic,
		      a->max_qp_rd_atom, strerror(r));
		ibv_destroy_qp(qp);
	}
	/* memory registration */
	expect_null_errno(ibv_reg_mr(d->pd, buf, sizeof(buf), IBV_ACCESS_REMOTE_WRITE), EINVAL,
			  "reg_mr with remote write and no local write");
	expect_null_errno(ibv_reg_mr(d->pd, buf, d->attr.orig_attr.max_mr_size + 1,
				     IBV_ACCESS_LOCAL_WRITE),
			  EINVAL, "reg_mr above max_mr_size");
	ibv_dereg_mr(mr);
	if (srq)
		ibv_destroy_srq(srq);
	ibv_destroy_cq(cq);
	return failures ? -1 : 0;
}

/* ---- conform ---- */

static int test_conform(struct dev *d)
{
	const int bad_vectors[] = {d->ctx->num_comp_vectors, d->ctx->num_comp_vectors + 1, 100, -1};
	struct ibv_qp_init_attr_ex ia;
	struct ibv_context *imp;
	struct ibv_cq *cq;
	struct ibv_qp *qp;

	printf("conform: num_comp_vectors %d phys_port_cnt %u phys_port_cnt_ex %u\n",
	       d->ctx->num_comp_vectors, d->attr.orig_attr.phys_port_cnt, d->attr.phys_port_cnt_ex);
	for (unsigned i = 0; i < sizeof(bad_vectors) / sizeof(bad_vectors[0]); i++) {
		char what[64];

		snprintf(what, sizeof(what), "create_cq on comp_vector %d of %d", bad_vectors[i],
			 d->ctx->num_comp_vectors);
		cq = ibv_create_cq(d->ctx, 16, NULL, NULL, bad_vectors[i]);
		expect_null_errno(cq, EINVAL, what);
		if (cq)
			ibv_destroy_cq(cq);
	}
	for (int v = 0; v < d->ctx->num_comp_vectors; v++) {
		cq = ibv_create_cq(d->ctx, 16, NULL, NULL, v);
		CHECK(cq, "create_cq on comp_vector %d: %s", v, strerror(errno));
		if (cq)
			ibv_destroy_cq(cq);
	}
	CHECK(d->attr.phys_port_cnt_ex == d->attr.orig_attr.phys_port_cnt,
	      "phys_port_cnt_ex %u, phys_port_cnt %u", d->attr.phys_port_cnt_ex,
	      d->attr.orig_attr.phys_port_cnt);

	cq = ibv_create_cq(d->ctx, 16, NULL, NULL, 0);
	if (!cq) {
		fail("create_cq: %s", strerror(errno));
		return -1;
	}
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
	ia.pd = d->pd;
	ia.create_flags = 0;
	qp = ibv_create_qp_ex(d->ctx, &ia);
	CHECK(qp, "create_qp_ex with IBV_QP_INIT_ATTR_CREATE_FLAGS and no flag: %s",
	      strerror(errno));
	if (qp)
		ibv_destroy_qp(qp);
	/* a flag no software RoCE device has (mlx5 only, on a raw packet QP) */
	ia.create_flags = IBV_QP_CREATE_CVLAN_STRIPPING;
	qp = ibv_create_qp_ex(d->ctx, &ia);
	CHECK(!qp && (errno == EOPNOTSUPP || errno == EINVAL),
	      "create_qp_ex with IBV_QP_CREATE_CVLAN_STRIPPING on RC: %s",
	      qp ? "created" : strerror(errno));
	if (qp)
		ibv_destroy_qp(qp);

	/* modify_qp refusals: a missing required attribute, an address without a GRH */
	qp = make_qp(d, cq, NULL, 4, 1, 0);
	if (qp) {
		struct ibv_qp_attr at = {.qp_state = IBV_QPS_INIT, .port_num = 1};
		int r;

		r = ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS);
		CHECK(r == EINVAL, "RESET -> INIT without IBV_QP_PORT: %s", strerror(r));
		r = ibv_modify_qp(
		    qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
		CHECK(r == 0, "RESET -> INIT: %s", strerror(r));
		memset(&at, 0, sizeof(at));
		at.qp_state = IBV_QPS_RTR;
		at.path_mtu = IBV_MTU_1024;
		at.dest_qp_num = qp->qp_num;
		at.max_dest_rd_atomic = 1;
		at.ah_attr.is_global = 0;
		at.ah_attr.dlid = 1;
		at.ah_attr.port_num = 1;
		r = ibv_modify_qp(qp, &at,
				  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				      IBV_QP_MIN_RNR_TIMER);
		CHECK(r == EINVAL, "INIT -> RTR with an address without a GRH on RoCE: %s",
		      strerror(r));
		ibv_destroy_qp(qp);
	}
	ibv_destroy_cq(cq);

	errno = 0;
	imp = ibv_import_device(d->ctx->cmd_fd);
	if (imp) {
		printf("conform: ibv_import_device works\n");
		ibv_close_device(imp);
	} else {
		CHECK(errno == EOPNOTSUPP, "ibv_import_device: %s, want it to work or EOPNOTSUPP",
		      strerror(errno));
	}
	return failures ? -1 : 0;
}

/* ---- retryexc ---- */

static int test_retryexc(struct dev *d)
{
	struct ibv_cq *cq = ibv_create_cq(d->ctx, 16, NULL, NULL, 0);
	struct ibv_qp *a = cq ? make_qp(d, cq, NULL, 4, 1, 0) : NULL;
	struct ibv_qp *b = cq ? make_qp(d, cq, NULL, 4, 1, 0) : NULL; /* stays in RESET */
	static uint8_t buf[64];
	struct ibv_mr *mr = ibv_reg_mr(d->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_async_event ev;
	struct pollfd pfd;
	struct ibv_wc wc;
	unsigned others = 0;
	uint64_t end;
	int flags;

	if (!cq || !a || !b || !mr) {
		fail("retryexc: setting up: %s", strerror(errno));
		return -1;
	}
	/* timeout 8 (1 ms) x (1 + 1) tries towards a QP that drops everything */
	if (connect_qp(d, a, b->qp_num, 0x100, 0x200, 8, 1)) {
		fail("retryexc: connecting: %s", strerror(errno));
		return -1;
	}
	{
		struct ibv_sge s = {(uintptr_t)buf, sizeof(buf), mr->lkey};
		struct ibv_send_wr w = {.wr_id = 7,
					.sg_list = &s,
					.num_sge = 1,
					.opcode = IBV_WR_SEND,
					.send_flags = IBV_SEND_SIGNALED},
				   *bad;

		CHECK(!ibv_post_send(a, &w, &bad), "retryexc: post_send");
	}
	if (poll_n(cq, &wc, 1, 5000) != 1) {
		fail("retryexc: no completion within 5 s");
		return -1;
	}
	CHECK(wc.wr_id == 7 && wc.status == IBV_WC_RETRY_EXC_ERR, "retryexc: wr_id %llu status %s",
	      (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
	CHECK(qp_state(a) == IBV_QPS_ERR, "retryexc: the QP is in state %d, not ERR", qp_state(a));
	/* every event queued until 300 ms after the error (PORT_ACTIVE at open is no matter) */
	flags = fcntl(d->ctx->async_fd, F_GETFL);
	fcntl(d->ctx->async_fd, F_SETFL, flags | O_NONBLOCK);
	end = now_ns() + 300 * 1000000ull;
	pfd = (struct pollfd){.fd = d->ctx->async_fd, .events = POLLIN};
	while (now_ns() < end) {
		if (poll(&pfd, 1, 50) <= 0 || ibv_get_async_event(d->ctx, &ev))
			continue;
		if ((ev.event_type == IBV_EVENT_QP_FATAL || ev.event_type == IBV_EVENT_QP_REQ_ERR ||
		     ev.event_type == IBV_EVENT_QP_ACCESS_ERR) &&
		    (ev.element.qp == a || ev.element.qp == b))
			fail("retryexc: %s raised for a QP", ibv_event_type_str(ev.event_type));
		else
			others++;
		ibv_ack_async_event(&ev);
	}
	fcntl(d->ctx->async_fd, F_SETFL, flags);
	printf("retryexc: RETRY_EXC_ERR, QP in ERR, no QP event (%u other events): %s\n", others,
	       failures ? "FAIL" : "ok");
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	return failures ? -1 : 0;
}

/* ---- counts ---- */

enum kind { K_PD, K_MR, K_CQ, K_QP, K_SRQ, K_AH, K_COUNT };
static const char *const kind_names[K_COUNT] = {"pd", "mr", "cq", "qp", "srq", "ah"};

static void *make_obj(struct dev *d, enum kind k, struct ibv_cq *cq, void *buf)
{
	switch (k) {
	case K_PD:
		return ibv_alloc_pd(d->ctx);
	case K_MR:
		return ibv_reg_mr(d->pd, buf, 64, IBV_ACCESS_LOCAL_WRITE);
	case K_CQ:
		return ibv_create_cq(d->ctx, 1, NULL, NULL, 0);
	case K_QP:
		return make_qp(d, cq, NULL, 1, 1, 0);
	case K_SRQ: {
		struct ibv_srq_init_attr sa = {.attr = {.max_wr = 1, .max_sge = 1}};

		return ibv_create_srq(d->pd, &sa);
	}
	default: {
		struct ibv_ah_attr ah = {.is_global = 1, .port_num = 1};

		ah.grh.dgid = d->gid;
		ah.grh.sgid_index = (uint8_t)gid_idx;
		return ibv_create_ah(d->pd, &ah);
	}
	}
}

static void free_obj(enum kind k, void *o)
{
	switch (k) {
	case K_PD:
		ibv_dealloc_pd(o);
		break;
	case K_MR:
		ibv_dereg_mr(o);
		break;
	case K_CQ:
		ibv_destroy_cq(o);
		break;
	case K_QP:
		ibv_destroy_qp(o);
		break;
	case K_SRQ:
		ibv_destroy_srq(o);
		break;
	default:
		ibv_destroy_ah(o);
		break;
	}
}

static int test_counts(struct dev *d)
{
	const struct ibv_device_attr *a = &d->attr.orig_attr;
	const int max[K_COUNT] = {a->max_pd, a->max_mr, a->max_cq, a->max_qp, a->max_srq, a->max_ah};
	static uint8_t buf[64];
	struct ibv_cq *cq = ibv_create_cq(d->ctx, 16, NULL, NULL, 0);

	for (int k = 0; k < K_COUNT; k++) {
		/* the device's own PD and the QPs' CQ count too */
		int already = k == K_PD || k == K_CQ ? 1 : 0, n = 0;
		void **objs;
		void *extra;

		if (max[k] > 5000) {
			printf("counts: max_%s %d is too many to try: set smaller limits\n",
			       kind_names[k], max[k]);
			return 77;
		}
		objs = calloc((size_t)max[k] + 1, sizeof(*objs));
		while (n <= max[k]) {
			objs[n] = make_obj(d, (enum kind)k, cq, buf);
			if (!objs[n])
				break;
			n++;
		}
		CHECK(n + already == max[k], "%s: %d created (plus %d), max_%s is %d", kind_names[k],
		      n, already, kind_names[k], max[k]);
		CHECK(errno == ENOMEM, "%s: create beyond the limit: %s, want ENOMEM",
		      kind_names[k], strerror(errno));
		/* room for exactly one again */
		if (n) {
			free_obj((enum kind)k, objs[--n]);
			extra = make_obj(d, (enum kind)k, cq, buf);
			CHECK(extra, "%s: no room after freeing one: %s", kind_names[k],
			      strerror(errno));
			if (extra)
				objs[n++] = extra;
		}
		printf("counts: max_%s %d: %d created, the next refused with %s\n", kind_names[k],
		       max[k], n + already, strerror(ENOMEM));
		while (n)
			free_obj((enum kind)k, objs[--n]);
		free(objs);
	}
	ibv_destroy_cq(cq);
	return failures ? -1 : 0;
}

/* ---- busy ---- */

static int test_busy(struct dev *d)
{
	struct ibv_pd *pd = ibv_alloc_pd(d->ctx);
	struct ibv_cq *cq = ibv_create_cq(d->ctx, 16, NULL, NULL, 0);
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 4, .max_sge = 1}};
	struct ibv_srq *srq;
	struct ibv_qp_init_attr ia = {.qp_type = IBV_QPT_RC, .cap = {.max_send_wr = 1, .max_send_sge = 1}};
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	struct ibv_ah_attr aa = {.is_global = 1, .port_num = 1};
	static uint8_t buf[64];
	int r;

	if (!pd || !cq)
		return -1;
	srq = ibv_create_srq(pd, &sa);
	ia.send_cq = ia.recv_cq = cq;
	ia.srq = srq;
	qp = ibv_create_qp(pd, &ia);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	aa.grh.dgid = d->gid;
	aa.grh.sgid_index = (uint8_t)gid_idx;
	ah = ibv_create_ah(pd, &aa);
	if (!srq || !qp || !mr || !ah) {
		fail("busy: creating the objects: %s", strerror(errno));
		return -1;
	}
	r = ibv_destroy_cq(cq);
	CHECK(r == EBUSY, "destroy_cq with a QP on it: %s, want EBUSY", strerror(r));
	r = ibv_destroy_srq(srq);
	CHECK(r == EBUSY, "destroy_srq with a QP on it: %s, want EBUSY", strerror(r));
	r = ibv_dealloc_pd(pd);
	CHECK(r == EBUSY, "dealloc_pd holding a QP, SRQ, MR and AH: %s, want EBUSY", strerror(r));
	CHECK(!ibv_destroy_qp(qp), "destroy_qp");
	r = ibv_dealloc_pd(pd);
	CHECK(r == EBUSY, "dealloc_pd holding an SRQ, MR and AH: %s, want EBUSY", strerror(r));
	CHECK(!ibv_destroy_srq(srq), "destroy_srq once unused");
	CHECK(!ibv_destroy_cq(cq), "destroy_cq once unused");
	CHECK(!ibv_dereg_mr(mr), "dereg_mr");
	r = ibv_dealloc_pd(pd);
	CHECK(r == EBUSY, "dealloc_pd holding an AH: %s, want EBUSY", strerror(r));
	CHECK(!ibv_destroy_ah(ah), "destroy_ah");
	CHECK(!ibv_dealloc_pd(pd), "dealloc_pd once empty");
	printf("busy: CQ, SRQ and PD in use refused with EBUSY, destroyed once free: %s\n",
	       failures ? "WRONG" : "ok");
	return failures ? -1 : 0;
}

/* ---- a connected pair on this device ---- */

#define PAIR_BUF (256 * 1024)

struct pair {
	struct ibv_cq *cq;
	struct ibv_qp *a, *b;
	uint8_t *mem_a, *mem_b;
	struct ibv_mr *mr_a, *mr_b;
	uint32_t psn;
};

static int pair_connect(struct dev *d, struct pair *p, int timeout, int retry)
{
	p->psn = (p->psn + 0x10001) & 0xffffff;
	if (connect_qp(d, p->a, p->b->qp_num, p->psn, p->psn ^ 0x5555, timeout, retry) ||
	    connect_qp(d, p->b, p->a->qp_num, p->psn ^ 0x5555, p->psn, timeout, retry))
		return -1;
	return 0;
}

static int pair_open(struct dev *d, struct pair *p)
{
	memset(p, 0, sizeof(*p));
	p->cq = ibv_create_cq(d->ctx, 1024, NULL, NULL, 0);
	p->a = make_qp(d, p->cq, NULL, 64, 2, 0);
	p->b = make_qp(d, p->cq, NULL, 64, 2, 0);
	p->mem_a = aligned_alloc(4096, PAIR_BUF);
	p->mem_b = aligned_alloc(4096, PAIR_BUF);
	if (!p->cq || !p->a || !p->b || !p->mem_a || !p->mem_b)
		return -1;
	memset(p->mem_a, 0, PAIR_BUF);
	memset(p->mem_b, 0, PAIR_BUF);
	p->mr_a = ibv_reg_mr(d->pd, p->mem_a, PAIR_BUF, IBV_ACCESS_LOCAL_WRITE |
							    IBV_ACCESS_REMOTE_WRITE |
							    IBV_ACCESS_REMOTE_READ);
	p->mr_b = ibv_reg_mr(d->pd, p->mem_b, PAIR_BUF, IBV_ACCESS_LOCAL_WRITE |
							    IBV_ACCESS_REMOTE_WRITE |
							    IBV_ACCESS_REMOTE_READ);
	if (!p->mr_a || !p->mr_b)
		return -1;
	return pair_connect(d, p, 14, 7);
}

static void pair_close(struct pair *p)
{
	if (p->a)
		ibv_destroy_qp(p->a);
	if (p->b)
		ibv_destroy_qp(p->b);
	if (p->mr_a)
		ibv_dereg_mr(p->mr_a);
	if (p->mr_b)
		ibv_dereg_mr(p->mr_b);
	if (p->cq)
		ibv_destroy_cq(p->cq);
	free(p->mem_a);
	free(p->mem_b);
}

static uint8_t pat(uint64_t seed, size_t i)
{
	uint64_t x = seed + i * 0x9e3779b97f4a7c15ull;

	x ^= x >> 29;
	return (uint8_t)(x * 0xbf58476d1ce4e5b9ull >> 56);
}

static int post_rdma(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, void *local,
		     uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = {(uintptr_t)local, len, lkey};
	struct ibv_send_wr w = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
				.send_flags = IBV_SEND_SIGNALED}, *bad;

	w.wr.rdma.remote_addr = raddr;
	w.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &w, &bad);
}

/* a WRITEs a pattern into b, READs it back into another part of a: every byte checked. */
static int pair_transfer(struct pair *p, uint64_t seed, uint32_t len)
{
	struct ibv_wc wc[2];
	uint8_t *src = p->mem_a, *back = p->mem_a + PAIR_BUF / 2;

	for (uint32_t i = 0; i < len; i++)
		src[i] = pat(seed, i);
	memset(back, 0, len);
	if (post_rdma(p->a, IBV_WR_RDMA_WRITE, 1, src, len, p->mr_a->lkey, (uintptr_t)p->mem_b,
		      p->mr_b->rkey) ||
	    post_rdma(p->a, IBV_WR_RDMA_READ, 2, back, len, p->mr_a->lkey, (uintptr_t)p->mem_b,
		      p->mr_b->rkey))
		return -1;
	if (poll_n(p->cq, wc, 2, 5000) != 2 || wc[0].status || wc[1].status) {
		fail("transfer: completions %s / %s", ibv_wc_status_str(wc[0].status),
		     ibv_wc_status_str(wc[1].status));
		return -1;
	}
	for (uint32_t i = 0; i < len; i++) {
		if (back[i] != pat(seed, i) || p->mem_b[i] != pat(seed, i)) {
			fail("transfer: byte %u differs", i);
			return -1;
		}
	}
	return 0;
}

/* ---- errreset ---- */

static int test_errreset(struct dev *d, int rounds)
{
	struct pair p;
	struct ibv_wc wc[64];
	int flushed_total = 0;

	if (pair_open(d, &p)) {
		fail("errreset: setting up the QP pair: %s", strerror(errno));
		return -1;
	}
	for (int r = 0; r < rounds && !failures; r++) {
		int n, want;

		if (pair_transfer(&p, (uint64_t)r, 1000 + 4000 * (uint32_t)(r % 30)))
			break;
		if (r % 2 == 0) {
			/* the consumer's own modify, with work outstanding on both queues */
			struct ibv_sge sge = {(uintptr_t)p.mem_a, 64, p.mr_a->lkey};
			struct ibv_recv_wr rw = {.sg_list = &sge, .num_sge = 1}, *rbad;

			for (int i = 0; i < 8; i++) {
				rw.wr_id = 100 + (uint64_t)i;
				ibv_post_recv(p.a, &rw, &rbad);
			}
			to_state(p.a, IBV_QPS_ERR);
			want = 8;
		} else {
			/* a remote access error takes both ends to ERR (9.9.3.1.3) */
			post_rdma(p.a, IBV_WR_RDMA_WRITE, 7, p.mem_a, 64, p.mr_a->lkey,
				  (uintptr_t)p.mem_b, p.mr_b->rkey ^ 0x80);
			post_rdma(p.a, IBV_WR_RDMA_WRITE, 8, p.mem_a, 64, p.mr_a->lkey,
				  (uintptr_t)p.mem_b, p.mr_b->rkey);
			want = 2;
		}
		n = poll_n(p.cq, wc, want, 5000);
		CHECK(n == want, "round %d: %d completions, want %d", r, n, want);
		if (r % 2 && n == want) {
			CHECK(wc[0].wr_id == 7 && wc[0].status == IBV_WC_REM_ACCESS_ERR,
			      "round %d: bad key gave %s", r, ibv_wc_status_str(wc[0].status));
			CHECK(wc[1].wr_id == 8 && wc[1].status == IBV_WC_WR_FLUSH_ERR,
			      "round %d: WR behind it gave %s", r, ibv_wc_status_str(wc[1].status));
		} else {
			for (int i = 0; i < n; i++)
				CHECK(wc[i].status == IBV_WC_WR_FLUSH_ERR, "round %d: %s", r,
				      ibv_wc_status_str(wc[i].status));
		}
		flushed_total += n;
		CHECK(qp_state(p.a) == IBV_QPS_ERR, "round %d: a is not in ERR", r);
		/* the responder side of a remote error is in ERR too; wait for it */
		if (r % 2) {
			uint64_t end = now_ns() + NSEC;

			while (qp_state(p.b) != IBV_QPS_ERR && now_ns() < end)
				usleep(1000);
			CHECK(qp_state(p.b) == IBV_QPS_ERR, "round %d: b is not in ERR", r);
		}
		if (to_state(p.a, IBV_QPS_RESET) || to_state(p.b, IBV_QPS_RESET) ||
		    qp_state(p.a) != IBV_QPS_RESET || pair_connect(d, &p, 14, 7)) {
			fail("round %d: back through RESET to RTS", r);
			break;
		}
		/* nothing left over from the old connection completes */
		n = poll_n(p.cq, wc, 64, 20);
		CHECK(n == 0, "round %d: %d stale completions after RESET", r, n);
	}
	if (!failures)
		pair_transfer(&p, 999, PAIR_BUF / 2);
	printf("errreset: %d rounds of ERR -> RESET -> RTS and reuse, %d WRs flushed: %s\n",
	       rounds, flushed_total, failures ? "FAIL" : "ok");
	pair_close(&p);
	return failures ? -1 : 0;
}

/* ---- keyguess ---- */

#define VICTIM_MRS 32
#define GUESSES 48

static int test_keyguess(struct dev *d)
{
	struct pair p;
	struct ibv_mr *mrs[VICTIM_MRS];
	uint8_t *bufs[VICTIM_MRS];
	uint32_t known, idx_bits = 12, refused = 0, skipped = 0;
	struct ibv_wc wc;

	if (pair_open(d, &p)) {
		fail("keyguess: setting up the QP pair");
		return -1;
	}
	for (int i = 0; i < VICTIM_MRS; i++) {
		bufs[i] = calloc(1, 4096);
		mrs[i] = ibv_reg_mr(d->pd, bufs[i], 4096,
				    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		if (!mrs[i]) {
			fail("keyguess: reg_mr: %s", strerror(errno));
			return -1;
		}
	}
	/* the attacker was given the key of the last region only */
	known = mrs[VICTIM_MRS - 1]->rkey;
	for (int g = 0; g < GUESSES; g++) {
		/* walk back through the indexes below the known key's: the same
		 * low bits (as if the tag were not random), then no low bits */
		uint32_t idx = (known >> idx_bits) - 1 - (uint32_t)(g / 2);
		uint32_t guess = idx << idx_bits | (g % 2 ? 0 : (known & ((1u << idx_bits) - 1)));
		bool real = false;

		for (int i = 0; i < VICTIM_MRS; i++)
			real |= mrs[i]->rkey == guess;
		if (real) {
			skipped++; /* the random tag happened to repeat: 1 in 4096 */
			continue;
		}
		for (int i = 0; i < VICTIM_MRS && !failures; i++) {
			uint8_t junk[8] = {0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa};

			memcpy(p.mem_a, junk, 8);
			post_rdma(p.a, IBV_WR_RDMA_WRITE, 1, p.mem_a, 8, p.mr_a->lkey,
				  (uintptr_t)bufs[i], guess);
			if (poll_n(p.cq, &wc, 1, 5000) != 1) {
				fail("keyguess: no completion");
				break;
			}
			if (wc.status != IBV_WC_REM_ACCESS_ERR) {
				fail("keyguess: key %#x on region %d: %s", guess, i,
				     ibv_wc_status_str(wc.status));
				break;
			}
			refused++;
			usleep(200); /* let b see its NAK leave */
			if (to_state(p.a, IBV_QPS_RESET) || to_state(p.b, IBV_QPS_RESET) ||
			    pair_connect(d, &p, 14, 7)) {
				fail("keyguess: reconnect");
				break;
			}
			i += 7; /* a few regions per guess is enough */
		}
	}
	for (int i = 0; i < VICTIM_MRS; i++) {
		for (int k = 0; k < 4096; k++)
			if (bufs[i][k]) {
				fail("keyguess: region %d changed at byte %d", i, k);
				break;
			}
		ibv_dereg_mr(mrs[i]);
		free(bufs[i]);
	}
	printf("keyguess: %u WRITEs with keys guessed by index refused (REM_ACCESS_ERR), "
	       "%u guesses were real keys by chance, no byte changed: %s\n",
	       refused, skipped, failures ? "FAIL" : "ok");
	pair_close(&p);
	return failures ? -1 : 0;
}

/* ---- asyncflood ---- */

/* One remote access error on a pair: both QPs raise QP_FATAL; then both are reset. */
static int pair_fail_once(struct dev *d, struct pair *p)
{
	struct ibv_wc wc;
	uint64_t end;

	post_rdma(p->a, IBV_WR_RDMA_WRITE, 1, p->mem_a, 8, p->mr_a->lkey, (uintptr_t)p->mem_b,
		  p->mr_b->rkey ^ 0x40);
	if (poll_n(p->cq, &wc, 1, 5000) != 1 || wc.status != IBV_WC_REM_ACCESS_ERR) {
		fail("asyncflood: the bad WRITE did not fail as it should");
		return -1;
	}
	end = now_ns() + NSEC;
	while (qp_state(p->b) != IBV_QPS_ERR && now_ns() < end)
		usleep(100);
	if (to_state(p->a, IBV_QPS_RESET) || to_state(p->b, IBV_QPS_RESET) ||
	    pair_connect(d, p, 14, 7)) {
		fail("asyncflood: reconnect");
		return -1;
	}
	return 0;
}

static int test_asyncflood(struct dev *d, int rounds)
{
	struct pair p1, p2;
	uint64_t t0;

	if (pair_open(d, &p1) || pair_open(d, &p2)) {
		fail("asyncflood: setting up");
		return -1;
	}
	/* the second pair's events first: they must survive the first pair's destruction */
	for (int r = 0; r < rounds / 2 && !failures; r++)
		pair_fail_once(d, &p2);
	for (int r = 0; r < rounds && !failures; r++)
		pair_fail_once(d, &p1);
	if (failures)
		return -1;
	t0 = now_ns();
	alarm(20); /* a destroy that waits for events nobody will acknowledge hangs */
	pair_close(&p1);
	pair_close(&p2);
	alarm(600);
	printf("asyncflood: %d QP errors (events never read), four QPs destroyed in %.1f ms: ok\n",
	       3 * rounds, (double)(now_ns() - t0) / 1e6);
	return 0;
}

/* ---- cycles ---- */

struct usage {
	size_t heap;  /* malloc bytes in use */
	int fds;
	int threads;
	int files;    /* in the run directory */
	long rss_kb;
};

static int count_dir(const char *path, bool recurse)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char sub[4096];

		if (e->d_name[0] == '.')
			continue;
		n++;
		if (recurse && e->d_type == DT_DIR) {
			snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
			n += count_dir(sub, true);
		}
	}
	closedir(d);
	return n;
}

static void usage_now(struct usage *u)
{
	struct mallinfo2 mi = mallinfo2();
	FILE *f = fopen("/proc/self/statm", "r");
	long pages = 0, rss = 0;

	u->heap = mi.uordblks + mi.hblkhd;
	u->fds = count_dir("/proc/self/fd", false);
	u->threads = count_dir("/proc/self/task", false);
	u->files = run_dir ? count_dir(run_dir, true) : 0;
	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	u->rss_kb = rss * (sysconf(_SC_PAGESIZE) / 1024);
}

/* One of everything, used a little, then gone. */
static int one_cycle(struct dev *d, unsigned i)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(d->ctx);
	struct ibv_pd *pd = ibv_alloc_pd(d->ctx);
	struct ibv_cq *cq = ch ? ibv_create_cq(d->ctx, 64, NULL, ch, 0) : NULL;
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 8, .max_sge = 1}};
	struct ibv_srq *srq = pd ? ibv_create_srq(pd, &sa) : NULL;
	struct ibv_ah_attr aa = {.is_global = 1, .port_num = 1};
	struct ibv_ah *ah;
	struct ibv_mr *mr;
	struct ibv_qp *a, *b;
	struct ibv_wc wc[4];
	struct dev dd = *d;
	uint8_t *buf = malloc(8192);
	int ok = -1;

	aa.grh.dgid = d->gid;
	aa.grh.sgid_index = (uint8_t)gid_idx;
	ah = pd ? ibv_create_ah(pd, &aa) : NULL;
	mr = pd ? ibv_reg_mr(pd, buf, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) : NULL;
	if (!ch || !pd || !cq || !srq || !ah || !mr || !buf)
		goto out;
	dd.pd = pd;
	a = make_qp(&dd, cq, NULL, 8, 1, 32);
	b = make_qp(&dd, cq, srq, 8, 1, 32);
	if (a && b && !connect_qp(&dd, a, b->qp_num, i, i + 7, 14, 7) &&
	    !connect_qp(&dd, b, a->qp_num, i + 7, i, 14, 7)) {
		struct ibv_sge s = {(uintptr_t)buf + 4096, 64, mr->lkey};
		struct ibv_recv_wr rw = {.wr_id = 1, .sg_list = &s, .num_sge = 1}, *rbad;
		struct ibv_sge ss = {(uintptr_t)buf, 64, mr->lkey};
		struct ibv_send_wr sw = {.wr_id = 2, .sg_list = &ss, .num_sge = 1,
					 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED}, *sbad;
		struct ibv_cq *ev_cq;
		void *ev_ctx;

		ibv_req_notify_cq(cq, 0);
		memset(buf, (int)(i & 0x7f), 64);
		if (!ibv_post_srq_recv(srq, &rw, &rbad) && !ibv_post_send(a, &sw, &sbad) &&
		    !ibv_get_cq_event(ch, &ev_cq, &ev_ctx)) {
			ibv_ack_cq_events(ev_cq, 1);
			if (poll_n(cq, wc, 2, 5000) == 2 && !wc[0].status && !wc[1].status &&
			    buf[4096 + 63] == (uint8_t)(i & 0x7f))
				ok = 0;
		}
	}
	if (a)
		ibv_destroy_qp(a);
	if (b)
		ibv_destroy_qp(b);
out:
	if (mr)
		ibv_dereg_mr(mr);
	if (ah)
		ibv_destroy_ah(ah);
	if (srq)
		ibv_destroy_srq(srq);
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	if (ch)
		ibv_destroy_comp_channel(ch);
	free(buf);
	return ok;
}

static int test_cycles(struct dev *d, int rounds)
{
	struct usage base = {0}, end;
	int warm = rounds / 10 < 20 ? 20 : rounds / 10;
	uint64_t t0 = now_ns();

	for (int i = 0; i < rounds; i++) {
		if (i && i % 100 == 0) {
			/* the whole context too: the port, its threads and files */
			ibv_dealloc_pd(d->pd);
			ibv_close_device(d->ctx);
			d->pd = NULL;
			d->ctx = open_ctx();
			if (!d->ctx || !(d->pd = ibv_alloc_pd(d->ctx))) {
				fail("cycles: reopening the device at round %d", i);
				return -1;
			}
		}
		if (one_cycle(d, (unsigned)i)) {
			fail("cycles: round %d did not work", i);
			return -1;
		}
		if (i == warm)
			usage_now(&base);
	}
	usage_now(&end);
	printf("cycles: %d rounds in %.1f s; from round %d to the end: heap %zu -> %zu bytes, "
	       "fds %d -> %d, threads %d -> %d, run-dir files %d -> %d, RSS %ld -> %ld kB\n",
	       rounds, (double)(now_ns() - t0) / NSEC, warm, base.heap, end.heap, base.fds, end.fds,
	       base.threads, end.threads, base.files, end.files, base.rss_kb, end.rss_kb);
	/* a leak of even 16 bytes a round shows as more than the slack here */
	CHECK(end.heap <= base.heap + 16u * (unsigned)(rounds - warm) / 2 + 65536,
	      "heap grew by %zd bytes", (ssize_t)(end.heap - base.heap));
	CHECK(end.fds <= base.fds, "file descriptors grew from %d to %d", base.fds, end.fds);
	CHECK(end.threads <= base.threads, "threads grew from %d to %d", base.threads, end.threads);
	CHECK(end.files <= base.files, "run-dir files grew from %d to %d", base.files, end.files);
	return failures ? -1 : 0;
}

static void on_alarm(int sig)
{
	static const char msg[] = "verbs_faults: FAIL: timed out (a verbs call hangs)\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
}

int main(int argc, char **argv)
{
	struct dev d;
	const char *test;
	int n, rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGALRM, on_alarm);
	alarm(600);
	while (argc > 2 && argv[1][0] == '-') {
		if (!strcmp(argv[1], "-d"))
			dev_name = argv[2];
		else if (!strcmp(argv[1], "-g"))
			gid_idx = atoi(argv[2]);
		else if (!strcmp(argv[1], "--run-dir"))
			run_dir = argv[2];
		else
			break;
		argc -= 2;
		argv += 2;
	}
	if (argc < 2) {
		fprintf(stderr, "usage: verbs_faults [-d DEV] [-g GID] [--run-dir DIR] "
				"limits|counts|busy|errreset N|asyncflood "
				"N|keyguess|conform|retryexc|cycles N\n");
		return 2;
	}
	test = argv[1];
	n = argc > 2 ? atoi(argv[2]) : 0;
	if (dev_open(&d))
		return 77;
	if (!strcmp(test, "limits"))
		rc = test_limits(&d);
	else if (!strcmp(test, "counts"))
		rc = test_counts(&d);
	else if (!strcmp(test, "busy"))
		rc = test_busy(&d);
	else if (!strcmp(test, "errreset"))
		rc = test_errreset(&d, n ? n : 20);
	else if (!strcmp(test, "asyncflood"))
		rc = test_asyncflood(&d, n ? n : 300);
	else if (!strcmp(test, "keyguess"))
		rc = test_keyguess(&d);
	else if (!strcmp(test, "retryexc"))
		rc = test_retryexc(&d);
	else if (!strcmp(test, "conform"))
		rc = test_conform(&d);
	else if (!strcmp(test, "cycles"))
		rc = test_cycles(&d, n ? n : 1000);
	else {
		fprintf(stderr, "verbs_faults: unknown test %s\n", test);
		return 2;
	}
	dev_close(&d);
	if (rc == 77)
		return 77;
	if (rc || failures) {
		printf("%s: FAIL (%d)\n", test, failures);
		return 1;
	}
	printf("%s: PASS\n", test);
	return 0;
}
