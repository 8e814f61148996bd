/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The device daemon's attachment as the port's link (docs/shared-device.md
 * 4.8). A program on a switched port reaches the wire only through the
 * daemon, so the daemon going away is what a RoCE NIC's link going down
 * is, and the daemon gone for good is what a NIC that died is:
 *
 *  - attachment lost: IBV_EVENT_PORT_ERR on every context of the device,
 *    query_port says DOWN; QPs stay (the memif client reconnects every
 *    100 ms, RC retransmits what was lost); attached again:
 *    IBV_EVENT_PORT_ACTIVE;
 *  - nobody listening on the daemon's socket for FATAL_AFTER_NS (its
 *    supervisor gave up, or `uroce link del`): IBV_EVENT_DEVICE_FATAL,
 *    every QP to the error state, so that its outstanding WRs complete
 *    with IBV_WC_WR_FLUSH_ERR, and every later verb that needs the device
 *    fails with EIO, as the kernel's commands do once a device is
 *    disassociated. Polling, arming CQs and destroying objects still work:
 *    a program can tidy up and close.
 *
 * Ports a program opens itself (af_packet, or `daemon off`) have no such
 * link: the port stays ACTIVE.
 */
#define _GNU_SOURCE
#include <errno.h>

#include "rdmacm.h"
#include "uroce.h"

/* How long nobody may listen before the device is gone: the design's 5 s.
 * A crashed switch is restarted at once (a few hundred ms here); repeated
 * crashes back off to 5 s and can reach it (docs/daemon.md). */
#define FATAL_AFTER_NS 5000000000ull

static bool attached_via_daemon(const struct uroce_nic *nic)
{
	return nic->dp_port[0] != 0;
}

void uroce_daemon_link_init(struct uroce_nic *nic)
{
	uroce_link_init(&nic->ctxs);
	nic->port_up = !attached_via_daemon(nic) || uroce_dp_link_up(nic->dp);
	uroce_dp_set_port_down(nic->dp, !nic->port_up);
	nic->absent_since = 0;
}

static struct uroce_context *ctx_of(struct uroce_link *l)
{
	return to_type(l, struct uroce_context, nic_link);
}

static void raise_all(struct uroce_nic *nic, enum ibv_event_type ev)
{
	for (struct uroce_link *l = nic->ctxs.next; l != &nic->ctxs; l = l->next)
		uroce_async_event(ctx_of(l), ev, 1); /* element: the port number */
}

/* ---- what a dead device answers: EIO, as a disassociated kernel device ---- */

/* their arguments matter not: the device is gone */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define DEAD_PTR(ret, name, args)                                                                  \
	static ret *dead_##name args                                                               \
	{                                                                                          \
		errno = EIO;                                                                       \
		return NULL;                                                                       \
	}
#define DEAD_INT(name, args)                                                                       \
	static int dead_##name args                                                                \
	{                                                                                          \
		return EIO;                                                                        \
	}

DEAD_PTR(struct ibv_dm, alloc_dm, (struct ibv_context * c, struct ibv_alloc_dm_attr *a))

DEAD_PTR(struct ibv_mw, alloc_mw, (struct ibv_pd * p, enum ibv_mw_type t))

DEAD_PTR(struct ibv_pd, alloc_parent_domain,
	 (struct ibv_context * c, struct ibv_parent_domain_init_attr *a))

DEAD_PTR(struct ibv_pd, alloc_pd, (struct ibv_context * c))

DEAD_PTR(struct ibv_td, alloc_td, (struct ibv_context * c, struct ibv_td_init_attr *a))

DEAD_PTR(struct ibv_ah, create_ah, (struct ibv_pd * p, struct ibv_ah_attr *a))

DEAD_PTR(struct ibv_cq, create_cq,
	 (struct ibv_context * c, int n, struct ibv_comp_channel *ch, int v))

DEAD_PTR(struct ibv_cq_ex, create_cq_ex, (struct ibv_context * c, struct ibv_cq_init_attr_ex *a))

DEAD_PTR(struct ibv_qp, create_qp, (struct ibv_pd * p, struct ibv_qp_init_attr *a))

DEAD_PTR(struct ibv_qp, create_qp_ex, (struct ibv_context * c, struct ibv_qp_init_attr_ex *a))

DEAD_PTR(struct ibv_srq, create_srq, (struct ibv_pd * p, struct ibv_srq_init_attr *a))

DEAD_PTR(struct ibv_srq, create_srq_ex, (struct ibv_context * c, struct ibv_srq_init_attr_ex *a))

DEAD_PTR(struct ibv_xrcd, open_xrcd, (struct ibv_context * c, struct ibv_xrcd_init_attr *a))

DEAD_PTR(struct ibv_mr, reg_dm_mr,
	 (struct ibv_pd * p, struct ibv_dm *d, uint64_t o, size_t l, unsigned int a))

DEAD_PTR(struct ibv_mr, reg_mr, (struct ibv_pd * p, void *b, size_t l, uint64_t v, int a))

DEAD_INT(advise_mr, (struct ibv_pd * p, enum ibv_advise_mr_advice a, uint32_t f, struct ibv_sge *s,
		     uint32_t n))

DEAD_INT(bind_mw, (struct ibv_qp * q, struct ibv_mw *m, struct ibv_mw_bind *b))

DEAD_INT(modify_qp, (struct ibv_qp * q, struct ibv_qp_attr *a, int m))

DEAD_INT(modify_srq, (struct ibv_srq * s, struct ibv_srq_attr *a, int m))

DEAD_INT(query_device_ex, (struct ibv_context * c, const struct ibv_query_device_ex_input *i,
			   struct ibv_device_attr_ex *a, size_t n))

DEAD_INT(query_port, (struct ibv_context * c, uint8_t p, struct ibv_port_attr *a))

DEAD_INT(query_qp, (struct ibv_qp * q, struct ibv_qp_attr *a, int m, struct ibv_qp_init_attr *i))

DEAD_INT(query_rt_values, (struct ibv_context * c, struct ibv_values_ex *v))

DEAD_INT(query_srq, (struct ibv_srq * s, struct ibv_srq_attr *a))

DEAD_INT(rereg_mr, (struct verbs_mr * m, int f, struct ibv_pd *p, void *b, size_t l, int a))

DEAD_INT(resize_cq, (struct ibv_cq * q, int n))
#pragma GCC diagnostic pop

/* a refused post names its first WR, as every failed post does */
static int dead_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	(void)qp;
	*bad = wr;
	return EIO;
}

static int dead_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	(void)qp;
	*bad = wr;
	return EIO;
}

static int dead_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	(void)srq;
	*bad = wr;
	return EIO;
}

/* Every verb that needs the device; polling, arming and destroying stay. */
#define DEAD(f) .f = dead_##f
static const struct verbs_context_ops dead_ops = {
    DEAD(advise_mr),	   DEAD(alloc_dm),	DEAD(alloc_mw),	 DEAD(alloc_parent_domain),
    DEAD(alloc_pd),	   DEAD(alloc_td),	DEAD(bind_mw),	 DEAD(create_ah),
    DEAD(create_cq),	   DEAD(create_cq_ex),	DEAD(create_qp), DEAD(create_qp_ex),
    DEAD(create_srq),	   DEAD(create_srq_ex), DEAD(modify_qp), DEAD(modify_srq),
    DEAD(open_xrcd),	   DEAD(post_recv),	DEAD(post_send), DEAD(post_srq_recv),
    DEAD(query_device_ex), DEAD(query_port),	DEAD(query_qp),	 DEAD(query_rt_values),
    DEAD(query_srq),	   DEAD(reg_dm_mr),	DEAD(reg_mr),	 DEAD(rereg_mr),
    DEAD(resize_cq),
};

/*
 * The device is gone: flush every QP, then tell every context. The QPs go
 * first so that a program woken by the event finds its flushed
 * completions already in its CQs.
 */
static void go_fatal(struct uroce_nic *nic, uint64_t now)
{
	struct ur_qp_attr err_state = {.qp_state = UR_QPS_ERR};
	unsigned nqp = 0;

	atomic_store(&nic->fatal, true);
	for (struct uroce_link *l = nic->ctxs.next; l != &nic->ctxs; l = l->next) {
		struct uroce_context *c = ctx_of(l);

		for (struct uroce_link *q = c->qps.next; q != &c->qps; q = q->next) {
			struct uroce_qp *uqp = to_type(q, struct uroce_qp, link);

			if (ur_qp_state(uqp->qp) != UR_QPS_ERR &&
			    !ur_qp_modify(uqp->qp, &err_state, IBV_QP_STATE, now))
				nqp++;
		}
		verbs_set_ops(&c->vctx, &dead_ops);
	}
	raise_all(nic, IBV_EVENT_DEVICE_FATAL);
	urcm_kick(); /* rdma_cm tells the ids on this device (rdmacm_gsi.c) */
	uroce_log(nic, 0, "no device daemon for %llu s: device fatal, %u QPs flushed",
		  FATAL_AFTER_NS / 1000000000ull, nqp);
}

void uroce_daemon_link_watch(struct uroce_nic *nic, uint64_t now)
{
	bool up;

	if (!attached_via_daemon(nic) || atomic_load_explicit(&nic->fatal, memory_order_relaxed))
		return;
	up = uroce_dp_link_up(nic->dp);
	if (up != nic->port_up) {
		nic->port_up = up;
		uroce_dp_set_port_down(nic->dp, !up);
		raise_all(nic, up ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR);
		uroce_log(nic, 1, "device daemon %s",
			  up ? "attached again: port active" : "gone: port down");
	}
	/* gone for good only when nobody listens: a daemon that is there but
	 * slow to take us back (a loaded machine) is a link still coming up */
	if (up || !uroce_dp_peer_absent(nic->dp))
		nic->absent_since = 0;
	else if (!nic->absent_since)
		nic->absent_since = now;
	else if (now - nic->absent_since >= FATAL_AFTER_NS)
		go_fatal(nic, now);
}

int uroce_daemon_link_join(struct uroce_nic *nic, struct uroce_context *ctx)
{
	if (atomic_load(&nic->fatal))
		return -EIO;
	uroce_link_add(&nic->ctxs, &ctx->nic_link);
	/* as a NIC's driver does when its port comes up, and only then */
	if (nic->port_up)
		uroce_async_event(ctx, IBV_EVENT_PORT_ACTIVE, 1);
	return 0;
}

void uroce_daemon_link_leave(struct uroce_context *ctx)
{
	uroce_link_del(&ctx->nic_link);
}
