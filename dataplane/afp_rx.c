/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Receive over af_packet on a packet socket and TPACKET_V2 ring of our own,
 * not DPDK's af_packet PMD.
 *
 * The PMD puts its socket in a fanout group of its own (always, in DPDK
 * 22.11), and a fanout group's receive hook hashes each frame and reads the
 * ring slot it would write (rollover's room check) before the socket's
 * filter has its say. With a device per process (docs/multi-process.md)
 * every socket on the interface sees every frame, so each frame cost a
 * cold ring read in every process on the device, only to be refused by the
 * steering filter (steer_bpf.c) in all but one. A socket outside any group
 * refuses a frame in its filter and touches nothing else.
 *
 * Frames are handed up in place, from their slot: the PMD copied each into
 * an mbuf first. A batch of frames (udp_gso.c) too long for a slot is read
 * whole from the socket.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <string.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <linux/filter.h>
#include <linux/virtio_net.h>

#include "afp_rx.h"
#include "udp_gso.h"

/* a batch whole: 64 KB of IP packet, its Ethernet header and virtio_net_hdr */
#define AFP_RX_COPY_MAX (65536 + 64)
/* room on the socket for batches waiting to be read whole */
#define AFP_RX_RCVBUF (16 << 20)

static int ring_setup(struct dp_afp_ring *r, int fd)
{
	struct tpacket_req req = {0};
	int version = TPACKET_V2, one = 1, rcvbuf = AFP_RX_RCVBUF;

	r->block_size = dp_afp_block_size(r->frame_size);
	r->frames_per_block = r->block_size / r->frame_size;
	r->frame_count =
	    (r->frame_count + r->frames_per_block - 1) / r->frames_per_block * r->frames_per_block;
	req.tp_block_size = r->block_size;
	req.tp_frame_size = r->frame_size;
	req.tp_block_nr = r->frame_count / r->frames_per_block;
	req.tp_frame_nr = r->frame_count;
	if (setsockopt(fd, SOL_PACKET, PACKET_VERSION, &version, sizeof(version)))
		return -errno;
	/* Batches (udp_gso.c): the virtio_net_hdr says where to cut one, and
	 * one too long for its slot is also queued whole on the socket
	 * (TP_STATUS_COPY). Where the kernel refuses, a batch is lost whole
	 * (counted): senders toward such a port need UROCE_NO_GSO=1. */
	r->vnet = !setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one));
	if (r->vnet) {
		r->copy = malloc(AFP_RX_COPY_MAX);
		if (!r->copy || setsockopt(fd, SOL_PACKET, PACKET_COPY_THRESH, &one, sizeof(one))) {
			int zero = 0;

			free(r->copy);
			r->copy = NULL;
			r->vnet = false;
			setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &zero, sizeof(zero));
		}
		if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)))
			setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	}
	if (setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof(req)))
		return -errno;
	r->map_len = (size_t)req.tp_block_nr * r->block_size;
	r->map = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r->map == MAP_FAILED) {
		r->map = NULL;
		return -errno;
	}
	return 0;
}

int dp_afp_socket(const char *netdev, struct sockaddr_ll *sll)
{
	int fd;

	memset(sll, 0, sizeof(*sll));
	sll->sll_family = AF_PACKET;
	sll->sll_ifindex = (int)if_nametoindex(netdev);
	if (!sll->sll_ifindex)
		return -errno;
	fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	return fd < 0 ? -errno : fd;
}

int dp_afp_ring_open(struct dp_afp_ring *r, const char *netdev, uint32_t frame_size,
		     uint32_t frame_count, const struct sock_fprog *filter)
{
	struct sockaddr_ll sll;
	int fd, one = 1, err;

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	r->frame_size = frame_size;
	r->frame_count = frame_count;
	fd = dp_afp_socket(netdev, &sll);
	if (fd < 0)
		return fd;
	sll.sll_protocol = htons(ETH_P_ALL); /* bound after the ring is there */
	err = ring_setup(r, fd);
	/* what other programs send through the kernel is not ours to see
	 * (ours leaves past the qdisc, afp_tx.c, which no socket sees) */
	if (!err)
		setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
	/* on before the bind: frames it would refuse never reach the ring */
	if (!err && filter && setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, filter, sizeof(*filter)))
		err = -errno;
	if (!err && bind(fd, (struct sockaddr *)&sll, sizeof(sll)))
		err = -errno;
	if (err) {
		if (r->map)
			munmap(r->map, r->map_len);
		close(fd);
		free(r->copy);
		r->map = NULL;
		r->copy = NULL;
		return err;
	}
	r->fd = fd;
	return 0;
}

void dp_afp_ring_close(struct dp_afp_ring *r)
{
	if (r->map)
		munmap(r->map, r->map_len);
	if (r->fd >= 0)
		close(r->fd);
	free(r->copy);
	r->map = NULL;
	r->copy = NULL;
	r->fd = -1;
}

uint8_t *dp_afp_frame(struct tpacket2_hdr *h, uint32_t *len)
{
	uint8_t *f = (uint8_t *)h + h->tp_mac;
	uint32_t n = h->tp_snaplen;

	/* The kernel took an offloaded VLAN tag out of the frame: put it back
	 * in front of the EtherType, using the slack between the slot's
	 * header and the frame. */
	if ((h->tp_status & TP_STATUS_VLAN_VALID) && n >= 12 && h->tp_mac >= TPACKET2_HDRLEN + 4) {
		uint16_t tpid =
		    h->tp_status & TP_STATUS_VLAN_TPID_VALID ? h->tp_vlan_tpid : ETHERTYPE_VLAN;

		memmove(f - 4, f, 12);
		f -= 4;
		f[12] = (uint8_t)(tpid >> 8);
		f[13] = (uint8_t)tpid;
		f[14] = (uint8_t)(h->tp_vlan_tci >> 8);
		f[15] = (uint8_t)h->tp_vlan_tci;
		n += 4;
	}
	*len = n;
	return f;
}

/*
 * The next frame queued on the socket into buf (up to len bytes): its
 * length, or -1 if there is none. A socket error the kernel holds (the
 * interface went down: ENETDOWN) is reported once in a recv() that takes
 * nothing; the copy is still there.
 */
static ssize_t take_copy(struct dp_afp_ring *r, void *buf, size_t len)
{
	for (int tries = 0; tries < 4; tries++) {
		ssize_t got = recv(r->fd, buf, len, MSG_DONTWAIT | MSG_TRUNC);

		if (got >= 0 || errno == EAGAIN || errno == EWOULDBLOCK)
			return got;
	}
	return -1;
}

uint8_t *dp_afp_frame_gso(struct dp_afp_ring *r, struct tpacket2_hdr *h, uint32_t *len,
			  uint16_t *gso_size)
{
	const struct virtio_net_hdr *vh;
	ssize_t got = -1;

	*gso_size = 0;
	if (!r->vnet)
		return dp_afp_frame(h, len);
	if (!(h->tp_status & TP_STATUS_COPY)) {
		vh = (const struct virtio_net_hdr *)((uint8_t *)h + h->tp_mac - sizeof(*vh));
		if (vh->gso_type != VIRTIO_NET_HDR_GSO_UDP_L4)
			return dp_afp_frame(h, len);
		if (h->tp_snaplen < h->tp_len)
			return NULL; /* no room on the socket for the whole */
		*gso_size = vh->gso_size;
		return dp_afp_frame(h, len);
	}
	/* The slot holds the start; the whole is queued on the socket, one
	 * copy per such slot, in slot order. Should one have been left there
	 * (it never should), the copies of other lengths are passed over.
	 * Untagged: batches are (udp_gso.c). */
	h->tp_status &= ~(uint32_t)TP_STATUS_COPY; /* taken: not to be skipped */
	for (int tries = 0; tries < 4; tries++) {
		got = take_copy(r, r->copy, AFP_RX_COPY_MAX);
		if (got < 0 || (size_t)got == sizeof(*vh) + h->tp_len)
			break;
	}
	if (got < (ssize_t)sizeof(*vh) || (size_t)got != sizeof(*vh) + h->tp_len ||
	    got > AFP_RX_COPY_MAX)
		return NULL;
	vh = (const struct virtio_net_hdr *)r->copy;
	if (vh->gso_type == VIRTIO_NET_HDR_GSO_UDP_L4)
		*gso_size = vh->gso_size;
	*len = (uint32_t)got - sizeof(*vh);
	return r->copy + sizeof(*vh);
}

void dp_afp_skip_copy(struct dp_afp_ring *r)
{
	uint8_t none;

	take_copy(r, &none, 0);
}
