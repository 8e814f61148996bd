/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The raw request/response latency of a wire: a ping-pong of small
 * Ethernet frames between two DPDK processes on the same PMD uroce uses,
 * both busy-polling, nothing above the PMD. It is the floor under
 * ib_write_lat on that wire, as testpmd's txonly -> rxonly rate is the
 * ceiling over ib_write_bw (tools/raw_ceiling.sh).
 *   raw_rr EAL_ARGS -- [-t IFACE] -s  answer every frame of ours
 *   raw_rr EAL_ARGS -- [-t IFACE] -c N [SIZE [FRAMES]]
 *                                     N round trips; prints median, average, p99 in us
 * -t: transmit on a packet socket of our own on IFACE, as uroce does over
 * af_packet with UROCE_AFP_TX_SOCKET=1 (afp_tx.c), not through the PMD's
 * TX ring.
 * FRAMES (default 1) frames leave in one burst each way, and a round trip
 * ends when all have come back: a RoCE request travels with the ACK of the
 * peer's last one, two frames in one burst.
 * The EAL arguments name one port (--vdev). Frames go to the broadcast
 * address with a local experimental EtherType, which the kernel ignores.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "afp_tx.h"

#define ETHERTYPE_RR 0x88b5
#define RING 512
#define WARMUP 1000
#define MAX_FRAMES 8
#define BYE_OFF 14 /* first payload byte: nonzero in the client's last frame */
#define GIVE_UP_NS 1000000000ull /* a lost frame: send the next one */

static int tx_fd = -1; /* -t: our own packet socket */

/* Send m[0..n), all of them (the PMD's ring) or as many as the socket takes. */
static void send_all(uint16_t port, struct rte_mbuf **m, uint16_t n)
{
	if (tx_fd >= 0) {
		dp_afp_tx(tx_fd, m, n);
		return;
	}
	for (uint16_t sent = 0; sent < n;)
		sent += rte_eth_tx_burst(port, 0, m + sent, (uint16_t)(n - sent));
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
		uint16_t n = rte_eth_rx_burst(port, 0, m, 32), k = 0;

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
static uint64_t round_trip(uint16_t port, struct rte_mempool *pool, const uint8_t *frame,
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
		uint16_t n = rte_eth_rx_burst(port, 0, in, 32);

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

static void send_bye(uint16_t port, struct rte_mempool *pool, const uint8_t *frame, uint16_t size)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);

	if (!m)
		return;
	memcpy(rte_pktmbuf_append(m, size), frame, size);
	send_all(port, &m, 1);
}

static int client(uint16_t port, struct rte_mempool *pool, unsigned n, uint16_t size,
		  unsigned frames)
{
	uint64_t *rtt = calloc(n, sizeof(*rtt)), sum = 0;
	uint8_t frame[1514] = {0};
	struct rte_ether_addr mac;
	unsigned got = 0;

	if (!rtt)
		return 1;
	memset(frame, 0xff, 6);
	rte_eth_macaddr_get(port, &mac);
	memcpy(frame + 6, mac.addr_bytes, 6);
	frame[12] = ETHERTYPE_RR >> 8;
	frame[13] = ETHERTYPE_RR & 0xff;
	for (unsigned i = 0; i < WARMUP; i++)
		round_trip(port, pool, frame, size, frames);
	for (unsigned i = 0; i < n; i++) {
		uint64_t t = round_trip(port, pool, frame, size, frames);

		if (t) {
			rtt[got++] = t;
			sum += t;
		}
	}
	frame[BYE_OFF] = 1;
	send_bye(port, pool, frame, size);
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

int main(int argc, char **argv)
{
	struct rte_eth_conf conf = {0};
	struct rte_mempool *pool;
	uint16_t port = 0, size = 64;
	int used = rte_eal_init(argc, argv);
	unsigned n = 0, frames = 1;

	if (used < 0) {
		fprintf(stderr, "raw_rr: EAL init failed\n");
		return 1;
	}
	argc -= used;
	argv += used;
	if (argc > 3 && !strcmp(argv[1], "-t")) {
		tx_fd = dp_afp_tx_open(argv[2]);
		if (tx_fd < 0) {
			fprintf(stderr, "raw_rr: no packet socket on %s: %s\n", argv[2],
				strerror(-tx_fd));
			return 1;
		}
		argc -= 2;
		argv += 2;
	}
	if (argc < 2 || (strcmp(argv[1], "-s") && (strcmp(argv[1], "-c") || argc < 3))) {
		fprintf(stderr, "usage: raw_rr EAL_ARGS -- [-t IFACE] -s | -c N [SIZE [FRAMES]]\n");
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
	if (!rte_eth_dev_count_avail()) {
		fprintf(stderr, "raw_rr: no port (--vdev)\n");
		return 1;
	}
	pool = rte_pktmbuf_pool_create("rr", 4095, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
	if (!pool || rte_eth_dev_configure(port, 1, 1, &conf) ||
	    rte_eth_rx_queue_setup(port, 0, RING, rte_socket_id(), NULL, pool) ||
	    rte_eth_tx_queue_setup(port, 0, RING, rte_socket_id(), NULL) ||
	    rte_eth_dev_start(port)) {
		fprintf(stderr, "raw_rr: cannot set up the port\n");
		return 1;
	}
	if (!n) {
		serve(port);
		rte_eth_dev_stop(port);
		return 0;
	}
	return client(port, pool, n, size, frames);
}
