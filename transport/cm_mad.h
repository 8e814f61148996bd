/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Communication Management MADs (IBTA Vol 1 ch. 12.6): the 256-byte
 * datagrams rdma_cm peers exchange on QP 1, the GSI (UD SEND with BTH and
 * DETH, Q_Key 0x80010000). Decoded into host-order structs and encoded back
 * from them; every field is placed by one table per message (cm_mad.c), so
 * the decoder and the encoder cannot disagree.
 */
#ifndef UR_CM_MAD_H
#define UR_CM_MAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UR_MAD_LEN 256
#define UR_MAD_HDR_LEN 24
#define UR_MAD_DATA_LEN (UR_MAD_LEN - UR_MAD_HDR_LEN)

/* The General Services Interface (13.5.1): QP 1, its well-known Q_Key. */
#define UR_GSI_QPN 1
#define UR_GSI_QKEY 0x80010000u

#define UR_MAD_BASE_VERSION 1
#define UR_MGMT_CLASS_CM 0x07
#define UR_CM_CLASS_VERSION 2

/* Methods (13.4.5); every CM message is a Send. */
#define UR_MAD_METHOD_GET 0x01
#define UR_MAD_METHOD_SET 0x02
#define UR_MAD_METHOD_SEND 0x03
#define UR_MAD_METHOD_GET_RESP 0x81

/* Attribute IDs (table 104), with the member of struct ur_cm_mad each decodes into. */
#define UR_CM_ATTRS(X)                                                                             \
	X(CLASS_PORT_INFO, 0x0001, cpi)                                                            \
	X(REQ, 0x0010, req)                                                                        \
	X(MRA, 0x0011, mra)                                                                        \
	X(REJ, 0x0012, rej)                                                                        \
	X(REP, 0x0013, rep)                                                                        \
	X(RTU, 0x0014, rtu)                                                                        \
	X(DREQ, 0x0015, dreq)                                                                      \
	X(DREP, 0x0016, drep)                                                                      \
	X(SIDR_REQ, 0x0017, sidr_req)                                                              \
	X(SIDR_REP, 0x0018, sidr_rep)

enum ur_cm_attr {
#define UR_CM_ATTR_ENUM(name, id, member) UR_CM_ATTR_##name = id,
	UR_CM_ATTRS(UR_CM_ATTR_ENUM)
#undef UR_CM_ATTR_ENUM
};

/* Reject reasons (table 109), as Linux's ib_cm numbers them. */
#define UR_CM_REJ_REASONS(X)                                                                       \
	X(NO_QP, 1)                                                                                \
	X(NO_EEC, 2)                                                                               \
	X(NO_RESOURCES, 3)                                                                         \
	X(TIMEOUT, 4)                                                                              \
	X(UNSUPPORTED, 5)                                                                          \
	X(INVALID_COMM_ID, 6)                                                                      \
	X(INVALID_COMM_INSTANCE, 7)                                                                \
	X(INVALID_SERVICE_ID, 8)                                                                   \
	X(INVALID_TRANSPORT_TYPE, 9)                                                               \
	X(STALE_CONN, 10)                                                                          \
	X(RDC_NOT_EXIST, 11)                                                                       \
	X(INVALID_GID, 12)                                                                         \
	X(INVALID_LID, 13)                                                                         \
	X(INVALID_SL, 14)                                                                          \
	X(INVALID_TRAFFIC_CLASS, 15)                                                               \
	X(INVALID_HOP_LIMIT, 16)                                                                   \
	X(INVALID_PACKET_RATE, 17)                                                                 \
	X(INVALID_ALT_GID, 18)                                                                     \
	X(INVALID_ALT_LID, 19)                                                                     \
	X(INVALID_ALT_SL, 20)                                                                      \
	X(INVALID_ALT_TRAFFIC_CLASS, 21)                                                           \
	X(INVALID_ALT_HOP_LIMIT, 22)                                                               \
	X(INVALID_ALT_PACKET_RATE, 23)                                                             \
	X(PORT_CM_REDIRECT, 24)                                                                    \
	X(PORT_REDIRECT, 25)                                                                       \
	X(INVALID_MTU, 26)                                                                         \
	X(INSUFFICIENT_RESP_RESOURCES, 27)                                                         \
	X(CONSUMER_DEFINED, 28)                                                                    \
	X(INVALID_RNR_RETRY, 29)                                                                   \
	X(DUPLICATE_LOCAL_COMM_ID, 30)                                                             \
	X(INVALID_CLASS_VERSION, 31)                                                               \
	X(INVALID_FLOW_LABEL, 32)                                                                  \
	X(INVALID_ALT_FLOW_LABEL, 33)                                                              \
	X(VENDOR_OPTION_NOT_SUPPORTED, 35)

enum ur_cm_rej_reason {
#define UR_CM_REJ_ENUM(name, v) UR_CM_REJ_##name = v,
	UR_CM_REJ_REASONS(UR_CM_REJ_ENUM)
#undef UR_CM_REJ_ENUM
};

/* Which message an MRA or REJ answers (tables 107, 108). */
#define UR_CM_MSG_REQ 0
#define UR_CM_MSG_REP 1
#define UR_CM_MSG_OTHER 2 /* REJ: a LAP; MRA: a LAP too */

/* Transport service type of a REQ (table 106). */
#define UR_CM_TS_RC 0
#define UR_CM_TS_UC 1
#define UR_CM_TS_RD 2

/* SIDR_REP status (table 120). */
#define UR_CM_SIDR_SUCCESS 0
#define UR_CM_SIDR_UNSUPPORTED 1
#define UR_CM_SIDR_REJECT 2
#define UR_CM_SIDR_NO_QP 3
#define UR_CM_SIDR_REDIRECT 4
#define UR_CM_SIDR_UNSUPPORTED_VERSION 5

/* Common MAD header (13.4.2, table 96). */
struct ur_mad_hdr {
	uint8_t base_version;
	uint8_t mgmt_class;
	uint8_t class_version;
	uint8_t method; /* R bit (7) and method (6:0) */
	uint16_t status;
	uint16_t class_specific;
	uint64_t tid;
	uint16_t attr_id;
	uint16_t resv;
	uint32_t attr_mod; /* Linux puts its ECE options here on REQ and REP */
};

/* A path as a REQ carries it, primary or alternate (table 106). */
struct ur_cm_path {
	uint16_t local_lid; /* 0xffff on RoCE: no LIDs */
	uint16_t remote_lid;
	uint8_t local_gid[16];
	uint8_t remote_gid[16];
	uint32_t flow_label; /* 20 bits */
	uint8_t packet_rate; /* 6 bits, IB rate enum */
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint8_t sl; /* 4 bits */
	bool subnet_local;
	uint8_t local_ack_timeout; /* 5 bits: 4.096 us << t */
};

#define UR_CM_REQ_PDATA 92
#define UR_CM_MRA_PDATA 222
#define UR_CM_REJ_ARI 72
#define UR_CM_REJ_PDATA 148
#define UR_CM_REP_PDATA 196
#define UR_CM_RTU_PDATA 224
#define UR_CM_DREQ_PDATA 220
#define UR_CM_DREP_PDATA 224
#define UR_CM_SIDR_REQ_PDATA 216
#define UR_CM_SIDR_REP_INFO 72
#define UR_CM_SIDR_REP_PDATA 136

/* Timeouts are 5-bit exponents: 4.096 us << t. */
struct ur_cm_req {
	uint32_t local_comm_id;
	uint32_t vendor_id; /* 24 bits; Linux's ECE */
	uint64_t service_id;
	uint64_t local_ca_guid;
	uint32_t local_qkey;
	uint32_t local_qpn; /* 24 bits */
	uint8_t responder_resources;
	uint32_t local_eecn; /* 24 bits */
	uint8_t initiator_depth;
	uint32_t remote_eecn; /* 24 bits */
	uint8_t remote_cm_response_timeout;
	uint8_t transport_service_type; /* UR_CM_TS_* */
	bool e2e_flow_control;
	uint32_t starting_psn; /* 24 bits: where the REQ's receiver starts sending */
	uint8_t local_cm_response_timeout;
	uint8_t retry_count; /* 3 bits */
	uint16_t pkey;
	uint8_t path_mtu; /* 4 bits, IB MTU enum: 1 = 256 ... 5 = 4096 */
	bool rdc_exists;
	uint8_t rnr_retry_count; /* 3 bits */
	uint8_t max_cm_retries;	 /* 4 bits */
	bool srq;
	uint8_t ext_transport_type; /* 3 bits */
	struct ur_cm_path primary;
	struct ur_cm_path alternate;
	bool sap_supported;
	uint8_t private_data[UR_CM_REQ_PDATA];
};

struct ur_cm_mra {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t message_mraed; /* UR_CM_MSG_* */
	uint8_t service_timeout;
	uint8_t private_data[UR_CM_MRA_PDATA];
};

struct ur_cm_rej {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t message_rejected; /* UR_CM_MSG_* */
	uint8_t ari_length;	  /* 7 bits */
	uint16_t reason;	  /* UR_CM_REJ_* */
	uint8_t ari[UR_CM_REJ_ARI];
	uint8_t private_data[UR_CM_REJ_PDATA];
};

struct ur_cm_rep {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint32_t local_qkey;
	uint32_t local_qpn; /* 24 bits */
	uint8_t vendor_id_h;
	uint32_t local_eecn; /* 24 bits */
	uint8_t vendor_id_m;
	uint32_t starting_psn; /* 24 bits: where the REP's receiver starts sending */
	uint8_t vendor_id_l;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t target_ack_delay;  /* 5 bits */
	uint8_t failover_accepted; /* 2 bits */
	bool e2e_flow_control;
	uint8_t rnr_retry_count; /* 3 bits */
	bool srq;
	uint64_t local_ca_guid;
	uint8_t private_data[UR_CM_REP_PDATA];
};

struct ur_cm_rtu {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t private_data[UR_CM_RTU_PDATA];
};

struct ur_cm_dreq {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint32_t remote_qpn; /* 24 bits: the QP (or EEC) to disconnect */
	uint8_t private_data[UR_CM_DREQ_PDATA];
};

struct ur_cm_drep {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t private_data[UR_CM_DREP_PDATA];
};

struct ur_cm_sidr_req {
	uint32_t request_id;
	uint16_t pkey;
	uint64_t service_id;
	uint8_t private_data[UR_CM_SIDR_REQ_PDATA];
};

struct ur_cm_sidr_rep {
	uint32_t request_id;
	uint8_t status; /* UR_CM_SIDR_* */
	uint8_t info_length;
	uint16_t vendor_id_h;
	uint32_t qpn; /* 24 bits */
	uint8_t vendor_id_l;
	uint64_t service_id;
	uint32_t qkey;
	uint8_t info[UR_CM_SIDR_REP_INFO];
	uint8_t private_data[UR_CM_SIDR_REP_PDATA];
};

/* ClassPortInfo (13.4.8.1, table 126): what a Get of the CM class answers. */
struct ur_mad_cpi {
	uint8_t base_version;
	uint8_t class_version;
	uint16_t capability_mask;
	uint32_t capability_mask2; /* 27 bits */
	uint8_t resp_time_value;   /* 5 bits */
	uint8_t redirect_gid[16];
	uint8_t redirect_tc;
	uint8_t redirect_sl;  /* 4 bits */
	uint32_t redirect_fl; /* 20 bits */
	uint16_t redirect_lid;
	uint16_t redirect_pkey;
	uint32_t redirect_qp; /* 24 bits */
	uint32_t redirect_qkey;
	uint8_t trap_gid[16];
	uint8_t trap_tc;
	uint8_t trap_sl;  /* 4 bits */
	uint32_t trap_fl; /* 20 bits */
	uint16_t trap_lid;
	uint16_t trap_pkey;
	uint8_t trap_hl;
	uint32_t trap_qp; /* 24 bits */
	uint32_t trap_qkey;
};

/* A decoded CM MAD: the header, and the message its attribute ID names. */
struct ur_cm_mad {
	struct ur_mad_hdr hdr;
	union {
		struct ur_mad_cpi cpi;
		struct ur_cm_req req;
		struct ur_cm_mra mra;
		struct ur_cm_rej rej;
		struct ur_cm_rep rep;
		struct ur_cm_rtu rtu;
		struct ur_cm_dreq dreq;
		struct ur_cm_drep drep;
		struct ur_cm_sidr_req sidr_req;
		struct ur_cm_sidr_rep sidr_rep;
	};
};

/*
 * Decode the first UR_MAD_LEN bytes of buf (a GSI datagram's payload; bytes
 * after them are ignored). Reserved bits are not kept: they must be zero to
 * survive a round trip. Returns 0, or
 *  -EMSGSIZE   len < UR_MAD_LEN;
 *  -EPROTO     not a CM MAD: base version, class or class version;
 *  -EOPNOTSUPP an attribute this codec does not know (m->hdr is filled).
 * Reads nothing outside buf[0..UR_MAD_LEN).
 */
int ur_cm_mad_decode(struct ur_cm_mad *m, const void *buf, size_t len);

/*
 * Encode m into buf[0..UR_MAD_LEN), reserved bits zero. Returns 0, or
 * -EMSGSIZE (len too short), -EOPNOTSUPP (unknown attribute) or -ERANGE (a
 * field holds more bits than its place on the wire).
 */
int ur_cm_mad_encode(const struct ur_cm_mad *m, void *buf, size_t len);

/* Zero m and fill its header for a CM Send of this attribute. */
void ur_cm_mad_init(struct ur_cm_mad *m, uint16_t attr_id, uint64_t tid);

/* "REQ", "SIDR_REP"...; NULL for an attribute the codec does not know. */
const char *ur_cm_attr_name(uint16_t attr_id);
/* "INVALID_SERVICE_ID"...; NULL for a reason table 109 does not list. */
const char *ur_cm_rej_reason_name(uint16_t reason);

/* Where one field sits on the wire and in its decoded struct. */
struct ur_cm_field {
	const char *name;
	uint16_t member; /* offsetof in the decoded struct */
	uint8_t size;	 /* sizeof that member */
	uint8_t byte;	 /* from the start of the MAD data (header: of the MAD) */
	uint8_t bit;	 /* from the byte's most significant bit: IBTA's Byte[Bit] */
	uint8_t width;	 /* in bits; 0 for a byte string of `size` bytes */
};

/*
 * The layout of an attribute's message, for tests and dumps: returns the
 * number of fields and points *out at them, or 0 for an unknown attribute.
 */
size_t ur_cm_fields(uint16_t attr_id, const struct ur_cm_field **out);
/* The layout of the MAD header (offsets from the start of the MAD). */
size_t ur_mad_hdr_fields(const struct ur_cm_field **out);

#endif
