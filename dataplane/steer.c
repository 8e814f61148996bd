/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Steering, the port's side: attach the program steer_bpf.c builds to the
 * af_packet PMD's socket (see there for why).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "dp_internal.h"
#include "steer_bpf.h"

/* Frames that reached the socket before its first filter: nobody vetted them. */
static void drain(struct uroce_dp *dp)
{
	struct rte_mbuf *m[DP_BURST];
	uint16_t n;

	while ((n = rte_eth_rx_burst(dp->port_id, 0, m, DP_BURST)) > 0) {
		dp->ctr[DP_CTR_dp_rx_before_steer] += n;
		rte_pktmbuf_free_bulk(m, n);
	}
}

int uroce_dp_steer(struct uroce_dp *dp, const uint32_t *blocks, unsigned n, unsigned shift)
{
	struct sock_filter insn[DP_STEER_MAX_INSNS];
	struct sock_fprog fprog;
	int len;

	if (dp->wait_fd < 0 || strcmp(dp->cfg.port, "af_packet"))
		return -EOPNOTSUPP; /* memif, tap, AF_XDP, a NIC: no socket of ours to filter */
	len = dp_steer_build(insn, DP_STEER_MAX_INSNS, blocks, n, shift);
	if (len < 0)
		return len;
	fprog.len = (unsigned short)len;
	fprog.filter = insn;
	if (setsockopt(dp->wait_fd, SOL_SOCKET, SO_ATTACH_FILTER, &fprog, sizeof(fprog)))
		return -errno;
	if (!dp->steered) {
		dp->steered = true;
		drain(dp);
	}
	return 0;
}
