/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * InfiniBand transport headers as they appear on the wire (IBTA Vol 1,
 * 9.2 and 9.3). Fixed-size byte arrays, no bitfields; fields are read and
 * written only through the accessors below, in network byte order.
 */
#ifndef UR_WIRE_H
#define UR_WIRE_H

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>

#include "ur_util.h"

/* Base Transport Header, 9.2. */
struct ur_bth {
	uint8_t opcode;
	uint8_t flags;  /* SE(7) M(6) PadCnt(5:4) TVer(3:0) */
	uint8_t pkey[2];
	uint8_t resv8a; /* RoCEv2: FECN(7) BECN(6); masked in the ICRC */
	uint8_t dqpn[3];
	uint8_t ack;    /* AckReq(7), 7 reserved bits */
	uint8_t psn[3];
};
static_assert(sizeof(struct ur_bth) == 12, "BTH is 12 bytes");

#define UR_BTH_SE 0x80
#define UR_BTH_MIG 0x40
#define UR_BTH_PAD_SHIFT 4
#define UR_BTH_PAD_MASK 0x30
#define UR_BTH_TVER_MASK 0x0f
#define UR_BTH_ACKREQ 0x80
#define UR_BTH_RESV7_MASK 0x7f
#define UR_BTH_FECN 0x80
#define UR_BTH_BECN 0x40

static inline uint8_t ur_bth_opcode(const struct ur_bth *h)
{
	return h->opcode;
}
static inline void ur_bth_set_opcode(struct ur_bth *h, uint8_t v)
{
	h->opcode = v;
}
static inline bool ur_bth_se(const struct ur_bth *h)
{
	return h->flags & UR_BTH_SE;
}
static inline void ur_bth_set_se(struct ur_bth *h, bool v)
{
	h->flags = (h->flags & ~UR_BTH_SE) | (v ? UR_BTH_SE : 0);
}
static inline bool ur_bth_mig(const struct ur_bth *h)
{
	return h->flags & UR_BTH_MIG;
}
static inline void ur_bth_set_mig(struct ur_bth *h, bool v)
{
	h->flags = (h->flags & ~UR_BTH_MIG) | (v ? UR_BTH_MIG : 0);
}
static inline unsigned ur_bth_padcnt(const struct ur_bth *h)
{
	return (h->flags & UR_BTH_PAD_MASK) >> UR_BTH_PAD_SHIFT;
}
static inline void ur_bth_set_padcnt(struct ur_bth *h, unsigned v)
{
	h->flags = (h->flags & ~UR_BTH_PAD_MASK) | ((v << UR_BTH_PAD_SHIFT) & UR_BTH_PAD_MASK);
}
static inline unsigned ur_bth_tver(const struct ur_bth *h)
{
	return h->flags & UR_BTH_TVER_MASK;
}
static inline void ur_bth_set_tver(struct ur_bth *h, unsigned v)
{
	h->flags = (h->flags & ~UR_BTH_TVER_MASK) | (v & UR_BTH_TVER_MASK);
}
static inline uint16_t ur_bth_pkey(const struct ur_bth *h)
{
	return ur_get_be16(h->pkey);
}
static inline void ur_bth_set_pkey(struct ur_bth *h, uint16_t v)
{
	ur_put_be16(h->pkey, v);
}
static inline bool ur_bth_fecn(const struct ur_bth *h)
{
	return h->resv8a & UR_BTH_FECN;
}
static inline void ur_bth_set_fecn(struct ur_bth *h, bool v)
{
	h->resv8a = (h->resv8a & ~UR_BTH_FECN) | (v ? UR_BTH_FECN : 0);
}
static inline bool ur_bth_becn(const struct ur_bth *h)
{
	return h->resv8a & UR_BTH_BECN;
}
static inline void ur_bth_set_becn(struct ur_bth *h, bool v)
{
	h->resv8a = (h->resv8a & ~UR_BTH_BECN) | (v ? UR_BTH_BECN : 0);
}
static inline uint32_t ur_bth_dqpn(const struct ur_bth *h)
{
	return ur_get_be24(h->dqpn);
}
static inline void ur_bth_set_dqpn(struct ur_bth *h, uint32_t v)
{
	ur_put_be24(h->dqpn, v);
}
static inline bool ur_bth_ackreq(const struct ur_bth *h)
{
	return h->ack & UR_BTH_ACKREQ;
}
static inline void ur_bth_set_ackreq(struct ur_bth *h, bool v)
{
	h->ack = (h->ack & ~UR_BTH_ACKREQ) | (v ? UR_BTH_ACKREQ : 0);
}
static inline unsigned ur_bth_resv7(const struct ur_bth *h)
{
	return h->ack & UR_BTH_RESV7_MASK;
}
static inline void ur_bth_set_resv7(struct ur_bth *h, unsigned v)
{
	h->ack = (h->ack & ~UR_BTH_RESV7_MASK) | (v & UR_BTH_RESV7_MASK);
}
static inline uint32_t ur_bth_psn(const struct ur_bth *h)
{
	return ur_get_be24(h->psn);
}
static inline void ur_bth_set_psn(struct ur_bth *h, uint32_t v)
{
	ur_put_be24(h->psn, v);
}

/* RDMA Extended Transport Header, 9.3.3. */
struct ur_reth {
	uint8_t va[8];
	uint8_t rkey[4];
	uint8_t dmalen[4];
};
static_assert(sizeof(struct ur_reth) == 16, "RETH is 16 bytes");

static inline uint64_t ur_reth_va(const struct ur_reth *h)
{
	return ur_get_be64(h->va);
}
static inline void ur_reth_set_va(struct ur_reth *h, uint64_t v)
{
	ur_put_be64(h->va, v);
}
static inline uint32_t ur_reth_rkey(const struct ur_reth *h)
{
	return ur_get_be32(h->rkey);
}
static inline void ur_reth_set_rkey(struct ur_reth *h, uint32_t v)
{
	ur_put_be32(h->rkey, v);
}
static inline uint32_t ur_reth_dmalen(const struct ur_reth *h)
{
	return ur_get_be32(h->dmalen);
}
static inline void ur_reth_set_dmalen(struct ur_reth *h, uint32_t v)
{
	ur_put_be32(h->dmalen, v);
}

/* ACK Extended Transport Header, 9.3.5: syndrome and 24-bit MSN. */
struct ur_aeth {
	uint8_t syndrome;
	uint8_t msn[3];
};
static_assert(sizeof(struct ur_aeth) == 4, "AETH is 4 bytes");

static inline uint8_t ur_aeth_syndrome(const struct ur_aeth *h)
{
	return h->syndrome;
}
static inline void ur_aeth_set_syndrome(struct ur_aeth *h, uint8_t v)
{
	h->syndrome = v;
}
static inline uint32_t ur_aeth_msn(const struct ur_aeth *h)
{
	return ur_get_be24(h->msn);
}
static inline void ur_aeth_set_msn(struct ur_aeth *h, uint32_t v)
{
	ur_put_be24(h->msn, v);
}

/* AETH syndrome encoding, table 43: bits 7:5 select the kind. */
#define UR_AETH_TYPE_MASK 0xe0
#define UR_AETH_ACK 0x00
#define UR_AETH_RNR_NAK 0x20
#define UR_AETH_NAK 0x60
#define UR_AETH_VALUE_MASK 0x1f
#define UR_AETH_CREDIT_INVALID 0x1f /* ACK without end-to-end credits */
#define UR_NAK_PSN_SEQ_ERR 0x00
#define UR_NAK_INVALID_REQ 0x01
#define UR_NAK_REM_ACCESS_ERR 0x02
#define UR_NAK_REM_OP_ERR 0x03
#define UR_NAK_INVALID_RD_REQ 0x04

/* Atomic Extended Transport Header, 9.3.4. */
struct ur_atmeth {
	uint8_t va[8];
	uint8_t rkey[4];
	uint8_t swap_add[8];
	uint8_t compare[8];
};
static_assert(sizeof(struct ur_atmeth) == 28, "AtomicETH is 28 bytes");

static inline uint64_t ur_atmeth_va(const struct ur_atmeth *h)
{
	return ur_get_be64(h->va);
}
static inline void ur_atmeth_set_va(struct ur_atmeth *h, uint64_t v)
{
	ur_put_be64(h->va, v);
}
static inline uint32_t ur_atmeth_rkey(const struct ur_atmeth *h)
{
	return ur_get_be32(h->rkey);
}
static inline void ur_atmeth_set_rkey(struct ur_atmeth *h, uint32_t v)
{
	ur_put_be32(h->rkey, v);
}
static inline uint64_t ur_atmeth_swap_add(const struct ur_atmeth *h)
{
	return ur_get_be64(h->swap_add);
}
static inline void ur_atmeth_set_swap_add(struct ur_atmeth *h, uint64_t v)
{
	ur_put_be64(h->swap_add, v);
}
static inline uint64_t ur_atmeth_compare(const struct ur_atmeth *h)
{
	return ur_get_be64(h->compare);
}
static inline void ur_atmeth_set_compare(struct ur_atmeth *h, uint64_t v)
{
	ur_put_be64(h->compare, v);
}

/* Atomic Acknowledge Extended Transport Header, 9.3.6. */
struct ur_atmack {
	uint8_t orig[8];
};
static_assert(sizeof(struct ur_atmack) == 8, "AtomicAckETH is 8 bytes");

static inline uint64_t ur_atmack_orig(const struct ur_atmack *h)
{
	return ur_get_be64(h->orig);
}
static inline void ur_atmack_set_orig(struct ur_atmack *h, uint64_t v)
{
	ur_put_be64(h->orig, v);
}

/*
 * Immediate data, 9.3.7. Verbs hands it over already in network order
 * (ibv_send_wr.imm_data is __be32), so it is carried as raw bytes.
 */
struct ur_immdt {
	uint8_t imm[4];
};
static_assert(sizeof(struct ur_immdt) == 4, "ImmDt is 4 bytes");

static inline uint32_t ur_immdt_raw(const struct ur_immdt *h)
{
	uint32_t v;
	memcpy(&v, h->imm, 4);
	return v;
}
static inline void ur_immdt_set_raw(struct ur_immdt *h, uint32_t v)
{
	memcpy(h->imm, &v, 4);
}

/* Invalidate Extended Transport Header, 9.3.8: the R_Key to invalidate. */
struct ur_ieth {
	uint8_t rkey[4];
};
static_assert(sizeof(struct ur_ieth) == 4, "IETH is 4 bytes");

static inline uint32_t ur_ieth_rkey(const struct ur_ieth *h)
{
	return ur_get_be32(h->rkey);
}
static inline void ur_ieth_set_rkey(struct ur_ieth *h, uint32_t v)
{
	ur_put_be32(h->rkey, v);
}

/*
 * XRC Extended Transport Header (annex A14.2): in every XRC request, the
 * number of the XRC SRQ at the target that the request is for; its
 * receives land there, and its keys are checked in that SRQ's PD.
 */
struct ur_xrceth {
	uint8_t srqn[4]; /* 8 reserved bits, then the 24-bit XRC SRQ number */
};
static_assert(sizeof(struct ur_xrceth) == 4, "XRCETH is 4 bytes");

static inline uint32_t ur_xrceth_srqn(const struct ur_xrceth *h)
{
	return ur_get_be32(h->srqn) & 0xffffff;
}
static inline void ur_xrceth_set_srqn(struct ur_xrceth *h, uint32_t v)
{
	ur_put_be32(h->srqn, v & 0xffffff);
}

/* Datagram Extended Transport Header, 9.3.2. */
struct ur_deth {
	uint8_t qkey[4];
	uint8_t resv;
	uint8_t sqpn[3];
};
static_assert(sizeof(struct ur_deth) == 8, "DETH is 8 bytes");

static inline uint32_t ur_deth_qkey(const struct ur_deth *h)
{
	return ur_get_be32(h->qkey);
}
static inline void ur_deth_set_qkey(struct ur_deth *h, uint32_t v)
{
	ur_put_be32(h->qkey, v);
}
static inline uint32_t ur_deth_sqpn(const struct ur_deth *h)
{
	return ur_get_be24(h->sqpn);
}
static inline void ur_deth_set_sqpn(struct ur_deth *h, uint32_t v)
{
	ur_put_be24(h->sqpn, v);
}

/*
 * uroce selective repeat (docs/selective-repeat.md): between two agreeing
 * uroce endpoints, a reserved BTH bit marks packets that carry one extension
 * header after every IBTA header, right before the payload.
 */
#define UR_BTH_SR 0x40 /* in BTH byte 8, the top reserved bit after AckReq */

static inline bool ur_bth_sr(const struct ur_bth *h)
{
	return h->ack & UR_BTH_SR;
}
static inline void ur_bth_set_sr(struct ur_bth *h, bool v)
{
	h->ack = (h->ack & ~UR_BTH_SR) | (v ? UR_BTH_SR : 0);
}

/* SR extension of SEND and RDMA WRITE packets: enough to place any packet on arrival. */
struct ur_sreth {
	uint8_t rseq[4];   /* receive sequence number of a WQE-consuming message */
	uint8_t offset[4]; /* byte offset of this payload in its message */
	uint8_t va[8];     /* WRITE: the message's remote address */
	uint8_t rkey[4];   /* WRITE: the message's R_Key */
};
static_assert(sizeof(struct ur_sreth) == 20, "SRETH is 20 bytes");

static inline uint32_t ur_sreth_rseq(const struct ur_sreth *h)
{
	return ur_get_be32(h->rseq);
}
static inline void ur_sreth_set_rseq(struct ur_sreth *h, uint32_t v)
{
	ur_put_be32(h->rseq, v);
}
static inline uint32_t ur_sreth_offset(const struct ur_sreth *h)
{
	return ur_get_be32(h->offset);
}
static inline void ur_sreth_set_offset(struct ur_sreth *h, uint32_t v)
{
	ur_put_be32(h->offset, v);
}
static inline uint64_t ur_sreth_va(const struct ur_sreth *h)
{
	return ur_get_be64(h->va);
}
static inline void ur_sreth_set_va(struct ur_sreth *h, uint64_t v)
{
	ur_put_be64(h->va, v);
}
static inline uint32_t ur_sreth_rkey(const struct ur_sreth *h)
{
	return ur_get_be32(h->rkey);
}
static inline void ur_sreth_set_rkey(struct ur_sreth *h, uint32_t v)
{
	ur_put_be32(h->rkey, v);
}

/* SR selective acknowledgement, after the AETH of an ACK. */
#define UR_SACK_BITS 256
struct ur_sack {
	uint8_t base[4];                  /* first PSN not received */
	uint8_t bitmap[UR_SACK_BITS / 8]; /* bit i: PSN base + 1 + i received */
};
static_assert(sizeof(struct ur_sack) == 36, "SACK is 36 bytes");

static inline uint32_t ur_sack_base(const struct ur_sack *h)
{
	return ur_get_be32(h->base) & 0xffffff;
}
static inline void ur_sack_set_base(struct ur_sack *h, uint32_t v)
{
	ur_put_be32(h->base, v & 0xffffff);
}
static inline bool ur_sack_bit(const struct ur_sack *h, unsigned i)
{
	return h->bitmap[i / 8] & (0x80 >> (i % 8));
}
static inline void ur_sack_set_bit(struct ur_sack *h, unsigned i)
{
	h->bitmap[i / 8] |= (uint8_t)(0x80 >> (i % 8));
}
/* Whether the SACK reports a gap: something received beyond the first missing PSN. */
static inline bool ur_sack_any(const struct ur_sack *h)
{
	for (unsigned i = 0; i < sizeof(h->bitmap); i++)
		if (h->bitmap[i])
			return true;
	return false;
}

/* SR negotiation messages, UDP to port 4792 (not RoCE's 4791). */
#define UR_SR_CTRL_PORT 4792
#define UR_SR_MAGIC 0x55525352u /* "URSR" */
#define UR_SR_HELLO 1
#define UR_SR_AGREE 2
struct ur_sr_ctrl {
	uint8_t magic[4];
	uint8_t version;
	uint8_t type;
	uint8_t window[2];
	uint8_t dqpn[4];
	uint8_t sqpn[4];
};
static_assert(sizeof(struct ur_sr_ctrl) == 16, "SR control message is 16 bytes");

#define UR_ICRC_SIZE 4
#define UR_CNP_PAYLOAD 16 /* RoCEv2 CNP: 16 reserved bytes after the BTH (Annex A17.9.2) */

#endif
