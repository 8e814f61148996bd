/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `uroce-lab experiment spray`: one-shot flows on a leaf-spine (a
 * permutation, all-to-all, or a ring all-reduce), go-back-N against
 * selective repeat, with the leaves choosing paths per flow (ECMP) or per
 * packet (spraying, random or round-robin) over spines whose delays differ
 * by a skew, with and without DCQCN and PFC. Spraying spreads the load
 * evenly but delivers out of order: go-back-N takes each overtaken packet
 * for a loss and resends the window; selective repeat places it. ECMP keeps
 * order but hashes flows onto the same uplink.
 *
 * A sweep is a list of runs, every combination of the listed congestion
 * controls, PFC settings, paths and modes, numbered in that order. `--plan`
 * prints it, one run a line (its number and the options that run it
 * alone); `--shard i/N` runs the runs whose number is i modulo N; the
 * shards' CSVs merge (exp_sweep.c) into the CSV of the whole sweep.
 */
#include <getopt.h>
#include <inttypes.h>
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
#define NPFC 2
#define NWORK 3

static const char *const mode_names[NMODE] = {"gbn", "sr"};
static const char *const cc_names[NCC] = {"none", "dcqcn"};
static const char *const pfc_names[NPFC] = {"off", "on"};
static const char *const work_names[NWORK] = {"permutation", "all-to-all", "allreduce"};
static const enum sim_path_policy paths[NPATH] = {SIM_PATH_ECMP, SIM_PATH_SPRAY_RANDOM,
						  SIM_PATH_SPRAY_RR, SIM_PATH_PINNED};

struct spray_opts {
	struct sim_permutation_cfg base;
	unsigned work;
	bool mode[NMODE];
	bool path[NPATH];
	bool cc[NCC];
	bool pfc[NPFC];
	unsigned shard, nshards;
	bool plan;
	bool no_plot;
	const char *runs_file;
	const char *out;
	bool quiet;
};

/* One run of the sweep: its number and what it varies. */
struct spray_run {
	unsigned idx;
	unsigned cc, pfc, path, mode;
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
		"  --workload W         permutation (one flow per host, to a distinct host),\n"
		"                       all-to-all (every host to every other), allreduce (a\n"
		"                       ring all-reduce: 2(hosts-1) steps, each host sending\n"
		"                       --flow-size to its ring neighbour per step, each step\n"
		"                       waiting for its slowest flow) (permutation)\n"
		"  --all-to-all         --workload all-to-all\n"
		"  --flows-per-host K   permutation: K random permutations at once, every host\n"
		"                       sending and receiving K flows, each its own QP pair\n"
		"                       (1; 64 hosts x 64 = 4,096 flows)\n"
		"  --flow-size S        bytes per flow; allreduce: per host per step (256K)\n"
		"  --msg-size S         RDMA WRITEs of this size (64K), --depth N outstanding (4)\n"
		"  --mtu N              (4096)\n"
		"  --modes M[,..]       gbn, sr (both)\n"
		"  --paths P[,..]       ecmp, spray-random, spray-rr, pinned (all):\n"
		"                       pinned: spine = the sender's position on its leaf\n"
		"  --cc C[,..]          none, dcqcn (none)\n"
		"  --pfc-modes P[,..]   off, on (off): on is lossless: every switch input pauses\n"
		"                       its sender when more than --xoff S of its frames wait\n"
		"                       (256K; --xon 192K)\n"
		"  --pfc                --pfc-modes on\n"
		"  --shift              host i sends to i + hosts-per-leaf instead of a random\n"
		"                       permutation: with pinned, no two flows share a link\n"
		"  --rank-order         host i sends to i + 1 (the ring in rank order) instead\n"
		"                       of a random cycle\n"
		"  --start T            flows start then, their times count from it (50us):\n"
		"                       SR pairs agree a round trip after RTS, and a message\n"
		"                       begun before that keeps go-back-N framing\n"
		"  --verify             pattern every byte and check it on arrival\n"
		"  --seed S             (1)\n"
		"  --plan               print the sweep's runs, one a line (its number and the\n"
		"                       options that run it alone), and exit\n"
		"  --runs FILE          run the runs of FILE, lines as --plan prints them (any\n"
		"                       sweep: vary seeds, skews, sizes...), instead of the\n"
		"                       combinations of the options\n"
		"  --shard I/N          run only the runs numbered I modulo N (0 <= I < N);\n"
		"                       `uroce-lab experiment merge` joins the shards' CSVs\n"
		"  --out DIR            where spray.csv, spray.png go (./uroce-experiments)\n"
		"  --no-plot            no spray.png (no gnuplot needed)\n"
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

/* The sweep's runs in order: cc, then PFC, then path, then mode. */
static unsigned plan_runs(const struct spray_opts *o, struct spray_run *runs)
{
	unsigned n = 0;

	for (unsigned k = 0; k < NCC; k++)
		for (unsigned f = 0; f < NPFC; f++)
			for (unsigned p = 0; p < NPATH; p++)
				for (unsigned m = 0; m < NMODE; m++)
					if (o->cc[k] && o->pfc[f] && o->path[p] && o->mode[m]) {
						runs[n] = (struct spray_run){n, k, f, p, m};
						n++;
					}
	return n;
}

/* The options that run `r` alone: every parameter, exactly (no commas: a CSV field). */
static void run_args(const struct spray_opts *o, const struct spray_run *r, char *buf, size_t len)
{
	const struct sim_permutation_cfg *b = &o->base;
	char per_host[32] = "";

	/* only when set: the rows of one flow per host keep the args they had */
	if (b->flows_per_host > 1)
		snprintf(per_host, sizeof(per_host), " --flows-per-host %u", b->flows_per_host);
	snprintf(buf, len,
		 "--workload %s --hosts-per-leaf %u --leaves %u --spines %u --rate %" PRIu64
		 "bps --fabric-rate %" PRIu64 "bps --hop %" PRIu64 "ps --skew %" PRIu64
		 "ps --buffer %" PRIu64 " --kmin %" PRIu64 " --kmax %" PRIu64
		 " --pmax %.17g --flow-size %" PRIu64 " --msg-size %u --depth %u --mtu %u"
		 " --xoff %" PRIu64 " --xon %" PRIu64 "%s%s%s --paths %s --cc %s --pfc-modes %s"
		 " --modes %s --seed %" PRIu64 " --start %" PRIu64 "ps%s",
		 work_names[o->work], b->topo.hosts_per_leaf, b->topo.leaves, b->topo.spines,
		 b->topo.host_rate_bps, b->topo.fabric_rate_bps, b->topo.hop_ps, b->topo.skew_ps,
		 b->topo.queue.buffer_bytes, b->ecn_kmin, b->ecn_kmax, b->ecn_pmax, b->flow_bytes,
		 b->msg_size, b->depth, b->mtu, b->topo.pfc_xoff, b->topo.pfc_xon,
		 b->shift ? " --shift" : "", b->rank_order ? " --rank-order" : "",
		 b->verify ? " --verify" : "", sim_path_policy_name(paths[r->path]),
		 cc_names[r->cc], pfc_names[r->pfc], mode_names[r->mode], b->seed, b->start_ps,
		 per_host);
}

static int parse_opts(int argc, char **argv, struct spray_opts *o)
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
	    {"rank-order", no_argument, NULL, 'z'},
	    {"verify", no_argument, NULL, 'v'},
	    {"workload", required_argument, NULL, 'W'},
	    {"start", required_argument, NULL, 'T'},
	    {"all-to-all", no_argument, NULL, 'A'},
	    {"flows-per-host", required_argument, NULL, 'K'},
	    {"pfc", no_argument, NULL, 'f'},
	    {"pfc-modes", required_argument, NULL, 'g'},
	    {"xoff", required_argument, NULL, 'X'},
	    {"xon", required_argument, NULL, 'Y'},
	    {"seed", required_argument, NULL, 'S'},
	    {"plan", no_argument, NULL, 'l'},
	    {"runs", required_argument, NULL, 'U'},
	    {"no-plot", no_argument, NULL, 'n'},
	    {"shard", required_argument, NULL, 'd'},
	    {"out", required_argument, NULL, 'O'},
	    {"quiet", no_argument, NULL, 'q'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct sim_permutation_cfg *b = &o->base;
	uint64_t v;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		bool ok = true, on[NWORK];

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
			ok = exp_parse_names(optarg, mode_names, NMODE, o->mode);
			break;
		case 'a':
			ok = parse_paths(optarg, o->path);
			break;
		case 'c':
			ok = exp_parse_names(optarg, cc_names, NCC, o->cc);
			break;
		case 'x':
			b->shift = true;
			break;
		case 'z':
			b->rank_order = true;
			break;
		case 'v':
			b->verify = true;
			break;
		case 'W':
			ok = exp_parse_names(optarg, work_names, NWORK, on) &&
			     on[0] + on[1] + on[2] == 1;
			o->work = on[1] ? 1 : on[2] ? 2 : 0;
			break;
		case 'T':
			ok = parse_time_ps(optarg, &b->start_ps);
			break;
		case 'A':
			o->work = 1;
			break;
		case 'K':
			ok = parse_u64(optarg, &v) && v && v <= 4096;
			b->flows_per_host = (unsigned)v;
			break;
		case 'f':
			o->pfc[0] = false;
			o->pfc[1] = true;
			break;
		case 'g':
			ok = exp_parse_names(optarg, pfc_names, NPFC, o->pfc);
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
		case 'l':
			o->plan = true;
			break;
		case 'n':
			o->no_plot = true;
			break;
		case 'U':
			o->runs_file = optarg;
			break;
		case 'd':
			ok = exp_parse_shard(optarg, &o->shard, &o->nshards);
			break;
		case 'O':
			o->out = optarg;
			break;
		case 'q':
			o->quiet = true;
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
	b->all_to_all = o->work == 1;
	b->allreduce = o->work == 2;
	if ((uint64_t)b->topo.hosts_per_leaf * b->topo.leaves > 254 ||
	    b->topo.hosts_per_leaf * b->topo.leaves < 2 || b->flow_bytes < b->msg_size ||
	    b->flow_bytes % b->msg_size || b->ecn_kmin > b->ecn_kmax ||
	    b->topo.pfc_xon > b->topo.pfc_xoff || (b->shift && b->topo.leaves < 2) ||
	    (b->shift && b->rank_order) ||
	    (b->flows_per_host > 1 && (o->work || b->shift || b->rank_order))) {
		fprintf(stderr,
			"uroce-lab experiment spray: inconsistent options (at most 254 hosts;"
			" the flow size a multiple of the message size; --shift needs 2 leaves"
			" and excludes --rank-order; --flows-per-host is for random"
			" permutations)\n");
		return 2;
	}
	return -1;
}

static void print_row(const struct spray_run *run, const struct sim_permutation_result *r,
		      bool allreduce, double dt)
{
	printf("%-12s %-5s %-3s %-4s %5u/%-5u %5.0f Gb %6.1f%% %8.1f %8.1f %6.2f %5.3f %8llu %6llu "
	       "%6llu %6llu %7llu %7.0f %7.1f %4llu %6.2f",
	       sim_path_policy_name(paths[run->path]), cc_names[run->cc], pfc_names[run->pfc],
	       mode_names[run->mode], r->completed, r->flows, r->goodput_gbps,
	       100 * r->goodput_fraction, (double)r->fct_p50_ps / SIM_PS_PER_US,
	       (double)r->fct_p99_ps / SIM_PS_PER_US, (double)r->fct_p99_ps / r->ideal_fct_ps,
	       r->jain, (unsigned long long)r->retx_packets, (unsigned long long)r->nak_seq,
	       (unsigned long long)r->timeouts, (unsigned long long)r->drops,
	       (unsigned long long)r->pauses, (double)r->queue_max / 1024, r->queue_hot / 1024,
	       (unsigned long long)r->errors, dt);
	if (allreduce)
		printf(" %3u %8.1f us", r->steps, (double)r->done_ps / SIM_PS_PER_US);
	printf("\n");
	if (run->mode == 1 && r->sr_agreed < 2ull * r->flows)
		printf("       !! selective repeat agreed on %llu of %u QPs\n",
		       (unsigned long long)r->sr_agreed, 2 * r->flows);
	/* (WRITEs only: a sequence NAK answers go-back-N framing) */
	if (run->mode == 1 && r->nak_seq)
		printf("       !! %llu sequence NAKs: messages begun before the agreement ran "
		       "go-back-N (see --start)\n",
		       (unsigned long long)r->nak_seq);
	if (r->errors || r->verify_failures || r->completed != r->flows)
		printf("       !! %llu error completions, %llu bytes wrong, %u flows unfinished\n",
		       (unsigned long long)r->errors, (unsigned long long)r->verify_failures,
		       r->flows - r->completed);
}

static void csv_row(FILE *f, const struct spray_opts *o, const struct spray_run *run,
		    const struct sim_permutation_result *r)
{
	const struct sim_permutation_cfg *b = &o->base;
	char args[1024];

	run_args(o, run, args, sizeof(args));
	fprintf(f,
		"%u,%s,%s,%s,%s,%s,%u,%u,%.4f,%.5f,%.3f,%.3f,%.4f,%.3f,%.4f,%u,%.3f,%.3f,%llu,"
		"%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%.1f,%.2f,%.2f,%llu,%.3f,%llu,%u,%u,%u,"
		"%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%u,%u,%" PRIu64
		",%.3f,%s\n",
		run->idx, work_names[o->work], sim_path_policy_name(paths[run->path]),
		cc_names[run->cc], pfc_names[run->pfc], mode_names[run->mode], r->flows,
		r->completed, r->goodput_gbps, r->goodput_fraction,
		(double)r->fct_p50_ps / SIM_PS_PER_US, (double)r->fct_p99_ps / SIM_PS_PER_US,
		(double)r->fct_p99_ps / r->ideal_fct_ps, (double)r->fct_max_ps / SIM_PS_PER_US,
		r->jain, r->steps, (double)r->done_ps / SIM_PS_PER_US,
		(double)r->step_max_ps / SIM_PS_PER_US, (unsigned long long)r->retx_packets,
		(unsigned long long)r->nak_seq, (unsigned long long)r->timeouts,
		(unsigned long long)r->sr_reorder_lost, (unsigned long long)r->sr_spurious_retx,
		(unsigned long long)r->drops, (unsigned long long)r->marked,
		(unsigned long long)r->cnps, (unsigned long long)r->pauses,
		(double)r->queue_max / 1024, r->queue_mean / 1024, r->queue_hot / 1024,
		(unsigned long long)(r->errors + r->verify_failures),
		(double)r->sim_ps / SIM_PS_PER_US, (unsigned long long)r->events,
		b->topo.hosts_per_leaf, b->topo.leaves, b->topo.spines, b->topo.host_rate_bps,
		b->topo.skew_ps, b->topo.queue.buffer_bytes, b->flow_bytes, b->topo.pfc_xoff,
		b->msg_size, b->depth, b->seed, (double)b->start_ps / SIM_PS_PER_US, args);
}

static void opts_default(struct spray_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->mode[0] = o->mode[1] = true;
	for (unsigned i = 0; i < NPATH; i++)
		o->path[i] = true;
	o->cc[0] = true;
	o->pfc[0] = true;
	o->nshards = 1;
	o->out = "uroce-experiments";
	sim_permutation_cfg_default(&o->base);
	o->base.topo.skew_ps = 1 * SIM_PS_PER_US;
	/* several fabric round trips: every SR pair has agreed before its first WRITE */
	o->base.start_ps = 50 * SIM_PS_PER_US;
}

/* A run with the options it runs under: the sweep's, or its own line's in --runs. */
struct spray_job {
	const struct spray_opts *o;
	struct spray_run run;
};

/*
 * The lines of a --runs file, "NUMBER OPTIONS...", each naming one run.
 * Returns how many, or -1 with a message.
 */
static int read_runs(const char *path, struct spray_opts **optsp, struct spray_job **jobsp)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	int n = 0, lineno = 0;
	struct spray_opts *opts = NULL;
	struct spray_job *jobs = NULL;

	if (!f) {
		fprintf(stderr, "uroce-lab experiment spray: cannot read %s\n", path);
		return -1;
	}
	while (getline(&line, &cap, f) > 0) {
		char *argv[128], *save = NULL, *t;
		int argc = 1;
		unsigned long idx;
		struct spray_run one[NCC * NPFC * NPATH * NMODE];
		void *p;

		lineno++;
		t = strtok_r(line, " \t\n", &save);
		if (!t || *t == '#')
			continue;
		idx = strtoul(t, &t, 10);
		argv[0] = "spray";
		while (argc < 127 && (argv[argc] = strtok_r(NULL, " \t\n", &save)))
			argc++;
		argv[argc] = NULL;
		if (!(p = realloc(opts, (n + 1) * sizeof(*opts))))
			goto err;
		opts = p;
		if (!(p = realloc(jobs, (n + 1) * sizeof(*jobs))))
			goto err;
		jobs = p;
		opts_default(&opts[n]);
		if (*t || parse_opts(argc, argv, &opts[n]) >= 0 || opts[n].runs_file ||
		    plan_runs(&opts[n], one) != 1) {
			fprintf(stderr, "uroce-lab experiment spray: %s:%d: not one run\n", path,
				lineno);
			goto err;
		}
		jobs[n].run = one[0];
		jobs[n].run.idx = (unsigned)idx;
		n++;
	}
	free(line);
	fclose(f);
	/* the options live in one array that realloc may have moved: point at them last */
	for (int i = 0; i < n; i++)
		jobs[i].o = &opts[i];
	*optsp = opts;
	*jobsp = jobs;
	return n;
err:
	free(line);
	fclose(f);
	free(opts);
	free(jobs);
	return -1;
}

int exp_spray(int argc, char **argv)
{
	struct spray_opts o, *file_opts = NULL;
	struct sim_permutation_cfg *b = &o.base;
	struct spray_run runs[NCC * NPFC * NPATH * NMODE];
	struct spray_job *jobs = NULL;
	char csv[1024], cycles[64];
	FILE *f;
	uint64_t events = 0, ideal_ps = 0;
	double t_all = wall_s();
	unsigned nruns, ran = 0;
	int rc;

	opts_default(&o);
	if ((rc = parse_opts(argc, argv, &o)) >= 0)
		return rc;
	rc = 0;
	if (o.runs_file) {
		int n = read_runs(o.runs_file, &file_opts, &jobs);

		if (n <= 0) {
			if (!n)
				fprintf(stderr, "uroce-lab experiment spray: %s has no runs\n",
					o.runs_file);
			return 1;
		}
		nruns = (unsigned)n;
		/* the banner describes the first run's fabric */
		o.base = file_opts[0].base;
		o.work = file_opts[0].work;
	} else {
		nruns = plan_runs(&o, runs);
		jobs = calloc(nruns ? nruns : 1, sizeof(*jobs));
		if (!jobs)
			return 1;
		for (unsigned i = 0; i < nruns; i++)
			jobs[i] = (struct spray_job){&o, runs[i]};
	}
	if (o.plan) {
		for (unsigned i = 0; i < nruns; i++) {
			char args[1024];

			if (jobs[i].run.idx % o.nshards != o.shard)
				continue;
			run_args(jobs[i].o, &jobs[i].run, args, sizeof(args));
			printf("%u %s\n", jobs[i].run.idx, args);
		}
		goto done;
	}
	if (exp_mkdir(o.out) || !(f = exp_open(o.out, "spray.csv", csv, sizeof(csv)))) {
		rc = 1;
		goto done;
	}
	fprintf(f, "%s\n", EXP_SPRAY_CSV_HEADER);
	snprintf(cycles, sizeof(cycles), "%u random cycles (flows per host), ", b->flows_per_host);
	printf("%s on a leaf-spine: %u leaves x %u hosts, %u spines; hosts %.0f Gb/s, "
	       "fabric %.0f Gb/s, %.1f us per hop, +%.2f us per spine up; %.0f KB per queue\n"
	       "%s%.0f KB %s as %u KB WRITEs x %u outstanding, MTU %u, seed %llu, start %.0f us",
	       work_names[o.work], b->topo.leaves, b->topo.hosts_per_leaf, b->topo.spines,
	       (double)b->topo.host_rate_bps / 1e9, (double)b->topo.fabric_rate_bps / 1e9,
	       (double)b->topo.hop_ps / SIM_PS_PER_US, (double)b->topo.skew_ps / SIM_PS_PER_US,
	       (double)b->topo.queue.buffer_bytes / 1024,
	       b->shift			 ? "host i -> i + hosts-per-leaf, "
	       : b->rank_order		 ? "host i -> i + 1, "
	       : b->flows_per_host > 1 ? cycles
	       : o.work != 1		 ? "a random cycle, "
					 : "",
	       (double)b->flow_bytes / 1024, o.work == 2 ? "per host per step" : "flows",
	       b->msg_size / 1024, b->depth, b->mtu, (unsigned long long)b->seed,
	       (double)b->start_ps / SIM_PS_PER_US);
	if (o.nshards > 1)
		printf("; shard %u/%u of %u runs", o.shard, o.nshards, nruns);
	printf("\n\n%-12s %-5s %-3s %-4s %11s %8s %7s %8s %8s %6s %5s %8s %6s %6s %6s %7s %7s %7s "
	       "%4s %6s%s\n",
	       "path", "cc", "pfc", "mode", "done", "goodput", "of max", "p50 us", "p99 us",
	       "p99/id", "Jain", "retx", "NAKs", "t/outs", "drops", "pauses", "qmax KB", "qhot KB",
	       "err", "wall s", o.work == 2 ? " steps  all-reduce" : "");
	for (unsigned i = 0; i < nruns; i++) {
		const struct spray_run *run = &jobs[i].run;
		const struct spray_opts *ro = jobs[i].o;
		struct sim_permutation_cfg cfg = ro->base;
		struct sim_permutation_result r;
		double t0 = wall_s();

		if (run->idx % o.nshards != o.shard)
			continue;
		cfg.topo.path = paths[run->path];
		cfg.mode = run->mode ? UR_RETX_SR : UR_RETX_GBN;
		cfg.dcqcn = run->cc == 1;
		cfg.topo.pfc = run->pfc == 1;
		exp_progress(o.quiet, "[spray %u/%u] %s, %s, pfc %s, %s ...", i + 1, nruns,
			     sim_path_policy_name(paths[run->path]), cc_names[run->cc],
			     pfc_names[run->pfc], mode_names[run->mode]);
		if (sim_permutation_run(&cfg, &r)) {
			exp_progress_done(o.quiet);
			fprintf(stderr, "uroce-lab experiment spray: cannot build the scenario\n");
			rc = 1;
			break;
		}
		exp_progress_done(o.quiet);
		events += r.events;
		ideal_ps = r.ideal_fct_ps;
		ran++;
		print_row(run, &r, ro->work == 2, wall_s() - t0);
		fflush(stdout);
		csv_row(f, ro, run, &r);
	}
	t_all = wall_s() - t_all;
	if (fclose(f))
		rc = 1;
	if (rc)
		goto done;
	printf("\ngoodput: all bytes over the time the last flow (all-reduce: step) finished; of\n"
	       "max: of the hosts' line rate after headers; p50/p99: flow completion times\n"
	       "(all-reduce: each flow's time in each step); p99/id: over one flow alone on an\n"
	       "idle fabric (%.1f us); Jain over the flows' bytes/FCT; NAKs: sequence-error NAKs\n"
	       "(go-back-N); qmax: the deepest queue; qhot: the largest time-averaged queue;\n"
	       "err: error completions (a flow that ends in one is not done).\n"
	       "%u runs, %llu events in %.2f s: %.2f M events/s\n",
	       (double)ideal_ps / SIM_PS_PER_US, ran, (unsigned long long)events, t_all,
	       t_all > 0 ? events / t_all / 1e6 : 0);
	printf("csv: %s\n", csv);
	if (o.nshards > 1)
		printf("a shard: join the shards with `uroce-lab experiment merge --out DIR "
		       "SHARD.csv...`\n");
	else
		rc = exp_spray_report(o.out, !o.no_plot) ? 1 : 0;
done:
	free(jobs);
	free(file_opts);
	return rc;
}
