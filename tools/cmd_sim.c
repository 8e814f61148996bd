/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `uroce-lab sim`: run flows of messages through the simulator and report
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
#include "sim_run.h"
#include "lab.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: uroce-lab sim [options]\n"
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
		"  --reorder P[:D]      hold back a fraction P of data packets by D packet times (D 4)\n"
		"  --dup P              duplicate a fraction P of packets\n"
		"  --loss-back P        loss probability on the way back (ACKs, NAKs, SACKs,\n"
		"                       READ and atomic responses) (0); --ack-loss P is the same\n"
		"  --burst-back L       make the way back's losses bursty, mean burst length L\n"
		"  --reorder-back P[:D] hold back a fraction P of the packets on the way back by\n"
		"                       D packet times (0)\n"
		"  --two-way            the way back gets each --loss value (and --burst and\n"
		"                       --reorder unless --burst-back or --reorder-back is given)\n"
		"                       too: loss both ways; each direction is impaired once,\n"
		"                       data out, the rest back\n"
		"  --ce P               mark a fraction P of data packets ECN CE on the way (0)\n"
		"  --tclass N           the QPs' traffic class, e.g. 106 = DSCP 26 (0)\n"
		"  --cc SPEC            congestion control, e.g. dcqcn, none, paper,rpg_ai_rate=40\n"
		"                       (NVIDIA's DCQCN defaults; see uroce link --help)\n"
		"  --op OP              write, write-imm, send, send-imm, read, fetch-add, cmp-swap (write)\n"
		"  --transport T        rc, uc (send and write ops) or ud (send ops, one MTU at most) (rc)\n"
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
		"retx_bytes,sacks,window_pkts,model_fraction,completed,errors,verify_failures,\n"
		"loss_back,reorder,reorder_back, then burst,reorder_depth,burst_back,\n"
		"reorder_back_depth (the way back's as applied: --two-way fills them in).\n"
		"goodput_fraction is goodput over the lossless goodput of the link (rate times\n"
		"payload over payload plus every header and the Ethernet framing), so 1.0 means\n"
		"nothing was lost; model_fraction is 1/(1+pW) for gbn and 1-p for sr.\n");
}

static bool parse_transport(const char *s, enum ur_qp_type *t)
{
	if (!strcmp(s, "rc"))
		*t = UR_QPT_RC;
	else if (!strcmp(s, "uc"))
		*t = UR_QPT_UC;
	else if (!strcmp(s, "ud"))
		*t = UR_QPT_UD;
	else
		return false;
	return true;
}

/* UC has SEND and WRITE only; UD has SEND only, one packet per message. */
static bool transport_fits(const struct sim_opts *o)
{
	bool send = o->opcode == UR_WR_SEND || o->opcode == UR_WR_SEND_WITH_IMM;
	bool write = o->opcode == UR_WR_RDMA_WRITE || o->opcode == UR_WR_RDMA_WRITE_WITH_IMM;

	if (o->transport == UR_QPT_UC && !send && !write) {
		fprintf(stderr, "uroce-lab sim: UC carries send and write operations only\n");
		return false;
	}
	if (o->transport == UR_QPT_UD && !send) {
		fprintf(stderr, "uroce-lab sim: UD carries send operations only\n");
		return false;
	}
	if (o->transport == UR_QPT_UD && o->msg_size > o->mtu) {
		fprintf(stderr, "uroce-lab sim: a UD message is one packet: --msg-size %llu exceeds --mtu %llu\n",
			(unsigned long long)o->msg_size, (unsigned long long)o->mtu);
		return false;
	}
	return true;
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

static void print_human(const struct sim_opts *o, enum ur_retx_mode mode, double loss,
			const struct sim_result *r)
{
	static const char *const names[] = {[UR_QPT_RC] = "RC", [UR_QPT_UC] = "UC", [UR_QPT_UD] = "UD"};
	struct sim_path out, back;
	char a[96], b[96];

	printf("mode %s  loss %g  rate %g Gb/s  rtt %g us  mtu %llu  %llu x %llu B, %llu flow(s), seed %llu\n",
	       sim_mode_name(mode), loss, o->rate_bps / 1e9, (double)o->rtt_ps / SIM_PS_PER_US,
	       (unsigned long long)o->mtu, (unsigned long long)o->messages,
	       (unsigned long long)o->msg_size, (unsigned long long)o->flows,
	       (unsigned long long)o->seed);
	sim_path_of(o, loss, false, &out);
	sim_path_of(o, loss, true, &back);
	sim_path_describe(&out, a, sizeof(a));
	sim_path_describe(&back, b, sizeof(b));
	if (back.loss > 0 || back.reorder > 0 || out.reorder > 0 || out.burst > 1)
		printf("  impaired       out: %s; back: %s\n", a, b);
	printf("  goodput        %8.2f Gb/s  (%.3f of lossless %.2f Gb/s; model %.3f with W = %.1f packets)\n",
	       r->goodput_gbps, r->fraction, r->lossless_gbps,
	       sim_model_fraction(mode, loss, r->window_pkts), r->window_pkts);
	printf("  retransmitted  %8llu packets\n", (unsigned long long)r->retx_packets);
	printf("  NAKs / SACKs   %8llu / %llu\n", (unsigned long long)r->naks,
	       (unsigned long long)r->sacks);
	printf("  timeouts       %8llu  (SR RTOs %llu)\n", (unsigned long long)r->timeouts,
	       (unsigned long long)r->sr_timeouts);
	printf("  FCT p50 / p99  %8.2f / %.2f us\n", r->fct_p50_us, r->fct_p99_us);
	if (o->transport != UR_QPT_RC && sim_delivers(o))
		printf("  delivered      %8llu of %llu messages (%s: nothing is sent again)\n",
		       (unsigned long long)r->received, (unsigned long long)(o->messages * o->flows),
		       names[o->transport]);
	if (r->errors || r->verify_failures || r->completed != o->messages * o->flows)
		printf("  !! completed %llu of %llu, %llu error completions, %llu corrupted\n",
		       (unsigned long long)r->completed,
		       (unsigned long long)(o->messages * o->flows), (unsigned long long)r->errors,
		       (unsigned long long)r->verify_failures);
}

static void print_csv(const struct sim_opts *o, enum ur_retx_mode mode, double loss,
		      const struct sim_result *r)
{
	struct sim_path out, back;

	sim_path_of(o, loss, false, &out);
	sim_path_of(o, loss, true, &back);
	printf("%s,%g,%.4f,%.5f,%llu,%llu,%llu,%.3f,%.3f,%g,%g,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%.2f,%.5f,%llu,%llu,%llu,%g,%g,%g,%g,%llu,%g,%llu\n",
	       sim_mode_name(mode), loss, r->goodput_gbps, r->fraction,
	       (unsigned long long)r->retx_packets, (unsigned long long)r->naks,
	       (unsigned long long)r->timeouts, r->fct_p50_us, r->fct_p99_us, o->rate_bps / 1e9,
	       (double)o->rtt_ps / SIM_PS_PER_US, (unsigned long long)o->mtu,
	       (unsigned long long)o->msg_size, (unsigned long long)o->messages,
	       (unsigned long long)o->flows, (unsigned long long)o->seed,
	       (unsigned long long)r->retx_bytes, (unsigned long long)r->sacks, r->window_pkts,
	       sim_model_fraction(mode, loss, r->window_pkts), (unsigned long long)r->completed,
	       (unsigned long long)r->errors, (unsigned long long)r->verify_failures, back.loss,
	       out.reorder, back.reorder, out.burst, (unsigned long long)out.reorder_depth,
	       back.burst, (unsigned long long)back.reorder_depth);
}

int cmd_sim(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"mode", required_argument, NULL, 'm'},   {"rate", required_argument, NULL, 'r'},
		{"rtt", required_argument, NULL, 't'},    {"mtu", required_argument, NULL, 'u'},
		{"loss", required_argument, NULL, 'l'},   {"burst", required_argument, NULL, 'b'},
		{"reorder", required_argument, NULL, 'o'}, {"dup", required_argument, NULL, 'd'},
		{"loss-back", required_argument, NULL, 'L'},
		{"ack-loss", required_argument, NULL, 'L'},
		{"burst-back", required_argument, NULL, 'G'},
		{"reorder-back", required_argument, NULL, 'O'},
		{"two-way", no_argument, NULL, 'W'},
		{"ce", required_argument, NULL, 'E'},     {"tclass", required_argument, NULL, 'C'},
		{"cc", required_argument, NULL, 'Q'},
		{"op", required_argument, NULL, 'p'},     {"msg-size", required_argument, NULL, 's'},
		{"transport", required_argument, NULL, 'X'},
		{"messages", required_argument, NULL, 'n'}, {"flows", required_argument, NULL, 'f'},
		{"depth", required_argument, NULL, 'D'},  {"timeout", required_argument, NULL, 'T'},
		{"rto-low", required_argument, NULL, 'R'}, {"rto-high", required_argument, NULL, 'I'},
		{"seed", required_argument, NULL, 'S'},   {"verify", no_argument, NULL, 'V'},
		{"ipv6", no_argument, NULL, '6'},         {"pcap", required_argument, NULL, 'P'},
		{"csv", no_argument, NULL, 'c'},          {"no-header", no_argument, NULL, 'H'},
		{"quiet", no_argument, NULL, 'q'},        {"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct sim_opts o;
	uint64_t v;
	int c, rc = 0;

	sim_opts_default(&o);
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
		case 'G':
			ok = parse_double(optarg, &o.burst_back) && o.burst_back >= 1;
			break;
		case 'o':
			ok = parse_reorder(optarg, &o.reorder, &o.reorder_depth);
			break;
		case 'O':
			ok = parse_reorder(optarg, &o.reorder_back, &o.reorder_back_depth);
			break;
		case 'd':
			ok = parse_double(optarg, &o.dup) && o.dup >= 0 && o.dup <= 1;
			break;
		case 'L':
			ok = one_loss(optarg, &o.loss_back);
			break;
		case 'W':
			o.two_way = true;
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
				fprintf(stderr, "uroce-lab sim: --cc: %s\n", err);
			o.cc = optarg;
			break;
		}
		case 'p':
			ok = parse_op(optarg, &o.opcode);
			break;
		case 's':
			ok = parse_size(optarg, &o.msg_size) && o.msg_size <= (1u << 30);
			break;
		case 'X':
			ok = parse_transport(optarg, &o.transport);
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
			fprintf(stderr, "uroce-lab sim: bad value '%s' for --%s\n", optarg,
				longopts[0].name ? argv[optind - 2] + 2 : "?");
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "uroce-lab sim: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (!transport_fits(&o))
		return 2;
	if (!isatty(STDERR_FILENO))
		o.quiet = true;
	if (o.csv && o.header)
		printf("mode,loss,goodput_gbps,goodput_fraction,retx_packets,naks,timeouts,fct_p50_us,fct_p99_us,rate_gbps,rtt_us,mtu,msg_size,messages,flows,seed,retx_bytes,sacks,window_pkts,model_fraction,completed,errors,verify_failures,loss_back,reorder,reorder_back,burst,reorder_depth,burst_back,reorder_back_depth\n");
	for (unsigned i = 0; i < o.nmodes; i++) {
		for (unsigned j = 0; j < o.nlosses; j++) {
			struct sim_result r;

			if (sim_run_one(&o, o.modes[i], o.losses[j], &r)) {
				fprintf(stderr, "uroce-lab sim: cannot set up the scenario\n");
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
