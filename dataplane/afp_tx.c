/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Transmit over af_packet through a packet socket and a small TX ring of
 * our own.
 *
 * DPDK's af_packet PMD gave its TX ring as many slots as its RX ring (one
 * framecnt), and the RX ring needs thousands: a receiver starved of CPU on
 * two cores must hold a window or more (AFP_FRAMECNT in port.c). A
 * ping-pong moves one slot per frame, so each frame went into a TX slot
 * untouched for 4095 frames, cold in every cache, and the kernel read it
 * from there. A plain socket fixed that (ib_write_lat -s 2 over veth 5.4-6.2
 * us against 6.6-7.0 through the PMD's ring), but sendmmsg() pays per
 * frame for a msghdr, a device lookup and a copy from user memory: a third
 * of the CPU in a UCX stream_bw profile. Our ring is two flushes deep
 * (AFP_TX_SLOTS), so its slots stay warm; a flush copies its frames into
 * slots and one send() has the kernel take them all. Against sendmmsg(),
 * 12 interleaved rounds over veth at load 6-16: ib_write_bw -s 65536 a
 * median 729 MB/s against 591 (ahead in 9 rounds of 12), ib_send_bw -s 64
 * 0.40 Mpps against 0.23 (8 of 12), ib_write_lat -s 2 no different; a
 * spread of 2-10x each way, and 2 of 4 in the last rounds (load 6-10).
 *
 * The socket is bound to the interface with protocol 0, so the kernel
 * delivers it nothing, and bypasses the qdisc (so the receiving socket,
 * afp_rx.c, never sees our frames either). Where the kernel refuses the
 * ring, frames go with sendmmsg() as before.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_mbuf.h>

#include "afp_rx.h"
#include "afp_tx.h"

/* enough for a burst of 4 KB frames on a NIC that frees them only when sent */
#define AFP_TX_SNDBUF (4 << 20)
#define AFP_TX_MAX 128 /* a transmit flush's most (DP_BURST frames and as many held back) */
#define AFP_TX_SLOTS (2 * AFP_TX_MAX)
/* where a slot's virtio_net_hdr starts (no PACKET_TX_HAS_OFF); the frame follows it */
#define AFP_TX_DATA TPACKET_ALIGN(sizeof(struct tpacket2_hdr))
#define AFP_TX_FRAME (AFP_TX_DATA + sizeof(struct virtio_net_hdr))

static int ring_setup(struct dp_afp_tx *t, uint32_t frame_room)
{
	struct tpacket_req req = {0};
	int version = TPACKET_V2, one = 1;

	t->frame_size = TPACKET_ALIGN(AFP_TX_FRAME + frame_room);
	t->block_size = t->frame_size;
	while (t->block_size % 4096)
		t->block_size += t->frame_size;
	t->frames_per_block = t->block_size / t->frame_size;
	t->frame_count =
	    (AFP_TX_SLOTS + t->frames_per_block - 1) / t->frames_per_block * t->frames_per_block;
	req.tp_block_size = t->block_size;
	req.tp_frame_size = t->frame_size;
	req.tp_block_nr = t->frame_count / t->frames_per_block;
	req.tp_frame_nr = t->frame_count;
	/* A frame the kernel cannot send is skipped, not left to block the
	 * ring. The virtio_net_hdr's hdr_len has the kernel copy the whole
	 * frame into the skb: left in the slot's pages, it would be copied
	 * again into pages of its own on veth (skb_orphan_frags). */
	if (setsockopt(t->fd, SOL_PACKET, PACKET_VERSION, &version, sizeof(version)) ||
	    setsockopt(t->fd, SOL_PACKET, PACKET_LOSS, &one, sizeof(one)) ||
	    setsockopt(t->fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) ||
	    setsockopt(t->fd, SOL_PACKET, PACKET_TX_RING, &req, sizeof(req)))
		return -errno;
	t->map_len = (size_t)req.tp_block_nr * t->block_size;
	t->map = mmap(NULL, t->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd, 0);
	if (t->map == MAP_FAILED) {
		t->map = NULL;
		return -errno;
	}
	return 0;
}

int dp_afp_tx_open(struct dp_afp_tx *t, const char *netdev, uint32_t frame_room)
{
	struct sockaddr_ll sll;
	int fd = dp_afp_socket(netdev, &sll), one = 1, sndbuf = AFP_TX_SNDBUF;

	memset(t, 0, sizeof(*t));
	t->fd = fd;
	if (fd < 0)
		return fd;
	/* A socket with a ring sends only from it, even on sendmmsg(): where
	 * the ring could not be had, start again on a socket without one. */
	if (ring_setup(t, frame_room)) {
		close(fd);
		t->fd = fd = dp_afp_socket(netdev, &sll);
		if (fd < 0)
			return fd;
	}
	if (setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&sll, sizeof(sll))) {
		int err = -errno;

		dp_afp_tx_close(t);
		return err;
	}
	/* past wmem_max where we may (root), else what the kernel allows */
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	return 0;
}

void dp_afp_tx_close(struct dp_afp_tx *t)
{
	if (t->map)
		munmap(t->map, t->map_len);
	if (t->fd >= 0)
		close(t->fd);
	t->map = NULL;
	t->fd = -1;
}

static struct tpacket2_hdr *slot(const struct dp_afp_tx *t, uint32_t i)
{
	return (struct tpacket2_hdr *)(t->map + (size_t)(i / t->frames_per_block) * t->block_size +
				       (size_t)(i % t->frames_per_block) * t->frame_size);
}

/*
 * Copy the frames into free slots, then one send(). A slot is free again
 * once the kernel is done with its frame (on veth, when the frame has been
 * copied to the peer). A frame the kernel could not send yet (no buffer)
 * stays in its slot and goes with the next send(): the kernel sends in slot
 * order and cannot be made to skip one.
 */
static unsigned ring_tx(struct dp_afp_tx *t, struct rte_mbuf **m, unsigned n)
{
	uint32_t room = t->frame_size - AFP_TX_FRAME;
	unsigned queued = 0;

	for (unsigned i = 0; i < n; i++) {
		struct tpacket2_hdr *h = slot(t, t->head);
		uint32_t len = rte_pktmbuf_data_len(m[i]);

		/* a slot given back may carry timestamp flags beside AVAILABLE (0) */
		if (__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) &
		    (TP_STATUS_SEND_REQUEST | TP_STATUS_SENDING | TP_STATUS_WRONG_FORMAT))
			break; /* full: the rest are dropped */
		if (len > room)
			continue;
		*(struct virtio_net_hdr *)((uint8_t *)h + AFP_TX_DATA) =
		    (struct virtio_net_hdr){.hdr_len = (uint16_t)len};
		memcpy((uint8_t *)h + AFP_TX_FRAME, rte_pktmbuf_mtod(m[i], void *), len);
		h->tp_len = (uint32_t)(sizeof(struct virtio_net_hdr) + len);
		__atomic_store_n(&h->tp_status, TP_STATUS_SEND_REQUEST, __ATOMIC_RELEASE);
		if (++t->head == t->frame_count)
			t->head = 0;
		queued++;
	}
	for (int tries = 0; tries < 8; tries++)
		if (send(t->fd, NULL, 0, MSG_DONTWAIT) >= 0 ||
		    (errno != EAGAIN && errno != ENOBUFS && errno != EINTR))
			break;
	rte_pktmbuf_free_bulk(m, n);
	return queued;
}

unsigned dp_afp_tx(struct dp_afp_tx *t, struct rte_mbuf **m, unsigned n)
{
	struct mmsghdr msg[AFP_TX_MAX];
	struct iovec iov[AFP_TX_MAX];
	unsigned done = 0, sent = 0;

	if (n > AFP_TX_MAX) {
		rte_pktmbuf_free_bulk(m + AFP_TX_MAX, n - AFP_TX_MAX);
		n = AFP_TX_MAX;
	}
	if (t->map)
		return ring_tx(t, m, n);
	for (unsigned i = 0; i < n; i++) {
		iov[i].iov_base = rte_pktmbuf_mtod(m[i], void *);
		iov[i].iov_len = rte_pktmbuf_data_len(m[i]);
		msg[i].msg_hdr = (struct msghdr){.msg_iov = &iov[i], .msg_iovlen = 1};
	}
	for (int tries = 0; done < n && tries < 8;) {
		int r = sendmmsg(t->fd, msg + done, n - done, MSG_DONTWAIT);

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
