/* SPDX-License-Identifier: BSD-2-Clause */
/* Go-back-N without selective repeat's state: every operation is a no-op or
 * a no, the go-back-N path in the roles being the default (rtx.h). */
#include "rtx.h"

static bool no(const struct ur_qp *qp)
{
	(void)qp;
	return false;
}

static void sent(struct ur_qp *qp, const struct ur_send_wqe *w, uint32_t psn, uint32_t npsn,
		 enum ur_sr_tx how, uint64_t now)
{
	(void)qp, (void)w, (void)psn, (void)npsn, (void)how, (void)now;
}

static void at(struct ur_qp *qp, uint64_t now)
{
	(void)qp, (void)now;
}

static void acked(struct ur_qp *qp, uint32_t una, uint64_t now)
{
	(void)qp, (void)una, (void)now;
}

static void forget(struct ur_qp *qp, uint32_t from, uint32_t to)
{
	(void)qp, (void)from, (void)to;
}

static void sack_rx(struct ur_qp *qp, const struct ur_sack *sack, uint64_t now)
{
	(void)qp, (void)sack, (void)now;
}

static bool go_back(struct ur_qp *qp)
{
	(void)qp;
	return false;
}

static void nothing(struct ur_qp *qp)
{
	(void)qp;
}

static bool none_ahead(struct ur_qp *qp, struct ur_recv_wqe *dst)
{
	(void)qp, (void)dst;
	return false;
}

const struct ur_rtx ur_rtx_gbn = {
    .name = "go-back-N",
    .retx_pending = no,
    .window_full = no,
    .sent = sent,
    .acked = acked,
    .progress = at,
    .forget = forget,
    .sack_rx = sack_rx,
    .resend_missing = go_back,
    .retry_note = "",
    .log_state = nothing,
    .rwqe_taken_ahead = none_ahead,
    .held_early = no,
    .sack_due = no,
    .ctrl_pending = no,
    .start = at,
    .reset = nothing,
    .stop_timers = nothing,
    .flush_rwqes = nothing,
};
