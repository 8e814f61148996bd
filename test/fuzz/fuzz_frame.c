/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target: ur_frame_parse() on arbitrary bytes, every header
 * decoder behind it, and the ICRC of what it parsed.
 *
 * Properties checked beyond "no crash, no sanitizer report":
 *  - every pointer and length the parser hands out lies inside the frame,
 *    and the RoCE lengths add up (headers + payload + pad + ICRC = UDP data);
 *  - a frame accepted as UR_PARSE_OK has a valid ICRC; a selective-repeat
 *    extension or control datagram (UR_PARSE_CONTROL) stays inside the frame;
 *  - a frame refused only for its ICRC parses as UR_PARSE_OK once the ICRC
 *    is recomputed, and ur_icrc_valid() agrees with the parser both ways;
 *  - a datagram to QP 1 that decodes as a CM MAD encodes and decodes back
 *    to the same message.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cm_mad.h"
#include "frame.h"
#include "icrc.h"
#include "opcode.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c))                                                                          \
			abort();                                                                   \
	} while (0)

static volatile uint64_t sink; /* keeps the decoders' results alive */

static bool inside(const struct ur_pkt *p, const uint8_t *ptr, size_t len)
{
	return ptr >= p->frame && (size_t)(ptr - p->frame) <= p->frame_len &&
	       len <= p->frame_len - (size_t)(ptr - p->frame);
}

/* Read every extension header the opcode says is there, through its accessors. */
static void decode_headers(const struct ur_pkt *p)
{
	const struct ur_opcode_info *op = p->op;
	const uint8_t *b = (const uint8_t *)p->bth;
	uint64_t v = 0;

	CHECK(inside(p, b, op->hdr_len));
	v += ur_bth_opcode(p->bth) + ur_bth_se(p->bth) + ur_bth_mig(p->bth) +
	     ur_bth_padcnt(p->bth) + ur_bth_tver(p->bth) + ur_bth_pkey(p->bth) +
	     ur_bth_fecn(p->bth) + ur_bth_becn(p->bth) + ur_bth_ackreq(p->bth) +
	     ur_bth_resv7(p->bth);
	CHECK(ur_bth_dqpn(p->bth) == p->dqpn && p->dqpn <= 0xffffff);
	CHECK(ur_bth_psn(p->bth) == p->psn && p->psn <= 0xffffff);
	if (op->hdrs & UR_HDR_DETH) {
		const struct ur_deth *h = (const void *)(b + op->off_deth);

		CHECK(op->off_deth + sizeof(*h) <= op->hdr_len);
		v += ur_deth_qkey(h) + ur_deth_sqpn(h);
	}
	if (op->hdrs & UR_HDR_RETH) {
		const struct ur_reth *h = (const void *)(b + op->off_reth);

		CHECK(op->off_reth + sizeof(*h) <= op->hdr_len);
		v += ur_reth_va(h) + ur_reth_rkey(h) + ur_reth_dmalen(h);
	}
	if (op->hdrs & UR_HDR_ATMETH) {
		const struct ur_atmeth *h = (const void *)(b + op->off_atmeth);

		CHECK(op->off_atmeth + sizeof(*h) <= op->hdr_len);
		v += ur_atmeth_va(h) + ur_atmeth_rkey(h) + ur_atmeth_swap_add(h) +
		     ur_atmeth_compare(h);
	}
	if (op->hdrs & UR_HDR_AETH) {
		const struct ur_aeth *h = (const void *)(b + op->off_aeth);

		CHECK(op->off_aeth + sizeof(*h) <= op->hdr_len);
		v += ur_aeth_syndrome(h) + ur_aeth_msn(h);
	}
	if (op->hdrs & UR_HDR_ATMACK) {
		const struct ur_atmack *h = (const void *)(b + op->off_atmack);

		CHECK(op->off_atmack + sizeof(*h) <= op->hdr_len);
		v += ur_atmack_orig(h);
	}
	if (op->hdrs & UR_HDR_IMMDT) {
		const struct ur_immdt *h = (const void *)(b + op->off_immdt);

		CHECK(op->off_immdt + sizeof(*h) <= op->hdr_len);
		v += ur_immdt_raw(h);
	}
	if (op->hdrs & UR_HDR_IETH) {
		const struct ur_ieth *h = (const void *)(b + op->off_ieth);

		CHECK(op->off_ieth + sizeof(*h) <= op->hdr_len);
		v += ur_ieth_rkey(h);
	}
	sink += v;
}

/* Structural checks on a frame the parser got through (OK or only a bad ICRC). */
/* The GSI's payload through the CM codec: what decodes, re-encodes to the same message. */
static void check_cm_mad(const struct ur_pkt *p)
{
	static struct ur_cm_mad m, again;
	uint8_t out[UR_MAD_LEN];

	if (ur_cm_mad_decode(&m, p->payload, p->payload_len))
		return;
	CHECK(p->payload_len >= UR_MAD_LEN);
	CHECK(ur_cm_mad_encode(&m, out, sizeof(out)) == 0);
	CHECK(ur_cm_mad_decode(&again, out, sizeof(out)) == 0);
	CHECK(!memcmp(&m, &again, sizeof(m)));
	sink += m.hdr.tid;
}

static void check_parsed(const struct ur_pkt *p, const uint8_t *frame, size_t size)
{
	uint32_t roce_len, pad, ext;

	CHECK(p->frame == frame && p->frame_len == size);
	CHECK(inside(p, p->l3, p->l3_len));
	CHECK(inside(p, (const uint8_t *)p->bth, sizeof(struct ur_bth)));
	CHECK(p->op == ur_opcode_get(p->opcode) && ur_opcode_valid(p->opcode));
	CHECK(inside(p, p->payload, p->payload_len));
	/* BTH..ICRC: headers + payload + pad + ICRC, and it ends where l3 ends */
	pad = ur_bth_padcnt(p->bth);
	ext = 0;
	if (p->sr_ext) {
		/* uroce selective repeat: one extension header between headers and payload */
		ext = ur_sr_ext_len(p->op->kind);
		CHECK(ur_bth_sr(p->bth) && ext);
		CHECK(p->sr_ext == (const uint8_t *)p->bth + p->op->hdr_len);
		CHECK(inside(p, p->sr_ext, ext));
		if (ext == sizeof(struct ur_sreth)) {
			const struct ur_sreth *h = (const void *)p->sr_ext;

			sink += ur_sreth_rseq(h) + ur_sreth_offset(h) + ur_sreth_va(h) +
				ur_sreth_rkey(h);
		} else {
			const struct ur_sack *h = (const void *)p->sr_ext;

			CHECK(ext == sizeof(struct ur_sack));
			sink += ur_sack_base(h);
			for (unsigned i = 0; i < UR_SACK_BITS; i++)
				sink += ur_sack_bit(h, i);
		}
	} else {
		CHECK(!ur_bth_sr(p->bth));
	}
	roce_len = p->op->hdr_len + ext + p->payload_len + pad + UR_ICRC_SIZE;
	CHECK(p->payload == (const uint8_t *)p->bth + p->op->hdr_len + ext);
	CHECK((const uint8_t *)p->bth + roce_len == p->l3 + p->l3_len);
	CHECK(p->op->payload || p->payload_len == 0);
	CHECK(p->ipv6 == (p->l3[0] >> 4 == 6));
	if (!p->ipv6) {
		CHECK(ur_gid_is_v4(&p->sgid) && ur_gid_is_v4(&p->dgid));
		CHECK(ur_ipv4_csum(p->l3, (p->l3[0] & 0xf) * 4u) == 0);
	}
	decode_headers(p);
	sink += p->udp_sport + p->tos + p->hop_limit + p->smac[0] + p->dmac[5];
	if (p->dqpn == UR_GSI_QPN)
		check_cm_mad(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ur_pkt pkt;
	enum ur_parse_err e;
	uint8_t *copy;

	if (size > 65536)
		return 0;
	e = ur_frame_parse(&pkt, data, (uint32_t)size);
	if (e == UR_PARSE_CONTROL) {
		/* a selective-repeat negotiation datagram: UDP payload only */
		CHECK(pkt.frame == data && pkt.frame_len == size);
		CHECK(inside(&pkt, pkt.l3, pkt.l3_len));
		CHECK(inside(&pkt, pkt.payload, pkt.payload_len));
		CHECK(pkt.payload + pkt.payload_len == pkt.l3 + pkt.l3_len);
		if (pkt.payload_len >= sizeof(struct ur_sr_ctrl)) {
			const struct ur_sr_ctrl *m = (const void *)pkt.payload;

			sink += ur_get_be32(m->magic) + m->version + m->type +
				ur_get_be16(m->window) + ur_get_be32(m->dqpn) +
				ur_get_be32(m->sqpn);
		}
		return 0;
	}
	if (e != UR_PARSE_OK && e != UR_PARSE_BAD_ICRC)
		return 0;
	check_parsed(&pkt, data, size);
	CHECK(ur_icrc_valid(pkt.l3, pkt.l3_len) == (e == UR_PARSE_OK));
	if (e == UR_PARSE_OK)
		return 0;

	/* Only the ICRC was wrong: with it recomputed the frame must be accepted. */
	copy = malloc(size);
	CHECK(copy);
	memcpy(copy, data, size);
	{
		uint8_t *l3 = copy + (pkt.l3 - data);
		uint32_t body = pkt.l3_len - UR_ICRC_SIZE;

		ur_icrc_store(l3 + body, ur_icrc_compute(l3, body));
		e = ur_frame_parse(&pkt, copy, (uint32_t)size);
		CHECK(e == UR_PARSE_OK);
		check_parsed(&pkt, copy, size);
		CHECK(ur_icrc_valid(pkt.l3, pkt.l3_len));
	}
	free(copy);
	return 0;
}
