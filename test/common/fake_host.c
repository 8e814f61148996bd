/* SPDX-License-Identifier: BSD-2-Clause */
/* The fake host shared by the unit tests, the fuzzer and the engine benchmark. */
#include "fake_host.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fake_host_fail(const struct fake_host *h, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (h->opt.fail)
		h->opt.fail(msg);
	fprintf(stderr, "fake_host: %s\n", msg);
	abort();
}

/* What a lent buffer claims to hold. */
static uint32_t buf_cap(const struct fake_host *h)
{
	return h->opt.cap && h->opt.cap < UR_FRAME_MAX ? h->opt.cap : UR_FRAME_MAX;
}

static int host_tx_get(void *host, struct ur_txbuf *b)
{
	struct fake_host *h = host;
	unsigned i;

	if (!h->credits || !h->nfree)
		return -ENOBUFS;
	if (h->credits != FAKE_HOST_UNLIMITED)
		h->credits--;
	i = h->free_idx[--h->nfree];
	h->busy[i] = true;
	h->gets++;
	/* whatever the engine does not write stays visibly poisoned */
	if (h->opt.poison)
		memset(h->buf[i], h->opt.poison_byte, UR_FRAME_MAX);
	b->data = h->buf[i];
	b->cap = buf_cap(h);
	b->cookie = (void *)(uintptr_t)(i + 1);
	return 0;
}

/* Say which rule a buffer handed back broke. */
static void bad_put(struct fake_host *h, const struct ur_txbuf *b, uint32_t len)
{
	uintptr_t c = (uintptr_t)b->cookie;
	unsigned i = (unsigned)(c - 1);

	if (c < 1 || c > h->opt.nbufs)
		fake_host_fail(h, "tx_put of a buffer the host never lent (cookie %#lx)",
			       (unsigned long)c);
	if (!h->busy[i])
		fake_host_fail(h, "buffer %u handed back twice", i);
	if (b->data != h->buf[i] || b->cap != buf_cap(h))
		fake_host_fail(h, "buffer %u handed back moved or resized", i);
	fake_host_fail(h, "frame of %u bytes in a buffer of %u", len, b->cap);
}

static void host_tx_put(void *host, struct ur_txbuf *b, uint32_t len)
{
	struct fake_host *h = host;
	unsigned i = (unsigned)((uintptr_t)b->cookie - 1);

	/* one test on the way (the benchmark runs this per frame), the diagnosis aside */
	if (__builtin_expect(i >= h->opt.nbufs || !h->busy[i] || b->data != h->buf[i] ||
				 b->cap != buf_cap(h) || len > b->cap,
			     0))
		bad_put(h, b, len);
	h->puts++;
	if (!len) {
		fake_host_buf_free(h, i);
		return;
	}
	b->hold_ns = h->opt.hold_ns;
	if (h->opt.on_frame)
		h->opt.on_frame(h->opt.ctx, b->data, len);
	if (h->opt.keep == FAKE_HOST_COPY && h->nsent < h->opt.copies) {
		memcpy(h->sent[h->nsent], b->data, len);
		h->sent_len[h->nsent] = len;
	}
	h->nsent++;
	if (h->opt.keep == FAKE_HOST_HOLD) {
		h->len[i] = len;
		h->held[fake_host_held_slot(h, h->nheld++)] = i;
		return;
	}
	fake_host_buf_free(h, i);
}

static void host_cq_event(void *host, struct ur_cq *cq)
{
	struct fake_host *h = host;

	h->cq_events++;
	if (h->opt.on_cq_event)
		h->opt.on_cq_event(h->opt.ctx, cq);
}

static void host_async_event(void *host, enum ur_async_event ev, void *obj)
{
	struct fake_host *h = host;

	if (h->nevents < FAKE_HOST_EVENTS) {
		h->event[h->nevents] = ev;
		h->event_obj[h->nevents] = obj;
	}
	h->nevents++;
	if (h->opt.on_async_event)
		h->opt.on_async_event(h->opt.ctx, ev, obj);
}

/* splitmix64: any seed, zero included, gives a full-period sequence */
static uint64_t host_random(void *host)
{
	struct fake_host *h = host;
	uint64_t z;

	if (h->random_fixed)
		return h->random_value;
	z = (h->rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void host_log(void *host, const char *line)
{
	struct fake_host *h = host;

	/* the engine formats into 256 bytes: one line fits */
	if (strlen(line) >= 256)
		fake_host_fail(h, "log line of %zu bytes: %s", strlen(line), line);
	h->logs++;
}

const struct ur_host_ops fake_host_ops = {
    .tx_get = host_tx_get,
    .tx_put = host_tx_put,
    .cq_event = host_cq_event,
    .async_event = host_async_event,
    .random = host_random,
    .log = host_log,
};

int fake_host_init(struct fake_host *h, const struct fake_host_opts *opt)
{
	unsigned n = opt->nbufs;

	memset(h, 0, sizeof(*h));
	h->opt = *opt;
	h->buf = calloc(n, sizeof(*h->buf));
	h->len = calloc(n, sizeof(*h->len));
	h->busy = calloc(n, sizeof(*h->busy));
	h->free_idx = calloc(n, sizeof(*h->free_idx));
	h->held = calloc(n, sizeof(*h->held));
	if (!h->buf || !h->len || !h->busy || !h->free_idx || !h->held)
		goto err_free;
	for (unsigned i = 0; i < n; i++)
		if (!(h->buf[i] = malloc(UR_FRAME_MAX)))
			goto err_free;
	if (opt->keep == FAKE_HOST_COPY) {
		h->sent = calloc(opt->copies, sizeof(*h->sent));
		h->sent_len = calloc(opt->copies, sizeof(*h->sent_len));
		if (!h->sent || !h->sent_len)
			goto err_free;
	}
	fake_host_reset(h);
	return 0;

err_free:
	fake_host_fini(h);
	return -ENOMEM;
}

void fake_host_reset(struct fake_host *h)
{
	unsigned n = h->opt.nbufs;

	/* lowest index on top: buffers are lent 0, 1, 2... as a scan would */
	for (unsigned i = 0; i < n; i++) {
		h->busy[i] = false;
		h->free_idx[i] = n - 1 - i;
	}
	h->nfree = n;
	h->held_head = h->nheld = 0;
	h->credits = FAKE_HOST_UNLIMITED;
	h->gets = h->puts = 0;
	h->nsent = 0;
	h->rng = h->opt.seed;
	h->random_fixed = false;
	h->cq_events = h->logs = h->nevents = 0;
}

void fake_host_fini(struct fake_host *h)
{
	if (h->buf)
		for (unsigned i = 0; i < h->opt.nbufs; i++)
			free(h->buf[i]);
	free(h->buf);
	free(h->len);
	free(h->busy);
	free(h->free_idx);
	free(h->held);
	free(h->sent);
	free(h->sent_len);
	memset(h, 0, sizeof(*h));
}

void fake_host_check_idle(struct fake_host *h)
{
	if (h->gets != h->puts)
		fake_host_fail(h, "tx_get %llu, tx_put %llu: a buffer lent was never handed back",
			       (unsigned long long)h->gets, (unsigned long long)h->puts);
	if (h->nheld)
		fake_host_fail(h, "%u frames still held", h->nheld);
	for (unsigned i = 0; i < h->opt.nbufs; i++)
		if (h->busy[i])
			fake_host_fail(h, "frame buffer %u leaked", i);
}

void fake_host_check_cq_drained(struct fake_host *h, struct ur_cq *cq, const char *name)
{
	struct ur_cqe c = {0};
	unsigned n = 0;

	while (ur_cq_poll(cq, &c, 1) == 1)
		n++;
	if (n)
		fake_host_fail(h,
			       "%u completions left behind on %s, the last wr_id %#llx status %u",
			       n, name, (unsigned long long)c.wr_id, c.status);
}

const uint8_t *fake_host_frame(const struct fake_host *h, unsigned k, uint32_t *len)
{
	if (h->opt.keep != FAKE_HOST_COPY || k >= h->nsent || k >= h->opt.copies)
		fake_host_fail(h, "frame %u asked for: %u sent, %u copied", k, h->nsent,
			       h->opt.keep == FAKE_HOST_COPY ? h->opt.copies : 0);
	if (len)
		*len = h->sent_len[k];
	return h->sent[k];
}

void fake_host_drop_held(struct fake_host *h)
{
	while (h->nheld)
		fake_host_release(h, fake_host_take(h));
}

unsigned fake_host_count_events(const struct fake_host *h, enum ur_async_event ev)
{
	unsigned n = 0;

	for (unsigned i = 0; i < h->nevents && i < FAKE_HOST_EVENTS; i++)
		n += h->event[i] == ev;
	return n;
}
