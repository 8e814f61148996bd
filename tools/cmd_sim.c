/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `uroce sim`: run flows of messages through the simulator and report
 * goodput, retransmissions, NAKs, timeouts and message completion times,
 * as a table or as CSV rows that scripts can rely on.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cc_spec.h"
#include "sim.h"
#include "uroce.h"
#include "workload.h"

#define MAX_LIST 32

struct sim_opts {
	enum ur_retx_mode modes[MAX_LIST];
	unsigned nmodes;
	double losses[MAX_LIST];
	unsigned nlosses;
	uint64_t rate_bps;
	uint64_t rtt_ps;
	uint64_t mtu;
	uint64_t msg_size;
	uint64_t messages;
	uint64_t flows;
	uint64_t depth;     /* 0: enough to fill twice the bandwidth-delay product */
	uint64_t seed;
	int timeout;        /* IB exponent, -1: from the RTT */
	uint64_t rto_low_ps;  /* SR timeouts, 0: from the RTT */
	uint64_t rto_high_ps;
	enum ur_wr_opcode opcode;
	double burst;       /* mean loss burst length (Gilbert-Elliott), 0 = independent */
	double reorder;
	uint64_t reorder_depth;
	double dup;
	double loss_back;   /* loss of ACKs and responses on the way back */
	double ce;          /* ECN CE marking probability of ECN-capable data packets */
	uint8_t tclass;     /* traffic class of the QPs (DSCP << 2 | ECN) */
	const char *cc;     /* congestion-control spec (cc_spec.h) */
	bool verify;
	bool ipv6;
	const char *pcap;
	bool csv;
	bool header;
	bool quiet;
};

struct sim_result {
	double goodput_gbps;
	double fraction;
	double lossless_gbps;
	uint64_t retx_packets;
	uint64_t retx_bytes;
	uint64_t naks;
	uint64_t sacks;
	uint64_t timeouts;
	double fct_p50_us;
	double fct_p99_us;
	uint64_t completed;
	uint64_t errors;
	uint64_t verify_failures;
	double window_pkts;
	double sim_time_us;
	uint64_t dropped;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: uroce sim [options]\n"
		"\n"
		"Run message flows between two hosts joined by a switch, in virtual time.\n"
		"Lists (comma separated) for --mode and --loss run every combination, one row each.\n"
		"\n"
		"  --mode gbn|sr[,..]   retransmission: IBTA go-back-N or selective repeat (gbn)\n"
		"  --rate R             link rate, e.g. 400G, 100G, 25G (400G)\n"
		"  --rtt T              round-trip propagation time, e.g. 10us (10us)\n"
		"  --mtu N              path MTU: 256, 512, 1024, 2048, 4096 (4096)\n"
		"  --loss P[,..]        independent loss probability of data packets (0)\n"
		"  --burst L            make losses bursty: Gilbert-Elliott with mean burst length L\n"
		"  --reorder P:D        hold back a fraction P of packets by D packet times\n"
		"  --dup P              duplicate a fraction P of packets\n"
		"  --loss-back P        loss probability on the way back (ACKs, READ responses) (0)\n"
		"  --ce P               mark a fraction P of data packets ECN CE on the way (0)\n"
		"  --tclass N           the QPs' traffic class, e.g. 106 = DSCP 26 (0)\n"
		"  --cc SPEC            congestion control, e.g. dcqcn, none, paper,rpg_ai_rate=40\n"
		"                       (NVIDIA's DCQCN defaults; see uroce link --help)\n"
		"  --op OP              write, write-imm, send, send-imm, read, fetch-add, cmp-swap (write)\n"
		"  --msg-size S         message size, e.g. 1M, 64K, 4096 (1M)\n"
		"  --messages N         messages per flow (200)\n"
		"  --flows N            concurrent flows (QP pairs) on the same two hosts (1)\n"
		"  --depth N            messages outstanding per flow (enough for 2x the BDP)\n"
		"  --timeout E          local ACK timeout exponent: 4.096 us x 2^E (from the RTT)\n"
		"  --rto-low T          SR: timeout with under 3 packets in flight (2 x RTT)\n"
		"  --rto-high T         SR: timeout otherwise (3 x RTT)\n"
		"  --seed S             random seed; equal seeds give identical runs (1)\n"
		"  --verify             pattern every message and check every byte\n"
		"  --ipv6               hosts use IPv6 addresses (fd00::N) instead of 10.0.0.N\n"
		"  --pcap FILE          write every transmitted frame to FILE (last run only)\n"
		"  --csv                print CSV: a header line and one row per run\n"
		"  --no-header          with --csv, leave the header line out\n"
		"  --quiet              no progress line on stderr\n"
		"\n"
		"CSV columns: mode,loss,goodput_gbps,goodput_fraction,retx_packets,naks,timeouts,\n"
		"fct_p50_us,fct_p99_us, then rate_gbps,rtt_us,mtu,msg_size,messages,flows,seed,\n"
		"retx_bytes,sacks,window_pkts,model_fraction,completed,errors,verify_failures.\n"
		"goodput_fraction is goodput over the lossless goodput of the link (rate times\n"
		"payload over payload plus every header and the Ethernet framing), so 1.0 means\n"
		"nothing was lost; model_fraction is 1/(1+pW) for gbn and 1-p for sr.\n");
}

static const char *mode_name(enum ur_retx_mode m)
{
	return m == UR_RETX_SR ? "sr" : "gbn";
}

static bool parse_op(const char *s, enum ur_wr_opcode *op)
{
	static const struct {
		const char *name;
		enum ur_wr_opcode op;
	} ops[] = {
		{"write", UR_WR_RDMA_WRITE},       {"write-imm", UR_WR_RDMA_WRITE_WITH_IMM},
		{"send", UR_WR_SEND},              {"send-imm", UR_WR_SEND_WITH_IMM},
		{"read", UR_WR_RDMA_READ},         {"fetch-add", UR_WR_ATOMIC_FETCH_AND_ADD},
		{"cmp-swap", UR_WR_ATOMIC_CMP_AND_SWP},
	};

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		if (!strcmp(s, ops[i].name)) {
			*op = ops[i].op;
			return true;
		}
	}
	return false;
}

static bool parse_list(const char *arg, bool (*one)(const char *, void *), void *out, size_t size,
		       unsigned *n)
{
	char buf[512], *save = NULL, *tok;

	if (strlen(arg) >= sizeof(buf))
		return false;
	strcpy(buf, arg);
	*n = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (*n == MAX_LIST || !one(tok, (char *)out + *n * size))
			return false;
		(*n)++;
	}
	return *n > 0;
}

static bool one_mode(const char *s, void *out)
{
	enum ur_retx_mode *m = out;

	if (!strcmp(s, "gbn"))
		*m = UR_RETX_GBN;
	else if (!strcmp(s, "sr"))
		*m = UR_RETX_SR;
	else
		return false;
	return true;
}

static bool one_loss(const char *s, void *out)
{
	double *p = out;

	return parse_double(s, p) && *p >= 0 && *p < 1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double percentile_us(uint64_t *v, size_t n, double q)
{
	size_t i;

	if (!n)
		return 0;
	i = (size_t)ceil(q * (double)n) - 1;
	if (i >= n)
		i = n - 1;
	return (double)v[i] / SIM_PS_PER_US;
}

static double now_wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static unsigned kind_of(enum ur_wr_opcode op)
{
	switch (op) {
	case UR_WR_RDMA_READ:
		return UR_KIND_READ_RESP;
	case UR_WR_RDMA_WRITE:
	case UR_WR_RDMA_WRITE_WITH_IMM:
		return UR_KIND_WRITE;
	default:
		return UR_KIND_SEND;
	}
}

static int run_one(const struct sim_opts *o, enum ur_retx_mode mode, double loss,
		   struct sim_result *r)
{
	uint64_t wire = sim_message_wire_bytes((uint32_t)o->msg_size, (uint32_t)o->mtu,
					       kind_of(o->opcode), o->ipv6, mode == UR_RETX_SR);
	double pkt_wire = (double)wire / UR_MAX(1.0, ceil((double)o->msg_size / o->mtu));
	double bdp_bytes = (double)o->rate_bps * o->rtt_ps / 8 / SIM_PS_PER_S;
	struct ur_dev_config cfg;
	struct sim_link_cfg data = {0}, back = {0}, clean;
	struct sim_flow_cfg fc;
	struct sim_workload *w;
	struct sim_node *a, *b;
	struct sim *s;
	uint64_t total_fct = 0, *fct, first = UINT64_MAX, last = 0, bytes = 0;
	double t0 = now_wall(), next_progress = t0 + 1.0;
	int timeout = o->timeout;
	bool progress_shown = false;

	memset(r, 0, sizeof(*r));
	r->window_pkts = bdp_bytes / pkt_wire;
	if (timeout < 0) {
		/* three round trips, so queueing never fires it spuriously; with
		 * selective repeat its own timeouts come first, this is the last resort */
		double rto_us = (mode == UR_RETX_SR ? 30.0 : 3.0) * o->rtt_ps / SIM_PS_PER_US;

		timeout = 1;
		while (4.096 * (1u << timeout) < rto_us && timeout < 31)
			timeout++;
	}

	ur_dev_config_default(&cfg);
	cfg.max_mtu = (uint32_t)o->mtu;
	cfg.retx_mode = mode;
	cfg.max_inflight = (uint32_t)UR_MAX(1024.0, 4 * r->window_pkts);
	cfg.link_rate_mbps = (uint32_t)(o->rate_bps / 1000000);
	if (o->cc) {
		char err[128];

		if (ur_cc_spec_apply(&cfg, o->cc, err, sizeof(err))) {
			fprintf(stderr, "uroce sim: --cc: %s\n", err);
			return -1;
		}
	}
	/* IRN's two timeouts, scaled to the path: RTO_high a few round trips */
	cfg.sr_rto_high_ns = (o->rto_high_ps ? o->rto_high_ps : 3 * o->rtt_ps) / SIM_PS_PER_NS;
	cfg.sr_rto_low_ns = (o->rto_low_ps ? o->rto_low_ps : 2 * o->rtt_ps) / SIM_PS_PER_NS;
	data.rate_bps = back.rate_bps = o->rate_bps;
	data.prop_ps = back.prop_ps = o->rtt_ps / 4;
	if (o->burst > 1) {
		/* mean burst L: leave the bad state with probability 1/L; enter it so that
		 * the long-run loss rate is p */
		data.impair.ge_p_bg = 1.0 / o->burst;
		data.impair.ge_p_gb = loss * data.impair.ge_p_bg / (1 - loss);
		data.impair.ge_loss_bad = 1.0;
	} else {
		data.impair.loss = loss;
	}
	data.impair.reorder = o->reorder;
	data.impair.reorder_depth = (uint32_t)o->reorder_depth;
	data.impair.dup = o->dup;
	data.impair.ce = o->ce;
	back.impair.loss = o->loss_back;

	s = sim_create(o->seed);
	if (!s)
		return -1;
	sim_use_ipv6(s, o->ipv6);
	if (o->pcap && sim_capture(s, o->pcap)) {
		fprintf(stderr, "uroce sim: cannot write %s\n", o->pcap);
		sim_destroy(s);
		return -1;
	}
	/* losses happen once per direction: on A's uplink for data, B's for ACKs */
	clean = data;
	memset(&clean.impair, 0, sizeof(clean.impair));
	a = sim_add_node(s, &cfg, &data, &clean, NULL);
	b = sim_add_node(s, &cfg, &back, &clean, NULL);
	w = sim_workload_create(s);
	if (!a || !b || !w) {
		sim_destroy(s);
		return -1;
	}
	memset(&fc, 0, sizeof(fc));
	fc.qp_type = UR_QPT_RC;
	fc.opcode = o->opcode;
	fc.msg_size = (uint32_t)o->msg_size;
	fc.messages = o->messages;
	fc.depth = (uint32_t)(o->depth ? o->depth
				       : UR_MAX(2.0, ceil(2 * bdp_bytes / UR_MAX(o->msg_size, 1))));
	fc.verify = o->verify;
	sim_qp_params_default(&fc.qp);
	fc.qp.path_mtu = ur_mtu_enum((uint32_t)o->mtu);
	fc.qp.timeout = (uint8_t)timeout;
	fc.qp.tclass = o->tclass;
	for (uint64_t i = 0; i < o->flows; i++) {
		if (!sim_workload_add_flow(w, a, b, &fc)) {
			sim_workload_destroy(w);
			sim_destroy(s);
			return -1;
		}
	}
	sim_workload_stop_when_done(w, true);

	/* run in slices of virtual time so progress can be shown */
	while (!sim_workload_done(w)) {
		uint64_t before = sim_events(s);

		sim_run(s, sim_now(s) + 100 * SIM_PS_PER_US);
		if (sim_events(s) == before && !sim_workload_done(w))
			break; /* nothing left to happen: the flows are stuck */
		if (!o->quiet && now_wall() > next_progress) {
			uint64_t done = 0;

			for (unsigned i = 0; i < sim_workload_nflows(w); i++)
				done += sim_flow_stats(sim_workload_flow(w, i))->completed;
			fprintf(stderr, "\r[sim %s loss %g] %llu/%llu messages, virtual %.3f ms  ",
				mode_name(mode), loss, (unsigned long long)done,
				(unsigned long long)(o->messages * o->flows),
				(double)sim_now(s) / 1e9);
			progress_shown = true;
			next_progress = now_wall() + 0.5;
		}
	}
	if (progress_shown)
		fprintf(stderr, "\r%78s\r", "");

	for (unsigned i = 0; i < sim_workload_nflows(w); i++) {
		const struct sim_flow_stats *st = sim_flow_stats(sim_workload_flow(w, i));

		total_fct += st->nfct;
		r->completed += st->completed;
		r->errors += st->errors;
		r->verify_failures += st->verify_failures;
		bytes += st->bytes;
		if (st->posted && st->first_post_ps < first)
			first = st->first_post_ps;
		if (st->last_done_ps > last)
			last = st->last_done_ps;
	}
	fct = malloc((total_fct ? total_fct : 1) * sizeof(*fct));
	if (fct) {
		size_t k = 0;

		for (unsigned i = 0; i < sim_workload_nflows(w); i++) {
			const struct sim_flow_stats *st = sim_flow_stats(sim_workload_flow(w, i));

			memcpy(fct + k, st->fct_ps, st->nfct * sizeof(*fct));
			k += st->nfct;
		}
		qsort(fct, total_fct, sizeof(*fct), cmp_u64);
		r->fct_p50_us = percentile_us(fct, total_fct, 0.50);
		r->fct_p99_us = percentile_us(fct, total_fct, 0.99);
		free(fct);
	}
	if (last > first)
		r->goodput_gbps = (double)bytes * 8 / ((double)(last - first) / SIM_PS_PER_S) / 1e9;
	r->lossless_gbps = (double)o->rate_bps / 1e9 * (double)o->msg_size / (double)wire;
	r->fraction = r->lossless_gbps > 0 ? r->goodput_gbps / r->lossless_gbps : 0;
	for (struct sim_node *n = a; n; n = n == a ? b : NULL) {
		const uint64_t *c = ur_dev_counters(sim_node_dev(n));

		r->retx_packets += c[UR_CTR_retransmitted_packets];
		r->naks += c[UR_CTR_tx_naks];
		r->sacks += c[UR_CTR_sr_sacks_sent];
		r->timeouts += c[UR_CTR_local_ack_timeout_err];
	}
	r->retx_bytes = (uint64_t)(r->retx_packets * (double)o->mtu);
	r->sim_time_us = (double)sim_now(s) / SIM_PS_PER_US;
	r->dropped = sim_node_up_stats(a).dropped;
	sim_workload_destroy(w);
	sim_destroy(s);
	return 0;
}

static double model_fraction(enum ur_retx_mode mode, double p, double w)
{
	return mode == UR_RETX_SR ? 1 - p : 1 / (1 + p * w);
}

static void print_human(const struct sim_opts *o, enum ur_retx_mode mode, double loss,
			const struct sim_result *r)
{
	printf("mode %s  loss %g  rate %g Gb/s  rtt %g us  mtu %llu  %llu x %llu B, %llu flow(s), seed %llu\n",
	       mode_name(mode), loss, o->rate_bps / 1e9, (double)o->rtt_ps / SIM_PS_PER_US,
	       (unsigned long long)o->mtu, (unsigned long long)o->messages,
	       (unsigned long long)o->msg_size, (unsigned long long)o->flows,
	       (unsigned long long)o->seed);
	printf("  goodput        %8.2f Gb/s  (%.3f of lossless %.2f Gb/s; model %.3f with W = %.1f packets)\n",
	       r->goodput_gbps, r->fraction, r->lossless_gbps,
	       model_fraction(mode, loss, r->window_pkts), r->window_pkts);
	printf("  retransmitted  %8llu packets\n", (unsigned long long)r->retx_packets);
	printf("  NAKs / SACKs   %8llu / %llu\n", (unsigned long long)r->naks,
	       (unsigned long long)r->sacks);
	printf("  timeouts       %8llu\n", (unsigned long long)r->timeouts);
	printf("  FCT p50 / p99  %8.2f / %.2f us\n", r->fct_p50_us, r->fct_p99_us);
	if (r->errors || r->verify_failures || r->completed != o->messages * o->flows)
		printf("  !! completed %llu of %llu, %llu error completions, %llu corrupted\n",
		       (unsigned long long)r->completed,
		       (unsigned long long)(o->messages * o->flows), (unsigned long long)r->errors,
		       (unsigned long long)r->verify_failures);
}

static void print_csv(const struct sim_opts *o, enum ur_retx_mode mode, double loss,
		      const struct sim_result *r)
{
	printf("%s,%g,%.4f,%.5f,%llu,%llu,%llu,%.3f,%.3f,%g,%g,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%.2f,%.5f,%llu,%llu,%llu\n",
	       mode_name(mode), loss, r->goodput_gbps, r->fraction,
	       (unsigned long long)r->retx_packets, (unsigned long long)r->naks,
	       (unsigned long long)r->timeouts, r->fct_p50_us, r->fct_p99_us, o->rate_bps / 1e9,
	       (double)o->rtt_ps / SIM_PS_PER_US, (unsigned long long)o->mtu,
	       (unsigned long long)o->msg_size, (unsigned long long)o->messages,
	       (unsigned long long)o->flows, (unsigned long long)o->seed,
	       (unsigned long long)r->retx_bytes, (unsigned long long)r->sacks, r->window_pkts,
	       model_fraction(mode, loss, r->window_pkts), (unsigned long long)r->completed,
	       (unsigned long long)r->errors, (unsigned long long)r->verify_failures);
}

int cmd_sim(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"mode", required_argument, NULL, 'm'},   {"rate", required_argument, NULL, 'r'},
		{"rtt", required_argument, NULL, 't'},    {"mtu", required_argument, NULL, 'u'},
		{"loss", required_argument, NULL, 'l'},   {"burst", required_argument, NULL, 'b'},
		{"reorder", required_argument, NULL, 'o'}, {"dup", required_argument, NULL, 'd'},
		{"loss-back", required_argument, NULL, 'L'},
		{"ce", required_argument, NULL, 'E'},     {"tclass", required_argument, NULL, 'C'},
		{"cc", required_argument, NULL, 'Q'},
		{"op", required_argument, NULL, 'p'},     {"msg-size", required_argument, NULL, 's'},
		{"messages", required_argument, NULL, 'n'}, {"flows", required_argument, NULL, 'f'},
		{"depth", required_argument, NULL, 'D'},  {"timeout", required_argument, NULL, 'T'},
		{"rto-low", required_argument, NULL, 'R'}, {"rto-high", required_argument, NULL, 'I'},
		{"seed", required_argument, NULL, 'S'},   {"verify", no_argument, NULL, 'V'},
		{"ipv6", no_argument, NULL, '6'},         {"pcap", required_argument, NULL, 'P'},
		{"csv", no_argument, NULL, 'c'},          {"no-header", no_argument, NULL, 'H'},
		{"quiet", no_argument, NULL, 'q'},        {"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct sim_opts o = {
		.modes = {UR_RETX_GBN}, .nmodes = 1, .losses = {0}, .nlosses = 1,
		.rate_bps = 400000000000ull, .rtt_ps = 10 * SIM_PS_PER_US, .mtu = 4096,
		.msg_size = 1 << 20, .messages = 200, .flows = 1, .seed = 1, .timeout = -1,
		.opcode = UR_WR_RDMA_WRITE, .header = true,
	};
	uint64_t v;
	int c, rc = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		bool ok = true;

		switch (c) {
		case 'm':
			ok = parse_list(optarg, one_mode, o.modes, sizeof(o.modes[0]), &o.nmodes);
			break;
		case 'l':
			ok = parse_list(optarg, one_loss, o.losses, sizeof(o.losses[0]), &o.nlosses);
			break;
		case 'r':
			ok = parse_rate(optarg, &o.rate_bps);
			break;
		case 't':
			ok = parse_time_ps(optarg, &o.rtt_ps) && o.rtt_ps >= 4000;
			break;
		case 'u':
			ok = parse_u64(optarg, &o.mtu) && ur_mtu_enum((uint32_t)o.mtu) &&
			     ur_mtu_bytes(ur_mtu_enum((uint32_t)o.mtu)) == o.mtu;
			break;
		case 'b':
			ok = parse_double(optarg, &o.burst) && o.burst >= 1;
			break;
		case 'o': {
			char *colon = strchr(optarg, ':');

			ok = colon != NULL;
			if (ok) {
				*colon = 0;
				ok = parse_double(optarg, &o.reorder) && o.reorder >= 0 &&
				     o.reorder <= 1 && parse_u64(colon + 1, &o.reorder_depth);
			}
			break;
		}
		case 'd':
			ok = parse_double(optarg, &o.dup) && o.dup >= 0 && o.dup <= 1;
			break;
		case 'L':
			ok = one_loss(optarg, &o.loss_back);
			break;
		case 'E':
			ok = parse_double(optarg, &o.ce) && o.ce >= 0 && o.ce <= 1;
			break;
		case 'C':
			ok = parse_u64(optarg, &v) && v <= 255;
			o.tclass = (uint8_t)v;
			break;
		case 'Q': {
			struct ur_dev_config probe;
			char err[128];

			ur_dev_config_default(&probe);
			ok = !ur_cc_spec_apply(&probe, optarg, err, sizeof(err));
			if (!ok)
				fprintf(stderr, "uroce sim: --cc: %s\n", err);
			o.cc = optarg;
			break;
		}
		case 'p':
			ok = parse_op(optarg, &o.opcode);
			break;
		case 's':
			ok = parse_size(optarg, &o.msg_size) && o.msg_size <= (1u << 30);
			break;
		case 'n':
			ok = parse_u64(optarg, &o.messages) && o.messages > 0;
			break;
		case 'f':
			ok = parse_u64(optarg, &o.flows) && o.flows > 0 && o.flows <= 4096;
			break;
		case 'D':
			ok = parse_u64(optarg, &o.depth) && o.depth > 0 && o.depth <= UR_MAX_WR;
			break;
		case 'T':
			ok = parse_u64(optarg, &v) && v <= 31;
			o.timeout = (int)v;
			break;
		case 'S':
			ok = parse_u64(optarg, &o.seed);
			break;
		case 'R':
			ok = parse_time_ps(optarg, &o.rto_low_ps) && o.rto_low_ps > 0;
			break;
		case 'I':
			ok = parse_time_ps(optarg, &o.rto_high_ps) && o.rto_high_ps > 0;
			break;
		case 'V':
			o.verify = true;
			break;
		case '6':
			o.ipv6 = true;
			break;
		case 'P':
			o.pcap = optarg;
			break;
		case 'c':
			o.csv = true;
			break;
		case 'H':
			o.header = false;
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
			fprintf(stderr, "uroce sim: bad value '%s' for --%s\n", optarg,
				longopts[0].name ? argv[optind - 2] + 2 : "?");
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "uroce sim: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (!isatty(STDERR_FILENO))
		o.quiet = true;
	if (o.csv && o.header)
		printf("mode,loss,goodput_gbps,goodput_fraction,retx_packets,naks,timeouts,fct_p50_us,fct_p99_us,rate_gbps,rtt_us,mtu,msg_size,messages,flows,seed,retx_bytes,sacks,window_pkts,model_fraction,completed,errors,verify_failures\n");
	for (unsigned i = 0; i < o.nmodes; i++) {
		for (unsigned j = 0; j < o.nlosses; j++) {
			struct sim_result r;

			if (run_one(&o, o.modes[i], o.losses[j], &r)) {
				fprintf(stderr, "uroce sim: cannot set up the scenario\n");
				return 1;
			}
			if (o.csv)
				print_csv(&o, o.modes[i], o.losses[j], &r);
			else
				print_human(&o, o.modes[i], o.losses[j], &r);
			fflush(stdout);
			if (r.errors || r.verify_failures || r.completed != o.messages * o.flows)
				rc = 1;
		}
	}
	return rc;
}
