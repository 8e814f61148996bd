/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Starting and stopping a device's daemon (tools/uroced.c) for `uroce link`:
 * it runs in its own session, in the namespace of the command that started
 * it, and says it is ready by making its socket.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon_ctl.h"
#include "registry.h"
#include "uroce.h"

#define READY_WAIT_MS 5000 /* a port that takes longer comes up later, the daemon says when */
#define STOP_WAIT_MS 4000  /* the supervisor gives its worker 2 s, then kills it */

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* uroced lives beside uroce, installed or in the build tree. */
static int daemon_path(char *buf, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n < 0)
		return -errno;
	self[n] = 0;
	if ((size_t)snprintf(buf, len, "%s/uroced", dirname(self)) >= len)
		return -ENAMETOOLONG;
	return access(buf, X_OK) ? -errno : 0;
}

int uroced_pid(const char *devdir)
{
	return uroced_child_pid(devdir, "uroced.pid");
}

/* A pid file's pid, if that process runs and is one of ours (not a process
 * that got the pid of a daemon that died without removing its file). */
int uroced_child_pid(const char *devdir, const char *file)
{
	char path[PATH_MAX], comm[32] = "";
	FILE *f;
	int pid = 0;

	snprintf(path, sizeof(path), "%s/%s", devdir, file);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%d", &pid) != 1 || pid <= 0)
		pid = 0;
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	f = pid ? fopen(path, "r") : NULL;
	if (!f)
		return 0;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = 0;
	fclose(f);
	return !strncmp(comm, "uroce", 5) ? pid : 0;
}

/* The supervisor's log says it gave the switch up (tools/uroced.c). */
static bool switch_given_up(const char *devdir)
{
	char path[PATH_MAX], line[512];
	bool up = false;
	FILE *f;

	snprintf(path, sizeof(path), "%s/uroced.log", devdir);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (!up && fgets(line, sizeof(line), f))
		up = strstr(line, "the switch failed") && strstr(line, "not restarted");
	fclose(f);
	return up;
}

void uroced_port_errors(const char *devdir, FILE *out)
{
	char path[PATH_MAX], line[512], last[512] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/uroced.log", devdir);
	f = fopen(path, "r");
	if (!f)
		return;
	/* the first start's lines: every later one says the same */
	while (fgets(line, sizeof(line), f) && !strstr(line, "failed (exit")) {
		char *msg = strstr(line, "]: ");

		if (msg && strstr(msg, "cannot") && strcmp(msg, last)) {
			fprintf(out, "  %s", msg + 3);
			snprintf(last, sizeof(last), "%s", msg);
		}
	}
	fclose(f);
}

int uroced_start(const char *name, const char *devdir, bool switched)
{
	char exe[PATH_MAX], sock[PATH_MAX], sys[PATH_MAX];
	int status;
	pid_t child;
	int err = daemon_path(exe, sizeof(exe));

	if (err)
		return err;
	snprintf(sock, sizeof(sock), "%s/uroced.sock", devdir);
	unlink(sock); /* one left by a daemon that died would look ready */
	child = fork();
	if (child < 0)
		return -errno;
	if (!child) {
		int null = open("/dev/null", O_RDWR);

		setsid();
		/* what its keeper needs to find the device (uroce env), under
		 * names of its own: uroced must not load the provider itself */
		if (!uroce_sysfs_dir(sys, sizeof(sys)))
			setenv("UROCED_SYSFS", sys, 1);
		setenv("UROCED_PROVIDER", uroce_provider_path(), 1);
		unsetenv("LD_PRELOAD");
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
			if (null > 2)
				close(null);
		}
		/* a second fork: the supervisor is nobody's child, init reaps it */
		child = fork();
		if (child)
			_exit(child < 0 ? 1 : 0);
		execl(exe, "uroced", name, (char *)NULL);
		_exit(127);
	}
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status))
		return -ECHILD;
	if (!switched)
		return 0; /* the keeper comes up by itself; nobody waits for it */
	for (unsigned waited = 0; waited < READY_WAIT_MS; waited += 10) {
		if (!access(sock, F_OK))
			return 0;
		/* a port that fails at each start (no such NIC, an MTU AF_XDP
		 * cannot take) is given up in about 2 s: no use waiting on */
		if (waited % 100 == 0 && switch_given_up(devdir))
			return -ENODEV;
		sleep_ms(10);
	}
	return -ETIMEDOUT;
}

void uroced_stop(const char *devdir)
{
	int pid = uroced_pid(devdir);

	if (!pid || kill(pid, SIGTERM))
		return;
	for (unsigned waited = 0; waited < STOP_WAIT_MS; waited += 10) {
		if (kill(pid, 0))
			return;
		sleep_ms(10);
	}
	kill(pid, SIGKILL);
}
