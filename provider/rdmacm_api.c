/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * librdmacm's API for uroce devices (rdmacm.h). An event channel is a pipe
 * with a byte per queued event, so poll(), blocking reads and O_NONBLOCK
 * behave as on the kernel's channel; an id embeds the public rdma_cm_id
 * that programs read; connected ids drive transport/cm.c's endpoint, and
 * the QP moves through INIT, RTR and RTS as the kernel's rdma_cm moves it.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cm_qp_attr.h"
#include "rdmacm.h"
#include "uroce.h"

#define API __attribute__((visibility("default")))

static struct urcm_id *ids;

struct urcm_id *urcm_ids(void)
{
	return ids;
}

static struct urcm_id *to_urcm(struct rdma_cm_id *id)
{
	return to_type(id, struct urcm_id, id);
}

static struct urcm_channel *to_uchan(struct rdma_event_channel *ch)
{
	return to_type(ch, struct urcm_channel, ch);
}

static int fail(int err)
{
	errno = err;
	return -1;
}

/* ---- event channels and events ---- */

API struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct urcm_channel *c = calloc(1, sizeof(*c));
	int p[2];

	if (!c)
		return NULL;
	if (pipe2(p, O_CLOEXEC)) {
		free(c);
		return NULL;
	}
	c->ch.fd = p[0];
	c->wr_fd = p[1];
	c->tail = &c->head;
	return &c->ch;
}

API void rdma_destroy_event_channel(struct rdma_event_channel *ch)
{
	struct urcm_channel *c = to_uchan(ch);

	pthread_mutex_lock(&urcm_lock);
	while (c->head) {
		struct urcm_event *e = c->head;

		c->head = e->next;
		free(e);
	}
	pthread_mutex_unlock(&urcm_lock);
	close(c->ch.fd);
	close(c->wr_fd);
	free(c);
}

struct urcm_event *urcm_event(struct urcm_id *id, enum rdma_cm_event_type type, int status)
{
	struct urcm_id *to = id->listener && type == RDMA_CM_EVENT_CONNECT_REQUEST ? id->listener : id;
	struct urcm_channel *c;
	struct urcm_event *e;
	char one = 1;

	if (!to->id.channel && !to->sync)
		return NULL; /* no channel yet (a passive id before rdma_get_request) */
	c = to_uchan(to->id.channel ? to->id.channel : to->sync);
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->ev.id = &id->id;
	e->ev.listen_id = to != id ? &to->id : NULL;
	e->ev.event = type;
	e->ev.status = status;
	*c->tail = e;
	c->tail = &e->next;
	if (write(c->wr_fd, &one, 1) != 1)
		uroce_log(NULL, 0, "rdma_cm: event lost: %s", strerror(errno));
	uroce_log(NULL, 1, "rdma_cm: event %d, status %d", type, status);
	return e;
}

API int rdma_get_cm_event(struct rdma_event_channel *ch, struct rdma_cm_event **event)
{
	struct urcm_channel *c = to_uchan(ch);
	struct urcm_event *e;
	char byte;
	ssize_t n;

	if (!event)
		return fail(EINVAL);
	/* one byte per event: blocks, or EAGAIN on an O_NONBLOCK channel, as the kernel's */
	do
		n = read(ch->fd, &byte, 1);
	while (n < 0 && errno == EINTR);
	/* the channel was destroyed under a thread waiting on it (rping's
	 * event thread, at exit): the kernel's read goes on waiting, so does this */
	while (n == 0)
		pause();
	if (n != 1)
		return -1;
	pthread_mutex_lock(&urcm_lock);
	e = c->head;
	if (e) {
		c->head = e->next;
		if (!c->head)
			c->tail = &c->head;
		/* rdma_destroy_id waits for the events handed out, as librdmacm's */
		to_urcm(e->ev.id)->events_out++;
	}
	pthread_mutex_unlock(&urcm_lock);
	if (!e)
		return fail(ENODATA);
	*event = &e->ev;
	return 0;
}

API int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct urcm_event *e = to_type(event, struct urcm_event, ev);
	struct urcm_id *id = to_urcm(event->id);

	pthread_mutex_lock(&urcm_lock);
	id->events_out--;
	pthread_cond_broadcast(&id->acked);
	pthread_mutex_unlock(&urcm_lock);
	free(e);
	return 0;
}

/* ---- ids ---- */

static struct urcm_id *new_id(struct rdma_event_channel *ch, void *context,
			      enum rdma_port_space ps, enum ibv_qp_type qp_type)
{
	struct urcm_id *id = calloc(1, sizeof(*id));

	if (!id)
		return NULL;
	id->id.channel = ch;
	id->id.context = context;
	id->id.ps = ps;
	id->id.qp_type = qp_type;
	id->sgid_index = -1;
	pthread_cond_init(&id->acked, NULL);
	id->next = ids;
	ids = id;
	return id;
}

API int rdma_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **out, void *context,
		       enum rdma_port_space ps)
{
	struct urcm_id *id;

	if (!out || (ps != RDMA_PS_TCP && ps != RDMA_PS_UDP && ps != RDMA_PS_IB &&
		     ps != RDMA_PS_IPOIB))
		return fail(EINVAL);
	pthread_mutex_lock(&urcm_lock);
	id = new_id(ch, context, ps, ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB ? IBV_QPT_UD
									     : IBV_QPT_RC);
	pthread_mutex_unlock(&urcm_lock);
	if (!id)
		return fail(ENOMEM);
	*out = &id->id;
	return 0;
}

/* Take the queued events that name id off channel c (lock held); their bytes stay in the pipe. */
static void drop_events(struct urcm_channel *c, struct urcm_id *id)
{
	struct urcm_event **p = &c->head;

	while (*p) {
		struct urcm_event *e = *p;

		if (e->ev.id == &id->id) {
			*p = e->next;
			free(e);
		} else {
			p = &e->next;
		}
	}
	c->tail = p;
}

static void unlink_id(struct urcm_id *id)
{
	for (struct urcm_id **p = &ids; *p; p = &(*p)->next)
		if (*p == id) {
			*p = id->next;
			return;
		}
}

/* The QP goes to the error state: what the kernel's CM does on a disconnect or reject. */
static void qp_to_error(struct urcm_id *id)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};

	if (id->id.qp)
		ibv_modify_qp(id->id.qp, &a, IBV_QP_STATE);
}

static void out_send(struct urcm_id *id, int err, const struct ur_cm_out *out)
{
	if (!err)
		urcm_out(id, out);
}

API int rdma_destroy_id(struct rdma_cm_id *cid)
{
	struct urcm_id *id = to_urcm(cid);
	struct ur_cm_out out;

	pthread_mutex_lock(&urcm_lock);
	/* events of it not handed out go, as the kernel discards them; wait
	 * until the program acknowledged those it was given, as librdmacm does */
	if (cid->channel)
		drop_events(to_uchan(cid->channel), id);
	if (id->sync)
		drop_events(to_uchan(id->sync), id);
	if (id->listener && id->listener->id.channel)
		drop_events(to_uchan(id->listener->id.channel), id);
	while (id->events_out)
		pthread_cond_wait(&id->acked, &urcm_lock);
	/* a connection still up ends as the kernel ends it: DREQ, or DREP to one received */
	if (id->cm_live && (id->cm.state == UR_CM_ESTABLISHED || id->cm.state == UR_CM_DREQ_RCVD))
		out_send(id, ur_cm_disconnect(&id->cm, urcm_now(), &out), &out);
	else if (id->cm_live && (id->cm.state == UR_CM_REQ_RCVD || id->cm.state == UR_CM_REP_RCVD))
		out_send(id, ur_cm_reject(&id->cm, urcm_now(), UR_CM_REJ_CONSUMER_DEFINED, NULL, 0,
					  &out),
			 &out);
	id->cm_live = false;
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

	pthread_mutex_lock(&urcm_lock);
	while (id->events_out)
		pthread_cond_wait(&id->acked, &urcm_lock);
	cid->channel = ch;
	pthread_mutex_unlock(&urcm_lock);
	return 0;
}

/* ---- addresses ---- */

static socklen_t addr_len(const struct sockaddr *a)
{
	return a->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

static bool is_wildcard(const struct sockaddr *a)
{
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr == INADDR_ANY;
	return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)a)->sin6_addr);
}

static bool is_loopback(const struct sockaddr *a)
{
	if (a->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127;
	return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)a)->sin6_addr);
}

static uint16_t *port_of(struct sockaddr *a)
{
	return a->sa_family == AF_INET6 ? &((struct sockaddr_in6 *)a)->sin6_port
					: &((struct sockaddr_in *)a)->sin_port;
}

API __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return *port_of(&id->route.addr.src_addr);
}

API __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return *port_of(&id->route.addr.dst_addr);
}

/* A port nobody else of ours holds in this port space: the kernel's ephemeral range. */
static uint16_t free_port(enum rdma_port_space ps)
{
	for (;;) {
		uint16_t p = (uint16_t)(32768 + urcm_random() % 28232);
		bool used = false;

		for (struct urcm_id *i = ids; i; i = i->next)
			if (i->id.ps == ps && ntohs(rdma_get_src_port(&i->id)) == p)
				used = true;
		if (!used)
			return p;
	}
}

static void set_gids(struct urcm_id *id)
{
	if (id->dev && id->sgid_index >= 0)
		id->id.route.addr.addr.ibaddr.sgid = id->dev->gids[id->sgid_index];
	id->id.route.addr.addr.ibaddr.pkey = htons(0xffff);
	id->id.verbs = id->dev ? id->dev->verbs : NULL;
	/* as librdmacm: the device's own PD, for programs that bring none */
	id->id.pd = id->dev ? id->dev->pd : NULL;
	id->id.port_num = 1;
}

/* Lock held. */
static int bind_addr(struct urcm_id *id, const struct sockaddr *a)
{
	struct sockaddr *src = &id->id.route.addr.src_addr;

	if (a->sa_family != AF_INET && a->sa_family != AF_INET6)
		return EAFNOSUPPORT;
	memcpy(src, a, addr_len(a));
	if (is_loopback(a)) {
		/* as the kernel's rdma_cm: the first device, by its first GID of the family */
		id->dev = urcm_dev_first(a->sa_family, &id->sgid_index);
		if (!id->dev)
			return EADDRNOTAVAIL;
	} else if (!is_wildcard(a)) {
		id->dev = urcm_dev_by_addr(a, &id->sgid_index);
		if (!id->dev) {
			uroce_log(NULL, 1, "rdma_bind_addr: no uroce device has this address");
			return EADDRNOTAVAIL;
		}
	}
	if (!*port_of(src))
		*port_of(src) = htons(free_port(id->id.ps));
	else
		for (struct urcm_id *i = ids; i; i = i->next)
			if (i != id && i->id.ps == id->id.ps && i->state == URCM_LISTEN &&
			    rdma_get_src_port(&i->id) == *port_of(src) && !id->reuseaddr)
				return EADDRINUSE;
	set_gids(id);
	id->state = URCM_BOUND;
	return 0;
}

API int rdma_bind_addr(struct rdma_cm_id *cid, struct sockaddr *addr)
{
	int err;

	if (!addr)
		return fail(EINVAL);
	pthread_mutex_lock(&urcm_lock);
	err = bind_addr(to_urcm(cid), addr);
	pthread_mutex_unlock(&urcm_lock);
	return err ? fail(err) : 0;
}

/* The source address the kernel's routes give for dst: what a connect() would use. */
static int route_source(const struct sockaddr *dst, struct sockaddr_storage *src)
{
	int fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0), err = 0;
	socklen_t len = sizeof(*src);
	struct sockaddr_storage d;

	if (fd < 0)
		return errno;
	memcpy(&d, dst, addr_len(dst));
	if (!*port_of((struct sockaddr *)&d))
		*port_of((struct sockaddr *)&d) = htons(9);
	if (connect(fd, (struct sockaddr *)&d, addr_len(dst)) ||
	    getsockname(fd, (struct sockaddr *)src, &len))
		err = errno;
	close(fd);
	return err;
}

/*
 * A synchronous id (rdma_create_ep) waits for its call's outcome: `want`,
 * or the error the event's status gives. Other ids return at once.
 */
static int sync_wait(struct urcm_id *id, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;
	int status;
	enum rdma_cm_event_type got;

	if (!id->sync)
		return 0;
	if (rdma_get_cm_event(id->sync, &ev))
		return -1;
	got = ev->event;
	status = ev->status;
	rdma_ack_cm_event(ev);
	if (got == want && !status)
		return 0;
	uroce_log(NULL, 1, "rdma_cm: waited for event %d, got %d (status %d)", want, got, status);
	return fail(status < 0 ? -status : got == RDMA_CM_EVENT_REJECTED ? ECONNREFUSED : EIO);
}

struct resolve_job {
	struct urcm_id *id;
	int timeout_ms;
};

/* The peer's MAC, found the way the provider finds it (ARP/ND, up to 3 s), off the caller's thread. */
static void *resolve_thread(void *arg)
{
	struct resolve_job *job = arg;
	struct urcm_id *id = job->id;
	struct ibv_ah_attr ah = {.is_global = 1, .port_num = 1};
	struct ibv_ah *a;

	ah.grh.dgid = id->id.route.addr.addr.ibaddr.dgid;
	ah.grh.sgid_index = (uint8_t)id->sgid_index;
	ah.grh.hop_limit = 64;
	a = ibv_create_ah(id->dev->pd, &ah);
	pthread_mutex_lock(&urcm_lock);
	if (a) {
		id->ah = a;
		id->state = URCM_ADDR_RESOLVED;
		urcm_event(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	} else {
		id->state = URCM_BOUND;
		urcm_event(id, RDMA_CM_EVENT_ADDR_ERROR, -EHOSTUNREACH);
	}
	pthread_mutex_unlock(&urcm_lock);
	free(job);
	return NULL;
}

API int rdma_resolve_addr(struct rdma_cm_id *cid, struct sockaddr *src, struct sockaddr *dst,
			  int timeout_ms)
{
	struct urcm_id *id = to_urcm(cid);
	struct sockaddr_storage s;
	struct resolve_job *job;
	pthread_t t;
	int err = 0;

	if (!dst || (dst->sa_family != AF_INET && dst->sa_family != AF_INET6))
		return fail(EINVAL);
	pthread_mutex_lock(&urcm_lock);
	if (id->state == URCM_IDLE) {
		if (src) {
			err = bind_addr(id, src);
		} else {
			err = route_source(dst, &s);
			if (!err)
				err = bind_addr(id, (struct sockaddr *)&s);
		}
	} else if (id->state != URCM_BOUND) {
		err = EINVAL;
	}
	if (!err && !id->dev) { /* bound to the wildcard: the route picks the device */
		err = route_source(dst, &s);
		if (!err) {
			*port_of((struct sockaddr *)&s) = rdma_get_src_port(cid);
			err = bind_addr(id, (struct sockaddr *)&s);
		}
	}
	if (!err) {
		memcpy(&cid->route.addr.dst_addr, dst, addr_len(dst));
		union ibv_gid g;

		memset(&g, 0, sizeof(g));
		if (dst->sa_family == AF_INET) {
			g.raw[10] = g.raw[11] = 0xff;
			memcpy(&g.raw[12], &((struct sockaddr_in *)dst)->sin_addr, 4);
		} else {
			memcpy(g.raw, &((struct sockaddr_in6 *)dst)->sin6_addr, 16);
		}
		cid->route.addr.addr.ibaddr.dgid = g;
		id->state = URCM_ADDR_QUERY;
	}
	pthread_mutex_unlock(&urcm_lock);
	if (err) {
		uroce_log(NULL, 1, "rdma_resolve_addr: %s", strerror(err));
		return fail(err == EADDRNOTAVAIL ? ENODEV : err);
	}
	job = malloc(sizeof(*job));
	if (!job)
		return fail(ENOMEM);
	job->id = id;
	job->timeout_ms = timeout_ms;
	if (pthread_create(&t, NULL, resolve_thread, job)) {
		free(job);
		return fail(ENOMEM);
	}
	pthread_detach(t);
	return sync_wait(id, RDMA_CM_EVENT_ADDR_RESOLVED);
}

API int rdma_resolve_route(struct rdma_cm_id *cid, int timeout_ms)
{
	struct urcm_id *id = to_urcm(cid);
	struct ibv_sa_path_rec *p;

	(void)timeout_ms;
	pthread_mutex_lock(&urcm_lock);
	if (id->state != URCM_ADDR_RESOLVED) {
		pthread_mutex_unlock(&urcm_lock);
		return fail(EINVAL);
	}
	/* RoCE has no subnet manager: the path is the addresses and the port */
	p = calloc(1, sizeof(*p));
	if (p) {
		p->dgid = cid->route.addr.addr.ibaddr.dgid;
		p->sgid = cid->route.addr.addr.ibaddr.sgid;
		p->hop_limit = 64;
		p->traffic_class = id->tos;
		p->reversible = 1;
		p->numb_path = 1;
		p->pkey = htons(0xffff);
		p->mtu_selector = 2;
		p->mtu = id->dev->mtu;
		p->rate_selector = 2;
		p->rate = 7; /* 40 Gb/s, what query_port says */
		p->packet_life_time_selector = 2;
		p->packet_life_time = URCM_PACKET_LIFETIME;
		free(cid->route.path_rec);
		cid->route.path_rec = p;
		cid->route.num_paths = 1;
	}
	id->state = URCM_ROUTE_RESOLVED;
	urcm_event(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	pthread_mutex_unlock(&urcm_lock);
	return sync_wait(id, RDMA_CM_EVENT_ROUTE_RESOLVED);
}

API int rdma_listen(struct rdma_cm_id *cid, int backlog)
{
	struct urcm_id *id = to_urcm(cid);
	int err = 0;

	pthread_mutex_lock(&urcm_lock);
	if (id->state != URCM_BOUND) {
		err = EINVAL;
	} else if (id->dev) {
		err = -urcm_gsi_start(id->dev);
	} else {
		err = -urcm_dev_open_all();
		for (struct urcm_dev *d = urcm_devs(); d && !err; d = d->next)
			err = -urcm_gsi_start(d);
	}
	if (!err) {
		id->state = URCM_LISTEN;
		id->backlog = backlog > 0 ? backlog : 1024;
	}
	pthread_mutex_unlock(&urcm_lock);
	if (err)
		uroce_log(NULL, 1, "rdma_listen: %s", strerror(err));
	return err ? fail(err) : 0;
}

/* ---- QPs ---- */

/* INIT for a connected QP; INIT, RTR and RTS for a UD one, as librdmacm does at create. */
static int qp_init(struct urcm_id *id, struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};

	if (qp->qp_type == IBV_QPT_UD) {
		a.qkey = URCM_UDP_QKEY;
		int err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
							    IBV_QP_QKEY);

		a.qp_state = IBV_QPS_RTR;
		if (!err)
			err = ibv_modify_qp(qp, &a, IBV_QP_STATE);
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = id->psn;
		return err ? err : ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	}
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_ATOMIC;
	/* ibv_modify_qp returns the error number itself */
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					     IBV_QP_ACCESS_FLAGS);
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
		return fail(EINVAL);
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
		attr->pd = cid->pd;
	}
	if (attr->pd->context != cid->verbs)
		return fail(EINVAL);
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
		return fail(err);
	}
	id->psn = urcm_random() & 0xffffff;
	err = qp_init(id, qp);
	if (err) {
		ibv_destroy_qp(qp);
		return fail(err);
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
		return fail(EINVAL);
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

	if (cid->qp)
		ibv_destroy_qp(cid->qp);
	cid->qp = NULL;
	if (id->own_cqs) {
		free_cqs(cid);
		id->own_cqs = false;
	}
}

/* RTR and RTS with what the REQ and REP settled. */
static int qp_connect(struct urcm_id *id, const struct ur_cm_qp_attr *c)
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
	err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					    IBV_QP_MIN_RNR_TIMER);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = c->sq_psn;
	a.timeout = id->ack_timeout ? id->ack_timeout : c->timeout;
	a.retry_cnt = c->retry_cnt;
	a.rnr_retry = c->rnr_retry;
	a.max_rd_atomic = c->max_rd_atomic;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
					     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					     IBV_QP_MAX_QP_RD_ATOMIC);
}

/* ---- connections ---- */

static void conn_param_event(struct urcm_event *e, const uint8_t *pdata, size_t len)
{
	if (!e)
		return;
	memcpy(e->pdata, pdata, len);
	e->ev.param.conn.private_data = e->pdata;
	e->ev.param.conn.private_data_len = (uint8_t)len;
}

struct urcm_id *urcm_passive_id(struct urcm_id *l, struct urcm_dev *dev, const struct ibv_wc *wc,
				const struct ibv_grh *grh)
{
	struct urcm_id *id;
	union ibv_gid local;
	unsigned waiting = 0;

	for (struct urcm_id *i = ids; i; i = i->next)
		if (i->listener == l && i->state == URCM_REQ_RCVD)
			waiting++;
	if (waiting >= (unsigned)l->backlog)
		return NULL; /* answered as nobody listening would be */
	id = new_id(l->id.channel, l->id.context, l->id.ps, l->id.qp_type);
	if (!id)
		return NULL;
	id->listener = l;
	id->passive = true;
	id->dev = dev;
	id->state = URCM_REQ_RCVD;
	id->ah = ibv_create_ah_from_wc(dev->pd, (struct ibv_wc *)wc, (struct ibv_grh *)grh, 1);
	ur_cm_init(&id->cm, urcm_random() | 1, (uint64_t)urcm_random() << 32 | urcm_random(),
		   URCM_PACKET_LIFETIME);
	id->cm_live = true;
	/* the addresses come with the REQ's private data, in on_req_event() */
	urcm_grh_gids(grh, &id->id.route.addr.addr.ibaddr.dgid, &local);
	for (int i = 0; i < dev->ngids; i++)
		if (!memcmp(dev->gids[i].raw, local.raw, 16))
			id->sgid_index = i;
	set_gids(id);
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
void urcm_on_rep(struct urcm_id *id, const struct ur_cm_out *in)
{
	const struct ur_cm_rep *rep = &id->cm.rx.rep;
	struct ur_cm_qp_attr qa;
	struct ur_cm_out out;
	struct urcm_event *e;
	int err;

	(void)in;
	ur_cm_qp_attr_active(&id->cm.tx.req, rep, URCM_PACKET_LIFETIME, &qa);
	err = qp_connect(id, &qa);
	if (err) {
		uroce_log(NULL, 0, "rdma_connect: the QP did not take the REP's attributes: %s",
			  strerror(err));
		out_send(id, ur_cm_reject(&id->cm, urcm_now(), UR_CM_REJ_CONSUMER_DEFINED, NULL, 0,
					  &out),
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
		urcm_on_rep(id, out);
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
		qp_to_error(id);
		id->state = URCM_DISCONNECTED;
		e = urcm_event(id, RDMA_CM_EVENT_REJECTED, out->reason);
		if (e && id->cm.rx.hdr.attr_id == UR_CM_ATTR_REJ)
			conn_param_event(e, id->cm.rx.rej.private_data, UR_CM_REJ_PDATA);
		break;
	case UR_CM_EV_UNREACHABLE:
		qp_to_error(id);
		id->state = URCM_DISCONNECTED;
		urcm_event(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
		break;
	case UR_CM_EV_DREQ_RECEIVED: {
		struct ur_cm_out drep;

		/* answered at once, the QP in error first: a program that
		 * exits after its DISCONNECTED event would leave the peer's
		 * DREQ to its retries (the kernel's CM answers at close) */
		qp_to_error(id);
		if (!ur_cm_disconnect(&id->cm, urcm_now(), &drep) && drep.send)
			urcm_send(id->dev, id->ah, drep.send);
	}
		/* fall through */
	case UR_CM_EV_DISCONNECTED:
		qp_to_error(id);
		if (id->state != URCM_DISCONNECTED) {
			id->state = URCM_DISCONNECTED;
			urcm_event(id, RDMA_CM_EVENT_DISCONNECTED, 0);
		}
		break;
	case UR_CM_EV_TIMEWAIT_EXIT:
		id->cm_live = false;
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
	req.service_id = ur_cm_ip_service_id((uint16_t)id->id.ps, ntohs(rdma_get_dst_port(&id->id)));
	req.local_ca_guid = id->dev->guid;
	req.local_qpn = id->id.qp ? id->id.qp->qp_num : p->qp_num;
	req.responder_resources = p->responder_resources;
	req.initiator_depth = p->initiator_depth;
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
	ur_cm_init(&id->cm, urcm_random() | 1, (uint64_t)urcm_random() << 32 | urcm_random(),
		   URCM_PACKET_LIFETIME);
	id->cm_live = true;
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
	req.service_id = ur_cm_ip_service_id((uint16_t)id->id.ps, ntohs(rdma_get_dst_port(&id->id)));
	ur_cm_init(&id->cm, urcm_random() | 1, (uint64_t)urcm_random() << 32 | urcm_random(),
		   URCM_PACKET_LIFETIME);
	id->cm_live = true;
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
	struct rdma_conn_param none = {0};
	int err;

	pthread_mutex_lock(&urcm_lock);
	if (id->state != URCM_ROUTE_RESOLVED) {
		err = EINVAL;
	} else {
		err = -urcm_gsi_start(id->dev);
		if (!err)
			err = cid->ps == RDMA_PS_UDP || cid->ps == RDMA_PS_IPOIB
				  ? connect_ud(id, param)
				  : connect_rc(id, param ? param : &none);
	}
	pthread_mutex_unlock(&urcm_lock);
	urcm_kick();
	if (err)
		uroce_log(NULL, 1, "rdma_connect: %s", strerror(err));
	return err ? fail(err) : sync_wait(id, RDMA_CM_EVENT_ESTABLISHED);
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
	rep.responder_resources = p->responder_resources;
	rep.initiator_depth = p->initiator_depth;
	rep.target_ack_delay = 15; /* query_device's local_ca_ack_delay */
	rep.e2e_flow_control = p->flow_control;
	rep.rnr_retry_count = p->rnr_retry_count > 7 ? 7 : p->rnr_retry_count;
	rep.srq = id->id.qp ? id->id.qp->srq != NULL : p->srq;
	rep.local_ca_guid = id->dev->guid;
	if (p->private_data_len)
		memcpy(rep.private_data, p->private_data, p->private_data_len);
	ur_cm_qp_attr_passive(req, &rep, &qa);
	err = qp_connect(id, &qa);
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
	struct rdma_conn_param none = {0};
	int err;

	pthread_mutex_lock(&urcm_lock);
	if (id->state != URCM_REQ_RCVD)
		err = EINVAL;
	else if (id->cm.state == UR_CM_SIDR_REQ_RCVD)
		err = accept_ud(id, param);
	else
		err = accept_rc(id, param ? param : &none);
	pthread_mutex_unlock(&urcm_lock);
	urcm_kick();
	if (err)
		uroce_log(NULL, 1, "rdma_accept: %s", strerror(err));
	if (err)
		return fail(err);
	/* a UD reply is all there is; an RC one waits for the RTU */
	return cid->qp_type == IBV_QPT_UD ? 0 : sync_wait(id, RDMA_CM_EVENT_ESTABLISHED);
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
		err = -ur_cm_reject(&id->cm, urcm_now(), UR_CM_REJ_CONSUMER_DEFINED, pdata, len, &out);
	}
	if (!err) {
		id->state = URCM_DISCONNECTED;
		urcm_out(id, &out);
	}
	pthread_mutex_unlock(&urcm_lock);
	return err ? fail(err) : 0;
}

API int rdma_disconnect(struct rdma_cm_id *cid)
{
	struct urcm_id *id = to_urcm(cid);
	struct ur_cm_out out;
	int err = 0;

	pthread_mutex_lock(&urcm_lock);
	qp_to_error(id);
	if (id->cm_live &&
	    (id->cm.state == UR_CM_ESTABLISHED || id->cm.state == UR_CM_DREQ_RCVD ||
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
	return err ? fail(err) : 0;
}

API int rdma_establish(struct rdma_cm_id *cid)
{
	struct urcm_id *id = to_urcm(cid);
	struct ur_cm_out out;
	int err;

	pthread_mutex_lock(&urcm_lock);
	err = -ur_cm_establish(&id->cm, urcm_now(), &out);
	if (!err)
		urcm_out(id, &out);
	pthread_mutex_unlock(&urcm_lock);
	return err ? fail(err) : 0;
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

API int rdma_set_option(struct rdma_cm_id *cid, int level, int optname, void *optval,
			size_t optlen)
{
	struct urcm_id *id = to_urcm(cid);

	if (!optval)
		return fail(EINVAL);
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
		return fail(ENOSYS);
	return 0;
}

API int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	(void)id;
	(void)addr;
	(void)context;
	uroce_log(NULL, 1, "rdma_join_multicast: uroce has no multicast");
	return fail(EOPNOTSUPP);
}

API int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	(void)id;
	(void)addr;
	return fail(EOPNOTSUPP);
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

/* ---- names ---- */

static struct sockaddr *addr_dup(const struct sockaddr *a, socklen_t len)
{
	struct sockaddr *d = malloc(len);

	if (d)
		memcpy(d, a, len);
	return d;
}

API void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *next = res->ai_next;

		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
		res = next;
	}
}

/*
 * Names and services as getaddrinfo() reads them; RAI_PASSIVE makes the
 * address a source (to bind and listen), otherwise a destination, with the
 * hints' source, if any. RoCE needs no route record: ai_route stays empty.
 */
API int rdma_getaddrinfo(const char *node, const char *service,
			 const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	struct addrinfo ah = {.ai_socktype = SOCK_STREAM}, *ai;
	struct rdma_addrinfo *r;
	int err;

	if (!res || (!node && !service))
		return fail(EINVAL);
	if (hints) {
		ah.ai_family = hints->ai_family;
		if (hints->ai_flags & RAI_PASSIVE)
			ah.ai_flags |= AI_PASSIVE;
		if (hints->ai_flags & RAI_NUMERICHOST)
			ah.ai_flags |= AI_NUMERICHOST;
		if (hints->ai_port_space == RDMA_PS_UDP || hints->ai_qp_type == IBV_QPT_UD)
			ah.ai_socktype = SOCK_DGRAM;
	}
	err = getaddrinfo(node, service, &ah, &ai);
	if (err)
		return err; /* an EAI_* code, as librdmacm returns it */
	r = calloc(1, sizeof(*r));
	if (!r) {
		freeaddrinfo(ai);
		return fail(ENOMEM);
	}
	r->ai_flags = hints ? hints->ai_flags : 0;
	r->ai_family = ai->ai_family;
	r->ai_qp_type = hints && hints->ai_qp_type ? hints->ai_qp_type : IBV_QPT_RC;
	r->ai_port_space = hints && hints->ai_port_space
				   ? hints->ai_port_space
				   : r->ai_qp_type == IBV_QPT_UD ? RDMA_PS_UDP : RDMA_PS_TCP;
	if (r->ai_flags & RAI_PASSIVE) {
		r->ai_src_len = ai->ai_addrlen;
		r->ai_src_addr = addr_dup(ai->ai_addr, ai->ai_addrlen);
	} else {
		r->ai_dst_len = ai->ai_addrlen;
		r->ai_dst_addr = addr_dup(ai->ai_addr, ai->ai_addrlen);
		if (hints && hints->ai_src_addr && hints->ai_src_len) {
			r->ai_src_len = hints->ai_src_len;
			r->ai_src_addr = addr_dup(hints->ai_src_addr, hints->ai_src_len);
		}
	}
	freeaddrinfo(ai);
	if ((r->ai_flags & RAI_PASSIVE) ? !r->ai_src_addr : !r->ai_dst_addr) {
		rdma_freeaddrinfo(r);
		return fail(ENOMEM);
	}
	*res = r;
	return 0;
}

/* ---- synchronous endpoints ---- */

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
		return fail(EINVAL);
	if (rdma_create_id(NULL, &cid, NULL, (enum rdma_port_space)res->ai_port_space))
		return -1;
	id = to_urcm(cid);
	id->sync = rdma_create_event_channel();
	if (!id->sync) {
		rdma_destroy_id(cid);
		return fail(ENOMEM);
	}
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
			ret = id->ep_attr ? 0 : fail(ENOMEM);
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
		return fail(err);
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

	if (!l->sync || !out)
		return fail(EINVAL);
	for (;;) {
		if (rdma_get_cm_event(l->sync, &ev))
			return -1;
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST && !ev->status)
			break;
		rdma_ack_cm_event(ev);
	}
	id = to_urcm(ev->id);
	rdma_ack_cm_event(ev);
	id->sync = rdma_create_event_channel();
	if (!id->sync)
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
