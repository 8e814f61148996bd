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

int uroce_qpn_alloc(struct uroce_context *ctx, uint32_t *qpn)
{
	for (;;) {
		unsigned owned = ctx->shared.nblocks;
		uint32_t total = owned * PER_BLOCK;

		for (uint32_t k = 0; k < total; k++) {
			uint32_t pos = (ctx->qpn_cursor + k) % total;
			uint32_t b = pos / PER_BLOCK, i = pos % PER_BLOCK;
			uint64_t *word = &ctx->qpn_bits[b][i / 64];

			if (*word & (1ull << (i % 64)))
				continue;
			*word |= 1ull << (i % 64);
			ctx->qpn_cursor = pos + 1;
			uroce_shared_index_used(&ctx->shared, b, i);
			*qpn = ctx->shared.blocks[b] << UROCE_QPN_BLOCK_BITS | i;
			return 0;
		}
		/* every number we own is in use: claim another block */
		if (uroce_shared_claim_block(&ctx->shared) < 0)
			return -ENOMEM;
		ctx->qpn_cursor = owned * PER_BLOCK + uroce_shared_next_index(&ctx->shared, owned);
		if (uroce_steer_update(ctx))
			return -ENOMEM;
	}
}

void uroce_qpn_init(struct uroce_context *ctx)
{
	ctx->qpn_cursor = uroce_shared_next_index(&ctx->shared, 0);
}

void uroce_qpn_free(struct uroce_context *ctx, uint32_t qpn)
{
	uint32_t block = qpn >> UROCE_QPN_BLOCK_BITS, i = qpn & (PER_BLOCK - 1);

	for (unsigned b = 0; b < ctx->shared.nblocks; b++)
		if (ctx->shared.blocks[b] == block)
			ctx->qpn_bits[b][i / 64] &= ~(1ull << (i % 64));
}
