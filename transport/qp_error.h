/* SPDX-License-Identifier: BSD-2-Clause */
/* The error state (qp_error.c). Internal. */
#ifndef UR_QP_ERROR_H
#define UR_QP_ERROR_H

#include "qp.h"

/* The QP's own timers stop (congestion control and selective repeat keep theirs). */
void ur_qp_cancel_timers(struct ur_qp *qp);
/* The receive side's flush: nothing owed any more, receive WQEs flushed. */
void ur_rq_flush(struct ur_qp *qp);
/* Enter ERR and flush; `fatal` raises the QP_FATAL event (a transport
 * error, not the consumer's own modify). */
void ur_qp_to_error(struct ur_qp *qp, bool fatal);

#endif
