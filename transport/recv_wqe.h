/* SPDX-License-Identifier: BSD-2-Clause */
/* Receive WQEs (recv_wqe.c): taken from the RQ or SRQ, filled, completed. Internal. */
#ifndef UR_RECV_WQE_H
#define UR_RECV_WQE_H

#include "qp.h"

bool ur_resp_take_rwqe(struct ur_qp *qp, struct ur_recv_wqe *dst);
void ur_resp_complete_recv(struct ur_qp *qp, enum ur_wc_status status, uint8_t opcode,
			   uint32_t byte_len, const struct ur_pkt *pkt);
bool ur_resp_rwqe_available(struct ur_qp *qp);
int ur_resp_scatter(struct ur_qp *qp, const struct ur_recv_wqe *r, uint32_t off,
		    const uint8_t *src, uint32_t len);

#endif
