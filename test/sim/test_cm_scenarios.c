/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The CM over the engine in the simulator: two hosts, each with a UD QP
 * (Q_Key 0x80010000, standing in for QP 1) carrying the MADs of a CM
 * endpoint, encoded into UD SENDs, framed with their ICRC, lost on the
 * simulated link as each scenario says, received into posted buffers and
 * decoded. Each lost REQ, REP, RTU and DREQ still ends connected, then
 * disconnected and out of TimeWait on both sides, with exact message and
 * drop counts; a silent peer ends UNREACHABLE after the REQ's retries.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "cm.h"
#include "cm_ip.h"
#include "cm_mad.h"
#include "fixture.h"

#define LIFETIME 10	/* 4.2 ms */
#define RESP_TIMEOUT 14 /* 67 ms */
#define MAX_RETRIES 3
#define SLOT 512 /* a receive: the 40-byte GRH, then the MAD */
#define NRECV 32
#define TX_OFF (NRECV * SLOT)
#define NTX 64
#define MAX_ATTR 0x20

struct host {
	struct fx_side *side;
	struct ur_cm_id id;
	bool exists;
	bool listening;
	char events[256];
	unsigned int sent[MAX_ATTR];
	unsigned int tx_next;
};

static struct fx f;
static struct host h[2]; /* 0 connects, 1 listens */
static uint64_t last_send_ps;
static bool disconnect_when_up, disconnected;

static uint64_t now_ns(void)
{
	return sim_now(f.s) / SIM_PS_PER_NS;
}

static void send_mad(struct host *x, const struct ur_cm_mad *m)
{
	uint32_t off = TX_OFF + (x->tx_next++ % NTX) * UR_MAD_LEN;

	ck_assert_uint_lt(m->hdr.attr_id, MAX_ATTR);
	x->sent[m->hdr.attr_id]++;
	ck_assert_int_eq(ur_cm_mad_encode(m, x->side->buf + off, UR_MAD_LEN), 0);
	fx_post_send(&f, x->side, 0x5e0d, UR_WR_SEND, off, UR_MAD_LEN, 0, 0, 0, 0);
	last_send_ps = sim_now(f.s);
}

static void handle(struct host *x, const struct ur_cm_out *out);

static void consume(struct host *x, enum ur_cm_event e)
{
	struct ur_cm_out out;

	switch (e) {
	case UR_CM_EV_REQ_RECEIVED: {
		struct ur_cm_rep rep = {.local_qpn = ur_qp_num(x->side->qp),
					.starting_psn = 0xfffff5,
					.responder_resources = 16,
					.initiator_depth = 16,
					.rnr_retry_count = 7};

		ck_assert_int_eq(ur_cm_accept(&x->id, now_ns(), &rep, &out), 0);
		handle(x, &out);
		break;
	}
	case UR_CM_EV_REP_RECEIVED:
		ck_assert_int_eq(ur_cm_establish(&x->id, now_ns(), &out), 0);
		handle(x, &out);
		break;
	case UR_CM_EV_DREQ_RECEIVED:
		ck_assert_int_eq(ur_cm_disconnect(&x->id, now_ns(), &out), 0);
		handle(x, &out);
		break;
	case UR_CM_EV_TIMEWAIT_EXIT:
	case UR_CM_EV_REJECTED:
	case UR_CM_EV_UNREACHABLE:
		if (x == &h[1])
			x->exists = false;
		break;
	default:
		break;
	}
}

static void handle(struct host *x, const struct ur_cm_out *out)
{
	enum ur_cm_event e = out->event;

	if (out->send)
		send_mad(x, out->send);
	if (e != UR_CM_EV_NONE) {
		if (x->events[0])
			strcat(x->events, " ");
		strcat(x->events, ur_cm_event_name(e));
	}
	consume(x, e);
}

static void deliver(struct host *x, const uint8_t *bytes, uint32_t len)
{
	struct ur_cm_mad m, reply;
	struct ur_cm_out out;
	uint16_t attr;

	ck_assert_int_eq(ur_cm_mad_decode(&m, bytes, len), 0);
	attr = m.hdr.attr_id;
	if (!x->exists && x->listening && attr == UR_CM_ATTR_REQ) {
		ur_cm_init(&x->id, 0xb0000001u, 0x00000002fc9e2ac4ull, LIFETIME);
		x->exists = true;
	}
	if (!x->exists || (x->id.state == UR_CM_IDLE && attr != UR_CM_ATTR_REQ)) {
		if (ur_cm_answer_stray(&m, &reply))
			send_mad(x, &reply);
		return;
	}
	ck_assert_int_eq(ur_cm_on_mad(&x->id, now_ns(), &m, &out), 0);
	handle(x, &out);
}

/* Received MADs to their endpoints; send completions dropped. */
static int poll_host(struct host *x)
{
	struct ur_cqe c[16];
	int n = ur_cq_poll(&x->side->cq, c, 16);

	for (int i = 0; i < n; i++) {
		ck_assert_uint_eq(c[i].status, UR_WC_SUCCESS);
		if (c[i].opcode != UR_WC_RECV)
			continue;
		ck_assert_uint_eq(c[i].byte_len, UR_GRH_LEN + UR_MAD_LEN);
		deliver(x, x->side->buf + c[i].wr_id * SLOT + UR_GRH_LEN, UR_MAD_LEN);
		fx_post_recv(&f, x->side, c[i].wr_id, (uint32_t)c[i].wr_id * SLOT, SLOT);
	}
	return n;
}

static bool connected(void)
{
	return h[0].id.state == UR_CM_ESTABLISHED && h[1].exists &&
	       h[1].id.state == UR_CM_ESTABLISHED;
}

static void world(const struct sim_impair *up_a, const struct sim_impair *up_b)
{
	struct sim_link_cfg link;
	struct sim_qp_params qp;

	fx_default_link(&link);
	sim_qp_params_default(&qp);
	qp.qkey = UR_GSI_QKEY;
	fx_init_service(&f, UR_QPT_UD, 22, &link, &qp, UR_ACCESS_LOCAL_WRITE);
	memset(h, 0, sizeof(h));
	h[0].side = &f.a;
	h[1].side = &f.b;
	h[1].listening = true;
	h[0].exists = true;
	ur_cm_init(&h[0].id, 0xa0000001u, 0x0000000224f27379ull, LIFETIME);
	for (int k = 0; k < 2; k++)
		for (uint32_t i = 0; i < NRECV; i++)
			fx_post_recv(&f, h[k].side, i, i * SLOT, SLOT);
	if (up_a)
		sim_node_set_impair(f.a.node, up_a, NULL);
	if (up_b)
		sim_node_set_impair(f.b.node, up_b, NULL);
	disconnect_when_up = true;
	disconnected = false;
	last_send_ps = 0;
}

/* Frames, CM timers and the consumers' answers, until nothing is left to do. */
static void run(void)
{
	for (int guard = 0; guard < 1000000; guard++) {
		uint64_t next = UINT64_MAX, now;

		if (poll_host(&h[0]) + poll_host(&h[1]))
			continue;
		if (disconnect_when_up && !disconnected && connected()) {
			struct ur_cm_out out;

			disconnected = true;
			ck_assert_int_eq(ur_cm_disconnect(&h[0].id, now_ns(), &out), 0);
			handle(&h[0], &out);
			continue;
		}
		for (int k = 0; k < 2; k++)
			if (h[k].exists && ur_cm_deadline(&h[k].id) < next)
				next = ur_cm_deadline(&h[k].id);
		now = sim_now(f.s);
		if (now - last_send_ps < 100 * SIM_PS_PER_US) {
			/* frames may be on their way: small steps */
			sim_run(f.s, now + 10 * SIM_PS_PER_US);
			continue;
		}
		if (next == UINT64_MAX)
			return;
		if (next * SIM_PS_PER_NS > now)
			sim_run(f.s, next * SIM_PS_PER_NS);
		for (int k = 0; k < 2; k++) {
			if (h[k].exists && ur_cm_deadline(&h[k].id) <= now_ns()) {
				struct ur_cm_out out;

				ur_cm_on_timer(&h[k].id, now_ns(), &out);
				handle(&h[k], &out);
			}
		}
	}
	ck_abort_msg("the exchange never settled");
}

static void connect_a(void)
{
	struct ur_cm_req req = {
	    .local_qpn = ur_qp_num(f.a.qp),
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
	ck_assert_int_eq(ur_cm_connect(&h[0].id, now_ns(), &req, &out), 0);
	handle(&h[0], &out);
}

#define A_FULL "REP_RECEIVED ESTABLISHED DISCONNECTED TIMEWAIT_EXIT"
#define B_FULL "REQ_RECEIVED ESTABLISHED DREQ_RECEIVED TIMEWAIT_EXIT"

/* nth: which of a host's frames its uplink loses (0: none). */
static const struct {
	const char *name;
	int host;
	uint64_t nth;
	unsigned int req, rep, rtu, dreq, drep;
} cases[] = {
    {"none", 0, 0, 1, 1, 1, 1, 1},
    {"REQ", 0, 1, 2, 1, 1, 1, 1},
    {"REP", 1, 1, 2, 2, 1, 1, 1}, /* A's REQ timer and B's REP timer both run */
    {"RTU", 0, 2, 1, 2, 2, 1, 1}, /* B resends the REP, A answers with the RTU */
    {"DREQ", 0, 3, 1, 1, 1, 2, 1},
    {"DREP", 1, 2, 1, 1, 1, 2, 2}, /* answered again by the CM for nobody */
};

START_TEST(test_lost_message)
{
	struct sim_impair lose = {.drop_nth = cases[_i].nth};

	world(cases[_i].nth && cases[_i].host == 0 ? &lose : NULL,
	      cases[_i].nth && cases[_i].host == 1 ? &lose : NULL);
	connect_a();
	run();
	ck_assert_msg(!strcmp(h[0].events, A_FULL), "lost %s: A saw %s", cases[_i].name,
		      h[0].events);
	ck_assert_msg(!strcmp(h[1].events, B_FULL), "lost %s: B saw %s", cases[_i].name,
		      h[1].events);
	ck_assert_uint_eq(h[0].sent[UR_CM_ATTR_REQ], cases[_i].req);
	ck_assert_uint_eq(h[1].sent[UR_CM_ATTR_REP], cases[_i].rep);
	ck_assert_uint_eq(h[0].sent[UR_CM_ATTR_RTU], cases[_i].rtu);
	ck_assert_uint_eq(h[0].sent[UR_CM_ATTR_DREQ], cases[_i].dreq);
	ck_assert_uint_eq(h[1].sent[UR_CM_ATTR_DREP], cases[_i].drep);
	ck_assert_uint_eq(sim_node_up_stats(f.a.node).dropped + sim_node_up_stats(f.b.node).dropped,
			  cases[_i].nth ? 1 : 0);
	/* what the active side learnt crossed the engine intact */
	ck_assert_uint_eq(h[0].id.remote_qpn, ur_qp_num(f.b.qp));
	ck_assert_uint_eq(h[0].id.rx.rep.starting_psn, 0xfffff5);
	fx_fini(&f);
}
END_TEST

/* Nobody answers: 1 + Max CM Retries REQs, each a timeout apart, then UNREACHABLE. */
START_TEST(test_silent_peer)
{
	struct sim_impair dead = {.drop_all = true};
	uint64_t start, timeout = 2 * ur_cm_time_ns(LIFETIME) + ur_cm_time_ns(RESP_TIMEOUT);

	world(&dead, NULL);
	start = now_ns();
	connect_a();
	run();
	ck_assert_str_eq(h[0].events, "UNREACHABLE");
	ck_assert_uint_eq(h[0].sent[UR_CM_ATTR_REQ], 1 + MAX_RETRIES);
	ck_assert_uint_eq(sim_node_up_stats(f.a.node).dropped, 1 + MAX_RETRIES);
	ck_assert_uint_ge(now_ns() - start, (1 + MAX_RETRIES) * timeout);
	ck_assert_uint_lt(now_ns() - start, (1 + MAX_RETRIES) * timeout + 1000000);
	ck_assert_str_eq(h[1].events, "");
	fx_fini(&f);
}
END_TEST

/* A closed port: the far CM's REJ "invalid service ID" comes back through the engine. */
START_TEST(test_closed_port)
{
	world(NULL, NULL);
	h[1].listening = false;
	connect_a();
	run();
	ck_assert_str_eq(h[0].events, "REJECTED");
	ck_assert_uint_eq(h[0].id.rx.rej.reason, UR_CM_REJ_INVALID_SERVICE_ID);
	ck_assert_uint_eq(h[0].sent[UR_CM_ATTR_REQ], 1);
	fx_fini(&f);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cm_scenarios");
	TCase *tc = tcase_create("cm_scenarios");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_lost_message, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_test(tc, test_silent_peer);
	tcase_add_test(tc, test_closed_port);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
