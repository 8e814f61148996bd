/* SPDX-License-Identifier: BSD-2-Clause */
/* One-shot flows between the hosts of a leaf-spine (see permutation.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "permutation.h"
#include "ring.h"
#include "rng.h"
#include "workload.h"

void sim_permutation_cfg_default(struct sim_permutation_cfg *c)
{
	memset(c, 0, sizeof(*c));
	sim_leafspine_cfg_default(&c->topo);
	c->flow_bytes = 256 * 1024;
	c->msg_size = 64 * 1024;
	c->depth = 4;
	c->mtu = 4096;
	c->mode = UR_RETX_GBN;
	/* the DCQCN paper's RED marking, as the incast experiment uses */
	c->ecn_kmin = 5 * 1024;
	c->ecn_kmax = 200 * 1024;
	c->ecn_pmax = 0.01;
	/* 4.096 us x 2^7 = 524 us: well past the fabric's queueing delay */
	c->timeout = 7;
	c->sr_rto_low_ns = 100000;
	c->sr_rto_high_ns = 500000;
	c->limit_ps = 1000 * 1000 * SIM_PS_PER_US; /* 1 s */
	c->seed = 1;
}

/* A random permutation with no fixed point (Sattolo's algorithm: one cycle). */
static void derangement(unsigned *dst, unsigned n, uint64_t seed)
{
	struct sim_rng rng;

	sim_rng_seed(&rng, seed);
	for (unsigned i = 0; i < n; i++)
		dst[i] = i;
	for (unsigned i = n - 1; i > 0; i--) {
		unsigned j = (unsigned)(sim_rng_next(&rng) % i), t = dst[i];

		dst[i] = dst[j];
		dst[j] = t;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t percentile(const uint64_t *sorted, unsigned n, double q)
{
	size_t i = (size_t)ceil(q * n);

	return n ? sorted[i ? i - 1 : 0] : 0;
}

static double jain_index(const double *x, size_t n)
{
	double sum = 0, sum2 = 0;

	for (size_t i = 0; i < n; i++) {
		sum += x[i];
		sum2 += x[i] * x[i];
	}
	return sum2 > 0 ? sum * sum / ((double)n * sum2) : 0;
}

/* FCT percentiles and Jain's index over `n` completion times of `bytes` each. */
static void fct_stats(uint64_t *fct, size_t n, uint64_t bytes, struct sim_permutation_result *r)
{
	double *tput = calloc(n ? n : 1, sizeof(*tput));

	if (!n)
		goto out;
	qsort(fct, n, sizeof(*fct), cmp_u64);
	r->fct_p50_ps = percentile(fct, (unsigned)n, 0.5);
	r->fct_p99_ps = percentile(fct, (unsigned)n, 0.99);
	r->fct_max_ps = fct[n - 1];
	if (!tput)
		goto out;
	for (size_t i = 0; i < n; i++)
		tput[i] = fct[i] ? (double)bytes / (double)fct[i] : 0;
	r->jain = jain_index(tput, n);
out:
	free(tput);
}

static void results(const struct sim_permutation_cfg *c, struct sim *s, struct sim_leafspine *ls,
		    struct sim_workload *w, const struct sim_ring *ring,
		    struct sim_permutation_result *r)
{
	unsigned n = sim_leafspine_nhosts(ls), nflows = sim_workload_nflows(w);
	uint64_t *fct = calloc(nflows, sizeof(*fct)), bytes = 0, last = 0;
	uint64_t wire = sim_message_wire_bytes(c->msg_size, c->mtu, UR_KIND_WRITE, false,
					       c->mode == UR_RETX_SR);
	uint64_t flow_total = c->allreduce ? 2ull * (n - 1) * c->flow_bytes : c->flow_bytes;
	struct sim_leafspine_stats st;
	unsigned nf = 0;

	r->flows = nflows;
	for (unsigned i = 0; i < nflows; i++) {
		const struct sim_flow_stats *fs = sim_flow_stats(sim_workload_flow(w, i));

		r->errors += fs->errors;
		r->verify_failures += fs->verify_failures;
		bytes += fs->bytes;
		if (fs->bytes == flow_total && !fs->errors) {
			uint64_t t = fs->last_done_ps - c->start_ps;

			r->completed++;
			if (fct)
				fct[nf++] = t;
			if (t > last)
				last = t;
		}
	}
	if (ring) {
		/* the collective's time, and each flow's time within its steps */
		uint64_t nstep, *sf, ns = 0;
		const uint64_t *src = sim_ring_fcts(ring, &nstep), *sp = sim_ring_step_ps(ring);

		r->steps = sim_ring_steps_done(ring);
		last = sim_ring_done_ps(ring);
		last = last ? last - c->start_ps : 0;
		for (unsigned k = 0; k < r->steps; k++)
			if (sp[k] > r->step_max_ps)
				r->step_max_ps = sp[k];
		sf = malloc((nstep ? nstep : 1) * sizeof(*sf));
		if (sf) {
			for (uint64_t i = 0; i < nstep; i++)
				sf[ns++] = src[i];
			fct_stats(sf, ns, c->flow_bytes, r);
		}
		free(sf);
	} else if (fct) {
		fct_stats(fct, nf, c->flow_bytes, r);
	}
	free(fct);
	r->done_ps = last;
	/* every flow starts at start_ps: it completes when its last message does */
	if (last) {
		double secs = (double)last / SIM_PS_PER_S;

		r->goodput_gbps = (double)bytes * 8 / secs / 1e9;
		r->goodput_fraction = r->goodput_gbps / ((double)n * c->topo.host_rate_bps / 1e9 *
							 c->msg_size / wire);
	}
	r->ideal_fct_ps = (uint64_t)((double)c->flow_bytes / c->msg_size * wire * 8 * SIM_PS_PER_S /
				     c->topo.host_rate_bps) +
			  8 * c->topo.hop_ps;
	for (unsigned i = 0; i < n; i++) {
		const uint64_t *ctr = ur_dev_counters(sim_node_dev(sim_leafspine_host(ls, i)));

		r->retx_packets += ctr[UR_CTR_retransmitted_packets];
		r->timeouts += ctr[UR_CTR_local_ack_timeout_err] + ctr[UR_CTR_sr_timeouts];
		r->nak_seq += ctr[UR_CTR_packet_seq_err];
		r->cnps += ctr[UR_CTR_np_cnp_sent];
		r->sr_agreed += ctr[UR_CTR_sr_negotiated];
		r->sr_reorder_lost += ctr[UR_CTR_sr_reorder_lost];
		r->sr_spurious_retx += ctr[UR_CTR_sr_spurious_retx];
	}
	sim_leafspine_stats(ls, c->start_ps, &st);
	r->queue_max = st.queue_max;
	r->queue_mean = st.queue_mean;
	r->queue_hot = st.queue_hot;
	r->drops = st.dropped;
	r->marked = st.ecn_marked;
	r->pauses = st.pauses;
	r->sim_ps = sim_now(s);
	r->events = sim_events(s);
}

int sim_permutation_run(const struct sim_permutation_cfg *c, struct sim_permutation_result *r)
{
	struct sim_leafspine_cfg topo = c->topo;
	struct sim_leafspine *ls = NULL;
	struct sim_workload *w = NULL;
	struct sim_ring *ring = NULL;
	struct sim_flow **ring_flows = NULL;
	struct ur_dev_config cfg;
	struct sim_flow_cfg fc;
	unsigned n, *dst = NULL, per_host = c->flows_per_host ? c->flows_per_host : 1;
	struct sim *s;
	int err = -1;

	memset(r, 0, sizeof(*r));
	if (!c->msg_size || !c->depth || !c->flow_bytes || c->flow_bytes % c->msg_size)
		return -1;
	ur_dev_config_default(&cfg);
	cfg.max_mtu = c->mtu;
	cfg.retx_mode = c->mode;
	cfg.link_rate_mbps = (uint32_t)(topo.host_rate_bps / 1000000);
	cfg.dcqcn = cfg.ecn_np = c->dcqcn;
	ur_dcqcn_params_paper(&cfg.dcqcn_params);
	cfg.cnp_interval_ns = UR_DCQCN_PAPER_CNP_INTERVAL_NS;
	cfg.sr_rto_low_ns = c->sr_rto_low_ns;
	cfg.sr_rto_high_ns = c->sr_rto_high_ns;
	if (c->dcqcn) {
		topo.queue.ecn_kmin = c->ecn_kmin;
		topo.queue.ecn_kmax = c->ecn_kmax;
		topo.queue.ecn_pmax = c->ecn_pmax;
		topo.queue.ecn_dequeue = true;
	} else {
		topo.queue.ecn_kmin = topo.queue.ecn_kmax = 0;
	}

	s = sim_create(c->seed);
	if (!s)
		return -1;
	ls = sim_leafspine_create(s, &topo, &cfg);
	w = sim_workload_create(s);
	if (!ls || !w)
		goto out;
	n = sim_leafspine_nhosts(ls);
	dst = calloc((size_t)n * per_host, sizeof(*dst));
	if (!dst || n < 2)
		goto out;
	if (c->shift && topo.leaves < 2)
		goto out; /* every host would send to itself */
	if (per_host > 1 && (c->shift || c->rank_order || c->all_to_all || c->allreduce))
		goto out; /* several flows per host are random permutations */
	memset(&fc, 0, sizeof(fc));
	fc.qp_type = UR_QPT_RC;
	fc.opcode = UR_WR_RDMA_WRITE;
	fc.msg_size = c->msg_size;
	fc.messages = c->flow_bytes / c->msg_size;
	fc.depth = (uint32_t)(fc.messages < c->depth ? fc.messages : c->depth);
	if (c->allreduce) /* one flow per host carries all its steps */
		fc.messages *= 2ull * (n - 1);
	ring_flows = calloc(n, sizeof(*ring_flows));
	if (!ring_flows)
		goto out;
	/* permutation k of host i is dst[k * n + i]; the first is the one a
	 * single permutation has always used */
	for (unsigned k = 0; k < per_host; k++) {
		unsigned *d = dst + (size_t)k * n;

		if (c->shift || c->rank_order) {
			for (unsigned i = 0; i < n; i++)
				d[i] = (i + (c->shift ? topo.hosts_per_leaf : 1)) % n;
		} else {
			derangement(d, n, c->seed ^ 0x7065726dull ^ (0x9e3779b97f4a7c15ull * k));
		}
	}
	fc.verify = c->verify;
	fc.start_ps = c->start_ps;
	sim_qp_params_default(&fc.qp);
	fc.qp.path_mtu = ur_mtu_enum(c->mtu);
	fc.qp.timeout = c->timeout;
	fc.qp.tclass = 106; /* DSCP 26 with ECT(0): the RoCE class, ECN-capable */
	for (unsigned i = 0; i < n; i++) {
		for (unsigned j = 0; j < (c->all_to_all && !c->allreduce ? n : per_host); j++) {
			/* all-to-all: host i's flows in the order i+1, i+2, ... so
			 * that no host is everyone's first destination */
			unsigned d = c->all_to_all && !c->allreduce ? (i + 1 + j) % n
								    : dst[(size_t)j * n + i];

			if (d == i)
				continue;
			ring_flows[i] = sim_workload_add_flow(w, sim_leafspine_host(ls, i),
							      sim_leafspine_host(ls, d), &fc);
			if (!ring_flows[i])
				goto out;
		}
	}
	if (c->allreduce && !(ring = sim_ring_create(w, ring_flows, n, 2 * (n - 1),
						     c->flow_bytes / c->msg_size, c->start_ps)))
		goto out;
	sim_workload_stop_when_done(w, true);
	/* a host's engine runs when something happens to it: with a later start,
	 * let the QPs that reached RTS send their HELLOs now, as a polling host would */
	if (c->start_ps)
		for (unsigned i = 0; i < n; i++)
			sim_node_kick(sim_leafspine_host(ls, i));
	sim_run(s, c->start_ps + c->limit_ps);
	results(c, s, ls, w, ring, r);
	err = 0;
out:
	sim_ring_destroy(ring);
	free(ring_flows);
	free(dst);
	sim_workload_destroy(w);
	sim_leafspine_destroy(ls);
	sim_destroy(s);
	return err;
}
