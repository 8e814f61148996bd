/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cm_channel_late: an event thread that comes back to its channel after
 * another thread destroyed it waits there, as one already waiting does.
 * Debian 12's rping destroys its channel without joining its event thread;
 * on a busy host the thread came back after the destroy and exited 255
 * with EBADF (provider/rdmacm_channel.c). Stock librdmacm API only; run
 * with uroce's rdma_cm preloaded.
 *
 * The event thread reads the channel once (O_NONBLOCK: EAGAIN, nothing is
 * queued), main destroys the channel, the thread reads again. Exit 0 if
 * that read is still waiting 300 ms later, 1 if it returned.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

static struct rdma_event_channel *ch;
static sem_t first_read, destroyed;
static atomic_int late_errno = -1;

static void *event_thread(void *arg)
{
	struct rdma_cm_event *ev;

	(void)arg;
	if (rdma_get_cm_event(ch, &ev) == 0 || errno != EAGAIN) {
		fprintf(stderr, "cm_channel_late: first read: want EAGAIN, got %s\n",
			strerror(errno));
		atomic_store(&late_errno, 0);
	}
	sem_post(&first_read);
	sem_wait(&destroyed);
	/* late: the channel is gone */
	if (rdma_get_cm_event(ch, &ev) == 0)
		atomic_store(&late_errno, 0);
	else
		atomic_store(&late_errno, errno ? errno : -2);
	return NULL;
}

int main(void)
{
	pthread_t t;
	int e;

	ch = rdma_create_event_channel();
	if (!ch || fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK)) {
		perror("cm_channel_late: rdma_create_event_channel");
		return 1;
	}
	sem_init(&first_read, 0, 0);
	sem_init(&destroyed, 0, 0);
	if (pthread_create(&t, NULL, event_thread, NULL)) {
		perror("cm_channel_late: pthread_create");
		return 1;
	}
	sem_wait(&first_read);
	if (atomic_load(&late_errno) == 0)
		return 1;
	rdma_destroy_event_channel(ch);
	sem_post(&destroyed);
	usleep(300000);
	e = atomic_load(&late_errno);
	if (e != -1) {
		printf("cm_channel_late: a read after the destroy returned (%s)\n",
		       e > 0 ? strerror(e) : "an event");
		return 1;
	}
	printf("cm_channel_late: the late read waits\n");
	return 0; /* the thread ends with the process, as rping's does */
}
