/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Neighbours: ARP for IPv4-mapped GIDs (RFC 826) and neighbour discovery
 * for IPv6 (RFC 4861). We ask with our own MAC and address and learn from
 * every reply and request that names a neighbour we are looking for. When
 * the kernel does not own our addresses (memif), we also answer for them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include <rte_mbuf.h>

#include "dp_internal.h"

#define RETRY_NS 200000000ull   /* one request every 200 ms... */
#define MAX_TRIES 10            /* ...for two seconds */
#define FAILED_HOLD_NS 5000000000ull /* then say unreachable for 5 s before trying again */

static const uint8_t v4_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

static bool gid_is_v4(const uint8_t g[16])
{
	return !memcmp(g, v4_prefix, 12);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static struct dp_neigh *find(struct uroce_dp *dp, const uint8_t gid[16])
{
	for (unsigned i = 0; i < DP_NEIGH_MAX; i++)
		if (dp->neigh[i].state != DP_NEIGH_FREE && !memcmp(dp->neigh[i].gid, gid, 16))
			return &dp->neigh[i];
	return NULL;
}

static struct dp_neigh *add(struct uroce_dp *dp, const uint8_t gid[16])
{
	struct dp_neigh *victim = &dp->neigh[0];

	for (unsigned i = 0; i < DP_NEIGH_MAX; i++) {
		if (dp->neigh[i].state == DP_NEIGH_FREE) {
			victim = &dp->neigh[i];
			break;
		}
		if (dp->neigh[i].last_ns < victim->last_ns)
			victim = &dp->neigh[i];
	}
	memset(victim, 0, sizeof(*victim));
	memcpy(victim->gid, gid, 16);
	victim->state = DP_NEIGH_PENDING;
	return victim;
}

/* One of our addresses of the same family as `target`, as the request's source. */
static const uint8_t *own_addr(const struct uroce_dp *dp, const uint8_t target[16])
{
	const uint8_t *link_local = NULL;

	for (unsigned i = 0; i < dp->cfg.naddrs; i++) {
		const uint8_t *a = dp->cfg.addrs[i];

		if (gid_is_v4(a) != gid_is_v4(target))
			continue;
		if (!gid_is_v4(a) && a[0] == 0xfe && (a[1] & 0xc0) == 0x80) {
			link_local = a;
			continue;
		}
		return a;
	}
	return link_local;
}

static bool is_own_addr(const struct uroce_dp *dp, const uint8_t gid[16])
{
	for (unsigned i = 0; i < dp->cfg.naddrs; i++)
		if (!memcmp(dp->cfg.addrs[i], gid, 16))
			return true;
	return false;
}

static void learn(struct uroce_dp *dp, const uint8_t gid[16], const uint8_t mac[6], uint64_t now)
{
	struct dp_neigh *n = find(dp, gid);

	if (!n)
		return; /* only neighbours we asked about: the table stays ours */
	memcpy(n->mac, mac, 6);
	n->state = DP_NEIGH_REACHABLE;
	n->last_ns = now;
}

static void send_arp(struct uroce_dp *dp, uint16_t oper, const uint8_t *dst_mac,
		     const uint8_t *tha, const uint8_t spa[4], const uint8_t tpa[4])
{
	uint8_t f[60] = {0};

	memcpy(f, dst_mac, 6);
	memcpy(f + 6, dp->cfg.mac, 6);
	put16(f + 12, 0x0806);
	put16(f + 14, 1);      /* Ethernet */
	put16(f + 16, 0x0800); /* IPv4 */
	f[18] = 6;
	f[19] = 4;
	put16(f + 20, oper);
	memcpy(f + 22, dp->cfg.mac, 6);
	memcpy(f + 28, spa, 4);
	memcpy(f + 32, tha, 6);
	memcpy(f + 38, tpa, 4);
	dp_tx_raw(dp, f, sizeof(f));
	dp_count(dp, oper == 1 ? DP_CTR_dp_neigh_requests : DP_CTR_dp_neigh_replies);
}

static uint16_t icmp6_csum(const uint8_t *ip6, const uint8_t *icmp, uint32_t len)
{
	uint32_t sum = 0;

	for (int i = 8; i < 40; i += 2) /* source and destination addresses */
		sum += (uint32_t)(ip6[i] << 8 | ip6[i + 1]);
	sum += len + 58;
	for (uint32_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(icmp[i] << 8 | icmp[i + 1]);
	if (len & 1)
		sum += (uint32_t)icmp[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* Neighbour solicitation (type 135) or advertisement (136) with our link-layer address. */
static void send_nd(struct uroce_dp *dp, uint8_t type, const uint8_t *dst_mac,
		    const uint8_t src[16], const uint8_t dst[16], const uint8_t target[16])
{
	uint8_t f[14 + 40 + 32] = {0};
	uint8_t *ip = f + 14, *icmp = ip + 40;

	memcpy(f, dst_mac, 6);
	memcpy(f + 6, dp->cfg.mac, 6);
	put16(f + 12, 0x86dd);
	ip[0] = 0x60;
	put16(ip + 4, 32);
	ip[6] = 58;
	ip[7] = 255; /* RFC 4861 7.1.1: hop limit 255, or receivers drop it */
	memcpy(ip + 8, src, 16);
	memcpy(ip + 24, dst, 16);
	icmp[0] = type;
	if (type == 136)
		icmp[4] = 0x60; /* solicited, override */
	memcpy(icmp + 8, target, 16);
	icmp[24] = type == 135 ? 1 : 2; /* source / target link-layer address option */
	icmp[25] = 1;
	memcpy(icmp + 26, dp->cfg.mac, 6);
	put16(icmp + 2, icmp6_csum(ip, icmp, 32));
	dp_tx_raw(dp, f, sizeof(f));
	dp_count(dp, type == 135 ? DP_CTR_dp_neigh_requests : DP_CTR_dp_neigh_replies);
}

static void send_request(struct uroce_dp *dp, const uint8_t gid[16])
{
	static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, zero[6];
	const uint8_t *src = own_addr(dp, gid);

	if (!src)
		return;
	if (gid_is_v4(gid)) {
		send_arp(dp, 1, bcast, zero, src + 12, gid + 12);
	} else {
		/* to the solicited-node multicast address ff02::1:ffXX:XXXX */
		uint8_t dst[16] = {0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, gid[13], gid[14], gid[15]};
		uint8_t mac[6] = {0x33, 0x33, 0xff, gid[13], gid[14], gid[15]};

		send_nd(dp, 135, mac, src, dst, gid);
	}
}

int uroce_dp_neigh_lookup(struct uroce_dp *dp, const uint8_t gid[16], uint8_t mac[6],
			  uint64_t now)
{
	struct dp_neigh *n = find(dp, gid);

	if (n && n->state == DP_NEIGH_REACHABLE) {
		memcpy(mac, n->mac, 6);
		return 0;
	}
	if (n && n->state == DP_NEIGH_FAILED) {
		if (now - n->last_ns < FAILED_HOLD_NS)
			return -EHOSTUNREACH;
		n->state = DP_NEIGH_PENDING;
		n->tries = 0;
		n->last_ns = 0;
	}
	if (!n) {
		n = add(dp, gid);
		n->last_ns = 0;
	}
	if (now - n->last_ns >= RETRY_NS || !n->last_ns) {
		if (n->tries == MAX_TRIES) {
			n->state = DP_NEIGH_FAILED;
			n->last_ns = now;
			dp_count(dp, DP_CTR_dp_neigh_failed);
			return -EHOSTUNREACH;
		}
		n->tries++;
		n->last_ns = now;
		send_request(dp, gid);
	}
	return -EAGAIN;
}

static void rx_arp(struct uroce_dp *dp, const uint8_t *f, uint32_t len, unsigned off, uint64_t now)
{
	const uint8_t *a = f + off;
	uint8_t sgid[16], tgid[16];
	uint16_t oper;

	if (len < off + 28 || a[0] != 0 || a[1] != 1 || a[2] != 8 || a[3] != 0 || a[4] != 6 ||
	    a[5] != 4)
		return;
	oper = (uint16_t)(a[6] << 8 | a[7]);
	memcpy(sgid, v4_prefix, 12);
	memcpy(sgid + 12, a + 14, 4);
	memcpy(tgid, v4_prefix, 12);
	memcpy(tgid + 12, a + 24, 4);
	learn(dp, sgid, a + 8, now);
	if (oper == 1 && (dp->cfg.answer_neigh || dp->borrowing) && is_own_addr(dp, tgid))
		send_arp(dp, 2, a + 8, a + 8, a + 24, a + 14);
}

static void rx_nd(struct uroce_dp *dp, const uint8_t *f, uint32_t len, unsigned off, uint64_t now)
{
	const uint8_t *ip = f + off, *icmp = ip + 40, *opt;
	uint32_t plen = (uint32_t)(ip[4] << 8 | ip[5]);

	if (len < off + 40 + 24 || plen < 24 || off + 40 + plen > len || ip[7] != 255)
		return;
	opt = icmp + 24;
	if (icmp[0] == 136) {
		/* advertisement: target address, and its MAC in option 2 (or the source MAC) */
		const uint8_t *mac = f + 6;

		if (plen >= 32 && opt[0] == 2 && opt[1] == 1)
			mac = opt + 2;
		learn(dp, icmp + 8, mac, now);
	} else if (icmp[0] == 135 && (dp->cfg.answer_neigh || dp->borrowing) && is_own_addr(dp, icmp + 8)) {
		learn(dp, ip + 8, f + 6, now);
		send_nd(dp, 136, f + 6, icmp + 8, ip + 8, icmp + 8);
	}
}

void dp_neigh_rx(struct uroce_dp *dp, const uint8_t *f, uint32_t len, uint16_t ethertype,
		 unsigned l3off, uint64_t now)
{
	if (ethertype == 0x0806) {
		dp_count(dp, DP_CTR_dp_rx_arp);
		rx_arp(dp, f, len, l3off, now);
	} else {
		dp_count(dp, DP_CTR_dp_rx_nd);
		rx_nd(dp, f, len, l3off, now);
	}
}
