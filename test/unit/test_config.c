/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The configuration (provider/config.c): defaults, each UROCE_* variable
 * set, the environment over the device's file, values out of range
 * (clamped) and garbage (refused), each with the debug-log line it gives
 * and at which level. A fake environment feeds the parser; the last test
 * goes through getenv and a device file in a run tree of its own.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "shared.h"

/* ---- a fake environment and a log that keeps what it is told ---- */

#define MAX_VARS 16
#define MAX_LINES 16

struct fake {
	const char *name[MAX_VARS], *value[MAX_VARS];
	unsigned nvars;
	int level[MAX_LINES];
	char line[MAX_LINES][512];
	unsigned nlines;
};

static const char *fake_get(void *arg, const char *name)
{
	struct fake *f = arg;

	for (unsigned i = 0; i < f->nvars; i++)
		if (!strcmp(f->name[i], name))
			return f->value[i];
	return NULL;
}

static void fake_report(void *arg, int level, const char *line)
{
	struct fake *f = arg;

	ck_assert_uint_lt(f->nlines, MAX_LINES);
	f->level[f->nlines] = level;
	snprintf(f->line[f->nlines], sizeof(f->line[0]), "%s", line);
	f->nlines++;
}

static void set(struct fake *f, const char *name, const char *value)
{
	ck_assert_uint_lt(f->nvars, MAX_VARS);
	f->name[f->nvars] = name;
	f->value[f->nvars] = value;
	f->nvars++;
}

/* The one line logged, at `level`, containing `text`. */
static void said_once(const struct fake *f, int level, const char *text)
{
	ck_assert_msg(f->nlines == 1, "%u lines logged, want 1 (first: %s)", f->nlines,
		      f->nlines ? f->line[0] : "-");
	ck_assert_int_eq(f->level[0], level);
	ck_assert_msg(strstr(f->line[0], text), "'%s' does not say '%s'", f->line[0], text);
}

/* A device as `uroce link add NAME netdev veth0` writes it for a 1500-byte veth. */
static void device(struct uroce_devconf *d)
{
	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "uroce0");
	snprintf(d->netdev, sizeof(d->netdev), "veth0");
	snprintf(d->port, sizeof(d->port), "af_packet");
	snprintf(d->mode, sizeof(d->mode), "gbn");
	d->netdev_mtu = 1500;
	d->max_mtu = 4096;
	d->speed_mbps = 10000;
}

static struct uroce_config parse(struct fake *f, const struct uroce_devconf *d)
{
	struct uroce_config_io io = {.get = fake_get, .report = fake_report, .arg = f};
	struct uroce_config c;

	memset(&c, 0xa5, sizeof(c)); /* parse must set every field */
	uroce_config_parse(&c, d, &io);
	return c;
}

static const uint32_t default_limit[UROCE_OBJ_COUNT] = {
    [UROCE_OBJ_PD] = 1u << 16,	[UROCE_OBJ_MR] = UR_MR_MAX - 1,
    [UROCE_OBJ_CQ] = 1u << 16,	[UROCE_OBJ_QP] = (UROCE_MAX_OWN_BLOCKS << UROCE_QPN_BLOCK_BITS) - 2,
    [UROCE_OBJ_SRQ] = 1u << 16, [UROCE_OBJ_AH] = 1u << 16,
    [UROCE_OBJ_MW] = 1u << 16,
};

/* ---- defaults ---- */

START_TEST(test_defaults)
{
	struct fake f = {0};
	struct uroce_devconf d;
	struct uroce_config c;
	struct ur_dev_config e;

	device(&d);
	c = parse(&f, &d);
	ck_assert_uint_eq(f.nlines, 0);
	ck_assert_int_eq(c.debug, 0);
	ck_assert(!c.debug_set);
	ck_assert_uint_eq(c.active_mtu, 1024); /* 1500 as on Soft-RoCE */
	ck_assert_uint_eq(c.engine.max_mtu, 1024);
	ck_assert_int_eq(c.engine.retx_mode, UR_RETX_GBN);
	ck_assert_uint_eq(c.engine.ack_delay_ns, 50000);
	ck_assert_uint_eq(c.engine.sr_rto_start_ns, 10000000);
	ck_assert_uint_eq(c.engine.sr_rto_stall_ns, 20000000);
	ck_assert_uint_eq(c.engine.link_rate_mbps, 10000);
	ck_assert_uint_eq(c.engine.max_qp_rd_atom, UR_DEFAULT_RD_ATOMIC);
	ck_assert_uint_eq(c.engine.max_qp_init_rd_atom, UR_DEFAULT_RD_ATOMIC);
	/* everything else is the engine's own default */
	memset(&e, 0, sizeof(e));
	ur_dev_config_default(&e);
	e.max_mtu = 1024;
	e.ack_delay_ns = 50000;
	e.sr_rto_start_ns = 10000000;
	e.sr_rto_stall_ns = 20000000;
	e.link_rate_mbps = 10000;
	ck_assert(!memcmp(&e, &c.engine, sizeof(e)));
	ck_assert_str_eq(c.capture, "");
	ck_assert_str_eq(c.impair, "");
	ck_assert_uint_eq(c.seed, (uint64_t)getpid());
	ck_assert(!c.no_huge);
	ck_assert(!c.no_steer);
	ck_assert(!c.no_gso);
	ck_assert_uint_eq(c.spin_ns, 5000);
	ck_assert_uint_eq(c.yield_after_ns, 50000);
	for (unsigned i = 0; i < UROCE_OBJ_COUNT; i++)
		ck_assert_uint_eq(c.limit[i], default_limit[i]);
}
END_TEST

/* The device's own settings, with nothing in the environment. */
START_TEST(test_device_settings)
{
	struct fake f = {0};
	struct uroce_devconf d;
	struct uroce_config c;

	device(&d);
	d.netdev_mtu = 9000;
	d.max_mtu = 2048;
	snprintf(d.mode, sizeof(d.mode), "sr");
	snprintf(d.capture, sizeof(d.capture), "/tmp/dev.pcap");
	snprintf(d.impair, sizeof(d.impair), "loss=0.01");
	snprintf(d.cc, sizeof(d.cc), "np");
	d.rd_atom = 128;
	d.speed_mbps = 25000;
	c = parse(&f, &d);
	ck_assert_uint_eq(f.nlines, 0);
	ck_assert_uint_eq(c.active_mtu, 2048);
	ck_assert_int_eq(c.engine.retx_mode, UR_RETX_SR);
	ck_assert_str_eq(c.capture, "/tmp/dev.pcap");
	ck_assert_str_eq(c.impair, "loss=0.01");
	ck_assert(!c.engine.dcqcn);
	ck_assert(c.engine.ecn_np);
	ck_assert_uint_eq(c.engine.max_qp_rd_atom, 128);
	ck_assert_uint_eq(c.engine.link_rate_mbps, 25000);

	/* an interface too small for 256-byte packets still gets 256 */
	d.netdev_mtu = 300;
	c = parse(&f, &d);
	ck_assert_uint_eq(c.active_mtu, 256);
	/* an old file without a mode is go-back-N */
	d.mode[0] = 0;
	c = parse(&f, &d);
	ck_assert_int_eq(c.engine.retx_mode, UR_RETX_GBN);
	ck_assert_uint_eq(f.nlines, 0);
}
END_TEST

/* ---- each variable set to a good value ---- */

struct one_var {
	const char *name, *value;
	void (*check)(const struct uroce_config *c);
};

static void debug_2(const struct uroce_config *c)
{
	ck_assert_int_eq(c->debug, 2);
	ck_assert(c->debug_set);
}

static void mode_sr(const struct uroce_config *c)
{
	ck_assert_int_eq(c->engine.retx_mode, UR_RETX_SR);
}

static void cc_none(const struct uroce_config *c)
{
	ck_assert(!c->engine.dcqcn);
	ck_assert(!c->engine.ecn_np);
}

static void cc_line_rate(const struct uroce_config *c)
{
	ck_assert_uint_eq(c->engine.link_rate_mbps, 2500);
}

static void ack_delay_off(const struct uroce_config *c)
{
	ck_assert_uint_eq(c->engine.ack_delay_ns, 0);
}

static void seed_hex(const struct uroce_config *c)
{
	ck_assert_uint_eq(c->seed, 0x1234);
}

static void seed_max(const struct uroce_config *c)
{
	ck_assert_uint_eq(c->seed, UINT64_MAX);
}

static void capture_env(const struct uroce_config *c)
{
	ck_assert_str_eq(c->capture, "/tmp/env.pcap");
}

static void impair_env(const struct uroce_config *c)
{
	ck_assert_str_eq(c->impair, "rx.loss=0.5,seed=3");
}

static void no_huge(const struct uroce_config *c)
{
	ck_assert(c->no_huge);
}

static void no_steer(const struct uroce_config *c)
{
	ck_assert(c->no_steer);
}

static void steer(const struct uroce_config *c)
{
	ck_assert(!c->no_steer);
}

static void no_gso(const struct uroce_config *c)
{
	ck_assert(c->no_gso);
}

static void gso(const struct uroce_config *c)
{
	ck_assert(!c->no_gso);
}

static void spin_123(const struct uroce_config *c)
{
	ck_assert_uint_eq(c->spin_ns, 123);
}

static void yield_never(const struct uroce_config *c)
{
	ck_assert_uint_eq(c->yield_after_ns, 0);
}

static void yield_octal(const struct uroce_config *c)
{
	ck_assert_uint_eq(c->yield_after_ns, 8); /* strtoull's base 0, as before */
}

static void nice_minus5(const struct uroce_config *c)
{
	ck_assert_int_eq(c->progress_nice, -5);
}

static void rto_start_off(const struct uroce_config *c)
{
	ck_assert_uint_eq(c->engine.sr_rto_start_ns, 0);
}

static void rto_stall_off(const struct uroce_config *c)
{
	ck_assert_uint_eq(c->engine.sr_rto_stall_ns, 0);
}

static void limits_low(const struct uroce_config *c)
{
	ck_assert_uint_eq(c->limit[UROCE_OBJ_QP], 64);
	ck_assert_uint_eq(c->limit[UROCE_OBJ_MR], 64);
	ck_assert_uint_eq(c->limit[UROCE_OBJ_CQ], 32);
	ck_assert_uint_eq(c->limit[UROCE_OBJ_PD], 32);
	ck_assert_uint_eq(c->limit[UROCE_OBJ_SRQ], 16);
	ck_assert_uint_eq(c->limit[UROCE_OBJ_AH], 0);
}

static const struct one_var good[] = {
    {"UROCE_DEBUG", "2", debug_2},
    {"UROCE_DEBUG", " 2\n", debug_2},
    {"UROCE_MODE", "sr", mode_sr},
    {"UROCE_CC", "none", cc_none},
    {"UROCE_CC", "line_rate=2500M", cc_line_rate},
    {"UROCE_ACK_DELAY_NS", "0", ack_delay_off},
    {"UROCE_SR_RTO_START_NS", "0", rto_start_off},
    {"UROCE_SR_RTO_STALL_NS", "0", rto_stall_off},
    {"UROCE_SEED", "0x1234", seed_hex},
    {"UROCE_SEED", "18446744073709551615", seed_max},
    {"UROCE_CAPTURE", "/tmp/env.pcap", capture_env},
    {"UROCE_IMPAIR", "rx.loss=0.5,seed=3", impair_env},
    {"UROCE_NO_HUGE", "", no_huge}, /* set at all, as before */
    {"UROCE_NO_HUGE", "0", no_huge},
    {"UROCE_NO_STEER", "1", no_steer},
    {"UROCE_NO_STEER", "00", no_steer},
    {"UROCE_NO_STEER", "0", steer},
    {"UROCE_NO_STEER", "", steer},
    {"UROCE_NO_GSO", "1", no_gso},
    {"UROCE_NO_GSO", "0", gso},
    {"UROCE_NO_GSO", "", gso},
    {"UROCE_SPIN_NS", "123", spin_123},
    {"UROCE_YIELD_NS", "0", yield_never},
    {"UROCE_YIELD_NS", "010", yield_octal},
    {"UROCE_PROGRESS_NICE", "-5", nice_minus5},
    {"UROCE_LIMITS", "qp=64,mr=64,cq=32,pd=32,srq=16,ah=0", limits_low},
};

START_TEST(test_each_variable)
{
	const struct one_var *v = &good[_i];
	struct fake f = {0};
	struct uroce_devconf d;
	struct uroce_config c;

	device(&d);
	set(&f, v->name, v->value);
	c = parse(&f, &d);
	v->check(&c);
	/* only UROCE_LIMITS says what it did, at level 1 */
	if (!strcmp(v->name, "UROCE_LIMITS"))
		said_once(&f, 1, "limits: qp 64 mr 64 cq 32 pd 32 srq 16 ah 0");
	else
		ck_assert_msg(f.nlines == 0, "%s=%s: %s", v->name, v->value, f.line[0]);
}
END_TEST

/* A program's environment is more specific than the device: it wins; an empty one does not. */
START_TEST(test_environment_wins)
{
	struct fake f = {0};
	struct uroce_devconf d;
	struct uroce_config c;

	device(&d);
	snprintf(d.mode, sizeof(d.mode), "sr");
	snprintf(d.capture, sizeof(d.capture), "/tmp/dev.pcap");
	snprintf(d.impair, sizeof(d.impair), "loss=0.01");
	snprintf(d.cc, sizeof(d.cc), "none");
	set(&f, "UROCE_MODE", "gbn");
	set(&f, "UROCE_CAPTURE", "/tmp/env.pcap");
	set(&f, "UROCE_IMPAIR", "");
	set(&f, "UROCE_CC", "dcqcn");
	c = parse(&f, &d);
	ck_assert_uint_eq(f.nlines, 0);
	ck_assert_int_eq(c.engine.retx_mode, UR_RETX_GBN);
	ck_assert_str_eq(c.capture, "/tmp/env.pcap");
	ck_assert_str_eq(c.impair, "loss=0.01");
	ck_assert(c.engine.dcqcn); /* UROCE_CC goes on top of the device's spec */

	/* an empty UROCE_MODE leaves the device's */
	f.nvars = 0;
	set(&f, "UROCE_MODE", "");
	c = parse(&f, &d);
	ck_assert_int_eq(c.engine.retx_mode, UR_RETX_SR);
}
END_TEST

/* ---- out of range: clamped, and said at level 1 ---- */

START_TEST(test_out_of_range)
{
	struct fake f = {0};
	struct uroce_devconf d;
	struct uroce_config c;

	device(&d);
	set(&f, "UROCE_SPIN_NS", "99999999999999999999999");
	c = parse(&f, &d);
	ck_assert_uint_eq(c.spin_ns, UINT64_MAX); /* what strtoull gave before */
	said_once(&f, 1, "UROCE_SPIN_NS=99999999999999999999999: beyond 64 bits, clamped");

	memset(&f, 0, sizeof(f));
	set(&f, "UROCE_DEBUG", "99999999999");
	c = parse(&f, &d);
	ck_assert_int_eq(c.debug, 2147483647);
	said_once(&f, 1, "UROCE_DEBUG=99999999999: clamped to 2147483647");

	memset(&f, 0, sizeof(f));
	set(&f, "UROCE_PROGRESS_NICE", "-40");
	c = parse(&f, &d);
	ck_assert_int_eq(c.progress_nice, -20); /* setpriority's range */
	said_once(&f, 1, "UROCE_PROGRESS_NICE=-40: clamped to -20");

	/* a limit only lowers: one above the default keeps the default */
	memset(&f, 0, sizeof(f));
	set(&f, "UROCE_LIMITS", "qp=1000000");
	c = parse(&f, &d);
	ck_assert_uint_eq(c.limit[UROCE_OBJ_QP], default_limit[UROCE_OBJ_QP]);
	ck_assert_uint_eq(f.nlines, 2);
	ck_assert_int_eq(f.level[0], 1);
	ck_assert_ptr_nonnull(strstr(f.line[0], "qp=1000000 only lowers limits: kept 262142"));

	/* a negative level is taken (it silences even level 0), as atoi took it */
	memset(&f, 0, sizeof(f));
	set(&f, "UROCE_DEBUG", "-1");
	c = parse(&f, &d);
	ck_assert_int_eq(c.debug, -1);
	ck_assert_uint_eq(f.nlines, 0);
}
END_TEST

/* ---- garbage: refused, the default or the device's value stays ---- */

struct bad_var {
	const char *name, *value;
	int level;	  /* of the line it gives */
	const char *says; /* part of that line */
};

static const struct bad_var bad[] = {
    {"UROCE_SPIN_NS", "abc", 1, "UROCE_SPIN_NS=abc: not a whole number, using 5000"},
    {"UROCE_SPIN_NS", "", 1, "UROCE_SPIN_NS=: not a whole number, using 5000"},
    {"UROCE_SPIN_NS", "12us", 1, "not a whole number, using 5000"},
    {"UROCE_YIELD_NS", "-1", 1, "UROCE_YIELD_NS=-1: not a whole number, using 50000"},
    {"UROCE_ACK_DELAY_NS", "5e4", 1, "UROCE_ACK_DELAY_NS=5e4: not a whole number, using 50000"},
    {"UROCE_SEED", "seed", 1, "UROCE_SEED=seed: not a whole number"},
    {"UROCE_DEBUG", "yes", 1, "UROCE_DEBUG=yes: not a whole number, using 0"},
    {"UROCE_PROGRESS_NICE", "-5x", 1, "UROCE_PROGRESS_NICE=-5x: not a whole number, using 0"},
    {"UROCE_MODE", "rc", 0, "UROCE_MODE=rc: not gbn or sr, using gbn"},
    {"UROCE_CC", "dcqcn,bogus=1", 0, "uroce0: ignoring congestion-control setting 'dcqcn,bogus=1'"},
    {"UROCE_LIMITS", "qp", 1, "UROCE_LIMITS: 'qp' is not NAME=N, ignored"},
    {"UROCE_LIMITS", "qps=4", 1,
     "UROCE_LIMITS: no object 'qps' (pd, mr, cq, qp, srq, ah, mw), ignored"},
    {"UROCE_LIMITS", "qp=four", 1, "UROCE_LIMITS: qp=four is not a number, ignored"},
    {"UROCE_LIMITS", "qp=", 1, "UROCE_LIMITS: qp= is not a number, ignored"},
};

START_TEST(test_garbage)
{
	const struct bad_var *v = &bad[_i];
	struct fake f = {0};
	struct uroce_devconf d;
	struct uroce_config c, want;

	device(&d);
	want = parse(&f, &d);
	set(&f, v->name, v->value);
	c = parse(&f, &d);
	ck_assert_msg(f.nlines >= 1, "%s=%s: nothing said", v->name, v->value);
	ck_assert_int_eq(f.level[0], v->level);
	ck_assert_msg(strstr(f.line[0], v->says), "'%s' does not say '%s'", f.line[0], v->says);
	/* the result is the defaults' (seed: the pid either way) */
	want.debug_set = c.debug_set;
	ck_assert(!memcmp(&want, &c, sizeof(c)));
}
END_TEST

/* Several UROCE_LIMITS entries: the good ones apply, each bad one is named. */
START_TEST(test_limits_mixed)
{
	struct fake f = {0};
	struct uroce_devconf d;
	struct uroce_config c;
	char longer[300];

	device(&d);
	set(&f, "UROCE_LIMITS", "foo,qp=10,bar=1,cq=x,,mr=0x20");
	c = parse(&f, &d);
	ck_assert_uint_eq(c.limit[UROCE_OBJ_QP], 10);
	ck_assert_uint_eq(c.limit[UROCE_OBJ_MR], 32);
	ck_assert_uint_eq(c.limit[UROCE_OBJ_CQ], default_limit[UROCE_OBJ_CQ]);
	ck_assert_uint_eq(f.nlines, 4); /* foo, bar, cq=x, and the summary */
	ck_assert_ptr_nonnull(strstr(f.line[3], "limits: qp 10 mr 32"));

	/* longer than the old 255-byte buffer: ignored whole, as before */
	memset(longer, 'x', sizeof(longer));
	memcpy(longer, "qp=1,", 5);
	longer[sizeof(longer) - 1] = 0;
	memset(&f, 0, sizeof(f));
	set(&f, "UROCE_LIMITS", longer);
	c = parse(&f, &d);
	ck_assert_uint_eq(c.limit[UROCE_OBJ_QP], default_limit[UROCE_OBJ_QP]);
	said_once(&f, 1, "UROCE_LIMITS: longer than 255 bytes, ignored");
}
END_TEST

/* A bad spec in the device's file is ignored as one in the environment. */
START_TEST(test_device_cc_refused)
{
	struct fake f = {0};
	struct uroce_devconf d;
	struct uroce_config c;

	device(&d);
	snprintf(d.cc, sizeof(d.cc), "nonsense");
	set(&f, "UROCE_CC", "np");
	c = parse(&f, &d);
	said_once(&f, 0, "uroce0: ignoring congestion-control setting 'nonsense'");
	ck_assert(c.engine.ecn_np && !c.engine.dcqcn);
}
END_TEST

/* A capture path longer than a path can be: the device's stays. */
START_TEST(test_text_too_long)
{
	static char path[PATH_MAX + 10];
	struct fake f = {0};
	struct uroce_devconf d;
	struct uroce_config c;

	device(&d);
	snprintf(d.capture, sizeof(d.capture), "/tmp/dev.pcap");
	memset(path, 'a', sizeof(path) - 1);
	path[0] = '/';
	set(&f, "UROCE_CAPTURE", path);
	c = parse(&f, &d);
	ck_assert_str_eq(c.capture, "/tmp/dev.pcap");
	said_once(&f, 1, "UROCE_CAPTURE: longer than 4095 bytes, ignored");
}
END_TEST

/* ---- the process's part ---- */

START_TEST(test_process)
{
	struct fake f = {0};
	struct uroce_config_io io = {.get = fake_get, .report = fake_report, .arg = &f};
	struct uroce_process_config p;

	uroce_process_config_parse(&p, &io);
	ck_assert_int_eq(p.debug, 0);
	ck_assert_str_eq(p.debug_file, "");
	ck_assert_str_eq(p.run_dir, "");
	set(&f, "UROCE_DEBUG", "1");
	set(&f, "UROCE_DEBUG_FILE", "/tmp/uroce.log");
	set(&f, "UROCE_RUN_DIR", "/tmp/run");
	uroce_process_config_parse(&p, &io);
	ck_assert_int_eq(p.debug, 1);
	ck_assert_str_eq(p.debug_file, "/tmp/uroce.log");
	ck_assert_str_eq(p.run_dir, "/tmp/run");
	/* an empty UROCE_RUN_DIR is no UROCE_RUN_DIR */
	f.nvars = 0;
	set(&f, "UROCE_RUN_DIR", "");
	uroce_process_config_parse(&p, &io);
	ck_assert_str_eq(p.run_dir, "");
}
END_TEST

/* ---- the real thing: getenv, and a device file in a run tree of our own ---- */

static void mkdirs(const char *path)
{
	char buf[700];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		mkdir(buf, 0700);
		*p = '/';
	}
	mkdir(buf, 0700);
}

struct lines {
	int level[8];
	char text[8][512];
	unsigned n;
};

static void keep_line(void *arg, int level, const char *line)
{
	struct lines *l = arg;

	if (l->n < 8) {
		l->level[l->n] = level;
		snprintf(l->text[l->n], sizeof(l->text[0]), "%s", line);
	}
	l->n++;
}

START_TEST(test_load)
{
	char run[] = "/tmp/uroce-config-test-XXXXXX", dir[600], cmd[700];
	struct uroce_devconf d, got;
	struct uroce_config c;
	struct lines l = {0};

	ck_assert_ptr_nonnull(mkdtemp(run));
	/* before the first uroce_process_config() of this (forked) test */
	setenv("UROCE_RUN_DIR", run, 1);
	setenv("UROCE_SPIN_NS", "777", 1);
	setenv("UROCE_MODE", "sr", 1);
	unsetenv("UROCE_DEBUG");
	ck_assert_str_eq(uroce_run_base(), run);
	device(&d);
	ck_assert_int_eq(uroce_dev_dir(d.name, dir, sizeof(dir)), 0);
	mkdirs(dir);
	ck_assert_int_eq(uroce_devconf_save(&d), 0);

	ck_assert_int_eq(uroce_config_load(&c, "uroce0", &got, keep_line, &l), 0);
	ck_assert_uint_eq(l.n, 0);
	ck_assert_str_eq(got.netdev, "veth0");
	ck_assert_uint_eq(c.spin_ns, 777);
	ck_assert_int_eq(c.engine.retx_mode, UR_RETX_SR);
	ck_assert_uint_eq(c.active_mtu, 1024);

	/* no such device: said at level 0, the errno returned */
	ck_assert_int_eq(uroce_config_load(&c, "uroce9", &got, keep_line, &l), -ENOENT);
	ck_assert_uint_eq(l.n, 1);
	ck_assert_int_eq(l.level[0], 0);
	ck_assert_ptr_nonnull(strstr(l.text[0], "cannot read the configuration of uroce9"));

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", run);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_device_settings);
	tcase_add_loop_test(tc, test_each_variable, 0, sizeof(good) / sizeof(good[0]));
	tcase_add_test(tc, test_environment_wins);
	tcase_add_test(tc, test_out_of_range);
	tcase_add_loop_test(tc, test_garbage, 0, sizeof(bad) / sizeof(bad[0]));
	tcase_add_test(tc, test_limits_mixed);
	tcase_add_test(tc, test_device_cc_refused);
	tcase_add_test(tc, test_text_too_long);
	tcase_add_test(tc, test_process);
	suite_add_tcase(s, tc);
	tc = tcase_create("load");
	tcase_add_test(tc, test_load);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(config_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
