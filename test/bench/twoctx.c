/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Two contexts of one device in one process reach each other, as they do on
 * a NIC (docs/shared-device.md, sections 1 and 5, stage 1), with the stock
 * libibverbs only:
 *   twoctx [-d DEVICE] [-D DEVICE_B] [-g GID_INDEX] [-m ud|rc|all]
 * opens DEVICE (default uroce0) twice and, through GID_INDEX of the device
 * (default 1, the interface's IPv4 address as `uroce link add` sets it up)
 * on both ends:
 *   ud  a UD QP in each context; context A sends one 64-byte datagram to B's QP;
 *   rc  an RC QP in each, connected to each other; A sends one 64-byte SEND.
 * A test passes when B receives the message, intact, within 2 s (and, for
 * RC, A's send completes successfully). Exits 0 if every test passed, 1 if
 * one did not or the second context could not be opened, 2 if anything
 * else could not be set up.
 * -D opens context B on another device instead: the control, two devices
 * on the two ends of a veth in one namespace, which passes today.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MSG 64
#define GRH 40 /* a UD receive starts with the 40-byte GRH area */
#define WAIT_MS 2000
#define QKEY 0x11111111u

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	union ibv_gid gid;
	enum ibv_mtu mtu;
	uint8_t buf[2 * (GRH + MSG)]; /* receive slot, then send slot */
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int setup_fail(const char *what)
{
	fprintf(stderr, "twoctx: %s: %s\n", what, strerror(errno));
	return -1;
}

/* 0, 1 if ibv_open_device itself failed, -1 if something after it did. */
static int end_open(struct end *e, struct ibv_device *dev, int gid_index)
{
	struct ibv_port_attr pa;

	e->ctx = ibv_open_device(dev);
	if (!e->ctx) {
		setup_fail("ibv_open_device");
		return 1;
	}
	if (ibv_query_port(e->ctx, 1, &pa) || ibv_query_gid(e->ctx, 1, gid_index, &e->gid))
		return setup_fail("ibv_query_port/ibv_query_gid");
	e->mtu = pa.active_mtu;
	e->pd = ibv_alloc_pd(e->ctx);
	e->cq = e->pd ? ibv_create_cq(e->ctx, 16, NULL, NULL, 0) : NULL;
	e->mr = e->cq ? ibv_reg_mr(e->pd, e->buf, sizeof(e->buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!e->mr)
		return setup_fail("ibv_alloc_pd/ibv_create_cq/ibv_reg_mr");
	return 0;
}

static int qp_create(struct end *e, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr ia = {
	    .send_cq = e->cq,
	    .recv_cq = e->cq,
	    .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
	    .qp_type = type,
	    .sq_sig_all = 1,
	};
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY};

	e->qp = ibv_create_qp(e->pd, &ia);
	if (!e->qp)
		return setup_fail("ibv_create_qp");
	if (type == IBV_QPT_UD) {
		/* UD: INIT takes the Q_Key, RTR nothing more, RTS the SQ PSN (table 91) */
		if (ibv_modify_qp(e->qp, &a,
				  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
			return setup_fail("UD QP to INIT");
		a.qp_state = IBV_QPS_RTR;
		if (ibv_modify_qp(e->qp, &a, IBV_QP_STATE))
			return setup_fail("UD QP to RTR");
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = 0;
		if (ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
			return setup_fail("UD QP to RTS");
		return 0;
	}
	a.qp_access_flags = 0;
	if (ibv_modify_qp(e->qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return setup_fail("RC QP to INIT");
	return 0;
}

/* RC: RTR towards the peer's QP through the device's own GID, then RTS.
 * Timeout 12 (16.8 ms) with 7 retries gives up well inside WAIT_MS. */
static int rc_connect(struct end *e, const struct end *peer, int gid_index)
{
	struct ibv_qp_attr a = {
	    .qp_state = IBV_QPS_RTR,
	    .path_mtu = e->mtu,
	    .dest_qp_num = peer->qp->qp_num,
	    .rq_psn = 0,
	    .max_dest_rd_atomic = 1,
	    .min_rnr_timer = 12,
	    .ah_attr = {.is_global = 1,
			.port_num = 1,
			.grh = {.dgid = peer->gid,
				.sgid_index = (uint8_t)gid_index,
				.hop_limit = 64}},
	};

	if (ibv_modify_qp(e->qp, &a,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return setup_fail("RC QP to RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 12;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(e->qp, &a,
			  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			      IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		return setup_fail("RC QP to RTS");
	return 0;
}

/* One completion from e's CQ before `deadline` (ms), or 0. */
static int poll_until(struct end *e, struct ibv_wc *wc, double deadline)
{
	do {
		int n = ibv_poll_cq(e->cq, 1, wc);

		if (n)
			return n < 0 ? -1 : 1;
	} while (now_ms() < deadline);
	return 0;
}

static void qp_destroy(struct end *e)
{
	if (e->qp)
		ibv_destroy_qp(e->qp);
	e->qp = NULL;
}

/*
 * A sends MSG bytes to B; returns 1 if B received them intact within
 * WAIT_MS (and A's send completed successfully), 0 if not, -1 on a setup
 * failure.
 */
static int run_one(struct end *a, struct end *b, enum ibv_qp_type type, int gid_index)
{
	const char *name = type == IBV_QPT_UD ? "ud" : "rc";
	uint32_t off = type == IBV_QPT_UD ? GRH : 0;
	uint8_t *rx = b->buf, *tx = a->buf + GRH + MSG;
	struct ibv_sge rsge = {.addr = (uintptr_t)rx, .length = GRH + MSG, .lkey = b->mr->lkey};
	struct ibv_sge ssge = {.addr = (uintptr_t)tx, .length = MSG, .lkey = a->mr->lkey};
	struct ibv_recv_wr rwr = {.wr_id = 1, .sg_list = &rsge, .num_sge = 1}, *rbad;
	struct ibv_send_wr swr = {.wr_id = 2,
				  .sg_list = &ssge,
				  .num_sge = 1,
				  .opcode = IBV_WR_SEND},
			   *sbad;
	struct ibv_ah_attr aa = {
	    .is_global = 1,
	    .port_num = 1,
	    .grh = {.dgid = b->gid, .sgid_index = (uint8_t)gid_index, .hop_limit = 64},
	};
	struct ibv_wc wc = {0}, swc = {0};
	struct ibv_ah *ah = NULL;
	bool got_send = false, got_recv = false, intact = false;
	double t0, deadline, rx_ms = -1;
	int ok = -1, n;

	if (qp_create(a, type) || qp_create(b, type))
		goto out;
	if (type == IBV_QPT_RC && (rc_connect(a, b, gid_index) || rc_connect(b, a, gid_index)))
		goto out;
	if (type == IBV_QPT_UD) {
		ah = ibv_create_ah(a->pd, &aa);
		if (!ah) {
			setup_fail("ibv_create_ah");
			goto out;
		}
		swr.wr.ud.ah = ah;
		swr.wr.ud.remote_qpn = b->qp->qp_num;
		swr.wr.ud.remote_qkey = QKEY;
	}
	for (int i = 0; i < MSG; i++)
		tx[i] = (uint8_t)(0x5a ^ i);
	memset(rx, 0xee, GRH + MSG);
	errno = ibv_post_recv(b->qp, &rwr, &rbad);
	if (errno) {
		setup_fail("ibv_post_recv");
		goto out;
	}
	t0 = now_ms();
	deadline = t0 + WAIT_MS;
	errno = ibv_post_send(a->qp, &swr, &sbad);
	if (errno) {
		setup_fail("ibv_post_send");
		goto out;
	}
	/* both CQs until the receive and the send completion are in, or time is up */
	while ((!got_recv || !got_send) && now_ms() < deadline) {
		n = got_recv ? 0 : poll_until(b, &wc, now_ms());
		if (n > 0) {
			got_recv = true;
			rx_ms = now_ms() - t0;
			intact = wc.status == IBV_WC_SUCCESS && wc.byte_len == off + MSG &&
				 !memcmp(rx + off, tx, MSG) &&
				 (type != IBV_QPT_UD || wc.src_qp == a->qp->qp_num);
		}
		n = got_send ? 0 : poll_until(a, &swc, now_ms());
		if (n > 0)
			got_send = true;
	}
	printf("%s: QP %#x (context A) to QP %#x (context B): send %s; ", name, a->qp->qp_num,
	       b->qp->qp_num,
	       got_send ? ibv_wc_status_str(swc.status) : "not completed within 2 s");
	if (!got_recv)
		printf("NOT received within %d ms\n", WAIT_MS);
	else if (!intact)
		printf("received after %.3f ms, but damaged (status %s, byte_len %u, src_qp %#x)\n",
		       rx_ms, ibv_wc_status_str(wc.status), wc.byte_len, wc.src_qp);
	else
		printf("received intact after %.3f ms\n", rx_ms);
	ok = got_recv && intact && got_send && swc.status == IBV_WC_SUCCESS;
out:
	if (ah)
		ibv_destroy_ah(ah);
	qp_destroy(a);
	qp_destroy(b);
	return ok;
}

static void end_close(struct end *e)
{
	if (e->mr)
		ibv_dereg_mr(e->mr);
	if (e->cq)
		ibv_destroy_cq(e->cq);
	if (e->pd)
		ibv_dealloc_pd(e->pd);
	if (e->ctx)
		ibv_close_device(e->ctx);
}

int main(int argc, char **argv)
{
	const char *name = "uroce0", *name_b = NULL, *mode = "all";
	static struct end a, b;
	struct ibv_device **list;
	struct ibv_device *dev = NULL, *dev_b = NULL;
	int gid_index = 1, opt, passed = 0, tests = 0, rc = 2, r;
	char gid[INET6_ADDRSTRLEN], gid_b[INET6_ADDRSTRLEN];

	while ((opt = getopt(argc, argv, "d:D:g:m:")) != -1) {
		switch (opt) {
		case 'd':
			name = optarg;
			break;
		case 'D':
			name_b = optarg;
			break;
		case 'g':
			gid_index = atoi(optarg);
			break;
		case 'm':
			mode = optarg;
			break;
		default:
			goto usage;
		}
	}
	if (optind != argc || (strcmp(mode, "ud") && strcmp(mode, "rc") && strcmp(mode, "all")))
		goto usage;
	list = ibv_get_device_list(NULL);
	if (!name_b)
		name_b = name;
	for (int i = 0; list && list[i]; i++) {
		if (!strcmp(ibv_get_device_name(list[i]), name))
			dev = list[i];
		if (!strcmp(ibv_get_device_name(list[i]), name_b))
			dev_b = list[i];
	}
	if (!dev || !dev_b) {
		fprintf(stderr, "twoctx: no device %s\n", dev ? name_b : name);
		return 2;
	}
	if (end_open(&a, dev, gid_index))
		goto out;
	r = end_open(&b, dev_b, gid_index);
	if (r > 0 && dev_b == dev) {
		/* the device refuses a second context: what this checks, failed */
		printf("twoctx: a second context of %s cannot be opened\n", name);
		rc = 1;
	}
	if (r)
		goto out;
	inet_ntop(AF_INET6, a.gid.raw, gid, sizeof(gid));
	inet_ntop(AF_INET6, b.gid.raw, gid_b, sizeof(gid_b));
	printf("twoctx: context A on %s, B on %s, GID index %d (%s, %s)\n", name, name_b, gid_index,
	       gid, gid_b);
	for (int t = 0; t < 2; t++) {
		enum ibv_qp_type type = t ? IBV_QPT_RC : IBV_QPT_UD;

		if (strcmp(mode, "all") && strcmp(mode, t ? "rc" : "ud"))
			continue;
		r = run_one(&a, &b, type, gid_index);
		if (r < 0)
			goto out;
		tests++;
		passed += r;
	}
	printf("twoctx: %d of %d passed\n", passed, tests);
	rc = passed == tests ? 0 : 1;
out:
	end_close(&a);
	end_close(&b);
	ibv_free_device_list(list);
	return rc;
usage:
	fprintf(stderr, "usage: twoctx [-d DEVICE] [-D DEVICE_B] [-g GID_INDEX] [-m ud|rc|all]\n");
	return 2;
}
