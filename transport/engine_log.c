/* SPDX-License-Identifier: BSD-2-Clause */
/* One-line explanations for the host's log: a device event, or a QP's first error. */
#include <stdarg.h>
#include <stdio.h>

#include "qp.h"

void ur_dev_log(struct ur_dev *dev, const char *fmt, ...)
{
	char line[256];
	va_list ap;

	if (!dev->ops->log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	dev->ops->log(dev->host, line);
}

void ur_qp_log_error(struct ur_qp *qp, const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int n;

	if (qp->error_logged || !qp->dev->ops->log)
		return;
	qp->error_logged = true;
	n = snprintf(line, sizeof(line), "qp %#x: first error: ", qp->qpn);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	va_end(ap);
	qp->dev->ops->log(qp->dev->host, line);
}
