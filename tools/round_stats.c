/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The median of a few rounds and its distribution-free interval. With n
 * samples x(1) <= .. <= x(n), the median lies below x(k) only if fewer than
 * k samples fall below it, so [x(k), x(n+1-k)] covers the true median with
 * probability 1 - 2 P(Binomial(n, 1/2) <= k - 1) whatever the distribution
 * (the sign-test interval; e.g. Hollander & Wolfe, Nonparametric Statistical
 * Methods, 3.6). Live goodput is skewed by the odd slow run, so no normal
 * approximation; and a bootstrap of five values can only ever return them.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "round_stats.h"

#define MAX_SAMPLES 64

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* P(Binomial(n, 1/2) <= k), summed exactly in doubles (n <= 64). */
static double binom_half_cdf(unsigned n, unsigned k)
{
	double term = ldexp(1.0, -(int)n), sum = 0; /* C(n, 0) / 2^n */

	for (unsigned i = 0; i <= k && i <= n; i++) {
		sum += term;
		term = term * (double)(n - i) / (double)(i + 1);
	}
	return sum;
}

unsigned round_stats_ci_rank(unsigned n, double *coverage)
{
	unsigned k = 1;

	/* k + 1 is allowed while its interval still covers ROUND_STATS_CONFIDENCE. */
	while (2 * (k + 1) <= n + 1 && 1 - 2 * binom_half_cdf(n, k) >= ROUND_STATS_CONFIDENCE)
		k++;
	*coverage = n ? 1 - 2 * binom_half_cdf(n, k - 1) : 0;
	return k;
}

void round_stats_spread(const double *x, unsigned n, struct round_spread *s)
{
	double v[MAX_SAMPLES];
	unsigned k;

	memset(s, 0, sizeof(*s));
	if (n > MAX_SAMPLES)
		n = MAX_SAMPLES;
	s->n = n;
	if (!n)
		return;
	memcpy(v, x, n * sizeof(*v));
	qsort(v, n, sizeof(*v), cmp_double);
	s->median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	s->min = v[0];
	s->max = v[n - 1];
	k = round_stats_ci_rank(n, &s->coverage);
	s->lo = v[k - 1];
	s->hi = v[n - k];
}

bool round_stats_overlap(const struct round_spread *a, const struct round_spread *b)
{
	return a->lo <= b->hi && b->lo <= a->hi;
}

unsigned round_stats_cell(unsigned r, unsigned i, unsigned ncells)
{
	return r % 2 ? ncells - 1 - i : i;
}
