/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The extended posting API (ibv_wr_start, ibv_wr_rdma_write, ibv_wr_set_sge,
 * ..., ibv_wr_complete) for QPs created with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS.
 * Each builder call writes into the send queue's next free slot; nothing is
 * published until ibv_wr_complete, which checks every request the way
 * ibv_post_send does and either posts them all or none (returning the
 * errno). The send queue lock is held from wr_start to wr_complete or
 * wr_abort, as the verbs allow one builder per QP at a time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "uroce.h"

static struct uroce_qp *from_ex(struct ibv_qp_ex *ex)
{
	return to_uqp(&ex->qp_base);
}

/* The batch's first error, which wr_complete returns, logged with its reason. */
static void wr_fail(struct uroce_qp *uqp, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void wr_fail(struct uroce_qp *uqp, int err, const char *fmt, ...)
{
	struct uroce_nic *nic = to_unic(uqp->vqp.qp.context);
	char why[256];
	va_list ap;

	if (uqp->wr_err)
		return;
	uqp->wr_err = err;
	if (nic->cfg.debug < 1)
		return;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	uroce_refuse(nic, err, "ibv_wr_*", "qp %#x: %s", uqp->vqp.qp.qp_num, why);
}

/* The request being built is finished: check what only now is complete. */
static void check_current(struct uroce_qp *uqp)
{
	struct ur_send_wqe *w = uqp->wr_cur;
	bool atomic = w && ur_wr_has(w->opcode, UR_WRF_ATOMIC);

	if (!w || uqp->wr_err)
		return;
	/* an atomic returns the original value into one 8-byte buffer (10.7.3.3) */
	if (atomic && (w->num_sge != 1 || w->sge[0].length != 8 || (w->flags & IBV_SEND_INLINE)))
		wr_fail(uqp, EINVAL,
			"an atomic needs one 8-byte SGE, not inline data (IBTA 10.7.3.3)");
	if (ur_wr_has(w->opcode, UR_WRF_READ) && (w->flags & IBV_SEND_INLINE))
		wr_fail(uqp, EINVAL, "an RDMA READ cannot take inline data");
	if (uqp->vqp.qp.qp_type == IBV_QPT_UD && !w->ud_av)
		wr_fail(uqp, EINVAL, "a UD send without ibv_wr_set_ud_addr");
	uqp->wr_cur = NULL;
}

/* Start the next request in the queue's next free slot, or record why not. */
static struct ur_send_wqe *begin(struct ibv_qp_ex *ex, enum ibv_wr_opcode op)
{
	struct uroce_qp *uqp = from_ex(ex);
	struct ur_send_wqe *w;

	check_current(uqp);
	if (uqp->wr_err)
		return NULL;
	/* an opcode's IBV_QP_EX_WITH_* flag is 1 << the opcode (abi_checks.c) */
	if (!ur_wr_allowed(op, uqp->vqp.qp.qp_type) || !(uqp->send_ops & (1ull << op))) {
		wr_fail(uqp, EINVAL,
			"opcode %s was not in the QP's send_ops_flags %#llx, or its type lacks it",
			ur_wr_opcode_name(op), (unsigned long long)uqp->send_ops);
		return NULL;
	}
	w = ur_wq_reserve(ur_qp_sq(uqp->qp), uqp->wr_pending);
	if (!w) {
		wr_fail(uqp, ENOMEM, "the send queue is full (max_send_wr %u)",
			ur_wq_size(ur_qp_sq(uqp->qp)));
		return NULL;
	}
	memset(w, 0, sizeof(*w));
	w->wr_id = ex->wr_id;
	w->opcode = (uint8_t)op;
	w->flags = (uint8_t)(ex->wr_flags & ~IBV_SEND_INLINE);
	w->signaled = (ex->wr_flags & IBV_SEND_SIGNALED) || uqp->sq_sig_all;
	uqp->wr_cur = w;
	uqp->wr_pending++;
	return w;
}

/* The request whose data a setter describes; NULL (and an error) if there is none. */
static struct ur_send_wqe *current(struct ibv_qp_ex *ex)
{
	struct uroce_qp *uqp = from_ex(ex);

	if (!uqp->wr_cur && !uqp->wr_err)
		wr_fail(uqp, EINVAL, "a setter with no request begun (ibv_wr_send etc. first)");
	return uqp->wr_err ? NULL : uqp->wr_cur;
}

static void wr_rdma(struct ibv_qp_ex *ex, enum ibv_wr_opcode op, uint32_t rkey, uint64_t addr,
		    uint32_t imm)
{
	struct ur_send_wqe *w = begin(ex, op);

	if (!w)
		return;
	w->remote_addr = addr;
	w->rkey = rkey;
	w->imm = imm;
}

static void wr_rdma_write(struct ibv_qp_ex *ex, uint32_t rkey, uint64_t addr)
{
	wr_rdma(ex, IBV_WR_RDMA_WRITE, rkey, addr, 0);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *ex, uint32_t rkey, uint64_t addr, __be32 imm)
{
	wr_rdma(ex, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, addr, imm);
}

static void wr_rdma_read(struct ibv_qp_ex *ex, uint32_t rkey, uint64_t addr)
{
	wr_rdma(ex, IBV_WR_RDMA_READ, rkey, addr, 0);
}

static void wr_atomic(struct ibv_qp_ex *ex, enum ibv_wr_opcode op, uint32_t rkey, uint64_t addr,
		      uint64_t compare_add, uint64_t swap)
{
	struct ur_send_wqe *w = begin(ex, op);

	if (!w)
		return;
	w->remote_addr = addr;
	w->rkey = rkey;
	w->compare_add = compare_add;
	w->swap = swap;
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *ex, uint32_t rkey, uint64_t addr,
			      uint64_t compare, uint64_t swap)
{
	wr_atomic(ex, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, addr, compare, swap);
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *ex, uint32_t rkey, uint64_t addr, uint64_t add)
{
	wr_atomic(ex, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, addr, add, 0);
}

static void wr_send(struct ibv_qp_ex *ex)
{
	begin(ex, IBV_WR_SEND);
}

static void wr_send_imm(struct ibv_qp_ex *ex, __be32 imm)
{
	struct ur_send_wqe *w = begin(ex, IBV_WR_SEND_WITH_IMM);

	if (w)
		w->imm = imm;
}

static void wr_send_inv(struct ibv_qp_ex *ex, uint32_t invalidate_rkey)
{
	struct ur_send_wqe *w = begin(ex, IBV_WR_SEND_WITH_INV);

	if (w)
		w->imm = invalidate_rkey;
}

static void wr_local_inv(struct ibv_qp_ex *ex, uint32_t invalidate_rkey)
{
	struct ur_send_wqe *w = begin(ex, IBV_WR_LOCAL_INV);

	if (w)
		w->imm = invalidate_rkey;
}

/* A type 2 window bound with key `rkey` (transport/mw.c checks the rules). */
static void wr_bind_mw(struct ibv_qp_ex *ex, struct ibv_mw *mw, uint32_t rkey,
		       const struct ibv_mw_bind_info *info)
{
	struct ur_send_wqe *w = begin(ex, IBV_WR_BIND_MW);

	if (!w)
		return;
	if (!mw || !info) {
		wr_fail(from_ex(ex), EINVAL, "ibv_wr_bind_mw without a window or bind info");
		return;
	}
	w->imm = mw->rkey;
	w->rkey = rkey;
	w->remote_addr = info->addr;
	w->bind_length = info->length;
	w->bind_lkey = info->mr ? info->mr->lkey : 0;
	w->bind_access = info->mw_access_flags;
}

static void wr_set_ud_addr(struct ibv_qp_ex *ex, struct ibv_ah *ah, uint32_t remote_qpn,
			   uint32_t remote_qkey)
{
	struct ur_send_wqe *w = current(ex);

	if (!w)
		return;
	if (ex->qp_base.qp_type != IBV_QPT_UD || !ah) {
		wr_fail(from_ex(ex), EINVAL, "%s",
			ah ? "ibv_wr_set_ud_addr on a QP that is not UD"
			   : "ibv_wr_set_ud_addr without an AH");
		return;
	}
	w->ud_av = &to_uah(ah)->av;
	w->ud_qpn = remote_qpn;
	w->ud_qkey = remote_qkey;
}

/* The SRQ at the target an XRC send is for (annex A14's XRCETH). */
static void wr_set_xrc_srqn(struct ibv_qp_ex *ex, uint32_t remote_srqn)
{
	struct ur_send_wqe *w = current(ex);

	if (!w)
		return;
	if (ex->qp_base.qp_type != IBV_QPT_XRC_SEND) {
		wr_fail(from_ex(ex), EINVAL, "ibv_wr_set_xrc_srqn on a QP that is not XRC_SEND");
		return;
	}
	w->xrc_srqn = remote_srqn;
}

static void wr_set_sge_list(struct ibv_qp_ex *ex, size_t num_sge, const struct ibv_sge *sg_list)
{
	struct uroce_qp *uqp = from_ex(ex);
	struct ur_send_wqe *w = current(ex);
	uint64_t total = 0;

	if (!w)
		return;
	if (num_sge > ur_qp_sq(uqp->qp)->max_sge) {
		wr_fail(uqp, EINVAL, "num_sge %zu, the QP's max_send_sge is %u", num_sge,
			ur_qp_sq(uqp->qp)->max_sge);
		return;
	}
	for (size_t i = 0; i < num_sge; i++)
		total += sg_list[i].length;
	if (total > (1ull << 31)) {
		wr_fail(uqp, EINVAL, "%llu bytes, above max_msg_sz 2^31",
			(unsigned long long)total);
		return;
	}
	memcpy(w->sge, sg_list, num_sge * sizeof(*sg_list));
	w->num_sge = (uint8_t)num_sge;
	w->length = (uint32_t)total;
	w->flags &= ~IBV_SEND_INLINE;
}

static void wr_set_sge(struct ibv_qp_ex *ex, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = {.addr = addr, .length = length, .lkey = lkey};

	wr_set_sge_list(ex, 1, &sge);
}

static void wr_set_inline_data_list(struct ibv_qp_ex *ex, size_t num_buf,
				    const struct ibv_data_buf *buf_list)
{
	struct uroce_qp *uqp = from_ex(ex);
	struct ur_send_wqe *w = current(ex);
	uint8_t *dst;
	size_t total = 0;

	if (!w)
		return;
	for (size_t i = 0; i < num_buf; i++)
		total += buf_list[i].length;
	if (total > uqp->max_inline) {
		wr_fail(uqp, EINVAL, "%zu inline bytes, the QP's max_inline_data is %u", total,
			uqp->max_inline);
		return;
	}
	/* inline: copied now, so the buffers may be reused at once */
	dst = (uint8_t *)w->sge;
	for (size_t i = 0; i < num_buf; i++) {
		memcpy(dst, buf_list[i].addr, buf_list[i].length);
		dst += buf_list[i].length;
	}
	w->num_sge = 0;
	w->length = (uint32_t)total;
	w->flags |= IBV_SEND_INLINE;
}

static void wr_set_inline_data(struct ibv_qp_ex *ex, void *addr, size_t length)
{
	struct ibv_data_buf buf = {.addr = addr, .length = length};

	wr_set_inline_data_list(ex, 1, &buf);
}

static void wr_start(struct ibv_qp_ex *ex)
{
	struct uroce_qp *uqp = from_ex(ex);

	pthread_spin_lock(&uqp->sq_lock);
	uqp->wr_pending = 0;
	uqp->wr_err = 0;
	uqp->wr_cur = NULL;
}

static void wr_abort(struct ibv_qp_ex *ex)
{
	struct uroce_qp *uqp = from_ex(ex);

	/* the slots were never published: the next reservation reuses them */
	uqp->wr_pending = 0;
	uqp->wr_cur = NULL;
	pthread_spin_unlock(&uqp->sq_lock);
}

static int wr_complete(struct ibv_qp_ex *ex)
{
	struct uroce_qp *uqp = from_ex(ex);
	enum ur_qp_state st = ur_qp_state(uqp->qp);
	uint32_t n = uqp->wr_pending;
	int err;

	check_current(uqp);
	err = uqp->wr_err;
	/* the device is gone (daemon_link.c): as its post_send, EIO */
	if (!err && atomic_load_explicit(&to_unic(ex->qp_base.context)->fatal,
					 memory_order_relaxed)) {
		wr_fail(uqp, EIO, "the device is gone (IBV_EVENT_DEVICE_FATAL)");
		err = EIO;
	}
	/* sends need RTS (or a state that flushes them); IBTA 10.8.1 */
	if (!err && (st == UR_QPS_RESET || st == UR_QPS_INIT || st == UR_QPS_RTR)) {
		wr_fail(uqp, EINVAL, "the QP is in %s: sends need RTS (IBTA 10.8.1)",
			ur_qp_state_name(st));
		err = EINVAL;
	}
	if (err) {
		wr_abort(ex);
		return err;
	}
	if (n)
		ur_wq_commit(ur_qp_sq(uqp->qp), n);
	uqp->wr_pending = 0;
	pthread_spin_unlock(&uqp->sq_lock);
	if (n) {
		ur_qp_doorbell(uqp->qp);
		uroce_progress_post(to_unic(ex->qp_base.context));
	}
	return 0;
}

int uroce_qp_ex_init(struct uroce_qp *uqp, uint64_t send_ops_flags)
{
	struct ibv_qp_ex *ex = &uqp->vqp.qp_ex;

	/* the flags are 1 << opcode; the others: TSO, atomic write */
	if (send_ops_flags & ~(uint64_t)ur_wr_opcodes_offered())
		return EOPNOTSUPP;
	uqp->send_ops = send_ops_flags;
	ex->wr_rdma_write = wr_rdma_write;
	ex->wr_rdma_write_imm = wr_rdma_write_imm;
	ex->wr_rdma_read = wr_rdma_read;
	ex->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	ex->wr_atomic_fetch_add = wr_atomic_fetch_add;
	ex->wr_send = wr_send;
	ex->wr_send_imm = wr_send_imm;
	ex->wr_send_inv = wr_send_inv;
	ex->wr_local_inv = wr_local_inv;
	ex->wr_bind_mw = wr_bind_mw;
	ex->wr_set_ud_addr = wr_set_ud_addr;
	ex->wr_set_xrc_srqn = wr_set_xrc_srqn;
	ex->wr_set_sge = wr_set_sge;
	ex->wr_set_sge_list = wr_set_sge_list;
	ex->wr_set_inline_data = wr_set_inline_data;
	ex->wr_set_inline_data_list = wr_set_inline_data_list;
	ex->wr_start = wr_start;
	ex->wr_complete = wr_complete;
	ex->wr_abort = wr_abort;
	uqp->vqp.comp_mask |= VERBS_QP_EX;
	return 0;
}
