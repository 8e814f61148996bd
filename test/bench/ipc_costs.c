/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What sharing a device between processes would cost on this machine
 * (docs/shared-device.md, section 2): the primitives a shared dataplane is
 * built of, timed one by one, with libc only:
 *   memcpy    copy a 4154-byte frame (cached), 100 copies per timed sample
 *   shm       descriptor ping-pong between two processes polling a 64-bit
 *             slot each in a MAP_SHARED page (release store, acquire load)
 *   eventfd   ping-pong over two eventfds, write and blocking read
 *   pvw       process_vm_writev into another process: one 4154-byte frame,
 *             32 frames in one call (32 iovecs, each frame to its own page),
 *             one 64-byte write, 32 64-byte writes in one call
 *   sleep     lateness of an absolute 1 ms clock_nanosleep at the caller's
 *             nice, at nice -10 and under SCHED_FIFO 1 (when permitted)
 *   ipc_costs [-n ROUND_TRIPS] [-c CALLS] [-s SLEEPS] [TEST...]
 * Defaults 20,000 round trips, 5,000 calls, 3,000 sleeps, every test. Prints
 * one table: median, p99 and max of each, per operation (a round trip, a
 * call, a frame or write, a wake-up).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FRAME 4154 /* a full RoCEv2 packet at MTU 4096, as tools/bench's FRAME_4K */
#define BURST 32   /* DP_BURST, a dataplane's burst */
#define SMALL 64
#define SLOT 8192 /* each frame of a burst on its own page(s) */

static int round_trips = 20000, calls = 5000, sleeps = 3000;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* One line of the table from n samples (sorted here), each divided by per. */
static void report(const char *what, const char *unit, double *s, int n, double per)
{
	if (n <= 0) {
		printf("%-46s %-9s %10s %10s %10s\n", what, unit, "-", "-", "-");
		return;
	}
	qsort(s, (size_t)n, sizeof(*s), cmp_double);
	printf("%-46s %-9s %10.3f %10.3f %10.3f\n", what, unit, s[n / 2] / per,
	       s[(int)((long)n * 99 / 100)] / per, s[n - 1] / per);
	fflush(stdout);
}

static double *samples(int n)
{
	double *s = calloc((size_t)n, sizeof(*s));

	if (!s) {
		perror("ipc_costs: calloc");
		exit(1);
	}
	return s;
}

static void test_memcpy(void)
{
	static uint8_t src[FRAME], dst[FRAME];
	int n = calls;
	double *s = samples(n);

	memset(src, 0x5a, sizeof(src));
	for (int i = 0; i < n; i++) {
		uint64_t t0 = now_ns();

		for (int k = 0; k < 100; k++) {
			memcpy(dst, src, FRAME);
			/* the copy must happen every time: tell the compiler dst is read */
			__asm__ volatile("" : : "r"(dst) : "memory");
		}
		s[i] = (double)(now_ns() - t0);
	}
	report("memcpy 4154 B frame, cached", "ns/copy", s, n, 100);
	free(s);
}

/* Two slots on cache lines of their own: ping written by the parent, pong by the child. */
struct pingpong {
	_Alignas(64) _Atomic uint64_t ping;
	_Alignas(64) _Atomic uint64_t pong;
};

static void test_shm(void)
{
	struct pingpong *pp =
	    mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	double *s = samples(round_trips);
	pid_t pid;

	if (pp == MAP_FAILED) {
		perror("ipc_costs: mmap");
		return;
	}
	atomic_init(&pp->ping, 0);
	atomic_init(&pp->pong, 0);
	pid = fork();
	if (pid == 0) {
		/* echo each sequence number back; the acquire load pairs with
		 * the parent's release store, as a descriptor's would */
		for (uint64_t i = 1; i <= (uint64_t)round_trips; i++) {
			while (atomic_load_explicit(&pp->ping, memory_order_acquire) != i)
				;
			atomic_store_explicit(&pp->pong, i, memory_order_release);
		}
		_exit(0);
	}
	for (uint64_t i = 1; i <= (uint64_t)round_trips; i++) {
		uint64_t t0 = now_ns();

		atomic_store_explicit(&pp->ping, i, memory_order_release);
		while (atomic_load_explicit(&pp->pong, memory_order_acquire) != i)
			;
		s[i - 1] = (double)(now_ns() - t0);
	}
	waitpid(pid, NULL, 0);
	report("shm slot ping-pong, both polling", "us/rt", s, round_trips, 1000);
	munmap(pp, 4096);
	free(s);
}

static void test_eventfd(void)
{
	int to_child = eventfd(0, 0), to_parent = eventfd(0, 0);
	double *s = samples(round_trips);
	uint64_t v = 1;
	pid_t pid;

	if (to_child < 0 || to_parent < 0) {
		perror("ipc_costs: eventfd");
		return;
	}
	pid = fork();
	if (pid == 0) {
		for (int i = 0; i < round_trips; i++)
			if (read(to_child, &v, 8) != 8 || write(to_parent, &v, 8) != 8)
				_exit(1);
		_exit(0);
	}
	for (int i = 0; i < round_trips; i++) {
		uint64_t t0 = now_ns();

		if (write(to_child, &v, 8) != 8 || read(to_parent, &v, 8) != 8) {
			perror("ipc_costs: eventfd ping-pong");
			break;
		}
		s[i] = (double)(now_ns() - t0);
	}
	waitpid(pid, NULL, 0);
	close(to_child);
	close(to_parent);
	report("eventfd ping-pong, blocking reads", "us/rt", s, round_trips, 1000);
	free(s);
}

/* process_vm_writev of `count` pieces of `len` bytes, piece i to remote + i * SLOT. */
static void pvw(pid_t pid, uint8_t *local, uint8_t *remote, size_t len, int count, const char *what,
		const char *unit, double per)
{
	struct iovec l[BURST], r[BURST];
	double *s = samples(calls);
	int n = 0;

	for (int i = 0; i < count; i++) {
		l[i] = (struct iovec){local + (size_t)i * SLOT, len};
		r[i] = (struct iovec){remote + (size_t)i * SLOT, len};
	}
	for (; n < calls; n++) {
		uint64_t t0 = now_ns();
		ssize_t done =
		    process_vm_writev(pid, l, (unsigned long)count, r, (unsigned long)count, 0);

		if (done != (ssize_t)(len * (size_t)count)) {
			fprintf(stderr, "ipc_costs: process_vm_writev: %s\n",
				done < 0 ? strerror(errno) : "short write");
			break;
		}
		s[n] = (double)(now_ns() - t0);
	}
	report(what, unit, s, n, per);
	free(s);
}

static void test_pvw(void)
{
	size_t size = (size_t)BURST * SLOT;
	/* mapped before fork: the child's copy sits at the same address */
	uint8_t *local =
	    mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *remote =
	    mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pid_t pid;

	if (local == MAP_FAILED || remote == MAP_FAILED) {
		perror("ipc_costs: mmap");
		return;
	}
	memset(local, 0x5a, size);
	memset(remote, 0, size); /* touched, so the child's pages exist (copied on write) */
	pid = fork();
	if (pid == 0) {
		memset(remote, 1, size); /* the child's own pages, not the parent's */
		pause();
		_exit(0);
	}
	usleep(100000); /* let the child touch its pages */
	pvw(pid, local, remote, FRAME, 1, "process_vm_writev 1 frame of 4154 B", "us/call", 1000);
	pvw(pid, local, remote, FRAME, BURST, "process_vm_writev 32 frames in one call", "us/frame",
	    1000.0 * BURST);
	pvw(pid, local, remote, FRAME, BURST, "  the same, per call", "us/call", 1000);
	pvw(pid, local, remote, SMALL, 1, "process_vm_writev 1 write of 64 B", "us/call", 1000);
	pvw(pid, local, remote, SMALL, BURST, "process_vm_writev 32 writes of 64 B, one call",
	    "us/write", 1000.0 * BURST);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	munmap(local, size);
	munmap(remote, size);
}

/* Lateness of `sleeps` absolute 1 ms sleeps, each from the last wake-up. */
static void lateness(const char *what)
{
	double *s = samples(sleeps);
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	for (int i = 0; i < sleeps; i++) {
		uint64_t target, woke;

		t.tv_nsec += 1000000;
		if (t.tv_nsec >= 1000000000) {
			t.tv_nsec -= 1000000000;
			t.tv_sec++;
		}
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR)
			;
		woke = now_ns();
		target = (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
		s[i] = woke > target ? (double)(woke - target) : 0;
		/* the next sleep counts from now: one late wake-up is not inherited */
		clock_gettime(CLOCK_MONOTONIC, &t);
	}
	report(what, "us late", s, sleeps, 1000);
	free(s);
}

static void test_sleep(void)
{
	struct sched_param fifo = {.sched_priority = 1}, other = {.sched_priority = 0};
	int nice0 = getpriority(PRIO_PROCESS, 0);
	char what[64];

	snprintf(what, sizeof(what), "1 ms clock_nanosleep, nice %d", nice0);
	lateness(what);
	if (setpriority(PRIO_PROCESS, 0, -10) == 0) {
		lateness("1 ms clock_nanosleep, nice -10");
		setpriority(PRIO_PROCESS, 0, nice0);
	} else {
		printf("%-46s (%s)\n", "1 ms clock_nanosleep, nice -10", strerror(errno));
	}
	if (sched_setscheduler(0, SCHED_FIFO, &fifo) == 0) {
		lateness("1 ms clock_nanosleep, SCHED_FIFO 1");
		sched_setscheduler(0, SCHED_OTHER, &other);
	} else {
		printf("%-46s (%s)\n", "1 ms clock_nanosleep, SCHED_FIFO 1", strerror(errno));
	}
}

static const struct {
	const char *name;
	void (*run)(void);
} tests[] = {
    {"memcpy", test_memcpy}, {"shm", test_shm},	    {"eventfd", test_eventfd},
    {"pvw", test_pvw},	     {"sleep", test_sleep},
};
#define NTESTS (int)(sizeof(tests) / sizeof(tests[0]))

/* The machine's load, printed with the figures: they move with it. */
static const char *loadavg(char *buf, size_t len)
{
	FILE *f = fopen("/proc/loadavg", "r");

	snprintf(buf, len, "?\n");
	if (f) {
		if (!fgets(buf, (int)len, f))
			snprintf(buf, len, "?\n");
		fclose(f);
	}
	return buf;
}

int main(int argc, char **argv)
{
	int opt, want[NTESTS] = {0}, any = 0;
	char load[64];

	while ((opt = getopt(argc, argv, "n:c:s:")) != -1) {
		switch (opt) {
		case 'n':
			round_trips = atoi(optarg);
			break;
		case 'c':
			calls = atoi(optarg);
			break;
		case 's':
			sleeps = atoi(optarg);
			break;
		default:
			goto usage;
		}
	}
	if (round_trips < 1 || calls < 1 || sleeps < 1)
		goto usage;
	for (int i = optind; i < argc; i++) {
		int t = 0;

		while (t < NTESTS && strcmp(argv[i], tests[t].name))
			t++;
		if (t == NTESTS)
			goto usage;
		want[t] = any = 1;
	}
	printf("ipc_costs: %d round trips, %d calls, %d sleeps; /proc/loadavg %s", round_trips,
	       calls, sleeps, loadavg(load, sizeof(load)));
	printf("%-46s %-9s %10s %10s %10s\n", "primitive", "unit", "median", "p99", "max");
	for (int t = 0; t < NTESTS; t++)
		if (!any || want[t])
			tests[t].run();
	return 0;
usage:
	fprintf(stderr, "usage: ipc_costs [-n ROUND_TRIPS] [-c CALLS] [-s SLEEPS] "
			"[memcpy|shm|eventfd|pvw|sleep...]\n");
	return 2;
}
