/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A live round is only as good as the host it ran on: on this shared
 * machine a neighbour's build steals the CPU uroce's dataplane polls on.
 * proc(5) gives the evidence: /proc/stat's cpu line (user nice system idle
 * iowait irq softirq steal ...) and /proc/loadavg's running/total field.
 */
#include <stdio.h>
#include <string.h>

#include "host_load.h"

int host_load_parse_stat(const char *line, struct host_load *l)
{
	unsigned long long v[10] = {0};
	int n;

	if (strncmp(line, "cpu ", 4))
		return -1;
	n = sscanf(line + 4, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
		   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
	if (n < 4)
		return -1;
	/* guest and guest_nice (8, 9) are already counted in user and nice. */
	l->total = 0;
	for (int i = 0; i < n && i < 8; i++)
		l->total += v[i];
	l->iowait = n > 4 ? v[4] : 0;
	l->steal = n > 7 ? v[7] : 0;
	return 0;
}

int host_load_parse_loadavg(const char *text, struct host_load *l)
{
	double l5, l15;
	unsigned running, total;

	if (sscanf(text, "%lf %lf %lf %u/%u", &l->load1, &l5, &l15, &running, &total) != 5)
		return -1;
	l->runnable = running;
	return 0;
}

int host_load_read(struct host_load *l)
{
	char line[512];
	FILE *f;
	int rc = -1;

	memset(l, 0, sizeof(*l));
	f = fopen("/proc/stat", "r");
	if (!f)
		return -1;
	if (fgets(line, sizeof(line), f))
		rc = host_load_parse_stat(line, l);
	fclose(f);
	f = fopen("/proc/loadavg", "r");
	if (!f)
		return -1;
	if (!fgets(line, sizeof(line), f) || host_load_parse_loadavg(line, l))
		rc = -1;
	fclose(f);
	return rc;
}

void host_load_between(const struct host_load *before, const struct host_load *after,
		       double *steal_pct, double *iowait_pct)
{
	uint64_t total = after->total - before->total;

	*steal_pct = total ? 100.0 * (double)(after->steal - before->steal) / (double)total : 0;
	*iowait_pct = total ? 100.0 * (double)(after->iowait - before->iowait) / (double)total : 0;
}
