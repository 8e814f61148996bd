/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Doorbells rung by application threads: a lock-free stack per device that
 * the engine empties with one exchange, so a poster never waits for the
 * engine. The engine's side (what a rung QP needs) is in device.c.
 */
#include "doorbell.h"
#include "qp.h"

void ur_qp_doorbell(struct ur_qp *qp)
{
	struct ur_dev *dev = qp->dev;
	struct ur_qp *head;

	/* Only one push per QP until the engine pops it (db_flag). */
	if (atomic_exchange_explicit(&qp->db_flag, 1, memory_order_acq_rel))
		return;
	head = atomic_load_explicit(&dev->db_head, memory_order_relaxed);
	do {
		qp->db_next = head;
	} while (!atomic_compare_exchange_weak_explicit(
	    &dev->db_head, &head, qp, memory_order_release, memory_order_relaxed));
}

struct ur_qp *ur_doorbell_take_all(struct ur_dev *dev)
{
	/* Acquire pairs with the release push: db_next links are visible. */
	return atomic_exchange_explicit(&dev->db_head, NULL, memory_order_acquire);
}

void ur_doorbell_forget(struct ur_dev *dev, struct ur_qp *qp)
{
	struct ur_qp *list = atomic_exchange(&dev->db_head, NULL), *keep = NULL;

	while (list) {
		struct ur_qp *next = list->db_next;

		if (list != qp) {
			list->db_next = keep;
			keep = list;
		}
		list = next;
	}
	while (keep) {
		struct ur_qp *next = keep->db_next;

		atomic_store(&keep->db_flag, 0);
		ur_qp_doorbell(keep);
		keep = next;
	}
}
