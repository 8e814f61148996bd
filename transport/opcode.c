/* SPDX-License-Identifier: BSD-2-Clause */
#include "opcode.h"
#include "wire.h"

/*
 * Extension headers follow the BTH in the order of 9.2 (DETH, XRCETH, RETH,
 * AtomicETH, AETH, AtomicAckETH, ImmDt, IETH; the XRCETH's place is A14.2),
 * so each offset is the sum of the sizes of the headers before it that the
 * opcode carries.
 */
#define SZ(hs, h, sz) (((hs) & (h)) ? (sz) : 0)
#define OFF_DETH(hs) 12
#define OFF_XRCETH(hs) (OFF_DETH(hs) + SZ(hs, UR_HDR_DETH, 8))
#define OFF_RETH(hs) (OFF_XRCETH(hs) + SZ(hs, UR_HDR_XRCETH, 4))
#define OFF_ATMETH(hs) (OFF_RETH(hs) + SZ(hs, UR_HDR_RETH, 16))
#define OFF_AETH(hs) (OFF_ATMETH(hs) + SZ(hs, UR_HDR_ATMETH, 28))
#define OFF_ATMACK(hs) (OFF_AETH(hs) + SZ(hs, UR_HDR_AETH, 4))
#define OFF_IMMDT(hs) (OFF_ATMACK(hs) + SZ(hs, UR_HDR_ATMACK, 8))
#define OFF_IETH(hs) (OFF_IMMDT(hs) + SZ(hs, UR_HDR_IMMDT, 4))
#define OFF_CNP(hs) (OFF_IETH(hs) + SZ(hs, UR_HDR_IETH, 4))
#define HDR_LEN(hs) (OFF_CNP(hs) + SZ(hs, UR_HDR_CNP, UR_CNP_PAYLOAD))
#define OFF_IF(hs, h, off) (((hs) & (h)) ? (off) : 0)

#define UR_OPCODE_ENTRY(nm, val, knd, position, hs, pl)                                            \
	[val] = {                                                                                  \
		.name = #nm,                                                                       \
		.kind = UR_KIND_##knd,                                                             \
		.pos = UR_POS_##position,                                                          \
		.hdrs = (hs),                                                                      \
		.payload = (pl),                                                                   \
		.hdr_len = HDR_LEN(hs),                                                            \
		.off_reth = OFF_IF(hs, UR_HDR_RETH, OFF_RETH(hs)),                                 \
		.off_atmeth = OFF_IF(hs, UR_HDR_ATMETH, OFF_ATMETH(hs)),                           \
		.off_aeth = OFF_IF(hs, UR_HDR_AETH, OFF_AETH(hs)),                                 \
		.off_atmack = OFF_IF(hs, UR_HDR_ATMACK, OFF_ATMACK(hs)),                           \
		.off_immdt = OFF_IF(hs, UR_HDR_IMMDT, OFF_IMMDT(hs)),                              \
		.off_ieth = OFF_IF(hs, UR_HDR_IETH, OFF_IETH(hs)),                                 \
		.off_deth = OFF_IF(hs, UR_HDR_DETH, OFF_DETH(hs)),                                 \
		.off_xrceth = OFF_IF(hs, UR_HDR_XRCETH, OFF_XRCETH(hs)),                           \
	},

const struct ur_opcode_info ur_opcode_table[256] = {UR_OPCODES(UR_OPCODE_ENTRY)};

const char *ur_opcode_name(uint8_t opcode)
{
	const char *n = ur_opcode_table[opcode].name;

	return n ? n : "INVALID";
}
