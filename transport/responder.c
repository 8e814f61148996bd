/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The responder's receive side (IBTA 9.7.5 "responder side"): one pipeline
 * validates incoming requests (PSN, opcode sequence, receive WQE, access,
 * lengths, R_Key) and executes SENDs, RDMA WRITEs, READs and atomics
 * against registered memory, for RC in both retransmission modes and for
 * UC. What it owes the requester in return (ACKs, NAKs, READ responses,
 * atomic acknowledgements) leaves from responder_tx.c.
 */
#include <string.h>

#include "ack.h"
#include "mw.h"
#include "psn.h"
#include "qp_error.h"
#include "recv_wqe.h"
#include "responder.h"
#include "rtx.h"
#include "sr.h"
#include "uc.h"
#include "ud.h"

static const uint8_t *pkt_hdr(const struct ur_pkt *pkt, unsigned off)
{
	return (const uint8_t *)pkt->bth + off;
}

/*
 * A class C error (9.9.3.1.3): NAK the request, then enter the error state
 * once the NAK has left. The peer caused it, so on UC, which has no NAK,
 * the peer loses the message and nothing else.
 */
void ur_resp_class_c_error(struct ur_qp *qp, const struct ur_pkt *pkt, uint8_t nak, const char *why)
{
	struct ur_responder *rs = &qp->resp;

	if (qp->svc->drops_messages) {
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
	if (qp->svc->acknowledged) {
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

	/* selective repeat may have taken this message's WQE already (rtx.h) */
	if (!qp->rtx->rwqe_taken_ahead(qp, rs->rwqe) && !ur_resp_take_rwqe(qp, rs->rwqe))
		return false;
	rs->have_rwqe = true;
	rs->msg_off = 0;
	return true;
}

/* RNR NAK (9.7.5.2.8): no receive WQE; the requester retries after the timer. */
void ur_resp_rnr_nak(struct ur_qp *qp)
{
	ur_count(qp->dev, UR_CTR_out_of_buffer);
	if (!qp->svc->acknowledged) {
		/* unacknowledged services drop the message instead (class D) */
		ur_count(qp->dev, UR_CTR_rx_drop_no_buffer);
		if (qp->svc->drops_messages)
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
	if (!qp->svc->acknowledged || !ur_bth_ackreq(pkt->bth))
		return;
	if (msg_end)
		ur_resp_ack_message(qp, pkt->psn);
	else
		ur_resp_schedule_ack(qp, UR_AETH_ACK | UR_AETH_CREDIT_INVALID, pkt->psn);
}

/* A request with a PSN already executed (9.7.5.1.1, C9-104..C9-107). */
static void do_duplicate(struct ur_qp *qp, const struct ur_pkt *pkt)
{
	struct ur_responder *rs = &qp->resp;
	uint32_t n = UR_MIN(rs->nres, rs->res_tail);

	ur_count(qp->dev, UR_CTR_duplicate_request);
	switch (pkt->op->kind) {
	case UR_KIND_READ_REQ: {
		const struct ur_reth *reth =
		    (const struct ur_reth *)pkt_hdr(pkt, pkt->op->off_reth);

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
			ur_resp_replay_from(qp, i);
			return;
		}
		ur_count(qp->dev, UR_CTR_rx_drop_out_of_window);
		ur_dev_log(qp->dev,
			   "qp %#x: READ asked again at PSN %#x for %u bytes matches no READ kept",
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
				ur_resp_replay_from(qp, i);
				return;
			}
		}
		ur_count(qp->dev, UR_CTR_rx_drop_out_of_window);
		return;
	default:
		/* where the first ACK went, for a resend nothing was lost to */
		if (!rs->ack.pending && !rs->ack.sent_ns)
			ur_dev_log(qp->dev, "qp %#x: duplicate request PSN %#x (expected %#x): "
				   "no ACK pending, none sent yet", qp->qpn, pkt->psn, rs->epsn);
		else if (!rs->ack.pending)
			ur_dev_log(qp->dev, "qp %#x: duplicate request PSN %#x (expected %#x): "
				   "no ACK pending, the last covered PSN %#x and left %lld us ago",
				   qp->qpn, pkt->psn, rs->epsn, rs->ack.psn,
				   (long long)(qp->dev->now - rs->ack.sent_ns) / 1000);
		else
			ur_dev_log(qp->dev, "qp %#x: duplicate request PSN %#x (expected %#x): ACK "
				   "pending (syndrome %#x PSN %#x, %s, limit in %lld us)",
				   qp->qpn, pkt->psn, rs->epsn, rs->ack.syndrome, rs->ack.psn,
				   !rs->ack.hold_until ? "not held"
				   : rs->ack.hold_until == UR_TIME_NEVER ? "held, its clock not started"
									 : "held",
				   (long long)(rs->ack.hold_limit - qp->dev->now) / 1000);
		/* SEND/WRITE: acknowledge again with the last PSN executed */
		ur_resp_schedule_ack(qp, UR_AETH_ACK | UR_AETH_CREDIT_INVALID,
				     ur_psn_add(rs->epsn, UR_PSN_MASK));
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

/*
 * ---- The receive pipeline ----
 *
 * Every request walks the same steps, in this order, whatever its service
 * and retransmission mode: the PSN, the opcode sequence, the receive WQE it
 * needs, the QP's access rights, its lengths, its R_Key, then it executes
 * and is acknowledged. Each step returns the next state, as Soft-RoCE's
 * rxe_resp.c does; a failed check returns the error state that says what
 * the requester is told (or, on UC and UD, that the message is dropped).
 *
 * Only two things depend on how a packet was sent. The PSN decision: a
 * go-back-N packet must be the expected one (C9-112), a selective repeat
 * packet may come early within the window (docs/selective-repeat.md). And
 * where its data lands: go-back-N fills the open message's receive WQE and
 * RDMA WRITE address in order, while a selective repeat packet names its
 * receive WQE, offset and address itself (SRETH) and completes once the
 * PSNs before it have arrived (sr.c).
 */
#define UR_RESP_STATES(X)                                                                          \
	X(CHECK_QP, check_qp)                                                                      \
	X(CHECK_PSN, check_psn)                                                                    \
	X(CHECK_OPCODE_SEQ, check_opcode_seq)                                                      \
	X(CHECK_XRC_SRQ, check_xrc_srq)                                                            \
	X(CHECK_RESOURCE, check_resource)                                                          \
	X(CHECK_ACCESS, check_access)                                                              \
	X(CHECK_LENGTH, check_length)                                                              \
	X(CHECK_KEY, check_key)                                                                    \
	X(EXECUTE, execute)                                                                        \
	X(ACKNOWLEDGE, acknowledge)                                                                \
	X(DATAGRAM, datagram)                                                                      \
	X(DUPLICATE, duplicate)                                                                    \
	X(ERR_PSN_SEQUENCE, err_psn_sequence)                                                      \
	X(ERR_OPCODE_SEQ, err_opcode_seq)                                                          \
	X(ERR_UNSUPPORTED, err_unsupported)                                                        \
	X(ERR_RNR, err_rnr)                                                                        \
	X(ERR_INVALID_REQUEST, err_invalid_request)                                                \
	X(ERR_REMOTE_ACCESS, err_remote_access)                                                    \
	X(ERR_INVALIDATE, err_invalidate)                                                          \
	X(ERR_LOCAL_LENGTH, err_local_length)                                                      \
	X(ERR_LOCAL_PROTECTION, err_local_protection)

enum ur_resp_state {
#define UR_RESP_STATE_ENUM(name, fn) UR_RESP_##name,
	UR_RESP_STATES(UR_RESP_STATE_ENUM)
#undef UR_RESP_STATE_ENUM
	    UR_RESP_DONE,
};

static const char *const resp_state_names[] = {
#define UR_RESP_STATE_NAME(name, fn) [UR_RESP_##name] = #name,
    UR_RESP_STATES(UR_RESP_STATE_NAME)
#undef UR_RESP_STATE_NAME
	[UR_RESP_DONE] = "DONE",
};

const char *ur_resp_state_name(unsigned state)
{
	return state <= UR_RESP_DONE ? resp_state_names[state] : "?";
}

/* One request on its way through the pipeline. */
struct resp_pkt {
	const struct ur_pkt *pkt;
	const struct ur_sreth *sreth; /* selective repeat: where the packet lands */
	uint32_t ahead;		      /* selective repeat: PSNs past the expected one */
	bool catch_up;		      /* go-back-N: early SR packets may be in order after it */
	struct ur_recv_wqe *rwqe;     /* the receive WQE it fills (SEND, WRITE with immediate) */
	uint32_t off;		      /* bytes of its message before its payload */
	struct ur_sr_done done;	      /* selective repeat: how its message completes */
	struct ur_mr *mr;	      /* the region its R_Key names, when it writes there */
	uint64_t va;		      /* ...at this address */
	const char *why;	      /* what an error state logs */
};

static enum ur_resp_state check_qp(struct ur_qp *qp, struct resp_pkt *rx)
{
	if (qp->resp.error) {
		/* a class C error was NAKed: nothing more is executed, and the QP
		 * enters ERR once the NAK has left (9.9.3.1.3) */
		ur_count(qp->dev, UR_CTR_rx_drop_error_nak_pending);
		return UR_RESP_DONE;
	}
	/* an XRC initiator has no responder: a request to it is not for it */
	if (qp->svc->xrc_ini)
		return UR_RESP_ERR_UNSUPPORTED;
	if (rx->pkt->sr_ext) {
		/* selective repeat only from a peer that agreed to it (RC only) */
		if (!qp->rtx->selective)
			return UR_RESP_ERR_UNSUPPORTED;
		rx->sreth = (const struct ur_sreth *)rx->pkt->sr_ext;
	}
	return qp->svc->connected ? UR_RESP_CHECK_PSN : UR_RESP_DATAGRAM;
}

/* The unreliable datagram service has steps of its own (ud.c): no PSN, no message. */
static enum ur_resp_state datagram(struct ur_qp *qp, struct resp_pkt *rx)
{
	ur_ud_resp_rx(qp, rx->pkt);
	return UR_RESP_DONE;
}

/* The PSN decision (9.7.5.1.1; 9.8.3 for UC), the one step that differs by mode. */
static enum ur_resp_state check_psn(struct ur_qp *qp, struct resp_pkt *rx)
{
	struct ur_responder *rs = &qp->resp;
	const struct ur_pkt *pkt = rx->pkt;
	int32_t d = ur_psn_diff(pkt->psn, rs->epsn);

	if (rx->sreth) {
		/* in order, or early within the window */
		if (!ur_sr_psn_accept(qp, pkt, d))
			return UR_RESP_DONE;
		rx->ahead = (uint32_t)d;
	} else if (qp->svc->drops_messages) {
		/* a message with a gap is dropped whole (class D1), its sequence with it */
		if (!ur_uc_accept(qp, pkt, d))
			return UR_RESP_DONE;
	} else if (d > 0) {
		return UR_RESP_ERR_PSN_SEQUENCE;
	} else if (d < 0) {
		return UR_RESP_DUPLICATE;
	}
	if (!rx->ahead)
		rs->nak_sent = false;
	return UR_RESP_CHECK_OPCODE_SEQ;
}

/* Ahead of the expected PSN: a packet was lost (C9-112). One NAK per gap. */
static enum ur_resp_state err_psn_sequence(struct ur_qp *qp, struct resp_pkt *rx)
{
	struct ur_responder *rs = &qp->resp;

	(void)rx;
	ur_count(qp->dev, UR_CTR_out_of_sequence);
	if (!rs->nak_sent) {
		rs->nak_sent = true;
		ur_resp_schedule_ack(qp, UR_AETH_NAK | UR_NAK_PSN_SEQ_ERR, rs->epsn);
	} else {
		ur_count(qp->dev, UR_CTR_rx_drop_out_of_window);
	}
	return UR_RESP_DONE;
}

static enum ur_resp_state duplicate(struct ur_qp *qp, struct resp_pkt *rx)
{
	do_duplicate(qp, rx->pkt);
	return UR_RESP_DONE;
}

/*
 * The opcode sequence (9.7.5.1.3, C9-113): middles and lasts only inside
 * their message. UC checked it with the PSN. A selective repeat packet at
 * the expected PSN must not interrupt a go-back-N message still open, and
 * the receive WQE it names must be the one its PSN allows.
 */
static enum ur_resp_state check_opcode_seq(struct ur_qp *qp, struct resp_pkt *rx)
{
	const struct ur_pkt *pkt = rx->pkt;
	const struct ur_opcode_info *op = pkt->op;

	if (!rx->sreth) {
		if (qp->svc->acknowledged && !opcode_in_sequence(qp, pkt)) {
			rx->why = "opcode out of sequence";
			return UR_RESP_ERR_OPCODE_SEQ;
		}
		rx->catch_up = true;
		return qp->svc->xrc_tgt ? UR_RESP_CHECK_XRC_SRQ : UR_RESP_CHECK_RESOURCE;
	}
	if (!rx->ahead && qp->resp.in_msg) {
		rx->why = "opcode out of sequence";
		return UR_RESP_ERR_OPCODE_SEQ;
	}
	rx->off = ur_sreth_offset(rx->sreth);
	rx->done.kind = op->kind;
	rx->done.opcode = pkt->opcode;
	rx->done.rseq = ur_sreth_rseq(rx->sreth);
	rx->done.byte_len = rx->off + pkt->payload_len;
	rx->done.se = ur_bth_se(pkt->bth);
	if (op->hdrs & UR_HDR_IMMDT)
		rx->done.imm = ur_immdt_raw((const struct ur_immdt *)pkt_hdr(pkt, op->off_immdt));
	if (!ur_sr_rseq_fits(qp, &rx->done, rx->ahead)) {
		rx->why = "SR receive sequence number does not fit the PSN";
		return UR_RESP_ERR_OPCODE_SEQ;
	}
	return UR_RESP_CHECK_RESOURCE;
}

/*
 * An XRC target has no receive queue nor PD of its own: the XRCETH of each
 * request names the XRC SRQ its receive comes from, and that SRQ's PD is
 * the one its keys and receive buffers are checked in (A14.4). An SRQ that
 * does not exist, or belongs to another XRC domain, is an invalid request
 * (class C).
 */
static enum ur_resp_state check_xrc_srq(struct ur_qp *qp, struct resp_pkt *rx)
{
	const struct ur_pkt *pkt = rx->pkt;
	struct ur_srq *srq;

	srq = ur_dev_find_srq(
	    qp->dev, ur_xrceth_srqn((const struct ur_xrceth *)pkt_hdr(pkt, pkt->op->off_xrceth)));
	if (!srq || !srq->xrcd || srq->xrcd != qp->xrcd) {
		ur_count(qp->dev, UR_CTR_rx_drop_xrc_srq);
		rx->why = srq && srq->xrcd ? "XRCETH names an SRQ of another XRC domain"
					   : "XRCETH names no XRC SRQ";
		return UR_RESP_ERR_INVALID_REQUEST;
	}
	qp->srq = srq;
	qp->pd = srq->pd;
	return UR_RESP_CHECK_RESOURCE;
}

static enum ur_resp_state err_opcode_seq(struct ur_qp *qp, struct resp_pkt *rx)
{
	ur_count(qp->dev, UR_CTR_rx_drop_bad_opcode_seq);
	ur_resp_class_c_error(qp, rx->pkt, UR_NAK_INVALID_REQ, rx->why);
	return UR_RESP_DONE;
}

static enum ur_resp_state err_unsupported(struct ur_qp *qp, struct resp_pkt *rx)
{
	(void)rx;
	ur_count(qp->dev, UR_CTR_rx_drop_unsupported);
	return UR_RESP_DONE;
}

/*
 * The receive WQE a SEND, or the last packet of a WRITE with immediate,
 * consumes (9.7.5.2.8: none posted is an RNR NAK). A go-back-N SEND takes
 * it at its first packet and fills it in order; a go-back-N WRITE only
 * makes sure one is posted, and takes it once its data has landed. A
 * selective repeat packet takes the WQE its SRETH names, ahead if need be.
 * READs and atomics claim their responder resource when they execute.
 */
static enum ur_resp_state check_resource(struct ur_qp *qp, struct resp_pkt *rx)
{
	struct ur_responder *rs = &qp->resp;
	const struct ur_opcode_info *op = rx->pkt->op;
	bool imm_last = (op->pos & UR_POS_LAST) && (op->hdrs & UR_HDR_IMMDT);

	if (op->kind != UR_KIND_SEND && !(op->kind == UR_KIND_WRITE && imm_last))
		return UR_RESP_CHECK_ACCESS;
	if (rx->sreth) {
		rx->rwqe = ur_sr_rwqe(qp, rx->done.rseq);
		return rx->rwqe ? UR_RESP_CHECK_ACCESS : UR_RESP_ERR_RNR;
	}
	if (op->kind == UR_KIND_WRITE)
		return rs->have_rwqe || ur_resp_rwqe_available(qp) ? UR_RESP_CHECK_ACCESS
								   : UR_RESP_ERR_RNR;
	if (op->pos & UR_POS_FIRST) {
		/* UC may still hold the WQE of a message it dropped: fill it again */
		if (!rs->have_rwqe && !take_rwqe(qp))
			return UR_RESP_ERR_RNR;
		rs->msg_off = 0;
	}
	rx->rwqe = rs->rwqe;
	rx->off = rs->msg_off;
	return UR_RESP_CHECK_ACCESS;
}

static enum ur_resp_state err_rnr(struct ur_qp *qp, struct resp_pkt *rx)
{
	(void)rx;
	ur_resp_rnr_nak(qp);
	return UR_RESP_DONE;
}

static bool remote_access_ok(struct ur_qp *qp, uint32_t need)
{
	return (qp->attr.qp_access_flags & need) == need;
}

/*
 * The QP's remote access rights, checked where a request names remote
 * memory (a request they do not allow is a remote access error, class C): every READ and atomic, a
 * go-back-N WRITE at its first packet (the RETH), every selective repeat WRITE packet (each names
 * its address). The first packet's RETH starts the WRITE.
 */
static enum ur_resp_state check_access(struct ur_qp *qp, struct resp_pkt *rx)
{
	struct ur_responder *rs = &qp->resp;
	const struct ur_pkt *pkt = rx->pkt;

	switch (pkt->op->kind) {
	case UR_KIND_WRITE:
		if (!rx->sreth) {
			const struct ur_reth *reth;

			if (!(pkt->op->pos & UR_POS_FIRST))
				break;
			reth = (const struct ur_reth *)pkt_hdr(pkt, pkt->op->off_reth);
			rs->wr_va = ur_reth_va(reth);
			rs->wr_rkey = ur_reth_rkey(reth);
			rs->wr_len = rs->wr_left = ur_reth_dmalen(reth);
		}
		if (!remote_access_ok(qp, UR_ACCESS_REMOTE_WRITE)) {
			rx->why = "QP does not allow remote write";
			return UR_RESP_ERR_REMOTE_ACCESS;
		}
		break;
	case UR_KIND_READ_REQ:
		if (!remote_access_ok(qp, UR_ACCESS_REMOTE_READ)) {
			rx->why = "QP does not allow remote read";
			return UR_RESP_ERR_REMOTE_ACCESS;
		}
		break;
	case UR_KIND_ATOMIC:
		if (!remote_access_ok(qp, UR_ACCESS_REMOTE_ATOMIC)) {
			rx->why = "QP does not allow remote atomics";
			return UR_RESP_ERR_REMOTE_ACCESS;
		}
		break;
	}
	return UR_RESP_CHECK_LENGTH;
}

/* A remote access error (class C, 9.9.3.1.3): NAK remote access error. */
static enum ur_resp_state err_remote_access(struct ur_qp *qp, struct resp_pkt *rx)
{
	ur_count(qp->dev, UR_CTR_resp_remote_access_errors);
	ur_resp_class_c_error(qp, rx->pkt, UR_NAK_REM_ACCESS_ERR, rx->why);
	return UR_RESP_DONE;
}

/* First and middle packets carry exactly one MTU, a last or only packet at most one (9.7.5.1.5). */
static bool fits_mtu(const struct ur_qp *qp, const struct ur_pkt *pkt)
{
	return !(pkt->op->pos & UR_POS_LAST) ? pkt->payload_len == qp->mtu
					     : pkt->payload_len <= qp->mtu;
}

/*
 * Lengths (9.7.5.1.5): payloads against the MTU; a go-back-N WRITE's
 * payloads add up to what its RETH said (a middle leaves some for the
 * last, the last carries exactly what is owed); a SEND fits its receive
 * WQE (else the receive fails on our side, 9.9.3.1); an atomic operand
 * is 8 bytes at an 8-byte aligned address.
 */
static const char sr_length_why[] = "SR packet length does not match the MTU";

static enum ur_resp_state check_length(struct ur_qp *qp, struct resp_pkt *rx)
{
	const struct ur_pkt *pkt = rx->pkt;
	uint32_t len = pkt->payload_len;

	switch (pkt->op->kind) {
	case UR_KIND_SEND:
		if (!fits_mtu(qp, pkt)) {
			rx->why = rx->sreth ? sr_length_why : "SEND payload does not match the MTU";
			return UR_RESP_ERR_INVALID_REQUEST;
		}
		if ((uint64_t)rx->off + len > rx->rwqe->length)
			return UR_RESP_ERR_LOCAL_LENGTH;
		break;
	case UR_KIND_WRITE: {
		uint32_t left = qp->resp.wr_left;

		if (!fits_mtu(qp, pkt) ||
		    (!rx->sreth && (!(pkt->op->pos & UR_POS_LAST) ? len >= left : len != left))) {
			rx->why =
			    rx->sreth ? sr_length_why : "WRITE payload does not match its length";
			return UR_RESP_ERR_INVALID_REQUEST;
		}
		break;
	}
	case UR_KIND_ATOMIC: {
		const struct ur_atmeth *a =
		    (const struct ur_atmeth *)pkt_hdr(pkt, pkt->op->off_atmeth);

		if (ur_atmeth_va(a) & 7) {
			rx->why = "atomic address not 8-byte aligned";
			return UR_RESP_ERR_INVALID_REQUEST;
		}
		break;
	}
	}
	return UR_RESP_CHECK_KEY;
}

/* A malformed request (class C, 9.9.3.1.3): NAK invalid request. */
static enum ur_resp_state err_invalid_request(struct ur_qp *qp, struct resp_pkt *rx)
{
	ur_resp_class_c_error(qp, rx->pkt, UR_NAK_INVALID_REQ, rx->why);
	return UR_RESP_DONE;
}

/* The receive WQE this packet was filling fails (go-back-N: it is the open one). */
static void fail_rwqe(struct ur_qp *qp, struct resp_pkt *rx, enum ur_wc_status status)
{
	if (rx->sreth)
		ur_sr_fail_rwqe(qp, &rx->done, rx->ahead, rx->off, status);
	else
		ur_resp_complete_recv(qp, status, UR_WC_RECV, qp->resp.msg_off, NULL);
}

/*
 * A SEND longer than its receive WQE: the receive fails with a local
 * length error, and RC tells the requester (class C, 9.9.3.1.3). UC drops the
 * message and keeps the WQE for the next one (class D).
 */
static enum ur_resp_state err_local_length(struct ur_qp *qp, struct resp_pkt *rx)
{
	ur_count(qp->dev, UR_CTR_resp_local_length_error);
	if (qp->svc->drops_messages) {
		ur_uc_drop_message(qp);
		return UR_RESP_DONE;
	}
	fail_rwqe(qp, rx, UR_WC_LOC_LEN_ERR);
	local_error(qp, rx->pkt, UR_NAK_INVALID_REQ, "SEND longer than the receive buffer");
	return UR_RESP_DONE;
}

/* Whether R_Key `rkey` refuses `access` to [va, va+len); what a window refuses is counted. */
static bool rkey_refused(struct ur_qp *qp, uint32_t rkey, uint64_t va, uint64_t len,
			 uint32_t access, struct ur_mr **mr)
{
	const struct ur_mr_table *t = &qp->dev->mrs;

	if (!ur_rkey_check(t, rkey, qp->pd, qp->qpn, va, len, access, mr))
		return false;
	if (ur_mw_key_named(t, rkey))
		ur_count(qp->dev, UR_CTR_resp_mw_refused);
	return true;
}

/*
 * The R_Key: it must name a region of this protection domain, or a window
 * bound in it (through this QP, for type 2),
 * that allows the access and holds the whole range. A go-back-N WRITE's
 * first packet checks the whole RETH range, later ones their own (a
 * deregistration takes effect at once); a selective repeat packet checks
 * its own range. A READ is checked whole, then against the largest message
 * (2^31 bytes).
 */
static enum ur_resp_state check_key(struct ur_qp *qp, struct resp_pkt *rx)
{
	struct ur_responder *rs = &qp->resp;
	const struct ur_pkt *pkt = rx->pkt;
	const struct ur_opcode_info *op = pkt->op;
	struct ur_mr *mr;

	switch (op->kind) {
	case UR_KIND_WRITE: {
		uint32_t rkey, n = pkt->payload_len;

		if (rx->sreth) {
			if (!n)
				break;
			rx->va = ur_sreth_va(rx->sreth) + rx->off;
			rkey = ur_sreth_rkey(rx->sreth);
		} else {
			if (!n && !((op->pos & UR_POS_FIRST) && rs->wr_len))
				break;
			rx->va = rs->wr_va;
			rkey = rs->wr_rkey;
			if (op->pos & UR_POS_FIRST)
				n = rs->wr_len;
		}
		if (rkey_refused(qp, rkey, rx->va, n, UR_ACCESS_REMOTE_WRITE, &rx->mr)) {
			rx->why = "bad R_Key, bounds or access for WRITE";
			return UR_RESP_ERR_REMOTE_ACCESS;
		}
		break;
	}
	case UR_KIND_READ_REQ: {
		const struct ur_reth *reth = (const struct ur_reth *)pkt_hdr(pkt, op->off_reth);
		uint32_t len = ur_reth_dmalen(reth);

		if (len && rkey_refused(qp, ur_reth_rkey(reth), ur_reth_va(reth), len,
					UR_ACCESS_REMOTE_READ, &mr)) {
			rx->why = "bad R_Key, bounds or access for READ";
			return UR_RESP_ERR_REMOTE_ACCESS;
		}
		if (len > (1u << 31)) {
			rx->why = "READ longer than 2^31";
			return UR_RESP_ERR_INVALID_REQUEST;
		}
		break;
	}
	case UR_KIND_ATOMIC: {
		const struct ur_atmeth *a = (const struct ur_atmeth *)pkt_hdr(pkt, op->off_atmeth);

		rx->va = ur_atmeth_va(a);
		if (rkey_refused(qp, ur_atmeth_rkey(a), rx->va, 8, UR_ACCESS_REMOTE_ATOMIC,
				 &rx->mr)) {
			rx->why = "bad R_Key, bounds or access for atomic";
			return UR_RESP_ERR_REMOTE_ACCESS;
		}
		break;
	}
	}
	return UR_RESP_EXECUTE;
}

static enum ur_resp_state execute_send(struct ur_qp *qp, struct resp_pkt *rx)
{
	struct ur_responder *rs = &qp->resp;
	const struct ur_pkt *pkt = rx->pkt;
	uint32_t inv = 0;

	/*
	 * SEND with Invalidate (its last packet carries the IETH) may
	 * invalidate only a type 2 window bound through this QP, or a
	 * fast-registered region, which uroce has not (10.6.7.2; a region
	 * from Register Memory Region never goes away at a peer's word).
	 * Checked before anything of the packet lands; the window is
	 * invalidated once the data has, before the receive completes, so
	 * the application never sees the completion with the key still
	 * working.
	 */
	if (pkt->op->hdrs & UR_HDR_IETH) {
		inv = ur_ieth_rkey((const struct ur_ieth *)pkt_hdr(pkt, pkt->op->off_ieth));
		rx->why = ur_mw_check_invalidate(&qp->dev->mrs, inv, qp->pd, qp->qpn, true);
		if (rx->why) {
			if (ur_mw_key_named(&qp->dev->mrs, inv))
				ur_count(qp->dev, UR_CTR_resp_mw_refused);
			return UR_RESP_ERR_INVALIDATE;
		}
		if (rx->ahead) {
			/* selective repeat: an invalidation takes effect in PSN order,
			 * after the requests before it; it comes again once they have */
			ur_count(qp->dev, UR_CTR_rx_drop_sr_early_invalidate);
			return UR_RESP_DONE;
		}
	}
	if (ur_resp_scatter(qp, rx->rwqe, rx->off, pkt->payload, pkt->payload_len))
		return UR_RESP_ERR_LOCAL_PROTECTION;
	if (inv) {
		ur_mw_invalidate(&qp->dev->mrs, inv);
		ur_count(qp->dev, UR_CTR_mw_invalidations);
	}
	if (rx->sreth) {
		if (inv)
			rx->done.imm = inv; /* the completion reports the invalidated R_Key */
		return UR_RESP_ACKNOWLEDGE;
	}
	rs->msg_off += pkt->payload_len;
	if (pkt->op->pos & UR_POS_LAST)
		ur_resp_complete_recv(qp, UR_WC_SUCCESS, UR_WC_RECV, rs->msg_off, pkt);
	else
		rs->in_msg = UR_KIND_SEND;
	return UR_RESP_ACKNOWLEDGE;
}

static enum ur_resp_state err_invalidate(struct ur_qp *qp, struct resp_pkt *rx)
{
	ur_count(qp->dev, UR_CTR_resp_remote_access_errors);
	fail_rwqe(qp, rx, UR_WC_REM_INV_REQ_ERR);
	ur_resp_class_c_error(qp, rx->pkt, UR_NAK_INVALID_REQ, rx->why);
	return UR_RESP_DONE;
}

/* The receive WQE names a bad lkey: it fails, and so does the QP (9.9.3.1). */
static enum ur_resp_state err_local_protection(struct ur_qp *qp, struct resp_pkt *rx)
{
	fail_rwqe(qp, rx, UR_WC_LOC_PROT_ERR);
	local_error(qp, rx->pkt, UR_NAK_REM_OP_ERR, "receive WQE has a bad lkey");
	return UR_RESP_DONE;
}

static enum ur_resp_state execute_write(struct ur_qp *qp, struct resp_pkt *rx)
{
	struct ur_responder *rs = &qp->resp;
	const struct ur_pkt *pkt = rx->pkt;
	unsigned pos = pkt->op->pos;

	if (rx->mr)
		memcpy(ur_mr_ptr(rx->mr, rx->va), pkt->payload, pkt->payload_len);
	ur_count(qp->dev, UR_CTR_rx_write_requests);
	if (rx->sreth)
		return UR_RESP_ACKNOWLEDGE;
	rs->wr_va += pkt->payload_len;
	rs->wr_left -= pkt->payload_len;
	if (!(pos & UR_POS_LAST)) {
		rs->in_msg = UR_KIND_WRITE;
	} else if (pkt->op->hdrs & UR_HDR_IMMDT) {
		/* WRITE with immediate consumes a receive WQE when its last packet lands */
		if (!rs->have_rwqe)
			take_rwqe(qp);
		ur_resp_complete_recv(qp, UR_WC_SUCCESS, UR_WC_RECV_RDMA_WITH_IMM, rs->wr_len, pkt);
	}
	return UR_RESP_ACKNOWLEDGE;
}

/* The responses acknowledge everything before them: a plain ACK waiting is moot. */
static void answer_owed(struct ur_qp *qp)
{
	struct ur_responder *rs = &qp->resp;

	if (rs->ack.pending && (rs->ack.syndrome & UR_AETH_TYPE_MASK) == UR_AETH_ACK)
		rs->ack.pending = false;
	ur_dev_schedule(qp->dev, qp);
}

/* A READ is answered by its responses (ur_resp_emit), not acknowledged. */
static enum ur_resp_state execute_read(struct ur_qp *qp, struct resp_pkt *rx)
{
	const struct ur_pkt *pkt = rx->pkt;
	const struct ur_reth *reth = (const struct ur_reth *)pkt_hdr(pkt, pkt->op->off_reth);
	uint32_t len = ur_reth_dmalen(reth);
	struct ur_resp_res *res = ur_resp_alloc_res(qp);

	if (!res) {
		rx->why = "more READs/atomics than max_dest_rd_atomic";
		return UR_RESP_ERR_INVALID_REQUEST;
	}
	res->kind = UR_KIND_READ_REQ;
	res->pending = true;
	res->first_psn = res->req_psn = res->cur_psn = pkt->psn;
	res->last_psn = ur_psn_add(pkt->psn, ur_npkts(len, qp->mtu) - 1);
	res->va = ur_reth_va(reth);
	res->rkey = ur_reth_rkey(reth);
	res->length = len;
	ur_count(qp->dev, UR_CTR_rx_read_requests);
	qp->resp.epsn = ur_psn_add(res->last_psn, 1);
	answer_owed(qp);
	return UR_RESP_DONE;
}

/* Atomic with respect to other uroce QPs and to the local CPU (10.7.3.3). */
static enum ur_resp_state execute_atomic(struct ur_qp *qp, struct resp_pkt *rx)
{
	struct ur_responder *rs = &qp->resp;
	const struct ur_pkt *pkt = rx->pkt;
	const struct ur_atmeth *a = (const struct ur_atmeth *)pkt_hdr(pkt, pkt->op->off_atmeth);
	struct ur_resp_res *res = ur_resp_alloc_res(qp);
	uint64_t *p, orig;

	if (!res) {
		rx->why = "more READs/atomics than max_dest_rd_atomic";
		return UR_RESP_ERR_INVALID_REQUEST;
	}
	p = (uint64_t *)ur_mr_ptr(rx->mr, rx->va);
	if ((pkt->opcode & ~UR_TRANSPORT_MASK) == UR_OP_RC_COMPARE_SWAP) {
		orig = ur_atmeth_compare(a);
		__atomic_compare_exchange_n(p, &orig, ur_atmeth_swap_add(a), false,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
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
	answer_owed(qp);
	return UR_RESP_DONE;
}

static enum ur_resp_state execute(struct ur_qp *qp, struct resp_pkt *rx)
{
	switch (rx->pkt->op->kind) {
	case UR_KIND_SEND:
		return execute_send(qp, rx);
	case UR_KIND_WRITE:
		return execute_write(qp, rx);
	case UR_KIND_READ_REQ:
		return execute_read(qp, rx);
	case UR_KIND_ATOMIC:
		return execute_atomic(qp, rx);
	default:
		return UR_RESP_ERR_UNSUPPORTED;
	}
}

/*
 * Messages placed early (selective repeat) complete once the PSNs before
 * them are in. One that names a receive WQE another message completes
 * fails the QP, so the WQEs taken ahead flush, none reported done.
 */
static void complete_early(struct ur_qp *qp)
{
	struct ur_responder *rs = &qp->resp;
	uint32_t rseq;

	if (!ur_sr_advance(qp, &rseq))
		return;
	ur_count(qp->dev, UR_CTR_rx_drop_bad_opcode_seq);
	ur_qp_log_error(qp, "responder: SR receive sequence number %u at PSN %#x, expected %u",
			rseq, rs->epsn, rs->rq_done);
	rs->error = true;
	ur_resp_schedule_ack(qp, UR_AETH_NAK | UR_NAK_INVALID_REQ, rs->epsn);
}

/*
 * A SEND or WRITE packet executed: the expected PSN moves on, a message
 * ends, and the requester is acknowledged if it asked (9.7.5.2.1). A
 * selective repeat packet that came early is held until the PSNs before it
 * arrive, and a SACK tells the requester what is held.
 */
static enum ur_resp_state acknowledge(struct ur_qp *qp, struct resp_pkt *rx)
{
	struct ur_responder *rs = &qp->resp;
	const struct ur_pkt *pkt = rx->pkt;
	bool last = pkt->op->pos & UR_POS_LAST;
	uint32_t acked;

	if (!rx->sreth) {
		request_done(qp, pkt, last);
		return UR_RESP_DONE;
	}
	if (rx->ahead) {
		ur_sr_hold_early(qp, pkt, &rx->done);
	} else {
		uint32_t next = ur_psn_add(pkt->psn, 1);

		rs->epsn = next;
		if (last)
			ur_sr_complete(qp, &rx->done);
		complete_early(qp);
		acked = ur_psn_add(rs->epsn, UR_PSN_MASK);
		if (rs->epsn != next && !rs->error) {
			/* It filled a hole: packets held early are in order now,
			 * maybe one that asked for an ACK and got only a SACK. Say
			 * so at once (RFC 5681 4.2 asks the same of TCP), or the
			 * requester learns it only from a later ACK, a timeout or
			 * a needless retransmission. */
			ur_resp_schedule_ack(qp, UR_AETH_ACK | UR_AETH_CREDIT_INVALID, acked);
		} else if (ur_bth_ackreq(pkt->bth)) {
			if (last)
				ur_resp_ack_message(qp, acked);
			else
				ur_resp_schedule_ack(qp, UR_AETH_ACK | UR_AETH_CREDIT_INVALID,
						     acked);
		}
	}
	ur_sr_sack_if_early(qp);
	return UR_RESP_DONE;
}

/* A request for this QP: walk it through the pipeline, one step at a time. */
void ur_resp_rx(struct ur_qp *qp, const struct ur_pkt *pkt, uint64_t now)
{
	struct resp_pkt rx = {.pkt = pkt};
	enum ur_resp_state st = UR_RESP_CHECK_QP;

	(void)now;
	/* a switch, not a table of pointers: each step is inlined into the loop */
	while (st != UR_RESP_DONE) {
		switch (st) {
#define UR_RESP_STATE_STEP(name, fn)                                                               \
	case UR_RESP_##name:                                                                       \
		st = fn(qp, &rx);                                                                  \
		break;
			UR_RESP_STATES(UR_RESP_STATE_STEP)
#undef UR_RESP_STATE_STEP
		default:
			st = UR_RESP_DONE;
			break;
		}
	}
	/* a go-back-N packet in order may be what early SR packets waited for */
	if (rx.catch_up && qp->rtx->held_early(qp))
		complete_early(qp);
}
