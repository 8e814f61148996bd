/* SPDX-License-Identifier: BSD-2-Clause */
/* One-line explanations for the host's log (engine_log.c). Internal. */
#ifndef UR_ENGINE_LOG_H
#define UR_ENGINE_LOG_H

struct ur_dev;
struct ur_qp;

__attribute__((format(printf, 2, 3))) void ur_dev_log(struct ur_dev *dev, const char *fmt, ...);
/* The first error of a QP, once (until the QP is reset). */
void ur_qp_log_error(struct ur_qp *qp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
