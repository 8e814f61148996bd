/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * soak: a long mixed-traffic run of an RC verbs device through the stock
 * libibverbs API only, with every byte checked. A server in one host (or
 * namespace) and a client in the other; setup over TCP.
 *
 * The client keeps every QP busy with a random mix of RDMA WRITE, WRITE
 * WITH IMMEDIATE, READ, SEND (with and without immediate), FETCH_ADD and
 * CMP_SWAP of random sizes (zero included), at most one operation per
 * buffer at a time:
 *   - each QP owns NSLOT remote slots; a WRITE puts a seeded pattern in a
 *     slot, and the slot is not written again before a READ has brought the
 *     whole of it back and every byte matched (so every written byte is
 *     checked once it has landed);
 *   - SENDs carry a header (QP, sequence number, seed, length) and a seeded
 *     pattern; the server checks every byte, the length, the immediate and
 *     that the sequence numbers come exactly once and in order; WRITE WITH
 *     IMMEDIATE numbers its immediates and the server checks them too;
 *   - atomics work on a per-QP counter whose value the client tracks: every
 *     original value returned must be the expected one.
 * Any completion that is not a success, any byte, length or order that is
 * wrong, is an error; the exit status is 0 only without any.
 *
 * --expect-fail: the peer will die (or the link go down for longer than
 * the QPs' timeout): every QP must end with IBV_WC_RETRY_EXC_ERR followed
 * only by IBV_WC_WR_FLUSH_ERR, every WR posted must complete, and the first
 * error must come within (retry + 1) x 4.096 us x 2^timeout (+ margin) of
 * the moment in --stamp-file (seconds since boot, as /proc/uptime). Then
 * --reconnect S runs S more seconds of clean soak on new QPs against a
 * (re)started server.
 *
 *   soak --server [--port P] [--forever] [-d DEV] [-g GID]
 *   soak --client HOST [--port P] [--qps N] [--seconds S] [--max-size B]
 *        [--timeout T] [--retry R] [--seed S] [--report S] [--ops LIST]
 *        [--depth WRS_PER_QP]
 *        [--expect-fail --stamp-file F [--margin-ms M] [--reconnect S]]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define NSEC 1000000000ull
#define MSEC 1000000ull
#define MAGIC 0x534f414bu /* "SOAK" */
#define MAX_QPS 256
#define NSLOT 8
#define NSEND 4
#define SQ_DEPTH 32
#define RQ_DEPTH 32
#define SEND_HDR 32
#define COUNTER_INIT 0x1000000000ull
#define UR_MINU(a, b) ((a) < (b) ? (a) : (b))

enum op { OP_WRITE, OP_WRITE_IMM, OP_READ, OP_SEND, OP_SEND_IMM, OP_FADD, OP_CSWAP, OP_N };
static const char *const op_names[OP_N] = {"write", "write_imm", "read", "send", "send_imm",
					   "fetch_add", "cmp_swap"};
static unsigned op_weight[OP_N] = {20, 10, 25, 15, 10, 10, 10};

struct opts {
	bool server, forever, expect_fail;
	const char *host, *port, *dev, *stamp_file;
	int gid_idx, nqps, seconds, timeout, retry, report, margin_ms, reconnect, depth;
	uint32_t max_size;
	uint64_t seed;
};

static struct opts opt = {
	.port = "18700",
	.gid_idx = 1,
	.nqps = 8,
	.seconds = 10,
	.timeout = 14,
	.retry = 7,
	.report = 10,
	.margin_ms = 300,
	.depth = SQ_DEPTH,
	.max_size = 65536,
	.seed = 1,
};

static const char *role = "soak";

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC + (uint64_t)ts.tv_nsec;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	printf("%s: ", role);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* ---- patterns and randomness ---- */

static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static void fill(uint8_t *p, uint32_t len, uint64_t seed)
{
	uint64_t x = mix(seed);

	for (uint32_t i = 0; i < len; i++) {
		if (i % 8 == 0)
			x = mix(x + i);
		p[i] = (uint8_t)(x >> (8 * (i % 8)));
	}
}

/* -1 when it matches, else the first byte that does not */
static long check(const uint8_t *p, uint32_t len, uint64_t seed)
{
	uint64_t x = mix(seed);

	for (uint32_t i = 0; i < len; i++) {
		if (i % 8 == 0)
			x = mix(x + i);
		if (p[i] != (uint8_t)(x >> (8 * (i % 8))))
			return i;
	}
	return -1;
}

static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

/* Sizes: many small, some around the MTU, some large, now and then zero. */
static uint32_t rnd_size(uint32_t max)
{
	unsigned r = (unsigned)(rnd() % 100);
	uint32_t len;

	if (r < 5)
		return 0;
	if (r < 45)
		len = 1 + (uint32_t)(rnd() % 256);
	else if (r < 75)
		len = 256 + (uint32_t)(rnd() % 8192);
	else
		len = (uint32_t)(rnd() % ((uint64_t)max + 1));
	return len > max ? max : len;
}

/* ---- TCP setup channel ---- */

static int io_all(int fd, void *buf, size_t len, bool wr)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = wr ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int tcp_connect(const char *host, const char *port, int wait_s)
{
	uint64_t end = now_ns() + (uint64_t)wait_s * NSEC;
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;

	for (;;) {
		if (!getaddrinfo(host, port, &hints, &res)) {
			int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

			if (fd >= 0 && !connect(fd, res->ai_addr, res->ai_addrlen)) {
				int one = 1;

				freeaddrinfo(res);
				setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
				return fd;
			}
			if (fd >= 0)
				close(fd);
			freeaddrinfo(res);
		}
		if (now_ns() > end)
			return -1;
		usleep(100000);
	}
}

static int tcp_listen(const char *port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sa.sin_port = htons((uint16_t)atoi(port));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 4)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* ---- messages ---- */

struct hello {
	uint32_t magic, nqps, slot_size, send_size;
	uint64_t seed;
};

struct qp_wire {
	uint32_t qpn, psn;
	uint8_t gid[16];
	uint64_t addr;     /* server: the QP's remote region (slots, then the counter) */
	uint32_t rkey, len;
};

struct done_msg {
	uint32_t magic, nqps;
	uint64_t sends[MAX_QPS], imms[MAX_QPS];
};

struct report_msg {
	uint32_t magic;
	uint32_t missing; /* posted SENDs and immediates that never arrived */
	uint64_t recvs, recv_bytes, imms, bad, errors;
};

/* ---- the device ---- */

struct dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	union ibv_gid gid;
};

static int dev_open(struct dev *d, int cqe)
{
	struct ibv_device **list = ibv_get_device_list(NULL);

	memset(d, 0, sizeof(*d));
	for (int i = 0; list && list[i]; i++) {
		if (opt.dev && strcmp(ibv_get_device_name(list[i]), opt.dev))
			continue;
		d->ctx = ibv_open_device(list[i]);
		break;
	}
	if (list)
		ibv_free_device_list(list);
	if (!d->ctx || ibv_query_gid(d->ctx, 1, opt.gid_idx, &d->gid))
		return -1;
	d->pd = ibv_alloc_pd(d->ctx);
	d->cq = d->pd ? ibv_create_cq(d->ctx, cqe, NULL, NULL, 0) : NULL;
	return d->cq ? 0 : -1;
}

static void dev_close(struct dev *d)
{
	if (d->cq)
		ibv_destroy_cq(d->cq);
	if (d->pd)
		ibv_dealloc_pd(d->pd);
	if (d->ctx)
		ibv_close_device(d->ctx);
}

static struct ibv_qp *qp_create(struct dev *d)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = d->cq,
		.recv_cq = d->cq,
		.qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = SQ_DEPTH, .max_recv_wr = RQ_DEPTH, .max_send_sge = 1,
			.max_recv_sge = 1},
	};

	return ibv_create_qp(d->pd, &ia);
}

static int qp_connect(struct dev *d, struct ibv_qp *qp, uint32_t my_psn, const struct qp_wire *r)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
	};
	struct ibv_port_attr pa;

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					  IBV_QP_ACCESS_FLAGS) ||
	    ibv_query_port(d->ctx, 1, &pa))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = pa.active_mtu;
	a.dest_qp_num = r->qpn;
	a.rq_psn = r->psn;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	memcpy(a.ah_attr.grh.dgid.raw, r->gid, 16);
	a.ah_attr.grh.sgid_index = (uint8_t)opt.gid_idx;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					  IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = (uint8_t)opt.timeout;
	a.retry_cnt = (uint8_t)opt.retry;
	a.rnr_retry = 7;
	a.sq_psn = my_psn;
	a.max_rd_atomic = 16;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					 IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* ---- server ---- */

struct sside {
	struct ibv_qp *qp;
	uint8_t *region;   /* slots, then the counter */
	struct ibv_mr *mr;
	uint8_t *rbuf;     /* RQ_DEPTH receive buffers */
	uint64_t next_seq, next_imm;
};

static int post_recv(struct sside *s, uint32_t send_size, unsigned k)
{
	struct ibv_sge sge = {(uintptr_t)(s->rbuf + (size_t)k * send_size), send_size, s->mr->lkey};
	struct ibv_recv_wr w = {.wr_id = k, .sg_list = &sge, .num_sge = 1}, *bad;

	return ibv_post_recv(s->qp, &w, &bad);
}

static int server_session(int fd)
{
	struct hello h;
	struct dev d;
	struct sside *ss;
	struct qp_wire *w;
	struct report_msg rep = {.magic = MAGIC};
	struct done_msg done;
	bool got_done = false;
	uint64_t done_deadline = 0, t0;
	size_t region_len;
	uint32_t ready = MAGIC;

	if (io_all(fd, &h, sizeof(h), false) || h.magic != MAGIC || !h.nqps || h.nqps > MAX_QPS) {
		say("bad hello");
		return -1;
	}
	region_len = (size_t)NSLOT * h.slot_size + 64;
	if (dev_open(&d, (int)(h.nqps * RQ_DEPTH * 2 + 16))) {
		say("cannot open the device");
		return -1;
	}
	ss = calloc(h.nqps, sizeof(*ss));
	w = calloc(h.nqps, sizeof(*w));
	for (uint32_t q = 0; q < h.nqps; q++) {
		size_t total = region_len + (size_t)RQ_DEPTH * h.send_size;

		ss[q].qp = qp_create(&d);
		ss[q].region = aligned_alloc(4096, (total + 4095) & ~4095ul);
		if (!ss[q].qp || !ss[q].region) {
			say("QP %u: %s", q, strerror(errno));
			return -1;
		}
		memset(ss[q].region, 0, total);
		memcpy(ss[q].region + (size_t)NSLOT * h.slot_size, &(uint64_t){COUNTER_INIT}, 8);
		ss[q].rbuf = ss[q].region + region_len;
		ss[q].mr = ibv_reg_mr(d.pd, ss[q].region, total,
				      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
		if (!ss[q].mr) {
			say("reg_mr: %s", strerror(errno));
			return -1;
		}
		w[q].qpn = ss[q].qp->qp_num;
		w[q].psn = (uint32_t)(mix(h.seed + q) & 0xffffff);
		memcpy(w[q].gid, d.gid.raw, 16);
		w[q].addr = (uintptr_t)ss[q].region;
		w[q].rkey = ss[q].mr->rkey;
		w[q].len = (uint32_t)region_len;
	}
	if (io_all(fd, w, h.nqps * sizeof(*w), true))
		return -1;
	{
		struct qp_wire *c = calloc(h.nqps, sizeof(*c));

		if (io_all(fd, c, h.nqps * sizeof(*c), false))
			return -1;
		for (uint32_t q = 0; q < h.nqps; q++) {
			if (qp_connect(&d, ss[q].qp, w[q].psn, &c[q])) {
				say("connecting QP %u: %s", q, strerror(errno));
				return -1;
			}
			for (unsigned k = 0; k < RQ_DEPTH; k++)
				post_recv(&ss[q], h.send_size, k);
		}
		free(c);
	}
	if (io_all(fd, &ready, sizeof(ready), true))
		return -1;
	say("session: %u QPs ready", h.nqps);
	t0 = now_ns();
	for (;;) {
		struct ibv_wc wc[32];
		int n = ibv_poll_cq(d.cq, 32, wc);
		struct pollfd pfd = {.fd = fd, .events = POLLIN};

		for (int i = 0; i < n; i++) {
			struct sside *s = NULL;
			uint8_t *buf;

			for (uint32_t q = 0; q < h.nqps; q++)
				if (ss[q].qp->qp_num == wc[i].qp_num)
					s = &ss[q];
			if (!s)
				continue;
			if (wc[i].status != IBV_WC_SUCCESS) {
				if (rep.errors++ < 5)
					say("QP %#x: receive completion %s", wc[i].qp_num,
					    ibv_wc_status_str(wc[i].status));
				continue;
			}
			buf = s->rbuf + wc[i].wr_id * h.send_size;
			if (wc[i].opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
				uint32_t imm = ntohl(wc[i].imm_data);

				if (imm != (uint32_t)s->next_imm && rep.bad++ < 5)
					say("QP %#x: WRITE immediate %u, want %u", wc[i].qp_num,
					    imm, (uint32_t)s->next_imm);
				s->next_imm++;
				rep.imms++;
			} else {
				uint32_t magic, qn, len;
				uint64_t seq, seed;
				long at;

				memcpy(&magic, buf, 4);
				memcpy(&qn, buf + 4, 4);
				memcpy(&seq, buf + 8, 8);
				memcpy(&seed, buf + 16, 8);
				memcpy(&len, buf + 24, 4);
				at = wc[i].byte_len >= SEND_HDR
					     ? check(buf + SEND_HDR, wc[i].byte_len - SEND_HDR, seed)
					     : 0;
				if (magic != MAGIC || qn != (uint32_t)(s - ss) || seq != s->next_seq ||
				    len != wc[i].byte_len || at >= 0 ||
				    (!!(wc[i].wc_flags & IBV_WC_WITH_IMM) !=
				     (seq % 2 == 1)) ||
				    ((wc[i].wc_flags & IBV_WC_WITH_IMM) &&
				     ntohl(wc[i].imm_data) != (uint32_t)seq)) {
					if (rep.bad++ < 5)
						say("QP %u: SEND seq %" PRIu64 " (want %" PRIu64
						    ") len %u/%u: wrong (byte %ld)",
						    (unsigned)(s - ss), seq, s->next_seq, len,
						    wc[i].byte_len, at);
				}
				s->next_seq = seq + 1;
				rep.recvs++;
				rep.recv_bytes += wc[i].byte_len;
			}
			if (post_recv(s, h.send_size, (unsigned)wc[i].wr_id))
				rep.errors++;
		}
		if (got_done) {
			uint64_t want_s = 0, want_i = 0, have_s = 0, have_i = 0;

			for (uint32_t q = 0; q < h.nqps; q++) {
				want_s += done.sends[q];
				want_i += done.imms[q];
				have_s += ss[q].next_seq;
				have_i += ss[q].next_imm;
			}
			if ((have_s >= want_s && have_i >= want_i) || now_ns() > done_deadline) {
				if (have_s != want_s || have_i != want_i) {
					say("missing: %" PRIu64 "/%" PRIu64 " SENDs, %" PRIu64
					    "/%" PRIu64 " immediates",
					    have_s, want_s, have_i, want_i);
					/* not wrong: posted, and flushed where a QP failed */
					rep.missing = (uint32_t)(want_s - UR_MINU(have_s, want_s) +
								 want_i - UR_MINU(have_i, want_i));
					if (!rep.missing)
						rep.bad++; /* more than were sent */
				}
				io_all(fd, &rep, sizeof(rep), true);
				break;
			}
		}
		/* nothing to do: sleep a little on the setup socket rather than spin */
		if (n == 0 && poll(&pfd, 1, 1) > 0) {
			if (got_done || io_all(fd, &done, sizeof(done), false) ||
			    done.magic != MAGIC) {
				say("the client went away");
				break;
			}
			got_done = true;
			done_deadline = now_ns() + 10 * NSEC;
		}
	}
	say("session over after %.1f s: %" PRIu64 " SENDs (%" PRIu64 " bytes) and %" PRIu64
	    " WRITE immediates received, %" PRIu64 " wrong, %u missing, %" PRIu64 " errors",
	    (double)(now_ns() - t0) / NSEC, rep.recvs, rep.recv_bytes, rep.imms, rep.bad, rep.missing,
	    rep.errors);
	for (uint32_t q = 0; q < h.nqps; q++) {
		ibv_destroy_qp(ss[q].qp);
		ibv_dereg_mr(ss[q].mr);
		free(ss[q].region);
	}
	free(ss);
	free(w);
	dev_close(&d);
	return rep.bad || rep.errors ? 1 : 0;
}

static int run_server(void)
{
	int lfd = tcp_listen(opt.port), rc = 0;

	role = "soak server";
	if (lfd < 0) {
		say("cannot listen on port %s: %s", opt.port, strerror(errno));
		return 1;
	}
	do {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0)
			return 1;
		rc |= server_session(fd);
		close(fd);
	} while (opt.forever);
	close(lfd);
	return rc ? 1 : 0;
}

/* ---- client ---- */

enum slot_state { S_EMPTY, S_WRITTEN, S_VERIFIED };

struct cslot {
	uint8_t state;
	bool busy;
	uint32_t len;
	uint64_t seed;
};

struct cqp {
	struct ibv_qp *qp;
	struct qp_wire r;
	uint8_t *mem;       /* NSLOT slots, NSEND send buffers, the atomic result */
	struct cslot slot[NSLOT];
	bool send_busy[NSEND];
	bool atomic_busy;
	uint64_t counter;   /* the remote counter's value once every atomic has run */
	uint64_t atomic_expect;
	uint64_t sends, imms;
	unsigned outstanding;
	bool dead;
	int first_err;
	uint64_t first_err_ns;
	unsigned errors, flushed;
	uint64_t posted, completed;
};

struct client {
	struct dev d;
	struct ibv_mr *mr;
	uint8_t *mem;
	struct cqp *q;
	unsigned nqps;
	uint32_t slot_size, send_size;
	uint64_t ops[OP_N], bytes, errors, verify_fail;
	int fd;
};

static size_t qp_mem(const struct client *c)
{
	return (size_t)NSLOT * c->slot_size + (size_t)NSEND * c->send_size + 64;
}

static uint64_t wr_id(unsigned q, enum op op, unsigned k)
{
	return (uint64_t)q << 32 | (uint64_t)op << 16 | k;
}

static int post(struct client *c, struct cqp *p, enum op op, unsigned k, uint8_t *local,
		uint32_t len, uint64_t raddr)
{
	struct ibv_sge sge = {(uintptr_t)local, len, c->mr->lkey};
	struct ibv_send_wr w = {.wr_id = wr_id((unsigned)(p - c->q), op, k), .sg_list = &sge,
				.num_sge = 1, .send_flags = IBV_SEND_SIGNALED}, *bad;
	int r;

	switch (op) {
	case OP_WRITE:
	case OP_WRITE_IMM:
	case OP_READ:
		w.opcode = op == OP_WRITE ? IBV_WR_RDMA_WRITE
			   : op == OP_READ ? IBV_WR_RDMA_READ
					   : IBV_WR_RDMA_WRITE_WITH_IMM;
		w.wr.rdma.remote_addr = raddr;
		w.wr.rdma.rkey = p->r.rkey;
		if (op == OP_WRITE_IMM)
			w.imm_data = htonl((uint32_t)p->imms);
		break;
	case OP_SEND:
	case OP_SEND_IMM:
		w.opcode = op == OP_SEND ? IBV_WR_SEND : IBV_WR_SEND_WITH_IMM;
		w.imm_data = htonl((uint32_t)p->sends);
		break;
	default:
		w.opcode = op == OP_FADD ? IBV_WR_ATOMIC_FETCH_AND_ADD : IBV_WR_ATOMIC_CMP_AND_SWP;
		w.wr.atomic.remote_addr = raddr;
		w.wr.atomic.rkey = p->r.rkey;
		break;
	}
	if (op == OP_FADD) {
		w.wr.atomic.compare_add = rnd() >> 8;
		p->atomic_expect = p->counter;
		p->counter += w.wr.atomic.compare_add;
	} else if (op == OP_CSWAP) {
		bool hit = rnd() & 1;

		w.wr.atomic.compare_add = hit ? p->counter : p->counter ^ 1;
		w.wr.atomic.swap = rnd();
		p->atomic_expect = p->counter;
		if (hit)
			p->counter = w.wr.atomic.swap;
	}
	if (!len)
		w.num_sge = 0;
	r = ibv_post_send(p->qp, &w, &bad);
	if (r) {
		say("QP %u: post_send %s: %s", (unsigned)(p - c->q), op_names[op], strerror(r));
		return -1;
	}
	p->outstanding++;
	p->posted++;
	return 0;
}

/* Start one operation on QP p, if one can start; returns 1 if it did. */
static int start_op(struct client *c, struct cqp *p)
{
	unsigned total = 0, pick;
	enum op op = OP_WRITE;
	uint8_t *slots = p->mem, *sends = p->mem + (size_t)NSLOT * c->slot_size;
	uint8_t *atom = sends + (size_t)NSEND * c->send_size;

	for (int i = 0; i < OP_N; i++)
		total += op_weight[i];
	pick = (unsigned)(rnd() % total);
	for (int i = 0; i < OP_N; i++) {
		if (pick < op_weight[i]) {
			op = (enum op)i;
			break;
		}
		pick -= op_weight[i];
	}
	switch (op) {
	case OP_WRITE:
	case OP_WRITE_IMM:
	case OP_READ: {
		unsigned k0 = (unsigned)(rnd() % NSLOT);

		for (unsigned j = 0; j < NSLOT; j++) {
			unsigned k = (k0 + j) % NSLOT;
			struct cslot *s = &p->slot[k];

			if (s->busy)
				continue;
			/* a written slot is read back before it is written again */
			if (s->state == S_WRITTEN || (op == OP_READ && s->state == S_VERIFIED)) {
				memset(slots + (size_t)k * c->slot_size, 0xee, s->len);
				if (post(c, p, OP_READ, k, slots + (size_t)k * c->slot_size, s->len,
					 p->r.addr + (uint64_t)k * c->slot_size))
					return -1;
				s->busy = true;
				c->ops[OP_READ]++;
				c->bytes += s->len;
				return 1;
			}
			if (op == OP_READ)
				continue;
			s->len = rnd_size(c->slot_size);
			s->seed = rnd();
			fill(slots + (size_t)k * c->slot_size, s->len, s->seed);
			if (post(c, p, op, k, slots + (size_t)k * c->slot_size, s->len,
				 p->r.addr + (uint64_t)k * c->slot_size))
				return -1;
			if (op == OP_WRITE_IMM)
				p->imms++;
			s->busy = true;
			c->ops[op]++;
			c->bytes += s->len;
			return 1;
		}
		return 0;
	}
	case OP_SEND:
	case OP_SEND_IMM:
		/* odd sequence numbers carry an immediate: the server checks which */
		op = p->sends % 2 ? OP_SEND_IMM : OP_SEND;
		for (unsigned k = 0; k < NSEND; k++) {
			uint8_t *b = sends + (size_t)k * c->send_size;
			uint32_t len = SEND_HDR + rnd_size(c->send_size - SEND_HDR), magic = MAGIC,
				 qn = (uint32_t)(p - c->q);
			uint64_t seed = rnd();

			if (p->send_busy[k])
				continue;
			memcpy(b, &magic, 4);
			memcpy(b + 4, &qn, 4);
			memcpy(b + 8, &p->sends, 8);
			memcpy(b + 16, &seed, 8);
			memcpy(b + 24, &len, 4);
			memset(b + 28, 0, 4);
			fill(b + SEND_HDR, len - SEND_HDR, seed);
			if (post(c, p, op, k, b, len, 0))
				return -1;
			p->sends++;
			p->send_busy[k] = true;
			c->ops[op]++;
			c->bytes += len;
			return 1;
		}
		return 0;
	default:
		if (p->atomic_busy)
			return 0;
		memset(atom, 0xee, 8);
		if (post(c, p, op, 0, atom, 8, p->r.addr + (uint64_t)NSLOT * c->slot_size))
			return -1;
		p->atomic_busy = true;
		c->ops[op]++;
		return 1;
	}
}

static void complete(struct client *c, const struct ibv_wc *wc)
{
	unsigned qi = (unsigned)(wc->wr_id >> 32), k = (unsigned)(wc->wr_id & 0xffff);
	enum op op = (enum op)((wc->wr_id >> 16) & 0xffff);
	struct cqp *p;

	if (qi >= c->nqps || op >= OP_N) {
		say("completion with an unknown wr_id %#" PRIx64, wc->wr_id);
		c->errors++;
		return;
	}
	p = &c->q[qi];
	p->outstanding--;
	p->completed++;
	if (wc->status != IBV_WC_SUCCESS) {
		if (!p->dead) {
			p->dead = true;
			p->first_err = wc->status;
			p->first_err_ns = now_ns();
		}
		if (wc->status == IBV_WC_WR_FLUSH_ERR && p->first_err != IBV_WC_WR_FLUSH_ERR)
			p->flushed++;
		else
			p->errors++;
		if (!opt.expect_fail && c->errors++ < 10)
			say("QP %u: %s completed with %s", qi, op_names[op],
			    ibv_wc_status_str(wc->status));
		return;
	}
	switch (op) {
	case OP_WRITE:
	case OP_WRITE_IMM:
		p->slot[k].state = S_WRITTEN;
		p->slot[k].busy = false;
		break;
	case OP_READ: {
		struct cslot *s = &p->slot[k];
		long at = check(p->mem + (size_t)k * c->slot_size, s->len, s->seed);

		if (at >= 0 || wc->byte_len != s->len) {
			if (c->verify_fail++ < 10)
				say("QP %u slot %u: READ back of %u bytes differs at byte %ld "
				    "(byte_len %u)",
				    qi, k, s->len, at, wc->byte_len);
		}
		s->state = S_VERIFIED;
		s->busy = false;
		break;
	}
	case OP_SEND:
	case OP_SEND_IMM:
		p->send_busy[k] = false;
		break;
	default: {
		uint64_t orig;
		uint8_t *atom = p->mem + (size_t)NSLOT * c->slot_size +
				(size_t)NSEND * c->send_size;

		memcpy(&orig, atom, 8);
		if (orig != p->atomic_expect && c->verify_fail++ < 10)
			say("QP %u: %s returned %#" PRIx64 ", want %#" PRIx64, qi, op_names[op],
			    orig, p->atomic_expect);
		p->atomic_busy = false;
		break;
	}
	}
}

static int client_setup(struct client *c)
{
	struct hello h = {.magic = MAGIC, .nqps = (uint32_t)opt.nqps, .seed = opt.seed};
	struct qp_wire *mine;
	uint32_t ready;

	memset(c, 0, sizeof(*c));
	c->nqps = (unsigned)opt.nqps;
	c->slot_size = opt.max_size;
	c->send_size = opt.max_size < 32768 ? (opt.max_size < 64 ? 64 : opt.max_size) : 32768;
	h.slot_size = c->slot_size;
	h.send_size = c->send_size;
	c->fd = tcp_connect(opt.host, opt.port, 60);
	if (c->fd < 0) {
		say("cannot reach the server at %s port %s", opt.host, opt.port);
		return -1;
	}
	/* the server opens its device on the hello: both ports come up together
	 * (a memif client port waits for its server port) */
	if (io_all(c->fd, &h, sizeof(h), true))
		return -1;
	if (dev_open(&c->d, (int)(c->nqps * SQ_DEPTH * 2 + 16))) {
		say("cannot open the device");
		return -1;
	}
	c->q = calloc(c->nqps, sizeof(*c->q));
	c->mem = aligned_alloc(4096, (qp_mem(c) * c->nqps + 4095) & ~4095ul);
	if (!c->q || !c->mem)
		return -1;
	c->mr = ibv_reg_mr(c->d.pd, c->mem, qp_mem(c) * c->nqps,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!c->mr)
		return -1;
	mine = calloc(c->nqps, sizeof(*mine));
	for (unsigned i = 0; i < c->nqps; i++) {
		struct cqp *p = &c->q[i];

		p->mem = c->mem + qp_mem(c) * i;
		p->qp = qp_create(&c->d);
		if (!p->qp) {
			say("create_qp: %s", strerror(errno));
			return -1;
		}
		p->counter = COUNTER_INIT;
		mine[i].qpn = p->qp->qp_num;
		mine[i].psn = (uint32_t)(mix(opt.seed * 7 + i) & 0xffffff);
		memcpy(mine[i].gid, c->d.gid.raw, 16);
	}
	for (unsigned i = 0; i < c->nqps; i++)
		if (io_all(c->fd, &c->q[i].r, sizeof(c->q[i].r), false))
			return -1;
	if (io_all(c->fd, mine, c->nqps * sizeof(*mine), true))
		return -1;
	for (unsigned i = 0; i < c->nqps; i++)
		if (qp_connect(&c->d, c->q[i].qp, mine[i].psn, &c->q[i].r)) {
			say("connecting QP %u: %s", i, strerror(errno));
			return -1;
		}
	free(mine);
	if (io_all(c->fd, &ready, sizeof(ready), false) || ready != MAGIC) {
		say("the server did not get ready");
		return -1;
	}
	return 0;
}

static void client_free(struct client *c)
{
	for (unsigned i = 0; i < c->nqps; i++)
		if (c->q && c->q[i].qp)
			ibv_destroy_qp(c->q[i].qp);
	if (c->mr)
		ibv_dereg_mr(c->mr);
	dev_close(&c->d);
	free(c->q);
	free(c->mem);
	if (c->fd >= 0)
		close(c->fd);
}

static void progress_line(struct client *c, double secs)
{
	uint64_t total = 0;
	char buf[256];
	size_t n = 0;

	for (int i = 0; i < OP_N; i++) {
		total += c->ops[i];
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, " %s %" PRIu64, op_names[i],
				      c->ops[i]);
	}
	say("%6.0f s: %" PRIu64 " ops (%.0f/s), %.1f MB, %" PRIu64 " errors, %" PRIu64
	    " verification failures;%s",
	    secs, total, total / (secs > 0 ? secs : 1), (double)c->bytes / 1e6, c->errors,
	    c->verify_fail, buf);
}

/* Run traffic until `seconds` pass (or, expecting failure, every QP died). */
static int client_run(struct client *c, int seconds)
{
	uint64_t t0 = now_ns(), end = t0 + (uint64_t)seconds * NSEC, next_report;
	struct done_msg done = {.magic = MAGIC, .nqps = c->nqps};
	struct report_msg rep;
	bool stopping = false;

	next_report = t0 + (uint64_t)opt.report * NSEC;
	for (;;) {
		struct ibv_wc wc[64];
		unsigned live = 0, busy = 0;
		uint64_t now = now_ns();
		int n;

		if (!stopping && now >= end)
			stopping = true;
		for (unsigned i = 0; i < c->nqps; i++) {
			struct cqp *p = &c->q[i];

			live += !p->dead;
			busy += p->outstanding != 0;
			while (!stopping && !p->dead && p->outstanding < (unsigned)opt.depth) {
				int r = start_op(c, p);

				if (r < 0)
					return -1;
				if (!r)
					break;
			}
		}
		if (stopping && !busy)
			break;
		if (opt.expect_fail && !live && !busy)
			break;
		n = ibv_poll_cq(c->d.cq, 64, wc);
		if (n < 0)
			return -1;
		if (!n)
			usleep(20); /* leave the CPU to the progress engine and the peer */
		for (int i = 0; i < n; i++)
			complete(c, &wc[i]);
		if (now >= next_report) {
			progress_line(c, (double)(now - t0) / NSEC);
			next_report += (uint64_t)opt.report * NSEC;
		}
		if (stopping && now > end + 60 * NSEC) {
			say("operations still outstanding a minute after the end");
			c->errors++;
			break;
		}
	}
	progress_line(c, (double)(now_ns() - t0) / NSEC);
	if (opt.expect_fail)
		return 0;
	for (unsigned i = 0; i < c->nqps; i++) {
		done.sends[i] = c->q[i].sends;
		done.imms[i] = c->q[i].imms;
	}
	if (io_all(c->fd, &done, sizeof(done), true) || io_all(c->fd, &rep, sizeof(rep), false) ||
	    rep.magic != MAGIC) {
		say("no report from the server");
		return -1;
	}
	say("server: %" PRIu64 " SENDs (%" PRIu64 " bytes) and %" PRIu64
	    " WRITE immediates received and checked, %" PRIu64 " wrong, %u missing, %" PRIu64
	    " errors",
	    rep.recvs, rep.recv_bytes, rep.imms, rep.bad, rep.missing, rep.errors);
	return c->errors || c->verify_fail || rep.bad || rep.missing || rep.errors ? -1 : 0;
}

/* The moment the script killed the peer or took the link down, in CLOCK_MONOTONIC ns. */
static uint64_t stamp_ns(void)
{
	FILE *f;
	double up = 0, nowup = 0;
	uint64_t deadline = now_ns() + 10 * NSEC;

	/* the file appears when the fault is made; wait for a whole number in it */
	for (;;) {
		f = fopen(opt.stamp_file, "r");
		if (f) {
			int got = fscanf(f, "%lf", &up);

			fclose(f);
			if (got == 1 && up > 0)
				break;
		}
		if (now_ns() > deadline)
			return 0;
		usleep(10000);
	}
	f = fopen("/proc/uptime", "r");
	if (!f || fscanf(f, "%lf", &nowup) != 1) {
		if (f)
			fclose(f);
		return 0;
	}
	fclose(f);
	/* uptime and CLOCK_MONOTONIC tick together (both exclude nothing here) */
	return now_ns() - (uint64_t)((nowup - up) * 1e9);
}

static int check_failure(struct client *c)
{
	double to_ms = 4.096e-3 * (double)(1u << opt.timeout);
	double bound_ms = (opt.retry + 1) * to_ms + opt.margin_ms;
	uint64_t stamp = opt.stamp_file ? stamp_ns() : 0;
	double first = 1e9, last = 0;
	int bad = 0;

	for (unsigned i = 0; i < c->nqps; i++) {
		struct cqp *p = &c->q[i];
		double at;

		if (!p->dead) {
			say("QP %u did not fail", i);
			bad++;
			continue;
		}
		if (p->first_err != IBV_WC_RETRY_EXC_ERR || p->errors != 1) {
			say("QP %u: first error %s, %u errors that are not flushes (want one %s)", i,
			    ibv_wc_status_str(p->first_err), p->errors,
			    ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR));
			bad++;
		}
		if (p->completed != p->posted) {
			say("QP %u: %" PRIu64 " of %" PRIu64 " WRs completed", i, p->completed,
			    p->posted);
			bad++;
		}
		at = stamp ? ((double)p->first_err_ns - (double)stamp) / 1e6 : 0;
		first = at < first ? at : first;
		last = at > last ? at : last;
	}
	if (stamp) {
		say("expected failure: every QP ended with %s then %s; first error %.0f ms, last "
		    "%.0f ms after the fault (bound (retry+1) x timeout = %.0f ms + %d ms margin)",
		    ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR), ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR),
		    first, last, bound_ms - opt.margin_ms, opt.margin_ms);
		if (last > bound_ms) {
			say("the errors came too late");
			bad++;
		}
		/* the stamp is written just after the fault is made */
		if (first < -50) {
			say("the first error came before the fault");
			bad++;
		}
	} else {
		say("stamp file missing: timing not checked");
		bad++;
	}
	return bad ? -1 : 0;
}

static int run_client(void)
{
	struct client c;
	int rc;

	role = "soak client";
	rng_state = mix(opt.seed) | 1;
	if (client_setup(&c)) {
		client_free(&c);
		return 1;
	}
	say("%u QPs, %d s, sizes up to %u bytes, timeout %d (%.1f ms) x %d retries%s",
	    c.nqps, opt.seconds, opt.max_size, opt.timeout,
	    4.096e-3 * (double)(1u << opt.timeout), opt.retry,
	    opt.expect_fail ? ", expecting the peer to fail" : "");
	if (opt.expect_fail) {
		rc = client_run(&c, opt.seconds);
		rc = rc ? rc : check_failure(&c);
		client_free(&c);
		if (rc || !opt.reconnect)
			return rc ? 1 : 0;
		/* the survivor starts again: new QPs, a new session */
		opt.expect_fail = false;
		say("reconnecting for %d s on new QPs", opt.reconnect);
		if (client_setup(&c)) {
			client_free(&c);
			return 1;
		}
		rc = client_run(&c, opt.reconnect);
		say("after the reconnect: %s", rc ? "FAIL" : "ok");
		client_free(&c);
		return rc ? 1 : 0;
	}
	rc = client_run(&c, opt.seconds);
	client_free(&c);
	say("%s", rc ? "FAIL" : "PASS");
	return rc ? 1 : 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: soak --server [--port P] [--forever] [-d DEV] [-g GID]\n"
		"       soak --client HOST [--port P] [--qps N] [--seconds S] [--max-size B]\n"
		"            [--timeout T] [--retry R] [--seed S] [--report S] [--ops LIST]\n"
		"            [--depth WRS_PER_QP]\n"
		"            [--expect-fail --stamp-file F [--margin-ms M] [--reconnect S]]\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"server", no_argument, NULL, 'S'},   {"client", required_argument, NULL, 'C'},
		{"port", required_argument, NULL, 'p'}, {"forever", no_argument, NULL, 'F'},
		{"qps", required_argument, NULL, 'q'},  {"seconds", required_argument, NULL, 's'},
		{"max-size", required_argument, NULL, 'm'},
		{"timeout", required_argument, NULL, 't'},
		{"retry", required_argument, NULL, 'r'}, {"seed", required_argument, NULL, 'e'},
		{"report", required_argument, NULL, 'R'},
		{"expect-fail", no_argument, NULL, 'x'},
		{"stamp-file", required_argument, NULL, 'k'},
		{"margin-ms", required_argument, NULL, 'M'},
		{"reconnect", required_argument, NULL, 'c'}, {"ops", required_argument, NULL, 'o'},
		{"depth", required_argument, NULL, 'D'},
		{NULL, 0, NULL, 0},
	};
	int ch;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	while ((ch = getopt_long(argc, argv, "d:g:", lo, NULL)) != -1) {
		switch (ch) {
		case 'S': opt.server = true; break;
		case 'C': opt.host = optarg; break;
		case 'p': opt.port = optarg; break;
		case 'F': opt.forever = true; break;
		case 'q': opt.nqps = atoi(optarg); break;
		case 's': opt.seconds = atoi(optarg); break;
		case 'm': opt.max_size = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 't': opt.timeout = atoi(optarg); break;
		case 'r': opt.retry = atoi(optarg); break;
		case 'e': opt.seed = strtoull(optarg, NULL, 0); break;
		case 'R': opt.report = atoi(optarg); break;
		case 'x': opt.expect_fail = true; break;
		case 'k': opt.stamp_file = optarg; break;
		case 'M': opt.margin_ms = atoi(optarg); break;
		case 'c': opt.reconnect = atoi(optarg); break;
		case 'd': opt.dev = optarg; break;
		case 'D': opt.depth = atoi(optarg); break;
		case 'o': {
			/* keep only the operations named (READs always run: they check WRITEs) */
			unsigned keep[OP_N] = {0};

			for (int i = 0; i < OP_N; i++)
				if (strstr(optarg, op_names[i]))
					keep[i] = op_weight[i];
			keep[OP_READ] = op_weight[OP_READ];
			memcpy(op_weight, keep, sizeof(keep));
			break;
		}
		case 'g': opt.gid_idx = atoi(optarg); break;
		default: usage(); return 2;
		}
	}
	opt.max_size = (opt.max_size + 7) & ~7u; /* the atomic counter after the slots is aligned */
	if (opt.server == !!opt.host || opt.nqps < 1 || opt.nqps > MAX_QPS || opt.seconds < 1 ||
	    opt.max_size > (1u << 24) || opt.timeout < 1 || opt.timeout > 31 || opt.retry < 0 ||
	    opt.retry > 7 || opt.report < 1 || opt.depth < 1 || opt.depth > SQ_DEPTH) {
		usage();
		return 2;
	}
	return opt.server ? run_server() : run_client();
}
