/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the responder sends (IBTA 9.7.5.2): READ responses and atomic
 * acknowledgements, in PSN order, from the READ/atomic resources the
 * receive pipeline (responder.c) fills, and the pending ACK or NAK when it
 * is due (ack.c holds it, ack_out.c builds it).
 */
#include <string.h>

#include "ack.h"
#include "mw.h"
#include "packet_out.h"
#include "psn.h"
#include "requester.h"
#include "responder.h"
#include "rtx.h"
#include "sr.h"

/* A READ response waits for the pacer; the pace timer schedules the QP again. */
static bool paced(const struct ur_qp *qp)
{
	return qp->next_tx_ns > qp->dev->now;
}

/*
 * The answer a held ACK waits for is ready to leave, so it leaves in this
 * very transmit stage, and the ACK with it (ur_req_emit). A large WRITE
 * takes hundreds of microseconds to leave, and a pass that sends 64 frames
 * of 4 KiB may itself outlast the hold.
 */
static bool answer_ready(struct ur_qp *qp)
{
	return !paced(qp) && ur_req_has_work(qp);
}

/* Whether a pending ACK or NAK may leave now (see ur_resp_ack_message). */
static bool ack_due(struct ur_qp *qp)
{
	const struct ur_resp_ack *a = &qp->resp.ack;
	uint64_t now = qp->dev->now;

	if (!a->pending || !a->hold_until)
		return a->pending;
	return now >= a->hold_until && (now >= a->hold_limit || !answer_ready(qp));
}

/* Move the head to the oldest resource still answering (a replay may leave
 * finished ones behind it), or to the tail. */
void ur_resp_skip_finished(struct ur_responder *rs)
{
	while (rs->res_head != rs->res_tail && !rs->res[rs->res_head % rs->nres].pending)
		rs->res_head++;
}

/* Claim the next READ/atomic resource; NULL when the requester exceeded max_dest_rd_atomic. */
struct ur_resp_res *ur_resp_alloc_res(struct ur_qp *qp)
{
	struct ur_responder *rs = &qp->resp;
	struct ur_resp_res *res;

	if (!rs->nres)
		return NULL;
	res = &rs->res[rs->res_tail % rs->nres];
	if (res->pending) {
		/*
		 * The oldest resource is busy. If only a duplicate request made
		 * it so, the replay is stale: a requester that sends a new READ
		 * or atomic past max_dest_rd_atomic others has completed the
		 * oldest, so it had every response already. Otherwise the
		 * requester broke the limit.
		 */
		if (!res->replayed)
			return NULL;
		ur_count(qp->dev, UR_CTR_resp_stale_replays);
		res->pending = false;
	}
	memset(res, 0, sizeof(*res));
	ur_resp_skip_finished(rs); /* the oldest resource still answering, or this new one */
	rs->res_tail++;
	return res;
}

/*
 * Answer resource `i` again, before anything newer. Newer resources keep
 * their state: if the requester went back to `i` it asks for them again and
 * they restart then, but the duplicate may also be a stale copy that arrives
 * after the requester moved on, and dropping them would leave requests
 * unanswered until its timeout. An older resource still being answered keeps
 * its turn, since responses leave in PSN order.
 */
void ur_resp_replay_from(struct ur_qp *qp, uint32_t i)
{
	struct ur_responder *rs = &qp->resp;

	rs->res[i % rs->nres].pending = true;
	rs->res[i % rs->nres].replayed = true;
	if (!((int32_t)(rs->res_head - i) < 0 && rs->res[rs->res_head % rs->nres].pending))
		rs->res_head = i;
	ur_dev_schedule(qp->dev, qp);
}

/* The oldest READ or atomic still answering, if it may answer now. */
static struct ur_resp_res *res_ready(const struct ur_qp *qp)
{
	const struct ur_responder *rs = &qp->resp;
	struct ur_resp_res *res = rs->nres ? &rs->res[rs->res_head % rs->nres] : NULL;

	return res && res->pending && !rs->error ? res : NULL;
}

/*
 * Whether ur_resp_emit would send something now, by its own rules. Saying
 * yes to what it holds back (a paced READ response, and the ACKs queued
 * behind it) made ur_dev_tx put the QP straight back on the round robin
 * and spin on it forever.
 */
bool ur_resp_has_work(struct ur_qp *qp)
{
	const struct ur_resp_res *res = res_ready(qp);

	if (qp->cc.cnp_due || qp->rtx->ctrl_pending(qp))
		return true;
	if (res)
		return res->kind != UR_KIND_READ_REQ || !paced(qp);
	return ack_due(qp) || qp->rtx->sack_due(qp);
}

static int emit_read_response(struct ur_qp *qp, struct ur_resp_res *res)
{
	struct ur_responder *rs = &qp->resp;
	struct ur_dev *dev = qp->dev;
	uint32_t psn = res->cur_psn;
	uint32_t off = (uint32_t)ur_psn_diff(psn, res->req_psn) * qp->mtu;
	uint32_t len = UR_MIN(qp->mtu, res->length - off);
	bool first = psn == res->first_psn, last = psn == res->last_psn;
	static const uint8_t ops[4] = {
	    [0] = UR_OP_RC_READ_RESPONSE_MIDDLE,
	    [UR_POS_FIRST] = UR_OP_RC_READ_RESPONSE_FIRST,
	    [UR_POS_LAST] = UR_OP_RC_READ_RESPONSE_LAST,
	    [UR_POS_ONLY] = UR_OP_RC_READ_RESPONSE_ONLY,
	};
	/* in the QP's range: an XRC target's responses are XRC opcodes (A14.4) */
	uint8_t opcode =
	    ops[(first ? UR_POS_FIRST : 0) | (last ? UR_POS_LAST : 0)] | qp->svc->transport;
	const struct ur_opcode_info *op = ur_opcode_get(opcode);
	struct ur_pkt_out o;
	struct ur_mr *mr = NULL;
	int err;

	/* the region may have been deregistered since the request: check again */
	if (len && ur_rkey_check(&dev->mrs, res->rkey, qp->pd, qp->qpn, res->va + off, len,
				 UR_ACCESS_REMOTE_READ, &mr)) {
		ur_count(dev, UR_CTR_resp_remote_access_errors);
		if (ur_mw_key_named(&dev->mrs, res->rkey))
			ur_count(dev, UR_CTR_resp_mw_refused);
		res->pending = false;
		rs->error = true;
		ur_resp_schedule_ack(qp, UR_AETH_NAK | UR_NAK_REM_ACCESS_ERR, psn);
		return 0;
	}
	err = ur_pkt_begin(qp, &o, opcode, psn, 0);
	if (err)
		return err;
	if (last)
		rs->msn = (rs->msn + 1) & UR_PSN_MASK;
	if (op->hdrs & UR_HDR_AETH) {
		struct ur_aeth *aeth = (struct ur_aeth *)ur_pkt_hdr(&o, op->off_aeth);

		ur_aeth_set_syndrome(aeth, UR_AETH_ACK | UR_AETH_CREDIT_INVALID);
		ur_aeth_set_msn(aeth, rs->msn);
	}
	if (len)
		o.payload_src = ur_mr_ptr(mr, res->va + off);
	ur_cc_data_sent(qp,
			ur_pkt_finish(qp, &o,
				      (qp->attr.av.path.tclass & ~UR_ECN_MASK) | dev->cfg.data_ecn,
				      len),
			dev->now);
	res->cur_psn = ur_psn_add(psn, 1);
	if (last)
		res->pending = false;
	return 0;
}

static int emit_atomic_ack(struct ur_qp *qp, struct ur_resp_res *res)
{
	uint8_t opcode = UR_OP_RC_ATOMIC_ACKNOWLEDGE | qp->svc->transport;
	const struct ur_opcode_info *op = ur_opcode_get(opcode);
	struct ur_pkt_out o;
	int err;

	err = ur_pkt_begin(qp, &o, opcode, res->first_psn, 0);
	if (err)
		return err;
	ur_aeth_set_syndrome((struct ur_aeth *)ur_pkt_hdr(&o, op->off_aeth),
			     UR_AETH_ACK | UR_AETH_CREDIT_INVALID);
	ur_aeth_set_msn((struct ur_aeth *)ur_pkt_hdr(&o, op->off_aeth), qp->resp.msn);
	ur_atmack_set_orig((struct ur_atmack *)ur_pkt_hdr(&o, op->off_atmack), res->orig);
	ur_pkt_finish(qp, &o, qp->attr.av.path.tclass & ~UR_ECN_MASK, 0);
	res->pending = false;
	return 0;
}

/* Send what the responder owes, oldest first: READ responses and atomic ACKs, then the ACK/NAK. */
int ur_resp_emit(struct ur_qp *qp, unsigned *budget)
{
	struct ur_responder *rs = &qp->resp;
	int err;

	/*
	 * A hold runs from the transmit stage of the pass that received the
	 * request, not from the start of that pass: a pass that takes in 32
	 * frames of 4 KiB ran longer than a 50 us hold here, and the ACK then
	 * left alone, ahead of the answer it was waiting for.
	 */
	if (rs->ack.pending && rs->ack.hold_until == UR_TIME_NEVER)
		ur_ack_hold_start(qp);

	if (qp->rtx->ctrl_pending(qp)) {
		err = ur_sr_emit_ctrl(qp, budget);
		if (err)
			return err;
	}
	/* congestion notification first: it is worth most when it is early */
	if (qp->cc.cnp_due && *budget) {
		err = ur_cc_emit_cnp(qp);
		if (err)
			return err;
		(*budget)--;
	}
	while (*budget) {
		struct ur_resp_res *res = res_ready(qp);

		if (res) {
			if (res->kind == UR_KIND_READ_REQ) {
				if (paced(qp)) {
					ur_timer_arm(&qp->dev->timers, &qp->pace, qp->next_tx_ns);
					return 0;
				}
				err = emit_read_response(qp, res);
			} else {
				err = emit_atomic_ack(qp, res);
			}
			if (err)
				return err;
			if (!res->pending)
				ur_resp_skip_finished(rs);
		} else if (ack_due(qp) || qp->rtx->sack_due(qp)) {
			err = ur_ack_emit(qp);
			if (err)
				return err;
		} else {
			if (rs->ack.pending)
				ur_timer_arm(&qp->dev->timers, &rs->ack.hold,
					     qp->dev->now < rs->ack.hold_until
						 ? rs->ack.hold_until
						 : rs->ack.hold_limit);
			return 0;
		}
		(*budget)--;
	}
	return ur_resp_has_work(qp);
}
