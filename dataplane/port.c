/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One port per opened device: af_packet on the interface by default, on
 * packet sockets of our own (afp_rx.c, afp_tx.c), or a DPDK port by
 * configuration: af_xdp, tap, memif or a PCI NIC. Frames for the engine
 * are handed up by pointer, from the af_packet ring or an mbuf; frames from
 * the engine are written straight into mbufs and sent in bursts.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <linux/if_packet.h>

#include <rte_alarm.h>
#include <rte_bus_vdev.h>
#include <rte_dev.h>
#include <rte_ethdev.h>
#include <rte_log.h>
#include <rte_mbuf.h>

#include "dp_internal.h"

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

		if (e->d_name[0] != '.' && fd >= 0 && fd < MAX_FDS)
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

/* Frame buffer large enough for anything the interface can deliver. */
static uint32_t frame_room(unsigned eth_mtu)
{
	uint32_t need = (eth_mtu ? eth_mtu : 1500) + 14 + 4 + 64;

	return need < 2048 ? 2048 : (need + 1023) & ~1023u;
}

/*
 * af_packet's ring slot and mbuf: a RoCE frame at path MTU 4096 with the
 * largest header stack (VLAN, IPv6, UDP, BTH, RETH, ImmDt, SR extension,
 * ICRC) is under 4250 bytes, and the kernel writes a frame 66 bytes into its
 * slot; 4608 holds 4542 (8 slots per 9 pages). A longer frame - never
 * RoCE, and with steering on never delivered at all - is truncated into the
 * slot by the kernel (tp_snaplen), and handed up as truncated (the engine
 * counts it as such); an mbuf of the slot's size holds any frame that
 * needs copying (injected receive faults). Half the MTU 9000 slot: twice the
 * frames in the same ring memory, which is what a receiver starved of CPU
 * while several processes share two cores needs (see docs/multi-process.md).
 */
#define AFP_ROCE_FRAMESZ 4608u
#define AFP_FRAMECNT 4096u

static uint32_t port_room(const struct uroce_dp_config *cfg)
{
	uint32_t room = frame_room(cfg->eth_mtu);

	if (!strcmp(cfg->port, "af_packet") && room > AFP_ROCE_FRAMESZ)
		room = AFP_ROCE_FRAMESZ;
	return room;
}

/*
 * memif's control socket. A server's socket left behind by a process that
 * died stops the next server from listening: remove it if nobody answers.
 * A client cannot start before its server listens: wait up to 10 s for the
 * peer process to come up.
 */
static void prepare_memif_socket(const char *port)
{
	const char *s = strstr(port, "socket=");
	bool server = strstr(port, "role=server") != NULL;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t n;

	if (!s)
		return;
	s += 7;
	n = strcspn(s, ",");
	if (n >= sizeof(sa.sun_path))
		return;
	memcpy(sa.sun_path, s, n);
	if (server) {
		int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

		if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) && errno == ECONNREFUSED)
			unlink(sa.sun_path);
		if (fd >= 0)
			close(fd);
		return;
	}
	/* only look: a probing connection would upset the server's handshake */
	for (int tries = 0; tries < 100 && access(sa.sun_path, F_OK); tries++)
		usleep(100000);
}

/*
 * A memif client's link comes up only when its handshake with the server
 * ends, a few milliseconds after start. A NIC's port is up when the
 * application opens it: datagrams posted before then would be dropped, so
 * wait for the link (its server is listening: prepare_memif_socket saw to
 * that), up to 3 s.
 */
static void wait_link_up(struct uroce_dp *dp)
{
	struct rte_eth_link link;

	for (int i = 0; i < 300; i++) {
		if (!rte_eth_link_get_nowait(dp->port_id, &link) && link.link_status)
			return;
		usleep(10000);
	}
	dp_log(dp, "memif link still down after 3 s: frames are dropped until the server connects");
}

/*
 * Start the port. A memif client connects to its server here, and the
 * server may still be coming up with the socket file of a killed
 * predecessor in place (prepare_memif_socket cannot tell a dead file from a
 * live one without connecting): try again for up to 10 s, as the wait for
 * the file does, with the PMD's complaint about each refusal silenced.
 */
static int start_port(struct uroce_dp *dp, const struct uroce_dp_config *cfg)
{
	bool memif_client = !strncmp(cfg->port, "memif", 5) && !strstr(cfg->port, "role=server");
	int err, level = memif_client ? rte_log_get_level(rte_log_register("pmd.net.memif")) : -1;

	for (int tries = 0;; tries++) {
		err = rte_eth_dev_start(dp->port_id);
		if (!err || !memif_client || tries >= 100)
			break;
		if (!tries)
			rte_log_set_level_pattern("pmd.net.memif*", RTE_LOG_CRIT);
		usleep(100000);
	}
	if (memif_client && level >= 0)
		rte_log_set_level_pattern("pmd.net.memif*", (uint32_t)level);
	if (!err && memif_client)
		wait_link_up(dp);
	return err;
}

static int make_vdev(struct uroce_dp *dp, const struct uroce_dp_config *cfg, char *args,
		     size_t len)
{
	static unsigned seq;
	const char *port = cfg->port;
	uint32_t room = port_room(cfg);

	if (!strcmp(port, "af_xdp")) {
		snprintf(dp->vdev_name, sizeof(dp->vdev_name), "net_af_xdp_ur%d_%u",
			 (int)getpid(), seq++);
		snprintf(args, len, "iface=%s,start_queue=0,queue_count=1", cfg->netdev);
	} else if (!strcmp(port, "tap")) {
		snprintf(dp->vdev_name, sizeof(dp->vdev_name), "net_tap_ur%d_%u", (int)getpid(),
			 seq++);
		snprintf(args, len, "iface=%s", cfg->netdev);
	} else if (!strncmp(port, "memif", 5)) {
		prepare_memif_socket(port);
		snprintf(dp->vdev_name, sizeof(dp->vdev_name), "net_memif_ur%d_%u", (int)getpid(),
			 seq++);
		/* socket-abstract=no: an abstract socket would not cross namespaces */
		snprintf(args, len, "%s%ssocket-abstract=no,bsize=%u,rsize=11,mac=%02x:%02x:%02x:%02x:%02x:%02x",
			 port[5] == ':' ? port + 6 : "", port[5] == ':' ? "," : "", room,
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

struct stop_in_intr {
	uint16_t port;
	atomic_bool done;
};

static void stop_port_cb(void *arg)
{
	struct stop_in_intr *st = arg;

	rte_eth_dev_stop(st->port);
	rte_eth_dev_close(st->port);
	atomic_store(&st->done, true);
}

/*
 * memif's stop and close unmap the rings that the peer shares. DPDK's
 * interrupt thread does the same when the peer hangs up, without a lock
 * against an application thread doing it at once: when both programs end
 * together, the regions were freed twice ("EAL: Error: Invalid memory"),
 * and a program crashed or hung at exit. Alarm callbacks run in that same
 * thread, so stopping from one serialises the two.
 */
static void stop_port(struct uroce_dp *dp)
{
	struct stop_in_intr st = {.port = dp->port_id};

	if (strncmp(dp->cfg.port, "memif", 5) || rte_eal_alarm_set(1, stop_port_cb, &st)) {
		stop_port_cb(&st);
		return;
	}
	for (int ms = 0; !atomic_load(&st.done); ms++) {
		if (ms == 5000 && rte_eal_alarm_cancel(stop_port_cb, &st) > 0) {
			stop_port_cb(&st); /* the interrupt thread is stuck: do it here */
			return;
		}
		usleep(1000);
	}
}

/* Stop and remove a DPDK port, started or not. */
static void close_dpdk_port(struct uroce_dp *dp)
{
	struct rte_eth_dev_info info;

	if (rte_eth_dev_info_get(dp->port_id, &info))
		info.device = NULL;
	stop_port(dp);
	if (dp->vdev_name[0])
		rte_vdev_uninit(dp->vdev_name);
	else if (dp->pci_name[0] && info.device)
		rte_dev_remove(info.device);
}

static void close_port(struct uroce_dp *dp)
{
	if (dp->afp.fd < 0) {
		close_dpdk_port(dp);
		return;
	}
	dp_afp_ring_close(&dp->afp);
	if (dp->afp_tx_fd >= 0)
		close(dp->afp_tx_fd);
}

/*
 * af_packet: a socket and ring of our own to receive on (afp_rx.c: no
 * fanout group) and a socket to transmit on (afp_tx.c: no TX ring the size
 * of the RX ring), not DPDK's PMD.
 */
static int open_afp_port(struct uroce_dp *dp)
{
	int err = dp_afp_ring_open(&dp->afp, dp->cfg.netdev, dp->data_room, AFP_FRAMECNT);

	if (err)
		return err;
	dp->afp_tx_fd = dp_afp_tx_open(dp->cfg.netdev);
	if (dp->afp_tx_fd < 0) {
		err = dp->afp_tx_fd;
		dp_afp_ring_close(&dp->afp);
		return err;
	}
	dp->wait_fd = dp->afp.fd;
	return 0;
}

/* Any other port: a DPDK port, a vdev (af_xdp, tap, memif) or a PCI NIC. */
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
	if (!strcmp(cfg->port, "af_xdp"))
		dp->wait_fd = find_new_socket(before, 44 /* AF_XDP */);

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
		err = start_port(dp, cfg);
	if (err) {
		dp_log(dp, "cannot start DPDK port %s: %s", cfg->port, strerror(err < 0 ? -err : err));
		close_dpdk_port(dp);
		return -EIO;
	}
	rte_eth_promiscuous_enable(dp->port_id);
	return 0;
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
	dp->afp_tx_fd = -1;
	dp->ctr = cfg->counters ? cfg->counters : dp->own_ctr;
	err = dp_eal_start(!strncmp(cfg->port, "pci:", 4) ? cfg->port + 4 : NULL);
	if (err) {
		dp_log(dp, "DPDK EAL did not start: %s", strerror(-err));
		goto err_free;
	}
	dp->data_room = port_room(cfg);
	dp->pool = pool_get(dp->data_room);
	if (!dp->pool) {
		err = -ENOMEM;
		goto err_free;
	}
	if (!strcmp(cfg->port, "af_packet")) {
		err = open_afp_port(dp);
		if (err)
			dp_log(dp, "cannot open a packet socket on %s: %s", cfg->netdev,
			       strerror(-err));
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
	dp_log(dp, "port %s on %s up (%s, frame room %u, wait fd %d)", cfg->port, cfg->netdev,
	       dp->afp.fd >= 0 ? "own packet sockets" : "DPDK", dp->data_room, dp->wait_fd);
	uroce_dp_warm(dp);
	*out = dp;
	return 0;

err_port:
	dp_capture_close(dp);
	close_port(dp);
err_pool:
	pool_put(dp->pool);
err_free:
	free(dp);
	return err;
}

void uroce_dp_close(struct uroce_dp *dp)
{
	if (!dp)
		return;
	uroce_dp_tx_flush(dp, 0);
	for (unsigned i = 0; i < dp->nloop; i++)
		rte_pktmbuf_free(dp->loop[i]);
	dp_impair_close(dp);
	dp_capture_close(dp);
	close_port(dp);
	pool_put(dp->pool);
	free(dp);
}

static bool is_own_mac(const struct uroce_dp *dp, const uint8_t *mac)
{
	return !memcmp(mac, dp->cfg.mac, 6);
}

/* Decide where one received frame goes. */
static void rx_one(struct uroce_dp *dp, const uint8_t *f, uint32_t len, uroce_dp_rx_fn fn,
		   void *arg, uint64_t now)
{
	unsigned off = 12;
	uint16_t type;

	dp_count(dp, DP_CTR_dp_rx_frames);
	if (len < 14)
		return;
	type = (uint16_t)(f[off] << 8 | f[off + 1]);
	if (type == 0x8100 && len >= 18) {
		off += 4;
		type = (uint16_t)(f[off] << 8 | f[off + 1]);
	}
	off += 2;
	if (type == 0x0806 || (type == 0x86dd && len >= off + 40 && f[off + 6] == 58)) {
		dp_neigh_rx(dp, f, len, type, off, now);
		return;
	}
	if (!is_own_mac(dp, f)) {
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
	rte_pktmbuf_free(m);
}

/* Injected receive faults hit only frames meant for this device: 1 when consumed. */
static int rx_impaired(struct uroce_dp *dp, struct rte_mbuf *m, uint64_t now)
{
	return is_own_mac(dp, rte_pktmbuf_mtod(m, const uint8_t *)) &&
	       dp_impair_frame(dp, dp->impair_rx, m, now);
}

/* A frame from the ring into an mbuf, for the fault injector to hold: NULL without mbufs. */
static struct rte_mbuf *afp_copy(struct uroce_dp *dp, const uint8_t *f, uint32_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(dp->pool);

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

/* af_packet: frames straight from their ring slot, or through an mbuf when faults are injected. */
static unsigned rx_afp(struct uroce_dp *dp, uroce_dp_rx_fn fn, void *arg, unsigned max,
		       uint64_t now)
{
	struct tpacket2_hdr *h;
	unsigned n = 0;

	while (n < max && (h = dp_afp_next(&dp->afp))) {
		uint32_t len;
		const uint8_t *f = dp_afp_frame(h, &len);

		if (likely(!dp->impair_rx)) {
			rx_one(dp, f, len, fn, arg, now);
		} else {
			struct rte_mbuf *m = afp_copy(dp, f, len);

			if (m && !rx_impaired(dp, m, now))
				rx_mbuf(dp, m, fn, arg, now);
		}
		dp_afp_release(&dp->afp, h);
		n++;
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

unsigned uroce_dp_rx(struct uroce_dp *dp, uroce_dp_rx_fn fn, void *arg, unsigned max,
		     uint64_t now)
{
	struct rte_mbuf *m[DP_BURST];
	unsigned done = 0;

	if (max > DP_BURST)
		max = DP_BURST;
	/* loopback frames first: they were sent before anything now arriving */
	while (dp->nloop && done < max) {
		struct rte_mbuf *l = dp->loop[0];

		memmove(dp->loop, dp->loop + 1, --dp->nloop * sizeof(dp->loop[0]));
		fn(arg, rte_pktmbuf_mtod(l, const uint8_t *), rte_pktmbuf_data_len(l));
		rte_pktmbuf_free(l);
		done++;
	}
	done += dp->afp.fd >= 0 ? rx_afp(dp, fn, arg, max - done, now)
			       : rx_dpdk(dp, fn, arg, max - done, now);
	if (unlikely(dp->impair_rx != NULL)) {
		unsigned late = dp_impair_release(dp->impair_rx, m, DP_BURST, now);

		for (unsigned i = 0; i < late; i++)
			rx_mbuf(dp, m[i], fn, arg, now);
		done += late;
	}
	return done;
}

int uroce_dp_tx_get(struct uroce_dp *dp, uint8_t **data, uint32_t *cap, void **cookie)
{
	struct rte_mbuf *m;

	if (dp->ntx == DP_BURST)
		uroce_dp_tx_flush(dp, 0);
	m = rte_pktmbuf_alloc(dp->pool);
	if (!m) {
		dp_count(dp, DP_CTR_dp_tx_no_mbuf);
		return -ENOBUFS;
	}
	*data = rte_pktmbuf_mtod(m, uint8_t *);
	*cap = rte_pktmbuf_tailroom(m);
	*cookie = m;
	return 0;
}

void uroce_dp_tx_put(struct uroce_dp *dp, void *cookie, uint32_t len)
{
	struct rte_mbuf *m = cookie;

	if (!len || len > rte_pktmbuf_tailroom(m)) {
		rte_pktmbuf_free(m);
		return;
	}
	m->data_len = (uint16_t)len;
	m->pkt_len = len;
	dp->tx[dp->ntx++] = m;
}

void dp_tx_raw(struct uroce_dp *dp, const uint8_t *frame, uint32_t len)
{
	uint8_t *data;
	uint32_t cap;
	void *cookie;

	if (uroce_dp_tx_get(dp, &data, &cap, &cookie))
		return;
	if (len > cap) {
		rte_pktmbuf_free(cookie);
		return;
	}
	memcpy(data, frame, len);
	uroce_dp_tx_put(dp, cookie, len);
}

unsigned uroce_dp_tx_flush(struct uroce_dp *dp, uint64_t now)
{
	struct rte_mbuf *out[DP_BURST * 2];
	unsigned n = 0, sent = 0;

	for (unsigned i = 0; i < dp->ntx; i++) {
		struct rte_mbuf *m = dp->tx[i];
		const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);

		if (dp->capture)
			dp_capture_frame(dp, f, m->data_len, now);
		if (dp->impair_tx && dp_impair_frame(dp, dp->impair_tx, m, now))
			continue; /* dropped or held back */
		if (is_own_mac(dp, f) && dp->nloop < DP_BURST) {
			dp->loop[dp->nloop++] = m;
			dp_count(dp, DP_CTR_dp_tx_loopback);
			continue;
		}
		out[n++] = m;
	}
	dp->ntx = 0;
	if (dp->impair_tx)
		n += dp_impair_release(dp->impair_tx, out + n, DP_BURST, now);
	if (!n)
		return 0;
	if (dp->afp_tx_fd >= 0) {
		sent = dp_afp_tx(dp->afp_tx_fd, out, n); /* frees them all */
	} else {
		for (int tries = 0; sent < n && tries < 8; tries++)
			sent += rte_eth_tx_burst(dp->port_id, 0, out + sent, (uint16_t)(n - sent));
		for (unsigned i = sent; i < n; i++)
			rte_pktmbuf_free(out[i]);
	}
	dp->ctr[DP_CTR_dp_tx_dropped] += n - sent;
	dp->ctr[DP_CTR_dp_tx_frames] += sent;
	return sent;
}

void uroce_dp_housekeeping(struct uroce_dp *dp)
{
	struct tpacket_stats st;
	socklen_t len = sizeof(st);

	/* frames the kernel dropped because our ring was full: reading resets them */
	if (dp->afp.fd >= 0 && !getsockopt(dp->afp.fd, SOL_PACKET, PACKET_STATISTICS, &st, &len))
		dp->ctr[DP_CTR_dp_rx_ring_drops] += st.tp_drops;
}

int uroce_dp_wait_fd(struct uroce_dp *dp)
{
	return dp->wait_fd;
}

unsigned uroce_dp_counters(const struct uroce_dp *dp, const char *const **names,
			   const uint64_t **values)
{
	*names = uroce_dp_counter_names;
	*values = dp->ctr;
	return DP_CTR_COUNT;
}
