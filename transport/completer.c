/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The completer (IBTA 9.7.5.2 requester side, "response processing"):
 * matches ACKs, NAKs, READ responses and atomic acknowledgements to the
 * outstanding send WQEs and retires them in order.
 */
#include <string.h>

#include "completer.h"
#include "psn.h"
#include "qp.h"
#include "qp_error.h"
#include "requester.h"
#include "rtx.h"
#include "sg_copy.h"
#include "sq_retire.h"
#include "wr_opcode.h"

static uint32_t wqe_last_psn(const struct ur_send_wqe *w)
{
	return ur_psn_add(w->first_psn, w->npkts - 1);
}

static void wqe_done(struct ur_qp *qp, struct ur_send_wqe *w)
{
	w->state = UR_WQE_DONE;
	w->status = UR_WC_SUCCESS;
	if (wqe_is_rd_atomic(w))
		qp->req.rd_out--;
}

/* A WQE failed: complete it with `status` and take the QP to the error state. */
void ur_comp_wqe_error(struct ur_qp *qp, struct ur_send_wqe *w, enum ur_wc_status status)
{
	if (w->state != UR_WQE_DONE && wqe_is_rd_atomic(w) && w->state != UR_WQE_POSTED)
		qp->req.rd_out--;
	w->state = UR_WQE_DONE;
	w->status = status;
	ur_count(qp->dev, UR_CTR_req_cqe_error);
	ur_qp_log_error(qp, "send WQE wr_id %#llx completes with %s", (unsigned long long)w->wr_id,
			ur_wc_status_name(status));
	if (qp->svc->acknowledged) {
		/* No asynchronous event: the error CQE is the report. QP_FATAL
		 * (a work queue catastrophic error, IBTA 11.6.3.1) is for an
		 * error a completion cannot carry. So do Soft-RoCE (rxe_comp.c
		 * COMPST_ERROR: do_complete() then rxe_qp_error(), which only
		 * moves the QP to ERR) and mlx5 (QP_FATAL only from the
		 * firmware's WQ_CATAS_ERROR event; RETRY_EXC_ERR and the other
		 * requester errors come in the CQE's syndrome). */
		ur_qp_to_error(qp, false);
	} else {
		/* UC and UD: a send error moves only the send queue to SQE
		 * (10.3.1.2); the WQEs behind the failed one flush, the receive
		 * queue works on, and SQE -> RTS resumes with new WQEs. */
		atomic_store_explicit(&qp->state, UR_QPS_SQE, memory_order_relaxed);
		ur_sq_flush(qp);
	}
}

/* Move the oldest unacknowledged PSN forward to `una`: progress. */
static void advance_una(struct ur_qp *qp, uint32_t una, uint64_t now)
{
	struct ur_requester *rq = &qp->req;

	qp->rtx->acked(qp, una, now);
	rq->una = una;
	ur_req_progress(qp, now);
	qp->rtx->progress(qp, now);
}

/*
 * The PSNs of WQEs that completed were answered, whatever came of the
 * acknowledgements: the oldest unacknowledged PSN never lies below the
 * oldest WQE still to complete (or, when that one is still to be sent,
 * below the next PSN). Selective repeat can break this: a READ or atomic
 * asked again takes the oldest PSN back to it while a younger READ is
 * already done; once its answer comes the oldest PSN stands on the done
 * READ, which no timeout can send again. A 5% soak (2026-12-02) lost a QP
 * so: the WRITE after the READ lost its ACKs and its retries resent nothing
 * (test_sr_una_never_on_a_done_read). Returns where the oldest PSN belongs,
 * or false when it is right.
 */
static bool una_behind_done(struct ur_qp *qp, uint32_t *upto)
{
	const struct ur_requester *rq = &qp->req;
	const struct ur_send_wqe *w = rq->comp == sq_prod(qp) ? NULL : sq_wqe(qp, rq->comp);

	if (w && w->state == UR_WQE_DONE)
		return false; /* not retired yet: look again later */
	*upto = !w || w->state == UR_WQE_POSTED ? rq->psn : w->first_psn;
	return ur_psn_lt(rq->una, *upto) && !ur_psn_lt(rq->psn, *upto);
}

void ur_comp_una_past_done(struct ur_qp *qp, uint64_t now)
{
	uint32_t upto;

	if (una_behind_done(qp, &upto))
		advance_una(qp, upto, now);
}

bool ur_comp_una_catch_up(struct ur_qp *qp, uint64_t now)
{
	uint32_t upto;

	if (!una_behind_done(qp, &upto))
		return false;
	ur_count(qp->dev, UR_CTR_una_caught_up); /* a path above missed it */
	advance_una(qp, upto, now);
	return true;
}

/* A READ sent under selective repeat: its missing responses are asked for alone. */
static bool sr_read(const struct ur_send_wqe *w)
{
	return w->opcode == UR_WR_RDMA_READ && w->sr && w->state == UR_WQE_SENT;
}

static void ack_upto(struct ur_qp *qp, uint32_t psn, uint64_t now);

/*
 * The implied NAK (C9-138): an answer past a READ or atomic still missing
 * its own means that one was lost: ask again from `psn`. Under go-back-N,
 * once. Every ACK and response the responder sent before the request asked
 * again reached it shows the same gap; each used to ask again, each retry a
 * replay of the READ's responses and a round of ACKs that asked more
 * (between two programs, UCX's rendezvous READs grew that into millions of
 * duplicate requests a minute). The first answer in order ends the wait;
 * if that one is lost too, more responses past the gap than were on their
 * way before tell (read_response), or else the ACK timer, since una stays
 * on the missing answer (gbn_unanswered). Selective repeat asks at every
 * ACK past, as it did.
 */
static void implied_nak(struct ur_qp *qp, const struct ur_send_wqe *w, uint32_t psn)
{
	struct ur_requester *rq = &qp->req;

	if (rq->implied_nak_out && !w->sr)
		return;
	rq->implied_nak_out = true;
	/* at most one answer per PSN from `psn` on is still on its way from
	 * before (the originals, or the one replay before this one) */
	rq->nak_stale = (uint32_t)ur_psn_diff(rq->max_psn, psn);
	ur_count(qp->dev, UR_CTR_implied_nak_seq_err);
	ur_req_rewind(qp, psn);
}

/*
 * Selective repeat: ACKs may have gone past a READ or atomic still waiting
 * for its answer; once it has it, what they acknowledged completes (the
 * READ or atomic was the only thing holding it back), with no ACK to come.
 */
static void sr_complete_acked(struct ur_qp *qp, uint64_t now)
{
	ack_upto(qp, ur_psn_add(qp->req.una, UR_PSN_MASK), now);
	ur_comp_una_past_done(qp, now);
}

/*
 * Go-back-N: an ACK of `psn` past a READ or atomic whose answer is missing
 * acknowledges nothing from that answer on (C9-138): the oldest
 * unacknowledged PSN stays there, so the ACK timer keeps watching it while
 * the implied NAK's retry is out. Returns `upto`, or that PSN if lower.
 */
static uint32_t gbn_unanswered(struct ur_qp *qp, uint32_t psn, uint32_t upto)
{
	uint32_t prod = sq_prod(qp);

	if (!qp->req.rd_out)
		return upto; /* no READ or atomic out: nothing to walk for */
	for (uint32_t idx = qp->req.comp; idx != prod; idx++) {
		const struct ur_send_wqe *w = sq_wqe(qp, idx);

		if (w->state == UR_WQE_POSTED || ur_psn_lt(psn, w->first_psn))
			break;
		if (w->state == UR_WQE_DONE)
			continue;
		if (wqe_is_rd_atomic(w))
			return !w->sr && ur_psn_lt(w->resp_psn, upto) ? w->resp_psn : upto;
	}
	return upto;
}

/* Every request PSN up to and including `psn` was executed (9.7.5.2.1). */
static void ack_upto(struct ur_qp *qp, uint32_t psn, uint64_t now)
{
	struct ur_requester *rq = &qp->req;
	uint32_t prod = sq_prod(qp), upto = ur_psn_add(psn, 1);

	/* After a rewind, PSNs from the next to send on go again and must be
	 * answered again: an ACK taken before they went (in the same receive
	 * burst as the READ response that revealed a gap) does not acknowledge
	 * them, or a retry from una would never resend them. */
	if (ur_psn_lt(rq->psn, upto))
		upto = rq->psn;
	upto = gbn_unanswered(qp, psn, upto);
	if (ur_psn_gt(upto, rq->una)) {
		advance_una(qp, upto, now);
		rq->rnr_left = qp->attr.rnr_retry;
	}
	for (uint32_t idx = rq->comp; idx != prod; idx++) {
		struct ur_send_wqe *w = sq_wqe(qp, idx);

		if (w->state == UR_WQE_POSTED)
			break;
		if (w->state == UR_WQE_DONE)
			continue;
		if (sr_read(w)) {
			/* Selective repeat: the response may be late on a path
			 * that reorders; ask again for that READ alone, after
			 * the reordering window (ur_req_read_missing). */
			if (ur_psn_ge(psn, w->resp_psn))
				ur_req_read_missing(qp, psn, true, now);
			break;
		}
		if (wqe_is_rd_atomic(w)) {
			/* An ACK past a READ/atomic whose response never came means
			 * the response was lost: ask again (C9-138, implied NAK). */
			if (ur_psn_ge(psn, w->first_psn))
				implied_nak(qp, w, w->resp_psn);
			break;
		}
		if (w->state != UR_WQE_SENT || ur_psn_lt(psn, wqe_last_psn(w)))
			break;
		wqe_done(qp, w);
	}
	ur_sq_retire_done(qp);
}

/* The first WQE not yet done, or NULL. */
static struct ur_send_wqe *oldest_pending(struct ur_qp *qp, bool rd_atomic_only)
{
	uint32_t prod = sq_prod(qp);

	for (uint32_t idx = qp->req.comp; idx != prod; idx++) {
		struct ur_send_wqe *w = sq_wqe(qp, idx);

		if (w->state == UR_WQE_POSTED)
			return NULL;
		if (w->state == UR_WQE_DONE)
			continue;
		if (!rd_atomic_only || wqe_is_rd_atomic(w))
			return w;
	}
	return NULL;
}

static struct ur_send_wqe *wqe_with_psn(struct ur_qp *qp, uint32_t psn)
{
	uint32_t prod = sq_prod(qp);

	for (uint32_t idx = qp->req.comp; idx != prod; idx++) {
		struct ur_send_wqe *w = sq_wqe(qp, idx);

		if (w->state == UR_WQE_POSTED)
			return NULL;
		if (w->state != UR_WQE_DONE && ur_psn_le(psn, wqe_last_psn(w)))
			return w;
	}
	return NULL;
}

/* RNR NAK timer values of table 45, in nanoseconds; index 0 is the longest. */
static const uint32_t rnr_timer_us[32] = {
	655360, 10,    20,    30,    40,    60,     80,     120,    160,    240,    320,
	480,    640,   960,   1280,  1920,  2560,   3840,   5120,   7680,   10240,  15360,
	20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

uint64_t ur_rnr_timeout_ns(unsigned code)
{
	return (uint64_t)rnr_timer_us[code & 31] * 1000;
}

/* Place `len` bytes at offset `off` of the WQE's local buffers (needs LOCAL_WRITE). */
static int wqe_scatter(struct ur_qp *qp, const struct ur_send_wqe *w, uint32_t off,
		       const uint8_t *src, uint32_t len)
{
	const struct ur_sg_list sg = {&qp->dev->mrs, qp->pd, w->sge, w->num_sge};

	return ur_sg_scatter(&sg, off, src, len);
}

/*
 * The completer's steps for one response, as Soft-RoCE's rxe_comp.c has
 * them: each makes one check or takes one action and names the next.
 * Drops are counted where they are found; COMP_UPDATE runs after every
 * response that reached a WQE (or could have).
 */
/* step, function: each function returns the next step (COMP_DONE ends) */
#define UR_COMP_STATES(X)                                                                  \
	X(COMP_CHECK_PSN, check_psn)	/* C9-102: no response to a PSN never sent */         \
	X(COMP_CHECK_KIND, check_kind)	/* ACK, READ response or atomic acknowledge */        \
	X(COMP_AETH, check_aeth)	/* an ACK's syndrome: ACK, RNR NAK or NAK (9.7.5.2) */ \
	X(COMP_ACK, positive_ack)	/* 9.7.5.2.1: everything up to the PSN is done */     \
	X(COMP_NAK, any_nak)		/* 9.7.5.2.2: a NAK acknowledges what is before it */ \
	X(COMP_SEQ_NAK, seq_nak)	/* 9.7.5.2.3: PSN sequence error, go back */          \
	X(COMP_RNR_NAK, rnr_nak)	/* 9.7.5.2.8: wait the RNR timer, then go back */     \
	X(COMP_ERROR_NAK, error_nak)	/* 9.7.5.2.2: the WQE fails with the NAK's status */  \
	X(COMP_READ_RESP, read_response) /* 9.7.5.2.4 */                                     \
	X(COMP_ATOMIC_ACK, atomic_ack)	/* 9.7.5.2.5 */                                      \
	X(COMP_UPDATE, update)		/* the ACK timer and the transmit round robin */

enum comp_state {
#define UR_COMP_ENUM(name, fn) name,
	UR_COMP_STATES(UR_COMP_ENUM)
#undef UR_COMP_ENUM
	COMP_DONE,
};

static uint8_t aeth_syndrome(const struct ur_pkt *pkt)
{
	return ur_aeth_syndrome((const struct ur_aeth *)((const uint8_t *)pkt->bth + pkt->op->off_aeth));
}

/* A response for a PSN never sent is a ghost (C9-102). */
static enum comp_state check_psn(struct ur_qp *qp, const struct ur_pkt *pkt, uint64_t now)
{
	(void)now;
	if (!ur_psn_lt(pkt->psn, qp->req.max_psn)) {
		ur_count(qp->dev, UR_CTR_rx_drop_ghost_ack);
		return COMP_DONE;
	}
	return COMP_CHECK_KIND;
}

static enum comp_state check_kind(struct ur_qp *qp, const struct ur_pkt *pkt, uint64_t now)
{
	(void)now;
	switch (pkt->op->kind) {
	case UR_KIND_ACK:
		return COMP_AETH;
	case UR_KIND_READ_RESP:
		/* READ responses carry only ACK syndromes (9.7.5.2.4) */
		if ((pkt->op->hdrs & UR_HDR_AETH) &&
		    (aeth_syndrome(pkt) & UR_AETH_TYPE_MASK) != UR_AETH_ACK) {
			ur_count(qp->dev, UR_CTR_rx_drop_bad_response);
			return COMP_DONE;
		}
		return COMP_READ_RESP;
	case UR_KIND_ATOMIC_ACK:
		return COMP_ATOMIC_ACK;
	default:
		ur_count(qp->dev, UR_CTR_rx_drop_bad_response);
		return COMP_DONE;
	}
}

static enum comp_state check_aeth(struct ur_qp *qp, const struct ur_pkt *pkt, uint64_t now)
{
	(void)now;
	switch (aeth_syndrome(pkt) & UR_AETH_TYPE_MASK) {
	case UR_AETH_ACK:
		return COMP_ACK;
	case UR_AETH_RNR_NAK:
	case UR_AETH_NAK:
		return COMP_NAK;
	default:
		ur_count(qp->dev, UR_CTR_rx_drop_bad_response);
		return COMP_UPDATE;
	}
}

static enum comp_state positive_ack(struct ur_qp *qp, const struct ur_pkt *pkt, uint64_t now)
{
	ur_count(qp->dev, UR_CTR_rx_acks);
	ack_upto(qp, pkt->psn, now);
	if (pkt->sr_ext)
		qp->rtx->sack_rx(qp, (const struct ur_sack *)pkt->sr_ext, now);
	return COMP_UPDATE;
}

static enum comp_state any_nak(struct ur_qp *qp, const struct ur_pkt *pkt, uint64_t now)
{
	uint8_t syn = aeth_syndrome(pkt);

	ur_count(qp->dev, UR_CTR_rx_naks);
	/* a NAK acknowledges everything before its PSN (9.7.5.2.2) */
	ack_upto(qp, ur_psn_add(pkt->psn, UR_PSN_MASK), now);
	if (ur_psn_lt(pkt->psn, qp->req.una)) {
		ur_count(qp->dev, UR_CTR_rx_drop_ghost_ack); /* stale NAK */
		return COMP_UPDATE;
	}
	if ((syn & UR_AETH_TYPE_MASK) == UR_AETH_RNR_NAK)
		return COMP_RNR_NAK;
	return (syn & UR_AETH_VALUE_MASK) == UR_NAK_PSN_SEQ_ERR ? COMP_SEQ_NAK : COMP_ERROR_NAK;
}

static enum comp_state rnr_nak(struct ur_qp *qp, const struct ur_pkt *pkt, uint64_t now)
{
	struct ur_requester *rq = &qp->req;
	uint32_t psn = pkt->psn;
	struct ur_send_wqe *w = wqe_with_psn(qp, psn);

	ur_count(qp->dev, UR_CTR_rnr_nak_retry_err);
	if (!w)
		return COMP_UPDATE;
	if (rq->rnr_left == 0) {
		ur_count(qp->dev, UR_CTR_rnr_retry_exceeded);
		ur_qp_log_error(qp, "RNR retry count exhausted at PSN %#x (rnr_retry %u)", psn,
				qp->attr.rnr_retry);
		ur_comp_wqe_error(qp, w, UR_WC_RNR_RETRY_EXC_ERR);
		return COMP_UPDATE;
	}
	if (rq->rnr_left != 7) /* 7 means retry forever (9.7.5.2.8) */
		rq->rnr_left--;
	ur_req_rewind(qp, psn);
	rq->rnr_wait = true;
	ur_timer_cancel(&qp->dev->timers, &rq->retx);
	ur_timer_arm(&qp->dev->timers, &rq->rnr,
		     now + ur_rnr_timeout_ns(aeth_syndrome(pkt) & UR_AETH_VALUE_MASK));
	return COMP_UPDATE;
}

static enum comp_state seq_nak(struct ur_qp *qp, const struct ur_pkt *pkt, uint64_t now)
{
	struct ur_requester *rq = &qp->req;
	uint32_t psn = pkt->psn;
	struct ur_send_wqe *w;
	(void)now;

	ur_count(qp->dev, UR_CTR_packet_seq_err);
	if (rq->rnr_wait)
		return COMP_UPDATE; /* the RNR retry will resend from there anyway */
	/* The same NAK again without progress counts as a retry (9.7.5.2.3). */
	if (psn == rq->nak_psn && psn == rq->una) {
		if (!rq->retry_left) {
			w = wqe_with_psn(qp, psn);
			if (w) {
				ur_count(qp->dev, UR_CTR_retry_exceeded);
				ur_comp_wqe_error(qp, w, UR_WC_RETRY_EXC_ERR);
			}
			return COMP_UPDATE;
		}
		rq->retry_left--;
	}
	rq->nak_psn = psn;
	ur_req_rewind(qp, psn);
	return COMP_UPDATE;
}

static enum comp_state error_nak(struct ur_qp *qp, const struct ur_pkt *pkt, uint64_t now)
{
	struct ur_send_wqe *w;
	enum ur_wc_status st;
	(void)now;

	switch (aeth_syndrome(pkt) & UR_AETH_VALUE_MASK) {
	case UR_NAK_INVALID_REQ:
		st = UR_WC_REM_INV_REQ_ERR;
		ur_count(qp->dev, UR_CTR_req_remote_invalid_request);
		break;
	case UR_NAK_REM_ACCESS_ERR:
		st = UR_WC_REM_ACCESS_ERR;
		ur_count(qp->dev, UR_CTR_req_remote_access_errors);
		break;
	case UR_NAK_INVALID_RD_REQ:
		st = UR_WC_REM_INV_RD_REQ_ERR;
		break;
	default:
		st = UR_WC_REM_OP_ERR;
		break;
	}
	w = wqe_with_psn(qp, pkt->psn);
	if (w)
		ur_comp_wqe_error(qp, w, st);
	return COMP_UPDATE;
}

/* A READ response (9.7.5.2.4): in order, into the oldest READ's buffers. */
static enum comp_state read_response(struct ur_qp *qp, const struct ur_pkt *pkt, uint64_t now)
{
	struct ur_requester *rq = &qp->req;
	struct ur_send_wqe *w = oldest_pending(qp, true);
	uint32_t psn = pkt->psn, off, expect_len;
	bool last;

	if (!w || w->opcode != UR_WR_RDMA_READ || w->state == UR_WQE_POSTED) {
		ur_count(qp->dev, UR_CTR_rx_drop_ghost_ack);
		return COMP_UPDATE;
	}
	if (ur_psn_lt(psn, w->resp_psn)) {
		ur_count(qp->dev, UR_CTR_rx_drop_out_of_window); /* duplicate response */
		return COMP_UPDATE;
	}
	if (sr_read(w)) {
		/*
		 * Selective repeat: each READ takes its responses in order, even
		 * while an older one misses some (they land by offset; the READs
		 * still complete in order). A response past a missing one, here
		 * or in an older READ, is no proof of loss on a path that
		 * reorders: the missing READ parts are asked for again, alone,
		 * if they have not come a reordering window later.
		 */
		struct ur_send_wqe *r = wqe_with_psn(qp, psn);

		if (!r || !sr_read(r) || ur_psn_lt(psn, r->resp_psn)) {
			ur_count(qp->dev, UR_CTR_rx_drop_out_of_window); /* duplicate response */
			return COMP_UPDATE;
		}
		if (psn != r->resp_psn) {
			if (!ur_req_read_missing(qp, psn, true, now))
				ur_count(qp->dev, UR_CTR_rx_drop_out_of_window);
			return COMP_UPDATE; /* dropped: asked for again with the rest */
		}
		if (r != w)
			ur_req_read_missing(qp, ur_psn_add(psn, UR_PSN_MASK), true, now);
		w = r;
	}
	if (psn != w->resp_psn) {
		/* A response went missing: ask again for the rest, once. More
		 * responses past the gap than were on their way before come from
		 * the READ asked again, whose first response was lost too: ask
		 * again now rather than at the ACK timeout. */
		if (rq->implied_nak_out) {
			if (rq->nak_stale)
				rq->nak_stale--;
			else
				rq->implied_nak_out = false;
		}
		if (!rq->implied_nak_out && ur_psn_lt(psn, rq->max_psn)) {
			ack_upto(qp, ur_psn_add(w->first_psn, UR_PSN_MASK), now);
			implied_nak(qp, w, w->resp_psn);
		} else {
			ur_count(qp->dev, UR_CTR_rx_drop_out_of_window);
		}
		return COMP_UPDATE;
	}
	rq->implied_nak_out = false;
	/* The response implicitly acknowledges every request before the READ. */
	ack_upto(qp, ur_psn_add(w->first_psn, UR_PSN_MASK), now);

	off = (uint32_t)ur_psn_diff(psn, w->first_psn) * qp->mtu;
	last = psn == wqe_last_psn(w);
	expect_len = last ? w->length - off : qp->mtu;
	if (pkt->payload_len != expect_len ||
	    ((pkt->op->pos & UR_POS_FIRST) && psn != w->first_psn) ||
	    (!!(pkt->op->pos & UR_POS_LAST) != last)) {
		ur_count(qp->dev, UR_CTR_rx_drop_bad_response);
		ur_qp_log_error(qp, "malformed READ response PSN %#x (%s, %u bytes)", psn,
				ur_opcode_name(pkt->opcode), pkt->payload_len);
		ur_comp_wqe_error(qp, w, UR_WC_BAD_RESP_ERR);
		return COMP_UPDATE;
	}
	if (wqe_scatter(qp, w, off, pkt->payload, pkt->payload_len)) {
		ur_qp_log_error(qp, "local protection error placing READ response (wr_id %#llx)",
				(unsigned long long)w->wr_id);
		ur_comp_wqe_error(qp, w, UR_WC_LOC_PROT_ERR);
		return COMP_UPDATE;
	}
	w->resp_psn = ur_psn_add(psn, 1);
	w->resp_bytes = off + pkt->payload_len;
	if (ur_psn_ge(psn, rq->una))
		advance_una(qp, ur_psn_add(psn, 1), now);
	if (last) {
		wqe_done(qp, w);
		ur_sq_retire_done(qp);
		/* a later ACK in the same burst may now complete more */
		if (w->sr)
			sr_complete_acked(qp, now);
	}
	return COMP_UPDATE;
}

/* An atomic acknowledge (9.7.5.2.5): the original value, for the oldest atomic. */
static enum comp_state atomic_ack(struct ur_qp *qp, const struct ur_pkt *pkt, uint64_t now)
{
	const struct ur_atmack *ack = (const struct ur_atmack *)((const uint8_t *)pkt->bth +
								  pkt->op->off_atmack);
	struct ur_send_wqe *w = oldest_pending(qp, true);
	uint64_t orig;

	/* selective repeat: a READ older than the atomic may still be missing
	 * responses (asked for again alone): the answer finds its atomic by PSN */
	if (w && sr_read(w)) {
		struct ur_send_wqe *a = wqe_with_psn(qp, pkt->psn);

		if (a && wqe_is_rd_atomic(a) && a->opcode != UR_WR_RDMA_READ &&
		    a->state == UR_WQE_SENT && a->first_psn == pkt->psn)
			w = a;
	}
	if (!w || w->opcode == UR_WR_RDMA_READ || w->state == UR_WQE_POSTED ||
	    pkt->psn != w->first_psn) {
		ur_count(qp->dev, UR_CTR_rx_drop_ghost_ack);
		if (w && w->opcode != UR_WR_RDMA_READ && ur_psn_gt(pkt->psn, w->first_psn) &&
		    ur_psn_lt(pkt->psn, qp->req.max_psn))
			implied_nak(qp, w, w->first_psn);
		return COMP_UPDATE;
	}
	qp->req.implied_nak_out = false;
	ack_upto(qp, ur_psn_add(w->first_psn, UR_PSN_MASK), now);
	orig = ur_atmack_orig(ack);
	if (wqe_scatter(qp, w, 0, (const uint8_t *)&orig, sizeof(orig))) {
		ur_comp_wqe_error(qp, w, UR_WC_LOC_PROT_ERR);
		return COMP_UPDATE;
	}
	if (ur_psn_ge(pkt->psn, qp->req.una))
		advance_una(qp, ur_psn_add(pkt->psn, 1), now);
	wqe_done(qp, w);
	ur_sq_retire_done(qp);
	if (w->sr)
		sr_complete_acked(qp, now);
	return COMP_UPDATE;
}

/* Nothing outstanding: the ACK timer stops; more to send: the QP takes a turn. */
static enum comp_state update(struct ur_qp *qp, const struct ur_pkt *pkt, uint64_t now)
{
	struct ur_requester *rq = &qp->req;
	(void)pkt;
	(void)now;

	/* (a READ that ACKs went past keeps it running: its responses are missing) */
	if (!ur_psn_lt(rq->una, rq->psn) && !ur_req_sr_read_waiting(qp))
		ur_timer_cancel(&qp->dev->timers, &rq->retx);
	if (ur_req_has_work(qp))
		ur_dev_schedule(qp->dev, qp);
	return COMP_DONE;
}

void ur_comp_rx(struct ur_qp *qp, const struct ur_pkt *pkt, uint64_t now)
{
	enum comp_state st = COMP_CHECK_PSN;

	/* a switch, not a table of pointers: each step is inlined into the loop */
	while (st != COMP_DONE) {
		switch (st) {
#define UR_COMP_STEP(name, fn)                                                                     \
	case name:                                                                                 \
		st = fn(qp, pkt, now);                                                             \
		break;
			UR_COMP_STATES(UR_COMP_STEP)
#undef UR_COMP_STEP
		default:
			st = COMP_DONE;
			break;
		}
	}
}
