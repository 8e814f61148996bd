/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * uroce-keeper NAME: holds device NAME open for as long as the device
 * exists, so that it always has a housekeeper, as a host with a NIC always
 * has its kernel: the wire's connection requests are answered (a REJ when
 * nobody listens, instead of silence) and passed to the program they are
 * for, and the hw_counters files are rewritten every half second, so they
 * stay right after a program is killed. The device's daemon (uroced)
 * starts it with the environment `uroce env` gives and restarts it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <infiniband/verbs.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_signal};
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	sigset_t block, old;
	int n;

	if (argc != 2) {
		fprintf(stderr, "usage: uroce-keeper NAME   (started by uroced)\n");
		return 2;
	}
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &old);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!ctx) {
		fprintf(stderr, "uroce-keeper: cannot open %s: %s\n", argv[1],
			errno ? strerror(errno) : "no such device");
		return 1;
	}
	/* the provider's progress thread does the work; we wait for the end */
	while (!stop)
		sigsuspend(&old);
	ibv_close_device(ctx);
	return 0;
}
