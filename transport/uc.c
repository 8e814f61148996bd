/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The unreliable connected service at the responder (IBTA 9.8): PSNs are
 * checked, nothing is acknowledged and nothing is sent again. A message
 * that lost a packet cannot be repaired, so it is dropped whole, silently,
 * and the responder resynchronises on the next First or Only packet,
 * whatever its PSN (responder error class D1, 9.9.3.1). The receive WQE the
 * dropped message had begun to fill is kept for the next message: no
 * completion ever reports data that did not arrive, and the requester,
 * which completed its send when the packets left, is not told.
 */
#include <stddef.h>

#include "psn.h"
#include "qp.h"
#include "uc.h"

/* Abandon the open message; later packets are discarded until a message starts. */
void ur_uc_drop_message(struct ur_qp *qp)
{
	struct ur_responder *rs = &qp->resp;

	rs->in_msg = 0;
	rs->msg_off = 0; /* a kept receive WQE is filled again from its start */
	rs->uc_drop = true;
}

/*
 * Whether a UC request packet whose PSN is `d` ahead of the expected one
 * may be executed; counts what it drops. A First or Only packet always
 * starts a new message (rxe, by contrast, also drops the message that
 * follows one interrupted by a loss). A packet at the expected PSN whose
 * opcode does not continue the open message, or continues none, broke its
 * message as surely as a gap: UC has no NAK for it (9.8.3), so it goes the
 * same way.
 */
bool ur_uc_accept(struct ur_qp *qp, const struct ur_pkt *pkt, int32_t d)
{
	struct ur_responder *rs = &qp->resp;
	bool starts = pkt->op->pos & UR_POS_FIRST;
	bool in_sequence = rs->in_msg ? pkt->op->kind == rs->in_msg && !starts : starts;

	if (d == 0 && !rs->uc_drop && in_sequence)
		return true;
	/* a packet went missing inside the open message, or inside this one */
	if (!rs->uc_drop && (rs->in_msg || !starts))
		ur_count(qp->dev, UR_CTR_rx_drop_uc_message);
	ur_uc_drop_message(qp);
	if (!starts) {
		ur_count(qp->dev, UR_CTR_rx_drop_uc_resync);
		return false;
	}
	rs->uc_drop = false;
	rs->epsn = pkt->psn;
	return true;
}
