/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Impairments on the wire, so unmodified programs can be studied under
 * loss: Bernoulli or Gilbert-Elliott loss, reordering by a depth,
 * duplication and ECN CE marking of transmitted RoCE frames. Seeded: the
 * same seed and traffic give the same decisions. Every event is counted.
 *
 * Spec (from `uroce link add ... impair SPEC` or UROCE_IMPAIR):
 *   loss=P,burst=L,reorder=P:D,dup=P,ce=P,seed=S
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_mbuf.h>

#include "dp_internal.h"
#include "rng.h"

#define HELD_MAX 256
#define HOLD_MAX_NS 1000000ull /* a held frame leaves after 1 ms even if traffic stops */

struct held {
	struct rte_mbuf *m;
	uint64_t release_seq; /* leave once this many frames went before it */
	uint64_t deadline;
};

struct dp_impair {
	double loss;
	double ge_p_gb, ge_p_bg; /* Gilbert-Elliott, when burst > 1 */
	bool ge_bad;
	double reorder;
	unsigned depth;
	double dup;
	double ce;
	struct sim_rng rng;
	uint64_t seq;            /* frames let through so far */
	struct held held[HELD_MAX];
	unsigned nheld;
};

static bool parse_prob(const char *v, double *p)
{
	char *end;

	*p = strtod(v, &end);
	return end != v && *end == 0 && *p >= 0 && *p <= 1;
}

int dp_impair_open(struct uroce_dp *dp, const char *spec, uint64_t seed)
{
	struct dp_impair *im = calloc(1, sizeof(*im));
	char buf[256], *save = NULL, *tok;
	double burst = 0;

	if (!im || strlen(spec) >= sizeof(buf)) {
		free(im);
		return -EINVAL;
	}
	strcpy(buf, spec);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		bool ok;

		if (!eq)
			goto bad;
		*eq++ = 0;
		if (!strcmp(tok, "loss"))
			ok = parse_prob(eq, &im->loss);
		else if (!strcmp(tok, "burst"))
			ok = (burst = strtod(eq, NULL)) >= 1;
		else if (!strcmp(tok, "dup"))
			ok = parse_prob(eq, &im->dup);
		else if (!strcmp(tok, "ce"))
			ok = parse_prob(eq, &im->ce);
		else if (!strcmp(tok, "seed"))
			ok = (seed = strtoull(eq, NULL, 0), true);
		else if (!strcmp(tok, "reorder")) {
			char *colon = strchr(eq, ':');

			ok = colon != NULL;
			if (ok) {
				*colon = 0;
				ok = parse_prob(eq, &im->reorder) &&
				     (im->depth = (unsigned)strtoul(colon + 1, NULL, 10)) > 0;
			}
		} else
			ok = false;
		if (!ok)
			goto bad;
	}
	if (burst > 1 && im->loss > 0) {
		/* mean burst length L; long-run loss rate p */
		im->ge_p_bg = 1.0 / burst;
		im->ge_p_gb = im->loss * im->ge_p_bg / (1 - im->loss);
	}
	sim_rng_seed(&im->rng, seed);
	dp->impair = im;
	dp_log(dp, "impairments: loss %g burst %g reorder %g:%u dup %g ce %g seed %llu", im->loss,
	       burst, im->reorder, im->depth, im->dup, im->ce, (unsigned long long)seed);
	return 0;
bad:
	free(im);
	return -EINVAL;
}

void dp_impair_close(struct uroce_dp *dp)
{
	struct dp_impair *im = dp->impair;

	if (!im)
		return;
	for (unsigned i = 0; i < im->nheld; i++)
		rte_pktmbuf_free(im->held[i].m);
	free(im);
	dp->impair = NULL;
}

static bool lose(struct dp_impair *im)
{
	if (im->ge_p_gb > 0) {
		if (im->ge_bad)
			im->ge_bad = !sim_rng_bernoulli(&im->rng, im->ge_p_bg);
		else
			im->ge_bad = sim_rng_bernoulli(&im->rng, im->ge_p_gb);
		return im->ge_bad;
	}
	return sim_rng_bernoulli(&im->rng, im->loss);
}

/* Set CE on an ECN-capable IPv4/IPv6 frame (RFC 3168), fixing the IPv4 checksum. */
static bool mark_ce(uint8_t *f, uint32_t len)
{
	unsigned off = 12;
	uint16_t type = (uint16_t)(f[12] << 8 | f[13]);

	if (type == 0x8100 && len >= 18) {
		off += 4;
		type = (uint16_t)(f[off] << 8 | f[off + 1]);
	}
	off += 2;
	if (type == 0x0800 && len >= off + 20 && (f[off + 1] & 3) && (f[off + 1] & 3) != 3) {
		uint32_t sum;

		/* incremental checksum update (RFC 1624): the ECN bits go to 11 */
		uint16_t old = (uint16_t)(f[off] << 8 | f[off + 1]), new = old | 3;

		f[off + 1] |= 3;
		sum = (uint16_t)~(f[off + 10] << 8 | f[off + 11]) + (uint16_t)~old + new;
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		f[off + 10] = (uint8_t)(~sum >> 8);
		f[off + 11] = (uint8_t)~sum;
		return true;
	}
	if (type == 0x86dd && len >= off + 40) {
		unsigned ecn = (unsigned)(f[off + 1] >> 4) & 3;

		if (ecn && ecn != 3) {
			f[off + 1] |= 0x30;
			return true;
		}
	}
	return false;
}

int dp_impair_tx(struct uroce_dp *dp, struct rte_mbuf *m, uint64_t now)
{
	struct dp_impair *im = dp->impair;
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);

	if (lose(im)) {
		dp_count(dp, DP_CTR_dp_impair_dropped);
		rte_pktmbuf_free(m);
		return 1;
	}
	if (im->ce > 0 && sim_rng_bernoulli(&im->rng, im->ce) && mark_ce(f, m->data_len))
		dp_count(dp, DP_CTR_dp_impair_ce_marked);
	if (im->dup > 0 && sim_rng_bernoulli(&im->rng, im->dup) && im->nheld < HELD_MAX) {
		struct rte_mbuf *copy = rte_pktmbuf_copy(m, dp->pool, 0, UINT32_MAX);

		if (copy) {
			im->held[im->nheld++] = (struct held){copy, im->seq, now};
			dp_count(dp, DP_CTR_dp_impair_duplicated);
		}
	}
	if (im->reorder > 0 && im->nheld < HELD_MAX && sim_rng_bernoulli(&im->rng, im->reorder)) {
		/* let `depth` later frames overtake it */
		im->held[im->nheld++] = (struct held){m, im->seq + im->depth, now + HOLD_MAX_NS};
		dp_count(dp, DP_CTR_dp_impair_reordered);
		return 1;
	}
	im->seq++;
	return 0;
}

unsigned dp_impair_release(struct uroce_dp *dp, struct rte_mbuf **out, unsigned max, uint64_t now)
{
	struct dp_impair *im = dp->impair;
	unsigned n = 0, kept = 0;

	for (unsigned i = 0; i < im->nheld; i++) {
		struct held *h = &im->held[i];

		if (n < max && (im->seq >= h->release_seq || (now && now >= h->deadline) || !now))
			out[n++] = h->m;
		else
			im->held[kept++] = *h;
	}
	im->nheld = kept;
	return n;
}
