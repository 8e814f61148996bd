/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The CM MAD codec against Linux rdma_cm traffic between two Soft-RoCE
 * hosts ($UROCE_TESTDATA_CM/ *.pcap): every MAD on QP 1 decodes, encodes
 * back to the same 256 bytes, and says what the programs' output and the
 * data frames around it say (QPNs, PSNs, ports, addresses, the reject
 * reason). Then every field of every table in isolation, and bad input.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_capture.h"
#include "cm_ip.h"
#include "cm_mad.h"
#include "frame.h"
#include "opcode.h"

#define CLIENT_IP CM_CLIENT_IP
#define SERVER_IP CM_SERVER_IP

static struct cm_capture cap;

static void assert_corpus(void)
{
	ck_assert_msg(!cap.error[0], "%s", cap.error);
	ck_assert_msg(cap.nmads > 0, "no MADs in the test data");
}

static void decode(const struct cm_rec *r, struct ur_cm_mad *m)
{
	int rc = ur_cm_mad_decode(m, r->mad, UR_MAD_LEN);

	ck_assert_msg(rc == 0, "%s #%u: decode %d", r->file, r->frame, rc);
}

/* The n-th MAD of a file with this attribute, from 0. */
static const struct cm_rec *nth_mad(const char *file, uint16_t attr, unsigned int n)
{
	for (size_t k = 0; k < cap.nrecs; k++) {
		const struct cm_rec *r = &cap.recs[k];

		if (strcmp(r->file, file) || !cm_rec_is_mad(r))
			continue;
		if ((r->mad[16] << 8 | r->mad[17]) == attr && n-- == 0)
			return r;
	}
	return NULL;
}

START_TEST(test_every_mad_round_trips)
{
	uint8_t out[UR_MAD_LEN];

	assert_corpus();
	for (size_t k = 0; k < cap.nrecs; k++) {
		const struct cm_rec *r = &cap.recs[k];
		struct ur_cm_mad m;

		if (!cm_rec_is_mad(r))
			continue;
		/* a GSI datagram, 13.5.1: UD SEND Only, from QP 1, the GSI Q_Key */
		ck_assert_msg(r->opcode == UR_OP_UD_SEND_ONLY, "%s #%u", r->file, r->frame);
		ck_assert_uint_eq(r->qkey, UR_GSI_QKEY);
		ck_assert_uint_eq(r->sqpn, UR_GSI_QPN);
		ck_assert_uint_eq(r->len, UR_MAD_LEN);
		decode(r, &m);
		ck_assert_uint_eq(m.hdr.base_version, 1);
		ck_assert_uint_eq(m.hdr.mgmt_class, UR_MGMT_CLASS_CM);
		ck_assert_uint_eq(m.hdr.class_version, 2);
		ck_assert_uint_eq(m.hdr.method, UR_MAD_METHOD_SEND);
		ck_assert_uint_eq(m.hdr.status, 0);
		ck_assert_ptr_nonnull(ur_cm_attr_name(m.hdr.attr_id));
		memset(out, 0xa5, sizeof(out));
		ck_assert_int_eq(ur_cm_mad_encode(&m, out, sizeof(out)), 0);
		ck_assert_msg(!memcmp(out, r->mad, UR_MAD_LEN), "%s #%u %s: round trip differs",
			      r->file, r->frame, ur_cm_attr_name(m.hdr.attr_id));
	}
}
END_TEST

/* The messages in order, as tshark lists them for each capture. */
START_TEST(test_message_sequences)
{
	static const struct {
		const char *file;
		const char *seq;
	} want[] = {
	    {"rxe-cm-perftest-R.pcap", "REQ REP RTU REQ REP RTU DREQ DREP DREQ DREQ DREP DREP"},
	    {"rxe-cm-reject.pcap", "REQ REJ"},
	    {"rxe-cm-rping.pcap", "REQ REP RTU DREQ DREP"},
	    {"rxe-cm-ucmatose.pcap", "REQ REQ REP RTU REP RTU DREQ DREQ DREP DREP"},
	    {"rxe-cm-udaddy.pcap", "SIDR_REQ SIDR_REQ SIDR_REP SIDR_REP"},
	};

	assert_corpus();
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		char seq[256] = "";

		for (size_t k = 0; k < cap.nrecs; k++) {
			struct ur_cm_mad m;

			if (strcmp(cap.recs[k].file, want[i].file) || !cm_rec_is_mad(&cap.recs[k]))
				continue;
			decode(&cap.recs[k], &m);
			if (seq[0])
				strcat(seq, " ");
			strcat(seq, ur_cm_attr_name(m.hdr.attr_id));
		}
		ck_assert_msg(!strcmp(seq, want[i].seq), "%s: %s", want[i].file, seq);
	}
}
END_TEST

/* The PSN of the first request frame from src to QP dqpn, or -1. */
static long first_request_psn(const char *file, uint32_t src, uint32_t dqpn)
{
	for (size_t k = 0; k < cap.nrecs; k++) {
		const struct cm_rec *r = &cap.recs[k];

		if (strcmp(r->file, file) || r->src != src || r->dqpn != dqpn)
			continue;
		if (r->kind == UR_KIND_SEND || r->kind == UR_KIND_WRITE ||
		    r->kind == UR_KIND_READ_REQ || r->kind == UR_KIND_ATOMIC)
			return r->psn;
	}
	return -1;
}

static void check_path(const struct cm_rec *r, const struct ur_cm_path *p)
{
	static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	struct ur_gid l, rm;

	memcpy(l.raw, p->local_gid, 16);
	memcpy(rm.raw, p->remote_gid, 16);
	ck_assert(!memcmp(p->local_gid, v4mapped, 12));
	ck_assert(!memcmp(p->remote_gid, v4mapped, 12));
	ck_assert_uint_eq(cm_capture_ip4(&l), r->src);
	ck_assert_uint_eq(cm_capture_ip4(&rm), r->dst);
	/* RoCE has no LIDs: the permissive LID, 0xffff (A16/A17) */
	ck_assert_uint_eq(p->local_lid, 0xffff);
	ck_assert_uint_eq(p->remote_lid, 0xffff);
	ck_assert_uint_le(p->local_ack_timeout, 31);
	ck_assert_uint_eq(p->hop_limit, 64);
}

static void check_ip_hdr(const struct cm_rec *r, const uint8_t *pdata, size_t len, uint16_t ps,
			 uint64_t sid, uint16_t port)
{
	static const uint8_t zero[12];
	struct ur_cm_ip_hdr h;
	uint16_t got_ps, got_port;
	uint8_t again[UR_CM_IP_HDR_LEN];
	struct ur_gid s, d;

	ck_assert_int_eq(ur_cm_ip_hdr_decode(&h, pdata, len), 0);
	ck_assert_uint_eq(h.version, UR_CM_IP_VERSION);
	ck_assert_uint_eq(h.ip_version, 4);
	ck_assert_uint_ne(h.src_port, 0);
	ck_assert(!memcmp(h.src_ip, zero, 12));
	ck_assert(!memcmp(h.dst_ip, zero, 12));
	memcpy(s.raw, h.src_ip, 16);
	memcpy(d.raw, h.dst_ip, 16);
	ck_assert_uint_eq(cm_capture_ip4(&s), r->src);
	ck_assert_uint_eq(cm_capture_ip4(&d), r->dst);
	ck_assert_int_eq(ur_cm_ip_hdr_encode(&h, again, sizeof(again)), 0);
	ck_assert(!memcmp(again, pdata, sizeof(again)));
	ck_assert(ur_cm_ip_service_parse(sid, &got_ps, &got_port));
	ck_assert_uint_eq(got_ps, ps);
	ck_assert_uint_eq(got_port, port);
	ck_assert_uint_eq(ur_cm_ip_service_id(ps, port), sid);
}

/*
 * Each REQ with its answer: REP (or REJ) names the REQ's communication ID,
 * the RTU both, all three share the transaction ID; the first request each
 * side sends starts at the PSN its REQ or REP announced, to the QPN the
 * other announced.
 */
static unsigned int check_connections(const char *file, uint16_t port, unsigned int nconn)
{
	unsigned int n, psn_checks = 0;

	for (n = 0;; n++) {
		const struct cm_rec *rq = nth_mad(file, UR_CM_ATTR_REQ, n), *rp = NULL, *rt = NULL;
		struct ur_cm_mad req, rep, rtu;
		long psn;

		if (!rq)
			break;
		decode(rq, &req);
		ck_assert_uint_eq(rq->src, CLIENT_IP);
		check_path(rq, &req.req.primary);
		check_ip_hdr(rq, req.req.private_data, UR_CM_REQ_PDATA, UR_CM_PS_TCP,
			     req.req.service_id, port);
		ck_assert_uint_eq(req.req.transport_service_type, UR_CM_TS_RC);
		ck_assert_uint_eq(req.req.pkey, 0xffff);
		ck_assert_uint_ge(req.req.path_mtu, 1);
		ck_assert_uint_le(req.req.path_mtu, 5);
		ck_assert_uint_ne(req.req.local_comm_id, 0);
		ck_assert_uint_ne(req.req.local_qpn, 0);
		for (unsigned int j = 0; (rp = nth_mad(file, UR_CM_ATTR_REP, j)); j++) {
			decode(rp, &rep);
			if (rep.rep.remote_comm_id == req.req.local_comm_id)
				break;
		}
		ck_assert_msg(rp, "%s: no REP for REQ #%u", file, rq->frame);
		ck_assert_uint_eq(rep.hdr.tid, req.hdr.tid);
		ck_assert_uint_eq(rp->src, SERVER_IP);
		ck_assert_uint_ne(rep.rep.local_comm_id, 0);
		/* each side's resources against the other's depth, 12.7.29 */
		ck_assert_uint_le(rep.rep.initiator_depth, req.req.responder_resources);
		for (unsigned int j = 0; (rt = nth_mad(file, UR_CM_ATTR_RTU, j)); j++) {
			decode(rt, &rtu);
			if (rtu.rtu.local_comm_id == req.req.local_comm_id)
				break;
		}
		ck_assert_msg(rt, "%s: no RTU for REQ #%u", file, rq->frame);
		ck_assert_uint_eq(rtu.rtu.remote_comm_id, rep.rep.local_comm_id);
		ck_assert_uint_eq(rtu.hdr.tid, req.hdr.tid);
		ck_assert_uint_lt(rq->frame, rp->frame);
		ck_assert_uint_lt(rp->frame, rt->frame);
		/*
		 * rxe takes a connection's UDP source port from the REQ's
		 * primary flow label, as ur_roce_udp_sport() does: the frames
		 * of the connection confirm where the flow label sits.
		 */
		ck_assert_uint_ne(req.req.primary.flow_label, 0);
		for (size_t k = 0; k < cap.nrecs; k++)
			if (!strcmp(cap.recs[k].file, file) &&
			    cap.recs[k].dqpn == rep.rep.local_qpn && cap.recs[k].src == CLIENT_IP)
				ck_assert_uint_eq(
				    cap.recs[k].udp_sport,
				    ur_roce_udp_sport(req.req.primary.flow_label, 0, 0));

		/*
		 * A Starting PSN is where the receiver of the message starts
		 * sending (and so what its sender's receive queue expects):
		 * Linux's cm_rep_handler() takes the active side's sq_psn
		 * from the REP, the passive side's from the REQ.
		 */
		psn = first_request_psn(file, CLIENT_IP, rep.rep.local_qpn);
		if (psn >= 0) {
			ck_assert_uint_eq(psn, rep.rep.starting_psn);
			psn_checks++;
		}
		psn = first_request_psn(file, SERVER_IP, req.req.local_qpn);
		if (psn >= 0) {
			ck_assert_uint_eq(psn, req.req.starting_psn);
			psn_checks++;
		}
	}
	ck_assert_uint_eq(n, nconn);
	return psn_checks;
}

/*
 * Each DREQ names the receiver's QP and both IDs as a REQ/REP pair set
 * them; its DREP swaps the IDs and keeps the transaction ID.
 */
static void check_disconnects(const char *file, unsigned int ndreq)
{
	unsigned int n;

	for (n = 0;; n++) {
		const struct cm_rec *dq = nth_mad(file, UR_CM_ATTR_DREQ, n), *dp = NULL;
		struct ur_cm_mad dreq, drep, req, rep;
		bool found = false;

		if (!dq)
			break;
		decode(dq, &dreq);
		for (unsigned int j = 0; !found && nth_mad(file, UR_CM_ATTR_REQ, j); j++) {
			decode(nth_mad(file, UR_CM_ATTR_REQ, j), &req);
			for (unsigned int i = 0; !found && nth_mad(file, UR_CM_ATTR_REP, i); i++) {
				decode(nth_mad(file, UR_CM_ATTR_REP, i), &rep);
				if (rep.rep.remote_comm_id != req.req.local_comm_id)
					continue;
				if (dq->src == CLIENT_IP) {
					found = dreq.dreq.local_comm_id == req.req.local_comm_id &&
						dreq.dreq.remote_comm_id == rep.rep.local_comm_id;
					if (found)
						ck_assert_uint_eq(dreq.dreq.remote_qpn,
								  rep.rep.local_qpn);
				} else {
					found = dreq.dreq.local_comm_id == rep.rep.local_comm_id &&
						dreq.dreq.remote_comm_id == req.req.local_comm_id;
					if (found)
						ck_assert_uint_eq(dreq.dreq.remote_qpn,
								  req.req.local_qpn);
				}
			}
		}
		ck_assert_msg(found, "%s #%u: DREQ of no connection", file, dq->frame);
		for (unsigned int j = 0; (dp = nth_mad(file, UR_CM_ATTR_DREP, j)); j++) {
			decode(dp, &drep);
			if (drep.hdr.tid == dreq.hdr.tid && dp->src == dq->dst)
				break;
		}
		ck_assert_msg(dp, "%s #%u: DREQ without DREP", file, dq->frame);
		ck_assert_uint_eq(drep.drep.local_comm_id, dreq.dreq.remote_comm_id);
		ck_assert_uint_eq(drep.drep.remote_comm_id, dreq.dreq.local_comm_id);
	}
	ck_assert_uint_eq(n, ndreq);
}

START_TEST(test_rping)
{
	assert_corpus();
	/* rping's default port; both sides send requests (SEND, READ, WRITE) */
	ck_assert_uint_eq(check_connections("rxe-cm-rping.pcap", 7174, 1), 2);
	check_disconnects("rxe-cm-rping.pcap", 1);
}
END_TEST

START_TEST(test_ucmatose)
{
	assert_corpus();
	/* ucmatose's default port; both connections carry SENDs both ways */
	ck_assert_uint_eq(check_connections("rxe-cm-ucmatose.pcap", 7471, 2), 4);
	check_disconnects("rxe-cm-ucmatose.pcap", 2);
}
END_TEST

/* Parse "<side> address: LID 0000 QPN 0x0017 PSN 0x80de6e" from perftest's output. */
static void perftest_addr(const char *side, uint32_t *qpn, uint32_t *psn)
{
	char path[4096], line[512], key[64];
	FILE *f;
	bool found = false;

	snprintf(path, sizeof(path), "%s/rxe-cm-perftest-R.client.txt", cm_capture_dir());
	f = fopen(path, "r");
	ck_assert_msg(f, "%s: %s", path, strerror(errno));
	snprintf(key, sizeof(key), " %s address: LID %%*x QPN %%x PSN %%x", side);
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, key, qpn, psn) == 2;
	fclose(f);
	ck_assert_msg(found, "%s: no %s address line", path, side);
}

/*
 * perftest prints both QPNs: they are what the REQ and REP of its second
 * connection carried (the first is its own parameter exchange). The PSNs
 * it prints are its own draws, which rdma_cm replaces: the WRITEs start at
 * the REP's Starting PSN instead.
 */
START_TEST(test_perftest)
{
	const char *file = "rxe-cm-perftest-R.pcap";
	uint32_t lqpn, lpsn, rqpn, rpsn;
	const struct cm_rec *r;
	struct ur_cm_mad req, rep;

	assert_corpus();
	ck_assert_uint_ge(check_connections(file, 18515, 2), 1); /* perftest's default port */
	check_disconnects(file, 3);
	perftest_addr("local", &lqpn, &lpsn);
	perftest_addr("remote", &rqpn, &rpsn);
	r = nth_mad(file, UR_CM_ATTR_REQ, 1);
	ck_assert_ptr_nonnull(r);
	decode(r, &req);
	r = nth_mad(file, UR_CM_ATTR_REP, 1);
	ck_assert_ptr_nonnull(r);
	decode(r, &rep);
	ck_assert_uint_eq(req.req.local_qpn, lqpn);
	ck_assert_uint_eq(rep.rep.local_qpn, rqpn);
	ck_assert_uint_ne(req.req.starting_psn, rpsn);
	ck_assert_uint_ne(rep.rep.starting_psn, lpsn);
	ck_assert_int_eq(first_request_psn(file, CLIENT_IP, rqpn), (long)rep.rep.starting_psn);
}
END_TEST

/*
 * Nobody listens on port 9999: the passive side's CM answers the REQ with
 * REJ reason 8, invalid service ID (12.6.7, Linux cm_match_req()), which
 * rping's client prints as "RDMA_CM_EVENT_REJECTED, error 8".
 */
START_TEST(test_reject)
{
	const char *file = "rxe-cm-reject.pcap";
	const struct cm_rec *rq, *rj;
	struct ur_cm_mad req, rej;
	char path[4096], line[256];
	int reason = -1;
	FILE *f;

	assert_corpus();
	rq = nth_mad(file, UR_CM_ATTR_REQ, 0);
	rj = nth_mad(file, UR_CM_ATTR_REJ, 0);
	ck_assert_ptr_nonnull(rq);
	ck_assert_ptr_nonnull(rj);
	decode(rq, &req);
	decode(rj, &rej);
	check_ip_hdr(rq, req.req.private_data, UR_CM_REQ_PDATA, UR_CM_PS_TCP, req.req.service_id,
		     9999);
	ck_assert_uint_eq(rej.hdr.tid, req.hdr.tid);
	ck_assert_uint_eq(rej.rej.remote_comm_id, req.req.local_comm_id);
	ck_assert_uint_eq(rej.rej.local_comm_id, 0); /* no connection was made */
	ck_assert_uint_eq(rej.rej.message_rejected, UR_CM_MSG_REQ);
	ck_assert_uint_eq(rej.rej.reason, UR_CM_REJ_INVALID_SERVICE_ID);
	ck_assert_uint_eq(rej.rej.ari_length, 0);
	ck_assert_str_eq(ur_cm_rej_reason_name(rej.rej.reason), "INVALID_SERVICE_ID");

	snprintf(path, sizeof(path), "%s/rxe-cm-reject.client.txt", cm_capture_dir());
	f = fopen(path, "r");
	ck_assert_msg(f, "%s: %s", path, strerror(errno));
	while (reason < 0 && fgets(line, sizeof(line), f))
		if (sscanf(line, "cma event RDMA_CM_EVENT_REJECTED, error %d", &reason) != 1)
			reason = -1;
	fclose(f);
	ck_assert_int_eq(reason, rej.rej.reason);
}
END_TEST

/*
 * udaddy resolves UD services with SIDR (12.11): the SIDR_REQ names the
 * UDP port space and carries the IP header, the SIDR_REP answers the same
 * request ID with a QPN and Q_Key, and the client's datagrams then go to
 * that QPN with that Q_Key.
 */
START_TEST(test_udaddy)
{
	const char *file = "rxe-cm-udaddy.pcap";
	const struct cm_rec *rq, *rp;
	struct ur_cm_mad req, rep;
	unsigned int n, used;

	assert_corpus();
	for (n = 0; (rq = nth_mad(file, UR_CM_ATTR_SIDR_REQ, n)); n++) {
		decode(rq, &req);
		check_ip_hdr(rq, req.sidr_req.private_data, UR_CM_SIDR_REQ_PDATA, UR_CM_PS_UDP,
			     req.sidr_req.service_id, 7174);
		ck_assert_uint_eq(req.sidr_req.pkey, 0xffff);
		for (unsigned int j = 0; (rp = nth_mad(file, UR_CM_ATTR_SIDR_REP, j)); j++) {
			decode(rp, &rep);
			if (rep.sidr_rep.request_id == req.sidr_req.request_id)
				break;
		}
		ck_assert_ptr_nonnull(rp);
		ck_assert_uint_eq(rep.hdr.tid, req.hdr.tid);
		ck_assert_uint_eq(rep.sidr_rep.status, UR_CM_SIDR_SUCCESS);
		ck_assert_uint_eq(rep.sidr_rep.service_id, req.sidr_req.service_id);
		ck_assert_uint_ne(rep.sidr_rep.qpn, 0);
		used = 0;
		for (size_t k = 0; k < cap.nrecs; k++) {
			const struct cm_rec *d = &cap.recs[k];

			if (strcmp(d->file, file) || d->dqpn != rep.sidr_rep.qpn)
				continue;
			ck_assert_uint_eq(d->qkey, rep.sidr_rep.qkey);
			used++;
		}
		ck_assert_msg(used > 0, "no datagram to QPN %#x", rep.sidr_rep.qpn);
	}
	ck_assert_uint_eq(n, 2);
}
END_TEST

/*
 * Every table: fields inside the message, none overlapping, and each
 * field alone at its maximum sets exactly its own bits and reads back;
 * at zero among neighbours all ones, it clears exactly its own bits.
 */
static void mark(uint8_t *map, const struct ur_cm_field *f, size_t limit)
{
	unsigned bits = f->width ? f->width : f->size * 8u;
	size_t first = f->byte * 8u + f->bit;

	ck_assert_msg(first + bits <= limit * 8, "%s past the end", f->name);
	ck_assert_msg(!f->width || f->bit + f->width <= 64, "%s spans too far", f->name);
	for (size_t b = first; b < first + bits; b++) {
		ck_assert_msg(!map[b], "%s overlaps another field", f->name);
		map[b] = 1;
	}
}

static void set_field(uint8_t *s, const struct ur_cm_field *f, bool ones)
{
	uint64_t v = ones ? (f->width >= 64 ? ~0ull : (1ull << f->width) - 1) : 0;

	if (!f->width) {
		memset(s + f->member, ones ? 0xff : 0, f->size);
		return;
	}
	switch (f->size) {
	case 1:
		s[f->member] = (uint8_t)v;
		break;
	case 2: {
		uint16_t x = (uint16_t)v;
		memcpy(s + f->member, &x, 2);
		break;
	}
	case 4: {
		uint32_t x = (uint32_t)v;
		memcpy(s + f->member, &x, 4);
		break;
	}
	default:
		memcpy(s + f->member, &v, 8);
	}
}

static size_t field_bit(const struct ur_cm_field *f, size_t b)
{
	return UR_MAD_HDR_LEN * 8 + f->byte * 8u + f->bit + b;
}

static bool wire_bit(const uint8_t *w, size_t b)
{
	return w[b / 8] & (0x80 >> (b % 8));
}

static const uint16_t attrs[] = {
#define ATTR_ID(name, id, member) id,
    UR_CM_ATTRS(ATTR_ID)
#undef ATTR_ID
};

START_TEST(test_field_isolation)
{
	uint16_t attr = attrs[_i];
	const struct ur_cm_field *fs;
	size_t n = ur_cm_fields(attr, &fs), msg_end = 0;
	uint8_t map[UR_MAD_DATA_LEN * 8] = {0};

	ck_assert_uint_gt(n, 0);
	for (size_t i = 0; i < n; i++) {
		size_t end =
		    fs[i].byte + (fs[i].width ? (fs[i].bit + fs[i].width + 7u) / 8u : fs[i].size);

		mark(map, &fs[i], UR_MAD_DATA_LEN);
		msg_end = end > msg_end ? end : msg_end;
	}
	/* every CM message fills the MAD (its private data runs to the end) */
	if (attr != UR_CM_ATTR_CLASS_PORT_INFO)
		ck_assert_uint_eq(msg_end, UR_MAD_DATA_LEN);

	for (size_t i = 0; i < n; i++) {
		const struct ur_cm_field *f = &fs[i];
		unsigned bits = f->width ? f->width : f->size * 8u;
		struct ur_cm_mad m, back;
		uint8_t w[UR_MAD_LEN];
		uint8_t *msg;

		for (int ones = 1; ones >= 0; ones--) {
			ur_cm_mad_init(&m, attr, 0x0123456789abcdefull);
			msg = (uint8_t *)&m.req; /* every message starts there */
			for (size_t j = 0; j < n && !ones; j++)
				set_field(msg, &fs[j], true);
			set_field(msg, f, ones);
			ck_assert_int_eq(ur_cm_mad_encode(&m, w, sizeof(w)), 0);
			for (size_t b = UR_MAD_HDR_LEN * 8; b < UR_MAD_LEN * 8; b++) {
				size_t rel = b - UR_MAD_HDR_LEN * 8;
				bool mine = b >= field_bit(f, 0) && b < field_bit(f, bits);
				bool want = ones ? mine : (map[rel] && !mine);

				ck_assert_msg(wire_bit(w, b) == want, "%s %s=%s: bit %zu",
					      ur_cm_attr_name(attr), f->name, ones ? "max" : "0",
					      rel);
			}
			ck_assert_int_eq(ur_cm_mad_decode(&back, w, sizeof(w)), 0);
			ck_assert_msg(!memcmp(&back, &m, sizeof(m)), "%s %s: decode differs",
				      ur_cm_attr_name(attr), f->name);
		}
	}
}
END_TEST

/* The header alone: TID at both ends, method with the response bit. */
START_TEST(test_header)
{
	struct ur_cm_mad m, back;
	uint8_t w[UR_MAD_LEN];
	const struct ur_cm_field *fs;
	uint8_t map[UR_MAD_HDR_LEN * 8] = {0};
	size_t n = ur_mad_hdr_fields(&fs);

	for (size_t i = 0; i < n; i++)
		mark(map, &fs[i], UR_MAD_HDR_LEN);
	for (size_t b = 0; b < sizeof(map); b++)
		ck_assert(map[b]); /* the header has no unnamed bits */
	ur_cm_mad_init(&m, UR_CM_ATTR_CLASS_PORT_INFO, ~0ull);
	m.hdr.method = UR_MAD_METHOD_GET_RESP;
	m.hdr.status = 0xffff;
	m.hdr.attr_mod = 0xffffffffu;
	ck_assert_int_eq(ur_cm_mad_encode(&m, w, sizeof(w)), 0);
	ck_assert_uint_eq(w[0], 1);
	ck_assert_uint_eq(w[1], 0x07);
	ck_assert_uint_eq(w[2], 2);
	ck_assert_uint_eq(w[3], 0x81);
	ck_assert_uint_eq(w[16], 0x00);
	ck_assert_uint_eq(w[17], 0x01);
	for (int i = 8; i < 16; i++)
		ck_assert_uint_eq(w[i], 0xff);
	ck_assert_int_eq(ur_cm_mad_decode(&back, w, sizeof(w)), 0);
	ck_assert(!memcmp(&back, &m, sizeof(m)));
}
END_TEST

START_TEST(test_malformed)
{
	const struct cm_rec *r = NULL;
	struct ur_cm_mad m;
	uint8_t w[UR_MAD_LEN + 8];

	assert_corpus();
	for (size_t k = 0; k < cap.nrecs && !r; k++)
		if (cm_rec_is_mad(&cap.recs[k]))
			r = &cap.recs[k];
	ck_assert_ptr_nonnull(r);

	/* short: every length below 256 (ASan builds catch any read past it) */
	for (size_t len = 0; len < UR_MAD_LEN; len++) {
		uint8_t *b = malloc(len ? len : 1);

		memcpy(b, r->mad, len);
		ck_assert_int_eq(ur_cm_mad_decode(&m, b, len), -EMSGSIZE);
		free(b);
	}
	/* longer: the rest is ignored */
	memcpy(w, r->mad, UR_MAD_LEN);
	memset(w + UR_MAD_LEN, 0xee, 8);
	ck_assert_int_eq(ur_cm_mad_decode(&m, w, sizeof(w)), 0);

	memcpy(w, r->mad, UR_MAD_LEN);
	w[0] = 2; /* base version */
	ck_assert_int_eq(ur_cm_mad_decode(&m, w, UR_MAD_LEN), -EPROTO);
	memcpy(w, r->mad, UR_MAD_LEN);
	w[1] = 0x03; /* Subnet Administration, not CM */
	ck_assert_int_eq(ur_cm_mad_decode(&m, w, UR_MAD_LEN), -EPROTO);
	memcpy(w, r->mad, UR_MAD_LEN);
	w[2] = 1; /* class version */
	ck_assert_int_eq(ur_cm_mad_decode(&m, w, UR_MAD_LEN), -EPROTO);

	memcpy(w, r->mad, UR_MAD_LEN);
	w[16] = 0x00;
	w[17] = 0x19; /* LAP: not decoded */
	ck_assert_int_eq(ur_cm_mad_decode(&m, w, UR_MAD_LEN), -EOPNOTSUPP);
	ck_assert_uint_eq(m.hdr.attr_id, 0x19); /* the header is there to answer */
	w[16] = 0xff;
	w[17] = 0xff;
	ck_assert_int_eq(ur_cm_mad_decode(&m, w, UR_MAD_LEN), -EOPNOTSUPP);
	ck_assert_ptr_null(ur_cm_attr_name(0xffff));

	/* the encoder refuses what it cannot place */
	ur_cm_mad_init(&m, 0x19, 1);
	ck_assert_int_eq(ur_cm_mad_encode(&m, w, sizeof(w)), -EOPNOTSUPP);
	ur_cm_mad_init(&m, UR_CM_ATTR_REQ, 1);
	ck_assert_int_eq(ur_cm_mad_encode(&m, w, UR_MAD_LEN - 1), -EMSGSIZE);
	m.req.local_qpn = 1u << 24;
	ck_assert_int_eq(ur_cm_mad_encode(&m, w, sizeof(w)), -ERANGE);
	m.req.local_qpn = 0xffffff;
	m.req.retry_count = 8;
	ck_assert_int_eq(ur_cm_mad_encode(&m, w, sizeof(w)), -ERANGE);
	m.req.retry_count = 7;
	ck_assert_int_eq(ur_cm_mad_encode(&m, w, sizeof(w)), 0);
}
END_TEST

/* Random bytes under a CM header: every attribute decodes without a fault. */
START_TEST(test_random_bytes)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	uint8_t w[UR_MAD_LEN];
	struct ur_cm_mad m;

	for (int round = 0; round < 2000; round++) {
		for (size_t i = 0; i < sizeof(w); i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			w[i] = (uint8_t)x;
		}
		w[0] = 1;
		w[1] = 0x07;
		w[2] = 2;
		w[16] = 0;
		w[17] = (uint8_t)attrs[round % (sizeof(attrs) / sizeof(attrs[0]))];
		ck_assert_int_eq(ur_cm_mad_decode(&m, w, sizeof(w)), 0);
		/* what decoded encodes, and decodes to the same */
		{
			struct ur_cm_mad again;
			uint8_t out[UR_MAD_LEN];

			ck_assert_int_eq(ur_cm_mad_encode(&m, out, sizeof(out)), 0);
			ck_assert_int_eq(ur_cm_mad_decode(&again, out, sizeof(out)), 0);
			ck_assert(!memcmp(&again, &m, sizeof(m)));
		}
	}
}
END_TEST

START_TEST(test_service_id)
{
	uint16_t ps, port;

	/* cma.c: RDMA_IB_IP_PS_TCP 0x0000000001060000 + port */
	ck_assert_uint_eq(ur_cm_ip_service_id(UR_CM_PS_TCP, 9999), 0x000000000106270full);
	ck_assert_uint_eq(ur_cm_ip_service_id(UR_CM_PS_UDP, 0), 0x0000000001110000ull);
	ck_assert_uint_eq(ur_cm_ip_service_id(UR_CM_PS_IB, 0xffff), 0x00000000013fffffull);
	ck_assert(ur_cm_ip_service_parse(0x00000000013fffffull, &ps, &port));
	ck_assert_uint_eq(ps, UR_CM_PS_IB);
	ck_assert_uint_eq(port, 0xffff);
	ck_assert(!ur_cm_ip_service_parse(0x0000000002060000ull, &ps, &port));
	ck_assert(!ur_cm_ip_service_parse(0x1000000001060000ull, &ps, &port));
	/* rdma_connect() leaves 56 bytes to its caller, a UD resolve 180 */
	ck_assert_int_eq(UR_CM_IP_REQ_PDATA_MAX, 56);
	ck_assert_int_eq(UR_CM_IP_SIDR_REQ_PDATA_MAX, 180);
}
END_TEST

START_TEST(test_ip_hdr_errors)
{
	struct ur_cm_ip_hdr h = {.ip_version = 6, .src_port = 0xabcd};
	uint8_t b[UR_CM_IP_HDR_LEN];

	memset(h.src_ip, 0x11, 16);
	memset(h.dst_ip, 0x22, 16);
	ck_assert_int_eq(ur_cm_ip_hdr_encode(&h, b, sizeof(b) - 1), -EMSGSIZE);
	ck_assert_int_eq(ur_cm_ip_hdr_encode(&h, b, sizeof(b)), 0);
	ck_assert_uint_eq(b[1], 0x60);
	ck_assert_uint_eq(b[2], 0xab);
	ck_assert_uint_eq(b[35], 0x22);
	ck_assert_int_eq(ur_cm_ip_hdr_decode(&h, b, sizeof(b) - 1), -EMSGSIZE);
	ck_assert_int_eq(ur_cm_ip_hdr_decode(&h, b, sizeof(b)), 0);
	b[0] = 0x10; /* major version 1 */
	ck_assert_int_eq(ur_cm_ip_hdr_decode(&h, b, sizeof(b)), -EPROTO);
	b[0] = 0;
	b[1] = 0x50;
	ck_assert_int_eq(ur_cm_ip_hdr_decode(&h, b, sizeof(b)), -EPROTO);
	h.ip_version = 5;
	ck_assert_int_eq(ur_cm_ip_hdr_encode(&h, b, sizeof(b)), -EINVAL);
}
END_TEST

START_TEST(test_names)
{
	ck_assert_str_eq(ur_cm_attr_name(UR_CM_ATTR_REQ), "REQ");
	ck_assert_str_eq(ur_cm_attr_name(UR_CM_ATTR_SIDR_REP), "SIDR_REP");
	ck_assert_str_eq(ur_cm_rej_reason_name(UR_CM_REJ_CONSUMER_DEFINED), "CONSUMER_DEFINED");
	ck_assert_str_eq(ur_cm_rej_reason_name(UR_CM_REJ_STALE_CONN), "STALE_CONN");
	ck_assert_ptr_null(ur_cm_rej_reason_name(0));
	ck_assert_ptr_null(ur_cm_rej_reason_name(34));
}
END_TEST

static Suite *cm_mad_suite(void)
{
	Suite *s = suite_create("cm_mad");
	TCase *tc = tcase_create("cm_mad");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_every_mad_round_trips);
	tcase_add_test(tc, test_message_sequences);
	tcase_add_test(tc, test_rping);
	tcase_add_test(tc, test_ucmatose);
	tcase_add_test(tc, test_perftest);
	tcase_add_test(tc, test_reject);
	tcase_add_test(tc, test_udaddy);
	tcase_add_loop_test(tc, test_field_isolation, 0, (int)(sizeof(attrs) / sizeof(attrs[0])));
	tcase_add_test(tc, test_header);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_random_bytes);
	tcase_add_test(tc, test_service_id);
	tcase_add_test(tc, test_ip_hdr_errors);
	tcase_add_test(tc, test_names);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	cm_capture_load(&cap, cm_capture_dir());
	printf("cm_mad: %zu RoCEv2 frames, %zu MADs%s%s\n", cap.nrecs, cap.nmads,
	       cap.error[0] ? "; load error: " : "", cap.error);
	sr = srunner_create(cm_mad_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	cm_capture_free(&cap);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
