/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * How long this host takes a thread's CPU away, one thread per CPU given
 * (pinned). A gap is time the thread did not run: another thread, a kernel
 * thread or a system call without a preemption point (on a VM, DAMON's
 * kdamond; the kernel zeroing a packet ring), an interrupt, or the
 * hypervisor taking the vCPU.
 *   host_stalls SECONDS CPU...       each thread reads the clock in a loop at
 *       normal priority and counts the gaps between two readings. A software
 *       RoCE host answers ACKs from such a thread, so the longest gap is the
 *       least a peer's retransmission timeout must wait to stay silent on a
 *       lossless path (docs/selective-repeat.md, "Host stalls and the stall
 *       floor"). e.g. `host_stalls 60 0 1`: both CPUs of a 2-CPU host busy.
 *   host_stalls --rt SECONDS CPU...  each thread sleeps 1 ms at a time at
 *       SCHED_FIFO 99 (root, or an rtprio limit of 99) and counts how late it
 *       wakes. It costs next to nothing, so it can run beside a load; what it
 *       sees, no real-time thread (the late answerer, provider/answerer.c)
 *       could have had. Wake-ups over 10 ms late are printed with their
 *       CLOCK_MONOTONIC time (docs/dataplane.md, "Blocks of 32 KB") and the
 *       steal time /proc/stat counted on that CPU around them: a gap the
 *       steal covers was the hypervisor's, not this kernel's.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

static void count(struct probe *p, uint64_t gap)
{
	p->over_1ms += gap > MS;
	p->over_5ms += gap > 5 * MS;
	p->over_20ms += gap > 20 * MS;
	p->over_50ms += gap > 50 * MS;
	if (gap > p->longest_ns)
		p->longest_ns = gap;
}

static void *spin(void *arg)
{
	struct probe *p = arg;
	uint64_t last = now_ns(), t;

	while ((t = now_ns()) < p->end_ns) {
		count(p, t - last);
		last = t;
	}
	return NULL;
}

/* The time the hypervisor ran something else on this vCPU, in ms
 * ("steal" of /proc/stat, in ticks of 10 ms); -1 if unknown. */
static long steal_ms(int cpu)
{
	char line[256], name[16];
	long ms = -1;
	FILE *f = fopen("/proc/stat", "r");

	if (!f)
		return -1;
	snprintf(name, sizeof(name), "cpu%d ", cpu);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long v[8];

		if (strncmp(line, name, strlen(name)))
			continue;
		if (sscanf(line + strlen(name), "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
			   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8)
			ms = (long)(v[7] * 1000 / (unsigned long long)sysconf(_SC_CLK_TCK));
		break;
	}
	fclose(f);
	return ms;
}

static void *wake(void *arg)
{
	struct probe *p = arg;
	long steal_before = steal_ms(p->cpu);

	for (unsigned n = 1; now_ns() < p->end_ns; n++) {
		uint64_t want = now_ns() + MS, late;
		struct timespec ts = {.tv_sec = (time_t)(want / 1000000000ull),
				      .tv_nsec = (long)(want % 1000000000ull)};

		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		late = now_ns() - want;
		count(p, late);
		if (late > 10 * MS) {
			/* the tick after the gap accounts the steal: wait for it */
			usleep(30000);
			long steal_after = steal_ms(p->cpu);

			printf("cpu %d: woke %.1f ms late at %.6f (the hypervisor took the vCPU "
			       "%ld ms of the 0.1-0.2 s around it)\n",
			       p->cpu, (double)late / 1e6, (double)want / 1e9,
			       steal_before < 0 || steal_after < 0 ? -1 : steal_after - steal_before);
			steal_before = steal_after;
		} else if (n % 100 == 0) {
			steal_before = steal_ms(p->cpu);
		}
	}
	return NULL;
}

/* A thread pinned to p->cpu, at SCHED_FIFO 99 when rt. */
static int start(struct probe *p, bool rt)
{
	struct sched_param sp = {.sched_priority = 99};
	pthread_attr_t a;
	cpu_set_t set;
	int err;

	CPU_ZERO(&set);
	CPU_SET(p->cpu, &set);
	pthread_attr_init(&a);
	pthread_attr_setaffinity_np(&a, sizeof(set), &set);
	if (rt) {
		pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
		pthread_attr_setschedpolicy(&a, SCHED_FIFO);
		pthread_attr_setschedparam(&a, &sp);
	}
	err = pthread_create(&p->thread, &a, rt ? wake : spin, p);
	pthread_attr_destroy(&a);
	if (err)
		fprintf(stderr, "host_stalls: a thread on CPU %d%s: %s\n", p->cpu,
			rt ? " at SCHED_FIFO 99" : "", strerror(err));
	return err;
}

int main(int argc, char **argv)
{
	struct probe probes[MAX_CPUS] = {{0}};
	bool rt = argc > 1 && !strcmp(argv[1], "--rt");
	int first = rt ? 2 : 1, n = argc - first - 1;
	double secs;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (n < 1 || n > MAX_CPUS || (secs = atof(argv[first])) <= 0) {
		fprintf(stderr, "usage: host_stalls [--rt] SECONDS CPU...\n");
		return 2;
	}
	for (int i = 0; i < n; i++) {
		probes[i].cpu = atoi(argv[first + 1 + i]);
		probes[i].end_ns = now_ns() + (uint64_t)(secs * 1e9);
		if (start(&probes[i], rt))
			return 1;
	}
	for (int i = 0; i < n; i++) {
		struct probe *p = &probes[i];

		pthread_join(p->thread, NULL);
		printf("cpu %d: %llu %s over 1 ms, %llu over 5 ms, %llu over 20 ms, %llu over 50 ms, "
		       "longest %.2f ms in %.0f s\n",
		       p->cpu, (unsigned long long)p->over_1ms, rt ? "late wake-ups" : "gaps",
		       (unsigned long long)p->over_5ms, (unsigned long long)p->over_20ms,
		       (unsigned long long)p->over_50ms, p->longest_ns / 1e6, secs);
	}
	return 0;
}
