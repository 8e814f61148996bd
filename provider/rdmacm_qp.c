/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * QPs made through rdma_cm (rdmacm.h), and the states the CM moves them
 * through, as the kernel's rdma_cm does: INIT at creation (UD: on to RTS),
 * RTR and RTS with what the REQ and REP settled, ERR on a disconnect.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm_qp_attr.h"
#include "rdmacm.h"
#include "uroce.h"

/* INIT for a connected QP; INIT, RTR and RTS for a UD one, as librdmacm does at create. */
static int qp_init(struct urcm_id *id, struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};

	if (qp->qp_type == IBV_QPT_UD) {
		a.qkey = URCM_UDP_QKEY;
		int err = ibv_modify_qp(
		    qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);

		a.qp_state = IBV_QPS_RTR;
		if (!err)
			err = ibv_modify_qp(qp, &a, IBV_QP_STATE);
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = id->psn;
		return err ? err : ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	}
	a.qp_access_flags =
	    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	/* ibv_modify_qp returns the error number itself */
	return ibv_modify_qp(qp, &a,
			     IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

static void free_cqs(struct rdma_cm_id *cid)
{
	if (cid->send_cq)
		ibv_destroy_cq(cid->send_cq);
	if (cid->recv_cq)
		ibv_destroy_cq(cid->recv_cq);
	if (cid->send_cq_channel)
		ibv_destroy_comp_channel(cid->send_cq_channel);
	if (cid->recv_cq_channel)
		ibv_destroy_comp_channel(cid->recv_cq_channel);
	cid->send_cq = cid->recv_cq = NULL;
	cid->send_cq_channel = cid->recv_cq_channel = NULL;
}

static int make_cqs(struct rdma_cm_id *cid, struct ibv_qp_init_attr_ex *attr)
{
	int ns = attr->cap.max_send_wr ? (int)attr->cap.max_send_wr : 1;
	int nr = attr->cap.max_recv_wr ? (int)attr->cap.max_recv_wr : 1;

	cid->send_cq_channel = ibv_create_comp_channel(cid->verbs);
	cid->recv_cq_channel = ibv_create_comp_channel(cid->verbs);
	if (cid->send_cq_channel && cid->recv_cq_channel) {
		cid->send_cq = ibv_create_cq(cid->verbs, ns, cid, cid->send_cq_channel, 0);
		cid->recv_cq = ibv_create_cq(cid->verbs, nr, cid, cid->recv_cq_channel, 0);
	}
	if (!cid->send_cq || !cid->recv_cq) {
		free_cqs(cid);
		return -1;
	}
	if (!attr->send_cq)
		attr->send_cq = cid->send_cq;
	if (!attr->recv_cq)
		attr->recv_cq = cid->recv_cq;
	return 0;
}

API int rdma_create_qp_ex(struct rdma_cm_id *cid, struct ibv_qp_init_attr_ex *attr)
{
	struct urcm_id *id = to_urcm(cid);
	struct ibv_qp *qp;
	int err;

	if (!id->dev || !attr)
		return urcm_fail(EINVAL);
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
		attr->pd = cid->pd;
	}
	if (attr->pd->context != cid->verbs)
		return urcm_fail(EINVAL);
	/* no CQs given: librdmacm makes one of each, with a completion
	 * channel each (rdma_get_send_comp and rdma_get_recv_comp wait on them) */
	if (!attr->send_cq || !attr->recv_cq) {
		if (make_cqs(cid, attr))
			return -1;
		id->own_cqs = true;
	}
	qp = ibv_create_qp_ex(cid->verbs, attr);
	if (!qp) {
		err = errno;
		if (id->own_cqs)
			free_cqs(cid);
		id->own_cqs = false;
		return urcm_fail(err);
	}
	err = qp_init(id, qp);
	if (err) {
		ibv_destroy_qp(qp);
		return urcm_fail(err);
	}
	cid->qp = qp;
	cid->qp_type = qp->qp_type;
	return 0;
}

API int rdma_create_qp(struct rdma_cm_id *cid, struct ibv_pd *pd,
		       struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex ex;
	int ret;

	if (!qp_init_attr)
		return urcm_fail(EINVAL);
	memset(&ex, 0, sizeof(ex));
	memcpy(&ex, qp_init_attr, sizeof(*qp_init_attr));
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd;
	ret = rdma_create_qp_ex(cid, &ex);
	if (!ret)
		qp_init_attr->cap = ex.cap;
	return ret;
}

API void rdma_destroy_qp(struct rdma_cm_id *cid)
{
	struct urcm_id *id = to_urcm(cid);

	/* under the CM's lock: its thread moves the QP when a REP comes */
	pthread_mutex_lock(&urcm_lock);
	if (cid->qp)
		ibv_destroy_qp(cid->qp);
	cid->qp = NULL;
	pthread_mutex_unlock(&urcm_lock);
	if (id->own_cqs) {
		free_cqs(cid);
		id->own_cqs = false;
	}
}

/* RTR and RTS with what the REQ and REP settled. */
int urcm_qp_connect(struct urcm_id *id, const struct ur_cm_qp_attr *c)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR};
	struct ibv_qp *qp = id->id.qp;
	int err;

	if (!qp)
		return 0;
	a.path_mtu = (enum ibv_mtu)c->path_mtu;
	a.dest_qp_num = c->dest_qpn;
	a.rq_psn = c->rq_psn;
	a.max_dest_rd_atomic = c->max_dest_rd_atomic;
	a.min_rnr_timer = c->min_rnr_timer;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = id->id.route.addr.addr.ibaddr.dgid;
	a.ah_attr.grh.sgid_index = (uint8_t)id->sgid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.traffic_class = id->tos;
	err = ibv_modify_qp(qp, &a,
			    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = c->sq_psn;
	a.timeout = id->ack_timeout ? id->ack_timeout : c->timeout;
	a.retry_cnt = c->retry_cnt;
	a.rnr_retry = c->rnr_retry;
	a.max_rd_atomic = c->max_rd_atomic;
	return ibv_modify_qp(qp, &a,
			     IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				 IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* The QP goes to the error state: what the kernel's CM does on a disconnect or reject. */
void urcm_qp_to_error(struct urcm_id *id)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};

	if (id->id.qp)
		ibv_modify_qp(id->id.qp, &a, IBV_QP_STATE);
}
