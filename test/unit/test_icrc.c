/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The RoCEv2 ICRC against real Soft-RoCE traffic: every captured packet in
 * $UROCE_TESTDATA/ *.pcap must check, a flipped bit anywhere the ICRC covers
 * must be caught, and rewriting the fields routers may change must not be.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32.h"
#include "icrc.h"
#include "pcap_file.h"

#define ROCE_PORT 4791
#define LRH_LEN 8

struct pkt {
	char file[64];
	unsigned int index; /* record number in the file, from 0 */
	bool ipv6;
	size_t len; /* IP header through ICRC */
	uint8_t *l3;
};

static struct pkt *pkts;
static size_t npkts, nv4, nv6;
static char load_error[512];

static void load_fail(const char *fmt, ...)
{
	va_list ap;

	if (load_error[0])
		return;
	va_start(ap, fmt);
	vsnprintf(load_error, sizeof(load_error), fmt, ap);
	va_end(ap);
}

/* Where the IP datagram sits in an Ethernet frame, or false if it is not RoCEv2. */
static bool roce_l3(const uint8_t *f, size_t len, size_t *off, size_t *l3_len, bool *ipv6)
{
	size_t o = 12, hl;
	unsigned int type;

	if (len < 14)
		return false;
	type = f[o] << 8 | f[o + 1];
	if (type == 0x8100) {
		o += 4;
		if (len < o + 2)
			return false;
		type = f[o] << 8 | f[o + 1];
	}
	o += 2;
	if (type == 0x0800 && len >= o + 20) {
		hl = (f[o] & 0x0f) * 4u;
		*l3_len = f[o + 2] << 8 | f[o + 3];
		*ipv6 = false;
		if (f[o + 9] != 17)
			return false;
	} else if (type == 0x86dd && len >= o + 40) {
		hl = 40;
		*l3_len = 40u + (f[o + 4] << 8 | f[o + 5]);
		*ipv6 = true;
		if (f[o + 6] != 17)
			return false;
	} else {
		return false;
	}
	/* The frame may carry Ethernet padding after the datagram, never less. */
	if (*l3_len > len - o || *l3_len < hl + 8)
		return false;
	if ((f[o + hl + 2] << 8 | f[o + hl + 3]) != ROCE_PORT)
		return false;
	*off = o;
	return true;
}

static void load_file(const char *dir, const char *name)
{
	char path[4096];
	struct ur_pcap_file *f;
	struct ur_pcap_rec rec;
	unsigned int index = 0;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	rc = ur_pcap_open(&f, path);
	if (rc) {
		load_fail("%s: cannot read as pcap: %s", path, strerror(-rc));
		return;
	}
	if (ur_pcap_linktype(f) != UR_PCAP_LINKTYPE_ETHERNET)
		load_fail("%s: link type %u, expected Ethernet", path, ur_pcap_linktype(f));
	while ((rc = ur_pcap_next(f, &rec)) > 0) {
		size_t off, l3_len;
		bool ipv6;
		struct pkt *p;

		if (rec.len != rec.orig_len)
			load_fail("%s #%u: truncated capture", path, index);
		if (roce_l3(rec.data, rec.len, &off, &l3_len, &ipv6)) {
			pkts = realloc(pkts, (npkts + 1) * sizeof(*pkts));
			if (!pkts)
				abort();
			p = &pkts[npkts++];
			snprintf(p->file, sizeof(p->file), "%s", name);
			p->index = index;
			p->ipv6 = ipv6;
			p->len = l3_len;
			p->l3 = malloc(l3_len);
			if (!p->l3)
				abort();
			memcpy(p->l3, rec.data + off, l3_len);
			if (ipv6)
				nv6++;
			else
				nv4++;
		}
		index++;
	}
	if (rc < 0)
		load_fail("%s #%u: corrupt record", path, index);
	ur_pcap_close(f);
}

static int is_pcap(const struct dirent *d)
{
	return !fnmatch("*.pcap", d->d_name, 0);
}

/* Read every capture once, before forking the tests; problems become failures. */
static void load_corpus(void)
{
	const char *dir = getenv("UROCE_TESTDATA");
	struct dirent **names;
	int n;

	if (!dir || !*dir)
		dir = UR_TESTDATA_DEFAULT;
	n = scandir(dir, &names, is_pcap, alphasort);
	if (n < 0) {
		load_fail("test data directory %s: %s (set UROCE_TESTDATA)", dir, strerror(errno));
		return;
	}
	if (n == 0)
		load_fail("no *.pcap in %s", dir);
	for (int i = 0; i < n; i++) {
		load_file(dir, names[i]->d_name);
		free(names[i]);
	}
	free(names);
}

/* CRC-32 bit by bit, so the test does not trust the code under test. */
static uint32_t ref_crc32(uint32_t crc, const uint8_t *p, size_t len)
{
	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = crc & 1 ? crc >> 1 ^ 0xedb88320u : crc >> 1;
	}
	return ~crc;
}

static size_t ip_hlen(const uint8_t *l3)
{
	return l3[0] >> 4 == 6 ? 40 : (l3[0] & 0x0fu) * 4;
}

/*
 * Which bits of byte i the ICRC ignores (treats as ones), restated from the
 * Annex independently of icrc.c.
 */
static uint8_t masked_bits(const uint8_t *l3, size_t i)
{
	size_t udp = ip_hlen(l3), bth = udp + 8;

	if (l3[0] >> 4 == 6) {
		if (i == 0)
			return 0x0f; /* Traffic Class, high nibble */
		if (i >= 1 && i <= 3)
			return 0xff; /* Traffic Class low nibble, Flow Label */
		if (i == 7)
			return 0xff; /* Hop Limit */
	} else if (i == 1 || i == 8 || i == 10 || i == 11) {
		return 0xff; /* TOS, TTL, Header Checksum */
	}
	if (i == udp + 6 || i == udp + 7)
		return 0xff; /* UDP Checksum */
	if (i == bth + 4)
		return 0xff; /* BTH resv8a: FECN, BECN */
	return 0;
}

/* The ICRC by the book: whole packet copied, masked, CRCed bit by bit. */
static uint32_t ref_icrc(const uint8_t *l3, size_t len)
{
	uint8_t *buf = malloc(LRH_LEN + len);
	uint32_t crc;

	ck_assert_ptr_nonnull(buf);
	memset(buf, 0xff, LRH_LEN);
	for (size_t i = 0; i < len; i++)
		buf[LRH_LEN + i] = l3[i] | masked_bits(l3, i);
	crc = ref_crc32(0, buf, LRH_LEN + len);
	free(buf);
	return crc;
}

static void assert_corpus(void)
{
	ck_assert_msg(!load_error[0], "%s", load_error);
	ck_assert_msg(npkts > 0, "no RoCEv2 packets found in the test data");
}

START_TEST(test_corpus_has_both_families)
{
	assert_corpus();
	ck_assert_msg(nv4 > 0, "no IPv4 RoCEv2 packets in the test data");
	ck_assert_msg(nv6 > 0, "no IPv6 RoCEv2 packets in the test data");
}
END_TEST

/* Loop index selects the CRC variant underneath. */
START_TEST(test_every_packet_valid)
{
	const struct ur_crc32_impl *impls;
	size_t n = ur_crc32_impls(&impls);

	assert_corpus();
	ck_assert_int_lt(_i, (int)n);
	ck_assert_int_eq(ur_crc32_select(impls[_i].name), 0);
	for (size_t k = 0; k < npkts; k++) {
		const struct pkt *p = &pkts[k];

		ck_assert_msg(ur_icrc_valid(p->l3, p->len), "%s #%u (%s): bad ICRC", p->file,
			      p->index, impls[_i].name);
		ck_assert_msg(ur_icrc_compute(p->l3, p->len - 4) == ref_icrc(p->l3, p->len - 4),
			      "%s #%u: differs from the reference", p->file, p->index);
	}
	ur_crc32_select(NULL);
}
END_TEST

/*
 * Loop index selects the CRC variant. Every captured packet, rebuilt by
 * ur_icrc_compute_copy() from its first `split` bytes plus a copy of the
 * rest, comes out byte for byte with the captured ICRC. Splits inside the
 * masked headers take the copy-first path.
 */
START_TEST(test_compute_copy)
{
	const struct ur_crc32_impl *impls;
	static uint8_t buf[16384];

	ur_crc32_impls(&impls);
	assert_corpus();
	ck_assert_int_eq(ur_crc32_select(impls[_i].name), 0);
	for (size_t k = 0; k < npkts; k++) {
		const struct pkt *p = &pkts[k];
		size_t len = p->len - 4;
		size_t splits[] = { 0, 7, p->ipv6 ? 60 : 40, p->ipv6 ? 61 : 41, len - 1, len };

		ck_assert_uint_le(p->len, sizeof(buf));
		for (size_t j = 0; j < sizeof(splits) / sizeof(splits[0]); j++) {
			size_t split = splits[j] < len ? splits[j] : len;

			memset(buf, 0x5a, sizeof(buf));
			memcpy(buf, p->l3, split);
			ck_assert_msg(ur_icrc_compute_copy(buf, len, buf + split, p->l3 + split,
							   len - split) == ur_icrc_load(p->l3 + len),
				      "%s #%u split %zu (%s)", p->file, p->index, split,
				      impls[_i].name);
			ck_assert(!memcmp(buf, p->l3, len));
			ck_assert_uint_eq(buf[len], 0x5a);
		}
	}
	ur_crc32_select(NULL);
}
END_TEST

/*
 * Frame 1 of rxe-sample.pcap ends in 4d e1 ee 94, which tshark shows as
 * "Invariant CRC: 0x4de1ee94"; the CRC-32 of the masked packet is
 * 0x94eee14d, so the trailer is the CRC least significant byte first.
 */
START_TEST(test_trailer_byte_order)
{
	static const uint8_t want[4] = { 0x4d, 0xe1, 0xee, 0x94 };
	const struct pkt *p = NULL;
	uint8_t out[4];

	assert_corpus();
	for (size_t k = 0; k < npkts && !p; k++)
		if (!strcmp(pkts[k].file, "rxe-sample.pcap") && pkts[k].index == 0)
			p = &pkts[k];
	ck_assert_msg(p, "rxe-sample.pcap frame 1 not found");
	ck_assert_mem_eq(p->l3 + p->len - 4, want, 4);
	ck_assert_uint_eq(ur_icrc_compute(p->l3, p->len - 4), 0x94eee14d);
	ck_assert_uint_eq(ur_icrc_load(p->l3 + p->len - 4), 0x94eee14d);
	ur_icrc_store(out, 0x94eee14d);
	ck_assert_mem_eq(out, want, 4);
}
END_TEST

START_TEST(test_store_load_roundtrip)
{
	static const uint32_t v[] = { 0, 1, 0x80000000u, 0xffffffffu, 0x01020304u };
	uint8_t b[6] = { 0xaa, 0, 0, 0, 0, 0xbb };

	for (size_t k = 0; k < sizeof(v) / sizeof(v[0]); k++) {
		ur_icrc_store(b + 1, v[k]);
		ck_assert_uint_eq(ur_icrc_load(b + 1), v[k]);
		ck_assert_uint_eq(b[1], v[k] & 0xff);
		ck_assert_uint_eq(b[4], v[k] >> 24);
		/* neighbours untouched */
		ck_assert_uint_eq(b[0], 0xaa);
		ck_assert_uint_eq(b[5], 0xbb);
	}
}
END_TEST

/* rxe starts its CRC from 0xdebb20e3, the register after 8 bytes of ones. */
START_TEST(test_lrh_seed)
{
	static const uint8_t ones[LRH_LEN] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

	ck_assert_uint_eq(~ur_crc32(0, ones, LRH_LEN), 0xdebb20e3u);
}
END_TEST

/* Flip one bit; it must be caught unless the bit is masked. */
static void check_flip(struct pkt *p, size_t i, int bit)
{
	uint8_t m = (uint8_t)(1u << bit);
	bool masked = i < p->len - 4 && (masked_bits(p->l3, i) & m);
	bool ok;

	p->l3[i] ^= m;
	ok = ur_icrc_valid(p->l3, p->len);
	p->l3[i] ^= m;
	if (masked)
		ck_assert_msg(ok, "%s #%u: masked bit %zu.%d broke the ICRC", p->file, p->index, i,
			      bit);
	else
		ck_assert_msg(!ok, "%s #%u: flipping covered bit %zu.%d went unnoticed", p->file,
			      p->index, i, bit);
}

/*
 * Every bit of the headers and the trailer of every packet, and every bit of
 * whole packets up to 300 bytes and of each file's first packet; elsewhere
 * one bit in every 8th payload byte, to keep the run short.
 */
START_TEST(test_bit_flips)
{
	const char *last_file = "";

	assert_corpus();
	for (size_t k = 0; k < npkts; k++) {
		struct pkt *p = &pkts[k];
		bool full = p->len <= 300 || strcmp(p->file, last_file);

		last_file = p->file;
		for (size_t i = 0; i < p->len; i++) {
			if (full || i < 128 || i >= p->len - 8) {
				for (int bit = 0; bit < 8; bit++)
					check_flip(p, i, bit);
			} else if (i % 8 == 0) {
				check_flip(p, i, (int)(i / 8 % 8));
			}
		}
		ck_assert_msg(ur_icrc_valid(p->l3, p->len), "%s #%u: not restored", p->file,
			      p->index);
	}
}
END_TEST

/* What routers rewrite, rewritten the way they do it. */
START_TEST(test_masked_fields_rewritten)
{
	assert_corpus();
	for (size_t k = 0; k < npkts; k++) {
		struct pkt *p = &pkts[k];
		uint8_t *l3 = p->l3;
		size_t udp = ip_hlen(l3);
		uint8_t *save = malloc(p->len);

		ck_assert_ptr_nonnull(save);
		memcpy(save, l3, p->len);
		if (p->ipv6) {
			l3[0] = 0x6f; /* Traffic Class 0xff: DSCP 63, ECN CE... */
			l3[1] = 0xf1; /* ...and Flow Label 0x12345 */
			l3[2] = 0x23;
			l3[3] = 0x45;
			l3[7] -= 3; /* three hops */
		} else {
			l3[1] = 0xb8 | 0x03; /* DSCP EF, ECN CE */
			l3[8] -= 3;	     /* TTL */
			l3[10] ^= 0x5a;	     /* Header Checksum (as recomputed) */
			l3[11] ^= 0xa5;
		}
		l3[udp + 6] = 0x12; /* a UDP checksum where there was 0 */
		l3[udp + 7] = 0x34;
		l3[udp + 8 + 4] |= 0xc0; /* FECN and BECN */
		ck_assert_msg(ur_icrc_valid(l3, p->len), "%s #%u: rewritten fields broke the ICRC",
			      p->file, p->index);
		memcpy(l3, save, p->len);
		free(save);
	}
}
END_TEST

/*
 * No capture has IPv4 options: add four bytes (NOP NOP NOP EOL) to a real
 * packet and check against the reference, which covers them unmasked.
 */
START_TEST(test_ipv4_options)
{
	const struct pkt *p = NULL;
	uint8_t *q;
	size_t len;

	assert_corpus();
	for (size_t k = 0; k < npkts && !p; k++)
		if (!pkts[k].ipv6)
			p = &pkts[k];
	ck_assert_ptr_nonnull(p);
	len = p->len + 4;
	q = malloc(len);
	ck_assert_ptr_nonnull(q);
	memcpy(q, p->l3, 20);
	memcpy(q + 20, "\x01\x01\x01\x00", 4);
	memcpy(q + 24, p->l3 + 20, p->len - 20);
	q[0] = 0x46;
	q[3] += 4; /* total length; the ICRC does not check it */
	ck_assert_uint_eq(ur_icrc_compute(q, len - 4), ref_icrc(q, len - 4));
	ur_icrc_store(q + len - 4, ur_icrc_compute(q, len - 4));
	ck_assert(ur_icrc_valid(q, len));
	q[22] ^= 1; /* options are covered */
	ck_assert(!ur_icrc_valid(q, len));
	free(q);
}
END_TEST

START_TEST(test_malformed_rejected)
{
	const struct pkt *p4 = NULL, *p6 = NULL;
	uint8_t buf[128];

	assert_corpus();
	for (size_t k = 0; k < npkts; k++) {
		if (pkts[k].ipv6 && !p6)
			p6 = &pkts[k];
		if (!pkts[k].ipv6 && !p4)
			p4 = &pkts[k];
	}
	ck_assert_ptr_nonnull(p4);
	ck_assert_ptr_nonnull(p6);
	ck_assert(!ur_icrc_valid(p4->l3, 0));
	ck_assert(!ur_icrc_valid(p4->l3, 3));
	/* shorter than IP + UDP + BTH + ICRC */
	ck_assert(!ur_icrc_valid(p4->l3, 20 + 8 + 12 + 3));
	ck_assert(!ur_icrc_valid(p6->l3, 40 + 8 + 12 + 3));
	ck_assert_uint_eq(ur_icrc_compute(p4->l3, 20 + 8 + 11), 0);

	memcpy(buf, p4->l3, sizeof(buf));
	buf[0] = 0x55; /* version 5 */
	ck_assert(!ur_icrc_valid(buf, sizeof(buf)));
	buf[0] = 0x44; /* IHL below 5 */
	ck_assert(!ur_icrc_valid(buf, sizeof(buf)));
	memcpy(buf, p4->l3, sizeof(buf));
	buf[9] = 6; /* TCP */
	ck_assert(!ur_icrc_valid(buf, sizeof(buf)));
	memcpy(buf, p6->l3, sizeof(buf));
	buf[6] = 0; /* hop-by-hop options: extension headers are not supported */
	ck_assert(!ur_icrc_valid(buf, sizeof(buf)));
}
END_TEST

static Suite *icrc_suite(void)
{
	const struct ur_crc32_impl *impls;
	Suite *s = suite_create("icrc");
	TCase *tc = tcase_create("icrc");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_corpus_has_both_families);
	tcase_add_loop_test(tc, test_every_packet_valid, 0, (int)ur_crc32_impls(&impls));
	tcase_add_loop_test(tc, test_compute_copy, 0, (int)ur_crc32_impls(&impls));
	tcase_add_test(tc, test_trailer_byte_order);
	tcase_add_test(tc, test_store_load_roundtrip);
	tcase_add_test(tc, test_lrh_seed);
	tcase_add_test(tc, test_bit_flips);
	tcase_add_test(tc, test_masked_fields_rewritten);
	tcase_add_test(tc, test_ipv4_options);
	tcase_add_test(tc, test_malformed_rejected);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	load_corpus();
	printf("icrc: %zu RoCEv2 packets (%zu IPv4, %zu IPv6)%s%s\n", npkts, nv4, nv6,
	       load_error[0] ? "; load error: " : "", load_error);
	sr = srunner_create(icrc_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	for (size_t k = 0; k < npkts; k++)
		free(pkts[k].l3);
	free(pkts);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
