/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The responder (IBTA 9.7.5 "responder side"): validates the PSN and the
 * opcode sequence of incoming requests, executes SENDs, RDMA WRITEs, READs
 * and atomics against registered memory, and owes the requester ACKs, NAKs,
 * READ responses and atomic acknowledgements, sent in PSN order.
 */
#include <string.h>

#include "psn.h"
#include "qp.h"
#include "sr.h"

static const uint8_t *pkt_hdr(const struct ur_pkt *pkt, unsigned off)
{
	return (const uint8_t *)pkt->bth + off;
}

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
	if (qp->sr)
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
void ur_resp_answered(struct ur_qp *qp)
{
	struct ur_resp_ack *a = &qp->resp.ack;

	if (a->asked_ns) {
		learn_answer_time(qp, qp->dev->now - a->asked_ns);
		a->asked_ns = 0;
	}
}

/* ur_resp_emit starts a hold's clock: the ACK waits for an answer from now. */
static void start_hold(struct ur_qp *qp)
{
	struct ur_resp_ack *a = &qp->resp.ack;
	uint64_t now = qp->dev->now;

	if (a->asked_ns) /* the last one got no answer */
		a->hold_ns = hold_within_bounds(qp, a->hold_ns / 2);
	a->asked_ns = now;
	a->hold_until = now + hold_within_bounds(qp, a->hold_ns);
	a->hold_limit = now + ack_hold_max_ns(qp);
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
	schedule_ack(qp, UR_AETH_ACK | UR_AETH_CREDIT_INVALID, psn, requester_busy(qp));
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

/*
 * A class C error (9.9.3.1.3): NAK the request, then enter the error state
 * once the NAK has left. The peer caused it, so on UC, which has no NAK,
 * the peer loses the message and nothing else.
 */
void ur_resp_class_c_error(struct ur_qp *qp, const struct ur_pkt *pkt, uint8_t nak,
			   const char *why)
{
	struct ur_responder *rs = &qp->resp;

	if (qp->type == UR_QPT_UC) {
		/* UC has no NAK and stays up: the message is dropped whole (class D1) */
		ur_count(qp->dev, UR_CTR_rx_drop_uc_message);
		ur_uc_drop_message(qp);
		return;
	}
	ur_qp_log_error(qp, "responder: %s at PSN %#x (%s): NAK %#x", why, pkt->psn,
			ur_opcode_name(pkt->opcode), nak);
	rs->error = true;
	ur_resp_schedule_ack(qp, UR_AETH_NAK | nak, pkt->psn);
}

/*
 * The receive WQE failed on our side (too small, a bad lkey) and was
 * completed in error: the QP cannot go on. RC tells the requester first.
 */
static void local_error(struct ur_qp *qp, const struct ur_pkt *pkt, uint8_t nak, const char *why)
{
	if (qp->type == UR_QPT_RC) {
		ur_resp_class_c_error(qp, pkt, nak, why);
		return;
	}
	ur_qp_log_error(qp, "responder: %s at PSN %#x (%s)", why, pkt->psn,
			ur_opcode_name(pkt->opcode));
	ur_qp_to_error(qp, true);
}

/* The go-back-N path keeps the open message's receive WQE in rs->rwqe. */
static bool take_rwqe(struct ur_qp *qp)
{
	struct ur_responder *rs = &qp->resp;

	/*
	 * Selective repeat may have taken this message's WQE from the queue
	 * already, for a later message that came early: a message that began
	 * before the agreement (go-back-N framing) still uses the next in order.
	 */
	if (qp->sr && rs->rq_taken != rs->rq_done)
		ur_sr_rwqe_taken(qp, rs->rq_done, rs->rwqe);
	else if (!ur_resp_take_rwqe(qp, rs->rwqe))
		return false;
	rs->have_rwqe = true;
	rs->msg_off = 0;
	return true;
}

static int rwqe_scatter(struct ur_qp *qp, const uint8_t *src, uint32_t len)
{
	return ur_resp_scatter(qp, qp->resp.rwqe, qp->resp.msg_off, src, len);
}

static void complete_recv(struct ur_qp *qp, enum ur_wc_status status, uint8_t opcode,
			  uint32_t byte_len, const struct ur_pkt *pkt)
{
	struct ur_responder *rs = &qp->resp;
	struct ur_cqe cqe = {
		.wr_id = rs->rwqe->wr_id,
		.status = status,
		.opcode = opcode,
		.byte_len = byte_len,
		.qp_num = qp->qpn,
		.src_qp = qp->attr.dest_qp_num,
	};

	if (pkt && (pkt->op->hdrs & UR_HDR_IMMDT)) {
		cqe.wc_flags |= UR_WC_WITH_IMM;
		cqe.imm = ur_immdt_raw((const struct ur_immdt *)pkt_hdr(pkt, pkt->op->off_immdt));
	}
	if (pkt && (pkt->op->hdrs & UR_HDR_IETH)) {
		cqe.wc_flags |= UR_WC_WITH_INV;
		cqe.imm = ur_ieth_rkey((const struct ur_ieth *)pkt_hdr(pkt, pkt->op->off_ieth));
	}
	if (pkt)
		cqe.solicited = ur_bth_se(pkt->bth);
	if (status != UR_WC_SUCCESS)
		ur_count(qp->dev, status == UR_WC_WR_FLUSH_ERR ? UR_CTR_resp_cqe_flush_error
							       : UR_CTR_resp_cqe_error);
	rs->have_rwqe = false;
	rs->rq_done++;
	ur_qp_post_cqe(qp, qp->rcq, &cqe);
}

/* RNR NAK (9.7.5.2.8): no receive WQE; the requester retries after the timer. */
void ur_resp_rnr_nak(struct ur_qp *qp)
{
	ur_count(qp->dev, UR_CTR_out_of_buffer);
	if (qp->type != UR_QPT_RC) {
		/* unacknowledged services drop the message instead (class D) */
		ur_count(qp->dev, UR_CTR_rx_drop_no_buffer);
		if (qp->type == UR_QPT_UC)
			ur_uc_drop_message(qp);
		return;
	}
	/* The requester will start again from this PSN after the RNR timer:
	 * what it sent behind it is dropped quietly, as after a sequence NAK
	 * (C9-112). A sequence NAK now would replace this one, and repeated
	 * sequence NAKs use up the transport retries, not the RNR ones.
	 *
	 * The NAK names the expected PSN, not the packet's: a NAK acknowledges
	 * every PSN before it (9.7.5.2.2), and under selective repeat the
	 * packet that found no receive WQE may have come early, past PSNs that
	 * never arrived. Naming it made the requester complete those and never
	 * send them again (an RNR NAK per early packet, each acknowledging one
	 * more lost PSN). In order, the two are the same PSN. */
	qp->resp.nak_sent = true;
	ur_resp_schedule_ack(qp, UR_AETH_RNR_NAK | (qp->attr.min_rnr_timer & UR_AETH_VALUE_MASK),
			     qp->resp.epsn);
}

static void request_done(struct ur_qp *qp, const struct ur_pkt *pkt, bool msg_end)
{
	struct ur_responder *rs = &qp->resp;

	rs->epsn = ur_psn_add(pkt->psn, 1);
	if (msg_end) {
		rs->msn = (rs->msn + 1) & UR_PSN_MASK;
		rs->in_msg = 0;
	}
	if (qp->type != UR_QPT_RC || !ur_bth_ackreq(pkt->bth))
		return;
	if (msg_end)
		ur_resp_ack_message(qp, pkt->psn);
	else
		ur_resp_schedule_ack(qp, UR_AETH_ACK | UR_AETH_CREDIT_INVALID, pkt->psn);
}

static void do_send(struct ur_qp *qp, const struct ur_pkt *pkt)
{
	struct ur_responder *rs = &qp->resp;
	unsigned pos = pkt->op->pos;

	if (pos & UR_POS_FIRST) {
		/* UC may still hold the WQE of a message it dropped: fill it again */
		if (!rs->have_rwqe && !take_rwqe(qp)) {
			ur_resp_rnr_nak(qp);
			return;
		}
		rs->msg_off = 0;
	}
	if (!(pos & UR_POS_LAST) ? pkt->payload_len != qp->mtu : pkt->payload_len > qp->mtu) {
		ur_resp_class_c_error(qp, pkt, UR_NAK_INVALID_REQ, "SEND payload does not match the MTU");
		return;
	}
	if (rs->msg_off + pkt->payload_len > rs->rwqe->length) {
		ur_count(qp->dev, UR_CTR_resp_local_length_error);
		if (qp->type == UR_QPT_UC) {
			/* class D: dropped, the WQE kept for the next message */
			ur_uc_drop_message(qp);
			return;
		}
		complete_recv(qp, UR_WC_LOC_LEN_ERR, UR_WC_RECV, rs->msg_off, NULL);
		local_error(qp, pkt, UR_NAK_INVALID_REQ, "SEND longer than the receive buffer");
		return;
	}
	if (pkt->op->hdrs & UR_HDR_IETH) {
		/*
		 * SEND with Invalidate may invalidate only a memory window or a
		 * fast-registered region (10.6.7.2); uroce has neither, and a
		 * region from Register Memory Region never goes away at a peer's
		 * word. Refuse before placing anything: the receive fails and the
		 * requester learns it with an invalid request NAK.
		 */
		ur_count(qp->dev, UR_CTR_resp_remote_access_errors);
		complete_recv(qp, UR_WC_REM_INV_REQ_ERR, UR_WC_RECV, rs->msg_off, NULL);
		ur_resp_class_c_error(qp, pkt, UR_NAK_INVALID_REQ,
				      "SEND with Invalidate names a key that cannot be invalidated");
		return;
	}
	if (rwqe_scatter(qp, pkt->payload, pkt->payload_len)) {
		complete_recv(qp, UR_WC_LOC_PROT_ERR, UR_WC_RECV, rs->msg_off, NULL);
		local_error(qp, pkt, UR_NAK_REM_OP_ERR, "receive WQE has a bad lkey");
		return;
	}
	rs->msg_off += pkt->payload_len;
	if (pos & UR_POS_LAST) {
		complete_recv(qp, UR_WC_SUCCESS, UR_WC_RECV, rs->msg_off, pkt);
	} else {
		rs->in_msg = UR_KIND_SEND;
	}
	request_done(qp, pkt, pos & UR_POS_LAST);
}

static bool remote_access_ok(struct ur_qp *qp, uint32_t need)
{
	return (qp->attr.qp_access_flags & need) == need;
}

static void do_write(struct ur_qp *qp, const struct ur_pkt *pkt)
{
	struct ur_responder *rs = &qp->resp;
	unsigned pos = pkt->op->pos;
	bool imm = pkt->op->hdrs & UR_HDR_IMMDT;
	struct ur_mr *mr;

	/* WRITE with immediate consumes a receive WQE when its last packet lands. */
	if ((pos & UR_POS_LAST) && imm && !rs->have_rwqe && !ur_resp_rwqe_available(qp)) {
		ur_resp_rnr_nak(qp);
		return;
	}
	if (pos & UR_POS_FIRST) {
		const struct ur_reth *reth = (const struct ur_reth *)pkt_hdr(pkt, pkt->op->off_reth);

		rs->wr_va = ur_reth_va(reth);
		rs->wr_rkey = ur_reth_rkey(reth);
		rs->wr_len = rs->wr_left = ur_reth_dmalen(reth);
		if (!remote_access_ok(qp, UR_ACCESS_REMOTE_WRITE)) {
			ur_count(qp->dev, UR_CTR_resp_remote_access_errors);
			ur_resp_class_c_error(qp, pkt, UR_NAK_REM_ACCESS_ERR, "QP does not allow remote write");
			return;
		}
	}
	/* 9.7.5.1.5: middles carry exactly one MTU; the last carries what the RETH still owes */
	if (!(pos & UR_POS_LAST) ? pkt->payload_len != qp->mtu || pkt->payload_len >= rs->wr_left
				 : pkt->payload_len != rs->wr_left || pkt->payload_len > qp->mtu) {
		ur_resp_class_c_error(qp, pkt, UR_NAK_INVALID_REQ, "WRITE payload does not match its length");
		return;
	}
	/* The key is checked on every packet: deregistration takes effect at once. */
	if (pkt->payload_len || (pos & UR_POS_FIRST && rs->wr_len)) {
		enum ur_mr_err e = ur_mr_check(&qp->dev->mrs, rs->wr_rkey, qp->pd, rs->wr_va,
					       (pos & UR_POS_FIRST) ? rs->wr_len : pkt->payload_len,
					       UR_ACCESS_REMOTE_WRITE, &mr);
		if (e) {
			ur_count(qp->dev, UR_CTR_resp_remote_access_errors);
			ur_resp_class_c_error(qp, pkt, UR_NAK_REM_ACCESS_ERR, "bad R_Key, bounds or access for WRITE");
			return;
		}
		memcpy(ur_mr_ptr(mr, rs->wr_va), pkt->payload, pkt->payload_len);
	}
	rs->wr_va += pkt->payload_len;
	rs->wr_left -= pkt->payload_len;
	ur_count(qp->dev, UR_CTR_rx_write_requests);
	if (pos & UR_POS_LAST) {
		if (imm) {
			if (!rs->have_rwqe)
				take_rwqe(qp);
			complete_recv(qp, UR_WC_SUCCESS, UR_WC_RECV_RDMA_WITH_IMM, rs->wr_len, pkt);
		}
	} else {
		rs->in_msg = UR_KIND_WRITE;
	}
	request_done(qp, pkt, pos & UR_POS_LAST);
}

/* Move the head to the oldest resource still answering (a replay may leave
 * finished ones behind it), or to the tail. */
static void skip_finished(struct ur_responder *rs)
{
	while (rs->res_head != rs->res_tail && !rs->res[rs->res_head % rs->nres].pending)
		rs->res_head++;
}

/* Claim the next READ/atomic resource; NULL when the requester exceeded max_dest_rd_atomic. */
static struct ur_resp_res *alloc_res(struct ur_qp *qp)
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
	skip_finished(rs); /* the oldest resource still answering, or this new one */
	rs->res_tail++;
	return res;
}

static void do_read(struct ur_qp *qp, const struct ur_pkt *pkt)
{
	struct ur_responder *rs = &qp->resp;
	const struct ur_reth *reth = (const struct ur_reth *)pkt_hdr(pkt, pkt->op->off_reth);
	uint64_t va = ur_reth_va(reth);
	uint32_t rkey = ur_reth_rkey(reth), len = ur_reth_dmalen(reth);
	struct ur_resp_res *res;
	struct ur_mr *mr;

	if (!remote_access_ok(qp, UR_ACCESS_REMOTE_READ)) {
		ur_count(qp->dev, UR_CTR_resp_remote_access_errors);
		ur_resp_class_c_error(qp, pkt, UR_NAK_REM_ACCESS_ERR, "QP does not allow remote read");
		return;
	}
	if (len && ur_mr_check(&qp->dev->mrs, rkey, qp->pd, va, len, UR_ACCESS_REMOTE_READ, &mr)) {
		ur_count(qp->dev, UR_CTR_resp_remote_access_errors);
		ur_resp_class_c_error(qp, pkt, UR_NAK_REM_ACCESS_ERR, "bad R_Key, bounds or access for READ");
		return;
	}
	if (len > (1u << 31)) {
		ur_resp_class_c_error(qp, pkt, UR_NAK_INVALID_REQ, "READ longer than 2^31");
		return;
	}
	res = alloc_res(qp);
	if (!res) {
		ur_resp_class_c_error(qp, pkt, UR_NAK_INVALID_REQ, "more READs/atomics than max_dest_rd_atomic");
		return;
	}
	res->kind = UR_KIND_READ_REQ;
	res->pending = true;
	res->first_psn = res->req_psn = res->cur_psn = pkt->psn;
	res->last_psn = ur_psn_add(pkt->psn, ur_npkts(len, qp->mtu) - 1);
	res->va = va;
	res->rkey = rkey;
	res->length = len;
	ur_count(qp->dev, UR_CTR_rx_read_requests);
	rs->epsn = ur_psn_add(res->last_psn, 1);
	/* the responses acknowledge everything before them */
	if (rs->ack.pending && (rs->ack.syndrome & UR_AETH_TYPE_MASK) == UR_AETH_ACK)
		rs->ack.pending = false;
	ur_dev_schedule(qp->dev, qp);
}

static void do_atomic(struct ur_qp *qp, const struct ur_pkt *pkt)
{
	struct ur_responder *rs = &qp->resp;
	const struct ur_atmeth *a = (const struct ur_atmeth *)pkt_hdr(pkt, pkt->op->off_atmeth);
	uint64_t va = ur_atmeth_va(a), *p, orig;
	struct ur_resp_res *res;
	struct ur_mr *mr;

	if (!remote_access_ok(qp, UR_ACCESS_REMOTE_ATOMIC)) {
		ur_count(qp->dev, UR_CTR_resp_remote_access_errors);
		ur_resp_class_c_error(qp, pkt, UR_NAK_REM_ACCESS_ERR, "QP does not allow remote atomics");
		return;
	}
	if (va & 7) {
		ur_resp_class_c_error(qp, pkt, UR_NAK_INVALID_REQ, "atomic address not 8-byte aligned");
		return;
	}
	if (ur_mr_check(&qp->dev->mrs, ur_atmeth_rkey(a), qp->pd, va, 8, UR_ACCESS_REMOTE_ATOMIC,
			&mr)) {
		ur_count(qp->dev, UR_CTR_resp_remote_access_errors);
		ur_resp_class_c_error(qp, pkt, UR_NAK_REM_ACCESS_ERR, "bad R_Key, bounds or access for atomic");
		return;
	}
	res = alloc_res(qp);
	if (!res) {
		ur_resp_class_c_error(qp, pkt, UR_NAK_INVALID_REQ, "more READs/atomics than max_dest_rd_atomic");
		return;
	}
	/* Atomic with respect to other uroce QPs and to the local CPU (10.7.3.3). */
	p = (uint64_t *)ur_mr_ptr(mr, va);
	if (pkt->opcode == UR_OP_RC_COMPARE_SWAP) {
		orig = ur_atmeth_compare(a);
		__atomic_compare_exchange_n(p, &orig, ur_atmeth_swap_add(a), false, __ATOMIC_SEQ_CST,
					    __ATOMIC_SEQ_CST);
	} else {
		orig = __atomic_fetch_add(p, ur_atmeth_swap_add(a), __ATOMIC_SEQ_CST);
	}
	res->kind = UR_KIND_ATOMIC;
	res->pending = true;
	res->first_psn = res->last_psn = res->cur_psn = res->req_psn = pkt->psn;
	res->orig = orig;
	ur_count(qp->dev, UR_CTR_rx_atomic_requests);
	rs->epsn = ur_psn_add(pkt->psn, 1);
	rs->msn = (rs->msn + 1) & UR_PSN_MASK;
	if (rs->ack.pending && (rs->ack.syndrome & UR_AETH_TYPE_MASK) == UR_AETH_ACK)
		rs->ack.pending = false;
	ur_dev_schedule(qp->dev, qp);
}

/*
 * Answer resource `i` again, before anything newer. Newer resources keep
 * their state: if the requester went back to `i` it asks for them again and
 * they restart then, but the duplicate may also be a stale copy that arrives
 * after the requester moved on, and dropping them would leave requests
 * unanswered until its timeout. An older resource still being answered keeps
 * its turn, since responses leave in PSN order.
 */
static void replay_from(struct ur_qp *qp, uint32_t i)
{
	struct ur_responder *rs = &qp->resp;

	rs->res[i % rs->nres].pending = true;
	rs->res[i % rs->nres].replayed = true;
	if (!((int32_t)(rs->res_head - i) < 0 && rs->res[rs->res_head % rs->nres].pending))
		rs->res_head = i;
	ur_dev_schedule(qp->dev, qp);
}

/* A request with a PSN already executed (9.7.5.1.1, C9-104..C9-107). */
static void do_duplicate(struct ur_qp *qp, const struct ur_pkt *pkt)
{
	struct ur_responder *rs = &qp->resp;
	uint32_t n = UR_MIN(rs->nres, rs->res_tail);

	ur_count(qp->dev, UR_CTR_duplicate_request);
	switch (pkt->op->kind) {
	case UR_KIND_READ_REQ: {
		const struct ur_reth *reth = (const struct ur_reth *)pkt_hdr(pkt, pkt->op->off_reth);

		for (uint32_t k = 1; k <= n; k++) {
			uint32_t i = rs->res_tail - k;
			struct ur_resp_res *res = &rs->res[i % rs->nres];

			if (res->kind != UR_KIND_READ_REQ || ur_psn_lt(pkt->psn, res->first_psn) ||
			    ur_psn_gt(pkt->psn, res->last_psn))
				continue;
			/* the retry must end where the original READ ended */
			if (ur_psn_add(pkt->psn, ur_npkts(ur_reth_dmalen(reth), qp->mtu) - 1) !=
			    res->last_psn)
				break;
			res->va = ur_reth_va(reth);
			res->length = ur_reth_dmalen(reth);
			res->rkey = ur_reth_rkey(reth);
			res->req_psn = res->cur_psn = pkt->psn;
			replay_from(qp, i);
			return;
		}
		ur_count(qp->dev, UR_CTR_rx_drop_out_of_window);
		ur_dev_log(qp->dev, "qp %#x: READ asked again at PSN %#x for %u bytes matches no READ kept",
			   qp->qpn, pkt->psn, ur_reth_dmalen(reth));
		return;
	}
	case UR_KIND_ATOMIC:
		for (uint32_t k = 1; k <= n; k++) {
			uint32_t i = rs->res_tail - k;
			struct ur_resp_res *res = &rs->res[i % rs->nres];

			if (res->kind == UR_KIND_ATOMIC && res->first_psn == pkt->psn) {
				/* answered from the replay cache, never executed twice */
				res->cur_psn = res->first_psn;
				replay_from(qp, i);
				return;
			}
		}
		ur_count(qp->dev, UR_CTR_rx_drop_out_of_window);
		return;
	default:
		/* SEND/WRITE: acknowledge again with the last PSN executed */
		ur_resp_schedule_ack(qp, UR_AETH_ACK | UR_AETH_CREDIT_INVALID, ur_psn_add(rs->epsn, UR_PSN_MASK));
		return;
	}
}

/* Opcode sequence check (9.7.5.1.3, C9-113): middles and lasts only inside their message. */
static bool opcode_in_sequence(const struct ur_qp *qp, const struct ur_pkt *pkt)
{
	unsigned kind = pkt->op->kind;

	if (qp->resp.in_msg)
		return kind == qp->resp.in_msg && !(pkt->op->pos & UR_POS_FIRST);
	return (pkt->op->pos & UR_POS_FIRST) != 0;
}

void ur_resp_rx(struct ur_qp *qp, const struct ur_pkt *pkt, uint64_t now)
{
	struct ur_responder *rs = &qp->resp;
	int32_t d = ur_psn_diff(pkt->psn, rs->epsn);

	if (rs->error) {
		/* a class C error was NAKed: nothing more is executed, and the QP
		 * enters ERR once the NAK has left (9.9.3.1.3) */
		ur_count(qp->dev, UR_CTR_rx_drop_error_nak_pending);
		return;
	}
	if (qp->type == UR_QPT_UD) {
		ur_ud_resp_rx(qp, pkt);
		return;
	}
	if (pkt->sr_ext) {
		/* selective repeat only from a peer that agreed to it */
		if (ur_sr_on(qp))
			ur_sr_resp_rx(qp, pkt, now);
		else
			ur_count(qp->dev, UR_CTR_rx_drop_unsupported);
		return;
	}
	if (qp->type == UR_QPT_UC) {
		if (!ur_uc_accept(qp, pkt, d))
			return;
	} else if (d > 0) {
		/* ahead of the expected PSN: a packet was lost (C9-112) */
		ur_count(qp->dev, UR_CTR_out_of_sequence);
		if (!rs->nak_sent) {
			rs->nak_sent = true;
			ur_resp_schedule_ack(qp, UR_AETH_NAK | UR_NAK_PSN_SEQ_ERR, rs->epsn);
		} else {
			ur_count(qp->dev, UR_CTR_rx_drop_out_of_window);
		}
		return;
	} else if (d < 0) {
		do_duplicate(qp, pkt);
		return;
	}
	rs->nak_sent = false;
	if (qp->type != UR_QPT_UC && !opcode_in_sequence(qp, pkt)) {
		ur_count(qp->dev, UR_CTR_rx_drop_bad_opcode_seq);
		ur_resp_class_c_error(qp, pkt, UR_NAK_INVALID_REQ, "opcode out of sequence");
		return;
	}
	switch (pkt->op->kind) {
	case UR_KIND_SEND:
		do_send(qp, pkt);
		break;
	case UR_KIND_WRITE:
		do_write(qp, pkt);
		break;
	case UR_KIND_READ_REQ:
		do_read(qp, pkt);
		break;
	case UR_KIND_ATOMIC:
		do_atomic(qp, pkt);
		break;
	default:
		ur_count(qp->dev, UR_CTR_rx_drop_unsupported);
		break;
	}
	/* packets that came early (selective repeat) may now be in order */
	if (qp->sr && qp->sr->nearly)
		ur_sr_advance(qp);
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

	if (qp->cc.cnp_due || (qp->sr && ur_sr_ctrl_pending(qp)))
		return true;
	if (res)
		return res->kind != UR_KIND_READ_REQ || !paced(qp);
	return ack_due(qp) || (qp->sr && qp->sr->sack_due);
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
	uint8_t opcode = ops[(first ? UR_POS_FIRST : 0) | (last ? UR_POS_LAST : 0)];
	const struct ur_opcode_info *op = ur_opcode_get(opcode);
	struct ur_pkt_out o;
	struct ur_mr *mr = NULL;
	int err;

	/* the region may have been deregistered since the request: check again */
	if (len && ur_mr_check(&dev->mrs, res->rkey, qp->pd, res->va + off, len,
			       UR_ACCESS_REMOTE_READ, &mr)) {
		ur_count(dev, UR_CTR_resp_remote_access_errors);
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
			ur_pkt_finish(qp, &o, (qp->attr.av.path.tclass & ~UR_ECN_MASK) | dev->cfg.data_ecn,
				      len),
			dev->now);
	res->cur_psn = ur_psn_add(psn, 1);
	if (last)
		res->pending = false;
	return 0;
}

static int emit_atomic_ack(struct ur_qp *qp, struct ur_resp_res *res)
{
	const struct ur_opcode_info *op = ur_opcode_get(UR_OP_RC_ATOMIC_ACKNOWLEDGE);
	struct ur_pkt_out o;
	int err;

	err = ur_pkt_begin(qp, &o, UR_OP_RC_ATOMIC_ACKNOWLEDGE, res->first_psn, 0);
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

static int emit_ack(struct ur_qp *qp)
{
	struct ur_responder *rs = &qp->resp;
	const struct ur_opcode_info *op = ur_opcode_get(UR_OP_RC_ACKNOWLEDGE);
	bool is_ack = !rs->ack.pending || (rs->ack.syndrome & UR_AETH_TYPE_MASK) == UR_AETH_ACK;
	/* to a selective-repeat peer, every ACK is a SACK: cumulative PSN plus bitmap */
	bool sack = is_ack && ur_sr_on(qp);
	uint8_t syndrome = rs->ack.pending ? rs->ack.syndrome : UR_AETH_ACK | UR_AETH_CREDIT_INVALID;
	uint32_t psn = sack ? ur_psn_add(rs->epsn, UR_PSN_MASK) : rs->ack.psn;
	struct ur_pkt_out o;
	int err;

	err = ur_pkt_begin(qp, &o, UR_OP_RC_ACKNOWLEDGE, psn, sack ? sizeof(struct ur_sack) : 0);
	if (err)
		return err;
	ur_aeth_set_syndrome((struct ur_aeth *)ur_pkt_hdr(&o, op->off_aeth), syndrome);
	ur_aeth_set_msn((struct ur_aeth *)ur_pkt_hdr(&o, op->off_aeth), rs->msn);
	if (sack) {
		ur_sr_fill_sack(qp, (struct ur_sack *)ur_pkt_ext(&o));
		if (ur_sack_any((struct ur_sack *)ur_pkt_ext(&o)))
			ur_count(qp->dev, UR_CTR_sr_sacks_sent);
		qp->sr->sack_due = false;
	}
	ur_pkt_finish(qp, &o, qp->attr.av.path.tclass & ~UR_ECN_MASK, 0);
	ur_count(qp->dev, is_ack ? UR_CTR_tx_acks : UR_CTR_tx_naks);
	rs->ack.pending = false;
	ur_timer_cancel(&qp->dev->timers, &rs->ack.hold);
	if (rs->error)
		ur_qp_to_error(qp, true);
	return 0;
}

/*
 * The answer a held ACK waited for is about to send its last packet, and
 * the ACK goes first (ur_req_emit says when). Returns 1 when the ACK left,
 * 0 when none was held, or a negative errno.
 */
int ur_resp_ack_ahead_of_answer(struct ur_qp *qp)
{
	const struct ur_resp_ack *a = &qp->resp.ack;
	int err;

	if (!a->pending || !a->hold_until)
		return 0;
	err = emit_ack(qp);
	return err ? err : 1;
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
		start_hold(qp);

	if (ur_sr_ctrl_pending(qp)) {
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
				skip_finished(rs);
		} else if (ack_due(qp) || (qp->sr && qp->sr->sack_due)) {
			err = emit_ack(qp);
			if (err)
				return err;
		} else {
			if (rs->ack.pending)
				ur_timer_arm(&qp->dev->timers, &rs->ack.hold,
					     qp->dev->now < rs->ack.hold_until ? rs->ack.hold_until
									: rs->ack.hold_limit);
			return 0;
		}
		(*budget)--;
	}
	return ur_resp_has_work(qp);
}

/* The QP entered the error state: flush the receive queue (not an SRQ, 10.3.1.2). */
void ur_resp_flush(struct ur_qp *qp)
{
	struct ur_responder *rs = &qp->resp;

	for (uint32_t i = 0; i < rs->nres; i++)
		rs->res[i].pending = false;
	rs->ack.pending = false;
	qp->cc.cnp_due = false;
	if (rs->have_rwqe)
		complete_recv(qp, UR_WC_WR_FLUSH_ERR, UR_WC_RECV, 0, NULL);
	if (qp->sr)
		ur_sr_flush_rwqes(qp);
	if (qp->srq)
		return;
	while (take_rwqe(qp))
		complete_recv(qp, UR_WC_WR_FLUSH_ERR, UR_WC_RECV, 0, NULL);
}
