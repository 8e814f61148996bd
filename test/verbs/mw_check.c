/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mw_check: memory windows through the stock libibverbs, between two
 * processes (two namespaces). The server owns the memory: a region that
 * grants no remote access itself, and windows over parts of it; the client
 * reaches the memory only through the windows' R_Keys, sent over TCP.
 *
 *   1. type 1, ibv_bind_mw: WRITE and READ through it; unbound (length 0),
 *      the next WRITE is refused with IBV_WC_REM_ACCESS_ERR, nothing lands
 *   2. type 2, IBV_WR_BIND_MW through ibv_post_send: WRITE, READ, FETCH_ADD,
 *      then the client's SEND with Invalidate; the server's receive completion has
 *      IBV_WC_WITH_INV and the R_Key; the next WRITE is refused
 *   3. type 2 rebound with ibv_wr_bind_mw, a WRITE through it, then
 *      ibv_wr_local_inv; the next WRITE is refused
 *   4. a WRITE partly past the window's end: refused, nothing lands;
 *      ibv_dereg_mr of the region under a bound window is EBUSY
 *   5. a bind to a region without IBV_ACCESS_MW_BIND: IBV_WC_MW_BIND_ERR
 *
 * After each refusal both QPs (the responder NAKed, so both are in ERR) go
 * back through RESET to RTS. The capability bits and max_mw are checked on
 * both sides. Exit 0 means pass.
 *   mw_check --server [--port P] [-d DEV] [-g GID_INDEX]
 *   mw_check --client HOST [--port P] [-d DEV] [-g GID_INDEX]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_util.h"

#define BUF 65536
#define WIN 4096
#define RECV_OFF 32768

static const char *role = "?";

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qp;
static struct ibv_qp_ex *qpx;
static struct ibv_mr *mr;
static uint8_t *buf;
static int gid_index = 1;
static int sock = -1;
static uint32_t peer_qpn;
static union ibv_gid peer_gid;

/* What the two sides tell each other. */
struct msg {
	uint32_t step;
	uint32_t qpn;
	uint32_t rkey;
	uint32_t pad;
	uint64_t addr;
	uint8_t gid[16];
};

static void send_msg(uint32_t step, uint32_t rkey, uint64_t addr)
{
	struct msg m = {.step = step, .rkey = rkey, .addr = addr};

	if (write(sock, &m, sizeof(m)) != (ssize_t)sizeof(m))
		vtest_die("write to the peer");
}

static struct msg recv_msg(uint32_t step)
{
	struct msg m;
	size_t got = 0;

	while (got < sizeof(m)) {
		ssize_t n = read(sock, (char *)&m + got, sizeof(m) - got);

		if (n <= 0)
			vtest_die("read from the peer");
		got += (size_t)n;
	}
	if (m.step != step) {
		fprintf(stderr, "mw_check %s: peer at step %u, expected %u\n", role, m.step, step);
		exit(1);
	}
	return m;
}

static struct ibv_wc wait_wc(void)
{
	struct ibv_wc wc = {0};

	for (int i = 0; i < 4000000; i++) {
		if (ibv_poll_cq(cq, 1, &wc) == 1)
			return wc;
		if (i > 1000)
			usleep(5);
	}
	fprintf(stderr, "mw_check %s: no completion within the deadline\n", role);
	exit(1);
}

static void expect_wc(uint64_t wr_id, enum ibv_wc_opcode op, enum ibv_wc_status st,
		      const char *what)
{
	struct ibv_wc wc = wait_wc();

	CHECK(wc.wr_id == wr_id && wc.status == st && (st != IBV_WC_SUCCESS || wc.opcode == op),
	      "%s: wr_id %llu status %s opcode %d, want wr_id %llu %s opcode %d", what,
	      (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status), wc.opcode,
	      (unsigned long long)wr_id, ibv_wc_status_str(st), op);
}

/* RESET (flushing what is left) -> INIT -> RTR -> RTS toward the peer. */
static void connect_qp(void)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RESET};
	struct ibv_wc wc;

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		vtest_die("RESET");
	while (ibv_poll_cq(cq, 1, &wc) == 1)
		;
	vtest_connect_rc(qp, peer_qpn, &peer_gid, gid_index, 0x100,
			 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			     IBV_ACCESS_REMOTE_ATOMIC);
}

/* After a refusal: both QPs start over; the server says when it is ready. */
static void reconnect(bool server, uint32_t step)
{
	if (server) {
		recv_msg(step);
		connect_qp();
		send_msg(step, 0, 0);
	} else {
		connect_qp();
		send_msg(step, 0, 0);
		recv_msg(step);
	}
}

static void setup(const char *dev_name, bool server)
{
	struct ibv_qp_init_attr_ex a = {0};
	struct ibv_device_attr_ex dx;
	struct ibv_device_attr da;

	ctx = vtest_open_device(dev_name);
	/* capability truth, as mlx5 says it: windows of both types (2B), and how many */
	CHECK(!ibv_query_device(ctx, &da), "ibv_query_device");
	CHECK((da.device_cap_flags & IBV_DEVICE_MEM_WINDOW) &&
		  (da.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) && da.max_mw > 0,
	      "device_cap_flags %#x max_mw %d", da.device_cap_flags, da.max_mw);
	CHECK(!ibv_query_device_ex(ctx, NULL, &dx) &&
		  (dx.device_cap_flags_ex & IBV_DEVICE_MEM_WINDOW_TYPE_2B) &&
		  dx.orig_attr.max_mw == da.max_mw,
	      "ibv_query_device_ex");
	printf("mw_check %s: device_cap_flags MEM_WINDOW|MEM_WINDOW_TYPE_2B, max_mw %d\n", role,
	       da.max_mw);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	buf = aligned_alloc(4096, BUF);
	if (!pd || !cq || !buf)
		vtest_die("alloc_pd/create_cq");
	memset(buf, 0, BUF);
	/* the server's region grants no remote access of its own: only windows do */
	mr = ibv_reg_mr(pd, buf, BUF, IBV_ACCESS_LOCAL_WRITE | (server ? IBV_ACCESS_MW_BIND : 0));
	if (!mr)
		vtest_die("reg_mr");
	a.qp_type = IBV_QPT_RC;
	a.send_cq = a.recv_cq = cq;
	a.cap.max_send_wr = a.cap.max_recv_wr = 32;
	a.cap.max_send_sge = a.cap.max_recv_sge = 1;
	a.pd = pd;
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ |
			   IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_INV |
			   IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV;
	qp = ibv_create_qp_ex(ctx, &a);
	if (!qp)
		vtest_die("create_qp_ex with BIND_MW and LOCAL_INV");
	qpx = ibv_qp_to_qp_ex(qp);
}

static void hello(void)
{
	struct msg m = {.step = 0, .qpn = qp->qp_num}, p;
	union ibv_gid gid;

	if (ibv_query_gid(ctx, 1, gid_index, &gid))
		vtest_die("query_gid");
	memcpy(m.gid, gid.raw, 16);
	if (write(sock, &m, sizeof(m)) != (ssize_t)sizeof(m))
		vtest_die("write hello");
	p = recv_msg(0);
	peer_qpn = p.qpn;
	memcpy(peer_gid.raw, p.gid, 16);
	connect_qp();
}

static void pattern(uint8_t *p, size_t n, unsigned salt)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 7 + salt * 13 + (i >> 8));
}

static bool is_pattern(const uint8_t *p, size_t n, unsigned salt)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (uint8_t)(i * 7 + salt * 13 + (i >> 8)))
			return false;
	return true;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* The client's WRITE of pattern 2, then 5 added to its first 8 bytes. */
static bool window_2_written(void)
{
	uint8_t want[WIN];
	uint64_t v;

	pattern(want, WIN, 2);
	memcpy(&v, want, 8);
	v += 5;
	memcpy(want, &v, 8);
	return !memcmp(buf + WIN, want, WIN);
}

/* ---- the client: RDMA through the server's windows ---- */

static void post_rdma(uint64_t wr_id, enum ibv_wr_opcode op, uint32_t off, uint32_t len,
		      uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = {.addr = (uintptr_t)(buf + off), .length = len, .lkey = mr->lkey};
	struct ibv_send_wr wr = {.wr_id = wr_id,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(qp, &wr, &bad))
		vtest_die("post_send");
}

static void refused(uint64_t wr_id, uint32_t len, uint64_t raddr, uint32_t rkey, const char *what)
{
	pattern(buf + 16384, len, 99);
	post_rdma(wr_id, IBV_WR_RDMA_WRITE, 16384, len, raddr, rkey);
	expect_wc(wr_id, IBV_WC_RDMA_WRITE, IBV_WC_REM_ACCESS_ERR, what);
	printf("mw_check client: %s: IBV_WC_REM_ACCESS_ERR\n", what);
}

/* Pattern `type` written through a window of type `type` and read back (wr_ids type*10+1, +2). */
static void write_read(unsigned int type, const struct msg *m)
{
	char what[64];

	pattern(buf, WIN, type);
	post_rdma(type * 10 + 1, IBV_WR_RDMA_WRITE, 0, WIN, m->addr, m->rkey);
	snprintf(what, sizeof(what), "WRITE through a type %u window", type);
	expect_wc(type * 10 + 1, IBV_WC_RDMA_WRITE, IBV_WC_SUCCESS, what);
	post_rdma(type * 10 + 2, IBV_WR_RDMA_READ, 8192, WIN, m->addr, m->rkey);
	snprintf(what, sizeof(what), "READ through a type %u window", type);
	expect_wc(type * 10 + 2, IBV_WC_RDMA_READ, IBV_WC_SUCCESS, what);
	CHECK(is_pattern(buf + 8192, WIN, type), "READ through the type %u window: wrong bytes",
	      type);
}

static void run_client(void)
{
	struct ibv_send_wr wr = {0}, *bad;
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = 16, .lkey = mr->lkey};
	struct msg m;

	/* 1: type 1 */
	m = recv_msg(1);
	write_read(1, &m);
	printf("mw_check client: type 1 window rkey %#x: WRITE and READ of %u bytes\n", m.rkey,
	       WIN);
	send_msg(1, 0, 0);
	recv_msg(2); /* unbound */
	refused(13, 64, m.addr, m.rkey, "WRITE through the unbound type 1 window");
	reconnect(false, 3);

	/* 2: type 2, post_send bind, SEND with Invalidate */
	m = recv_msg(4);
	write_read(2, &m);
	{
		struct ibv_sge asge = {
		    .addr = (uintptr_t)(buf + 12288), .length = 8, .lkey = mr->lkey};
		struct ibv_send_wr awr = {.wr_id = 25,
					  .sg_list = &asge,
					  .num_sge = 1,
					  .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
					  .send_flags = IBV_SEND_SIGNALED};
		uint64_t orig;

		awr.wr.atomic.remote_addr = m.addr;
		awr.wr.atomic.rkey = m.rkey;
		awr.wr.atomic.compare_add = 5;
		if (ibv_post_send(qp, &awr, &bad))
			vtest_die("post FETCH_ADD");
		expect_wc(25, IBV_WC_FETCH_ADD, IBV_WC_SUCCESS,
			  "FETCH_ADD through a type 2 window");
		memcpy(&orig, buf + 12288, 8);
		CHECK(!memcmp(&orig, buf + 8192, 8), "FETCH_ADD through the window: original %#llx",
		      (unsigned long long)orig);
	}
	wr.wr_id = 23;
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.invalidate_rkey = m.rkey;
	if (ibv_post_send(qp, &wr, &bad))
		vtest_die("post SEND_WITH_INV");
	expect_wc(23, IBV_WC_SEND, IBV_WC_SUCCESS, "SEND with Invalidate");
	printf("mw_check client: type 2 window rkey %#x: WRITE, READ, FETCH_ADD, SEND with "
	       "Invalidate\n",
	       m.rkey);
	send_msg(4, 0, 0);
	recv_msg(5); /* the server saw it invalidated */
	refused(24, 64, m.addr, m.rkey, "WRITE through the invalidated type 2 window");
	reconnect(false, 6);

	/* 3: ibv_wr_bind_mw, then ibv_wr_local_inv */
	m = recv_msg(7);
	pattern(buf, 256, 3);
	post_rdma(31, IBV_WR_RDMA_WRITE, 0, 256, m.addr, m.rkey);
	expect_wc(31, IBV_WC_RDMA_WRITE, IBV_WC_SUCCESS, "WRITE through ibv_wr_bind_mw's window");
	send_msg(7, 0, 0);
	recv_msg(8);
	refused(32, 64, m.addr, m.rkey, "WRITE after the server's ibv_wr_local_inv");
	reconnect(false, 9);

	/* 4: out of bounds */
	m = recv_msg(10);
	refused(41, 64, m.addr + WIN - 32, m.rkey, "WRITE 32 bytes past the window's end");
	reconnect(false, 11);
	send_msg(12, 0, 0);
}

/* ---- the server: the memory, its windows and their binds ---- */

static void post_bind(uint64_t wr_id, struct ibv_mw *mw, uint32_t rkey, struct ibv_mr *region,
		      uint64_t addr, uint64_t len, unsigned access)
{
	struct ibv_send_wr wr = {0}, *bad;

	wr.wr_id = wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info.mr = region;
	wr.bind_mw.bind_info.addr = addr;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = access;
	if (ibv_post_send(qp, &wr, &bad))
		vtest_die("post BIND_MW");
}

static void run_server(void)
{
	const unsigned rw = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	struct ibv_mw_bind b = {.wr_id = 10, .send_flags = IBV_SEND_SIGNALED};
	struct ibv_mw *mw1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	struct ibv_mw *mw2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	struct ibv_sge rsge = {.addr = (uintptr_t)(buf + RECV_OFF), .length = 64, .lkey = mr->lkey};
	struct ibv_recv_wr rwr = {.wr_id = 25, .sg_list = &rsge, .num_sge = 1}, *rbad;
	struct ibv_mw_bind_info info = {.mr = mr, .length = WIN, .mw_access_flags = rw};
	struct ibv_mr *plain;
	struct ibv_wc wc;
	uint32_t key, k2;

	if (!mw1 || !mw2)
		vtest_die("alloc_mw");
	CHECK(mw1->type == IBV_MW_TYPE_1 && mw2->type == IBV_MW_TYPE_2 && mw1->pd == pd,
	      "alloc_mw: type or PD");
	/* 1: ibv_bind_mw (type 1): a new key, as on mlx5 */
	key = mw1->rkey;
	b.bind_info = (struct ibv_mw_bind_info){
	    .mr = mr, .addr = (uintptr_t)buf, .length = WIN, .mw_access_flags = rw};
	CHECK(!ibv_bind_mw(qp, mw1, &b), "ibv_bind_mw");
	CHECK(mw1->rkey != key, "ibv_bind_mw left the key %#x", key);
	expect_wc(10, IBV_WC_BIND_MW, IBV_WC_SUCCESS, "ibv_bind_mw");
	send_msg(1, mw1->rkey, (uintptr_t)buf);
	recv_msg(1);
	CHECK(is_pattern(buf, WIN, 1), "the client's WRITE through the type 1 window");
	CHECK(ibv_dereg_mr(mr) == EBUSY, "ibv_dereg_mr under a bound window is not EBUSY");
	b.wr_id = 11;
	b.bind_info = (struct ibv_mw_bind_info){.mr = NULL};
	CHECK(!ibv_bind_mw(qp, mw1, &b), "ibv_bind_mw to unbind");
	expect_wc(11, IBV_WC_BIND_MW, IBV_WC_SUCCESS, "ibv_bind_mw, length 0");
	send_msg(2, 0, 0);
	reconnect(true, 3);
	CHECK(is_pattern(buf, WIN, 1), "a byte landed through the unbound type 1 window");
	printf("mw_check server: type 1: bound, written, read, unbound, refused, unchanged\n");

	/* 2: type 2 through ibv_post_send; the client invalidates it */
	k2 = ibv_inc_rkey(mw2->rkey);
	post_bind(20, mw2, k2, mr, (uintptr_t)(buf + WIN), WIN, rw | IBV_ACCESS_REMOTE_ATOMIC);
	expect_wc(20, IBV_WC_BIND_MW, IBV_WC_SUCCESS, "IBV_WR_BIND_MW");
	if (ibv_post_recv(qp, &rwr, &rbad))
		vtest_die("post_recv");
	send_msg(4, k2, (uintptr_t)(buf + WIN));
	recv_msg(4);
	wc = wait_wc();
	CHECK(wc.wr_id == 25 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV &&
		  (wc.wc_flags & IBV_WC_WITH_INV) && wc.invalidated_rkey == k2 && wc.byte_len == 16,
	      "receive of SEND with Invalidate: status %s opcode %d flags %#x rkey %#x (want %#x)",
	      ibv_wc_status_str(wc.status), wc.opcode, wc.wc_flags, wc.invalidated_rkey, k2);
	CHECK(window_2_written(), "the client's WRITE and FETCH_ADD through the type 2 window");
	printf("mw_check server: receive completion IBV_WC_WITH_INV, invalidated_rkey %#x\n",
	       wc.invalidated_rkey);
	send_msg(5, 0, 0);
	reconnect(true, 6);
	CHECK(window_2_written(), "a byte landed through the invalidated window");

	/* 3: bound again through ibv_wr_bind_mw, invalidated by ibv_wr_local_inv */
	k2 = ibv_inc_rkey(k2);
	info.addr = (uintptr_t)(buf + 2 * WIN);
	ibv_wr_start(qpx);
	qpx->wr_id = 30;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(qpx, mw2, k2, &info);
	CHECK(!ibv_wr_complete(qpx), "ibv_wr_complete of ibv_wr_bind_mw");
	expect_wc(30, IBV_WC_BIND_MW, IBV_WC_SUCCESS, "ibv_wr_bind_mw");
	send_msg(7, k2, info.addr);
	recv_msg(7);
	CHECK(is_pattern(buf + 2 * WIN, 256, 3), "the client's WRITE through the rebound window");
	ibv_wr_start(qpx);
	qpx->wr_id = 31;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_local_inv(qpx, k2);
	CHECK(!ibv_wr_complete(qpx), "ibv_wr_complete of ibv_wr_local_inv");
	expect_wc(31, IBV_WC_LOCAL_INV, IBV_WC_SUCCESS, "ibv_wr_local_inv");
	send_msg(8, 0, 0);
	reconnect(true, 9);
	CHECK(is_pattern(buf + 2 * WIN, 256, 3) && all_zero(buf + 2 * WIN + 256, WIN - 256),
	      "a byte landed after ibv_wr_local_inv");
	printf("mw_check server: ibv_wr_bind_mw, WRITE, ibv_wr_local_inv, refused, unchanged\n");

	/* 4: out of bounds: nothing lands, not even the part inside */
	k2 = ibv_inc_rkey(k2);
	post_bind(40, mw2, k2, mr, (uintptr_t)(buf + 3 * WIN), WIN, rw);
	expect_wc(40, IBV_WC_BIND_MW, IBV_WC_SUCCESS, "IBV_WR_BIND_MW again");
	send_msg(10, k2, (uintptr_t)(buf + 3 * WIN));
	reconnect(true, 11);
	CHECK(all_zero(buf + 3 * WIN, 2 * WIN), "a byte of the out-of-bounds WRITE landed");
	printf("mw_check server: WRITE past the window's end refused, nothing landed\n");
	recv_msg(12);

	/* 5: a region without IBV_ACCESS_MW_BIND: the bind fails in its completion */
	plain = ibv_reg_mr(pd, buf + 8 * WIN, WIN, IBV_ACCESS_LOCAL_WRITE);
	if (!plain)
		vtest_die("reg_mr");
	b.wr_id = 50;
	b.bind_info = (struct ibv_mw_bind_info){
	    .mr = plain, .addr = (uintptr_t)(buf + 8 * WIN), .length = 64, .mw_access_flags = rw};
	CHECK(!ibv_bind_mw(qp, mw1, &b), "ibv_bind_mw to a region without MW_BIND");
	expect_wc(50, IBV_WC_BIND_MW, IBV_WC_MW_BIND_ERR, "bind to a region without MW_BIND");
	printf("mw_check server: bind to a region without IBV_ACCESS_MW_BIND: "
	       "IBV_WC_MW_BIND_ERR\n");
	CHECK(!ibv_dealloc_mw(mw1) && !ibv_dealloc_mw(mw2), "dealloc_mw");
	CHECK(!ibv_dereg_mr(plain), "dereg_mr");
}

int main(int argc, char **argv)
{
	const char *dev = "uroce0", *port = "18515", *host = NULL;
	bool server = false;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--server"))
			server = true;
		else if (!strcmp(argv[i], "--client") && i + 1 < argc)
			host = argv[++i];
		else if (!strcmp(argv[i], "--port") && i + 1 < argc)
			port = argv[++i];
		else if (!strcmp(argv[i], "-d") && i + 1 < argc)
			dev = argv[++i];
		else if (!strcmp(argv[i], "-g") && i + 1 < argc)
			gid_index = atoi(argv[++i]);
		else {
			fprintf(stderr,
				"usage: mw_check --server|--client HOST [--port P] [-d DEV] "
				"[-g GID_INDEX]\n");
			return 2;
		}
	}
	if (server == !!host) {
		fprintf(stderr, "mw_check: --server or --client HOST\n");
		return 2;
	}
	role = server ? "server" : "client";
	vtest_name = server ? "mw_check server" : "mw_check client";
	setup(dev, server);
	sock = server ? vtest_tcp_accept(port) : vtest_tcp_connect(host, port, 20);
	if (sock < 0)
		vtest_die(server ? "accept" : "connect");
	hello();
	if (server)
		run_server();
	else
		run_client();
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	close(sock);
	if (vtest_failures) {
		printf("mw_check %s: %d checks failed\n", role, vtest_failures);
		return 1;
	}
	printf("mw_check %s: all passed\n", role);
	return 0;
}
