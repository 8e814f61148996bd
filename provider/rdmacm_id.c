/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rdma_cm ids (rdmacm.h): each embeds the public rdma_cm_id programs read;
 * the process keeps them in one list, under urcm_lock. Destroying one ends
 * its connection as the kernel's CM would.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rdmacm.h"
#include "uroce.h"

static struct urcm_id *ids;

struct urcm_id *urcm_ids(void)
{
	return ids;
}

struct urcm_id *urcm_new_id(struct rdma_event_channel *ch, void *context, enum rdma_port_space ps,
			    enum ibv_qp_type qp_type)
{
	struct urcm_id *id = calloc(1, sizeof(*id));

	if (!id)
		return NULL;
	id->id.channel = ch;
	id->id.context = context;
	id->id.ps = ps;
	id->id.qp_type = qp_type;
	id->sgid_index = -1;
	/* where a QP of this id starts sending: in the REQ or REP, and what
	 * rdma_init_qp_attr gives for a QP the program moves itself */
	id->psn = urcm_random() & 0xffffff;
	pthread_cond_init(&id->acked, NULL);
	id->next = ids;
	ids = id;
	return id;
}

API int rdma_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **out, void *context,
		       enum rdma_port_space ps)
{
	struct urcm_id *id;

	if (!out ||
	    (ps != RDMA_PS_TCP && ps != RDMA_PS_UDP && ps != RDMA_PS_IB && ps != RDMA_PS_IPOIB))
		return urcm_fail(EINVAL);
	pthread_mutex_lock(&urcm_lock);
	id = urcm_new_id(ch, context, ps,
			 ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB ? IBV_QPT_UD : IBV_QPT_RC);
	pthread_mutex_unlock(&urcm_lock);
	if (!id)
		return urcm_fail(ENOMEM);
	/* no channel: a synchronous id, whose calls wait for their outcome,
	 * as librdmacm makes it (libfabric's verbs provider relies on it) */
	if (!ch && urcm_make_sync(id)) {
		rdma_destroy_id(&id->id);
		return urcm_fail(ENOMEM);
	}
	*out = &id->id;
	return 0;
}

static void unlink_id(struct urcm_id *id)
{
	for (struct urcm_id **p = &ids; *p; p = &(*p)->next)
		if (*p == id) {
			*p = id->next;
			return;
		}
}

/* The id's events not handed out, wherever they wait (lock held). */
static void drop_events(struct urcm_id *id)
{
	if (id->id.channel)
		urcm_move_events(to_uchan(id->id.channel), id, NULL);
	if (id->sync && id->sync != id->id.channel)
		urcm_move_events(to_uchan(id->sync), id, NULL);
	if (id->listener && id->listener->id.channel)
		urcm_move_events(to_uchan(id->listener->id.channel), id, NULL);
}

API int rdma_destroy_id(struct rdma_cm_id *cid)
{
	struct urcm_id *id = to_urcm(cid);
	struct ur_cm_out out;

	urcm_sync_release(id);
	pthread_mutex_lock(&urcm_lock);
	/* events of it not handed out go, as the kernel discards them; wait
	 * until the program acknowledged those it was given, as librdmacm does */
	drop_events(id);
	/* and for a resolution in flight (its thread writes to the id) */
	while (id->events_out || id->state == URCM_ADDR_QUERY)
		pthread_cond_wait(&id->acked, &urcm_lock);
	/* a connection still up ends as the kernel ends it: DREQ, or DREP to one received */
	if (id->cm_live && (id->cm.state == UR_CM_ESTABLISHED || id->cm.state == UR_CM_DREQ_RCVD))
		out_send(id, ur_cm_disconnect(&id->cm, urcm_now(), &out), &out);
	else if (id->cm_live && (id->cm.state == UR_CM_REQ_RCVD || id->cm.state == UR_CM_REP_RCVD))
		out_send(
		    id,
		    ur_cm_reject(&id->cm, urcm_now(), UR_CM_REJ_CONSUMER_DEFINED, NULL, 0, &out),
		    &out);
	id->cm_live = false;
	/* and what came while we waited (a TimeWait's end, a DREQ) */
	drop_events(id);
	urcm_route_unlisten(id);
	unlink_id(id);
	/* its passive ids outlive it (perftest destroys the listener first) */
	for (struct urcm_id *i = ids; i; i = i->next)
		if (i->listener == id)
			i->listener = NULL;
	urcm_flush(id->dev);
	pthread_mutex_unlock(&urcm_lock);
	if (id->ah)
		ibv_destroy_ah(id->ah);
	if (id->sync)
		rdma_destroy_event_channel(id->sync);
	free(id->ep_attr);
	free(id->id.route.path_rec);
	pthread_cond_destroy(&id->acked);
	free(id);
	return 0;
}

API int rdma_migrate_id(struct rdma_cm_id *cid, struct rdma_event_channel *ch)
{
	struct urcm_id *id = to_urcm(cid);
	struct rdma_event_channel *old_sync = id->sync, *to = ch;

	if (id->lib.sync && !ch)
		return urcm_fail(EINVAL);
	if (ch && ch == cid->channel)
		return 0; /* there already (libfabric's fi_ep_bind of a connection request) */
	/* to no channel: synchronous from now on, on a channel of its own */
	if (!to) {
		to = rdma_create_event_channel();
		if (!to)
			return -1;
	}
	/* a synchronous id's held event is one the program has */
	urcm_sync_release(id);
	pthread_mutex_lock(&urcm_lock);
	while (id->events_out)
		pthread_cond_wait(&id->acked, &urcm_lock);
	/* what waits on the old channel moves with the id, as the kernel's do */
	if (cid->channel)
		urcm_move_events(to_uchan(cid->channel), id, to_uchan(to));
	cid->channel = to;
	id->sync = ch ? NULL : to;
	id->lib.sync = !ch;
	pthread_mutex_unlock(&urcm_lock);
	if (old_sync)
		rdma_destroy_event_channel(old_sync);
	return 0;
}

API __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return *port_of(&id->route.addr.src_addr);
}

API __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return *port_of(&id->route.addr.dst_addr);
}

API int rdma_set_option(struct rdma_cm_id *cid, int level, int optname, void *optval, size_t optlen)
{
	struct urcm_id *id = to_urcm(cid);

	if (!optval)
		return urcm_fail(EINVAL);
	if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_TOS && optlen == sizeof(uint8_t))
		id->tos = *(uint8_t *)optval;
	else if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_REUSEADDR &&
		 optlen == sizeof(int))
		id->reuseaddr = *(int *)optval;
	else if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_AFONLY &&
		 optlen == sizeof(int))
		id->afonly = *(int *)optval;
	else if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_ACK_TIMEOUT &&
		 optlen == sizeof(uint8_t))
		id->ack_timeout = *(uint8_t *)optval;
	else
		return urcm_fail(ENOSYS);
	return 0;
}

API int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	(void)id;
	(void)addr;
	(void)context;
	uroce_log(NULL, 1, "rdma_join_multicast: uroce has no multicast");
	return urcm_fail(EOPNOTSUPP);
}

API int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	(void)id;
	(void)addr;
	return urcm_fail(EOPNOTSUPP);
}

API struct ibv_context **rdma_get_devices(int *num)
{
	struct ibv_context **list;
	int n = 0, i = 0;

	pthread_mutex_lock(&urcm_lock);
	urcm_dev_open_all();
	for (struct urcm_dev *d = urcm_devs(); d; d = d->next)
		n++;
	list = calloc((size_t)n + 1, sizeof(*list));
	for (struct urcm_dev *d = urcm_devs(); list && d; d = d->next)
		list[i++] = d->verbs;
	pthread_mutex_unlock(&urcm_lock);
	if (num)
		*num = list ? n : 0;
	return list;
}

API void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}
