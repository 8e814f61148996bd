/* SPDX-License-Identifier: BSD-2-Clause */
#include <stdlib.h>
#include <string.h>

#include "fixture.h"

void fx_default_link(struct sim_link_cfg *l)
{
	memset(l, 0, sizeof(*l));
	l->rate_bps = 100000000000ull;
	l->prop_ps = 1 * SIM_PS_PER_US;
}

static void side_init(struct fx *f, struct fx_side *s, struct sim_node *n, uint32_t qpn,
		      uint32_t access, enum ur_qp_type type)
{
	struct ur_qp_init qi = {0};

	s->node = n;
	s->buf = sim_alloc(f->s, FX_BUF);
	ur_cq_init(&s->cq, 4096, s);
	ur_dev_reg_mr(sim_node_dev(n), (uint64_t)(uintptr_t)s->buf, s->buf, FX_BUF, access, 1,
		      &s->mr);
	qi.type = type;
	qi.qpn = qpn;
	qi.pd = 1;
	qi.send_cq = qi.recv_cq = &s->cq;
	qi.max_send_wr = 256;
	qi.max_recv_wr = 256;
	qi.max_send_sge = 4;
	qi.max_recv_sge = 4;
	qi.max_inline_data = 256;
	ur_qp_create(sim_node_dev(n), &qi, &s->qp);
}

void fx_init(struct fx *f, uint64_t seed, const struct sim_link_cfg *link,
	     const struct sim_qp_params *qp, uint32_t access_b)
{
	fx_init_service(f, UR_QPT_RC, seed, link, qp, access_b);
}

static void fx_build(struct fx *f, enum ur_qp_type type, uint64_t seed,
		     const struct ur_dev_config *cfg, const struct sim_link_cfg *link,
		     const struct sim_qp_params *qp, uint32_t access_b)
{
	const uint32_t all = UR_ACCESS_LOCAL_WRITE | UR_ACCESS_REMOTE_WRITE |
			     UR_ACCESS_REMOTE_READ | UR_ACCESS_REMOTE_ATOMIC;

	memset(f, 0, sizeof(*f));
	f->s = sim_create(seed);
	side_init(f, &f->a, sim_add_node(f->s, cfg, link, link, NULL), 0x11, all, type);
	side_init(f, &f->b, sim_add_node(f->s, cfg, link, link, NULL), 0x22, access_b, type);
	if (qp)
		f->qp = *qp;
	else
		sim_qp_params_default(&f->qp);
	sim_connect_qps(f->a.node, f->a.qp, f->b.node, f->b.qp, &f->qp);
	sim_node_av(f->a.node, f->b.node, f->qp.tclass, &f->a.av);
	sim_node_av(f->b.node, f->a.node, f->qp.tclass, &f->b.av);
}

void fx_init_service(struct fx *f, enum ur_qp_type type, uint64_t seed,
		     const struct sim_link_cfg *link, const struct sim_qp_params *qp,
		     uint32_t access_b)
{
	struct ur_dev_config cfg;

	ur_dev_config_default(&cfg);
	fx_build(f, type, seed, &cfg, link, qp, access_b);
}

void fx_init_cfg(struct fx *f, uint64_t seed, const struct ur_dev_config *cfg,
		 const struct sim_link_cfg *link, const struct sim_qp_params *qp, uint32_t access_b)
{
	fx_build(f, UR_QPT_RC, seed, cfg, link, qp, access_b);
}

void fx_fini(struct fx *f)
{
	struct fx_side *sides[2] = {&f->a, &f->b};

	for (int i = 0; i < 2; i++) {
		ur_qp_destroy(sides[i]->qp);
		ur_dev_dereg_mr(sim_node_dev(sides[i]->node), sides[i]->mr);
		ur_cq_fini(&sides[i]->cq);
	}
	sim_destroy(f->s);
}

void fx_post_send(struct fx *f, struct fx_side *s, uint64_t wr_id, enum ur_wr_opcode op,
		  uint32_t local_off, uint32_t len, uint64_t remote_addr, uint32_t rkey,
		  uint64_t compare_add, uint64_t swap)
{
	struct ur_wq *sq = ur_qp_sq(s->qp);
	struct ur_send_wqe *w = ur_wq_reserve(sq, 0);

	if (!w)
		abort();
	memset(w, 0, sizeof(*w));
	w->wr_id = wr_id;
	w->opcode = op;
	w->flags = UR_SEND_SIGNALED;
	w->signaled = 1;
	w->length = len;
	w->remote_addr = remote_addr;
	w->rkey = rkey;
	w->compare_add = compare_add;
	w->swap = swap;
	w->imm = (uint32_t)wr_id;
	if (ur_qp_service(s->qp) == UR_QPT_UD) {
		const struct fx_side *peer = s == &f->a ? &f->b : &f->a;

		w->ud_av = &s->av;
		w->ud_qpn = ur_qp_num(peer->qp);
		w->ud_qkey = f->qp.qkey;
	}
	if (len) {
		w->num_sge = 1;
		w->sge[0].addr = (uint64_t)(uintptr_t)(s->buf + local_off);
		w->sge[0].length = len;
		w->sge[0].lkey = s->mr->key;
	}
	ur_wq_commit(sq, 1);
	ur_qp_doorbell(s->qp);
	sim_node_kick(s->node);
}

void fx_post_recv(struct fx *f, struct fx_side *s, uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct ur_wq *rq = ur_qp_rq(s->qp);
	struct ur_recv_wqe *r = ur_wq_reserve(rq, 0);

	(void)f;
	if (!r)
		abort();
	memset(r, 0, sizeof(*r));
	r->wr_id = wr_id;
	r->num_sge = 1;
	r->length = len;
	r->sge[0].addr = (uint64_t)(uintptr_t)(s->buf + off);
	r->sge[0].length = len;
	r->sge[0].lkey = s->mr->key;
	ur_wq_commit(rq, 1);
	ur_qp_doorbell(s->qp);
	sim_node_kick(s->node);
}

int fx_wait(struct fx *f, struct fx_side *s, struct ur_cqe *out, int n, uint64_t limit_ps)
{
	uint64_t end = sim_now(f->s) + limit_ps;
	int got = 0;

	while (got < n) {
		got += ur_cq_poll(&s->cq, out + got, n - got);
		if (got >= n || sim_now(f->s) >= end)
			break;
		sim_run(f->s, UR_MIN(end, sim_now(f->s) + SIM_PS_PER_US));
	}
	return got;
}
