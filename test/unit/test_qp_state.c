/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The QP state machine of IBTA Vol 1 10.3.1 with the attribute rules of
 * table 91 (11.2.4.2), typed in here again from the spec: for RC, UC and UD
 * and every (from, to) pair of the seven states, a QP driven legally into
 * `from` accepts exactly the legal transitions with exactly their required
 * attributes, refuses a missing required or an extra attribute and any
 * out-of-range value, and stays where it was when it refuses. Entering the
 * error state flushes every posted WQE, in order; RESET empties the queues.
 *
 * The host is test/common/fake_host.c: frame buffers from a small pool,
 * counted, so teardown proves every buffer the engine took it gave back;
 * random is seeded; events are recorded.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "engine.h"
#include "fake_host.h"
#include "psn.h"
#include "qp.h"

#define POOL 8
#define PD 3
#define QPN 0x11
#define CQ_DEPTH 256

/* ---- the fake host: a small pool, the first frames sent kept, events recorded ---- */

static struct fake_host host;

static const struct fake_host_opts host_opts = {
    .nbufs = POOL,
    .keep = FAKE_HOST_COPY,
    .copies = 16,
    .seed = 0x853c49e6748fea9bull,
    .fail = fake_host_ck_fail,
};

static unsigned count_events(enum ur_async_event ev)
{
	return fake_host_count_events(&host, ev);
}

/* ---- fixture: a device, two CQs, at most one QP at a time ---- */

static struct ur_dev *dev;
static struct ur_cq scq, rcq;
static struct ur_qp *qp;
static uint64_t now;
static int qp_ctx; /* the host's object for the QP: events name it */

static void dev_setup(void)
{
	struct ur_dev_config cfg;

	ck_assert_int_eq(fake_host_init(&host, &host_opts), 0);
	ur_dev_config_default(&cfg);
	ck_assert_int_eq(ur_dev_create(&cfg, &fake_host_ops, &host, NULL, &dev), 0);
	ck_assert_int_eq(ur_cq_init(&scq, CQ_DEPTH, &scq), 0);
	ck_assert_int_eq(ur_cq_init(&rcq, CQ_DEPTH, &rcq), 0);
	qp = NULL;
	now = 1000000000ull;
}

static void dev_teardown(void)
{
	/* every completion the engine made, the test looked at */
	fake_host_check_cq_drained(&host, &scq, "the send CQ");
	fake_host_check_cq_drained(&host, &rcq, "the receive CQ");
	if (qp)
		ur_qp_destroy(qp);
	qp = NULL;
	ur_dev_destroy(dev);
	ur_cq_fini(&scq);
	ur_cq_fini(&rcq);
	/* every buffer the engine took, it gave back */
	fake_host_check_idle(&host);
	fake_host_fini(&host);
}

static const enum ur_qp_type qp_types[3] = {UR_QPT_RC, UR_QPT_UC, UR_QPT_UD};
static const char *const type_names[3] = {"RC", "UC", "UD"};
static int cur_t; /* service of the QP under test, for messages */

static int type_index(enum ur_qp_type type)
{
	return type == UR_QPT_RC ? 0 : type == UR_QPT_UC ? 1 : 2;
}

static struct ur_qp *make_qp(enum ur_qp_type type)
{
	struct ur_qp_init init = {
	    .type = type,
	    .qpn = QPN,
	    .pd = PD,
	    .send_cq = &scq,
	    .recv_cq = &rcq,
	    .max_send_wr = 16,
	    .max_recv_wr = 16,
	    .max_send_sge = 2,
	    .max_recv_sge = 2,
	    .max_inline_data = 64,
	    .host_ctx = &qp_ctx,
	};
	struct ur_qp *q;

	ck_assert_int_eq(ur_qp_create(dev, &init, &q), 0);
	cur_t = type_index(type);
	ck_assert_uint_ge(init.max_send_wr, 16);
	ck_assert_uint_ge(init.max_recv_wr, 16);
	ck_assert_uint_eq(ur_qp_state(q), UR_QPS_RESET);
	return q;
}

/* ---- the rules of table 91, from the spec ---- */

/* Attribute masks of IBTA table 91 (names as in verbs), per service: RC, UC, UD. */
struct rule {
	bool valid[3];
	uint32_t req[3];
	uint32_t opt[3];
};

#define SAME3(m)                                                                                   \
	{                                                                                          \
		(m), (m), (m)                                                                      \
	}
#define YES3                                                                                       \
	{                                                                                          \
		true, true, true                                                                   \
	}

/* clang-format off */
static const struct rule rules[UR_QPS_COUNT][UR_QPS_COUNT] = {
	[UR_QPS_RESET][UR_QPS_INIT] = {
		.valid = YES3,
		.req = {UR_QP_PKEY_INDEX | UR_QP_PORT | UR_QP_ACCESS_FLAGS,
			UR_QP_PKEY_INDEX | UR_QP_PORT | UR_QP_ACCESS_FLAGS,
			UR_QP_PKEY_INDEX | UR_QP_PORT | UR_QP_QKEY},
	},
	[UR_QPS_INIT][UR_QPS_INIT] = {
		.valid = YES3,
		.opt = {UR_QP_PKEY_INDEX | UR_QP_PORT | UR_QP_ACCESS_FLAGS,
			UR_QP_PKEY_INDEX | UR_QP_PORT | UR_QP_ACCESS_FLAGS,
			UR_QP_PKEY_INDEX | UR_QP_PORT | UR_QP_QKEY},
	},
	[UR_QPS_INIT][UR_QPS_RTR] = {
		.valid = YES3,
		.req = {UR_QP_AV | UR_QP_PATH_MTU | UR_QP_DEST_QPN | UR_QP_RQ_PSN |
				UR_QP_MAX_DEST_RD_ATOMIC | UR_QP_MIN_RNR_TIMER,
			UR_QP_AV | UR_QP_PATH_MTU | UR_QP_DEST_QPN | UR_QP_RQ_PSN,
			0},
		.opt = {UR_QP_ALT_PATH | UR_QP_ACCESS_FLAGS | UR_QP_PKEY_INDEX,
			UR_QP_ALT_PATH | UR_QP_ACCESS_FLAGS | UR_QP_PKEY_INDEX,
			UR_QP_PKEY_INDEX | UR_QP_QKEY},
	},
	[UR_QPS_RTR][UR_QPS_RTS] = {
		.valid = YES3,
		.req = {UR_QP_SQ_PSN | UR_QP_TIMEOUT | UR_QP_RETRY_CNT | UR_QP_RNR_RETRY |
				UR_QP_MAX_QP_RD_ATOMIC,
			UR_QP_SQ_PSN,
			UR_QP_SQ_PSN},
		.opt = {UR_QP_CUR_STATE | UR_QP_ALT_PATH | UR_QP_ACCESS_FLAGS |
				UR_QP_MIN_RNR_TIMER | UR_QP_PATH_MIG_STATE,
			UR_QP_CUR_STATE | UR_QP_ALT_PATH | UR_QP_ACCESS_FLAGS |
				UR_QP_PATH_MIG_STATE,
			UR_QP_CUR_STATE | UR_QP_QKEY},
	},
	[UR_QPS_RTS][UR_QPS_RTS] = {
		.valid = YES3,
		.opt = {UR_QP_CUR_STATE | UR_QP_ACCESS_FLAGS | UR_QP_ALT_PATH |
				UR_QP_PATH_MIG_STATE | UR_QP_MIN_RNR_TIMER,
			UR_QP_CUR_STATE | UR_QP_ACCESS_FLAGS | UR_QP_ALT_PATH |
				UR_QP_PATH_MIG_STATE,
			UR_QP_CUR_STATE | UR_QP_QKEY},
	},
	[UR_QPS_RTS][UR_QPS_SQD] = {
		.valid = YES3,
		.opt = SAME3(UR_QP_EN_SQD_ASYNC_NOTIFY),
	},
	[UR_QPS_SQD][UR_QPS_RTS] = {
		.valid = YES3,
		.opt = {UR_QP_CUR_STATE | UR_QP_ALT_PATH | UR_QP_ACCESS_FLAGS |
				UR_QP_MIN_RNR_TIMER | UR_QP_PATH_MIG_STATE,
			UR_QP_CUR_STATE | UR_QP_ALT_PATH | UR_QP_ACCESS_FLAGS |
				UR_QP_PATH_MIG_STATE,
			UR_QP_CUR_STATE | UR_QP_QKEY},
	},
	[UR_QPS_SQD][UR_QPS_SQD] = {
		.valid = YES3,
		.opt = {UR_QP_PORT | UR_QP_AV | UR_QP_TIMEOUT | UR_QP_RETRY_CNT |
				UR_QP_RNR_RETRY | UR_QP_MAX_QP_RD_ATOMIC |
				UR_QP_MAX_DEST_RD_ATOMIC | UR_QP_ALT_PATH | UR_QP_ACCESS_FLAGS |
				UR_QP_PKEY_INDEX | UR_QP_MIN_RNR_TIMER | UR_QP_PATH_MIG_STATE,
			UR_QP_AV | UR_QP_ALT_PATH | UR_QP_ACCESS_FLAGS | UR_QP_PKEY_INDEX |
				UR_QP_PATH_MIG_STATE,
			UR_QP_PKEY_INDEX | UR_QP_QKEY},
	},
	/* SQE exists for UC and UD only: an RC send error goes to ERR */
	[UR_QPS_SQE][UR_QPS_RTS] = {
		.valid = {false, true, true},
		.opt = {0,
			UR_QP_CUR_STATE | UR_QP_ACCESS_FLAGS,
			UR_QP_CUR_STATE | UR_QP_QKEY},
	},
};
/* clang-format on */

/*
 * Bits where uroce deliberately accepts more than the table: a rate limit
 * wherever the QP is (re)started (the pacer is uroce's own), the current
 * state on the way to RESET or ERR (harmless: it must match), and the port
 * on a UC SQD->SQD (there is one port and it must be 1).
 */
static uint32_t tolerated(enum ur_qp_state from, enum ur_qp_state to, int t)
{
	uint32_t m = 0;

	if (to == UR_QPS_RESET || to == UR_QPS_ERR)
		m |= UR_QP_CUR_STATE;
	if (to == UR_QPS_RTS && (from == UR_QPS_RTR || from == UR_QPS_RTS))
		m |= UR_QP_RATE_LIMIT;
	if (from == UR_QPS_SQD && to == UR_QPS_SQD && t == 1)
		m |= UR_QP_PORT;
	return m;
}

/* Any state may be reset or put in error, with no attribute (10.3.1). */
static bool legal(enum ur_qp_state from, enum ur_qp_state to, int t)
{
	if (to == UR_QPS_RESET || to == UR_QPS_ERR)
		return true;
	return rules[from][to].valid[t];
}

static uint32_t req_mask(enum ur_qp_state from, enum ur_qp_state to, int t)
{
	return legal(from, to, t) ? rules[from][to].req[t] : 0;
}

static uint32_t opt_mask(enum ur_qp_state from, enum ur_qp_state to, int t)
{
	return legal(from, to, t) ? rules[from][to].opt[t] : 0;
}

/* ---- attributes and driving ---- */

static const uint8_t peer_mac[6] = {0x02, 0, 0, 0, 0, 0x22};
static const uint8_t my_mac[6] = {0x02, 0, 0, 0, 0, 0x11};
static const uint8_t my_ip[4] = {10, 0, 0, 1};
static const uint8_t peer_ip[4] = {10, 0, 0, 2};

#define RQ_PSN 0xfffff0
#define SQ_PSN 0xfffff8
#define DEST_QPN 0x000123
#define QKEY 0x11111111

/* Valid values for every attribute, so only the mask decides. */
static void good_attr(struct ur_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_access_flags = UR_ACCESS_LOCAL_WRITE | UR_ACCESS_REMOTE_WRITE |
			     UR_ACCESS_REMOTE_READ | UR_ACCESS_REMOTE_ATOMIC;
	a->pkey_index = 0;
	a->port_num = 1;
	a->qkey = QKEY;
	memcpy(a->av.path.smac, my_mac, 6);
	memcpy(a->av.path.dmac, peer_mac, 6);
	ur_gid_from_v4(&a->av.path.sgid, my_ip);
	ur_gid_from_v4(&a->av.path.dgid, peer_ip);
	a->av.path.hop_limit = 64;
	a->av.path.udp_sport = 0xc000;
	a->av.resolved = 0; /* no neighbour: frames are built in scratch, none leave */
	a->path_mtu = 3;    /* 1024 */
	a->dest_qp_num = DEST_QPN;
	a->rq_psn = RQ_PSN;
	a->sq_psn = SQ_PSN;
	a->max_dest_rd_atomic = 4;
	a->min_rnr_timer = 12;
	a->timeout = 14;
	a->retry_cnt = 6;
	a->rnr_retry = 5;
	a->max_rd_atomic = 4;
	a->en_sqd_async_notify = 0;
	a->rate_limit = 0;
}

static int modify_with(struct ur_qp *q, const struct ur_qp_attr *base, enum ur_qp_state to,
		       uint32_t mask)
{
	struct ur_qp_attr a = *base;

	a.qp_state = to;
	a.cur_qp_state = ur_qp_state(q);
	return ur_qp_modify(q, &a, mask | UR_QP_STATE, now);
}

static int modify(struct ur_qp *q, enum ur_qp_state to, uint32_t mask)
{
	struct ur_qp_attr a;

	good_attr(&a);
	return modify_with(q, &a, to, mask);
}

static unsigned drain_cq(struct ur_cq *cq, struct ur_cqe *out, unsigned max)
{
	unsigned n = 0;
	struct ur_cqe tmp;

	while (n < max && ur_cq_poll(cq, out ? &out[n] : &tmp, 1) == 1)
		n++;
	return n;
}

static struct ur_send_wqe *post_send(struct ur_qp *q, uint64_t wr_id, enum ur_wr_opcode op,
				     bool signaled)
{
	struct ur_wq *sq = ur_qp_sq(q);
	struct ur_send_wqe *w = ur_wq_reserve(sq, 0);

	ck_assert_ptr_nonnull(w);
	memset(w, 0, sq->stride);
	w->wr_id = wr_id;
	w->opcode = (uint8_t)op;
	w->length = 0;
	w->num_sge = 0;
	w->rkey = 0x1234;
	w->remote_addr = 0x10000;
	w->flags = signaled ? UR_SEND_SIGNALED : 0;
	w->signaled = signaled;
	ur_wq_commit(sq, 1);
	return w;
}

static void post_recv(struct ur_qp *q, uint64_t wr_id)
{
	struct ur_wq *rq = ur_qp_rq(q);
	struct ur_recv_wqe *r = ur_wq_reserve(rq, 0);

	ck_assert_ptr_nonnull(r);
	memset(r, 0, rq->stride);
	r->wr_id = wr_id;
	r->num_sge = 0;
	r->length = 0;
	ur_wq_commit(rq, 1);
}

/* Let the engine see posted work: doorbell, poll, transmit. */
static unsigned run_engine(struct ur_qp *q, unsigned budget)
{
	unsigned sent;

	ur_qp_doorbell(q);
	ur_dev_poll(dev, now);
	sent = ur_dev_tx(dev, now, budget);
	now += 1000;
	return sent;
}

/*
 * Bring a fresh QP into `to` the legal way, each step with exactly its
 * required attributes. SQE is reached as it is in life: a UC/UD send WQE
 * fails (an opcode the service does not have) and the send queue stops.
 */
static void drive(struct ur_qp *q, enum ur_qp_type type, enum ur_qp_state to)
{
	int t = type_index(type);

	if (to == UR_QPS_RESET)
		return;
	ck_assert_int_eq(modify(q, UR_QPS_INIT, req_mask(UR_QPS_RESET, UR_QPS_INIT, t)), 0);
	if (to == UR_QPS_INIT)
		return;
	ck_assert_int_eq(modify(q, UR_QPS_RTR, req_mask(UR_QPS_INIT, UR_QPS_RTR, t)), 0);
	if (to == UR_QPS_RTR)
		return;
	ck_assert_int_eq(modify(q, UR_QPS_RTS, req_mask(UR_QPS_RTR, UR_QPS_RTS, t)), 0);
	switch (to) {
	case UR_QPS_SQD:
		ck_assert_int_eq(modify(q, UR_QPS_SQD, 0), 0);
		break;
	case UR_QPS_SQE: {
		struct ur_cqe c;

		ck_assert_int_ne(t, 0); /* RC has no SQE */
		post_send(q, 0xbad, t == 1 ? UR_WR_RDMA_READ : UR_WR_RDMA_WRITE, true);
		run_engine(q, 16);
		ck_assert_uint_eq(drain_cq(&scq, &c, 1), 1);
		ck_assert_uint_eq(c.wr_id, 0xbad);
		ck_assert_uint_eq(c.status, UR_WC_LOC_QP_OP_ERR);
		break;
	}
	case UR_QPS_ERR:
		ck_assert_int_eq(modify(q, UR_QPS_ERR, 0), 0);
		break;
	default:
		break;
	}
	ck_assert_msg(ur_qp_state(q) == to, "driving to %s ended in %s", ur_qp_state_name(to),
		      ur_qp_state_name(ur_qp_state(q)));
	drain_cq(&scq, NULL, CQ_DEPTH);
	drain_cq(&rcq, NULL, CQ_DEPTH);
}

static void fresh_qp(enum ur_qp_type type, enum ur_qp_state st)
{
	if (qp)
		ur_qp_destroy(qp);
	qp = make_qp(type);
	drive(qp, type, st);
}

/* A few attributes that must not change when a modify is refused. */
struct snapshot {
	uint32_t access, qkey, rq_psn, sq_psn, dqpn;
	unsigned mtu;
	uint8_t timeout, retry, rnr, rd, dest_rd, min_rnr, port;
	uint16_t pkey;
};

static void snap(struct ur_qp *q, struct snapshot *s)
{
	struct ur_qp_attr a;

	ur_qp_query(q, &a);
	memset(s, 0, sizeof(*s));
	s->access = a.qp_access_flags;
	s->qkey = a.qkey;
	s->rq_psn = a.rq_psn;
	s->sq_psn = a.sq_psn;
	s->dqpn = a.dest_qp_num;
	s->mtu = a.path_mtu;
	s->timeout = a.timeout;
	s->retry = a.retry_cnt;
	s->rnr = a.rnr_retry;
	s->rd = a.max_rd_atomic;
	s->dest_rd = a.max_dest_rd_atomic;
	s->min_rnr = a.min_rnr_timer;
	s->port = a.port_num;
	s->pkey = a.pkey_index;
}

static void expect_refused(struct ur_qp *q, const struct ur_qp_attr *a, enum ur_qp_state to,
			   uint32_t mask, const char *why)
{
	enum ur_qp_state before = ur_qp_state(q);
	struct snapshot s0, s1;
	int err;

	snap(q, &s0);
	err = modify_with(q, a, to, mask);
	ck_assert_msg(err == -EINVAL, "%s %s->%s mask %#x (%s): %d, want -EINVAL",
		      type_names[cur_t], ur_qp_state_name(before), ur_qp_state_name(to), mask, why,
		      err);
	ck_assert_msg(ur_qp_state(q) == before, "%s: state moved to %s", why,
		      ur_qp_state_name(ur_qp_state(q)));
	snap(q, &s1);
	ck_assert_msg(memcmp(&s0, &s1, sizeof(s0)) == 0, "%s: attributes changed", why);
}

/*
 * One (service, from, to) triple: legal transitions succeed with exactly
 * their required attributes and refuse one missing or one extra; illegal
 * ones are refused whatever they carry.
 */
START_TEST(test_transition)
{
	const int t = _i / (UR_QPS_COUNT * UR_QPS_COUNT);
	const enum ur_qp_state from = (enum ur_qp_state)(_i / UR_QPS_COUNT % UR_QPS_COUNT);
	const enum ur_qp_state to = (enum ur_qp_state)(_i % UR_QPS_COUNT);
	const enum ur_qp_type type = qp_types[t];
	uint32_t req = req_mask(from, to, t), opt = opt_mask(from, to, t);
	uint32_t ok_extra = opt | tolerated(from, to, t);
	struct ur_qp_attr a;

	if (type == UR_QPT_RC && from == UR_QPS_SQE)
		return; /* unreachable: see test_rc_send_error_goes_to_err */
	good_attr(&a);
	fresh_qp(type, from);

	if (!legal(from, to, t)) {
		uint32_t natural = 0;

		/* the attributes a legal way into `to` would carry do not help */
		for (int f = 0; f < UR_QPS_COUNT; f++)
			if (legal((enum ur_qp_state)f, to, t))
				natural |= req_mask((enum ur_qp_state)f, to, t);
		expect_refused(qp, &a, to, 0, "illegal transition");
		expect_refused(qp, &a, to, natural, "illegal transition with attributes");
		return;
	}

	/* one required attribute missing */
	for (uint32_t bit = 1; bit; bit <<= 1)
		if (req & bit)
			expect_refused(qp, &a, to, req & ~bit, "required attribute missing");
	/* one attribute the transition does not take (defined bits or not) */
	for (uint32_t bit = UR_QP_CUR_STATE; bit; bit <<= 1)
		if (!(req & bit) && !(ok_extra & bit))
			expect_refused(qp, &a, to, req | bit, "extra attribute");

	/* exactly the required ones: accepted */
	ck_assert_msg(modify_with(qp, &a, to, req) == 0, "%s %s->%s with mask %#x refused",
		      type_names[t], ur_qp_state_name(from), ur_qp_state_name(to), req);
	ck_assert_msg(ur_qp_state(qp) == to, "%s %s->%s ended in %s", type_names[t],
		      ur_qp_state_name(from), ur_qp_state_name(to),
		      ur_qp_state_name(ur_qp_state(qp)));

	/* each optional attribute, and all of them, accepted too */
	for (uint32_t bit = 1; bit; bit <<= 1) {
		if (!(opt & bit))
			continue;
		fresh_qp(type, from);
		ck_assert_msg(modify_with(qp, &a, to, req | bit) == 0,
			      "%s %s->%s: optional %#x refused", type_names[t],
			      ur_qp_state_name(from), ur_qp_state_name(to), bit);
		ck_assert_uint_eq(ur_qp_state(qp), to);
	}
	fresh_qp(type, from);
	ck_assert_int_eq(modify_with(qp, &a, to, req | opt), 0);
	ck_assert_uint_eq(ur_qp_state(qp), to);
}
END_TEST

/* A modify without UR_QP_STATE stays in the current state, under the same rules. */
START_TEST(test_modify_without_state)
{
	const int t = _i;
	struct ur_qp_attr a;

	good_attr(&a);
	fresh_qp(qp_types[t], UR_QPS_RTS);
	a.cur_qp_state = UR_QPS_RTS;
	a.qp_access_flags = UR_ACCESS_REMOTE_READ;
	ck_assert_int_eq(ur_qp_modify(qp, &a, UR_QP_CUR_STATE, now), 0);
	if (t != 2)
		ck_assert_int_eq(ur_qp_modify(qp, &a, UR_QP_ACCESS_FLAGS, now), 0);
	else
		ck_assert_int_eq(ur_qp_modify(qp, &a, UR_QP_QKEY, now), 0);
	ck_assert_uint_eq(ur_qp_state(qp), UR_QPS_RTS);
	/* RTR's attributes are not modifiable in RTS */
	ck_assert_int_eq(ur_qp_modify(qp, &a, UR_QP_RQ_PSN, now), -EINVAL);
	ck_assert_int_eq(ur_qp_modify(qp, &a, UR_QP_PATH_MTU, now), -EINVAL);
	ck_assert_uint_eq(ur_qp_state(qp), UR_QPS_RTS);

	/* RTR -> RTR does not exist */
	fresh_qp(qp_types[t], UR_QPS_RTR);
	ck_assert_int_eq(ur_qp_modify(qp, &a, UR_QP_PKEY_INDEX, now), -EINVAL);
	ck_assert_uint_eq(ur_qp_state(qp), UR_QPS_RTR);
}
END_TEST

/* A target state outside the enum. */
START_TEST(test_bad_target_state)
{
	struct ur_qp_attr a;

	good_attr(&a);
	fresh_qp(UR_QPT_RC, UR_QPS_INIT);
	a.qp_state = UR_QPS_COUNT;
	ck_assert_int_eq(ur_qp_modify(qp, &a, UR_QP_STATE, now), -EINVAL);
	a.qp_state = (enum ur_qp_state)100;
	ck_assert_int_eq(ur_qp_modify(qp, &a, UR_QP_STATE, now), -EINVAL);
	ck_assert_uint_eq(ur_qp_state(qp), UR_QPS_INIT);
}
END_TEST

/* Out-of-range values, one at a time. */
enum spoil {
	MTU0,
	MTU6,
	MTU_BYTES,
	TIMEOUT32,
	RETRY8,
	RNR8,
	PORT0,
	PORT2,
	PKEY1,
	DEST_RD17,
	MIN_RNR32,
	DQPN25,
	ACCESS_ZERO_BASED,
	ACCESS_UNKNOWN,
};

static void spoil(struct ur_qp_attr *a, enum spoil what)
{
	switch (what) {
	case MTU0:
		a->path_mtu = 0;
		break;
	case MTU6:
		a->path_mtu = 6;
		break;
	case MTU_BYTES:
		a->path_mtu = 4096; /* bytes where the enum belongs */
		break;
	case TIMEOUT32:
		a->timeout = 32;
		break;
	case RETRY8:
		a->retry_cnt = 8;
		break;
	case RNR8:
		a->rnr_retry = 8;
		break;
	case PORT0:
		a->port_num = 0;
		break;
	case PORT2:
		a->port_num = 2;
		break;
	case PKEY1:
		a->pkey_index = 1;
		break;
	case DEST_RD17:
		a->max_dest_rd_atomic = UR_DEFAULT_RD_ATOMIC + 1;
		break;
	case MIN_RNR32:
		a->min_rnr_timer = 32;
		break;
	case DQPN25:
		a->dest_qp_num = 0x1000000;
		break;
	case ACCESS_ZERO_BASED:
		a->qp_access_flags |= UR_ACCESS_ZERO_BASED; /* an MR flag, not a QP one */
		break;
	case ACCESS_UNKNOWN:
		a->qp_access_flags |= 1u << 30;
		break;
	}
}

/* Refused, and nothing of the attempt is kept (not even its good values). */
static void refuse_value(enum ur_qp_state to, uint32_t mask, enum spoil what, const char *why)
{
	struct ur_qp_attr a;

	good_attr(&a);
	a.dest_qp_num = 0x777;
	a.rq_psn = 0x555;
	a.qkey = 0x999;
	spoil(&a, what);
	expect_refused(qp, &a, to, mask, why);
}

START_TEST(test_out_of_range_attributes)
{
	const int t = _i;
	const enum ur_qp_type type = qp_types[t];
	const uint32_t to_init = req_mask(UR_QPS_RESET, UR_QPS_INIT, t);
	const uint32_t to_rtr = req_mask(UR_QPS_INIT, UR_QPS_RTR, t);
	const uint32_t to_rts = req_mask(UR_QPS_RTR, UR_QPS_RTS, t);

	fresh_qp(type, UR_QPS_RESET);
	refuse_value(UR_QPS_INIT, to_init, PORT0, "port 0");
	refuse_value(UR_QPS_INIT, to_init, PORT2, "port 2");
	refuse_value(UR_QPS_INIT, to_init, PKEY1, "pkey index 1");
	if (type != UR_QPT_UD) {
		refuse_value(UR_QPS_INIT, to_init, ACCESS_ZERO_BASED, "ZERO_BASED is an MR flag");
		refuse_value(UR_QPS_INIT, to_init, ACCESS_UNKNOWN, "unknown access flag");
	}

	fresh_qp(type, UR_QPS_INIT);
	if (type != UR_QPT_UD) {
		refuse_value(UR_QPS_RTR, to_rtr, MTU0, "path_mtu 0");
		refuse_value(UR_QPS_RTR, to_rtr, MTU6, "path_mtu 6");
		refuse_value(UR_QPS_RTR, to_rtr, MTU_BYTES, "path_mtu in bytes");
		refuse_value(UR_QPS_RTR, to_rtr, DQPN25, "destination QPN of 25 bits");
	}
	if (type == UR_QPT_RC) {
		refuse_value(UR_QPS_RTR, to_rtr, DEST_RD17, "max_dest_rd_atomic above the device");
		refuse_value(UR_QPS_RTR, to_rtr, MIN_RNR32, "min_rnr_timer 32");
	}

	fresh_qp(type, UR_QPS_RTR);
	if (type == UR_QPT_RC) {
		refuse_value(UR_QPS_RTS, to_rts, TIMEOUT32, "timeout 32");
		refuse_value(UR_QPS_RTS, to_rts, RETRY8, "retry_cnt 8");
		refuse_value(UR_QPS_RTS, to_rts, RNR8, "rnr_retry 8");
	}
	/* the current state, when given, must be the current state */
	{
		struct ur_qp_attr a;

		good_attr(&a);
		a.qp_state = UR_QPS_RTS;
		a.cur_qp_state = UR_QPS_INIT;
		ck_assert_int_eq(ur_qp_modify(qp, &a, UR_QP_STATE | UR_QP_CUR_STATE | to_rts, now),
				 -EINVAL);
		ck_assert_uint_eq(ur_qp_state(qp), UR_QPS_RTR);
	}
	/* and the edges of each range are accepted */
	{
		struct ur_qp_attr a;

		good_attr(&a);
		a.timeout = 31;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = UR_MAX_RD_ATOMIC;
		ck_assert_int_eq(modify_with(qp, &a, UR_QPS_RTS, to_rts), 0);
	}
	fresh_qp(type, UR_QPS_INIT);
	{
		struct ur_qp_attr a;

		good_attr(&a);
		a.path_mtu = 5;
		a.dest_qp_num = 0xffffff;
		a.max_dest_rd_atomic = UR_DEFAULT_RD_ATOMIC;
		a.min_rnr_timer = 31;
		ck_assert_int_eq(modify_with(qp, &a, UR_QPS_RTR, to_rtr), 0);
	}
	fresh_qp(type, UR_QPS_INIT);
	{
		struct ur_qp_attr a;

		good_attr(&a);
		a.path_mtu = 1;
		a.max_dest_rd_atomic = 0;
		a.min_rnr_timer = 0;
		ck_assert_int_eq(modify_with(qp, &a, UR_QPS_RTR, to_rtr), 0);
	}
}
END_TEST

/*
 * max_dest_rd_atomic is checked against the device's configured limit, not
 * the engine's: those are resources the QP must hold. A larger max_rd_atomic
 * (perftest passes the peer's max_qp_rd_atom, 128 for Soft-RoCE) is taken and
 * cut to the device's initiator depth, which ur_qp_query then reports.
 */
START_TEST(test_rd_atomic_device_limit)
{
	struct ur_dev_config cfg;
	struct ur_dev *small;
	struct ur_qp_init init = {
	    .type = UR_QPT_RC,
	    .qpn = 0x99,
	    .send_cq = &scq,
	    .recv_cq = &rcq,
	};
	struct ur_qp *q;
	struct ur_qp_attr a, got;
	const uint32_t to_rts = req_mask(UR_QPS_RTR, UR_QPS_RTS, 0);

	ur_dev_config_default(&cfg);
	ck_assert_uint_eq(cfg.max_qp_rd_atom, UR_DEFAULT_RD_ATOMIC);
	ck_assert_uint_eq(cfg.max_qp_init_rd_atom, UR_DEFAULT_RD_ATOMIC);
	cfg.max_qp_rd_atom = 4;
	cfg.max_qp_init_rd_atom = 3;
	ck_assert_int_eq(ur_dev_create(&cfg, &fake_host_ops, &host, NULL, &small), 0);
	ck_assert_int_eq(ur_qp_create(small, &init, &q), 0);
	drive(q, UR_QPT_RC, UR_QPS_INIT);
	good_attr(&a);
	a.max_dest_rd_atomic = 5;
	ck_assert_int_eq(modify_with(q, &a, UR_QPS_RTR, req_mask(UR_QPS_INIT, UR_QPS_RTR, 0)),
			 -EINVAL);
	a.max_dest_rd_atomic = 4;
	ck_assert_int_eq(modify_with(q, &a, UR_QPS_RTR, req_mask(UR_QPS_INIT, UR_QPS_RTR, 0)), 0);
	ur_qp_query(q, &got);
	ck_assert_uint_eq(got.max_dest_rd_atomic, 4);
	a.max_rd_atomic = 128;
	ck_assert_int_eq(modify_with(q, &a, UR_QPS_RTS, to_rts), 0);
	ur_qp_query(q, &got);
	ck_assert_uint_eq(got.max_rd_atomic, 3);
	ur_qp_destroy(q);
	ur_dev_destroy(small);

	/* a configuration past the engine's limits is cut to them */
	cfg.max_qp_rd_atom = 1000;
	cfg.max_qp_init_rd_atom = 0;
	ck_assert_int_eq(ur_dev_create(&cfg, &fake_host_ops, &host, NULL, &small), 0);
	ck_assert_uint_eq(ur_dev_config(small)->max_qp_rd_atom, UR_MAX_RD_ATOMIC);
	ck_assert_uint_eq(ur_dev_config(small)->max_qp_init_rd_atom, 1);
	ur_dev_destroy(small);
}
END_TEST

/* ur_qp_query reports the state and every attribute that was set. */
START_TEST(test_query_reports_what_was_set)
{
	const int t = _i;
	struct ur_qp_attr a, q;

	fresh_qp(qp_types[t], UR_QPS_RESET);
	ur_qp_query(qp, &q);
	ck_assert_uint_eq(q.qp_state, UR_QPS_RESET);
	ck_assert_uint_eq(q.cur_qp_state, UR_QPS_RESET);
	ck_assert_uint_eq(q.port_num, 1);
	ck_assert_uint_eq(q.max_send_wr, 16);
	ck_assert_uint_eq(q.max_recv_wr, 16);
	ck_assert_uint_ge(q.max_send_sge, 2);
	ck_assert_uint_ge(q.max_recv_sge, 2);
	ck_assert_uint_ge(q.max_inline_data, 64);

	good_attr(&a);
	a.qkey = 0x80010203;
	a.qp_access_flags = UR_ACCESS_REMOTE_WRITE | UR_ACCESS_LOCAL_WRITE;
	ck_assert_int_eq(modify_with(qp, &a, UR_QPS_INIT, req_mask(UR_QPS_RESET, UR_QPS_INIT, t)),
			 0);
	a.path_mtu = 4;
	a.dest_qp_num = 0xabcdef;
	a.rq_psn = 0xfffffe;
	a.max_dest_rd_atomic = 7;
	a.min_rnr_timer = 21;
	a.av.path.tclass = 0x68;
	a.av.path.flow_label = 0x12345;
	ck_assert_int_eq(modify_with(qp, &a, UR_QPS_RTR, req_mask(UR_QPS_INIT, UR_QPS_RTR, t)), 0);
	a.sq_psn = 0xfffff1;
	a.timeout = 17;
	a.retry_cnt = 3;
	a.rnr_retry = 7;
	a.max_rd_atomic = 9;
	ck_assert_int_eq(modify_with(qp, &a, UR_QPS_RTS, req_mask(UR_QPS_RTR, UR_QPS_RTS, t)), 0);

	ur_qp_query(qp, &q);
	ck_assert_uint_eq(q.qp_state, UR_QPS_RTS);
	ck_assert_uint_eq(q.cur_qp_state, UR_QPS_RTS);
	ck_assert_uint_eq(q.pkey_index, 0);
	ck_assert_uint_eq(q.port_num, 1);
	ck_assert_uint_eq(q.sq_psn, 0xfffff1);
	ck_assert(!q.sq_draining);
	if (t == 2) {
		ck_assert_uint_eq(q.qkey, 0x80010203);
		return;
	}
	ck_assert_uint_eq(q.qp_access_flags, UR_ACCESS_REMOTE_WRITE | UR_ACCESS_LOCAL_WRITE);
	ck_assert_uint_eq(q.path_mtu, 4);
	ck_assert_uint_eq(q.dest_qp_num, 0xabcdef);
	ck_assert_uint_eq(q.rq_psn, 0xfffffe);
	ck_assert_mem_eq(q.av.path.dgid.raw, a.av.path.dgid.raw, 16);
	ck_assert_mem_eq(q.av.path.dmac, peer_mac, 6);
	ck_assert_uint_eq(q.av.path.tclass, 0x68);
	ck_assert_uint_eq(q.av.path.flow_label, 0x12345);
	if (t == 0) {
		ck_assert_uint_eq(q.max_dest_rd_atomic, 7);
		ck_assert_uint_eq(q.min_rnr_timer, 21);
		ck_assert_uint_eq(q.timeout, 17);
		/* the host may sleep this long with nothing armed (ur_dev_quiet_ns) */
		ck_assert_uint_eq(ur_dev_quiet_ns(dev), 4096ull << 17);
		ck_assert_uint_eq(q.retry_cnt, 3);
		ck_assert_uint_eq(q.rnr_retry, 7);
		ck_assert_uint_eq(q.max_rd_atomic, 9);
	}

	/* RTS -> RTS changes what it may and reports it */
	a.qp_access_flags = UR_ACCESS_REMOTE_READ;
	a.min_rnr_timer = 3;
	ck_assert_int_eq(modify_with(qp, &a, UR_QPS_RTS,
				     UR_QP_ACCESS_FLAGS | (t == 0 ? UR_QP_MIN_RNR_TIMER : 0)),
			 0);
	ur_qp_query(qp, &q);
	ck_assert_uint_eq(q.qp_access_flags, UR_ACCESS_REMOTE_READ);
	if (t == 0)
		ck_assert_uint_eq(q.min_rnr_timer, 3);
	ck_assert_uint_eq(q.sq_psn, 0xfffff1); /* not in the mask: unchanged */
}
END_TEST

/* PSNs are 24 bits: the upper bits of what the consumer passes are dropped. */
START_TEST(test_psn_attributes_masked)
{
	struct ur_qp_attr a, q;

	fresh_qp(UR_QPT_RC, UR_QPS_INIT);
	good_attr(&a);
	a.rq_psn = 0xab000010;
	ck_assert_int_eq(modify_with(qp, &a, UR_QPS_RTR, req_mask(UR_QPS_INIT, UR_QPS_RTR, 0)), 0);
	a.sq_psn = 0xff000020;
	ck_assert_int_eq(modify_with(qp, &a, UR_QPS_RTS, req_mask(UR_QPS_RTR, UR_QPS_RTS, 0)), 0);
	ur_qp_query(qp, &q);
	ck_assert_uint_eq(q.rq_psn, 0x000010);
	ck_assert_uint_eq(q.sq_psn, 0x000020);
}
END_TEST

/*
 * RTS -> ERR with posted send and receive WQEs: every one completes with
 * WR_FLUSH_ERR, in posting order, whether or not its packets had left;
 * then RESET empties both queues and nothing more completes.
 */
START_TEST(test_error_flushes_in_order)
{
	enum { NSEND = 12, NRECV = 10, SENT = 3 };
	const int t = _i;
	const enum ur_qp_type type = qp_types[t];
	struct ur_cqe c[CQ_DEPTH];
	struct ur_qp_attr a;
	unsigned n, sent = 0, first_flush = 0;

	qp = make_qp(type);
	good_attr(&a);
	a.av.resolved = type != UR_QPT_UD; /* RC/UC packets really leave, through the pool */
	ck_assert_int_eq(modify_with(qp, &a, UR_QPS_INIT, req_mask(UR_QPS_RESET, UR_QPS_INIT, t)),
			 0);
	for (unsigned i = 0; i < NRECV; i++)
		post_recv(qp, 0x5000 + i);
	ck_assert_int_eq(modify_with(qp, &a, UR_QPS_RTR, req_mask(UR_QPS_INIT, UR_QPS_RTR, t)), 0);
	ck_assert_int_eq(modify_with(qp, &a, UR_QPS_RTS, req_mask(UR_QPS_RTR, UR_QPS_RTS, t)), 0);
	for (unsigned i = 0; i < NSEND; i++)
		post_send(qp, 0x1000 + i, UR_WR_SEND, i % 3 != 1); /* some unsignaled */
	if (type != UR_QPT_UD) {
		/* let a few go: RC waits for their ACKs, UC completes them at once */
		sent = run_engine(qp, SENT);
		ck_assert_uint_eq(sent, SENT);
		ck_assert_uint_eq(host.nsent, SENT);
		if (type == UR_QPT_RC)
			ck_assert_uint_ne(ur_dev_next_deadline(dev), UR_TIME_NEVER); /* ACK timer */
	}
	if (type == UR_QPT_UC) {
		/* the signaled ones among the sent completed successfully */
		n = drain_cq(&scq, c, CQ_DEPTH);
		for (unsigned i = 0, k = 0; i < SENT; i++) {
			if (i % 3 == 1)
				continue;
			ck_assert_uint_eq(c[k].wr_id, 0x1000 + i);
			ck_assert_uint_eq(c[k].status, UR_WC_SUCCESS);
			k++;
			ck_assert_uint_le(k, n);
		}
		ck_assert_uint_eq(n, 2);
		first_flush = SENT;
	}
	ck_assert(ur_cq_empty(&scq));

	ck_assert_int_eq(modify(qp, UR_QPS_ERR, 0), 0);
	ck_assert_uint_eq(ur_qp_state(qp), UR_QPS_ERR);
	ck_assert_uint_eq(ur_dev_next_deadline(dev), UR_TIME_NEVER); /* timers cancelled */

	/* send queue: every unfinished WQE, signaled or not, flushed in order */
	n = drain_cq(&scq, c, CQ_DEPTH);
	ck_assert_uint_eq(n, NSEND - first_flush);
	for (unsigned k = 0; k < n; k++) {
		ck_assert_uint_eq(c[k].wr_id, 0x1000 + first_flush + k);
		ck_assert_uint_eq(c[k].status, UR_WC_WR_FLUSH_ERR);
		ck_assert_uint_eq(c[k].qp_num, QPN);
	}
	/* receive queue likewise */
	n = drain_cq(&rcq, c, CQ_DEPTH);
	ck_assert_uint_eq(n, NRECV);
	for (unsigned k = 0; k < n; k++) {
		ck_assert_uint_eq(c[k].wr_id, 0x5000 + k);
		ck_assert_uint_eq(c[k].status, UR_WC_WR_FLUSH_ERR);
		ck_assert_uint_eq(c[k].opcode, UR_WC_RECV);
		ck_assert_uint_eq(c[k].qp_num, QPN);
	}
	/* the slots are free again */
	ck_assert_uint_eq(atomic_load(&ur_qp_sq(qp)->cons), NSEND);
	ck_assert_uint_eq(atomic_load(&ur_qp_rq(qp)->cons), NRECV);

	/* nothing more leaves, nothing completes twice */
	ck_assert_uint_eq(run_engine(qp, 16), 0);
	now += 10ull * 1000 * 1000 * 1000;
	ur_dev_poll(dev, now);
	ck_assert_uint_eq(ur_dev_tx(dev, now, 16), 0);
	ck_assert(ur_cq_empty(&scq));
	ck_assert(ur_cq_empty(&rcq));
	ck_assert_uint_eq(host.nsent, sent);

	/* WQEs posted while in ERR flush too, once the engine hears the doorbell */
	post_send(qp, 0x2000, UR_WR_SEND, true);
	post_recv(qp, 0x6000);
	run_engine(qp, 16);
	ck_assert_uint_eq(drain_cq(&scq, c, CQ_DEPTH), 1);
	ck_assert_uint_eq(c[0].wr_id, 0x2000);
	ck_assert_uint_eq(c[0].status, UR_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(drain_cq(&rcq, c, CQ_DEPTH), 1);
	ck_assert_uint_eq(c[0].wr_id, 0x6000);
	ck_assert_uint_eq(c[0].status, UR_WC_WR_FLUSH_ERR);

	/* RESET: both queues empty, the whole ring free again */
	ck_assert_int_eq(modify(qp, UR_QPS_RESET, 0), 0);
	ck_assert_uint_eq(ur_qp_state(qp), UR_QPS_RESET);
	ck_assert_uint_eq(atomic_load(&ur_qp_sq(qp)->prod), 0);
	ck_assert_uint_eq(atomic_load(&ur_qp_sq(qp)->cons), 0);
	ck_assert_uint_eq(atomic_load(&ur_qp_rq(qp)->prod), 0);
	ck_assert_uint_eq(atomic_load(&ur_qp_rq(qp)->cons), 0);
	ck_assert_ptr_eq(ur_wq_reserve(ur_qp_sq(qp), 0), ur_wq_slot(ur_qp_sq(qp), 0));
	ck_assert_ptr_nonnull(ur_wq_reserve(ur_qp_sq(qp), ur_wq_size(ur_qp_sq(qp)) - 1));
	ck_assert_ptr_null(ur_wq_reserve(ur_qp_sq(qp), ur_wq_size(ur_qp_sq(qp))));
	ck_assert(ur_cq_empty(&scq));
	ck_assert(ur_cq_empty(&rcq));

	/* and the QP can be brought up again from scratch */
	drive(qp, type, UR_QPS_RTS);
	ck_assert_uint_eq(run_engine(qp, 16), 0);
	ck_assert(ur_cq_empty(&scq));
}
END_TEST

/* Receive WQEs posted in INIT and RTR flush as well when the QP fails early. */
START_TEST(test_error_from_init_flushes_receives)
{
	const int t = _i;
	struct ur_cqe c[8];

	fresh_qp(qp_types[t], UR_QPS_INIT);
	post_recv(qp, 1);
	post_recv(qp, 2);
	ck_assert_int_eq(modify(qp, UR_QPS_ERR, 0), 0);
	ck_assert_uint_eq(drain_cq(&rcq, c, 8), 2);
	ck_assert_uint_eq(c[0].wr_id, 1);
	ck_assert_uint_eq(c[1].wr_id, 2);
	ck_assert_uint_eq(c[0].status, UR_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(c[1].status, UR_WC_WR_FLUSH_ERR);
	ck_assert(ur_cq_empty(&scq));
}
END_TEST

/* RESET from RTS discards posted WQEs without completing them (10.3.1.1). */
START_TEST(test_reset_discards_without_completion)
{
	const int t = _i;

	fresh_qp(qp_types[t], UR_QPS_RTS);
	post_send(qp, 1, UR_WR_SEND, true);
	post_send(qp, 2, UR_WR_SEND, true);
	post_recv(qp, 3);
	ck_assert_int_eq(modify(qp, UR_QPS_RESET, 0), 0);
	ck_assert(ur_cq_empty(&scq));
	ck_assert(ur_cq_empty(&rcq));
	ck_assert_uint_eq(atomic_load(&ur_qp_sq(qp)->prod), 0);
	ck_assert_uint_eq(atomic_load(&ur_qp_rq(qp)->prod), 0);
	ck_assert_uint_eq(ur_dev_next_deadline(dev), UR_TIME_NEVER);
	ck_assert(!ur_dev_tx_pending(dev));
}
END_TEST

/* An RC send error takes the whole QP to ERR: RC never sits in SQE (10.3.1.2). */
START_TEST(test_rc_send_error_goes_to_err)
{
	struct ur_cqe c[4];

	fresh_qp(UR_QPT_RC, UR_QPS_RTS);
	post_send(qp, 7, UR_WR_BIND_MW, true); /* binds no window: MW_BIND_ERR */
	post_send(qp, 8, UR_WR_SEND, true);
	run_engine(qp, 16);
	ck_assert_uint_eq(ur_qp_state(qp), UR_QPS_ERR);
	ck_assert_uint_eq(drain_cq(&scq, c, 4), 2);
	ck_assert_uint_eq(c[0].wr_id, 7);
	ck_assert_uint_eq(c[0].status, UR_WC_MW_BIND_ERR);
	ck_assert_uint_eq(c[0].opcode, UR_WC_BIND_MW);
	ck_assert_uint_eq(c[1].wr_id, 8);
	ck_assert_uint_eq(c[1].status, UR_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(host.nsent, 0);
}
END_TEST

/*
 * UC/UD: a failed send WQE stops the send queue (SQE); SQE -> RTS resumes
 * with the next WQE. The failed one is finished: it must not go out again.
 */
START_TEST(test_sqe_to_rts_resumes_after_failed_wqe)
{
	struct ur_qp_attr a;
	struct ur_cqe c[4];
	const uint8_t *f;

	qp = make_qp(UR_QPT_UC);
	good_attr(&a);
	a.av.resolved = 1;
	ck_assert_int_eq(modify_with(qp, &a, UR_QPS_INIT, req_mask(UR_QPS_RESET, UR_QPS_INIT, 1)),
			 0);
	ck_assert_int_eq(modify_with(qp, &a, UR_QPS_RTR, req_mask(UR_QPS_INIT, UR_QPS_RTR, 1)), 0);
	ck_assert_int_eq(modify_with(qp, &a, UR_QPS_RTS, req_mask(UR_QPS_RTR, UR_QPS_RTS, 1)), 0);

	post_send(qp, 1, UR_WR_RDMA_READ, true); /* UC has no READ */
	run_engine(qp, 16);
	ck_assert_uint_eq(ur_qp_state(qp), UR_QPS_SQE);
	ck_assert_uint_eq(drain_cq(&scq, c, 4), 1);
	ck_assert_uint_eq(c[0].status, UR_WC_LOC_QP_OP_ERR);
	ck_assert_uint_eq(host.nsent, 0);

	ck_assert_int_eq(modify(qp, UR_QPS_RTS, 0), 0);
	post_send(qp, 2, UR_WR_SEND, true);
	run_engine(qp, 16);
	ck_assert_uint_eq(ur_qp_state(qp), UR_QPS_RTS);
	ck_assert_msg(host.nsent == 1, "%u frames sent, want 1", host.nsent);
	/* the one frame is the SEND, first PSN of the queue */
	f = fake_host_frame(&host, 0, NULL) + 14 + 20 + 8;
	ck_assert_msg(f[0] == 0x24, "opcode %#04x (%s), want UC_SEND_ONLY", f[0],
		      ur_opcode_name(f[0]));
	ck_assert_uint_eq(ur_bth_psn((const struct ur_bth *)f), SQ_PSN);
	ck_assert_uint_eq(drain_cq(&scq, c, 4), 1);
	ck_assert_uint_eq(c[0].wr_id, 2);
	ck_assert_uint_eq(c[0].status, UR_WC_SUCCESS);
}
END_TEST

/*
 * UC waits for no ACK: once its messages are out, SQD reports the queue
 * drained; a message only partly sent keeps it draining.
 */
START_TEST(test_uc_sqd_drained_once_sent)
{
	static uint8_t mem[4096];
	struct ur_send_wqe *w;
	struct ur_qp_attr a, q;
	struct ur_mr *mr;

	qp = make_qp(UR_QPT_UC);
	good_attr(&a);
	a.av.resolved = 1;
	a.en_sqd_async_notify = 1;
	ck_assert_int_eq(modify_with(qp, &a, UR_QPS_INIT, req_mask(UR_QPS_RESET, UR_QPS_INIT, 1)),
			 0);
	ck_assert_int_eq(modify_with(qp, &a, UR_QPS_RTR, req_mask(UR_QPS_INIT, UR_QPS_RTR, 1)), 0);
	ck_assert_int_eq(modify_with(qp, &a, UR_QPS_RTS, req_mask(UR_QPS_RTR, UR_QPS_RTS, 1)), 0);
	post_send(qp, 1, UR_WR_SEND, true);
	post_send(qp, 2, UR_WR_RDMA_WRITE, true);
	ck_assert_uint_eq(run_engine(qp, 16), 2);
	host.nevents = 0;
	ck_assert_int_eq(modify_with(qp, &a, UR_QPS_SQD, UR_QP_EN_SQD_ASYNC_NOTIFY), 0);
	ck_assert_uint_eq(count_events(UR_EVENT_SQ_DRAINED), 1);
	ur_qp_query(qp, &q);
	ck_assert_uint_eq(q.sq_draining, 0);

	/* back to RTS; a 3-packet message (MTU 1024) of which one packet left */
	ck_assert_int_eq(modify(qp, UR_QPS_RTS, 0), 0);
	ck_assert_int_eq(ur_dev_reg_mr(dev, (uintptr_t)mem, mem, sizeof(mem), UR_ACCESS_LOCAL_WRITE,
				       PD, &mr),
			 0);
	w = post_send(qp, 3, UR_WR_SEND, true);
	w->length = 3000;
	w->num_sge = 1;
	w->sge[0].addr = (uintptr_t)mem;
	w->sge[0].length = 3000;
	w->sge[0].lkey = mr->key;
	ck_assert_uint_eq(run_engine(qp, 1), 1);
	host.nevents = 0;
	ck_assert_int_eq(modify_with(qp, &a, UR_QPS_SQD, UR_QP_EN_SQD_ASYNC_NOTIFY), 0);
	ck_assert_uint_eq(count_events(UR_EVENT_SQ_DRAINED), 0);
	ur_qp_query(qp, &q);
	ck_assert_uint_eq(q.sq_draining, 1);
	/* SQD finishes what it started */
	ck_assert_uint_eq(run_engine(qp, 16), 2);
	ur_qp_query(qp, &q);
	ck_assert_uint_eq(q.sq_draining, 0);
	ck_assert_uint_eq(drain_cq(&scq, NULL, 8), 3);
	ur_dev_dereg_mr(dev, mr);
}
END_TEST

/* A QP with its work posted, in RTS, rung: one 0-byte WRITE (one packet). */
static struct ur_qp *rts_qp_with_write(uint32_t qpn)
{
	struct ur_qp_init init = {
	    .type = UR_QPT_RC,
	    .qpn = qpn,
	    .send_cq = &scq,
	    .recv_cq = &rcq,
	    .max_send_wr = 4,
	    .max_recv_wr = 4,
	    .host_ctx = &qp_ctx,
	};
	struct ur_qp *q;

	ck_assert_int_eq(ur_qp_create(dev, &init, &q), 0);
	drive(q, UR_QPT_RC, UR_QPS_RTS);
	post_send(q, qpn, UR_WR_RDMA_WRITE, true);
	ur_qp_doorbell(q);
	return q;
}

/*
 * QPs over their peer's cap on unacknowledged packets wait in a FIFO (with
 * a tail, so a thousand of them join in constant time); one that goes
 * away leaves it whole, and room for one packet lets one QP back on the
 * round robin, the oldest.
 */
START_TEST(test_capped_qps_wait_in_order)
{
	struct ur_qp *q[4], *first, *second, *late;
	struct ur_peer *p;

	dev->cfg.max_peer_inflight = 2;
	for (int i = 0; i < 4; i++)
		q[i] = rts_qp_with_write(0x200 + (uint32_t)i);
	p = q[0]->peer; /* one peer: the same destination */
	for (int i = 1; i < 4; i++)
		ck_assert_ptr_eq(q[i]->peer, p);
	ur_dev_poll(dev, now);
	ck_assert_uint_eq(ur_dev_tx(dev, now, 64), 2);
	ck_assert_uint_eq(p->inflight, 2);
	first = p->capped;
	ck_assert_ptr_nonnull(first);
	second = first->capped_next;
	ck_assert_ptr_nonnull(second);
	ck_assert_ptr_null(second->capped_next);
	ck_assert_ptr_eq(p->capped_tail, second);

	/* the last one leaves; a newcomer joins behind the first */
	for (int i = 0; i < 4; i++)
		if (q[i] == second)
			q[i] = NULL;
	ur_qp_destroy(second);
	ck_assert_ptr_eq(p->capped_tail, first);
	ck_assert_ptr_null(first->capped_next);
	late = rts_qp_with_write(0x300);
	ur_dev_poll(dev, now);
	ck_assert_uint_eq(ur_dev_tx(dev, now, 64), 0);
	ck_assert_ptr_eq(first->capped_next, late);
	ck_assert_ptr_eq(p->capped_tail, late);

	/* room for one packet: the oldest goes, the newcomer waits on */
	dev->cfg.max_peer_inflight = 3;
	ur_dev_account(dev, first);
	ck_assert(!first->capped);
	ck_assert_ptr_eq(p->capped, late);
	ck_assert_ptr_eq(p->capped_tail, late);
	ck_assert_uint_eq(ur_dev_tx(dev, now, 64), 1);
	ck_assert_uint_eq(p->inflight, 3);
	ck_assert(late->capped);

	for (int i = 0; i < 4; i++)
		if (q[i])
			ur_qp_destroy(q[i]);
	ur_qp_destroy(late);
	ck_assert_uint_eq(dev->npeers, 0); /* freed with its last QP */
}
END_TEST

/* A UD datagram's destination, resolved: another host on the subnet. */
static const uint8_t far_mac[6] = {0x02, 0, 0, 0, 0, 0x77};
static const uint8_t far_ip[4] = {10, 0, 7, 7};

static void far_av(struct ur_av *av, uint8_t tclass)
{
	memset(av, 0, sizeof(*av));
	memcpy(av->path.smac, my_mac, 6);
	memcpy(av->path.dmac, far_mac, 6);
	ur_gid_from_v4(&av->path.sgid, my_ip);
	ur_gid_from_v4(&av->path.dgid, far_ip);
	av->path.hop_limit = 64;
	av->path.tclass = tclass;
	av->resolved = 1;
}

/*
 * UD sends: each datagram goes where its WQE's address handle says, with a
 * DETH carrying the WR's Q_Key (or the QP's when the WR's has its high bit
 * set) and this QP's number; a datagram longer than the MTU is not sent and
 * completes without error (C10-93.1.1); all complete once transmitted.
 */
START_TEST(test_ud_datagrams)
{
	const uint32_t rqpn = 0x654321;
	struct ur_send_wqe *w;
	struct ur_cqe c[8];
	struct ur_av av;
	const uint8_t *f1;
	uint32_t len1;
	unsigned n;

	fresh_qp(UR_QPT_UD, UR_QPS_RTS);
	far_av(&av, 0x68); /* DSCP 26 */

	w = post_send(qp, 1, UR_WR_SEND, true);
	w->ud_av = &av;
	w->ud_qpn = rqpn;
	w->ud_qkey = 0x22222222;
	w = post_send(qp, 2, UR_WR_SEND_WITH_IMM, true);
	w->ud_av = &av;
	w->ud_qpn = rqpn;
	w->ud_qkey = 0x80000000; /* controlled: the QP's own Q_Key goes out */
	w->imm = 0xefbeadde;
	w->flags |= UR_SEND_INLINE;
	w->length = 3;
	memcpy(w->sge, "abc", 3);
	w = post_send(qp, 3, UR_WR_SEND, true);
	w->ud_av = &av;
	w->ud_qpn = rqpn;
	w->length = 4097; /* above the 4096 MTU: never gathered, never sent */
	w->num_sge = 1;
	w->sge[0].length = 4097;
	w = post_send(qp, 4, UR_WR_SEND, false);
	w->ud_av = &av;
	w->ud_qpn = rqpn + 1;
	w->ud_qkey = 7;

	run_engine(qp, 16);
	ck_assert_uint_eq(ur_qp_state(qp), UR_QPS_RTS);
	ck_assert_uint_eq(host.nsent, 3);
	for (unsigned i = 0; i < 3; i++) {
		const uint8_t *f = fake_host_frame(&host, i, NULL), *ip = f + 14, *udp = ip + 20;
		const struct ur_bth *bth = (const struct ur_bth *)(udp + 8);
		const struct ur_deth *deth = (const struct ur_deth *)(udp + 8 + 12);
		uint32_t dq = i == 2 ? rqpn + 1 : rqpn;

		ck_assert_mem_eq(f, far_mac, 6);
		ck_assert_mem_eq(ip + 16, far_ip, 4);
		ck_assert_uint_eq(ip[1], 0x68 | UR_ECN_ECT0);
		ck_assert_uint_eq(ur_get_be16(udp), ur_roce_udp_sport(0, QPN, dq));
		ck_assert_uint_eq(ur_bth_opcode(bth), i == 1 ? UR_OP_UD_SEND_ONLY_IMM
							       : UR_OP_UD_SEND_ONLY);
		ck_assert_uint_eq(ur_bth_dqpn(bth), dq);
		/* the over-long WQE took no PSN */
		ck_assert_uint_eq(ur_bth_psn(bth), ur_psn_add(SQ_PSN, i));
		ck_assert_uint_eq(ur_bth_pkey(bth), 0xffff);
		ck_assert(!ur_bth_ackreq(bth));
		ck_assert_uint_eq(ur_deth_qkey(deth), i == 0 ? 0x22222222 : i == 1 ? QKEY : 7);
		ck_assert_uint_eq(ur_deth_sqpn(deth), QPN);
	}
	/* immediate, then the inline payload and one pad byte */
	f1 = fake_host_frame(&host, 1, &len1);
	ck_assert_uint_eq(ur_get_be32(f1 + 42 + 20), 0xdeadbeef);
	ck_assert_mem_eq(f1 + 42 + 24, "abc", 3);
	ck_assert_uint_eq(ur_bth_padcnt((const struct ur_bth *)(f1 + 42)), 1);
	ck_assert_uint_eq(len1, 42 + 24 + 4 + UR_ICRC_SIZE);

	n = drain_cq(&scq, c, 8);
	ck_assert_uint_eq(n, 3);
	for (unsigned i = 0; i < n; i++) {
		ck_assert_uint_eq(c[i].wr_id, i + 1);
		ck_assert_uint_eq(c[i].status, UR_WC_SUCCESS);
		ck_assert_uint_eq(c[i].opcode, UR_WC_SEND);
	}
	ck_assert_uint_eq(ur_dev_counters(dev)[UR_CTR_ud_send_too_long], 1);
	ck_assert_uint_eq(ur_dev_counters(dev)[UR_CTR_tx_packets], 3);
}
END_TEST

/*
 * Management datagrams as Soft-RoCE sends them to QP1 (the CM's GSI QP:
 * UD SEND Only, DETH Q_Key 0x80010000, a 256-byte MAD) parse cleanly and
 * are counted as for a QP that does not exist here, never misread.
 */
/*
 * A host whose buffers are shorter than a packet at the path MTU (a port
 * set up too small) never has the engine write past them: the datagram is
 * lost, as on a link that drops it, and counted; nothing stalls the QP.
 */
START_TEST(test_buffer_shorter_than_the_path_mtu)
{
	struct ur_send_wqe *w;
	struct ur_cqe c[4];
	struct ur_av av;
	uint64_t *ctr = ur_dev_counters(dev);

	fresh_qp(UR_QPT_UD, UR_QPS_RTS);
	far_av(&av, 0);
	/* 2048 bytes: a UD packet at the 4096 MTU needs 42 + 12 + 8 + 4096 + 4 */
	host.opt.cap = 2048;
	for (uint64_t id = 1; id <= 3; id++) {
		/* buffers that hold it for the third: it leaves */
		if (id == 3)
			host.opt.cap = 0;
		w = post_send(qp, id, UR_WR_SEND, true);
		w->ud_av = &av;
		w->ud_qpn = 0x654321;
		w->ud_qkey = 0x22222222;
		run_engine(qp, 16);
		ck_assert_uint_eq(host.nsent, id == 3);
		ck_assert_uint_eq(ctr[UR_CTR_tx_buffer_too_small], id < 3 ? id : 2);
		ck_assert_uint_eq(ctr[UR_CTR_tx_packets], id == 3);
		ck_assert_uint_eq(drain_cq(&scq, c, 4), 1);
		ck_assert_uint_eq(c[0].status, UR_WC_SUCCESS);
		ck_assert_uint_eq(ur_qp_state(qp), UR_QPS_RTS);
	}
}
END_TEST

START_TEST(test_gsi_datagram_parses_and_is_counted)
{
	const struct ur_opcode_info *op = ur_opcode_get(UR_OP_UD_SEND_ONLY);
	static uint8_t frame[UR_FRAME_MAX];
	struct ur_frame_tmpl t;
	struct ur_path path;
	struct ur_bth *bth;
	struct ur_deth *deth;
	struct ur_pkt pkt;
	uint32_t roce_len = op->hdr_len + 256 + UR_ICRC_SIZE, len;
	unsigned pre;

	fresh_qp(UR_QPT_UD, UR_QPS_RTS);
	memset(&path, 0, sizeof(path));
	memcpy(path.smac, peer_mac, 6);
	memcpy(path.dmac, my_mac, 6);
	ur_gid_from_v4(&path.sgid, peer_ip);
	ur_gid_from_v4(&path.dgid, my_ip);
	path.hop_limit = 64;
	path.udp_sport = 0xd1f3;
	ur_frame_tmpl_init(&t, &path);
	pre = ur_frame_tmpl_emit(&t, frame, roce_len, 0, 1);
	memset(frame + pre, 0, roce_len);
	bth = (struct ur_bth *)(frame + pre);
	ur_bth_set_opcode(bth, UR_OP_UD_SEND_ONLY);
	ur_bth_set_pkey(bth, 0xffff);
	ur_bth_set_dqpn(bth, 1);
	ur_bth_set_psn(bth, 0x123456);
	deth = (struct ur_deth *)(frame + pre + op->off_deth);
	ur_deth_set_qkey(deth, 0x80010000);
	ur_deth_set_sqpn(deth, 1);
	memset(frame + pre + op->hdr_len, 0x01, 256); /* a MAD: base version 1 ... */
	len = pre + roce_len;
	ur_frame_seal(&t, frame, len);

	ck_assert_int_eq(ur_frame_parse(&pkt, frame, len), UR_PARSE_OK);
	ck_assert_uint_eq(pkt.dqpn, 1);
	ck_assert_uint_eq(pkt.payload_len, 256);
	ck_assert_uint_eq(ur_deth_qkey((const struct ur_deth *)((const uint8_t *)pkt.bth +
								  pkt.op->off_deth)),
			  0x80010000);
	ur_dev_rx(dev, frame, len, now);
	ck_assert_uint_eq(ur_dev_counters(dev)[UR_CTR_rx_drop_unknown_qp], 1);
	ck_assert_uint_eq(ur_dev_counters(dev)[UR_CTR_rx_packets], 0);
	ck_assert(ur_cq_empty(&rcq));
}
END_TEST

/*
 * SQD -> SQD may change the primary path (AV) of a connected QP: packets
 * after the return to RTS go to the new destination, which ur_qp_query shows.
 */
START_TEST(test_sqd_path_change_applies)
{
	static const uint8_t new_ip[4] = {10, 0, 9, 9};
	static const uint8_t new_mac[6] = {0x02, 0, 0, 0, 0, 0x99};
	struct ur_qp_attr a, q;
	struct ur_cqe c;
	const uint8_t *ip;

	qp = make_qp(UR_QPT_RC);
	good_attr(&a);
	a.av.resolved = 1;
	ck_assert_int_eq(modify_with(qp, &a, UR_QPS_INIT, req_mask(UR_QPS_RESET, UR_QPS_INIT, 0)),
			 0);
	ck_assert_int_eq(modify_with(qp, &a, UR_QPS_RTR, req_mask(UR_QPS_INIT, UR_QPS_RTR, 0)), 0);
	ck_assert_int_eq(modify_with(qp, &a, UR_QPS_RTS, req_mask(UR_QPS_RTR, UR_QPS_RTS, 0)), 0);
	ck_assert_int_eq(modify(qp, UR_QPS_SQD, 0), 0);

	ur_gid_from_v4(&a.av.path.dgid, new_ip);
	memcpy(a.av.path.dmac, new_mac, 6);
	ck_assert_int_eq(modify_with(qp, &a, UR_QPS_SQD, UR_QP_AV), 0);
	ur_qp_query(qp, &q);
	ck_assert_mem_eq(q.av.path.dgid.raw + 12, new_ip, 4);
	ck_assert_int_eq(modify(qp, UR_QPS_RTS, 0), 0);

	post_send(qp, 1, UR_WR_SEND, true);
	run_engine(qp, 1);
	ck_assert_uint_eq(host.nsent, 1);
	ip = fake_host_frame(&host, 0, NULL) + 14;
	ck_assert_mem_eq(fake_host_frame(&host, 0, NULL), new_mac, 6);
	ck_assert_mem_eq(ip + 16, new_ip, 4);
	ck_assert_int_eq(modify(qp, UR_QPS_ERR, 0), 0);
	/* the SEND still waiting for its ACK is flushed */
	ck_assert_uint_eq(drain_cq(&scq, &c, 1), 1);
	ck_assert_uint_eq(c.wr_id, 1);
	ck_assert_uint_eq(c.status, UR_WC_WR_FLUSH_ERR);
}
END_TEST

/* RTS -> SQD with nothing outstanding reports the drain when asked to (11.6.3). */
START_TEST(test_sqd_drained_event)
{
	struct ur_qp_attr a;

	fresh_qp(UR_QPT_RC, UR_QPS_RTS);
	good_attr(&a);
	a.en_sqd_async_notify = 1;
	host.nevents = 0;
	ck_assert_int_eq(modify_with(qp, &a, UR_QPS_SQD, UR_QP_EN_SQD_ASYNC_NOTIFY), 0);
	ck_assert_uint_eq(count_events(UR_EVENT_SQ_DRAINED), 1);
	ck_assert_ptr_eq(host.event_obj[0], &qp_ctx);

	fresh_qp(UR_QPT_RC, UR_QPS_RTS);
	host.nevents = 0;
	ck_assert_int_eq(modify(qp, UR_QPS_SQD, 0), 0);
	ck_assert_uint_eq(count_events(UR_EVENT_SQ_DRAINED), 0);
}
END_TEST

/* Creation refuses bad parameters and duplicate QP numbers. */
START_TEST(test_create_checks)
{
	struct ur_qp_init init = {
	    .type = UR_QPT_RC,
	    .qpn = 0x42,
	    .send_cq = &scq,
	    .recv_cq = &rcq,
	};
	struct ur_qp *a, *b;

	ck_assert_int_eq(ur_qp_create(dev, &init, &a), 0);
	ck_assert_int_eq(ur_qp_create(dev, &init, &b), -EEXIST);
	init.qpn = 1; /* QP0 and QP1 are special */
	ck_assert_int_eq(ur_qp_create(dev, &init, &b), -EINVAL);
	init.qpn = 0x1000000;
	ck_assert_int_eq(ur_qp_create(dev, &init, &b), -EINVAL);
	init.qpn = 0x43;
	init.type = (enum ur_qp_type)5;
	ck_assert_int_eq(ur_qp_create(dev, &init, &b), -EINVAL);
	init.type = UR_QPT_UC;
	init.max_send_wr = UR_MAX_WR + 1;
	ck_assert_int_eq(ur_qp_create(dev, &init, &b), -EINVAL);
	init.max_send_wr = 1;
	init.send_cq = NULL;
	ck_assert_int_eq(ur_qp_create(dev, &init, &b), -EINVAL);
	ur_qp_destroy(a);
	init.send_cq = &scq;
	init.qpn = 0x42;
	ck_assert_int_eq(ur_qp_create(dev, &init, &a), 0); /* the number is free again */
	ur_qp_destroy(a);
}
END_TEST

/* A refusal names the attribute behind it, as the provider's debug log shows. */
START_TEST(test_refusal_reasons)
{
	struct ur_qp_attr a;
	char why[384];

	fresh_qp(UR_QPT_RC, UR_QPS_INIT);
	good_attr(&a);
	a.qp_state = UR_QPS_RTR;
	ck_assert_int_eq(ur_qp_modify_check(qp, &a,
					    UR_QP_STATE | UR_QP_AV | UR_QP_PATH_MTU |
						UR_QP_DEST_QPN | UR_QP_MAX_DEST_RD_ATOMIC |
						UR_QP_MIN_RNR_TIMER,
					    why, sizeof(why)),
			 -EINVAL);
	ck_assert_msg(strstr(why, "lacks IBV_QP_RQ_PSN") && strstr(why, "INIT -> RTR"), "%s", why);
	ck_assert_int_eq(ur_qp_modify_check(qp, &a,
					    UR_QP_STATE | UR_QP_AV | UR_QP_PATH_MTU |
						UR_QP_DEST_QPN | UR_QP_RQ_PSN |
						UR_QP_MAX_DEST_RD_ATOMIC | UR_QP_MIN_RNR_TIMER |
						UR_QP_SQ_PSN | UR_QP_TIMEOUT,
					    why, sizeof(why)),
			 -EINVAL);
	ck_assert_msg(strstr(why, "has IBV_QP_TIMEOUT|IBV_QP_SQ_PSN, not allowed"), "%s", why);
	a.max_dest_rd_atomic = 200;
	ck_assert_int_eq(ur_qp_modify_check(qp, &a,
					    UR_QP_STATE | UR_QP_AV | UR_QP_PATH_MTU |
						UR_QP_DEST_QPN | UR_QP_RQ_PSN |
						UR_QP_MAX_DEST_RD_ATOMIC | UR_QP_MIN_RNR_TIMER,
					    why, sizeof(why)),
			 -EINVAL);
	ck_assert_msg(strstr(why, "max_dest_rd_atomic 200 is above"), "%s", why);
	a.qp_state = UR_QPS_SQD;
	ck_assert_int_eq(ur_qp_modify_check(qp, &a, UR_QP_STATE, why, sizeof(why)), -EINVAL);
	ck_assert_msg(strstr(why, "no transition INIT -> SQD"), "%s", why);
	/* a NULL buffer is allowed: ur_qp_modify passes none */
	ck_assert_int_eq(ur_qp_modify_check(qp, &a, UR_QP_STATE, NULL, 0), -EINVAL);
	a.qp_state = UR_QPS_ERR;
	ck_assert_int_eq(ur_qp_modify_check(qp, &a, UR_QP_STATE, why, sizeof(why)), 0);
}
END_TEST

START_TEST(test_state_names)
{
	static const char *const names[UR_QPS_COUNT] = {"RESET", "INIT", "RTR", "RTS",
							"SQD",	 "SQE",	 "ERR"};

	for (int s = 0; s < UR_QPS_COUNT; s++)
		ck_assert_str_eq(ur_qp_state_name((enum ur_qp_state)s), names[s]);
	ck_assert_str_eq(ur_qp_state_name(UR_QPS_COUNT), "?");
	ck_assert_str_eq(ur_wc_status_name(UR_WC_WR_FLUSH_ERR), "WR_FLUSH_ERR");
	ck_assert_str_eq(ur_wc_status_name(UR_WC_GENERAL_ERR), "GENERAL_ERR");
	ck_assert_str_eq(ur_wc_status_name(UR_WC_STATUS_COUNT), "?");
}
END_TEST

static Suite *qp_state_suite(void)
{
	Suite *s = suite_create("qp_state");
	TCase *tc = tcase_create("transitions");
	TCase *tf = tcase_create("flush");

	tcase_add_checked_fixture(tc, dev_setup, dev_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_transition, 0, 3 * UR_QPS_COUNT * UR_QPS_COUNT);
	tcase_add_loop_test(tc, test_modify_without_state, 0, 3);
	tcase_add_test(tc, test_bad_target_state);
	tcase_add_loop_test(tc, test_out_of_range_attributes, 0, 3);
	tcase_add_test(tc, test_rd_atomic_device_limit);
	tcase_add_loop_test(tc, test_query_reports_what_was_set, 0, 3);
	tcase_add_test(tc, test_psn_attributes_masked);
	tcase_add_test(tc, test_sqd_drained_event);
	tcase_add_test(tc, test_create_checks);
	tcase_add_test(tc, test_state_names);
	tcase_add_test(tc, test_refusal_reasons);
	suite_add_tcase(s, tc);

	tcase_add_checked_fixture(tf, dev_setup, dev_teardown);
	tcase_set_timeout(tf, 120);
	tcase_add_loop_test(tf, test_error_flushes_in_order, 0, 3);
	tcase_add_loop_test(tf, test_error_from_init_flushes_receives, 0, 3);
	tcase_add_loop_test(tf, test_reset_discards_without_completion, 0, 3);
	tcase_add_test(tf, test_rc_send_error_goes_to_err);
	tcase_add_test(tf, test_sqe_to_rts_resumes_after_failed_wqe);
	tcase_add_test(tf, test_sqd_path_change_applies);
	tcase_add_test(tf, test_ud_datagrams);
	tcase_add_test(tf, test_capped_qps_wait_in_order);
	tcase_add_test(tf, test_uc_sqd_drained_once_sent);
	tcase_add_test(tf, test_buffer_shorter_than_the_path_mtu);
	tcase_add_test(tf, test_gsi_datagram_parses_and_is_counted);
	suite_add_tcase(s, tf);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	sr = srunner_create(qp_state_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
