/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The opcode table against IBTA Vol 1 table 38 (and Annex A17.9.2 for the
 * RoCEv2 CNP; annex A14 for XRC), typed in again here from the spec rather than derived from
 * opcode.h's X-macro: value, name, kind, position, the extension headers and
 * the byte offset of each from the start of the BTH, header length, payload.
 * All 256 opcodes are swept: anything uroce does not speak (RD, reserved,
 * manufacturer-specific) must be INVALID with an empty layout.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opcode.h"
#include "wire.h"

struct expect {
	uint8_t value;
	const char *name;
	uint8_t kind;
	uint8_t pos;
	uint8_t payload;
	uint8_t hdr_len;
	/* offsets from the start of the BTH; 0 = absent */
	uint8_t deth, reth, atmeth, aeth, atmack, immdt, ieth;
	uint8_t cnp; /* offset of the CNP's 16 reserved bytes */
	uint8_t xrceth;
};

#define SEND UR_KIND_SEND
#define WRITE UR_KIND_WRITE
#define RREQ UR_KIND_READ_REQ
#define RRSP UR_KIND_READ_RESP
#define ACK UR_KIND_ACK
#define ATOM UR_KIND_ATOMIC
#define AACK UR_KIND_ATOMIC_ACK
#define CNP UR_KIND_CNP
#define FIRST UR_POS_FIRST
#define MIDDLE UR_POS_MIDDLE
#define LAST UR_POS_LAST
#define ONLY UR_POS_ONLY

/* clang-format off */
/*     value  name                         kind   pos     pl len  DETH RETH AtmE AETH AAck Imm IETH CNP */
static const struct expect table38[] = {
	/* Reliable Connection, 000xxxxx */
	{0x00, "RC_SEND_FIRST",             SEND,  FIRST,  1, 12,  0,   0,   0,   0,   0,   0,   0,   0},
	{0x01, "RC_SEND_MIDDLE",            SEND,  MIDDLE, 1, 12,  0,   0,   0,   0,   0,   0,   0,   0},
	{0x02, "RC_SEND_LAST",              SEND,  LAST,   1, 12,  0,   0,   0,   0,   0,   0,   0,   0},
	{0x03, "RC_SEND_LAST_IMM",          SEND,  LAST,   1, 16,  0,   0,   0,   0,   0,  12,   0,   0},
	{0x04, "RC_SEND_ONLY",              SEND,  ONLY,   1, 12,  0,   0,   0,   0,   0,   0,   0,   0},
	{0x05, "RC_SEND_ONLY_IMM",          SEND,  ONLY,   1, 16,  0,   0,   0,   0,   0,  12,   0,   0},
	{0x06, "RC_WRITE_FIRST",            WRITE, FIRST,  1, 28,  0,  12,   0,   0,   0,   0,   0,   0},
	{0x07, "RC_WRITE_MIDDLE",           WRITE, MIDDLE, 1, 12,  0,   0,   0,   0,   0,   0,   0,   0},
	{0x08, "RC_WRITE_LAST",             WRITE, LAST,   1, 12,  0,   0,   0,   0,   0,   0,   0,   0},
	{0x09, "RC_WRITE_LAST_IMM",         WRITE, LAST,   1, 16,  0,   0,   0,   0,   0,  12,   0,   0},
	{0x0a, "RC_WRITE_ONLY",             WRITE, ONLY,   1, 28,  0,  12,   0,   0,   0,   0,   0,   0},
	{0x0b, "RC_WRITE_ONLY_IMM",         WRITE, ONLY,   1, 32,  0,  12,   0,   0,   0,  28,   0,   0},
	{0x0c, "RC_READ_REQUEST",           RREQ,  ONLY,   0, 28,  0,  12,   0,   0,   0,   0,   0,   0},
	{0x0d, "RC_READ_RESPONSE_FIRST",    RRSP,  FIRST,  1, 16,  0,   0,   0,  12,   0,   0,   0,   0},
	{0x0e, "RC_READ_RESPONSE_MIDDLE",   RRSP,  MIDDLE, 1, 12,  0,   0,   0,   0,   0,   0,   0,   0},
	{0x0f, "RC_READ_RESPONSE_LAST",     RRSP,  LAST,   1, 16,  0,   0,   0,  12,   0,   0,   0,   0},
	{0x10, "RC_READ_RESPONSE_ONLY",     RRSP,  ONLY,   1, 16,  0,   0,   0,  12,   0,   0,   0,   0},
	{0x11, "RC_ACKNOWLEDGE",            ACK,   ONLY,   0, 16,  0,   0,   0,  12,   0,   0,   0,   0},
	{0x12, "RC_ATOMIC_ACKNOWLEDGE",     AACK,  ONLY,   0, 24,  0,   0,   0,  12,  16,   0,   0,   0},
	{0x13, "RC_COMPARE_SWAP",           ATOM,  ONLY,   0, 40,  0,   0,  12,   0,   0,   0,   0,   0},
	{0x14, "RC_FETCH_ADD",              ATOM,  ONLY,   0, 40,  0,   0,  12,   0,   0,   0,   0,   0},
	/* 0x15 reserved */
	{0x16, "RC_SEND_LAST_INV",          SEND,  LAST,   1, 16,  0,   0,   0,   0,   0,   0,  12,   0},
	{0x17, "RC_SEND_ONLY_INV",          SEND,  ONLY,   1, 16,  0,   0,   0,   0,   0,   0,  12,   0},
	/* Unreliable Connection, 001xxxxx: SEND and RDMA WRITE only */
	{0x20, "UC_SEND_FIRST",             SEND,  FIRST,  1, 12,  0,   0,   0,   0,   0,   0,   0,   0},
	{0x21, "UC_SEND_MIDDLE",            SEND,  MIDDLE, 1, 12,  0,   0,   0,   0,   0,   0,   0,   0},
	{0x22, "UC_SEND_LAST",              SEND,  LAST,   1, 12,  0,   0,   0,   0,   0,   0,   0,   0},
	{0x23, "UC_SEND_LAST_IMM",          SEND,  LAST,   1, 16,  0,   0,   0,   0,   0,  12,   0,   0},
	{0x24, "UC_SEND_ONLY",              SEND,  ONLY,   1, 12,  0,   0,   0,   0,   0,   0,   0,   0},
	{0x25, "UC_SEND_ONLY_IMM",          SEND,  ONLY,   1, 16,  0,   0,   0,   0,   0,  12,   0,   0},
	{0x26, "UC_WRITE_FIRST",            WRITE, FIRST,  1, 28,  0,  12,   0,   0,   0,   0,   0,   0},
	{0x27, "UC_WRITE_MIDDLE",           WRITE, MIDDLE, 1, 12,  0,   0,   0,   0,   0,   0,   0,   0},
	{0x28, "UC_WRITE_LAST",             WRITE, LAST,   1, 12,  0,   0,   0,   0,   0,   0,   0,   0},
	{0x29, "UC_WRITE_LAST_IMM",         WRITE, LAST,   1, 16,  0,   0,   0,   0,   0,  12,   0,   0},
	{0x2a, "UC_WRITE_ONLY",             WRITE, ONLY,   1, 28,  0,  12,   0,   0,   0,   0,   0,   0},
	{0x2b, "UC_WRITE_ONLY_IMM",         WRITE, ONLY,   1, 32,  0,  12,   0,   0,   0,  28,   0,   0},
	/* Unreliable Datagram, 011xxxxx: SEND ONLY only */
	{0x64, "UD_SEND_ONLY",              SEND,  ONLY,   1, 20, 12,   0,   0,   0,   0,   0,   0,   0},
	{0x65, "UD_SEND_ONLY_IMM",          SEND,  ONLY,   1, 24, 12,   0,   0,   0,   0,  20,   0,   0},
	/* RoCEv2 Congestion Notification Packet: BTH + 16 reserved bytes */
	{0x81, "CNP",                       CNP,   ONLY,   0, 28,  0,   0,   0,   0,   0,   0,   0,  12},
	/* Extended Reliable Connection, 101xxxxx (annex A14): RC's operations; every
	 * request has an XRCETH right after the BTH, responses have none   XRCETH */
	{0xa0, "XRC_SEND_FIRST",            SEND,  FIRST,  1, 16,  0,   0,   0,   0,   0,   0,   0,   0,  12},
	{0xa1, "XRC_SEND_MIDDLE",           SEND,  MIDDLE, 1, 16,  0,   0,   0,   0,   0,   0,   0,   0,  12},
	{0xa2, "XRC_SEND_LAST",             SEND,  LAST,   1, 16,  0,   0,   0,   0,   0,   0,   0,   0,  12},
	{0xa3, "XRC_SEND_LAST_IMM",         SEND,  LAST,   1, 20,  0,   0,   0,   0,   0,  16,   0,   0,  12},
	{0xa4, "XRC_SEND_ONLY",             SEND,  ONLY,   1, 16,  0,   0,   0,   0,   0,   0,   0,   0,  12},
	{0xa5, "XRC_SEND_ONLY_IMM",         SEND,  ONLY,   1, 20,  0,   0,   0,   0,   0,  16,   0,   0,  12},
	{0xa6, "XRC_WRITE_FIRST",           WRITE, FIRST,  1, 32,  0,  16,   0,   0,   0,   0,   0,   0,  12},
	{0xa7, "XRC_WRITE_MIDDLE",          WRITE, MIDDLE, 1, 16,  0,   0,   0,   0,   0,   0,   0,   0,  12},
	{0xa8, "XRC_WRITE_LAST",            WRITE, LAST,   1, 16,  0,   0,   0,   0,   0,   0,   0,   0,  12},
	{0xa9, "XRC_WRITE_LAST_IMM",        WRITE, LAST,   1, 20,  0,   0,   0,   0,   0,  16,   0,   0,  12},
	{0xaa, "XRC_WRITE_ONLY",            WRITE, ONLY,   1, 32,  0,  16,   0,   0,   0,   0,   0,   0,  12},
	{0xab, "XRC_WRITE_ONLY_IMM",        WRITE, ONLY,   1, 36,  0,  16,   0,   0,   0,  32,   0,   0,  12},
	{0xac, "XRC_READ_REQUEST",          RREQ,  ONLY,   0, 32,  0,  16,   0,   0,   0,   0,   0,   0,  12},
	{0xad, "XRC_READ_RESPONSE_FIRST",   RRSP,  FIRST,  1, 16,  0,   0,   0,  12,   0,   0,   0,   0,   0},
	{0xae, "XRC_READ_RESPONSE_MIDDLE",  RRSP,  MIDDLE, 1, 12,  0,   0,   0,   0,   0,   0,   0,   0,   0},
	{0xaf, "XRC_READ_RESPONSE_LAST",    RRSP,  LAST,   1, 16,  0,   0,   0,  12,   0,   0,   0,   0,   0},
	{0xb0, "XRC_READ_RESPONSE_ONLY",    RRSP,  ONLY,   1, 16,  0,   0,   0,  12,   0,   0,   0,   0,   0},
	{0xb1, "XRC_ACKNOWLEDGE",           ACK,   ONLY,   0, 16,  0,   0,   0,  12,   0,   0,   0,   0,   0},
	{0xb2, "XRC_ATOMIC_ACKNOWLEDGE",    AACK,  ONLY,   0, 24,  0,   0,   0,  12,  16,   0,   0,   0,   0},
	{0xb3, "XRC_COMPARE_SWAP",          ATOM,  ONLY,   0, 44,  0,   0,  16,   0,   0,   0,   0,   0,  12},
	{0xb4, "XRC_FETCH_ADD",             ATOM,  ONLY,   0, 44,  0,   0,  16,   0,   0,   0,   0,   0,  12},
	/* 0xb5 reserved */
	{0xb6, "XRC_SEND_LAST_INV",         SEND,  LAST,   1, 20,  0,   0,   0,   0,   0,   0,  16,   0,  12},
	{0xb7, "XRC_SEND_ONLY_INV",         SEND,  ONLY,   1, 20,  0,   0,   0,   0,   0,   0,  16,   0,  12},
};
/* clang-format on */

#define NEXPECT ((int)(sizeof(table38) / sizeof(table38[0])))

static const struct expect *expected(unsigned opcode)
{
	for (int i = 0; i < NEXPECT; i++)
		if (table38[i].value == opcode)
			return &table38[i];
	return NULL;
}

static uint16_t expected_hdrs(const struct expect *e)
{
	return (e->xrceth ? UR_HDR_XRCETH : 0) | (e->deth ? UR_HDR_DETH : 0) |
	       (e->reth ? UR_HDR_RETH : 0) | (e->atmeth ? UR_HDR_ATMETH : 0) |
	       (e->aeth ? UR_HDR_AETH : 0) | (e->atmack ? UR_HDR_ATMACK : 0) |
	       (e->immdt ? UR_HDR_IMMDT : 0) | (e->ieth ? UR_HDR_IETH : 0) |
	       (e->cnp ? UR_HDR_CNP : 0);
}

/* Every one of the 256 opcodes: the layout of table 38, or INVALID and empty. */
START_TEST(test_every_opcode)
{
	const unsigned opcode = (unsigned)_i;
	const struct ur_opcode_info *op = ur_opcode_get((uint8_t)opcode);
	const struct expect *e = expected(opcode);

	ck_assert_ptr_eq(op, &ur_opcode_table[opcode]);
	if (!e) {
		ck_assert_msg(op->kind == UR_KIND_INVALID, "opcode %#04x: kind %u, want INVALID",
			      opcode, op->kind);
		ck_assert(!ur_opcode_valid((uint8_t)opcode));
		ck_assert_str_eq(ur_opcode_name((uint8_t)opcode), "INVALID");
		ck_assert_uint_eq(op->hdrs, 0);
		ck_assert_uint_eq(op->hdr_len, 0);
		ck_assert_uint_eq(op->payload, 0);
		return;
	}
	ck_assert(ur_opcode_valid((uint8_t)opcode));
	ck_assert_str_eq(ur_opcode_name((uint8_t)opcode), e->name);
	ck_assert_str_eq(op->name, e->name);
	ck_assert_msg(op->kind == e->kind, "%s: kind %u, want %u", e->name, op->kind, e->kind);
	ck_assert_msg(op->pos == e->pos, "%s: pos %u, want %u", e->name, op->pos, e->pos);
	ck_assert_msg(op->hdrs == expected_hdrs(e), "%s: hdrs %#x, want %#x", e->name, op->hdrs,
		      expected_hdrs(e));
	ck_assert_msg(op->hdr_len == e->hdr_len, "%s: hdr_len %u, want %u", e->name, op->hdr_len,
		      e->hdr_len);
	ck_assert_msg(!!op->payload == e->payload, "%s: payload %u", e->name, op->payload);
	ck_assert_uint_eq(op->off_deth, e->deth);
	ck_assert_uint_eq(op->off_xrceth, e->xrceth);
	ck_assert_uint_eq(op->off_reth, e->reth);
	ck_assert_uint_eq(op->off_atmeth, e->atmeth);
	ck_assert_uint_eq(op->off_aeth, e->aeth);
	ck_assert_uint_eq(op->off_atmack, e->atmack);
	ck_assert_uint_eq(op->off_immdt, e->immdt);
	ck_assert_uint_eq(op->off_ieth, e->ieth);
}
END_TEST

/* The examples the spec's figures give, spelled out. */
START_TEST(test_spot_checks)
{
	const struct ur_opcode_info *op;

	op = ur_opcode_get(UR_OP_RC_WRITE_ONLY_IMM);
	ck_assert_uint_eq(UR_OP_RC_WRITE_ONLY_IMM, 0x0b);
	ck_assert_uint_eq(op->off_reth, 12);
	ck_assert_uint_eq(op->off_immdt, 28);
	ck_assert_uint_eq(op->hdr_len, 32);

	op = ur_opcode_get(UR_OP_RC_ATOMIC_ACKNOWLEDGE);
	ck_assert_uint_eq(UR_OP_RC_ATOMIC_ACKNOWLEDGE, 0x12);
	ck_assert_uint_eq(op->off_aeth, 12);
	ck_assert_uint_eq(op->off_atmack, 16);
	ck_assert_uint_eq(op->hdr_len, 24);

	op = ur_opcode_get(UR_OP_UD_SEND_ONLY_IMM);
	ck_assert_uint_eq(UR_OP_UD_SEND_ONLY_IMM, 0x65);
	ck_assert_uint_eq(op->off_deth, 12);
	ck_assert_uint_eq(op->off_immdt, 20);
	ck_assert_uint_eq(op->hdr_len, 24);

	op = ur_opcode_get(UR_OP_CNP);
	ck_assert_uint_eq(UR_OP_CNP, 0x81);
	ck_assert_uint_eq(op->hdr_len, 12 + UR_CNP_PAYLOAD);
	ck_assert_uint_eq(op->hdr_len, 28);

	op = ur_opcode_get(UR_OP_RC_COMPARE_SWAP);
	ck_assert_uint_eq(op->off_atmeth, 12);
	ck_assert_uint_eq(op->hdr_len, 12 + sizeof(struct ur_atmeth));
}
END_TEST

/* Enum values equal the table's, and each enum constant names its own entry. */
START_TEST(test_enum_values)
{
#define CHECK_ENUM(nm, val, knd, position, hs, pl)                                                 \
	ck_assert_uint_eq(UR_OP_##nm, val);                                                        \
	ck_assert_ptr_nonnull(expected(val));                                                      \
	ck_assert_str_eq(expected(val)->name, #nm);
	UR_OPCODES(CHECK_ENUM)
#undef CHECK_ENUM
	/* and table 38 has nothing the X-macro lacks */
	for (int i = 0; i < NEXPECT; i++)
		ck_assert_msg(ur_opcode_valid(table38[i].value), "%s missing", table38[i].name);
}
END_TEST

/*
 * UC SEND and RDMA WRITE opcodes are the RC ones with the transport bits set
 * to 001 (table 38); READ, atomics, acknowledgements and SEND with Invalidate
 * have no UC form.
 */
START_TEST(test_uc_is_rc_plus_0x20)
{
	for (unsigned rc = 0; rc < 0x20; rc++) {
		const struct ur_opcode_info *r = ur_opcode_get((uint8_t)rc);
		const struct ur_opcode_info *u = ur_opcode_get((uint8_t)(rc | UR_TRANSPORT_UC));
		bool has_uc = r->kind == UR_KIND_SEND || r->kind == UR_KIND_WRITE;

		if (r->hdrs & UR_HDR_IETH)
			has_uc = false;
		if (!has_uc) {
			ck_assert_msg(u->kind == UR_KIND_INVALID,
				      "UC opcode %#04x should not exist", rc | UR_TRANSPORT_UC);
			continue;
		}
		ck_assert_uint_eq(u->kind, r->kind);
		ck_assert_uint_eq(u->pos, r->pos);
		ck_assert_uint_eq(u->hdrs, r->hdrs);
		ck_assert_uint_eq(u->hdr_len, r->hdr_len);
		ck_assert_uint_eq(u->off_reth, r->off_reth);
		ck_assert_uint_eq(u->off_immdt, r->off_immdt);
		ck_assert_uint_eq(u->payload, r->payload);
		ck_assert_str_eq(u->name + 3, r->name + 3); /* same after "RC_"/"UC_" */
		ck_assert_int_eq(strncmp(u->name, "UC_", 3), 0);
	}
}
END_TEST

/*
 * XRC opcodes are the RC ones with the transport bits 101 (annex A14): the
 * same operations, and every request (SEND, WRITE, READ, atomic) carries an
 * XRCETH right after the BTH, pushing the rest 4 bytes on; responses do not.
 */
START_TEST(test_xrc_is_rc_plus_0xa0)
{
	for (unsigned rc = 0; rc < 0x20; rc++) {
		const struct ur_opcode_info *r = ur_opcode_get((uint8_t)rc);
		const struct ur_opcode_info *x = ur_opcode_get((uint8_t)(rc | UR_TRANSPORT_XRC));
		bool request = r->kind == UR_KIND_SEND || r->kind == UR_KIND_WRITE ||
			       r->kind == UR_KIND_READ_REQ || r->kind == UR_KIND_ATOMIC;
		unsigned shift = request ? sizeof(struct ur_xrceth) : 0;

		ck_assert_uint_eq(x->kind, r->kind);
		if (r->kind == UR_KIND_INVALID)
			continue;
		ck_assert_uint_eq(x->pos, r->pos);
		ck_assert_uint_eq(x->hdrs, r->hdrs | (request ? UR_HDR_XRCETH : 0));
		ck_assert_uint_eq(x->hdr_len, r->hdr_len + shift);
		ck_assert_uint_eq(x->off_xrceth, request ? 12 : 0);
		ck_assert_uint_eq(x->off_reth, r->off_reth ? r->off_reth + shift : 0);
		ck_assert_uint_eq(x->off_atmeth, r->off_atmeth ? r->off_atmeth + shift : 0);
		ck_assert_uint_eq(x->off_immdt, r->off_immdt ? r->off_immdt + shift : 0);
		ck_assert_uint_eq(x->off_ieth, r->off_ieth ? r->off_ieth + shift : 0);
		ck_assert_uint_eq(x->off_aeth, r->off_aeth);
		ck_assert_uint_eq(x->payload, r->payload);
		ck_assert_str_eq(x->name + 4, r->name + 3); /* same after "XRC_"/"RC_" */
	}
}
END_TEST

/* The XRCETH's SRQ number: 24 bits after 8 reserved ones, round trip at 0 and the maximum. */
START_TEST(test_xrceth_round_trip)
{
	struct ur_xrceth h;

	memset(&h, 0xff, sizeof(h));
	ur_xrceth_set_srqn(&h, 0);
	ck_assert_uint_eq(h.srqn[0], 0); /* reserved bits sent as zero */
	ck_assert_uint_eq(ur_xrceth_srqn(&h), 0);
	ur_xrceth_set_srqn(&h, 0xffffff);
	ck_assert_uint_eq(ur_xrceth_srqn(&h), 0xffffff);
	ck_assert_uint_eq(h.srqn[0], 0);
	ur_xrceth_set_srqn(&h, 0x12345678); /* only 24 bits are kept */
	ck_assert_uint_eq(ur_xrceth_srqn(&h), 0x345678);
	ck_assert_uint_eq(h.srqn[1], 0x34);
	ck_assert_uint_eq(h.srqn[3], 0x78);
	h.srqn[0] = 0xff; /* a reserved byte a sender set is ignored */
	ck_assert_uint_eq(ur_xrceth_srqn(&h), 0x345678);
}
END_TEST

/* The top three bits name the transport, and the name says the same. */
START_TEST(test_transport_prefix)
{
	for (unsigned v = 0; v < 256; v++) {
		const struct ur_opcode_info *op = ur_opcode_get((uint8_t)v);
		const char *want;

		if (op->kind == UR_KIND_INVALID)
			continue;
		switch (v & UR_TRANSPORT_MASK) {
		case UR_TRANSPORT_RC:
			want = "RC_";
			break;
		case UR_TRANSPORT_UC:
			want = "UC_";
			break;
		case UR_TRANSPORT_UD:
			want = "UD_";
			break;
		case UR_TRANSPORT_CNP:
			want = "CNP";
			break;
		case UR_TRANSPORT_XRC:
			want = "XRC";
			break;
		default:
			ck_abort_msg("opcode %#04x valid in transport %#x", v,
				     v & UR_TRANSPORT_MASK);
			return;
		}
		ck_assert_msg(strncmp(op->name, want, 3) == 0, "%#04x is %s", v, op->name);
	}
}
END_TEST

/*
 * Headers appear in the order of 9.2 and back to back: each present header
 * starts where the previous one ended, and the payload right after the last.
 */
START_TEST(test_headers_contiguous)
{
	static const struct {
		uint16_t bit;
		uint8_t size;
	} order[] = {
	    {UR_HDR_DETH, 8},	 {UR_HDR_XRCETH, 4}, {UR_HDR_RETH, 16},
	    {UR_HDR_ATMETH, 28}, {UR_HDR_AETH, 4},   {UR_HDR_ATMACK, 8},
	    {UR_HDR_IMMDT, 4},	 {UR_HDR_IETH, 4},   {UR_HDR_CNP, 16},
	};

	for (unsigned v = 0; v < 256; v++) {
		const struct ur_opcode_info *op = ur_opcode_get((uint8_t)v);
		const uint8_t offs[] = {
		    op->off_deth,   op->off_xrceth, op->off_reth,
		    op->off_atmeth, op->off_aeth,   op->off_atmack,
		    op->off_immdt,  op->off_ieth,   12 /* CNP: right after the BTH */};
		unsigned at = sizeof(struct ur_bth);

		if (op->kind == UR_KIND_INVALID)
			continue;
		for (unsigned k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
			if (!(op->hdrs & order[k].bit))
				continue;
			ck_assert_msg(offs[k] == at, "%s: header %#x at %u, want %u", op->name,
				      order[k].bit, offs[k], at);
			at += order[k].size;
		}
		ck_assert_msg(op->hdr_len == at, "%s: hdr_len %u, headers end at %u", op->name,
			      op->hdr_len, at);
	}
}
END_TEST

static Suite *opcode_suite(void)
{
	Suite *s = suite_create("opcode");
	TCase *tc = tcase_create("table38");

	tcase_add_loop_test(tc, test_every_opcode, 0, 256);
	tcase_add_test(tc, test_spot_checks);
	tcase_add_test(tc, test_enum_values);
	tcase_add_test(tc, test_uc_is_rc_plus_0x20);
	tcase_add_test(tc, test_xrc_is_rc_plus_0xa0);
	tcase_add_test(tc, test_xrceth_round_trip);
	tcase_add_test(tc, test_transport_prefix);
	tcase_add_test(tc, test_headers_contiguous);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	sr = srunner_create(opcode_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
