/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Congestion control end to end in the simulator, the fast version of
 * `uroce-lab experiment incast` and `converge` at 100 Gb/s:
 *  - DCQCN keeps an N-to-1 incast lossless with the queue near K_max, the
 *    link at least 90% busy and the flows fair (Jain >= 0.95);
 *  - without congestion control the buffer overflows and go-back-N loses
 *    much of the goodput, which selective repeat recovers; PFC is lossless;
 *  - two flows share the link fairly, and what each sends matches the
 *    DCQCN rate its pacer enforces;
 *  - no configuration reports more goodput than the link can carry.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "incast.h"

#define MS (1000 * SIM_PS_PER_US)

static const unsigned incast_n[] = {4, 16};

/* Goodput counts bytes that crossed the bottleneck in the window: never more than it carries. */
static void assert_within_link(const struct sim_incast_cfg *c, const struct sim_incast_result *r,
			       const char *what)
{
	/* one packet may straddle the start of the window */
	double slack =
	    (double)c->mtu * 8 / ((double)(c->duration_ps - c->warmup_ps) / SIM_PS_PER_S);

	ck_assert_msg(r->goodput_gbps * 1e9 <= (double)c->rate_bps + slack,
		      "%s: goodput %.3f Gb/s on a %.0f Gb/s link", what, r->goodput_gbps,
		      (double)c->rate_bps / 1e9);
	ck_assert_msg(r->goodput_fraction <= 1.0 + slack / (double)c->rate_bps,
		      "%s: %.4f of the lossless goodput", what, r->goodput_fraction);
}

START_TEST(test_incast_dcqcn)
{
	struct sim_incast_cfg c;
	struct sim_incast_result r;

	sim_incast_cfg_default(&c);
	c.senders = incast_n[_i];
	ck_assert_int_eq(sim_incast_run(&c, &r), 0);
	ck_assert_uint_eq(r.errors, 0);
	ck_assert_uint_eq(r.drops, 0);
	ck_assert_msg(r.utilisation >= 0.90, "N %u: utilisation %.3f", c.senders, r.utilisation);
	ck_assert_msg(r.jain >= 0.95, "N %u: Jain %.3f", c.senders, r.jain);
	/* bounded near K_max once the incast burst is absorbed */
	ck_assert_msg(r.queue_p99 <= c.bottleneck.ecn_kmax * 5 / 4, "N %u: queue p99 %llu",
		      c.senders, (unsigned long long)r.queue_p99);
	ck_assert_uint_gt(r.marked, 0);
	ck_assert_uint_gt(r.cnps, 0);
	/* every CNP the receiver sent reached a sender and cut its rate */
	ck_assert_uint_eq(r.cnps_handled, r.cnps);
	ck_assert_uint_eq(r.pauses, 0);
	assert_within_link(&c, &r, "dcqcn");
}
END_TEST

START_TEST(test_incast_without_cc)
{
	struct sim_incast_cfg c;
	struct sim_incast_result gbn, sr, pfc;

	sim_incast_cfg_default(&c);
	c.senders = 16;
	c.duration_ps = 30 * MS;
	c.warmup_ps = 10 * MS;
	c.dcqcn = false;
	ck_assert_int_eq(sim_incast_run(&c, &gbn), 0);
	/* the buffer overflows and go-back-N resends whole windows */
	ck_assert_uint_gt(gbn.drops, 1000);
	ck_assert_uint_gt(gbn.retx_packets, gbn.drops);
	ck_assert_msg(gbn.goodput_fraction < 0.75, "gbn goodput %.3f", gbn.goodput_fraction);
	ck_assert_uint_eq(gbn.cnps, 0);
	assert_within_link(&c, &gbn, "gbn");

	c.mode = UR_RETX_SR;
	ck_assert_int_eq(sim_incast_run(&c, &sr), 0);
	ck_assert_uint_gt(sr.drops, 0);
	/* selective repeat resends only what was lost: the goodput comes back */
	ck_assert_msg(sr.goodput_fraction >= 0.95, "sr goodput %.3f", sr.goodput_fraction);
	ck_assert_uint_lt(sr.retx_packets, gbn.retx_packets / 4);
	assert_within_link(&c, &sr, "sr");

	c.mode = UR_RETX_GBN;
	c.pfc = true;
	ck_assert_int_eq(sim_incast_run(&c, &pfc), 0);
	ck_assert_uint_eq(pfc.drops, 0);
	ck_assert_uint_eq(pfc.retx_packets, 0);
	ck_assert_uint_gt(pfc.pauses, 0);
	ck_assert(pfc.paused_fraction > 0.5);
	ck_assert(pfc.utilisation >= 0.95);
	assert_within_link(&c, &pfc, "pfc");
	/* the queue holds about XOFF per paused ingress */
	ck_assert_uint_le(pfc.queue_p99, (uint64_t)c.senders * (c.pfc_xoff + 64 * 1024));
}
END_TEST

struct pace_check {
	uint64_t from_ps;
	unsigned n;
	double sent[2];
	double rate[2];
	unsigned limited[2];
};

static void pace_sample(void *arg, const struct sim_incast_sample *s)
{
	struct pace_check *pc = arg;

	if (s->t_ps <= pc->from_ps)
		return;
	pc->n++;
	for (unsigned i = 0; i < 2; i++) {
		pc->sent[i] += s->gbps[i];
		pc->rate[i] += s->rate_gbps[i];
		pc->limited[i] += s->rate_gbps[i] < 99.9;
	}
}

START_TEST(test_two_flows_share_and_are_paced)
{
	struct sim_incast_cfg c;
	struct sim_incast_result r;
	struct pace_check pc = {0};

	sim_incast_cfg_default(&c);
	c.senders = 2;
	c.start_ps[1] = 5 * MS;
	c.duration_ps = 40 * MS;
	c.warmup_ps = 15 * MS;
	c.sample_ps = 20 * SIM_PS_PER_US;
	c.sample = pace_sample;
	c.arg = &pc;
	pc.from_ps = c.warmup_ps;
	ck_assert_int_eq(sim_incast_run(&c, &r), 0);
	ck_assert_uint_eq(r.drops, 0);
	ck_assert_msg(r.jain >= 0.95, "Jain %.3f", r.jain);
	ck_assert(r.utilisation >= 0.95);
	for (unsigned i = 0; i < 2; i++) {
		double sent = pc.sent[i] / pc.n, rate = pc.rate[i] / pc.n;

		/* rate limited all along, and sending what the limiter allows */
		ck_assert_uint_eq(pc.limited[i], pc.n);
		ck_assert_msg(fabs(sent - rate) < 0.05 * rate, "flow %u sends %.2f at rate %.2f",
			      i, sent, rate);
	}
}
END_TEST

START_TEST(test_incast_repeats_bit_for_bit)
{
	struct sim_incast_cfg c;
	struct sim_incast_result a, b;

	sim_incast_cfg_default(&c);
	c.senders = 8;
	c.duration_ps = 5 * MS;
	c.warmup_ps = 1 * MS;
	ck_assert_int_eq(sim_incast_run(&c, &a), 0);
	ck_assert_int_eq(sim_incast_run(&c, &b), 0);
	ck_assert(memcmp(&a, &b, sizeof(a)) == 0);
}
END_TEST

static Suite *cc_suite(void)
{
	Suite *s = suite_create("cc_scenarios");
	TCase *tc = tcase_create("incast");

	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_incast_dcqcn, 0, sizeof(incast_n) / sizeof(incast_n[0]));
	tcase_add_test(tc, test_incast_without_cc);
	tcase_add_test(tc, test_two_flows_share_and_are_paced);
	tcase_add_test(tc, test_incast_repeats_bit_for_bit);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(cc_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
