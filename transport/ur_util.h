/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Small helpers shared by the whole transport: branch hints, container_of,
 * and explicit-byte-order loads and stores. Wire headers sit at offsets that
 * are not naturally aligned (BTH follows a 42-byte Ethernet+IPv4+UDP prefix),
 * so every multi-byte access goes through memcpy.
 */
#ifndef UR_UTIL_H
#define UR_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define ur_likely(x) __builtin_expect(!!(x), 1)
#define ur_unlikely(x) __builtin_expect(!!(x), 0)

#define ur_container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))
#define UR_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define UR_MIN(a, b) ((a) < (b) ? (a) : (b))
#define UR_MAX(a, b) ((a) > (b) ? (a) : (b))
#define UR_DIV_ROUND_UP(n, d) (((n) + (d)-1) / (d))

static inline uint16_t ur_get_be16(const void *p)
{
	const uint8_t *b = p;
	return (uint16_t)(b[0] << 8 | b[1]);
}

static inline void ur_put_be16(void *p, uint16_t v)
{
	uint8_t *b = p;
	b[0] = v >> 8;
	b[1] = v;
}

static inline uint32_t ur_get_be24(const void *p)
{
	const uint8_t *b = p;
	return (uint32_t)b[0] << 16 | (uint32_t)b[1] << 8 | b[2];
}

static inline void ur_put_be24(void *p, uint32_t v)
{
	uint8_t *b = p;
	b[0] = v >> 16;
	b[1] = v >> 8;
	b[2] = v;
}

static inline uint32_t ur_get_be32(const void *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return __builtin_bswap32(v);
}

static inline void ur_put_be32(void *p, uint32_t v)
{
	v = __builtin_bswap32(v);
	memcpy(p, &v, 4);
}

static inline uint64_t ur_get_be64(const void *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return __builtin_bswap64(v);
}

static inline void ur_put_be64(void *p, uint64_t v)
{
	v = __builtin_bswap64(v);
	memcpy(p, &v, 8);
}

static inline int ur_is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

static inline uint32_t ur_roundup_pow2(uint32_t v)
{
	if (v <= 1)
		return 1;
	return 1u << (32 - __builtin_clz(v - 1));
}

#endif
