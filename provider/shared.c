/* SPDX-License-Identifier: BSD-2-Clause */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dp_counters.h"
#include "shared.h"

static_assert(DP_CTR_COUNT <= UROCE_DP_COUNTERS, "room for the dataplane counters");

#define ROWS_BYTES ((size_t)UROCE_QPN_BLOCKS * UROCE_ROW_COUNTERS * sizeof(uint64_t))
#define WRITER_BYTE 0 /* byte 0 elects the hw_counters writer; byte b owns block b */

static int lock_byte(int fd, unsigned off)
{
	struct flock fl = {
		.l_type = F_WRLCK,
		.l_whence = SEEK_SET,
		.l_start = off,
		.l_len = 1,
	};

	/* OFD locks belong to the open file description, not the process:
	 * two contexts in one process claim distinct blocks too */
	return fcntl(fd, F_OFD_SETLK, &fl) ? -errno : 0;
}

static int map_rows(const char *devdir, int flags, uint64_t **rows)
{
	char path[PATH_MAX];
	int fd;
	void *p;

	if ((size_t)snprintf(path, sizeof(path), "%s/counters", devdir) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, flags | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if ((flags & O_CREAT) && ftruncate(fd, ROWS_BYTES)) {
		close(fd);
		return -errno;
	}
	p = mmap(NULL, ROWS_BYTES, (flags & O_RDWR) ? PROT_READ | PROT_WRITE : PROT_READ,
		 MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -errno;
	*rows = p;
	return 0;
}

int uroce_shared_open(const char *devdir, struct uroce_shared *sh)
{
	char path[PATH_MAX];
	int err;

	memset(sh, 0, sizeof(*sh));
	if ((size_t)snprintf(path, sizeof(path), "%s/lock", devdir) >= sizeof(path))
		return -ENAMETOOLONG;
	sh->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (sh->lock_fd < 0)
		return -errno;
	err = map_rows(devdir, O_RDWR | O_CREAT, &sh->rows);
	if (!err) {
		err = uroce_shared_claim_block(sh);
		if (err >= 0)
			return 0;
		munmap(sh->rows, ROWS_BYTES);
	}
	close(sh->lock_fd);
	return err;
}

void uroce_shared_close(struct uroce_shared *sh)
{
	if (sh->rows)
		munmap(sh->rows, ROWS_BYTES);
	if (sh->lock_fd >= 0)
		close(sh->lock_fd); /* drops every lock: our blocks are free again */
	memset(sh, 0, sizeof(*sh));
	sh->lock_fd = -1;
}

int uroce_shared_claim_block(struct uroce_shared *sh)
{
	/* start at a pid-dependent block so concurrent starters rarely collide */
	unsigned start = 1 + (unsigned)getpid() % (UROCE_QPN_BLOCKS - 1);

	if (sh->nblocks == UROCE_MAX_OWN_BLOCKS)
		return -ENOSPC;
	for (unsigned i = 0; i < UROCE_QPN_BLOCKS - 1; i++) {
		unsigned b = 1 + (start - 1 + i) % (UROCE_QPN_BLOCKS - 1);

		if (!lock_byte(sh->lock_fd, b)) {
			sh->blocks[sh->nblocks++] = b;
			return (int)b;
		}
	}
	return -ENOSPC;
}

uint64_t *uroce_shared_row(struct uroce_shared *sh)
{
	return sh->rows + (size_t)sh->blocks[0] * UROCE_ROW_COUNTERS;
}

bool uroce_shared_try_writer(struct uroce_shared *sh)
{
	if (!sh->writer)
		sh->writer = lock_byte(sh->lock_fd, WRITER_BYTE) == 0;
	return sh->writer;
}

int uroce_shared_totals(const char *devdir, uint64_t *out)
{
	uint64_t *rows;
	int err = map_rows(devdir, O_RDONLY, &rows);

	memset(out, 0, UROCE_ROW_COUNTERS * sizeof(*out));
	if (err)
		return err;
	for (size_t b = 0; b < UROCE_QPN_BLOCKS; b++)
		for (size_t c = 0; c < UROCE_ROW_COUNTERS; c++)
			out[c] += rows[b * UROCE_ROW_COUNTERS + c];
	munmap(rows, ROWS_BYTES);
	return 0;
}

const char *uroce_row_counter_name(unsigned i)
{
	if (i < UR_CTR_COUNT)
		return ur_counter_names[i];
	i -= UR_CTR_COUNT;
	return i < DP_CTR_COUNT ? uroce_dp_counter_names[i] : NULL;
}

int uroce_shared_users(const char *devdir)
{
	char path[PATH_MAX];
	int fd, n = 0;
	pid_t last = 0;

	if ((size_t)snprintf(path, sizeof(path), "%s/lock", devdir) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	/* count distinct lock holders; a process usually holds one block */
	for (unsigned b = 1; b < UROCE_QPN_BLOCKS; b++) {
		struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = b, .l_len = 1};

		if (fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK && fl.l_pid != last) {
			n++;
			last = fl.l_pid;
		}
	}
	close(fd);
	return n;
}
