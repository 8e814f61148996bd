/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * XRC domains (IBTA annex A14, ibv_open_xrcd): what ties XRC SRQs to the
 * XRC target QPs that may fill them. As the kernel does, a domain opened
 * with an fd is the inode's: opening the same file again, from any
 * context of this process on the device, gives the same domain, counted,
 * and it goes when the last user closes it. uroce's engine is per process,
 * so another process opening the same file gets a domain of its own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "uroce.h"

/* The domain of an inode, under nic->lock; NULL when none is open. */
static struct uroce_xrcd *find_inode(struct uroce_nic *nic, dev_t dev, ino_t ino)
{
	for (struct uroce_xrcd *x = nic->xrcds; x; x = x->next)
		if (x->has_inode && x->dev == dev && x->ino == ino)
			return x;
	return NULL;
}

struct ibv_xrcd *uroce_open_xrcd(struct ibv_context *ibctx, struct ibv_xrcd_init_attr *attr)
{
	struct uroce_nic *nic = to_unic(ibctx);
	struct uroce_xrcd *x = NULL;
	struct stat st;
	bool by_inode;
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
	by_inode = attr->fd != -1;
	if (by_inode && fstat(attr->fd, &st)) {
		errno = uroce_refuse(nic, EBADF, "open_xrcd", "fd %d: %m", attr->fd);
		return NULL;
	}
	pthread_mutex_lock(&nic->lock);
	if (by_inode)
		x = find_inode(nic, st.st_dev, st.st_ino);
	if (x && (oflags & O_EXCL)) {
		pthread_mutex_unlock(&nic->lock);
		/* as the kernel answers (ib_uverbs_open_xrcd) */
		errno = uroce_refuse(nic, EINVAL, "open_xrcd",
				     "O_EXCL: the file's XRC domain is open already");
		return NULL;
	}
	if (!x && by_inode && !(oflags & O_CREAT)) {
		pthread_mutex_unlock(&nic->lock);
		errno = uroce_refuse(nic, EINVAL, "open_xrcd",
				     "no XRC domain is open for the file, and no O_CREAT");
		return NULL;
	}
	if (x) {
		x->users++;
		pthread_mutex_unlock(&nic->lock);
		return &x->vxrcd.xrcd;
	}
	x = calloc(1, sizeof(*x));
	if (!x) {
		pthread_mutex_unlock(&nic->lock);
		errno = uroce_refuse(nic, ENOMEM, "open_xrcd", "no memory");
		return NULL;
	}
	x->id = ++nic->next_xrcd;
	x->has_inode = by_inode;
	if (by_inode) {
		x->dev = st.st_dev;
		x->ino = st.st_ino;
	}
	x->users = 1;
	atomic_init(&x->refs, 0);
	x->next = nic->xrcds;
	nic->xrcds = x;
	pthread_mutex_unlock(&nic->lock);
	x->vxrcd.xrcd.context = ibctx;
	x->vxrcd.comp_mask = VERBS_XRCD_HANDLE;
	x->vxrcd.handle = x->id;
	uroce_log(nic, 1, "open xrcd %u%s", x->id, by_inode ? " (by inode)" : "");
	return &x->vxrcd.xrcd;
}

int uroce_close_xrcd(struct ibv_xrcd *xrcd)
{
	struct uroce_nic *nic = to_unic(xrcd->context);
	struct uroce_xrcd *x = to_uxrcd(xrcd);

	pthread_mutex_lock(&nic->lock);
	if (x->users == 1 && atomic_load(&x->refs)) {
		pthread_mutex_unlock(&nic->lock);
		return uroce_refuse(nic, EBUSY, "close_xrcd", "%u XRC SRQs or QPs still use it",
				    atomic_load(&x->refs));
	}
	if (--x->users) {
		pthread_mutex_unlock(&nic->lock);
		return 0;
	}
	for (struct uroce_xrcd **p = &nic->xrcds; *p; p = &(*p)->next)
		if (*p == x) {
			*p = x->next;
			break;
		}
	pthread_mutex_unlock(&nic->lock);
	uroce_log(nic, 1, "close xrcd %u", x->id);
	free(x);
	return 0;
}
