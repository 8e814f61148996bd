/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The requester (IBTA 9.7.4 and 9.7.6.1): turns send WQEs into request
 * packets, assigns PSNs, keeps within the window and the outstanding
 * RDMA READ/atomic limit, and goes back N on a sequence NAK or a timeout.
 */
#include <errno.h>
#include <string.h>

#include "ack.h"
#include "completer.h"
#include "mw.h"
#include "packet_out.h"
#include "psn.h"
#include "qp.h"
#include "requester.h"
#include "rtx.h"
#include "sg_copy.h"
#include "sq_retire.h"
#include "sr.h"
#include "ud.h"
#include "wr_opcode.h"

/*
 * Put `len` payload bytes of `w` from `off` into packet `o`; -EACCES on a bad
 * lkey. Bytes that lie in one registered region are left for
 * ur_pkt_finish() to copy while it computes the ICRC; others (inline data,
 * a packet spanning SGEs) are copied now.
 */
static int wqe_gather(struct ur_qp *qp, const struct ur_send_wqe *w, uint32_t off,
		      struct ur_pkt_out *o, uint32_t len)
{
	const struct ur_sg_list sg = {&qp->dev->mrs, qp->pd, w->sge, w->num_sge};

	if (w->flags & UR_SEND_INLINE) {
		memcpy(ur_pkt_payload(o), (const uint8_t *)w->sge + off, len);
		return 0;
	}
	return ur_sg_gather(&sg, off, ur_pkt_payload(o), len, &o->payload_src) ? -EACCES : 0;
}

static uint8_t opcode_for(const struct ur_qp *qp, const struct ur_send_wqe *w, bool first,
			  bool last)
{
	static const uint8_t send[4][3] = {
		/* plain, imm, inv */
		[0] = {UR_OP_RC_SEND_MIDDLE, UR_OP_RC_SEND_MIDDLE, UR_OP_RC_SEND_MIDDLE},
		[UR_POS_FIRST] = {UR_OP_RC_SEND_FIRST, UR_OP_RC_SEND_FIRST, UR_OP_RC_SEND_FIRST},
		[UR_POS_LAST] = {UR_OP_RC_SEND_LAST, UR_OP_RC_SEND_LAST_IMM, UR_OP_RC_SEND_LAST_INV},
		[UR_POS_ONLY] = {UR_OP_RC_SEND_ONLY, UR_OP_RC_SEND_ONLY_IMM, UR_OP_RC_SEND_ONLY_INV},
	};
	static const uint8_t write[4][2] = {
		[0] = {UR_OP_RC_WRITE_MIDDLE, UR_OP_RC_WRITE_MIDDLE},
		[UR_POS_FIRST] = {UR_OP_RC_WRITE_FIRST, UR_OP_RC_WRITE_FIRST},
		[UR_POS_LAST] = {UR_OP_RC_WRITE_LAST, UR_OP_RC_WRITE_LAST_IMM},
		[UR_POS_ONLY] = {UR_OP_RC_WRITE_ONLY, UR_OP_RC_WRITE_ONLY_IMM},
	};
	unsigned pos = (first ? UR_POS_FIRST : 0) | (last ? UR_POS_LAST : 0);
	uint8_t op;

	/* a datagram is always one SEND Only packet (table 38) */
	if (!qp->svc->connected)
		return w->opcode == UR_WR_SEND_WITH_IMM ? UR_OP_UD_SEND_ONLY_IMM : UR_OP_UD_SEND_ONLY;

	switch (w->opcode) {
	case UR_WR_SEND:
		op = send[pos][0];
		break;
	case UR_WR_SEND_WITH_IMM:
		op = send[pos][1];
		break;
	case UR_WR_SEND_WITH_INV:
		op = send[pos][2];
		break;
	case UR_WR_RDMA_WRITE:
		op = write[pos][0];
		break;
	case UR_WR_RDMA_WRITE_WITH_IMM:
		op = write[pos][1];
		break;
	case UR_WR_RDMA_READ:
		op = UR_OP_RC_READ_REQUEST;
		break;
	case UR_WR_ATOMIC_CMP_AND_SWP:
		op = UR_OP_RC_COMPARE_SWAP;
		break;
	default:
		op = UR_OP_RC_FETCH_ADD;
		break;
	}
	/* UC and XRC opcodes are the RC ones in their own range (table 38). */
	return (uint8_t)(op | qp->svc->transport);
}

bool ur_req_has_work(struct ur_qp *qp)
{
	struct ur_requester *rq = &qp->req;
	enum ur_qp_state st = qp_state(qp);

	if (st != UR_QPS_RTS && st != UR_QPS_SQD)
		return false;
	if (qp->rtx->retx_pending(qp) && !rq->rnr_wait)
		return true;
	if (rq->rnr_wait || rq->wqe == sq_prod(qp))
		return false;
	if (st == UR_QPS_SQD && sq_wqe(qp, rq->wqe)->state == UR_WQE_POSTED)
		return false; /* draining: finish what started, start nothing new */
	if (qp->svc->acknowledged &&
	    ur_psn_diff(rq->psn, rq->una) >= (int32_t)qp->dev->cfg.max_inflight)
		return false;
	if (qp->rtx->window_full(qp))
		return false;
	/* nor beyond this QP's share of its peer's receive ring */
	return ur_dev_room(qp->dev, qp);
}

static void arm_retx(struct ur_qp *qp)
{
	if (qp->timeout_ns && !ur_timer_armed(&qp->req.retx))
		ur_timer_arm(&qp->dev->timers, &qp->req.retx, qp->req.progress_ns + qp->timeout_ns);
}

/* Complete an unacknowledged-transport WQE (UC, UD) as soon as it is sent. */
static void complete_unreliable(struct ur_qp *qp, struct ur_send_wqe *w)
{
	w->state = UR_WQE_DONE;
	w->status = UR_WC_SUCCESS;
	ur_sq_retire_done(qp);
}

/*
 * A bind or local invalidation runs when the send queue reaches it, in
 * order with the requests around it (IBTA 10.6.7.2; a fence waits for
 * earlier READs and atomics as for any WQE). It takes no PSN, and a
 * rewind never runs it again.
 */
static void run_local(struct ur_qp *qp, struct ur_send_wqe *w)
{
	struct ur_mr_table *t = &qp->dev->mrs;
	const char *why;

	w->first_psn = qp->req.psn;
	w->npkts = 0;
	qp->req.wqe++;
	if (w->opcode == UR_WR_BIND_MW) {
		const struct ur_mw_bind b = {
		    .mw_key = w->imm,
		    .new_key = w->rkey,
		    .mr_lkey = w->bind_lkey,
		    .access = w->bind_access,
		    .addr = w->remote_addr,
		    .length = w->bind_length,
		};

		why = ur_mw_bind(t, qp->pd, qp->qpn, &b);
		ur_count(qp->dev, why ? UR_CTR_mw_bind_errors : UR_CTR_mw_binds);
	} else {
		why = ur_mw_check_invalidate(t, w->imm, qp->pd, qp->qpn, false);
		if (!why) {
			ur_mw_invalidate(t, w->imm);
			ur_count(qp->dev, UR_CTR_mw_invalidations);
		}
	}
	if (why) {
		w->state = UR_WQE_ACTIVE;
		ur_qp_log_error(qp, "%s of R_Key %#x refused: %s", ur_wr_opcode_name(w->opcode),
				w->imm, why);
		ur_comp_wqe_error(qp, w,
				  w->opcode == UR_WR_BIND_MW ? UR_WC_MW_BIND_ERR : UR_WC_LOC_QP_OP_ERR);
		return;
	}
	w->state = UR_WQE_DONE;
	w->status = UR_WC_SUCCESS;
	ur_sq_retire_done(qp);
}

/*
 * Selective repeat answers a READ or atomic while an older READ still
 * waits for responses asked again, and rd_out drops for it. The responder
 * keeps only the last max_dest_rd_atomic of them, so the older one must
 * stay among them: count every READ and atomic from the oldest WQE not yet
 * retired, answered or not (go-back-N never answers out of order: 0).
 */
static uint32_t rd_span(struct ur_qp *qp)
{
	uint32_t n = 0;

	if (!qp->rtx->reread)
		return 0;
	for (uint32_t idx = qp->req.comp; idx != qp->req.wqe; idx++) {
		const struct ur_send_wqe *w = sq_wqe(qp, idx);

		if (w->state != UR_WQE_POSTED && wqe_is_rd_atomic(w))
			n++;
	}
	return n;
}

/* Start a WQE: returns 0 to go on, 1 when it must wait, -1 when it failed or needs no packet. */
static int start_wqe(struct ur_qp *qp, struct ur_send_wqe *w)
{
	struct ur_requester *rq = &qp->req;

	/* an atomic's local buffer is one 8-byte word (10.7.3.3) */
	if (!ur_wr_allowed(w->opcode, qp->type) ||
	    (ur_wr_has(w->opcode, UR_WRF_ATOMIC) && w->length != 8)) {
		w->state = UR_WQE_ACTIVE;
		ur_qp_log_error(qp, "WQE opcode %u not valid for this QP", w->opcode);
		ur_comp_wqe_error(qp, w, UR_WC_LOC_QP_OP_ERR);
		return -1;
	}
	if (wqe_is_rd_atomic(w)) {
		uint32_t max = qp->attr.max_rd_atomic ? qp->attr.max_rd_atomic : 1;

		if (rq->rd_out >= max || rd_span(qp) >= max)
			return 1;
		rq->rd_out++;
	} else if ((w->flags & UR_SEND_FENCE) && rq->rd_out) {
		return 1; /* fence: wait for earlier READs and atomics (10.8.3.3) */
	}
	if (ur_wr_has(w->opcode, UR_WRF_LOCAL)) {
		run_local(qp, w);
		return -1;
	}
	if (!qp->svc->connected && w->length > qp->mtu) {
		/* C10-93.1.1: a UD message longer than the MTU emits no packet and
		 * raises no error; it completes as if sent (as Soft-RoCE does) */
		ur_count(qp->dev, UR_CTR_ud_send_too_long);
		ur_qp_log_error(qp, "UD send wr_id %#llx of %u bytes exceeds the MTU (%u): not sent",
				(unsigned long long)w->wr_id, w->length, qp->mtu);
		rq->wqe++;
		complete_unreliable(qp, w);
		return -1;
	}
	w->state = UR_WQE_ACTIVE;
	ur_ack_hold_answered(qp);
	w->first_psn = rq->psn;
	w->npkts = wqe_is_rd_atomic(w) && w->opcode != UR_WR_RDMA_READ
			   ? 1
			   : ur_npkts(w->length, qp->mtu);
	w->resp_psn = rq->psn;
	w->resp_bytes = 0;
	/*
	 * The whole message is SR or not: the switch happens between messages.
	 * A message restarted by a go-back-N rewind keeps the framing it first
	 * left with: the responder may hold part of it already, in that mode.
	 */
	if (!w->started) {
		w->started = 1;
		w->sr = qp->rtx->selective;
	}
	/* messages that consume a receive WQE at the responder are numbered by rseq */
	w->rseq = rq->rseq_next;
	if (ur_wr_has(w->opcode, UR_WRF_RECV))
		rq->rseq_next++;
	rq->off = 0;
	return 0;
}

/*
 * Build and hand over the packet of `w` with PSN `psn` at byte `off` of the
 * message; `*consumed` returns how many PSNs it takes (a READ request takes
 * one per response) and `*last` whether it ends the message. Used for new
 * packets, go-back-N resends and selective retransmissions alike.
 */
static int build_packet(struct ur_qp *qp, struct ur_send_wqe *w, uint32_t psn, uint32_t off,
			bool resend, uint32_t *consumed, bool *last_out)
{
	struct ur_dev *dev = qp->dev;
	struct ur_requester *rq = &qp->req;
	uint32_t len = 0, ext = 0, frame_len;
	bool first = off == 0, last = true;
	const struct ur_opcode_info *op;
	struct ur_pkt_out o;
	uint8_t opcode;
	struct ur_bth *bth;
	int err;

	*consumed = 1;
	if (w->opcode == UR_WR_RDMA_READ) {
		/* a retried READ asks only for what is still missing (9.7.4.1.4) */
		*consumed = ur_psn_diff(ur_psn_add(w->first_psn, w->npkts), psn);
		first = true;
	} else if (!wqe_is_rd_atomic(w)) {
		len = UR_MIN(qp->mtu, w->length - off);
		last = off + len == w->length;
		if (w->sr)
			ext = sizeof(struct ur_sreth);
	}
	opcode = opcode_for(qp, w, first, last);
	op = ur_opcode_get(opcode);
	if (!qp->svc->connected)
		ur_ud_prepare(qp, w);
	err = ur_pkt_begin(qp, &o, opcode, psn, ext);
	if (err)
		return err;
	bth = (struct ur_bth *)o.bth;
	if (op->hdrs & UR_HDR_DETH) {
		ur_bth_set_dqpn(bth, w->ud_qpn);
		ur_ud_fill_deth(qp, w, (struct ur_deth *)ur_pkt_hdr(&o, op->off_deth));
	}

	if (op->hdrs & UR_HDR_XRCETH)
		ur_xrceth_set_srqn((struct ur_xrceth *)ur_pkt_hdr(&o, op->off_xrceth), w->xrc_srqn);
	if (op->hdrs & UR_HDR_RETH) {
		struct ur_reth *reth = (struct ur_reth *)ur_pkt_hdr(&o, op->off_reth);

		ur_reth_set_va(reth, w->remote_addr + off);
		ur_reth_set_rkey(reth, w->rkey);
		ur_reth_set_dmalen(reth, w->length - off);
	}
	if (op->hdrs & UR_HDR_ATMETH) {
		struct ur_atmeth *a = (struct ur_atmeth *)ur_pkt_hdr(&o, op->off_atmeth);

		ur_atmeth_set_va(a, w->remote_addr);
		ur_atmeth_set_rkey(a, w->rkey);
		ur_atmeth_set_swap_add(a, w->opcode == UR_WR_ATOMIC_CMP_AND_SWP ? w->swap
										: w->compare_add);
		ur_atmeth_set_compare(a, w->opcode == UR_WR_ATOMIC_CMP_AND_SWP ? w->compare_add
									       : 0);
	}
	if (op->hdrs & UR_HDR_IMMDT)
		ur_immdt_set_raw((struct ur_immdt *)ur_pkt_hdr(&o, op->off_immdt), w->imm);
	if (op->hdrs & UR_HDR_IETH)
		ur_ieth_set_rkey((struct ur_ieth *)ur_pkt_hdr(&o, op->off_ieth), w->imm);
	if (ext) {
		/* selective repeat: enough for the responder to place it on arrival */
		struct ur_sreth *e = (struct ur_sreth *)ur_pkt_ext(&o);

		ur_sreth_set_rseq(e, ur_wr_has(w->opcode, UR_WRF_RECV) ? w->rseq : 0);
		ur_sreth_set_offset(e, off);
		if (op->kind == UR_KIND_WRITE) {
			ur_sreth_set_va(e, w->remote_addr);
			ur_sreth_set_rkey(e, w->rkey);
		}
	}
	if (len && wqe_gather(qp, w, off, &o, len)) {
		ur_pkt_abort(qp, &o);
		ur_qp_log_error(qp, "local protection error: lkey of WQE wr_id %#llx",
				(unsigned long long)w->wr_id);
		ur_comp_wqe_error(qp, w, UR_WC_LOC_PROT_ERR);
		return -EACCES;
	}

	if (last && ur_wr_has(w->opcode, UR_WRF_RECV))
		ur_bth_set_se(bth, w->flags & UR_SEND_SOLICITED);
	if (qp->svc->acknowledged) {
		/* a paced QP also asks at least every eighth of its ACK timeout, and
		 * on every packet when the next may be that far off, so that a slow
		 * rate never looks like a lost packet */
		bool ackreq = last || resend || ++rq->noack_pkts >= dev->cfg.ack_req_every ||
			      (uint32_t)ur_psn_diff(ur_psn_add(psn, *consumed), rq->una) >=
				      dev->cfg.max_inflight ||
			      (ur_unlikely(qp->cc.rp.limited) &&
			       (dev->now - rq->ackreq_ns >= qp->timeout_ns / 8 ||
				ur_cc_slow(qp, qp->timeout_ns / 8)));
		if (ackreq) {
			ur_bth_set_ackreq(bth, true);
			rq->noack_pkts = 0;
			rq->ackreq_ns = dev->now;
		}
	}
	/* ECN-capable (data_ecn) with the DSCP of the path's traffic class, so a
	 * switch can mark it instead of dropping it */
	frame_len = ur_pkt_finish(qp, &o, (ur_qp_tx_av(qp)->path.tclass & ~UR_ECN_MASK) | dev->cfg.data_ecn,
				  len);
	ur_cc_data_sent(qp, frame_len, dev->now);
	if (ur_psn_lt(psn, rq->max_psn))
		ur_count(dev, UR_CTR_retransmitted_packets);
	*last_out = last;
	return 0;
}

/* Send the next packet of the WQE in transmission, and move the requester on. */
static int send_packet(struct ur_qp *qp, struct ur_send_wqe *w, uint64_t now)
{
	struct ur_requester *rq = &qp->req;
	uint32_t psn = rq->psn, consumed;
	bool last, first = !ur_psn_lt(psn, rq->max_psn); /* not sent before a rewind */
	int err;

	err = build_packet(qp, w, psn, rq->off, false, &consumed, &last);
	if (err)
		return err;
	if (qp->svc->acknowledged && rq->psn == rq->una)
		rq->progress_ns = now; /* the ACK timeout runs from the first unacknowledged packet */
	rq->psn = ur_psn_add(psn, consumed);
	if (ur_psn_gt(rq->psn, rq->max_psn))
		rq->max_psn = rq->psn;
	rq->off += wqe_is_rd_atomic(w) ? 0 : UR_MIN(qp->mtu, w->length - rq->off);
	if (last) {
		w->state = UR_WQE_SENT;
		rq->wqe++;
		rq->off = 0;
		if (!qp->svc->acknowledged) {
			/* nothing to wait for: the SQ is drained once a message is out */
			rq->una = rq->psn;
			complete_unreliable(qp, w);
		}
	}
	if (qp->svc->acknowledged) {
		arm_retx(qp);
		qp->rtx->sent(qp, w, psn, consumed, first ? UR_SR_TX_FIRST : UR_SR_TX_AGAIN, now);
	}
	return 0;
}

/* The started WQE whose PSNs include `psn`, or NULL. */
static struct ur_send_wqe *wqe_of_psn(struct ur_qp *qp, uint32_t psn)
{
	uint32_t prod = sq_prod(qp);

	for (uint32_t idx = qp->req.comp; idx != prod; idx++) {
		struct ur_send_wqe *w = sq_wqe(qp, idx);

		if (w->state == UR_WQE_POSTED)
			return NULL;
		if (w->state != UR_WQE_DONE && ur_psn_lt(psn, ur_psn_add(w->first_psn, w->npkts)))
			return ur_psn_ge(psn, w->first_psn) ? w : NULL;
	}
	return NULL;
}

bool ur_req_psn_is_rd_atomic(struct ur_qp *qp, uint32_t psn)
{
	struct ur_send_wqe *w = wqe_of_psn(qp, psn);

	return w && wqe_is_rd_atomic(w);
}

bool ur_req_psn_is_gbn(struct ur_qp *qp, uint32_t psn)
{
	struct ur_send_wqe *w = wqe_of_psn(qp, psn);

	return w && !w->sr;
}

/*
 * Selective repeat: resend one queued PSN. Returns 1 when a packet went, 0
 * when none did (nothing queued, or a READ/atomic was rewound instead), or
 * a negative errno.
 */
static int send_retransmission(struct ur_qp *qp, uint64_t now)
{
	struct ur_send_wqe *w;
	uint32_t psn, consumed;
	bool last;
	int err;

	if (!ur_sr_next_retx(qp, &psn))
		return 0;
	w = wqe_of_psn(qp, psn);
	if (!w)
		return 0;
	if (w->opcode == UR_WR_RDMA_READ && w->sr) {
		/* a READ request lost: ask for that READ alone, not what follows */
		ur_req_read_missing(qp, w->resp_psn, false, now);
		return 0;
	}
	if (wqe_is_rd_atomic(w)) {
		/* atomics are not resent selectively: ask again from there */
		ur_req_rewind(qp, psn);
		return 0;
	}
	err = build_packet(qp, w, psn, (uint32_t)ur_psn_diff(psn, w->first_psn) * qp->mtu, true,
			   &consumed, &last);
	if (err)
		return err;
	ur_sr_sent(qp, w, psn, consumed, UR_SR_TX_SELECTIVE, now);
	return 1;
}

/*
 * Selective repeat: READ responses up to `high` were sent (a later response
 * or an ACK past them came) but some did not arrive. On a path that
 * reorders they may only be `late`: wait RACK's reordering window before
 * asking again (not when a timeout or a lost request says they are lost).
 * Then ask for each READ still missing a response at or below `high` alone,
 * from that response on (9.7.4.1.4), as IRN does: the WRITEs, SENDs and
 * atomics after it stay where the responder's ACKs and SACKs put them,
 * where a go-back-N rewind would resend them all.
 */
bool ur_req_read_missing(struct ur_qp *qp, uint32_t high, bool late, uint64_t now)
{
	struct ur_requester *rq = &qp->req;
	bool fresh = rq->reread == UR_REREAD_NONE;
	uint64_t wait_ns = late ? ur_sr_read_reo_wnd(qp) : 0;

	if (fresh) {
		ur_count(qp->dev, UR_CTR_implied_nak_seq_err);
		rq->reread = UR_REREAD_WAIT;
		rq->reread_high = high;
		rq->reread_at = UR_MAX(now + wait_ns, rq->reread_quiet);
	} else if (ur_psn_gt(high, rq->reread_high)) {
		rq->reread_high = high;
	}
	if (!wait_ns)
		rq->reread_at = now; /* known lost (a timeout, a lost request): at once */
	ur_dev_schedule(qp->dev, qp);
	return fresh;
}

/* Ask again for the READs missing responses once the wait is over: how many requests left. */
static int send_reread(struct ur_qp *qp, uint64_t now, unsigned *budget)
{
	struct ur_requester *rq = &qp->req;
	uint32_t prod = sq_prod(qp);
	int err;

	if (now < rq->reread_at || qp->next_tx_ns > now) {
		uint64_t at = UR_MAX(rq->reread_at, qp->next_tx_ns);

		if (!ur_timer_armed(&qp->pace) || qp->pace.expires > at)
			ur_timer_arm(&qp->dev->timers, &qp->pace, at);
		return 0;
	}
	/* (at most max_rd_atomic small requests: the budget may go to 0 but
	 * never stops a round halfway, which would ask some twice) */
	for (uint32_t idx = rq->comp; idx != prod; idx++) {
		struct ur_send_wqe *w = sq_wqe(qp, idx);
		uint32_t psn = w->resp_psn, consumed;
		bool last;

		if (w->state == UR_WQE_POSTED)
			break;
		if (w->state != UR_WQE_SENT || w->opcode != UR_WR_RDMA_READ || !w->sr)
			continue;
		if (ur_psn_gt(psn, rq->reread_high))
			break; /* (READs are in PSN order) */
		if (rq->reread_midway && ur_psn_lt(w->first_psn, rq->reread_from))
			continue; /* asked in this round already */
		err = build_packet(qp, w, psn, (uint32_t)ur_psn_diff(psn, w->first_psn) * qp->mtu,
				   true, &consumed, &last);
		if (err)
			return err;
		rq->reread_midway = true;
		rq->reread_from = ur_psn_add(w->first_psn, w->npkts);
		if (*budget)
			(*budget)--;
		ur_count(qp->dev, UR_CTR_sr_read_reasked);
		/* PSNs an ACK went past are no longer tracked (their slots may
		 * serve later PSNs already), but the RTO still watches the READ:
		 * the IBTA timeout alone took 67 ms for each lost re-ask, most
		 * of a 5% soak's timeouts (ur_req_sr_rto_timer) */
		if (ur_psn_ge(psn, rq->una))
			ur_sr_sent(qp, w, psn, consumed, UR_SR_TX_SELECTIVE, now);
		else
			ur_sr_rto_watch(qp, now);
	}
	rq->reread = UR_REREAD_NONE;
	rq->reread_midway = false;
	/* what was asked comes back a round trip later at best: a response
	 * still on its way meanwhile is no new loss */
	rq->reread_quiet = now + 2 * ur_sr_srtt_ns(qp);
	arm_retx(qp);
	return 0;
}

struct ur_send_wqe *ur_req_sr_read_waiting(struct ur_qp *qp)
{
	uint32_t prod = sq_prod(qp);

	if (!qp->rtx->reread)
		return NULL;
	for (uint32_t idx = qp->req.comp; idx != prod; idx++) {
		struct ur_send_wqe *w = sq_wqe(qp, idx);

		if (w->state == UR_WQE_POSTED)
			return NULL;
		if (w->state == UR_WQE_DONE || !wqe_is_rd_atomic(w))
			continue;
		return w->state == UR_WQE_SENT ? w : NULL;
	}
	return NULL;
}

/*
 * Whether a held ACK goes ahead of the next packet of `w`: its last, when
 * `w` completes at the peer. The peer's application waits on its CQ for
 * such an answer, and a NIC that ACKs at once shows it the request complete
 * first (ib_send_lat -e, on one completion channel, polls its send CQ once
 * on whichever CQ's event came first). An answer the peer watches for in
 * memory (a WRITE) keeps the ACK behind it (ur_dev_tx).
 */
static bool ack_goes_ahead(const struct ur_qp *qp, const struct ur_send_wqe *w)
{
	return ur_wr_has(w->opcode, UR_WRF_RECV) && w->length - qp->req.off <= qp->mtu;
}

int ur_req_emit(struct ur_qp *qp, uint64_t now, unsigned *budget)
{
	struct ur_requester *rq = &qp->req;

	if (rq->reread == UR_REREAD_WAIT && !rq->rnr_wait &&
	    (qp_state(qp) == UR_QPS_RTS || qp_state(qp) == UR_QPS_SQD)) {
		int err = send_reread(qp, now, budget);

		if (err == -ENOBUFS)
			return err;
	}
	while (*budget && qp->rtx->retx_pending(qp) && !rq->rnr_wait &&
	       (qp_state(qp) == UR_QPS_RTS || qp_state(qp) == UR_QPS_SQD)) {
		int err;

		if (qp->next_tx_ns > now) {
			ur_timer_arm(&qp->dev->timers, &qp->pace, qp->next_tx_ns);
			return 0;
		}
		err = send_retransmission(qp, now);
		if (err == -ENOBUFS)
			return err;
		if (err > 0)
			(*budget)--; /* only a packet that left uses the budget */
	}
	while (*budget) {
		struct ur_send_wqe *w;
		int err;

		if (!ur_req_has_work(qp))
			return 0;
		w = sq_wqe(qp, rq->wqe);
		if (w->state == UR_WQE_DONE) {
			/* done before a rewind: a bind or invalidation (no PSN), or a
			 * READ/atomic already answered, which keeps its PSNs */
			if (!ur_wr_has(w->opcode, UR_WRF_LOCAL)) {
				rq->psn = ur_psn_add(w->first_psn, w->npkts);
				rq->off = 0;
			}
			rq->wqe++;
			ur_comp_una_past_done(qp, now);
			continue;
		}
		if (w->state == UR_WQE_POSTED) {
			err = start_wqe(qp, w);
			if (err > 0)
				return 0;
			if (err < 0)
				continue;
		}
		if (qp->next_tx_ns > now) {
			ur_timer_arm(&qp->dev->timers, &qp->pace, qp->next_tx_ns);
			return 0;
		}
		if (ack_goes_ahead(qp, w)) {
			err = ur_ack_hold_send_ahead(qp);
			if (err < 0)
				return err;
			if (err > 0 && !--*budget)
				break;
		}
		err = send_packet(qp, w, now);
		if (err == -ENOBUFS)
			return err;
		if (err)
			continue;
		(*budget)--;
	}
	return ur_req_has_work(qp);
}

/*
 * Go back N (9.7.6.1.3): resend everything from `psn` on. PSNs are a
 * function of the WQE sequence, so the resent packets carry the same PSNs.
 */
void ur_req_rewind(struct ur_qp *qp, uint32_t psn)
{
	struct ur_requester *rq = &qp->req;
	uint32_t idx, end = rq->wqe;
	struct ur_send_wqe *w = NULL;

	if (!ur_psn_lt(psn, rq->psn))
		return; /* nothing sent at or after psn */
	if (end != sq_prod(qp) && sq_wqe(qp, end)->state != UR_WQE_POSTED)
		end++; /* the WQE in transmission counts too */
	for (idx = rq->comp; idx != end; idx++) {
		w = sq_wqe(qp, idx);
		if (w->state != UR_WQE_DONE &&
		    ur_psn_lt(psn, ur_psn_add(w->first_psn, w->npkts)))
			break;
	}
	if (idx == end)
		return;
	/* later WQEs start over: they are sent again with the same PSNs */
	for (uint32_t j = idx + 1; j != end; j++) {
		struct ur_send_wqe *later = sq_wqe(qp, j);

		/* done once, for good: a bind or invalidation, or (selective
		 * repeat) a READ or atomic answered while an older READ waited */
		if (later->state == UR_WQE_DONE)
			continue;
		if (later->state != UR_WQE_POSTED && wqe_is_rd_atomic(later))
			rq->rd_out--;
		later->state = UR_WQE_POSTED;
	}
	w->state = UR_WQE_ACTIVE;
	rq->reread_midway = false; /* (a READ this sends again in full is not SENT: not asked) */
	rq->rseq_next = w->rseq + (ur_wr_has(w->opcode, UR_WRF_RECV) ? 1 : 0);
	/* everything from here on goes again in full: no SACK state survives */
	qp->rtx->forget(qp, ur_psn_diff(psn, w->first_psn) >= 0 ? psn : w->first_psn, rq->psn);
	rq->wqe = idx;
	rq->psn = ur_psn_diff(psn, w->first_psn) >= 0 ? psn : w->first_psn;
	rq->off = (uint32_t)ur_psn_diff(rq->psn, w->first_psn) * qp->mtu;
	/* A READ/atomic asked again may sit before PSNs the responder already
	 * acknowledged: nothing from here on counts as acknowledged any more. */
	if (ur_psn_lt(rq->psn, rq->una))
		rq->una = rq->psn; /* (the SR state of [psn, old una) was forgotten above) */
	if (wqe_is_rd_atomic(w)) {
		rq->off = w->opcode == UR_WR_RDMA_READ ? rq->off : 0;
		w->resp_psn = rq->psn;
		w->resp_bytes = rq->off;
	}
	rq->noack_pkts = 0;
	ur_dev_schedule(qp->dev, qp);
}

/*
 * What a timeout sends again, the IBTA ACK timeout's and selective repeat's
 * alike: not what the responder has; a READ (rd: one still missing
 * responses, ur_req_sr_read_waiting) is asked for again alone, even when
 * ACKs went past it, atomics from there on, as in go-back-N.
 */
static void resend_after_timeout(struct ur_qp *qp, struct ur_send_wqe *rd, uint64_t now)
{
	struct ur_requester *rq = &qp->req;

	if (rd && rd->opcode != UR_WR_RDMA_READ && ur_psn_lt(rd->first_psn, rq->una)) {
		/* an atomic that ACKs went past (behind a READ asked again) */
		ur_req_rewind(qp, rd->first_psn);
	} else if (rd && rd->opcode == UR_WR_RDMA_READ && rd->sr &&
		   ur_psn_le(rd->resp_psn, rq->una)) {
		ur_req_read_missing(qp, ur_psn_add(rq->psn, UR_PSN_MASK), false, now);
		if (ur_psn_lt(rq->una, rq->psn) && !ur_req_psn_is_rd_atomic(qp, rq->una) &&
		    !ur_req_psn_is_gbn(qp, rq->una))
			qp->rtx->resend_missing(qp);
	} else if (ur_req_psn_is_rd_atomic(qp, rq->una) || ur_req_psn_is_gbn(qp, rq->una) ||
		   !qp->rtx->resend_missing(qp)) {
		/* a READ or atomic, or a message that began before the
		 * agreement (go-back-N framing: its responder drops every
		 * packet after a hole, C9-112, and NAKs once; resending only
		 * the oldest PSN would recover one packet per timeout) */
		ur_req_rewind(qp, rq->una);
	}
}

/* Enough of the requester's state to tell a dead peer from a stuck QP. */
static void log_oldest(struct ur_qp *qp)
{
	const struct ur_requester *rq = &qp->req;
	const struct ur_send_wqe *w = sq_wqe(qp, rq->comp);

	if (rq->comp == sq_prod(qp)) {
		ur_dev_log(qp->dev, "qp %#x: next PSN %#x, every WQE complete", qp->qpn, rq->psn);
		return;
	}
	ur_dev_log(qp->dev, "qp %#x: next PSN %#x, oldest WQE opcode %u state %u PSNs %#x+%u, "
		   "response PSN %#x, %u READs/atomics out, implied NAK out %d",
		   qp->qpn, rq->psn, w->opcode, w->state, w->first_psn, w->npkts,
		   w->resp_psn, rq->rd_out, rq->implied_nak_out);
	qp->rtx->log_state(qp);
}

/*
 * A NIC's timer runs while its host stops; this one is read by a thread of
 * the host. A timer that ran this late means the host stopped this engine
 * (with an answerer at real-time priority, only the hypervisor taking the
 * vCPUs or the kernel without a preemption point does), and a peer on the
 * same host stopped with it: an 85 ms stall of both vCPUs, while 32 soak
 * programs ran, cost 15 QPs a retry and a resend with nothing lost. Had the
 * answer come, it would be in the receive ring, read before the timers.
 */
#define ACK_TIMER_STALL_NS 10000000ull

/* The local ACK timeout (9.7.6.1.2): retry from the oldest unacknowledged PSN. */
void ur_req_retx_timer(struct ur_qp *qp, uint64_t now)
{
	struct ur_requester *rq = &qp->req;
	enum ur_qp_state st = qp_state(qp);
	struct ur_send_wqe *rd;
	uint64_t deadline;

	if ((st != UR_QPS_RTS && st != UR_QPS_SQD) || rq->rnr_wait || !qp->timeout_ns)
		return;
	rd = ur_req_sr_read_waiting(qp);
	if (!ur_psn_lt(rq->una, rq->psn) && !rd)
		return; /* nothing outstanding: stay disarmed */
	deadline = rq->progress_ns + qp->timeout_ns;
	if (now < deadline) {
		ur_timer_arm(&qp->dev->timers, &rq->retx, deadline);
		return;
	}
	if (ur_comp_una_catch_up(qp, now)) {
		ur_timer_arm(&qp->dev->timers, &rq->retx, now + qp->timeout_ns);
		return;
	}
	/* a stalled host gets its peer a whole timeout more, once between two
	 * answers: a stall cannot put the error off for ever, and a peer that
	 * is gone is given up on at most one timeout later */
	if (now - deadline >= ACK_TIMER_STALL_NS && !rq->stall_restarted) {
		rq->stall_restarted = true;
		ur_count(qp->dev, UR_CTR_ack_timer_stalled);
		ur_dev_log(qp->dev, "qp %#x: ACK timer for PSN %#x ran %llu us late: restarted, no retry",
			   qp->qpn, rq->una, (unsigned long long)((now - deadline) / 1000));
		rq->progress_ns = now;
		ur_timer_arm(&qp->dev->timers, &rq->retx, now + qp->timeout_ns);
		return;
	}
	ur_count(qp->dev, UR_CTR_local_ack_timeout_err);
	if (!rq->retry_left) {
		struct ur_send_wqe *w = sq_wqe(qp, rq->comp);

		ur_count(qp->dev, UR_CTR_retry_exceeded);
		ur_qp_log_error(qp, "transport retry count exhausted: no ACK for PSN %#x after %u retries of %llu us",
				rq->una, qp->attr.retry_cnt,
				(unsigned long long)(qp->timeout_ns / 1000));
		log_oldest(qp);
		ur_comp_wqe_error(qp, w, UR_WC_RETRY_EXC_ERR);
		return;
	}
	rq->retry_left--;
	/* how late the timer ran tells a stalled host from a silent peer */
	ur_dev_log(qp->dev, "qp %#x: local ACK timeout at PSN %#x (next %#x, %u retries left%s, "
		   "fired %llu us late)",
		   qp->qpn, rq->una, rq->psn, rq->retry_left, qp->rtx->retry_note,
		   (unsigned long long)((now - deadline) / 1000));
	log_oldest(qp);
	rq->progress_ns = now;
	resend_after_timeout(qp, rd, now);
	ur_timer_arm(&qp->dev->timers, &rq->retx, now + qp->timeout_ns);
}

/*
 * IRN's retransmission timeout on an SR QP. No retry is consumed: the IBTA
 * ACK timeout above still runs and alone decides RETRY_EXC_ERR.
 */
void ur_req_sr_rto_timer(struct ur_qp *qp, uint64_t now)
{
	struct ur_requester *rq = &qp->req;
	struct ur_send_wqe *rd;
	uint32_t inflight;

	if (qp_state(qp) != UR_QPS_RTS && qp_state(qp) != UR_QPS_SQD)
		return;
	inflight = (uint32_t)UR_MAX(ur_psn_diff(rq->psn, rq->una), 0);
	rd = ur_req_sr_read_waiting(qp);
	if ((!inflight && !rd) || rq->rnr_wait)
		return;
	if (!ur_sr_rto_due(qp, now, inflight))
		return;
	if (ur_comp_una_catch_up(qp, now)) {
		ur_sr_rto_defer(qp, now, inflight);
		return;
	}
	/*
	 * What the IBTA timeout would resend, without using up a retry: a
	 * READ or atomic response lost at the tail waited 67 ms for it,
	 * and at 5% loss QPs spent half their time so. The RTO has learned
	 * how long this host's answers can take (sr.c), so asking again now
	 * rarely asks for what is on its way.
	 */
	ur_count(qp->dev, UR_CTR_sr_timeouts);
	/* what the RTO was and had learned: why it fired (UROCE_DEBUG=1) */
	ur_dev_log(qp->dev, "qp %#x: SR timeout at PSN %#x, %u in flight, %llu us since progress",
		   qp->qpn, rq->una, inflight,
		   (unsigned long long)((now - rq->progress_ns) / 1000));
	qp->rtx->log_state(qp);
	resend_after_timeout(qp, rd, now);
	ur_sr_rto_backoff(qp, now, inflight);
}

void ur_req_rnr_timer(struct ur_qp *qp, uint64_t now)
{
	qp->req.rnr_wait = false;
	qp->req.progress_ns = now;
	ur_dev_schedule(qp->dev, qp);
}
