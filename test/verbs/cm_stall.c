/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cm_stall: the program's rdma_cm calls do not wait while its connection
 * manager waits on the network. Stock librdmacm API only.
 *
 *   cm_stall -a ADDR -p PORT [-t SECONDS]
 *
 * Listens on ADDR:PORT and rejects every connect request; meanwhile a
 * second thread makes, binds and destroys an id every 20 ms and times each
 * call. Run it where a peer's REQ comes from an address that does not
 * answer ARP: the connection manager then waits for the peer's MAC (up to
 * 3 s) before the request can be taken. Prints the slowest call; exit 0
 * if none took 500 ms or more, 1 otherwise (or on an error).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/rdma_cma.h>

#define SLOW_NS 500000000ull

static struct sockaddr_in addr;
static atomic_bool done;
static uint64_t slowest_ns;
static unsigned ncalls, nfail;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Calls that each take the connection manager's lock, timed. */
static void *prober(void *arg)
{
	(void)arg;
	while (!atomic_load(&done)) {
		struct sockaddr_in a = addr;
		struct rdma_cm_id *id;
		uint64_t t0 = now_ns(), dt;
		struct timespec nap = {.tv_nsec = 20000000};

		a.sin_port = 0;
		if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) ||
		    rdma_bind_addr(id, (struct sockaddr *)&a) || rdma_destroy_id(id))
			nfail++;
		dt = now_ns() - t0;
		if (dt > slowest_ns)
			slowest_ns = dt;
		ncalls++;
		nanosleep(&nap, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen_id;
	struct rdma_cm_event *ev;
	int opt, secs = 8, nreq = 0;
	uint64_t end;
	pthread_t t;

	addr.sin_family = AF_INET;
	while ((opt = getopt(argc, argv, "a:p:t:")) != -1) {
		switch (opt) {
		case 'a': inet_pton(AF_INET, optarg, &addr.sin_addr); break;
		case 'p': addr.sin_port = htons((uint16_t)atoi(optarg)); break;
		case 't': secs = atoi(optarg); break;
		default: fprintf(stderr, "usage: cm_stall -a ADDR -p PORT [-t SECONDS]\n"); return 1;
		}
	}
	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &listen_id, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(listen_id, (struct sockaddr *)&addr) || rdma_listen(listen_id, 8)) {
		perror("cm_stall: listen");
		return 1;
	}
	printf("cm_stall: listening\n");
	fflush(stdout);
	if (pthread_create(&t, NULL, prober, NULL))
		return 1;
	end = now_ns() + (uint64_t)secs * 1000000000ull;
	while (now_ns() < end) {
		struct pollfd p = {.fd = ch->fd, .events = POLLIN};

		if (poll(&p, 1, 100) <= 0 || rdma_get_cm_event(ch, &ev))
			continue;
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			nreq++;
			rdma_reject(ev->id, NULL, 0);
			rdma_ack_cm_event(ev);
			continue;
		}
		rdma_ack_cm_event(ev);
	}
	atomic_store(&done, true);
	pthread_join(t, NULL);
	printf("cm_stall: %u create/bind/destroy rounds (%u failed), slowest %.1f ms; %d connect "
	       "requests\n",
	       ncalls, nfail, (double)slowest_ns / 1e6, nreq);
	rdma_destroy_id(listen_id);
	rdma_destroy_event_channel(ch);
	if (nfail || slowest_ns >= SLOW_NS) {
		printf("cm_stall: FAIL\n");
		return 1;
	}
	printf("cm_stall: PASS\n");
	return 0;
}
