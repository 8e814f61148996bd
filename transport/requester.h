/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The requester (requester.c): send WQEs into request packets, the IBTA ACK
 * timeout, the RNR wait and IRN's retransmission timeout. Internal.
 */
#ifndef UR_REQUESTER_H
#define UR_REQUESTER_H

#include "qp.h"

int ur_req_emit(struct ur_qp *qp, uint64_t now, unsigned *budget);
void ur_req_rewind(struct ur_qp *qp, uint32_t psn);
/* Selective repeat: READ responses up to PSN `high` were sent, some did not come
 * (`late`: maybe only reordered); true when this is news (no wait already running). */
bool ur_req_read_missing(struct ur_qp *qp, uint32_t high, bool late, uint64_t now);
/* Selective repeat: the oldest READ/atomic sent and not answered yet, or NULL. */
struct ur_send_wqe *ur_req_sr_read_waiting(struct ur_qp *qp);
bool ur_req_has_work(struct ur_qp *qp);
/* Whether `psn` belongs to a READ or atomic in flight. */
bool ur_req_psn_is_rd_atomic(struct ur_qp *qp, uint32_t psn);
/* The PSN belongs to a message framed for go-back-N (begun before SR was agreed). */
bool ur_req_psn_is_gbn(struct ur_qp *qp, uint32_t psn);
void ur_req_retx_timer(struct ur_qp *qp, uint64_t now);
void ur_req_rnr_timer(struct ur_qp *qp, uint64_t now);
void ur_req_sr_rto_timer(struct ur_qp *qp, uint64_t now);

#endif
