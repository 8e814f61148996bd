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
 * That is the af_packet receive socket's mmap (afp_rx.c) and memif's
 * shared regions (memif_ctl.c, as it maps them), with dp_touch_pages (touch.h).
 */
#include "dp_internal.h"
#include "touch.h"

void dp_warm(struct uroce_dp *dp)
{
	/* memif's shared regions are touched as memif_ctl.c maps them */
	if (dp->warm || dp->kind != DP_PORT_AFP)
		return;
	dp_touch_pages(dp->afp.map, dp->afp.map_len);
	dp->warm = true;
	dp_log(dp, "touched %zu pages of the receive ring", dp->afp.map_len / 4096);
}
