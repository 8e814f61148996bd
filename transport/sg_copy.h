/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Copies between a scatter/gather list of registered memory and a linear
 * buffer, starting at a byte offset into the list: a send WQE's payload
 * gathered into a packet, a READ response or atomic result scattered into
 * the requester's buffers, a SEND scattered into a receive WQE. Every piece
 * is checked against its lkey (protection domain, bounds, access) before it
 * is touched.
 */
#ifndef UR_SG_COPY_H
#define UR_SG_COPY_H

#include <stdint.h>

#include "mr.h"
#include "verbs_types.h"

/* An SGE list and the memory its lkeys name. */
struct ur_sg_list {
	const struct ur_mr_table *mrs;
	uint32_t pd;
	const struct ur_sge *sge;
	unsigned num_sge;
};

/*
 * Write `len` bytes from `src` at byte `off` of the list; each piece needs
 * LOCAL_WRITE. Returns 0, -EACCES when a key refuses a piece or -EMSGSIZE
 * when the list ends first; the pieces before the failing one are written.
 * Copying nothing succeeds at any offset.
 */
int ur_sg_scatter(const struct ur_sg_list *l, uint32_t off, const void *src, uint32_t len);

/*
 * Read `len` bytes at byte `off` of the list into `dst`; errors as
 * ur_sg_scatter's. When `in_place` is not NULL and the bytes lie within one
 * SGE, nothing is copied: *in_place points at them in the region.
 */
int ur_sg_gather(const struct ur_sg_list *l, uint32_t off, void *dst, uint32_t len,
		 const void **in_place);

#endif
