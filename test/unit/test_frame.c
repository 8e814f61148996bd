/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RoCEv2 framing (IBTA Annex A17): frames built with the per-path template
 * for IPv4 and IPv6, with and without 802.1Q, parse back to the same fields
 * with a valid ICRC; every truncation of a valid frame is refused without a
 * read past its end (the frame is copied so that it ends at an inaccessible
 * page); each corrupted field is refused with the error (and so the drop
 * counter) it belongs to; Ethernet padding after a short IP packet is fine.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine.h" /* UR_FRAME_MAX */
#include "frame.h"
#include "icrc.h"

#define NVARIANTS 4
#define TRAILER_MAX 64

struct variant {
	const char *name;
	bool v6;
	bool vlan;
};

static const struct variant variants[NVARIANTS] = {
    {"ipv4", false, false},
    {"ipv4+vlan", false, true},
    {"ipv6", true, false},
    {"ipv6+vlan", true, true},
};

static const uint8_t smac[6] = {0x02, 0x00, 0x5e, 0x10, 0x00, 0x01};
static const uint8_t dmac[6] = {0x02, 0x00, 0x5e, 0x10, 0x00, 0x02};
static const uint8_t sip4[4] = {192, 0, 2, 1};
static const uint8_t dip4[4] = {198, 51, 100, 7};
static const uint8_t sip6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01};
static const uint8_t dip6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xbe, 0xef};

#define HOP_LIMIT 61
#define FLOW_LABEL 0xabcde
#define UDP_SPORT 0xc0a7
#define VLAN_TCI 0xa123 /* PCP 5, VID 0x123 */
#define TOS 0x6a	/* DSCP 26, ECT(0) */
#define IP_ID 0x4242

static void make_path(struct ur_path *p, const struct variant *v)
{
	memset(p, 0, sizeof(*p));
	memcpy(p->smac, smac, 6);
	memcpy(p->dmac, dmac, 6);
	p->vlan_present = v->vlan;
	p->vlan_tci = VLAN_TCI;
	if (v->v6) {
		memcpy(p->sgid.raw, sip6, 16);
		memcpy(p->dgid.raw, dip6, 16);
	} else {
		ur_gid_from_v4(&p->sgid, sip4);
		ur_gid_from_v4(&p->dgid, dip4);
	}
	p->tclass = TOS;
	p->hop_limit = HOP_LIMIT;
	p->flow_label = FLOW_LABEL;
	p->udp_sport = UDP_SPORT;
}

/* A frame and where its parts are. */
struct frame {
	struct ur_frame_tmpl t;
	uint8_t buf[UR_FRAME_MAX + TRAILER_MAX];
	uint32_t len;
	unsigned l3, l4, bth; /* offsets */
	uint8_t opcode;
	uint32_t payload_len;
};

static uint8_t payload_byte(uint32_t i)
{
	return (uint8_t)(i * 131 + 7);
}

/*
 * Build one packet the way the engine does: template prefix, BTH, the
 * opcode's extension headers (filled with a pattern: parsing must not care),
 * payload, zero pad, ICRC. `payload_len` may be nonzero for an opcode that
 * carries none, to build a malformed packet.
 */
static void build(struct frame *f, int variant, uint8_t opcode, uint32_t payload_len)
{
	const struct ur_opcode_info *op = ur_opcode_get(opcode);
	uint32_t pad = (4 - (payload_len & 3)) & 3;
	uint32_t roce_len = op->hdr_len + payload_len + pad + UR_ICRC_SIZE;
	struct ur_path path;
	struct ur_bth *bth;
	unsigned pre;

	make_path(&path, &variants[variant]);
	memset(f, 0, sizeof(*f));
	ur_frame_tmpl_init(&f->t, &path);
	memset(f->buf, 0xcc, sizeof(f->buf)); /* stale bytes of an earlier frame */
	pre = ur_frame_tmpl_emit(&f->t, f->buf, roce_len, TOS, IP_ID);
	ck_assert_uint_eq(pre, f->t.len);
	f->l3 = f->t.l3_off;
	f->l4 = f->l3 + (variants[variant].v6 ? UR_IPV6_HLEN : UR_IPV4_HLEN);
	f->bth = pre;
	bth = (struct ur_bth *)(f->buf + pre);
	for (unsigned i = 0; i < op->hdr_len; i++)
		f->buf[pre + i] = (uint8_t)(0xa0 + i);
	ur_bth_set_opcode(bth, opcode);
	ur_bth_set_se(bth, true);
	ur_bth_set_mig(bth, false);
	ur_bth_set_padcnt(bth, pad);
	ur_bth_set_tver(bth, 0);
	ur_bth_set_pkey(bth, 0xffff);
	bth->resv8a = 0;
	ur_bth_set_dqpn(bth, 0x00abcd);
	ur_bth_set_ackreq(bth, true);
	ur_bth_set_resv7(bth, 0);
	ur_bth_set_psn(bth, 0xfffff3);
	for (uint32_t i = 0; i < payload_len; i++)
		f->buf[pre + op->hdr_len + i] = payload_byte(i);
	memset(f->buf + pre + op->hdr_len + payload_len, 0, pad);
	f->len = pre + roce_len;
	f->opcode = opcode;
	f->payload_len = payload_len;
	ur_frame_seal(&f->t, f->buf, f->len);
}

static uint8_t *l3(struct frame *f)
{
	return f->buf + f->l3;
}

static struct ur_bth *bth(struct frame *f)
{
	return (struct ur_bth *)(f->buf + f->bth);
}

/* After editing a header: fix the IPv4 checksum, then the ICRC, so only the edit is wrong. */
static void refresh_ipv4_csum(struct frame *f)
{
	uint8_t *h = l3(f);
	unsigned ihl = (h[0] & 0xf) * 4u;

	h[10] = h[11] = 0;
	ur_put_be16(h + 10, ur_ipv4_csum(h, ihl));
}

static void reseal(struct frame *f)
{
	ur_frame_seal(&f->t, f->buf, f->len);
}

/* Frames are parsed from a copy that ends at an inaccessible page. */
static uint8_t *guard_area;
static size_t guard_len, page_size;

static void guard_setup(void)
{
	uint8_t *m;

	page_size = (size_t)sysconf(_SC_PAGESIZE);
	guard_len = (sizeof(((struct frame *)0)->buf) + page_size - 1) / page_size * page_size;
	m = mmap(NULL, guard_len + page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	ck_assert_ptr_ne(m, MAP_FAILED);
	ck_assert_int_eq(mprotect(m + guard_len, page_size, PROT_NONE), 0);
	guard_area = m;
}

static void guard_teardown(void)
{
	munmap(guard_area, guard_len + page_size);
	guard_area = NULL;
}

static enum ur_parse_err parse_guarded(struct ur_pkt *pkt, const uint8_t *frame, uint32_t len)
{
	uint8_t *p = guard_area + guard_len - len;

	ck_assert_uint_le(len, guard_len);
	memcpy(p, frame, len);
	return ur_frame_parse(pkt, p, len);
}

static const char *const err_names[] = {"OK",	  "NOT_ROCE", "TRUNCATED",
					"BAD_IP", "BAD_BTH",  "BAD_ICRC", "CONTROL",
};

static const char *err_name(enum ur_parse_err e)
{
	return (unsigned)e < sizeof(err_names) / sizeof(err_names[0]) ? err_names[e] : "?";
}

#define assert_parse(f, want, what)                                                                \
	do {                                                                                       \
		struct ur_pkt pkt_;                                                                \
		enum ur_parse_err got_ = parse_guarded(&pkt_, (f)->buf, (f)->len);                 \
		ck_assert_msg(got_ == (want), "%s: %s, want %s", (what), err_name(got_),           \
			      err_name(want));                                                     \
	} while (0)

/* Every field the parser reports, and every header byte the template wrote. */
static void check_roundtrip(struct frame *f, int variant, const struct ur_pkt *pkt,
			    const uint8_t *frame)
{
	const struct variant *v = &variants[variant];
	const struct ur_opcode_info *op = ur_opcode_get(f->opcode);
	const uint8_t *h = frame + f->l3;
	const uint8_t *udp = frame + f->l4;
	uint32_t l3_len = f->len - f->l3;
	struct ur_gid sg, dg;

	if (v->v6) {
		memcpy(sg.raw, sip6, 16);
		memcpy(dg.raw, dip6, 16);
	} else {
		ur_gid_from_v4(&sg, sip4);
		ur_gid_from_v4(&dg, dip4);
	}
	ck_assert_ptr_eq(pkt->frame, frame);
	ck_assert_uint_eq(pkt->frame_len, f->len);
	ck_assert_ptr_eq(pkt->l3, h);
	ck_assert_uint_eq(pkt->l3_len, l3_len);
	ck_assert_mem_eq(pkt->smac, smac, 6);
	ck_assert_mem_eq(pkt->dmac, dmac, 6);
	ck_assert(pkt->ipv6 == v->v6);
	ck_assert_uint_eq(pkt->tos, TOS);
	ck_assert_uint_eq(pkt->hop_limit, HOP_LIMIT);
	ck_assert_mem_eq(pkt->sgid.raw, sg.raw, 16);
	ck_assert_mem_eq(pkt->dgid.raw, dg.raw, 16);
	ck_assert(ur_gid_is_v4(&pkt->sgid) == !v->v6);
	ck_assert_uint_eq(pkt->udp_sport, UDP_SPORT);
	ck_assert_ptr_eq(pkt->bth, (const void *)(frame + f->bth));
	ck_assert_ptr_eq(pkt->op, op);
	ck_assert_uint_eq(pkt->opcode, f->opcode);
	ck_assert_uint_eq(pkt->dqpn, 0x00abcd);
	ck_assert_uint_eq(pkt->psn, 0xfffff3);
	ck_assert_ptr_eq(pkt->payload, frame + f->bth + op->hdr_len);
	ck_assert_uint_eq(pkt->payload_len, f->payload_len);
	for (uint32_t i = 0; i < f->payload_len; i++)
		ck_assert_uint_eq(pkt->payload[i], payload_byte(i));
	ck_assert(ur_icrc_valid(pkt->l3, pkt->l3_len));

	/* Ethernet and 802.1Q */
	ck_assert_mem_eq(frame, dmac, 6);
	ck_assert_mem_eq(frame + 6, smac, 6);
	if (v->vlan) {
		ck_assert_uint_eq(ur_get_be16(frame + 12), UR_ETHERTYPE_VLAN);
		ck_assert_uint_eq(ur_get_be16(frame + 14), VLAN_TCI);
	}
	ck_assert_uint_eq(f->l3, v->vlan ? 18 : 14);
	ck_assert_uint_eq(ur_get_be16(frame + f->l3 - 2),
			  v->v6 ? UR_ETHERTYPE_IPV6 : UR_ETHERTYPE_IPV4);
	/* IP */
	if (v->v6) {
		uint32_t w = ur_get_be32(h);

		ck_assert_uint_eq(w >> 28, 6);
		ck_assert_uint_eq((w >> 20) & 0xff, TOS);
		ck_assert_uint_eq(w & 0xfffff, FLOW_LABEL);
		ck_assert_uint_eq(ur_get_be16(h + 4), l3_len - UR_IPV6_HLEN);
		ck_assert_uint_eq(h[6], 17);
		ck_assert_uint_eq(h[7], HOP_LIMIT);
		ck_assert_mem_eq(h + 8, sip6, 16);
		ck_assert_mem_eq(h + 24, dip6, 16);
	} else {
		ck_assert_uint_eq(h[0], 0x45);
		ck_assert_uint_eq(h[1], TOS);
		ck_assert_uint_eq(ur_get_be16(h + 2), l3_len);
		ck_assert_uint_eq(ur_get_be16(h + 4), IP_ID);
		ck_assert_uint_eq(ur_get_be16(h + 6), 0x4000); /* DF, offset 0 */
		ck_assert_uint_eq(h[8], HOP_LIMIT);
		ck_assert_uint_eq(h[9], 17);
		ck_assert_uint_eq(ur_ipv4_csum(h, UR_IPV4_HLEN), 0);
		ck_assert_mem_eq(h + 12, sip4, 4);
		ck_assert_mem_eq(h + 16, dip4, 4);
	}
	/* UDP: checksum 0, the ICRC protects the packet (A17.4.2) */
	ck_assert_uint_eq(ur_get_be16(udp), UDP_SPORT);
	ck_assert_uint_eq(ur_get_be16(udp + 2), UR_ROCE_UDP_PORT);
	ck_assert_uint_eq(ur_get_be16(udp + 4), f->len - f->l4);
	ck_assert_uint_eq(ur_get_be16(udp + 6), 0);
}

/* Opcodes and the payload sizes each is built with in the round trip sweep. */
static const uint8_t roundtrip_ops[] = {
    UR_OP_RC_SEND_FIRST,	 UR_OP_RC_SEND_ONLY,
    UR_OP_RC_SEND_LAST_IMM,	 UR_OP_RC_SEND_ONLY_INV,
    UR_OP_RC_WRITE_FIRST,	 UR_OP_RC_WRITE_ONLY_IMM,
    UR_OP_RC_READ_REQUEST,	 UR_OP_RC_READ_RESPONSE_MIDDLE,
    UR_OP_RC_READ_RESPONSE_ONLY, UR_OP_RC_ACKNOWLEDGE,
    UR_OP_RC_ATOMIC_ACKNOWLEDGE, UR_OP_RC_COMPARE_SWAP,
    UR_OP_RC_FETCH_ADD,		 UR_OP_UC_SEND_MIDDLE,
    UR_OP_UC_WRITE_ONLY_IMM,	 UR_OP_UD_SEND_ONLY,
    UR_OP_UD_SEND_ONLY_IMM,	 UR_OP_CNP,
};
static const uint32_t roundtrip_lens[] = {0, 1, 2, 3, 4, 5, 255, 256, 257, 1023, 1024, 4096};

#define NROUNDTRIP_OPS ((int)(sizeof(roundtrip_ops) / sizeof(roundtrip_ops[0])))

START_TEST(test_roundtrip)
{
	const int variant = _i % NVARIANTS;
	const uint8_t opcode = roundtrip_ops[_i / NVARIANTS];
	const struct ur_opcode_info *op = ur_opcode_get(opcode);
	static struct frame f;

	for (unsigned k = 0; k < sizeof(roundtrip_lens) / sizeof(roundtrip_lens[0]); k++) {
		uint32_t plen = roundtrip_lens[k];
		struct ur_pkt pkt;
		const uint8_t *copy;
		enum ur_parse_err e;

		if (!op->payload && plen)
			break;
		build(&f, variant, opcode, plen);
		ck_assert_uint_le(f.len, UR_FRAME_MAX);
		e = parse_guarded(&pkt, f.buf, f.len);
		ck_assert_msg(e == UR_PARSE_OK, "%s %s len %u: %s", variants[variant].name,
			      op->name, plen, err_name(e));
		copy = guard_area + guard_len - f.len;
		check_roundtrip(&f, variant, &pkt, copy);
	}
}
END_TEST

/* Opcodes whose every truncation is tried. */
static const struct {
	uint8_t opcode;
	uint32_t payload;
} trunc_cases[] = {
    {UR_OP_RC_SEND_ONLY, 0},
    {UR_OP_RC_WRITE_ONLY_IMM, 37},
    {UR_OP_RC_ATOMIC_ACKNOWLEDGE, 0},
    {UR_OP_RC_COMPARE_SWAP, 0},
    {UR_OP_UD_SEND_ONLY_IMM, 100},
    {UR_OP_RC_READ_RESPONSE_MIDDLE, 256},
    {UR_OP_CNP, 0},
};

#define NTRUNC ((int)(sizeof(trunc_cases) / sizeof(trunc_cases[0])))

START_TEST(test_every_truncation)
{
	const int variant = _i % NVARIANTS;
	const uint8_t opcode = trunc_cases[_i / NVARIANTS].opcode;
	static struct frame f;
	struct ur_pkt pkt;

	build(&f, variant, opcode, trunc_cases[_i / NVARIANTS].payload);
	ck_assert_int_eq(parse_guarded(&pkt, f.buf, f.len), UR_PARSE_OK);
	for (uint32_t len = 0; len < f.len; len++) {
		enum ur_parse_err e = parse_guarded(&pkt, f.buf, len);

		ck_assert_msg(e == UR_PARSE_TRUNCATED, "%s %s cut to %u of %u bytes: %s",
			      variants[variant].name, ur_opcode_name(opcode), len, f.len,
			      err_name(e));
	}
}
END_TEST

/* Truncating the IP packet itself (lengths consistent, frame shorter) and a long UDP. */
START_TEST(test_length_fields)
{
	const int variant = _i;
	static struct frame f;
	uint8_t *udp;

	build(&f, variant, UR_OP_RC_SEND_ONLY, 64);
	udp = f.buf + f.l4;
	/* UDP length one more or one less than the IP packet holds */
	ur_put_be16(udp + 4, ur_get_be16(udp + 4) + 1);
	assert_parse(&f, UR_PARSE_TRUNCATED, "UDP length + 1");
	ur_put_be16(udp + 4, ur_get_be16(udp + 4) - 2);
	assert_parse(&f, UR_PARSE_TRUNCATED, "UDP length - 1");

	/* IP and UDP agree on a RoCE part too small for a BTH and an ICRC */
	build(&f, variant, UR_OP_RC_SEND_ONLY, 0);
	udp = f.buf + f.l4;
	ur_put_be16(udp + 4, UR_UDP_HLEN + 15);
	if (variants[variant].v6) {
		ur_put_be16(l3(&f) + 4, UR_UDP_HLEN + 15);
	} else {
		ur_put_be16(l3(&f) + 2, UR_IPV4_HLEN + UR_UDP_HLEN + 15);
		refresh_ipv4_csum(&f);
	}
	assert_parse(&f, UR_PARSE_TRUNCATED, "RoCE part of 15 bytes");

	/* an opcode whose headers do not fit: SEND ONLY re-labelled WRITE ONLY */
	build(&f, variant, UR_OP_RC_SEND_ONLY, 0);
	ur_bth_set_opcode(bth(&f), UR_OP_RC_WRITE_ONLY);
	reseal(&f);
	assert_parse(&f, UR_PARSE_TRUNCATED, "RETH missing");

	/* IP length larger than the frame */
	build(&f, variant, UR_OP_RC_SEND_ONLY, 64);
	if (variants[variant].v6) {
		ur_put_be16(l3(&f) + 4, ur_get_be16(l3(&f) + 4) + 4);
	} else {
		ur_put_be16(l3(&f) + 2, ur_get_be16(l3(&f) + 2) + 4);
		refresh_ipv4_csum(&f);
	}
	assert_parse(&f, UR_PARSE_TRUNCATED, "IP length past the frame");
}
END_TEST

START_TEST(test_ip_version)
{
	const int variant = _i;
	const bool v6 = variants[variant].v6;
	static struct frame f;

	for (unsigned ver = 0; ver < 16; ver++) {
		if (ver == (v6 ? 6u : 4u))
			continue;
		build(&f, variant, UR_OP_RC_SEND_ONLY, 8);
		l3(&f)[0] = (uint8_t)(ver << 4 | (l3(&f)[0] & 0x0f));
		if (!v6)
			refresh_ipv4_csum(&f);
		reseal(&f);
		assert_parse(&f, UR_PARSE_BAD_IP, "IP version");
	}
}
END_TEST

/* IPv4 only: checksum, fragments, header length. Run with and without VLAN. */
START_TEST(test_ipv4_header)
{
	const int variant = _i; /* 0 or 1: the IPv4 variants */
	static struct frame f;
	uint8_t *h;

	build(&f, variant, UR_OP_RC_SEND_ONLY, 8);
	h = l3(&f);
	h[10] ^= 0x01;
	assert_parse(&f, UR_PARSE_BAD_IP, "IPv4 checksum");
	h[10] ^= 0x01;
	h[11] ^= 0x80;
	assert_parse(&f, UR_PARSE_BAD_IP, "IPv4 checksum");
	h[11] ^= 0x80;
	assert_parse(&f, UR_PARSE_OK, "restored");

	/* More Fragments */
	ur_put_be16(h + 6, 0x2000);
	refresh_ipv4_csum(&f);
	reseal(&f);
	assert_parse(&f, UR_PARSE_BAD_IP, "MF");
	/* a later fragment: offset 8 bytes */
	ur_put_be16(h + 6, 0x0001);
	refresh_ipv4_csum(&f);
	reseal(&f);
	assert_parse(&f, UR_PARSE_BAD_IP, "fragment offset");
	ur_put_be16(h + 6, 0x5fff);
	refresh_ipv4_csum(&f);
	reseal(&f);
	assert_parse(&f, UR_PARSE_BAD_IP, "DF with offset");
	/* DF clear is not a fragment */
	ur_put_be16(h + 6, 0x0000);
	refresh_ipv4_csum(&f);
	reseal(&f);
	assert_parse(&f, UR_PARSE_OK, "DF clear");

	/* IHL below 5 is a bad header length (BAD_IP: version, header length, ...) */
	for (unsigned ihl = 0; ihl < 5; ihl++) {
		build(&f, variant, UR_OP_RC_SEND_ONLY, 8);
		h = l3(&f);
		h[0] = (uint8_t)(0x40 | ihl);
		refresh_ipv4_csum(&f);
		reseal(&f);
		assert_parse(&f, UR_PARSE_BAD_IP, "IHL < 5");
	}
}
END_TEST

/* IPv4 options are legal: the BTH moves with the header length. */
START_TEST(test_ipv4_options)
{
	const int variant = _i;
	static struct frame f;
	struct ur_pkt pkt;
	uint8_t *h;
	const uint8_t *copy;

	build(&f, variant, UR_OP_RC_SEND_ONLY, 20);
	h = l3(&f);
	memmove(h + 24, h + 20, f.len - f.l3 - 20);
	memset(h + 20, 0x01, 4); /* four NOPs */
	h[0] = 0x46;
	ur_put_be16(h + 2, ur_get_be16(h + 2) + 4);
	f.len += 4;
	f.l4 += 4;
	f.bth += 4;
	refresh_ipv4_csum(&f);
	reseal(&f);
	ck_assert_int_eq(parse_guarded(&pkt, f.buf, f.len), UR_PARSE_OK);
	copy = guard_area + guard_len - f.len;
	ck_assert_ptr_eq(pkt.bth, (const void *)(copy + f.bth));
	ck_assert_uint_eq(pkt.payload_len, 20);
	ck_assert_uint_eq(pkt.payload[0], payload_byte(0));
	ck_assert_uint_eq(pkt.udp_sport, UDP_SPORT);
}
END_TEST

START_TEST(test_not_roce)
{
	const int variant = _i;
	const bool v6 = variants[variant].v6;
	static struct frame f;
	/* (4792 is uroce's SR control port: see test_sr_control) */
	static const uint16_t ports[] = {0, 4790, 0xb712 /* 4791 byte-swapped */, 4789};

	for (unsigned k = 0; k < sizeof(ports) / sizeof(ports[0]); k++) {
		build(&f, variant, UR_OP_RC_SEND_ONLY, 8);
		ur_put_be16(f.buf + f.l4 + 2, ports[k]);
		reseal(&f);
		assert_parse(&f, UR_PARSE_NOT_ROCE, "UDP port");
	}
	/* not UDP */
	build(&f, variant, UR_OP_RC_SEND_ONLY, 8);
	if (v6) {
		l3(&f)[6] = 0; /* hop-by-hop options: extension headers are not RoCE */
	} else {
		l3(&f)[9] = 6; /* TCP */
		refresh_ipv4_csum(&f);
	}
	assert_parse(&f, UR_PARSE_NOT_ROCE, "IP protocol");
	/* not IP: ARP, and an unknown ethertype */
	build(&f, variant, UR_OP_RC_SEND_ONLY, 8);
	ur_put_be16(f.buf + f.l3 - 2, UR_ETHERTYPE_ARP);
	assert_parse(&f, UR_PARSE_NOT_ROCE, "ARP");
	ur_put_be16(f.buf + f.l3 - 2, 0x88b5);
	assert_parse(&f, UR_PARSE_NOT_ROCE, "ethertype");
}
END_TEST

START_TEST(test_bad_bth)
{
	const int variant = _i;
	static struct frame f;
	static const uint8_t unknown[] = {0x15, 0x18, 0x1f, 0x2c, 0x30, 0x40, 0x4b,
					  0x60, 0x63, 0x66, 0x80, 0x82, 0xc0, 0xff};

	/* transport header version: only 0 exists */
	for (unsigned tver = 1; tver < 16; tver++) {
		build(&f, variant, UR_OP_RC_SEND_ONLY, 8);
		ur_bth_set_tver(bth(&f), tver);
		reseal(&f);
		assert_parse(&f, UR_PARSE_BAD_BTH, "TVer");
	}
	/* opcodes uroce does not speak: reserved, RD, unsupported UD, manufacturer */
	for (unsigned k = 0; k < sizeof(unknown) / sizeof(unknown[0]); k++) {
		build(&f, variant, UR_OP_RC_SEND_ONLY, 64);
		ur_bth_set_opcode(bth(&f), unknown[k]);
		reseal(&f);
		assert_parse(&f, UR_PARSE_BAD_BTH, "unknown opcode");
	}
	/* pad count larger than the payload */
	for (unsigned pad = 1; pad < 4; pad++) {
		build(&f, variant, UR_OP_RC_SEND_ONLY, 0);
		ur_bth_set_padcnt(bth(&f), pad);
		reseal(&f);
		assert_parse(&f, UR_PARSE_BAD_BTH, "pad count > payload");
	}
	/* payload on an opcode that carries none */
	build(&f, variant, UR_OP_RC_ACKNOWLEDGE, 4);
	ur_bth_set_padcnt(bth(&f), 0);
	reseal(&f);
	assert_parse(&f, UR_PARSE_BAD_BTH, "ACK with payload");
	build(&f, variant, UR_OP_RC_READ_REQUEST, 4);
	ur_bth_set_padcnt(bth(&f), 0);
	reseal(&f);
	assert_parse(&f, UR_PARSE_BAD_BTH, "READ request with payload");
}
END_TEST

/* Pad count up to the payload region is accepted and subtracted. */
START_TEST(test_pad_accounting)
{
	const int variant = _i;
	static struct frame f;

	for (unsigned plen = 1; plen <= 8; plen++) {
		struct ur_pkt pkt;

		build(&f, variant, UR_OP_RC_SEND_ONLY, plen);
		ck_assert_int_eq(parse_guarded(&pkt, f.buf, f.len), UR_PARSE_OK);
		ck_assert_uint_eq(pkt.payload_len, plen);
		ck_assert_uint_eq(ur_bth_padcnt(pkt.bth), (4 - (plen & 3)) & 3);
	}
	/* 4 payload bytes with pad 3: one byte of payload */
	build(&f, variant, UR_OP_RC_SEND_ONLY, 4);
	ur_bth_set_padcnt(bth(&f), 3);
	reseal(&f);
	{
		struct ur_pkt pkt;

		ck_assert_int_eq(parse_guarded(&pkt, f.buf, f.len), UR_PARSE_OK);
		ck_assert_uint_eq(pkt.payload_len, 1);
	}
}
END_TEST

START_TEST(test_bad_icrc)
{
	const int variant = _i;
	static struct frame f;
	uint32_t covered[5];

	build(&f, variant, UR_OP_RC_WRITE_ONLY, 40);
	covered[0] = f.len - 1;	      /* ICRC's last byte */
	covered[1] = f.len - 4;	      /* ICRC's first byte */
	covered[2] = f.bth + 11;      /* PSN */
	covered[3] = f.bth + 12 + 3;  /* RETH */
	covered[4] = f.bth + 28 + 17; /* payload */
	for (unsigned k = 0; k < 5; k++) {
		for (unsigned bit = 0; bit < 8; bit++) {
			f.buf[covered[k]] ^= (uint8_t)(1u << bit);
			assert_parse(&f, UR_PARSE_BAD_ICRC, "bit flip");
			f.buf[covered[k]] ^= (uint8_t)(1u << bit);
		}
	}
	assert_parse(&f, UR_PARSE_OK, "restored");
	/* every bit of the ICRC-covered, unmasked IP addresses */
	for (unsigned i = 0; i < (variants[variant].v6 ? 32u : 8u); i++) {
		unsigned at = f.l3 + (variants[variant].v6 ? 8 : 12) + i;

		f.buf[at] ^= 0x10;
		if (!variants[variant].v6)
			refresh_ipv4_csum(&f);
		assert_parse(&f, UR_PARSE_BAD_ICRC, "address");
		f.buf[at] ^= 0x10;
		if (!variants[variant].v6)
			refresh_ipv4_csum(&f);
	}
	assert_parse(&f, UR_PARSE_OK, "restored");
}
END_TEST

/* Fields routers rewrite are masked out of the ICRC (A17.3.3): still valid. */
START_TEST(test_masked_fields_rewritten)
{
	const int variant = _i;
	const bool v6 = variants[variant].v6;
	static struct frame f;
	struct ur_pkt pkt;

	build(&f, variant, UR_OP_RC_SEND_ONLY, 33);
	if (v6) {
		uint32_t w = ur_get_be32(l3(&f));

		w = (w & 0xf0000000u) | 0x0ff54321u; /* traffic class CE, new flow label */
		ur_put_be32(l3(&f), w);
		l3(&f)[7] = 1; /* hop limit */
	} else {
		l3(&f)[1] = 0x6b; /* CE */
		l3(&f)[8] = 1;	  /* TTL */
		refresh_ipv4_csum(&f);
	}
	ur_put_be16(f.buf + f.l4 + 6, 0x1234); /* UDP checksum */
	ur_bth_set_fecn(bth(&f), true);
	ur_bth_set_becn(bth(&f), true);
	ck_assert_int_eq(parse_guarded(&pkt, f.buf, f.len), UR_PARSE_OK);
	ck_assert_uint_eq(pkt.tos & UR_ECN_MASK, UR_ECN_CE);
	ck_assert_uint_eq(pkt.hop_limit, 1);
}
END_TEST

/*
 * A frame shorter than Ethernet's 60-byte minimum arrives padded: the IP
 * length, not the frame length, bounds the packet. Also any trailer (an FCS
 * left on by the NIC) after the IP packet.
 */
START_TEST(test_ethernet_padding)
{
	const int variant = _i;
	static struct frame f;
	struct ur_pkt pkt;
	uint32_t ip_end;

	build(&f, variant, UR_OP_RC_SEND_ONLY, 0);
	ip_end = f.len;
	if (variant == 0)
		ck_assert_uint_eq(f.len, 14 + 20 + 8 + 12 + 4); /* 58: below the minimum */
	if (f.len < 60) {
		memset(f.buf + f.len, 0, 60 - f.len);
		f.len = 60;
		ck_assert_int_eq(parse_guarded(&pkt, f.buf, f.len), UR_PARSE_OK);
		ck_assert_uint_eq(pkt.frame_len, 60);
		ck_assert_uint_eq(pkt.l3_len, ip_end - f.l3);
		ck_assert_uint_eq(pkt.payload_len, 0);
	}
	for (uint32_t extra = 1; extra <= TRAILER_MAX; extra++) {
		f.len = ip_end + extra;
		memset(f.buf + ip_end, 0xa5, extra);
		ck_assert_int_eq(parse_guarded(&pkt, f.buf, f.len), UR_PARSE_OK);
		ck_assert_uint_eq(pkt.l3_len, ip_end - f.l3);
		ck_assert_uint_eq(pkt.payload_len, 0);
		ck_assert(ur_icrc_valid(pkt.l3, pkt.l3_len));
	}
}
END_TEST

/* The template's prefix lengths, and the parts that do not depend on a packet. */
/*
 * The GRH image a UD receive starts with: the IPv6 header as received, or
 * 20 zero bytes and the IPv4 header, which libibverbs tells apart by the
 * version nibbles and the IPv4 checksum (ibv_init_ah_from_wc).
 */
START_TEST(test_ud_grh)
{
	const struct variant *v = &variants[_i];
	static struct frame f;
	uint8_t grh[UR_GRH_LEN];
	struct ur_pkt pkt;

	build(&f, _i, UR_OP_UD_SEND_ONLY_IMM, 37);
	ck_assert_int_eq(ur_frame_parse(&pkt, f.buf, f.len), UR_PARSE_OK);
	memset(grh, 0xee, sizeof(grh));
	ur_pkt_grh(&pkt, grh);
	if (v->v6) {
		ck_assert_mem_eq(grh, l3(&f), UR_IPV6_HLEN);
		ck_assert_uint_eq(grh[0] >> 4, 6);
		ck_assert_mem_eq(grh + 8, sip6, 16);  /* the sender: ibv_init_ah_from_wc's dgid */
		ck_assert_mem_eq(grh + 24, dip6, 16);
		return;
	}
	for (unsigned i = 0; i < 20; i++)
		ck_assert_uint_eq(grh[i], 0);
	ck_assert_mem_eq(grh + 20, l3(&f), UR_IPV4_HLEN);
	ck_assert_uint_eq(grh[20], 0x45);
	ck_assert_uint_eq(ur_ipv4_csum(grh + 20, UR_IPV4_HLEN), 0);
	ck_assert_mem_eq(grh + 32, sip4, 4);
	ck_assert_mem_eq(grh + 36, dip4, 4);
	ck_assert_uint_eq(grh[21], TOS);
	ck_assert_uint_eq(grh[28], HOP_LIMIT);
}
END_TEST

START_TEST(test_template)
{
	static const uint8_t want_len[NVARIANTS] = {42, 46, 62, 66};
	struct ur_frame_tmpl t;
	struct ur_path p;

	for (int v = 0; v < NVARIANTS; v++) {
		make_path(&p, &variants[v]);
		ur_frame_tmpl_init(&t, &p);
		ck_assert_uint_eq(t.len, want_len[v]);
		ck_assert_uint_eq(t.l3_off, variants[v].vlan ? 18 : 14);
		ck_assert_uint_eq(t.ipv6, variants[v].v6);
		ck_assert_uint_le(t.len, UR_FRAME_MAX_HDR);
	}
}
END_TEST

START_TEST(test_gid_and_csum_helpers)
{
	/* the IPv4 header of the usual worked example: checksum 0xb861 */
	static const uint8_t hdr[20] = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
					0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
	uint8_t h[20];
	struct ur_gid g;

	ck_assert_uint_eq(ur_ipv4_csum(hdr, 20), 0xb861);
	memcpy(h, hdr, 20);
	ur_put_be16(h + 10, 0xb861);
	ck_assert_uint_eq(ur_ipv4_csum(h, 20), 0);

	ur_gid_from_v4(&g, sip4);
	ck_assert(ur_gid_is_v4(&g));
	ck_assert_uint_eq(g.raw[10], 0xff);
	ck_assert_uint_eq(g.raw[11], 0xff);
	ck_assert_mem_eq(g.raw + 12, sip4, 4);
	memcpy(g.raw, sip6, 16);
	ck_assert(!ur_gid_is_v4(&g));
}
END_TEST

static Suite *frame_suite(void)
{
	Suite *s = suite_create("frame");
	TCase *tc = tcase_create("frame");

	tcase_add_checked_fixture(tc, guard_setup, guard_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_template);
	tcase_add_test(tc, test_gid_and_csum_helpers);
	tcase_add_loop_test(tc, test_ud_grh, 0, NVARIANTS);
	tcase_add_loop_test(tc, test_roundtrip, 0, NVARIANTS * NROUNDTRIP_OPS);
	tcase_add_loop_test(tc, test_every_truncation, 0, NVARIANTS * NTRUNC);
	tcase_add_loop_test(tc, test_length_fields, 0, NVARIANTS);
	tcase_add_loop_test(tc, test_ip_version, 0, NVARIANTS);
	tcase_add_loop_test(tc, test_ipv4_header, 0, 2);
	tcase_add_loop_test(tc, test_ipv4_options, 0, 2);
	tcase_add_loop_test(tc, test_not_roce, 0, NVARIANTS);
	tcase_add_loop_test(tc, test_bad_bth, 0, NVARIANTS);
	tcase_add_loop_test(tc, test_pad_accounting, 0, NVARIANTS);
	tcase_add_loop_test(tc, test_bad_icrc, 0, NVARIANTS);
	tcase_add_loop_test(tc, test_masked_fields_rewritten, 0, NVARIANTS);
	tcase_add_loop_test(tc, test_ethernet_padding, 0, NVARIANTS);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	sr = srunner_create(frame_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
