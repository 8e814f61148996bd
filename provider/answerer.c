/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The late answerer: a NIC answers a request while its host is busy; a
 * program's engine answers only when one of its threads gets a CPU. On a
 * host with more runnable threads than cores the progress thread may wait
 * tens of milliseconds for its turn while the peer's requests sit in the
 * receive ring, and the peer's local ACK timeout expires with nothing lost.
 *
 * This thread sleeps at real-time priority (SCHED_FIFO 1) and looks every
 * tick (UROCE_ANSWER_NS, 5 ms; 50 ms on a device that moved no frame for a
 * second, so that an idle program costs next to nothing). If no pass ran
 * for a whole tick while work waits (the progress thread awake but not
 * running, its nap over, or its fds readable), or on any other tick the
 * oldest frame in the receive ring has waited 10 ms, it takes the progress
 * lock and runs the passes itself, for at most ANSWER_BUDGET_NS. The lock
 * inherits priority, so a thread preempted while holding it runs until it
 * lets go. Between ticks the answerer costs nothing, and while passes keep
 * up it only tries the lock to look at the ring: the CPU it uses is work
 * the program's threads were late for, not more.
 * Earlier tries gave the progress thread real-time priority or a heavier
 * weight all the time; they answered sooner but took the CPU from the
 * threads that post receives (docs/shared-device.md).
 *
 * Without the privilege for SCHED_FIFO (CAP_SYS_NICE or RLIMIT_RTPRIO) the
 * thread is not started, and the log says so once at level 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "dp_counters.h"
#include "uroce.h"

#define ANSWER_BUDGET_NS 1000000ull /* longest spell of passes at real-time priority */
#define QUIET_NS 1000000000ull      /* a device that moved no frame this long is idle... */
#define QUIET_TICK_NS 50000000ull   /* ...and looked at this seldom (an idle program's CPU) */

void uroce_answerer_lock_init(pthread_mutex_t *lock)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
	pthread_mutex_init(lock, &a);
	pthread_mutexattr_destroy(&a);
}

/* Whether the engine has work that no pass took up: read without the lock. */
static bool work_waiting(struct uroce_nic *nic, uint64_t now)
{
	uint64_t until = atomic_load(&nic->sleep_until);
	struct pollfd p[3] = {{.fd = nic->wake_fd, .events = POLLIN},
			      {.fd = atomic_load(&nic->sleep_fd), .events = POLLIN},
			      {.fd = uroce_dp_loop_fd(nic->dp), .events = POLLIN}};

	/* awake: running, waiting for a CPU, or napping beside a lock whose
	 * holder lost its CPU; a whole tick without a pass is late either way */
	if (!until || now >= until)
		return true;
	/* asleep, and woken (or about to be) by a frame, a post or a peer */
	return poll(p, 3, 0) > 0;
}

/* Frames this process moved on the device, read without the lock. */
static uint64_t frames_moved(struct uroce_nic *nic)
{
	const uint64_t *dp = uroce_shared_row(&nic->shared) + UR_CTR_COUNT;

	return dp[DP_CTR_dp_rx_frames] + dp[DP_CTR_dp_tx_frames] + dp[DP_CTR_dp_tx_loopback];
}

/*
 * Passes ran this tick, but perhaps too seldom for what comes: an
 * application that drives its own progress (uroce_poll_cq) and spends
 * milliseconds between polls checking data or posting takes a burst per
 * poll while the ring fills behind it, and its oldest frames, among them
 * the peer's ACKs and requests, wait there as long as if nobody ran. Or no
 * pass ran and nothing seemed to wait, but a frame did (memif frames
 * signal nobody once a pass masked the ring's interrupt). If the oldest
 * frame has waited 10 ms, answer. The lock is only tried: its holder will
 * run a pass, or is a verb about to.
 */
static void behind(struct uroce_nic *nic, uint64_t now)
{
	/* a dead device takes nothing in: its frames stay old for good */
	if (atomic_load_explicit(&nic->fatal, memory_order_relaxed) ||
	    pthread_mutex_trylock(&nic->lock))
		return;
	if (uroce_dp_rx_backlog_late(nic->dp, now)) {
		uroce_progress_drain(nic, ANSWER_BUDGET_NS);
		uroce_shared_row(&nic->shared)[UR_CTR_COUNT + DP_CTR_dp_late_backlog_passes]++;
	}
	pthread_mutex_unlock(&nic->lock);
	/* a doorbell a post left to us: the progress thread's, not a pass
	 * here (an application that posts all the time nearly always has one
	 * pending, and would get passes at real-time priority every tick,
	 * taken from its own thread) */
	uroce_progress_unlocked(nic);
}

/* Cancelled in its sleep: the lcore id it registered goes back. */
static void unregister(void *arg)
{
	(void)arg;
	uroce_dp_thread_unregister();
}

/* Every tick, for good: it ends cancelled in its sleep. */
static void watch(struct uroce_nic *nic)
{
	uint64_t tick = nic->cfg.answer_ns, seen = 0, moved = 0, moved_at = 0;
	struct timespec next;

	clock_gettime(CLOCK_MONOTONIC, &next);
	for (;;) {
		uint64_t passes, now, frames;

		next.tv_nsec += (long)(tick % 1000000000ull);
		next.tv_sec += (time_t)(tick / 1000000000ull);
		while (next.tv_nsec >= 1000000000l) {
			next.tv_nsec -= 1000000000l;
			next.tv_sec++;
		}
		/* the only place it can be cancelled: never inside a pass */
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		now = uroce_now_ns();
		/* after a long stall of our own, start the ticks from now */
		if ((uint64_t)next.tv_sec * 1000000000ull + (uint64_t)next.tv_nsec + tick < now) {
			next.tv_sec = (time_t)(now / 1000000000ull);
			next.tv_nsec = (long)(now % 1000000000ull);
		}
		/* idle, a wake-up every 50 ms; once frames move, every tick */
		frames = frames_moved(nic);
		if (frames != moved) {
			moved = frames;
			moved_at = now;
		}
		tick = now - moved_at >= QUIET_NS && nic->cfg.answer_ns < QUIET_TICK_NS
			       ? QUIET_TICK_NS
			       : nic->cfg.answer_ns;
		passes = atomic_load_explicit(&nic->passes, memory_order_relaxed);
		if (passes != seen || !work_waiting(nic, now)) {
			seen = passes;
			behind(nic, now);
			continue;
		}
		pthread_mutex_lock(&nic->lock);
		if (atomic_load_explicit(&nic->passes, memory_order_relaxed) == seen) {
			uroce_progress_drain(nic, ANSWER_BUDGET_NS);
			uroce_shared_row(&nic->shared)[UR_CTR_COUNT + DP_CTR_dp_late_passes]++;
		}
		seen = atomic_load_explicit(&nic->passes, memory_order_relaxed);
		pthread_mutex_unlock(&nic->lock);
	}
}

static void *answerer(void *arg)
{
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	uroce_dp_thread_register();
	/* the lcore id goes back however the thread ends */
	pthread_cleanup_push(unregister, NULL);
	watch(arg);
	pthread_cleanup_pop(1);
	return NULL;
}

void uroce_answerer_start(struct uroce_nic *nic)
{
	struct sched_param sp = {.sched_priority = 1};
	pthread_attr_t a;
	int err;

	if (!nic->cfg.answer_ns)
		return;
	pthread_attr_init(&a);
	pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&a, SCHED_FIFO);
	pthread_attr_setschedparam(&a, &sp);
	err = pthread_create(&nic->answerer, &a, answerer, nic);
	pthread_attr_destroy(&a);
	if (err) {
		uroce_log(nic, 1, "no late answerer (SCHED_FIFO 1: %s): answers wait for the "
				  "progress thread's turn on a CPU", strerror(err));
		return;
	}
	pthread_setname_np(nic->answerer, "uroce-answer");
	nic->answerer_started = true;
}

void uroce_answerer_stop(struct uroce_nic *nic)
{
	if (!nic->answerer_started)
		return;
	pthread_cancel(nic->answerer);
	pthread_join(nic->answerer, NULL);
	nic->answerer_started = false;
}
