/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Congestion-control settings as text, so `uroce link add ... cc SPEC`,
 * UROCE_CC and the simulator's options share one syntax and one set of
 * names (mlx5's). A SPEC is a comma-separated list of:
 *   dcqcn        notification and reaction point on (the default)
 *   np           notification point only: send CNPs, ignore them
 *   none         neither (data stays ECN-capable)
 *   nvidia       NVIDIA's documented DCQCN defaults, min_time_between_cnps 4 us
 *   paper        the DCQCN paper's settings, CNPs at most every 50 us
 *   line_rate=R  the port rate DCQCN starts from, e.g. 10G or 2500M
 *   min_time_between_cnps=US, cnp_dscp=N, data_ecn=0..3
 *   any DCQCN knob by its mlx5 name with mlx5's units, e.g. rpg_time_reset=55
 */
#ifndef UR_CC_SPEC_H
#define UR_CC_SPEC_H

#include <stddef.h>

#include "engine.h"

/* Apply SPEC on top of cfg; 0, or -EINVAL with a reason in err. */
int ur_cc_spec_apply(struct ur_dev_config *cfg, const char *spec, char *err, size_t errlen);
/* Print the knob names and the values in cfg, one "name=value" per line. */
int ur_cc_spec_format(const struct ur_dev_config *cfg, char *buf, size_t len);

#endif
