/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * uroce-lab: the research tools, apart from the `uroce` operators run. The
 * simulator and the experiments in it, the go-back-N/selective-repeat
 * comparison (whose live half drives `uroce` in two namespaces), and a
 * marking software switch for live congestion-control runs.
 */
#include <stdio.h>
#include <string.h>

#include "lab.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{"sim", cmd_sim, "run a scenario in the deterministic network simulator"},
	{"compare", cmd_compare, "go-back-N vs selective repeat under loss: simulator and live"},
	{"experiment", cmd_experiment, "congestion-control experiments: incast, converge"},
	{"bottleneck", cmd_bottleneck, "a rate-limited, ECN-marking switch between namespaces"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: uroce-lab <command> [options]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n`uroce-lab <command> --help` describes a command. Devices, their\n"
		   "environment and counters are `uroce` (link, env, stat).\n");
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return argc < 2 ? 2 : 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "uroce-lab: unknown command '%s'\n\n", argv[1]);
	usage(stderr);
	return 2;
}
