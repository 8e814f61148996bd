/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Frame buffers of uroce's own (dataplane/frames.c), what a program's
 * af_packet or memif port uses instead of DPDK's pool: every frame taken
 * once until all are out, then none; each aligned, its room whole and
 * apart from the others; what goes back comes out again, reset.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frames.h"

#define N 64
#define ROOM (9216 + RTE_PKTMBUF_HEADROOM)

START_TEST(test_all_out_then_none)
{
	struct dp_frames f;
	struct rte_mbuf *m[N];

	ck_assert_int_eq(dp_frames_init(&f, N, ROOM), 0);
	for (unsigned i = 0; i < N; i++) {
		m[i] = dp_frames_get(&f);
		ck_assert_ptr_nonnull(m[i]);
		/* a frame starts after the headroom, cache-line aligned, with the room's rest */
		ck_assert_uint_eq((uintptr_t)rte_pktmbuf_mtod(m[i], uint8_t *) % 64, 0);
		ck_assert_uint_eq(rte_pktmbuf_tailroom(m[i]), ROOM - RTE_PKTMBUF_HEADROOM);
		/* its whole room is usable and nobody else's */
		memset(rte_pktmbuf_mtod(m[i], uint8_t *), (int)i, rte_pktmbuf_tailroom(m[i]));
		for (unsigned j = 0; j < i; j++)
			ck_assert_ptr_ne(m[i], m[j]);
	}
	ck_assert_ptr_null(dp_frames_get(&f));
	for (unsigned i = 0; i < N; i++) {
		uint8_t *d = rte_pktmbuf_mtod(m[i], uint8_t *);

		ck_assert_uint_eq(d[0], i);
		ck_assert_uint_eq(d[ROOM - RTE_PKTMBUF_HEADROOM - 1], i);
	}
	dp_frames_fini(&f);
}
END_TEST

START_TEST(test_back_and_out_again_reset)
{
	struct dp_frames f;
	struct rte_mbuf *a, *b;

	ck_assert_int_eq(dp_frames_init(&f, 2, ROOM), 0);
	a = dp_frames_get(&f);
	a->data_len = 1000;
	a->pkt_len = 1000;
	a->data_off = 0;
	dp_frames_put(&f, a);
	b = dp_frames_get(&f);
	ck_assert_ptr_eq(a, b); /* the one just freed, still in cache */
	ck_assert_uint_eq(b->data_len, 0);
	ck_assert_uint_eq(b->pkt_len, 0);
	ck_assert_uint_eq(b->data_off, RTE_PKTMBUF_HEADROOM);
	ck_assert_ptr_nonnull(dp_frames_get(&f));
	ck_assert_ptr_null(dp_frames_get(&f));
	dp_frames_fini(&f);
}
END_TEST

START_TEST(test_bad_sizes_refused)
{
	struct dp_frames f;

	ck_assert_int_eq(dp_frames_init(&f, 0, ROOM), -EINVAL);
	ck_assert_int_eq(dp_frames_init(&f, 4, 70000), -EINVAL); /* beyond an mbuf's 16-bit room */
	dp_frames_fini(&f);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("frames");
	TCase *tc = tcase_create("frames");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_all_out_then_none);
	tcase_add_test(tc, test_back_and_out_again_reset);
	tcase_add_test(tc, test_bad_sizes_refused);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
