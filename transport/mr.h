/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memory regions and their keys. A key is the table index in its upper 20
 * bits and a fresh random 12-bit tag in the lower bits, so a key cannot be
 * guessed from an index and a stale key stops matching once the region is
 * deregistered (the slot's next owner draws a new tag). lkey == rkey, as on
 * Soft-RoCE.
 */
#ifndef UR_MR_H
#define UR_MR_H

#include <stdbool.h>
#include <stdint.h>

#include "verbs_types.h"

#define UR_MR_TAG_BITS 12
#define UR_MR_MAX (1u << (32 - UR_MR_TAG_BITS))

struct ur_mr {
	uint64_t iova;   /* address the keys' users see */
	uint8_t *base;   /* where iova lives in this process */
	uint64_t length;
	uint32_t key;
	uint32_t access; /* enum ur_access */
	uint32_t pd;
	bool valid;      /* false once invalidated by SEND with Invalidate */
	bool sparse;     /* may cover unmapped memory (implicit on-demand paging):
			  * every access asks the table's fault_in first */
};

struct ur_mr_table {
	struct ur_mr **slot;
	uint32_t cap;
	uint32_t used;
	uint32_t next; /* where the search for a free slot starts */
	/* The host's page-fault handler for sparse regions: can [p, p+len) be
	 * read (written, when `write`)? As a NIC's ODP fault that the kernel
	 * cannot resolve, a refusal is an access error. */
	bool (*fault_in)(void *p, uint64_t len, bool write);
};

/* Why an access was refused: each maps to an IBTA NAK or a local status. */
enum ur_mr_err {
	UR_MR_OK = 0,
	UR_MR_BAD_KEY,
	UR_MR_BAD_PD,
	UR_MR_BOUNDS,
	UR_MR_ACCESS,
};

void ur_mr_table_init(struct ur_mr_table *t);
void ur_mr_table_fini(struct ur_mr_table *t);

/* Register [iova, iova+length) living at `base`; `rnd` supplies the tag. */
int ur_mr_add(struct ur_mr_table *t, uint64_t iova, void *base, uint64_t length, uint32_t access,
	      uint32_t pd, uint64_t rnd, struct ur_mr **out);
void ur_mr_remove(struct ur_mr_table *t, struct ur_mr *mr);

static inline struct ur_mr *ur_mr_find(const struct ur_mr_table *t, uint32_t key)
{
	uint32_t idx = key >> UR_MR_TAG_BITS;
	struct ur_mr *mr;

	if (idx >= t->cap)
		return NULL;
	mr = t->slot[idx];
	return (mr && mr->key == key) ? mr : NULL;
}

/*
 * Check that `key` grants `access` to [va, va+len) for protection domain
 * `pd`. The bounds test cannot overflow: it compares offsets, never va+len.
 */
static inline enum ur_mr_err ur_mr_check(const struct ur_mr_table *t, uint32_t key, uint32_t pd,
					 uint64_t va, uint64_t len, uint32_t access,
					 struct ur_mr **out)
{
	struct ur_mr *mr = ur_mr_find(t, key);

	if (!mr || !mr->valid)
		return UR_MR_BAD_KEY;
	if (mr->pd != pd)
		return UR_MR_BAD_PD;
	if (va < mr->iova || len > mr->length || va - mr->iova > mr->length - len)
		return UR_MR_BOUNDS;
	if ((mr->access & access) != access)
		return UR_MR_ACCESS;
	if (mr->sparse && t->fault_in &&
	    !t->fault_in(mr->base + (va - mr->iova), len,
			 access & (UR_ACCESS_LOCAL_WRITE | UR_ACCESS_REMOTE_WRITE |
				   UR_ACCESS_REMOTE_ATOMIC)))
		return UR_MR_BOUNDS;
	*out = mr;
	return UR_MR_OK;
}

static inline uint8_t *ur_mr_ptr(const struct ur_mr *mr, uint64_t va)
{
	return mr->base + (va - mr->iova);
}

#endif
