/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One simulator run of `uroce-lab sim` (and of `uroce-lab compare`): two hosts, a
 * switch, flows of messages, and what came out of it.
 */
#ifndef UROCE_SIM_RUN_H
#define UROCE_SIM_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "sim.h"

#define MAX_LIST 32

/* A scenario: lists of modes and losses, and everything else fixed. */
struct sim_opts {
	enum ur_retx_mode modes[MAX_LIST];
	unsigned nmodes;
	double losses[MAX_LIST];
	unsigned nlosses;
	uint64_t rate_bps;
	uint64_t rtt_ps;
	uint64_t mtu;
	uint64_t msg_size;
	uint64_t messages;
	uint64_t flows;
	uint64_t depth;     /* 0: enough to fill twice the bandwidth-delay product */
	uint64_t seed;
	int timeout;        /* IB exponent, -1: from the RTT */
	uint64_t rto_low_ps;  /* SR timeouts, 0: from the RTT */
	uint64_t rto_high_ps;
	enum ur_wr_opcode opcode;
	enum ur_qp_type transport;
	double burst;       /* mean loss burst length (Gilbert-Elliott), 0 = independent */
	double reorder;
	uint64_t reorder_depth;
	double dup;
	double loss_back;   /* loss of ACKs and responses on the way back */
	double burst_back;  /* their mean loss burst length; 0: independent (two-way: --burst's) */
	double reorder_back; /* reordering of ACKs and responses on the way back... */
	uint64_t reorder_back_depth; /* ...by this many packet times */
	bool two_way;       /* the return path gets each run's loss, burst and reordering too */
	double ce;          /* ECN CE marking probability of ECN-capable data packets */
	uint8_t tclass;     /* traffic class of the QPs (DSCP << 2 | ECN) */
	const char *cc;     /* congestion-control spec (cc_spec.h) */
	bool verify;
	bool ipv6;
	const char *pcap;
	bool csv;
	bool header;
	bool quiet;
};

/* What one run measured. */
struct sim_result {
	double goodput_gbps;
	double fraction;
	double lossless_gbps;
	uint64_t retx_packets;
	uint64_t retx_bytes;
	uint64_t naks;
	uint64_t sacks;
	uint64_t timeouts;     /* IBTA local ACK timeouts (each one consumes a retry) */
	uint64_t sr_timeouts;  /* selective repeat's own RTO_low/RTO_high expiries */
	double fct_p50_us;
	double fct_p99_us;
	uint64_t completed;
	uint64_t received;  /* receive completions (send and write-imm operations) */
	uint64_t errors;
	uint64_t verify_failures;
	double window_pkts;
	double sim_time_us;
	uint64_t dropped;        /* by the data path's impairment */
	uint64_t dropped_back;   /* by the return path's */
	uint64_t reordered;      /* held back on the data path */
	uint64_t reordered_back; /* on the return path */
};

/* Defaults: 400 Gb/s, 10 us RTT, 4096 MTU, 200 x 1 MiB RDMA WRITEs, one flow. */
void sim_opts_default(struct sim_opts *o);
/* Run the scenario once in `mode` at data-packet loss `loss`; -1 if it cannot be set up. */
int sim_run_one(const struct sim_opts *o, enum ur_retx_mode mode, double loss,
		struct sim_result *r);
/*
 * What one direction does to the frames that cross it, in the simulator (a
 * link's struct sim_impair) and live (one side's UROCE_IMPAIR) alike, so a
 * `compare` cell runs the same knobs in both. The data path carries the
 * requests, the return path the ACKs, NAKs, SACKs, CNPs and READ and atomic
 * responses.
 */
struct sim_path {
	double loss;		/* long-run loss probability */
	double burst;		/* mean loss burst length: > 1 Gilbert-Elliott, else independent */
	double reorder;		/* probability a frame is overtaken... */
	uint64_t reorder_depth; /* ...by this many later frames (simulator: frame times) */
};
/* The data path (back false) or the return path of a run at data-packet loss `loss`. */
void sim_path_of(const struct sim_opts *o, double loss, bool back, struct sim_path *p);
/* The simulated link's impairment for a path (its other fields untouched). */
void sim_path_impair(const struct sim_path *p, struct sim_impair *im);
/* The dataplane's spec for a path, seeded: `loss=P,burst=L,reorder=P:D,seed=S`, or "" when
 * it does nothing. The length snprintf() gives. */
int sim_path_spec(const struct sim_path *p, uint64_t seed, char *buf, size_t size);
/* A path as text for a table: "loss 0.01 (bursts of 4), reorder 0.01:8", or "clean". */
void sim_path_describe(const struct sim_path *p, char *buf, size_t size);
/* The analytic goodput fraction: 1/(1+pW) for go-back-N, 1-p for selective repeat. */
double sim_model_fraction(enum ur_retx_mode mode, double p, double w);
const char *sim_mode_name(enum ur_retx_mode m);
/* Operations that complete a receive WQE at the destination. */
bool sim_delivers(const struct sim_opts *o);

#endif
