/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * uroce: what operators run. Subcommands mirror iproute2's `rdma` where a
 * Soft-RoCE user would expect them. The research tools are `uroce-lab`.
 */
#include "command.h"
#include "uroce.h"

static const struct ur_command commands[] = {
	{"link", cmd_link, "add, delete and show uroce devices (like `rdma link`)"},
	{"env", cmd_env, "print the environment verbs programs need: eval \"$(uroce env)\""},
	{"stat", cmd_stat, "device counters summed over every process, with rates"},
};

/* Commands that moved to uroce-lab: old habits get an answer, not "unknown command". */
static const char *const moved[] = {"sim", "compare", "experiment", "bottleneck"};

static const struct ur_program uroce = {
	.name = "uroce",
	.commands = commands,
	.ncommands = sizeof(commands) / sizeof(commands[0]),
	.help_tail = "`uroce <command> --help` describes a command. The simulator and the\n"
		     "experiments (sim, compare, experiment, bottleneck) are `uroce-lab`.\n",
	.moved = moved,
	.nmoved = sizeof(moved) / sizeof(moved[0]),
	.moved_to = "uroce-lab",
};

int main(int argc, char **argv)
{
	return ur_command_main(&uroce, argc, argv);
}
