/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * How busy the host was around a live measurement: CPU steal and iowait
 * from /proc/stat, runnable threads and the load average from /proc/loadavg.
 */
#ifndef UROCE_HOST_LOAD_H
#define UROCE_HOST_LOAD_H

#include <stdint.h>

struct host_load {
	uint64_t total; /* all CPUs' jiffies, every state */
	uint64_t iowait;
	uint64_t steal;
	unsigned runnable; /* runnable threads now, this reader included */
	double load1;	   /* the 1-minute load average */
};

/* The aggregate "cpu " line of /proc/stat; -1 if it is not one. */
int host_load_parse_stat(const char *line, struct host_load *l);
/* The content of /proc/loadavg ("0.52 0.40 0.33 2/345 6789"); -1 if malformed. */
int host_load_parse_loadavg(const char *text, struct host_load *l);
/* Both files now; -1 (and zeros) if either cannot be read. */
int host_load_read(struct host_load *l);
/* Steal and iowait between two readings, in percent of all CPU time. */
void host_load_between(const struct host_load *before, const struct host_load *after,
		       double *steal_pct, double *iowait_pct);

#endif
