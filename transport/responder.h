/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Between the responder's two halves: the receive pipeline (responder.c)
 * claims READ/atomic resources that the transmit side (responder_tx.c)
 * answers from; and the responder's entry points, for the device. Internal.
 */
#ifndef UR_RESPONDER_H
#define UR_RESPONDER_H

#include "qp.h"

/* responder.c */
void ur_resp_rx(struct ur_qp *qp, const struct ur_pkt *pkt, uint64_t now);
const char *ur_resp_state_name(unsigned state); /* the receive pipeline's steps */
void ur_resp_class_c_error(struct ur_qp *qp, const struct ur_pkt *pkt, uint8_t nak,
			   const char *why);
void ur_resp_rnr_nak(struct ur_qp *qp);
int ur_resp_emit(struct ur_qp *qp, unsigned *budget);
bool ur_resp_has_work(struct ur_qp *qp);

/* Claim the next READ/atomic resource; NULL when the requester exceeded max_dest_rd_atomic. */
struct ur_resp_res *ur_resp_alloc_res(struct ur_qp *qp);
/* Answer resource `i` again (a duplicate READ or atomic). */
void ur_resp_replay_from(struct ur_qp *qp, uint32_t i);
/* Move the head past resources answered in full. */
void ur_resp_skip_finished(struct ur_responder *rs);

#endif
