/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Receive WQEs at the responder: taking the next one from the RQ or the
 * SRQ, and scattering payload into its buffers. Every service (RC in both
 * retransmission modes, UC, UD) lands its data here, and nothing here calls
 * back into the roles that use it.
 */
#include <string.h>

#include "qp.h"
#include "recv_wqe.h"

static struct ur_wq *recv_queue(struct ur_qp *qp)
{
	return qp->srq ? &qp->srq->wq : &qp->rq;
}

/* Take the next receive WQE from the SRQ or the RQ, copied into `dst`. */
bool ur_resp_take_rwqe(struct ur_qp *qp, struct ur_recv_wqe *dst)
{
	struct ur_wq *wq = recv_queue(qp);
	uint32_t cons = atomic_load_explicit(&wq->cons, memory_order_relaxed);
	uint32_t prod = atomic_load_explicit(&wq->prod, memory_order_acquire);
	const struct ur_recv_wqe *slot;

	if (cons == prod)
		return false;
	slot = ur_wq_slot(wq, cons);
	/* never more SGEs than this QP's copies hold: a poster may lie in its slot */
	memcpy(dst, slot,
	       sizeof(*slot) + UR_MIN(slot->num_sge, qp->max_recv_sge) * sizeof(struct ur_sge));
	dst->num_sge = UR_MIN(slot->num_sge, qp->max_recv_sge);
	/* Release: the slot is copied, the poster may reuse it. */
	atomic_store_explicit(&wq->cons, cons + 1, memory_order_release);
	qp->resp.rq_taken++;
	if (qp->srq && qp->srq->limit && prod - (cons + 1) < qp->srq->limit) {
		struct ur_srq *srq = qp->srq;

		srq->limit = 0; /* one event per arming (11.4.2.1) */
		if (qp->dev->ops->async_event)
			qp->dev->ops->async_event(qp->dev->host, UR_EVENT_SRQ_LIMIT_REACHED,
						  srq->host_ctx);
	}
	return true;
}

/*
 * Whether the next message in order has a receive WQE, without taking one:
 * one taken from the queue and not completed (selective repeat takes them
 * ahead for messages that come early; a go-back-N message begun before the
 * agreement then finds its own there), or one still posted.
 */
bool ur_resp_rwqe_available(struct ur_qp *qp)
{
	struct ur_wq *wq = recv_queue(qp);

	return qp->resp.rq_taken != qp->resp.rq_done ||
	       atomic_load_explicit(&wq->cons, memory_order_relaxed) !=
		       atomic_load_explicit(&wq->prod, memory_order_acquire);
}

/* Place payload into a receive WQE's buffers at `off` (needs LOCAL_WRITE). */
int ur_resp_scatter(struct ur_qp *qp, const struct ur_recv_wqe *r, uint32_t off, const uint8_t *src,
		    uint32_t len)
{
	for (unsigned i = 0; i < r->num_sge && len; i++) {
		const struct ur_sge *s = &r->sge[i];
		struct ur_mr *mr;
		uint32_t n;

		if (off >= s->length) {
			off -= s->length;
			continue;
		}
		n = UR_MIN(len, s->length - off);
		if (ur_mr_check(&qp->dev->mrs, s->lkey, qp->pd, s->addr + off, n,
				UR_ACCESS_LOCAL_WRITE, &mr))
			return -1;
		memcpy(ur_mr_ptr(mr, s->addr + off), src, n);
		src += n;
		len -= n;
		off = 0;
	}
	return len ? -1 : 0;
}

/* Complete the open message's receive WQE (rs->rwqe), with the packet that ended it if any. */
void ur_resp_complete_recv(struct ur_qp *qp, enum ur_wc_status status, uint8_t opcode,
			   uint32_t byte_len, const struct ur_pkt *pkt)
{
	struct ur_responder *rs = &qp->resp;
	struct ur_cq *cq;
	struct ur_cqe cqe = {
	    .wr_id = rs->rwqe->wr_id,
	    .status = status,
	    .opcode = opcode,
	    .byte_len = byte_len,
	    .qp_num = qp->qpn,
	    .src_qp = qp->attr.dest_qp_num,
	};

	if (pkt && (pkt->op->hdrs & UR_HDR_IMMDT)) {
		cqe.wc_flags |= UR_WC_WITH_IMM;
		cqe.imm = ur_immdt_raw((const struct ur_immdt *)((const uint8_t *)pkt->bth +
								 pkt->op->off_immdt));
	}
	if (pkt && (pkt->op->hdrs & UR_HDR_IETH)) {
		cqe.wc_flags |= UR_WC_WITH_INV;
		cqe.imm = ur_ieth_rkey((const struct ur_ieth *)((const uint8_t *)pkt->bth +
								pkt->op->off_ieth));
	}
	if (pkt)
		cqe.solicited = ur_bth_se(pkt->bth);
	if (status != UR_WC_SUCCESS)
		ur_count(qp->dev, status == UR_WC_WR_FLUSH_ERR ? UR_CTR_resp_cqe_flush_error
							       : UR_CTR_resp_cqe_error);
	rs->have_rwqe = false;
	rs->rq_done++;
	/* an XRC SRQ's receives complete on its own CQ, whichever QP took them
	 * (none left when the SRQ was destroyed under an open message) */
	cq = qp->srq && qp->srq->cq ? qp->srq->cq : qp->rcq;
	if (cq)
		ur_qp_post_cqe(qp, cq, &cqe);
}
