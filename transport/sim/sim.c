/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The simulator's world: the event queue, packets, hosts with their NICs,
 * links with impairments, and the output-queued switch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_fabric.h"
#include "ur_util.h"

enum ev_type {
	EV_CALL,
	EV_NODE_ARRIVE,   /* a frame reaches a host */
	EV_SWITCH_ARRIVE, /* a frame reaches the switch */
	EV_NODE_TX_DONE,  /* a host finished serialising a frame */
	EV_PORT_TX_DONE,  /* a switch port finished serialising a frame */
	EV_NODE_TIMER,    /* an engine deadline */
	EV_NODE_PAUSE,    /* PFC pause or resume reaches a host */
	EV_HOP_ARRIVE,    /* a frame reaches a topology's switch */
	EV_PORT_PAUSE,    /* PFC pause or resume reaches a switch port */
	EV_NODE_TX_LATE,  /* a host that lost the CPU holding a frame sends it */
};

struct sim_event {
	uint64_t t;
	uint64_t seq; /* ties break by scheduling order: determinism */
	uint8_t type;
	uint32_t gen;
	void *a;
	void *b;
};

struct sim_node {
	struct sim *s;
	unsigned idx;
	struct ur_dev *dev;
	uint8_t mac[6];
	struct ur_gid gid;
	struct sim_link up;
	struct sim_link down;
	struct sim_port port;
	struct sim_rng rng;
	bool tx_busy;
	unsigned paused;        /* PFC: pause frames in effect at this host */
	uint64_t paused_since;
	uint64_t ingress_bytes; /* PFC: bytes from this host queued in the switch */
	bool pausing;           /* PFC: the switch has paused this host */
	struct sim_pkt *out;
	uint64_t timer_at;
	uint32_t timer_gen;
	uint64_t stall_until; /* the host runs nothing before then (not scheduled) */
	uint64_t tx_stall_ps; /* the next frame built waits this long in the host */
	bool tx_stall_tell;   /* ...and the host tells the engine (ur_dev_tx_late) */
	uint64_t tx_built_ns; /* when the frame held was built */
	sim_node_hook hook;
	void *hook_arg;
};

struct sim_block {
	struct sim_block *next;
};

struct sim {
	uint64_t now;
	uint64_t seq;
	uint64_t events;
	bool stopped;
	struct sim_event *heap; /* 1-based binary heap */
	size_t nheap;
	size_t capheap;
	struct sim_pkt *free_pkts;
	struct sim_node **nodes;
	unsigned nnodes;
	uint64_t seed;
	struct sim_block *blocks; /* sim_alloc'd memory */
	FILE *capture;            /* pcap of every frame a host transmits */
	bool ipv6;
	sim_fabric_ingress fabric; /* a topology in place of the single switch */
	void *fabric_arg;
};

static const struct ur_host_ops node_ops;

/* ---- events ---- */

static bool ev_before(const struct sim_event *a, const struct sim_event *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void push_event(struct sim *s, uint64_t t, uint8_t type, void *a, void *b, uint32_t gen)
{
	struct sim_event ev = {.t = t, .seq = s->seq++, .type = type, .a = a, .b = b, .gen = gen};
	size_t i;

	if (s->nheap + 1 >= s->capheap) {
		s->capheap = s->capheap ? s->capheap * 2 : 1024;
		s->heap = realloc(s->heap, s->capheap * sizeof(*s->heap));
		if (!s->heap) {
			fprintf(stderr, "sim: out of memory\n");
			abort();
		}
	}
	i = ++s->nheap;
	while (i > 1 && ev_before(&ev, &s->heap[i / 2])) {
		s->heap[i] = s->heap[i / 2];
		i /= 2;
	}
	s->heap[i] = ev;
}

static struct sim_event pop_event(struct sim *s)
{
	struct sim_event top = s->heap[1], last = s->heap[s->nheap--];
	size_t i = 1;

	for (;;) {
		size_t c = 2 * i;

		if (c > s->nheap)
			break;
		if (c + 1 <= s->nheap && ev_before(&s->heap[c + 1], &s->heap[c]))
			c++;
		if (!ev_before(&s->heap[c], &last))
			break;
		s->heap[i] = s->heap[c];
		i = c;
	}
	if (s->nheap)
		s->heap[i] = last;
	return top;
}

/* ---- packets ---- */

static struct sim_pkt *pkt_alloc(struct sim *s)
{
	struct sim_pkt *p = s->free_pkts;

	if (p) {
		s->free_pkts = p->next;
		p->in = NULL;
		p->ing = NULL;
		return p;
	}
	p = malloc(sizeof(*p));
	if (!p) {
		fprintf(stderr, "sim: out of memory\n");
		abort();
	}
	p->in = NULL;
	p->ing = NULL;
	return p;
}

static void pkt_free(struct sim *s, struct sim_pkt *p)
{
	p->next = s->free_pkts;
	s->free_pkts = p;
}

static struct sim_pkt *pkt_clone(struct sim *s, const struct sim_pkt *p)
{
	struct sim_pkt *c = pkt_alloc(s);

	c->len = p->len;
	memcpy(c->data, p->data, p->len);
	return c;
}

/* ---- world ---- */

struct sim *sim_create(uint64_t seed)
{
	struct sim *s = calloc(1, sizeof(*s));

	if (s)
		s->seed = seed;
	return s;
}

void sim_destroy(struct sim *s)
{
	if (!s)
		return;
	for (size_t i = 1; i <= s->nheap; i++) {
		struct sim_event *ev = &s->heap[i];

		if (ev->type == EV_NODE_ARRIVE || ev->type == EV_SWITCH_ARRIVE ||
		    ev->type == EV_HOP_ARRIVE)
			pkt_free(s, ev->b);
	}
	for (unsigned i = 0; i < s->nnodes; i++) {
		struct sim_node *n = s->nodes[i];

		while (n->port.head) {
			struct sim_pkt *p = n->port.head;

			n->port.head = p->next;
			pkt_free(s, p);
		}
		if (n->out)
			pkt_free(s, n->out);
		ur_dev_destroy(n->dev);
		free(n);
	}
	while (s->free_pkts) {
		struct sim_pkt *p = s->free_pkts;

		s->free_pkts = p->next;
		free(p);
	}
	while (s->blocks) {
		struct sim_block *b = s->blocks;

		s->blocks = b->next;
		free(b);
	}
	if (s->capture)
		fclose(s->capture);
	free(s->nodes);
	free(s->heap);
	free(s);
}

uint64_t sim_now(const struct sim *s)
{
	return s->now;
}

uint64_t sim_events(const struct sim *s)
{
	return s->events;
}

void *sim_alloc(struct sim *s, size_t len)
{
	struct sim_block *b = calloc(1, sizeof(*b) + len + 64);
	uintptr_t p;

	if (!b) {
		fprintf(stderr, "sim: out of memory\n");
		abort();
	}
	b->next = s->blocks;
	s->blocks = b;
	p = ((uintptr_t)(b + 1) + 63) & ~(uintptr_t)63;
	return (void *)p;
}

void sim_at(struct sim *s, uint64_t when_ps, sim_call_fn fn, void *arg)
{
	push_event(s, when_ps < s->now ? s->now : when_ps, EV_CALL, (void *)fn, arg, 0);
}

void sim_use_ipv6(struct sim *s, bool ipv6)
{
	s->ipv6 = ipv6;
}

void sim_stop(struct sim *s)
{
	s->stopped = true;
}

static uint64_t ser_ps(uint32_t len, uint64_t rate_bps)
{
	return (uint64_t)(len + SIM_WIRE_OVERHEAD) * 8 * SIM_PS_PER_S / rate_bps;
}

/* ---- links: serialise, impair, propagate ---- */

/* The scripted drops of a scenario: a dead link, the Nth packet and every Kth after it. */
static bool link_drops_scripted(const struct sim_link *l)
{
	const struct sim_impair *im = &l->cfg.impair;

	if (im->drop_all)
		return true;
	return im->drop_nth && l->count >= im->drop_nth &&
	       (l->count == im->drop_nth ||
		(im->drop_every && (l->count - im->drop_nth) % im->drop_every == 0));
}

/* The random impairments of a link, as the emulation module takes them. */
static struct netem_impair link_netem(const struct sim_impair *im)
{
	return (struct netem_impair){
		.loss = im->loss,
		.ge = {.p_gb = im->ge_p_gb,
		       .p_bg = im->ge_p_bg,
		       .loss_good = im->ge_loss_good,
		       .loss_bad = im->ge_loss_bad},
		.ce = im->ce,
		.dup = im->dup,
		.reorder = im->reorder_depth ? im->reorder : 0,
	};
}

/* Where a RoCEv2 frame's BTH starts, or 0 if the frame is something else. */
static unsigned bth_offset(const struct sim_pkt *p)
{
	bool v6;
	unsigned off = netem_ip_offset(p->data, p->len, &v6);

	if (!off)
		return 0;
	off += v6 ? 40 : (p->data[off] & 0xf) * 4u;
	if (p->len < off + 8 + 12 || ur_get_be16(p->data + off + 2) != UR_ROCE_UDP_PORT)
		return 0;
	return off + 8;
}

/* Whether a frame is a RoCEv2 RC SEND, WRITE or READ request with this PSN. */
static bool is_request_with_psn(const struct sim_pkt *p, uint32_t psn)
{
	unsigned off = bth_offset(p);
	const uint8_t *bth = p->data + off;

	return off && bth[0] < 0x0d && (ur_get_be32(bth + 8) & 0xffffff) == psn;
}

/* The drops a test asked for: a PSN's first few requests, or its own choice. */
static bool test_drops(struct sim_link *l, const struct sim_pkt *p)
{
	const struct sim_impair *im = &l->cfg.impair;
	unsigned off;

	if (im->drop_psn_times && l->psn_drops < im->drop_psn_times &&
	    is_request_with_psn(p, im->drop_psn)) {
		l->psn_drops++;
		return true;
	}
	if (!im->drop_bth)
		return false;
	off = bth_offset(p);
	return off && im->drop_bth(p->data + off, p->len - off, im->drop_arg);
}

static void link_send(struct sim *s, struct sim_link *l, struct sim_pkt *p, uint64_t t_done,
		      uint8_t arrive_type, void *dest)
{
	const struct sim_impair *im = &l->cfg.impair;
	struct netem_impair net = link_netem(im);
	uint64_t t = t_done + l->cfg.prop_ps;
	unsigned fate;

	l->count++;
	l->st.packets++;
	l->st.bytes += p->len;
	if (test_drops(l, p)) {
		l->st.dropped++;
		pkt_free(s, p);
		return;
	}
	fate = link_drops_scripted(l) ? NETEM_DROP : netem_impair_frame(&net, &l->net, p->data, p->len);
	if (fate & NETEM_DROP) {
		l->st.dropped++;
		pkt_free(s, p);
		return;
	}
	if (fate & NETEM_MARKED)
		l->st.ce_marked++;
	if (fate & NETEM_DUP) {
		l->st.duplicated++;
		push_event(s, t, arrive_type, dest, pkt_clone(s, p), 0);
	}
	if (im->hold_bth) {
		unsigned off = bth_offset(p);

		if (off && im->hold_bth(p->data + off, p->len - off, im->hold_arg)) {
			l->st.reordered++;
			t += im->hold_ps;
		}
	}
	if (fate & NETEM_HOLD) {
		/* held back long enough for up to reorder_depth later packets to pass */
		l->st.reordered++;
		t += (uint64_t)im->reorder_depth * ser_ps(p->len, l->cfg.rate_bps);
	}
	push_event(s, t, arrive_type, dest, p, 0);
}

/* ---- hosts ---- */

static uint64_t now_ns(const struct sim *s)
{
	return s->now / SIM_PS_PER_NS;
}

/* Classic pcap with nanosecond timestamps (magic 0xa1b23c4d), Ethernet. */
int sim_capture(struct sim *s, const char *path)
{
	uint32_t hdr[6] = {0xa1b23c4d, 2 | 4u << 16, 0, 0, 65535, 1};

	s->capture = fopen(path, "wb");
	if (!s->capture || fwrite(hdr, sizeof(hdr), 1, s->capture) != 1)
		return -1;
	return 0;
}

static void capture_frame(struct sim *s, const struct sim_pkt *p)
{
	uint64_t ns = s->now / SIM_PS_PER_NS;
	uint32_t rec[4] = {(uint32_t)(ns / 1000000000), (uint32_t)(ns % 1000000000), p->len, p->len};

	fwrite(rec, sizeof(rec), 1, s->capture);
	fwrite(p->data, p->len, 1, s->capture);
}

static void node_start_tx(struct sim_node *n)
{
	struct sim *s = n->s;
	struct sim_pkt *p = n->out;
	uint64_t done = s->now + ser_ps(p->len, n->up.cfg.rate_bps);

	if (s->capture)
		capture_frame(s, p);

	n->out = NULL;
	n->tx_busy = true;
	push_event(s, done, EV_NODE_TX_DONE, n, NULL, 0);
	link_send(s, &n->up, p, done, EV_SWITCH_ARRIVE, n);
}

/* The NIC pulls the next frame from the engine whenever the wire is free. */
static void node_pull(struct sim_node *n)
{
	if (n->tx_busy || n->paused)
		return;
	/* a pass can do work without building a frame (a rewind): ask again */
	for (int i = 0; i < 4 && !n->out; i++)
		if (!ur_dev_tx(n->dev, now_ns(n->s), 1) && !ur_dev_tx_pending(n->dev))
			break;
	if (n->out && n->tx_stall_ps) {
		uint64_t until = n->s->now + n->tx_stall_ps;

		/* the frame stays in the host's hands until it runs again */
		n->tx_built_ns = now_ns(n->s);
		n->tx_stall_ps = 0;
		n->tx_busy = true;
		push_event(n->s, until, EV_NODE_TX_LATE, n, NULL, 0);
		sim_node_stall(n, until);
		return;
	}
	if (n->out)
		node_start_tx(n);
}

void sim_node_tx_stall(struct sim_node *n, uint64_t ps, bool tell)
{
	n->tx_stall_ps = ps;
	n->tx_stall_tell = tell;
}

static void node_arm_timer(struct sim_node *n)
{
	struct sim *s = n->s;
	uint64_t d = ur_dev_next_deadline(n->dev), t;

	if (d == UR_TIME_NEVER)
		return;
	t = d * SIM_PS_PER_NS;
	if (t < s->now)
		t = s->now;
	if (n->timer_at <= t)
		return; /* an earlier or equal wake-up is already queued */
	n->timer_at = t;
	push_event(s, t, EV_NODE_TIMER, n, NULL, ++n->timer_gen);
}

static void node_after_event(struct sim_node *n)
{
	ur_dev_poll(n->dev, now_ns(n->s));
	if (n->hook)
		n->hook(n, n->hook_arg);
	ur_dev_poll(n->dev, now_ns(n->s));
	node_pull(n);
	node_arm_timer(n);
}

void sim_node_stall(struct sim_node *n, uint64_t until_ps)
{
	struct sim *s = n->s;

	if (until_ps <= s->now || until_ps <= n->stall_until)
		return;
	n->stall_until = until_ps;
	/* wake up when it ends, whatever was due before */
	n->timer_at = until_ps;
	push_event(s, until_ps, EV_NODE_TIMER, n, NULL, ++n->timer_gen);
}

void sim_node_kick(struct sim_node *n)
{
	ur_dev_poll(n->dev, now_ns(n->s));
	node_pull(n);
	node_arm_timer(n);
}

static int host_tx_get(void *host, struct ur_txbuf *b)
{
	struct sim_node *n = host;
	struct sim_pkt *p;

	if (n->out)
		return -1; /* one frame per pull: the wire is busy */
	p = pkt_alloc(n->s);
	b->data = p->data;
	b->cap = sizeof(p->data);
	b->cookie = p;
	return 0;
}

static void host_tx_put(void *host, struct ur_txbuf *b, uint32_t len)
{
	struct sim_node *n = host;
	struct sim_pkt *p = b->cookie;

	if (!len) {
		pkt_free(n->s, p);
		return;
	}
	p->len = len;
	n->out = p;
}

static uint64_t host_random(void *host)
{
	return sim_rng_next(&((struct sim_node *)host)->rng);
}

static const struct ur_host_ops node_ops = {
	.tx_get = host_tx_get,
	.tx_put = host_tx_put,
	.random = host_random,
};

struct sim_node *sim_add_node(struct sim *s, const struct ur_dev_config *cfg,
			      const struct sim_link_cfg *up, const struct sim_link_cfg *down,
			      const struct sim_queue_cfg *queue)
{
	struct sim_node *n = calloc(1, sizeof(*n));
	struct sim_node **nodes = realloc(s->nodes, (s->nnodes + 1) * sizeof(*nodes));
	uint64_t seed = s->seed ^ (0x5851f42d4c957f2dull * (s->nnodes + 1));
	uint8_t v4[4] = {10, 0, 0, (uint8_t)(s->nnodes + 1)};

	if (!n || !nodes) {
		free(n);
		return NULL;
	}
	s->nodes = nodes;
	n->s = s;
	n->idx = s->nnodes;
	n->timer_at = UINT64_MAX;
	sim_rng_seed(&n->rng, seed);
	sim_rng_seed(&n->up.net.rng, seed + 1);
	sim_rng_seed(&n->down.net.rng, seed + 2);
	sim_rng_seed(&n->port.rng, seed + 3);
	n->up.cfg = *up;
	n->down.cfg = *down;
	n->port.link = &n->down;
	n->port.arrive_type = EV_NODE_ARRIVE;
	n->port.dest = n;
	if (queue)
		n->port.q = *queue;
	memcpy(n->mac, (uint8_t[6]){0x02, 0, 0, 0, 0, (uint8_t)(n->idx + 1)}, 6);
	if (s->ipv6) {
		/* fd00::N, a unique local address */
		memset(n->gid.raw, 0, 16);
		n->gid.raw[0] = 0xfd;
		n->gid.raw[15] = (uint8_t)(n->idx + 1);
	} else {
		ur_gid_from_v4(&n->gid, v4);
	}
	if (ur_dev_create(cfg, &node_ops, n, NULL, &n->dev)) {
		free(n);
		return NULL;
	}
	s->nodes[s->nnodes++] = n;
	return n;
}

struct ur_dev *sim_node_dev(struct sim_node *n)
{
	return n->dev;
}

const struct ur_gid *sim_node_gid(const struct sim_node *n)
{
	return &n->gid;
}

const uint8_t *sim_node_mac(const struct sim_node *n)
{
	return n->mac;
}

unsigned sim_node_index(const struct sim_node *n)
{
	return n->idx;
}

struct sim_link_stats sim_node_up_stats(const struct sim_node *n)
{
	return n->up.st;
}

struct sim_link_stats sim_node_down_stats(const struct sim_node *n)
{
	return n->down.st;
}

struct sim_queue_stats sim_port_stats(const struct sim *s, const struct sim_port *port)
{
	struct sim_queue_stats st = port->st;

	st.byte_ps += (double)port->bytes * (double)(s->now - port->area_since);
	return st;
}

struct sim_queue_stats sim_node_queue_stats(const struct sim_node *n)
{
	struct sim_queue_stats st = sim_port_stats(n->s, &n->port);

	if (n->paused)
		st.paused_ps += n->s->now - n->paused_since;
	return st;
}

uint64_t sim_node_queue_bytes(const struct sim_node *n)
{
	return n->port.bytes;
}

void sim_node_set_impair(struct sim_node *n, const struct sim_impair *up,
			 const struct sim_impair *down)
{
	if (up) {
		n->up.cfg.impair = *up;
		n->up.psn_drops = 0;
	}
	if (down) {
		n->down.cfg.impair = *down;
		n->down.psn_drops = 0;
	}
}

void sim_node_set_hook(struct sim_node *n, sim_node_hook hook, void *arg)
{
	n->hook = hook;
	n->hook_arg = arg;
}

/* ---- the switch ---- */

/*
 * PFC (IEEE 802.1Qbb) at the switch port a host is attached to, counted
 * at ingress as switches do: while more than pfc_xoff bytes that host sent
 * wait in the switch, it is paused; below pfc_xon it may send again. The
 * pause takes the link's propagation delay to arrive, and whatever the host
 * sends meanwhile is absorbed (headroom): a PFC port never drops.
 */
static void ingress_account(struct sim *s, struct sim_node *n, int64_t delta)
{
	const struct sim_queue_cfg *q = &n->port.q;

	n->ingress_bytes += (uint64_t)delta;
	if (!q->pfc)
		return;
	if (!n->pausing && n->ingress_bytes > q->pfc_xoff) {
		n->pausing = true;
		n->port.st.pauses++;
		push_event(s, s->now + n->up.cfg.prop_ps, EV_NODE_PAUSE, n, NULL, 1);
	} else if (n->pausing && n->ingress_bytes < q->pfc_xon) {
		n->pausing = false;
		push_event(s, s->now + n->up.cfg.prop_ps, EV_NODE_PAUSE, n, NULL, 0);
	}
}

/* PFC between switches: the same thresholds, a pause to the upstream port. */
static void fabric_ingress_account(struct sim *s, struct sim_ingress *ing, int64_t delta)
{
	uint64_t at = s->now + ing->upstream->link->cfg.prop_ps;

	ing->bytes += (uint64_t)delta;
	if (!ing->xoff)
		return;
	if (!ing->pausing && ing->bytes > ing->xoff) {
		ing->pausing = true;
		ing->pauses++;
		push_event(s, at, EV_PORT_PAUSE, ing->upstream, NULL, 1);
	} else if (ing->pausing && ing->bytes < ing->xon) {
		ing->pausing = false;
		push_event(s, at, EV_PORT_PAUSE, ing->upstream, NULL, 0);
	}
}

/*
 * RED-style ECN on the queue length: none below K_min, a probability rising
 * linearly to P_max at K_max, every ECN-capable packet above K_max.
 */
static void red_mark(struct sim_port *port, struct sim_pkt *p)
{
	const struct sim_queue_cfg *q = &port->q;
	const struct netem_red red = {.kmin = q->ecn_kmin, .kmax = q->ecn_kmax, .pmax = q->ecn_pmax};

	if (netem_red_mark(&red, port->bytes, &port->rng, p->data, p->len))
		port->st.ecn_marked++;
}

/* The queue's occupancy integral, brought up to now before its length changes. */
static void port_area(const struct sim *s, struct sim_port *port)
{
	port->st.byte_ps += (double)port->bytes * (double)(s->now - port->area_since);
	port->area_since = s->now;
}

static void port_start_tx(struct sim *s, struct sim_port *port)
{
	struct sim_pkt *p = port->head;
	uint64_t done;

	if (port->busy || !p || port->paused)
		return;
	/* marking as the packet leaves tells the sender about the queue it
	 * leaves behind, one queueing delay sooner than marking on arrival */
	if (port->q.ecn_dequeue)
		red_mark(port, p);
	port->head = p->next;
	if (!port->head)
		port->tail = NULL;
	port_area(s, port);
	port->bytes -= p->len;
	port->st.sent_bytes += p->len;
	port->busy = true;
	if (p->in) {
		ingress_account(s, p->in, -(int64_t)p->len);
		p->in = NULL;
	}
	if (p->ing) {
		fabric_ingress_account(s, p->ing, -(int64_t)p->len);
		p->ing = NULL;
	}
	done = s->now + ser_ps(p->len, port->link->cfg.rate_bps);
	push_event(s, done, EV_PORT_TX_DONE, port, NULL, 0);
	link_send(s, port->link, p, done, port->arrive_type, port->dest);
}

/* Drop-tail (unless the sender's port is lossless), RED on arrival, then the queue. */
static bool port_queue(struct sim *s, struct sim_port *port, struct sim_pkt *p, bool lossless)
{
	const struct sim_queue_cfg *q = &port->q;

	if (q->buffer_bytes && port->bytes + p->len > q->buffer_bytes && !lossless) {
		port->st.dropped++;
		pkt_free(s, p);
		return false;
	}
	if (!q->ecn_dequeue)
		red_mark(port, p);
	p->next = NULL;
	if (port->tail)
		port->tail->next = p;
	else
		port->head = p;
	port->tail = p;
	port_area(s, port);
	port->bytes += p->len;
	port->st.enqueued++;
	if (port->bytes > port->st.max_bytes)
		port->st.max_bytes = port->bytes;
	return true;
}

static void switch_arrive(struct sim *s, struct sim_pkt *p)
{
	unsigned idx = p->len >= 6 ? p->data[5] : 0, src = p->len >= 12 ? p->data[11] : 0;
	struct sim_node *in = src && src <= s->nnodes ? s->nodes[src - 1] : NULL;
	struct sim_port *port;

	if (idx == 0 || idx > s->nnodes || memcmp(p->data, s->nodes[idx - 1]->mac, 6)) {
		pkt_free(s, p); /* no such host: a real switch would flood; nobody would answer */
		return;
	}
	port = &s->nodes[idx - 1]->port;
	if (!port_queue(s, port, p, in && in->port.q.pfc))
		return;
	p->in = in;
	if (in)
		ingress_account(s, in, p->len);
	port_start_tx(s, port);
}

void sim_port_send(struct sim *s, struct sim_port *port, struct sim_pkt *p)
{
	if (port_queue(s, port, p, false))
		port_start_tx(s, port);
}

void sim_port_send_from(struct sim *s, struct sim_port *port, struct sim_pkt *p,
			struct sim_ingress *ing, struct sim_node *host)
{
	uint32_t len = p->len;

	if (!port_queue(s, port, p, (ing && ing->xoff) || (host && host->port.q.pfc)))
		return;
	if (host) {
		p->in = host;
		ingress_account(s, host, len);
	}
	if (ing) {
		p->ing = ing;
		fabric_ingress_account(s, ing, len);
	}
	port_start_tx(s, port);
}

/* ---- the loop ---- */

static void dispatch(struct sim *s, struct sim_event *ev)
{
	struct sim_node *n = ev->a;
	struct sim_port *port;

	switch (ev->type) {
	case EV_CALL:
		((sim_call_fn)ev->a)(s, ev->b);
		break;
	case EV_SWITCH_ARRIVE:
		if (s->fabric)
			s->fabric(s, s->fabric_arg, n, ev->b);
		else
			switch_arrive(s, ev->b);
		break;
	case EV_HOP_ARRIVE:
		((struct sim_hop *)ev->a)->arrive(s, ev->a, ev->b);
		break;
	case EV_PORT_PAUSE:
		port = ev->a;
		if (ev->gen) {
			if (!port->paused++) {
				port->paused_since = s->now;
				port->st.pauses++;
			}
		} else if (port->paused && !--port->paused) {
			port->st.paused_ps += s->now - port->paused_since;
			port_start_tx(s, port);
		}
		break;
	case EV_NODE_ARRIVE: {
		struct sim_pkt *p = ev->b;

		if (s->now < n->stall_until) {
			/* waits in the host's receive ring, in order */
			push_event(s, n->stall_until, EV_NODE_ARRIVE, n, p, 0);
			break;
		}
		ur_dev_rx(n->dev, p->data, p->len, now_ns(s));
		pkt_free(s, p);
		node_after_event(n);
		break;
	}
	case EV_NODE_TX_LATE:
		if (n->tx_stall_tell)
			ur_dev_tx_late(n->dev, n->tx_built_ns, now_ns(s));
		node_start_tx(n);
		break;
	case EV_NODE_TX_DONE:
		n->tx_busy = false;
		if (s->now >= n->stall_until)
			node_after_event(n);
		break;
	case EV_PORT_TX_DONE:
		port = ev->a;
		port->busy = false;
		port_start_tx(s, port);
		break;
	case EV_NODE_TIMER:
		if (ev->gen != n->timer_gen)
			break; /* superseded */
		n->timer_at = UINT64_MAX;
		if (s->now < n->stall_until) {
			n->timer_at = n->stall_until;
			push_event(s, n->stall_until, EV_NODE_TIMER, n, NULL, ++n->timer_gen);
			break;
		}
		node_after_event(n);
		break;
	case EV_NODE_PAUSE:
		if (ev->gen) {
			if (!n->paused++)
				n->paused_since = s->now;
		} else if (n->paused && !--n->paused) {
			n->port.st.paused_ps += s->now - n->paused_since;
			node_after_event(n);
		}
		break;
	}
}

uint64_t sim_run(struct sim *s, uint64_t until_ps)
{
	s->stopped = false;
	while (s->nheap && !s->stopped) {
		struct sim_event ev;

		if (s->heap[1].t > until_ps)
			break;
		ev = pop_event(s);
		s->now = ev.t;
		s->events++;
		dispatch(s, &ev);
	}
	/* nothing else happens before until_ps: time moves on to it */
	if (!s->stopped && s->now < until_ps && until_ps != UINT64_MAX)
		s->now = until_ps;
	return s->now;
}

bool sim_idle(const struct sim *s)
{
	return s->nheap == 0;
}

/* ---- what topologies build on (sim_fabric.h) ---- */

void sim_set_fabric(struct sim *s, sim_fabric_ingress ingress, void *arg)
{
	s->fabric = ingress;
	s->fabric_arg = arg;
}

uint64_t sim_seed(const struct sim *s)
{
	return s->seed;
}

void sim_link_init(struct sim_link *l, const struct sim_link_cfg *cfg, uint64_t seed)
{
	memset(l, 0, sizeof(*l));
	l->cfg = *cfg;
	sim_rng_seed(&l->net.rng, seed);
}

void sim_port_init(struct sim_port *port, struct sim_link *link, struct sim_hop *dest,
		   const struct sim_queue_cfg *q, uint64_t seed)
{
	memset(port, 0, sizeof(*port));
	port->link = link;
	port->arrive_type = EV_HOP_ARRIVE;
	port->dest = dest;
	if (q)
		port->q = *q;
	sim_rng_seed(&port->rng, seed);
}

struct sim_port *sim_node_port(struct sim_node *n)
{
	return &n->port;
}

void sim_pkt_free(struct sim *s, struct sim_pkt *p)
{
	pkt_free(s, p);
}

/* ---- helpers for scenarios ---- */

void sim_qp_params_default(struct sim_qp_params *p)
{
	memset(p, 0, sizeof(*p));
	p->path_mtu = 5;
	p->timeout = 14;
	p->retry_cnt = 7;
	p->rnr_retry = 7;
	p->min_rnr_timer = 12;
	p->max_rd_atomic = 16;
	p->access = UR_ACCESS_LOCAL_WRITE | UR_ACCESS_REMOTE_WRITE | UR_ACCESS_REMOTE_READ |
		    UR_ACCESS_REMOTE_ATOMIC;
	p->psn_a = 0xfffff0;
	p->psn_b = 0xffffe0;
	p->qkey = 0x11111111;
}

void sim_node_av(const struct sim_node *self, const struct sim_node *peer, uint8_t tclass,
		 struct ur_av *av)
{
	memset(av, 0, sizeof(*av));
	memcpy(av->path.smac, self->mac, 6);
	memcpy(av->path.dmac, peer->mac, 6);
	av->path.sgid = self->gid;
	av->path.dgid = peer->gid;
	av->path.hop_limit = 64;
	av->path.tclass = tclass;
	av->resolved = 1;
}

/* The attribute masks ibv_modify_qp users pass, per service (table 91). */
static const uint32_t init_mask[] = {
	[UR_QPT_RC] = UR_QP_PKEY_INDEX | UR_QP_PORT | UR_QP_ACCESS_FLAGS,
	[UR_QPT_UC] = UR_QP_PKEY_INDEX | UR_QP_PORT | UR_QP_ACCESS_FLAGS,
	[UR_QPT_UD] = UR_QP_PKEY_INDEX | UR_QP_PORT | UR_QP_QKEY,
	[UR_QPT_XRC_SEND] = UR_QP_PKEY_INDEX | UR_QP_PORT | UR_QP_ACCESS_FLAGS,
	[UR_QPT_XRC_RECV] = UR_QP_PKEY_INDEX | UR_QP_PORT | UR_QP_ACCESS_FLAGS,
};
/* XRC: RC's masks, as mlx5 users pass them; each half ignores what is not its own */
static const uint32_t rtr_mask[] = {
	[UR_QPT_RC] = UR_QP_AV | UR_QP_PATH_MTU | UR_QP_DEST_QPN | UR_QP_RQ_PSN |
		      UR_QP_MAX_DEST_RD_ATOMIC | UR_QP_MIN_RNR_TIMER,
	[UR_QPT_UC] = UR_QP_AV | UR_QP_PATH_MTU | UR_QP_DEST_QPN | UR_QP_RQ_PSN,
	[UR_QPT_UD] = 0,
	[UR_QPT_XRC_SEND] = UR_QP_AV | UR_QP_PATH_MTU | UR_QP_DEST_QPN | UR_QP_RQ_PSN |
			    UR_QP_MAX_DEST_RD_ATOMIC | UR_QP_MIN_RNR_TIMER,
	[UR_QPT_XRC_RECV] = UR_QP_AV | UR_QP_PATH_MTU | UR_QP_DEST_QPN | UR_QP_RQ_PSN |
			    UR_QP_MAX_DEST_RD_ATOMIC | UR_QP_MIN_RNR_TIMER,
};
static const uint32_t rts_mask[] = {
	[UR_QPT_RC] = UR_QP_SQ_PSN | UR_QP_TIMEOUT | UR_QP_RETRY_CNT | UR_QP_RNR_RETRY |
		      UR_QP_MAX_QP_RD_ATOMIC,
	[UR_QPT_UC] = UR_QP_SQ_PSN,
	[UR_QPT_UD] = UR_QP_SQ_PSN,
	[UR_QPT_XRC_SEND] = UR_QP_SQ_PSN | UR_QP_TIMEOUT | UR_QP_RETRY_CNT | UR_QP_RNR_RETRY |
			    UR_QP_MAX_QP_RD_ATOMIC,
	[UR_QPT_XRC_RECV] = UR_QP_SQ_PSN | UR_QP_TIMEOUT | UR_QP_RETRY_CNT | UR_QP_RNR_RETRY |
			    UR_QP_MAX_QP_RD_ATOMIC,
};

static int connect_one(struct sim_node *self, struct ur_qp *q, struct sim_node *peer,
		       struct ur_qp *pq, const struct sim_qp_params *p, uint32_t my_psn,
		       uint32_t peer_psn)
{
	enum ur_qp_type type = ur_qp_service(q);
	struct ur_qp_attr a;
	uint64_t t = now_ns(self->s);
	int err;

	memset(&a, 0, sizeof(a));
	a.qp_state = UR_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = p->access;
	a.qkey = p->qkey;
	err = ur_qp_modify(q, &a, UR_QP_STATE | init_mask[type], t);
	if (err)
		return err;
	a.qp_state = UR_QPS_RTR;
	a.path_mtu = p->path_mtu;
	a.dest_qp_num = ur_qp_num(pq);
	a.rq_psn = peer_psn;
	a.max_dest_rd_atomic = p->max_dest_rd_atomic ? p->max_dest_rd_atomic : p->max_rd_atomic;
	a.min_rnr_timer = p->min_rnr_timer;
	sim_node_av(self, peer, p->tclass, &a.av);
	a.av.path.udp_sport = ur_roce_udp_sport(0, ur_qp_num(q), ur_qp_num(pq));
	err = ur_qp_modify(q, &a, UR_QP_STATE | rtr_mask[type], t);
	if (err)
		return err;
	a.qp_state = UR_QPS_RTS;
	a.sq_psn = my_psn;
	a.timeout = p->timeout;
	a.retry_cnt = p->retry_cnt;
	a.rnr_retry = p->rnr_retry;
	a.max_rd_atomic = p->max_rd_atomic;
	return ur_qp_modify(q, &a, UR_QP_STATE | rts_mask[type], t);
}

int sim_connect_qps(struct sim_node *a, struct ur_qp *qa, struct sim_node *b, struct ur_qp *qb,
		    const struct sim_qp_params *p)
{
	int err = connect_one(a, qa, b, qb, p, p->psn_a, p->psn_b);

	return err ? err : connect_one(b, qb, a, qa, p, p->psn_b, p->psn_a);
}

uint64_t sim_message_wire_bytes(uint32_t len, uint32_t mtu, unsigned kind, bool ipv6, bool sr)
{
	uint32_t n = len ? (len + mtu - 1) / mtu : 1;
	uint64_t per_pkt = UR_ETH_HLEN + (ipv6 ? UR_IPV6_HLEN : UR_IPV4_HLEN) + UR_UDP_HLEN + 12 +
			   UR_ICRC_SIZE + SIM_WIRE_OVERHEAD;
	uint64_t bytes = (uint64_t)n * per_pkt + len + (uint64_t)n * 3; /* pads rounded up later */

	bytes -= (uint64_t)n * 3;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t pl = (i + 1 == n) ? len - i * mtu : mtu;

		bytes += (4 - (pl & 3)) & 3;
	}
	if (sr && (kind == UR_KIND_WRITE || kind == UR_KIND_SEND))
		bytes += (uint64_t)n * sizeof(struct ur_sreth); /* selective repeat extension */
	if (kind == UR_KIND_WRITE)
		bytes += 16; /* RETH on the first packet */
	else if (kind == UR_KIND_READ_RESP)
		bytes += n == 1 ? 4 : 8; /* AETH on first and last responses */
	return bytes;
}
