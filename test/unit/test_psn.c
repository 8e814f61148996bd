/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * 24-bit PSN arithmetic (IBTA 9.7.1): add wraps at 2^24, and comparisons
 * look at the signed distance modulo 2^24. Sweeps start near 0xfffff0 so
 * every one crosses the wrap; the exact half-space boundary is pinned; a
 * seeded random check compares every helper with a 64-bit reference.
 *
 * At exactly 2^23 apart the two PSNs are each "behind" the other: the
 * distance is -2^23 both ways, as with rxe's psn_compare(), so the
 * responder files a PSN 2^23 from ePSN as a duplicate, never as ahead.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "psn.h"
#include "test_util.h"

#define NEAR_WRAP 0xfffff0u
#define SWEEP 64
#define RANDOM_ROUNDS 2000000

/* Reference: the distance a - b modulo 2^24, mapped into [-2^23, 2^23). */
static int64_t ref_diff(uint32_t a, uint32_t b)
{
	int64_t d = (((int64_t)a - (int64_t)b) % 0x1000000 + 0x1000000) % 0x1000000;

	return d >= 0x800000 ? d - 0x1000000 : d;
}

static uint32_t ref_add(uint32_t a, uint64_t n)
{
	return (uint32_t)(((uint64_t)a + n) % 0x1000000);
}

static void check_pair(uint32_t a, uint32_t b)
{
	int64_t d = ref_diff(a, b);

	require(ur_psn_diff(a, b) == d, "diff(%#x, %#x) = %d, want %lld", a, b, ur_psn_diff(a, b),
		(long long)d);
	require(ur_psn_lt(a, b) == (d < 0), "lt(%#x, %#x)", a, b);
	require(ur_psn_le(a, b) == (d <= 0), "le(%#x, %#x)", a, b);
	require(ur_psn_gt(a, b) == (d > 0), "gt(%#x, %#x)", a, b);
	require(ur_psn_ge(a, b) == (d >= 0), "ge(%#x, %#x)", a, b);
}

/* Stepping forward from just below the wrap: distance and order follow the step. */
START_TEST(test_sweep_across_wrap)
{
	const uint32_t base = NEAR_WRAP;
	const uint32_t n = (uint32_t)_i;
	const uint32_t p = ur_psn_add(base, n);

	ck_assert_uint_eq(p, (base + n) & 0xffffff);
	ck_assert_uint_le(p, UR_PSN_MASK);
	ck_assert_int_eq(ur_psn_diff(p, base), (int32_t)n);
	ck_assert_int_eq(ur_psn_diff(base, p), -(int32_t)n);
	ck_assert(ur_psn_ge(p, base));
	ck_assert(ur_psn_le(base, p));
	ck_assert(ur_psn_lt(base, p) == (n > 0));
	ck_assert(ur_psn_gt(p, base) == (n > 0));
	ck_assert(!ur_psn_lt(p, base));
	ck_assert(!ur_psn_gt(base, p));
	/* adding the complement steps back */
	ck_assert_uint_eq(ur_psn_add(p, UR_PSN_MASK + 1 - n), base);
	check_pair(p, base);
	check_pair(base, p);
	/* and each neighbour pair around the wrap */
	check_pair(ur_psn_add(p, 1), p);
	check_pair(p, ur_psn_add(p, 1));
}
END_TEST

START_TEST(test_add_wraps)
{
	ck_assert_uint_eq(ur_psn_add(0xffffff, 1), 0);
	ck_assert_uint_eq(ur_psn_add(NEAR_WRAP, 0x10), 0);
	ck_assert_uint_eq(ur_psn_add(NEAR_WRAP, 0x20), 0x10);
	ck_assert_uint_eq(ur_psn_add(0, UR_PSN_MASK), 0xffffff); /* -1 */
	ck_assert_uint_eq(ur_psn_add(5, UR_PSN_MASK), 4);
	ck_assert_uint_eq(ur_psn_add(0x123456, 0x1000000), 0x123456);  /* a whole turn */
	ck_assert_uint_eq(ur_psn_add(0x123456, UINT32_MAX), 0x123455); /* 2^32 - 1 = -1 mod 2^24 */
	ck_assert_uint_eq(ur_psn_add(0, 0), 0);
}
END_TEST

/* Exactly half the space apart, and one either side of it. */
START_TEST(test_half_space_boundary)
{
	static const uint32_t bases[] = {0, 1, 0x7fffff, 0x800000, 0x800001, NEAR_WRAP, 0xffffff};

	for (unsigned k = 0; k < sizeof(bases) / sizeof(bases[0]); k++) {
		uint32_t b = bases[k];
		uint32_t half = ur_psn_add(b, UR_PSN_HALF);
		uint32_t below = ur_psn_add(b, UR_PSN_HALF - 1);
		uint32_t above = ur_psn_add(b, UR_PSN_HALF + 1);

		/* +2^23 - 1 is the farthest PSN still ahead */
		ck_assert_int_eq(ur_psn_diff(below, b), 0x7fffff);
		ck_assert(ur_psn_gt(below, b));
		ck_assert(ur_psn_lt(b, below));
		/* +2^23 counts as behind, from both ends */
		ck_assert_int_eq(ur_psn_diff(half, b), -0x800000);
		ck_assert_int_eq(ur_psn_diff(b, half), -0x800000);
		ck_assert(ur_psn_lt(half, b));
		ck_assert(ur_psn_lt(b, half));
		ck_assert(!ur_psn_gt(half, b));
		ck_assert(!ur_psn_ge(b, half));
		/* +2^23 + 1 is 2^23 - 1 behind */
		ck_assert_int_eq(ur_psn_diff(above, b), -0x7fffff);
		ck_assert(ur_psn_lt(above, b));
		ck_assert(ur_psn_gt(b, above));
		check_pair(half, b);
		check_pair(b, half);
		check_pair(below, b);
		check_pair(above, b);
	}
}
END_TEST

/* The distance is always inside [-2^23, 2^23). */
START_TEST(test_diff_range)
{
	ck_assert_int_eq(ur_psn_diff(0, 0), 0);
	ck_assert_int_eq(ur_psn_diff(0x7fffff, 0), 0x7fffff);
	ck_assert_int_eq(ur_psn_diff(0x800000, 0), -0x800000);
	ck_assert_int_eq(ur_psn_diff(0xffffff, 0), -1);
	ck_assert_int_eq(ur_psn_diff(0, 0xffffff), 1);
	ck_assert_int_eq(ur_psn_diff(0x10, NEAR_WRAP), 0x20);
	ck_assert_int_eq(ur_psn_diff(NEAR_WRAP, 0x10), -0x20);
}
END_TEST

/* Random pairs and steps against the reference; some pairs land near the boundary. */
START_TEST(test_random_against_reference)
{
	rng_state = 0x0123456789abcdefull;
	for (unsigned k = 0; k < RANDOM_ROUNDS; k++) {
		uint64_t r = rng();
		uint32_t a = (uint32_t)r & UR_PSN_MASK;
		uint32_t b;
		uint32_t n = (uint32_t)(r >> 32);

		switch (k & 3) {
		case 0:
			b = (uint32_t)(r >> 24) & UR_PSN_MASK; /* anywhere */
			break;
		case 1:
			b = ur_psn_add(a, UR_PSN_HALF + (uint32_t)(r >> 60) - 8); /* near 2^23 */
			break;
		case 2:
			b = ur_psn_add(a, (uint32_t)(r >> 58)); /* close by */
			break;
		default:
			b = ur_psn_add(NEAR_WRAP, (uint32_t)(r >> 59)); /* around the wrap */
			a = ur_psn_add(b, (uint32_t)(r >> 56) - 128);
			break;
		}
		check_pair(a, b);
		require(ur_psn_add(a, n) == ref_add(a, n), "add(%#x, %#x) = %#x", a, n,
			ur_psn_add(a, n));
		/* a + (b - a) == b, through the helpers */
		require(ur_psn_add(a, (uint32_t)ur_psn_diff(b, a)) == b, "%#x + (%#x - %#x)", a, b,
			a);
	}
}
END_TEST

static Suite *psn_suite(void)
{
	Suite *s = suite_create("psn");
	TCase *tc = tcase_create("psn");

	tcase_add_loop_test(tc, test_sweep_across_wrap, 0, SWEEP);
	tcase_add_test(tc, test_add_wraps);
	tcase_add_test(tc, test_half_space_boundary);
	tcase_add_test(tc, test_diff_range);
	tcase_add_test(tc, test_random_against_reference);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	sr = srunner_create(psn_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
