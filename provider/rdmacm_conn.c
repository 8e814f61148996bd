/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rdma_cm connections (rdmacm.h): connect, accept, reject and disconnect
 * drive transport/cm.c's endpoint (RC: REQ/REP/RTU/DREQ/DREP; UD: SIDR),
 * and what the endpoint reports becomes the program's events.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "cm_qp_attr.h"
#include "rdmacm.h"
#include "uroce.h"

static void conn_param_event(struct urcm_event *e, const uint8_t *pdata, size_t len)
{
	if (!e)
		return;
	memcpy(e->pdata, pdata, len);
	e->ev.param.conn.private_data = e->pdata;
	e->ev.param.conn.private_data_len = (uint8_t)len;
}

/* The id's CM endpoint, with a random comm ID (never 0) and transaction ID. */
static void endpoint_start(struct urcm_id *id)
{
	ur_cm_init(&id->cm, urcm_comm_id(id->dev), (uint64_t)urcm_random() << 32 | urcm_random(),
		   URCM_PACKET_LIFETIME);
	id->cm_live = true;
}

struct urcm_id *urcm_passive_id(struct urcm_id *l, struct urcm_dev *dev, const struct ibv_wc *wc,
				const struct ibv_grh *grh)
{
	struct urcm_id *id;
	union ibv_gid local;
	unsigned waiting = 0;

	for (struct urcm_id *i = urcm_ids(); i; i = i->next)
		if (i->listener == l && i->state == URCM_REQ_RCVD)
			waiting++;
	if (waiting >= (unsigned)l->backlog)
		return NULL; /* answered as nobody listening would be */
	id = urcm_new_id(l->id.channel, l->id.context, l->id.ps, l->id.qp_type);
	if (!id)
		return NULL;
	id->listener = l;
	id->passive = true;
	id->dev = dev;
	/* a synchronous listener's ids are synchronous from the start: what
	 * comes for one before rdma_get_request waits on its own channel */
	if (l->lib.sync)
		(void)urcm_make_sync(id); /* else rdma_get_request tries again */
	id->state = URCM_REQ_RCVD;
	id->ah = ibv_create_ah_from_wc(dev->pd, (struct ibv_wc *)wc, (struct ibv_grh *)grh, 1);
	endpoint_start(id);
	/* the addresses come with the REQ's private data, in on_req_event() */
	urcm_grh_gids(grh, &id->id.route.addr.addr.ibaddr.dgid, &local);
	for (int i = 0; i < dev->ngids; i++)
		if (!memcmp(dev->gids[i].raw, local.raw, 16))
			id->sgid_index = i;
	urcm_set_gids(id);
	return id;
}

/* A REQ or SIDR_REQ came: the id's addresses from its header, and the event. */
static void on_req_event(struct urcm_id *id, bool sidr)
{
	const struct ur_cm_mad *m = &id->cm.rx;
	const uint8_t *pdata = sidr ? m->sidr_req.private_data : m->req.private_data;
	uint64_t sid = sidr ? m->sidr_req.service_id : m->req.service_id;
	struct sockaddr *src = &id->id.route.addr.src_addr, *dst = &id->id.route.addr.dst_addr;
	struct ur_cm_ip_hdr h;
	uint16_t ps, port;
	struct urcm_event *e;

	if (!ur_cm_ip_hdr_decode(&h, pdata, UR_CM_IP_HDR_LEN) &&
	    ur_cm_ip_service_parse(sid, &ps, &port)) {
		if (h.ip_version == 4) {
			struct sockaddr_in *s = (void *)src, *d = (void *)dst;

			s->sin_family = d->sin_family = AF_INET;
			memcpy(&s->sin_addr, &h.dst_ip[12], 4);
			memcpy(&d->sin_addr, &h.src_ip[12], 4);
			s->sin_port = htons(port);
			d->sin_port = htons(h.src_port);
		} else {
			struct sockaddr_in6 *s = (void *)src, *d = (void *)dst;

			s->sin6_family = d->sin6_family = AF_INET6;
			memcpy(&s->sin6_addr, h.dst_ip, 16);
			memcpy(&d->sin6_addr, h.src_ip, 16);
			s->sin6_port = htons(port);
			d->sin6_port = htons(h.src_port);
		}
	}
	e = urcm_event(id, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	if (!e)
		return;
	if (sidr) {
		memcpy(e->pdata, pdata + UR_CM_IP_HDR_LEN, UR_CM_IP_SIDR_REQ_PDATA_MAX);
		e->ev.param.ud.private_data = e->pdata;
		e->ev.param.ud.private_data_len = UR_CM_IP_SIDR_REQ_PDATA_MAX;
		return;
	}
	conn_param_event(e, pdata + UR_CM_IP_HDR_LEN, UR_CM_IP_REQ_PDATA_MAX);
	/* as the kernel gives them: what the listener may take and ask for */
	e->ev.param.conn.responder_resources = m->req.initiator_depth;
	e->ev.param.conn.initiator_depth = m->req.responder_resources;
	e->ev.param.conn.flow_control = m->req.e2e_flow_control;
	e->ev.param.conn.retry_count = m->req.retry_count;
	e->ev.param.conn.rnr_retry_count = m->req.rnr_retry_count;
	e->ev.param.conn.srq = m->req.srq;
	e->ev.param.conn.qp_num = m->req.local_qpn;
}

/* The REP came (active side): the QP to RTS, then RTU and ESTABLISHED. Lock held. */
void urcm_on_rep(struct urcm_id *id)
{
	const struct ur_cm_rep *rep = &id->cm.rx.rep;
	struct ur_cm_qp_attr qa;
	struct ur_cm_out out;
	struct urcm_event *e;
	int err;

	ur_cm_qp_attr_active(&id->cm.tx.req, rep, URCM_PACKET_LIFETIME, &qa);
	err = urcm_qp_connect(id, &qa);
	if (err) {
		uroce_log(NULL, 0, "rdma_connect: the QP did not take the REP's attributes: %s",
			  strerror(err));
		out_send(
		    id,
		    ur_cm_reject(&id->cm, urcm_now(), UR_CM_REJ_CONSUMER_DEFINED, NULL, 0, &out),
		    &out);
		urcm_event(id, RDMA_CM_EVENT_CONNECT_ERROR, -err);
		return;
	}
	if (!id->id.qp) { /* the program moves its own QP: rdma_establish() */
		e = urcm_event(id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
		conn_param_event(e, rep->private_data, UR_CM_REP_PDATA);
		return;
	}
	err = ur_cm_establish(&id->cm, urcm_now(), &out);
	if (!err)
		urcm_out(id, &out);
}

void urcm_out(struct urcm_id *id, const struct ur_cm_out *out)
{
	struct urcm_event *e;

	if (out->send)
		urcm_send(id->dev, id->ah, out->send);
	switch (out->event) {
	case UR_CM_EV_NONE:
		break;
	case UR_CM_EV_REQ_RECEIVED:
		on_req_event(id, false);
		break;
	case UR_CM_EV_SIDR_REQ_RECEIVED:
		on_req_event(id, true);
		break;
	case UR_CM_EV_REP_RECEIVED:
		urcm_on_rep(id);
		break;
	case UR_CM_EV_ESTABLISHED:
		id->state = URCM_CONNECTED;
		e = urcm_event(id, RDMA_CM_EVENT_ESTABLISHED, 0);
		if (e && !id->passive)
			conn_param_event(e, id->cm.rx.rep.private_data, UR_CM_REP_PDATA);
		if (e && !id->passive) {
			e->ev.param.conn.responder_resources = id->cm.rx.rep.responder_resources;
			e->ev.param.conn.initiator_depth = id->cm.rx.rep.initiator_depth;
		}
		break;
	case UR_CM_EV_REJECTED:
		id->state = URCM_DISCONNECTED;
		e = urcm_event(id, RDMA_CM_EVENT_REJECTED, out->reason);
		if (e && id->cm.rx.hdr.attr_id == UR_CM_ATTR_REJ)
			conn_param_event(e, id->cm.rx.rej.private_data, UR_CM_REJ_PDATA);
		break;
	case UR_CM_EV_UNREACHABLE:
		id->state = URCM_DISCONNECTED;
		urcm_event(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
		break;
	case UR_CM_EV_DREQ_RECEIVED: {
		struct ur_cm_out drep;

		/* answered at once: a program that exits after its
		 * DISCONNECTED event would leave the peer's DREQ to its
		 * retries (the kernel's CM answers at close) */
		if (!ur_cm_disconnect(&id->cm, urcm_now(), &drep) && drep.send)
			urcm_send(id->dev, id->ah, drep.send);
	}
		/* fall through */
	case UR_CM_EV_DISCONNECTED:
		if (id->state != URCM_DISCONNECTED) {
			id->state = URCM_DISCONNECTED;
			urcm_event(id, RDMA_CM_EVENT_DISCONNECTED, 0);
		}
		break;
	case UR_CM_EV_TIMEWAIT_EXIT:
		id->cm_live = false;
		/* as Linux's rdma_cm reports it (cma_ib_handler) */
		urcm_event(id, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
		break;
	case UR_CM_EV_SIDR_REP_RECEIVED: {
		const struct ur_cm_sidr_rep *r = &id->cm.rx.sidr_rep;

		if (out->reason != UR_CM_SIDR_SUCCESS) {
			urcm_event(id, RDMA_CM_EVENT_UNREACHABLE, -ECONNREFUSED);
			break;
		}
		id->state = URCM_CONNECTED;
		e = urcm_event(id, RDMA_CM_EVENT_ESTABLISHED, 0);
		if (!e)
			break;
		memcpy(e->pdata, r->private_data, UR_CM_SIDR_REP_PDATA);
		e->ev.param.ud.private_data = e->pdata;
		e->ev.param.ud.private_data_len = UR_CM_SIDR_REP_PDATA;
		e->ev.param.ud.qp_num = r->qpn;
		e->ev.param.ud.qkey = r->qkey;
		e->ev.param.ud.ah_attr.is_global = 1;
		e->ev.param.ud.ah_attr.port_num = 1;
		e->ev.param.ud.ah_attr.grh.dgid = id->id.route.addr.addr.ibaddr.dgid;
		e->ev.param.ud.ah_attr.grh.sgid_index = (uint8_t)id->sgid_index;
		e->ev.param.ud.ah_attr.grh.hop_limit = 64;
		e->ev.param.ud.ah_attr.grh.traffic_class = id->tos;
		break;
	}
	}
}

/* The REQ's private data: the address header, then the program's. */
static int ip_pdata(struct urcm_id *id, uint8_t *out, size_t room, const void *pdata, size_t len)
{
	struct sockaddr *src = &id->id.route.addr.src_addr, *dst = &id->id.route.addr.dst_addr;
	struct ur_cm_ip_hdr h = {.version = UR_CM_IP_VERSION};

	if (len > room - UR_CM_IP_HDR_LEN)
		return EINVAL;
	h.src_port = ntohs(*port_of(src));
	if (src->sa_family == AF_INET) {
		h.ip_version = 4;
		memcpy(&h.src_ip[12], &((struct sockaddr_in *)src)->sin_addr, 4);
		memcpy(&h.dst_ip[12], &((struct sockaddr_in *)dst)->sin_addr, 4);
	} else {
		h.ip_version = 6;
		memcpy(h.src_ip, &((struct sockaddr_in6 *)src)->sin6_addr, 16);
		memcpy(h.dst_ip, &((struct sockaddr_in6 *)dst)->sin6_addr, 16);
	}
	if (ur_cm_ip_hdr_encode(&h, out, room))
		return EINVAL;
	if (len)
		memcpy(out + UR_CM_IP_HDR_LEN, pdata, len);
	return 0;
}

/*
 * The depths of a connect or accept, as librdmacm settles them: 255
 * (RDMA_MAX_RESP_RES, RDMA_MAX_INIT_DEPTH) is as many as the device takes
 * and, for an accept, the request asked for (peer_resp, peer_init: 255 for a
 * connect); a number above the device's is EINVAL.
 */
static int conn_depths(const struct urcm_id *id, const struct rdma_conn_param *p, uint8_t peer_resp,
		       uint8_t peer_init, uint8_t *resp, uint8_t *init)
{
	const struct urcm_dev *d = id->dev;

	/* librdmacm's ucma_valid_param checks RDMA_PS_TCP's only */
	if (id->id.ps == RDMA_PS_TCP &&
	    ((p->responder_resources != RDMA_MAX_RESP_RES &&
	      p->responder_resources > d->max_resp) ||
	     (p->initiator_depth != RDMA_MAX_INIT_DEPTH && p->initiator_depth > d->max_init)))
		return EINVAL;
	*resp = p->responder_resources;
	if (*resp == RDMA_MAX_RESP_RES)
		*resp = peer_resp < d->max_resp ? peer_resp : d->max_resp;
	*init = p->initiator_depth;
	if (*init == RDMA_MAX_INIT_DEPTH)
		*init = peer_init < d->max_init ? peer_init : d->max_init;
	return 0;
}

/* No parameters at all: librdmacm's (ucma_copy_conn_param_to_kern) as much
 * as the device and the request allow, retries 7 and RNR retries 7. */
static const struct rdma_conn_param lib_default = {.responder_resources = RDMA_MAX_RESP_RES,
						   .initiator_depth = RDMA_MAX_INIT_DEPTH,
						   .retry_count = 7,
						   .rnr_retry_count = 7};

static int connect_rc(struct urcm_id *id, const struct rdma_conn_param *p)
{
	struct ur_cm_req req;
	struct ur_cm_path *path = &req.primary;
	struct ur_cm_out out;
	int err;

	memset(&req, 0, sizeof(req));
	err = ip_pdata(id, req.private_data, UR_CM_REQ_PDATA, p->private_data, p->private_data_len);
	if (err)
		return err;
	req.service_id =
	    ur_cm_ip_service_id((uint16_t)id->id.ps, ntohs(rdma_get_dst_port(&id->id)));
	req.local_ca_guid = id->dev->guid;
	req.local_qpn = id->id.qp ? id->id.qp->qp_num : p->qp_num;
	err = conn_depths(id, p, 255, 255, &req.responder_resources, &req.initiator_depth);
	if (err)
		return err;
	req.remote_cm_response_timeout = URCM_RESPONSE_TIMEOUT;
	req.transport_service_type = UR_CM_TS_RC;
	req.e2e_flow_control = p->flow_control;
	req.starting_psn = id->psn;
	req.local_cm_response_timeout = URCM_RESPONSE_TIMEOUT;
	req.retry_count = p->retry_count > 7 ? 7 : p->retry_count;
	req.pkey = 0xffff;
	req.path_mtu = id->dev->mtu;
	req.rnr_retry_count = p->rnr_retry_count > 7 ? 7 : p->rnr_retry_count;
	req.max_cm_retries = URCM_MAX_CM_RETRIES;
	req.srq = id->id.qp ? id->id.qp->srq != NULL : p->srq;
	path->local_lid = path->remote_lid = 0xffff;
	memcpy(path->local_gid, id->id.route.addr.addr.ibaddr.sgid.raw, 16);
	memcpy(path->remote_gid, id->id.route.addr.addr.ibaddr.dgid.raw, 16);
	path->flow_label = urcm_random() & 0xfffff;
	path->packet_rate = 7;
	path->traffic_class = id->tos;
	path->hop_limit = 64;
	path->local_ack_timeout = URCM_PACKET_LIFETIME + 1; /* as Linux's CM puts it */
	endpoint_start(id);
	err = ur_cm_connect(&id->cm, urcm_now(), &req, &out);
	if (err)
		return -err;
	id->state = URCM_CONNECT;
	urcm_out(id, &out);
	return 0;
}

static int connect_ud(struct urcm_id *id, const struct rdma_conn_param *p)
{
	struct ur_cm_sidr_req req;
	struct ur_cm_out out;
	int err;

	memset(&req, 0, sizeof(req));
	err = ip_pdata(id, req.private_data, UR_CM_SIDR_REQ_PDATA, p ? p->private_data : NULL,
		       p ? p->private_data_len : 0);
	if (err)
		return err;
	req.pkey = 0xffff;
	req.service_id =
	    ur_cm_ip_service_id((uint16_t)id->id.ps, ntohs(rdma_get_dst_port(&id->id)));
	endpoint_start(id);
	err = ur_cm_sidr_request(&id->cm, urcm_now(), &req, URCM_RESPONSE_TIMEOUT,
				 URCM_MAX_CM_RETRIES, &out);
	if (err)
		return -err;
	id->state = URCM_CONNECT;
	urcm_out(id, &out);
	return 0;
}

API int rdma_connect(struct rdma_cm_id *cid, struct rdma_conn_param *param)
{
	struct urcm_id *id = to_urcm(cid);
	int err;

	pthread_mutex_lock(&urcm_lock);
	if (id->state != URCM_ROUTE_RESOLVED) {
		err = EINVAL;
	} else {
		err = -urcm_gsi_start(id->dev);
		if (!err)
			err = cid->ps == RDMA_PS_UDP || cid->ps == RDMA_PS_IPOIB
				  ? connect_ud(id, param)
				  : connect_rc(id, param ? param : &lib_default);
	}
	pthread_mutex_unlock(&urcm_lock);
	urcm_kick();
	if (err)
		uroce_log(NULL, 1, "rdma_connect: %s", strerror(err));
	return err ? urcm_fail(err) : urcm_sync_wait(id, RDMA_CM_EVENT_ESTABLISHED);
}

static int accept_rc(struct urcm_id *id, const struct rdma_conn_param *p)
{
	const struct ur_cm_req *req = &id->cm.rx.req;
	struct ur_cm_qp_attr qa;
	struct ur_cm_rep rep;
	struct ur_cm_out out;
	int err;

	if (p->private_data_len > UR_CM_REP_PDATA)
		return EINVAL;
	memset(&rep, 0, sizeof(rep));
	rep.local_qpn = id->id.qp ? id->id.qp->qp_num : p->qp_num;
	rep.starting_psn = id->psn;
	/* the request's initiator depth is what we may answer with resources */
	err = conn_depths(id, p, req->initiator_depth, req->responder_resources,
			  &rep.responder_resources, &rep.initiator_depth);
	if (err)
		return err;
	rep.target_ack_delay = 15; /* query_device's local_ca_ack_delay */
	rep.e2e_flow_control = p->flow_control;
	rep.rnr_retry_count = p->rnr_retry_count > 7 ? 7 : p->rnr_retry_count;
	rep.srq = id->id.qp ? id->id.qp->srq != NULL : p->srq;
	rep.local_ca_guid = id->dev->guid;
	if (p->private_data_len)
		memcpy(rep.private_data, p->private_data, p->private_data_len);
	ur_cm_qp_attr_passive(req, &rep, &qa);
	err = urcm_qp_connect(id, &qa);
	if (err)
		return err;
	err = ur_cm_accept(&id->cm, urcm_now(), &rep, &out);
	if (err)
		return -err;
	id->state = URCM_ACCEPTED;
	urcm_out(id, &out);
	return 0;
}

static int accept_ud(struct urcm_id *id, const struct rdma_conn_param *p)
{
	struct ur_cm_sidr_rep rep;
	struct ur_cm_out out;
	int err;

	memset(&rep, 0, sizeof(rep));
	rep.status = UR_CM_SIDR_SUCCESS;
	rep.qpn = id->id.qp ? id->id.qp->qp_num : p ? p->qp_num : 0;
	rep.qkey = URCM_UDP_QKEY;
	rep.service_id = id->cm.rx.sidr_req.service_id;
	if (p && p->private_data_len > UR_CM_SIDR_REP_PDATA)
		return EINVAL;
	if (p && p->private_data_len)
		memcpy(rep.private_data, p->private_data, p->private_data_len);
	err = ur_cm_sidr_reply(&id->cm, urcm_now(), &rep, &out);
	if (err)
		return -err;
	id->state = URCM_CONNECTED;
	urcm_out(id, &out);
	return 0;
}

API int rdma_accept(struct rdma_cm_id *cid, struct rdma_conn_param *param)
{
	struct urcm_id *id = to_urcm(cid);
	int err;

	pthread_mutex_lock(&urcm_lock);
	/* the QP's move to RTR must not wait for ARP/ND under the lock: the
	 * peer's MAC first, then the id's state again (a REJ or a timeout may
	 * have come meanwhile) */
	if (id->state == URCM_REQ_RCVD && id->cm.state != UR_CM_SIDR_REQ_RCVD)
		(void)urcm_neigh_unlocked(id->dev, &cid->route.addr.addr.ibaddr.dgid);
	if (id->state != URCM_REQ_RCVD)
		err = EINVAL;
	else if (id->cm.state == UR_CM_SIDR_REQ_RCVD)
		err = accept_ud(id, param);
	else
		err = accept_rc(id, param ? param : &lib_default);
	pthread_mutex_unlock(&urcm_lock);
	urcm_kick();
	if (err)
		uroce_log(NULL, 1, "rdma_accept: %s", strerror(err));
	if (err)
		return urcm_fail(err);
	/* a UD reply is all there is; an RC one waits for the RTU */
	return cid->qp_type == IBV_QPT_UD ? 0 : urcm_sync_wait(id, RDMA_CM_EVENT_ESTABLISHED);
}

API int rdma_reject(struct rdma_cm_id *cid, const void *pdata, uint8_t len)
{
	struct urcm_id *id = to_urcm(cid);
	struct ur_cm_out out;
	int err;

	pthread_mutex_lock(&urcm_lock);
	if (id->state != URCM_REQ_RCVD) {
		err = EINVAL;
	} else if (id->cm.state == UR_CM_SIDR_REQ_RCVD) {
		struct ur_cm_sidr_rep rep = {.status = UR_CM_SIDR_REJECT,
					     .service_id = id->cm.rx.sidr_req.service_id};

		err = -ur_cm_sidr_reply(&id->cm, urcm_now(), &rep, &out);
	} else {
		err = -ur_cm_reject(&id->cm, urcm_now(), UR_CM_REJ_CONSUMER_DEFINED, pdata, len,
				    &out);
	}
	if (!err) {
		id->state = URCM_DISCONNECTED;
		urcm_out(id, &out);
	}
	pthread_mutex_unlock(&urcm_lock);
	return err ? urcm_fail(err) : 0;
}

API int rdma_disconnect(struct rdma_cm_id *cid)
{
	struct urcm_id *id = to_urcm(cid);
	struct ur_cm_out out;
	int err = 0;

	pthread_mutex_lock(&urcm_lock);
	urcm_qp_to_error(id);
	if (id->cm_live && (id->cm.state == UR_CM_ESTABLISHED || id->cm.state == UR_CM_DREQ_RCVD ||
			    id->cm.state == UR_CM_REP_SENT || id->cm.state == UR_CM_MRA_REP_RCVD)) {
		if (id->cm.state != UR_CM_ESTABLISHED && id->cm.state != UR_CM_DREQ_RCVD)
			ur_cm_comm_established(&id->cm, urcm_now(), &out);
		err = -ur_cm_disconnect(&id->cm, urcm_now(), &out);
		if (!err)
			urcm_out(id, &out);
		urcm_flush(id->dev);
	} else if (!id->cm_live || id->state != URCM_DISCONNECTED) {
		err = id->state == URCM_CONNECTED ? 0 : EINVAL;
	}
	pthread_mutex_unlock(&urcm_lock);
	urcm_kick();
	return err ? urcm_fail(err) : 0;
}

/* The program moved its QP itself after CONNECT_RESPONSE: the RTU goes, no event (as the kernel's).
 */
API int rdma_establish(struct rdma_cm_id *cid)
{
	struct urcm_id *id = to_urcm(cid);
	struct ur_cm_out out;
	int err;

	pthread_mutex_lock(&urcm_lock);
	err = -ur_cm_establish(&id->cm, urcm_now(), &out);
	if (!err) {
		if (out.send)
			urcm_send(id->dev, id->ah, out.send);
		id->state = URCM_CONNECTED;
	}
	pthread_mutex_unlock(&urcm_lock);
	return err ? urcm_fail(err) : 0;
}

API int rdma_notify(struct rdma_cm_id *cid, enum ibv_event_type event)
{
	struct urcm_id *id = to_urcm(cid);
	struct ur_cm_out out;

	/* the QP took a packet before the RTU came: it counts as one (IBTA 12.9) */
	pthread_mutex_lock(&urcm_lock);
	if (event == IBV_EVENT_COMM_EST && id->cm_live && id->cm.state == UR_CM_REP_SENT &&
	    !ur_cm_comm_established(&id->cm, urcm_now(), &out))
		urcm_out(id, &out);
	pthread_mutex_unlock(&urcm_lock);
	return 0;
}

/*
 * The attributes that take a QP the program moves itself (UCX's, or one
 * without rdma_create_qp) to qp_attr->qp_state, as the kernel's
 * rdma_init_qp_attr gives them: INIT from the port, RTR and RTS from the
 * REQ and the REP (a passive id's before rdma_accept: with the REP it will
 * send, from the REQ's depths).
 */
API int rdma_init_qp_attr(struct rdma_cm_id *cid, struct ibv_qp_attr *a, int *mask)
{
	struct urcm_id *id = to_urcm(cid);
	struct ur_cm_qp_attr qa;
	struct ur_cm_rep rep;
	enum ibv_qp_state want = a->qp_state;
	int err = 0;

	memset(a, 0, sizeof(*a));
	a->qp_state = want;
	pthread_mutex_lock(&urcm_lock);
	if (want == IBV_QPS_INIT) {
		a->port_num = 1;
		if (cid->qp_type == IBV_QPT_UD) {
			a->qkey = URCM_UDP_QKEY;
			*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
		} else {
			a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
					     IBV_ACCESS_REMOTE_ATOMIC;
			*mask =
			    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
		}
	} else if ((want != IBV_QPS_RTR && want != IBV_QPS_RTS) || !id->cm_live) {
		err = EINVAL;
	} else if (id->passive && id->cm.rx.hdr.attr_id == UR_CM_ATTR_REQ) {
		const struct ur_cm_req *req = &id->cm.rx.req;

		memset(&rep, 0, sizeof(rep));
		rep.starting_psn = id->psn;
		rep.responder_resources = req->initiator_depth;
		rep.initiator_depth = req->responder_resources;
		rep.rnr_retry_count = req->rnr_retry_count;
		ur_cm_qp_attr_passive(req, &rep, &qa);
	} else if (!id->passive && id->cm.rx.hdr.attr_id == UR_CM_ATTR_REP) {
		ur_cm_qp_attr_active(&id->cm.tx.req, &id->cm.rx.rep, URCM_PACKET_LIFETIME, &qa);
	} else {
		err = EINVAL;
	}
	pthread_mutex_unlock(&urcm_lock);
	if (err)
		return urcm_fail(err);
	if (want == IBV_QPS_RTR) {
		a->path_mtu = (enum ibv_mtu)qa.path_mtu;
		a->dest_qp_num = qa.dest_qpn;
		a->rq_psn = qa.rq_psn;
		a->max_dest_rd_atomic = qa.max_dest_rd_atomic;
		a->min_rnr_timer = qa.min_rnr_timer;
		a->ah_attr.is_global = 1;
		a->ah_attr.port_num = 1;
		a->ah_attr.grh.dgid = cid->route.addr.addr.ibaddr.dgid;
		a->ah_attr.grh.sgid_index = (uint8_t)id->sgid_index;
		a->ah_attr.grh.hop_limit = 64;
		a->ah_attr.grh.traffic_class = id->tos;
		*mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	} else if (want == IBV_QPS_RTS) {
		a->sq_psn = qa.sq_psn;
		a->timeout = id->ack_timeout ? id->ack_timeout : qa.timeout;
		a->retry_cnt = qa.retry_cnt;
		a->rnr_retry = qa.rnr_retry;
		a->max_rd_atomic = qa.max_rd_atomic;
		*mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	}
	return 0;
}
