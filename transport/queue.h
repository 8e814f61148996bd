/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Work queues and completion queues shared between the application thread
 * (which posts WQEs and polls CQEs) and the engine (which consumes WQEs and
 * produces CQEs). Each ring has one producer and one consumer; indices run
 * free and are masked at use, as in liburing.
 */
#ifndef UR_QUEUE_H
#define UR_QUEUE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "verbs_types.h"

/* Engine-side progress of a send WQE. */
enum ur_wqe_state {
	UR_WQE_POSTED = 0, /* not started */
	UR_WQE_ACTIVE,     /* some packets sent */
	UR_WQE_SENT,       /* every request packet sent, waiting for ACK/response */
	UR_WQE_DONE,       /* completed (successfully or not) */
};

/* One slot of a send queue; SGEs or inline data follow it in the slot. */
struct ur_send_wqe {
	/* written by the poster */
	uint64_t wr_id;
	uint64_t remote_addr;
	union {
		struct {
			uint64_t compare_add;
			uint64_t swap;
		};
		struct {                    /* BIND_MW (remote_addr: the address bound) */
			uint64_t bind_length;
			uint32_t bind_lkey; /* the region's */
			uint32_t bind_access;
		};
	};
	const struct ur_av *ud_av; /* UD: the address handle, alive until completion */
	uint32_t length;           /* total payload bytes */
	uint32_t rkey;             /* BIND_MW: the window's new R_Key */
	uint32_t imm;              /* immediate data (network order), R_Key to invalidate,
				    * or BIND_MW: the window's R_Key */
	uint32_t ud_qpn;
	uint32_t ud_qkey;
	uint32_t xrc_srqn;         /* XRC initiator: the SRQ at the target (XRCETH) */
	uint8_t opcode;            /* enum ur_wr_opcode */
	uint8_t flags;             /* enum ur_send_flags */
	uint8_t num_sge;
	uint8_t signaled;          /* completion requested (flag or sq_sig_all) */
	/* engine state */
	uint8_t state;             /* enum ur_wqe_state */
	uint8_t status;            /* enum ur_wc_status once DONE */
	uint8_t started;           /* started once: its framing (sr) is fixed */
	uint8_t sr;                /* sent with selective-repeat extension headers */
	uint32_t rseq;             /* receive sequence number, if it consumes a receive WQE */
	uint32_t first_psn;
	uint32_t npkts;            /* PSNs the message consumes */
	uint32_t resp_psn;         /* READ: next expected response PSN */
	uint32_t resp_bytes;       /* READ: bytes received so far */
	uint64_t atomic_orig;
	struct ur_sge sge[];
};

/* One slot of a receive queue or shared receive queue. */
struct ur_recv_wqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t length; /* sum of the SGE lengths */
	struct ur_sge sge[];
};

/*
 * Where a work queue's memory comes from when the host has a say (a verbs
 * parent domain's allocator): alloc gives *out, or NULL to use malloc, or
 * fails with -ENOMEM. type is enum ur_wq_mem.
 */
enum ur_wq_mem {
	UR_WQ_MEM_SQ = 1,
	UR_WQ_MEM_RQ,
};

struct ur_alloc {
	int (*alloc)(void *arg, size_t size, enum ur_wq_mem type, void **out);
	void (*free)(void *arg, void *p, enum ur_wq_mem type);
	void *arg;
};

struct ur_wq {
	uint8_t *buf;
	uint32_t stride;
	uint32_t mask;
	uint32_t max_sge;
	uint32_t max_inline;
	/* Producer index: written by the poster with release, so the engine's
	 * acquire load sees the whole WQE it publishes. */
	_Atomic uint32_t prod;
	/* Consumer index: written by the engine with release once a slot may be
	 * reused; the poster reads it with acquire before overwriting a slot. */
	_Atomic uint32_t cons;
	/* cold, after the fields posting and polling read */
	const struct ur_alloc *alloc; /* who gave buf, or NULL for malloc */
	enum ur_wq_mem mem;
};

static inline void *ur_wq_slot(const struct ur_wq *q, uint32_t idx)
{
	return q->buf + (size_t)(idx & q->mask) * q->stride;
}

static inline uint32_t ur_wq_size(const struct ur_wq *q)
{
	return q->mask + 1;
}

/* Poster side: the next free slot, or NULL when the queue is full. */
static inline void *ur_wq_reserve(struct ur_wq *q, uint32_t n_pending)
{
	uint32_t prod = atomic_load_explicit(&q->prod, memory_order_relaxed) + n_pending;
	uint32_t cons = atomic_load_explicit(&q->cons, memory_order_acquire);

	if (prod - cons >= ur_wq_size(q))
		return NULL;
	return ur_wq_slot(q, prod);
}

/* Poster side: publish n reserved slots. */
static inline void ur_wq_commit(struct ur_wq *q, uint32_t n)
{
	uint32_t prod = atomic_load_explicit(&q->prod, memory_order_relaxed);

	atomic_store_explicit(&q->prod, prod + n, memory_order_release);
}

int ur_wq_init(struct ur_wq *q, uint32_t min_entries, uint32_t slot_size);
/* The same with the host's allocator (NULL: malloc). */
int ur_wq_init_alloc(struct ur_wq *q, uint32_t min_entries, uint32_t slot_size,
		     const struct ur_alloc *alloc, enum ur_wq_mem mem);
void ur_wq_fini(struct ur_wq *q);

/* A completion, laid out for a cheap copy into struct ibv_wc. */
struct ur_cqe {
	uint64_t wr_id;
	uint8_t status;    /* enum ur_wc_status */
	uint8_t opcode;    /* enum ur_wc_opcode */
	uint8_t wc_flags;  /* enum ur_wc_flags */
	uint8_t solicited;
	uint32_t byte_len;
	uint32_t imm;      /* immediate data (network order) or invalidated R_Key */
	uint32_t qp_num;
	uint32_t src_qp;
	uint16_t vendor_err;
	uint8_t sl;        /* on a UD receive, enum ur_wc_roce_pkt */
	uint8_t rsvd;
};

enum ur_cq_arm {
	UR_CQ_ARM_NONE = 0,
	UR_CQ_ARM_NEXT = 1,
	UR_CQ_ARM_SOLICITED = 2,
};

struct ur_cq {
	struct ur_cqe *ring;
	uint32_t mask;
	/* Producer index, written by the engine with release so pollers see whole CQEs. */
	_Atomic uint32_t prod;
	/* Consumer index, written by the poller with release so the engine may reuse slots. */
	_Atomic uint32_t cons;
	_Atomic uint32_t arm; /* enum ur_cq_arm; the engine clears it when it fires */
	void *host_ctx;       /* the host's object for this CQ (event delivery) */
	/* Completion times beside the ring, slot for slot, only for a CQ whose
	 * host asked for them (NULL otherwise): the CQE stays 32 bytes. */
	uint64_t *ts;
	uint64_t ts_last; /* the latest stamp: never earlier than the one before */
};

int ur_cq_init(struct ur_cq *cq, uint32_t min_entries, void *host_ctx);
void ur_cq_fini(struct ur_cq *cq);

/* Poller side: copy up to n CQEs out; returns how many. */
static inline int ur_cq_poll(struct ur_cq *cq, struct ur_cqe *out, int n)
{
	uint32_t cons = atomic_load_explicit(&cq->cons, memory_order_relaxed);
	uint32_t prod = atomic_load_explicit(&cq->prod, memory_order_acquire);
	int i = 0;

	while (i < n && cons != prod) {
		out[i++] = cq->ring[cons & cq->mask];
		cons++;
	}
	if (i)
		atomic_store_explicit(&cq->cons, cons, memory_order_release);
	return i;
}

static inline bool ur_cq_empty(struct ur_cq *cq)
{
	return atomic_load_explicit(&cq->cons, memory_order_relaxed) ==
	       atomic_load_explicit(&cq->prod, memory_order_acquire);
}

#endif
