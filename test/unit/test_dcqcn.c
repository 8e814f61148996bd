/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The DCQCN reaction point, event by event: exact rates after given CNP,
 * timer and byte-counter events. The expected numbers follow from the rules
 * in dcqcn.h with integer arithmetic (rates in kb/s, alpha in 2^-20); each
 * test says how. Line rate 100 Gb/s = 100,000,000 kb/s throughout.
 */
#include <check.h>
#include <stdint.h>

#include "dcqcn.h"

#define LINE 100000000ull
#define A(x) ((uint32_t)(x)) /* alpha in 2^-20 */

static struct ur_dcqcn_params p;
static struct ur_dcqcn d;

static void setup(void)
{
	ur_dcqcn_params_default(&p);
	ur_dcqcn_init(&d);
}

START_TEST(test_nvidia_defaults)
{
	struct ur_dev_config cfg;

	/* the firmware defaults NVIDIA documents (mlxconfig RPG_*, DCE_TCP_*, ...) */
	ck_assert_uint_eq(p.rpg_time_reset_us, 300);
	ck_assert_uint_eq(p.rpg_byte_reset, 32767);
	ck_assert_uint_eq(p.rpg_threshold, 1);
	ck_assert_uint_eq(p.rpg_max_rate_mbps, 0);
	ck_assert_uint_eq(p.rpg_ai_rate_mbps, 5);
	ck_assert_uint_eq(p.rpg_hai_rate_mbps, 50);
	ck_assert_uint_eq(p.rpg_gd, 11);
	ck_assert_uint_eq(p.rpg_min_dec_fac, 50);
	ck_assert_uint_eq(p.rpg_min_rate_mbps, 1);
	ck_assert_uint_eq(p.rate_to_set_on_first_cnp_mbps, 0);
	ck_assert_uint_eq(p.dce_tcp_g, 1019);
	ck_assert_uint_eq(p.dce_tcp_rtt_us, 1);
	ck_assert_uint_eq(p.rate_reduce_monitor_period_us, 4);
	ck_assert_uint_eq(p.initial_alpha_value, 1023);
	ck_assert(!p.clamp_tgt_rate);
	ck_assert(p.clamp_tgt_rate_after_time_inc);
	ur_dev_config_default(&cfg);
	ck_assert_uint_eq(cfg.dcqcn_params.rpg_time_reset_us, 300);
	ck_assert_uint_eq(cfg.cnp_dscp, 48);
	ck_assert_uint_eq(cfg.cnp_interval_ns, 4000);
}
END_TEST

START_TEST(test_first_cnp_then_deferred_cut)
{
	/* first CNP at 1 us: limiter at line rate, alpha = 1023/1024 = 1047552;
	 * cut: 1e8 - (1e8 * 1047552 >> 21) = 1e8 - 49951171 = 50048829; Rt stays
	 * at the line rate (no clamp); then alpha = (1047552 * 1019 >> 10) + 5 * 1024 */
	ck_assert_uint_eq(ur_dcqcn_cnp(&d, &p, LINE, 1000), UR_DCQCN_NEW | UR_DCQCN_CUT);
	ck_assert(d.limited);
	ck_assert_uint_eq(d.rc, 50048829);
	ck_assert_uint_eq(d.rt, LINE);
	ck_assert_uint_eq(d.alpha, A(1047557));

	/* 2 us later, inside rate_reduce_monitor_period: two decays, the cut waits */
	ck_assert_uint_eq(ur_dcqcn_cnp(&d, &p, LINE, 3000), UR_DCQCN_DEFER);
	ck_assert(d.cut_pending);
	ck_assert_uint_eq(d.rc, 50048829);
	ck_assert_uint_eq(d.alpha, A(1037404));
	ck_assert_uint_eq(ur_dcqcn_cut_deadline(&d, &p), 5000);
	/* a third CNP while one is pending changes only alpha */
	ck_assert_uint_eq(ur_dcqcn_cnp(&d, &p, LINE, 3000), UR_DCQCN_DEFER);

	/* undo the third CNP's alpha for the next numbers: redo from scratch */
	setup();
	ur_dcqcn_cnp(&d, &p, LINE, 1000);
	ur_dcqcn_cnp(&d, &p, LINE, 3000);
	/* at 5 us the period ends: two more decays, then the cut */
	ck_assert(ur_dcqcn_cut_timer(&d, &p, 5000));
	ck_assert_uint_eq(d.alpha, A(1027297));
	ck_assert_uint_eq(d.rc, 25532241);
	ck_assert_uint_eq(d.rt, LINE);
	ck_assert(!d.cut_pending);
	/* nothing pending: the timer does nothing */
	ck_assert(!ur_dcqcn_cut_timer(&d, &p, 9000));
	ck_assert_uint_eq(d.cuts, 2);
}
END_TEST

START_TEST(test_cut_at_period_boundary)
{
	ur_dcqcn_cnp(&d, &p, LINE, 0);
	ck_assert_uint_eq(ur_dcqcn_cnp(&d, &p, LINE, 3999), UR_DCQCN_DEFER);
	ck_assert(ur_dcqcn_cut_timer(&d, &p, 4000));
	ck_assert_uint_eq(d.rc, 25411341);
	/* exactly one period after that cut: at once */
	ck_assert_uint_eq(ur_dcqcn_cnp(&d, &p, LINE, 8000), UR_DCQCN_CUT);
	ck_assert_uint_eq(d.rc, 13144685);
}
END_TEST

START_TEST(test_timer_recovery_to_release)
{
	/* after one cut, the timer alone: F = 1, so one fast recovery
	 * (Rc = (Rt + Rc + 1) / 2), then additive increases of a target already at
	 * the line rate: Rc halves its distance to 1e8 each time, 25 events */
	static const uint64_t want[] = {
		75024415, 87512208, 93756104, 96878052, 98439026, 99219513, 99609757,
		99804879, 99902440, 99951220, 99975610, 99987805, 99993903, 99996952,
		99998476, 99999238, 99999619, 99999810, 99999905, 99999953, 99999977,
		99999989, 99999995, 99999998, 99999999,
	};
	unsigned i;

	ur_dcqcn_cnp(&d, &p, LINE, 0);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		ck_assert_msg(ur_dcqcn_rate_timer(&d, &p, LINE), "released early at event %u", i);
		ck_assert_uint_eq(d.t, i + 1);
		ck_assert_uint_eq(d.rc, want[i]);
		ck_assert_uint_eq(d.rt, LINE);
	}
	/* the 26th reaches the line rate: the limiter is released */
	ck_assert(!ur_dcqcn_rate_timer(&d, &p, LINE));
	ck_assert(!d.limited);
	ck_assert_uint_eq(d.rc, LINE);
	ck_assert(!ur_dcqcn_rate_timer(&d, &p, LINE));
}
END_TEST

START_TEST(test_byte_counter)
{
	ur_dcqcn_cnp(&d, &p, LINE, 0);
	/* 32766 bytes: not yet; one more: BC = 1, fast recovery */
	ck_assert(ur_dcqcn_sent(&d, &p, LINE, 32766));
	ck_assert_uint_eq(d.bc, 0);
	ck_assert_uint_eq(d.rc, 50048829);
	ck_assert(ur_dcqcn_sent(&d, &p, LINE, 1));
	ck_assert_uint_eq(d.bc, 1);
	ck_assert_uint_eq(d.rc, 75024415);
	ck_assert_uint_eq(d.bytes, 0);
	/* several expiries in one call count one by one */
	ck_assert(ur_dcqcn_sent(&d, &p, LINE, 3 * 32767 + 5));
	ck_assert_uint_eq(d.bc, 4);
	ck_assert_uint_eq(d.bytes, 5);
	/* off: nothing counts */
	setup();
	p.rpg_byte_reset = 0;
	ur_dcqcn_cnp(&d, &p, LINE, 0);
	ck_assert(ur_dcqcn_sent(&d, &p, LINE, 1 << 30));
	ck_assert_uint_eq(d.bc, 0);
	ck_assert_uint_eq(d.rc, 50048829);
}
END_TEST

START_TEST(test_additive_and_hyper_increase)
{
	static const struct {
		bool timer; /* else a byte-counter expiry */
		uint32_t t, bc;
		uint64_t rc, rt;
	} ev[] = {
		{false, 0, 1, 38145959, 50048829}, /* max 1 <= F: fast recovery */
		{false, 0, 2, 44099894, 50053829}, /* max 2 > F, min 0: additive +5 Mb/s */
		{true, 1, 2, 47079362, 50058829},  /* min 1: still additive */
		{true, 2, 2, 48594096, 50108829},  /* min 2 > F: hyper +1 x 50 Mb/s */
		{false, 2, 3, 49376463, 50158829}, /* min 2: +1 x 50 */
		{true, 3, 3, 49817646, 50258829},  /* min 3: +2 x 50 */
	};

	/* clamp_tgt_rate: the second cut sets Rt = Rc = 50048829 and cuts Rc */
	p.clamp_tgt_rate = true;
	ur_dcqcn_cnp(&d, &p, LINE, 0);
	ur_dcqcn_cnp(&d, &p, LINE, 10000);
	ck_assert_uint_eq(d.rt, 50048829);
	ck_assert_uint_eq(d.rc, 26243088);

	for (unsigned i = 0; i < sizeof(ev) / sizeof(ev[0]); i++) {
		if (ev[i].timer)
			ur_dcqcn_rate_timer(&d, &p, LINE);
		else
			ur_dcqcn_sent(&d, &p, LINE, p.rpg_byte_reset);
		ck_assert_uint_eq(d.t, ev[i].t);
		ck_assert_uint_eq(d.bc, ev[i].bc);
		ck_assert_uint_eq(d.rc, ev[i].rc);
		ck_assert_uint_eq(d.rt, ev[i].rt);
	}
	ck_assert_uint_eq(d.increases, 6);
}
END_TEST

START_TEST(test_target_rate_rules)
{
	/* a train of cuts with no increase in between keeps Rt at the rate
	 * before the train (QCN): recovery aims back there */
	ur_dcqcn_cnp(&d, &p, LINE, 0);
	ck_assert_uint_eq(ur_dcqcn_cnp(&d, &p, LINE, 10000), UR_DCQCN_CUT);
	ck_assert_uint_eq(d.rc, 26243088);
	ck_assert_uint_eq(d.rt, LINE);

	/* after a byte-counter increase the next cut sets Rt = Rc first */
	setup();
	ur_dcqcn_cnp(&d, &p, LINE, 0);
	ur_dcqcn_sent(&d, &p, LINE, 32767);
	ck_assert_uint_eq(d.rc, 75024415);
	ck_assert_uint_eq(ur_dcqcn_cnp(&d, &p, LINE, 10000), UR_DCQCN_CUT);
	ck_assert_uint_eq(d.rt, 75024415);
	ck_assert_uint_eq(d.rc, 39339029);
	/* after a timer increase too, with clamp_tgt_rate_after_time_inc (default) */
	ur_dcqcn_rate_timer(&d, &p, LINE);
	ck_assert_uint_eq(d.rc, 57181722);
	ck_assert_uint_eq(ur_dcqcn_cnp(&d, &p, LINE, 20000), UR_DCQCN_CUT);
	ck_assert_uint_eq(d.rt, 57181722);
	ck_assert_uint_eq(d.rc, 31276108);

	/* without it a timer increase leaves Rt where it was */
	setup();
	p.clamp_tgt_rate_after_time_inc = false;
	ur_dcqcn_cnp(&d, &p, LINE, 0);
	ur_dcqcn_rate_timer(&d, &p, LINE);
	ur_dcqcn_cnp(&d, &p, LINE, 20000);
	ck_assert_uint_eq(d.rt, LINE);
	ck_assert_uint_eq(d.rc, 41043824);
}
END_TEST

START_TEST(test_floors_and_first_rate)
{
	/* rate_to_set_on_first_cnp 40 Gb/s, and a cut may keep no less than 90% */
	p.rate_to_set_on_first_cnp_mbps = 40000;
	p.rpg_min_dec_fac = 90;
	ur_dcqcn_cnp(&d, &p, LINE, 0);
	ck_assert_uint_eq(d.rc, 36000000);
	ck_assert_uint_eq(d.rt, 40000000);

	/* rpg_min_rate 30 Gb/s: the second cut stops there */
	setup();
	p.rpg_min_rate_mbps = 30000;
	ur_dcqcn_cnp(&d, &p, LINE, 0);
	ur_dcqcn_cnp(&d, &p, LINE, 4000);
	ck_assert_uint_eq(d.rc, 30000000);

	/* a 1 Gb/s port cut every 4 us: down to the 1 Mb/s floor, never below */
	setup();
	for (unsigned i = 0; i < 20; i++)
		ur_dcqcn_cnp(&d, &p, 1000000, i * 4000ull);
	ck_assert_uint_eq(d.rc, 1000);

	/* rpg_max_rate 60 Gb/s: the limiter starts there and is released there */
	setup();
	p.rpg_max_rate_mbps = 60000;
	ur_dcqcn_cnp(&d, &p, LINE, 0);
	ck_assert_uint_eq(d.rc, 30029297);
	ck_assert_uint_eq(d.rt, 60000000);
	ck_assert(ur_dcqcn_rate_timer(&d, &p, LINE));
	ck_assert_uint_eq(d.rc, 45014649);
}
END_TEST

START_TEST(test_alpha_decay)
{
	ur_dcqcn_cnp(&d, &p, LINE, 0);
	ck_assert_uint_eq(d.alpha, A(1047557));
	/* whole dce_tcp_rtt periods only */
	ck_assert_uint_eq(ur_dcqcn_alpha(&d, &p, 999), A(1047557));
	ck_assert_uint_eq(ur_dcqcn_alpha(&d, &p, 1000), A(1042441));
	ck_assert_uint_eq(ur_dcqcn_alpha(&d, &p, 10000), A(997511));
	/* exponential: (1019/1024)^1000 of it after 1 ms, 0 after 3 ms */
	ck_assert_uint_eq(ur_dcqcn_alpha(&d, &p, 1000000), A(7743));
	ck_assert_uint_eq(ur_dcqcn_alpha(&d, &p, 3000000), 0);
	/* a CNP raises it by (1024 - g) / 1024 of one */
	ur_dcqcn_cnp(&d, &p, LINE, 3000000);
	ck_assert_uint_eq(d.alpha, A(5 * 1024));
	/* off (dce_tcp_rtt 0): no decay */
	setup();
	p.dce_tcp_rtt_us = 0;
	ur_dcqcn_cnp(&d, &p, LINE, 0);
	ck_assert_uint_eq(ur_dcqcn_alpha(&d, &p, 5000000), A(1047557));
}
END_TEST

START_TEST(test_paper_profile)
{
	ur_dcqcn_params_paper(&p);
	ck_assert_uint_eq(p.rpg_time_reset_us, 55);
	ck_assert_uint_eq(p.dce_tcp_rtt_us, 55);
	ck_assert_uint_eq(p.dce_tcp_g, 1020); /* g = 1/256 */
	ck_assert_uint_eq(p.rpg_threshold, 5);
	ck_assert_uint_eq(p.rpg_byte_reset, 10u << 20);
	ck_assert_uint_eq(p.rpg_ai_rate_mbps, 40);
	ck_assert(p.clamp_tgt_rate);
	/* every CNP cuts, Rt = Rc each time, and F = 5 fast recoveries */
	ur_dcqcn_cnp(&d, &p, LINE, 0);
	ck_assert_uint_eq(ur_dcqcn_cnp(&d, &p, LINE, 1), UR_DCQCN_CUT);
	ck_assert_uint_eq(d.rt, 50048829);
	for (unsigned i = 0; i < 5; i++) {
		uint64_t rt = d.rt;

		ur_dcqcn_rate_timer(&d, &p, LINE);
		ck_assert_uint_eq(d.rt, rt);
	}
	ur_dcqcn_rate_timer(&d, &p, LINE);
	ck_assert_uint_eq(d.rt, 50048829 + 40000);
}
END_TEST

static Suite *dcqcn_suite(void)
{
	Suite *s = suite_create("dcqcn");
	TCase *tc = tcase_create("reaction point");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_nvidia_defaults);
	tcase_add_test(tc, test_first_cnp_then_deferred_cut);
	tcase_add_test(tc, test_cut_at_period_boundary);
	tcase_add_test(tc, test_timer_recovery_to_release);
	tcase_add_test(tc, test_byte_counter);
	tcase_add_test(tc, test_additive_and_hyper_increase);
	tcase_add_test(tc, test_target_rate_rules);
	tcase_add_test(tc, test_floors_and_first_rate);
	tcase_add_test(tc, test_alpha_decay);
	tcase_add_test(tc, test_paper_profile);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(dcqcn_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
