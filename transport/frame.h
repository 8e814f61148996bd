/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RoCEv2 encapsulation (IBTA Annex A17): Ethernet (optionally 802.1Q),
 * IPv4 or IPv6, UDP to port 4791, then the IB transport headers, payload,
 * pad and ICRC. Building uses a per-path template so a packet costs a copy
 * of ~42-66 bytes plus a few stores; parsing validates every length before
 * the transport looks at a byte.
 */
#ifndef UR_FRAME_H
#define UR_FRAME_H

#include <stdbool.h>
#include <stdint.h>

#include "opcode.h"
#include "wire.h"

#define UR_ROCE_UDP_PORT 4791
#define UR_ETH_HLEN 14
#define UR_VLAN_HLEN 4
#define UR_IPV4_HLEN 20
#define UR_IPV6_HLEN 40
#define UR_UDP_HLEN 8
#define UR_FRAME_MAX_HDR (UR_ETH_HLEN + UR_VLAN_HLEN + UR_IPV6_HLEN + UR_UDP_HLEN)
#define UR_ETHERTYPE_IPV4 0x0800
#define UR_ETHERTYPE_IPV6 0x86dd
#define UR_ETHERTYPE_VLAN 0x8100
#define UR_ETHERTYPE_ARP 0x0806

#define UR_ECN_MASK 0x03
#define UR_ECN_NOT_ECT 0x00
#define UR_ECN_ECT1 0x01
#define UR_ECN_ECT0 0x02
#define UR_ECN_CE 0x03

/* A GID holds either an IPv6 address or an IPv4-mapped one (::ffff:a.b.c.d). */
struct ur_gid {
	uint8_t raw[16];
};

bool ur_gid_is_v4(const struct ur_gid *g);
void ur_gid_from_v4(struct ur_gid *g, const uint8_t v4[4]);

/* Where packets of one QP (or one address handle) go. */
struct ur_path {
	uint8_t smac[6];
	uint8_t dmac[6];
	bool vlan_present;
	uint16_t vlan_tci;
	struct ur_gid sgid;
	struct ur_gid dgid;
	uint8_t tclass;     /* DSCP << 2 | ECN, from ah_attr.grh.traffic_class */
	uint8_t hop_limit;
	uint32_t flow_label;
	uint16_t udp_sport; /* per QP, for ECMP entropy (A17.3.1) */
};

/* The L2-L4 prefix of every frame on a path, with the per-packet fields left to fill. */
struct ur_frame_tmpl {
	uint8_t bytes[UR_FRAME_MAX_HDR];
	uint8_t len;    /* bytes up to the BTH */
	uint8_t l3_off; /* where the IP header starts */
	uint8_t ipv6;
};

void ur_frame_tmpl_init(struct ur_frame_tmpl *t, const struct ur_path *p);

/*
 * Write the prefix into `frame` for a RoCE payload of `roce_len` bytes (BTH
 * through ICRC) with traffic class `tos`, and return the prefix length.
 */
unsigned ur_frame_tmpl_emit(const struct ur_frame_tmpl *t, uint8_t *frame, uint32_t roce_len,
			    uint8_t tos, uint16_t ip_id);

/* Seal a frame: pad count is in the BTH already; compute and store the ICRC. */
void ur_frame_seal(const struct ur_frame_tmpl *t, uint8_t *frame, uint32_t frame_len);
/* ur_frame_seal() after copying copy_len bytes from src to dst inside the frame, in one pass. */
void ur_frame_seal_copy(const struct ur_frame_tmpl *t, uint8_t *frame, uint32_t frame_len,
			uint8_t *dst, const void *src, uint32_t copy_len);

/* Parsed view of a received frame. Pointers refer into the frame. */
struct ur_pkt {
	const uint8_t *frame;
	uint32_t frame_len;
	const uint8_t *l3;
	uint32_t l3_len;        /* IP header through ICRC */
	uint8_t smac[6];
	uint8_t dmac[6];
	bool ipv6;
	uint8_t tos;            /* DSCP/ECN byte */
	uint8_t hop_limit;
	struct ur_gid sgid;
	struct ur_gid dgid;
	uint16_t udp_sport;
	const struct ur_bth *bth;
	const struct ur_opcode_info *op;
	uint8_t opcode;
	uint32_t dqpn;
	uint32_t psn;
	const uint8_t *sr_ext;  /* SRETH or SACK when the BTH SR bit is set, else NULL */
	const uint8_t *payload;
	uint32_t payload_len;   /* without pad */
};

/* Reasons a frame is not a RoCEv2 packet for us; each maps to a drop counter. */
enum ur_parse_err {
	UR_PARSE_OK = 0,
	UR_PARSE_NOT_ROCE,      /* not IP/UDP/4791: someone else's traffic */
	UR_PARSE_TRUNCATED,     /* lengths inconsistent with the frame */
	UR_PARSE_BAD_IP,        /* version, header length, checksum, fragment */
	UR_PARSE_BAD_BTH,       /* TVer, unknown opcode, pad count */
	UR_PARSE_BAD_ICRC,
	UR_PARSE_CONTROL,       /* a uroce SR negotiation datagram (UDP 4792): payload set */
};

/* Bytes of SR extension a packet of this kind carries (0: none allowed). */
unsigned ur_sr_ext_len(unsigned kind);

/*
 * Build a UDP datagram to the SR control port on the template's path:
 * returns the frame length. The UDP checksum is filled in.
 */
unsigned ur_frame_build_ctrl(const struct ur_frame_tmpl *t, uint8_t *frame, const void *payload,
			     unsigned len);

enum ur_parse_err ur_frame_parse(struct ur_pkt *pkt, const uint8_t *frame, uint32_t len);

/*
 * The 40 bytes a UD receive buffer starts with (the verbs reserve them for
 * the GRH): on RoCEv2 over IPv6 the IPv6 header; over IPv4, 20 zero bytes
 * then the IPv4 header (RoCEv2 annex A17), as Soft-RoCE places it and as
 * libibverbs' ibv_init_ah_from_wc() reads it.
 */
#define UR_GRH_LEN 40
void ur_pkt_grh(const struct ur_pkt *pkt, uint8_t grh[UR_GRH_LEN]);

uint16_t ur_ipv4_csum(const uint8_t *hdr, unsigned len);

/*
 * The UDP source port of a connection, as Linux (and so Soft-RoCE and
 * mlx5) chooses it: from the GRH flow label, or when that is 0 from a flow
 * label hashed from both QP numbers, folded into 0xc000-0xffff. Both
 * directions of a connection get the same port.
 */
uint16_t ur_roce_udp_sport(uint32_t flow_label, uint32_t lqpn, uint32_t rqpn);

#endif
