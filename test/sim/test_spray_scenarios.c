/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Multipath in the simulator, the fast version of `uroce-lab experiment
 * spray`: a permutation on a 4-leaf, 4-spine fabric where host i sends
 * 256 KB to host i + 4, so pinning each sender to the spine of its position
 * gives every flow a path of its own (the reference with no collisions).
 *  - every byte arrives, checked, under every path policy and both modes;
 *  - pinned paths keep order: neither mode resends anything;
 *  - ECMP keeps order too, but hashed flows collide: no flow finishes sooner;
 *  - spraying over spines 1 us apart reorders: go-back-N takes it for loss and
 *    resends half as much again as selective repeat or more, which keeps more of the goodput;
 *  - selective repeat's reordering window (RACK) holds a sprayed flow near
 *    the goodput of an unsprayed one, with few needless retransmissions;
 *  - all-to-all delivers every byte too, and PFC between every switch makes
 *    an oversubscribed fabric with small buffers lossless;
 *  - a ring all-reduce runs its 2(n-1) steps, every byte checked, each step
 *    lasting as long as its slowest flow, and repeats bit for bit;
 *  - every run reports Jain's index in (0, 1] and a time-averaged queue no
 *    deeper than the deepest;
 *  - a run repeats bit for bit.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "permutation.h"

/* Flows start once every SR pair has agreed: a message begun before keeps
 * go-back-N framing, and these scenarios compare the two modes. */
#define START_PS (50 * SIM_PS_PER_US)

static void run(enum sim_path_policy path, enum ur_retx_mode mode, struct sim_permutation_result *r)
{
	struct sim_permutation_cfg c;

	sim_permutation_cfg_default(&c);
	c.topo.path = path;
	c.topo.skew_ps = 1 * SIM_PS_PER_US;
	c.mode = mode;
	c.shift = true;
	c.verify = true;
	c.start_ps = START_PS;
	ck_assert_int_eq(sim_permutation_run(&c, r), 0);
	ck_assert_uint_eq(r->flows, 16);
	ck_assert_msg(r->completed == r->flows, "%s: %u of %u flows done",
		      sim_path_policy_name(path), r->completed, r->flows);
	ck_assert_uint_eq(r->errors, 0);
	ck_assert_uint_eq(r->verify_failures, 0);
}

START_TEST(test_pinned_and_ecmp_keep_order)
{
	struct sim_permutation_result pin[2], ecmp[2];

	for (int m = 0; m < 2; m++) {
		run(SIM_PATH_PINNED, m ? UR_RETX_SR : UR_RETX_GBN, &pin[m]);
		run(SIM_PATH_ECMP, m ? UR_RETX_SR : UR_RETX_GBN, &ecmp[m]);
		ck_assert_uint_eq(pin[m].retx_packets, 0);
		ck_assert_uint_eq(ecmp[m].retx_packets, 0);
		/* one flow per link: close to a flow alone on the fabric */
		ck_assert_msg(pin[m].fct_p99_ps <= pin[m].ideal_fct_ps * 5 / 4,
			      "pinned p99 %.1f us", (double)pin[m].fct_p99_ps / SIM_PS_PER_US);
		ck_assert_uint_ge(ecmp[m].fct_p99_ps, pin[m].fct_p99_ps);
	}
}
END_TEST

START_TEST(test_spraying_reorders_gbn_more_than_sr)
{
	static const enum sim_path_policy spray[] = {SIM_PATH_SPRAY_RR, SIM_PATH_SPRAY_RANDOM};
	struct sim_permutation_result gbn, sr, ref;

	run(SIM_PATH_PINNED, UR_RETX_SR, &ref);
	for (unsigned i = 0; i < 2; i++) {
		run(spray[i], UR_RETX_GBN, &gbn);
		run(spray[i], UR_RETX_SR, &sr);
		ck_assert_msg(2 * gbn.retx_packets >= 3 * sr.retx_packets && gbn.nak_seq > 0,
			      "%s: gbn retx %llu, sr retx %llu", sim_path_policy_name(spray[i]),
			      (unsigned long long)gbn.retx_packets,
			      (unsigned long long)sr.retx_packets);
		ck_assert_msg(sr.goodput_gbps >= 1.3 * gbn.goodput_gbps,
			      "%s: sr %.0f, gbn %.0f Gb/s", sim_path_policy_name(spray[i]),
			      sr.goodput_gbps, gbn.goodput_gbps);
		/* a reordering window: SR holds most of what paths pinned
		 * never to collide give (random spraying does collide) */
		ck_assert_msg(sr.goodput_gbps >= 0.8 * ref.goodput_gbps, "%s: sr %.0f of %.0f Gb/s",
			      sim_path_policy_name(spray[i]), sr.goodput_gbps, ref.goodput_gbps);
	}
}
END_TEST

/*
 * Two hosts on two leaves send each other 4 MB, sprayed packet by packet
 * over two spines 2 us apart: half the packets are overtaken by several
 * others. Selective repeat must hold the goodput of the same flows pinned
 * to one spine, with hardly a retransmission (RFC 8985's window, opened by
 * the first reordering); IRN's rule (a PSN below one SACKed is lost at
 * once) resent a third of the packets and kept 0.75 of it. Go-back-N
 * collapses.
 */
START_TEST(test_sr_tolerates_two_path_reordering)
{
	struct sim_permutation_result r[2][2]; /* [sprayed][sr] */
	struct sim_permutation_cfg c;
	uint64_t packets;

	for (int spray = 0; spray < 2; spray++) {
		for (int m = 0; m < 2; m++) {
			sim_permutation_cfg_default(&c);
			c.topo.hosts_per_leaf = 1;
			c.topo.leaves = 2;
			c.topo.spines = 2;
			c.topo.path = spray ? SIM_PATH_SPRAY_RR : SIM_PATH_PINNED;
			c.topo.skew_ps = 2 * SIM_PS_PER_US;
			c.mode = m ? UR_RETX_SR : UR_RETX_GBN;
			c.flow_bytes = 4 << 20;
			c.verify = true;
			c.start_ps = START_PS;
			ck_assert_int_eq(sim_permutation_run(&c, &r[spray][m]), 0);
			ck_assert_uint_eq(r[spray][m].flows, 2);
			ck_assert_uint_eq(r[spray][m].completed, 2);
			ck_assert_uint_eq(r[spray][m].errors + r[spray][m].verify_failures, 0);
			ck_assert_uint_eq(r[spray][m].drops, 0);
		}
	}
	packets = 2 * (c.flow_bytes / c.mtu);
	/* pinned: nothing reordered, nothing resent */
	ck_assert_uint_eq(r[0][0].retx_packets + r[0][1].retx_packets, 0);
	ck_assert_msg(r[1][1].goodput_gbps >= 0.95 * r[0][1].goodput_gbps,
		      "sprayed sr %.1f, pinned sr %.1f Gb/s", r[1][1].goodput_gbps,
		      r[0][1].goodput_gbps);
	/* needless retransmissions: at most 1% of the packets */
	ck_assert_msg(r[1][1].retx_packets * 100 <= packets,
		      "sprayed sr resent %llu of %llu packets (%llu found spurious)",
		      (unsigned long long)r[1][1].retx_packets, (unsigned long long)packets,
		      (unsigned long long)r[1][1].sr_spurious_retx);
	ck_assert_uint_le(r[1][1].sr_spurious_retx, r[1][1].retx_packets);
	/* go-back-N takes every overtaken packet for a loss */
	ck_assert_msg(r[1][0].goodput_gbps < 0.5 * r[0][0].goodput_gbps,
		      "sprayed gbn %.1f, pinned gbn %.1f Gb/s", r[1][0].goodput_gbps,
		      r[0][0].goodput_gbps);
	ck_assert_uint_gt(r[1][0].nak_seq, 0);
}
END_TEST

START_TEST(test_all_to_all_delivers)
{
	struct sim_permutation_cfg c;
	struct sim_permutation_result r;

	sim_permutation_cfg_default(&c);
	c.topo.path = SIM_PATH_SPRAY_RR;
	c.topo.skew_ps = 1 * SIM_PS_PER_US;
	c.mode = UR_RETX_SR;
	c.all_to_all = true;
	c.flow_bytes = c.msg_size = 16 * 1024;
	c.verify = true;
	ck_assert_int_eq(sim_permutation_run(&c, &r), 0);
	ck_assert_uint_eq(r.flows, 16 * 15);
	ck_assert_uint_eq(r.completed, r.flows);
	ck_assert_uint_eq(r.errors + r.verify_failures, 0);
}
END_TEST

/* K random permutations at once: K flows from and to every host, all delivered. */
START_TEST(test_flows_per_host)
{
	struct sim_permutation_cfg c;
	struct sim_permutation_result one, r;

	sim_permutation_cfg_default(&c);
	c.topo.path = SIM_PATH_SPRAY_RR;
	c.mode = UR_RETX_SR;
	c.flow_bytes = c.msg_size = 16 * 1024;
	c.verify = true;
	ck_assert_int_eq(sim_permutation_run(&c, &one), 0);
	c.flows_per_host = 1; /* the same as unset: one permutation */
	ck_assert_int_eq(sim_permutation_run(&c, &r), 0);
	ck_assert(!memcmp(&one, &r, sizeof(r)));
	c.flows_per_host = 3;
	ck_assert_int_eq(sim_permutation_run(&c, &r), 0);
	ck_assert_uint_eq(r.flows, 16 * 3);
	ck_assert_uint_eq(r.completed, r.flows);
	ck_assert_uint_eq(r.errors + r.verify_failures, 0);
	/* three times the bytes through the same host links: it takes longer */
	ck_assert_uint_gt(r.done_ps, 2 * one.done_ps);
	c.shift = true; /* fixed permutations have no K random ones */
	ck_assert_int_eq(sim_permutation_run(&c, &r), -1);
}
END_TEST

/* 2:1 oversubscribed, small buffers: ECMP drops and SR times out; PFC loses nothing. */
START_TEST(test_pfc_makes_the_fabric_lossless)
{
	struct sim_permutation_cfg c;
	struct sim_permutation_result lossy, pfc;

	sim_permutation_cfg_default(&c);
	c.topo.spines = 2;
	c.topo.queue.buffer_bytes = 256 * 1024;
	c.mode = UR_RETX_SR;
	c.all_to_all = true;
	c.flow_bytes = c.msg_size = 64 * 1024;
	c.verify = true;
	ck_assert_int_eq(sim_permutation_run(&c, &lossy), 0);
	c.topo.pfc = true;
	ck_assert_int_eq(sim_permutation_run(&c, &pfc), 0);
	ck_assert_uint_gt(lossy.drops, 0);
	ck_assert_uint_eq(pfc.drops, 0);
	ck_assert_uint_gt(pfc.pauses, 0);
	ck_assert_uint_eq(pfc.retx_packets, 0);
	ck_assert_uint_eq(pfc.completed, pfc.flows);
	ck_assert_uint_eq(pfc.errors + pfc.verify_failures, 0);
	ck_assert_msg(pfc.goodput_gbps > 2 * lossy.goodput_gbps, "pfc %.0f, lossy %.0f Gb/s",
		      pfc.goodput_gbps, lossy.goodput_gbps);
}
END_TEST

START_TEST(test_spray_repeats_bit_for_bit)
{
	struct sim_permutation_result a, b;

	run(SIM_PATH_SPRAY_RANDOM, UR_RETX_SR, &a);
	run(SIM_PATH_SPRAY_RANDOM, UR_RETX_SR, &b);
	ck_assert(!memcmp(&a, &b, sizeof(a)));
}
END_TEST

static void run_allreduce(enum sim_path_policy path, enum ur_retx_mode mode, uint64_t start_ps,
			  struct sim_permutation_result *r)
{
	struct sim_permutation_cfg c;

	sim_permutation_cfg_default(&c);
	c.topo.path = path;
	c.topo.skew_ps = 1 * SIM_PS_PER_US;
	c.mode = mode;
	c.allreduce = true;
	c.flow_bytes = 64 * 1024; /* per host per step */
	c.msg_size = 16 * 1024;
	c.verify = true;
	c.start_ps = start_ps;
	ck_assert_int_eq(sim_permutation_run(&c, r), 0);
	ck_assert_uint_eq(r->flows, 16);
	ck_assert_uint_eq(r->steps, 2 * (16 - 1));
	ck_assert_uint_eq(r->completed, r->flows);
	ck_assert_uint_eq(r->errors + r->verify_failures, 0);
	/* a step lasts as long as its slowest flow, and the steps follow each other */
	ck_assert_uint_ge(r->step_max_ps, r->fct_max_ps);
	ck_assert_uint_ge(r->done_ps, (uint64_t)r->steps * r->fct_p50_ps);
	ck_assert_uint_le(r->done_ps, (uint64_t)r->steps * r->step_max_ps);
	ck_assert_uint_ge(r->done_ps, (uint64_t)r->steps * r->ideal_fct_ps);
	ck_assert(r->jain > 0 && r->jain <= 1.0 + 1e-9);
}

START_TEST(test_ring_allreduce)
{
	struct sim_permutation_result ecmp, gbn, sr, again;

	run_allreduce(SIM_PATH_ECMP, UR_RETX_SR, START_PS, &ecmp);
	ck_assert_uint_eq(ecmp.retx_packets, 0);
	/* spraying reorders: go-back-N resends, and every step waits for its worst flow */
	run_allreduce(SIM_PATH_SPRAY_RR, UR_RETX_GBN, START_PS, &gbn);
	run_allreduce(SIM_PATH_SPRAY_RR, UR_RETX_SR, START_PS, &sr);
	ck_assert_uint_gt(gbn.retx_packets, sr.retx_packets);
	ck_assert_msg(sr.done_ps < gbn.done_ps, "sr %.1f us, gbn %.1f us",
		      (double)sr.done_ps / SIM_PS_PER_US, (double)gbn.done_ps / SIM_PS_PER_US);
	run_allreduce(SIM_PATH_SPRAY_RR, UR_RETX_SR, START_PS, &again);
	ck_assert(!memcmp(&sr, &again, sizeof(sr)));
}
END_TEST

/*
 * The times count from the flows' start: go-back-N needs no agreement, so
 * an all-reduce that starts 50 us late runs exactly as one that starts at
 * 0, steps, FCTs and all (a first step timed from 0, or a collective's
 * time not less its start, would differ by the start).
 */
START_TEST(test_allreduce_times_count_from_start)
{
	struct sim_permutation_result a, b;

	run_allreduce(SIM_PATH_SPRAY_RR, UR_RETX_GBN, 0, &a);
	run_allreduce(SIM_PATH_SPRAY_RR, UR_RETX_GBN, START_PS, &b);
	ck_assert_uint_gt(a.retx_packets, 0); /* reordered, not an idle fabric */
	ck_assert_uint_eq(a.retx_packets, b.retx_packets);
	ck_assert_uint_eq(a.done_ps, b.done_ps);
	ck_assert_uint_eq(a.step_max_ps, b.step_max_ps);
	ck_assert_uint_eq(a.fct_p50_ps, b.fct_p50_ps);
	ck_assert_uint_eq(a.fct_max_ps, b.fct_max_ps);
	ck_assert_double_eq(a.goodput_gbps, b.goodput_gbps);
	/* the queues' time averages leave out the idle fabric before the start */
	ck_assert_double_eq(a.queue_hot, b.queue_hot);
	ck_assert_double_eq(a.queue_mean, b.queue_mean);
	ck_assert_uint_eq(b.sim_ps, a.sim_ps + START_PS);
}
END_TEST

START_TEST(test_queue_and_fairness_reported)
{
	struct sim_permutation_result r;

	run(SIM_PATH_ECMP, UR_RETX_GBN, &r);
	ck_assert(r.jain > 0 && r.jain <= 1.0 + 1e-9);
	ck_assert(r.queue_hot > 0 && r.queue_hot <= (double)r.queue_max);
	ck_assert(r.queue_mean > 0 && r.queue_mean <= r.queue_hot);
	/* pinned with --shift: one flow per link, every flow alike */
	run(SIM_PATH_PINNED, UR_RETX_GBN, &r);
	ck_assert_msg(r.jain > 0.9, "pinned Jain %.3f", r.jain);
}
END_TEST

static Suite *spray_suite(void)
{
	Suite *s = suite_create("spray_scenarios");
	TCase *tc = tcase_create("leafspine");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_pinned_and_ecmp_keep_order);
	tcase_add_test(tc, test_spraying_reorders_gbn_more_than_sr);
	tcase_add_test(tc, test_sr_tolerates_two_path_reordering);
	tcase_add_test(tc, test_all_to_all_delivers);
	tcase_add_test(tc, test_flows_per_host);
	tcase_add_test(tc, test_pfc_makes_the_fabric_lossless);
	tcase_add_test(tc, test_spray_repeats_bit_for_bit);
	tcase_add_test(tc, test_ring_allreduce);
	tcase_add_test(tc, test_allreduce_times_count_from_start);
	tcase_add_test(tc, test_queue_and_fairness_reported);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(spray_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
