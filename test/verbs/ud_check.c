/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ud_check: an end-to-end check of UD queue pairs through the stock
 * libibverbs API only, as a server in one namespace and a client in the
 * other. Like verbs_check it knows nothing about uroce.
 *
 * The two exchange QP number and GID over TCP. The client sends datagrams
 * of several sizes (1 byte to the path MTU, with and without immediate,
 * one with a Q_Key whose high bit says "the QP's own") through an AH from
 * ibv_create_ah(); the server checks each receive (IBV_WC_GRH, byte_len =
 * 40 + payload, src_qp, the GRH holding the client's address as RoCEv2
 * places it), turns it into an address with ibv_init_ah_from_wc() (checked
 * field by field) and answers through ibv_create_ah_from_wc(): the count
 * of datagrams it has received so far, then the payload inverted. The
 * client checks every answer the same way. Then a datagram with the wrong
 * Q_Key and one longer than the MTU must not arrive: the server's count
 * says so at the end. Exit 0 means pass; a watchdog ends any hang.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_util.h"

#define QKEY 0x11111111u
#define GRH 40
#define NRECV 32
#define MSG_INFO 1
#define MSG_DONE 2

struct wire {
	uint32_t type;
	uint32_t qpn;
	uint32_t count;	 /* DONE reply: datagrams the server received */
	uint32_t errors; /* DONE reply: checks that failed on the server */
	uint8_t gid[16];
};

static const char *role = "ud_check";
static int errors;
static const char *port_arg = "18517";
static const char *dev_name;
static int gid_idx = 1;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: FAIL: ", role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	errors++;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---------- TCP ---------- */

static int xfer(int fd, struct wire *w, bool out)
{
	size_t done = 0;

	while (done < sizeof(*w)) {
		ssize_t n = out ? write(fd, (char *)w + done, sizeof(*w) - done)
				: read(fd, (char *)w + done, sizeof(*w) - done);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return -1;
		}
		done += (size_t)n;
	}
	return 0;
}

/* ---------- the device ---------- */

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf; /* NRECV receive slots of GRH + mtu, then one send slot */
	uint32_t mtu;
	uint32_t slot;
	union ibv_gid gid;
	uint32_t peer_qpn;
	union ibv_gid peer_gid;
	uint32_t received;
};

static uint8_t *send_area(struct side *s)
{
	return s->buf + (size_t)NRECV * s->slot;
}

static int side_open(struct side *s)
{
	struct ibv_qp_init_attr ia = {
	    .cap = {.max_send_wr = 16, .max_recv_wr = NRECV, .max_send_sge = 1, .max_recv_sge = 1},
	    .qp_type = IBV_QPT_UD,
	    .sq_sig_all = 1,
	};
	struct ibv_qp_attr a = {
	    .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1, .qkey = QKEY};
	struct ibv_device **list;
	struct ibv_port_attr pa;
	int n, i;

	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!dev_name || !strcmp(ibv_get_device_name(list[i]), dev_name))
			break;
	if (!list || i >= n) {
		fail("device %s not found", dev_name ? dev_name : "(any)");
		return -1;
	}
	s->ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!s->ctx || ibv_query_port(s->ctx, 1, &pa) ||
	    ibv_query_gid(s->ctx, 1, gid_idx, &s->gid)) {
		fail("open/query: %s", strerror(errno));
		return -1;
	}
	s->mtu = 128u << pa.active_mtu;
	s->slot = GRH + s->mtu + 64;
	s->buf = calloc(NRECV + 1, s->slot);
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = ibv_create_cq(s->ctx, 64, NULL, NULL, 0);
	if (!s->buf || !s->pd || !s->cq)
		return -1;
	s->mr = ibv_reg_mr(s->pd, s->buf, (size_t)(NRECV + 1) * s->slot, IBV_ACCESS_LOCAL_WRITE);
	ia.send_cq = ia.recv_cq = s->cq;
	s->qp = ibv_create_qp(s->pd, &ia);
	if (!s->mr || !s->qp) {
		fail("reg_mr/create_qp(UD): %s", strerror(errno));
		return -1;
	}
	/* UD: INIT takes the Q_Key, RTR nothing more, RTS the SQ PSN (table 91) */
	if (ibv_modify_qp(s->qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)) {
		fail("UD QP to INIT: %s", strerror(errno));
		return -1;
	}
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE)) {
		fail("UD QP to RTR: %s", strerror(errno));
		return -1;
	}
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x123;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN)) {
		fail("UD QP to RTS: %s", strerror(errno));
		return -1;
	}
	printf("%s: UD QP %#x, MTU %u, GID index %d\n", role, s->qp->qp_num, s->mtu, gid_idx);
	return 0;
}

static int post_recv(struct side *s, unsigned k)
{
	struct ibv_sge sge = {.addr = (uintptr_t)(s->buf + (size_t)k * s->slot),
			      .length = s->slot,
			      .lkey = s->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = k, .sg_list = &sge, .num_sge = 1}, *bad;

	memset(s->buf + (size_t)k * s->slot, 0xee, s->slot);
	return ibv_post_recv(s->qp, &wr, &bad);
}

static int post_send(struct side *s, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey, uint32_t len,
		     bool imm, uint32_t imm_val)
{
	struct ibv_sge sge = {.addr = (uintptr_t)send_area(s), .length = len, .lkey = s->mr->lkey};
	struct ibv_send_wr wr =
			       {
				   .wr_id = len,
				   .sg_list = &sge,
				   .num_sge = 1,
				   .opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
				   .imm_data = htonl(imm_val),
				   .wr.ud = {.ah = ah, .remote_qpn = qpn, .remote_qkey = qkey},
			       },
			   *bad;

	return ibv_post_send(s->qp, &wr, &bad);
}

/* Poll one completion of either direction within `ms`. */
static int poll_one(struct side *s, struct ibv_wc *wc, unsigned ms)
{
	uint64_t end = now_ms() + ms;

	do {
		int n = ibv_poll_cq(s->cq, 1, wc);

		if (n)
			return n < 0 ? -1 : 1;
	} while (now_ms() < end);
	return 0;
}

/* The GRH names the peer as its source and us as its destination. */
static void check_grh(struct side *s, const uint8_t *g, const char *what)
{
	bool v4 = IN6_IS_ADDR_V4MAPPED((const struct in6_addr *)s->peer_gid.raw);

	if (v4) {
		/* RoCEv2 over IPv4: 20 bytes left free, then the IPv4 header */
		for (int i = 0; i < 20; i++)
			if (g[i]) {
				fail("%s: GRH byte %d is %#x, want 0 before the IPv4 header", what,
				     i, g[i]);
				return;
			}
		if (g[20] != 0x45 || memcmp(g + 32, s->peer_gid.raw + 12, 4) ||
		    memcmp(g + 36, s->gid.raw + 12, 4))
			fail("%s: GRH does not hold the IPv4 header from the peer", what);
	} else if ((g[0] >> 4) != 6 || memcmp(g + 8, s->peer_gid.raw, 16) ||
		   memcmp(g + 24, s->gid.raw, 16)) {
		fail("%s: GRH does not hold the IPv6 header from the peer", what);
	}
}

static void check_recv(struct side *s, const struct ibv_wc *wc, uint32_t want_len, const char *what)
{
	bool v4 = IN6_IS_ADDR_V4MAPPED((const struct in6_addr *)s->peer_gid.raw);
	uint8_t want_sl = v4 ? 0xa : 0x9;

	if (wc->status != IBV_WC_SUCCESS || wc->opcode != IBV_WC_RECV) {
		fail("%s: receive completion %s, opcode %d", what, ibv_wc_status_str(wc->status),
		     wc->opcode);
		return;
	}
	if (!(wc->wc_flags & IBV_WC_GRH))
		fail("%s: IBV_WC_GRH missing", what);
	if (wc->byte_len != GRH + want_len)
		fail("%s: byte_len %u, want %u (40-byte GRH + payload)", what, wc->byte_len,
		     GRH + want_len);
	if (wc->src_qp != s->peer_qpn)
		fail("%s: src_qp %#x, want %#x", what, wc->src_qp, s->peer_qpn);
	if (wc->qp_num != s->qp->qp_num)
		fail("%s: qp_num %#x", what, wc->qp_num);
	if (wc->pkey_index != 0)
		fail("%s: pkey_index %u", what, wc->pkey_index);
	/*
	 * The packet type in sl, as mlx5 reports it (UDP bit 3, L3 type in
	 * bits 2:0: 1 IPv6, 2 IPv4): UCX's UD reads it to find the
	 * destination address in the GRH area and drops what it cannot match.
	 */
	if (wc->sl != want_sl)
		fail("%s: sl %#x, want %#x (RoCEv2 over %s)", what, wc->sl, want_sl,
		     v4 ? "IPv4" : "IPv6");
	check_grh(s, s->buf + wc->wr_id * s->slot, what);
}

/* ---------- server ---------- */

static int serve(struct side *s, int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	struct ibv_ah *pending[16] = {0};
	unsigned np = 0;

	for (;;) {
		struct ibv_wc wc;
		int r = poll_one(s, &wc, 1);

		if (r < 0)
			return -1;
		if (r && wc.opcode == IBV_WC_SEND) {
			if (wc.status != IBV_WC_SUCCESS)
				fail("echo send: %s", ibv_wc_status_str(wc.status));
			if (np)
				ibv_destroy_ah(pending[--np]);
		} else if (r) {
			const uint8_t *in = s->buf + wc.wr_id * s->slot;
			uint32_t len = wc.byte_len - GRH;
			struct ibv_ah_attr at;
			struct ibv_ah *ah;
			uint8_t *out = send_area(s);
			char what[64];

			snprintf(what, sizeof(what), "datagram %u (%u bytes)", s->received, len);
			check_recv(s, &wc, len, what);
			s->received++;
			/* the address back to the sender, from the completion and the GRH */
			if (ibv_init_ah_from_wc(s->ctx, 1, &wc, (struct ibv_grh *)in, &at)) {
				fail("%s: ibv_init_ah_from_wc: %s", what, strerror(errno));
			} else if (!at.is_global || memcmp(at.grh.dgid.raw, s->peer_gid.raw, 16) ||
				   at.grh.sgid_index != gid_idx || at.port_num != 1) {
				fail("%s: ibv_init_ah_from_wc gave global %d sgid_index %u port %u "
				     "and "
				     "another dgid",
				     what, at.is_global, at.grh.sgid_index, at.port_num);
			}
			ah = ibv_create_ah_from_wc(s->pd, &wc, (struct ibv_grh *)in, 1);
			if (!ah) {
				fail("%s: ibv_create_ah_from_wc: %s", what, strerror(errno));
				return -1;
			}
			out[0] = (uint8_t)(s->received >> 24);
			out[1] = (uint8_t)(s->received >> 16);
			out[2] = (uint8_t)(s->received >> 8);
			out[3] = (uint8_t)s->received;
			for (uint32_t i = 4; i < len; i++)
				out[i] = (uint8_t)~in[GRH + i];
			/* the high bit of the WR's Q_Key: use the QP's own */
			if (post_send(s, ah, wc.src_qp, 0x80000000u, len,
				      wc.wc_flags & IBV_WC_WITH_IMM, ntohl(wc.imm_data) + 1)) {
				fail("echo post_send: %s", strerror(errno));
				return -1;
			}
			pending[np++] = ah;
			if (post_recv(s, (unsigned)wc.wr_id))
				return -1;
		}
		if (poll(&pfd, 1, 0) > 0) {
			struct wire w;

			if (xfer(fd, &w, false) || w.type != MSG_DONE)
				return -1;
			/* let anything still on its way arrive and be counted */
			while (poll_one(s, &wc, 300) > 0)
				if (wc.opcode != IBV_WC_SEND) {
					fail("a datagram arrived after the client's last good one");
					s->received++;
				}
			w.count = s->received;
			w.errors = (uint32_t)errors;
			return xfer(fd, &w, true);
		}
	}
}

/* ---------- client ---------- */

static int exchange_one(struct side *s, struct ibv_ah *ah, uint32_t len, bool imm, uint32_t qkey,
			uint32_t n)
{
	uint8_t *out = send_area(s);
	bool got_send = false, got_recv = false;
	char what[64];
	struct ibv_wc wc;

	snprintf(what, sizeof(what), "echo of datagram %u (%u bytes%s)", n, len,
		 imm ? ", immediate" : "");
	for (uint32_t i = 0; i < len; i++)
		out[i] = (uint8_t)(n * 31 + i);
	if (post_send(s, ah, s->peer_qpn, qkey, len, imm, 1000 + n)) {
		fail("post_send: %s", strerror(errno));
		return -1;
	}
	while (!got_send || !got_recv) {
		if (poll_one(s, &wc, 5000) <= 0) {
			fail("%s: no %s within 5 s", what, got_send ? "echo" : "send completion");
			return -1;
		}
		if (wc.opcode == IBV_WC_SEND) {
			if (wc.status != IBV_WC_SUCCESS)
				fail("%s: send completion %s", what, ibv_wc_status_str(wc.status));
			got_send = true;
			continue;
		}
		const uint8_t *in = s->buf + wc.wr_id * s->slot + GRH;
		uint32_t count =
		    (uint32_t)in[0] << 24 | (uint32_t)in[1] << 16 | (uint32_t)in[2] << 8 | in[3];

		check_recv(s, &wc, len, what);
		if (count != n + 1)
			fail("%s: the server had received %u datagrams, want %u", what, count,
			     n + 1);
		for (uint32_t i = 4; i < len; i++)
			if (in[i] != (uint8_t) ~(uint8_t)(n * 31 + i)) {
				fail("%s: payload byte %u differs", what, i);
				break;
			}
		if (imm != !!(wc.wc_flags & IBV_WC_WITH_IMM) ||
		    (imm && ntohl(wc.imm_data) != 1001 + n))
			fail("%s: immediate %s", what, imm ? "wrong or missing" : "unexpected");
		post_recv(s, (unsigned)wc.wr_id);
		got_recv = true;
	}
	return 0;
}

static int client(struct side *s, int fd)
{
	struct ibv_ah_attr at = {.is_global = 1,
				 .port_num = 1,
				 .grh = {.sgid_index = (uint8_t)gid_idx, .hop_limit = 64}};
	const uint32_t sizes[] = {4, 5, 100, 1000, s->mtu - 1, s->mtu};
	struct ibv_ah *ah;
	struct ibv_wc wc;
	struct wire w;
	uint32_t n = 0;

	for (unsigned k = 0; k < NRECV; k++)
		post_recv(s, k);
	at.grh.dgid = s->peer_gid;
	ah = ibv_create_ah(s->pd, &at);
	if (!ah) {
		fail("ibv_create_ah: %s", strerror(errno));
		return -1;
	}
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++, n++)
		if (exchange_one(s, ah, sizes[i], i & 1, i == 2 ? 0x80000000u : QKEY, n))
			return -1;
	/* a foreign Q_Key and an over-long datagram: neither may arrive */
	post_send(s, ah, s->peer_qpn, QKEY + 1, 64, false, 0);
	post_send(s, ah, s->peer_qpn, QKEY, s->mtu + 1, false, 0);
	for (int k = 0; k < 2; k++) {
		if (poll_one(s, &wc, 5000) <= 0 || wc.opcode != IBV_WC_SEND) {
			fail("no send completion for the refused datagrams");
			return -1;
		}
		/* C10-93.1.1: too long for the MTU, not sent, no error */
		if (wc.status != IBV_WC_SUCCESS)
			fail("refused datagram %u bytes: send completion %s", (unsigned)wc.wr_id,
			     ibv_wc_status_str(wc.status));
	}
	usleep(200000);
	memset(&w, 0, sizeof(w));
	w.type = MSG_DONE;
	if (xfer(fd, &w, true) || xfer(fd, &w, false)) {
		fail("no report from the server");
		return -1;
	}
	if (w.count != n)
		fail("the server received %u datagrams, want %u (wrong Q_Key or over-long arrived)",
		     w.count, n);
	if (w.errors)
		fail("the server found %u errors", w.errors);
	printf("%s: %u datagrams echoed, foreign Q_Key and over-MTU datagrams refused\n", role, n);
	ibv_destroy_ah(ah);
	return 0;
}

static void on_alarm(int sig)
{
	(void)sig;
	fprintf(stderr, "%s: FAIL: watchdog: still running after 60 s\n", role);
	_exit(1);
}

int main(int argc, char **argv)
{
	const char *host = NULL;
	bool server = false;
	struct side s = {0};
	struct wire w = {.type = MSG_INFO};
	int c, fd;

	while ((c = getopt(argc, argv, "SC:p:d:g:")) != -1) {
		switch (c) {
		case 'S':
			server = true;
			break;
		case 'C':
			host = optarg;
			break;
		case 'p':
			port_arg = optarg;
			break;
		case 'd':
			dev_name = optarg;
			break;
		case 'g':
			gid_idx = atoi(optarg);
			break;
		default:
			fprintf(stderr,
				"usage: ud_check -S | -C HOST [-p PORT] [-d DEV] [-g GID_INDEX]\n");
			return 2;
		}
	}
	if (server == !!host) {
		fprintf(stderr, "usage: ud_check -S | -C HOST [-p PORT] [-d DEV] [-g GID_INDEX]\n");
		return 2;
	}
	role = server ? "ud_check server" : "ud_check client";
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGALRM, on_alarm);
	alarm(60);
	if (side_open(&s))
		return 1;
	/* UD drops what finds no receive posted: the server's receives are
	 * there before the client learns where to send */
	for (unsigned k = 0; server && k < NRECV; k++)
		if (post_recv(&s, k)) {
			fail("post_recv: %s", strerror(errno));
			return 1;
		}
	fd = server ? vtest_tcp_accept(port_arg) : vtest_tcp_connect(host, port_arg, 20);
	if (fd < 0) {
		fail("TCP %s: %s", server ? "accept" : "connect", strerror(errno));
		return 1;
	}
	w.qpn = s.qp->qp_num;
	memcpy(w.gid, s.gid.raw, 16);
	if (xfer(fd, &w, true) || xfer(fd, &w, false) || w.type != MSG_INFO) {
		fail("exchange of QP numbers");
		return 1;
	}
	s.peer_qpn = w.qpn;
	memcpy(s.peer_gid.raw, w.gid, 16);
	if (server ? serve(&s, fd) : client(&s, fd))
		errors++;
	close(fd);
	ibv_destroy_qp(s.qp);
	ibv_dereg_mr(s.mr);
	ibv_destroy_cq(s.cq);
	ibv_dealloc_pd(s.pd);
	ibv_close_device(s.ctx);
	free(s.buf);
	if (errors)
		return 1;
	printf("%s: pass\n", role);
	return 0;
}
