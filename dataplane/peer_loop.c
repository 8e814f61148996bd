/* SPDX-License-Identifier: BSD-2-Clause */
/* Loopback between processes of one device: see peer_loop.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "peer_loop.h"

#define SEND_BUF_BYTES (16 << 20) /* frames in flight to one receiver */

static _Atomic uint32_t *bell(struct dp_peer_loop *pl, uint32_t block)
{
	return &pl->bells[(size_t)block * DP_BELL_STRIDE];
}

/* The abstract name of block's listener; returns the address length. */
static socklen_t block_addr(const struct dp_peer_loop *pl, uint32_t block, struct sockaddr_un *a)
{
	int n;

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	/* sun_path[0] stays 0: the abstract namespace, no file to clean up */
	n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "uroce-loop/%s/%u", pl->device,
		     block);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

int dp_peer_loop_init(struct dp_peer_loop *pl, const char *device, _Atomic uint32_t *bells,
		      uint32_t frame_max)
{
	memset(pl, 0, sizeof(*pl));
	snprintf(pl->device, sizeof(pl->device), "%s", device);
	pl->bells = bells;
	pl->frame_max = frame_max;
	pl->ep_fd = -1;
	if (!bells)
		return 0;
	pl->ep_fd = epoll_create1(EPOLL_CLOEXEC);
	pl->rx_buf = malloc(frame_max);
	pl->to_fd = malloc(DP_PEER_BLOCKS * sizeof(int));
	if (pl->ep_fd < 0 || !pl->rx_buf || !pl->to_fd) {
		dp_peer_loop_fini(pl);
		return -ENOMEM;
	}
	for (unsigned b = 0; b < DP_PEER_BLOCKS; b++)
		pl->to_fd[b] = -1;
	return 0;
}

void dp_peer_loop_fini(struct dp_peer_loop *pl)
{
	for (unsigned i = 0; i < pl->nown; i++)
		close(pl->listen_fd[i]);
	for (unsigned i = 0; i < pl->nconn; i++)
		close(pl->conn[i]);
	if (pl->to_fd)
		for (unsigned b = 0; b < DP_PEER_BLOCKS; b++)
			if (pl->to_fd[b] >= 0)
				close(pl->to_fd[b]);
	if (pl->ep_fd >= 0)
		close(pl->ep_fd);
	free(pl->rx_buf);
	free(pl->to_fd);
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
		/* the block is ours (its lock), so a name still bound is a
		 * leftover of nobody: the kernel frees it with its socket */
		if (bind(fd, (struct sockaddr *)&a, len) || listen(fd, 64)) {
			err = -errno;
			close(fd);
			return err;
		}
		err = watch(pl, fd);
		if (err) {
			close(fd);
			return err;
		}
		pl->listen_fd[pl->nown] = fd;
		pl->own[pl->nown++] = blocks[k];
		/* a bell rung for the block's last owner means nothing to us */
		atomic_store_explicit(bell(pl, blocks[k]), 0, memory_order_relaxed);
	}
	return 0;
}

static int connect_to(struct dp_peer_loop *pl, uint32_t block)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0),
	    buf = SEND_BUF_BYTES, err;
	struct sockaddr_un a;
	socklen_t len = block_addr(pl, block, &a);

	if (fd < 0)
		return -errno;
	/* beyond net.core.wmem_max where allowed (CAP_NET_ADMIN) */
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof(buf)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	/* a unix listener answers at once, refuses, or has its accept queue
	 * full (EAGAIN: the frame waits in the sender and we try again) */
	if (connect(fd, (struct sockaddr *)&a, len)) {
		err = -errno;
		close(fd);
		return err;
	}
	pl->to_fd[block] = fd;
	return fd;
}

int dp_peer_loop_send(struct dp_peer_loop *pl, uint32_t block, const uint8_t *frame, uint32_t len)
{
	int fd;

	if (!pl->bells || block >= DP_PEER_BLOCKS)
		return -EHOSTUNREACH;
	fd = pl->to_fd[block];
	if (fd < 0) {
		fd = connect_to(pl, block);
		if (fd < 0)
			return fd; /* nobody holds the block: ECONNREFUSED, ENOENT */
	}
	if (send(fd, frame, len, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)len) {
		int err = errno;

		if (err != EAGAIN) {
			/* the owner went away; its block may find a new one */
			close(fd);
			pl->to_fd[block] = -1;
		}
		return -err;
	}
	/* after the write: a receiver that sees the bell finds the frame */
	atomic_store_explicit(bell(pl, block), 1, memory_order_release);
	return 0;
}

static void accept_all(struct dp_peer_loop *pl, int lfd)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0)
			return;
		if (pl->nconn == DP_PEER_MAX_CONNS || watch(pl, fd)) {
			close(fd); /* the sender counts its frames as dropped */
			continue;
		}
		pl->conn[pl->nconn++] = fd;
	}
}

/* Frames from one sender, up to max; the connection closes when it did. */
static unsigned rx_conn(struct dp_peer_loop *pl, unsigned i, uroce_dp_rx_fn fn, void *arg,
			unsigned max, bool *more)
{
	unsigned got = 0;

	while (got < max) {
		ssize_t n = recv(pl->conn[i], pl->rx_buf, pl->frame_max, MSG_DONTWAIT | MSG_TRUNC);

		if (n > 0 && (size_t)n <= pl->frame_max) {
			fn(arg, pl->rx_buf, (uint32_t)n);
			got++;
			continue;
		}
		if (n > 0)
			continue; /* larger than any frame of ours: not one */
		if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			close(pl->conn[i]); /* epoll forgets a closed fd */
			pl->conn[i] = -1;
		}
		return got;
	}
	*more = true;
	return got;
}

unsigned dp_peer_loop_rx(struct dp_peer_loop *pl, uroce_dp_rx_fn fn, void *arg, unsigned max)
{
	bool rung = pl->recheck, more = false;
	unsigned got = 0, kept = 0;

	for (unsigned i = 0; i < pl->nown; i++)
		if (atomic_load_explicit(bell(pl, pl->own[i]), memory_order_relaxed) &&
		    atomic_exchange_explicit(bell(pl, pl->own[i]), 0, memory_order_acquire))
			rung = true;
	if (!rung)
		return 0;
	pl->recheck = false;
	for (unsigned i = 0; i < pl->nown; i++)
		accept_all(pl, pl->listen_fd[i]);
	for (unsigned i = 0; i < pl->nconn && got < max; i++)
		got += rx_conn(pl, i, fn, arg, max - got, &more);
	for (unsigned i = 0; i < pl->nconn; i++)
		if (pl->conn[i] >= 0)
			pl->conn[kept++] = pl->conn[i];
	pl->nconn = kept;
	/* the budget ran out with frames left: no bell will say so again */
	if (more || got == max)
		pl->recheck = true;
	return got;
}

void dp_peer_loop_recheck(struct dp_peer_loop *pl)
{
	pl->recheck = true;
}
