/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Where uroce devices live. `uroce link add` writes, per network namespace,
 * a fake sysfs tree that the stock libibverbs scans (SYSFS_PATH) and one
 * configuration file per device that the provider reads when a program
 * opens it. Plain C: shared by the provider and the `uroce` tool.
 *
 *   /run/uroce/ns-<netns inode>/sys/class/infiniband_verbs/uverbsN/...
 *   /run/uroce/ns-<netns inode>/sys/class/infiniband/<dev>/...
 *   /run/uroce/ns-<netns inode>/dev/<dev>/config    key=value lines
 *   /run/uroce/ns-<netns inode>/dev/<dev>/counters  shared counters
 *   /dev/infiniband/uverbsN -> /dev/full
 */
#ifndef UROCE_REGISTRY_H
#define UROCE_REGISTRY_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UROCE_RUN_BASE "/run/uroce"
#define UROCE_RUN_SHM "/dev/shm/uroce" /* when /run is on disk */
#define UROCE_NAME_MAX 64
#define UROCE_MAX_GIDS 16

struct uroce_gid_entry {
	uint8_t raw[16];
};

struct uroce_devconf {
	char name[UROCE_NAME_MAX];   /* the ibdev name, e.g. uroce0 */
	char netdev[IF_NAMESIZE];
	char uverbs[16];             /* uverbsN */
	uint8_t mac[6];
	unsigned netdev_mtu;         /* the interface's MTU when added */
	unsigned max_mtu;            /* path MTU cap in bytes */
	char port[256];              /* af_packet | af_xdp | tap | memif:ARGS | pci:BDF */
	char mode[8];                /* gbn | sr */
	char impair[256];            /* loss injection spec, empty = none */
	char capture[256];           /* pcap file, empty = none */
	char cc[256];                /* congestion-control spec (transport/cc_spec.h), empty = defaults */
	unsigned speed_mbps;         /* the interface's speed when added, 0 = unknown */
	unsigned rd_atom;            /* max_qp_rd_atom and max_qp_init_rd_atom, 0 = the default */
	bool daemon;                 /* the port is the device daemon's; programs attach to it */
	bool no_pass_through;        /* the daemon never lends a lone program its memif wire */
	unsigned ngids;
	struct uroce_gid_entry gids[UROCE_MAX_GIDS];
};

/* Where uroce keeps its state: /run/uroce, or /dev/shm/uroce when /run is on disk. */
const char *uroce_run_base(void);

/* The run directory of the calling process's network namespace. */
int uroce_ns_dir(char *buf, size_t len);
/* Its sysfs tree (what SYSFS_PATH should be). */
int uroce_sysfs_dir(char *buf, size_t len);
/* The directory of one device. */
int uroce_dev_dir(const char *name, char *buf, size_t len);
/* Its longest length: the sockets there (loop-B, cm-port-PS-PORT, at most
 * 18 bytes with the slash) need room in a unix address's 108 bytes.
 * `uroce link add` refuses a device whose directory is longer. */
#define UROCE_DEVDIR_MAX 89

int uroce_devconf_load(const char *name, struct uroce_devconf *c);
int uroce_devconf_save(const struct uroce_devconf *c);
/* Fill `names` with up to `max` device names of this namespace; returns the count. */
int uroce_devconf_list(char names[][UROCE_NAME_MAX], int max);

/* The RoCE active MTU (bytes) for an Ethernet MTU, as Soft-RoCE computes it. */
unsigned uroce_eth_to_ib_mtu(unsigned eth_mtu);

/* GID text as the kernel writes it: eight groups of four hex digits. */
void uroce_gid_format(const uint8_t raw[16], char *buf, size_t len);
bool uroce_gid_parse(const char *text, uint8_t raw[16]);

#endif
