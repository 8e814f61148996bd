/* SPDX-License-Identifier: BSD-2-Clause */
/* N senders to one receiver through the simulator's switch (see incast.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "incast.h"
#include "workload.h"

/* Queue statistics come from samples this far apart. */
#define QUEUE_SAMPLE_PS (1 * SIM_PS_PER_US)

struct run {
	const struct sim_incast_cfg *c;
	struct sim *s;
	struct sim_node *recv;
	struct sim_node *snd[SIM_INCAST_MAX];
	struct sim_flow *flow[SIM_INCAST_MAX];
	uint64_t last_up[SIM_INCAST_MAX];
	uint64_t last_t;
	uint64_t warm_bytes[SIM_INCAST_MAX];
	uint64_t warm_placed; /* WRITE packets the receiver had placed at warm-up */
	struct sim_link_stats warm_down;
	uint64_t *q;
	size_t nq;
	size_t capq;
};

void sim_incast_cfg_default(struct sim_incast_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->senders = 2;
	c->rate_bps = 100000000000ull;
	c->rtt_ps = 8 * SIM_PS_PER_US;
	c->mtu = 4096;
	c->msg_size = 64 * 1024;
	/* 4 MB in flight per flow: more than the buffer shares out at N >= 8 */
	c->depth = 64;
	c->duration_ps = 60 * SIM_PS_PER_US * 1000;
	c->warmup_ps = 20 * SIM_PS_PER_US * 1000;
	c->mode = UR_RETX_GBN;
	c->dcqcn = true;
	/* the DCQCN paper's settings and its RED marking (K_min 5 KB, K_max
	 * 200 KB, P_max 1%); NVIDIA's defaults are the engine's, one option away */
	ur_dcqcn_params_paper(&c->dcqcn_params);
	c->cnp_interval_ns = UR_DCQCN_PAPER_CNP_INTERVAL_NS;
	c->bottleneck.buffer_bytes = 16u << 20;
	c->bottleneck.ecn_kmin = 5 * 1024;
	c->bottleneck.ecn_kmax = 200 * 1024;
	c->bottleneck.ecn_pmax = 0.01;
	c->bottleneck.ecn_dequeue = true;
	c->pfc_xoff = 256 * 1024;
	c->pfc_xon = 192 * 1024;
	/* 4.096 us x 2^10 = 4.2 ms: longer than the queueing delay of a full buffer */
	c->timeout = 10;
	/* IRN's two timeouts (SIGCOMM 2018), stretched past a full buffer's delay */
	c->sr_rto_low_ns = 1000000;
	c->sr_rto_high_ns = 2000000;
	c->seed = 1;
}

static void queue_sample(struct sim *s, void *arg)
{
	struct run *r = arg;

	if (r->nq == r->capq) {
		size_t cap = r->capq ? r->capq * 2 : 4096;
		uint64_t *q = realloc(r->q, cap * sizeof(*q));

		if (!q)
			return;
		r->q = q;
		r->capq = cap;
	}
	r->q[r->nq++] = sim_node_queue_bytes(r->recv);
	if (sim_now(s) + QUEUE_SAMPLE_PS <= r->c->duration_ps)
		sim_at(s, sim_now(s) + QUEUE_SAMPLE_PS, queue_sample, r);
}

static void warm(struct sim *s, void *arg)
{
	struct run *r = arg;

	for (unsigned i = 0; i < r->c->senders; i++)
		r->warm_bytes[i] = sim_flow_stats(r->flow[i])->bytes;
	r->warm_down = sim_node_down_stats(r->recv);
	r->warm_placed = ur_dev_counters(sim_node_dev(r->recv))[UR_CTR_rx_write_requests];
	queue_sample(s, r);
}

static void user_sample(struct sim *s, void *arg)
{
	struct run *r = arg;
	const struct sim_incast_cfg *c = r->c;
	struct sim_incast_sample smp;
	uint64_t now = sim_now(s), dt = now - r->last_t;

	memset(&smp, 0, sizeof(smp));
	smp.t_ps = now;
	smp.queue_bytes = sim_node_queue_bytes(r->recv);
	smp.senders = c->senders;
	for (unsigned i = 0; i < c->senders; i++) {
		uint64_t up = sim_node_up_stats(r->snd[i]).bytes;
		uint64_t kbps = ur_qp_rate_kbps(sim_flow_src_qp(r->flow[i]));

		smp.gbps[i] = dt ? (double)(up - r->last_up[i]) * 8 / ((double)dt / SIM_PS_PER_S) / 1e9 : 0;
		smp.rate_gbps[i] = kbps ? (double)kbps / 1e6 : (double)c->rate_bps / 1e9;
		r->last_up[i] = up;
	}
	r->last_t = now;
	c->sample(c->arg, &smp);
	if (now + c->sample_ps <= c->duration_ps)
		sim_at(s, now + c->sample_ps, user_sample, r);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void results(struct run *run, struct sim_incast_result *r)
{
	const struct sim_incast_cfg *c = run->c;
	double window_s = (double)(c->duration_ps - c->warmup_ps) / SIM_PS_PER_S;
	struct sim_link_stats down = sim_node_down_stats(run->recv);
	struct sim_queue_stats qs = sim_node_queue_stats(run->recv);
	const uint64_t *rc = ur_dev_counters(sim_node_dev(run->recv));
	uint64_t wire = sim_message_wire_bytes(c->msg_size, c->mtu, UR_KIND_WRITE, false,
					       c->mode == UR_RETX_SR);
	double sum = 0, sum2 = 0, paused = 0;
	uint64_t pkts_per_msg = (c->msg_size + c->mtu - 1) / c->mtu;

	for (unsigned i = 0; i < c->senders; i++) {
		const struct sim_flow_stats *st = sim_flow_stats(run->flow[i]);
		const uint64_t *ctr = ur_dev_counters(sim_node_dev(run->snd[i]));
		struct sim_queue_stats sq = sim_node_queue_stats(run->snd[i]);
		double g = (double)(st->bytes - run->warm_bytes[i]) * 8 / window_s / 1e9;

		r->flow_gbps[i] = g;
		sum += g;
		sum2 += g * g;
		r->errors += st->errors;
		r->retx_packets += ctr[UR_CTR_retransmitted_packets];
		r->timeouts += ctr[UR_CTR_local_ack_timeout_err] + ctr[UR_CTR_sr_timeouts];
		r->cnps_handled += ctr[UR_CTR_rp_cnp_handled];
		r->pauses += sq.pauses;
		paused += (double)sq.paused_ps;
		r->drops += sq.dropped; /* the ACK direction: should stay 0 */
	}
	/*
	 * Goodput is what the receiver placed inside the window: WRITE packets
	 * it executed (duplicates are not executed), each a 1/pkts_per_msg
	 * share of a message. Counting messages completed in the window
	 * instead credits it with a backlog that crossed the link before the
	 * window (selective repeat completes a run of early-placed messages at
	 * once), which showed 102.9% of the link at 16 senders.
	 */
	r->goodput_gbps = (double)(rc[UR_CTR_rx_write_requests] - run->warm_placed) * c->msg_size /
			  (double)pkts_per_msg * 8 / window_s / 1e9;
	r->goodput_fraction =
	    r->goodput_gbps / ((double)c->rate_bps / 1e9 * c->msg_size / (double)wire);
	r->jain = sum2 > 0 ? sum * sum / (c->senders * sum2) : 0;
	r->utilisation = (double)((down.bytes - run->warm_down.bytes) +
				  SIM_WIRE_OVERHEAD * (down.packets - run->warm_down.packets)) *
			 8 / window_s / (double)c->rate_bps;
	r->paused_fraction = paused / ((double)c->senders * c->duration_ps);
	r->queue_max = qs.max_bytes;
	r->drops += qs.dropped;
	r->marked = qs.ecn_marked;
	r->cnps = rc[UR_CTR_np_cnp_sent];
	if (run->nq) {
		double mean = 0;

		for (size_t i = 0; i < run->nq; i++)
			mean += (double)run->q[i];
		r->queue_mean = (uint64_t)(mean / run->nq);
		qsort(run->q, run->nq, sizeof(*run->q), cmp_u64);
		r->queue_p99 = run->q[(size_t)ceil(0.99 * run->nq) - 1];
		r->queue_max_steady = run->q[run->nq - 1];
	}
}

int sim_incast_run(const struct sim_incast_cfg *c, struct sim_incast_result *r)
{
	double bdp_pkts = (double)c->rate_bps * c->rtt_ps / 8 / SIM_PS_PER_S / c->mtu;
	struct sim_link_cfg link = {.rate_bps = c->rate_bps, .prop_ps = c->rtt_ps / 4};
	struct sim_queue_cfg edge = {0}, bottleneck = c->bottleneck;
	struct ur_dev_config cfg;
	struct sim_flow_cfg fc;
	struct sim_workload *w = NULL;
	struct run run;
	int err = -1;

	memset(r, 0, sizeof(*r));
	memset(&run, 0, sizeof(run));
	if (!c->senders || c->senders > SIM_INCAST_MAX || c->warmup_ps >= c->duration_ps)
		return -1;
	run.c = c;
	ur_dev_config_default(&cfg);
	cfg.max_mtu = c->mtu;
	cfg.retx_mode = c->mode;
	cfg.max_inflight = (uint32_t)fmax(1024, 4 * bdp_pkts);
	cfg.link_rate_mbps = (uint32_t)(c->rate_bps / 1000000);
	cfg.dcqcn = cfg.ecn_np = c->dcqcn;
	cfg.dcqcn_params = c->dcqcn_params;
	cfg.cnp_interval_ns = c->cnp_interval_ns;
	cfg.sr_rto_low_ns = c->sr_rto_low_ns;
	cfg.sr_rto_high_ns = c->sr_rto_high_ns;
	if (!c->dcqcn)
		bottleneck.ecn_kmin = bottleneck.ecn_kmax = 0; /* no marking without congestion control */
	edge.pfc = c->pfc;
	edge.pfc_xoff = c->pfc_xoff;
	edge.pfc_xon = c->pfc_xon;

	run.s = sim_create(c->seed);
	if (!run.s)
		return -1;
	run.recv = sim_add_node(run.s, &cfg, &link, &link, &bottleneck);
	for (unsigned i = 0; i < c->senders && run.recv; i++)
		if (!(run.snd[i] = sim_add_node(run.s, &cfg, &link, &link, &edge)))
			goto out;
	w = sim_workload_create(run.s);
	if (!run.recv || !w)
		goto out;
	memset(&fc, 0, sizeof(fc));
	fc.qp_type = UR_QPT_RC;
	fc.opcode = UR_WR_RDMA_WRITE;
	fc.msg_size = c->msg_size;
	fc.depth = c->depth;
	/* more than a flow alone could send at the line rate */
	fc.messages = (uint64_t)((double)c->rate_bps * c->duration_ps / SIM_PS_PER_S / 8 / c->msg_size) +
		      c->depth + 1;
	sim_qp_params_default(&fc.qp);
	fc.qp.path_mtu = ur_mtu_enum(c->mtu);
	fc.qp.timeout = c->timeout;
	fc.qp.tclass = 106; /* DSCP 26, the RoCE class of NCCL_IB_TC=106 */
	for (unsigned i = 0; i < c->senders; i++) {
		fc.start_ps = c->start_ps[i];
		run.flow[i] = sim_workload_add_flow(w, run.snd[i], run.recv, &fc);
		if (!run.flow[i])
			goto out;
	}
	sim_at(run.s, c->warmup_ps, warm, &run);
	if (c->sample && c->sample_ps)
		sim_at(run.s, c->sample_ps, user_sample, &run);
	sim_run(run.s, c->duration_ps);
	results(&run, r);
	err = 0;
out:
	sim_workload_destroy(w);
	sim_destroy(run.s);
	free(run.q);
	return err;
}
