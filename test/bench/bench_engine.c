/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Engine cost: 64-byte RDMA WRITEs pushed through a requester and a
 * responder on one core, frames handed over in memory (no I/O, no event
 * queue). Reports data packets per second of CPU time; the target is 5 M/s.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "fake_host.h"
#include "frame.h"

#define BURST 32
#define SIG_EVERY 16

/* Each side's host holds a burst of frames until the loop carries them over. */
static void host_init(struct fake_host *h, uint64_t seed)
{
	const struct fake_host_opts o = {
	    .nbufs = BURST,
	    .keep = FAKE_HOST_HOLD,
	    .seed = seed,
	};

	if (fake_host_init(h, &o)) {
		fprintf(stderr, "bench_engine: out of memory\n");
		exit(1);
	}
}

/* Carry every frame `from` holds to `to`. */
static void carry(struct fake_host *from, struct ur_dev *to, uint64_t t)
{
	while (from->nheld) {
		unsigned i = fake_host_take(from);

		ur_dev_rx(to, from->buf[i], from->len[i], t);
		fake_host_release(from, i);
	}
}

/* CPU time of this thread: a shared, noisy machine steals wall time, not this */
static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void connect_qp(struct ur_qp *q, uint32_t dqpn, const uint8_t *smac, const uint8_t *dmac,
		    const uint8_t *sip, const uint8_t *dip, uint32_t sq_psn, uint32_t rq_psn)
{
	struct ur_qp_attr a = {0};

	a.qp_state = UR_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = UR_ACCESS_LOCAL_WRITE | UR_ACCESS_REMOTE_WRITE;
	ur_qp_modify(q, &a, UR_QP_STATE | UR_QP_PKEY_INDEX | UR_QP_PORT | UR_QP_ACCESS_FLAGS, 0);
	a.qp_state = UR_QPS_RTR;
	a.path_mtu = 5;
	a.dest_qp_num = dqpn;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = 1;
	memcpy(a.av.path.smac, smac, 6);
	memcpy(a.av.path.dmac, dmac, 6);
	ur_gid_from_v4(&a.av.path.sgid, sip);
	ur_gid_from_v4(&a.av.path.dgid, dip);
	a.av.path.hop_limit = 64;
	a.av.path.udp_sport = 0xc011;
	a.av.resolved = 1;
	ur_qp_modify(q, &a,
		     UR_QP_STATE | UR_QP_AV | UR_QP_PATH_MTU | UR_QP_DEST_QPN | UR_QP_RQ_PSN |
			     UR_QP_MAX_DEST_RD_ATOMIC | UR_QP_MIN_RNR_TIMER,
		     0);
	a.qp_state = UR_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	ur_qp_modify(q, &a,
		     UR_QP_STATE | UR_QP_SQ_PSN | UR_QP_TIMEOUT | UR_QP_RETRY_CNT | UR_QP_RNR_RETRY |
			     UR_QP_MAX_QP_RD_ATOMIC,
		     0);
}

int main(int argc, char **argv)
{
	static struct fake_host wa, wb;
	const uint8_t mac_a[6] = {2, 0, 0, 0, 0, 1}, mac_b[6] = {2, 0, 0, 0, 0, 2};
	const uint8_t ip_a[4] = {10, 0, 0, 1}, ip_b[4] = {10, 0, 0, 2};
	uint64_t target = argc > 1 ? strtoull(argv[1], NULL, 0) : 20000000, posted = 0, t = 0;
	static uint8_t src[64], dst[64];
	struct ur_dev_config cfg;
	struct ur_dev *a, *b;
	struct ur_cq cqa, cqb;
	struct ur_qp *qa, *qb;
	struct ur_qp_init qi = {0};
	struct ur_mr *mra, *mrb;
	struct ur_cqe cqe[64];
	double t0, w0, dt, wall;
	uint64_t pkts;

	host_init(&wa, 1);
	host_init(&wb, 2);
	ur_dev_config_default(&cfg);
	ur_dev_create(&cfg, &fake_host_ops, &wa, NULL, &a);
	ur_dev_create(&cfg, &fake_host_ops, &wb, NULL, &b);
	ur_cq_init(&cqa, 4096, NULL);
	ur_cq_init(&cqb, 4096, NULL);
	ur_dev_reg_mr(a, (uintptr_t)src, src, sizeof(src), UR_ACCESS_LOCAL_WRITE, 1, &mra);
	ur_dev_reg_mr(b, (uintptr_t)dst, dst, sizeof(dst),
		      UR_ACCESS_LOCAL_WRITE | UR_ACCESS_REMOTE_WRITE, 1, &mrb);
	qi.type = UR_QPT_RC;
	qi.pd = 1;
	qi.max_send_wr = 1024;
	qi.max_recv_wr = 16;
	qi.max_send_sge = 1;
	qi.max_recv_sge = 1;
	qi.send_cq = qi.recv_cq = &cqa;
	qi.qpn = 0x11;
	ur_qp_create(a, &qi, &qa);
	qi.send_cq = qi.recv_cq = &cqb;
	qi.qpn = 0x22;
	ur_qp_create(b, &qi, &qb);
	connect_qp(qa, 0x22, mac_a, mac_b, ip_a, ip_b, 0xfff000, 0xffe000);
	connect_qp(qb, 0x11, mac_b, mac_a, ip_b, ip_a, 0xffe000, 0xfff000);

	t0 = cpu_s();
	w0 = wall_s();
	while (ur_dev_counters(b)[UR_CTR_rx_write_requests] < target) {
		struct ur_wq *sq = ur_qp_sq(qa);
		struct ur_send_wqe *w;
		unsigned n = 0;

		while (n < BURST && (w = ur_wq_reserve(sq, n))) {
			memset(w, 0, sizeof(*w));
			w->wr_id = posted;
			w->opcode = UR_WR_RDMA_WRITE;
			w->signaled = (posted % SIG_EVERY) == SIG_EVERY - 1;
			w->length = 64;
			w->remote_addr = (uintptr_t)dst;
			w->rkey = mrb->key;
			w->num_sge = 1;
			w->sge[0].addr = (uintptr_t)src;
			w->sge[0].length = 64;
			w->sge[0].lkey = mra->key;
			posted++;
			n++;
		}
		ur_wq_commit(sq, n);
		ur_qp_doorbell(qa);
		t += 100;
		ur_dev_poll(a, t);
		ur_dev_tx(a, t, BURST);
		carry(&wa, b, t);
		ur_dev_tx(b, t, BURST);
		carry(&wb, a, t);
		while (ur_cq_poll(&cqa, cqe, 64) > 0)
			;
	}
	dt = cpu_s() - t0;
	wall = wall_s() - w0;
	pkts = ur_dev_counters(b)[UR_CTR_rx_write_requests];
	printf("engine: %llu 64-byte RDMA WRITEs through requester and responder in %.3f s of CPU time on one core (%.3f s wall)\n",
	       (unsigned long long)pkts, dt, wall);
	printf("engine: %.2f M data packets/s (%.1f ns each, ACKs: %llu)\n", pkts / dt / 1e6,
	       dt / pkts * 1e9, (unsigned long long)ur_dev_counters(b)[UR_CTR_tx_acks]);
	ur_qp_destroy(qa);
	ur_qp_destroy(qb);
	ur_dev_dereg_mr(a, mra);
	ur_dev_dereg_mr(b, mrb);
	ur_dev_destroy(a);
	ur_dev_destroy(b);
	ur_cq_fini(&cqa);
	ur_cq_fini(&cqb);
	fake_host_check_idle(&wa);
	fake_host_check_idle(&wb);
	fake_host_fini(&wa);
	fake_host_fini(&wb);
	return 0;
}
