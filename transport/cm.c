/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The CM endpoint state machine (IBTA Vol 1 12.9). Where the spec leaves
 * a choice (what a duplicate gets, which timeout applies), uroce does what
 * Linux's drivers/infiniband/core/cm.c does, since Linux is the peer.
 */
#include <errno.h>
#include <string.h>

#include "cm.h"

static const char *const state_names[] = {
#define UR_CM_STATE_NAME(name) #name,
    UR_CM_STATES(UR_CM_STATE_NAME)
#undef UR_CM_STATE_NAME
};

static const char *const event_names[] = {
#define UR_CM_EVENT_NAME(name) #name,
    UR_CM_EVENTS(UR_CM_EVENT_NAME)
#undef UR_CM_EVENT_NAME
};

const char *ur_cm_state_name(enum ur_cm_state s)
{
	return (unsigned)s < sizeof(state_names) / sizeof(state_names[0]) ? state_names[s] : "?";
}

const char *ur_cm_event_name(enum ur_cm_event e)
{
	return (unsigned)e < sizeof(event_names) / sizeof(event_names[0]) ? event_names[e] : "?";
}

static void arm(struct ur_cm_id *id, uint64_t now, uint64_t ns)
{
	id->deadline = now + ns;
}

static void disarm(struct ur_cm_id *id)
{
	id->deadline = UINT64_MAX;
}

static void set_state(struct ur_cm_id *id, enum ur_cm_state s)
{
	id->state = s;
	if (s == UR_CM_IDLE)
		disarm(id);
}

static void event(struct ur_cm_out *out, enum ur_cm_event e, uint16_t reason)
{
	out->event = e;
	out->reason = reason;
}

/* Start a new message in tx; the caller fills its body, then send(). */
static struct ur_cm_mad *new_tx(struct ur_cm_id *id, uint16_t attr, uint64_t tid)
{
	ur_cm_mad_init(&id->tx, attr, tid);
	return &id->tx;
}

static void send(struct ur_cm_id *id, struct ur_cm_out *out)
{
	out->send = &id->tx;
}

/* A request we expect an answer to: resent after timeout_ns, max_retries times. */
static void send_request(struct ur_cm_id *id, uint64_t now, enum ur_cm_state s,
			 struct ur_cm_out *out)
{
	id->retries = 0;
	set_state(id, s);
	arm(id, now, id->timeout_ns);
	send(id, out);
}

/* 12.9.7: the QP may not be reused until stray packets of the old connection are gone. */
static void enter_timewait(struct ur_cm_id *id, uint64_t now)
{
	set_state(id, UR_CM_TIMEWAIT);
	arm(id, now, 2 * id->lifetime_ns);
}

void ur_cm_init(struct ur_cm_id *id, uint32_t local_comm_id, uint64_t tid, uint8_t packet_lifetime)
{
	memset(id, 0, sizeof(*id));
	id->state = UR_CM_IDLE;
	id->local_comm_id = local_comm_id;
	id->own_tid = tid;
	id->tid = tid;
	id->lifetime_ns = ur_cm_time_ns(packet_lifetime);
	disarm(id);
}

/* Linux (cm.c) waits 2 packet lifetimes plus the peer's CM response time. */
static uint64_t request_timeout(const struct ur_cm_id *id, uint8_t peer_response)
{
	return 2 * id->lifetime_ns + ur_cm_time_ns(peer_response);
}

static void out_clear(struct ur_cm_out *out)
{
	memset(out, 0, sizeof(*out));
}

int ur_cm_connect(struct ur_cm_id *id, uint64_t now, const struct ur_cm_req *req,
		  struct ur_cm_out *out)
{
	struct ur_cm_mad *m;

	out_clear(out);
	if (id->state != UR_CM_IDLE)
		return -EINVAL;
	m = new_tx(id, UR_CM_ATTR_REQ, id->own_tid);
	m->req = *req;
	m->req.local_comm_id = id->local_comm_id;
	id->tid = id->own_tid;
	id->local_qpn = req->local_qpn;
	id->max_retries = req->max_cm_retries;
	id->timeout_ns = request_timeout(id, req->remote_cm_response_timeout);
	send_request(id, now, UR_CM_REQ_SENT, out);
	return 0;
}

/* A new REQ on an IDLE endpoint: the passive side starts (12.9.5). */
static int on_req(struct ur_cm_id *id, const struct ur_cm_mad *m, struct ur_cm_out *out)
{
	if (id->state != UR_CM_IDLE) {
		if (m->req.local_comm_id != id->remote_comm_id)
			return -EINVAL;
		/* a duplicate: Linux's cm_dup_req_handler() */
		if (id->state == UR_CM_MRA_REQ_SENT) {
			send(id, out);
		} else if (id->state == UR_CM_TIMEWAIT) {
			struct ur_cm_mad *r = new_tx(id, UR_CM_ATTR_REJ, m->hdr.tid);

			r->rej.local_comm_id = id->local_comm_id;
			r->rej.remote_comm_id = id->remote_comm_id;
			r->rej.message_rejected = UR_CM_MSG_REQ;
			r->rej.reason = UR_CM_REJ_STALE_CONN;
			send(id, out);
		}
		return 0;
	}
	id->rx = *m;
	id->tid = m->hdr.tid;
	id->remote_comm_id = m->req.local_comm_id;
	id->remote_qpn = m->req.local_qpn;
	id->max_retries = m->req.max_cm_retries;
	/* our REP waits for the active side's response time, which it announced */
	id->timeout_ns = request_timeout(id, m->req.local_cm_response_timeout);
	set_state(id, UR_CM_REQ_RCVD);
	event(out, UR_CM_EV_REQ_RECEIVED, 0);
	return 0;
}

static int on_mra(struct ur_cm_id *id, uint64_t now, const struct ur_cm_mad *m)
{
	/* 12.6.6: the peer needs service_timeout more; resends wait that long */
	uint64_t wait = 2 * id->lifetime_ns + ur_cm_time_ns(m->mra.service_timeout);

	if (id->state == UR_CM_REQ_SENT && m->mra.message_mraed == UR_CM_MSG_REQ) {
		id->remote_comm_id = m->mra.local_comm_id;
		set_state(id, UR_CM_MRA_REQ_RCVD);
		arm(id, now, wait);
	} else if (id->state == UR_CM_REP_SENT && m->mra.message_mraed == UR_CM_MSG_REP) {
		set_state(id, UR_CM_MRA_REP_RCVD);
		arm(id, now, wait);
	}
	return 0;
}

static int on_rej(struct ur_cm_id *id, uint64_t now, const struct ur_cm_mad *m,
		  struct ur_cm_out *out)
{
	switch (id->state) {
	case UR_CM_REQ_SENT:
	case UR_CM_MRA_REQ_RCVD:
	case UR_CM_REP_SENT:
	case UR_CM_MRA_REP_RCVD:
	case UR_CM_REQ_RCVD:
	case UR_CM_MRA_REQ_SENT:
	case UR_CM_REP_RCVD:
	case UR_CM_MRA_REP_SENT:
		id->rx = *m;
		set_state(id, UR_CM_IDLE);
		event(out, UR_CM_EV_REJECTED, m->rej.reason);
		break;
	case UR_CM_ESTABLISHED:
	case UR_CM_DREQ_SENT:
		/* a stale connection (12.9.8): the QP is gone on the far side */
		id->rx = *m;
		enter_timewait(id, now);
		event(out, UR_CM_EV_REJECTED, m->rej.reason);
		break;
	default:
		break;
	}
	return 0;
}

static int on_rep(struct ur_cm_id *id, const struct ur_cm_mad *m, struct ur_cm_out *out)
{
	switch (id->state) {
	case UR_CM_REQ_SENT:
	case UR_CM_MRA_REQ_RCVD:
		id->rx = *m;
		id->remote_comm_id = m->rep.local_comm_id;
		id->remote_qpn = m->rep.local_qpn;
		set_state(id, UR_CM_REP_RCVD);
		disarm(id);
		event(out, UR_CM_EV_REP_RECEIVED, 0);
		break;
	case UR_CM_ESTABLISHED:
		/* our RTU was lost: the passive side resent its REP (cm_dup_rep_handler) */
		if (id->tx.hdr.attr_id == UR_CM_ATTR_RTU)
			send(id, out);
		break;
	case UR_CM_MRA_REP_SENT:
		send(id, out);
		break;
	default:
		break;
	}
	return 0;
}

static int on_dreq(struct ur_cm_id *id, uint64_t now, const struct ur_cm_mad *m,
		   struct ur_cm_out *out)
{
	struct ur_cm_mad *r;

	if (m->dreq.local_comm_id != id->remote_comm_id)
		return -EINVAL;
	switch (id->state) {
	case UR_CM_REP_SENT:
	case UR_CM_MRA_REP_RCVD:
	case UR_CM_ESTABLISHED:
	case UR_CM_DREQ_SENT: /* both sides disconnect at once: answer theirs, drop ours */
		id->rx = *m;
		id->tid = m->hdr.tid;
		set_state(id, UR_CM_DREQ_RCVD);
		disarm(id);
		event(out, UR_CM_EV_DREQ_RECEIVED, 0);
		break;
	case UR_CM_TIMEWAIT:
		/* our DREP was lost: answer again */
		r = new_tx(id, UR_CM_ATTR_DREP, m->hdr.tid);
		r->drep.local_comm_id = id->local_comm_id;
		r->drep.remote_comm_id = id->remote_comm_id;
		send(id, out);
		break;
	default:
		break;
	}
	(void)now;
	return 0;
}

int ur_cm_on_mad(struct ur_cm_id *id, uint64_t now, const struct ur_cm_mad *m,
		 struct ur_cm_out *out)
{
	uint16_t attr = m->hdr.attr_id;

	out_clear(out);
	if (attr == UR_CM_ATTR_REQ)
		return on_req(id, m, out);
	if (attr == UR_CM_ATTR_SIDR_REQ) {
		if (id->state != UR_CM_IDLE)
			return m->sidr_req.request_id == id->remote_comm_id ? 0 : -EINVAL;
		id->rx = *m;
		id->tid = m->hdr.tid;
		id->remote_comm_id = m->sidr_req.request_id;
		set_state(id, UR_CM_SIDR_REQ_RCVD);
		event(out, UR_CM_EV_SIDR_REQ_RECEIVED, 0);
		return 0;
	}
	if (attr == UR_CM_ATTR_CLASS_PORT_INFO || !ur_cm_attr_name(attr))
		return -EOPNOTSUPP;
	if (ur_cm_mad_dest_id(m) != id->local_comm_id || id->state == UR_CM_IDLE)
		return -EINVAL;

	switch (attr) {
	case UR_CM_ATTR_MRA:
		return on_mra(id, now, m);
	case UR_CM_ATTR_REJ:
		return on_rej(id, now, m, out);
	case UR_CM_ATTR_REP:
		return on_rep(id, m, out);
	case UR_CM_ATTR_RTU:
		if (id->state == UR_CM_REP_SENT || id->state == UR_CM_MRA_REP_RCVD) {
			set_state(id, UR_CM_ESTABLISHED);
			disarm(id);
			event(out, UR_CM_EV_ESTABLISHED, 0);
		}
		return 0;
	case UR_CM_ATTR_DREQ:
		return on_dreq(id, now, m, out);
	case UR_CM_ATTR_DREP:
		if (id->state == UR_CM_DREQ_SENT) {
			enter_timewait(id, now);
			event(out, UR_CM_EV_DISCONNECTED, 0);
		}
		return 0;
	case UR_CM_ATTR_SIDR_REP:
		if (id->state == UR_CM_SIDR_REQ_SENT) {
			id->rx = *m;
			set_state(id, UR_CM_IDLE);
			event(out, UR_CM_EV_SIDR_REP_RECEIVED, m->sidr_rep.status);
		}
		return 0;
	}
	return 0;
}

void ur_cm_on_timer(struct ur_cm_id *id, uint64_t now, struct ur_cm_out *out)
{
	out_clear(out);
	if (now < id->deadline)
		return;
	switch (id->state) {
	case UR_CM_REQ_SENT:
	case UR_CM_MRA_REQ_RCVD:
	case UR_CM_REP_SENT:
	case UR_CM_MRA_REP_RCVD:
	case UR_CM_DREQ_SENT:
	case UR_CM_SIDR_REQ_SENT:
		if (id->retries < id->max_retries) {
			id->retries++;
			/* after an MRA's grace, back to waiting for the answer itself */
			if (id->state == UR_CM_MRA_REQ_RCVD)
				id->state = UR_CM_REQ_SENT;
			else if (id->state == UR_CM_MRA_REP_RCVD)
				id->state = UR_CM_REP_SENT;
			arm(id, now, id->timeout_ns);
			send(id, out);
		} else if (id->state == UR_CM_DREQ_SENT) {
			/* no DREP: disconnected all the same (Linux: DREQ_ERROR) */
			enter_timewait(id, now);
			event(out, UR_CM_EV_DISCONNECTED, 0);
		} else {
			set_state(id, UR_CM_IDLE);
			event(out, UR_CM_EV_UNREACHABLE, 0);
		}
		break;
	case UR_CM_TIMEWAIT:
		set_state(id, UR_CM_IDLE);
		event(out, UR_CM_EV_TIMEWAIT_EXIT, 0);
		break;
	default:
		disarm(id);
		break;
	}
}

int ur_cm_accept(struct ur_cm_id *id, uint64_t now, const struct ur_cm_rep *rep,
		 struct ur_cm_out *out)
{
	struct ur_cm_mad *m;

	out_clear(out);
	if (id->state != UR_CM_REQ_RCVD && id->state != UR_CM_MRA_REQ_SENT)
		return -EINVAL;
	m = new_tx(id, UR_CM_ATTR_REP, id->tid);
	m->rep = *rep;
	m->rep.local_comm_id = id->local_comm_id;
	m->rep.remote_comm_id = id->remote_comm_id;
	id->local_qpn = rep->local_qpn;
	send_request(id, now, UR_CM_REP_SENT, out);
	return 0;
}

int ur_cm_reject(struct ur_cm_id *id, uint64_t now, uint16_t reason, const void *pdata, uint8_t len,
		 struct ur_cm_out *out)
{
	struct ur_cm_mad *m;
	uint8_t which;

	out_clear(out);
	if (id->state == UR_CM_REQ_RCVD || id->state == UR_CM_MRA_REQ_SENT)
		which = UR_CM_MSG_REQ;
	else if (id->state == UR_CM_REP_RCVD || id->state == UR_CM_MRA_REP_SENT)
		which = UR_CM_MSG_REP;
	else
		return -EINVAL;
	if (len > UR_CM_REJ_PDATA)
		return -EINVAL;
	m = new_tx(id, UR_CM_ATTR_REJ, id->tid);
	m->rej.local_comm_id = id->local_comm_id;
	m->rej.remote_comm_id = id->remote_comm_id;
	m->rej.message_rejected = which;
	m->rej.reason = reason;
	if (len)
		memcpy(m->rej.private_data, pdata, len);
	set_state(id, UR_CM_IDLE);
	send(id, out);
	(void)now;
	return 0;
}

int ur_cm_mra(struct ur_cm_id *id, uint64_t now, uint8_t service_timeout, struct ur_cm_out *out)
{
	struct ur_cm_mad *m;
	enum ur_cm_state next;
	uint8_t which;

	out_clear(out);
	if (id->state == UR_CM_REQ_RCVD) {
		which = UR_CM_MSG_REQ;
		next = UR_CM_MRA_REQ_SENT;
	} else if (id->state == UR_CM_REP_RCVD) {
		which = UR_CM_MSG_REP;
		next = UR_CM_MRA_REP_SENT;
	} else {
		return -EINVAL;
	}
	if (service_timeout > 31)
		return -EINVAL;
	m = new_tx(id, UR_CM_ATTR_MRA, id->tid);
	m->mra.local_comm_id = id->local_comm_id;
	m->mra.remote_comm_id = id->remote_comm_id;
	m->mra.message_mraed = which;
	m->mra.service_timeout = service_timeout;
	set_state(id, next);
	send(id, out);
	(void)now;
	return 0;
}

int ur_cm_establish(struct ur_cm_id *id, uint64_t now, struct ur_cm_out *out)
{
	struct ur_cm_mad *m;

	out_clear(out);
	if (id->state != UR_CM_REP_RCVD && id->state != UR_CM_MRA_REP_SENT)
		return -EINVAL;
	m = new_tx(id, UR_CM_ATTR_RTU, id->tid);
	m->rtu.local_comm_id = id->local_comm_id;
	m->rtu.remote_comm_id = id->remote_comm_id;
	set_state(id, UR_CM_ESTABLISHED);
	disarm(id);
	event(out, UR_CM_EV_ESTABLISHED, 0);
	send(id, out);
	(void)now;
	return 0;
}

int ur_cm_comm_established(struct ur_cm_id *id, uint64_t now, struct ur_cm_out *out)
{
	out_clear(out);
	if (id->state != UR_CM_REP_SENT && id->state != UR_CM_MRA_REP_RCVD)
		return id->state == UR_CM_ESTABLISHED ? 0 : -EINVAL;
	set_state(id, UR_CM_ESTABLISHED);
	disarm(id);
	event(out, UR_CM_EV_ESTABLISHED, 0);
	(void)now;
	return 0;
}

int ur_cm_disconnect(struct ur_cm_id *id, uint64_t now, struct ur_cm_out *out)
{
	struct ur_cm_mad *m;

	out_clear(out);
	if (id->state == UR_CM_ESTABLISHED) {
		m = new_tx(id, UR_CM_ATTR_DREQ, id->own_tid);
		m->dreq.local_comm_id = id->local_comm_id;
		m->dreq.remote_comm_id = id->remote_comm_id;
		m->dreq.remote_qpn = id->remote_qpn;
		id->tid = id->own_tid;
		send_request(id, now, UR_CM_DREQ_SENT, out);
		return 0;
	}
	if (id->state == UR_CM_DREQ_RCVD) {
		m = new_tx(id, UR_CM_ATTR_DREP, id->tid);
		m->drep.local_comm_id = id->local_comm_id;
		m->drep.remote_comm_id = id->remote_comm_id;
		enter_timewait(id, now);
		send(id, out);
		return 0;
	}
	return -EINVAL;
}

int ur_cm_sidr_request(struct ur_cm_id *id, uint64_t now, const struct ur_cm_sidr_req *req,
		       uint8_t resp_timeout, uint8_t max_retries, struct ur_cm_out *out)
{
	struct ur_cm_mad *m;

	out_clear(out);
	if (id->state != UR_CM_IDLE)
		return -EINVAL;
	m = new_tx(id, UR_CM_ATTR_SIDR_REQ, id->own_tid);
	m->sidr_req = *req;
	m->sidr_req.request_id = id->local_comm_id;
	id->tid = id->own_tid;
	id->max_retries = max_retries;
	id->timeout_ns = request_timeout(id, resp_timeout);
	send_request(id, now, UR_CM_SIDR_REQ_SENT, out);
	return 0;
}

int ur_cm_sidr_reply(struct ur_cm_id *id, uint64_t now, const struct ur_cm_sidr_rep *rep,
		     struct ur_cm_out *out)
{
	struct ur_cm_mad *m;

	out_clear(out);
	if (id->state != UR_CM_SIDR_REQ_RCVD)
		return -EINVAL;
	m = new_tx(id, UR_CM_ATTR_SIDR_REP, id->tid);
	m->sidr_rep = *rep;
	m->sidr_rep.request_id = id->remote_comm_id;
	set_state(id, UR_CM_IDLE);
	send(id, out);
	(void)now;
	return 0;
}

uint32_t ur_cm_mad_dest_id(const struct ur_cm_mad *m)
{
	switch (m->hdr.attr_id) {
	case UR_CM_ATTR_MRA:
		return m->mra.remote_comm_id;
	case UR_CM_ATTR_REJ:
		return m->rej.remote_comm_id;
	case UR_CM_ATTR_REP:
		return m->rep.remote_comm_id;
	case UR_CM_ATTR_RTU:
		return m->rtu.remote_comm_id;
	case UR_CM_ATTR_DREQ:
		return m->dreq.remote_comm_id;
	case UR_CM_ATTR_DREP:
		return m->drep.remote_comm_id;
	case UR_CM_ATTR_SIDR_REP:
		return m->sidr_rep.request_id;
	default:
		return 0;
	}
}

uint32_t ur_cm_mad_src_id(const struct ur_cm_mad *m)
{
	switch (m->hdr.attr_id) {
	case UR_CM_ATTR_REQ:
		return m->req.local_comm_id;
	case UR_CM_ATTR_MRA:
		return m->mra.local_comm_id;
	case UR_CM_ATTR_REJ:
		return m->rej.local_comm_id;
	case UR_CM_ATTR_REP:
		return m->rep.local_comm_id;
	case UR_CM_ATTR_RTU:
		return m->rtu.local_comm_id;
	case UR_CM_ATTR_DREQ:
		return m->dreq.local_comm_id;
	case UR_CM_ATTR_DREP:
		return m->drep.local_comm_id;
	case UR_CM_ATTR_SIDR_REQ:
		return m->sidr_req.request_id;
	default:
		return 0;
	}
}

bool ur_cm_answer_stray(const struct ur_cm_mad *in, struct ur_cm_mad *reply)
{
	switch (in->hdr.attr_id) {
	case UR_CM_ATTR_REQ:
		/* nobody listens: Linux's cm_req_handler() answers this way */
		ur_cm_mad_init(reply, UR_CM_ATTR_REJ, in->hdr.tid);
		reply->rej.remote_comm_id = in->req.local_comm_id;
		reply->rej.message_rejected = UR_CM_MSG_REQ;
		reply->rej.reason = UR_CM_REJ_INVALID_SERVICE_ID;
		return true;
	case UR_CM_ATTR_REP:
		ur_cm_mad_init(reply, UR_CM_ATTR_REJ, in->hdr.tid);
		reply->rej.local_comm_id = in->rep.remote_comm_id;
		reply->rej.remote_comm_id = in->rep.local_comm_id;
		reply->rej.message_rejected = UR_CM_MSG_REP;
		reply->rej.reason = UR_CM_REJ_INVALID_COMM_ID;
		return true;
	case UR_CM_ATTR_DREQ:
		/* already gone (TimeWait over): the peer still wants its DREP */
		ur_cm_mad_init(reply, UR_CM_ATTR_DREP, in->hdr.tid);
		reply->drep.local_comm_id = in->dreq.remote_comm_id;
		reply->drep.remote_comm_id = in->dreq.local_comm_id;
		return true;
	case UR_CM_ATTR_SIDR_REQ:
		ur_cm_mad_init(reply, UR_CM_ATTR_SIDR_REP, in->hdr.tid);
		reply->sidr_rep.request_id = in->sidr_req.request_id;
		reply->sidr_rep.status = UR_CM_SIDR_UNSUPPORTED;
		reply->sidr_rep.service_id = in->sidr_req.service_id;
		return true;
	default:
		return false;
	}
}
