/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * verbs_check: an end-to-end check of an RC verbs device through the stock
 * libibverbs API only, run as a server in one host (or namespace) and a
 * client in the other. It knows nothing about uroce: it would run the same
 * against Soft-RoCE or a RoCE NIC.
 *
 * Connection setup goes over TCP (like ibv_rc_pingpong): the client sends a
 * hello naming the test and its parameters, both sides send, per QP, the
 * QPN, first PSN, GID and the address, length and rkey of their buffers,
 * the server moves its QPs to RTS, posts its receives and says "ready".
 *
 * Tests:
 *  pattern   every QP at once: RDMA WRITEs of several sizes (1, 63, 4096,
 *            4097, 65536, --size; 3-SGE; inline), WRITE WITH IMM (also zero
 *            length), SENDs (with and without immediate, 3-SGE gathered and
 *            scattered, inline, zero length) into posted receives, FETCH_ADD
 *            and CMP_SWP on a counter; then RDMA READs of every region back,
 *            compared byte for byte (and the canary bytes after them). The
 *            server checks every receive completion (opcode, byte_len,
 *            immediate, order, payload, untouched slack) and reports.
 *  badkey    wrong rkey, READ one byte past the end of a region, WRITE to a
 *            region without remote write: each on a fresh QP gives
 *            IBV_WC_REM_ACCESS_ERR, flushes the WR behind it and leaves the
 *            QP in the error state; a fourth QP then sees the target memory
 *            unchanged.
 *  killpeer  WRITEs kept outstanding until the peer is killed: one
 *            IBV_WC_RETRY_EXC_ERR per QP, the rest flushed, within
 *            (retry + 1) * 4.096 us * 2^timeout plus a margin; then new QPs
 *            on the same device (loopback, and --reconnect HOST) still work.
 *
 * Every wait has a deadline and an alarm() watchdog backs them all: missing
 * one is a failure with a message, never a hang. Exit 0 means pass.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
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
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_util.h"

#define NSEC 1000000000ull
#define MSEC 1000000ull

#define WIRE_MAGIC 0x55564b31u /* "UVK1" */
#define MSG_HELLO 1
#define MSG_QPINFO 2
#define MSG_READY 3
#define MSG_DONE 4
#define MSG_REPORT 5

#define MAX_QPS 256
#define SQ_DEPTH 64
#define RQ_DEPTH 32
#define MAX_DSLOTS 12
#define MAX_RSLOTS 20
#define GAP 64		/* canary bytes after every data slot */
#define CANARY_CHECK 16 /* of which a read-back checks this many */
#define SLACK 64	/* receive buffer bytes past the expected payload */
#define DATA_CANARY 0x5a
#define RECV_CANARY 0xa5
#define INLINE_WANT 256
#define KILL_DEPTH 16 /* killpeer: WRITEs outstanding per QP */

enum test_id { T_PATTERN = 1, T_BADKEY, T_KILLPEER };

static const char *const test_names[] = {
	[T_PATTERN] = "pattern",
	[T_BADKEY] = "badkey",
	[T_KILLPEER] = "killpeer",
};

struct opts {
	bool server;
	const char *host;
	const char *port;
	const char *dev;
	const char *reconnect;
	const char *kill_stamp; /* killpeer: where the script writes when it killed the server */
	int gid_idx;
	int nqps;
	uint32_t size;
	int iters;
	enum test_id test;
	int timeout;
	int retry;
	int mtu;
	int deadline;  /* watchdog, seconds */
	int wait;      /* killpeer: seconds to wait for the peer to go */
	int margin_ms; /* killpeer: allowed lateness of the retry-exceeded error */
};

static struct opts opt = {
	.port = "18515",
	.gid_idx = 1,
	.nqps = 8,
	.size = 1u << 20,
	.iters = 3,
	.test = T_PATTERN,
	.timeout = 14,
	.retry = 7,
	.deadline = 300,
	.wait = 60,
	.margin_ms = 250,
};

static const char *role = "verbs_check";

/* ---------- small helpers ---------- */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC + (uint64_t)ts.tv_nsec;
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: FAIL: ", role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void info(const char *fmt, ...)
{
	va_list ap;

	printf("%s: ", role);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static void on_alarm(int sig)
{
	static const char msg[] = "verbs_check: FAIL: watchdog expired (--deadline): "
				  "something hung\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(3);
	_exit(3);
}

static size_t align_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

static uint64_t mix64(uint64_t x)
{
	/* splitmix64's finaliser: every input bit moves every output bit */
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t seed_of(unsigned q, unsigned round, unsigned kind, unsigned slot)
{
	return mix64(((uint64_t)q << 40) ^ ((uint64_t)round << 20) ^ ((uint64_t)kind << 12) ^ slot ^
		     0xc0ffee0000000000ull);
}

enum { K_DATA = 1, K_RECV, K_IMM, K_ATOMIC, K_RO };

/* The pattern is a xorshift stream; fill and check walk it the same way. */
static void pattern_fill(uint8_t *p, size_t len, uint64_t seed)
{
	uint64_t s = seed | 1;

	for (size_t i = 0; i < len; i += 8) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		for (size_t j = 0; j < 8 && i + j < len; j++)
			p[i + j] = (uint8_t)(s >> (8 * j));
	}
}

/* Spread `from` over three pieces of the gather area and describe them in sge[0..2]. */
static void gather3(uint8_t *g, const size_t off[3], const uint32_t len[3], const uint8_t *from,
		    uint32_t lkey, struct ibv_sge *sge)
{
	for (int j = 0; j < 3; j++) {
		memcpy(g + off[j], from, len[j]);
		sge[j] = (struct ibv_sge){(uintptr_t)(g + off[j]), len[j], lkey};
		from += len[j];
	}
}

/* Offset of the first wrong byte, or -1. */
static long pattern_check(const uint8_t *p, size_t len, uint64_t seed, uint8_t *want)
{
	uint64_t s = seed | 1;

	for (size_t i = 0; i < len; i += 8) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		for (size_t j = 0; j < 8 && i + j < len; j++)
			if (p[i + j] != (uint8_t)(s >> (8 * j))) {
				*want = (uint8_t)(s >> (8 * j));
				return (long)(i + j);
			}
	}
	return -1;
}

static long fill_check(const uint8_t *p, size_t len, uint8_t v)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != v)
			return (long)i;
	return -1;
}

static uint32_t imm_of(unsigned q, unsigned round, unsigned slot)
{
	return (uint32_t)mix64(seed_of(q, round, K_IMM, slot));
}

/* ---------- the layout both sides derive from the hello ---------- */

enum dkind { D_PLAIN, D_MSGE, D_INLINE, D_WIMM };
enum rkind { R_WIMM, R_WIMM0, R_SEND, R_SEND_MSGE, R_SEND_INLINE, R_SEND0 };

struct dslot {
	enum dkind kind;
	uint32_t len;
	size_t off;
};

struct rslot {
	enum rkind kind;
	uint32_t len;	  /* payload (byte_len expected in the completion) */
	uint32_t buf_len; /* what the receive offers */
	int nsge;	  /* SGEs of the receive: 0, 1 or 3 */
	bool imm;
	size_t off;
};

struct layout {
	struct dslot d[MAX_DSLOTS];
	int nd;
	int d_wimm;    /* index of the WRITE WITH IMM target */
	int d_scatter; /* index read back with 3 SGEs */
	size_t counter_off;
	size_t data_len;
	struct rslot r[MAX_RSLOTS];
	int nr;
	size_t recv_len;
	/* client only: where the 3-SGE gathers come from */
	size_t gather_off[2][3];
	uint32_t gather_len[2][3];
	size_t gather_len_total;
};

static const uint32_t msge_write_len[3] = {17, 4099, 10000};
static const uint32_t msge_send_len[3] = {1000, 3000, 5000};
#define WIMM_LEN 12345u

static void add_d(struct layout *l, size_t *cur, enum dkind kind, uint32_t len)
{
	struct dslot *d = &l->d[l->nd];

	d->kind = kind;
	d->len = len;
	/* odd start offsets: the engine must not assume aligned targets */
	d->off = align_up(*cur, 64) + (size_t)(l->nd * 13) % 64;
	*cur = d->off + len + GAP;
	l->nd++;
}

/* Bytes a receive completion places in its buffer (WRITE WITH IMM places none there). */
static uint32_t rslot_placed(const struct rslot *r)
{
	return r->kind == R_WIMM || r->kind == R_WIMM0 ? 0 : r->len;
}

static void add_r(struct layout *l, size_t *cur, enum rkind kind, uint32_t len, bool imm)
{
	struct rslot *r = &l->r[l->nr];

	r->kind = kind;
	r->len = len;
	r->imm = imm;
	r->nsge = kind == R_WIMM0 ? 0 : kind == R_SEND_MSGE ? 3 : 1;
	r->buf_len = kind == R_WIMM0 ? 0 : kind == R_WIMM || kind == R_SEND0 ? SLACK : len + SLACK;
	r->off = align_up(*cur, 64) + (size_t)(l->nr * 7) % 64;
	*cur = r->off + r->buf_len;
	l->nr++;
}

static void layout_build(struct layout *l, uint32_t size, uint32_t max_inline)
{
	static const uint32_t base[] = {1, 63, 4096, 4097, 65536};
	uint32_t sizes[6];
	int n = 0;
	size_t cur = 0;

	memset(l, 0, sizeof(*l));
	for (unsigned i = 0; i < sizeof(base) / sizeof(base[0]); i++)
		if (base[i] < size)
			sizes[n++] = base[i];
	sizes[n++] = size;

	l->d_scatter = -1;
	for (int i = 0; i < n; i++) {
		if (sizes[i] == 65536 || (l->d_scatter < 0 && i == n - 1))
			l->d_scatter = l->nd;
		add_d(l, &cur, D_PLAIN, sizes[i]);
	}
	add_d(l, &cur, D_MSGE, msge_write_len[0] + msge_write_len[1] + msge_write_len[2]);
	if (max_inline)
		add_d(l, &cur, D_INLINE, max_inline);
	l->d_wimm = l->nd;
	add_d(l, &cur, D_WIMM, WIMM_LEN);
	l->counter_off = align_up(cur, 64);
	l->data_len = align_up(l->counter_off + GAP, 4096);

	cur = 0;
	add_r(l, &cur, R_WIMM, WIMM_LEN, true);
	add_r(l, &cur, R_WIMM0, 0, true);
	for (int i = 0; i < n; i++)
		add_r(l, &cur, R_SEND, sizes[i], i == 1 || sizes[i] == 65536);
	add_r(l, &cur, R_SEND_MSGE, msge_send_len[0] + msge_send_len[1] + msge_send_len[2], false);
	if (max_inline)
		add_r(l, &cur, R_SEND_INLINE, max_inline, true);
	add_r(l, &cur, R_SEND0, 0, true);
	l->recv_len = align_up(cur + 64, 4096);

	cur = 0;
	for (int g = 0; g < 2; g++)
		for (int i = 0; i < 3; i++) {
			l->gather_len[g][i] = g ? msge_send_len[i] : msge_write_len[i];
			l->gather_off[g][i] = align_up(cur, 64) + 5 + 3 * (size_t)i;
			cur = l->gather_off[g][i] + l->gather_len[g][i] + 64;
		}
	l->gather_len_total = align_up(cur, 4096);
}

/* ---------- the TCP side channel ---------- */

struct qp_info {
	uint32_t qpn, psn;
	uint8_t gid[16];
	uint64_t data_addr, recv_addr, ro_addr;
	uint32_t data_rkey, recv_rkey, ro_rkey;
	uint32_t data_len, recv_len, ro_len;
	uint32_t mtu; /* enum ibv_mtu: both ends use the smaller */
};
#define QP_INFO_WIRE 76

struct hello {
	uint32_t test, nqps, size, iters, max_inline;
};

static void put32(uint8_t **p, uint32_t v)
{
	v = htobe32(v);
	memcpy(*p, &v, 4);
	*p += 4;
}

static void put64(uint8_t **p, uint64_t v)
{
	v = htobe64(v);
	memcpy(*p, &v, 8);
	*p += 8;
}

static uint32_t get32(const uint8_t **p)
{
	uint32_t v;

	memcpy(&v, *p, 4);
	*p += 4;
	return be32toh(v);
}

static uint64_t get64(const uint8_t **p)
{
	uint64_t v;

	memcpy(&v, *p, 8);
	*p += 8;
	return be64toh(v);
}

static void info_encode(const struct qp_info *in, uint8_t *buf)
{
	uint8_t *p = buf;

	put32(&p, in->qpn);
	put32(&p, in->psn);
	memcpy(p, in->gid, 16);
	p += 16;
	put64(&p, in->data_addr);
	put32(&p, in->data_rkey);
	put32(&p, in->data_len);
	put64(&p, in->recv_addr);
	put32(&p, in->recv_rkey);
	put32(&p, in->recv_len);
	put64(&p, in->ro_addr);
	put32(&p, in->ro_rkey);
	put32(&p, in->ro_len);
	put32(&p, in->mtu);
}

static void info_decode(struct qp_info *out, const uint8_t *buf)
{
	const uint8_t *p = buf;

	out->qpn = get32(&p);
	out->psn = get32(&p);
	memcpy(out->gid, p, 16);
	p += 16;
	out->data_addr = get64(&p);
	out->data_rkey = get32(&p);
	out->data_len = get32(&p);
	out->recv_addr = get64(&p);
	out->recv_rkey = get32(&p);
	out->recv_len = get32(&p);
	out->ro_addr = get64(&p);
	out->ro_rkey = get32(&p);
	out->ro_len = get32(&p);
	out->mtu = get32(&p);
}

/* 0, or -1 with a message; a closed peer is an error too. */
static int io_full(int fd, void *buf, size_t len, bool wr, uint64_t deadline, const char *what)
{
	uint8_t *p = buf;

	while (len) {
		struct pollfd pfd = {.fd = fd, .events = wr ? POLLOUT : POLLIN};
		uint64_t now = now_ns();
		ssize_t n;
		int r;

		if (now >= deadline) {
			fail("timed out %s %s over TCP", wr ? "sending" : "waiting for", what);
			return -1;
		}
		r = poll(&pfd, 1, (int)((deadline - now) / MSEC) + 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			continue;
		n = wr ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			fail("TCP peer %s while %s %s",
			     n == 0 ? "closed the connection" : strerror(errno),
			     wr ? "sending" : "waiting for", what);
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int send_msg(int fd, uint32_t type, const void *body, uint32_t len, const char *what)
{
	uint8_t hdr[12], *p = hdr;

	put32(&p, WIRE_MAGIC);
	put32(&p, type);
	put32(&p, len);
	if (io_full(fd, hdr, sizeof(hdr), true, now_ns() + 30 * NSEC, what))
		return -1;
	return len ? io_full(fd, (void *)body, len, true, now_ns() + 30 * NSEC, what) : 0;
}

/* Receive a message of the given type into body (exactly len bytes). */
static int recv_msg(int fd, uint32_t type, void *body, uint32_t len, uint64_t deadline,
		    const char *what)
{
	uint8_t hdr[12];
	const uint8_t *p = hdr;
	uint32_t magic, t, l;

	if (io_full(fd, hdr, sizeof(hdr), false, deadline, what))
		return -1;
	magic = get32(&p);
	t = get32(&p);
	l = get32(&p);
	if (magic != WIRE_MAGIC || t != type || l != len) {
		fail("bad message while waiting for %s (magic %08x type %u len %u; want type %u "
		     "len %u)",
		     what, magic, t, l, type, len);
		return -1;
	}
	return len ? io_full(fd, body, len, false, deadline, what) : 0;
}

static int tcp_connect(const char *host, const char *port, int wait_s)
{
	int fd = vtest_tcp_connect(host, port, wait_s);

	if (fd < 0)
		fail("cannot connect to %s port %s within %d s", host, port, wait_s);
	return fd;
}

static int tcp_accept(const char *port, int wait_s)
{
	struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT};
	struct pollfd pfd;
	int lfd, fd, one = 1, zero = 0, r;

	sa.sin6_port = htons((uint16_t)atoi(port));
	lfd = socket(AF_INET6, SOCK_STREAM, 0);
	if (lfd < 0) {
		fail("socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(lfd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1)) {
		fail("listen on port %s: %s", port, strerror(errno));
		close(lfd);
		return -1;
	}
	info("listening on port %s", port);
	pfd.fd = lfd;
	pfd.events = POLLIN;
	do
		r = poll(&pfd, 1, wait_s * 1000);
	while (r < 0 && errno == EINTR);
	if (r <= 0) {
		fail("no client connected within %d s", wait_s);
		close(lfd);
		return -1;
	}
	fd = accept(lfd, NULL, NULL);
	close(lfd);
	if (fd < 0)
		fail("accept: %s", strerror(errno));
	else
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* ---------- the device and the QPs ---------- */

struct dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_device_attr attr;
	union ibv_gid gid;
	enum ibv_mtu mtu;
};

/* What one posted send WR must complete as. */
struct expect {
	enum ibv_wc_opcode op;
	uint32_t byte_len; /* UINT32_MAX: do not check */
	bool atomic;
	uint64_t orig;	  /* atomics: the value the target held */
	uint64_t *result; /* atomics: where it lands */
	const char *name;
};

struct cqp {
	unsigned idx;
	struct ibv_qp *qp;
	uint32_t psn;
	uint32_t max_inline;
	struct qp_info local, remote;
	uint8_t *mem, *recv, *ro;
	size_t mem_len;
	struct ibv_mr *mr, *recv_mr, *ro_mr;
	/* send-queue bookkeeping: completions come back in posting order */
	struct expect exp[SQ_DEPTH];
	uint64_t posted, completed;
	/* client: what the counter holds after this round's atomics */
	uint64_t counter;
	/* server: receive completions seen */
	uint64_t recvs;
	/* killpeer */
	uint64_t last_ok_ns, err_ns;
	int n_retry_exc, n_flush, n_other;
	bool errored, drained;
	uint64_t first_err_seq;
};

struct session {
	struct dev *dev;
	int fd;
	enum test_id test;
	unsigned nqps;
	uint32_t size;
	unsigned iters;
	uint32_t max_inline;
	struct layout l;
	struct ibv_cq *cq;
	struct cqp *q;
	int errors;
	/* client totals */
	uint64_t n_write, n_send, n_read, n_atomic, n_imm, bytes_ok;
	/* server totals */
	uint64_t srv_checked, srv_bytes;
	char first_err[200];
};

static int dev_open(struct dev *d)
{
	struct ibv_device **list;
	struct ibv_port_attr pa;
	int n, i;

	list = ibv_get_device_list(&n);
	if (!list || n == 0) {
		fail("no RDMA devices found (is the provider loaded? SYSFS_PATH/LD_PRELOAD from "
		     "`uroce env`)");
		return -1;
	}
	for (i = 0; i < n; i++)
		if (!opt.dev || !strcmp(ibv_get_device_name(list[i]), opt.dev))
			break;
	if (i == n) {
		fail("device %s not found", opt.dev);
		ibv_free_device_list(list);
		return -1;
	}
	d->ctx = ibv_open_device(list[i]);
	if (!d->ctx) {
		fail("ibv_open_device(%s): %s", ibv_get_device_name(list[i]), strerror(errno));
		ibv_free_device_list(list);
		return -1;
	}
	info("device %s", ibv_get_device_name(list[i]));
	ibv_free_device_list(list);
	if (ibv_query_device(d->ctx, &d->attr) || ibv_query_port(d->ctx, 1, &pa)) {
		fail("ibv_query_device/port: %s", strerror(errno));
		return -1;
	}
	if (pa.state != IBV_PORT_ACTIVE)
		info("warning: port 1 is %s", ibv_port_state_str(pa.state));
	if (ibv_query_gid(d->ctx, 1, opt.gid_idx, &d->gid)) {
		fail("ibv_query_gid(index %d): %s", opt.gid_idx, strerror(errno));
		return -1;
	}
	d->mtu = pa.active_mtu;
	if (opt.mtu) {
		enum ibv_mtu want = opt.mtu <= 256    ? IBV_MTU_256
				    : opt.mtu <= 512  ? IBV_MTU_512
				    : opt.mtu <= 1024 ? IBV_MTU_1024
				    : opt.mtu <= 2048 ? IBV_MTU_2048
						      : IBV_MTU_4096;
		if (want < d->mtu)
			d->mtu = want;
	}
	d->pd = ibv_alloc_pd(d->ctx);
	if (!d->pd) {
		fail("ibv_alloc_pd: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static struct ibv_qp *qp_create(struct dev *d, struct ibv_cq *cq, uint32_t *max_inline)
{
	struct ibv_qp_init_attr ia = {
	    .send_cq = cq,
	    .recv_cq = cq,
	    .cap = {.max_send_wr = SQ_DEPTH,
		    .max_recv_wr = RQ_DEPTH,
		    .max_send_sge = 3,
		    .max_recv_sge = 3,
		    .max_inline_data = INLINE_WANT},
	    .qp_type = IBV_QPT_RC,
	    .sq_sig_all = 1,
	};
	struct ibv_qp *qp = ibv_create_qp(d->pd, &ia);

	if (!qp) {
		/* a device without inline data still runs everything else */
		ia.cap.max_inline_data = 0;
		qp = ibv_create_qp(d->pd, &ia);
	}
	if (!qp) {
		fail("ibv_create_qp: %s", strerror(errno));
		return NULL;
	}
	*max_inline = ia.cap.max_inline_data;
	return qp;
}

static int qp_to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
	    .qp_state = IBV_QPS_INIT,
	    .pkey_index = 0,
	    .port_num = 1,
	    .qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
	};
	int r = ibv_modify_qp(qp, &a,
			      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);

	if (r)
		fail("modify QP %u to INIT: %s", qp->qp_num, strerror(r));
	return r ? -1 : 0;
}

static int qp_to_rts(struct dev *d, struct ibv_qp *qp, uint32_t my_psn, const struct qp_info *rem)
{
	int rd = d->attr.max_qp_rd_atom ? d->attr.max_qp_rd_atom : 1;
	int ird = d->attr.max_qp_init_rd_atom ? d->attr.max_qp_init_rd_atom : 1;
	struct ibv_qp_attr a = {
	    .qp_state = IBV_QPS_RTR,
	    .path_mtu = rem->mtu && rem->mtu < (uint32_t)d->mtu ? (enum ibv_mtu)rem->mtu : d->mtu,
	    .dest_qp_num = rem->qpn,
	    .rq_psn = rem->psn,
	    .max_dest_rd_atomic = (uint8_t)(rd > 16 ? 16 : rd),
	    .min_rnr_timer = 1, /* 0.01 ms: the server reposts quickly */
	    .ah_attr = {.is_global = 1,
			.port_num = 1,
			.grh = {.hop_limit = 64, .sgid_index = (uint8_t)opt.gid_idx}},
	};
	int r;

	memcpy(a.ah_attr.grh.dgid.raw, rem->gid, 16);
	r = ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (r) {
		fail("modify QP %u to RTR: %s", qp->qp_num, strerror(r));
		return -1;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = (uint8_t)opt.timeout;
	a.retry_cnt = (uint8_t)opt.retry;
	a.rnr_retry = 7; /* 7 = infinite: a receive not yet reposted only delays */
	a.sq_psn = my_psn;
	a.max_rd_atomic = (uint8_t)(ird > 16 ? 16 : ird);
	r = ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			      IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	if (r) {
		fail("modify QP %u to RTS: %s", qp->qp_num, strerror(r));
		return -1;
	}
	return 0;
}

static struct ibv_mr *mr_reg(struct dev *d, void *p, size_t len, int access, const char *what)
{
	struct ibv_mr *mr = ibv_reg_mr(d->pd, p, len, access);

	if (!mr)
		fail("ibv_reg_mr(%s, %zu bytes): %s", what, len, strerror(errno));
	return mr;
}

/* Random PSNs, but every other QP starts just below the 24-bit wrap. */
static uint32_t pick_psn(unsigned i)
{
	uint32_t r = (uint32_t)mix64(now_ns() ^ ((uint64_t)getpid() << 32) ^ i);

	return i % 2 ? 0xfffff0u + (r & 0xf) : r & 0xffffff;
}

/* Client memory of one QP: [src data][src recv][gather][read-back data][read-back recv][atomics] */
struct cmem {
	size_t src_data, src_recv, gather, rb_data, rb_recv, atom, total;
};

static struct cmem cmem_layout(const struct layout *l)
{
	struct cmem m;
	size_t cur = 0;

	m.src_data = cur;
	cur += align_up(l->data_len, 4096);
	m.src_recv = cur;
	cur += align_up(l->recv_len, 4096);
	m.gather = cur;
	cur += l->gather_len_total;
	m.rb_data = cur;
	cur += align_up(l->data_len, 4096);
	m.rb_recv = cur;
	cur += align_up(l->recv_len, 4096);
	m.atom = cur;
	cur += 4096;
	m.total = cur;
	return m;
}

static int post_recv_slot(struct session *s, struct cqp *c, int k)
{
	const struct rslot *r = &s->l.r[k];
	struct ibv_sge sge[3];
	struct ibv_recv_wr wr = {.wr_id = ((uint64_t)c->idx << 32) | (uint64_t)k,
				 .sg_list = sge,
				 .num_sge = r->nsge},
			   *bad;
	uint8_t *base = c->recv + r->off;
	uint32_t part[3] = {4000, 2500, 0};
	int e;

	/*
	 * Only the slack is refilled: the client may still be reading the
	 * payload back when this slot is reposted.
	 */
	memset(base + rslot_placed(r), RECV_CANARY, r->buf_len - rslot_placed(r));
	if (r->nsge == 1) {
		sge[0] = (struct ibv_sge){(uintptr_t)base, r->buf_len, c->recv_mr->lkey};
	} else if (r->nsge == 3) {
		/* scatter: split at offsets that are not MTU multiples */
		part[2] = r->buf_len - part[0] - part[1];
		for (int i = 0, o = 0; i < 3; o += (int)part[i], i++)
			sge[i] = (struct ibv_sge){(uintptr_t)(base + o), part[i], c->recv_mr->lkey};
	}
	e = ibv_post_recv(c->qp, &wr, &bad);
	if (e)
		fail("ibv_post_recv(QP %u slot %d): %s", c->qp->qp_num, k, strerror(e));
	return e ? -1 : 0;
}

/* Create the CQ, QPs and memory of a session; fills the local qp_info. */
static int session_setup(struct session *s, bool server)
{
	struct dev *d = s->dev;
	struct cmem m;
	int cqe;

	layout_build(&s->l, s->size, s->max_inline);
	m = cmem_layout(&s->l);
	cqe = (int)(s->nqps * (SQ_DEPTH + RQ_DEPTH) + 64);
	if (d->attr.max_cqe && cqe > d->attr.max_cqe)
		cqe = d->attr.max_cqe;
	s->cq = ibv_create_cq(d->ctx, cqe, NULL, NULL, 0);
	if (!s->cq) {
		fail("ibv_create_cq(%d): %s", cqe, strerror(errno));
		return -1;
	}
	s->q = calloc(s->nqps, sizeof(*s->q));
	if (!s->q)
		return -1;
	for (unsigned i = 0; i < s->nqps; i++) {
		struct cqp *c = &s->q[i];
		uint32_t inl;
		int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

		c->idx = i;
		c->qp = qp_create(d, s->cq, &inl);
		if (!c->qp || qp_to_init(c->qp))
			return -1;
		if (!server && (i == 0 || inl < s->max_inline))
			s->max_inline = inl; /* the client uses what every QP offers */
		c->max_inline = inl;
		c->psn = pick_psn(i);
		c->local.qpn = c->qp->qp_num;
		c->local.psn = c->psn;
		c->local.mtu = d->mtu;
		memcpy(c->local.gid, d->gid.raw, 16);
		if (server) {
			c->mem_len = s->l.data_len;
			c->mem = aligned_alloc(4096, c->mem_len);
			c->recv = aligned_alloc(4096, s->l.recv_len);
			c->ro = aligned_alloc(4096, 4096);
			if (!c->mem || !c->recv || !c->ro)
				return -1;
			memset(c->mem, DATA_CANARY, c->mem_len);
			{
				uint64_t c0 = mix64(seed_of(i, 0, K_ATOMIC, 0));

				memcpy(c->mem + s->l.counter_off, &c0, 8);
			}
			memset(c->recv, RECV_CANARY, s->l.recv_len);
			pattern_fill(c->ro, 4096, seed_of(i, 0, K_RO, 0));
			c->mr = mr_reg(d, c->mem, c->mem_len, acc, "data");
			c->recv_mr =
			    mr_reg(d, c->recv, s->l.recv_len,
				   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, "recv");
			/* readable, not writable: the badkey test writes to it */
			c->ro_mr =
			    mr_reg(d, c->ro, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ,
				   "read-only");
			if (!c->mr || !c->recv_mr || !c->ro_mr)
				return -1;
			c->local.data_addr = (uintptr_t)c->mem;
			c->local.data_rkey = c->mr->rkey;
			c->local.data_len = (uint32_t)c->mem_len;
			c->local.recv_addr = (uintptr_t)c->recv;
			c->local.recv_rkey = c->recv_mr->rkey;
			c->local.recv_len = (uint32_t)s->l.recv_len;
			c->local.ro_addr = (uintptr_t)c->ro;
			c->local.ro_rkey = c->ro_mr->rkey;
			c->local.ro_len = 4096;
		}
	}
	if (server)
		return 0;
	/* the client's layout depends on the inline size all QPs agree on */
	layout_build(&s->l, s->size, s->max_inline);
	m = cmem_layout(&s->l);
	for (unsigned i = 0; i < s->nqps; i++) {
		struct cqp *c = &s->q[i];

		c->mem_len = m.total;
		c->mem = aligned_alloc(4096, c->mem_len);
		if (!c->mem)
			return -1;
		memset(c->mem, 0, c->mem_len);
		c->mr = mr_reg(d, c->mem, c->mem_len, IBV_ACCESS_LOCAL_WRITE, "client");
		if (!c->mr)
			return -1;
	}
	return 0;
}

static void session_free(struct session *s)
{
	if (s->q) {
		for (unsigned i = 0; i < s->nqps; i++) {
			struct cqp *c = &s->q[i];
			int r;

			if (c->qp && (r = ibv_destroy_qp(c->qp)))
				fail("ibv_destroy_qp: %s", strerror(r));
			if (c->mr)
				ibv_dereg_mr(c->mr);
			if (c->recv_mr)
				ibv_dereg_mr(c->recv_mr);
			if (c->ro_mr)
				ibv_dereg_mr(c->ro_mr);
			free(c->mem);
			free(c->recv);
			free(c->ro);
		}
		free(s->q);
		s->q = NULL;
	}
	if (s->cq && ibv_destroy_cq(s->cq))
		fail("ibv_destroy_cq: %s", strerror(errno));
	s->cq = NULL;
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

static int exchange(struct session *s, bool server)
{
	size_t n = (size_t)s->nqps * QP_INFO_WIRE;
	uint8_t *buf = malloc(n);
	int r = -1;

	if (!buf)
		return -1;
	for (unsigned i = 0; i < s->nqps; i++)
		info_encode(&s->q[i].local, buf + (size_t)i * QP_INFO_WIRE);
	(void)server;
	if (send_msg(s->fd, MSG_QPINFO, buf, (uint32_t)n, "QP info"))
		goto out;
	if (recv_msg(s->fd, MSG_QPINFO, buf, (uint32_t)n, now_ns() + 30 * NSEC, "peer QP info"))
		goto out;
	for (unsigned i = 0; i < s->nqps; i++)
		info_decode(&s->q[i].remote, buf + (size_t)i * QP_INFO_WIRE);
	for (unsigned i = 0; i < s->nqps; i++)
		if (qp_to_rts(s->dev, s->q[i].qp, s->q[i].psn, &s->q[i].remote))
			goto out;
	r = 0;
out:
	free(buf);
	return r;
}

/* ---------- send-queue completions ---------- */

static int post_send(struct session *s, struct cqp *c, struct ibv_send_wr *wr,
		     enum ibv_wc_opcode op, uint32_t byte_len, const char *name)
{
	struct expect *e = &c->exp[c->posted % SQ_DEPTH];
	struct ibv_send_wr *bad;
	int r;

	if (c->posted - c->completed >= SQ_DEPTH) {
		fail("internal: QP %u send queue bookkeeping overflow", c->qp->qp_num);
		return -1;
	}
	wr->wr_id = ((uint64_t)c->idx << 32) | (c->posted & 0xffffffffu);
	wr->next = NULL;
	e->op = op;
	e->byte_len = byte_len;
	e->atomic = false;
	e->name = name;
	r = ibv_post_send(c->qp, wr, &bad);
	if (r) {
		fail("ibv_post_send(%s on QP %u): %s", name, c->qp->qp_num, strerror(r));
		s->errors++;
		return -1;
	}
	c->posted++;
	return 0;
}

static const char *wc_op_str(enum ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_SEND:
		return "SEND";
	case IBV_WC_RDMA_WRITE:
		return "RDMA_WRITE";
	case IBV_WC_RDMA_READ:
		return "RDMA_READ";
	case IBV_WC_COMP_SWAP:
		return "COMP_SWAP";
	case IBV_WC_FETCH_ADD:
		return "FETCH_ADD";
	case IBV_WC_RECV:
		return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM:
		return "RECV_RDMA_WITH_IMM";
	default:
		return "?";
	}
}

static void record_error(struct session *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void record_error(struct session *s, const char *fmt, ...)
{
	char msg[sizeof(s->first_err)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (s->errors < 20)
		fail("%s", msg);
	if (!s->errors)
		snprintf(s->first_err, sizeof(s->first_err), "%s", msg);
	s->errors++;
}

/* Check one send-queue completion against what was posted. */
static void check_send_wc(struct session *s, const struct ibv_wc *wc)
{
	unsigned qi = (unsigned)(wc->wr_id >> 32);
	struct cqp *c;
	struct expect *e;
	uint32_t seq;

	if (qi >= s->nqps) {
		record_error(s, "completion with unknown wr_id %#" PRIx64, wc->wr_id);
		return;
	}
	c = &s->q[qi];
	seq = (uint32_t)wc->wr_id;
	if (seq != (uint32_t)c->completed) {
		record_error(s, "QP %u: completion for WR %u while WR %u is the oldest outstanding",
			     c->qp->qp_num, seq, (uint32_t)c->completed);
		if (seq < (uint32_t)c->completed || seq >= (uint32_t)c->posted)
			return;
		c->completed = seq;
	}
	e = &c->exp[c->completed % SQ_DEPTH];
	c->completed++;
	if (wc->qp_num != c->qp->qp_num)
		record_error(s, "%s: completion qp_num %u, want %u", e->name, wc->qp_num,
			     c->qp->qp_num);
	if (wc->status != IBV_WC_SUCCESS) {
		record_error(s, "QP %u %s: %s (vendor_err %#x)", c->qp->qp_num, e->name,
			     ibv_wc_status_str(wc->status), wc->vendor_err);
		return;
	}
	if (wc->opcode != e->op)
		record_error(s, "QP %u %s: completion opcode %s, want %s", c->qp->qp_num, e->name,
			     wc_op_str(wc->opcode), wc_op_str(e->op));
	if (e->byte_len != UINT32_MAX && wc->byte_len != e->byte_len)
		record_error(s, "QP %u %s: byte_len %u, want %u", c->qp->qp_num, e->name,
			     wc->byte_len, e->byte_len);
	if (e->atomic) {
		uint64_t got;

		memcpy(&got, e->result, 8);
		if (got != e->orig)
			record_error(s, "QP %u %s: returned original %#" PRIx64 ", want %#" PRIx64,
				     c->qp->qp_num, e->name, got, e->orig);
		else
			s->bytes_ok += 8;
	}
}

/* Poll until every QP has completed all it posted. */
static int drain_send(struct session *s, uint64_t deadline, const char *phase)
{
	struct ibv_wc wc[32];
	unsigned spins = 0;

	for (;;) {
		bool all = true;
		int n;

		for (unsigned i = 0; i < s->nqps; i++)
			if (s->q[i].completed != s->q[i].posted)
				all = false;
		if (all)
			return 0;
		n = ibv_poll_cq(s->cq, 32, wc);
		if (n < 0) {
			record_error(s, "ibv_poll_cq failed in %s", phase);
			return -1;
		}
		for (int i = 0; i < n; i++)
			check_send_wc(s, &wc[i]);
		if (n)
			continue;
		if (++spins % 1024 == 0) {
			if (now_ns() > deadline) {
				uint64_t miss = 0;

				for (unsigned i = 0; i < s->nqps; i++)
					miss += s->q[i].posted - s->q[i].completed;
				record_error(s, "timed out in %s: %" PRIu64 " completions missing",
					     phase, miss);
				return -1;
			}
		}
	}
}

/* ---------- pattern: client ---------- */

static int pattern_post_round(struct session *s, struct cqp *c, unsigned round,
			      const struct cmem *m)
{
	const struct layout *l = &s->l;
	const struct qp_info *rem = &c->remote;
	uint8_t *src = c->mem + m->src_data, *srcr = c->mem + m->src_recv;
	uint64_t *atom = (uint64_t *)(c->mem + m->atom);
	uint32_t lkey = c->mr->lkey;
	struct ibv_sge sge[3];
	struct ibv_send_wr wr;
	uint64_t cur, add, swp;

	for (int i = 0; i < l->nd; i++) {
		const struct dslot *d = &l->d[i];

		if (d->kind == D_WIMM)
			continue; /* posted among the receive consumers, in their order */
		pattern_fill(src + d->off, d->len, seed_of(c->idx, round, K_DATA, (unsigned)i));
		memset(&wr, 0, sizeof(wr));
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.sg_list = sge;
		wr.num_sge = 1;
		wr.wr.rdma.remote_addr = rem->data_addr + d->off;
		wr.wr.rdma.rkey = rem->data_rkey;
		sge[0] = (struct ibv_sge){(uintptr_t)(src + d->off), d->len, lkey};
		if (d->kind == D_MSGE) {
			gather3(c->mem + m->gather, l->gather_off[0], l->gather_len[0],
				src + d->off, lkey, sge);
			wr.num_sge = 3;
		}
		if (d->kind == D_INLINE)
			wr.send_flags = IBV_SEND_INLINE;
		if (post_send(s, c, &wr, IBV_WC_RDMA_WRITE, UINT32_MAX,
			      d->kind == D_MSGE	    ? "3-SGE WRITE"
			      : d->kind == D_INLINE ? "inline WRITE"
						    : "WRITE"))
			return -1;
		/* inline data is copied at post time: the buffer is ours again */
		if (d->kind == D_INLINE)
			memset(src + d->off, 0xee, d->len);
		s->n_write++;
	}
	for (int k = 0; k < l->nr; k++) {
		const struct rslot *r = &l->r[k];
		const char *name = "SEND";

		memset(&wr, 0, sizeof(wr));
		wr.sg_list = sge;
		wr.num_sge = 1;
		if (r->imm)
			wr.imm_data = htonl(imm_of(c->idx, round, (unsigned)k));
		if (r->kind == R_WIMM || r->kind == R_WIMM0) {
			const struct dslot *d = &l->d[l->d_wimm];

			wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
			wr.wr.rdma.remote_addr = rem->data_addr + d->off;
			wr.wr.rdma.rkey = rem->data_rkey;
			if (r->kind == R_WIMM) {
				pattern_fill(src + d->off, d->len,
					     seed_of(c->idx, round, K_DATA, (unsigned)l->d_wimm));
				sge[0] = (struct ibv_sge){(uintptr_t)(src + d->off), d->len, lkey};
				name = "WRITE_WITH_IMM";
			} else {
				wr.num_sge = 0;
				name = "zero-length WRITE_WITH_IMM";
			}
			if (post_send(s, c, &wr, IBV_WC_RDMA_WRITE, UINT32_MAX, name))
				return -1;
			s->n_write++;
			s->n_imm++;
			continue;
		}
		wr.opcode = r->imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
		pattern_fill(srcr + r->off, r->len, seed_of(c->idx, round, K_RECV, (unsigned)k));
		sge[0] = (struct ibv_sge){(uintptr_t)(srcr + r->off), r->len, lkey};
		if (r->kind == R_SEND_MSGE) {
			gather3(c->mem + m->gather, l->gather_off[1], l->gather_len[1],
				srcr + r->off, lkey, sge);
			wr.num_sge = 3;
			name = "3-SGE SEND";
		} else if (r->kind == R_SEND_INLINE) {
			wr.send_flags = IBV_SEND_INLINE;
			name = "inline SEND";
		} else if (r->kind == R_SEND0) {
			wr.num_sge = 0;
			name = "zero-length SEND";
		}
		if (post_send(s, c, &wr, IBV_WC_SEND, UINT32_MAX, name))
			return -1;
		if (r->kind == R_SEND_INLINE)
			memset(srcr + r->off, 0xee, r->len);
		s->n_send++;
		s->n_imm += r->imm;
	}

	/* atomics on the counter: the expected value is tracked here */
	cur = round ? c->counter : mix64(seed_of(c->idx, 0, K_ATOMIC, 0));
	for (int a = 0; a < 4; a++) {
		struct expect *e;

		memset(&wr, 0, sizeof(wr));
		atom[a] = 0x0bad0bad0bad0badull;
		sge[0] = (struct ibv_sge){(uintptr_t)&atom[a], 8, lkey};
		wr.sg_list = sge;
		wr.num_sge = 1;
		wr.wr.atomic.remote_addr = rem->data_addr + l->counter_off;
		wr.wr.atomic.rkey = rem->data_rkey;
		add = mix64(seed_of(c->idx, round, K_ATOMIC, 10 + (unsigned)a));
		swp = mix64(seed_of(c->idx, round, K_ATOMIC, 20 + (unsigned)a));
		e = &c->exp[c->posted % SQ_DEPTH];
		if (a < 2) {
			wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
			wr.wr.atomic.compare_add = add;
		} else {
			wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
			/* the first swaps; the second compares with a wrong value and must not */
			wr.wr.atomic.compare_add = a == 2 ? cur : cur ^ 1;
			wr.wr.atomic.swap = swp;
		}
		if (post_send(s, c, &wr, a < 2 ? IBV_WC_FETCH_ADD : IBV_WC_COMP_SWAP, 8,
			      a < 2    ? "FETCH_ADD"
			      : a == 2 ? "CMP_SWP (equal)"
				       : "CMP_SWP (unequal)"))
			return -1;
		e->atomic = true;
		e->orig = cur;
		e->result = &atom[a];
		if (a < 2)
			cur += add;
		else if (a == 2)
			cur = swp;
		s->n_atomic++;
	}
	c->counter = cur; /* the read-back compares the counter with this */
	return 0;
}

static int post_read(struct session *s, struct cqp *c, uint64_t raddr, uint32_t rkey, uint8_t *dst,
		     uint32_t len, int nsge, const char *name)
{
	struct ibv_sge sge[3];
	struct ibv_send_wr wr = {.opcode = IBV_WR_RDMA_READ, .sg_list = sge, .num_sge = 1};

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	memset(dst, 0xee, len);
	sge[0] = (struct ibv_sge){(uintptr_t)dst, len, c->mr->lkey};
	if (nsge == 3 && len > 3000) {
		uint32_t a = 1000, b = (len - a) / 2 + 1;

		sge[0].length = a;
		sge[1] = (struct ibv_sge){(uintptr_t)(dst + a), b, c->mr->lkey};
		sge[2] = (struct ibv_sge){(uintptr_t)(dst + a + b), len - a - b, c->mr->lkey};
		wr.num_sge = 3;
	}
	s->n_read++;
	return post_send(s, c, &wr, IBV_WC_RDMA_READ, len, name);
}

static int pattern_post_reads(struct session *s, struct cqp *c, const struct cmem *m)
{
	const struct layout *l = &s->l;
	const struct qp_info *rem = &c->remote;

	for (int i = 0; i < l->nd; i++) {
		const struct dslot *d = &l->d[i];

		if (post_read(s, c, rem->data_addr + d->off, rem->data_rkey,
			      c->mem + m->rb_data + d->off, d->len + CANARY_CHECK,
			      i == l->d_scatter ? 3 : 1, i == l->d_scatter ? "3-SGE READ" : "READ"))
			return -1;
	}
	for (int k = 0; k < l->nr; k++) {
		const struct rslot *r = &l->r[k];

		if (!rslot_placed(r))
			continue;
		if (post_read(s, c, rem->recv_addr + r->off, rem->recv_rkey,
			      c->mem + m->rb_recv + r->off, r->len, 1, "READ of receive buffer"))
			return -1;
	}
	return post_read(s, c, rem->data_addr + l->counter_off, rem->data_rkey,
			 c->mem + m->rb_data + l->counter_off, 8, 1, "READ of counter");
}

static void pattern_verify(struct session *s, struct cqp *c, unsigned round, const struct cmem *m)
{
	const struct layout *l = &s->l;
	uint64_t want, got;
	uint8_t wb;
	long at;

	for (int i = 0; i < l->nd; i++) {
		const struct dslot *d = &l->d[i];
		const uint8_t *p = c->mem + m->rb_data + d->off;

		at = pattern_check(p, d->len, seed_of(c->idx, round, K_DATA, (unsigned)i), &wb);
		if (at >= 0)
			record_error(s,
				     "QP %u round %u: data slot %d (%u bytes): byte %ld is %#04x, "
				     "want %#04x",
				     c->qp->qp_num, round, i, d->len, at, p[at], wb);
		else
			s->bytes_ok += d->len;
		at = fill_check(p + d->len, CANARY_CHECK, DATA_CANARY);
		if (at >= 0)
			record_error(
			    s,
			    "QP %u round %u: data slot %d (%u bytes): written past its end "
			    "(byte %ld after it is %#04x)",
			    c->qp->qp_num, round, i, d->len, at, p[d->len + at]);
	}
	for (int k = 0; k < l->nr; k++) {
		const struct rslot *r = &l->r[k];
		const uint8_t *p = c->mem + m->rb_recv + r->off;

		if (!rslot_placed(r))
			continue;
		at = pattern_check(p, r->len, seed_of(c->idx, round, K_RECV, (unsigned)k), &wb);
		if (at >= 0)
			record_error(s,
				     "QP %u round %u: receive slot %d (%u-byte SEND): byte %ld is "
				     "%#04x, want %#04x",
				     c->qp->qp_num, round, k, r->len, at, p[at], wb);
		else
			s->bytes_ok += r->len;
	}
	want = c->counter;
	memcpy(&got, c->mem + m->rb_data + l->counter_off, 8);
	if (got != want)
		record_error(
		    s, "QP %u round %u: counter after atomics is %#" PRIx64 ", want %#" PRIx64,
		    c->qp->qp_num, round, got, want);
	else
		s->bytes_ok += 8;
}

struct report {
	uint64_t checked, bytes;
	uint32_t errors;
	char msg[200];
};
#define REPORT_WIRE (8 + 8 + 4 + 200)

static int client_finish(struct session *s, struct report *rep)
{
	uint8_t body[4], rb[REPORT_WIRE], *p = body;
	const uint8_t *q = rb;

	put32(&p, (uint32_t)s->errors);
	if (send_msg(s->fd, MSG_DONE, body, sizeof(body), "done"))
		return -1;
	if (recv_msg(s->fd, MSG_REPORT, rb, sizeof(rb), now_ns() + 60 * NSEC, "server report"))
		return -1;
	rep->checked = get64(&q);
	rep->bytes = get64(&q);
	rep->errors = get32(&q);
	memcpy(rep->msg, q, sizeof(rep->msg));
	rep->msg[sizeof(rep->msg) - 1] = 0;
	return 0;
}

static int client_pattern(struct session *s)
{
	struct cmem m = cmem_layout(&s->l);
	struct report rep;
	uint64_t t0 = now_ns();
	double secs;

	for (unsigned round = 0; round < s->iters; round++) {
		for (unsigned i = 0; i < s->nqps; i++)
			if (pattern_post_round(s, &s->q[i], round, &m))
				return -1;
		if (drain_send(s, now_ns() + 60 * NSEC, "writes, sends and atomics"))
			return -1;
		for (unsigned i = 0; i < s->nqps; i++)
			if (pattern_post_reads(s, &s->q[i], &m))
				return -1;
		if (drain_send(s, now_ns() + 60 * NSEC, "read-back"))
			return -1;
		for (unsigned i = 0; i < s->nqps; i++)
			pattern_verify(s, &s->q[i], round, &m);
		if (s->errors)
			break;
	}
	secs = (double)(now_ns() - t0) / NSEC;
	if (client_finish(s, &rep))
		return -1;
	if (rep.errors)
		fail("server found %u errors in %" PRIu64 " receive completions; first: %s",
		     rep.errors, rep.checked, rep.msg);
	printf("pattern: %s: %u QPs x %u rounds in %.2f s: %" PRIu64 " WRITEs, %" PRIu64
	       " SENDs, %" PRIu64 " with immediate, %" PRIu64 " READs, %" PRIu64
	       " atomics; %" PRIu64 " bytes verified by read-back, %" PRIu64
	       " receive completions and %" PRIu64 " bytes checked by the server; %d+%u errors\n",
	       s->errors || rep.errors ? "FAIL" : "PASS", s->nqps, s->iters, secs, s->n_write,
	       s->n_send, s->n_imm, s->n_read, s->n_atomic, s->bytes_ok, rep.checked, rep.bytes,
	       s->errors, rep.errors);
	fflush(stdout);
	return s->errors || rep.errors ? -1 : 0;
}

/* ---------- pattern: server ---------- */

static void server_check_recv(struct session *s, const struct ibv_wc *wc)
{
	unsigned qi = (unsigned)(wc->wr_id >> 32), k = (unsigned)(wc->wr_id & 0xffffffffu);
	struct cqp *c;
	const struct rslot *r;
	unsigned want_k, round;
	uint32_t want_len;
	enum ibv_wc_opcode want_op;
	uint8_t wb;
	long at;

	if (qi >= s->nqps || k >= (unsigned)s->l.nr) {
		record_error(s, "receive completion with unknown wr_id %#" PRIx64 " (%s)",
			     wc->wr_id, ibv_wc_status_str(wc->status));
		return;
	}
	c = &s->q[qi];
	want_k = (unsigned)(c->recvs % (unsigned)s->l.nr);
	round = (unsigned)(c->recvs / (unsigned)s->l.nr);
	c->recvs++;
	s->srv_checked++;
	if (wc->status != IBV_WC_SUCCESS) {
		record_error(s, "QP %u receive slot %u: %s (vendor_err %#x)", c->qp->qp_num, k,
			     ibv_wc_status_str(wc->status), wc->vendor_err);
		return;
	}
	if (k != want_k) {
		/* receives complete in the order posted */
		record_error(s, "QP %u: receive slot %u completed, want slot %u", c->qp->qp_num, k,
			     want_k);
		return;
	}
	r = &s->l.r[k];
	want_op = r->kind == R_WIMM || r->kind == R_WIMM0 ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
	want_len = r->len;
	if (wc->qp_num != c->qp->qp_num)
		record_error(s, "QP %u slot %u: completion qp_num %u", c->qp->qp_num, k,
			     wc->qp_num);
	if (wc->opcode != want_op)
		record_error(s, "QP %u round %u slot %u: opcode %s, want %s", c->qp->qp_num, round,
			     k, wc_op_str(wc->opcode), wc_op_str(want_op));
	if (wc->byte_len != want_len)
		record_error(s, "QP %u round %u slot %u (%s): byte_len %u, want %u", c->qp->qp_num,
			     round, k, wc_op_str(want_op), wc->byte_len, want_len);
	if (!!(wc->wc_flags & IBV_WC_WITH_IMM) != r->imm)
		record_error(
		    s, "QP %u round %u slot %u: IBV_WC_WITH_IMM %s, want %s", c->qp->qp_num, round,
		    k, wc->wc_flags & IBV_WC_WITH_IMM ? "set" : "clear", r->imm ? "set" : "clear");
	else if (r->imm && wc->imm_data != htonl(imm_of(qi, round, k)))
		record_error(s, "QP %u round %u slot %u: immediate %#x, want %#x", c->qp->qp_num,
			     round, k, ntohl(wc->imm_data), imm_of(qi, round, k));
	if (rslot_placed(r)) {
		const uint8_t *p = c->recv + r->off;

		at = pattern_check(p, r->len, seed_of(qi, round, K_RECV, k), &wb);
		if (at >= 0)
			record_error(
			    s, "QP %u round %u slot %u: received byte %ld is %#04x, want %#04x",
			    c->qp->qp_num, round, k, at, p[at], wb);
		else
			s->srv_bytes += r->len;
	}
	if (r->buf_len > rslot_placed(r)) {
		/* nothing past the payload; WRITE WITH IMM places nothing at all */
		uint32_t from = rslot_placed(r);

		at = fill_check(c->recv + r->off + from, r->buf_len - from, RECV_CANARY);
		if (at >= 0)
			record_error(s,
				     "QP %u round %u slot %u: receive buffer written at byte %u "
				     "beyond the payload",
				     c->qp->qp_num, round, k, (unsigned)(from + (uint32_t)at));
	}
	if (round + 1 < s->iters)
		post_recv_slot(s, c, (int)k);
}

/* Serve until the client says done (and every receive arrived), or it goes. */
static int server_loop(struct session *s)
{
	uint64_t want = s->test == T_PATTERN ? (uint64_t)s->iters * (unsigned)s->l.nr : 0;
	uint64_t done_at = 0, deadline = now_ns() + (uint64_t)opt.deadline * NSEC;
	uint8_t body[4], rb[REPORT_WIRE], *p;
	const uint8_t *q;
	struct ibv_wc wc[32];
	unsigned spins = 0;
	bool done = false;

	for (;;) {
		int n = ibv_poll_cq(s->cq, 32, wc);
		bool all = true;

		if (n < 0) {
			record_error(s, "ibv_poll_cq failed");
			break;
		}
		/* the server posts only receives (and opcode is undefined in errors) */
		for (int i = 0; i < n; i++)
			server_check_recv(s, &wc[i]);
		for (unsigned i = 0; i < s->nqps; i++)
			if (s->q[i].recvs < want)
				all = false;
		if (done && all)
			break;
		if (n)
			continue;
		if (++spins % 256)
			continue;
		if (!done) {
			struct pollfd pfd = {.fd = s->fd, .events = POLLIN};

			if (poll(&pfd, 1, 0) > 0) {
				if (recv_msg(s->fd, MSG_DONE, body, sizeof(body),
					     now_ns() + 5 * NSEC, "client done"))
					return -1;
				done = true;
				done_at = now_ns();
				q = body;
				if (get32(&q))
					info("client reports errors");
			}
		}
		if (done && now_ns() > done_at + 10 * NSEC) {
			uint64_t got = 0;

			for (unsigned i = 0; i < s->nqps; i++)
				got += s->q[i].recvs;
			record_error(s,
				     "client finished but only %" PRIu64 " of %" PRIu64
				     " receive completions arrived",
				     got, want * s->nqps);
			break;
		}
		if (now_ns() > deadline) {
			record_error(s, "server deadline passed before the client finished");
			break;
		}
		/*
		 * No sched_yield(): with both ends on one CPU a yield hands the
		 * client a whole time slice (~4 ms measured), the ACKs wait that
		 * long and a short local ACK timeout expires on a live peer.
		 */
	}
	p = rb;
	put64(&p, s->srv_checked);
	put64(&p, s->srv_bytes);
	put32(&p, (uint32_t)s->errors);
	memset(p, 0, 200);
	snprintf((char *)p, 200, "%s", s->first_err);
	if (send_msg(s->fd, MSG_REPORT, rb, sizeof(rb), "report"))
		return -1;
	info("%s: %" PRIu64 " receive completions, %" PRIu64 " bytes checked, %d errors",
	     test_names[s->test], s->srv_checked, s->srv_bytes, s->errors);
	return s->errors ? -1 : 0;
}

/* ---------- badkey ---------- */

static int wait_one(struct session *s, struct ibv_wc *out, uint64_t deadline, const char *what)
{
	for (;;) {
		int n = ibv_poll_cq(s->cq, 1, out);

		if (n < 0) {
			fail("ibv_poll_cq: error");
			return -1;
		}
		if (n == 1)
			return 0;
		if (now_ns() > deadline) {
			fail("timed out waiting for %s", what);
			return -1;
		}
	}
}

/* Post WR a (expected to fail with REM_ACCESS_ERR) and b behind it (flushed). */
static int expect_access_error(struct session *s, struct cqp *c, struct ibv_send_wr *bad_wr,
			       const char *what)
{
	uint8_t *lb = c->mem + 8192;
	struct ibv_sge sge = {(uintptr_t)lb, 64, c->mr->lkey};
	struct ibv_send_wr wr = {.opcode = IBV_WR_RDMA_WRITE, .sg_list = &sge, .num_sge = 1}, *bad;
	struct ibv_qp_attr qa = {0};
	struct ibv_qp_init_attr qia;
	struct ibv_wc wc;
	uint64_t t0 = now_ns();
	int ok = 1, r;

	bad_wr->wr_id = 1;
	wr.wr_id = 2;
	wr.wr.rdma.remote_addr = c->remote.data_addr + 4096;
	wr.wr.rdma.rkey = c->remote.data_rkey;
	bad_wr->next = &wr;
	r = ibv_post_send(c->qp, bad_wr, &bad);
	if (r) {
		fail("%s: ibv_post_send: %s", what, strerror(r));
		return -1;
	}
	if (wait_one(s, &wc, now_ns() + 10 * NSEC, what))
		return -1;
	if (wc.wr_id != 1 || wc.status != IBV_WC_REM_ACCESS_ERR) {
		fail("%s: first completion is WR %" PRIu64 " with %s, want WR 1 with %s", what,
		     wc.wr_id, ibv_wc_status_str(wc.status),
		     ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
		ok = 0;
	}
	if (wait_one(s, &wc, now_ns() + 10 * NSEC, "the WR behind the failed one"))
		return -1;
	if (wc.wr_id != 2 || wc.status != IBV_WC_WR_FLUSH_ERR) {
		fail("%s: the WR posted behind it completed as WR %" PRIu64 " with %s, want %s",
		     what, wc.wr_id, ibv_wc_status_str(wc.status),
		     ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR));
		ok = 0;
	}
	if (ibv_query_qp(c->qp, &qa, IBV_QP_STATE, &qia) || qa.qp_state != IBV_QPS_ERR) {
		fail("%s: QP state after the error is %d, want IBV_QPS_ERR (%d)", what, qa.qp_state,
		     IBV_QPS_ERR);
		ok = 0;
	}
	/* a WR posted to a QP in the Error state completes, flushed */
	wr.wr_id = 3;
	wr.next = NULL;
	r = ibv_post_send(c->qp, &wr, &bad);
	if (r) {
		fail("%s: ibv_post_send on a QP in the error state: %s (want a flushed completion)",
		     what, strerror(r));
		ok = 0;
	} else if (wait_one(s, &wc, now_ns() + 10 * NSEC, "a WR posted in the error state")) {
		return -1;
	} else if (wc.wr_id != 3 || wc.status != IBV_WC_WR_FLUSH_ERR) {
		fail("%s: WR posted in the error state completed as WR %" PRIu64
		     " with %s, want %s",
		     what, wc.wr_id, ibv_wc_status_str(wc.status),
		     ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR));
		ok = 0;
	}
	info("badkey: %-42s -> %s, then %s: %s (%.1f ms)", what,
	     ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR), ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR),
	     ok ? "ok" : "WRONG", (double)(now_ns() - t0) / MSEC);
	return ok ? 0 : -1;
}

static uint32_t unused_rkey(struct session *s, uint32_t base)
{
	for (uint32_t x = 0x5a5a5a00u;; x += 0x01010101u) {
		uint32_t k = base ^ x;
		bool used = false;

		for (unsigned i = 0; i < s->nqps; i++) {
			const struct qp_info *r = &s->q[i].remote;

			used |= k == r->data_rkey || k == r->recv_rkey || k == r->ro_rkey;
		}
		if (!used)
			return k;
	}
}

static int client_badkey(struct session *s)
{
	struct cqp *c;
	uint8_t *lb;
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	struct report rep;
	int bad = 0;
	long at;
	uint8_t wb;

	if (s->nqps < 4) {
		fail("badkey needs 4 QPs");
		return -1;
	}
	/* 1. a WRITE with an rkey nobody registered */
	c = &s->q[0];
	lb = c->mem;
	pattern_fill(lb, 4096, 1);
	sge = (struct ibv_sge){(uintptr_t)lb, 4096, c->mr->lkey};
	wr = (struct ibv_send_wr){.opcode = IBV_WR_RDMA_WRITE, .sg_list = &sge, .num_sge = 1};
	wr.wr.rdma.remote_addr = c->remote.data_addr;
	wr.wr.rdma.rkey = unused_rkey(s, c->remote.data_rkey);
	bad |= expect_access_error(s, c, &wr, "WRITE with a wrong rkey");

	/* 2. a READ one byte past the end of a region */
	c = &s->q[1];
	lb = c->mem;
	sge = (struct ibv_sge){(uintptr_t)lb, 4096, c->mr->lkey};
	wr = (struct ibv_send_wr){.opcode = IBV_WR_RDMA_READ, .sg_list = &sge, .num_sge = 1};
	wr.wr.rdma.remote_addr = c->remote.data_addr + c->remote.data_len - 4095;
	wr.wr.rdma.rkey = c->remote.data_rkey;
	bad |= expect_access_error(s, c, &wr, "READ one byte past the region's end");

	/* 3. a WRITE to a region registered without IBV_ACCESS_REMOTE_WRITE */
	c = &s->q[2];
	lb = c->mem;
	memset(lb, 0x11, 4096);
	sge = (struct ibv_sge){(uintptr_t)lb, 4096, c->mr->lkey};
	wr = (struct ibv_send_wr){.opcode = IBV_WR_RDMA_WRITE, .sg_list = &sge, .num_sge = 1};
	wr.wr.rdma.remote_addr = c->remote.ro_addr;
	wr.wr.rdma.rkey = c->remote.ro_rkey;
	bad |= expect_access_error(s, c, &wr, "WRITE to a region without remote write");

	/* 4. a fresh QP works, and none of the rejected WRITEs changed anything */
	c = &s->q[3];
	for (unsigned i = 0; i < 3; i++) {
		const struct qp_info *r = &s->q[i].remote;

		post_read(s, c, r->ro_addr, r->ro_rkey, c->mem + i * 8192, 4096, 1, "READ of ro");
		post_read(s, c, r->data_addr, r->data_rkey, c->mem + i * 8192 + 4096, 4096, 1,
			  "READ of data");
	}
	if (drain_send(s, now_ns() + 10 * NSEC, "read-back after the errors"))
		return -1;
	for (unsigned i = 0; i < 3; i++) {
		at = pattern_check(c->mem + i * 8192, 4096, seed_of(i, 0, K_RO, 0), &wb);
		if (at >= 0)
			record_error(s, "QP %u's read-only region changed at byte %ld", i, at);
		at = fill_check(c->mem + i * 8192 + 4096, 4096, DATA_CANARY);
		if (at >= 0)
			record_error(s, "QP %u's data region changed at byte %ld", i, at);
	}
	info("badkey: a fresh QP reads the targets back unchanged: %s", s->errors ? "NO" : "ok");
	if (client_finish(s, &rep))
		return -1;
	bad |= s->errors != 0;
	printf("badkey: %s\n", bad ? "FAIL" : "PASS");
	fflush(stdout);
	return bad ? -1 : 0;
}

/* ---------- killpeer ---------- */

static int post_kill_write(struct session *s, struct cqp *c)
{
	uint32_t len = s->size < 65536 ? s->size : 65536;
	struct ibv_sge sge = {(uintptr_t)c->mem, len, c->mr->lkey};
	struct ibv_send_wr wr = {.opcode = IBV_WR_RDMA_WRITE, .sg_list = &sge, .num_sge = 1};

	wr.wr.rdma.remote_addr = c->remote.data_addr;
	wr.wr.rdma.rkey = c->remote.data_rkey;
	s->n_write++;
	return post_send(s, c, &wr, IBV_WC_RDMA_WRITE, UINT32_MAX, "WRITE");
}

/* Two new QPs on the same device, connected to each other: WRITE, READ, SEND. */
static int loopback_check(struct dev *d)
{
	struct session ls = {.dev = d, .fd = -1, .nqps = 2, .size = 65536, .test = T_PATTERN};
	struct cqp *a, *b;
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_mr *bmr = NULL;
	uint8_t *bmem, wb;
	struct ibv_wc wc;
	int r = -1;
	long at;

	if (session_setup(&ls, false))
		goto out;
	a = &ls.q[0];
	b = &ls.q[1];
	bmem = b->mem;
	/* b's memory must be remotely accessible */
	bmr = mr_reg(d, bmem, b->mem_len,
		     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
		     "loopback");
	if (!bmr)
		goto out;
	a->remote = b->local;
	b->remote = a->local;
	a->remote.data_addr = (uintptr_t)bmem;
	a->remote.data_rkey = bmr->rkey;
	if (qp_to_rts(d, a->qp, a->psn, &a->remote) || qp_to_rts(d, b->qp, b->psn, &b->remote))
		goto out;
	pattern_fill(a->mem, 65536, 77);
	sge = (struct ibv_sge){(uintptr_t)a->mem, 65536, a->mr->lkey};
	wr = (struct ibv_send_wr){.opcode = IBV_WR_RDMA_WRITE, .sg_list = &sge, .num_sge = 1};
	wr.wr.rdma.remote_addr = (uintptr_t)bmem;
	wr.wr.rdma.rkey = bmr->rkey;
	if (post_send(&ls, a, &wr, IBV_WC_RDMA_WRITE, UINT32_MAX, "loopback WRITE") ||
	    post_read(&ls, a, (uintptr_t)bmem, bmr->rkey, a->mem + 65536, 65536, 1,
		      "loopback READ"))
		goto out;
	if (drain_send(&ls, now_ns() + 10 * NSEC, "loopback WRITE and READ"))
		goto out;
	at = pattern_check(a->mem + 65536, 65536, 77, &wb);
	if (at >= 0)
		record_error(&ls, "loopback READ of the WRITE differs at byte %ld", at);
	/* and a SEND from b into a receive on a */
	sge = (struct ibv_sge){(uintptr_t)(a->mem + 3 * 65536), 4096, a->mr->lkey};
	rwr = (struct ibv_recv_wr){.wr_id = 99, .sg_list = &sge, .num_sge = 1};
	if (ibv_post_recv(a->qp, &rwr, &rbad)) {
		record_error(&ls, "loopback ibv_post_recv failed");
		goto out;
	}
	pattern_fill(bmem + 65536, 3000, 78);
	{
		struct ibv_sge s2 = {(uintptr_t)(bmem + 65536), 3000, b->mr->lkey};

		wr = (struct ibv_send_wr){.opcode = IBV_WR_SEND, .sg_list = &s2, .num_sge = 1};
		if (post_send(&ls, b, &wr, IBV_WC_SEND, UINT32_MAX, "loopback SEND"))
			goto out;
		/* the CQ holds both the send and the receive completion */
		for (int got = 0; got < 2;) {
			if (wait_one(&ls, &wc, now_ns() + 10 * NSEC, "loopback SEND"))
				goto out;
			got++;
			if (wc.status != IBV_WC_SUCCESS)
				record_error(&ls, "loopback SEND/RECV: %s",
					     ibv_wc_status_str(wc.status));
			if (wc.wr_id == 99 && wc.byte_len != 3000)
				record_error(&ls, "loopback RECV byte_len %u, want 3000",
					     wc.byte_len);
			if (wc.wr_id != 99)
				b->completed++;
		}
	}
	at = pattern_check(a->mem + 3 * 65536, 3000, 78, &wb);
	if (at >= 0)
		record_error(&ls, "loopback SEND payload differs at byte %ld", at);
	r = ls.errors ? -1 : 0;
out:
	if (bmr)
		ibv_dereg_mr(bmr);
	session_free(&ls);
	return r;
}

static int client_session(struct dev *d, enum test_id test, unsigned nqps, uint32_t size,
			  unsigned iters, const char *host);

static void kill_error(struct session *s, struct cqp *c, const struct ibv_wc *wc, uint64_t now)
{
	if (!c->errored) {
		c->errored = true;
		c->err_ns = now;
		c->first_err_seq = c->completed - 1;
		if (wc->status != IBV_WC_RETRY_EXC_ERR)
			record_error(s, "QP %u: first error is %s, want %s", c->qp->qp_num,
				     ibv_wc_status_str(wc->status),
				     ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR));
	}
	if (wc->status == IBV_WC_RETRY_EXC_ERR)
		c->n_retry_exc++;
	else if (wc->status == IBV_WC_WR_FLUSH_ERR)
		c->n_flush++;
	else
		c->n_other++;
}

/*
 * When the server dies its kernel closes our TCP connection: the moment we
 * see that tells a peer that died from a transport error on a live one.
 * The server sends nothing during killpeer, so anything readable is the end.
 */
static bool peer_gone(int fd, int wait_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char b;

	if (poll(&p, 1, wait_ms) <= 0)
		return false;
	if (recv(fd, &b, 1, MSG_DONTWAIT) > 0)
		info("killpeer: unexpected data from the server");
	return true;
}

static uint64_t boot_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * NSEC + (uint64_t)ts.tv_nsec;
}

/* Seconds since boot (as /proc/uptime has them) from a file, in ns; 0 if none came. */
static uint64_t read_kill_stamp(const char *path, int wait_ms)
{
	for (int waited = 0; waited <= wait_ms; waited += 10) {
		FILE *f = fopen(path, "r");
		double up;

		if (f) {
			int n = fscanf(f, "%lf", &up);

			fclose(f);
			if (n == 1 && up > 0)
				return (uint64_t)(up * 1e9);
		}
		usleep(10000);
	}
	return 0;
}

static int client_killpeer(struct session *s)
{
	double tmo_ms = 4.096e-3 * (double)(1ull << opt.timeout);
	double limit_ms = (opt.retry + 1) * tmo_ms;
	struct ibv_wc wc[32];
	uint64_t t_start = 0, t_gone = 0, t_err = 0, last_check = 0, deadline;
	unsigned errored = 0;
	bool announced = false;
	int bad = 0;

	for (unsigned i = 0; i < s->nqps; i++)
		for (int k = 0; k < KILL_DEPTH; k++)
			if (post_kill_write(s, &s->q[i]))
				return -1;
	deadline = now_ns() + (uint64_t)opt.wait * NSEC;
	/* keep KILL_DEPTH WRITEs outstanding on every QP until each has failed */
	while (errored < s->nqps) {
		int n = ibv_poll_cq(s->cq, 32, wc);

		if (n < 0) {
			fail("ibv_poll_cq failed");
			return -1;
		}
		for (int j = 0; j < n; j++) {
			unsigned qi = (unsigned)(wc[j].wr_id >> 32);
			uint64_t now = now_ns();
			struct cqp *c;

			if (qi >= s->nqps) {
				fail("unknown wr_id %#" PRIx64, wc[j].wr_id);
				return -1;
			}
			c = &s->q[qi];
			if ((uint32_t)wc[j].wr_id != (uint32_t)c->completed)
				record_error(s, "QP %u: completion for WR %u, want %u (order)",
					     c->qp->qp_num, (uint32_t)wc[j].wr_id,
					     (uint32_t)c->completed);
			c->completed++;
			if (wc[j].status == IBV_WC_SUCCESS) {
				if (c->errored)
					record_error(s, "QP %u: a WRITE succeeded after an error",
						     c->qp->qp_num);
				c->last_ok_ns = now;
				if (!announced) {
					t_start = now;
					announced = true;
					info("killpeer: traffic started");
				}
				if (!c->errored && post_kill_write(s, c))
					return -1;
			} else {
				kill_error(s, c, &wc[j], now);
			}
			if (c->errored && !c->drained && c->completed == c->posted) {
				c->drained = true;
				errored++;
			}
		}
		if (!n && !t_gone && now_ns() > last_check + MSEC) {
			last_check = now_ns();
			if (peer_gone(s->fd, 0))
				t_gone = last_check;
		}
		if (!n && now_ns() > deadline) {
			fail("killpeer: no error completion within %d s (was the server killed?)",
			     opt.wait);
			return -1;
		}
	}
	for (unsigned i = 0; i < s->nqps; i++)
		if (!t_err || s->q[i].err_ns < t_err)
			t_err = s->q[i].err_ns;
	if (!t_gone && peer_gone(s->fd, 2000))
		t_gone = now_ns();
	if (opt.kill_stamp) {
		/* the kill time, to /proc/uptime's 10 ms and never later than the kill */
		uint64_t killed = read_kill_stamp(opt.kill_stamp, 5000);
		uint64_t err_boot = t_err + (boot_ns() - now_ns());

		if (!killed) {
			fail("killpeer: no kill time in %s", opt.kill_stamp);
			bad = 1;
		} else if (err_boot < killed) {
			fail(
			    "killpeer: %s came %.1f ms before the server was killed: the transport "
			    "gave up on a live peer",
			    ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR),
			    (double)(killed - err_boot) / MSEC);
			bad = 1;
		} else {
			double ms = (double)(err_boot - killed) / MSEC;

			info("killpeer: first error %.1f ms after the kill (kill time known to 10 "
			     "ms)",
			     ms);
			if (ms > limit_ms + opt.margin_ms + 10) {
				fail("killpeer: the error came %.1f ms after the kill; (retry+1) x "
				     "4.096 "
				     "us x 2^timeout = %.1f ms, margin %d ms",
				     ms, limit_ms, opt.margin_ms);
				bad = 1;
			}
		}
	} else if (!t_gone) {
		fail("killpeer: %s while the server is alive (its TCP connection is still open 2 s "
		     "later): the peer did not stop answering, the transport gave up on it",
		     ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR));
		bad = 1;
	} else if (t_gone > t_err + (uint64_t)opt.margin_ms * MSEC) {
		fail("killpeer: %s came %.1f ms before the server died (its TCP connection "
		     "closed then): the transport gave up on a live peer",
		     ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR), (double)(t_gone - t_err) / MSEC);
		bad = 1;
	} else {
		info("killpeer: the server's TCP connection closed %.1f ms %s the first error",
		     t_gone > t_err ? (double)(t_gone - t_err) / MSEC
				    : (double)(t_err - t_gone) / MSEC,
		     t_gone > t_err ? "after" : "before");
	}
	for (unsigned i = 0; i < s->nqps; i++) {
		struct cqp *c = &s->q[i];
		double ms = (double)(c->err_ns - (c->last_ok_ns ? c->last_ok_ns : t_start)) / MSEC;
		bool ok = c->n_retry_exc == 1 && c->n_other == 0 &&
			  c->n_flush == (int)(c->posted - c->first_err_seq - 1) && c->last_ok_ns;

		if (!c->last_ok_ns)
			fail("killpeer: QP %u never completed a WRITE before the kill",
			     c->qp->qp_num);
		if (c->n_retry_exc != 1 || c->n_other)
			fail("killpeer: QP %u: %d %s, %d other errors; want exactly one %s",
			     c->qp->qp_num, c->n_retry_exc, ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR),
			     c->n_other, ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR));
		if (c->n_flush != (int)(c->posted - c->first_err_seq - 1))
			fail("killpeer: QP %u: %d flushed, want %d", c->qp->qp_num, c->n_flush,
			     (int)(c->posted - c->first_err_seq - 1));
		if (ms > limit_ms + opt.margin_ms) {
			fail("killpeer: QP %u: the error came %.1f ms after the last ACKed WRITE; "
			     "(retry+1) x 4.096 us x 2^timeout = %.1f ms, margin %d ms",
			     c->qp->qp_num, ms, limit_ms, opt.margin_ms);
			ok = false;
		}
		/*
		 * Too early suggests missing retries, but this process may also
		 * have been descheduled before it saw the last good completion:
		 * say so, do not fail on it.
		 */
		if (ms < limit_ms / 2)
			info("killpeer: warning: QP %u: the error came only %.1f ms after the last "
			     "ACKed WRITE was seen; %d retries of %.1f ms take %.1f ms",
			     c->qp->qp_num, ms, opt.retry, tmo_ms, limit_ms);
		info("killpeer: QP %u: %s after %.1f ms (bound %.1f ms + %d ms), %d flushed: %s",
		     c->qp->qp_num, ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR), ms, limit_ms,
		     opt.margin_ms, c->n_flush, ok ? "ok" : "WRONG");
		bad |= !ok;
	}
	info("killpeer: %" PRIu64 " WRITEs posted, traffic ran %.2f s before the kill", s->n_write,
	     (double)(s->q[0].last_ok_ns - t_start) / NSEC);
	bad |= s->errors != 0;
	return bad ? -1 : 0;
}

/* After killpeer: the device is still usable for new QPs. */
static int killpeer_after(struct dev *d)
{
	int bad = 0;

	if (loopback_check(d)) {
		fail("killpeer: new loopback QPs on the same device do not work");
		bad = 1;
	} else {
		info("killpeer: new QPs on the same device work (loopback WRITE, READ, SEND)");
	}
	if (opt.reconnect) {
		info("killpeer: reconnecting to %s", opt.reconnect);
		if (client_session(d, T_PATTERN, 1, opt.size < 65536 ? opt.size : 65536, 1,
				   opt.reconnect)) {
			fail("killpeer: new QP to the restarted server does not work");
			bad = 1;
		} else {
			info("killpeer: new QP to the restarted server works");
		}
	}
	return bad ? -1 : 0;
}

/* ---------- sessions ---------- */

static int client_session(struct dev *d, enum test_id test, unsigned nqps, uint32_t size,
			  unsigned iters, const char *host)
{
	struct session s = {.dev = d,
			    .fd = -1,
			    .test = test,
			    .nqps = nqps,
			    .size = size,
			    .iters = iters,
			    .max_inline = 0};
	uint8_t hb[20], *p = hb;
	int r = -1;

	if (session_setup(&s, false))
		goto out;
	s.fd = tcp_connect(host, opt.port, 30);
	if (s.fd < 0)
		goto out;
	put32(&p, test);
	put32(&p, nqps);
	put32(&p, size);
	put32(&p, iters);
	put32(&p, s.max_inline);
	if (send_msg(s.fd, MSG_HELLO, hb, sizeof(hb), "hello") || exchange(&s, false) ||
	    recv_msg(s.fd, MSG_READY, NULL, 0, now_ns() + 30 * NSEC, "server ready"))
		goto out;
	info("%s: %u QPs connected (path MTU %d, inline %u, timeout %d, retry %d)",
	     test_names[test], nqps,
	     128 << (s.q[0].remote.mtu < (uint32_t)d->mtu ? s.q[0].remote.mtu : (uint32_t)d->mtu),
	     s.max_inline, opt.timeout, opt.retry);
	switch (test) {
	case T_PATTERN:
		r = client_pattern(&s);
		break;
	case T_BADKEY:
		r = client_badkey(&s);
		break;
	case T_KILLPEER:
		r = client_killpeer(&s);
		break;
	}
out:
	session_free(&s);
	if (test == T_KILLPEER && r == 0)
		r = killpeer_after(d);
	else if (test == T_KILLPEER)
		killpeer_after(d);
	return r;
}

static int server_session(struct dev *d)
{
	struct session s = {.dev = d, .fd = -1};
	uint8_t hb[20];
	const uint8_t *p = hb;
	int r = -1;

	s.fd = tcp_accept(opt.port, opt.deadline);
	if (s.fd < 0)
		return -1;
	if (recv_msg(s.fd, MSG_HELLO, hb, sizeof(hb), now_ns() + 30 * NSEC, "hello"))
		goto out;
	s.test = get32(&p);
	s.nqps = get32(&p);
	s.size = get32(&p);
	s.iters = get32(&p);
	s.max_inline = get32(&p);
	if (s.test < T_PATTERN || s.test > T_KILLPEER || !s.nqps || s.nqps > MAX_QPS || !s.size ||
	    s.max_inline > 65536) {
		fail("bad hello (test %u, %u QPs, size %u)", s.test, s.nqps, s.size);
		goto out;
	}
	info("client asks for %s: %u QPs, size %u, %u rounds", test_names[s.test], s.nqps, s.size,
	     s.iters);
	if (session_setup(&s, true))
		goto out;
	if (s.test == T_PATTERN)
		for (unsigned i = 0; i < s.nqps; i++)
			for (int k = 0; k < s.l.nr; k++)
				if (post_recv_slot(&s, &s.q[i], k))
					goto out;
	if (exchange(&s, true) || send_msg(s.fd, MSG_READY, NULL, 0, "ready"))
		goto out;
	r = server_loop(&s);
out:
	session_free(&s);
	return r;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: verbs_check --server | --client HOST [options]\n"
		   "  --port P        TCP port for connection setup (18515)\n"
		   "  --dev NAME      RDMA device (the first one)\n"
		   "  --gid-idx N     GID index (1)\n"
		   "  --qps N         QPs (8)\n"
		   "  --size BYTES    largest message (1048576)\n"
		   "  --iters N       rounds of the pattern test (3)\n"
		   "  --test NAME     pattern | badkey | killpeer (pattern)\n"
		   "  --timeout T     QP local ACK timeout exponent (14)\n"
		   "  --retry R       QP retry count (7)\n"
		   "  --mtu BYTES     path MTU at most this (the port's active MTU)\n"
		   "  --reconnect HOST  killpeer: afterwards connect to a restarted server\n"
		   "  --kill-stamp F  killpeer: F gets the /proc/uptime of the kill; errors\n"
		   "                  before it fail (else: the server's TCP connection)\n"
		   "  --wait S        killpeer: seconds to wait for the peer to go (60)\n"
		   "  --margin-ms M   killpeer: lateness allowed for the error (250)\n"
		   "  --deadline S    watchdog for the whole run (300)\n"
		   "The client chooses the test and its parameters; the server follows.\n");
}

static long num_arg(const char *s, long lo, long hi, const char *name)
{
	char *end;
	long v = strtol(s, &end, 0);

	if (*end || v < lo || v > hi) {
		fprintf(stderr, "verbs_check: bad %s '%s' (want %ld..%ld)\n", name, s, lo, hi);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"server", no_argument, NULL, 'S'},
	    {"client", required_argument, NULL, 'C'},
	    {"port", required_argument, NULL, 'p'},
	    {"dev", required_argument, NULL, 'd'},
	    {"gid-idx", required_argument, NULL, 'g'},
	    {"qps", required_argument, NULL, 'q'},
	    {"size", required_argument, NULL, 's'},
	    {"iters", required_argument, NULL, 'n'},
	    {"test", required_argument, NULL, 't'},
	    {"timeout", required_argument, NULL, 'T'},
	    {"retry", required_argument, NULL, 'R'},
	    {"mtu", required_argument, NULL, 'm'},
	    {"reconnect", required_argument, NULL, 'r'},
	    {"kill-stamp", required_argument, NULL, 'K'},
	    {"wait", required_argument, NULL, 'w'},
	    {"margin-ms", required_argument, NULL, 'M'},
	    {"deadline", required_argument, NULL, 'D'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct dev d = {0};
	int c, r;

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'S':
			opt.server = true;
			break;
		case 'C':
			opt.host = optarg;
			break;
		case 'p':
			opt.port = optarg;
			break;
		case 'd':
			opt.dev = optarg;
			break;
		case 'g':
			opt.gid_idx = (int)num_arg(optarg, 0, 255, "--gid-idx");
			break;
		case 'q':
			opt.nqps = (int)num_arg(optarg, 1, MAX_QPS, "--qps");
			break;
		case 's':
			opt.size = (uint32_t)num_arg(optarg, 1, 1 << 30, "--size");
			break;
		case 'n':
			opt.iters = (int)num_arg(optarg, 1, 1000000, "--iters");
			break;
		case 't':
			for (r = T_PATTERN; r <= T_KILLPEER; r++)
				if (!strcmp(optarg, test_names[r]))
					break;
			if (r > T_KILLPEER) {
				fprintf(stderr, "verbs_check: unknown test '%s'\n", optarg);
				return 2;
			}
			opt.test = r;
			break;
		case 'T':
			opt.timeout = (int)num_arg(optarg, 0, 31, "--timeout");
			break;
		case 'R':
			opt.retry = (int)num_arg(optarg, 0, 7, "--retry");
			break;
		case 'm':
			opt.mtu = (int)num_arg(optarg, 256, 4096, "--mtu");
			break;
		case 'r':
			opt.reconnect = optarg;
			break;
		case 'K':
			opt.kill_stamp = optarg;
			break;
		case 'w':
			opt.wait = (int)num_arg(optarg, 1, 3600, "--wait");
			break;
		case 'M':
			opt.margin_ms = (int)num_arg(optarg, 0, 3600000, "--margin-ms");
			break;
		case 'D':
			opt.deadline = (int)num_arg(optarg, 1, 86400, "--deadline");
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || opt.server == !!opt.host) {
		usage(stderr);
		return 2;
	}
	if (opt.test == T_BADKEY && opt.nqps < 4)
		opt.nqps = 4;
	role = opt.server ? "verbs_check server" : "verbs_check client";
	signal(SIGALRM, on_alarm);
	alarm((unsigned)opt.deadline);
	if (dev_open(&d))
		return 1;
	if (opt.server)
		r = server_session(&d);
	else
		r = client_session(&d, opt.test, (unsigned)opt.nqps, opt.size, (unsigned)opt.iters,
				   opt.host);
	ibv_dealloc_pd(d.pd);
	ibv_close_device(d.ctx);
	if (r)
		fprintf(stderr, "%s: FAILED\n", role);
	return r ? 1 : 0;
}
