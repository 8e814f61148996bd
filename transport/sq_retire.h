/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Retiring send WQEs (sq_retire.c): CQEs for the finished ones in order, the
 * flush of the rest. Internal.
 */
#ifndef UR_SQ_RETIRE_H
#define UR_SQ_RETIRE_H

#include "qp.h"

bool ur_sq_retire_done(struct ur_qp *qp);
void ur_sq_flush(struct ur_qp *qp);

#endif
