/* SPDX-License-Identifier: BSD-2-Clause */
#include <stdio.h>
#include <string.h>

#include "command.h"

static void usage(const struct ur_program *p, FILE *f)
{
	fprintf(f, "usage: %s <command> [options]\n\ncommands:\n", p->name);
	for (size_t i = 0; i < p->ncommands; i++)
		fprintf(f, "  %-10s %s\n", p->commands[i].name, p->commands[i].summary);
	fprintf(f, "\n%s", p->help_tail);
}

int ur_command_main(const struct ur_program *p, int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		usage(p, stdout);
		return argc < 2 ? 2 : 0;
	}
	for (size_t i = 0; i < p->ncommands; i++)
		if (!strcmp(argv[1], p->commands[i].name))
			return p->commands[i].fn(argc - 1, argv + 1);
	for (size_t i = 0; i < p->nmoved; i++) {
		if (!strcmp(argv[1], p->moved[i])) {
			fprintf(stderr, "%s %s moved: use %s %s\n", p->name, p->moved[i],
				p->moved_to, p->moved[i]);
			return 2;
		}
	}
	fprintf(stderr, "%s: unknown command '%s'\n\n", p->name, argv[1]);
	usage(p, stderr);
	return 2;
}
