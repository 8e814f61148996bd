/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The transmit scheduler: QPs with something to send wait on a round robin
 * (those over their peer's cap on unacknowledged packets wait in peer.c
 * instead: whoever takes a QP off here takes it off that wait too, with
 * ur_peer_uncap). Every role puts QPs here; only the transmit loop
 * (device.c) takes them off.
 */
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

void ur_dev_unschedule(struct ur_dev *dev, struct ur_qp *qp)
{
	struct ur_qp **pp = &dev->ready_head, *prev = NULL;

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
