/* SPDX-License-Identifier: BSD-2-Clause */
#include <string.h>

#include "cm_qp_attr.h"

uint8_t ur_cm_ack_timeout(uint8_t ca_ack_delay, uint8_t packet_life_time)
{
	int t = packet_life_time + 1; /* a round trip: twice the lifetime */

	/* the larger of the two, one more when the other is within a factor of 2 */
	if (t >= ca_ack_delay)
		t += ca_ack_delay >= t - 1;
	else
		t = ca_ack_delay + (t >= ca_ack_delay - 1);
	return (uint8_t)(t < 31 ? t : 31);
}

void ur_cm_qp_attr_active(const struct ur_cm_req *req, const struct ur_cm_rep *rep,
			  uint8_t packet_life_time, struct ur_cm_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->remote_read_atomic = req->responder_resources > 0;
	a->path_mtu = req->path_mtu;
	a->dest_qpn = rep->local_qpn;
	a->rq_psn = req->starting_psn;
	a->max_dest_rd_atomic = rep->initiator_depth;
	a->sq_psn = rep->starting_psn;
	a->retry_cnt = req->retry_count;
	a->rnr_retry = rep->rnr_retry_count; /* the passive side says how patient to be */
	a->max_rd_atomic = rep->responder_resources;
	/* Linux's cm_rep_handler(): the REP's target ACK delay against our lifetime */
	a->timeout = ur_cm_ack_timeout(rep->target_ack_delay, packet_life_time);
}

void ur_cm_qp_attr_passive(const struct ur_cm_req *req, const struct ur_cm_rep *rep,
			   struct ur_cm_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->remote_read_atomic = rep->responder_resources > 0;
	a->path_mtu = req->path_mtu;
	a->dest_qpn = req->local_qpn;
	a->rq_psn = rep->starting_psn;
	a->max_dest_rd_atomic = rep->responder_resources;
	a->sq_psn = req->starting_psn;
	a->retry_cnt = req->retry_count;
	a->rnr_retry = req->rnr_retry_count;
	a->max_rd_atomic = rep->initiator_depth;
	/*
	 * Linux takes the path's lifetime as the REQ's Local ACK Timeout less
	 * one and its own timeout as that lifetime plus one.
	 */
	a->timeout = req->primary.local_ack_timeout ? req->primary.local_ack_timeout : 1;
}
