/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `uroce-lab experiment spray`: a permutation (every host sends one flow to
 * another) on a leaf-spine, go-back-N against selective repeat, with the
 * leaves choosing paths per flow (ECMP) or per packet (spraying, random or
 * round-robin) over spines whose delays differ by a skew. Spraying spreads
 * the load evenly but delivers out of order: go-back-N takes each overtaken
 * packet for a loss and resends the window; selective repeat places it.
 * ECMP keeps order but hashes flows onto the same uplink.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "experiment.h"
#include "lab.h"
#include "permutation.h"

#define NMODE 2
#define NPATH 4
#define NCC 2

static const char *const mode_names[NMODE] = {"gbn", "sr"};
static const char *const cc_names[NCC] = {"none", "dcqcn"};
static const enum sim_path_policy paths[NPATH] = {SIM_PATH_ECMP, SIM_PATH_SPRAY_RANDOM,
						  SIM_PATH_SPRAY_RR, SIM_PATH_PINNED};

struct spray_opts {
	struct sim_permutation_cfg base;
	bool mode[NMODE];
	bool path[NPATH];
	bool cc[NCC];
	const char *out;
	bool quiet;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: uroce-lab experiment spray [options]\n"
		"\n"
		"  --hosts-per-leaf N   (4)\n"
		"  --leaves N           (4)\n"
		"  --spines N           (4: full bisection at equal link rates)\n"
		"  --rate R             host links (100G)\n"
		"  --fabric-rate R      leaf-spine links (100G)\n"
		"  --hop T              propagation delay of every link (1us)\n"
		"  --skew T             leaf -> spine k takes k x T longer (1us)\n"
		"  --buffer S           every switch output queue, drop-tail (1M)\n"
		"  --kmin S --kmax S --pmax P   RED ECN marking with dcqcn (5K, 200K, 0.01)\n"
		"  --flow-size S        bytes per flow (256K)\n"
		"  --msg-size S         RDMA WRITEs of this size (64K), --depth N outstanding (4)\n"
		"  --mtu N              (4096)\n"
		"  --modes M[,..]       gbn, sr (both)\n"
		"  --paths P[,..]       ecmp, spray-random, spray-rr, pinned (all):\n"
		"                       pinned: spine = the sender's position on its leaf\n"
		"  --cc C[,..]          none, dcqcn (none)\n"
		"  --shift              host i sends to i + hosts-per-leaf instead of a random\n"
		"                       permutation: with pinned, no two flows share a link\n"
		"  --all-to-all         every host sends a flow to every other host\n"
		"  --pfc                lossless: every switch input pauses its sender when\n"
		"                       more than --xoff S of its frames wait (256K; --xon 192K)\n"
		"  --verify             pattern every byte and check it on arrival\n"
		"  --seed S             (1)\n"
		"  --out DIR            where spray.csv, spray.png go (./uroce-experiments)\n"
		"  --quiet              no progress on stderr\n");
}

static bool parse_paths(const char *arg, bool *on)
{
	const char *names[NPATH];

	for (unsigned i = 0; i < NPATH; i++)
		names[i] = sim_path_policy_name(paths[i]);
	return exp_parse_names(arg, names, NPATH, on);
}

static double wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The plot reads a pivot of the table: one row per path and cc, go-back-N beside SR. */
static int write_plot(const struct spray_opts *o, const char *pcsv)
{
	const struct sim_permutation_cfg *b = &o->base;
	char script[8192], png[1024];

	snprintf(png, sizeof(png), "%s/spray.png", o->out);
	snprintf(
	    script, sizeof(script),
	    "set terminal pngcairo size 1500,520 font ',10'\n"
	    "set output '%s'\n"
	    "set datafile separator ','\n"
	    "set multiplot layout 1,3 title '%s on a %u-leaf %u-spine fabric, %u hosts at "
	    "%.0f Gb/s, %.0f KB flows, +%.1f us per spine (uroce simulator, seed %llu)'\n"
	    "set style data histogram\nset style histogram clustered gap 1\n"
	    "set style fill solid 0.8 border -1\nset boxwidth 0.9\n"
	    "set grid ytics\nset xtics rotate by -30\nset key top right\n"
	    "set ylabel 'aggregate goodput / line rate'\nset yrange [0:1.1]\n"
	    "plot '%s' using 3:xtic(stringcolumn(1).' '.stringcolumn(2)) skip 1 title 'go-back-N', "
	    "'' using 4 skip 1 title 'selective repeat'\n"
	    "set ylabel 'FCT p99 / ideal FCT'\nset yrange [0:*]\n"
	    "plot '%s' using 5:xtic(stringcolumn(1).' '.stringcolumn(2)) skip 1 title 'go-back-N', "
	    "'' using 6 skip 1 title 'selective repeat'\n"
	    "set ylabel 'retransmitted packets + 1 (log)'\nset logscale y\nset yrange [0.5:*]\n"
	    "plot '%s' using ($7+1):xtic(stringcolumn(1).' '.stringcolumn(2)) skip 1 title "
	    "'go-back-N', "
	    "'' using ($8+1) skip 1 title 'selective repeat'\n"
	    "unset multiplot\n",
	    png, b->all_to_all ? "All-to-all" : "Permutation", b->topo.leaves, b->topo.spines,
	    b->topo.hosts_per_leaf * b->topo.leaves, (double)b->topo.host_rate_bps / 1e9,
	    (double)b->flow_bytes / 1024, (double)b->topo.skew_ps / SIM_PS_PER_US,
	    (unsigned long long)b->seed, pcsv, pcsv, pcsv);
	if (exp_gnuplot(script))
		return -1;
	printf("plot: %s\n", png);
	return 0;
}

int exp_spray(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"hosts-per-leaf", required_argument, NULL, 'H'},
	    {"leaves", required_argument, NULL, 'L'},
	    {"spines", required_argument, NULL, 'P'},
	    {"rate", required_argument, NULL, 'r'},
	    {"fabric-rate", required_argument, NULL, 'R'},
	    {"hop", required_argument, NULL, 't'},
	    {"skew", required_argument, NULL, 'k'},
	    {"buffer", required_argument, NULL, 'B'},
	    {"kmin", required_argument, NULL, 'm'},
	    {"kmax", required_argument, NULL, 'M'},
	    {"pmax", required_argument, NULL, 'p'},
	    {"flow-size", required_argument, NULL, 'F'},
	    {"msg-size", required_argument, NULL, 's'},
	    {"depth", required_argument, NULL, 'D'},
	    {"mtu", required_argument, NULL, 'u'},
	    {"modes", required_argument, NULL, 'o'},
	    {"paths", required_argument, NULL, 'a'},
	    {"cc", required_argument, NULL, 'c'},
	    {"shift", no_argument, NULL, 'x'},
	    {"verify", no_argument, NULL, 'v'},
	    {"all-to-all", no_argument, NULL, 'A'},
	    {"pfc", no_argument, NULL, 'f'},
	    {"xoff", required_argument, NULL, 'X'},
	    {"xon", required_argument, NULL, 'Y'},
	    {"seed", required_argument, NULL, 'S'},
	    {"out", required_argument, NULL, 'O'},
	    {"quiet", no_argument, NULL, 'q'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct spray_opts o = {.mode = {true, true},
			       .path = {true, true, true, true},
			       .cc = {true, false},
			       .out = "uroce-experiments"};
	struct sim_permutation_cfg *b = &o.base;
	struct sim_permutation_result res[NCC][NPATH][NMODE];
	char csv[1024], pcsv[1024];
	FILE *f, *pf;
	uint64_t v, events = 0, ideal_ps = 0;
	double t_all = wall_s();
	int c, rc = 0;

	sim_permutation_cfg_default(b);
	b->topo.skew_ps = 1 * SIM_PS_PER_US;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		bool ok = true;

		switch (c) {
		case 'H':
			ok = parse_u64(optarg, &v) && v && v <= 254;
			b->topo.hosts_per_leaf = (unsigned)v;
			break;
		case 'L':
			ok = parse_u64(optarg, &v) && v && v <= 254;
			b->topo.leaves = (unsigned)v;
			break;
		case 'P':
			ok = parse_u64(optarg, &v) && v && v <= 64;
			b->topo.spines = (unsigned)v;
			break;
		case 'r':
			ok = parse_rate(optarg, &b->topo.host_rate_bps) &&
			     b->topo.host_rate_bps >= 1000000;
			break;
		case 'R':
			ok = parse_rate(optarg, &b->topo.fabric_rate_bps) &&
			     b->topo.fabric_rate_bps >= 1000000;
			break;
		case 't':
			ok = parse_time_ps(optarg, &b->topo.hop_ps);
			break;
		case 'k':
			ok = parse_time_ps(optarg, &b->topo.skew_ps);
			break;
		case 'B':
			ok = parse_size(optarg, &b->topo.queue.buffer_bytes);
			break;
		case 'm':
			ok = parse_size(optarg, &b->ecn_kmin);
			break;
		case 'M':
			ok = parse_size(optarg, &b->ecn_kmax);
			break;
		case 'p':
			ok = parse_double(optarg, &b->ecn_pmax) && b->ecn_pmax >= 0 &&
			     b->ecn_pmax <= 1;
			break;
		case 'F':
			ok = parse_size(optarg, &b->flow_bytes) && b->flow_bytes;
			break;
		case 's':
			ok = parse_size(optarg, &v) && v && v <= (1u << 30);
			b->msg_size = (uint32_t)v;
			break;
		case 'D':
			ok = parse_u64(optarg, &v) && v && v <= 4096;
			b->depth = (uint32_t)v;
			break;
		case 'u':
			ok = parse_u64(optarg, &v) && ur_mtu_enum((uint32_t)v) &&
			     ur_mtu_bytes(ur_mtu_enum((uint32_t)v)) == v;
			b->mtu = (uint32_t)v;
			break;
		case 'o':
			ok = exp_parse_names(optarg, mode_names, NMODE, o.mode);
			break;
		case 'a':
			ok = parse_paths(optarg, o.path);
			break;
		case 'c':
			ok = exp_parse_names(optarg, cc_names, NCC, o.cc);
			break;
		case 'x':
			b->shift = true;
			break;
		case 'v':
			b->verify = true;
			break;
		case 'A':
			b->all_to_all = true;
			break;
		case 'f':
			b->topo.pfc = true;
			break;
		case 'X':
			ok = parse_size(optarg, &b->topo.pfc_xoff);
			break;
		case 'Y':
			ok = parse_size(optarg, &b->topo.pfc_xon);
			break;
		case 'S':
			ok = parse_u64(optarg, &b->seed);
			break;
		case 'O':
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
			fprintf(stderr, "uroce-lab experiment spray: bad value '%s'\n", optarg);
			return 2;
		}
	}
	if ((uint64_t)b->topo.hosts_per_leaf * b->topo.leaves > 254 ||
	    b->topo.hosts_per_leaf * b->topo.leaves < 2 || b->flow_bytes < b->msg_size ||
	    b->flow_bytes % b->msg_size || b->ecn_kmin > b->ecn_kmax ||
	    b->topo.pfc_xon > b->topo.pfc_xoff || (b->shift && b->topo.leaves < 2)) {
		fprintf(stderr,
			"uroce-lab experiment spray: inconsistent options (at most 254 hosts;"
			" the flow size a multiple of the message size; --shift needs 2 leaves)\n");
		return 2;
	}
	if (exp_mkdir(o.out) || !(f = exp_open(o.out, "spray.csv", csv, sizeof(csv))))
		return 1;
	if (!(pf = exp_open(o.out, "spray-plot.csv", pcsv, sizeof(pcsv)))) {
		fclose(f);
		return 1;
	}
	fprintf(f, "path,cc,mode,flows,flows_done,goodput_gbps,goodput_fraction,fct_p50_us,"
		   "fct_p99_us,fct_p99_over_ideal,fct_max_us,retx_packets,nak_seq,timeouts,drops,"
		   "ce_marked,cnps,pauses,queue_max_kb,errors,sim_us,events,seed\n");
	fprintf(pf, "path,cc,gbn_fraction,sr_fraction,gbn_p99_x,sr_p99_x,gbn_retx,sr_retx\n");
	printf("one-shot flows on a leaf-spine: %u leaves x %u hosts, %u spines; hosts %.0f Gb/s, "
	       "fabric %.0f Gb/s, %.1f us per hop, +%.2f us per spine up; %.0f KB per queue\n"
	       "%s, %.0f KB flows as %u KB WRITEs x %u outstanding, MTU %u, seed %llu\n\n",
	       b->topo.leaves, b->topo.hosts_per_leaf, b->topo.spines,
	       (double)b->topo.host_rate_bps / 1e9, (double)b->topo.fabric_rate_bps / 1e9,
	       (double)b->topo.hop_ps / SIM_PS_PER_US, (double)b->topo.skew_ps / SIM_PS_PER_US,
	       (double)b->topo.queue.buffer_bytes / 1024,
	       b->all_to_all ? "all-to-all"
	       : b->shift    ? "host i -> i + hosts-per-leaf"
			     : "random permutation",
	       (double)b->flow_bytes / 1024, b->msg_size / 1024, b->depth, b->mtu,
	       (unsigned long long)b->seed);
	printf("%-12s %-5s %-4s %5s %8s %7s %9s %9s %6s %8s %6s %6s %6s %7s %8s %8s\n", "path",
	       "cc", "mode", "done", "goodput", "of max", "FCT p50", "FCT p99", "p99/id", "retx",
	       "NAKs", "t/outs", "drops", "pauses", "qmax KB", "wall s");
	for (unsigned k = 0; k < NCC; k++) {
		if (!o.cc[k])
			continue;
		for (unsigned pi = 0; pi < NPATH; pi++) {
			if (!o.path[pi])
				continue;
			for (unsigned m = 0; m < NMODE; m++) {
				struct sim_permutation_cfg cfg = *b;
				struct sim_permutation_result *r = &res[k][pi][m];
				const char *pn = sim_path_policy_name(paths[pi]);
				double t0 = wall_s(), dt;

				if (!o.mode[m])
					continue;
				cfg.topo.path = paths[pi];
				cfg.mode = m ? UR_RETX_SR : UR_RETX_GBN;
				cfg.dcqcn = k == 1;
				exp_progress(o.quiet, "[spray] %s, %s, %s ...", pn, cc_names[k],
					     mode_names[m]);
				if (sim_permutation_run(&cfg, r)) {
					exp_progress_done(o.quiet);
					fprintf(stderr, "uroce-lab experiment spray: cannot build "
							"the scenario\n");
					rc = 1;
					goto out;
				}
				dt = wall_s() - t0;
				events += r->events;
				ideal_ps = r->ideal_fct_ps;
				exp_progress_done(o.quiet);
				printf(
				    "%-12s %-5s %-4s %2u/%-2u %5.0f Gb %6.1f%% %6.1f us %6.1f us "
				    "%6.2f "
				    "%8llu %6llu %6llu %6llu %7llu %8.0f %8.2f\n",
				    pn, cc_names[k], mode_names[m], r->completed, r->flows,
				    r->goodput_gbps, 100 * r->goodput_fraction,
				    (double)r->fct_p50_ps / SIM_PS_PER_US,
				    (double)r->fct_p99_ps / SIM_PS_PER_US,
				    (double)r->fct_p99_ps / r->ideal_fct_ps,
				    (unsigned long long)r->retx_packets,
				    (unsigned long long)r->nak_seq, (unsigned long long)r->timeouts,
				    (unsigned long long)r->drops, (unsigned long long)r->pauses,
				    (double)r->queue_max / 1024, dt);
				fflush(stdout);
				fprintf(
				    f,
				    "%s,%s,%s,%u,%u,%.4f,%.5f,%.3f,%.3f,%.4f,%.3f,%llu,%llu,%llu,"
				    "%llu,%llu,%llu,%llu,%.1f,%llu,%.3f,%llu,%llu\n",
				    pn, cc_names[k], mode_names[m], r->flows, r->completed,
				    r->goodput_gbps, r->goodput_fraction,
				    (double)r->fct_p50_ps / SIM_PS_PER_US,
				    (double)r->fct_p99_ps / SIM_PS_PER_US,
				    (double)r->fct_p99_ps / r->ideal_fct_ps,
				    (double)r->fct_max_ps / SIM_PS_PER_US,
				    (unsigned long long)r->retx_packets,
				    (unsigned long long)r->nak_seq, (unsigned long long)r->timeouts,
				    (unsigned long long)r->drops, (unsigned long long)r->marked,
				    (unsigned long long)r->cnps, (unsigned long long)r->pauses,
				    (double)r->queue_max / 1024,
				    (unsigned long long)(r->errors + r->verify_failures),
				    (double)r->sim_ps / SIM_PS_PER_US,
				    (unsigned long long)r->events, (unsigned long long)b->seed);
				if (cfg.mode == UR_RETX_SR && r->sr_agreed < 2ull * r->flows)
					printf(
					    "       !! selective repeat agreed on %llu of %u QPs\n",
					    (unsigned long long)r->sr_agreed, 2 * r->flows);
				if (r->errors || r->verify_failures || r->completed != r->flows)
					printf("       !! %llu error completions, %llu bytes "
					       "wrong, %u flows "
					       "unfinished\n",
					       (unsigned long long)r->errors,
					       (unsigned long long)r->verify_failures,
					       r->flows - r->completed);
			}
			if (o.mode[0] && o.mode[1]) {
				const struct sim_permutation_result *g = &res[k][pi][0],
								    *s = &res[k][pi][1];

				fprintf(pf, "%s,%s,%.5f,%.5f,%.4f,%.4f,%llu,%llu\n",
					sim_path_policy_name(paths[pi]), cc_names[k],
					g->goodput_fraction, s->goodput_fraction,
					(double)g->fct_p99_ps / g->ideal_fct_ps,
					(double)s->fct_p99_ps / s->ideal_fct_ps,
					(unsigned long long)g->retx_packets,
					(unsigned long long)s->retx_packets);
			}
		}
	}
	t_all = wall_s() - t_all;
	printf("\ngoodput: all flows' bytes over the time the last one finished; of max: of the\n"
	       "hosts' line rate after headers; FCT p99/id: over one flow alone on an idle fabric\n"
	       "(%.1f us); NAKs: sequence-error NAKs (go-back-N); qmax: the deepest queue.\n"
	       "%llu events in %.2f s: %.2f M events/s\n",
	       (double)ideal_ps / SIM_PS_PER_US, (unsigned long long)events, t_all,
	       t_all > 0 ? events / t_all / 1e6 : 0);
out:
	fclose(f);
	fclose(pf);
	if (!rc) {
		printf("csv: %s, %s\n", csv, pcsv);
		if (o.mode[0] && o.mode[1] && write_plot(&o, pcsv))
			rc = 1;
	}
	return rc;
}
