/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The responder's pending acknowledgement: which ACK or NAK it owes (only
 * the latest matters, each covers all before it), and whether it is held
 * back to leave with the application's answer. The requester, the
 * responder and the transmit loop all consult it; it calls none of them.
 */
#include "ack.h"
#include "psn.h"
#include "qp.h"
#include "rtx.h"

/*
 * Holding ACKs for the answer. Traffic goes both ways on this QP when its
 * requester asked for an ACK lately. In a ping-pong (ib_write_lat,
 * ib_send_lat, RPC) the application answers what it just received; the ACK
 * of the message held until then leaves with the answer (ahead of its last
 * packet or behind it, see ur_req_emit), so the peer finds both in one
 * receive poll, in the thread already waiting on its CQ,
 * and never needs its progress thread woken for the answer. Let go alone
 * instead, the ACK completes the peer's request, the peer spins on memory
 * (ib_write_lat), and the answer waits for a progress thread's nap to end.
 * A responder may coalesce ACKs (each covers all before it); the hold is far
 * below the ACK timeouts of milliseconds.
 */
#define UR_ACK_HOLD_WINDOW_NS 10000000ull /* "lately": within 10 ms */
#define UR_ACK_HOLD_MAX_NS 1000000ull     /* never longer than a millisecond */
/*
 * ...and when the application answers what it receives: a request of ours
 * started since one of the last two messages came (ur_ack_hold_answered).
 * One request in 10 ms was all it took before, and a stream one way with a
 * rare message back (UCX's flow-control grants: 28 SENDs back against
 * 8,800) had every ACK held while the stream lasted, 1.6-1.9x slower.
 * Two, not one: a request may span two messages, or its answer come late.
 */
#define UR_ACK_HOLD_UNANSWERED 2
/*
 * ...unless the answers wait for the ACK: each comes only once its ACK has
 * left alone (a program driving both ends from one thread that waits for
 * each SEND's completion before the peer answers, as rdma-core's pyverbs
 * tests do). Holding then delays every round trip by the whole hold, and
 * the answers, always late, taught it to grow to its 1 ms limit. Answers
 * that come within a quarter of the hold after their ACK left, twice in a
 * row, stop the holding for UR_ACK_HOLD_PAUSE messages; then it is tried
 * again.
 */
#define UR_ACK_HOLD_AFTER_ACK 2
#define UR_ACK_HOLD_PAUSE 64

static bool requester_busy(const struct ur_qp *qp)
{
	const struct ur_dev *dev = qp->dev;

	return dev->cfg.ack_delay_ns && qp->req.ackreq_ns &&
	       dev->now - qp->req.ackreq_ns < UR_ACK_HOLD_WINDOW_NS;
}

/* The longest hold: far below any timeout the peer may run (it has this QP's
 * settings, likely), and short enough that a peer sending all the while
 * never fills its window (1024 packets) waiting for it. */
static uint64_t ack_hold_max_ns(const struct ur_qp *qp)
{
	uint64_t ns = UR_MAX(UR_ACK_HOLD_MAX_NS, qp->dev->cfg.ack_delay_ns);

	if (qp->timeout_ns)
		ns = UR_MIN(ns, qp->timeout_ns / 8);
	if (qp->rtx->irn_rto)
		ns = UR_MIN(ns, qp->dev->cfg.sr_rto_low_ns / 8);
	return ns;
}

/* A hold within its bounds: from ack_delay_ns up to ack_hold_max_ns. */
static uint64_t hold_within_bounds(const struct ur_qp *qp, uint64_t ns)
{
	return UR_MIN(UR_MAX(ns, qp->dev->cfg.ack_delay_ns), ack_hold_max_ns(qp));
}

/*
 * How long to wait for the answer, learned from how long this QP's answers
 * took: from ack_delay_ns up. Most answers come within microseconds, but on
 * two cores shared by four busy threads, with 512 KiB WRITEs going back and
 * forth, one in ten took over 85 us and one in a hundred 300 us; each ACK
 * that left alone cost a round of a millisecond (ib_write_lat -s 524288
 * over memif: median 577 us with a fixed 50 us hold, 118 us learned). A
 * late answer raises the hold to twice what it took; on time, the hold
 * creeps down towards that; an ACK that got no answer at all (traffic both
 * ways, but no ping-pong) halves it.
 */
static void learn_answer_time(struct ur_qp *qp, uint64_t took)
{
	struct ur_resp_ack *a = &qp->resp.ack;
	uint64_t want = 2 * took;

	if (want >= a->hold_ns)
		a->hold_ns = want;
	else
		a->hold_ns -= (a->hold_ns - want) / 8;
	a->hold_ns = hold_within_bounds(qp, a->hold_ns);
}

/* The requester starts a message: the answer to the last held ACK, likely. */
void ur_ack_hold_answered(struct ur_qp *qp)
{
	struct ur_resp_ack *a = &qp->resp.ack;
	uint64_t now = qp->dev->now;

	a->unanswered = 0;
	if (a->asked_ns) {
		if (a->left_ns && now - a->left_ns <= a->hold_ns / 4) {
			/* it waited for the ACK, likely: a longer hold only delays it */
			if (++a->after_ack >= UR_ACK_HOLD_AFTER_ACK) {
				a->after_ack = UR_ACK_HOLD_AFTER_ACK;
				a->unheld = UR_ACK_HOLD_PAUSE;
			}
		} else {
			a->after_ack = 0;
			learn_answer_time(qp, now - a->asked_ns);
		}
		a->asked_ns = 0;
	}
	a->left_ns = 0;
}

/* ur_resp_emit starts a hold's clock: the ACK waits for an answer from now. */
void ur_ack_hold_start(struct ur_qp *qp)
{
	struct ur_resp_ack *a = &qp->resp.ack;
	uint64_t now = qp->dev->now;

	if (a->asked_ns) /* the last one got no answer */
		a->hold_ns = hold_within_bounds(qp, a->hold_ns / 2);
	a->asked_ns = now;
	/* a new message restarts the wait for its answer, never the limit */
	a->hold_until = UR_MIN(now + hold_within_bounds(qp, a->hold_ns), a->hold_limit);
}

static void schedule_ack(struct ur_qp *qp, uint8_t syndrome, uint32_t psn, bool hold)
{
	struct ur_responder *rs = &qp->resp;

	/* A NAK waiting to leave acknowledges everything before its PSN too
	 * (9.7.5.2.2): an ACK of an older PSN (a duplicate's) must not replace
	 * it, or the requester learns of the gap only when its timer expires. */
	if (rs->ack.pending && (rs->ack.syndrome & UR_AETH_TYPE_MASK) != UR_AETH_ACK &&
	    (syndrome & UR_AETH_TYPE_MASK) == UR_AETH_ACK && ur_psn_lt(psn, rs->ack.psn))
		return;
	/*
	 * The limit of a hold counts from the first packet the pending ACK
	 * acknowledges, and a later message's ACK, which covers that packet
	 * too, inherits it: restarted with each message, a stream of messages
	 * kept one ACK back for as long as it lasted. The specification lets
	 * a responder coalesce ACKs and bounds only the requester's timeout;
	 * this limit is ours.
	 */
	if (!rs->ack.pending)
		rs->ack.hold_limit = qp->dev->now + ack_hold_max_ns(qp);
	/* a message's ACK may wait in place of an older plain ACK (it covers
	 * that one too), never in place of a NAK */
	if (!hold || (rs->ack.pending && !rs->ack.hold_until &&
		      (rs->ack.syndrome & UR_AETH_TYPE_MASK) != UR_AETH_ACK))
		rs->ack.hold_until = 0;
	else
		rs->ack.hold_until = UR_TIME_NEVER; /* ur_resp_emit starts the clock */
	rs->ack.pending = true;
	rs->ack.syndrome = syndrome;
	rs->ack.psn = psn;
	ur_dev_schedule(qp->dev, qp);
}

void ur_resp_schedule_ack(struct ur_qp *qp, uint8_t syndrome, uint32_t psn)
{
	schedule_ack(qp, syndrome, psn, false);
}

/* The ACK of a message's last packet: what the peer's application waits
 * for, and so the one worth holding for the answer. */
void ur_resp_ack_message(struct ur_qp *qp, uint32_t psn)
{
	struct ur_resp_ack *a = &qp->resp.ack;
	bool hold = requester_busy(qp) && a->unanswered < UR_ACK_HOLD_UNANSWERED;

	if (hold && a->unheld) {
		a->unheld--;
		hold = false;
	}

	if (a->unanswered < UR_ACK_HOLD_UNANSWERED)
		a->unanswered++;
	schedule_ack(qp, UR_AETH_ACK | UR_AETH_CREDIT_INVALID, psn, hold);
}

bool ur_qp_release_ack(struct ur_qp *qp)
{
	struct ur_resp_ack *a = &qp->resp.ack;

	if (!a->pending || !a->hold_until)
		return false;
	a->hold_until = 0;
	ur_timer_cancel(&qp->dev->timers, &a->hold);
	ur_dev_schedule(qp->dev, qp);
	return true;
}

/*
 * The answer a held ACK waited for is about to send its last packet, and
 * the ACK goes first (ur_req_emit says when). Returns 1 when the ACK left,
 * 0 when none was held, or a negative errno.
 */
int ur_ack_hold_send_ahead(struct ur_qp *qp)
{
	const struct ur_resp_ack *a = &qp->resp.ack;
	int err;

	if (!a->pending || !a->hold_until)
		return 0;
	err = ur_ack_emit(qp);
	return err ? err : 1;
}

/* A request left behind a held ACK in this transmit stage: the ACK goes now too. */
void ur_ack_hold_answer_sent(struct ur_qp *qp)
{
	qp->resp.ack.hold_until = 0;
}
