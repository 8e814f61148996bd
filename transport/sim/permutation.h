/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One-shot flows on a leaf-spine, all starting together: a permutation
 * (every host sends one flow of `flow_bytes`, RC RDMA WRITEs, to a distinct
 * other host and receives one), all-to-all (every host to every other), or
 * a ring all-reduce (ring.h: 2(n-1) steps, each host sending `flow_bytes`
 * to its ring neighbour per step, every step waiting for its slowest flow).
 * Reports what the multipath studies compare: aggregate goodput, flow
 * completion time percentiles, Jain's fairness, retransmissions, PFC pauses
 * and the fabric's queues (deepest, and time-averaged).
 */
#ifndef UR_SIM_PERMUTATION_H
#define UR_SIM_PERMUTATION_H

#include <stdbool.h>
#include <stdint.h>

#include "leafspine.h"

struct sim_permutation_cfg {
	struct sim_leafspine_cfg topo;
	uint64_t flow_bytes;
	uint32_t msg_size; /* the flow in WRITEs of this size... */
	uint32_t depth;	   /* ...this many outstanding */
	uint32_t mtu;
	enum ur_retx_mode mode;
	bool dcqcn;	   /* RED ECN marking in every queue, CNPs, DCQCN */
	uint64_t ecn_kmin; /* with dcqcn */
	uint64_t ecn_kmax;
	double ecn_pmax;
	bool shift;	 /* host i sends to i + hosts_per_leaf: no two flows share a
			  * link under SIM_PATH_PINNED (a reference with no collisions) */
	bool all_to_all; /* every host sends a flow to every other host instead */
	/* Permutation: this many random permutations at once (0 or 1: one), each
	 * host sending one flow (its own QP pair) in each, so every host sends and
	 * receives this many flows; 64 hosts x 64 give 4,096 flows. */
	unsigned flows_per_host;
	bool allreduce;	 /* a ring all-reduce instead: flow_bytes is each step's chunk */
	bool rank_order; /* the ring (or permutation) is host i -> i + 1, not a random cycle */
	bool verify;	 /* pattern every byte and check it at the receiver */
	uint8_t timeout; /* local ACK timeout exponent (go-back-N) */
	uint64_t sr_rto_low_ns;
	uint64_t sr_rto_high_ns;
	/* Flows start this late, and their times count from here. The QPs reach
	 * RTS at 0 and a selective-repeat pair agrees a round trip later; a
	 * message begun before that keeps go-back-N framing (docs/selective-
	 * repeat.md section 1), so sr rows that start at 0 measure part
	 * go-back-N. */
	uint64_t start_ps;
	uint64_t limit_ps; /* give up after this much simulated time */
	uint64_t seed;
};

struct sim_permutation_result {
	unsigned flows;
	unsigned completed; /* flows that delivered every byte */
	uint64_t errors;    /* error completions */
	uint64_t verify_failures;
	double goodput_gbps;	 /* every flow's bytes over the time the last one took */
	double goodput_fraction; /* of what the hosts' links could carry in that time */
	uint64_t fct_p50_ps;	 /* all-reduce: of each flow's time in each step */
	uint64_t fct_p99_ps;
	uint64_t fct_max_ps;
	uint64_t ideal_fct_ps; /* one flow alone on an idle fabric, serialisation + RTT */
	double jain;	       /* Jain's index of the flows' throughputs (bytes / FCT) */
	unsigned steps;	       /* all-reduce: steps finished (of 2(hosts - 1)) */
	uint64_t done_ps;      /* start_ps to when the last flow (all-reduce: step) ended */
	uint64_t step_max_ps;  /* all-reduce: the slowest step */
	uint64_t retx_packets;
	uint64_t timeouts;
	uint64_t nak_seq;   /* sequence-error NAKs the receivers sent */
	uint64_t queue_max; /* bytes, the deepest of every queue */
	double queue_mean;  /* bytes, the queues' time-averaged occupancy, averaged over them */
	double queue_hot;   /* bytes, the largest time-averaged occupancy of one queue */
	uint64_t drops;
	uint64_t marked;
	uint64_t cnps;
	uint64_t pauses;	  /* PFC pause frames obeyed (topo.pfc) */
	uint64_t sr_agreed;	  /* QPs that negotiated selective repeat (2 per flow in sr mode) */
	uint64_t sr_reorder_lost; /* PSNs SR's reordering window deemed lost */
	uint64_t sr_spurious_retx; /* SR retransmissions answered by the original */
	uint64_t sim_ps;	   /* simulated time */
	uint64_t events;
};

void sim_permutation_cfg_default(struct sim_permutation_cfg *c);
/* 0, or -1 when the scenario cannot be built. */
int sim_permutation_run(const struct sim_permutation_cfg *c, struct sim_permutation_result *r);

#endif
