/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The engine's device: receive dispatch from frame to QP, the transmit
 * round robin, timers and doorbells.
 */
#include <errno.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ack.h"
#include "completer.h"
#include "doorbell.h"
#include "mw.h"
#include "psn.h"
#include "qp.h"
#include "qp_error.h"
#include "requester.h"
#include "responder.h"
#include "sq_retire.h"
#include "sr.h"

void ur_dev_config_default(struct ur_dev_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->max_mtu = 4096;
	cfg->ack_req_every = 64;
	cfg->max_inflight = 1024;
	/* the receiving process's ring has 4096 slots (dataplane/afp_rx.c):
	 * room for a few senders' worth; docs/multi-process.md */
	cfg->max_peer_inflight = 1024;
	/* each uroce process owns blocks of 4096 QP numbers and its own
	 * receive ring (provider/shared.h UROCE_QPN_BLOCK_BITS) */
	cfg->peer_qpn_shift = 12;
	cfg->max_qp_rd_atom = UR_DEFAULT_RD_ATOMIC;
	cfg->max_qp_init_rd_atom = UR_DEFAULT_RD_ATOMIC;
	cfg->data_ecn = UR_ECN_ECT0;
	cfg->cnp_dscp = 48;
	cfg->cnp_interval_ns = 4000;
	cfg->link_rate_mbps = 100000;
	cfg->dcqcn = true;
	cfg->ecn_np = true;
	cfg->retx_mode = UR_RETX_GBN;
	cfg->sr_window = 512;
	cfg->sr_rto_low_ns = 100000;
	cfg->sr_rto_high_ns = 1000000;
	cfg->sr_low_inflight = 3;
	ur_dcqcn_params_default(&cfg->dcqcn_params);
}

int ur_dev_create(const struct ur_dev_config *cfg, const struct ur_host_ops *ops, void *host,
		  uint64_t *counters, struct ur_dev **out)
{
	struct ur_dev *dev;
	int err;

	if (!ops || !ops->tx_get || !ops->tx_put || !ops->random)
		return -EINVAL;
	if (cfg->max_mtu < 256 || cfg->max_mtu > 4096 || !cfg->max_inflight ||
	    !cfg->ack_req_every || cfg->peer_qpn_shift > 24)
		return -EINVAL;
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	dev->cfg = *cfg;
	dev->cfg.max_mtu = ur_mtu_bytes(ur_mtu_enum(cfg->max_mtu));
	if (!ur_is_pow2(dev->cfg.sr_window) || dev->cfg.sr_window < 64)
		dev->cfg.sr_window = 512;
	dev->cfg.max_qp_rd_atom = UR_MIN(UR_MAX(cfg->max_qp_rd_atom, 1u), UR_MAX_RD_ATOMIC);
	dev->cfg.max_qp_init_rd_atom = UR_MIN(UR_MAX(cfg->max_qp_init_rd_atom, 1u), UR_MAX_RD_ATOMIC);
	dev->ops = ops;
	dev->host = host;
	dev->ctr = counters ? counters : dev->own_ctr;
	ur_mr_table_init(&dev->mrs);
	dev->mrs.fault_in = ops->fault_in;
	err = ur_timer_heap_init(&dev->timers, 256);
	if (err)
		goto err_free;
	dev->qp_hash_mask = 255;
	dev->qp_hash = calloc(dev->qp_hash_mask + 1, sizeof(*dev->qp_hash));
	if (!dev->qp_hash) {
		err = -ENOMEM;
		goto err_timers;
	}
	atomic_init(&dev->db_head, NULL);
	*out = dev;
	return 0;

err_timers:
	ur_timer_heap_fini(&dev->timers);
err_free:
	free(dev);
	return err;
}

void ur_dev_destroy(struct ur_dev *dev)
{
	if (!dev)
		return;
	free(dev->qp_hash);
	ur_peer_table_fini(dev);
	free(dev->srqs);
	ur_timer_heap_fini(&dev->timers);
	ur_mr_table_fini(&dev->mrs);
	free(dev);
}

uint64_t *ur_dev_counters(struct ur_dev *dev)
{
	return dev->ctr;
}

const struct ur_dev_config *ur_dev_config(const struct ur_dev *dev)
{
	return &dev->cfg;
}

static void run_doorbells(struct ur_dev *dev)
{
	struct ur_qp *qp = ur_doorbell_take_all(dev);

	while (qp) {
		struct ur_qp *next = qp->db_next;
		enum ur_qp_state st;

		/* Clear before reading the queues, so a later post rings again. */
		atomic_store_explicit(&qp->db_flag, 0, memory_order_seq_cst);
		st = qp_state(qp);
		if (st == UR_QPS_ERR) {
			ur_sq_flush(qp);
			ur_rq_flush(qp);
		} else if (st == UR_QPS_SQE) {
			ur_sq_flush(qp); /* sends posted in SQE flush (10.3.1.2) */
		} else if (ur_req_has_work(qp)) {
			ur_dev_schedule(dev, qp);
		}
		qp = next;
	}
}

/* A paced packet may leave, or a held ACK is due: the QP has a turn to take. */
static void send_turn(struct ur_qp *qp, uint64_t now)
{
	(void)now;
	ur_dev_schedule(qp->dev, qp);
}

/* Every timer kind: where it sits in its owner (the QP, or the QP's
 * selective-repeat state) and what its expiry does. */
static const struct {
	size_t off;
	bool in_sr;
	void (*fire)(struct ur_qp *qp, uint64_t now);
} timer_kinds[] = {
    [UR_TIMER_RETX] = {offsetof(struct ur_qp, req.retx), false, ur_req_retx_timer},
    [UR_TIMER_RNR] = {offsetof(struct ur_qp, req.rnr), false, ur_req_rnr_timer},
    [UR_TIMER_PACE] = {offsetof(struct ur_qp, pace), false, send_turn},
    [UR_TIMER_RATE] = {offsetof(struct ur_qp, cc.rate_timer), false, ur_cc_rate_timer},
    [UR_TIMER_CUT] = {offsetof(struct ur_qp, cc.cut_timer), false, ur_cc_cut_timer},
    [UR_TIMER_SR_HELLO] = {offsetof(struct ur_sr, hello_timer), true, ur_sr_hello_timer},
    [UR_TIMER_SR_RTO] = {offsetof(struct ur_sr, rto), true, ur_req_sr_rto_timer},
    [UR_TIMER_ACK] = {offsetof(struct ur_qp, resp.ack.hold), false, send_turn},
    [UR_TIMER_SR_REO] = {offsetof(struct ur_sr, reo), true, ur_sr_reo_timer},
};

static struct ur_qp *timer_qp(struct ur_timer *t)
{
	char *owner = (char *)t - timer_kinds[t->kind].off;

	return timer_kinds[t->kind].in_sr ? ((struct ur_sr *)owner)->qp : (struct ur_qp *)owner;
}

void ur_dev_run_doorbells(struct ur_dev *dev, uint64_t now)
{
	dev->now = now;
	run_doorbells(dev);
}

void ur_dev_poll(struct ur_dev *dev, uint64_t now)
{
	struct ur_timer *t;

	dev->now = now;
	run_doorbells(dev);
	while ((t = ur_timer_pop_due(&dev->timers, now))) {
		struct ur_qp *qp;

		if (t->kind >= UR_ARRAY_SIZE(timer_kinds) || !timer_kinds[t->kind].fire)
			continue;
		/* Only SR's timeout measures lateness: it is always armed ahead
		 * (others may be armed for a moment already past) and runs
		 * while packets are out, the host busy. */
		if (t->kind == UR_TIMER_SR_RTO && now - t->expires <= UR_DEV_LATE_MAX_NS)
			ur_win_max_note(&dev->late, now - t->expires, now, UR_DEV_LATE_PERIOD_NS);
		qp = timer_qp(t);
		timer_kinds[t->kind].fire(qp, now);
		ur_dev_account(dev, qp); /* a retry may have gone back */
	}
}

/*
 * An ACK timeout that started in a paused stage would count the pause
 * against the responder: its requests left only when the host ran again,
 * but their timeout ran from before, and a peer answering in well under
 * the timeout was given up on (on a 2-core host running 32 programs, a
 * third of the local ACK timeouts followed such a pass). A NIC's clock
 * does not run ahead of its sends: restart them from `now`. Every stamp
 * those stages set reads `at`; the walk over all QPs is paid only after a
 * pause, never per packet.
 */
void ur_dev_tx_late(struct ur_dev *dev, uint64_t at, uint64_t now)
{
	dev->now = now;
	for (uint32_t i = 0; i <= dev->qp_hash_mask; i++) {
		struct ur_qp *qp = dev->qp_hash[i];

		if (qp && qp->req.progress_ns == at)
			qp->req.progress_ns = now;
	}
}

bool ur_dev_tx_pending(const struct ur_dev *dev)
{
	return dev->ready_head != NULL || atomic_load_explicit(&dev->db_head, memory_order_relaxed);
}

bool ur_dev_doorbell_pending(const struct ur_dev *dev)
{
	return atomic_load_explicit(&dev->db_head, memory_order_seq_cst) != NULL;
}

uint64_t ur_dev_next_deadline(const struct ur_dev *dev)
{
	return ur_timer_next(&dev->timers);
}

uint64_t ur_dev_quiet_ns(const struct ur_dev *dev)
{
	return dev->min_timeout_ns ? dev->min_timeout_ns : UR_TIME_NEVER;
}

/* Packets a QP may send per turn: enough for bursts, small enough for fairness. */
#define UR_TX_QUANTUM 16

unsigned ur_dev_tx(struct ur_dev *dev, uint64_t now, unsigned budget)
{
	unsigned left = budget;

	dev->now = now;
	while (left) {
		struct ur_qp *qp = ur_sched_pop(dev);
		unsigned quantum, before;
		int more;

		if (!qp)
			break;
		quantum = UR_MIN(left, UR_TX_QUANTUM);
		before = quantum;
		more = ur_resp_emit(qp, &quantum);
		if (more == -ENOBUFS) {
			left -= before - quantum;
			ur_sched_push_front(dev, qp);
			break;
		}
		if (qp_state(qp) != UR_QPS_ERR) {
			unsigned q = quantum;
			uint32_t wqe = qp->req.wqe;

			more = ur_req_emit(qp, now, &quantum);
			/* A held ACK was waiting for a request to follow. Unless it
			 * went ahead of a SEND's last packet (ur_req_emit), it leaves
			 * behind the request's last packet (or all that may go now):
			 * the peer, woken by it from ibv_poll_cq, may then spin on
			 * memory the rest of the request would fill, with no one
			 * polling its port. */
			if (quantum < q && (qp->req.wqe != wqe || more == 0))
				ur_ack_hold_answer_sent(qp);
		}
		ur_dev_account(dev, qp);
		left -= before - quantum;
		if (more == -ENOBUFS) {
			ur_sched_push_front(dev, qp);
			break;
		}
		if (more > 0 || ur_resp_has_work(qp))
			ur_dev_schedule(dev, qp);
	}
	return budget - left;
}

static void count_parse_error(struct ur_dev *dev, enum ur_parse_err e)
{
	static const enum ur_counter map[] = {
		[UR_PARSE_NOT_ROCE] = UR_CTR_rx_drop_not_roce,
		[UR_PARSE_TRUNCATED] = UR_CTR_rx_drop_truncated,
		[UR_PARSE_BAD_IP] = UR_CTR_rx_drop_bad_ip,
		[UR_PARSE_BAD_BTH] = UR_CTR_rx_drop_bad_bth,
		[UR_PARSE_BAD_ICRC] = UR_CTR_rx_icrc_errors,
	};

	ur_count(dev, map[e]);
}

/*
 * A connected QP hears only its peer: the packet must come from the QP's
 * destination address and be addressed to the QP's own source address, as
 * Soft-RoCE checks (rxe_recv.c check_addr). The BTH carries no source QP
 * for RC and UC, so the addresses are all there is to check.
 */
void ur_dev_rx(struct ur_dev *dev, const uint8_t *frame, uint32_t len, uint64_t now)
{
	struct ur_pkt pkt;
	enum ur_parse_err e = ur_frame_parse(&pkt, frame, len);
	struct ur_qp *qp;
	enum ur_qp_state st;
	unsigned kind;

	dev->now = now;
	if (e == UR_PARSE_CONTROL) {
		ur_sr_ctrl_rx(dev, &pkt, now);
		return;
	}
	if (e) {
		count_parse_error(dev, e);
		return;
	}
	kind = pkt.op->kind;
	qp = ur_dev_find_qp(dev, pkt.dqpn);
	if (!qp) {
		ur_count(dev, UR_CTR_rx_drop_unknown_qp);
		return;
	}
	/* a CNP is of no transport: it may name a QP of any (A17.9.2) */
	if (kind != UR_KIND_CNP && (pkt.opcode & UR_TRANSPORT_MASK) != qp->svc->transport) {
		ur_count(dev, UR_CTR_rx_drop_wrong_transport);
		return;
	}
	/* Default partition only: low 15 bits all ones (10.9.1). */
	if ((ur_bth_pkey(pkt.bth) & 0x7fff) != 0x7fff) {
		ur_count(dev, UR_CTR_rx_drop_bad_pkey);
		return;
	}
	/* A CNP passes the same checks as every other packet: a stranger's
	 * would slow the QP down at will. It may reach a QP in RTR too, whose
	 * responder sends READ responses (ECN-capable) before it sends requests. */
	st = qp_state(qp);
	if (st == UR_QPS_RESET || st == UR_QPS_INIT || st == UR_QPS_ERR ||
	    (st == UR_QPS_RTR && kind != UR_KIND_SEND && kind != UR_KIND_WRITE &&
	     kind != UR_KIND_READ_REQ && kind != UR_KIND_ATOMIC && kind != UR_KIND_CNP)) {
		ur_count(dev, UR_CTR_rx_drop_bad_qp_state);
		return;
	}
	if (qp->svc->connected && !ur_qp_from_peer(qp, &pkt)) {
		ur_count(dev, UR_CTR_rx_drop_wrong_peer);
		return;
	}
	if (kind == UR_KIND_CNP) {
		/* reaction point (A17.9.3): the CNP names the QP to slow down */
		ur_count(dev, UR_CTR_rx_packets);
		ur_cc_cnp_rx(qp, now);
		return;
	}
	/* A UD QP takes datagrams from anyone, but only with its Q_Key (the DETH check) */
	if (!qp->svc->connected && (pkt.op->hdrs & UR_HDR_DETH) &&
	    ur_deth_qkey((const struct ur_deth *)((const uint8_t *)pkt.bth + pkt.op->off_deth)) !=
		    qp->attr.qkey) {
		ur_count(dev, UR_CTR_rx_drop_qkey);
		return;
	}
	ur_count(dev, UR_CTR_rx_packets);
	ur_count_n(dev, UR_CTR_rx_bytes, len);
	if (ur_unlikely((pkt.tos & UR_ECN_MASK) == UR_ECN_CE)) {
		/* notification point (A17.9.1): a switch marked this packet */
		ur_count(dev, UR_CTR_np_ecn_marked_roce_packets);
		if (dev->cfg.ecn_np)
			ur_cc_ce(qp, now);
	}
	switch (kind) {
	case UR_KIND_SEND:
	case UR_KIND_WRITE:
	case UR_KIND_READ_REQ:
	case UR_KIND_ATOMIC:
		ur_resp_rx(qp, &pkt, now);
		break;
	default:
		if (!qp->svc->acknowledged) {
			ur_count(dev, UR_CTR_rx_drop_wrong_transport);
			break;
		}
		ur_comp_rx(qp, &pkt, now);
		ur_dev_account(dev, qp);
		break;
	}
}

int ur_dev_reg_mr(struct ur_dev *dev, uint64_t iova, void *base, uint64_t length,
		  uint32_t access, uint32_t pd, struct ur_mr **out)
{
	return ur_mr_add(&dev->mrs, iova, base, length, access, pd, dev->ops->random(dev->host), out);
}

void ur_dev_dereg_mr(struct ur_dev *dev, struct ur_mr *mr)
{
	ur_mw_region_gone(&dev->mrs, mr);
	ur_mr_remove(&dev->mrs, mr);
}

/* The next free SRQ number after the last one given (0: none free; number 0 stays unused). */
static uint32_t srq_free_number(const struct ur_dev *dev)
{
	for (uint32_t i = 1; i < dev->nsrqs; i++) {
		uint32_t n = (dev->srq_cursor + i) % dev->nsrqs;

		if (n && !dev->srqs[n])
			return n;
	}
	return 0;
}

/* Give an SRQ a number, the index of its slot; the table doubles when full. */
static int srq_number(struct ur_dev *dev, struct ur_srq *srq)
{
	uint32_t n = srq_free_number(dev);

	if (!n) {
		uint32_t old = dev->nsrqs, want = old ? old * 2 : 64;
		struct ur_srq **t;

		if (want > UR_PSN_MASK + 1u) /* the XRCETH has 24 bits for it */
			return -ENOMEM;
		t = realloc(dev->srqs, want * sizeof(*t));
		if (!t)
			return -ENOMEM;
		memset(t + old, 0, (want - old) * sizeof(*t));
		dev->srqs = t;
		dev->nsrqs = want;
		n = old ? old : 1;
	}
	dev->srq_cursor = n;
	srq->srqn = n;
	dev->srqs[n] = srq;
	return 0;
}

int ur_srq_create(struct ur_dev *dev, uint32_t max_wr, uint32_t max_sge, uint32_t pd,
		  void *host_ctx, struct ur_srq **out)
{
	struct ur_srq *srq;
	int err;

	if (max_wr > UR_MAX_WR || max_sge > UR_MAX_SGE)
		return -EINVAL;
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return -ENOMEM;
	max_sge = UR_MAX(max_sge, 1);
	err = ur_wq_init(&srq->wq, UR_MAX(max_wr, 1),
			 sizeof(struct ur_recv_wqe) + max_sge * sizeof(struct ur_sge));
	if (err) {
		free(srq);
		return err;
	}
	srq->wq.max_sge = UR_MIN((srq->wq.stride - sizeof(struct ur_recv_wqe)) /
					 sizeof(struct ur_sge),
				 UR_MAX_SGE);
	srq->dev = dev;
	srq->pd = pd;
	srq->host_ctx = host_ctx;
	err = srq_number(dev, srq);
	if (err) {
		ur_wq_fini(&srq->wq);
		free(srq);
		return err;
	}
	*out = srq;
	return 0;
}

void ur_srq_destroy(struct ur_srq *srq)
{
	struct ur_dev *dev = srq->dev;

	dev->srqs[srq->srqn] = NULL;
	/* XRC targets remember the SRQ their last request named: forget it */
	if (srq->xrcd)
		for (uint32_t i = 0; i <= dev->qp_hash_mask; i++)
			if (dev->qp_hash[i] && dev->qp_hash[i]->srq == srq)
				dev->qp_hash[i]->srq = NULL;
	ur_wq_fini(&srq->wq);
	free(srq);
}

uint32_t ur_srq_num(const struct ur_srq *srq)
{
	return srq->srqn;
}

void ur_srq_set_xrc(struct ur_srq *srq, uint32_t xrcd, struct ur_cq *cq)
{
	srq->xrcd = xrcd;
	srq->cq = cq;
}

struct ur_wq *ur_srq_wq(struct ur_srq *srq)
{
	return &srq->wq;
}

void ur_srq_set_limit(struct ur_srq *srq, uint32_t limit)
{
	srq->limit = limit;
}

uint32_t ur_srq_limit(const struct ur_srq *srq)
{
	return srq->limit;
}
