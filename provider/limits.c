/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * How many objects of each kind a context may hold: what query_device
 * advertises is what create refuses beyond, with ENOMEM as the kernel's
 * drivers answer an exhausted resource. UROCE_LIMITS=qp=N,mr=N,cq=N,pd=N,
 * srq=N,ah=N lowers them (never raises them), so a program's behaviour at
 * its limits can be tried without creating a quarter of a million QPs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "uroce.h"

static const char *const obj_names[UROCE_OBJ_COUNT] = {
	[UROCE_OBJ_PD] = "pd", [UROCE_OBJ_MR] = "mr",	[UROCE_OBJ_CQ] = "cq",
	[UROCE_OBJ_QP] = "qp", [UROCE_OBJ_SRQ] = "srq", [UROCE_OBJ_AH] = "ah",
};

void uroce_limits_init(struct uroce_context *ctx)
{
	const char *env = getenv("UROCE_LIMITS");
	char buf[256], *save = NULL, *tok;

	ctx->limit[UROCE_OBJ_PD] = 1u << 16;
	ctx->limit[UROCE_OBJ_MR] = UR_MR_MAX - 1; /* the MR table's size; index 0 is never used */
	ctx->limit[UROCE_OBJ_CQ] = 1u << 16;
	/* the QP number blocks one process may own, less QP0 and QP1 */
	ctx->limit[UROCE_OBJ_QP] = (UROCE_MAX_OWN_BLOCKS << UROCE_QPN_BLOCK_BITS) - 2;
	ctx->limit[UROCE_OBJ_SRQ] = 1u << 16;
	ctx->limit[UROCE_OBJ_AH] = 1u << 16;
	for (unsigned i = 0; i < UROCE_OBJ_COUNT; i++)
		atomic_init(&ctx->nobj[i], 0);
	if (!env || strlen(env) >= sizeof(buf))
		return;
	strcpy(buf, env);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '='), *end;
		unsigned long v;

		if (!eq)
			continue;
		*eq++ = 0;
		v = strtoul(eq, &end, 0);
		if (end == eq || *end)
			continue;
		for (unsigned i = 0; i < UROCE_OBJ_COUNT; i++)
			if (!strcmp(tok, obj_names[i]) && v < ctx->limit[i])
				ctx->limit[i] = (uint32_t)v;
	}
	uroce_log(ctx, 1, "limits: qp %u mr %u cq %u pd %u srq %u ah %u",
		  ctx->limit[UROCE_OBJ_QP], ctx->limit[UROCE_OBJ_MR], ctx->limit[UROCE_OBJ_CQ],
		  ctx->limit[UROCE_OBJ_PD], ctx->limit[UROCE_OBJ_SRQ], ctx->limit[UROCE_OBJ_AH]);
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
