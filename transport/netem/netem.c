/* SPDX-License-Identifier: BSD-2-Clause */
/* Network emulation on a frame in a byte buffer (see netem.h). */
#include "netem.h"

#include "frame.h"
#include "ur_util.h"

unsigned netem_ip_offset(const uint8_t *frame, uint32_t len, bool *v6)
{
	unsigned off = 12;
	uint16_t type;

	if (len < 14)
		return 0;
	type = ur_get_be16(frame + off);
	if (type == UR_ETHERTYPE_VLAN) {
		if (len < 18)
			return 0;
		off += 4;
		type = ur_get_be16(frame + off);
	}
	off += 2;
	*v6 = type == UR_ETHERTYPE_IPV6;
	if (type != UR_ETHERTYPE_IPV4 && type != UR_ETHERTYPE_IPV6)
		return 0;
	return len >= off + (*v6 ? 40 : 20) ? off : 0;
}

bool netem_mark_ce(uint8_t *frame, uint32_t len)
{
	bool v6;
	unsigned off = netem_ip_offset(frame, len, &v6), ecn, ihl;
	uint8_t *ip = frame + off;

	if (!off)
		return false;
	if (v6) {
		/* version 4 bits, traffic class 8 (DSCP 6, ECN 2), flow label 20 */
		uint32_t w = ur_get_be32(ip);

		ecn = (w >> 20) & UR_ECN_MASK;
		if (ecn == UR_ECN_NOT_ECT || ecn == UR_ECN_CE)
			return false;
		ur_put_be32(ip, w | (uint32_t)UR_ECN_CE << 20);
		return true;
	}
	ecn = ip[1] & UR_ECN_MASK;
	ihl = (ip[0] & 0xfu) * 4;
	if (ecn == UR_ECN_NOT_ECT || ecn == UR_ECN_CE || ihl < 20 || len < off + ihl)
		return false;
	ip[1] |= UR_ECN_CE;
	ur_put_be16(ip + 10, 0);
	ur_put_be16(ip + 10, ur_ipv4_csum(ip, ihl));
	return true;
}

double netem_red_prob(const struct netem_red *red, uint64_t bytes)
{
	if (!red->kmax || bytes < red->kmin)
		return 0;
	if (bytes >= red->kmax)
		return 1;
	return red->pmax * (double)(bytes - red->kmin) / (double)(red->kmax - red->kmin);
}

bool netem_red_mark(const struct netem_red *red, uint64_t bytes, struct sim_rng *rng,
		    uint8_t *frame, uint32_t len)
{
	/* the coin first, then whether the frame can carry CE: the draws do not
	 * depend on what the frames are */
	return sim_rng_bernoulli(rng, netem_red_prob(red, bytes)) && netem_mark_ce(frame, len);
}

void netem_ge_bursts(struct netem_ge *ge, double loss, double burst)
{
	ge->p_bg = 1.0 / burst;
	ge->p_gb = loss * ge->p_bg / (1 - loss);
	ge->loss_good = 0;
	ge->loss_bad = 1.0;
}

bool netem_lose(const struct netem_impair *im, struct netem_state *st)
{
	const struct netem_ge *ge = &im->ge;

	if (ge->p_gb > 0) {
		/* the state moves first, then the state's loss applies */
		if (st->ge_bad)
			st->ge_bad = !sim_rng_bernoulli(&st->rng, ge->p_bg);
		else
			st->ge_bad = sim_rng_bernoulli(&st->rng, ge->p_gb);
		return sim_rng_bernoulli(&st->rng, st->ge_bad ? ge->loss_bad : ge->loss_good);
	}
	return sim_rng_bernoulli(&st->rng, im->loss);
}

unsigned netem_impair_frame(const struct netem_impair *im, struct netem_state *st, uint8_t *frame,
			    uint32_t len)
{
	unsigned fate = 0;

	if (netem_lose(im, st))
		return NETEM_DROP;
	/* sim_rng_bernoulli() draws nothing for a probability of 0 */
	if (sim_rng_bernoulli(&st->rng, im->ce) && netem_mark_ce(frame, len))
		fate |= NETEM_MARKED;
	if (sim_rng_bernoulli(&st->rng, im->dup))
		fate |= NETEM_DUP;
	if (sim_rng_bernoulli(&st->rng, im->reorder))
		fate |= NETEM_HOLD;
	return fate;
}
