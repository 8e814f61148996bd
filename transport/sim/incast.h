/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * N senders, one receiver, one switch: every sender writes to the receiver
 * without pause, so the switch port toward the receiver is the bottleneck.
 * The congestion-control experiments (incast, two flows converging) and
 * their scenario test run this, with or without DCQCN, go-back-N or
 * selective repeat, drop-tail or PFC, and read back what the bottleneck saw.
 */
#ifndef UR_SIM_INCAST_H
#define UR_SIM_INCAST_H

#include <stdbool.h>
#include <stdint.h>

#include "sim.h"

#define SIM_INCAST_MAX 64

struct sim_incast_sample {
	uint64_t t_ps;
	uint64_t queue_bytes;             /* bottleneck queue */
	unsigned senders;
	double gbps[SIM_INCAST_MAX];      /* what each sender put on its link since the last sample */
	double rate_gbps[SIM_INCAST_MAX]; /* each QP's DCQCN rate (the line rate when unlimited) */
};

struct sim_incast_cfg {
	unsigned senders;
	uint64_t rate_bps;         /* every link */
	uint64_t rtt_ps;           /* round-trip propagation time */
	uint32_t mtu;
	uint32_t msg_size;         /* RDMA WRITE messages, back to back */
	uint32_t depth;            /* messages outstanding per flow */
	uint64_t duration_ps;
	uint64_t warmup_ps;        /* excluded from goodput, utilisation, fairness and queue stats */
	uint64_t start_ps[SIM_INCAST_MAX]; /* when each flow starts */
	enum ur_retx_mode mode;
	bool dcqcn;                /* ECN marking at the switch, CNPs, DCQCN at the senders */
	struct ur_dcqcn_params dcqcn_params;
	uint64_t cnp_interval_ns;
	struct sim_queue_cfg bottleneck; /* buffer and RED thresholds of the receiver's port */
	bool pfc;                  /* lossless: PFC at the senders' ingress ports */
	uint64_t pfc_xoff;
	uint64_t pfc_xon;
	uint8_t timeout;           /* local ACK timeout exponent */
	uint64_t sr_rto_low_ns;
	uint64_t sr_rto_high_ns;
	uint64_t seed;
	uint64_t sample_ps;        /* time series period, 0: none */
	void (*sample)(void *arg, const struct sim_incast_sample *s);
	void *arg;
};

struct sim_incast_result {
	double goodput_gbps;       /* message bytes the receiver placed after warm-up, all flows */
	double goodput_fraction;   /* of the lossless goodput of the bottleneck */
	double utilisation;        /* wire time the bottleneck link was busy after warm-up */
	double jain;               /* Jain's index of per-flow goodput after warm-up */
	double flow_gbps[SIM_INCAST_MAX]; /* message bytes each flow completed after warm-up */
	uint64_t queue_max;        /* bytes, whole run (the first burst included) */
	uint64_t queue_max_steady; /* after warm-up, from the samples */
	uint64_t queue_p99;        /* after warm-up, from the samples */
	uint64_t queue_mean;
	uint64_t drops;
	uint64_t marked;           /* CE marks at the bottleneck */
	uint64_t cnps;             /* CNPs the receiver sent */
	uint64_t cnps_handled;     /* CNPs the senders acted on */
	uint64_t pauses;           /* PFC pause frames */
	double paused_fraction;    /* of sender-time spent paused, whole run */
	uint64_t retx_packets;
	uint64_t timeouts;
	uint64_t errors;           /* error completions: a flow failed */
};

void sim_incast_cfg_default(struct sim_incast_cfg *c);
/* Run it; 0, or -1 when the scenario cannot be built. */
int sim_incast_run(const struct sim_incast_cfg *c, struct sim_incast_result *r);

#endif
