/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Batches of RoCE frames for the kernel's UDP segmentation (dataplane/
 * udp_gso.c): frames built as the engine builds them (template, ICRC), put
 * in a batch, and cut apart again come back byte for byte, ICRC intact,
 * across the IPv4 identification's wrap; the batch's UDP checksum, as the
 * kernel completes it per segment, is each segment's true checksum; frames
 * that must not share a batch do not.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "frame.h"
#include "icrc.h"
#include "udp_gso.h"

#define NFRAMES 5
#define SEG 1100 /* RoCE bytes (BTH..ICRC) of all but the last */
#define LAST 300

struct frames {
	uint8_t buf[NFRAMES][2048];
	uint32_t len[NFRAMES];
	unsigned hlen;
};

static void path(struct ur_path *p, bool v6)
{
	static const uint8_t s6[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
	static const uint8_t d6[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
	static const uint8_t s4[4] = {10, 0, 0, 1}, d4[4] = {10, 0, 0, 2};

	memset(p, 0, sizeof(*p));
	memset(p->smac, 0x02, 6);
	memset(p->dmac, 0x04, 6);
	if (v6) {
		memcpy(p->sgid.raw, s6, 16);
		memcpy(p->dgid.raw, d6, 16);
	} else {
		ur_gid_from_v4(&p->sgid, s4);
		ur_gid_from_v4(&p->dgid, d4);
	}
	p->hop_limit = 64;
	p->flow_label = 0x12345;
	p->udp_sport = 0xc123;
}

/* NFRAMES frames of one QP as the engine sends them: IDs counted up from id0, sealed. */
static void build(struct frames *fr, bool v6, uint16_t id0)
{
	struct ur_frame_tmpl t;
	struct ur_path p;

	path(&p, v6);
	ur_frame_tmpl_init(&t, &p);
	for (unsigned i = 0; i < NFRAMES; i++) {
		uint32_t roce = i == NFRAMES - 1 ? LAST : SEG;
		unsigned pre = ur_frame_tmpl_emit(&t, fr->buf[i], roce, 0x02, (uint16_t)(id0 + i));

		for (uint32_t j = 0; j < roce; j++)
			fr->buf[i][pre + j] = (uint8_t)(i * 37 + j * 11);
		/* one QP: BTH bytes 5-7 */
		fr->buf[i][pre + 5] = 0x00;
		fr->buf[i][pre + 6] = 0x12;
		fr->buf[i][pre + 7] = 0x34;
		fr->len[i] = pre + roce;
		fr->hlen = pre;
		ur_frame_seal(&t, fr->buf[i], fr->len[i]);
	}
}

/* What the kernel hands the receiving socket: the batch's header, then the payloads. */
static uint32_t batch(const struct frames *fr, uint8_t *out)
{
	uint32_t payload = 0, off = fr->hlen;

	for (unsigned i = 0; i < NFRAMES; i++) {
		memcpy(out + off, fr->buf[i] + fr->hlen, fr->len[i] - fr->hlen);
		off += fr->len[i] - fr->hlen;
		payload += fr->len[i] - fr->hlen;
	}
	dp_gso_batch_header(out, fr->buf[0], fr->hlen, payload);
	return off;
}

static void check_round_trip(bool v6, uint16_t id0)
{
	static struct frames fr;
	static uint8_t b[NFRAMES * 2048];
	struct dp_gso_cut cut;
	uint32_t len, slen;
	uint8_t *s;
	unsigned n = 0, l3len;

	build(&fr, v6, id0);
	ck_assert_uint_eq(dp_gso_lead(fr.buf[0], fr.len[0]), v6 ? 62 : 42);
	for (unsigned k = 1; k < NFRAMES; k++)
		ck_assert(dp_gso_follows(fr.buf[0], fr.len[0], fr.buf[k], fr.len[k], fr.hlen, k));
	len = batch(&fr, b);
	ck_assert_int_eq(dp_gso_cut_start(&cut, b, len, SEG), 0);
	while ((s = dp_gso_cut_next(&cut, &slen))) {
		ck_assert_uint_lt(n, NFRAMES);
		ck_assert_uint_eq(slen, fr.len[n]);
		ck_assert_mem_eq(s, fr.buf[n], slen);
		l3len = slen - 14 - UR_ICRC_SIZE;
		ck_assert(ur_icrc_valid(s + 14, l3len + UR_ICRC_SIZE));
		if (!v6)
			ck_assert_uint_eq(ur_ipv4_csum(s + 14, 20), 0);
		n++;
	}
	ck_assert_uint_eq(n, NFRAMES);
}

START_TEST(test_ipv4_batch_cuts_back_into_its_frames)
{
	check_round_trip(false, 0x4242);
	check_round_trip(false, 0xfffe); /* the identification wraps inside the batch */
}
END_TEST

START_TEST(test_ipv6_batch_cuts_back_into_its_frames)
{
	check_round_trip(true, 0);
}
END_TEST

static uint32_t add16(const uint8_t *p, unsigned len, uint32_t sum)
{
	for (unsigned i = 0; i < len; i += 2)
		sum += (uint32_t)(p[i] << 8 | (i + 1 < len ? p[i + 1] : 0));
	return sum;
}

static uint16_t fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

/* RFC 768 / 8200: the checksum over the pseudo-header and the UDP datagram (check field 0). */
static uint16_t udp_checksum(const uint8_t *f, unsigned hlen, uint32_t len, bool v6)
{
	const uint8_t *udp = f + hlen - 8;
	uint32_t ulen = len - (hlen - 8), sum;
	uint8_t u[8];

	sum = v6 ? add16(f + 14 + 8, 32, 0) : add16(f + 14 + 12, 8, 0);
	sum += 17 + ulen;
	memcpy(u, udp, 8);
	u[6] = u[7] = 0;
	sum = add16(u, 8, sum);
	sum = add16(udp + 8, ulen - 8, sum);
	return (uint16_t)~fold(sum);
}

/*
 * The kernel's segmentation (__udp_gso_segment) swaps the batch's UDP
 * length for the segment's in the pseudo-header sum left in the check
 * field, and the checksum offload then sums the segment from the UDP
 * header on (check field included) and inverts.
 */
static void check_kernel_checksum(bool v6)
{
	static struct frames fr;
	static uint8_t b[NFRAMES * 2048];
	const uint8_t *bu;
	uint32_t len;

	build(&fr, v6, 7);
	len = batch(&fr, b);
	bu = b + fr.hlen - 8;
	for (unsigned i = 0; i < NFRAMES; i++) {
		uint8_t seg[2048];
		uint8_t *su = seg + fr.hlen - 8;
		uint32_t partial, seg_ulen = fr.len[i] - fr.hlen + 8;
		uint16_t got;

		memcpy(seg, fr.buf[i], fr.len[i]);
		partial =
		    (uint32_t)(bu[6] << 8 | bu[7]) + (uint16_t) ~(bu[4] << 8 | bu[5]) + seg_ulen;
		su[6] = (uint8_t)(fold(partial) >> 8);
		su[7] = (uint8_t)fold(partial);
		got = (uint16_t)~fold(add16(su, seg_ulen, 0));
		ck_assert_uint_eq(got, udp_checksum(seg, fr.hlen, fr.len[i], v6));
	}
	(void)len;
}

START_TEST(test_batch_checksum_completes_per_segment)
{
	check_kernel_checksum(false);
	check_kernel_checksum(true);
}
END_TEST

START_TEST(test_frames_that_must_not_share_a_batch)
{
	static struct frames fr;
	uint8_t *a = NULL, *b = NULL;
	uint32_t alen, blen;

	build(&fr, false, 100);
	a = fr.buf[0];
	alen = fr.len[0];
	b = fr.buf[1];
	blen = fr.len[1];
	ck_assert(dp_gso_follows(a, alen, b, blen, fr.hlen, 1));
	/* an identification out of step: another QP's frame, or one between */
	ck_assert(!dp_gso_follows(a, alen, b, blen, fr.hlen, 2));
	/* longer than the lead */
	ck_assert(!dp_gso_follows(fr.buf[4], fr.len[4], b, blen, fr.hlen, 1));
	/* another ECN mark, TTL, address or port */
	b[15] ^= 0x03;
	ck_assert(!dp_gso_follows(a, alen, b, blen, fr.hlen, 1));
	b[15] ^= 0x03;
	b[22]--;
	ck_assert(!dp_gso_follows(a, alen, b, blen, fr.hlen, 1));
	b[22]++;
	b[33] ^= 1;
	ck_assert(!dp_gso_follows(a, alen, b, blen, fr.hlen, 1));
	b[33] ^= 1;
	b[35] ^= 1;
	ck_assert(!dp_gso_follows(a, alen, b, blen, fr.hlen, 1));
	b[35] ^= 1;
	ck_assert(dp_gso_follows(a, alen, b, blen, fr.hlen, 1));
	/* another destination QP */
	b[fr.hlen + 7] ^= 1;
	ck_assert(!dp_gso_follows(a, alen, b, blen, fr.hlen, 1));
	b[fr.hlen + 7] ^= 1;
	/* bytes past the IP packet (Ethernet padding): not carried into a batch */
	ck_assert(dp_gso_follows(a, alen, fr.buf[4], fr.len[4], fr.hlen, 4));
	ck_assert(!dp_gso_follows(a, alen, fr.buf[4], fr.len[4] + 2, fr.hlen, 4));
	ck_assert_uint_eq(dp_gso_lead(a, alen + 2), 0);

	/* no lead: fragments, IP options, another UDP port, VLAN tags, not IP */
	a[20] |= 0x20; /* MF */
	ck_assert_uint_eq(dp_gso_lead(a, alen), 0);
	a[20] &= (uint8_t)~0x20;
	a[14] = 0x46;
	ck_assert_uint_eq(dp_gso_lead(a, alen), 0);
	a[14] = 0x45;
	a[37] ^= 1;
	ck_assert_uint_eq(dp_gso_lead(a, alen), 0);
	a[37] ^= 1;
	a[12] = 0x81;
	ck_assert_uint_eq(dp_gso_lead(a, alen), 0);
	a[12] = 0x08;
	ck_assert_uint_eq(dp_gso_lead(a, 42), 0); /* no payload */
	ck_assert_uint_eq(dp_gso_lead(a, alen), 42);
}
END_TEST

START_TEST(test_cut_refuses_what_is_no_batch_of_ours)
{
	static struct frames fr;
	struct dp_gso_cut cut;

	build(&fr, false, 1);
	ck_assert_int_eq(dp_gso_cut_start(&cut, fr.buf[0], fr.len[0], 0), -EINVAL);
	fr.buf[0][37] ^= 1; /* not port 4791 */
	ck_assert_int_eq(dp_gso_cut_start(&cut, fr.buf[0], fr.len[0], 100), -EINVAL);
	ck_assert_int_eq(dp_gso_cut_start(&cut, fr.buf[0], 20, 100), -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("udp_gso");
	TCase *tc = tcase_create("udp_gso");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_ipv4_batch_cuts_back_into_its_frames);
	tcase_add_test(tc, test_ipv6_batch_cuts_back_into_its_frames);
	tcase_add_test(tc, test_batch_checksum_completes_per_segment);
	tcase_add_test(tc, test_frames_that_must_not_share_a_batch);
	tcase_add_test(tc, test_cut_refuses_what_is_no_batch_of_ours);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
