/* SPDX-License-Identifier: BSD-2-Clause */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <assert.h>
#include <dirent.h>
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
#define INFO_BYTES ((size_t)UROCE_QPN_BLOCKS * sizeof(struct uroce_block_info))
#define BELL_BYTES ((size_t)UROCE_QPN_BLOCKS * 64) /* UROCE_DP_BELL_BYTES each */
/* Lock file bytes: 0 elects the hw_counters writer; byte b owns block b;
 * one past the blocks serialises rewrites of the hw_counters files; the
 * bytes after it hold the names of the device's rdma_cm sockets. */
#define WRITER_BYTE 0
#define FILES_BYTE UROCE_QPN_BLOCKS
#define NAME_BYTES (FILES_BYTE + 1)

static int lock_byte(int fd, unsigned off, int cmd, short type)
{
	struct flock fl = {
		.l_type = type,
		.l_whence = SEEK_SET,
		.l_start = off,
		.l_len = 1,
	};

	/* OFD locks belong to the open file description, not the process:
	 * two contexts in one process claim distinct blocks too */
	return fcntl(fd, cmd, &fl) ? -errno : 0;
}

static int map_file(const char *devdir, const char *name, size_t bytes, int flags, void **out)
{
	char path[PATH_MAX];
	int fd;
	void *p;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", devdir, name) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, flags | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if ((flags & O_CREAT) && ftruncate(fd, (off_t)bytes)) {
		close(fd);
		return -errno;
	}
	/* a file smaller than ours would end in SIGBUS at the first touch past
	 * its end: its maker has not sized it yet (or, without a layout stamp
	 * to tell, another version of uroce made it) */
	if (!(flags & O_CREAT)) {
		struct stat st;

		if (fstat(fd, &st) || (uint64_t)st.st_size < bytes) {
			close(fd);
			return -EAGAIN;
		}
	}
	p = mmap(NULL, bytes, (flags & O_RDWR) ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED,
		 fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -errno;
	*out = p;
	return 0;
}

/*
 * What the shared files mean, as one line: their sizes and every row
 * counter's name in row order (FNV-1a). Programs of another version of
 * uroce would read another counter at the same place, or past a file's
 * end: a device's files carry the line of the version that made them
 * (`layout`), and a program or reader of another version is refused.
 */
static void layout_line(char *buf, size_t len)
{
	uint64_t h = 14695981039346656037ull;
	const char *name;
	char sizes[64];

	snprintf(sizes, sizeof(sizes), "%zu %zu %zu", ROWS_BYTES, INFO_BYTES, BELL_BYTES);
	for (unsigned i = 0; (name = uroce_row_counter_name(i)); i++)
		for (size_t k = 0; k <= strlen(name); k++) /* the NUL too: keeps names apart */
			h = (h ^ (uint8_t)name[k]) * 1099511628211ull;
	snprintf(buf, len, "uroce shared files %s %016llx\n", sizes, (unsigned long long)h);
}

/* What the device's `layout` says: 0 ours, -EPROTO another's, -ENOENT none. */
static int layout_read(const char *path, const char *ours)
{
	char theirs[128];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, theirs, sizeof(theirs) - 1);
	close(fd);
	theirs[n > 0 ? n : 0] = 0;
	return strcmp(ours, theirs) ? -EPROTO : 0;
}

/*
 * 0 when the device's files are of our layout, or have none yet (the stamp
 * made here when `create`, before any file it describes); -EPROTO when
 * another version made them (counters without a stamp: made before it).
 */
static int layout_check(const char *devdir, bool create)
{
	char path[PATH_MAX], tmp[PATH_MAX + 16], ours[128];
	int fd, err;

	layout_line(ours, sizeof(ours));
	if ((size_t)snprintf(path, sizeof(path), "%s/layout", devdir) >= sizeof(path))
		return -ENAMETOOLONG;
	err = layout_read(path, ours);
	if (err != -ENOENT)
		return err;
	snprintf(tmp, sizeof(tmp), "%s/counters", devdir);
	if (!access(tmp, F_OK)) {
		/* its maker linked the stamp before making it: look again */
		err = layout_read(path, ours);
		return err == -ENOENT ? -EPROTO : err;
	}
	if (!create)
		return 0;
	/* whole or not at all: written aside (a name of this call's own), then linked */
	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = fchmod(fd, 0644) || write(fd, ours, strlen(ours)) != (ssize_t)strlen(ours) ? -EIO : 0;
	close(fd);
	if (!err && link(tmp, path) && errno != EEXIST)
		err = -errno;
	unlink(tmp);
	return err ? err : layout_read(path, ours); /* another's, linked first, may differ */
}

static int map_rows(const char *devdir, int flags, uint64_t **rows)
{
	int err = layout_check(devdir, flags & O_CREAT);

	return err ? err : map_file(devdir, "counters", ROWS_BYTES, flags, (void **)rows);
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
	if (err)
		goto err_lock;
	err = map_file(devdir, "blocks", INFO_BYTES, O_RDWR | O_CREAT, (void **)&sh->info);
	if (err)
		goto err_rows;
	err = map_file(devdir, "bells", BELL_BYTES, O_RDWR | O_CREAT, &sh->bells);
	if (err)
		goto err_info;
	err = uroce_shared_claim_block(sh);
	if (err >= 0)
		return 0;
	munmap(sh->bells, BELL_BYTES);
err_info:
	munmap(sh->info, INFO_BYTES);
err_rows:
	munmap(sh->rows, ROWS_BYTES);
err_lock:
	close(sh->lock_fd);
	return err;
}

void uroce_shared_close(struct uroce_shared *sh)
{
	if (sh->bells)
		munmap(sh->bells, BELL_BYTES);
	if (sh->info)
		munmap(sh->info, INFO_BYTES);
	if (sh->rows)
		munmap(sh->rows, ROWS_BYTES);
	if (sh->lock_fd >= 0)
		close(sh->lock_fd); /* drops every lock: our blocks are free again */
	memset(sh, 0, sizeof(*sh));
	sh->lock_fd = -1;
}

static bool owns_block(const struct uroce_shared *sh, unsigned b)
{
	for (unsigned k = 0; k < sh->nblocks; k++)
		if (sh->blocks[k] == b)
			return true;
	return false;
}

int uroce_shared_claim_block(struct uroce_shared *sh)
{
	/* start at a pid-dependent block so concurrent starters rarely collide */
	unsigned start = 1 + (unsigned)getpid() % (UROCE_QPN_BLOCKS - 1);

	if (sh->nblocks == UROCE_MAX_OWN_BLOCKS)
		return -ENOSPC;
	for (unsigned i = 0; i < UROCE_QPN_BLOCKS - 1; i++) {
		unsigned b = 1 + (start - 1 + i) % (UROCE_QPN_BLOCKS - 1);

		/* our own lock on a block we hold is granted again: skip those */
		if (owns_block(sh, b))
			continue;
		if (!lock_byte(sh->lock_fd, b, F_OFD_SETLK, F_WRLCK)) {
			sh->blocks[sh->nblocks++] = b;
			sh->info[b].pid = (int32_t)getpid();
			return (int)b;
		}
	}
	return -ENOSPC;
}

uint32_t uroce_shared_next_index(const struct uroce_shared *sh, unsigned k)
{
	return sh->info[sh->blocks[k]].next % (1u << UROCE_QPN_BLOCK_BITS);
}

void uroce_shared_index_used(struct uroce_shared *sh, unsigned k, uint32_t index)
{
	/* only the block's owner writes here, and it holds the progress lock */
	sh->info[sh->blocks[k]].next = (index + 1) % (1u << UROCE_QPN_BLOCK_BITS);
}

uint64_t *uroce_shared_row(struct uroce_shared *sh)
{
	return sh->rows + (size_t)sh->blocks[0] * UROCE_ROW_COUNTERS;
}

bool uroce_shared_try_writer(struct uroce_shared *sh)
{
	if (!sh->writer) {
		sh->writer = lock_byte(sh->lock_fd, WRITER_BYTE, F_OFD_SETLK, F_WRLCK) == 0;
		/* block 0 is nobody's: its pid names the housekeeper, which takes
		 * QP 0 and 1 (the device daemon routes them by it) */
		if (sh->writer)
			sh->info[0].pid = (int32_t)getpid();
	}
	return sh->writer;
}

int uroce_shared_files_lock(struct uroce_shared *sh)
{
	int err;

	/* held only for one rewrite, so the wait is short */
	do
		err = lock_byte(sh->lock_fd, FILES_BYTE, F_OFD_SETLKW, F_WRLCK);
	while (err == -EINTR);
	return err;
}

void uroce_shared_files_unlock(struct uroce_shared *sh)
{
	lock_byte(sh->lock_fd, FILES_BYTE, F_OFD_SETLK, F_UNLCK);
}

/*
 * The lock file's byte that holds a socket's name in the device's
 * directory, or -1 if the file is none of them: block B's loopback
 * listener (loop-B) is held with block B; the CM's slots and ports
 * (rdmacm_route.c) with bytes of their own after FILES_BYTE.
 */
static long name_byte(const char *file)
{
	char canon[32];
	unsigned x, y;

	/* only the names we write (no "loop-07", "loop-+7") */
	if (sscanf(file, "loop-%u", &x) == 1 && x && x < UROCE_QPN_BLOCKS &&
	    snprintf(canon, sizeof(canon), "loop-%u", x) > 0 && !strcmp(canon, file))
		return (long)x;
	if (sscanf(file, "cm-slot-%u-0", &x) == 1 && x && x < 4096 &&
	    snprintf(canon, sizeof(canon), "cm-slot-%u-0", x) > 0 && !strcmp(canon, file))
		return NAME_BYTES + (long)x;
	if (sscanf(file, "cm-port-%u-%u", &x, &y) == 2 && x < 512 && y < 65536 &&
	    snprintf(canon, sizeof(canon), "cm-port-%u-%u", x, y) > 0 && !strcmp(canon, file))
		return NAME_BYTES + 4096 + (long)(x << 16 | y);
	return -1;
}

int uroce_shared_name_lock(struct uroce_shared *sh, const char *file)
{
	long b = name_byte(file);
	int err;

	if (b < (long)NAME_BYTES)
		return -EINVAL;
	err = lock_byte(sh->lock_fd, (unsigned)b, F_OFD_SETLK, F_WRLCK);
	return err == -EAGAIN || err == -EACCES ? -EADDRINUSE : err;
}

void uroce_shared_name_unlock(struct uroce_shared *sh, const char *file)
{
	long b = name_byte(file);

	if (b >= (long)NAME_BYTES)
		lock_byte(sh->lock_fd, (unsigned)b, F_OFD_SETLK, F_UNLCK);
}

bool uroce_shared_current(const struct uroce_shared *sh, const char *devdir)
{
	char path[PATH_MAX];
	struct stat mine, now;

	if ((size_t)snprintf(path, sizeof(path), "%s/lock", devdir) >= sizeof(path))
		return false;
	return !fstat(sh->lock_fd, &mine) && !stat(path, &now) && mine.st_dev == now.st_dev &&
	       mine.st_ino == now.st_ino;
}

void uroce_shared_sweep(const char *devdir)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/lock", devdir) >= sizeof(path))
		return;
	/* a description of its own, which this process's locks conflict with
	 * too: our own names are held, not swept */
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return;
	d = opendir(devdir);
	while (d && (de = readdir(d))) {
		long b = name_byte(de->d_name);

		/* held while we unlink: nobody binds the name meanwhile; a read
		 * lock, which uroce stat and the daemon (asking about write
		 * locks) do not take for a block's holder */
		if (b < 0 || lock_byte(fd, (unsigned)b, F_OFD_SETLK, F_RDLCK))
			continue;
		unlinkat(dirfd(d), de->d_name, 0);
		lock_byte(fd, (unsigned)b, F_OFD_SETLK, F_UNLCK);
	}
	if (d)
		closedir(d);
	close(fd);
}

void uroce_shared_sum(const uint64_t *rows, uint64_t *out)
{
	memset(out, 0, UROCE_ROW_COUNTERS * sizeof(*out));
	for (size_t b = 0; b < UROCE_QPN_BLOCKS; b++)
		for (size_t c = 0; c < UROCE_ROW_COUNTERS; c++)
			out[c] += rows[b * UROCE_ROW_COUNTERS + c];
}

int uroce_shared_totals(const char *devdir, uint64_t *out)
{
	uint64_t *rows;
	int err = map_rows(devdir, O_RDONLY, &rows);

	if (err) {
		memset(out, 0, UROCE_ROW_COUNTERS * sizeof(*out));
		return err;
	}
	uroce_shared_sum(rows, out);
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

/* Remember pid as a user unless already counted. */
static void add_user(int32_t *pids, int *n, int32_t pid)
{
	for (int k = 0; k < *n; k++)
		if (pids[k] == pid)
			return;
	pids[(*n)++] = pid;
}

/* The device daemon's keeper (tools/uroced.c) holds the device, but is not a program. */
static int32_t keeper_pid(const char *devdir)
{
	char path[PATH_MAX], comm[32];
	int pid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/uroced.keeper", devdir);
	f = fopen(path, "re");
	if (f) {
		if (fscanf(f, "%d", &pid) != 1)
			pid = 0;
		fclose(f);
	}
	/* only while it runs: a pid reused by a program counts as the program */
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	f = pid > 0 ? fopen(path, "re") : NULL;
	if (!f)
		return 0;
	if (!fgets(comm, sizeof(comm), f) || strncmp(comm, "uroce-keeper", 12))
		pid = 0;
	fclose(f);
	return pid;
}

int uroce_shared_users(const char *devdir)
{
	char path[PATH_MAX];
	struct uroce_block_info *info;
	int32_t pids[UROCE_QPN_BLOCKS];
	off_t todo[UROCE_QPN_BLOCKS + 1][2]; /* ranges left: at most one more than locks found */
	int fd, n = 0, ntodo = 0, err;
	int32_t keeper;

	if ((size_t)snprintf(path, sizeof(path), "%s/lock", devdir) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	err = map_file(devdir, "blocks", INFO_BYTES, O_RDONLY, (void **)&info);
	if (err) {
		close(fd);
		return err == -ENOENT || err == -EAGAIN ? 0 : err;
	}
	/*
	 * Find the held block locks: F_OFD_GETLK names *a* lock in the range
	 * that would conflict with ours (we hold none, so any), not the lowest
	 * one, so each answer splits its range in two left to search. OFD
	 * locks do not name their holder: the pid comes from the block's record.
	 */
	todo[ntodo][0] = 1;
	todo[ntodo++][1] = UROCE_QPN_BLOCKS;
	while (ntodo) {
		off_t lo = todo[ntodo - 1][0], hi = todo[ntodo - 1][1], end;
		/* a read lock's question: only write locks (holders) answer,
		 * not a sweep's read locks */
		struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = lo,
				   .l_len = hi - lo};

		ntodo--;
		if (lo >= hi || fcntl(fd, F_OFD_GETLK, &fl) || fl.l_type == F_UNLCK)
			continue;
		end = fl.l_len ? fl.l_start + fl.l_len : hi;
		for (off_t b = fl.l_start < lo ? lo : fl.l_start; b < end && b < hi; b++)
			add_user(pids, &n, info[b].pid);
		if (ntodo + 2 > (int)(sizeof(todo) / sizeof(todo[0])))
			break;
		todo[ntodo][0] = lo;
		todo[ntodo++][1] = fl.l_start;
		todo[ntodo][0] = end;
		todo[ntodo++][1] = hi;
	}
	munmap(info, INFO_BYTES);
	close(fd);
	keeper = keeper_pid(devdir);
	for (int k = 0; k < n; k++)
		if (keeper && pids[k] == keeper)
			return n - 1;
	return n;
}

unsigned uroce_counter_files_write(const char *hwdir, const uint64_t *totals, uint64_t *written)
{
	char path[PATH_MAX], num[24];
	unsigned failed = 0;

	for (unsigned i = 0; uroce_row_counter_name(i); i++) {
		int fd, len;

		if (written && totals[i] == written[i])
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", hwdir,
				     uroce_row_counter_name(i)) >= sizeof(path))
			return failed + 1;
		fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0) {
			failed++;
			continue;
		}
		/* counters only grow, so a longer number written over a shorter
		 * one is never seen half old, half new */
		len = snprintf(num, sizeof(num), "%llu\n", (unsigned long long)totals[i]);
		if (pwrite(fd, num, (size_t)len, 0) != len) {
			failed++;
		} else {
			/* a reset counter, or a file that held more than we know */
			if ((!written || totals[i] < written[i]) && ftruncate(fd, len))
				failed++;
			if (written)
				written[i] = totals[i];
		}
		close(fd);
	}
	return failed;
}

int uroce_counter_files_sync(const char *devdir, const char *hwdir)
{
	uint64_t totals[UROCE_ROW_COUNTERS];
	struct uroce_shared sh = {.lock_fd = -1};
	char path[PATH_MAX];
	unsigned failed;
	int err;

	if ((size_t)snprintf(path, sizeof(path), "%s/lock", devdir) >= sizeof(path))
		return -ENAMETOOLONG;
	sh.lock_fd = open(path, O_RDWR | O_CLOEXEC);
	if (sh.lock_fd < 0)
		return errno == ENOENT ? 0 : -errno; /* never opened: the files hold 0 */
	err = uroce_shared_files_lock(&sh);
	if (!err) {
		err = uroce_shared_totals(devdir, totals);
		if (!err) {
			failed = uroce_counter_files_write(hwdir, totals, NULL);
			err = failed ? -EIO : 0;
		} else if (err == -ENOENT || err == -EAGAIN) {
			err = 0;
		}
		uroce_shared_files_unlock(&sh);
	}
	close(sh.lock_fd);
	return err;
}

int uroce_shared_view_open(const char *devdir, struct uroce_shared_view *v)
{
	char path[PATH_MAX];
	int err;

	memset(v, 0, sizeof(*v));
	if ((size_t)snprintf(path, sizeof(path), "%s/lock", devdir) >= sizeof(path))
		return -ENAMETOOLONG;
	v->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (v->lock_fd < 0)
		return -errno;
	/* the stamp first: another version's files are not resized under it */
	err = map_rows(devdir, O_RDWR | O_CREAT, &v->rows);
	if (!err)
		err = map_file(devdir, "blocks", INFO_BYTES, O_RDWR | O_CREAT, (void **)&v->info);
	if (err)
		uroce_shared_view_close(v);
	return err;
}

void uroce_shared_view_close(struct uroce_shared_view *v)
{
	if (v->rows)
		munmap(v->rows, ROWS_BYTES);
	if (v->info)
		munmap((void *)v->info, INFO_BYTES);
	if (v->lock_fd >= 0)
		close(v->lock_fd);
	memset(v, 0, sizeof(*v));
	v->lock_fd = -1;
}

int uroce_shared_holder(const struct uroce_shared_view *v, unsigned b)
{
	/* asked as a read lock: only a holder's write lock answers */
	struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = b, .l_len = 1};

	/* byte 0 is the housekeeper's (WRITER_BYTE), byte b block b's; the
	 * record's pid counts only while its lock is held */
	if (b >= UROCE_QPN_BLOCKS || fcntl(v->lock_fd, F_OFD_GETLK, &fl) || fl.l_type == F_UNLCK)
		return 0;
	return v->info[b].pid;
}

