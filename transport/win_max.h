/* SPDX-License-Identifier: BSD-2-Clause */
/* The largest value of the last one to two periods (a cheap windowed max). Internal. */
#ifndef UR_WIN_MAX_H
#define UR_WIN_MAX_H

#include <stdint.h>

struct ur_win_max {
	uint64_t max[2]; /* this period's and the last one's */
	uint64_t start;	 /* when this period began */
};

static inline void ur_win_max_note(struct ur_win_max *w, uint64_t v, uint64_t now,
				   uint64_t period)
{
	if (now - w->start >= period) {
		/* the last period is forgotten too if it ended long ago */
		w->max[1] = now - w->start < 2 * period ? w->max[0] : 0;
		w->max[0] = 0;
		w->start = now;
	}
	if (v > w->max[0])
		w->max[0] = v;
}

/* The largest of the last one to two periods at `now` (0 after two idle ones). */
static inline uint64_t ur_win_max_get(const struct ur_win_max *w, uint64_t now, uint64_t period)
{
	uint64_t age = now > w->start ? now - w->start : 0;

	if (age >= 2 * period)
		return 0;
	if (age >= period)
		return w->max[0]; /* this period's is the last one's by now */
	return w->max[0] > w->max[1] ? w->max[0] : w->max[1];
}

#endif
