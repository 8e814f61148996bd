/* SPDX-License-Identifier: BSD-2-Clause */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "sg_copy.h"
#include "ur_util.h"

/*
 * Walk the list from byte `off` for `len` bytes: into the regions from `src`
 * when scattering, else out of them into `dst`. Zero-length SGEs are
 * stepped over like any other that ends before `off`.
 */
static int sg_copy(const struct ur_sg_list *l, uint32_t off, uint32_t len, bool scatter,
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

int ur_sg_scatter(const struct ur_sg_list *l, uint32_t off, const void *src, uint32_t len)
{
	return sg_copy(l, off, len, true, src, NULL, NULL);
}

int ur_sg_gather(const struct ur_sg_list *l, uint32_t off, void *dst, uint32_t len,
		 const void **in_place)
{
	return sg_copy(l, off, len, false, NULL, dst, in_place);
}
