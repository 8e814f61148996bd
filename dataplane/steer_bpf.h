/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The classic BPF program that steers received frames to the process that
 * owns their destination QP (see steer_bpf.c). No DPDK here: the unit test
 * runs the program in the kernel on an ordinary socket.
 */
#ifndef UROCE_STEER_BPF_H
#define UROCE_STEER_BPF_H

#include <stdint.h>
#include <linux/filter.h>

#define DP_STEER_MAX_INSNS 256
#define DP_STEER_MAX_BLOCKS 200 /* keeps every conditional jump within 255 */

/*
 * Build into insn[max] a program that accepts incoming ARP, ICMPv6 and
 * in-frame VLAN-tagged frames, and RoCEv2 (UDP 4791) and SR control
 * (UDP 4792) frames whose destination QP >> shift is one of blocks[n];
 * everything else, and everything outgoing, is dropped.
 * Returns the number of instructions or -errno.
 */
int dp_steer_build(struct sock_filter *insn, unsigned max, const uint32_t *blocks, unsigned n,
		   unsigned shift);

#endif
