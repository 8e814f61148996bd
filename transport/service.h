/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What a QP's service does differently (IBTA 9.8: reliable connection,
 * unreliable connection, unreliable datagram; annex A14: the extended
 * reliable connection's initiator and target), chosen once when the QP is
 * created, so the roles ask what a service does instead of which it is.
 * Internal.
 */
#ifndef UR_SERVICE_H
#define UR_SERVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "verbs_types.h"

struct ur_service {
	enum ur_qp_type type;
	const char *name;     /* "RC", "UC", "UD", "XRC_SEND", "XRC_RECV" */
	uint8_t column;       /* its column of table 91 (qp.c's transition table) */
	uint8_t transport;    /* the BTH opcode range (table 38) */
	/* RC: ACKs and NAKs, retries, READs and atomics with responder
	 * resources, the device-wide in-flight cap; a send error takes the
	 * whole QP to ERR (UC and UD: the send queue to SQE, 10.3.1.2) */
	bool acknowledged;
	/* RC and UC: one peer on one path, checked on every packet; UD: an
	 * address vector per WQE, Q_Keys, no per-peer congestion control */
	bool connected;
	/* UC: a lost packet loses its whole message, silently (class D1) */
	bool drops_messages;
	/* RC: may negotiate selective repeat with its peer */
	bool selective;
	/* XRC initiator: every request carries an XRCETH naming the SRQ at
	 * the target (the WQE's remote SRQ number); no receive queue */
	bool xrc_ini;
	/* XRC target: no send or receive queue of its own; each request's
	 * XRCETH names the SRQ, of the QP's XRC domain, that its receives
	 * come from and whose PD its keys are checked in (A14.4) */
	bool xrc_tgt;
};

/* The service of a QP type, or NULL for one uroce does not offer. */
const struct ur_service *ur_service_of(enum ur_qp_type type);

#endif
