/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Congestion control of a QP, both roles a RoCE NIC plays:
 *  - notification point: a packet that arrives with ECN CE makes the QP
 *    send a CNP (BTH opcode 0x81, Annex A17.9.2) to the connected QP, at most
 *    one per cnp_interval_ns (mlx5's min_time_between_cnps, per QP);
 *  - reaction point: a CNP feeds the QP's DCQCN state (dcqcn.c), and the
 *    pacer holds every data packet of a rate-limited QP until next_tx_ns, so
 *    the rate is enforced on the wire in the simulator and the dataplane
 *    alike. A QP without a limiter is not paced at all: the transmit path
 *    pays one predictable branch.
 */
#include <errno.h>
#include <stddef.h>

#include "packet_out.h"
#include "qp.h"

static uint64_t line_kbps(const struct ur_dev *dev)
{
	return (uint64_t)dev->cfg.link_rate_mbps * 1000;
}

void ur_cc_init(struct ur_qp *qp)
{
	ur_dcqcn_init(&qp->cc.rp);
	qp->cc.rate_timer.kind = UR_TIMER_RATE;
	qp->cc.cut_timer.kind = UR_TIMER_CUT;
}

void ur_cc_stop(struct ur_qp *qp)
{
	ur_timer_cancel(&qp->dev->timers, &qp->cc.rate_timer);
	ur_timer_cancel(&qp->dev->timers, &qp->cc.cut_timer);
	qp->cc.cnp_due = false;
}

void ur_cc_reset(struct ur_qp *qp)
{
	struct ur_qp_cc *cc = &qp->cc;

	ur_cc_stop(qp);
	ur_dcqcn_init(&cc->rp);
	cc->pace_rem_ps = 0;
	cc->pace_bytes = 0;
	cc->cnp_sent = false;
	cc->last_cnp_ns = 0;
	qp->next_tx_ns = 0;
}

/* Notification point: a packet of this QP arrived with CE. */
void ur_cc_ce(struct ur_qp *qp, uint64_t now)
{
	struct ur_qp_cc *cc = &qp->cc;

	if (!qp->svc->connected)
		return; /* no connected QP to notify */
	if (cc->cnp_sent && now - cc->last_cnp_ns < qp->dev->cfg.cnp_interval_ns)
		return; /* min_time_between_cnps: this QP was notified recently */
	cc->cnp_sent = true;
	cc->last_cnp_ns = now;
	cc->cnp_due = true;
	ur_dev_schedule(qp->dev, qp);
}

int ur_cc_emit_cnp(struct ur_qp *qp)
{
	struct ur_pkt_out o;
	int err;

	/* A17.9.2: BTH with the destination QP and PSN 0, then 16 reserved
	 * bytes (zeroed by ur_pkt_begin); BECN set as ConnectX NICs send it. It
	 * travels in its own class (cnp_dscp), Not-ECT: nothing marks a CNP. */
	err = ur_pkt_begin(qp, &o, UR_OP_CNP, 0, 0);
	if (err)
		return err;
	ur_bth_set_becn((struct ur_bth *)o.bth, true);
	ur_pkt_finish(qp, &o, (uint8_t)(qp->dev->cfg.cnp_dscp << 2 | UR_ECN_NOT_ECT), 0);
	ur_count(qp->dev, UR_CTR_np_cnp_sent);
	qp->cc.cnp_due = false;
	return 0;
}

static void release(struct ur_qp *qp)
{
	/* back at the maximum rate: unpaced from now on */
	ur_timer_cancel(&qp->dev->timers, &qp->cc.rate_timer);
	ur_timer_cancel(&qp->dev->timers, &qp->cc.cut_timer);
	ur_timer_cancel(&qp->dev->timers, &qp->pace);
	qp->next_tx_ns = 0;
	qp->cc.pace_rem_ps = 0;
	qp->cc.pace_bytes = 0;
	ur_dev_schedule(qp->dev, qp);
}

static uint64_t gap_ps(const struct ur_qp_cc *cc, uint64_t wire_bytes)
{
	return wire_bytes * 8000000000ull / cc->rp.rc;
}

/*
 * The rate went up: the wait after the last packet shrinks to what the new
 * rate asks at once, as a rate limiter's refill does, instead of a QP cut
 * to a trickle sleeping out the long gap it was given then.
 */
static void repace(struct ur_qp *qp)
{
	struct ur_qp_cc *cc = &qp->cc;
	uint64_t next;

	if (!cc->pace_bytes)
		return;
	next = cc->pace_base_ns + gap_ps(cc, cc->pace_bytes) / 1000;
	if (next >= qp->next_tx_ns)
		return;
	qp->next_tx_ns = next;
	cc->pace_rem_ps = 0;
	if (ur_timer_armed(&qp->pace))
		ur_timer_arm(&qp->dev->timers, &qp->pace, next);
}

static void arm_rate_timer(struct ur_qp *qp, uint64_t now)
{
	uint64_t period = (uint64_t)qp->dev->cfg.dcqcn_params.rpg_time_reset_us * 1000;

	if (period)
		ur_timer_arm(&qp->dev->timers, &qp->cc.rate_timer, now + period);
}

/* Reaction point: a CNP arrived for this QP. */
void ur_cc_cnp_rx(struct ur_qp *qp, uint64_t now)
{
	struct ur_dev *dev = qp->dev;
	const struct ur_dcqcn_params *p = &dev->cfg.dcqcn_params;
	unsigned act;

	if (!dev->cfg.dcqcn || !qp->svc->connected) {
		ur_count(dev, UR_CTR_rp_cnp_ignored);
		return;
	}
	act = ur_dcqcn_cnp(&qp->cc.rp, p, line_kbps(dev), now);
	ur_count(dev, UR_CTR_rp_cnp_handled);
	if (act & UR_DCQCN_CUT)
		arm_rate_timer(qp, now);
	if ((act & UR_DCQCN_DEFER) && !ur_timer_armed(&qp->cc.cut_timer))
		ur_timer_arm(&dev->timers, &qp->cc.cut_timer, ur_dcqcn_cut_deadline(&qp->cc.rp, p));
}

void ur_cc_rate_timer(struct ur_qp *qp, uint64_t now)
{
	struct ur_dev *dev = qp->dev;

	if (ur_dcqcn_rate_timer(&qp->cc.rp, &dev->cfg.dcqcn_params, line_kbps(dev))) {
		arm_rate_timer(qp, now);
		repace(qp);
	} else {
		release(qp);
	}
}

void ur_cc_cut_timer(struct ur_qp *qp, uint64_t now)
{
	if (ur_dcqcn_cut_timer(&qp->cc.rp, &qp->dev->cfg.dcqcn_params, now))
		arm_rate_timer(qp, now);
}

/*
 * The pacer: a data packet of `frame_len` bytes just left a rate-limited QP.
 * The next may leave one packet time at the current rate later. Time the QP
 * spent waiting for the port (or for the host to run the engine) counts as
 * credit, but only up to two packet times, so a QP that idled cannot burst.
 */
void ur_cc_pace(struct ur_qp *qp, uint32_t frame_len, uint64_t now)
{
	struct ur_qp_cc *cc = &qp->cc;
	struct ur_dev *dev = qp->dev;
	uint32_t wire = frame_len + UR_WIRE_OVERHEAD;
	uint64_t gap = gap_ps(cc, wire), credit_ns = 2 * gap / 1000, base = qp->next_tx_ns, total;
	uint64_t rc = cc->rp.rc;

	if (base + credit_ns < now) {
		base = now - credit_ns;
		cc->pace_rem_ps = 0;
	}
	total = cc->pace_rem_ps + gap;
	qp->next_tx_ns = base + total / 1000;
	cc->pace_rem_ps = (uint32_t)(total % 1000);
	cc->pace_base_ns = base;
	cc->pace_bytes = wire;
	if (!ur_dcqcn_sent(&cc->rp, &dev->cfg.dcqcn_params, line_kbps(dev), frame_len))
		release(qp);
	else if (cc->rp.rc > rc)
		repace(qp);
}

bool ur_cc_slow(const struct ur_qp *qp, uint64_t ns)
{
	uint64_t bits = (uint64_t)(qp->mtu + UR_FRAME_MAX_HDR + 64 + UR_WIRE_OVERHEAD) * 8;

	/* bits / (kb/s) = ms; in ns: bits * 1e6 / rc */
	return qp->cc.rp.limited && bits * 1000000 / qp->cc.rp.rc > ns;
}

uint64_t ur_qp_rate_kbps(const struct ur_qp *qp)
{
	return qp->cc.rp.limited ? qp->cc.rp.rc : 0;
}
