/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * How long a frame waited in a program's receive ring before the program
 * took it in. One that waited 10 ms or more was there while the host ran
 * something else: on a loaded host that, not the network, is what makes a
 * peer's answers late and local ACK timeouts spurious. Counted
 * (dp_rx_waited_10ms), so that a user can tell the two apart.
 *
 * af_packet's frames carry the kernel's receive time (CLOCK_REALTIME, in
 * the ring's header); the device daemon stamps each frame it puts in a
 * program's memif ring (its descriptor's metadata, which memif leaves to
 * the application), and a process sending to another process of the
 * device stamps each record of their ring (peer_loop.c, by the coarse
 * clock: the receiver adds two of its ticks, how far it trailed here, to
 * the wait it asks for):
 * CLOCK_MONOTONIC in units of 1,024 ns, 32 bits (they wrap after 73
 * minutes), never 0, which is "not stamped".
 */
#ifndef UROCE_RX_WAIT_H
#define UROCE_RX_WAIT_H

#include <stdbool.h>
#include <stdint.h>

#define DP_RX_WAIT_LATE_NS 10000000ull
#define DP_RX_WAIT_LONG_NS 50000000ull

static inline uint32_t dp_rx_stamp(uint64_t mono_ns)
{
	return (uint32_t)(mono_ns >> 10) | 1;
}

/* How long a frame stamped `stamp` had waited by `now` (CLOCK_MONOTONIC):
 * 0 for one unstamped or stamped after `now` (while we read the clock). */
static inline uint64_t dp_rx_stamp_waited(uint32_t stamp, uint64_t now)
{
	uint32_t waited = dp_rx_stamp(now) - stamp;

	return stamp && waited < (1u << 31) ? (uint64_t)waited << 10 : 0;
}

/* Whether a wait of `ns` was a long one: 10 ms, to the stamps' 1,024 ns. */
static inline bool dp_rx_wait_late(uint64_t ns)
{
	return ns >= (DP_RX_WAIT_LATE_NS >> 10 << 10);
}

static inline bool dp_rx_stamp_late(uint32_t stamp, uint64_t now)
{
	return dp_rx_wait_late(dp_rx_stamp_waited(stamp, now));
}

/* The same for a receive time in CLOCK_REALTIME nanoseconds, given how far
 * CLOCK_REALTIME was ahead of CLOCK_MONOTONIC when last looked at. */
static inline uint64_t dp_rx_time_waited(uint64_t real_ns, uint64_t now, uint64_t real_ahead_ns)
{
	uint64_t real_now = now + real_ahead_ns;

	return real_now > real_ns ? real_now - real_ns : 0;
}

static inline bool dp_rx_time_late(uint64_t real_ns, uint64_t now, uint64_t real_ahead_ns)
{
	return dp_rx_wait_late(dp_rx_time_waited(real_ns, now, real_ahead_ns));
}

#endif
