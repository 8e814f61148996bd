/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Kernel TCP request/response latency, the yardstick for ib_*_lat: a
 * ping-pong of SIZE-byte messages (default 1) over a TCP connection with
 * Nagle off; each side reads a whole message before it answers.
 *   tcp_rr -s PORT [SIZE]            serve one client
 *   tcp_rr -c HOST PORT [N [SIZE]]   N round trips; prints median, average, p99 in us
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

/* move exactly len bytes: TCP may split a message into any number of reads */
static int full(ssize_t (*io)(int, void *, size_t), int fd, char *buf, size_t len)
{
	while (len) {
		ssize_t n = io(fd, buf, len);

		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static ssize_t write_io(int fd, void *buf, size_t len)
{
	return write(fd, buf, len);
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
	size_t size = 1;
	char *buf;

	if (argc >= 3 && !strcmp(argv[1], "-s")) {
		int l = socket(AF_INET, SOCK_STREAM, 0);

		size = argc > 3 ? strtoul(argv[3], NULL, 0) : 1;
		buf = calloc(1, size ? size : 1);
		if (!size || !buf)
			return 2;
		sa.sin_port = htons((uint16_t)atoi(argv[2]));
		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 1))
			return 1;
		alarm(300); /* a client that never comes must not keep us (and a script's wait) */
		fd = accept(l, NULL, NULL);
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		while (!full(read, fd, buf, size) && !full(write_io, fd, buf, size))
			;
		return 0;
	}
	if (argc >= 4 && !strcmp(argv[1], "-c")) {
		int n = argc > 4 ? atoi(argv[4]) : 10000;
		uint64_t *t = calloc((size_t)n, sizeof(*t)), sum = 0;

		size = argc > 5 ? strtoul(argv[5], NULL, 0) : 1;
		buf = calloc(1, size ? size : 1);
		if (n < 1 || !size || !t || !buf)
			return 2;
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

			if (full(write_io, fd, buf, size) || full(read, fd, buf, size))
				return 1;
			t[i] = now_ns() - t0;
			sum += t[i];
		}
		qsort(t, (size_t)n, sizeof(*t), cmp);
		printf("tcp_rr %d round trips of %zu bytes: median %.2f us, average %.2f us, p99 %.2f us\n", n,
		       size, t[n / 2] / 1e3, (double)sum / n / 1e3, t[(size_t)(n * 0.99)] / 1e3);
		return 0;
	}
	fprintf(stderr, "usage: tcp_rr -s PORT [SIZE] | tcp_rr -c HOST PORT [N [SIZE]]\n");
	return 2;
}
