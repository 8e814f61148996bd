/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A two-host simulator fixture for scenario tests: one QP pair (RC unless
 * asked otherwise) with CQs and registered buffers, and helpers to post work requests directly on
 * the engine's queues and to run until completions arrive.
 */
#ifndef UR_TEST_SIM_FIXTURE_H
#define UR_TEST_SIM_FIXTURE_H

#include "sim.h"

#define FX_BUF (1u << 20)

struct fx_side {
	struct sim_node *node;
	struct ur_qp *qp;
	struct ur_cq cq;
	struct ur_mr *mr;
	uint8_t *buf;
	struct ur_av av; /* UD: the address handle toward the other side */
};

struct fx {
	struct sim *s;
	struct fx_side a; /* requester */
	struct fx_side b; /* responder */
	struct sim_qp_params qp;
};

/* Build the world; `link` applies to both directions of both hosts. */
void fx_init(struct fx *f, uint64_t seed, const struct sim_link_cfg *link,
	     const struct sim_qp_params *qp, uint32_t access_b);
/* The same with QPs of another service; UD sends go to the other side's QP. */
void fx_init_service(struct fx *f, enum ur_qp_type type, uint64_t seed,
		     const struct sim_link_cfg *link, const struct sim_qp_params *qp,
		     uint32_t access_b);
/* The same with a device configuration of the test's own (e.g. selective repeat). */
void fx_init_cfg(struct fx *f, uint64_t seed, const struct ur_dev_config *cfg,
		 const struct sim_link_cfg *link, const struct sim_qp_params *qp, uint32_t access_b);
void fx_fini(struct fx *f);

/* Post one send WQE on side `s`. */
void fx_post_send(struct fx *f, struct fx_side *s, uint64_t wr_id, enum ur_wr_opcode op,
		  uint32_t local_off, uint32_t len, uint64_t remote_addr, uint32_t rkey,
		  uint64_t compare_add, uint64_t swap);
void fx_post_recv(struct fx *f, struct fx_side *s, uint64_t wr_id, uint32_t off, uint32_t len);

/* Run until `n` CQEs are available on side `s` or `limit_ps` of virtual time pass. */
int fx_wait(struct fx *f, struct fx_side *s, struct ur_cqe *out, int n, uint64_t limit_ps);

void fx_default_link(struct sim_link_cfg *l);

#endif
