/* SPDX-License-Identifier: BSD-2-Clause */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mr.h"

void ur_mr_table_init(struct ur_mr_table *t)
{
	memset(t, 0, sizeof(*t));
	t->next = 1; /* index 0 is never used, so no key is below 1 << 12 */
}

void ur_mr_table_fini(struct ur_mr_table *t)
{
	for (uint32_t i = 0; i < t->cap; i++)
		free(t->slot[i]);
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

static int grow(struct ur_mr_table *t)
{
	uint32_t cap = t->cap ? t->cap * 2 : 64;
	struct ur_mr **s;

	if (cap > UR_MR_MAX)
		cap = UR_MR_MAX;
	if (cap == t->cap)
		return -ENOSPC;
	s = realloc(t->slot, cap * sizeof(*s));
	if (!s)
		return -ENOMEM;
	memset(s + t->cap, 0, (cap - t->cap) * sizeof(*s));
	t->slot = s;
	t->cap = cap;
	return 0;
}

int ur_mr_add(struct ur_mr_table *t, uint64_t iova, void *base, uint64_t length, uint32_t access,
	      uint32_t pd, uint64_t rnd, struct ur_mr **out)
{
	struct ur_mr *mr;
	uint32_t idx, tag;
	int err;

	if (t->used + 1 >= t->cap) {
		err = grow(t);
		if (err)
			return err;
	}
	/* Start after the last allocation so a freed index is not reused at once. */
	idx = t->next;
	while (t->slot[idx] || idx == 0)
		idx = (idx + 1) % t->cap;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	tag = (uint32_t)(rnd & ((1u << UR_MR_TAG_BITS) - 1));
	mr->iova = iova;
	mr->base = base;
	mr->length = length;
	mr->access = access;
	mr->pd = pd;
	mr->key = idx << UR_MR_TAG_BITS | tag;
	mr->valid = true;
	t->slot[idx] = mr;
	t->used++;
	t->next = (idx + 1) % t->cap;
	*out = mr;
	return 0;
}

void ur_mr_remove(struct ur_mr_table *t, struct ur_mr *mr)
{
	uint32_t idx = mr->key >> UR_MR_TAG_BITS;

	if (idx < t->cap && t->slot[idx] == mr) {
		t->slot[idx] = NULL;
		t->used--;
	}
	free(mr);
}
