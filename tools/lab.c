/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * uroce-lab: the research tools, apart from the `uroce` operators run. The
 * simulator and the experiments in it, the go-back-N/selective-repeat
 * comparison (whose live half drives `uroce` in two namespaces), and a
 * marking software switch for live congestion-control runs.
 */
#include "command.h"
#include "lab.h"

static const struct ur_command commands[] = {
	{"sim", cmd_sim, "run a scenario in the deterministic network simulator"},
	{"compare", cmd_compare, "go-back-N vs selective repeat under loss: simulator and live"},
	{"experiment", cmd_experiment, "congestion-control experiments: incast, converge"},
	{"bottleneck", cmd_bottleneck, "a rate-limited, ECN-marking switch between namespaces"},
};

static const struct ur_program lab = {
	.name = "uroce-lab",
	.commands = commands,
	.ncommands = sizeof(commands) / sizeof(commands[0]),
	.help_tail = "`uroce-lab <command> --help` describes a command. Devices, their\n"
		     "environment and counters are `uroce` (link, env, stat).\n",
};

int main(int argc, char **argv)
{
	return ur_command_main(&lab, argc, argv);
}
