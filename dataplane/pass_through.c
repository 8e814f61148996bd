/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Pass-through (docs/shared-device.md 4.6): while one program is alone on
 * a memif device (besides the device's housekeeper), the device daemon lends
 * it the wire's memif rings (memif_lend.c), and its frames go to the wire
 * and come from it with no hop through the daemon, as before the device
 * had one. The daemon keeps the wire's connection and takes the rings back
 * (RECALL, answered by YIELD) when a second program attaches or the wire's
 * peer leaves; a borrower that dies gives them back by dying.
 *
 * The few frames that are not the borrower's still go through the daemon,
 * on the borrower's attachment, marked DP_MEMIF_DESC_WIRE: from the wire,
 * RoCE frames for QP number blocks it does not hold (the housekeeper's QP 1
 * first of all) and every ARP and ND frame, which the daemon switches as if
 * it had read them itself; to the wire, whatever other programs send,
 * which the daemon hands the borrower. A marked frame that reaches a program
 * no longer borrowing goes back to the daemon unmarked, for the wire. So a
 * frame is never lost at a hand-over, though one may pass a frame sent a
 * moment before it the long way round.
 *
 * The program's side runs in its passes, under the engine's lock; the
 * daemon's side is uroce_dp_lend and uroce_dp_take_back, called by its
 * switch (dev_switch.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "dp_internal.h"
#include "memif_wire.h"

/* ---- the daemon's side ---- */

bool uroce_dp_can_lend(const struct uroce_dp *dp)
{
	/* faults and capture want every frame through the daemon's port */
	return dp->kind == DP_PORT_MEMIF && dp->memif.connected && !dp->memif.lent_out &&
	       !dp->impair_tx && !dp->impair_rx && !dp->capture;
}

int uroce_dp_lend(struct uroce_dp *dp, int sock, uint32_t gen)
{
	int err;

	if (!uroce_dp_can_lend(dp))
		return -EBUSY;
	/* quiescent: everything written published, everything read given back */
	uroce_dp_tx_flush(dp, 0);
	dp_memif_rx_done(&dp->memif);
	dp_memif_disarm(&dp->memif);
	err = dp_memif_lend(&dp->memif, sock, gen);
	if (!err)
		dp->memif.lent_out = true;
	return err;
}

void uroce_dp_take_back(struct uroce_dp *dp, bool by_force)
{
	if (!dp->memif.lent_out)
		return;
	dp->memif.lent_out = false;
	/* Taken from a borrower that did not give it back: it may still write
	 * on the rings (stopped inside a pass, then continued) until it reads
	 * that it lost them. A new connection leaves it the old memory to
	 * scribble on; RC recovers the frames lost with the old. */
	if (by_force)
		dp_memif_hang_up(&dp->memif, "uroce: the wire taken back from a borrower");
	/* a peer that left meanwhile: the handshake with the next sets the cursors */
	else if (dp->memif.connected)
		dp_memif_resync(&dp->memif);
}

void uroce_dp_rx_relayed(struct uroce_dp *dp, const uint8_t *f, uint32_t len, uroce_dp_rx_fn fn,
			 void *arg)
{
	/* the borrower answered and counted it; the other programs see it */
	if (dp_frame_is_neigh(f, len)) {
		if (dp->neigh_seen)
			dp->neigh_seen(dp->neigh_arg, f, len);
		return;
	}
	if (len >= 14 && dp_is_own_mac(dp, f))
		fn(arg, f, len);
	else /* the borrower relays no such frame: a bad one */
		dp_count(dp, DP_CTR_dp_rx_not_for_us);
}

/* ---- the borrower's side ---- */

static void drop_loan(struct uroce_dp *dp, bool yield);

/* The attachment, wherever it is now (memif, or set aside while borrowing). */
static struct dp_memif *attachment(struct uroce_dp *dp)
{
	return dp->borrowing ? &dp->attach : &dp->memif;
}

/* uroce's own messages on the attachment (memif_ctl.c calls this in its
 * upkeep): a loan arriving, a recall. Only recorded here; step() acts. */
static void attach_msg(void *arg, const struct memif_msg *msg, int fd)
{
	struct uroce_dp *dp = arg;
	uint16_t type = dp_memif_msg_type(msg);
	uint32_t gen = dp_memif_msg_gen(msg);
	bool arriving = dp->loan_ready || dp->loan.nregions;
	int r;

	if (type == MSG_UROCE_RECALL) {
		/* a recall of a loan we gave back or refused already: answered */
		if ((dp->borrowing && gen == dp->held_gen) || (arriving && gen == dp->loan_gen))
			dp->recall_gen = gen;
	} else if (type == MSG_UROCE_YIELD || (dp->loan_ready && gen == dp->loan_gen)) {
		dp_log(dp, "pass-through: an unexpected message %#x from the device daemon", type);
	} else {
		/* a new loan: the rest of an older one never comes (the daemon
		 * took it back); one while we borrow says it took ours */
		if (arriving && gen != dp->loan_gen)
			drop_loan(dp, false);
		if (!dp->loan.nregions) {
			dp->loan_gen = gen;
			dp->loan_conn = attachment(dp)->lost;
		}
		r = dp_memif_borrow(&dp->loan, msg, fd);
		fd = -1; /* taken */
		if (r == 1) {
			dp->loan_ready = true;
		} else if (r < 0) {
			/* it thinks the wire lent: tell it to take it back */
			dp_log(dp, "pass-through: the device daemon's loan of the wire does not hold "
				   "together: refused");
			dp->recall_gen = gen;
		}
	}
	if (fd >= 0)
		close(fd);
}

void dp_pt_init(struct uroce_dp *dp)
{
	dp_memif_loan_start(&dp->loan);
	dp_memif_loan_start(&dp->attach);
	/* a memif client that does not answer for its addresses: a daemon does */
	dp->attached = dp->kind == DP_PORT_MEMIF && !dp->memif.server && !dp->cfg.answer_neigh;
	if (dp->attached) {
		dp->memif.on_msg = attach_msg;
		dp->memif.msg_arg = dp;
	}
}

/* What on the attachment wakes a sleeping borrower: frames the daemon
 * relays, and its messages (RECALL). Added to the loopback's epoll set,
 * which the progress thread sleeps on; removed when the loan ends. */
static void watch_attach(struct uroce_dp *dp, int op)
{
	int fds[2] = {dp_memif_rx_signal_fd(&dp->attach), dp->attach.ctl_fd};

	if (dp->peer.ep_fd < 0)
		return;
	for (int i = 0; i < 2; i++) {
		struct epoll_event ev = {.events = EPOLLIN, .data.fd = fds[i]};

		if (fds[i] >= 0)
			epoll_ctl(dp->peer.ep_fd, op, fds[i], &ev);
	}
}

static void borrow(struct uroce_dp *dp)
{
	/* what we wrote to the daemon goes to it now; the daemon relays it back
	 * to us for the wire */
	dp_memif_tx_publish(&dp->memif);
	dp_memif_rx_done(&dp->memif);
	dp_memif_disarm(&dp->memif);
	dp->attach = dp->memif;
	dp->memif = dp->loan;
	dp->memif.log = dp->attach.log;
	dp->memif.log_arg = dp->attach.log_arg;
	dp_memif_loan_start(&dp->loan);
	dp->loan_ready = false;
	dp->held_gen = dp->loan_gen;
	dp->held_conn = dp->loan_conn;
	dp->borrowing = true;
	watch_attach(dp, EPOLL_CTL_ADD);
	dp_count(dp, DP_CTR_dp_wire_borrowed);
	dp_log(dp, "pass-through: the device's wire is ours while we are alone on it");
}

/* Loan `gen` let go of: nothing more to give back; YIELD if the daemon waits to hear. */
static void let_go(struct uroce_dp *dp, uint32_t gen, bool yield)
{
	if (dp->recall_gen == gen)
		dp->recall_gen = 0;
	if (yield && dp->memif.connected)
		dp_memif_send_loan(&dp->memif, MSG_UROCE_YIELD, gen);
}

/*
 * The borrowed wire back to the daemon. When it asked (yield): at a burst's
 * end, all published and given back, and YIELD. Otherwise the rings are no
 * longer ours to touch (the daemon gone, or it took them back by force):
 * what we had not published is lost, as when a borrower dies; a program
 * closing yields by leaving.
 */
static void give_back(struct uroce_dp *dp, bool yield)
{
	if (yield) {
		uroce_dp_tx_flush(dp, 0);
		dp_memif_rx_done(&dp->memif);
		dp_memif_disarm(&dp->memif);
	}
	watch_attach(dp, EPOLL_CTL_DEL);
	dp->ctr[DP_CTR_dp_memif_bad_desc] += dp->memif.bad_desc;
	dp_memif_give_back(&dp->memif);
	dp->memif = dp->attach;
	dp_memif_loan_start(&dp->attach);
	dp->borrowing = false;
	let_go(dp, dp->held_gen, yield);
	dp_log(dp, "pass-through: the wire went back to the device daemon");
}

/* A loan arriving or ready, dropped; refused (YIELD) if the daemon waits to hear. */
static void drop_loan(struct uroce_dp *dp, bool yield)
{
	dp_memif_give_back(&dp->loan);
	dp->loan_ready = false;
	let_go(dp, dp->loan_gen, yield);
}

/* Act on what the attachment said: let go of a loan its daemon took back or
 * gave up with it, give one back that it asked for, borrow one that came. */
static void step(struct uroce_dp *dp)
{
	struct dp_memif *a = attachment(dp);

	/* another connection (a daemon restarted): its loans start at 1 again */
	if (a->lost != dp->seen_conn) {
		dp->seen_conn = a->lost;
		dp->recall_gen = 0;
	}
	if (dp->borrowing) {
		/* the daemon gone (perhaps restarted within one upkeep, which
		 * reconnected us), or it took the wire back without our YIELD */
		if (!a->connected || a->lost != dp->held_conn) {
			give_back(dp, false);
		} else if (dp_memif_revoked(a, dp->held_gen) ||
			   ((dp->loan_ready || dp->loan.nregions) && dp->loan_gen != dp->held_gen)) {
			dp_log(dp, "pass-through: the device daemon took its wire back: we did not "
				   "answer its recall in time");
			give_back(dp, false);
		} else if (dp->recall_gen == dp->held_gen) {
			give_back(dp, true);
		}
	}
	if (dp->borrowing || (!dp->loan_ready && !dp->loan.nregions))
		return;
	a = attachment(dp); /* given back just now: it moved */
	if (!a->connected || a->lost != dp->loan_conn)
		drop_loan(dp, false);
	else if (dp->recall_gen == dp->loan_gen)
		drop_loan(dp, true);
	else if (dp->loan_ready)
		borrow(dp);
}

/* A frame copied into a ring and published (with the frames the engine
 * built there: counted as sent) */
static void relay(struct uroce_dp *dp, struct dp_memif *to, const uint8_t *f, uint32_t len,
		  uint16_t flags, enum dp_counter ok)
{
	unsigned built = to->tx_frames;

	to->tx_flags = flags;
	if (dp_memif_tx(to, &f, &len, 1) == 1) {
		dp_count(dp, ok);
		dp->ctr[DP_CTR_dp_tx_frames] += built;
	} else {
		dp_count(dp, DP_CTR_dp_relay_dropped);
	}
	to->tx_flags = 0;
}

unsigned dp_pt_rx(struct uroce_dp *dp, uroce_dp_rx_fn fn, void *arg, unsigned max, uint64_t now)
{
	const uint8_t *f;
	uint32_t len;
	unsigned n = 0;

	dp_memif_upkeep(attachment(dp), now);
	step(dp);
	if (!dp->borrowing)
		return 0;
	while (n < max && (f = dp_memif_rx_next(&dp->attach, &len))) {
		if (dp->attach.rx_flags & DP_MEMIF_DESC_WIRE)
			relay(dp, &dp->memif, f, len, 0, DP_CTR_dp_relayed_to_wire);
		else /* switched to us before the loan */
			dp_rx_in_place(dp, f, len, fn, arg, now);
		n++;
	}
	dp_memif_rx_done(&dp->attach);
	return n;
}

bool dp_pt_frame(struct uroce_dp *dp, const uint8_t *f, uint32_t len)
{
	uint32_t q, b;

	if (!dp->borrowing) {
		if (!dp->attached || !(dp->memif.rx_flags & DP_MEMIF_DESC_WIRE))
			return false;
		/* for the wire: we gave it back (to the daemon's wire now), or it
		 * was just lent and our next look takes the loan (at once: until
		 * then our frames go round between the daemon and us) */
		dp->memif.next_ctl_ns = 0;
		relay(dp, &dp->memif, f, len, 0, DP_CTR_dp_relayed_to_wire);
		return true;
	}
	if (dp_frame_is_neigh(f, len)) {
		/* ours to answer, and every program's to learn from */
		relay(dp, &dp->attach, f, len, DP_MEMIF_DESC_WIRE, DP_CTR_dp_relayed_to_daemon);
		return false;
	}
	if (len < 14 || !dp_is_own_mac(dp, f) || !(q = dp_frame_dqpn(f, len)))
		return false;
	b = q >> dp->block_shift;
	/* block 0 (QP 1) is the housekeeper's, which the daemon knows */
	if (b && dp_peer_loop_owns(&dp->peer, b))
		return false;
	relay(dp, &dp->attach, f, len, DP_MEMIF_DESC_WIRE, DP_CTR_dp_relayed_to_daemon);
	return true;
}

int dp_pt_arm(struct uroce_dp *dp)
{
	return dp->borrowing && dp_memif_arm(&dp->attach) == -EAGAIN ? -EAGAIN : 0;
}

void dp_pt_disarm(struct uroce_dp *dp)
{
	if (dp->borrowing)
		dp_memif_disarm(&dp->attach);
}

void dp_pt_woken(struct uroce_dp *dp)
{
	/* a message on the attachment may have woken us: read it now, not
	 * after a millisecond of passes that find the socket readable */
	if (dp->borrowing)
		dp->attach.next_ctl_ns = 0;
}

void dp_pt_close(struct uroce_dp *dp)
{
	/* what we sent goes out first: the daemon takes the rings back from
	 * where we leave them when our attachment closes */
	if (dp->borrowing) {
		uroce_dp_tx_flush(dp, 0);
		dp_memif_rx_done(&dp->memif);
		give_back(dp, false);
	}
	if (dp->loan_ready || dp->loan.nregions)
		drop_loan(dp, false);
}
