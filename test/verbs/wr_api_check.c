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

#include "verbs_util.h"

#define BUF 65536
#define SEND_OPS                                                                                   \
	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND |    \
	 IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |                                 \
	 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)

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

static void make_side(struct side *s, bool ex)
{
	struct ibv_qp_init_attr_ex a = {0};

	s->buf = aligned_alloc(4096, BUF);
	if (!s->buf)
		vtest_die("aligned_alloc");
	memset(s->buf, 0, BUF);
	s->mr = ibv_reg_mr(pd, s->buf, BUF,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	s->cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!s->mr || !s->cq)
		vtest_die("reg_mr/create_cq");
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
		vtest_die("create_qp_ex");
	s->qpx = ibv_qp_to_qp_ex(s->qp);
}

static void connect_to(struct side *s, uint32_t dqpn)
{
	vtest_connect_rc(s->qp, dqpn, &gid, gid_index, 0x100,
			 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			     IBV_ACCESS_REMOTE_ATOMIC);
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

int main(int argc, char **argv)
{
	struct side a, b, plain;
	struct ibv_wc wc;
	struct ibv_recv_wr rwr = {0}, *bad_rwr;
	struct ibv_sge rsge;
	const char *want = argc > 1 ? argv[1] : NULL;
	uint64_t orig;
	int err;

	vtest_name = "wr_api_check";
	if (argc > 2)
		gid_index = atoi(argv[2]);
	ctx = vtest_open_device(want);
	if (!(pd = ibv_alloc_pd(ctx)) || ibv_query_gid(ctx, 1, gid_index, &gid))
		vtest_die("open device");
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
	wc = vtest_wait_wc(a.cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 1 && wc.opcode == IBV_WC_RDMA_WRITE,
	      "WRITE completion: status %d wr_id %llu", wc.status, (unsigned long long)wc.wr_id);
	wc = vtest_wait_wc(a.cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 2, "WRITE_IMM completion");
	wc = vtest_wait_wc(b.cq);
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
	wc = vtest_wait_wc(a.cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 3 && wc.opcode == IBV_WC_SEND, "SEND");
	wc = vtest_wait_wc(a.cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 4 && wc.opcode == IBV_WC_RDMA_READ &&
		  wc.byte_len == 3000,
	      "READ completion");
	CHECK(!memcmp(a.buf + 8192, a.buf, 3000), "READ data");
	wc = vtest_wait_wc(b.cq);
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
	wc = vtest_wait_wc(a.cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_FETCH_ADD, "FETCH_ADD");
	wc = vtest_wait_wc(a.cq);
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

	if (vtest_failures) {
		fprintf(stderr, "wr_api_check: %d failures\n", vtest_failures);
		return 1;
	}
	printf("wr_api: PASS: WRITE (2 SGEs), WRITE_IMM, inline SEND_IMM, READ, FETCH_ADD, CMP_SWP "
	       "through ibv_wr_*; a bad batch and an aborted one post nothing\n");
	return 0;
}
