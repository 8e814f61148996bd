/* SPDX-License-Identifier: BSD-2-Clause */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "pcap_file.h"

#define UR_PCAP_HDR_LEN 24
#define UR_PCAP_REC_HDR_LEN 16
#define UR_PCAP_MAGIC_US 0xa1b2c3d4u
#define UR_PCAP_MAGIC_NS 0xa1b23c4du

struct ur_pcap_file {
	uint8_t *buf;
	size_t len;
	size_t off;
	bool swapped; /* written on a host of the other byte order */
	bool nsec;    /* the sub-second field counts nanoseconds */
	uint32_t linktype;
};

static uint32_t ur_pcap_u32(const struct ur_pcap_file *f, const uint8_t *p)
{
	/* The writer's host order: little-endian unless the magic said otherwise. */
	if (f->swapped)
		return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static int ur_pcap_slurp(struct ur_pcap_file *f, const char *path)
{
	FILE *fp = fopen(path, "rb");
	size_t cap = 1 << 16;
	int err = 0;

	if (!fp)
		return -errno;
	for (;;) {
		uint8_t *nb = realloc(f->buf, cap);

		if (!nb) {
			err = -ENOMEM;
			break;
		}
		f->buf = nb;
		f->len += fread(f->buf + f->len, 1, cap - f->len, fp);
		if (f->len < cap) {
			if (ferror(fp))
				err = -EIO;
			break;
		}
		cap *= 2;
	}
	fclose(fp);
	return err;
}

int ur_pcap_open(struct ur_pcap_file **out, const char *path)
{
	struct ur_pcap_file *f = calloc(1, sizeof(*f));
	uint32_t magic;
	int err;

	if (!f)
		return -ENOMEM;
	err = ur_pcap_slurp(f, path);
	if (err)
		goto err_free;
	err = -EINVAL;
	if (f->len < UR_PCAP_HDR_LEN)
		goto err_free;
	magic = ur_pcap_u32(f, f->buf);
	if (magic != UR_PCAP_MAGIC_US && magic != UR_PCAP_MAGIC_NS) {
		f->swapped = true;
		magic = ur_pcap_u32(f, f->buf);
		if (magic != UR_PCAP_MAGIC_US && magic != UR_PCAP_MAGIC_NS)
			goto err_free;
	}
	f->nsec = magic == UR_PCAP_MAGIC_NS;
	/* The top bits may carry FCS information; the link type is the low 16. */
	f->linktype = ur_pcap_u32(f, f->buf + 20) & 0xffff;
	f->off = UR_PCAP_HDR_LEN;
	*out = f;
	return 0;

err_free:
	free(f->buf);
	free(f);
	return err;
}

uint32_t ur_pcap_linktype(const struct ur_pcap_file *f)
{
	return f->linktype;
}

int ur_pcap_next(struct ur_pcap_file *f, struct ur_pcap_rec *rec)
{
	const uint8_t *h = f->buf + f->off;
	size_t left = f->len - f->off;
	uint32_t sub;

	if (!left)
		return 0;
	if (left < UR_PCAP_REC_HDR_LEN)
		return -EINVAL;
	rec->len = ur_pcap_u32(f, h + 8);
	if (rec->len > left - UR_PCAP_REC_HDR_LEN)
		return -EINVAL;
	rec->orig_len = ur_pcap_u32(f, h + 12);
	sub = ur_pcap_u32(f, h + 4);
	rec->ts_ns = (uint64_t)ur_pcap_u32(f, h) * 1000000000u + (f->nsec ? sub : sub * 1000ull);
	rec->data = h + UR_PCAP_REC_HDR_LEN;
	f->off += UR_PCAP_REC_HDR_LEN + rec->len;
	return 1;
}

void ur_pcap_close(struct ur_pcap_file *f)
{
	if (!f)
		return;
	free(f->buf);
	free(f);
}
