/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memory windows (IBTA 10.6.7.2): a window is a key in the region table
 * (mr.h) that grants remote access to part of a region once bound, and
 * none once unbound or invalidated. Type 1 windows are bound with
 * ibv_bind_mw and only rebound or unbound (length 0); type 2 windows are
 * bound by a BIND_MW work request, belong to the QP that bound them (type
 * 2B), and are invalidated by LOCAL_INV or a peer's SEND with Invalidate.
 * These functions work on the table alone: the requester runs binds and
 * local invalidations in send-queue order, the responder remote
 * invalidations; each rule it enforces returns the reason it refused.
 */
#ifndef UR_MW_H
#define UR_MW_H

#include <stdbool.h>
#include <stdint.h>

#include "mr.h"

/* The consumer's part of a window's key, which each bind replaces (ibv_inc_rkey). */
#define UR_MW_KEY_MASK 0xffu

/* What a BIND_MW work request asks. */
struct ur_mw_bind {
	uint32_t mw_key;  /* the window, by its key (the low 8 bits are not compared) */
	uint32_t new_key; /* its key once bound: only the low 8 bits may differ */
	uint32_t mr_lkey; /* the region (none to unbind a type 1 window, length 0) */
	uint32_t access;  /* enum ur_access: remote read, write, atomic */
	uint64_t addr;
	uint64_t length;
};

/* Whether `key` names a window's slot, whatever its 8 key bits (a refusal to count). */
static inline bool ur_mw_key_named(const struct ur_mr_table *t, uint32_t key)
{
	uint32_t idx = key >> UR_MR_TAG_BITS;
	const struct ur_mr *m = idx < t->cap ? t->slot[idx] : NULL;

	return m && m->kind != UR_KEY_MR;
}

/* A new window (UR_KEY_MW1 or UR_KEY_MW2) in `pd`, unbound; `rnd` draws its key. */
int ur_mw_alloc(struct ur_mr_table *t, unsigned kind, uint32_t pd, uint64_t rnd,
		struct ur_mr **out);
/* Unbind (if bound) and free a window. */
void ur_mw_free(struct ur_mr_table *t, struct ur_mr *mw);

/* Bind for a QP of protection domain `pd` and number `qpn`: NULL, or why not (MW_BIND_ERR). */
const char *ur_mw_bind(struct ur_mr_table *t, uint32_t pd, uint32_t qpn,
		       const struct ur_mw_bind *b);

/*
 * Whether `key` may be invalidated by a QP of `pd` and number `qpn`: by
 * LOCAL_INV (remote false) or by a SEND with Invalidate that QP received
 * (remote true). NULL, or why not. Only a bound type 2 window can be: a
 * type 1 window never (o10-37.2.26), and uroce has no fast-registered
 * regions, the other kind of key a SEND with Invalidate may name.
 */
const char *ur_mw_check_invalidate(const struct ur_mr_table *t, uint32_t key, uint32_t pd,
				   uint32_t qpn, bool remote);
/* Invalidate what ur_mw_check_invalidate allowed: no access through `key` after this. */
void ur_mw_invalidate(struct ur_mr_table *t, uint32_t key);

/* Region `mr` is going away: every window bound to it is unbound. */
void ur_mw_region_gone(struct ur_mr_table *t, struct ur_mr *mr);
/* QP `qpn` is destroyed: the type 2 windows bound through it are invalidated. */
void ur_mw_qp_gone(struct ur_mr_table *t, uint32_t qpn);

#endif
