/* SPDX-License-Identifier: BSD-2-Clause */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_capture.h"
#include "opcode.h"
#include "pcap_file.h"
#include "wire.h"

static void load_fail(struct cm_capture *c, const char *fmt, ...)
{
	va_list ap;

	if (c->error[0])
		return;
	va_start(ap, fmt);
	vsnprintf(c->error, sizeof(c->error), fmt, ap);
	va_end(ap);
}

const char *cm_capture_dir(void)
{
	const char *dir = getenv("UROCE_TESTDATA_CM");

	return dir && *dir ? dir : UR_CM_TESTDATA_DEFAULT;
}

uint32_t cm_capture_ip4(const struct ur_gid *g)
{
	return (uint32_t)g->raw[12] << 24 | g->raw[13] << 16 | g->raw[14] << 8 | g->raw[15];
}

static void load_file(struct cm_capture *c, const char *dir, const char *name)
{
	char path[4096];
	struct ur_pcap_file *f;
	struct ur_pcap_rec pr;
	unsigned int index = 0;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	rc = ur_pcap_open(&f, path);
	if (rc) {
		load_fail(c, "%s: %s", path, strerror(-rc));
		return;
	}
	while ((rc = ur_pcap_next(f, &pr)) > 0) {
		struct ur_pkt pkt;
		struct cm_rec *r;

		index++;
		if (ur_frame_parse(&pkt, pr.data, (uint32_t)pr.len) != UR_PARSE_OK)
			continue;
		c->recs = realloc(c->recs, (c->nrecs + 1) * sizeof(*c->recs));
		if (!c->recs)
			abort();
		r = &c->recs[c->nrecs++];
		memset(r, 0, sizeof(*r));
		snprintf(r->file, sizeof(r->file), "%s", name);
		r->frame = index;
		r->src = cm_capture_ip4(&pkt.sgid);
		r->dst = cm_capture_ip4(&pkt.dgid);
		r->opcode = pkt.opcode;
		r->kind = pkt.op->kind;
		r->dqpn = pkt.dqpn;
		r->psn = pkt.psn;
		r->len = pkt.payload_len;
		r->udp_sport = pkt.udp_sport;
		if (pkt.op->hdrs & UR_HDR_DETH) {
			const struct ur_deth *d =
			    (const void *)((const uint8_t *)pkt.bth + pkt.op->off_deth);

			r->qkey = ur_deth_qkey(d);
			r->sqpn = ur_deth_sqpn(d);
		}
		if (pkt.dqpn == UR_GSI_QPN) {
			memcpy(r->mad, pkt.payload,
			       pkt.payload_len < UR_MAD_LEN ? pkt.payload_len : UR_MAD_LEN);
			c->nmads++;
		}
	}
	if (rc < 0)
		load_fail(c, "%s #%u: corrupt record", path, index);
	ur_pcap_close(f);
}

static int is_pcap(const struct dirent *d)
{
	return !fnmatch("*.pcap", d->d_name, 0);
}

void cm_capture_load(struct cm_capture *c, const char *dir)
{
	struct dirent **names;
	int n = scandir(dir, &names, is_pcap, alphasort);

	if (n < 0) {
		load_fail(c, "%s: %s (set UROCE_TESTDATA_CM)", dir, strerror(errno));
		return;
	}
	if (n == 0)
		load_fail(c, "no *.pcap in %s", dir);
	for (int i = 0; i < n; i++) {
		load_file(c, dir, names[i]->d_name);
		free(names[i]);
	}
	free(names);
}

void cm_capture_free(struct cm_capture *c)
{
	free(c->recs);
	memset(c, 0, sizeof(*c));
}
