/* SPDX-License-Identifier: BSD-2-Clause */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "config.h"
#include "registry.h"

/*
 * /run/uroce, where /run is a memory file system as on most systems; else
 * /dev/shm/uroce: counters are rewritten while programs run, and on a disk
 * file system every rewrite can stall for tens of milliseconds.
 * UROCE_RUN_DIR overrides both (config.c reads it).
 */
static const char *run_base(void)
{
	static const char *base;
	const char *b = uroce_process_config()->run_dir;
	struct statfs sf;

	if (*b)
		return b;
	if (!base)
		base = !statfs("/run", &sf) && (sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC)
			       ? UROCE_RUN_BASE
			       : UROCE_RUN_SHM;
	return base;
}

const char *uroce_run_base(void)
{
	return run_base();
}

int uroce_ns_dir(char *buf, size_t len)
{
	struct stat st;

	if (stat("/proc/self/ns/net", &st))
		return -errno;
	if ((size_t)snprintf(buf, len, "%s/ns-%lu", run_base(), (unsigned long)st.st_ino) >= len)
		return -ENAMETOOLONG;
	return 0;
}

int uroce_sysfs_dir(char *buf, size_t len)
{
	char ns[512];
	int err = uroce_ns_dir(ns, sizeof(ns));

	if (err)
		return err;
	return (size_t)snprintf(buf, len, "%s/sys", ns) >= len ? -ENAMETOOLONG : 0;
}

int uroce_dev_dir(const char *name, char *buf, size_t len)
{
	char ns[512];
	int err = uroce_ns_dir(ns, sizeof(ns));

	if (err)
		return err;
	return (size_t)snprintf(buf, len, "%s/dev/%s", ns, name) >= len ? -ENAMETOOLONG : 0;
}

void uroce_gid_format(const uint8_t raw[16], char *buf, size_t len)
{
	snprintf(buf, len, "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
		 raw[0], raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7], raw[8], raw[9],
		 raw[10], raw[11], raw[12], raw[13], raw[14], raw[15]);
}

bool uroce_gid_parse(const char *text, uint8_t raw[16])
{
	unsigned v[8];

	if (sscanf(text, "%4x:%4x:%4x:%4x:%4x:%4x:%4x:%4x", &v[0], &v[1], &v[2], &v[3], &v[4],
		   &v[5], &v[6], &v[7]) != 8)
		return false;
	for (int i = 0; i < 8; i++) {
		raw[2 * i] = (uint8_t)(v[i] >> 8);
		raw[2 * i + 1] = (uint8_t)v[i];
	}
	return true;
}

unsigned uroce_eth_to_ib_mtu(unsigned eth_mtu)
{
	/* leave room for IP, UDP, BTH, the largest extension header and ICRC */
	unsigned room = eth_mtu > 80 ? eth_mtu - 80 : 0;
	unsigned mtu = 0;

	for (unsigned m = 256; m <= 4096; m *= 2)
		if (m <= room)
			mtu = m;
	return mtu;
}

static void put_mac(FILE *f, const char *key, const uint8_t m[6])
{
	fprintf(f, "%s=%02x:%02x:%02x:%02x:%02x:%02x\n", key, m[0], m[1], m[2], m[3], m[4], m[5]);
}

int uroce_devconf_save(const struct uroce_devconf *c)
{
	char dir[600], path[700], tmp[720], gid[48];
	FILE *f;
	int err;

	err = uroce_dev_dir(c->name, dir, sizeof(dir));
	if (err)
		return err;
	snprintf(path, sizeof(path), "%s/config", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fprintf(f, "name=%s\nnetdev=%s\nuverbs=%s\n", c->name, c->netdev, c->uverbs);
	put_mac(f, "mac", c->mac);
	fprintf(f, "netdev_mtu=%u\nmax_mtu=%u\nport=%s\nmode=%s\nimpair=%s\ncapture=%s\n",
		c->netdev_mtu, c->max_mtu, c->port, c->mode, c->impair, c->capture);
	fprintf(f, "cc=%s\nspeed_mbps=%u\nrd_atom=%u\ndaemon=%d\npass_through=%d\n", c->cc,
		c->speed_mbps, c->rd_atom, c->daemon, !c->no_pass_through);
	for (unsigned i = 0; i < c->ngids; i++) {
		uroce_gid_format(c->gids[i].raw, gid, sizeof(gid));
		fprintf(f, "gid=%s\n", gid);
	}
	if (fclose(f))
		return -errno;
	/* rename: a program opening the device sees the old or the new file, whole */
	return rename(tmp, path) ? -errno : 0;
}

static void copy_value(char *dst, size_t len, const char *v)
{
	snprintf(dst, len, "%s", v);
}

int uroce_devconf_load(const char *name, struct uroce_devconf *c)
{
	char dir[600], path[700], line[512];
	FILE *f;
	int err = uroce_dev_dir(name, dir, sizeof(dir));

	if (err)
		return err;
	snprintf(path, sizeof(path), "%s/config", dir);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	memset(c, 0, sizeof(*c));
	while (fgets(line, sizeof(line), f)) {
		char *eq = strchr(line, '='), *v;

		line[strcspn(line, "\n")] = 0;
		if (!eq)
			continue;
		*eq = 0;
		v = eq + 1;
		if (!strcmp(line, "name"))
			copy_value(c->name, sizeof(c->name), v);
		else if (!strcmp(line, "netdev"))
			copy_value(c->netdev, sizeof(c->netdev), v);
		else if (!strcmp(line, "uverbs"))
			copy_value(c->uverbs, sizeof(c->uverbs), v);
		else if (!strcmp(line, "mac"))
			sscanf(v, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &c->mac[0], &c->mac[1], &c->mac[2],
			       &c->mac[3], &c->mac[4], &c->mac[5]);
		else if (!strcmp(line, "netdev_mtu"))
			c->netdev_mtu = (unsigned)strtoul(v, NULL, 10);
		else if (!strcmp(line, "max_mtu"))
			c->max_mtu = (unsigned)strtoul(v, NULL, 10);
		else if (!strcmp(line, "port"))
			copy_value(c->port, sizeof(c->port), v);
		else if (!strcmp(line, "mode"))
			copy_value(c->mode, sizeof(c->mode), v);
		else if (!strcmp(line, "impair"))
			copy_value(c->impair, sizeof(c->impair), v);
		else if (!strcmp(line, "capture"))
			copy_value(c->capture, sizeof(c->capture), v);
		else if (!strcmp(line, "cc"))
			copy_value(c->cc, sizeof(c->cc), v);
		else if (!strcmp(line, "speed_mbps"))
			c->speed_mbps = (unsigned)strtoul(v, NULL, 10);
		else if (!strcmp(line, "rd_atom"))
			c->rd_atom = (unsigned)strtoul(v, NULL, 10);
		else if (!strcmp(line, "daemon"))
			c->daemon = strtoul(v, NULL, 10) != 0;
		else if (!strcmp(line, "pass_through"))
			c->no_pass_through = strtoul(v, NULL, 10) == 0;
		else if (!strcmp(line, "gid") && c->ngids < UROCE_MAX_GIDS &&
			 uroce_gid_parse(v, c->gids[c->ngids].raw))
			c->ngids++;
	}
	fclose(f);
	return c->name[0] ? 0 : -EINVAL;
}

int uroce_devconf_list(char names[][UROCE_NAME_MAX], int max)
{
	char ns[512], dir[600];
	struct dirent *de;
	DIR *d;
	int n = 0;

	if (uroce_ns_dir(ns, sizeof(ns)))
		return 0;
	snprintf(dir, sizeof(dir), "%s/dev", ns);
	d = opendir(dir);
	if (!d)
		return 0;
	while ((de = readdir(d)) && n < max) {
		if (de->d_name[0] == '.' || strlen(de->d_name) >= UROCE_NAME_MAX)
			continue;
		memcpy(names[n++], de->d_name, strlen(de->d_name) + 1);
	}
	closedir(d);
	/* stable order for `uroce link show` */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
			char t[UROCE_NAME_MAX];

			memcpy(t, names[j], sizeof(t));
			memcpy(names[j], names[j - 1], sizeof(t));
			memcpy(names[j - 1], t, sizeof(t));
		}
	return n;
}
