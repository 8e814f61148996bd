/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Kernel TCP request/response latency, the yardstick for ib_*_lat: a
 * one-byte ping-pong over a TCP connection with Nagle off.
 *   tcp_rr -s PORT              serve one client
 *   tcp_rr -c HOST PORT [N]     N round trips; prints median, average, p99 in us
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int one = 1, fd;
	struct sockaddr_in sa = {.sin_family = AF_INET};
	char c = 'x';

	if (argc >= 3 && !strcmp(argv[1], "-s")) {
		int l = socket(AF_INET, SOCK_STREAM, 0);

		sa.sin_port = htons((uint16_t)atoi(argv[2]));
		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 1))
			return 1;
		fd = accept(l, NULL, NULL);
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		while (read(fd, &c, 1) == 1 && write(fd, &c, 1) == 1)
			;
		return 0;
	}
	if (argc >= 4 && !strcmp(argv[1], "-c")) {
		int n = argc > 4 ? atoi(argv[4]) : 10000;
		uint64_t *t = calloc((size_t)n, sizeof(*t)), sum = 0;

		fd = socket(AF_INET, SOCK_STREAM, 0);
		sa.sin_port = htons((uint16_t)atoi(argv[3]));
		inet_pton(AF_INET, argv[2], &sa.sin_addr);
		for (int tries = 0; connect(fd, (struct sockaddr *)&sa, sizeof(sa)); tries++) {
			if (tries == 50)
				return 1;
			usleep(100000);
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		for (int i = 0; i < n; i++) {
			uint64_t t0 = now_ns();

			if (write(fd, &c, 1) != 1 || read(fd, &c, 1) != 1)
				return 1;
			t[i] = now_ns() - t0;
			sum += t[i];
		}
		qsort(t, (size_t)n, sizeof(*t), cmp);
		printf("tcp_rr %d round trips: median %.2f us, average %.2f us, p99 %.2f us\n", n,
		       t[n / 2] / 1e3, (double)sum / n / 1e3, t[(size_t)(n * 0.99)] / 1e3);
		return 0;
	}
	fprintf(stderr, "usage: tcp_rr -s PORT | tcp_rr -c HOST PORT [N]\n");
	return 2;
}
