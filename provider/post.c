/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Posting work requests: validate each one as a RoCE NIC would (the verbs
 * error contract: a positive errno and *bad_wr), write it into the queue's
 * next slot, publish the slots, ring the engine's doorbell and let the
 * engine run if nobody else is.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "uroce.h"

/*
 * A bind or local invalidation: no data, checked by the engine when the
 * send queue reaches it (transport/mw.c), so a refusal is a completion
 * (IBV_WC_MW_BIND_ERR), as on a NIC.
 */
static int fill_local(struct uroce_qp *uqp, struct ur_send_wqe *w, const struct ibv_send_wr *wr)
{
	memset(w, 0, sizeof(*w));
	w->wr_id = wr->wr_id;
	w->opcode = (uint8_t)wr->opcode;
	w->flags = (uint8_t)(wr->send_flags & ~IBV_SEND_INLINE);
	w->signaled = (wr->send_flags & IBV_SEND_SIGNALED) || uqp->sq_sig_all;
	if (wr->opcode == IBV_WR_LOCAL_INV) {
		w->imm = wr->invalidate_rkey;
		return 0;
	}
	if (!wr->bind_mw.mw)
		return uroce_refuse(to_unic(uqp->vqp.qp.context), EINVAL, "post_send",
				    "qp %#x: IBV_WR_BIND_MW without bind_mw.mw", uqp->vqp.qp.qp_num);
	w->imm = wr->bind_mw.mw->rkey;
	w->rkey = wr->bind_mw.rkey;
	w->remote_addr = wr->bind_mw.bind_info.addr;
	w->bind_length = wr->bind_mw.bind_info.length;
	w->bind_lkey = wr->bind_mw.bind_info.mr ? wr->bind_mw.bind_info.mr->lkey : 0;
	w->bind_access = wr->bind_mw.bind_info.mw_access_flags;
	return 0;
}

/* Fill one slot from `wr`; returns 0 or a positive errno. */
static int fill_send(struct uroce_qp *uqp, struct ur_wq *sq, struct ur_send_wqe *w,
		     const struct ibv_send_wr *wr)
{
	struct ibv_qp *qp = &uqp->vqp.qp;
	struct uroce_nic *nic = to_unic(qp->context);
	const struct ur_wr_opcode_info *op = ur_wr_opcode_get(wr->opcode);
	uint64_t total = 0;

	if (!ur_wr_allowed(wr->opcode, qp->qp_type))
		return uroce_refuse(nic, EINVAL, "post_send",
				    "qp %#x: opcode %s (%d) is not offered on a %s QP", qp->qp_num,
				    op->name, wr->opcode,
				    qp->qp_type == IBV_QPT_RC	      ? "RC"
				    : qp->qp_type == IBV_QPT_UC       ? "UC"
				    : qp->qp_type == IBV_QPT_XRC_SEND ? "XRC_SEND"
				    : qp->qp_type == IBV_QPT_XRC_RECV ? "XRC_RECV"
								      : "UD");
	if (op->flags & UR_WRF_LOCAL)
		return fill_local(uqp, w, wr);
	if (wr->num_sge < 0 ||
	    ((uint32_t)wr->num_sge > sq->max_sge && !(wr->send_flags & IBV_SEND_INLINE)))
		return uroce_refuse(nic, EINVAL, "post_send",
				    "qp %#x: num_sge %d, the QP's max_send_sge is %u", qp->qp_num,
				    wr->num_sge, sq->max_sge);
	for (int i = 0; i < wr->num_sge; i++)
		total += wr->sg_list[i].length;
	if (total > (1ull << 31))
		return uroce_refuse(nic, EINVAL, "post_send",
				    "qp %#x: %llu bytes, above max_msg_sz 2^31", qp->qp_num,
				    (unsigned long long)total);
	memset(w, 0, sizeof(*w));
	w->wr_id = wr->wr_id;
	w->opcode = (uint8_t)wr->opcode;
	w->flags = (uint8_t)wr->send_flags;
	w->signaled = (wr->send_flags & IBV_SEND_SIGNALED) || uqp->sq_sig_all;
	w->length = (uint32_t)total;
	if (op->flags & (UR_WRF_WRITE | UR_WRF_READ)) {
		w->remote_addr = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
	} else if (op->flags & UR_WRF_ATOMIC) {
		/* one 8-byte local buffer receives the original value (10.7.3.3) */
		if (wr->num_sge != 1 || wr->sg_list[0].length != 8)
			return uroce_refuse(
			    nic, EINVAL, "post_send",
			    "qp %#x: an atomic needs one 8-byte SGE (num_sge %d) (IBTA 10.7.3.3)",
			    qp->qp_num, wr->num_sge);
		w->remote_addr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		w->compare_add = wr->wr.atomic.compare_add;
		w->swap = wr->wr.atomic.swap;
	}
	if (op->flags & UR_WRF_IMM)
		w->imm = wr->imm_data;
	else if (op->flags & UR_WRF_INV)
		w->imm = wr->invalidate_rkey;
	/* an XRC send names the SRQ it is for at the target (annex A14) */
	if (qp->qp_type == IBV_QPT_XRC_SEND)
		w->xrc_srqn = wr->qp_type.xrc.remote_srqn;
	if (qp->qp_type == IBV_QPT_UD) {
		if (!wr->wr.ud.ah)
			return uroce_refuse(nic, EINVAL, "post_send",
					    "qp %#x: a UD send without wr.ud.ah", qp->qp_num);
		w->ud_av = &to_uah(wr->wr.ud.ah)->av;
		w->ud_qpn = wr->wr.ud.remote_qpn;
		w->ud_qkey = wr->wr.ud.remote_qkey;
	}
	/* inline data is what a SEND or WRITE carries out; READs and atomics bring data back */
	if ((wr->send_flags & IBV_SEND_INLINE) && (op->flags & (UR_WRF_SEND | UR_WRF_WRITE))) {
		uint8_t *dst = (uint8_t *)w->sge;

		if (total > uqp->max_inline)
			return uroce_refuse(
			    nic, EINVAL, "post_send",
			    "qp %#x: %llu inline bytes, the QP's max_inline_data is %u", qp->qp_num,
			    (unsigned long long)total, uqp->max_inline);
		/* inline: the data is copied now, the buffers may be reused at once */
		for (int i = 0; i < wr->num_sge; i++) {
			memcpy(dst, (const void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			dst += wr->sg_list[i].length;
		}
		w->flags |= IBV_SEND_INLINE;
		return 0;
	}
	w->flags &= ~IBV_SEND_INLINE;
	w->num_sge = (uint8_t)wr->num_sge;
	memcpy(w->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(struct ibv_sge));
	return 0;
}

static_assert(sizeof(struct ur_sge) == sizeof(struct ibv_sge), "SGE layouts match");

int uroce_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct uroce_qp *uqp = to_uqp(qp);
	struct ur_wq *sq = ur_qp_sq(uqp->qp);
	enum ur_qp_state st = ur_qp_state(uqp->qp);
	uint32_t n = 0;
	int err = 0;

	/* Sends need RTS (or a state that flushes them); IBTA 10.8.1 */
	if (st == UR_QPS_RESET || st == UR_QPS_INIT || st == UR_QPS_RTR) {
		*bad = wr;
		return uroce_refuse(to_unic(qp->context), EINVAL, "post_send",
				    "qp %#x is in %s: sends need RTS (IBTA 10.8.1)", qp->qp_num,
				    ur_qp_state_name(st));
	}
	pthread_spin_lock(&uqp->sq_lock);
	for (; wr; wr = wr->next) {
		struct ur_send_wqe *w = ur_wq_reserve(sq, n);

		if (!w) {
			err = uroce_refuse(to_unic(qp->context), ENOMEM, "post_send",
					   "qp %#x: the send queue is full (max_send_wr %u)",
					   qp->qp_num, ur_wq_size(sq));
			break;
		}
		err = fill_send(uqp, sq, w, wr);
		if (err)
			break;
		n++;
	}
	if (n)
		ur_wq_commit(sq, n);
	pthread_spin_unlock(&uqp->sq_lock);
	if (err)
		*bad = wr;
	if (n) {
		ur_qp_doorbell(uqp->qp);
		uroce_progress_post(to_unic(qp->context));
	}
	return err;
}

static int post_recv_to(struct uroce_nic *nic, const char *call, struct ur_wq *rq,
			pthread_spinlock_t *lock, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad,
			uint32_t *posted)
{
	uint32_t n = 0;
	int err = 0;

	pthread_spin_lock(lock);
	for (; wr; wr = wr->next) {
		struct ur_recv_wqe *r;
		uint64_t total = 0;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > rq->max_sge) {
			err =
			    uroce_refuse(nic, EINVAL, call, "num_sge %d, the queue's max_sge is %u",
					 wr->num_sge, rq->max_sge);
			break;
		}
		r = ur_wq_reserve(rq, n);
		if (!r) {
			err = uroce_refuse(nic, ENOMEM, call,
					   "the receive queue is full (max_wr %u)", ur_wq_size(rq));
			break;
		}
		for (int i = 0; i < wr->num_sge; i++)
			total += wr->sg_list[i].length;
		r->wr_id = wr->wr_id;
		r->num_sge = (uint32_t)wr->num_sge;
		r->length = total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
		memcpy(r->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(struct ibv_sge));
		n++;
	}
	if (n)
		ur_wq_commit(rq, n);
	pthread_spin_unlock(lock);
	if (err)
		*bad = wr;
	*posted = n;
	return err;
}

int uroce_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct uroce_qp *uqp = to_uqp(qp);
	enum ur_qp_state st = ur_qp_state(uqp->qp);
	uint32_t n;
	int err;

	if (qp->srq || st == UR_QPS_RESET || !ur_qp_rq(uqp->qp)->buf) {
		*bad = wr;
		return uroce_refuse(to_unic(qp->context), EINVAL, "post_recv", "qp %#x %s",
				    qp->qp_num,
				    qp->srq ? "takes its receives from an SRQ: post them there"
				    : st == UR_QPS_RESET ? "is in RESET"
							 : "is an XRC QP: it has no receive queue");
	}
	err = post_recv_to(to_unic(qp->context), "post_recv", ur_qp_rq(uqp->qp), &uqp->rq_lock, wr,
			   bad, &n);
	/* the responder takes receive WQEs when SENDs arrive: only a QP in
	 * the error state needs telling, to flush them */
	if (n && st == UR_QPS_ERR) {
		ur_qp_doorbell(uqp->qp);
		uroce_progress_kick(to_unic(qp->context));
	}
	return err;
}

int uroce_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct uroce_srq *usrq = to_usrq(srq);
	uint32_t n;

	return post_recv_to(to_unic(srq->context), "post_srq_recv", ur_srq_wq(usrq->srq),
			    &usrq->lock, wr, bad, &n);
}
