/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Selective repeat's reordering window (transport/sr_rack.c, RFC 8985 6.2):
 * which delivered packet RACK follows, the smallest round trip (never from a
 * retransmission), a retransmission answered sooner than any round trip
 * taken as spurious, when reordering counts as seen, the window (0 on a path
 * that never reordered once three packets are SACKed above a hole or during
 * a recovery, else a quarter of the smallest round trip, times a multiplier
 * that grows once per round trip with spurious retransmissions, capped by
 * SRTT, back to 1 after 16 recoveries without one; once an original came
 * late, 5/4 of how late instead of the quarter), and when an outstanding
 * packet is lost or will be. Transmission orders and PSNs cross their wrap.
 */
#include <check.h>
#include <stdlib.h>

#include "psn.h"
#include "sr_rack.h"
#include "timer.h"

#define US 1000ull

static struct ur_rack r;

static void setup(void)
{
	ur_rack_reset(&r);
}

static enum ur_rack_verdict deliver(uint32_t txseq, uint64_t xmit, bool retx, bool below,
				    uint64_t now)
{
	const struct ur_rack_pkt p = {
	    .xmit_ns = xmit, .txseq = txseq, .retx = retx, .below_fack = below};

	return ur_rack_delivered(&r, &p, now);
}

START_TEST(test_fresh)
{
	uint64_t when = UR_TIME_NEVER;

	ck_assert_uint_eq(r.reo_mult, 1);
	ck_assert(!r.have);
	ck_assert(!r.reordering_seen);
	/* nothing delivered yet: nothing can be deemed lost, no timer */
	ck_assert(!ur_rack_lost(&r, 0, 1, 0, 1000 * US, &when));
	ck_assert_uint_eq(when, UR_TIME_NEVER);
	/* no round trip known: no window */
	ck_assert_uint_eq(ur_rack_reo_wnd(&r, 0, false, 0), 0);
}
END_TEST

/* RACK follows the most recently *sent* packet delivered, across the wrap of
 * transmission orders; min_RTT only from packets sent once. */
START_TEST(test_follows_latest_sent)
{
	const uint32_t base = 0xfffffffeu;

	ck_assert_int_eq(deliver(base + 2, 100 * US, false, false, 110 * US), UR_RACK_OK);
	ck_assert(r.have);
	ck_assert_uint_eq(r.txseq, 0);
	ck_assert_uint_eq(r.xmit_ns, 100 * US);
	ck_assert_uint_eq(r.rtt_ns, 10 * US);
	ck_assert_uint_eq(r.min_rtt_ns, 10 * US);
	/* sent before (across the wrap), delivered later: RACK stays put, min_RTT learns */
	ck_assert_int_eq(deliver(base, 99 * US, false, true, 108 * US + 500), UR_RACK_OK);
	ck_assert_uint_eq(r.txseq, 0);
	ck_assert_uint_eq(r.xmit_ns, 100 * US);
	ck_assert_uint_eq(r.min_rtt_ns, 9 * US + 500);
	ck_assert(r.reordering_seen);
	/* sent after: RACK moves, with that packet's round trip */
	ck_assert_int_eq(deliver(base + 5, 101 * US, false, false, 113 * US), UR_RACK_OK);
	ck_assert_uint_eq(r.txseq, 3);
	ck_assert_uint_eq(r.rtt_ns, 12 * US);
	ck_assert_uint_eq(r.min_rtt_ns, 9 * US + 500);
	/* a clock reading older than the send time gives no sample */
	ck_assert_int_eq(deliver(base + 6, 200 * US, false, false, 150 * US), UR_RACK_OK);
	ck_assert_uint_eq(r.txseq, 3);
}
END_TEST

/* A retransmission: answered sooner than min_RTT it was the original's
 * delivery (spurious, no sample); later, RACK may follow it but min_RTT never. */
START_TEST(test_retransmission_samples)
{
	deliver(1, 0, false, false, 10 * US);
	ck_assert_int_eq(deliver(7, 20 * US, true, true, 23 * US), UR_RACK_SPURIOUS);
	ck_assert_uint_eq(r.txseq, 1);
	ck_assert(!r.reordering_seen); /* a retransmission below the highest SACKed says nothing */
	ck_assert_int_eq(deliver(8, 20 * US, true, true, 30 * US + 1), UR_RACK_OK);
	ck_assert_uint_eq(r.txseq, 8);
	ck_assert_uint_eq(r.rtt_ns, 10 * US + 1);
	ck_assert_uint_eq(r.min_rtt_ns, 10 * US);
	ck_assert(!r.reordering_seen);
	/* the caller counts a selective one as spurious: that is reordering
	 * seen, and the window opens even in a recovery */
	ck_assert_uint_eq(ur_rack_reo_wnd(&r, 0, true, 100), 0);
	ur_rack_spurious(&r, 0, 1);
	ck_assert(r.reordering_seen);
	ck_assert_uint_eq(ur_rack_reo_wnd(&r, 0, true, 100), 2 * (10 * US / 4));
}
END_TEST

/* RFC 8985 6.2 step 4: a path that never reordered gets no window once three
 * packets are SACKed above a hole, or during a recovery. */
START_TEST(test_window_without_reordering)
{
	deliver(1, 0, false, false, 8 * US);
	ck_assert_uint_eq(ur_rack_reo_wnd(&r, 0, false, 0), 2 * US);
	ck_assert_uint_eq(ur_rack_reo_wnd(&r, 0, false, UR_RACK_DUPTHRESH - 1), 2 * US);
	ck_assert_uint_eq(ur_rack_reo_wnd(&r, 0, false, UR_RACK_DUPTHRESH), 0);
	ck_assert_uint_eq(ur_rack_reo_wnd(&r, 0, true, 0), 0);
	/* once reordering was seen, a quarter of min_RTT whatever the count
	 * (this original came no later than the packet that overtook it) */
	deliver(0, 0, false, true, 8 * US);
	ck_assert(r.reordering_seen);
	ck_assert_uint_eq(r.reo_late_ns, 0);
	ck_assert_uint_eq(ur_rack_reo_wnd(&r, 0, false, 100), 2 * US);
	ck_assert_uint_eq(ur_rack_reo_wnd(&r, 0, true, 100), 2 * US);
	/* never above SRTT */
	ck_assert_uint_eq(ur_rack_reo_wnd(&r, 1 * US, true, 100), 1 * US);
}
END_TEST

/* The multiplier grows by one per round trip with spurious retransmissions
 * (RACK.dsack_round, PSNs across their wrap), and drops back to 1 after
 * UR_RACK_PERSIST recoveries without one. */
START_TEST(test_window_adapts)
{
	const uint32_t una = 0xfffff0, nxt = ur_psn_add(una, 0x20);

	deliver(1, 0, false, false, 8 * US);
	deliver(0, 0, false, true, 8 * US);
	ur_rack_spurious(&r, una, nxt);
	ck_assert_uint_eq(r.reo_mult, 2);
	ck_assert_uint_eq(ur_rack_reo_wnd(&r, 0, false, 0), 4 * US);
	/* same round trip: the same reordering, no second step */
	ur_rack_spurious(&r, ur_psn_add(una, 0x1f), ur_psn_add(nxt, 5));
	ck_assert_uint_eq(r.reo_mult, 2);
	/* the round trip is over once una reaches the PSN recorded */
	ur_rack_spurious(&r, nxt, ur_psn_add(nxt, 0x40));
	ck_assert_uint_eq(r.reo_mult, 3);
	ck_assert_uint_eq(ur_rack_reo_wnd(&r, 0, false, 0), 6 * US);
	ck_assert_uint_eq(ur_rack_reo_wnd(&r, 5 * US, false, 0), 5 * US);
	for (unsigned i = 1; i < UR_RACK_PERSIST; i++) {
		ur_rack_recovery_done(&r);
		ck_assert_uint_eq(r.reo_mult, 3);
	}
	ur_rack_recovery_done(&r);
	ck_assert_uint_eq(r.reo_mult, 1);
	ur_rack_recovery_done(&r);
	ck_assert_uint_eq(r.reo_mult, 1);
}
END_TEST

/* Once an original came late, the window is 5/4 of the most it came late,
 * past the round trip of the packet that overtook it. */
START_TEST(test_window_from_lateness)
{
	deliver(2, 10 * US, false, false, 20 * US); /* RACK.rtt 10 us */
	ck_assert_uint_eq(ur_rack_reo_wnd(&r, 0, false, 0), 2500);
	/* sent 1 us earlier, answered 2 us later: 3 us late */
	deliver(1, 9 * US, false, true, 22 * US);
	ck_assert(r.reordering_seen);
	ck_assert_uint_eq(r.reo_late_ns, 3 * US);
	ck_assert_uint_eq(ur_rack_reo_wnd(&r, 0, true, 100), 3750);
	/* less late later: the window keeps the most */
	deliver(4, 30 * US, false, false, 40 * US);
	deliver(3, 29 * US, false, true, 40 * US + 500);
	ck_assert_uint_eq(r.reo_late_ns, 3 * US);
	/* a retransmission below the highest SACKed tells nothing of lateness */
	deliver(5, 31 * US, true, true, 50 * US);
	ck_assert_uint_eq(r.reo_late_ns, 3 * US);
	/* the multiplier applies to it, SRTT caps it */
	ur_rack_spurious(&r, 0, 10);
	ck_assert_uint_eq(ur_rack_reo_wnd(&r, 0, false, 0), 7500);
	ck_assert_uint_eq(ur_rack_reo_wnd(&r, 5 * US, false, 0), 5 * US);
}
END_TEST

START_TEST(test_window_growth_is_bounded)
{
	uint32_t psn = 0;

	for (unsigned i = 0; i < 1000; i++, psn = ur_psn_add(psn, 10))
		ur_rack_spurious(&r, psn, ur_psn_add(psn, 10));
	ck_assert_uint_eq(r.reo_mult, UR_RACK_MULT_MAX);
}
END_TEST

/* RFC 8985 6.2 step 5: lost once a packet sent after it was delivered and
 * RACK.rtt + the window have passed since it left; else the earliest such
 * time comes back for the timer. */
START_TEST(test_lost_and_when)
{
	uint64_t when = UR_TIME_NEVER;
	const uint64_t wnd = 3 * US;

	/* packet 10 left at 100 us, delivered at 110 us: RACK.rtt 10 us */
	deliver(10, 100 * US, false, false, 110 * US);
	/* sent after RACK's packet (or it): never lost on its account */
	ck_assert(!ur_rack_lost(&r, 100 * US, 10, wnd, 500 * US, &when));
	ck_assert(!ur_rack_lost(&r, 101 * US, 11, wnd, 500 * US, &when));
	ck_assert_uint_eq(when, UR_TIME_NEVER);
	/* sent 1 us before it: lost at 99 + 10 + 3 = 112 us */
	ck_assert(!ur_rack_lost(&r, 99 * US, 9, wnd, 110 * US, &when));
	ck_assert_uint_eq(when, 112 * US);
	/* sent 5 us before it: already past its window */
	ck_assert(ur_rack_lost(&r, 95 * US, 5, wnd, 110 * US, &when));
	ck_assert_uint_eq(when, 112 * US);
	/* a later deadline does not move the timer; an earlier one does */
	ck_assert(!ur_rack_lost(&r, 99 * US + 500, 8, wnd, 110 * US, &when));
	ck_assert_uint_eq(when, 112 * US);
	ck_assert(!ur_rack_lost(&r, 98 * US, 7, wnd, 110 * US, &when));
	ck_assert_uint_eq(when, 111 * US);
	/* at the deadline exactly, lost */
	ck_assert(ur_rack_lost(&r, 99 * US, 9, wnd, 112 * US, &when));
	/* with no window (a path that keeps order) any earlier packet is lost at once */
	ck_assert(ur_rack_lost(&r, 99 * US + 999, 9, 0, 110 * US, &when));
	/* transmission orders wrap: 0xffffffff was sent before 10 */
	ck_assert(ur_rack_lost(&r, 90 * US, 0xffffffffu, wnd, 110 * US, &when));
}
END_TEST

/* A lost retransmission is found the same way: its own transmission counts. */
START_TEST(test_lost_retransmission)
{
	uint64_t when = UR_TIME_NEVER;

	deliver(10, 100 * US, false, false, 110 * US);
	/* PSN resent at 111 us as transmission 11: not judged by packet 10 */
	ck_assert(!ur_rack_lost(&r, 111 * US, 11, 0, 200 * US, &when));
	/* a packet sent after the retransmission is delivered */
	deliver(12, 112 * US, false, false, 122 * US);
	ck_assert(!ur_rack_lost(&r, 111 * US, 11, 2 * US, 122 * US, &when));
	ck_assert_uint_eq(when, 123 * US);
	ck_assert(ur_rack_lost(&r, 111 * US, 11, 2 * US, 123 * US, &when));
}
END_TEST

static Suite *rack_suite(void)
{
	Suite *s = suite_create("sr_rack");
	TCase *tc = tcase_create("rack");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_fresh);
	tcase_add_test(tc, test_follows_latest_sent);
	tcase_add_test(tc, test_retransmission_samples);
	tcase_add_test(tc, test_window_without_reordering);
	tcase_add_test(tc, test_window_adapts);
	tcase_add_test(tc, test_window_from_lateness);
	tcase_add_test(tc, test_window_growth_is_bounded);
	tcase_add_test(tc, test_lost_and_when);
	tcase_add_test(tc, test_lost_retransmission);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(rack_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
