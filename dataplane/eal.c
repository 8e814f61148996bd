/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * DPDK's EAL, started once inside someone else's process: the first device
 * open starts it; it lives until exit (DPDK 22.11 cannot start it twice).
 *
 * The arguments keep it a polite guest: a file prefix of its own so two
 * processes never collide, no PCI scan unless a NIC was configured, no
 * telemetry socket, quiet logs unless the debug log asks, hugepages when the
 * machine has free ones and anonymous memory otherwise, and no CPU pinning:
 * EAL would pin the calling application thread to one core, which on a
 * small machine would stack every uroce process on CPU 0.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_log.h>

#include "dp_internal.h"

static pthread_mutex_t eal_lock = PTHREAD_MUTEX_INITIALIZER;
static int eal_state; /* 0 not started, 1 running, <0 -errno of the failed start */

/* Free 2 MiB hugepages right now, from sysfs. */
static long free_hugepages(void)
{
	FILE *f = fopen("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "r");
	long n = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%ld", &n) != 1)
		n = 0;
	fclose(f);
	return n;
}

/* "0,1,3" for the CPUs in `set`. */
static void cpus_list(const cpu_set_t *set, long ncpu, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = 0;
	for (long c = 0; c < ncpu && c < CPU_SETSIZE && off + 8 < len; c++)
		if (CPU_ISSET(c, set))
			off += (size_t)snprintf(buf + off, len - off, "%s%ld", off ? "," : "", c);
	if (!off)
		snprintf(buf, len, "0");
}

/*
 * EAL makes its runtime directory (/var/run/dpdk/uroce-PID for root) even
 * with --no-shconf or --in-memory, and leaves it behind, empty, at exit or
 * SIGKILL: thousands of them after a day of tests. In these modes nothing
 * is ever put there (no config, no multi-process socket, no telemetry), so
 * it goes as soon as EAL is up; and the ones of dead processes (killed
 * while EAL was starting, or left by an older uroce) go at the next start.
 * rmdir() takes only empty ones, so no other DPDK program is touched.
 */
static void drop_runtime_dirs(void)
{
	char parent[PATH_MAX], path[PATH_MAX + 300];
	const char *mine = rte_eal_get_runtime_dir();
	struct dirent *de;
	char *slash;
	DIR *d;

	if (!mine || !*mine ||
	    (size_t)snprintf(parent, sizeof(parent), "%s", mine) >= sizeof(parent))
		return;
	rmdir(mine);
	slash = strrchr(parent, '/');
	if (!slash)
		return;
	*slash = 0;
	d = opendir(parent);
	if (!d)
		return;
	while ((de = readdir(d))) {
		char *end;
		long pid;

		if (strncmp(de->d_name, "uroce-", 6))
			continue;
		pid = strtol(de->d_name + 6, &end, 10);
		if (end == de->d_name + 6 || *end || pid <= 0 || pid > INT_MAX)
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue; /* alive (or not ours to ask about) */
		snprintf(path, sizeof(path), "%s/%s", parent, de->d_name);
		rmdir(path);
	}
	closedir(d);
}

/* The first open's configuration is the one EAL gets: it starts once per process. */
int dp_eal_start(const struct uroce_dp_config *cfg)
{
	const char *pci_bdf = !strncmp(cfg->port, "pci:", 4) ? cfg->port + 4 : NULL;
	char prefix[64], lcores[300], cpus[256], mem[32], allow[64];
	char *argv[24];
	int argc = 0, ret;
	cpu_set_t saved;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	pthread_mutex_lock(&eal_lock);
	if (eal_state) {
		ret = eal_state > 0 ? 0 : eal_state;
		pthread_mutex_unlock(&eal_lock);
		return ret;
	}
	snprintf(prefix, sizeof(prefix), "--file-prefix=uroce-%d", (int)getpid());
	/* lcore 0 may run on every CPU the caller may: EAL must not pin the
	 * application thread (it would pin every uroce process to CPU 0) */
	sched_getaffinity(0, sizeof(saved), &saved);
	cpus_list(&saved, ncpu, cpus, sizeof(cpus));
	snprintf(lcores, sizeof(lcores), "--lcores=0@(%s)", cpus);
	argv[argc++] = "uroce";
	argv[argc++] = prefix;
	argv[argc++] = lcores;
	argv[argc++] = "--no-telemetry";
	argv[argc++] = "--iova-mode=va";
	if (cfg->debug >= 2)
		argv[argc++] = "--log-level=lib.eal:info";
	else
		argv[argc++] = "--log-level=*:error";
	if (pci_bdf) {
		snprintf(allow, sizeof(allow), "--allow=%s", pci_bdf);
		argv[argc++] = allow;
	} else {
		argv[argc++] = "--no-pci";
	}
	if (free_hugepages() < 128 || cfg->no_huge) {
		/* anonymous memory; no runtime files shared with anyone */
		argv[argc++] = "--no-huge";
		argv[argc++] = "--no-shconf";
		snprintf(mem, sizeof(mem), "-m%d", 128);
		argv[argc++] = mem;
	} else {
		/* hugepages from memfd: nothing in /dev/hugepages or /var/run */
		argv[argc++] = "--in-memory";
	}
	argv[argc] = NULL;

	/* belt and braces: whatever EAL does to the caller's affinity, undo it */
	ret = rte_eal_init(argc, argv);
	sched_setaffinity(0, sizeof(saved), &saved);
	if (ret < 0) {
		eal_state = -(rte_errno ? rte_errno : EIO);
	} else {
		eal_state = 1;
		drop_runtime_dirs();
		/* keep DPDK quiet afterwards too unless debugging */
		if (!cfg->keep_dpdk_log)
			rte_log_set_global_level(RTE_LOG_ERR);
	}
	ret = eal_state > 0 ? 0 : eal_state;
	pthread_mutex_unlock(&eal_lock);
	return ret;
}

void uroce_dp_thread_register(void)
{
	/* out of lcore ids (RTE_MAX_LCORE): the thread works on without a cache */
	if (rte_thread_register())
		rte_errno = 0;
}

void uroce_dp_thread_unregister(void)
{
	if (rte_lcore_id() != LCORE_ID_ANY)
		rte_thread_unregister();
}
