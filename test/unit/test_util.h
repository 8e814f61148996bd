/* SPDX-License-Identifier: BSD-2-Clause */
/* What several unit suites share: a cheap assertion for hot loops and a seeded PRNG. */
#ifndef UR_TEST_UTIL_H
#define UR_TEST_UTIL_H

#include <stdint.h>

#include <check.h>

/*
 * Check's ck_assert records a mark point per call (a pipe write in fork
 * mode); loops of a million steps use this instead, which only costs on
 * failure.
 */
#define require(cond, ...)                                                                         \
	do {                                                                                       \
		if (!(cond))                                                                       \
			ck_abort_msg(__VA_ARGS__);                                                 \
	} while (0)

/* The suite's PRNG state: set it at the start of a test so a failure repeats exactly. */
static uint64_t rng_state;

/* xorshift64* */
static inline uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

#endif
