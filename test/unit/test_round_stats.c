/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The statistics behind `uroce-lab compare`'s live rounds: the median, the
 * sign-test interval around it (ranks and coverages checked against
 * binomial tails worked by hand), the order a round's cells run in, and the
 * parsing of /proc/stat and /proc/loadavg.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "host_load.h"
#include "round_stats.h"

START_TEST(test_median_odd_even)
{
	double odd[] = {3, 1, 2, 5, 4};
	double even[] = {4, 1, 3, 2};
	struct round_spread s;

	round_stats_spread(odd, 5, &s);
	ck_assert_uint_eq(s.n, 5);
	ck_assert_double_eq(s.median, 3);
	ck_assert_double_eq(s.min, 1);
	ck_assert_double_eq(s.max, 5);
	ck_assert_double_eq(odd[0], 3); /* the input is not sorted in place */
	round_stats_spread(even, 4, &s);
	ck_assert_double_eq(s.median, 2.5);
	round_stats_spread(even, 1, &s);
	ck_assert_double_eq(s.median, 4);
	ck_assert_double_eq(s.lo, 4);
	ck_assert_double_eq(s.hi, 4);
	round_stats_spread(even, 0, &s);
	ck_assert_uint_eq(s.n, 0);
}
END_TEST

/*
 * Coverage of [x(k), x(n+1-k)] is 1 - 2 P(B(n, 1/2) <= k - 1):
 * n = 5: k = 1, 1 - 2/32 = 0.9375 (no k reaches 95%);
 * n = 6: k = 1, 1 - 2/64 = 0.96875;
 * n = 9: k = 2, 1 - 2 * 10/512 = 0.9609 (k = 3 would be 1 - 2 * 46/512 = 0.82);
 * n = 20: k = 6, 1 - 2 * 21700/2^20 = 0.9586.
 */
START_TEST(test_interval_rank)
{
	static const struct {
		unsigned n, k;
		double coverage;
	} want[] = {
	    {2, 1, 0.5},     {3, 1, 0.75},	     {5, 1, 0.9375},
	    {6, 1, 0.96875}, {9, 2, 1 - 20.0 / 512}, {20, 6, 1 - 2 * 21700.0 / 1048576},
	};

	for (unsigned i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		double cov;
		unsigned k = round_stats_ci_rank(want[i].n, &cov);

		ck_assert_msg(k == want[i].k, "n %u: k %u, want %u", want[i].n, k, want[i].k);
		ck_assert_double_eq_tol(cov, want[i].coverage, 1e-12);
	}
}
END_TEST

/* Whatever the samples, the interval holds the median and sits inside min..max. */
START_TEST(test_interval_contains_median)
{
	unsigned n = (unsigned)_i + 1;
	double x[64];
	struct round_spread s;

	srand(7 + _i);
	for (unsigned j = 0; j < n; j++)
		x[j] = (double)(rand() % 1000) / 100;
	round_stats_spread(x, n, &s);
	ck_assert(s.min <= s.lo && s.lo <= s.median && s.median <= s.hi && s.hi <= s.max);
	if (n >= 6)
		ck_assert(s.coverage >= ROUND_STATS_CONFIDENCE);
	else
		ck_assert(s.lo == s.min && s.hi == s.max);
}
END_TEST

START_TEST(test_interval_of_nine)
{
	double x[] = {9, 8, 7, 6, 5, 4, 3, 2, 1};
	struct round_spread s;

	round_stats_spread(x, 9, &s);
	ck_assert_double_eq(s.lo, 2); /* x(2) */
	ck_assert_double_eq(s.hi, 8); /* x(8) */
}
END_TEST

START_TEST(test_overlap)
{
	struct round_spread a = {.lo = 0.4, .hi = 0.6}, b = {.lo = 0.6, .hi = 0.9},
			    c = {.lo = 0.61, .hi = 0.9};

	ck_assert(round_stats_overlap(&a, &b));
	ck_assert(round_stats_overlap(&b, &a));
	ck_assert(!round_stats_overlap(&a, &c));
	ck_assert(!round_stats_overlap(&c, &a));
}
END_TEST

/* Each round runs every cell once; a round reverses the one before it. */
START_TEST(test_interleaving_order)
{
	enum { CELLS = 12, ROUNDS = 5 };
	unsigned pos[ROUNDS][CELLS];

	for (unsigned r = 0; r < ROUNDS; r++) {
		unsigned seen[CELLS] = {0};

		for (unsigned i = 0; i < CELLS; i++) {
			unsigned c = round_stats_cell(r, i, CELLS);

			ck_assert_uint_lt(c, CELLS);
			seen[c]++;
			pos[r][c] = i;
		}
		for (unsigned c = 0; c < CELLS; c++)
			ck_assert_uint_eq(seen[c], 1);
	}
	ck_assert_uint_eq(round_stats_cell(0, 0, CELLS), 0);
	ck_assert_uint_eq(round_stats_cell(1, 0, CELLS), CELLS - 1);
	for (unsigned r = 1; r < ROUNDS; r++)
		for (unsigned c = 0; c < CELLS; c++)
			ck_assert_uint_eq(pos[r][c], CELLS - 1 - pos[r - 1][c]);
	/* Over two rounds every cell's mean position is the same: the middle. */
	for (unsigned c = 0; c < CELLS; c++)
		ck_assert_uint_eq(pos[0][c] + pos[1][c], CELLS - 1);
}
END_TEST

START_TEST(test_host_load_parse)
{
	struct host_load a = {0}, b = {0};
	double steal, iowait;

	ck_assert_int_eq(host_load_parse_stat("cpu  100 0 50 800 20 0 0 30 0 0\n", &a), 0);
	ck_assert_uint_eq(a.total, 1000);
	ck_assert_uint_eq(a.iowait, 20);
	ck_assert_uint_eq(a.steal, 30);
	ck_assert_int_eq(host_load_parse_stat("cpu  200 0 100 1500 40 0 0 160 5 0\n", &b), 0);
	host_load_between(&a, &b, &steal, &iowait);
	ck_assert_double_eq_tol(steal, 100.0 * 130 / 1000, 1e-9);
	ck_assert_double_eq_tol(iowait, 100.0 * 20 / 1000, 1e-9);
	ck_assert_int_eq(host_load_parse_stat("cpu0 1 2 3 4\n", &a), -1);
	ck_assert_int_eq(host_load_parse_loadavg("6.21 6.42 7.31 3/114 707\n", &a), 0);
	ck_assert_uint_eq(a.runnable, 3);
	ck_assert_double_eq_tol(a.load1, 6.21, 1e-9);
	ck_assert_int_eq(host_load_parse_loadavg("garbage", &a), -1);
	ck_assert_int_eq(host_load_read(&a), 0);
	ck_assert_uint_ge(a.runnable, 1); /* this reader */
	ck_assert_uint_gt(a.total, 0);
}
END_TEST

static Suite *round_stats_suite(void)
{
	Suite *s = suite_create("round_stats");
	TCase *tc = tcase_create("round_stats");

	tcase_add_test(tc, test_median_odd_even);
	tcase_add_test(tc, test_interval_rank);
	tcase_add_loop_test(tc, test_interval_contains_median, 0, 32);
	tcase_add_test(tc, test_interval_of_nine);
	tcase_add_test(tc, test_overlap);
	tcase_add_test(tc, test_interleaving_order);
	tcase_add_test(tc, test_host_load_parse);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	sr = srunner_create(round_stats_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
