/* SPDX-License-Identifier: BSD-2-Clause */
/* The DCQCN reaction point (see dcqcn.h for the algorithm and its sources). */
#include <string.h>

#include "dcqcn.h"
#include "ur_util.h"

void ur_dcqcn_params_default(struct ur_dcqcn_params *p)
{
	/* NVIDIA's documented firmware defaults (mlxconfig/sysfs names, same units) */
	memset(p, 0, sizeof(*p));
	p->rpg_time_reset_us = 300;
	p->rpg_byte_reset = 32767;
	p->rpg_threshold = 1;
	p->rpg_max_rate_mbps = 0;
	p->rpg_ai_rate_mbps = 5;
	p->rpg_hai_rate_mbps = 50;
	p->rpg_gd = 11;
	p->rpg_min_dec_fac = 50;
	p->rpg_min_rate_mbps = 1;
	p->rate_to_set_on_first_cnp_mbps = 0;
	p->dce_tcp_g = 1019;
	p->dce_tcp_rtt_us = 1;
	p->rate_reduce_monitor_period_us = 4;
	p->initial_alpha_value = 1023;
	p->clamp_tgt_rate = false;
	p->clamp_tgt_rate_after_time_inc = true;
}

void ur_dcqcn_params_paper(struct ur_dcqcn_params *p)
{
	/* the evaluation settings of Zhu et al. (SIGCOMM 2015) in mlx5's terms:
	 * timer and alpha period 55 us, byte counter 10 MB, F = 5, R_AI 40 Mb/s,
	 * g = 1/256 (dce_tcp_g 1020), Rt = Rc on every CNP and a cut on every
	 * CNP (their CNPs come at most every 50 us). R_HAI is ours: 10 x R_AI. */
	ur_dcqcn_params_default(p);
	p->rpg_time_reset_us = 55;
	p->rpg_byte_reset = 10u << 20;
	p->rpg_threshold = 5;
	p->rpg_ai_rate_mbps = 40;
	p->rpg_hai_rate_mbps = 400;
	p->dce_tcp_g = 1020;
	p->dce_tcp_rtt_us = 55;
	p->rate_reduce_monitor_period_us = 0;
	p->clamp_tgt_rate = true;
}

void ur_dcqcn_init(struct ur_dcqcn *d)
{
	memset(d, 0, sizeof(*d));
}

static uint64_t max_rate(const struct ur_dcqcn_params *p, uint64_t line_kbps)
{
	uint64_t m = (uint64_t)p->rpg_max_rate_mbps * 1000;

	return m && m < line_kbps ? m : line_kbps;
}

static uint64_t min_rate(const struct ur_dcqcn_params *p)
{
	return UR_MAX((uint64_t)p->rpg_min_rate_mbps * 1000, 1);
}

/* alpha' = alpha * g / 1024, plus (1024 - g) / 1024 of one with a CNP */
static uint32_t alpha_step(const struct ur_dcqcn_params *p, uint32_t alpha, bool cnp)
{
	uint64_t g = UR_MIN(p->dce_tcp_g, 1024u);
	uint64_t a = ((uint64_t)alpha * g + (cnp ? (1024 - g) * UR_DCQCN_ALPHA_ONE : 0)) >> 10;

	return (uint32_t)UR_MIN(a, UR_DCQCN_ALPHA_ONE);
}

uint32_t ur_dcqcn_alpha(struct ur_dcqcn *d, const struct ur_dcqcn_params *p, uint64_t now)
{
	uint64_t k = (uint64_t)p->dce_tcp_rtt_us * 1000, n;

	if (!k || now <= d->alpha_ns)
		return d->alpha;
	n = (now - d->alpha_ns) / k;
	d->alpha_ns += n * k;
	/* each step loses at least one unit while alpha > 0, so the loop ends
	 * (after about 2900 periods alpha is below 2^-20 and exactly 0) */
	while (n-- && d->alpha)
		d->alpha = alpha_step(p, d->alpha, false);
	return d->alpha;
}

static void cut(struct ur_dcqcn *d, const struct ur_dcqcn_params *p, uint64_t now)
{
	uint64_t rc = d->rc, floor;
	unsigned gd = UR_MIN(p->rpg_gd, 32);

	/* QCN's rule: Rt remembers the rate before a train of cuts, and moves
	 * down only once the rate has been raised since the last cut */
	if (p->clamp_tgt_rate || d->byte_inc || (p->clamp_tgt_rate_after_time_inc && d->time_inc))
		d->rt = rc;
	rc -= (rc * d->alpha) >> (gd + UR_DCQCN_ALPHA_SHIFT - 10); /* rpg_gd counts alpha in 1/1024 */
	floor = d->rc * UR_MIN(p->rpg_min_dec_fac, 100) / 100;
	rc = UR_MAX(rc, floor);
	d->rc = UR_MAX(rc, min_rate(p));
	d->rt = UR_MAX(d->rt, d->rc);
	d->t = d->bc = 0;
	d->bytes = 0;
	d->time_inc = d->byte_inc = false;
	d->cut_ns = now;
	d->cut_pending = false;
	d->cuts++;
}

unsigned ur_dcqcn_cnp(struct ur_dcqcn *d, const struct ur_dcqcn_params *p, uint64_t line_kbps,
		      uint64_t now)
{
	uint64_t period = (uint64_t)p->rate_reduce_monitor_period_us * 1000;
	unsigned ret = 0;

	if (!d->limited) {
		uint64_t first = (uint64_t)p->rate_to_set_on_first_cnp_mbps * 1000;

		d->limited = true;
		d->rc = d->rt = UR_MIN(first ? first : line_kbps, max_rate(p, line_kbps));
		d->alpha = UR_MIN(p->initial_alpha_value, 1024u) << (UR_DCQCN_ALPHA_SHIFT - 10);
		d->alpha_ns = now;
		d->t = d->bc = 0;
		d->bytes = 0;
		d->time_inc = d->byte_inc = false;
		d->cut_pending = false;
		ret |= UR_DCQCN_NEW;
		cut(d, p, now);
		ret |= UR_DCQCN_CUT;
	} else {
		ur_dcqcn_alpha(d, p, now);
		if (d->cut_pending) {
			ret |= UR_DCQCN_DEFER; /* already waiting for the period to end */
		} else if (now - d->cut_ns >= period) {
			cut(d, p, now);
			ret |= UR_DCQCN_CUT;
		} else {
			d->cut_pending = true;
			ret |= UR_DCQCN_DEFER;
		}
	}
	/* the paper updates alpha after the cut it used it for */
	d->alpha = alpha_step(p, d->alpha, true);
	d->alpha_ns = now;
	return ret;
}

uint64_t ur_dcqcn_cut_deadline(const struct ur_dcqcn *d, const struct ur_dcqcn_params *p)
{
	return d->cut_ns + (uint64_t)p->rate_reduce_monitor_period_us * 1000;
}

bool ur_dcqcn_cut_timer(struct ur_dcqcn *d, const struct ur_dcqcn_params *p, uint64_t now)
{
	if (!d->limited || !d->cut_pending)
		return false;
	ur_dcqcn_alpha(d, p, now);
	cut(d, p, now);
	return true;
}

/* One rate increase event (T or BC just advanced). */
static void increase(struct ur_dcqcn *d, const struct ur_dcqcn_params *p, uint64_t line_kbps)
{
	uint32_t f = p->rpg_threshold, hi = UR_MAX(d->t, d->bc), lo = UR_MIN(d->t, d->bc);
	uint64_t max = max_rate(p, line_kbps);

	if (hi > f) {
		if (lo > f)
			d->rt += (uint64_t)(lo - f) * p->rpg_hai_rate_mbps * 1000;
		else
			d->rt += (uint64_t)p->rpg_ai_rate_mbps * 1000;
	}
	d->rt = UR_MIN(d->rt, max);
	/* halfway to the target, rounded up so that Rc can reach it */
	d->rc = (d->rt + d->rc + 1) / 2;
	d->increases++;
	if (d->rc >= max) {
		/* back at the maximum: the limiter is released (rpg_max_rate) */
		d->limited = false;
		d->cut_pending = false;
	}
}

bool ur_dcqcn_rate_timer(struct ur_dcqcn *d, const struct ur_dcqcn_params *p, uint64_t line_kbps)
{
	if (!d->limited)
		return false;
	d->t++;
	d->time_inc = true;
	increase(d, p, line_kbps);
	return d->limited;
}

bool ur_dcqcn_sent(struct ur_dcqcn *d, const struct ur_dcqcn_params *p, uint64_t line_kbps,
		   uint32_t bytes)
{
	if (!d->limited || !p->rpg_byte_reset)
		return d->limited;
	d->bytes += bytes;
	while (d->limited && d->bytes >= p->rpg_byte_reset) {
		d->bytes -= p->rpg_byte_reset;
		d->bc++;
		d->byte_inc = true;
		increase(d, p, line_kbps);
	}
	return d->limited;
}
