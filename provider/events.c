/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Completion channels and asynchronous events.
 *
 * libibverbs 44 creates a completion channel by sending a command to the
 * kernel (ibv_create_comp_channel is not a provider hook), so uroce
 * interposes that one function pair: loaded with LD_PRELOAD (what `uroce
 * env` sets up), this library's definitions take the place of libibverbs'
 * IBVERBS_1.0 ones. For a uroce context the channel is one end of a
 * SOCK_SEQPACKET socket pair; the progress engine writes one 8-byte record
 * (the CQ pointer) per event into the other end, which is exactly what the
 * stock ibv_get_cq_event() reads. Other providers' contexts go to the real
 * functions. Asynchronous events travel the same way on async_fd, which the
 * provider owns from the start.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "uroce.h"

struct uroce_channel {
	struct ibv_comp_channel ch;
	int wr_fd;
};

static struct uroce_channel *to_uch(struct ibv_comp_channel *ch)
{
	return to_type(ch, struct uroce_channel, ch);
}

/* The completion channel's write end, for a CQ created on it. */
int uroce_channel_writer(struct ibv_comp_channel *ch)
{
	return ch ? to_uch(ch)->wr_fd : -1;
}

typedef struct ibv_comp_channel *(*create_fn)(struct ibv_context *);
typedef int (*destroy_fn)(struct ibv_comp_channel *);

__attribute__((visibility("default"))) struct ibv_comp_channel *
ibv_create_comp_channel(struct ibv_context *context)
{
	struct uroce_channel *c;
	int sv[2];

	if (!uroce_is_ours(context)) {
		create_fn real = (create_fn)dlvsym(RTLD_NEXT, "ibv_create_comp_channel",
						   "IBVERBS_1.0");

		if (!real) {
			errno = ENOSYS;
			return NULL;
		}
		return real(context);
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
		free(c);
		return NULL;
	}
	c->ch.context = context;
	c->ch.fd = sv[0];
	c->ch.refcnt = 0;
	c->wr_fd = sv[1];
	uroce_log(to_unic(context), 1, "completion channel fd %d", sv[0]);
	return &c->ch;
}

__attribute__((visibility("default"))) int ibv_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	struct ibv_context *context = ch->context;
	int ret = 0;

	if (!uroce_is_ours(context)) {
		destroy_fn real = (destroy_fn)dlvsym(RTLD_NEXT, "ibv_destroy_comp_channel",
						     "IBVERBS_1.0");

		return real ? real(ch) : ENOSYS;
	}
	pthread_mutex_lock(&context->mutex);
	if (ch->refcnt) {
		/* CQs still use it, as libibverbs' own rule */
		ret = uroce_refuse(to_unic(context), EBUSY, "destroy_comp_channel",
				   "%d CQs still use the channel", ch->refcnt);
		goto out;
	}
	close(ch->fd);
	close(to_uch(ch)->wr_fd);
	free(to_uch(ch));
out:
	pthread_mutex_unlock(&context->mutex);
	return ret;
}

bool uroce_async_event(struct uroce_context *ctx, enum ibv_event_type type, uint64_t element)
{
	struct ur_uverbs_async_event_desc ev = {.element = element, .event_type = type};

	if (send(ctx->async_wr, &ev, sizeof(ev), MSG_DONTWAIT | MSG_NOSIGNAL) != sizeof(ev)) {
		uroce_log(ctx->nic, 1, "async event %d lost: %s", type, strerror(errno));
		return false;
	}
	uroce_log(ctx->nic, 1, "async event %s", ibv_event_type_str(type));
	return true;
}

/* ibv_get_async_event hands each event to us before returning it. */
void uroce_async_event_done(struct ibv_context *context, struct ibv_async_event *ev)
{
	(void)context;
	(void)ev;
}

/*
 * Take back the unread event records that name `element` (an object being
 * destroyed), as the kernel discards an object's queued events, so that no
 * record can lead the application to freed memory. Returns how many. Every
 * other object's records go back in order, however many there are: their
 * owners' destroy calls wait for each one to be read and acknowledged.
 */
unsigned uroce_drain_events(int rd_fd, int wr_fd, uint64_t element, size_t rec_size)
{
	uint8_t stack[64][16], rec[16], (*keep)[16] = stack;
	unsigned nkeep = 0, cap = 64, dropped = 0;

	for (;;) {
		ssize_t n = recv(rd_fd, rec, rec_size, MSG_DONTWAIT);
		uint64_t el;

		if (n != (ssize_t)rec_size)
			break;
		memcpy(&el, rec, sizeof(el));
		if (el == element) {
			dropped++;
			continue;
		}
		if (nkeep == cap) {
			uint8_t(*more)[16] = malloc(2 * cap * sizeof(*more));

			if (!more)
				break; /* the rest stays queued, behind what we took */
			memcpy(more, keep, nkeep * sizeof(*more));
			if (keep != stack)
				free(keep);
			keep = more;
			cap *= 2;
		}
		memcpy(keep[nkeep++], rec, rec_size);
	}
	/* the socket just gave back room for at least this many */
	for (unsigned i = 0; i < nkeep; i++)
		if (send(wr_fd, keep[i], rec_size, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
			break;
	if (keep != stack)
		free(keep);
	return dropped;
}
