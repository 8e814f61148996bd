/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The CM endpoint in Linux's place. Each capture of test/data/cm is
 * replayed twice, once with uroce endpoints standing in for the client's
 * kernel CM and once for the server's: every MAD that side received is fed
 * to its endpoints, and every MAD it sent must come out of the call a
 * consumer would have made (connect, accept, RTU, disconnect, SIDR; the
 * stray answer for a port nobody listens on) byte for byte as Linux sent
 * it: transaction IDs, communication IDs, remote QPNs, reasons included.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm.h"
#include "cm_capture.h"
#include "cm_mad.h"
#include "cm_qp_attr.h"
#include "opcode.h"

#define MAX_EP 8

struct ep {
	bool used;
	struct ur_cm_id id;
	const struct cm_rec *pending; /* a DREQ that crossed ours on the wire */
};

struct side {
	uint32_t ip;
	struct ep eps[MAX_EP];
	const struct cm_rec *stray; /* a REQ nobody took */
	unsigned int sent, received;
};

static struct cm_capture cap;
static size_t cur_first, cur_end; /* the file's records */

static void decode(const struct cm_rec *r, struct ur_cm_mad *m)
{
	ck_assert_msg(ur_cm_mad_decode(m, r->mad, UR_MAD_LEN) == 0, "%s #%u", r->file, r->frame);
}

static struct ep *find(struct side *s, uint32_t local_id)
{
	for (int i = 0; i < MAX_EP; i++)
		if (s->eps[i].used && s->eps[i].id.local_comm_id == local_id)
			return &s->eps[i];
	return NULL;
}

static struct ep *add(struct side *s, uint32_t local_id, uint64_t own_tid)
{
	for (int i = 0; i < MAX_EP; i++) {
		if (!s->eps[i].used) {
			memset(&s->eps[i], 0, sizeof(s->eps[i]));
			s->eps[i].used = true;
			ur_cm_init(&s->eps[i].id, local_id, own_tid, 18);
			return &s->eps[i];
		}
	}
	ck_abort_msg("too many endpoints");
	return NULL;
}

/* The first MAD after record k that side `ip` sent with this attribute and comm IDs. */
static const struct cm_rec *later_sent(size_t k, uint32_t ip, uint16_t attr, uint32_t src_id,
				       uint32_t dest_id)
{
	for (size_t j = k + 1; j < cur_end; j++) {
		const struct cm_rec *r = &cap.recs[j];
		struct ur_cm_mad m;

		if (!cm_rec_is_mad(r) || r->src != ip)
			continue;
		decode(r, &m);
		if (m.hdr.attr_id == attr && (!src_id || ur_cm_mad_src_id(&m) == src_id) &&
		    (!dest_id || ur_cm_mad_dest_id(&m) == dest_id))
			return r;
	}
	return NULL;
}

/* The next MAD side `ip` sends for the connection its endpoint local_id holds. */
static const struct cm_rec *next_sent_for(size_t k, uint32_t ip, uint32_t local_id)
{
	for (size_t j = k + 1; j < cur_end; j++) {
		const struct cm_rec *r = &cap.recs[j];
		struct ur_cm_mad m;

		if (!cm_rec_is_mad(r) || r->src != ip)
			continue;
		decode(r, &m);
		if (ur_cm_mad_src_id(&m) == local_id)
			return r;
	}
	return NULL;
}

static void expect_sent(const struct cm_rec *r, int rc, const struct ur_cm_out *out)
{
	uint8_t ours[UR_MAD_LEN];

	ck_assert_msg(rc == 0, "%s #%u: the call failed: %d", r->file, r->frame, rc);
	ck_assert_msg(out->send, "%s #%u: nothing sent", r->file, r->frame);
	ck_assert_int_eq(ur_cm_mad_encode(out->send, ours, sizeof(ours)), 0);
	for (int i = 0; i < UR_MAD_LEN; i++)
		ck_assert_msg(ours[i] == r->mad[i], "%s #%u %s: byte %d is %#x, Linux sent %#x",
			      r->file, r->frame, ur_cm_attr_name(out->send->hdr.attr_id), i,
			      ours[i], r->mad[i]);
}

static void receive(struct side *s, struct ep *e, const struct cm_rec *r)
{
	static const enum ur_cm_event want[] = {
	    [UR_CM_ATTR_REQ] = UR_CM_EV_REQ_RECEIVED,
	    [UR_CM_ATTR_REP] = UR_CM_EV_REP_RECEIVED,
	    [UR_CM_ATTR_RTU] = UR_CM_EV_ESTABLISHED,
	    [UR_CM_ATTR_REJ] = UR_CM_EV_REJECTED,
	    [UR_CM_ATTR_DREQ] = UR_CM_EV_DREQ_RECEIVED,
	    [UR_CM_ATTR_SIDR_REQ] = UR_CM_EV_SIDR_REQ_RECEIVED,
	    [UR_CM_ATTR_SIDR_REP] = UR_CM_EV_SIDR_REP_RECEIVED,
	};
	struct ur_cm_mad m;
	struct ur_cm_out out;
	int rc;

	decode(r, &m);
	rc = ur_cm_on_mad(&e->id, r->frame * 1000000ull, &m, &out);
	ck_assert_msg(rc == 0, "%s #%u: refused: %d", r->file, r->frame, rc);
	ck_assert_msg(!out.send, "%s #%u: answered a message Linux did not answer", r->file,
		      r->frame);
	if (m.hdr.attr_id == UR_CM_ATTR_DREP)
		/* after crossing DREQs the DREP finds us in DREQ_RCVD or TimeWait */
		ck_assert(out.event == UR_CM_EV_DISCONNECTED || out.event == UR_CM_EV_NONE);
	else
		ck_assert_msg(out.event == want[m.hdr.attr_id], "%s #%u: event %s", r->file,
			      r->frame, ur_cm_event_name(out.event));
	s->received++;
}

static void on_received(struct side *s, size_t k)
{
	const struct cm_rec *r = &cap.recs[k];
	struct ur_cm_mad m;
	struct ep *e;

	decode(r, &m);
	if (m.hdr.attr_id == UR_CM_ATTR_REQ) {
		/* a listener makes an endpoint with the comm ID its REP will carry */
		const struct cm_rec *rep =
		    later_sent(k, s->ip, UR_CM_ATTR_REP, 0, m.req.local_comm_id);
		struct ur_cm_mad a, dreq;
		const struct cm_rec *d;

		if (!rep) {
			s->stray = r;
			return;
		}
		decode(rep, &a);
		d = later_sent(k, s->ip, UR_CM_ATTR_DREQ, a.rep.local_comm_id, 0);
		if (d)
			decode(d, &dreq);
		e = add(s, a.rep.local_comm_id, d ? dreq.hdr.tid : 0);
	} else if (m.hdr.attr_id == UR_CM_ATTR_SIDR_REQ) {
		e = add(s, 0x51d0000u + (uint32_t)k, 0);
	} else {
		e = find(s, ur_cm_mad_dest_id(&m));
		ck_assert_msg(e, "%s #%u: for no endpoint", r->file, r->frame);
		if (m.hdr.attr_id == UR_CM_ATTR_DREQ) {
			const struct cm_rec *next = next_sent_for(k, s->ip, e->id.local_comm_id);
			struct ur_cm_mad n;

			if (next) {
				decode(next, &n);
				if (n.hdr.attr_id == UR_CM_ATTR_DREQ) {
					/* both sides disconnected at once: ours left first */
					e->pending = r;
					return;
				}
			}
		}
	}
	receive(s, e, r);
}

static void on_sent(struct side *s, const struct cm_rec *r)
{
	uint64_t now = r->frame * 1000000ull;
	struct ur_cm_mad m;
	struct ur_cm_out out;
	struct ep *e = NULL;
	int rc;

	decode(r, &m);
	switch (m.hdr.attr_id) {
	case UR_CM_ATTR_REQ:
		e = add(s, m.req.local_comm_id, m.hdr.tid);
		rc = ur_cm_connect(&e->id, now, &m.req, &out);
		break;
	case UR_CM_ATTR_SIDR_REQ:
		e = add(s, m.sidr_req.request_id, m.hdr.tid);
		rc = ur_cm_sidr_request(&e->id, now, &m.sidr_req, 20, 15, &out);
		break;
	case UR_CM_ATTR_SIDR_REP:
		for (int i = 0; i < MAX_EP && !e; i++)
			if (s->eps[i].used && s->eps[i].id.state == UR_CM_SIDR_REQ_RCVD &&
			    s->eps[i].id.remote_comm_id == m.sidr_rep.request_id)
				e = &s->eps[i];
		ck_assert_msg(e, "%s #%u: no SIDR_REQ to answer", r->file, r->frame);
		rc = ur_cm_sidr_reply(&e->id, now, &m.sidr_rep, &out);
		break;
	case UR_CM_ATTR_REJ:
		/* nobody listened: the CM's own answer */
		ck_assert_msg(s->stray, "%s #%u: REJ of no REQ", r->file, r->frame);
		{
			static struct ur_cm_mad reply;
			struct ur_cm_mad req;

			decode(s->stray, &req);
			memset(&out, 0, sizeof(out));
			rc = ur_cm_answer_stray(&req, &reply) ? 0 : -1;
			out.send = &reply;
		}
		break;
	default:
		e = find(s, ur_cm_mad_src_id(&m));
		ck_assert_msg(e, "%s #%u: from no endpoint", r->file, r->frame);
		if (m.hdr.attr_id == UR_CM_ATTR_REP)
			rc = ur_cm_accept(&e->id, now, &m.rep, &out);
		else if (m.hdr.attr_id == UR_CM_ATTR_RTU)
			rc = ur_cm_establish(&e->id, now, &out);
		else
			rc = ur_cm_disconnect(&e->id, now, &out); /* DREQ or DREP */
		break;
	}
	expect_sent(r, rc, &out);
	s->sent++;
	if (e && e->pending) {
		const struct cm_rec *p = e->pending;

		e->pending = NULL;
		receive(s, e, p);
	}
}

/* The PSN of the first request frame from src to QP dqpn in the current file, or -1. */
static long first_request_psn(uint32_t src, uint32_t dqpn)
{
	for (size_t k = cur_first; k < cur_end; k++) {
		const struct cm_rec *r = &cap.recs[k];

		if (r->src != src || r->dqpn != dqpn)
			continue;
		if (r->kind == UR_KIND_SEND || r->kind == UR_KIND_WRITE ||
		    r->kind == UR_KIND_READ_REQ || r->kind == UR_KIND_ATOMIC)
			return r->psn;
	}
	return -1;
}

static void select_file(const char *file)
{
	cur_first = cur_end = 0;
	for (size_t k = 0; k < cap.nrecs; k++) {
		if (strcmp(cap.recs[k].file, file))
			continue;
		if (!cur_end)
			cur_first = k;
		cur_end = k + 1;
	}
	ck_assert_msg(cur_end, "%s: not in the test data", file);
}

/* Replay one capture from side `ip`; returns the MADs it sent. */
static unsigned int replay(const char *file, uint32_t ip)
{
	static struct side s;

	memset(&s, 0, sizeof(s));
	s.ip = ip;
	select_file(file);
	for (size_t k = cur_first; k < cur_end; k++) {
		const struct cm_rec *r = &cap.recs[k];

		if (!cm_rec_is_mad(r))
			continue;
		if (r->src == ip)
			on_sent(&s, r);
		else if (r->dst == ip)
			on_received(&s, k);
	}
	/* every connection over, every SIDR answered */
	for (int i = 0; i < MAX_EP; i++) {
		enum ur_cm_state st = s.eps[i].id.state;

		if (s.eps[i].used)
			ck_assert_msg(st == UR_CM_TIMEWAIT || st == UR_CM_IDLE, "%s: ended in %s",
				      file, ur_cm_state_name(st));
		ck_assert_ptr_null(s.eps[i].pending);
	}
	return s.sent;
}

/*
 * The QP attributes each side derives from a connection's REQ and REP
 * agree with each other and with the traffic that followed: each sends
 * from its sq_psn to its dest_qpn, which is the other's rq_psn and QP; the
 * READs one may have outstanding fit what the other takes; the local ACK
 * timeout is the one Linux put in its REQ (rxe's ACK delay 15, rdma_cm's
 * packet lifetime 18 over RoCE: 19).
 */
START_TEST(test_qp_attrs)
{
	static const char *const files[] = {"rxe-cm-rping.pcap", "rxe-cm-ucmatose.pcap",
					    "rxe-cm-perftest-R.pcap"};
	unsigned int conns = 0, psn_checks = 0;

	ck_assert_msg(!cap.error[0], "%s", cap.error);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		select_file(files[i]);
		for (size_t k = cur_first; k < cur_end; k++) {
			const struct cm_rec *r = &cap.recs[k], *rp;
			struct ur_cm_mad req, rep;
			struct ur_cm_qp_attr a, p;
			long psn;

			if (!cm_rec_is_mad(r))
				continue;
			decode(r, &req);
			if (req.hdr.attr_id != UR_CM_ATTR_REQ)
				continue;
			rp = later_sent(k, r->dst, UR_CM_ATTR_REP, 0, req.req.local_comm_id);
			ck_assert_ptr_nonnull(rp);
			decode(rp, &rep);
			ur_cm_qp_attr_active(&req.req, &rep.rep, 18, &a);
			ur_cm_qp_attr_passive(&req.req, &rep.rep, &p);
			conns++;
			ck_assert_uint_eq(a.sq_psn, p.rq_psn);
			ck_assert_uint_eq(p.sq_psn, a.rq_psn);
			ck_assert_uint_eq(a.dest_qpn, rep.rep.local_qpn);
			ck_assert_uint_eq(p.dest_qpn, req.req.local_qpn);
			ck_assert_uint_le(a.max_rd_atomic, p.max_dest_rd_atomic);
			ck_assert_uint_le(p.max_rd_atomic, a.max_dest_rd_atomic);
			ck_assert_uint_eq(a.path_mtu, p.path_mtu);
			ck_assert_uint_eq(a.retry_cnt, p.retry_cnt);
			ck_assert_uint_eq(ur_cm_ack_timeout(15, 18),
					  req.req.primary.local_ack_timeout);
			ck_assert_uint_eq(a.timeout, req.req.primary.local_ack_timeout);
			ck_assert_uint_eq(p.timeout, req.req.primary.local_ack_timeout);
			psn = first_request_psn(r->src, a.dest_qpn);
			if (psn >= 0) {
				ck_assert_uint_eq(psn, a.sq_psn);
				psn_checks++;
			}
			psn = first_request_psn(r->dst, p.dest_qpn);
			if (psn >= 0) {
				ck_assert_uint_eq(psn, p.sq_psn);
				psn_checks++;
			}
		}
	}
	ck_assert_uint_eq(conns, 5);
	ck_assert_uint_ge(psn_checks, 7);
}
END_TEST

/* cm_ack_timeout(): the larger exponent, plus one when the other is close. */
START_TEST(test_ack_timeout)
{
	ck_assert_uint_eq(ur_cm_ack_timeout(15, 18), 19);
	ck_assert_uint_eq(ur_cm_ack_timeout(15, 14), 16);
	ck_assert_uint_eq(ur_cm_ack_timeout(0, 0), 2);
	ck_assert_uint_eq(ur_cm_ack_timeout(20, 5), 20);
	ck_assert_uint_eq(ur_cm_ack_timeout(20, 18), 21);
	ck_assert_uint_eq(ur_cm_ack_timeout(31, 31), 31);
}
END_TEST

static const struct {
	const char *file;
	unsigned int client_sends, server_sends;
} captures[] = {
    {"rxe-cm-rping.pcap", 3, 2},    /* REQ RTU DREQ / REP DREP */
    {"rxe-cm-ucmatose.pcap", 6, 4}, /* 2 x (REQ RTU DREP) / 2 x (REP DREQ) */
    {"rxe-cm-udaddy.pcap", 2, 2},   /* SIDR_REQ / SIDR_REP */
    {"rxe-cm-perftest-R.pcap", 7, 5}, {"rxe-cm-reject.pcap", 1, 1}, /* REQ / REJ 8 */
};

START_TEST(test_as_client)
{
	ck_assert_msg(!cap.error[0], "%s", cap.error);
	ck_assert_uint_eq(replay(captures[_i].file, CM_CLIENT_IP), captures[_i].client_sends);
}
END_TEST

START_TEST(test_as_server)
{
	ck_assert_msg(!cap.error[0], "%s", cap.error);
	ck_assert_uint_eq(replay(captures[_i].file, CM_SERVER_IP), captures[_i].server_sends);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cm_linux");
	TCase *tc = tcase_create("cm_linux");
	int n = (int)(sizeof(captures) / sizeof(captures[0]));
	SRunner *sr;
	int failed;

	cm_capture_load(&cap, cm_capture_dir());
	tcase_add_loop_test(tc, test_as_client, 0, n);
	tcase_add_loop_test(tc, test_as_server, 0, n);
	tcase_add_test(tc, test_qp_attrs);
	tcase_add_test(tc, test_ack_timeout);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	cm_capture_free(&cap);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
