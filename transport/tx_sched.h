/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The transmit scheduler (tx_sched.c): the round robin of QPs with something
 * to send, and the device-wide cap on unacknowledged packets. Internal.
 */
#ifndef UR_TX_SCHED_H
#define UR_TX_SCHED_H

#include <stdbool.h>

struct ur_dev;
struct ur_qp;

/* Put a QP on the transmit round robin if it is not there yet. */
void ur_dev_schedule(struct ur_dev *dev, struct ur_qp *qp);
void ur_dev_unschedule(struct ur_dev *dev, struct ur_qp *qp);
/* Bring dev->inflight up to date with the QP's unacknowledged packets. */
void ur_dev_account(struct ur_dev *dev, struct ur_qp *qp);
/* Whether the QP may send a new packet now; if not, it waits for room. */
bool ur_dev_room(struct ur_dev *dev, struct ur_qp *qp);
/* The transmit loop's side: the next QP to serve, or NULL; one to serve first again. */
struct ur_qp *ur_sched_pop(struct ur_dev *dev);
void ur_sched_push_front(struct ur_dev *dev, struct ur_qp *qp);

#endif
