/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A queue pair and the three roles it plays (IBTA 9.7): the requester turns
 * send WQEs into request packets, the completer matches ACKs and responses
 * to them, and the responder executes incoming requests. Internal.
 */
#ifndef UR_QP_H
#define UR_QP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "cc.h"
#include "cq_post.h"
#include "device.h"
#include "engine.h"
#include "frame.h"
#include "service.h"
#include "timer.h"
#include "wr_opcode.h"

/* Timer kinds, dispatched by device.c's timer_kinds table. */
enum ur_qp_timer_kind {
	UR_TIMER_RETX,  /* local ACK timeout */
	UR_TIMER_RNR,   /* RNR NAK back-off */
	UR_TIMER_PACE,  /* rate limiter: next packet may leave */
	UR_TIMER_CUT,   /* DCQCN: a rate cut deferred to the end of rate_reduce_monitor_period */
	UR_TIMER_RATE,  /* DCQCN rate increase (alpha decays lazily, see dcqcn.h) */
	UR_TIMER_SR_HELLO, /* selective repeat negotiation */
	UR_TIMER_SR_RTO,   /* selective repeat retransmission timeout */
	UR_TIMER_ACK,      /* a held ACK is due */
	UR_TIMER_SR_REO,   /* selective repeat: a reordering window ran out */
};

struct ur_sr;
struct ur_rtx;

/* An RDMA READ or atomic the responder owes a response to, or can replay (9.7.5.1.2). */
struct ur_resp_res {
	uint8_t kind;       /* UR_KIND_READ_REQ or UR_KIND_ATOMIC; 0 when unused */
	bool pending;       /* responses still to send */
	bool replayed;      /* answering a duplicate request (again) */
	uint32_t first_psn; /* PSN of the original request */
	uint32_t last_psn;  /* last PSN its responses use */
	uint32_t cur_psn;   /* next response PSN to send */
	uint32_t req_psn;   /* PSN of the request being answered (a retry may start later) */
	uint64_t va;        /* READ: address of the byte answered at req_psn */
	uint32_t rkey;
	uint32_t length;    /* READ: bytes from va */
	uint64_t orig;      /* atomic: value before the operation */
};

/* The pending acknowledgement of the responder: only the latest matters. */
struct ur_resp_ack {
	bool pending;
	uint8_t syndrome;
	uint32_t psn;
	uint64_t hold_until;   /* a plain ACK waits for a request until then (0: send now;
				* UR_TIME_NEVER: from the next transmit stage, see ur_resp_emit) */
	uint64_t hold_limit;   /* ...and never past this, counted from the first packet
				* the pending ACK acknowledges */
	uint64_t hold_ns;      /* how long to wait for an answer, learned */
	uint64_t asked_ns;     /* a held ACK began waiting then, unanswered yet (0: none) */
	uint8_t unanswered;    /* messages in a row that came since our last request (up to 2) */
	uint8_t after_ack;     /* answers in a row that came right after their ACK left alone */
	uint8_t unheld;        /* messages whose ACK leaves at once before the hold is tried again */
	uint64_t left_ns;      /* the held ACK left alone then, its answer not come yet (0: none) */
	uint64_t sent_ns;      /* the latest ACK or NAK left then (for the log) */
	struct ur_timer hold;  /* UR_TIMER_ACK: the wait is over */
};

/* ur_requester.reread: selective repeat asking again for READs' missing responses */
enum ur_reread {
	UR_REREAD_NONE,
	UR_REREAD_WAIT, /* waiting a reordering window for the responses to come */
};

struct ur_requester {
	uint32_t psn;          /* PSN of the next request packet */
	uint32_t max_psn;      /* one past the highest PSN ever sent, to count retransmissions */
	uint32_t una;          /* oldest unacknowledged PSN */
	uint32_t wqe;          /* SQ index of the WQE being transmitted */
	uint32_t off;          /* bytes of it already transmitted */
	uint32_t comp;         /* SQ index of the oldest WQE not yet completed */
	uint32_t rd_out;       /* READ/atomic WQEs started and not completed */
	uint32_t noack_pkts;   /* packets sent since the last AckReq */
	uint8_t retry_left;
	uint8_t rnr_left;
	bool rnr_wait;         /* holding off until the RNR timer fires */
	/* Go-back-N: an implied NAK (C9-138) asked a READ or atomic again.
	 * Until an answer to it comes in order, the ACKs and responses still
	 * on their way from before show the same gap and ask nothing more. */
	bool implied_nak_out;
	uint32_t nak_stale;    /* responses past the gap still to come from before it */
	/* Selective repeat: READ responses look missing. Every READ with a
	 * response missing at or below reread_high is asked again alone, from
	 * that response, once a reordering window passed (ur_req_read_missing). */
	uint8_t reread;        /* UR_REREAD_* */
	uint32_t reread_high;  /* the responder answered (or sent) up to this PSN */
	uint64_t reread_at;    /* ask again then */
	uint32_t reread_from;  /* a round cut short (no TX room): READs from this PSN remain */
	bool reread_midway;
	uint64_t reread_quiet; /* not before then: the last ones asked are on their way */
	uint32_t nak_psn;      /* PSN of the last sequence NAK acted on */
	uint32_t rseq_next;    /* receive sequence number of the next WQE-consuming message */
	uint64_t progress_ns;  /* last forward progress: base of the ACK timeout */
	bool stall_restarted;  /* the ACK timer ran late and restarted since that progress */
	uint64_t ackreq_ns;    /* when the last AckReq left */
	struct ur_timer retx;
	struct ur_timer rnr;
};

struct ur_responder {
	uint32_t epsn;          /* next expected request PSN */
	uint32_t msn;           /* completed request messages, 24 bits */
	bool nak_sent;          /* one sequence NAK per gap (C9-112) */
	uint8_t in_msg;         /* UR_KIND_SEND/WRITE while a multi-packet message is open */
	bool uc_drop;           /* UC: discarding packets until the next message starts */
	/* open SEND (or WRITE with immediate) message */
	bool have_rwqe;
	uint32_t msg_off;       /* bytes placed into the receive WQE */
	struct ur_recv_wqe *rwqe; /* private copy of the consumed receive WQE */
	/* open WRITE message */
	uint64_t wr_va;
	uint32_t wr_rkey;
	uint32_t wr_left;
	uint32_t wr_len;
	struct ur_resp_ack ack;
	/* READ/atomic resources, max_dest_rd_atomic of them */
	struct ur_resp_res *res;
	uint32_t nres;
	uint32_t res_head;      /* oldest pending resource */
	uint32_t res_tail;      /* next slot to allocate */
	bool error;             /* a class C error was NAKed: enter ERR when sent */
	uint8_t error_status;
	uint32_t rq_taken;      /* receive WQEs taken from the queue since RESET */
	uint32_t rq_done;       /* receive WQEs completed since RESET */
};

struct ur_qp {
	struct ur_dev *dev;
	uint32_t qpn;
	enum ur_qp_type type;
	const struct ur_service *svc; /* what its service does, chosen at create */
	_Atomic int state; /* enum ur_qp_state; read by posters on any thread */
	uint32_t pd;            /* XRC target: the PD of the SRQ the last request named */
	uint32_t xrcd;          /* XRC target: its XRC domain */
	struct ur_cq *scq;
	struct ur_cq *rcq;
	struct ur_srq *srq;     /* XRC target: the SRQ the last request named */
	struct ur_wq sq;
	struct ur_wq rq;
	bool sq_sig_all;
	void *host_ctx;

	struct ur_qp_attr attr; /* as last modified */
	uint32_t mtu;           /* path MTU in bytes */
	uint64_t timeout_ns;    /* local ACK timeout, 0 = infinite */
	struct ur_frame_tmpl tmpl;
	uint16_t ip_id;
	uint32_t max_recv_sge;

	struct ur_requester req;
	struct ur_responder resp;

	/* transmit scheduling */
	struct ur_qp *ready_next;
	bool in_ready;
	/* its destination's cap on unacknowledged packets (peer.h) */
	struct ur_peer *peer;      /* bound by modify; NULL before a destination */
	bool capped;               /* waiting on peer->capped for room */
	struct ur_qp *capped_next;
	uint32_t inflight_counted; /* what this QP adds to peer->inflight */
	uint64_t next_tx_ns;    /* pacer: earliest time of the next data packet */
	struct ur_timer pace;
	struct ur_qp_cc cc;     /* ECN notification point, DCQCN reaction point */

	/* doorbell stack link; db_flag is set while the QP is on the stack */
	struct ur_qp *db_next;
	_Atomic int db_flag;

	bool error_logged;      /* first error explained once */
	const struct ur_av *ud_av; /* UD: where the packet being built goes (the WQE's AH) */
	struct ur_sr *sr;       /* selective repeat, on devices that run it (RC only) */
	const struct ur_rtx *rtx; /* the retransmission mode's operations (rtx.h) */
};

struct ur_srq {
	struct ur_dev *dev;
	struct ur_wq wq;
	uint32_t pd;
	uint32_t limit;         /* armed limit, 0 = disarmed */
	uint32_t srqn;          /* its number: dev->srqs[srqn] */
	uint32_t xrcd;          /* XRC SRQ: its domain (0: an ordinary SRQ) */
	struct ur_cq *cq;       /* XRC SRQ: where its receives complete */
	void *host_ctx;
};

static inline enum ur_qp_state qp_state(const struct ur_qp *qp)
{
	return (enum ur_qp_state)atomic_load_explicit(&qp->state, memory_order_relaxed);
}

/* Forward progress (an answer, or the start): the local ACK timeout runs
 * from now, with every retry back and a stalled host's restart allowed again. */
static inline void ur_req_progress(struct ur_qp *qp, uint64_t now)
{
	qp->req.progress_ns = now;
	qp->req.retry_left = qp->attr.retry_cnt;
	qp->req.stall_restarted = false;
}

static inline struct ur_send_wqe *sq_wqe(struct ur_qp *qp, uint32_t idx)
{
	return ur_wq_slot(&qp->sq, idx);
}

static inline uint32_t sq_prod(struct ur_qp *qp)
{
	return atomic_load_explicit(&qp->sq.prod, memory_order_acquire);
}

static inline bool wqe_is_rd_atomic(const struct ur_send_wqe *w)
{
	return ur_wr_has(w->opcode, UR_WRF_READ | UR_WRF_ATOMIC);
}

/* Where the packet being built goes: a connected QP's path or, for UD, the WQE's AH. */
static inline const struct ur_av *ur_qp_tx_av(const struct ur_qp *qp)
{
	return qp->svc->connected ? &qp->attr.av : qp->ud_av;
}

/* Packets (PSNs) a message of `len` bytes takes at path MTU `mtu`. */
static inline uint32_t ur_npkts(uint32_t len, uint32_t mtu)
{
	return len ? (len + mtu - 1) / mtu : 1;
}

/* Whether a packet comes from the peer a connected QP was given, to the address it has. */
static inline bool ur_qp_from_peer(const struct ur_qp *qp, const struct ur_pkt *pkt)
{
	return memcmp(pkt->sgid.raw, qp->attr.av.path.dgid.raw, 16) == 0 &&
	       memcmp(pkt->dgid.raw, qp->attr.av.path.sgid.raw, 16) == 0;
}

/* cc.c */
void ur_cc_init(struct ur_qp *qp);
void ur_cc_reset(struct ur_qp *qp);
void ur_cc_stop(struct ur_qp *qp);
void ur_cc_ce(struct ur_qp *qp, uint64_t now);
int ur_cc_emit_cnp(struct ur_qp *qp);
void ur_cc_cnp_rx(struct ur_qp *qp, uint64_t now);
void ur_cc_rate_timer(struct ur_qp *qp, uint64_t now);
void ur_cc_cut_timer(struct ur_qp *qp, uint64_t now);
void ur_cc_pace(struct ur_qp *qp, uint32_t frame_len, uint64_t now);
/* True when a full-MTU packet takes longer than `ns` at the QP's paced rate. */
bool ur_cc_slow(const struct ur_qp *qp, uint64_t ns);
/* A data packet left: pace it if the QP is rate limited (one branch if not). */
static inline void ur_cc_data_sent(struct ur_qp *qp, uint32_t frame_len, uint64_t now)
{
	if (ur_unlikely(qp->cc.rp.limited) && frame_len)
		ur_cc_pace(qp, frame_len, now);
}

#endif
