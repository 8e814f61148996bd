/* SPDX-License-Identifier: BSD-2-Clause */
/* Completion posting: a CQE into a CQ's ring, and the event an armed CQ raises. */
#include <errno.h>

#include "qp.h"

int ur_qp_post_cqe(struct ur_qp *qp, struct ur_cq *cq, const struct ur_cqe *cqe)
{
	uint32_t prod = atomic_load_explicit(&cq->prod, memory_order_relaxed);
	uint32_t cons = atomic_load_explicit(&cq->cons, memory_order_acquire);
	uint32_t arm;

	if (prod - cons > cq->mask) {
		/* CQ overrun is a fatal CQ error on hardware too (11.4.2.1) */
		ur_count(qp->dev, UR_CTR_cq_overflow);
		if (qp->dev->ops->async_event)
			qp->dev->ops->async_event(qp->dev->host, UR_EVENT_CQ_ERR, cq->host_ctx);
		return -ENOSPC;
	}
	cq->ring[prod & cq->mask] = *cqe;
	if (cq->ts) {
		/* the time of the engine call that completed it, on the host's clock */
		if (qp->dev->now > cq->ts_last)
			cq->ts_last = qp->dev->now;
		cq->ts[prod & cq->mask] = cq->ts_last;
	}
	/* Release: a poller that sees the new index sees the whole CQE. */
	atomic_store_explicit(&cq->prod, prod + 1, memory_order_release);
	/* Store-load ordering with the arming thread, which stores the arm and
	 * then polls: one of us must see the other's store, or a completion
	 * would raise no event and find no poller (both sides seq_cst). */
	atomic_thread_fence(memory_order_seq_cst);
	arm = atomic_load_explicit(&cq->arm, memory_order_acquire);
	if (arm == UR_CQ_ARM_NEXT ||
	    (arm == UR_CQ_ARM_SOLICITED && (cqe->solicited || cqe->status != UR_WC_SUCCESS))) {
		if (atomic_compare_exchange_strong(&cq->arm, &arm, UR_CQ_ARM_NONE) &&
		    qp->dev->ops->cq_event)
			qp->dev->ops->cq_event(qp->dev->host, cq);
	}
	return 0;
}
