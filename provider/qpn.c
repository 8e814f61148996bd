/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * QP numbers: unique on the device across processes (each process owns
 * blocks of 4096, see shared.h), handed out round-robin within what this
 * process owns so a destroyed QP's number is not reused at once: a late
 * packet for the old QP must not land on a new one. The round continues
 * where the block's previous owner left off, for the same reason across
 * processes: the peers of one that crashed retry to its numbers for a while.
 * Received frames follow the blocks (steer.c): a new block widens the
 * filter before its first number leaves this function, so no packet for it
 * can arrive unseen.
 */
#include <errno.h>

#include "uroce.h"

#define PER_BLOCK (1u << UROCE_QPN_BLOCK_BITS)

int uroce_qpn_alloc(struct uroce_nic *nic, uint32_t *qpn)
{
	for (;;) {
		unsigned owned = nic->shared.nblocks;
		uint32_t total = owned * PER_BLOCK;

		for (uint32_t k = 0; k < total; k++) {
			uint32_t pos = (nic->qpn_cursor + k) % total;
			uint32_t b = pos / PER_BLOCK, i = pos % PER_BLOCK;
			uint64_t *word = &nic->qpn_bits[b][i / 64];

			if (*word & (1ull << (i % 64)))
				continue;
			*word |= 1ull << (i % 64);
			nic->qpn_cursor = pos + 1;
			uroce_shared_index_used(&nic->shared, b, i);
			*qpn = nic->shared.blocks[b] << UROCE_QPN_BLOCK_BITS | i;
			return 0;
		}
		/* every number we own is in use: claim another block */
		if (uroce_shared_claim_block(&nic->shared) < 0)
			return -ENOMEM;
		nic->qpn_cursor = owned * PER_BLOCK + uroce_shared_next_index(&nic->shared, owned);
		if (uroce_steer_update(nic))
			return -ENOMEM;
	}
}

void uroce_qpn_init(struct uroce_nic *nic)
{
	nic->qpn_cursor = uroce_shared_next_index(&nic->shared, 0);
}

void uroce_qpn_free(struct uroce_nic *nic, uint32_t qpn)
{
	uint32_t block = qpn >> UROCE_QPN_BLOCK_BITS, i = qpn & (PER_BLOCK - 1);

	for (unsigned b = 0; b < nic->shared.nblocks; b++)
		if (nic->shared.blocks[b] == block)
			nic->qpn_bits[b][i / 64] &= ~(1ull << (i % 64));
}
