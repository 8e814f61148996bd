/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * XRC domains (IBTA annex A14, ibv_open_xrcd): what ties XRC SRQs to the
 * XRC target QPs that may fill them. As the kernel does, a domain opened
 * with an fd is the inode's: opening the same file again, from any context
 * of this process on the device, gives the same domain, counted, and it
 * goes when the last handle to it is closed. Each open gets a handle of its
 * own (its ibv_xrcd names the context that opened it), as each gets its own
 * object from the kernel. uroce's engine is per process, so another process
 * opening the same file gets a domain of its own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "uroce.h"

/* The domain of an inode, under nic->lock; NULL when none is open. */
static struct uroce_xrcd_dom *find_inode(struct uroce_nic *nic, dev_t dev, ino_t ino)
{
	for (struct uroce_xrcd_dom *d = nic->xrcds; d; d = d->next)
		if (d->has_inode && d->dev == dev && d->ino == ino)
			return d;
	return NULL;
}

/* The inode's domain, or a new one (nic->lock held); NULL with errno set. */
static struct uroce_xrcd_dom *get_dom(struct uroce_nic *nic, const struct stat *st, int oflags)
{
	struct uroce_xrcd_dom *d = st ? find_inode(nic, st->st_dev, st->st_ino) : NULL;

	/* as the kernel answers (ib_uverbs_open_xrcd) */
	if (d && (oflags & O_EXCL)) {
		errno = uroce_refuse(nic, EINVAL, "open_xrcd",
				     "O_EXCL: the file's XRC domain is open already");
		return NULL;
	}
	if (!d && st && !(oflags & O_CREAT)) {
		errno = uroce_refuse(nic, EINVAL, "open_xrcd",
				     "no XRC domain is open for the file, and no O_CREAT");
		return NULL;
	}
	if (d) {
		d->users++;
		return d;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		errno = uroce_refuse(nic, ENOMEM, "open_xrcd", "no memory");
		return NULL;
	}
	d->id = ++nic->next_xrcd;
	if (st) {
		d->has_inode = true;
		d->dev = st->st_dev;
		d->ino = st->st_ino;
	}
	d->users = 1;
	atomic_init(&d->refs, 0);
	d->next = nic->xrcds;
	nic->xrcds = d;
	uroce_log(nic, 1, "open xrcd %u%s", d->id, st ? " (by inode)" : "");
	return d;
}

/* One handle fewer on the domain (nic->lock held): it goes with the last. */
static void put_dom(struct uroce_nic *nic, struct uroce_xrcd_dom *d)
{
	if (--d->users)
		return;
	for (struct uroce_xrcd_dom **p = &nic->xrcds; *p; p = &(*p)->next)
		if (*p == d) {
			*p = d->next;
			break;
		}
	uroce_log(nic, 1, "close xrcd %u", d->id);
	free(d);
}

struct ibv_xrcd *uroce_open_xrcd(struct ibv_context *ibctx, struct ibv_xrcd_init_attr *attr)
{
	struct uroce_nic *nic = to_unic(ibctx);
	struct uroce_xrcd *x;
	struct stat st;
	int oflags;

	if (!(attr->comp_mask & IBV_XRCD_INIT_ATTR_FD) ||
	    (attr->comp_mask & ~(IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS))) {
		errno = uroce_refuse(nic, EINVAL, "open_xrcd",
				     "comp_mask %#x: IBV_XRCD_INIT_ATTR_FD is required, and "
				     "only FD and OFLAGS are known",
				     attr->comp_mask);
		return NULL;
	}
	oflags = (attr->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS) ? attr->oflags : 0;
	if (oflags & ~(O_CREAT | O_EXCL)) {
		errno = uroce_refuse(nic, EINVAL, "open_xrcd",
				     "oflags %#x: only O_CREAT and O_EXCL are meaningful", oflags);
		return NULL;
	}
	if (attr->fd != -1 && fstat(attr->fd, &st)) {
		errno = uroce_refuse(nic, EBADF, "open_xrcd", "fd %d: %m", attr->fd);
		return NULL;
	}
	x = calloc(1, sizeof(*x));
	if (!x) {
		errno = uroce_refuse(nic, ENOMEM, "open_xrcd", "no memory");
		return NULL;
	}
	pthread_mutex_lock(&nic->lock);
	x->dom = get_dom(nic, attr->fd != -1 ? &st : NULL, oflags);
	pthread_mutex_unlock(&nic->lock);
	if (!x->dom) {
		free(x);
		return NULL;
	}
	x->nic = nic;
	x->vxrcd.xrcd.context = ibctx;
	x->vxrcd.comp_mask = VERBS_XRCD_HANDLE;
	x->vxrcd.handle = x->dom->id;
	return &x->vxrcd.xrcd;
}

int uroce_close_xrcd(struct ibv_xrcd *xrcd)
{
	struct uroce_xrcd *x = to_uxrcd(xrcd);
	struct uroce_nic *nic = x->nic;

	pthread_mutex_lock(&nic->lock);
	if (x->dom->users == 1 && atomic_load(&x->dom->refs)) {
		pthread_mutex_unlock(&nic->lock);
		return uroce_refuse(nic, EBUSY, "close_xrcd", "%u XRC SRQs or QPs still use it",
				    atomic_load(&x->dom->refs));
	}
	put_dom(nic, x->dom);
	pthread_mutex_unlock(&nic->lock);
	free(x);
	return 0;
}

/* The domains left when the device's last context closes (their handles are the program's). */
void uroce_xrcd_take_back(struct uroce_nic *nic)
{
	while (nic->xrcds) {
		struct uroce_xrcd_dom *d = nic->xrcds;

		nic->xrcds = d->next;
		free(d);
	}
}
