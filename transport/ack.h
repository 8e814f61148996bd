/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The responder's pending ACK or NAK and its hold for the answer (ack.c),
 * and the packet that carries it (ack_out.c). Internal.
 */
#ifndef UR_ACK_H
#define UR_ACK_H

#include "qp.h"

void ur_resp_schedule_ack(struct ur_qp *qp, uint8_t syndrome, uint32_t psn);
void ur_resp_ack_message(struct ur_qp *qp, uint32_t psn);
void ur_ack_hold_answered(struct ur_qp *qp);
void ur_ack_hold_start(struct ur_qp *qp);
void ur_ack_hold_answer_sent(struct ur_qp *qp);
int ur_ack_hold_send_ahead(struct ur_qp *qp);
/* ack_out.c */
int ur_ack_emit(struct ur_qp *qp);
/* The consumer takes qp out of service: send the ACK it holds back first. */
void ur_ack_flush_owed(struct ur_qp *qp);

#endif
