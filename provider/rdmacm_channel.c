/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rdma_cm event channels (rdmacm.h): a pipe with a byte per queued event,
 * so poll(), blocking reads and O_NONBLOCK behave as on the kernel's
 * channel; events are handed out in order and counted per id until the
 * program acknowledges them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdmacm.h"
#include "uroce.h"

API struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct urcm_channel *c = calloc(1, sizeof(*c));
	int p[2];

	if (!c)
		return NULL;
	if (pipe2(p, O_CLOEXEC)) {
		free(c);
		return NULL;
	}
	c->ch.fd = p[0];
	c->wr_fd = p[1];
	c->tail = &c->head;
	return &c->ch;
}

API void rdma_destroy_event_channel(struct rdma_event_channel *ch)
{
	struct urcm_channel *c = to_uchan(ch);

	pthread_mutex_lock(&urcm_lock);
	while (c->head) {
		struct urcm_event *e = c->head;

		c->head = e->next;
		free(e);
	}
	/* ids still on it (a program that destroys the channel first) report
	 * nothing more rather than to freed memory */
	for (struct urcm_id *id = urcm_ids(); id; id = id->next)
		if (id->id.channel == ch)
			id->id.channel = NULL;
	/* A thread waiting in rdma_get_cm_event (rping's event thread, at
	 * exit) goes on waiting, as on the kernel's channel, whose file its
	 * read holds: the pipe's read end and the channel stay for it, and
	 * the write end goes, so it finds nothing more. An event thread
	 * between two calls is kept waiting the same way: Debian 12's rping
	 * destroys the channel without joining its event thread, which on a
	 * busy host (two CPU hogs: 2 of 8 rping checks) came back after it and, on a
	 * closed descriptor, exited 255 with EBADF. The kernel's channel
	 * gives the same EBADF in that race; keeping one pipe end per channel
	 * an event thread used costs less than a failing program. */
	c->dead = c->waiters > 0 || c->readers_differ ||
		  (c->read_once && !pthread_equal(c->reader, pthread_self()));
	pthread_mutex_unlock(&urcm_lock);
	close(c->wr_fd);
	if (c->dead)
		return;
	close(c->ch.fd);
	free(c);
}

struct urcm_event *urcm_event(struct urcm_id *id, enum rdma_cm_event_type type, int status)
{
	struct urcm_id *to =
	    id->listener && type == RDMA_CM_EVENT_CONNECT_REQUEST ? id->listener : id;
	struct urcm_channel *c;
	struct urcm_event *e;
	char one = 1;

	if (!to->id.channel && !to->sync)
		return NULL; /* no channel yet (a passive id before rdma_get_request) */
	c = to_uchan(to->id.channel ? to->id.channel : to->sync);
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->ev.id = &id->id;
	e->ev.listen_id = to != id ? &to->id : NULL;
	e->ev.event = type;
	e->ev.status = status;
	*c->tail = e;
	c->tail = &e->next;
	if (write(c->wr_fd, &one, 1) != 1)
		uroce_log(NULL, 0, "rdma_cm: event lost: %s", strerror(errno));
	uroce_log(NULL, 1, "rdma_cm: event %d, status %d", type, status);
	return e;
}

API int rdma_get_cm_event(struct rdma_event_channel *ch, struct rdma_cm_event **event)
{
	struct urcm_channel *c = to_uchan(ch);
	struct urcm_event *e = NULL;
	char byte;
	ssize_t n;

	if (!event)
		return urcm_fail(EINVAL);
	pthread_mutex_lock(&urcm_lock);
	c->waiters++;
	if (!c->read_once) {
		c->read_once = true;
		c->reader = pthread_self();
	} else if (!pthread_equal(c->reader, pthread_self())) {
		c->readers_differ = true;
	}
	pthread_mutex_unlock(&urcm_lock);
	/* A byte per event: blocks, or EAGAIN on an O_NONBLOCK channel, as the
	 * kernel's. A byte whose event was discarded with its id (rdma_destroy_id)
	 * has none: read on. */
	while (!e) {
		do
			n = read(ch->fd, &byte, 1);
		while (n < 0 && errno == EINTR);
		/* the channel was destroyed under us (its write end is gone):
		 * the kernel's read goes on waiting, so does this */
		while (n == 0)
			pause();
		pthread_mutex_lock(&urcm_lock);
		if (n != 1) {
			c->waiters--;
			pthread_mutex_unlock(&urcm_lock);
			return -1;
		}
		while (c->dead) { /* a byte left in a destroyed channel */
			pthread_mutex_unlock(&urcm_lock);
			pause();
		}
		e = c->head;
		if (e) {
			c->head = e->next;
			if (!c->head)
				c->tail = &c->head;
			/* rdma_destroy_id waits for the events handed out, as librdmacm's */
			to_urcm(e->ev.id)->events_out++;
		}
		if (e)
			c->waiters--;
		pthread_mutex_unlock(&urcm_lock);
	}
	*event = &e->ev;
	return 0;
}

API int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct urcm_event *e = to_type(event, struct urcm_event, ev);
	struct urcm_id *id = to_urcm(event->id);

	pthread_mutex_lock(&urcm_lock);
	id->events_out--;
	pthread_cond_broadcast(&id->acked);
	pthread_mutex_unlock(&urcm_lock);
	free(e);
	return 0;
}

/*
 * Take the queued events that name id off channel c (lock held): freed,
 * or queued on `to` (rdma_migrate_id). Their bytes stay in c's pipe.
 */
void urcm_move_events(struct urcm_channel *c, struct urcm_id *id, struct urcm_channel *to)
{
	struct urcm_event **p = &c->head;
	char one = 1;

	if (to == c)
		return;
	while (*p) {
		struct urcm_event *e = *p;

		if (e->ev.id != &id->id) {
			p = &e->next;
			continue;
		}
		*p = e->next;
		if (!to) {
			free(e);
			continue;
		}
		e->next = NULL;
		*to->tail = e;
		to->tail = &e->next;
		if (write(to->wr_fd, &one, 1) != 1)
			uroce_log(NULL, 0, "rdma_cm: event lost: %s", strerror(errno));
	}
	c->tail = p;
}
