/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CRC-32 as used by Ethernet, gzip and the InfiniBand ICRC: polynomial
 * 0x04C11DB7, bit-reflected, register preset to all ones and inverted at
 * the end. The interface is zlib's crc32(): start with crc = 0, and a
 * result can be passed back in to continue over more bytes.
 *
 * Several implementations exist; ur_crc32() calls the fastest one this CPU
 * can run. The others are exported so tests and benchmarks can compare them.
 */
#ifndef UR_CRC32_H
#define UR_CRC32_H

#include <stddef.h>
#include <stdint.h>

uint32_t ur_crc32(uint32_t crc, const void *buf, size_t len);

/*
 * Copy len bytes from src to dst (which must not overlap) and return
 * ur_crc32(crc, src, len). Where the CPU allows, one pass does both, which
 * is what a sender building a packet from registered memory wants.
 */
uint32_t ur_crc32_copy(uint32_t crc, void *dst, const void *src, size_t len);

/* Slice-by-8 tables: any CPU, any byte order. */
uint32_t ur_crc32_portable(uint32_t crc, const void *buf, size_t len);

#if defined(__x86_64__) && defined(__GNUC__)
#define UR_CRC32_HAVE_X86 1
/* Carry-less multiply folding: need PCLMULQDQ and SSE4.1. */
uint32_t ur_crc32_pclmul(uint32_t crc, const void *buf, size_t len);
/* The same on 512-bit registers: need VPCLMULQDQ and AVX512F too. */
uint32_t ur_crc32_vpclmul(uint32_t crc, const void *buf, size_t len);
#endif

struct ur_crc32_impl {
	const char *name;
	uint32_t (*fn)(uint32_t crc, const void *buf, size_t len);
};

/*
 * The implementations this CPU can run, slowest ("portable") first and the
 * one ur_crc32() picks by default last. Returns how many.
 */
size_t ur_crc32_impls(const struct ur_crc32_impl **impls);

/* Name of the implementation ur_crc32() currently calls. */
const char *ur_crc32_impl_name(void);

/*
 * For tests: make ur_crc32() call the named implementation, or the default
 * one when name is NULL. Returns 0, or -ENOENT when this CPU cannot run it.
 * Not meant to race with other threads calling ur_crc32().
 */
int ur_crc32_select(const char *name);

/*
 * The folding constants the fast implementations use, published so a unit
 * test can derive each one again from the polynomial. Every value is a
 * polynomial over GF(2) written bit-reflected in 33 bits: bit (32 - i)
 * holds the coefficient of x^i.
 */
enum ur_crc32_const_kind {
	UR_CRC32_CONST_XPOW, /* x^n mod P */
	UR_CRC32_CONST_MU,   /* floor(x^64 / P), for Barrett reduction */
	UR_CRC32_CONST_POLY, /* P itself, x^32 term included */
};

struct ur_crc32_const {
	enum ur_crc32_const_kind kind;
	unsigned int n;
	uint64_t value;
};

extern const struct ur_crc32_const ur_crc32_consts[];
extern const size_t ur_crc32_nconsts;

#endif
