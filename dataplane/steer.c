/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Steering, the port's side: attach the program steer_bpf.c builds to the
 * af_packet receive socket (see there for why).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "dp_internal.h"
#include "steer_bpf.h"

int uroce_dp_steer(struct uroce_dp *dp, const uint32_t *blocks, unsigned n, unsigned shift)
{
	struct sock_filter insn[DP_STEER_MAX_INSNS];
	struct sock_fprog fprog;
	int len;

	if (dp->afp.fd < 0)
		return -EOPNOTSUPP; /* memif, tap, AF_XDP, a NIC: no socket of ours to filter */
	len = dp_steer_build(insn, DP_STEER_MAX_INSNS, blocks, n, shift);
	if (len < 0)
		return len;
	fprog.len = (unsigned short)len;
	fprog.filter = insn;
	if (setsockopt(dp->afp.fd, SOL_SOCKET, SO_ATTACH_FILTER, &fprog, sizeof(fprog)))
		return -errno;
	return 0;
}
