/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The raw throughput of af_packet moved the way uroce moves it: a sender
 * that hands the kernel flushes of RoCE-shaped frames on uroce's own
 * sockets (afp_tx.c: a run of frames to one QP goes as one batch for the
 * kernel's UDP segmentation, udp_gso.c), and a receiver that reads them
 * from uroce's ring (afp_rx.c, the same slots and depth) and cuts every
 * batch back into its frames. Nothing above: no engine, no ICRC, no
 * memory registration. It is the ceiling over ib_write_bw and ib_send_bw
 * on the wire (tools/bench), beside testpmd's af_packet PMD, which moves
 * one frame per kernel pass and which uroce beats.
 *
 * The sender keeps at most WINDOW frames ahead of what the receiver has
 * counted, which the receiver publishes in a shared file, as RC's window
 * keeps uroce's sender. Unpaced, it sent twice what the receiver could
 * take and the receiver's socket dropped the rest (2 s of 4154-byte
 * frames, both ends unpinned: 4.13 M sent, 1.87 M received, 176,129
 * batches lost; paced: 2.26 M, 1.86 M, 31,040): the receiving rate was
 * the same, the sender's CPU went to frames nobody got.
 *   raw_bw EAL_ARGS -- -t IFACE SIZE SECONDS SHM   send SIZE-byte frames
 *   raw_bw EAL_ARGS -- -r IFACE SECONDS SHM        receive; a line per second,
 *                       "rx frames F bytes B", and at the end "rx total F
 *                       bytes B batches_lost L ring_drops D" (the kernel's)
 * Frames go from 198.18.0.1 to 198.18.0.2 (RFC 2544's benchmark range),
 * UDP port 4791, to a MAC no interface has, as testpmd's txonly sends
 * them: the receiving kernel drops them before its IP layer.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <linux/if_packet.h>
#include <net/if.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_mbuf.h>

#include "afp_rx.h"
#include "afp_tx.h"
#include "dataplane.h"
#include "udp_gso.h"

#define FLUSH 64	  /* frames per send: uroce's receive and transmit burst (DP_BURST) */
#define RING_SLOTS 4096u /* uroce's receive ring (AFP_FRAMECNT in port.c) */
#define HDR (14 + 20 + 8) /* Ethernet, IPv4, UDP */
#define BTH_LEN 12
#define WINDOW 1024u /* frames in flight: well within the receiver's ring and socket */
#define STALL_NS 2000000ull /* no progress for this long: frames were lost, go on */

static volatile sig_atomic_t stop;

/* The receiver's count of frames taken, in a file both map (/dev/shm). */
static uint64_t *shared_count(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT, 0600);
	void *p;

	if (fd < 0 || ftruncate(fd, 4096)) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/*
 * A RoCEv2 RDMA WRITE Middle packet of `size` bytes to QP 0xfff011, as
 * uroce frames one. The QP is in the last block of QP numbers, which no
 * program holds: a device on the receiving interface (whose housekeeper
 * takes block 0, QPs 0-4095) must not have the kernel copy every batch
 * into its own socket too, which halved the rate.
 */
static void build_frame(uint8_t *f, uint16_t size, const uint8_t src_mac[6])
{
	static const uint8_t dst_mac[6] = {0x02, 0, 0, 0, 0, 0x01};
	uint8_t *ip = f + 14, *udp = ip + 20, *bth = udp + 8;

	memset(f, 0, size);
	memcpy(f, dst_mac, 6);
	memcpy(f + 6, src_mac, 6);
	put16(f + 12, 0x0800);
	ip[0] = 0x45;
	put16(ip + 2, (uint16_t)(size - 14));
	put16(ip + 6, 0x4000); /* don't fragment, as RoCE sends */
	ip[8] = 64;
	ip[9] = 17;
	memcpy(ip + 12, (const uint8_t[]){198, 18, 0, 1}, 4);
	memcpy(ip + 16, (const uint8_t[]){198, 18, 0, 2}, 4);
	put16(udp, 0xc000);
	put16(udp + 2, 4791);
	put16(udp + 4, (uint16_t)(size - 14 - 20));
	bth[0] = 0x07; /* RC RDMA WRITE Middle */
	put16(bth + 2, 0xffff);
	bth[5] = 0xff; /* destination QP */
	bth[6] = 0xf0;
	bth[7] = 0x11;
}

static int sender(const char *iface, uint16_t size, unsigned secs, uint64_t *taken)
{
	struct rte_mempool *pool =
	    rte_pktmbuf_pool_create("bw", 255, 0, 0, RTE_PKTMBUF_HEADROOM + UROCE_DP_ROCE_FRAME_ROOM,
				    rte_socket_id());
	struct dp_afp_tx tx = {.fd = -1, .gso_fd = -1};
	struct rte_mbuf *m[FLUSH];
	struct ifreq ifr = {0};
	uint64_t sent = 0, batched = 0, end, base = 0, last_taken = 0, stalled = 0;
	uint16_t id = 0;
	uint32_t psn = 0;
	int err;

	if (!pool || rte_pktmbuf_alloc_bulk(pool, m, FLUSH)) {
		fprintf(stderr, "raw_bw: no mbufs\n");
		return 1;
	}
	err = dp_afp_tx_open(&tx, iface, UROCE_DP_ROCE_FRAME_ROOM, true);
	if (err) {
		fprintf(stderr, "raw_bw: no packet socket on %s: %s\n", iface, strerror(-err));
		return 1;
	}
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", iface);
	if (ioctl(tx.fd, SIOCGIFHWADDR, &ifr)) {
		fprintf(stderr, "raw_bw: no MAC for %s\n", iface);
		return 1;
	}
	for (unsigned i = 0; i < FLUSH; i++)
		build_frame((uint8_t *)rte_pktmbuf_append(m[i], size), size,
			    (const uint8_t *)ifr.ifr_hwaddr.sa_data);
	end = now_ns() + (uint64_t)secs * 1000000000ull;
	while (!stop && now_ns() < end) {
		uint64_t t = __atomic_load_n(taken, __ATOMIC_ACQUIRE), now = now_ns();
		unsigned b = 0, n;

		if (t != last_taken) {
			last_taken = t;
			stalled = now;
		}
		if (sent - base > t + WINDOW) {
			if (!stalled)
				stalled = now;
			if (now - stalled < STALL_NS)
				continue;
			base = sent - t; /* frames lost on the way: count from here */
			stalled = now;
		}

		/* what the kernel rewrites per segment counts up from the lead's */
		for (unsigned i = 0; i < FLUSH; i++) {
			uint8_t *f = rte_pktmbuf_mtod(m[i], uint8_t *);

			put16(f + 14 + 4, id++);
			put16(f + HDR + 9, (uint16_t)(psn >> 8));
			f[HDR + 11] = (uint8_t)psn++;
		}
		n = dp_afp_tx(&tx, m, FLUSH, &b);
		sent += n;
		batched += b;
	}
	printf("tx frames %llu batched %llu\n", (unsigned long long)sent,
	       (unsigned long long)batched);
	dp_afp_tx_close(&tx);
	return 0;
}

/* One of our frames (or batches): IPv4 UDP to 198.18.0.2 port 4791. The
 * link's own (IPv6 ND and MLD as it comes up) are not counted. */
static bool is_ours(const uint8_t *f, uint32_t len)
{
	return len > HDR && f[12] == 0x08 && f[13] == 0x00 && f[14 + 9] == 17 &&
	       !memcmp(f + 14 + 16, (const uint8_t[]){198, 18, 0, 2}, 4) && f[HDR - 6] == 4791 >> 8 &&
	       f[HDR - 5] == (4791 & 0xff);
}

/* Frames and bytes in one received slot, batches cut as uroce cuts them. */
static void count_slot(struct dp_afp_ring *r, struct tpacket2_hdr *h, uint64_t *frames,
		       uint64_t *bytes, uint64_t *lost)
{
	uint32_t len, slen;
	uint16_t gso;
	uint8_t *f = dp_afp_frame_gso(r, h, &len, &gso), *s;
	struct dp_gso_cut cut;

	if (!f) {
		(*lost)++;
		return;
	}
	if (!is_ours(f, len))
		return;
	if (!gso || dp_gso_cut_start(&cut, f, len, gso)) {
		(*frames)++;
		*bytes += len;
		return;
	}
	while ((s = dp_gso_cut_next(&cut, &slen))) {
		(*frames)++;
		*bytes += slen;
	}
}

static int receiver(const char *iface, unsigned secs, uint64_t *taken)
{
	struct dp_afp_ring ring;
	struct tpacket_stats st = {0};
	socklen_t stlen = sizeof(st);
	uint64_t frames = 0, bytes = 0, lost = 0, total = 0, total_bytes = 0, shown = 0, t, next, end;
	int err = dp_afp_ring_open(&ring, iface, UROCE_DP_ROCE_FRAME_ROOM, RING_SLOTS, NULL);

	if (err) {
		fprintf(stderr, "raw_bw: no receive ring on %s: %s\n", iface, strerror(-err));
		return 1;
	}
	printf("rx ready\n");
	fflush(stdout);
	t = now_ns();
	next = t + 1000000000ull;
	end = t + (uint64_t)secs * 1000000000ull;
	while (!stop && t < end) {
		struct tpacket2_hdr *h;

		for (unsigned n = 0; n < FLUSH && (h = dp_afp_next(&ring)); n++) {
			count_slot(&ring, h, &frames, &bytes, &lost);
			dp_afp_release(&ring, h);
		}
		/* only when it moved: each store takes the line from the sender's cache */
		if (total + frames != shown) {
			shown = total + frames;
			__atomic_store_n(taken, shown, __ATOMIC_RELEASE);
		}
		t = now_ns();
		if (t >= next) {
			printf("rx frames %llu bytes %llu\n", (unsigned long long)frames,
			       (unsigned long long)bytes);
			fflush(stdout);
			total += frames;
			total_bytes += bytes;
			frames = bytes = 0;
			next += 1000000000ull;
		}
	}
	getsockopt(ring.fd, SOL_PACKET, PACKET_STATISTICS, &st, &stlen);
	printf("rx total %llu bytes %llu batches_lost %llu ring_drops %u\n",
	       (unsigned long long)(total + frames), (unsigned long long)(total_bytes + bytes),
	       (unsigned long long)lost, st.tp_drops);
	dp_afp_ring_close(&ring);
	return 0;
}

int main(int argc, char **argv)
{
	int used = rte_eal_init(argc, argv);
	unsigned long size = 0, secs = 0;
	uint64_t *taken;

	if (used < 0) {
		fprintf(stderr, "raw_bw: EAL init failed\n");
		return 1;
	}
	argc -= used;
	argv += used;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (argc == 6 && !strcmp(argv[1], "-t")) {
		size = strtoul(argv[3], NULL, 0);
		secs = strtoul(argv[4], NULL, 0);
		taken = shared_count(argv[5]);
		if (size >= HDR + BTH_LEN + 4 && size <= UROCE_DP_ROCE_FRAME_ROOM - 64 && secs && taken)
			return sender(argv[2], (uint16_t)size, (unsigned)secs, taken);
	} else if (argc == 5 && !strcmp(argv[1], "-r")) {
		secs = strtoul(argv[3], NULL, 0);
		taken = shared_count(argv[4]);
		if (secs && taken) {
			*taken = 0;
			return receiver(argv[2], (unsigned)secs, taken);
		}
	}
	fprintf(stderr, "usage: raw_bw EAL_ARGS -- -t IFACE SIZE SECONDS SHM | -r IFACE SECONDS SHM\n"
			"  (%d <= SIZE <= %u)\n",
		HDR + BTH_LEN + 4, UROCE_DP_ROCE_FRAME_ROOM - 64);
	return 2;
}
