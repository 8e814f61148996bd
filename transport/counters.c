/* SPDX-License-Identifier: BSD-2-Clause */
#include "counters.h"

#define UR_COUNTER_NAME(name, desc) #name,
const char *const ur_counter_names[UR_CTR_COUNT] = {UR_COUNTERS(UR_COUNTER_NAME)};
#undef UR_COUNTER_NAME

#define UR_COUNTER_DESC(name, desc) desc,
const char *const ur_counter_descs[UR_CTR_COUNT] = {UR_COUNTERS(UR_COUNTER_DESC)};
#undef UR_COUNTER_DESC
