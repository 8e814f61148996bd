/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `uroce-lab experiment incast`: N senders write to one receiver through one
 * switch port, for N = 2, 4, 8, 16, under four regimes:
 *   dcqcn  RED ECN marking, CNPs and DCQCN, go-back-N, drop-tail buffer
 *   gbn    no congestion control, go-back-N, drop-tail
 *   sr     no congestion control, selective repeat, drop-tail
 *   pfc    no congestion control, go-back-N, PFC (lossless)
 * and reports goodput, link utilisation, Jain's fairness, drops,
 * retransmissions, CNPs, pauses and the bottleneck queue.
 *
 * The runs are numbered (config, then N); `--shard i/N` runs those whose
 * number is i modulo N, every CSV row starts with its run's number and
 * ends with its parameters, and `uroce-lab experiment merge` joins the
 * shards' three CSVs into the unsharded ones, then reports (exp_sweep.c).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "experiment.h"
#include "lab.h"

#define MAX_N 8
#define NCONF 4

static const char *const conf_names[NCONF] = {"dcqcn", "gbn", "sr", "pfc"};

struct incast_opts {
	unsigned n[MAX_N];
	unsigned nn;
	bool conf[NCONF];
	struct sim_incast_cfg base;
	char dcqcn_spec[256]; /* the --dcqcn options given, joined: for the rows' args */
	unsigned shard, nshards;
	bool no_plot;
	const char *out;
	bool quiet;
};

struct series {
	FILE *f;
	unsigned run;
	const char *conf;
	unsigned n;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: uroce-lab experiment incast [options]\n"
		"\n"
		"  --senders N[,..]   incast degrees (2,4,8,16)\n"
		"  --configs C[,..]   dcqcn, gbn, sr, pfc (all four):\n"
		"                     dcqcn: ECN marking + DCQCN, go-back-N, drop-tail;\n"
		"                     gbn / sr: no congestion control, drop-tail, go-back-N or\n"
		"                     selective repeat; pfc: no congestion control, lossless\n"
		"  --rate R           every link (100G)\n"
		"  --rtt T            round-trip propagation time (8us)\n"
		"  --mtu N            path MTU (4096)\n"
		"  --msg-size S       RDMA WRITE message size (64K)\n"
		"  --depth N          messages outstanding per flow (64: 4 MB)\n"
		"  --duration T       simulated time (60ms)\n"
		"  --warmup T         left out of the averages: the incast burst settles (20ms)\n"
		"  --buffer S         bottleneck buffer, drop-tail (16M)\n"
		"  --kmin S --kmax S --pmax P   RED ECN marking, on dequeue (5K, 200K, 0.01)\n"
		"  --xoff S --xon S   PFC thresholds per ingress port (256K, 192K)\n"
		"  --dcqcn SPEC       DCQCN settings: 'paper' (the default: the DCQCN paper's),\n"
		"                     'nvidia' (NVIDIA's documented defaults), then knobs by\n"
		"                     mlx5 name, e.g. nvidia,rpg_byte_reset=0 (see README)\n"
		"  --seed S           (1)\n"
		"  --shard I/N        run only the runs (config, then N, numbered from 0)\n"
		"                     numbered I modulo N; `uroce-lab experiment merge --out\n"
		"                     DIR S0/incast.csv S1/incast.csv...` joins the shards\n"
		"  --out DIR          where incast.csv, incast-flows.csv, incast-queue.csv,\n"
		"                     incast.png go (./uroce-experiments)\n"
		"  --no-plot          no incast.png (no gnuplot needed)\n"
		"  --quiet            no progress on stderr\n");
}

static void sample(void *arg, const struct sim_incast_sample *s)
{
	struct series *se = arg;

	fprintf(se->f, "%u,%s,%u,%.3f,%.1f\n", se->run, se->conf, se->n,
		(double)s->t_ps / SIM_PS_PER_US,
		(double)s->queue_bytes / 1024);
}

static void configure(struct sim_incast_cfg *c, unsigned conf)
{
	c->dcqcn = conf == 0;
	c->mode = conf == 2 ? UR_RETX_SR : UR_RETX_GBN;
	c->pfc = conf == 3;
}

static bool parse_list_u(const char *arg, unsigned *out, unsigned *n)
{
	char buf[256], *save = NULL;

	if (strlen(arg) >= sizeof(buf))
		return false;
	strcpy(buf, arg);
	*n = 0;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		uint64_t v;

		if (*n == MAX_N || !parse_u64(t, &v) || !v || v > SIM_INCAST_MAX)
			return false;
		out[(*n)++] = (unsigned)v;
	}
	return *n > 0;
}

static bool parse_confs(const char *arg, bool *conf)
{
	return exp_parse_names(arg, conf_names, NCONF, conf);
}

int exp_incast_plot(const char *dir, const char *csv, const char *qcsv, uint64_t rate_bps,
		    uint64_t kmax, unsigned nmax)
{
	char script[8192], png[1024];

	snprintf(png, sizeof(png), "%s/incast.png", dir);
	snprintf(script, sizeof(script),
		 "set terminal pngcairo size 1500,520 font ',10'\n"
		 "set output '%s'\n"
		 "set datafile separator ','\n"
		 "set key autotitle columnhead\n"
		 "set multiplot layout 1,3 title 'Incast N to 1 at %.0f Gb/s (uroce simulator)'\n"
		 "set grid\n"
		 "set xlabel 'senders N'\nset logscale x 2\nset xtics (2,4,8,16,32,64)\n"
		 "set xrange [1.6:%u]\n"
		 "set ylabel 'goodput / lossless goodput'\nset yrange [0:1.05]\n"
		 "set key bottom left\n"
		 "plot for [c in 'dcqcn gbn sr pfc'] '%s' using (strcol(2) eq c ? $3 : 1/0):5 "
		 "with linespoints lw 2 title c\n"
		 "set ylabel \"Jain's fairness index\"\nset yrange [0:1.05]\n"
		 "plot for [c in 'dcqcn gbn sr pfc'] '%s' using (strcol(2) eq c ? $3 : 1/0):7 "
		 "with linespoints lw 2 title c\n"
		 "unset logscale x\nset xtics auto\nset xrange [*:*]\n"
		 "set xlabel 'time (ms)'\nset ylabel 'bottleneck queue (KB, log), N = %u'\n"
		 "set logscale y\nset yrange [1:*]\nset key bottom right\n"
		 "set arrow from graph 0, first %.0f to graph 1, first %.0f nohead dt 2 lc 'gray'\n"
		 "set label 'K_{max}' at graph 0.85, first %.0f offset 0,0.7 tc 'gray'\n"
		 "plot for [c in 'dcqcn gbn sr pfc'] '%s' using (strcol(2) eq c ? $4/1000 : 1/0):($5 + 1) "
		 "with lines lw 1 title c\n"
		 "unset multiplot\n",
		 png, (double)rate_bps / 1e9, nmax * 3 / 2, csv, csv, nmax, (double)kmax / 1024,
		 (double)kmax / 1024, (double)kmax / 1024, qcsv);
	if (exp_gnuplot(script))
		return -1;
	printf("plot: %s\n", png);
	return 0;
}

/* The options that run one row alone (quoted when a --dcqcn spec brings commas). */
static void run_args(const struct incast_opts *o, unsigned conf, unsigned n, char *buf,
		     size_t len)
{
	const struct sim_incast_cfg *b = &o->base;
	char dcqcn[300] = "";
	bool quote = strchr(o->dcqcn_spec, ',') != NULL;

	if (o->dcqcn_spec[0])
		snprintf(dcqcn, sizeof(dcqcn), " --dcqcn %s", o->dcqcn_spec);
	snprintf(buf, len,
		 "%s--configs %s --senders %u --rate %" PRIu64 "bps --rtt %" PRIu64
		 "ps --mtu %u --msg-size %u --depth %u --duration %" PRIu64 "ps --warmup %" PRIu64
		 "ps --buffer %" PRIu64 " --kmin %" PRIu64 " --kmax %" PRIu64
		 " --pmax %.17g --xoff %" PRIu64 " --xon %" PRIu64 "%s --seed %" PRIu64 "%s",
		 quote ? "\"" : "", conf_names[conf], n, b->rate_bps, b->rtt_ps, b->mtu,
		 b->msg_size, b->depth, b->duration_ps, b->warmup_ps, b->bottleneck.buffer_bytes,
		 b->bottleneck.ecn_kmin, b->bottleneck.ecn_kmax, b->bottleneck.ecn_pmax, b->pfc_xoff,
		 b->pfc_xon, dcqcn, b->seed, quote ? "\"" : "");
}

int exp_incast(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"senders", required_argument, NULL, 'n'}, {"configs", required_argument, NULL, 'c'},
		{"rate", required_argument, NULL, 'r'},    {"rtt", required_argument, NULL, 't'},
		{"mtu", required_argument, NULL, 'u'},     {"msg-size", required_argument, NULL, 's'},
		{"depth", required_argument, NULL, 'D'},   {"duration", required_argument, NULL, 'T'},
		{"warmup", required_argument, NULL, 'W'},  {"buffer", required_argument, NULL, 'B'},
		{"kmin", required_argument, NULL, 'k'},    {"kmax", required_argument, NULL, 'K'},
		{"pmax", required_argument, NULL, 'p'},    {"xoff", required_argument, NULL, 'x'},
		{"xon", required_argument, NULL, 'X'},     {"dcqcn", required_argument, NULL, 'd'},
		{"seed", required_argument, NULL, 'S'},    {"out", required_argument, NULL, 'o'},
		{"quiet", no_argument, NULL, 'q'},         {"help", no_argument, NULL, 'h'},
		{"shard", required_argument, NULL, 'I'},   {"no-plot", no_argument, NULL, 'P'},
		{NULL, 0, NULL, 0},
	};
	struct incast_opts o = {.n = {2, 4, 8, 16}, .nn = 4, .conf = {true, true, true, true},
				.nshards = 1, .out = "uroce-experiments"};
	struct sim_incast_cfg *b = &o.base;
	struct sim_incast_result res;
	char csv[1024], qcsv[1024], fcsv[1024], args[1024];
	FILE *f, *qf, *ff;
	unsigned nmax = 0, run = 0, nruns = 0;
	uint64_t v;
	int c, rc = 0;

	sim_incast_cfg_default(b);
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		bool ok = true;

		switch (c) {
		case 'n':
			ok = parse_list_u(optarg, o.n, &o.nn);
			break;
		case 'c':
			ok = parse_confs(optarg, o.conf);
			break;
		case 'r':
			ok = parse_rate(optarg, &b->rate_bps) && b->rate_bps >= 1000000;
			break;
		case 't':
			ok = parse_time_ps(optarg, &b->rtt_ps) && b->rtt_ps >= 4000;
			break;
		case 'u':
			ok = parse_u64(optarg, &v) && ur_mtu_enum((uint32_t)v) &&
			     ur_mtu_bytes(ur_mtu_enum((uint32_t)v)) == v;
			b->mtu = (uint32_t)v;
			break;
		case 's':
			ok = parse_size(optarg, &v) && v && v <= (1u << 30);
			b->msg_size = (uint32_t)v;
			break;
		case 'D':
			ok = parse_u64(optarg, &v) && v && v <= 4096;
			b->depth = (uint32_t)v;
			break;
		case 'T':
			ok = parse_time_ps(optarg, &b->duration_ps);
			break;
		case 'W':
			ok = parse_time_ps(optarg, &b->warmup_ps);
			break;
		case 'B':
			ok = parse_size(optarg, &b->bottleneck.buffer_bytes);
			break;
		case 'k':
			ok = parse_size(optarg, &b->bottleneck.ecn_kmin);
			break;
		case 'K':
			ok = parse_size(optarg, &b->bottleneck.ecn_kmax);
			break;
		case 'p':
			ok = parse_double(optarg, &b->bottleneck.ecn_pmax) &&
			     b->bottleneck.ecn_pmax >= 0 && b->bottleneck.ecn_pmax <= 1;
			break;
		case 'x':
			ok = parse_size(optarg, &b->pfc_xoff);
			break;
		case 'X':
			ok = parse_size(optarg, &b->pfc_xon);
			break;
		case 'd':
			ok = exp_dcqcn_spec(b, optarg) &&
			     strlen(o.dcqcn_spec) + strlen(optarg) + 2 < sizeof(o.dcqcn_spec);
			if (ok) /* later specs apply over earlier ones, as one list does */
				snprintf(o.dcqcn_spec + strlen(o.dcqcn_spec),
					 sizeof(o.dcqcn_spec) - strlen(o.dcqcn_spec), "%s%s",
					 o.dcqcn_spec[0] ? "," : "", optarg);
			break;
		case 'I':
			ok = exp_parse_shard(optarg, &o.shard, &o.nshards);
			break;
		case 'P':
			o.no_plot = true;
			break;
		case 'S':
			ok = parse_u64(optarg, &b->seed);
			break;
		case 'o':
			o.out = optarg;
			break;
		case 'q':
			o.quiet = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
		if (!ok) {
			fprintf(stderr, "uroce-lab experiment incast: bad value '%s'\n", optarg);
			return 2;
		}
	}
	if (b->warmup_ps >= b->duration_ps || b->bottleneck.ecn_kmin > b->bottleneck.ecn_kmax ||
	    b->pfc_xon > b->pfc_xoff) {
		fprintf(stderr, "uroce-lab experiment incast: inconsistent options\n");
		return 2;
	}
	for (unsigned i = 0; i < o.nn; i++)
		nmax = o.n[i] > nmax ? o.n[i] : nmax;
	if (exp_mkdir(o.out) || !(f = exp_open(o.out, "incast.csv", csv, sizeof(csv))))
		return 1;
	if (!(qf = exp_open(o.out, "incast-queue.csv", qcsv, sizeof(qcsv)))) {
		fclose(f);
		return 1;
	}
	if (!(ff = exp_open(o.out, "incast-flows.csv", fcsv, sizeof(fcsv)))) {
		fclose(f);
		fclose(qf);
		return 1;
	}
	fprintf(ff, "%s\n", EXP_INCAST_FLOWS_CSV_HEADER);
	fprintf(f, "%s\n", EXP_INCAST_CSV_HEADER);
	fprintf(qf, "%s\n", EXP_INCAST_QUEUE_CSV_HEADER);

	for (unsigned k = 0; k < NCONF; k++)
		nruns += o.conf[k] ? o.nn : 0;
	printf("incast to one receiver: %.0f Gb/s links, RTT %.1f us, MTU %u, %u KB WRITEs x %u "
	       "per flow, %.1f ms (averages after %.1f ms)\n"
	       "bottleneck: %.0f KB drop-tail buffer, RED ECN K_min %.0f KB, K_max %.0f KB, "
	       "P_max %.2f; PFC XOFF %.0f KB, XON %.0f KB",
	       (double)b->rate_bps / 1e9, (double)b->rtt_ps / SIM_PS_PER_US, b->mtu,
	       b->msg_size / 1024, b->depth, (double)b->duration_ps / 1e9,
	       (double)b->warmup_ps / 1e9, (double)b->bottleneck.buffer_bytes / 1024,
	       (double)b->bottleneck.ecn_kmin / 1024, (double)b->bottleneck.ecn_kmax / 1024,
	       b->bottleneck.ecn_pmax, (double)b->pfc_xoff / 1024, (double)b->pfc_xon / 1024);
	if (o.nshards > 1)
		printf("; shard %u/%u of %u runs", o.shard, o.nshards, nruns);
	printf("\n\n");
	for (unsigned k = 0; k < NCONF; k++) {
		if (!o.conf[k])
			continue;
		for (unsigned i = 0; i < o.nn; i++, run++) {
			struct sim_incast_cfg cfg = *b;
			struct sim_incast_result *r = &res;
			struct series se = {qf, run, conf_names[k], o.n[i]};

			if (run % o.nshards != o.shard)
				continue;
			configure(&cfg, k);
			cfg.senders = o.n[i];
			if (o.n[i] == nmax) {
				cfg.sample_ps = 10 * SIM_PS_PER_US;
				cfg.sample = sample;
				cfg.arg = &se;
			}
			exp_progress(o.quiet, "[incast] %s, N = %u ...", conf_names[k], o.n[i]);
			if (sim_incast_run(&cfg, r)) {
				exp_progress_done(o.quiet);
				fprintf(stderr, "uroce-lab experiment incast: cannot build the scenario\n");
				rc = 1;
				goto out;
			}
			exp_progress_done(o.quiet);
			run_args(&o, k, o.n[i], args, sizeof(args));
			fprintf(f, "%u,%s,%u,%.4f,%.5f,%.5f,%.5f,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%.5f,%.3f,%.3f,%.3f,%llu,"
				   "%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%s\n",
				run, conf_names[k], o.n[i], r->goodput_gbps, r->goodput_fraction,
				r->utilisation, r->jain, (unsigned long long)r->drops,
				(unsigned long long)r->retx_packets, (unsigned long long)r->timeouts,
				(unsigned long long)r->marked, (unsigned long long)r->cnps,
				(unsigned long long)r->cnps_handled, (unsigned long long)r->pauses,
				r->paused_fraction, (double)r->queue_max / 1024,
				(double)r->queue_p99 / 1024, (double)r->queue_mean / 1024,
				(unsigned long long)r->errors, b->rate_bps, b->bottleneck.ecn_kmax, b->seed,
				args);
			for (unsigned j = 0; j < o.n[i]; j++)
				fprintf(ff, "%u,%s,%u,%u,%.4f\n", run, conf_names[k], o.n[i], j + 1,
					r->flow_gbps[j]);
		}
	}
out:
	if (fclose(f) | fclose(qf) | fclose(ff))
		rc = 1;
	if (rc)
		return rc;
	printf("csv: %s, %s, %s\n", csv, fcsv, qcsv);
	/* the table comes from the CSV, as a merge of shards prints it */
	return exp_incast_report(o.out, o.nshards == 1 && !o.no_plot, o.nshards == 1) ? 1 : 0;
}
