/* SPDX-License-Identifier: BSD-2-Clause */
/* The device's QP number -> QP map: multiplicative hash, linear probing,
 * tombstone-free deletion. */
#include <errno.h>
#include <stdlib.h>

#include "qp.h"

static uint32_t slot_of(uint32_t qpn, uint32_t mask)
{
	return (qpn * 2654435761u) >> 8 & mask;
}

struct ur_qp *ur_dev_find_qp(const struct ur_dev *dev, uint32_t qpn)
{
	for (uint32_t i = slot_of(qpn, dev->qp_hash_mask);; i = (i + 1) & dev->qp_hash_mask) {
		struct ur_qp *qp = dev->qp_hash[i];

		if (!qp || qp->qpn == qpn)
			return qp;
	}
}

static void hash_insert(struct ur_qp **tab, uint32_t mask, struct ur_qp *qp)
{
	uint32_t i = slot_of(qp->qpn, mask);

	while (tab[i])
		i = (i + 1) & mask;
	tab[i] = qp;
}

int ur_dev_add_qp(struct ur_dev *dev, struct ur_qp *qp)
{
	if ((dev->nqp + 1) * 2 > dev->qp_hash_mask + 1) {
		uint32_t mask = dev->qp_hash_mask * 2 + 1;
		struct ur_qp **tab = calloc(mask + 1, sizeof(*tab));

		if (!tab)
			return -ENOMEM;
		for (uint32_t i = 0; i <= dev->qp_hash_mask; i++)
			if (dev->qp_hash[i])
				hash_insert(tab, mask, dev->qp_hash[i]);
		free(dev->qp_hash);
		dev->qp_hash = tab;
		dev->qp_hash_mask = mask;
	}
	hash_insert(dev->qp_hash, dev->qp_hash_mask, qp);
	dev->nqp++;
	return 0;
}

void ur_dev_del_qp(struct ur_dev *dev, struct ur_qp *qp)
{
	uint32_t mask = dev->qp_hash_mask, i = slot_of(qp->qpn, dev->qp_hash_mask);

	while (dev->qp_hash[i] != qp) {
		if (!dev->qp_hash[i])
			return;
		i = (i + 1) & mask;
	}
	dev->qp_hash[i] = NULL;
	dev->nqp--;
	/* re-place the rest of the probe run so lookups never stop early */
	for (i = (i + 1) & mask; dev->qp_hash[i]; i = (i + 1) & mask) {
		struct ur_qp *moved = dev->qp_hash[i];

		dev->qp_hash[i] = NULL;
		hash_insert(dev->qp_hash, mask, moved);
	}
}
