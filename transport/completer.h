/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The completer (completer.c): ACKs, NAKs, READ responses and atomic
 * acknowledgements matched to send WQEs. Internal.
 */
#ifndef UR_COMPLETER_H
#define UR_COMPLETER_H

#include "qp.h"

uint64_t ur_rnr_timeout_ns(unsigned code); /* RNR NAK timer field to nanoseconds (table 45) */
void ur_comp_rx(struct ur_qp *qp, const struct ur_pkt *pkt, uint64_t now);
void ur_comp_wqe_error(struct ur_qp *qp, struct ur_send_wqe *wqe, enum ur_wc_status status);
/* The oldest unacknowledged PSN moves past the PSNs of WQEs done (see
 * completer.c); catch_up is the timeouts' check, counted, true if it moved
 * (progress, no timeout). */
void ur_comp_una_past_done(struct ur_qp *qp, uint64_t now);
bool ur_comp_una_catch_up(struct ur_qp *qp, uint64_t now);

#endif
