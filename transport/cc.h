/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Congestion control state of one QP: the notification point (CNPs for
 * CE-marked packets, IBTA Annex A17.9), the DCQCN reaction point and the
 * pacer that enforces its rate. Internal; the functions are in qp.h.
 */
#ifndef UR_CC_H
#define UR_CC_H

#include <stdbool.h>
#include <stdint.h>

#include "dcqcn.h"
#include "timer.h"

/* Preamble, start delimiter, FCS and inter-frame gap: what a frame costs on
 * the wire beyond the bytes the engine builds. The pacer counts them so a
 * QP paced at the line rate fills the line and no more. */
#define UR_WIRE_OVERHEAD 24

struct ur_qp_cc {
	struct ur_dcqcn rp;          /* reaction point */
	struct ur_timer rate_timer;  /* UR_TIMER_RATE: rpg_time_reset */
	struct ur_timer cut_timer;   /* UR_TIMER_CUT: end of rate_reduce_monitor_period */
	uint32_t pace_rem_ps;        /* pacer: the part of a nanosecond carried over */
	uint32_t pace_bytes;         /* pacer: wire bytes of the last data packet... */
	uint64_t pace_base_ns;       /* ...and the start of its slot */
	/* notification point */
	bool cnp_due;                /* a CNP waits to be sent */
	bool cnp_sent;               /* last_cnp_ns is valid */
	uint64_t last_cnp_ns;        /* when the last CNP was decided */
};

#endif
