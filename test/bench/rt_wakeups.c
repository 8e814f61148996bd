/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * How late a real-time thread wakes on this host: one SCHED_FIFO 99 thread
 * per CPU given (pinned) sleeps 1 ms at a time and counts how late each
 * wake-up is. Unlike host_stalls (a spinning probe at normal priority), it
 * costs almost nothing, so it can run beside a load: what it sees is time
 * that no real-time thread could have had, such as the kernel zeroing a
 * packet ring without a preemption point, or the hypervisor taking the
 * vCPU. uroce's late answerer (provider/answerer.c) waits at least that long.
 * Each wake-up later than 10 ms is printed with its CLOCK_MONOTONIC time.
 *   rt_wakeups SECONDS CPU...   (root, or an rtprio limit of 99)
 * e.g. `rt_wakeups 6 0 1` while 16 programs open a device
 * (docs/dataplane.md, "Blocks of 32 KB").
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_CPUS 64
#define MS 1000000ull

struct probe {
	pthread_t thread;
	int cpu;
	uint64_t end_ns, over_1ms, over_5ms, over_20ms, over_50ms, longest_ns;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *wake(void *arg)
{
	struct probe *p = arg;

	while (now_ns() < p->end_ns) {
		uint64_t want = now_ns() + MS, late;
		struct timespec ts = {.tv_sec = (time_t)(want / 1000000000ull),
				      .tv_nsec = (long)(want % 1000000000ull)};

		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		late = now_ns() - want;
		p->over_1ms += late > MS;
		p->over_5ms += late > 5 * MS;
		p->over_20ms += late > 20 * MS;
		p->over_50ms += late > 50 * MS;
		if (late > p->longest_ns)
			p->longest_ns = late;
		if (late > 10 * MS)
			printf("cpu %d: woke %.1f ms late at %.6f\n", p->cpu, (double)late / MS,
			       (double)want / 1e9);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct probe probes[MAX_CPUS] = {{0}};
	int n = argc - 2, secs = argc > 1 ? atoi(argv[1]) : 0;

	if (n < 1 || n > MAX_CPUS || secs <= 0) {
		fprintf(stderr, "usage: rt_wakeups SECONDS CPU...\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 0; i < n; i++) {
		struct sched_param sp = {.sched_priority = 99};
		pthread_attr_t a;
		cpu_set_t set;
		int err;

		probes[i].cpu = atoi(argv[i + 2]);
		probes[i].end_ns = now_ns() + (uint64_t)secs * 1000000000ull;
		CPU_ZERO(&set);
		CPU_SET(probes[i].cpu, &set);
		pthread_attr_init(&a);
		pthread_attr_setaffinity_np(&a, sizeof(set), &set);
		pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
		pthread_attr_setschedpolicy(&a, SCHED_FIFO);
		pthread_attr_setschedparam(&a, &sp);
		err = pthread_create(&probes[i].thread, &a, wake, &probes[i]);
		pthread_attr_destroy(&a);
		if (err) {
			fprintf(stderr, "rt_wakeups: a SCHED_FIFO thread on CPU %d: %s\n",
				probes[i].cpu, strerror(err));
			return 1;
		}
	}
	for (int i = 0; i < n; i++) {
		struct probe *p = &probes[i];

		pthread_join(p->thread, NULL);
		printf("cpu %d: wake-ups late by over 1 ms %lu, 5 ms %lu, 20 ms %lu, 50 ms %lu; "
		       "the latest %.1f ms\n",
		       p->cpu, (unsigned long)p->over_1ms, (unsigned long)p->over_5ms,
		       (unsigned long)p->over_20ms, (unsigned long)p->over_50ms,
		       (double)p->longest_ns / MS);
	}
	return 0;
}
