/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RoCEv2 ICRC. IBTA Annex A17 (RoCEv2) keeps the InfiniBand Invariant CRC
 * (Vol 1 7.8.1) and defines what it covers on a routed UDP/IP packet:
 *
 *   8 bytes of all ones        in place of the LRH, which RoCEv2 lacks
 *   the IP header              with the fields routers rewrite set to ones:
 *                                IPv4 Type of Service (DSCP, ECN), Time to
 *                                Live, Header Checksum; IPv6 Traffic Class,
 *                                Flow Label, Hop Limit
 *   the UDP header             with the Checksum set to ones
 *   the BTH                    with byte 4 (resv8a, which carries FECN and
 *                                BECN) set to ones
 *   everything after the BTH   through the pad bytes
 *
 * The CRC is the ordinary CRC-32 (ur_crc32()). Only the first 48 to 68
 * bytes need masking, so they are copied to the stack; the rest is read in
 * place.
 *
 * IPv4 options are covered as they are, unmasked: the Annex masks only the
 * fields named above, and an option carried end to end is invariant.
 * (rdma_rxe assumes a 20-byte header, but neither it nor RoCE hardware sends
 * options.) IPv6 extension headers are not supported: the next header must
 * be UDP, as rxe and the Annex's packet format have it.
 */
#include <string.h>

#include "crc32.h"
#include "frame.h"
#include "icrc.h"
#include "wire.h"

#define UR_IPPROTO_UDP 17
#define UR_ICRC_LRH_LEN 8
#define UR_IPV4_MAX_HLEN 60
#define UR_BTH_LEN sizeof(struct ur_bth)
#define UR_ICRC_MAX_MASKED (UR_IPV4_MAX_HLEN + UR_UDP_HLEN + UR_BTH_LEN)

/* Length of the IP header, or 0 when this is not IPv4/IPv6 carrying UDP. */
static size_t ur_icrc_ip_hlen(const uint8_t *l3, size_t len)
{
	size_t hlen;

	if (len < 1)
		return 0;
	switch (l3[0] >> 4) {
	case 4:
		hlen = (size_t)(l3[0] & 0x0f) * 4;
		if (hlen < UR_IPV4_HLEN || len < hlen || l3[9] != UR_IPPROTO_UDP)
			return 0;
		return hlen;
	case 6:
		if (len < UR_IPV6_HLEN || l3[6] != UR_IPPROTO_UDP)
			return 0;
		return UR_IPV6_HLEN;
	default:
		return 0;
	}
}

/*
 * Whether copy_len bytes at l3 + copy_off can be copied in the CRC's pass:
 * only unmasked bytes can, and the bytes that say how long the headers are
 * (the first 20) must be in place before they are read.
 */
static bool ur_icrc_copy_in_pass(const uint8_t *l3, size_t len, size_t copy_off, size_t copy_len)
{
	size_t hlen;

	if (copy_off < UR_IPV4_HLEN)
		return false;
	hlen = ur_icrc_ip_hlen(l3, len);
	return hlen && copy_off >= hlen + UR_UDP_HLEN + UR_BTH_LEN && copy_off + copy_len <= len;
}

/*
 * The ICRC of l3[0..len), or false when the headers are not there. First
 * the copy_len bytes at src are copied to dst (inside l3), in the same pass
 * as the CRC when they lie past the masked headers.
 */
static bool ur_icrc_calc(const uint8_t *l3, size_t len, uint8_t *dst, const void *src,
			 size_t copy_len, uint32_t *icrc)
{
	uint8_t buf[UR_ICRC_LRH_LEN + UR_ICRC_MAX_MASKED];
	uint8_t *ip = buf + UR_ICRC_LRH_LEN;
	uint8_t *udp, *bth;
	size_t copy_off = copy_len ? (size_t)(dst - l3) : len;
	size_t hlen, masked;
	uint32_t crc;

	if (copy_len && !ur_icrc_copy_in_pass(l3, len, copy_off, copy_len)) {
		memcpy(dst, src, copy_len);
		copy_len = 0;
		copy_off = len;
	}
	hlen = ur_icrc_ip_hlen(l3, len);
	masked = hlen + UR_UDP_HLEN + UR_BTH_LEN;
	if (!hlen || len < masked)
		return false;
	memset(buf, 0xff, UR_ICRC_LRH_LEN);
	memcpy(ip, l3, masked);
	if (l3[0] >> 4 == 6) {
		/* Version stays; Traffic Class and Flow Label follow it. */
		ip[0] |= 0x0f;
		memset(ip + 1, 0xff, 3);
		ip[7] = 0xff; /* Hop Limit */
	} else {
		ip[1] = 0xff;  /* Type of Service */
		ip[8] = 0xff;  /* Time to Live */
		ip[10] = 0xff; /* Header Checksum */
		ip[11] = 0xff;
	}
	udp = ip + hlen;
	udp[6] = 0xff; /* Checksum */
	udp[7] = 0xff;
	bth = udp + UR_UDP_HLEN;
	bth[offsetof(struct ur_bth, resv8a)] = 0xff;

	crc = ur_crc32(0, buf, UR_ICRC_LRH_LEN + masked);
	crc = ur_crc32(crc, l3 + masked, copy_off - masked);
	if (copy_len)
		crc = ur_crc32_copy(crc, dst, src, copy_len);
	*icrc = ur_crc32(crc, l3 + copy_off + copy_len, len - copy_off - copy_len);
	return true;
}

uint32_t ur_icrc_compute(const uint8_t *l3, size_t len)
{
	uint32_t icrc;

	return ur_icrc_calc(l3, len, NULL, NULL, 0, &icrc) ? icrc : 0;
}

uint32_t ur_icrc_compute_copy(const uint8_t *l3, size_t len, uint8_t *dst, const void *src,
			      size_t copy_len)
{
	uint32_t icrc;

	return ur_icrc_calc(l3, len, dst, src, copy_len, &icrc) ? icrc : 0;
}

/*
 * The CRC goes on the wire least significant byte first, as in the rdma_rxe
 * captures that test_icrc.c checks (rxe, which interoperates with RoCE NICs,
 * stores the u32 in host order on little-endian machines). Byte-wise so it
 * does not depend on the host's order.
 */
void ur_icrc_store(uint8_t *dst, uint32_t icrc)
{
	dst[0] = (uint8_t)icrc;
	dst[1] = (uint8_t)(icrc >> 8);
	dst[2] = (uint8_t)(icrc >> 16);
	dst[3] = (uint8_t)(icrc >> 24);
}

uint32_t ur_icrc_load(const uint8_t *src)
{
	return (uint32_t)src[0] | (uint32_t)src[1] << 8 | (uint32_t)src[2] << 16 |
	       (uint32_t)src[3] << 24;
}

bool ur_icrc_valid(const uint8_t *l3, size_t len_with_icrc)
{
	uint32_t icrc;

	if (len_with_icrc < UR_ICRC_SIZE)
		return false;
	if (!ur_icrc_calc(l3, len_with_icrc - UR_ICRC_SIZE, NULL, NULL, 0, &icrc))
		return false;
	return icrc == ur_icrc_load(l3 + len_with_icrc - UR_ICRC_SIZE);
}
