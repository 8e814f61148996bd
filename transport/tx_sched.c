/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The transmit scheduler: QPs with something to send wait on a round robin,
 * and the device-wide cap on unacknowledged packets parks the QPs that may
 * not send more until ACKs make room. Every role puts QPs here; only the
 * transmit loop (device.c) takes them off.
 */
#include "psn.h"
#include "qp.h"

void ur_dev_schedule(struct ur_dev *dev, struct ur_qp *qp)
{
	if (qp->in_ready)
		return;
	qp->in_ready = true;
	qp->ready_next = NULL;
	if (dev->ready_tail)
		dev->ready_tail->ready_next = qp;
	else
		dev->ready_head = qp;
	dev->ready_tail = qp;
}

void ur_dev_account(struct ur_dev *dev, struct ur_qp *qp)
{
	enum ur_qp_state st = qp_state(qp);
	int32_t out = 0;
	uint32_t room;

	if (qp->svc->acknowledged && (st == UR_QPS_RTS || st == UR_QPS_SQD || st == UR_QPS_SQE))
		out = UR_MAX(ur_psn_diff(qp->req.psn, qp->req.una), 0);
	dev->inflight += (uint32_t)out - qp->inflight_counted;
	qp->inflight_counted = (uint32_t)out;
	/* Room again: the waiting QPs go back on the round robin, oldest
	 * first, one for each packet there is room for. Waking them all made
	 * a thousand capped QPs each take a turn only to wait again. */
	room = dev->cfg.max_dev_inflight - UR_MIN(dev->inflight, dev->cfg.max_dev_inflight);
	while (dev->capped && room--) {
		struct ur_qp *w = dev->capped;

		dev->capped = w->capped_next;
		if (!dev->capped)
			dev->capped_tail = NULL;
		w->capped = false;
		w->capped_next = NULL;
		ur_dev_schedule(dev, w);
	}
}

bool ur_dev_room(struct ur_dev *dev, struct ur_qp *qp)
{
	if (!qp->svc->acknowledged)
		return true;
	ur_dev_account(dev, qp); /* count what it sent in this turn */
	if (dev->inflight < dev->cfg.max_dev_inflight)
		return true;
	if (!qp->capped) {
		/* FIFO, so every waiting QP gets its turn */
		if (dev->capped_tail)
			dev->capped_tail->capped_next = qp;
		else
			dev->capped = qp;
		dev->capped_tail = qp;
		qp->capped = true;
		qp->capped_next = NULL;
	}
	return false;
}

void ur_dev_unschedule(struct ur_dev *dev, struct ur_qp *qp)
{
	struct ur_qp **pp = &dev->ready_head, *prev = NULL;

	if (qp->capped) {
		struct ur_qp **cp = &dev->capped, *before = NULL;

		while (*cp && *cp != qp) {
			before = *cp;
			cp = &(*cp)->capped_next;
		}
		if (*cp)
			*cp = qp->capped_next;
		if (dev->capped_tail == qp)
			dev->capped_tail = before;
		qp->capped = false;
		qp->capped_next = NULL;
	}
	if (!qp->in_ready)
		return;
	while (*pp && *pp != qp) {
		prev = *pp;
		pp = &(*pp)->ready_next;
	}
	if (*pp) {
		*pp = qp->ready_next;
		if (dev->ready_tail == qp)
			dev->ready_tail = prev;
	}
	qp->in_ready = false;
	qp->ready_next = NULL;
}

struct ur_qp *ur_sched_pop(struct ur_dev *dev)
{
	struct ur_qp *qp = dev->ready_head;

	if (!qp)
		return NULL;
	dev->ready_head = qp->ready_next;
	if (!dev->ready_head)
		dev->ready_tail = NULL;
	qp->in_ready = false;
	qp->ready_next = NULL;
	return qp;
}

void ur_sched_push_front(struct ur_dev *dev, struct ur_qp *qp)
{
	qp->in_ready = true;
	qp->ready_next = dev->ready_head;
	dev->ready_head = qp;
	if (!dev->ready_tail)
		dev->ready_tail = qp;
}
