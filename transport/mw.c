/* SPDX-License-Identifier: BSD-2-Clause */
#include <errno.h>

#include "device.h"
#include "mw.h"

/* What a window may grant (IBTA 10.6.7.2.1); zero-based windows are not offered. */
#define MW_ACCESS_OFFERED                                                                          \
	(UR_ACCESS_LOCAL_WRITE | UR_ACCESS_REMOTE_READ | UR_ACCESS_REMOTE_WRITE |                  \
	 UR_ACCESS_REMOTE_ATOMIC)

static bool is_window(const struct ur_mr *m)
{
	return m->kind == UR_KEY_MW1 || m->kind == UR_KEY_MW2;
}

int ur_mw_alloc(struct ur_mr_table *t, unsigned kind, uint32_t pd, uint64_t rnd, struct ur_mr **out)
{
	struct ur_mr *mw;
	int err;

	if (kind != UR_KEY_MW1 && kind != UR_KEY_MW2)
		return -EINVAL;
	err = ur_mr_add(t, 0, NULL, 0, 0, pd, rnd, &mw);
	if (err)
		return err;
	mw->kind = (uint8_t)kind;
	mw->valid = false; /* no access until bound */
	*out = mw;
	return 0;
}

static void unbind(struct ur_mr_table *t, struct ur_mr *mw)
{
	if (mw->kind == UR_KEY_MW2 && mw->valid)
		t->mw2_bound--;
	if (mw->region)
		mw->region->windows--;
	mw->region = NULL;
	mw->valid = false;
	mw->iova = 0;
	mw->base = NULL;
	mw->length = 0;
	mw->access = 0;
	mw->qpn = 0;
}

void ur_mw_free(struct ur_mr_table *t, struct ur_mr *mw)
{
	unbind(t, mw);
	ur_mr_remove(t, mw);
}

/* The window a bind names: its key without the consumer's 8 bits. */
static struct ur_mr *find_window(const struct ur_mr_table *t, uint32_t key)
{
	uint32_t idx = key >> UR_MR_TAG_BITS;
	struct ur_mr *m;

	if (idx >= t->cap)
		return NULL;
	m = t->slot[idx];
	if (!m || !is_window(m) || ((m->key ^ key) & ~UR_MW_KEY_MASK))
		return NULL;
	return m;
}

const char *ur_mw_bind(struct ur_mr_table *t, uint32_t pd, uint32_t qpn, const struct ur_mw_bind *b)
{
	struct ur_mr *mw = find_window(t, b->mw_key), *mr;

	if (!mw)
		return "no memory window has that R_Key";
	if ((b->new_key ^ mw->key) & ~UR_MW_KEY_MASK)
		return "the new R_Key differs from the window's in more than its 8 key bits";
	if (b->access & ~MW_ACCESS_OFFERED)
		return "access flags a window cannot grant (zero-based, bind, on-demand)";
	if (mw->kind == UR_KEY_MW2) {
		if (mw->pd != pd)
			return "a type 2 window bound by a QP of another PD (C10-72)";
		if (mw->valid)
			return "a type 2 window bound already: invalidate it first (o10-37.2.30)";
		if (!b->length)
			return "a type 2 window bound with length 0 (o10-37.2.40)";
	}
	if (!b->length) {
		/* a type 1 window unbound: its old key stops working too */
		unbind(t, mw);
		mw->key = b->new_key;
		return NULL;
	}
	mr = ur_mr_find(t, b->mr_lkey);
	if (!mr || mr->kind != UR_KEY_MR)
		return "no memory region has that L_Key";
	if (mr->pd != mw->pd)
		return "the region and the window are in different PDs";
	if (!(mr->access & UR_ACCESS_MW_BIND))
		return "the region was registered without IBV_ACCESS_MW_BIND (C10-73)";
	if ((b->access & (UR_ACCESS_REMOTE_WRITE | UR_ACCESS_REMOTE_ATOMIC)) &&
	    !(mr->access & UR_ACCESS_LOCAL_WRITE))
		return "remote write or atomic through a region without local write (C10-74)";
	if (b->addr < mr->iova || b->length > mr->length ||
	    b->addr - mr->iova > mr->length - b->length)
		return "the window does not lie inside the region (C10-75)";
	unbind(t, mw); /* a type 1 window may be bound again at once */
	mw->region = mr;
	mr->windows++;
	mw->iova = b->addr;
	mw->base = ur_mr_ptr(mr, b->addr);
	mw->length = b->length;
	mw->access = b->access & ~UR_ACCESS_LOCAL_WRITE;
	mw->qpn = mw->kind == UR_KEY_MW2 ? qpn : 0;
	mw->key = b->new_key;
	mw->valid = true;
	if (mw->kind == UR_KEY_MW2)
		t->mw2_bound++;
	return NULL;
}

const char *ur_mw_check_invalidate(const struct ur_mr_table *t, uint32_t key, uint32_t pd,
				   uint32_t qpn, bool remote)
{
	const struct ur_mr *m = ur_mr_find(t, key);

	if (!m)
		return "no key of that value";
	if (m->kind == UR_KEY_MR)
		return "a memory region's key cannot be invalidated (no fast-registered regions)";
	if (m->kind == UR_KEY_MW1)
		return "a type 1 window cannot be invalidated (o10-37.2.26)";
	if (!m->valid)
		return "the window is not bound";
	if (m->pd != pd)
		return "the window is in another PD";
	if (remote && m->qpn != qpn)
		return "the window was bound through another QP";
	return NULL;
}

void ur_mw_invalidate(struct ur_mr_table *t, uint32_t key)
{
	struct ur_mr *m = ur_mr_find(t, key);

	if (m && is_window(m))
		unbind(t, m);
}

void ur_mw_region_gone(struct ur_mr_table *t, struct ur_mr *mr)
{
	for (uint32_t i = 0; i < t->cap && mr->windows; i++) {
		struct ur_mr *m = t->slot[i];

		if (m && is_window(m) && m->region == mr)
			unbind(t, m);
	}
}

void ur_mw_qp_gone(struct ur_mr_table *t, uint32_t qpn)
{
	for (uint32_t i = 0; i < t->cap && t->mw2_bound; i++) {
		struct ur_mr *m = t->slot[i];

		if (m && m->kind == UR_KEY_MW2 && m->valid && m->qpn == qpn)
			unbind(t, m);
	}
}

int ur_dev_alloc_mw(struct ur_dev *dev, unsigned type, uint32_t pd, struct ur_mr **out)
{
	return ur_mw_alloc(&dev->mrs, type, pd, dev->ops->random(dev->host), out);
}

void ur_dev_dealloc_mw(struct ur_dev *dev, struct ur_mr *mw)
{
	ur_mw_free(&dev->mrs, mw);
}
