/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The debug log, like NCCL_DEBUG: UROCE_DEBUG=1 explains device open, GID
 * and MTU choice, neighbour resolution, every QP transition and the first
 * error completion of each QP; 2 adds more detail. Level-0 messages (why a
 * device could not be opened) always print. UROCE_DEBUG_FILE redirects it.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "uroce.h"

int uroce_debug_level(void)
{
	const char *v = getenv("UROCE_DEBUG");

	return v ? atoi(v) : 0;
}

static FILE *log_file(void)
{
	static FILE *f;
	const char *path;

	if (f)
		return f;
	path = getenv("UROCE_DEBUG_FILE");
	if (path)
		f = fopen(path, "a");
	if (!f)
		f = stderr;
	return f;
}

void uroce_log(struct uroce_context *ctx, int level, const char *fmt, ...)
{
	struct timespec ts;
	char line[512];
	va_list ap;
	FILE *f;

	if (level > (ctx ? ctx->debug : uroce_debug_level()))
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	f = log_file();
	fprintf(f, "uroce[%d] %ld.%06ld %s: %s\n", (int)getpid(), (long)ts.tv_sec,
		ts.tv_nsec / 1000, ctx ? ctx->conf.name : "-", line);
	fflush(f);
}
