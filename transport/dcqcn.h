/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The DCQCN reaction point of one QP (Zhu et al., "Congestion Control for
 * Large-Scale RDMA Deployments", SIGCOMM 2015, figure 7), with the knobs
 * and the refinements of NVIDIA's ConnectX implementation. Pure: time comes
 * in as an argument and the caller arms the timers this asks for, so unit
 * tests can drive it event by event.
 *
 * Rates are kb/s internally (exact integer arithmetic down to the 1 Mb/s
 * floor); alpha is a fixed-point fraction of 2^20 (mlx5's knobs count it in
 * 1/1024: initial_alpha_value, rpg_gd; the finer grain keeps its decay
 * exponential instead of dropping one unit per step). With the parameters p:
 *
 * First CNP: a rate limiter is allocated at rate_to_set_on_first_cnp
 *   (0: the line rate) with Rc = Rt = that rate and alpha =
 *   initial_alpha_value; then the CNP is handled like any other.
 * CNP: alpha first decays for every whole dce_tcp_rtt since its last update.
 *   If no cut happened in the last rate_reduce_monitor_period, cut now;
 *   otherwise the cut waits for the end of that period (cut_pending: the
 *   caller arms a timer at ur_dcqcn_cut_deadline()). Then
 *   alpha = alpha * g + (1 - g), g = dce_tcp_g / 1024, and alpha's decay
 *   period restarts.
 * Cut: Rt = Rc if clamp_tgt_rate, or if the byte counter raised the rate
 *   since the last cut, or the timer did and clamp_tgt_rate_after_time_inc
 *   is set ("not only due to the byte counter"); otherwise Rt keeps the rate
 *   before this train of cuts to recover to, as in QCN (IEEE 802.1Qau).
 *   Rc -= Rc * alpha / 2^rpg_gd, no lower than
 *   rpg_min_dec_fac percent of Rc nor rpg_min_rate. T, BC and the byte
 *   count restart, and so does the rate-increase timer.
 * Alpha timer: alpha *= g every dce_tcp_rtt without a CNP. It is evaluated
 *   lazily when a CNP needs alpha, which gives the same values as a timer
 *   without waking every microsecond.
 * Rate-increase timer (every rpg_time_reset while limited): T++, then an
 *   increase event. Byte counter (every rpg_byte_reset bytes sent while
 *   limited, 0 = off): BC++, then an increase event.
 * Increase event, with F = rpg_threshold:
 *   max(T, BC) <= F:  fast recovery    Rc = (Rt + Rc) / 2 (rounded up)
 *   min(T, BC) >  F:  hyper increase   Rt += (min(T, BC) - F) * rpg_hai_rate
 *   otherwise:        additive increase Rt += rpg_ai_rate
 *   and in both increases then Rc = (Rt + Rc) / 2. (With the byte counter
 *   off, BC stays 0: fast recovery, then additive increase.) Rt never exceeds the maximum rate
 *   (rpg_max_rate, 0: the line rate); when Rc reaches it the limiter is
 *   released and the QP sends unpaced again, as on ConnectX.
 */
#ifndef UR_DCQCN_H
#define UR_DCQCN_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"

struct ur_dcqcn {
	bool limited;        /* a rate limiter is allocated */
	bool cut_pending;    /* a CNP arrived inside rate_reduce_monitor_period */
	bool time_inc;       /* the timer raised the rate since the last cut */
	bool byte_inc;       /* the byte counter raised the rate since the last cut */
	uint64_t rc;         /* current rate, kb/s */
	uint64_t rt;         /* target rate, kb/s */
	uint32_t alpha;      /* congestion estimate, UR_DCQCN_ALPHA_ONE = 1 */
	uint64_t alpha_ns;   /* start of alpha's current decay period */
	uint64_t cut_ns;     /* time of the last cut */
	uint32_t t;          /* T: rate-increase timer expiries since the last cut */
	uint32_t bc;         /* BC: byte-counter expiries since the last cut */
	uint64_t bytes;      /* bytes sent toward the next byte-counter expiry */
	/* statistics */
	uint64_t cuts;
	uint64_t increases;
};

/* What a CNP asks of the caller. */
enum {
	UR_DCQCN_CUT = 1,   /* the rate was cut: restart the rate-increase timer */
	UR_DCQCN_DEFER = 2, /* a cut is pending: call ur_dcqcn_cut_timer at ur_dcqcn_cut_deadline */
	UR_DCQCN_NEW = 4,   /* a rate limiter was allocated */
};

#define UR_DCQCN_ALPHA_SHIFT 20
#define UR_DCQCN_ALPHA_ONE (1u << UR_DCQCN_ALPHA_SHIFT)

void ur_dcqcn_init(struct ur_dcqcn *d);

/* A CNP for this QP; line_kbps is the port rate. Returns UR_DCQCN_* flags. */
unsigned ur_dcqcn_cnp(struct ur_dcqcn *d, const struct ur_dcqcn_params *p, uint64_t line_kbps,
		      uint64_t now);
/* When a pending cut is due. */
uint64_t ur_dcqcn_cut_deadline(const struct ur_dcqcn *d, const struct ur_dcqcn_params *p);
/* The end of rate_reduce_monitor_period with a CNP in it: cut; true if it did. */
bool ur_dcqcn_cut_timer(struct ur_dcqcn *d, const struct ur_dcqcn_params *p, uint64_t now);
/* The rate-increase timer expired; returns false when the limiter was released. */
bool ur_dcqcn_rate_timer(struct ur_dcqcn *d, const struct ur_dcqcn_params *p, uint64_t line_kbps);
/* `bytes` were sent while limited; returns false when the limiter was released. */
bool ur_dcqcn_sent(struct ur_dcqcn *d, const struct ur_dcqcn_params *p, uint64_t line_kbps,
		   uint32_t bytes);
/* Alpha at `now`, with the decay of every whole dce_tcp_rtt since its last update applied. */
uint32_t ur_dcqcn_alpha(struct ur_dcqcn *d, const struct ur_dcqcn_params *p, uint64_t now);

#endif
