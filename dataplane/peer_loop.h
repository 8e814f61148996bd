/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Loopback between processes: frames to the device's own MAC whose
 * destination QP belongs to another process of the host (its QP number
 * block, provider/shared.h). Each process binds one unix datagram socket
 * per block it holds, named in the abstract namespace (scoped to the
 * network namespace, freed by the kernel when the process dies); a sender
 * writes the frame to the block's name and rings the block's bell, a word
 * in memory all the device's users map, so that a busy receiver looks at
 * its sockets only when something came. No daemon is in the path, and it
 * works the same whatever the port (docs/shared-device.md).
 */
#ifndef UROCE_DP_PEER_LOOP_H
#define UROCE_DP_PEER_LOOP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "dataplane.h"

#define DP_PEER_MAX_BLOCKS 64
#define DP_PEER_MAX_CONNS 256 /* senders connected to us at once */
#define DP_PEER_BLOCKS 4096   /* QP number blocks on a device (provider/shared.h) */

struct dp_peer_loop {
	char device[32];     /* the sockets' names: "\0uroce-loop/<device>/<block>" */
	int ep_fd;           /* epoll set of our sockets, for a sleeping receiver */
	unsigned nown;
	uint32_t own[DP_PEER_MAX_BLOCKS];  /* blocks we hold */
	int listen_fd[DP_PEER_MAX_BLOCKS]; /* their listeners */
	unsigned nconn;
	int conn[DP_PEER_MAX_CONNS];       /* senders connected to us */
	bool recheck;        /* look at every socket on the next receive, bell or not */
	int *to_fd;          /* [DP_PEER_BLOCKS]: our connection to each block's owner, or -1 */
	_Atomic uint32_t *bells; /* shared; block b's at bells[b * DP_BELL_STRIDE] */
	uint8_t *rx_buf;     /* one frame, read in place by the receiver */
	uint32_t frame_max;
};

#define DP_BELL_STRIDE 16 /* a cache line per block: senders to different blocks do not collide */

/* Ready to send (bells may be NULL: then nothing crosses processes). */
int dp_peer_loop_init(struct dp_peer_loop *pl, const char *device, _Atomic uint32_t *bells,
		      uint32_t frame_max);
void dp_peer_loop_fini(struct dp_peer_loop *pl);

/* The blocks we hold now: a socket bound for each new one. */
int dp_peer_loop_own(struct dp_peer_loop *pl, const uint32_t *blocks, unsigned n);
bool dp_peer_loop_owns(const struct dp_peer_loop *pl, uint32_t block);

/* One frame to block's owner: 0, or -errno (no owner, its queue full). */
int dp_peer_loop_send(struct dp_peer_loop *pl, uint32_t block, const uint8_t *frame,
		      uint32_t len);

/* Whether dp_peer_loop_rx may find frames: a bell of ours rung, or a look
 * owed (the caller's cheap test, every pass). */
static inline bool dp_peer_loop_maybe(const struct dp_peer_loop *pl)
{
	if (pl->recheck)
		return true;
	for (unsigned i = 0; pl->bells && i < pl->nown; i++)
		if (atomic_load_explicit(&pl->bells[(size_t)pl->own[i] * DP_BELL_STRIDE],
					 memory_order_relaxed))
			return true;
	return false;
}

/* Up to max frames from other processes to fn; how many. */
unsigned dp_peer_loop_rx(struct dp_peer_loop *pl, uroce_dp_rx_fn fn, void *arg, unsigned max);

/* Look at every socket on the next receive, bell or not: after a wake-up
 * on ep_fd (a sender killed between its write and its bell leaves one). */
void dp_peer_loop_recheck(struct dp_peer_loop *pl);

#endif
