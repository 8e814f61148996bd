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
#include "udp_gso.h"

/* enough for a burst of 4 KB frames on a NIC that frees them only when sent */
#define AFP_TX_SNDBUF (4 << 20)
#define AFP_TX_MAX 128 /* a transmit flush's most (DP_BURST frames and as many held back) */
#define AFP_TX_SLOTS (2 * AFP_TX_MAX)
/* where a slot's virtio_net_hdr starts (no PACKET_TX_HAS_OFF); the frame follows it */
#define AFP_TX_DATA TPACKET_ALIGN(sizeof(struct tpacket2_hdr))
#define AFP_TX_FRAME (AFP_TX_DATA + sizeof(struct virtio_net_hdr))
/*
 * The fewest frames worth a batch: one longer than the receiver's ring slot
 * costs it a second system call to read it whole (afp_rx.c), which three
 * frames did not repay (docs/dataplane.md).
 */
#define AFP_GSO_MIN 4
/* a slot the kernel has not given back yet */
#define SLOT_BUSY (TP_STATUS_SEND_REQUEST | TP_STATUS_SENDING | TP_STATUS_WRONG_FORMAT)

static int ring_setup(struct dp_afp_tx *t, uint32_t frame_room)
{
	struct tpacket_req req = {0};
	int version = TPACKET_V2, one = 1;

	t->frame_size = TPACKET_ALIGN(AFP_TX_FRAME + frame_room);
	t->block_size = dp_afp_block_size(t->frame_size);
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

/* A socket that sends past the qdisc, bound to `sll`'s interface: 0 or -errno. */
static int bind_sender(int fd, struct sockaddr_ll *sll)
{
	int one = 1, sndbuf = AFP_TX_SNDBUF;

	if (setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)sll, sizeof(*sll)))
		return -errno;
	/* past wmem_max where we may (root), else what the kernel allows */
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	return 0;
}

/* The socket for batches (udp_gso.c): without a ring, with virtio_net_hdr. -1 if not to be had. */
static int open_gso(const char *netdev)
{
	struct sockaddr_ll sll;
	int fd = dp_afp_socket(netdev, &sll), one = 1;

	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) ||
	    bind_sender(fd, &sll)) {
		close(fd);
		return -1;
	}
	return fd;
}

int dp_afp_tx_open(struct dp_afp_tx *t, const char *netdev, uint32_t frame_room, bool gso)
{
	struct sockaddr_ll sll;
	int fd = dp_afp_socket(netdev, &sll), err;

	memset(t, 0, sizeof(*t));
	t->fd = fd;
	t->gso_fd = -1;
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
	err = bind_sender(fd, &sll);
	if (err) {
		dp_afp_tx_close(t);
		return err;
	}
	if (gso)
		t->gso_fd = open_gso(netdev);
	return 0;
}

void dp_afp_tx_close(struct dp_afp_tx *t)
{
	if (t->map)
		munmap(t->map, t->map_len);
	if (t->fd >= 0)
		close(t->fd);
	if (t->gso_fd >= 0)
		close(t->gso_fd);
	t->map = NULL;
	t->fd = t->gso_fd = -1;
}

static struct tpacket2_hdr *slot(const struct dp_afp_tx *t, uint32_t i)
{
	return (struct tpacket2_hdr *)(t->map + (size_t)(i / t->frames_per_block) * t->block_size +
				       (size_t)(i % t->frames_per_block) * t->frame_size);
}

/* Whether the ring still holds frames of its last send (a batch must not pass them). */
static bool ring_behind(struct dp_afp_tx *t)
{
	if (t->ring_behind)
		t->ring_behind = (__atomic_load_n(&slot(t, t->last)->tp_status, __ATOMIC_ACQUIRE) &
				  SLOT_BUSY) != 0;
	return t->ring_behind;
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
		if (__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & SLOT_BUSY)
			break; /* full: the rest are dropped */
		if (len > room)
			continue;
		*(struct virtio_net_hdr *)((uint8_t *)h + AFP_TX_DATA) =
		    (struct virtio_net_hdr){.hdr_len = (uint16_t)len};
		memcpy((uint8_t *)h + AFP_TX_FRAME, rte_pktmbuf_mtod(m[i], void *), len);
		h->tp_len = (uint32_t)(sizeof(struct virtio_net_hdr) + len);
		__atomic_store_n(&h->tp_status, TP_STATUS_SEND_REQUEST, __ATOMIC_RELEASE);
		t->last = t->head;
		if (++t->head == t->frame_count)
			t->head = 0;
		queued++;
	}
	for (int tries = 0; tries < 8; tries++)
		if (send(t->fd, NULL, 0, MSG_DONTWAIT) >= 0 ||
		    (errno != EAGAIN && errno != ENOBUFS && errno != EINTR))
			break;
	if (queued)
		t->ring_behind = true; /* until the kernel has sent what it was given */
	ring_behind(t);
	return queued;
}

/* What one message of a GSO flush carries: a frame alone, or a batch of them. */
struct gso_msg {
	struct virtio_net_hdr vh;
	uint8_t hdr[DP_GSO_MAX_HDR];
	unsigned frames;
};

/*
 * Plan m[0..n) as messages: each run of AFP_GSO_MIN or more frames that can share a batch
 * (udp_gso.h) becomes one, with its header in msg->hdr and its frames'
 * payloads after it; any other frame goes alone. Returns the number of
 * messages.
 */
static unsigned gso_plan(struct rte_mbuf **m, unsigned n, struct gso_msg *msg, struct mmsghdr *mh,
			 struct iovec *iov)
{
	unsigned nmsg = 0, niov = 0;

	for (unsigned i = 0; i < n;) {
		const uint8_t *a = rte_pktmbuf_mtod(m[i], const uint8_t *);
		uint32_t alen = rte_pktmbuf_data_len(m[i]), payload;
		unsigned hlen = dp_gso_lead(a, alen), k = 1;
		struct gso_msg *g = &msg[nmsg];

		payload = alen - hlen;
		while (hlen && i + k < n && k < DP_GSO_MAX_SEGS) {
			const uint8_t *b = rte_pktmbuf_mtod(m[i + k], const uint8_t *);
			uint32_t blen = rte_pktmbuf_data_len(m[i + k]);

			/* IPv4's total length is 16 bits */
			if (!dp_gso_follows(a, alen, b, blen, hlen, k) ||
			    28 + payload + (blen - hlen) > 0xffff)
				break;
			payload += blen - hlen;
			k++;
			if (blen < alen)
				break; /* the short one ends a batch */
		}
		if (k < AFP_GSO_MIN)
			k = 1;
		mh[nmsg].msg_hdr = (struct msghdr){.msg_iov = &iov[niov]};
		iov[niov++] = (struct iovec){&g->vh, sizeof(g->vh)};
		if (k == 1) {
			g->vh = (struct virtio_net_hdr){.hdr_len = (uint16_t)alen};
			iov[niov++] = (struct iovec){(void *)a, alen};
		} else {
			dp_gso_batch_header(g->hdr, a, hlen, payload);
			g->vh = (struct virtio_net_hdr){
			    .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
			    .gso_type = VIRTIO_NET_HDR_GSO_UDP_L4,
			    .hdr_len = (uint16_t)hlen,
			    .gso_size = (uint16_t)(alen - hlen),
			    .csum_start = (uint16_t)(hlen - 8),
			    .csum_offset = 6,
			};
			iov[niov++] = (struct iovec){g->hdr, hlen};
			for (unsigned j = 0; j < k; j++)
				iov[niov++] = (struct iovec){
				    rte_pktmbuf_mtod_offset(m[i + j], uint8_t *, hlen),
				    rte_pktmbuf_data_len(m[i + j]) - hlen};
		}
		mh[nmsg].msg_hdr.msg_iovlen = (size_t)(&iov[niov] - mh[nmsg].msg_hdr.msg_iov);
		g->frames = k;
		nmsg++;
		i += k;
	}
	return nmsg;
}

/* Without a ring (the kernel refused one): one sendmmsg() for the flush. */
static unsigned mmsg_tx(struct dp_afp_tx *t, struct rte_mbuf **m, unsigned n)
{
	struct mmsghdr msg[AFP_TX_MAX];
	struct iovec iov[AFP_TX_MAX];
	unsigned done = 0, sent = 0;

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
	return sent;
}

/*
 * Send m[0..n) in batches on the GSO socket, with one sendmmsg(), setting
 * *sent and *batched (of those, the frames that went in batches); false
 * (nothing sent) when no run of AFP_GSO_MIN frames could share a batch, or the ring still
 * holds frames a batch would overtake. A kernel that refuses batches
 * (before Linux 6.2) loses the socket: from then on, the ring.
 */
static bool gso_tx(struct dp_afp_tx *t, struct rte_mbuf **m, unsigned n, unsigned *sent,
		   unsigned *batched)
{
	struct gso_msg msg[AFP_TX_MAX];
	struct mmsghdr mh[AFP_TX_MAX];
	struct iovec iov[3 * AFP_TX_MAX];
	unsigned nmsg = gso_plan(m, n, msg, mh, iov), done = 0;

	if (nmsg == n || (t->map && ring_behind(t)))
		return false;
	*sent = *batched = 0;
	for (int tries = 0; done < nmsg && tries < 8;) {
		int r = sendmmsg(t->gso_fd, mh + done, nmsg - done, MSG_DONTWAIT);

		if (r > 0) {
			for (int j = 0; j < r; j++) {
				*sent += msg[done + j].frames;
				if (msg[done + j].frames > 1)
					*batched += msg[done + j].frames;
			}
			done += (unsigned)r;
		} else if (errno == EAGAIN || errno == ENOBUFS || errno == EINTR) {
			tries++;
		} else if (errno == EINVAL && msg[done].frames > 1) {
			close(t->gso_fd);
			t->gso_fd = -1;
			break;
		} else {
			done++; /* refused (interface down): drop this message alone */
		}
	}
	if (done < nmsg && t->gso_fd < 0) {
		unsigned from = 0;

		for (unsigned j = 0; j < done; j++)
			from += msg[j].frames;
		*sent += t->map ? ring_tx(t, m + from, n - from) : mmsg_tx(t, m + from, n - from);
	}
	return true;
}

unsigned dp_afp_tx(struct dp_afp_tx *t, struct rte_mbuf **m, unsigned n, unsigned *batched)
{
	unsigned sent = 0, in_batches = 0;

	if (n > AFP_TX_MAX)
		n = AFP_TX_MAX;
	if (t->gso_fd >= 0 && gso_tx(t, m, n, &sent, &in_batches)) {
		if (batched)
			*batched += in_batches;
	} else {
		sent = t->map ? ring_tx(t, m, n) : mmsg_tx(t, m, n);
	}
	return sent;
}
