/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One port per opened device: af_packet on the interface by default, on
 * packet sockets of our own (afp_rx.c, afp_tx.c), memif by configuration,
 * also our own (memif_ctl.c, memif_ring.c), or a DPDK port: af_xdp, tap or
 * a PCI NIC. Frames for the engine are handed up by pointer, from the
 * af_packet ring, the memif buffer or an mbuf; frames from the engine are
 * written straight into memif's buffers or into mbufs, and sent in bursts.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/if_packet.h>
#include <linux/if_xdp.h>

#include <rte_bus_vdev.h>
#include <rte_dev.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "dp_internal.h"
#include "netem.h"
#include "rx_wait.h"
#include "steer_bpf.h"
#include "udp_gso.h"

#define POOL_MBUFS 4095
#define RING_DESC 1024
#define MAX_FDS 4096


void dp_log(struct uroce_dp *dp, const char *fmt, ...)
{
	char line[256];
	va_list ap;

	if (!dp->cfg.log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	dp->cfg.log(dp->cfg.log_arg, line);
}

static void fd_snapshot(unsigned char *map)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	memset(map, 0, MAX_FDS);
	while (d && (e = readdir(d))) {
		int fd = atoi(e->d_name);

		/* not the listing's own fd: the next socket may get its number
		 * (AF_XDP's did, and was never found) */
		if (e->d_name[0] != '.' && fd >= 0 && fd < MAX_FDS && fd != dirfd(d))
			map[fd] = 1;
	}
	if (d)
		closedir(d);
}

/*
 * The socket the af_xdp PMD opened, found as the one new AF_XDP fd: DPDK
 * does not expose it, and it is what lets the progress thread sleep until a
 * frame arrives instead of spinning.
 */
static int find_new_socket(const unsigned char *before, int domain)
{
	unsigned char after[MAX_FDS];
	int found = -1;

	fd_snapshot(after);
	for (int fd = 0; fd < MAX_FDS; fd++) {
		int dom = 0;
		socklen_t l = sizeof(dom);

		if (after[fd] && !before[fd] &&
		    !getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &l) && dom == domain)
			found = fd;
	}
	return found;
}

/*
 * The tap PMD's queue: a /dev/net/tun fd opened since the snapshot (its
 * keep-alive fd, opened with the vdev, is older). Readable when the
 * kernel side sent a frame, it lets the switch sleep as on AF_XDP.
 */
static int find_new_tun(const unsigned char *before)
{
	unsigned char after[MAX_FDS];
	int found = -1;

	fd_snapshot(after);
	for (int fd = 0; fd < MAX_FDS; fd++) {
		char link[64], target[32];
		ssize_t n;

		if (!after[fd] || before[fd])
			continue;
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		n = readlink(link, target, sizeof(target) - 1);
		if (n > 0 && (target[n] = 0, !strcmp(target, "/dev/net/tun")))
			found = fd;
	}
	return found;
}

/* Frame buffer large enough for anything the interface can deliver. */
static uint32_t frame_room(unsigned eth_mtu)
{
	uint32_t need = (eth_mtu ? eth_mtu : 1500) + 14 + 4 + 64;

	return need < 2048 ? 2048 : (need + 1023) & ~1023u;
}

/*
 * af_packet's ring slot and mbuf: UROCE_DP_ROCE_FRAME_ROOM. A longer
 * frame - never RoCE, and with steering on never delivered at all - is
 * truncated into the slot by the kernel (tp_snaplen), and handed up as
 * truncated (the engine counts it as such); an mbuf of the slot's size
 * holds any frame that needs copying (injected receive faults). Half the
 * MTU 9000 slot: twice the frames in the same ring memory, which is what a
 * receiver starved of CPU while several processes share two cores needs
 * (see docs/multi-process.md).
 */
#define AFP_FRAMECNT 4096u

/*
 * af_xdp's PMD hands the mbuf pool to the kernel as the socket's UMEM, one
 * chunk per mbuf, and a chunk must fit in a page (4096 bytes; larger only
 * on hugepages): pool header (64) + mbuf (128) + headroom (128) + room,
 * and the mempool pads an object to an odd number of cache lines, so 63
 * lines, 4032 bytes, is the most. The kernel puts 256 bytes of XDP
 * headroom in front of the frame, which leaves 3456 bytes of frame: a
 * RoCE frame at path MTU 2048 (about 2.1 KB), never one at 4096. With a
 * room of 4096 (any MTU above 2990) the socket failed ("Failed to create
 * umem") and the port never came up.
 */
#define XDP_ROOM 3712u

static uint32_t port_room(const struct uroce_dp_config *cfg)
{
	uint32_t room = frame_room(cfg->eth_mtu), bsize;

	if (!strcmp(cfg->port, "af_packet") && room > UROCE_DP_ROCE_FRAME_ROOM)
		room = UROCE_DP_ROCE_FRAME_ROOM;
	if (!strcmp(cfg->port, "af_xdp") && room > XDP_ROOM)
		room = XDP_ROOM;
	/* a memif port whose buffers are named smaller but hold any RoCE frame
	 * (a program through its device daemon): frames are built in them.
	 * Smaller ones than that leave the room as it is: frames then go to
	 * the ring in pieces */
	bsize = strncmp(cfg->port, "memif:", 6) ? 0 : dp_memif_args_bsize(cfg->port + 6);
	if (bsize >= UROCE_DP_ROCE_FRAME_ROOM && bsize < room)
		room = bsize;
	return room;
}

static int make_vdev(struct uroce_dp *dp, const struct uroce_dp_config *cfg, char *args,
		     size_t len)
{
	static unsigned seq;
	const char *port = cfg->port;

	if (!strcmp(port, "af_xdp")) {
		snprintf(dp->vdev_name, sizeof(dp->vdev_name), "net_af_xdp_ur%d_%u",
			 (int)getpid(), seq++);
		snprintf(args, len, "iface=%s,start_queue=0,queue_count=1", cfg->netdev);
	} else if (!strcmp(port, "tap")) {
		snprintf(dp->vdev_name, sizeof(dp->vdev_name), "net_tap_ur%d_%u", (int)getpid(),
			 seq++);
		/* the device's MAC, which is the interface's: the PMD would give
		 * the interface a random one, and the device would seem stale */
		snprintf(args, len, "iface=%s,mac=%02x:%02x:%02x:%02x:%02x:%02x", cfg->netdev,
			 cfg->mac[0], cfg->mac[1], cfg->mac[2], cfg->mac[3], cfg->mac[4],
			 cfg->mac[5]);
	} else {
		return -EINVAL;
	}
	return 0;
}

/*
 * Mbuf pools outlive their port. DPDK zero-fills the memory it frees, and
 * for a pool that is about a quarter of the CPU a program spends opening
 * and closing a device - which counts when many short programs share a
 * small machine. A closed port's pool waits here for the next open in this
 * process (EAL's memory lives until exit anyway).
 */
#define SPARE_POOLS 4
static pthread_mutex_t spare_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rte_mempool *spare[SPARE_POOLS];

static struct rte_mempool *pool_get(uint32_t data_room)
{
	static unsigned pool_seq;
	struct rte_mempool *p = NULL;
	char name[64];

	pthread_mutex_lock(&spare_lock);
	for (unsigned i = 0; i < SPARE_POOLS && !p; i++) {
		if (spare[i] && rte_pktmbuf_data_room_size(spare[i]) ==
				       data_room + RTE_PKTMBUF_HEADROOM) {
			p = spare[i];
			spare[i] = NULL;
		}
	}
	snprintf(name, sizeof(name), "ur%d_%u", (int)getpid(), pool_seq++);
	pthread_mutex_unlock(&spare_lock);
	if (!p)
		p = rte_pktmbuf_pool_create(name, POOL_MBUFS, 64, 0,
					    (uint16_t)(data_room + RTE_PKTMBUF_HEADROOM),
					    SOCKET_ID_ANY);
	return p;
}

static void pool_put(struct rte_mempool *p)
{
	pthread_mutex_lock(&spare_lock);
	/* only a pool with every mbuf back: nothing may still point into it */
	for (unsigned i = 0; i < SPARE_POOLS && p; i++) {
		if (!spare[i] && rte_mempool_full(p)) {
			spare[i] = p;
			p = NULL;
		}
	}
	pthread_mutex_unlock(&spare_lock);
	if (p)
		rte_mempool_free(p);
}

/* The port's frame buffers go: DPDK's pool to the spares, or our own. */
static void frames_put(struct uroce_dp *dp)
{
	if (dp->pool)
		pool_put(dp->pool);
	dp_frames_fini(&dp->frames);
}

/* Stop and remove a DPDK port, started or not. */
static void close_dpdk_port(struct uroce_dp *dp)
{
	struct rte_eth_dev_info info;

	if (rte_eth_dev_info_get(dp->port_id, &info))
		info.device = NULL;
	rte_eth_dev_stop(dp->port_id);
	rte_eth_dev_close(dp->port_id);
	if (dp->vdev_name[0])
		rte_vdev_uninit(dp->vdev_name);
	else if (dp->pci_name[0] && info.device)
		rte_dev_remove(info.device);
}

static void close_port(struct uroce_dp *dp)
{
	switch (dp->kind) {
	case DP_PORT_AFP:
		dp_afp_ring_close(&dp->afp);
		dp_afp_tx_close(&dp->afp_tx);
		break;
	case DP_PORT_MEMIF:
		dp_memif_close(&dp->memif);
		break;
	case DP_PORT_DPDK:
		close_dpdk_port(dp);
		break;
	}
}

/*
 * af_packet: a socket and ring of our own to receive on (afp_rx.c: no
 * fanout group) and a socket to transmit on (afp_tx.c: a TX ring of two
 * flushes, not one the size of the RX ring), not DPDK's PMD.
 */
static int open_afp_port(struct uroce_dp *dp)
{
	struct sock_filter insn[DP_STEER_MAX_INSNS];
	struct sock_fprog none_yet = {.filter = insn};
	int err, len;

	/* A program on a shared device holds no QP number yet: until it does,
	 * the frames on the wire are other programs', and copying them into
	 * this ring (as a busy device's would fill it in milliseconds) costs
	 * the kernel's CPU and counts as ring drops (steer.c widens it). */
	if (dp->cfg.steered) {
		len = dp_steer_build(insn, DP_STEER_MAX_INSNS, NULL, 0, dp->block_shift);
		if (len < 0)
			return len;
		none_yet.len = (unsigned short)len;
	}
	err = dp_afp_ring_open(&dp->afp, dp->cfg.netdev, dp->data_room, AFP_FRAMECNT,
			       dp->cfg.steered ? &none_yet : NULL);
	if (err)
		return err;
	err = dp_afp_tx_open(&dp->afp_tx, dp->cfg.netdev, dp->data_room, !dp->cfg.no_gso);
	if (err) {
		dp_afp_ring_close(&dp->afp);
		return err;
	}
	dp->wait_fd = dp->afp.fd;
	return 0;
}

/*
 * memif ("memif:role=server|client,id=N,socket=PATH"): our own end of the
 * link (memif_ctl.c), not DPDK's PMD. A client waits up to 10 s for its server
 * (the peer program may start later, or a predecessor still be connected):
 * a NIC's port is up when the application opens it, and datagrams posted
 * before the link came up would be lost.
 */
static int open_memif_port(struct uroce_dp *dp)
{
	const char *args = dp->cfg.port[5] == ':' ? dp->cfg.port + 6 : "";

	return dp_memif_open(&dp->memif, args, dp->data_room, 10000, dp->cfg.log,
			     dp->cfg.log_arg);
}

/* Any other port: a DPDK port, a vdev (af_xdp, tap) or a PCI NIC. */
static int open_dpdk_port(struct uroce_dp *dp, const struct uroce_dp_config *cfg)
{
	unsigned char before[MAX_FDS];
	struct rte_eth_conf conf;
	struct rte_eth_dev_info info;
	char args[512];
	bool pci = !strncmp(cfg->port, "pci:", 4);
	int err;

	fd_snapshot(before);
	if (pci) {
		snprintf(dp->pci_name, sizeof(dp->pci_name), "%s", cfg->port + 4);
		err = rte_dev_probe(dp->pci_name);
		if (!err)
			err = rte_eth_dev_get_port_by_name(dp->pci_name, &dp->port_id);
	} else {
		err = make_vdev(dp, cfg, args, sizeof(args));
		if (!err)
			err = rte_vdev_init(dp->vdev_name, args);
		if (!err)
			err = rte_eth_dev_get_port_by_name(dp->vdev_name, &dp->port_id);
	}
	if (err) {
		dp_log(dp, "cannot create DPDK port %s for %s (%s)", cfg->port, cfg->netdev,
		       strerror(err < 0 ? -err : err));
		dp->vdev_name[0] = 0;
		return -ENODEV;
	}

	fd_snapshot(before); /* for the queue's fd, made from here on */
	memset(&conf, 0, sizeof(conf));
	rte_eth_dev_info_get(dp->port_id, &info);
	/* software ports take what the interface delivers; a NIC needs its MTU set */
	if (pci && info.max_mtu && cfg->eth_mtu && cfg->eth_mtu <= info.max_mtu)
		conf.rxmode.mtu = cfg->eth_mtu;
	err = rte_eth_dev_configure(dp->port_id, 1, 1, &conf);
	if (!err)
		err = rte_eth_rx_queue_setup(dp->port_id, 0, RING_DESC,
					     rte_eth_dev_socket_id(dp->port_id), NULL, dp->pool);
	if (!err)
		err = rte_eth_tx_queue_setup(dp->port_id, 0, RING_DESC,
					     rte_eth_dev_socket_id(dp->port_id), NULL);
	if (!err)
		err = rte_eth_dev_start(dp->port_id);
	if (err) {
		/* the PMD's own reason is in DPDK's log, which the daemon drops */
		bool big = !strcmp(cfg->port, "af_xdp") && cfg->eth_mtu + 14 > XDP_ROOM - 256;

		dp_log(dp, "cannot start DPDK port %s: %s%s", cfg->port, strerror(err < 0 ? -err : err),
		       big ? " (an AF_XDP frame holds 3456 bytes, and XDP on a veth or most NICs "
			     "refuses an MTU above about 3.5 KB: make the interface's MTU 3442 or less)"
			   : "");
		close_dpdk_port(dp);
		return -EIO;
	}
	rte_eth_promiscuous_enable(dp->port_id);
	/* the PMDs make their fds at queue setup, not when the vdev is made:
	 * looked for any earlier, the switch found none and napped, polling */
	if (!strcmp(cfg->port, "tap"))
		dp->wait_fd = find_new_tun(before);
	if (!strcmp(cfg->port, "af_xdp")) {
		dp->wait_fd = find_new_socket(before, 44 /* AF_XDP */);
		dp->xsk = dp->wait_fd >= 0;
	}
	return 0;
}

/* af_packet's receive times are CLOCK_REALTIME, ours CLOCK_MONOTONIC: the
 * offset between them moves only when the wall clock is set */
static void real_ahead_update(struct uroce_dp *dp)
{
	struct timespec r, m;

	if (dp->kind != DP_PORT_AFP)
		return;
	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_MONOTONIC, &m);
	dp->real_ahead_ns = ((uint64_t)r.tv_sec - (uint64_t)m.tv_sec) * 1000000000ull +
			    (uint64_t)r.tv_nsec - (uint64_t)m.tv_nsec;
}

int uroce_dp_open(const struct uroce_dp_config *cfg, struct uroce_dp **out)
{
	struct uroce_dp *dp;
	int err;

	dp = calloc(1, sizeof(*dp));
	if (!dp)
		return -ENOMEM;
	dp->cfg = *cfg;
	dp->wait_fd = -1;
	dp->afp.fd = -1;
	dp->afp_tx.fd = -1;
	dp->block_shift = 12; /* provider/shared.h; uroce_dp_own_blocks says */
	dp->ctr = cfg->counters ? cfg->counters : dp->own_ctr;
	dp->data_room = port_room(cfg);
	if (!strcmp(cfg->port, "af_packet"))
		dp->kind = DP_PORT_AFP;
	else if (!strncmp(cfg->port, "memif", 5) && (!cfg->port[5] || cfg->port[5] == ':'))
		dp->kind = DP_PORT_MEMIF;
	else
		dp->kind = DP_PORT_DPDK;
	real_ahead_update(dp);
	if (dp->kind == DP_PORT_DPDK) {
		/* EAL and its mbufs only for a port DPDK moves (frames.h) */
		err = dp_eal_start(cfg);
		if (err) {
			dp_log(dp, "DPDK EAL did not start: %s", strerror(-err));
			goto err_free;
		}
		dp->pool = pool_get(dp->data_room);
		err = dp->pool ? 0 : -ENOMEM;
	} else {
		err = dp_frames_init(&dp->frames, POOL_MBUFS, dp->data_room + RTE_PKTMBUF_HEADROOM);
	}
	if (err)
		goto err_free;
	if (dp->kind == DP_PORT_AFP) {
		err = open_afp_port(dp);
		if (err)
			dp_log(dp, "cannot open a packet socket on %s: %s", cfg->netdev,
			       strerror(-err));
	} else if (dp->kind == DP_PORT_MEMIF) {
		err = open_memif_port(dp);
		if (err)
			dp_log(dp, "cannot open memif %s: %s", cfg->port, strerror(-err));
	} else {
		err = open_dpdk_port(dp, cfg);
	}
	if (err)
		goto err_pool;
	if (cfg->capture && *cfg->capture && dp_capture_open(dp, cfg->capture))
		dp_log(dp, "cannot write capture file %s", cfg->capture);
	if (cfg->impair && *cfg->impair) {
		err = dp_impair_open(dp, cfg->impair, cfg->seed);
		if (err) {
			dp_log(dp, "bad impairment spec '%s'", cfg->impair);
			goto err_port;
		}
	}
	err = dp_peer_loop_init(&dp->peer, cfg->loop_dir, cfg->loop_bells, dp->data_room);
	if (err == -ENAMETOOLONG)
		dp_log(dp, "device directory %s too long for its loopback sockets (at most %d bytes)",
		       cfg->loop_dir, DP_PEER_DIR_MAX - 1);
	if (!err && cfg->loop_bells)
		err = dp_peer_wait_init(&dp->peer_wait, DP_LOOP_SLOTS, DP_PEER_BLOCKS);
	if (err) {
		dp_peer_loop_fini(&dp->peer);
		goto err_port;
	}
	dp->memif_direct = dp->kind == DP_PORT_MEMIF && !dp->impair_tx && !dp->capture;
	dp_pt_init(dp);
	dp_log(dp, "port %s on %s up (%s, frame room %u, wait fd %d)", cfg->port, cfg->netdev,
	       dp->kind == DP_PORT_AFP	   ? "own packet sockets"
	       : dp->kind == DP_PORT_MEMIF ? "own memif"
					   : "DPDK",
	       dp->data_room, dp->wait_fd);
	dp_warm(dp);
	*out = dp;
	return 0;

err_port:
	dp_capture_close(dp);
	close_port(dp);
err_pool:
	frames_put(dp);
err_free:
	free(dp);
	return err;
}

/* A frame to our own MAC joins the loopback ring, or is dropped, counted,
 * when the ring is full: it must never reach the wire, where nobody takes it. */
static void loop_push(struct uroce_dp *dp, struct rte_mbuf *m)
{
	if (dp->nloop == DP_LOOP_SLOTS) {
		dp_frame_free(dp, m);
		dp_count(dp, DP_CTR_dp_tx_loopback_drops);
		return;
	}
	dp->loop[(dp->loop_head + dp->nloop++) % DP_LOOP_SLOTS] = m;
	dp_count(dp, DP_CTR_dp_tx_loopback);
}

static struct rte_mbuf *loop_pop(struct uroce_dp *dp)
{
	struct rte_mbuf *m = dp->loop[dp->loop_head];

	dp->loop_head = (dp->loop_head + 1) % DP_LOOP_SLOTS;
	dp->nloop--;
	return m;
}

/* Up to n loopback frames to the receiver, oldest first. */
static unsigned loop_rx(struct uroce_dp *dp, uroce_dp_rx_fn fn, void *arg, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct rte_mbuf *l = loop_pop(dp);

		fn(arg, rte_pktmbuf_mtod(l, const uint8_t *), rte_pktmbuf_data_len(l));
		dp_frame_free(dp, l);
	}
	return n;
}

static void free_frame(void *arg, void *m)
{
	dp_frame_free(arg, m);
}

void uroce_dp_close(struct uroce_dp *dp)
{
	if (!dp)
		return;
	dp_pt_close(dp);
	uroce_dp_tx_flush(dp, 0);
	while (dp->nloop)
		dp_frame_free(dp, loop_pop(dp));
	dp_peer_wait_fini(&dp->peer_wait, free_frame, dp);
	dp_peer_loop_fini(&dp->peer);
	dp_impair_close(dp);
	dp_capture_close(dp);
	close_port(dp);
	frames_put(dp);
	free(dp);
}

/* Decide where one received frame goes. */
static void rx_one(struct uroce_dp *dp, const uint8_t *f, uint32_t len, uroce_dp_rx_fn fn,
		   void *arg, uint64_t now)
{
	unsigned off;
	uint16_t type;

	dp_count(dp, DP_CTR_dp_rx_frames);
	if (dp_frame_neigh(f, len, &type, &off)) {
		dp_neigh_rx(dp, f, len, type, off, now);
		if (dp->neigh_seen)
			dp->neigh_seen(dp->neigh_arg, f, len);
		return;
	}
	if (len < 14 || !dp_is_own_mac(dp, f)) {
		dp_count(dp, DP_CTR_dp_rx_not_for_us);
		return;
	}
	if (type != 0x0800 && type != 0x86dd) {
		dp_count(dp, DP_CTR_dp_rx_other);
		return;
	}
	if (dp->capture)
		dp_capture_frame(dp, f, len, now);
	fn(arg, f, len);
}

static void rx_mbuf(struct uroce_dp *dp, struct rte_mbuf *m, uroce_dp_rx_fn fn, void *arg,
		    uint64_t now)
{
	rx_one(dp, rte_pktmbuf_mtod(m, const uint8_t *), rte_pktmbuf_data_len(m), fn, arg, now);
	dp_frame_free(dp, m);
}

/* Injected receive faults hit only frames meant for this device: 1 when consumed. */
static int rx_impaired(struct uroce_dp *dp, struct rte_mbuf *m, uint64_t now)
{
	return dp_is_own_mac(dp, rte_pktmbuf_mtod(m, const uint8_t *)) &&
	       dp_impair_frame(dp, dp->impair_rx, m, now);
}

/* A frame from a ring into an mbuf, for the fault injector to hold: NULL without mbufs. */
static struct rte_mbuf *ring_frame_copy(struct uroce_dp *dp, const uint8_t *f, uint32_t len)
{
	struct rte_mbuf *m = dp_frame_alloc(dp);

	if (m && len > rte_pktmbuf_tailroom(m))
		len = rte_pktmbuf_tailroom(m);
	if (m) {
		memcpy(rte_pktmbuf_mtod(m, uint8_t *), f, len);
		m->data_len = (uint16_t)len;
		m->pkt_len = len;
	} else {
		dp_count(dp, DP_CTR_dp_rx_no_mbuf);
	}
	return m;
}

/* The destination QP of a RoCEv2 frame we built; 0 for anything else (it stays here). */
uint32_t dp_frame_dqpn(const uint8_t *f, uint32_t len)
{
	bool v6;
	uint32_t ip = netem_ip_offset(f, len, &v6), udp;

	if (!ip || f[ip + (v6 ? 6 : 9)] != 17) /* next header / protocol: UDP */
		return 0;
	udp = ip + (v6 ? 40 : (uint32_t)(f[ip] & 0xf) * 4);
	if (len < udp + 8 + 12 || f[udp + 2] != 0x12)
		return 0;
	/* UDP 4791 (RoCEv2): the BTH's destination QP in bytes 5-7; 4792
	 * (uroce's SR negotiation, transport/wire.h): its dqpn at bytes 8-11 */
	if (f[udp + 3] == 0xb7)
		return (uint32_t)(f[udp + 8 + 5] << 16 | f[udp + 8 + 6] << 8 | f[udp + 8 + 7]);
	if (f[udp + 3] == 0xb8 && len >= udp + 8 + 16)
		return (uint32_t)(f[udp + 8 + 9] << 16 | f[udp + 8 + 10] << 8 | f[udp + 8 + 11]);
	return 0;
}

/* What became of a frame sent to another process: delivered, nobody
 * there (as a NIC drops a packet for a QP that does not exist), or lost. */
static enum dp_counter loop_result(int err)
{
	if (!err)
		return DP_CTR_dp_tx_loopback;
	if (err == -ECONNREFUSED || err == -ENOENT || err == -EPIPE || err == -ECONNRESET)
		return DP_CTR_dp_tx_loopback_no_owner;
	if (err == -EUSERS)
		return DP_CTR_dp_tx_loopback_refused;
	return DP_CTR_dp_tx_loopback_drops;
}

/* A send's result counted, and with it any frames an owner that refused
 * us never read (we hear of the refusal a frame late) */
static void count_loop(struct uroce_dp *dp, int err)
{
	dp_count(dp, loop_result(err));
	dp->ctr[DP_CTR_dp_tx_loopback_refused] += dp->peer.tx_unread;
	dp->peer.tx_unread = 0;
}

/*
 * A frame to our own MAC: another process's QP gets it through that
 * process's socket (peer_loop.h), ours join the loopback ring; none while
 * the port is down. m holds the frame, or is NULL (memif's ring): then it
 * is copied if it stays here. Returns true when the frame's receiver was
 * behind (the frame waits for it, or was dropped with the wait full).
 */
static bool loop_frame(struct uroce_dp *dp, const uint8_t *f, uint32_t len, struct rte_mbuf *m)
{
	uint32_t b;

	/* a port down carries nothing, not even between the device's own QPs
	 * (RC recovers as after a link flap once the daemon is back) */
	if (dp->port_down) {
		dp_count(dp, DP_CTR_dp_tx_loopback_link_down);
		if (m)
			dp_frame_free(dp, m);
		return false;
	}
	b = dp->peer.bells ? dp_frame_dqpn(f, len) >> dp->block_shift : 0;
	if (b && !dp_peer_loop_owns(&dp->peer, b)) {
		/* behind frames that wait for the same process already, in order;
		 * frames for other processes do not wait behind them */
		int err = dp_peer_wait_busy(&dp->peer_wait, b)
			      ? -EAGAIN
			      : dp_peer_loop_send(&dp->peer, b, f, len);

		if (err == -EAGAIN && dp->peer_wait.n < dp->peer_wait.cap &&
		    (m || (m = ring_frame_copy(dp, f, len))) &&
		    !dp_peer_wait_push(&dp->peer_wait, b, m))
			return true; /* the receiver is behind: wait for it, as a NIC's loopback does */
		count_loop(dp, err);
		if (m)
			dp_frame_free(dp, m);
		return err == -EAGAIN;
	}
	if (!m)
		m = ring_frame_copy(dp, f, len);
	if (m)
		loop_push(dp, m);
	return false;
}

/* A frame read in place from a ring (af_packet, memif): to the engine, or to the fault injector in a copy. */
void dp_rx_in_place(struct uroce_dp *dp, const uint8_t *f, uint32_t len, uroce_dp_rx_fn fn,
		    void *arg, uint64_t now)
{
	if (likely(!dp->impair_rx)) {
		rx_one(dp, f, len, fn, arg, now);
	} else {
		struct rte_mbuf *m = ring_frame_copy(dp, f, len);

		if (m && !rx_impaired(dp, m, now))
			rx_mbuf(dp, m, fn, arg, now);
	}
}

/*
 * A batch of frames from a uroce sender (udp_gso.c), cut into the frames
 * it was made of, each handed up as if it had come alone. Anything else
 * the kernel batched goes up as it came (to be refused). Returns the
 * frames beyond the first.
 */
static unsigned rx_batch(struct uroce_dp *dp, uint8_t *f, uint32_t len, uint16_t size,
			 uroce_dp_rx_fn fn, void *arg, uint64_t now)
{
	struct dp_gso_cut cut;
	unsigned n = 0;
	uint8_t *s;
	uint32_t slen;

	if (dp_gso_cut_start(&cut, f, len, size)) {
		dp_rx_in_place(dp, f, len, fn, arg, now);
		return 0;
	}
	while ((s = dp_gso_cut_next(&cut, &slen))) {
		dp_count(dp, DP_CTR_dp_rx_gso_frames);
		dp_rx_in_place(dp, s, slen, fn, arg, now);
		n++;
	}
	return n ? n - 1 : 0;
}

/* When the kernel took in the frame of slot `h` (CLOCK_REALTIME, rx_wait.h) */
static inline uint64_t afp_rx_time(const struct tpacket2_hdr *h)
{
	return h->tp_sec * 1000000000ull + h->tp_nsec;
}

/* `frames` waited `ns` in the receive ring (rx_wait.h) */
static inline void rx_waited(struct uroce_dp *dp, uint64_t ns, unsigned frames)
{
	if (likely(!dp_rx_wait_late(ns)))
		return;
	dp->ctr[DP_CTR_dp_rx_waited_10ms] += frames;
	if (ns >= DP_RX_WAIT_LONG_NS)
		dp->ctr[DP_CTR_dp_rx_waited_50ms] += frames;
}

static unsigned rx_afp(struct uroce_dp *dp, uroce_dp_rx_fn fn, void *arg, unsigned max,
		       uint64_t now)
{
	struct tpacket2_hdr *h;
	unsigned n = 0;

	while (n < max && (h = dp_afp_next(&dp->afp))) {
		uint32_t len;
		uint16_t gso;
		uint8_t *f = dp_afp_frame_gso(&dp->afp, h, &len, &gso);
		unsigned frames = 1;

		if (!f)
			dp_count(dp, DP_CTR_dp_rx_gso_lost);
		else if (gso)
			frames += rx_batch(dp, f, len, gso, fn, arg, now);
		else
			dp_rx_in_place(dp, f, len, fn, arg, now);
		/* every frame of a batch waited as long as the batch */
		rx_waited(dp, dp_rx_time_waited(afp_rx_time(h), now, dp->real_ahead_ns), frames);
		dp_afp_release(&dp->afp, h);
		n += frames;
	}
	return n;
}

static unsigned rx_memif(struct uroce_dp *dp, uroce_dp_rx_fn fn, void *arg, unsigned max,
			 uint64_t now)
{
	const uint8_t *f;
	uint32_t len;
	unsigned n = 0;

	if (dp->attached) /* a device daemon's: the attachment's upkeep, and the loan of its wire */
		n = dp_pt_rx(dp, fn, arg, max / 2, now);
	else
		dp_memif_upkeep(&dp->memif, now);
	/* the wire lent to a program: its peer's leaving is all we look for */
	if (dp->memif.lent_out)
		return 0;
	while (n < max && (f = dp_memif_rx_next(&dp->memif, &len))) {
		if (dp->memif.stamps)
			rx_waited(dp, dp_rx_stamp_waited(dp->memif.rx_stamp, now), 1);
		if (!dp->attached || !dp_pt_frame(dp, f, len))
			dp_rx_in_place(dp, f, len, fn, arg, now);
		n++;
	}
	dp_memif_rx_done(&dp->memif);
	if (n) {
		dp->last_rx_ns = now;
		/* traffic again: no more signals from the peer (the armed
		 * thread still gets the one that woke it) */
		dp_memif_mask(&dp->memif);
	}
	return n;
}

static unsigned rx_dpdk(struct uroce_dp *dp, uroce_dp_rx_fn fn, void *arg, unsigned max,
			uint64_t now)
{
	struct rte_mbuf *m[DP_BURST];
	unsigned n = rte_eth_rx_burst(dp->port_id, 0, m, (uint16_t)max);

	for (unsigned i = 0; i < n; i++) {
		if (i + 2 < n)
			rte_prefetch0(rte_pktmbuf_mtod(m[i + 2], void *));
		if (unlikely(dp->impair_rx != NULL) && rx_impaired(dp, m[i], now))
			continue;
		rx_mbuf(dp, m[i], fn, arg, now);
	}
	return n;
}

bool uroce_dp_rx_backlog_late(struct uroce_dp *dp, uint64_t now)
{
	const struct tpacket2_hdr *h;

	switch (dp->kind) {
	case DP_PORT_AFP:
		h = dp_afp_next(&dp->afp);
		return h && dp_rx_time_late(afp_rx_time(h), now, dp->real_ahead_ns);
	case DP_PORT_MEMIF:
		return dp->memif.stamps && dp_rx_stamp_late(dp_memif_rx_oldest_stamp(&dp->memif), now);
	default:
		return false;
	}
}

unsigned uroce_dp_rx(struct uroce_dp *dp, uroce_dp_rx_fn fn, void *arg, unsigned max,
		     uint64_t now)
{
	struct rte_mbuf *m[DP_BURST];
	unsigned done = 0;

	if (max > DP_BURST)
		max = DP_BURST;
	/* loopback frames first (they were sent before anything now arriving),
	 * but at most half the burst while the port may have frames: a busy
	 * local pair must not starve the wire's ACKs */
	done = dp->nloop ? loop_rx(dp, fn, arg, dp->nloop > max / 2 ? max / 2 : dp->nloop) : 0;
	switch (dp->kind) {
	case DP_PORT_AFP:
		done += rx_afp(dp, fn, arg, max - done, now);
		break;
	case DP_PORT_MEMIF:
		done += rx_memif(dp, fn, arg, max - done, now);
		break;
	case DP_PORT_DPDK:
		done += rx_dpdk(dp, fn, arg, max - done, now);
		break;
	}
	if (dp->nloop && done < max)
		done += loop_rx(dp, fn, arg, dp->nloop < max - done ? dp->nloop : max - done);
	if (done < max && dp_peer_loop_maybe(&dp->peer)) {
		done += dp_peer_loop_rx(&dp->peer, fn, arg, max - done, now);
		dp->ctr[DP_CTR_dp_rx_waited_10ms] += dp->peer.rx_waited;
		dp->peer.rx_waited = 0;
	}
	if (unlikely(dp->impair_rx != NULL)) {
		unsigned late = dp_impair_release(dp->impair_rx, m, DP_BURST, now);

		for (unsigned i = 0; i < late; i++)
			rx_mbuf(dp, m[i], fn, arg, now);
		done += late;
	}
	return done;
}

/*
 * Over memif frames are built in the shared ring itself, with nothing in
 * between to copy them from (dp->memif_direct: no injected faults or
 * capture, which want an mbuf to hold or a moment to look). A full ring is
 * then a full transmit queue, as on a NIC: no buffer until the peer reads.
 * Buffers smaller than a frame (a peer's choice) go the mbuf way, copied in
 * pieces.
 */
#define MEMIF_LENT ((void *)&memif_lent_marker)
#define MEMIF_PUBLISH_EVERY 16
static const char memif_lent_marker;

/*
 * A buffer for a frame, leaving `keep` of memif's slots free: the engine's
 * frames leave DP_NEIGH_SLOTS to ARP and ND (dp_tx_raw), or a ring kept
 * full by a port that drains slowly (a busy device daemon) would never
 * carry the request that resolves a neighbour, and its QPs would fail.
 */
static int tx_get(struct uroce_dp *dp, uint8_t **data, uint32_t *cap, void **cookie,
		  unsigned keep)
{
	struct rte_mbuf *m;

	/* the device daemon's wire, lent to a program: nothing of ours goes out
	 * (its ARP and ND answers: the borrower answers meanwhile) */
	if (unlikely(dp->memif.lent_out)) {
		dp_count(dp, DP_CTR_dp_tx_dropped);
		return -ENOBUFS;
	}
	if (dp->memif_direct) {
		if (dp->memif.connected && !dp_memif_tx_room_over(&dp->memif, keep)) {
			dp_count(dp, DP_CTR_dp_tx_no_mbuf);
			return -ENOBUFS;
		}
		*data = dp_memif_tx_reserve(&dp->memif, dp->data_room, cap);
		if (*data) {
			*cookie = MEMIF_LENT;
			return 0;
		}
		if (dp_memif_tx_full(&dp->memif)) {
			dp_count(dp, DP_CTR_dp_tx_no_mbuf);
			return -ENOBUFS;
		}
	}
	if (dp->ntx == DP_BURST)
		uroce_dp_tx_flush(dp, 0);
	m = dp_frame_alloc(dp);
	if (!m) {
		dp_count(dp, DP_CTR_dp_tx_no_mbuf);
		return -ENOBUFS;
	}
	*data = rte_pktmbuf_mtod(m, uint8_t *);
	*cap = rte_pktmbuf_tailroom(m);
	*cookie = m;
	return 0;
}

int uroce_dp_tx_get(struct uroce_dp *dp, uint8_t **data, uint32_t *cap, void **cookie)
{
	return tx_get(dp, data, cap, cookie, DP_NEIGH_SLOTS);
}

/*
 * Our frame f goes to a process of the device whose frames wait already
 * (peer_wait.h). A burst's frames meet the loopback when it is flushed: this
 * says what the last flush found, a burst late.
 */
static bool loop_behind(const struct uroce_dp *dp, const uint8_t *f, uint32_t len)
{
	return dp->peer_wait.n && dp->peer.bells && dp_is_own_mac(dp, f) &&
	       dp_peer_wait_busy(&dp->peer_wait, dp_frame_dqpn(f, len) >> dp->block_shift);
}

/* A frame built in memif's ring: it leaves with the next publish, unless it is for us. */
static bool memif_put(struct uroce_dp *dp, uint32_t len)
{
	const uint8_t *f = dp->memif.tx_buf;
	bool behind = false;

	if (len && dp_is_own_mac(dp, f)) {
		behind = loop_frame(dp, f, len, NULL);
		len = 0;
	}
	dp_memif_tx_commit(&dp->memif, len);
	/* the peer starts on a batch while we build the next */
	if (dp->memif.tx_frames >= MEMIF_PUBLISH_EVERY)
		dp->ctr[DP_CTR_dp_tx_frames] += dp_memif_tx_publish(&dp->memif);
	return behind;
}

bool uroce_dp_tx_put(struct uroce_dp *dp, void *cookie, uint32_t len)
{
	struct rte_mbuf *m = cookie;

	if (cookie == MEMIF_LENT)
		return memif_put(dp, len);
	if (!len || len > rte_pktmbuf_tailroom(m)) {
		dp_frame_free(dp, m);
		return false;
	}
	m->data_len = (uint16_t)len;
	m->pkt_len = len;
	dp->tx[dp->ntx++] = m;
	/* (it joins the wait, or goes, when the burst is flushed) */
	return loop_behind(dp, rte_pktmbuf_mtod(m, const uint8_t *), len);
}

void dp_tx_raw(struct uroce_dp *dp, const uint8_t *frame, uint32_t len)
{
	uint8_t *data;
	uint32_t cap;
	void *cookie;

	if (tx_get(dp, &data, &cap, &cookie, 0))
		return;
	if (len > cap) {
		uroce_dp_tx_put(dp, cookie, 0);
		return;
	}
	memcpy(data, frame, len);
	uroce_dp_tx_put(dp, cookie, len);
}

/* Copy frames into memif's ring: how many went out. */
static unsigned memif_tx(struct uroce_dp *dp, struct rte_mbuf **m, unsigned n)
{
	const uint8_t *frames[DP_BURST * 2];
	uint32_t lens[DP_BURST * 2];

	for (unsigned i = 0; i < n; i++) {
		frames[i] = rte_pktmbuf_mtod(m[i], const uint8_t *);
		lens[i] = rte_pktmbuf_data_len(m[i]);
	}
	return dp_memif_tx(&dp->memif, frames, lens, n);
}

/* A frame that waited for a slow process (peer_wait.h): -EAGAIN while it is still behind. */
static int peer_wait_send(void *arg, uint32_t block, void *frame)
{
	struct uroce_dp *dp = arg;
	struct rte_mbuf *m = frame;
	int err =
	    dp_peer_loop_send(&dp->peer, block, rte_pktmbuf_mtod(m, const uint8_t *), m->data_len);

	if (err == -EAGAIN)
		return err;
	count_loop(dp, err);
	dp_frame_free(dp, m);
	return 0;
}

unsigned uroce_dp_tx_flush(struct uroce_dp *dp, uint64_t now)
{
	struct rte_mbuf *out[DP_BURST * 2];
	unsigned n = 0, sent = 0;

	if (dp->peer_wait.n)
		dp_peer_wait_flush(&dp->peer_wait, peer_wait_send, dp);
	if (dp->memif_direct)
		dp->ctr[DP_CTR_dp_tx_frames] += dp_memif_tx_publish(&dp->memif);
	for (unsigned i = 0; i < dp->ntx; i++) {
		struct rte_mbuf *m = dp->tx[i];
		const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);

		if (dp->capture)
			dp_capture_frame(dp, f, m->data_len, now);
		if (dp->impair_tx && dp_impair_frame(dp, dp->impair_tx, m, now))
			continue; /* dropped or held back */
		if (dp_is_own_mac(dp, f)) {
			loop_frame(dp, f, m->data_len, m);
			continue;
		}
		out[n++] = m;
	}
	dp->ntx = 0;
	if (dp->impair_tx)
		n += dp_impair_release(dp->impair_tx, out + n, DP_BURST, now);
	if (!n)
		return 0;
	if (dp->kind == DP_PORT_AFP) {
		unsigned batched = 0;

		sent = dp_afp_tx(&dp->afp_tx, out, n, &batched);
		dp->ctr[DP_CTR_dp_tx_gso_frames] += batched;
	} else if (dp->kind == DP_PORT_MEMIF) {
		sent = memif_tx(dp, out, n);
	} else {
		for (int tries = 0; sent < n && tries < 8; tries++)
			sent += rte_eth_tx_burst(dp->port_id, 0, out + sent, (uint16_t)(n - sent));
	}
	/* copied out (own sockets, memif) or refused (the PMD took the rest) */
	for (unsigned i = dp->kind == DP_PORT_DPDK ? sent : 0; i < n; i++)
		dp_frame_free(dp, out[i]);
	dp->ctr[DP_CTR_dp_tx_dropped] += n - sent;
	dp->ctr[DP_CTR_dp_tx_frames] += sent;
	return sent;
}

void uroce_dp_housekeeping(struct uroce_dp *dp)
{
	struct tpacket_stats st;
	socklen_t len = sizeof(st);

	/* other processes' senders that went away, seen on their sockets */
	dp_peer_loop_recheck(&dp->peer);
	real_ahead_update(dp);
	/* frames the kernel dropped because our ring was full: reading resets them */
	if (dp->kind == DP_PORT_AFP &&
	    !getsockopt(dp->afp.fd, SOL_PACKET, PACKET_STATISTICS, &st, &len))
		dp->ctr[DP_CTR_dp_rx_ring_drops] += st.tp_drops;
	/* and an AF_XDP socket's: its receive ring full, or no free buffer
	 * for a frame. The PMD's rte_eth_stats imissed has only the latter,
	 * and the former is where sharedport's frames were lost over AF_XDP
	 * (the veth's RX dropped, nothing else): counted, not guessed at */
	if (dp->xsk) {
		struct xdp_statistics xs;
		socklen_t xl = sizeof(xs);

		if (!getsockopt(dp->wait_fd, SOL_XDP, XDP_STATISTICS, &xs, &xl)) {
			uint64_t drops = xs.rx_dropped + xs.rx_ring_full;

			dp->ctr[DP_CTR_dp_rx_ring_drops] += drops - dp->xsk_drops;
			dp->xsk_drops = drops;
		}
	}
	dp->ctr[DP_CTR_dp_memif_bad_desc] += dp->memif.bad_desc + dp->attach.bad_desc;
	dp->memif.bad_desc = dp->attach.bad_desc = 0;
}

void uroce_dp_set_neigh_seen(struct uroce_dp *dp,
			     void (*fn)(void *arg, const uint8_t *frame, uint32_t len), void *arg)
{
	dp->neigh_seen = fn;
	dp->neigh_arg = arg;
}

int uroce_dp_own_blocks(struct uroce_dp *dp, const uint32_t *blocks, unsigned n, unsigned shift)
{
	dp->block_shift = shift;
	return dp_peer_loop_own(&dp->peer, blocks, n);
}

int uroce_dp_loop_fd(struct uroce_dp *dp)
{
	return dp->peer.ep_fd;
}

void uroce_dp_loop_woken(struct uroce_dp *dp)
{
	dp_peer_loop_recheck(&dp->peer);
	dp_pt_woken(dp);
}

bool uroce_dp_loop_arm(struct uroce_dp *dp)
{
	return !dp->nloop && dp_peer_loop_arm(&dp->peer);
}

void uroce_dp_loop_disarm(struct uroce_dp *dp)
{
	dp_peer_loop_disarm(&dp->peer);
}

bool uroce_dp_loop_pending(const struct uroce_dp *dp)
{
	/* frames another process left in a ring when a pass's budget ran out
	 * (or a look owed): no byte will come on the sockets for them */
	return dp->nloop || dp->peer_wait.n || dp->peer.more || dp->peer.recheck;
}

bool uroce_dp_link_up(const struct uroce_dp *dp)
{
	return dp->kind != DP_PORT_MEMIF || dp->memif.server || dp->memif.connected;
}

void uroce_dp_set_port_down(struct uroce_dp *dp, bool down)
{
	dp->port_down = down;
}

bool uroce_dp_peer_absent(const struct uroce_dp *dp)
{
	return dp->kind == DP_PORT_MEMIF && dp_memif_peer_absent(&dp->memif);
}

unsigned uroce_dp_tx_space(struct uroce_dp *dp)
{
	/* a DPDK port's queue says so only when a burst fails; mbufs abound */
	if (dp->memif.lent_out)
		return 0;
	return dp->memif_direct ? dp_memif_tx_space(&dp->memif) : UINT32_MAX;
}

int uroce_dp_wait_fd(struct uroce_dp *dp)
{
	return dp->wait_fd;
}

/*
 * memif's interrupt only after a quiet spell: while frames flow, whoever
 * passes next finds them soon anyway, and each frame the peer publishes
 * to an armed ring costs it a system call.
 */
#define MEMIF_ARM_QUIET_NS 2000000ull

int uroce_dp_arm_wakeup(struct uroce_dp *dp, uint64_t now)
{
	if (dp->kind != DP_PORT_MEMIF || now - dp->last_rx_ns < MEMIF_ARM_QUIET_NS)
		return -1;
	if (dp_pt_arm(dp) == -EAGAIN)
		return -EAGAIN;
	return dp_memif_arm(&dp->memif);
}

int uroce_dp_arm_wakeup_now(struct uroce_dp *dp)
{
	if (dp->kind != DP_PORT_MEMIF)
		return -1;
	/* a wire lent out signals its borrower: wake for its peer leaving, or
	 * a new one coming */
	if (dp->memif.lent_out)
		return dp->memif.connected ? dp->memif.ctl_fd
		       : dp->memif.server  ? dp->memif.listen_fd
					   : -ENOTCONN;
	/* a client whose server is gone reconnects at its next receive */
	if (!dp->memif.server && !dp->memif.connected)
		return -ENOTCONN;
	return dp_memif_arm(&dp->memif);
}

void uroce_dp_disarm_wakeup(struct uroce_dp *dp)
{
	if (dp->kind == DP_PORT_MEMIF) {
		dp_pt_disarm(dp);
		dp_memif_disarm(&dp->memif);
		/* lent out, what woke us was its control socket: look at it now */
		if (dp->memif.lent_out)
			dp->memif.next_ctl_ns = 0;
	}
}

unsigned uroce_dp_counters(const struct uroce_dp *dp, const char *const **names,
			   const uint64_t **values)
{
	*names = uroce_dp_counter_names;
	*values = dp->ctr;
	return DP_CTR_COUNT;
}
