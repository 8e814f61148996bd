/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * memif's wire: the control messages and the shared ring layout of protocol
 * version 2.0, as VPP's libmemif and DPDK's memif PMD use them.
 *
 * The server listens on a unix seqpacket socket; a client connects, the
 * server says HELLO, the client answers INIT and then hands over its shared
 * memory (ADD_REGION, with a memfd) and its rings (ADD_RING, with an
 * eventfd each), each acknowledged, and CONNECT; CONNECTED ends it. The
 * client owns all memory. A ring is a header (cookie, flags, head, tail on
 * their own cache lines) and 2^n descriptors of (flags, region, length,
 * offset), indices free-running and masked at use. On the client-to-server
 * ring the client fills buffers and moves head, the server reads and moves
 * tail. On the server-to-client ring the client offers empty buffers by
 * moving head, the server fills them and moves tail. A consumer that polls
 * sets MASK_INT in its ring's flags so the producer does not write the
 * eventfd each burst. A frame larger than a buffer takes several
 * descriptors, each but the last flagged NEXT.
 */
#ifndef UROCE_MEMIF_WIRE_H
#define UROCE_MEMIF_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "memif.h"

#define MEMIF_COOKIE 0x3E31F20u
#define MEMIF_VERSION 0x0200u
#define MEMIF_MSG_SIZE 128
#define MEMIF_MAX_LOG2_RING 14
#define MEMIF_RING_FLAG_MASK_INT 1
#define MEMIF_DESC_FLAG_NEXT 1
#define MEMIF_ADD_RING_FLAG_C2S 1

enum memif_msg_type {
	MSG_NONE,
	MSG_ACK,
	MSG_HELLO,
	MSG_INIT,
	MSG_ADD_REGION,
	MSG_ADD_RING,
	MSG_CONNECT,
	MSG_CONNECTED,
	MSG_DISCONNECT,
};

/* uroce's own messages, between a device daemon and its programs only
 * (memif_lend.c): far from memif's, which a peer that is not uroce never
 * sends on these sockets anyway */
enum memif_msg_uroce {
	MSG_UROCE_FIRST = 0x7500,
	MSG_UROCE_LEND_REGION = MSG_UROCE_FIRST, /* a region, its fd with it */
	MSG_UROCE_LEND_RING,			  /* a ring's place, its eventfd with it */
	MSG_UROCE_LEND,				  /* the rest: the loan is complete */
	MSG_UROCE_RECALL,			  /* the lender wants its rings back */
	MSG_UROCE_YIELD,			  /* the borrower is done with them */
};

struct memif_desc {
	uint16_t flags;
	uint16_t region;
	uint32_t length;
	uint32_t offset;
	uint32_t metadata;
};

struct memif_ring {
	uint32_t cookie;
	uint16_t flags;
	uint16_t head;
	/* uroce's own, in a program's ring from its device daemon: the loan
	 * (memif_lend.c) taken back without the program's YIELD */
	uint32_t revoked;
	uint8_t pad0[52];
	uint16_t tail;
	uint8_t pad1[62];
	struct memif_desc desc[];
};
_Static_assert(offsetof(struct memif_ring, tail) == 64, "memif ring layout");
_Static_assert(offsetof(struct memif_ring, desc) == 128, "memif ring layout");

/* The control messages: 128 bytes each, fields packed as the C structs of
 * the protocol's reference implementations lay them out. */
struct __attribute__((packed)) memif_msg {
	uint16_t type;
	union __attribute__((packed)) {
		struct __attribute__((packed)) {
			uint8_t name[32];
			uint16_t min_version, max_version;
			uint16_t max_region, max_m2s_ring,
			    max_s2m_ring; /* highest index, not count */
			uint8_t max_log2_ring_size;
		} hello;
		struct __attribute__((packed)) {
			uint16_t version;
			uint32_t id;
			uint8_t mode; /* 0: Ethernet */
			uint8_t secret[24];
			uint8_t name[32];
		} init;
		struct __attribute__((packed)) {
			uint16_t index;
			uint64_t size;
		} add_region;
		struct __attribute__((packed)) {
			uint16_t flags, index, region;
			uint32_t offset;
			uint8_t log2_ring_size;
			uint16_t private_hdr_size;
		} add_ring;
		struct __attribute__((packed)) {
			uint8_t if_name[32];
		} connect;
		struct __attribute__((packed)) {
			uint32_t code;
			uint8_t string[96];
		} disconnect;
		struct __attribute__((packed)) {
			uint32_t gen;  /* the loan's, in every message about it */
			uint8_t index; /* a region's */
			uint8_t c2s;   /* a ring's direction */
			uint8_t region;
			uint64_t offset; /* a ring's place in its region */
			uint64_t size;	 /* a region's */
		} lend_part;
		struct __attribute__((packed)) {
			uint32_t gen;
			uint8_t server, stamps, nregions;
			uint16_t ring_size;
			uint32_t bsize;
		} lend;
		struct __attribute__((packed)) {
			uint32_t gen; /* RECALL, YIELD: which loan */
		} loan;
		uint8_t raw[MEMIF_MSG_SIZE - 2];
	};
};
_Static_assert(sizeof(struct memif_msg) == MEMIF_MSG_SIZE, "memif message size");

static inline size_t memif_ring_bytes(unsigned log2)
{
	return sizeof(struct memif_ring) + sizeof(struct memif_desc) * ((size_t)1 << log2);
}

/*
 * A descriptor in shared memory, read once: the peer may rewrite it while
 * we look, so checks and uses go through this copy only.
 */
static inline struct memif_desc memif_desc_read(const struct memif_desc *d)
{
	const volatile struct memif_desc *v = d;

	return (struct memif_desc){.flags = v->flags,
				   .region = v->region,
				   .length = v->length,
				   .offset = v->offset,
				   .metadata = v->metadata};
}

/* The buffer a descriptor (a copy) names, if `len` bytes of it lie inside its region. */
static inline uint8_t *memif_desc_buf(const struct dp_memif *m, const struct memif_desc *d,
				      uint32_t len)
{
	if (d->region >= m->nregions || (uint64_t)d->offset + len > m->region_size[d->region])
		return NULL;
	return (uint8_t *)m->region[d->region] + d->offset;
}

/* memif_ctl.c's, for memif_lend.c */
int dp_memif_msg_send(int fd, struct memif_msg *msg, int pass_fd);
int dp_memif_map_region(struct dp_memif *m, int fd, uint64_t size);
void dp_memif_free_shared(struct dp_memif *m);

#endif
