/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Frames waiting for other processes of a device (dataplane/peer_wait.c):
 * a slow destination holds back only its own frames, each destination's
 * frames leave in the order they came, and all destinations together hold
 * no more than the bound.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "peer_wait.h"
#include "test_util.h"

#define NDEST 4096

/* A fake receiving side: a destination takes frames while it has room. */
static struct {
	int room[NDEST];       /* frames each destination takes before -EAGAIN; -1: no limit */
	uintptr_t last[NDEST]; /* the last frame it took, to check the order */
	unsigned took[NDEST];
	unsigned dropped;
} rx;

static void rx_reset(void)
{
	for (unsigned d = 0; d < NDEST; d++) {
		rx.room[d] = -1;
		rx.last[d] = 0;
		rx.took[d] = 0;
	}
	rx.dropped = 0;
}

/* Frames are (dest << 20 | sequence), sequences from 1 up per destination. */
static void *frame(uint32_t dest, uint32_t seq)
{
	return (void *)(uintptr_t)((uintptr_t)dest << 20 | seq);
}

static int send_fn(void *arg, uint32_t dest, void *f)
{
	uintptr_t v = (uintptr_t)f;

	(void)arg;
	require(v >> 20 == dest, "frame %#lx sent to destination %u", (unsigned long)v, dest);
	if (!rx.room[dest])
		return -EAGAIN;
	if (rx.room[dest] > 0)
		rx.room[dest]--;
	require(v > rx.last[dest], "destination %u: frame %#lx after %#lx", dest, (unsigned long)v,
		(unsigned long)rx.last[dest]);
	rx.last[dest] = v;
	rx.took[dest]++;
	return 0;
}

static void drop_fn(void *arg, void *f)
{
	(void)arg;
	(void)f;
	rx.dropped++;
}

/* The issue it fixes: a slow process's frames do not hold back another's. */
START_TEST(slow_destination_blocks_only_itself)
{
	struct dp_peer_wait w;

	rx_reset();
	ck_assert_int_eq(dp_peer_wait_init(&w, 16, NDEST), 0);
	rx.room[7] = 0; /* process on block 7 is behind */
	for (uint32_t i = 1; i <= 4; i++) {
		ck_assert_int_eq(dp_peer_wait_push(&w, 7, frame(7, i)), 0);
		ck_assert_int_eq(dp_peer_wait_push(&w, 9, frame(9, i)), 0);
	}
	ck_assert(dp_peer_wait_busy(&w, 7) && dp_peer_wait_busy(&w, 9));
	ck_assert(!dp_peer_wait_busy(&w, 8));
	ck_assert_uint_eq(dp_peer_wait_flush(&w, send_fn, NULL), 4);
	ck_assert_uint_eq(rx.took[9], 4);
	ck_assert_uint_eq(rx.took[7], 0);
	ck_assert(!dp_peer_wait_busy(&w, 9)); /* block 9 sends directly again */
	ck_assert(dp_peer_wait_busy(&w, 7));
	ck_assert_uint_eq(w.n, 4);
	/* block 7 takes two, then all: in order */
	rx.room[7] = 2;
	ck_assert_uint_eq(dp_peer_wait_flush(&w, send_fn, NULL), 2);
	ck_assert_uint_eq(rx.last[7], (uintptr_t)frame(7, 2));
	rx.room[7] = -1;
	ck_assert_uint_eq(dp_peer_wait_flush(&w, send_fn, NULL), 2);
	ck_assert_uint_eq(rx.last[7], (uintptr_t)frame(7, 4));
	ck_assert_uint_eq(w.n, 0);
	ck_assert_uint_eq(w.nactive, 0);
	dp_peer_wait_fini(&w, drop_fn, NULL);
	ck_assert_uint_eq(rx.dropped, 0);
}
END_TEST

/* The bound is over all destinations; a full queue refuses, a flushed one takes again. */
START_TEST(bounded_total)
{
	struct dp_peer_wait w;

	rx_reset();
	ck_assert_int_eq(dp_peer_wait_init(&w, 8, NDEST), 0);
	for (uint32_t i = 0; i < 8; i++)
		ck_assert_int_eq(dp_peer_wait_push(&w, 100 + i % 3, frame(100 + i % 3, i + 1)), 0);
	ck_assert_int_eq(dp_peer_wait_push(&w, 200, frame(200, 1)), -ENOBUFS);
	ck_assert_int_eq(dp_peer_wait_push(&w, 100, frame(100, 99)), -ENOBUFS);
	ck_assert_int_eq(dp_peer_wait_push(&w, NDEST, frame(0, 1)), -EINVAL);
	ck_assert_uint_eq(w.n, 8);
	rx.room[100] = 0;
	rx.room[101] = 0;
	ck_assert_uint_eq(dp_peer_wait_flush(&w, send_fn, NULL), 2); /* 102's */
	ck_assert_int_eq(dp_peer_wait_push(&w, 200, frame(200, 1)), 0);
	ck_assert_int_eq(dp_peer_wait_push(&w, 200, frame(200, 2)), 0);
	ck_assert_int_eq(dp_peer_wait_push(&w, 200, frame(200, 3)), -ENOBUFS);
	dp_peer_wait_fini(&w, drop_fn, NULL);
	ck_assert_uint_eq(rx.dropped, 8);
}
END_TEST

/*
 * Seeded: pushes to random destinations (a new frame goes to the queue
 * only behind others of its destination, as port.c does) and receivers
 * that take random amounts. Every frame is taken or refused exactly once,
 * in order per destination.
 */
START_TEST(random_against_model)
{
	enum { CAP = 64, DESTS = 12 };
	static const uint32_t dests[DESTS] = {1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 4095};
	struct dp_peer_wait w;
	uint32_t seq[DESTS] = {0};
	unsigned pushed = 0, refused = 0, direct = 0, took = 0;

	rx_reset();
	rng_state = 0x9e3779b97f4a7c15ull + (uint64_t)_i;
	ck_assert_int_eq(dp_peer_wait_init(&w, CAP, NDEST), 0);
	for (unsigned step = 0; step < 200000; step++) {
		unsigned k = (unsigned)(rng() % DESTS);
		uint32_t d = dests[k];

		if (rng() % 4) {
			void *f = frame(d, ++seq[k]);

			/* port.c: straight to the socket unless frames wait for d */
			if (!dp_peer_wait_busy(&w, d) && !send_fn(NULL, d, f)) {
				direct++;
				continue;
			}
			if (dp_peer_wait_push(&w, d, f)) {
				refused++;
				/* a refused frame is a counted drop: the order
				 * check below still holds for the rest */
				continue;
			}
			pushed++;
		} else {
			rx.room[d] = (int)(rng() % 5) - 1; /* -1 (all), 0 .. 3 */
			took += dp_peer_wait_flush(&w, send_fn, NULL);
		}
		require(w.n <= CAP, "%u frames waiting, bound %u", w.n, CAP);
		require(w.n == pushed - took, "%u waiting, %u pushed, %u taken", w.n, pushed, took);
	}
	for (unsigned k = 0; k < DESTS; k++)
		rx.room[dests[k]] = -1;
	took += dp_peer_wait_flush(&w, send_fn, NULL);
	ck_assert_uint_eq(took, pushed);
	ck_assert_uint_eq(w.n, 0);
	ck_assert_uint_gt(refused, 0);
	ck_assert_uint_gt(direct, 0);
	dp_peer_wait_fini(&w, drop_fn, NULL);
	ck_assert_uint_eq(rx.dropped, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("peer_wait");
	TCase *tc = tcase_create("queues");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, slow_destination_blocks_only_itself);
	tcase_add_test(tc, bounded_total);
	tcase_add_loop_test(tc, random_against_model, 0, 4);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
