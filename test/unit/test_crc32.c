/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ur_crc32 and its variants: known vectors, every variant against the
 * portable one at every length and alignment that exercises the block and
 * tail paths, reads confined to the buffer (guard pages), composition, and
 * the folding constants derived again from the polynomial.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "crc32.h"
#include "test_util.h"

#define MAX_SWEEP_LEN 1100
#define MAX_ALIGN 64
#define LARGE_LEN (1u << 20)

/* Bit at a time, straight from the definition: independent of the tables. */
static uint32_t ref_crc32(uint32_t crc, const uint8_t *p, size_t len)
{
	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = crc & 1 ? crc >> 1 ^ 0xedb88320u : crc >> 1;
	}
	return ~crc;
}

/*
 * Test data sits between two inaccessible pages, so a variant that reads a
 * byte before or after its buffer faults instead of passing by luck.
 */
static uint8_t *area;
static size_t area_len, page;

static void guarded_setup(void)
{
	uint8_t *m;

	page = (size_t)sysconf(_SC_PAGESIZE);
	area_len = (LARGE_LEN + 2 * MAX_ALIGN + page - 1) / page * page;
	m = mmap(NULL, area_len + 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		 0);
	ck_assert_ptr_ne(m, MAP_FAILED);
	ck_assert_int_eq(mprotect(m, page, PROT_NONE), 0);
	ck_assert_int_eq(mprotect(m + page + area_len, page, PROT_NONE), 0);
	area = m + page;
	rng_state = 0x9e3779b97f4a7c15ull;
	for (size_t i = 0; i < area_len; i++)
		area[i] = (uint8_t)rng();
}

static void guarded_teardown(void)
{
	munmap(area - page, area_len + 2 * page);
	area = NULL;
}

static const struct ur_crc32_impl *impls;
static size_t nimpls;

/* A start value that varies with the length, so the preset path is exercised too. */
static uint32_t seed_for(size_t len)
{
	return len % 3 ? (uint32_t)(len * 0x9e3779b9u) : 0;
}

START_TEST(test_known_vectors)
{
	static const struct {
		const char *s;
		uint32_t crc;
	} v[] = {
		{ "", 0 },
		{ "a", 0xe8b7be43 },
		{ "abc", 0x352441c2 },
		{ "123456789", 0xcbf43926 },
		{ "The quick brown fox jumps over the lazy dog", 0x414fa339 },
	};
	const struct ur_crc32_impl *im = &impls[_i];
	uint8_t buf[65536];

	for (size_t j = 0; j < sizeof(v) / sizeof(v[0]); j++)
		ck_assert_msg(im->fn(0, v[j].s, strlen(v[j].s)) == v[j].crc, "%s: \"%s\"", im->name,
			      v[j].s);
	memset(buf, 0, 32);
	ck_assert_uint_eq(im->fn(0, buf, 32), 0x190a55ad);
	memset(buf, 0xff, 32);
	ck_assert_uint_eq(im->fn(0, buf, 32), 0xff6cab0b);
	/* Values from zlib's crc32(), long enough for every folding loop. */
	for (size_t j = 0; j < 4096; j++)
		buf[j] = (uint8_t)(j * 7 + 3);
	ck_assert_uint_eq(im->fn(0, buf, 4096), 0x5e4e1995);
	for (size_t j = 0; j < sizeof(buf); j++)
		buf[j] = (uint8_t)j;
	ck_assert_uint_eq(im->fn(0, buf, sizeof(buf)), 0xb11de6a1);
}
END_TEST

/* The portable variant against the bit-serial definition. */
START_TEST(test_portable_matches_reference)
{
	static const size_t aligns[] = { 0, 1, 3, 7, 8, 15, 63 };

	for (size_t a = 0; a < sizeof(aligns) / sizeof(aligns[0]); a++)
		for (size_t len = 0; len <= MAX_SWEEP_LEN; len++) {
			const uint8_t *p = area + aligns[a];
			uint32_t seed = seed_for(len);

			ck_assert_msg(ur_crc32_portable(seed, p, len) == ref_crc32(seed, p, len),
				      "align %zu len %zu", aligns[a], len);
		}
}
END_TEST

/* Loop index = alignment 0..63: every variant equals portable at every length. */
START_TEST(test_variants_every_alignment)
{
	const uint8_t *p = area + _i;

	for (size_t len = 0; len <= MAX_SWEEP_LEN; len++) {
		uint32_t seed = seed_for(len);
		uint32_t want = ur_crc32_portable(seed, p, len);

		for (size_t k = 1; k < nimpls; k++)
			ck_assert_msg(impls[k].fn(seed, p, len) == want, "%s: align %d len %zu",
				      impls[k].name, _i, len);
		ck_assert_msg(ur_crc32(seed, p, len) == want, "ur_crc32: align %d len %zu", _i,
			      len);
	}
}
END_TEST

static bool untouched(const uint8_t *from, const uint8_t *to)
{
	while (from < to)
		if (*from++ != 0xa5)
			return false;
	return true;
}

/*
 * Loop index = source alignment 0..63, the destination at another: the copy
 * variant returns the CRC of the source, copies every byte, and writes
 * nothing outside the destination. Sources ending at the guard page show it
 * reads nothing past them.
 */
START_TEST(test_copy_every_alignment)
{
	enum { GUARD = 64 };
	static uint8_t out[GUARD + MAX_SWEEP_LEN + MAX_ALIGN + GUARD];
	uint8_t *dst = out + GUARD + (size_t)(_i * 7 % MAX_ALIGN);

	for (size_t len = 0; len <= MAX_SWEEP_LEN; len++) {
		const uint8_t *srcs[2] = { area + _i, area + area_len - len };

		for (int j = 0; j < 2; j++) {
			uint32_t seed = seed_for(len);

			memset(out, 0xa5, sizeof(out));
			ck_assert_msg(ur_crc32_copy(seed, dst, srcs[j], len) ==
					  ur_crc32_portable(seed, srcs[j], len),
				      "align %d len %zu", _i, len);
			ck_assert_msg(!memcmp(dst, srcs[j], len), "align %d len %zu", _i, len);
			ck_assert_msg(untouched(out, dst) && untouched(dst + len, out + sizeof(out)),
				      "align %d len %zu: wrote outside", _i, len);
		}
	}
}
END_TEST

/* Buffers that end at, or start right after, a guard page. */
START_TEST(test_variants_at_guard_pages)
{
	for (size_t len = 0; len <= MAX_SWEEP_LEN; len++) {
		const uint8_t *tail = area + area_len - len;
		uint32_t want_head = ur_crc32_portable(0, area, len);
		uint32_t want_tail = ur_crc32_portable(0, tail, len);

		for (size_t k = 0; k < nimpls; k++) {
			ck_assert_msg(impls[k].fn(0, area, len) == want_head, "%s: len %zu",
				      impls[k].name, len);
			ck_assert_msg(impls[k].fn(0, tail, len) == want_tail, "%s: len %zu",
				      impls[k].name, len);
		}
	}
}
END_TEST

START_TEST(test_variants_random_large)
{
	rng_state = 12345;
	for (int iter = 0; iter < 200; iter++) {
		size_t off = rng() % MAX_ALIGN;
		size_t len = rng() % (LARGE_LEN + 1);
		uint32_t seed = (uint32_t)rng();
		uint32_t want = ur_crc32_portable(seed, area + off, len);

		for (size_t k = 1; k < nimpls; k++)
			ck_assert_msg(impls[k].fn(seed, area + off, len) == want,
				      "%s: off %zu len %zu", impls[k].name, off, len);
	}
	/* Long enough to leave the CPU caches, and the reference once. */
	ck_assert_uint_eq(ur_crc32(0, area, LARGE_LEN), ref_crc32(0, area, LARGE_LEN));
}
END_TEST

/* crc(crc(0, a), b) == crc(0, a || b), split at every point, for every variant. */
START_TEST(test_composition)
{
	const struct ur_crc32_impl *im = &impls[_i];
	const size_t n = 700;
	uint32_t whole = im->fn(0, area, n);

	for (size_t s = 0; s <= n; s++)
		ck_assert_msg(im->fn(im->fn(0, area, s), area + s, n - s) == whole, "%s: split %zu",
			      im->name, s);
	rng_state = 777;
	for (int iter = 0; iter < 100; iter++) {
		size_t len = rng() % 70000;
		size_t a = rng() % (len + 1), b = a + rng() % (len - a + 1);
		uint32_t c = im->fn(0, area, a);

		c = im->fn(c, area + a, b - a);
		c = im->fn(c, area + b, len - b);
		ck_assert_msg(c == im->fn(0, area, len), "%s: len %zu split %zu %zu", im->name, len,
			      a, b);
	}
}
END_TEST

/*
 * P = x^32 + x^26 + x^23 + x^22 + x^16 + x^12 + x^11 + x^10 + x^8 + x^7 + x^5
 *     + x^4 + x^2 + x + 1
 */
#define P_NORMAL 0x104c11db7ull

/* x^n mod P, one multiplication by x at a time. */
static uint64_t slow_xpow_mod(unsigned int n)
{
	uint64_t r = 1;

	while (n--) {
		r <<= 1;
		if (r >> 32 & 1)
			r ^= P_NORMAL;
	}
	return r;
}

/* floor(x^64 / P) by long division, one numerator bit at a time. */
static uint64_t slow_mu(void)
{
	uint64_t rem = 0, q = 0;

	for (int bit = 64; bit >= 0; bit--) {
		rem = rem << 1 | (bit == 64);
		if (rem >> 32 & 1) {
			rem ^= P_NORMAL;
			q |= 1ull << bit;
		}
	}
	return q;
}

static uint64_t reflect33(uint64_t v)
{
	uint64_t r = 0;

	for (int i = 0; i <= 32; i++)
		if (v >> i & 1)
			r |= 1ull << (32 - i);
	return r;
}

START_TEST(test_constants_rederived)
{
	ck_assert_uint_gt(ur_crc32_nconsts, 0);
	for (size_t i = 0; i < ur_crc32_nconsts; i++) {
		const struct ur_crc32_const *c = &ur_crc32_consts[i];
		uint64_t want;

		switch (c->kind) {
		case UR_CRC32_CONST_XPOW:
			want = reflect33(slow_xpow_mod(c->n));
			break;
		case UR_CRC32_CONST_MU:
			want = reflect33(slow_mu());
			break;
		case UR_CRC32_CONST_POLY:
			want = reflect33(P_NORMAL);
			break;
		default:
			ck_abort_msg("unknown constant kind %d", c->kind);
		}
		ck_assert_msg(c->value == want, "constant %zu (kind %d, n %u): 0x%llx, want 0x%llx",
			      i, c->kind, c->n, (unsigned long long)c->value,
			      (unsigned long long)want);
	}
	/* The reflected polynomial the tables use is P without its x^32 term. */
	ck_assert_uint_eq(reflect33(P_NORMAL) >> 1, 0xedb88320u);
}
END_TEST

START_TEST(test_dispatch)
{
	const uint8_t *p = area + 5;

	ck_assert_uint_ge(nimpls, 1);
	ck_assert_str_eq(impls[0].name, "portable");
	/* By default the last (fastest) supported variant runs. */
	ck_assert_str_eq(ur_crc32_impl_name(), impls[nimpls - 1].name);
	for (size_t k = 0; k < nimpls; k++) {
		ck_assert_int_eq(ur_crc32_select(impls[k].name), 0);
		ck_assert_str_eq(ur_crc32_impl_name(), impls[k].name);
		ck_assert_uint_eq(ur_crc32(1, p, 3000), ur_crc32_portable(1, p, 3000));
	}
	ck_assert_int_eq(ur_crc32_select("no-such-variant"), -ENOENT);
	ck_assert_int_eq(ur_crc32_select(NULL), 0);
	ck_assert_str_eq(ur_crc32_impl_name(), impls[nimpls - 1].name);
}
END_TEST

static Suite *crc32_suite(void)
{
	Suite *s = suite_create("crc32");
	TCase *tc = tcase_create("crc32");

	tcase_add_checked_fixture(tc, guarded_setup, guarded_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_known_vectors, 0, (int)nimpls);
	tcase_add_test(tc, test_portable_matches_reference);
	tcase_add_loop_test(tc, test_variants_every_alignment, 0, MAX_ALIGN);
	tcase_add_test(tc, test_variants_at_guard_pages);
	tcase_add_loop_test(tc, test_copy_every_alignment, 0, MAX_ALIGN);
	tcase_add_test(tc, test_variants_random_large);
	tcase_add_loop_test(tc, test_composition, 0, (int)nimpls);
	tcase_add_test(tc, test_constants_rederived);
	tcase_add_test(tc, test_dispatch);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	nimpls = ur_crc32_impls(&impls);
	printf("crc32 variants on this CPU:");
	for (size_t k = 0; k < nimpls; k++)
		printf(" %s", impls[k].name);
	printf("; ur_crc32() uses %s\n", ur_crc32_impl_name());

	sr = srunner_create(crc32_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
