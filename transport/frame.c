/* SPDX-License-Identifier: BSD-2-Clause */
#include <string.h>

#include "frame.h"
#include "icrc.h"
#include "ur_util.h"

static const uint8_t v4_mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

bool ur_gid_is_v4(const struct ur_gid *g)
{
	return memcmp(g->raw, v4_mapped_prefix, sizeof(v4_mapped_prefix)) == 0;
}

void ur_gid_from_v4(struct ur_gid *g, const uint8_t v4[4])
{
	memcpy(g->raw, v4_mapped_prefix, sizeof(v4_mapped_prefix));
	memcpy(g->raw + 12, v4, 4);
}

uint16_t ur_ipv4_csum(const uint8_t *hdr, unsigned len)
{
	uint32_t sum = 0;

	for (unsigned i = 0; i + 1 < len; i += 2)
		sum += ur_get_be16(hdr + i);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

void ur_frame_tmpl_init(struct ur_frame_tmpl *t, const struct ur_path *p)
{
	uint8_t *b = t->bytes;
	unsigned off = 0;

	memset(t, 0, sizeof(*t));
	memcpy(b, p->dmac, 6);
	memcpy(b + 6, p->smac, 6);
	off = 12;
	if (p->vlan_present) {
		ur_put_be16(b + off, UR_ETHERTYPE_VLAN);
		ur_put_be16(b + off + 2, p->vlan_tci);
		off += UR_VLAN_HLEN;
	}
	t->ipv6 = !ur_gid_is_v4(&p->dgid);
	ur_put_be16(b + off, t->ipv6 ? UR_ETHERTYPE_IPV6 : UR_ETHERTYPE_IPV4);
	off += 2;
	t->l3_off = off;
	if (t->ipv6) {
		/* version, traffic class and flow label; tclass is set per packet */
		ur_put_be32(b + off, 6u << 28 | (p->flow_label & 0xfffff));
		b[off + 6] = 17;
		b[off + 7] = p->hop_limit;
		memcpy(b + off + 8, p->sgid.raw, 16);
		memcpy(b + off + 24, p->dgid.raw, 16);
		off += UR_IPV6_HLEN;
	} else {
		b[off] = 0x45;
		ur_put_be16(b + off + 6, 0x4000); /* DF, as rxe and RoCE NICs send */
		b[off + 8] = p->hop_limit;
		b[off + 9] = 17;
		memcpy(b + off + 12, p->sgid.raw + 12, 4);
		memcpy(b + off + 16, p->dgid.raw + 12, 4);
		off += UR_IPV4_HLEN;
	}
	ur_put_be16(b + off, p->udp_sport);
	ur_put_be16(b + off + 2, UR_ROCE_UDP_PORT);
	/* UDP checksum stays 0: the ICRC protects the packet (A17.4.2) */
	off += UR_UDP_HLEN;
	t->len = off;
}

unsigned ur_frame_tmpl_emit(const struct ur_frame_tmpl *t, uint8_t *frame, uint32_t roce_len,
			    uint8_t tos, uint16_t ip_id)
{
	uint8_t *l3 = frame + t->l3_off;
	uint32_t udp_len = UR_UDP_HLEN + roce_len;

	memcpy(frame, t->bytes, t->len);
	if (t->ipv6) {
		uint32_t w = ur_get_be32(l3);

		w = (w & 0xf00fffffu) | (uint32_t)tos << 20;
		ur_put_be32(l3, w);
		ur_put_be16(l3 + 4, udp_len);
		ur_put_be16(l3 + UR_IPV6_HLEN + 4, udp_len);
	} else {
		l3[1] = tos;
		ur_put_be16(l3 + 2, UR_IPV4_HLEN + udp_len);
		ur_put_be16(l3 + 4, ip_id);
		ur_put_be16(l3 + 10, ur_ipv4_csum(l3, UR_IPV4_HLEN));
		ur_put_be16(l3 + UR_IPV4_HLEN + 4, udp_len);
	}
	return t->len;
}

void ur_frame_seal_copy(const struct ur_frame_tmpl *t, uint8_t *frame, uint32_t frame_len,
			uint8_t *dst, const void *src, uint32_t copy_len)
{
	uint8_t *l3 = frame + t->l3_off;
	uint32_t l3_len = frame_len - t->l3_off - UR_ICRC_SIZE;

	ur_icrc_store(l3 + l3_len,
		      ur_icrc_compute_copy(l3, l3_len, dst, src, copy_len));
}

void ur_frame_seal(const struct ur_frame_tmpl *t, uint8_t *frame, uint32_t frame_len)
{
	ur_frame_seal_copy(t, frame, frame_len, NULL, NULL, 0);
}

static enum ur_parse_err parse_ipv4(struct ur_pkt *pkt, const uint8_t *l3, uint32_t avail,
				    uint32_t *l4_off, uint32_t *l3_total)
{
	unsigned ihl;
	uint32_t total;

	if (avail < UR_IPV4_HLEN)
		return UR_PARSE_TRUNCATED;
	if ((l3[0] >> 4) != 4)
		return UR_PARSE_BAD_IP;
	ihl = (l3[0] & 0xf) * 4u;
	total = ur_get_be16(l3 + 2);
	if (ihl < UR_IPV4_HLEN)
		return UR_PARSE_BAD_IP; /* a malformed header, not a short frame */
	if (total < ihl || total > avail || ihl > avail)
		return UR_PARSE_TRUNCATED;
	if (l3[9] != 17)
		return UR_PARSE_NOT_ROCE;
	/* fragments never carry RoCE: the ICRC could not be checked per fragment */
	if (ur_get_be16(l3 + 6) & 0x3fff)
		return UR_PARSE_BAD_IP;
	if (ur_ipv4_csum(l3, ihl) != 0)
		return UR_PARSE_BAD_IP;
	pkt->ipv6 = false;
	pkt->tos = l3[1];
	pkt->hop_limit = l3[8];
	ur_gid_from_v4(&pkt->sgid, l3 + 12);
	ur_gid_from_v4(&pkt->dgid, l3 + 16);
	*l4_off = ihl;
	*l3_total = total;
	return UR_PARSE_OK;
}

static enum ur_parse_err parse_ipv6(struct ur_pkt *pkt, const uint8_t *l3, uint32_t avail,
				    uint32_t *l4_off, uint32_t *l3_total)
{
	uint32_t total;

	if (avail < UR_IPV6_HLEN)
		return UR_PARSE_TRUNCATED;
	if ((l3[0] >> 4) != 6)
		return UR_PARSE_BAD_IP;
	total = UR_IPV6_HLEN + ur_get_be16(l3 + 4);
	if (total > avail)
		return UR_PARSE_TRUNCATED;
	/* RoCEv2 packets carry no IPv6 extension headers */
	if (l3[6] != 17)
		return UR_PARSE_NOT_ROCE;
	pkt->ipv6 = true;
	pkt->tos = (uint8_t)(ur_get_be32(l3) >> 20);
	pkt->hop_limit = l3[7];
	memcpy(pkt->sgid.raw, l3 + 8, 16);
	memcpy(pkt->dgid.raw, l3 + 24, 16);
	*l4_off = UR_IPV6_HLEN;
	*l3_total = total;
	return UR_PARSE_OK;
}

enum ur_parse_err ur_frame_parse(struct ur_pkt *pkt, const uint8_t *frame, uint32_t len)
{
	uint32_t off = 12, l4_off, l3_total, udp_len, roce_len, pad;
	uint16_t dport;
	uint16_t type;
	const uint8_t *l3, *udp;
	enum ur_parse_err err;
	const struct ur_opcode_info *op;

	if (len < UR_ETH_HLEN)
		return UR_PARSE_TRUNCATED;
	type = ur_get_be16(frame + off);
	if (type == UR_ETHERTYPE_VLAN) {
		if (len < UR_ETH_HLEN + UR_VLAN_HLEN)
			return UR_PARSE_TRUNCATED;
		off += UR_VLAN_HLEN;
		type = ur_get_be16(frame + off);
	}
	off += 2;
	l3 = frame + off;
	if (type == UR_ETHERTYPE_IPV4)
		err = parse_ipv4(pkt, l3, len - off, &l4_off, &l3_total);
	else if (type == UR_ETHERTYPE_IPV6)
		err = parse_ipv6(pkt, l3, len - off, &l4_off, &l3_total);
	else
		return UR_PARSE_NOT_ROCE;
	if (err)
		return err;

	if (l3_total < l4_off + UR_UDP_HLEN)
		return UR_PARSE_TRUNCATED;
	udp = l3 + l4_off;
	udp_len = ur_get_be16(udp + 4);
	dport = ur_get_be16(udp + 2);
	if (dport != UR_ROCE_UDP_PORT && dport != UR_SR_CTRL_PORT)
		return UR_PARSE_NOT_ROCE;
	if (udp_len != l3_total - l4_off)
		return UR_PARSE_TRUNCATED;
	pkt->frame = frame;
	pkt->frame_len = len;
	memcpy(pkt->dmac, frame, 6);
	memcpy(pkt->smac, frame + 6, 6);
	pkt->l3 = l3;
	pkt->l3_len = l3_total;
	pkt->udp_sport = ur_get_be16(udp);
	if (dport == UR_SR_CTRL_PORT) {
		pkt->payload = udp + UR_UDP_HLEN;
		pkt->payload_len = udp_len - UR_UDP_HLEN;
		return UR_PARSE_CONTROL;
	}
	roce_len = udp_len - UR_UDP_HLEN;
	if (roce_len < sizeof(struct ur_bth) + UR_ICRC_SIZE)
		return UR_PARSE_TRUNCATED;

	pkt->bth = (const struct ur_bth *)(udp + UR_UDP_HLEN);
	pkt->opcode = ur_bth_opcode(pkt->bth);
	op = ur_opcode_get(pkt->opcode);
	pkt->op = op;
	if (op->kind == UR_KIND_INVALID || ur_bth_tver(pkt->bth) != 0)
		return UR_PARSE_BAD_BTH;
	if (roce_len < (uint32_t)op->hdr_len + UR_ICRC_SIZE)
		return UR_PARSE_TRUNCATED;
	pad = ur_bth_padcnt(pkt->bth);
	pkt->sr_ext = NULL;
	pkt->payload = (const uint8_t *)pkt->bth + op->hdr_len;
	pkt->payload_len = roce_len - op->hdr_len - UR_ICRC_SIZE;
	if (ur_bth_sr(pkt->bth)) {
		unsigned ext = ur_sr_ext_len(op->kind);

		if (!ext)
			return UR_PARSE_BAD_BTH; /* SR bit on a packet kind that has no extension */
		if (pkt->payload_len < ext)
			return UR_PARSE_TRUNCATED;
		pkt->sr_ext = pkt->payload;
		pkt->payload += ext;
		pkt->payload_len -= ext;
	}
	/* the pad makes the payload a whole number of words (9.2.6) */
	if (pad > pkt->payload_len || (!op->payload && pkt->payload_len) || pkt->payload_len % 4)
		return UR_PARSE_BAD_BTH;
	pkt->payload_len -= pad;
	pkt->dqpn = ur_bth_dqpn(pkt->bth);
	pkt->psn = ur_bth_psn(pkt->bth);
	if (!ur_icrc_valid(l3, l3_total))
		return UR_PARSE_BAD_ICRC;
	return UR_PARSE_OK;
}

void ur_pkt_grh(const struct ur_pkt *pkt, uint8_t grh[UR_GRH_LEN])
{
	if (pkt->ipv6) {
		memcpy(grh, pkt->l3, UR_IPV6_HLEN);
		return;
	}
	/* the first 20 bytes of the IPv4 header, options (never on RoCE) left out */
	memset(grh, 0, UR_GRH_LEN - UR_IPV4_HLEN);
	memcpy(grh + UR_GRH_LEN - UR_IPV4_HLEN, pkt->l3, UR_IPV4_HLEN);
}

uint16_t ur_roce_udp_sport(uint32_t flow_label, uint32_t lqpn, uint32_t rqpn)
{
	uint32_t fl = flow_label & 0xfffff;

	if (!fl) {
		uint64_t v = (uint64_t)lqpn * rqpn;

		v ^= v >> 20;
		v ^= v >> 40;
		fl = (uint32_t)v & 0xfffff;
	}
	/* fold the top 6 bits into the low 14, then into the dynamic range */
	return (uint16_t)(((fl & 0x3fff) ^ ((fl & 0xfc000) >> 14)) | 0xc000);
}

unsigned ur_sr_ext_len(unsigned kind)
{
	switch (kind) {
	case UR_KIND_SEND:
	case UR_KIND_WRITE:
		return sizeof(struct ur_sreth);
	case UR_KIND_ACK:
		return sizeof(struct ur_sack);
	default:
		return 0;
	}
}

/* The Internet checksum over the UDP pseudo header and datagram (RFC 768, RFC 8200 8.1). */
static uint16_t udp_csum(const uint8_t *l3, bool ipv6, const uint8_t *udp, unsigned len)
{
	uint32_t sum = 0;

	if (ipv6) {
		for (unsigned i = 8; i < 40; i += 2)
			sum += ur_get_be16(l3 + i);
	} else {
		for (unsigned i = 12; i < 20; i += 2)
			sum += ur_get_be16(l3 + i);
	}
	sum += 17 + len;
	for (unsigned i = 0; i + 1 < len; i += 2)
		sum += ur_get_be16(udp + i);
	if (len & 1)
		sum += (uint32_t)udp[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	sum = ~sum & 0xffff;
	return sum ? (uint16_t)sum : 0xffff;
}

unsigned ur_frame_build_ctrl(const struct ur_frame_tmpl *t, uint8_t *frame, const void *payload,
			     unsigned len)
{
	/* ur_frame_tmpl_emit sizes lengths for a RoCE payload that includes the
	 * BTH; our datagram has none, so ask for exactly `len` bytes */
	unsigned hdr = ur_frame_tmpl_emit(t, frame, len, 0, 0);
	uint8_t *l3 = frame + t->l3_off;
	uint8_t *udp = frame + hdr - UR_UDP_HLEN;

	ur_put_be16(udp + 2, UR_SR_CTRL_PORT);
	memcpy(frame + hdr, payload, len);
	ur_put_be16(udp + 6, 0);
	ur_put_be16(udp + 6, udp_csum(l3, t->ipv6, udp, UR_UDP_HLEN + len));
	return hdr + len;
}
