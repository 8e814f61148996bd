/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Loopback between processes: frames to the device's own MAC whose
 * destination QP belongs to another process of the host (its QP number
 * block, provider/shared.h). Each process listens on one unix socket per
 * block it holds, a file in the device's directory (loop-<block>), so that
 * only the device's users (who may write its files) can connect to it, and
 * nobody else can take a block's name before its owner. A sender connects
 * once and hands the receiver a ring in shared memory (a memfd, over the
 * socket), then writes frames into the ring and rings the block's bell, a
 * word in memory all the device's users map: a busy receiver reads the
 * ring in place when the bell says so, with no system call on either side.
 * The socket stays for what memory cannot say: a receiver about to sleep
 * asks for one wake-up (a byte on the socket), and either side's death
 * hangs it up. No daemon is in the path, and it works the same whatever
 * the port (docs/shared-device.md).
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
#define DP_PEER_DIR_MAX 98    /* a unix socket's path (108 bytes) less "/loop-4095" */

/* A cache line of words per block in the shared bells file, so that senders
 * to different blocks do not collide. */
#define DP_BELL_STRIDE 16
enum {
	DP_BELL_RUNG,	 /* a sender wrote frames since the owner last looked */
	DP_BELL_ASLEEP,	 /* the owner sleeps: the next sender wakes it on its socket */
	DP_BELL_NEW,	 /* a sender connected: the owner accepts it */
	DP_BELL_OWNER,	 /* bumped by each new owner: senders to the last one connect again */
};

struct dp_loop_ring;

struct dp_peer_loop {
	char dir[DP_PEER_DIR_MAX]; /* the device's directory: the sockets are <dir>/loop-<block> */
	int ep_fd;           /* epoll set of our sockets, for a sleeping receiver */
	unsigned nown;
	uint32_t own[DP_PEER_MAX_BLOCKS];  /* blocks we hold */
	int listen_fd[DP_PEER_MAX_BLOCKS]; /* their listeners */
	uint64_t listen_ino[DP_PEER_MAX_BLOCKS]; /* and their files, which fini removes if */
	uint64_t listen_dev[DP_PEER_MAX_BLOCKS]; /* still there (not a later device's) */
	int pid;             /* who bound them: a forked child removes none */
	unsigned sock_mode;  /* the sockets' mode: the device's bells file's (0600 if none) */
	unsigned nconn;
	int conn[DP_PEER_MAX_CONNS];       /* senders connected to us */
	struct dp_loop_ring *conn_ring[DP_PEER_MAX_CONNS]; /* the ring each handed us, or NULL */
	uint64_t conn_tail[DP_PEER_MAX_CONNS]; /* how far we read each: ours, the ring's copy is for its sender */
	bool recheck;        /* look at every ring and socket on the next receive, bell or not */
	bool more;           /* frames left in a ring when the last receive's budget ran out */
	int *to_fd;          /* [DP_PEER_BLOCKS]: our connection to each block's owner, or -1 */
	struct dp_loop_ring **to_ring; /* [DP_PEER_BLOCKS]: the ring we write to it */
	uint32_t *to_owner;  /* [DP_PEER_BLOCKS]: the owner's DP_BELL_OWNER when we connected */
	uint64_t *to_retry_ns; /* [DP_PEER_BLOCKS]: hung up on by that owner: no new connection before */
	bool *to_refused;    /* [DP_PEER_BLOCKS]: and it said why: it has DP_PEER_MAX_CONNS senders */
	uint32_t *to_written; /* [DP_PEER_BLOCKS]: frames written into that connection's ring */
	_Atomic uint32_t *bells; /* shared; block b's words at bells[b * DP_BELL_STRIDE] */
	uint32_t frame_max;
	uint64_t lag_ns;     /* how far the senders' stamps (the coarse clock) may trail */
	uint64_t rx_waited;  /* frames received that had waited 10 ms or more: the caller counts them */
	uint64_t tx_unread;  /* frames a refusing owner never read (written before we heard): the caller counts them */
};

static inline _Atomic uint32_t *dp_bell(const struct dp_peer_loop *pl, uint32_t block, int word)
{
	return &pl->bells[(size_t)block * DP_BELL_STRIDE + (size_t)word];
}

/* Ready to send (bells may be NULL: then nothing crosses processes);
 * -ENAMETOOLONG if dir is longer than DP_PEER_DIR_MAX - 1 bytes, -EINVAL
 * if there are bells and no dir. */
int dp_peer_loop_init(struct dp_peer_loop *pl, const char *dir, _Atomic uint32_t *bells,
		      uint32_t frame_max);
void dp_peer_loop_fini(struct dp_peer_loop *pl);

/* The blocks we hold now: a socket bound for each new one (replacing the
 * file a past owner left). */
int dp_peer_loop_own(struct dp_peer_loop *pl, const uint32_t *blocks, unsigned n);
bool dp_peer_loop_owns(const struct dp_peer_loop *pl, uint32_t block);

/* One frame to block's owner: 0, or -errno (no owner, its ring full). */
int dp_peer_loop_send(struct dp_peer_loop *pl, uint32_t block, const uint8_t *frame,
		      uint32_t len);

/* Whether dp_peer_loop_rx may find frames: a bell of ours rung, or a look
 * owed (the caller's cheap test, every pass). */
static inline bool dp_peer_loop_maybe(const struct dp_peer_loop *pl)
{
	if (pl->recheck || pl->more)
		return true;
	for (unsigned i = 0; pl->bells && i < pl->nown; i++)
		if (atomic_load_explicit(dp_bell(pl, pl->own[i], DP_BELL_RUNG),
					 memory_order_relaxed) ||
		    atomic_load_explicit(dp_bell(pl, pl->own[i], DP_BELL_NEW),
					 memory_order_relaxed))
			return true;
	return false;
}

/* Up to max frames from other processes to fn, read in place; how many.
 * `now` (CLOCK_MONOTONIC) tells the frames that waited long (rx_waited). */
unsigned dp_peer_loop_rx(struct dp_peer_loop *pl, uroce_dp_rx_fn fn, void *arg, unsigned max,
			 uint64_t now);

/* Look at every ring and socket on the next receive, bell or not: after a
 * wake-up on ep_fd (a sender gone, or killed between its write and its
 * bell), and now and then to notice senders that went away. */
void dp_peer_loop_recheck(struct dp_peer_loop *pl);

/* Before sleeping on ep_fd: ask the next sender to each of our blocks for a
 * wake-up. False when frames came meanwhile (do not sleep). */
bool dp_peer_loop_arm(struct dp_peer_loop *pl);
/* Awake again: senders need not wake us. */
void dp_peer_loop_disarm(struct dp_peer_loop *pl);

#endif
