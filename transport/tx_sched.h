/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The transmit scheduler (tx_sched.c): the round robin of QPs with something
 * to send. Internal.
 */
#ifndef UR_TX_SCHED_H
#define UR_TX_SCHED_H

#include <stdbool.h>

struct ur_dev;
struct ur_qp;

/* Put a QP on the transmit round robin if it is not there yet. */
void ur_dev_schedule(struct ur_dev *dev, struct ur_qp *qp);
/* ...and off it, and off its peer's wait for room. */
void ur_dev_unschedule(struct ur_dev *dev, struct ur_qp *qp);
/* The transmit loop's side: the next QP to serve, or NULL; one to serve first again. */
struct ur_qp *ur_sched_pop(struct ur_dev *dev);
void ur_sched_push_front(struct ur_dev *dev, struct ur_qp *qp);

#endif
