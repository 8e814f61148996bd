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
 * The names are files in the device's directory (cm-port-PS-PORT,
 * cm-slot-N-0), with the bells file's mode: only the device's users can
 * bind or reach them (in the abstract namespace, as they were, any process
 * of the network namespace could take a port's name before its listener
 * and be handed its connection requests). A program holds a name while it
 * holds a byte of the device's lock file (provider/shared.h), which the
 * kernel lets go when the program dies; the next holder replaces the file
 * it left, and a MAD sent there meanwhile finds nobody (ECONNREFUSED).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "rdmacm.h"
#include "uroce.h"

/* What crosses: the MAD's receive completion, then its GRH area and MAD. */
struct urcm_fwd {
	struct ibv_wc wc;
	uint8_t buf[sizeof(struct ibv_grh) + UR_MAD_LEN];
};

#define CLAIM_TRIES 5       /* a sweep holds a free name for microseconds, */
#define CLAIM_RETRY_US 1000 /* longer if preempted: a port's listener waits */

_Static_assert(UROCE_DEVDIR_MAX + sizeof("/cm-port-319-65535") <=
		   sizeof(((struct sockaddr_un *)0)->sun_path),
	       "the CM's sockets fit a unix address in any device directory");

/* A socket's file name in the device's directory (provider/shared.h). */
static void cm_file(char *file, size_t n, bool port, unsigned x, unsigned y)
{
	snprintf(file, n, "cm-%s-%u-%u", port ? "port" : "slot", x, y);
}

/* Its path; the address length, 0 if it does not fit. */
static socklen_t cm_name(struct sockaddr_un *a, const struct urcm_dev *dev, bool port, unsigned x,
			 unsigned y)
{
	char file[32];
	int n;

	cm_file(file, sizeof(file), port, x, y);
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	n = snprintf(a->sun_path, sizeof(a->sun_path), "%s/%s", to_unic(dev->verbs)->devdir, file);
	if (n < 0 || (size_t)n >= sizeof(a->sun_path))
		return 0;
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + (size_t)n + 1);
}

/*
 * Hold a name and bind a socket to it: the socket, or -EADDRINUSE (another
 * program holds it) or another -errno. *ino names the file we made, for
 * release_name. The file's mode is the bells file's: set on the socket
 * before bind(), which gives it to the file less the umask (nobody else
 * reaches it even for a moment), and on the file after (what the umask
 * took off).
 */
static int claim_name(struct urcm_dev *dev, bool port, unsigned x, unsigned y, uint64_t *ino)
{
	struct uroce_nic *nic = to_unic(dev->verbs);
	struct sockaddr_un a;
	socklen_t len = cm_name(&a, dev, port, x, y);
	char bells[sizeof(nic->devdir) + 8];
	char file[32];
	struct stat st;
	mode_t mode = 0600;
	int fd, err;

	if (!len)
		return -ENAMETOOLONG;
	cm_file(file, sizeof(file), port, x, y);
	err = uroce_shared_name_lock(&nic->shared, file);
	for (unsigned t = 0; port && err == -EADDRINUSE && t < CLAIM_TRIES; t++) {
		usleep(CLAIM_RETRY_US);
		err = uroce_shared_name_lock(&nic->shared, file);
	}
	if (err)
		return err;
	/* a lock in the device's lock file, not in one a `link del` removed
	 * while we ran (then the name may be a program's of the new device) */
	if (!uroce_shared_current(&nic->shared, nic->devdir)) {
		uroce_shared_name_unlock(&nic->shared, file);
		return -ENODEV;
	}
	snprintf(bells, sizeof(bells), "%s/bells", nic->devdir);
	if (!stat(bells, &st))
		mode = st.st_mode & 0666;
	/* the name is ours: a file there is a holder's that was killed */
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || fchmod(fd, mode) || (unlink(a.sun_path) && errno != ENOENT) ||
	    bind(fd, (const struct sockaddr *)&a, len) || chmod(a.sun_path, mode) ||
	    lstat(a.sun_path, &st)) {
		err = -errno;
		if (fd >= 0)
			close(fd);
		uroce_shared_name_unlock(&nic->shared, file);
		return err;
	}
	*ino = (uint64_t)st.st_ino;
	return fd;
}

/* Let a name go: its file first (if still the one we made), then the lock. */
static void release_name(struct urcm_dev *dev, bool port, unsigned x, unsigned y, uint64_t ino)
{
	struct sockaddr_un a;
	struct stat st;
	char file[32];

	if (cm_name(&a, dev, port, x, y) && !lstat(a.sun_path, &st) && (uint64_t)st.st_ino == ino &&
	    uroce_shared_current(&to_unic(dev->verbs)->shared, to_unic(dev->verbs)->devdir))
		unlink(a.sun_path);
	cm_file(file, sizeof(file), port, x, y);
	uroce_shared_name_unlock(&to_unic(dev->verbs)->shared, file);
}

int urcm_route_start(struct urcm_dev *dev)
{
	unsigned first = (unsigned)getpid() % URCM_SLOTS;

	if (dev->route_fd >= 0)
		return 0;
	/* the first free slot from one that depends on the process */
	for (unsigned k = 0; k < URCM_SLOTS; k++) {
		unsigned slot = 1 + (first + k) % URCM_SLOTS;
		uint64_t ino;
		int fd = claim_name(dev, false, slot, 0, &ino);

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
	uint64_t ino;
	int fd;

	/* another listener of ours has the name (perftest listens twice) */
	for (p = dev->ports; p; p = p->next)
		if (p->ps == ps && p->port == port)
			return 0;
	fd = claim_name(dev, true, ps, port, &ino);
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
		release_name(dev, true, ps, port, ino);
		return -ENOMEM;
	}
	*p = (struct urcm_port){
	    .next = dev->ports, .owner = id, .ps = ps, .port = port, .fd = fd, .ino = ino};
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
			release_name(d, true, p->ps, p->port, p->ino);
			free(p);
			/* the CM thread polls a socket that is gone */
			urcm_kick();
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
		/* a file nobody binds, none, or one we may not write to: the
		 * MAD is nobody's here (a REQ gets its REJ) */
		taken = errno != ECONNREFUSED && errno != ENOENT && errno != EACCES;
		if (errno == EACCES)
			uroce_log(NULL, 1, "rdma_cm: no permission to pass a MAD to %s", a->sun_path);
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
		len = cm_name(&a, dev, false, slot, 0);
	} else {
		bool sidr = m->hdr.attr_id == UR_CM_ATTR_SIDR_REQ;
		uint16_t ps, port;

		if ((m->hdr.attr_id != UR_CM_ATTR_REQ && !sidr) ||
		    !ur_cm_ip_service_parse(sidr ? m->sidr_req.service_id : m->req.service_id, &ps,
					    &port))
			return false;
		len = cm_name(&a, dev, true, ps, port);
	}
	if (!len || !send_to(&a, len, wc, buf))
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
