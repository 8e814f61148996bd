/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Steering: which received frames this process takes from the wire.
 *
 * Every af_packet socket bound to an interface gets a copy of every frame on
 * it, so with N processes on one device each RoCE packet would be copied N
 * times, wake N progress threads and be parsed N times, only for N-1 of them
 * to drop it as "unknown QP". QP numbers are handed out in blocks, one
 * process per block (provider/shared.h), so the destination QP in the BTH
 * names the one process that owns a packet. A classic BPF program on the
 * PMD's socket keeps only frames whose destination QP lies in this process's
 * blocks, plus ARP and ICMPv6 (each process resolves its own neighbours); the
 * kernel drops the rest before they are copied or anyone is woken. Classic
 * BPF (SO_ATTACH_FILTER) needs no privilege beyond the CAP_NET_RAW the
 * packet socket already needs, and replacing a program is atomic, so a
 * process that claims another block widens its filter with no gap.
 *
 * VLAN-tagged frames with the tag still in the frame data (the kernel
 * normally moves it into metadata) are let through: the engine decides, as
 * before steering existed. Frames for QP numbers no one owns (a process that
 * exited, a stray packet) are dropped by every filter, as a NIC drops a
 * packet for a QP that does not exist; other traffic (TCP, LLDP, ...) is
 * the kernel's and no longer wakes anyone.
 */
#include <errno.h>
#include <linux/if_packet.h>

#include "steer_bpf.h"

#define ETH_HLEN 14
#define UDP_HLEN 8
#define IP6_HLEN 40
#define ROCE_PORT 4791
#define SR_CTRL_PORT 4792 /* uroce's selective-repeat negotiation (transport/sr.c) */
#define BTH_QPN_WORD 4    /* BTH bytes 4-7: reserved byte, then DestQP (IBTA 9.2) */
#define CTRL_QPN_WORD 8   /* struct ur_sr_ctrl: dqpn at payload offset 8 */
#define ACCEPT_LEN 0x40000u

/* A tiny assembler: forward jumps name labels, resolved at the end. */
enum label { L_DROP, L_ACCEPT, L_V4, L_V6, L_R4, L_C4, L_R6, L_C6, L_CHECK, L_COUNT };

struct prog {
	struct sock_filter *insn;
	unsigned n, max;
	int at[L_COUNT];                         /* label positions */
	unsigned char jt_label[DP_STEER_MAX_INSNS]; /* label + 1, 0 = plain offset */
	unsigned char jf_label[DP_STEER_MAX_INSNS];
	unsigned char ja_label[DP_STEER_MAX_INSNS];
};

static void emit(struct prog *p, uint16_t code, uint32_t k, int jt, int jf)
{
	if (p->n >= p->max) {
		p->n = p->max + 1; /* overflow: caught by the caller */
		return;
	}
	p->insn[p->n] = (struct sock_filter){.code = code, .k = k};
	p->jt_label[p->n] = (unsigned char)(jt + 1);
	p->jf_label[p->n] = (unsigned char)(jf + 1);
	p->ja_label[p->n] = 0;
	p->n++;
}

#define NEXT (-1) /* fall through */

static void stmt(struct prog *p, uint16_t code, uint32_t k)
{
	emit(p, code, k, NEXT, NEXT);
}

static void jump_to(struct prog *p, enum label l)
{
	emit(p, BPF_JMP | BPF_JA, 0, NEXT, NEXT);
	if (p->n <= p->max)
		p->ja_label[p->n - 1] = (unsigned char)(l + 1);
}

static void mark(struct prog *p, enum label l)
{
	p->at[l] = (int)p->n;
}

static int resolve(struct prog *p)
{
	for (unsigned i = 0; i < p->n; i++) {
		struct sock_filter *f = &p->insn[i];
		int t;

		if (p->ja_label[i]) {
			t = p->at[p->ja_label[i] - 1];
			if (t <= (int)i)
				return -EINVAL;
			f->k = (uint32_t)(t - (int)i - 1);
			continue;
		}
		if (BPF_CLASS(f->code) != BPF_JMP)
			continue;
		for (int side = 0; side < 2; side++) {
			unsigned char lab = side ? p->jf_label[i] : p->jt_label[i];
			int off = 0;

			if (lab) {
				t = p->at[lab - 1];
				off = t - (int)i - 1;
				if (t < 0 || off < 0 || off > 255)
					return -E2BIG;
			}
			if (side)
				f->jf = (uint8_t)off;
			else
				f->jt = (uint8_t)off;
		}
	}
	return 0;
}

int dp_steer_build(struct sock_filter *insn, unsigned max, const uint32_t *blocks, unsigned n,
		   unsigned shift)
{
	struct prog prog = {.insn = insn}, *p = &prog;
	int err;

	if (shift > 23 || n > DP_STEER_MAX_BLOCKS)
		return -EINVAL;
	if (max > DP_STEER_MAX_INSNS)
		max = DP_STEER_MAX_INSNS;
	p->max = max;
	for (unsigned l = 0; l < L_COUNT; l++)
		p->at[l] = -1;

	/* what this host sends is never ours to receive */
	stmt(p, BPF_LD | BPF_W | BPF_ABS, (uint32_t)(SKF_AD_OFF + SKF_AD_PKTTYPE));
	emit(p, BPF_JMP | BPF_JEQ | BPF_K, PACKET_OUTGOING, L_DROP, NEXT);
	stmt(p, BPF_LD | BPF_H | BPF_ABS, 12);
	emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0x0800, L_V4, NEXT);
	emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0x86dd, L_V6, NEXT);
	emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0x0806, L_ACCEPT, NEXT);
	emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0x8100, L_ACCEPT, L_DROP);

	/* IPv4: UDP, first fragment only, then the ports after the options */
	mark(p, L_V4);
	stmt(p, BPF_LD | BPF_B | BPF_ABS, ETH_HLEN + 9);
	emit(p, BPF_JMP | BPF_JEQ | BPF_K, 17, NEXT, L_DROP);
	stmt(p, BPF_LD | BPF_H | BPF_ABS, ETH_HLEN + 6);
	emit(p, BPF_JMP | BPF_JSET | BPF_K, 0x1fff, L_DROP, NEXT);
	stmt(p, BPF_LDX | BPF_B | BPF_MSH, ETH_HLEN);
	stmt(p, BPF_LD | BPF_H | BPF_IND, ETH_HLEN + 2);
	emit(p, BPF_JMP | BPF_JEQ | BPF_K, ROCE_PORT, L_R4, NEXT);
	emit(p, BPF_JMP | BPF_JEQ | BPF_K, SR_CTRL_PORT, L_C4, L_DROP);
	mark(p, L_R4);
	stmt(p, BPF_LD | BPF_W | BPF_IND, ETH_HLEN + UDP_HLEN + BTH_QPN_WORD);
	jump_to(p, L_CHECK);
	mark(p, L_C4);
	stmt(p, BPF_LD | BPF_W | BPF_IND, ETH_HLEN + UDP_HLEN + CTRL_QPN_WORD);
	jump_to(p, L_CHECK);

	/* IPv6: RoCEv2 carries no extension headers; ICMPv6 may be ND */
	mark(p, L_V6);
	stmt(p, BPF_LD | BPF_B | BPF_ABS, ETH_HLEN + 6);
	emit(p, BPF_JMP | BPF_JEQ | BPF_K, 58, L_ACCEPT, NEXT);
	emit(p, BPF_JMP | BPF_JEQ | BPF_K, 17, NEXT, L_DROP);
	stmt(p, BPF_LD | BPF_H | BPF_ABS, ETH_HLEN + IP6_HLEN + 2);
	emit(p, BPF_JMP | BPF_JEQ | BPF_K, ROCE_PORT, L_R6, NEXT);
	emit(p, BPF_JMP | BPF_JEQ | BPF_K, SR_CTRL_PORT, L_C6, L_DROP);
	mark(p, L_R6);
	stmt(p, BPF_LD | BPF_W | BPF_ABS, ETH_HLEN + IP6_HLEN + UDP_HLEN + BTH_QPN_WORD);
	jump_to(p, L_CHECK);
	mark(p, L_C6);
	stmt(p, BPF_LD | BPF_W | BPF_ABS, ETH_HLEN + IP6_HLEN + UDP_HLEN + CTRL_QPN_WORD);

	/* A = the 24-bit destination QP; keep it if its block is ours */
	mark(p, L_CHECK);
	stmt(p, BPF_ALU | BPF_AND | BPF_K, 0xffffff);
	stmt(p, BPF_ALU | BPF_RSH | BPF_K, shift);
	for (unsigned i = 0; i < n; i++)
		emit(p, BPF_JMP | BPF_JEQ | BPF_K, blocks[i], L_ACCEPT, NEXT);
	mark(p, L_DROP);
	stmt(p, BPF_RET | BPF_K, 0);
	mark(p, L_ACCEPT);
	stmt(p, BPF_RET | BPF_K, ACCEPT_LEN);

	err = p->n > p->max ? -E2BIG : resolve(p);
	return err ? err : (int)p->n;
}

