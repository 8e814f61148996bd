/* SPDX-License-Identifier: BSD-2-Clause */
/* Completion queues: the engine produces CQEs into a ring, pollers consume them. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "uroce.h"

struct ibv_cq *uroce_create_cq(struct ibv_context *ibctx, int cqe, struct ibv_comp_channel *ch,
			       int vector)
{
	struct uroce_nic *nic = to_unic(ibctx);
	struct uroce_cq *ucq;
	int err;

	if (cqe < 1 || (unsigned)cqe > UR_MAX_CQE) {
		errno = uroce_refuse(nic, EINVAL, "create_cq", "cqe %d is not in 1..max_cqe %u",
				     cqe, UR_MAX_CQE);
		return NULL;
	}
	if (ch && ch->context != ibctx) {
		errno = uroce_refuse(nic, EINVAL, "create_cq",
				     "the completion channel belongs to another context");
		return NULL;
	}
	/* as the kernel's uverbs: a vector the context does not have is EINVAL */
	if (vector < 0 || vector >= ibctx->num_comp_vectors) {
		errno =
		    uroce_refuse(nic, EINVAL, "create_cq",
				 "comp_vector %d is not below the context's num_comp_vectors %d",
				 vector, ibctx->num_comp_vectors);
		return NULL;
	}
	err = uroce_obj_get(nic, UROCE_OBJ_CQ);
	if (err) {
		errno = uroce_refuse(nic, err, "create_cq", "max_cq %u CQs exist already",
				     nic->limit[UROCE_OBJ_CQ]);
		return NULL;
	}
	ucq = calloc(1, sizeof(*ucq));
	if (!ucq || ur_cq_init(&ucq->cq, (uint32_t)cqe + 1, ucq)) {
		uroce_obj_put(nic, UROCE_OBJ_CQ);
		free(ucq);
		errno = uroce_refuse(nic, ENOMEM, "create_cq", "no memory for %d CQEs", cqe);
		return NULL;
	}
	pthread_spin_init(&ucq->poll_lock, PTHREAD_PROCESS_PRIVATE);
	ucq->chan_wr = uroce_channel_writer(ch);
	ucq->vcq.cq.cqe = (int)ucq->cq.mask; /* one slot stays free */
	return &ucq->vcq.cq;
}

int uroce_destroy_cq(struct ibv_cq *cq)
{
	struct uroce_cq *ucq = to_ucq(cq);
	struct uroce_nic *nic = to_unic(cq->context);
	unsigned dropped = 0;

	if (atomic_load(&ucq->refs))
		return uroce_refuse(nic, EBUSY, "destroy_cq", "%u QPs still complete into the CQ",
				    atomic_load(&ucq->refs));
	/* Events the application never read must not name the freed CQ. */
	pthread_mutex_lock(&nic->lock);
	if (cq->channel)
		dropped = uroce_drain_events(cq->channel->fd, ucq->chan_wr, (uintptr_t)cq,
					     sizeof(struct ur_uverbs_comp_event_desc));
	ucq->chan_wr = -1;
	pthread_mutex_unlock(&nic->lock);
	/* As the kernel does: wait until every event handed out was acknowledged. */
	pthread_mutex_lock(&cq->mutex);
	while (cq->comp_events_completed + dropped < ucq->events_sent)
		pthread_cond_wait(&cq->cond, &cq->mutex);
	pthread_mutex_unlock(&cq->mutex);
	ur_cq_fini(&ucq->cq);
	pthread_spin_destroy(&ucq->poll_lock);
	free(ucq);
	uroce_obj_put(nic, UROCE_OBJ_CQ);
	return 0;
}

static void to_wc(const struct ur_cqe *c, struct ibv_wc *wc)
{
	wc->wr_id = c->wr_id;
	wc->status = (enum ibv_wc_status)c->status;
	wc->opcode = (enum ibv_wc_opcode)c->opcode;
	wc->vendor_err = c->vendor_err;
	wc->byte_len = c->byte_len;
	wc->imm_data = c->imm; /* also invalidated_rkey */
	wc->qp_num = c->qp_num;
	wc->src_qp = c->src_qp;
	wc->wc_flags = c->wc_flags;
	wc->pkey_index = 0;
	wc->slid = 0;
	wc->sl = c->sl; /* the RoCE packet type on a UD receive, as mlx5 reports it */
	wc->dlid_path_bits = 0;
}

static int poll_ring(struct uroce_cq *ucq, int n, struct ibv_wc *wc)
{
	struct ur_cqe cqe[16];
	int got = 0;

	pthread_spin_lock(&ucq->poll_lock);
	while (got < n) {
		int k = ur_cq_poll(&ucq->cq, cqe, n - got < 16 ? n - got : 16);

		for (int i = 0; i < k; i++)
			to_wc(&cqe[i], &wc[got + i]);
		got += k;
		if (k < 16)
			break;
	}
	pthread_spin_unlock(&ucq->poll_lock);
	return got;
}

int uroce_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct uroce_nic *nic = to_unic(cq->context);
	struct uroce_cq *ucq = to_ucq(cq);
	unsigned moved;
	int got;

	if (n <= 0)
		return n < 0 ? -1 : 0;
	got = poll_ring(ucq, n, wc);
	if (got) {
		uroce_progress_idle(nic, true);
		return got;
	}
	/* nothing yet: move the engine along ourselves, then look again */
	moved = uroce_progress_kick(nic);
	got = poll_ring(ucq, n, wc);
	uroce_progress_idle(nic, moved || got);
	return got;
}

int uroce_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	struct uroce_cq *ucq = to_ucq(cq);

	/* The engine clears the arm when it fires: one event per request.
	 * seq_cst pairs with the engine's fence after publishing a CQE. */
	atomic_store_explicit(&ucq->cq.arm, solicited_only ? UR_CQ_ARM_SOLICITED : UR_CQ_ARM_NEXT,
			      memory_order_seq_cst);
	atomic_store_explicit(&to_unic(cq->context)->events_used, true, memory_order_relaxed);
	return 0;
}

void uroce_cq_event(struct ibv_cq *cq)
{
	(void)cq;
}

int uroce_resize_cq(struct ibv_cq *cq, int cqe)
{
	struct uroce_cq *ucq = to_ucq(cq);
	struct uroce_nic *nic = to_unic(cq->context);
	struct ur_cq fresh;
	uint32_t cons, prod, n = 0;

	if (cqe < 1 || (unsigned)cqe > UR_MAX_CQE)
		return uroce_refuse(nic, EINVAL, "resize_cq", "cqe %d is not in 1..max_cqe %u", cqe,
				    UR_MAX_CQE);
	if (ur_cq_init(&fresh, (uint32_t)cqe + 1, ucq))
		return uroce_refuse(nic, ENOMEM, "resize_cq", "no memory for %d CQEs", cqe);
	/* Stop both the engine (producer) and pollers (consumer) while moving. */
	pthread_mutex_lock(&nic->lock);
	pthread_spin_lock(&ucq->poll_lock);
	cons = atomic_load(&ucq->cq.cons);
	prod = atomic_load(&ucq->cq.prod);
	if (prod - cons > fresh.mask) {
		pthread_spin_unlock(&ucq->poll_lock);
		pthread_mutex_unlock(&nic->lock);
		ur_cq_fini(&fresh);
		return uroce_refuse(nic, EINVAL, "resize_cq",
				    "cqe %d is fewer than the %u CQEs it holds", cqe, prod - cons);
	}
	for (; cons != prod; cons++)
		fresh.ring[n++] = ucq->cq.ring[cons & ucq->cq.mask];
	free(ucq->cq.ring);
	ucq->cq.ring = fresh.ring;
	ucq->cq.mask = fresh.mask;
	atomic_store(&ucq->cq.cons, 0);
	atomic_store(&ucq->cq.prod, n);
	cq->cqe = (int)fresh.mask;
	pthread_spin_unlock(&ucq->poll_lock);
	pthread_mutex_unlock(&nic->lock);
	return 0;
}
