/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The RoCEv2 Invariant CRC (IBTA Vol 1 7.8.1; Annex A17 for RoCEv2): the
 * CRC-32 of a packet's fields that no router may change, carried as the
 * packet's last four bytes.
 */
#ifndef UR_ICRC_H
#define UR_ICRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * l3 points at the IPv4 or IPv6 header; len runs from there to the end of
 * the pad bytes, excluding the 4-byte ICRC.
 *
 * The packet must be IPv4 (options allowed, they are covered unmasked) or
 * IPv6 without extension headers, carrying UDP, with a whole BTH inside
 * len. Anything else returns 0; ur_icrc_valid() rejects such packets.
 */
uint32_t ur_icrc_compute(const uint8_t *l3, size_t len);

/*
 * ur_icrc_compute() after copying copy_len bytes from src to dst, which lies
 * inside l3[0..len) and does not overlap src: a sender's payload copy and
 * its CRC done in one pass over the bytes.
 */
uint32_t ur_icrc_compute_copy(const uint8_t *l3, size_t len, uint8_t *dst, const void *src,
			      size_t copy_len);

/*
 * The trailer holds the CRC least significant byte first, as Linux rdma_rxe
 * and RoCE NICs send it (so a dissector that reads it as a big-endian number
 * shows it byte-swapped).
 */
void ur_icrc_store(uint8_t *dst, uint32_t icrc);
uint32_t ur_icrc_load(const uint8_t *src);

/* True when the trailer matches; false too for a packet compute() rejects. */
bool ur_icrc_valid(const uint8_t *l3, size_t len_with_icrc);

#endif
