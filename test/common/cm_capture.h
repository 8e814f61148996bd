/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Soft-RoCE's rdma_cm captures (test/data/cm) read once for the CM tests:
 * every RoCEv2 frame, with the MAD of those to QP 1.
 */
#ifndef UR_CM_CAPTURE_H
#define UR_CM_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cm_mad.h"
#include "frame.h"

#define CM_CLIENT_IP 0x0a59000cu /* 10.89.0.12 connects */
#define CM_SERVER_IP 0x0a59000bu /* 10.89.0.11 listens */

struct cm_rec {
	char file[48];
	unsigned int frame; /* as tshark numbers it, from 1 */
	uint32_t src, dst;  /* IPv4 */
	uint8_t opcode;
	uint8_t kind;
	uint32_t dqpn, psn;
	uint32_t qkey, sqpn; /* UD only */
	uint16_t udp_sport;
	uint32_t len; /* payload bytes */
	uint8_t mad[UR_MAD_LEN];
};

struct cm_capture {
	struct cm_rec *recs;
	size_t nrecs, nmads;
	char error[512]; /* the first problem met while loading, or "" */
};

/* $UROCE_TESTDATA_CM, or the tree's test/data/cm. */
const char *cm_capture_dir(void);
/* Every *.pcap of the directory, in name order; problems land in c->error. */
void cm_capture_load(struct cm_capture *c, const char *dir);
void cm_capture_free(struct cm_capture *c);

uint32_t cm_capture_ip4(const struct ur_gid *g);

static inline bool cm_rec_is_mad(const struct cm_rec *r)
{
	return r->dqpn == UR_GSI_QPN;
}

#endif
