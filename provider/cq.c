/* SPDX-License-Identifier: BSD-2-Clause */
/* Completion queues: the engine produces CQEs into a ring, pollers consume them. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "uroce.h"

/*
 * A ring of at least min_entries CQEs (and their completion times when
 * with_ts), from the parent domain's allocator when it has one, as mlx5
 * takes a CQ's buffer from it; *app says whose memory the ring is.
 */
static int ring_make(struct uroce_cq *ucq, struct ur_cq *q, uint32_t min_entries, bool with_ts,
		     bool *app)
{
	uint32_t n = ur_roundup_pow2(min_entries);
	void *mem = NULL;
	int err;

	err = uroce_pd_alloc(ucq->pdom, (size_t)n * sizeof(*q->ring), UROCE_RES_TYPE_CQ, &mem);
	if (err)
		return -err;
	*app = mem != NULL;
	if (mem) {
		memset(q, 0, sizeof(*q));
		q->ring = mem;
		q->mask = n - 1;
		q->host_ctx = ucq;
	} else if (ur_cq_init(q, n, ucq)) {
		return -ENOMEM;
	}
	if (with_ts && !(q->ts = calloc(n, sizeof(*q->ts)))) {
		if (*app) {
			uroce_pd_free(ucq->pdom, q->ring, UROCE_RES_TYPE_CQ);
			q->ring = NULL;
		}
		ur_cq_fini(q);
		return -ENOMEM;
	}
	return 0;
}

static void ring_drop(struct uroce_cq *ucq, struct ur_cq *q, bool app)
{
	if (app) {
		uroce_pd_free(ucq->pdom, q->ring, UROCE_RES_TYPE_CQ);
		q->ring = NULL;
	}
	ur_cq_fini(q);
}

struct uroce_cq *uroce_cq_new(struct ibv_context *ibctx, int cqe, struct ibv_comp_channel *ch,
			      int vector, struct uroce_pd *pdom, bool with_ts)
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
	if (ucq)
		ucq->pdom = pdom;
	if (!ucq || ring_make(ucq, &ucq->cq, (uint32_t)cqe + 1, with_ts, &ucq->ring_app)) {
		uroce_obj_put(nic, UROCE_OBJ_CQ);
		free(ucq);
		errno = uroce_refuse(nic, ENOMEM, "create_cq", "no memory for %d CQEs", cqe);
		return NULL;
	}
	if (pdom)
		atomic_fetch_add(&pdom->refs, 1);
	pthread_spin_init(&ucq->poll_lock, PTHREAD_PROCESS_PRIVATE);
	ucq->chan_wr = uroce_channel_writer(ch);
	ucq->vcq.cq.cqe = (int)ucq->cq.mask; /* one slot stays free */
	pthread_mutex_lock(&nic->lock);
	uroce_link_add(&to_uctx(ibctx)->cqs, &ucq->link);
	pthread_mutex_unlock(&nic->lock);
	return ucq;
}

struct ibv_cq *uroce_create_cq(struct ibv_context *ibctx, int cqe, struct ibv_comp_channel *ch,
			       int vector)
{
	struct uroce_cq *ucq = uroce_cq_new(ibctx, cqe, ch, vector, NULL, false);

	return ucq ? &ucq->vcq.cq : NULL;
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
	pthread_mutex_lock(&nic->lock);
	uroce_cq_take_back(nic, ucq);
	pthread_mutex_unlock(&nic->lock);
	return 0;
}

/* A CQ goes without waiting for its events (its context closes: nobody is left
 * to acknowledge them, and its QPs went first). nic->lock held. */
void uroce_cq_take_back(struct uroce_nic *nic, struct uroce_cq *ucq)
{
	uroce_link_del(&ucq->link);
	ring_drop(ucq, &ucq->cq, ucq->ring_app);
	if (ucq->pdom)
		atomic_fetch_sub(&ucq->pdom->refs, 1);
	pthread_spin_destroy(&ucq->poll_lock);
	free(ucq);
	uroce_obj_put(nic, UROCE_OBJ_CQ);
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

void uroce_cq_arm(struct ibv_cq *cq, int solicited_only)
{
	struct uroce_cq *ucq = to_ucq(cq);

	/* The engine clears the arm when it fires: one event per request.
	 * seq_cst pairs with the engine's fence after publishing a CQE. */
	atomic_store_explicit(&ucq->cq.arm, solicited_only ? UR_CQ_ARM_SOLICITED : UR_CQ_ARM_NEXT,
			      memory_order_seq_cst);
}

int uroce_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	struct uroce_nic *nic = to_unic(cq->context);

	/* the application may now block on the channel: for a while the
	 * progress thread moves the frames even while some thread of it polls */
	atomic_store_explicit(&nic->arm_ns, uroce_now_ns(), memory_order_relaxed);
	uroce_cq_arm(cq, solicited_only);
	uroce_progress_armed(nic);
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
	struct ur_cq fresh, old;
	uint32_t cons, prod, n = 0;
	bool app;

	if (cqe < 1 || (unsigned)cqe > UR_MAX_CQE)
		return uroce_refuse(nic, EINVAL, "resize_cq", "cqe %d is not in 1..max_cqe %u", cqe,
				    UR_MAX_CQE);
	if (ring_make(ucq, &fresh, (uint32_t)cqe + 1, ucq->cq.ts != NULL, &app))
		return uroce_refuse(nic, ENOMEM, "resize_cq", "no memory for %d CQEs", cqe);
	/* Stop both the engine (producer) and pollers (consumer) while moving. */
	pthread_mutex_lock(&nic->lock);
	pthread_spin_lock(&ucq->poll_lock);
	cons = atomic_load(&ucq->cq.cons);
	prod = atomic_load(&ucq->cq.prod);
	if (prod - cons > fresh.mask) {
		pthread_spin_unlock(&ucq->poll_lock);
		pthread_mutex_unlock(&nic->lock);
		ring_drop(ucq, &fresh, app);
		return uroce_refuse(nic, EINVAL, "resize_cq",
				    "cqe %d is fewer than the %u CQEs it holds", cqe, prod - cons);
	}
	for (; cons != prod; cons++, n++) {
		fresh.ring[n] = ucq->cq.ring[cons & ucq->cq.mask];
		if (fresh.ts)
			fresh.ts[n] = ucq->cq.ts[cons & ucq->cq.mask];
	}
	old = ucq->cq;
	ucq->cq.ring = fresh.ring;
	ucq->cq.ts = fresh.ts;
	ucq->cq.mask = fresh.mask;
	atomic_store(&ucq->cq.cons, 0);
	atomic_store(&ucq->cq.prod, n);
	cq->cqe = (int)fresh.mask;
	pthread_spin_unlock(&ucq->poll_lock);
	pthread_mutex_unlock(&nic->lock);
	ring_drop(ucq, &old, ucq->ring_app);
	ucq->ring_app = app;
	return 0;
}
