/* SPDX-License-Identifier: BSD-2-Clause */
/* UC's responder rules (uc.c). Internal. */
#ifndef UR_UC_H
#define UR_UC_H

#include "qp.h"

bool ur_uc_accept(struct ur_qp *qp, const struct ur_pkt *pkt, int32_t d);
void ur_uc_drop_message(struct ur_qp *qp);

#endif
