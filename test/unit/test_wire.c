/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Every header accessor of wire.h against the layouts of IBTA Vol 1 9.2 and
 * 9.3 (and the RoCEv2 use of the BTH's resv8a byte): each field round trips
 * at 0 and at its maximum, lands at the byte and bit position the spec gives
 * it, in network byte order, and never touches a neighbouring bit. The
 * neighbours are set to ones when the field is cleared and to zeros when the
 * field is filled, and a setter handed a value wider than its field still
 * stores only the field.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

#define HDR_MAX 28 /* the largest header, AtomicETH */

enum byte_order {
	BE,  /* network order, most significant byte first */
	RAW, /* carried as the caller's bytes (ImmDt) */
};

/*
 * One field: where the spec puts it, how wide it is, and the accessor pair.
 * A field is either `nbytes` whole bytes at `off`, or the bits `bits` of the
 * single byte at `off` (then nbytes is 1).
 */
struct field {
	const char *name;
	size_t hsize;
	unsigned off;
	unsigned nbytes;
	uint8_t bits; /* 0: the whole bytes */
	enum byte_order order;
	uint64_t max;
	uint64_t (*get)(const void *h);
	void (*set)(void *h, uint64_t v);
};

/* Wrap the typed inline accessors in a uniform shape. */
#define ACCESSOR(hdr, fld)                                                                         \
	static uint64_t get_##hdr##_##fld(const void *h)                                           \
	{                                                                                          \
		return (uint64_t)ur_##hdr##_##fld((const struct ur_##hdr *)h);                     \
	}                                                                                          \
	static void set_##hdr##_##fld(void *h, uint64_t v)                                         \
	{                                                                                          \
		ur_##hdr##_set_##fld((struct ur_##hdr *)h, v);                                     \
	}

/* Boolean setters take a bool: hand them "nonzero", as a caller would. */
#define ACCESSOR_BOOL(hdr, fld)                                                                    \
	static uint64_t get_##hdr##_##fld(const void *h)                                           \
	{                                                                                          \
		return ur_##hdr##_##fld((const struct ur_##hdr *)h) ? 1 : 0;                       \
	}                                                                                          \
	static void set_##hdr##_##fld(void *h, uint64_t v)                                         \
	{                                                                                          \
		ur_##hdr##_set_##fld((struct ur_##hdr *)h, v != 0);                                \
	}

ACCESSOR(bth, opcode)
ACCESSOR_BOOL(bth, se)
ACCESSOR_BOOL(bth, mig)
ACCESSOR(bth, padcnt)
ACCESSOR(bth, tver)
ACCESSOR(bth, pkey)
ACCESSOR_BOOL(bth, fecn)
ACCESSOR_BOOL(bth, becn)
ACCESSOR(bth, dqpn)
ACCESSOR_BOOL(bth, ackreq)
ACCESSOR(bth, resv7)
ACCESSOR(bth, psn)
ACCESSOR(reth, va)
ACCESSOR(reth, rkey)
ACCESSOR(reth, dmalen)
ACCESSOR(aeth, syndrome)
ACCESSOR(aeth, msn)
ACCESSOR(atmeth, va)
ACCESSOR(atmeth, rkey)
ACCESSOR(atmeth, swap_add)
ACCESSOR(atmeth, compare)
ACCESSOR(atmack, orig)
ACCESSOR(immdt, raw)
ACCESSOR(ieth, rkey)
ACCESSOR(deth, qkey)
ACCESSOR(deth, sqpn)

#define F(hdr, fld, o, n, b, ord, mx)                                                              \
	{                                                                                          \
		.name = #hdr "." #fld, .hsize = sizeof(struct ur_##hdr), .off = (o),               \
		.nbytes = (n), .bits = (b), .order = (ord), .max = (mx), .get = get_##hdr##_##fld, \
		.set = set_##hdr##_##fld,                                                          \
	}

/* Positions from IBTA Vol 1 figures 9.2 (BTH) and 9.3.x, not from wire.h. */
static const struct field fields[] = {
    /* BTH: OpCode | SE M PadCnt(2) TVer(4) | P_Key(16) | resv8a | DestQP(24) |
     * AckReq resv7 | PSN(24); RoCEv2 puts FECN and BECN in resv8a's top bits */
    F(bth, opcode, 0, 1, 0, BE, 0xff),
    F(bth, se, 1, 1, 0x80, BE, 1),
    F(bth, mig, 1, 1, 0x40, BE, 1),
    F(bth, padcnt, 1, 1, 0x30, BE, 3),
    F(bth, tver, 1, 1, 0x0f, BE, 0xf),
    F(bth, pkey, 2, 2, 0, BE, 0xffff),
    F(bth, fecn, 4, 1, 0x80, BE, 1),
    F(bth, becn, 4, 1, 0x40, BE, 1),
    F(bth, dqpn, 5, 3, 0, BE, 0xffffff),
    F(bth, ackreq, 8, 1, 0x80, BE, 1),
    F(bth, resv7, 8, 1, 0x7f, BE, 0x7f),
    F(bth, psn, 9, 3, 0, BE, 0xffffff),
    /* RETH: VA(64) R_Key(32) DMA Length(32) */
    F(reth, va, 0, 8, 0, BE, UINT64_MAX),
    F(reth, rkey, 8, 4, 0, BE, UINT32_MAX),
    F(reth, dmalen, 12, 4, 0, BE, UINT32_MAX),
    /* AETH: Syndrome(8) MSN(24) */
    F(aeth, syndrome, 0, 1, 0, BE, 0xff),
    F(aeth, msn, 1, 3, 0, BE, 0xffffff),
    /* AtomicETH: VA(64) R_Key(32) Swap/Add(64) Compare(64) */
    F(atmeth, va, 0, 8, 0, BE, UINT64_MAX),
    F(atmeth, rkey, 8, 4, 0, BE, UINT32_MAX),
    F(atmeth, swap_add, 12, 8, 0, BE, UINT64_MAX),
    F(atmeth, compare, 20, 8, 0, BE, UINT64_MAX),
    /* AtomicAckETH: Original Remote Data(64) */
    F(atmack, orig, 0, 8, 0, BE, UINT64_MAX),
    /* ImmDt: 32 bits the verbs consumer already put in network order */
    F(immdt, raw, 0, 4, 0, RAW, UINT32_MAX),
    /* IETH: R_Key(32) */
    F(ieth, rkey, 0, 4, 0, BE, UINT32_MAX),
    /* DETH: Q_Key(32) reserved(8) SrcQP(24) */
    F(deth, qkey, 0, 4, 0, BE, UINT32_MAX),
    F(deth, sqpn, 5, 3, 0, BE, 0xffffff),
};

#define NFIELDS ((int)(sizeof(fields) / sizeof(fields[0])))

/* Which bits of the header belong to the field. */
static void field_mask(const struct field *f, uint8_t mask[HDR_MAX])
{
	memset(mask, 0, HDR_MAX);
	if (f->bits)
		mask[f->off] = f->bits;
	else
		memset(mask + f->off, 0xff, f->nbytes);
}

/* The bytes the spec says the field holds for value v (within the field mask). */
static void encode(const struct field *f, uint64_t v, uint8_t out[HDR_MAX])
{
	memset(out, 0, HDR_MAX);
	if (f->bits) {
		out[f->off] = (uint8_t)(v << __builtin_ctz(f->bits)) & f->bits;
	} else if (f->order == BE) {
		for (unsigned i = 0; i < f->nbytes; i++)
			out[f->off + i] = (uint8_t)(v >> 8 * (f->nbytes - 1 - i));
	} else {
		uint32_t w = (uint32_t)v;

		memcpy(out + f->off, &w, sizeof(w));
	}
}

/*
 * Store v into a header whose every byte is `bg`, then check the value reads
 * back as `expect` and that the header holds exactly: the background outside
 * the field, the spec's encoding of `expect` inside it.
 */
static void store_and_check(const struct field *f, uint8_t bg, uint64_t v, uint64_t expect)
{
	uint8_t h[HDR_MAX], mask[HDR_MAX], enc[HDR_MAX];

	memset(h, bg, sizeof(h));
	f->set(h, v);
	ck_assert_msg(f->get(h) == expect, "%s: stored %#llx over %#x, read %#llx, want %#llx",
		      f->name, (unsigned long long)v, bg, (unsigned long long)f->get(h),
		      (unsigned long long)expect);
	field_mask(f, mask);
	encode(f, expect, enc);
	for (size_t i = 0; i < HDR_MAX; i++) {
		uint8_t want = (uint8_t)((bg & ~mask[i]) | (enc[i] & mask[i]));

		if (i >= f->hsize)
			want = bg; /* past the header: never written */
		ck_assert_msg(h[i] == want,
			      "%s: stored %#llx over %#x: byte %zu is %#04x, want %#04x", f->name,
			      (unsigned long long)v, bg, i, h[i], want);
	}
}

START_TEST(test_zero_with_neighbours_ones)
{
	const struct field *f = &fields[_i];

	store_and_check(f, 0xff, 0, 0);
}
END_TEST

START_TEST(test_max_with_neighbours_zeros)
{
	const struct field *f = &fields[_i];

	store_and_check(f, 0x00, f->max, f->max);
}
END_TEST

START_TEST(test_max_with_neighbours_ones)
{
	const struct field *f = &fields[_i];

	store_and_check(f, 0xff, f->max, f->max);
}
END_TEST

/* A value wider than the field (a caller's bug) must not spill into a neighbour. */
START_TEST(test_overwide_value_stays_in_field)
{
	const struct field *f = &fields[_i];

	store_and_check(f, 0x00, UINT64_MAX, f->max);
	store_and_check(f, 0xff, UINT64_MAX, f->max);
	/* only bits above the field: reads 0 (a boolean setter sees "nonzero") */
	store_and_check(f, 0x00, ~f->max, f->max == 1 ? 1 : 0);
	store_and_check(f, 0xff, ~f->max, f->max == 1 ? 1 : 0);
}
END_TEST

/* Distinct bytes show the byte order: a swapped or shifted field cannot pass. */
START_TEST(test_byte_order_pattern)
{
	const struct field *f = &fields[_i];
	const uint64_t pattern = 0x0123456789abcdefull;
	uint64_t v = f->max == 1 ? 1 : pattern & f->max;

	store_and_check(f, 0x00, v, v);
	store_and_check(f, 0xff, v, v);
	store_and_check(f, 0x5a, v, v);
}
END_TEST

/* Walking one bit through the field: every bit of the field is its own. */
START_TEST(test_walking_one)
{
	const struct field *f = &fields[_i];
	unsigned width = 64 - (unsigned)__builtin_clzll(f->max);

	for (unsigned b = 0; b < width; b++) {
		store_and_check(f, 0x00, 1ull << b, 1ull << b);
		store_and_check(f, 0xff, f->max & ~(1ull << b), f->max & ~(1ull << b));
	}
}
END_TEST

/* Fields set one after another in the same header do not disturb each other. */
START_TEST(test_bth_all_fields_together)
{
	struct ur_bth h;

	memset(&h, 0, sizeof(h));
	ur_bth_set_opcode(&h, 0x0b);
	ur_bth_set_se(&h, true);
	ur_bth_set_mig(&h, true);
	ur_bth_set_padcnt(&h, 3);
	ur_bth_set_tver(&h, 0xf);
	ur_bth_set_pkey(&h, 0xffff);
	ur_bth_set_fecn(&h, true);
	ur_bth_set_becn(&h, true);
	ur_bth_set_dqpn(&h, 0xffffff);
	ur_bth_set_ackreq(&h, true);
	ur_bth_set_resv7(&h, 0x7f);
	ur_bth_set_psn(&h, 0xffffff);
	ck_assert_uint_eq(h.flags, 0xff);
	ck_assert_uint_eq(h.resv8a, 0xc0); /* the 6 reserved bits stay clear */
	ck_assert_uint_eq(h.ack, 0xff);

	/* PadCnt back to 0 with SE, M and TVer all ones: only bits 5:4 change */
	ur_bth_set_padcnt(&h, 0);
	ck_assert_uint_eq(h.flags, 0xcf);
	ck_assert(ur_bth_se(&h) && ur_bth_mig(&h));
	ck_assert_uint_eq(ur_bth_tver(&h), 0xf);
	ur_bth_set_padcnt(&h, 3);
	ck_assert_uint_eq(h.flags, 0xff);

	/* PSN 0xffffff next to AckReq and resv7; then 0 leaves them alone */
	ur_bth_set_psn(&h, 0);
	ck_assert_uint_eq(h.ack, 0xff);
	ck_assert(ur_bth_ackreq(&h));
	ck_assert_uint_eq(ur_bth_resv7(&h), 0x7f);
	ck_assert_uint_eq(ur_bth_dqpn(&h), 0xffffff);
	ur_bth_set_ackreq(&h, false);
	ck_assert_uint_eq(h.ack, 0x7f);
	ur_bth_set_resv7(&h, 0);
	ck_assert_uint_eq(h.ack, 0x00);
	ur_bth_set_psn(&h, 0xffffff);
	ck_assert_uint_eq(h.ack, 0x00);
	ck_assert_uint_eq(ur_bth_psn(&h), 0xffffff);

	/* FECN/BECN share a byte with six reserved bits */
	h.resv8a = 0x3f;
	ur_bth_set_fecn(&h, true);
	ck_assert_uint_eq(h.resv8a, 0xbf);
	ur_bth_set_becn(&h, true);
	ck_assert_uint_eq(h.resv8a, 0xff);
	ur_bth_set_fecn(&h, false);
	ur_bth_set_becn(&h, false);
	ck_assert_uint_eq(h.resv8a, 0x3f);
}
END_TEST

/* The BTH sits at odd offsets in real frames: accessors must not need alignment. */
START_TEST(test_unaligned_headers)
{
	uint8_t buf[64 + HDR_MAX];

	for (unsigned off = 0; off < 8; off++) {
		struct ur_bth *b = (struct ur_bth *)(buf + 42 + off);
		struct ur_atmeth *a = (struct ur_atmeth *)(buf + 1 + off);

		memset(buf, 0xee, sizeof(buf));
		ur_bth_set_psn(b, 0xabcdef);
		ur_bth_set_dqpn(b, 0x123456);
		ck_assert_uint_eq(ur_bth_psn(b), 0xabcdef);
		ck_assert_uint_eq(ur_bth_dqpn(b), 0x123456);
		ur_atmeth_set_compare(a, 0x1122334455667788ull);
		ur_atmeth_set_rkey(a, 0xdeadbeef);
		ck_assert_uint_eq(ur_atmeth_compare(a), 0x1122334455667788ull);
		ck_assert_uint_eq(ur_atmeth_rkey(a), 0xdeadbeef);
		ck_assert_uint_eq(buf[1 + off + 20], 0x11);
		ck_assert_uint_eq(buf[1 + off + 8], 0xde);
	}
}
END_TEST

/* ImmDt is opaque: the bytes a consumer handed in are the bytes on the wire. */
START_TEST(test_immdt_is_opaque)
{
	const uint8_t wire[4] = {0x12, 0x34, 0x56, 0x78};
	struct ur_immdt h;
	uint32_t be;

	memcpy(&be, wire, 4); /* what htonl(0x12345678) gives on any host */
	memset(&h, 0, sizeof(h));
	ur_immdt_set_raw(&h, be);
	ck_assert_mem_eq(h.imm, wire, 4);
	ck_assert_uint_eq(ur_immdt_raw(&h), be);
}
END_TEST

/* The AETH syndrome encoding of table 43. */
START_TEST(test_aeth_syndrome_encoding)
{
	ck_assert_uint_eq(UR_AETH_ACK, 0x00);
	ck_assert_uint_eq(UR_AETH_RNR_NAK, 0x20);
	ck_assert_uint_eq(UR_AETH_NAK, 0x60);
	ck_assert_uint_eq(UR_AETH_TYPE_MASK | UR_AETH_VALUE_MASK, 0xff);
	ck_assert_uint_eq(UR_AETH_TYPE_MASK & UR_AETH_VALUE_MASK, 0);
	ck_assert_uint_eq(UR_AETH_CREDIT_INVALID, 0x1f);
	ck_assert_uint_eq(UR_NAK_PSN_SEQ_ERR, 0);
	ck_assert_uint_eq(UR_NAK_INVALID_REQ, 1);
	ck_assert_uint_eq(UR_NAK_REM_ACCESS_ERR, 2);
	ck_assert_uint_eq(UR_NAK_REM_OP_ERR, 3);
	ck_assert_uint_eq(UR_NAK_INVALID_RD_REQ, 4);
}
END_TEST

static Suite *wire_suite(void)
{
	Suite *s = suite_create("wire");
	TCase *tc = tcase_create("accessors");

	tcase_add_loop_test(tc, test_zero_with_neighbours_ones, 0, NFIELDS);
	tcase_add_loop_test(tc, test_max_with_neighbours_zeros, 0, NFIELDS);
	tcase_add_loop_test(tc, test_max_with_neighbours_ones, 0, NFIELDS);
	tcase_add_loop_test(tc, test_overwide_value_stays_in_field, 0, NFIELDS);
	tcase_add_loop_test(tc, test_byte_order_pattern, 0, NFIELDS);
	tcase_add_loop_test(tc, test_walking_one, 0, NFIELDS);
	tcase_add_test(tc, test_bth_all_fields_together);
	tcase_add_test(tc, test_unaligned_headers);
	tcase_add_test(tc, test_immdt_is_opaque);
	tcase_add_test(tc, test_aeth_syndrome_encoding);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	sr = srunner_create(wire_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
