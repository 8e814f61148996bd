/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon_gone DEVICE PEER_IPV4 [SECONDS]: what a program holding a device
 * hears when the device goes away under it, as on a RoCE NIC that loses
 * its link and then dies (test/net/daemongone.sh; docs/daemon.md).
 *
 * It connects an RC QP toward PEER_IPV4 (to a QP number nobody holds, with
 * timeout 0: IBTA's infinite wait, so its SENDs stay outstanding, never
 * retried out), posts 8 SENDs and 16 receives, then reads async events,
 * printing each one with the time and the port's state:
 *  - on IBV_EVENT_PORT_ERR the port must not be ACTIVE, on
 *    IBV_EVENT_PORT_ACTIVE it must be;
 *  - on IBV_EVENT_DEVICE_FATAL every outstanding WR must complete with
 *    IBV_WC_WR_FLUSH_ERR, later verbs that need the device must fail with
 *    EIO (posts, query_port, modify_qp, create_cq, alloc_pd, reg_mr), and
 *    destroying everything and closing the device must still succeed.
 * Exits 0 when all of that held, 1 on any failed check or when no
 * DEVICE_FATAL came within SECONDS (default 60). Stock libibverbs only.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "verbs_util.h"

#define NSEND 8
#define NRECV 16
#define MSG 4096
#define NOBODY_QPN 0xfff0f0 /* a number block no program holds */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static enum ibv_port_state port_state(struct ibv_context *ctx)
{
	struct ibv_port_attr pa;

	return ibv_query_port(ctx, 1, &pa) ? (enum ibv_port_state) - 1 : pa.state;
}

/* After DEVICE_FATAL: every WR flushed, within 5 s. */
static void check_flushed(struct ibv_cq *cq)
{
	unsigned got = 0, flushed = 0;
	double until = now_s() + 5;
	struct ibv_wc wc[32];

	while (got < NSEND + NRECV && now_s() < until) {
		int n = ibv_poll_cq(cq, 32, wc);

		CHECK(n >= 0, "poll_cq after DEVICE_FATAL: %d", n);
		for (int i = 0; i < n; i++) {
			got++;
			if (wc[i].status == IBV_WC_WR_FLUSH_ERR)
				flushed++;
			else
				CHECK(0, "wr_id %llu completed with %s, not a flush",
				      (unsigned long long)wc[i].wr_id,
				      ibv_wc_status_str(wc[i].status));
		}
	}
	CHECK(got == NSEND + NRECV, "%u of %u WRs completed after DEVICE_FATAL", got,
	      NSEND + NRECV);
	printf("daemon_gone: %u of %u outstanding WRs flushed (IBV_WC_WR_FLUSH_ERR)\n", flushed,
	       NSEND + NRECV);
}

/* After DEVICE_FATAL: what needs the device fails with EIO. */
static void check_eio(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_qp *qp,
		      struct ibv_mr *mr, char *buf)
{
	struct ibv_sge sge = {(uintptr_t)buf, MSG, mr->lkey};
	struct ibv_send_wr swr = {.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND},
			   *sbad = NULL;
	struct ibv_recv_wr rwr = {.sg_list = &sge, .num_sge = 1}, *rbad = NULL;
	struct ibv_qp_attr qa = {.qp_state = IBV_QPS_RESET};
	struct ibv_port_attr pa;
	struct ibv_cq *cq2;
	struct ibv_pd *pd2;
	struct ibv_mr *mr2;
	int r;

	r = ibv_post_send(qp, &swr, &sbad);
	CHECK(r == EIO && sbad == &swr, "post_send after DEVICE_FATAL: %d (%s)", r, strerror(r));
	r = ibv_post_recv(qp, &rwr, &rbad);
	CHECK(r == EIO && rbad == &rwr, "post_recv after DEVICE_FATAL: %d (%s)", r, strerror(r));
	r = ibv_query_port(ctx, 1, &pa);
	CHECK(r == EIO, "query_port after DEVICE_FATAL: %d (%s)", r, strerror(r));
	r = ibv_modify_qp(qp, &qa, IBV_QP_STATE);
	CHECK(r == EIO, "modify_qp after DEVICE_FATAL: %d (%s)", r, strerror(r));
	errno = 0;
	cq2 = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	CHECK(!cq2 && errno == EIO, "create_cq after DEVICE_FATAL: %p, errno %d", (void *)cq2,
	      errno);
	errno = 0;
	pd2 = ibv_alloc_pd(ctx);
	CHECK(!pd2 && errno == EIO, "alloc_pd after DEVICE_FATAL: %p, errno %d", (void *)pd2,
	      errno);
	errno = 0;
	mr2 = ibv_reg_mr(pd, buf, MSG, IBV_ACCESS_LOCAL_WRITE);
	CHECK(!mr2 && errno == EIO, "reg_mr after DEVICE_FATAL: %p, errno %d", (void *)mr2, errno);
	printf("daemon_gone: post_send, post_recv, query_port, modify_qp, create_cq, alloc_pd, "
	       "reg_mr: EIO\n");
}

/*
 * INIT, RTR, RTS toward NOBODY_QPN at dgid with timeout 0: the requester
 * waits for its ACK forever (IBTA 9.7.6.1.1), so its SENDs stay
 * outstanding until something else ends them.
 */
static void connect_forever(struct ibv_qp *qp, const union ibv_gid *dgid)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};
	int r;

	if ((r = ibv_modify_qp(
		 qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)))
		goto fail;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = NOBODY_QPN;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *dgid;
	a.ah_attr.grh.sgid_index = 1; /* the device's IPv4 address */
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if ((r = ibv_modify_qp(qp, &a,
			       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				   IBV_QP_MIN_RNR_TIMER)))
		goto fail;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 0;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	if (!(r = ibv_modify_qp(qp, &a,
				IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				    IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC)))
		return;
fail:
	errno = r;
	vtest_die("connect");
}

int main(int argc, char **argv)
{
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_qp_init_attr ia = {0};
	union ibv_gid dgid = {0};
	struct in_addr peer;
	double t0, limit;
	char *buf;
	bool fatal = false;

	vtest_name = "daemon_gone";
	if (argc < 3 || inet_pton(AF_INET, argv[2], &peer) != 1) {
		fprintf(stderr, "usage: daemon_gone DEVICE PEER_IPV4 [SECONDS]\n");
		return 2;
	}
	limit = argc > 3 ? atof(argv[3]) : 60;
	/* an IPv4-mapped GID: RoCEv2 toward the peer's address */
	dgid.raw[10] = dgid.raw[11] = 0xff;
	memcpy(&dgid.raw[12], &peer, 4);

	ctx = vtest_open_device(argv[1]);
	pd = ibv_alloc_pd(ctx);
	buf = calloc(NSEND + NRECV, MSG);
	if (!pd || !buf)
		vtest_die("alloc_pd");
	mr = ibv_reg_mr(pd, buf, (size_t)(NSEND + NRECV) * MSG, IBV_ACCESS_LOCAL_WRITE);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!mr || !cq)
		vtest_die("reg_mr/create_cq");
	ia.send_cq = ia.recv_cq = cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = NSEND;
	ia.cap.max_recv_wr = NRECV;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.sq_sig_all = 1;
	qp = ibv_create_qp(pd, &ia);
	if (!qp)
		vtest_die("create_qp");
	connect_forever(qp, &dgid);
	for (unsigned i = 0; i < NRECV; i++) {
		struct ibv_sge sge = {(uintptr_t)(buf + (size_t)(NSEND + i) * MSG), MSG, mr->lkey};
		struct ibv_recv_wr wr = {.wr_id = 100 + i, .sg_list = &sge, .num_sge = 1}, *bad;

		if (ibv_post_recv(qp, &wr, &bad))
			vtest_die("post_recv");
	}
	for (unsigned i = 0; i < NSEND; i++) {
		struct ibv_sge sge = {(uintptr_t)(buf + (size_t)i * MSG), MSG, mr->lkey};
		struct ibv_send_wr wr = {.wr_id = i,
					 .sg_list = &sge,
					 .num_sge = 1,
					 .opcode = IBV_WR_SEND},
				   *bad;

		if (ibv_post_send(qp, &wr, &bad))
			vtest_die("post_send");
	}
	printf("daemon_gone: %u SENDs and %u receives outstanding on QP %#x, port %s\n", NSEND,
	       NRECV, qp->qp_num, ibv_port_state_str(port_state(ctx)));
	fflush(stdout);

	t0 = now_s();
	while (!fatal && now_s() - t0 < limit) {
		struct pollfd p = {.fd = ctx->async_fd, .events = POLLIN};
		struct ibv_async_event ev;
		enum ibv_port_state st;

		if (poll(&p, 1, 200) != 1)
			continue;
		if (ibv_get_async_event(ctx, &ev))
			vtest_die("get_async_event");
		ibv_ack_async_event(&ev);
		fatal = ev.event_type == IBV_EVENT_DEVICE_FATAL;
		st = fatal ? IBV_PORT_NOP : port_state(ctx);
		printf("daemon_gone: +%.3f s %s, port %s\n", now_s() - t0,
		       ibv_event_type_str(ev.event_type), fatal ? "-" : ibv_port_state_str(st));
		fflush(stdout);
		if (ev.event_type == IBV_EVENT_PORT_ERR)
			CHECK(st != IBV_PORT_ACTIVE, "port ACTIVE after PORT_ERR");
		if (ev.event_type == IBV_EVENT_PORT_ACTIVE)
			CHECK(st == IBV_PORT_ACTIVE, "port %s after PORT_ACTIVE",
			      ibv_port_state_str(st));
	}
	CHECK(fatal, "no IBV_EVENT_DEVICE_FATAL within %.0f s", limit);
	if (fatal) {
		check_flushed(cq);
		check_eio(ctx, pd, qp, mr, buf);
	}
	CHECK(!ibv_destroy_qp(qp), "destroy_qp");
	CHECK(!ibv_destroy_cq(cq), "destroy_cq");
	CHECK(!ibv_dereg_mr(mr), "dereg_mr");
	CHECK(!ibv_dealloc_pd(pd), "dealloc_pd");
	CHECK(!ibv_close_device(ctx), "close_device");
	free(buf);
	printf("daemon_gone: %s\n", vtest_failures ? "FAILED" : "all held; objects destroyed");
	return vtest_failures ? 1 : 0;
}
