/* SPDX-License-Identifier: BSD-2-Clause */
/* Transmitting over af_packet on a socket of our own (afp_tx.c explains why). */
#ifndef UROCE_AFP_TX_H
#define UROCE_AFP_TX_H

struct rte_mbuf;

/* A packet socket on `netdev` that transmits only: its fd, or -errno. */
int dp_afp_tx_open(const char *netdev);
/* Send m[0..n) in one system call; frees them all, returns how many went out. */
unsigned dp_afp_tx(int fd, struct rte_mbuf **m, unsigned n);

#endif
