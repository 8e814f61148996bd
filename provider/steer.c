/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Steering, the provider's side: tell the port which received frames are
 * this process's, whenever that changes (and the loopback between
 * processes, which frames to our own MAC stay in this one). They are the frames for the QP
 * number blocks this process holds (shared.h), so each packet reaches the
 * one process that owns its destination QP (dataplane/steer_bpf.c), and
 * nobody else parses, answers or NAKs it. The device's housekeeper (the
 * process elected to write the hw_counters files) also takes block 0: QP
 * numbers 0 and 1 (SMI and GSI, IBTA 3.5.1) belong to no block anyone can
 * claim, and this way such packets are still seen and counted, once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "uroce.h"

/* Called before the progress thread starts, or with nic->lock held. */
int uroce_steer_update(struct uroce_nic *nic)
{
	uint32_t blocks[UROCE_MAX_OWN_BLOCKS + 1];
	unsigned n = 0;
	int err;

	/* a socket bound for a block replaces the file at its name, which
	 * after the device was deleted and added again is another's */
	if (!uroce_shared_current(&nic->shared, nic->devdir)) {
		uroce_log(nic, 1, "%s was deleted while we ran: no loopback sockets bound",
			  nic->conf.name);
		return -ENODEV;
	}
	for (unsigned k = 0; k < nic->shared.nblocks; k++)
		blocks[k] = nic->shared.blocks[k];
	/* loopback: frames from other processes of the host for these blocks */
	err = uroce_dp_own_blocks(nic->dp, blocks, nic->shared.nblocks, UROCE_QPN_BLOCK_BITS);
	if (err) {
		uroce_log(nic, 0, "cannot take loopback frames for our QP numbers: %s",
			  strerror(-err));
		return err;
	}
	if (nic->steer_unsupported || nic->cfg.no_steer)
		return 0;
	if (nic->shared.writer)
		blocks[n++] = 0;
	for (unsigned k = 0; k < nic->shared.nblocks; k++)
		blocks[n++] = nic->shared.blocks[k];
	err = uroce_dp_steer(nic->dp, blocks, n, UROCE_QPN_BLOCK_BITS);
	if (err == -EOPNOTSUPP) {
		/* memif, tap, AF_XDP and NICs: the device daemon steers, or nobody
		 * (daemon off: one process per device, docs/multi-process.md) */
		nic->steer_unsupported = true;
		if (nic->dp_port[0])
			uroce_log(nic, 2, "port %s: the device daemon steers received frames",
				  nic->conf.port);
		else
			uroce_log(nic, 1, "port %s: no receive steering and no device daemon; "
				  "one process per device", nic->conf.port);
		return 0;
	}
	if (err) {
		uroce_log(nic, 0, "cannot steer received frames to this process: %s", strerror(-err));
		return err;
	}
	nic->steer_block0 = nic->shared.writer;
	uroce_log(nic, 2, "steering: %u QPN block(s)%s", nic->shared.nblocks,
		  nic->steer_block0 ? " and block 0" : "");
	return 0;
}
