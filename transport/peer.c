/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Each destination's cap on unacknowledged request packets. One QP never
 * has more than cfg.max_inflight out, which the peer's receive ring
 * absorbs; a thousand QPs to one peer together had up to a million and
 * overran it (dp_rx_ring_drops), so the QPs toward one peer share
 * cfg.max_peer_inflight and those with more to send wait, FIFO, until ACKs
 * make room. The cap is per peer, not per device: with one for the whole
 * device, the QPs to a stopped process held all of it and the traffic to
 * every other peer stopped too (test/net/fanout.sh).
 *
 * Peers live in a chained hash keyed by (GID, QPN block), bound to a QP
 * when modify gives it a destination; the per-packet work is counting on
 * the peer the QP already points at.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "peer.h"
#include "psn.h"
#include "qp.h"

static uint32_t peer_hash(const struct ur_gid *gid, uint32_t block)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (int i = 0; i < 16; i++)
		h = (h ^ gid->raw[i]) * 16777619u;
	h = (h ^ block) * 16777619u;
	return h ^ h >> 16;
}

static struct ur_peer *find(const struct ur_dev *dev, const struct ur_gid *gid, uint32_t block)
{
	struct ur_peer *p;

	if (!dev->peer_hash)
		return NULL;
	p = dev->peer_hash[peer_hash(gid, block) & dev->peer_hash_mask];
	while (p && (p->block != block || memcmp(p->gid.raw, gid->raw, 16)))
		p = p->hash_next;
	return p;
}

/* Twice the buckets when there are more peers than buckets. */
static int grow(struct ur_dev *dev)
{
	uint32_t n = dev->peer_hash ? (dev->peer_hash_mask + 1) * 2 : 16;
	struct ur_peer **tab = calloc(n, sizeof(*tab));

	if (!tab)
		return -ENOMEM;
	for (uint32_t i = 0; dev->peer_hash && i <= dev->peer_hash_mask; i++) {
		struct ur_peer *p = dev->peer_hash[i], *next;

		for (; p; p = next) {
			uint32_t b = peer_hash(&p->gid, p->block) & (n - 1);

			next = p->hash_next;
			p->hash_next = tab[b];
			tab[b] = p;
		}
	}
	free(dev->peer_hash);
	dev->peer_hash = tab;
	dev->peer_hash_mask = n - 1;
	return 0;
}

static struct ur_peer *create(struct ur_dev *dev, const struct ur_gid *gid, uint32_t block)
{
	struct ur_peer *p;
	uint32_t b;

	if (!dev->peer_hash || dev->npeers >= dev->peer_hash_mask + 1)
		if (grow(dev) && !dev->peer_hash)
			return NULL; /* a table that could not grow still serves */
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->gid = *gid;
	p->block = block;
	b = peer_hash(gid, block) & dev->peer_hash_mask;
	p->hash_next = dev->peer_hash[b];
	dev->peer_hash[b] = p;
	dev->npeers++;
	return p;
}

static void destroy(struct ur_dev *dev, struct ur_peer *p)
{
	struct ur_peer **pp = &dev->peer_hash[peer_hash(&p->gid, p->block) & dev->peer_hash_mask];

	while (*pp != p)
		pp = &(*pp)->hash_next;
	*pp = p->hash_next;
	dev->npeers--;
	free(p);
}

/* Room again: the waiting QPs go back on the round robin, oldest first,
 * one for each packet there is room for. Waking them all made a thousand
 * capped QPs each take a turn only to wait again. */
static void wake(struct ur_dev *dev, struct ur_peer *p)
{
	uint32_t room =
	    dev->cfg.max_peer_inflight - UR_MIN(p->inflight, dev->cfg.max_peer_inflight);

	while (p->capped && room--) {
		struct ur_qp *w = p->capped;

		p->capped = w->capped_next;
		if (!p->capped)
			p->capped_tail = NULL;
		w->capped = false;
		w->capped_next = NULL;
		ur_dev_schedule(dev, w);
	}
}

void ur_peer_uncap(struct ur_qp *qp)
{
	struct ur_peer *p = qp->peer;
	struct ur_qp **cp, *before = NULL;

	if (!qp->capped)
		return;
	cp = &p->capped;
	while (*cp && *cp != qp) {
		before = *cp;
		cp = &(*cp)->capped_next;
	}
	if (*cp)
		*cp = qp->capped_next;
	if (p->capped_tail == qp)
		p->capped_tail = before;
	qp->capped = false;
	qp->capped_next = NULL;
}

void ur_peer_unbind(struct ur_dev *dev, struct ur_qp *qp)
{
	struct ur_peer *p = qp->peer;

	if (!p)
		return;
	ur_peer_uncap(qp);
	p->inflight -= qp->inflight_counted;
	qp->peer = NULL;
	if (--p->refs == 0)
		destroy(dev, p);
	else
		wake(dev, p);
}

int ur_peer_bind(struct ur_dev *dev, struct ur_qp *qp, const struct ur_gid *gid, uint32_t dqpn)
{
	uint32_t block = dqpn >> dev->cfg.peer_qpn_shift;
	struct ur_peer *p = qp->peer;
	bool was_capped;

	if (p && p->block == block && !memcmp(p->gid.raw, gid->raw, 16))
		return 0;
	p = find(dev, gid, block);
	if (!p)
		p = create(dev, gid, block);
	if (!p)
		return -ENOMEM;
	p->refs++; /* before the unbind, which may free a peer */
	was_capped = qp->capped;
	ur_peer_unbind(dev, qp);
	qp->peer = p;
	p->inflight += qp->inflight_counted;
	/* it waited for room on the old peer (SQD -> SQD moved its path):
	 * off that wait, it asks the new peer on its next turn */
	if (was_capped)
		ur_dev_schedule(dev, qp);
	return 0;
}

void ur_peer_table_fini(struct ur_dev *dev)
{
	for (uint32_t i = 0; dev->peer_hash && i <= dev->peer_hash_mask; i++)
		while (dev->peer_hash[i]) {
			struct ur_peer *p = dev->peer_hash[i];

			dev->peer_hash[i] = p->hash_next;
			free(p);
		}
	free(dev->peer_hash);
	dev->peer_hash = NULL;
	dev->npeers = 0;
}

uint32_t ur_peer_max_inflight(const struct ur_dev *dev)
{
	uint32_t max = 0;

	for (uint32_t i = 0; dev->peer_hash && i <= dev->peer_hash_mask; i++)
		for (const struct ur_peer *p = dev->peer_hash[i]; p; p = p->hash_next)
			max = UR_MAX(max, p->inflight);
	return max;
}

void ur_dev_account(struct ur_dev *dev, struct ur_qp *qp)
{
	enum ur_qp_state st = qp_state(qp);
	struct ur_peer *p = qp->peer;
	int32_t out = 0;

	if (!p)
		return; /* never given a destination: it sends nothing */
	if (qp->svc->acknowledged && (st == UR_QPS_RTS || st == UR_QPS_SQD || st == UR_QPS_SQE))
		out = UR_MAX(ur_psn_diff(qp->req.psn, qp->req.una), 0);
	p->inflight += (uint32_t)out - qp->inflight_counted;
	qp->inflight_counted = (uint32_t)out;
	wake(dev, p);
}

bool ur_dev_room(struct ur_dev *dev, struct ur_qp *qp)
{
	struct ur_peer *p = qp->peer;

	if (!qp->svc->acknowledged || !p)
		return true;
	ur_dev_account(dev, qp); /* count what it sent in this turn */
	if (p->inflight < dev->cfg.max_peer_inflight)
		return true;
	if (!qp->capped) {
		/* FIFO, so every waiting QP gets its turn */
		if (p->capped_tail)
			p->capped_tail->capped_next = qp;
		else
			p->capped = qp;
		p->capped_tail = qp;
		qp->capped = true;
		qp->capped_next = NULL;
	}
	return false;
}
