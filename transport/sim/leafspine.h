/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A two-tier leaf-spine fabric of the simulator's output-queued switches:
 * `leaves` leaf switches with `hosts_per_leaf` hosts each, every leaf linked
 * to every one of `spines` spine switches. A leaf sends a frame for one of
 * its own hosts straight down; any other frame goes up to a spine it picks
 * by the path policy, and the spine sends it down to the destination's leaf.
 */
#ifndef UR_SIM_LEAFSPINE_H
#define UR_SIM_LEAFSPINE_H

#include <stdbool.h>
#include <stdint.h>

#include "sim.h"

/* How a leaf picks the spine for a frame leaving it. */
enum sim_path_policy {
	SIM_PATH_ECMP,	       /* per flow: a hash of the addresses and UDP source port */
	SIM_PATH_SPRAY_RANDOM, /* per packet: a uniformly random spine */
	SIM_PATH_SPRAY_RR,     /* per packet: the spines in turn, per sender */
	SIM_PATH_PINNED,       /* per host: spine = the sender's position on its leaf */
};

struct sim_leafspine_cfg {
	unsigned hosts_per_leaf;
	unsigned leaves;
	unsigned spines;
	uint64_t host_rate_bps;	    /* host <-> leaf */
	uint64_t fabric_rate_bps;   /* leaf <-> spine */
	uint64_t hop_ps;	    /* propagation delay of every link */
	uint64_t skew_ps;	    /* leaf -> spine k takes k * skew_ps longer */
	struct sim_queue_cfg queue; /* every switch output queue */
	bool pfc;		    /* lossless: every switch input pauses its sender (802.1Qbb) */
	uint64_t pfc_xoff;	    /* pause when more than this from one input is queued */
	uint64_t pfc_xon;	    /* resume below this */
	enum sim_path_policy path;
};

struct sim_leafspine;

void sim_leafspine_cfg_default(struct sim_leafspine_cfg *c);
/* Add the hosts (the first hosts of `s`, engines configured by `dev`) and the switches. */
struct sim_leafspine *sim_leafspine_create(struct sim *s, const struct sim_leafspine_cfg *c,
					   const struct ur_dev_config *dev);
/* Frees the switches' queued frames: call before sim_destroy. */
void sim_leafspine_destroy(struct sim_leafspine *ls);
unsigned sim_leafspine_nhosts(const struct sim_leafspine *ls);
struct sim_node *sim_leafspine_host(const struct sim_leafspine *ls, unsigned i);

/* Every output queue of the fabric (host ports included), summed or maxed. */
struct sim_leafspine_stats {
	uint64_t queue_max; /* the deepest any queue got, bytes */
	double
	    queue_mean; /* bytes: each queue's time-averaged occupancy, averaged over the queues */
	double queue_hot; /* bytes: the largest time-averaged occupancy of one queue */
	uint64_t dropped;
	uint64_t ecn_marked;
	uint64_t pauses;	    /* PFC pause frames obeyed, by hosts and switch ports */
	uint64_t spine_packets[64]; /* frames each spine forwarded (the first 64) */
};
/* The time averages are over since_ps..now: a workload that starts late
 * (permutation.h's start_ps) is not averaged with the idle fabric before it. */
void sim_leafspine_stats(const struct sim_leafspine *ls, uint64_t since_ps,
			 struct sim_leafspine_stats *st);

const char *sim_path_policy_name(enum sim_path_policy p);

#endif
