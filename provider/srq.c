/* SPDX-License-Identifier: BSD-2-Clause */
/* Shared receive queues. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>

#include "uroce.h"

/* An SRQ in `pd`; of XRC domain `xrcd` completing on `cq` when xrcd is not NULL. */
static struct ibv_srq *create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr,
				  struct uroce_xrcd *xrcd, struct ibv_cq *cq)
{
	struct uroce_nic *nic = to_unic(pd->context);
	struct uroce_srq *usrq;
	int err;

	if (attr->attr.max_wr > UR_MAX_WR || attr->attr.max_sge > UR_MAX_SGE ||
	    attr->attr.srq_limit > attr->attr.max_wr) {
		errno = uroce_refuse(nic, EINVAL, "create_srq",
				     "max_wr %u (max_srq_wr %u), max_sge %u (max_srq_sge %u), "
				     "srq_limit %u (at most max_wr)",
				     attr->attr.max_wr, UR_MAX_WR, attr->attr.max_sge, UR_MAX_SGE,
				     attr->attr.srq_limit);
		return NULL;
	}
	err = uroce_obj_get(nic, UROCE_OBJ_SRQ);
	if (err) {
		errno = uroce_refuse(nic, err, "create_srq", "max_srq %u SRQs exist already",
				     nic->limit[UROCE_OBJ_SRQ]);
		return NULL;
	}
	usrq = calloc(1, sizeof(*usrq));
	if (!usrq) {
		uroce_obj_put(nic, UROCE_OBJ_SRQ);
		errno = uroce_refuse(nic, ENOMEM, "create_srq", "no memory");
		return NULL;
	}
	pthread_mutex_lock(&nic->lock);
	err = ur_srq_create(nic->engine, attr->attr.max_wr, attr->attr.max_sge, to_upd(pd)->id,
			    usrq, &usrq->srq);
	if (!err && xrcd)
		ur_srq_set_xrc(usrq->srq, xrcd->dom->id, &to_ucq(cq)->cq);
	if (!err)
		uroce_link_add(&to_uctx(pd->context)->srqs, &usrq->link);
	pthread_mutex_unlock(&nic->lock);
	if (err) {
		uroce_obj_put(nic, UROCE_OBJ_SRQ);
		free(usrq);
		errno =
		    uroce_refuse(nic, -err, "create_srq", "the engine could not make %u x %u sge",
				 attr->attr.max_wr, attr->attr.max_sge);
		return NULL;
	}
	usrq->pd = to_upd(pd);
	atomic_fetch_add(&usrq->pd->refs, 1);
	atomic_init(&usrq->refs, 0);
	pthread_spin_init(&usrq->lock, PTHREAD_PROCESS_PRIVATE);
	usrq->vsrq.srq.events_completed = 0;
	usrq->vsrq.srq_type = xrcd ? IBV_SRQT_XRC : IBV_SRQT_BASIC;
	usrq->vsrq.srq_num = ur_srq_num(usrq->srq);
	if (xrcd) {
		usrq->xrcd = xrcd->dom;
		usrq->vsrq.xrcd = &xrcd->vxrcd;
		usrq->vsrq.cq = cq;
		atomic_fetch_add(&xrcd->dom->refs, 1);
		atomic_fetch_add(&to_ucq(cq)->refs, 1);
	}
	attr->attr.max_wr = ur_wq_size(ur_srq_wq(usrq->srq));
	attr->attr.max_sge = ur_srq_wq(usrq->srq)->max_sge;
	return &usrq->vsrq.srq;
}

struct ibv_srq *uroce_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	return create_srq(pd, attr, NULL, NULL);
}

/*
 * ibv_create_srq_ex: an ordinary SRQ, or an XRC SRQ (annex A14) that XRC
 * target QPs of its domain fill, whose receives complete on its own CQ.
 * libibverbs hands the call over whole, so the verbs object is filled here.
 */
struct ibv_srq *uroce_create_srq_ex(struct ibv_context *ibctx, struct ibv_srq_init_attr_ex *attr)
{
	const uint32_t known = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			       IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
	struct uroce_nic *nic = to_unic(ibctx);
	enum ibv_srq_type type =
	    (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) ? attr->srq_type : IBV_SRQT_BASIC;
	bool xrc = type == IBV_SRQT_XRC;
	struct ibv_srq_init_attr basic = {.srq_context = attr->srq_context, .attr = attr->attr};
	struct ibv_srq *srq;

	if (attr->comp_mask & ~known) {
		errno = uroce_refuse(nic, EOPNOTSUPP, "create_srq_ex",
				     "comp_mask %#x: only TYPE, PD, XRCD and CQ are offered",
				     attr->comp_mask);
		return NULL;
	}
	if (type != IBV_SRQT_BASIC && !xrc) {
		errno = uroce_refuse(nic, EOPNOTSUPP, "create_srq_ex",
				     "srq_type %d: only BASIC and XRC are offered", type);
		return NULL;
	}
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd ||
	    (xrc && (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !attr->xrcd ||
		     !(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !attr->cq))) {
		errno = uroce_refuse(nic, EINVAL, "create_srq_ex",
				     "a PD is required, and for an XRC SRQ an XRCD and a CQ");
		return NULL;
	}
	if (attr->pd->context != ibctx ||
	    (xrc && (attr->cq->context != ibctx || attr->xrcd->context != ibctx))) {
		errno = uroce_refuse(nic, EINVAL, "create_srq_ex",
				     "the PD, the CQ or the XRCD belongs to another context");
		return NULL;
	}
	srq =
	    create_srq(attr->pd, &basic, xrc ? to_uxrcd(attr->xrcd) : NULL, xrc ? attr->cq : NULL);
	if (!srq)
		return NULL;
	attr->attr = basic.attr;
	srq->context = ibctx;
	srq->pd = attr->pd;
	srq->srq_context = attr->srq_context;
	srq->handle = ur_srq_num(to_usrq(srq)->srq);
	pthread_mutex_init(&srq->mutex, NULL);
	pthread_cond_init(&srq->cond, NULL);
	return srq;
}

/* Every SRQ has its number, as mlx5 gives it; only an XRC SRQ's is of use to a peer. */
int uroce_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num)
{
	*srq_num = to_usrq(srq)->vsrq.srq_num;
	return 0;
}

int uroce_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	struct uroce_srq *usrq = to_usrq(srq);
	struct uroce_nic *nic = to_unic(srq->context);

	/* resizing is not offered (no IBV_DEVICE_SRQ_RESIZE) */
	if (mask & IBV_SRQ_MAX_WR)
		return uroce_refuse(
		    nic, EINVAL, "modify_srq",
		    "IBV_SRQ_MAX_WR: resizing an SRQ is not offered (no IBV_DEVICE_SRQ_RESIZE)");
	if (mask & IBV_SRQ_LIMIT) {
		if (attr->srq_limit > ur_wq_size(ur_srq_wq(usrq->srq)))
			return uroce_refuse(nic, EINVAL, "modify_srq",
					    "srq_limit %u is above the SRQ's max_wr %u",
					    attr->srq_limit, ur_wq_size(ur_srq_wq(usrq->srq)));
		pthread_mutex_lock(&nic->lock);
		ur_srq_set_limit(usrq->srq, attr->srq_limit);
		pthread_mutex_unlock(&nic->lock);
	}
	return 0;
}

int uroce_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct uroce_srq *usrq = to_usrq(srq);

	attr->max_wr = ur_wq_size(ur_srq_wq(usrq->srq));
	attr->max_sge = ur_srq_wq(usrq->srq)->max_sge;
	attr->srq_limit = ur_srq_limit(usrq->srq);
	return 0;
}

int uroce_destroy_srq(struct ibv_srq *srq)
{
	struct uroce_srq *usrq = to_usrq(srq);
	struct uroce_context *ctx = to_uctx(srq->context);
	struct uroce_nic *nic = ctx->nic;

	/* QPs still take receive WQEs from it: the engine would use it freed */
	if (atomic_load(&usrq->refs))
		return uroce_refuse(nic, EBUSY, "destroy_srq",
				    "%u QPs still take their receives from it",
				    atomic_load(&usrq->refs));
	pthread_mutex_lock(&nic->lock);
	ur_srq_destroy(usrq->srq);
	uroce_link_del(&usrq->link);
	uroce_drain_events(ctx->vctx.context.async_fd, ctx->async_wr, (uintptr_t)srq,
			   sizeof(struct ur_uverbs_async_event_desc));
	pthread_mutex_unlock(&nic->lock);
	pthread_spin_destroy(&usrq->lock);
	atomic_fetch_sub(&usrq->pd->refs, 1);
	if (usrq->xrcd) {
		atomic_fetch_sub(&usrq->xrcd->refs, 1);
		atomic_fetch_sub(&to_ucq(usrq->vsrq.cq)->refs, 1);
	}
	uroce_obj_put(nic, UROCE_OBJ_SRQ);
	free(usrq);
	return 0;
}

/* An SRQ its context closed with, after its QPs (nic->lock held). */
void uroce_srq_take_back(struct uroce_nic *nic, struct uroce_srq *usrq)
{
	/* an XRC domain may outlive the context, shared with another */
	if (usrq->xrcd)
		atomic_fetch_sub(&usrq->xrcd->refs, 1);
	ur_srq_destroy(usrq->srq);
	uroce_link_del(&usrq->link);
	uroce_obj_put(nic, UROCE_OBJ_SRQ);
	free(usrq);
}
