/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * How many objects of each kind a context may hold: what query_device
 * advertises is what create refuses beyond, with ENOMEM as the kernel's
 * drivers answer an exhausted resource. The limits themselves, and
 * UROCE_LIMITS that lowers them, are the configuration's (config.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "uroce.h"

/* The limits the configuration settled (config.c: defaults, lowered by UROCE_LIMITS). */
void uroce_limits_init(struct uroce_nic *nic)
{
	for (unsigned i = 0; i < UROCE_OBJ_COUNT; i++) {
		nic->limit[i] = nic->cfg.limit[i];
		atomic_init(&nic->nobj[i], 0);
	}
}

int uroce_obj_get(struct uroce_nic *nic, enum uroce_obj o)
{
	unsigned n = atomic_fetch_add(&nic->nobj[o], 1);

	if (n >= nic->limit[o]) {
		atomic_fetch_sub(&nic->nobj[o], 1);
		return ENOMEM;
	}
	return 0;
}

void uroce_obj_put(struct uroce_nic *nic, enum uroce_obj o)
{
	atomic_fetch_sub(&nic->nobj[o], 1);
}
