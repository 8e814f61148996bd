/* SPDX-License-Identifier: BSD-2-Clause */
/* RACK loss detection for selective repeat: see sr_rack.h and RFC 8985. */
#include <string.h>

#include "psn.h"
#include "sr_rack.h"
#include "ur_util.h"

void ur_rack_reset(struct ur_rack *r)
{
	memset(r, 0, sizeof(*r));
	r->reo_mult = 1;
}

/* Transmission orders wrap: later means less than half the space ahead. */
static bool sent_after(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0;
}

/* RFC 8985 6.2 steps 2 and 3 for one packet (steps 1 and 2 of
 * tcp_rack_advance() in Linux's net/ipv4/tcp_recovery.c, which keeps RACK.rtt
 * only from the packet that moved RACK.xmit_ts). */
enum ur_rack_verdict ur_rack_delivered(struct ur_rack *r, const struct ur_rack_pkt *p, uint64_t now)
{
	uint64_t rtt;

	if (now < p->xmit_ns)
		return UR_RACK_OK; /* clock readings out of order: no sample */
	rtt = now - p->xmit_ns;
	if (!p->retx && p->below_fack) {
		r->reordering_seen = true; /* an original overtaken by a later PSN */
		/* How late, past the round trip of the packet that overtook
		 * it: the window that would have spared it. */
		if (r->have && sent_after(r->txseq, p->txseq) && rtt > r->rtt_ns &&
		    rtt - r->rtt_ns > r->reo_late_ns)
			r->reo_late_ns = rtt - r->rtt_ns;
	}
	if (p->retx) {
		/* Whichever copy this answers, it cannot be the last one if it
		 * came back sooner than any round trip. */
		if (r->min_rtt_ns && rtt < r->min_rtt_ns)
			return UR_RACK_SPURIOUS;
	} else if (!r->min_rtt_ns || rtt < r->min_rtt_ns) {
		r->min_rtt_ns = rtt ? rtt : 1; /* Karn: only a packet sent once is timed */
	}
	if (!r->have || sent_after(p->txseq, r->txseq)) {
		r->have = true;
		r->txseq = p->txseq;
		r->xmit_ns = p->xmit_ns;
		r->rtt_ns = rtt;
	}
	return UR_RACK_OK;
}

void ur_rack_spurious(struct ur_rack *r, uint32_t una, uint32_t nxt)
{
	/* The original was late, not lost: the path reorders. Step 3 would
	 * see it only from an original delivered below the highest SACKed
	 * PSN, and once the window is 0 every late original has been resent
	 * before it arrives: without this the window would never open. */
	r->reordering_seen = true;
	if (r->dsack_round_set && ur_psn_ge(una, r->dsack_round))
		r->dsack_round_set = false;
	if (r->dsack_round_set)
		return; /* one step per round trip: the same reordering */
	r->dsack_round_set = true;
	r->dsack_round = nxt;
	if (r->reo_mult < UR_RACK_MULT_MAX)
		r->reo_mult++;
	r->reo_persist = UR_RACK_PERSIST;
}

void ur_rack_recovery_done(struct ur_rack *r)
{
	if (r->reo_persist && !--r->reo_persist)
		r->reo_mult = 1;
}

uint64_t ur_rack_reo_wnd(const struct ur_rack *r, uint64_t srtt_ns, bool in_recovery,
			 uint32_t nsacked)
{
	/* RFC 8985: a quarter of min_RTT, whatever the path does. A path that
	 * reorders by a few packets (a switch, a NIC's queues) then delays each
	 * loss by a quarter round trip, which costs goodput at a few percent
	 * loss; one that sprays over paths microseconds apart outgrows it and
	 * pays a spurious retransmission per overtaken packet until the
	 * multiplier catches up, round trip by round trip. How late originals
	 * did come fits both; a quarter more for what was not seen yet
	 * (docs/selective-repeat.md section 4 has the figures). */
	uint64_t base = r->reo_late_ns ? r->reo_late_ns + r->reo_late_ns / 4 : r->min_rtt_ns / 4;
	uint64_t wnd = r->reo_mult * base;

	/* A path not seen to reorder: a hole under a delivered packet, or one
	 * during a recovery, is a loss at once (IRN's rule; see DUPTHRESH). */
	if (!r->reordering_seen && (in_recovery || nsacked >= UR_RACK_DUPTHRESH))
		return 0;
	/* never more than a round trip: past that the RTO would fire anyway */
	return srtt_ns ? UR_MIN(wnd, srtt_ns) : wnd;
}

bool ur_rack_lost(const struct ur_rack *r, uint64_t xmit_ns, uint32_t txseq, uint64_t reo_wnd,
		  uint64_t now, uint64_t *when)
{
	uint64_t deadline;

	if (!r->have || !sent_after(r->txseq, txseq))
		return false; /* nothing sent after it was delivered: only a timeout can tell */
	deadline = xmit_ns + r->rtt_ns + reo_wnd;
	if (deadline <= now)
		return true;
	if (deadline < *when)
		*when = deadline;
	return false;
}
