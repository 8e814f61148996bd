/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The port a device's user opens, one rule for the provider and the
 * device daemon: the device's own port (af_packet, memif, AF_XDP, tap, a
 * NIC) for the daemon and for programs over af_packet (each has sockets
 * of its own, the kernel switches between them); for programs on any
 * other port, while the device has a daemon, an attachment to it: a memif
 * link to the daemon's socket (docs/shared-device.md 4.3).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "registry.h"

#include "config.h"
#include "port_config.h"

void uroce_port_config(const struct uroce_config *cfg, const struct uroce_devconf *conf,
		       struct uroce_dp_config *dc)
{
	memset(dc, 0, sizeof(*dc));
	dc->name = conf->name;
	dc->port = conf->port;
	dc->netdev = conf->netdev;
	memcpy(dc->mac, conf->mac, 6);
	dc->eth_mtu = conf->netdev_mtu;
	for (unsigned i = 0; i < conf->ngids && i < UROCE_DP_MAX_ADDRS; i++)
		memcpy(dc->addrs[dc->naddrs++], conf->gids[i].raw, 16);
	/* Only af_packet leaves the kernel its frames, and the kernel answers
	 * ARP and ND for the interface's addresses. memif has no kernel
	 * behind it; AF_XDP's program (DPDK's) hands every frame of the
	 * queue, ARP too, to the socket, so the kernel sees none; a tap's
	 * kernel side is the wire, and a NIC under DPDK has no kernel driver:
	 * the port answers, with the device's MAC, which is the interface's. */
	dc->answer_neigh = strcmp(conf->port, "af_packet") != 0;
	dc->seed = cfg->seed;
	dc->debug = cfg->debug;
	dc->keep_dpdk_log = cfg->debug_set;
	dc->no_huge = cfg->no_huge;
	dc->no_gso = cfg->no_gso;
}

bool uroce_port_wants_daemon(const char *port)
{
	return strcmp(port, "af_packet") != 0;
}

void uroce_daemon_socket(const char *devdir, char *buf, size_t len)
{
	snprintf(buf, len, "%s/uroced.sock", devdir);
}

bool uroce_port_via_daemon(const struct uroce_devconf *conf, const char *devdir, char *port,
			   size_t len)
{
	char sock[UROCE_DAEMON_SOCKET_MAX];

	/* the daemon may be starting or restarting: the memif client waits for it */
	if (!conf->daemon || !uroce_port_wants_daemon(conf->port))
		return false;
	uroce_daemon_socket(devdir, sock, sizeof(sock));
	/* any interface id: the daemon tells its programs apart by pid. 1024
	 * slots, not memif's 2048: the port drains every program's ring in
	 * turn, and a deep ring only delays what waits behind a bulk sender's
	 * frames (ARP requests behind 8 MB of WRITEs missed their 2 s); not
	 * 512 either: the same size receives, and ib_send_bw's burst of 1000
	 * UD datagrams overflowed it. Buffers for RoCE frames, not the
	 * interface's MTU: the daemon hands a program nothing else, and half
	 * the memory is half the pages a program's start must touch (a
	 * loaded host took seconds over 19 MB). The daemon stamps the frames
	 * it puts in our ring, so the long waits there are counted */
	snprintf(port, len, "memif:role=client,id=%d,socket=%s,rsize=10,bsize=%u,stamps=1",
		 (int)getpid(), sock, UROCE_DP_ROCE_FRAME_ROOM);
	return true;
}
