/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Device memory (ibv_alloc_dm): memory of the device's own that a program
 * reaches only through ibv_memcpy_to_dm/from_dm and through MRs registered
 * on it (zero-based, as the kernel requires). uroce's device is the
 * engine in the process, so its memory is the provider's heap; the
 * semantics (a budget of max_dm_size bytes per device, bounds, zero-based
 * keys) are a NIC's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "uroce.h"

static inline struct uroce_dm *to_udm(struct ibv_dm *dm)
{
	return to_type(dm, struct uroce_dm, vdm.dm);
}

static int dm_copy(struct uroce_dm *dm, uint64_t off, size_t len)
{
	return off > dm->length || len > dm->length - off ? EFAULT : 0;
}

static int memcpy_to_dm(struct ibv_dm *ibdm, uint64_t off, const void *host, size_t len)
{
	struct uroce_dm *dm = to_udm(ibdm);
	int err = dm_copy(dm, off, len);

	if (!err)
		memcpy(dm->buf + off, host, len);
	return err;
}

static int memcpy_from_dm(void *host, struct ibv_dm *ibdm, uint64_t off, size_t len)
{
	struct uroce_dm *dm = to_udm(ibdm);
	int err = dm_copy(dm, off, len);

	if (!err)
		memcpy(host, dm->buf + off, len);
	return err;
}

struct ibv_dm *uroce_alloc_dm(struct ibv_context *ibctx, struct ibv_alloc_dm_attr *attr)
{
	struct uroce_nic *nic = to_unic(ibctx);
	size_t align = (size_t)1 << (attr->log_align_req < 6 ? 6 : attr->log_align_req);
	struct uroce_dm *dm;
	size_t used;

	if (attr->comp_mask || !attr->length || attr->log_align_req > 12) {
		errno = uroce_refuse(nic, EINVAL, "alloc_dm",
				     "comp_mask %#x, length %zu, log_align_req %u (at most 12)",
				     attr->comp_mask, attr->length, attr->log_align_req);
		return NULL;
	}
	used = atomic_fetch_add(&nic->dm_used, attr->length);
	if (attr->length > UROCE_MAX_DM || used > UROCE_MAX_DM - attr->length) {
		atomic_fetch_sub(&nic->dm_used, attr->length);
		errno =
		    uroce_refuse(nic, ENOMEM, "alloc_dm", "%zu bytes: %zu of max_dm_size %u in use",
				 attr->length, used, UROCE_MAX_DM);
		return NULL;
	}
	dm = calloc(1, sizeof(*dm));
	if (dm)
		dm->buf = aligned_alloc(align, (attr->length + align - 1) & ~(align - 1));
	if (!dm || !dm->buf) {
		free(dm);
		atomic_fetch_sub(&nic->dm_used, attr->length);
		errno = ENOMEM;
		return NULL;
	}
	memset(dm->buf, 0, attr->length);
	dm->length = attr->length;
	atomic_init(&dm->refs, 0);
	dm->vdm.dm.context = ibctx;
	dm->vdm.dm.memcpy_to_dm = memcpy_to_dm;
	dm->vdm.dm.memcpy_from_dm = memcpy_from_dm;
	return &dm->vdm.dm;
}

int uroce_free_dm(struct ibv_dm *ibdm)
{
	struct uroce_dm *dm = to_udm(ibdm);
	struct uroce_nic *nic = to_unic(ibdm->context);

	if (atomic_load(&dm->refs))
		return uroce_refuse(nic, EBUSY, "free_dm", "%u MRs still on the device memory",
				    atomic_load(&dm->refs));
	atomic_fetch_sub(&nic->dm_used, dm->length);
	free(dm->buf);
	free(dm);
	return 0;
}

/* An MR on device memory: zero-based, as the kernel requires (the memory has no address the
 * program could use); the access mlx5 allows on it. */
struct ibv_mr *uroce_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *ibdm, uint64_t off, size_t length,
			       unsigned int access)
{
	const unsigned int allowed = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
				     IBV_ACCESS_ZERO_BASED;
	struct uroce_dm *dm = to_udm(ibdm);
	struct uroce_mr *mr;
	struct ibv_mr *m;

	if (!(access & IBV_ACCESS_ZERO_BASED) || (access & ~allowed) || !length ||
	    dm_copy(dm, off, length)) {
		errno = uroce_refuse(to_unic(pd->context), EINVAL, "reg_dm_mr",
				     "access %#x (must be zero-based), %#llx+%zu of %zu bytes",
				     access, (unsigned long long)off, length, dm->length);
		return NULL;
	}
	m = uroce_reg_mr(pd, dm->buf + off, length, 0, (int)access);
	if (!m)
		return NULL;
	mr = to_type(m, struct uroce_mr, vmr.ibv_mr);
	mr->dm = dm;
	atomic_fetch_add(&dm->refs, 1);
	/* libibverbs fills these after reg_mr, not after reg_dm_mr */
	m->context = pd->context;
	m->pd = pd;
	m->addr = NULL;
	m->length = length;
	return m;
}
