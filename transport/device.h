/* SPDX-License-Identifier: BSD-2-Clause */
/* The engine's device: QP lookup, MRs, timers, the transmit scheduler. Internal. */
#ifndef UR_DEVICE_H
#define UR_DEVICE_H

#include <stdatomic.h>

#include "engine.h"
#include "timer.h"

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

	/* QPs with something to transmit, served round robin */
	struct ur_qp *ready_head;
	struct ur_qp *ready_tail;

	/* Unacknowledged request packets of every RC QP, kept under
	 * cfg.max_dev_inflight so that many QPs together cannot overrun the
	 * peer's receive ring, as one QP alone cannot; QPs with more to send
	 * wait on `capped` until ACKs make room. */
	uint32_t inflight;
	struct ur_qp *capped;
	struct ur_qp *capped_tail;

	/* Doorbells rung by application threads: a lock-free stack the engine
	 * empties with one exchange, so pushes never wait for the engine. */
	_Atomic(struct ur_qp *) db_head;

	uint64_t now; /* time of the call in progress */
	/* the shortest ACK timeout any QP has had (0: none), see ur_dev_quiet_ns() */
	uint64_t min_timeout_ns;
	/* Frames for a peer whose MAC is not known yet are built here and not
	 * sent: the protocol runs as if they were lost, so the QP times out
	 * with RETRY_EXC_ERR if the neighbour never answers. */
	uint8_t scratch[UR_FRAME_MAX];
};

static inline void ur_count(struct ur_dev *dev, enum ur_counter c)
{
	dev->ctr[c]++;
}

static inline void ur_count_n(struct ur_dev *dev, enum ur_counter c, uint64_t n)
{
	dev->ctr[c] += n;
}

struct ur_qp *ur_dev_find_qp(const struct ur_dev *dev, uint32_t qpn);
int ur_dev_add_qp(struct ur_dev *dev, struct ur_qp *qp);
void ur_dev_del_qp(struct ur_dev *dev, struct ur_qp *qp);

/* Put a QP on the transmit round robin if it is not there yet. */
void ur_dev_schedule(struct ur_dev *dev, struct ur_qp *qp);
void ur_dev_unschedule(struct ur_dev *dev, struct ur_qp *qp);
/* Bring dev->inflight up to date with the QP's unacknowledged packets. */
void ur_dev_account(struct ur_dev *dev, struct ur_qp *qp);
/* Whether the QP may send a new packet now; if not, it waits for room. */
bool ur_dev_room(struct ur_dev *dev, struct ur_qp *qp);

__attribute__((format(printf, 2, 3))) void ur_dev_log(struct ur_dev *dev, const char *fmt, ...);

#endif
