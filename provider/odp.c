/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * On-demand paging. uroce's NIC is the CPU: it reads and writes registered
 * memory through the process's own page tables, so a page never touched or
 * swapped out is faulted in by the kernel as for any load or store, and no
 * region is pinned (reg_mr neither mlocks nor pins; docs/verbs.md). An
 * explicit ODP region is therefore an ordinary one. An implicit region
 * (reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_ON_DEMAND)) covers the whole
 * address space, holes included: the engine asks fault_in before every
 * access to it (mr.h's `sparse`), which faults the pages in with
 * madvise(MADV_POPULATE_*) or says they cannot be, and the access fails as
 * a NIC's unresolvable ODP fault does. ibv_advise_mr prefetches the same
 * way.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "uroce.h"

static uintptr_t page_mask(void)
{
	static _Atomic uintptr_t mask;
	uintptr_t m = atomic_load_explicit(&mask, memory_order_relaxed);

	if (!m) {
		m = (uintptr_t)sysconf(_SC_PAGESIZE) - 1;
		atomic_store_explicit(&mask, m, memory_order_relaxed);
	}
	return m;
}

/* One madvise for the pages [p, p+len) spans; false if any cannot be faulted in. */
static int populate(void *p, uint64_t len, int advice)
{
	uintptr_t m = page_mask(), a = (uintptr_t)p, start, end;

	if (!len)
		return 0;
	if (len > UINTPTR_MAX - a || a + len > UINTPTR_MAX - m)
		return EFAULT;
	start = a & ~m;
	end = (a + len + m) & ~m;
	return madvise((void *)start, end - start, advice) ? errno : 0;
}

bool uroce_odp_fault_in(void *p, uint64_t len, bool write)
{
	return !populate(p, len, write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ);
}

/* MADV_POPULATE_* came with Linux 5.14; older kernels answer EINVAL. */
bool uroce_odp_implicit_ok(void)
{
	static atomic_int ok; /* 0 unknown, 1 yes, 2 no */
	static char probe;
	int v = atomic_load_explicit(&ok, memory_order_relaxed);

	if (!v) {
		v = populate(&probe, 1, MADV_POPULATE_READ) == EINVAL ? 2 : 1;
		atomic_store_explicit(&ok, v, memory_order_relaxed);
	}
	return v == 1;
}

/*
 * ibv_advise_mr: prefetch now (IBV_ADVISE_MR_FLAG_FLUSH or not: the work is
 * done before returning). The checks and their errors are the kernel's
 * (ib_uverbs_advise_mr, mlx5_ib_advise_mr): unknown flags EINVAL, unknown
 * advice EOPNOTSUPP, an lkey that is not an on-demand region of this PD (or
 * PREFETCH_WRITE of one without local write) ENOENT, a range outside its
 * region or memory that cannot be faulted in EFAULT.
 */
int uroce_advise_mr(struct ibv_pd *ibpd, enum ibv_advise_mr_advice advice, uint32_t flags,
		    struct ibv_sge *sg, uint32_t num_sge)
{
	struct uroce_context *ctx = to_uctx(ibpd->context);
	struct uroce_nic *nic = ctx->nic;
	uint32_t pd = to_upd(ibpd)->id;

	if (flags & ~(uint32_t)IBV_ADVISE_MR_FLAG_FLUSH)
		return uroce_refuse(nic, EINVAL, "advise_mr", "flags %#x unknown", flags);
	if (advice != IBV_ADVISE_MR_ADVICE_PREFETCH &&
	    advice != IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
	    advice != IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
		return uroce_refuse(nic, EOPNOTSUPP, "advise_mr", "advice %d unknown", advice);
	if (!num_sge || !sg)
		return uroce_refuse(nic, EINVAL, "advise_mr", "no SGE");
	for (uint32_t i = 0; i < num_sge; i++) {
		struct ur_mr found = {0};
		bool have = false;
		void *p;
		int err;

		pthread_mutex_lock(&nic->lock);
		for (struct uroce_link *l = ctx->mrs.next; l != &ctx->mrs; l = l->next) {
			struct uroce_mr *mr = to_type(l, struct uroce_mr, link);

			if (mr->mr->key == sg[i].lkey) {
				found = *mr->mr;
				have = true;
				break;
			}
		}
		pthread_mutex_unlock(&nic->lock);
		if (!have || found.pd != pd || !(found.access & IBV_ACCESS_ON_DEMAND) ||
		    (advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
		     !(found.access & IBV_ACCESS_LOCAL_WRITE)))
			return uroce_refuse(nic, ENOENT, "advise_mr",
					    "SGE %u: lkey %#x is not an on-demand region of the PD"
					    "%s",
					    i, sg[i].lkey,
					    advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE
						? " with local write"
						: "");
		if (sg[i].addr < found.iova || sg[i].length > found.length ||
		    sg[i].addr - found.iova > found.length - sg[i].length)
			return uroce_refuse(nic, EFAULT, "advise_mr",
					    "SGE %u: %#llx+%u is outside its region", i,
					    (unsigned long long)sg[i].addr, sg[i].length);
		/* NO_FAULT maps what is resident: the page tables already do */
		if (advice == IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
			continue;
		p = ur_mr_ptr(&found, sg[i].addr);
		err = populate(p, sg[i].length,
			       advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE ? MADV_POPULATE_WRITE
									     : MADV_POPULATE_READ);
		if (err)
			return uroce_refuse(nic, EFAULT, "advise_mr",
					    "SGE %u: %p+%u cannot be faulted in (%d)", i, p,
					    sg[i].length, err);
	}
	return 0;
}
