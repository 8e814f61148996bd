/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memory regions and their keys. A key is the table index in its upper 20
 * bits and a fresh random 12-bit tag in the lower bits, so a key cannot be
 * guessed from an index and a stale key stops matching once the region is
 * deregistered (the slot's next owner draws a new tag). lkey == rkey, as on
 * Soft-RoCE. Memory windows (mw.c) live in the same table, as mlx5's MRs
 * and MWs share one mkey space: a window's key is an R_Key only, and its
 * low 8 bits are the consumer's (IBTA 10.6.7.2, ibv_inc_rkey).
 */
#ifndef UR_MR_H
#define UR_MR_H

#include <stdbool.h>
#include <stdint.h>

#include "verbs_types.h"

#define UR_MR_TAG_BITS 12
#define UR_MR_MAX (1u << (32 - UR_MR_TAG_BITS))

/* What a key names. */
enum ur_key_kind {
	UR_KEY_MR = 0,  /* a memory region: lkey and rkey */
	UR_KEY_MW1 = 1, /* a type 1 memory window (enum ibv_mw_type) */
	UR_KEY_MW2 = 2, /* a type 2 memory window, bound through one QP */
};

struct ur_mr {
	uint64_t iova;   /* address the keys' users see (a window: where it is bound) */
	uint8_t *base;   /* where iova lives in this process */
	uint64_t length;
	uint32_t key;
	uint32_t access; /* enum ur_access */
	uint32_t pd;
	bool valid;      /* a window: bound and not invalidated */
	uint8_t kind;    /* enum ur_key_kind */
	uint32_t windows;      /* a region: windows bound to it */
	struct ur_mr *region;  /* a bound window: its region */
	uint32_t qpn;          /* a bound type 2 window: the only QP that may use it */
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
	uint32_t mw2_bound; /* bound type 2 windows: a QP's destroy looks for them (mw.c) */
};

/* Why an access was refused: each maps to an IBTA NAK or a local status. */
enum ur_mr_err {
	UR_MR_OK = 0,
	UR_MR_BAD_KEY,
	UR_MR_BAD_PD,
	UR_MR_BOUNDS,
	UR_MR_ACCESS,
	UR_MR_BAD_QP, /* a type 2 window used through another QP than it was bound through */
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

/* The PD, bounds and access part of a key check. */
static inline enum ur_mr_err ur_mr_check_range(const struct ur_mr_table *t, struct ur_mr *mr,
					       uint32_t pd, uint64_t va, uint64_t len,
					       uint32_t access, struct ur_mr **out)
{
	/* a window over an implicit region faults in as its region does */
	const struct ur_mr *r = mr->region ? mr->region : mr;

	if (mr->pd != pd)
		return UR_MR_BAD_PD;
	if (va < mr->iova || len > mr->length || va - mr->iova > mr->length - len)
		return UR_MR_BOUNDS;
	if ((mr->access & access) != access)
		return UR_MR_ACCESS;
	if (r->sparse && t->fault_in &&
	    !t->fault_in(mr->base + (va - mr->iova), len,
			 access & (UR_ACCESS_LOCAL_WRITE | UR_ACCESS_REMOTE_WRITE |
				   UR_ACCESS_REMOTE_ATOMIC)))
		return UR_MR_BOUNDS;
	*out = mr;
	return UR_MR_OK;
}

/*
 * Check that L_Key `key` grants `access` to [va, va+len) for protection
 * domain `pd`. A window's key is no L_Key (IBTA 10.6.7.2). The bounds test
 * cannot overflow: it compares offsets, never va+len.
 */
static inline enum ur_mr_err ur_mr_check(const struct ur_mr_table *t, uint32_t key, uint32_t pd,
					 uint64_t va, uint64_t len, uint32_t access,
					 struct ur_mr **out)
{
	struct ur_mr *mr = ur_mr_find(t, key);

	if (!mr || !mr->valid || mr->kind != UR_KEY_MR)
		return UR_MR_BAD_KEY;
	return ur_mr_check_range(t, mr, pd, va, len, access, out);
}

/*
 * The same for R_Key `key` used by a request arriving on QP `qpn`: a
 * region, or a window while it is bound (its bounds and access are the
 * bind's); a type 2 window only through the QP that bound it (IBTA
 * 10.6.7.2.2, type 2B).
 */
static inline enum ur_mr_err ur_rkey_check(const struct ur_mr_table *t, uint32_t key, uint32_t pd,
					   uint32_t qpn, uint64_t va, uint64_t len,
					   uint32_t access, struct ur_mr **out)
{
	struct ur_mr *mr = ur_mr_find(t, key);

	if (!mr || !mr->valid)
		return UR_MR_BAD_KEY;
	if (mr->kind == UR_KEY_MW2 && mr->qpn != qpn && mr->pd == pd)
		return UR_MR_BAD_QP;
	return ur_mr_check_range(t, mr, pd, va, len, access, out);
}

static inline uint8_t *ur_mr_ptr(const struct ur_mr *mr, uint64_t va)
{
	return mr->base + (va - mr->iova);
}

#endif
