/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Lending a memif connection's rings to another process (memif.h,
 * docs/shared-device.md 4.6): the device daemon holds the wire's memif
 * connection and lends its rings to a program alone on the device, which
 * then moves its frames on the wire itself, with no hop through the daemon.
 *
 * A loan is the regions (their memfds), where each ring lies, the rings'
 * eventfds and the few numbers the rings' users need; the connection's
 * control socket stays with the lender, which alone notices the peer
 * leave. No cursor crosses: at a hand-over both sides are quiescent (all
 * published, all read frames given back), and the rings' own indices say
 * where each side stands (dp_memif_resync), as memif's server finds them
 * at a handshake.
 *
 * The borrower checks a loan as a server checks a client's setup: a region
 * must be as large as it says and sealed, a ring must lie inside one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memif_wire.h"

#define LOAN_GATHER_BYTES 16384 /* as memif_ctl.c's: the largest frame in pieces */

/* Where r lies: its region and offset, or -1. */
static int ring_place(const struct dp_memif *m, const struct memif_ring *r, uint64_t *offset)
{
	for (unsigned i = 0; i < m->nregions; i++) {
		const uint8_t *base = m->region[i];

		if ((const uint8_t *)r >= base && (const uint8_t *)r < base + m->region_size[i]) {
			*offset = (uint64_t)((const uint8_t *)r - base);
			return (int)i;
		}
	}
	return -1;
}

int dp_memif_lend(const struct dp_memif *m, int sock, uint32_t gen)
{
	struct memif_msg msg;

	if (!m->connected || !m->c2s || !m->s2c)
		return -ENOTCONN;
	for (unsigned i = 0; i < m->nregions; i++) {
		msg = (struct memif_msg){.type = MSG_UROCE_LEND_REGION};
		msg.lend_part.gen = gen;
		msg.lend_part.index = (uint8_t)i;
		msg.lend_part.size = m->region_size[i];
		if (dp_memif_msg_send(sock, &msg, m->region_fd[i]))
			return -EIO;
	}
	for (int c2s = 1; c2s >= 0; c2s--) {
		uint64_t off;
		int region = ring_place(m, c2s ? m->c2s : m->s2c, &off);

		if (region < 0)
			return -EINVAL;
		msg = (struct memif_msg){.type = MSG_UROCE_LEND_RING};
		msg.lend_part.gen = gen;
		msg.lend_part.c2s = (uint8_t)c2s;
		msg.lend_part.region = (uint8_t)region;
		msg.lend_part.offset = off;
		if (dp_memif_msg_send(sock, &msg, c2s ? m->c2s_fd : m->s2c_fd))
			return -EIO;
	}
	msg = (struct memif_msg){.type = MSG_UROCE_LEND};
	msg.lend.gen = gen;
	msg.lend.server = m->server;
	msg.lend.stamps = m->stamps;
	msg.lend.nregions = (uint8_t)m->nregions;
	msg.lend.ring_size = m->ring_size;
	msg.lend.bsize = m->bsize;
	return dp_memif_msg_send(sock, &msg, -1) ? -EIO : 0;
}

static int bad_loan(struct dp_memif *loan, int fd)
{
	if (fd >= 0)
		close(fd);
	dp_memif_give_back(loan);
	return -EINVAL;
}

/* A ring the lender placed at region:offset, if its descriptors lie wholly inside. */
static struct memif_ring *loan_ring(struct dp_memif *loan, unsigned region, uint64_t offset,
				    uint16_t ring_size)
{
	if (region >= loan->nregions || offset % 64 ||
	    offset + sizeof(struct memif_ring) + (uint64_t)ring_size * sizeof(struct memif_desc) >
		loan->region_size[region])
		return NULL;
	return (struct memif_ring *)((uint8_t *)loan->region[region] + offset);
}

int dp_memif_borrow(struct dp_memif *loan, const struct memif_msg *msg, int fd)
{
	switch (msg->type) {
	case MSG_UROCE_LEND_REGION:
		if (fd < 0 || msg->lend_part.index != loan->nregions ||
		    dp_memif_map_region(loan, fd, msg->lend_part.size))
			return bad_loan(loan, fd);
		return 0;
	case MSG_UROCE_LEND_RING: {
		bool c2s = msg->lend_part.c2s;
		int *efd = c2s ? &loan->c2s_fd : &loan->s2c_fd;

		if (fd < 0 || *efd >= 0 || msg->lend_part.region >= loan->nregions)
			return bad_loan(loan, fd);
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		*efd = fd;
		loan->loan_region[c2s] = msg->lend_part.region;
		loan->loan_offset[c2s] = msg->lend_part.offset;
		return 0;
	}
	case MSG_UROCE_LEND: {
		uint16_t n = msg->lend.ring_size;

		if (loan->c2s_fd < 0 || loan->s2c_fd < 0 || msg->lend.nregions != loan->nregions ||
		    !n || (n & (n - 1)) || n > 1u << MEMIF_MAX_LOG2_RING || msg->lend.bsize < 128)
			return bad_loan(loan, -1);
		loan->c2s = loan_ring(loan, loan->loan_region[1], loan->loan_offset[1], n);
		loan->s2c = loan_ring(loan, loan->loan_region[0], loan->loan_offset[0], n);
		if (!loan->c2s || !loan->s2c)
			return bad_loan(loan, -1);
		loan->gather_cap = LOAN_GATHER_BYTES;
		loan->gather = malloc(loan->gather_cap);
		if (!loan->gather)
			return bad_loan(loan, -1);
		loan->server = msg->lend.server;
		loan->stamps = msg->lend.stamps;
		loan->ring_size = n;
		loan->bsize = msg->lend.bsize;
		loan->borrowed = true;
		loan->connected = true;
		dp_memif_resync(loan);
		return 1;
	}
	default:
		if (fd >= 0)
			close(fd);
		return -EINVAL;
	}
}

void dp_memif_loan_start(struct dp_memif *loan)
{
	memset(loan, 0, sizeof(*loan));
	loan->c2s_fd = loan->s2c_fd = loan->ctl_fd = loan->listen_fd = -1;
}

void dp_memif_give_back(struct dp_memif *loan)
{
	dp_memif_free_shared(loan);
	free(loan->gather);
	dp_memif_loan_start(loan);
}

void dp_memif_resync(struct dp_memif *m)
{
	if (m->server) {
		m->rx_last = __atomic_load_n(&m->c2s->tail, __ATOMIC_ACQUIRE);
		m->tx_next = __atomic_load_n(&m->s2c->tail, __ATOMIC_ACQUIRE);
	} else {
		/* the client offers every buffer it has read back: head runs a ring ahead */
		m->rx_last = (uint16_t)(__atomic_load_n(&m->s2c->head, __ATOMIC_ACQUIRE) - m->ring_size);
		m->tx_next = __atomic_load_n(&m->c2s->head, __ATOMIC_ACQUIRE);
	}
	m->rx_end = m->rx_last;
	m->rx_seen = 0;
	m->tx_published = m->tx_end = m->tx_next;
	m->tx_frames = 0;
	m->tx_reserved = false;
	m->armed = false;
}

int dp_memif_send_loan(struct dp_memif *m, uint16_t type, uint32_t gen)
{
	struct memif_msg msg = {.type = type};

	msg.loan.gen = gen;
	if (m->ctl_fd < 0)
		return -ENOTCONN;
	return dp_memif_msg_send(m->ctl_fd, &msg, -1) ? -EIO : 0;
}

uint16_t dp_memif_msg_type(const struct memif_msg *msg)
{
	return msg->type;
}

uint32_t dp_memif_msg_gen(const struct memif_msg *msg)
{
	/* the first field of every loan message */
	return msg->loan.gen;
}

/* The word sits in the daemon-to-program ring's header, in the program's memory. */
void dp_memif_revoke(struct dp_memif *m, uint32_t gen)
{
	if (m->connected && m->s2c)
		__atomic_store_n(&m->s2c->revoked, gen, __ATOMIC_RELEASE);
}

bool dp_memif_revoked(const struct dp_memif *m, uint32_t gen)
{
	return m->connected && m->s2c && __atomic_load_n(&m->s2c->revoked, __ATOMIC_ACQUIRE) == gen;
}
