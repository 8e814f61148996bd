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
void uroce_limits_init(struct uroce_context *ctx)
{
	for (unsigned i = 0; i < UROCE_OBJ_COUNT; i++) {
		ctx->limit[i] = ctx->cfg.limit[i];
		atomic_init(&ctx->nobj[i], 0);
	}
}

int uroce_obj_get(struct uroce_context *ctx, enum uroce_obj o)
{
	unsigned n = atomic_fetch_add(&ctx->nobj[o], 1);

	if (n >= ctx->limit[o]) {
		atomic_fetch_sub(&ctx->nobj[o], 1);
		return ENOMEM;
	}
	return 0;
}

void uroce_obj_put(struct uroce_context *ctx, enum uroce_obj o)
{
	atomic_fetch_sub(&ctx->nobj[o], 1);
}
