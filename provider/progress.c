/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Progress: who runs the engine and the port, and when.
 *
 * Whoever holds nic->lock runs one pass: receive a burst, run doorbells and
 * timers, transmit a burst. Application threads take a pass opportunistically
 * (trylock) when they post or find a CQ empty, which gives the lowest
 * latency and no cross-thread handoff. A progress thread takes passes when
 * no application call is doing so, so that one-sided operations complete
 * while the target program sits in read() or spins on memory. It polls while
 * traffic flows, then sleeps on the port's fd (af_packet) until a frame or
 * the next engine deadline, so an idle process uses no CPU; while an
 * application thread is driving, it stays out of the way.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "uroce.h"

/*
 * The timings, in one place. Each was chosen by measurement on a 2-vCPU VM
 * where a thread's wake-up costs tens of microseconds of a core under load:
 * docs/progress-and-cpu.md gives each one's commands, commits and figures.
 * Two are tunable (UROCE_SPIN_NS, UROCE_YIELD_NS: nic->cfg, defaults in
 * config.h).
 */
#define RX_BURST 32                   /* frames taken in per pass */
#define RX_DEFER_PASSES 128           /* timers wait at most this many full bursts */
#define TX_BURST 64                   /* frames sent per pass */
#define TX_RECLOCK_BYTES 16384        /* a transmit stage this large reads the clock after */
#define PASS_PAUSE_NS 1000000ull      /* a stage this long lost the CPU on the way */
#define RX_PAUSE_RETAKES 4            /* bursts taken again after a pause, before the timers */
#define BACKOFF_NS 1000ull            /* first nap when the application drives (memif) */
#define FD_BACKOFF_NS 16000ull        /* the same over a port with an fd (af_packet) */
#define BACKOFF_MAX_NS 64000ull       /* naps double up to this while the lock stays busy */
#define HOUSEKEEP_NS 1000000ull       /* a pass at least this often, for neighbours and counters */
#define DRIVE_NAP_MAX_NS HOUSEKEEP_NS /* naps double up to this while an application drives */
#define APP_DRIVES_NS 50000ull        /* an application that passed this recently drives */
#define ARM_SERVES_NS HOUSEKEEP_NS  /* after a CQ's arm, the application may block this long */
#define APP_RECENT_NS 10000ull        /* after an application pass this recent, posts may follow */
#define POST_WAIT_NS 40000ull         /* a post runs a pass itself unless one comes this soon */
#define MAX_SLEEP_NS 100000000ull     /* longest sleep, before the ACK-timeout cap */
#define NAP_MIN_NS 20000ull           /* memif, idle: shortest nap */
#define NAP_MAX_NS 500000ull          /* memif, idle: longest nap */
#define NAP_IDLE_SHARE 16             /* memif, idle: a nap is this fraction of the idle spell */
#define IRQ_SLEEP_MAX_NS 10000000ull  /* memif with its interrupt armed: longest sleep */
#define COUNTER_FILE_NS 500000000ull  /* the hw_counters files are rewritten this often */
#define CLOCK_EVERY_POLLS 16          /* an empty application poll reads the clock this seldom */
#define TIMER_SLACK_NS 1000ul         /* the default 50 us would stretch paced gaps */
/* a QP whose frame went to a process of the device that is behind sends
 * its next this much later: long against a frame's few microseconds, short
 * against any QP timeout; a stopped receiver gets one frame per pause from
 * it (docs/shared-device.md) */
#define LOOP_HOLD_NS 50000u


uint64_t uroce_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- the engine's host operations ---- */

static int host_tx_get(void *host, struct ur_txbuf *b)
{
	struct uroce_nic *nic = host;

	return uroce_dp_tx_get(nic->dp, &b->data, &b->cap, &b->cookie);
}

static void host_tx_put(void *host, struct ur_txbuf *b, uint32_t len)
{
	struct uroce_nic *nic = host;

	nic->tx_bytes += len;
	b->hold_ns = uroce_dp_tx_put(nic->dp, b->cookie, len) ? LOOP_HOLD_NS : 0;
}

static void host_cq_event(void *host, struct ur_cq *cq)
{
	struct uroce_cq *ucq = cq->host_ctx;
	struct ur_uverbs_comp_event_desc ev = {.cq_handle = (uintptr_t)&ucq->vcq.cq};

	(void)host;
	if (ucq->chan_wr < 0)
		return;
	/* one whole record per write: ibv_get_cq_event reads exactly this */
	if (send(ucq->chan_wr, &ev, sizeof(ev), MSG_DONTWAIT | MSG_NOSIGNAL) == sizeof(ev))
		ucq->events_sent++;
}

/* Each event goes to the context that made its object, as on a NIC. */
static void host_async_event(void *host, enum ur_async_event ev, void *obj)
{
	struct ibv_context *owner;
	uint64_t element;

	(void)host;
	switch (ev) {
	case UR_EVENT_CQ_ERR:
		owner = ((struct uroce_cq *)obj)->vcq.cq.context;
		element = (uintptr_t)&((struct uroce_cq *)obj)->vcq.cq;
		break;
	case UR_EVENT_SRQ_LIMIT_REACHED:
	case UR_EVENT_SRQ_ERR:
		owner = ((struct uroce_srq *)obj)->vsrq.srq.context;
		element = (uintptr_t)&((struct uroce_srq *)obj)->vsrq.srq;
		break;
	default: {
		struct uroce_qp *uqp = obj;

		/* destroy_qp waits for the events handed out: count only those that were */
		if (uroce_async_event(to_uctx(uqp->vqp.qp.context), (enum ibv_event_type)ev,
				      (uintptr_t)&uqp->vqp.qp))
			uqp->events_sent++;
		return;
	}
	}
	uroce_async_event(to_uctx(owner), (enum ibv_event_type)ev, element);
}

static uint64_t host_random(void *host)
{
	uint64_t v;

	(void)host;
	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = uroce_now_ns() * 0x9e3779b97f4a7c15ull;
	return v;
}

static void host_log(void *host, const char *line)
{
	uroce_log(host, 1, "%s", line);
}

const struct ur_host_ops uroce_host_ops = {
	.tx_get = host_tx_get,
	.tx_put = host_tx_put,
	.cq_event = host_cq_event,
	.async_event = host_async_event,
	.random = host_random,
	.log = host_log,
	.fault_in = uroce_odp_fault_in,
};

/* ---- one pass ---- */

struct rx_arg {
	struct uroce_nic *nic;
	uint64_t now;
};

static void rx_frame(void *arg, const uint8_t *frame, uint32_t len)
{
	struct rx_arg *a = arg;

	ur_dev_rx(a->nic->engine, frame, len, a->now);
}

/* Called with nic->lock held: receive, timers, transmit. Returns frames moved. */
static unsigned run_pass(struct uroce_nic *nic, uint64_t now)
{
	struct rx_arg a = {nic, now};
	unsigned n = 0, got;

	/* under the lock: a plain increment, published for the answerer */
	atomic_store_explicit(&nic->passes, atomic_load_explicit(&nic->passes, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	/* a dead device (daemon_link.c) takes nothing in, and its port does
	 * not attach to a daemon that comes later */
	for (unsigned k = 0;; k++) {
		uint64_t began = now;

		a.now = now;
		got = atomic_load_explicit(&nic->fatal, memory_order_relaxed)
			  ? 0
			  : uroce_dp_rx(nic->dp, rx_frame, &a, RX_BURST, now);
		n += got;
		/* a burst of large frames takes tens of microseconds to take
		 * in, and a loaded host may take the CPU away in the middle of
		 * any burst for milliseconds: the timers and the transmit stage
		 * (held ACKs start there, retransmit timers are armed there)
		 * must see that time, or a packet sent now has its timeout
		 * counted from before the pause */
		if (got)
			now = uroce_now_ns();
		/* ...and what came during the pause is in the ring, unseen:
		 * the timers would give up on answers already here */
		if (!got || got == RX_BURST || now - began < PASS_PAUSE_NS || k == RX_PAUSE_RETAKES)
			break;
	}
	/* A full burst leaves frames in the ring: after this process was not
	 * scheduled for a while, they hold the ACKs that the overdue timers
	 * would otherwise give up on, costing a retry each. The timers wait
	 * until a burst comes in short (the ring is drained), for a bounded
	 * number of passes; doorbells run every pass. */
	if (got == RX_BURST && nic->timers_deferred < RX_DEFER_PASSES) {
		nic->timers_deferred++;
		ur_dev_run_doorbells(nic->engine, now);
	} else {
		nic->timers_deferred = 0;
		ur_dev_poll(nic->engine, now);
	}
	nic->tx_bytes = 0;
	n += ur_dev_tx(nic->engine, now, TX_BURST);
	uroce_dp_tx_flush(nic->dp, now);
	/* large frames take long enough to build that the CPU may go away
	 * meanwhile (a few small ones are not worth a clock read) */
	if (nic->tx_bytes >= TX_RECLOCK_BYTES) {
		uint64_t end = uroce_now_ns();

		if (end - now >= PASS_PAUSE_NS)
			ur_dev_tx_late(nic->engine, now, end);
	}
	/* whoever passes sees the daemon go: an application that keeps the
	 * lock busy hears of it as soon as the progress thread would */
	uroce_daemon_link_watch(nic, now);
	return n;
}

/* Transmit what is ready, for a caller that holds nic->lock already
 * (destroy_qp sends the ACK a QP held); nothing is received. */
void uroce_progress_tx_locked(struct uroce_nic *nic)
{
	uint64_t now = uroce_now_ns();

	ur_dev_tx(nic->engine, now, TX_BURST);
	uroce_dp_tx_flush(nic->dp, now);
}

unsigned uroce_progress_drain(struct uroce_nic *nic, uint64_t budget_ns)
{
	uint64_t start = uroce_now_ns(), now = start;
	unsigned moved = 0, n;

	do {
		n = run_pass(nic, now);
		moved += n;
		now = uroce_now_ns();
	} while (n && now - start < budget_ns);
	return moved;
}

/* Wake the sleeping progress thread if the engine now needs it earlier. */
static void maybe_wake(struct uroce_nic *nic, uint64_t deadline)
{
	uint64_t until = atomic_load(&nic->sleep_until);
	uint64_t one = 1;

	if (until && deadline < until && write(nic->wake_fd, &one, sizeof(one)) < 0)
		uroce_log(nic, 2, "wake write: %s", strerror(errno));
}

/*
 * Called after letting nic->lock go: a post whose kick found the lock taken
 * left its doorbell to the holder (uroce_progress_kick), and one rung after
 * the holder's last pass would wait for the progress thread's own wake-up.
 * True if one waits (pairs with the post's push, seq_cst).
 */
static bool doorbell_left(struct uroce_nic *nic)
{
	atomic_thread_fence(memory_order_seq_cst);
	return ur_dev_doorbell_pending(nic->engine);
}

void uroce_progress_unlocked(struct uroce_nic *nic)
{
	if (doorbell_left(nic))
		maybe_wake(nic, uroce_now_ns());
}

unsigned uroce_progress_kick(struct uroce_nic *nic)
{
	uint64_t now, deadline;
	unsigned moved;

	if (pthread_mutex_trylock(&nic->lock))
		return 0; /* the holder will see our doorbell before it lets go */
	now = uroce_now_ns();
	moved = run_pass(nic, now);
	deadline = ur_dev_next_deadline(nic->engine);
	/* frames one context sent another wait in the loopback ring: an
	 * application about to block on its CQ's channel would not take them */
	if (uroce_dp_loop_pending(nic->dp))
		deadline = now;
	pthread_mutex_unlock(&nic->lock);
	atomic_store_explicit(&nic->app_pass_ns, now, memory_order_relaxed);
	if (doorbell_left(nic))
		deadline = now;
	maybe_wake(nic, deadline);
	return moved;
}

/*
 * After a post: run a pass now only if no pass is coming soon anyway. An
 * awake progress thread runs one within microseconds, and so does the
 * application's next ibv_poll_cq; meanwhile the posts of a burst gather and
 * leave in one transmit burst (one sendto over af_packet) instead of one
 * each. A progress thread asleep for longer would not see the doorbell in
 * time: kick then. It sleeps briefly while an application is passing.
 */
void uroce_progress_post(struct uroce_nic *nic)
{
	uint64_t until;

	/* the doorbell before the look at sleep_until; sleep_until() pairs */
	atomic_thread_fence(memory_order_seq_cst);
	until = atomic_load_explicit(&nic->sleep_until, memory_order_seq_cst);
	if (until && until > uroce_now_ns() + POST_WAIT_NS)
		uroce_progress_kick(nic);
}

/*
 * An application spinning on an empty CQ (perftest, MPI) is this process's
 * progress engine, but while nothing moves it only burns CPU that other
 * processes need: with more busy threads than cores (many programs on one
 * device, a small machine) the spinner starves the very receivers it waits
 * for, their rings overflow and go-back-N retransmits whole windows. After
 * a spell with nothing moved, give the core to whoever else is runnable.
 * The spell is longer than a ping-pong's round trip: a yield there hands
 * the core away for a whole scheduler slice. sched_yield() returns at once
 * when nobody is, so an idle machine pays one system call per spell.
 */
void uroce_progress_idle(struct uroce_nic *nic, bool moved)
{
	static __thread uint64_t idle_since;
	static __thread unsigned empty;
	uint64_t now, after = nic->cfg.yield_after_ns;

	if (moved || !after) {
		idle_since = 0;
		empty = 0;
		return;
	}
	/* reading the clock costs a 64-byte message a noticeable share */
	if (++empty % CLOCK_EVERY_POLLS)
		return;
	now = uroce_now_ns();
	if (!idle_since) {
		idle_since = now;
	} else if (now - idle_since >= after) {
		sched_yield();
		idle_since = 0;
	}
}

/* A nap beside a busy lock, or beside a driving application (drive), whose
 * arming a CQ ends it (uroce_progress_armed). */
static void nap(struct uroce_nic *nic, uint64_t ns, bool drive)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull),
			      .tv_nsec = (long)(ns % 1000000000ull)};
	struct pollfd p = {.fd = nic->wake_fd, .events = POLLIN};
	uint64_t drain;

	if (!drive) {
		nanosleep(&ts, NULL);
		return;
	}
	atomic_store(&nic->drive_nap, true);
	/* pairs with uroce_progress_armed: it sees the nap, or we see its arm */
	atomic_thread_fence(memory_order_seq_cst);
	if (uroce_now_ns() - atomic_load(&nic->arm_ns) >= ARM_SERVES_NS &&
	    ppoll(&p, 1, &ts, NULL) > 0 && read(nic->wake_fd, &drain, sizeof(drain)) < 0 &&
	    errno != EAGAIN)
		uroce_log(nic, 2, "wake read: %s", strerror(errno));
	atomic_store(&nic->drive_nap, false);
}

void uroce_progress_armed(struct uroce_nic *nic)
{
	uint64_t one = 1;

	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load(&nic->drive_nap) && write(nic->wake_fd, &one, sizeof(one)) < 0)
		uroce_log(nic, 2, "wake write: %s", strerror(errno));
}

/*
 * How long a progress thread without a file descriptor to sleep on (memif)
 * naps: short while traffic may come at any moment, longer the longer it
 * has been idle, since each wake-up costs CPU. The cap bounds what an idle
 * device adds to the first packet that ends the idle spell, and keeps the
 * frames a fast sender can queue in the meantime well inside memif's
 * 2048-slot ring.
 */
static uint64_t nap_ns(uint64_t idle_ns)
{
	uint64_t nap = idle_ns / NAP_IDLE_SHARE;

	return nap < NAP_MIN_NS ? NAP_MIN_NS : nap > NAP_MAX_NS ? NAP_MAX_NS : nap;
}

/*
 * Block until a frame may be there, the engine's deadline, or a wake-up.
 * irq_fd: memif's ring interrupt, armed (uroce_dp_arm_wakeup), or -1.
 * True when another process's loopback frames woke us.
 */
static bool sleep_until(struct uroce_nic *nic, uint64_t now, uint64_t deadline,
			uint64_t idle_ns, int irq_fd)
{
	struct pollfd p[3] = {{.fd = nic->wake_fd, .events = POLLIN},
			      {.fd = irq_fd >= 0 ? irq_fd : uroce_dp_wait_fd(nic->dp),
			       .events = POLLIN},
			      {.fd = uroce_dp_loop_fd(nic->dp), .events = POLLIN}};
	uint64_t wait = deadline > now ? deadline - now : 0, drain, cap, nap;
	bool woken_by_loop = false;

	if (wait > MAX_SLEEP_NS)
		wait = MAX_SLEEP_NS;
	/* no fd to say a frame came (memif unarmed): nap, however far the
	 * deadline; an armed memif peer that is not uroce may miss the flag
	 * (DPDK's PMD does not fence): look again in 10 ms */
	cap = irq_fd >= 0 ? IRQ_SLEEP_MAX_NS : p[1].fd < 0 ? nap_ns(idle_ns) : wait;
	nap = wait > cap ? cap : wait;
	atomic_store(&nic->sleep_fd, p[1].fd);
	/* when the nap ends, not the deadline: past it, the thread is awake
	 * (or waiting for a CPU), and the answerer must not take it for asleep
	 * with frames masked behind it */
	atomic_store(&nic->sleep_until, now + nap);
	/* Pairs with the doorbell push an application made before its trylock
	 * failed: one of us sees the other (seq_cst on both sides). */
	atomic_thread_fence(memory_order_seq_cst);
	if (!ur_dev_doorbell_pending(nic->engine)) {
		/* to the nanosecond: a paced QP's next packet is due in microseconds */
		struct timespec ts = {.tv_sec = (time_t)(nap / 1000000000ull),
				      .tv_nsec = (long)(nap % 1000000000ull)};

		/* a negative fd is skipped: memif naps with the loopback fd only */
		if (ppoll(p, 3, &ts, NULL) > 0 && (p[2].revents & POLLIN))
			woken_by_loop = true;
	}
	atomic_store(&nic->sleep_until, 0);
	if (read(nic->wake_fd, &drain, sizeof(drain)) < 0 && errno != EAGAIN)
		uroce_log(nic, 2, "wake read: %s", strerror(errno));
	return woken_by_loop;
}

/*
 * An application that polls its CQs runs passes itself (uroce_poll_cq), so
 * while it does, a pass here only repeats its work, and on a machine with
 * fewer cores than busy threads takes the CPU that the application and its
 * peer need; each frame over af_packet also woke this thread only for it
 * to find the work done. Stand back then, as when the lock is busy, except
 * for a pass now and then for neighbours and counters. An application
 * that just armed a CQ may block in ibv_get_cq_event right after a post,
 * and needs this thread for that post: it does not drive for a while after
 * each arm (an event-mode program arms before every wait, so never drives).
 * Taking any arm ever made to mean that, as before, kept UCX from ever
 * driving: it arms a CQ once at its start (solicited events for its
 * connection traffic) and spins from then on, and its progress threads took
 * half a core each from under its ping-pongs.
 */
static bool app_polls(struct uroce_nic *nic, uint64_t now)
{
	return now - atomic_load_explicit(&nic->arm_ns, memory_order_relaxed) >= ARM_SERVES_NS &&
	       now - atomic_load_explicit(&nic->app_pass_ns, memory_order_relaxed) < APP_DRIVES_NS;
}

static void *progress_thread(void *arg)
{
	struct uroce_nic *nic = arg;
	uint64_t busy_until = 0, last_pass = 0;
	int irq_fd;
	/* While the application drives, the naps grow to the housekeeping pass:
	 * each wake-up costs tens of microseconds of a core it needs. */
	bool no_fd = uroce_dp_wait_fd(nic->dp) < 0; /* memif: nothing wakes a nap early */
	/* Over af_packet the naps start longer: they restart each time the
	 * application is seen off its core, hundreds of times a second. Over
	 * memif, where nothing wakes a nap early, longer first naps lost. */
	uint64_t first_nap = no_fd ? BACKOFF_NS : FD_BACKOFF_NS, backoff = first_nap;
	uint64_t spin_ns = nic->cfg.spin_ns;
	bool loop_woken = false;

	prctl(PR_SET_TIMERSLACK, TIMER_SLACK_NS, 0, 0, 0);
	/* A weight above the application's: on a host with more busy threads
	 * than cores, frames wait less for a thread to take them in and answer
	 * (docs/progress-and-cpu.md, "Answering sooner on a busy host") */
	if (nic->cfg.progress_nice &&
	    setpriority(PRIO_PROCESS, (id_t)gettid(), nic->cfg.progress_nice))
		uroce_log(nic, 0, "UROCE_PROGRESS_NICE=%d: %s; the progress thread keeps the "
				  "process's", nic->cfg.progress_nice, strerror(errno));
	uroce_dp_thread_register();

	while (!atomic_load(&nic->stop)) {
		uint64_t now, deadline;
		unsigned moved;
		bool pending, polls, drives;

		now = uroce_now_ns();
		polls = app_polls(nic, now);
		drives = polls && now - last_pass < HOUSEKEEP_NS;
		if (drives || pthread_mutex_trylock(&nic->lock)) {
			/* the application is running passes and moves the packets
			 * itself: waiting on the mutex would cost a futex sleep and
			 * wake-up each time. Look again shortly, and less often the
			 * longer it keeps the lock: each nap costs a timer and a
			 * system call, CPU the application and its peer need */
			nap(nic, backoff, drives);
			if (backoff < (drives ? DRIVE_NAP_MAX_NS : BACKOFF_MAX_NS))
				backoff *= 2;
			continue;
		}
		/* memif's interrupt and the other processes' wake-ups, if this
		 * thread asked for them before its sleep */
		uroce_dp_disarm_wakeup(nic->dp);
		uroce_dp_loop_disarm(nic->dp);
		/* a sender's frame woke us: it may have rung no bell (killed between) */
		if (loop_woken)
			uroce_dp_loop_woken(nic->dp);
		loop_woken = false;
		/* the clock is read under the lock: the engine must never see time go back */
		now = uroce_now_ns();
		last_pass = now;
		moved = run_pass(nic, now);
		/*
		 * A housekeeping pass amid a memif application's driving: nap on
		 * as long (restarting from 1 us made ten wake-ups a millisecond).
		 * Over af_packet the kernel's transmit path runs inside the
		 * application's sendto, its passes are long and sparse, and a
		 * pass here that found frames to move means it is not keeping
		 * up: look again soon.
		 */
		if (!polls || (moved && !no_fd))
			backoff = first_nap;
		uroce_neigh_poll(nic, now);
		/* a dead device takes nothing in and has no port to send on:
		 * what waits there waits for good, and spinning on it would
		 * take a core for as long as the program keeps it open */
		pending = !atomic_load_explicit(&nic->fatal, memory_order_relaxed) &&
			  (ur_dev_tx_pending(nic->engine) || uroce_dp_loop_pending(nic->dp));
		deadline = ur_dev_next_deadline(nic->engine);
		/* Sleeping past the ACK timeout would make each first send
		 * after a lull wake us to arm its retransmit timer. */
		if (deadline > now && deadline - now > ur_dev_quiet_ns(nic->engine))
			deadline = now + ur_dev_quiet_ns(nic->engine);
		if (now >= nic->next_counter_write) {
			uroce_dp_housekeeping(nic->dp);
			/* the writer flag and steering change only here, under the
			 * lock; a newly elected housekeeper also takes block 0 */
			uroce_shared_try_writer(&nic->shared);
			if (nic->shared.writer && !nic->steer_block0 && !nic->steer_unsupported)
				uroce_steer_update(nic);
			/* the housekeeper takes the wire's MADs for QP 1: it answers
			 * them, or passes them to the program they are for */
			if (nic->shared.writer && !nic->cm_served) {
				nic->cm_served = true;
				urcm_serve(nic->conf.name);
			}
		}
		pthread_mutex_unlock(&nic->lock);
		/* file I/O outside the lock: the engine never waits for the disk */
		if (now >= nic->next_counter_write) {
			/* the first pass writes whether elected or not: what a
			 * program killed before we opened counted becomes final */
			uroce_counters_write(nic, !nic->next_counter_write);
			nic->next_counter_write = now + COUNTER_FILE_NS;
		}
		if (moved || pending) {
			busy_until = now + spin_ns;
			continue;
		}
		if (now < busy_until)
			continue;
		if (deadline > now + COUNTER_FILE_NS)
			deadline = now + COUNTER_FILE_NS;
		/* an application that just ran a pass will likely post again
		 * and may not kick (uroce_progress_post): wake up soon */
		if (now - atomic_load_explicit(&nic->app_pass_ns, memory_order_relaxed) < APP_RECENT_NS &&
		    deadline > now + POST_WAIT_NS / 2)
			deadline = now + POST_WAIT_NS / 2;
		/* ask other processes' senders to wake us, and memif's peer to
		 * signal the next frame, under the lock (a pass may take the
		 * link down meanwhile); a busy lock: its holder moves frames */
		irq_fd = -1;
		if (!pthread_mutex_trylock(&nic->lock)) {
			if (!uroce_dp_loop_arm(nic->dp))
				irq_fd = -EAGAIN;
			else if (no_fd)
				irq_fd = uroce_dp_arm_wakeup(nic->dp, now);
			pthread_mutex_unlock(&nic->lock);
			if (irq_fd == -EAGAIN)
				continue; /* frames came meanwhile */
		} else if (deadline > now + (no_fd ? NAP_MAX_NS : BACKOFF_MAX_NS)) {
			/* the holder moves what is there now, and nobody will
			 * wake us for what comes after: sleep, but not long (as
			 * long as memif naps anyway; over a port with an fd, the
			 * longest nap beside a busy lock). Going round the loop
			 * instead (as from 5e7df31) napped a microsecond at a
			 * time and ran passes that only repeated the holder's */
			deadline = now + (no_fd ? NAP_MAX_NS : BACKOFF_MAX_NS);
		}
		loop_woken = sleep_until(nic, now, deadline, now - busy_until, irq_fd);
	}
	uroce_dp_thread_unregister();
	return NULL;
}

int uroce_progress_start(struct uroce_nic *nic)
{
	int err;

	atomic_store(&nic->stop, false);
	err = pthread_create(&nic->thread, NULL, progress_thread, nic);
	if (err)
		return -err;
	pthread_setname_np(nic->thread, "uroce-progress");
	uroce_answerer_start(nic);
	return 0;
}

void uroce_progress_stop(struct uroce_nic *nic)
{
	uint64_t one = 1;

	atomic_store(&nic->stop, true);
	if (write(nic->wake_fd, &one, sizeof(one)) < 0)
		uroce_log(nic, 2, "wake write: %s", strerror(errno));
	uroce_answerer_stop(nic);
	pthread_join(nic->thread, NULL);
	uroce_dp_housekeeping(nic->dp);
	uroce_counters_write(nic, true);
}
