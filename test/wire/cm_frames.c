/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CM MADs for check_cm.py to hold against Wireshark.
 *
 *   cm_frames write OUT.pcap   one RoCEv2 frame per CM message uroce
 *                              encodes (Ethernet/IPv4/UDP 4791/BTH/DETH/
 *                              MAD/ICRC, built with the engine's frame
 *                              template, header setters and ICRC)
 *   cm_frames decode IN.pcap   uroce's decoding of every MAD in a capture
 *
 * Both print, per MAD, "frame N ATTR field=value ..." with every integer
 * field of the message's table, so the checker compares the same names
 * either way.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_ip.h"
#include "cm_mad.h"
#include "frame.h"
#include "opcode.h"
#include "pcap_file.h"
#include "wire.h"

#define FRAME_MAX 512

static uint64_t load(const void *msg, const struct ur_cm_field *f)
{
	const uint8_t *p = (const uint8_t *)msg + f->member;
	uint8_t u8;
	uint16_t u16;
	uint32_t u32;
	uint64_t u64;

	switch (f->size) {
	case 1:
		memcpy(&u8, p, 1);
		return u8;
	case 2:
		memcpy(&u16, p, 2);
		return u16;
	case 4:
		memcpy(&u32, p, 4);
		return u32;
	default:
		memcpy(&u64, p, 8);
		return u64;
	}
}

static void print_fields(const char *prefix, const void *msg, const struct ur_cm_field *fs,
			 size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fs[i].width)
			printf(" %s%s=%#llx", prefix, fs[i].name,
			       (unsigned long long)load(msg, &fs[i]));
}

static void print_mad(unsigned int frame, const struct ur_cm_mad *m)
{
	const struct ur_cm_field *fs;
	size_t n;

	printf("frame %u %s", frame, ur_cm_attr_name(m->hdr.attr_id));
	n = ur_mad_hdr_fields(&fs);
	print_fields("hdr.", &m->hdr, fs, n);
	n = ur_cm_fields(m->hdr.attr_id, &fs);
	print_fields("", &m->req, fs, n);
	if (m->hdr.attr_id == UR_CM_ATTR_REQ || m->hdr.attr_id == UR_CM_ATTR_SIDR_REQ) {
		const uint8_t *pd = m->hdr.attr_id == UR_CM_ATTR_REQ ? m->req.private_data
								     : m->sidr_req.private_data;
		struct ur_cm_ip_hdr h;

		char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
		bool v4;

		if (!ur_cm_ip_hdr_decode(&h, pd, UR_CM_IP_HDR_LEN)) {
			v4 = h.ip_version == 4;
			inet_ntop(v4 ? AF_INET : AF_INET6, h.src_ip + (v4 ? 12 : 0), src,
				  sizeof(src));
			inet_ntop(v4 ? AF_INET : AF_INET6, h.dst_ip + (v4 ? 12 : 0), dst,
				  sizeof(dst));
			printf(" ip.version=%u ip.src_port=%#x ip.src%s=%s ip.dst%s=%s",
			       h.ip_version, h.src_port, v4 ? "" : "6", src, v4 ? "" : "6", dst);
		}
	}
	printf("\n");
}

struct pcap_out {
	FILE *f;
	unsigned int frames;
};

static int pcap_create(struct pcap_out *o, const char *path)
{
	/* classic pcap, microseconds, Ethernet */
	const uint32_t hdr[6] = {0xa1b2c3d4, 2 | 4u << 16, 0, 0, 65535, UR_PCAP_LINKTYPE_ETHERNET};

	o->frames = 0;
	o->f = fopen(path, "wb");
	if (!o->f || fwrite(hdr, sizeof(hdr), 1, o->f) != 1)
		return -errno;
	return 0;
}

static void pcap_add(struct pcap_out *o, const uint8_t *frame, uint32_t len)
{
	const uint32_t rec[4] = {1800000000u + o->frames, 0, len, len};

	fwrite(rec, sizeof(rec), 1, o->f);
	fwrite(frame, len, 1, o->f);
	o->frames++;
}

/* The two ends of every connection below. */
struct end {
	uint8_t mac[6];
	struct ur_gid gid;
	uint64_t guid;
};

static struct end active = {{0x02, 0, 0, 0, 0, 0x01}, {{0}}, 0x020000fffe000001ull};
static struct end passive = {{0x02, 0, 0, 0, 0, 0x02}, {{0}}, 0x020000fffe000002ull};

/* 10.0.0.1 and .2, or fd00::1 and ::2 */
static void set_family(int family)
{
	static const uint8_t a4[4] = {10, 0, 0, 1}, b4[4] = {10, 0, 0, 2};

	if (family == 4) {
		ur_gid_from_v4(&active.gid, a4);
		ur_gid_from_v4(&passive.gid, b4);
		return;
	}
	memset(&active.gid, 0, sizeof(active.gid));
	active.gid.raw[0] = 0xfd;
	passive.gid = active.gid;
	active.gid.raw[15] = 1;
	passive.gid.raw[15] = 2;
}

/* A GSI datagram (13.5.1): UD SEND Only from QP 1 to QP 1, the GSI Q_Key. */
static int emit(struct pcap_out *o, const struct end *from, const struct end *to, uint32_t psn,
		const struct ur_cm_mad *m)
{
	uint8_t frame[FRAME_MAX] = {0};
	struct ur_frame_tmpl t;
	struct ur_path p = {.hop_limit = 64};
	const struct ur_opcode_info *op = ur_opcode_get(UR_OP_UD_SEND_ONLY);
	struct ur_bth *bth;
	struct ur_deth *deth;
	uint32_t roce_len = op->hdr_len + UR_MAD_LEN + UR_ICRC_SIZE;
	unsigned hdr;
	int rc;

	memcpy(p.smac, from->mac, 6);
	memcpy(p.dmac, to->mac, 6);
	p.sgid = from->gid;
	p.dgid = to->gid;
	p.udp_sport = ur_roce_udp_sport(0, UR_GSI_QPN, UR_GSI_QPN);
	ur_frame_tmpl_init(&t, &p);
	hdr = ur_frame_tmpl_emit(&t, frame, roce_len, 0, (uint16_t)o->frames);
	bth = (struct ur_bth *)(frame + hdr);
	ur_bth_set_opcode(bth, UR_OP_UD_SEND_ONLY);
	ur_bth_set_pkey(bth, 0xffff);
	ur_bth_set_dqpn(bth, UR_GSI_QPN);
	ur_bth_set_psn(bth, psn);
	deth = (struct ur_deth *)(frame + hdr + op->off_deth);
	ur_deth_set_qkey(deth, UR_GSI_QKEY);
	ur_deth_set_sqpn(deth, UR_GSI_QPN);
	rc = ur_cm_mad_encode(m, frame + hdr + op->hdr_len, UR_MAD_LEN);
	if (rc)
		return rc;
	ur_frame_seal(&t, frame, hdr + roce_len);
	pcap_add(o, frame, hdr + roce_len);
	print_mad(o->frames, m);
	return 0;
}

static void ip_hdr(uint8_t *pd, const struct end *from, const struct end *to, uint16_t sport)
{
	bool v4 = ur_gid_is_v4(&from->gid);
	struct ur_cm_ip_hdr h = {
	    .version = UR_CM_IP_VERSION, .ip_version = v4 ? 4 : 6, .src_port = sport};

	/* an IPv4 address fills the last 4 bytes, the rest stays zero */
	memcpy(h.src_ip + (v4 ? 12 : 0), from->gid.raw + (v4 ? 12 : 0), v4 ? 4 : 16);
	memcpy(h.dst_ip + (v4 ? 12 : 0), to->gid.raw + (v4 ? 12 : 0), v4 ? 4 : 16);
	ur_cm_ip_hdr_encode(&h, pd, UR_CM_IP_HDR_LEN);
}

static void path(struct ur_cm_path *p, const struct end *from, const struct end *to)
{
	p->local_lid = 0xffff;
	p->remote_lid = 0xffff;
	memcpy(p->local_gid, from->gid.raw, 16);
	memcpy(p->remote_gid, to->gid.raw, 16);
	p->flow_label = 0xabcde;
	p->packet_rate = 0x0f;
	p->traffic_class = 106;
	p->hop_limit = 64;
	p->sl = 3;
	p->local_ack_timeout = 19;
}

/* One of each message, with values that differ from field to field. */
static int write_messages(struct pcap_out *o)
{
	struct ur_cm_mad m;
	const uint64_t tid = 0x0000000224f27400ull;
	const uint32_t a_id = 0x11223344, p_id = 0x55667788;
	int rc = 0;

	ur_cm_mad_init(&m, UR_CM_ATTR_REQ, tid);
	m.req.local_comm_id = a_id;
	m.req.service_id = ur_cm_ip_service_id(UR_CM_PS_TCP, 7174);
	m.req.local_ca_guid = active.guid;
	m.req.local_qpn = 0x000123;
	m.req.responder_resources = 16;
	m.req.initiator_depth = 15;
	m.req.remote_cm_response_timeout = 20;
	m.req.transport_service_type = UR_CM_TS_RC;
	m.req.e2e_flow_control = true;
	m.req.starting_psn = 0xfffff0;
	m.req.local_cm_response_timeout = 18;
	m.req.retry_count = 7;
	m.req.pkey = 0xffff;
	m.req.path_mtu = 5;
	m.req.rnr_retry_count = 6;
	m.req.max_cm_retries = 15;
	path(&m.req.primary, &active, &passive);
	ip_hdr(m.req.private_data, &active, &passive, 0x8af1);
	memcpy(m.req.private_data + UR_CM_IP_HDR_LEN, "uroce", 5);
	if (!rc)
		rc = emit(o, &active, &passive, 1, &m);

	ur_cm_mad_init(&m, UR_CM_ATTR_MRA, tid);
	m.mra.local_comm_id = p_id;
	m.mra.remote_comm_id = a_id;
	m.mra.message_mraed = UR_CM_MSG_REQ;
	m.mra.service_timeout = 23;
	if (!rc)
		rc = emit(o, &passive, &active, 1, &m);

	ur_cm_mad_init(&m, UR_CM_ATTR_REP, tid);
	m.rep.local_comm_id = p_id;
	m.rep.remote_comm_id = a_id;
	m.rep.local_qpn = 0x000456;
	m.rep.starting_psn = 0x00000a;
	m.rep.responder_resources = 15;
	m.rep.initiator_depth = 14;
	m.rep.target_ack_delay = 17;
	m.rep.failover_accepted = 0;
	m.rep.e2e_flow_control = true;
	m.rep.rnr_retry_count = 5;
	m.rep.srq = true;
	m.rep.local_ca_guid = passive.guid;
	if (!rc)
		rc = emit(o, &passive, &active, 2, &m);

	ur_cm_mad_init(&m, UR_CM_ATTR_RTU, tid);
	m.rtu.local_comm_id = a_id;
	m.rtu.remote_comm_id = p_id;
	if (!rc)
		rc = emit(o, &active, &passive, 3, &m);

	ur_cm_mad_init(&m, UR_CM_ATTR_DREQ, tid + 1);
	m.dreq.local_comm_id = a_id;
	m.dreq.remote_comm_id = p_id;
	m.dreq.remote_qpn = 0x000456;
	if (!rc)
		rc = emit(o, &active, &passive, 4, &m);

	ur_cm_mad_init(&m, UR_CM_ATTR_DREP, tid + 1);
	m.drep.local_comm_id = p_id;
	m.drep.remote_comm_id = a_id;
	if (!rc)
		rc = emit(o, &passive, &active, 3, &m);

	/* a second REQ, to a port nobody listens on, and its REJ */
	ur_cm_mad_init(&m, UR_CM_ATTR_REQ, tid + 2);
	m.req.local_comm_id = a_id + 1;
	m.req.service_id = ur_cm_ip_service_id(UR_CM_PS_TCP, 9999);
	m.req.local_ca_guid = active.guid;
	m.req.local_qpn = 0x000124;
	m.req.starting_psn = 0x123456;
	m.req.pkey = 0xffff;
	m.req.path_mtu = 3;
	m.req.max_cm_retries = 15;
	path(&m.req.primary, &active, &passive);
	ip_hdr(m.req.private_data, &active, &passive, 0x8af2);
	if (!rc)
		rc = emit(o, &active, &passive, 5, &m);

	ur_cm_mad_init(&m, UR_CM_ATTR_REJ, tid + 2);
	m.rej.remote_comm_id = a_id + 1;
	m.rej.message_rejected = UR_CM_MSG_REQ;
	m.rej.reason = UR_CM_REJ_INVALID_SERVICE_ID;
	if (!rc)
		rc = emit(o, &passive, &active, 4, &m);

	ur_cm_mad_init(&m, UR_CM_ATTR_SIDR_REQ, tid + 3);
	m.sidr_req.request_id = 0x0badcafe;
	m.sidr_req.pkey = 0xffff;
	m.sidr_req.service_id = ur_cm_ip_service_id(UR_CM_PS_UDP, 7174);
	ip_hdr(m.sidr_req.private_data, &active, &passive, 0x8808);
	if (!rc)
		rc = emit(o, &active, &passive, 6, &m);

	ur_cm_mad_init(&m, UR_CM_ATTR_SIDR_REP, tid + 3);
	m.sidr_rep.request_id = 0x0badcafe;
	m.sidr_rep.status = UR_CM_SIDR_SUCCESS;
	m.sidr_rep.qpn = 0x000789;
	m.sidr_rep.service_id = ur_cm_ip_service_id(UR_CM_PS_UDP, 7174);
	m.sidr_rep.qkey = 0x01234567;
	if (!rc)
		rc = emit(o, &passive, &active, 5, &m);

	return rc;
}

/* Every message over IPv4, then over IPv6. */
static int write_all(const char *out)
{
	struct pcap_out o;
	int rc = pcap_create(&o, out);

	if (rc)
		return rc;
	set_family(4);
	rc = write_messages(&o);
	set_family(6);
	if (!rc)
		rc = write_messages(&o);
	if (fclose(o.f) && !rc)
		rc = -errno;
	return rc;
}

static int decode_all(const char *in)
{
	struct ur_pcap_file *f;
	struct ur_pcap_rec r;
	unsigned int frame = 0;
	int rc = ur_pcap_open(&f, in);

	if (rc)
		return rc;
	while ((rc = ur_pcap_next(f, &r)) > 0) {
		struct ur_pkt pkt;
		struct ur_cm_mad m;

		frame++;
		if (ur_frame_parse(&pkt, r.data, (uint32_t)r.len) != UR_PARSE_OK ||
		    pkt.dqpn != UR_GSI_QPN)
			continue;
		rc = ur_cm_mad_decode(&m, pkt.payload, pkt.payload_len);
		if (rc) {
			printf("frame %u error %d\n", frame, rc);
			continue;
		}
		print_mad(frame, &m);
	}
	ur_pcap_close(f);
	return rc;
}

int main(int argc, char **argv)
{
	int rc;

	if (argc != 3 || (strcmp(argv[1], "write") && strcmp(argv[1], "decode"))) {
		fprintf(stderr, "usage: cm_frames write OUT.pcap | decode IN.pcap\n");
		return 2;
	}
	rc = !strcmp(argv[1], "write") ? write_all(argv[2]) : decode_all(argv[2]);
	if (rc) {
		fprintf(stderr, "cm_frames %s %s: %s\n", argv[1], argv[2], strerror(-rc));
		return 1;
	}
	return 0;
}
