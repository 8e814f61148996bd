/* SPDX-License-Identifier: BSD-2-Clause */
/* Congestion-control settings from text (see cc_spec.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc_spec.h"

enum knob_type { K_U32, K_BOOL };

static const struct knob {
	const char *name;
	size_t off;
	enum knob_type type;
} knobs[] = {
#define RP(field, type) {#field, offsetof(struct ur_dcqcn_params, field), type}
	{"rpg_time_reset", offsetof(struct ur_dcqcn_params, rpg_time_reset_us), K_U32},
	RP(rpg_byte_reset, K_U32),
	RP(rpg_threshold, K_U32),
	{"rpg_max_rate", offsetof(struct ur_dcqcn_params, rpg_max_rate_mbps), K_U32},
	{"rpg_ai_rate", offsetof(struct ur_dcqcn_params, rpg_ai_rate_mbps), K_U32},
	{"rpg_hai_rate", offsetof(struct ur_dcqcn_params, rpg_hai_rate_mbps), K_U32},
	RP(rpg_gd, K_U32),
	RP(rpg_min_dec_fac, K_U32),
	{"rpg_min_rate", offsetof(struct ur_dcqcn_params, rpg_min_rate_mbps), K_U32},
	{"rate_to_set_on_first_cnp", offsetof(struct ur_dcqcn_params, rate_to_set_on_first_cnp_mbps),
	 K_U32},
	RP(dce_tcp_g, K_U32),
	{"dce_tcp_rtt", offsetof(struct ur_dcqcn_params, dce_tcp_rtt_us), K_U32},
	{"rate_reduce_monitor_period",
	 offsetof(struct ur_dcqcn_params, rate_reduce_monitor_period_us), K_U32},
	RP(initial_alpha_value, K_U32),
	RP(clamp_tgt_rate, K_BOOL),
	RP(clamp_tgt_rate_after_time_inc, K_BOOL),
#undef RP
};

/* "10G", "2500M", "400000000" (bits/s) -> Mb/s */
static int parse_rate_mbps(const char *v, uint32_t *out)
{
	char *end;
	double x = strtod(v, &end);

	if (end == v || x <= 0)
		return -EINVAL;
	if (*end == 'G' || *end == 'g')
		x *= 1000, end++;
	else if (*end == 'M' || *end == 'm')
		end++;
	else if (*end == 'K' || *end == 'k')
		x /= 1000, end++;
	else if (!*end)
		x /= 1e6;
	if (*end || x < 1 || x > 4e9)
		return -EINVAL;
	*out = (uint32_t)x;
	return 0;
}

static int parse_u32(const char *v, uint32_t *out)
{
	char *end;
	unsigned long long x = strtoull(v, &end, 0);

	if (end == v || *end || *v == '-' || x > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)x;
	return 0;
}

static int apply_one(struct ur_dev_config *cfg, char *tok, char *err, size_t errlen)
{
	char *eq = strchr(tok, '=');
	const char *v;
	uint32_t x;

	if (!eq) {
		if (!strcmp(tok, "dcqcn")) {
			cfg->dcqcn = cfg->ecn_np = true;
		} else if (!strcmp(tok, "np")) {
			cfg->dcqcn = false;
			cfg->ecn_np = true;
		} else if (!strcmp(tok, "none")) {
			cfg->dcqcn = cfg->ecn_np = false;
		} else if (!strcmp(tok, "nvidia")) {
			ur_dcqcn_params_default(&cfg->dcqcn_params);
			cfg->cnp_interval_ns = 4000;
		} else if (!strcmp(tok, "paper")) {
			ur_dcqcn_params_paper(&cfg->dcqcn_params);
			cfg->cnp_interval_ns = UR_DCQCN_PAPER_CNP_INTERVAL_NS;
		} else {
			snprintf(err, errlen,
				 "unknown congestion control '%s' (dcqcn, np, none, nvidia, paper)", tok);
			return -EINVAL;
		}
		return 0;
	}
	*eq = 0;
	v = eq + 1;
	if (!strcmp(tok, "line_rate")) {
		if (parse_rate_mbps(v, &cfg->link_rate_mbps))
			goto bad;
		return 0;
	}
	if (parse_u32(v, &x))
		goto bad;
	if (!strcmp(tok, "min_time_between_cnps")) {
		cfg->cnp_interval_ns = (uint64_t)x * 1000;
		return 0;
	}
	if (!strcmp(tok, "cnp_dscp") || !strcmp(tok, "data_ecn")) {
		if (x > (tok[0] == 'c' ? 63u : 3u))
			goto bad;
		if (tok[0] == 'c')
			cfg->cnp_dscp = (uint8_t)x;
		else
			cfg->data_ecn = (uint8_t)x;
		return 0;
	}
	for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		uint8_t *p = (uint8_t *)&cfg->dcqcn_params + knobs[i].off;

		if (strcmp(tok, knobs[i].name))
			continue;
		if (knobs[i].type == K_BOOL) {
			if (x > 1)
				goto bad;
			*(bool *)p = x;
		} else {
			memcpy(p, &x, sizeof(x));
		}
		return 0;
	}
	snprintf(err, errlen, "unknown congestion-control knob '%s'", tok);
	return -EINVAL;
bad:
	snprintf(err, errlen, "bad value '%s' for %s", v, tok);
	return -EINVAL;
}

int ur_cc_spec_apply(struct ur_dev_config *cfg, const char *spec, char *err, size_t errlen)
{
	char buf[1024], *tok, *next;

	if (!spec || !*spec)
		return 0;
	if (strlen(spec) >= sizeof(buf)) {
		snprintf(err, errlen, "congestion-control spec too long");
		return -EINVAL;
	}
	strcpy(buf, spec);
	for (tok = buf; tok; tok = next) {
		int rc;

		next = strchr(tok, ',');
		if (next)
			*next++ = 0;
		if (!*tok)
			continue;
		rc = apply_one(cfg, tok, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

int ur_cc_spec_format(const struct ur_dev_config *cfg, char *buf, size_t len)
{
	size_t n = 0;
	int w;

	w = snprintf(buf, len, "%s\nline_rate=%uM\nmin_time_between_cnps=%llu\ncnp_dscp=%u\ndata_ecn=%u\n",
		     cfg->dcqcn ? "dcqcn" : cfg->ecn_np ? "np" : "none", cfg->link_rate_mbps,
		     (unsigned long long)(cfg->cnp_interval_ns / 1000), cfg->cnp_dscp, cfg->data_ecn);
	if (w < 0 || (size_t)w >= len)
		return -ENOSPC;
	n = (size_t)w;
	for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		const uint8_t *p = (const uint8_t *)&cfg->dcqcn_params + knobs[i].off;
		uint32_t x;

		if (knobs[i].type == K_BOOL)
			x = *(const bool *)p;
		else
			memcpy(&x, p, sizeof(x));
		w = snprintf(buf + n, len - n, "%s=%u\n", knobs[i].name, x);
		if (w < 0 || (size_t)w >= len - n)
			return -ENOSPC;
		n += (size_t)w;
	}
	return 0;
}
