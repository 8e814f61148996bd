/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What a topology built on the simulator sees of it: packets, links and
 * output queues (the same drop-tail, RED ECN queue the single switch uses
 * toward each host), and the hook that takes every frame a host sends in
 * place of the single switch. A topology (leafspine.c) wires switches out
 * of these; the engine and the hosts are unchanged.
 */
#ifndef UR_SIM_FABRIC_H
#define UR_SIM_FABRIC_H

#include "frame.h"
#include "netem.h"
#include "rng.h"
#include "sim.h"

struct sim_ingress;

struct sim_pkt {
	struct sim_pkt *next;
	struct sim_node *in;	 /* the host it entered the switch from, while queued there */
	struct sim_ingress *ing; /* ...or the switch input, for PFC between switches */
	uint32_t len;
	uint8_t data[UR_FRAME_MAX];
};

struct sim_link {
	struct sim_link_cfg cfg;
	struct netem_state net; /* its generator and its loss chain's state */
	uint64_t count;
	uint32_t psn_drops; /* drop_psn: copies dropped since it was set */
	struct sim_link_stats st;
};

/* A switch's input: frames that cross a link into it arrive here. */
struct sim_hop {
	void (*arrive)(struct sim *s, struct sim_hop *h, struct sim_pkt *p);
};

/* An output queue and the link it serialises onto. */
struct sim_port {
	struct sim_link *link;
	uint8_t arrive_type; /* the event its frames make at the far end... */
	void *dest;	     /* ...and where: a host, or a sim_hop */
	struct sim_queue_cfg q;
	struct sim_pkt *head;
	struct sim_pkt *tail;
	uint64_t bytes;
	bool busy;
	struct sim_queue_stats st; /* pauses/paused_ps: PFC pauses this port obeyed */
	struct sim_rng rng;
	unsigned paused; /* PFC pause frames in effect at this port */
	uint64_t paused_since;
	uint64_t area_since; /* st.byte_ps holds the queue's integral up to here */
};

/*
 * A switch input fed by another switch's port, lossless (PFC, IEEE
 * 802.1Qbb) when xoff is set: while more than xoff bytes that came through
 * it wait in this switch, the upstream port is paused; below xon it resumes.
 */
struct sim_ingress {
	struct sim_port *upstream;
	uint64_t xoff;
	uint64_t xon;
	uint64_t bytes;
	bool pausing;
	uint64_t pauses; /* pause frames sent upstream */
};

/* Every frame hosts send goes to `ingress` instead of the single switch. */
typedef void (*sim_fabric_ingress)(struct sim *s, void *arg, struct sim_node *from,
				   struct sim_pkt *p);
void sim_set_fabric(struct sim *s, sim_fabric_ingress ingress, void *arg);
uint64_t sim_seed(const struct sim *s);

/* A link whose generator comes from `seed`. */
void sim_link_init(struct sim_link *l, const struct sim_link_cfg *cfg, uint64_t seed);
/* A port sending on `link` into the switch input `dest`; the caller keeps both alive. */
void sim_port_init(struct sim_port *port, struct sim_link *link, struct sim_hop *dest,
		   const struct sim_queue_cfg *q, uint64_t seed);
/* Queue a frame (drop-tail, RED marking) and start sending if the link is free. */
void sim_port_send(struct sim *s, struct sim_port *port, struct sim_pkt *p);
/*
 * The same, for a frame that came in through `ing` (a switch input) or from
 * `host` (an input a host feeds): counted there for PFC and, where that
 * input is lossless, never dropped.
 */
void sim_port_send_from(struct sim *s, struct sim_port *port, struct sim_pkt *p,
			struct sim_ingress *ing, struct sim_node *host);
/* A port's statistics now (the occupancy integral brought up to date). */
struct sim_queue_stats sim_port_stats(const struct sim *s, const struct sim_port *port);
/* The port toward a host: the last hop's queue. */
struct sim_port *sim_node_port(struct sim_node *n);
void sim_pkt_free(struct sim *s, struct sim_pkt *p);

#endif
