/* SPDX-License-Identifier: BSD-2-Clause */
/* Receive over af_packet on a packet socket and ring of our own (afp_rx.c). */
#ifndef UROCE_AFP_RX_H
#define UROCE_AFP_RX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/if_packet.h>

struct dp_afp_ring {
	int fd;	      /* the socket: poll it for POLLIN, attach filters to it */
	uint8_t *map; /* the ring, mapped */
	size_t map_len;
	uint32_t frame_size, frames_per_block, block_size, frame_count;
	uint32_t head; /* the slot the next frame lands in */
	bool vnet;     /* each slot has a virtio_net_hdr before its frame */
	uint8_t *copy; /* where a frame too long for its slot is read whole */
};

/* A packet socket for `netdev` that receives nothing until bound with a
 * protocol; `sll` is filled in to bind it with. The fd, or -errno. */
int dp_afp_socket(const char *netdev, struct sockaddr_ll *sll);

struct sock_fprog;

/* Open a ring of `frame_count` slots of `frame_size` bytes on `netdev`,
 * taking only what `filter` accepts (NULL: every frame). 0 or -errno. */
int dp_afp_ring_open(struct dp_afp_ring *r, const char *netdev, uint32_t frame_size,
		     uint32_t frame_count, const struct sock_fprog *filter);
void dp_afp_ring_close(struct dp_afp_ring *r);

/*
 * A ring's block: the kernel allocates each one whole, rounded up to a power
 * of two pages, and zeroes it inside one system call that nothing preempts
 * here (real-time threads included). A block of a few slots rounded to a page
 * (36 KB for 4608-byte slots) took 64 KB each, 32 MB for a 4096-slot ring
 * instead of 18.75, and the transmit ring's single block 2 MB: with 16
 * programs opening a device at once, a SCHED_FIFO thread waited up to 86-129
 * ms, and 5-51 ms with these blocks (docs/dataplane.md). 32 KB (order 3, the
 * largest the kernel does not call costly) holds 7 slots of 4608 bytes with
 * 512 to spare; slots may leave a gap at a block's end (dp_afp_slot). A slot
 * larger than that takes its own power of two.
 */
static inline uint32_t dp_afp_block_size(uint32_t frame_size)
{
	uint32_t block = 32768;

	while (block < frame_size)
		block *= 2;
	return block;
}

/* The frame in slot `i`'s header. */
static inline struct tpacket2_hdr *dp_afp_slot(const struct dp_afp_ring *r, uint32_t i)
{
	return (struct tpacket2_hdr *)(r->map + (size_t)(i / r->frames_per_block) * r->block_size +
				       (size_t)(i % r->frames_per_block) * r->frame_size);
}

/* The next received frame, or NULL; give it back with dp_afp_release. */
static inline struct tpacket2_hdr *dp_afp_next(const struct dp_afp_ring *r)
{
	struct tpacket2_hdr *h = dp_afp_slot(r, r->head);

	return __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER ? h : NULL;
}

/* Take a long frame's copy off the socket unread (dp_afp_frame_gso() reads it). */
void dp_afp_skip_copy(struct dp_afp_ring *r);

/* Hand slot `h` (the head) back to the kernel and move on. */
static inline void dp_afp_release(struct dp_afp_ring *r, struct tpacket2_hdr *h)
{
	/* the socket's queue holds one copy per such slot, in slot order: one
	 * left there would be read for the next long frame's slot */
	if (h->tp_status & TP_STATUS_COPY)
		dp_afp_skip_copy(r);
	__atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
	if (++r->head == r->frame_count)
		r->head = 0;
}

/* The Ethernet frame in `h`, as it was on the wire: sets *len. */
uint8_t *dp_afp_frame(struct tpacket2_hdr *h, uint32_t *len);

/*
 * The frame in `h` (sets *len), and the payload size of the segments it
 * batches, if it is a batch (*gso_size, else 0): in its slot, or, too long
 * for one, read from the socket (valid until the next call). NULL: a batch
 * lost (the socket's queue was full: the slot holds only its start), or
 * its copy not to be had.
 */
uint8_t *dp_afp_frame_gso(struct dp_afp_ring *r, struct tpacket2_hdr *h, uint32_t *len,
			  uint16_t *gso_size);

#endif
