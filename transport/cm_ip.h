/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * IP addressing over the CM (IBTA Vol 1 Annex A11, "RDMA IP CM Service"),
 * as Linux's rdma_cm uses it: the service ID a REQ or SIDR_REQ names is
 * built from the port space and the destination port, and the private data
 * starts with a header that carries the addresses and the source port.
 */
#ifndef UR_CM_IP_H
#define UR_CM_IP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cm_mad.h"

/*
 * Service ID (A11.2.1): a 40-bit prefix 0x0000000001, the IP protocol
 * (8 bits), the destination port (16 bits). Linux's port spaces (enum
 * rdma_ucm_port_space) are the prefix's last byte and the protocol:
 * RDMA_PS_TCP 0x0106, RDMA_PS_UDP 0x0111, RDMA_PS_IB 0x013f.
 */
#define UR_CM_IP_SID_PREFIX 0x0000000001ull
#define UR_CM_PS_IPOIB 0x0002
#define UR_CM_PS_TCP 0x0106
#define UR_CM_PS_UDP 0x0111
#define UR_CM_PS_IB 0x013f

uint64_t ur_cm_ip_service_id(uint16_t port_space, uint16_t port);
/* True for an RDMA IP CM service ID; fills the port space (prefix byte and protocol) and port. */
bool ur_cm_ip_service_parse(uint64_t sid, uint16_t *port_space, uint16_t *port);

/*
 * The private data header of a REQ or SIDR_REQ (A11.6, Linux's struct
 * cma_hdr), 36 bytes: version (MajV 7:4, MinV 3:0), IP version (7:4),
 * source port, source and destination address. An IPv4 address fills the
 * last 4 of its 16 bytes, the rest zero. The destination port is in the
 * service ID.
 */
#define UR_CM_IP_HDR_LEN 36
#define UR_CM_IP_VERSION 0x00 /* MajV 0, MinV 0: what Linux sends */

/* What is left to the consumer of rdma_connect() and a UD resolve after the header. */
#define UR_CM_IP_REQ_PDATA_MAX (UR_CM_REQ_PDATA - UR_CM_IP_HDR_LEN)	      /* 56 */
#define UR_CM_IP_SIDR_REQ_PDATA_MAX (UR_CM_SIDR_REQ_PDATA - UR_CM_IP_HDR_LEN) /* 180 */

struct ur_cm_ip_hdr {
	uint8_t version;    /* MajV << 4 | MinV */
	uint8_t ip_version; /* 4 or 6 */
	uint16_t src_port;
	uint8_t src_ip[16];
	uint8_t dst_ip[16];
};

/* Returns 0, -EMSGSIZE (len < 36) or -EPROTO (a version or IP version we cannot read). */
int ur_cm_ip_hdr_decode(struct ur_cm_ip_hdr *h, const uint8_t *pdata, size_t len);
/* Returns 0, -EMSGSIZE or -EINVAL (IP version not 4 or 6). */
int ur_cm_ip_hdr_encode(const struct ur_cm_ip_hdr *h, uint8_t *pdata, size_t len);

#endif
