/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The work-request opcode table against the verbs and IBTA rules, typed in
 * again here rather than derived from wr_opcode.h's X-macro: for every
 * opcode, the QP types that may post it (the operations of each transport
 * in IBTA Vol 1 table 38), whether it consumes a receive WQE at the
 * responder, what it carries and the completion opcode the requester
 * reports (ibv_poll_cq(3)). The allowed types are also checked against the
 * packet opcode table: an opcode is allowed on a transport exactly when
 * that transport has a packet for it.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "opcode.h"
#include "wr_opcode.h"

struct expect {
	unsigned op;
	const char *name;
	bool rc, uc, ud;     /* may be posted on */
	bool recv;	     /* consumes a receive WQE at the responder */
	bool imm, inv;	     /* carries ImmDt, IETH */
	unsigned what;	     /* UR_WRF_SEND/WRITE/READ/ATOMIC/LOCAL */
	unsigned wc;	     /* requester's completion opcode */
	uint8_t only_packet; /* its SEND/WRITE Only (or single) packet in RC's range; 0 if none */
};

#define SEND UR_WRF_SEND
#define WRITE UR_WRF_WRITE
#define READ UR_WRF_READ
#define ATOMIC UR_WRF_ATOMIC
#define LOCAL UR_WRF_LOCAL

/* clang-format off */
static const struct expect wr_table[] = {
	/* op                          name                    RC UC UD  recv imm inv  what    completion        packet */
	{UR_WR_RDMA_WRITE,           "RDMA_WRITE",           1, 1, 0,  0,   0,  0,   WRITE,  UR_WC_RDMA_WRITE, 0x0a},
	/* the immediate data arrives in a receive completion; the requester still sees a WRITE */
	{UR_WR_RDMA_WRITE_WITH_IMM,  "RDMA_WRITE_WITH_IMM",  1, 1, 0,  1,   1,  0,   WRITE,  UR_WC_RDMA_WRITE, 0x0b},
	{UR_WR_SEND,                 "SEND",                 1, 1, 1,  1,   0,  0,   SEND,   UR_WC_SEND,       0x04},
	{UR_WR_SEND_WITH_IMM,        "SEND_WITH_IMM",        1, 1, 1,  1,   1,  0,   SEND,   UR_WC_SEND,       0x05},
	{UR_WR_RDMA_READ,            "RDMA_READ",            1, 0, 0,  0,   0,  0,   READ,   UR_WC_RDMA_READ,  0x0c},
	{UR_WR_ATOMIC_CMP_AND_SWP,   "ATOMIC_CMP_AND_SWP",   1, 0, 0,  0,   0,  0,   ATOMIC, UR_WC_COMP_SWAP,  0x13},
	{UR_WR_ATOMIC_FETCH_AND_ADD, "ATOMIC_FETCH_AND_ADD", 1, 0, 0,  0,   0,  0,   ATOMIC, UR_WC_FETCH_ADD,  0x14},
	/* local operations (memory windows): no packet, on the services that reach a window */
	{UR_WR_LOCAL_INV,            "LOCAL_INV",            1, 1, 0,  0,   0,  1,   LOCAL,  UR_WC_LOCAL_INV,  0},
	{UR_WR_BIND_MW,              "BIND_MW",              1, 1, 0,  0,   0,  0,   LOCAL,  UR_WC_BIND_MW,    0},
	/* RC only: SEND with Invalidate has no UC or UD opcode */
	{UR_WR_SEND_WITH_INV,        "SEND_WITH_INV",        1, 0, 0,  1,   0,  1,   SEND,   UR_WC_SEND,       0x17},
};
/* clang-format on */

#define NROWS ((int)(sizeof(wr_table) / sizeof(wr_table[0])))

static const unsigned transport_of[] = {
    [UR_QPT_RC] = UR_TRANSPORT_RC,
    [UR_QPT_UC] = UR_TRANSPORT_UC,
    [UR_QPT_UD] = UR_TRANSPORT_UD,
};

/* Every opcode of the enum has a row here, in enum order. */
START_TEST(test_rows_cover_the_enum)
{
	ck_assert_int_eq(NROWS, UR_WR_OPCODE_COUNT);
	for (int i = 0; i < NROWS; i++)
		ck_assert_uint_eq(wr_table[i].op, (unsigned)i);
}
END_TEST

START_TEST(test_every_opcode)
{
	const struct expect *e = &wr_table[_i];
	const struct ur_wr_opcode_info *info = ur_wr_opcode_get(e->op);
	unsigned kinds = UR_WRF_SEND | UR_WRF_WRITE | UR_WRF_READ | UR_WRF_ATOMIC | UR_WRF_LOCAL;

	ck_assert_ptr_eq(info, &ur_wr_opcode_table[e->op]);
	ck_assert_str_eq(info->name, e->name);
	ck_assert_str_eq(ur_wr_opcode_name(e->op), e->name);
	ck_assert_msg(ur_wr_allowed(e->op, UR_QPT_RC) == e->rc, "%s on RC", e->name);
	ck_assert_msg(ur_wr_allowed(e->op, UR_QPT_UC) == e->uc, "%s on UC", e->name);
	ck_assert_msg(ur_wr_allowed(e->op, UR_QPT_UD) == e->ud, "%s on UD", e->name);
	ck_assert_msg(ur_wr_has(e->op, UR_WRF_RECV) == e->recv, "%s: receive WQE", e->name);
	ck_assert_msg(ur_wr_has(e->op, UR_WRF_IMM) == e->imm, "%s: immediate", e->name);
	ck_assert_msg(ur_wr_has(e->op, UR_WRF_INV) == e->inv, "%s: invalidate", e->name);
	ck_assert_msg((info->flags & kinds) == e->what, "%s: kind %#x, want %#x", e->name,
		      info->flags & kinds, e->what);
	ck_assert_msg(info->wc_opcode == e->wc, "%s: completes as %u, want %u", e->name,
		      info->wc_opcode, e->wc);
}
END_TEST

/*
 * Allowed on a transport exactly when table 38 gives that transport the
 * opcode's packet; immediate data and invalidate as that packet's headers.
 * Local operations send no packet: RC and UC, whose requests reach windows.
 */
START_TEST(test_allowed_where_the_packet_exists)
{
	static const unsigned types[] = {UR_QPT_RC, UR_QPT_UC, UR_QPT_UD};

	for (int i = 0; i < NROWS; i++) {
		const struct expect *e = &wr_table[i];

		for (unsigned t = 0; t < 3; t++) {
			uint8_t pkt = (uint8_t)(e->only_packet | transport_of[types[t]]);
			bool exists = e->only_packet && ur_opcode_valid(pkt);

			if (e->what == LOCAL) {
				ck_assert_uint_eq(ur_wr_allowed(e->op, types[t]), types[t] != UR_QPT_UD);
				continue;
			}

			ck_assert_msg(ur_wr_allowed(e->op, types[t]) == exists,
				      "%s on QP type %u: allowed %d, packet %#04x exists %d",
				      e->name, types[t], ur_wr_allowed(e->op, types[t]), pkt,
				      exists);
			if (!exists)
				continue;
			ck_assert_uint_eq(!!(ur_opcode_get(pkt)->hdrs & UR_HDR_IMMDT), e->imm);
			ck_assert_uint_eq(!!(ur_opcode_get(pkt)->hdrs & UR_HDR_IETH), e->inv);
		}
	}
}
END_TEST

/* The cases the verbs name, spelled out. */
START_TEST(test_spot_checks)
{
	ck_assert(ur_wr_has(UR_WR_RDMA_WRITE_WITH_IMM, UR_WRF_RECV));
	ck_assert(!ur_wr_has(UR_WR_RDMA_WRITE, UR_WRF_RECV));
	ck_assert(!ur_wr_has(UR_WR_RDMA_READ, UR_WRF_RECV));
	ck_assert(!ur_wr_allowed(UR_WR_SEND_WITH_INV, UR_QPT_UD));
	ck_assert(!ur_wr_allowed(UR_WR_SEND_WITH_INV, UR_QPT_UC));
	ck_assert(!ur_wr_allowed(UR_WR_ATOMIC_CMP_AND_SWP, UR_QPT_UC));
	ck_assert(!ur_wr_allowed(UR_WR_ATOMIC_FETCH_AND_ADD, UR_QPT_UD));
	ck_assert(!ur_wr_allowed(UR_WR_RDMA_WRITE, UR_QPT_UD));
	ck_assert(ur_wr_allowed(UR_WR_SEND_WITH_IMM, UR_QPT_UD));
	ck_assert_uint_eq(ur_wr_opcode_get(UR_WR_RDMA_WRITE_WITH_IMM)->wc_opcode, UR_WC_RDMA_WRITE);
	ck_assert_uint_eq(ur_wr_opcode_get(UR_WR_SEND_WITH_INV)->wc_opcode, UR_WC_SEND);
	/* ibv_wc_opcode's values, which the provider passes through */
	ck_assert_uint_eq(UR_WC_SEND, 0);
	ck_assert_uint_eq(UR_WC_RDMA_WRITE, 1);
	ck_assert_uint_eq(UR_WC_RDMA_READ, 2);
	ck_assert_uint_eq(UR_WC_COMP_SWAP, 3);
	ck_assert_uint_eq(UR_WC_FETCH_ADD, 4);
}
END_TEST

/* Opcodes past the table (TSO, DRIVER1, garbage) and QP types uroce lacks: refused. */
START_TEST(test_unknown_refused)
{
	static const unsigned ops[] = {UR_WR_OPCODE_COUNT, 10,		11, 15, 255,
				       0x7fffffff,	   (unsigned)-1};
	static const unsigned bad_types[] = {0, 1, 5, 6, 7, 8, 31, 32, 255, (unsigned)-1};

	for (unsigned i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		ck_assert_ptr_eq(ur_wr_opcode_get(ops[i]), &ur_wr_opcode_table[UR_WR_OPCODE_COUNT]);
		ck_assert_str_eq(ur_wr_opcode_name(ops[i]), "unknown");
		ck_assert(!ur_wr_allowed(ops[i], UR_QPT_RC));
		ck_assert(!ur_wr_allowed(ops[i], UR_QPT_UC));
		ck_assert(!ur_wr_allowed(ops[i], UR_QPT_UD));
		ck_assert(!ur_wr_has(ops[i], 0xff));
	}
	for (unsigned op = 0; op < UR_WR_OPCODE_COUNT; op++)
		for (unsigned i = 0; i < sizeof(bad_types) / sizeof(bad_types[0]); i++)
			ck_assert_msg(!ur_wr_allowed(op, bad_types[i]), "%s on QP type %u",
				      ur_wr_opcode_name(op), bad_types[i]);
}
END_TEST

/* What the provider offers as ibv_wr_* builders: bit n for opcode n. */
START_TEST(test_offered_mask)
{
	uint32_t want = 0;

	for (int i = 0; i < NROWS; i++)
		if (wr_table[i].rc || wr_table[i].uc || wr_table[i].ud)
			want |= 1u << wr_table[i].op;
	ck_assert_uint_eq(ur_wr_opcodes_offered(), want);
	ck_assert_uint_eq(want, 0x3ff); /* 0..6, LOCAL_INV (7), BIND_MW (8), SEND_WITH_INV (9) */
}
END_TEST

static Suite *wr_opcode_suite(void)
{
	Suite *s = suite_create("wr_opcode");
	TCase *tc = tcase_create("table");

	tcase_add_test(tc, test_rows_cover_the_enum);
	tcase_add_loop_test(tc, test_every_opcode, 0, NROWS);
	tcase_add_test(tc, test_allowed_where_the_packet_exists);
	tcase_add_test(tc, test_spot_checks);
	tcase_add_test(tc, test_unknown_refused);
	tcase_add_test(tc, test_offered_mask);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	sr = srunner_create(wr_opcode_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
