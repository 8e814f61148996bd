/* SPDX-License-Identifier: BSD-2-Clause */
/* A leaf-spine fabric of output-queued switches (see leafspine.h). */
#include <stdlib.h>
#include <string.h>

#include "leafspine.h"
#include "sim_fabric.h"
#include "ur_util.h"

/* A switch's input from another switch: where that link's frames arrive, and its PFC count. */
struct input {
	struct sim_hop hop; /* first */
	void *sw;	    /* the leaf or spine it belongs to */
	struct sim_ingress ing;
};

struct leaf {
	struct sim_leafspine *ls;
	unsigned idx;
	struct sim_link *up; /* toward each spine */
	struct sim_port *upq;
	struct input *from; /* from each spine */
	struct sim_rng rng; /* spray-random */
};

struct spine {
	struct sim_leafspine *ls;
	unsigned idx;
	struct sim_link *down; /* toward each leaf */
	struct sim_port *downq;
	struct input *from; /* from each leaf */
	uint64_t packets;
};

struct sim_leafspine {
	struct sim *s;
	struct sim_leafspine_cfg c;
	unsigned nhosts;
	struct sim_node **hosts;
	struct leaf *leaves;
	struct spine *spines;
	unsigned *rr; /* spray-round-robin: the next spine of each sender's frames */
	uint64_t hash_key;
};

void sim_leafspine_cfg_default(struct sim_leafspine_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->hosts_per_leaf = 4;
	c->leaves = 4;
	c->spines = 4;
	c->host_rate_bps = 100000000000ull;
	c->fabric_rate_bps = 100000000000ull;
	c->hop_ps = 1 * SIM_PS_PER_US;
	c->queue.buffer_bytes = 1u << 20;
	c->pfc_xoff = 256 * 1024;
	c->pfc_xon = 192 * 1024;
	c->path = SIM_PATH_ECMP;
}

const char *sim_path_policy_name(enum sim_path_policy p)
{
	static const char *const names[] = {"ecmp", "spray-random", "spray-rr", "pinned"};

	return p <= SIM_PATH_PINNED ? names[p] : "?";
}

/* The host a frame is for, from its destination MAC (02:00:00:00:00:N, sim.c). */
static struct sim_node *dest_host(const struct sim_leafspine *ls, const struct sim_pkt *p)
{
	unsigned idx = p->len >= 6 ? p->data[5] : 0;

	/* the address, not the host's copy of it: no cache miss on the host per frame */
	static const uint8_t oui[5] = {0x02, 0, 0, 0, 0};

	if (idx == 0 || idx > ls->nhosts || memcmp(p->data, oui, 5))
		return NULL;
	return ls->hosts[idx - 1];
}

/* A flow's hash: the IP addresses and the UDP source port a RoCEv2 QP pair chose. */
static uint64_t flow_hash(const struct sim_leafspine *ls, const struct sim_pkt *p)
{
	bool v6;
	unsigned off = netem_ip_offset(p->data, p->len, &v6);
	uint64_t x = ls->hash_key;
	unsigned alen = v6 ? 16 : 4, aoff = v6 ? 8 : 12, l4;

	if (!off)
		return sim_splitmix64(&x);
	l4 = off + (v6 ? 40 : (p->data[off] & 0xf) * 4u);
	for (unsigned i = 0; i < 2 * alen && off + aoff + i < p->len; i++)
		x = (x ^ p->data[off + aoff + i]) * 0x100000001b3ull;
	if (l4 + 2 <= p->len)
		x ^= (uint64_t)ur_get_be16(p->data + l4) << 32;
	return sim_splitmix64(&x);
}

static unsigned pick_spine(struct leaf *lf, const struct sim_pkt *p, const struct sim_node *src)
{
	const struct sim_leafspine *ls = lf->ls;
	unsigned n = ls->c.spines;

	switch (ls->c.path) {
	case SIM_PATH_SPRAY_RANDOM:
		return (unsigned)(sim_rng_next(&lf->rng) % n);
	case SIM_PATH_SPRAY_RR: {
		/* in turn per sender: one counter for the whole leaf would lock
		 * senders that start together onto one spine each */
		unsigned *rr = &ls->rr[src ? sim_node_index(src) : 0], k = *rr;

		*rr = (k + 1) % n;
		return k;
	}
	case SIM_PATH_PINNED:
		return src ? (sim_node_index(src) % ls->c.hosts_per_leaf) % n : 0;
	case SIM_PATH_ECMP:
	default:
		return (unsigned)(flow_hash(ls, p) % n);
	}
}

/* The host a frame came from, by its source MAC (NULL for a stranger). */
static struct sim_node *src_host(const struct sim_leafspine *ls, const struct sim_pkt *p)
{
	unsigned idx = p->len >= 12 ? p->data[11] : 0;

	return idx && idx <= ls->nhosts ? ls->hosts[idx - 1] : NULL;
}

/* Queue a frame, counted for PFC against the input it came through when PFC is on. */
static void forward(struct sim *s, const struct sim_leafspine *ls, struct sim_port *port,
		    struct sim_pkt *p, struct input *in, struct sim_node *host)
{
	if (ls->c.pfc)
		sim_port_send_from(s, port, p, in ? &in->ing : NULL, host);
	else
		sim_port_send(s, port, p);
}

/* A frame reaches a leaf from one of its hosts (`host`) or from a spine (`in`). */
static void leaf_route(struct sim *s, struct leaf *lf, struct sim_pkt *p, struct input *in,
		       struct sim_node *host)
{
	struct sim_leafspine *ls = lf->ls;
	struct sim_node *dst = dest_host(ls, p);
	unsigned dleaf;

	if (!dst) {
		sim_pkt_free(s, p); /* no such host */
		return;
	}
	dleaf = sim_node_index(dst) / ls->c.hosts_per_leaf;
	if (dleaf == lf->idx)
		forward(s, ls, sim_node_port(dst), p, in, host);
	else
		forward(s, ls, &lf->upq[pick_spine(lf, p, src_host(ls, p))], p, in, host);
}

static void leaf_arrive(struct sim *s, struct sim_hop *h, struct sim_pkt *p)
{
	struct input *in = (struct input *)h;

	leaf_route(s, in->sw, p, in, NULL);
}

static void spine_arrive(struct sim *s, struct sim_hop *h, struct sim_pkt *p)
{
	struct input *in = (struct input *)h;
	struct spine *sp = in->sw;
	struct sim_node *dst = dest_host(sp->ls, p);

	if (!dst) {
		sim_pkt_free(s, p);
		return;
	}
	sp->packets++;
	forward(s, sp->ls, &sp->downq[sim_node_index(dst) / sp->ls->c.hosts_per_leaf], p, in, NULL);
}

/* A host's frame enters its leaf. */
static void host_ingress(struct sim *s, void *arg, struct sim_node *from, struct sim_pkt *p)
{
	struct sim_leafspine *ls = arg;
	leaf_route(s, &ls->leaves[sim_node_index(from) / ls->c.hosts_per_leaf], p, NULL, from);
}

struct sim_leafspine *sim_leafspine_create(struct sim *s, const struct sim_leafspine_cfg *c,
					   const struct ur_dev_config *dev)
{
	struct sim_leafspine *ls;
	struct sim_link_cfg hl = {.rate_bps = c->host_rate_bps, .prop_ps = c->hop_ps};
	struct sim_queue_cfg hq = c->queue;
	uint64_t seed = sim_seed(s) ^ 0x6c656166737069ull; /* "leafspi" */
	unsigned L = c->leaves, S = c->spines;

	/* MACs and IPv4 addresses carry the host number in one byte (sim.c) */
	if (!c->hosts_per_leaf || !L || !S || (uint64_t)c->hosts_per_leaf * L > 254 ||
	    !c->host_rate_bps || !c->fabric_rate_bps)
		return NULL;
	ls = calloc(1, sizeof(*ls));
	if (!ls)
		return NULL;
	ls->s = s;
	ls->c = *c;
	ls->hash_key = sim_splitmix64(&seed);
	ls->nhosts = c->hosts_per_leaf * L;
	ls->hosts = calloc(ls->nhosts, sizeof(*ls->hosts));
	ls->leaves = calloc(L, sizeof(*ls->leaves));
	ls->spines = calloc(S, sizeof(*ls->spines));
	ls->rr = calloc(ls->nhosts, sizeof(*ls->rr));
	if (!ls->hosts || !ls->leaves || !ls->spines || !ls->rr)
		goto err; /* PFC from a host's leaf port pauses the host (sim.c's model) */
	hq.pfc = c->pfc;
	hq.pfc_xoff = c->pfc_xoff;
	hq.pfc_xon = c->pfc_xon;
	for (unsigned i = 0; i < ls->nhosts; i++) {
		ls->hosts[i] = sim_add_node(s, dev, &hl, &hl, &hq);
		/* the fabric finds hosts by number: they must be the simulation's first */
		if (!ls->hosts[i] || sim_node_index(ls->hosts[i]) != i)
			goto err;
	}
	for (unsigned l = 0; l < L; l++) {
		struct leaf *lf = &ls->leaves[l];
		lf->ls = ls;
		lf->idx = l;
		sim_rng_seed(&lf->rng, sim_splitmix64(&seed));
		lf->up = calloc(S, sizeof(*lf->up));
		lf->upq = calloc(S, sizeof(*lf->upq));
		lf->from = calloc(S, sizeof(*lf->from));
		if (!lf->up || !lf->upq || !lf->from)
			goto err;
	}
	for (unsigned k = 0; k < S; k++) {
		struct spine *sp = &ls->spines[k];
		sp->ls = ls;
		sp->idx = k;
		sp->down = calloc(L, sizeof(*sp->down));
		sp->downq = calloc(L, sizeof(*sp->downq));
		sp->from = calloc(L, sizeof(*sp->from));
		if (!sp->down || !sp->downq || !sp->from)
			goto err;
	}
	for (unsigned l = 0; l < L; l++) {
		for (unsigned k = 0; k < S; k++) {
			struct leaf *lf = &ls->leaves[l];
			struct spine *sp = &ls->spines[k];
			/* the skew sits on the way up, so sprayed packets overtake each other */
			struct sim_link_cfg up = {.rate_bps = c->fabric_rate_bps,
						  .prop_ps = c->hop_ps + k * c->skew_ps};
			struct sim_link_cfg down = {.rate_bps = c->fabric_rate_bps,
						    .prop_ps = c->hop_ps};
			struct input *at_spine = &sp->from[l], *at_leaf = &lf->from[k];

			at_spine->hop.arrive = spine_arrive;
			at_spine->sw = sp;
			at_leaf->hop.arrive = leaf_arrive;
			at_leaf->sw = lf;
			sim_link_init(&lf->up[k], &up, sim_splitmix64(&seed));
			sim_port_init(&lf->upq[k], &lf->up[k], &at_spine->hop, &c->queue,
				      sim_splitmix64(&seed));
			sim_link_init(&sp->down[l], &down, sim_splitmix64(&seed));
			sim_port_init(&sp->downq[l], &sp->down[l], &at_leaf->hop, &c->queue,
				      sim_splitmix64(&seed));
			at_spine->ing = (struct sim_ingress){.upstream = &lf->upq[k],
							     .xoff = c->pfc ? c->pfc_xoff : 0,
							     .xon = c->pfc_xon};
			at_leaf->ing = (struct sim_ingress){.upstream = &sp->downq[l],
							    .xoff = c->pfc ? c->pfc_xoff : 0,
							    .xon = c->pfc_xon};
		}
	}
	sim_set_fabric(s, host_ingress, ls);
	return ls;
err:
	sim_leafspine_destroy(ls);
	return NULL;
}

static void drain(struct sim *s, struct sim_port *q)
{
	while (q->head) {
		struct sim_pkt *p = q->head;

		q->head = p->next;
		sim_pkt_free(s, p);
	}
	q->tail = NULL;
	q->bytes = 0;
}

void sim_leafspine_destroy(struct sim_leafspine *ls)
{
	if (!ls)
		return;
	sim_set_fabric(ls->s, NULL, NULL);
	for (unsigned l = 0; ls->leaves && l < ls->c.leaves; l++) {
		for (unsigned k = 0; ls->leaves[l].upq && k < ls->c.spines; k++)
			drain(ls->s, &ls->leaves[l].upq[k]);
		free(ls->leaves[l].up);
		free(ls->leaves[l].upq);
		free(ls->leaves[l].from);
	}
	for (unsigned k = 0; ls->spines && k < ls->c.spines; k++) {
		for (unsigned l = 0; ls->spines[k].downq && l < ls->c.leaves; l++)
			drain(ls->s, &ls->spines[k].downq[l]);
		free(ls->spines[k].down);
		free(ls->spines[k].downq);
		free(ls->spines[k].from);
	}
	free(ls->leaves);
	free(ls->spines);
	free(ls->hosts);
	free(ls->rr);
	free(ls);
}

unsigned sim_leafspine_nhosts(const struct sim_leafspine *ls)
{
	return ls->nhosts;
}

struct sim_node *sim_leafspine_host(const struct sim_leafspine *ls, unsigned i)
{
	return i < ls->nhosts ? ls->hosts[i] : NULL;
}

static void add_queue(struct sim_leafspine_stats *st, const struct sim_queue_stats *q,
		      uint64_t span)
{
	double mean = span ? q->byte_ps / (double)span : 0;

	st->queue_mean += mean;
	if (mean > st->queue_hot)
		st->queue_hot = mean;
	if (q->max_bytes > st->queue_max)
		st->queue_max = q->max_bytes;
	st->pauses += q->pauses;
	st->dropped += q->dropped;
	st->ecn_marked += q->ecn_marked;
}

void sim_leafspine_stats(const struct sim_leafspine *ls, uint64_t since_ps,
			 struct sim_leafspine_stats *st)
{
	uint64_t now = sim_now(ls->s), span = now > since_ps ? now - since_ps : 0;

	memset(st, 0, sizeof(*st));
	for (unsigned i = 0; i < ls->nhosts; i++) {
		struct sim_queue_stats q = sim_node_queue_stats(ls->hosts[i]);

		add_queue(st, &q, span);
	}
	for (unsigned l = 0; l < ls->c.leaves; l++)
		for (unsigned k = 0; k < ls->c.spines; k++) {
			struct sim_queue_stats up = sim_port_stats(ls->s, &ls->leaves[l].upq[k]),
					       down =
						   sim_port_stats(ls->s, &ls->spines[k].downq[l]);

			add_queue(st, &up, span);
			add_queue(st, &down, span);
		}
	st->queue_mean /= ls->nhosts + 2.0 * ls->c.leaves * ls->c.spines;
	for (unsigned k = 0; k < ls->c.spines && k < 64; k++)
		st->spine_packets[k] = ls->spines[k].packets;
}
