/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Repeated live measurements: the median of N rounds, its spread, and the
 * order the cells of a round run in.
 */
#ifndef UROCE_ROUND_STATS_H
#define UROCE_ROUND_STATS_H

#include <stdbool.h>

/* The confidence asked of the interval around the median. */
#define ROUND_STATS_CONFIDENCE 0.95

/* What N samples say about their median. */
struct round_spread {
	unsigned n;
	double median;
	double min, max;
	double lo, hi;	 /* the order-statistic interval of the median: x(k) .. x(n+1-k) */
	double coverage; /* its exact coverage; below ROUND_STATS_CONFIDENCE when n < 6 */
};

/*
 * The rank k (1-based) of the distribution-free interval [x(k), x(n+1-k)]
 * for the median of n samples: the largest k whose coverage
 * 1 - 2 P(Binomial(n, 1/2) < k) is at least ROUND_STATS_CONFIDENCE, or 1
 * (min..max) when no k reaches it (n <= 5). *coverage gets that coverage.
 */
unsigned round_stats_ci_rank(unsigned n, double *coverage);
/* The median, min, max and interval of x[0..n) (x is not changed; n <= 64). */
void round_stats_spread(const double *x, unsigned n, struct round_spread *s);
/* Whether two intervals share a point. */
bool round_stats_overlap(const struct round_spread *a, const struct round_spread *b);
/*
 * The cell that runs at position i of round r (0-based) out of ncells:
 * forwards in even rounds, backwards in odd ones, so a cell that ran early
 * in one round runs late in the next and a slow minute hits all cells alike.
 */
unsigned round_stats_cell(unsigned r, unsigned i, unsigned ncells);

#endif
