/* SPDX-License-Identifier: BSD-2-Clause */
/* Protection domains and memory regions. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
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
	uroce_link_add(&to_uctx(ibctx)->pds, &pd->link);
	pthread_mutex_unlock(&nic->lock);
	pd->ibv_pd.handle = pd->id;
	return &pd->ibv_pd;
}

int uroce_dealloc_pd(struct ibv_pd *pd)
{
	struct uroce_pd *upd = to_upd(pd);
	struct uroce_nic *nic = to_unic(pd->context);

	if (upd->protection)
		return uroce_dealloc_parent_domain(upd);
	/* as the kernel answers: the PD still holds objects */
	if (atomic_load(&upd->refs))
		return uroce_refuse(nic, EBUSY, "dealloc_pd",
				    "%u MRs, MWs, QPs, SRQs, AHs or parent domains still in the PD",
				    atomic_load(&upd->refs));
	pthread_mutex_lock(&nic->lock);
	uroce_pd_take_back(nic, upd);
	pthread_mutex_unlock(&nic->lock);
	return 0;
}

/* A PD or parent domain goes, whatever it still holds (the context closes: its
 * objects went first). nic->lock held. Only a protection domain counts against max_pd. */
void uroce_pd_take_back(struct uroce_nic *nic, struct uroce_pd *pd)
{
	uroce_link_del(&pd->link);
	if (!pd->protection)
		uroce_obj_put(nic, UROCE_OBJ_PD);
	free(pd);
}

/* The access flags a region may have: 0, or EINVAL (logged for `call`). */
static int check_access(struct uroce_nic *nic, const char *call, int access)
{
	const int known = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND |
			  IBV_ACCESS_ZERO_BASED | IBV_ACCESS_RELAXED_ORDERING | IBV_ACCESS_HUGETLB |
			  IBV_ACCESS_ON_DEMAND;

	if (access & ~known)
		return uroce_refuse(nic, EINVAL, call, "access %#x has bits %#x not offered",
				    access, access & ~known);
	/* IBTA 10.6.3.1: remote write or atomic access needs local write */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return uroce_refuse(nic, EINVAL, call,
				    "access %#x: remote write or atomic needs "
				    "IBV_ACCESS_LOCAL_WRITE (IBTA 10.6.3.1)",
				    access);
	return 0;
}

struct ibv_mr *uroce_reg_mr(struct ibv_pd *ibpd, void *addr, size_t length, uint64_t hca_va,
			    int access)
{
	struct uroce_nic *nic = to_unic(ibpd->context);
	/* implicit on-demand paging: the whole address space (odp.c) */
	bool implicit = (access & IBV_ACCESS_ON_DEMAND) && !addr && length == SIZE_MAX;
	struct uroce_mr *mr;
	int err;

	err = check_access(nic, "reg_mr", access);
	if (err) {
		errno = err;
		return NULL;
	}
	if (implicit && (hca_va || !uroce_odp_implicit_ok())) {
		errno = uroce_refuse(nic, hca_va ? EINVAL : EOPNOTSUPP, "reg_mr", "%s",
				     hca_va ? "an implicit on-demand region has iova 0"
					    : "implicit on-demand paging needs MADV_POPULATE_* "
					      "(Linux 5.14)");
		return NULL;
	}
	if (!implicit && ((!addr && length) || (uint64_t)length > (1ull << 46))) {
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
	err = ur_dev_reg_mr(nic->engine, hca_va, addr, implicit ? UINT64_MAX : length,
			    (uint32_t)access, to_upd(ibpd)->id, &mr->mr);
	if (!err) {
		mr->mr->sparse = implicit;
		uroce_link_add(&to_uctx(ibpd->context)->mrs, &mr->link);
	}
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

/*
 * ibv_rereg_mr: a new translation, PD or access for the same keys. The
 * kernel's checks and errors (ib_uverbs_rereg_mr): no flag, or one unknown,
 * EINVAL; an access reg_mr would refuse, EINVAL; a region on device memory,
 * EINVAL; and a region cannot turn on-demand or back. The change is made
 * under the progress lock: every packet the engine handles after this
 * returns, including the rest of a message already under way, is checked
 * against (and lands in) the new region, as every packet is checked against
 * the key table; none touches the old memory after it.
 */
int uroce_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *ibpd, void *addr, size_t length,
		   int access)
{
	struct uroce_mr *mr = to_type(vmr, struct uroce_mr, vmr);
	struct ibv_context *ibctx = vmr->ibv_mr.context;
	struct uroce_nic *nic = to_unic(ibctx);
	const int known =
	    IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_ACCESS;
	struct uroce_pd *npd = mr->pd;
	int err;

	if (!flags || (flags & ~known) || mr->dm) {
		errno = uroce_refuse(nic, EINVAL, "rereg_mr", "flags %#x: %s", flags,
				     mr->dm ? "a region on device memory" : "none or unknown");
		return errno;
	}
	if (flags & IBV_REREG_MR_CHANGE_ACCESS) {
		err = check_access(nic, "rereg_mr", access);
		if (!err && (access ^ vmr->access) & IBV_ACCESS_ON_DEMAND)
			err = uroce_refuse(nic, EINVAL, "rereg_mr",
					   "IBV_ACCESS_ON_DEMAND cannot change");
		if (err)
			return errno = err;
	}
	if (flags & IBV_REREG_MR_CHANGE_PD) {
		if (!ibpd || ibpd->context != ibctx)
			return errno = uroce_refuse(nic, EINVAL, "rereg_mr",
						    "the new PD is not one of this context");
		npd = to_upd(ibpd);
	}
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		if (!addr || !length || (uint64_t)length > (1ull << 46) || mr->mr->sparse)
			return errno = uroce_refuse(
				   nic, EINVAL, "rereg_mr", "addr %p length %zu: %s", addr, length,
				   mr->mr->sparse ? "an implicit region has no translation"
						  : "no memory, or above max_mr_size 2^46");
	}
	pthread_mutex_lock(&nic->lock);
	if (mr->mr->windows) {
		/* a bound window points into the region as it is now */
		unsigned n = mr->mr->windows;

		pthread_mutex_unlock(&nic->lock);
		return errno = uroce_refuse(nic, EBUSY, "rereg_mr",
					    "%u memory windows are bound to it", n);
	}
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		mr->mr->iova = (uintptr_t)addr;
		mr->mr->base = addr;
		mr->mr->length = length;
	}
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		mr->mr->access = (uint32_t)access;
	mr->mr->pd = npd->id;
	pthread_mutex_unlock(&nic->lock);
	if (npd != mr->pd) {
		atomic_fetch_add(&npd->refs, 1);
		atomic_fetch_sub(&mr->pd->refs, 1);
		mr->pd = npd;
	}
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		vmr->access = access;
	uroce_log(nic, 2, "rereg_mr key %#x flags %#x: %p+%zu access %#x pd %u", mr->mr->key, flags,
		  (void *)mr->mr->base, (size_t)mr->mr->length, mr->mr->access, npd->id);
	return 0;
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
	if (mr->dm)
		atomic_fetch_sub(&mr->dm->refs, 1);
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
