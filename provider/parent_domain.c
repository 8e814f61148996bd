/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Thread domains and parent domains. A thread domain promises that the
 * objects of a parent domain on it are used by one thread at a time; uroce
 * keeps its locks anyway (they are uncontended then), so a TD is a handle
 * with a use count. A parent domain is a PD that stands for its protection
 * domain everywhere (same id, so QPs, SRQs, MRs and AHs made on it are in
 * that PD) and carries the application's pd_context and allocator, which
 * the provider calls for a CQ's ring (cq.c) and the engine for a QP's work
 * queues, as mlx5 does for its queue buffers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "uroce.h"

static inline struct uroce_td *to_utd(struct ibv_td *td)
{
	return to_type(td, struct uroce_td, ibv_td);
}

struct ibv_td *uroce_alloc_td(struct ibv_context *ibctx, struct ibv_td_init_attr *attr)
{
	struct uroce_td *td;

	if (attr->comp_mask) {
		errno = uroce_refuse(to_unic(ibctx), EINVAL, "alloc_td", "comp_mask %#x unknown",
				     attr->comp_mask);
		return NULL;
	}
	td = calloc(1, sizeof(*td));
	if (!td) {
		errno = ENOMEM;
		return NULL;
	}
	td->ibv_td.context = ibctx;
	atomic_init(&td->refs, 0);
	return &td->ibv_td;
}

int uroce_dealloc_td(struct ibv_td *ibtd)
{
	struct uroce_td *td = to_utd(ibtd);

	if (atomic_load(&td->refs))
		return uroce_refuse(to_unic(ibtd->context), EBUSY, "dealloc_td",
				    "%u parent domains still on the thread domain",
				    atomic_load(&td->refs));
	free(td);
	return 0;
}

/* A QP's send and receive queues, as mlx5 takes its QP buffer: one resource type for both. */
static int queue_alloc(void *arg, size_t size, enum ur_wq_mem mem, void **out)
{
	(void)mem;
	return -uroce_pd_alloc(arg, size, UROCE_RES_TYPE_QP, out);
}

static void queue_free(void *arg, void *p, enum ur_wq_mem mem)
{
	(void)mem;
	uroce_pd_free(arg, p, UROCE_RES_TYPE_QP);
}

const struct ur_alloc *uroce_pd_queue_alloc(struct uroce_pd *pd)
{
	return pd->alloc ? &pd->queues : NULL;
}

struct ibv_pd *uroce_alloc_parent_domain(struct ibv_context *ibctx,
					 struct ibv_parent_domain_init_attr *attr)
{
	struct uroce_nic *nic = to_unic(ibctx);
	const uint32_t known =
	    IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	struct uroce_pd *pd, *prot;

	if (attr->comp_mask & ~known) {
		errno = uroce_refuse(nic, EINVAL, "alloc_parent_domain", "comp_mask %#x unknown",
				     attr->comp_mask);
		return NULL;
	}
	/* as mlx5: the protection domain is an ordinary PD of this context */
	if (!attr->pd || attr->pd->context != ibctx || to_upd(attr->pd)->protection ||
	    (attr->td && attr->td->context != ibctx)) {
		errno = uroce_refuse(nic, EINVAL, "alloc_parent_domain",
				     "pd must be a protection domain (and td a thread domain) "
				     "of this context");
		return NULL;
	}
	if ((attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) &&
	    (!attr->alloc || !attr->free)) {
		errno =
		    uroce_refuse(nic, EINVAL, "alloc_parent_domain",
				 "IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS without alloc and free");
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	prot = to_upd(attr->pd);
	pd->ibv_pd.context = ibctx; /* libibverbs does not set it: the call is inline */
	pd->ibv_pd.handle = prot->ibv_pd.handle;
	pd->id = prot->id;
	atomic_init(&pd->refs, 0);
	pd->protection = prot;
	atomic_fetch_add(&prot->refs, 1);
	if (attr->td) {
		pd->td = to_utd(attr->td);
		atomic_fetch_add(&pd->td->refs, 1);
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		pd->pd_context = attr->pd_context;
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
		pd->alloc = attr->alloc;
		pd->free = attr->free;
		pd->queues = (struct ur_alloc){queue_alloc, queue_free, pd};
	}
	pthread_mutex_lock(&nic->lock);
	uroce_link_add(&to_uctx(ibctx)->pds, &pd->link);
	pthread_mutex_unlock(&nic->lock);
	return &pd->ibv_pd;
}

int uroce_dealloc_parent_domain(struct uroce_pd *pd)
{
	struct uroce_nic *nic = to_unic(pd->ibv_pd.context);

	if (atomic_load(&pd->refs))
		return uroce_refuse(nic, EBUSY, "dealloc_pd",
				    "%u objects still in the parent domain",
				    atomic_load(&pd->refs));
	atomic_fetch_sub(&pd->protection->refs, 1);
	if (pd->td)
		atomic_fetch_sub(&pd->td->refs, 1);
	pthread_mutex_lock(&nic->lock);
	uroce_pd_take_back(nic, pd);
	pthread_mutex_unlock(&nic->lock);
	return 0;
}

int uroce_pd_alloc(struct uroce_pd *pd, size_t size, uint64_t type, void **out)
{
	void *p;

	*out = NULL;
	if (!pd || !pd->alloc)
		return 0;
	p = pd->alloc(&pd->ibv_pd, pd->pd_context, size, 64, type);
	if (p == IBV_ALLOCATOR_USE_DEFAULT)
		return 0;
	if (!p)
		return ENOMEM;
	memset(p, 0, size);
	*out = p;
	return 0;
}

void uroce_pd_free(struct uroce_pd *pd, void *ptr, uint64_t type)
{
	pd->free(&pd->ibv_pd, pd->pd_context, ptr, type);
}
