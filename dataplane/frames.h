/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Frame buffers of uroce's own, for the ports whose frames move through
 * uroce's own code (af_packet sockets, memif): rte_mbuf headers, so that
 * one code path serves these and a DPDK port's mbufs alike, over memory
 * uroce maps itself. A program on such a port never starts DPDK's EAL,
 * which took 100 of a first open's 135 ms here (EAL sleeps 0.1 s to time
 * the TSC where the CPU does not say its rate, as in this VM) and mapped
 * 128 MB (docs/shared-device.md, 4.10).
 *
 * Not thread-safe: the dataplane runs under the provider's progress lock.
 */
#ifndef UROCE_DP_FRAMES_H
#define UROCE_DP_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include <rte_mbuf.h>

struct dp_frames {
	struct rte_mbuf *hdr; /* n headers, the n buffers after them */
	/* the free ones, a stack: the last freed, still in cache, goes first */
	struct rte_mbuf **free;
	unsigned n, nfree;
	size_t bytes; /* the one mapping that holds it all */
};

/* n frames of `room` bytes each, headroom included: 0, -EINVAL (no frames,
 * or a room beyond an mbuf's 16 bits) or -ENOMEM. */
int dp_frames_init(struct dp_frames *f, unsigned n, uint32_t room);
void dp_frames_fini(struct dp_frames *f);

static inline struct rte_mbuf *dp_frames_get(struct dp_frames *f)
{
	struct rte_mbuf *m;

	if (!f->nfree)
		return NULL;
	m = f->free[--f->nfree];
	m->data_off = RTE_PKTMBUF_HEADROOM;
	m->data_len = 0;
	m->pkt_len = 0;
	return m;
}

static inline void dp_frames_put(struct dp_frames *f, struct rte_mbuf *m)
{
	/* a frame freed twice would overrun the stack into frame 0's buffer */
	if (f->nfree < f->n)
		f->free[f->nfree++] = m;
}

#endif
