/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `uroce-lab experiment converge`: flows join one after the other on the same
 * bottleneck and DCQCN moves them to their fair share; throughput and the
 * DCQCN rate of every flow are sampled over time, the plot the DCQCN paper
 * shows (Zhu et al., SIGCOMM 2015, figure 12).
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "experiment.h"
#include "lab.h"

struct conv {
	FILE *f;
	unsigned n;
	uint64_t print_every_ps;
	uint64_t next_print_ps;
	double avg[SIM_INCAST_MAX]; /* throughput since the last printed row */
	unsigned navg;
	uint64_t start_ps[SIM_INCAST_MAX];
	/* convergence: the last 1 ms window in which a flow was not within 10% of
	 * the fair share of what the bottleneck delivered */
	double win[SIM_INCAST_MAX];
	unsigned nwin;
	uint64_t win_start_ps;
	uint64_t all_in_ps;
	uint64_t last_unfair_ps;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: uroce-lab experiment converge [options]\n"
		"\n"
		"  --flows N          flows, each from its own sender (2)\n"
		"  --stagger T        flow i starts at i x T (10ms)\n"
		"  --rate R           every link (100G)\n"
		"  --rtt T            round-trip propagation time (8us)\n"
		"  --duration T       simulated time (60ms)\n"
		"  --sample T         time series period (50us)\n"
		"  --kmin S --kmax S --pmax P   RED ECN marking, on dequeue (5K, 200K, 0.01)\n"
		"  --dcqcn SPEC       'paper' (default), 'nvidia', then knobs by mlx5 name\n"
		"  --seed S           (1)\n"
		"  --out DIR          where converge.csv and converge.png go (./uroce-experiments)\n"
		"  --quiet            no progress on stderr\n");
}

static void sample(void *arg, const struct sim_incast_sample *s)
{
	struct conv *cv = arg;
	double fair;
	unsigned active = 0;

	fprintf(cv->f, "%.3f,%.1f", (double)s->t_ps / 1e9, (double)s->queue_bytes / 1024);
	for (unsigned i = 0; i < s->senders; i++)
		fprintf(cv->f, ",%.3f,%.3f", s->gbps[i], s->rate_gbps[i]);
	fprintf(cv->f, "\n");
	for (unsigned i = 0; i < s->senders; i++) {
		cv->avg[i] += s->gbps[i];
		cv->win[i] += s->gbps[i];
		active += s->t_ps > cv->start_ps[i];
	}
	cv->navg++;
	cv->nwin++;
	/* every 1 ms after the last flow joined: are all within 10% of the fair share? */
	if (s->t_ps - cv->win_start_ps >= 1000 * SIM_PS_PER_US) {
		if (active == s->senders) {
			fair = 0;
			for (unsigned i = 0; i < s->senders; i++)
				fair += cv->win[i] / cv->nwin / active;
			for (unsigned i = 0; i < s->senders; i++)
				if (fabs(cv->win[i] / cv->nwin - fair) > 0.1 * fair)
					cv->last_unfair_ps = s->t_ps;
			if (!cv->all_in_ps)
				cv->all_in_ps = s->t_ps;
		}
		memset(cv->win, 0, sizeof(cv->win));
		cv->nwin = 0;
		cv->win_start_ps = s->t_ps;
	}
	if (s->t_ps >= cv->next_print_ps) {
		printf("%8.1f %9.0f", (double)s->t_ps / 1e9, (double)s->queue_bytes / 1024);
		for (unsigned i = 0; i < s->senders; i++)
			printf(" %9.2f", cv->avg[i] / cv->navg);
		printf("\n");
		memset(cv->avg, 0, sizeof(cv->avg));
		cv->navg = 0;
		cv->next_print_ps += cv->print_every_ps;
	}
}

int exp_converge(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"flows", required_argument, NULL, 'n'},   {"stagger", required_argument, NULL, 'g'},
		{"rate", required_argument, NULL, 'r'},    {"rtt", required_argument, NULL, 't'},
		{"duration", required_argument, NULL, 'T'}, {"sample", required_argument, NULL, 'p'},
		{"kmin", required_argument, NULL, 'k'},    {"kmax", required_argument, NULL, 'K'},
		{"pmax", required_argument, NULL, 'P'},    {"dcqcn", required_argument, NULL, 'd'},
		{"seed", required_argument, NULL, 'S'},    {"out", required_argument, NULL, 'o'},
		{"quiet", no_argument, NULL, 'q'},         {"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct sim_incast_cfg c;
	struct sim_incast_result r;
	struct conv cv;
	const char *out = "uroce-experiments";
	uint64_t stagger = 10 * SIM_PS_PER_US * 1000, v;
	char csv[1024], png[1024], script[8192], cols[4096];
	bool quiet = false;
	int opt, rc = 0;

	sim_incast_cfg_default(&c);
	c.duration_ps = 60 * SIM_PS_PER_US * 1000;
	c.sample_ps = 50 * SIM_PS_PER_US;
	c.bottleneck.buffer_bytes = 16u << 20;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		bool ok = true;

		switch (opt) {
		case 'n':
			ok = parse_u64(optarg, &v) && v >= 1 && v <= 8;
			c.senders = (unsigned)v;
			break;
		case 'g':
			ok = parse_time_ps(optarg, &stagger);
			break;
		case 'r':
			ok = parse_rate(optarg, &c.rate_bps) && c.rate_bps >= 1000000;
			break;
		case 't':
			ok = parse_time_ps(optarg, &c.rtt_ps) && c.rtt_ps >= 4000;
			break;
		case 'T':
			ok = parse_time_ps(optarg, &c.duration_ps) && c.duration_ps;
			break;
		case 'p':
			ok = parse_time_ps(optarg, &c.sample_ps) && c.sample_ps >= SIM_PS_PER_US;
			break;
		case 'k':
			ok = parse_size(optarg, &c.bottleneck.ecn_kmin);
			break;
		case 'K':
			ok = parse_size(optarg, &c.bottleneck.ecn_kmax);
			break;
		case 'P':
			ok = parse_double(optarg, &c.bottleneck.ecn_pmax) && c.bottleneck.ecn_pmax >= 0 &&
			     c.bottleneck.ecn_pmax <= 1;
			break;
		case 'd':
			ok = exp_dcqcn_spec(&c, optarg);
			break;
		case 'S':
			ok = parse_u64(optarg, &c.seed);
			break;
		case 'o':
			out = optarg;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
		if (!ok) {
			fprintf(stderr, "uroce-lab experiment converge: bad value '%s'\n", optarg);
			return 2;
		}
	}
	memset(&cv, 0, sizeof(cv));
	cv.n = c.senders;
	for (unsigned i = 0; i < c.senders; i++)
		cv.start_ps[i] = c.start_ps[i] = i * stagger;
	c.warmup_ps = c.start_ps[c.senders - 1] + stagger / 2;
	if (c.warmup_ps >= c.duration_ps) {
		fprintf(stderr, "uroce-lab experiment converge: --duration must exceed the last start\n");
		return 2;
	}
	cv.print_every_ps = c.duration_ps / 24;
	cv.next_print_ps = cv.print_every_ps;
	if (exp_mkdir(out) || !(cv.f = exp_open(out, "converge.csv", csv, sizeof(csv))))
		return 1;
	fprintf(cv.f, "t_ms,queue_kb");
	for (unsigned i = 0; i < c.senders; i++)
		fprintf(cv.f, ",flow%u_gbps,flow%u_dcqcn_gbps", i + 1, i + 1);
	fprintf(cv.f, "\n");
	c.sample = sample;
	c.arg = &cv;

	printf("%u flows to one receiver, %.0f Gb/s links, RTT %.1f us, flow i starts at i x %.1f ms; "
	       "RED K_min %.0f KB, K_max %.0f KB, P_max %.2f\n\n",
	       c.senders, (double)c.rate_bps / 1e9, (double)c.rtt_ps / SIM_PS_PER_US,
	       (double)stagger / 1e9, (double)c.bottleneck.ecn_kmin / 1024,
	       (double)c.bottleneck.ecn_kmax / 1024, c.bottleneck.ecn_pmax);
	printf("%8s %9s", "t (ms)", "queue KB");
	for (unsigned i = 0; i < c.senders; i++)
		printf("  flow%u Gb", i + 1);
	printf("\n");
	exp_progress(quiet, "[converge] running ...");
	rc = sim_incast_run(&c, &r);
	exp_progress_done(quiet);
	fclose(cv.f);
	if (rc) {
		fprintf(stderr, "uroce-lab experiment converge: cannot build the scenario\n");
		return 1;
	}
	printf("\nafter %.1f ms (all flows in): goodput", (double)c.warmup_ps / 1e9);
	for (unsigned i = 0; i < c.senders; i++)
		printf(" %.2f", r.flow_gbps[i]);
	printf(" Gb/s, Jain %.3f, utilisation %.1f%%, drops %llu, CNPs %llu\n", r.jain,
	       100 * r.utilisation, (unsigned long long)r.drops, (unsigned long long)r.cnps);
	if (cv.all_in_ps && cv.last_unfair_ps + 1000 * SIM_PS_PER_US < c.duration_ps) {
		uint64_t from = cv.last_unfair_ps ? cv.last_unfair_ps : c.start_ps[c.senders - 1];

		printf("every flow within 10%% of the fair share (1 ms averages) from %.1f ms on, "
		       "%.1f ms after the last flow joined\n",
		       (double)from / 1e9, (double)(from - c.start_ps[c.senders - 1]) / 1e9);
	} else {
		printf("the flows were not all within 10%% of the fair share (1 ms averages) at the end\n");
	}
	printf("csv: %s\n", csv);

	cols[0] = 0;
	for (unsigned i = 0; i < c.senders; i++) {
		size_t l = strlen(cols);

		/* '' is gnuplot's "the same file again" */
		snprintf(cols + l, sizeof(cols) - l,
			 "%s'%s' using 1:%u with lines lw 2 title 'flow %u throughput', "
			 "'' using 1:%u with lines dt 2 lw 1 title 'flow %u DCQCN rate'",
			 i ? ", " : "", i ? "" : csv, 3 + 2 * i, i + 1, 4 + 2 * i, i + 1);
	}
	snprintf(png, sizeof(png), "%s/converge.png", out);
	snprintf(script, sizeof(script),
		 "set terminal pngcairo size 1100,700 font ',10'\n"
		 "set output '%s'\n"
		 "set datafile separator ','\n"
		 "set multiplot layout 2,1 title 'DCQCN: %u flows converge to their fair share (%.0f Gb/s bottleneck, uroce simulator)'\n"
		 "set grid\nset ylabel 'Gb/s'\nset yrange [0:%.0f]\nset key outside right\n"
		 "plot %s\n"
		 "set xlabel 'time (ms)'\nset ylabel 'queue (KB)'\nset yrange [0:*]\n"
		 "plot '%s' using 1:2 with lines lw 1 lc 'black' title 'bottleneck queue'\n"
		 "unset multiplot\n",
		 png, c.senders, (double)c.rate_bps / 1e9, (double)c.rate_bps / 1e9 * 1.05, cols, csv);
	if (exp_gnuplot(script))
		return 1;
	printf("plot: %s\n", png);
	return 0;
}
