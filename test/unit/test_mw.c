/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memory windows (transport/mw.c) on a bare key table: a window's key is
 * an R_Key only and grants nothing until bound; a bind obeys IBTA
 * 10.6.7.2's rules (each refusal checked with the rule it cites); a bound
 * window grants its own bounds and access, a type 2 one only to the QP
 * that bound it; invalidation, unbinding, a region or QP going away each
 * end the access, and the old key stays refused after the next bind.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>

#include "mr.h"
#include "mw.h"
#include "test_util.h"
#include "verbs_types.h"

#define PD 7
#define QPN 0x11
#define RW (UR_ACCESS_REMOTE_READ | UR_ACCESS_REMOTE_WRITE)
#define REGION_ACCESS (UR_ACCESS_LOCAL_WRITE | UR_ACCESS_MW_BIND | RW)

static struct ur_mr_table tab;
static uint8_t backing[8192];
static struct ur_mr *region;

static void setup(void)
{
	ur_mr_table_init(&tab);
	rng_state = 0x13198a2e03707344ull;
	ck_assert_int_eq(
	    ur_mr_add(&tab, 0x10000, backing, sizeof(backing), REGION_ACCESS, PD, rng(), &region),
	    0);
}

static void teardown(void)
{
	ur_mr_table_fini(&tab);
}

static struct ur_mr *window(unsigned kind, uint32_t pd)
{
	struct ur_mr *mw = NULL;

	ck_assert_int_eq(ur_mw_alloc(&tab, kind, pd, rng(), &mw), 0);
	return mw;
}

/* A bind of `mw` to [addr, addr+len) of `region` with the next key. */
static struct ur_mw_bind bind_of(const struct ur_mr *mw, uint64_t addr, uint64_t len,
				 uint32_t access)
{
	return (struct ur_mw_bind){
	    .mw_key = mw->key,
	    .new_key = (mw->key & ~UR_MW_KEY_MASK) | ((mw->key + 1) & UR_MW_KEY_MASK),
	    .mr_lkey = region->key,
	    .access = access,
	    .addr = addr,
	    .length = len,
	};
}

static enum ur_mr_err rcheck(uint32_t key, uint32_t pd, uint32_t qpn, uint64_t va, uint64_t len,
			     uint32_t access)
{
	struct ur_mr *out = NULL;

	return ur_rkey_check(&tab, key, pd, qpn, va, len, access, &out);
}

START_TEST(test_unbound_window_grants_nothing)
{
	struct ur_mr *mw = window(UR_KEY_MW2, PD);
	struct ur_mr *out;

	ck_assert_uint_ne(mw->key >> UR_MR_TAG_BITS, region->key >> UR_MR_TAG_BITS);
	ck_assert(!mw->valid);
	ck_assert_int_eq(rcheck(mw->key, PD, QPN, 0x10000, 0, 0), UR_MR_BAD_KEY);
	/* a window's key is never an L_Key, bound or not */
	ck_assert_int_eq(ur_mr_check(&tab, mw->key, PD, 0x10000, 1, 0, &out), UR_MR_BAD_KEY);
	struct ur_mw_bind b = bind_of(mw, 0x10000, 64, RW);
	ck_assert_ptr_null(ur_mw_bind(&tab, PD, QPN, &b));
	ck_assert_int_eq(ur_mr_check(&tab, b.new_key, PD, 0x10000, 1, 0, &out), UR_MR_BAD_KEY);
	ck_assert_int_eq(ur_mw_alloc(&tab, 3, PD, 0, &out), -EINVAL);
}
END_TEST

START_TEST(test_type1_bind_bounds_access_and_key)
{
	struct ur_mr *mw = window(UR_KEY_MW1, PD), *out = NULL;
	struct ur_mw_bind b = bind_of(mw, 0x10100, 256, UR_ACCESS_REMOTE_READ);
	uint32_t old = mw->key;

	ck_assert_ptr_null(ur_mw_bind(&tab, PD, QPN, &b));
	ck_assert_uint_eq(mw->key, b.new_key);
	ck_assert_uint_eq(region->windows, 1);
	ck_assert_int_eq(rcheck(old, PD, QPN, 0x10100, 8, UR_ACCESS_REMOTE_READ), UR_MR_BAD_KEY);
	ck_assert_int_eq(
	    ur_rkey_check(&tab, mw->key, PD, 99, 0x10100, 256, UR_ACCESS_REMOTE_READ, &out),
	    UR_MR_OK); /* type 1: any QP of the PD */
	ck_assert_ptr_eq(ur_mr_ptr(out, 0x10180), backing + 0x180);
	ck_assert_int_eq(rcheck(mw->key, PD, QPN, 0x100ff, 1, UR_ACCESS_REMOTE_READ), UR_MR_BOUNDS);
	ck_assert_int_eq(rcheck(mw->key, PD, QPN, 0x10100, 257, UR_ACCESS_REMOTE_READ),
			 UR_MR_BOUNDS);
	ck_assert_int_eq(rcheck(mw->key, PD, QPN, 0x101ff, 2, UR_ACCESS_REMOTE_READ), UR_MR_BOUNDS);
	ck_assert_int_eq(rcheck(mw->key, PD, QPN, UINT64_MAX, 2, UR_ACCESS_REMOTE_READ),
			 UR_MR_BOUNDS);
	ck_assert_int_eq(rcheck(mw->key, PD, QPN, 0x10100, 8, UR_ACCESS_REMOTE_WRITE),
			 UR_MR_ACCESS);
	ck_assert_int_eq(rcheck(mw->key, PD + 1, QPN, 0x10100, 8, UR_ACCESS_REMOTE_READ),
			 UR_MR_BAD_PD);
	/* the region itself still answers with its own rights */
	ck_assert_int_eq(rcheck(region->key, PD, QPN, 0x10000, 8192, RW), UR_MR_OK);
	/* rebinding a type 1 window moves it; length 0 unbinds it, and its key changes */
	b = bind_of(mw, 0x10000, 16, RW);
	ck_assert_ptr_null(ur_mw_bind(&tab, PD, QPN, &b));
	ck_assert_uint_eq(region->windows, 1);
	ck_assert_int_eq(rcheck(mw->key, PD, QPN, 0x10000, 16, UR_ACCESS_REMOTE_WRITE), UR_MR_OK);
	old = mw->key;
	b = bind_of(mw, 0, 0, 0);
	b.mr_lkey = 0;
	ck_assert_ptr_null(ur_mw_bind(&tab, PD, QPN, &b));
	ck_assert_uint_eq(region->windows, 0);
	ck_assert_int_eq(rcheck(old, PD, QPN, 0x10000, 1, UR_ACCESS_REMOTE_WRITE), UR_MR_BAD_KEY);
	ck_assert_int_eq(rcheck(mw->key, PD, QPN, 0x10000, 1, UR_ACCESS_REMOTE_WRITE),
			 UR_MR_BAD_KEY);
	/* a type 1 window is never invalidated (o10-37.2.26) */
	b = bind_of(mw, 0x10000, 16, RW);
	ck_assert_ptr_null(ur_mw_bind(&tab, PD, QPN, &b));
	ck_assert_ptr_nonnull(ur_mw_check_invalidate(&tab, mw->key, PD, QPN, false));
	ck_assert_ptr_nonnull(ur_mw_check_invalidate(&tab, mw->key, PD, QPN, true));
}
END_TEST

/* One refused bind per rule: what it breaks, and the window stays as it was. */
struct bad_bind {
	const char *rule;
	unsigned kind;
	uint32_t mw_pd;	     /* the window's PD */
	uint32_t region_acc; /* a second region's access, its PD region_pd */
	uint32_t region_pd;
	uint64_t addr, len;
	uint32_t access;
	uint32_t key_xor; /* applied to the new key */
	int bound_first;  /* bound once already (type 2: not free) */
};

static const struct bad_bind bad_binds[] = {
    {"C10-73 region without MW_BIND", UR_KEY_MW1, PD, UR_ACCESS_LOCAL_WRITE | RW, PD, 0x20000, 64,
     UR_ACCESS_REMOTE_READ, 0, 0},
    {"C10-74 write without local write", UR_KEY_MW1, PD, UR_ACCESS_MW_BIND | UR_ACCESS_REMOTE_READ,
     PD, 0x20000, 64, UR_ACCESS_REMOTE_WRITE, 0, 0},
    {"C10-74 atomic without local write", UR_KEY_MW2, PD, UR_ACCESS_MW_BIND, PD, 0x20000, 64,
     UR_ACCESS_REMOTE_ATOMIC, 0, 0},
    {"C10-75 starts before the region", UR_KEY_MW1, PD, REGION_ACCESS, PD, 0x1ffff, 64,
     UR_ACCESS_REMOTE_READ, 0, 0},
    {"C10-75 ends past the region", UR_KEY_MW2, PD, REGION_ACCESS, PD, 0x20fc1, 64,
     UR_ACCESS_REMOTE_READ, 0, 0},
    {"C10-75 wraps past 2^64", UR_KEY_MW1, PD, REGION_ACCESS, PD, UINT64_MAX - 8, 64,
     UR_ACCESS_REMOTE_READ, 0, 0},
    {"region in another PD", UR_KEY_MW1, PD, REGION_ACCESS, PD + 1, 0x20000, 64,
     UR_ACCESS_REMOTE_READ, 0, 0},
    {"C10-72 type 2 by a QP of another PD", UR_KEY_MW2, PD + 1, REGION_ACCESS, PD + 1, 0x20000, 64,
     UR_ACCESS_REMOTE_READ, 0, 0},
    {"o10-37.2.30 type 2 bound twice", UR_KEY_MW2, PD, REGION_ACCESS, PD, 0x20000, 64,
     UR_ACCESS_REMOTE_READ, 0, 1},
    {"o10-37.2.40 type 2 with length 0", UR_KEY_MW2, PD, REGION_ACCESS, PD, 0x20000, 0,
     UR_ACCESS_REMOTE_READ, 0, 0},
    {"new key changes its index", UR_KEY_MW2, PD, REGION_ACCESS, PD, 0x20000, 64,
     UR_ACCESS_REMOTE_READ, 1u << UR_MR_TAG_BITS, 0},
    {"new key changes its tag", UR_KEY_MW1, PD, REGION_ACCESS, PD, 0x20000, 64,
     UR_ACCESS_REMOTE_READ, 0x100, 0},
    {"zero-based window", UR_KEY_MW1, PD, REGION_ACCESS, PD, 0x20000, 64,
     UR_ACCESS_REMOTE_READ | UR_ACCESS_ZERO_BASED, 0, 0},
    {"window access with MW_BIND", UR_KEY_MW2, PD, REGION_ACCESS, PD, 0x20000, 64,
     UR_ACCESS_REMOTE_READ | UR_ACCESS_MW_BIND, 0, 0},
};

START_TEST(test_bind_rules)
{
	const struct bad_bind *c = &bad_binds[_i];
	struct ur_mr *r2 = NULL, *mw = window(c->kind, c->mw_pd);
	struct ur_mw_bind b;
	uint32_t key;
	const char *why;

	ck_assert_int_eq(
	    ur_mr_add(&tab, 0x20000, backing, 4096, c->region_acc, c->region_pd, rng(), &r2), 0);
	if (c->bound_first) {
		b = bind_of(mw, 0x10000, 8, UR_ACCESS_REMOTE_READ);
		ck_assert_ptr_null(ur_mw_bind(&tab, PD, QPN, &b));
	}
	key = mw->key;
	b = bind_of(mw, c->addr, c->len, c->access);
	b.mr_lkey = r2->key;
	b.new_key ^= c->key_xor;
	why = ur_mw_bind(&tab, PD, QPN, &b);
	ck_assert_msg(why != NULL, "%s: bound", c->rule);
	ck_assert_uint_eq(mw->key, key);
	ck_assert_uint_eq(r2->windows, 0);
	ck_assert_int_eq(rcheck(b.new_key, PD, QPN, c->addr, 1, UR_ACCESS_REMOTE_READ) == UR_MR_OK,
			 0);
	/* no region under a window's key, nor a window to bind by a region's key */
	b = bind_of(mw, 0x10000, 8, UR_ACCESS_REMOTE_READ);
	b.mr_lkey = key;
	ck_assert_ptr_nonnull(ur_mw_bind(&tab, mw->pd, QPN, &b));
	b.mw_key = region->key;
	b.mr_lkey = region->key;
	ck_assert_ptr_nonnull(ur_mw_bind(&tab, PD, QPN, &b));
}
END_TEST

START_TEST(test_type2_qp_and_invalidation)
{
	struct ur_mr *mw = window(UR_KEY_MW2, PD);
	struct ur_mw_bind b = bind_of(mw, 0x10000, 4096, RW | UR_ACCESS_REMOTE_ATOMIC);
	uint32_t first;

	ck_assert_ptr_null(ur_mw_bind(&tab, PD, QPN, &b));
	ck_assert_uint_eq(tab.mw2_bound, 1);
	first = mw->key;
	ck_assert_int_eq(rcheck(first, PD, QPN, 0x10000, 4096, UR_ACCESS_REMOTE_WRITE), UR_MR_OK);
	/* type 2B: only through the QP that bound it (another PD stays a PD error) */
	ck_assert_int_eq(rcheck(first, PD, QPN + 1, 0x10000, 8, UR_ACCESS_REMOTE_WRITE),
			 UR_MR_BAD_QP);
	ck_assert_int_eq(rcheck(first, PD + 1, QPN + 1, 0x10000, 8, UR_ACCESS_REMOTE_WRITE),
			 UR_MR_BAD_PD);
	/* a SEND with Invalidate from another QP, or naming a region, is refused */
	ck_assert_ptr_nonnull(ur_mw_check_invalidate(&tab, first, PD, QPN + 1, true));
	ck_assert_ptr_nonnull(ur_mw_check_invalidate(&tab, first, PD + 1, QPN, false));
	ck_assert_ptr_nonnull(ur_mw_check_invalidate(&tab, region->key, PD, QPN, true));
	ck_assert_ptr_nonnull(ur_mw_check_invalidate(&tab, first ^ 1, PD, QPN, true));
	/* LOCAL_INV from another QP of the PD works */
	ck_assert_ptr_null(ur_mw_check_invalidate(&tab, first, PD, QPN + 1, false));
	ur_mw_invalidate(&tab, first);
	ck_assert_uint_eq(region->windows, 0);
	ck_assert_uint_eq(tab.mw2_bound, 0);
	ck_assert_int_eq(rcheck(first, PD, QPN, 0x10000, 8, UR_ACCESS_REMOTE_WRITE), UR_MR_BAD_KEY);
	ck_assert_ptr_nonnull(ur_mw_check_invalidate(&tab, first, PD, QPN, false)); /* not bound */
	/* bound again with the next key: the old one stays refused */
	b = bind_of(mw, 0x10800, 8, UR_ACCESS_REMOTE_READ);
	ck_assert_ptr_null(ur_mw_bind(&tab, PD, QPN + 1, &b));
	ck_assert_int_eq(rcheck(first, PD, QPN + 1, 0x10800, 8, UR_ACCESS_REMOTE_READ),
			 UR_MR_BAD_KEY);
	ck_assert_int_eq(rcheck(mw->key, PD, QPN + 1, 0x10800, 8, UR_ACCESS_REMOTE_READ), UR_MR_OK);
	ck_assert_ptr_null(ur_mw_check_invalidate(&tab, mw->key, PD, QPN + 1, true));
	/* the QP destroyed: its windows go; another QP's stay */
	ur_mw_qp_gone(&tab, QPN);
	ck_assert_int_eq(rcheck(mw->key, PD, QPN + 1, 0x10800, 8, UR_ACCESS_REMOTE_READ), UR_MR_OK);
	ck_assert_uint_eq(tab.mw2_bound, 1);
	ur_mw_qp_gone(&tab, QPN + 1);
	ck_assert_uint_eq(tab.mw2_bound, 0);
	ck_assert_int_eq(rcheck(mw->key, PD, QPN + 1, 0x10800, 8, UR_ACCESS_REMOTE_READ),
			 UR_MR_BAD_KEY);
	ck_assert_uint_eq(region->windows, 0);
}
END_TEST

/* A region deregistered (the provider refuses it while bound; the engine unbinds) or a window
 * freed. */
START_TEST(test_region_gone_and_window_freed)
{
	struct ur_mr *w1 = window(UR_KEY_MW1, PD), *w2 = window(UR_KEY_MW2, PD);
	struct ur_mw_bind b1 = bind_of(w1, 0x10000, 64, RW), b2 = bind_of(w2, 0x10040, 64, RW);
	uint32_t k2;

	ck_assert_ptr_null(ur_mw_bind(&tab, PD, QPN, &b1));
	ck_assert_ptr_null(ur_mw_bind(&tab, PD, QPN, &b2));
	ck_assert_uint_eq(region->windows, 2);
	k2 = w2->key;
	ur_mw_free(&tab, w1);
	ck_assert_uint_eq(region->windows, 1);
	ck_assert_int_eq(rcheck(b1.new_key, PD, QPN, 0x10000, 8, UR_ACCESS_REMOTE_READ),
			 UR_MR_BAD_KEY);
	ur_mw_region_gone(&tab, region);
	ck_assert_uint_eq(region->windows, 0);
	ck_assert_int_eq(rcheck(k2, PD, QPN, 0x10040, 8, UR_ACCESS_REMOTE_READ), UR_MR_BAD_KEY);
	ck_assert(ur_mw_key_named(&tab, k2));
	ck_assert(!ur_mw_key_named(&tab, region->key));
}
END_TEST

static Suite *mw_suite(void)
{
	Suite *s = suite_create("mw");
	TCase *tc = tcase_create("windows");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_unbound_window_grants_nothing);
	tcase_add_test(tc, test_type1_bind_bounds_access_and_key);
	tcase_add_loop_test(tc, test_bind_rules, 0,
			    (int)(sizeof(bad_binds) / sizeof(bad_binds[0])));
	tcase_add_test(tc, test_type2_qp_and_invalidation);
	tcase_add_test(tc, test_region_gone_and_window_freed);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(mw_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
