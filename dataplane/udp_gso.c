/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Over af_packet most of a frame's cost is the kernel's, and it is paid per
 * frame: a socket buffer, the veth's hand-over, the receiving socket's
 * filter and ring. Kernel TCP pays it per 64 KB segment. UDP segmentation
 * offload gives uroce the same: consecutive frames of one QP that differ
 * only where the kernel's segmentation rewrites each segment (lengths,
 * checksums, the IPv4 identification, counted up from the first's, as
 * uroce counts it per QP) leave as one batch, one header and their UDP
 * payloads back to back (BTH..ICRC each). The kernel cuts the batch where a
 * frame must be single (a NIC without the offload, a qdisc, a local UDP
 * socket such as Soft-RoCE's): every byte the ICRC covers is then what
 * uroce built. Over a veth to another uroce the batch arrives whole, and
 * dp_gso_cut_next() cuts it the same way.
 */
#include <errno.h>
#include <string.h>

#include "udp_gso.h"

#define ROCE_PORT 4791

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void put_be16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint32_t sum16(const uint8_t *p, unsigned len, uint32_t sum)
{
	for (unsigned i = 0; i + 1 < len; i += 2)
		sum += be16(p + i);
	return sum;
}

static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* The IP and UDP lengths say what the frame's length does: no padding or trailing bytes to carry
 * along. */
static bool lengths_agree(const uint8_t *f, uint32_t len, unsigned hlen)
{
	uint32_t ip = hlen == 14 + 20 + 8 ? be16(f + 14 + 2) : 40u + be16(f + 14 + 4);

	return 14 + ip == len && be16(f + hlen - 4) == len - (hlen - 8);
}

unsigned dp_gso_lead(const uint8_t *f, uint32_t len)
{
	const uint8_t *l3 = f + 14;
	unsigned hlen;

	if (len < 14 + 20)
		return 0;
	switch (be16(f + 12)) {
	case 0x0800:
		if (l3[0] != 0x45 || l3[9] != 17 || (be16(l3 + 6) & 0x3fff))
			return 0;
		hlen = 14 + 20 + 8;
		break;
	case 0x86dd:
		if (len < 14 + 40 || (l3[0] >> 4) != 6 || l3[6] != 17)
			return 0;
		hlen = 14 + 40 + 8;
		break;
	default:
		return 0;
	}
	if (len <= hlen || be16(f + hlen - 6) != ROCE_PORT || !lengths_agree(f, len, hlen))
		return 0;
	return hlen;
}

bool dp_gso_follows(const uint8_t *a, uint32_t alen, const uint8_t *b, uint32_t blen, unsigned hlen,
		    unsigned k)
{
	unsigned udp = hlen - 8;

	if (blen <= hlen || blen > alen || !lengths_agree(b, blen, hlen))
		return false;
	/* the same destination QP (BTH bytes 5-7): IPv6 has no identification to tell QPs apart */
	if (memcmp(a + hlen + 5, b + hlen + 5, 3))
		return false;
	if (hlen == 14 + 20 + 8) {
		/* up to the length; TOS..flags past it, not the identification;
		 * TTL and protocol; the addresses and UDP ports */
		return !memcmp(a, b, 16) && be16(b + 18) == (uint16_t)(be16(a + 18) + k) &&
		       !memcmp(a + 20, b + 20, 4) && !memcmp(a + 26, b + 26, 12);
	}
	/* IPv6: all of it but the payload length; then the UDP ports */
	return !memcmp(a, b, 18) && !memcmp(a + 20, b + 20, udp - 20 + 4);
}

void dp_gso_batch_header(uint8_t *hdr, const uint8_t *a, unsigned hlen, uint32_t payload)
{
	uint8_t *l3 = hdr + 14, *udp = hdr + hlen - 8;
	uint32_t ulen = 8 + payload, sum;

	memcpy(hdr, a, hlen);
	put_be16(udp + 4, ulen);
	if (hlen == 14 + 20 + 8) {
		put_be16(l3 + 2, 20 + ulen);
		put_be16(l3 + 10, 0);
		put_be16(l3 + 10, (uint16_t)~fold(sum16(l3, 20, 0)));
		sum = sum16(l3 + 12, 8, 17 + ulen);
	} else {
		put_be16(l3 + 4, ulen);
		sum = sum16(l3 + 8, 32, 17 + ulen);
	}
	/* not inverted: the kernel adds the rest and inverts (as ~csum_tcpudp_magic()) */
	put_be16(udp + 6, fold(sum));
}

int dp_gso_cut_start(struct dp_gso_cut *c, uint8_t *f, uint32_t len, uint16_t size)
{
	unsigned hlen = dp_gso_lead(f, len);

	/* twice what uroce sends: newer kernels allow 128 segments (UDP_MAX_SEGMENTS) */
	if (!hlen || !size || (len - hlen + size - 1) / size > DP_GSO_MAX_SEGS * 2)
		return -EINVAL;
	c->f = f;
	c->len = len;
	c->hlen = hlen;
	c->off = hlen;
	c->size = size;
	c->ipv6 = hlen != 14 + 20 + 8;
	c->id = c->ipv6 ? 0 : be16(f + 14 + 4);
	memcpy(c->hdr, f, hlen);
	return 0;
}

uint8_t *dp_gso_cut_next(struct dp_gso_cut *c, uint32_t *len)
{
	uint32_t payload = c->len - c->off;
	uint8_t *f, *l3, *udp;

	if (c->off >= c->len)
		return NULL;
	if (payload > c->size)
		payload = c->size;
	f = c->f + c->off - c->hlen;
	memcpy(f, c->hdr, c->hlen);
	l3 = f + 14;
	udp = f + c->hlen - 8;
	put_be16(udp + 4, 8 + payload);
	put_be16(udp + 6, 0);
	if (c->ipv6) {
		put_be16(l3 + 4, 8 + payload);
	} else {
		put_be16(l3 + 2, 20 + 8 + payload);
		put_be16(l3 + 4, c->id++);
		put_be16(l3 + 10, 0);
		put_be16(l3 + 10, (uint16_t)~fold(sum16(l3, 20, 0)));
	}
	c->off += payload;
	*len = c->hlen + payload;
	return f;
}
