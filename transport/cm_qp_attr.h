/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The RC QP attributes a connection's REQ and REP settle, for INIT, RTR and
 * RTS, as Linux's ib_cm_init_qp_attr() (with rdma_cm's accept parameters)
 * gives them to the kernel's QPs. The P_Key index, port and address vector
 * are the caller's.
 */
#ifndef UR_CM_QP_ATTR_H
#define UR_CM_QP_ATTR_H

#include <stdbool.h>
#include <stdint.h>

#include "cm_mad.h"

struct ur_cm_qp_attr {
	/* INIT: remote WRITE always; READ and atomics when we take any (responder resources) */
	bool remote_read_atomic;
	/* RTR */
	uint8_t path_mtu; /* IB MTU enum: 1 = 256 ... 5 = 4096 */
	uint32_t dest_qpn;
	uint32_t rq_psn;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer; /* 0, as Linux's CM leaves it */
	/* RTS */
	uint32_t sq_psn;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t max_rd_atomic;
	uint8_t timeout; /* local ACK timeout exponent */
};

/*
 * Linux's cm_ack_timeout(): the exponent closest above 4.096 us x
 * (2^ack_delay + 2 x 2^packet_life_time), never more than 31.
 */
uint8_t ur_cm_ack_timeout(uint8_t ca_ack_delay, uint8_t packet_life_time);

/*
 * Active side: the REQ it sent, the REP it received, its path's packet
 * lifetime. Each side sends from the PSN the other's message announced
 * and takes as many READs as the other's initiator depth.
 */
void ur_cm_qp_attr_active(const struct ur_cm_req *req, const struct ur_cm_rep *rep,
			  uint8_t packet_life_time, struct ur_cm_qp_attr *a);
/* Passive side: the REQ it received, the REP it sent (rdma_accept()'s parameters). */
void ur_cm_qp_attr_passive(const struct ur_cm_req *req, const struct ur_cm_rep *rep,
			   struct ur_cm_qp_attr *a);

#endif
