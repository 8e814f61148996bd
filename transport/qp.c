/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * QP life cycle: creation, the modify state machine of IBTA 10.3.1
 * (legal transitions and the attributes each requires or allows), the
 * error state with its flushes, and completion posting.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ack.h"
#include "doorbell.h"
#include "mw.h"
#include "psn.h"
#include "peer.h"
#include "qp.h"
#include "qp_error.h"
#include "rtx.h"
#include "sr.h"

static const char *const state_names[UR_QPS_COUNT] = {"RESET", "INIT", "RTR", "RTS",
						      "SQD",   "SQE",  "ERR"};

const char *ur_qp_state_name(enum ur_qp_state s)
{
	return (unsigned)s < UR_QPS_COUNT ? state_names[s] : "?";
}

static const char *const status_names[UR_WC_STATUS_COUNT] = {
	"SUCCESS",      "LOC_LEN_ERR",       "LOC_QP_OP_ERR",    "LOC_EEC_OP_ERR",
	"LOC_PROT_ERR", "WR_FLUSH_ERR",      "MW_BIND_ERR",      "BAD_RESP_ERR",
	"LOC_ACCESS_ERR", "REM_INV_REQ_ERR", "REM_ACCESS_ERR",   "REM_OP_ERR",
	"RETRY_EXC_ERR", "RNR_RETRY_EXC_ERR", "LOC_RDD_VIOL_ERR", "REM_INV_RD_REQ_ERR",
	"REM_ABORT_ERR", "INV_EECN_ERR",     "INV_EEC_STATE_ERR", "FATAL_ERR",
	"RESP_TIMEOUT_ERR", "GENERAL_ERR",
};

const char *ur_wc_status_name(enum ur_wc_status s)
{
	return (unsigned)s < UR_WC_STATUS_COUNT ? status_names[s] : "?";
}

/* Required and optional attributes per transition and service (table 91 of 11.2.4.2). */
struct transition {
	bool valid;
	uint32_t req[5]; /* RC, UC, UD, XRC initiator, XRC target */
	uint32_t opt[5];
};

/*
 * The XRC columns are RC's less what their half of a connection has no
 * use for (as Linux's ib_modify_qp_is_ok() has them): an initiator has no
 * responder, a target sends no requests.
 */
#define XRC_INI_NOT (UR_QP_MAX_DEST_RD_ATOMIC | UR_QP_MIN_RNR_TIMER)
#define XRC_TGT_NOT (UR_QP_RETRY_CNT | UR_QP_RNR_RETRY | UR_QP_MAX_QP_RD_ATOMIC | UR_QP_RATE_LIMIT)
#define RC_UC_UD(rc, uc, ud) {(rc), (uc), (ud), (rc) & ~XRC_INI_NOT, (rc) & ~XRC_TGT_NOT}
#define ALL(m) RC_UC_UD(m, m, m)

static const struct transition transitions[UR_QPS_COUNT][UR_QPS_COUNT] = {
	[UR_QPS_RESET][UR_QPS_INIT] = {
		.valid = true,
		.req = RC_UC_UD(UR_QP_PKEY_INDEX | UR_QP_PORT | UR_QP_ACCESS_FLAGS,
				UR_QP_PKEY_INDEX | UR_QP_PORT | UR_QP_ACCESS_FLAGS,
				UR_QP_PKEY_INDEX | UR_QP_PORT | UR_QP_QKEY),
	},
	[UR_QPS_INIT][UR_QPS_INIT] = {
		.valid = true,
		.opt = RC_UC_UD(UR_QP_PKEY_INDEX | UR_QP_PORT | UR_QP_ACCESS_FLAGS,
				UR_QP_PKEY_INDEX | UR_QP_PORT | UR_QP_ACCESS_FLAGS,
				UR_QP_PKEY_INDEX | UR_QP_PORT | UR_QP_QKEY),
	},
	[UR_QPS_INIT][UR_QPS_RTR] = {
		.valid = true,
		.req = RC_UC_UD(UR_QP_AV | UR_QP_PATH_MTU | UR_QP_DEST_QPN | UR_QP_RQ_PSN |
					UR_QP_MAX_DEST_RD_ATOMIC | UR_QP_MIN_RNR_TIMER,
				UR_QP_AV | UR_QP_PATH_MTU | UR_QP_DEST_QPN | UR_QP_RQ_PSN, 0),
		.opt = RC_UC_UD(UR_QP_ALT_PATH | UR_QP_ACCESS_FLAGS | UR_QP_PKEY_INDEX,
				UR_QP_ALT_PATH | UR_QP_ACCESS_FLAGS | UR_QP_PKEY_INDEX,
				UR_QP_PKEY_INDEX | UR_QP_QKEY),
	},
	[UR_QPS_RTR][UR_QPS_RTS] = {
		.valid = true,
		.req = RC_UC_UD(UR_QP_SQ_PSN | UR_QP_TIMEOUT | UR_QP_RETRY_CNT | UR_QP_RNR_RETRY |
					UR_QP_MAX_QP_RD_ATOMIC,
				UR_QP_SQ_PSN, UR_QP_SQ_PSN),
		.opt = RC_UC_UD(UR_QP_CUR_STATE | UR_QP_ALT_PATH | UR_QP_ACCESS_FLAGS |
					UR_QP_MIN_RNR_TIMER | UR_QP_PATH_MIG_STATE | UR_QP_RATE_LIMIT,
				UR_QP_CUR_STATE | UR_QP_ALT_PATH | UR_QP_ACCESS_FLAGS |
					UR_QP_PATH_MIG_STATE | UR_QP_RATE_LIMIT,
				UR_QP_CUR_STATE | UR_QP_QKEY | UR_QP_RATE_LIMIT),
	},
	[UR_QPS_RTS][UR_QPS_RTS] = {
		.valid = true,
		.opt = RC_UC_UD(UR_QP_CUR_STATE | UR_QP_ACCESS_FLAGS | UR_QP_ALT_PATH |
					UR_QP_PATH_MIG_STATE | UR_QP_MIN_RNR_TIMER | UR_QP_RATE_LIMIT,
				UR_QP_CUR_STATE | UR_QP_ACCESS_FLAGS | UR_QP_ALT_PATH |
					UR_QP_PATH_MIG_STATE | UR_QP_RATE_LIMIT,
				UR_QP_CUR_STATE | UR_QP_QKEY | UR_QP_RATE_LIMIT),
	},
	[UR_QPS_RTS][UR_QPS_SQD] = {
		.valid = true,
		.opt = ALL(UR_QP_EN_SQD_ASYNC_NOTIFY),
	},
	[UR_QPS_SQD][UR_QPS_RTS] = {
		.valid = true,
		.opt = RC_UC_UD(UR_QP_CUR_STATE | UR_QP_ALT_PATH | UR_QP_ACCESS_FLAGS |
					UR_QP_MIN_RNR_TIMER | UR_QP_PATH_MIG_STATE,
				UR_QP_CUR_STATE | UR_QP_ALT_PATH | UR_QP_ACCESS_FLAGS |
					UR_QP_PATH_MIG_STATE,
				UR_QP_CUR_STATE | UR_QP_QKEY),
	},
	[UR_QPS_SQD][UR_QPS_SQD] = {
		.valid = true,
		.opt = RC_UC_UD(UR_QP_PKEY_INDEX | UR_QP_PORT | UR_QP_AV | UR_QP_ACCESS_FLAGS |
					UR_QP_TIMEOUT | UR_QP_RETRY_CNT | UR_QP_RNR_RETRY |
					UR_QP_MAX_QP_RD_ATOMIC | UR_QP_MAX_DEST_RD_ATOMIC |
					UR_QP_ALT_PATH | UR_QP_MIN_RNR_TIMER | UR_QP_PATH_MIG_STATE,
				UR_QP_PKEY_INDEX | UR_QP_PORT | UR_QP_AV | UR_QP_ACCESS_FLAGS |
					UR_QP_ALT_PATH | UR_QP_PATH_MIG_STATE,
				UR_QP_PKEY_INDEX | UR_QP_QKEY),
	},
	[UR_QPS_SQE][UR_QPS_RTS] = {
		.valid = true,
		.opt = RC_UC_UD(0, UR_QP_CUR_STATE | UR_QP_ACCESS_FLAGS, UR_QP_CUR_STATE | UR_QP_QKEY),
	},
};

/* The verbs names of the attribute mask bits, for the reasons below. */
static const char *const mask_names[32] = {
    [0] = "IBV_QP_STATE",
    [1] = "IBV_QP_CUR_STATE",
    [2] = "IBV_QP_EN_SQD_ASYNC_NOTIFY",
    [3] = "IBV_QP_ACCESS_FLAGS",
    [4] = "IBV_QP_PKEY_INDEX",
    [5] = "IBV_QP_PORT",
    [6] = "IBV_QP_QKEY",
    [7] = "IBV_QP_AV",
    [8] = "IBV_QP_PATH_MTU",
    [9] = "IBV_QP_TIMEOUT",
    [10] = "IBV_QP_RETRY_CNT",
    [11] = "IBV_QP_RNR_RETRY",
    [12] = "IBV_QP_RQ_PSN",
    [13] = "IBV_QP_MAX_QP_RD_ATOMIC",
    [14] = "IBV_QP_ALT_PATH",
    [15] = "IBV_QP_MIN_RNR_TIMER",
    [16] = "IBV_QP_SQ_PSN",
    [17] = "IBV_QP_MAX_DEST_RD_ATOMIC",
    [18] = "IBV_QP_PATH_MIG_STATE",
    [19] = "IBV_QP_CAP",
    [20] = "IBV_QP_DEST_QPN",
    [25] = "IBV_QP_RATE_LIMIT",
};

/* "IBV_QP_AV|IBV_QP_RQ_PSN" for the bits of `mask` */
static void mask_str(uint32_t mask, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (unsigned b = 0; b < 32 && n < len; b++) {
		if (!(mask & (1u << b)))
			continue;
		if (mask_names[b])
			n +=
			    (size_t)snprintf(buf + n, len - n, "%s%s", n ? "|" : "", mask_names[b]);
		else
			n += (size_t)snprintf(buf + n, len - n, "%sbit %u", n ? "|" : "", b);
	}
}

static int refuse(char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int refuse(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (why && len) {
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int transition_check(const struct ur_qp *qp, enum ur_qp_state cur, enum ur_qp_state next,
			    uint32_t mask, char *why, size_t len)
{
	unsigned t = qp->svc->column;
	const struct transition *tr;
	char bits[320];
	uint32_t extra;

	mask &= ~UR_QP_STATE;
	/* Any state may go to RESET or ERR with no other attribute (10.3.1). */
	if (next == UR_QPS_RESET || next == UR_QPS_ERR) {
		extra = mask & ~UR_QP_CUR_STATE;
		if (!extra)
			return 0;
		mask_str(extra, bits, sizeof(bits));
		return refuse(why, len, "attribute mask has %s, not allowed for %s -> %s", bits,
			      ur_qp_state_name(cur), ur_qp_state_name(next));
	}
	tr = &transitions[cur][next];
	if (!tr->valid || (qp->svc->acknowledged && cur == UR_QPS_SQE))
		return refuse(why, len, "no transition %s -> %s for an %s QP (IBTA 10.3.1)",
			      ur_qp_state_name(cur), ur_qp_state_name(next), qp->svc->name);
	if ((mask & tr->req[t]) != tr->req[t]) {
		mask_str(tr->req[t] & ~mask, bits, sizeof(bits));
		return refuse(
		    why, len,
		    "attribute mask lacks %s, required for %s -> %s of an %s QP (IBTA table 91)",
		    bits, ur_qp_state_name(cur), ur_qp_state_name(next), qp->svc->name);
	}
	extra = mask & ~(tr->req[t] | tr->opt[t]);
	if (extra) {
		mask_str(extra, bits, sizeof(bits));
		return refuse(
		    why, len,
		    "attribute mask has %s, not allowed for %s -> %s of an %s QP (IBTA table 91)",
		    bits, ur_qp_state_name(cur), ur_qp_state_name(next), qp->svc->name);
	}
	return 0;
}

static int check_attr(const struct ur_qp *qp, const struct ur_qp_attr *a, uint32_t mask, char *why,
		      size_t len)
{
	const uint32_t access = UR_ACCESS_LOCAL_WRITE | UR_ACCESS_REMOTE_WRITE |
				UR_ACCESS_REMOTE_READ | UR_ACCESS_REMOTE_ATOMIC | UR_ACCESS_MW_BIND |
				UR_ACCESS_RELAXED_ORDERING;
	const unsigned max_rd = qp->dev->cfg.max_qp_rd_atom;

	if ((mask & UR_QP_PATH_MTU) && (a->path_mtu < 1 || a->path_mtu > 5))
		return refuse(why, len, "path_mtu %u is not an IBV_MTU_* value (1-5)", a->path_mtu);
	if ((mask & UR_QP_PKEY_INDEX) && a->pkey_index != 0)
		return refuse(why, len, "pkey_index %u: the port has one P_Key, index 0",
			      a->pkey_index);
	if ((mask & UR_QP_PORT) && a->port_num != 1)
		return refuse(why, len, "port_num %u: the device has port 1 only", a->port_num);
	if ((mask & UR_QP_ACCESS_FLAGS) && (a->qp_access_flags & ~access))
		return refuse(why, len, "qp_access_flags %#x has unknown bits %#x",
			      a->qp_access_flags, a->qp_access_flags & ~access);
	/*
	 * Responder resources are memory this QP must really hold (9.7.5.1.2):
	 * more than the device advertises is refused, as mlx5 does. A larger
	 * max_rd_atomic is not: see copy_attr.
	 */
	if ((mask & UR_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > max_rd)
		return refuse(why, len,
			      "max_dest_rd_atomic %u is above the device's max_qp_rd_atom %u",
			      a->max_dest_rd_atomic, max_rd);
	if ((mask & UR_QP_TIMEOUT) && a->timeout > 31)
		return refuse(why, len, "timeout %u is above 31", a->timeout);
	if ((mask & UR_QP_RETRY_CNT) && a->retry_cnt > 7)
		return refuse(why, len, "retry_cnt %u is above 7", a->retry_cnt);
	if ((mask & UR_QP_RNR_RETRY) && a->rnr_retry > 7)
		return refuse(why, len, "rnr_retry %u is above 7", a->rnr_retry);
	if ((mask & UR_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return refuse(why, len, "min_rnr_timer %u is above 31", a->min_rnr_timer);
	if ((mask & UR_QP_DEST_QPN) && a->dest_qp_num > UR_PSN_MASK)
		return refuse(why, len, "dest_qp_num %#x is wider than 24 bits", a->dest_qp_num);
	if ((mask & UR_QP_CUR_STATE) && a->cur_qp_state != qp_state(qp))
		return refuse(why, len, "cur_qp_state %s, but the QP is in %s",
			      ur_qp_state_name(a->cur_qp_state), ur_qp_state_name(qp_state(qp)));
	return 0;
}

/*
 * What an XRC QP ignores of a modify: the attributes of the half of a
 * connection it is not. Linux drops them before any driver sees them
 * (modify_qp_mask() in uverbs_cmd.c), and programs written for mlx5, as
 * perftest's XRC mode, pass them.
 */
static uint32_t xrc_ignored(const struct ur_qp *qp)
{
	if (qp->svc->xrc_ini)
		return UR_QP_MAX_DEST_RD_ATOMIC | UR_QP_MIN_RNR_TIMER;
	if (qp->svc->xrc_tgt)
		return UR_QP_MAX_QP_RD_ATOMIC | UR_QP_RETRY_CNT | UR_QP_RNR_RETRY;
	return 0;
}

int ur_qp_modify_check(const struct ur_qp *qp, const struct ur_qp_attr *attr, uint32_t mask,
		       char *why, size_t len)
{
	enum ur_qp_state cur = qp_state(qp);
	enum ur_qp_state next = (mask & UR_QP_STATE) ? attr->qp_state : cur;
	int err;

	if ((unsigned)next >= UR_QPS_COUNT)
		return refuse(why, len, "qp_state %u is not a QP state", (unsigned)next);
	mask &= ~xrc_ignored(qp);
	err = transition_check(qp, cur, next, mask, why, len);
	if (err)
		return err;
	return check_attr(qp, attr, mask, why, len);
}

static void copy_attr(struct ur_qp *qp, const struct ur_qp_attr *a, uint32_t mask)
{
	struct ur_qp_attr *q = &qp->attr;

	if (mask & UR_QP_ACCESS_FLAGS)
		q->qp_access_flags = a->qp_access_flags;
	if (mask & UR_QP_PKEY_INDEX)
		q->pkey_index = a->pkey_index;
	if (mask & UR_QP_PORT)
		q->port_num = a->port_num;
	if (mask & UR_QP_QKEY)
		q->qkey = a->qkey;
	if (mask & UR_QP_AV)
		q->av = a->av;
	if (mask & UR_QP_PATH_MTU)
		q->path_mtu = a->path_mtu;
	if (mask & UR_QP_TIMEOUT)
		q->timeout = a->timeout;
	if (mask & UR_QP_RETRY_CNT)
		q->retry_cnt = a->retry_cnt;
	if (mask & UR_QP_RNR_RETRY)
		q->rnr_retry = a->rnr_retry;
	if (mask & UR_QP_RQ_PSN)
		q->rq_psn = a->rq_psn & UR_PSN_MASK;
	if (mask & UR_QP_SQ_PSN)
		q->sq_psn = a->sq_psn & UR_PSN_MASK;
	/*
	 * max_rd_atomic is the peer's responder resources, which the requester
	 * must never exceed; perftest passes the peer's max_qp_rd_atom (128 for
	 * Soft-RoCE) unchecked against ours. rxe and mlx5 refuse a value above
	 * their own limit; uroce takes it and keeps no more outstanding than its
	 * initiator depth, since a requester with fewer READs and atomics in
	 * flight than allowed is always correct. ur_qp_query reports the value
	 * in force.
	 */
	if (mask & UR_QP_MAX_QP_RD_ATOMIC)
		q->max_rd_atomic = (uint8_t)UR_MIN(a->max_rd_atomic, qp->dev->cfg.max_qp_init_rd_atom);
	if (mask & UR_QP_MAX_DEST_RD_ATOMIC)
		q->max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & UR_QP_MIN_RNR_TIMER)
		q->min_rnr_timer = a->min_rnr_timer;
	if (mask & UR_QP_DEST_QPN)
		q->dest_qp_num = a->dest_qp_num;
	if (mask & UR_QP_EN_SQD_ASYNC_NOTIFY)
		q->en_sqd_async_notify = a->en_sqd_async_notify;
	if (mask & UR_QP_RATE_LIMIT)
		q->rate_limit = a->rate_limit;
}

static int alloc_resources(struct ur_qp *qp, uint32_t n)
{
	struct ur_resp_res *res = NULL;

	if (n == qp->resp.nres)
		return 0;
	if (n) {
		res = calloc(n, sizeof(*res));
		if (!res)
			return -ENOMEM;
	}
	free(qp->resp.res);
	qp->resp.res = res;
	qp->resp.nres = n;
	qp->resp.res_head = qp->resp.res_tail = 0;
	return 0;
}

static void reset_state(struct ur_qp *qp)
{
	struct ur_dev *dev = qp->dev;

	ur_qp_cancel_timers(qp);
	ur_dev_unschedule(dev, qp);
	ur_peer_uncap(qp);
	memset(&qp->req, 0, offsetof(struct ur_requester, retx));
	ur_dev_account(dev, qp);
	qp->resp.epsn = qp->resp.msn = 0;
	qp->resp.nak_sent = false;
	qp->resp.in_msg = 0;
	qp->resp.uc_drop = false;
	qp->resp.have_rwqe = false;
	qp->resp.ack.pending = false;
	qp->resp.error = false;
	for (uint32_t i = 0; i < qp->resp.nres; i++)
		memset(&qp->resp.res[i], 0, sizeof(qp->resp.res[i]));
	qp->resp.res_head = qp->resp.res_tail = 0;
	/* RESET discards every WQE without completing it (10.3.1.1) */
	atomic_store_explicit(&qp->sq.prod, 0, memory_order_relaxed);
	atomic_store_explicit(&qp->sq.cons, 0, memory_order_release);
	atomic_store_explicit(&qp->rq.prod, 0, memory_order_relaxed);
	atomic_store_explicit(&qp->rq.cons, 0, memory_order_release);
	ur_cc_reset(qp);
	qp->error_logged = false;
	qp->resp.rq_taken = qp->resp.rq_done = 0;
	qp->rtx->reset(qp);
}

static void enter_rtr(struct ur_qp *qp)
{
	uint32_t mtu = ur_mtu_bytes(qp->attr.path_mtu ? qp->attr.path_mtu : 1);

	qp->mtu = UR_MIN(mtu, qp->dev->cfg.max_mtu);
	qp->resp.epsn = qp->attr.rq_psn;
	if (qp->svc->connected)
		ur_frame_tmpl_init(&qp->tmpl, &qp->attr.av.path);
}

static void enter_rts(struct ur_qp *qp, enum ur_qp_state from, uint64_t now)
{
	struct ur_requester *rq = &qp->req;

	qp->timeout_ns = qp->attr.timeout ? 4096ull << qp->attr.timeout : 0;
	if (qp->timeout_ns && (!qp->dev->min_timeout_ns || qp->timeout_ns < qp->dev->min_timeout_ns))
		qp->dev->min_timeout_ns = qp->timeout_ns;
	if (from == UR_QPS_RTR) {
		rq->psn = rq->una = rq->max_psn = rq->nak_psn = qp->attr.sq_psn;
		rq->nak_psn = ur_psn_add(rq->nak_psn, UR_PSN_MASK);
		rq->wqe = rq->comp = atomic_load_explicit(&qp->sq.cons, memory_order_relaxed);
		rq->rnr_left = qp->attr.rnr_retry;
		ur_req_progress(qp, now);
		qp->rtx->start(qp, now);
	}
	ur_dev_schedule(qp->dev, qp);
}

static void log_transition(struct ur_qp *qp, enum ur_qp_state from, enum ur_qp_state to)
{
	const struct ur_qp_attr *a = &qp->attr;
	char line[256];

	if (!qp->dev->ops->log)
		return;
	if (to == UR_QPS_RTR)
		snprintf(line, sizeof(line),
			 "qp %#x: %s -> %s dest_qp %#x rq_psn %#x path_mtu %u max_dest_rd_atomic %u min_rnr_timer %u access %#x",
			 qp->qpn, ur_qp_state_name(from), ur_qp_state_name(to), a->dest_qp_num,
			 a->rq_psn, qp->mtu, a->max_dest_rd_atomic, a->min_rnr_timer,
			 a->qp_access_flags);
	else if (to == UR_QPS_RTS && from == UR_QPS_RTR)
		snprintf(line, sizeof(line),
			 "qp %#x: %s -> %s sq_psn %#x timeout %u (%llu us) retry_cnt %u rnr_retry %u max_rd_atomic %u",
			 qp->qpn, ur_qp_state_name(from), ur_qp_state_name(to), a->sq_psn,
			 a->timeout, (unsigned long long)(qp->timeout_ns / 1000), a->retry_cnt,
			 a->rnr_retry, a->max_rd_atomic);
	else
		snprintf(line, sizeof(line), "qp %#x: %s -> %s", qp->qpn, ur_qp_state_name(from),
			 ur_qp_state_name(to));
	qp->dev->ops->log(qp->dev->host, line);
}

int ur_qp_modify(struct ur_qp *qp, const struct ur_qp_attr *attr, uint32_t mask, uint64_t now)
{
	enum ur_qp_state cur = qp_state(qp);
	enum ur_qp_state next = (mask & UR_QP_STATE) ? attr->qp_state : cur;
	int err;

	mask &= ~xrc_ignored(qp);
	err = ur_qp_modify_check(qp, attr, mask, NULL, 0);
	if (err)
		return err;
	if ((mask & UR_QP_MAX_DEST_RD_ATOMIC) && qp->svc->acknowledged) {
		err = alloc_resources(qp, UR_MAX(attr->max_dest_rd_atomic, 1));
		if (err)
			return err;
	}
	/* Where its requests go decides whose cap they count toward: bound
	 * before anything changes, as it is the one step that may fail. */
	if (qp->svc->acknowledged &&
	    ((mask & (UR_QP_AV | UR_QP_DEST_QPN)) || (next == UR_QPS_RTR && !qp->peer))) {
		const struct ur_qp_attr *av = (mask & UR_QP_AV) ? attr : &qp->attr;
		const struct ur_qp_attr *dq = (mask & UR_QP_DEST_QPN) ? attr : &qp->attr;

		err = ur_peer_bind(qp->dev, qp, &av->av.path.dgid, dq->dest_qp_num);
		if (err)
			return err;
	}
	qp->dev->now = now;
	copy_attr(qp, attr, mask);
	/* SQD -> SQD may move the primary path (table 91): later packets take it */
	if ((mask & UR_QP_AV) && next == UR_QPS_SQD && qp->svc->connected)
		ur_frame_tmpl_init(&qp->tmpl, &qp->attr.av.path);
	if (next == cur && next != UR_QPS_RESET)
		return 0;

	switch (next) {
	case UR_QPS_RESET:
		ur_ack_flush_owed(qp);
		reset_state(qp);
		break;
	case UR_QPS_RTR:
		enter_rtr(qp);
		break;
	case UR_QPS_RTS:
		atomic_store_explicit(&qp->state, next, memory_order_relaxed);
		enter_rts(qp, cur, now);
		break;
	case UR_QPS_ERR:
		log_transition(qp, cur, next);
		ur_ack_flush_owed(qp);
		ur_qp_to_error(qp, false);
		return 0;
	default:
		break;
	}
	atomic_store_explicit(&qp->state, next, memory_order_relaxed);
	log_transition(qp, cur, next);
	if (next == UR_QPS_SQD && !ur_psn_lt(qp->req.una, qp->req.psn) && qp->attr.en_sqd_async_notify &&
	    qp->dev->ops->async_event)
		qp->dev->ops->async_event(qp->dev->host, UR_EVENT_SQ_DRAINED, qp->host_ctx);
	return 0;
}

void ur_qp_query(const struct ur_qp *qp, struct ur_qp_attr *attr)
{
	*attr = qp->attr;
	attr->qp_state = attr->cur_qp_state = qp_state(qp);
	attr->max_send_wr = ur_wq_size(&qp->sq);
	attr->max_recv_wr = qp->rq.buf ? ur_wq_size(&qp->rq) : 0;
	attr->max_send_sge = qp->sq.max_sge;
	attr->max_recv_sge = qp->rq.buf ? qp->rq.max_sge : 0;
	attr->max_inline_data = qp->sq.max_inline;
	attr->sq_draining = qp_state(qp) == UR_QPS_SQD && ur_psn_lt(qp->req.una, qp->req.psn);
}

int ur_qp_create(struct ur_dev *dev, struct ur_qp_init *init, struct ur_qp **out)
{
	const struct ur_service *svc;
	uint32_t send_slot, recv_slot;
	struct ur_qp *qp;
	int err;

	svc = ur_service_of(init->type);
	if (!svc)
		return -EINVAL;
	/* an XRC initiator receives nothing, a target's receives complete on
	 * the CQ of the SRQ each request names */
	if ((!init->send_cq && !svc->xrc_tgt) || (!init->recv_cq && !svc->xrc_ini && !svc->xrc_tgt))
		return -EINVAL;
	/* QP 0 is the SMI, which RoCE has none of; QP 1, the GSI, is a UD QP
	 * (IBTA 3.5.1) that carries the CM's MADs */
	if (init->qpn > UR_PSN_MASK || init->qpn == 0 ||
	    (init->qpn == 1 && init->type != UR_QPT_UD))
		return -EINVAL;
	if (init->max_send_wr > UR_MAX_WR || init->max_recv_wr > UR_MAX_WR ||
	    init->max_send_sge > UR_MAX_SGE || init->max_recv_sge > UR_MAX_SGE ||
	    init->max_inline_data > UR_MAX_INLINE)
		return -EINVAL;
	if (ur_dev_find_qp(dev, init->qpn))
		return -EEXIST;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	qp->dev = dev;
	qp->qpn = init->qpn;
	qp->type = init->type;
	qp->svc = ur_service_of(init->type);
	qp->rtx = &ur_rtx_gbn; /* sr.c installs its own (ur_sr_create) */
	qp->pd = init->pd;
	qp->xrcd = init->xrcd;
	qp->scq = init->send_cq;
	qp->rcq = init->recv_cq;
	qp->srq = init->srq;
	qp->sq_sig_all = init->sq_sig_all;
	qp->host_ctx = init->host_ctx;
	qp->req.retx.kind = UR_TIMER_RETX;
	qp->req.rnr.kind = UR_TIMER_RNR;
	qp->pace.kind = UR_TIMER_PACE;
	qp->resp.ack.hold.kind = UR_TIMER_ACK;
	ur_cc_init(qp);
	qp->attr.port_num = 1;
	qp->attr.path_mtu = ur_mtu_enum(dev->cfg.max_mtu);

	init->max_send_sge = UR_MAX(init->max_send_sge, 1);
	init->max_recv_sge = UR_MAX(init->max_recv_sge, 1);
	send_slot = sizeof(struct ur_send_wqe) +
		    UR_MAX(init->max_send_sge * sizeof(struct ur_sge), init->max_inline_data);
	recv_slot = sizeof(struct ur_recv_wqe) + init->max_recv_sge * sizeof(struct ur_sge);
	err = ur_wq_init_alloc(&qp->sq, UR_MAX(init->max_send_wr, 1), send_slot, init->alloc,
			       UR_WQ_MEM_SQ);
	if (err)
		goto err_free;
	/* the slot has room for more SGEs/inline bytes than asked: grant them */
	qp->sq.max_sge = UR_MIN((qp->sq.stride - sizeof(struct ur_send_wqe)) / sizeof(struct ur_sge),
				UR_MAX_SGE);
	qp->sq.max_inline = UR_MIN(qp->sq.stride - sizeof(struct ur_send_wqe), UR_MAX_INLINE);
	if (!qp->srq && !qp->svc->xrc_ini && !qp->svc->xrc_tgt) {
		err = ur_wq_init_alloc(&qp->rq, UR_MAX(init->max_recv_wr, 1), recv_slot,
				       init->alloc, UR_WQ_MEM_RQ);
		if (err)
			goto err_sq;
		qp->rq.max_sge = UR_MIN((qp->rq.stride - sizeof(struct ur_recv_wqe)) /
						sizeof(struct ur_sge),
					UR_MAX_SGE);
	}
	/* an XRC target fills WQEs of whichever SRQ a request names */
	qp->max_recv_sge = qp->svc->xrc_tgt ? UR_MAX_SGE
			   : qp->srq	    ? qp->srq->wq.max_sge
					    : qp->rq.max_sge;
	qp->resp.rwqe = calloc(1, sizeof(struct ur_recv_wqe) +
					  qp->max_recv_sge * sizeof(struct ur_sge));
	if (!qp->resp.rwqe) {
		err = -ENOMEM;
		goto err_rq;
	}
	if (dev->cfg.retx_mode == UR_RETX_SR && qp->svc->selective) {
		err = ur_sr_create(qp);
		if (err)
			goto err_rwqe;
	}
	err = ur_dev_add_qp(dev, qp);
	if (err)
		goto err_sr;

	init->max_send_wr = ur_wq_size(&qp->sq);
	init->max_send_sge = qp->sq.max_sge;
	init->max_inline_data = qp->sq.max_inline;
	init->max_recv_wr = qp->rq.buf ? ur_wq_size(&qp->rq) : 0;
	init->max_recv_sge = qp->rq.buf ? qp->rq.max_sge : 0;
	*out = qp;
	return 0;

err_sr:
	ur_sr_destroy(qp);
err_rwqe:
	free(qp->resp.rwqe);
err_rq:
	ur_wq_fini(&qp->rq);
err_sq:
	ur_wq_fini(&qp->sq);
err_free:
	free(qp);
	return err;
}

void ur_qp_destroy(struct ur_qp *qp)
{
	struct ur_dev *dev = qp->dev;

	ur_ack_flush_owed(qp);
	atomic_store_explicit(&qp->state, UR_QPS_RESET, memory_order_relaxed);
	ur_dev_account(dev, qp); /* its packets in flight no longer count */

	ur_qp_cancel_timers(qp);
	ur_cc_stop(qp);
	ur_dev_unschedule(dev, qp);
	ur_peer_uncap(qp);
	ur_peer_unbind(dev, qp);
	ur_dev_del_qp(dev, qp);
	ur_mw_qp_gone(&dev->mrs, qp->qpn); /* its type 2 windows go with it */
	ur_doorbell_forget(dev, qp);
	ur_sr_destroy(qp);
	free(qp->resp.res);
	free(qp->resp.rwqe);
	ur_wq_fini(&qp->rq);
	ur_wq_fini(&qp->sq);
	free(qp);
}

struct ur_wq *ur_qp_sq(struct ur_qp *qp)
{
	return &qp->sq;
}

struct ur_wq *ur_qp_rq(struct ur_qp *qp)
{
	return &qp->rq;
}

uint32_t ur_qp_num(const struct ur_qp *qp)
{
	return qp->qpn;
}

enum ur_qp_type ur_qp_service(const struct ur_qp *qp)
{
	return qp->type;
}

void *ur_qp_host_ctx(const struct ur_qp *qp)
{
	return qp->host_ctx;
}

enum ur_qp_state ur_qp_state(const struct ur_qp *qp)
{
	return qp_state(qp);
}

void ur_qp_set_dmac(struct ur_qp *qp, const uint8_t dmac[6])
{
	memcpy(qp->attr.av.path.dmac, dmac, 6);
	qp->attr.av.resolved = 1;
	if (qp->svc->connected)
		ur_frame_tmpl_init(&qp->tmpl, &qp->attr.av.path);
}

bool ur_qp_selective(const struct ur_qp *qp)
{
	return qp->rtx->selective;
}
