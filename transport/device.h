/* SPDX-License-Identifier: BSD-2-Clause */
/* The engine's device: QP lookup, MRs, timers, the transmit scheduler. Internal. */
#ifndef UR_DEVICE_H
#define UR_DEVICE_H

#include <stdatomic.h>

#include "engine.h"
#include "timer.h"
#include "win_max.h"

struct ur_dev {
	struct ur_dev_config cfg;
	const struct ur_host_ops *ops;
	void *host;
	uint64_t *ctr;
	uint64_t own_ctr[UR_CTR_COUNT];
	struct ur_mr_table mrs;
	struct ur_timer_heap timers;

	/* QP number -> QP, open addressing with linear probing */
	struct ur_qp **qp_hash;
	uint32_t qp_hash_mask;
	uint32_t nqp;

	/* SRQ number -> SRQ (XRCETH), grown at create; numbers from a cursor
	 * so a freed one is not reused at once */
	struct ur_srq **srqs;
	uint32_t nsrqs;
	uint32_t srq_cursor;

	/* QPs with something to transmit, served round robin */
	struct ur_qp *ready_head;
	struct ur_qp *ready_tail;

	/* The destinations of acknowledged QPs, each with its count of
	 * unacknowledged packets and its QPs waiting for room (peer.h):
	 * chained hash, grown at modify, never touched to look up per packet */
	struct ur_peer **peer_hash;
	uint32_t peer_hash_mask;
	uint32_t npeers;

	/* Doorbells rung by application threads: a lock-free stack the engine
	 * empties with one exchange, so pushes never wait for the engine. */
	_Atomic(struct ur_qp *) db_head;

	uint64_t now; /* time of the call in progress */
	/* How late SR timeouts fired: how long this host left the engine
	 * unscheduled, which its peers' hosts may well do too (sr.c) */
	struct ur_win_max late;
	/* the shortest ACK timeout any QP has had (0: none), see ur_dev_quiet_ns() */
	uint64_t min_timeout_ns;
	/* Frames for a peer whose MAC is not known yet are built here and not
	 * sent: the protocol runs as if they were lost, so the QP times out
	 * with RETRY_EXC_ERR if the neighbour never answers. */
	uint8_t scratch[UR_FRAME_MAX];
};

/* The SRQ an XRCETH names, or NULL. */
static inline struct ur_srq *ur_dev_find_srq(const struct ur_dev *dev, uint32_t srqn)
{
	return srqn < dev->nsrqs ? dev->srqs[srqn] : NULL;
}

#define UR_DEV_LATE_PERIOD_NS 10000000000ull
#define UR_DEV_LATE_MAX_NS 1000000000ull /* later: a process stopped, not a busy host */

/* How late a selective-repeat timeout fired in the last 10-20 s (0 in the
 * simulator, but for a node it stalls). */
static inline uint64_t ur_dev_late_max(const struct ur_dev *dev, uint64_t now)
{
	return ur_win_max_get(&dev->late, now, UR_DEV_LATE_PERIOD_NS);
}

static inline void ur_count(struct ur_dev *dev, enum ur_counter c)
{
	dev->ctr[c]++;
}

static inline void ur_count_n(struct ur_dev *dev, enum ur_counter c, uint64_t n)
{
	dev->ctr[c] += n;
}

#include "engine_log.h"
#include "peer.h"
#include "qp_table.h"
#include "tx_sched.h"

#endif
