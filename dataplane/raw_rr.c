/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The raw request/response latency of a wire: a ping-pong of small
 * Ethernet frames between two processes moving packets the way uroce does,
 * both busy-polling, nothing above. It is the floor under ib_write_lat on
 * that wire, as testpmd's txonly -> rxonly rate is the ceiling over
 * ib_write_bw (tools/raw_ceiling.sh).
 *   raw_rr EAL_ARGS -- [-a IFACE] -s  answer every frame of ours
 *   raw_rr EAL_ARGS -- [-a IFACE] -c N [SIZE [FRAMES]]
 *                                     N round trips; prints median, average, p99 in us
 * -a: over af_packet on IFACE through uroce's own packet sockets (afp_rx.c,
 * afp_tx.c), received frames copied into mbufs; without it, through the
 * DPDK port the EAL arguments name (--vdev).
 * FRAMES (default 1) frames leave in one burst each way, and a round trip
 * ends when all have come back: a RoCE request travels with the ACK of the
 * peer's last one, two frames in one burst.
 * Frames go to the broadcast address with a local experimental EtherType,
 * which the kernel ignores.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "afp_rx.h"
#include "afp_tx.h"

#define ETHERTYPE_RR 0x88b5
#define RING 512
#define WARMUP 1000
#define MAX_FRAMES 8
#define BYE_OFF 14 /* first payload byte: nonzero in the client's last frame */
#define GIVE_UP_NS 1000000000ull /* a lost frame: send the next one */

/* -a: our own packet sockets, to receive and to send */
static struct dp_afp_ring ring = {.fd = -1};
static struct dp_afp_tx tx = {.fd = -1, .gso_fd = -1};
static struct rte_mempool *pool;

/* Send m[0..n), all of them (the PMD's ring) or as many as the socket takes. */
static void send_all(uint16_t port, struct rte_mbuf **m, uint16_t n)
{
	if (tx.fd >= 0) {
		dp_afp_tx(&tx, m, n, NULL); /* copies them out */
		rte_pktmbuf_free_bulk(m, n);
		return;
	}
	for (uint16_t sent = 0; sent < n;)
		sent += rte_eth_tx_burst(port, 0, m + sent, (uint16_t)(n - sent));
}

/* Up to `max` frames received, in mbufs. */
static uint16_t rx_burst(uint16_t port, struct rte_mbuf **m, uint16_t max)
{
	struct tpacket2_hdr *h;
	uint16_t n = 0;

	if (ring.fd < 0)
		return rte_eth_rx_burst(port, 0, m, max);
	while (n < max && (h = dp_afp_next(&ring))) {
		uint32_t len;
		const uint8_t *f = dp_afp_frame(h, &len);
		struct rte_mbuf *b = rte_pktmbuf_alloc(pool);

		if (b && len <= rte_pktmbuf_tailroom(b)) {
			memcpy(rte_pktmbuf_append(b, (uint16_t)len), f, len);
			m[n++] = b;
		} else if (b) {
			rte_pktmbuf_free(b);
		}
		dp_afp_release(&ring, h);
	}
	return n;
}

/* -a IFACE: open both sockets; 0 or -errno. */
static int open_sockets(const char *iface, uint8_t mac[6])
{
	struct ifreq ifr = {0};
	int err = dp_afp_ring_open(&ring, iface, 2048, 512, NULL);

	if (err)
		return err;
	err = dp_afp_tx_open(&tx, iface, 2048, false);
	if (err)
		return err;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", iface);
	if (!ioctl(tx.fd, SIOCGIFHWADDR, &ifr))
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static bool is_ours(struct rte_mbuf *m)
{
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);

	return m->data_len > BYE_OFF && f[12] == ETHERTYPE_RR >> 8 &&
	       f[13] == (ETHERTYPE_RR & 0xff);
}

static bool is_bye(struct rte_mbuf *m)
{
	return rte_pktmbuf_mtod(m, const uint8_t *)[BYE_OFF] != 0;
}

/* Echo until the client says goodbye: memif's PMD must not be polled
 * while its peer tears the rings down, so the server stops first. */
static void serve(uint16_t port)
{
	struct rte_mbuf *m[32];
	bool bye = false;

	while (!bye) {
		uint16_t n = rx_burst(port, m, 32), k = 0;

		for (uint16_t i = 0; i < n; i++) {
			if (is_ours(m[i]) && !(bye |= is_bye(m[i])))
				m[k++] = m[i];
			else
				rte_pktmbuf_free(m[i]);
		}
		send_all(port, m, k);
	}
}

/* One round trip of `frames` frames; 0 if the answers never all came. */
static uint64_t round_trip(uint16_t port, const uint8_t *frame,
			   uint16_t size, unsigned frames)
{
	struct rte_mbuf *m[MAX_FRAMES], *in[32];
	unsigned got = 0;
	uint64_t t0;

	if (rte_pktmbuf_alloc_bulk(pool, m, frames))
		return 0;
	for (unsigned i = 0; i < frames; i++)
		memcpy(rte_pktmbuf_append(m[i], size), frame, size);
	t0 = now_ns();
	send_all(port, m, (uint16_t)frames);
	for (;;) {
		uint16_t n = rx_burst(port, in, 32);

		for (uint16_t i = 0; i < n; i++) {
			got += is_ours(in[i]);
			rte_pktmbuf_free(in[i]);
		}
		if (got >= frames)
			return now_ns() - t0;
		if (now_ns() - t0 > GIVE_UP_NS)
			return 0;
	}
}

static void send_bye(uint16_t port, const uint8_t *frame, uint16_t size)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);

	if (!m)
		return;
	memcpy(rte_pktmbuf_append(m, size), frame, size);
	send_all(port, &m, 1);
}

static int client(uint16_t port, const uint8_t mac[6], unsigned n, uint16_t size,
		  unsigned frames)
{
	uint64_t *rtt = calloc(n, sizeof(*rtt)), sum = 0;
	uint8_t frame[1514] = {0};
	unsigned got = 0;

	if (!rtt)
		return 1;
	memset(frame, 0xff, 6);
	memcpy(frame + 6, mac, 6);
	frame[12] = ETHERTYPE_RR >> 8;
	frame[13] = ETHERTYPE_RR & 0xff;
	for (unsigned i = 0; i < WARMUP; i++)
		round_trip(port, frame, size, frames);
	for (unsigned i = 0; i < n; i++) {
		uint64_t t = round_trip(port, frame, size, frames);

		if (t) {
			rtt[got++] = t;
			sum += t;
		}
	}
	frame[BYE_OFF] = 1;
	send_bye(port, frame, size);
	if (!got) {
		fprintf(stderr, "raw_rr: no answers\n");
		return 1;
	}
	qsort(rtt, got, sizeof(*rtt), cmp_u64);
	printf("raw_rr %u round trips of %u x %u-byte frames (%u lost): median %.2f us, "
	       "average %.2f us, p99 %.2f us\n",
	       got, frames, size, n - got, rtt[got / 2] / 1e3, (double)sum / got / 1e3,
	       rtt[(size_t)(got * 0.99)] / 1e3);
	free(rtt);
	return 0;
}

/* The DPDK port the EAL arguments named: 0 or -1. */
static int start_port(uint16_t port, uint8_t mac[6])
{
	struct rte_eth_conf conf = {0};
	struct rte_ether_addr addr;

	if (!rte_eth_dev_count_avail()) {
		fprintf(stderr, "raw_rr: no port (--vdev) and no -a\n");
		return -1;
	}
	if (rte_eth_dev_configure(port, 1, 1, &conf) ||
	    rte_eth_rx_queue_setup(port, 0, RING, rte_socket_id(), NULL, pool) ||
	    rte_eth_tx_queue_setup(port, 0, RING, rte_socket_id(), NULL) ||
	    rte_eth_dev_start(port)) {
		fprintf(stderr, "raw_rr: cannot set up the port\n");
		return -1;
	}
	rte_eth_macaddr_get(port, &addr);
	memcpy(mac, addr.addr_bytes, 6);
	return 0;
}

int main(int argc, char **argv)
{
	uint16_t port = 0, size = 64;
	int used = rte_eal_init(argc, argv);
	unsigned n = 0, frames = 1;
	const char *iface = NULL;
	uint8_t mac[6] = {0};

	if (used < 0) {
		fprintf(stderr, "raw_rr: EAL init failed\n");
		return 1;
	}
	argc -= used;
	argv += used;
	if (argc > 3 && !strcmp(argv[1], "-a")) {
		iface = argv[2];
		argc -= 2;
		argv += 2;
	}
	if (argc < 2 || (strcmp(argv[1], "-s") && (strcmp(argv[1], "-c") || argc < 3))) {
		fprintf(stderr, "usage: raw_rr EAL_ARGS -- [-a IFACE] -s | -c N [SIZE [FRAMES]]\n");
		return 2;
	}
	if (!strcmp(argv[1], "-c")) {
		n = (unsigned)strtoul(argv[2], NULL, 0);
		if (argc > 3)
			size = (uint16_t)strtoul(argv[3], NULL, 0);
		if (argc > 4)
			frames = (unsigned)strtoul(argv[4], NULL, 0);
		if (size < 60 || size > 1514 || !n || !frames || frames > MAX_FRAMES) {
			fprintf(stderr, "raw_rr: N > 0, 60 <= SIZE <= 1514, 1 <= FRAMES <= %d\n",
				MAX_FRAMES);
			return 2;
		}
	}
	pool = rte_pktmbuf_pool_create("rr", 4095, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
	if (!pool) {
		fprintf(stderr, "raw_rr: no mbufs\n");
		return 1;
	}
	if (iface) {
		int err = open_sockets(iface, mac);

		if (err) {
			fprintf(stderr, "raw_rr: no packet sockets on %s: %s\n", iface,
				strerror(-err));
			return 1;
		}
	} else if (start_port(port, mac)) {
		return 1;
	}
	if (!n) {
		serve(port);
		if (!iface)
			rte_eth_dev_stop(port);
		return 0;
	}
	return client(port, mac, n, size, frames);
}
