/* SPDX-License-Identifier: BSD-2-Clause */
/* Selective repeat: see sr.h and docs/selective-repeat.md. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "psn.h"
#include "recv_wqe.h"
#include "sr.h"

/* HELLOs 100 us apart at first, then further apart (a busy peer may reach
 * RTR tens of milliseconds after us): ~0.3 s in all, then go-back-N for good */
#define HELLO_FIRST_NS 100000ull
#define HELLO_MAX_GAP_NS 20000000ull
#define HELLO_TRIES 24

int ur_sr_create(struct ur_qp *qp)
{
	uint32_t win = qp->dev->cfg.sr_window;
	struct ur_sr *sr = calloc(1, sizeof(*sr));

	if (!sr)
		return -ENOMEM;
	sr->qp = qp;
	sr->mask = win - 1;
	sr->rwqe_stride = sizeof(struct ur_recv_wqe) + qp->max_recv_sge * sizeof(struct ur_sge);
	sr->tx = calloc(win, 1);
	sr->txseq = calloc(win, sizeof(*sr->txseq));
	sr->txtime = calloc(win, sizeof(*sr->txtime));
	sr->rx = calloc(win, 1);
	sr->done = calloc(win, sizeof(*sr->done));
	sr->rwqes = calloc(win, sr->rwqe_stride);
	if (!sr->tx || !sr->txseq || !sr->txtime || !sr->rx || !sr->done || !sr->rwqes) {
		qp->sr = sr;
		ur_sr_destroy(qp);
		return -ENOMEM;
	}
	sr->hello_timer.kind = UR_TIMER_SR_HELLO;
	sr->rto.kind = UR_TIMER_SR_RTO;
	sr->reo.kind = UR_TIMER_SR_REO;
	ur_rack_reset(&sr->rack);
	qp->sr = sr;
	qp->rtx = &ur_rtx_sr_gbn;
	return 0;
}

static void stop_timers(struct ur_qp *qp)
{
	struct ur_sr *sr = qp->sr;

	ur_timer_cancel(&qp->dev->timers, &sr->hello_timer);
	ur_timer_cancel(&qp->dev->timers, &sr->rto);
	ur_timer_cancel(&qp->dev->timers, &sr->reo);
}

void ur_sr_destroy(struct ur_qp *qp)
{
	struct ur_sr *sr = qp->sr;

	if (!sr)
		return;
	stop_timers(qp);
	free(sr->tx);
	free(sr->txseq);
	free(sr->txtime);
	free(sr->rx);
	free(sr->done);
	free(sr->rwqes);
	free(sr);
	qp->sr = NULL;
	qp->rtx = &ur_rtx_gbn;
}

/* Back to a fresh connection (RESET): agreement is per connection. */
static void ur_sr_reset(struct ur_qp *qp)
{
	struct ur_sr *sr = qp->sr;
	uint32_t win = sr->mask + 1;

	stop_timers(qp);
	memset(sr->tx, 0, win);
	memset(sr->rx, 0, win);
	sr->neg = 0;
	sr->hellos = 0;
	sr->hello_due = sr->agree_due = sr->sack_due = false;
	sr->nqueued = sr->nearly = sr->nsacked = 0;
	sr->have_high = false;
	/* nor its reordering */
	ur_rack_reset(&sr->rack);
	sr->recovery = false;
	/* the round trip of the old connection says nothing about the next */
	sr->rtt_timing = false;
	sr->srtt_ns = sr->rttvar_ns = 0;
	sr->rtt_samples = 0;
	memset(&sr->wait_max, 0, sizeof(sr->wait_max));
	sr->heard_ns = 0;
	sr->backoff = 0;
	sr->peer_window = 0;
	qp->rtx = &ur_rtx_sr_gbn;
}

/* ---- negotiation ---- */

static void ur_sr_start(struct ur_qp *qp, uint64_t now)
{
	struct ur_sr *sr = qp->sr;

	if (sr->neg)
		return;
	sr->neg = UR_SR_ASKING;
	sr->hello_due = true;
	ur_timer_arm(&qp->dev->timers, &sr->hello_timer, now + HELLO_FIRST_NS);
	ur_dev_schedule(qp->dev, qp);
}

void ur_sr_hello_timer(struct ur_qp *qp, uint64_t now)
{
	struct ur_sr *sr = qp->sr;

	if (sr->neg != UR_SR_ASKING)
		return;
	if (sr->hellos >= HELLO_TRIES) {
		sr->neg = UR_SR_REFUSED; /* a peer that does not speak SR: stay IBTA */
		ur_dev_log(qp->dev, "qp %#x: peer did not negotiate selective repeat: go-back-N",
			   qp->qpn);
		return;
	}
	sr->hello_due = true;
	ur_timer_arm(&qp->dev->timers, &sr->hello_timer,
		     now + UR_MIN(HELLO_FIRST_NS << UR_MIN(sr->hellos, 16u), HELLO_MAX_GAP_NS));
	ur_dev_schedule(qp->dev, qp);
}

static void agree(struct ur_qp *qp, uint32_t peer_window)
{
	struct ur_sr *sr = qp->sr;

	if (sr->neg != UR_SR_AGREED) {
		sr->neg = UR_SR_AGREED;
		qp->rtx = &ur_rtx_sr;
		ur_timer_cancel(&qp->dev->timers, &sr->hello_timer);
		ur_count(qp->dev, UR_CTR_sr_negotiated);
		ur_dev_log(qp->dev, "qp %#x: selective repeat agreed with qp %#x (peer window %u)",
			   qp->qpn, qp->attr.dest_qp_num, peer_window);
	}
	sr->peer_window = peer_window;
}

void ur_sr_ctrl_rx(struct ur_dev *dev, const struct ur_pkt *pkt, uint64_t now)
{
	const struct ur_sr_ctrl *m = (const struct ur_sr_ctrl *)pkt->payload;
	struct ur_qp *qp;
	enum ur_qp_state st;
	uint32_t window;

	(void)now;
	if (pkt->payload_len < sizeof(*m) || ur_get_be32(m->magic) != UR_SR_MAGIC ||
	    m->version != 1) {
		ur_count(dev, UR_CTR_rx_drop_not_roce);
		return;
	}
	qp = ur_dev_find_qp(dev, ur_get_be32(m->dqpn) & UR_PSN_MASK);
	st = qp ? qp_state(qp) : UR_QPS_RESET;
	/* a QP that does not run SR does not speak this protocol, as a
	 * RoCE NIC would not; then only RTR/RTS (a peer faster to RTS than we
	 * are to RTR asks again), only the connected peer */
	if (!qp) {
		ur_count(dev, UR_CTR_rx_drop_unknown_qp);
		return;
	}
	if (!qp->sr) {
		ur_count(dev, UR_CTR_rx_drop_not_roce);
		return;
	}
	if (st != UR_QPS_RTR && st != UR_QPS_RTS) {
		ur_count(dev, UR_CTR_rx_drop_bad_qp_state);
		return;
	}
	if ((ur_get_be32(m->sqpn) & UR_PSN_MASK) != qp->attr.dest_qp_num ||
	    !ur_qp_from_peer(qp, pkt)) {
		ur_count(dev, UR_CTR_rx_drop_wrong_peer);
		return;
	}
	window = ur_get_be16(m->window);
	if (window < 64)
		window = 64;
	if (m->type == UR_SR_HELLO) {
		qp->sr->agree_due = true;
		agree(qp, window);
		ur_dev_schedule(dev, qp);
	} else if (m->type == UR_SR_AGREE) {
		agree(qp, window);
	} else {
		/* a later version's message: taken by nobody, so counted as dropped */
		ur_count(dev, UR_CTR_rx_drop_unsupported);
	}
}

static bool ur_sr_ctrl_pending(const struct ur_qp *qp)
{
	return qp->sr->hello_due || qp->sr->agree_due;
}

int ur_sr_emit_ctrl(struct ur_qp *qp, unsigned *budget)
{
	struct ur_sr *sr = qp->sr;
	struct ur_dev *dev = qp->dev;

	while (*budget && (sr->hello_due || sr->agree_due)) {
		struct ur_sr_ctrl m;
		struct ur_txbuf b = {0};
		unsigned len;

		if (!qp->attr.av.resolved) {
			sr->hello_due = sr->agree_due = false; /* nobody to ask yet */
			return 0;
		}
		if (dev->ops->tx_get(dev->host, &b))
			return -ENOBUFS;
		memset(&m, 0, sizeof(m));
		ur_put_be32(m.magic, UR_SR_MAGIC);
		m.version = 1;
		m.type = sr->agree_due ? UR_SR_AGREE : UR_SR_HELLO;
		ur_put_be16(m.window, (uint16_t)UR_MIN(sr->mask + 1, 0xffffu));
		ur_put_be32(m.dqpn, qp->attr.dest_qp_num);
		ur_put_be32(m.sqpn, qp->qpn);
		len = ur_frame_build_ctrl(&qp->tmpl, b.data, &m, sizeof(m));
		dev->ops->tx_put(dev->host, &b, len);
		if (sr->agree_due) {
			sr->agree_due = false;
		} else {
			sr->hello_due = false;
			sr->hellos++;
		}
		(*budget)--;
	}
	return 0;
}

/* ---- requester ---- */

/* PSNs [from, to) were acknowledged (or are to be sent afresh): forget them. */
static void ur_sr_forget(struct ur_qp *qp, uint32_t from, uint32_t to)
{
	struct ur_sr *sr = qp->sr;
	int32_t n = ur_psn_diff(to, from);

	if (n <= 0)
		return;
	if ((uint32_t)n > sr->mask + 1)
		n = (int32_t)sr->mask + 1;
	for (int32_t i = 0; i < n; i++) {
		uint8_t *f = &sr->tx[(from + (uint32_t)i) & sr->mask];

		if (*f & UR_SR_QUEUED)
			sr->nqueued--;
		if (*f & UR_SR_SACKED)
			sr->nsacked--;
		*f = 0;
	}
	if (sr->have_high && !ur_psn_lt(qp->req.una, sr->high))
		sr->have_high = false;
}

/* Queue every unacknowledged PSN below `end` that the responder lacks, even
 * one resent already (a timeout: that copy may be lost too). */
static void queue_missing(struct ur_qp *qp, uint32_t end)
{
	struct ur_sr *sr = qp->sr;
	uint32_t psn = qp->req.una;

	/* Only what has left: after a go-back-N rewind the highest PSN SACKed
	 * may lie beyond the next to send, and ur_sr_next_retx() never looks
	 * there, so a PSN queued there would stay queued and uncounted. */
	if (ur_psn_lt(qp->req.psn, end))
		end = qp->req.psn;
	for (; ur_psn_lt(psn, end); psn = ur_psn_add(psn, 1)) {
		uint8_t *f = &sr->tx[psn & sr->mask];

		*f &= (uint8_t)~UR_SR_RESENT;
		if (*f & (UR_SR_SACKED | UR_SR_QUEUED))
			continue;
		*f |= UR_SR_QUEUED;
		sr->nqueued++;
	}
	if (sr->nqueued)
		ur_dev_schedule(qp->dev, qp);
}

/* A loss was found: the recovery lasts until everything sent so far is acknowledged. */
static void enter_recovery(struct ur_qp *qp)
{
	struct ur_sr *sr = qp->sr;

	if (!sr->recovery) {
		sr->recovery = true;
		sr->recovery_end = qp->req.psn;
	}
}

/* PSN `psn` was newly delivered; `fack` is one past the highest PSN SACKed
 * before it (when `have_fack`). */
static void rack_delivered(struct ur_qp *qp, uint32_t psn, bool have_fack, uint32_t fack,
			   uint64_t now)
{
	struct ur_sr *sr = qp->sr;
	uint32_t slot = psn & sr->mask;
	const struct ur_rack_pkt p = {
	    .xmit_ns = sr->txtime[slot],
	    .txseq = sr->txseq[slot],
	    .retx = sr->tx[slot] & UR_SR_RETX,
	    .below_fack = have_fack && ur_psn_lt(ur_psn_add(psn, 1), fack),
	};

	/* Only a selective retransmission tells of reordering: a go-back-N
	 * rewind resends what the responder mostly has already. */
	if (ur_rack_delivered(&sr->rack, &p, now) == UR_RACK_SPURIOUS &&
	    (sr->tx[slot] & UR_SR_RESENT)) {
		ur_count(qp->dev, UR_CTR_sr_spurious_retx);
		ur_rack_spurious(&sr->rack, qp->req.una, qp->req.psn);
	}
}

/*
 * A PSN resent by a timeout and acknowledged together with originals above
 * it that no SACK had reported: those arrived, and on a path that keeps
 * order they went behind the original of the resent PSN, which most likely
 * arrived too (a stalled responder, a stalled requester; a lost SACK would
 * have to come with the loss). Taken as the resend's answer, its late
 * transmission made RACK deem every packet sent before it lost: a spurious
 * timeout resent the whole window. Its answer is no sample (RFC 8985 6.2
 * step 2 ignores an ambiguous one; F-RTO, RFC 5682, reads the same evidence).
 * A lost tail, where the timeout's resend is the one that arrives, is
 * acknowledged alone (or with PSNs SACKed) and still leads RACK to the rest.
 * A resend still queued, never sent, is no retransmission: the original's
 * answer is a sample like any other.
 */
static bool rto_resend_ambiguous(uint8_t f, bool orig_above)
{
	return (f & UR_SR_RTO) && !(f & UR_SR_QUEUED) && orig_above;
}

static void note_wait(struct ur_sr *sr, uint64_t ns, uint64_t now);
static void rtt_sample(struct ur_qp *qp, uint64_t now);

/*
 * Whether the answer to a PSN a timeout sent again (or queued) proves the
 * timeout early, its wait then being what the next one must wait through
 * (RFC 4015 reacts only to a timeout proved spurious). Proof: the resend
 * never left; or the answer came sooner than any round trip after it, or
 * so long after it that the peer must have been silent (not scheduled),
 * with originals above it answered too. An answer one round trip after
 * the resend is most likely the resend's: an ACK lost, a timeout that had
 * to fire; taking its wait would double the RTO at every lost ACK.
 */
static bool timeout_was_early(const struct ur_sr *sr, uint32_t psn, uint8_t f, bool orig_above,
			      uint64_t now)
{
	uint64_t since = now - sr->txtime[psn & sr->mask];

	if (!sr->backoff || now <= sr->stall_from_ns)
		return false;
	if (f & UR_SR_QUEUED)
		return true;
	/* "Long after": twice the RTO's own bound, with nothing at all from
	 * the peer since the wait began (a peer that SACKed meanwhile was not
	 * stalled). A resend that repaired a loss is answered about a round
	 * trip later, on a loaded host 1.05-1.7 times SRTT + 4 RTTVAR; taking
	 * those waits raised the RTO at each loss, at 5% loss up to the IBTA
	 * timeout, which then did the work. */
	return orig_above && ((sr->rack.min_rtt_ns && since < sr->rack.min_rtt_ns) ||
			      (sr->srtt_ns && since > 2 * (sr->srtt_ns + 4 * sr->rttvar_ns) &&
			       sr->heard_ns <= sr->stall_from_ns));
}

/*
 * Whether an original PSN among the `n` - 1 above `psn` (acknowledged with
 * it, and reported by no SACK) left before `psn`'s last copy: one sent
 * after the resend proves nothing about it (a tail lost, the next message
 * sent meanwhile, looked like a peer that had stalled).
 */
static bool orig_before(const struct ur_sr *sr, uint32_t psn, int32_t n)
{
	for (int32_t k = 1; k < n; k++) {
		uint32_t p = ur_psn_add(psn, (uint32_t)k);

		if (!(sr->tx[p & sr->mask] & (UR_SR_SACKED | UR_SR_RETX)))
			return sr->txtime[p & sr->mask] < sr->txtime[psn & sr->mask];
	}
	return false;
}

static void ur_sr_acked(struct ur_qp *qp, uint32_t from, uint32_t to, uint64_t now)
{
	struct ur_sr *sr = qp->sr;
	int32_t n = ur_psn_diff(to, from), top = -1;

	if (n > (int32_t)sr->mask + 1)
		n = (int32_t)sr->mask + 1;
	/* the highest original acknowledged here that no SACK reported */
	for (int32_t i = n - 1; i >= 0 && top < 0; i--)
		if (!(sr->tx[ur_psn_add(from, (uint32_t)i) & sr->mask] &
		      (UR_SR_SACKED | UR_SR_RETX)))
			top = i;
	for (int32_t i = 0; i < n; i++) {
		uint32_t psn = ur_psn_add(from, (uint32_t)i);
		uint8_t f = sr->tx[psn & sr->mask];

		/* (a PSN SACKed before was delivered then) */
		if (f & UR_SR_SACKED)
			continue;
		if ((f & UR_SR_RTO) &&
		    timeout_was_early(sr, psn, f, i < top && orig_before(sr, psn, n - i), now))
			note_wait(sr, now - sr->stall_from_ns, now);
		if (rto_resend_ambiguous(f, i < top))
			ur_count(qp->dev, UR_CTR_sr_spurious_retx);
		else
			rack_delivered(qp, psn, sr->have_high, sr->high, now);
	}
	sr->heard_ns = now;
}

/*
 * RACK (RFC 8985 6.2 step 5): a PSN not delivered is lost once a packet sent
 * after its last transmission was delivered and the reordering window has
 * passed since. This covers a lost retransmission the same way (its own
 * transmission is the one that counts) and replaces IRN's rule (a PSN below
 * the highest one SACKed is lost at once), which takes every packet
 * overtaken on a sprayed path for a loss. The timer covers a window still
 * running when the last answer came.
 *
 * Two limits. Only PSNs a SACK can describe (257 from the oldest) are
 * judged: one further on may have arrived without the requester being able
 * to know. And a PSN the responder does not place early keeps IRN's rule,
 * `newest` being the latest transmission among the PSNs this SACK newly
 * reports: go-back-N framing (a message begun before the agreement), and
 * READ and atomic requests, which run in order. The responder drops such a
 * packet when it comes early, so a resend of it overtaken by its
 * predecessors' resends is dropped too, while the SR packets around it,
 * placed long ago, answer every later resend at once and give RACK no
 * sample it can trust; and a READ still answering must not be asked again
 * because a timer ran out.
 */
static void detect_loss(struct ur_qp *qp, uint64_t now, bool have_newest, uint32_t newest)
{
	struct ur_sr *sr = qp->sr;
	struct ur_requester *rq = &qp->req;
	uint64_t wnd = ur_rack_reo_wnd(&sr->rack, sr->srtt_ns, sr->recovery, sr->nsacked);
	uint64_t when = UR_TIME_NEVER;
	uint32_t end = ur_psn_add(rq->una, 1 + UR_SACK_BITS), lost = 0;

	if (ur_psn_lt(rq->psn, end))
		end = rq->psn;
	for (uint32_t p = rq->una; sr->rack.have && ur_psn_lt(p, end); p = ur_psn_add(p, 1)) {
		uint32_t slot = p & sr->mask;
		uint8_t *f = &sr->tx[slot];
		bool gone;

		if (*f & (UR_SR_SACKED | UR_SR_QUEUED))
			continue;
		if (*f & UR_SR_IRN)
			gone = have_newest && sr->have_high && ur_psn_lt(p, sr->high) &&
			       (int32_t)(newest - sr->txseq[slot]) > 0;
		else
			gone = ur_rack_lost(&sr->rack, sr->txtime[slot], sr->txseq[slot], wnd, now,
					    &when);
		if (gone) {
			*f = (uint8_t)((*f & ~(UR_SR_RESENT | UR_SR_RTO)) | UR_SR_QUEUED);
			sr->nqueued++;
			lost++;
		}
	}
	if (lost) {
		ur_count_n(qp->dev, UR_CTR_sr_reorder_lost, lost);
		enter_recovery(qp);
		ur_dev_schedule(qp->dev, qp);
	}
	if (when != UR_TIME_NEVER)
		ur_timer_arm(&qp->dev->timers, &sr->reo, when);
	else
		ur_timer_cancel(&qp->dev->timers, &sr->reo);
}

/*
 * RACK's window, as if the path were seen to reorder: READ responses come
 * back on the return path, which the SACKs say nothing about, and a
 * response overtaken there (or an ACK that overtook it) is no loss. 0
 * before any round trip was measured: no basis to wait on.
 */
uint64_t ur_sr_read_reo_wnd(const struct ur_qp *qp)
{
	const struct ur_sr *sr = qp->sr;

	return sr ? ur_rack_reo_wnd(&sr->rack, sr->srtt_ns, false, 0) : 0;
}

uint64_t ur_sr_srtt_ns(const struct ur_qp *qp)
{
	return qp->sr ? qp->sr->srtt_ns : 0;
}

void ur_sr_reo_timer(struct ur_qp *qp, uint64_t now)
{
	enum ur_qp_state st = qp_state(qp);

	/* (an RNR wait resends everything from the NAKed PSN anyway) */
	if (!ur_sr_on(qp) || (st != UR_QPS_RTS && st != UR_QPS_SQD) || qp->req.rnr_wait)
		return;
	detect_loss(qp, now, false, 0);
}

static void ur_sr_sack_rx(struct ur_qp *qp, const struct ur_sack *sack, uint64_t now)
{
	struct ur_sr *sr = qp->sr;
	struct ur_requester *rq = &qp->req;
	uint32_t base = ur_sack_base(sack);
	uint32_t newest = 0; /* transmission order of the latest packet this SACK newly reports */
	bool news = false;

	if (ur_sack_any(sack))
		ur_count(qp->dev, UR_CTR_sr_sacks_received);
	sr->heard_ns = now;
	if (base != rq->una)
		return; /* stale: the cumulative ACK in it was already applied */
	for (unsigned i = 0; i < UR_SACK_BITS; i++) {
		uint32_t psn = ur_psn_add(base, 1 + i);
		uint8_t *f = &sr->tx[psn & sr->mask];

		if (!ur_psn_lt(psn, rq->psn))
			break;
		if (!ur_sack_bit(sack, i))
			continue;
		if (!(*f & UR_SR_SACKED)) {
			if (sr->rtt_timing && psn == sr->rtt_psn)
				rtt_sample(qp, now); /* delivered now; its ACK may wait for a hole */
			rack_delivered(qp, psn, sr->have_high, sr->high, now);
			if (!news || (int32_t)(sr->txseq[psn & sr->mask] - newest) > 0)
				newest = sr->txseq[psn & sr->mask];
			if (*f & UR_SR_QUEUED)
				sr->nqueued--; /* deemed lost, then delivered: not sent again */
			*f = UR_SR_SACKED;
			sr->nsacked++;
			news = true;
		}
		if (!sr->have_high || ur_psn_ge(psn, sr->high)) {
			sr->high = ur_psn_add(psn, 1);
			sr->have_high = true;
		}
	}
	/* Packets newly delivered are an answer, as an ACK that makes progress:
	 * the transport retry counter starts again and the local ACK timeout
	 * runs from now (9.7.6.1.2), so it counts only retries that got no
	 * answer at all. */
	if (news)
		ur_req_progress(qp, now);
	/* Nothing SACKed and no recovery under way: every PSN outstanding
	 * left after every one delivered, so none can be lost yet; spare the
	 * walk on the lossless path (a reordering timer still armed keeps
	 * running). */
	if (sr->nsacked || sr->recovery)
		detect_loss(qp, now, news, newest);
}

/*
 * A timeout: resend what SACKs showed missing (even if resent before, that
 * copy may be lost too), and the oldest unacknowledged PSN, which covers a
 * lost tail no SACK can reveal. Packets still on their way are left alone.
 */
static void timeout_resend(struct ur_qp *qp)
{
	struct ur_sr *sr = qp->sr;
	uint8_t *f = &sr->tx[qp->req.una & sr->mask];

	if (sr->have_high)
		queue_missing(qp, sr->high);
	/*
	 * The oldest PSN goes even if a SACK said the responder has it (RFC
	 * 2018 section 8: after a timeout the SACKs are not trusted). A SACKed
	 * oldest PSN that is still unacknowledged at a timeout means the ACK
	 * that should have followed was lost or never sent (a packet placed
	 * early completes, without an ACK of its own, behind an atomic or a
	 * READ answered by its response), and nothing else would ever be
	 * sent: the duplicate makes the responder say where it is.
	 */
	if (!(*f & UR_SR_QUEUED)) {
		if (*f & UR_SR_SACKED)
			sr->nsacked--;
		*f = (uint8_t)((*f & ~(UR_SR_RESENT | UR_SR_SACKED)) | UR_SR_QUEUED | UR_SR_RTO);
		sr->nqueued++;
		ur_dev_schedule(qp->dev, qp);
	}
	enter_recovery(qp);
}

/* A timeout on an SR QP (IRN's or the IBTA ACK timeout): resend only what is missing. */
void ur_sr_retry(struct ur_qp *qp)
{
	timeout_resend(qp);
}

static bool ur_sr_retx_pending(const struct ur_qp *qp)
{
	return qp->sr->nqueued;
}

/* The oldest PSN queued for retransmission; takes it off the queue. */
bool ur_sr_next_retx(struct ur_qp *qp, uint32_t *psn)
{
	struct ur_sr *sr = qp->sr;

	for (uint32_t p = qp->req.una; sr->nqueued && ur_psn_lt(p, qp->req.psn);
	     p = ur_psn_add(p, 1)) {
		uint8_t *f = &sr->tx[p & sr->mask];

		if (*f & UR_SR_QUEUED) {
			*f = (uint8_t)((*f & ~UR_SR_QUEUED) | UR_SR_RESENT);
			sr->nqueued--;
			*psn = p;
			return true;
		}
	}
	sr->nqueued = 0;
	return false;
}

/*
 * The retransmission timeout, RFC 6298's: SRTT + 4 RTTVAR from round trips
 * of packets acknowledged without ever being sent twice (Karn's rule), never
 * below a floor, doubled for each timeout in a row without progress (5.5).
 *
 * The floor is what the path needs. First IRN's RTO_low when too few
 * packets are in flight for SACKs to reveal a loss, RTO_high otherwise.
 * Then twice the longest wait for an answer seen in the last 10-20 s: a
 * round trip, the time an answer took after a timeout proved early
 * (timeout_was_early; RFC 4015's Eifel response adapts the RTO after one),
 * or how late this host ran its SR timeout. A software host stops
 * answering for milliseconds when a thread is not scheduled, every second
 * or two even with no other load:
 * two ib_write_bw on two cores waited 1.2-9.3 ms for answers against an
 * SRTT of 125 us, and RTTVAR forgets such a stall within a few round trips,
 * so each stall cost a timeout that only resent what was still on its way
 * (RFC 6298 2.4 rounds up to a second for the same reason). The peer's host
 * is likely as busy as this one, so this one's late timers warn of the
 * peer's stalls before one costs a timeout. Losses the SACKs reveal never
 * wait for it.
 *
 * Until a QP has timed 64 round trips the floor is also sr_rto_start_ns
 * (the provider's 10 ms; 0 in the simulator), as RFC 6298 2.1 starts at a
 * second: live, half of 10-s ib_write_bw runs with no loss stalled past
 * 1 ms within 5 ms of RTS, before any stall had taught the floor.
 *
 * With twice ack_req_every packets in flight (128) and nothing heard from
 * the peer since the timeout's base, the floor is also sr_rto_stall_ns (the
 * provider's 20 ms; 0 in the simulator). That silence is no tail loss: the
 * responder answers at least every ack_req_every packets, so at least two
 * answers were lost (1e-4 at 1% loss), or the peer's host stopped its
 * thread, which no sample predicts (this 2-vCPU VM: up to ~18 ms, several
 * times a minute). A tail loss is heard about: the answers before it move
 * the base and leave fewer in flight; a lost resend amid SACKs is heard
 * about too. Both keep the path's RTO. The floor is not doubled: the
 * doublings still count from the path's RTO, so a stream that hears
 * nothing reaches the IBTA timeout after as many expiries as without it.
 *
 * Never above the IBTA local ACK timeout the QP was given: past it, that
 * timeout decides, and it alone counts retries.
 */
#define UR_SR_RTO_MAX_NS 1000000000ull /* with an infinite local ACK timeout */
#define UR_SR_START_SAMPLES 64
#define UR_SR_WAIT_PERIOD_NS 10000000000ull

static uint64_t rto_max_ns(const struct ur_qp *qp)
{
	return qp->timeout_ns ? UR_MIN(qp->timeout_ns, UR_SR_RTO_MAX_NS) : UR_SR_RTO_MAX_NS;
}

static uint64_t rto_ns(const struct ur_qp *qp, uint32_t inflight)
{
	const struct ur_sr *sr = qp->sr;
	const struct ur_dev_config *c = &qp->dev->cfg;
	uint64_t rto = inflight < c->sr_low_inflight ? c->sr_rto_low_ns : c->sr_rto_high_ns;
	uint64_t now = qp->dev->now;
	uint64_t wait = UR_MAX(ur_win_max_get(&sr->wait_max, now, UR_SR_WAIT_PERIOD_NS),
			       ur_dev_late_max(qp->dev, now));

	if (sr->srtt_ns)
		rto = UR_MAX(rto, sr->srtt_ns + 4 * sr->rttvar_ns);
	rto = UR_MAX(rto, 2 * wait);
	if (sr->rtt_samples < UR_SR_START_SAMPLES)
		rto = UR_MAX(rto, c->sr_rto_start_ns);
	rto <<= sr->backoff;
	if (inflight >= 2 * c->ack_req_every && sr->heard_ns <= sr->rto_base_ns)
		rto = UR_MAX(rto, c->sr_rto_stall_ns);
	return UR_MIN(rto, rto_max_ns(qp));
}

static void ur_sr_log_state(struct ur_qp *qp)
{
	const struct ur_sr *sr = qp->sr;
	const struct ur_requester *rq = &qp->req;

	ur_dev_log(qp->dev,
		   "qp %#x: selective repeat: oldest PSN %s%s%s, %u queued, highest SACKed %s%#x, "
		   "srtt %llu us, rttvar %llu us, backoff %u, peer window %u, RNR wait %d, "
		   "min RTT %llu us, reorder window x%u%s, RTO %llu us (longest wait %llu us, "
		   "late %llu us)",
		   qp->qpn, sr->tx[rq->una & sr->mask] & UR_SR_SACKED ? "SACKed " : "",
		   sr->tx[rq->una & sr->mask] & UR_SR_QUEUED ? "queued " : "",
		   sr->tx[rq->una & sr->mask] & UR_SR_RESENT ? "resent" : "", sr->nqueued,
		   sr->have_high ? "" : "(none) ", sr->have_high ? sr->high : 0,
		   (unsigned long long)(sr->srtt_ns / 1000),
		   (unsigned long long)(sr->rttvar_ns / 1000), sr->backoff, sr->peer_window,
		   rq->rnr_wait, (unsigned long long)(sr->rack.min_rtt_ns / 1000),
		   sr->rack.reo_mult, sr->rack.reordering_seen ? " (reordered)" : "",
		   (unsigned long long)(rto_ns(qp, (uint32_t)ur_psn_diff(rq->psn, rq->una)) / 1000),
		   (unsigned long long)(ur_win_max_get(&sr->wait_max, qp->dev->now,
						       UR_SR_WAIT_PERIOD_NS) / 1000),
		   (unsigned long long)(ur_dev_late_max(qp->dev, qp->dev->now) / 1000));
}

/* A wait for an answer measured: the RTO floor keeps the longest for 10-20 s. */
static void note_wait(struct ur_sr *sr, uint64_t ns, uint64_t now)
{
	if (ns <= UR_SR_RTO_MAX_NS) /* longer: a process stopped, not a path */
		ur_win_max_note(&sr->wait_max, ns, now, UR_SR_WAIT_PERIOD_NS);
}

static void arm_rto(struct ur_qp *qp)
{
	struct ur_sr *sr = qp->sr;
	uint32_t inflight = (uint32_t)ur_psn_diff(qp->req.psn, qp->req.una);

	ur_timer_arm(&qp->dev->timers, &sr->rto, sr->rto_base_ns + rto_ns(qp, inflight));
}

/* A packet of `w` with PSNs [psn, psn + npsn) left (a READ request takes one
 * per response). Its responder places it early only if SR-framed and not a
 * READ or atomic. */
void ur_sr_sent(struct ur_qp *qp, const struct ur_send_wqe *w, uint32_t psn, uint32_t npsn,
		enum ur_sr_tx how, uint64_t now)
{
	struct ur_sr *sr = qp->sr;
	bool placeable = w->sr && !wqe_is_rd_atomic(w);

	++sr->txseq_next;
	for (uint32_t i = 0; i < npsn && i <= sr->mask; i++) {
		uint32_t slot = ur_psn_add(psn, i) & sr->mask;

		if (sr->tx[slot] & UR_SR_QUEUED) {
			/* sent anyway (a rewind's resend): the queued copy is this one */
			sr->tx[slot] &= (uint8_t)~UR_SR_QUEUED;
			sr->nqueued--;
		}
		if (how != UR_SR_TX_FIRST)
			sr->tx[slot] |= UR_SR_RETX;
		if (placeable)
			sr->tx[slot] &= (uint8_t)~UR_SR_IRN;
		else
			sr->tx[slot] |= UR_SR_IRN;
		sr->txseq[slot] = sr->txseq_next;
		sr->txtime[slot] = now;
	}
	if (how == UR_SR_TX_SELECTIVE)
		ur_count(qp->dev, UR_CTR_sr_selective_retx);
	if (how != UR_SR_TX_FIRST) {
		/* Karn: the ACK could answer either copy; and a resend below the
		 * timed PSN is a hole its cumulative ACK waits for, so that ACK
		 * would time the repair, not the path (Linux takes no sample
		 * from an ACK covering resent data either). A soak at 5% loss
		 * timed 30-67 ms waits so, and its RTO grew to the IBTA timeout. */
		if (sr->rtt_timing && ur_psn_le(psn, sr->rtt_psn))
			sr->rtt_timing = false;
	} else if (!sr->rtt_timing) {
		sr->rtt_timing = true;
		sr->rtt_psn = psn;
		sr->rtt_sent_ns = now;
	}
	/* The timeout runs from the last progress or from when the oldest
	 * packet outstanding left, whichever is later: a packet sent after the
	 * pipe ran dry must not inherit a deadline from the idle time before. */
	if (how != UR_SR_TX_SELECTIVE && (psn == qp->req.una || !ur_timer_armed(&sr->rto)))
		sr->rto_base_ns = now;
	if (!ur_timer_armed(&sr->rto))
		arm_rto(qp);
}

/* The timed PSN was answered, by an ACK or a SACK: one round-trip sample. */
static void rtt_sample(struct ur_qp *qp, uint64_t now)
{
	struct ur_sr *sr = qp->sr;
	/* (a host whose clock readings may arrive out of order gives no sample) */
	uint64_t rtt = now > sr->rtt_sent_ns ? now - sr->rtt_sent_ns : 0;

	sr->rtt_timing = false;
	if (!rtt || rtt > rto_max_ns(qp))
		return;
	note_wait(sr, rtt, now);
	if (sr->rtt_samples < UR_SR_START_SAMPLES)
		sr->rtt_samples++;
	if (!sr->srtt_ns) {
		sr->srtt_ns = rtt;
		sr->rttvar_ns = rtt / 2;
	} else {
		uint64_t dev = rtt > sr->srtt_ns ? rtt - sr->srtt_ns : sr->srtt_ns - rtt;

		/* RFC 6298 2.3: beta 1/4, alpha 1/8 */
		sr->rttvar_ns = sr->rttvar_ns - sr->rttvar_ns / 4 + dev / 4;
		sr->srtt_ns = sr->srtt_ns - sr->srtt_ns / 8 + rtt / 8;
	}
}

static void ur_sr_progress(struct ur_qp *qp, uint64_t now)
{
	struct ur_sr *sr = qp->sr;

	sr->rto_base_ns = now;
	sr->backoff = 0;
	if (sr->recovery && ur_psn_ge(qp->req.una, sr->recovery_end)) {
		sr->recovery = false;
		ur_rack_recovery_done(&sr->rack);
	}
	if (sr->rtt_timing && ur_psn_lt(sr->rtt_psn, qp->req.una))
		rtt_sample(qp, now);
}

/*
 * IRN's timeouts: RTO_low when too few packets are in flight for SACKs to
 * reveal a loss, RTO_high otherwise (the requester's ur_req_sr_rto_timer
 * decides what goes again). Whether the timeout is due at `now`; if not,
 * it is armed for when it will be.
 */
bool ur_sr_rto_due(struct ur_qp *qp, uint64_t now, uint32_t inflight)
{
	struct ur_sr *sr = qp->sr;
	uint64_t rto = rto_ns(qp, inflight);

	if (now < sr->rto_base_ns + rto) {
		ur_timer_arm(&qp->dev->timers, &sr->rto, sr->rto_base_ns + rto);
		return false;
	}
	return true;
}

/* The timeout passed with nothing sent: look again one RTO from now. */
void ur_sr_rto_defer(struct ur_qp *qp, uint64_t now, uint32_t inflight)
{
	ur_timer_arm(&qp->dev->timers, &qp->sr->rto, now + rto_ns(qp, inflight));
}

void ur_sr_rto_watch(struct ur_qp *qp, uint64_t now)
{
	struct ur_sr *sr = qp->sr;

	if (!ur_timer_armed(&sr->rto)) {
		sr->rto_base_ns = now;
		arm_rto(qp);
	}
}

/* Something went again on a timeout: back off, and time from now. */
void ur_sr_rto_backoff(struct ur_qp *qp, uint64_t now, uint32_t inflight)
{
	struct ur_sr *sr = qp->sr;

	if (!sr->backoff)
		sr->stall_from_ns = sr->rto_base_ns;
	if (sr->backoff < 6)
		sr->backoff++;
	sr->rto_base_ns = now;
	ur_timer_arm(&qp->dev->timers, &sr->rto, now + rto_ns(qp, inflight));
}

/* ---- responder: the PSN decision, where early packets land, the order they complete in ---- */

/*
 * The PSN decision for an SR-framed request. True: the packet is the
 * expected one, or came early within the window and is to be placed.
 * False: it was counted and dropped (a SACK says again where we are).
 */
bool ur_sr_psn_accept(struct ur_qp *qp, const struct ur_pkt *pkt, int32_t d)
{
	struct ur_sr *sr = qp->sr;

	if (d < 0) {
		/* executed already: say so again */
		ur_count(qp->dev, UR_CTR_duplicate_request);
		ur_count(qp->dev, UR_CTR_sr_duplicates);
	} else if ((uint32_t)d > sr->mask) {
		ur_count(qp->dev, UR_CTR_rx_drop_out_of_window);
	} else if (d > 0 && (sr->rx[pkt->psn & sr->mask] & UR_SR_GOT)) {
		ur_count(qp->dev, UR_CTR_sr_duplicates);
	} else if (d > 0 && qp->resp.nak_sent) {
		/* After an RNR (or sequence) NAK the requester starts again from
		 * the expected PSN: what it sent behind it is dropped quietly, as
		 * in go-back-N (C9-112). Placing it would take receive WQEs ahead
		 * for packets that come again anyway, and one that finds none
		 * would NAK again and again while the requester waits. */
		ur_count(qp->dev, UR_CTR_rx_drop_out_of_window);
		return false;
	} else {
		return true;
	}
	sr->sack_due = true;
	ur_dev_schedule(qp->dev, qp);
	return false;
}

/* Receive WQE number `rseq`, taken from the queue ahead of completion if need be. */
struct ur_recv_wqe *ur_sr_rwqe(struct ur_qp *qp, uint32_t rseq)
{
	struct ur_sr *sr = qp->sr;
	struct ur_responder *rs = &qp->resp;

	if ((int32_t)(rseq - rs->rq_done) < 0 || rseq - rs->rq_done > sr->mask)
		return NULL;
	while ((int32_t)(rs->rq_taken - rseq) <= 0) {
		struct ur_recv_wqe *slot =
		    (struct ur_recv_wqe *)(sr->rwqes + (rs->rq_taken & sr->mask) * sr->rwqe_stride);

		if (!ur_resp_take_rwqe(qp, slot))
			return NULL;
	}
	return (struct ur_recv_wqe *)(sr->rwqes + (rseq & sr->mask) * sr->rwqe_stride);
}

static void ur_sr_rwqe_taken(struct ur_qp *qp, uint32_t rseq, struct ur_recv_wqe *dst)
{
	struct ur_sr *sr = qp->sr;

	memcpy(dst, sr->rwqes + (rseq & sr->mask) * sr->rwqe_stride, sr->rwqe_stride);
}

/* Complete the receive WQE of message d, the next one due, with `status`. */
static void complete_rwqe(struct ur_qp *qp, const struct ur_sr_done *d, enum ur_wc_status status)
{
	struct ur_sr *sr = qp->sr;
	const struct ur_recv_wqe *r =
	    (const struct ur_recv_wqe *)(sr->rwqes + (d->rseq & sr->mask) * sr->rwqe_stride);
	struct ur_cqe c = {
	    .wr_id = r->wr_id,
	    .status = status,
	    .opcode = d->kind == UR_KIND_SEND ? UR_WC_RECV : UR_WC_RECV_RDMA_WITH_IMM,
	    .byte_len = d->byte_len,
	    .imm = d->imm,
	    .qp_num = qp->qpn,
	    .src_qp = qp->attr.dest_qp_num,
	    .solicited = d->se,
	};

	if (ur_opcode_get(d->opcode)->hdrs & UR_HDR_IMMDT)
		c.wc_flags |= UR_WC_WITH_IMM;
	if (ur_opcode_get(d->opcode)->hdrs & UR_HDR_IETH)
		c.wc_flags |= UR_WC_WITH_INV; /* d->imm: the R_Key invalidated */
	qp->resp.rq_done++;
	ur_qp_post_cqe(qp, qp->rcq, &c);
}

void ur_sr_complete(struct ur_qp *qp, const struct ur_sr_done *d)
{
	struct ur_responder *rs = &qp->resp;

	rs->msn = (rs->msn + 1) & UR_PSN_MASK;
	if (d->kind == UR_KIND_WRITE && !(ur_opcode_get(d->opcode)->hdrs & UR_HDR_IMMDT))
		return;
	complete_rwqe(qp, d, UR_WC_SUCCESS);
}

/*
 * A SEND failed at the expected PSN: its receive WQE is the next to
 * complete, so it reports the error itself, as with go-back-N (LOC_LEN_ERR
 * for a SEND too long, LOC_PROT_ERR for a bad lkey), with the bytes placed
 * before this packet. The QP then fails and the WQEs behind it flush. One
 * that failed early, ahead of messages still missing, cannot complete
 * before them: it flushes with the rest.
 */
void ur_sr_fail_rwqe(struct ur_qp *qp, struct ur_sr_done *d, uint32_t ahead, uint32_t placed,
		     enum ur_wc_status status)
{
	if (ahead)
		return;
	d->byte_len = placed;
	complete_rwqe(qp, d, status);
}

/* Whether this packet of a message uses the message's receive WQE. */
static bool uses_rwqe(const struct ur_sr_done *d)
{
	return d->kind == UR_KIND_SEND || (ur_opcode_get(d->opcode)->hdrs & UR_HDR_IMMDT);
}

/*
 * Messages complete in PSN order and each takes the next receive WQE, so a
 * packet `ahead` PSNs past the expected one names a WQE at most `ahead`
 * past the next to complete, and the packet at the expected PSN names that
 * one exactly. A peer that numbers otherwise would have two messages share
 * a WQE.
 */
bool ur_sr_rseq_fits(const struct ur_qp *qp, const struct ur_sr_done *d, uint32_t ahead)
{
	return !uses_rwqe(d) || d->rseq - qp->resp.rq_done <= ahead;
}

/* A packet came early and was placed: it completes once the PSNs before it arrive. */
void ur_sr_hold_early(struct ur_qp *qp, const struct ur_pkt *pkt, const struct ur_sr_done *d)
{
	struct ur_sr *sr = qp->sr;

	sr->rx[pkt->psn & sr->mask] = UR_SR_GOT | ((pkt->op->pos & UR_POS_LAST) ? UR_SR_LAST : 0);
	sr->done[pkt->psn & sr->mask] = *d;
	sr->nearly++;
	ur_count(qp->dev, UR_CTR_sr_ooo_placed);
}

/* Packets are held early: the requester learns which from a SACK. */
void ur_sr_sack_if_early(struct ur_qp *qp)
{
	struct ur_sr *sr = qp->sr;

	if (sr->nearly) {
		sr->sack_due = true;
		ur_dev_schedule(qp->dev, qp);
	}
}

/*
 * The expected PSN moved: consume what arrived early behind it, completing
 * in order. Returns 0, or -1 when a message placed early names a receive
 * WQE another message completes (its number in `*rseq`): the QP must fail,
 * so the WQEs taken ahead are flushed, none reported done.
 */
int ur_sr_advance(struct ur_qp *qp, uint32_t *rseq)
{
	struct ur_sr *sr = qp->sr;
	struct ur_responder *rs = &qp->resp;

	while (sr->nearly) {
		uint8_t *f = &sr->rx[rs->epsn & sr->mask];
		const struct ur_sr_done *d = &sr->done[rs->epsn & sr->mask];

		if (!(*f & UR_SR_GOT))
			break;
		if (!ur_sr_rseq_fits(qp, d, 0)) {
			*rseq = d->rseq;
			return -1;
		}
		if (*f & UR_SR_LAST)
			ur_sr_complete(qp, d);
		*f = 0;
		sr->nearly--;
		rs->epsn = ur_psn_add(rs->epsn, 1);
	}
	return 0;
}

/*
 * The QP entered the error state: receive WQEs taken ahead for packets that
 * came early complete with a flush, in order, like every other posted one
 * (10.3.1.2), before the ones still in the queue.
 */
static void ur_sr_flush_rwqes(struct ur_qp *qp)
{
	struct ur_sr *sr = qp->sr;
	struct ur_responder *rs = &qp->resp;

	while ((int32_t)(rs->rq_taken - rs->rq_done) > 0) {
		const struct ur_recv_wqe *r =
		    (const struct ur_recv_wqe *)(sr->rwqes +
						 (rs->rq_done & sr->mask) * sr->rwqe_stride);
		struct ur_cqe c = {
		    .wr_id = r->wr_id,
		    .status = UR_WC_WR_FLUSH_ERR,
		    .opcode = UR_WC_RECV,
		    .qp_num = qp->qpn,
		    .src_qp = qp->attr.dest_qp_num,
		};

		ur_count(qp->dev, UR_CTR_resp_cqe_flush_error);
		rs->rq_done++;
		ur_qp_post_cqe(qp, qp->rcq, &c);
	}
	memset(sr->rx, 0, sr->mask + 1);
	sr->nearly = 0;
}

void ur_sr_fill_sack(struct ur_qp *qp, struct ur_sack *s)
{
	struct ur_sr *sr = qp->sr;
	uint32_t base = qp->resp.epsn;
	unsigned n = UR_MIN(UR_SACK_BITS, sr->mask);

	ur_sack_set_base(s, base);
	for (unsigned i = 0; sr->nearly && i < n; i++)
		if (sr->rx[(base + 1 + i) & sr->mask] & UR_SR_GOT)
			ur_sack_set_bit(s, i);
	sr->sack_due = false;
}

/* ---- the operations tables (rtx.h) ---- */

/* never beyond what either side's PSN maps cover */
static bool window_full(const struct ur_qp *qp)
{
	const struct ur_sr *sr = qp->sr;

	return ur_psn_diff(qp->req.psn, qp->req.una) >=
	       (int32_t)UR_MIN(sr->mask + 1, sr->peer_window ? sr->peer_window : UINT32_MAX);
}

static void acked(struct ur_qp *qp, uint32_t una, uint64_t now)
{
	ur_sr_acked(qp, qp->req.una, una, now);
	ur_sr_forget(qp, qp->req.una, una);
}

static bool resend_missing(struct ur_qp *qp)
{
	ur_sr_retry(qp);
	return true;
}

static bool go_back(struct ur_qp *qp)
{
	(void)qp;
	return false;
}

static void nothing(struct ur_qp *qp)
{
	(void)qp;
}

/* A message that began before the agreement (go-back-N framing) still uses
 * the next WQE in order, which selective repeat may have taken already for
 * a later message that came early. */
static bool rwqe_taken_ahead(struct ur_qp *qp, struct ur_recv_wqe *dst)
{
	if (qp->resp.rq_taken == qp->resp.rq_done)
		return false;
	ur_sr_rwqe_taken(qp, qp->resp.rq_done, dst);
	return true;
}

static bool held_early(const struct ur_qp *qp)
{
	return qp->sr->nearly;
}

static bool sack_due(const struct ur_qp *qp)
{
	return qp->sr->sack_due;
}

#define UR_RTX_SR_COMMON                                                                           \
	.retx_pending = ur_sr_retx_pending, .window_full = window_full, .sent = ur_sr_sent,        \
	.acked = acked, .progress = ur_sr_progress, .forget = ur_sr_forget,                        \
	.sack_rx = ur_sr_sack_rx, .rwqe_taken_ahead = rwqe_taken_ahead,                            \
	.held_early = held_early, .sack_due = sack_due, .irn_rto = true,        \
	.ctrl_pending = ur_sr_ctrl_pending, .start = ur_sr_start, .reset = ur_sr_reset,            \
	.stop_timers = stop_timers, .flush_rwqes = ur_sr_flush_rwqes

const struct ur_rtx ur_rtx_sr_gbn = {
    .name = "go-back-N (selective repeat not agreed)",
    .resend_missing = go_back,
    .retry_note = "",
    .log_state = nothing,
    UR_RTX_SR_COMMON,
};

const struct ur_rtx ur_rtx_sr = {
    .name = "selective repeat",
    .selective = true,
    .resend_missing = resend_missing,
    .reread = true,
    .retry_note = ", selective repeat",
    .log_state = ur_sr_log_state,
    UR_RTX_SR_COMMON,
};
