/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One configuration: everything the provider and its dataplane take from
 * the UROCE_* environment and from the device's configuration file (what
 * `uroce link add` wrote), read and checked once when a device is opened,
 * then passed down. Nothing else in provider/, dataplane/ or transport/
 * reads the environment; nothing on the data path parses.
 *
 * A program's environment is more specific than the device: it wins. A
 * value that cannot be read is refused (the default or the device's value
 * stays) and a value beyond its range is clamped; either way with a line in
 * the debug log, at the level the old code used (UROCE_MODE and UROCE_CC:
 * always, others: UROCE_DEBUG=1). docs/configuration.md has the table.
 *
 * Plain C, no libibverbs or DPDK: the unit test and the `uroce` tool (for
 * UROCE_RUN_DIR) compile it.
 */
#ifndef UROCE_CONFIG_H
#define UROCE_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "engine.h"
#include "registry.h"

/* Defaults of the tunable timings; docs/progress-and-cpu.md has the measurements. */
#define UROCE_DEFAULT_ACK_DELAY_NS 50000ull /* shortest hold of an ACK for an answer */
#define UROCE_DEFAULT_SPIN_NS 5000ull	    /* the progress thread polls on after a packet */
#define UROCE_DEFAULT_YIELD_NS 50000ull	    /* a spinning application yields when idle this long */
#define UROCE_DEFAULT_ANSWER_NS 5000000ull  /* the late answerer looks this often */
#define UROCE_DEFAULT_SR_RTO_START_NS 10000000ull /* SR: the RTO's floor in a QP's first round trips */
#define UROCE_DEFAULT_SR_RTO_STALL_NS 20000000ull /* SR: the RTO floor for a silent peer */

/* Objects a context counts against its advertised limits (limits.c). */
enum uroce_obj {
	UROCE_OBJ_PD,
	UROCE_OBJ_MR,
	UROCE_OBJ_CQ,
	UROCE_OBJ_QP,
	UROCE_OBJ_SRQ,
	UROCE_OBJ_AH,
	UROCE_OBJ_MW,
	UROCE_OBJ_COUNT
};

/* Longest impairment spec taken from the environment (the device file holds 255). */
#define UROCE_CONFIG_SPEC_MAX 1024

/* What one opened device runs with. */
struct uroce_config {
	/* the debug log (log.c) */
	int debug;	/* UROCE_DEBUG: 0 errors, 1 explains, 2 more; below 0 silent */
	bool debug_set; /* UROCE_DEBUG present at all: DPDK keeps its log level */
	/* the engine, from the device and then UROCE_MODE, UROCE_CC, UROCE_ACK_DELAY_NS */
	struct ur_dev_config engine;
	unsigned active_mtu; /* bytes: the interface's, capped by link add's mtu, at least 256 */
	/* the dataplane (dataplane/dataplane.h) */
	char capture[PATH_MAX];		    /* pcap file, "" for none */
	char impair[UROCE_CONFIG_SPEC_MAX]; /* fault-injection spec, "" for none */
	uint64_t seed;			    /* of the fault injector: UROCE_SEED, else the pid */
	bool no_huge;			    /* UROCE_NO_HUGE: plain memory for DPDK */
	bool no_gso;			    /* UROCE_NO_GSO: af_packet sends no batches */
	bool no_steer;			    /* UROCE_NO_STEER: no receive filter (steer.c) */
	/* progress.c */
	uint64_t spin_ns;	 /* UROCE_SPIN_NS */
	uint64_t yield_after_ns; /* UROCE_YIELD_NS, 0: never yield */
	int progress_nice;	 /* UROCE_PROGRESS_NICE: the progress thread's nice, 0: as the process */
	uint64_t answer_ns;	 /* UROCE_ANSWER_NS: the late answerer's tick (answerer.c), 0: none */
	/* limits.c: what query_device advertises; UROCE_LIMITS lowers them */
	uint32_t limit[UROCE_OBJ_COUNT];
};

/* What the whole process uses before and besides any device (log lines without one, paths). */
struct uroce_process_config {
	int debug;		   /* UROCE_DEBUG */
	char debug_file[PATH_MAX]; /* UROCE_DEBUG_FILE, "" for stderr */
	char run_dir[PATH_MAX];	   /* UROCE_RUN_DIR, "" for /run/uroce or /dev/shm/uroce */
};

/* Where the variables come from and where complaints go: the environment and the debug log. */
struct uroce_config_io {
	const char *(*get)(void *arg, const char *name);	/* NULL when unset */
	void (*report)(void *arg, int level, const char *line); /* may be NULL */
	void *arg;
};

/* The environment (getenv): the `get` of a real process. */
const char *uroce_config_getenv(void *arg, const char *name);

/* Fill c from a device's file and the variables io gives. */
void uroce_config_parse(struct uroce_config *c, const struct uroce_devconf *dev,
			const struct uroce_config_io *io);
/*
 * At device open: read device `name`'s file into dev and fill c from it and
 * the environment; complaints go to report(arg, level, line). 0 or -errno
 * (the file could not be read: said at level 0).
 */
int uroce_config_load(struct uroce_config *c, const char *name, struct uroce_devconf *dev,
		      void (*report)(void *arg, int level, const char *line), void *arg);

void uroce_process_config_parse(struct uroce_process_config *p, const struct uroce_config_io *io);
/* The process's, read from the environment at the first call. */
const struct uroce_process_config *uroce_process_config(void);

/*
 * Loaded before main(): point libibverbs (SYSFS_PATH) at this namespace's
 * uroce devices unless SYSFS_PATH names something outside our run tree.
 */
void uroce_config_point_sysfs(void);

#endif
