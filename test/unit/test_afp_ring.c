/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The af_packet receive ring (dataplane/afp_rx.c): a VLAN tag the kernel
 * took out is put back where it was, and frames sent on a loopback
 * interface come out of the ring whole, in order, across its wrap. The
 * ring test needs a network namespace of its own (root): without one it is
 * skipped, the tag test runs anyway.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/if_packet.h>

#include "afp_rx.h"

#define ETHERTYPE_TEST 0x88b5 /* local experimental: the kernel leaves it alone */

/* A slot as the kernel fills it: header, then the frame at tp_mac. */
static uint8_t slot[2048] __attribute__((aligned(16)));

static struct tpacket2_hdr *fill_slot(uint32_t status, uint16_t tci, uint16_t tpid)
{
	struct tpacket2_hdr *h = (struct tpacket2_hdr *)slot;
	uint8_t *f = slot + 66;

	memset(slot, 0, sizeof(slot));
	h->tp_status = status;
	h->tp_mac = 66;
	h->tp_snaplen = 60;
	h->tp_len = 60;
	h->tp_vlan_tci = tci;
	h->tp_vlan_tpid = tpid;
	memset(f, 0x02, 6);
	memset(f + 6, 0x04, 6);
	f[12] = 0x08;
	f[13] = 0x00;
	for (unsigned i = 14; i < 60; i++)
		f[i] = (uint8_t)i;
	return h;
}

START_TEST(test_vlan_tag_put_back)
{
	struct tpacket2_hdr *h;
	const uint8_t *f;
	uint32_t len;

	/* no tag: the frame as it is */
	h = fill_slot(TP_STATUS_USER, 0, 0);
	f = dp_afp_frame(h, &len);
	ck_assert_ptr_eq(f, slot + 66);
	ck_assert_uint_eq(len, 60);

	/* 802.1ad tag: TPID and TCI before the EtherType, addresses kept */
	h = fill_slot(TP_STATUS_USER | TP_STATUS_VLAN_VALID | TP_STATUS_VLAN_TPID_VALID, 0x2123,
		      0x88a8);
	f = dp_afp_frame(h, &len);
	ck_assert_uint_eq(len, 64);
	for (unsigned i = 0; i < 6; i++) {
		ck_assert_uint_eq(f[i], 0x02);
		ck_assert_uint_eq(f[6 + i], 0x04);
	}
	ck_assert_uint_eq(f[12] << 8 | f[13], 0x88a8);
	ck_assert_uint_eq(f[14] << 8 | f[15], 0x2123);
	ck_assert_uint_eq(f[16] << 8 | f[17], 0x0800);
	for (unsigned i = 18; i < 64; i++)
		ck_assert_uint_eq(f[i], (uint8_t)(i - 4));

	/* a tag without its TPID: 802.1Q */
	h = fill_slot(TP_STATUS_USER | TP_STATUS_VLAN_VALID, 7, 0);
	f = dp_afp_frame(h, &len);
	ck_assert_uint_eq(f[12] << 8 | f[13], 0x8100);
	ck_assert_uint_eq(f[14] << 8 | f[15], 7);
}
END_TEST

/* A namespace of our own with its loopback up: false if not allowed. */
static bool own_loopback(void)
{
	struct ifreq ifr = {0};
	int fd;
	bool ok;

	if (unshare(CLONE_NEWNET))
		return false;
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		return false;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	ok = !ioctl(fd, SIOCGIFFLAGS, &ifr);
	ifr.ifr_flags |= IFF_UP;
	ok = ok && !ioctl(fd, SIOCSIFFLAGS, &ifr);
	close(fd);
	return ok;
}

static void send_frame(int fd, uint32_t seq, unsigned len)
{
	uint8_t f[256] = {0};

	f[12] = ETHERTYPE_TEST >> 8;
	f[13] = ETHERTYPE_TEST & 0xff;
	memcpy(f + 14, &seq, sizeof(seq));
	for (unsigned i = 18; i < len; i++)
		f[i] = (uint8_t)(seq + i);
	ck_assert_int_eq(send(fd, f, len, 0), (int)len);
}

/* The next frame of ours from the ring, waiting up to a second for it. */
static void receive_frame(struct dp_afp_ring *r, uint32_t seq, unsigned len)
{
	struct pollfd p = {.fd = r->fd, .events = POLLIN};
	struct tpacket2_hdr *h;
	const uint8_t *f;
	uint32_t got, n;

	for (;;) {
		h = dp_afp_next(r);
		if (!h) {
			ck_assert_int_eq(poll(&p, 1, 1000), 1);
			continue;
		}
		f = dp_afp_frame(h, &n);
		if (n >= 14 && (f[12] << 8 | f[13]) == ETHERTYPE_TEST)
			break;
		dp_afp_release(r, h); /* the kernel's own traffic, if any */
	}
	memcpy(&got, f + 14, sizeof(got));
	ck_assert_uint_eq(got, seq);
	ck_assert_uint_eq(n, len);
	for (unsigned i = 18; i < len; i++)
		ck_assert_uint_eq(f[i], (uint8_t)(seq + i));
	dp_afp_release(r, h);
}

START_TEST(test_frames_come_out_whole_and_in_order)
{
	struct sockaddr_ll sll = {.sll_family = AF_PACKET};
	struct dp_afp_ring r;
	uint32_t seq = 0;
	int tx;

	if (!own_loopback())
		return; /* not root: nothing to test here */
	sll.sll_ifindex = (int)if_nametoindex("lo");
	/* 7 slots of 4608 bytes in each 32 KB block, 512 bytes left at its
	 * end: 64 slots asked for, 70 made; the frames step over each gap */
	ck_assert_int_eq(dp_afp_ring_open(&r, "lo", 4608, 64, NULL), 0);
	ck_assert_uint_eq(r.frame_count, 70);
	ck_assert_uint_eq(r.frames_per_block, 7);
	ck_assert_uint_eq(r.block_size, 32768);
	tx = socket(AF_PACKET, SOCK_RAW, 0);
	ck_assert_int_ge(tx, 0);
	ck_assert_int_eq(bind(tx, (struct sockaddr *)&sll, sizeof(sll)), 0);

	/* three times round the ring, in bursts that straddle its end */
	for (unsigned burst = 0; burst < 12; burst++) {
		uint32_t first = seq;

		for (unsigned i = 0; i < 17; i++, seq++)
			send_frame(tx, seq, 60 + seq % 190);
		for (uint32_t s = first; s < seq; s++)
			receive_frame(&r, s, 60 + s % 190);
	}
	ck_assert_uint_eq(r.head, (12 * 17) % 70);
	ck_assert_ptr_null(dp_afp_next(&r));
	close(tx);
	dp_afp_ring_close(&r);
	ck_assert_int_eq(r.fd, -1);
}
END_TEST

START_TEST(test_no_such_interface)
{
	struct dp_afp_ring r;

	ck_assert_int_lt(dp_afp_ring_open(&r, "no-such-if0", 2048, 64, NULL), 0);
	ck_assert_int_eq(r.fd, -1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("afp_ring");
	TCase *tc = tcase_create("afp_ring");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_vlan_tag_put_back);
	tcase_add_test(tc, test_frames_come_out_whole_and_in_order);
	tcase_add_test(tc, test_no_such_interface);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
