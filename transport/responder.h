/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Between the responder's two halves: the receive pipeline (responder.c)
 * claims READ/atomic resources that the transmit side (responder_tx.c)
 * answers from. The responder's entry points are declared in qp.h.
 * Internal.
 */
#ifndef UR_RESPONDER_H
#define UR_RESPONDER_H

#include "qp.h"

/* Claim the next READ/atomic resource; NULL when the requester exceeded max_dest_rd_atomic. */
struct ur_resp_res *ur_resp_alloc_res(struct ur_qp *qp);
/* Answer resource `i` again (a duplicate READ or atomic). */
void ur_resp_replay_from(struct ur_qp *qp, uint32_t i);
/* Move the head past resources answered in full. */
void ur_resp_skip_finished(struct ur_responder *rs);

#endif
