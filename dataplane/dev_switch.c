/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The device daemon's switch (tools/uroced.c runs it): one port on the
 * wire shared by every program that uses the device, as a NIC's port is.
 *
 * Programs attach as memif clients on the device's socket, each with a
 * region and two rings of its own (docs/shared-device.md 4.3, 4.4). A
 * frame from the wire goes to the program that holds the number block of
 * its destination QP: the device's `blocks` file names the holder's pid
 * (the owner callback reads it), an attachment's pid comes from the
 * kernel (SO_PEERCRED). Block 0 (QP 0 and 1) names the housekeeper. ARP and
 * neighbour discovery go to every program, which learn their neighbours
 * from them as they would on the wire; the port answers for the device's
 * addresses. A frame from a program goes out on the wire. Frames between
 * programs never come here: they go from process to process (peer_loop.c).
 *
 * The switch never waits for a program: a full ring drops the frame,
 * counted, so a stuck program only loses its own traffic.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "dp_internal.h"
#include "memif_wire.h"
#include "netem.h"
#include "rx_wait.h"

#define SW_MAX_ATTACH 64
#define SW_BLOCKS 4096 /* QP number blocks (provider/shared.h, checked in tools/uroced.c) */
#define SW_CTL_NS 1000000ull /* look at the control sockets every millisecond */
#define SW_NO_OWNER_NS 1000000ull /* how long a block found without a holder stays so */
#define SW_WIRE_HEADROOM 32 /* port slots programs leave to the daemon's own frames */
#define SW_ACCEPT_BACKOFF_US 100000 /* after accept failed (no fds, no memory) */
/* A program's ring this full marks CE on the RoCE frames put in it: 1/4, so
 * the senders hear of it (CNP, DCQCN) while 3/4 of the ring still absorbs
 * what they sent meanwhile */
#define SW_ECN_DEPTH_DIV 4
/* A borrower that does not give the wire back this long after we asked
 * (stopped, in a debugger) loses it: it would hold every program's wire */
#define SW_RECALL_NS 1000000000ull
/* After a loan refused or taken by force, the next waits this long */
#define SW_RELEND_NS 1000000000ull

struct sw_attach {
	struct uroce_switch *sw;
	struct dp_memif m;
	bool leaving;	/* its control socket hung up: its last frames go out anyway */
	pid_t pid;
	bool used;
	bool out;	/* frames committed to its ring, not yet published */
	/* our own descriptor of its ring's eventfd, in the epoll set: the
	 * program holds the same file, so closing memif's descriptor would
	 * leave the registration behind; this one is removed, then closed */
	int sig_fd;
};

/* A program the greeter has shaken hands with, for the switch to take. */
struct sw_ready {
	struct dp_memif m;
	pid_t pid;
};

struct uroce_switch {
	struct uroce_dp *wire;
	int listen_fd;
	pthread_t greeter;
	atomic_bool stopping;
	pthread_mutex_t ready_lock;
	struct sw_ready *ready[SW_MAX_ATTACH]; /* under ready_lock */
	unsigned nready;
	int ready_fd; /* eventfd: the greeter has queued a program */
	/* the attached programs' ring eventfds (edge-triggered) and control
	 * sockets, registered while they are attached: a wait polls three
	 * descriptors, not two per program, and reads none of the eventfds */
	int ep_fd;
	char path[108];
	unsigned shift;
	int (*owner)(void *arg, unsigned block);
	void *owner_arg;
	uint64_t *ctr;
	uint64_t own_ctr[DP_CTR_COUNT];
	uint64_t next_ctl_ns;
	uint32_t bsize;
	/* the attachment (index + 1) of each block, learnt at its first frame */
	uint8_t route[SW_BLOCKS];
	/* a block nobody attached holds is asked about again only after this:
	 * frames for a program gone must not cost a system call each */
	uint64_t no_owner_until[SW_BLOCKS];
	uint64_t now;
	atomic_uint nprograms; /* attached or handed over: the greeter refuses beyond */
	struct sw_attach att[SW_MAX_ATTACH];
	unsigned first; /* the attachment that goes first on the port this pass */
	/* pass-through (pass_through.c): the wire's memif lent to a program
	 * alone on the device (attachment index + 1, 0: none), and asked back */
	bool pass_through;
	unsigned lent_to;
	bool recalling;
	uint32_t lent_conn; /* the wire's connection lent (memif.h lost) */
	uint32_t lent_gen;  /* the loan's number (the last one made) */
	uint64_t recall_ns; /* when we asked for it back */
	uint64_t lend_after_ns; /* a loan refused or taken: not again before */
	/* the last pass took a full burst from the port: frames wait in its
	 * receive ring, whose depth the PMDs do not tell */
	bool port_backlog;
	void (*log)(void *arg, const char *line);
	void *log_arg;
};

static void swlog(struct uroce_switch *sw, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void swlog(struct uroce_switch *sw, const char *fmt, ...)
{
	char line[256];
	va_list ap;

	if (!sw->log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	sw->log(sw->log_arg, line);
}

/*
 * Copy one frame into an attachment's ring, leaving `keep` slots free; a
 * full ring drops it, counted. RoCE frames leave DP_NEIGH_SLOTS to ARP and
 * ND: a program too busy to empty its ring must still find the answer to
 * its neighbour request there when it runs, or it gives up on the peer
 * after 2 s (neigh.c) and its QPs fail.
 */
static void to_program(struct uroce_switch *sw, struct sw_attach *a, const uint8_t *f,
		       uint32_t len, unsigned keep)
{
	uint32_t cap;
	uint8_t *buf;

	/* when the frame was put there: the program counts the long waits */
	a->m.tx_stamp = dp_rx_stamp(sw->now);
	if (dp_memif_tx_space(&a->m) <= keep) {
		sw->ctr[DP_CTR_dp_switch_full]++;
		return;
	}
	buf = dp_memif_tx_reserve(&a->m, len, &cap);
	if (buf) {
		memcpy(buf, f, len);
		/*
		 * A queue building up marks CE as a RoCE switch's does: the
		 * receiving program's QPs send CNPs and DCQCN slows their
		 * senders. Without it nothing slowed them but drops: a program
		 * or this switch short of CPU overflowed, go-back-N resent whole
		 * windows at line rate into the same queues, and over AF_XDP and
		 * tap a third of the frames were lost and QPs ran out of retries
		 * (docs/daemon.md "Port kinds tested").
		 */
		if (keep && (sw->port_backlog || a->m.ring_size - dp_memif_tx_space(&a->m) >=
							 a->m.ring_size / SW_ECN_DEPTH_DIV))
			sw->ctr[DP_CTR_dp_switch_ce_marked] += netem_mark_ce(buf, len);
		dp_memif_tx_commit(&a->m, len);
		a->out = true;
		sw->ctr[DP_CTR_dp_switch_frames]++;
		return;
	}
	/* a program's buffers smaller than the frame: copied in pieces */
	if (!dp_memif_tx_full(&a->m) && dp_memif_tx(&a->m, &f, &len, 1) == 1) {
		sw->ctr[DP_CTR_dp_switch_frames]++;
		return;
	}
	sw->ctr[DP_CTR_dp_switch_full]++;
}

static struct sw_attach *lookup(struct uroce_switch *sw, unsigned block)
{
	int pid;

	if (sw->route[block]) {
		struct sw_attach *a = &sw->att[sw->route[block] - 1];

		if (a->used && a->m.connected)
			return a;
		sw->route[block] = 0;
	}
	if (sw->now < sw->no_owner_until[block])
		return NULL;
	sw->no_owner_until[block] = sw->now + SW_NO_OWNER_NS;
	pid = sw->owner(sw->owner_arg, block);
	if (pid <= 0)
		return NULL;
	for (unsigned i = 0; i < SW_MAX_ATTACH; i++) {
		struct sw_attach *a = &sw->att[i];

		if (a->used && a->m.connected && a->pid == pid) {
			sw->route[block] = (uint8_t)(i + 1);
			sw->no_owner_until[block] = 0;
			return a;
		}
	}
	return NULL;
}

/* A RoCE frame from the wire for one of the device's MACs. */
static void from_wire(void *arg, const uint8_t *f, uint32_t len)
{
	struct uroce_switch *sw = arg;
	struct sw_attach *a = lookup(sw, (dp_frame_dqpn(f, len) >> sw->shift) % SW_BLOCKS);

	if (!a) {
		sw->ctr[DP_CTR_dp_switch_no_owner]++;
		return;
	}
	to_program(sw, a, f, len, DP_NEIGH_SLOTS);
}

/* ARP and ND from the wire: every program resolves its own neighbours
 * (a borrower of the wire saw them there). */
static void neigh_from_wire(void *arg, const uint8_t *f, uint32_t len)
{
	struct uroce_switch *sw = arg;

	for (unsigned i = 0; i < SW_MAX_ATTACH; i++)
		if (sw->att[i].used && sw->att[i].m.connected && sw->lent_to != i + 1)
			to_program(sw, &sw->att[i], f, len, 0);
}

/* A frame for the lent wire: to its borrower, which puts it there. */
static void to_lender(struct uroce_switch *sw, const uint8_t *f, uint32_t len)
{
	struct sw_attach *b = &sw->att[sw->lent_to - 1];

	b->m.tx_flags = DP_MEMIF_DESC_WIRE;
	to_program(sw, b, f, len, 0);
	b->m.tx_flags = 0;
}

/* The wire is ours again: its borrower yielded, or is gone. */
static void take_back(struct uroce_switch *sw, const char *why)
{
	swlog(sw, "pass-through: the wire is back from program %d (%s)",
	      (int)sw->att[sw->lent_to - 1].pid, why);
	uroce_dp_take_back(sw->wire, false);
	sw->lent_to = 0;
	sw->recalling = false;
}

/* From a borrower that does not answer: it reads in its own ring that it
 * lost the wire, and the wire's connection starts again (pass_through.c) */
static void take_by_force(struct uroce_switch *sw, const char *why)
{
	struct sw_attach *a = &sw->att[sw->lent_to - 1];

	swlog(sw, "pass-through: the wire is taken back from program %d (%s)", (int)a->pid, why);
	dp_memif_revoke(&a->m, sw->lent_gen);
	uroce_dp_take_back(sw->wire, true);
	sw->lent_to = 0;
	sw->recalling = false;
	sw->lend_after_ns = sw->now + SW_RELEND_NS;
}

/* Others' frames wait in their rings while the wire is asked back, rather
 * than pile up in a borrower that may not be listening (but a program
 * that left still gets its last frames out) */
static bool held_back(const struct uroce_switch *sw, const struct sw_attach *a)
{
	return sw->recalling && sw->lent_to != (unsigned)(a - sw->att) + 1 && !a->leaving;
}

/* uroce's own messages from a program: YIELD, the lent wire given back. */
static void program_msg(void *arg, const struct memif_msg *msg, int fd)
{
	struct sw_attach *a = arg;
	struct uroce_switch *sw = a->sw;

	if (fd >= 0)
		close(fd);
	if (dp_memif_msg_type(msg) != MSG_UROCE_YIELD) {
		swlog(sw, "program %d: unexpected message %#x", (int)a->pid, dp_memif_msg_type(msg));
		return;
	}
	/* a YIELD of another loan (one refused, or taken back already) is old news */
	if (sw->lent_to == (unsigned)(a - sw->att) + 1 && dp_memif_msg_gen(msg) == sw->lent_gen) {
		if (!sw->recalling) /* it cannot take it: not again at once */
			sw->lend_after_ns = sw->now + SW_RELEND_NS;
		take_back(sw, sw->recalling ? "asked for" : "refused");
	}
}

/*
 * Lend the wire to a program alone on the device (the housekeeper, which
 * holds block 0, aside: its few frames are relayed), or ask for it back
 * when that is no longer so or the wire's peer left.
 */
static void lend_or_recall(struct uroce_switch *sw)
{
	int keeper = sw->owner(sw->owner_arg, 0), err;
	unsigned users = 0, user = 0, attached = 0;
	struct sw_attach *a;

	for (unsigned i = 0; i < SW_MAX_ATTACH; i++) {
		if (!sw->att[i].used)
			continue;
		attached++;
		if (sw->att[i].m.connected && sw->att[i].pid != keeper) {
			users++;
			user = i;
		}
	}
	if (sw->lent_to) {
		/* the peer may have left and another come in one pass: the loan
		 * is of rings nobody reads any more */
		bool same_wire = sw->wire->memif.connected && sw->wire->memif.lost == sw->lent_conn;

		a = &sw->att[sw->lent_to - 1];
		if (sw->recalling && sw->now - sw->recall_ns > SW_RECALL_NS) {
			take_by_force(sw, "not given back 1 s after we asked");
			return;
		}
		if (sw->recalling || (users == 1 && user + 1 == sw->lent_to && same_wire))
			return;
		swlog(sw, "pass-through: asking program %d for the wire back (%s)", (int)a->pid,
		      same_wire ? "another program attached" : "its peer left");
		sw->recalling = true;
		sw->recall_ns = sw->now;
		if (dp_memif_send_loan(&a->m, MSG_UROCE_RECALL, sw->lent_gen))
			take_by_force(sw, "cannot be asked");
		return;
	}
	/* nobody the greeter has ready either */
	if (!sw->pass_through || users != 1 || atomic_load(&sw->nprograms) != attached ||
	    sw->now < sw->lend_after_ns || !uroce_dp_can_lend(sw->wire))
		return;
	a = &sw->att[user];
	if (!++sw->lent_gen) /* 0 is no loan's number */
		sw->lent_gen = 1;
	err = uroce_dp_lend(sw->wire, a->m.ctl_fd, sw->lent_gen);
	if (err) {
		swlog(sw, "pass-through: cannot lend the wire to program %d: %s", (int)a->pid,
		      strerror(-err));
		/* part of the loan may have reached it: let it drop that */
		dp_memif_send_loan(&a->m, MSG_UROCE_RECALL, sw->lent_gen);
		return;
	}
	sw->lent_to = user + 1;
	sw->lent_conn = sw->wire->memif.lost;
	swlog(sw, "pass-through: the wire is lent to program %d, alone on the device",
	      (int)a->pid);
}

/* What wakes the switch for an attachment: a frame signalled on its ring
 * (the program signals only while the ring is armed), a message or a
 * hang-up on its control socket. A program whose descriptors cannot be
 * watched is still served by every pass; only its wake-ups are lost, and
 * a pass comes at least every SLEEP_NS (tools/uroced.c). */
#define SW_EV_CTL 0x80000000u

static void watch(struct uroce_switch *sw, struct sw_attach *a)
{
	uint32_t i = (uint32_t)(a - sw->att);
	struct epoll_event ring = {.events = EPOLLIN | EPOLLET, .data.u32 = i},
			   ctl = {.events = EPOLLIN, .data.u32 = i | SW_EV_CTL};
	int fd = dp_memif_rx_signal_fd(&a->m);

	a->sig_fd = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
	if ((a->sig_fd >= 0 && epoll_ctl(sw->ep_fd, EPOLL_CTL_ADD, a->sig_fd, &ring)) ||
	    epoll_ctl(sw->ep_fd, EPOLL_CTL_ADD, a->m.ctl_fd, &ctl))
		swlog(sw, "program %d: cannot watch its descriptors: %s", (int)a->pid,
		      strerror(errno));
}

/* The control socket is ours alone: closed, it leaves the set by itself. */
static void unwatch(struct uroce_switch *sw, struct sw_attach *a)
{
	if (a->sig_fd >= 0) {
		epoll_ctl(sw->ep_fd, EPOLL_CTL_DEL, a->sig_fd, NULL);
		close(a->sig_fd);
		a->sig_fd = -1;
	}
	if (a->m.ctl_fd >= 0)
		epoll_ctl(sw->ep_fd, EPOLL_CTL_DEL, a->m.ctl_fd, NULL);
}

static void forget(struct uroce_switch *sw, unsigned i)
{
	struct sw_attach *a = &sw->att[i];

	swlog(sw, "program %d (interface %u) detached", (int)a->pid, a->m.id);
	if (sw->lent_to == i + 1)
		take_back(sw, "it left");
	unwatch(sw, a);
	sw->ctr[DP_CTR_dp_memif_bad_desc] += a->m.bad_desc;
	dp_memif_close(&a->m);
	a->used = false;
	atomic_fetch_sub(&sw->nprograms, 1);
	for (unsigned b = 0; b < SW_BLOCKS; b++)
		if (sw->route[b] == i + 1)
			sw->route[b] = 0;
}

/*
 * The greeter thread shakes hands with programs that connect: memif's
 * handshake is synchronous, up to a second per message, and a program
 * still starting may be slow to answer. Done in the switch's thread, it
 * held every other program's frames meanwhile (RC QPs with 67 ms timeouts
 * ran out of retries while 16 programs attached).
 */
static void *greeter(void *arg)
{
	struct uroce_switch *sw = arg;

	while (!atomic_load_explicit(&sw->stopping, memory_order_relaxed)) {
		struct pollfd p = {.fd = sw->listen_fd, .events = POLLIN};

		if (poll(&p, 1, 100) <= 0)
			continue;
		for (;;) {
			struct sw_ready *r = malloc(sizeof(*r));
			/* the program is told why, and its open waits and retries */
			const char *full = atomic_load(&sw->nprograms) >= SW_MAX_ATTACH
						   ? "uroce: the device daemon has 64 programs attached"
						   : NULL;
			uint64_t one = 1;
			int err;

			if (!r)
				break;
			err = dp_memif_take(sw->listen_fd, sw->path, &r->m, &r->pid, full, sw->log,
					    sw->log_arg);
			if (err) {
				free(r);
				if (err == -EAGAIN)
					break;
				if (err == -ECONNREFUSED) {
					if (!full)
						swlog(sw, "a program's memif handshake failed");
					continue;
				}
				/* out of fds or memory: the connection waits in the
				 * backlog, and we must not spin on it */
				swlog(sw, "cannot take a program: %s", strerror(-err));
				usleep(SW_ACCEPT_BACKOFF_US);
				break;
			}
			atomic_fetch_add(&sw->nprograms, 1);
			pthread_mutex_lock(&sw->ready_lock);
			sw->ready[sw->nready++] = r;
			pthread_mutex_unlock(&sw->ready_lock);
			/* a full counter needs no more: the switch looks anyway */
			(void)!write(sw->ready_fd, &one, sizeof(one));
		}
	}
	return NULL;
}

/* Programs the greeter has ready, oldest first: into free slots (there is
 * one for each: the greeter counts them in nprograms). */
static void take_new(struct uroce_switch *sw)
{
	uint64_t v;

	(void)!read(sw->ready_fd, &v, sizeof(v));
	pthread_mutex_lock(&sw->ready_lock);
	if (!sw->nready) {
		pthread_mutex_unlock(&sw->ready_lock);
		return;
	}
	for (unsigned k = 0; k < sw->nready; k++) {
		struct sw_ready *r = sw->ready[k];
		struct sw_attach *a = NULL;

		for (unsigned i = 0; i < SW_MAX_ATTACH && !a; i++)
			if (!sw->att[i].used)
				a = &sw->att[i];
		if (!a) { /* cannot happen while nprograms counts right */
			dp_memif_close(&r->m);
			free(r);
			atomic_fetch_sub(&sw->nprograms, 1);
			continue;
		}
		a->m = r->m; /* the connection moves: regions, rings and fds */
		a->m.on_msg = program_msg;
		a->m.msg_arg = a;
		a->sw = sw;
		a->pid = r->pid;
		a->used = true;
		a->out = false;
		free(r);
		watch(sw, a);
		swlog(sw, "program %d attached (interface %u, ring %u)", (int)a->pid, a->m.id,
		      a->m.ring_size);
	}
	sw->nready = 0;
	pthread_mutex_unlock(&sw->ready_lock);
	/* a new program may hold blocks asked about a moment ago */
	memset(sw->no_owner_until, 0, sizeof(sw->no_owner_until));
}

static unsigned from_program(struct uroce_switch *sw, struct sw_attach *a, bool *port_full);

/*
 * The attachment that goes first on the port next pass: the next one in
 * use. Stepping through all 64 slots gave slot 0 the first turn in 56
 * passes of 64 with 9 programs attached, and on a port that drains slowly
 * the first few took all of it: 5 of sharedport's 8 clients could not even
 * send their ARP requests, and gave up on their peers.
 */
static unsigned next_turn(const struct uroce_switch *sw)
{
	for (unsigned k = 1; k <= SW_MAX_ATTACH; k++) {
		unsigned i = (sw->first + k) % SW_MAX_ATTACH;

		if (sw->att[i].used && sw->att[i].m.connected)
			return i;
	}
	return sw->first;
}

/* A control socket whose program closed it (a look only while it matters). */
static bool hung_up(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR));
}

static void upkeep(struct uroce_switch *sw, uint64_t now)
{
	bool full = false;

	if (now < sw->next_ctl_ns)
		return;
	sw->next_ctl_ns = now + SW_CTL_NS;
	take_new(sw);
	for (unsigned k = 0; k < SW_MAX_ATTACH; k++) {
		unsigned i = (sw->first + k) % SW_MAX_ATTACH;
		struct sw_attach *a = &sw->att[i];

		if (!a->used)
			continue;
		/* what a program sent just before it left (the ACK of the last
		 * SEND it received, which its peer waits for) goes out before its
		 * ring goes: dropped, the peer's QP retried into a program gone
		 * and ended in RETRY_EXC_ERR (rping's server, status 12). One
		 * burst, as a pass gives each program: the turns stay fair */
		a->leaving = sw->recalling && hung_up(a->m.ctl_fd);
		if (!full && dp_memif_rx_pending(&a->m))
			from_program(sw, a, &full);
		dp_memif_upkeep(&a->m, now);
		sw->ctr[DP_CTR_dp_memif_bad_desc] += a->m.bad_desc;
		a->m.bad_desc = 0;
		if (!a->m.connected)
			forget(sw, i);
	}
	lend_or_recall(sw);
}

/*
 * A program's frames, up to a burst, out on the wire. A buffer on the wire
 * first: when the port has none, the frames wait in the program's ring and
 * the program waits for room, as on a NIC's full send queue, instead of
 * being dropped here.
 */
static unsigned from_program(struct uroce_switch *sw, struct sw_attach *a, bool *port_full)
{
	unsigned n = 0;

	if (held_back(sw, a))
		return 0;
	while (n < DP_BURST && dp_memif_rx_pending(&a->m)) {
		const uint8_t *f;
		uint8_t *buf;
		uint32_t len, cap;
		void *cookie;

		if (sw->lent_to) {
			/* the borrower's frames from the wire, as if we read them
			 * there; anyone's frames for it, to the borrower */
			if (!(f = dp_memif_rx_next(&a->m, &len)))
				break;
			if (a->m.rx_flags & DP_MEMIF_DESC_WIRE)
				uroce_dp_rx_relayed(sw->wire, f, len, from_wire, sw);
			else
				to_lender(sw, f, len);
			n++;
			continue;
		}
		/* the last slots are the daemon's own: its ARP and ND answers
		 * (neigh.c) must not find the port full of programs' frames,
		 * or a saturated link leaves the peer's programs unresolved */
		if (uroce_dp_tx_space(sw->wire) <= SW_WIRE_HEADROOM ||
		    uroce_dp_tx_get(sw->wire, &buf, &cap, &cookie)) {
			*port_full = true;
			break;
		}
		f = dp_memif_rx_next(&a->m, &len);
		if (!f || len > cap || (a->m.rx_flags & DP_MEMIF_DESC_WIRE)) {
			uroce_dp_tx_put(sw->wire, cookie, 0);
			if (!f)
				break;
			if (a->m.rx_flags & DP_MEMIF_DESC_WIRE) /* relayed before it yielded */
				uroce_dp_rx_relayed(sw->wire, f, len, from_wire, sw);
			else
				sw->ctr[DP_CTR_dp_tx_dropped]++; /* larger than the port's frames */
			continue;
		}
		memcpy(buf, f, len);
		uroce_dp_tx_put(sw->wire, cookie, len);
		sw->ctr[DP_CTR_dp_switch_frames]++;
		n++;
	}
	dp_memif_rx_done(&a->m);
	if (n)
		dp_memif_mask(&a->m);
	return n;
}

unsigned uroce_switch_pass(struct uroce_switch *sw, uint64_t now)
{
	bool port_full = false;
	unsigned moved;

	sw->now = now;
	upkeep(sw, now);
	moved = uroce_dp_rx(sw->wire, from_wire, sw, DP_BURST, now);
	sw->port_backlog = moved >= DP_BURST;
	/* programs take turns first on the port, so none can starve the rest */
	for (unsigned k = 0; k < SW_MAX_ATTACH && !port_full; k++) {
		struct sw_attach *a = &sw->att[(sw->first + k) % SW_MAX_ATTACH];

		if (a->used && a->m.connected)
			moved += from_program(sw, a, &port_full);
	}
	sw->first = next_turn(sw);
	uroce_dp_tx_flush(sw->wire, now);
	for (unsigned i = 0; i < SW_MAX_ATTACH; i++) {
		struct sw_attach *a = &sw->att[i];

		if (a->used && a->out) {
			dp_memif_tx_publish(&a->m);
			a->out = false;
		}
	}
	/* a full port: look again at once, it drains as the peer reads */
	return moved + port_full;
}

/* A NIC has nothing to sleep on: nap this long, then look again. */
#define SW_NAP_NS 20000ull

int uroce_switch_wait(struct uroce_switch *sw, uint64_t timeout_ns)
{
	struct pollfd p[3] = {{.fd = sw->ready_fd, .events = POLLIN},
			      {.fd = sw->ep_fd, .events = POLLIN},
			      {.fd = -1}};
	struct epoll_event ev[SW_MAX_ATTACH];
	struct timespec ts;
	int fd, r;

	fd = uroce_dp_arm_wakeup_now(sw->wire);
	if (fd == -EAGAIN)
		return 0;
	if (fd == -1)
		fd = uroce_dp_wait_fd(sw->wire);
	if (fd >= 0)
		p[2] = (struct pollfd){.fd = fd, .events = POLLIN};
	else if (fd != -ENOTCONN && timeout_ns > SW_NAP_NS)
		timeout_ns = SW_NAP_NS; /* -ENOTCONN: a memif wire that reconnects by itself */
	for (unsigned i = 0; i < SW_MAX_ATTACH; i++) {
		struct sw_attach *a = &sw->att[i];

		/* frames held back wait for the recall's end, not a spin */
		if (a->used && a->m.connected && !held_back(sw, a) && dp_memif_arm(&a->m) == -EAGAIN)
			timeout_ns = 0;
	}
	if (sw->recalling && timeout_ns > SW_CTL_NS)
		timeout_ns = SW_CTL_NS; /* the recall's deadline is looked at in upkeep */
	ts.tv_sec = (time_t)(timeout_ns / 1000000000ull);
	ts.tv_nsec = (long)(timeout_ns % 1000000000ull);
	r = ppoll(p, 3, &ts, NULL);
	uroce_dp_disarm_wakeup(sw->wire);
	for (unsigned i = 0; i < SW_MAX_ATTACH; i++)
		if (sw->att[i].used && sw->att[i].m.connected)
			dp_memif_disarm_keep(&sw->att[i].m);
	if (r > 0 && p[0].revents)
		sw->next_ctl_ns = 0; /* a program came: take it at once */
	/* the set's events: a ring's signal needs nothing more (edge-triggered,
	 * its count never read); a control socket's is a program leaving */
	if (r > 0 && p[1].revents) {
		int n;

		do {
			n = epoll_wait(sw->ep_fd, ev, SW_MAX_ATTACH, 0);
			for (int k = 0; k < n; k++)
				if (ev[k].data.u32 & SW_EV_CTL)
					sw->next_ctl_ns = 0;
		} while (n == SW_MAX_ATTACH);
	}
	return r < 0 ? -errno : r;
}

int uroce_switch_open(const struct uroce_switch_config *c, struct uroce_switch **out)
{
	struct uroce_switch *sw = calloc(1, sizeof(*sw));
	int fd;

	if (!sw)
		return -ENOMEM;
	sw->wire = c->wire;
	sw->shift = c->block_shift;
	sw->pass_through = c->pass_through;
	sw->owner = c->owner;
	sw->owner_arg = c->owner_arg;
	sw->ctr = c->counters ? c->counters : sw->own_ctr;
	sw->log = c->log;
	sw->log_arg = c->log_arg;
	snprintf(sw->path, sizeof(sw->path), "%s", c->socket);
	fd = dp_memif_listen(sw->path);
	if (fd < 0) {
		free(sw);
		return fd;
	}
	sw->listen_fd = fd;
	sw->ready_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	sw->ep_fd = epoll_create1(EPOLL_CLOEXEC);
	pthread_mutex_init(&sw->ready_lock, NULL);
	if (sw->ready_fd < 0 || sw->ep_fd < 0 ||
	    pthread_create(&sw->greeter, NULL, greeter, sw)) {
		int err = sw->ready_fd < 0 || sw->ep_fd < 0 ? -errno : -EAGAIN;

		if (sw->ready_fd >= 0)
			close(sw->ready_fd);
		if (sw->ep_fd >= 0)
			close(sw->ep_fd);
		close(fd);
		unlink(sw->path);
		free(sw);
		return err;
	}
	uroce_dp_set_neigh_seen(sw->wire, neigh_from_wire, sw);
	*out = sw;
	return 0;
}

void uroce_switch_close(struct uroce_switch *sw)
{
	atomic_store(&sw->stopping, true);
	pthread_join(sw->greeter, NULL);
	for (unsigned i = 0; i < sw->nready; i++) {
		dp_memif_close(&sw->ready[i]->m);
		free(sw->ready[i]);
	}
	sw->nready = 0;
	for (unsigned i = 0; i < SW_MAX_ATTACH; i++)
		if (sw->att[i].used)
			forget(sw, i);
	close(sw->ready_fd);
	close(sw->ep_fd);
	pthread_mutex_destroy(&sw->ready_lock);
	uroce_dp_set_neigh_seen(sw->wire, NULL, NULL);
	close(sw->listen_fd);
	unlink(sw->path);
	free(sw);
}
