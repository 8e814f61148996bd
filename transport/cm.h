/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One CM communication endpoint (IBTA Vol 1 12.9): the state machine of
 * either side of a connection, or of a SIDR exchange, with no I/O. Time
 * comes in as `now` (ns), received MADs come in decoded, and each call
 * gives back at most one MAD to send and at most one event for the
 * consumer; ur_cm_deadline() says when to call ur_cm_on_timer() next.
 * Lookups (which endpoint a MAD is for), the GSI QP and the QP's own
 * state changes are the caller's: see docs/rdma-cm.md.
 */
#ifndef UR_CM_H
#define UR_CM_H

#include <stdbool.h>
#include <stdint.h>

#include "cm_mad.h"

/* States of 12.9's diagrams, with Linux's ib_cm names. */
#define UR_CM_STATES(X)                                                                            \
	X(IDLE)                                                                                    \
	X(REQ_SENT)                                                                                \
	X(REQ_RCVD)                                                                                \
	X(MRA_REQ_SENT)                                                                            \
	X(MRA_REQ_RCVD)                                                                            \
	X(REP_SENT)                                                                                \
	X(REP_RCVD)                                                                                \
	X(MRA_REP_SENT)                                                                            \
	X(MRA_REP_RCVD)                                                                            \
	X(ESTABLISHED)                                                                             \
	X(DREQ_SENT)                                                                               \
	X(DREQ_RCVD)                                                                               \
	X(TIMEWAIT)                                                                                \
	X(SIDR_REQ_SENT)                                                                           \
	X(SIDR_REQ_RCVD)

enum ur_cm_state {
#define UR_CM_STATE_ENUM(name) UR_CM_##name,
	UR_CM_STATES(UR_CM_STATE_ENUM)
#undef UR_CM_STATE_ENUM
};

/* What the consumer is told; the rdma_cm event each becomes is in docs/rdma-cm.md. */
#define UR_CM_EVENTS(X)                                                                            \
	X(NONE)                                                                                    \
	X(REQ_RECEIVED) /* passive: accept, reject or MRA */                                       \
	X(REP_RECEIVED) /* active: ready the QP, then ur_cm_establish() */                         \
	X(ESTABLISHED)                                                                             \
	X(REJECTED)	     /* out.reason: the REJ's reason */                                    \
	X(UNREACHABLE)	     /* retries exhausted, no answer */                                    \
	X(DREQ_RECEIVED)     /* the peer disconnects: answer with ur_cm_disconnect() */            \
	X(DISCONNECTED)	     /* our DREQ answered, or its retries exhausted */                     \
	X(TIMEWAIT_EXIT)     /* the QP may be reused */                                            \
	X(SIDR_REQ_RECEIVED) /* answer with ur_cm_sidr_reply() */                                  \
	X(SIDR_REP_RECEIVED) /* out.reason: the SIDR_REP's status */

enum ur_cm_event {
#define UR_CM_EVENT_ENUM(name) UR_CM_EV_##name,
	UR_CM_EVENTS(UR_CM_EVENT_ENUM)
#undef UR_CM_EVENT_ENUM
};

/* What one call produced. */
struct ur_cm_out {
	const struct ur_cm_mad
	    *send; /* to send on the GSI QP, or NULL; valid until the next call */
	enum ur_cm_event event;
	uint16_t reason;
};

struct ur_cm_id {
	enum ur_cm_state state;
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint64_t own_tid;  /* of the exchanges we start (Linux: one per endpoint) */
	uint64_t tid;	   /* of the exchange in progress */
	uint64_t deadline; /* UINT64_MAX: no timer */
	uint64_t lifetime_ns;
	uint64_t timeout_ns; /* before a resend */
	uint8_t max_retries;
	uint8_t retries;
	uint32_t local_qpn;
	uint32_t remote_qpn;
	struct ur_cm_mad tx; /* the last message sent, resent as is */
	struct ur_cm_mad rx; /* the last REQ, REP, REJ, DREQ or SIDR message received */
};

/* 4.096 us << t: the unit of every CM and transport timeout exponent. */
static inline uint64_t ur_cm_time_ns(uint8_t t)
{
	return 4096ull << (t > 31 ? 31 : t);
}

/*
 * Start an endpoint. local_comm_id (not 0) and tid come from the caller's
 * random source; packet_lifetime is the path's, as an exponent (Linux uses
 * 16 over RoCE). Times out a request after 2 packet lifetimes plus the
 * peer's CM response time; TimeWait lasts 2 packet lifetimes.
 */
void ur_cm_init(struct ur_cm_id *id, uint32_t local_comm_id, uint64_t tid, uint8_t packet_lifetime);

/*
 * Active side: send req (its local_comm_id and the header are filled
 * here). Resent every timeout up to req->max_cm_retries times, then
 * UNREACHABLE. -EINVAL unless IDLE.
 */
int ur_cm_connect(struct ur_cm_id *id, uint64_t now, const struct ur_cm_req *req,
		  struct ur_cm_out *out);

/*
 * A received MAD for this endpoint (see ur_cm_mad_dest_id()). A new REQ or
 * SIDR_REQ goes to an IDLE endpoint the caller made for it. Duplicates
 * and stale messages are answered or dropped here. -EINVAL: not a message
 * for this endpoint (wrong IDs), nothing changed.
 */
int ur_cm_on_mad(struct ur_cm_id *id, uint64_t now, const struct ur_cm_mad *m,
		 struct ur_cm_out *out);

/* The deadline passed: resend, give up, or leave TimeWait. */
void ur_cm_on_timer(struct ur_cm_id *id, uint64_t now, struct ur_cm_out *out);

static inline uint64_t ur_cm_deadline(const struct ur_cm_id *id)
{
	return id->deadline;
}

/* Passive side: answer the REQ (REQ_RCVD or MRA_REQ_SENT). */
int ur_cm_accept(struct ur_cm_id *id, uint64_t now, const struct ur_cm_rep *rep,
		 struct ur_cm_out *out);
/* Either side, before ESTABLISHED: refuse the REQ or REP received. */
int ur_cm_reject(struct ur_cm_id *id, uint64_t now, uint16_t reason, const void *pdata, uint8_t len,
		 struct ur_cm_out *out);
/* Ask the peer for more time on the REQ or REP received (12.6.6). */
int ur_cm_mra(struct ur_cm_id *id, uint64_t now, uint8_t service_timeout, struct ur_cm_out *out);
/* Active side, REP_RCVD or MRA_REP_SENT: the QP is ready; send RTU. */
int ur_cm_establish(struct ur_cm_id *id, uint64_t now, struct ur_cm_out *out);
/*
 * Passive side, REP_SENT: the QP received a packet, so the RTU was lost
 * or is late (12.9: "communication established" counts as an RTU).
 */
int ur_cm_comm_established(struct ur_cm_id *id, uint64_t now, struct ur_cm_out *out);
/* ESTABLISHED: send DREQ. DREQ_RCVD: send DREP. Both end in TimeWait. */
int ur_cm_disconnect(struct ur_cm_id *id, uint64_t now, struct ur_cm_out *out);

/* SIDR (12.11): ask for a UD service's QPN and Q_Key; request ID is our comm ID. */
int ur_cm_sidr_request(struct ur_cm_id *id, uint64_t now, const struct ur_cm_sidr_req *req,
		       uint8_t resp_timeout, uint8_t max_retries, struct ur_cm_out *out);
int ur_cm_sidr_reply(struct ur_cm_id *id, uint64_t now, const struct ur_cm_sidr_rep *rep,
		     struct ur_cm_out *out);

/*
 * Demultiplexing for the caller: the local comm ID a received MAD names
 * (the receiver's: remote_comm_id, or the SIDR_REP's request ID), 0 for
 * REQ and SIDR_REQ, which go by service ID to a listener (after a lookup
 * of an endpoint already made for the sender's ID: a duplicate).
 */
uint32_t ur_cm_mad_dest_id(const struct ur_cm_mad *m);
/* The sender's comm ID (SIDR_REQ: its request ID). */
uint32_t ur_cm_mad_src_id(const struct ur_cm_mad *m);

/*
 * The answer to a MAD no endpoint takes, as Linux's CM gives it: a REQ
 * nobody listens for gets REJ "invalid service ID" (what rping's client
 * prints as "error 8"), a DREQ gets DREP, a REP or RTU REJ "invalid
 * communication ID". Returns false when nothing is to be sent.
 */
bool ur_cm_answer_stray(const struct ur_cm_mad *in, struct ur_cm_mad *reply);

const char *ur_cm_state_name(enum ur_cm_state s);
const char *ur_cm_event_name(enum ur_cm_event e);

#endif
