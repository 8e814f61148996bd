/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Synchronous rdma_cm endpoints (rdmacm.h): rdma_create_ep's ids wait in
 * each call for its outcome, on an event channel of their own, as
 * librdmacm's do; rdma_get_request hands out the next connection request
 * with a QP made as the listener's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>

#include "rdmacm.h"
#include "uroce.h"

/* The errno of a failed synchronous call, as librdmacm's ucma_complete gives it. */
static int event_errno(const struct rdma_cm_event *ev)
{
	if (ev->event == RDMA_CM_EVENT_REJECTED)
		return ECONNREFUSED;
	return ev->status < 0 ? -ev->status : ev->status;
}

/*
 * A synchronous id (made without a channel) waits in each call for its
 * outcome, as librdmacm's ucma_complete: the event is left in id.event
 * (rsockets reads the peer's private data there) until the next call or
 * the id's end; an error status becomes the call's errno. `want` only
 * names the event for the log. An O_NONBLOCK channel gives EAGAIN, and
 * librdmacm's ucma_complete (rsockets) picks the event up later.
 */
int urcm_sync_wait(struct urcm_id *id, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;

	if (!id->sync || !id->lib.sync)
		return 0;
	urcm_sync_release(id);
	if (rdma_get_cm_event(id->id.channel, &ev))
		return -1;
	id->id.event = ev;
	if (!ev->status && ev->event != RDMA_CM_EVENT_REJECTED)
		return 0;
	uroce_log(NULL, 1, "rdma_cm: waited for event %d, got %d (status %d)", want, ev->event,
		  ev->status);
	return urcm_fail(event_errno(ev));
}

int urcm_make_sync(struct urcm_id *id)
{
	id->sync = rdma_create_event_channel();
	if (!id->sync)
		return -1;
	/* programs read it (rsockets polls id->channel->fd) */
	id->id.channel = id->sync;
	id->lib.sync = 1;
	return 0;
}

void urcm_sync_release(struct urcm_id *id)
{
	if (id->id.event) {
		rdma_ack_cm_event(id->id.event);
		id->id.event = NULL;
	}
}

/*
 * An id whose calls wait for their outcome, with its QP: resolved and
 * routed to res's destination, or bound to res's source (RAI_PASSIVE) and
 * ready for rdma_listen and rdma_get_request.
 */
API int rdma_create_ep(struct rdma_cm_id **out, struct rdma_addrinfo *res, struct ibv_pd *pd,
		       struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cid;
	struct urcm_id *id;
	int ret;

	if (!out || !res)
		return urcm_fail(EINVAL);
	if (rdma_create_id(NULL, &cid, NULL, (enum rdma_port_space)res->ai_port_space))
		return -1;
	id = to_urcm(cid); /* synchronous: made without a channel */
	/* as librdmacm: the QP is of the type the address info says */
	if (qp_init_attr)
		qp_init_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;
	if (res->ai_flags & RAI_PASSIVE) {
		ret = rdma_bind_addr(cid, res->ai_src_addr);
		if (!ret && qp_init_attr) {
			id->ep_attr = malloc(sizeof(*qp_init_attr));
			if (id->ep_attr)
				*id->ep_attr = *qp_init_attr;
			id->ep_pd = pd;
			ret = id->ep_attr ? 0 : urcm_fail(ENOMEM);
		}
	} else {
		ret = rdma_resolve_addr(cid, res->ai_src_addr, res->ai_dst_addr, 2000);
		if (!ret)
			ret = rdma_resolve_route(cid, 2000);
		if (!ret && qp_init_attr)
			ret = rdma_create_qp(cid, pd, qp_init_attr);
	}
	if (ret) {
		int err = errno;

		rdma_destroy_ep(cid);
		return urcm_fail(err);
	}
	*out = cid;
	return 0;
}

API void rdma_destroy_ep(struct rdma_cm_id *cid)
{
	if (cid->qp)
		rdma_destroy_qp(cid);
	rdma_destroy_id(cid);
}

/* The next connection request to a synchronous listener, with a QP made as the listener's. */
API int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **out)
{
	struct urcm_id *l = to_urcm(listen), *id;
	struct rdma_cm_event *ev;
	struct ibv_qp_init_attr attr;

	if (!l->sync || !l->lib.sync || !out)
		return urcm_fail(EINVAL);
	urcm_sync_release(l);
	if (rdma_get_cm_event(listen->channel, &ev))
		return -1;
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST || ev->status) {
		/* kept for the program to read, as librdmacm keeps it */
		listen->event = ev;
		return urcm_fail(ev->status || ev->event == RDMA_CM_EVENT_REJECTED ? event_errno(ev)
										   : EINVAL);
	}
	id = to_urcm(ev->id);
	/* the request stays with the new id (its private data), as librdmacm's */
	id->id.event = ev;
	if (!id->sync && urcm_make_sync(id))
		goto err;
	if (l->ep_attr) {
		attr = *l->ep_attr;
		if (rdma_create_qp(&id->id, l->ep_pd, &attr))
			goto err;
	}
	*out = &id->id;
	return 0;
err:
	rdma_reject(&id->id, NULL, 0);
	rdma_destroy_ep(&id->id);
	return -1;
}
