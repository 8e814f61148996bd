/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RoCE frames batched for the kernel's UDP segmentation offload (GSO) over
 * af_packet, and cut apart again on receipt (udp_gso.c explains why).
 * Pure C: no DPDK, no sockets.
 */
#ifndef UROCE_DP_GSO_H
#define UROCE_DP_GSO_H

#include <stdbool.h>
#include <stdint.h>

/* Ethernet (untagged) + IPv6 + UDP: the longest header a batch carries */
#define DP_GSO_MAX_HDR (14 + 40 + 8)
/* the virtio_net_hdr's gso_type of a batch: Linux 6.2's uapi, newer than Debian 12's headers */
#ifndef VIRTIO_NET_HDR_GSO_UDP_L4
#define VIRTIO_NET_HDR_GSO_UDP_L4 5
#endif
/* a batch's most frames: the kernel's limit (UDP_MAX_SEGMENTS) in 6.1 */
#define DP_GSO_MAX_SEGS 64

/*
 * The header length (Ethernet, IP, UDP) of a frame that can lead a batch:
 * untagged IPv4 without options or fragmenting, or IPv6 with UDP next,
 * to UDP port 4791, with a payload, and IP and UDP lengths that end where
 * the frame does. 0 for any other frame.
 */
unsigned dp_gso_lead(const uint8_t *f, uint32_t len);

/*
 * Whether `b` can be the k-th frame (k >= 1) after the lead `a`
 * (header length `hlen`) in one batch: the same header except what the
 * kernel rewrites for each segment (lengths, checksums, and the IPv4
 * identification, which it counts up from the lead's: a's + k), the same
 * destination QP, and a payload no longer than a's. A shorter payload ends
 * the batch.
 */
bool dp_gso_follows(const uint8_t *a, uint32_t alen, const uint8_t *b, uint32_t blen, unsigned hlen,
		    unsigned k);

/*
 * Write to `hdr` the header of a batch led by `a` whose UDP payloads add
 * up to `payload` bytes: lengths for the whole, the IPv4 checksum, and in
 * the UDP checksum the pseudo-header's sum, which the kernel completes for
 * each segment (CHECKSUM_PARTIAL).
 */
void dp_gso_batch_header(uint8_t *hdr, const uint8_t *a, unsigned hlen, uint32_t payload);

/* Cutting a received batch into the frames it was made of, in place. */
struct dp_gso_cut {
	uint8_t *f;    /* the batch */
	uint32_t len;  /* its length */
	uint32_t off;  /* where the next segment's payload starts */
	uint16_t size; /* each segment's payload (the last may be shorter) */
	uint16_t id;   /* the next segment's IPv4 identification */
	unsigned hlen, l3;
	bool ipv6;
	uint8_t hdr[DP_GSO_MAX_HDR]; /* the batch's header, kept */
};

/* Start cutting batch f (len bytes, segments of `size` payload bytes): 0, or -1 if it is no batch
 * of ours. */
int dp_gso_cut_start(struct dp_gso_cut *c, uint8_t *f, uint32_t len, uint16_t size);

/*
 * The next frame, as the kernel's segmentation would have made it (UDP
 * checksum 0, as uroce sends), written over the end of the one before:
 * valid until the next call. NULL after the last.
 */
uint8_t *dp_gso_cut_next(struct dp_gso_cut *c, uint32_t *len);

#endif
