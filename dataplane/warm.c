/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Touch every page of a port's packet rings once, before traffic.
 *
 * On this kind of VM (paravirtual, shadow page tables) the first access a
 * process makes to a page costs a trip to the hypervisor, and under load a
 * good deal more (tens of microseconds, as the vCPU is descheduled). A ring
 * is used in order, so a new port paid that on its first trip around: the
 * af_packet rings are 4096 frames each way, and ib_write_lat spent its
 * first 2048 iterations (two frames each) at 130-240 us where the rest took
 * 7-8 us. Touched at open, the 9216 pages cost 65 ms once.
 *
 * The rings are found in /proc/self/maps: the af_packet receive socket's
 * mmap (afp_rx.c) and memif's shared regions. The touch is an atomic OR of
 * zero: the kernel or the memif peer may be writing the same bytes, and a
 * locked read-modify-write of zero changes nothing whatever the order.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rte_ethdev.h>

#include "dp_internal.h"

/* Does this line of /proc/self/maps map one of dp's rings? */
static bool is_ring(const struct uroce_dp *dp, const char *line, unsigned long socket_ino)
{
	char want[48];

	if (!strncmp(dp->cfg.port, "memif", 5))
		return strstr(line, "/memfd:memif_region_") != NULL;
	if (!socket_ino)
		return false;
	snprintf(want, sizeof(want), "socket:[%lu]", socket_ino);
	return strstr(line, want) != NULL;
}

void uroce_dp_warm(struct uroce_dp *dp)
{
	unsigned long ino = 0, pages = 0;
	struct rte_eth_link link;
	struct stat st;
	char line[512];
	FILE *f;

	if (dp->warm)
		return;
	/* a memif server's regions appear when its client connects: until
	 * its link is up there is nothing to touch, and the next call looks again */
	if (!strncmp(dp->cfg.port, "memif", 5) &&
	    (rte_eth_link_get_nowait(dp->port_id, &link) || !link.link_status))
		return;
	if (dp->afp.fd >= 0 && !fstat(dp->afp.fd, &st))
		ino = (unsigned long)st.st_ino;
	f = fopen("/proc/self/maps", "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long from, to;
		char perms[8];

		/* a write to a read-only mapping would be fatal: writable ones only */
		if (sscanf(line, "%lx-%lx %7s", &from, &to, perms) != 3 || perms[0] != 'r' ||
		    perms[1] != 'w' || !is_ring(dp, line, ino))
			continue;
		for (unsigned long a = from; a < to; a += 4096, pages++)
			__atomic_fetch_or((uint8_t *)a, 0, __ATOMIC_RELAXED);
	}
	fclose(f);
	/* once is enough; a port without rings here (tap, a NIC) has none to find */
	dp->warm = true;
	dp_log(dp, "touched %lu pages of packet rings", pages);
}
