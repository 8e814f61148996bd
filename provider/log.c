/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The debug log, like NCCL_DEBUG: UROCE_DEBUG=1 explains device open, GID
 * and MTU choice, neighbour resolution, every QP transition and the first
 * error completion of each QP; 2 adds more detail. Level-0 messages (why a
 * device could not be opened) always print. UROCE_DEBUG_FILE redirects it.
 * A device logs at its own level (nic->cfg), lines without one at the
 * process's (config.c reads both).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "uroce.h"

static int debug_level(const struct uroce_nic *nic)
{
	return nic ? nic->cfg.debug : uroce_process_config()->debug;
}

static FILE *log_file(void)
{
	static FILE *f;
	const char *path;

	if (f)
		return f;
	path = uroce_process_config()->debug_file;
	if (*path)
		f = fopen(path, "a");
	if (!f)
		f = stderr;
	return f;
}

void uroce_log(struct uroce_nic *nic, int level, const char *fmt, ...)
{
	struct timespec ts;
	char line[512];
	va_list ap;
	FILE *f;

	if (level > debug_level(nic))
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	f = log_file();
	fprintf(f, "uroce[%d] %ld.%06ld %s: %s\n", (int)getpid(), (long)ts.tv_sec,
		ts.tv_nsec / 1000, nic ? nic->conf.name : "-", line);
	fflush(f);
}

/*
 * A refused verbs call, at level 1: the call, the errno and the attribute
 * behind it, so `ibv_modify_qp: Invalid argument` comes with its reason.
 * Returns err, for `return uroce_refuse(...)` and `errno = uroce_refuse(...)`.
 */
int uroce_refuse(struct uroce_nic *nic, int err, const char *call, const char *fmt, ...)
{
	char why[384];
	va_list ap;

	if (debug_level(nic) < 1)
		return err;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	uroce_log(nic, 1, "%s refused, %s (%s): %s", call, strerrorname_np(err), strerror(err),
		  why);
	return err;
}
