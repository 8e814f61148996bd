/* SPDX-License-Identifier: BSD-2-Clause */
/* The device's QP number -> QP map. Internal. */
#ifndef UR_QP_TABLE_H
#define UR_QP_TABLE_H

#include <stdint.h>

struct ur_dev;
struct ur_qp;

struct ur_qp *ur_dev_find_qp(const struct ur_dev *dev, uint32_t qpn);
int ur_dev_add_qp(struct ur_dev *dev, struct ur_qp *qp);
void ur_dev_del_qp(struct ur_dev *dev, struct ur_qp *qp);

#endif
