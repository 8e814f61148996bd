/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rdma_cm addressing (rdmacm.h): an IP address names the uroce device
 * whose GID table holds it; a destination resolves through the kernel's
 * route (its source address) and uroce's neighbour table (its MAC); RoCE
 * has no subnet manager, so the route is the addresses and the port.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdmacm.h"
#include "uroce.h"

/* A port nobody else of ours holds in this port space: the kernel's ephemeral range. */
static uint16_t free_port(enum rdma_port_space ps)
{
	for (;;) {
		uint16_t p = (uint16_t)(32768 + urcm_random() % 28232);
		bool used = false;

		for (struct urcm_id *i = urcm_ids(); i; i = i->next)
			if (i->id.ps == ps && ntohs(rdma_get_src_port(&i->id)) == p)
				used = true;
		if (!used)
			return p;
	}
}

void urcm_set_gids(struct urcm_id *id)
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
/*
 * Bind id to a: a device's address, the wildcard (no device yet), or
 * loopback: as the kernel's rdma_cm, an rdma_bind_addr() to it takes no
 * device (libfabric's verbs provider then asks for the devices' own
 * addresses), an address resolution from it the first device, by its
 * first GID of the family (`resolving`).
 */
static int bind_addr(struct urcm_id *id, const struct sockaddr *a, bool resolving)
{
	struct sockaddr *src = &id->id.route.addr.src_addr;

	if (a->sa_family != AF_INET && a->sa_family != AF_INET6)
		return EAFNOSUPPORT;
	memcpy(src, a, addr_len(a));
	if (is_loopback(a)) {
		id->dev = resolving ? urcm_dev_first(a->sa_family, &id->sgid_index) : NULL;
		if (resolving && !id->dev)
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
		for (struct urcm_id *i = urcm_ids(); i; i = i->next)
			if (i != id && i->id.ps == id->id.ps && i->state == URCM_LISTEN &&
			    rdma_get_src_port(&i->id) == *port_of(src) && !id->reuseaddr)
				return EADDRINUSE;
	urcm_set_gids(id);
	id->state = URCM_BOUND;
	return 0;
}

API int rdma_bind_addr(struct rdma_cm_id *cid, struct sockaddr *addr)
{
	int err;

	if (!addr)
		return urcm_fail(EINVAL);
	pthread_mutex_lock(&urcm_lock);
	err = bind_addr(to_urcm(cid), addr, false);
	pthread_mutex_unlock(&urcm_lock);
	return err ? urcm_fail(err) : 0;
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

bool urcm_neigh_unlocked(struct urcm_dev *dev, const union ibv_gid *gid)
{
	union ibv_gid g = *gid; /* gid may be an id's: not read without the lock */

	if (!uroce_neigh_would_wait(dev->verbs, g.raw))
		return false;
	/* dev stays: devices are never freed; nothing else here is kept */
	pthread_mutex_unlock(&urcm_lock);
	(void)uroce_neigh_resolve(dev->verbs, g.raw); /* the AH's own call says if it failed */
	pthread_mutex_lock(&urcm_lock);
	return true;
}

/* The peer's MAC, found the way the provider finds it (ARP/ND, up to 3 s), off the caller's thread.
 */
static void *resolve_thread(void *arg)
{
	struct urcm_id *id = arg;
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
	pthread_cond_broadcast(&id->acked); /* a destroy may wait for this thread */
	pthread_mutex_unlock(&urcm_lock);
	return NULL;
}

const char *urcm_addr_str(const struct sockaddr *a, char *buf, size_t len)
{
	const void *ip = a->sa_family == AF_INET6
			     ? (const void *)&((const struct sockaddr_in6 *)a)->sin6_addr
			     : (const void *)&((const struct sockaddr_in *)a)->sin_addr;

	if ((a->sa_family != AF_INET && a->sa_family != AF_INET6) ||
	    !inet_ntop(a->sa_family, ip, buf, (socklen_t)len))
		snprintf(buf, len, "(family %u)", a->sa_family);
	return buf;
}

API int rdma_resolve_addr(struct rdma_cm_id *cid, struct sockaddr *src, struct sockaddr *dst,
			  int timeout_ms)
{
	struct urcm_id *id = to_urcm(cid);
	char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];
	struct sockaddr_storage s;
	pthread_t t;
	int err = 0;

	if (!dst || (dst->sa_family != AF_INET && dst->sa_family != AF_INET6))
		return urcm_fail(EINVAL);
	pthread_mutex_lock(&urcm_lock);
	if (id->state == URCM_IDLE) {
		if (src) {
			err = bind_addr(id, src, true);
		} else {
			err = route_source(dst, &s);
			if (!err)
				err = bind_addr(id, (struct sockaddr *)&s, true);
		}
	} else if (id->state != URCM_BOUND) {
		err = EINVAL;
	}
	if (!err && !id->dev) { /* bound to the wildcard: the route picks the device */
		err = route_source(dst, &s);
		if (!err) {
			*port_of((struct sockaddr *)&s) = rdma_get_src_port(cid);
			err = bind_addr(id, (struct sockaddr *)&s, true);
		}
	}
	if (!err) {
		union ibv_gid g;

		memcpy(&cid->route.addr.dst_addr, dst, addr_len(dst));
		urcm_addr_gid(dst, &g);
		/* loopback, as the kernel's rdma_cm: to the device's own GID */
		if (is_loopback(dst))
			g = cid->route.addr.addr.ibaddr.sgid;
		cid->route.addr.addr.ibaddr.dgid = g;
		id->state = URCM_ADDR_QUERY;
	}
	pthread_mutex_unlock(&urcm_lock);
	if (err) {
		uroce_log(NULL, 1, "rdma_resolve_addr: %s", strerror(err));
		return urcm_fail(err == EADDRNOTAVAIL ? ENODEV : err);
	}
	uroce_log(NULL, 1, "rdma_resolve_addr: %s from %s", urcm_addr_str(dst, a, sizeof(a)),
		  urcm_addr_str(&cid->route.addr.src_addr, b, sizeof(b)));
	/* timeout_ms is not taken: the neighbour table gives up after its own 3 s */
	(void)timeout_ms;
	if (pthread_create(&t, NULL, resolve_thread, id)) {
		pthread_mutex_lock(&urcm_lock);
		id->state = URCM_BOUND; /* nothing in flight: a destroy must not wait */
		pthread_mutex_unlock(&urcm_lock);
		return urcm_fail(ENOMEM);
	}
	pthread_detach(t);
	return urcm_sync_wait(id, RDMA_CM_EVENT_ADDR_RESOLVED);
}

API int rdma_resolve_route(struct rdma_cm_id *cid, int timeout_ms)
{
	struct urcm_id *id = to_urcm(cid);
	struct ibv_sa_path_rec *p;

	(void)timeout_ms;
	pthread_mutex_lock(&urcm_lock);
	if (id->state != URCM_ADDR_RESOLVED) {
		pthread_mutex_unlock(&urcm_lock);
		return urcm_fail(EINVAL);
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
	return urcm_sync_wait(id, RDMA_CM_EVENT_ROUTE_RESOLVED);
}

API int rdma_listen(struct rdma_cm_id *cid, int backlog)
{
	struct urcm_id *id = to_urcm(cid);
	char a[INET6_ADDRSTRLEN];
	int err = 0;

	pthread_mutex_lock(&urcm_lock);
	if (id->state != URCM_BOUND) {
		err = EINVAL;
	} else if (id->dev) {
		err = -urcm_gsi_start(id->dev);
		if (!err)
			err = -urcm_route_listen(id, id->dev);
	} else {
		err = -urcm_dev_open_all();
		for (struct urcm_dev *d = urcm_devs(); d && !err; d = d->next) {
			err = -urcm_gsi_start(d);
			if (!err)
				err = -urcm_route_listen(id, d);
		}
	}
	if (err)
		urcm_route_unlisten(id); /* a wildcard listen that failed part-way */
	if (!err) {
		id->state = URCM_LISTEN;
		id->backlog = backlog > 0 ? backlog : 1024;
		urcm_kick(); /* a REQ held for want of a listener may be for it */
	}
	pthread_mutex_unlock(&urcm_lock);
	uroce_log(NULL, 1, "rdma_listen: %s port %u: %s",
		  urcm_addr_str(&cid->route.addr.src_addr, a, sizeof(a)),
		  ntohs(*port_of(&cid->route.addr.src_addr)), err ? strerror(err) : "listening");
	return err ? urcm_fail(err) : 0;
}

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

static int addrinfo_from_hints(const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	struct rdma_addrinfo *r;

	if (!hints || (!hints->ai_src_addr && !hints->ai_dst_addr))
		return urcm_fail(EINVAL);
	r = calloc(1, sizeof(*r));
	if (!r)
		return urcm_fail(ENOMEM);
	*r = *hints;
	r->ai_src_addr = r->ai_dst_addr = NULL;
	r->ai_src_canonname = r->ai_dst_canonname = NULL;
	r->ai_route = r->ai_connect = NULL;
	r->ai_route_len = r->ai_connect_len = 0;
	r->ai_next = NULL;
	if (!r->ai_qp_type)
		r->ai_qp_type = IBV_QPT_RC;
	if (!r->ai_port_space)
		r->ai_port_space = r->ai_qp_type == IBV_QPT_UD ? RDMA_PS_UDP : RDMA_PS_TCP;
	if (hints->ai_src_addr && hints->ai_src_len)
		r->ai_src_addr = addr_dup(hints->ai_src_addr, hints->ai_src_len);
	if (hints->ai_dst_addr && hints->ai_dst_len)
		r->ai_dst_addr = addr_dup(hints->ai_dst_addr, hints->ai_dst_len);
	if (!r->ai_family)
		r->ai_family = (r->ai_src_addr ? r->ai_src_addr : r->ai_dst_addr)->sa_family;
	*res = r;
	return 0;
}

/*
 * Names and services as getaddrinfo() reads them; RAI_PASSIVE makes the
 * address a source (to bind and listen), otherwise a destination, with the
 * hints' source, if any. RoCE needs no route record: ai_route stays empty.
 */
API int rdma_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints,
			 struct rdma_addrinfo **res)
{
	struct addrinfo ah = {.ai_socktype = SOCK_STREAM}, *ai;
	struct rdma_addrinfo *r;
	int err;

	if (!res)
		return urcm_fail(EINVAL);
	/* no name: the addresses the hints carry, as librdmacm takes them */
	if (!node && !service)
		return addrinfo_from_hints(hints, res);
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
		return urcm_fail(ENOMEM);
	}
	r->ai_flags = hints ? hints->ai_flags : 0;
	r->ai_family = ai->ai_family;
	r->ai_qp_type = hints && hints->ai_qp_type ? hints->ai_qp_type : IBV_QPT_RC;
	r->ai_port_space = hints && hints->ai_port_space ? hints->ai_port_space
			   : r->ai_qp_type == IBV_QPT_UD ? RDMA_PS_UDP
							 : RDMA_PS_TCP;
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
		return urcm_fail(ENOMEM);
	}
	*res = r;
	return 0;
}
