/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Selective repeat's loss detection: RACK (RFC 8985), time-based. A packet
 * is lost once a packet sent after it was delivered and a reordering window
 * has passed since that later packet's round trip would have brought its own
 * answer. The window is 0 until the path is seen to reorder (IRN's rule);
 * then it is a quarter of the smallest round trip (RFC 8985), or, once an
 * original was seen overtaken, 5/4 of the most it came late (uroce's
 * departure: a window sized by what the path did, not by its round trip,
 * see docs/selective-repeat.md section 4), times a multiplier that grows by
 * one for each round trip that showed a spurious retransmission. Pure decisions on numbers the
 * caller gives (time comes in as `now`); the per-PSN bookkeeping and the timer are sr.c's.
 * docs/selective-repeat.md section 4 says why RACK and not a duplicate threshold. Internal.
 */
#ifndef UR_SR_RACK_H
#define UR_SR_RACK_H

#include <stdbool.h>
#include <stdint.h>

/*
 * RFC 8985 6.2 step 4: on a path not seen to reorder, DupThresh packets
 * SACKed above a hole make it a loss at once. TCP's 3 would make the first
 * loss of each recovery wait a quarter round trip for nothing on a path that
 * keeps order (docs/selective-repeat.md section 4); 1 is IRN's rule, the
 * engine's behaviour before RACK, until reordering is seen.
 */
#define UR_RACK_DUPTHRESH 1
/* RFC 8985 6.2 step 4: recoveries without a spurious retransmission before
 * the multiplier drops back to 1 */
#define UR_RACK_PERSIST 16
#define UR_RACK_MULT_MAX 64

/* RFC 8985 6.1's per-connection variables, by their RFC names. */
struct ur_rack {
	uint64_t xmit_ns;     /* RACK.xmit_ts: when the most recently sent packet delivered left */
	uint64_t rtt_ns;      /* RACK.rtt: that packet's round trip */
	uint64_t min_rtt_ns;  /* RACK.min_RTT, from packets sent once; 0 before the first */
	uint32_t txseq;	      /* its transmission order (RACK.end_seq's role: ties in time) */
	uint64_t reo_late_ns; /* how late an original came at most, behind one sent after it */
	uint32_t dsack_round; /* RACK.dsack_round: the next PSN when the window last grew */
	uint8_t reo_mult;     /* RACK.reo_wnd_mult */
	uint8_t reo_persist;  /* RACK.reo_wnd_persist */
	bool have;	      /* a packet was delivered */
	bool reordering_seen; /* RACK.reordering_seen */
	bool dsack_round_set;
};

/* A packet newly delivered, SACKed or cumulatively acknowledged. */
struct ur_rack_pkt {
	uint64_t xmit_ns; /* when its last transmission left */
	uint32_t txseq;	  /* the order of that transmission */
	bool retx;	  /* sent more than once */
	bool below_fack;  /* a PSN above it had been delivered before it */
};

enum ur_rack_verdict {
	UR_RACK_OK,
	/* a retransmission answered sooner than any round trip: the original
	 * arrived, the retransmission was not needed (RFC 8985 6.2 step 2
	 * ignores such a sample; uroce also counts it and widens the window,
	 * the role a DSACK plays in step 4) */
	UR_RACK_SPURIOUS,
};

void ur_rack_reset(struct ur_rack *r);
enum ur_rack_verdict ur_rack_delivered(struct ur_rack *r, const struct ur_rack_pkt *p,
				       uint64_t now);
/* A spurious retransmission: widen the window, once per round trip (until
 * the oldest unacknowledged PSN `una` reaches the next PSN `nxt` of the
 * last time it grew). */
void ur_rack_spurious(struct ur_rack *r, uint32_t una, uint32_t nxt);
/* A recovery (a period from a loss to the acknowledgement of everything sent
 * before it) ended. */
void ur_rack_recovery_done(struct ur_rack *r);
/* The reordering window, RFC 8985 6.2 step 4. */
uint64_t ur_rack_reo_wnd(const struct ur_rack *r, uint64_t srtt_ns, bool in_recovery,
			 uint32_t nsacked);
/*
 * Whether a packet not delivered, last sent at `xmit_ns` in order `txseq`, is
 * lost at `now` (RFC 8985 6.2 step 5). If it may still be on its way but a
 * packet sent after it was delivered, `*when` is lowered to the time it will
 * be deemed lost unless it is delivered first.
 */
bool ur_rack_lost(const struct ur_rack *r, uint64_t xmit_ns, uint32_t txseq, uint64_t reo_wnd,
		  uint64_t now, uint64_t *when);

#endif
