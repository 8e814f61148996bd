/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Scatter/gather copies between an SGE list and a linear buffer: the list
 * has zero-length SGEs before, between and after its pieces, which lie apart
 * in one registered region. Every (offset, length) within the list and just
 * past its end is swept against a model (the pieces laid end to end); the
 * boundaries are also spelled out: a copy that ends exactly where an SGE
 * ends, one that starts in the middle of the list, a list too short, a copy
 * in place, and the keys' refusals.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mr.h"
#include "sg_copy.h"
#include "test_util.h"

#define PD 3
#define IOVA 0x7000000000ull

static struct ur_mr_table tab;
static struct ur_mr *mr, *ro_mr;
static uint8_t mem[128], ro_mem[32];
static struct ur_sge sge[7];
static struct ur_sg_list list;

/* The pieces: 10 bytes at 0, 6 at 40, 16 at 80; zero-length SGEs around them. */
static const struct {
	uint32_t at, len;
} piece[] = {{0, 0}, {0, 10}, {20, 0}, {40, 6}, {50, 0}, {80, 16}, {100, 0}};
#define TOTAL 32u

static void setup(void)
{
	ur_mr_table_init(&tab);
	ck_assert_int_eq(ur_mr_add(&tab, IOVA, mem, sizeof(mem), UR_ACCESS_LOCAL_WRITE, PD, 1, &mr),
			 0);
	ck_assert_int_eq(ur_mr_add(&tab, IOVA, ro_mem, sizeof(ro_mem), 0, PD, 2, &ro_mr), 0);
	for (unsigned i = 0; i < 7; i++)
		sge[i] = (struct ur_sge){IOVA + piece[i].at, piece[i].len, mr->key};
	list = (struct ur_sg_list){&tab, PD, sge, 7};
	for (unsigned i = 0; i < sizeof(mem); i++)
		mem[i] = (uint8_t)(0x80 + i);
}

static void teardown(void)
{
	ur_mr_table_fini(&tab);
}

/* Where byte `k` of the list lives in `mem`. */
static unsigned where(uint32_t k)
{
	for (unsigned i = 0; i < 7; i++) {
		if (k < piece[i].len)
			return piece[i].at + k;
		k -= piece[i].len;
	}
	ck_abort_msg("byte %u past the list", k);
	return 0;
}

/* Every (off, len) with off + len up to two past the end; copying nothing is never an error. */
START_TEST(test_gather_sweep)
{
	for (uint32_t off = 0; off <= TOTAL + 1; off++) {
		for (uint32_t len = 0; off + len <= TOTAL + 2; len++) {
			uint8_t out[TOTAL + 8];
			int rc;

			memset(out, 0xee, sizeof(out));
			rc = ur_sg_gather(&list, off, out, len, NULL);
			if (len && off + len > TOTAL) {
				require(rc == -EMSGSIZE, "off %u len %u: %d", off, len, rc);
				continue;
			}
			require(rc == 0, "off %u len %u: %d", off, len, rc);
			for (uint32_t k = 0; k < len; k++)
				require(out[k] == mem[where(off + k)], "off %u len %u byte %u", off,
					len, k);
			require(out[len] == 0xee, "off %u len %u: wrote past len", off, len);
		}
	}
}
END_TEST

START_TEST(test_scatter_sweep)
{
	for (uint32_t off = 0; off <= TOTAL + 1; off++) {
		for (uint32_t len = 0; off + len <= TOTAL + 2; len++) {
			uint8_t src[TOTAL + 8], before[sizeof(mem)];
			int rc;

			for (unsigned k = 0; k < sizeof(src); k++)
				src[k] = (uint8_t)(off * 7 + len * 13 + k);
			memcpy(before, mem, sizeof(mem));
			rc = ur_sg_scatter(&list, off, src, len);
			if (len && off + len > TOTAL) {
				require(rc == -EMSGSIZE, "off %u len %u: %d", off, len, rc);
				memcpy(mem, before, sizeof(mem));
				continue;
			}
			require(rc == 0, "off %u len %u: %d", off, len, rc);
			for (uint32_t k = 0; k < len; k++) {
				require(mem[where(off + k)] == src[k], "off %u len %u byte %u", off,
					len, k);
				before[where(off + k)] = src[k];
			}
			require(memcmp(mem, before, sizeof(mem)) == 0,
				"off %u len %u: wrote outside the range", off, len);
		}
	}
}
END_TEST

/* Ending exactly at an SGE's end, and starting exactly at the next one's start. */
START_TEST(test_sge_boundaries)
{
	uint8_t out[TOTAL];

	ck_assert_int_eq(ur_sg_gather(&list, 0, out, 10, NULL), 0);
	ck_assert_int_eq(memcmp(out, mem, 10), 0);
	ck_assert_int_eq(ur_sg_gather(&list, 10, out, 6, NULL), 0);
	ck_assert_int_eq(memcmp(out, mem + 40, 6), 0);
	ck_assert_int_eq(ur_sg_gather(&list, 0, out, 16, NULL), 0);
	ck_assert_int_eq(memcmp(out, mem, 10), 0);
	ck_assert_int_eq(memcmp(out + 10, mem + 40, 6), 0);
	/* the whole list, ending at the last non-empty SGE's end */
	ck_assert_int_eq(ur_sg_gather(&list, 0, out, TOTAL, NULL), 0);
	ck_assert_int_eq(memcmp(out + 16, mem + 80, 16), 0);
	/* nothing at the very end is no error; one byte more is */
	ck_assert_int_eq(ur_sg_gather(&list, TOTAL, out, 0, NULL), 0);
	ck_assert_int_eq(ur_sg_gather(&list, TOTAL, out, 1, NULL), -EMSGSIZE);
}
END_TEST

/* From the middle of the second piece into the third. */
START_TEST(test_offset_into_the_middle)
{
	static const uint8_t src[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	uint8_t out[8];

	ck_assert_int_eq(ur_sg_scatter(&list, 13, src, 8), 0);
	ck_assert_int_eq(memcmp(mem + 43, src, 3), 0);
	ck_assert_int_eq(memcmp(mem + 80, src + 3, 5), 0);
	ck_assert_uint_eq(mem[42], 0x80 + 42);
	ck_assert_uint_eq(mem[85], 0x80 + 85);
	ck_assert_int_eq(ur_sg_gather(&list, 13, out, 8, NULL), 0);
	ck_assert_int_eq(memcmp(out, src, 8), 0);
}
END_TEST

/* A list that ends before the copy does is an error (the pieces that fit may be written). */
START_TEST(test_list_too_short)
{
	uint8_t src[TOTAL + 1], out[TOTAL + 1];

	memset(src, 0x5a, sizeof(src));
	ck_assert_int_eq(ur_sg_scatter(&list, 0, src, TOTAL + 1), -EMSGSIZE);
	ck_assert_int_eq(ur_sg_gather(&list, 0, out, TOTAL + 1, NULL), -EMSGSIZE);
	ck_assert_int_eq(ur_sg_gather(&list, 31, out, 2, NULL), -EMSGSIZE);
	ck_assert_int_eq(ur_sg_gather(&list, 1000, out, 1, NULL), -EMSGSIZE);
	list.num_sge = 0;
	ck_assert_int_eq(ur_sg_gather(&list, 0, out, 1, NULL), -EMSGSIZE);
	ck_assert_int_eq(ur_sg_gather(&list, 0, out, 0, NULL), 0);
	/* only zero-length SGEs */
	list.num_sge = 1;
	ck_assert_int_eq(ur_sg_scatter(&list, 0, src, 1), -EMSGSIZE);
}
END_TEST

/* Bytes within one SGE are pointed at, not copied; spanning two, they are copied. */
START_TEST(test_gather_in_place)
{
	uint8_t out[TOTAL];
	const void *at = NULL;

	memset(out, 0xee, sizeof(out));
	ck_assert_int_eq(ur_sg_gather(&list, 12, out, 4, &at), 0);
	ck_assert_ptr_eq(at, mem + 42);
	ck_assert_uint_eq(out[0], 0xee);
	/* a whole SGE, after a zero-length one */
	at = NULL;
	ck_assert_int_eq(ur_sg_gather(&list, 16, out, 16, &at), 0);
	ck_assert_ptr_eq(at, mem + 80);
	/* spanning: copied, the pointer left alone */
	at = NULL;
	ck_assert_int_eq(ur_sg_gather(&list, 8, out, 4, &at), 0);
	ck_assert_ptr_null(at);
	ck_assert_int_eq(memcmp(out, mem + 8, 2), 0);
	ck_assert_int_eq(memcmp(out + 2, mem + 40, 2), 0);
}
END_TEST

/* Keys: unknown, another PD, out of the region's bounds, no LOCAL_WRITE for a scatter. */
START_TEST(test_key_refusals)
{
	uint8_t buf[8] = {0};
	struct ur_sge one;
	struct ur_sg_list l = {&tab, PD, &one, 1};

	one = (struct ur_sge){IOVA, 8, mr->key ^ 1};
	ck_assert_int_eq(ur_sg_gather(&l, 0, buf, 8, NULL), -EACCES);
	one = (struct ur_sge){IOVA, 8, mr->key};
	l.pd = PD + 1;
	ck_assert_int_eq(ur_sg_scatter(&l, 0, buf, 8), -EACCES);
	l.pd = PD;
	one = (struct ur_sge){IOVA + sizeof(mem) - 4, 8, mr->key};
	ck_assert_int_eq(ur_sg_gather(&l, 0, buf, 8, NULL), -EACCES);
	/* only the bytes copied are checked: the first four are in bounds */
	ck_assert_int_eq(ur_sg_gather(&l, 0, buf, 4, NULL), 0);
	one = (struct ur_sge){IOVA, 8, ro_mr->key};
	ck_assert_int_eq(ur_sg_scatter(&l, 0, buf, 8), -EACCES);
	ck_assert_int_eq(ur_sg_gather(&l, 0, buf, 8, NULL), 0);
	/* a bad key in the second piece: the first piece is written already */
	memset(buf, 0x11, sizeof(buf));
	sge[3].lkey = mr->key ^ 1;
	ck_assert_int_eq(ur_sg_scatter(&list, 8, buf, 4), -EACCES);
	ck_assert_uint_eq(mem[8], 0x11);
	ck_assert_uint_eq(mem[9], 0x11);
	ck_assert_uint_eq(mem[40], 0x80 + 40);
}
END_TEST

static Suite *sg_copy_suite(void)
{
	Suite *s = suite_create("sg_copy");
	TCase *tc = tcase_create("copy");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_gather_sweep);
	tcase_add_test(tc, test_scatter_sweep);
	tcase_add_test(tc, test_sge_boundaries);
	tcase_add_test(tc, test_offset_into_the_middle);
	tcase_add_test(tc, test_list_too_short);
	tcase_add_test(tc, test_gather_in_place);
	tcase_add_test(tc, test_key_refusals);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	sr = srunner_create(sg_copy_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
