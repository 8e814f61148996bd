/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The error state (10.3.1.2): a QP enters it on the consumer's modify or on
 * a transport error any role detects; every outstanding WQE completes with
 * a flush. Below the roles: it calls none of them back but the responder's
 * flush of its receive side.
 */
#include "qp.h"
#include "sr.h"

/* The QP's own timers (congestion control and selective repeat keep theirs). */
void ur_qp_cancel_timers(struct ur_qp *qp)
{
	struct ur_timer_heap *h = &qp->dev->timers;

	ur_timer_cancel(h, &qp->req.retx);
	ur_timer_cancel(h, &qp->req.rnr);
	ur_timer_cancel(h, &qp->pace);
	ur_timer_cancel(h, &qp->resp.ack.hold);
}

/* Enter the error state: complete every outstanding WQE with a flush (10.3.1.2). */
void ur_qp_to_error(struct ur_qp *qp, bool fatal)
{
	struct ur_dev *dev = qp->dev;
	enum ur_qp_state prev = qp_state(qp);

	atomic_store_explicit(&qp->state, UR_QPS_ERR, memory_order_relaxed);
	ur_dev_account(dev, qp);
	ur_qp_cancel_timers(qp);
	ur_cc_stop(qp);
	if (qp->sr) {
		ur_timer_cancel(&dev->timers, &qp->sr->hello_timer);
		ur_timer_cancel(&dev->timers, &qp->sr->rto);
	}
	ur_dev_unschedule(dev, qp);
	qp->resp.error = false;
	ur_sq_flush(qp);
	ur_resp_flush(qp);
	if (prev != UR_QPS_ERR && prev != UR_QPS_RESET && dev->ops->async_event) {
		/* an SRQ consumer learns that no more WQEs will be taken (11.6.3) */
		if (qp->srq)
			dev->ops->async_event(dev->host, UR_EVENT_QP_LAST_WQE_REACHED, qp->host_ctx);
		if (fatal)
			dev->ops->async_event(dev->host, UR_EVENT_QP_FATAL, qp->host_ctx);
	}
}
