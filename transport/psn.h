/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * 24-bit packet sequence number arithmetic (IBTA 9.7.1). PSNs wrap at 2^24;
 * the valid window for comparisons is half the space (2^23), the same rule the
 * responder uses to tell duplicates from packets that are ahead (C9-110).
 */
#ifndef UR_PSN_H
#define UR_PSN_H

#include <stdbool.h>
#include <stdint.h>

#define UR_PSN_MASK 0xffffffu
#define UR_PSN_HALF 0x800000u

static inline uint32_t ur_psn_add(uint32_t psn, uint32_t n)
{
	return (psn + n) & UR_PSN_MASK;
}

/*
 * a - b as a signed distance in [-2^23, 2^23): exactly 2^23 apart, each PSN
 * is behind the other, as with rxe's psn_compare(), so the responder treats
 * a PSN 2^23 from ePSN as a duplicate, never as ahead.
 */
static inline int32_t ur_psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)(((a - b) & UR_PSN_MASK) << 8) >> 8;
}

static inline bool ur_psn_lt(uint32_t a, uint32_t b)
{
	return ur_psn_diff(a, b) < 0;
}

static inline bool ur_psn_le(uint32_t a, uint32_t b)
{
	return ur_psn_diff(a, b) <= 0;
}

static inline bool ur_psn_gt(uint32_t a, uint32_t b)
{
	return ur_psn_diff(a, b) > 0;
}

static inline bool ur_psn_ge(uint32_t a, uint32_t b)
{
	return ur_psn_diff(a, b) >= 0;
}

#endif
