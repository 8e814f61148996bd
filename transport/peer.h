/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Destinations of the device's acknowledged QPs, each with its own cap on
 * unacknowledged request packets (peer.c). Internal.
 */
#ifndef UR_PEER_H
#define UR_PEER_H

#include <stdbool.h>
#include <stdint.h>

#include "frame.h"

struct ur_dev;
struct ur_qp;

/*
 * One receiving process, as far as the engine can tell: a destination GID
 * and a block of destination QP numbers (cfg.peer_qpn_shift). Each uroce
 * process has a receive ring of its own and owns whole blocks of QP
 * numbers, so two processes behind one GID (or on this very device) are
 * two peers; a stopped one holds up only the QPs that send to it.
 */
struct ur_peer {
	struct ur_gid gid;
	uint32_t block;	      /* destination QPN >> cfg.peer_qpn_shift */
	uint32_t refs;	      /* QPs bound to it */
	uint32_t inflight;    /* their unacknowledged request packets, <= cfg.max_peer_inflight
			       * but for what a QP had out when it was bound */
	struct ur_qp *capped; /* QPs waiting for room, FIFO */
	struct ur_qp *capped_tail;
	struct ur_peer *hash_next;
};

/*
 * Make `qp` count toward the peer (gid, dqpn), created on first use; what
 * it has in flight moves with it from the peer it had. Called from modify,
 * never per packet: it may allocate. 0 or -ENOMEM (the QP keeps its peer).
 */
int ur_peer_bind(struct ur_dev *dev, struct ur_qp *qp, const struct ur_gid *gid, uint32_t dqpn);
/* The QP counts toward no peer any more; a peer with no QPs left is freed. */
void ur_peer_unbind(struct ur_dev *dev, struct ur_qp *qp);
/* Take the QP off its peer's wait for room, if it is on it. */
void ur_peer_uncap(struct ur_qp *qp);
/* Free every peer (device teardown). */
void ur_peer_table_fini(struct ur_dev *dev);
/* The most packets in flight toward any one peer (tests, the simulator). */
uint32_t ur_peer_max_inflight(const struct ur_dev *dev);

/* Bring the QP's peer's count up to date with its unacknowledged packets. */
void ur_dev_account(struct ur_dev *dev, struct ur_qp *qp);
/* Whether the QP may send a new packet now; if not, it waits for room. */
bool ur_dev_room(struct ur_dev *dev, struct ur_qp *qp);

#endif
