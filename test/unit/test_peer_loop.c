/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Loopback between processes (dataplane/peer_loop.c), both ends in one
 * process over the same sockets and shared rings: every frame arrives
 * once, whole and in order across the ring's wrap; a full ring says
 * -EAGAIN and takes frames again once read; a receiver about to sleep is
 * woken by the next frame and only then; a block's new owner gets the
 * frames of a sender that had written to its last one; a sender that
 * leaves is forgotten, and one that cannot be served or whose receiver
 * left is told so; a new owner replaces a dead one's socket file, and
 * leaves none behind.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <ftw.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "peer_loop.h"

#define FRAME_MAX 9216
#define BLOCK 7

static _Atomic uint32_t *bells;
static char base[32]; /* made and removed by main(), whatever the tests did */
static char dir[64]; /* a test's device directory: the sockets' */

static struct {
	uint32_t n;     /* frames received */
	uint32_t bad;   /* of them not the frame expected next */
	uint32_t next;  /* the sequence number expected next */
} got;

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t mono_now(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static uint32_t frame_len(uint32_t seq)
{
	return 60 + (seq * 2654435761u) % (FRAME_MAX - 60);
}

static void make_frame(uint8_t *f, uint32_t seq)
{
	uint32_t len = frame_len(seq);

	memcpy(f, &seq, 4);
	for (uint32_t i = 4; i < len; i++)
		f[i] = (uint8_t)(seq * 31 + i * 7);
}

static void rx_fn(void *arg, const uint8_t *f, uint32_t len)
{
	uint32_t seq;

	(void)arg;
	got.n++;
	memcpy(&seq, f, 4);
	if (seq != got.next || len != frame_len(seq)) {
		got.bad++;
	} else {
		for (uint32_t i = 4; i < len; i++)
			if (f[i] != (uint8_t)(seq * 31 + i * 7)) {
				got.bad++;
				break;
			}
	}
	got.next = seq + 1;
}

static void setup(void)
{
	bells = calloc(DP_PEER_BLOCKS * DP_BELL_STRIDE, sizeof(*bells));
	ck_assert_ptr_nonnull(bells);
	snprintf(dir, sizeof(dir), "%s/t-XXXXXX", base);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	memset(&got, 0, sizeof(got));
}

static void teardown(void)
{
	free(bells);
	/* empty if every owner let go of its blocks */
	ck_assert_int_eq(rmdir(dir), 0);
}

static void open_pair(struct dp_peer_loop *rx, struct dp_peer_loop *tx)
{
	uint32_t b = BLOCK;

	ck_assert_int_eq(dp_peer_loop_init(rx, dir, bells, FRAME_MAX), 0);
	ck_assert_int_eq(dp_peer_loop_init(tx, dir, bells, FRAME_MAX), 0);
	ck_assert_int_eq(dp_peer_loop_own(rx, &b, 1), 0);
}

static bool readable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, 0) == 1;
}

/* Everything there is, as a busy receiver takes it. */
static unsigned drain(struct dp_peer_loop *rx)
{
	unsigned n = 0, k;

	while (dp_peer_loop_maybe(rx) && (k = dp_peer_loop_rx(rx, rx_fn, NULL, 32, mono_now())))
		n += k;
	return n;
}

START_TEST(frames_in_order_across_the_wrap)
{
	struct dp_peer_loop rx, tx;
	static uint8_t f[FRAME_MAX];
	uint32_t sent = 0;

	open_pair(&rx, &tx);
	/* about 14 MB through a 4 MB ring: it wraps three times */
	while (sent < 3000) {
		for (unsigned i = 0; i < 50; i++, sent++) {
			make_frame(f, sent);
			ck_assert_int_eq(dp_peer_loop_send(&tx, BLOCK, f, frame_len(sent)), 0);
		}
		drain(&rx);
		ck_assert_uint_eq(got.n, sent);
	}
	ck_assert_uint_eq(got.bad, 0);
	ck_assert_int_eq(dp_peer_loop_send(&tx, BLOCK, f, FRAME_MAX + 1), -EHOSTUNREACH);
	dp_peer_loop_fini(&tx);
	dp_peer_loop_fini(&rx);
}
END_TEST

START_TEST(full_ring_then_room_again)
{
	struct dp_peer_loop rx, tx;
	static uint8_t f[FRAME_MAX];
	uint32_t sent = 0;
	int err;

	open_pair(&rx, &tx);
	for (;;) {
		make_frame(f, sent);
		err = dp_peer_loop_send(&tx, BLOCK, f, frame_len(sent));
		if (err)
			break;
		sent++;
	}
	ck_assert_int_eq(err, -EAGAIN);
	ck_assert_uint_gt(sent, 4u * 1024 * 1024 / FRAME_MAX);
	ck_assert_uint_eq(dp_peer_loop_rx(&rx, rx_fn, NULL, 10, mono_now()), 10);
	make_frame(f, sent);
	ck_assert_int_eq(dp_peer_loop_send(&tx, BLOCK, f, frame_len(sent)), 0);
	sent++;
	drain(&rx);
	ck_assert_uint_eq(got.n, sent);
	ck_assert_uint_eq(got.bad, 0);
	dp_peer_loop_fini(&tx);
	dp_peer_loop_fini(&rx);
}
END_TEST

START_TEST(sleeper_woken_once)
{
	struct dp_peer_loop rx, tx;
	static uint8_t f[FRAME_MAX];

	open_pair(&rx, &tx);
	make_frame(f, 0);
	ck_assert_int_eq(dp_peer_loop_send(&tx, BLOCK, f, frame_len(0)), 0);
	/* a frame waits: no sleep */
	ck_assert(!dp_peer_loop_arm(&rx));
	drain(&rx);
	ck_assert_uint_eq(got.n, 1);
	/* awake, the receiver is not woken: no byte on the socket */
	make_frame(f, 1);
	ck_assert_int_eq(dp_peer_loop_send(&tx, BLOCK, f, frame_len(1)), 0);
	drain(&rx);
	ck_assert(!readable(rx.ep_fd));
	/* asleep: the next frame wakes it, the one after does not write again */
	ck_assert(dp_peer_loop_arm(&rx));
	ck_assert(!readable(rx.ep_fd));
	for (uint32_t s = 2; s < 4; s++) {
		make_frame(f, s);
		ck_assert_int_eq(dp_peer_loop_send(&tx, BLOCK, f, frame_len(s)), 0);
	}
	ck_assert(readable(rx.ep_fd));
	dp_peer_loop_disarm(&rx);
	dp_peer_loop_recheck(&rx); /* what the woken thread does */
	drain(&rx);
	ck_assert_uint_eq(got.n, 4);
	ck_assert(!readable(rx.ep_fd));
	ck_assert_uint_eq(got.bad, 0);
	dp_peer_loop_fini(&tx);
	dp_peer_loop_fini(&rx);
}
END_TEST

START_TEST(new_owner_and_senders_gone)
{
	struct dp_peer_loop rx, rx2, tx;
	static uint8_t f[FRAME_MAX];
	uint32_t b = BLOCK;

	open_pair(&rx, &tx);
	make_frame(f, 0);
	ck_assert_int_eq(dp_peer_loop_send(&tx, BLOCK, f, frame_len(0)), 0);
	drain(&rx);
	ck_assert_uint_eq(got.n, 1);
	/* the owner leaves: nobody to connect to */
	dp_peer_loop_fini(&rx);
	make_frame(f, 1);
	/* its ring was poisoned as it left: the frame is refused, not lost */
	ck_assert_int_eq(dp_peer_loop_send(&tx, BLOCK, f, frame_len(1)), -ECONNRESET);
	/* a new owner of the block gets what comes next */
	ck_assert_int_eq(dp_peer_loop_init(&rx2, dir, bells, FRAME_MAX), 0);
	ck_assert_int_eq(dp_peer_loop_own(&rx2, &b, 1), 0);
	got.next = 2;
	make_frame(f, 2);
	ck_assert_int_eq(dp_peer_loop_send(&tx, BLOCK, f, frame_len(2)), 0);
	drain(&rx2);
	ck_assert_uint_eq(got.n, 2);
	ck_assert_uint_eq(got.bad, 0);
	ck_assert_uint_eq(rx2.nconn, 1);
	/* the sender leaves: its socket hangs up, the receiver forgets it */
	dp_peer_loop_fini(&tx);
	ck_assert(readable(rx2.ep_fd));
	dp_peer_loop_recheck(&rx2);
	dp_peer_loop_rx(&rx2, rx_fn, NULL, 32, mono_now());
	ck_assert_uint_eq(rx2.nconn, 0);
	dp_peer_loop_fini(&rx2);
	/* and with nobody holding the block (its socket's file gone with its
	 * owner), a send is refused */
	ck_assert_int_eq(dp_peer_loop_init(&tx, dir, bells, FRAME_MAX), 0);
	ck_assert_int_eq(dp_peer_loop_send(&tx, BLOCK, f, frame_len(2)), -ENOENT);
	dp_peer_loop_fini(&tx);
}
END_TEST

START_TEST(receiver_keeps_its_own_tail)
{
	struct dp_peer_loop rx, tx;
	static uint8_t f[FRAME_MAX];
	uint64_t bogus = 3;

	open_pair(&rx, &tx);
	for (uint32_t s = 0; s < 6; s++) {
		make_frame(f, s);
		ck_assert_int_eq(dp_peer_loop_send(&tx, BLOCK, f, frame_len(s)), 0);
	}
	/* the sender scribbles on the ring's tail (its second cache line):
	 * the receiver reads from where it knows it stopped, not from there */
	memcpy((uint8_t *)tx.to_ring[BLOCK] + 64, &bogus, sizeof(bogus));
	drain(&rx);
	ck_assert_uint_eq(got.n, 6);
	ck_assert_uint_eq(got.bad, 0);
	dp_peer_loop_fini(&tx);
	dp_peer_loop_fini(&rx);
}
END_TEST

/* A frame's stamp says how long it sat in the ring: taken at once it has
 * not waited; taken 10 ms (and the sender's clock's lag) later it has.
 * "Later" counts from the sender's clock, read just after the send,
 * whatever its lag behind the fine one at that moment. */
START_TEST(long_waits_counted)
{
	struct dp_peer_loop rx, tx;
	static uint8_t f[FRAME_MAX];
	uint64_t sent;

	open_pair(&rx, &tx);
	make_frame(f, 0);
	ck_assert_int_eq(dp_peer_loop_send(&tx, BLOCK, f, frame_len(0)), 0);
	ck_assert(dp_peer_loop_maybe(&rx));
	ck_assert_uint_eq(dp_peer_loop_rx(&rx, rx_fn, NULL, 32, mono_now()), 1);
	ck_assert_uint_eq(rx.rx_waited, 0);
	make_frame(f, 1);
	ck_assert_int_eq(dp_peer_loop_send(&tx, BLOCK, f, frame_len(1)), 0);
	sent = clock_ns(CLOCK_MONOTONIC_COARSE);
	ck_assert(dp_peer_loop_maybe(&rx));
	/* read as if 9 ms later: not yet long */
	ck_assert_uint_eq(dp_peer_loop_rx(&rx, rx_fn, NULL, 1, sent + 9000000), 1);
	ck_assert_uint_eq(rx.rx_waited, 0);
	make_frame(f, 2);
	ck_assert_int_eq(dp_peer_loop_send(&tx, BLOCK, f, frame_len(2)), 0);
	sent = clock_ns(CLOCK_MONOTONIC_COARSE);
	ck_assert(dp_peer_loop_maybe(&rx));
	/* 10 ms and 10 us: the stamps count 1,024 ns units */
	ck_assert_uint_eq(dp_peer_loop_rx(&rx, rx_fn, NULL, 32, sent + 10010000 + rx.lag_ns), 1);
	ck_assert_uint_eq(rx.rx_waited, 1);
	ck_assert_uint_eq(got.n, 3);
	ck_assert_uint_eq(got.bad, 0);
	dp_peer_loop_fini(&tx);
	dp_peer_loop_fini(&rx);
}
END_TEST

START_TEST(refused_sender_hears_of_it)
{
	static struct dp_peer_loop rx, tx[DP_PEER_MAX_CONNS + 1];
	static uint8_t f[FRAME_MAX];
	unsigned last = DP_PEER_MAX_CONNS, written = 1; /* its first frame */
	int err = 0;

	ck_assert_int_eq(dp_peer_loop_init(&rx, dir, bells, FRAME_MAX), 0);
	ck_assert_int_eq(dp_peer_loop_own(&rx, &(uint32_t){BLOCK}, 1), 0);
	for (unsigned k = 0; k < DP_PEER_MAX_CONNS; k++) {
		ck_assert_int_eq(dp_peer_loop_init(&tx[k], dir, bells, FRAME_MAX), 0);
		make_frame(f, k);
		ck_assert_int_eq(dp_peer_loop_send(&tx[k], BLOCK, f, frame_len(k)), 0);
		drain(&rx);
	}
	ck_assert_uint_eq(rx.nconn, DP_PEER_MAX_CONNS);
	ck_assert_uint_eq(got.n, DP_PEER_MAX_CONNS);
	/* one sender too many: its connection and ring are refused, and it
	 * learns so at its next frame instead of filling a ring nobody reads */
	ck_assert_int_eq(dp_peer_loop_init(&tx[last], dir, bells, FRAME_MAX), 0);
	make_frame(f, last);
	ck_assert_int_eq(dp_peer_loop_send(&tx[last], BLOCK, f, frame_len(last)), 0);
	drain(&rx);
	ck_assert_uint_eq(got.n, DP_PEER_MAX_CONNS);
	for (unsigned i = 0; i < 3 && !err; i++)
		if (!(err = dp_peer_loop_send(&tx[last], BLOCK, f, frame_len(last))))
			written++;
	/* refused for want of room, which it is told: not an owner gone */
	ck_assert_int_eq(err, -EUSERS);
	/* what it wrote before it heard is left for its caller to count as
	 * refused: lost, but not silently */
	ck_assert_uint_eq(tx[last].tx_unread, written);
	/* and it does not connect again at once, to lose what it writes into
	 * a ring refused in turn: every frame is refused, none silently lost */
	for (unsigned i = 0; i < 50; i++) {
		ck_assert_int_eq(dp_peer_loop_send(&tx[last], BLOCK, f, frame_len(last)), -EUSERS);
		drain(&rx);
	}
	ck_assert_uint_eq(got.n, DP_PEER_MAX_CONNS);
	ck_assert_uint_eq(tx[last].tx_unread, written); /* none written since */
	/* one of the 256 leaves: the next newcomer gets its slot, even though
	 * nobody has looked at the one that left yet */
	dp_peer_loop_fini(&tx[0]);
	dp_peer_loop_fini(&tx[last]);
	ck_assert_int_eq(dp_peer_loop_init(&tx[last], dir, bells, FRAME_MAX), 0);
	ck_assert_int_eq(dp_peer_loop_send(&tx[last], BLOCK, f, frame_len(last)), 0);
	drain(&rx);
	ck_assert_uint_eq(got.n, DP_PEER_MAX_CONNS + 1);
	ck_assert_uint_eq(got.bad, 0);
	for (unsigned k = 1; k <= last; k++)
		dp_peer_loop_fini(&tx[k]);
	dp_peer_loop_fini(&rx);
}
END_TEST

static int squatter = -1;

/* A socket at BLOCK's name that nobody will accept on: a killed owner's,
 * whose file stays in the directory. */
static void squat(void)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};

	snprintf(a.sun_path, sizeof(a.sun_path), "%s/loop-%u", dir, BLOCK);
	squatter = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	ck_assert_int_ge(squatter, 0);
	ck_assert_int_eq(bind(squatter, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(squatter, 4), 0);
}

START_TEST(new_owner_replaces_a_dead_ones_socket)
{
	struct dp_peer_loop rx, tx;
	static uint8_t f[FRAME_MAX];
	char path[128];
	struct stat st;

	squat();
	open_pair(&rx, &tx);
	snprintf(path, sizeof(path), "%s/loop-%u", dir, BLOCK);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert(S_ISSOCK(st.st_mode));
	/* no bells file here: only its owner may connect, whatever the umask */
	ck_assert_uint_eq(st.st_mode & 0777, 0600);
	make_frame(f, 0);
	ck_assert_int_eq(dp_peer_loop_send(&tx, BLOCK, f, frame_len(0)), 0);
	ck_assert_uint_eq(drain(&rx), 1);
	ck_assert_uint_eq(got.bad, 0);
	ck_assert(!readable(squatter)); /* nobody connected to the old one */
	dp_peer_loop_fini(&tx);
	dp_peer_loop_fini(&rx);
	ck_assert_int_eq(stat(path, &st), -1); /* the owner's file went with it */
	close(squatter);
}
END_TEST

/* An owner refuses a sender before its ring came (so the ring is not
 * poisoned) and goes to sleep: the sender's frames still go into that ring,
 * and its wake-up byte fails on the closed socket. Every frame it wrote
 * there is counted as refused, none lost silently. The test is the owner. */
START_TEST(refused_unpoisoned_sender_wakes_a_sleeper)
{
	struct dp_peer_loop tx;
	static uint8_t f[FRAME_MAX];
	char path[160];
	int fd;

	squat();
	ck_assert_int_eq(dp_peer_loop_init(&tx, dir, bells, FRAME_MAX), 0);
	for (uint32_t s = 0; s < 2; s++) {
		make_frame(f, s);
		ck_assert_int_eq(dp_peer_loop_send(&tx, BLOCK, f, frame_len(s)), 0);
	}
	/* refused, its ring left alone, then asleep */
	fd = accept(squatter, NULL, NULL);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(send(fd, "f", 1, MSG_NOSIGNAL), 1);
	close(fd);
	atomic_store(&bells[BLOCK * DP_BELL_STRIDE + DP_BELL_ASLEEP], 1);
	make_frame(f, 2);
	ck_assert_int_eq(dp_peer_loop_send(&tx, BLOCK, f, frame_len(2)), -EUSERS);
	/* the two before it, left to its caller to count; this one is its own */
	ck_assert_uint_eq(tx.tx_unread, 2);
	/* and the sleeper was woken, by a new connection */
	ck_assert(readable(squatter));
	dp_peer_loop_fini(&tx);
	snprintf(path, sizeof(path), "%s/loop-%u", dir, BLOCK);
	ck_assert_int_eq(unlink(path), 0);
	close(squatter);
}
END_TEST

/* The longest directory that fits a unix address holds a block's socket;
 * one byte more is refused. */
START_TEST(longest_directory_fits)
{
	struct dp_peer_loop pl;
	char longdir[DP_PEER_DIR_MAX + 1], path[DP_PEER_DIR_MAX + 16];
	size_t n = strlen(dir);
	struct stat st;

	ck_assert_uint_lt(n + 2, DP_PEER_DIR_MAX - 1);
	memcpy(longdir, dir, n);
	longdir[n] = '/';
	memset(longdir + n + 1, 'd', DP_PEER_DIR_MAX - 2 - n);
	longdir[DP_PEER_DIR_MAX - 1] = 0;
	ck_assert_int_eq(mkdir(longdir, 0700), 0);
	ck_assert_int_eq(dp_peer_loop_init(&pl, longdir, bells, FRAME_MAX), 0);
	ck_assert_int_eq(dp_peer_loop_own(&pl, &(uint32_t){DP_PEER_BLOCKS - 1}, 1), 0);
	snprintf(path, sizeof(path), "%s/loop-%u", longdir, DP_PEER_BLOCKS - 1);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert(S_ISSOCK(st.st_mode));
	dp_peer_loop_fini(&pl);
	ck_assert_int_eq(rmdir(longdir), 0);
	longdir[DP_PEER_DIR_MAX - 1] = 'd';
	longdir[DP_PEER_DIR_MAX] = 0;
	ck_assert_int_eq(dp_peer_loop_init(&pl, longdir, bells, FRAME_MAX), -ENAMETOOLONG);
	dp_peer_loop_fini(&pl);
	ck_assert_int_eq(dp_peer_loop_init(&pl, "", bells, FRAME_MAX), -EINVAL);
	dp_peer_loop_fini(&pl);
}
END_TEST

/* A file at a block's name that is not the one we bound (the device was
 * deleted and added again, and the block has a new owner there) stays. */
START_TEST(fini_leaves_a_later_owners_socket)
{
	struct dp_peer_loop rx;
	char path[160];
	struct stat st;

	snprintf(path, sizeof(path), "%s/loop-%u", dir, BLOCK);
	ck_assert_int_eq(dp_peer_loop_init(&rx, dir, bells, FRAME_MAX), 0);
	ck_assert_int_eq(dp_peer_loop_own(&rx, &(uint32_t){BLOCK}, 1), 0);
	ck_assert_int_eq(unlink(path), 0);
	squat(); /* the later owner's */
	dp_peer_loop_fini(&rx);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(unlink(path), 0);
	close(squatter);
}
END_TEST

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

int main(void)
{
	Suite *s = suite_create("peer_loop");
	TCase *tc = tcase_create("rings");
	SRunner *sr;
	int failed;

	snprintf(base, sizeof(base), "/tmp/uroce-peer-loop-XXXXXX");
	if (!mkdtemp(base))
		return 1;
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, frames_in_order_across_the_wrap);
	tcase_add_test(tc, full_ring_then_room_again);
	tcase_add_test(tc, sleeper_woken_once);
	tcase_add_test(tc, new_owner_and_senders_gone);
	tcase_add_test(tc, receiver_keeps_its_own_tail);
	tcase_add_test(tc, refused_sender_hears_of_it);
	tcase_add_test(tc, long_waits_counted);
	tcase_add_test(tc, new_owner_replaces_a_dead_ones_socket);
	tcase_add_test(tc, refused_unpoisoned_sender_wakes_a_sleeper);
	tcase_add_test(tc, longest_directory_fits);
	tcase_add_test(tc, fini_leaves_a_later_owners_socket);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	/* what a failed test left (its teardown does not run) */
	nftw(base, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	return failed ? 1 : 0;
}
