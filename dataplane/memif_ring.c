/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * memif's rings (memif_wire.h has the layout): frames handed up in place
 * from the shared buffers, frames built in them or copied in. Indices are
 * free-running 16-bit counters masked at use. Every index and descriptor
 * the peer writes is bounded before use.
 *
 * Ordering: an index moves with a release store after the descriptors and
 * buffers it covers are written, and is read with an acquire load before
 * they are: the peer runs on another core (x86 needs no fence for either,
 * but the compiler must not move the buffer accesses across).
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "memif_wire.h"

/* ---- receive ---- */

/* A frame in pieces (DESC_FLAG_NEXT) gathered into one buffer, or NULL if it is bad. */
static const uint8_t *gather(struct dp_memif *m, struct memif_ring *r, uint16_t end, uint32_t *len)
{
	uint16_t mask = (uint16_t)(m->ring_size - 1);
	uint32_t off = 0;
	bool ok = true;

	for (;;) {
		struct memif_desc d = memif_desc_read(&r->desc[m->rx_last & mask]);
		const uint8_t *b = memif_desc_buf(m, &d, d.length);
		bool more = d.flags & MEMIF_DESC_FLAG_NEXT;

		if (!b || d.length > m->gather_cap - off) {
			ok = false;
		} else {
			memcpy(m->gather + off, b, d.length);
			off += d.length;
		}
		m->rx_last++;
		m->rx_seen++;
		if (!more || m->rx_last == end)
			break;
	}
	*len = off;
	return ok ? m->gather : NULL;
}

const uint8_t *dp_memif_rx_next(struct dp_memif *m, uint32_t *len)
{
	struct memif_ring *r = m->server ? m->c2s : m->s2c;
	uint16_t mask = (uint16_t)(m->ring_size - 1);

	if (!m->connected)
		return NULL;
	/* the producer moves head (client to server) or tail (server to client),
	 * a line it writes: read again only once the slots it gave are read.
	 * One that claims more than a ring's worth is not believed */
	if (m->rx_last == m->rx_end) {
		uint16_t end = __atomic_load_n(m->server ? &r->head : &r->tail, __ATOMIC_ACQUIRE);

		if ((uint16_t)(end - m->rx_last) > m->ring_size)
			end = (uint16_t)(m->rx_last + m->ring_size);
		m->rx_end = end;
	}
	while (m->rx_last != m->rx_end) {
		struct memif_desc d = memif_desc_read(&r->desc[m->rx_last & mask]);
		const uint8_t *b;

		m->rx_stamp = d.metadata;
		m->rx_flags = d.flags & (uint16_t)~MEMIF_DESC_FLAG_NEXT;
		if (d.flags & MEMIF_DESC_FLAG_NEXT) {
			b = gather(m, r, m->rx_end, len);
		} else {
			*len = d.length;
			b = memif_desc_buf(m, &d, *len);
			m->rx_last++;
			m->rx_seen++;
			/* the next frame's headers on their way while this one is read */
			if (m->rx_last != m->rx_end) {
				struct memif_desc n = memif_desc_read(&r->desc[m->rx_last & mask]);
				const uint8_t *nb = memif_desc_buf(m, &n, 128);

				if (nb)
					__builtin_prefetch(nb);
			}
		}
		if (b)
			return b;
		m->bad_desc++;
	}
	return NULL;
}

bool dp_memif_rx_pending(const struct dp_memif *m)
{
	const struct memif_ring *r = m->server ? m->c2s : m->s2c;

	return m->connected &&
	       __atomic_load_n(m->server ? &r->head : &r->tail, __ATOMIC_ACQUIRE) != m->rx_last;
}

uint32_t dp_memif_rx_oldest_stamp(const struct dp_memif *m)
{
	const struct memif_ring *r = m->server ? m->c2s : m->s2c;

	if (!dp_memif_rx_pending(m))
		return 0;
	return memif_desc_read(&r->desc[m->rx_last & (m->ring_size - 1)]).metadata;
}

/* The ring we receive on, its producer's index, and the eventfd it signals. */
static struct memif_ring *rx_ring(const struct dp_memif *m)
{
	return m->server ? m->c2s : m->s2c;
}

int dp_memif_rx_signal_fd(const struct dp_memif *m)
{
	return m->server ? m->c2s_fd : m->s2c_fd;
}

int dp_memif_arm(struct dp_memif *m)
{
	struct memif_ring *r = rx_ring(m);
	int fd = dp_memif_rx_signal_fd(m);
	uint16_t end;

	/* a server with no client yet: the next client wakes it */
	if (!m->connected)
		return m->server ? m->listen_fd : -1;
	if (fd < 0)
		return -1;
	__atomic_store_n(&r->flags, (uint16_t)(r->flags & ~MEMIF_RING_FLAG_MASK_INT),
			 __ATOMIC_RELAXED);
	m->armed = true;
	/* Our flag before our look at the producer's index, as the producer
	 * publishes its index before it looks at our flag: one of us sees the
	 * other (a store then a load needs the full fence on both sides). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	end = __atomic_load_n(m->server ? &r->head : &r->tail, __ATOMIC_ACQUIRE);
	if (end != m->rx_last) {
		dp_memif_disarm(m);
		return -EAGAIN;
	}
	return fd;
}

void dp_memif_mask(struct dp_memif *m)
{
	if (m->armed && m->connected)
		rx_ring(m)->flags |= MEMIF_RING_FLAG_MASK_INT;
}

void dp_memif_disarm_keep(struct dp_memif *m)
{
	if (!m->armed)
		return;
	m->armed = false;
	if (m->connected)
		rx_ring(m)->flags |= MEMIF_RING_FLAG_MASK_INT;
}

void dp_memif_disarm(struct dp_memif *m)
{
	bool signalled = m->armed && m->connected;
	uint64_t n;

	dp_memif_disarm_keep(m);
	/* empty the eventfd, or every later poll would return at once */
	if (signalled)
		(void)!read(dp_memif_rx_signal_fd(m), &n, sizeof(n));
}

void dp_memif_rx_done(struct dp_memif *m)
{
	uint16_t head;

	if (!m->rx_seen || !m->connected)
		return;
	m->rx_seen = 0;
	if (m->server) {
		__atomic_store_n(&m->c2s->tail, m->rx_last, __ATOMIC_RELEASE);
		return;
	}
	/* offer the buffers read back to the server, their full size again */
	head = m->s2c->head;
	while ((uint16_t)(head - m->rx_last) < m->ring_size) {
		struct memif_desc *d = &m->s2c->desc[head & (m->ring_size - 1)];

		d->length = m->bsize;
		d->flags = 0;
		head++;
	}
	__atomic_store_n(&m->s2c->head, head, __ATOMIC_RELEASE);
}

/* ---- transmit ---- */

/*
 * Our producer position runs ahead of what the peer sees: frames are
 * written into slots from tx_next on and become visible when published
 * (head on the client-to-server ring, tail on the other).
 */
static struct memif_ring *tx_ring(const struct dp_memif *m)
{
	return m->server ? m->s2c : m->c2s;
}

/* Slots free from tx_next on, read from the peer's index now and kept:
 * the peer only ever frees more, so what was read stays true. */
static uint16_t tx_room(struct dp_memif *m)
{
	const struct memif_ring *r = tx_ring(m);
	uint16_t room;

	if (m->server) {
		room = (uint16_t)(__atomic_load_n(&r->head, __ATOMIC_ACQUIRE) - m->tx_next);
		/* the client's head is not believed past a ring */
		if (room > m->ring_size)
			room = m->ring_size;
	} else {
		room = (uint16_t)(m->tx_next - __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE));
		room = room > m->ring_size ? 0 : (uint16_t)(m->ring_size - room);
	}
	m->tx_end = (uint16_t)(m->tx_next + room);
	return room;
}

bool dp_memif_tx_full(struct dp_memif *m)
{
	return m->connected && !tx_room(m);
}

unsigned dp_memif_tx_space(struct dp_memif *m)
{
	return m->connected ? tx_room(m) : 0;
}

bool dp_memif_tx_room_over(struct dp_memif *m, unsigned keep)
{
	return m->connected && ((uint16_t)(m->tx_end - m->tx_next) > keep || tx_room(m) > keep);
}

unsigned dp_memif_tx_publish(struct dp_memif *m)
{
	struct memif_ring *r = tx_ring(m);
	unsigned n;

	if (!m->connected || m->tx_next == m->tx_published)
		return 0;
	n = m->tx_frames;
	m->tx_frames = 0;
	m->tx_published = m->tx_next;
	__atomic_store_n(m->server ? &r->tail : &r->head, m->tx_next, __ATOMIC_RELEASE);
	/* a consumer that sleeps on its eventfd wants a wake-up: our index
	 * before our look at its flag (dp_memif_arm fences the other way) */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!(__atomic_load_n(&r->flags, __ATOMIC_RELAXED) & MEMIF_RING_FLAG_MASK_INT)) {
		uint64_t one = 1;
		int fd = m->server ? m->s2c_fd : m->c2s_fd;
		/* a failed write: the eventfd is full, the consumer awake anyway */
		ssize_t w = fd >= 0 ? write(fd, &one, sizeof(one)) : 0;

		(void)w;
	}
	return n;
}

uint8_t *dp_memif_tx_reserve(struct dp_memif *m, uint32_t need, uint32_t *cap)
{
	struct memif_desc d;
	uint8_t *b;

	if (m->tx_reserved || !dp_memif_tx_room_over(m, 0))
		return NULL;
	d = memif_desc_read(&tx_ring(m)->desc[m->tx_next & (m->ring_size - 1)]);
	/* a server fills what the client offered; a client its own buffers */
	*cap = m->server ? d.length : m->bsize;
	if (*cap < need)
		return NULL;
	b = memif_desc_buf(m, &d, *cap);
	if (!b) {
		m->bad_desc++;
		return NULL;
	}
	m->tx_reserved = true;
	m->tx_buf = b;
	/* the next frame's buffer, written soon: its first lines on their way */
	d = memif_desc_read(&tx_ring(m)->desc[(m->tx_next + 1) & (m->ring_size - 1)]);
	if ((b = memif_desc_buf(m, &d, 128)))
		__builtin_prefetch(b, 1);
	return m->tx_buf;
}

void dp_memif_tx_commit(struct dp_memif *m, uint32_t len)
{
	struct memif_desc *d;

	if (!m->tx_reserved)
		return;
	m->tx_reserved = false;
	if (!len || !m->connected)
		return;
	d = &tx_ring(m)->desc[m->tx_next & (m->ring_size - 1)];
	d->length = len;
	d->flags = m->tx_flags;
	d->metadata = m->tx_stamp;
	m->tx_next++;
	m->tx_frames++;
}

/* Copy one frame into slots from tx_next on, in pieces if the buffers are smaller: false if it does
 * not fit. */
static bool put_frame(struct dp_memif *m, uint16_t room, const uint8_t *f, uint32_t len)
{
	struct memif_ring *r = tx_ring(m);
	uint16_t s = m->tx_next, mask = (uint16_t)(m->ring_size - 1);
	uint32_t off = 0;

	while (off < len) {
		struct memif_desc *d = &r->desc[s & mask], c;
		uint32_t cap, n;
		uint8_t *b;

		if (!room--)
			return false;
		c = memif_desc_read(d);
		/* a server fills what the client offered; a client its own buffers */
		cap = m->server ? c.length : m->bsize;
		n = len - off < cap ? len - off : cap;
		b = memif_desc_buf(m, &c, n);
		if (!b || !n) {
			m->bad_desc++;
			return false;
		}
		memcpy(b, f + off, n);
		d->length = n;
		off += n;
		d->flags = (uint16_t)(m->tx_flags | (off < len ? MEMIF_DESC_FLAG_NEXT : 0));
		d->metadata = m->tx_stamp;
		s++;
	}
	m->tx_next = s;
	m->tx_frames++;
	return true;
}

unsigned dp_memif_tx(struct dp_memif *m, const uint8_t *const *frames, const uint32_t *lens,
		     unsigned n)
{
	unsigned sent = 0;

	if (!m->connected || m->tx_reserved)
		return 0;
	for (uint16_t room = tx_room(m); sent < n; sent++) {
		uint16_t before = m->tx_next;

		if (!put_frame(m, room, frames[sent], lens[sent]))
			break;
		room = (uint16_t)(room - (uint16_t)(m->tx_next - before));
	}
	dp_memif_tx_publish(m);
	return sent;
}
