/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `uroce stat DEV [-w] [-a]`: the device's counters, summed over every
 * process that uses or used it, with per-second rates. The same totals are
 * in $SYSFS_PATH/class/infiniband/DEV/ports/1/hw_counters/<name>, which
 * stat brings up to date first (after a program was killed, they lag).
 */
#define _GNU_SOURCE
#include <limits.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "registry.h"
#include "shared.h"
#include "uroce.h"

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The hw_counters files to the totals shown: a program killed with
 * SIGKILL never wrote its last counts there (best effort: needs write
 * access to the files). */
static void sync_files(const char *dev, const char *dir)
{
	char sys[PATH_MAX], hw[PATH_MAX + 64];

	if (uroce_sysfs_dir(sys, sizeof(sys)) ||
	    (size_t)snprintf(hw, sizeof(hw), "%s/class/infiniband/%s/ports/1/hw_counters", sys,
			     dev) >= sizeof(hw))
		return;
	uroce_counter_files_sync(dir, hw);
}

int cmd_stat(int argc, char **argv)
{
	uint64_t prev[UROCE_ROW_COUNTERS], cur[UROCE_ROW_COUNTERS];
	char dir[PATH_MAX];
	const char *dev = NULL;
	bool watch = false, all = false;
	double t_prev;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-w"))
			watch = true;
		else if (!strcmp(argv[i], "-a"))
			all = true;
		else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("usage: uroce stat DEV [-w] [-a]\n\n"
			       "Counters of uroce device DEV summed over every process that used it,\n"
			       "with rates per second. -w refreshes every second; -a shows zeros too.\n"
			       "The same totals are in $SYSFS_PATH/class/infiniband/DEV/ports/1/hw_counters.\n");
			return 0;
		} else if (!dev)
			dev = argv[i];
		else
			return 2;
	}
	if (!dev) {
		fprintf(stderr, "usage: uroce stat DEV [-w] [-a]\n");
		return 2;
	}
	if (uroce_dev_dir(dev, dir, sizeof(dir)) || access(dir, F_OK)) {
		fprintf(stderr, "uroce stat: no device '%s' in this network namespace\n", dev);
		return 1;
	}
	sync_files(dev, dir);
	if (uroce_shared_totals(dir, prev) == -EPROTO) {
		fprintf(stderr, "uroce stat: %s was made by another version of uroce: "
				"`uroce link del %s` and add it again\n", dev, dev);
		return 1;
	}
	t_prev = mono_s();
	if (watch)
		sleep(1);
	for (;;) {
		double t = mono_s(), dt = t - t_prev;

		uroce_shared_totals(dir, cur);
		if (watch)
			printf("\033[H\033[J");
		printf("%s: %d process(es) using it now\n", dev, uroce_shared_users(dir));
		printf("  %-32s %16s %14s\n", "counter", "total", "per second");
		for (unsigned i = 0; uroce_row_counter_name(i); i++) {
			if (!all && !cur[i])
				continue;
			printf("  %-32s %16llu %14.1f\n", uroce_row_counter_name(i),
			       (unsigned long long)cur[i],
			       watch && dt > 0 ? (double)(cur[i] - prev[i]) / dt : 0.0);
		}
		fflush(stdout);
		if (!watch)
			return 0;
		memcpy(prev, cur, sizeof(prev));
		t_prev = t;
		sleep(1);
	}
}
