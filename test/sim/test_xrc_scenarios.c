/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * XRC in the simulator (IBTA annex A14): two XRC initiators on one host
 * send to XRC SRQs behind XRC targets on another, each request naming its
 * SRQ in the XRCETH. Receives land in the SRQ named and complete on that
 * SRQ's CQ with the target QP's number; RDMA WRITEs are checked against
 * the named SRQ's PD; an SRQ of another XRC domain, or none, is refused
 * with a NAK invalid request.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "qp.h" /* white box: the target's SRQ of the moment */
#include "fixture.h"

#define BUF (1u << 20)
#define WRITE_AT 0x80000u

struct xw {
	struct sim *s;
	struct sim_node *ini, *tgt;
	struct ur_cq ini_cq, cq1, cq2, cq3;
	uint8_t *ibuf, *tbuf;
	struct ur_mr *imr, *tmr;
	/* in XRC domain 1 and PD 1: s1, s2; domain 2: s3; domain 1 but PD 2: s4 */
	struct ur_srq *s1, *s2, *s3, *s4;
	struct ur_qp *i1, *i2; /* initiators on `ini` */
	struct ur_qp *t1, *t2; /* their targets on `tgt`, both of domain 1 */
};

static struct ur_srq *make_srq(struct xw *w, uint32_t pd, uint32_t xrcd, struct ur_cq *cq)
{
	struct ur_srq *srq;

	ck_assert_int_eq(ur_srq_create(sim_node_dev(w->tgt), 64, 2, pd, NULL, &srq), 0);
	ur_srq_set_xrc(srq, xrcd, cq);
	return srq;
}

static struct ur_qp *make_qp(struct sim_node *n, enum ur_qp_type type, uint32_t qpn,
			     struct ur_cq *scq)
{
	struct ur_qp_init qi = {0};
	struct ur_qp *qp;

	qi.type = type;
	qi.qpn = qpn;
	if (type == UR_QPT_XRC_SEND) {
		qi.pd = 1;
		qi.send_cq = scq;
		qi.max_send_wr = 64;
		qi.max_send_sge = 2;
	} else {
		qi.xrcd = 1;
	}
	ck_assert_int_eq(ur_qp_create(sim_node_dev(n), &qi, &qp), 0);
	return qp;
}

static void xw_init_mode(struct xw *w, uint64_t seed, double loss, enum ur_retx_mode mode)
{
	const uint32_t all = UR_ACCESS_LOCAL_WRITE | UR_ACCESS_REMOTE_WRITE;
	struct sim_link_cfg link;
	struct sim_qp_params p;
	struct ur_dev_config cfg;

	memset(w, 0, sizeof(*w));
	ur_dev_config_default(&cfg);
	cfg.retx_mode = mode;
	fx_default_link(&link);
	link.impair.loss = loss;
	w->s = sim_create(seed);
	w->ini = sim_add_node(w->s, &cfg, &link, &link, NULL);
	w->tgt = sim_add_node(w->s, &cfg, &link, &link, NULL);
	ur_cq_init(&w->ini_cq, 256, NULL);
	ur_cq_init(&w->cq1, 256, NULL);
	ur_cq_init(&w->cq2, 256, NULL);
	ur_cq_init(&w->cq3, 256, NULL);
	w->ibuf = sim_alloc(w->s, BUF);
	w->tbuf = sim_alloc(w->s, BUF);
	for (uint32_t i = 0; i < BUF; i++)
		w->ibuf[i] = (uint8_t)(i * 7 + 3);
	ur_dev_reg_mr(sim_node_dev(w->ini), (uint64_t)(uintptr_t)w->ibuf, w->ibuf, BUF, all, 1,
		      &w->imr);
	ur_dev_reg_mr(sim_node_dev(w->tgt), (uint64_t)(uintptr_t)w->tbuf, w->tbuf, BUF, all, 1,
		      &w->tmr);
	w->s1 = make_srq(w, 1, 1, &w->cq1);
	w->s2 = make_srq(w, 1, 1, &w->cq2);
	w->s3 = make_srq(w, 1, 2, &w->cq3);
	w->s4 = make_srq(w, 2, 1, &w->cq3);
	w->i1 = make_qp(w->ini, UR_QPT_XRC_SEND, 0x101, &w->ini_cq);
	w->i2 = make_qp(w->ini, UR_QPT_XRC_SEND, 0x102, &w->ini_cq);
	w->t1 = make_qp(w->tgt, UR_QPT_XRC_RECV, 0x201, NULL);
	w->t2 = make_qp(w->tgt, UR_QPT_XRC_RECV, 0x202, NULL);
	sim_qp_params_default(&p);
	p.path_mtu = 3; /* 1024: multi-packet messages */
	ck_assert_int_eq(sim_connect_qps(w->ini, w->i1, w->tgt, w->t1, &p), 0);
	p.psn_a = 0x7ffff0;
	ck_assert_int_eq(sim_connect_qps(w->ini, w->i2, w->tgt, w->t2, &p), 0);
}

static void xw_init(struct xw *w, uint64_t seed, double loss)
{
	xw_init_mode(w, seed, loss, UR_RETX_GBN);
}

static void xw_fini(struct xw *w)
{
	ur_qp_destroy(w->i1);
	ur_qp_destroy(w->i2);
	ur_qp_destroy(w->t1);
	ur_qp_destroy(w->t2);
	ur_srq_destroy(w->s1);
	ur_srq_destroy(w->s2);
	ur_srq_destroy(w->s3);
	ur_srq_destroy(w->s4);
	ur_dev_dereg_mr(sim_node_dev(w->ini), w->imr);
	ur_dev_dereg_mr(sim_node_dev(w->tgt), w->tmr);
	ur_cq_fini(&w->ini_cq);
	ur_cq_fini(&w->cq1);
	ur_cq_fini(&w->cq2);
	ur_cq_fini(&w->cq3);
	sim_destroy(w->s);
}

static void srq_recv(struct xw *w, struct ur_srq *srq, uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct ur_wq *wq = ur_srq_wq(srq);
	struct ur_recv_wqe *r = ur_wq_reserve(wq, 0);

	ck_assert_ptr_nonnull(r);
	memset(r, 0, sizeof(*r));
	r->wr_id = wr_id;
	r->num_sge = 1;
	r->length = len;
	r->sge[0].addr = (uint64_t)(uintptr_t)(w->tbuf + off);
	r->sge[0].length = len;
	r->sge[0].lkey = w->tmr->key;
	ur_wq_commit(wq, 1);
}

static void xrc_send(struct xw *w, struct ur_qp *qp, uint64_t wr_id, enum ur_wr_opcode op,
		     uint32_t off, uint32_t len, struct ur_srq *to, uint32_t srqn, uint64_t raddr,
		     uint32_t rkey)
{
	struct ur_wq *sq = ur_qp_sq(qp);
	struct ur_send_wqe *s = ur_wq_reserve(sq, 0);

	ck_assert_ptr_nonnull(s);
	memset(s, 0, sizeof(*s));
	s->wr_id = wr_id;
	s->opcode = op;
	s->flags = UR_SEND_SIGNALED;
	s->signaled = 1;
	s->length = len;
	s->remote_addr = raddr;
	s->rkey = rkey;
	s->imm = (uint32_t)wr_id;
	s->xrc_srqn = to ? ur_srq_num(to) : srqn;
	s->num_sge = 1;
	s->sge[0].addr = (uint64_t)(uintptr_t)(w->ibuf + off);
	s->sge[0].length = len;
	s->sge[0].lkey = w->imr->key;
	ur_wq_commit(sq, 1);
	ur_qp_doorbell(qp);
	sim_node_kick(w->ini);
}

/* Run until `n` CQEs are on `cq`, or a virtual second passes. */
static int wait_cq(struct xw *w, struct ur_cq *cq, struct ur_cqe *out, int n)
{
	uint64_t end = sim_now(w->s) + 1000 * SIM_PS_PER_US * 1000;
	int got = 0;

	while (got < n && sim_now(w->s) < end) {
		got += ur_cq_poll(cq, out + got, n - got);
		if (got < n)
			sim_run(w->s, sim_now(w->s) + SIM_PS_PER_US);
	}
	return got;
}

static uint64_t tgt_ctr(struct xw *w, enum ur_counter c)
{
	return ur_dev_counters(sim_node_dev(w->tgt))[c];
}

/*
 * Two initiators, two targets of one domain, two SRQs: each message lands
 * in the SRQ its XRCETH names, whichever target QP carried it, and
 * completes on that SRQ's CQ with that target's QP number. A WRITE names
 * an SRQ too, for its PD. With loss, the same, through retransmissions; on
 * devices in selective repeat mode, where XRC QPs stay go-back-N.
 */
START_TEST(test_two_initiators)
{
	static const double loss[] = {0, 0.02, 0.05};
	struct ur_cqe c[16];
	struct xw w;
	uint32_t t1, t2;
	int n;

	xw_init_mode(&w, 0x5eed + (uint64_t)_i, loss[_i], _i == 2 ? UR_RETX_SR : UR_RETX_GBN);
	ck_assert(!ur_qp_selective(w.i1) && !ur_qp_selective(w.t1));
	t1 = ur_qp_num(w.t1);
	t2 = ur_qp_num(w.t2);
	ck_assert_uint_ne(ur_srq_num(w.s1), ur_srq_num(w.s2));
	for (int i = 0; i < 4; i++)
		srq_recv(&w, w.s1, 100 + i, (uint32_t)i * 0x4000, 0x4000);
	for (int i = 0; i < 2; i++)
		srq_recv(&w, w.s2, 200 + i, 0x40000 + (uint32_t)i * 0x4000, 0x4000);

	xrc_send(&w, w.i1, 1, UR_WR_SEND, 0, 5000, w.s1, 0, 0, 0); /* 5 packets */
	xrc_send(&w, w.i1, 2, UR_WR_SEND, 64, 64, w.s2, 0, 0, 0);
	xrc_send(&w, w.i1, 3, UR_WR_SEND_WITH_IMM, 128, 100, w.s1, 0, 0, 0);
	xrc_send(&w, w.i2, 4, UR_WR_SEND, 1000, 3000, w.s1, 0, 0, 0);
	xrc_send(&w, w.i2, 5, UR_WR_RDMA_WRITE, 4000, 2000, w.s2, 0,
		 (uint64_t)(uintptr_t)(w.tbuf + WRITE_AT), w.tmr->key);
	xrc_send(&w, w.i2, 6, UR_WR_SEND, 9000, 10000, w.s2, 0, 0, 0);
	xrc_send(&w, w.i2, 7, UR_WR_RDMA_WRITE_WITH_IMM, 20000, 16, w.s1, 0,
		 (uint64_t)(uintptr_t)(w.tbuf + WRITE_AT + 4096), w.tmr->key);

	n = wait_cq(&w, &w.ini_cq, c, 7);
	ck_assert_int_eq(n, 7);
	for (int i = 0; i < n; i++)
		ck_assert_msg(c[i].status == UR_WC_SUCCESS, "send %llu: %s",
			      (unsigned long long)c[i].wr_id, ur_wc_status_name(c[i].status));

	/* SRQ 1: i1's two SENDs through t1, then i2's SEND and WRITE with immediate through t2 */
	n = wait_cq(&w, &w.cq1, c, 4);
	ck_assert_int_eq(n, 4);
	for (int i = 0; i < 4; i++) {
		ck_assert_uint_eq(c[i].status, UR_WC_SUCCESS);
		ck_assert_uint_eq(c[i].qp_num,
				  c[i].byte_len == 5000 || c[i].byte_len == 100 ? t1 : t2);
	}
	for (int i = 0; i < 4; i++) {
		uint32_t off = (uint32_t)(c[i].wr_id - 100) * 0x4000;
		uint32_t src = c[i].byte_len == 5000 ? 0 : c[i].byte_len == 100 ? 128 : 1000;

		if (c[i].opcode == UR_WC_RECV_RDMA_WITH_IMM) {
			ck_assert_uint_eq(c[i].byte_len, 16);
			ck_assert_uint_eq(c[i].imm, 7);
			continue;
		}
		ck_assert_uint_eq(c[i].opcode, UR_WC_RECV);
		ck_assert(memcmp(w.tbuf + off, w.ibuf + src, c[i].byte_len) == 0);
	}
	ck_assert(memcmp(w.tbuf + WRITE_AT, w.ibuf + 4000, 2000) == 0);
	ck_assert(memcmp(w.tbuf + WRITE_AT + 4096, w.ibuf + 20000, 16) == 0);

	/* SRQ 2: i1's 64-byte SEND through t1, i2's 10000-byte SEND through t2 */
	n = wait_cq(&w, &w.cq2, c, 2);
	ck_assert_int_eq(n, 2);
	for (int i = 0; i < 2; i++) {
		uint32_t off = 0x40000 + (uint32_t)(c[i].wr_id - 200) * 0x4000;

		ck_assert_uint_eq(c[i].status, UR_WC_SUCCESS);
		ck_assert_uint_eq(c[i].opcode, UR_WC_RECV);
		ck_assert_uint_eq(c[i].qp_num, c[i].byte_len == 64 ? t1 : t2);
		ck_assert(memcmp(w.tbuf + off, w.ibuf + (c[i].byte_len == 64 ? 64 : 9000),
				 c[i].byte_len) == 0);
	}
	ck_assert_int_eq(ur_cq_poll(&w.cq3, c, 1), 0);
	ck_assert_uint_eq(tgt_ctr(&w, UR_CTR_rx_drop_xrc_srq), 0);
	ck_assert_uint_eq(ur_qp_state(w.t1), UR_QPS_RTS);
	ck_assert_uint_eq(ur_qp_state(w.t2), UR_QPS_RTS);
	if (loss[_i] > 0) { /* the loss did happen, and was repaired */
		uint64_t lost =
		    sim_node_up_stats(w.ini).dropped + sim_node_up_stats(w.tgt).dropped +
		    sim_node_down_stats(w.ini).dropped + sim_node_down_stats(w.tgt).dropped;

		ck_assert_uint_gt(lost, 0);
	}
	xw_fini(&w);
}
END_TEST

/*
 * An SRQ of another XRC domain, or a number no SRQ has: the target NAKs
 * invalid request (class C), the initiator's WQE fails with
 * REM_INV_REQ_ERR, nothing lands and nothing is consumed.
 */
START_TEST(test_wrong_domain_refused)
{
	struct ur_cqe c[4];
	struct xw w;
	bool no_srq = _i == 1;

	xw_init(&w, 0xbad + (uint64_t)_i, 0);
	srq_recv(&w, w.s3, 300, 0, 0x4000);
	srq_recv(&w, w.s1, 100, 0x4000, 0x4000);
	memset(w.tbuf, 0xee, 0x8000);
	xrc_send(&w, w.i1, 1, UR_WR_SEND, 0, 200, no_srq ? NULL : w.s3, 4242, 0, 0);
	ck_assert_int_eq(wait_cq(&w, &w.ini_cq, c, 1), 1);
	ck_assert_msg(c[0].status == UR_WC_REM_INV_REQ_ERR, "got %s",
		      ur_wc_status_name(c[0].status));
	ck_assert_uint_eq(tgt_ctr(&w, UR_CTR_rx_drop_xrc_srq), 1);
	ck_assert_uint_eq(ur_qp_state(w.t1), UR_QPS_ERR);
	ck_assert_uint_eq(ur_qp_state(w.i1), UR_QPS_ERR);
	sim_run(w.s, sim_now(w.s) + 100 * SIM_PS_PER_US);
	ck_assert_int_eq(ur_cq_poll(&w.cq3, c, 1), 0);
	ck_assert_int_eq(ur_cq_poll(&w.cq1, c, 1), 0);
	ck_assert_uint_eq(w.tbuf[0], 0xee);
	ck_assert_uint_eq(w.tbuf[0x4000], 0xee);
	/* the other connection of the domain is untouched */
	xrc_send(&w, w.i2, 2, UR_WR_SEND, 0, 200, w.s1, 0, 0, 0);
	ck_assert_int_eq(wait_cq(&w, &w.cq1, c, 1), 1);
	ck_assert_uint_eq(c[0].status, UR_WC_SUCCESS);
	ck_assert_uint_eq(c[0].qp_num, ur_qp_num(w.t2));
	ck_assert(memcmp(w.tbuf + 0x4000, w.ibuf, 200) == 0);
	xw_fini(&w);
}
END_TEST

/* A WRITE's R_Key is checked in the PD of the SRQ its XRCETH names (A14.4). */
START_TEST(test_write_checked_in_srq_pd)
{
	struct ur_cqe c[2];
	struct xw w;

	xw_init(&w, 0xd0, 0);
	memset(w.tbuf + WRITE_AT, 0xee, 64);
	/* the region is in PD 1, s4 in PD 2 */
	xrc_send(&w, w.i1, 1, UR_WR_RDMA_WRITE, 0, 64, w.s4, 0,
		 (uint64_t)(uintptr_t)(w.tbuf + WRITE_AT), w.tmr->key);
	ck_assert_int_eq(wait_cq(&w, &w.ini_cq, c, 1), 1);
	ck_assert_msg(c[0].status == UR_WC_REM_ACCESS_ERR, "got %s",
		      ur_wc_status_name(c[0].status));
	ck_assert_uint_eq(w.tbuf[WRITE_AT], 0xee);
	/* through s1, in PD 1, the same WRITE lands */
	xrc_send(&w, w.i2, 2, UR_WR_RDMA_WRITE, 0, 64, w.s1, 0,
		 (uint64_t)(uintptr_t)(w.tbuf + WRITE_AT), w.tmr->key);
	ck_assert_int_eq(wait_cq(&w, &w.ini_cq, c, 1), 1);
	ck_assert_uint_eq(c[0].status, UR_WC_SUCCESS);
	ck_assert(memcmp(w.tbuf + WRITE_AT, w.ibuf, 64) == 0);
	xw_fini(&w);
}
END_TEST

/* An initiator has no receive queue, a target neither queue; numbers are unique. */
START_TEST(test_queues_and_numbers)
{
	struct xw w;

	xw_init(&w, 1, 0);
	ck_assert_ptr_null(ur_qp_rq(w.i1)->buf);
	ck_assert_ptr_null(ur_qp_rq(w.t1)->buf);
	ck_assert_ptr_null(w.t1->srq);
	ck_assert_uint_ne(ur_srq_num(w.s1), 0);
	ck_assert_uint_ne(ur_srq_num(w.s3), ur_srq_num(w.s4));
	ck_assert_ptr_eq(ur_dev_find_srq(sim_node_dev(w.tgt), ur_srq_num(w.s2)), w.s2);
	xw_fini(&w);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("xrc_scenarios");
	TCase *tc = tcase_create("xrc");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_two_initiators, 0, 3);
	tcase_add_loop_test(tc, test_wrong_domain_refused, 0, 2);
	tcase_add_test(tc, test_write_checked_in_srq_pd);
	tcase_add_test(tc, test_queues_and_numbers);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
