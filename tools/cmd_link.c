/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `uroce link add|del|show` and `uroce env`: add a uroce device on top of a
 * network interface, as `rdma link add rxe0 type rxe netdev eth0` does for
 * Soft-RoCE, by writing what the stock libibverbs looks for when the kernel
 * has no RDMA: a sysfs tree under SYSFS_PATH and /dev/infiniband/uverbsN.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cc_spec.h"
#include "daemon_ctl.h"
#include "port_config.h"
#include "registry.h"
#include "shared.h"
#include "uroce.h"

#define CDEV_DIR "/dev/infiniband"
#define CDEV_TARGET "/dev/full" /* ioctls fail ENOTTY, stray commands ENOSPC */

static void link_usage(FILE *f)
{
	fprintf(f,
		"usage: uroce link add NAME netdev IFNAME [port PORT] [mtu N] [mode gbn|sr]\n"
		"                      [impair SPEC] [capture FILE] [cc SPEC] [rd_atom N] [daemon on|off]\n"
		"                      [pass_through on|off]\n"
		"       uroce link del NAME\n"
		"       uroce link show [NAME]\n"
		"\n"
		"Adds a uroce RDMA device on top of network interface IFNAME in this network\n"
		"namespace, using the interface's MAC and IP addresses as Soft-RoCE does.\n"
		"  port af_packet       packet sockets of uroce's own on IFNAME (default)\n"
		"  port af_xdp          DPDK net_af_xdp on IFNAME\n"
		"  port tap             DPDK net_tap (a new tap interface bridged by the user)\n"
		"  port memif:ARGS      memif (uroce's own), e.g. memif:role=server,socket=/run/m.sock\n"
		"  port pci:BDF         a NIC bound to vfio-pci, e.g. pci:0000:03:00.0\n"
		"  daemon on|off        run the device daemon uroced (default on): it keeps the\n"
		"                       device open (connection requests are answered, counters\n"
		"                       kept) and, for every port but af_packet, owns the port\n"
		"                       and switches its frames to every program on the device\n"
		"  pass_through on|off  memif: the daemon lends the wire to a program alone on\n"
		"                       the device, which then uses it directly (default on)\n"
		"  mtu N                cap the path MTU at N bytes (256..4096)\n"
		"  mode gbn|sr          retransmission: go-back-N, or selective repeat with uroce peers\n"
		"  rd_atom N            READs/atomics a QP holds as responder and issues as\n"
		"                       requester (max_qp_rd_atom, 1..128; default 16, as mlx5;\n"
		"                       Soft-RoCE offers 128)\n"
		"  cc SPEC              congestion control: dcqcn (default), np, none; nvidia or\n"
		"                       paper settings; line_rate=R (the interface's speed by\n"
		"                       default); mlx5 knobs, e.g. dcqcn,rpg_time_reset=55,rpg_ai_rate=40\n"
		"                       (UROCE_CC in a program's environment applies on top)\n"
		"Then run `eval \"$(uroce env)\"` and use any verbs program.\n");
}

/* snprintf for paths: truncation is an error, never a silently shorter path. */
static int pathf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int pathf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static bool valid_name(const char *n)
{
	size_t len = strlen(n);

	if (!len || len >= UROCE_NAME_MAX || !strncmp(n, "rxe", 3) || !strncmp(n, "siw", 3))
		return false;
	for (const char *p = n; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
			return false;
	return true;
}

static int write_file(const char *dir, const char *rel, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int write_file(const char *dir, const char *rel, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	FILE *f;

	pathf(path, sizeof(path), "%s/%s", dir, rel);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	return fclose(f) ? -errno : 0;
}

static int rm_tree(const char *path)
{
	struct stat st;
	DIR *d;
	struct dirent *de;

	if (lstat(path, &st))
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlink(path) ? -errno : 0;
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char sub[PATH_MAX];

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		pathf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		rm_tree(sub);
	}
	closedir(d);
	return rmdir(path) ? -errno : 0;
}

/* The interface's speed in Mb/s (veth says 10000), 0 when it does not say. */
static unsigned netdev_speed(const char *ifname)
{
	char path[PATH_MAX];
	long v = 0;
	FILE *f;

	if (pathf(path, sizeof(path), "/sys/class/net/%s/speed", ifname))
		return 0;
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%ld", &v) != 1 || v <= 0)
		v = 0;
	fclose(f);
	return (unsigned)v;
}

static int netdev_info(const char *ifname, uint8_t mac[6], unsigned *mtu)
{
	struct ifreq ifr = {0};
	int fd = socket(AF_INET, SOCK_DGRAM, 0), err = 0;

	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr))
		err = -errno;
	else
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	if (!err && ioctl(fd, SIOCGIFMTU, &ifr))
		err = -errno;
	else
		*mtu = (unsigned)ifr.ifr_mtu;
	close(fd);
	return err;
}

/*
 * The GID table Soft-RoCE shows: index 0 the link-local (default) GID,
 * then one RoCE v2 GID per address: IPv4-mapped, then the other IPv6.
 */
static void build_gids(struct uroce_devconf *c)
{
	struct ifaddrs *ifa, *i;
	uint8_t *g = c->gids[0].raw;

	/* default GID: fe80::EUI-64 of the MAC, replaced by the real link-local if any */
	memset(g, 0, 16);
	g[0] = 0xfe;
	g[1] = 0x80;
	g[8] = c->mac[0] ^ 2;
	g[9] = c->mac[1];
	g[10] = c->mac[2];
	g[11] = 0xff;
	g[12] = 0xfe;
	g[13] = c->mac[3];
	g[14] = c->mac[4];
	g[15] = c->mac[5];
	c->ngids = 1;
	if (getifaddrs(&ifa))
		return;
	for (i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || strcmp(i->ifa_name, c->netdev))
			continue;
		if (i->ifa_addr->sa_family == AF_INET6) {
			const uint8_t *a = ((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr.s6_addr;

			if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
				memcpy(c->gids[0].raw, a, 16);
		}
	}
	for (int pass = 0; pass < 2; pass++) {
		for (i = ifa; i && c->ngids < UROCE_MAX_GIDS; i = i->ifa_next) {
			uint8_t *d;

			if (!i->ifa_addr || strcmp(i->ifa_name, c->netdev))
				continue;
			d = c->gids[c->ngids].raw;
			if (pass == 0 && i->ifa_addr->sa_family == AF_INET) {
				memset(d, 0, 10);
				d[10] = d[11] = 0xff;
				memcpy(d + 12, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, 4);
				c->ngids++;
			} else if (pass == 1 && i->ifa_addr->sa_family == AF_INET6) {
				const uint8_t *a =
					((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr.s6_addr;

				if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
					continue;
				memcpy(d, a, 16);
				c->ngids++;
			}
		}
	}
	freeifaddrs(ifa);
}

static int alloc_uverbs(char *name, size_t len)
{
	if (make_dirs(CDEV_DIR))
		return -errno;
	for (int n = 0; n < 1024; n++) {
		char path[64];

		pathf(path, sizeof(path), CDEV_DIR "/uverbs%d", n);
		/* symlink() fails with EEXIST: allocation is race-free across namespaces */
		if (!symlink(CDEV_TARGET, path)) {
			snprintf(name, len, "uverbs%d", n);
			return 0;
		}
		if (errno != EEXIST)
			return -errno;
	}
	return -ENOSPC;
}

static int write_sysfs(const struct uroce_devconf *c, const char *sys)
{
	char dir[PATH_MAX], p[PATH_MAX], gid[48];
	uint8_t guid[8] = {c->mac[0] ^ 2, c->mac[1], c->mac[2], 0xff, 0xfe,
			   c->mac[3], c->mac[4], c->mac[5]};
	char guid_txt[32];
	unsigned ib_mtu = uroce_eth_to_ib_mtu(c->netdev_mtu);
	struct stat cdev = {0};
	int err = 0;

	if (stat(CDEV_TARGET, &cdev))
		return -errno;
	snprintf(guid_txt, sizeof(guid_txt), "%02x%02x:%02x%02x:%02x%02x:%02x%02x", guid[0],
		 guid[1], guid[2], guid[3], guid[4], guid[5], guid[6], guid[7]);
	pathf(dir, sizeof(dir), "%s/class/infiniband_verbs/%s", sys, c->uverbs);
	err |= make_dirs(dir);
	pathf(p, sizeof(p), "%s/class/infiniband_verbs", sys);
	err |= write_file(p, "abi_version", "6\n");
	err |= write_file(dir, "ibdev", "%s\n", c->name);
	/* the character device the uverbs node links to: libibverbs checks an
	 * opened node against it, and ibv_import_device() finds the device by it
	 * (then fails EOPNOTSUPP: there is no kernel context to import) */
	err |= write_file(dir, "dev", "%u:%u\n", major(cdev.st_rdev), minor(cdev.st_rdev));
	err |= write_file(dir, "abi_version", "1\n");

	pathf(dir, sizeof(dir), "%s/class/infiniband/%s", sys, c->name);
	pathf(p, sizeof(p), "%s/ports/1/gids", dir);
	err |= make_dirs(p);
	pathf(p, sizeof(p), "%s/ports/1/gid_attrs/types", dir);
	err |= make_dirs(p);
	pathf(p, sizeof(p), "%s/ports/1/gid_attrs/ndevs", dir);
	err |= make_dirs(p);
	pathf(p, sizeof(p), "%s/ports/1/pkeys", dir);
	err |= make_dirs(p);
	pathf(p, sizeof(p), "%s/ports/1/hw_counters", dir);
	err |= make_dirs(p);
	err |= write_file(dir, "node_type", "1: CA\n");
	err |= write_file(dir, "node_guid", "%s\n", guid_txt);
	err |= write_file(dir, "sys_image_guid", "%s\n", guid_txt);
	err |= write_file(dir, "fw_ver", "0.1.0\n");
	err |= write_file(dir, "board_id", "uroce-userspace\n");
	err |= write_file(dir, "hca_type", "uroce\n");
	err |= write_file(dir, "hw_rev", "0\n");
	err |= write_file(dir, "node_desc", "uroce %s on %s\n", c->name, c->netdev);
	err |= write_file(dir, "ports/1/state", "4: ACTIVE\n");
	err |= write_file(dir, "ports/1/phys_state", "5: LinkUp\n");
	err |= write_file(dir, "ports/1/link_layer", "Ethernet\n");
	err |= write_file(dir, "ports/1/rate", "40 Gb/sec (4X QDR)\n"); /* as query_port */
	err |= write_file(dir, "ports/1/lid", "0x0\n");
	err |= write_file(dir, "ports/1/sm_lid", "0x0\n");
	err |= write_file(dir, "ports/1/lid_mask_count", "0\n");
	err |= write_file(dir, "ports/1/sm_sl", "0\n");
	err |= write_file(dir, "ports/1/cap_mask", "0x00010000\n");
	err |= write_file(dir, "ports/1/pkeys/0", "0xffff\n");
	err |= write_file(dir, "ports/1/active_mtu", "%u\n", ib_mtu);
	/* every counter from the start, at 0, as mlx5 shows them */
	for (unsigned i = 0; uroce_row_counter_name(i); i++) {
		char rel[96];

		snprintf(rel, sizeof(rel), "ports/1/hw_counters/%s", uroce_row_counter_name(i));
		err |= write_file(dir, rel, "0\n");
	}
	for (unsigned i = 0; i < c->ngids; i++) {
		char rel[64];

		uroce_gid_format(c->gids[i].raw, gid, sizeof(gid));
		snprintf(rel, sizeof(rel), "ports/1/gids/%u", i);
		err |= write_file(dir, rel, "%s\n", gid);
		snprintf(rel, sizeof(rel), "ports/1/gid_attrs/types/%u", i);
		err |= write_file(dir, rel, "RoCE v2\n");
		snprintf(rel, sizeof(rel), "ports/1/gid_attrs/ndevs/%u", i);
		err |= write_file(dir, rel, "%s\n", c->netdev);
	}
	return err ? -EIO : 0;
}

/*
 * Keep the kernel from answering RoCE packets on the interface (ICMP port
 * unreachable): drop UDP 4791, and 4792 (selective-repeat negotiation), at
 * the interface's ingress hook. Packet sockets, which the dataplane uses,
 * see frames before that hook, and the kernel spends nothing more on them.
 */
static int nft_table(const char *name, const char *netdev, bool add)
{
	char cmd[512];

	if (add)
		snprintf(cmd, sizeof(cmd),
			 "nft -f - 2>/dev/null <<'EOF'\n"
			 "table netdev uroce_%s {\n"
			 "  chain ingress { type filter hook ingress device \"%s\" priority 0; policy accept;\n"
			 "    udp dport { 4791, 4792 } counter drop\n"
			 "  }\n"
			 "}\nEOF\n",
			 name, netdev);
	else
		snprintf(cmd, sizeof(cmd), "nft delete table netdev uroce_%s 2>/dev/null", name);
	return system(cmd) == 0 ? 0 : -EIO;
}

/* A directory with nothing in it but `keep` (NULL: nothing at all). */
static bool dir_holds_only(const char *path, const char *keep)
{
	DIR *d = opendir(path);
	struct dirent *de;
	bool only = true;

	if (!d)
		return false;
	while ((de = readdir(d)) && only)
		only = !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		       (keep && !strcmp(de->d_name, keep));
	closedir(d);
	return only;
}

/*
 * The namespace's run tree once its last device is gone: the directories
 * link add made (and infiniband_verbs' abi_version), so nothing is left.
 * rmdir() removes only what is empty: a device another link add is making
 * meanwhile keeps its directories.
 */
static void prune_ns_tree(const char *sys)
{
	char ns[PATH_MAX], p[PATH_MAX];

	pathf(p, sizeof(p), "%s/class/infiniband", sys);
	if (!dir_holds_only(p, NULL))
		return;
	rmdir(p);
	pathf(p, sizeof(p), "%s/class/infiniband_verbs", sys);
	if (dir_holds_only(p, "abi_version")) {
		pathf(ns, sizeof(ns), "%s/abi_version", p);
		unlink(ns);
		rmdir(p);
	}
	pathf(p, sizeof(p), "%s/class", sys);
	rmdir(p);
	rmdir(sys);
	if (uroce_ns_dir(ns, sizeof(ns)))
		return;
	pathf(p, sizeof(p), "%s/dev", ns);
	rmdir(p);
	rmdir(ns);
}

/*
 * Every program of the device trusts the files in its directory: each
 * directory from the run base down must be a directory of ours that
 * nobody else may write. (Under /dev/shm, anyone could have made the base
 * first and own the tree: another's loopback sockets or bells file.)
 */
static int dirs_ours(const char *dir)
{
	const char *base = uroce_run_base();
	size_t n = strlen(base);
	char buf[PATH_MAX];
	struct stat st;

	if (strncmp(dir, base, n) || snprintf(buf, sizeof(buf), "%s", dir) >= (int)sizeof(buf))
		return -EINVAL;
	for (char *p = buf + n;; p++) {
		char c = *p;

		if (c && c != '/')
			continue;
		*p = 0;
		if (lstat(buf, &st))
			return -errno;
		if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022)) {
			fprintf(stderr, "uroce link add: %s is %s (owner uid %u, mode %03o): not a directory only we may write; remove it, or set UROCE_RUN_DIR\n",
				buf, S_ISDIR(st.st_mode) ? "a directory" : "not a directory",
				(unsigned)st.st_uid, (unsigned)st.st_mode & 0777);
			return -EPERM;
		}
		if (!c)
			return 0;
		*p = c;
	}
}

static int link_del(const char *name, bool quiet)
{
	struct uroce_devconf c;
	char dir[PATH_MAX], sys[PATH_MAX], p[PATH_MAX];
	int err = uroce_devconf_load(name, &c);

	if (err) {
		if (!quiet)
			fprintf(stderr, "uroce link del: no device '%s' in this network namespace\n",
				name);
		return 1;
	}
	uroce_dev_dir(name, dir, sizeof(dir));
	uroced_stop(dir); /* programs still attached lose the wire, as on a NIC's removal */
	uroce_sysfs_dir(sys, sizeof(sys));
	pathf(p, sizeof(p), "%s/class/infiniband/%s", sys, name);
	rm_tree(p);
	pathf(p, sizeof(p), "%s/class/infiniband_verbs/%s", sys, c.uverbs);
	rm_tree(p);
	pathf(p, sizeof(p), CDEV_DIR "/%s", c.uverbs);
	unlink(p);
	nft_table(name, c.netdev, false);
	/* counters before their layout stamp: a program opening the device
	 * meanwhile finds neither or both, not "another version" */
	pathf(p, sizeof(p), "%s/counters", dir);
	unlink(p);
	rm_tree(dir);
	prune_ns_tree(sys);
	return 0;
}

/*
 * The run tree is keyed by the network namespace's inode number, which the
 * kernel hands out again once a namespace is gone: a device left by a
 * deleted namespace can then seem to exist in a new one. Its interface
 * tells: absent here, or here with another MAC address.
 */
static bool device_is_stale(const struct uroce_devconf *d)
{
	uint8_t mac[6];
	unsigned mtu;

	return !if_nametoindex(d->netdev) || netdev_info(d->netdev, mac, &mtu) ||
	       memcmp(mac, d->mac, 6) != 0;
}

/*
 * A PCI port needs the NIC there and bound to a driver DPDK's PMDs can use
 * (vfio-pci, or uio): refused here, at once and with the reason, rather
 * than by the daemon's switch failing to start five times.
 */
static int check_pci(const char *bdf)
{
	char path[PATH_MAX], drv[PATH_MAX + 16];
	/* sysfs names the domain; `pci:03:00.0` has none */
	const char *dom = strchr(bdf, ':') == strrchr(bdf, ':') ? "0000:" : "", *d;
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s%s", dom, bdf);
	if (access(path, F_OK)) {
		fprintf(stderr, "uroce link add: no PCI device %s (%s)\n", bdf, path);
		return 1;
	}
	snprintf(drv, sizeof(drv), "%s/driver", path);
	n = readlink(drv, path, sizeof(path) - 1);
	path[n > 0 ? n : 0] = 0;
	d = strrchr(path, '/') ? strrchr(path, '/') + 1 : "none";
	if (strcmp(d, "vfio-pci") && strcmp(d, "uio_pci_generic") && strcmp(d, "igb_uio")) {
		fprintf(stderr, "uroce link add: PCI device %s has driver %s, not vfio-pci "
			"(bind it: dpdk-devbind.py --bind=vfio-pci %s)\n", bdf, d, bdf);
		return 1;
	}
	return 0;
}

static int link_add(int argc, char **argv)
{
	struct uroce_devconf c = {0}, existing;
	char sys[PATH_MAX], dir[PATH_MAX];
	const char *name = argv[0];
	int daemon = -1; /* -1: as the port kind wants */
	uint64_t v;
	int err;

	if (!valid_name(name)) {
		fprintf(stderr, "uroce link add: bad device name '%s' (letters, digits, '-', '_'; not rxe*/siw*)\n",
			name);
		return 2;
	}
	uroce_dev_dir(name, dir, sizeof(dir));
	if (strlen(dir) > UROCE_DEVDIR_MAX) {
		fprintf(stderr, "uroce link add: the device's directory %s is %zu bytes, at most %d: the sockets there need room in a unix address (a shorter name, or UROCE_RUN_DIR)\n",
			dir, strlen(dir), UROCE_DEVDIR_MAX);
		return 2;
	}
	snprintf(c.name, sizeof(c.name), "%s", name);
	snprintf(c.port, sizeof(c.port), "af_packet");
	snprintf(c.mode, sizeof(c.mode), "gbn");
	for (int i = 1; i < argc; i += 2) {
		const char *k = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!val) {
			fprintf(stderr, "uroce link add: '%s' needs a value\n", k);
			return 2;
		}
		if (!strcmp(k, "netdev")) {
			snprintf(c.netdev, sizeof(c.netdev), "%s", val);
		} else if (!strcmp(k, "port")) {
			if (strcmp(val, "af_packet") && strcmp(val, "af_xdp") && strcmp(val, "tap") &&
			    strncmp(val, "memif:", 6) && strcmp(val, "memif") && strncmp(val, "pci:", 4)) {
				fprintf(stderr, "uroce link add: unknown port '%s'\n", val);
				return 2;
			}
			snprintf(c.port, sizeof(c.port), "%s", val);
		} else if (!strcmp(k, "mtu")) {
			if (!parse_u64(val, &v) || v < 256 || v > 4096 || (v & (v - 1))) {
				fprintf(stderr, "uroce link add: mtu must be 256, 512, 1024, 2048 or 4096\n");
				return 2;
			}
			c.max_mtu = (unsigned)v;
		} else if (!strcmp(k, "mode")) {
			if (strcmp(val, "gbn") && strcmp(val, "sr")) {
				fprintf(stderr, "uroce link add: mode must be gbn or sr\n");
				return 2;
			}
			snprintf(c.mode, sizeof(c.mode), "%s", val);
		} else if (!strcmp(k, "rd_atom")) {
			if (!parse_u64(val, &v) || v < 1 || v > UR_MAX_RD_ATOMIC) {
				fprintf(stderr, "uroce link add: rd_atom must be 1..%u\n",
					UR_MAX_RD_ATOMIC);
				return 2;
			}
			c.rd_atom = (unsigned)v;
		} else if (!strcmp(k, "daemon")) {
			if (strcmp(val, "on") && strcmp(val, "off")) {
				fprintf(stderr, "uroce link add: daemon must be on or off\n");
				return 2;
			}
			daemon = !strcmp(val, "on");
		} else if (!strcmp(k, "pass_through")) {
			if (strcmp(val, "on") && strcmp(val, "off")) {
				fprintf(stderr, "uroce link add: pass_through must be on or off\n");
				return 2;
			}
			c.no_pass_through = !strcmp(val, "off");
		} else if (!strcmp(k, "impair")) {
			snprintf(c.impair, sizeof(c.impair), "%s", val);
		} else if (!strcmp(k, "capture")) {
			snprintf(c.capture, sizeof(c.capture), "%s", val);
		} else if (!strcmp(k, "cc")) {
			struct ur_dev_config probe;
			char why[128];

			ur_dev_config_default(&probe);
			if (strlen(val) >= sizeof(c.cc) ||
			    ur_cc_spec_apply(&probe, val, why, sizeof(why))) {
				fprintf(stderr, "uroce link add: cc: %s\n",
					strlen(val) >= sizeof(c.cc) ? "too long" : why);
				return 2;
			}
			snprintf(c.cc, sizeof(c.cc), "%s", val);
		} else {
			fprintf(stderr, "uroce link add: unknown option '%s'\n", k);
			link_usage(stderr);
			return 2;
		}
	}
	if (!c.netdev[0]) {
		fprintf(stderr, "uroce link add: netdev IFNAME is required\n");
		return 2;
	}
	if (!if_nametoindex(c.netdev) || netdev_info(c.netdev, c.mac, &c.netdev_mtu)) {
		fprintf(stderr, "uroce link add: no network interface '%s' in this namespace\n",
			c.netdev);
		return 1;
	}
	if (!strncmp(c.port, "pci:", 4) && check_pci(c.port + 4))
		return 1;
	if (!c.max_mtu)
		c.max_mtu = 4096;
	c.speed_mbps = netdev_speed(c.netdev);
	if (geteuid()) {
		fprintf(stderr, "uroce link add: needs root (it writes /dev/infiniband and nftables rules)\n");
		return 1;
	}
	if (!uroce_devconf_load(name, &existing)) {
		if (!device_is_stale(&existing)) {
			fprintf(stderr, "uroce link add: device '%s' exists already\n", name);
			return 1;
		}
		fprintf(stderr, "uroce link add: replacing '%s', left by a namespace deleted without "
			"'uroce link del' (its interface is gone or has another address)\n", name);
		link_del(name, true);
	}
	c.daemon = daemon != 0;
	build_gids(&c);
	err = alloc_uverbs(c.uverbs, sizeof(c.uverbs));
	if (err) {
		fprintf(stderr, "uroce link add: cannot create %s/uverbsN: %s\n", CDEV_DIR,
			strerror(-err));
		return 1;
	}
	uroce_sysfs_dir(sys, sizeof(sys));
	/* a base that is not ours gets nothing made in it; one not there yet will be ours */
	err = dirs_ours(uroce_run_base());
	if (err == -ENOENT)
		err = 0;
	if (!err)
		err = make_dirs(dir); /* dir: the device's, computed (and its length checked) above */
	if (!err)
		err = dirs_ours(dir);
	if (!err)
		err = uroce_devconf_save(&c);
	if (!err)
		err = write_sysfs(&c, sys);
	if (!err && strncmp(c.port, "memif", 5) && nft_table(name, c.netdev, true))
		fprintf(stderr, "uroce link add: warning: could not add the nftables rule; the kernel may answer RoCE packets with ICMP\n");
	if (err) {
		fprintf(stderr, "uroce link add: cannot write the device files: %s\n", strerror(-err));
		link_del(name, true);
		return 1;
	}
	if (c.daemon) {
		err = uroced_start(name, dir, uroce_port_wants_daemon(c.port));
		if (err == -ENODEV) {
			fprintf(stderr, "uroce link add: %s's daemon cannot open port %s on %s:\n",
				name, c.port, c.netdev);
			uroced_port_errors(dir, stderr);
			link_del(name, true);
			return 1;
		}
		if (err == -ETIMEDOUT)
			fprintf(stderr, "uroce link add: %s's daemon is not up yet (its port waits for "
				"its peer?); programs wait for it. See %s/uroced.log\n", name, dir);
		else if (err) {
			fprintf(stderr, "uroce link add: cannot start %s's daemon: %s\n", name,
				strerror(-err));
			link_del(name, true);
			return 1;
		}
	}
	return 0;
}

static void show_one(const char *name, bool verbose)
{
	struct uroce_devconf c;
	char gid[48];

	if (uroce_devconf_load(name, &c))
		return;
	printf("link %s/1 state ACTIVE physical_state LINK_UP netdev %s\n", c.name, c.netdev);
	if (!verbose)
		return;
	printf("    port %s  mtu %u  active_mtu %u  mode %s  uverbs %s\n", c.port, c.max_mtu,
	       uroce_eth_to_ib_mtu(c.netdev_mtu), c.mode, c.uverbs);
	printf("    cc %s  speed %u Mb/s  rd_atom %u\n", c.cc[0] ? c.cc : "dcqcn (defaults)",
	       c.speed_mbps, c.rd_atom ? c.rd_atom : UR_DEFAULT_RD_ATOMIC);
	if (c.daemon) {
		char dir[PATH_MAX];
		int pid;

		uroce_dev_dir(name, dir, sizeof(dir));
		pid = uroced_pid(dir);
		if (pid)
			printf("    daemon uroced pid %d  log %s/uroced.log  switch %d  keeper %d\n", pid,
			       dir, uroced_child_pid(dir, "uroced.switch"),
			       uroced_child_pid(dir, "uroced.keeper"));
		else
			printf("    daemon NOT RUNNING: programs cannot reach the wire (see %s/uroced.log)\n",
			       dir);
	}
	for (unsigned i = 0; i < c.ngids; i++) {
		uroce_gid_format(c.gids[i].raw, gid, sizeof(gid));
		printf("    gid %u %s RoCE v2\n", i, gid);
	}
}

static int link_show(int argc, char **argv)
{
	char names[64][UROCE_NAME_MAX];
	int n;

	if (argc > 0) {
		struct uroce_devconf c;

		if (uroce_devconf_load(argv[0], &c)) {
			fprintf(stderr, "uroce link show: no device '%s' in this network namespace\n",
				argv[0]);
			return 1;
		}
		show_one(argv[0], true);
		return 0;
	}
	n = uroce_devconf_list(names, 64);
	for (int i = 0; i < n; i++)
		show_one(names[i], false);
	return 0;
}

int cmd_link(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "help") || !strcmp(argv[1], "--help")) {
		link_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "add") && argc >= 3)
		return link_add(argc - 2, argv + 2);
	if (!strcmp(argv[1], "del") && argc == 3)
		return link_del(argv[2], false);
	if (!strcmp(argv[1], "show"))
		return link_show(argc - 2, argv + 2);
	link_usage(stderr);
	return 2;
}
