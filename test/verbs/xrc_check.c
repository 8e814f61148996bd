/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * xrc_check: XRC (IBTA annex A14) through the stock libibverbs, on one
 * device (loopback): XRC domains shared by inode within a process, with
 * O_CREAT and O_EXCL as the kernel answers them; XRC SRQs and their numbers;
 * an XRC_SEND QP sending SEND, WRITE and, through the ibv_wr_* API
 * (ibv_wr_set_xrc_srqn), SEND to the SRQ it names behind an XRC_RECV QP;
 * neither XRC QP takes ibv_post_recv; a domain in use cannot be closed by
 * its last handle; an SRQ of another domain is refused (REM_INV_REQ_ERR).
 * Exit 0 means pass.
 *   xrc_check [DEVICE [GID_INDEX]]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_util.h"

#define BUF 65536

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static union ibv_gid gid;
static int gid_index = 1;

static struct ibv_xrcd *open_xrcd(int fd, int oflags)
{
	struct ibv_xrcd_init_attr a = {
	    .comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
	    .fd = fd,
	    .oflags = oflags,
	};

	return ibv_open_xrcd(ctx, &a);
}

static struct ibv_srq *xrc_srq(struct ibv_xrcd *xrcd, struct ibv_cq *cq)
{
	struct ibv_srq_init_attr_ex a = {0};

	a.attr.max_wr = 16;
	a.attr.max_sge = 1;
	a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ |
		      IBV_SRQ_INIT_ATTR_PD;
	a.srq_type = IBV_SRQT_XRC;
	a.xrcd = xrcd;
	a.cq = cq;
	a.pd = pd;
	return ibv_create_srq_ex(ctx, &a);
}

static void modify(struct ibv_qp *qp, uint32_t dqpn)
{
	/* RC's masks on both halves, as perftest passes them: each ignores the other's */
	vtest_connect_rc(qp, dqpn, &gid, gid_index, 0x42, IBV_ACCESS_REMOTE_WRITE);
}

static void srq_recv(struct ibv_srq *srq, struct ibv_mr *mr, uint8_t *at, uint64_t wr_id)
{
	struct ibv_sge sge = {(uintptr_t)at, 4096, mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1}, *bad;

	CHECK(!ibv_post_srq_recv(srq, &wr, &bad), "post_srq_recv");
}

static int xrc_post(struct ibv_qp *qp, enum ibv_wr_opcode op, struct ibv_mr *mr, uint8_t *from,
		    uint32_t len, uint32_t srqn, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = {(uintptr_t)from, len, mr->lkey};
	struct ibv_send_wr wr = {0}, *bad;

	wr.wr_id = op;
	wr.opcode = op;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.qp_type.xrc.remote_srqn = srqn;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

int main(int argc, char **argv)
{
	struct ibv_device_attr_ex dev_attr;
	struct ibv_xrcd *x1, *x1b, *x2;
	struct ibv_srq *s1, *s2;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *ini, *tgt;
	struct ibv_qp_ex *qpx;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	struct ibv_recv_wr rwr = {0}, *bad_rwr;
	char path[] = "/tmp/xrc_check.XXXXXX", other[] = "/tmp/xrc_check.XXXXXX";
	const char *want = argc > 1 ? argv[1] : NULL;
	uint32_t n1, n2;
	uint8_t *buf;
	int fd, fd2, err;

	vtest_name = "xrc_check";
	if (argc > 2)
		gid_index = atoi(argv[2]);
	ctx = vtest_open_device(want);
	if (!(pd = ibv_alloc_pd(ctx)) || ibv_query_gid(ctx, 1, gid_index, &gid))
		vtest_die("open device");
	CHECK(!ibv_query_device_ex(ctx, NULL, &dev_attr) &&
		  (dev_attr.orig_attr.device_cap_flags & IBV_DEVICE_XRC),
	      "IBV_DEVICE_XRC not advertised");
	buf = aligned_alloc(4096, BUF);
	if (!buf)
		vtest_die("aligned_alloc");
	memset(buf, 0, BUF);
	mr = ibv_reg_mr(pd, buf, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	scq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	rcq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!mr || !scq || !rcq)
		vtest_die("reg_mr/create_cq");

	/* domains: one per inode, counted; O_EXCL and a missing O_CREAT refused */
	fd = mkstemp(path);
	fd2 = mkstemp(other);
	if (fd < 0 || fd2 < 0)
		vtest_die("mkstemp");
	x1 = open_xrcd(fd, O_CREAT);
	x1b = open_xrcd(fd, O_CREAT);
	x2 = open_xrcd(-1, 0);
	if (!x1 || !x1b || !x2)
		vtest_die("open_xrcd");
	errno = 0;
	CHECK(!open_xrcd(fd, O_CREAT | O_EXCL) && errno == EINVAL,
	      "O_EXCL on an open domain: errno %d, want EINVAL", errno);
	errno = 0;
	CHECK(!open_xrcd(fd2, 0) && errno == EINVAL,
	      "a file with no domain, no O_CREAT: errno %d, want EINVAL", errno);

	/* SRQ 1 through the second handle, the target through the first: one domain */
	s1 = xrc_srq(x1b, rcq);
	s2 = xrc_srq(x2, rcq);
	if (!s1 || !s2)
		vtest_die("create_srq_ex XRC");
	CHECK(!ibv_get_srq_num(s1, &n1) && !ibv_get_srq_num(s2, &n2) && n1 && n2 && n1 != n2,
	      "ibv_get_srq_num: %u and %u", n1, n2);
	{
		struct ibv_qp_init_attr_ex a = {0};

		a.qp_type = IBV_QPT_XRC_SEND;
		a.send_cq = scq;
		a.cap.max_send_wr = 16;
		a.cap.max_send_sge = 1;
		a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.pd = pd;
		a.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE;
		ini = ibv_create_qp_ex(ctx, &a);
		memset(&a, 0, sizeof(a));
		a.qp_type = IBV_QPT_XRC_RECV;
		a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
		a.xrcd = x1;
		tgt = ibv_create_qp_ex(ctx, &a);
		if (!ini || !tgt)
			vtest_die("create_qp_ex XRC");
	}
	modify(ini, tgt->qp_num);
	modify(tgt, ini->qp_num);
	CHECK(ibv_post_recv(tgt, &rwr, &bad_rwr) == EINVAL, "post_recv on XRC_RECV accepted");
	CHECK(ibv_post_recv(ini, &rwr, &bad_rwr) == EINVAL, "post_recv on XRC_SEND accepted");

	/* SEND into SRQ 1 behind the target */
	for (int i = 0; i < 64; i++)
		buf[i] = (uint8_t)(i + 1);
	srq_recv(s1, mr, buf + 8192, 100);
	srq_recv(s1, mr, buf + 12288, 101);
	CHECK(!xrc_post(ini, IBV_WR_SEND, mr, buf, 64, n1, 0, 0), "post_send");
	wc = vtest_wait_wc(scq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND, "SEND: status %s",
	      ibv_wc_status_str(wc.status));
	wc = vtest_wait_wc(rcq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 100 && wc.byte_len == 64 &&
		  wc.qp_num == tgt->qp_num && wc.opcode == IBV_WC_RECV,
	      "receive: status %s wr_id %llu byte_len %u qp_num %#x (target %#x)",
	      ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id, wc.byte_len, wc.qp_num,
	      tgt->qp_num);
	CHECK(!memcmp(buf + 8192, buf, 64), "SEND data");

	/* WRITE, naming the SRQ for its PD */
	CHECK(!xrc_post(ini, IBV_WR_RDMA_WRITE, mr, buf, 64, n1, (uintptr_t)buf + 16384, mr->rkey),
	      "post WRITE");
	wc = vtest_wait_wc(scq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_WRITE, "WRITE: status %s",
	      ibv_wc_status_str(wc.status));
	CHECK(!memcmp(buf + 16384, buf, 64), "WRITE data");

	/* the ibv_wr_* API names the SRQ with ibv_wr_set_xrc_srqn */
	qpx = ibv_qp_to_qp_ex(ini);
	ibv_wr_start(qpx);
	qpx->wr_id = 7;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qpx);
	ibv_wr_set_xrc_srqn(qpx, n1);
	ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)buf + 32, 32);
	err = ibv_wr_complete(qpx);
	CHECK(!err, "wr_complete: %s", strerror(err));
	wc = vtest_wait_wc(scq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 7, "wr API SEND: status %s",
	      ibv_wc_status_str(wc.status));
	wc = vtest_wait_wc(rcq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 101 && wc.byte_len == 32,
	      "wr API receive: status %s", ibv_wc_status_str(wc.status));
	CHECK(!memcmp(buf + 12288, buf + 32, 32), "wr API SEND data");

	/* one handle closes; the last cannot while the SRQ and the target use the domain */
	CHECK(!ibv_close_xrcd(x1), "close_xrcd of one of two handles");
	CHECK(ibv_close_xrcd(x1b) == EBUSY, "close_xrcd of the last handle in use: not EBUSY");

	/* an SRQ of another domain: NAK invalid request, the send fails */
	srq_recv(s2, mr, buf + 20480, 200);
	CHECK(!xrc_post(ini, IBV_WR_SEND, mr, buf, 64, n2, 0, 0), "post_send");
	wc = vtest_wait_wc(scq);
	CHECK(wc.status == IBV_WC_REM_INV_REQ_ERR, "SEND to another domain's SRQ: status %s",
	      ibv_wc_status_str(wc.status));

	CHECK(!ibv_destroy_qp(ini) && !ibv_destroy_qp(tgt), "destroy_qp");
	CHECK(!ibv_destroy_srq(s1) && !ibv_destroy_srq(s2), "destroy_srq");
	CHECK(!ibv_close_xrcd(x1b) && !ibv_close_xrcd(x2), "close_xrcd");
	CHECK(!ibv_destroy_cq(scq) && !ibv_destroy_cq(rcq), "destroy_cq");
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	close(fd);
	close(fd2);
	unlink(path);
	unlink(other);
	free(buf);
	if (vtest_failures)
		fprintf(stderr, "xrc_check: %d checks failed\n", vtest_failures);
	else
		printf("xrc_check: all passed\n");
	return vtest_failures ? 1 : 0;
}
