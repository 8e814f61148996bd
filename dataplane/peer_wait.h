/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Frames for other processes of the device (peer_loop.h) that the
 * receiver's socket had no room for yet: one queue per destination (a QP
 * number block, so one receiving process each), so that a slow receiver
 * holds back only its own frames, as a NIC's loopback queues per
 * destination. Each destination's frames leave in the order they came;
 * all destinations together hold at most a fixed number of frames (the
 * caller counts those it cannot add as dropped). The slots are allocated
 * once, at open: nothing is allocated per frame. No DPDK here: a frame is
 * the caller's pointer, so the structure is tested on its own
 * (test/unit/test_peer_wait.c).
 */
#ifndef UROCE_DP_PEER_WAIT_H
#define UROCE_DP_PEER_WAIT_H

#include <stdbool.h>
#include <stdint.h>

struct dp_peer_wait {
	uint32_t cap;	  /* frames waiting at most, all destinations together */
	uint32_t ndest;	  /* destinations 0 .. ndest - 1 */
	uint32_t n;	  /* frames waiting */
	void **frame;	  /* [cap] */
	uint32_t *next;	  /* [cap] the next slot of its destination's queue, or of the free list */
	uint32_t free;	  /* first free slot */
	uint32_t *head;	  /* [ndest] each destination's oldest frame's slot, or DP_PW_NONE */
	uint32_t *tail;	  /* [ndest] and its newest */
	uint32_t *active; /* destinations with frames waiting, nactive of them */
	uint32_t nactive;
};

#define DP_PW_NONE UINT32_MAX

/* 0, or -ENOMEM; cap > 0. */
int dp_peer_wait_init(struct dp_peer_wait *w, uint32_t cap, uint32_t ndest);
/* The frames still waiting go to drop(arg, frame) first. */
void dp_peer_wait_fini(struct dp_peer_wait *w, void (*drop)(void *arg, void *frame), void *arg);

/* Frames wait for dest already: a new one goes behind them, in order. */
static inline bool dp_peer_wait_busy(const struct dp_peer_wait *w, uint32_t dest)
{
	return dest < w->ndest && w->head[dest] != DP_PW_NONE;
}

/* The frame waits behind dest's others: 0, or -ENOBUFS (all slots taken; the frame stays the
 * caller's) or -EINVAL (no such destination). */
int dp_peer_wait_push(struct dp_peer_wait *w, uint32_t dest, void *frame);

/*
 * Each destination's frames to send(arg, dest, frame), oldest first, until
 * it answers -EAGAIN (that receiver is still behind: its frame stays first
 * in its queue, and the next destination's turn comes); any other answer
 * means send took the frame (sent, or counted and freed). Returns how many
 * frames send took.
 */
unsigned dp_peer_wait_flush(struct dp_peer_wait *w,
			    int (*send)(void *arg, uint32_t dest, void *frame), void *arg);

#endif
