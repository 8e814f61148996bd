/* SPDX-License-Identifier: BSD-2-Clause */
#include "dp_counters.h"

const char *const uroce_dp_counter_names[DP_CTR_COUNT] = {
#define DP_COUNTER_NAME(name, desc) #name,
	DP_COUNTERS(DP_COUNTER_NAME)
#undef DP_COUNTER_NAME
};
