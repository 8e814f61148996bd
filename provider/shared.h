/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * State one uroce device shares between the processes that use it: QP
 * number blocks and counters. A process owns a block of 4096 QP numbers
 * while it holds an open-file-description lock on one byte of the device's
 * lock file; the kernel drops the lock when the process exits or crashes,
 * so its numbers come back by themselves. Each block also owns a row of
 * counters in a shared file; rows are never reset, so the device's totals
 * are the sums of the rows, across every process that ever used it, the
 * ones that exited or crashed included. A third file keeps, per block, the
 * next QP number to hand out and the owner's pid: a process that takes a
 * block over continues the numbering, so it does not reissue the numbers a
 * crashed owner's peers are still retrying to (see docs/multi-process.md).
 */
#ifndef UROCE_SHARED_H
#define UROCE_SHARED_H

#include <stdbool.h>
#include <stdint.h>

#include "counters.h"

#define UROCE_QPN_BLOCK_BITS 12
#define UROCE_QPN_BLOCKS 4096 /* block 0 is never used: QPNs 0 and 1 are special */
#define UROCE_MAX_OWN_BLOCKS 64
#define UROCE_DP_COUNTERS 48  /* room for the dataplane's own counters per row */
#define UROCE_ROW_COUNTERS (UR_CTR_COUNT + UROCE_DP_COUNTERS)

/* One per block, in the device's `blocks` file; written only by the block's owner. */
struct uroce_block_info {
	uint32_t next;  /* index in the block of the next QP number to hand out */
	int32_t pid;    /* last process to claim the block */
};

struct uroce_shared {
	int lock_fd;
	uint64_t *rows; /* [UROCE_QPN_BLOCKS][UROCE_ROW_COUNTERS], mapped shared */
	struct uroce_block_info *info; /* [UROCE_QPN_BLOCKS], mapped shared */
	unsigned nblocks;
	unsigned blocks[UROCE_MAX_OWN_BLOCKS];
	bool writer;    /* this process rewrites the hw_counters files */
	void *bells;    /* [UROCE_QPN_BLOCKS] x 64 bytes, mapped shared: loopback between processes */
};

/* Open the device's shared files in `devdir` and claim a first block. */
int uroce_shared_open(const char *devdir, struct uroce_shared *sh);
void uroce_shared_close(struct uroce_shared *sh);

/* Claim one more block of QP numbers; returns its index or -errno. */
int uroce_shared_claim_block(struct uroce_shared *sh);

/* Where numbering continues in our k-th block, and the index just handed out there. */
uint32_t uroce_shared_next_index(const struct uroce_shared *sh, unsigned k);
void uroce_shared_index_used(struct uroce_shared *sh, unsigned k, uint32_t index);

/* This process's counter row (of its first block). */
uint64_t *uroce_shared_row(struct uroce_shared *sh);

/*
 * The sockets in the device's directory: loop-B, block B's loopback
 * listener (dataplane/peer_loop.c), held with the block; cm-slot-N-0 and
 * cm-port-PS-PORT, the rdma_cm's (rdmacm_route.c), held with
 * uroce_shared_name_lock until unlocked or the process exits: 0, or
 * -EADDRINUSE if another process of the device holds the name.
 */
int uroce_shared_name_lock(struct uroce_shared *sh, const char *file);
void uroce_shared_name_unlock(struct uroce_shared *sh, const char *file);

/* Whether our locks are in the device's lock file still: false once `uroce
 * link del` removed it (and maybe `link add` made another, where our
 * blocks and names may be other programs'). */
bool uroce_shared_current(const struct uroce_shared *sh, const char *devdir);

/* Remove the socket files whose names nobody holds: left by programs that
 * were killed or never closed the device. */
void uroce_shared_sweep(const char *devdir);

/* Sum every row into out[UROCE_ROW_COUNTERS] (readers: uroce stat, hw_counters). */
int uroce_shared_totals(const char *devdir, uint64_t *out);
/* The same from rows a device user has mapped already (uroce_shared.rows). */
void uroce_shared_sum(const uint64_t *rows, uint64_t *out);

/* Name of counter `i` of a row (engine counters, then dataplane ones), or NULL. */
const char *uroce_row_counter_name(unsigned i);

/* How many processes use the device now (holders of QP number blocks). */
int uroce_shared_users(const char *devdir);

/*
 * Who holds what, for the device daemon, which holds nothing: the pid
 * holding block b (block 0: the housekeeper), 0 while nobody does; row 0
 * of the counters (block 0's, no program's) is the daemon's.
 */
struct uroce_shared_view {
	int lock_fd;
	const struct uroce_block_info *info;
	uint64_t *rows;
};
int uroce_shared_view_open(const char *devdir, struct uroce_shared_view *v);
void uroce_shared_view_close(struct uroce_shared_view *v);
int uroce_shared_holder(const struct uroce_shared_view *v, unsigned b);

/* Try to become the process that writes the hw_counters files. */
bool uroce_shared_try_writer(struct uroce_shared *sh);

/*
 * The hw_counters files (one per row counter, in `hwdir`, made at 0 by
 * `uroce link add`): write totals[i] into those whose value differs from
 * written[i], updating written[]; with written NULL, into all of them. The
 * caller holds the files lock and read `totals` inside it, so a file only
 * grows. Returns how many files could not be written.
 */
unsigned uroce_counter_files_write(const char *hwdir, const uint64_t *totals, uint64_t *written);
/* Bring every file of `hwdir` to the totals of the rows in `devdir` now
 * (uroce stat; whoever runs after a program was killed): 0 or -errno. */
int uroce_counter_files_sync(const char *devdir, const char *hwdir);

/* Serialise rewrites of the hw_counters files (held for one rewrite). */
int uroce_shared_files_lock(struct uroce_shared *sh);
void uroce_shared_files_unlock(struct uroce_shared *sh);

#endif
