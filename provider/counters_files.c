/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hw_counters files: what monitoring scripts read on RoCE NICs
 * (ports/1/hw_counters/<name>), holding the device-wide totals of every
 * process that used the device. One process at a time (elected by a lock)
 * rewrites them every half second and at exit; each file is replaced by
 * rename, so a reader sees an old or a new value, never half of one.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "uroce.h"

void uroce_counters_write(struct uroce_context *ctx)
{
	uint64_t totals[UROCE_ROW_COUNTERS];
	char sys[PATH_MAX], dir[PATH_MAX], path[PATH_MAX + 64], tmp[PATH_MAX + 80];

	if (!uroce_shared_try_writer(&ctx->shared))
		return;
	if (uroce_shared_totals(ctx->devdir, totals) || uroce_sysfs_dir(sys, sizeof(sys)))
		return;
	if ((size_t)snprintf(dir, sizeof(dir), "%s/class/infiniband/%s/ports/1/hw_counters", sys,
			     ctx->conf.name) >= sizeof(dir))
		return;
	for (unsigned i = 0; uroce_row_counter_name(i); i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", dir, uroce_row_counter_name(i));
		snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
		f = fopen(tmp, "w");
		if (!f)
			return;
		fprintf(f, "%llu\n", (unsigned long long)totals[i]);
		if (fclose(f) || rename(tmp, path))
			remove(tmp);
	}
}
