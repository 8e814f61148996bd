/* SPDX-License-Identifier: BSD-2-Clause */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "queue.h"
#include "ur_util.h"

int ur_wq_init_alloc(struct ur_wq *q, uint32_t min_entries, uint32_t slot_size,
		     const struct ur_alloc *alloc, enum ur_wq_mem mem)
{
	uint32_t n = ur_roundup_pow2(min_entries ? min_entries : 1);
	void *buf = NULL;
	int err;

	memset(q, 0, sizeof(*q));
	/* 64-byte slots keep WQEs from sharing cache lines with their neighbours */
	q->stride = (slot_size + 63) & ~63u;
	if (alloc) {
		err = alloc->alloc(alloc->arg, (size_t)n * q->stride, mem, &buf);
		if (err)
			return err;
	}
	if (buf) {
		memset(buf, 0, (size_t)n * q->stride);
		q->alloc = alloc;
		q->mem = mem;
	} else {
		buf = calloc(n, q->stride);
		if (!buf)
			return -ENOMEM;
	}
	q->buf = buf;
	q->mask = n - 1;
	return 0;
}

int ur_wq_init(struct ur_wq *q, uint32_t min_entries, uint32_t slot_size)
{
	return ur_wq_init_alloc(q, min_entries, slot_size, NULL, 0);
}

void ur_wq_fini(struct ur_wq *q)
{
	if (q->alloc)
		q->alloc->free(q->alloc->arg, q->buf, q->mem);
	else
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
