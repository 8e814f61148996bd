/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * memif's control side (memif_wire.h has the protocol): a server that
 * listens and takes one client at a time, a client that connects, creates
 * the shared memory and reconnects when its server comes back, and the
 * checks on everything a peer hands over (a region must be as large as it
 * says and sealed against shrinking, a ring must lie inside its region).
 * The handshake is synchronous, a second at most per message: it happens
 * once per connection, inside a pass.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "memif_wire.h"
#include "touch.h"

#define MSG_TIMEOUT_MS 1000 /* the most a handshake waits for each message */
#define SETUP_TIMEOUT_NS 3000000000ull /* and for the whole setup */

static uint64_t mono_ns(void);
static void mlog(struct dp_memif *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void mlog(struct dp_memif *m, const char *fmt, ...)
{
	char line[256];
	va_list ap;

	if (!m->log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	m->log(m->log_arg, line);
}

/* ---- control messages ---- */

static int msg_send(int fd, struct memif_msg *msg, int pass_fd)
{
	struct iovec iov = {.iov_base = msg, .iov_len = sizeof(*msg)};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} c;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

	if (pass_fd >= 0) {
		memset(&c, 0, sizeof(c));
		mh.msg_control = c.buf;
		mh.msg_controllen = sizeof(c.buf);
		c.h.cmsg_level = SOL_SOCKET;
		c.h.cmsg_type = SCM_RIGHTS;
		c.h.cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(&c.h), &pass_fd, sizeof(int));
	}
	return sendmsg(fd, &mh, MSG_NOSIGNAL) == (ssize_t)sizeof(*msg) ? 0 : -EIO;
}

static int msg_send_type(int fd, uint16_t type)
{
	struct memif_msg msg = {.type = type};

	return msg_send(fd, &msg, -1);
}

static void msg_send_disconnect(int fd, const char *why)
{
	struct memif_msg msg = {.type = MSG_DISCONNECT};

	snprintf((char *)msg.disconnect.string, sizeof(msg.disconnect.string), "%s", why);
	msg_send(fd, &msg, -1);
}

/*
 * The next message within timeout_ms: its type, or -1 on a timeout, a
 * hang-up or garbage. A file descriptor passed with it lands in *got_fd
 * (else -1); a caller that does not want one passes NULL and it is closed.
 */
static int msg_recv(int fd, struct memif_msg *msg, int *got_fd, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	struct iovec iov = {.iov_base = msg, .iov_len = sizeof(*msg)};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * 4)];
	} c;
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = c.buf,
			    .msg_controllen = sizeof(c.buf)};
	ssize_t n;

	if (got_fd)
		*got_fd = -1;
	if (poll(&p, 1, timeout_ms) != 1)
		return -1;
	memset(msg, 0, sizeof(*msg));
	n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&mh); h; h = CMSG_NXTHDR(&mh, h)) {
		if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (h->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int f;

			memcpy(&f, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
			if (got_fd && *got_fd < 0)
				*got_fd = f;
			else
				close(f);
		}
	}
	if (n < (ssize_t)sizeof(msg->type)) {
		if (got_fd && *got_fd >= 0) {
			close(*got_fd);
			*got_fd = -1;
		}
		return -1;
	}
	return msg->type;
}

/* ---- shared memory ---- */

static int map_region(struct dp_memif *m, int fd, uint64_t size)
{
	struct stat st;
	int seals;
	void *p;

	if (m->nregions >= DP_MEMIF_MAX_REGIONS || !size ||
	    size > (m->any_id ? DP_MEMIF_PROGRAM_REGION_MAX : 1ull << 40))
		return -EINVAL;
	/* a page past the end of the file, or a file the peer could shrink
	 * later, would kill us with SIGBUS on the first touch (hugetlbfs files,
	 * which DPDK's zero-copy clients pass, cannot be sealed: size only; the
	 * device daemon's clients are uroce programs, whose memfds are sealed) */
	seals = fcntl(fd, F_GET_SEALS);
	if (fstat(fd, &st) || (uint64_t)st.st_size < size ||
	    (seals >= 0 && !(seals & F_SEAL_SHRINK)) || (m->any_id && seals < 0))
		return -EINVAL;
	/* the daemon populates nothing a program hands it: a sparse file
	 * would make it allocate the whole size */
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | (m->any_id ? 0 : MAP_POPULATE),
		 fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	/* the first touch of a page costs this VM a trip to the hypervisor (warm.c) */
	if (!m->any_id)
		dp_touch_pages(p, size);
	m->region[m->nregions] = p;
	m->region_size[m->nregions] = size;
	m->region_fd[m->nregions] = fd;
	m->nregions++;
	return 0;
}

/* The shared memory and the ring eventfds. */
static void free_shared(struct dp_memif *m)
{
	for (unsigned i = 0; i < m->nregions; i++) {
		munmap(m->region[i], m->region_size[i]);
		close(m->region_fd[i]);
	}
	m->nregions = 0;
	if (m->c2s_fd >= 0)
		close(m->c2s_fd);
	if (m->s2c_fd >= 0)
		close(m->s2c_fd);
	m->c2s_fd = m->s2c_fd = -1;
	m->c2s = m->s2c = NULL;
}

/* Forget the connection. A server forgets what it was given; a client
 * keeps the memory it made for the next try unless a server was handed it
 * (one that hung up may still read our rings: client_make_memory). */
static void teardown(struct dp_memif *m)
{
	if (m->connected)
		m->lost++;
	if (m->server || m->region_given)
		free_shared(m);
	m->region_given = false;
	if (m->ctl_fd >= 0)
		close(m->ctl_fd);
	m->ctl_fd = -1;
	m->connected = false;
	m->rx_last = m->rx_end = m->rx_seen = 0;
	if (!m->nregions)
		m->ring_size = 0;
	m->tx_reserved = false;
	m->tx_frames = 0;
	m->armed = false;
}

/* A ring the peer announced at region:offset, if it lies wholly inside. */
static struct memif_ring *ring_at(struct dp_memif *m, unsigned region, uint64_t offset,
				  unsigned log2)
{
	if (region >= m->nregions || offset % 64 ||
	    offset + memif_ring_bytes(log2) > m->region_size[region])
		return NULL;
	return (struct memif_ring *)((uint8_t *)m->region[region] + offset);
}

/* ---- client ---- */

/*
 * The client's memory: both rings, then a buffer per slot of each, and the
 * rings' eventfds. Made before connecting: touching 19 MB of fresh pages
 * took a starved program seconds on a loaded host, and a server waiting
 * meanwhile for our INIT (the device daemon takes one program at a time)
 * gave up on us. Kept for the next try when no server was handed it (no
 * one listening, no HELLO); made again after a connection that had it.
 */
static int client_make_memory(struct dp_memif *m)
{
	size_t rb = memif_ring_bytes(m->log2_ring), n = (size_t)1 << m->log2_ring;
	uint64_t size = 2 * rb + 2 * n * m->bsize;
	int fd = memfd_create("memif_region_0", MFD_CLOEXEC | MFD_ALLOW_SEALING), err;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK)) {
		err = -errno;
		close(fd);
		return err;
	}
	err = map_region(m, fd, size);
	if (err) {
		close(fd);
		return err;
	}
	m->c2s = ring_at(m, 0, 0, m->log2_ring);
	m->s2c = ring_at(m, 0, rb, m->log2_ring);
	m->ring_size = (uint16_t)n;
	m->c2s_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	m->s2c_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (m->c2s_fd < 0 || m->s2c_fd < 0) {
		free_shared(m);
		return -EMFILE;
	}
	return 0;
}

/* Both rings as a new connection finds them: empty, each slot its own buffer. */
static void client_reset_rings(struct dp_memif *m)
{
	size_t rb = memif_ring_bytes(m->log2_ring), n = m->ring_size;

	for (int c2s = 1; c2s >= 0; c2s--) {
		struct memif_ring *r = c2s ? m->c2s : m->s2c;

		r->head = r->tail = 0;
		for (size_t i = 0; i < n; i++)
			r->desc[i] = (struct memif_desc){
			    .offset = (uint32_t)(2 * rb + ((c2s ? 0 : n) + i) * m->bsize),
			    .length = m->bsize};
		r->cookie = MEMIF_COOKIE;
	}
	m->c2s->flags = 0;
	m->s2c->flags = MEMIF_RING_FLAG_MASK_INT; /* we poll what we receive on */
}

/* The server's next message, which must be `type`: 0, or -ECONNREFUSED. */
static int expect(struct dp_memif *m, int type, struct memif_msg *msg)
{
	int got = msg_recv(m->ctl_fd, msg, NULL, MSG_TIMEOUT_MS);

	if (got == MSG_DISCONNECT)
		mlog(m, "memif server said no: %.96s", (const char *)msg->disconnect.string);
	return got == type ? 0 : -ECONNREFUSED;
}

/* Connect and shake hands once: 0 when connected, else -errno. */
static int client_connect(struct dp_memif *m)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct memif_msg msg;
	bool sent;
	int err;

	if (!m->nregions) {
		err = client_make_memory(m);
		if (err)
			return err;
	}
	memcpy(sa.sun_path, m->path, sizeof(m->path));
	m->ctl_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (m->ctl_fd < 0)
		return -errno;
	if (connect(m->ctl_fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		teardown(m);
		return err;
	}
	/* someone listens from here on: a failed handshake (a loaded server
	 * slow to answer, one that says no) is not the ECONNREFUSED of nobody
	 * listening, which the device takes for its daemon gone (daemon_link.c) */
	err = -EPROTO;
	if (expect(m, MSG_HELLO, &msg) || msg.hello.min_version > MEMIF_VERSION ||
	    msg.hello.max_version < MEMIF_VERSION)
		goto fail;
	if (m->log2_ring > msg.hello.max_log2_ring_size) {
		/* a server that takes smaller rings than ours (uroce and DPDK take 2^14) */
		free_shared(m);
		m->log2_ring = msg.hello.max_log2_ring_size;
		err = client_make_memory(m);
		if (err)
			goto fail;
	}
	client_reset_rings(m);

	/*
	 * INIT, the region, both rings and CONNECT in one burst, then their
	 * answers: on a loaded host each wait for the server's answer costs a
	 * turn at the CPU, and a server taking one client at a time (the
	 * device daemon's greeter) waits on us through all of them. Servers
	 * read the messages in order either way (DPDK's too).
	 */
	err = -EPROTO;
	msg = (struct memif_msg){.type = MSG_INIT};
	msg.init.version = MEMIF_VERSION;
	msg.init.id = m->id;
	memcpy(msg.init.name, "uroce", 5);
	sent = !msg_send(m->ctl_fd, &msg, -1);
	msg = (struct memif_msg){.type = MSG_ADD_REGION};
	msg.add_region.size = m->region_size[0];
	m->region_given = sent;
	sent = sent && !msg_send(m->ctl_fd, &msg, m->region_fd[0]);
	for (int c2s = 1; c2s >= 0; c2s--) {
		msg = (struct memif_msg){.type = MSG_ADD_RING};
		msg.add_ring.flags = c2s ? MEMIF_ADD_RING_FLAG_C2S : 0;
		msg.add_ring.offset = c2s ? 0 : (uint32_t)memif_ring_bytes(m->log2_ring);
		msg.add_ring.log2_ring_size = m->log2_ring;
		sent = sent && !msg_send(m->ctl_fd, &msg, c2s ? m->c2s_fd : m->s2c_fd);
	}
	msg = (struct memif_msg){.type = MSG_CONNECT};
	memcpy(msg.connect.if_name, "uroce", 5);
	sent = sent && !msg_send(m->ctl_fd, &msg, -1);
	/* read the answers even when a send failed: a server that said no
	 * closed after its DISCONNECT, which expect() logs */
	for (int acks = 0; acks < 4; acks++)
		if (expect(m, MSG_ACK, &msg))
			goto fail;
	if (!sent || expect(m, MSG_CONNECTED, &msg))
		goto fail;
	/* offer the server every receive buffer */
	__atomic_store_n(&m->s2c->head, m->ring_size, __ATOMIC_RELEASE);
	m->tx_next = m->tx_published = m->tx_end = 0;
	m->rx_end = m->rx_last;
	m->connected = true;
	return 0;
fail:
	teardown(m);
	return err;
}

/* ---- server ---- */

static int server_listen(struct dp_memif *m)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	memcpy(sa.sun_path, m->path, sizeof(m->path));
	/* a socket file left by a server that died refuses connections: replace it */
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) && errno == ECONNREFUSED)
		unlink(m->path);
	if (fd >= 0)
		close(fd);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 8)) {
		int err = -errno;

		close(fd);
		return err;
	}
	m->listen_fd = fd;
	return 0;
}

/* One message of the client's setup after INIT: 1 when it was CONNECT, 0 for more, -1 to give up.
 */
static int server_setup_step(struct dp_memif *m)
{
	struct memif_msg msg;
	struct memif_ring *r;
	int fd, type = msg_recv(m->ctl_fd, &msg, &fd, MSG_TIMEOUT_MS);

	switch (type) {
	case MSG_ADD_REGION:
		if (fd < 0 || msg.add_region.index != m->nregions ||
		    map_region(m, fd, msg.add_region.size))
			break;
		return msg_send_type(m->ctl_fd, MSG_ACK) ? -1 : 0;
	case MSG_ADD_RING:
		r = ring_at(m, msg.add_ring.region, msg.add_ring.offset,
			    msg.add_ring.log2_ring_size);
		/* one ring each way, once: a second would leak the first's eventfd */
		if (!r || msg.add_ring.index != 0 ||
		    ((msg.add_ring.flags & MEMIF_ADD_RING_FLAG_C2S) ? m->c2s != NULL : m->s2c != NULL) ||
		    msg.add_ring.log2_ring_size > MEMIF_MAX_LOG2_RING ||
		    (m->ring_size && m->ring_size != 1u << msg.add_ring.log2_ring_size))
			break;
		m->ring_size = (uint16_t)(1u << msg.add_ring.log2_ring_size);
		/* we read it to empty it after a wake-up (dp_memif_disarm): never block */
		if (fd >= 0)
			fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		if (msg.add_ring.flags & MEMIF_ADD_RING_FLAG_C2S) {
			m->c2s = r;
			m->c2s_fd = fd;
		} else {
			m->s2c = r;
			m->s2c_fd = fd;
		}
		return msg_send_type(m->ctl_fd, MSG_ACK) ? -1 : 0;
	case MSG_CONNECT:
		if (!m->c2s || !m->s2c || m->c2s->cookie != MEMIF_COOKIE ||
		    m->s2c->cookie != MEMIF_COOKIE)
			break;
		msg = (struct memif_msg){.type = MSG_CONNECTED};
		memcpy(msg.connect.if_name, "uroce", 5);
		return msg_send(m->ctl_fd, &msg, -1) ? -1 : 1;
	default:
		break;
	}
	if (fd >= 0)
		close(fd);
	msg_send_disconnect(m->ctl_fd, "uroce: unexpected or invalid setup message");
	return -1;
}

/* Shake hands with a client that just connected: 0 when connected. */
static int server_handshake(struct dp_memif *m, int fd)
{
	struct memif_msg msg = {.type = MSG_HELLO};
	unsigned steps;
	uint64_t until;
	int step;

	m->ctl_fd = fd;
	memcpy(msg.hello.name, "uroce", 5);
	msg.hello.min_version = msg.hello.max_version = MEMIF_VERSION;
	msg.hello.max_region = DP_MEMIF_MAX_REGIONS - 1;
	msg.hello.max_log2_ring_size = MEMIF_MAX_LOG2_RING;
	if (msg_send(fd, &msg, -1) || msg_recv(fd, &msg, NULL, MSG_TIMEOUT_MS) != MSG_INIT)
		goto fail;
	if (m->any_id)
		m->id = msg.init.id;
	if (msg.init.version != MEMIF_VERSION || msg.init.id != m->id || msg.init.mode != 0) {
		msg_send_disconnect(fd, "uroce: wrong version, interface id or mode");
		goto fail;
	}
	if (msg_send_type(fd, MSG_ACK))
		goto fail;
	/* regions, two rings, CONNECT: a client that sends more, or takes
	 * longer in all, is not setting up */
	until = mono_ns() + SETUP_TIMEOUT_NS;
	for (steps = 0; (step = server_setup_step(m)) == 0; steps++)
		if (steps == DP_MEMIF_MAX_REGIONS + 2 || mono_ns() > until) {
			msg_send_disconnect(fd, "uroce: setup too long");
			goto fail;
		}
	if (step < 0)
		goto fail;
	m->c2s->flags |= MEMIF_RING_FLAG_MASK_INT; /* we poll what we receive on */
	m->rx_last = __atomic_load_n(&m->c2s->tail, __ATOMIC_ACQUIRE);
	m->tx_next = m->tx_published = __atomic_load_n(&m->s2c->tail, __ATOMIC_ACQUIRE);
	m->rx_end = m->rx_last;
	m->tx_end = m->tx_next;
	m->connected = true;
	return 0;
fail:
	teardown(m);
	return -ECONNREFUSED;
}

/* Take clients waiting on the socket: the first while we have none, the rest are told no. */
static void server_accept(struct dp_memif *m)
{
	int fd;

	while ((fd = accept4(m->listen_fd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
		if (m->connected) {
			msg_send_disconnect(fd, "uroce: interface already connected");
			close(fd);
		} else if (server_handshake(m, fd) == 0) {
			mlog(m, "memif: client connected on %s (ring %u, %u regions)", m->path,
			     m->ring_size, m->nregions);
		} else {
			mlog(m, "memif: a client's handshake failed on %s", m->path);
		}
	}
}

/* ---- both ---- */

/* Messages after the handshake: a DISCONNECT, or uroce's own (to on_msg, fd and all). */
static bool peer_gone(struct dp_memif *m)
{
	struct memif_msg msg;
	int type, fd;

	for (;;) {
		type = msg_recv(m->ctl_fd, &msg, &fd, 0);
		if (type < 0) {
			struct pollfd p = {.fd = m->ctl_fd, .events = POLLIN};

			/* nothing to read, or a hang-up */
			return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR));
		}
		if (type >= MSG_UROCE_FIRST && m->on_msg) {
			m->on_msg(m->msg_arg, &msg, fd);
			continue;
		}
		if (fd >= 0)
			close(fd);
		if (type == MSG_DISCONNECT)
			return true;
	}
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void dp_memif_upkeep(struct dp_memif *m, uint64_t now)
{
	/* borrowed rings have no connection of ours: their lender keeps it */
	if (now < m->next_ctl_ns || m->borrowed)
		return;
	/* a client that is not connected tries again every 100 ms; otherwise look every ms */
	m->next_ctl_ns = now + (!m->server && !m->connected ? 100000000ull : 1000000ull);
	if (m->connected && peer_gone(m)) {
		mlog(m, "memif: peer on %s went away", m->path);
		teardown(m);
	}
	if (m->server) {
		/* one of a daemon's many clients has no socket of its own to listen on */
		if (m->listen_fd >= 0)
			server_accept(m);
	} else if (!m->connected && (m->connect_err = client_connect(m)) == 0)
		mlog(m, "memif: connected to %s again", m->path);
}

/* "key=value" from a comma-separated list, into out: false when absent. */
static bool arg_value(const char *args, const char *key, char *out, size_t len)
{
	size_t klen = strlen(key);

	for (const char *p = args; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
		if (!strncmp(p, key, klen) && p[klen] == '=') {
			size_t n = strcspn(p + klen + 1, ",");

			if (n >= len)
				return false;
			memcpy(out, p + klen + 1, n);
			out[n] = 0;
			return true;
		}
	}
	return false;
}

uint32_t dp_memif_args_bsize(const char *args)
{
	char num[16];
	unsigned long v;

	if (!arg_value(args, "bsize", num, sizeof(num)))
		return 0;
	v = strtoul(num, NULL, 0);
	return v >= 128 && v <= UINT32_MAX ? (uint32_t)v & ~127u : 0;
}

static void init(struct dp_memif *m, uint32_t bsize, void (*log)(void *, const char *),
		 void *log_arg)
{
	memset(m, 0, sizeof(*m));
	m->listen_fd = m->ctl_fd = m->c2s_fd = m->s2c_fd = -1;
	m->log = log;
	m->log_arg = log_arg;
	m->bsize = (bsize + 127) & ~127u;
	m->log2_ring = 11;
}

int dp_memif_open(struct dp_memif *m, const char *args, uint32_t bsize, unsigned wait_ms,
		  void (*log)(void *, const char *), void *log_arg)
{
	char role[16] = "client", id[16] = "0", num[16];
	uint64_t until;
	int err;

	init(m, bsize, log, log_arg);
	if (!arg_value(args, "socket", m->path, sizeof(m->path)))
		snprintf(m->path, sizeof(m->path), "/run/memif.sock");
	arg_value(args, "role", role, sizeof(role));
	arg_value(args, "id", id, sizeof(id));
	m->id = (uint32_t)strtoul(id, NULL, 0);
	/* DPDK's names: buffer size in bytes, ring size as log2 (a client's choice) */
	if (dp_memif_args_bsize(args))
		m->bsize = dp_memif_args_bsize(args);
	if (arg_value(args, "rsize", num, sizeof(num)) && strtoul(num, NULL, 0) >= 1 &&
	    strtoul(num, NULL, 0) <= MEMIF_MAX_LOG2_RING)
		m->log2_ring = (uint8_t)strtoul(num, NULL, 0);
	m->server = !strcmp(role, "server");
	/* the device daemon stamps what it puts in our ring (rx_wait.h) */
	m->stamps = arg_value(args, "stamps", num, sizeof(num)) && !strcmp(num, "1");
	m->gather_cap = 16384;
	m->gather = malloc(m->gather_cap);
	if (!m->gather)
		return -ENOMEM;
	if (m->server) {
		err = server_listen(m);
		if (err)
			dp_memif_close(m);
		return err;
	}
	/* the server may still be starting, or a predecessor of ours still connected */
	until = mono_ns() + (uint64_t)wait_ms * 1000000ull;
	while ((err = client_connect(m)) && mono_ns() < until)
		usleep(50000);
	m->connect_err = err;
	if (err)
		mlog(m, "memif: no server on %s yet (%s): frames are dropped until one takes us",
		     m->path, strerror(-err));
	return 0;
}

bool dp_memif_peer_absent(const struct dp_memif *m)
{
	return !m->server && !m->connected &&
	       (m->connect_err == -ENOENT || m->connect_err == -ECONNREFUSED);
}

void dp_memif_close(struct dp_memif *m)
{
	if (m->connected)
		msg_send_disconnect(m->ctl_fd, "uroce: interface closed");
	teardown(m);
	free_shared(m);
	if (m->listen_fd >= 0) {
		close(m->listen_fd);
		unlink(m->path);
		m->listen_fd = -1;
	}
	free(m->gather);
	m->gather = NULL;
}

/* ---- a server of many clients: one socket, one dp_memif per client ---- */

int dp_memif_listen(const char *path)
{
	struct dp_memif m;
	int err;

	init(&m, 128, NULL, NULL);
	snprintf(m.path, sizeof(m.path), "%s", path);
	err = server_listen(&m);
	return err ? err : m.listen_fd;
}

int dp_memif_take(int listen_fd, const char *path, struct dp_memif *m, pid_t *pid,
		  const char *refuse, void (*log)(void *, const char *), void *log_arg)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? -EAGAIN : -errno;
	if (refuse) {
		msg_send_disconnect(fd, refuse);
		close(fd);
		return -ECONNREFUSED;
	}
	init(m, 128, log, log_arg);
	snprintf(m->path, sizeof(m->path), "%s", path);
	m->server = true;
	m->any_id = true;
	m->gather_cap = 16384;
	m->gather = malloc(m->gather_cap);
	if (!m->gather || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len)) {
		int err = m->gather ? -errno : -ENOMEM;

		free(m->gather);
		m->gather = NULL;
		close(fd);
		return err == -EAGAIN ? -EIO : err;
	}
	*pid = cred.pid;
	if (server_handshake(m, fd)) {
		free(m->gather);
		m->gather = NULL;
		return -ECONNREFUSED;
	}
	return 0;
}

/* ---- for memif_lend.c ---- */

int dp_memif_msg_send(int fd, struct memif_msg *msg, int pass_fd)
{
	return msg_send(fd, msg, pass_fd);
}

int dp_memif_map_region(struct dp_memif *m, int fd, uint64_t size)
{
	return map_region(m, fd, size);
}

void dp_memif_free_shared(struct dp_memif *m)
{
	free_shared(m);
}

void dp_memif_hang_up(struct dp_memif *m, const char *why)
{
	if (m->connected)
		msg_send_disconnect(m->ctl_fd, why);
	teardown(m);
}
