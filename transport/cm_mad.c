/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CM MAD codec. Each message is one table of fields at their IBTA
 * Byte[Bit] places (bit 0 is a byte's most significant bit); one pair of
 * loops decodes and encodes every table, so a field is placed once.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "cm_mad.h"

/* clang-format off */
/* An integer field: width bits from Byte[Bit]. */
#define UINT(t, m, by, bi, w) {#m, offsetof(t, m), sizeof(((t *)0)->m), by, bi, w}
/* A byte string: as many bytes as the member holds. */
#define BYTES(t, m, by) {#m, offsetof(t, m), sizeof(((t *)0)->m), by, 0, 0}

/* Common MAD header, 13.4.2 (offsets from the start of the MAD). */
#define H(m, byte, bit, width) UINT(struct ur_mad_hdr, m, byte, bit, width)
static const struct ur_cm_field hdr_fields[] = {
	H(base_version, 0, 0, 8),
	H(mgmt_class, 1, 0, 8),
	H(class_version, 2, 0, 8),
	H(method, 3, 0, 8),
	H(status, 4, 0, 16),
	H(class_specific, 6, 0, 16),
	H(tid, 8, 0, 64),
	H(attr_id, 16, 0, 16),
	H(resv, 18, 0, 16),
	H(attr_mod, 20, 0, 32),
};

/* ClassPortInfo, 13.4.8.1 table 126. */
#define C(m, byte, bit, width) UINT(struct ur_mad_cpi, m, byte, bit, width)
static const struct ur_cm_field cpi_fields[] = {
	C(base_version, 0, 0, 8),
	C(class_version, 1, 0, 8),
	C(capability_mask, 2, 0, 16),
	C(capability_mask2, 4, 0, 27),
	C(resp_time_value, 7, 3, 5),
	BYTES(struct ur_mad_cpi, redirect_gid, 8),
	C(redirect_tc, 24, 0, 8),
	C(redirect_sl, 25, 0, 4),
	C(redirect_fl, 25, 4, 20),
	C(redirect_lid, 28, 0, 16),
	C(redirect_pkey, 30, 0, 16),
	C(redirect_qp, 33, 0, 24),
	C(redirect_qkey, 36, 0, 32),
	BYTES(struct ur_mad_cpi, trap_gid, 40),
	C(trap_tc, 56, 0, 8),
	C(trap_sl, 57, 0, 4),
	C(trap_fl, 57, 4, 20),
	C(trap_lid, 60, 0, 16),
	C(trap_pkey, 62, 0, 16),
	C(trap_hl, 64, 0, 8),
	C(trap_qp, 65, 0, 24),
	C(trap_qkey, 68, 0, 32),
};

/* REQ, 12.6.5 table 106; the primary path at 52, the alternate at 96. */
#define R(m, byte, bit, width) UINT(struct ur_cm_req, m, byte, bit, width)
#define PATH(p, o) \
	R(p.local_lid, (o), 0, 16), \
	R(p.remote_lid, (o) + 2, 0, 16), \
	BYTES(struct ur_cm_req, p.local_gid, (o) + 4), \
	BYTES(struct ur_cm_req, p.remote_gid, (o) + 20), \
	R(p.flow_label, (o) + 36, 0, 20), \
	R(p.packet_rate, (o) + 39, 2, 6), \
	R(p.traffic_class, (o) + 40, 0, 8), \
	R(p.hop_limit, (o) + 41, 0, 8), \
	R(p.sl, (o) + 42, 0, 4), \
	R(p.subnet_local, (o) + 42, 4, 1), \
	R(p.local_ack_timeout, (o) + 43, 0, 5)
static const struct ur_cm_field req_fields[] = {
	R(local_comm_id, 0, 0, 32),
	R(vendor_id, 5, 0, 24),
	R(service_id, 8, 0, 64),
	R(local_ca_guid, 16, 0, 64),
	R(local_qkey, 28, 0, 32),
	R(local_qpn, 32, 0, 24),
	R(responder_resources, 35, 0, 8),
	R(local_eecn, 36, 0, 24),
	R(initiator_depth, 39, 0, 8),
	R(remote_eecn, 40, 0, 24),
	R(remote_cm_response_timeout, 43, 0, 5),
	R(transport_service_type, 43, 5, 2),
	R(e2e_flow_control, 43, 7, 1),
	R(starting_psn, 44, 0, 24),
	R(local_cm_response_timeout, 47, 0, 5),
	R(retry_count, 47, 5, 3),
	R(pkey, 48, 0, 16),
	R(path_mtu, 50, 0, 4),
	R(rdc_exists, 50, 4, 1),
	R(rnr_retry_count, 50, 5, 3),
	R(max_cm_retries, 51, 0, 4),
	R(srq, 51, 4, 1),
	R(ext_transport_type, 51, 5, 3),
	PATH(primary, 52),
	PATH(alternate, 96),
	R(sap_supported, 139, 5, 1),
	BYTES(struct ur_cm_req, private_data, 140),
};

/* MRA, 12.6.6 table 107. */
#define M(m, byte, bit, width) UINT(struct ur_cm_mra, m, byte, bit, width)
static const struct ur_cm_field mra_fields[] = {
	M(local_comm_id, 0, 0, 32),
	M(remote_comm_id, 4, 0, 32),
	M(message_mraed, 8, 0, 2),
	M(service_timeout, 9, 0, 5),
	BYTES(struct ur_cm_mra, private_data, 10),
};

/* REJ, 12.6.7 table 108. */
#define J(m, byte, bit, width) UINT(struct ur_cm_rej, m, byte, bit, width)
static const struct ur_cm_field rej_fields[] = {
	J(local_comm_id, 0, 0, 32),
	J(remote_comm_id, 4, 0, 32),
	J(message_rejected, 8, 0, 2),
	J(ari_length, 9, 0, 7),
	J(reason, 10, 0, 16),
	BYTES(struct ur_cm_rej, ari, 12),
	BYTES(struct ur_cm_rej, private_data, 84),
};

/* REP, 12.6.8 table 110; the vendor ID bytes are Linux's ECE. */
#define P(m, byte, bit, width) UINT(struct ur_cm_rep, m, byte, bit, width)
static const struct ur_cm_field rep_fields[] = {
	P(local_comm_id, 0, 0, 32),	    P(remote_comm_id, 4, 0, 32),
	P(local_qkey, 8, 0, 32),	    P(local_qpn, 12, 0, 24),
	P(vendor_id_h, 15, 0, 8),	    P(local_eecn, 16, 0, 24),
	P(vendor_id_m, 19, 0, 8),	    P(starting_psn, 20, 0, 24),
	P(vendor_id_l, 23, 0, 8),	    P(responder_resources, 24, 0, 8),
	P(initiator_depth, 25, 0, 8),   P(target_ack_delay, 26, 0, 5),
	P(failover_accepted, 26, 5, 2), P(e2e_flow_control, 26, 7, 1),
	P(rnr_retry_count, 27, 0, 3),   P(srq, 27, 3, 1),
	P(local_ca_guid, 28, 0, 64),    BYTES(struct ur_cm_rep, private_data, 36),
};

/* RTU, 12.6.9 table 111. */
static const struct ur_cm_field rtu_fields[] = {
	UINT(struct ur_cm_rtu, local_comm_id, 0, 0, 32),
	UINT(struct ur_cm_rtu, remote_comm_id, 4, 0, 32),
	BYTES(struct ur_cm_rtu, private_data, 8),
};

/* DREQ, 12.6.10 table 112. */
static const struct ur_cm_field dreq_fields[] = {
	UINT(struct ur_cm_dreq, local_comm_id, 0, 0, 32),
	UINT(struct ur_cm_dreq, remote_comm_id, 4, 0, 32),
	UINT(struct ur_cm_dreq, remote_qpn, 8, 0, 24),
	BYTES(struct ur_cm_dreq, private_data, 12),
};

/* DREP, 12.6.11 table 113. */
static const struct ur_cm_field drep_fields[] = {
	UINT(struct ur_cm_drep, local_comm_id, 0, 0, 32),
	UINT(struct ur_cm_drep, remote_comm_id, 4, 0, 32),
	BYTES(struct ur_cm_drep, private_data, 8),
};

/* SIDR_REQ, 12.11.1 table 119. */
static const struct ur_cm_field sidr_req_fields[] = {
	UINT(struct ur_cm_sidr_req, request_id, 0, 0, 32),
	UINT(struct ur_cm_sidr_req, pkey, 4, 0, 16),
	UINT(struct ur_cm_sidr_req, service_id, 8, 0, 64),
	BYTES(struct ur_cm_sidr_req, private_data, 16),
};

/* SIDR_REP, 12.11.2 table 120. */
#define S(m, byte, bit, width) UINT(struct ur_cm_sidr_rep, m, byte, bit, width)
static const struct ur_cm_field sidr_rep_fields[] = {
	S(request_id, 0, 0, 32),
	S(status, 4, 0, 8),
	S(info_length, 5, 0, 8),
	S(vendor_id_h, 6, 0, 16),
	S(qpn, 8, 0, 24),
	S(vendor_id_l, 11, 0, 8),
	S(service_id, 12, 0, 64),
	S(qkey, 20, 0, 32),
	BYTES(struct ur_cm_sidr_rep, info, 24),
	BYTES(struct ur_cm_sidr_rep, private_data, 96),
};

/* clang-format on */

struct msg_layout {
	uint16_t attr_id;
	const char *name;
	const struct ur_cm_field *fields;
	size_t nfields;
	size_t member; /* offsetof(struct ur_cm_mad, <message>) */
};

static const struct msg_layout layouts[] = {
#define UR_CM_LAYOUT(nm, id, m)                                                                    \
	{id, #nm, m##_fields, sizeof(m##_fields) / sizeof(m##_fields[0]),                          \
	 offsetof(struct ur_cm_mad, m)},
    UR_CM_ATTRS(UR_CM_LAYOUT)
#undef UR_CM_LAYOUT
};

static const struct msg_layout *layout_of(uint16_t attr_id)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].attr_id == attr_id)
			return &layouts[i];
	return NULL;
}

/* Bytes spanned by a field; the tables keep bit + width <= 64. */
static unsigned span(const struct ur_cm_field *f)
{
	return (f->bit + f->width + 7u) / 8u;
}

static uint64_t width_mask(unsigned width)
{
	return width >= 64 ? ~0ull : (1ull << width) - 1;
}

static uint64_t get_bits(const uint8_t *p, const struct ur_cm_field *f)
{
	unsigned n = span(f);
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v >> (n * 8 - f->bit - f->width) & width_mask(f->width);
}

static void put_bits(uint8_t *p, const struct ur_cm_field *f, uint64_t val)
{
	unsigned n = span(f), shift = n * 8 - f->bit - f->width;
	uint64_t mask = width_mask(f->width) << shift, v = 0;

	for (unsigned i = 0; i < n; i++)
		v = v << 8 | p[i];
	v = (v & ~mask) | (val << shift & mask);
	for (unsigned i = n; i-- > 0; v >>= 8)
		p[i] = (uint8_t)v;
}

/* Integer members by their size; bool is one byte holding 0 or 1. */
static uint64_t load_member(const uint8_t *s, const struct ur_cm_field *f)
{
	uint8_t u8;
	uint16_t u16;
	uint32_t u32;
	uint64_t u64;

	switch (f->size) {
	case 1:
		memcpy(&u8, s + f->member, 1);
		return u8;
	case 2:
		memcpy(&u16, s + f->member, 2);
		return u16;
	case 4:
		memcpy(&u32, s + f->member, 4);
		return u32;
	default:
		memcpy(&u64, s + f->member, 8);
		return u64;
	}
}

static void store_member(uint8_t *s, const struct ur_cm_field *f, uint64_t v)
{
	uint8_t u8 = (uint8_t)v;
	uint16_t u16 = (uint16_t)v;
	uint32_t u32 = (uint32_t)v;

	switch (f->size) {
	case 1:
		memcpy(s + f->member, &u8, 1);
		break;
	case 2:
		memcpy(s + f->member, &u16, 2);
		break;
	case 4:
		memcpy(s + f->member, &u32, 4);
		break;
	default:
		memcpy(s + f->member, &v, 8);
		break;
	}
}

static void decode_fields(void *dst, const uint8_t *wire, const struct ur_cm_field *fs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct ur_cm_field *f = &fs[i];

		if (f->width)
			store_member(dst, f, get_bits(wire + f->byte, f));
		else
			memcpy((uint8_t *)dst + f->member, wire + f->byte, f->size);
	}
}

static int encode_fields(uint8_t *wire, const void *src, const struct ur_cm_field *fs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct ur_cm_field *f = &fs[i];
		uint64_t v;

		if (!f->width) {
			memcpy(wire + f->byte, (const uint8_t *)src + f->member, f->size);
			continue;
		}
		v = load_member(src, f);
		if (v & ~width_mask(f->width))
			return -ERANGE;
		put_bits(wire + f->byte, f, v);
	}
	return 0;
}

int ur_cm_mad_decode(struct ur_cm_mad *m, const void *buf, size_t len)
{
	const uint8_t *b = buf;
	const struct msg_layout *l;

	if (len < UR_MAD_LEN)
		return -EMSGSIZE;
	memset(m, 0, sizeof(*m));
	decode_fields(&m->hdr, b, hdr_fields, sizeof(hdr_fields) / sizeof(hdr_fields[0]));
	if (m->hdr.base_version != UR_MAD_BASE_VERSION || m->hdr.mgmt_class != UR_MGMT_CLASS_CM ||
	    m->hdr.class_version != UR_CM_CLASS_VERSION)
		return -EPROTO;
	l = layout_of(m->hdr.attr_id);
	if (!l)
		return -EOPNOTSUPP;
	decode_fields((uint8_t *)m + l->member, b + UR_MAD_HDR_LEN, l->fields, l->nfields);
	return 0;
}

int ur_cm_mad_encode(const struct ur_cm_mad *m, void *buf, size_t len)
{
	uint8_t *b = buf;
	const struct msg_layout *l;
	int rc;

	if (len < UR_MAD_LEN)
		return -EMSGSIZE;
	l = layout_of(m->hdr.attr_id);
	if (!l)
		return -EOPNOTSUPP;
	memset(b, 0, UR_MAD_LEN);
	rc = encode_fields(b, &m->hdr, hdr_fields, sizeof(hdr_fields) / sizeof(hdr_fields[0]));
	if (!rc)
		rc = encode_fields(b + UR_MAD_HDR_LEN, (const uint8_t *)m + l->member, l->fields,
				   l->nfields);
	return rc;
}

void ur_cm_mad_init(struct ur_cm_mad *m, uint16_t attr_id, uint64_t tid)
{
	memset(m, 0, sizeof(*m));
	m->hdr.base_version = UR_MAD_BASE_VERSION;
	m->hdr.mgmt_class = UR_MGMT_CLASS_CM;
	m->hdr.class_version = UR_CM_CLASS_VERSION;
	m->hdr.method = UR_MAD_METHOD_SEND;
	m->hdr.attr_id = attr_id;
	m->hdr.tid = tid;
}

const char *ur_cm_attr_name(uint16_t attr_id)
{
	const struct msg_layout *l = layout_of(attr_id);

	return l ? l->name : NULL;
}

const char *ur_cm_rej_reason_name(uint16_t reason)
{
	switch (reason) {
#define UR_CM_REJ_CASE(name, v)                                                                    \
	case v:                                                                                    \
		return #name;
		UR_CM_REJ_REASONS(UR_CM_REJ_CASE)
#undef UR_CM_REJ_CASE
	}
	return NULL;
}

size_t ur_cm_fields(uint16_t attr_id, const struct ur_cm_field **out)
{
	const struct msg_layout *l = layout_of(attr_id);

	if (!l)
		return 0;
	*out = l->fields;
	return l->nfields;
}

size_t ur_mad_hdr_fields(const struct ur_cm_field **out)
{
	*out = hdr_fields;
	return sizeof(hdr_fields) / sizeof(hdr_fields[0]);
}
