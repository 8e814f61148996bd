/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The configuration, read once: config.h says what and why. Each variable
 * is read here and nowhere else; docs/configuration.md lists them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cc_spec.h"
#include "config.h"
#include "shared.h"

const char *uroce_config_getenv(void *arg, const char *name)
{
	(void)arg;
	return getenv(name);
}

static const struct uroce_config_io environment = {.get = uroce_config_getenv};

__attribute__((format(printf, 3, 4))) static void report(const struct uroce_config_io *io,
							 int level, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!io->report)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	io->report(io->arg, level, line);
}

/* ---- values ---- */

enum number { NUMBER_OK, NUMBER_TOO_BIG, NUMBER_BAD };

/* Nothing but blanks (a shell script's stray space or newline) from s on. */
static bool blank(const char *s)
{
	return s[strspn(s, " \t\n")] == 0;
}

/* A whole unsigned number as strtoull reads one (decimal, 0x hex, 0 octal), only blanks after. */
static enum number parse_u64(const char *s, uint64_t *out)
{
	const char *p = s;
	char *end;
	unsigned long long v;

	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == '-')
		return NUMBER_BAD; /* strtoull would negate it into a huge value */
	errno = 0;
	v = strtoull(p, &end, 0);
	if (end == p || !blank(end))
		return NUMBER_BAD;
	*out = v;
	return errno == ERANGE ? NUMBER_TOO_BIG : NUMBER_OK;
}

/* A nanosecond count or a seed: `def` when unset or unreadable. */
static uint64_t u64_var(const struct uroce_config_io *io, const char *name, uint64_t def)
{
	const char *v = io->get(io->arg, name);
	uint64_t n;

	if (!v)
		return def;
	switch (parse_u64(v, &n)) {
	case NUMBER_OK:
		return n;
	case NUMBER_TOO_BIG:
		report(io, 1, "%s=%s: beyond 64 bits, clamped to %llu", name, v,
		       (unsigned long long)UINT64_MAX);
		return UINT64_MAX;
	default:
		report(io, 1, "%s=%s: not a whole number, using %llu", name, v,
		       (unsigned long long)def);
		return def;
	}
}

/* A signed decimal within [lo, hi]: `def` when unset or unreadable, clamped beyond. */
static int int_var(const struct uroce_config_io *io, const char *name, int def, int lo, int hi)
{
	const char *v = io->get(io->arg, name);
	char *end;
	long n;

	if (!v)
		return def;
	errno = 0;
	n = strtol(v, &end, 10);
	if (end == v || !blank(end)) {
		report(io, 1, "%s=%s: not a whole number, using %d", name, v, def);
		return def;
	}
	if (errno == ERANGE || n > hi || n < lo) {
		n = n < lo ? lo : hi;
		report(io, 1, "%s=%s: clamped to %ld", name, v, n);
	}
	return (int)n;
}

/* UROCE_DEBUG: a decimal level, as atoi read it; `set` says whether it is there at all. */
static int debug_var(const struct uroce_config_io *io, bool *set)
{
	*set = io->get(io->arg, "UROCE_DEBUG") != NULL;
	return int_var(io, "UROCE_DEBUG", 0, INT_MIN, INT_MAX);
}

/* A text variable into buf: false (buf untouched) when unset or empty, or too long for buf. */
static bool text_var(const struct uroce_config_io *io, const char *name, char *buf, size_t len)
{
	const char *v = io->get(io->arg, name);

	if (!v || !*v)
		return false;
	if (strlen(v) >= len) {
		report(io, 1, "%s: longer than %zu bytes, ignored", name, len - 1);
		return false;
	}
	memcpy(buf, v, strlen(v) + 1);
	return true;
}

/* The environment's text if set and not empty, else the device's (capture, impair). */
static void env_or_device(const struct uroce_config_io *io, const char *name, const char *dev,
			  char *buf, size_t len)
{
	buf[0] = 0;
	if (!text_var(io, name, buf, len) && dev)
		snprintf(buf, len, "%s", dev);
}

/* ---- limits ---- */

static const char *const obj_names[UROCE_OBJ_COUNT] = {
    [UROCE_OBJ_PD] = "pd", [UROCE_OBJ_MR] = "mr",   [UROCE_OBJ_CQ] = "cq",
    [UROCE_OBJ_QP] = "qp", [UROCE_OBJ_SRQ] = "srq", [UROCE_OBJ_AH] = "ah",
    [UROCE_OBJ_MW] = "mw",
};

/*
 * What a context may hold, and UROCE_LIMITS=qp=N,mr=N,cq=N,pd=N,srq=N,ah=N,mw=N
 * lowering them (never raising them), so a program's behaviour at its
 * limits can be tried without creating a quarter of a million QPs.
 */
static void limits(struct uroce_config *c, const struct uroce_config_io *io)
{
	const char *env = io->get(io->arg, "UROCE_LIMITS");
	char buf[256], *save = NULL, *tok;

	c->limit[UROCE_OBJ_PD] = 1u << 16;
	c->limit[UROCE_OBJ_MR] = UR_MR_MAX - 1; /* the MR table's size; index 0 is never used */
	c->limit[UROCE_OBJ_CQ] = 1u << 16;
	/* the QP number blocks one process may own, less QP0 and QP1 */
	c->limit[UROCE_OBJ_QP] = (UROCE_MAX_OWN_BLOCKS << UROCE_QPN_BLOCK_BITS) - 2;
	c->limit[UROCE_OBJ_SRQ] = 1u << 16;
	c->limit[UROCE_OBJ_AH] = 1u << 16;
	c->limit[UROCE_OBJ_MW] = 1u << 16; /* windows share the MR table's keys */
	if (!env)
		return;
	if (strlen(env) >= sizeof(buf)) {
		report(io, 1, "UROCE_LIMITS: longer than %zu bytes, ignored", sizeof(buf) - 1);
		return;
	}
	strcpy(buf, env);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '='), *end;
		unsigned long v;
		unsigned i;

		if (!eq) {
			report(io, 1, "UROCE_LIMITS: '%s' is not NAME=N, ignored", tok);
			continue;
		}
		*eq++ = 0;
		for (i = 0; i < UROCE_OBJ_COUNT && strcmp(tok, obj_names[i]); i++)
			;
		v = strtoul(eq, &end, 0);
		if (i == UROCE_OBJ_COUNT) {
			report(io, 1,
			       "UROCE_LIMITS: no object '%s' (pd, mr, cq, qp, srq, ah, mw), ignored",
			       tok);
		} else if (end == eq || *end) {
			report(io, 1, "UROCE_LIMITS: %s=%s is not a number, ignored", tok, eq);
		} else if (v < c->limit[i]) {
			c->limit[i] = (uint32_t)v;
		} else {
			report(io, 1, "UROCE_LIMITS: %s=%s only lowers limits: kept %u", tok, eq,
			       c->limit[i]);
		}
	}
	report(io, 1, "limits: qp %u mr %u cq %u pd %u srq %u ah %u", c->limit[UROCE_OBJ_QP],
	       c->limit[UROCE_OBJ_MR], c->limit[UROCE_OBJ_CQ], c->limit[UROCE_OBJ_PD],
	       c->limit[UROCE_OBJ_SRQ], c->limit[UROCE_OBJ_AH]);
}

/* ---- the engine ---- */

static void engine(struct uroce_config *c, const struct uroce_devconf *dev,
		   const struct uroce_config_io *io)
{
	struct ur_dev_config *e = &c->engine;
	const char *mode = io->get(io->arg, "UROCE_MODE");
	const char *specs[2] = {dev->cc, io->get(io->arg, "UROCE_CC")};
	char why[128];

	ur_dev_config_default(e);
	e->max_mtu = c->active_mtu;
	/* a peer process owns whole blocks of QP numbers, each with one ring */
	e->peer_qpn_shift = UROCE_QPN_BLOCK_BITS;
	if (!mode || !*mode)
		mode = dev->mode[0] ? dev->mode : NULL;
	if (mode && strcmp(mode, "sr") && strcmp(mode, "gbn"))
		report(io, 0, "UROCE_MODE=%s: not gbn or sr, using gbn", mode);
	e->retx_mode = mode && !strcmp(mode, "sr") ? UR_RETX_SR : UR_RETX_GBN;
	if (dev->rd_atom)
		e->max_qp_rd_atom = e->max_qp_init_rd_atom = dev->rd_atom;
	e->ack_delay_ns = u64_var(io, "UROCE_ACK_DELAY_NS", UROCE_DEFAULT_ACK_DELAY_NS);
	/* a host's first milliseconds of a stream stall longer than the RTO's
	 * floor (docs/selective-repeat.md); the simulator's hosts do not */
	e->sr_rto_start_ns = u64_var(io, "UROCE_SR_RTO_START_NS", UROCE_DEFAULT_SR_RTO_START_NS);
	/* a peer silent with 128 packets or more in flight has stopped its
	 * thread, not lost them all: a live host does, for up to ~18 ms several
	 * times a minute here (docs/selective-repeat.md); the simulator's
	 * hosts stop only where a scenario says so */
	e->sr_rto_stall_ns = u64_var(io, "UROCE_SR_RTO_STALL_NS", UROCE_DEFAULT_SR_RTO_STALL_NS);
	/* congestion control: the port speed DCQCN starts from, the link's spec,
	 * then UROCE_CC for this program (validated by `uroce link add`) */
	if (dev->speed_mbps)
		e->link_rate_mbps = dev->speed_mbps;
	for (unsigned i = 0; i < 2; i++) {
		if (specs[i] && ur_cc_spec_apply(e, specs[i], why, sizeof(why)))
			report(io, 0, "%s: ignoring congestion-control setting '%s': %s", dev->name,
			       specs[i], why);
	}
}

void uroce_config_parse(struct uroce_config *c, const struct uroce_devconf *dev,
			const struct uroce_config_io *io)
{
	const char *v;

	memset(c, 0, sizeof(*c));
	/* first: it decides which of the lines below are printed */
	c->debug = debug_var(io, &c->debug_set);
	c->active_mtu = uroce_eth_to_ib_mtu(dev->netdev_mtu);
	if (dev->max_mtu && dev->max_mtu < c->active_mtu)
		c->active_mtu = dev->max_mtu;
	if (!c->active_mtu)
		c->active_mtu = 256;
	engine(c, dev, io);
	env_or_device(io, "UROCE_CAPTURE", dev->capture, c->capture, sizeof(c->capture));
	env_or_device(io, "UROCE_IMPAIR", dev->impair, c->impair, sizeof(c->impair));
	c->seed = u64_var(io, "UROCE_SEED", (uint64_t)getpid());
	c->no_huge = io->get(io->arg, "UROCE_NO_HUGE") != NULL;
	/* to measure what steering saves */
	v = io->get(io->arg, "UROCE_NO_STEER");
	c->no_steer = v && *v && strcmp(v, "0");
	/* to measure what batching saves, or for a peer that cannot take batches */
	v = io->get(io->arg, "UROCE_NO_GSO");
	c->no_gso = v && *v && strcmp(v, "0");
	c->spin_ns = u64_var(io, "UROCE_SPIN_NS", UROCE_DEFAULT_SPIN_NS);
	c->yield_after_ns = u64_var(io, "UROCE_YIELD_NS", UROCE_DEFAULT_YIELD_NS);
	c->progress_nice = int_var(io, "UROCE_PROGRESS_NICE", 0, -20, 19);
	c->answer_ns = u64_var(io, "UROCE_ANSWER_NS", UROCE_DEFAULT_ANSWER_NS);
	limits(c, io);
}

int uroce_config_load(struct uroce_config *c, const char *name, struct uroce_devconf *dev,
		      void (*report_fn)(void *arg, int level, const char *line), void *arg)
{
	struct uroce_config_io io = {.get = uroce_config_getenv, .report = report_fn, .arg = arg};
	struct uroce_config_io quiet = {.get = uroce_config_getenv};
	int err;

	/* the debug level, for the complaint about the file, said again in parse */
	memset(c, 0, sizeof(*c));
	c->debug = debug_var(&quiet, &c->debug_set);
	err = uroce_devconf_load(name, dev);
	if (err) {
		report(&io, 0, "cannot read the configuration of %s: %s", name, strerror(-err));
		return err;
	}
	uroce_config_parse(c, dev, &io);
	return 0;
}

/* ---- the process ---- */

void uroce_process_config_parse(struct uroce_process_config *p, const struct uroce_config_io *io)
{
	bool set;

	memset(p, 0, sizeof(*p));
	p->debug = debug_var(io, &set);
	text_var(io, "UROCE_DEBUG_FILE", p->debug_file, sizeof(p->debug_file));
	text_var(io, "UROCE_RUN_DIR", p->run_dir, sizeof(p->run_dir));
}

static struct uroce_process_config process;
static pthread_once_t process_once = PTHREAD_ONCE_INIT;

static void process_read(void)
{
	/* no report: the log this would go to needs this very configuration */
	uroce_process_config_parse(&process, &environment);
}

const struct uroce_process_config *uroce_process_config(void)
{
	pthread_once(&process_once, process_read);
	return &process;
}

/* libibverbs reads SYSFS_PATH lazily, at the first device list. */
void uroce_config_point_sysfs(void)
{
	const char *cur = getenv("SYSFS_PATH");
	const char *base = uroce_run_base();
	char want[512];
	struct stat st;

	if (cur && strncmp(cur, base, strlen(base)))
		return;
	if (uroce_sysfs_dir(want, sizeof(want)) || stat(want, &st))
		return;
	setenv("SYSFS_PATH", want, 1);
}
