/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * uroced NAME: the device daemon. It owns the port of a uroce device whose
 * port only one process can open (memif, AF_XDP, tap, a NIC) and switches
 * frames between the wire and every program that uses the device
 * (dataplane/dev_switch.c), so the device is shared as a NIC's port is.
 * `uroce link add` starts it and `uroce link del` stops it; the programs
 * keep their transport engines and attach as memif clients
 * (docs/shared-device.md).
 *
 * One process supervises two: the switch, for ports only one process can
 * open (af_packet needs none: every program has sockets of its own and the
 * kernel switches), and the keeper (uroce_keeper.c), which holds the device
 * open so that it always has a housekeeper. The supervisor restarts either
 * after a crash (at once, then backing off to 5 s; after 5 crashes in a
 * minute it gives that one up), stops both on SIGTERM and when the device
 * goes. All of them log to the device's directory, `uroced.log`.
 */
#define _GNU_SOURCE
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "counters.h"
#include "dataplane.h"
#include "dp_counters.h"
#include "port_config.h"
#include "registry.h"
#include "shared.h"

#define SWITCH_RT_PRIO 10	   /* the switch's thread: see worker() */
#define SPIN_NS 50000ull	   /* keep polling this long after the last frame, */
#define SPARE_CHECK_NS 10000000ull /* ...if a CPU was spare when last looked at */
#define SLEEP_NS 100000000ull	   /* then sleep on the fds, at most this long */
#define CHECK_NS 1000000000ull	   /* upkeep: counters, is the device still there */
#define LOG_MAX_BYTES (1 << 20)	   /* then the log moves to uroced.log.1 */
#define RESTART_MAX 5		   /* crashes of a child within RESTART_WINDOW_S: not restarted */
#define RESTART_WINDOW_S 60
#define STOP_GRACE_MS 2000	   /* SIGTERM to SIGKILL */
#define HEALTHY_NS 60000000000ull  /* a child up this long starts its backoff afresh */
#define EXIT_GONE 3		   /* the switch's exit: its device is gone */
#define NETNS_DIR "/run/netns"	   /* where `ip netns add` names namespaces */

static_assert(UROCE_QPN_BLOCKS == 4096, "dataplane/dev_switch.c's SW_BLOCKS");

static char devdir[512];
static char log_path[600];
static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void logf_(const char *fmt, ...)
{
	char stamp[32], old[620];
	struct timespec ts;
	struct stat st;
	struct tm tm;
	va_list ap;
	FILE *f;

	if (!stat(log_path, &st) && st.st_size > LOG_MAX_BYTES) {
		snprintf(old, sizeof(old), "%s.1", log_path);
		rename(log_path, old);
	}
	f = fopen(log_path, "a");
	if (!f)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(f, "%s.%03ldZ uroced[%d]: ", stamp, ts.tv_nsec / 1000000, (int)getpid());
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

static void log_line(void *arg, const char *line)
{
	(void)arg;
	logf_("%s", line);
}

static void config_report(void *arg, int level, const char *line)
{
	(void)arg;
	if (level <= 0)
		logf_("%s", line);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int holder(void *arg, unsigned block)
{
	return uroce_shared_holder(arg, block);
}

/* The device directory we serve, to tell it from one a later `link add` made. */
static ino_t devdir_ino(void)
{
	struct stat st;

	return stat(devdir, &st) ? 0 : st.st_ino;
}

/* The device is gone when `uroce link del` removed it (perhaps to add
 * another of the name) or its interface went. */
static bool device_gone(const struct uroce_devconf *conf, ino_t ino)
{
	return devdir_ino() != ino || (conf->netdev[0] && !if_nametoindex(conf->netdev));
}

static void log_drops(const uint64_t *row_dp, struct uroce_dp *wire)
{
	const char *const *names;
	const uint64_t *v;
	unsigned n = uroce_dp_counters(wire, &names, &v);

	logf_("switch: %llu frames for QPs no program holds, %llu dropped on full program rings",
	      (unsigned long long)row_dp[DP_CTR_dp_switch_no_owner],
	      (unsigned long long)row_dp[DP_CTR_dp_switch_full]);
	for (unsigned i = 0; i < n; i++)
		if (v[i])
			logf_("port: %s %llu", names[i], (unsigned long long)v[i]);
}

/*
 * Whether a CPU is spare: no more threads runnable than CPUs online
 * (/proc/loadavg's fourth field counts the runnable ones, this one too).
 * Spinning for the next frame pays only then. On two cores shared by 16
 * programs on each of two devices, the two switches' spins (at real-time
 * priority) took a core between them from the programs that would send
 * those frames: the 90 s soak of 16 programs a device over memif did 2.34
 * and 2.37 M operations with 352 and 263 late ACKs (local ACK timeouts)
 * spinning 50 us, 3.10 M both times with 105 and 86 not spinning at all;
 * one pair's ib_send_bw -s 64 through the daemons ran 0.15-0.18 M/s
 * spinning, 0.35-0.40 M/s not. docs/daemon.md.
 */
static bool cpu_spare(int fd, long ncpu)
{
	char buf[128];
	ssize_t n = fd < 0 ? -1 : pread(fd, buf, sizeof(buf) - 1, 0);
	const char *slash;

	if (n <= 0)
		return true; /* cannot tell: spin as before */
	buf[n] = 0;
	/* "0.52 0.58 0.59 3/210 4242": runnable/total is the fourth field */
	slash = strchr(buf, '/');
	while (slash && slash > buf && slash[-1] != ' ')
		slash--;
	return !slash || strtol(slash, NULL, 10) <= ncpu;
}

/* The switch, until told to stop (0) or the device goes (0), or a failure (1). */
static int worker(const char *name)
{
	struct uroce_switch_config sc = {0};
	struct uroce_shared_view view;
	struct uroce_dp_config dc;
	struct uroce_devconf conf;
	struct uroce_config cfg;
	struct uroce_switch *sw;
	struct uroce_dp *wire;
	char sock[UROCE_DAEMON_SOCKET_MAX];
	uint64_t last_busy = 0, next_check = 0, next_spare = 0;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	bool spare = true;
	int loadavg;
	ino_t ino = devdir_ino();
	bool gone = false;
	int err;

	err = uroce_config_load(&cfg, name, &conf, config_report, NULL);
	if (err) {
		logf_("cannot read the configuration of %s: %s", name, strerror(-err));
		return 1;
	}
	err = uroce_shared_view_open(devdir, &view);
	if (err) {
		logf_("cannot map the shared files in %s: %s", devdir, strerror(-err));
		return 1;
	}
	uroce_port_config(&cfg, &conf, &dc);
	dc.log = log_line;
	err = uroce_dp_open(&dc, &wire);
	if (err) {
		logf_("cannot open port %s on %s: %s", conf.port, conf.netdev, strerror(-err));
		uroce_shared_view_close(&view);
		return 1;
	}
	uroce_daemon_socket(devdir, sock, sizeof(sock));
	sc.wire = wire;
	sc.socket = sock;
	sc.block_shift = UROCE_QPN_BLOCK_BITS;
	sc.owner = holder;
	sc.owner_arg = &view;
	sc.pass_through = !conf.no_pass_through;
	sc.counters = view.rows + UR_CTR_COUNT; /* row 0: no program's */
	sc.log = log_line;
	err = uroce_switch_open(&sc, &sw);
	if (err) {
		logf_("cannot listen on %s: %s", sock, strerror(-err));
		uroce_dp_close(wire);
		uroce_shared_view_close(&view);
		return 1;
	}
	logf_("%s: port %s on %s, programs attach at %s", name, conf.port, conf.netdev, sock);
	/* naps of microseconds (dev_switch.c) must not become the default 50 us */
	prctl(PR_SET_TIMERSLACK, 1000ul, 0, 0, 0);
	/*
	 * The switch is the port, and a NIC drains its wire whatever the host
	 * runs: round-robin real time for this thread (not the greeter's).
	 * At the default policy it used 13% of a core yet waited for a CPU
	 * while frames came, and the AF_XDP socket's receive ring (1024
	 * frames) overflowed: 84,000-228,000 frames a run of sharedport's 8
	 * pairs (nice -10 did not help). It spins only while frames come
	 * (SPIN_NS) and a CPU is spare (cpu_spare), and the kernel's
	 * real-time throttling leaves others 5% of each CPU at worst.
	 * Without the privilege it runs as before.
	 */
	{
		struct sched_param sp = {.sched_priority = SWITCH_RT_PRIO};

		if (sched_setscheduler(0, SCHED_RR, &sp))
			logf_("the switch runs without real-time priority: %s", strerror(errno));
	}
	loadavg = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
	while (!stop) {
		uint64_t now = mono_ns();

		/* before the frames: a port that is always busy still gets it */
		if (now >= next_check) {
			next_check = now + CHECK_NS;
			uroce_dp_housekeeping(wire);
			if (device_gone(&conf, ino)) {
				logf_("%s is gone: stopping", name);
				gone = true;
				break;
			}
		}
		if (uroce_switch_pass(sw, now)) {
			last_busy = now;
			continue;
		}
		if (now >= next_spare) {
			next_spare = now + SPARE_CHECK_NS;
			spare = cpu_spare(loadavg, ncpu);
		}
		if (spare && now - last_busy < SPIN_NS)
			continue;
		uroce_switch_wait(sw, SLEEP_NS);
	}
	if (loadavg >= 0)
		close(loadavg);
	log_drops(sc.counters, wire);
	uroce_switch_close(sw);
	uroce_dp_close(wire);
	uroce_shared_view_close(&view);
	logf_("stopped");
	return gone ? EXIT_GONE : 0;
}


static void write_pid(const char *file, pid_t pid)
{
	char path[600];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", devdir, file);
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "%d\n", (int)pid);
		fclose(f);
	}
}

static void remove_pid(const char *file)
{
	char path[600];

	snprintf(path, sizeof(path), "%s/%s", devdir, file);
	unlink(path);
}

/*
 * What the supervisor runs, each restarted on its own after a crash: the
 * switch (for ports only one process can open) and the keeper (a program
 * that holds the device open: uroce_keeper.c).
 */
struct child {
	const char *what;
	bool wanted;
	pid_t pid;
	unsigned backoff_ms;
	uint64_t start_at, started;
	uint64_t crashes[RESTART_MAX]; /* mono_ns(): a clock step is no crash spell */
	unsigned ncrash;
};

static char keeper_exe[600];

static void run_keeper(const char *name)
{
	const char *sys = getenv("UROCED_SYSFS"), *prov = getenv("UROCED_PROVIDER");
	int fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);

	/* its complaints go where ours go */
	if (fd >= 0)
		dup2(fd, 2);
	if (sys)
		setenv("SYSFS_PATH", sys, 1);
	if (prov)
		setenv("LD_PRELOAD", prov, 1);
	execl(keeper_exe, "uroce-keeper", name, (char *)NULL);
	logf_("cannot run %s: %s", keeper_exe, strerror(errno));
	_exit(127);
}

static void start(struct child *c, const char *name)
{
	pid_t pid = fork();

	if (pid < 0) {
		logf_("cannot fork the %s: %s", c->what, strerror(errno));
		return;
	}
	if (!pid) {
		/* a supervisor that dies (killed, crashed) takes its children with it */
		prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
		if (getppid() == 1)
			_exit(0);
		if (!strcmp(c->what, "switch"))
			_exit(worker(name));
		run_keeper(name);
	}
	c->pid = pid;
	c->started = mono_ns();
	logf_("%s started: pid %d", c->what, (int)pid);
	/* for `uroce link show`; and the keeper is not a program: `uroce stat` leaves it out */
	write_pid(!strcmp(c->what, "keeper") ? "uroced.keeper" : "uroced.switch", pid);
}

/* A child ended: 0 when it should not run again, 1 to restart it. */
static int ended(struct child *c, int status)
{
	uint64_t now = mono_ns();

	c->pid = 0;
	if (WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == EXIT_GONE))
		return 0;
	if (now - c->started > HEALTHY_NS)
		c->backoff_ms = 0;
	if (WIFSIGNALED(status))
		logf_("%s died of signal %d", c->what, WTERMSIG(status));
	else
		logf_("%s failed (exit %d)", c->what, WEXITSTATUS(status));
	c->crashes[c->ncrash++ % RESTART_MAX] = now;
	if (c->ncrash >= RESTART_MAX &&
	    now - c->crashes[c->ncrash % RESTART_MAX] < RESTART_WINDOW_S * 1000000000ull) {
		logf_("the %s failed %u times within %d s: not restarted", c->what, RESTART_MAX,
		      RESTART_WINDOW_S);
		return 0;
	}
	/* at once, then backing off to 5 s */
	c->start_at = now + (uint64_t)c->backoff_ms * 1000000ull;
	c->backoff_ms = c->backoff_ms ? (c->backoff_ms * 2 > 5000 ? 5000 : c->backoff_ms * 2) : 100;
	return 1;
}

static void stop_all(struct child *c, unsigned n)
{
	uint64_t kill_at = mono_ns() + STOP_GRACE_MS * 1000000ull;
	unsigned left = 0;

	for (unsigned i = 0; i < n; i++)
		if (c[i].pid && !kill(c[i].pid, SIGTERM))
			left++;
	while (left) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);

		if (pid > 0) {
			for (unsigned i = 0; i < n; i++)
				if (c[i].pid == pid) {
					c[i].pid = 0;
					left--;
				}
			continue;
		}
		if (mono_ns() > kill_at) {
			for (unsigned i = 0; i < n; i++)
				if (c[i].pid) {
					logf_("%s %d did not stop in %d ms: killed", c[i].what,
					      (int)c[i].pid, STOP_GRACE_MS);
					kill(c[i].pid, SIGKILL);
					waitpid(c[i].pid, NULL, 0);
					c[i].pid = 0;
				}
			break;
		}
		usleep(10000);
	}
}

/* Whether two paths name one network namespace (an nsfs inode). */
static bool same_netns(const char *a, const struct stat *b)
{
	struct stat st;

	return !stat(a, &st) && st.st_dev == b->st_dev && st.st_ino == b->st_ino;
}

/* Whether a file under /run/netns (`ip netns add`, `attach`) names our namespace. */
static bool netns_named(const struct stat *self)
{
	struct dirent *e;
	bool named = false;
	DIR *d = opendir(NETNS_DIR);

	while (d && !named && (e = readdir(d))) {
		char path[600];

		snprintf(path, sizeof(path), "%s/%s", NETNS_DIR, e->d_name);
		named = e->d_name[0] != '.' && same_netns(path, self);
	}
	if (d)
		closedir(d);
	return named;
}

/* A process in our namespace other than the supervisor and its children, or 0. */
static pid_t netns_other_process(const struct stat *self, const struct child *c, unsigned n)
{
	struct dirent *e;
	pid_t other = 0;
	DIR *d = opendir("/proc");

	while (d && !other && (e = readdir(d))) {
		char path[300];
		pid_t pid = (pid_t)atoi(e->d_name);
		bool ours = pid == getpid();

		for (unsigned i = 0; i < n; i++)
			ours |= pid == c[i].pid;
		if (pid <= 0 || ours)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
		/* one gone, or not ours to look at (this VM's init, to root), is elsewhere */
		if (same_netns(path, self))
			other = pid;
	}
	if (d)
		closedir(d);
	return other;
}

/*
 * `ip netns del` took the last name of the namespace we run in, and we (the
 * daemon, the keeper) are all that keep it alive: nobody can reach the
 * device any more, and its veth would live as long as we do. Then the
 * device goes, as `uroce link del` would have it; while another process
 * still runs in the namespace, it stays. Never for the host's namespace.
 */
static bool netns_abandoned(const struct child *c, unsigned n)
{
	static bool was_named, told;
	struct stat self;
	pid_t other;

	if (stat("/proc/self/ns/net", &self) || same_netns("/proc/1/ns/net", &self))
		return false;
	if (netns_named(&self)) {
		was_named = true;
		return false;
	}
	if (!was_named)
		return false; /* never named: made otherwise, not ours to judge */
	other = netns_other_process(&self, c, n);
	if (other && !told)
		logf_("the network namespace's name was deleted; pid %d still runs in it: %s kept",
		      (int)other, devdir);
	told = other != 0;
	return !other;
}

static int supervise(const char *name)
{
	struct uroce_devconf conf;
	struct child c[2] = {{.what = "switch"}, {.what = "keeper"}};
	char self[600], sock[UROCE_DAEMON_SOCKET_MAX], tool[600];
	ino_t ino = devdir_ino();
	bool abandoned = false;
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (uroce_devconf_load(name, &conf)) {
		logf_("no device %s", name);
		return 1;
	}
	self[len > 0 ? len : 0] = 0;
	/* the keeper and the tool are installed beside us */
	if (strrchr(self, '/'))
		*strrchr(self, '/') = 0;
	snprintf(keeper_exe, sizeof(keeper_exe), "%s/uroce-keeper", self);
	snprintf(tool, sizeof(tool), "%s/uroce", self);
	netns_abandoned(c, 2); /* was it named at the start */
	uroce_daemon_socket(devdir, sock, sizeof(sock));
	c[0].wanted = uroce_port_wants_daemon(conf.port);
	c[1].wanted = getenv("UROCED_NO_KEEPER") == NULL;
	write_pid("uroced.pid", getpid());
	logf_("supervising %s: %s%s", name, c[0].wanted ? "switch for port " : "",
	      c[0].wanted ? conf.port : "no switch (af_packet)");
	for (unsigned round = 0; !stop; round++) {
		uint64_t now = mono_ns();
		int status;
		pid_t pid;
		bool gone = false;

		for (unsigned i = 0; i < 2; i++) {
			/* the keeper attaches through the switch: after it, once it listens */
			if (i == 1 && c[0].wanted && (!c[0].pid || access(sock, F_OK)))
				continue;
			if (c[i].wanted && !c[i].pid && now >= c[i].start_at)
				start(&c[i], name);
		}
		pid = waitpid(-1, &status, WNOHANG);
		for (unsigned i = 0; pid > 0 && i < 2; i++) {
			if (c[i].pid != pid)
				continue;
			gone = i == 0 && WIFEXITED(status) && WEXITSTATUS(status) == EXIT_GONE;
			c[i].wanted = ended(&c[i], status);
		}
		if (gone || (round % 20 == 0 && device_gone(&conf, ino))) {
			logf_("%s is gone: stopping", name);
			break;
		}
		if (round % 20 == 10 && netns_abandoned(c, 2)) {
			logf_("the network namespace's last name was deleted with %s in it: removing %s",
			      name, name);
			abandoned = true;
			break;
		}
		if (pid <= 0)
			usleep(50000);
	}
	stop_all(c, 2);
	remove_pid("uroced.pid");
	remove_pid("uroced.keeper");
	remove_pid("uroced.switch");
	/* its files, sysfs entries and nftables table, as the tool removes them;
	 * not a device of the name made meanwhile */
	if (abandoned && devdir_ino() == ino) {
		execl(tool, "uroce", "link", "del", name, (char *)NULL);
		logf_("cannot run %s link del %s: %s", tool, name, strerror(errno));
		return 1;
	}
	logf_("supervisor exits");
	return 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_signal};
	const char *name;

	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: uroced NAME   (started by `uroce link add`)\n");
		return 2;
	}
	name = argv[1];
	if (uroce_dev_dir(name, devdir, sizeof(devdir))) {
		fprintf(stderr, "uroced: no device %s\n", name);
		return 1;
	}
	snprintf(log_path, sizeof(log_path), "%s/uroced.log", devdir);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return supervise(name);
}
