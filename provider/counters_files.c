/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hw_counters files: what monitoring scripts read on RoCE NICs
 * (ports/1/hw_counters/<name>), holding the device-wide totals of every
 * process that used the device; `uroce link add` makes every one at 0, as
 * mlx5 shows its counters from the start. One process at a time (elected
 * by a lock, and re-elected within half a second when it dies) rewrites
 * the ones that changed every half second; every process rewrites them as
 * it opens the device (the totals of one killed before it are final then)
 * and once more as it closes it, so the last one out leaves the final
 * totals even when the elected one left at the same moment. `uroce stat`
 * brings them up to date too (after a SIGKILL of the last program). Rewrites
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

static void rewrite(struct uroce_nic *nic)
{
	uint64_t totals[UROCE_ROW_COUNTERS];
	char sys[PATH_MAX], hw[PATH_MAX + 64];

	/* the rows this process has mapped since it opened the device: mapping
	 * the 2.9 MB again every half second cost a fault per page, each a trip
	 * to the hypervisor on this VM (0.5-1% of samples in profiles) */
	uroce_shared_sum(nic->shared.rows, totals);
	if (uroce_sysfs_dir(sys, sizeof(sys)) ||
	    (size_t)snprintf(hw, sizeof(hw), "%s/class/infiniband/%s/ports/1/hw_counters", sys,
			     nic->conf.name) >= sizeof(hw))
		return;
	uroce_counter_files_write(hw, totals, nic->counters_written);
}

void uroce_counters_write(struct uroce_nic *nic, bool final)
{
	if (!final && !nic->shared.writer)
		return; /* another process writes the files (elected under nic->lock) */
	if (uroce_shared_files_lock(&nic->shared))
		return;
	rewrite(nic);
	/* the sockets killed programs left (one sweep at a time, as a rewrite) */
	uroce_shared_sweep(nic->devdir);
	uroce_shared_files_unlock(&nic->shared);
}
