/* SPDX-License-Identifier: BSD-2-Clause */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "workload.h"

#define MAX_NODES 256

struct node_app {
	struct sim_node *node;
	struct ur_cq cq;
	struct sim_flow **flows;
	unsigned nflows;
	uint32_t next_qpn;
	uint8_t *scratch; /* the buffers every unverified flow of this host shares */
	uint64_t scratch_len;
};

struct sim_flow {
	struct sim_workload *w;
	uint32_t id;
	struct sim_flow_cfg cfg;
	struct node_app *src;
	struct node_app *dst;
	struct ur_qp *sqp;
	struct ur_qp *dqp;
	uint8_t *sbuf;
	uint8_t *dbuf;
	struct ur_mr *smr;
	struct ur_mr *dmr;
	uint64_t *post_ps;   /* per outstanding slot */
	uint64_t next_recv;  /* receive WQEs posted so far */
	uint32_t rstride;    /* bytes per receive slot: UD adds the 40-byte GRH */
	struct ur_av ud_av;  /* UD: the address handle of every datagram */
	uint64_t post_limit; /* messages that may be posted so far (sim_flow_set_post_limit) */
	uint64_t next_msg;   /* unreliable: the next message a receive may hold */
	uint64_t drain_seen; /* unreliable: receives when the drain timer was armed */
	bool started;
	bool draining;
	bool drained;
	bool failed;
	bool done;
	struct sim_flow_stats st;
};

struct sim_workload {
	struct sim *s;
	struct node_app *apps[MAX_NODES];
	struct sim_flow **flows;
	unsigned nflows;
	unsigned ndone;
	bool stop_when_done;
	sim_message_done_fn on_message;
	void *on_message_arg;
};

uint8_t sim_pattern_byte(uint32_t flow, uint64_t msg, uint64_t off)
{
	uint64_t x = ((uint64_t)flow << 48) ^ (msg << 20) ^ (off >> 3);

	return (uint8_t)(sim_splitmix64(&x) >> ((off & 7) * 8));
}

static void pattern_fill(uint32_t flow, uint64_t msg, uint8_t *buf, uint32_t len)
{
	for (uint32_t off = 0; off < len; off += 8) {
		uint64_t x = ((uint64_t)flow << 48) ^ (msg << 20) ^ (off >> 3);
		uint64_t v = sim_splitmix64(&x);

		memcpy(buf + off, &v, UR_MIN(8u, len - off));
	}
}

static bool pattern_check(uint32_t flow, uint64_t msg, const uint8_t *buf, uint32_t len)
{
	for (uint32_t off = 0; off < len; off += 8) {
		uint64_t x = ((uint64_t)flow << 48) ^ (msg << 20) ^ (off >> 3);
		uint64_t v = sim_splitmix64(&x);

		if (memcmp(buf + off, &v, UR_MIN(8u, len - off)))
			return false;
	}
	return true;
}

struct sim_workload *sim_workload_create(struct sim *s)
{
	struct sim_workload *w = calloc(1, sizeof(*w));

	if (w)
		w->s = s;
	return w;
}

void sim_workload_destroy(struct sim_workload *w)
{
	if (!w)
		return;
	for (unsigned i = 0; i < w->nflows; i++) {
		struct sim_flow *f = w->flows[i];

		ur_qp_destroy(f->sqp);
		ur_qp_destroy(f->dqp);
		ur_dev_dereg_mr(sim_node_dev(f->src->node), f->smr);
		ur_dev_dereg_mr(sim_node_dev(f->dst->node), f->dmr);
		free(f->post_ps);
		free(f->st.fct_ps);
		free(f);
	}
	for (unsigned i = 0; i < MAX_NODES; i++) {
		if (!w->apps[i])
			continue;
		sim_node_set_hook(w->apps[i]->node, NULL, NULL);
		ur_cq_fini(&w->apps[i]->cq);
		free(w->apps[i]->flows);
		free(w->apps[i]);
	}
	free(w->flows);
	free(w);
}

static bool is_one_sided_read(const struct sim_flow *f)
{
	return f->cfg.opcode == UR_WR_RDMA_READ;
}

static bool is_atomic(const struct sim_flow *f)
{
	return f->cfg.opcode == UR_WR_ATOMIC_CMP_AND_SWP || f->cfg.opcode == UR_WR_ATOMIC_FETCH_AND_ADD;
}

static bool needs_recv(const struct sim_flow *f)
{
	return f->cfg.opcode == UR_WR_SEND || f->cfg.opcode == UR_WR_SEND_WITH_IMM ||
	       f->cfg.opcode == UR_WR_RDMA_WRITE_WITH_IMM;
}

/* UC and UD: sends complete when they leave, and lost messages never arrive. */
static bool unreliable(const struct sim_flow *f)
{
	return f->cfg.qp_type == UR_QPT_UC || f->cfg.qp_type == UR_QPT_UD;
}

#define DRAIN_PS (200 * SIM_PS_PER_US)

static void flow_done_check(struct sim_flow *f);

/* Unreliable flows end once nothing more arrives for a while after the last send. */
static void flow_drain(struct sim *s, void *arg)
{
	struct sim_flow *f = arg;

	if (f->st.received != f->drain_seen) {
		f->drain_seen = f->st.received;
		sim_at(s, sim_now(s) + DRAIN_PS, flow_drain, f);
		return;
	}
	f->drained = true;
	flow_done_check(f);
}

static void flow_done_check(struct sim_flow *f)
{
	struct sim_workload *w = f->w;

	if (f->done)
		return;
	if (!f->failed && unreliable(f) && f->st.completed == f->cfg.messages && needs_recv(f) &&
	    f->st.received < f->cfg.messages && !f->drained) {
		if (!f->draining) {
			f->draining = true;
			f->drain_seen = f->st.received;
			sim_at(w->s, sim_now(w->s) + DRAIN_PS, flow_drain, f);
		}
		return;
	}
	if (!f->failed && (f->st.completed < f->cfg.messages ||
			   (needs_recv(f) && f->st.received < f->cfg.messages && !f->drained)))
		return;
	f->done = true;
	if (!f->failed)
		f->st.last_done_ps = sim_now(w->s);
	w->ndone++;
	if (w->stop_when_done && w->ndone == w->nflows)
		sim_stop(w->s);
}

static void post_recv(struct sim_flow *f)
{
	struct ur_wq *rq = ur_qp_rq(f->dqp);
	struct ur_recv_wqe *r = ur_wq_reserve(rq, 0);
	uint64_t slot;

	if (!r)
		return;
	slot = f->next_recv % f->cfg.depth;
	memset(r, 0, sizeof(*r) + sizeof(struct ur_sge));
	r->wr_id = f->next_recv;
	if (f->cfg.opcode != UR_WR_RDMA_WRITE_WITH_IMM && f->rstride) {
		r->num_sge = 1;
		r->sge[0].addr = (uint64_t)(uintptr_t)(f->dbuf + slot * f->rstride);
		r->sge[0].length = f->rstride;
		r->sge[0].lkey = f->dmr->key;
		r->length = f->rstride;
	}
	ur_wq_commit(rq, 1);
	f->next_recv++;
	ur_qp_doorbell(f->dqp);
}

/* A slow application's repost of one receive (recv_repost_ps after its completion). */
static void repost_recv(struct sim *s, void *arg)
{
	struct sim_flow *f = arg;

	(void)s;
	if (f->failed || f->next_recv >= f->cfg.messages)
		return;
	post_recv(f);
	sim_node_kick(f->dst->node);
}

static void post_message(struct sim_flow *f)
{
	struct ur_wq *sq = ur_qp_sq(f->sqp);
	struct ur_send_wqe *wqe = ur_wq_reserve(sq, 0);
	uint64_t msg = f->st.posted, slot = msg % f->cfg.depth;
	uint32_t len = is_atomic(f) ? 8 : f->cfg.msg_size;
	uint8_t *local = f->sbuf + slot * f->cfg.msg_size;
	uint8_t *remote = f->dbuf + slot * f->cfg.msg_size;

	if (!wqe)
		return;
	if (f->cfg.verify && !is_atomic(f)) {
		if (is_one_sided_read(f))
			pattern_fill(f->id, msg, remote, len);
		else
			pattern_fill(f->id, msg, local, len);
	}
	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = msg;
	wqe->opcode = f->cfg.opcode;
	wqe->flags = UR_SEND_SIGNALED;
	wqe->signaled = 1;
	wqe->length = len;
	wqe->remote_addr = (uint64_t)(uintptr_t)remote;
	wqe->rkey = f->dmr->key;
	wqe->imm = (uint32_t)msg;
	wqe->compare_add = 1;
	wqe->swap = msg;
	if (f->cfg.qp_type == UR_QPT_UD) {
		wqe->ud_av = &f->ud_av;
		wqe->ud_qpn = ur_qp_num(f->dqp);
		wqe->ud_qkey = f->cfg.qp.qkey;
	}
	if (len) {
		wqe->num_sge = 1;
		wqe->sge[0].addr = (uint64_t)(uintptr_t)local;
		wqe->sge[0].length = len;
		wqe->sge[0].lkey = f->smr->key;
	}
	ur_wq_commit(sq, 1);
	f->post_ps[slot] = sim_now(f->w->s);
	if (!f->st.posted)
		f->st.first_post_ps = sim_now(f->w->s);
	f->st.posted++;
	ur_qp_doorbell(f->sqp);
}

static void fill_window(struct sim_flow *f)
{
	while (!f->failed && f->st.posted < f->cfg.messages && f->st.posted < f->post_limit &&
	       f->st.posted - f->st.completed < f->cfg.depth)
		post_message(f);
}

static void flow_error(struct sim_flow *f, const struct ur_cqe *c)
{
	if (c->status == UR_WC_WR_FLUSH_ERR) {
		f->st.flushed++;
	} else {
		if (!f->st.errors) {
			f->st.first_error = c->status;
			f->st.first_error_ps = sim_now(f->w->s);
		}
		f->st.errors++;
	}
	f->failed = true;
}

static void on_send_cqe(struct sim_flow *f, const struct ur_cqe *c)
{
	uint64_t msg = c->wr_id, slot = msg % f->cfg.depth;
	uint64_t now = sim_now(f->w->s);

	if (c->status != UR_WC_SUCCESS) {
		flow_error(f, c);
		return;
	}
	/* an unreliable send completes when it leaves: nothing to check yet */
	if (f->cfg.verify && !is_atomic(f) && !unreliable(f)) {
		const uint8_t *check = is_one_sided_read(f) ? f->sbuf + slot * f->cfg.msg_size
			: f->cfg.opcode == UR_WR_RDMA_WRITE ? f->dbuf + slot * f->cfg.msg_size
							      : NULL;
		if (check && !pattern_check(f->id, msg, check, f->cfg.msg_size))
			f->st.verify_failures++;
	}
	f->st.fct_ps[f->st.nfct++] = now - f->post_ps[slot];
	f->st.completed++;
	f->st.bytes += f->cfg.msg_size;
	f->st.last_done_ps = now;
	if (f->w->on_message)
		f->w->on_message(f, msg, f->w->on_message_arg);
	fill_window(f);
}

/*
 * Which message an unreliable receive holds: the immediate names it; a
 * plain SEND is found by its pattern among the messages not yet seen
 * (they arrive in order, with gaps where some were lost).
 */
static uint64_t which_message(struct sim_flow *f, const struct ur_cqe *c, const uint8_t *buf)
{
	if (c->wc_flags & UR_WC_WITH_IMM)
		return c->imm;
	for (uint64_t m = f->next_msg; m < f->cfg.messages; m++)
		if (pattern_check(f->id, m, buf, f->cfg.msg_size))
			return m;
	return f->next_msg;
}

static void on_recv_cqe(struct sim_flow *f, const struct ur_cqe *c)
{
	uint64_t msg = f->st.received, slot = c->wr_id % f->cfg.depth;
	bool ud = f->cfg.qp_type == UR_QPT_UD;

	if (c->status != UR_WC_SUCCESS) {
		flow_error(f, c);
		return;
	}
	if (f->cfg.verify) {
		const uint8_t *buf = f->dbuf + slot * f->rstride + (ud ? UR_GRH_LEN : 0);

		if (unreliable(f)) {
			msg = which_message(f, c, buf);
			f->next_msg = msg + 1;
		}
		/* UD: the GRH first, and the sender named in the completion */
		if (ud && (!(c->wc_flags & UR_WC_GRH) || c->src_qp != ur_qp_num(f->sqp) ||
			   c->byte_len != UR_GRH_LEN + f->cfg.msg_size))
			f->st.verify_failures++;
		if (c->byte_len != f->cfg.msg_size + (ud ? UR_GRH_LEN : 0) ||
		    (f->cfg.opcode != UR_WR_RDMA_WRITE_WITH_IMM &&
		     !pattern_check(f->id, msg, buf, f->cfg.msg_size)))
			f->st.verify_failures++;
		if (((c->wc_flags & UR_WC_WITH_IMM) != 0) !=
			    (f->cfg.opcode != UR_WR_SEND) ||
		    ((c->wc_flags & UR_WC_WITH_IMM) && c->imm != (uint32_t)msg))
			f->st.verify_failures++;
	}
	f->st.received++;
	if (f->next_recv >= f->cfg.messages)
		return;
	if (f->cfg.recv_repost_ps)
		sim_at(f->w->s, sim_now(f->w->s) + f->cfg.recv_repost_ps, repost_recv, f);
	else
		post_recv(f);
}

static struct sim_flow *flow_of(struct node_app *app, uint32_t qpn, bool *is_src)
{
	for (unsigned i = 0; i < app->nflows; i++) {
		struct sim_flow *f = app->flows[i];

		if (f->src == app && ur_qp_num(f->sqp) == qpn) {
			*is_src = true;
			return f;
		}
		if (f->dst == app && ur_qp_num(f->dqp) == qpn) {
			*is_src = false;
			return f;
		}
	}
	return NULL;
}

static void app_hook(struct sim_node *n, void *arg)
{
	struct node_app *app = arg;
	struct ur_cqe cqes[32];
	int got;

	(void)n;
	while ((got = ur_cq_poll(&app->cq, cqes, 32)) > 0) {
		for (int i = 0; i < got; i++) {
			bool is_src;
			struct sim_flow *f = flow_of(app, cqes[i].qp_num, &is_src);

			if (!f)
				continue;
			if (cqes[i].opcode & UR_WC_RECV)
				on_recv_cqe(f, &cqes[i]);
			else
				on_send_cqe(f, &cqes[i]);
			flow_done_check(f);
		}
	}
}

static struct node_app *app_for(struct sim_workload *w, struct sim_node *n)
{
	unsigned idx = sim_node_index(n);
	struct node_app *app;

	if (idx >= MAX_NODES)
		return NULL;
	if (w->apps[idx])
		return w->apps[idx];
	app = calloc(1, sizeof(*app));
	if (!app || ur_cq_init(&app->cq, 1u << 16, app)) {
		free(app);
		return NULL;
	}
	app->node = n;
	app->next_qpn = 0x11;
	w->apps[idx] = app;
	sim_node_set_hook(n, app_hook, app);
	return app;
}

/*
 * Memory for a flow whose bytes nobody checks: one buffer per host, shared
 * by all its flows. What lands in it does not change when anything
 * happens, and 4,032 flows of their own (512 KB each at 4 x 64 KB) would
 * take 2 GB and most of the run's time in cache misses and page faults.
 */
static uint8_t *app_scratch(struct sim_workload *w, struct node_app *app, uint64_t len)
{
	if (len > app->scratch_len) {
		/* the old one stays alive with the simulation: earlier flows keep it */
		app->scratch = sim_alloc(w->s, len);
		app->scratch_len = len;
	}
	return app->scratch;
}

static int app_add_flow(struct node_app *app, struct sim_flow *f)
{
	struct sim_flow **fl = realloc(app->flows, (app->nflows + 1) * sizeof(*fl));

	if (!fl)
		return -1;
	app->flows = fl;
	app->flows[app->nflows++] = f;
	return 0;
}

static void flow_start(struct sim *s, void *arg)
{
	struct sim_flow *f = arg;

	(void)s;
	f->started = true;
	fill_window(f);
	sim_node_kick(f->src->node);
}

struct sim_flow *sim_workload_add_flow(struct sim_workload *w, struct sim_node *src,
				       struct sim_node *dst, const struct sim_flow_cfg *cfg)
{
	struct node_app *sa = app_for(w, src), *da = app_for(w, dst);
	struct sim_flow *f;
	struct sim_flow **flows;
	struct ur_qp_init qi;
	uint64_t buflen;

	if (!sa || !da || !cfg->depth || sa == da)
		return NULL;
	f = calloc(1, sizeof(*f));
	flows = realloc(w->flows, (w->nflows + 1) * sizeof(*flows));
	if (!f || !flows)
		goto err;
	w->flows = flows;
	f->w = w;
	f->id = w->nflows;
	f->cfg = *cfg;
	f->post_limit = cfg->messages;
	if (!f->cfg.recv_depth)
		f->cfg.recv_depth = cfg->depth;
	if (is_atomic(f))
		f->cfg.msg_size = 8;
	f->src = sa;
	f->dst = da;
	f->rstride = f->cfg.msg_size + (cfg->qp_type == UR_QPT_UD ? UR_GRH_LEN : 0);
	buflen = (uint64_t)f->cfg.depth * (f->rstride ? f->rstride : 1);
	if (cfg->verify) {
		f->sbuf = sim_alloc(w->s, buflen);
		f->dbuf = sim_alloc(w->s, buflen);
	} else {
		f->sbuf = app_scratch(w, sa, buflen);
		f->dbuf = app_scratch(w, da, buflen);
	}
	f->post_ps = calloc(f->cfg.depth, sizeof(*f->post_ps));
	f->st.fct_ps = calloc(cfg->messages ? cfg->messages : 1, sizeof(*f->st.fct_ps));
	if (!f->post_ps || !f->st.fct_ps)
		goto err;
	if (ur_dev_reg_mr(sim_node_dev(src), (uint64_t)(uintptr_t)f->sbuf, f->sbuf, buflen,
			  cfg->qp.access, 1, &f->smr) ||
	    ur_dev_reg_mr(sim_node_dev(dst), (uint64_t)(uintptr_t)f->dbuf, f->dbuf, buflen,
			  cfg->qp.access, 1, &f->dmr))
		goto err;

	memset(&qi, 0, sizeof(qi));
	qi.type = cfg->qp_type ? cfg->qp_type : UR_QPT_RC;
	qi.pd = 1;
	qi.max_send_wr = f->cfg.depth;
	qi.max_recv_wr = f->cfg.recv_depth;
	qi.max_send_sge = 1;
	qi.max_recv_sge = 1;
	qi.send_cq = qi.recv_cq = &sa->cq;
	qi.qpn = sa->next_qpn++;
	if (ur_qp_create(sim_node_dev(src), &qi, &f->sqp))
		goto err;
	qi.send_cq = qi.recv_cq = &da->cq;
	qi.qpn = da->next_qpn++;
	if (ur_qp_create(sim_node_dev(dst), &qi, &f->dqp))
		goto err;
	if (sim_connect_qps(src, f->sqp, dst, f->dqp, &cfg->qp))
		goto err;
	if (qi.type == UR_QPT_UD)
		sim_node_av(src, dst, cfg->qp.tclass, &f->ud_av);
	if (app_add_flow(sa, f) || app_add_flow(da, f))
		goto err;
	w->flows[w->nflows++] = f;
	if (needs_recv(f))
		while (f->next_recv < f->cfg.recv_depth && f->next_recv < f->cfg.messages)
			post_recv(f);
	sim_at(w->s, cfg->start_ps, flow_start, f);
	return f;
err:
	fprintf(stderr, "sim: cannot create flow\n");
	if (f) {
		free(f->post_ps);
		free(f->st.fct_ps);
	}
	free(f);
	return NULL;
}

bool sim_workload_done(const struct sim_workload *w)
{
	return w->ndone == w->nflows;
}

unsigned sim_workload_nflows(const struct sim_workload *w)
{
	return w->nflows;
}

struct sim_flow *sim_workload_flow(const struct sim_workload *w, unsigned i)
{
	return i < w->nflows ? w->flows[i] : NULL;
}

const struct sim_flow_stats *sim_flow_stats(const struct sim_flow *f)
{
	return &f->st;
}

struct ur_qp *sim_flow_src_qp(const struct sim_flow *f)
{
	return f->sqp;
}

struct ur_qp *sim_flow_dst_qp(const struct sim_flow *f)
{
	return f->dqp;
}

void sim_flow_set_post_limit(struct sim_flow *f, uint64_t limit)
{
	f->post_limit = limit;
	if (f->started && f->st.posted < f->cfg.messages && f->st.posted < limit) {
		fill_window(f);
		sim_node_kick(f->src->node);
	}
}

struct sim *sim_workload_sim(const struct sim_workload *w)
{
	return w->s;
}

void sim_workload_on_message(struct sim_workload *w, sim_message_done_fn fn, void *arg)
{
	w->on_message = fn;
	w->on_message_arg = arg;
}

void sim_workload_stop_when_done(struct sim_workload *w, bool stop)
{
	w->stop_when_done = stop;
}
