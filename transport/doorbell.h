/* SPDX-License-Identifier: BSD-2-Clause */
/* The engine's side of the doorbell stack (doorbell.c). Internal. */
#ifndef UR_DOORBELL_H
#define UR_DOORBELL_H

struct ur_dev;
struct ur_qp;

/* Every QP rung since the last call, linked through db_next. */
struct ur_qp *ur_doorbell_take_all(struct ur_dev *dev);
/* Take a QP that is going away off the stack; the others stay rung. */
void ur_doorbell_forget(struct ur_dev *dev, struct ur_qp *qp);

#endif
