/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The device's shared files (provider/shared.c) carry the layout of the
 * uroce that made them: a program or reader of another version is refused
 * with EPROTO instead of reading another counter at the same place, and a
 * device made before the stamp existed is told apart from a new one.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shared.h"

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/uroce-shared-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static void put(const char *name, const char *text)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

static int view_open(void)
{
	struct uroce_shared_view v;
	int err = uroce_shared_view_open(dir, &v);

	if (!err)
		uroce_shared_view_close(&v);
	return err;
}

START_TEST(test_same_version)
{
	uint64_t totals[UROCE_ROW_COUNTERS];
	struct uroce_shared sh;
	char path[128], line[128] = {0};
	FILE *f;

	/* a reader before any program: nothing there, nothing made */
	ck_assert_int_eq(uroce_shared_totals(dir, totals), -ENOENT);
	snprintf(path, sizeof(path), "%s/layout", dir);
	ck_assert_int_ne(access(path, F_OK), 0);
	/* the first program makes the files and the stamp; the next agree */
	ck_assert_int_eq(uroce_shared_open(dir, &sh), 0);
	ck_assert_int_eq(view_open(), 0);
	ck_assert_int_eq(uroce_shared_totals(dir, totals), 0);
	uroce_shared_close(&sh);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
	fclose(f);
	ck_assert_msg(!strncmp(line, "uroce shared files ", 19), "%s", line);
}
END_TEST

START_TEST(test_other_version)
{
	uint64_t totals[UROCE_ROW_COUNTERS];
	struct uroce_shared sh;

	ck_assert_int_eq(view_open(), 0);
	/* another version's stamp (here other sizes too) */
	put("layout", "uroce shared files 1 2 3 0123456789abcdef\n");
	ck_assert_int_eq(uroce_shared_open(dir, &sh), -EPROTO);
	ck_assert_int_eq(view_open(), -EPROTO);
	ck_assert_int_eq(uroce_shared_totals(dir, totals), -EPROTO);
	for (unsigned i = 0; i < UROCE_ROW_COUNTERS; i++)
		ck_assert_uint_eq(totals[i], 0);
}
END_TEST

START_TEST(test_before_stamps)
{
	struct uroce_shared sh;
	char path[128];

	/* files of a uroce without the stamp: counters, no layout */
	put("counters", "");
	ck_assert_int_eq(uroce_shared_open(dir, &sh), -EPROTO);
	ck_assert_int_eq(view_open(), -EPROTO);
	snprintf(path, sizeof(path), "%s/layout", dir);
	ck_assert_int_ne(access(path, F_OK), 0);
	/* and nothing of theirs made or resized under them */
	snprintf(path, sizeof(path), "%s/blocks", dir);
	ck_assert_int_ne(access(path, F_OK), 0);
}
END_TEST

/* A reader between a maker's open and its ftruncate sees a short file:
 * "not yet", not "another version". */
START_TEST(test_file_being_made)
{
	uint64_t totals[UROCE_ROW_COUNTERS];
	char path[128];

	ck_assert_int_eq(view_open(), 0);
	snprintf(path, sizeof(path), "%s/counters", dir);
	ck_assert_int_eq(truncate(path, 0), 0);
	ck_assert_int_eq(uroce_shared_totals(dir, totals), -EAGAIN);
}
END_TEST

/* Threads of one process and of several open fresh devices at once: each
 * finds the stamp whole and its own, never another version's. */
#define RACERS 8

static void *race_open(void *arg)
{
	struct uroce_shared_view v;
	int err = uroce_shared_view_open(arg, &v);

	if (!err)
		uroce_shared_view_close(&v);
	return (void *)(intptr_t)err;
}

START_TEST(test_makers_race)
{
	for (int round = 0; round < 50; round++) {
		pthread_t t[RACERS];
		char sub[96], cmd[128];

		snprintf(sub, sizeof(sub), "%s/%d", dir, round);
		ck_assert_int_eq(mkdir(sub, 0755), 0);
		for (int i = 0; i < RACERS; i++)
			ck_assert_int_eq(pthread_create(&t[i], NULL, race_open, sub), 0);
		for (int i = 0; i < RACERS; i++) {
			void *err;

			pthread_join(t[i], &err);
			ck_assert_msg(!err, "round %d: an opener got %d", round, (int)(intptr_t)err);
		}
		/* no temporary stamp left behind */
		snprintf(cmd, sizeof(cmd), "test $(ls %s | grep -c layout) = 1", sub);
		ck_assert_int_eq(system(cmd), 0);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("shared");
	TCase *tc = tcase_create("layout");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_same_version);
	tcase_add_test(tc, test_other_version);
	tcase_add_test(tc, test_before_stamps);
	tcase_add_test(tc, test_file_being_made);
	tcase_add_test(tc, test_makers_race);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
