/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Packet capture: every RoCE frame the device sends or receives, written
 * with libpcap so tshark and Wireshark read it as they read tcpdump's.
 * When capture is off, the data path pays one pointer test.
 */
#define _GNU_SOURCE
#include <pcap/pcap.h>
#include <stdlib.h>
#include <sys/time.h>

#include "dp_internal.h"

struct dp_capture {
	pcap_t *pcap;
	pcap_dumper_t *dumper;
	unsigned since_flush;
};

int dp_capture_open(struct uroce_dp *dp, const char *path)
{
	struct dp_capture *c = calloc(1, sizeof(*c));

	if (!c)
		return -1;
	c->pcap = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 65535,
						       PCAP_TSTAMP_PRECISION_NANO);
	if (c->pcap)
		c->dumper = pcap_dump_open(c->pcap, path);
	if (!c->dumper) {
		if (c->pcap)
			pcap_close(c->pcap);
		free(c);
		return -1;
	}
	dp->capture = c;
	return 0;
}

void dp_capture_frame(struct uroce_dp *dp, const uint8_t *frame, uint32_t len, uint64_t now)
{
	struct dp_capture *c = dp->capture;
	struct pcap_pkthdr h;
	struct timeval tv;

	(void)now;
	gettimeofday(&tv, NULL);
	h.ts = tv;
	h.ts.tv_usec = tv.tv_usec * 1000; /* nanosecond precision file */
	h.caplen = h.len = len;
	pcap_dump((u_char *)c->dumper, &h, frame);
	/* flush now and then, so a capture read while the program runs is whole */
	if (++c->since_flush >= 64) {
		pcap_dump_flush(c->dumper);
		c->since_flush = 0;
	}
}

void dp_capture_close(struct uroce_dp *dp)
{
	struct dp_capture *c = dp->capture;

	if (!c)
		return;
	pcap_dump_close(c->dumper);
	pcap_close(c->pcap);
	free(c);
	dp->capture = NULL;
}
