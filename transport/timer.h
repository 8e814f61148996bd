/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Deadlines of the whole device in one binary min-heap. Time is passed in by
 * the host (nanoseconds); the heap only orders deadlines and tells the host
 * the next one. Timers are embedded in their owners and fire through a
 * per-kind callback, so the heap allocates nothing after creation.
 */
#ifndef UR_TIMER_H
#define UR_TIMER_H

#include <stdbool.h>
#include <stdint.h>

#ifndef UR_TIME_NEVER
#define UR_TIME_NEVER UINT64_MAX
#endif

struct ur_timer {
	uint64_t expires;
	uint32_t heap_pos; /* 0 when not armed (the heap is 1-based) */
	uint8_t kind;
};

struct ur_timer_heap {
	struct ur_timer **slot; /* slot[1..n] */
	uint32_t n;
	uint32_t cap;
};

int ur_timer_heap_init(struct ur_timer_heap *h, uint32_t cap);
void ur_timer_heap_fini(struct ur_timer_heap *h);

static inline bool ur_timer_armed(const struct ur_timer *t)
{
	return t->heap_pos != 0;
}

/* Arm or move a timer; returns -ENOMEM only if the heap cannot grow. */
int ur_timer_arm(struct ur_timer_heap *h, struct ur_timer *t, uint64_t expires);
void ur_timer_cancel(struct ur_timer_heap *h, struct ur_timer *t);

static inline uint64_t ur_timer_next(const struct ur_timer_heap *h)
{
	return h->n ? h->slot[1]->expires : UR_TIME_NEVER;
}

/* Remove and return the earliest timer if it is due at `now`, else NULL. */
struct ur_timer *ur_timer_pop_due(struct ur_timer_heap *h, uint64_t now);

#endif
