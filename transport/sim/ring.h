/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A ring all-reduce of NCCL's shape over flows of the simulator: n hosts in
 * a ring, each with one flow to its neighbour; the reduce-scatter and the
 * all-gather take n-1 steps each, and in every step each host sends one
 * chunk (`per_step` messages of its flow). A step ends when its slowest
 * flow has delivered its chunk, and only then may the next one start: the
 * collective is as fast as the slowest flow of each step.
 */
#ifndef UR_SIM_RING_H
#define UR_SIM_RING_H

#include <stdint.h>

#include "workload.h"

struct sim_ring;

/* `flows[i]` carries host i's chunks, steps x per_step messages; they start at
 * start_ps, and the ring's times (sim_ring_done_ps included) are the clock's. */
struct sim_ring *sim_ring_create(struct sim_workload *w, struct sim_flow *const *flows, unsigned n,
				 unsigned steps, uint64_t per_step, uint64_t start_ps);
void sim_ring_destroy(struct sim_ring *r);
unsigned sim_ring_steps_done(const struct sim_ring *r);
/* When the last step ended (0 if it did not). */
uint64_t sim_ring_done_ps(const struct sim_ring *r);
/* Each flow's time in each finished step, from the step's start to its chunk's delivery. */
const uint64_t *sim_ring_fcts(const struct sim_ring *r, uint64_t *n);
/* How long each finished step took. */
const uint64_t *sim_ring_step_ps(const struct sim_ring *r);

#endif
