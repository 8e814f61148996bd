/* SPDX-License-Identifier: BSD-2-Clause */
/* The ACK, NAK or SACK packet (9.7.5.1.1; SACK: docs/selective-repeat.md). */
#include "ack.h"
#include "packet_out.h"
#include "psn.h"
#include "qp.h"
#include "qp_error.h"
#include "rtx.h"
#include "sr.h"

/* Send the pending ACK or NAK, or to a selective-repeat peer a SACK. */
int ur_ack_emit(struct ur_qp *qp)
{
	struct ur_responder *rs = &qp->resp;
	/* an XRC target answers with the XRC range's ACKNOWLEDGE (A14.4) */
	uint8_t opcode = UR_OP_RC_ACKNOWLEDGE | qp->svc->transport;
	const struct ur_opcode_info *op = ur_opcode_get(opcode);
	bool is_ack = !rs->ack.pending || (rs->ack.syndrome & UR_AETH_TYPE_MASK) == UR_AETH_ACK;
	/* to a selective-repeat peer, every ACK is a SACK: cumulative PSN plus bitmap */
	bool sack = is_ack && qp->rtx->selective;
	uint8_t syndrome = rs->ack.pending ? rs->ack.syndrome : UR_AETH_ACK | UR_AETH_CREDIT_INVALID;
	uint32_t psn = sack ? ur_psn_add(rs->epsn, UR_PSN_MASK) : rs->ack.psn;
	struct ur_pkt_out o;
	int err;

	err = ur_pkt_begin(qp, &o, opcode, psn, sack ? sizeof(struct ur_sack) : 0);
	if (err)
		return err;
	ur_aeth_set_syndrome((struct ur_aeth *)ur_pkt_hdr(&o, op->off_aeth), syndrome);
	ur_aeth_set_msn((struct ur_aeth *)ur_pkt_hdr(&o, op->off_aeth), rs->msn);
	if (sack) {
		ur_sr_fill_sack(qp, (struct ur_sack *)ur_pkt_ext(&o));
		if (ur_sack_any((struct ur_sack *)ur_pkt_ext(&o)))
			ur_count(qp->dev, UR_CTR_sr_sacks_sent);
	}
	ur_pkt_finish(qp, &o, qp->attr.av.path.tclass & ~UR_ECN_MASK, 0);
	ur_count(qp->dev, is_ack ? UR_CTR_tx_acks : UR_CTR_tx_naks);
	/* a held ACK leaving before its answer began (its hold or limit ran
	 * out) left alone: when, for ur_ack_hold_answered */
	rs->ack.left_ns = rs->ack.hold_until && rs->ack.asked_ns ? qp->dev->now : 0;
	rs->ack.sent_ns = qp->dev->now;
	rs->ack.pending = false;
	ur_timer_cancel(&qp->dev->timers, &rs->ack.hold);
	if (rs->error)
		ur_qp_to_error(qp, true);
	return 0;
}

/*
 * A QP the consumer takes out of service (modify to ERR or RESET, destroy)
 * first sends the ACK it holds back (ack.c's coalescing): the messages it
 * covers completed here, and a NIC would have answered them already.
 * Without it the peer resends into a QP that is gone and ends in RETRY_EXC
 * (a client that exits right after its last receive: fi_pingpong's).
 */
void ur_ack_flush_owed(struct ur_qp *qp)
{
	const struct ur_responder *rs = &qp->resp;
	enum ur_qp_state s = qp_state(qp);

	if (rs->ack.pending && (rs->ack.syndrome & UR_AETH_TYPE_MASK) == UR_AETH_ACK &&
	    (s == UR_QPS_RTR || s == UR_QPS_RTS || s == UR_QPS_SQD || s == UR_QPS_SQE))
		(void)ur_ack_emit(qp);
}
