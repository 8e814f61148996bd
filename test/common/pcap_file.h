/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A minimal reader of classic pcap files (not pcapng) for tests: the whole
 * file is read into memory and each record is handed out in turn. Both byte
 * orders and both timestamp resolutions are accepted.
 */
#ifndef UR_PCAP_FILE_H
#define UR_PCAP_FILE_H

#include <stddef.h>
#include <stdint.h>

#define UR_PCAP_LINKTYPE_ETHERNET 1

struct ur_pcap_file;

struct ur_pcap_rec {
	const uint8_t *data; /* valid until ur_pcap_close() */
	size_t len;	     /* bytes captured */
	size_t orig_len;     /* bytes on the wire */
	uint64_t ts_ns;	     /* capture time, nanoseconds since the epoch */
};

/* Returns 0, or -errno (-EINVAL: not a classic pcap file). */
int ur_pcap_open(struct ur_pcap_file **out, const char *path);

/* The file's link type (UR_PCAP_LINKTYPE_*). */
uint32_t ur_pcap_linktype(const struct ur_pcap_file *f);

/* Returns 1 and fills rec, 0 at the end, or -EINVAL for a truncated or corrupt record. */
int ur_pcap_next(struct ur_pcap_file *f, struct ur_pcap_rec *rec);

void ur_pcap_close(struct ur_pcap_file *f);

#endif
