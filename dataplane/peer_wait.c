/* SPDX-License-Identifier: BSD-2-Clause */
/* Frames waiting for other processes, a queue per destination: see peer_wait.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "peer_wait.h"

int dp_peer_wait_init(struct dp_peer_wait *w, uint32_t cap, uint32_t ndest)
{
	memset(w, 0, sizeof(*w));
	w->frame = calloc(cap, sizeof(*w->frame));
	w->next = calloc(cap, sizeof(*w->next));
	w->head = calloc(ndest, sizeof(*w->head));
	w->tail = calloc(ndest, sizeof(*w->tail));
	/* every frame may wait for a destination of its own */
	w->active = calloc(cap < ndest ? cap : ndest, sizeof(*w->active));
	if (!cap || !w->frame || !w->next || !w->head || !w->tail || !w->active) {
		dp_peer_wait_fini(w, NULL, NULL);
		return -ENOMEM;
	}
	w->cap = cap;
	w->ndest = ndest;
	for (uint32_t i = 0; i < cap; i++)
		w->next[i] = i + 1 < cap ? i + 1 : DP_PW_NONE;
	for (uint32_t d = 0; d < ndest; d++)
		w->head[d] = w->tail[d] = DP_PW_NONE;
	return 0;
}

/* dest's oldest frame leaves its queue; its slot is free again. */
static void *pop(struct dp_peer_wait *w, uint32_t dest)
{
	uint32_t s = w->head[dest];
	void *f = w->frame[s];

	w->head[dest] = w->next[s];
	if (w->head[dest] == DP_PW_NONE)
		w->tail[dest] = DP_PW_NONE;
	w->frame[s] = NULL;
	w->next[s] = w->free;
	w->free = s;
	w->n--;
	return f;
}

void dp_peer_wait_fini(struct dp_peer_wait *w, void (*drop)(void *arg, void *frame), void *arg)
{
	for (uint32_t i = 0; i < w->nactive; i++)
		while (w->head[w->active[i]] != DP_PW_NONE) {
			void *f = pop(w, w->active[i]);

			if (drop)
				drop(arg, f);
		}
	free(w->frame);
	free(w->next);
	free(w->head);
	free(w->tail);
	free(w->active);
	memset(w, 0, sizeof(*w));
}

int dp_peer_wait_push(struct dp_peer_wait *w, uint32_t dest, void *frame)
{
	uint32_t s;

	if (dest >= w->ndest)
		return -EINVAL;
	if (w->free == DP_PW_NONE)
		return -ENOBUFS;
	s = w->free;
	w->free = w->next[s];
	w->frame[s] = frame;
	w->next[s] = DP_PW_NONE;
	if (w->head[dest] == DP_PW_NONE) {
		w->head[dest] = s;
		w->active[w->nactive++] = dest; /* at most one per frame waiting: fits */
	} else {
		w->next[w->tail[dest]] = s;
	}
	w->tail[dest] = s;
	w->n++;
	return 0;
}

unsigned dp_peer_wait_flush(struct dp_peer_wait *w,
			    int (*send)(void *arg, uint32_t dest, void *frame), void *arg)
{
	unsigned took = 0;

	for (uint32_t i = 0; i < w->nactive;) {
		uint32_t d = w->active[i];

		while (w->head[d] != DP_PW_NONE && send(arg, d, w->frame[w->head[d]]) != -EAGAIN) {
			(void)pop(w, d);
			took++;
		}
		if (w->head[d] == DP_PW_NONE)
			w->active[i] =
			    w->active[--w->nactive]; /* the last one takes its turn here */
		else
			i++;
	}
	return took;
}
