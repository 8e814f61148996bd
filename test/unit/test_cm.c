/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The CM endpoint state machine in virtual time: two endpoints, a wire
 * that loses exactly the messages a test names, consumers that answer as
 * rdma_cm's do (accept a REQ, RTU after a REP, DREP after a DREQ). Each
 * lost REQ, REP, RTU, DREQ or DREP still ends connected and disconnected,
 * with exact message counts; a silent peer ends unreachable after the
 * REQ's retries; rejects carry their reason. Every MAD crosses the wire
 * encoded and decoded.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cm.h"
#include "cm_ip.h"
#include "cm_mad.h"
#include "test_util.h"

#define LIFETIME 10	/* 4.2 ms */
#define RESP_TIMEOUT 14 /* 67 ms */
#define MAX_RETRIES 3
#define MAX_EVENTS 32
#define MAX_ATTR 0x20
#define QUEUE 16

enum { A, B }; /* A connects, B listens */

struct side {
	struct ur_cm_id id;
	bool exists;	/* B before a REQ, either after TimeWait: no endpoint */
	bool listening; /* B answers a REQ; otherwise REJ "invalid service ID" */
	enum ur_cm_event ev[MAX_EVENTS];
	uint16_t reason[MAX_EVENTS];
	unsigned int nev;
	unsigned int sent[MAX_ATTR];
	/* consumer behaviour */
	bool reject;	      /* B rejects the REQ */
	bool mra_then_accept; /* B sends MRA, accepts after delay_ns */
	uint64_t accept_at;
};

struct wire {
	uint64_t now;
	struct side s[2];
	/* in flight, in order */
	uint8_t bytes[QUEUE][UR_MAD_LEN];
	int to[QUEUE];
	unsigned int head, tail;
	/* loss: drop the n-th (from 1) message of attr from side `from` */
	struct {
		int from;
		uint16_t attr;
		unsigned int nth;
	} drop[8];
	unsigned int ndrop;
	bool a_silent_peer; /* everything A sends is lost */
	bool disconnect_when_up;
	bool disconnected_once;
	bool rtu_by_traffic; /* B learns of the connection from the first data packet */
};

static struct wire w;

static void wire_init(void)
{
	memset(&w, 0, sizeof(w));
	w.now = 1000000000ull; /* 1 s: deadlines are absolute */
	ur_cm_init(&w.s[A].id, 0xa0000001u, 0x0000000224f27379ull, LIFETIME);
	w.s[A].exists = true;
	w.s[B].listening = true;
	w.disconnect_when_up = true;
}

static void handle(int who, struct ur_cm_out *out);

static void add_drop(int from, uint16_t attr, unsigned int nth)
{
	ck_assert_uint_lt(w.ndrop, sizeof(w.drop) / sizeof(w.drop[0]));
	w.drop[w.ndrop].from = from;
	w.drop[w.ndrop].attr = attr;
	w.drop[w.ndrop++].nth = nth;
}

static void transmit(int from, const struct ur_cm_mad *m)
{
	struct side *s = &w.s[from];
	uint16_t attr = m->hdr.attr_id;
	unsigned int n;

	ck_assert_uint_lt(attr, MAX_ATTR);
	n = ++s->sent[attr];
	if (from == A && w.a_silent_peer)
		return;
	for (unsigned int i = 0; i < w.ndrop; i++)
		if (w.drop[i].from == from && w.drop[i].attr == attr && w.drop[i].nth == n)
			return;
	ck_assert_uint_lt(w.tail - w.head, QUEUE);
	ck_assert_int_eq(ur_cm_mad_encode(m, w.bytes[w.tail % QUEUE], UR_MAD_LEN), 0);
	w.to[w.tail % QUEUE] = !from;
	w.tail++;
}

static void record(int who, const struct ur_cm_out *out)
{
	struct side *s = &w.s[who];

	if (out->event == UR_CM_EV_NONE)
		return;
	ck_assert_uint_lt(s->nev, MAX_EVENTS);
	s->ev[s->nev] = out->event;
	s->reason[s->nev++] = out->reason;
}

/* What an rdma_cm consumer does on each event. */
static void consume(int who, enum ur_cm_event e)
{
	struct side *s = &w.s[who];
	struct ur_cm_out out;

	switch (e) {
	case UR_CM_EV_REQ_RECEIVED:
		if (s->reject) {
			ck_assert_int_eq(
			    ur_cm_reject(&s->id, w.now, UR_CM_REJ_CONSUMER_DEFINED, "no", 2, &out),
			    0);
			handle(who, &out);
		} else if (s->mra_then_accept) {
			ck_assert_int_eq(ur_cm_mra(&s->id, w.now, RESP_TIMEOUT + 4, &out), 0);
			handle(who, &out);
		} else {
			struct ur_cm_rep rep = {.local_qpn = 0x456,
						.starting_psn = 0xfffff5,
						.responder_resources = 16,
						.initiator_depth = 16,
						.rnr_retry_count = 7};

			ck_assert_int_eq(ur_cm_accept(&s->id, w.now, &rep, &out), 0);
			handle(who, &out);
		}
		break;
	case UR_CM_EV_REP_RECEIVED:
		ck_assert_int_eq(ur_cm_establish(&s->id, w.now, &out), 0);
		handle(who, &out);
		break;
	case UR_CM_EV_DREQ_RECEIVED:
		ck_assert_int_eq(ur_cm_disconnect(&s->id, w.now, &out), 0);
		handle(who, &out);
		break;
	case UR_CM_EV_TIMEWAIT_EXIT:
	case UR_CM_EV_UNREACHABLE:
	case UR_CM_EV_REJECTED:
		if (who == B)
			s->exists = false;
		break;
	case UR_CM_EV_SIDR_REQ_RECEIVED: {
		struct ur_cm_sidr_rep rep = {
		    .status = UR_CM_SIDR_SUCCESS, .qpn = 0x789, .qkey = 0x01234567};

		rep.service_id = s->id.rx.sidr_req.service_id;
		ck_assert_int_eq(ur_cm_sidr_reply(&s->id, w.now, &rep, &out), 0);
		handle(who, &out);
		s->exists = false;
		break;
	}
	default:
		break;
	}
}

static void handle(int who, struct ur_cm_out *out)
{
	enum ur_cm_event e = out->event;

	if (out->send)
		transmit(who, out->send);
	record(who, out);
	consume(who, e);
}

/* A MAD reaches B (or A): an endpoint, a listener, or nobody. */
static void deliver(int to, const uint8_t *bytes)
{
	struct side *s = &w.s[to];
	struct ur_cm_mad m, reply;
	struct ur_cm_out out;
	uint16_t attr;

	ck_assert_int_eq(ur_cm_mad_decode(&m, bytes, UR_MAD_LEN), 0);
	attr = m.hdr.attr_id;
	if (!s->exists && to == B && s->listening &&
	    (attr == UR_CM_ATTR_REQ || attr == UR_CM_ATTR_SIDR_REQ)) {
		ur_cm_init(&s->id, 0xb0000001u, 0x00000002fc9e2ac4ull, LIFETIME);
		s->exists = true;
	}
	if (!s->exists ||
	    (s->id.state == UR_CM_IDLE && attr != UR_CM_ATTR_REQ && attr != UR_CM_ATTR_SIDR_REQ)) {
		/* no endpoint: what the CM answers for nobody */
		if (ur_cm_answer_stray(&m, &reply))
			transmit(to, &reply);
		return;
	}
	ck_assert_int_eq(ur_cm_on_mad(&s->id, w.now, &m, &out), 0);
	handle(to, &out);
}

static bool connected(void)
{
	return w.s[A].id.state == UR_CM_ESTABLISHED && w.s[B].exists &&
	       w.s[B].id.state == UR_CM_ESTABLISHED;
}

/* Move messages, then time, until nothing is left to happen. */
static void run(void)
{
	for (int guard = 0; guard < 10000; guard++) {
		uint64_t next = UINT64_MAX;

		if (w.head != w.tail) {
			unsigned int i = w.head++ % QUEUE;

			w.now += 1000; /* 1 us on the wire */
			deliver(w.to[i], w.bytes[i]);
			continue;
		}
		if (w.rtu_by_traffic && w.s[A].id.state == UR_CM_ESTABLISHED && w.s[B].exists &&
		    w.s[B].id.state == UR_CM_REP_SENT) {
			struct ur_cm_out out;

			/* A's first SEND arrives at B's QP */
			ck_assert_int_eq(ur_cm_comm_established(&w.s[B].id, w.now, &out), 0);
			handle(B, &out);
			continue;
		}
		if (w.disconnect_when_up && !w.disconnected_once && connected()) {
			struct ur_cm_out out;

			w.disconnected_once = true;
			ck_assert_int_eq(ur_cm_disconnect(&w.s[A].id, w.now, &out), 0);
			handle(A, &out);
			continue;
		}
		for (int k = 0; k < 2; k++)
			if (w.s[k].exists && ur_cm_deadline(&w.s[k].id) < next)
				next = ur_cm_deadline(&w.s[k].id);
		if (w.s[B].mra_then_accept && w.s[B].accept_at && w.s[B].accept_at < next)
			next = w.s[B].accept_at;
		if (next == UINT64_MAX)
			return;
		w.now = next > w.now ? next : w.now;
		if (w.s[B].mra_then_accept && w.s[B].accept_at && w.now >= w.s[B].accept_at) {
			struct ur_cm_rep rep = {.local_qpn = 0x456, .starting_psn = 0x10};
			struct ur_cm_out out;

			w.s[B].accept_at = 0;
			ck_assert_int_eq(ur_cm_accept(&w.s[B].id, w.now, &rep, &out), 0);
			handle(B, &out);
			continue;
		}
		for (int k = 0; k < 2; k++) {
			if (w.s[k].exists && ur_cm_deadline(&w.s[k].id) <= w.now) {
				struct ur_cm_out out;

				ur_cm_on_timer(&w.s[k].id, w.now, &out);
				handle(k, &out);
			}
		}
	}
	ck_abort_msg("the exchange never settled");
}

static void connect_a(void)
{
	struct ur_cm_req req = {
	    .service_id = 0,
	    .local_qpn = 0x123,
	    .responder_resources = 16,
	    .initiator_depth = 16,
	    .remote_cm_response_timeout = RESP_TIMEOUT,
	    .starting_psn = 0xfffff0,
	    .local_cm_response_timeout = RESP_TIMEOUT,
	    .retry_count = 7,
	    .pkey = 0xffff,
	    .path_mtu = 5,
	    .rnr_retry_count = 7,
	    .max_cm_retries = MAX_RETRIES,
	};
	struct ur_cm_out out;

	req.service_id = ur_cm_ip_service_id(UR_CM_PS_TCP, 7174);
	ck_assert_int_eq(ur_cm_connect(&w.s[A].id, w.now, &req, &out), 0);
	ck_assert_ptr_nonnull(out.send);
	handle(A, &out);
}

/* The events of one side, as a string, for exact comparison. */
static const char *events(int who)
{
	static char buf[2][512];
	char *b = buf[who];

	b[0] = 0;
	for (unsigned int i = 0; i < w.s[who].nev; i++) {
		if (i)
			strcat(b, " ");
		strcat(b, ur_cm_event_name(w.s[who].ev[i]));
	}
	return b;
}

#define A_FULL "REP_RECEIVED ESTABLISHED DISCONNECTED TIMEWAIT_EXIT"
#define B_FULL "REQ_RECEIVED ESTABLISHED DREQ_RECEIVED TIMEWAIT_EXIT"

static uint64_t request_timeout(void)
{
	return 2 * ur_cm_time_ns(LIFETIME) + ur_cm_time_ns(RESP_TIMEOUT);
}

static void check_full(unsigned int req, unsigned int rep, unsigned int rtu, unsigned int dreq,
		       unsigned int drep)
{
	ck_assert_str_eq(events(A), A_FULL);
	ck_assert_str_eq(events(B), B_FULL);
	ck_assert_uint_eq(w.s[A].sent[UR_CM_ATTR_REQ], req);
	ck_assert_uint_eq(w.s[B].sent[UR_CM_ATTR_REP], rep);
	ck_assert_uint_eq(w.s[A].sent[UR_CM_ATTR_RTU], rtu);
	ck_assert_uint_eq(w.s[A].sent[UR_CM_ATTR_DREQ], dreq);
	ck_assert_uint_eq(w.s[B].sent[UR_CM_ATTR_DREP], drep);
	ck_assert_int_eq(w.s[A].id.state, UR_CM_IDLE);
	ck_assert_uint_eq(ur_cm_deadline(&w.s[A].id), UINT64_MAX);
}

START_TEST(test_clean)
{
	wire_init();
	connect_a();
	run();
	check_full(1, 1, 1, 1, 1);
	/* what each side learnt of the other */
	ck_assert_uint_eq(w.s[A].id.remote_qpn, 0x456);
	ck_assert_uint_eq(w.s[A].id.remote_comm_id, 0xb0000001u);
	ck_assert_uint_eq(w.s[A].id.rx.rep.starting_psn, 0xfffff5);
}
END_TEST

/* Each message lost once: resent on its timer (or answered again), no one notices. */
START_TEST(test_lost_req)
{
	wire_init();
	add_drop(A, UR_CM_ATTR_REQ, 1);
	connect_a();
	run();
	check_full(2, 1, 1, 1, 1);
}
END_TEST

START_TEST(test_lost_rep)
{
	wire_init();
	add_drop(B, UR_CM_ATTR_REP, 1);
	connect_a();
	run();
	/* both timers run: A resends its REQ (a duplicate B ignores), B its REP */
	ck_assert_uint_eq(w.s[B].sent[UR_CM_ATTR_REP], 2);
	ck_assert_str_eq(events(A), A_FULL);
	ck_assert_str_eq(events(B), B_FULL);
	ck_assert_uint_eq(w.s[A].sent[UR_CM_ATTR_RTU], 1);
}
END_TEST

START_TEST(test_lost_rtu)
{
	wire_init();
	add_drop(A, UR_CM_ATTR_RTU, 1);
	connect_a();
	run();
	/* B resends its REP; A, established, answers it with the RTU again */
	check_full(1, 2, 2, 1, 1);
}
END_TEST

/* A lost RTU is not waited for when data arrives first (12.9: communication established). */
START_TEST(test_lost_rtu_traffic)
{
	wire_init();
	add_drop(A, UR_CM_ATTR_RTU, 1);
	w.rtu_by_traffic = true;
	connect_a();
	run();
	check_full(1, 1, 1, 1, 1);
}
END_TEST

START_TEST(test_lost_dreq)
{
	wire_init();
	add_drop(A, UR_CM_ATTR_DREQ, 1);
	connect_a();
	run();
	check_full(1, 1, 1, 2, 1);
}
END_TEST

/* B's DREP lost: A's DREQ comes back after B's TimeWait; the CM answers for nobody. */
START_TEST(test_lost_drep)
{
	wire_init();
	add_drop(B, UR_CM_ATTR_DREP, 1);
	connect_a();
	run();
	check_full(1, 1, 1, 2, 2);
}
END_TEST

/* Every first message lost at once. */
START_TEST(test_lost_all_once)
{
	wire_init();
	add_drop(A, UR_CM_ATTR_REQ, 1);
	add_drop(B, UR_CM_ATTR_REP, 1);
	add_drop(A, UR_CM_ATTR_RTU, 1);
	add_drop(A, UR_CM_ATTR_DREQ, 1);
	connect_a();
	run();
	ck_assert_str_eq(events(A), A_FULL);
	ck_assert_str_eq(events(B), B_FULL);
}
END_TEST

/* Nobody answers: the REQ goes out 1 + max_cm_retries times, then UNREACHABLE. */
START_TEST(test_silent_peer)
{
	uint64_t start;

	wire_init();
	w.a_silent_peer = true;
	start = w.now;
	connect_a();
	run();
	ck_assert_str_eq(events(A), "UNREACHABLE");
	ck_assert_uint_eq(w.s[A].sent[UR_CM_ATTR_REQ], 1 + MAX_RETRIES);
	ck_assert_uint_eq(w.now - start, (1 + MAX_RETRIES) * request_timeout());
	ck_assert_int_eq(w.s[A].id.state, UR_CM_IDLE);
}
END_TEST

/* The peer goes silent after the REQ's answer: our DREQ is given up, TimeWait still runs. */
START_TEST(test_silent_on_disconnect)
{
	wire_init();
	for (unsigned int n = 1; n <= 1 + MAX_RETRIES; n++)
		add_drop(A, UR_CM_ATTR_DREQ, n);
	connect_a();
	run();
	ck_assert_str_eq(events(A), A_FULL);
	ck_assert_uint_eq(w.s[A].sent[UR_CM_ATTR_DREQ], 1 + MAX_RETRIES);
	ck_assert_str_eq(events(B), "REQ_RECEIVED ESTABLISHED");
}
END_TEST

/* Nobody listens: REJ with "invalid service ID" (8), as Linux answered in rxe-cm-reject.pcap. */
START_TEST(test_no_listener)
{
	wire_init();
	w.s[B].listening = false;
	connect_a();
	run();
	ck_assert_str_eq(events(A), "REJECTED");
	ck_assert_uint_eq(w.s[A].reason[0], UR_CM_REJ_INVALID_SERVICE_ID);
	ck_assert_uint_eq(w.s[A].sent[UR_CM_ATTR_REQ], 1);
	ck_assert_uint_eq(w.s[B].sent[UR_CM_ATTR_REJ], 1);
}
END_TEST

START_TEST(test_consumer_reject)
{
	wire_init();
	w.s[B].reject = true;
	connect_a();
	run();
	ck_assert_str_eq(events(A), "REJECTED");
	ck_assert_uint_eq(w.s[A].reason[0], UR_CM_REJ_CONSUMER_DEFINED);
	ck_assert_mem_eq(w.s[A].id.rx.rej.private_data, "no", 2);
	ck_assert_uint_eq(w.s[A].id.rx.rej.message_rejected, UR_CM_MSG_REQ);
	ck_assert_str_eq(events(B), "REQ_RECEIVED");
}
END_TEST

/* B asks for more time with an MRA: A waits instead of resending, then connects. */
START_TEST(test_mra)
{
	wire_init();
	w.s[B].mra_then_accept = true;
	w.s[B].accept_at = w.now + 3 * request_timeout(); /* past A's REQ timeout */
	connect_a();
	run();
	ck_assert_str_eq(events(A), A_FULL);
	ck_assert_uint_eq(w.s[A].sent[UR_CM_ATTR_REQ], 1);
	ck_assert_uint_eq(w.s[B].sent[UR_CM_ATTR_MRA], 1);
}
END_TEST

/* SIDR (12.11), with the first SIDR_REQ lost. */
START_TEST(test_sidr)
{
	struct ur_cm_sidr_req req = {.pkey = 0xffff};
	struct ur_cm_out out;

	wire_init();
	w.disconnect_when_up = false;
	add_drop(A, UR_CM_ATTR_SIDR_REQ, 1);
	req.service_id = ur_cm_ip_service_id(UR_CM_PS_UDP, 7174);
	ck_assert_int_eq(
	    ur_cm_sidr_request(&w.s[A].id, w.now, &req, RESP_TIMEOUT, MAX_RETRIES, &out), 0);
	handle(A, &out);
	run();
	ck_assert_str_eq(events(A), "SIDR_REP_RECEIVED");
	ck_assert_uint_eq(w.s[A].reason[0], UR_CM_SIDR_SUCCESS);
	ck_assert_uint_eq(w.s[A].id.rx.sidr_rep.qpn, 0x789);
	ck_assert_uint_eq(w.s[A].id.rx.sidr_rep.qkey, 0x01234567);
	ck_assert_uint_eq(w.s[A].sent[UR_CM_ATTR_SIDR_REQ], 2);
}
END_TEST

START_TEST(test_sidr_no_listener)
{
	struct ur_cm_sidr_req req = {.pkey = 0xffff};
	struct ur_cm_out out;

	wire_init();
	w.disconnect_when_up = false;
	w.s[B].listening = false;
	ck_assert_int_eq(
	    ur_cm_sidr_request(&w.s[A].id, w.now, &req, RESP_TIMEOUT, MAX_RETRIES, &out), 0);
	handle(A, &out);
	run();
	ck_assert_str_eq(events(A), "SIDR_REP_RECEIVED");
	ck_assert_uint_eq(w.s[A].reason[0], UR_CM_SIDR_UNSUPPORTED);
}
END_TEST

/* Calls in the wrong state change nothing; MADs for another endpoint are refused. */
START_TEST(test_misuse)
{
	struct ur_cm_id id;
	struct ur_cm_out out;
	struct ur_cm_rep rep = {0};
	struct ur_cm_mad m, reply;

	ur_cm_init(&id, 7, 1, LIFETIME);
	ck_assert_int_eq(ur_cm_accept(&id, 0, &rep, &out), -EINVAL);
	ck_assert_int_eq(ur_cm_establish(&id, 0, &out), -EINVAL);
	ck_assert_int_eq(ur_cm_disconnect(&id, 0, &out), -EINVAL);
	ck_assert_int_eq(ur_cm_reject(&id, 0, 28, NULL, 0, &out), -EINVAL);
	ck_assert_int_eq(ur_cm_mra(&id, 0, 10, &out), -EINVAL);
	ck_assert_int_eq(id.state, UR_CM_IDLE);
	ur_cm_mad_init(&m, UR_CM_ATTR_RTU, 1);
	m.rtu.remote_comm_id = 8;
	ck_assert_int_eq(ur_cm_on_mad(&id, 0, &m, &out), -EINVAL);
	ur_cm_mad_init(&m, UR_CM_ATTR_CLASS_PORT_INFO, 1);
	ck_assert_int_eq(ur_cm_on_mad(&id, 0, &m, &out), -EOPNOTSUPP);
	ck_assert_ptr_null(out.send);
	ur_cm_on_timer(&id, 5, &out);
	ck_assert_int_eq(out.event, UR_CM_EV_NONE);
	/* which endpoint a MAD is for, and who sent it */
	ur_cm_mad_init(&m, UR_CM_ATTR_REP, 1);
	m.rep.local_comm_id = 0x22;
	m.rep.remote_comm_id = 0x11;
	ck_assert_uint_eq(ur_cm_mad_dest_id(&m), 0x11);
	ck_assert_uint_eq(ur_cm_mad_src_id(&m), 0x22);
	/* a REP for nobody: REJ "invalid communication ID", naming both */
	ck_assert(ur_cm_answer_stray(&m, &reply));
	ck_assert_uint_eq(reply.hdr.attr_id, UR_CM_ATTR_REJ);
	ck_assert_uint_eq(reply.hdr.tid, 1);
	ck_assert_uint_eq(reply.rej.reason, UR_CM_REJ_INVALID_COMM_ID);
	ck_assert_uint_eq(reply.rej.message_rejected, UR_CM_MSG_REP);
	ck_assert_uint_eq(reply.rej.local_comm_id, 0x11);
	ck_assert_uint_eq(reply.rej.remote_comm_id, 0x22);
	ur_cm_mad_init(&m, UR_CM_ATTR_REQ, 2);
	m.req.local_comm_id = 0x33;
	ck_assert_uint_eq(ur_cm_mad_dest_id(&m), 0);
	ck_assert_uint_eq(ur_cm_mad_src_id(&m), 0x33);
	ur_cm_mad_init(&m, UR_CM_ATTR_SIDR_REP, 3);
	m.sidr_rep.request_id = 0x44;
	ck_assert_uint_eq(ur_cm_mad_dest_id(&m), 0x44);
	ck_assert(!ur_cm_answer_stray(&m, &reply)); /* nothing answers a stray answer */
	ur_cm_mad_init(&m, UR_CM_ATTR_RTU, 4);
	ck_assert(!ur_cm_answer_stray(&m, &reply));
	ck_assert_str_eq(ur_cm_state_name(UR_CM_MRA_REP_RCVD), "MRA_REP_RCVD");
	ck_assert_str_eq(ur_cm_event_name(UR_CM_EV_TIMEWAIT_EXIT), "TIMEWAIT_EXIT");
}
END_TEST

/* A MAD of random content under a CM header, often naming this endpoint. */
static void random_mad(const struct ur_cm_id *id, struct ur_cm_mad *m)
{
	static const uint16_t attrs[] = {UR_CM_ATTR_REQ,      UR_CM_ATTR_MRA,
					 UR_CM_ATTR_REJ,      UR_CM_ATTR_REP,
					 UR_CM_ATTR_RTU,      UR_CM_ATTR_DREQ,
					 UR_CM_ATTR_DREP,     UR_CM_ATTR_SIDR_REQ,
					 UR_CM_ATTR_SIDR_REP, UR_CM_ATTR_CLASS_PORT_INFO};
	uint8_t b[UR_MAD_LEN];
	uint16_t attr = attrs[rng() % (sizeof(attrs) / sizeof(attrs[0]))];

	for (size_t i = 0; i < sizeof(b); i++)
		b[i] = (uint8_t)rng();
	b[0] = 1;
	b[1] = UR_MGMT_CLASS_CM;
	b[2] = 2;
	b[16] = (uint8_t)(attr >> 8);
	b[17] = (uint8_t)attr;
	ck_assert_int_eq(ur_cm_mad_decode(m, b, sizeof(b)), 0);
	if (rng() % 4) {
		/* the IDs this endpoint would accept: ours as destination, the peer's as source */
		uint32_t dst = id->local_comm_id;
		uint32_t src = rng() % 4 ? id->remote_comm_id : (uint32_t)rng();

		switch (attr) {
		case UR_CM_ATTR_REQ:
			m->req.local_comm_id = src;
			break;
		case UR_CM_ATTR_MRA:
			m->mra.remote_comm_id = dst;
			m->mra.local_comm_id = src;
			m->mra.message_mraed = rng() % 2;
			break;
		case UR_CM_ATTR_REJ:
			m->rej.remote_comm_id = dst;
			break;
		case UR_CM_ATTR_REP:
			m->rep.remote_comm_id = dst;
			break;
		case UR_CM_ATTR_RTU:
			m->rtu.remote_comm_id = dst;
			break;
		case UR_CM_ATTR_DREQ:
			m->dreq.remote_comm_id = dst;
			m->dreq.local_comm_id = src;
			break;
		case UR_CM_ATTR_DREP:
			m->drep.remote_comm_id = dst;
			break;
		case UR_CM_ATTR_SIDR_REQ:
			m->sidr_req.request_id = src;
			break;
		case UR_CM_ATTR_SIDR_REP:
			m->sidr_rep.request_id = dst;
			break;
		}
	}
}

/*
 * Random inputs and calls in any order: calls succeed or say -EINVAL, what
 * goes out always encodes, a timer runs exactly in the states that wait.
 */
START_TEST(test_random_inputs)
{
	rng_state = 0x9e3779b97f4a7c15ull + (uint64_t)_i * 7919;
	for (int round = 0; round < 50; round++) {
		struct ur_cm_id id;
		uint64_t now = 1000;

		ur_cm_init(&id, 0x1000u + (uint32_t)round, 42, (uint8_t)(rng() % 20));
		for (int step = 0; step < 400; step++) {
			struct ur_cm_out out;
			struct ur_cm_mad m;
			struct ur_cm_req req = {.max_cm_retries = (uint8_t)(rng() % 16),
						.remote_cm_response_timeout =
						    (uint8_t)(rng() % 32)};
			struct ur_cm_rep rep = {.local_qpn = 5};
			struct ur_cm_sidr_req sreq = {.pkey = 0xffff};
			struct ur_cm_sidr_rep srep = {.qpn = 6};
			uint8_t buf[UR_MAD_LEN];
			int rc = 0;

			switch (rng() % 14) {
			case 0:
			case 1:
			case 2:
			case 3:
				random_mad(&id, &m);
				rc = ur_cm_on_mad(&id, now, &m, &out);
				break;
			case 4:
			case 5:
				now = id.deadline != UINT64_MAX && rng() % 2
					  ? id.deadline
					  : now + rng() % 1000000;
				ur_cm_on_timer(&id, now, &out);
				break;
			case 6:
				rc = ur_cm_connect(&id, now, &req, &out);
				break;
			case 7:
				rc = ur_cm_accept(&id, now, &rep, &out);
				break;
			case 8:
				rc = ur_cm_reject(&id, now, UR_CM_REJ_CONSUMER_DEFINED, "x", 1,
						  &out);
				break;
			case 9:
				rc = ur_cm_mra(&id, now, (uint8_t)(rng() % 32), &out);
				break;
			case 10:
				rc = ur_cm_establish(&id, now, &out);
				break;
			case 11:
				rc = rng() % 2 ? ur_cm_disconnect(&id, now, &out)
					       : ur_cm_comm_established(&id, now, &out);
				break;
			case 12:
				rc = ur_cm_sidr_request(&id, now, &sreq, 10, 3, &out);
				break;
			default:
				rc = ur_cm_sidr_reply(&id, now, &srep, &out);
				break;
			}
			require(rc == 0 || rc == -EINVAL || rc == -EOPNOTSUPP, "rc %d", rc);
			require(!out.send || out.send == &id.tx, "sends from elsewhere");
			if (out.send)
				require(ur_cm_mad_encode(out.send, buf, sizeof(buf)) == 0,
					"%s does not encode",
					ur_cm_attr_name(out.send->hdr.attr_id));
			require(id.state <= UR_CM_SIDR_REQ_RCVD, "state %d", id.state);
			switch (id.state) {
			case UR_CM_REQ_SENT:
			case UR_CM_MRA_REQ_RCVD:
			case UR_CM_REP_SENT:
			case UR_CM_MRA_REP_RCVD:
			case UR_CM_DREQ_SENT:
			case UR_CM_SIDR_REQ_SENT:
			case UR_CM_TIMEWAIT:
				require(id.deadline != UINT64_MAX, "%s without a timer",
					ur_cm_state_name(id.state));
				break;
			default:
				require(id.deadline == UINT64_MAX, "%s with a timer",
					ur_cm_state_name(id.state));
			}
		}
	}
}
END_TEST

static Suite *cm_suite(void)
{
	Suite *s = suite_create("cm");
	TCase *tc = tcase_create("cm");

	tcase_add_test(tc, test_clean);
	tcase_add_test(tc, test_lost_req);
	tcase_add_test(tc, test_lost_rep);
	tcase_add_test(tc, test_lost_rtu);
	tcase_add_test(tc, test_lost_rtu_traffic);
	tcase_add_test(tc, test_lost_dreq);
	tcase_add_test(tc, test_lost_drep);
	tcase_add_test(tc, test_lost_all_once);
	tcase_add_test(tc, test_silent_peer);
	tcase_add_test(tc, test_silent_on_disconnect);
	tcase_add_test(tc, test_no_listener);
	tcase_add_test(tc, test_consumer_reject);
	tcase_add_test(tc, test_mra);
	tcase_add_test(tc, test_sidr);
	tcase_add_test(tc, test_sidr_no_listener);
	tcase_add_test(tc, test_misuse);
	tcase_add_loop_test(tc, test_random_inputs, 0, 8);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(cm_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
