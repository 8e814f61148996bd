/* SPDX-License-Identifier: BSD-2-Clause */
/* The `uroce` command, what operators run: one function per subcommand. */
#ifndef UROCE_TOOL_H
#define UROCE_TOOL_H

#include "cli.h"

int cmd_link(int argc, char **argv);
int cmd_env(int argc, char **argv);
int cmd_stat(int argc, char **argv);

/* Where the provider library is: next to a build tree's uroce, or installed. */
const char *uroce_provider_path(void);

#endif
