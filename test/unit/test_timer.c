/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The device timer heap: arm, cancel, re-arm earlier and later, pop what is
 * due, report the next deadline. Hand-made cases pin each path; seeded
 * random sequences of 10,000 operations run against a plain array model and
 * check, after every step, the next deadline, which timers are armed and
 * the heap's own invariant; every pop must return an earliest timer, and
 * draining yields the sorted order.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timer.h"
#include "test_util.h"

#define NTIMERS 300 /* more than the initial capacity: the heap must grow */
#define NOPS 10000
#define NSEEDS 8

static struct ur_timer_heap heap;
static struct ur_timer timers[NTIMERS];

static void heap_setup(void)
{
	memset(timers, 0, sizeof(timers));
	for (unsigned i = 0; i < NTIMERS; i++)
		timers[i].kind = (uint8_t)i;
	ck_assert_int_eq(ur_timer_heap_init(&heap, 1), 0);
}

static void heap_teardown(void)
{
	ur_timer_heap_fini(&heap);
	for (unsigned i = 0; i < NTIMERS; i++)
		ck_assert_msg(!ur_timer_armed(&timers[i]), "timer %u still armed after fini", i);
	/* kind is the owner's: the heap never writes it */
	for (unsigned i = 0; i < NTIMERS; i++)
		ck_assert_uint_eq(timers[i].kind, (uint8_t)i);
}

/* Parent no later than child, and every timer knows its position. */
static void check_invariant(void)
{
	require(heap.n <= heap.cap, "%u timers in a heap of %u", heap.n, heap.cap);
	for (uint32_t pos = 1; pos <= heap.n; pos++) {
		require(heap.slot[pos]->heap_pos == pos, "slot %u thinks it is at %u", pos,
			heap.slot[pos]->heap_pos);
		require(pos == 1 || heap.slot[pos / 2]->expires <= heap.slot[pos]->expires,
			"slot %u expires before its parent", pos);
	}
}

START_TEST(test_empty)
{
	ck_assert_uint_eq(ur_timer_next(&heap), UR_TIME_NEVER);
	ck_assert_ptr_null(ur_timer_pop_due(&heap, 0));
	ck_assert_ptr_null(ur_timer_pop_due(&heap, UINT64_MAX));
	ur_timer_cancel(&heap, &timers[0]); /* not armed: nothing happens */
	ck_assert_uint_eq(heap.n, 0);
}
END_TEST

START_TEST(test_due_at_exact_time)
{
	ck_assert_int_eq(ur_timer_arm(&heap, &timers[0], 1000), 0);
	ck_assert(ur_timer_armed(&timers[0]));
	ck_assert_uint_eq(ur_timer_next(&heap), 1000);
	ck_assert_ptr_null(ur_timer_pop_due(&heap, 999));
	ck_assert(ur_timer_armed(&timers[0]));
	ck_assert_ptr_eq(ur_timer_pop_due(&heap, 1000), &timers[0]);
	ck_assert(!ur_timer_armed(&timers[0]));
	ck_assert_uint_eq(ur_timer_next(&heap), UR_TIME_NEVER);
	ck_assert_ptr_null(ur_timer_pop_due(&heap, UINT64_MAX));
}
END_TEST

static void expect_order(const unsigned *idx, unsigned n)
{
	for (unsigned k = 0; k < n; k++) {
		struct ur_timer *t = ur_timer_pop_due(&heap, UINT64_MAX - 1);

		ck_assert_msg(t == &timers[idx[k]], "pop %u: timer %ld, want %u", k,
			      t ? (long)(t - timers) : -1L, idx[k]);
		check_invariant();
	}
	ck_assert_ptr_null(ur_timer_pop_due(&heap, UINT64_MAX - 1));
}

START_TEST(test_rearm_earlier)
{
	static const unsigned order[] = {2, 0, 1};

	ur_timer_arm(&heap, &timers[0], 100);
	ur_timer_arm(&heap, &timers[1], 200);
	ur_timer_arm(&heap, &timers[2], 300);
	ck_assert_int_eq(ur_timer_arm(&heap, &timers[2], 50), 0);
	ck_assert_uint_eq(heap.n, 3); /* moved, not added twice */
	ck_assert_uint_eq(ur_timer_next(&heap), 50);
	check_invariant();
	expect_order(order, 3);
}
END_TEST

START_TEST(test_rearm_later)
{
	static const unsigned order[] = {1, 2, 0};

	ur_timer_arm(&heap, &timers[0], 100);
	ur_timer_arm(&heap, &timers[1], 200);
	ur_timer_arm(&heap, &timers[2], 300);
	ck_assert_int_eq(ur_timer_arm(&heap, &timers[0], 400), 0);
	ck_assert_uint_eq(heap.n, 3);
	ck_assert_uint_eq(ur_timer_next(&heap), 200);
	check_invariant();
	expect_order(order, 3);
}
END_TEST

START_TEST(test_rearm_same_time)
{
	static const unsigned order[] = {0, 1};

	ur_timer_arm(&heap, &timers[0], 100);
	ur_timer_arm(&heap, &timers[1], 200);
	ur_timer_arm(&heap, &timers[0], 100);
	ck_assert_uint_eq(heap.n, 2);
	check_invariant();
	expect_order(order, 2);
}
END_TEST

START_TEST(test_cancel_positions)
{
	/* 7 timers make a full three-level heap: cancel the root, an inner one, the last */
	bool left[7];
	unsigned last, nleft = 0;
	uint64_t prev = 0;

	for (unsigned i = 0; i < 7; i++) {
		ur_timer_arm(&heap, &timers[i], 10 * (i + 1));
		left[i] = true;
	}
	ur_timer_cancel(&heap, &timers[0]); /* the root */
	left[0] = false;
	check_invariant();
	ck_assert_uint_eq(ur_timer_next(&heap), 20);
	ur_timer_cancel(&heap, &timers[2]); /* inside */
	left[2] = false;
	check_invariant();
	last = (unsigned)(heap.slot[heap.n] - timers);
	ur_timer_cancel(&heap, &timers[last]); /* the last slot: nothing moves */
	left[last] = false;
	check_invariant();
	ur_timer_cancel(&heap, &timers[last]); /* twice: the second does nothing */
	ur_timer_cancel(&heap, &timers[0]);
	check_invariant();
	for (unsigned i = 0; i < 7; i++)
		nleft += left[i];
	ck_assert_uint_eq(heap.n, nleft);
	for (unsigned k = 0; k < nleft; k++) {
		struct ur_timer *t = ur_timer_pop_due(&heap, UINT64_MAX - 1);
		unsigned i;

		ck_assert_ptr_nonnull(t);
		i = (unsigned)(t - timers);
		ck_assert_msg(i < 7 && left[i], "popped cancelled timer %u", i);
		ck_assert_uint_gt(t->expires, prev);
		prev = t->expires;
		left[i] = false;
	}
	ck_assert_ptr_null(ur_timer_pop_due(&heap, UINT64_MAX - 1));
}
END_TEST

/* Cancelling a timer whose replacement must move up, not down. */
START_TEST(test_cancel_moves_replacement_up)
{
	/*
	 *            10
	 *        100      20
	 *      110 120  30 40
	 * Cancelling 110 (left subtree) moves the last (40) into its slot: 40 is
	 * earlier than its new parent 100, so it has to sift up.
	 */
	static const uint64_t exp[] = {10, 100, 20, 110, 120, 30, 40};

	for (unsigned i = 0; i < 7; i++)
		ur_timer_arm(&heap, &timers[i], exp[i]);
	check_invariant();
	ck_assert_ptr_eq(heap.slot[4], &timers[3]);
	ur_timer_cancel(&heap, &timers[3]);
	check_invariant();
	for (uint64_t prev = 0, k = 0; k < 6; k++) {
		struct ur_timer *t = ur_timer_pop_due(&heap, UINT64_MAX - 1);

		ck_assert_ptr_nonnull(t);
		ck_assert_uint_ge(t->expires, prev);
		prev = t->expires;
	}
}
END_TEST

START_TEST(test_equal_deadlines)
{
	unsigned seen[16] = {0};

	for (unsigned i = 0; i < 16; i++)
		ur_timer_arm(&heap, &timers[i], 500);
	ck_assert_ptr_null(ur_timer_pop_due(&heap, 499));
	for (unsigned k = 0; k < 16; k++) {
		struct ur_timer *t = ur_timer_pop_due(&heap, 500);

		ck_assert_ptr_nonnull(t);
		ck_assert_uint_eq(t->expires, 500);
		seen[t - timers]++;
		check_invariant();
	}
	for (unsigned i = 0; i < 16; i++)
		ck_assert_uint_eq(seen[i], 1);
	ck_assert_ptr_null(ur_timer_pop_due(&heap, 500));
}
END_TEST

/* The heap grows past its initial capacity and still drains in sorted order. */
START_TEST(test_growth_sorted_drain)
{
	uint64_t prev = 0;

	rng_state = 0x5eed0001;
	ck_assert_uint_eq(heap.cap, 16);
	for (unsigned i = 0; i < NTIMERS; i++)
		ck_assert_int_eq(ur_timer_arm(&heap, &timers[i], rng() % 100000), 0);
	ck_assert_uint_ge(heap.cap, NTIMERS);
	ck_assert_uint_eq(heap.n, NTIMERS);
	check_invariant();
	for (unsigned k = 0; k < NTIMERS; k++) {
		struct ur_timer *t = ur_timer_pop_due(&heap, UINT64_MAX - 1);

		ck_assert_ptr_nonnull(t);
		ck_assert_uint_ge(t->expires, prev);
		prev = t->expires;
	}
	ck_assert_uint_eq(ur_timer_next(&heap), UR_TIME_NEVER);
}
END_TEST

/* Fini with timers still armed leaves them disarmed (checked in teardown). */
START_TEST(test_fini_disarms)
{
	for (unsigned i = 0; i < 40; i++)
		ur_timer_arm(&heap, &timers[i], 1000 - i);
}
END_TEST

/* The model: which timers are armed and when they expire. */
static bool ref_armed[NTIMERS];
static uint64_t ref_exp[NTIMERS];

static uint64_t ref_next(void)
{
	uint64_t m = UR_TIME_NEVER;

	for (unsigned i = 0; i < NTIMERS; i++)
		if (ref_armed[i] && ref_exp[i] < m)
			m = ref_exp[i];
	return m;
}

static void check_against_model(void)
{
	uint32_t n = 0;

	require(ur_timer_next(&heap) == ref_next(), "next %llu, want %llu",
		(unsigned long long)ur_timer_next(&heap), (unsigned long long)ref_next());
	for (unsigned i = 0; i < NTIMERS; i++) {
		require(ur_timer_armed(&timers[i]) == ref_armed[i], "timer %u armed %d, want %d", i,
			ur_timer_armed(&timers[i]), ref_armed[i]);
		if (ref_armed[i]) {
			require(timers[i].expires == ref_exp[i], "timer %u expires %llu, want %llu",
				i, (unsigned long long)timers[i].expires,
				(unsigned long long)ref_exp[i]);
			n++;
		}
	}
	require(heap.n == n, "%u timers in the heap, model has %u", heap.n, n);
	check_invariant();
}

START_TEST(test_random_against_model)
{
	uint64_t now = 1ull << 40; /* far from both ends of the clock */
	unsigned pops = 0;
	uint64_t drained[NTIMERS], sorted[NTIMERS];
	unsigned nd = 0, ns = 0;

	memset(ref_armed, 0, sizeof(ref_armed));
	rng_state = 0x9e3779b97f4a7c15ull * (uint64_t)(_i + 1);
	for (unsigned op = 0; op < NOPS; op++) {
		uint64_t r = rng();
		unsigned i = (unsigned)(r % NTIMERS);
		unsigned what = (unsigned)(r >> 32) % 10;

		if (what < 4) {
			/* arm or re-arm anywhere from the past to far ahead, with ties */
			uint64_t t = now - 50 + (rng() % 2000) / 4 * 4;

			require(ur_timer_arm(&heap, &timers[i], t) == 0, "arm failed");
			ref_armed[i] = true;
			ref_exp[i] = t;
		} else if (what < 6) {
			/* re-arm an armed timer strictly earlier or later */
			if (ref_armed[i]) {
				uint64_t t = (r >> 40) & 1 ? ref_exp[i] + 1 + rng() % 500
							   : ref_exp[i] - 1 - rng() % 500;

				ur_timer_arm(&heap, &timers[i], t);
				ref_exp[i] = t;
			}
		} else if (what < 8) {
			ur_timer_cancel(&heap, &timers[i]);
			ref_armed[i] = false;
		} else {
			/* time passes: everything due pops, earliest first */
			struct ur_timer *t;

			now += rng() % 300;
			while ((t = ur_timer_pop_due(&heap, now))) {
				unsigned k = (unsigned)(t - timers);

				require(k < NTIMERS && ref_armed[k],
					"popped timer %u was not armed", k);
				require(t->expires <= now, "timer %u popped before it was due", k);
				require(t->expires == ref_next(),
					"timer %u popped, not an earliest", k);
				require(!ur_timer_armed(t), "timer %u popped but still armed", k);
				ref_armed[k] = false;
				pops++;
				check_invariant();
			}
			require(ref_next() > now, "a due timer did not pop");
		}
		check_against_model();
	}
	ck_assert_uint_gt(pops, 100); /* the sequence did exercise popping */

	/* drain: the pop order is the sorted order of the model's deadlines */
	for (unsigned i = 0; i < NTIMERS; i++)
		if (ref_armed[i])
			sorted[ns++] = ref_exp[i];
	for (unsigned a = 1; a < ns; a++)
		for (unsigned b = a; b > 0 && sorted[b - 1] > sorted[b]; b--) {
			uint64_t x = sorted[b];

			sorted[b] = sorted[b - 1];
			sorted[b - 1] = x;
		}
	for (struct ur_timer *t; (t = ur_timer_pop_due(&heap, UINT64_MAX - 1));)
		drained[nd++] = t->expires;
	ck_assert_uint_eq(nd, ns);
	for (unsigned k = 0; k < nd; k++)
		ck_assert_uint_eq(drained[k], sorted[k]);
	memset(ref_armed, 0, sizeof(ref_armed));
	check_against_model();
}
END_TEST

static Suite *timer_suite(void)
{
	Suite *s = suite_create("timer");
	TCase *tc = tcase_create("heap");

	tcase_add_checked_fixture(tc, heap_setup, heap_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_due_at_exact_time);
	tcase_add_test(tc, test_rearm_earlier);
	tcase_add_test(tc, test_rearm_later);
	tcase_add_test(tc, test_rearm_same_time);
	tcase_add_test(tc, test_cancel_positions);
	tcase_add_test(tc, test_cancel_moves_replacement_up);
	tcase_add_test(tc, test_equal_deadlines);
	tcase_add_test(tc, test_growth_sorted_drain);
	tcase_add_test(tc, test_fini_disarms);
	tcase_add_loop_test(tc, test_random_against_model, 0, NSEEDS);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	sr = srunner_create(timer_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
