/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef UROCE_DAEMON_CTL_H
#define UROCE_DAEMON_CTL_H

#include <stdbool.h>
#include <stdio.h>

/* Start device `name`'s daemon; with a switch, wait until programs can attach: 0 or -errno. */
int uroced_start(const char *name, const char *devdir, bool switched);
/* -ENODEV from uroced_start: the switch could not open the port; why, from the log */
void uroced_port_errors(const char *devdir, FILE *out);
/* Stop it (SIGTERM, then SIGKILL), if it runs. */
void uroced_stop(const char *devdir);
/* Its supervisor's pid, 0 when none runs. */
int uroced_pid(const char *devdir);
/* The pid a file of the daemon's names (uroced.switch, uroced.keeper), 0 when it does not run. */
int uroced_child_pid(const char *devdir, const char *file);

#endif
