/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Selective repeat between two agreeing uroce endpoints
 * (docs/selective-repeat.md): negotiation, the requester's per-PSN
 * bookkeeping of SACKs and retransmissions, and the responder's placement of
 * packets that arrive ahead of the expected PSN. Internal.
 */
#ifndef UR_SR_H
#define UR_SR_H

#include <stdbool.h>
#include <stdint.h>

#include "qp.h"
#include "rtx.h"
#include "sr_rack.h"
#include "win_max.h"

enum ur_sr_neg {
	UR_SR_ASKING = 1, /* sending HELLOs */
	UR_SR_AGREED,	  /* both sides speak SR */
	UR_SR_REFUSED,	  /* no answer: go-back-N for good */
};

/* requester, per PSN */
#define UR_SR_SACKED 0x1 /* the responder has it */
#define UR_SR_QUEUED 0x2 /* to be sent again */
#define UR_SR_RESENT 0x4 /* sent again since the last timeout */
#define UR_SR_RETX 0x8	 /* sent more than once: its answer may be the original's */
/* lost by IRN's rule, not RACK's: its responder drops it when it comes early
 * (go-back-N framing, a READ or atomic request) */
#define UR_SR_IRN 0x10
/* resent by a timeout, which no later delivery pointed at: its answer is as
 * likely the original's (a stalled peer) as its own */
#define UR_SR_RTO 0x20
/* responder, per PSN */
#define UR_SR_GOT 0x1  /* arrived early and was placed */
#define UR_SR_LAST 0x2 /* ...and ends its message: done[] says how */

/* How a message whose LAST packet arrived early completes, once in order. */
struct ur_sr_done {
	uint32_t rseq;
	uint32_t byte_len;
	uint32_t imm;
	uint8_t kind;	/* UR_KIND_SEND or UR_KIND_WRITE */
	uint8_t opcode; /* the LAST packet's opcode (immediate, invalidate) */
	uint8_t se;
};

struct ur_sr {
	struct ur_qp *qp;
	uint8_t neg;	/* enum ur_sr_neg */
	uint8_t hellos; /* HELLOs sent */
	bool hello_due;
	bool agree_due;
	struct ur_timer hello_timer;
	uint32_t mask; /* window - 1 (window a power of two) */
	uint32_t peer_window;

	/* requester */
	uint8_t *tx;	  /* per PSN flags, slot psn & mask */
	uint32_t *txseq;  /* per PSN: order of its last transmission */
	uint64_t *txtime; /* per PSN: when its last transmission left */
	uint32_t txseq_next;
	uint32_t nqueued;
	uint32_t nsacked; /* PSNs SACKed above the oldest unacknowledged one */
	uint32_t high;	  /* one past the highest PSN ever SACKed */
	bool have_high;
	struct ur_timer rto;
	uint64_t rto_base_ns; /* last progress or retransmission */
	uint8_t backoff;      /* RTO doublings since the last progress */
	uint64_t stall_from_ns; /* rto_base_ns when the first timeout of a row fired */
	uint64_t heard_ns;      /* the last ACK, SACK or response from the peer */
	bool rtt_timing;      /* one packet at a time is timed (Karn: never a resent one) */
	uint32_t rtt_psn;
	uint64_t rtt_sent_ns;
	uint32_t rtt_samples; /* timed round trips, up to UR_SR_START_SAMPLES */
	uint64_t srtt_ns; /* smoothed round trip and its variation (RFC 6298) */
	uint64_t rttvar_ns;
	struct ur_win_max wait_max; /* round trips, and answers a timeout did not wait for */
	/* loss detection with a reordering window (sr_rack.h) */
	struct ur_rack rack;
	struct ur_timer reo; /* a packet outstanding will be deemed lost */
	bool recovery;	     /* a loss was found; until everything sent before it is ACKed */
	uint32_t recovery_end;

	/* responder */
	uint8_t *rx; /* per PSN flags */
	struct ur_sr_done *done;
	uint32_t nearly; /* PSNs held ahead of the expected one */
	uint8_t *rwqes;	 /* receive WQEs taken ahead, slot rseq & mask */
	uint32_t rwqe_stride;
	bool sack_due;
};

/* Both install their operations table (rtx.h); the operations the roles
 * call through qp->rtx are sr.c's own. */
int ur_sr_create(struct ur_qp *qp);
void ur_sr_destroy(struct ur_qp *qp);

static inline bool ur_sr_on(const struct ur_qp *qp)
{
	return qp->sr && qp->sr->neg == UR_SR_AGREED;
}

/* negotiation */
void ur_sr_ctrl_rx(struct ur_dev *dev, const struct ur_pkt *pkt, uint64_t now);
int ur_sr_emit_ctrl(struct ur_qp *qp, unsigned *budget);
void ur_sr_hello_timer(struct ur_qp *qp, uint64_t now);

/* requester: the selective resends (requester.c's send_retransmission) and IRN's timeout */
bool ur_sr_next_retx(struct ur_qp *qp, uint32_t *psn);
void ur_sr_sent(struct ur_qp *qp, const struct ur_send_wqe *w, uint32_t psn, uint32_t npsn,
		enum ur_sr_tx how, uint64_t now);
/* The reordering window of a packet outstanding ran out (sr.reo). */
void ur_sr_reo_timer(struct ur_qp *qp, uint64_t now);
/* How long a READ response gap may be reordering, not loss. */
uint64_t ur_sr_read_reo_wnd(const struct ur_qp *qp);
uint64_t ur_sr_srtt_ns(const struct ur_qp *qp);
/* IRN's retransmission timeout (the requester's ur_req_sr_rto_timer drives it) */
bool ur_sr_rto_due(struct ur_qp *qp, uint64_t now, uint32_t inflight);
void ur_sr_rto_defer(struct ur_qp *qp, uint64_t now, uint32_t inflight);
void ur_sr_rto_backoff(struct ur_qp *qp, uint64_t now, uint32_t inflight);
/* A READ asked again for responses no tracked PSN covers: the RTO watches it too. */
void ur_sr_rto_watch(struct ur_qp *qp, uint64_t now);
/* Resend what the responder has not SACKed, from the oldest PSN. */
void ur_sr_retry(struct ur_qp *qp);

/*
 * responder: the PSN decision and where the data lands for SR-framed
 * requests. The checks every request passes are the responder's
 * (responder.c); nothing here calls back into it.
 */
bool ur_sr_psn_accept(struct ur_qp *qp, const struct ur_pkt *pkt, int32_t d);
/* The receive WQE of message `rseq`, taken ahead if need be; NULL when none is posted. */
struct ur_recv_wqe *ur_sr_rwqe(struct ur_qp *qp, uint32_t rseq);
bool ur_sr_rseq_fits(const struct ur_qp *qp, const struct ur_sr_done *d, uint32_t ahead);
void ur_sr_hold_early(struct ur_qp *qp, const struct ur_pkt *pkt, const struct ur_sr_done *d);
void ur_sr_sack_if_early(struct ur_qp *qp);
/* A message ends in order: count it, complete its receive WQE if it uses one. */
void ur_sr_complete(struct ur_qp *qp, const struct ur_sr_done *d);
void ur_sr_fail_rwqe(struct ur_qp *qp, struct ur_sr_done *d, uint32_t ahead, uint32_t placed,
		     enum ur_wc_status status);
int ur_sr_advance(struct ur_qp *qp, uint32_t *rseq);
void ur_sr_fill_sack(struct ur_qp *qp, struct ur_sack *s);

#endif
