/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * uroce: what operators run. Subcommands mirror iproute2's `rdma` where a
 * Soft-RoCE user would expect them. The research tools are `uroce-lab`.
 */
#include <stdio.h>
#include <string.h>

#include "uroce.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{"link", cmd_link, "add, delete and show uroce devices (like `rdma link`)"},
	{"env", cmd_env, "print the environment verbs programs need: eval \"$(uroce env)\""},
	{"stat", cmd_stat, "device counters summed over every process, with rates"},
};

/* Commands that moved to uroce-lab: old habits get an answer, not "unknown command". */
static const char *const moved[] = {"sim", "compare", "experiment", "bottleneck"};

static void usage(FILE *f)
{
	fprintf(f, "usage: uroce <command> [options]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n`uroce <command> --help` describes a command. The simulator and the\n"
		   "experiments (sim, compare, experiment, bottleneck) are `uroce-lab`.\n");
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
	for (size_t i = 0; i < sizeof(moved) / sizeof(moved[0]); i++) {
		if (!strcmp(argv[1], moved[i])) {
			fprintf(stderr, "uroce %s moved: use uroce-lab %s\n", moved[i], moved[i]);
			return 2;
		}
	}
	fprintf(stderr, "uroce: unknown command '%s'\n\n", argv[1]);
	usage(stderr);
	return 2;
}
