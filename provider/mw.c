/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memory windows (ibv_alloc_mw, ibv_dealloc_mw, ibv_bind_mw): the window is
 * a key in the engine's region table (transport/mw.c), which enforces the
 * bind rules when the send queue reaches the bind. ibv_bind_mw (type 1)
 * posts a BIND_MW work request with the next key, as mlx5 and rxe do, and
 * the window shows that key from then on; a type 2 window is bound by the
 * application's own BIND_MW request and keeps the key it was given.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>

#include "uroce.h"

struct ibv_mw *uroce_alloc_mw(struct ibv_pd *ibpd, enum ibv_mw_type type)
{
	struct uroce_nic *nic = to_unic(ibpd->context);
	struct uroce_mw *mw;
	int err;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		errno = uroce_refuse(nic, EINVAL, "alloc_mw", "type %d: 1 or 2", type);
		return NULL;
	}
	err = uroce_obj_get(nic, UROCE_OBJ_MW);
	if (err) {
		errno = uroce_refuse(nic, err, "alloc_mw", "max_mw %u windows exist already",
				     nic->limit[UROCE_OBJ_MW]);
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		uroce_obj_put(nic, UROCE_OBJ_MW);
		errno = uroce_refuse(nic, ENOMEM, "alloc_mw", "no memory");
		return NULL;
	}
	pthread_mutex_lock(&nic->lock);
	err = ur_dev_alloc_mw(nic->engine, type, to_upd(ibpd)->id, &mw->mw);
	if (!err)
		uroce_link_add(&to_uctx(ibpd->context)->mws, &mw->link);
	pthread_mutex_unlock(&nic->lock);
	if (err) {
		uroce_obj_put(nic, UROCE_OBJ_MW);
		free(mw);
		errno = uroce_refuse(nic, ENOMEM, "alloc_mw", "the key table is full");
		return NULL;
	}
	mw->pd = to_upd(ibpd);
	atomic_fetch_add(&mw->pd->refs, 1);
	mw->ibv_mw.context = ibpd->context;
	mw->ibv_mw.pd = ibpd;
	mw->ibv_mw.rkey = mw->mw->key;
	mw->ibv_mw.handle = mw->mw->key;
	mw->ibv_mw.type = type;
	uroce_log(nic, 2, "alloc_mw type %d rkey %#x", type, mw->mw->key);
	return &mw->ibv_mw;
}

/* A bound window is unbound first: no access through it once this returns. */
int uroce_dealloc_mw(struct ibv_mw *ibmw)
{
	struct uroce_mw *mw = to_umw(ibmw);
	struct uroce_nic *nic = to_unic(ibmw->context);

	pthread_mutex_lock(&nic->lock);
	ur_dev_dealloc_mw(nic->engine, mw->mw);
	uroce_link_del(&mw->link);
	pthread_mutex_unlock(&nic->lock);
	atomic_fetch_sub(&mw->pd->refs, 1);
	uroce_obj_put(nic, UROCE_OBJ_MW);
	free(mw);
	return 0;
}

void uroce_mw_take_back(struct uroce_nic *nic, struct uroce_mw *mw)
{
	ur_dev_dealloc_mw(nic->engine, mw->mw);
	uroce_link_del(&mw->link);
	uroce_obj_put(nic, UROCE_OBJ_MW);
	free(mw);
}

/*
 * ibv_bind_mw: a type 1 window (libibverbs checked the type and the PDs).
 * The bind is a send WQE, completed in order with IBV_WC_BIND_MW (or
 * IBV_WC_MW_BIND_ERR when a rule refuses it); the window's key changes
 * now, as on mlx5, so the application may hand it out at once.
 */
int uroce_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind)
{
	struct uroce_nic *nic = to_unic(qp->context);
	const struct ibv_mw_bind_info *b = &mw_bind->bind_info;
	struct ibv_send_wr wr = {0}, *bad = NULL;
	int err;

	if (b->mw_access_flags & IBV_ACCESS_ZERO_BASED)
		return uroce_refuse(nic, EINVAL, "bind_mw", "zero-based windows are not offered");
	if (b->mr && verbs_get_mr(b->mr)->mr_type != IBV_MR_TYPE_MR)
		return uroce_refuse(nic, EOPNOTSUPP, "bind_mw", "not a registered region");
	wr.wr_id = mw_bind->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = mw_bind->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = *b;
	err = uroce_post_send(qp, &wr, &bad);
	if (err)
		return err;
	mw->rkey = wr.bind_mw.rkey;
	return 0;
}
