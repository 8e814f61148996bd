/* SPDX-License-Identifier: BSD-2-Clause */
/* The dataplane's internals: one port per opened device. Only dataplane/ includes DPDK. */
#ifndef UROCE_DP_INTERNAL_H
#define UROCE_DP_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include "afp_rx.h"
#include "afp_tx.h"
#include "dataplane.h"
#include "frames.h"
#include "memif.h"
#include "peer_loop.h"
#include "peer_wait.h"

#define DP_BURST 64
#define DP_NEIGH_SLOTS 16 /* memif slots the engine's frames leave to ARP and ND (port.c) */
/* Loopback frames in flight: a few transmit passes' worth, as a port's ring
 * holds frames its reader has not taken yet. */
#define DP_LOOP_SLOTS 1024
#define DP_NEIGH_MAX 256

#include "dp_counters.h"

enum dp_neigh_state {
	DP_NEIGH_FREE = 0,
	DP_NEIGH_PENDING,
	DP_NEIGH_REACHABLE,
	DP_NEIGH_FAILED,
};

struct dp_neigh {
	uint8_t gid[16];
	uint8_t mac[6];
	uint8_t state;
	uint8_t tries;
	uint64_t last_ns; /* last request sent, or when it failed */
};

struct dp_impair;
struct dp_capture;

/* Who moves the frames: our own af_packet sockets, our own memif, or a DPDK port. */
enum dp_port_kind {
	DP_PORT_AFP,
	DP_PORT_MEMIF,
	DP_PORT_DPDK,
};

struct uroce_dp {
	struct uroce_dp_config cfg;
	enum dp_port_kind kind;
	char vdev_name[64];
	char pci_name[64];
	uint16_t port_id;
	struct rte_mempool *pool;  /* a DPDK port's mbufs, or NULL */
	struct dp_frames frames;   /* or our own (frames.h) */
	int wait_fd;            /* the socket to sleep on, or -1 */
	struct dp_afp_ring afp; /* af_packet: our own socket and ring to receive (afp_rx.c) */
	struct dp_afp_tx afp_tx; /* af_packet: our own socket and ring to transmit (afp_tx.c) */
	struct dp_memif memif;  /* memif: our own end of the link (memif.h) */
	bool memif_direct;      /* frames are built in memif's ring (uroce_dp_tx_get) */
	bool port_down;         /* the device's port is down (its daemon gone): nothing flows */
	uint64_t last_rx_ns;    /* memif: when frames last came (uroce_dp_arm_wakeup) */
	bool xsk;               /* wait_fd is an AF_XDP socket (af_xdp's PMD's) */
	uint64_t xsk_drops;     /* its drops counted so far: the kernel never resets them */
	uint64_t real_ahead_ns; /* af_packet: CLOCK_REALTIME less CLOCK_MONOTONIC (rx_wait.h) */
	bool warm;              /* the rings' pages were touched (warm.c) */
	uint32_t data_room;

	struct rte_mbuf *tx[DP_BURST];
	unsigned ntx;
	/* frames to our own MAC (one context's QP to another's), received
	 * on the next passes: a ring, oldest at loop_head */
	struct rte_mbuf *loop[DP_LOOP_SLOTS];
	unsigned loop_head, nloop;
	struct dp_peer_loop peer; /* frames to and from other processes' QPs */
	/* frames for other processes that their sockets had no room for yet:
	 * a queue per destination, DP_LOOP_SLOTS frames at most (peer_wait.h) */
	struct dp_peer_wait peer_wait;
	unsigned block_shift;     /* a QP number's block: number >> block_shift */

	struct dp_neigh neigh[DP_NEIGH_MAX];
	struct dp_impair *impair_tx; /* injected faults on transmit, or NULL */
	struct dp_impair *impair_rx; /* and on receive */
	struct dp_capture *capture;
	uint64_t *ctr;          /* cfg.counters, or own_ctr */
	uint64_t own_ctr[DP_CTR_COUNT];
	void (*neigh_seen)(void *arg, const uint8_t *f, uint32_t len); /* the daemon's switch */
	void *neigh_arg;

	/* pass-through, a program's side (pass_through.c) */
	bool attached;		/* memif to the device daemon */
	bool borrowing;		/* memif is the daemon's wire, lent to us; */
	struct dp_memif attach; /* ...our attachment meanwhile */
	struct dp_memif loan;	/* a loan of the wire, as it arrives */
	bool loan_ready;	/* it arrived whole */
	/* loans are numbered by the daemon; and the attachment's connection
	 * each came on (memif.h lost): another daemon's loans are void */
	uint32_t loan_gen, loan_conn; /* the loan arriving or ready */
	uint32_t held_gen, held_conn; /* the loan borrowed */
	uint32_t recall_gen;	      /* to give back (asked, or refused), 0: none */
	uint32_t seen_conn;	      /* the attachment's connection recall_gen is of */
};

static inline void dp_count(struct uroce_dp *dp, enum dp_counter c)
{
	dp->ctr[c]++;
}

/* Whether a frame's destination (or any address) is this port's MAC. */
static inline bool dp_is_own_mac(const struct uroce_dp *dp, const uint8_t *mac)
{
	return !memcmp(mac, dp->cfg.mac, 6);
}

/* A frame buffer of the port's kind, NULL when all are in use; and back. */
static inline struct rte_mbuf *dp_frame_alloc(struct uroce_dp *dp)
{
	return dp->pool ? rte_pktmbuf_alloc(dp->pool) : dp_frames_get(&dp->frames);
}

static inline void dp_frame_free(struct uroce_dp *dp, struct rte_mbuf *m)
{
	if (dp->pool)
		rte_pktmbuf_free(m);
	else
		dp_frames_put(&dp->frames, m);
}

int dp_eal_start(const struct uroce_dp_config *cfg);
/* Touch the port's receive ring (af_packet) once, at open: tens of milliseconds. */
void dp_warm(struct uroce_dp *dp);
void dp_log(struct uroce_dp *dp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* port.c */
/* A frame read in place from a ring: to the engine, or to the fault injector in a copy. */
void dp_rx_in_place(struct uroce_dp *dp, const uint8_t *f, uint32_t len, uroce_dp_rx_fn fn,
		    void *arg, uint64_t now);
/* ARP, or ICMPv6 (neighbour discovery); *l3off its header's offset */
static inline bool dp_frame_neigh(const uint8_t *f, uint32_t len, uint16_t *type, unsigned *l3off)
{
	unsigned off = 12;
	uint16_t t;

	if (len < 14)
		return false;
	t = (uint16_t)(f[off] << 8 | f[off + 1]);
	if (t == 0x8100 && len >= 18) {
		off += 4;
		t = (uint16_t)(f[off] << 8 | f[off + 1]);
	}
	off += 2;
	*type = t;
	*l3off = off;
	return t == 0x0806 || (t == 0x86dd && len >= off + 40 && f[off + 6] == 58);
}

static inline bool dp_frame_is_neigh(const uint8_t *f, uint32_t len)
{
	uint16_t type;
	unsigned off;

	return dp_frame_neigh(f, len, &type, &off);
}

/* pass_through.c: a program's side of pass-through, for port.c */
void dp_pt_init(struct uroce_dp *dp);
/* A daemon's program: the attachment's upkeep, the wire borrowed or given
 * back as the daemon asks, and while borrowing the attachment's frames
 * (relays for the wire, frames switched to us). */
unsigned dp_pt_rx(struct uroce_dp *dp, uroce_dp_rx_fn fn, void *arg, unsigned max, uint64_t now);
/* A frame from memif: true when it went elsewhere (relayed), not to us. */
bool dp_pt_frame(struct uroce_dp *dp, const uint8_t *f, uint32_t len);
/* The attachment's interrupt too, while borrowing: -EAGAIN when frames came. */
int dp_pt_arm(struct uroce_dp *dp);
void dp_pt_disarm(struct uroce_dp *dp);
/* The progress thread woke on the loopback's epoll set (the attachment's fds are there). */
void dp_pt_woken(struct uroce_dp *dp);
void dp_pt_close(struct uroce_dp *dp);

/* neigh.c */
/* A RoCEv2 frame's destination QP (BTH), 0 for any other frame. */
uint32_t dp_frame_dqpn(const uint8_t *f, uint32_t len);
void dp_neigh_rx(struct uroce_dp *dp, const uint8_t *f, uint32_t len, uint16_t ethertype,
		 unsigned l3off, uint64_t now);
/* Queue a frame built by the dataplane itself (ARP/ND). */
void dp_tx_raw(struct uroce_dp *dp, const uint8_t *frame, uint32_t len);

/* capture.c */
int dp_capture_open(struct uroce_dp *dp, const char *path);
void dp_capture_frame(struct uroce_dp *dp, const uint8_t *frame, uint32_t len, uint64_t now);
void dp_capture_close(struct uroce_dp *dp);

/* impair.c */
int dp_impair_open(struct uroce_dp *dp, const char *spec, uint64_t seed);
void dp_impair_close(struct uroce_dp *dp);
/* Apply one direction's impairments: 0 to pass the frame on, 1 when consumed (dropped or held). */
int dp_impair_frame(struct uroce_dp *dp, struct dp_impair *im, struct rte_mbuf *m, uint64_t now);
/* Frames held back (reordered, duplicated) whose time has come; now 0 releases all. */
unsigned dp_impair_release(struct dp_impair *im, struct rte_mbuf **out, unsigned max, uint64_t now);

#endif
