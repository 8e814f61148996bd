/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Impairments on the wire, so unmodified programs can be studied under
 * loss: Bernoulli or Gilbert-Elliott loss, reordering by a depth,
 * duplication and ECN CE marking of the frames a device transmits and,
 * separately, of those it receives. Seeded: the same seed and traffic give
 * the same decisions. Every event is counted, per direction.
 *
 * Spec (from `uroce link add ... impair SPEC` or UROCE_IMPAIR):
 *   loss=P,burst=L,reorder=P:D,dup=P,ce=P,seed=S
 * Keys apply to transmitted frames; prefixed with `rx.` (rx.loss=P, ...)
 * they apply to received frames instead (`tx.` is accepted too).
 *
 * The decisions are transport/netem's, the simulator's own; here is only
 * the spec, the counters and the holding of mbufs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_mbuf.h>

#include "dp_internal.h"
#include "netem.h"

#define HELD_MAX 256
#define HOLD_MAX_NS 1000000ull /* a held frame leaves after 1 ms even if traffic stops */

struct held {
	struct rte_mbuf *m;
	uint64_t release_seq; /* leave once this many frames went before it */
	uint64_t deadline;
};

struct dp_impair {
	struct netem_impair net;
	double burst;            /* mean burst length; > 1 selects Gilbert-Elliott */
	unsigned depth;          /* frames that overtake a held one */
	struct netem_state st;
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

static struct dp_impair *impair_new(uint64_t seed)
{
	struct dp_impair *im = calloc(1, sizeof(*im));

	if (im)
		sim_rng_seed(&im->st.rng, seed);
	return im;
}

/* One key=value of a direction's spec; false when malformed. */
static bool parse_key(struct dp_impair *im, char *key, char *val)
{
	if (!strcmp(key, "loss"))
		return parse_prob(val, &im->net.loss);
	if (!strcmp(key, "burst"))
		return (im->burst = strtod(val, NULL)) >= 1;
	if (!strcmp(key, "dup"))
		return parse_prob(val, &im->net.dup);
	if (!strcmp(key, "ce"))
		return parse_prob(val, &im->net.ce);
	if (!strcmp(key, "reorder")) {
		char *colon = strchr(val, ':');

		if (!colon)
			return false;
		*colon = 0;
		return parse_prob(val, &im->net.reorder) &&
		       (im->depth = (unsigned)strtoul(colon + 1, NULL, 10)) > 0 &&
		       im->depth <= HELD_MAX;
	}
	return false;
}

static void impair_finish(struct uroce_dp *dp, struct dp_impair *im, const char *dir)
{
	if (im->burst > 1 && im->net.loss > 0)
		netem_ge_bursts(&im->net.ge, im->net.loss, im->burst);
	dp_log(dp, "impairments %s: loss %g burst %g reorder %g:%u dup %g ce %g", dir, im->net.loss,
	       im->burst, im->net.reorder, im->depth, im->net.dup, im->net.ce);
}

int dp_impair_open(struct uroce_dp *dp, const char *spec, uint64_t seed)
{
	char buf[256], *save = NULL, *tok;
	struct dp_impair *dir[2] = {NULL, NULL};
	bool used[2] = {false, false};

	if (strlen(spec) >= sizeof(buf))
		return -EINVAL;
	/* the seed first, wherever it is written, so both directions use it */
	strcpy(buf, spec);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (!strncmp(tok, "seed=", 5))
			seed = strtoull(tok + 5, NULL, 0);
	/* the two directions draw from different streams of the same seed */
	dir[0] = impair_new(seed);
	dir[1] = impair_new(seed ^ 0x9e3779b97f4a7c15ull);
	if (!dir[0] || !dir[1])
		goto bad;
	strcpy(buf, spec);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		int d = 0;

		if (!eq)
			goto bad;
		*eq++ = 0;
		if (!strcmp(tok, "seed"))
			continue;
		if (!strncmp(tok, "rx.", 3) || !strncmp(tok, "tx.", 3)) {
			d = tok[0] == 'r';
			tok += 3;
		}
		if (!parse_key(dir[d], tok, eq))
			goto bad;
		used[d] = true;
	}
	for (int d = 0; d < 2; d++) {
		if (used[d]) {
			impair_finish(dp, dir[d], d ? "rx" : "tx");
		} else {
			free(dir[d]);
			dir[d] = NULL;
		}
	}
	dp->impair_tx = dir[0];
	dp->impair_rx = dir[1];
	dp_log(dp, "impairment seed %llu", (unsigned long long)seed);
	return 0;
bad:
	free(dir[0]);
	free(dir[1]);
	return -EINVAL;
}

static void impair_free(struct uroce_dp *dp, struct dp_impair *im)
{
	if (!im)
		return;
	for (unsigned i = 0; i < im->nheld; i++)
		dp_frame_free(dp, im->held[i].m);
	free(im);
}

void dp_impair_close(struct uroce_dp *dp)
{
	impair_free(dp, dp->impair_tx);
	impair_free(dp, dp->impair_rx);
	dp->impair_tx = dp->impair_rx = NULL;
}

int dp_impair_frame(struct uroce_dp *dp, struct dp_impair *im, struct rte_mbuf *m, uint64_t now)
{
	unsigned fate = netem_impair_frame(&im->net, &im->st, rte_pktmbuf_mtod(m, uint8_t *),
					   m->data_len);
	bool rx = im == dp->impair_rx;

	if (fate & NETEM_DROP) {
		dp_count(dp, rx ? DP_CTR_dp_impair_rx_dropped : DP_CTR_dp_impair_dropped);
		dp_frame_free(dp, m);
		return 1;
	}
	if (fate & NETEM_MARKED)
		dp_count(dp, rx ? DP_CTR_dp_impair_rx_ce_marked : DP_CTR_dp_impair_ce_marked);
	if ((fate & NETEM_DUP) && im->nheld < HELD_MAX) {
		struct rte_mbuf *copy = dp_frame_alloc(dp);

		if (copy) {
			memcpy(rte_pktmbuf_mtod(copy, uint8_t *), rte_pktmbuf_mtod(m, const uint8_t *),
			       m->data_len);
			copy->data_len = m->data_len;
			copy->pkt_len = m->data_len;
			im->held[im->nheld++] = (struct held){copy, im->seq, now};
			dp_count(dp, rx ? DP_CTR_dp_impair_rx_duplicated : DP_CTR_dp_impair_duplicated);
		}
	}
	if ((fate & NETEM_HOLD) && im->nheld < HELD_MAX) {
		/* let `depth` later frames overtake it */
		im->held[im->nheld++] = (struct held){m, im->seq + im->depth, now + HOLD_MAX_NS};
		dp_count(dp, rx ? DP_CTR_dp_impair_rx_reordered : DP_CTR_dp_impair_reordered);
		return 1;
	}
	im->seq++;
	return 0;
}

unsigned dp_impair_release(struct dp_impair *im, struct rte_mbuf **out, unsigned max, uint64_t now)
{
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
