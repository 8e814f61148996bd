/* SPDX-License-Identifier: BSD-2-Clause */
/* A ring all-reduce's steps, each waiting for its slowest flow (see ring.h). */
#include <stdlib.h>

#include "ring.h"

struct sim_ring {
	struct sim *s;
	struct sim_flow **flows;
	unsigned n;
	unsigned steps;
	uint64_t per_step;
	unsigned step;	  /* the step under way */
	unsigned in_step; /* flows done with it */
	uint64_t step_start;
	uint64_t done_ps;
	uint64_t *fct; /* steps x n */
	uint64_t nfct;
	uint64_t *step_ps; /* steps */
};

static unsigned flow_index(const struct sim_ring *r, const struct sim_flow *f)
{
	for (unsigned i = 0; i < r->n; i++)
		if (r->flows[i] == f)
			return i;
	return r->n;
}

/* The next step starts in an event of its own: the completion that ended
 * this one is still being handled inside a host's poll. */
static void next_step(struct sim *s, void *arg)
{
	struct sim_ring *r = arg;

	r->step_start = sim_now(s);
	for (unsigned i = 0; i < r->n; i++)
		sim_flow_set_post_limit(r->flows[i], (r->step + 1) * r->per_step);
}

static void on_message(struct sim_flow *f, uint64_t msg, void *arg)
{
	struct sim_ring *r = arg;
	uint64_t now = sim_now(r->s);

	/* a flow's chunk is delivered with the step's last message */
	if ((msg + 1) % r->per_step || flow_index(r, f) == r->n)
		return;
	r->fct[r->nfct++] = now - r->step_start;
	if (++r->in_step < r->n)
		return;
	r->step_ps[r->step] = now - r->step_start;
	r->in_step = 0;
	if (++r->step == r->steps) {
		r->done_ps = now;
		return;
	}
	sim_at(r->s, now, next_step, r);
}

struct sim_ring *sim_ring_create(struct sim_workload *w, struct sim_flow *const *flows, unsigned n,
				 unsigned steps, uint64_t per_step, uint64_t start_ps)
{
	struct sim_ring *r = calloc(1, sizeof(*r));

	if (!r || !n || !steps || !per_step)
		goto err;
	r->s = sim_workload_sim(w);
	r->n = n;
	r->steps = steps;
	r->per_step = per_step;
	r->step_start = start_ps; /* the first step's times count from the flows' start */
	r->flows = malloc(n * sizeof(*r->flows));
	r->fct = calloc((size_t)steps * n, sizeof(*r->fct));
	r->step_ps = calloc(steps, sizeof(*r->step_ps));
	if (!r->flows || !r->fct || !r->step_ps)
		goto err;
	for (unsigned i = 0; i < n; i++) {
		r->flows[i] = flows[i];
		sim_flow_set_post_limit(flows[i], per_step);
	}
	sim_workload_on_message(w, on_message, r);
	return r;
err:
	sim_ring_destroy(r);
	return NULL;
}

void sim_ring_destroy(struct sim_ring *r)
{
	if (!r)
		return;
	free(r->flows);
	free(r->fct);
	free(r->step_ps);
	free(r);
}

unsigned sim_ring_steps_done(const struct sim_ring *r)
{
	return r->step;
}

uint64_t sim_ring_done_ps(const struct sim_ring *r)
{
	return r->done_ps;
}

const uint64_t *sim_ring_fcts(const struct sim_ring *r, uint64_t *n)
{
	*n = r->nfct;
	return r->fct;
}

const uint64_t *sim_ring_step_ps(const struct sim_ring *r)
{
	return r->step_ps;
}
