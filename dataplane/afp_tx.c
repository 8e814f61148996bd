/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Transmit over af_packet through a packet socket of our own, not a TX ring.
 *
 * DPDK's af_packet PMD gave its TX ring as many slots as its RX ring (one
 * framecnt), and the RX ring needs thousands: a receiver starved of CPU on
 * two cores must hold a window or more (AFP_FRAMECNT in port.c). A
 * ping-pong moves one slot per frame, so each frame went into a TX slot
 * untouched for 4095 frames, cold in every cache, and the kernel read it
 * from there. With this socket, ib_write_lat -s 2 over veth took 5.4-6.2 us
 * against 6.6-7.0 through the ring (4 of 4 alternating rounds, still on the
 * PMD's receive ring), and one ib_write_bw pair ran up to a third faster.
 * The kernel copies each frame from the mbuf into an skb.
 *
 * The socket is bound to the interface with protocol 0, so the kernel
 * delivers it nothing, and bypasses the qdisc (so the receiving socket,
 * afp_rx.c, never sees our frames either).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/if_packet.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_mbuf.h>

#include "afp_rx.h"
#include "afp_tx.h"

/* enough for a burst of 4 KB frames on a NIC that frees them only when sent */
#define AFP_TX_SNDBUF (4 << 20)
#define AFP_TX_MAX 128 /* a transmit flush's most (DP_BURST frames and as many held back) */

int dp_afp_tx_open(const char *netdev)
{
	struct sockaddr_ll sll;
	int fd = dp_afp_socket(netdev, &sll), one = 1, sndbuf = AFP_TX_SNDBUF;

	if (fd < 0)
		return fd;
	if (setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&sll, sizeof(sll))) {
		int err = -errno;

		close(fd);
		return err;
	}
	/* past wmem_max where we may (root), else what the kernel allows */
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	return fd;
}

unsigned dp_afp_tx(int fd, struct rte_mbuf **m, unsigned n)
{
	struct mmsghdr msg[AFP_TX_MAX];
	struct iovec iov[AFP_TX_MAX];
	unsigned done = 0, sent = 0;

	if (n > AFP_TX_MAX) {
		rte_pktmbuf_free_bulk(m + AFP_TX_MAX, n - AFP_TX_MAX);
		n = AFP_TX_MAX;
	}
	for (unsigned i = 0; i < n; i++) {
		iov[i].iov_base = rte_pktmbuf_mtod(m[i], void *);
		iov[i].iov_len = rte_pktmbuf_data_len(m[i]);
		msg[i].msg_hdr = (struct msghdr){.msg_iov = &iov[i], .msg_iovlen = 1};
	}
	for (int tries = 0; done < n && tries < 8;) {
		int r = sendmmsg(fd, msg + done, n - done, MSG_DONTWAIT);

		if (r > 0) {
			done += (unsigned)r;
			sent += (unsigned)r;
		} else if (errno == EAGAIN || errno == ENOBUFS || errno == EINTR) {
			tries++; /* a NIC still holding the last burst: passes in microseconds */
		} else {
			done++; /* the kernel refuses this frame (interface down): drop it alone */
		}
	}
	rte_pktmbuf_free_bulk(m, n);
	return sent;
}
