/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * How long this host takes a busy thread's CPU away: one thread per CPU
 * given (pinned), each reading the clock in a loop, counts the gaps between
 * two readings longer than 1 ms and 5 ms and keeps the longest. A gap is
 * time the thread did not run: another thread, a kernel thread (on a VM,
 * DAMON's kdamond), an interrupt, or the hypervisor taking the vCPU. A
 * software RoCE host answers ACKs from such a thread, so the longest gap is
 * the least a peer's retransmission timeout must wait to stay silent on a
 * lossless path (docs/selective-repeat.md, "Host stalls and the stall floor").
 *   host_stalls SECONDS CPU...
 * e.g. `host_stalls 60 0 1`: both CPUs of a 2-CPU host busy at once.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAX_CPUS 64
#define MS 1000000ull

struct probe {
	pthread_t thread;
	int cpu;
	uint64_t end_ns, over_1ms, over_5ms, longest_ns;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *spin(void *arg)
{
	struct probe *p = arg;
	cpu_set_t set;
	uint64_t last, t;

	CPU_ZERO(&set);
	CPU_SET(p->cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set))
		fprintf(stderr, "host_stalls: cannot pin to CPU %d, running unpinned\n", p->cpu);
	last = now_ns();
	while ((t = now_ns()) < p->end_ns) {
		uint64_t gap = t - last;

		p->over_1ms += gap > MS;
		p->over_5ms += gap > 5 * MS;
		if (gap > p->longest_ns)
			p->longest_ns = gap;
		last = t;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct probe probes[MAX_CPUS];
	int n = argc - 2;
	double secs;

	if (argc < 3 || n > MAX_CPUS || (secs = atof(argv[1])) <= 0) {
		fprintf(stderr, "usage: host_stalls SECONDS CPU...\n");
		return 2;
	}
	for (int i = 0; i < n; i++) {
		probes[i] = (struct probe){.cpu = atoi(argv[i + 2]),
					   .end_ns = now_ns() + (uint64_t)(secs * 1e9)};
		if (pthread_create(&probes[i].thread, NULL, spin, &probes[i])) {
			fprintf(stderr, "host_stalls: cannot start a thread\n");
			return 1;
		}
	}
	for (int i = 0; i < n; i++) {
		pthread_join(probes[i].thread, NULL);
		printf("cpu %d: %llu gaps over 1 ms, %llu over 5 ms, longest %.2f ms in %.0f s\n",
		       probes[i].cpu, (unsigned long long)probes[i].over_1ms,
		       (unsigned long long)probes[i].over_5ms, probes[i].longest_ns / 1e6, secs);
	}
	return 0;
}
