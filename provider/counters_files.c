/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hw_counters files: what monitoring scripts read on RoCE NICs
 * (ports/1/hw_counters/<name>), holding the device-wide totals of every
 * process that used the device. One process at a time (elected by a lock)
 * rewrites the ones that changed every half second; every process rewrites
 * them once more as it closes the device, so the last one out leaves the
 * final totals even when the elected one left at the same moment. Rewrites
 * take a file lock and read the totals inside it, so the files only grow.
 * All of it in place and outside the progress lock: file I/O never holds
 * up the engine.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "uroce.h"

static void rewrite(struct uroce_context *ctx)
{
	uint64_t totals[UROCE_ROW_COUNTERS];
	char sys[PATH_MAX], path[PATH_MAX + 64], num[24];

	/* the rows this process has mapped since it opened the device: mapping
	 * the 2.9 MB again every half second cost a fault per page, each a trip
	 * to the hypervisor on this VM (0.5-1% of samples in profiles) */
	uroce_shared_sum(ctx->shared.rows, totals);
	if (uroce_sysfs_dir(sys, sizeof(sys)))
		return;
	for (unsigned i = 0; uroce_row_counter_name(i); i++) {
		int fd, len;

		/* only what changed; counters only grow, so a longer number
		 * written over a shorter one is never seen half old, half new */
		if (totals[i] == ctx->counters_written[i])
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/1/hw_counters/%s",
				     sys, ctx->conf.name, uroce_row_counter_name(i)) >= sizeof(path))
			return;
		fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			continue;
		len = snprintf(num, sizeof(num), "%llu\n", (unsigned long long)totals[i]);
		if (pwrite(fd, num, (size_t)len, 0) == len) {
			if (totals[i] < ctx->counters_written[i] && ftruncate(fd, len))
				len = 0; /* a reset counter: shorter than before */
			ctx->counters_written[i] = totals[i];
		}
		close(fd);
	}
}

void uroce_counters_write(struct uroce_context *ctx, bool final)
{
	if (!final && !ctx->shared.writer)
		return; /* another process writes the files (elected under ctx->lock) */
	if (uroce_shared_files_lock(&ctx->shared))
		return;
	rewrite(ctx);
	uroce_shared_files_unlock(&ctx->shared);
}
