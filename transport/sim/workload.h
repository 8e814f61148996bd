/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Applications for the simulator: flows of messages between two hosts, each
 * flow one connected QP pair that keeps `depth` messages outstanding. Flows
 * can fill every message with a pattern and check every byte on arrival.
 */
#ifndef UR_SIM_WORKLOAD_H
#define UR_SIM_WORKLOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "sim.h"

struct sim_workload;
struct sim_flow;

struct sim_flow_cfg {
	enum ur_qp_type qp_type;
	enum ur_wr_opcode opcode; /* WRITE, WRITE_WITH_IMM, SEND, SEND_WITH_IMM, READ, atomics */
	uint32_t msg_size;
	uint64_t messages;
	uint32_t depth;          /* messages outstanding at once */
	uint32_t recv_depth;     /* receive WQEs kept posted at the destination (0: depth) */
	uint64_t recv_repost_ps; /* the destination reposts a receive this long after its
				  * completion (an application that polls, then posts) */
	bool verify;             /* pattern every message and check every byte */
	uint64_t start_ps;
	struct sim_qp_params qp;
};

struct sim_flow_stats {
	uint64_t posted;
	uint64_t completed;       /* successful requester completions */
	uint64_t received;        /* successful receive completions at the destination */
	uint64_t bytes;           /* message bytes completed */
	uint64_t errors;          /* error completions (any side) */
	enum ur_wc_status first_error;
	uint64_t flushed;
	uint64_t first_error_ps;  /* when the first error completion was seen */
	uint64_t verify_failures;
	uint64_t first_post_ps;
	uint64_t last_done_ps;
	uint64_t *fct_ps;         /* per completed message, in completion order */
	uint64_t nfct;
};

struct sim_workload *sim_workload_create(struct sim *s);
void sim_workload_destroy(struct sim_workload *w);

/* Create the QPs, memory and CQs of a flow from `src` to `dst` and connect them. */
struct sim_flow *sim_workload_add_flow(struct sim_workload *w, struct sim_node *src,
				       struct sim_node *dst, const struct sim_flow_cfg *cfg);
/* True once every flow has completed all its messages or failed. */
bool sim_workload_done(const struct sim_workload *w);
unsigned sim_workload_nflows(const struct sim_workload *w);
struct sim_flow *sim_workload_flow(const struct sim_workload *w, unsigned i);
const struct sim_flow_stats *sim_flow_stats(const struct sim_flow *f);
struct ur_qp *sim_flow_src_qp(const struct sim_flow *f);
struct ur_qp *sim_flow_dst_qp(const struct sim_flow *f);
/*
 * Post no more than `limit` of the flow's messages until raised (at first
 * all of them): an application that waits on others between messages
 * (a collective's steps) holds its flows back this way. Raising it posts
 * at once.
 */
void sim_flow_set_post_limit(struct sim_flow *f, uint64_t limit);
/* Called after each message a flow completes successfully (message number `msg`). */
typedef void (*sim_message_done_fn)(struct sim_flow *f, uint64_t msg, void *arg);
void sim_workload_on_message(struct sim_workload *w, sim_message_done_fn fn, void *arg);
struct sim *sim_workload_sim(const struct sim_workload *w);
/* Stop the simulation as soon as every flow is done. */
void sim_workload_stop_when_done(struct sim_workload *w, bool stop);

/* The byte a flow's pattern puts at `off` of message `msg`. */
uint8_t sim_pattern_byte(uint32_t flow, uint64_t msg, uint64_t off);

#endif
