/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Extended CQs (ibv_create_cq_ex): the same ring as ibv_poll_cq's, polled
 * in place one CQE at a time with ibv_start_poll/next_poll/end_poll and
 * read field by field with the ibv_wc_read_* accessors, as rdma-core's rxe
 * and mlx5 providers do. Completion timestamps are the device clock: the
 * engine's time (CLOCK_MONOTONIC, in nanoseconds) when it wrote the CQE,
 * so hca_core_clock is 1 GHz and ibv_query_rt_values_ex reads the same
 * clock.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "uroce.h"

/* What uroce can answer truthfully; CVLAN, flow tags and tag matching it has not. */
#define CQ_EX_WC_FLAGS                                                                             \
	(IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |                             \
	 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
#define CQ_EX_TS_FLAGS                                                                             \
	(IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
#define CQ_EX_COMP_MASK (IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD)

static inline struct uroce_cq *ex_to_ucq(struct ibv_cq_ex *cq)
{
	return to_type(cq, struct uroce_cq, vcq.cq_ex);
}

static inline void set_current(struct uroce_cq *ucq)
{
	ucq->cur = &ucq->cq.ring[ucq->cur_cons & ucq->cq.mask];
	ucq->vcq.cq_ex.wr_id = ucq->cur->wr_id;
	ucq->vcq.cq_ex.status = (enum ibv_wc_status)ucq->cur->status;
}

/* Under poll_lock: is a CQE there at cur_cons (acquire: its bytes with it)? */
static inline bool have_cqe(struct uroce_cq *ucq)
{
	return ucq->cur_cons != atomic_load_explicit(&ucq->cq.prod, memory_order_acquire);
}

static int64_t wall_offset(void)
{
	struct timespec rt;

	clock_gettime(CLOCK_REALTIME, &rt);
	return (int64_t)((uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec) -
	       (int64_t)uroce_now_ns();
}

/*
 * The batch holds poll_lock from a successful start_poll to end_poll (as
 * rxe does), so the CQEs are read in place; the consumer index is published
 * once, at end_poll, which lets the engine reuse the slots.
 */
static int cq_start_poll(struct ibv_cq_ex *cq, struct ibv_poll_cq_attr *attr)
{
	struct uroce_cq *ucq = ex_to_ucq(cq);
	struct uroce_nic *nic = to_unic(cq->context);
	unsigned moved;

	if (attr->comp_mask)
		return EINVAL;
	pthread_spin_lock(&ucq->poll_lock);
	ucq->cur_cons = atomic_load_explicit(&ucq->cq.cons, memory_order_relaxed);
	if (!have_cqe(ucq)) {
		/* nothing yet: move the engine along ourselves, then look again,
		 * as uroce_poll_cq does */
		pthread_spin_unlock(&ucq->poll_lock);
		moved = uroce_progress_kick(nic);
		pthread_spin_lock(&ucq->poll_lock);
		ucq->cur_cons = atomic_load_explicit(&ucq->cq.cons, memory_order_relaxed);
		if (!have_cqe(ucq)) {
			pthread_spin_unlock(&ucq->poll_lock);
			uroce_progress_idle(nic, moved);
			return ENOENT;
		}
	}
	uroce_progress_idle(nic, true);
	if (ucq->vcq.cq_ex.read_completion_wallclock_ns)
		ucq->wall_off = wall_offset();
	set_current(ucq);
	return 0;
}

static int cq_next_poll(struct ibv_cq_ex *cq)
{
	struct uroce_cq *ucq = ex_to_ucq(cq);

	ucq->cur_cons++;
	if (!have_cqe(ucq)) {
		ucq->cur = NULL; /* cur_cons is not read yet: end_poll leaves it */
		return ENOENT;
	}
	set_current(ucq);
	return 0;
}

static void cq_end_poll(struct ibv_cq_ex *cq)
{
	struct uroce_cq *ucq = ex_to_ucq(cq);

	/* Release: the engine that sees the slots free sees them read. The
	 * current CQE, if the batch did not end on ENOENT, was read too. */
	atomic_store_explicit(&ucq->cq.cons, ucq->cur_cons + (ucq->cur != NULL),
			      memory_order_release);
	ucq->cur = NULL;
	pthread_spin_unlock(&ucq->poll_lock);
}

static enum ibv_wc_opcode read_opcode(struct ibv_cq_ex *cq)
{
	return (enum ibv_wc_opcode)ex_to_ucq(cq)->cur->opcode;
}

static uint32_t read_vendor_err(struct ibv_cq_ex *cq)
{
	return ex_to_ucq(cq)->cur->vendor_err;
}

static uint32_t read_byte_len(struct ibv_cq_ex *cq)
{
	return ex_to_ucq(cq)->cur->byte_len;
}

/* Immediate data in network order, or (IBV_WC_WITH_INV) the invalidated
 * R_Key in host order, which ibv_wc_read_invalidated_rkey reads through here. */
static __be32 read_imm_data(struct ibv_cq_ex *cq)
{
	return (__be32)ex_to_ucq(cq)->cur->imm;
}

static uint32_t read_qp_num(struct ibv_cq_ex *cq)
{
	return ex_to_ucq(cq)->cur->qp_num;
}

static uint32_t read_src_qp(struct ibv_cq_ex *cq)
{
	return ex_to_ucq(cq)->cur->src_qp;
}

static unsigned int read_wc_flags(struct ibv_cq_ex *cq)
{
	return ex_to_ucq(cq)->cur->wc_flags;
}

/* RoCE has no LIDs: 0, as a RoCE NIC reports */
static uint32_t read_slid(struct ibv_cq_ex *cq)
{
	(void)cq;
	return 0;
}

/* the RoCE packet type on a UD receive, as ibv_poll_cq's sl (mlx5's meaning) */
static uint8_t read_sl(struct ibv_cq_ex *cq)
{
	return ex_to_ucq(cq)->cur->sl;
}

static uint8_t read_dlid_path_bits(struct ibv_cq_ex *cq)
{
	(void)cq;
	return 0;
}

static uint64_t read_completion_ts(struct ibv_cq_ex *cq)
{
	struct uroce_cq *ucq = ex_to_ucq(cq);

	return ucq->cq.ts[ucq->cur_cons & ucq->cq.mask];
}

/* The device clock moved onto the wall clock with the offset between the
 * two read when the batch began. */
static uint64_t read_completion_wallclock_ns(struct ibv_cq_ex *cq)
{
	struct uroce_cq *ucq = ex_to_ucq(cq);

	return (uint64_t)((int64_t)ucq->cq.ts[ucq->cur_cons & ucq->cq.mask] + ucq->wall_off);
}

struct ibv_cq_ex *uroce_create_cq_ex(struct ibv_context *ibctx, struct ibv_cq_init_attr_ex *attr)
{
	struct uroce_nic *nic = to_unic(ibctx);
	struct uroce_pd *pdom = NULL;
	struct uroce_cq *ucq;
	struct ibv_cq_ex *x;
	uint64_t wf = attr->wc_flags;

	if (attr->comp_mask & ~(uint32_t)CQ_EX_COMP_MASK) {
		errno =
		    uroce_refuse(nic, EINVAL, "create_cq_ex", "comp_mask %#x has bits %#x unknown",
				 attr->comp_mask, attr->comp_mask & ~(uint32_t)CQ_EX_COMP_MASK);
		return NULL;
	}
	/* as mlx5: a wc_flag it cannot answer is EOPNOTSUPP */
	if (wf & ~(uint64_t)CQ_EX_WC_FLAGS) {
		errno = uroce_refuse(nic, EOPNOTSUPP, "create_cq_ex",
				     "wc_flags %#llx: %#llx not offered (no CVLAN, flow tag or "
				     "tag matching)",
				     (unsigned long long)wf,
				     (unsigned long long)(wf & ~(uint64_t)CQ_EX_WC_FLAGS));
		return NULL;
	}
	if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) {
		if (attr->flags & ~(uint32_t)(IBV_CREATE_CQ_ATTR_SINGLE_THREADED |
					      IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN)) {
			errno = uroce_refuse(nic, EINVAL, "create_cq_ex", "flags %#x unknown",
					     attr->flags);
			return NULL;
		}
		/* an overrun CQ raises IBV_EVENT_CQ_ERR and keeps what it holds: it
		 * cannot write over unread CQEs as IGNORE_OVERRUN asks */
		if (attr->flags & IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN) {
			errno = uroce_refuse(nic, EOPNOTSUPP, "create_cq_ex",
					     "IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN is not offered");
			return NULL;
		}
	}
	if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) {
		if (!attr->parent_domain || attr->parent_domain->context != ibctx ||
		    !to_upd(attr->parent_domain)->protection) {
			errno =
			    uroce_refuse(nic, EINVAL, "create_cq_ex",
					 "parent_domain is not a parent domain of this context");
			return NULL;
		}
		pdom = to_upd(attr->parent_domain);
	}
	ucq = uroce_cq_new(ibctx, (int)attr->cqe, attr->channel, (int)attr->comp_vector, pdom,
			   wf & CQ_EX_TS_FLAGS);
	if (!ucq)
		return NULL;
	x = &ucq->vcq.cq_ex;
	x->start_poll = cq_start_poll;
	x->next_poll = cq_next_poll;
	x->end_poll = cq_end_poll;
	x->read_opcode = read_opcode;
	x->read_vendor_err = read_vendor_err;
	x->read_wc_flags = read_wc_flags;
	/* the rest only when asked for, as rdma-core's providers install them */
	if (wf & IBV_WC_EX_WITH_BYTE_LEN)
		x->read_byte_len = read_byte_len;
	if (wf & IBV_WC_EX_WITH_IMM)
		x->read_imm_data = read_imm_data;
	if (wf & IBV_WC_EX_WITH_QP_NUM)
		x->read_qp_num = read_qp_num;
	if (wf & IBV_WC_EX_WITH_SRC_QP)
		x->read_src_qp = read_src_qp;
	if (wf & IBV_WC_EX_WITH_SLID)
		x->read_slid = read_slid;
	if (wf & IBV_WC_EX_WITH_SL)
		x->read_sl = read_sl;
	if (wf & IBV_WC_EX_WITH_DLID_PATH_BITS)
		x->read_dlid_path_bits = read_dlid_path_bits;
	if (wf & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
		x->read_completion_ts = read_completion_ts;
	if (wf & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
		x->read_completion_wallclock_ns = read_completion_wallclock_ns;
	return x;
}

/* The device clock now, in the completion timestamps' units (mlx5 puts the
 * raw cycles in tv_nsec, tv_sec 0: so does uroce, cycles being nanoseconds). */
int uroce_query_rt_values(struct ibv_context *ibctx, struct ibv_values_ex *values)
{
	uint32_t asked = values->comp_mask;

	if (asked & ~(uint32_t)IBV_VALUES_MASK_RAW_CLOCK)
		return uroce_refuse(to_unic(ibctx), EINVAL, "query_rt_values",
				    "comp_mask %#x has bits %#x not offered", asked,
				    asked & ~(uint32_t)IBV_VALUES_MASK_RAW_CLOCK);
	values->comp_mask = 0;
	if (asked & IBV_VALUES_MASK_RAW_CLOCK) {
		values->raw_clock.tv_sec = 0;
		values->raw_clock.tv_nsec = (long)uroce_now_ns();
		values->comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
	}
	return 0;
}
