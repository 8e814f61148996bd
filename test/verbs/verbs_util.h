/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What every stock-libibverbs test program here needs, in one place: a
 * CHECK that counts failures, a die() for setup that cannot go on, opening
 * a device by name, taking an RC QP through INIT, RTR and RTS toward a GID
 * and QPN, waiting for a completion, and the TCP connection over which two
 * processes (two namespaces) swap QPNs, GIDs and keys. It knows nothing of
 * uroce: the programs would pass on any RoCE device.
 *
 * Messages start with vtest_name (the program's name, and its role where it
 * has two), which the program sets first.
 */
#ifndef UR_VERBS_UTIL_H
#define UR_VERBS_UTIL_H

#include <stdint.h>
#include <stdio.h>

#include <infiniband/verbs.h>

extern const char *vtest_name;
extern int vtest_failures;

/* A failed check is printed and counted; the program goes on. */
#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s: FAIL %s:%d: ", vtest_name, __FILE__, __LINE__);       \
			fprintf(stderr, __VA_ARGS__);                                              \
			fprintf(stderr, "\n");                                                     \
			vtest_failures++;                                                          \
		}                                                                                  \
	} while (0)

/* "NAME: what: strerror(errno)", exit 1. */
_Noreturn void vtest_die(const char *what);

/* The device called `name` (the first one if NULL), open; exits if there is none. */
struct ibv_context *vtest_open_device(const char *name);

/*
 * INIT -> RTR -> RTS toward QP `dqpn` at `dgid` through port 1: MTU 1024,
 * both PSNs `psn`, 4 READs/atomics each way, retry and RNR retry 7, remote
 * `access`. Exits on a refusal.
 */
void vtest_connect_rc(struct ibv_qp *qp, uint32_t dqpn, const union ibv_gid *dgid, int sgid_index,
		      uint32_t psn, unsigned int access);

/* One completion of `cq`, within about 20 s; past that a failed CHECK and IBV_WC_GENERAL_ERR. */
struct ibv_wc vtest_wait_wc(struct ibv_cq *cq);

/*
 * The TCP connection between the two processes: the server listens on
 * `port` (IPv4 and IPv6) and takes one client; the client tries `host` for
 * wait_s seconds (the server may still be starting). A socket with
 * TCP_NODELAY, or -1.
 */
int vtest_tcp_accept(const char *port);
int vtest_tcp_connect(const char *host, const char *port, int wait_s);

#endif
