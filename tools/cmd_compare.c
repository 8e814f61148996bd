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

#include "sim_run.h"
#include "lab.h"

/* The live playground: two namespaces on a veth pair, removed afterwards. */
#define PERFTEST_TIMEOUT_EXP 14 /* ib_write_bw -u: its default local ACK timeout */
#define NS_A "urcmp-a"
#define NS_B "urcmp-b"
#define IF_A "urcmpa0"
#define IF_B "urcmpb0"
#define NET "10.79.0"

struct row {
	const char *where; /* "sim" or "live" */
	enum ur_retx_mode mode;
	double loss;
	bool ok;
	double gbps;
	double fraction;   /* of the lossless goodput (sim: the link's; live: this mode's at p = 0) */
	double model;      /* the analytic fraction */
	double window;     /* W in packets: the BDP (sim), or resent per loss event (live, gbn) */
	uint64_t retx_bytes;
	uint64_t naks;
	uint64_t sacks;
	uint64_t timeouts;
	double fct_p50_us; /* sim only */
	double fct_p99_us;
};

struct compare_opts {
	struct sim_opts sim;
	double losses[MAX_LIST];
	unsigned nlosses;
	bool sim_on, live_on;
	uint64_t live_size;
	uint64_t live_secs;
	uint64_t live_mtu;     /* veth MTU */
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
		"namespaces (" NS_A ", " NS_B ", created and removed; needs root) under\n"
		"loss injected by uroce's dataplane on the frames the sender transmits\n"
		"(data; ACKs and NAKs are not lost unless asked, as in the simulator).\n"
		"Prints a table, writes DIR/compare.csv and DIR/compare.png (gnuplot).\n"
		"\n"
		"  --loss P[,..]        loss rates (0,1e-5,1e-4,1e-3,1e-2,5e-2)\n"
		"  --sim-only           skip the live runs\n"
		"  --live-only          skip the simulator\n"
		"  --out DIR            where the CSV and the plot go (compare-out)\n"
		"  --no-plot            no PNG\n"
		"  --seed S             seed of the simulator and of the injected loss (1)\n"
		"  --reorder P:D        hold back a fraction P of data packets by D packets (0)\n"
		"  --loss-back P        loss of the return path: ACKs, NAKs, SACKs (0)\n"
		"  --reorder-back P:D   reordering of the return path (0)\n"
		"  --two-way            the return path gets each --loss value, and --reorder\n"
		"                       unless --reorder-back is given (live: the receiver's\n"
		"                       frames are impaired, UROCE_IMPAIR of the server)\n"
		" simulator:\n"
		"  --rate R             link rate (400G)\n"
		"  --rtt T              round-trip time (10us)\n"
		"  --mtu N              path MTU (4096)\n"
		"  --msg-size S         RDMA WRITE size (1M)\n"
		"  --messages N         messages per run (200)\n"
		" live:\n"
		"  --live-size S        ib_write_bw message size (65536)\n"
		"  --live-duration N    seconds per ib_write_bw run (5)\n"
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
		"CSV columns: source,mode,loss,goodput_gbps,goodput_fraction,model_fraction,\n"
		"window_pkts,retx_bytes,naks,sacks,timeouts,fct_p50_us,fct_p99_us,ok\n");
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
	sh("ip netns exec " NS_A " '%s' link del uroce0 >/dev/null 2>&1; "
	   "ip netns exec " NS_B " '%s' link del uroce0 >/dev/null 2>&1; "
	   "ip netns del " NS_A " 2>/dev/null; ip netns del " NS_B " 2>/dev/null; "
	   "ip link del " IF_A " 2>/dev/null; true",
	   uroce_path, uroce_path);
}

static int live_up(const struct compare_opts *o)
{
	live_down();
	return sh("ip netns add " NS_A " && ip netns add " NS_B " && "
		  "ip link add " IF_A " type veth peer name " IF_B " && "
		  "ip link set " IF_A " netns " NS_A " && ip link set " IF_B " netns " NS_B " && "
		  "ip -n " NS_A " addr add " NET ".1/24 dev " IF_A " && "
		  "ip -n " NS_B " addr add " NET ".2/24 dev " IF_B " && "
		  "ip -n " NS_A " link set " IF_A " mtu %llu up && "
		  "ip -n " NS_B " link set " IF_B " mtu %llu up && "
		  "ip -n " NS_A " link set lo up && ip -n " NS_B " link set lo up && "
		  "ip netns exec " NS_A " '%s' link add uroce0 netdev " IF_A " >/dev/null && "
		  "ip netns exec " NS_B " '%s' link add uroce0 netdev " IF_B " >/dev/null",
		  (unsigned long long)o->live_mtu, (unsigned long long)o->live_mtu, uroce_path,
		  uroce_path);
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

/* The ib_write_bw command line in a namespace, with uroce's environment. */
static void perftest_cmd(char *buf, size_t size, const struct compare_opts *o,
			 enum ur_retx_mode mode, double loss, const char *ns, const char *server)
{
	char impair[192] = "";
	double p, r;
	uint64_t d;
	size_t k = 0;

	/*
	 * As in the simulator, each direction is impaired once, on the frames
	 * its sender transmits: data by the client (ib_write_bw's requester),
	 * ACKs, NAKs and SACKs by the server.
	 */
	if (server[0]) {
		p = loss;
		r = o->sim.reorder;
		d = o->sim.reorder_depth;
	} else {
		sim_back_impair(&o->sim, loss, &p, &r, &d);
	}
	if (p > 0)
		k += (size_t)snprintf(impair + k, sizeof(impair) - k, "loss=%g,", p);
	if (r > 0 && k < sizeof(impair))
		k += (size_t)snprintf(impair + k, sizeof(impair) - k, "reorder=%g:%llu,", r,
				      (unsigned long long)d);
	if (k && k < sizeof(impair))
		snprintf(impair + k, sizeof(impair) - k, "seed=%llu",
			 (unsigned long long)o->seed + (server[0] ? 0 : 1));
	snprintf(buf, size,
		 "ip netns exec %s env UROCE_MODE=%s UROCE_IMPAIR=%s sh -c "
		 "'eval \"$(\"%s\" env)\"; exec timeout %llu ib_write_bw -d uroce0 -x 1 -F "
		 "--report_gbits -s %llu -D %llu %s' 2>&1",
		 ns, sim_mode_name(mode), impair, uroce_path,
		 (unsigned long long)(o->live_secs + 40), (unsigned long long)o->live_size,
		 (unsigned long long)o->live_secs, server);
}

/* One live run: returns goodput in Gb/s, or -1 if ib_write_bw failed. */
static double live_run(const struct compare_opts *o, enum ur_retx_mode mode, double loss,
		       struct row *r)
{
	char cmd[PATH_MAX + 1024], line[512];
	struct counters a0, b0, a1, b1;
	double gbps = -1;
	bool header = false;
	pid_t server;
	FILE *p;
	int st;

	read_counters(NS_A, &a0);
	read_counters(NS_B, &b0);
	perftest_cmd(cmd, sizeof(cmd), o, mode, loss, NS_B, "");
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
	sleep(1); /* the server listens on its TCP port */
	perftest_cmd(cmd, sizeof(cmd), o, mode, loss, NS_A, NET ".2");
	p = popen(cmd, "r");
	if (p) {
		while (fgets(line, sizeof(line), p)) {
			double size, iters, peak, avg;

			if (strstr(line, "#bytes")) {
				header = true;
				continue;
			}
			if (header && sscanf(line, "%lf %lf %lf %lf", &size, &iters, &peak, &avg) == 4) {
				gbps = avg;
				header = false;
			}
		}
		if (pclose(p) != 0)
			gbps = -1;
	}
	waitpid(server, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		gbps = -1;
	read_counters(NS_A, &a1);
	read_counters(NS_B, &b1);
	r->retx_bytes = (a1.retx - a0.retx) * 4096; /* path MTU 4096 on a 9000-byte veth */
	r->naks = b1.naks - b0.naks;
	r->sacks = b1.sacks - b0.sacks;
	r->timeouts = a1.timeouts - a0.timeouts;
	if (mode == UR_RETX_GBN && r->naks + r->timeouts)
		r->window = (double)(a1.retx - a0.retx) / (double)(r->naks + r->timeouts);
	return gbps;
}

static void print_header(void)
{
	printf("%-5s %-4s %-7s %9s %8s %8s %7s %10s %7s %8s %8s %9s %9s\n", "where", "mode",
	       "loss", "Gb/s", "fraction", "model", "W", "retx MB", "NAKs", "SACKs", "timeouts",
	       "fct p50", "fct p99");
}

static void print_row(const struct row *r)
{
	if (!r->ok) {
		printf("%-5s %-4s %-7g %9s   (failed: see above)\n", r->where, sim_mode_name(r->mode),
		       r->loss, "-");
		return;
	}
	printf("%-5s %-4s %-7g %9.2f %8.3f %8.3f %7.1f %10.1f %7llu %8llu %8llu", r->where,
	       sim_mode_name(r->mode), r->loss, r->gbps, r->fraction, r->model, r->window,
	       (double)r->retx_bytes / 1e6, (unsigned long long)r->naks,
	       (unsigned long long)r->sacks, (unsigned long long)r->timeouts);
	if (!strcmp(r->where, "sim"))
		printf(" %9.1f %9.1f\n", r->fct_p50_us, r->fct_p99_us);
	else
		printf(" %9s %9s\n", "-", "-");
	fflush(stdout);
}

static void write_csv(FILE *f, const struct row *r)
{
	fprintf(f, "%s,%s,%g,%.4f,%.5f,%.5f,%.2f,%llu,%llu,%llu,%llu,", r->where,
		sim_mode_name(r->mode), r->loss, r->ok ? r->gbps : 0, r->ok ? r->fraction : 0,
		r->model, r->window, (unsigned long long)r->retx_bytes,
		(unsigned long long)r->naks, (unsigned long long)r->sacks,
		(unsigned long long)r->timeouts);
	if (!strcmp(r->where, "sim"))
		fprintf(f, "%.3f,%.3f,%d\n", r->fct_p50_us, r->fct_p99_us, r->ok);
	else
		fprintf(f, ",,%d\n", r->ok);
}

static int run_sim(const struct compare_opts *o, struct row *rows, unsigned *n)
{
	static const enum ur_retx_mode modes[] = {UR_RETX_GBN, UR_RETX_SR};
	int rc = 0;

	for (unsigned m = 0; m < 2; m++) {
		for (unsigned i = 0; i < o->nlosses && !interrupted; i++) {
			struct row *r = &rows[(*n)++];
			struct sim_result s;

			fprintf(stderr, "[sim %s loss %g]\n", sim_mode_name(modes[m]), o->losses[i]);
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

static int run_live(const struct compare_opts *o, struct row *rows, unsigned *n)
{
	static const enum ur_retx_mode modes[] = {UR_RETX_GBN, UR_RETX_SR};
	int rc = 0;

	if (geteuid() != 0) {
		fprintf(stderr, "uroce-lab compare: the live runs need root (namespaces); skipping them\n");
		return 0;
	}
	if (sh("command -v ib_write_bw >/dev/null")) {
		fprintf(stderr, "uroce-lab compare: ib_write_bw (perftest) is not installed; skipping the live runs\n");
		return 0;
	}
	if (live_up(o)) {
		fprintf(stderr, "uroce-lab compare: cannot set up the namespaces\n");
		live_down();
		return 1;
	}
	for (unsigned m = 0; m < 2; m++) {
		double lossless = 0;

		for (unsigned i = 0; i < o->nlosses && !interrupted; i++) {
			struct row *r = &rows[(*n)++];
			double g;

			fprintf(stderr, "[live %s loss %g] ib_write_bw -s %llu for %llu s\n",
				sim_mode_name(modes[m]), o->losses[i],
				(unsigned long long)o->live_size, (unsigned long long)o->live_secs);
			*r = (struct row){.where = "live", .mode = modes[m], .loss = o->losses[i]};
			g = live_run(o, modes[m], o->losses[i], r);
			r->ok = g >= 0;
			r->gbps = g;
			if (o->losses[i] == 0 && g > 0)
				lossless = g;
			r->fraction = lossless > 0 ? g / lossless : 0;
			r->model = modes[m] == UR_RETX_SR ? 1 - o->losses[i]
							   : gbn_live_model(o, r);
			if (!r->ok)
				rc = 1;
			print_row(r);
		}
	}
	live_down();
	return rc;
}

/* The PNG: measured fractions as points, the models as curves, loss on a log axis. */
static void plot(const struct compare_opts *o, const struct row *rows, unsigned n,
		 const char *csv)
{
	double w_sim = 0, w_live = 0;
	unsigned nlive = 0;
	bool have_live = false;
	char png[PATH_MAX];
	FILE *g;

	for (unsigned i = 0; i < n; i++) {
		have_live |= !strcmp(rows[i].where, "live");
		if (!strcmp(rows[i].where, "sim"))
			w_sim = rows[i].window;
		else if (rows[i].mode == UR_RETX_GBN && rows[i].ok && rows[i].window > 0) {
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
		"set terminal pngcairo size 1000,600 noenhanced\n"
		"set output '%s'\n"
		"set datafile separator ','\n"
		"set logscale x\nset xrange [5e-6:0.1]\nset yrange [0:1.05]\nset format x '%%g'\n"
		"set xlabel 'loss probability p'\nset ylabel 'goodput / lossless goodput'\n"
		"set key bottom left\nset grid\n"
		"set title 'go-back-N vs selective repeat (sim: %g Gb/s, %g us RTT, MTU %llu; live: ib_write_bw -s %llu)'\n"
		"gbn(x) = 1 / (1 + x * %g)\ngbn_live(x) = 1 / (1 + x * %g)\nsr(x) = 1 - x\n"
		"plot gbn(x) with lines lw 2 lc rgb '#c03030' title 'model 1/(1+pW), W = %.0f (sim BDP)', \\\n"
		"     sr(x) with lines lw 2 lc rgb '#3060c0' title 'model 1-p', \\\n",
		png, o->sim.rate_bps / 1e9, (double)o->sim.rtt_ps / 1e6,
		(unsigned long long)o->sim.mtu, (unsigned long long)o->live_size, w_sim, w_live,
		w_sim);
	if (nlive)
		fprintf(g, "     gbn_live(x) with lines dt 2 lc rgb '#c03030' title 'model 1/(1+pW), W = %.1f (live, measured)', \\\n",
			w_live);
	fprintf(g,
		"     '%s' using ($3>0 && strcol(1) eq 'sim' && strcol(2) eq 'gbn' ? $3 : 1/0):5 with points pt 7 ps 1.5 lc rgb '#c03030' title 'sim gbn', \\\n"
		"     '%s' using ($3>0 && strcol(1) eq 'sim' && strcol(2) eq 'sr' ? $3 : 1/0):5 with points pt 7 ps 1.5 lc rgb '#3060c0' title 'sim sr'",
		csv, csv);
	if (have_live)
		fprintf(g, ", \\\n"
			"     '%s' using ($3>0 && strcol(1) eq 'live' && strcol(2) eq 'gbn' ? $3 : 1/0):5 with points pt 6 ps 2 lw 2 lc rgb '#c03030' title 'live gbn', \\\n"
			"     '%s' using ($3>0 && strcol(1) eq 'live' && strcol(2) eq 'sr' ? $3 : 1/0):5 with points pt 6 ps 2 lw 2 lc rgb '#3060c0' title 'live sr'",
			csv, csv);
	fputc('\n', g);
	if (pclose(g) == 0)
		printf("plot: %s\n", png);
	else
		fprintf(stderr, "uroce-lab compare: gnuplot failed; no plot\n");
}

int cmd_compare(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"loss", required_argument, NULL, 'l'},      {"sim-only", no_argument, NULL, 'S'},
		{"live-only", no_argument, NULL, 'L'},       {"out", required_argument, NULL, 'o'},
		{"no-plot", no_argument, NULL, 'P'},         {"seed", required_argument, NULL, 's'},
		{"rate", required_argument, NULL, 'r'},      {"rtt", required_argument, NULL, 't'},
		{"mtu", required_argument, NULL, 'u'},       {"msg-size", required_argument, NULL, 'm'},
		{"messages", required_argument, NULL, 'n'},  {"live-size", required_argument, NULL, 'z'},
		{"live-duration", required_argument, NULL, 'D'},
		{"live-mtu", required_argument, NULL, 'M'}, {"help", no_argument, NULL, 'h'},
		{"reorder", required_argument, NULL, 'R'},   {"loss-back", required_argument, NULL, 'B'},
		{"reorder-back", required_argument, NULL, 'O'}, {"two-way", no_argument, NULL, 'W'},
		{NULL, 0, NULL, 0},
	};
	struct compare_opts o = {
		.losses = {0, 1e-5, 1e-4, 1e-3, 1e-2, 5e-2}, .nlosses = 6,
		.sim_on = true, .live_on = true, .live_size = 65536, .live_secs = 5,
		.live_mtu = 9000, .seed = 1, .out_dir = "compare-out", .plot = true,
	};
	struct row rows[4 * MAX_LIST];
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
			ok = parse_u64(optarg, &o.sim.mtu) && o.sim.mtu >= 256 && o.sim.mtu <= 4096 &&
			     !(o.sim.mtu & (o.sim.mtu - 1));
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
			ok = parse_u64(optarg, &o.live_secs) && o.live_secs > 0 && o.live_secs <= 3600;
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
		case 'O':
			ok = parse_reorder(optarg, &o.sim.reorder_back, &o.sim.reorder_back_depth);
			break;
		case 'W':
			o.sim.two_way = true;
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
		fprintf(stderr, "uroce-lab compare: cannot create %s: %s\n", o.out_dir, strerror(-err));
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	if (o.sim.two_way || o.sim.loss_back > 0 || o.sim.reorder > 0 || o.sim.reorder_back > 0) {
		double lb, rb;
		uint64_t db;

		sim_back_impair(&o.sim, 0, &lb, &rb, &db);
		char back[32] = "as data";

		if (!o.sim.two_way)
			snprintf(back, sizeof(back), "%g", lb);
		printf("data reordered %g:%llu; return path: loss %s, reordered %g:%llu\n",
		       o.sim.reorder, (unsigned long long)o.sim.reorder_depth, back, rb,
		       (unsigned long long)db);
	}
	print_header();
	if (o.sim_on)
		rc |= run_sim(&o, rows, &n);
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
		   "retx_bytes,naks,sacks,timeouts,fct_p50_us,fct_p99_us,ok\n");
	for (unsigned i = 0; i < n; i++)
		write_csv(f, &rows[i]);
	fclose(f);
	printf("csv: %s\n", csv);
	if (o.plot && n)
		plot(&o, rows, n, csv);
	return rc;
}
