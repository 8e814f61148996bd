/* SPDX-License-Identifier: BSD-2-Clause */
/* Assembling one outgoing packet of a QP into a buffer lent by the host. */
#include <errno.h>
#include <string.h>

#include "icrc.h"
#include "packet_out.h"
#include "qp.h"

#define UR_DEFAULT_PKEY 0xffff

int ur_pkt_begin(struct ur_qp *qp, struct ur_pkt_out *o, uint8_t opcode, uint32_t psn,
		 uint32_t ext_len)
{
	struct ur_dev *dev = qp->dev;
	const struct ur_opcode_info *op = ur_opcode_get(opcode);
	struct ur_bth *bth;

	o->discard = !ur_qp_tx_av(qp)->resolved;
	o->discard_why = UR_CTR_tx_no_neighbour;
	o->buf.hold_ns = 0;
	if (!o->discard) {
		if (ur_unlikely(dev->ops->tx_get(dev->host, &o->buf))) {
			ur_count(dev, UR_CTR_tx_no_buffer);
			return -ENOBUFS;
		}
		/* a host whose buffers cannot hold a packet at the path MTU (a
		 * bug, or a port set up too small) never has us write past
		 * them: the packet is lost, counted, and RC's timeout ends the
		 * QP with an error completion, as on a link that drops it */
		if (ur_unlikely(o->buf.cap < qp->tmpl.len + op->hdr_len + ext_len + UR_ICRC_SIZE +
						 (op->payload ? qp->mtu : 0))) {
			dev->ops->tx_put(dev->host, &o->buf, 0);
			o->discard = true;
			o->discard_why = UR_CTR_tx_buffer_too_small;
		}
	}
	if (ur_unlikely(o->discard)) {
		o->buf.data = dev->scratch;
		o->buf.cap = sizeof(dev->scratch);
		o->buf.cookie = NULL;
	}
	o->hdr_len = qp->tmpl.len;
	o->ext_len = ext_len;
	o->payload_src = NULL;
	o->bth = o->buf.data + o->hdr_len;
	/* Zero every header byte so nothing from an earlier frame in this buffer leaks. */
	memset(o->bth, 0, op->hdr_len + ext_len);
	bth = (struct ur_bth *)o->bth;
	ur_bth_set_opcode(bth, opcode);
	ur_bth_set_pkey(bth, UR_DEFAULT_PKEY);
	ur_bth_set_sr(bth, ext_len != 0);
	ur_bth_set_dqpn(bth, qp->attr.dest_qp_num);
	ur_bth_set_psn(bth, psn);
	return 0;
}

uint32_t ur_pkt_finish(struct ur_qp *qp, struct ur_pkt_out *o, uint8_t tos, uint32_t payload_len)
{
	struct ur_dev *dev = qp->dev;
	const struct ur_opcode_info *op = ur_opcode_get(o->bth[0]);
	uint32_t pad = (4 - (payload_len & 3)) & 3;
	uint8_t *end = o->bth + op->hdr_len + o->ext_len + payload_len;
	uint32_t roce_len = op->hdr_len + o->ext_len + payload_len + pad + UR_ICRC_SIZE;
	uint32_t frame_len = o->hdr_len + roce_len;

	ur_bth_set_padcnt((struct ur_bth *)o->bth, pad);
	if (ur_unlikely(o->discard)) {
		ur_count(dev, (enum ur_counter)o->discard_why);
		return 0;
	}
	memset(end, 0, pad);
	ur_frame_tmpl_emit(&qp->tmpl, o->buf.data, roce_len, tos, qp->ip_id++);
	ur_frame_seal_copy(&qp->tmpl, o->buf.data, frame_len, end - payload_len,
			   o->payload_src, o->payload_src ? payload_len : 0);
	ur_count(dev, UR_CTR_tx_packets);
	ur_count_n(dev, UR_CTR_tx_bytes, frame_len);
	dev->ops->tx_put(dev->host, &o->buf, frame_len);
	if (o->buf.hold_ns) {
		/* UC and UD have no window that would stop a sender whose
		 * receiver falls behind; the pacer's wait does. The pace timer
		 * gives the QP its turn back: armed here, since a role whose
		 * turn ends on this packet may not look at next_tx_ns again
		 * (a READ responder's last response of its quantum) */
		qp->next_tx_ns = UR_MAX(qp->next_tx_ns, dev->now + o->buf.hold_ns);
		if (!ur_timer_armed(&qp->pace))
			ur_timer_arm(&dev->timers, &qp->pace, qp->next_tx_ns);
		ur_count(dev, UR_CTR_tx_held_for_receiver);
	}
	return frame_len;
}

void ur_pkt_abort(struct ur_qp *qp, struct ur_pkt_out *o)
{
	if (!o->discard)
		qp->dev->ops->tx_put(qp->dev->host, &o->buf, 0);
}
