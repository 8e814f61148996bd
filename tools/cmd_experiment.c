/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `uroce-lab experiment NAME`: congestion-control experiments in the simulator,
 * each one command that prints a table and writes CSV and a PNG plot.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cc_spec.h"
#include "experiment.h"
#include "lab.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: uroce-lab experiment <name> [options]\n"
		"\n"
		"  incast     N senders to one receiver at 100 Gb/s (N = 2, 4, 8, 16): DCQCN,\n"
		"             no congestion control with go-back-N, with selective repeat, and PFC\n"
		"  converge   two flows find their fair share: rate versus time (DCQCN)\n"
		"  spray      a permutation, all-to-all or ring all-reduce on a leaf-spine:\n"
		"             go-back-N vs selective repeat under ECMP and per-packet spraying\n"
		"             over skewed paths, with and without DCQCN and PFC\n"
		"  merge      join the CSVs of a sweep's shards (spray --shard i/N)\n"
		"\n"
		"Each prints a table and writes CSV files and a PNG plot (gnuplot) into --out\n"
		"(default ./uroce-experiments). `uroce-lab experiment <name> --help` lists options.\n"
		"The live experiment, two stock ib_write_bw senders through a marking\n"
		"bottleneck between namespaces, is tools/cc-live.\n");
}

int cmd_experiment(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "incast"))
		return exp_incast(argc - 1, argv + 1);
	if (!strcmp(argv[1], "converge"))
		return exp_converge(argc - 1, argv + 1);
	if (!strcmp(argv[1], "spray"))
		return exp_spray(argc - 1, argv + 1);
	if (!strcmp(argv[1], "merge"))
		return exp_merge(argc - 1, argv + 1);
	fprintf(stderr, "uroce-lab experiment: unknown experiment '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}

int exp_mkdir(const char *dir)
{
	int err = make_dirs(dir);

	if (err)
		fprintf(stderr, "uroce-lab experiment: cannot create %s: %s\n", dir, strerror(-err));
	return err ? -1 : 0;
}

FILE *exp_open(const char *dir, const char *name, char *path, size_t len)
{
	FILE *f;

	snprintf(path, len, "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "uroce-lab experiment: cannot write %s: %s\n", path, strerror(errno));
	return f;
}

int exp_gnuplot(const char *script)
{
	FILE *p = popen("gnuplot 2>&1", "w");
	int rc;

	if (!p) {
		fprintf(stderr, "uroce-lab experiment: cannot run gnuplot: %s\n", strerror(errno));
		return -1;
	}
	fputs(script, p);
	rc = pclose(p);
	if (rc) {
		fprintf(stderr, "uroce-lab experiment: gnuplot failed (is gnuplot-nox installed? tools/bootstrap installs it)\n");
		return -1;
	}
	return 0;
}

bool exp_dcqcn_spec(struct sim_incast_cfg *c, const char *spec)
{
	struct ur_dev_config cfg;
	char err[128];

	ur_dev_config_default(&cfg);
	cfg.dcqcn_params = c->dcqcn_params;
	cfg.cnp_interval_ns = c->cnp_interval_ns;
	if (ur_cc_spec_apply(&cfg, spec, err, sizeof(err))) {
		fprintf(stderr, "uroce-lab experiment: --dcqcn: %s\n", err);
		return false;
	}
	c->dcqcn_params = cfg.dcqcn_params;
	c->cnp_interval_ns = cfg.cnp_interval_ns;
	return true;
}

void exp_progress(bool quiet, const char *fmt, ...)
{
	va_list ap;

	if (quiet || !isatty(STDERR_FILENO))
		return;
	fprintf(stderr, "\r");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "   ");
	fflush(stderr);
}

void exp_progress_done(bool quiet)
{
	if (!quiet && isatty(STDERR_FILENO))
		fprintf(stderr, "\r%78s\r", "");
}

bool exp_parse_shard(const char *arg, unsigned *i, unsigned *n)
{
	unsigned a, b;
	char end;

	if (sscanf(arg, "%u/%u%c", &a, &b, &end) != 2 || !b || a >= b)
		return false;
	*i = a;
	*n = b;
	return true;
}

bool exp_parse_names(const char *arg, const char *const *names, unsigned n, bool *on)
{
	char buf[256], *save = NULL;
	bool any = false;

	if (strlen(arg) >= sizeof(buf))
		return false;
	strcpy(buf, arg);
	memset(on, 0, n * sizeof(*on));
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		unsigned i;

		for (i = 0; i < n && strcmp(t, names[i]); i++)
			;
		if (i == n)
			return false;
		on[i] = any = true;
	}
	return any;
}
