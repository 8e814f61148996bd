/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The steering program (dataplane/steer_bpf.c), run by the kernel itself:
 * classic BPF filters attach to any socket, so the program sits on one end
 * of a datagram socket pair and each crafted frame either arrives or does
 * not. Frames are built by hand, byte by byte, so a wrong offset in the
 * program cannot hide behind the same mistake in a shared builder.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "steer_bpf.h"

#define SHIFT 12
#define FRAME_MAX 256

struct frame {
	uint8_t b[FRAME_MAX];
	unsigned len;
};

static void put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v);
}

static unsigned eth(struct frame *f, uint16_t type)
{
	memset(f, 0, sizeof(*f));
	memset(f->b, 0x02, 6);
	memset(f->b + 6, 0x04, 6);
	put16(f->b + 12, type);
	return 14;
}

/* IPv4 + UDP to `dport`, with `opt_words` words of IP options; returns the UDP payload offset. */
static unsigned ipv4_udp(struct frame *f, uint16_t dport, unsigned opt_words, uint16_t frag)
{
	unsigned l3 = eth(f, 0x0800), ihl = 5 + opt_words, l4 = l3 + ihl * 4;

	f->b[l3] = (uint8_t)(0x40 | ihl);
	put16(f->b + l3 + 6, frag);
	f->b[l3 + 8] = 64;
	f->b[l3 + 9] = 17;
	put16(f->b + l4, 49152);
	put16(f->b + l4 + 2, dport);
	return l4 + 8;
}

static unsigned ipv6(struct frame *f, uint8_t next)
{
	unsigned l3 = eth(f, 0x86dd);

	f->b[l3] = 0x60;
	f->b[l3 + 6] = next;
	f->b[l3 + 7] = 64;
	return l3 + 40;
}

static unsigned ipv6_udp(struct frame *f, uint16_t dport)
{
	unsigned l4 = ipv6(f, 17);

	put16(f->b + l4, 49152);
	put16(f->b + l4 + 2, dport);
	return l4 + 8;
}

/* A BTH (opcode RC WRITE ONLY) to `dqpn` at `off`, with a payload behind it. */
static void bth(struct frame *f, unsigned off, uint32_t dqpn)
{
	f->b[off] = 0x0a;
	put16(f->b + off + 2, 0xffff);
	/* the reserved byte before DestQP all ones: the program must mask it */
	put32(f->b + off + 4, 0xff000000u | dqpn);
	put32(f->b + off + 8, 0x80000123);
	f->len = off + 12 + 16 + 4;
}

/* uroce's SR control datagram (UDP 4792): dqpn at payload offset 8. */
static void sr_ctrl(struct frame *f, unsigned off, uint32_t dqpn)
{
	put32(f->b + off, 0x55525352);
	f->b[off + 4] = 1;
	put32(f->b + off + 8, dqpn);
	put32(f->b + off + 12, 0x1001);
	f->len = off + 16;
}

static int sv[2] = {-1, -1};

static void attach(const uint32_t *blocks, unsigned n)
{
	struct sock_filter insn[DP_STEER_MAX_INSNS];
	struct sock_fprog fp;
	int len = dp_steer_build(insn, DP_STEER_MAX_INSNS, blocks, n, SHIFT);

	ck_assert_int_gt(len, 0);
	fp.len = (unsigned short)len;
	fp.filter = insn;
	ck_assert_int_eq(setsockopt(sv[1], SOL_SOCKET, SO_ATTACH_FILTER, &fp, sizeof(fp)), 0);
}

static void setup(void)
{
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv), 0);
}

static void teardown(void)
{
	close(sv[0]);
	close(sv[1]);
}

/* Did the frame get through the filter on sv[1]? */
static bool passes(const struct frame *f)
{
	uint8_t buf[FRAME_MAX];
	ssize_t n;

	ck_assert_int_eq(send(sv[0], f->b, f->len, 0), (ssize_t)f->len);
	n = recv(sv[1], buf, sizeof(buf), MSG_DONTWAIT);
	if (n < 0) {
		ck_assert_int_eq(errno, EAGAIN);
		return false;
	}
	ck_assert_int_eq(n, (ssize_t)f->len); /* accepted whole, not snapped */
	return true;
}

START_TEST(test_roce_v4_by_block)
{
	const uint32_t mine[] = {5, 17};
	struct frame f;

	attach(mine, 2);
	for (uint32_t b = 0; b < 4096; b += (b < 40 ? 1 : 97)) {
		bool want = b == 5 || b == 17;

		/* first, last and a middle number of the block */
		for (uint32_t i = 0; i < 4096; i += 2047) {
			bth(&f, ipv4_udp(&f, 4791, 0, 0), b << SHIFT | i);
			ck_assert_msg(passes(&f) == want, "QPN %#x", b << SHIFT | i);
		}
	}
}
END_TEST

START_TEST(test_ipv4_options_and_fragments)
{
	const uint32_t mine[] = {9};
	struct frame f;

	attach(mine, 1);
	for (unsigned opt = 0; opt <= 10; opt++) {
		/* the UDP header moves with the options: a fixed offset would miss */
		bth(&f, ipv4_udp(&f, 4791, opt, 0), 9u << SHIFT | 3);
		ck_assert_msg(passes(&f), "%u option words", opt);
		bth(&f, ipv4_udp(&f, 4791, opt, 0), 10u << SHIFT | 3);
		ck_assert_msg(!passes(&f), "%u option words", opt);
	}
	/* DF alone is fine; a later fragment has no UDP header to read */
	bth(&f, ipv4_udp(&f, 4791, 0, 0x4000), 9u << SHIFT);
	ck_assert(passes(&f));
	bth(&f, ipv4_udp(&f, 4791, 0, 0x0010), 9u << SHIFT);
	ck_assert(!passes(&f));
}
END_TEST

START_TEST(test_roce_v6_and_nd)
{
	const uint32_t mine[] = {0xfff};
	struct frame f;

	attach(mine, 1);
	bth(&f, ipv6_udp(&f, 4791), 0xfff000 | 77);
	ck_assert(passes(&f));
	bth(&f, ipv6_udp(&f, 4791), 0xffe000 | 77);
	ck_assert(!passes(&f));
	f.len = ipv6(&f, 58) + 24; /* a neighbour solicitation: every process's business */
	ck_assert(passes(&f));
	f.len = ipv6(&f, 6) + 20; /* TCP: the kernel's */
	ck_assert(!passes(&f));
}
END_TEST

START_TEST(test_sr_control)
{
	const uint32_t mine[] = {3};
	struct frame f;

	attach(mine, 1);
	sr_ctrl(&f, ipv4_udp(&f, 4792, 0, 0), 3u << SHIFT | 1);
	ck_assert(passes(&f));
	sr_ctrl(&f, ipv4_udp(&f, 4792, 0, 0), 4u << SHIFT | 1);
	ck_assert(!passes(&f));
	sr_ctrl(&f, ipv6_udp(&f, 4792), 3u << SHIFT | 1);
	ck_assert(passes(&f));
	sr_ctrl(&f, ipv6_udp(&f, 4792), 2u << SHIFT | 1);
	ck_assert(!passes(&f));
}
END_TEST

START_TEST(test_other_traffic)
{
	const uint32_t mine[] = {0, 1}; /* block 0 holds QPN 1 (GSI) */
	struct frame f;

	attach(mine, 2);
	bth(&f, ipv4_udp(&f, 4791, 0, 0), 1);
	ck_assert(passes(&f));
	f.len = eth(&f, 0x0806) + 28; /* ARP */
	ck_assert(passes(&f));
	f.len = eth(&f, 0x8100) + 64; /* a tag left in the frame: the engine decides */
	ck_assert(passes(&f));
	f.len = eth(&f, 0x88cc) + 64; /* LLDP */
	ck_assert(!passes(&f));
	bth(&f, ipv4_udp(&f, 4790, 0, 0), 1); /* another UDP port */
	ck_assert(!passes(&f));
	bth(&f, ipv4_udp(&f, 4791, 0, 0), 1);
	f.b[14 + 9] = 6; /* TCP */
	ck_assert(!passes(&f));
}
END_TEST

/* Before a process holds a block its socket is already open: no RoCE frame
 * gets in (they are other processes'), neighbour traffic does. */
START_TEST(test_no_blocks_yet)
{
	struct frame f;

	attach(NULL, 0);
	for (uint32_t qpn = 0; qpn < 1u << 24; qpn += 0x10001) {
		bth(&f, ipv4_udp(&f, 4791, 0, 0), qpn);
		ck_assert_msg(!passes(&f), "QPN %#x", qpn);
		bth(&f, ipv6_udp(&f, 4791), qpn);
		ck_assert_msg(!passes(&f), "QPN %#x", qpn);
	}
	sr_ctrl(&f, ipv4_udp(&f, 4792, 0, 0), 1);
	ck_assert(!passes(&f));
	f.len = eth(&f, 0x0806) + 28;
	ck_assert(passes(&f));
	f.len = ipv6(&f, 58) + 24;
	ck_assert(passes(&f));
}
END_TEST

START_TEST(test_many_blocks_and_limits)
{
	uint32_t blocks[DP_STEER_MAX_BLOCKS + 1];
	struct sock_filter insn[DP_STEER_MAX_INSNS];
	struct frame f;

	for (unsigned i = 0; i <= DP_STEER_MAX_BLOCKS; i++)
		blocks[i] = 1 + 2 * i;
	ck_assert_int_eq(dp_steer_build(insn, DP_STEER_MAX_INSNS, blocks, DP_STEER_MAX_BLOCKS + 1,
					SHIFT), -EINVAL);
	ck_assert_int_eq(dp_steer_build(insn, 20, blocks, 4, SHIFT), -E2BIG);
	/* the most blocks: every jump still reaches its target */
	attach(blocks, DP_STEER_MAX_BLOCKS);
	bth(&f, ipv4_udp(&f, 4791, 0, 0), blocks[0] << SHIFT);
	ck_assert(passes(&f));
	bth(&f, ipv4_udp(&f, 4791, 0, 0), blocks[DP_STEER_MAX_BLOCKS - 1] << SHIFT | 0xfff);
	ck_assert(passes(&f));
	bth(&f, ipv4_udp(&f, 4791, 0, 0), 2u << SHIFT);
	ck_assert(!passes(&f));
	/* widening replaces the program atomically */
	attach(blocks, 1);
	bth(&f, ipv4_udp(&f, 4791, 0, 0), blocks[1] << SHIFT);
	ck_assert(!passes(&f));
	attach(blocks, 2);
	ck_assert(passes(&f));
}
END_TEST

static Suite *steer_suite(void)
{
	Suite *s = suite_create("steer");
	TCase *tc = tcase_create("steer");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_roce_v4_by_block);
	tcase_add_test(tc, test_ipv4_options_and_fragments);
	tcase_add_test(tc, test_roce_v6_and_nd);
	tcase_add_test(tc, test_sr_control);
	tcase_add_test(tc, test_other_traffic);
	tcase_add_test(tc, test_no_blocks_yet);
	tcase_add_test(tc, test_many_blocks_and_limits);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	sr = srunner_create(steer_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
