/* SPDX-License-Identifier: BSD-2-Clause */
#include <assert.h>

#include "wr_opcode.h"

#define UR_WR_OPCODE_ENTRY(nm, on, what, imm, inv, recv, wc)                                       \
	[UR_WR_##nm] = {                                                                           \
	    .name = #nm,                                                                           \
	    .qp_types = UR_WR_ON_##on,                                                             \
	    .flags = UR_WRF_##what | ((imm) ? UR_WRF_IMM : 0) | ((inv) ? UR_WRF_INV : 0) |         \
		     ((recv) ? UR_WRF_RECV : 0),                                                   \
	    .wc_opcode = UR_WC_##wc,                                                               \
	},

/* clang-format off */
const struct ur_wr_opcode_info ur_wr_opcode_table[UR_WR_OPCODE_COUNT + 1] = {
	UR_WR_OPCODES(UR_WR_OPCODE_ENTRY)
	/* what an opcode past the list gets: allowed nowhere */
	[UR_WR_OPCODE_COUNT] = {.name = "unknown", .wc_opcode = UR_WC_SEND},
};
/* clang-format on */

/* One row per opcode of the enum (a row given twice is -Woverride-init's to catch). */
#define UR_WR_OPCODE_ONE(nm, on, what, imm, inv, recv, wc) +1
static_assert(0 UR_WR_OPCODES(UR_WR_OPCODE_ONE) == UR_WR_OPCODE_COUNT,
	      "UR_WR_OPCODES has one row per enum ur_wr_opcode");
#undef UR_WR_OPCODE_ONE

uint32_t ur_wr_opcodes_offered(void)
{
	uint32_t mask = 0;

	for (unsigned op = 0; op < UR_WR_OPCODE_COUNT; op++)
		if (ur_wr_opcode_table[op].qp_types)
			mask |= 1u << op;
	return mask;
}
