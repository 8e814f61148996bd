/* SPDX-License-Identifier: BSD-2-Clause */
/* Building a packet (packet_out.c), for every role that sends. Internal. */
#ifndef UR_PACKET_OUT_H
#define UR_PACKET_OUT_H

#include "qp.h"

struct ur_pkt_out {
	struct ur_txbuf buf;
	uint8_t *bth;     /* where the BTH starts in the frame */
	uint32_t hdr_len; /* L2-L4 prefix length */
	uint32_t ext_len; /* SR extension bytes after the IBTA headers */
	/* built into scratch, not sent, counted as discard_why: no destination
	 * MAC yet, or a port buffer too short for a packet at the path MTU */
	bool discard;
	uint16_t discard_why; /* enum ur_counter */
	/* payload still to be copied into place by ur_pkt_finish(), or NULL */
	const void *payload_src;
};
/* Start a packet; `ext_len` > 0 marks it SR and reserves its extension (zeroed). */
int ur_pkt_begin(struct ur_qp *qp, struct ur_pkt_out *o, uint8_t opcode, uint32_t psn,
		 uint32_t ext_len);
static inline uint8_t *ur_pkt_ext(struct ur_pkt_out *o)
{
	return o->bth + ur_opcode_get(o->bth[0])->hdr_len;
}
static inline uint8_t *ur_pkt_payload(struct ur_pkt_out *o)
{
	return ur_pkt_ext(o) + o->ext_len;
}
/* Seal and hand over a packet; returns its frame length (0 when discarded, above). */
uint32_t ur_pkt_finish(struct ur_qp *qp, struct ur_pkt_out *o, uint8_t tos, uint32_t payload_len);
void ur_pkt_abort(struct ur_qp *qp, struct ur_pkt_out *o);
static inline uint8_t *ur_pkt_hdr(struct ur_pkt_out *o, unsigned off)
{
	return o->bth + off;
}

#endif
