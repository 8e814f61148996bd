/* SPDX-License-Identifier: BSD-2-Clause */
/* A program of subcommands: `uroce` and `uroce-lab` (command.c). */
#ifndef UR_COMMAND_H
#define UR_COMMAND_H

#include <stddef.h>

struct ur_command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

struct ur_program {
	const char *name;
	const struct ur_command *commands;
	size_t ncommands;
	const char *help_tail; /* printed after the command list */
	/* commands that moved to another program: old habits get an answer */
	const char *const *moved;
	size_t nmoved;
	const char *moved_to;
};

/* Run the subcommand argv[1] names; usage on --help, -h, help or none. */
int ur_command_main(const struct ur_program *p, int argc, char **argv);

#endif
