/* SPDX-License-Identifier: BSD-2-Clause */
/* What the two programs, `uroce` and `uroce-lab`, share: argument parsers and mkdir -p. */
#ifndef UROCE_CLI_H
#define UROCE_CLI_H

#include <stdbool.h>
#include <stdint.h>

/* Create a directory and its missing parents (mkdir -p): 0 or -errno. */
int make_dirs(const char *path);

/* "400G", "25g", "100M", "1e9" -> bits per second; false on nonsense. */
bool parse_rate(const char *s, uint64_t *bps);
/* "10us", "1.5ms", "250ns", "2s" -> picoseconds. */
bool parse_time_ps(const char *s, uint64_t *ps);
/* "4096", "1M", "64K", "1G" (binary multiples) -> bytes. */
bool parse_size(const char *s, uint64_t *bytes);
bool parse_double(const char *s, double *v);
bool parse_u64(const char *s, uint64_t *v);
/* P[:D], a reordering: a fraction P in [0, 1] held back by D packet times (D > 0). */
#define REORDER_DEPTH_DEFAULT 4 /* as tools/soak's: a few frames, within one burst of 32 */
bool parse_reorder(const char *s, double *p, uint64_t *depth);

#endif
