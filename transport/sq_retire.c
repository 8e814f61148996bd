/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Retiring send WQEs: CQEs for the finished ones, oldest first, and the
 * flush that finishes all the others (10.3.1.2). The completer decides when
 * a WQE is done; this is what every path that finishes WQEs shares.
 */
#include "psn.h"
#include "qp.h"
#include "sq_retire.h"
#include "wr_opcode.h"

/*
 * Post CQEs for finished WQEs from the oldest on, in order, and give their
 * slots back to the poster. Returns true if anything retired.
 */
bool ur_sq_retire_done(struct ur_qp *qp)
{
	struct ur_requester *rq = &qp->req;
	uint32_t prod = sq_prod(qp);
	bool any = false;

	while (rq->comp != prod) {
		struct ur_send_wqe *w = sq_wqe(qp, rq->comp);
		bool report;
		struct ur_cqe cqe;

		if (w->state != UR_WQE_DONE)
			break;
		report = w->signaled || w->status != UR_WC_SUCCESS;
		if (report) {
			cqe = (struct ur_cqe){
				.wr_id = w->wr_id,
				.status = w->status,
				.opcode = ur_wr_opcode_get(w->opcode)->wc_opcode,
				.qp_num = qp->qpn,
				.byte_len = w->opcode == UR_WR_RDMA_READ ? w->length
					    : wqe_is_rd_atomic(w)       ? 8
									: w->length,
			};
		}
		/* A rewind to this WQE raced its last answer: the requester is
		 * about to send it again. It moves past first, as past any WQE
		 * done before a rewind (keeping its PSNs): once retired the slot
		 * is the poster's, and a WQE posted into it would go out with
		 * this one's PSNs, a duplicate the responder answers with the
		 * old READ's data. */
		if (rq->wqe == rq->comp) {
			if (!ur_wr_has(w->opcode, UR_WRF_LOCAL)) {
				rq->psn = ur_psn_add(w->first_psn, w->npkts);
				rq->off = 0;
			}
			rq->wqe++;
		}
		rq->comp++;
		/* Release the slot before the completion shows: an application
		 * woken by the CQE may post into it at once. */
		atomic_store_explicit(&qp->sq.cons, rq->comp, memory_order_release);
		if (report)
			ur_qp_post_cqe(qp, qp->scq, &cqe);
		any = true;
	}
	return any;
}

/* The QP entered the error state: every unfinished send WQE flushes (10.3.1.2). */
void ur_sq_flush(struct ur_qp *qp)
{
	uint32_t prod = sq_prod(qp);

	for (uint32_t idx = qp->req.comp; idx != prod; idx++) {
		struct ur_send_wqe *w = sq_wqe(qp, idx);

		if (w->state == UR_WQE_DONE)
			continue;
		w->state = UR_WQE_DONE;
		w->status = UR_WC_WR_FLUSH_ERR;
		ur_count(qp->dev, UR_CTR_req_cqe_flush_error);
	}
	qp->req.rd_out = 0;
	qp->req.wqe = prod;
	ur_sq_retire_done(qp);
}
