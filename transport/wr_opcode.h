/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The work-request opcodes (enum ur_wr_opcode, equal to enum ibv_wr_opcode)
 * and every rule about them, in one table: on which QP types each is
 * allowed, what it carries, whether it consumes a receive WQE at the
 * responder and which completion opcode it gives at the requester. The
 * engine and the provider both read it, as rxe's rxe_wr_opcode_info; one
 * X-macro list generates it, as opcode.h's does the packet opcodes.
 */
#ifndef UR_WR_OPCODE_H
#define UR_WR_OPCODE_H

#include <stdbool.h>
#include <stdint.h>

#include "verbs_types.h"

/* The QP types an opcode is allowed on, one bit per enum ur_qp_type. An
 * XRC initiator offers every operation RC does (annex A14), so "RC" means
 * both. */
#define UR_WR_ON_RC (1u << UR_QPT_RC | 1u << UR_QPT_XRC_SEND)
#define UR_WR_ON_UC (1u << UR_QPT_UC)
#define UR_WR_ON_UD (1u << UR_QPT_UD)
#define UR_WR_ON_RC_UC (UR_WR_ON_RC | UR_WR_ON_UC)
#define UR_WR_ON_ALL (UR_WR_ON_RC | UR_WR_ON_UC | UR_WR_ON_UD)
#define UR_WR_ON_NONE 0u

/* What an opcode is and carries. */
#define UR_WRF_SEND 0x01   /* a SEND: data into the responder's receive WQE */
#define UR_WRF_WRITE 0x02  /* an RDMA WRITE: data to a remote address and rkey */
#define UR_WRF_READ 0x04   /* an RDMA READ: data back from a remote address and rkey */
#define UR_WRF_ATOMIC 0x08 /* an atomic: 8 bytes back from a remote address and rkey */
#define UR_WRF_IMM 0x10	   /* carries immediate data (ImmDt) */
#define UR_WRF_INV 0x20	   /* names an R_Key to invalidate (SEND's IETH, or LOCAL_INV) */
#define UR_WRF_RECV 0x40   /* consumes a receive WQE at the responder */
#define UR_WRF_LOCAL 0x80  /* works on local state only: no packet (mw.c) */

/*
 * Allowed types follow the transports' operations in IBTA Vol 1 table 38:
 * UD has SEND only, UC SEND and RDMA WRITE, RC all; SEND with Invalidate
 * exists on RC only (its opcodes are RC's). Every SEND consumes a receive
 * WQE at the responder, and so does an RDMA WRITE with immediate data, whose
 * immediate arrives in a receive completion (9.4); at the requester WRITE
 * with immediate completes as IBV_WC_RDMA_WRITE and every SEND kind as
 * IBV_WC_SEND. Local invalidate and memory-window binds send nothing and
 * run on RC and UC, whose requests can reach a window (Soft-RoCE allows
 * LOCAL_INV on RC only; IBTA lets UC reach a window with RDMA WRITE).
 */
/* clang-format off */
/*  name                   on     what    imm inv recv  completion (UR_WC_) */
#define UR_WR_OPCODES(X)                                                    \
	X(RDMA_WRITE,            RC_UC, WRITE,  0,   0,   0,    RDMA_WRITE) \
	X(RDMA_WRITE_WITH_IMM,   RC_UC, WRITE,  1,   0,   1,    RDMA_WRITE) \
	X(SEND,                  ALL,   SEND,   0,   0,   1,    SEND)       \
	X(SEND_WITH_IMM,         ALL,   SEND,   1,   0,   1,    SEND)       \
	X(RDMA_READ,             RC,    READ,   0,   0,   0,    RDMA_READ)  \
	X(ATOMIC_CMP_AND_SWP,    RC,    ATOMIC, 0,   0,   0,    COMP_SWAP)  \
	X(ATOMIC_FETCH_AND_ADD,  RC,    ATOMIC, 0,   0,   0,    FETCH_ADD)  \
	X(LOCAL_INV,             RC_UC, LOCAL,  0,   1,   0,    LOCAL_INV)  \
	X(BIND_MW,               RC_UC, LOCAL,  0,   0,   0,    BIND_MW)    \
	X(SEND_WITH_INV,         RC,    SEND,   0,   1,   1,    SEND)
/* clang-format on */

struct ur_wr_opcode_info {
	const char *name;
	uint16_t qp_types; /* UR_WR_ON_* */
	uint8_t flags;	   /* UR_WRF_* */
	uint8_t wc_opcode; /* enum ur_wc_opcode of its completion at the requester */
};

/* Indexed by enum ur_wr_opcode; UR_WR_OPCODE_COUNT holds an opcode uroce does not know. */
extern const struct ur_wr_opcode_info ur_wr_opcode_table[UR_WR_OPCODE_COUNT + 1];

static inline const struct ur_wr_opcode_info *ur_wr_opcode_get(unsigned opcode)
{
	return &ur_wr_opcode_table[opcode < UR_WR_OPCODE_COUNT ? opcode : UR_WR_OPCODE_COUNT];
}

static inline bool ur_wr_has(unsigned opcode, unsigned flags)
{
	return (ur_wr_opcode_get(opcode)->flags & flags) != 0;
}

/* Whether a QP of type `qp_type` may post `opcode` (enum ur_qp_type). */
static inline bool ur_wr_allowed(unsigned opcode, unsigned qp_type)
{
	return qp_type < 16 && (ur_wr_opcode_get(opcode)->qp_types & (1u << qp_type));
}

/* "RDMA_WRITE_WITH_IMM", ...; "unknown" past the table. */
static inline const char *ur_wr_opcode_name(unsigned opcode)
{
	return ur_wr_opcode_get(opcode)->name;
}

/* The opcodes allowed on some QP type, one bit each (1 << opcode). */
uint32_t ur_wr_opcodes_offered(void);

#endif
