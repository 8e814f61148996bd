/* SPDX-License-Identifier: BSD-2-Clause */
/* Transmitting over af_packet on a socket and TX ring of our own (afp_tx.c explains why). */
#ifndef UROCE_AFP_TX_H
#define UROCE_AFP_TX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rte_mbuf;

struct dp_afp_tx {
	int fd;	      /* a packet socket that transmits only, or -1 */
	uint8_t *map; /* its TX ring, mapped; NULL: the kernel refused one, sendmmsg() */
	size_t map_len;
	uint32_t frame_size, frames_per_block, block_size, frame_count;
	uint32_t head;	  /* the slot the next frame goes into */
	uint32_t last;	  /* the slot the last frame went into */
	bool ring_behind; /* the kernel had not sent all of the last ring send yet */
	int gso_fd;	  /* a socket without a ring for batches (udp_gso.c), or -1 */
};

/* Open `t` on `netdev`, a ring of slots holding frames of up to `frame_room` bytes, and with
 * `gso` a socket for batches of frames (udp_gso.c). 0 or -errno. */
int dp_afp_tx_open(struct dp_afp_tx *t, const char *netdev, uint32_t frame_room, bool gso);
void dp_afp_tx_close(struct dp_afp_tx *t);
/* Send m[0..n) with one system call (the frames stay the caller's: copied
 * out or refused); returns how many went out (into the ring: a full ring
 * refuses the rest), and adds to *batched (if not NULL) how many of them went
 * in batches. */
unsigned dp_afp_tx(struct dp_afp_tx *t, struct rte_mbuf **m, unsigned n, unsigned *batched);

#endif
