/* SPDX-License-Identifier: BSD-2-Clause */
#include <errno.h>
#include <stdlib.h>

#include "timer.h"

int ur_timer_heap_init(struct ur_timer_heap *h, uint32_t cap)
{
	if (cap < 16)
		cap = 16;
	h->slot = calloc(cap + 1, sizeof(*h->slot));
	if (!h->slot)
		return -ENOMEM;
	h->n = 0;
	h->cap = cap;
	return 0;
}

void ur_timer_heap_fini(struct ur_timer_heap *h)
{
	for (uint32_t i = 1; i <= h->n; i++)
		h->slot[i]->heap_pos = 0;
	free(h->slot);
	h->slot = NULL;
	h->n = h->cap = 0;
}

static void place(struct ur_timer_heap *h, uint32_t pos, struct ur_timer *t)
{
	h->slot[pos] = t;
	t->heap_pos = pos;
}

static void sift_up(struct ur_timer_heap *h, uint32_t pos)
{
	struct ur_timer *t = h->slot[pos];

	while (pos > 1 && h->slot[pos / 2]->expires > t->expires) {
		place(h, pos, h->slot[pos / 2]);
		pos /= 2;
	}
	place(h, pos, t);
}

static void sift_down(struct ur_timer_heap *h, uint32_t pos)
{
	struct ur_timer *t = h->slot[pos];

	for (;;) {
		uint32_t c = pos * 2;

		if (c > h->n)
			break;
		if (c + 1 <= h->n && h->slot[c + 1]->expires < h->slot[c]->expires)
			c++;
		if (h->slot[c]->expires >= t->expires)
			break;
		place(h, pos, h->slot[c]);
		pos = c;
	}
	place(h, pos, t);
}

int ur_timer_arm(struct ur_timer_heap *h, struct ur_timer *t, uint64_t expires)
{
	if (ur_timer_armed(t)) {
		uint64_t old = t->expires;

		t->expires = expires;
		if (expires < old)
			sift_up(h, t->heap_pos);
		else if (expires > old)
			sift_down(h, t->heap_pos);
		return 0;
	}
	if (h->n == h->cap) {
		uint32_t cap = h->cap * 2;
		struct ur_timer **s = realloc(h->slot, (cap + 1) * sizeof(*s));

		if (!s)
			return -ENOMEM;
		h->slot = s;
		h->cap = cap;
	}
	t->expires = expires;
	h->n++;
	place(h, h->n, t);
	sift_up(h, h->n);
	return 0;
}

void ur_timer_cancel(struct ur_timer_heap *h, struct ur_timer *t)
{
	uint32_t pos = t->heap_pos;
	struct ur_timer *last;

	if (!pos)
		return;
	t->heap_pos = 0;
	last = h->slot[h->n--];
	if (pos > h->n)
		return;
	place(h, pos, last);
	if (pos > 1 && h->slot[pos / 2]->expires > last->expires)
		sift_up(h, pos);
	else
		sift_down(h, pos);
}

struct ur_timer *ur_timer_pop_due(struct ur_timer_heap *h, uint64_t now)
{
	struct ur_timer *t;

	if (!h->n || h->slot[1]->expires > now)
		return NULL;
	t = h->slot[1];
	ur_timer_cancel(h, t);
	return t;
}
