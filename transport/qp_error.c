/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The error state (10.3.1.2): a QP enters it on the consumer's modify or on
 * a transport error any role detects; every outstanding WQE completes with
 * a flush. Below the roles: it calls none of them back.
 */
#include "peer.h"
#include "qp.h"
#include "qp_error.h"
#include "recv_wqe.h"
#include "rtx.h"
#include "sq_retire.h"

/* The QP's own timers (congestion control and selective repeat keep theirs). */
void ur_qp_cancel_timers(struct ur_qp *qp)
{
	struct ur_timer_heap *h = &qp->dev->timers;

	ur_timer_cancel(h, &qp->req.retx);
	ur_timer_cancel(h, &qp->req.rnr);
	ur_timer_cancel(h, &qp->pace);
	ur_timer_cancel(h, &qp->resp.ack.hold);
}

/* The responder's side of the error state: nothing more is owed, and the
 * receive queue flushes (not an SRQ, 10.3.1.2). */
void ur_rq_flush(struct ur_qp *qp)
{
	struct ur_responder *rs = &qp->resp;

	for (uint32_t i = 0; i < rs->nres; i++)
		rs->res[i].pending = false;
	rs->ack.pending = false;
	qp->cc.cnp_due = false;
	if (rs->have_rwqe)
		ur_resp_complete_recv(qp, UR_WC_WR_FLUSH_ERR, UR_WC_RECV, 0, NULL);
	qp->rtx->flush_rwqes(qp);
	if (qp->srq)
		return;
	/* (selective repeat's WQEs taken ahead are flushed above: each one
	 * taken now is the next in order) */
	while (ur_resp_take_rwqe(qp, rs->rwqe)) {
		rs->have_rwqe = true;
		rs->msg_off = 0;
		ur_resp_complete_recv(qp, UR_WC_WR_FLUSH_ERR, UR_WC_RECV, 0, NULL);
	}
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
	qp->rtx->stop_timers(qp);
	ur_dev_unschedule(dev, qp);
	ur_peer_uncap(qp);
	qp->resp.error = false;
	ur_sq_flush(qp);
	ur_rq_flush(qp);
	if (prev != UR_QPS_ERR && prev != UR_QPS_RESET && dev->ops->async_event) {
		/* an SRQ consumer learns that no more WQEs will be taken (11.6.3);
		 * an XRC target takes from whichever SRQ a request names */
		if (qp->srq && !qp->svc->xrc_tgt)
			dev->ops->async_event(dev->host, UR_EVENT_QP_LAST_WQE_REACHED, qp->host_ctx);
		if (fatal)
			dev->ops->async_event(dev->host, UR_EVENT_QP_FATAL, qp->host_ctx);
	}
}
