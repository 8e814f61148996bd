/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What opening a device costs, and how many contexts one process can hold,
 * with the stock libibverbs only (docs/shared-device.md, section 1):
 *   openctx N [DEVICE]
 * calls ibv_get_device_list, then ibv_open_device on DEVICE (default uroce0)
 * up to N times, keeping every context open, and prints each open's duration
 * (CLOCK_MONOTONIC around the call alone), then one line of key=value pairs:
 * how many opened, the first open's time, and the first failure's errno.
 * Stops at the first failure; closes everything at the end.
 * Exits 0 if all N opened, 1 otherwise, 2 on bad arguments.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	const char *name = argc > 2 ? argv[2] : "uroce0";
	struct ibv_context **ctx;
	struct ibv_device **list;
	struct ibv_device *dev = NULL;
	double t0, ms, first_ms = -1, fail_ms = -1;
	int n, opened = 0, err = 0;

	n = argc > 1 ? atoi(argv[1]) : 0;
	if (argc < 2 || argc > 3 || n < 1) {
		fprintf(stderr, "usage: openctx N [DEVICE]\n");
		return 2;
	}
	list = ibv_get_device_list(NULL);
	for (int i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			dev = list[i];
	if (!dev) {
		fprintf(stderr, "openctx: no device %s\n", name);
		return 1;
	}
	ctx = calloc((size_t)n, sizeof(*ctx));
	if (!ctx)
		return 1;
	for (; opened < n; opened++) {
		t0 = now_ms();
		ctx[opened] = ibv_open_device(dev);
		ms = now_ms() - t0;
		if (!ctx[opened]) {
			/* errno right after the call, before printf can touch it */
			err = errno;
			fail_ms = ms;
			printf("open %d: failed after %.1f ms: errno %d (%s)\n", opened + 1, ms,
			       err, strerror(err));
			break;
		}
		if (!opened)
			first_ms = ms;
		printf("open %d: %.1f ms\n", opened + 1, ms);
		fflush(stdout);
	}
	printf("openctx device=%s wanted=%d opened=%d first_open_ms=%.1f", name, n, opened,
	       first_ms);
	if (opened < n)
		printf(" failed_after_ms=%.1f errno=%d strerror=\"%s\"", fail_ms, err,
		       strerror(err));
	printf("\n");
	for (int i = 0; i < opened; i++)
		ibv_close_device(ctx[i]);
	free(ctx);
	ibv_free_device_list(list);
	return opened == n ? 0 : 1;
}
