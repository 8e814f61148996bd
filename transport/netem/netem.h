/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Network emulation on a frame in a byte buffer: what an impaired hop does
 * to each frame (independent or Gilbert-Elliott loss, ECN CE marking,
 * duplication, reordering), RED's marking probability, and where the IP
 * header is behind Ethernet and one 802.1Q tag. C11 and libc only, no I/O:
 * the simulator's links and switch, the dataplane's impairments and
 * `uroce-lab bottleneck` share it, each holding frames back its own way.
 * Every random choice draws from a generator the caller seeds, in a fixed
 * order, so a seeded run repeats bit for bit.
 */
#ifndef UR_NETEM_H
#define UR_NETEM_H

#include <stdbool.h>
#include <stdint.h>

#include "rng.h"

/*
 * Where the IP header of an Ethernet frame starts (after one 802.1Q tag, if
 * any), with *v6 saying which version; 0 when the frame is neither IPv4 nor
 * IPv6 or is too short for the fixed header.
 */
unsigned netem_ip_offset(const uint8_t *frame, uint32_t len, bool *v6);

/*
 * Set CE on an ECN-capable IPv4 or IPv6 frame, as a congested router does
 * (RFC 3168 section 5), and fix the IPv4 header checksum. A Not-ECT frame,
 * one marked already, or one that is not IP is left alone: false. RoCEv2's
 * ICRC masks the traffic class (IBTA annex A17), so a marked frame stays valid.
 */
bool netem_mark_ce(uint8_t *frame, uint32_t len);

/* RED-style marking by queue depth: none below K_min, rising linearly to P_max at K_max, all from
 * K_max on. */
struct netem_red {
	uint64_t kmin; /* bytes */
	uint64_t kmax; /* bytes; 0: no marking */
	double pmax;
};

/* The marking probability for a queue of `bytes`. */
double netem_red_prob(const struct netem_red *red, uint64_t bytes);
/* Mark a frame that meets a queue of `bytes` with RED's probability: true if marked.
 * One draw, unless the probability is 0. */
bool netem_red_mark(const struct netem_red *red, uint64_t bytes, struct sim_rng *rng,
		    uint8_t *frame, uint32_t len);

/*
 * Gilbert-Elliott loss: a two-state chain that moves once per frame, then
 * the loss probability of the state it is in applies.
 */
struct netem_ge {
	double p_gb;	  /* good -> bad per frame; 0: the chain is off */
	double p_bg;	  /* bad -> good per frame */
	double loss_good; /* loss probability in the good state */
	double loss_bad;  /* loss probability in the bad state */
};

/*
 * The chain for a long-run loss rate `loss` in bursts of mean length `burst`
 * (> 1): leave the bad state with probability 1/burst, enter it so that the
 * share of frames in it is `loss`, lose every frame in it.
 */
void netem_ge_bursts(struct netem_ge *ge, double loss, double burst);

/* What a hop does to the frames that cross it. */
struct netem_impair {
	double loss;	    /* independent loss probability, when the chain is off */
	struct netem_ge ge; /* Gilbert-Elliott loss instead, when ge.p_gb > 0 */
	double ce;	    /* probability an ECN-capable frame gets CE */
	double dup;	    /* probability a frame is delivered twice */
	double reorder;	    /* probability a frame is held back (by how much: the caller's) */
};

/* A hop's random state: its generator and where its loss chain is. */
struct netem_state {
	struct sim_rng rng;
	bool ge_bad;
};

/* A frame's fate, as bits. */
enum netem_fate {
	NETEM_DROP = 1u << 0,	/* lost; nothing else was decided */
	NETEM_MARKED = 1u << 1, /* CE was set on the frame */
	NETEM_DUP = 1u << 2,	/* deliver a copy too (of the frame as marked) */
	NETEM_HOLD = 1u << 3,	/* hold it back so that later frames overtake it */
};

/* Whether the next frame is lost (moves the loss chain). */
bool netem_lose(const struct netem_impair *im, struct netem_state *st);

/*
 * Decide a frame's fate and set CE on it if so decided. The order is fixed
 * (loss, CE, duplicate, hold) with one draw for each that is enabled, so a
 * seeded hop repeats bit for bit; returns enum netem_fate bits.
 */
unsigned netem_impair_frame(const struct netem_impair *im, struct netem_state *st, uint8_t *frame,
			    uint32_t len);

#endif
