/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Queue pairs and address vectors: create, modify (with neighbour
 * resolution of the destination on the way to RTR), query, destroy.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "uroce.h"
#include "ur_util.h"

#define RESOLVE_WAIT_NS 3000000000ull /* ARP/ND retries before giving up at modify time */

static void set_ll_mac(const uint8_t gid[16], uint8_t mac[6])
{
	mac[0] = gid[8] ^ 2;
	mac[1] = gid[9];
	mac[2] = gid[10];
	mac[3] = gid[13];
	mac[4] = gid[14];
	mac[5] = gid[15];
}

/* A link-local GID built from a MAC (fe80::xxxx:xxff:fexx:xxxx) names its MAC, as the kernel reads it. */
static bool ll_gid_has_mac(const uint8_t g[16])
{
	static const uint8_t ll[8] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0};

	return !memcmp(g, ll, 8) && g[11] == 0xff && g[12] == 0xfe;
}

int uroce_av_from_attr(struct uroce_nic *nic, const struct ibv_ah_attr *ah, struct ur_av *av,
		       const char *call)
{
	const struct ur_gid *sgid;

	/* RoCE addresses by GID: the GRH is required (A16.4.3) */
	if (!ah->is_global)
		return uroce_refuse(
		    nic, EINVAL, call,
		    "address without a GRH (ah_attr.is_global 0): RoCE needs one (IBTA A16.4.3)");
	if (ah->grh.sgid_index >= nic->conf.ngids)
		return uroce_refuse(nic, EINVAL, call,
				    "ah_attr.grh.sgid_index %u: the GID table has %u entries",
				    ah->grh.sgid_index, nic->conf.ngids);
	if (ah->port_num != 1 && ah->port_num != 0)
		return uroce_refuse(nic, EINVAL, call,
				    "ah_attr.port_num %u: the device has port 1 only",
				    ah->port_num);
	memset(av, 0, sizeof(*av));
	sgid = (const struct ur_gid *)nic->conf.gids[ah->grh.sgid_index].raw;
	av->path.sgid = *sgid;
	memcpy(av->path.dgid.raw, ah->grh.dgid.raw, 16);
	if (ur_gid_is_v4(&av->path.sgid) != ur_gid_is_v4(&av->path.dgid))
		return uroce_refuse(
		    nic, EINVAL, call,
		    "source GID %u is IPv%c, the destination GID IPv%c: no route between them",
		    ah->grh.sgid_index, ur_gid_is_v4(&av->path.sgid) ? '4' : '6',
		    ur_gid_is_v4(&av->path.dgid) ? '4' : '6');
	memcpy(av->path.smac, nic->conf.mac, 6);
	av->path.tclass = ah->grh.traffic_class;
	/* the kernel sets the hop limit from the route (64) whatever the caller asks */
	av->path.hop_limit = 64;
	av->path.flow_label = ah->grh.flow_label;
	av->sgid_index = ah->grh.sgid_index;
	av->sl = ah->sl;
	av->static_rate = ah->static_rate;
	return 0;
}

static bool is_own_gid(struct uroce_nic *nic, const uint8_t g[16])
{
	for (unsigned i = 0; i < nic->conf.ngids; i++)
		if (!memcmp(nic->conf.gids[i].raw, g, 16))
			return true;
	return false;
}

int uroce_resolve_av(struct uroce_nic *nic, struct ur_av *av, uint64_t wait_ns)
{
	const uint8_t *dgid = av->path.dgid.raw;
	uint64_t end = uroce_now_ns() + wait_ns;
	char txt[48];
	int r;

	if (ll_gid_has_mac(dgid)) {
		set_ll_mac(dgid, av->path.dmac);
		av->resolved = 1;
		return 0;
	}
	if (is_own_gid(nic, dgid)) {
		memcpy(av->path.dmac, nic->conf.mac, 6); /* loopback */
		av->resolved = 1;
		return 0;
	}
	for (;;) {
		uint64_t now = uroce_now_ns();
		struct timespec nap = {.tv_nsec = 200000};

		pthread_mutex_lock(&nic->lock);
		r = uroce_dp_neigh_lookup(nic->dp, dgid, av->path.dmac, now);
		pthread_mutex_unlock(&nic->lock);
		if (r == 0) {
			const uint8_t *m = av->path.dmac;

			av->resolved = 1;
			uroce_gid_format(dgid, txt, sizeof(txt));
			uroce_log(nic, 1, "neighbour %s is %02x:%02x:%02x:%02x:%02x:%02x", txt, m[0],
				  m[1], m[2], m[3], m[4], m[5]);
			return 0;
		}
		if (r != -EAGAIN || now >= end)
			break;
		nanosleep(&nap, NULL);
	}
	uroce_gid_format(dgid, txt, sizeof(txt));
	uroce_log(nic, 0, "neighbour %s does not answer (ARP/ND): packets to it are dropped until it does",
		  txt);
	return -EHOSTUNREACH;
}

bool uroce_neigh_would_wait(struct ibv_context *ctx, const uint8_t gid[16])
{
	struct uroce_nic *nic = to_unic(ctx);
	uint8_t mac[6];
	int r;

	if (ll_gid_has_mac(gid) || is_own_gid(nic, gid))
		return false;
	pthread_mutex_lock(&nic->lock);
	r = uroce_dp_neigh_lookup(nic->dp, gid, mac, uroce_now_ns());
	pthread_mutex_unlock(&nic->lock);
	return r == -EAGAIN; /* known, or known not to answer (for a while): no wait */
}

int uroce_neigh_resolve(struct ibv_context *ctx, const uint8_t gid[16])
{
	struct ur_av av;

	memset(&av, 0, sizeof(av));
	memcpy(av.path.dgid.raw, gid, 16);
	return uroce_resolve_av(to_unic(ctx), &av, RESOLVE_WAIT_NS);
}

/*
 * Keep trying neighbours that did not answer at modify time (progress
 * thread, lock held): the QP sends into the void meanwhile, so it ends
 * with RETRY_EXC_ERR if the neighbour never shows up, and carries on if it
 * does.
 */
void uroce_neigh_poll(struct uroce_nic *nic, uint64_t now)
{
	unsigned kept = 0;

	if (!nic->nneigh_wait || now < nic->next_neigh_poll)
		return;
	nic->next_neigh_poll = now + 100000000ull;
	for (unsigned i = 0; i < nic->nneigh_wait; i++) {
		struct uroce_qp *uqp = nic->neigh_wait[i];
		uint8_t mac[6];
		char txt[48];

		if (uroce_dp_neigh_lookup(nic->dp, uqp->neigh_gid, mac, now)) {
			nic->neigh_wait[kept++] = uqp;
			continue;
		}
		ur_qp_set_dmac(uqp->qp, mac);
		uqp->neigh_pending = false;
		uroce_gid_format(uqp->neigh_gid, txt, sizeof(txt));
		uroce_log(nic, 1, "qp %#x: neighbour %s answered late: %02x:%02x:%02x:%02x:%02x:%02x",
			  uqp->vqp.qp.qp_num, txt, mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
	}
	nic->nneigh_wait = kept;
}

static void neigh_wait_add(struct uroce_nic *nic, struct uroce_qp *uqp)
{
	for (unsigned i = 0; i < nic->nneigh_wait; i++)
		if (nic->neigh_wait[i] == uqp)
			return;
	if (nic->nneigh_wait < UR_ARRAY_SIZE(nic->neigh_wait))
		nic->neigh_wait[nic->nneigh_wait++] = uqp;
}

static void neigh_wait_del(struct uroce_nic *nic, struct uroce_qp *uqp)
{
	for (unsigned i = 0; i < nic->nneigh_wait; i++)
		if (nic->neigh_wait[i] == uqp)
			nic->neigh_wait[i] = nic->neigh_wait[--nic->nneigh_wait];
}

static enum ur_qp_type to_ur_type(enum ibv_qp_type t)
{
	switch (t) {
	case IBV_QPT_RC:
		return UR_QPT_RC;
	case IBV_QPT_UC:
		return UR_QPT_UC;
	case IBV_QPT_UD:
		return UR_QPT_UD;
	case IBV_QPT_XRC_SEND:
		return UR_QPT_XRC_SEND;
	case IBV_QPT_XRC_RECV:
		return UR_QPT_XRC_RECV;
	default:
		return 0;
	}
}

static struct ibv_qp *create_qp(struct ibv_context *ibctx, struct ibv_qp_init_attr_ex *attr,
				uint32_t gsi_qpn);

static const char *type_name(enum ibv_qp_type t)
{
	switch (t) {
	case IBV_QPT_RC:
		return "RC";
	case IBV_QPT_UC:
		return "UC";
	case IBV_QPT_XRC_SEND:
		return "XRC_SEND";
	case IBV_QPT_XRC_RECV:
		return "XRC_RECV";
	default:
		return "UD";
	}
}

struct ibv_qp *uroce_create_qp_ex(struct ibv_context *ibctx, struct ibv_qp_init_attr_ex *attr)
{
	return create_qp(ibctx, attr, 0);
}

/* create_qp for the ibv_qp_init_attr form; gsi_qpn as there. */
static struct ibv_qp *create_qp_in_pd(struct ibv_pd *pd, struct ibv_qp_init_attr *attr,
				      uint32_t gsi_qpn)
{
	struct ibv_qp_init_attr_ex ex;
	struct ibv_qp *qp;

	memset(&ex, 0, sizeof(ex));
	memcpy(&ex, attr, sizeof(*attr));
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd;
	qp = create_qp(pd->context, &ex, gsi_qpn);
	if (qp)
		attr->cap = ex.cap;
	return qp;
}

/* The context's GSI QP, number 1, for the connection manager (rdmacm_gsi.c): UD. */
struct ibv_qp *uroce_create_gsi_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	attr->qp_type = IBV_QPT_UD;
	return create_qp_in_pd(pd, attr, 1);
}

static struct ibv_qp *create_qp(struct ibv_context *ibctx, struct ibv_qp_init_attr_ex *attr,
				uint32_t gsi_qpn)
{
	struct uroce_nic *nic = to_unic(ibctx);
	struct ur_qp_init init = {0};
	struct uroce_xrcd *xrcd = NULL;
	struct uroce_qp *uqp;
	struct ibv_qp *qp;
	uint32_t qpn;
	int err;
	/* annex A14: an XRC target has no PD, CQs or queues of its own, only
	 * its XRC domain; an initiator sends, so has a PD and a send CQ */
	bool tgt = attr->qp_type == IBV_QPT_XRC_RECV, ini = attr->qp_type == IBV_QPT_XRC_SEND;

	if (tgt) {
		if (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !attr->xrcd ||
		    attr->xrcd->context != ibctx) {
			errno = uroce_refuse(nic, EINVAL, "create_qp",
					     "an XRC_RECV QP needs an XRCD of this context "
					     "(IBV_QP_INIT_ATTR_XRCD)");
			return NULL;
		}
		xrcd = to_uxrcd(attr->xrcd);
		attr->pd = NULL;
		attr->send_cq = attr->recv_cq = NULL;
		attr->srq = NULL;
		attr->cap.max_send_wr = attr->cap.max_recv_wr = 0;
	} else if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		errno = uroce_refuse(nic, EINVAL, "create_qp", "no PD (IBV_QP_INIT_ATTR_PD)");
		return NULL;
	}
	if (ini) {
		attr->recv_cq = NULL;
		attr->srq = NULL;
		attr->cap.max_recv_wr = 0;
	}
	if ((!tgt && !attr->send_cq) || (!tgt && !ini && !attr->recv_cq)) {
		errno = uroce_refuse(nic, EINVAL, "create_qp", "no %s",
				     attr->send_cq ? "recv_cq" : "send_cq");
		return NULL;
	}
	if ((attr->send_cq && attr->send_cq->context != ibctx) ||
	    (attr->recv_cq && attr->recv_cq->context != ibctx) ||
	    (attr->srq && attr->srq->context != ibctx)) {
		errno = uroce_refuse(nic, EINVAL, "create_qp",
				     "send_cq, recv_cq or srq belongs to another context");
		return NULL;
	}
	if (attr->comp_mask & ~(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
				IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_XRCD)) {
		errno = uroce_refuse(
		    nic, EOPNOTSUPP, "create_qp",
		    "comp_mask %#x: only PD, XRCD, CREATE_FLAGS and SEND_OPS_FLAGS are offered",
		    attr->comp_mask);
		return NULL;
	}
	/* no creation flag is offered; none at all is what every QP has (rxe: EOPNOTSUPP) */
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags) {
		errno = uroce_refuse(nic, EOPNOTSUPP, "create_qp",
				     "create_flags %#x: no creation flag is offered",
				     attr->create_flags);
		return NULL;
	}
	init.type = to_ur_type(attr->qp_type);
	if (!init.type) {
		/* raw packet QPs are not implemented */
		errno = uroce_refuse(nic, EOPNOTSUPP, "create_qp",
				     "qp_type %d: only RC, UC, UD, XRC_SEND and XRC_RECV are offered",
				     attr->qp_type);
		return NULL;
	}
	if (attr->cap.max_send_wr > UR_MAX_WR || attr->cap.max_recv_wr > UR_MAX_WR ||
	    attr->cap.max_send_sge > UR_MAX_SGE || attr->cap.max_recv_sge > UR_MAX_SGE ||
	    attr->cap.max_inline_data > UR_MAX_INLINE) {
		const struct ibv_qp_cap *c = &attr->cap;

		errno =
		    uroce_refuse(nic, EINVAL, "create_qp",
				 "cap max_send_wr %u max_recv_wr %u (max_qp_wr %u), max_send_sge "
				 "%u max_recv_sge %u (max_sge %u), max_inline_data %u (at most %u)",
				 c->max_send_wr, c->max_recv_wr, UR_MAX_WR, c->max_send_sge,
				 c->max_recv_sge, UR_MAX_SGE, c->max_inline_data, UR_MAX_INLINE);
		return NULL;
	}
	err = uroce_obj_get(nic, UROCE_OBJ_QP);
	if (err) {
		errno = uroce_refuse(nic, err, "create_qp", "max_qp %u QPs exist already",
				     nic->limit[UROCE_OBJ_QP]);
		return NULL;
	}
	uqp = calloc(1, sizeof(*uqp));
	if (!uqp) {
		uroce_obj_put(nic, UROCE_OBJ_QP);
		errno = uroce_refuse(nic, ENOMEM, "create_qp", "no memory");
		return NULL;
	}
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		err = uroce_qp_ex_init(uqp, attr->send_ops_flags);
		if (err) {
			uroce_obj_put(nic, UROCE_OBJ_QP);
			free(uqp);
			errno =
			    uroce_refuse(nic, err, "create_qp",
					 "send_ops_flags %#llx asks for an operation not offered "
					 "(memory windows, local invalidate, TSO, atomic write)",
					 (unsigned long long)attr->send_ops_flags);
			return NULL;
		}
	}
	init.pd = attr->pd ? to_upd(attr->pd)->id : 0;
	init.alloc = attr->pd ? uroce_pd_queue_alloc(to_upd(attr->pd)) : NULL; /* a parent domain's */
	init.xrcd = xrcd ? xrcd->dom->id : 0;
	init.send_cq = attr->send_cq ? &to_ucq(attr->send_cq)->cq : NULL;
	init.recv_cq = attr->recv_cq ? &to_ucq(attr->recv_cq)->cq : NULL;
	init.srq = attr->srq ? to_usrq(attr->srq)->srq : NULL;
	init.max_send_wr = attr->cap.max_send_wr;
	init.max_recv_wr = attr->srq ? 0 : attr->cap.max_recv_wr;
	init.max_send_sge = attr->cap.max_send_sge;
	init.max_recv_sge = attr->cap.max_recv_sge;
	init.max_inline_data = attr->cap.max_inline_data;
	init.sq_sig_all = attr->sq_sig_all;
	init.host_ctx = uqp;
	uqp->vqp.qp.context = ibctx; /* its events go to this context (progress.c) */

	pthread_mutex_lock(&nic->lock);
	if (gsi_qpn) {
		qpn = gsi_qpn;
		err = 0;
	} else {
		err = uroce_qpn_alloc(nic, &qpn);
	}
	if (!err) {
		init.qpn = qpn;
		err = ur_qp_create(nic->engine, &init, &uqp->qp);
		if (err)
			uroce_qpn_free(nic, qpn);
		else
			uroce_link_add(&to_uctx(ibctx)->qps, &uqp->link);
	}
	pthread_mutex_unlock(&nic->lock);
	if (err) {
		uroce_log(nic, 0, "create qp: %s", strerror(-err));
		uroce_obj_put(nic, UROCE_OBJ_QP);
		free(uqp);
		errno = uroce_refuse(nic, err == -ENOMEM ? ENOMEM : EINVAL, "create_qp", "%s",
				     err == -ENOMEM ? "no QP number or memory left"
						    : "the engine refused the QP");
		return NULL;
	}
	pthread_spin_init(&uqp->sq_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&uqp->rq_lock, PTHREAD_PROCESS_PRIVATE);
	uqp->sq_sig_all = attr->sq_sig_all;
	uqp->max_inline = init.max_inline_data;
	if (attr->send_cq)
		atomic_fetch_add(&to_ucq(attr->send_cq)->refs, 1);
	if (attr->recv_cq)
		atomic_fetch_add(&to_ucq(attr->recv_cq)->refs, 1);
	if (attr->pd)
		atomic_fetch_add(&to_upd(attr->pd)->refs, 1);
	if (xrcd) {
		uqp->xrcd = xrcd->dom;
		atomic_fetch_add(&xrcd->dom->refs, 1);
		uqp->vqp.comp_mask |= VERBS_QP_XRCD;
		uqp->vqp.xrcd = &xrcd->vxrcd;
		init.max_send_wr = init.max_send_sge = init.max_inline_data = 0;
	}
	if (attr->srq)
		atomic_fetch_add(&to_usrq(attr->srq)->refs, 1);

	qp = &uqp->vqp.qp;
	qp->context = ibctx;
	qp->qp_context = attr->qp_context;
	qp->pd = attr->pd;
	qp->send_cq = attr->send_cq;
	qp->recv_cq = attr->recv_cq;
	qp->srq = attr->srq;
	qp->qp_type = attr->qp_type;
	qp->state = IBV_QPS_RESET;
	qp->qp_num = qpn;
	qp->handle = qpn;
	qp->events_completed = 0;
	pthread_mutex_init(&qp->mutex, NULL);
	pthread_cond_init(&qp->cond, NULL);
	attr->cap.max_send_wr = init.max_send_wr;
	attr->cap.max_recv_wr = init.max_recv_wr;
	attr->cap.max_send_sge = init.max_send_sge;
	attr->cap.max_recv_sge = init.max_recv_sge;
	attr->cap.max_inline_data = init.max_inline_data;
	uroce_log(nic, 1, "create %s qp %#x: send %u x %u sge, recv %u x %u sge, inline %u",
		  type_name(attr->qp_type), qpn, init.max_send_wr, init.max_send_sge,
		  init.max_recv_wr, init.max_recv_sge, init.max_inline_data);
	return qp;
}

struct ibv_qp *uroce_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	return create_qp_in_pd(pd, attr, 0);
}

static void to_ur_attr(const struct ibv_qp_attr *a, struct ur_qp_attr *u)
{
	u->qp_state = (enum ur_qp_state)a->qp_state;
	u->cur_qp_state = (enum ur_qp_state)a->cur_qp_state;
	u->path_mtu = a->path_mtu;
	u->qkey = a->qkey;
	u->rq_psn = a->rq_psn;
	u->sq_psn = a->sq_psn;
	u->dest_qp_num = a->dest_qp_num;
	u->qp_access_flags = (uint32_t)a->qp_access_flags;
	u->pkey_index = a->pkey_index;
	u->en_sqd_async_notify = a->en_sqd_async_notify;
	u->max_rd_atomic = a->max_rd_atomic;
	u->max_dest_rd_atomic = a->max_dest_rd_atomic;
	u->min_rnr_timer = a->min_rnr_timer;
	u->port_num = a->port_num;
	u->timeout = a->timeout;
	u->retry_cnt = a->retry_cnt;
	u->rnr_retry = a->rnr_retry;
	u->rate_limit = a->rate_limit;
}

int uroce_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	struct uroce_nic *nic = to_unic(qp->context);
	struct uroce_qp *uqp = to_uqp(qp);
	struct ur_qp_attr ua, cur;
	int err;

	memset(&ua, 0, sizeof(ua));
	to_ur_attr(attr, &ua);
	if (mask & IBV_QP_PATH_MTU) {
		/* a path MTU above the port's runs at the port's, as the wire allows */
		if (attr->path_mtu < IBV_MTU_256 || attr->path_mtu > IBV_MTU_4096)
			return uroce_refuse(nic, EINVAL, "modify_qp",
					    "qp %#x: path_mtu %d is not an IBV_MTU_* value",
					    qp->qp_num, attr->path_mtu);
		if (ur_mtu_bytes(attr->path_mtu) > nic->active_mtu)
			ua.path_mtu = ur_mtu_enum(nic->active_mtu);
	}
	if (mask & IBV_QP_AV) {
		uint32_t dqpn;

		err = uroce_av_from_attr(nic, &attr->ah_attr, &ua.av, "modify_qp (IBV_QP_AV)");
		if (err)
			return err;
		pthread_mutex_lock(&nic->lock);
		ur_qp_query(uqp->qp, &cur);
		pthread_mutex_unlock(&nic->lock);
		dqpn = (mask & IBV_QP_DEST_QPN) ? attr->dest_qp_num : cur.dest_qp_num;
		ua.av.path.udp_sport = ur_roce_udp_sport(ua.av.path.flow_label, qp->qp_num, dqpn);
		uqp->neigh_pending = uroce_resolve_av(nic, &ua.av, RESOLVE_WAIT_NS) != 0;
		memcpy(uqp->neigh_gid, ua.av.path.dgid.raw, 16);
	}
	pthread_mutex_lock(&nic->lock);
	err = ur_qp_modify(uqp->qp, &ua, (uint32_t)mask, uroce_now_ns());
	if (!err && (mask & IBV_QP_AV)) {
		if (uqp->neigh_pending)
			neigh_wait_add(nic, uqp);
		else
			neigh_wait_del(nic, uqp);
	}
	pthread_mutex_unlock(&nic->lock);
	if (err) {
		char why[384] = "";

		if (err == -EINVAL && nic->cfg.debug >= 1) {
			/* the same checks again, this time for their reason */
			pthread_mutex_lock(&nic->lock);
			ur_qp_modify_check(uqp->qp, &ua, (uint32_t)mask, why, sizeof(why));
			pthread_mutex_unlock(&nic->lock);
		}
		return uroce_refuse(
		    nic, -err, "modify_qp", "qp %#x (mask %#x, to state %s): %s", qp->qp_num, mask,
		    (mask & IBV_QP_STATE) ? ur_qp_state_name((enum ur_qp_state)attr->qp_state)
					  : "same",
		    why[0] ? why : "no memory for the responder resources");
	}
	uroce_progress_kick(nic);
	return 0;
}

int uroce_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		   struct ibv_qp_init_attr *init)
{
	struct uroce_nic *nic = to_unic(qp->context);
	struct uroce_qp *uqp = to_uqp(qp);
	struct ur_qp_attr u;

	(void)mask;
	pthread_mutex_lock(&nic->lock);
	ur_qp_query(uqp->qp, &u);
	pthread_mutex_unlock(&nic->lock);
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = (enum ibv_qp_state)u.qp_state;
	attr->cur_qp_state = (enum ibv_qp_state)u.cur_qp_state;
	attr->path_mtu = (enum ibv_mtu)u.path_mtu;
	attr->path_mig_state = IBV_MIG_MIGRATED;
	attr->qkey = u.qkey;
	attr->rq_psn = u.rq_psn;
	attr->sq_psn = u.sq_psn;
	attr->dest_qp_num = u.dest_qp_num;
	attr->qp_access_flags = (int)u.qp_access_flags;
	attr->cap.max_send_wr = u.max_send_wr;
	attr->cap.max_recv_wr = u.max_recv_wr;
	attr->cap.max_send_sge = u.max_send_sge;
	attr->cap.max_recv_sge = u.max_recv_sge;
	attr->cap.max_inline_data = u.max_inline_data;
	attr->ah_attr.is_global = 1;
	memcpy(attr->ah_attr.grh.dgid.raw, u.av.path.dgid.raw, 16);
	attr->ah_attr.grh.flow_label = u.av.path.flow_label;
	attr->ah_attr.grh.sgid_index = u.av.sgid_index;
	attr->ah_attr.grh.hop_limit = u.av.path.hop_limit;
	attr->ah_attr.grh.traffic_class = u.av.path.tclass;
	attr->ah_attr.sl = u.av.sl;
	attr->ah_attr.static_rate = u.av.static_rate;
	attr->ah_attr.port_num = 1;
	attr->pkey_index = u.pkey_index;
	attr->en_sqd_async_notify = u.en_sqd_async_notify;
	attr->sq_draining = u.sq_draining;
	attr->max_rd_atomic = u.max_rd_atomic;
	attr->max_dest_rd_atomic = u.max_dest_rd_atomic;
	attr->min_rnr_timer = u.min_rnr_timer;
	attr->port_num = 1;
	attr->timeout = u.timeout;
	attr->retry_cnt = u.retry_cnt;
	attr->rnr_retry = u.rnr_retry;
	attr->rate_limit = u.rate_limit;
	if (init) {
		memset(init, 0, sizeof(*init));
		init->qp_context = qp->qp_context;
		init->send_cq = qp->send_cq;
		init->recv_cq = qp->recv_cq;
		init->srq = qp->srq;
		init->qp_type = qp->qp_type;
		init->cap = attr->cap;
		init->sq_sig_all = uqp->sq_sig_all;
	}
	return 0;
}

int uroce_destroy_qp(struct ibv_qp *qp)
{
	struct uroce_context *ctx = to_uctx(qp->context);
	struct uroce_nic *nic = ctx->nic;
	struct uroce_qp *uqp = to_uqp(qp);
	unsigned dropped;

	pthread_mutex_lock(&nic->lock);
	neigh_wait_del(nic, uqp);
	/* the peer's last request is ours, and it waits for the ACK we held */
	if (ur_qp_release_ack(uqp->qp))
		uroce_progress_tx_locked(nic);
	ur_qp_destroy(uqp->qp);
	uroce_qpn_free(nic, qp->qp_num);
	uroce_link_del(&uqp->link);
	dropped = uroce_drain_events(ctx->vctx.context.async_fd, ctx->async_wr, (uintptr_t)qp,
				     sizeof(struct ur_uverbs_async_event_desc));
	pthread_mutex_unlock(&nic->lock);
	/* as the kernel does: wait for the events handed out to be acknowledged */
	pthread_mutex_lock(&qp->mutex);
	while (qp->events_completed + dropped < uqp->events_sent)
		pthread_cond_wait(&qp->cond, &qp->mutex);
	pthread_mutex_unlock(&qp->mutex);
	if (qp->send_cq)
		atomic_fetch_sub(&to_ucq(qp->send_cq)->refs, 1);
	if (qp->recv_cq)
		atomic_fetch_sub(&to_ucq(qp->recv_cq)->refs, 1);
	if (qp->pd)
		atomic_fetch_sub(&to_upd(qp->pd)->refs, 1);
	if (uqp->xrcd)
		atomic_fetch_sub(&uqp->xrcd->refs, 1);
	if (qp->srq)
		atomic_fetch_sub(&to_usrq(qp->srq)->refs, 1);
	uroce_obj_put(nic, UROCE_OBJ_QP);
	uroce_log(nic, 1, "destroy qp %#x", qp->qp_num);
	pthread_spin_destroy(&uqp->sq_lock);
	pthread_spin_destroy(&uqp->rq_lock);
	free(uqp);
	return 0;
}

/* A QP its context closed with (nic->lock held): gone from the engine, no waiting for events. */
void uroce_qp_take_back(struct uroce_nic *nic, struct uroce_qp *uqp)
{
	/* an XRC domain may outlive the context, shared with another */
	if (uqp->xrcd)
		atomic_fetch_sub(&uqp->xrcd->refs, 1);
	neigh_wait_del(nic, uqp);
	ur_qp_destroy(uqp->qp);
	uroce_qpn_free(nic, uqp->vqp.qp.qp_num);
	uroce_link_del(&uqp->link);
	uroce_obj_put(nic, UROCE_OBJ_QP);
	free(uqp);
}

struct ibv_ah *uroce_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct uroce_nic *nic = to_unic(pd->context);
	struct uroce_ah *ah;
	int err = uroce_obj_get(nic, UROCE_OBJ_AH);

	if (err) {
		errno = uroce_refuse(nic, err, "create_ah", "max_ah %u AHs exist already",
				     nic->limit[UROCE_OBJ_AH]);
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		err = uroce_refuse(nic, ENOMEM, "create_ah", "no memory");
		goto err_put;
	}
	err = uroce_av_from_attr(nic, attr, &ah->av, "create_ah");
	if (err)
		goto err_free;
	if (uroce_resolve_av(nic, &ah->av, RESOLVE_WAIT_NS)) {
		/* as the kernel fails create_ah without a neighbour */
		err = uroce_refuse(nic, EHOSTUNREACH, "create_ah",
				   "the destination GID does not answer ARP/ND");
		goto err_free;
	}
	ah->pd = to_upd(pd);
	atomic_fetch_add(&ah->pd->refs, 1);
	pthread_mutex_lock(&nic->lock);
	uroce_link_add(&to_uctx(pd->context)->ahs, &ah->link);
	pthread_mutex_unlock(&nic->lock);
	return &ah->ibv_ah;

err_free:
	free(ah);
err_put:
	uroce_obj_put(nic, UROCE_OBJ_AH);
	errno = err;
	return NULL;
}

int uroce_destroy_ah(struct ibv_ah *ibah)
{
	struct uroce_nic *nic = to_unic(ibah->context);

	pthread_mutex_lock(&nic->lock);
	uroce_ah_take_back(nic, to_uah(ibah));
	pthread_mutex_unlock(&nic->lock);
	return 0;
}

/* nic->lock held. */
void uroce_ah_take_back(struct uroce_nic *nic, struct uroce_ah *ah)
{
	uroce_link_del(&ah->link);
	atomic_fetch_sub(&ah->pd->refs, 1);
	uroce_obj_put(nic, UROCE_OBJ_AH);
	free(ah);
}
