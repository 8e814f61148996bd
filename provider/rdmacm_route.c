/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CM MADs between the programs of one device (rdmacm.h). Each program's
 * CM has a QP 1 of its own (rdmacm_gsi.c), and a MAD reaches one of them:
 * from the wire the device's housekeeper (provider/steer.c gives it block
 * 0), from the device's own GID the sender itself. A MAD for another
 * program is passed on as it came, its completion and GRH area with it:
 * - a REQ or SIDR_REQ to the program listening on its port: rdma_listen
 *   binds a datagram socket named for the device, port space and port;
 * - anything else to the program its communication ID names: IDs carry
 *   their program's slot in the top bits, and each program's CM binds a
 *   socket named for its slot.
 * The names live in the abstract namespace of the network namespace, as
 * the device does, and the kernel frees them when their program dies:
 * nothing to clean up, and a MAD for a dead program finds nobody.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "rdmacm.h"
#include "uroce.h"

#define LISTEN_RETRIES 20
#define LISTEN_RETRY_US 5000 /* 100 ms in all */
#define LISTEN_RECENT_NS 200000000ull

/* When a listener of this process last gave its port's name up (urcm_lock). */
static uint64_t last_unlisten_ns;

/* What crosses: the MAD's receive completion, then its GRH area and MAD. */
struct urcm_fwd {
	struct ibv_wc wc;
	uint8_t buf[sizeof(struct ibv_grh) + UR_MAD_LEN];
};

static socklen_t cm_name(struct sockaddr_un *a, const struct urcm_dev *dev, const char *what,
			 unsigned x, unsigned y)
{
	int n;

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "uroce-cm/%s/%s/%u/%u",
		     ibv_get_device_name(dev->verbs->device), what, x, y);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static int bound_socket(const struct sockaddr_un *a, socklen_t len)
{
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (bind(fd, (const struct sockaddr *)a, len)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

int urcm_route_start(struct urcm_dev *dev)
{
	unsigned first = (unsigned)getpid() % URCM_SLOTS;

	if (dev->route_fd >= 0)
		return 0;
	/* the first free slot from one that depends on the process */
	for (unsigned k = 0; k < URCM_SLOTS; k++) {
		unsigned slot = 1 + (first + k) % URCM_SLOTS;
		struct sockaddr_un a;
		socklen_t len = cm_name(&a, dev, "slot", slot, 0);
		int fd = bound_socket(&a, len);

		if (fd >= 0) {
			dev->route_fd = fd;
			dev->slot = slot;
			return 0;
		}
		if (fd != -EADDRINUSE)
			return fd;
	}
	return -EADDRINUSE;
}

static bool comm_id_live(const struct urcm_dev *dev, uint32_t c)
{
	for (const struct urcm_id *i = urcm_ids(); i; i = i->next)
		if (i->cm_live && i->dev == dev && i->cm.local_comm_id == c)
			return true;
	return false;
}

uint32_t urcm_comm_id(const struct urcm_dev *dev)
{
	uint32_t c;

	/* 20 random bits under the slot: drawn again while one is in use
	 * (TimeWait included), so MADs never find the wrong endpoint */
	do {
		c = urcm_random();
		/* without a slot (its socket could not be bound): any nonzero ID */
		if (dev->slot)
			c = (uint32_t)dev->slot << URCM_SLOT_SHIFT |
			    (c & ((1u << URCM_SLOT_SHIFT) - 1));
		else
			c |= 1;
	} while (!c || comm_id_live(dev, c));
	return c;
}

int urcm_route_listen(struct urcm_id *id, struct urcm_dev *dev)
{
	uint16_t port = ntohs(rdma_get_src_port(&id->id)), ps = (uint16_t)id->id.ps;
	struct urcm_port *p;
	struct sockaddr_un a;
	socklen_t len;
	int fd;

	/* another listener of ours has the name (perftest listens twice) */
	for (p = dev->ports; p; p = p->next)
		if (p->ps == ps && p->port == port)
			return 0;
	len = cm_name(&a, dev, "port", ps, port);
	fd = bound_socket(&a, len);
	/* A listener of ours just destroyed frees the name only when the CM
	 * thread's poll lets go of its socket (urcm_route_unlisten kicks it):
	 * perftest -R listens again on its port at once. Wait for that, a
	 * few milliseconds, before saying the port is another program's; a
	 * port no listener of ours gave up lately is another's at once. */
	for (unsigned tries = 0; fd == -EADDRINUSE && tries < LISTEN_RETRIES &&
				 urcm_now() - last_unlisten_ns < LISTEN_RECENT_NS;
	     tries++) {
		usleep(LISTEN_RETRY_US);
		fd = bound_socket(&a, len);
	}
	if (fd == -EADDRINUSE) {
		/* another program of the device listens on the port: the kernel's
		 * rdma_cm refuses a second listener on one port of a device too */
		uroce_log(NULL, 1, "rdma_listen: port %u: another program listens on it", port);
		return fd;
	}
	if (fd < 0)
		return fd;
	p = calloc(1, sizeof(*p));
	if (!p) {
		close(fd);
		return -ENOMEM;
	}
	*p = (struct urcm_port){.next = dev->ports, .owner = id, .ps = ps, .port = port, .fd = fd};
	dev->ports = p;
	return 0;
}

/* Another listener of ours that takes what comes to port p of dev, if any. */
static struct urcm_id *heir(const struct urcm_port *p, const struct urcm_dev *dev)
{
	for (struct urcm_id *i = urcm_ids(); i; i = i->next)
		if (i != p->owner && i->state == URCM_LISTEN && (uint16_t)i->id.ps == p->ps &&
		    ntohs(rdma_get_src_port(&i->id)) == p->port && (!i->dev || i->dev == dev))
			return i;
	return NULL;
}

void urcm_route_unlisten(struct urcm_id *id)
{
	for (struct urcm_dev *d = urcm_devs(); d; d = d->next)
		for (struct urcm_port **pp = &d->ports; *pp;) {
			struct urcm_port *p = *pp;

			if (p->owner != id) {
				pp = &p->next;
				continue;
			}
			p->owner = heir(p, d);
			if (p->owner) {
				pp = &p->next;
				continue;
			}
			*pp = p->next;
			close(p->fd);
			free(p);
			/* the CM thread's poll still holds the socket, and its name
			 * with it, until the poll returns */
			urcm_kick();
			last_unlisten_ns = urcm_now();
		}
}

/*
 * Pass the MAD on: true when a program has the name. Its queue full (a
 * burst, a busy program) drops it, as a full receive queue would, and the
 * CM's resends bring it again; never answered as nobody's.
 */
static bool send_to(const struct sockaddr_un *a, socklen_t len, const struct ibv_wc *wc,
		    const uint8_t *buf)
{
	struct urcm_fwd f;
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool taken = true;

	if (fd < 0)
		return false;
	f.wc = *wc;
	memcpy(f.buf, buf, sizeof(f.buf));
	if (sendto(fd, &f, sizeof(f), MSG_DONTWAIT, (const struct sockaddr *)a, len) < 0) {
		taken = errno != ECONNREFUSED && errno != ENOENT;
		if (taken)
			uroce_log(NULL, 1, "rdma_cm: a MAD for another program dropped: %s",
				  strerror(errno));
	}
	close(fd);
	return taken;
}

bool urcm_route_forward(struct urcm_dev *dev, const struct ibv_wc *wc, const uint8_t *buf,
			const struct ur_cm_mad *m)
{
	uint32_t dest = ur_cm_mad_dest_id(m);
	struct sockaddr_un a;
	socklen_t len;

	if (dest) {
		unsigned slot = dest >> URCM_SLOT_SHIFT;

		if (!slot || slot == dev->slot || slot > URCM_SLOTS)
			return false;
		len = cm_name(&a, dev, "slot", slot, 0);
	} else {
		bool sidr = m->hdr.attr_id == UR_CM_ATTR_SIDR_REQ;
		uint16_t ps, port;

		if ((m->hdr.attr_id != UR_CM_ATTR_REQ && !sidr) ||
		    !ur_cm_ip_service_parse(sidr ? m->sidr_req.service_id : m->req.service_id, &ps,
					    &port))
			return false;
		len = cm_name(&a, dev, "port", ps, port);
	}
	if (!send_to(&a, len, wc, buf))
		return false;
	uroce_log(NULL, 2, "rdma_cm: %s passed to the program it is for",
		  ur_cm_attr_name(m->hdr.attr_id));
	return true;
}

unsigned urcm_route_fds(struct urcm_dev *dev, struct pollfd *p, struct urcm_dev **of, unsigned max)
{
	unsigned n = 0;

	if (dev->route_fd >= 0 && n < max) {
		of[n] = dev;
		p[n++] = (struct pollfd){.fd = dev->route_fd, .events = POLLIN};
	}
	for (struct urcm_port *q = dev->ports; q && n < max; q = q->next) {
		of[n] = dev;
		p[n++] = (struct pollfd){.fd = q->fd, .events = POLLIN};
	}
	return n;
}

/* fd is still one of ours (lock held). */
static bool route_fd_ours(const struct urcm_dev *dev, int fd)
{
	bool ours = fd == dev->route_fd;

	for (const struct urcm_port *p = dev->ports; p && !ours; p = p->next)
		ours = p->fd == fd;
	return ours;
}

void urcm_route_rx(struct urcm_dev *dev, int fd, urcm_mad_fn fn)
{
	struct urcm_fwd f;

	/* polled without the lock: a port closed since may have given its
	 * number to another socket of the program's, which is not ours to read;
	 * asked again after each MAD, as fn may drop the lock (urcm_neigh_unlocked) */
	while (route_fd_ours(dev, fd) &&
	       recv(fd, &f, sizeof(f), MSG_DONTWAIT) == (ssize_t)sizeof(f))
		fn(dev, &f.wc, f.buf);
}
