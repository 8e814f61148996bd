/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Throughput of every CRC-32 variant and of the ICRC, one core. A benchmark,
 * not a test: it prints and never judges.
 *
 * Usage: bench_crc32 [milliseconds per cell, default 200]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crc32.h"
#include "icrc.h"

static const size_t sizes[] = { 64, 256, 1024, 4096, 65536 };

static volatile uint32_t sink;

/*
 * This thread's CPU time, not wall time: on a shared machine the time spent
 * descheduled would otherwise count against whichever cell was running.
 */
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * Seconds per call: the best of ROUNDS rounds that together take at least
 * min_s, the round least disturbed by other work (interrupts, a neighbour
 * thrashing the shared caches). The calls are independent, as for separate packets, so the
 * CPU may overlap one with the next.
 */
#define ROUNDS 10

static double time_crc(uint32_t (*fn)(uint32_t, const void *, size_t), const void *buf, size_t len,
		       double min_s)
{
	double round_s = min_s / ROUNDS, best = 0;
	uint64_t iters = 16;
	uint32_t acc = 0;

	for (int i = 0; i < 1000; i++) /* warm caches and branch predictors */
		acc ^= fn(0, buf, len);
	for (int r = 0; r < ROUNDS;) {
		double t0 = now(), t;

		for (uint64_t i = 0; i < iters; i++)
			acc ^= fn(0, buf, len);
		t = now() - t0;
		if (t < round_s) {
			/* too short to count: aim 20% past the target */
			iters = t < round_s / 100
				    ? iters * 16
				    : (uint64_t)((double)iters * round_s * 1.2 / t) + 1;
			continue;
		}
		if (!r++ || t / (double)iters < best)
			best = t / (double)iters;
	}
	sink = acc;
	return best;
}

/*
 * Building a packet from registered memory: a copy into the frame and a CRC
 * over it, as two passes or as ur_crc32_copy()'s one.
 */
static uint8_t *copy_dst;

static uint32_t copy_only(uint32_t crc, const void *buf, size_t len)
{
	memcpy(copy_dst, buf, len);
	return crc ^ copy_dst[len - 1];
}

static uint32_t copy_then_crc(uint32_t crc, const void *buf, size_t len)
{
	memcpy(copy_dst, buf, len);
	return ur_crc32(crc, copy_dst, len);
}

static uint32_t copy_fused(uint32_t crc, const void *buf, size_t len)
{
	return ur_crc32_copy(crc, copy_dst, buf, len);
}

static const uint8_t *icrc_pkt;
static size_t icrc_len;

/* ur_icrc_compute() with the signature time_crc() wants. */
static uint32_t icrc_thunk(uint32_t crc, const void *buf, size_t len)
{
	(void)buf;
	(void)len;
	return crc ^ ur_icrc_compute(icrc_pkt, icrc_len);
}

static void row(const char *name, uint32_t (*fn)(uint32_t, const void *, size_t),
		const uint8_t *buf, double min_s)
{
	printf("%-10s", name);
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		printf(" %9.2f", (double)sizes[s] / time_crc(fn, buf, sizes[s], min_s) / 1e9);
	printf("\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	double min_s = (argc > 1 ? atof(argv[1]) : 200) / 1000;
	const struct ur_crc32_impl *impls;
	size_t n = ur_crc32_impls(&impls);
	uint8_t *buf = aligned_alloc(64, 65536 + 4136 + 64);
	uint8_t *dst = aligned_alloc(64, 65536 + 64);
	uint8_t *pkt;
	double t;

	if (!buf || !dst || min_s <= 0)
		return 1;
	for (size_t i = 0; i < 65536; i++)
		buf[i] = (uint8_t)(i * 131 + 7);

	printf(
	    "CRC-32 throughput in GB/s (1e9 bytes/s), 64-byte aligned buffer, best of %d rounds\n"
	    "totalling >= %.0f ms of CPU time per cell; ur_crc32 uses %s\n",
	    ROUNDS, min_s * 1000, ur_crc32_impl_name());
	printf("%-10s", "bytes");
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		printf(" %9zu", sizes[s]);
	printf("\n");
	for (size_t k = 0; k < n; k++)
		row(impls[k].name, impls[k].fn, buf, min_s);
	row("ur_crc32", ur_crc32, buf, min_s);
	/* the destination sits 14 bytes past alignment, as a payload behind Ethernet would */
	copy_dst = dst + 14;
	printf("copying to a buffer, bytes copied per second:\n");
	row("memcpy", copy_only, buf, min_s);
	row("cpy,crc", copy_then_crc, buf, min_s);
	row("crc_copy", copy_fused, buf, min_s);

	/*
	 * An IPv4 RoCEv2 SEND Only with 4096 bytes of payload, as it starts at
	 * the IP header: 20 + 8 (UDP) + 12 (BTH) + 4096, then the ICRC. Placed
	 * 14 bytes past an aligned address, where it sits behind Ethernet.
	 */
	pkt = buf + 65536 + 14;
	icrc_len = 20 + 8 + 12 + 4096;
	memset(pkt, 0, icrc_len);
	pkt[0] = 0x45;
	pkt[2] = (uint8_t)((icrc_len + 4) >> 8);
	pkt[3] = (uint8_t)(icrc_len + 4);
	pkt[8] = 64;
	pkt[9] = 17;
	pkt[20 + 2] = 4791 >> 8;
	pkt[20 + 3] = 4791 & 0xff;
	pkt[28] = 4; /* BTH opcode: RC SEND Only */
	for (size_t i = 40; i < icrc_len; i++)
		pkt[i] = (uint8_t)i;
	icrc_pkt = pkt;
	t = time_crc(icrc_thunk, NULL, 0, min_s);
	printf("ur_icrc_compute, IPv4 packet with 4096-byte payload (%zu bytes CRCed + 8 LRH): "
	       "%.2f GB/s, %.1f ns/packet\n",
	       icrc_len, (double)icrc_len / t / 1e9, t * 1e9);
	free(dst);
	free(buf);
	return 0;
}
