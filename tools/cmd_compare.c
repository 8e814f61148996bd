/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `uroce-lab compare`: go-back-N against selective repeat over a sweep of loss
 * rates, in the simulator and live (the stock ib_write_bw between two
 * network namespaces under injected loss), as a table, a CSV file and a PNG
 * plot with the analytic curves: 1/(1+pW) for go-back-N, 1-p for selective
 * repeat.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host_load.h"
#include "lab.h"
#include "round_stats.h"
#include "sim_run.h"

/* The live playground: two namespaces on a veth pair, removed afterwards. */
#define PERFTEST_TIMEOUT_EXP 14 /* ib_write_bw -u: its default local ACK timeout */
#define NET "10.79.0"

/* Namespaces and veth ends named after this process, so two runs at once
 * (or one beside the suite's compare_rounds) never take each other's. */
static char ns_a[32], ns_b[32], if_a[16], if_b[16];

static void live_names(void)
{
	int pid = (int)getpid();

	snprintf(ns_a, sizeof(ns_a), "urcmp%d-a", pid);
	snprintf(ns_b, sizeof(ns_b), "urcmp%d-b", pid);
	snprintf(if_a, sizeof(if_a), "urc%da", pid);
	snprintf(if_b, sizeof(if_b), "urc%db", pid);
}
#define MAX_ROUNDS 32
#define PERFTEST_TX_DEPTH 128 /* ib_write_bw -t: its default messages in flight */
/* A cell's spread is too wide to conclude from when its slowest round is this much slower. */
#define WIDE_RATIO 1.25
/* A round is called busy past these (percent of CPU time; runnable threads per CPU). */
#define BUSY_STEAL_PCT 2.0
#define BUSY_IOWAIT_PCT 5.0
/* The simulator disagrees with a live cell when it lies this far outside the cell's interval. */
#define SIM_SLACK 0.01
/* The dataplane holds at most this many frames back (HELD_MAX, dataplane/impair.c). */
#define LIVE_REORDER_MAX 256

struct row {
	const char *where; /* "sim" or "live" */
	enum ur_retx_mode mode;
	double loss;
	bool ok;
	double gbps;
	double fraction; /* of the lossless goodput (sim: the link's; live: this mode's at p = 0) */
	double model;	 /* the analytic fraction */
	double window;	 /* W in packets: the BDP (sim), or resent per loss event (live, gbn) */
	uint64_t retx_bytes;
	uint64_t naks;
	uint64_t sacks;
	uint64_t timeouts;
	double fct_p50_us; /* sim only */
	double fct_p99_us;
	/* live only: the rounds behind the medians above, and what to make of them */
	struct round_spread g; /* goodput, Gb/s */
	struct round_spread f; /* fraction of the same round's lossless run */
	bool sim_ok;
	double sim_fraction;  /* the simulator at the live rate, RTT and loss */
	double sim_gbps;      /* ... times the live lossless goodput */
	double steal_max_pct; /* the busiest round's steal, iowait, runnable threads */
	double iowait_max_pct;
	unsigned runnable_max;
	char note[64]; /* wide;overlap;sim-outside;busy (CSV), ';'-separated */
};

/* One cell of one round. */
struct sample {
	bool ok;
	double gbps;
	struct counters_delta {
		uint64_t retx_pkts, naks, sacks, timeouts;
	} c;
};

/* One round: where its cells ran and how busy the host was. */
struct round_load {
	struct host_load before, after;
	double steal_pct, iowait_pct;
	double rtt_us; /* ib_write_lat's, at the start of the round; 0 if it failed */
};

struct compare_opts {
	struct sim_opts sim;
	double losses[MAX_LIST];
	unsigned nlosses;
	bool sim_on, live_on;
	uint64_t live_size;
	uint64_t live_secs;
	uint64_t rounds;
	uint64_t live_mtu; /* veth MTU */
	uint64_t seed;
	const char *out_dir;
	bool plot;
};

static volatile sig_atomic_t interrupted;
static char uroce_path[PATH_MAX]; /* the `uroce` that sets up the live devices */

/*
 * The live runs drive `uroce` (link, stat, env): the one beside this
 * program, so a build tree's uroce-lab uses that tree's uroce, an installed
 * one the installed one; else whichever is on the PATH.
 */
static int find_uroce(void)
{
	ssize_t len = readlink("/proc/self/exe", uroce_path, sizeof(uroce_path) - 1);
	char *slash;

	if (len <= 0)
		return -1;
	uroce_path[len] = 0;
	slash = strrchr(uroce_path, '/');
	if (slash && (size_t)(slash - uroce_path) + sizeof("/uroce") <= sizeof(uroce_path)) {
		strcpy(slash, "/uroce");
		if (!access(uroce_path, X_OK))
			return 0;
	}
	strcpy(uroce_path, "uroce");
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: uroce-lab compare [options]\n"
		"\n"
		"Go-back-N against selective repeat over a sweep of loss rates: in the\n"
		"simulator, and live with the stock ib_write_bw between two network\n"
		"namespaces (urcmpPID-a, urcmpPID-b, created and removed; needs root) under\n"
		"loss injected by uroce's dataplane on the frames the sender transmits\n"
		"(data; ACKs and NAKs are not lost unless asked, as in the simulator).\n"
		"Prints a table, writes DIR/compare.csv, DIR/compare-rounds.csv (live, one\n"
		"line per cell per round) and DIR/compare.png (gnuplot).\n"
		"\n"
		"  --loss P[,..]        loss rates (0,1e-5,1e-4,1e-3,1e-2,5e-2)\n"
		"  --sim-only           skip the live runs\n"
		"  --live-only          skip the simulator\n"
		"  --out DIR            where the CSV and the plot go (compare-out)\n"
		"  --no-plot            no PNG\n"
		"  --seed S             seed of the simulator and of the injected loss (1)\n"
		"  --burst L            losses come in bursts of mean length L (Gilbert-Elliott\n"
		"                       at each --loss rate; live: the dataplane's burst=L) (1)\n"
		"  --reorder P[:D]      hold back a fraction P of data packets by D packets (D 4)\n"
		"  --loss-back P        loss of the return path: ACKs, NAKs, SACKs (0);\n"
		"                       --ack-loss P is the same\n"
		"  --burst-back L       the return path's losses in bursts of mean length L\n"
		"  --reorder-back P[:D] reordering of the return path (0)\n"
		"  --two-way            the return path gets each --loss value, and --burst and\n"
		"                       --reorder unless --burst-back or --reorder-back is given\n"
		"                       (live: the receiver's frames are impaired, UROCE_IMPAIR\n"
		"                       of the server); every row, loss 0 included, has them\n"
		" simulator:\n"
		"  --rate R             link rate (400G)\n"
		"  --rtt T              round-trip time (10us)\n"
		"  --mtu N              path MTU (4096)\n"
		"  --msg-size S         RDMA WRITE size (1M)\n"
		"  --messages N         messages per run (200)\n"
		" live:\n"
		"  --live-size S        ib_write_bw message size (65536)\n"
		"  --live-duration N    seconds per ib_write_bw run (3)\n"
		"  --rounds N           rounds of every mode x loss cell, interleaved (5);\n"
		"                       each cell ~7 s here (3 s run, setup, counters), so\n"
		"                       the default 6 losses x 2 modes x 5 rounds and an\n"
		"                       RTT probe per round take about 8 minutes\n"
		"                       (--loss 0,1e-3,1e-2: about 4.5)\n"
		"  --live-mtu N         veth MTU; 9000 gives path MTU 4096 (9000)\n"
		"\n"
		"Columns: goodput, its fraction of lossless (simulator: of the link's lossless\n"
		"goodput; live: of the same mode's run at loss 0), the model's fraction with\n"
		"W packets (simulator: the bandwidth-delay product; live go-back-N: packets\n"
		"resent per loss event, i.e. the window in flight when a loss is found;\n"
		"live go-back-N's model also leaves out the time spent waiting for local\n"
		"ACK timeouts, each 4.096 us x 2^14 with perftest's default),\n"
		"retransmitted bytes, NAKs, SACKs, timeouts, and message completion time\n"
		"p50/p99 (simulator only: ib_write_bw does not time single messages).\n"
		"Live figures are medians of --rounds rounds. In each round every cell runs\n"
		"once, forwards in rounds 1, 3, .. and backwards in 2, 4, ..; each mode's\n"
		"lossless run is part of every round: a lossy cell's fraction is taken\n"
		"against its own round's lossless run before the median. Live columns: n\n"
		"(rounds that ran), the fraction's min and max, and its 95%% interval: the\n"
		"order statistics x(k)..x(n+1-k) around the median (sign-test interval,\n"
		"distribution-free; below 6 rounds it is min..max and covers less than 95%%,\n"
		"the table says how much), and sim: the simulator's fraction at the live\n"
		"lossless goodput, the median RTT of one unimpaired ib_write_lat per round\n"
		"and the same impairments (perftest's 128 messages in flight, timeout\n"
		"exponent 14).\n"
		"Notes follow the table: a cell whose max/min goodput exceeds 1.25, GBN and\n"
		"SR whose intervals overlap, a simulator figure outside the live interval,\n"
		"with the host's CPU steal, iowait and runnable threads per round\n"
		"(/proc/stat, /proc/loadavg, read before and after each round).\n"
		"CSV columns: source,mode,loss,goodput_gbps,goodput_fraction,model_fraction,\n"
		"window_pkts,retx_bytes,naks,sacks,timeouts,fct_p50_us,fct_p99_us,ok, then\n"
		"(live) rounds,fraction_min,fraction_max,fraction_ci_lo,fraction_ci_hi,\n"
		"ci_coverage,goodput_min_gbps,goodput_max_gbps,goodput_ci_lo_gbps,\n"
		"goodput_ci_hi_gbps,sim_fraction,sim_goodput_gbps,steal_max_pct,\n"
		"iowait_max_pct,runnable_max,note, then the impairment of the row: burst,\n"
		"reorder,reorder_depth (data path), loss_back,burst_back,reorder_back,\n"
		"reorder_back_depth (return path, as applied: --two-way fills them in)\n");
}

static bool one_loss(const char *s, double *p)
{
	return parse_double(s, p) && *p >= 0 && *p < 1;
}

static bool parse_losses(const char *arg, double *out, unsigned *n)
{
	char buf[512], *save = NULL, *tok;

	if (strlen(arg) >= sizeof(buf))
		return false;
	strcpy(buf, arg);
	*n = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (*n == MAX_LIST || !one_loss(tok, &out[(*n)++]))
			return false;
	return *n > 0;
}

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

/* Run a shell command quietly; its exit status. */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[3 * PATH_MAX];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	rc = system(cmd);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : 1;
}

static void live_down(void)
{
	if (!ns_a[0])
		return; /* never brought up */
	sh("ip netns exec %s '%s' link del uroce0 >/dev/null 2>&1; "
	   "ip netns exec %s '%s' link del uroce0 >/dev/null 2>&1; "
	   "ip netns del %s 2>/dev/null; ip netns del %s 2>/dev/null; "
	   "ip link del %s 2>/dev/null; true",
	   ns_a, uroce_path, ns_b, uroce_path, ns_a, ns_b, if_a);
}

/* Pairs left by runs that were killed (SIGKILL runs no cleanup): their
 * namespaces, and the device daemons in them, go when their process has. */
static void remove_orphans(void)
{
	sh("for ns in $(ip netns list | sed -n 's/^urcmp\\([0-9]*\\)-a\\( .*\\)\\{0,1\\}$/\\1/p'); do "
	   "[ -d /proc/$ns ] && continue; "
	   "for s in a b; do ip netns exec urcmp$ns-$s '%s' link del uroce0 >/dev/null 2>&1; "
	   "ip netns del urcmp$ns-$s 2>/dev/null; done; done; true",
	   uroce_path);
}

static int live_up(const struct compare_opts *o)
{
	unsigned long long mtu = (unsigned long long)o->live_mtu;

	live_names();
	remove_orphans();
	live_down();
	return sh("ip netns add %s && ip netns add %s && "
		  "ip link add %s type veth peer name %s && "
		  "ip link set %s netns %s && ip link set %s netns %s && "
		  "ip -n %s addr add " NET ".1/24 dev %s && "
		  "ip -n %s addr add " NET ".2/24 dev %s && "
		  "ip -n %s link set %s mtu %llu up && "
		  "ip -n %s link set %s mtu %llu up && "
		  "ip -n %s link set lo up && ip -n %s link set lo up && "
		  "ip netns exec %s '%s' link add uroce0 netdev %s >/dev/null && "
		  "ip netns exec %s '%s' link add uroce0 netdev %s >/dev/null",
		  ns_a, ns_b, if_a, if_b, if_a, ns_a, if_b, ns_b, ns_a, if_a, ns_b, if_b, ns_a,
		  if_a, mtu, ns_b, if_b, mtu, ns_a, ns_b, ns_a, uroce_path, if_a, ns_b, uroce_path,
		  if_b);
}

/* One counter of a namespace's uroce0, from `uroce stat -a`. */
struct counters {
	uint64_t retx, naks, sacks, timeouts;
};

static void read_counters(const char *ns, struct counters *c)
{
	char cmd[PATH_MAX + 64], line[256], name[64];
	unsigned long long v;
	FILE *p;

	memset(c, 0, sizeof(*c));
	snprintf(cmd, sizeof(cmd), "ip netns exec %s '%s' stat uroce0 -a 2>/dev/null", ns,
		 uroce_path);
	p = popen(cmd, "r");
	if (!p)
		return;
	while (fgets(line, sizeof(line), p)) {
		if (sscanf(line, " %63s %llu", name, &v) != 2)
			continue;
		if (!strcmp(name, "retransmitted_packets"))
			c->retx += v;
		else if (!strcmp(name, "tx_naks"))
			c->naks += v;
		else if (!strcmp(name, "sr_sacks_sent"))
			c->sacks += v;
		else if (!strcmp(name, "local_ack_timeout_err") || !strcmp(name, "sr_timeouts"))
			c->timeouts += v;
	}
	pclose(p);
}

/*
 * A perftest command line in a namespace, with uroce's environment: TOOL
 * with ARGS, then SERVER (the peer's address, or "" for the server side).
 */
static void perftest_cmd(char *buf, size_t size, const struct compare_opts *o,
			 enum ur_retx_mode mode, double loss, const char *ns, const char *server,
			 const char *tool, const char *args)
{
	char impair[192];
	struct sim_path path;

	/*
	 * As in the simulator, each direction is impaired once, on the frames
	 * its sender transmits: data by the client (ib_write_bw's requester),
	 * ACKs, NAKs and SACKs by the server; the same knobs (sim_path_of).
	 */
	sim_path_of(&o->sim, loss, !server[0], &path);
	sim_path_spec(&path, o->seed + (server[0] ? 0 : 1), impair, sizeof(impair));
	snprintf(buf, size,
		 "ip netns exec %s env UROCE_MODE=%s UROCE_IMPAIR=%s sh -c "
		 "'eval \"$(\"%s\" env)\"; exec timeout %llu %s -d uroce0 -x 1 -F %s %s' 2>&1",
		 ns, sim_mode_name(mode), impair, uroce_path,
		 (unsigned long long)(o->live_secs + 40), tool, args, server);
}

/*
 * Wait until the perftest server in ns_b listens on its TCP port (perftest's
 * default, 18515), at most 15 s, or until it exits. A fixed second was too
 * short on a host at load 60: the client found nothing listening ("Unable
 * to init the socket connection") and the cell was lost.
 */
static void wait_listening(pid_t server)
{
	for (int i = 0; i < 300; i++) {
		siginfo_t si = {0};

		/* (not reaped: perftest_pair's waitpid() takes its status) */
		if (!waitid(P_PID, (id_t)server, &si, WEXITED | WNOHANG | WNOWAIT) && si.si_pid)
			return;
		if (!sh("ip netns exec %s ss -Hltn 'sport = :18515' 2>/dev/null | grep -q .", ns_b))
			return;
		usleep(50000);
	}
}

/*
 * Run TOOL's server in ns_b and its client in ns_a; the client's output
 * goes to parse(), line by line. 0 if both ended well.
 */
static int perftest_pair(const struct compare_opts *o, enum ur_retx_mode mode, double loss,
			 const char *tool, const char *args,
			 void (*parse)(const char *line, void *ctx), void *ctx)
{
	char cmd[PATH_MAX + 1024], line[512], last[512] = "";
	pid_t server;
	int st, rc = -1;
	FILE *p;

	perftest_cmd(cmd, sizeof(cmd), o, mode, loss, ns_b, "", tool, args);
	server = fork();
	if (server == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		dup2(null, 2);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	if (server < 0)
		return -1;
	wait_listening(server);
	perftest_cmd(cmd, sizeof(cmd), o, mode, loss, ns_a, NET ".2", tool, args);
	p = popen(cmd, "r");
	if (p) {
		while (fgets(line, sizeof(line), p)) {
			parse(line, ctx);
			if (line[0] != '\n')
				memcpy(last, line, sizeof(last));
		}
		rc = pclose(p) == 0 ? 0 : -1;
	}
	waitpid(server, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		rc = -1;
	/* A failed cell only lowers its n: say why, or a round's gap is a mystery. */
	if (rc)
		fprintf(
		    stderr,
		    "uroce-lab compare: %s %s loss %g failed (server %s); client's last line: %s",
		    tool, sim_mode_name(mode), loss,
		    WIFEXITED(st) ? (WEXITSTATUS(st) ? "exit nonzero" : "ok") : "killed",
		    last[0] ? last : "(none)\n");
	return rc;
}

/* perftest's result line: the one after the "#bytes" header; `col` of it. */
struct perftest_parse {
	bool header;
	unsigned col; /* 0-based column wanted */
	double value;
};

static void parse_result(const char *line, void *ctx)
{
	struct perftest_parse *pp = ctx;
	double v[6];

	if (strstr(line, "#bytes")) {
		pp->header = true;
		return;
	}
	if (pp->header && sscanf(line, "%lf %lf %lf %lf %lf %lf", &v[0], &v[1], &v[2], &v[3], &v[4],
				 &v[5]) > (int)pp->col) {
		pp->value = v[pp->col];
		pp->header = false;
	}
}

/* One ib_write_bw run: goodput (-1 if it failed) and the counters it moved. */
static void live_run(const struct compare_opts *o, enum ur_retx_mode mode, double loss,
		     struct sample *s)
{
	struct perftest_parse pp = {.col = 3, .value = -1}; /* BW average[Gb/sec] */
	struct counters a0, b0, a1, b1;
	char args[128];

	snprintf(args, sizeof(args), "--report_gbits -s %llu -D %llu",
		 (unsigned long long)o->live_size, (unsigned long long)o->live_secs);
	read_counters(ns_a, &a0);
	read_counters(ns_b, &b0);
	s->ok =
	    !perftest_pair(o, mode, loss, "ib_write_bw", args, parse_result, &pp) && pp.value >= 0;
	s->gbps = pp.value;
	read_counters(ns_a, &a1);
	read_counters(ns_b, &b1);
	s->c.retx_pkts = a1.retx - a0.retx;
	s->c.naks = b1.naks - b0.naks;
	s->c.sacks = b1.sacks - b0.sacks;
	s->c.timeouts = a1.timeouts - a0.timeouts;
}

/*
 * The live round trip for the simulator's prediction: ib_write_lat's typical
 * latency is half a write's round trip through both uroce dataplanes, the
 * same path a NAK takes. 0 if it could not be measured.
 */
static uint64_t live_rtt_ps(const struct compare_opts *o)
{
	struct perftest_parse pp = {.col = 4, .value = -1}; /* t_typical[usec] */
	struct compare_opts clean = *o;

	/* the path's own round trip: the simulator adds the impairments itself */
	clean.sim.reorder = clean.sim.reorder_back = clean.sim.loss_back = 0;
	clean.sim.two_way = false;
	if (perftest_pair(&clean, UR_RETX_GBN, 0, "ib_write_lat", "-s 64 -n 2000", parse_result,
			  &pp) ||
	    pp.value <= 0)
		return 0;
	return (uint64_t)(2 * pp.value * 1e6);
}

static void print_header(void)
{
	printf("%-5s %-4s %-7s %9s %8s %8s %7s %10s %7s %8s %8s %9s %9s %3s %6s %6s %6s %6s %6s\n",
	       "where", "mode", "loss", "Gb/s", "fraction", "model", "W", "retx MB", "NAKs",
	       "SACKs", "timeouts", "fct p50", "fct p99", "n", "min", "max", "ci lo", "ci hi",
	       "sim");
}

static void print_row(const struct row *r)
{
	if (!r->ok) {
		printf("%-5s %-4s %-7g %9s   (failed: see above)\n", r->where,
		       sim_mode_name(r->mode), r->loss, "-");
		return;
	}
	printf("%-5s %-4s %-7g %9.2f %8.3f %8.3f %7.1f %10.1f %7llu %8llu %8llu", r->where,
	       sim_mode_name(r->mode), r->loss, r->gbps, r->fraction, r->model, r->window,
	       (double)r->retx_bytes / 1e6, (unsigned long long)r->naks,
	       (unsigned long long)r->sacks, (unsigned long long)r->timeouts);
	if (!strcmp(r->where, "sim")) {
		printf(" %9.1f %9.1f\n", r->fct_p50_us, r->fct_p99_us);
	} else {
		printf(" %9s %9s %3u %6.3f %6.3f %6.3f %6.3f", "-", "-", r->f.n, r->f.min, r->f.max,
		       r->f.lo, r->f.hi);
		if (r->sim_ok)
			printf(" %6.3f\n", r->sim_fraction);
		else
			printf(" %6s\n", "-");
	}
	fflush(stdout);
}

/* The row's impairment, both paths as applied at its loss: the CSV's last seven columns. */
static void write_csv_impair(FILE *f, const struct compare_opts *o, double loss)
{
	struct sim_path out, back;

	sim_path_of(&o->sim, loss, false, &out);
	sim_path_of(&o->sim, loss, true, &back);
	fprintf(f, ",%g,%g,%llu,%g,%g,%g,%llu\n", out.burst, out.reorder,
		(unsigned long long)out.reorder_depth, back.loss, back.burst, back.reorder,
		(unsigned long long)back.reorder_depth);
}

static void write_csv(FILE *f, const struct compare_opts *o, const struct row *r)
{
	fprintf(f, "%s,%s,%g,%.4f,%.5f,%.5f,%.2f,%llu,%llu,%llu,%llu,", r->where,
		sim_mode_name(r->mode), r->loss, r->ok ? r->gbps : 0, r->ok ? r->fraction : 0,
		r->model, r->window, (unsigned long long)r->retx_bytes, (unsigned long long)r->naks,
		(unsigned long long)r->sacks, (unsigned long long)r->timeouts);
	if (!strcmp(r->where, "sim")) {
		fprintf(f, "%.3f,%.3f,%d,,,,,,,,,,,,,,,", r->fct_p50_us, r->fct_p99_us, r->ok);
		write_csv_impair(f, o, r->loss);
		return;
	}
	fprintf(f, ",,%d,%u,%.5f,%.5f,%.5f,%.5f,%.4f,%.4f,%.4f,%.4f,%.4f,", r->ok, r->f.n, r->f.min,
		r->f.max, r->f.lo, r->f.hi, r->f.coverage, r->g.min, r->g.max, r->g.lo, r->g.hi);
	if (r->sim_ok)
		fprintf(f, "%.5f,%.4f,", r->sim_fraction, r->sim_gbps);
	else
		fprintf(f, ",,");
	fprintf(f, "%.2f,%.2f,%u,%s", r->steal_max_pct, r->iowait_max_pct, r->runnable_max,
		r->note);
	write_csv_impair(f, o, r->loss);
}

/* One line above the table: what each path does besides the row's loss. */
static void print_impairments(const struct compare_opts *o)
{
	const struct sim_opts *so = &o->sim;
	struct sim_path out, back;

	sim_path_of(so, 0, false, &out);
	sim_path_of(so, 0, true, &back);
	printf("data path: each row's loss");
	if (out.burst > 1)
		printf(" in bursts of %g", out.burst);
	if (out.reorder > 0)
		printf(", reorder %g:%llu", out.reorder, (unsigned long long)out.reorder_depth);
	printf("; return path: ");
	if (so->two_way)
		printf("each row's loss");
	else if (back.loss > 0)
		printf("loss %g", back.loss);
	else
		printf("no loss");
	if ((so->two_way || back.loss > 0) && back.burst > 1)
		printf(" in bursts of %g", back.burst);
	if (back.reorder > 0)
		printf(", reorder %g:%llu", back.reorder, (unsigned long long)back.reorder_depth);
	printf("\n");
}

static int run_sim(const struct compare_opts *o, struct row *rows, unsigned *n)
{
	static const enum ur_retx_mode modes[] = {UR_RETX_GBN, UR_RETX_SR};
	int rc = 0;

	for (unsigned m = 0; m < 2; m++) {
		for (unsigned i = 0; i < o->nlosses && !interrupted; i++) {
			struct row *r = &rows[(*n)++];
			struct sim_result s;

			fprintf(stderr, "[sim %s loss %g]\n", sim_mode_name(modes[m]),
				o->losses[i]);
			*r = (struct row){.where = "sim", .mode = modes[m], .loss = o->losses[i]};
			if (sim_run_one(&o->sim, modes[m], o->losses[i], &s)) {
				rc = 1;
				print_row(r);
				continue;
			}
			r->ok = s.completed == o->sim.messages * o->sim.flows && !s.errors &&
				!s.verify_failures;
			r->gbps = s.goodput_gbps;
			r->fraction = s.fraction;
			r->window = s.window_pkts;
			r->model = sim_model_fraction(modes[m], o->losses[i], s.window_pkts);
			r->retx_bytes = s.retx_bytes;
			r->naks = s.naks;
			r->sacks = s.sacks;
			r->timeouts = s.timeouts;
			r->fct_p50_us = s.fct_p50_us;
			r->fct_p99_us = s.fct_p99_us;
			if (!r->ok)
				rc = 1;
			print_row(r);
		}
	}
	return rc;
}

/*
 * Go-back-N live: 1/(1 + pW) while data flows, and nothing while the
 * sender waits out a local ACK timeout (a loss with nothing behind it to
 * reveal it, or a resent packet lost again): perftest's default timeout
 * exponent, 14, is 67 ms, long against a 5 s run.
 */
static double gbn_live_model(const struct compare_opts *o, const struct row *r)
{
	double stalled = (double)r->timeouts * 4.096e-6 * (1 << PERFTEST_TIMEOUT_EXP);
	double flowing = 1 - stalled / (double)o->live_secs;

	return (flowing > 0 ? flowing : 0) / (1 + r->loss * r->window);
}

/* The live cells: each mode at each loss, the lossless one first. */
struct live_cells {
	double losses[MAX_LIST + 1];
	unsigned nlosses;
	unsigned ncells; /* 2 * nlosses: cell c is mode c % 2 at losses[c / 2] */
};

static const enum ur_retx_mode live_modes[] = {UR_RETX_GBN, UR_RETX_SR};

static void live_cells(const struct compare_opts *o, struct live_cells *lc)
{
	bool have0 = false;

	lc->nlosses = 0;
	for (unsigned i = 0; i < o->nlosses; i++)
		have0 |= o->losses[i] == 0;
	if (!have0)
		lc->losses[lc->nlosses++] = 0; /* every round needs its lossless baseline */
	for (unsigned i = 0; i < o->nlosses; i++)
		lc->losses[lc->nlosses++] = o->losses[i];
	lc->ncells = 2 * lc->nlosses;
}

/* The simulator's fraction in the live setting: its rate, round trip and loss. */
static bool sim_predict(const struct compare_opts *o, enum ur_retx_mode mode, double loss,
			double gbps, uint64_t rtt_ps, double *fraction)
{
	struct sim_opts so = o->sim;
	struct sim_result s;

	so.rate_bps = (uint64_t)(gbps * 1e9);
	so.rtt_ps = rtt_ps;
	so.mtu = 4096;
	while (so.mtu > 256 && so.mtu + 100 > o->live_mtu) /* Ethernet, IP, UDP, BTH, RETH, ICRC */
		so.mtu /= 2;
	so.msg_size = o->live_size;
	/* About 256 MiB: a few hundred losses at 1e-3, enough to settle the fraction. */
	so.messages = (256u << 20) / o->live_size;
	if (so.messages < 200)
		so.messages = 200;
	so.flows = 1;
	so.depth = PERFTEST_TX_DEPTH;
	so.timeout = PERFTEST_TIMEOUT_EXP;
	so.quiet = true;
	so.csv = false;
	so.pcap = NULL;
	if (so.rate_bps < 1000000 || sim_run_one(&so, mode, loss, &s))
		return false;
	*fraction = s.fraction;
	return true;
}

static void add_note(struct row *r, const char *flag)
{
	size_t k = strlen(r->note);

	snprintf(r->note + k, sizeof(r->note) - k, "%s%s", k ? ";" : "", flag);
}

/*
 * One cell's rounds into a row: medians, spreads, and the round whose
 * goodput was lowest with how busy the host was then.
 */
static void live_row(const struct compare_opts *o, const struct live_cells *lc,
		     const struct sample *smp, const struct round_load *load, unsigned rounds,
		     unsigned c, struct row *r)
{
	double g[MAX_ROUNDS], f[MAX_ROUNDS];
	uint64_t retx = 0, naks = 0, sacks = 0, timeouts = 0, events = 0;
	unsigned ng = 0, nf = 0, base = c % 2; /* the same mode's lossless cell */

	*r = (struct row){.where = "live", .mode = live_modes[c % 2], .loss = lc->losses[c / 2]};
	for (unsigned k = 0; k < rounds; k++) {
		const struct sample *s = &smp[k * lc->ncells + c];
		const struct sample *b = &smp[k * lc->ncells + base];

		if (!s->ok)
			continue;
		g[ng++] = s->gbps;
		if (b->ok && b->gbps > 0)
			f[nf++] = s->gbps / b->gbps;
		retx += s->c.retx_pkts;
		naks += s->c.naks;
		sacks += s->c.sacks;
		timeouts += s->c.timeouts;
		if (load[k].steal_pct > r->steal_max_pct)
			r->steal_max_pct = load[k].steal_pct;
		if (load[k].iowait_pct > r->iowait_max_pct)
			r->iowait_max_pct = load[k].iowait_pct;
		if (load[k].before.runnable > r->runnable_max)
			r->runnable_max = load[k].before.runnable;
		if (load[k].after.runnable > r->runnable_max)
			r->runnable_max = load[k].after.runnable;
	}
	round_stats_spread(g, ng, &r->g);
	round_stats_spread(f, nf, &r->f);
	r->ok = ng > 0 && nf > 0;
	r->gbps = r->g.median;
	r->fraction = r->f.median;
	/* Counters per run: the mean over the rounds that ran. */
	if (ng) {
		r->retx_bytes = retx * 4096 / ng; /* path MTU 4096 on a 9000-byte veth */
		r->naks = naks / ng;
		r->sacks = sacks / ng;
		r->timeouts = timeouts / ng;
	}
	events = naks + timeouts;
	if (r->mode == UR_RETX_GBN && events)
		r->window = (double)retx / (double)events;
	r->model = r->mode == UR_RETX_SR ? 1 - r->loss : gbn_live_model(o, r);
}

/* Whether round k was busy: CPU stolen, waiting on I/O, or more runnable threads than CPUs. */
static bool round_busy(const struct round_load *l, long ncpu)
{
	return l->steal_pct > BUSY_STEAL_PCT || l->iowait_pct > BUSY_IOWAIT_PCT ||
	       (long)l->before.runnable > ncpu || (long)l->after.runnable > ncpu;
}

/* The round trip for the simulator: the median of the rounds' probes; 0 if none ran. */
static uint64_t median_rtt_ps(const struct round_load *load, unsigned rounds)
{
	double rtts[MAX_ROUNDS];
	struct round_spread rs;
	unsigned nr = 0;

	for (unsigned k = 0; k < rounds; k++)
		if (load[k].rtt_us > 0)
			rtts[nr++] = load[k].rtt_us;
	if (!nr) {
		fprintf(stderr,
			"uroce-lab compare: ib_write_lat failed; no simulator predictions\n");
		return 0;
	}
	round_stats_spread(rtts, nr, &rs);
	printf("live: round trip %.1f us, the median of %u rounds' ib_write_lat (%.1f..%.1f; "
	       "twice its typical latency)\n",
	       rs.median, nr, rs.min, rs.max);
	return rs.median * 1e6 < 4000 ? 4000 : (uint64_t)(rs.median * 1e6); /* the sim's least */
}

/* A cell's fraction of its round's lossless run of the same mode; 0 if either failed. */
static double round_fraction(const struct sample *round, unsigned c)
{
	const struct sample *s = &round[c], *b = &round[c % 2];

	return s->ok && b->ok && b->gbps > 0 ? s->gbps / b->gbps : 0;
}

/* The notes under the table: what the spread allows one to conclude, and why not. */
static void live_notes(const struct live_cells *lc, const struct sample *smp,
		       const struct round_load *load, unsigned rounds, struct row *rows)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned busy = 0;

	printf("\nlive: medians of %u rounds; interval x(k)..x(n+1-k), coverage %.1f%%%s\n", rounds,
	       rows[0].f.coverage * 100,
	       rows[0].f.coverage < ROUND_STATS_CONFIDENCE ? " (min..max: 95% needs 6 rounds)"
							   : "");
	for (unsigned k = 0; k < rounds; k++)
		busy += round_busy(&load[k], ncpu);
	for (unsigned c = 0; c < lc->ncells; c++) {
		struct row *r = &rows[c];

		if (!r->ok)
			continue;
		if (r->g.min > 0 && r->g.max / r->g.min > WIDE_RATIO) {
			unsigned slow = 0;

			for (unsigned k = 0; k < rounds; k++)
				if (smp[k * lc->ncells + c].ok &&
				    smp[k * lc->ncells + c].gbps == r->g.min)
					slow = k;
			add_note(r, "wide");
			printf("note: %s %g: goodput %.2f..%.2f Gb/s, max/min %.2f > %.2f: too "
			       "wide to "
			       "conclude; slowest in round %u, ",
			       sim_mode_name(r->mode), r->loss, r->g.min, r->g.max,
			       r->g.max / r->g.min, WIDE_RATIO, slow + 1);
			if (round_busy(&load[slow], ncpu)) {
				add_note(r, "busy");
				printf("a busy one (steal %.1f%%, iowait %.1f%%, runnable %u -> %u "
				       "on %ld CPUs)\n",
				       load[slow].steal_pct, load[slow].iowait_pct,
				       load[slow].before.runnable, load[slow].after.runnable, ncpu);
			} else {
				printf("not busier than the others by steal, iowait or runnable "
				       "threads\n");
			}
		}
		if (r->loss > 0 && r->sim_ok &&
		    (r->sim_fraction < r->f.lo - SIM_SLACK ||
		     r->sim_fraction > r->f.hi + SIM_SLACK)) {
			add_note(r, "sim-outside");
			printf("note: %s %g: the simulator's %.3f is outside the live interval "
			       "%.3f..%.3f",
			       sim_mode_name(r->mode), r->loss, r->sim_fraction, r->f.lo, r->f.hi);
			if (r->mode == UR_RETX_GBN && r->timeouts)
				printf(
				    " (live go-back-N waited out %llu local ACK timeouts per run)",
				    (unsigned long long)r->timeouts);
			else if (r->f.lo > 1)
				printf(" (live ran faster than its own lossless runs: those were "
				       "slowed "
				       "by something the loss removes, or by the host)");
			else if (r->sim_fraction > r->f.hi && r->f.hi < 1 - r->loss)
				printf(" (live lost more than the loss alone explains: the "
				       "dataplane's "
				       "recovery, not the wire, set the pace)");
			printf("\n");
		}
	}
	for (unsigned i = 0; i < lc->nlosses; i++) {
		struct row *gbn = &rows[2 * i], *sr = &rows[2 * i + 1];

		if (lc->losses[i] == 0 || !gbn->ok || !sr->ok)
			continue;
		if (round_stats_overlap(&gbn->f, &sr->f)) {
			add_note(gbn, "overlap");
			add_note(sr, "overlap");
			printf("note: loss %g: GBN %.3f..%.3f and SR %.3f..%.3f overlap: cannot "
			       "tell them apart at %u rounds\n",
			       lc->losses[i], gbn->f.lo, gbn->f.hi, sr->f.lo, sr->f.hi, rounds);
		} else {
			printf("note: loss %g: %s %.3f..%.3f above %s %.3f..%.3f: the intervals "
			       "do not overlap\n",
			       lc->losses[i], sr->f.lo > gbn->f.hi ? "SR" : "GBN",
			       sr->f.lo > gbn->f.hi ? sr->f.lo : gbn->f.lo,
			       sr->f.lo > gbn->f.hi ? sr->f.hi : gbn->f.hi,
			       sr->f.lo > gbn->f.hi ? "GBN" : "SR",
			       sr->f.lo > gbn->f.hi ? gbn->f.lo : sr->f.lo,
			       sr->f.lo > gbn->f.hi ? gbn->f.hi : sr->f.hi);
		}
	}
	if (busy)
		printf(
		    "note: %u of %u rounds ran on a busy host (steal > %.0f%%, iowait > %.0f%% or "
		    "more runnable threads than the %ld CPUs)\n",
		    busy, rounds, BUSY_STEAL_PCT, BUSY_IOWAIT_PCT, ncpu);
}

static int run_live(const struct compare_opts *o, struct row *rows, unsigned *n)
{
	struct live_cells lc;
	struct round_load load[MAX_ROUNDS] = {0};
	struct sample *smp;
	unsigned rounds = 0;
	uint64_t rtt_ps;
	char path[PATH_MAX];
	FILE *rf;
	int rc = 0;

	if (geteuid() != 0) {
		fprintf(stderr,
			"uroce-lab compare: the live runs need root (namespaces); skipping them\n");
		return 0;
	}
	if (sh("command -v ib_write_bw >/dev/null")) {
		fprintf(stderr, "uroce-lab compare: ib_write_bw (perftest) is not installed; "
				"skipping the live runs\n");
		return 0;
	}
	live_cells(o, &lc);
	smp = calloc((size_t)o->rounds * lc.ncells, sizeof(*smp));
	snprintf(path, sizeof(path), "%s/compare-rounds.csv", o->out_dir);
	rf = fopen(path, "w");
	if (!smp || !rf) {
		fprintf(stderr, "uroce-lab compare: cannot write %s\n", path);
		free(smp);
		if (rf)
			fclose(rf);
		return 1;
	}
	fprintf(rf, "round,position,mode,loss,goodput_gbps,baseline_gbps,fraction,ok,steal_pct,"
		    "iowait_pct,runnable_before,runnable_after,load1_before,load1_after,rtt_us\n");
	if (live_up(o)) {
		fprintf(stderr, "uroce-lab compare: cannot set up the namespaces\n");
		live_down();
		free(smp);
		fclose(rf);
		return 1;
	}
	for (; rounds < o->rounds && !interrupted; rounds++) {
		struct round_load *l = &load[rounds];
		unsigned r = rounds;

		host_load_read(&l->before);
		l->rtt_us = (double)live_rtt_ps(o) / 1e6;
		for (unsigned i = 0; i < lc.ncells && !interrupted; i++) {
			unsigned c = round_stats_cell(r, i, lc.ncells);

			fprintf(stderr,
				"[live round %u/%llu, %s loss %g] ib_write_bw -s %llu for %llu s\n",
				r + 1, (unsigned long long)o->rounds,
				sim_mode_name(live_modes[c % 2]), lc.losses[c / 2],
				(unsigned long long)o->live_size, (unsigned long long)o->live_secs);
			live_run(o, live_modes[c % 2], lc.losses[c / 2], &smp[r * lc.ncells + c]);
		}
		host_load_read(&l->after);
		host_load_between(&l->before, &l->after, &l->steal_pct, &l->iowait_pct);
		printf(
		    "round %u: steal %.1f%%, iowait %.1f%%, runnable %u -> %u, load %.2f -> %.2f, "
		    "RTT %.1f us; at loss %g SR %.3f, GBN %.3f\n",
		    r + 1, l->steal_pct, l->iowait_pct, l->before.runnable, l->after.runnable,
		    l->before.load1, l->after.load1, l->rtt_us, lc.losses[lc.nlosses - 1],
		    round_fraction(&smp[r * lc.ncells], lc.ncells - 1),
		    round_fraction(&smp[r * lc.ncells], lc.ncells - 2));
		fflush(stdout);
		for (unsigned i = 0; i < lc.ncells; i++) {
			unsigned c = round_stats_cell(r, i, lc.ncells);
			const struct sample *s = &smp[r * lc.ncells + c];
			const struct sample *b = &smp[r * lc.ncells + c % 2];

			fprintf(rf,
				"%u,%u,%s,%g,%.4f,%.4f,%.5f,%d,%.2f,%.2f,%u,%u,%.2f,%.2f,%.1f\n",
				r + 1, i + 1, sim_mode_name(live_modes[c % 2]), lc.losses[c / 2],
				s->ok ? s->gbps : 0, b->ok ? b->gbps : 0,
				round_fraction(&smp[r * lc.ncells], c), s->ok, l->steal_pct,
				l->iowait_pct, l->before.runnable, l->after.runnable,
				l->before.load1, l->after.load1, l->rtt_us);
		}
	}
	live_down();
	fclose(rf);
	printf("rounds: %s\n", path);
	rtt_ps = median_rtt_ps(load, rounds);

	for (unsigned c = 0; c < lc.ncells; c++) {
		struct row *r = &rows[*n + c];

		live_row(o, &lc, smp, load, rounds, c, r);
		if (!r->ok)
			rc = 1;
		if (r->ok && rtt_ps && !interrupted) {
			double lossless = rows[*n + c % 2].g.median;

			fprintf(stderr, "[sim for live %s loss %g]\n", sim_mode_name(r->mode),
				r->loss);
			r->sim_ok =
			    rows[*n + c % 2].ok &&
			    sim_predict(o, r->mode, r->loss, lossless, rtt_ps, &r->sim_fraction);
			r->sim_gbps = r->sim_fraction * lossless;
		}
	}
	printf("\n");
	print_header();
	for (unsigned c = 0; c < lc.ncells; c++)
		print_row(&rows[*n + c]);
	if (rounds)
		live_notes(&lc, smp, load, rounds, &rows[*n]);
	*n += lc.ncells;
	free(smp);
	return rc;
}

/* The PNG: measured fractions as points, the models as curves, loss on a log axis. */
static void plot(const struct compare_opts *o, const struct row *rows, unsigned n, const char *csv)
{
	double w_sim = 0, w_live = 0;
	unsigned nlive = 0;
	bool have_live = false, have_sim = false;
	char png[PATH_MAX];
	FILE *g;

	for (unsigned i = 0; i < n; i++) {
		have_live |= !strcmp(rows[i].where, "live");
		have_sim |= !strcmp(rows[i].where, "sim");
		if (!strcmp(rows[i].where, "sim"))
			w_sim = rows[i].window;
		else if (rows[i].mode == UR_RETX_GBN && rows[i].ok && rows[i].loss > 0 &&
			 rows[i].window > 0) {
			w_live += rows[i].window;
			nlive++;
		}
	}
	if (nlive)
		w_live /= nlive;
	snprintf(png, sizeof(png), "%s/compare.png", o->out_dir);
	g = popen("gnuplot 2>/dev/null", "w");
	if (!g) {
		fprintf(stderr, "uroce-lab compare: no gnuplot, no plot\n");
		return;
	}
	fprintf(g,
		"set terminal pngcairo size 1000,700 noenhanced\n"
		"set output '%s'\n"
		"set datafile separator ','\n"
		"set logscale x\nset xrange [5e-6:0.1]\nset yrange [0:*]\nset format x '%%g'\n"
		"set xlabel 'loss probability p'\nset ylabel 'goodput / lossless goodput'\n"
		"set key below maxrows 4\nset grid\n"
		"set title 'go-back-N vs selective repeat (sim: %g Gb/s, %g us RTT, MTU %llu; "
		"live: ib_write_bw -s %llu)'\n"
		"gbn(x) = 1 / (1 + x * %g)\ngbn_live(x) = 1 / (1 + x * %g)\nsr(x) = 1 - x\n"
		"plot sr(x) with lines lw 2 lc rgb '#3060c0' title 'model 1-p'",
		png, o->sim.rate_bps / 1e9, (double)o->sim.rtt_ps / 1e6,
		(unsigned long long)o->sim.mtu, (unsigned long long)o->live_size, w_sim, w_live);
	if (have_sim)
		fprintf(g,
			", \\\n"
			"     gbn(x) with lines lw 2 lc rgb '#c03030' title 'model 1/(1+pW), "
			"W = %.0f (sim BDP)', \\\n"
			"     '%s' using ($3>0 && strcol(1) eq 'sim' && strcol(2) eq 'gbn' ? $3 : "
			"1/0):5 with points pt 7 ps 1.5 lc rgb '#c03030' title 'sim gbn', \\\n"
			"     '%s' using ($3>0 && strcol(1) eq 'sim' && strcol(2) eq 'sr' ? $3 : "
			"1/0):5 with points pt 7 ps 1.5 lc rgb '#3060c0' title 'sim sr'",
			w_sim, csv, csv);
	if (nlive)
		fprintf(g,
			", \\\n"
			"     gbn_live(x) with lines dt 2 lc rgb '#c03030' title 'model 1/(1+pW), "
			"W = %.1f (live, measured), while data flows', \\\n"
			"     '%s' using ($3>0 && strcol(1) eq 'live' && strcol(2) eq 'gbn' ? $3 : "
			"1/0):6 with points pt 4 ps 1.5 lc rgb '#c03030' title 'the same model, "
			"less the live run''s local ACK timeouts'",
			w_live, csv);
	if (have_live)
		fprintf(g,
			", \\\n"
			"     '%s' using ($3>0 && strcol(1) eq 'live' && strcol(2) eq 'gbn' ? $3 : "
			"1/0):5:18:19 with yerrorbars pt 6 ps 2 lw 2 lc rgb '#c03030' title 'live "
			"gbn (median, 95%% interval)', \\\n"
			"     '%s' using ($3>0 && strcol(1) eq 'live' && strcol(2) eq 'sr' ? "
			"$3*1.08 : 1/0):5:18:19 with yerrorbars pt 6 ps 2 lw 2 lc rgb '#3060c0' "
			"title 'live sr (median, 95%% interval; drawn 8%% right)', \\\n"
			"     '%s' using ($3>0 && strcol(1) eq 'live' && strcol(2) eq 'gbn' && "
			"strcol(25) ne '' ? $3 : 1/0):25 with points pt 2 ps 1.5 lc rgb '#c03030' "
			"title 'sim at the live rate/RTT, gbn', \\\n"
			"     '%s' using ($3>0 && strcol(1) eq 'live' && strcol(2) eq 'sr' && "
			"strcol(25) ne '' ? $3*1.08 : 1/0):25 with points pt 2 ps 1.5 lc rgb "
			"'#3060c0' title 'sim at the live rate/RTT, sr'",
			csv, csv, csv, csv);
	fputc('\n', g);
	if (pclose(g) == 0)
		printf("plot: %s\n", png);
	else
		fprintf(stderr, "uroce-lab compare: gnuplot failed; no plot\n");
}

int cmd_compare(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"loss", required_argument, NULL, 'l'},
	    {"sim-only", no_argument, NULL, 'S'},
	    {"live-only", no_argument, NULL, 'L'},
	    {"out", required_argument, NULL, 'o'},
	    {"no-plot", no_argument, NULL, 'P'},
	    {"seed", required_argument, NULL, 's'},
	    {"rate", required_argument, NULL, 'r'},
	    {"rtt", required_argument, NULL, 't'},
	    {"mtu", required_argument, NULL, 'u'},
	    {"msg-size", required_argument, NULL, 'm'},
	    {"messages", required_argument, NULL, 'n'},
	    {"live-size", required_argument, NULL, 'z'},
	    {"live-duration", required_argument, NULL, 'D'},
	    {"live-mtu", required_argument, NULL, 'M'},
	    {"help", no_argument, NULL, 'h'},
	    {"reorder", required_argument, NULL, 'R'},
	    {"loss-back", required_argument, NULL, 'B'},
	    {"ack-loss", required_argument, NULL, 'B'},
	    {"burst", required_argument, NULL, 'b'},
	    {"burst-back", required_argument, NULL, 'G'},
	    {"reorder-back", required_argument, NULL, 'O'},
	    {"two-way", no_argument, NULL, 'W'},
	    {"rounds", required_argument, NULL, 'N'},
	    {NULL, 0, NULL, 0},
	};
	struct compare_opts o = {
	    .losses = {0, 1e-5, 1e-4, 1e-3, 1e-2, 5e-2},
	    .nlosses = 6,
	    .sim_on = true,
	    .live_on = true,
	    .live_size = 65536,
	    .live_secs = 3,
	    .rounds = 5,
	    .live_mtu = 9000,
	    .seed = 1,
	    .out_dir = "compare-out",
	    .plot = true,
	};
	struct row rows[2 * MAX_LIST + 2 * (MAX_LIST + 1)];
	unsigned n = 0;
	char csv[PATH_MAX];
	FILE *f;
	int err;
	int c, rc = 0;

	sim_opts_default(&o.sim);
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		bool ok = true;

		switch (c) {
		case 'l':
			ok = parse_losses(optarg, o.losses, &o.nlosses);
			break;
		case 'S':
			o.live_on = false;
			break;
		case 'L':
			o.sim_on = false;
			break;
		case 'o':
			o.out_dir = optarg;
			break;
		case 'P':
			o.plot = false;
			break;
		case 's':
			ok = parse_u64(optarg, &o.seed);
			break;
		case 'r':
			ok = parse_rate(optarg, &o.sim.rate_bps);
			break;
		case 't':
			ok = parse_time_ps(optarg, &o.sim.rtt_ps) && o.sim.rtt_ps >= 4000;
			break;
		case 'u':
			ok = parse_u64(optarg, &o.sim.mtu) && o.sim.mtu >= 256 &&
			     o.sim.mtu <= 4096 && !(o.sim.mtu & (o.sim.mtu - 1));
			break;
		case 'm':
			ok = parse_size(optarg, &o.sim.msg_size) && o.sim.msg_size <= (1u << 30);
			break;
		case 'n':
			ok = parse_u64(optarg, &o.sim.messages) && o.sim.messages > 0;
			break;
		case 'z':
			ok = parse_size(optarg, &o.live_size) && o.live_size > 0 &&
			     o.live_size <= (1u << 30);
			break;
		case 'D':
			ok = parse_u64(optarg, &o.live_secs) && o.live_secs > 0 &&
			     o.live_secs <= 3600;
			break;
		case 'M':
			ok = parse_u64(optarg, &o.live_mtu) && o.live_mtu >= 1280 &&
			     o.live_mtu <= 65535;
			break;
		case 'R':
			ok = parse_reorder(optarg, &o.sim.reorder, &o.sim.reorder_depth);
			break;
		case 'B':
			ok = one_loss(optarg, &o.sim.loss_back);
			break;
		case 'b':
			ok = parse_double(optarg, &o.sim.burst) && o.sim.burst >= 1;
			break;
		case 'G':
			ok = parse_double(optarg, &o.sim.burst_back) && o.sim.burst_back >= 1;
			break;
		case 'O':
			ok = parse_reorder(optarg, &o.sim.reorder_back, &o.sim.reorder_back_depth);
			break;
		case 'W':
			o.sim.two_way = true;
			break;
		case 'N':
			ok = parse_u64(optarg, &o.rounds) && o.rounds > 0 && o.rounds <= MAX_ROUNDS;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
		if (!ok) {
			fprintf(stderr, "uroce-lab compare: bad value '%s' for %s\n", optarg,
				argv[optind - 2]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "uroce-lab compare: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (find_uroce())
		return 1;
	o.sim.seed = o.seed;
	o.sim.quiet = !isatty(STDERR_FILENO);
	err = make_dirs(o.out_dir);
	if (err) {
		fprintf(stderr, "uroce-lab compare: cannot create %s: %s\n", o.out_dir,
			strerror(-err));
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	if (o.live_on && (o.sim.reorder_depth > LIVE_REORDER_MAX ||
			  o.sim.reorder_back_depth > LIVE_REORDER_MAX)) {
		fprintf(stderr, "uroce-lab compare: live reordering depth is at most %d frames\n",
			LIVE_REORDER_MAX);
		return 2;
	}
	print_impairments(&o);
	if (o.sim_on) {
		print_header();
		rc |= run_sim(&o, rows, &n);
	}
	if (o.live_on && !interrupted)
		rc |= run_live(&o, rows, &n);
	if (interrupted) {
		live_down();
		fprintf(stderr, "uroce-lab compare: interrupted\n");
		rc = 130;
	}

	snprintf(csv, sizeof(csv), "%s/compare.csv", o.out_dir);
	f = fopen(csv, "w");
	if (!f) {
		fprintf(stderr, "uroce-lab compare: cannot write %s\n", csv);
		return 1;
	}
	fprintf(f, "source,mode,loss,goodput_gbps,goodput_fraction,model_fraction,window_pkts,"
		   "retx_bytes,naks,sacks,timeouts,fct_p50_us,fct_p99_us,ok,rounds,fraction_min,"
		   "fraction_max,fraction_ci_lo,fraction_ci_hi,ci_coverage,goodput_min_gbps,"
		   "goodput_max_gbps,goodput_ci_lo_gbps,goodput_ci_hi_gbps,sim_fraction,"
		   "sim_goodput_gbps,steal_max_pct,iowait_max_pct,runnable_max,note,burst,reorder,"
		   "reorder_depth,loss_back,burst_back,reorder_back,reorder_back_depth\n");
	for (unsigned i = 0; i < n; i++)
		write_csv(f, &o, &rows[i]);
	fclose(f);
	printf("csv: %s\n", csv);
	if (o.plot && n)
		plot(&o, rows, n, csv);
	return rc;
}
