/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One fake host for the transport engine (struct ur_host_ops), shared by the
 * unit tests, the fuzzer and the engine benchmark, as liburing's tests share
 * one helpers.c. It lends frame buffers from a fixed pool and checks every
 * one comes back once, whole and unchanged in place; it keeps the frames the
 * engine hands over in one of three ways (see enum fake_host_keep); it draws
 * 64-bit random values from a seeded splitmix64; it counts and records
 * completion events, asynchronous events and log lines. Teardown asks
 * fake_host_check_idle(): every buffer lent was given back.
 *
 * The pool's buffers are separate heap blocks of UR_FRAME_MAX bytes, so
 * AddressSanitizer sees a frame written past its buffer. All allocation is
 * in fake_host_init(); fake_host_reset() starts afresh without any (the
 * fuzzer resets once per input).
 *
 * A broken rule (a buffer handed back twice, a frame longer than its buffer,
 * a leak, ...) calls opt.fail with a message; without one the host prints
 * the message and aborts. A Check suite passes fake_host_ck_fail, so the
 * message becomes the test's failure.
 */
#ifndef UR_FAKE_HOST_H
#define UR_FAKE_HOST_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"

/* What becomes of a frame the engine hands over (tx_put with len > 0). */
enum fake_host_keep {
	FAKE_HOST_DISCARD, /* opt.on_frame sees it, then its buffer is free again */
	FAKE_HOST_COPY,	   /* ...and the first opt.copies frames are copied for the test */
	FAKE_HOST_HOLD,	   /* it stays in its buffer, queued, until the test takes it (a wire) */
};

/* tx_get lends without limit (until the pool is empty). */
#define FAKE_HOST_UNLIMITED UINT32_MAX
/* Events and their objects recorded (all are counted). */
#define FAKE_HOST_EVENTS 64

struct fake_host_opts {
	unsigned nbufs; /* frame buffers in the pool */
	enum fake_host_keep keep;
	unsigned copies;     /* FAKE_HOST_COPY: how many frames are copied */
	bool poison;	     /* fill each buffer with poison_byte when lent... */
	uint8_t poison_byte; /* ...so bytes the engine never wrote show */
	uint64_t seed;	     /* random's seed */
	uint32_t cap;	     /* the size a buffer lent claims (0: UR_FRAME_MAX); frames past it fail */
	uint32_t hold_ns;    /* tx_put's answer for every frame: its receiver is behind */
	void (*fail)(const char *msg);
	/* The owner's own invariants, called after the host's checks (each optional). */
	void *ctx;
	void (*on_frame)(void *ctx, const uint8_t *frame, uint32_t len);
	void (*on_cq_event)(void *ctx, struct ur_cq *cq);
	void (*on_async_event)(void *ctx, enum ur_async_event ev, void *obj);
};

struct fake_host {
	struct fake_host_opts opt; /* a test may change poison_byte between frames */
	/* the pool */
	uint8_t **buf;	    /* nbufs buffers of UR_FRAME_MAX bytes */
	uint32_t *len;	    /* FAKE_HOST_HOLD: the length of the frame in buf[i] */
	bool *busy;	    /* lent, or holding a frame the test has not released */
	unsigned *free_idx; /* stack of free buffer indices */
	unsigned nfree;
	unsigned *held; /* FAKE_HOST_HOLD: ring of buffers holding frames, oldest first */
	unsigned held_head, nheld;
	uint32_t credits; /* tx_get refuses once this reaches 0 (FAKE_HOST_UNLIMITED: never) */
	uint64_t gets, puts;
	/* frames handed over (len > 0), all counted */
	unsigned nsent;
	uint8_t (*sent)[UR_FRAME_MAX]; /* FAKE_HOST_COPY: the first opt.copies of them */
	uint32_t *sent_len;
	/* random: splitmix64 from opt.seed, or random_value when random_fixed */
	uint64_t rng;
	bool random_fixed;
	uint64_t random_value;
	/* what the engine reported */
	unsigned cq_events, logs, nevents;
	enum ur_async_event event[FAKE_HOST_EVENTS];
	void *event_obj[FAKE_HOST_EVENTS];
};

/* The operations table: pass it to ur_dev_create with the fake host as `host`. */
extern const struct ur_host_ops fake_host_ops;

/* Allocate the pool (and the copies); returns 0 or -ENOMEM. */
int fake_host_init(struct fake_host *h, const struct fake_host_opts *opt);
/* Every buffer free, every count zero, random reseeded; allocates nothing. */
void fake_host_reset(struct fake_host *h);
void fake_host_fini(struct fake_host *h);

/* Teardown's leak check: every buffer lent came back and none is held. */
void fake_host_check_idle(struct fake_host *h);
/* ...and, for a fixture that accounts for every completion: none left on `cq`. */
void fake_host_check_cq_drained(struct fake_host *h, struct ur_cq *cq, const char *name);

/* FAKE_HOST_COPY: the k-th frame sent (k < nsent and k < opt.copies). */
const uint8_t *fake_host_frame(const struct fake_host *h, unsigned k, uint32_t *len);

/* FAKE_HOST_HOLD: release every frame still held (a wire that lost them). */
void fake_host_drop_held(struct fake_host *h);

/* How many asynchronous events of kind `ev` were recorded. */
unsigned fake_host_count_events(const struct fake_host *h, enum ur_async_event ev);

/* A broken rule: opt.fail with the message, else print it and abort. */
__attribute__((noreturn, format(printf, 2, 3))) void fake_host_fail(const struct fake_host *h,
								    const char *fmt, ...);

/*
 * The wire's side of FAKE_HOST_HOLD, inline: the benchmark carries every
 * frame through them, and the host's cost is not what it measures.
 */

/* Slot in the ring of the k-th oldest held frame (no division). */
static inline unsigned fake_host_held_slot(const struct fake_host *h, unsigned k)
{
	unsigned pos = h->held_head + k;

	return pos >= h->opt.nbufs ? pos - h->opt.nbufs : pos;
}

static inline void fake_host_buf_free(struct fake_host *h, unsigned i)
{
	h->busy[i] = false;
	h->free_idx[h->nfree++] = i;
}

/* The buffer of the k-th oldest frame still held. */
static inline unsigned fake_host_held(const struct fake_host *h, unsigned k)
{
	if (__builtin_expect(k >= h->nheld, 0))
		fake_host_fail(h, "held frame %u asked for: %u held", k, h->nheld);
	return h->held[fake_host_held_slot(h, k)];
}

/* Take the oldest frame held; its buffer stays busy until released. */
static inline unsigned fake_host_take(struct fake_host *h)
{
	unsigned i = fake_host_held(h, 0);

	h->held_head = fake_host_held_slot(h, 1);
	h->nheld--;
	return i;
}

static inline void fake_host_release(struct fake_host *h, unsigned i)
{
	if (__builtin_expect(i >= h->opt.nbufs || !h->busy[i], 0))
		fake_host_fail(h, "release of buffer %u, which is not busy", i);
	fake_host_buf_free(h, i);
}

#ifdef CHECK_H
/* For Check suites: a broken rule fails the running test with its message. */
static inline void fake_host_ck_fail(const char *msg)
{
	ck_abort_msg("%s", msg);
}
#endif

#endif
