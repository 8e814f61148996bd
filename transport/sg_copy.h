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

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "mr.h"
#include "ur_util.h"
#include "verbs_types.h"

/* An SGE list and the memory its lkeys name. */
struct ur_sg_list {
	const struct ur_mr_table *mrs;
	uint32_t pd;
	const struct ur_sge *sge;
	unsigned num_sge;
};

/* Inline, so each call site gets the loop for its own direction: the
 * gather of every request packet runs it. */
/*
 * Walk the list from byte `off` for `len` bytes: into the regions from `src`
 * when scattering, else out of them into `dst`. Zero-length SGEs are
 * stepped over like any other that ends before `off`.
 */
static inline int ur_sg_copy(const struct ur_sg_list *l, uint32_t off, uint32_t len, bool scatter,
		   const uint8_t *src, uint8_t *dst, const void **in_place)
{
	uint32_t access = scatter ? UR_ACCESS_LOCAL_WRITE : 0;
	bool first = true;

	for (unsigned i = 0; i < l->num_sge && len; i++) {
		const struct ur_sge *s = &l->sge[i];
		struct ur_mr *mr;
		uint8_t *mem;
		uint32_t n;

		if (off >= s->length) {
			off -= s->length;
			continue;
		}
		n = UR_MIN(len, s->length - off);
		if (ur_mr_check(l->mrs, s->lkey, l->pd, s->addr + off, n, access, &mr))
			return -EACCES;
		mem = ur_mr_ptr(mr, s->addr + off);
		if (in_place && first && n == len) {
			*in_place = mem;
			return 0;
		}
		if (scatter) {
			memcpy(mem, src, n);
			src += n;
		} else {
			memcpy(dst, mem, n);
			dst += n;
		}
		len -= n;
		off = 0;
		first = false;
	}
	return len ? -EMSGSIZE : 0;
}

/*
 * Write `len` bytes from `src` at byte `off` of the list; each piece needs
 * LOCAL_WRITE. Returns 0, -EACCES when a key refuses a piece or -EMSGSIZE
 * when the list ends first; the pieces before the failing one are written.
 * Copying nothing succeeds at any offset.
 */
static inline int ur_sg_scatter(const struct ur_sg_list *l, uint32_t off, const void *src,
				uint32_t len)
{
	return ur_sg_copy(l, off, len, true, src, NULL, NULL);
}

/*
 * Read `len` bytes at byte `off` of the list into `dst`; errors as
 * ur_sg_scatter's. When `in_place` is not NULL and the bytes lie within one
 * SGE, nothing is copied: *in_place points at them in the region.
 */
static inline int ur_sg_gather(const struct ur_sg_list *l, uint32_t off, void *dst,
			       uint32_t len, const void **in_place)
{
	return ur_sg_copy(l, off, len, false, NULL, dst, in_place);
}

#endif
