/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * uroce's own memif (dataplane/memif.c), both ends in one process: the
 * handshake, frames both ways across the rings' wrap, frames in pieces when
 * a buffer is smaller than the frame, a descriptor from the peer that
 * points outside its memory, a second client refused, a peer that leaves
 * and one that comes in its place, and clients that lie in their setup (a
 * region it could shrink, or larger than its file, a ring outside its
 * region, another interface's id): refused, and the server stays usable.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memif_wire.h"
#include "rx_wait.h"

static char sock_path[64];
static char args_server[128];

struct client_open {
	struct dp_memif m;
	char args[160];
	unsigned wait_ms;
	int ret;
	int done;
	bool refused; /* it logged that the server said no */
};

static void client_log(void *arg, const char *line)
{
	struct client_open *c = arg;

	if (strstr(line, "server said no: uroce: interface already connected"))
		c->refused = true;
}

static void *client_thread(void *arg)
{
	struct client_open *c = arg;

	c->ret = dp_memif_open(&c->m, c->args, 9216, c->wait_ms, client_log, c);
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* The time upkeep is told: a second later at each call, past any wait it set itself. */
static uint64_t tick(void)
{
	static uint64_t t;

	return t += 1000000000ull;
}

/* Open a client in a thread while the server looks after its socket, until the client's open
 * returns. */
static void connect_client(struct dp_memif *server, struct client_open *c, const char *extra,
			   unsigned wait_ms)
{
	pthread_t t;

	snprintf(c->args, sizeof(c->args), "role=client,id=7,socket=%s%s%s", sock_path,
		 extra ? "," : "", extra ? extra : "");
	c->wait_ms = wait_ms;
	c->done = 0;
	c->refused = false;
	ck_assert_int_eq(pthread_create(&t, NULL, client_thread, c), 0);
	while (!__atomic_load_n(&c->done, __ATOMIC_ACQUIRE)) {
		dp_memif_upkeep(server, tick());
		usleep(1000);
	}
	pthread_join(t, NULL);
	ck_assert_int_eq(c->ret, 0);
}

static void open_server(struct dp_memif *server)
{
	snprintf(sock_path, sizeof(sock_path), "/tmp/uroce-test-memif-%d.sock", (int)getpid());
	snprintf(args_server, sizeof(args_server), "role=server,id=7,socket=%s", sock_path);
	ck_assert_int_eq(dp_memif_open(server, args_server, 9216, 0, NULL, NULL), 0);
}

/* A frame of `len` bytes whose content says which frame it is. */
static void make_frame(uint8_t *f, uint32_t len, uint32_t seq)
{
	for (uint32_t i = 0; i < len; i++)
		f[i] = (uint8_t)(seq * 31 + i * 7);
}

static void check_frame(const uint8_t *f, uint32_t len, uint32_t want_len, uint32_t seq)
{
	ck_assert_uint_eq(len, want_len);
	for (uint32_t i = 0; i < len; i++)
		if (f[i] != (uint8_t)(seq * 31 + i * 7))
			ck_abort_msg("frame %u byte %u differs", seq, i);
}

static uint32_t frame_len(uint32_t seq, uint32_t max)
{
	return 60 + (seq * 997) % (max - 60);
}

/* Send frames first..first+count from a to b in bursts of 16, reading as they go. */
static void move_from(struct dp_memif *a, struct dp_memif *b, uint32_t first, uint32_t count,
		      uint32_t max_len)
{
	static uint8_t buf[16][8192];
	const uint8_t *frames[16];
	uint32_t lens[16], sent = first, got = first;

	count += first;
	ck_assert_uint_le(max_len, sizeof(buf[0]));
	while (got < count) {
		unsigned n = 0;
		const uint8_t *f;
		uint32_t len;

		for (; n < 16 && sent + n < count; n++) {
			lens[n] = frame_len(sent + n, max_len);
			make_frame(buf[n], lens[n], sent + n);
			frames[n] = buf[n];
		}
		sent += n ? dp_memif_tx(a, frames, lens, n) : 0;
		while ((f = dp_memif_rx_next(b, &len))) {
			check_frame(f, len, frame_len(got, max_len), got);
			got++;
		}
		dp_memif_rx_done(b);
		ck_assert_uint_le(got, sent);
	}
	ck_assert_uint_eq(sent, count);
}

static void move_frames(struct dp_memif *a, struct dp_memif *b, uint32_t count, uint32_t max_len)
{
	move_from(a, b, 0, count, max_len);
}

/* `count` frames of up to 4200 bytes each way, none refused; then both ends close. */
static void both_ways_then_close(struct dp_memif *server, struct dp_memif *client, uint32_t count)
{
	move_frames(client, server, count, 4200);
	move_frames(server, client, count, 4200);
	ck_assert_uint_eq(server->bad_desc + client->bad_desc, 0);
	dp_memif_close(client);
	dp_memif_close(server);
}

START_TEST(test_frames_both_ways)
{
	struct dp_memif server;
	struct client_open c;

	open_server(&server);
	connect_client(&server, &c, "rsize=6", 2000);
	ck_assert(c.m.connected);
	ck_assert(server.connected);
	ck_assert_uint_eq(server.ring_size, 64);
	/* three trips around a 64-slot ring each way */
	both_ways_then_close(&server, &c.m, 200);
}
END_TEST

START_TEST(test_frames_in_pieces)
{
	struct dp_memif server;
	struct client_open c;

	open_server(&server);
	/* 1024-byte buffers: a 4200-byte frame takes five slots each way */
	connect_client(&server, &c, "rsize=5,bsize=1024", 2000);
	ck_assert_uint_eq(c.m.bsize, 1024);
	both_ways_then_close(&server, &c.m, 100);
}
END_TEST

START_TEST(test_bad_descriptor_is_skipped)
{
	struct dp_memif server;
	struct client_open c;
	uint8_t f[100];
	const uint8_t *frames[2] = {f, f};
	uint32_t lens[2] = {100, 100}, len;
	const uint8_t *got;

	open_server(&server);
	connect_client(&server, &c, "rsize=4", 2000);
	make_frame(f, 100, 5);
	ck_assert_uint_eq(dp_memif_tx(&c.m, frames, lens, 2), 2);
	/* the client (a peer we must not trust) points the first one far outside its memory */
	ck_assert_ptr_nonnull(c.m.c2s);
	{
		struct {
			uint16_t flags, region;
			uint32_t length, offset, metadata;
		} *d = (void *)((uint8_t *)c.m.c2s + 128);

		d[0].offset = 0xfffff000u;
		d[0].length = 0x10000u;
	}
	got = dp_memif_rx_next(&server, &len);
	ck_assert_ptr_nonnull(got);
	check_frame(got, len, 100, 5);
	ck_assert_ptr_null(dp_memif_rx_next(&server, &len));
	dp_memif_rx_done(&server);
	ck_assert_uint_eq(server.bad_desc, 1);
	dp_memif_close(&c.m);
	dp_memif_close(&server);
}
END_TEST

START_TEST(test_second_client_refused_then_replacement_taken)
{
	struct dp_memif server;
	struct client_open c, second;
	uint8_t f[64];
	const uint8_t *frames[1] = {f};
	uint32_t lens[1] = {64};

	open_server(&server);
	connect_client(&server, &c, "rsize=4", 2000);
	/* a second client is told no while the first is there: it gives up after 300 ms */
	connect_client(&server, &second, "rsize=4", 300);
	ck_assert(!second.m.connected);
	ck_assert(second.refused);
	ck_assert(c.m.connected);
	dp_memif_close(&second.m);

	/* the first leaves: the server notices, and takes a new client */
	dp_memif_close(&c.m);
	dp_memif_upkeep(&server, tick());
	ck_assert(!server.connected);
	ck_assert_uint_eq(dp_memif_tx(&server, frames, lens, 1), 0);
	connect_client(&server, &c, "rsize=4", 2000);
	ck_assert(server.connected);
	make_frame(f, 64, 9);
	move_frames(&server, &c.m, 40, 2000);
	dp_memif_close(&c.m);
	dp_memif_close(&server);
}
END_TEST

/* A socket at sock_path that takes connections into its backlog and never shakes hands. */
static int silent_listener(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int l = socket(AF_UNIX, SOCK_SEQPACKET, 0);

	snprintf(sock_path, sizeof(sock_path), "/tmp/uroce-test-memif-%d.sock", (int)getpid());
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	unlink(sock_path);
	ck_assert_int_ge(l, 0);
	ck_assert_int_eq(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(l, 8), 0);
	return l;
}

/* A client's own upkeep until it is connected (its server's comes from the main thread). */
static void *client_upkeep_thread(void *arg)
{
	struct client_open *c = arg;
	uint64_t now = c->m.next_ctl_ns;

	for (int i = 0; i < 100 && !c->m.connected; i++) {
		dp_memif_upkeep(&c->m, now += 1000000000ull);
		usleep(10000);
	}
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Run the client's upkeep in a thread and the server's here until the client is connected. */
static void reconnect(struct dp_memif *server, struct client_open *c)
{
	pthread_t t;

	c->done = 0;
	ck_assert_int_eq(pthread_create(&t, NULL, client_upkeep_thread, c), 0);
	while (!__atomic_load_n(&c->done, __ATOMIC_ACQUIRE)) {
		dp_memif_upkeep(server, tick());
		usleep(1000);
	}
	pthread_join(t, NULL);
	ck_assert(c->m.connected);
	ck_assert(server->connected);
}

/*
 * A client makes its memory before it connects (touching it took a loaded
 * host seconds, and a server waiting for it gave up). A try that handed
 * the memory to no server keeps it: here a server that never says HELLO.
 * A connection that had it makes new memory when it ends (the server that
 * hung up may still read the old rings); either way the next connection's
 * rings start empty.
 */
START_TEST(test_client_memory_across_connections)
{
	struct dp_memif server;
	struct client_open c;
	int l = silent_listener();
	struct stat st;
	ino_t old_ino;
	void *region;

	snprintf(c.args, sizeof(c.args), "role=client,id=7,socket=%s,rsize=4", sock_path);
	ck_assert_int_eq(dp_memif_open(&c.m, c.args, 9216, 0, NULL, NULL), 0);
	ck_assert(!c.m.connected);
	ck_assert_uint_eq(c.m.nregions, 1);
	region = c.m.region[0];
	close(l);
	unlink(sock_path);

	/* a real server: the client connects on the memory it kept */
	open_server(&server);
	reconnect(&server, &c);
	ck_assert_ptr_eq(c.m.region[0], region);
	/* part way around the 16-slot rings, so a reset shows */
	move_frames(&c.m, &server, 21, 4200);
	move_frames(&server, &c.m, 37, 4200);

	/* that server goes: the client lets go of what it had shared, and
	 * makes new memory for its next try */
	ck_assert_int_eq(fstat(c.m.region_fd[0], &st), 0);
	old_ino = st.st_ino;
	dp_memif_close(&server);
	dp_memif_upkeep(&c.m, c.m.next_ctl_ns);
	ck_assert(!c.m.connected);
	ck_assert_uint_eq(c.m.nregions, 1);
	ck_assert_int_eq(fstat(c.m.region_fd[0], &st), 0);
	ck_assert_uint_ne(st.st_ino, old_ino);

	/* another comes: empty rings, frames both ways */
	open_server(&server);
	reconnect(&server, &c);
	ck_assert_uint_eq(server.ring_size, 16);
	both_ways_then_close(&server, &c.m, 50);
}
END_TEST

/* Frames built in the ring itself: one buffer lent at a time, a full ring lends none. */
START_TEST(test_frames_built_in_the_ring)
{
	struct dp_memif server;
	struct client_open c;
	uint32_t cap, len;
	const uint8_t *f;
	uint8_t *b;

	open_server(&server);
	connect_client(&server, &c, "rsize=3", 2000); /* 8 slots */
	b = dp_memif_tx_reserve(&c.m, 4200, &cap);
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_ge(cap, 4200);
	ck_assert_ptr_null(dp_memif_tx_reserve(&c.m, 100, &cap)); /* one at a time */
	dp_memif_tx_commit(&c.m, 0);				  /* given back */
	for (uint32_t i = 0; i < 8; i++) {
		b = dp_memif_tx_reserve(&c.m, 4200, &cap);
		ck_assert_ptr_nonnull(b);
		make_frame(b, 1000 + i, i);
		dp_memif_tx_commit(&c.m, 1000 + i);
	}
	ck_assert_ptr_null(dp_memif_tx_reserve(&c.m, 4200, &cap)); /* full */
	ck_assert_ptr_null(dp_memif_rx_next(&server, &len));	   /* nothing published yet */
	ck_assert_uint_eq(dp_memif_tx_publish(&c.m), 8);
	for (uint32_t i = 0; i < 8; i++) {
		f = dp_memif_rx_next(&server, &len);
		ck_assert_ptr_nonnull(f);
		check_frame(f, len, 1000 + i, i);
	}
	ck_assert_ptr_null(dp_memif_rx_next(&server, &len));
	dp_memif_rx_done(&server);
	ck_assert_ptr_nonnull(dp_memif_tx_reserve(&c.m, 4200, &cap)); /* room again */
	dp_memif_tx_commit(&c.m, 0);

	/* the server fills what the client offers: not lent when too small */
	dp_memif_close(&c.m);
	dp_memif_upkeep(&server, tick());
	connect_client(&server, &c, "rsize=3,bsize=1024", 2000);
	ck_assert_ptr_null(dp_memif_tx_reserve(&server, 4200, &cap));
	b = dp_memif_tx_reserve(&server, 1000, &cap);
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq(cap, 1024);
	make_frame(b, 1000, 3);
	dp_memif_tx_commit(&server, 1000);
	ck_assert_uint_eq(dp_memif_tx_publish(&server), 1);
	f = dp_memif_rx_next(&c.m, &len);
	ck_assert_ptr_nonnull(f);
	check_frame(f, len, 1000, 3);
	dp_memif_rx_done(&c.m);
	dp_memif_close(&c.m);
	dp_memif_close(&server);
}
END_TEST

/*
 * The device daemon stamps the frames it puts in a program's ring, built in
 * place or copied in pieces; the program reads each frame's stamp, and
 * counts one 10 ms old or more as a long wait (rx_wait.h), never one from
 * after its clock reading nor an unstamped one. The oldest frame not read
 * yet tells its stamp without being read (the late answerer looks).
 */
START_TEST(test_stamps_reach_the_client)
{
	const uint64_t t = 5000000000000ull; /* any CLOCK_MONOTONIC time */
	struct dp_memif server;
	struct client_open c;
	uint32_t cap, len;
	const uint8_t *f, *frames[1];
	uint8_t *b, big[3000];

	open_server(&server);
	connect_client(&server, &c, "rsize=3,bsize=2048,stamps=1", 2000);
	ck_assert(c.m.stamps);
	server.tx_stamp = dp_rx_stamp(t);
	b = dp_memif_tx_reserve(&server, 1000, &cap);
	ck_assert_ptr_nonnull(b);
	make_frame(b, 1000, 1);
	dp_memif_tx_commit(&server, 1000);
	ck_assert_uint_eq(dp_memif_rx_oldest_stamp(&c.m), 0); /* not published yet */
	server.tx_stamp = dp_rx_stamp(t + 1000000);
	make_frame(big, sizeof(big), 2); /* two pieces of the client's 2048-byte buffers */
	frames[0] = big;
	len = sizeof(big);
	ck_assert_uint_eq(dp_memif_tx(&server, frames, &len, 1), 1);
	dp_memif_tx_publish(&server);
	ck_assert_uint_eq(dp_memif_rx_oldest_stamp(&c.m), dp_rx_stamp(t));
	f = dp_memif_rx_next(&c.m, &len);
	ck_assert_ptr_nonnull(f);
	check_frame(f, len, 1000, 1);
	ck_assert_uint_eq(c.m.rx_stamp, dp_rx_stamp(t));
	ck_assert_uint_eq(dp_memif_rx_oldest_stamp(&c.m), dp_rx_stamp(t + 1000000));
	ck_assert(!dp_rx_stamp_late(c.m.rx_stamp, t + 9900000));
	ck_assert(dp_rx_stamp_late(c.m.rx_stamp, t + 10100000));
	f = dp_memif_rx_next(&c.m, &len);
	ck_assert_ptr_nonnull(f);
	check_frame(f, len, sizeof(big), 2);
	ck_assert_uint_eq(c.m.rx_stamp, dp_rx_stamp(t + 1000000));
	ck_assert(!dp_rx_stamp_late(c.m.rx_stamp, t));	/* stamped after we looked */
	ck_assert(!dp_rx_stamp_late(0, t + 1000000000)); /* not stamped */
	ck_assert_uint_eq(dp_memif_rx_oldest_stamp(&c.m), 0);
	dp_memif_rx_done(&c.m);
	dp_memif_close(&c.m);
	dp_memif_close(&server);
}
END_TEST

/* Across the 32-bit stamp's wrap (every 73 minutes), and af_packet's
 * CLOCK_REALTIME receive times. */
START_TEST(test_rx_wait_arithmetic)
{
	uint64_t wrap = 1ull << 42, ahead = 1700000000000000000ull;

	ck_assert(dp_rx_stamp(0) != 0);
	ck_assert(!dp_rx_stamp_late(dp_rx_stamp(wrap - 1000), wrap + 5000000));
	ck_assert(dp_rx_stamp_late(dp_rx_stamp(wrap - 1000), wrap + 12000000));
	ck_assert(!dp_rx_time_late(ahead + 1000, 5000000, ahead));
	ck_assert(dp_rx_time_late(ahead + 1000, 11000000, ahead));
	ck_assert(!dp_rx_time_late(ahead + 20000000, 11000000, ahead)); /* from the future */
}
END_TEST

/*
 * Each end keeps the peer's index as it last read it (memif_ring.c): a
 * reader must still see frames published after it looked, in order, and a
 * writer's kept room must never exceed the real one nor hide slots freed.
 */
START_TEST(test_kept_indices)
{
	struct dp_memif server;
	struct client_open c;
	uint32_t cap, len, sent = 0, got = 0, seed = 1;
	const uint8_t *f;
	uint8_t *b;

	open_server(&server);
	connect_client(&server, &c, "rsize=3", 2000); /* 8 slots */
	for (uint32_t i = 0; i < 8; i++) {
		ck_assert(dp_memif_tx_room_over(&c.m, 0));
		b = dp_memif_tx_reserve(&c.m, 200, &cap);
		ck_assert_ptr_nonnull(b);
		make_frame(b, 60 + sent % 100, sent);
		dp_memif_tx_commit(&c.m, 60 + sent % 100);
		sent++;
		if (i == 1)
			dp_memif_tx_publish(&c.m);
		if (i == 1) { /* the reader takes what is there, and looks again later */
			for (; (f = dp_memif_rx_next(&server, &len)); got++)
				check_frame(f, len, 60 + got % 100, got);
			ck_assert_uint_eq(got, 2);
		}
	}
	ck_assert(!dp_memif_tx_room_over(&c.m, 0));
	dp_memif_tx_publish(&c.m);
	/* three read and given back: exactly three free */
	for (; got < 3 && (f = dp_memif_rx_next(&server, &len)); got++)
		check_frame(f, len, 60 + got % 100, got);
	dp_memif_rx_done(&server);
	ck_assert(dp_memif_tx_room_over(&c.m, 2));
	ck_assert(!dp_memif_tx_room_over(&c.m, 3));
	ck_assert_uint_eq(dp_memif_tx_space(&c.m), 3);

	/* then many frames, published and read in uneven steps */
	while (sent < 5000) {
		unsigned burst = 1 + (seed = seed * 1103515245u + 12345u) % 11, reads = seed >> 8 & 7;

		for (unsigned i = 0; i < burst && (b = dp_memif_tx_reserve(&c.m, 200, &cap)); i++) {
			make_frame(b, 60 + sent % 100, sent);
			dp_memif_tx_commit(&c.m, 60 + sent % 100);
			sent++;
		}
		dp_memif_tx_publish(&c.m);
		for (unsigned i = 0; i < reads && (f = dp_memif_rx_next(&server, &len)); i++, got++)
			check_frame(f, len, 60 + got % 100, got);
		dp_memif_rx_done(&server);
		ck_assert_uint_le(sent - got, 8);
	}
	for (; (f = dp_memif_rx_next(&server, &len)); got++)
		check_frame(f, len, 60 + got % 100, got);
	ck_assert_uint_eq(got, sent);
	ck_assert_uint_eq(server.bad_desc + c.m.bad_desc, 0);
	dp_memif_close(&c.m);
	dp_memif_close(&server);
}
END_TEST

/* ---- a client that lies: the server must refuse it and stay usable ---- */

enum lie {
	LIE_WRONG_ID,	  /* INIT names another interface */
	LIE_UNSEALED,	  /* a region the client could shrink under us */
	LIE_REGION_SIZE,  /* a region larger than its file */
	LIE_RING_OUTSIDE, /* a ring past the end of its region */
	LIE_RING_TWICE,	  /* a second ring the same way (each leaked an eventfd) */
};

struct liar {
	enum lie lie;
	int last_type; /* the type of the server's last message */
	int done;
};

static int send_msg(int fd, struct memif_msg *m, int pass_fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = {0};
	struct iovec iov = {.iov_base = m, .iov_len = sizeof(*m)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

	if (pass_fd >= 0) {
		struct cmsghdr *h;

		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		h = CMSG_FIRSTHDR(&mh);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(h), &pass_fd, sizeof(int));
	}
	return sendmsg(fd, &mh, MSG_NOSIGNAL) == (ssize_t)sizeof(*m) ? 0 : -1;
}

/* The server's next message type, or -1. */
static int recv_type(int fd)
{
	struct memif_msg m;

	return recv(fd, &m, sizeof(m), 0) >= 2 ? m.type : -1;
}

static void *liar_thread(void *arg)
{
	struct liar *l = arg;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct memif_msg m;
	size_t size = 1 << 20;
	int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0), mfd = -1, t = -1;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) || recv_type(fd) != MSG_HELLO)
		goto out;
	m = (struct memif_msg){.type = MSG_INIT};
	m.init.version = MEMIF_VERSION;
	m.init.id = l->lie == LIE_WRONG_ID ? 8 : 7;
	if (send_msg(fd, &m, -1) || (t = recv_type(fd)) != MSG_ACK)
		goto last;
	mfd = memfd_create("liar", MFD_ALLOW_SEALING);
	if (ftruncate(mfd, (off_t)size) ||
	    (l->lie != LIE_UNSEALED && fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK)))
		goto out;
	m = (struct memif_msg){.type = MSG_ADD_REGION};
	m.add_region.size = l->lie == LIE_REGION_SIZE ? 2 * size : size;
	if (send_msg(fd, &m, mfd) || (t = recv_type(fd)) != MSG_ACK)
		goto last;
	m = (struct memif_msg){.type = MSG_ADD_RING};
	m.add_ring.flags = MEMIF_ADD_RING_FLAG_C2S;
	m.add_ring.offset = l->lie == LIE_RING_OUTSIDE ? (uint32_t)size - 128 : 0;
	m.add_ring.log2_ring_size = 4;
	if (send_msg(fd, &m, -1))
		goto out;
	t = recv_type(fd);
	if (l->lie == LIE_RING_TWICE && t == MSG_ACK) {
		if (send_msg(fd, &m, -1))
			goto out;
		t = recv_type(fd);
	}
last:
	l->last_type = t;
out:
	if (mfd >= 0)
		close(mfd);
	close(fd);
	__atomic_store_n(&l->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

START_TEST(test_lying_client_refused)
{
	struct dp_memif server;
	struct client_open c;
	struct liar l = {.lie = (enum lie)_i, .last_type = -1};
	pthread_t t;

	open_server(&server);
	ck_assert_int_eq(pthread_create(&t, NULL, liar_thread, &l), 0);
	while (!__atomic_load_n(&l.done, __ATOMIC_ACQUIRE)) {
		dp_memif_upkeep(&server, tick());
		usleep(1000);
	}
	pthread_join(t, NULL);
	ck_assert_int_eq(l.last_type, MSG_DISCONNECT);
	ck_assert(!server.connected);
	ck_assert_uint_eq(server.nregions, 0);
	/* and an honest client is taken next */
	connect_client(&server, &c, "rsize=4", 2000);
	ck_assert(server.connected);
	move_frames(&c.m, &server, 20, 1000);
	dp_memif_close(&c.m);
	dp_memif_close(&server);
}
END_TEST

/* Arming the interrupt: the next frame the peer publishes makes the fd readable, once. */
START_TEST(test_armed_interrupt)
{
	struct dp_memif server;
	struct client_open c;
	struct pollfd p = {.events = POLLIN};
	uint8_t f[64];
	const uint8_t *frames[1] = {f};
	uint32_t lens[1] = {64}, len;
	uint64_t n;

	open_server(&server);
	/* no client yet: the listening socket says when one comes */
	{
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);

		p.fd = dp_memif_arm(&server);
		ck_assert_int_eq(p.fd, server.listen_fd);
		ck_assert_int_eq(poll(&p, 1, 0), 0);
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
		ck_assert_int_eq(connect(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
		ck_assert_int_eq(poll(&p, 1, 1000), 1);
		close(s);
		dp_memif_upkeep(&server, tick()); /* takes it, and its handshake fails */
		ck_assert(!server.connected);
	}
	connect_client(&server, &c, "rsize=4", 2000);
	make_frame(f, 64, 1);
	p.fd = dp_memif_arm(&server);
	ck_assert_int_ge(p.fd, 0);
	ck_assert_int_eq(poll(&p, 1, 0), 0); /* nothing yet */
	ck_assert_uint_eq(dp_memif_tx(&c.m, frames, lens, 1), 1);
	ck_assert_int_eq(poll(&p, 1, 1000), 1);
	/* traffic seen: masked, so the next frame signals nothing more */
	dp_memif_mask(&server);
	ck_assert_uint_eq(dp_memif_tx(&c.m, frames, lens, 1), 1);
	ck_assert_int_eq(read(p.fd, &n, sizeof(n)), sizeof(n));
	ck_assert_uint_eq(n, 1);
	dp_memif_disarm(&server);
	/* frames waiting: arming refuses, the caller must not sleep */
	ck_assert_int_eq(dp_memif_arm(&server), -EAGAIN);
	ck_assert_ptr_nonnull(dp_memif_rx_next(&server, &len));
	ck_assert_ptr_nonnull(dp_memif_rx_next(&server, &len));
	dp_memif_rx_done(&server);
	ck_assert_int_ge(dp_memif_arm(&server), 0);
	dp_memif_disarm(&server);
	dp_memif_close(&c.m);
	dp_memif_close(&server);
}
END_TEST

START_TEST(test_client_without_server)
{
	struct dp_memif c;
	uint8_t f[64] = {0};
	const uint8_t *frames[1] = {f};
	uint32_t lens[1] = {64}, len;

	/* no one listens: open returns, link down, frames go nowhere */
	ck_assert_int_eq(dp_memif_open(&c, "role=client,id=0,socket=/tmp/uroce-no-such.sock", 2048,
				       100, NULL, NULL),
			 0);
	ck_assert(!c.connected);
	ck_assert_int_eq(c.connect_err, -ENOENT);
	ck_assert(dp_memif_peer_absent(&c)); /* the daemon's socket is gone */
	ck_assert_uint_eq(dp_memif_tx(&c, frames, lens, 1), 0);
	ck_assert_ptr_null(dp_memif_rx_next(&c, &len));
	dp_memif_close(&c);
}
END_TEST

/*
 * A server that listens but does not shake hands (a loaded daemon, slow to
 * answer): the client is not connected, yet someone is there. Its failed
 * handshake must not read as nobody listening, which a program's device
 * takes for its daemon gone for good (DEVICE_FATAL after 5 s).
 */
START_TEST(test_silent_server_is_not_absent)
{
	struct dp_memif c;
	char args[160];
	int l = silent_listener();

	snprintf(args, sizeof(args), "role=client,id=7,socket=%s", sock_path);
	/* one try: connect is taken by the backlog, the HELLO never comes */
	ck_assert_int_eq(dp_memif_open(&c, args, 2048, 0, NULL, NULL), 0);
	ck_assert(!c.connected);
	ck_assert_int_ne(c.connect_err, 0);
	ck_assert(!dp_memif_peer_absent(&c));
	dp_memif_close(&c);
	/* the socket file stays, nobody listens on it any more: refused, absent */
	close(l);
	ck_assert_int_eq(dp_memif_open(&c, args, 2048, 0, NULL, NULL), 0);
	ck_assert_int_eq(c.connect_err, -ECONNREFUSED);
	ck_assert(dp_memif_peer_absent(&c));
	dp_memif_close(&c);
	unlink(sock_path);
}
END_TEST

/* One message of a loan from the socket, its fd in *fd (or -1). */
static void recv_part(int sock, struct memif_msg *msg, int *fd)
{
	struct iovec iov = {.iov_base = msg, .iov_len = sizeof(*msg)};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} c;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf,
			    .msg_controllen = sizeof(c.buf)};
	struct cmsghdr *h;

	ck_assert_int_eq(recvmsg(sock, &mh, MSG_CMSG_CLOEXEC), (int)sizeof(*msg));
	h = CMSG_FIRSTHDR(&mh);
	*fd = -1;
	if (h && h->cmsg_type == SCM_RIGHTS)
		memcpy(fd, CMSG_DATA(h), sizeof(int));
}

/* The rings of `owner` lent over a socket pair into `loan`. */
static void lend(struct dp_memif *owner, struct dp_memif *loan)
{
	struct memif_msg msg;
	int sv[2], fd, r;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	ck_assert_int_eq(dp_memif_lend(owner, sv[0], 7), 0);
	dp_memif_loan_start(loan);
	do {
		recv_part(sv[1], &msg, &fd);
		ck_assert_uint_eq(dp_memif_msg_gen(&msg), 7);
		r = dp_memif_borrow(loan, &msg, fd);
		ck_assert_int_ge(r, 0);
	} while (!r);
	ck_assert(loan->connected && loan->borrowed);
	close(sv[0]);
	close(sv[1]);
}

/*
 * Pass-through: the side that holds the connection (_i 0 the server, 1 the
 * client) lends its rings mid-traffic, the borrower carries on both ways
 * from exactly where it stopped, and after the loan comes back the owner
 * does; every frame arrives once, in order, each side's rings as the other
 * left them.
 */
START_TEST(test_lend_and_take_back)
{
	struct dp_memif server, loan, *owner, *peer;
	struct client_open c;

	open_server(&server);
	connect_client(&server, &c, "rsize=6", 2000);
	owner = _i ? &c.m : &server;
	peer = _i ? &server : &c.m;
	/* 100 frames: the indices stand mid-way round the 64-slot rings */
	move_from(owner, peer, 0, 100, 4200);
	move_from(peer, owner, 0, 100, 4200);
	lend(owner, &loan);
	ck_assert_uint_eq(loan.server, owner->server);
	move_from(&loan, peer, 100, 150, 4200);
	move_from(peer, &loan, 100, 150, 4200);
	ck_assert_uint_eq(loan.bad_desc, 0);
	dp_memif_give_back(&loan);
	dp_memif_resync(owner);
	move_from(owner, peer, 250, 100, 4200);
	move_from(peer, owner, 250, 100, 4200);
	both_ways_then_close(&server, &c.m, 10);
}
END_TEST

/*
 * A borrower that dies mid-burst: what it read and had not given back is
 * read again by the owner, what it wrote and had not published never
 * reached the peer, and the rest flows on.
 */
START_TEST(test_borrower_dies_mid_burst)
{
	struct dp_memif server, loan, *owner, *peer;
	struct client_open c;
	const uint8_t *f;
	uint32_t len, cap, flen;

	open_server(&server);
	connect_client(&server, &c, "rsize=6", 2000);
	owner = _i ? &c.m : &server;
	peer = _i ? &server : &c.m;
	move_from(peer, owner, 0, 70, 4200);
	lend(owner, &loan);
	/* the peer sends 70..79; the borrower reads 5 of them, gives none back */
	for (uint32_t seq = 70; seq < 80; seq++) {
		static uint8_t big[4200];
		const uint8_t *fp = big;

		flen = frame_len(seq, 4200);
		make_frame(big, flen, seq);
		ck_assert_uint_eq(dp_memif_tx(peer, &fp, &flen, 1), 1);
	}
	for (int k = 0; k < 5; k++)
		ck_assert_ptr_nonnull(dp_memif_rx_next(&loan, &len));
	/* and writes 3 frames it never publishes */
	for (int k = 0; k < 3; k++) {
		uint8_t *b = dp_memif_tx_reserve(&loan, 100, &cap);

		ck_assert_ptr_nonnull(b);
		memset(b, 0xee, 100);
		dp_memif_tx_commit(&loan, 100);
	}
	dp_memif_give_back(&loan);
	dp_memif_resync(owner);
	for (uint32_t seq = 70; seq < 80; seq++) {
		f = dp_memif_rx_next(owner, &len);
		ck_assert_ptr_nonnull(f);
		check_frame(f, len, frame_len(seq, 4200), seq);
	}
	ck_assert_ptr_null(dp_memif_rx_next(owner, &len));
	dp_memif_rx_done(owner);
	ck_assert(!dp_memif_rx_pending(peer));
	move_from(owner, peer, 0, 100, 4200);
	both_ways_then_close(&server, &c.m, 10);
}
END_TEST

/* Descriptors open in this process. */
static unsigned open_fds(void)
{
	unsigned n = 0;

	for (int fd = 0; fd < 4096; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

/* A region of `size` bytes offered in a loan (sealed against shrinking, or not): what borrow says. */
static int offer_region(struct dp_memif *loan, uint64_t size, bool sealed)
{
	struct memif_msg msg = {.type = MSG_UROCE_LEND_REGION};
	int fd = memfd_create("loan", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
	if (sealed)
		ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
	msg.lend_part.size = size;
	return dp_memif_borrow(loan, &msg, fd);
}

/* A loan's last message: one region, rings of 64 slots of 2 KiB. */
static int offer_end(struct dp_memif *loan)
{
	struct memif_msg msg = {.type = MSG_UROCE_LEND};

	msg.lend.nregions = 1;
	msg.lend.ring_size = 64;
	msg.lend.bsize = 2048;
	return dp_memif_borrow(loan, &msg, -1);
}

/* A loan that does not hold together is refused, whole, and leaks nothing. */
START_TEST(test_bad_loan_refused)
{
	struct memif_msg msg;
	struct dp_memif loan;
	unsigned fds = open_fds();

	dp_memif_loan_start(&loan);
	/* the rings' eventfds never came: the loan is incomplete */
	ck_assert_int_eq(offer_region(&loan, 65536, true), 0);
	ck_assert_int_eq(offer_end(&loan), -EINVAL);
	ck_assert_uint_eq(loan.nregions, 0);
	/* a ring past its region's end */
	ck_assert_int_eq(offer_region(&loan, 4096, true), 0);
	for (int c2s = 1; c2s >= 0; c2s--) {
		msg = (struct memif_msg){.type = MSG_UROCE_LEND_RING};
		msg.lend_part.c2s = (uint8_t)c2s;
		msg.lend_part.offset = c2s ? 0 : 3072; /* 128 + 64 x 16 bytes: past 4096 */
		ck_assert_int_eq(dp_memif_borrow(&loan, &msg, eventfd(0, EFD_CLOEXEC)), 0);
	}
	ck_assert_int_eq(offer_end(&loan), -EINVAL);
	ck_assert_uint_eq(loan.nregions, 0);
	ck_assert_int_eq(loan.c2s_fd, -1);
	/* a region that could shrink under us */
	ck_assert_int_eq(offer_region(&loan, 65536, false), -EINVAL);
	ck_assert_uint_eq(open_fds(), fds);
}
END_TEST

/*
 * Between a device daemon and its program: frames marked as the wire's
 * arrive marked, whole or in pieces, and unmarked ones unmarked; a loan
 * taken back by force is said in the program's own ring, for that loan only.
 */
START_TEST(test_wire_mark_and_revoke)
{
	static uint8_t big[6000], small[100];
	const uint8_t *f, *frames[2] = {big, small};
	uint32_t lens[2] = {sizeof(big), sizeof(small)}, len;
	struct dp_memif server;
	struct client_open c;

	open_server(&server);
	connect_client(&server, &c, "rsize=6,bsize=2048", 2000);
	make_frame(big, sizeof(big), 1);
	make_frame(small, sizeof(small), 2);
	server.tx_flags = DP_MEMIF_DESC_WIRE;
	ck_assert_uint_eq(dp_memif_tx(&server, frames, lens, 2), 2);
	server.tx_flags = 0;
	ck_assert_uint_eq(dp_memif_tx(&server, &frames[1], &lens[1], 1), 1);
	for (uint32_t k = 0; k < 3; k++) {
		f = dp_memif_rx_next(&c.m, &len);
		ck_assert_ptr_nonnull(f);
		check_frame(f, len, k ? sizeof(small) : sizeof(big), k ? 2 : 1);
		ck_assert_uint_eq(c.m.rx_flags, k < 2 ? DP_MEMIF_DESC_WIRE : 0);
	}
	dp_memif_rx_done(&c.m);
	ck_assert(!dp_memif_revoked(&c.m, 3));
	dp_memif_revoke(&server, 3);
	ck_assert(dp_memif_revoked(&c.m, 3));
	ck_assert(!dp_memif_revoked(&c.m, 4));
	both_ways_then_close(&server, &c.m, 10);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("memif");
	TCase *tc = tcase_create("memif");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_frames_both_ways);
	tcase_add_test(tc, test_frames_in_pieces);
	tcase_add_test(tc, test_bad_descriptor_is_skipped);
	tcase_add_test(tc, test_second_client_refused_then_replacement_taken);
	tcase_add_test(tc, test_client_memory_across_connections);
	tcase_add_test(tc, test_frames_built_in_the_ring);
	tcase_add_test(tc, test_stamps_reach_the_client);
	tcase_add_test(tc, test_rx_wait_arithmetic);
	tcase_add_test(tc, test_kept_indices);
	tcase_add_test(tc, test_armed_interrupt);
	tcase_add_loop_test(tc, test_lying_client_refused, LIE_WRONG_ID, LIE_RING_TWICE + 1);
	tcase_add_test(tc, test_client_without_server);
	tcase_add_test(tc, test_silent_server_is_not_absent);
	tcase_add_loop_test(tc, test_lend_and_take_back, 0, 2);
	tcase_add_loop_test(tc, test_borrower_dies_mid_burst, 0, 2);
	tcase_add_test(tc, test_bad_loan_refused);
	tcase_add_test(tc, test_wire_mark_and_revoke);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
