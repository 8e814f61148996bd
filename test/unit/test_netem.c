/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The network-emulation module (transport/netem): CE marking on IPv4 and
 * IPv6, with and without 802.1Q, for every ECN codepoint, with a valid IPv4
 * checksum afterwards and nothing else touched; Not-ECT, CE, non-IP and
 * truncated frames left alone; RED's probability at K_min, K_max and
 * between; the loss models' long-run rates and Gilbert-Elliott's mean burst
 * length over seeded runs, and one seeded chain's exact pattern of losses
 * and draws; and the order of the draws, which seeded
 * simulator runs depend on, against a hand-written sequence.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "netem.h"

#define NVARIANTS 4
#define PAYLOAD 64

struct variant {
	const char *name;
	bool v6;
	bool vlan;
};

static const struct variant variants[NVARIANTS] = {
    {"ipv4", false, false},
    {"ipv4+vlan", false, true},
    {"ipv6", true, false},
    {"ipv6+vlan", true, true},
};

/* One's-complement sum of a header, computed here and not by the module. */
static uint16_t sum16(const uint8_t *h, unsigned len)
{
	uint32_t s = 0;

	for (unsigned i = 0; i + 1 < len; i += 2)
		s += (uint32_t)h[i] << 8 | h[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

/* An Ethernet frame with an IPv4 (DSCP 26) or IPv6 header carrying `ecn`; returns its length. */
static uint32_t make_frame(uint8_t *f, const struct variant *v, unsigned ecn, unsigned *ip_off)
{
	unsigned off = 12;
	uint8_t *ip;

	memset(f, 0, 18 + 40 + PAYLOAD);
	memcpy(f, "\x02\x00\x5e\x10\x00\x02\x02\x00\x5e\x10\x00\x01", 12);
	if (v->vlan) {
		memcpy(f + off, "\x81\x00\xa1\x23", 4);
		off += 4;
	}
	f[off] = v->v6 ? 0x86 : 0x08;
	f[off + 1] = v->v6 ? 0xdd : 0x00;
	off += 2;
	ip = f + off;
	*ip_off = off;
	if (v->v6) {
		/* version 6, traffic class DSCP 26 + ecn, flow label 0xabcde */
		uint8_t tc = (uint8_t)(26 << 2 | ecn);

		ip[0] = (uint8_t)(0x60 | tc >> 4);
		ip[1] = (uint8_t)((tc & 0xf) << 4 | 0xa);
		ip[2] = 0xbc;
		ip[3] = 0xde;
		ip[4] = 0;
		ip[5] = PAYLOAD;
		ip[6] = 17;
		ip[7] = 64;
		for (unsigned i = 8; i < 40; i++)
			ip[i] = (uint8_t)(0x20 + i);
		off += 40;
	} else {
		uint16_t c;

		ip[0] = 0x45;
		ip[1] = (uint8_t)(26 << 2 | ecn);
		ip[2] = 0;
		ip[3] = 20 + PAYLOAD;
		ip[4] = 0x42;
		ip[5] = 0x42;
		ip[6] = 0x40; /* DF */
		ip[8] = 64;
		ip[9] = 17;
		memcpy(ip + 12, "\xc0\x00\x02\x01\xc6\x33\x64\x07", 8);
		c = (uint16_t)~sum16(ip, 20);
		ip[10] = (uint8_t)(c >> 8);
		ip[11] = (uint8_t)c;
		off += 20;
	}
	for (unsigned i = 0; i < PAYLOAD; i++)
		f[off + i] = (uint8_t)(0xa0 ^ i);
	return off + PAYLOAD;
}

static unsigned ecn_of(const uint8_t *ip, bool v6)
{
	return v6 ? (unsigned)(ip[1] >> 4) & 3 : ip[1] & 3u;
}

START_TEST(test_ip_offset)
{
	const struct variant *v = &variants[_i];
	uint8_t f[128];
	unsigned off;
	uint32_t len = make_frame(f, v, 2, &off);
	bool v6 = !v->v6;

	ck_assert_uint_eq(off, v->vlan ? 18 : 14);
	ck_assert_uint_eq(netem_ip_offset(f, len, &v6), off);
	ck_assert(v6 == v->v6);
	/* too short for the fixed IP header: not found */
	ck_assert_uint_eq(netem_ip_offset(f, off + (v->v6 ? 40 : 20) - 1, &v6), 0);
	ck_assert_uint_eq(netem_ip_offset(f, off + (v->v6 ? 40 : 20), &v6), off);
}
END_TEST

/* Every variant with every ECN codepoint: _i = variant * 4 + codepoint. */
START_TEST(test_mark_ce)
{
	const struct variant *v = &variants[_i / 4];
	unsigned ecn = (unsigned)_i % 4, off;
	bool ect = ecn == 1 || ecn == 2;
	uint8_t f[128], before[128];
	uint32_t len = make_frame(f, v, ecn, &off);

	memcpy(before, f, len);
	ck_assert(netem_mark_ce(f, len) == ect);
	if (!ect) {
		ck_assert_mem_eq(f, before, len); /* Not-ECT and CE: left alone */
		return;
	}
	ck_assert_uint_eq(ecn_of(f + off, v->v6), 3);
	/* DSCP kept; in IPv6 the version and flow label too */
	if (v->v6) {
		ck_assert_uint_eq(f[off] >> 4, 6);
		ck_assert_uint_eq(((f[off] & 0xf) << 2) | (f[off + 1] >> 6), 26);
		ck_assert_uint_eq(f[off + 1] & 0xf, 0xa);
	} else {
		ck_assert_uint_eq(f[off + 1] >> 2, 26);
		/* the header checksum still verifies: the sum over the header is all ones */
		ck_assert_uint_eq(sum16(f + off, 20), 0xffff);
	}
	/* nothing else changed: only the ECN bits and the IPv4 checksum */
	for (unsigned i = 0; i < len; i++) {
		bool ecn_byte = i == off + 1;
		bool csum = !v->v6 && (i == off + 10 || i == off + 11);

		if (!ecn_byte && !csum)
			ck_assert_msg(f[i] == before[i], "%s: byte %u changed", v->name, i);
	}
	/* marking again changes nothing */
	memcpy(before, f, len);
	ck_assert(!netem_mark_ce(f, len));
	ck_assert_mem_eq(f, before, len);
}
END_TEST

START_TEST(test_mark_leaves_others_alone)
{
	const struct variant *v = &variants[_i];
	uint8_t f[128], before[128];
	unsigned off;
	uint32_t len = make_frame(f, v, 2, &off);

	memcpy(before, f, len);
	/* every truncation of the IP header */
	for (uint32_t l = 0; l < off + (v->v6 ? 40 : 20); l++) {
		ck_assert(!netem_mark_ce(f, l));
		ck_assert_mem_eq(f, before, len);
	}
	/* not IP (ARP) */
	f[off - 2] = 0x08;
	f[off - 1] = 0x06;
	memcpy(before, f, len);
	ck_assert(!netem_mark_ce(f, len));
	ck_assert_mem_eq(f, before, len);
	if (!v->v6) {
		/* an IPv4 header length below the minimum */
		make_frame(f, v, 2, &off);
		f[off] = 0x44;
		memcpy(before, f, len);
		ck_assert(!netem_mark_ce(f, len));
		ck_assert_mem_eq(f, before, len);
	}
}
END_TEST

START_TEST(test_red_prob)
{
	const struct netem_red red = {.kmin = 20 * 1024, .kmax = 200 * 1024, .pmax = 0.1};
	const struct netem_red off = {.kmin = 20 * 1024, .kmax = 0, .pmax = 0.1};
	const struct netem_red step = {.kmin = 100, .kmax = 100, .pmax = 0.5};

	ck_assert(netem_red_prob(&red, 0) == 0);
	ck_assert(netem_red_prob(&red, red.kmin - 1) == 0);
	ck_assert(netem_red_prob(&red, red.kmin) == 0); /* rises from 0 at K_min */
	ck_assert_double_eq_tol(netem_red_prob(&red, (red.kmin + red.kmax) / 2), 0.05, 1e-12);
	ck_assert_double_eq_tol(netem_red_prob(&red, red.kmax - 1), 0.1, 1e-5);
	ck_assert(netem_red_prob(&red, red.kmax - 1) < 0.1);
	ck_assert(netem_red_prob(&red, red.kmax) == 1); /* every packet from K_max on */
	ck_assert(netem_red_prob(&red, 10 * red.kmax) == 1);
	for (uint64_t b = 0; b < 1000000; b += 4096)
		ck_assert(netem_red_prob(&off, b) == 0);
	ck_assert(netem_red_prob(&step, 99) == 0);
	ck_assert(netem_red_prob(&step, 100) == 1);
}
END_TEST

START_TEST(test_red_mark_draws)
{
	const struct netem_red red = {.kmin = 1000, .kmax = 2000, .pmax = 0.5};
	struct sim_rng rng, ref;
	uint8_t f[128];
	unsigned off, marked = 0;
	uint32_t len;

	sim_rng_seed(&rng, 7);
	ref = rng;
	len = make_frame(f, &variants[0], 2, &off);
	/* below K_min: no mark and no draw */
	ck_assert(!netem_red_mark(&red, 999, &rng, f, len));
	ck_assert_mem_eq(&rng, &ref, sizeof(rng));
	/* above K_max: always, one draw */
	ck_assert(netem_red_mark(&red, 2000, &rng, f, len));
	sim_rng_next(&ref);
	ck_assert_mem_eq(&rng, &ref, sizeof(rng));
	/* halfway: a quarter of the frames, a draw each, marked or not */
	for (int i = 0; i < 100000; i++) {
		len = make_frame(f, &variants[i & 3], 1, &off);
		marked += netem_red_mark(&red, 1500, &rng, f, len);
	}
	ck_assert_msg(marked > 24000 && marked < 26000, "marked %u of 100000 at p 0.25", marked);
	/* a Not-ECT frame costs the draw too, so the draws do not depend on the traffic */
	len = make_frame(f, &variants[0], 0, &off);
	ref = rng;
	ck_assert(!netem_red_mark(&red, 2000, &rng, f, len));
	sim_rng_next(&ref);
	ck_assert_mem_eq(&rng, &ref, sizeof(rng));
}
END_TEST

/* Run `n` frames through the loss model: the loss rate and the mean length of loss bursts. */
static void loss_run(const struct netem_impair *im, uint64_t seed, unsigned n, double *rate,
		     double *burst)
{
	struct netem_state st = {.ge_bad = false};
	unsigned lost = 0, bursts = 0;
	bool prev = false;

	sim_rng_seed(&st.rng, seed);
	for (unsigned i = 0; i < n; i++) {
		bool l = netem_lose(im, &st);

		lost += l;
		bursts += l && !prev;
		prev = l;
	}
	*rate = (double)lost / n;
	*burst = bursts ? (double)lost / bursts : 0;
}

START_TEST(test_ge_bursts)
{
	static const double bursts[] = {2, 4, 10};
	struct netem_impair im = {.loss = 0};
	double rate, burst;

	netem_ge_bursts(&im.ge, 0.01, bursts[_i]);
	ck_assert_double_eq_tol(im.ge.p_bg, 1 / bursts[_i], 1e-15);
	loss_run(&im, 42, 4000000, &rate, &burst);
	ck_assert_msg(rate > 0.0095 && rate < 0.0105, "GE L=%g: loss rate %g", bursts[_i], rate);
	ck_assert_msg(burst > 0.95 * bursts[_i] && burst < 1.05 * bursts[_i],
		      "GE L=%g: mean burst %g", bursts[_i], burst);
}
END_TEST

/*
 * The chain frame by frame. Forced moves (good -> bad and back each
 * frame) alternate lost and kept exactly. A seeded chain of bursts (20%
 * loss, mean burst 3, seed 2026) gives one exact pattern on every machine:
 * seeded simulator and dataplane runs repeat only while it does; and it
 * costs one draw per frame for the move plus one per frame in the bad
 * state (the good state's loss, 0, draws nothing), so the draws that
 * follow do not depend on a probability that is 0.
 */
START_TEST(test_ge_exact_pattern)
{
	static const char want[] =
	    "....................xxxxxx...x.......................x.x........";
	struct netem_impair forced = {.ge = {.p_gb = 1, .p_bg = 1, .loss_bad = 1}};
	struct netem_impair im = {.loss = 0.9}; /* ignored while the chain is on */
	struct netem_state st = {.ge_bad = false};
	char got[sizeof(want)];
	struct sim_rng ref;
	unsigned lost = 0, draws = 0;

	sim_rng_seed(&st.rng, 1);
	for (unsigned i = 0; i < 16; i++) {
		ck_assert_int_eq(netem_lose(&forced, &st), i % 2 == 0);
		ck_assert_int_eq(st.ge_bad, i % 2 == 0);
	}

	netem_ge_bursts(&im.ge, 0.2, 3);
	st.ge_bad = false;
	sim_rng_seed(&st.rng, 2026);
	for (unsigned i = 0; i < sizeof(want) - 1; i++) {
		bool l = netem_lose(&im, &st);

		/* every frame in the bad state is lost, none in the good one */
		ck_assert_int_eq(l, st.ge_bad);
		got[i] = l ? 'x' : '.';
		lost += l;
	}
	got[sizeof(want) - 1] = 0;
	ck_assert_str_eq(got, want);
	sim_rng_seed(&ref, 2026);
	while (memcmp(&ref, &st.rng, sizeof(ref)) && draws < 1000) {
		sim_rng_next(&ref);
		draws++;
	}
	ck_assert_uint_eq(draws, sizeof(want) - 1 + lost);
}
END_TEST

START_TEST(test_independent_loss)
{
	struct netem_impair im = {.loss = 0.05};
	double rate, burst;

	loss_run(&im, 3, 2000000, &rate, &burst);
	ck_assert_msg(rate > 0.049 && rate < 0.051, "loss rate %g", rate);
	/* independent: bursts are geometric, mean 1 / (1 - p) */
	ck_assert_double_eq_tol(burst, 1 / 0.95, 0.01);
	/* loss 0: never, and no draw */
	im.loss = 0;
	{
		struct netem_state st = {.ge_bad = false}, ref;

		sim_rng_seed(&st.rng, 3);
		ref = st;
		for (int i = 0; i < 1000; i++)
			ck_assert(!netem_lose(&im, &st));
		ck_assert_mem_eq(&st.rng, &ref.rng, sizeof(st.rng));
	}
}
END_TEST

/*
 * The draws, written out: loss (the chain's move, then its state's loss),
 * then CE, duplicate and hold, each only when enabled. The simulator's
 * seeded runs are bit-for-bit the same only while this order holds.
 */
static unsigned reference_fate(const struct netem_impair *im, bool *bad, struct sim_rng *r,
			       bool ect)
{
	unsigned fate = 0;
	double p = im->loss;

	if (im->ge.p_gb > 0) {
		*bad =
		    *bad ? !sim_rng_bernoulli(r, im->ge.p_bg) : sim_rng_bernoulli(r, im->ge.p_gb);
		p = *bad ? im->ge.loss_bad : im->ge.loss_good;
	}
	if (sim_rng_bernoulli(r, p))
		return NETEM_DROP;
	if (im->ce > 0 && sim_rng_bernoulli(r, im->ce) && ect)
		fate |= NETEM_MARKED;
	if (im->dup > 0 && sim_rng_bernoulli(r, im->dup))
		fate |= NETEM_DUP;
	if (im->reorder > 0 && sim_rng_bernoulli(r, im->reorder))
		fate |= NETEM_HOLD;
	return fate;
}

START_TEST(test_draw_order)
{
	struct netem_impair im = {.loss = 0.1, .ce = 0.2, .dup = 0.05, .reorder = 0.1};
	struct netem_state st = {.ge_bad = false};
	struct sim_rng ref;
	unsigned counts[4] = {0}, n = 200000;
	bool ref_bad = false;

	if (_i == 1)
		netem_ge_bursts(&im.ge, 0.02, 3);
	if (_i == 2)
		im.ce = im.dup = 0; /* disabled: no draws */
	sim_rng_seed(&st.rng, 1234);
	ref = st.rng;
	for (unsigned i = 0; i < n; i++) {
		uint8_t f[128];
		unsigned off, ecn = i % 4; /* Not-ECT, ECT(1), ECT(0), CE in turn */
		uint32_t len = make_frame(f, &variants[i % NVARIANTS], ecn, &off);
		unsigned fate = netem_impair_frame(&im, &st, f, len);
		unsigned want = reference_fate(&im, &ref_bad, &ref, ecn == 1 || ecn == 2);

		ck_assert_msg(fate == want, "frame %u: fate %#x, expected %#x", i, fate, want);
		ck_assert(st.ge_bad == ref_bad);
		if (fate & NETEM_MARKED)
			ck_assert_uint_eq(ecn_of(f + off, variants[i % NVARIANTS].v6), 3);
		for (unsigned b = 0; b < 4; b++)
			counts[b] += (fate >> b) & 1;
	}
	ck_assert_mem_eq(&st.rng, &ref, sizeof(ref));
	if (_i == 0) {
		/* of the frames kept: CE on half the ECN-capable ones at 0.2, ... */
		double kept = n - counts[0];

		ck_assert_double_eq_tol(counts[0] / (double)n, 0.1, 0.003);
		ck_assert_double_eq_tol(counts[1] / kept, 0.2 / 2, 0.003);
		ck_assert_double_eq_tol(counts[2] / kept, 0.05, 0.002);
		ck_assert_double_eq_tol(counts[3] / kept, 0.1, 0.003);
	}
	if (_i == 2)
		ck_assert_uint_eq(counts[1] + counts[2], 0);
}
END_TEST

static Suite *netem_suite(void)
{
	Suite *s = suite_create("netem");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, test_ip_offset, 0, NVARIANTS);
	tcase_add_loop_test(tc, test_mark_ce, 0, NVARIANTS * 4);
	tcase_add_loop_test(tc, test_mark_leaves_others_alone, 0, NVARIANTS);
	tcase_add_test(tc, test_red_prob);
	tcase_add_test(tc, test_red_mark_draws);
	tcase_add_loop_test(tc, test_ge_bursts, 0, 3);
	tcase_add_test(tc, test_ge_exact_pattern);
	tcase_add_test(tc, test_independent_loss);
	tcase_add_loop_test(tc, test_draw_order, 0, 3);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(netem_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
