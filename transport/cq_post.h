/* SPDX-License-Identifier: BSD-2-Clause */
/* Completion posting (cq_post.c). Internal. */
#ifndef UR_CQ_POST_H
#define UR_CQ_POST_H

#include "queue.h"

struct ur_qp;

/* Post a CQE for one of the QP's queues; -ENOSPC (and a CQ error event) on overrun. */
int ur_qp_post_cqe(struct ur_qp *qp, struct ur_cq *cq, const struct ur_cqe *cqe);

#endif
