/* SPDX-License-Identifier: BSD-2-Clause */
/* Datagrams (ud.c). Internal. */
#ifndef UR_UD_H
#define UR_UD_H

#include "qp.h"

void ur_ud_prepare(struct ur_qp *qp, const struct ur_send_wqe *w);
void ur_ud_fill_deth(struct ur_qp *qp, const struct ur_send_wqe *w, struct ur_deth *deth);
void ur_ud_resp_rx(struct ur_qp *qp, const struct ur_pkt *pkt);

#endif
