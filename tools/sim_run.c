/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One simulator run: build the two hosts and the switch, start the flows,
 * run virtual time in slices (showing progress), and collect goodput,
 * retransmissions, NAKs, SACKs, timeouts and completion-time percentiles.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cc_spec.h"
#include "netem.h"
#include "sim.h"
#include "sim_run.h"
#include "workload.h"

void sim_opts_default(struct sim_opts *o)
{
	*o = (struct sim_opts){
		.modes = {UR_RETX_GBN}, .nmodes = 1, .losses = {0}, .nlosses = 1,
		.rate_bps = 400000000000ull, .rtt_ps = 10 * SIM_PS_PER_US, .mtu = 4096,
		.msg_size = 1 << 20, .messages = 200, .flows = 1, .seed = 1, .timeout = -1,
		.opcode = UR_WR_RDMA_WRITE, .transport = UR_QPT_RC, .header = true,
	};
}

const char *sim_mode_name(enum ur_retx_mode m)
{
	return m == UR_RETX_SR ? "sr" : "gbn";
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double percentile_us(uint64_t *v, size_t n, double q)
{
	size_t i;

	if (!n)
		return 0;
	i = (size_t)ceil(q * (double)n) - 1;
	if (i >= n)
		i = n - 1;
	return (double)v[i] / SIM_PS_PER_US;
}

static double now_wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static unsigned kind_of(enum ur_wr_opcode op)
{
	switch (op) {
	case UR_WR_RDMA_READ:
		return UR_KIND_READ_RESP;
	case UR_WR_RDMA_WRITE:
	case UR_WR_RDMA_WRITE_WITH_IMM:
		return UR_KIND_WRITE;
	default:
		return UR_KIND_SEND;
	}
}

bool sim_delivers(const struct sim_opts *o)
{
	return o->opcode == UR_WR_SEND || o->opcode == UR_WR_SEND_WITH_IMM ||
	       o->opcode == UR_WR_RDMA_WRITE_WITH_IMM;
}

void sim_path_of(const struct sim_opts *o, double loss, bool back, struct sim_path *p)
{
	/* two-way: the return path takes the data path's knobs unless given its own */
	bool own_reorder = o->reorder_back > 0 || !o->two_way;
	bool own_burst = o->burst_back > 0 || !o->two_way;

	if (!back) {
		*p = (struct sim_path){loss, o->burst, o->reorder, o->reorder_depth};
		return;
	}
	p->loss = o->two_way ? loss : o->loss_back;
	p->burst = own_burst ? o->burst_back : o->burst;
	p->reorder = own_reorder ? o->reorder_back : o->reorder;
	p->reorder_depth = own_reorder ? o->reorder_back_depth : o->reorder_depth;
}

void sim_path_impair(const struct sim_path *p, struct sim_impair *im)
{
	im->loss = im->ge_p_gb = im->ge_p_bg = im->ge_loss_good = im->ge_loss_bad = 0;
	if (p->burst > 1 && p->loss > 0) {
		/* the dataplane's `burst=L` makes the same chain (netem_ge_bursts) */
		struct netem_ge ge;

		netem_ge_bursts(&ge, p->loss, p->burst);
		im->ge_p_gb = ge.p_gb;
		im->ge_p_bg = ge.p_bg;
		im->ge_loss_good = ge.loss_good;
		im->ge_loss_bad = ge.loss_bad;
	} else {
		im->loss = p->loss;
	}
	im->reorder = p->reorder_depth ? p->reorder : 0;
	im->reorder_depth = (uint32_t)p->reorder_depth;
}

int sim_path_spec(const struct sim_path *p, uint64_t seed, char *buf, size_t size)
{
	int k = 0;

	/* the dataplane's keys (dataplane/impair.c), a trailing comma trimmed by the seed */
	if (p->loss > 0)
		k += snprintf(buf + k, size - (size_t)k, "loss=%.15g,", p->loss);
	if (p->loss > 0 && p->burst > 1 && (size_t)k < size)
		k += snprintf(buf + k, size - (size_t)k, "burst=%.15g,", p->burst);
	if (p->reorder > 0 && p->reorder_depth && (size_t)k < size)
		k += snprintf(buf + k, size - (size_t)k, "reorder=%.15g:%llu,", p->reorder,
			      (unsigned long long)p->reorder_depth);
	if (!k) {
		if (size)
			buf[0] = 0;
		return 0;
	}
	if ((size_t)k < size)
		k += snprintf(buf + k, size - (size_t)k, "seed=%llu", (unsigned long long)seed);
	return k;
}

void sim_path_describe(const struct sim_path *p, char *buf, size_t size)
{
	int k = 0;

	if (p->loss > 0)
		k += snprintf(buf, size, "loss %g", p->loss);
	if (p->loss > 0 && p->burst > 1 && (size_t)k < size)
		k += snprintf(buf + k, size - (size_t)k, " (bursts of %g)", p->burst);
	if (p->reorder > 0 && p->reorder_depth && (size_t)k < size)
		k += snprintf(buf + k, size - (size_t)k, "%sreorder %g:%llu", k ? ", " : "",
			      p->reorder, (unsigned long long)p->reorder_depth);
	if (!k)
		snprintf(buf, size, "clean");
}

int sim_run_one(const struct sim_opts *o, enum ur_retx_mode mode, double loss,
		struct sim_result *r)
{
	uint64_t wire = sim_message_wire_bytes((uint32_t)o->msg_size, (uint32_t)o->mtu,
					       kind_of(o->opcode), o->ipv6, mode == UR_RETX_SR);
	double pkt_wire = (double)wire / UR_MAX(1.0, ceil((double)o->msg_size / o->mtu));
	double bdp_bytes = (double)o->rate_bps * o->rtt_ps / 8 / SIM_PS_PER_S;
	struct ur_dev_config cfg;
	struct sim_link_cfg data = {0}, back = {0}, clean;
	struct sim_flow_cfg fc;
	struct sim_workload *w;
	struct sim_node *a, *b;
	struct sim *s;
	uint64_t total_fct = 0, *fct, first = UINT64_MAX, last = 0, bytes = 0;
	double t0 = now_wall(), next_progress = t0 + 1.0;
	int timeout = o->timeout;
	bool progress_shown = false;

	memset(r, 0, sizeof(*r));
	r->window_pkts = bdp_bytes / pkt_wire;
	if (timeout < 0) {
		/* three round trips, so queueing never fires it spuriously; with
		 * selective repeat its own timeouts come first, this is the last resort */
		double rto_us = (mode == UR_RETX_SR ? 30.0 : 3.0) * o->rtt_ps / SIM_PS_PER_US;

		timeout = 1;
		while (4.096 * (1u << timeout) < rto_us && timeout < 31)
			timeout++;
	}

	ur_dev_config_default(&cfg);
	cfg.max_mtu = (uint32_t)o->mtu;
	cfg.retx_mode = mode;
	cfg.max_inflight = (uint32_t)UR_MAX(1024.0, 4 * r->window_pkts);
	cfg.link_rate_mbps = (uint32_t)(o->rate_bps / 1000000);
	if (o->cc) {
		char err[128];

		if (ur_cc_spec_apply(&cfg, o->cc, err, sizeof(err))) {
			fprintf(stderr, "uroce-lab sim: --cc: %s\n", err);
			return -1;
		}
	}
	/* IRN's two timeouts, scaled to the path: RTO_high a few round trips */
	cfg.sr_rto_high_ns = (o->rto_high_ps ? o->rto_high_ps : 3 * o->rtt_ps) / SIM_PS_PER_NS;
	cfg.sr_rto_low_ns = (o->rto_low_ps ? o->rto_low_ps : 2 * o->rtt_ps) / SIM_PS_PER_NS;
	data.rate_bps = back.rate_bps = o->rate_bps;
	data.prop_ps = back.prop_ps = o->rtt_ps / 4;
	{
		struct sim_path out, back_path;

		/* the data path is A's uplink; the return path (ACKs, NAKs, SACKs, READ
		 * responses) B's */
		sim_path_of(o, loss, false, &out);
		sim_path_of(o, loss, true, &back_path);
		sim_path_impair(&out, &data.impair);
		sim_path_impair(&back_path, &back.impair);
	}
	data.impair.dup = o->dup;
	data.impair.ce = o->ce;

	s = sim_create(o->seed);
	if (!s)
		return -1;
	sim_use_ipv6(s, o->ipv6);
	if (o->pcap && sim_capture(s, o->pcap)) {
		fprintf(stderr, "uroce-lab sim: cannot write %s\n", o->pcap);
		sim_destroy(s);
		return -1;
	}
	/* losses happen once per direction: on A's uplink for data, B's for ACKs */
	clean = data;
	memset(&clean.impair, 0, sizeof(clean.impair));
	a = sim_add_node(s, &cfg, &data, &clean, NULL);
	b = sim_add_node(s, &cfg, &back, &clean, NULL);
	w = sim_workload_create(s);
	if (!a || !b || !w) {
		sim_destroy(s);
		return -1;
	}
	memset(&fc, 0, sizeof(fc));
	fc.qp_type = o->transport;
	fc.opcode = o->opcode;
	fc.msg_size = (uint32_t)o->msg_size;
	fc.messages = o->messages;
	fc.depth = (uint32_t)(o->depth ? o->depth
				       : UR_MAX(2.0, ceil(2 * bdp_bytes / UR_MAX(o->msg_size, 1))));
	fc.verify = o->verify;
	sim_qp_params_default(&fc.qp);
	fc.qp.path_mtu = ur_mtu_enum((uint32_t)o->mtu);
	fc.qp.timeout = (uint8_t)timeout;
	fc.qp.tclass = o->tclass;
	for (uint64_t i = 0; i < o->flows; i++) {
		if (!sim_workload_add_flow(w, a, b, &fc)) {
			sim_workload_destroy(w);
			sim_destroy(s);
			return -1;
		}
	}
	sim_workload_stop_when_done(w, true);

	/* run in slices of virtual time so progress can be shown */
	while (!sim_workload_done(w)) {
		uint64_t before = sim_events(s);

		sim_run(s, sim_now(s) + 100 * SIM_PS_PER_US);
		if (sim_events(s) == before && sim_idle(s) && !sim_workload_done(w))
			break; /* nothing left to happen: the flows are stuck */
		if (!o->quiet && now_wall() > next_progress) {
			uint64_t done = 0;

			for (unsigned i = 0; i < sim_workload_nflows(w); i++)
				done += sim_flow_stats(sim_workload_flow(w, i))->completed;
			fprintf(stderr, "\r[sim %s loss %g] %llu/%llu messages, virtual %.3f ms  ",
				sim_mode_name(mode), loss, (unsigned long long)done,
				(unsigned long long)(o->messages * o->flows),
				(double)sim_now(s) / 1e9);
			progress_shown = true;
			next_progress = now_wall() + 0.5;
		}
	}
	if (progress_shown)
		fprintf(stderr, "\r%78s\r", "");

	for (unsigned i = 0; i < sim_workload_nflows(w); i++) {
		const struct sim_flow_stats *st = sim_flow_stats(sim_workload_flow(w, i));

		total_fct += st->nfct;
		r->completed += st->completed;
		r->received += st->received;
		r->errors += st->errors;
		r->verify_failures += st->verify_failures;
		bytes += st->bytes;
		if (st->posted && st->first_post_ps < first)
			first = st->first_post_ps;
		if (st->last_done_ps > last)
			last = st->last_done_ps;
	}
	fct = malloc((total_fct ? total_fct : 1) * sizeof(*fct));
	if (fct) {
		size_t k = 0;

		for (unsigned i = 0; i < sim_workload_nflows(w); i++) {
			const struct sim_flow_stats *st = sim_flow_stats(sim_workload_flow(w, i));

			memcpy(fct + k, st->fct_ps, st->nfct * sizeof(*fct));
			k += st->nfct;
		}
		qsort(fct, total_fct, sizeof(*fct), cmp_u64);
		r->fct_p50_us = percentile_us(fct, total_fct, 0.50);
		r->fct_p99_us = percentile_us(fct, total_fct, 0.99);
		free(fct);
	}
	/* UC and UD complete sends as they leave: only what arrived counts */
	if (o->transport != UR_QPT_RC && sim_delivers(o))
		bytes = r->received * o->msg_size;
	if (last > first)
		r->goodput_gbps = (double)bytes * 8 / ((double)(last - first) / SIM_PS_PER_S) / 1e9;
	r->lossless_gbps = (double)o->rate_bps / 1e9 * (double)o->msg_size / (double)wire;
	r->fraction = r->lossless_gbps > 0 ? r->goodput_gbps / r->lossless_gbps : 0;
	for (struct sim_node *n = a; n; n = n == a ? b : NULL) {
		const uint64_t *c = ur_dev_counters(sim_node_dev(n));

		r->retx_packets += c[UR_CTR_retransmitted_packets];
		r->naks += c[UR_CTR_tx_naks];
		r->sacks += c[UR_CTR_sr_sacks_sent];
		r->timeouts += c[UR_CTR_local_ack_timeout_err];
		r->sr_timeouts += c[UR_CTR_sr_timeouts];
	}
	r->retx_bytes = (uint64_t)(r->retx_packets * (double)o->mtu);
	r->sim_time_us = (double)sim_now(s) / SIM_PS_PER_US;
	r->dropped = sim_node_up_stats(a).dropped;
	r->dropped_back = sim_node_up_stats(b).dropped;
	r->reordered = sim_node_up_stats(a).reordered;
	r->reordered_back = sim_node_up_stats(b).reordered;
	sim_workload_destroy(w);
	sim_destroy(s);
	return 0;
}

double sim_model_fraction(enum ur_retx_mode mode, double p, double w)
{
	return mode == UR_RETX_SR ? 1 - p : 1 / (1 + p * w);
}

