/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The two-way sweep (issue 26): loss on both paths, data out and ACKs,
 * NAKs, SACKs and responses back, from 1e-4 to 5e-2, with reordering of
 * 0, 1% and 10% on both paths, in go-back-N and in selective repeat,
 * through the code of `uroce-lab sim --two-way` (tools/sim_run.c): every
 * message completes successfully with every byte checked, no retry counter
 * runs out, and selective repeat keeps at least 0.9 of its lossless
 * goodput at 1% loss both ways. A second case runs five opcodes at once,
 * one flow each, on the same impaired links. The table goes to the log.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "sim_run.h"
#include "workload.h"

static const double sweep_loss[] = {1e-4, 1e-3, 1e-2, 5e-2};
static const double sweep_reorder[] = {0, 0.01, 0.1};
#define REORDER_DEPTH 8
#define MESSAGES 100

static void sweep_opts(struct sim_opts *o, double reorder)
{
	sim_opts_default(o);
	o->messages = MESSAGES; /* of 1 MiB at 400 Gb/s, 10 us RTT, MTU 4096 */
	o->verify = true;
	o->two_way = true;
	o->reorder = reorder;
	o->reorder_depth = reorder > 0 ? REORDER_DEPTH : 0;
	o->quiet = true;
}

static void print_row(const char *what, enum ur_retx_mode mode, double loss, double reorder,
		      const struct sim_result *r, double of_lossless)
{
	printf("%-6s %-4s %-7g %-7g %8.3f %9.3f %8llu %6llu %8llu %7llu %s\n", what,
	       sim_mode_name(mode), loss, reorder, r->fraction, of_lossless,
	       (unsigned long long)r->retx_packets, (unsigned long long)r->naks,
	       (unsigned long long)r->timeouts, (unsigned long long)r->sr_timeouts,
	       r->errors || r->verify_failures || r->completed != MESSAGES ? "FAILED" : "ok");
	fflush(stdout);
}

START_TEST(test_two_way_sweep)
{
	static const enum ur_retx_mode modes[] = {UR_RETX_GBN, UR_RETX_SR};
	enum ur_retx_mode mode = modes[_i];
	struct sim_opts o;
	struct sim_result base, r;
	double sr_at_1pct = 0;

	/* the lossless goodput in the same setting, for the 0.9 target */
	sweep_opts(&o, 0);
	o.two_way = false;
	ck_assert_int_eq(sim_run_one(&o, mode, 0, &base), 0);
	ck_assert_uint_eq(base.completed, MESSAGES);
	printf("%-6s %-4s %-7s %-7s %8s %9s %8s %6s %8s %7s\n", "", "mode", "loss", "reorder",
	       "of link", "of p = 0", "retx", "NAKs", "ACK t/o", "SR RTOs");
	print_row("sweep", mode, 0, 0, &base, 1.0);
	for (unsigned j = 0; j < sizeof(sweep_reorder) / sizeof(sweep_reorder[0]); j++) {
		for (unsigned i = 0; i < sizeof(sweep_loss) / sizeof(sweep_loss[0]); i++) {
			double loss = sweep_loss[i], reorder = sweep_reorder[j];

			sweep_opts(&o, reorder);
			ck_assert_int_eq(sim_run_one(&o, mode, loss, &r), 0);
			print_row("sweep", mode, loss, reorder, &r, r.fraction / base.fraction);
			/* an exhausted retry counter is an error completion (RETRY_EXC_ERR) */
			ck_assert_msg(r.errors == 0, "%s loss %g reorder %g: %llu error completions",
				      sim_mode_name(mode), loss, reorder, (unsigned long long)r.errors);
			ck_assert_msg(r.completed == MESSAGES,
				      "%s loss %g reorder %g: %llu of %u messages completed",
				      sim_mode_name(mode), loss, reorder,
				      (unsigned long long)r.completed, MESSAGES);
			ck_assert_msg(r.verify_failures == 0, "%s loss %g reorder %g: %llu corrupted",
				      sim_mode_name(mode), loss, reorder,
				      (unsigned long long)r.verify_failures);
			if (loss == 1e-2 && reorder == 0)
				sr_at_1pct = r.fraction / base.fraction;
		}
	}
	if (mode == UR_RETX_SR)
		ck_assert_msg(sr_at_1pct >= 0.9,
			      "sr at 1%% loss both ways keeps %.3f of its lossless goodput (< 0.9)",
			      sr_at_1pct);
}
END_TEST

/* Two nodes whose links lose `loss` and reorder 10% of packets, each
 * direction impaired once: a's uplink carries requests, b's the answers. */
static void lossy_pair(struct sim *s, bool sr, double loss, struct sim_node **a,
		       struct sim_node **b)
{
	struct sim_impair lossy = {.loss = loss, .reorder = 0.1, .reorder_depth = REORDER_DEPTH};
	struct sim_link_cfg link = {.rate_bps = 400000000000ull, .prop_ps = 10 * SIM_PS_PER_US / 4};
	struct sim_link_cfg clean = link;
	struct ur_dev_config cfg;

	ur_dev_config_default(&cfg);
	cfg.retx_mode = sr ? UR_RETX_SR : UR_RETX_GBN;
	cfg.max_inflight = 1024;
	cfg.sr_rto_high_ns = 30000;
	cfg.sr_rto_low_ns = 20000;
	link.impair = lossy;
	*a = sim_add_node(s, &cfg, &link, &clean, NULL);
	*b = sim_add_node(s, &cfg, &link, &clean, NULL);
}

/*
 * Selective repeat, WRITEs with immediate on lossy, reordering links, from
 * the first message on: the messages begun before the agreement keep
 * go-back-N framing, and the receive WQE of one of them may have been taken
 * already for a later SR message that came early. Found in the mixed sweep
 * (an RNR NAK for it every RTO, forever); _i is the seed.
 */
START_TEST(test_sr_write_imm_from_the_start)
{
	struct sim_flow_cfg fc = {0};
	const struct sim_flow_stats *st;
	struct sim_workload *w;
	struct sim_node *a, *b;
	struct sim *s = sim_create(100 + (uint64_t)_i);

	lossy_pair(s, true, 5e-2, &a, &b);
	w = sim_workload_create(s);
	fc.qp_type = UR_QPT_RC;
	fc.opcode = UR_WR_RDMA_WRITE_WITH_IMM;
	fc.msg_size = 8192;
	fc.messages = 60;
	fc.depth = 8;
	fc.verify = true;
	sim_qp_params_default(&fc.qp);
	fc.qp.timeout = 7;
	ck_assert_ptr_nonnull(sim_workload_add_flow(w, a, b, &fc));
	sim_workload_stop_when_done(w, true);
	sim_run(s, 20 * SIM_PS_PER_S);
	st = sim_flow_stats(sim_workload_flow(w, 0));
	ck_assert_msg(st->errors == 0, "%llu error completions", (unsigned long long)st->errors);
	ck_assert_uint_eq(st->completed, 60);
	ck_assert_uint_eq(st->received, 60);
	ck_assert_uint_eq(st->verify_failures, 0);
	sim_workload_destroy(w);
	sim_destroy(s);
}
END_TEST

/* Hold back the third READ response LAST on its way (a late one, not lost). */
static bool hold_third_read_last(const uint8_t *bth, uint32_t len, void *arg)
{
	unsigned *seen = arg;

	(void)len;
	return bth[0] == 0x0f && ++*seen == 3;
}

/*
 * A READ's last response late by less than a packet time: the next READ's
 * first response shows a gap, go-back-N asks again from the late one, and
 * the late one then arrives while the requester's wire is still busy with
 * another QP's WRITE. It completes the READ before the retry leaves, and the
 * application posts the next READ into the freed slot of a full SQ. The
 * requester must not send that new READ with the old one's PSNs (the
 * responder answers a duplicate with the old READ's data): every byte is
 * checked.
 */
START_TEST(test_read_done_before_its_retry_leaves)
{
	unsigned seen = 0;
	struct sim_impair late = {.hold_bth = hold_third_read_last, .hold_arg = &seen,
				  .hold_ps = 4 * SIM_PS_PER_US};
	struct sim_link_cfg slow = {.rate_bps = 10000000000ull, .prop_ps = SIM_PS_PER_US};
	struct sim_link_cfg fast = {.rate_bps = 100000000000ull, .prop_ps = SIM_PS_PER_US};
	struct sim_link_cfg back = fast;
	struct ur_dev_config cfg;
	struct sim_workload *w;
	struct sim_node *a, *b;
	struct sim *s = sim_create(7);
	static const enum ur_wr_opcode ops[] = {UR_WR_RDMA_READ, UR_WR_RDMA_WRITE};

	back.impair = late;
	ur_dev_config_default(&cfg);
	cfg.retx_mode = UR_RETX_GBN;
	a = sim_add_node(s, &cfg, &slow, &fast, NULL);
	b = sim_add_node(s, &cfg, &back, &fast, NULL);
	w = sim_workload_create(s);
	for (unsigned k = 0; k < 2; k++) {
		struct sim_flow_cfg fc = {0};

		fc.qp_type = UR_QPT_RC;
		fc.opcode = ops[k];
		fc.msg_size = k ? 65536 : 16384;
		fc.messages = 64;
		fc.depth = 8;
		fc.verify = true;
		sim_qp_params_default(&fc.qp);
		ck_assert_ptr_nonnull(sim_workload_add_flow(w, a, b, &fc));
	}
	sim_workload_stop_when_done(w, true);
	sim_run(s, 2 * SIM_PS_PER_S);
	ck_assert_uint_ge(seen, 3);
	for (unsigned k = 0; k < 2; k++) {
		const struct sim_flow_stats *st = sim_flow_stats(sim_workload_flow(w, k));

		ck_assert_msg(st->errors == 0, "flow %u: %llu error completions (first status %d)", k,
			      (unsigned long long)st->errors, st->first_error);
		ck_assert_uint_eq(st->completed, 64);
		ck_assert_uint_eq(st->verify_failures, 0);
	}
	printf("late READ response: implied NAKs %llu\n",
	       (unsigned long long)ur_dev_counters(sim_node_dev(a))[UR_CTR_implied_nak_seq_err]);
	sim_workload_destroy(w);
	sim_destroy(s);
}
END_TEST

/*
 * Five opcodes at once, one QP pair each, on links lossy and reordering
 * both ways: WRITE and READ (every byte checked at the requester), SEND and
 * WRITE with immediate (every receive checked at the responder), and
 * FETCH_AND_ADD. _i: bit 0 the mode, bit 1 the loss (1e-2 or 5e-2).
 */
START_TEST(test_two_way_mixed_opcodes)
{
	static const struct {
		enum ur_wr_opcode op;
		uint32_t size;
		uint64_t messages;
	} flows[] = {
		{UR_WR_RDMA_WRITE, 65536, 60},          {UR_WR_RDMA_READ, 65536, 60},
		{UR_WR_SEND, 20000, 60},                {UR_WR_RDMA_WRITE_WITH_IMM, 8192, 60},
		{UR_WR_ATOMIC_FETCH_AND_ADD, 8, 200},
	};
	const bool sr = _i & 1;
	const double loss = _i & 2 ? 5e-2 : 1e-2;
	struct sim_workload *w;
	struct sim_node *a, *b;
	struct sim *s = sim_create(40 + (uint64_t)_i);

	lossy_pair(s, sr, loss, &a, &b);
	w = sim_workload_create(s);
	for (unsigned k = 0; k < sizeof(flows) / sizeof(flows[0]); k++) {
		struct sim_flow_cfg fc = {0};

		fc.qp_type = UR_QPT_RC;
		fc.opcode = flows[k].op;
		fc.msg_size = flows[k].size;
		fc.messages = flows[k].messages;
		fc.depth = 8;
		fc.verify = true;
		sim_qp_params_default(&fc.qp);
		fc.qp.timeout = sr ? 7 : 4; /* 524 us: SR's own timeouts first; 65 us */
		ck_assert_ptr_nonnull(sim_workload_add_flow(w, a, b, &fc));
	}
	sim_workload_stop_when_done(w, true);
	sim_run(s, 20 * SIM_PS_PER_S);
	for (unsigned k = 0; k < sizeof(flows) / sizeof(flows[0]); k++) {
		const struct sim_flow_stats *st = sim_flow_stats(sim_workload_flow(w, k));

		printf("mixed  %-4s %-7g %-7g op %u: %llu/%llu done, %llu received, %llu errors, %llu corrupted\n",
		       sr ? "sr" : "gbn", loss, 0.1, flows[k].op, (unsigned long long)st->completed,
		       (unsigned long long)flows[k].messages, (unsigned long long)st->received,
		       (unsigned long long)st->errors, (unsigned long long)st->verify_failures);
		ck_assert_msg(st->errors == 0, "op %u: %llu error completions (first status %d)",
			      flows[k].op, (unsigned long long)st->errors, st->first_error);
		ck_assert_uint_eq(st->completed, flows[k].messages);
		ck_assert_uint_eq(st->verify_failures, 0);
		if (flows[k].op == UR_WR_SEND || flows[k].op == UR_WR_RDMA_WRITE_WITH_IMM)
			ck_assert_uint_eq(st->received, flows[k].messages);
	}
	printf("mixed  %-4s %-7g retransmitted %llu, ACK timeouts %llu, SR RTOs %llu, dropped %llu + %llu\n",
	       sr ? "sr" : "gbn", loss,
	       (unsigned long long)ur_dev_counters(sim_node_dev(a))[UR_CTR_retransmitted_packets],
	       (unsigned long long)ur_dev_counters(sim_node_dev(a))[UR_CTR_local_ack_timeout_err],
	       (unsigned long long)ur_dev_counters(sim_node_dev(a))[UR_CTR_sr_timeouts],
	       (unsigned long long)sim_node_up_stats(a).dropped,
	       (unsigned long long)sim_node_up_stats(b).dropped);
	fflush(stdout);
	sim_workload_destroy(w);
	sim_destroy(s);
}
END_TEST

/*
 * The return path alone (issue 24): ACKs, NAKs, SACKs and READ responses
 * lost independently or in Gilbert-Elliott bursts, or reordered, with the
 * data path clean; then bursts and reordering both ways. Through the code
 * of `uroce-lab sim --loss-back/--burst-back/--reorder-back` (and compare's
 * simulator half), 64 KiB messages, every byte checked. Each impairment
 * must act on the path it names (frames dropped or held there, none on the
 * other), every message must complete without an error completion (no
 * retry counter runs out), and ACKs that are only overtaken must not make
 * the requester resend anything. _i: bit 0 the mode, the rest the case.
 */
static const struct {
	const char *name;
	enum ur_wr_opcode op;
	double loss, burst, reorder; /* data path */
	double loss_back, burst_back, reorder_back;
	bool two_way;
} back_cases[] = {
    {"ack loss 5%", UR_WR_RDMA_WRITE, 0, 0, 0, 0.05, 0, 0, false},
    {"ack loss 2% in bursts of 4", UR_WR_RDMA_WRITE, 0, 0, 0, 0.02, 4, 0, false},
    {"acks reordered 10%:8", UR_WR_RDMA_WRITE, 0, 0, 0, 0, 0, 0.1, false},
    {"read responses lost 2% in bursts of 4", UR_WR_RDMA_READ, 0, 0, 0, 0.02, 4, 0, false},
    {"two-way 1% in bursts of 4, reorder 5%:8", UR_WR_RDMA_WRITE, 0.01, 4, 0.05, 0, 0, 0,
     true},
};
#define BACK_MESSAGES 1000

START_TEST(test_return_path)
{
	const enum ur_retx_mode mode = _i & 1 ? UR_RETX_SR : UR_RETX_GBN;
	const unsigned k = (unsigned)_i >> 1;
	struct sim_opts o;
	struct sim_result r;
	struct sim_path back;
	struct sim_impair im = {0};
	double burst;

	sim_opts_default(&o);
	o.msg_size = 65536;
	o.messages = BACK_MESSAGES;
	o.verify = true;
	o.quiet = true;
	o.opcode = back_cases[k].op;
	o.burst = back_cases[k].burst;
	o.reorder = back_cases[k].reorder;
	o.reorder_depth = o.reorder > 0 ? REORDER_DEPTH : 0;
	o.loss_back = back_cases[k].loss_back;
	o.burst_back = back_cases[k].burst_back;
	o.reorder_back = back_cases[k].reorder_back;
	o.reorder_back_depth = o.reorder_back > 0 ? REORDER_DEPTH : 0;
	o.two_way = back_cases[k].two_way;
	/* the return path's link: the chain of bursts when asked (two-way: the data path's) */
	sim_path_of(&o, back_cases[k].loss, true, &back);
	sim_path_impair(&back, &im);
	burst = o.two_way ? o.burst : o.burst_back;
	if (burst > 1) {
		ck_assert_double_eq_tol(im.ge_p_bg, 1 / burst, 1e-12);
		ck_assert_double_eq(im.ge_loss_bad, 1);
		ck_assert_double_eq(im.loss, 0);
	} else {
		ck_assert_double_eq(im.ge_p_gb, 0);
		ck_assert_double_eq(im.loss, back.loss);
	}
	ck_assert_int_eq(sim_run_one(&o, mode, back_cases[k].loss, &r), 0);
	printf("back   %-4s %-40s %6.3f of link, %5llu retx, %4llu NAKs, %5llu SACKs, "
	       "%3llu ACK t/o, %3llu RTOs, dropped %llu out %llu back, reordered %llu out %llu back\n",
	       sim_mode_name(mode), back_cases[k].name, r.fraction,
	       (unsigned long long)r.retx_packets, (unsigned long long)r.naks,
	       (unsigned long long)r.sacks, (unsigned long long)r.timeouts,
	       (unsigned long long)r.sr_timeouts, (unsigned long long)r.dropped,
	       (unsigned long long)r.dropped_back, (unsigned long long)r.reordered,
	       (unsigned long long)r.reordered_back);
	fflush(stdout);
	ck_assert_msg(r.errors == 0, "%s: %llu error completions", back_cases[k].name,
		      (unsigned long long)r.errors);
	ck_assert_uint_eq(r.completed, BACK_MESSAGES);
	ck_assert_uint_eq(r.verify_failures, 0);
	/* each knob on its own path */
	ck_assert_int_eq(r.dropped > 0, back_cases[k].loss > 0);
	ck_assert_int_eq(r.reordered > 0, back_cases[k].reorder > 0);
	ck_assert_int_eq(r.dropped_back > 0, back_cases[k].loss_back > 0 || o.two_way);
	ck_assert_int_eq(r.reordered_back > 0, back_cases[k].reorder_back > 0 || o.two_way);
	if (back_cases[k].reorder_back > 0) {
		/* every request arrived once and in order: nothing to resend */
		ck_assert_uint_eq(r.retx_packets, 0);
		ck_assert_uint_eq(r.timeouts + r.sr_timeouts, 0);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sim_sweep");
	TCase *tc = tcase_create("two_way");
	SRunner *r;
	int failed;

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_two_way_sweep, 0, 2);
	tcase_add_loop_test(tc, test_two_way_mixed_opcodes, 0, 4);
	tcase_add_test(tc, test_read_done_before_its_retry_leaves);
	tcase_add_loop_test(tc, test_sr_write_imm_from_the_start, 0, 40);
	suite_add_tcase(s, tc);
	tc = tcase_create("return_path");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_return_path, 0,
			    2 * (int)(sizeof(back_cases) / sizeof(back_cases[0])));
	suite_add_tcase(s, tc);
	r = srunner_create(s);
	srunner_run_all(r, CK_NORMAL);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
