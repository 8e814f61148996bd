/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * wr_api_check: the extended posting API (ibv_wr_start ... ibv_wr_complete)
 * through the stock libibverbs, on two RC QPs of one device connected to
 * each other (loopback). Every opcode the device offers moves the right
 * bytes; a builder error posts nothing and says why; a QP created without
 * send_ops_flags has no builders. Exit 0 means pass.
 *   wr_api_check [DEVICE [GID_INDEX]]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define BUF 65536
#define SEND_OPS                                                                                 \
	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND |   \
	 IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |                               \
	 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)

static int failures;

#define CHECK(cond, ...)                                                                         \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			fprintf(stderr, "wr_api_check: FAIL %s:%d: ", __FILE__, __LINE__);      \
			fprintf(stderr, __VA_ARGS__);                                            \
			fprintf(stderr, "\n");                                                   \
			failures++;                                                              \
		}                                                                                \
	} while (0)

struct side {
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static union ibv_gid gid;
static int gid_index = 1;

static void die(const char *what)
{
	fprintf(stderr, "wr_api_check: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void make_side(struct side *s, bool ex)
{
	struct ibv_qp_init_attr_ex a = {0};

	s->buf = aligned_alloc(4096, BUF);
	if (!s->buf)
		die("aligned_alloc");
	memset(s->buf, 0, BUF);
	s->mr = ibv_reg_mr(pd, s->buf, BUF,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC);
	s->cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!s->mr || !s->cq)
		die("reg_mr/create_cq");
	a.qp_type = IBV_QPT_RC;
	a.send_cq = a.recv_cq = s->cq;
	a.cap.max_send_wr = a.cap.max_recv_wr = 32;
	a.cap.max_send_sge = a.cap.max_recv_sge = 2;
	a.cap.max_inline_data = 64;
	a.pd = pd;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	if (ex) {
		a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.send_ops_flags = SEND_OPS;
	}
	s->qp = ibv_create_qp_ex(ctx, &a);
	if (!s->qp)
		die("create_qp_ex");
	s->qpx = ibv_qp_to_qp_ex(s->qp);
}

static void connect_to(struct side *s, uint32_t dqpn)
{
	struct ibv_qp_attr a = {0};

	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_ATOMIC;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					  IBV_QP_ACCESS_FLAGS))
		die("INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = 0x100;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.sgid_index = (uint8_t)gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					  IBV_QP_MIN_RNR_TIMER))
		die("RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x100;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
					  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					  IBV_QP_MAX_QP_RD_ATOMIC))
		die("RTS");
}

/* Wait for one completion on `cq`, with a deadline. */
static struct ibv_wc wait_wc(struct ibv_cq *cq)
{
	struct ibv_wc wc = {0};

	for (int i = 0; i < 2000000; i++) {
		if (ibv_poll_cq(cq, 1, &wc) == 1)
			return wc;
		if (i > 1000)
			usleep(10);
	}
	CHECK(0, "no completion within the deadline");
	wc.status = IBV_WC_GENERAL_ERR;
	return wc;
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct side a, b, plain;
	struct ibv_wc wc;
	struct ibv_recv_wr rwr = {0}, *bad_rwr;
	struct ibv_sge rsge;
	const char *want = argc > 1 ? argv[1] : NULL;
	uint64_t orig;
	int n, err;

	if (argc > 2)
		gid_index = atoi(argv[2]);
	list = ibv_get_device_list(&n);
	if (!list || !n)
		die("no RDMA devices");
	for (int i = 0; i < n && !ctx; i++)
		if (!want || !strcmp(ibv_get_device_name(list[i]), want))
			ctx = ibv_open_device(list[i]);
	if (!ctx || !(pd = ibv_alloc_pd(ctx)) || ibv_query_gid(ctx, 1, gid_index, &gid))
		die("open device");
	make_side(&a, true);
	make_side(&b, true);
	CHECK(a.qpx != NULL, "ibv_qp_to_qp_ex gives NULL for a QP made with send_ops_flags");
	connect_to(&a, b.qp->qp_num);
	connect_to(&b, a.qp->qp_num);

	/* WRITE of two SGEs, then WRITE with immediate into a posted receive */
	fill(a.buf, 3000, 1);
	rsge = (struct ibv_sge){(uintptr_t)b.buf + 32768, 4096, b.mr->lkey};
	rwr.wr_id = 77;
	rwr.sg_list = &rsge;
	rwr.num_sge = 1;
	CHECK(!ibv_post_recv(b.qp, &rwr, &bad_rwr), "post_recv");
	ibv_wr_start(a.qpx);
	a.qpx->wr_id = 1;
	a.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(a.qpx, b.mr->rkey, (uintptr_t)b.buf);
	ibv_wr_set_sge_list(a.qpx, 2,
			    (struct ibv_sge[]){{(uintptr_t)a.buf, 1000, a.mr->lkey},
					       {(uintptr_t)a.buf + 1000, 2000, a.mr->lkey}});
	a.qpx->wr_id = 2;
	ibv_wr_rdma_write_imm(a.qpx, b.mr->rkey, (uintptr_t)b.buf + 4096, htonl(0xabcd));
	ibv_wr_set_sge(a.qpx, a.mr->lkey, (uintptr_t)a.buf, 100);
	err = ibv_wr_complete(a.qpx);
	CHECK(!err, "wr_complete of two WRITEs: %s", strerror(err));
	wc = wait_wc(a.cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 1 && wc.opcode == IBV_WC_RDMA_WRITE,
	      "WRITE completion: status %d wr_id %llu", wc.status, (unsigned long long)wc.wr_id);
	wc = wait_wc(a.cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 2, "WRITE_IMM completion");
	wc = wait_wc(b.cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 77 && (wc.wc_flags & IBV_WC_WITH_IMM) &&
		      ntohl(wc.imm_data) == 0xabcd && wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM,
	      "receive of the WRITE with immediate");
	CHECK(!memcmp(b.buf, a.buf, 3000), "WRITE data");
	CHECK(!memcmp(b.buf + 4096, a.buf, 100), "WRITE_IMM data");

	/* SEND inline, then READ back what the WRITE put there */
	CHECK(!ibv_post_recv(b.qp, &rwr, &bad_rwr), "post_recv");
	ibv_wr_start(a.qpx);
	a.qpx->wr_id = 3;
	a.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_imm(a.qpx, htonl(5));
	ibv_wr_set_inline_data(a.qpx, "inline payload", 15);
	a.qpx->wr_id = 4;
	ibv_wr_rdma_read(a.qpx, b.mr->rkey, (uintptr_t)b.buf);
	ibv_wr_set_sge(a.qpx, a.mr->lkey, (uintptr_t)a.buf + 8192, 3000);
	err = ibv_wr_complete(a.qpx);
	CHECK(!err, "wr_complete of SEND+READ: %s", strerror(err));
	wc = wait_wc(a.cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 3 && wc.opcode == IBV_WC_SEND, "SEND");
	wc = wait_wc(a.cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 4 && wc.opcode == IBV_WC_RDMA_READ &&
		      wc.byte_len == 3000,
	      "READ completion");
	CHECK(!memcmp(a.buf + 8192, a.buf, 3000), "READ data");
	wc = wait_wc(b.cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.byte_len == 15 &&
		      !memcmp(b.buf + 32768, "inline payload", 15),
	      "inline SEND received");

	/* atomics on a counter in b */
	memcpy(b.buf + 16384, &(uint64_t){40}, 8);
	ibv_wr_start(a.qpx);
	a.qpx->wr_id = 5;
	a.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_fetch_add(a.qpx, b.mr->rkey, (uintptr_t)b.buf + 16384, 2);
	ibv_wr_set_sge(a.qpx, a.mr->lkey, (uintptr_t)a.buf + 20000, 8);
	a.qpx->wr_id = 6;
	ibv_wr_atomic_cmp_swp(a.qpx, b.mr->rkey, (uintptr_t)b.buf + 16384, 42, 100);
	ibv_wr_set_sge(a.qpx, a.mr->lkey, (uintptr_t)a.buf + 20008, 8);
	err = ibv_wr_complete(a.qpx);
	CHECK(!err, "wr_complete of atomics: %s", strerror(err));
	wc = wait_wc(a.cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_FETCH_ADD, "FETCH_ADD");
	wc = wait_wc(a.cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_COMP_SWAP, "CMP_SWP");
	memcpy(&orig, a.buf + 20000, 8);
	CHECK(orig == 40, "FETCH_ADD returned %llu, want 40", (unsigned long long)orig);
	memcpy(&orig, a.buf + 20008, 8);
	CHECK(orig == 42, "CMP_SWP returned %llu, want 42", (unsigned long long)orig);
	memcpy(&orig, b.buf + 16384, 8);
	CHECK(orig == 100, "counter is %llu, want 100", (unsigned long long)orig);

	/* a bad request posts nothing, not even the good one before it */
	ibv_wr_start(a.qpx);
	a.qpx->wr_id = 8;
	ibv_wr_rdma_write(a.qpx, b.mr->rkey, (uintptr_t)b.buf);
	ibv_wr_set_sge(a.qpx, a.mr->lkey, (uintptr_t)a.buf, 8);
	ibv_wr_atomic_fetch_add(a.qpx, b.mr->rkey, (uintptr_t)b.buf + 16384, 1);
	ibv_wr_set_sge(a.qpx, a.mr->lkey, (uintptr_t)a.buf, 16); /* atomics need 8 bytes */
	err = ibv_wr_complete(a.qpx);
	CHECK(err == EINVAL, "a 16-byte atomic: wr_complete gives %d, want EINVAL", err);
	usleep(100000);
	CHECK(ibv_poll_cq(a.cq, 1, &wc) == 0, "a request of a failed batch completed");
	/* an opcode not asked for at creation, and wr_abort */
	ibv_wr_start(a.qpx);
	ibv_wr_send_inv(a.qpx, 1234);
	err = ibv_wr_complete(a.qpx);
	CHECK(err == EINVAL, "SEND_WITH_INV not in send_ops_flags: %d, want EINVAL", err);
	ibv_wr_start(a.qpx);
	ibv_wr_send(a.qpx);
	ibv_wr_set_sge(a.qpx, a.mr->lkey, (uintptr_t)a.buf, 8);
	ibv_wr_abort(a.qpx);
	usleep(100000);
	CHECK(ibv_poll_cq(a.cq, 1, &wc) == 0, "an aborted request completed");

	/* without send_ops_flags there is no extended QP */
	make_side(&plain, false);
	CHECK(plain.qpx == NULL, "ibv_qp_to_qp_ex gives a QP without send_ops_flags");

	if (failures) {
		fprintf(stderr, "wr_api_check: %d failures\n", failures);
		return 1;
	}
	printf("wr_api: PASS: WRITE (2 SGEs), WRITE_IMM, inline SEND_IMM, READ, FETCH_ADD, CMP_SWP "
	       "through ibv_wr_*; a bad batch and an aborted one post nothing\n");
	return 0;
}
