/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A QP's retransmission mode as one operations table (as mlx5 picks a QP's
 * operations once): what differs between go-back-N and selective repeat is
 * asked of qp->rtx, never tested per packet. Three tables, because a QP
 * that may run selective repeat keeps SR's bookkeeping (its SACK state, its
 * retransmission timeout) from RTS on, long before the peer agrees:
 *
 *   ur_rtx_gbn     go-back-N, no SR state (UC, UD, XRC, a go-back-N device)
 *   ur_rtx_sr_gbn  SR state kept, go-back-N framing: until the peer agrees,
 *                  or for good when it never answers (its IRN timeout still
 *                  sends the oldest PSN again by going back)
 *   ur_rtx_sr      both ends agreed: SR framing, SACKs, selective resends
 *
 * qp.c installs ur_rtx_gbn at create; sr.c installs the two others
 * (ur_sr_create, the agreement, RESET). Internal.
 */
#ifndef UR_RTX_H
#define UR_RTX_H

#include <stdbool.h>
#include <stdint.h>

struct ur_qp;
struct ur_recv_wqe;
struct ur_sack;
struct ur_send_wqe;

/* How a request packet left: for the first time, again after a go-back (a
 * rewind), or as a selective retransmission. Only the first may be timed
 * (Karn's rule). */
enum ur_sr_tx {
	UR_SR_TX_FIRST,
	UR_SR_TX_AGAIN,
	UR_SR_TX_SELECTIVE,
};

struct ur_rtx {
	const char *name;
	/* New messages leave SR-framed, SR-framed requests are accepted, and
	 * every ACK is a SACK (docs/selective-repeat.md). A message keeps the
	 * framing it first left with (ur_send_wqe.sr). */
	bool selective;

	/* requester */
	/* PSNs are queued for a selective resend */
	bool (*retx_pending)(const struct ur_qp *qp);
	/* no new PSN fits either side's window */
	bool (*window_full)(const struct ur_qp *qp);
	/* a packet of `w` with PSNs [psn, psn + npsn) left */
	void (*sent)(struct ur_qp *qp, const struct ur_send_wqe *w, uint32_t psn, uint32_t npsn,
		     enum ur_sr_tx how, uint64_t now);
	/* PSNs from qp->req.una up to `una` are acknowledged (before una moves) */
	void (*acked)(struct ur_qp *qp, uint32_t una, uint64_t now);
	/* ...and una moved: progress */
	void (*progress)(struct ur_qp *qp, uint64_t now);
	/* PSNs [from, to) go again in full (a rewind) */
	void (*forget)(struct ur_qp *qp, uint32_t from, uint32_t to);
	void (*sack_rx)(struct ur_qp *qp, const struct ur_sack *sack, uint64_t now);
	/* the local ACK timeout: resend only what is missing; false: go back instead */
	bool (*resend_missing)(struct ur_qp *qp);
	/* A READ missing responses is asked for again alone, from the first
	 * one missing (requester.c's ur_req_read_missing), not by going back:
	 * READs and atomics may then be answered out of order, and the IBTA
	 * ACK timer watches a READ that ACKs went past. A flag, not a call: the
	 * completer asks it for every ACK. */
	bool reread;
	/* appended to the timeout's log line; what a failing QP logs of its state */
	const char *retry_note;
	void (*log_state)(struct ur_qp *qp);

	/* responder */
	/* the open message's receive WQE was taken ahead: copy it to `dst` */
	bool (*rwqe_taken_ahead)(struct ur_qp *qp, struct ur_recv_wqe *dst);
	/* packets that came early are held */
	bool (*held_early)(const struct ur_qp *qp);
	bool (*sack_due)(const struct ur_qp *qp);
	/* IRN's retransmission timeout runs: an ACK is held for at most an
	 * eighth of its shortest (ack.c; a flag, not a call: it is asked for
	 * every message answered) */
	bool irn_rto;

	/* negotiation and the QP's life */
	bool (*ctrl_pending)(const struct ur_qp *qp);
	void (*start)(struct ur_qp *qp, uint64_t now); /* RTR -> RTS */
	void (*reset)(struct ur_qp *qp);	       /* -> RESET */
	void (*stop_timers)(struct ur_qp *qp);	       /* -> ERR */
	/* -> ERR: receive WQEs taken ahead complete with a flush, in order */
	void (*flush_rwqes)(struct ur_qp *qp);
};

extern const struct ur_rtx ur_rtx_gbn;
extern const struct ur_rtx ur_rtx_sr_gbn;
extern const struct ur_rtx ur_rtx_sr;

#endif
