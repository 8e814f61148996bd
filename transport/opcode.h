/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The IBTA opcode table (Vol 1, table 38) for the transports uroce speaks,
 * XRC's among them (the RC opcodes in the range 0xa0, annex A14), plus the
 * RoCEv2 CNP (Annex A17.9.2). One X-macro list generates the enum,
 * the names and the per-opcode layout, so they cannot drift apart.
 */
#ifndef UR_OPCODE_H
#define UR_OPCODE_H

#include <stdbool.h>
#include <stdint.h>

/* What an opcode does. */
enum ur_op_kind {
	UR_KIND_INVALID = 0,
	UR_KIND_SEND,
	UR_KIND_WRITE,
	UR_KIND_READ_REQ,
	UR_KIND_READ_RESP,
	UR_KIND_ACK,
	UR_KIND_ATOMIC,
	UR_KIND_ATOMIC_ACK,
	UR_KIND_CNP,
};

/* Position of the packet in its message. ONLY is FIRST | LAST. */
#define UR_POS_FIRST 0x1
#define UR_POS_LAST 0x2
#define UR_POS_MIDDLE 0x0
#define UR_POS_ONLY (UR_POS_FIRST | UR_POS_LAST)

/* Extension headers present, in their wire order after the BTH (9.2). */
#define UR_HDR_DETH 0x01
#define UR_HDR_RETH 0x02
#define UR_HDR_ATMETH 0x04
#define UR_HDR_AETH 0x08
#define UR_HDR_ATMACK 0x10
#define UR_HDR_IMMDT 0x20
#define UR_HDR_IETH 0x40
#define UR_HDR_CNP 0x80 /* the 16 reserved bytes of a CNP */
#define UR_HDR_XRCETH 0x100 /* XRC requests: the destination XRC SRQ (A14) */

/* Transport service in the top three opcode bits. */
#define UR_TRANSPORT_MASK 0xe0
#define UR_TRANSPORT_RC 0x00
#define UR_TRANSPORT_UC 0x20
#define UR_TRANSPORT_RD 0x40
#define UR_TRANSPORT_UD 0x60
#define UR_TRANSPORT_CNP 0x80
#define UR_TRANSPORT_XRC 0xa0

/*  name,                      value, kind,       position,   headers,                       payload */
#define UR_OPCODES(X)                                                                            \
	X(RC_SEND_FIRST, 0x00, SEND, FIRST, 0, 1)                                               \
	X(RC_SEND_MIDDLE, 0x01, SEND, MIDDLE, 0, 1)                                             \
	X(RC_SEND_LAST, 0x02, SEND, LAST, 0, 1)                                                 \
	X(RC_SEND_LAST_IMM, 0x03, SEND, LAST, UR_HDR_IMMDT, 1)                                  \
	X(RC_SEND_ONLY, 0x04, SEND, ONLY, 0, 1)                                                 \
	X(RC_SEND_ONLY_IMM, 0x05, SEND, ONLY, UR_HDR_IMMDT, 1)                                  \
	X(RC_WRITE_FIRST, 0x06, WRITE, FIRST, UR_HDR_RETH, 1)                                   \
	X(RC_WRITE_MIDDLE, 0x07, WRITE, MIDDLE, 0, 1)                                           \
	X(RC_WRITE_LAST, 0x08, WRITE, LAST, 0, 1)                                               \
	X(RC_WRITE_LAST_IMM, 0x09, WRITE, LAST, UR_HDR_IMMDT, 1)                                \
	X(RC_WRITE_ONLY, 0x0a, WRITE, ONLY, UR_HDR_RETH, 1)                                     \
	X(RC_WRITE_ONLY_IMM, 0x0b, WRITE, ONLY, UR_HDR_RETH | UR_HDR_IMMDT, 1)                  \
	X(RC_READ_REQUEST, 0x0c, READ_REQ, ONLY, UR_HDR_RETH, 0)                                \
	X(RC_READ_RESPONSE_FIRST, 0x0d, READ_RESP, FIRST, UR_HDR_AETH, 1)                       \
	X(RC_READ_RESPONSE_MIDDLE, 0x0e, READ_RESP, MIDDLE, 0, 1)                               \
	X(RC_READ_RESPONSE_LAST, 0x0f, READ_RESP, LAST, UR_HDR_AETH, 1)                         \
	X(RC_READ_RESPONSE_ONLY, 0x10, READ_RESP, ONLY, UR_HDR_AETH, 1)                         \
	X(RC_ACKNOWLEDGE, 0x11, ACK, ONLY, UR_HDR_AETH, 0)                                      \
	X(RC_ATOMIC_ACKNOWLEDGE, 0x12, ATOMIC_ACK, ONLY, UR_HDR_AETH | UR_HDR_ATMACK, 0)        \
	X(RC_COMPARE_SWAP, 0x13, ATOMIC, ONLY, UR_HDR_ATMETH, 0)                                \
	X(RC_FETCH_ADD, 0x14, ATOMIC, ONLY, UR_HDR_ATMETH, 0)                                   \
	X(RC_SEND_LAST_INV, 0x16, SEND, LAST, UR_HDR_IETH, 1)                                   \
	X(RC_SEND_ONLY_INV, 0x17, SEND, ONLY, UR_HDR_IETH, 1)                                   \
	X(UC_SEND_FIRST, 0x20, SEND, FIRST, 0, 1)                                               \
	X(UC_SEND_MIDDLE, 0x21, SEND, MIDDLE, 0, 1)                                             \
	X(UC_SEND_LAST, 0x22, SEND, LAST, 0, 1)                                                 \
	X(UC_SEND_LAST_IMM, 0x23, SEND, LAST, UR_HDR_IMMDT, 1)                                  \
	X(UC_SEND_ONLY, 0x24, SEND, ONLY, 0, 1)                                                 \
	X(UC_SEND_ONLY_IMM, 0x25, SEND, ONLY, UR_HDR_IMMDT, 1)                                  \
	X(UC_WRITE_FIRST, 0x26, WRITE, FIRST, UR_HDR_RETH, 1)                                   \
	X(UC_WRITE_MIDDLE, 0x27, WRITE, MIDDLE, 0, 1)                                           \
	X(UC_WRITE_LAST, 0x28, WRITE, LAST, 0, 1)                                               \
	X(UC_WRITE_LAST_IMM, 0x29, WRITE, LAST, UR_HDR_IMMDT, 1)                                \
	X(UC_WRITE_ONLY, 0x2a, WRITE, ONLY, UR_HDR_RETH, 1)                                     \
	X(UC_WRITE_ONLY_IMM, 0x2b, WRITE, ONLY, UR_HDR_RETH | UR_HDR_IMMDT, 1)                  \
	X(UD_SEND_ONLY, 0x64, SEND, ONLY, UR_HDR_DETH, 1)                                       \
	X(UD_SEND_ONLY_IMM, 0x65, SEND, ONLY, UR_HDR_DETH | UR_HDR_IMMDT, 1)                    \
	X(CNP, 0x81, CNP, ONLY, UR_HDR_CNP, 0)                                                  \
	X(XRC_SEND_FIRST, 0xa0, SEND, FIRST, UR_HDR_XRCETH, 1)                                  \
	X(XRC_SEND_MIDDLE, 0xa1, SEND, MIDDLE, UR_HDR_XRCETH, 1)                                \
	X(XRC_SEND_LAST, 0xa2, SEND, LAST, UR_HDR_XRCETH, 1)                                    \
	X(XRC_SEND_LAST_IMM, 0xa3, SEND, LAST, UR_HDR_XRCETH | UR_HDR_IMMDT, 1)                 \
	X(XRC_SEND_ONLY, 0xa4, SEND, ONLY, UR_HDR_XRCETH, 1)                                    \
	X(XRC_SEND_ONLY_IMM, 0xa5, SEND, ONLY, UR_HDR_XRCETH | UR_HDR_IMMDT, 1)                 \
	X(XRC_WRITE_FIRST, 0xa6, WRITE, FIRST, UR_HDR_XRCETH | UR_HDR_RETH, 1)                  \
	X(XRC_WRITE_MIDDLE, 0xa7, WRITE, MIDDLE, UR_HDR_XRCETH, 1)                              \
	X(XRC_WRITE_LAST, 0xa8, WRITE, LAST, UR_HDR_XRCETH, 1)                                  \
	X(XRC_WRITE_LAST_IMM, 0xa9, WRITE, LAST, UR_HDR_XRCETH | UR_HDR_IMMDT, 1)               \
	X(XRC_WRITE_ONLY, 0xaa, WRITE, ONLY, UR_HDR_XRCETH | UR_HDR_RETH, 1)                    \
	X(XRC_WRITE_ONLY_IMM, 0xab, WRITE, ONLY, UR_HDR_XRCETH | UR_HDR_RETH | UR_HDR_IMMDT, 1) \
	X(XRC_READ_REQUEST, 0xac, READ_REQ, ONLY, UR_HDR_XRCETH | UR_HDR_RETH, 0)               \
	X(XRC_READ_RESPONSE_FIRST, 0xad, READ_RESP, FIRST, UR_HDR_AETH, 1)                      \
	X(XRC_READ_RESPONSE_MIDDLE, 0xae, READ_RESP, MIDDLE, 0, 1)                              \
	X(XRC_READ_RESPONSE_LAST, 0xaf, READ_RESP, LAST, UR_HDR_AETH, 1)                        \
	X(XRC_READ_RESPONSE_ONLY, 0xb0, READ_RESP, ONLY, UR_HDR_AETH, 1)                        \
	X(XRC_ACKNOWLEDGE, 0xb1, ACK, ONLY, UR_HDR_AETH, 0)                                     \
	X(XRC_ATOMIC_ACKNOWLEDGE, 0xb2, ATOMIC_ACK, ONLY, UR_HDR_AETH | UR_HDR_ATMACK, 0)       \
	X(XRC_COMPARE_SWAP, 0xb3, ATOMIC, ONLY, UR_HDR_XRCETH | UR_HDR_ATMETH, 0)               \
	X(XRC_FETCH_ADD, 0xb4, ATOMIC, ONLY, UR_HDR_XRCETH | UR_HDR_ATMETH, 0)                  \
	X(XRC_SEND_LAST_INV, 0xb6, SEND, LAST, UR_HDR_XRCETH | UR_HDR_IETH, 1)                  \
	X(XRC_SEND_ONLY_INV, 0xb7, SEND, ONLY, UR_HDR_XRCETH | UR_HDR_IETH, 1)

enum ur_opcode {
#define UR_OPCODE_ENUM(name, val, kind, pos, hdrs, payload) UR_OP_##name = val,
	UR_OPCODES(UR_OPCODE_ENUM)
#undef UR_OPCODE_ENUM
};

/* Per-opcode layout, indexed by the 8-bit opcode; kind 0 means unsupported. */
struct ur_opcode_info {
	const char *name;
	uint8_t kind;      /* enum ur_op_kind */
	uint8_t pos;       /* UR_POS_* */
	uint16_t hdrs;     /* UR_HDR_* */
	uint8_t payload;   /* may carry payload */
	uint8_t hdr_len;   /* bytes from the start of the BTH to the payload */
	uint8_t off_reth;  /* offsets from the start of the BTH, 0 if absent */
	uint8_t off_atmeth;
	uint8_t off_aeth;
	uint8_t off_atmack;
	uint8_t off_immdt;
	uint8_t off_ieth;
	uint8_t off_deth;
	uint8_t off_xrceth;
};

extern const struct ur_opcode_info ur_opcode_table[256];

static inline const struct ur_opcode_info *ur_opcode_get(uint8_t opcode)
{
	return &ur_opcode_table[opcode];
}

static inline bool ur_opcode_valid(uint8_t opcode)
{
	return ur_opcode_table[opcode].kind != UR_KIND_INVALID;
}

const char *ur_opcode_name(uint8_t opcode);

#endif
