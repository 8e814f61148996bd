/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * peer_fanout: one process writes to two others on the same device, and
 * one of them stops reading (SIGSTOP); the writes to the other should go
 * on, as on a NIC. Stock libibverbs only; the processes swap QPNs and
 * GIDs through files in DIR. Run by test/net/fanout.sh.
 *
 *   peer_fanout serve DIR NAME SECONDS   NQP RC QPs whose memory is written
 *   peer_fanout send DIR B C SECONDS     NQP RC QPs to each of B and C
 *
 * The sender keeps 64 WRITEs of 1 MiB outstanding on each QP. When
 * DIR/stopped appears (the script stopped B), it counts the WRITEs to C
 * that complete in the next 3 s; exit 0 if at least 100 did and none to C
 * failed, 1 if not. Its QPs to B wait for ACKs meanwhile (ACK timeout
 * 4.3 s, so they do not fail within the test).
 *
 * It failed while the engine capped the unacknowledged packets of all its
 * QPs together (max_dev_inflight, 1024): the QPs to the stopped process
 * held the whole cap and the QPs to C waited too (0 WRITEs to C in the
 * 3 s). With the cap raised to 1 << 20 by hand, on a 2-core host shared
 * with other jobs: 662 WRITEs to C with the per-destination wait of
 * dataplane/peer_wait.c (commit 328ebc1, since rebased as ec24e2e; 63,716
 * frames for B counted as dp_tx_loopback_drops), 24 with the single FIFO
 * of b743862. The cap is now per peer (transport/peer.c: a GID and a
 * block of QP numbers, so B and C are two peers).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "verbs_util.h"

#define MSG (1u << 20)
#define DEPTH 64
#define GID_INDEX 1
#define WINDOW_NS 3000000000ull
#define NQP 8

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* DIR/NAME, written whole (the reader may be looking). */
static void put(const char *dir, const char *name, const char *text)
{
	char path[512], tmp[520];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) || rename(tmp, path))
		vtest_die(path);
}

/* DIR/NAME once it exists, within 20 s. */
static void get(const char *dir, const char *name, char *buf, size_t len)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	for (int i = 0; i < 2000; i++) {
		FILE *f = fopen(path, "r");

		if (f) {
			bool ok = fgets(buf, (int)len, f) != NULL;

			fclose(f);
			if (ok)
				return;
		}
		usleep(10000);
	}
	errno = ETIMEDOUT;
	vtest_die(path);
}

static bool exists(const char *dir, const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

struct peer_info {
	uint32_t qpn[NQP], rkey;
	uint64_t addr;
	union ibv_gid gid;
};

static void info_text(const struct peer_info *p, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%u %llu ", p->rkey, (unsigned long long)p->addr);

	for (int i = 0; i < 16; i++)
		n += snprintf(buf + n, len - (size_t)n, "%02x", p->gid.raw[i]);
	for (int i = 0; i < NQP; i++)
		n += snprintf(buf + n, len - (size_t)n, " %u", p->qpn[i]);
}

static void info_parse(const char *s, struct peer_info *p)
{
	unsigned long long addr;
	char hex[33];
	int used;

	if (sscanf(s, "%u %llu %32s%n", &p->rkey, &addr, hex, &used) != 3)
		vtest_die("peer info");
	p->addr = addr;
	for (int i = 0; i < 16; i++)
		sscanf(hex + 2 * i, "%2hhx", &p->gid.raw[i]);
	for (int i = 0; i < NQP; i++) {
		int k;

		if (sscanf(s + used, "%u%n", &p->qpn[i], &k) != 1)
			vtest_die("peer info QPNs");
		used += k;
	}
}

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	void *buf;
	union ibv_gid gid;
};

static void end_open(struct end *e)
{
	e->ctx = vtest_open_device("uroce0");
	if (ibv_query_gid(e->ctx, 1, GID_INDEX, &e->gid))
		vtest_die("query_gid");
	e->pd = ibv_alloc_pd(e->ctx);
	e->cq = ibv_create_cq(e->ctx, 2 * NQP * DEPTH, NULL, NULL, 0);
	e->buf = calloc(1, MSG);
	if (!e->pd || !e->cq || !e->buf)
		vtest_die("pd/cq/buffer");
	e->mr = ibv_reg_mr(e->pd, e->buf, MSG, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!e->mr)
		vtest_die("reg_mr");
}

/*
 * INIT, RTR, RTS toward dqpn at dgid: MTU 4096 (fewer, larger frames fill
 * a stopped receiver's socket sooner), and an ACK timeout of 4.3 s, so
 * that the QPs to the stopped process keep their packets in flight (and
 * resend them) through the test instead of failing within half a second.
 */
static void connect_rc(struct ibv_qp *qp, uint32_t dqpn, const union ibv_gid *dgid, unsigned access)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = access};

	if (ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		vtest_die("INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_4096;
	a.dest_qp_num = dqpn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *dgid;
	a.ah_attr.grh.sgid_index = GID_INDEX;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		vtest_die("RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 20;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			      IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
		vtest_die("RTS");
}

static struct ibv_qp *rc_qp(struct end *e)
{
	struct ibv_qp_init_attr ia = {
	    .send_cq = e->cq,
	    .recv_cq = e->cq,
	    .qp_type = IBV_QPT_RC,
	    .cap = {.max_send_wr = DEPTH, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp *qp = ibv_create_qp(e->pd, &ia);

	if (!qp)
		vtest_die("create_qp");
	return qp;
}

static int serve(const char *dir, const char *name, int secs)
{
	struct end e;
	struct ibv_qp *qp[NQP];
	struct peer_info me = {0}, from;
	char text[512], peer_name[128];

	end_open(&e);
	for (int j = 0; j < NQP; j++) {
		qp[j] = rc_qp(&e);
		me.qpn[j] = qp[j]->qp_num;
	}
	me.rkey = e.mr->rkey;
	me.addr = (uintptr_t)e.buf;
	me.gid = e.gid;
	info_text(&me, text, sizeof(text));
	put(dir, name, text);
	snprintf(peer_name, sizeof(peer_name), "%s.peer", name);
	get(dir, peer_name, text, sizeof(text));
	info_parse(text, &from);
	for (int j = 0; j < NQP; j++)
		connect_rc(qp[j], from.qpn[j], &from.gid, IBV_ACCESS_REMOTE_WRITE);
	snprintf(peer_name, sizeof(peer_name), "%s.up", name);
	put(dir, peer_name, "1"); /* the sender starts when its QPs here are ready */
	sleep((unsigned)secs);	  /* the device takes the WRITEs; nothing to poll */
	printf("%s: served %d s\n", vtest_name, secs);
	return 0;
}

static int post_write(struct ibv_qp *qp, struct end *e, const struct peer_info *to, uint64_t id)
{
	struct ibv_sge sge = {.addr = (uintptr_t)e->buf, .length = MSG, .lkey = e->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = id,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;

	wr.wr.rdma.remote_addr = to->addr;
	wr.wr.rdma.rkey = to->rkey;
	return ibv_post_send(qp, &wr, &bad);
}

static int send_to(const char *dir, const char *b, const char *c, int secs)
{
	struct end e;
	struct ibv_qp *qp[2][NQP];
	struct peer_info to[2], me = {0};
	const char *names[2] = {b, c};
	unsigned out[2][NQP] = {{0}}, done[2] = {0}, failed[2] = {0}, c_in_window = 0;
	bool dead[2][NQP] = {{false}}, stopped = false;
	uint64_t end_ns, window_end = 0;
	char text[512], pn[128];

	end_open(&e);
	me.rkey = e.mr->rkey;
	me.addr = (uintptr_t)e.buf;
	me.gid = e.gid;
	for (int k = 0; k < 2; k++) {
		for (int j = 0; j < NQP; j++) {
			qp[k][j] = rc_qp(&e);
			me.qpn[j] = qp[k][j]->qp_num;
		}
		get(dir, names[k], text, sizeof(text));
		info_parse(text, &to[k]);
		info_text(&me, text, sizeof(text));
		snprintf(pn, sizeof(pn), "%s.peer", names[k]);
		put(dir, pn, text);
		for (int j = 0; j < NQP; j++)
			connect_rc(qp[k][j], to[k].qpn[j], &to[k].gid, 0);
	}
	for (int k = 0; k < 2; k++) {
		snprintf(pn, sizeof(pn), "%s.up", names[k]);
		get(dir, pn, text, sizeof(text));
	}
	put(dir, "ready", "1");
	end_ns = now_ns() + (uint64_t)secs * 1000000000ull;
	while (now_ns() < end_ns && (!window_end || now_ns() < window_end)) {
		struct ibv_wc wc[32];
		int n;

		for (int k = 0; k < 2; k++)
			for (int j = 0; j < NQP; j++)
				while (!dead[k][j] && out[k][j] < DEPTH &&
				       !post_write(qp[k][j], &e, &to[k], (uint64_t)(k * NQP + j)))
					out[k][j]++;
		n = ibv_poll_cq(e.cq, 32, wc);
		for (int i = 0; i < n; i++) {
			int k = (int)wc[i].wr_id / NQP, j = (int)wc[i].wr_id % NQP;

			out[k][j]--;
			if (wc[i].status == IBV_WC_SUCCESS) {
				done[k]++;
				if (k == 1 && stopped)
					c_in_window++;
			} else {
				failed[k]++;
				dead[k][j] = true;
			}
		}
		if (!stopped && exists(dir, "stopped")) {
			stopped = true;
			window_end = now_ns() + WINDOW_NS;
		}
	}
	printf("%s: WRITEs done to %s %u (failed %u), to %s %u (failed %u); to %s while %s was "
	       "stopped: %u in %.1f s\n",
	       vtest_name, b, done[0], failed[0], c, done[1], failed[1], c, b, c_in_window,
	       WINDOW_NS / 1e9);
	CHECK(stopped, "%s was never stopped", b);
	CHECK(!failed[1], "WRITEs to %s failed while %s was stopped", c, b);
	CHECK(c_in_window >= 100, "only %u WRITEs to %s completed while %s was stopped",
	      c_in_window, c, b);
	return vtest_failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	vtest_name = "peer_fanout";
	if (argc == 5 && !strcmp(argv[1], "serve"))
		return serve(argv[2], argv[3], atoi(argv[4]));
	if (argc == 6 && !strcmp(argv[1], "send"))
		return send_to(argv[2], argv[3], argv[4], atoi(argv[5]));
	fprintf(stderr, "usage: peer_fanout serve DIR NAME SECONDS | send DIR B C SECONDS\n");
	return 1;
}
