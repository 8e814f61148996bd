/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `uroce env`: the environment a verbs program needs to see this network
 * namespace's uroce devices, as shell exports for `eval "$(uroce env)"`.
 *
 * SYSFS_PATH points the stock libibverbs at our sysfs tree (it scans it
 * because the kernel has no RDMA netlink). LD_PRELOAD loads the provider
 * before the program starts: it registers the driver, and it supplies
 * ibv_create_comp_channel, which in libibverbs 44 is a kernel command and
 * not a provider hook.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "registry.h"
#include "uroce.h"

#ifndef UROCE_PROVIDER_PATH
#define UROCE_PROVIDER_PATH "/usr/local/lib/x86_64-linux-gnu/libibverbs/liburoce-rdmav34.so"
#endif

/* The provider next to this binary when run from a build tree, else the installed one. */
const char *uroce_provider_path(void)
{
	static char path[PATH_MAX];
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n > 0) {
		char *slash;

		exe[n] = 0;
		slash = strrchr(exe, '/');
		if (slash) {
			*slash = 0;
			int w = snprintf(path, sizeof(path), "%s/../provider/liburoce-rdmav34.so", exe);

			if (w > 0 && (size_t)w < sizeof(path) && !access(path, R_OK) && realpath(path, exe))
				return strcpy(path, exe);
		}
	}
	return UROCE_PROVIDER_PATH;
}

int cmd_env(int argc, char **argv)
{
	char sys[PATH_MAX];
	const char *pre = getenv("LD_PRELOAD"), *prov = uroce_provider_path();

	if (argc > 1) {
		printf("usage: eval \"$(uroce env)\"\n\n"
		       "Prints the exports that let unmodified verbs programs use the uroce\n"
		       "devices of this network namespace: SYSFS_PATH (where libibverbs looks for\n"
		       "devices when the kernel has no RDMA) and LD_PRELOAD (the uroce provider,\n"
		       "which also supplies completion channels for event mode).\n");
		return strcmp(argv[1], "--help") && strcmp(argv[1], "-h") ? 2 : 0;
	}
	if (uroce_sysfs_dir(sys, sizeof(sys)))
		return 1;
	printf("export SYSFS_PATH=%s\n", sys);
	if (pre && strstr(pre, prov))
		printf("export LD_PRELOAD=%s\n", pre);
	else
		printf("export LD_PRELOAD=%s%s%s\n", prov, pre && *pre ? ":" : "", pre ? pre : "");
	return 0;
}
