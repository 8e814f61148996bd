/* SPDX-License-Identifier: BSD-2-Clause */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "queue.h"
#include "ur_util.h"

int ur_wq_init(struct ur_wq *q, uint32_t min_entries, uint32_t slot_size)
{
	uint32_t n = ur_roundup_pow2(min_entries ? min_entries : 1);

	memset(q, 0, sizeof(*q));
	/* 64-byte slots keep WQEs from sharing cache lines with their neighbours */
	q->stride = (slot_size + 63) & ~63u;
	q->buf = calloc(n, q->stride);
	if (!q->buf)
		return -ENOMEM;
	q->mask = n - 1;
	return 0;
}

void ur_wq_fini(struct ur_wq *q)
{
	free(q->buf);
	q->buf = NULL;
}

int ur_cq_init(struct ur_cq *cq, uint32_t min_entries, void *host_ctx)
{
	uint32_t n = ur_roundup_pow2(min_entries ? min_entries : 1);

	memset(cq, 0, sizeof(*cq));
	cq->ring = calloc(n, sizeof(*cq->ring));
	if (!cq->ring)
		return -ENOMEM;
	cq->mask = n - 1;
	cq->host_ctx = host_ctx;
	return 0;
}

void ur_cq_fini(struct ur_cq *cq)
{
	free(cq->ring);
	free(cq->ts);
	cq->ring = NULL;
	cq->ts = NULL;
}
