/* SPDX-License-Identifier: BSD-2-Clause */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"

bool parse_double(const char *s, double *v)
{
	char *end;

	errno = 0;
	*v = strtod(s, &end);
	return !errno && end != s && *end == 0 && isfinite(*v);
}

bool parse_reorder(const char *s, double *p, uint64_t *depth)
{
	const char *colon = strchr(s, ':');
	char prob[64];
	size_t n = colon ? (size_t)(colon - s) : strlen(s);

	if (n >= sizeof(prob))
		return false;
	memcpy(prob, s, n);
	prob[n] = 0;
	*depth = REORDER_DEPTH_DEFAULT;
	if (!parse_double(prob, p) || *p < 0 || *p > 1)
		return false;
	/* a reordering by nothing is a typo, not a clean path */
	return !colon || (parse_u64(colon + 1, depth) && (*depth > 0 || *p == 0));
}

bool parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (*s == '-')
		return false;
	errno = 0;
	*v = strtoull(s, &end, 0);
	return !errno && end != s && *end == 0;
}

/* A number followed by a unit from `units`; the unit's factor multiplies it. */
struct unit {
	const char *name;
	double factor;
};

static bool parse_with_units(const char *s, const struct unit *units, double dflt, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v < 0)
		return false;
	if (!*end) {
		*out = v * dflt;
		return true;
	}
	for (const struct unit *u = units; u->name; u++) {
		if (!strcasecmp(end, u->name)) {
			*out = v * u->factor;
			return true;
		}
	}
	return false;
}

bool parse_rate(const char *s, uint64_t *bps)
{
	static const struct unit units[] = {
		{"T", 1e12}, {"G", 1e9}, {"M", 1e6}, {"K", 1e3}, {"Tbps", 1e12}, {"Gbps", 1e9},
		{"Mbps", 1e6}, {"Kbps", 1e3}, {"bps", 1}, {NULL, 0},
	};
	double v;

	if (!parse_with_units(s, units, 1, &v) || v < 1e3 || v > 1e13)
		return false;
	*bps = (uint64_t)llround(v);
	return true;
}

bool parse_time_ps(const char *s, uint64_t *ps)
{
	static const struct unit units[] = {
		{"s", 1e12}, {"ms", 1e9}, {"us", 1e6}, {"ns", 1e3}, {"ps", 1}, {NULL, 0},
	};
	double v;

	if (!parse_with_units(s, units, 1e6, &v) || v > 1e18)
		return false;
	*ps = (uint64_t)llround(v);
	return true;
}

bool parse_size(const char *s, uint64_t *bytes)
{
	static const struct unit units[] = {
		{"K", 1024.0}, {"M", 1048576.0}, {"G", 1073741824.0}, {"KiB", 1024.0},
		{"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"B", 1}, {NULL, 0},
	};
	double v;

	if (!parse_with_units(s, units, 1, &v) || v > 1e15 || v != floor(v))
		return false;
	*bytes = (uint64_t)v;
	return true;
}
