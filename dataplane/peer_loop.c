/* SPDX-License-Identifier: BSD-2-Clause */
/* Loopback between processes of one device: see peer_loop.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "peer_loop.h"
#include "rx_wait.h"

_Static_assert(DP_PEER_DIR_MAX - 1 + sizeof("/loop-4095") <=
		   sizeof(((struct sockaddr_un *)0)->sun_path),
	       "a block's socket path fits a unix address");

/*
 * One sender's frames to one receiving process: records of a length word,
 * a stamp (rx_wait.h: when the sender wrote it, by the coarse clock) and
 * the frame, 8-byte aligned, one after the other; a record that would
 * cross the end is preceded by a wrap mark and starts over at 0. head and
 * tail count bytes from the start, each on its own cache line. The size
 * holds about a thousand 4 KB frames, what a socket buffered before.
 */
#define RING_BYTES (4u << 20)
#define WRAP_MARK 0xffffffffu
#define REFUSED_NS 10000000ull  /* a live owner that hung up on us: connect again after 10 ms */
#define FULL_NOTE 'f'           /* an owner refusing a sender says why before it hangs up */

struct dp_loop_ring {
	_Atomic uint64_t head; /* written by the sender */
	uint8_t pad0[56];
	_Atomic uint64_t tail; /* written by the receiver */
	uint8_t pad1[56];
	uint8_t data[RING_BYTES];
};

static uint32_t record_bytes(uint32_t len)
{
	return 8 + ((len + 7) & ~7u);
}

static struct dp_loop_ring *ring_map(int fd)
{
	void *p = mmap(NULL, sizeof(struct dp_loop_ring), PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       0);

	return p == MAP_FAILED ? NULL : p;
}

static void ring_unmap(struct dp_loop_ring *r)
{
	if (r)
		munmap(r, sizeof(*r));
}

/*
 * The path of block's listener, a file in the device's directory: connect()
 * needs write permission on it, as the device's other files need, and only
 * those who may write the directory can put a file there. (A name in the
 * abstract namespace, as before, was open to any process of the network
 * namespace: one could bind a block's name before its owner and be handed
 * the frames meant for it.) Returns the address length.
 */
static socklen_t block_addr(const struct dp_peer_loop *pl, uint32_t block, struct sockaddr_un *a)
{
	int n;

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	n = snprintf(a->sun_path, sizeof(a->sun_path), "%s/loop-%u", pl->dir, block);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + (size_t)n + 1);
}

static uint64_t coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * How far coarse_ns() may lag the fine clock: two of its ticks (20 ms if
 * the tick is unknown). One tick in principle; on this machine (a VM,
 * HZ 250) it trailed by up to 8.0 ms, two ticks, when the tick was late.
 */
static uint64_t coarse_lag_ns(void)
{
	struct timespec res;

	if (clock_getres(CLOCK_MONOTONIC_COARSE, &res))
		return 20000000ull;
	return 2 * ((uint64_t)res.tv_sec * 1000000000ull + (uint64_t)res.tv_nsec);
}

int dp_peer_loop_init(struct dp_peer_loop *pl, const char *dir, _Atomic uint32_t *bells,
		      uint32_t frame_max)
{
	char path[DP_PEER_DIR_MAX + 8];
	struct stat st;

	memset(pl, 0, sizeof(*pl));
	pl->ep_fd = -1;
	if (bells && (!dir || !*dir))
		return -EINVAL;
	if (bells && (size_t)snprintf(pl->dir, sizeof(pl->dir), "%s", dir) >= sizeof(pl->dir))
		return -ENAMETOOLONG;
	/* who may connect is who may write the device's files */
	snprintf(path, sizeof(path), "%s/bells", pl->dir);
	pl->sock_mode = bells && !stat(path, &st) ? (unsigned)st.st_mode & 0666 : 0600;
	pl->pid = (int)getpid();
	pl->bells = bells;
	pl->frame_max = frame_max;
	pl->lag_ns = coarse_lag_ns();
	if (!bells)
		return 0;
	pl->to_fd = malloc(DP_PEER_BLOCKS * sizeof(int));
	pl->to_ring = calloc(DP_PEER_BLOCKS, sizeof(*pl->to_ring));
	pl->to_owner = calloc(DP_PEER_BLOCKS, sizeof(*pl->to_owner));
	pl->to_retry_ns = calloc(DP_PEER_BLOCKS, sizeof(*pl->to_retry_ns));
	pl->to_refused = calloc(DP_PEER_BLOCKS, sizeof(*pl->to_refused));
	pl->to_written = calloc(DP_PEER_BLOCKS, sizeof(*pl->to_written));
	if (pl->to_fd)
		for (unsigned b = 0; b < DP_PEER_BLOCKS; b++)
			pl->to_fd[b] = -1;
	if (!pl->to_fd || !pl->to_ring || !pl->to_owner || !pl->to_retry_ns || !pl->to_refused ||
	    !pl->to_written) {
		dp_peer_loop_fini(pl);
		return -ENOMEM;
	}
	pl->ep_fd = epoll_create1(EPOLL_CLOEXEC);
	if (pl->ep_fd < 0) {
		int err = -errno;

		dp_peer_loop_fini(pl);
		return err;
	}
	return 0;
}

static void drop_conn(struct dp_peer_loop *pl, unsigned i);

static void disconnect(struct dp_peer_loop *pl, uint32_t block)
{
	close(pl->to_fd[block]);
	pl->to_fd[block] = -1;
	ring_unmap(pl->to_ring[block]);
	pl->to_ring[block] = NULL;
}

void dp_peer_loop_fini(struct dp_peer_loop *pl)
{
	for (unsigned i = 0; pl->bells && i < pl->nown; i++) {
		struct sockaddr_un a;
		struct stat st;

		close(pl->listen_fd[i]); /* without bells no socket was bound */
		/* the caller holds the block until we return, so a file at its
		 * name is ours, unless the device was deleted and added again
		 * (a new owner's, in a new lock file) or we are a forked child
		 * (the parent's): the file's identity and our pid say which */
		block_addr(pl, pl->own[i], &a);
		if (pl->pid == (int)getpid() && !lstat(a.sun_path, &st) &&
		    (uint64_t)st.st_ino == pl->listen_ino[i] && (uint64_t)st.st_dev == pl->listen_dev[i])
			unlink(a.sun_path);
	}
	for (unsigned i = 0; i < pl->nconn; i++)
		if (pl->conn[i] >= 0)
			drop_conn(pl, i); /* a sender left behind hears of it */
	if (pl->to_fd && pl->to_ring)
		for (unsigned b = 0; b < DP_PEER_BLOCKS; b++)
			if (pl->to_fd[b] >= 0)
				disconnect(pl, b);
	if (pl->ep_fd >= 0)
		close(pl->ep_fd);
	free(pl->to_fd);
	free(pl->to_ring);
	free(pl->to_owner);
	free(pl->to_retry_ns);
	free(pl->to_refused);
	free(pl->to_written);
	memset(pl, 0, sizeof(*pl));
	pl->ep_fd = -1;
}

static int watch(struct dp_peer_loop *pl, int fd)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};

	return epoll_ctl(pl->ep_fd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

bool dp_peer_loop_owns(const struct dp_peer_loop *pl, uint32_t block)
{
	for (unsigned i = 0; i < pl->nown; i++)
		if (pl->own[i] == block)
			return true;
	return false;
}

/*
 * The block is ours (its lock), so a file already at its name is its last
 * owner's, left by an exit that did not close the device (a kill, or a
 * program that never closes it): replaced. A sender still connected to
 * that owner is hung up on when the kernel closes its socket. Its mode is
 * set before listen(), before anyone can connect; slot i of pl keeps the
 * file's identity for fini.
 */
static int bind_listener(struct dp_peer_loop *pl, unsigned i, int fd, const struct sockaddr_un *a,
			 socklen_t len)
{
	struct stat st;
	int err;

	if (unlink(a->sun_path) && errno != ENOENT)
		return -errno;
	if (bind(fd, (const struct sockaddr *)a, len))
		return -errno;
	if (chmod(a->sun_path, pl->sock_mode) || lstat(a->sun_path, &st) || listen(fd, 64)) {
		err = -errno;
		unlink(a->sun_path);
		return err;
	}
	pl->listen_ino[i] = (uint64_t)st.st_ino;
	pl->listen_dev[i] = (uint64_t)st.st_dev;
	return 0;
}

int dp_peer_loop_own(struct dp_peer_loop *pl, const uint32_t *blocks, unsigned n)
{
	for (unsigned k = 0; k < n; k++) {
		struct sockaddr_un a;
		socklen_t len;
		int fd, err;

		if (dp_peer_loop_owns(pl, blocks[k]))
			continue;
		if (pl->nown == DP_PEER_MAX_BLOCKS || blocks[k] >= DP_PEER_BLOCKS)
			return -ENOSPC;
		if (!pl->bells) { /* no loopback between processes: only remember it */
			pl->own[pl->nown++] = blocks[k];
			continue;
		}
		fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		len = block_addr(pl, blocks[k], &a);
		err = bind_listener(pl, pl->nown, fd, &a, len);
		if (err) {
			close(fd);
			return err;
		}
		err = watch(pl, fd);
		if (err) {
			close(fd);
			unlink(a.sun_path);
			return err;
		}
		pl->listen_fd[pl->nown] = fd;
		pl->own[pl->nown++] = blocks[k];
		/* what was rung or asked for the block's last owner means nothing
		 * to us; its senders see a new owner and connect again */
		atomic_store_explicit(dp_bell(pl, blocks[k], DP_BELL_RUNG), 0, memory_order_relaxed);
		atomic_store_explicit(dp_bell(pl, blocks[k], DP_BELL_ASLEEP), 0, memory_order_relaxed);
		atomic_fetch_add_explicit(dp_bell(pl, blocks[k], DP_BELL_OWNER), 1,
					  memory_order_release);
	}
	return 0;
}

/* Hand a new connection its ring: a sealed-size memfd, over the socket. */
static int send_ring(int fd, struct dp_loop_ring **ring)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = {0}, tag = 'R';
	struct iovec iov = {.iov_base = &tag, .iov_len = 1};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	int mfd = memfd_create("uroce-loop", MFD_CLOEXEC | MFD_ALLOW_SEALING), err = 0;

	if (mfd < 0)
		return -errno;
	if (ftruncate(mfd, sizeof(struct dp_loop_ring)) ||
	    fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) ||
	    !(*ring = ring_map(mfd))) {
		err = -errno;
		close(mfd);
		return err ? err : -ENOMEM;
	}
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &mfd, sizeof(int));
	if (sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) != 1)
		err = -errno;
	close(mfd);
	if (err) {
		ring_unmap(*ring);
		*ring = NULL;
	}
	return err;
}

static int connect_to(struct dp_peer_loop *pl, uint32_t block)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), err;
	struct sockaddr_un a;
	socklen_t len = block_addr(pl, block, &a);

	if (fd < 0)
		return -errno;
	/* the owner first, then its listener: a listener bound after we read
	 * the word is newer still, and we connect to it again next time */
	pl->to_owner[block] =
	    atomic_load_explicit(dp_bell(pl, block, DP_BELL_OWNER), memory_order_acquire);
	/* a unix listener answers at once, refuses, or has its accept queue
	 * full (EAGAIN: the frame waits in the sender and we try again) */
	if (connect(fd, (struct sockaddr *)&a, len)) {
		err = -errno;
		close(fd);
		return err;
	}
	err = send_ring(fd, &pl->to_ring[block]);
	if (err) {
		close(fd);
		return err == -EAGAIN ? -ENOBUFS : err;
	}
	pl->to_fd[block] = fd;
	pl->to_written[block] = 0;
	atomic_store_explicit(dp_bell(pl, block, DP_BELL_NEW), 1, memory_order_release);
	return 0;
}

/* Whether the owner that hung up on us said it refused us (FULL_NOTE). */
static bool told_refused(int fd)
{
	char note = 0;

	return recv(fd, &note, 1, MSG_DONTWAIT) == 1 && note == FULL_NOTE;
}

/* A ring full for good or for now: the receiver is gone (its socket hung
 * up: -ECONNRESET), refused us (it has DP_PEER_MAX_CONNS senders: -EUSERS),
 * or is behind (-EAGAIN). */
static int ring_full(struct dp_peer_loop *pl, uint32_t block)
{
	struct pollfd p = {.fd = pl->to_fd[block], .events = 0};

	if (poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR))) {
		pl->to_refused[block] = told_refused(pl->to_fd[block]);
		/* an owner refuses before it reads: what we wrote meanwhile is
		 * lost, and said so (an owner that leaves may have read some) */
		if (pl->to_refused[block])
			pl->tx_unread += pl->to_written[block];
		disconnect(pl, block);
		/* an owner that refused us (no slot left) would refuse a new
		 * connection too, after we had written into its ring */
		pl->to_retry_ns[block] = coarse_ns() + REFUSED_NS;
		return pl->to_refused[block] ? -EUSERS : -ECONNRESET;
	}
	return -EAGAIN;
}

static int ring_put(struct dp_loop_ring *r, const uint8_t *frame, uint32_t len, uint32_t stamp)
{
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
	uint32_t need = record_bytes(len), off = (uint32_t)(head % RING_BYTES);
	uint32_t to_end = RING_BYTES - off;
	uint64_t used = head - tail;

	/* a receiver's tail past our head is not believed: full */
	if (used > RING_BYTES || RING_BYTES - used < (need > to_end ? to_end + need : need))
		return -EAGAIN;
	if (need > to_end) {
		memcpy(r->data + off, &(uint32_t){WRAP_MARK}, 4);
		head += to_end;
		off = 0;
	}
	memcpy(r->data + off, &len, 4);
	memcpy(r->data + off + 4, &stamp, 4);
	memcpy(r->data + off + 8, frame, len);
	atomic_store_explicit(&r->head, head + need, memory_order_release);
	return 0;
}

int dp_peer_loop_send(struct dp_peer_loop *pl, uint32_t block, const uint8_t *frame, uint32_t len)
{
	int err;

	if (!pl->bells || block >= DP_PEER_BLOCKS || len > pl->frame_max)
		return -EHOSTUNREACH;
	/* a new owner of the block (the last one exited): connect to it */
	if (pl->to_fd[block] >= 0 &&
	    pl->to_owner[block] !=
		atomic_load_explicit(dp_bell(pl, block, DP_BELL_OWNER), memory_order_relaxed))
		disconnect(pl, block);
	if (pl->to_fd[block] < 0) {
		/* hung up on by this owner a moment ago: not yet again */
		if (pl->to_retry_ns[block] &&
		    pl->to_owner[block] == atomic_load_explicit(dp_bell(pl, block, DP_BELL_OWNER),
								memory_order_relaxed) &&
		    coarse_ns() < pl->to_retry_ns[block])
			return pl->to_refused[block] ? -EUSERS : -ECONNRESET;
		pl->to_retry_ns[block] = 0;
		pl->to_refused[block] = false;
		err = connect_to(pl, block);
		if (err)
			return err; /* nobody holds the block: ECONNREFUSED, ENOENT */
	}
	if (ring_put(pl->to_ring[block], frame, len, dp_rx_stamp(coarse_ns())))
		return ring_full(pl, block);
	pl->to_written[block]++;
	/* after the frame: a receiver that sees the bell finds it */
	atomic_store_explicit(dp_bell(pl, block, DP_BELL_RUNG), 1, memory_order_release);
	/* the bell before the look at its sleep flag (dp_peer_loop_arm fences
	 * the other way): one of us sees the other */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(dp_bell(pl, block, DP_BELL_ASLEEP), memory_order_relaxed) &&
	    atomic_exchange_explicit(dp_bell(pl, block, DP_BELL_ASLEEP), 0, memory_order_relaxed) &&
	    send(pl->to_fd[block], "w", 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno != EAGAIN) {
		/* the receiver had hung up on us, and the wake-up was ours to
		 * give: a new connection wakes it (its listener). An owner that
		 * refused us (too slow with our ring to poison it) read none of
		 * what we wrote: counted as refused, this frame by our caller;
		 * one that left may have read some, lost as on a wire */
		bool refused = told_refused(pl->to_fd[block]);
		uint32_t unread = pl->to_written[block] - 1;

		disconnect(pl, block);
		connect_to(pl, block);
		if (refused) {
			pl->tx_unread += unread;
			return -EUSERS;
		}
	}
	return 0;
}

/* The ring a new sender hands over with its first message: 0 and *ring,
 * -EAGAIN when the message has not come yet, or -EPROTO when it holds no
 * ring we can trust (not a uroce sender). */
static int recv_ring(int fd, struct dp_loop_ring **ring)
{
	char cbuf[CMSG_SPACE(sizeof(int))], tag;
	struct iovec iov = {.iov_base = &tag, .iov_len = 1};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf)};
	struct cmsghdr *c;
	struct stat st;
	int mfd = -1, seals;

	*ring = NULL;
	if (recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) < 0)
		return -EAGAIN; /* not yet (or gone: the next look at its socket says) */
	/* the first fd passed is the ring; any other is closed, never kept */
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t k = 0; k < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); k++) {
			int passed;

			memcpy(&passed, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
			if (mfd < 0)
				mfd = passed;
			else
				close(passed);
		}
	}
	/* a ring of the size we read, which its sender cannot shrink under us */
	seals = mfd >= 0 ? fcntl(mfd, F_GET_SEALS) : -1;
	if (seals >= 0 && (seals & F_SEAL_SHRINK) && !fstat(mfd, &st) &&
	    (uint64_t)st.st_size == sizeof(struct dp_loop_ring))
		*ring = ring_map(mfd);
	if (mfd >= 0)
		close(mfd);
	return *ring ? 0 : -EPROTO;
}

/* A sender's ring, once its first message came; a sender that sent none
 * we can trust is hung up on. */
static void take_ring(struct dp_peer_loop *pl, unsigned i)
{
	if (recv_ring(pl->conn[i], &pl->conn_ring[i]) == -EPROTO) {
		close(pl->conn[i]);
		pl->conn[i] = -1;
	}
	pl->conn_tail[i] = 0; /* a new ring starts empty */
}

/* A ring nobody will read: a tail past its head reads as full to its
 * sender, who then finds the socket hung up and counts what it sends as
 * dropped, instead of filling 4 MB nobody reads. */
static void poison(struct dp_loop_ring *r)
{
	atomic_store_explicit(&r->tail,
			      atomic_load_explicit(&r->head, memory_order_relaxed) + RING_BYTES + 1,
			      memory_order_release);
}

static void accept_all(struct dp_peer_loop *pl, int lfd)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct dp_loop_ring *r;

		if (fd < 0)
			return;
		if (pl->nconn == DP_PEER_MAX_CONNS || watch(pl, fd)) {
			/* no room for another sender: refuse it, and its ring
			 * (which may be a moment behind its connection) */
			struct pollfd p = {.fd = fd, .events = POLLIN};

			if (recv_ring(fd, &r) == -EAGAIN && poll(&p, 1, 1) == 1)
				recv_ring(fd, &r);
			if (r) {
				poison(r);
				ring_unmap(r);
			}
			/* told, the sender counts its frames as refused, not
			 * as sent to nobody */
			(void)!send(fd, &(char){FULL_NOTE}, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
			close(fd);
			continue;
		}
		pl->conn_ring[pl->nconn] = NULL;
		pl->conn[pl->nconn++] = fd;
		take_ring(pl, pl->nconn - 1);
	}
}

static void drop_conn(struct dp_peer_loop *pl, unsigned i)
{
	/* a sender still alive must not go on filling a ring nobody reads */
	if (pl->conn_ring[i])
		poison(pl->conn_ring[i]);
	close(pl->conn[i]); /* epoll forgets a closed fd */
	pl->conn[i] = -1;
	ring_unmap(pl->conn_ring[i]);
	pl->conn_ring[i] = NULL;
}

/* Frames from one sender's ring, up to max, read in place. */
static unsigned rx_ring(struct dp_peer_loop *pl, unsigned i, uroce_dp_rx_fn fn, void *arg,
			unsigned max, bool *more, uint64_t now)
{
	struct dp_loop_ring *r = pl->conn_ring[i];
	uint64_t tail = pl->conn_tail[i];
	uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
	unsigned got = 0;

	/* the sender's word is checked before use, as a wire's frames are */
	if (head - tail > RING_BYTES) {
		drop_conn(pl, i);
		return 0;
	}
	while (tail != head && got < max) {
		uint32_t off = (uint32_t)(tail % RING_BYTES), len, stamp;

		memcpy(&len, r->data + off, 4);
		if (len == WRAP_MARK && RING_BYTES - off <= head - tail) {
			tail += RING_BYTES - off;
			continue;
		}
		if (len > pl->frame_max || off + record_bytes(len) > RING_BYTES ||
		    record_bytes(len) > head - tail) {
			drop_conn(pl, i);
			return got;
		}
		memcpy(&stamp, r->data + off + 4, 4);
		/* the sender's coarse clock runs behind: counted only if it
		 * waited 10 ms whatever the clock's lag hid */
		pl->rx_waited += dp_rx_stamp_late(stamp, now - pl->lag_ns);
		fn(arg, r->data + off + 8, len);
		tail += record_bytes(len);
		got++;
	}
	pl->conn_tail[i] = tail;
	atomic_store_explicit(&r->tail, tail, memory_order_release);
	if (tail != head)
		*more = true;
	return got;
}

/* A sender's socket: its wake-up bytes read, its ring taken, its hang-up
 * seen (after its last frames were read). */
static void look_at_socket(struct dp_peer_loop *pl, unsigned i)
{
	char buf[64];
	ssize_t n;

	if (!pl->conn_ring[i]) {
		take_ring(pl, i);
		return;
	}
	while ((n = recv(pl->conn[i], buf, sizeof(buf), MSG_DONTWAIT)) > 0)
		;
	if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
		uint64_t head = atomic_load_explicit(&pl->conn_ring[i]->head, memory_order_acquire);

		if (head == pl->conn_tail[i])
			drop_conn(pl, i);
		else
			pl->recheck = true; /* its last frames first, then the hang-up again */
	}
}

/* The connections still open, closed up. */
static void compact(struct dp_peer_loop *pl)
{
	unsigned kept = 0;

	for (unsigned i = 0; i < pl->nconn; i++)
		if (pl->conn[i] >= 0) {
			pl->conn_ring[kept] = pl->conn_ring[i];
			pl->conn_tail[kept] = pl->conn_tail[i];
			pl->conn[kept++] = pl->conn[i];
		}
	pl->nconn = kept;
}

unsigned dp_peer_loop_rx(struct dp_peer_loop *pl, uroce_dp_rx_fn fn, void *arg, unsigned max,
			 uint64_t now)
{
	bool sockets = pl->recheck, more = false;
	unsigned got = 0;

	/* no slot for a new sender: first see who has gone, so that nobody is
	 * refused for a slot a sender that left still holds */
	if (pl->nconn == DP_PEER_MAX_CONNS) {
		for (unsigned i = 0; i < pl->nconn; i++)
			if (pl->conn[i] >= 0)
				look_at_socket(pl, i);
		compact(pl);
		sockets = true;
	}
	for (unsigned i = 0; i < pl->nown; i++) {
		uint32_t b = pl->own[i];

		if (atomic_load_explicit(dp_bell(pl, b, DP_BELL_RUNG), memory_order_relaxed))
			atomic_exchange_explicit(dp_bell(pl, b, DP_BELL_RUNG), 0,
						 memory_order_acquire);
		if (atomic_load_explicit(dp_bell(pl, b, DP_BELL_NEW), memory_order_relaxed) &&
		    atomic_exchange_explicit(dp_bell(pl, b, DP_BELL_NEW), 0, memory_order_acquire))
			accept_all(pl, pl->listen_fd[i]);
	}
	pl->recheck = false;
	pl->more = false;
	if (sockets)
		for (unsigned i = 0; i < pl->nown; i++)
			accept_all(pl, pl->listen_fd[i]);
	for (unsigned i = 0; i < pl->nconn; i++) {
		if (pl->conn[i] >= 0 && (sockets || !pl->conn_ring[i]))
			look_at_socket(pl, i);
		if (pl->conn[i] >= 0 && pl->conn_ring[i] && got < max)
			got += rx_ring(pl, i, fn, arg, max - got, &more, now);
	}
	compact(pl);
	/* the budget ran out with frames left: no bell will say so again */
	if (more || got == max)
		pl->more = true;
	return got;
}

void dp_peer_loop_recheck(struct dp_peer_loop *pl)
{
	pl->recheck = true;
}

bool dp_peer_loop_arm(struct dp_peer_loop *pl)
{
	if (!pl->bells)
		return true;
	for (unsigned i = 0; i < pl->nown; i++)
		atomic_store_explicit(dp_bell(pl, pl->own[i], DP_BELL_ASLEEP), 1,
				      memory_order_relaxed);
	/* our flags before our look at the bells, as a sender rings before it
	 * looks at our flag: one of us sees the other */
	atomic_thread_fence(memory_order_seq_cst);
	if (dp_peer_loop_maybe(pl)) {
		dp_peer_loop_disarm(pl);
		return false;
	}
	return true;
}

void dp_peer_loop_disarm(struct dp_peer_loop *pl)
{
	for (unsigned i = 0; pl->bells && i < pl->nown; i++)
		if (atomic_load_explicit(dp_bell(pl, pl->own[i], DP_BELL_ASLEEP),
					 memory_order_relaxed))
			atomic_store_explicit(dp_bell(pl, pl->own[i], DP_BELL_ASLEEP), 0,
					      memory_order_relaxed);
}
