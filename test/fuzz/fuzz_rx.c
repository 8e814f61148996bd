/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target: the engine's whole receive path.
 *
 * Every input builds a fresh device with the fake host of
 * test/common/fake_host.c (a few heap buffers lent and counted), four
 * memory regions, one SRQ and QPs of every type (RC, UC, UD) in every state
 * each type can reach (RESET, INIT, RTR, RTS, SQD, SQE, ERR), with receive
 * WQEs posted and send WQEs in flight; and an XRC SRQ (number 2, XRC domain
 * 1) with XRC targets of that domain and XRC initiators sending to it.
 * The input is then a sequence of records, each a frame for ur_dev_rx() or
 * a control operation, interleaved with ur_dev_poll()/ur_dev_tx() at
 * increasing times. Afterwards everything is freed (LeakSanitizer checks).
 *
 * Input: byte 0 picks the device configuration (bit 0 selective repeat,
 * bit 1 max_inflight 8 and AckReq every 2 packets, bit 2 max_qp_rd_atom 1,
 * bit 3 max_mtu 1024, bit 4 with bit 0: every RC QP in RTR or RTS agrees
 * selective repeat at once, as its peer's AGREE arrives, before its first
 * requests leave, so they go SR-framed and wait for (hostile) SACKs), then
 * records of
 *
 *   flags  bits 0-1  0,1: fix the frame up (lengths, IPv4 checksum, ICRC)
 *                    2:   fix lengths and checksum but leave the ICRC as is
 *                    3:   hand the bytes in untouched
 *          bit 2     rebuild L2-L4 from the target QP's path (else fix in place);
 *                    a datagram to the SR control port (4792) stays one, with
 *                    its QP numbers steered instead of a BTH's
 *          bit 3     rebase the PSN onto the target QP's initial PSNs
 *          bit 4     point R_Keys and addresses at one of our regions
 *          bit 5     mark the packet ECN CE
 *          bits 6-7  afterwards: 0 nothing, 1 poll, 2 tx, 3 poll + tx + drain CQs
 *   qpsel  bits 0-4  target QP, modulo NQP (index 0 is the main RC QP in RTS)
 *          bits 5-7  7: keep the BTH destination QP; 6: keep the source address;
 *                    else steer both to the target QP and its peer
 *   tdelta time advance: (1 + bits 0-4) << (3 * bits 5-7) ns
 *   aux    bits 0-3  transmit buffers the host lends before -ENOBUFS (0: plenty)
 *          bits 4-5  which region bit 4 of flags points keys at
 *          bit 6     with flags bit 2: add an 802.1Q tag
 *          bit 7     with flags bit 4: point keys at the memory window instead,
 *                    a type 2 window bound through QP 0 over region 0's first
 *                    16 KiB (its current key: bound, or invalidated by an IETH,
 *                    a LOCAL_INV, or region 0's deregistration)
 *   len    16 bits, little endian; 0 makes the record a control operation
 *   bytes  the frame (len bytes, fewer if the input ends)
 *
 * A control operation (len 0) is flags & 7: post a receive, post a send,
 * drain the CQs, move the QP to ERR, deregister a region (or register it
 * again), RTS<->SQD or SQE->RTS, advance time by a second, arm the CQs.
 *
 * Checked after every record: each tx_get has its tx_put; every frame the
 * engine sends parses with a valid ICRC, comes from a QP that may send and
 * fits its buffer; QP states are valid and move only as IBTA allows (packets
 * take a QP to ERR, UC/UD to SQE, nothing else); no CQ or WQ index runs past
 * its ring; every CQE names a WQE we posted, on the right QP, once; nothing
 * writes to a region after its deregistration or to a region of another
 * protection domain; selective repeat's requester counts exactly the PSNs it
 * flags queued for retransmission, and flags none outside [una, next PSN)
 * (one there is never sent, and a count off by one stalls or spins the QP).
 *
 * Set FUZZ_RX_STRICT=1 to abort also on protocol findings (a UC or UD QP
 * sending an RC acknowledgement, a UD QP checking PSNs); by default each is
 * reported once.
 * FUZZ_RX_DEBUG=1 prints the device counters and QP states after each input.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h" /* white box: the key table, to bind the window at setup */
#include "engine.h"
#include "fake_host.h"
#include "frame.h"
#include "icrc.h"
#include "opcode.h"
#include "mw.h"
#include "psn.h"
#include "sr.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			fprintf(stderr, "fuzz_rx: check failed at %s:%d: %s\n", __FILE__,          \
				__LINE__, #c);                                                     \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

#define POOL_BUFS 4
#define FRAME_CAP 9216 /* largest fuzzed frame: a jumbo */
#define REC_HDR 6
#define NMR 4
#define WRID_MAGIC 0xf022ull
#define SRQ_IDX 0xff
#define QP_XT_RTS 25 /* an XRC target in RTS, MTU 1024: fuzz_seeds.c aims XRC requests at it */
#define XSRQ_IDX 0xfe

/* ---- the fixture's layout ---- */

struct qp_spec {
	uint8_t type;
	uint8_t state; /* the state the fixture leaves it in */
	uint8_t mtu;   /* ibv_mtu enum */
	bool v6;       /* the peer has an IPv6 address */
	bool srq;
	uint32_t access;
	uint8_t timeout;
	uint8_t retry;
	uint8_t rnr_retry;
};

#define ALL_ACCESS                                                                                 \
	(UR_ACCESS_LOCAL_WRITE | UR_ACCESS_REMOTE_WRITE | UR_ACCESS_REMOTE_READ |                  \
	 UR_ACCESS_REMOTE_ATOMIC)
#define RC UR_QPT_RC
#define UC UR_QPT_UC
#define UD UR_QPT_UD
#define XI UR_QPT_XRC_SEND /* spec .srq: its sends name the XRC SRQ */
#define XT UR_QPT_XRC_RECV /* spec .srq: fills the XRC SRQ */

/* RC and XRC: acknowledged, READs and atomics, never SQE */
static bool reliable(unsigned type)
{
	return type == RC || type == XI || type == XT;
}

/*
 * fuzz_seeds.c aims captures at indices 0 (RC, RTS, MTU 1024), 1 (RC, RTS,
 * MTU 4096), 9 (UC, RTS), 17 (UD, RTS) and 25 (XRC target, RTS, MTU 1024):
 * LLVMFuzzerInitialize checks they stay.
 */
static const struct qp_spec specs[] = {
    {RC, UR_QPS_RTS, 3, false, false, ALL_ACCESS, 10, 3, 3},
    {RC, UR_QPS_RTS, 5, false, false, ALL_ACCESS, 10, 7, 7},
    {RC, UR_QPS_RTS, 3, true, true, ALL_ACCESS, 12, 1, 0},
    {RC, UR_QPS_RTS, 1, false, false, UR_ACCESS_LOCAL_WRITE, 0, 0, 7},
    {RC, UR_QPS_SQD, 3, false, false, ALL_ACCESS, 10, 3, 3},
    {RC, UR_QPS_RTR, 3, false, false, ALL_ACCESS, 10, 3, 3},
    {RC, UR_QPS_INIT, 3, false, false, ALL_ACCESS, 10, 3, 3},
    {RC, UR_QPS_RESET, 3, false, false, ALL_ACCESS, 10, 3, 3},
    {RC, UR_QPS_ERR, 3, false, false, ALL_ACCESS, 10, 3, 3},
    {UC, UR_QPS_RTS, 3, false, false, ALL_ACCESS, 0, 0, 0},
    {UC, UR_QPS_RTS, 5, true, true, UR_ACCESS_LOCAL_WRITE | UR_ACCESS_REMOTE_WRITE, 0, 0, 0},
    {UC, UR_QPS_SQD, 3, false, false, ALL_ACCESS, 0, 0, 0},
    {UC, UR_QPS_SQE, 3, false, false, ALL_ACCESS, 0, 0, 0},
    {UC, UR_QPS_RTR, 3, false, false, ALL_ACCESS, 0, 0, 0},
    {UC, UR_QPS_INIT, 3, false, false, ALL_ACCESS, 0, 0, 0},
    {UC, UR_QPS_RESET, 3, false, false, ALL_ACCESS, 0, 0, 0},
    {UC, UR_QPS_ERR, 3, false, false, ALL_ACCESS, 0, 0, 0},
    {UD, UR_QPS_RTS, 3, false, false, 0, 0, 0, 0},
    {UD, UR_QPS_RTS, 3, true, true, 0, 0, 0, 0},
    {UD, UR_QPS_SQD, 3, false, false, 0, 0, 0, 0},
    {UD, UR_QPS_SQE, 3, false, false, 0, 0, 0, 0},
    {UD, UR_QPS_RTR, 3, false, false, 0, 0, 0, 0},
    {UD, UR_QPS_INIT, 3, false, false, 0, 0, 0, 0},
    {UD, UR_QPS_RESET, 3, false, false, 0, 0, 0, 0},
    {UD, UR_QPS_ERR, 3, false, false, 0, 0, 0, 0},
    {XT, UR_QPS_RTS, 3, false, true, ALL_ACCESS, 10, 3, 3},
    {XT, UR_QPS_RTR, 5, true, true, ALL_ACCESS, 10, 3, 3},
    {XT, UR_QPS_ERR, 3, false, true, ALL_ACCESS, 10, 3, 3},
    {XI, UR_QPS_RTS, 3, false, true, 0, 10, 3, 3},
    {XI, UR_QPS_SQD, 3, false, true, 0, 10, 3, 3},
};
#define NQP (sizeof(specs) / sizeof(specs[0]))

/* Regions: iova, length, access, protection domain. The last one ends at 2^64. */
static const struct {
	uint64_t iova;
	uint32_t len;
	uint32_t access;
	uint32_t pd;
} mr_specs[NMR] = {
    {0x100000, 32768, ALL_ACCESS | UR_ACCESS_MW_BIND, 1}, /* the window's */
    {0x200000, 64, UR_ACCESS_LOCAL_WRITE | UR_ACCESS_REMOTE_READ, 1},
    {0x300000, 8192, ALL_ACCESS, 2},
    {UINT64_MAX - 255, 256, ALL_ACCESS, 1},
};

static const uint8_t local_mac[6] = {0x02, 0, 0, 0, 0, 0x01};
static const uint8_t local_v4[4] = {10, 0, 0, 1};
static const uint8_t local_v6[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01};

static uint32_t qpn_of(unsigned i)
{
	return 0x11 + i;
}

static uint32_t peer_qpn_of(unsigned i)
{
	return 0x100 + i;
}

/* Initial PSNs sit just below the wrap so sequences cross it. */
static uint32_t rq_psn_of(unsigned i)
{
	return (0xfffff0 + i) & UR_PSN_MASK;
}

static uint32_t sq_psn_of(unsigned i)
{
	return (0xffffe8 + 2 * i) & UR_PSN_MASK;
}

static void peer_gid(unsigned i, struct ur_gid *g)
{
	if (specs[i].v6) {
		memset(g->raw, 0, 16);
		g->raw[0] = 0xfd;
		g->raw[13] = 0x02;
		g->raw[15] = (uint8_t)i;
	} else {
		const uint8_t v4[4] = {10, 0, 1, (uint8_t)i};

		ur_gid_from_v4(g, v4);
	}
}

static void local_gid(unsigned i, struct ur_gid *g)
{
	if (specs[i].v6)
		memcpy(g->raw, local_v6, 16);
	else
		ur_gid_from_v4(g, local_v4);
}

static void peer_mac(unsigned i, uint8_t mac[6])
{
	const uint8_t m[6] = {0x02, 0, 0, 0, 0x01, (uint8_t)i};

	memcpy(mac, m, 6);
}

/* ---- the fake host ---- */

static bool strict, debug;

/*
 * test/common/fake_host.c with a few buffers (separate heap blocks, so ASan
 * sees overruns), made once: the host only lends them during step_tx, as
 * many as its credits say, and our checks below see every frame and event.
 */
static struct fake_host host;

struct fixture {
	struct ur_dev *dev;
	struct ur_cq scq, rcq;
	struct ur_srq *srq;
	struct ur_srq *xsrq; /* XRC domain 1, completing on rcq */
	struct ur_mr *mr[NMR];
	struct ur_mr *mw; /* the memory window (aux bit 7) */
	uint8_t *buf[NMR];
	struct ur_av av[NQP]; /* UD: the address handle of each QP's peer */
	uint8_t *old[NMR];    /* a deregistered region's memory... */
	uint8_t *shadow[NMR]; /* ...and its bytes when it was deregistered */
	struct ur_qp *qp[NQP];
	uint8_t expect[NQP];	 /* state the QP must be in, or ERR/SQE it fell into */
	uint16_t seq;		 /* sequence number of the next WQE posted */
	uint8_t done[65536 / 8]; /* which sequence numbers completed */
	uint32_t first_req_psn, first_resp_psn;
	bool have_req_psn, have_resp_psn;
	uint8_t rd_atomic; /* max_rd_atomic and max_dest_rd_atomic of RC QPs */
	uint64_t now;
};

static struct fixture fx;

/* The SRQ a QP with .srq takes receives from, and its wr_id index. */
static struct ur_srq *srq_of(unsigned i)
{
	return specs[i].type == XT || specs[i].type == XI ? fx.xsrq : fx.srq;
}

static unsigned srq_idx_of(unsigned i)
{
	return srq_of(i) == fx.xsrq ? XSRQ_IDX : SRQ_IDX;
}

static void protocol_finding(const char *what, unsigned qp)
{
	static bool reported[8][NQP];
	static const char *whats[8];
	unsigned k;

	for (k = 0; k < 8 && whats[k] && strcmp(whats[k], what); k++)
		;
	if (k == 8)
		k = 7;
	whats[k] = what;
	if (!reported[k][qp]) {
		reported[k][qp] = true;
		fprintf(stderr, "fuzz_rx: protocol finding: %s (QP index %u, %s)\n", what, qp,
			specs[qp].type == RC   ? "RC"
			: specs[qp].type == UC ? "UC"
			: specs[qp].type == UD ? "UD"
					       : "XRC");
	}
	if (strict)
		abort();
}

static unsigned qp_index(uint32_t qpn);

/* A frame the engine sent: it must be a well-formed RoCEv2 packet from one of our QPs. */
static void check_tx_frame(const uint8_t *frame, uint32_t len)
{
	struct ur_pkt pkt;
	struct ur_gid g;
	unsigned i, tr;
	enum ur_qp_state st;

	enum ur_parse_err e = ur_frame_parse(&pkt, frame, len);

	if (e == UR_PARSE_CONTROL) {
		/* selective-repeat negotiation: HELLO or AGREE from one of our QPs */
		const struct ur_sr_ctrl *m = (const void *)pkt.payload;

		CHECK(pkt.payload_len == sizeof(*m) && ur_get_be32(m->magic) == UR_SR_MAGIC);
		CHECK(m->type == UR_SR_HELLO || m->type == UR_SR_AGREE);
		i = qp_index(ur_get_be32(m->sqpn));
		CHECK(i < NQP && ur_get_be32(m->dqpn) == peer_qpn_of(i));
		peer_gid(i, &g);
		CHECK(memcmp(pkt.dgid.raw, g.raw, 16) == 0);
		st = ur_qp_state(fx.qp[i]);
		CHECK(st != UR_QPS_RESET && st != UR_QPS_INIT);
		return;
	}
	if (e != UR_PARSE_OK) {
		fprintf(stderr,
			"fuzz_rx: the engine sent a frame that does not parse (%d), %u bytes:", e,
			len);
		for (uint32_t k = 0; k < len && k < 96; k++)
			fprintf(stderr, "%s%02x", k % 16 ? " " : "\n  ", frame[k]);
		fprintf(stderr, "\n");
		abort();
	}
	CHECK(pkt.dqpn >= peer_qpn_of(0) && pkt.dqpn < peer_qpn_of(NQP));
	i = pkt.dqpn - peer_qpn_of(0);
	peer_gid(i, &g);
	CHECK(memcmp(pkt.dgid.raw, g.raw, 16) == 0);
	local_gid(i, &g);
	CHECK(memcmp(pkt.sgid.raw, g.raw, 16) == 0);
	CHECK(memcmp(pkt.smac, local_mac, 6) == 0);
	st = ur_qp_state(fx.qp[i]);
	CHECK(st != UR_QPS_RESET && st != UR_QPS_INIT);
	/* UD takes no path MTU (table 91): its datagrams are bounded by the port's */
	CHECK(pkt.payload_len <=
	      (specs[i].type == UD ? ur_dev_config(fx.dev)->max_mtu : ur_mtu_bytes(specs[i].mtu)));
	tr = pkt.opcode & UR_TRANSPORT_MASK;
	if (pkt.opcode != UR_OP_CNP && tr != (specs[i].type == RC   ? UR_TRANSPORT_RC
					      : specs[i].type == UC ? UR_TRANSPORT_UC
					      : specs[i].type == UD ? UR_TRANSPORT_UD
								    : UR_TRANSPORT_XRC))
		protocol_finding(
		    "a QP sent an opcode of another transport (e.g. an RC ACK from UC/UD)", i);
}

static void host_fail(const char *msg)
{
	fprintf(stderr, "fuzz_rx: fake host: %s\n", msg);
	abort();
}

static void host_frame(void *h, const uint8_t *frame, uint32_t len)
{
	(void)h;
	check_tx_frame(frame, len);
}

static void host_cq_event(void *h, struct ur_cq *cq)
{
	(void)h;
	CHECK(cq == &fx.scq || cq == &fx.rcq);
}

static void host_async_event(void *h, enum ur_async_event ev, void *obj)
{
	(void)h;
	switch (ev) {
	case UR_EVENT_CQ_ERR:
		CHECK(obj == &fx.scq || obj == &fx.rcq);
		break;
	case UR_EVENT_SRQ_LIMIT_REACHED:
		CHECK(obj == &fx.srq || obj == &fx.xsrq);
		break;
	default:
		CHECK((uintptr_t)obj >= (uintptr_t)&fx.qp[0] &&
		      (uintptr_t)obj < (uintptr_t)&fx.qp[NQP]);
		break;
	}
}

static const struct fake_host_opts host_opts = {
    .nbufs = POOL_BUFS,
    .keep = FAKE_HOST_DISCARD,
    .seed = 0x5eed,
    .fail = host_fail,
    .on_frame = host_frame,
    .on_cq_event = host_cq_event,
    .on_async_event = host_async_event,
};

/* ---- invariants ---- */

static unsigned qp_index(uint32_t qpn)
{
	return qpn >= qpn_of(0) && qpn < qpn_of(NQP) ? qpn - qpn_of(0) : NQP;
}

static void check_ring(const struct ur_wq *q)
{
	uint32_t prod = atomic_load(&q->prod), cons = atomic_load(&q->cons);

	CHECK(prod - cons <= q->mask + 1);
}

/* Selective repeat's retransmission queue: nqueued is the number of QUEUED flags,
 * all of them on PSNs sent and not acknowledged, [una, psn). */
static void check_sr(unsigned i)
{
	const struct ur_qp *qp = fx.qp[i];
	const struct ur_sr *sr = qp->sr;
	uint32_t all = 0, in = 0, n;

	if (!sr)
		return;
	for (uint32_t k = 0; k <= sr->mask; k++)
		all += !!(sr->tx[k] & UR_SR_QUEUED);
	n = (uint32_t)UR_MAX(ur_psn_diff(qp->req.psn, qp->req.una), 0);
	n = UR_MIN(n, sr->mask + 1);
	for (uint32_t k = 0; k < n; k++)
		in += !!(sr->tx[ur_psn_add(qp->req.una, k) & sr->mask] & UR_SR_QUEUED);
	if (sr->nqueued != all || all != in) {
		fprintf(stderr,
			"fuzz_rx: SR QP index %u: nqueued %u, %u PSNs flagged queued, %u of them in "
			"[una %#x, psn %#x)\n",
			i, sr->nqueued, all, in, qp->req.una, qp->req.psn);
		abort();
	}
}

static void check_invariants(void)
{
	fake_host_check_idle(&host);
	for (unsigned i = 0; i < NQP; i++) {
		enum ur_qp_state st = ur_qp_state(fx.qp[i]), exp = fx.expect[i];

		CHECK((unsigned)st < UR_QPS_COUNT);
		if (st != exp) {
			/* packets and timers move a QP only to ERR, or a UC/UD send queue to SQE */
			CHECK(st == UR_QPS_ERR || (st == UR_QPS_SQE && !reliable(specs[i].type) &&
						   (exp == UR_QPS_RTS || exp == UR_QPS_SQD)));
			CHECK(exp != UR_QPS_RESET && exp != UR_QPS_INIT && exp != UR_QPS_ERR);
			CHECK(exp != UR_QPS_RTR || st == UR_QPS_ERR);
			fx.expect[i] = (uint8_t)st;
		}
		check_sr(i);
		check_ring(ur_qp_sq(fx.qp[i]));
		if (!specs[i].srq)
			check_ring(ur_qp_rq(fx.qp[i]));
	}
	check_ring(ur_srq_wq(fx.srq));
	check_ring(ur_srq_wq(fx.xsrq));
	for (const struct ur_cq *cq = &fx.scq; cq; cq = cq == &fx.scq ? &fx.rcq : NULL)
		CHECK(atomic_load(&cq->prod) - atomic_load(&cq->cons) <= cq->mask + 1);
}

/* wr_id: magic | QP index (SRQ_IDX for the SRQ) | posted length (24 bits) | sequence */
static uint64_t make_wr_id(unsigned idx, uint32_t len)
{
	uint16_t seq = fx.seq++;

	fx.done[seq / 8] &= (uint8_t) ~(1u << (seq % 8));
	return WRID_MAGIC << 48 | (uint64_t)(idx & 0xff) << 40 | (uint64_t)(len & 0xffffff) << 16 |
	       seq;
}

static void check_cqe(const struct ur_cqe *c, bool recv)
{
	unsigned qi = qp_index(c->qp_num), idx = (c->wr_id >> 40) & 0xff;
	uint32_t len = (c->wr_id >> 16) & 0xffffff;
	uint16_t seq = (uint16_t)c->wr_id;

	CHECK(c->wr_id >> 48 == WRID_MAGIC);
	CHECK(qi < NQP);
	CHECK(c->status < UR_WC_STATUS_COUNT);
	CHECK(idx == qi || (recv && specs[qi].srq && idx == srq_idx_of(qi)));
	/* a WQE completes once */
	if (fx.done[seq / 8] & (1u << (seq % 8))) {
		fprintf(stderr,
			"fuzz_rx: %s WQE wr_id %#llx of QP index %u completed twice (status %s)\n",
			recv ? "receive" : "send", (unsigned long long)c->wr_id, qi,
			ur_wc_status_name(c->status));
		abort();
	}
	fx.done[seq / 8] |= (uint8_t)(1u << (seq % 8));
	if (recv) {
		CHECK(c->opcode == UR_WC_RECV || c->opcode == UR_WC_RECV_RDMA_WITH_IMM);
		if (c->status == UR_WC_SUCCESS && c->opcode == UR_WC_RECV)
			CHECK(c->byte_len <= len);
	} else {
		CHECK(c->opcode <= UR_WC_LOCAL_INV);
		if (c->status == UR_WC_SUCCESS)
			CHECK(c->opcode == UR_WC_COMP_SWAP || c->opcode == UR_WC_FETCH_ADD
				  ? c->byte_len == 8
				  : c->byte_len == len);
	}
}

static void drain_cqs(void)
{
	struct ur_cqe c[16];
	int n;

	while ((n = ur_cq_poll(&fx.scq, c, 16)) > 0)
		for (int i = 0; i < n; i++)
			check_cqe(&c[i], false);
	while ((n = ur_cq_poll(&fx.rcq, c, 16)) > 0)
		for (int i = 0; i < n; i++)
			check_cqe(&c[i], true);
}

/* ---- posting, as the provider would after its own validation ---- */

static void post_recv(unsigned i, unsigned mr, uint32_t off, uint32_t len, bool bad_key,
		      unsigned nsge)
{
	struct ur_wq *q = specs[i].srq ? ur_srq_wq(srq_of(i)) : ur_qp_rq(fx.qp[i]);
	/* an SRQ takes receives whatever its QPs do (ibv_post_srq_recv) */
	enum ur_qp_state st = specs[i].srq ? UR_QPS_RTS : ur_qp_state(fx.qp[i]);
	struct ur_recv_wqe *r;
	uint32_t total = 0;

	/* an XRC initiator has no receive queue (post_recv refuses) */
	if (st == UR_QPS_RESET || nsge > q->max_sge || specs[i].type == XI)
		return;
	r = ur_wq_reserve(q, 0);
	if (!r)
		return;
	memset(r, 0, sizeof(*r) + nsge * sizeof(struct ur_sge));
	for (unsigned k = 0; k < nsge; k++) {
		unsigned m = (mr + k) % NMR;
		uint32_t o = off % mr_specs[m].len;
		uint32_t l = UR_MIN(len, mr_specs[m].len - o);

		r->sge[k].addr = mr_specs[m].iova + o;
		r->sge[k].length = l;
		r->sge[k].lkey = bad_key || !fx.mr[m] ? 0x1234 : fx.mr[m]->key;
		total += l;
	}
	r->num_sge = nsge;
	r->length = total;
	r->wr_id = make_wr_id(specs[i].srq ? srq_idx_of(i) : i, total);
	ur_wq_commit(q, 1);
	if (st == UR_QPS_ERR)
		ur_qp_doorbell(fx.qp[i]);
}

static bool send_opcode_ok(unsigned type, unsigned op)
{
	if (type == XT) /* an XRC target sends nothing (post_send refuses) */
		return false;
	switch (op) {
	case UR_WR_SEND:
	case UR_WR_SEND_WITH_IMM:
		return true;
	case UR_WR_RDMA_WRITE:
	case UR_WR_RDMA_WRITE_WITH_IMM:
		return type != UD;
	case UR_WR_RDMA_READ:
	case UR_WR_ATOMIC_CMP_AND_SWP:
	case UR_WR_ATOMIC_FETCH_AND_ADD:
	case UR_WR_SEND_WITH_INV:
		return type == RC || type == XI;
	case UR_WR_LOCAL_INV:
	case UR_WR_BIND_MW:
		return type != UD;
	default:
		return false;
	}
}

static void post_send(unsigned i, unsigned op, uint32_t len, unsigned lmr, unsigned rmr,
		      uint32_t roff, uint8_t flags, bool bad_lkey)
{
	struct ur_wq *q = ur_qp_sq(fx.qp[i]);
	enum ur_qp_state st = ur_qp_state(fx.qp[i]);
	bool atomic = op == UR_WR_ATOMIC_CMP_AND_SWP || op == UR_WR_ATOMIC_FETCH_AND_ADD;
	struct ur_send_wqe *w;

	if (st == UR_QPS_RESET || st == UR_QPS_INIT || st == UR_QPS_RTR ||
	    !send_opcode_ok(specs[i].type, op))
		return;
	if (atomic)
		len = 8;
	len = UR_MIN(len, mr_specs[lmr].len);
	if (op == UR_WR_RDMA_READ || atomic || len > q->max_inline)
		flags &= ~UR_SEND_INLINE;
	w = ur_wq_reserve(q, 0);
	if (!w)
		return;
	memset(w, 0, sizeof(*w));
	w->wr_id = make_wr_id(i, len);
	w->opcode = (uint8_t)op;
	w->flags = flags;
	w->signaled = 1;
	w->length = len;
	w->remote_addr = mr_specs[rmr].iova + (atomic ? roff & ~7u : roff) % mr_specs[rmr].len;
	w->rkey = fx.mr[rmr] ? fx.mr[rmr]->key : 0x4321;
	w->imm = op == UR_WR_SEND_WITH_INV ? w->rkey : 0x5a5a5a5a;
	w->compare_add = 1;
	w->swap = 2;
	if (op == UR_WR_LOCAL_INV || op == UR_WR_BIND_MW) {
		/* the window: invalidated, or bound again with its next key */
		w->imm = fx.mw->key;
		w->rkey = (fx.mw->key & ~UR_MW_KEY_MASK) | ((fx.mw->key + 1) & UR_MW_KEY_MASK);
		w->bind_lkey = fx.mr[lmr] ? fx.mr[lmr]->key : 0x1234;
		w->bind_length = len;
		w->bind_access = roff & 0xe; /* remote write, read, atomic */
		w->remote_addr = mr_specs[lmr].iova + roff % mr_specs[lmr].len;
	}
	if (specs[i].type == XI) /* the fuzzer's frames name it too (fuzz_seeds.c) */
		w->xrc_srqn = flags & UR_SEND_FENCE ? 77 : ur_srq_num(fx.xsrq);
	if (specs[i].type == UD) {
		/* the provider refuses a UD send without an address handle */
		w->ud_av = &fx.av[i];
		w->ud_qpn = peer_qpn_of(i);
		w->ud_qkey = flags & UR_SEND_FENCE ? 0x80000000u : 0x11111111u;
	}
	if (flags & UR_SEND_INLINE) {
		memset(w->sge, 0xab, len);
	} else if (len) {
		w->num_sge = 1;
		w->sge[0].addr = mr_specs[lmr].iova;
		w->sge[0].length = len;
		w->sge[0].lkey = bad_lkey || !fx.mr[lmr] ? 0x1234 : fx.mr[lmr]->key;
	}
	ur_wq_commit(q, 1);
	ur_qp_doorbell(fx.qp[i]);
}

/* ---- fixture ---- */

static void step_tx(unsigned credits)
{
	host.credits = credits;
	ur_dev_tx(fx.dev, fx.now, 64);
	host.credits = 0;
}

/* The path to QP i's peer, resolved. */
static void peer_av(unsigned i, struct ur_av *av)
{
	memset(av, 0, sizeof(*av));
	memcpy(av->path.smac, local_mac, 6);
	peer_mac(i, av->path.dmac);
	local_gid(i, &av->path.sgid);
	peer_gid(i, &av->path.dgid);
	av->path.hop_limit = 64;
	av->path.tclass = (uint8_t)(i << 2);
	av->path.udp_sport = ur_roce_udp_sport(0, qpn_of(i), peer_qpn_of(i));
	av->resolved = 1;
}

static int modify(unsigned i, enum ur_qp_state to)
{
	const struct qp_spec *s = &specs[i];
	struct ur_qp_attr a;
	uint32_t mask = UR_QP_STATE;

	memset(&a, 0, sizeof(a));
	a.qp_state = to;
	switch (to) {
	case UR_QPS_INIT:
		a.port_num = 1;
		mask |= UR_QP_PKEY_INDEX | UR_QP_PORT;
		if (s->type == UD) {
			a.qkey = 0x11111111;
			mask |= UR_QP_QKEY;
		} else {
			a.qp_access_flags = s->access;
			mask |= UR_QP_ACCESS_FLAGS;
		}
		break;
	case UR_QPS_RTR:
		if (s->type == UD)
			break;
		a.path_mtu = s->mtu;
		a.dest_qp_num = peer_qpn_of(i);
		a.rq_psn = rq_psn_of(i);
		peer_av(i, &a.av);
		mask |= UR_QP_AV | UR_QP_PATH_MTU | UR_QP_DEST_QPN | UR_QP_RQ_PSN;
		if (reliable(s->type)) { /* XRC ignores its other half's, as Linux */
			a.max_dest_rd_atomic = fx.rd_atomic;
			a.min_rnr_timer = 12;
			mask |= UR_QP_MAX_DEST_RD_ATOMIC | UR_QP_MIN_RNR_TIMER;
		}
		break;
	case UR_QPS_RTS:
		if (ur_qp_state(fx.qp[i]) != UR_QPS_RTR)
			break;
		a.sq_psn = sq_psn_of(i);
		mask |= UR_QP_SQ_PSN;
		if (reliable(s->type)) {
			a.timeout = s->timeout;
			a.retry_cnt = s->retry;
			a.rnr_retry = s->rnr_retry;
			a.max_rd_atomic = fx.rd_atomic;
			mask |= UR_QP_TIMEOUT | UR_QP_RETRY_CNT | UR_QP_RNR_RETRY |
				UR_QP_MAX_QP_RD_ATOMIC;
		}
		break;
	case UR_QPS_SQD:
		a.en_sqd_async_notify = 1;
		mask |= UR_QP_EN_SQD_ASYNC_NOTIFY;
		break;
	default:
		break;
	}
	return ur_qp_modify(fx.qp[i], &a, mask, fx.now);
}

static uint32_t fixup(uint8_t *f, const uint8_t *in, uint32_t len, uint8_t flags, uint8_t qpsel,
		      uint8_t aux);

/* The AGREE QP i's peer would send, handed to the engine as the peer sends it. */
static void sr_agree(unsigned i)
{
	static uint8_t in[UR_ETH_HLEN + UR_IPV4_HLEN + UR_UDP_HLEN + sizeof(struct ur_sr_ctrl)];
	static uint8_t out[FRAME_CAP];
	struct ur_sr_ctrl *m = (struct ur_sr_ctrl *)(in + sizeof(in) - sizeof(*m));
	uint32_t len;

	memset(in, 0, sizeof(in));
	ur_put_be16(in + 12, UR_ETHERTYPE_IPV4);
	in[UR_ETH_HLEN] = 0x45;
	ur_put_be16(in + UR_ETH_HLEN + UR_IPV4_HLEN + 2, UR_SR_CTRL_PORT);
	ur_put_be32(m->magic, UR_SR_MAGIC);
	m->version = 1;
	m->type = UR_SR_AGREE;
	ur_put_be16(m->window, 512);
	len = fixup(out, in, sizeof(in), 4, (uint8_t)i, 0); /* rebuilt for QP i's path */
	ur_dev_rx(fx.dev, out, len, fx.now);
	CHECK(ur_sr_on(fx.qp[i]));
}

/* Work every QP that gets that far has: receives posted, sends in flight. */
static void load_qp(unsigned i)
{
	unsigned t = specs[i].type;

	if (!specs[i].srq) {
		post_recv(i, 0, 0, 16384, false, 1);
		post_recv(i, 0, 16384, 16384, false, 1);
		post_recv(i, 0, 4096, 4096, false, 1);
		post_recv(i, 0, 12000, 2048, false, 2);
		post_recv(i, 0, 9000, 64, false, 1);
		post_recv(i, 0, 0, 256, true, 1);
	}
	if (ur_qp_state(fx.qp[i]) != UR_QPS_RTS)
		return;
	post_send(i, UR_WR_SEND, 100, 0, 0, 0, UR_SEND_SIGNALED, false);
	post_send(i, t == UD ? UR_WR_SEND_WITH_IMM : UR_WR_RDMA_WRITE_WITH_IMM, 2500, 0, 0, 4096,
		  UR_SEND_SIGNALED | UR_SEND_SOLICITED, false);
	post_send(i, UR_WR_RDMA_READ, 3000, 0, 0, 16384, UR_SEND_SIGNALED, false);
	post_send(i, UR_WR_ATOMIC_FETCH_AND_ADD, 8, 0, 0, 64, UR_SEND_SIGNALED, false);
	post_send(i, UR_WR_SEND_WITH_IMM, 0, 0, 0, 0, UR_SEND_SIGNALED | UR_SEND_FENCE, false);
	post_send(i, UR_WR_ATOMIC_CMP_AND_SWP, 8, 0, 3, 8, UR_SEND_SIGNALED, false);
	post_send(i, UR_WR_SEND, 40, 0, 0, 0, UR_SEND_SIGNALED | UR_SEND_INLINE, false);
}

static void fixture_init(uint8_t cfg_byte)
{
	struct ur_dev_config cfg;

	memset(&fx, 0, sizeof(fx));
	fake_host_reset(&host);
	host.credits = 0;
	fx.now = 1000000;
	ur_dev_config_default(&cfg);
	if (cfg_byte & 1)
		cfg.retx_mode = UR_RETX_SR;
	if (cfg_byte & 2) {
		cfg.max_inflight = 8;
		cfg.ack_req_every = 2;
	}
	if (cfg_byte & 4)
		cfg.max_qp_rd_atom = 1;
	fx.rd_atomic = (uint8_t)UR_MIN(cfg.max_qp_rd_atom, 4u);
	if (cfg_byte & 8)
		cfg.max_mtu = 1024;
	CHECK(ur_dev_create(&cfg, &fake_host_ops, &host, NULL, &fx.dev) == 0);
	CHECK(ur_cq_init(&fx.scq, 64, &fx.scq) == 0);
	CHECK(ur_cq_init(&fx.rcq, 64, &fx.rcq) == 0);
	CHECK(ur_srq_create(fx.dev, 8, 2, 1, &fx.srq, &fx.srq) == 0);
	CHECK(ur_srq_create(fx.dev, 8, 2, 1, &fx.xsrq, &fx.xsrq) == 0);
	CHECK(ur_srq_num(fx.xsrq) == 2); /* fuzz_seeds.c names it */
	ur_srq_set_xrc(fx.xsrq, 1, &fx.rcq);
	for (unsigned m = 0; m < NMR; m++) {
		fx.buf[m] = calloc(1, mr_specs[m].len);
		CHECK(fx.buf[m]);
		CHECK(ur_dev_reg_mr(fx.dev, mr_specs[m].iova, fx.buf[m], mr_specs[m].len,
				    mr_specs[m].access, mr_specs[m].pd, &fx.mr[m]) == 0);
	}
	CHECK(ur_dev_alloc_mw(fx.dev, UR_KEY_MW2, 1, &fx.mw) == 0);
	{
		const struct ur_mw_bind b = {
		    .mw_key = fx.mw->key,
		    .new_key = fx.mw->key,
		    .mr_lkey = fx.mr[0]->key,
		    .access = ALL_ACCESS & ~UR_ACCESS_LOCAL_WRITE,
		    .addr = mr_specs[0].iova,
		    .length = 16384,
		};

		CHECK(ur_mw_bind(&fx.dev->mrs, 1, qpn_of(0), &b) == NULL);
	}
	for (unsigned k = 0; k < 6; k++)
		post_recv(2, k & 1 ? 0 : 1, 1024 * k, 2048, false, 1 + (k & 1));
	ur_srq_set_limit(fx.srq, 2);
	/* the last in another PD than the SRQ's: its receive fails (LOC_PROT_ERR) */
	for (unsigned k = 0; k < 6; k++)
		post_recv(QP_XT_RTS, k == 5 ? 2 : 0, 2048 * k, 2048, false, 1 + (k & 1));
	ur_srq_set_limit(fx.xsrq, 1);

	for (unsigned i = 0; i < NQP; i++) {
		const struct qp_spec *s = &specs[i];
		struct ur_qp_init qi = {
		    .type = s->type,
		    .qpn = qpn_of(i),
		    .pd = 1,
		    .send_cq = &fx.scq,
		    .recv_cq = &fx.rcq,
		    .srq = s->srq && !(s->type == XI || s->type == XT) ? fx.srq : NULL,
		    .xrcd = s->type == XT ? 1 : 0,
		    .max_send_wr = 8,
		    .max_recv_wr = 8,
		    .max_send_sge = 2,
		    .max_recv_sge = 2,
		    .max_inline_data = 64,
		    .host_ctx = &fx.qp[i],
		};
		enum ur_qp_state path[] = {UR_QPS_INIT, UR_QPS_RTR, UR_QPS_RTS};
		enum ur_qp_state last = s->state == UR_QPS_RESET  ? UR_QPS_RESET
					: s->state == UR_QPS_INIT ? UR_QPS_INIT
					: s->state == UR_QPS_RTR  ? UR_QPS_RTR
								  : UR_QPS_RTS;

		CHECK(ur_qp_create(fx.dev, &qi, &fx.qp[i]) == 0);
		peer_av(i, &fx.av[i]);
		for (unsigned k = 0; k < 3 && last != UR_QPS_RESET; k++) {
			CHECK(modify(i, path[k]) == 0);
			if (path[k] == last)
				break;
		}
		if ((cfg_byte & 0x11) == 0x11 && s->type == RC &&
		    (last == UR_QPS_RTR || last == UR_QPS_RTS))
			sr_agree(i);
		if (last >= UR_QPS_INIT)
			load_qp(i);
	}
	/* send what was posted: requests in flight, waiting for responses */
	ur_dev_poll(fx.dev, fx.now);
	step_tx(64);
	drain_cqs();
	for (unsigned i = 0; i < NQP; i++) {
		const struct qp_spec *s = &specs[i];

		if (s->state == UR_QPS_SQD) {
			CHECK(modify(i, UR_QPS_SQD) == 0);
		} else if (s->state == UR_QPS_SQE) {
			post_send(i, UR_WR_SEND, 10, 0, 0, 0, UR_SEND_SIGNALED, true);
			ur_dev_poll(fx.dev, fx.now);
			step_tx(64);
			CHECK(ur_qp_state(fx.qp[i]) == UR_QPS_SQE);
			post_send(i, UR_WR_SEND, 10, 0, 0, 0, UR_SEND_SIGNALED, false);
		} else if (s->state == UR_QPS_ERR) {
			CHECK(modify(i, UR_QPS_ERR) == 0);
		}
		drain_cqs();
		fx.expect[i] = s->state;
	}
	ur_dev_poll(fx.dev, fx.now);
	step_tx(64);
	drain_cqs();
	check_invariants();
}

static void fixture_fini(void)
{
	if (debug) {
		const uint64_t *c = ur_dev_counters(fx.dev);

		for (unsigned k = 0; k < UR_CTR_COUNT; k++)
			if (c[k])
				fprintf(stderr, "  %s %llu\n", ur_counter_names[k],
					(unsigned long long)c[k]);
		for (unsigned i = 0; i < NQP; i++)
			fprintf(stderr, "%s%s",
				i ? " " : "  states:", ur_qp_state_name(ur_qp_state(fx.qp[i])));
		fprintf(stderr, "\n");
	}
	for (unsigned i = 0; i < NQP; i++)
		ur_qp_destroy(fx.qp[i]);
	ur_srq_destroy(fx.srq);
	ur_dev_dealloc_mw(fx.dev, fx.mw);
	ur_srq_destroy(fx.xsrq);
	for (unsigned m = 0; m < NMR; m++) {
		/* once deregistered, nothing writes to the memory any more */
		if (fx.old[m])
			CHECK(memcmp(fx.shadow[m], fx.old[m], mr_specs[m].len) == 0);
		/* no QP is in region 2's protection domain: nothing ever writes to it */
		if (mr_specs[m].pd != 1 && fx.buf[m])
			CHECK(fx.buf[m][0] == 0 &&
			      memcmp(fx.buf[m], fx.buf[m] + 1, mr_specs[m].len - 1) == 0);
		if (fx.mr[m])
			ur_dev_dereg_mr(fx.dev, fx.mr[m]);
		free(fx.shadow[m]);
		free(fx.old[m]);
		free(fx.buf[m]);
	}
	ur_dev_destroy(fx.dev);
	ur_cq_fini(&fx.scq);
	ur_cq_fini(&fx.rcq);
	fake_host_check_idle(&host);
}

/* ---- frame fix-up ---- */

struct layout {
	unsigned l3; /* offset of the IP header */
	unsigned l4; /* offset of the UDP header */
	bool v6;
};

/* Where the headers are, if the frame is Ethernet + IP + UDP at all. */
static bool find_layout(const uint8_t *f, uint32_t len, struct layout *lo)
{
	unsigned off = 12;
	uint16_t type;

	if (len < UR_ETH_HLEN)
		return false;
	type = ur_get_be16(f + off);
	if (type == UR_ETHERTYPE_VLAN) {
		if (len < UR_ETH_HLEN + UR_VLAN_HLEN)
			return false;
		off += UR_VLAN_HLEN;
		type = ur_get_be16(f + off);
	}
	lo->l3 = off + 2;
	if (type == UR_ETHERTYPE_IPV4) {
		unsigned ihl;

		if (len < lo->l3 + UR_IPV4_HLEN)
			return false;
		ihl = (f[lo->l3] & 0xf) * 4u;
		if (ihl < UR_IPV4_HLEN)
			return false;
		lo->v6 = false;
		lo->l4 = lo->l3 + ihl;
	} else if (type == UR_ETHERTYPE_IPV6) {
		lo->v6 = true;
		lo->l4 = lo->l3 + UR_IPV6_HLEN;
	} else {
		return false;
	}
	return lo->l4 + UR_UDP_HLEN + sizeof(struct ur_bth) + UR_ICRC_SIZE <= len;
}

/* Replace L2-L4 with the headers the target QP's peer would send. */
static uint32_t reencap(uint8_t *out, const uint8_t *in, uint32_t len, unsigned qi, bool vlan,
			struct layout *lo)
{
	struct layout il;
	const uint8_t *roce = in;
	uint32_t roce_len = len, off = 12;
	struct ur_gid src, dst;

	uint16_t dport = UR_ROCE_UDP_PORT;

	if (find_layout(in, len, &il)) {
		roce = in + il.l4 + UR_UDP_HLEN;
		roce_len = len - il.l4 - UR_UDP_HLEN;
		if (ur_get_be16(in + il.l4 + 2) == UR_SR_CTRL_PORT)
			dport = UR_SR_CTRL_PORT;
	}
	if (roce_len > FRAME_CAP - UR_FRAME_MAX_HDR)
		roce_len = FRAME_CAP - UR_FRAME_MAX_HDR;
	peer_gid(qi, &src);
	local_gid(qi, &dst);
	memcpy(out, local_mac, 6);
	peer_mac(qi, out + 6);
	if (vlan) {
		ur_put_be16(out + off, UR_ETHERTYPE_VLAN);
		ur_put_be16(out + off + 2, 0x0007);
		off += UR_VLAN_HLEN;
	}
	lo->l3 = off + 2;
	lo->v6 = specs[qi].v6;
	if (lo->v6) {
		ur_put_be16(out + off, UR_ETHERTYPE_IPV6);
		memset(out + lo->l3, 0, UR_IPV6_HLEN);
		out[lo->l3] = 0x60;
		out[lo->l3 + 6] = 17;
		out[lo->l3 + 7] = 64;
		memcpy(out + lo->l3 + 8, src.raw, 16);
		memcpy(out + lo->l3 + 24, dst.raw, 16);
		lo->l4 = lo->l3 + UR_IPV6_HLEN;
	} else {
		ur_put_be16(out + off, UR_ETHERTYPE_IPV4);
		memset(out + lo->l3, 0, UR_IPV4_HLEN);
		out[lo->l3] = 0x45;
		out[lo->l3 + 6] = 0x40;
		out[lo->l3 + 8] = 64;
		out[lo->l3 + 9] = 17;
		memcpy(out + lo->l3 + 12, src.raw + 12, 4);
		memcpy(out + lo->l3 + 16, dst.raw + 12, 4);
		lo->l4 = lo->l3 + UR_IPV4_HLEN;
	}
	ur_put_be16(out + lo->l4, 0xc000 | (uint16_t)qi);
	ur_put_be16(out + lo->l4 + 2, dport);
	ur_put_be16(out + lo->l4 + 6, 0);
	memcpy(out + lo->l4 + UR_UDP_HLEN, roce, roce_len);
	len = lo->l4 + UR_UDP_HLEN + roce_len;
	/* at least a BTH and an ICRC */
	while (len < lo->l4 + UR_UDP_HLEN + sizeof(struct ur_bth) + UR_ICRC_SIZE)
		out[len++] = 0;
	return len;
}

static bool is_request(unsigned kind)
{
	return kind == UR_KIND_SEND || kind == UR_KIND_WRITE || kind == UR_KIND_READ_REQ ||
	       kind == UR_KIND_ATOMIC;
}

/* Point the R_Key (and address) of RETH, AtomicETH and IETH at region `m`, or the window. */
static void fix_keys(uint8_t *bth, uint32_t avail, unsigned m, bool window)
{
	const struct ur_opcode_info *op = ur_opcode_get(bth[0]);
	uint32_t key = window ? fx.mw->key : fx.mr[m] ? fx.mr[m]->key : 0x777;

	if (window)
		m = 0; /* its addresses are region 0's, the first 16 KiB of them */

	if (op->kind == UR_KIND_INVALID || op->hdr_len > avail)
		return;
	if (op->hdrs & UR_HDR_RETH) {
		struct ur_reth *h = (struct ur_reth *)(bth + op->off_reth);

		ur_reth_set_rkey(h, key);
		ur_reth_set_va(h, mr_specs[m].iova + ur_reth_va(h) % mr_specs[m].len);
	}
	if (op->hdrs & UR_HDR_ATMETH) {
		struct ur_atmeth *h = (struct ur_atmeth *)(bth + op->off_atmeth);

		ur_atmeth_set_rkey(h, key);
		ur_atmeth_set_va(h, mr_specs[m].iova + (ur_atmeth_va(h) % mr_specs[m].len & ~7ull));
	}
	if (op->hdrs & UR_HDR_IETH)
		ur_ieth_set_rkey((struct ur_ieth *)(bth + op->off_ieth), key);
	/* selective repeat: a WRITE's every packet names its region in the SRETH */
	if (ur_bth_sr((struct ur_bth *)bth) && op->kind == UR_KIND_WRITE &&
	    op->hdr_len + sizeof(struct ur_sreth) <= avail) {
		struct ur_sreth *h = (struct ur_sreth *)(bth + op->hdr_len);

		ur_sreth_set_rkey(h, key);
		ur_sreth_set_va(h, mr_specs[m].iova + ur_sreth_va(h) % mr_specs[m].len);
	}
}

/* Rewrite the PSN relative to the first request (or response) of this input. */
static void rebase_psn(struct ur_bth *bth, uint32_t avail, unsigned qi)
{
	const struct ur_opcode_info *op = ur_opcode_get(ur_bth_opcode(bth));
	unsigned kind = ur_opcode_get(ur_bth_opcode(bth))->kind;
	uint32_t psn = ur_bth_psn(bth);

	if (kind == UR_KIND_INVALID || kind == UR_KIND_CNP)
		return;
	if (is_request(kind)) {
		if (!fx.have_req_psn) {
			fx.have_req_psn = true;
			fx.first_req_psn = psn;
		}
		ur_bth_set_psn(bth, ur_psn_add(rq_psn_of(qi), psn - fx.first_req_psn));
	} else {
		if (!fx.have_resp_psn) {
			fx.have_resp_psn = true;
			fx.first_resp_psn = psn;
		}
		ur_bth_set_psn(bth, ur_psn_add(sq_psn_of(qi), psn - fx.first_resp_psn));
		/* and the first missing PSN of a selective acknowledgement */
		if (ur_bth_sr(bth) && kind == UR_KIND_ACK &&
		    op->hdr_len + sizeof(struct ur_sack) <= avail) {
			struct ur_sack *h = (struct ur_sack *)((uint8_t *)bth + op->hdr_len);

			ur_sack_set_base(
			    h, ur_psn_add(sq_psn_of(qi), ur_sack_base(h) - fx.first_resp_psn));
		}
	}
}

/* IP and UDP lengths, IPv4 header checksum: the datagram runs to the end of the frame. */
static void fix_lengths(uint8_t *f, uint32_t len, const struct layout *lo)
{
	uint32_t total = len - lo->l3;

	if (lo->v6) {
		ur_put_be16(f + lo->l3 + 4, (uint16_t)(total - UR_IPV6_HLEN));
	} else {
		ur_put_be16(f + lo->l3 + 2, (uint16_t)total);
		f[lo->l3 + 6] &= 0x40; /* no fragments: keep only DF */
		f[lo->l3 + 7] = 0;
		ur_put_be16(f + lo->l3 + 10, 0);
		ur_put_be16(f + lo->l3 + 10, ur_ipv4_csum(f + lo->l3, lo->l4 - lo->l3));
	}
	ur_put_be16(f + lo->l4 + 4, (uint16_t)(len - lo->l4));
}

/* A selective-repeat negotiation datagram: aim its QP numbers at the target QP. */
static uint32_t fixup_ctrl(uint8_t *f, uint32_t len, const struct layout *lo, unsigned qi,
			   bool keep_qpn)
{
	struct ur_sr_ctrl *m = (struct ur_sr_ctrl *)(f + lo->l4 + UR_UDP_HLEN);

	if (!keep_qpn && len - lo->l4 - UR_UDP_HLEN >= sizeof(*m)) {
		ur_put_be32(m->dqpn, qpn_of(qi));
		ur_put_be32(m->sqpn, peer_qpn_of(qi));
	}
	fix_lengths(f, len, lo);
	return len;
}

/* Fix up frame `f` in place (it has room for FRAME_CAP bytes); returns its new length. */
static uint32_t fixup(uint8_t *f, const uint8_t *in, uint32_t len, uint8_t flags, uint8_t qpsel,
		      uint8_t aux)
{
	unsigned qi = (qpsel & 0x1f) % NQP, mode = flags & 3;
	bool keep_qpn = (qpsel >> 5) == 7, keep_src = (qpsel >> 5) == 6;
	struct layout lo;
	struct ur_bth *bth;
	uint32_t total;

	if (mode == 3) {
		memcpy(f, in, len);
		return len;
	}
	if (flags & 4) {
		len = reencap(f, in, len, qi, aux & 0x40, &lo);
	} else {
		memcpy(f, in, len);
		if (!find_layout(f, len, &lo))
			return len;
		if (!keep_src) {
			struct ur_gid g;

			peer_gid(qi, &g);
			if (lo.v6 && specs[qi].v6)
				memcpy(f + lo.l3 + 8, g.raw, 16);
			else if (!lo.v6 && !specs[qi].v6)
				memcpy(f + lo.l3 + 12, g.raw + 12, 4);
		}
		if (ur_get_be16(f + lo.l4 + 2) != UR_SR_CTRL_PORT)
			ur_put_be16(f + lo.l4 + 2, UR_ROCE_UDP_PORT);
	}
	if (ur_get_be16(f + lo.l4 + 2) == UR_SR_CTRL_PORT)
		return fixup_ctrl(f, len, &lo, qi, keep_qpn);
	bth = (struct ur_bth *)(f + lo.l4 + UR_UDP_HLEN);
	if (!keep_qpn)
		ur_bth_set_dqpn(bth, qpn_of(qi));
	if (flags & 8)
		rebase_psn(bth, len - lo.l4 - UR_UDP_HLEN - UR_ICRC_SIZE, qi);
	if (flags & 0x10)
		fix_keys((uint8_t *)bth, len - lo.l4 - UR_UDP_HLEN - UR_ICRC_SIZE, (aux >> 4) & 3,
			 aux & 0x80);
	if (flags & 0x20) {
		if (lo.v6)
			f[lo.l3 + 1] |= UR_ECN_CE << 4;
		else
			f[lo.l3 + 1] |= UR_ECN_CE;
	}
	fix_lengths(f, len, &lo);
	total = len - lo.l3;
	if (mode != 2)
		ur_icrc_store(f + len - UR_ICRC_SIZE,
			      ur_icrc_compute(f + lo.l3, total - UR_ICRC_SIZE));
	return len;
}

/* ---- control operations ---- */

static void control(uint8_t flags, uint8_t qpsel, uint8_t aux)
{
	unsigned qi = (qpsel & 0x1f) % NQP;

	switch (flags & 7) {
	case 0:
		post_recv(qi, (flags >> 3) & 3, aux * 64u, 64u + aux * 32u, flags & 0x20,
			  1 + ((flags >> 6) & 1));
		break;
	case 1:
		post_send(qi, aux % UR_WR_OPCODE_COUNT, ((flags >> 3) & 7) * 700u + (aux >> 4),
			  (qpsel >> 5) & 3, (aux >> 4) & 3, aux * 40u,
			  UR_SEND_SIGNALED | (flags & 0x40 ? UR_SEND_FENCE : 0) |
			      (flags & 0x80 ? UR_SEND_INLINE : UR_SEND_SOLICITED),
			  (flags & 0x38) == 0x38);
		break;
	case 2:
		drain_cqs();
		break;
	case 3:
		if (modify(qi, UR_QPS_ERR) == 0)
			fx.expect[qi] = UR_QPS_ERR;
		break;
	case 4: {
		unsigned m = aux & 3;

		if (fx.mr[m] && !fx.old[m]) {
			/* deregister; the memory stays, and must stay untouched */
			ur_dev_dereg_mr(fx.dev, fx.mr[m]);
			fx.mr[m] = NULL;
			fx.old[m] = fx.buf[m];
			fx.shadow[m] = malloc(mr_specs[m].len);
			CHECK(fx.shadow[m]);
			memcpy(fx.shadow[m], fx.old[m], mr_specs[m].len);
			fx.buf[m] = NULL;
		} else if (!fx.mr[m] && fx.old[m] && !fx.buf[m]) {
			/* register the region again: new memory, new key, the old key stale */
			fx.buf[m] = calloc(1, mr_specs[m].len);
			CHECK(fx.buf[m]);
			CHECK(ur_dev_reg_mr(fx.dev, mr_specs[m].iova, fx.buf[m], mr_specs[m].len,
					    mr_specs[m].access, mr_specs[m].pd, &fx.mr[m]) == 0);
		}
		break;
	}
	case 5: {
		enum ur_qp_state st = ur_qp_state(fx.qp[qi]), to;

		if (st == UR_QPS_RTS)
			to = UR_QPS_SQD;
		else if (st == UR_QPS_SQD || st == UR_QPS_SQE)
			to = UR_QPS_RTS;
		else
			break;
		if (modify(qi, to) == 0)
			fx.expect[qi] = (uint8_t)to;
		break;
	}
	case 6:
		fx.now += 1000000000ull;
		ur_dev_poll(fx.dev, fx.now);
		break;
	default:
		atomic_store(&fx.scq.arm, aux & 1 ? UR_CQ_ARM_SOLICITED : UR_CQ_ARM_NEXT);
		atomic_store(&fx.rcq.arm, aux & 2 ? UR_CQ_ARM_SOLICITED : UR_CQ_ARM_NEXT);
		break;
	}
}

/* Hand a frame to the engine, and see what the QP it reached made of it. */
static void rx_frame(const uint8_t *frame, uint32_t len)
{
	const uint64_t *ctr = ur_dev_counters(fx.dev);
	uint64_t oos = ctr[UR_CTR_out_of_sequence];
	struct layout lo;
	unsigned qi;

	ur_dev_rx(fx.dev, frame, len, fx.now);
	if (ctr[UR_CTR_out_of_sequence] == oos || !find_layout(frame, len, &lo))
		return;
	/* UD has no packet sequence: its responder must not drop a datagram for
	 * its PSN (Soft-RoCE checks PSNs of RC and UC QPs only) */
	qi = qp_index(ur_get_be24(frame + lo.l4 + UR_UDP_HLEN + 5));
	if (qi < NQP && specs[qi].type == UD)
		protocol_finding("a UD QP dropped a datagram because of its PSN", qi);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *s = getenv("FUZZ_RX_STRICT");

	(void)argc;
	(void)argv;
	CHECK(specs[0].type == RC && specs[0].state == UR_QPS_RTS && specs[0].mtu == 3);
	CHECK(specs[1].type == RC && specs[1].state == UR_QPS_RTS && specs[1].mtu == 5);
	CHECK(specs[9].type == UC && specs[9].state == UR_QPS_RTS);
	CHECK(specs[17].type == UD && specs[17].state == UR_QPS_RTS);
	CHECK(specs[QP_XT_RTS].type == XT && specs[QP_XT_RTS].state == UR_QPS_RTS &&
	      specs[QP_XT_RTS].mtu == 3);
	strict = s && *s == '1';
	s = getenv("FUZZ_RX_DEBUG");
	debug = s && *s == '1'; /* print the counters after each input */
	CHECK(fake_host_init(&host, &host_opts) == 0);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t frame[FRAME_CAP];
	size_t pos = 1;

	if (!size)
		return 0;
	fixture_init(data[0]);
	while (size - pos >= REC_HDR) {
		uint8_t flags = data[pos], qpsel = data[pos + 1], td = data[pos + 2];
		uint8_t aux = data[pos + 3];
		uint32_t len = data[pos + 4] | (uint32_t)data[pos + 5] << 8;

		pos += REC_HDR;
		fx.now += (uint64_t)(1 + (td & 31)) << (3 * (td >> 5));
		if (len == 0) {
			control(flags, qpsel, aux);
		} else {
			len = (uint32_t)UR_MIN((size_t)len, UR_MIN(size - pos, (size_t)FRAME_CAP));
			uint32_t n = fixup(frame, data + pos, len, flags, qpsel, aux);

			pos += len;
			rx_frame(frame, n);
		}
		CHECK(host.gets == host.puts);
		if (flags >> 6 & 1)
			ur_dev_poll(fx.dev, fx.now);
		if (flags >> 7 & 1)
			step_tx(aux & 15 ? aux & 15 : 64);
		if ((flags >> 6) == 3)
			drain_cqs();
		check_invariants();
	}
	/* let everything due happen, then take stock */
	ur_dev_poll(fx.dev, fx.now);
	step_tx(64);
	drain_cqs();
	check_invariants();
	fixture_fini();
	return 0;
}
