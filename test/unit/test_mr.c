/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memory regions and their keys: a key is the slot index and a random tag,
 * so a stale key stops working when the slot is reused and a key cannot be
 * guessed from an index; ur_mr_check refuses a bad key, another protection
 * domain, a range outside the region (including ranges whose end wraps past
 * 2^64), a missing access right and an invalidated region, in that order.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "fake_host.h"
#include "mr.h"
#include "test_util.h"

#define TAG_MASK ((1u << UR_MR_TAG_BITS) - 1)
#define PD 7
#define ALL_REMOTE (UR_ACCESS_REMOTE_READ | UR_ACCESS_REMOTE_WRITE | UR_ACCESS_REMOTE_ATOMIC)

static struct ur_mr_table tab;
static uint8_t backing[8192];

static void table_setup(void)
{
	ur_mr_table_init(&tab);
	rng_state = 0x243f6a8885a308d3ull;
}

static void table_teardown(void)
{
	ur_mr_table_fini(&tab);
	ck_assert_ptr_null(tab.slot);
	ck_assert_uint_eq(tab.cap, 0);
}

static struct ur_mr *add(uint64_t iova, uint64_t len, uint32_t access, uint32_t pd, uint64_t rnd)
{
	struct ur_mr *mr = NULL;
	int err = ur_mr_add(&tab, iova, backing, len, access, pd, rnd, &mr);

	require(err == 0 && mr, "ur_mr_add: %d", err);
	return mr;
}

static enum ur_mr_err check(uint32_t key, uint32_t pd, uint64_t va, uint64_t len, uint32_t access)
{
	struct ur_mr *out = NULL;
	enum ur_mr_err e = ur_mr_check(&tab, key, pd, va, len, access, &out);

	require(e != UR_MR_OK || out == ur_mr_find(&tab, key), "check OK without the region");
	return e;
}

START_TEST(test_key_layout)
{
	struct ur_mr *a = add(0x1000, 4096, UR_ACCESS_LOCAL_WRITE, PD, 0xabcdef0123456789ull);
	struct ur_mr *b = add(0x1000, 4096, UR_ACCESS_LOCAL_WRITE, PD, 0x0000000000000000ull);

	/* tag from the random value's low bits, index above it; index 0 never used */
	ck_assert_uint_eq(a->key & TAG_MASK, 0x789);
	ck_assert_uint_ge(a->key >> UR_MR_TAG_BITS, 1);
	ck_assert_uint_eq(b->key & TAG_MASK, 0);
	ck_assert_uint_ne(a->key >> UR_MR_TAG_BITS, b->key >> UR_MR_TAG_BITS);
	ck_assert_uint_ge(a->key, 1u << UR_MR_TAG_BITS);
	ck_assert_ptr_eq(ur_mr_find(&tab, a->key), a);
	ck_assert_ptr_eq(ur_mr_find(&tab, b->key), b);
	ck_assert(a->valid && b->valid);
	ck_assert_uint_eq(a->iova, 0x1000);
	ck_assert_uint_eq(a->length, 4096);
	ck_assert_uint_eq(a->pd, PD);
	ck_assert_ptr_eq(a->base, backing);
	ck_assert_ptr_eq(ur_mr_ptr(a, 0x1010), backing + 0x10);
}
END_TEST

/*
 * Deregister and register again until a slot comes back: the new key must
 * differ from the stale one unless the two random tags happened to be
 * equal, and the stale key must then find nothing.
 */
START_TEST(test_reused_slot_gets_new_key)
{
	uint32_t last_key[64] = {0};
	unsigned reuses = 0, same = 0;

	for (unsigned k = 0; k < 64 * 2048; k++) {
		uint64_t rnd = rng();
		struct ur_mr *mr = add(0, 64, UR_ACCESS_LOCAL_WRITE, PD, rnd);
		uint32_t idx = mr->key >> UR_MR_TAG_BITS;
		uint32_t old = last_key[idx];

		require(idx < 64, "index %u: one live MR, the table never grows", idx);
		if (old) {
			reuses++;
			if ((old & TAG_MASK) == (rnd & TAG_MASK)) {
				require(mr->key == old, "same tag, different key");
				same++;
			} else {
				require(mr->key != old, "key %#x handed out again", old);
				require(!ur_mr_find(&tab, old), "stale key %#x finds the new MR",
					old);
				require(check(old, PD, 0, 1, 0) == UR_MR_BAD_KEY,
					"stale key accepted");
			}
		}
		last_key[idx] = mr->key;
		ur_mr_remove(&tab, mr);
		require(!ur_mr_find(&tab, last_key[idx]), "key %#x outlives its MR", last_key[idx]);
	}
	ck_assert_uint_gt(reuses, 64 * 2000);
	/* 12-bit tags: about reuses / 4096 repeats (~32); far more means no randomness */
	ck_assert_msg(same < reuses / 1024, "%u of %u reused slots got their old key", same,
		      reuses);
}
END_TEST

/* A freed index is not handed out again at once (the search starts after the last). */
START_TEST(test_freed_index_not_reused_at_once)
{
	struct ur_mr *a = add(0, 64, 0, PD, 1);
	uint32_t idx = a->key >> UR_MR_TAG_BITS;
	struct ur_mr *b;

	ur_mr_remove(&tab, a);
	b = add(0, 64, 0, PD, 1);
	ck_assert_uint_ne(b->key >> UR_MR_TAG_BITS, idx);
	ur_mr_remove(&tab, b);
}
END_TEST

START_TEST(test_bad_key)
{
	struct ur_mr *mr = add(0x1000, 4096, ALL_REMOTE, PD, 0x5a5);
	uint32_t idx = mr->key >> UR_MR_TAG_BITS;

	ck_assert_int_eq(check(mr->key, PD, 0x1000, 16, UR_ACCESS_REMOTE_READ), UR_MR_OK);
	/* every other tag at the same index */
	for (uint32_t tag = 0; tag <= TAG_MASK; tag++)
		if (tag != 0x5a5)
			ck_assert_int_eq(check(idx << UR_MR_TAG_BITS | tag, PD, 0x1000, 16, 0),
					 UR_MR_BAD_KEY);
	/* empty slots, index 0, an index past the table, the largest key */
	ck_assert_int_eq(check((idx + 1) << UR_MR_TAG_BITS | 0x5a5, PD, 0x1000, 16, 0),
			 UR_MR_BAD_KEY);
	ck_assert_int_eq(check(0, PD, 0x1000, 16, 0), UR_MR_BAD_KEY);
	ck_assert_int_eq(check(0x5a5, PD, 0x1000, 16, 0), UR_MR_BAD_KEY);
	ck_assert_int_eq(check(tab.cap << UR_MR_TAG_BITS | 0x5a5, PD, 0x1000, 16, 0),
			 UR_MR_BAD_KEY);
	ck_assert_int_eq(check(UINT32_MAX, PD, 0x1000, 16, 0), UR_MR_BAD_KEY);
}
END_TEST

START_TEST(test_empty_table)
{
	/* nothing registered yet: no slot array at all */
	ck_assert_ptr_null(ur_mr_find(&tab, 1u << UR_MR_TAG_BITS));
	ck_assert_int_eq(check(0, 0, 0, 0, 0), UR_MR_BAD_KEY);
	ck_assert_int_eq(check(UINT32_MAX, 0, 0, 0, 0), UR_MR_BAD_KEY);
}
END_TEST

START_TEST(test_wrong_pd)
{
	struct ur_mr *mr = add(0x1000, 4096, ALL_REMOTE, PD, 3);

	ck_assert_int_eq(check(mr->key, PD + 1, 0x1000, 16, 0), UR_MR_BAD_PD);
	ck_assert_int_eq(check(mr->key, 0, 0x1000, 16, 0), UR_MR_BAD_PD);
	/* the PD is checked before the range and the rights */
	ck_assert_int_eq(check(mr->key, PD + 1, 0, UINT64_MAX, UR_ACCESS_MW_BIND), UR_MR_BAD_PD);
}
END_TEST

START_TEST(test_bounds)
{
	struct ur_mr *mr = add(0x1000, 0x1000, ALL_REMOTE, PD, 3);
	uint32_t k = mr->key;

	ck_assert_int_eq(check(k, PD, 0x1000, 0x1000, 0), UR_MR_OK);	 /* all of it */
	ck_assert_int_eq(check(k, PD, 0x1fff, 1, 0), UR_MR_OK);		 /* last byte */
	ck_assert_int_eq(check(k, PD, 0x1000, 0x1001, 0), UR_MR_BOUNDS); /* one too many */
	ck_assert_int_eq(check(k, PD, 0x1fff, 2, 0), UR_MR_BOUNDS);
	ck_assert_int_eq(check(k, PD, 0x2000, 1, 0), UR_MR_BOUNDS); /* just past */
	ck_assert_int_eq(check(k, PD, 0x0fff, 1, 0), UR_MR_BOUNDS); /* just before */
	ck_assert_int_eq(check(k, PD, 0x0fff, 2, 0), UR_MR_BOUNDS); /* straddles the start */
	ck_assert_int_eq(check(k, PD, 0, 0x3000, 0), UR_MR_BOUNDS); /* covers it */
	/* lengths whose end wraps: a naive va + len <= end would pass these */
	ck_assert_int_eq(check(k, PD, 0x1800, UINT64_MAX, 0), UR_MR_BOUNDS);
	ck_assert_int_eq(check(k, PD, 0x1800, UINT64_MAX - 0x7ff, 0), UR_MR_BOUNDS);
	ck_assert_int_eq(check(k, PD, 0x1800, 0 - (uint64_t)0x1800 + 0x1000, 0), UR_MR_BOUNDS);
	ck_assert_int_eq(check(k, PD, UINT64_MAX, 2, 0), UR_MR_BOUNDS);
	/* bounds come before rights */
	ck_assert_int_eq(check(k, PD, 0x2000, 1, UR_ACCESS_MW_BIND), UR_MR_BOUNDS);
}
END_TEST

/* A region that ends exactly at 2^64. */
START_TEST(test_bounds_top_of_address_space)
{
	const uint64_t iova = UINT64_MAX - 0xfff; /* [2^64 - 4096, 2^64) */
	struct ur_mr *mr = add(iova, 0x1000, ALL_REMOTE, PD, 9);
	uint32_t k = mr->key;

	ck_assert_int_eq(check(k, PD, iova, 0x1000, 0), UR_MR_OK);
	ck_assert_int_eq(check(k, PD, UINT64_MAX, 1, 0), UR_MR_OK);
	ck_assert_int_eq(check(k, PD, UINT64_MAX - 10, 11, 0), UR_MR_OK);
	/* va + len wraps to 0 or just above: refused */
	ck_assert_int_eq(check(k, PD, UINT64_MAX - 10, 12, 0), UR_MR_BOUNDS);
	ck_assert_int_eq(check(k, PD, UINT64_MAX, 2, 0), UR_MR_BOUNDS);
	ck_assert_int_eq(check(k, PD, UINT64_MAX, UINT64_MAX, 0), UR_MR_BOUNDS);
	ck_assert_int_eq(check(k, PD, iova, 0x1001, 0), UR_MR_BOUNDS);
	ck_assert_int_eq(check(k, PD, iova - 1, 1, 0), UR_MR_BOUNDS);
	ck_assert_int_eq(check(k, PD, 0, 1, 0), UR_MR_BOUNDS);
}
END_TEST

/*
 * Zero-length accesses, as implemented: allowed anywhere from the start of
 * the region up to and including its end (va == iova + length), refused
 * outside; a zero-length region admits only zero-length access at its iova.
 */
START_TEST(test_zero_length)
{
	struct ur_mr *mr = add(0x1000, 0x1000, ALL_REMOTE, PD, 3);
	struct ur_mr *z = add(0x5000, 0, ALL_REMOTE, PD, 4);

	ck_assert_int_eq(check(mr->key, PD, 0x1000, 0, 0), UR_MR_OK);
	ck_assert_int_eq(check(mr->key, PD, 0x1800, 0, 0), UR_MR_OK);
	ck_assert_int_eq(check(mr->key, PD, 0x2000, 0, 0), UR_MR_OK);
	ck_assert_int_eq(check(mr->key, PD, 0x2001, 0, 0), UR_MR_BOUNDS);
	ck_assert_int_eq(check(mr->key, PD, 0x0fff, 0, 0), UR_MR_BOUNDS);
	ck_assert_int_eq(check(z->key, PD, 0x5000, 0, 0), UR_MR_OK);
	ck_assert_int_eq(check(z->key, PD, 0x5000, 1, 0), UR_MR_BOUNDS);
	ck_assert_int_eq(check(z->key, PD, 0x5001, 0, 0), UR_MR_BOUNDS);
	ck_assert_int_eq(check(z->key, PD, 0x4fff, 0, 0), UR_MR_BOUNDS);
	/* a zero-length access still needs the key, the PD and the rights */
	ck_assert_int_eq(check(mr->key ^ 1, PD, 0x1000, 0, 0), UR_MR_BAD_KEY);
	ck_assert_int_eq(check(mr->key, PD + 1, 0x1000, 0, 0), UR_MR_BAD_PD);
	ck_assert_int_eq(check(mr->key, PD, 0x1000, 0, UR_ACCESS_MW_BIND), UR_MR_ACCESS);
}
END_TEST

START_TEST(test_access_flags)
{
	static const uint32_t rights[] = {UR_ACCESS_LOCAL_WRITE, UR_ACCESS_REMOTE_WRITE,
					  UR_ACCESS_REMOTE_READ, UR_ACCESS_REMOTE_ATOMIC,
					  UR_ACCESS_MW_BIND};
	const unsigned n = sizeof(rights) / sizeof(rights[0]);

	/* every subset of rights registered, every subset asked for */
	for (uint32_t have = 0; have < (1u << n); have++) {
		uint32_t granted = 0;
		struct ur_mr *mr;

		for (unsigned b = 0; b < n; b++)
			if (have & (1u << b))
				granted |= rights[b];
		mr = add(0x1000, 0x1000, granted, PD, have);
		for (uint32_t want = 0; want < (1u << n); want++) {
			uint32_t asked = 0;

			for (unsigned b = 0; b < n; b++)
				if (want & (1u << b))
					asked |= rights[b];
			ck_assert_int_eq(check(mr->key, PD, 0x1000, 8, asked),
					 (asked & ~granted) ? UR_MR_ACCESS : UR_MR_OK);
		}
		ur_mr_remove(&tab, mr);
	}
}
END_TEST

/* SEND with Invalidate clears `valid`: the key stops working at once. */
START_TEST(test_invalidated)
{
	struct ur_mr *mr = add(0x1000, 0x1000, ALL_REMOTE, PD, 3);

	ck_assert_int_eq(check(mr->key, PD, 0x1000, 8, UR_ACCESS_REMOTE_WRITE), UR_MR_OK);
	mr->valid = false;
	ck_assert_int_eq(check(mr->key, PD, 0x1000, 8, UR_ACCESS_REMOTE_WRITE), UR_MR_BAD_KEY);
	ck_assert_int_eq(check(mr->key, PD, 0x1000, 0, 0), UR_MR_BAD_KEY);
	ck_assert_int_eq(check(mr->key, PD + 1, 0x1000, 8, 0), UR_MR_BAD_KEY);
	ck_assert_ptr_eq(ur_mr_find(&tab, mr->key), mr); /* still registered */
}
END_TEST

/*
 * Guessing by index: with 4096 regions whose tags are random, the key
 * "index << 12 | 0" works exactly for the regions whose tag came out 0.
 */
START_TEST(test_guessing_by_index_fails)
{
	enum { N = 4096 };
	static struct ur_mr *mrs[N];
	unsigned tag0 = 0, accepted = 0;

	for (unsigned i = 0; i < N; i++) {
		mrs[i] = add(0x10000, 0x1000, ALL_REMOTE, PD, rng());
		tag0 += (mrs[i]->key & TAG_MASK) == 0;
	}
	ck_assert_uint_gt(tab.cap, N); /* the table grew; earlier keys still valid */
	for (unsigned i = 0; i < N; i++) {
		uint32_t idx = mrs[i]->key >> UR_MR_TAG_BITS;
		uint32_t guess = idx << UR_MR_TAG_BITS;
		enum ur_mr_err e = check(guess, PD, 0x10000, 8, UR_ACCESS_REMOTE_WRITE);

		ck_assert_int_eq(check(mrs[i]->key, PD, 0x10000, 8, UR_ACCESS_REMOTE_WRITE),
				 UR_MR_OK);
		if (e == UR_MR_OK) {
			accepted++;
			ck_assert_uint_eq(mrs[i]->key & TAG_MASK, 0);
		} else {
			ck_assert_int_eq(e, UR_MR_BAD_KEY);
			ck_assert_uint_ne(mrs[i]->key & TAG_MASK, 0);
		}
	}
	ck_assert_uint_eq(accepted, tag0);
	ck_assert_uint_lt(tag0, 16); /* about one expected of 4096 */
	/* every index 0..cap with tag 0: only those same regions answer */
	accepted = 0;
	for (uint32_t idx = 0; idx < tab.cap; idx++)
		accepted += check(idx << UR_MR_TAG_BITS, PD, 0x10000, 8, 0) == UR_MR_OK;
	ck_assert_uint_eq(accepted, tag0);
	for (unsigned i = 0; i < N; i++)
		ur_mr_remove(&tab, mrs[i]);
	ck_assert_uint_eq(tab.used, 0);
}
END_TEST

/* The table fills every index but 0 and then says so. */
START_TEST(test_table_full)
{
	uint32_t n = 0;
	struct ur_mr *mr;
	int err;

	while ((err = ur_mr_add(&tab, 0, backing, 1, 0, PD, n, &mr)) == 0) {
		require(mr->key >> UR_MR_TAG_BITS == n + 1, "registration %u at index %u", n,
			mr->key >> UR_MR_TAG_BITS);
		n++;
	}
	ck_assert_int_eq(err, -ENOSPC);
	ck_assert_uint_eq(n, UR_MR_MAX - 1);
	ck_assert_uint_eq(tab.cap, UR_MR_MAX);
	/* one freed slot can be used again */
	mr = ur_mr_find(&tab, 12345u << UR_MR_TAG_BITS | (12344u & TAG_MASK));
	ck_assert_ptr_nonnull(mr);
	ur_mr_remove(&tab, mr);
	ck_assert_int_eq(ur_mr_add(&tab, 0, backing, 1, 0, PD, 77, &mr), 0);
	ck_assert_uint_eq(mr->key >> UR_MR_TAG_BITS, 12345);
	ck_assert_int_eq(ur_mr_add(&tab, 0, backing, 1, 0, PD, 78, &mr), -ENOSPC);
}
END_TEST

/* Through the device: the tag comes from the host's random source. */
START_TEST(test_device_uses_host_random)
{
	static const struct fake_host_opts opts = {
	    .nbufs = 1,
		    .fail = fake_host_ck_fail,
	};
	struct fake_host host;
	struct ur_dev_config cfg;
	struct ur_dev *dev;
	struct ur_mr *a, *b;

	ck_assert_int_eq(fake_host_init(&host, &opts), 0);
	host.random_fixed = true; /* random returns the value set here */
	ur_dev_config_default(&cfg);
	ck_assert_int_eq(ur_dev_create(&cfg, &fake_host_ops, &host, NULL, &dev), 0);
	host.random_value = 0xfffffffffffff123ull;
	ck_assert_int_eq(ur_dev_reg_mr(dev, 0x1000, backing, 64, UR_ACCESS_LOCAL_WRITE, PD, &a), 0);
	host.random_value = 0x0000000000000abcull;
	ck_assert_int_eq(ur_dev_reg_mr(dev, 0x1000, backing, 64, UR_ACCESS_LOCAL_WRITE, PD, &b), 0);
	ck_assert_uint_eq(a->key & TAG_MASK, 0x123);
	ck_assert_uint_eq(b->key & TAG_MASK, 0xabc);
	ur_dev_dereg_mr(dev, a);
	ur_dev_dereg_mr(dev, b);
	ur_dev_destroy(dev);
	fake_host_check_idle(&host);
	fake_host_fini(&host);
}
END_TEST

/* A sparse (implicit on-demand) region asks the host before every access;
 * a refusal is a bounds error; other regions never ask. */
static int faults;
static bool fault_ok, fault_write;
static void *fault_p;
static uint64_t fault_len;

static bool fake_fault_in(void *p, uint64_t len, bool write)
{
	faults++;
	fault_p = p;
	fault_len = len;
	fault_write = write;
	return fault_ok;
}

START_TEST(test_sparse_asks_fault_in)
{
	struct ur_mr *plain = add(0x1000, 4096, UR_ACCESS_LOCAL_WRITE | ALL_REMOTE, PD, 1);
	struct ur_mr *sparse = add(0x1000, 4096, UR_ACCESS_LOCAL_WRITE | ALL_REMOTE, PD, 2);

	sparse->sparse = true;
	/* no handler: nothing to ask */
	ck_assert_int_eq(check(sparse->key, PD, 0x1100, 16, UR_ACCESS_REMOTE_WRITE), UR_MR_OK);
	tab.fault_in = fake_fault_in;
	fault_ok = true;
	ck_assert_int_eq(check(plain->key, PD, 0x1100, 16, UR_ACCESS_REMOTE_WRITE), UR_MR_OK);
	ck_assert_int_eq(faults, 0);
	ck_assert_int_eq(check(sparse->key, PD, 0x1100, 16, UR_ACCESS_REMOTE_WRITE), UR_MR_OK);
	ck_assert_int_eq(faults, 1);
	ck_assert_ptr_eq(fault_p, backing + 0x100);
	ck_assert_uint_eq(fault_len, 16);
	ck_assert(fault_write);
	ck_assert_int_eq(check(sparse->key, PD, 0x1000, 8, UR_ACCESS_REMOTE_ATOMIC), UR_MR_OK);
	ck_assert(fault_write);
	ck_assert_int_eq(check(sparse->key, PD, 0x1000, 64, UR_ACCESS_LOCAL_WRITE), UR_MR_OK);
	ck_assert(fault_write);
	ck_assert_int_eq(check(sparse->key, PD, 0x1000, 64, UR_ACCESS_REMOTE_READ), UR_MR_OK);
	ck_assert(!fault_write);
	/* the pages cannot be had: a bounds error, as an unresolvable ODP fault */
	fault_ok = false;
	ck_assert_int_eq(check(sparse->key, PD, 0x1000, 64, UR_ACCESS_REMOTE_READ), UR_MR_BOUNDS);
	/* the cheaper checks come first: no question for a bad PD or bounds */
	faults = 0;
	ck_assert_int_eq(check(sparse->key, PD + 1, 0x1000, 64, 0), UR_MR_BAD_PD);
	ck_assert_int_eq(check(sparse->key, PD, 0x1000, 8192, 0), UR_MR_BOUNDS);
	ck_assert_int_eq(faults, 0);
}
END_TEST

static Suite *mr_suite(void)
{
	Suite *s = suite_create("mr");
	TCase *tc = tcase_create("mr");

	tcase_add_checked_fixture(tc, table_setup, table_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_key_layout);
	tcase_add_test(tc, test_reused_slot_gets_new_key);
	tcase_add_test(tc, test_freed_index_not_reused_at_once);
	tcase_add_test(tc, test_bad_key);
	tcase_add_test(tc, test_empty_table);
	tcase_add_test(tc, test_wrong_pd);
	tcase_add_test(tc, test_bounds);
	tcase_add_test(tc, test_bounds_top_of_address_space);
	tcase_add_test(tc, test_zero_length);
	tcase_add_test(tc, test_access_flags);
	tcase_add_test(tc, test_invalidated);
	tcase_add_test(tc, test_guessing_by_index_fails);
	tcase_add_test(tc, test_table_full);
	tcase_add_test(tc, test_device_uses_host_random);
	tcase_add_test(tc, test_sparse_asks_fault_in);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	sr = srunner_create(mr_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
