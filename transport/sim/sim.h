/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A deterministic discrete-event network simulator that hosts the uroce
 * transport engine. Virtual time is in picoseconds; the engine sees
 * nanoseconds. Hosts connect to one output-queued switch through links with
 * a rate, a propagation delay and impairments (Bernoulli or Gilbert-Elliott
 * loss, reordering, duplication, ECN CE marking). Every random decision
 * comes from generators seeded from one seed, so a run repeats bit for bit.
 */
#ifndef UR_SIM_H
#define UR_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"

#define SIM_PS_PER_NS 1000ull
#define SIM_PS_PER_US 1000000ull
#define SIM_PS_PER_S 1000000000000ull
/* Preamble, start delimiter, FCS and inter-frame gap: bytes a frame costs beyond its data. */
#define SIM_WIRE_OVERHEAD 24

struct sim;
struct sim_node;
struct sim_port;

/* What a link does to the packets that cross it. */
struct sim_impair {
	double loss;           /* Bernoulli drop probability */
	double ge_p_gb;        /* Gilbert-Elliott: good -> bad per packet (0 = off) */
	double ge_p_bg;        /* bad -> good per packet */
	double ge_loss_bad;    /* drop probability in the bad state */
	double ge_loss_good;   /* drop probability in the good state */
	double reorder;        /* probability a packet is held back... */
	uint32_t reorder_depth; /* ...by this many packet times */
	double dup;            /* probability a packet is delivered twice */
	double ce;             /* probability an ECN-capable packet gets CE */
	uint64_t drop_nth;     /* drop exactly the Nth packet (1-based) on this link, 0 = off */
	uint64_t drop_every;   /* with drop_nth: and every drop_every packets after it */
	bool drop_all;         /* a dead link */
	uint32_t drop_psn;     /* drop the request packets with this PSN... */
	uint32_t drop_psn_times; /* ...the first this many times each is set (0 = off) */
	/* a test's own choice: drop the RoCE packets whose BTH (12 bytes on) it names */
	bool (*drop_bth)(const uint8_t *bth, uint32_t len, void *arg);
	void *drop_arg;
	/* ...and those it holds back by hold_ps (a late packet, not a lost one) */
	bool (*hold_bth)(const uint8_t *bth, uint32_t len, void *arg);
	void *hold_arg;
	uint64_t hold_ps;
};

struct sim_link_cfg {
	uint64_t rate_bps;
	uint64_t prop_ps;
	struct sim_impair impair;
};

/*
 * The switch port a host is attached to: its output queue toward the host
 * (shared by every flow to that host) and, for PFC, its ingress from it.
 */
struct sim_queue_cfg {
	uint64_t buffer_bytes;  /* drop-tail beyond this (0 = unlimited) */
	uint64_t ecn_kmin;      /* RED-style ECN: no marking below K_min bytes... */
	uint64_t ecn_kmax;      /* ...linear up to P_max at K_max, always above */
	double ecn_pmax;
	bool ecn_dequeue;       /* mark leaving packets by the queue they leave (else arriving ones) */
	bool pfc;               /* lossless ingress: pause this host instead of dropping */
	uint64_t pfc_xoff;      /* pause when more than this the host sent is queued */
	uint64_t pfc_xon;       /* resume below this */
};

/* Per-link statistics. */
struct sim_link_stats {
	uint64_t packets;
	uint64_t bytes;
	uint64_t dropped;
	uint64_t duplicated;
	uint64_t reordered;
	uint64_t ce_marked;
};

/* Per-port switch queue statistics. */
struct sim_queue_stats {
	uint64_t enqueued;
	uint64_t dropped;
	uint64_t ecn_marked;
	uint64_t max_bytes;
	uint64_t pauses;        /* PFC pause frames sent to the host */
	uint64_t paused_ps;     /* time the host spent paused */
	uint64_t sent_bytes;
	double byte_ps;         /* bytes queued integrated over time: / now = mean occupancy */
};

struct sim *sim_create(uint64_t seed);
/* Hosts added from now on get IPv6 addresses (fd00::N) instead of 10.0.0.N. */
void sim_use_ipv6(struct sim *s, bool ipv6);
/* Write every frame a host transmits to a pcap file. */
int sim_capture(struct sim *s, const char *path);
void sim_destroy(struct sim *s);
uint64_t sim_now(const struct sim *s);

/* A host: its engine gets `cfg`; it is linked to the switch (up: host->switch). */
struct sim_node *sim_add_node(struct sim *s, const struct ur_dev_config *cfg,
			      const struct sim_link_cfg *up, const struct sim_link_cfg *down,
			      const struct sim_queue_cfg *queue);
struct ur_dev *sim_node_dev(struct sim_node *n);
const struct ur_gid *sim_node_gid(const struct sim_node *n);
const uint8_t *sim_node_mac(const struct sim_node *n);
unsigned sim_node_index(const struct sim_node *n);
struct sim_link_stats sim_node_up_stats(const struct sim_node *n);
struct sim_link_stats sim_node_down_stats(const struct sim_node *n);
struct sim_queue_stats sim_node_queue_stats(const struct sim_node *n);
/* Bytes now waiting in the switch's output queue toward the host. */
uint64_t sim_node_queue_bytes(const struct sim_node *n);
/* Change the impairments of a node's links at any time (e.g. kill the link). */
void sim_node_set_impair(struct sim_node *n, const struct sim_impair *up,
			 const struct sim_impair *down);

/* The host is not scheduled until `until_ps`: its engine and application
 * run nothing, frames wait for it in order (its NIC still sends what it had). */
void sim_node_stall(struct sim_node *n, uint64_t until_ps);

/* The host loses the CPU for `ps` right after it builds its next frame,
 * which leaves only when it runs again (a provider's pass paused in its
 * transmit stage). With `tell` the host then tells the engine
 * (ur_dev_tx_late), as the provider does; without, as before it did. */
void sim_node_tx_stall(struct sim_node *n, uint64_t ps, bool tell);

/* Let the engine know the application posted WQEs on this node. */
void sim_node_kick(struct sim_node *n);

/* Called after every event that touched a node, so applications can poll CQs. */
typedef void (*sim_node_hook)(struct sim_node *n, void *arg);
void sim_node_set_hook(struct sim_node *n, sim_node_hook hook, void *arg);

/* Allocate memory that lives as long as the simulation (buffers, CQs). */
void *sim_alloc(struct sim *s, size_t len);

/* Schedule a call at an absolute virtual time. */
typedef void (*sim_call_fn)(struct sim *s, void *arg);
void sim_at(struct sim *s, uint64_t when_ps, sim_call_fn fn, void *arg);

/* Run until `until_ps` or until nothing is left to do; returns the time reached. */
uint64_t sim_run(struct sim *s, uint64_t until_ps);
/* Stop the current sim_run at the end of the event being processed. */
void sim_stop(struct sim *s);
uint64_t sim_events(const struct sim *s);
/* True when no event is queued: nothing will ever happen again. */
bool sim_idle(const struct sim *s);

/*
 * Bring two QPs on two nodes to RTS as ibv_modify_qp users do (INIT, RTR,
 * RTS, with the attributes their service requires): RC and UC QPs are
 * connected to each other; UD QPs only get the Q_Key and their PSNs, and
 * address each datagram with an AV from sim_node_av().
 */
struct sim_qp_params {
	unsigned path_mtu;   /* ibv_mtu enum */
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t min_rnr_timer;
	uint8_t max_rd_atomic;      /* both QPs' */
	uint8_t max_dest_rd_atomic; /* both QPs'; 0: max_rd_atomic */
	uint32_t access;
	uint32_t psn_a;      /* initial PSNs (start near the wrap in tests) */
	uint32_t psn_b;
	uint8_t tclass;
	uint32_t qkey;       /* UD */
};
void sim_qp_params_default(struct sim_qp_params *p);
/* The address vector from `self` to `peer`, resolved, as ibv_create_ah makes it. */
struct ur_av;
void sim_node_av(const struct sim_node *self, const struct sim_node *peer, uint8_t tclass,
		 struct ur_av *av);
int sim_connect_qps(struct sim_node *a, struct ur_qp *qa, struct sim_node *b, struct ur_qp *qb,
		    const struct sim_qp_params *p);

/* Wire bytes of the packets that carry a message of `len` bytes of opcode kind `kind`. */
uint64_t sim_message_wire_bytes(uint32_t len, uint32_t mtu, unsigned kind, bool ipv6, bool sr);

#endif
