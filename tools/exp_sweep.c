/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What is done with a sweep's CSV once its runs are in: `uroce-lab
 * experiment merge` joins the shards of a sweep run with --shard i/N (each
 * row carries its run's number, so the joined file is the unsharded one
 * byte for byte), and the spray report reads spray.csv back: go-back-N
 * beside selective repeat for each path, congestion control and PFC
 * setting, IRN's claim as a ratio, and the plot. The report reads the CSV,
 * not the runs, so a merged sweep gets the same report as a whole one.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "experiment.h"

/* A CSV file as lines: the header, then the rows. */
struct csv {
	char *header;
	char **rows;
	unsigned n;
	unsigned cap;
};

static void csv_free(struct csv *c)
{
	free(c->header);
	for (unsigned i = 0; i < c->n; i++)
		free(c->rows[i]);
	free(c->rows);
	memset(c, 0, sizeof(*c));
}

static int csv_push(struct csv *c, const char *line)
{
	if (c->n == c->cap) {
		unsigned cap = c->cap ? 2 * c->cap : 64;
		char **r = realloc(c->rows, cap * sizeof(*r));

		if (!r)
			return -1;
		c->rows = r;
		c->cap = cap;
	}
	if (!(c->rows[c->n] = strdup(line)))
		return -1;
	c->n++;
	return 0;
}

/* Append the rows of `path` to `c` (whose header, once set, the file must have). */
static int csv_read(struct csv *c, const char *path)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	bool first = true;
	int rc = 0;

	if (!f) {
		fprintf(stderr, "uroce-lab experiment: cannot read %s\n", path);
		return -1;
	}
	while (!rc && (len = getline(&line, &cap, f)) > 0) {
		if (line[len - 1] == '\n')
			line[--len] = 0;
		if (first) {
			first = false;
			if (!c->header) {
				if (!(c->header = strdup(line)))
					rc = -1;
			} else if (strcmp(c->header, line)) {
				fprintf(stderr, "uroce-lab experiment: %s has other columns\n",
					path);
				rc = -1;
			}
		} else if (len) {
			rc = csv_push(c, line);
		}
	}
	free(line);
	fclose(f);
	if (first && !rc) {
		fprintf(stderr, "uroce-lab experiment: %s is empty\n", path);
		rc = -1;
	}
	return rc;
}

/* Field `col` of a row, copied into buf. */
static const char *field(const char *row, unsigned col, char *buf, size_t len)
{
	const char *end;
	size_t n;

	for (unsigned i = 0; i < col && row; i++) {
		row = strchr(row, ',');
		if (row)
			row++;
	}
	if (!row)
		return "";
	end = strchr(row, ',');
	n = end ? (size_t)(end - row) : strlen(row);
	if (n >= len)
		n = len - 1;
	memcpy(buf, row, n);
	buf[n] = 0;
	return buf;
}

static int column(const char *header, const char *name)
{
	char buf[64];

	for (unsigned i = 0; *field(header, i, buf, sizeof(buf)); i++)
		if (!strcmp(buf, name))
			return (int)i;
	return -1;
}

static double num(const char *row, int col)
{
	char buf[64];

	return col < 0 ? 0 : strtod(field(row, (unsigned)col, buf, sizeof(buf)), NULL);
}

static int by_run(const void *a, const void *b)
{
	unsigned long x = strtoul(*(char *const *)a, NULL, 10),
		      y = strtoul(*(char *const *)b, NULL, 10);

	return x < y ? -1 : x > y;
}

/* Rows by run, in file order within a run (qsort is not stable: a run has many). */
struct keyed_row {
	unsigned long run;
	unsigned idx;
	char *row;
};

static int by_run_then_idx(const void *a, const void *b)
{
	const struct keyed_row *x = a, *y = b;

	if (x->run != y->run)
		return x->run < y->run ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/*
 * An incast shard's other CSVs (per flow, queue samples) sit beside its
 * incast.csv: join them too, rows of a run kept in their order.
 */
static int merge_sibling(const char *out, const char *name, char **inputs, int n)
{
	struct csv c = {0};
	struct keyed_row *k = NULL;
	char path[1024];
	FILE *f;
	int rc = -1;

	for (int i = 0; i < n; i++) {
		const char *slash = strrchr(inputs[i], '/');
		int dlen = slash ? (int)(slash - inputs[i]) + 1 : 0;

		snprintf(path, sizeof(path), "%.*s%s", dlen, inputs[i], name);
		if (csv_read(&c, path))
			goto out;
	}
	if (!(k = calloc(c.n ? c.n : 1, sizeof(*k))))
		goto out;
	for (unsigned i = 0; i < c.n; i++)
		k[i] = (struct keyed_row){strtoul(c.rows[i], NULL, 10), i, c.rows[i]};
	qsort(k, c.n, sizeof(*k), by_run_then_idx);
	if (!(f = exp_open(out, name, path, sizeof(path))))
		goto out;
	fprintf(f, "%s\n", c.header);
	for (unsigned i = 0; i < c.n; i++)
		fprintf(f, "%s\n", k[i].row);
	if (fclose(f))
		goto out;
	printf("merged %u rows: %s\n", c.n, path);
	rc = 0;
out:
	free(k);
	csv_free(&c);
	return rc;
}

static void merge_usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: uroce-lab experiment merge [--out DIR] [--no-plot] SHARD.csv...\n"
	    "\n"
	    "Join the CSVs of a sweep's shards (--shard i/N) into DIR/NAME, NAME the\n"
	    "shards' file name, rows in run order: the CSV the unsharded sweep writes.\n"
	    "Every run must be there exactly once. For spray.csv and incast.csv, then\n"
	    "print the report and draw the plot as the unsharded sweep does; incast.csv\n"
	    "brings the incast-flows.csv and incast-queue.csv beside each shard's.\n"
	    "(--out: ./uroce-experiments)\n");
}

int exp_merge(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"out", required_argument, NULL, 'O'},
	    {"no-plot", no_argument, NULL, 'n'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *out = "uroce-experiments", *name;
	struct csv c = {0};
	char path[1024];
	FILE *f;
	int opt, rc = 1;
	bool plot = true;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (opt == 'O') {
			out = optarg;
		} else if (opt == 'n') {
			plot = false;
		} else if (opt == 'h') {
			merge_usage(stdout);
			return 0;
		} else {
			merge_usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		merge_usage(stderr);
		return 2;
	}
	for (int i = optind; i < argc; i++)
		if (csv_read(&c, argv[i]))
			goto out;
	if (column(c.header, "run") != 0) {
		fprintf(stderr, "uroce-lab experiment merge: the first column is not `run`\n");
		goto out;
	}
	qsort(c.rows, c.n, sizeof(*c.rows), by_run);
	for (unsigned i = 0; i < c.n; i++) {
		unsigned long run = strtoul(c.rows[i], NULL, 10);

		if (run != i) {
			fprintf(stderr, "uroce-lab experiment merge: run %u is %s\n", i,
				run < i ? "there twice" : "missing");
			goto out;
		}
	}
	name = strrchr(argv[optind], '/');
	name = name ? name + 1 : argv[optind];
	if (exp_mkdir(out) || !(f = exp_open(out, name, path, sizeof(path))))
		goto out;
	fprintf(f, "%s\n", c.header);
	for (unsigned i = 0; i < c.n; i++)
		fprintf(f, "%s\n", c.rows[i]);
	if (fclose(f))
		goto out;
	printf("merged %u runs from %d files: %s\n", c.n, argc - optind, path);
	rc = 0;
	if (!strcmp(c.header, EXP_SPRAY_CSV_HEADER) && !strcmp(name, "spray.csv"))
		rc = exp_spray_report(out, plot) ? 1 : 0;
	if (!strcmp(c.header, EXP_INCAST_CSV_HEADER) && !strcmp(name, "incast.csv"))
		rc = merge_sibling(out, "incast-flows.csv", argv + optind, argc - optind) ||
				     merge_sibling(out, "incast-queue.csv", argv + optind,
						   argc - optind) ||
				     exp_incast_report(out, plot, true)
			 ? 1
			 : 0;
out:
	csv_free(&c);
	return rc;
}

/* One cell of the pivot: a path, cc and PFC setting, go-back-N and SR side by side. */
struct cell {
	char path[32], cc[16], pfc[8];
	const char *row[2]; /* gbn, sr */
};

static int find_cell(struct cell *cells, unsigned *n, const char *path, const char *cc,
		     const char *pfc)
{
	for (unsigned i = 0; i < *n; i++)
		if (!strcmp(cells[i].path, path) && !strcmp(cells[i].cc, cc) &&
		    !strcmp(cells[i].pfc, pfc))
			return (int)i;
	snprintf(cells[*n].path, sizeof(cells[*n].path), "%s", path);
	snprintf(cells[*n].cc, sizeof(cells[*n].cc), "%s", cc);
	snprintf(cells[*n].pfc, sizeof(cells[*n].pfc), "%s", pfc);
	cells[*n].row[0] = cells[*n].row[1] = NULL;
	return (int)(*n)++;
}

static int write_plot(const char *dir, const char *pcsv, const struct csv *c)
{
	const char *r = c->rows[0];
	char script[8192], png[1024], work[32];

	snprintf(png, sizeof(png), "%s/spray.png", dir);
	field(r, (unsigned)column(c->header, "workload"), work, sizeof(work));
	snprintf(
	    script, sizeof(script),
	    "set terminal pngcairo size 1600,560 font ',10'\n"
	    "set output '%s'\n"
	    "set datafile separator ','\n"
	    "set multiplot layout 1,3 title '%s on a %.0f-leaf %.0f-spine fabric, %.0f hosts at "
	    "%.0f Gb/s, %.0f KB %s, +%.1f us per spine (uroce simulator, seed %.0f)'\n"
	    "set style data histogram\nset style histogram clustered gap 1\n"
	    "set style fill solid 0.8 border -1\nset boxwidth 0.9\n"
	    "set grid ytics\nset xtics rotate by -35\nset key top right\n"
	    "lab(x) = stringcolumn(1).' '.stringcolumn(2).' pfc-'.stringcolumn(3)\n"
	    "set ylabel 'aggregate goodput / line rate'\nset yrange [0:1.1]\n"
	    "plot '%s' using 4:xtic(lab(0)) skip 1 title 'go-back-N', "
	    "'' using 5 skip 1 title 'selective repeat'\n"
	    "set ylabel 'FCT p99 / ideal FCT'\nset yrange [0:*]\n"
	    "plot '%s' using 6:xtic(lab(0)) skip 1 title 'go-back-N', "
	    "'' using 7 skip 1 title 'selective repeat'\n"
	    "set ylabel 'retransmitted packets + 1 (log)'\nset logscale y\nset yrange [0.5:*]\n"
	    "plot '%s' using ($8+1):xtic(lab(0)) skip 1 title 'go-back-N', "
	    "'' using ($9+1) skip 1 title 'selective repeat'\n"
	    "unset multiplot\n",
	    png, work, num(r, column(c->header, "leaves")), num(r, column(c->header, "spines")),
	    num(r, column(c->header, "hosts_per_leaf")) * num(r, column(c->header, "leaves")),
	    num(r, column(c->header, "host_bps")) / 1e9,
	    num(r, column(c->header, "flow_bytes")) / 1024,
	    strcmp(work, "allreduce") ? "flows" : "chunks",
	    num(r, column(c->header, "skew_ps")) / 1e6, num(r, column(c->header, "seed")), pcsv,
	    pcsv, pcsv);
	if (exp_gnuplot(script))
		return -1;
	printf("plot: %s\n", png);
	return 0;
}

int exp_spray_report(const char *dir, bool plot)
{
	struct csv c = {0};
	struct cell *cells = NULL;
	unsigned ncell = 0, both = 0;
	int cpath, ccc, cpfc, cmode, cfrac, cx, cretx, cgood, cp99, cdone, cerr, cflows, cok;
	char path[1024], pcsv[1024], icsv[1024], b1[32], b2[32], b3[32], b4[8];
	FILE *pf = NULL, *irn = NULL;
	int rc = -1;

	snprintf(path, sizeof(path), "%s/spray.csv", dir);
	if (csv_read(&c, path) || !c.n)
		goto out;
	cpath = column(c.header, "path");
	ccc = column(c.header, "cc");
	cpfc = column(c.header, "pfc");
	cmode = column(c.header, "mode");
	cfrac = column(c.header, "goodput_fraction");
	cx = column(c.header, "fct_p99_over_ideal");
	cretx = column(c.header, "retx_packets");
	cgood = column(c.header, "goodput_gbps");
	cp99 = column(c.header, "fct_p99_us");
	cdone = column(c.header, "done_us");
	cerr = column(c.header, "errors");
	cflows = column(c.header, "flows");
	cok = column(c.header, "flows_done");
	cells = calloc(c.n, sizeof(*cells));
	if (!cells || cpath < 0 || ccc < 0 || cpfc < 0 || cmode < 0)
		goto out;
	for (unsigned i = 0; i < c.n; i++) {
		const char *r = c.rows[i];
		int k = find_cell(cells, &ncell, field(r, (unsigned)cpath, b1, sizeof(b1)),
				  field(r, (unsigned)ccc, b2, sizeof(b2)),
				  field(r, (unsigned)cpfc, b3, sizeof(b3)));

		cells[k].row[strcmp(field(r, (unsigned)cmode, b4, sizeof(b4)), "sr") == 0] = r;
	}
	if (!(pf = exp_open(dir, "spray-plot.csv", pcsv, sizeof(pcsv))) ||
	    !(irn = exp_open(dir, "spray-irn.csv", icsv, sizeof(icsv))))
		goto out;
	fprintf(pf, "path,cc,pfc,gbn_fraction,sr_fraction,gbn_p99_x,sr_p99_x,gbn_retx,sr_retx\n");
	for (unsigned i = 0; i < ncell; i++) {
		const char *g = cells[i].row[0], *s = cells[i].row[1];

		if (!g || !s)
			continue;
		both++;
		fprintf(pf, "%s,%s,%s,%.5f,%.5f,%.4f,%.4f,%.0f,%.0f\n", cells[i].path, cells[i].cc,
			cells[i].pfc, num(g, cfrac), num(s, cfrac), num(g, cx), num(s, cx),
			num(g, cretx), num(s, cretx));
	}
	/*
	 * IRN (SIGCOMM 2018): selective repeat without PFC should do at least
	 * as well as go-back-N with it. The ratio is SR-without-PFC's goodput
	 * over GBN-with-PFC's (for an all-reduce, the inverse ratio of their
	 * completion times): 1 or more and the claim holds here.
	 */
	fprintf(irn, "path,cc,sr_nopfc_gbps,gbn_pfc_gbps,goodput_ratio,sr_nopfc_p99_us,"
		     "gbn_pfc_p99_us,sr_nopfc_done_us,gbn_pfc_done_us\n");
	for (unsigned i = 0; i < ncell; i++) {
		const char *s = cells[i].row[1], *g = NULL;

		if (!s || strcmp(cells[i].pfc, "off"))
			continue;
		for (unsigned j = 0; j < ncell; j++)
			if (!strcmp(cells[j].path, cells[i].path) &&
			    !strcmp(cells[j].cc, cells[i].cc) && !strcmp(cells[j].pfc, "on"))
				g = cells[j].row[0];
		if (!g)
			continue;
		printf("IRN's claim, %s, cc %s: SR without PFC %.0f Gb/s (p99 %.1f us) = %.3f x "
		       "GBN with PFC (%.0f Gb/s, p99 %.1f us)\n",
		       cells[i].path, cells[i].cc, num(s, cgood), num(s, cp99),
		       num(g, cgood) > 0 ? num(s, cgood) / num(g, cgood) : 0, num(g, cgood),
		       num(g, cp99));
		fprintf(irn, "%s,%s,%.4f,%.4f,%.4f,%.3f,%.3f,%.3f,%.3f\n", cells[i].path,
			cells[i].cc, num(s, cgood), num(g, cgood),
			num(g, cgood) > 0 ? num(s, cgood) / num(g, cgood) : 0, num(s, cp99),
			num(g, cp99), num(s, cdone), num(g, cdone));
	}
	/* a merged sweep has no table: its failed runs are named here */
	for (unsigned i = 0; i < c.n && cerr >= 0 && cflows >= 0 && cok >= 0; i++) {
		const char *r = c.rows[i];
		char b5[16];

		if (num(r, cerr) > 0 || num(r, cok) < num(r, cflows))
			printf("!! run %s (%s %s pfc %s %s): %.0f error completions, %.0f of %.0f "
			       "flows unfinished\n",
			       field(r, 0, b5, sizeof(b5)), field(r, (unsigned)cpath, b1, sizeof(b1)),
			       field(r, (unsigned)ccc, b2, sizeof(b2)),
			       field(r, (unsigned)cpfc, b3, sizeof(b3)),
			       field(r, (unsigned)cmode, b4, sizeof(b4)), num(r, cerr),
			       num(r, cflows) - num(r, cok), num(r, cflows));
	}
	if (fclose(pf) | fclose(irn)) {
		pf = irn = NULL;
		goto out;
	}
	pf = irn = NULL;
	printf("csv: %s, %s\n", pcsv, icsv);
	rc = both && plot ? write_plot(dir, pcsv, &c) : 0;
out:
	if (pf)
		fclose(pf);
	if (irn)
		fclose(irn);
	free(cells);
	csv_free(&c);
	return rc;
}

static const char *const incast_conf[] = {"dcqcn", "gbn", "sr", "pfc"};
static const char *const incast_desc[] = {
    "DCQCN + ECN, go-back-N", "no CC, go-back-N", "no CC, selective repeat", "no CC, PFC"};

int exp_incast_report(const char *dir, bool plot, bool whole)
{
	static const char *const cols[] = {
	    "config",	"senders",   "goodput_gbps", "goodput_fraction", "utilisation",
	    "jain",	"drops",     "retx_packets", "timeouts",	 "ce_marked",
	    "cnps_sent", "pauses",    "queue_max_kb", "queue_p99_kb",	 "queue_mean_kb",
	    "errors",	"rate_bps",  "kmax_bytes",
	};
	enum { CONF, N, GOOD, FRAC, UTIL, JAIN, DROPS, RETX, TOUTS, CE, CNPS, PAUSES, QMAX, QP99,
	       QMEAN, ERR, RATE, KMAX, NCOL };
	struct csv c = {0};
	int col[NCOL];
	char path[1024], qpath[1024], conf[16];
	bool seen[4] = {false}, dcqcn = false, pass = true;
	unsigned nmax = 0;
	int rc = -1;

	snprintf(path, sizeof(path), "%s/incast.csv", dir);
	snprintf(qpath, sizeof(qpath), "%s/incast-queue.csv", dir);
	if (csv_read(&c, path))
		goto out;
	for (unsigned i = 0; i < NCOL; i++)
		if ((col[i] = column(c.header, cols[i])) < 0) {
			fprintf(stderr, "uroce-lab experiment: %s has no column %s\n", path,
				cols[i]);
			goto out;
		}
	printf("%-6s %3s %9s %8s %6s %6s %8s %8s %6s %8s %8s %7s %9s %9s %9s\n", "config", "N",
	       "goodput", "of max", "util", "Jain", "drops", "retx", "t/outs", "CE", "CNPs",
	       "pauses", "qmax KB", "q p99 KB", "qmean KB");
	for (unsigned i = 0; i < c.n; i++) {
		const char *r = c.rows[i];

		field(r, (unsigned)col[CONF], conf, sizeof(conf));
		for (unsigned k = 0; k < 4; k++)
			seen[k] |= !strcmp(conf, incast_conf[k]);
		if ((unsigned)num(r, col[N]) > nmax)
			nmax = (unsigned)num(r, col[N]);
		printf("%-6s %3.0f %6.1f Gb %7.1f%% %5.1f%% %6.3f %8.0f %8.0f %6.0f %8.0f %8.0f %7.0f "
		       "%9.0f %9.0f %9.0f\n",
		       conf, num(r, col[N]), num(r, col[GOOD]), 100 * num(r, col[FRAC]),
		       100 * num(r, col[UTIL]), num(r, col[JAIN]), num(r, col[DROPS]),
		       num(r, col[RETX]), num(r, col[TOUTS]), num(r, col[CE]), num(r, col[CNPS]),
		       num(r, col[PAUSES]), num(r, col[QMAX]), num(r, col[QP99]),
		       num(r, col[QMEAN]));
		if (num(r, col[ERR]) > 0)
			printf("       !! %.0f error completions\n", num(r, col[ERR]));
		if (!strcmp(conf, "dcqcn")) {
			dcqcn = true;
			pass &= !num(r, col[DROPS]) && num(r, col[UTIL]) >= 0.90 &&
				num(r, col[JAIN]) >= 0.95 && !num(r, col[ERR]);
		}
	}
	printf("\n");
	for (unsigned k = 0; k < 4; k++)
		if (seen[k])
			printf("  %-6s %s\n", incast_conf[k], incast_desc[k]);
	printf("goodput: bytes the receiver placed after warm-up; of max: of the lossless goodput\n"
	       "of the link; util: bottleneck busy time; Jain over per-flow goodput (messages\n"
	       "each flow completed after warm-up); queue p99\n"
	       "and mean after warm-up, qmax over the whole run (the first burst included).\n");
	if (whole && dcqcn)
		printf("DCQCN: %s (no drops, utilisation >= 90%%, Jain >= 0.95 at every N)\n",
		       pass ? "all hold" : "NOT all hold");
	rc = 0;
	if (plot && c.n)
		rc = exp_incast_plot(dir, path, qpath, (uint64_t)num(c.rows[0], col[RATE]),
				     (uint64_t)num(c.rows[0], col[KMAX]), nmax);
out:
	csv_free(&c);
	return rc;
}
