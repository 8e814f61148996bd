/* SPDX-License-Identifier: BSD-2-Clause */
/* Protection domains and memory regions. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>

#include "uroce.h"

struct ibv_pd *uroce_alloc_pd(struct ibv_context *ibctx)
{
	struct uroce_nic *nic = to_unic(ibctx);
	struct uroce_pd *pd;
	int err = uroce_obj_get(nic, UROCE_OBJ_PD);

	if (err) {
		errno = uroce_refuse(nic, err, "alloc_pd", "max_pd %u PDs exist already",
				     nic->limit[UROCE_OBJ_PD]);
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		uroce_obj_put(nic, UROCE_OBJ_PD);
		errno = uroce_refuse(nic, ENOMEM, "alloc_pd", "no memory");
		return NULL;
	}
	atomic_init(&pd->refs, 0);
	pthread_mutex_lock(&nic->lock);
	pd->id = ++nic->next_pd;
	pthread_mutex_unlock(&nic->lock);
	pd->ibv_pd.handle = pd->id;
	return &pd->ibv_pd;
}

int uroce_dealloc_pd(struct ibv_pd *pd)
{
	struct uroce_pd *upd = to_upd(pd);

	/* as the kernel answers: the PD still holds objects */
	if (atomic_load(&upd->refs))
		return uroce_refuse(to_unic(pd->context), EBUSY, "dealloc_pd",
				    "%u MRs, MWs, QPs, SRQs or AHs still in the PD",
				    atomic_load(&upd->refs));
	uroce_obj_put(to_unic(pd->context), UROCE_OBJ_PD);
	free(upd);
	return 0;
}

struct ibv_mr *uroce_reg_mr(struct ibv_pd *ibpd, void *addr, size_t length, uint64_t hca_va,
			    int access)
{
	struct uroce_nic *nic = to_unic(ibpd->context);
	const int known = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED |
			  IBV_ACCESS_RELAXED_ORDERING | IBV_ACCESS_HUGETLB;
	struct uroce_mr *mr;
	int err;

	if (access & ~known) {
		errno = uroce_refuse(nic, EINVAL, "reg_mr", "access %#x has bits %#x not offered",
				     access, access & ~known);
		return NULL;
	}
	/* IBTA 10.6.3.1: remote write or atomic access needs local write */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE)) {
		errno = uroce_refuse(nic, EINVAL, "reg_mr",
				     "access %#x: remote write or atomic needs "
				     "IBV_ACCESS_LOCAL_WRITE (IBTA 10.6.3.1)",
				     access);
		return NULL;
	}
	if ((!addr && length) || (uint64_t)length > (1ull << 46)) {
		errno = uroce_refuse(nic, EINVAL, "reg_mr", "addr %p length %zu: %s", addr, length,
				     addr ? "length above max_mr_size 2^46" : "no address");
		return NULL;
	}
	err = uroce_obj_get(nic, UROCE_OBJ_MR);
	if (err) {
		errno = uroce_refuse(nic, err, "reg_mr", "max_mr %u MRs exist already",
				     nic->limit[UROCE_OBJ_MR]);
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		uroce_obj_put(nic, UROCE_OBJ_MR);
		errno = uroce_refuse(nic, ENOMEM, "reg_mr", "no memory");
		return NULL;
	}
	pthread_mutex_lock(&nic->lock);
	err = ur_dev_reg_mr(nic->engine, hca_va, addr, length, (uint32_t)access,
			    to_upd(ibpd)->id, &mr->mr);
	if (!err)
		uroce_link_add(&to_uctx(ibpd->context)->mrs, &mr->link);
	pthread_mutex_unlock(&nic->lock);
	if (err) {
		uroce_obj_put(nic, UROCE_OBJ_MR);
		free(mr);
		errno = uroce_refuse(nic, err == -ENOSPC ? ENOMEM : -err, "reg_mr", "%s",
				     err == -ENOSPC ? "the MR table is full"
						    : "the engine refused the region");
		return NULL;
	}
	mr->pd = to_upd(ibpd);
	atomic_fetch_add(&mr->pd->refs, 1);
	mr->vmr.ibv_mr.lkey = mr->mr->key;
	mr->vmr.ibv_mr.rkey = mr->mr->key;
	mr->vmr.ibv_mr.handle = mr->mr->key;
	mr->vmr.mr_type = IBV_MR_TYPE_MR;
	mr->vmr.access = access;
	uroce_log(nic, 2, "reg_mr %p+%zu va %#llx access %#x key %#x", addr, length,
		  (unsigned long long)hca_va, access, mr->mr->key);
	return &mr->vmr.ibv_mr;
}

int uroce_dereg_mr(struct verbs_mr *vmr)
{
	struct uroce_mr *mr = to_type(vmr, struct uroce_mr, vmr);
	struct uroce_nic *nic = to_unic(vmr->ibv_mr.context);

	/* Under the lock: once this returns, no packet touches the memory (the
	 * key is refused at once, also for operations already in flight). */
	pthread_mutex_lock(&nic->lock);
	if (mr->mr->windows) {
		/* Deregister Memory Region fails while windows are bound to the
		 * region (Soft-RoCE refuses too; EBUSY as the kernel's
		 * ib_dereg_mr answered a region still in use): unbind or
		 * deallocate them first */
		unsigned n = mr->mr->windows;

		pthread_mutex_unlock(&nic->lock);
		return uroce_refuse(nic, EBUSY, "dereg_mr", "%u memory windows are bound to it",
				    n);
	}
	ur_dev_dereg_mr(nic->engine, mr->mr);
	uroce_link_del(&mr->link);
	pthread_mutex_unlock(&nic->lock);
	atomic_fetch_sub(&mr->pd->refs, 1);
	uroce_obj_put(nic, UROCE_OBJ_MR);
	free(mr);
	return 0;
}

/* An MR its context closed with (nic->lock held): no packet reaches its memory after this. */
void uroce_mr_take_back(struct uroce_nic *nic, struct uroce_mr *mr)
{
	ur_dev_dereg_mr(nic->engine, mr->mr);
	uroce_link_del(&mr->link);
	uroce_obj_put(nic, UROCE_OBJ_MR);
	free(mr);
}
