/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Seed corpora for the fuzz targets, from pcap files (the Soft-RoCE captures
 * in test/data/rxe and captures `uroce-lab sim --pcap` writes at test time):
 *
 *   fuzz_seeds FRAME_DIR RX_DIR FILE.pcap...
 *
 * FRAME_DIR gets one file per distinct kind of frame (opcode, IP version,
 * VLAN, size class), as fuzz_frame takes it. RX_DIR gets fuzz_rx inputs
 * (format in fuzz_rx.c): for each QP of a capture, windows of the frames it
 * received, to be re-encapsulated for and aimed at one of fuzz_rx's RC QPs in
 * RTS (index 0, MTU 1024, or index 1, MTU 4096, whichever fits), with PSNs
 * rebased onto its initial PSNs; the same requests as UC and UD packets for
 * its UC and UD QPs; plus a few inputs of control operations. Nothing is written twice,
 * so the corpus stays small; libFuzzer grows it from there.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "pcap_file.h"

#define MAX_SEED 16000	 /* bytes per fuzz_rx seed: fuzz_rx runs with -max_len=16384 */
#define MAX_WINDOWS 4	 /* fuzz_rx seeds per receiving QP of a capture */
#define MAX_STREAMS 32	 /* receiving QPs per capture */
#define WINDOW_FRAMES 24 /* frames per seed, at least (up to a message boundary) */
#define REC_HDR 6

/* fuzz_rx record bits (see fuzz_rx.c) */
#define F_REENCAP 0x04
#define F_REBASE 0x08
#define F_KEYS 0x10
#define F_POLL 0x40
#define F_TX 0x80
#define QP_RC_MTU1024 0
#define QP_RC_MTU4096 1
#define QP_UC_RTS 9
#define QP_UD_RTS 17
#define QP_XT_RTS 25 /* an XRC target of domain 1 */
#define XRC_SRQN 2   /* fuzz_rx's XRC SRQ in that domain */

static const char *frame_dir, *rx_dir;
static unsigned nframe, nrx;

static int write_file(const char *dir, const char *name, unsigned n, const uint8_t *d, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s-%u", dir, name, n);
	f = fopen(path, "wb");
	if (!f || fwrite(d, 1, len, f) != len) {
		fprintf(stderr, "fuzz_seeds: cannot write %s: %s\n", path, strerror(errno));
		if (f)
			fclose(f);
		return -1;
	}
	return fclose(f) ? -1 : 0;
}

static void rec_put(uint8_t *out, size_t *len, uint8_t flags, uint8_t qpsel, uint8_t td,
		    uint8_t aux, const uint8_t *frame, uint16_t flen)
{
	uint8_t *r = out + *len;

	r[0] = flags;
	r[1] = qpsel;
	r[2] = td;
	r[3] = aux;
	r[4] = (uint8_t)flen;
	r[5] = (uint8_t)(flen >> 8);
	memcpy(r + REC_HDR, frame, flen);
	*len += REC_HDR + flen;
}

/* One bit per (opcode, IPv6, VLAN, size class) already written to FRAME_DIR. */
static uint8_t seen[256][2][2][4];

static int size_class(uint32_t len)
{
	return len <= 128 ? 0 : len <= 600 ? 1 : len <= 1200 ? 2 : 3;
}

/* Write a window, aimed at the QP whose MTU fits the capture's largest payload. */
static int emit_window(const char *name, uint8_t *seed, size_t slen, uint32_t max_payload)
{
	uint8_t q = max_payload > 1024 ? QP_RC_MTU4096 : QP_RC_MTU1024;

	for (size_t o = 1; o < slen;) {
		seed[o + 1] = q;
		o += REC_HDR + (seed[o + 4] | (size_t)seed[o + 5] << 8);
	}
	return write_file(rx_dir, name, nrx++, seed, slen);
}

struct frame {
	const uint8_t *data;
	uint32_t len;
	uint32_t dqpn; /* BTH destination QP, or the one an SR control message names */
	uint32_t payload;
	bool msg_start;	  /* a request that starts a message: a window may begin here */
	bool sr;	  /* selective repeat: a control datagram or the BTH SR bit */
	bool ctrl;	  /* an SR negotiation datagram */
	uint32_t bth_off; /* where the BTH starts */
};

/*
 * fuzz_rx seeds from the frames one QP of the capture received (all with the
 * same destination QP): requests of its peer and responses to its own, which
 * is what fuzz_rx's QP sees once they are steered to it. Windows start at
 * message boundaries, so the PSN rebased onto the expected one opens a message.
 */
static int do_stream(const char *name, const struct frame *fr, unsigned n, uint32_t dqpn,
		     uint8_t *seed)
{
	unsigned windows = 0, nwin = 0, in_window = 0;
	uint32_t max_payload = 0;
	size_t slen = 1;
	int hello = -1;

	seed[0] = 0;
	for (unsigned i = 0; i < n; i++) {
		if (fr[i].dqpn != dqpn)
			continue;
		max_payload = fr[i].payload > max_payload ? fr[i].payload : max_payload;
		if (fr[i].sr)
			seed[0] = 1; /* fuzz_rx's device runs selective repeat */
		if (hello < 0 && fr[i].ctrl)
			hello = (int)i;
	}
	for (unsigned i = 0; i < n && windows < MAX_WINDOWS; i++) {
		if (fr[i].dqpn != dqpn)
			continue;
		if ((in_window >= WINDOW_FRAMES && fr[i].msg_start) ||
		    slen + REC_HDR + fr[i].len > MAX_SEED) {
			/* windows 0, 1, 2, 4, 8, 16...: spread over the stream */
			if (nwin < 3 || !(nwin & (nwin - 1))) {
				if (emit_window(name, seed, slen, max_payload))
					return -1;
				windows++;
			}
			nwin++;
			slen = 1;
			in_window = 0;
		}
		if (in_window == 0 && !fr[i].msg_start)
			continue;
		/* every window negotiates selective repeat first, if the stream did */
		if (in_window == 0 && hello >= 0 && (unsigned)hello != i) {
			rec_put(seed, &slen, F_REENCAP | F_POLL | F_TX, 0, 0x23, 0, fr[hello].data,
				(uint16_t)fr[hello].len);
			in_window++;
		}
		if (slen + REC_HDR + fr[i].len > MAX_SEED)
			continue;
		rec_put(seed, &slen, F_REENCAP | F_REBASE | F_KEYS | F_POLL | F_TX, 0,
			0x23 /* 32 ns */, 0, fr[i].data, (uint16_t)fr[i].len);
		in_window++;
	}
	if (in_window && windows < MAX_WINDOWS && (nwin < 3 || !(nwin & (nwin - 1))))
		return emit_window(name, seed, slen, max_payload);
	return 0;
}

/*
 * The same requests over the other transports: SENDs and WRITEs as UC
 * opcodes aimed at fuzz_rx's UC QP in RTS, SEND ONLYs as UD SEND ONLYs (a
 * DETH inserted) aimed at its UD QP in RTS, every request as XRC (the
 * opcode in the 0xa0 range, an XRCETH naming fuzz_rx's XRC SRQ inserted
 * after the BTH, annex A14) aimed at its XRC target in RTS. fuzz_rx fixes
 * the lengths.
 */
static int do_variants(const char *name, const struct frame *fr, unsigned n, uint32_t dqpn,
		       uint8_t *seed)
{
	static uint8_t buf[65536 + 8], xrc[MAX_SEED];
	size_t slen[2] = {1, 1}, xlen = 1;
	uint8_t *ud = seed + MAX_SEED / 2;
	unsigned nuc = 0, nud = 0, nxrc = 0;

	seed[0] = ud[0] = xrc[0] = 0;
	for (unsigned i = 0;
	     i < n && (nuc < WINDOW_FRAMES || nud < WINDOW_FRAMES || nxrc < WINDOW_FRAMES); i++) {
		const uint8_t *f = fr[i].data;
		uint32_t b = fr[i].bth_off, len = fr[i].len;
		uint8_t op;

		if (fr[i].dqpn != dqpn || fr[i].ctrl || fr[i].sr || len + 8 > sizeof(buf))
			continue;
		op = f[b];
		if (op <= UR_OP_RC_WRITE_ONLY_IMM && nuc < WINDOW_FRAMES &&
		    slen[0] + REC_HDR + len <= MAX_SEED / 2) {
			memcpy(buf, f, len);
			buf[b] = op | 0x20; /* the UC opcode of the same operation (table 38) */
			rec_put(seed, &slen[0], F_REENCAP | F_REBASE | F_KEYS | F_POLL | F_TX,
				QP_UC_RTS, 0x23, 0, buf, (uint16_t)len);
			nuc++;
		}
		if (op <= UR_OP_RC_SEND_ONLY_INV &&
		    ur_opcode_get(op | 0xa0)->hdrs & UR_HDR_XRCETH && nxrc < WINDOW_FRAMES &&
		    xlen + REC_HDR + len + 4 <= sizeof(xrc)) {
			memcpy(buf, f, b + 12);
			buf[b] = op | 0xa0; /* the XRC opcode of the same operation */
			ur_put_be32(buf + b + 12, XRC_SRQN);
			memcpy(buf + b + 16, f + b + 12, len - b - 12);
			rec_put(xrc, &xlen, F_REENCAP | F_REBASE | F_KEYS | F_POLL | F_TX,
				QP_XT_RTS, 0x23, 0, buf, (uint16_t)(len + 4));
			nxrc++;
		}
		if ((op == UR_OP_RC_SEND_ONLY || op == UR_OP_RC_SEND_ONLY_IMM) &&
		    nud < WINDOW_FRAMES && fr[i].payload <= 1024 &&
		    slen[1] + REC_HDR + len + 8 <= MAX_SEED / 2) {
			memcpy(buf, f, b + 12);
			buf[b] =
			    op == UR_OP_RC_SEND_ONLY ? UR_OP_UD_SEND_ONLY : UR_OP_UD_SEND_ONLY_IMM;
			/* DETH: fuzz_rx's Q_Key, a source QP */
			ur_put_be32(buf + b + 12, 0x11111111);
			ur_put_be32(buf + b + 16, 0x000100);
			memcpy(buf + b + 20, f + b + 12, len - b - 12);
			rec_put(ud, &slen[1], F_REENCAP | F_POLL | F_TX, QP_UD_RTS, 0x23, 0, buf,
				(uint16_t)(len + 8));
			nud++;
		}
	}
	if (nuc && write_file(rx_dir, name, nrx++, seed, slen[0]))
		return -1;
	if (nud && write_file(rx_dir, name, nrx++, ud, slen[1]))
		return -1;
	if (nxrc && write_file(rx_dir, name, nrx++, xrc, xlen))
		return -1;
	return 0;
}

static int do_pcap(const char *path)
{
	struct ur_pcap_file *pf;
	struct ur_pcap_rec rec;
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	char name[256];
	struct frame *fr = NULL;
	uint32_t streams[MAX_STREAMS];
	unsigned n = 0, cap = 0, nstreams = 0;
	uint8_t *seed = NULL;
	int err, r, ret = -1;

	snprintf(name, sizeof(name), "%.*s", (int)strcspn(base, "."), base);
	err = ur_pcap_open(&pf, path);
	if (err) {
		fprintf(stderr, "fuzz_seeds: %s: %s\n", path, strerror(-err));
		return -1;
	}
	while ((r = ur_pcap_next(pf, &rec)) == 1) {
		struct ur_pkt pkt;
		enum ur_parse_err e;
		uint8_t kind[4];

		if (rec.len != rec.orig_len || rec.len > 0xffff)
			continue;
		e = ur_frame_parse(&pkt, rec.data, (uint32_t)rec.len);
		if (e != UR_PARSE_OK && e != UR_PARSE_CONTROL)
			continue;
		kind[0] = e == UR_PARSE_OK ? pkt.opcode : 0xff;
		kind[1] = pkt.ipv6;
		kind[2] = rec.len > 14 && rec.data[12] == 0x81 && rec.data[13] == 0x00;
		kind[3] = (uint8_t)size_class((uint32_t)rec.len);
		if (!seen[kind[0]][kind[1]][kind[2]][kind[3]]) {
			seen[kind[0]][kind[1]][kind[2]][kind[3]] = 1;
			if (write_file(frame_dir, name, nframe++, rec.data, rec.len))
				goto out;
		}
		if (n == cap) {
			struct frame *nf = realloc(fr, (cap = cap ? 2 * cap : 256) * sizeof(*fr));

			if (!nf)
				goto out;
			fr = nf;
		}
		fr[n].data = rec.data;
		fr[n].len = (uint32_t)rec.len;
		if (e == UR_PARSE_CONTROL) {
			if (pkt.payload_len < sizeof(struct ur_sr_ctrl))
				continue;
			fr[n].dqpn =
			    ur_get_be32(((const struct ur_sr_ctrl *)pkt.payload)->dqpn) & 0xffffff;
			fr[n].payload = 0;
			fr[n].msg_start = true;
			fr[n].sr = fr[n].ctrl = true;
		} else {
			fr[n].dqpn = pkt.dqpn;
			fr[n].payload = pkt.payload_len;
			fr[n].sr = ur_bth_sr(pkt.bth);
			fr[n].ctrl = false;
			fr[n].bth_off = (uint32_t)((const uint8_t *)pkt.bth - rec.data);
			fr[n].msg_start =
			    pkt.op->kind != UR_KIND_CNP && (pkt.op->pos & UR_POS_FIRST) &&
			    (pkt.op->kind == UR_KIND_SEND || pkt.op->kind == UR_KIND_WRITE ||
			     pkt.op->kind == UR_KIND_READ_REQ || pkt.op->kind == UR_KIND_ATOMIC);
		}
		if (nstreams < MAX_STREAMS) {
			unsigned k = 0;

			while (k < nstreams && streams[k] != fr[n].dqpn)
				k++;
			if (k == nstreams)
				streams[nstreams++] = fr[n].dqpn;
		}
		n++;
	}
	if (r < 0)
		fprintf(stderr, "fuzz_seeds: %s: truncated record, stopping there\n", path);
	seed = malloc(MAX_SEED);
	if (!seed)
		goto out;
	for (unsigned k = 0; k < nstreams; k++)
		if (do_stream(name, fr, n, streams[k], seed) ||
		    (k < 2 && do_variants(name, fr, n, streams[k], seed)))
			goto out;
	printf("fuzz_seeds: %s: %u RoCE frames, %u receiving QPs\n", path, n, nstreams);
	ret = 0;
out:
	free(seed);
	free(fr);
	ur_pcap_close(pf);
	return ret;
}

/* Control operations alone: posts, drains, deregistration, timers firing. */
static int synthetic(void)
{
	static const uint8_t ops[][REC_HDR] = {
	    /* flags, qpsel, tdelta, aux, len */
	    {0x80, 0, 0, 0, 0, 0}, /* post a receive on QP 0, transmit */
	    {0x81, 0, 0, 2, 0, 0}, /* post a SEND on QP 0, transmit */
	    {0x81, 0, 0, 4, 0, 0}, /* post a READ */
	    {0x81, 9, 0, 1, 0, 0}, /* post a WRITE with immediate on the UC QP */
	    {0xc6, 0, 0, 0, 0, 0}, /* a second later: retransmission timers fire */
	    {0xc6, 0, 0, 0, 0, 0}, {0x05, 0, 0, 0, 0, 0}, /* RTS -> SQD */
	    {0x45, 0, 0, 0, 0, 0},			  /* SQD -> RTS */
	    {0x07, 0, 0, 3, 0, 0},			  /* arm the CQs */
	    {0x04, 0, 0, 0, 0, 0},			  /* deregister region 0 */
	    {0xc6, 0, 0, 0, 0, 0}, {0x03, 2, 0, 0, 0, 0}, /* QP 2 to ERR */
	    {0xc2, 0, 0, 0, 0, 0},			  /* drain the CQs */
	};
	uint8_t buf[1 + sizeof(ops)];

	buf[0] = 0;
	memcpy(buf + 1, ops, sizeof(ops));
	if (write_file(rx_dir, "control", 0, buf, sizeof(buf)))
		return -1;
	buf[0] = 0x0f; /* the other device configuration bits */
	return write_file(rx_dir, "control", 1, buf, sizeof(buf));
}

/*
 * Hostile selective acknowledgements for the requesters of QP 0 (PSNs from
 * 0xffffe8, about a dozen outstanding) and QP 3 (MTU 256: from 0xffffee,
 * some 27 outstanding, across 2^24), both agreed SR at setup (device
 * configuration 0x11). Each ACK: PSN and SACK base as offsets from the QP's
 * first PSN, a bitmap pattern, the AETH syndrome.
 */
#define HOLD 0x80
#define TX2 0x40
struct sack_rec {
	int32_t ack;  /* PSN of the ACK, from the first one sent */
	int32_t base; /* SACK base, likewise */
	uint8_t pat;  /* 0 none, 1 bits 0-3, 2 all ones, 3 every other, 4 bits past the sent,
		       * 5 bit 255, 6 bit 0; | HOLD: neither poll nor transmit after it,
		       * | TX2: transmit with 2 buffers only */
	uint8_t syn;
};

static void sack_frame(uint8_t *f, unsigned qp, const struct sack_rec *r)
{
	uint32_t first = (0xffffe8u + 2 * qp) & 0xffffff;
	uint32_t psn = (first + (uint32_t)r->ack) & 0xffffff;
	uint32_t base = (first + (uint32_t)r->base) & 0xffffff;
	uint8_t *bm = f + 20;

	memset(f, 0, 56);
	f[0] = 0x11; /* RC ACKNOWLEDGE */
	ur_put_be16(f + 2, 0xffff);
	f[8] = 0x40; /* the SR bit: a SACK follows the AETH */
	ur_put_be24(f + 9, psn);
	f[12] = r->syn;
	ur_put_be32(f + 16, base);
	for (unsigned i = 0; i < 256; i++) {
		unsigned pat = r->pat & ~(HOLD | TX2);
		bool on = pat == 1   ? i < 4
			  : pat == 2 ? true
			  : pat == 3 ? i % 2 == 0
			  : pat == 4 ? i >= 30 && i < 40
			  : pat == 5 ? i == 255
			  : pat == 6 ? i == 0
				     : false;

		if (on)
			bm[i / 8] |= (uint8_t)(1u << (i % 8));
	}
}

static int sack_seeds(void)
{
	static const struct sack_rec scripts[][6] = {
	    /* the first PSN missing, the next four delivered */
	    {{-1, 0, 1, 0x1f}, {-1, 0, 1, 0x1f}, {0}},
	    /* all 256 bits, most naming PSNs never sent */
	    {{0, 1, 2, 0x1f}, {2, 3, 2, 0x1f}, {0}},
	    /* every other PSN, then a cumulative ACK past them, then the old SACK again */
	    {{-1, 0, 3, 0x1f}, {4, 5, 3, 0x1f}, {-1, 0, 3, 0x1f}, {0}},
	    /* bits only beyond the next PSN to send, then the last bit of the map */
	    {{-1, 0, 4, 0x1f}, {-1, 0, 5, 0x1f}, {0}},
	    /* a base far away (half the PSN space), and one wrapped below the first PSN */
	    {{-1, 0x800000, 2, 0x1f}, {-1, -5, 1, 0x1f}, {-1, 0, 1, 0x1f}, {0}},
	    /* a SACK, then a sequence NAK rewinding to what it showed missing, then SACKs again */
	    {{-1, 0, 3, 0x1f}, {0, 0, 0, 0x60}, {-1, 0, 2, 0x1f}, {1, 2, 4, 0x1f}, {0}},
	    /* a go-back-N rewind below the highest PSN SACKed, then a SACK before
	     * anything is sent again (792e593: PSNs queued beyond the next to send) */
	    {{-1, 0, 1, 0x1f}, {0, 0, HOLD, 0x60}, {-1, 0, 1 | HOLD, 0x1f}, {0}},
	    {{1, 2, 1, 0x1f}, {2, 2, HOLD, 0x60}, {1, 2, 3 | HOLD, 0x1f}, {1, 2, 1, 0x1f}, {0}},
	    /* ...and with two packets resent after the rewind, a SACK of the second */
	    {{-1, 0, 1, 0x1f}, {0, 0, TX2, 0x60}, {-1, 0, 6 | HOLD, 0x1f}, {0}},
	    /* an RNR NAK in the middle */
	    {{-1, 0, 1, 0x1f}, {0, 0, 0, 0x20}, {0, 1, 2, 0x1f}, {0}},
	};
	uint8_t seed[1 + 24 * (REC_HDR + 56)], f[56];

	for (unsigned qp = 0; qp < 4; qp += 3) {
		for (unsigned k = 0; k < sizeof(scripts) / sizeof(scripts[0]); k++) {
			size_t len = 1;

			seed[0] = 0x11;
			for (unsigned j = 0; j < 6 && scripts[k][j].syn; j++) {
				sack_frame(f, qp, &scripts[k][j]);
				/* rebuilt for the QP's path, then poll and transmit */
				uint8_t pat = scripts[k][j].pat;

				rec_put(seed, &len,
					F_REENCAP | (pat & HOLD	 ? 0
						     : pat & TX2 ? F_TX
								 : F_POLL | F_TX),
					(uint8_t)qp, 0x21, pat & TX2 ? 2 : 0, f, 56);
			}
			/* a second later: the RTO and the ACK timeout fire, SACK once more */
			rec_put(seed, &len, 0xc6, (uint8_t)qp, 0, 0, NULL, 0);
			sack_frame(f, qp, &scripts[k][0]);
			rec_put(seed, &len, F_REENCAP | F_POLL | F_TX, (uint8_t)qp, 0x21, 0, f, 56);
			if (write_file(rx_dir, "sack", nrx++, seed, len))
				return -1;
			seed[0] = 0x13; /* and with 8 packets in flight, AckReq every 2 */
			if (write_file(rx_dir, "sack", nrx++, seed, len))
				return -1;
		}
	}
	return 0;
}

/*
 * Memory windows at fuzz_rx's RC QP 0, which bound its window over region
 * 0 (aux bit 7 points keys at it): a WRITE through the window, a SEND with
 * Invalidate naming it (one packet, or a FIRST and a LAST with the IETH),
 * then a WRITE and a READ through the stale key, refused. Once with the
 * window's key, once with region 0's (which no SEND may invalidate), and
 * on a device that runs selective repeat.
 */
static size_t mw_request(uint8_t *f, uint8_t opcode, uint32_t psn, uint32_t va, uint32_t len,
			 uint32_t payload)
{
	const struct ur_opcode_info *op = ur_opcode_get(opcode);
	size_t n = op->hdr_len + payload + 4; /* + ICRC, computed by fuzz_rx */

	memset(f, 0, n);
	f[0] = opcode;
	ur_put_be16(f + 2, 0xffff);
	f[8] = 0x80; /* AckReq */
	ur_put_be24(f + 9, psn);
	if (op->hdrs & UR_HDR_RETH) {
		ur_put_be32(f + op->off_reth + 4, va);
		ur_put_be32(f + op->off_reth + 12, len);
	}
	for (uint32_t i = 0; i < payload; i++)
		f[op->hdr_len + i] = (uint8_t)(0xa0 + i);
	return n;
}

static int mw_seeds(void)
{
	static const struct {
		uint8_t opcode;
		uint32_t va, len, payload;
	} script[][5] = {
	    {{0x0a, 0x40, 16, 16}, {0x17, 0, 0, 8}, {0x0a, 0x80, 16, 16}, {0x0c, 0x40, 64, 0}, {0}},
	    {{0x0a, 0x3ff8, 16, 16}, {0x00, 0, 0, 1024}, {0x16, 0, 0, 8}, {0x0a, 0, 8, 8}, {0}},
	};
	uint8_t seed[1 + 8 * (REC_HDR + 1100)], f[1100];

	for (unsigned k = 0; k < sizeof(script) / sizeof(script[0]); k++)
		for (unsigned v = 0; v < 4; v++) {
			size_t len = 1;
			uint8_t aux = v & 1 ? 0x00 : 0x80; /* the window's key, or region 0's */

			seed[0] = v & 2 ? 0x11 : 0;
			/* two receives on QP 0 for the SENDs */
			rec_put(seed, &len, 0x80, QP_RC_MTU1024, 0, 16, NULL, 0);
			rec_put(seed, &len, 0x80, QP_RC_MTU1024, 0, 16, NULL, 0);
			for (unsigned j = 0; j < 5 && script[k][j].opcode | script[k][j].len; j++) {
				size_t n = mw_request(f, script[k][j].opcode, j, script[k][j].va,
						      script[k][j].len, script[k][j].payload);

				rec_put(seed, &len, F_REENCAP | F_REBASE | F_KEYS | F_POLL | F_TX,
					QP_RC_MTU1024, 0x21, aux, f, (uint16_t)n);
			}
			rec_put(seed, &len, 0xc2, 0, 0, 0, NULL, 0); /* drain the CQs */
			if (write_file(rx_dir, "mw", nrx++, seed, len))
				return -1;
		}
	return 0;
}

int main(int argc, char **argv)
{
	int fail = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: fuzz_seeds FRAME_DIR RX_DIR FILE.pcap...\n");
		return 2;
	}
	frame_dir = argv[1];
	rx_dir = argv[2];
	for (int i = 3; i < argc; i++)
		fail |= do_pcap(argv[i]) != 0;
	fail |= synthetic() != 0;
	fail |= sack_seeds() != 0;
	fail |= mw_seeds() != 0;
	printf("fuzz_seeds: %u fuzz_frame seeds, %u fuzz_rx seeds\n", nframe, nrx);
	return fail;
}
