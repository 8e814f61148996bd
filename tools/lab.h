/* SPDX-License-Identifier: BSD-2-Clause */
/* The `uroce-lab` command, the research tools: one function per subcommand. */
#ifndef UROCE_LAB_H
#define UROCE_LAB_H

#include "cli.h"

int cmd_sim(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_experiment(int argc, char **argv);
int cmd_bottleneck(int argc, char **argv);

#endif
