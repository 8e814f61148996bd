/* SPDX-License-Identifier: BSD-2-Clause */
/* Frame buffers of uroce's own (frames.h). */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "frames.h"

int dp_frames_init(struct dp_frames *f, unsigned n, uint32_t room)
{
	size_t hdrs = (size_t)n * sizeof(struct rte_mbuf), stack = (size_t)n * sizeof(void *);
	size_t data_off = (hdrs + stack + 4095) & ~(size_t)4095,
	       stride = ((size_t)room + 63) & ~(size_t)63;
	uint8_t *base, *data;

	memset(f, 0, sizeof(*f));
	if (!n || room > UINT16_MAX)
		return -EINVAL;
	/* the buffers' pages are the kernel's until a frame first uses them */
	f->bytes = data_off + (size_t)n * stride;
	base = mmap(NULL, f->bytes, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		return -ENOMEM;
	f->hdr = (struct rte_mbuf *)base;
	f->free = (struct rte_mbuf **)(base + hdrs);
	data = base + data_off; /* page-aligned, each buffer 64-byte aligned */
	for (unsigned i = 0; i < n; i++) {
		struct rte_mbuf *m = &f->hdr[i];

		m->buf_addr = data + (size_t)i * stride;
		m->buf_len = (uint16_t)room;
		m->nb_segs = 1;
		rte_mbuf_refcnt_set(m, 1);
		/* hdr[0] on the top: the first frames taken lie in address order */
		f->free[i] = &f->hdr[n - 1 - i];
	}
	f->n = f->nfree = n;
	return 0;
}

void dp_frames_fini(struct dp_frames *f)
{
	if (f->hdr)
		munmap(f->hdr, f->bytes);
	memset(f, 0, sizeof(*f));
}
