/* SPDX-License-Identifier: BSD-2-Clause */
/* The `uroce` command: one function per subcommand, and the argument parsers they share. */
#ifndef UROCE_TOOL_H
#define UROCE_TOOL_H

#include <stdbool.h>
#include <stdint.h>

int cmd_sim(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_experiment(int argc, char **argv);
int cmd_bottleneck(int argc, char **argv);
int cmd_link(int argc, char **argv);
int cmd_env(int argc, char **argv);
int cmd_stat(int argc, char **argv);

/* Create a directory and its missing parents (mkdir -p): 0 or -errno. */
int make_dirs(const char *path);

/* Where the provider library is: next to a build tree's uroce, or installed. */
const char *uroce_provider_path(void);

/* "400G", "25g", "100M", "1e9" -> bits per second; false on nonsense. */
bool parse_rate(const char *s, uint64_t *bps);
/* "10us", "1.5ms", "250ns", "2s" -> picoseconds. */
bool parse_time_ps(const char *s, uint64_t *ps);
/* "4096", "1M", "64K", "1G" (binary multiples) -> bytes. */
bool parse_size(const char *s, uint64_t *bytes);
bool parse_double(const char *s, double *v);
bool parse_u64(const char *s, uint64_t *v);
/* P:D, a reordering: a fraction P in [0, 1] held back by D packet times. */
bool parse_reorder(const char *s, double *p, uint64_t *depth);

#endif
