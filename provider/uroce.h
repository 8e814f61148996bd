/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The uroce libibverbs provider: its objects, each embedding the verbs
 * object libibverbs hands to applications and recovered with container_of,
 * as rdma-core's providers do.
 */
#ifndef UROCE_PROVIDER_H
#define UROCE_PROVIDER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "verbs_abi.h"

#include "config.h"
#include "dataplane.h"
#include "engine.h"
#include "registry.h"
#include "shared.h"
#include "wr_opcode.h"

#define to_type(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

struct uroce_device {
	struct verbs_device vdev;
	char name[UROCE_NAME_MAX];
};

/* A list link: the objects a context holds in the shared engine. */
struct uroce_link {
	struct uroce_link *prev, *next;
};

/*
 * What a NIC is to its host: the device as this process holds it. Every
 * context the process opens on one device shares it (nic.c), as contexts
 * share a NIC: one engine, so their QPs reach each other (loopback) and
 * their numbers, keys and PDs are unique; one port, one progress thread,
 * one row of counters.
 */
struct uroce_nic {
	struct uroce_nic *next;    /* the process's open devices (nic.c) */
	unsigned users;            /* contexts open on it */
	struct uroce_devconf conf; /* the device's file, as `uroce link add` wrote it */
	struct uroce_config cfg;   /* what it runs with: conf and the environment at first open */
	char devdir[512];
	char dp_port[256]; /* the port opened, when not the device's own (port_config.h) */
	struct ur_dev *engine;
	struct uroce_dp *dp;
	struct uroce_shared shared;

	/* The progress lock: whoever holds it runs the engine and the port. */
	pthread_mutex_t lock;
	pthread_t thread;
	atomic_bool stop;
	int wake_fd;               /* eventfd that ends the progress thread's sleep */
	_Atomic uint64_t sleep_until; /* when the sleeping progress thread wakes on its own */
	_Atomic uint64_t app_pass_ns; /* when an application thread last ran a pass */
	_Atomic uint64_t arm_ns;      /* when the application last armed a CQ: it may block */
	atomic_bool drive_nap;        /* the progress thread naps beside a driving application */
	_Atomic int sleep_fd;         /* what its sleep waits on besides wake_fd (answerer.c) */
	_Atomic uint64_t passes;      /* passes run, by anyone (answerer.c) */
	pthread_t answerer;
	bool answerer_started;
	unsigned timers_deferred;     /* passes the timers waited for the ring to drain */
	uint32_t tx_bytes;            /* built by the transmit stage of the pass in progress */

	uint32_t next_pd;
	struct uroce_xrcd_dom *xrcds; /* open XRC domains (xrcd.c), under lock */
	uint32_t next_xrcd;
	/* QP numbers in use, one bit per number of each block we own; new
	 * numbers come round-robin so a freed one is not reused at once */
	uint64_t qpn_bits[UROCE_MAX_OWN_BLOCKS][(1u << UROCE_QPN_BLOCK_BITS) / 64];
	uint32_t qpn_cursor;
	/* QPs whose destination did not answer ARP/ND at modify time */
	struct uroce_qp *neigh_wait[64];
	unsigned nneigh_wait;
	uint64_t next_neigh_poll;
	unsigned active_mtu;       /* bytes, from the interface */
	uint64_t next_counter_write;
	uint64_t counters_written[UROCE_ROW_COUNTERS]; /* values in the hw_counters files */
	bool steer_unsupported;    /* the port cannot filter by QP number */
	bool steer_block0;         /* the filter also takes block 0 (housekeeper) */
	bool cm_served;            /* urcm_serve() was asked to run the CM here */
	uint32_t limit[UROCE_OBJ_COUNT];    /* what query_device advertises, device-wide */
	atomic_uint nobj[UROCE_OBJ_COUNT];  /* how many exist, in all contexts */
	_Atomic size_t dm_used;             /* device memory allocated (dm.c) */
	/* the daemon's attachment as the port's link (daemon_link.c), under lock */
	struct uroce_link ctxs;    /* the contexts open on it, for device-wide events */
	atomic_bool port_up;       /* what query_port says (read unlocked), the last event raised */
	uint64_t absent_since;     /* since when nobody listens on the daemon's socket, or 0 */
	atomic_bool fatal;         /* DEVICE_FATAL raised: verbs fail with EIO */
};


/* One ibv_context: its verbs objects and event queue on a shared NIC. */
struct uroce_context {
	struct verbs_context vctx;
	struct uroce_nic *nic;
	int async_wr;              /* write end of the async event socket */
	struct uroce_link nic_link; /* in nic->ctxs, under nic->lock */
	/* what it holds in the engine, and what counts against the
	 * device's limits, taken back if it closes with them (as the kernel
	 * does at close): under nic->lock */
	struct uroce_link qps, mrs, srqs, mws, pds, cqs, ahs;
};

struct uroce_td {
	struct ibv_td ibv_td;
	atomic_uint refs;          /* parent domains on it */
};

struct uroce_pd {
	struct ibv_pd ibv_pd;
	struct uroce_link link;    /* in its context's pds */
	uint32_t id;               /* a parent domain's is its protection domain's */
	atomic_uint refs;          /* MRs, QPs, SRQs, AHs and parent domains in it */
	/* a parent domain (parent_domain.c): NULL protection for a plain PD */
	struct uroce_pd *protection;
	struct uroce_td *td;
	void *pd_context;
	void *(*alloc)(struct ibv_pd *pd, void *pd_context, size_t size, size_t alignment,
		       uint64_t resource_type);
	void (*free)(struct ibv_pd *pd, void *pd_context, void *ptr, uint64_t resource_type);
	struct ur_alloc queues;    /* the allocator as the engine calls it for QP work queues */
};

/* resource_type a parent domain's allocator is called with: mlx5dv's low
 * numbers, under driver id 0 (uroce has no kernel driver id) */
enum {
	UROCE_RES_TYPE_QP = 1,
	UROCE_RES_TYPE_CQ = 5,
};

/* Device memory (dm.c): max_dm_size, uroce's choice, a NIC's order of size */
#define UROCE_MAX_DM (256u << 10)

struct uroce_dm {
	struct verbs_dm vdm;
	uint8_t *buf;
	size_t length;
	atomic_uint refs;          /* MRs on it */
};

/* An XRC domain (xrcd.c): the process's one per inode, or one of its own. */
struct uroce_xrcd_dom {
	struct uroce_xrcd_dom *next; /* in nic->xrcds */
	uint32_t id;               /* the engine's name for it (never 0) */
	unsigned users;            /* handles open on it, under nic->lock */
	atomic_uint refs;          /* XRC SRQs and target QPs in it */
	bool has_inode;
	dev_t dev;
	ino_t ino;
};

/* One ibv_open_xrcd's handle on a domain. */
struct uroce_xrcd {
	struct verbs_xrcd vxrcd;
	struct uroce_nic *nic;
	struct uroce_xrcd_dom *dom;
};

struct uroce_mr {
	struct verbs_mr vmr;
	struct uroce_link link;    /* in its context's mrs */
	struct ur_mr *mr;
	struct uroce_pd *pd;
	struct uroce_dm *dm;       /* the device memory it is on, or NULL */
};

struct uroce_mw {
	struct ibv_mw ibv_mw;
	struct uroce_link link;    /* in its context's mws */
	struct ur_mr *mw;          /* its key in the engine's table */
	struct uroce_pd *pd;
};

struct uroce_cq {
	struct verbs_cq vcq;
	struct uroce_link link;    /* in its context's cqs */
	struct ur_cq cq;
	pthread_spinlock_t poll_lock;
	int chan_wr;               /* completion channel write end, -1 without one */
	uint32_t events_sent;      /* records written to the channel */
	uint32_t async_sent;       /* CQ_ERR events naming this CQ */
	atomic_uint refs;          /* QPs using this CQ */
	/* ibv_cq_ex (cq_ex.c): the CQE a polling batch is at, and its index */
	const struct ur_cqe *cur;
	uint32_t cur_cons;
	int64_t wall_off;          /* CLOCK_REALTIME - CLOCK_MONOTONIC when the batch began */
	struct uroce_pd *pdom;     /* the parent domain it was created on, or NULL */
	bool ring_app;             /* the ring came from pdom's allocator */
};

struct uroce_srq {
	struct verbs_srq vsrq;
	struct uroce_link link;    /* in its context's srqs */
	struct ur_srq *srq;
	pthread_spinlock_t lock;
	struct uroce_pd *pd;
	struct uroce_xrcd_dom *xrcd; /* an XRC SRQ's domain, else NULL */
	atomic_uint refs;          /* QPs taking their receive WQEs from it */
};

struct uroce_qp {
	struct verbs_qp vqp;
	struct uroce_link link;    /* in its context's qps */
	struct ur_qp *qp;
	pthread_spinlock_t sq_lock;
	pthread_spinlock_t rq_lock;
	bool sq_sig_all;
	uint32_t max_inline;
	/* ibv_wr_* builder state between wr_start and wr_complete */
	uint64_t send_ops;           /* IBV_QP_EX_WITH_* asked for at creation */
	struct ur_send_wqe *wr_cur;  /* the request being built */
	uint32_t wr_pending;
	int wr_err;
	bool neigh_pending;        /* destination MAC still being resolved */
	uint8_t neigh_gid[16];
	uint32_t events_sent;      /* async events that name this QP */
	struct uroce_xrcd_dom *xrcd; /* an XRC target's domain, else NULL */
};

struct uroce_ah {
	struct ibv_ah ibv_ah;
	struct uroce_link link;    /* in its context's ahs */
	struct ur_av av;
	struct uroce_pd *pd;
};

static inline struct uroce_context *to_uctx(struct ibv_context *c)
{
	return to_type(c, struct uroce_context, vctx.context);
}

static inline struct uroce_nic *to_unic(struct ibv_context *c)
{
	return to_uctx(c)->nic;
}

static inline void uroce_link_init(struct uroce_link *head)
{
	head->prev = head->next = head;
}

static inline void uroce_link_add(struct uroce_link *head, struct uroce_link *l)
{
	l->next = head->next;
	l->prev = head;
	head->next->prev = l;
	head->next = l;
}

static inline void uroce_link_del(struct uroce_link *l)
{
	l->prev->next = l->next;
	l->next->prev = l->prev;
	l->prev = l->next = l;
}

static inline struct uroce_pd *to_upd(struct ibv_pd *pd)
{
	return to_type(pd, struct uroce_pd, ibv_pd);
}

static inline struct uroce_cq *to_ucq(struct ibv_cq *cq)
{
	return to_type(cq, struct uroce_cq, vcq.cq);
}

static inline struct uroce_qp *to_uqp(struct ibv_qp *qp)
{
	return to_type(qp, struct uroce_qp, vqp.qp);
}

static inline struct uroce_srq *to_usrq(struct ibv_srq *srq)
{
	return to_type(srq, struct uroce_srq, vsrq.srq);
}

static inline struct uroce_mw *to_umw(struct ibv_mw *mw)
{
	return to_type(mw, struct uroce_mw, ibv_mw);
}

static inline struct uroce_xrcd *to_uxrcd(struct ibv_xrcd *x)
{
	return to_type(x, struct uroce_xrcd, vxrcd.xrcd);
}

static inline struct uroce_ah *to_uah(struct ibv_ah *ah)
{
	return to_type(ah, struct uroce_ah, ibv_ah);
}

/* device.c */
extern const struct verbs_device_ops uroce_dev_ops;
bool uroce_is_ours(const struct ibv_context *ctx);
bool uroce_is_our_device(struct ibv_device *dev);

/* nic.c: the process's one NIC per device, made by its first context */
int uroce_nic_get(const char *name, struct uroce_nic **out);
/* A context that closes: takes back what it still held, then its share of the NIC. */
void uroce_nic_put(struct uroce_nic *nic, struct uroce_context *ctx);

/* daemon_link.c: the daemon's attachment as the port's link */
/* At open: whether the port is up (the daemon's attachment, if any). */
void uroce_daemon_link_init(struct uroce_nic *nic);
/* Each pass, under nic->lock: PORT_ERR, PORT_ACTIVE, DEVICE_FATAL when it changed. */
void uroce_daemon_link_watch(struct uroce_nic *nic, uint64_t now);
/* A context that opens (0, PORT_ACTIVE raised if up) or closes, under nic->lock. */
int uroce_daemon_link_join(struct uroce_nic *nic, struct uroce_context *ctx);
void uroce_daemon_link_leave(struct uroce_context *ctx);

/* limits.c */
void uroce_limits_init(struct uroce_nic *nic);
/* Count one more object of kind `o`: 0, or ENOMEM beyond the advertised limit. */
int uroce_obj_get(struct uroce_nic *nic, enum uroce_obj o);
void uroce_obj_put(struct uroce_nic *nic, enum uroce_obj o);

/* progress.c */
int uroce_progress_start(struct uroce_nic *nic);
void uroce_progress_stop(struct uroce_nic *nic);
/* Run the engine once from an application call if nobody else is; frames moved. */
unsigned uroce_progress_kick(struct uroce_nic *nic);
/* After ringing a doorbell: a pass now, unless one is coming anyway. */
void uroce_progress_post(struct uroce_nic *nic);
/* Transmit what is ready; the caller holds nic->lock (destroy_qp). */
void uroce_progress_tx_locked(struct uroce_nic *nic);
/* An application poll found nothing (moved false): yield after a while of it. */
void uroce_progress_idle(struct uroce_nic *nic, bool moved);
/* An application armed a CQ: a progress thread napping beside it runs passes again. */
void uroce_progress_armed(struct uroce_nic *nic);
/* After a holder other than a pass's lets nic->lock go: wake a sleeping
 * progress thread for a doorbell a failed kick left to it. */
void uroce_progress_unlocked(struct uroce_nic *nic);
/* Passes until the frames stop or budget_ns is spent; the caller holds nic->lock. */
unsigned uroce_progress_drain(struct uroce_nic *nic, uint64_t budget_ns);
uint64_t uroce_now_ns(void);

/* answerer.c */
/* The progress lock: priority-inheriting, so a late answer boosts a preempted holder. */
void uroce_answerer_lock_init(pthread_mutex_t *lock);
void uroce_answerer_start(struct uroce_nic *nic);
void uroce_answerer_stop(struct uroce_nic *nic);
extern const struct ur_host_ops uroce_host_ops;

/* rdmacm_gsi.c */
/* Run the connection manager on device `name` (its QP 1), from a thread of its own. */
void urcm_serve(const char *name);

/* log.c */
void uroce_log(struct uroce_nic *nic, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A refused verbs call: logs (UROCE_DEBUG=1) which attribute was refused and why; returns err. */
int uroce_refuse(struct uroce_nic *nic, int err, const char *call, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* events.c */
/* Queue an asynchronous event; false when it could not be (the application reads none). */
bool uroce_async_event(struct uroce_context *ctx, enum ibv_event_type type, uint64_t element);
int uroce_channel_writer(struct ibv_comp_channel *ch);
unsigned uroce_drain_events(int rd_fd, int wr_fd, uint64_t element, size_t rec_size);

/* qp.c */
void uroce_neigh_poll(struct uroce_nic *nic, uint64_t now);
/* Resolve an address vector's destination MAC, waiting up to `wait_ns`. */
int uroce_resolve_av(struct uroce_nic *nic, struct ur_av *av, uint64_t wait_ns);
/* Would creating an AH to gid (or moving a QP's path to it) wait for ARP/ND
 * now? Starts the asking, does not wait: for callers that hold a lock. */
bool uroce_neigh_would_wait(struct ibv_context *ctx, const uint8_t gid[16]);
/* gid's MAC, waited for as create_ah waits (up to 3 s): 0 or -EHOSTUNREACH. */
int uroce_neigh_resolve(struct ibv_context *ctx, const uint8_t gid[16]);
/* `call` names the verbs call in the refusal's log line. */
int uroce_av_from_attr(struct uroce_nic *nic, const struct ibv_ah_attr *ah, struct ur_av *av,
		       const char *call);

/* qpn.c: called with nic->lock held (init: before the progress thread starts) */
void uroce_qpn_init(struct uroce_nic *nic);
int uroce_qpn_alloc(struct uroce_nic *nic, uint32_t *qpn);
void uroce_qpn_free(struct uroce_nic *nic, uint32_t qpn);

/* The verbs operations (device.c installs them), by the file that implements them. */
struct ibv_pd *uroce_alloc_pd(struct ibv_context *ctx);
int uroce_dealloc_pd(struct ibv_pd *pd);
struct ibv_mr *uroce_reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t hca_va,
			    int access);
int uroce_dereg_mr(struct verbs_mr *vmr);
/* mw.c */
struct ibv_mw *uroce_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int uroce_dealloc_mw(struct ibv_mw *mw);
int uroce_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind);
struct ibv_cq *uroce_create_cq(struct ibv_context *ctx, int cqe, struct ibv_comp_channel *ch,
			       int vector);
int uroce_destroy_cq(struct ibv_cq *cq);
int uroce_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int uroce_req_notify_cq(struct ibv_cq *cq, int solicited_only);
/* Arm a CQ of the provider's own (the CM's): as ibv_req_notify_cq, but the application
 * is not taken to wait on events (progress.c, app_polls). */
void uroce_cq_arm(struct ibv_cq *cq, int solicited_only);
void uroce_cq_event(struct ibv_cq *cq);
int uroce_resize_cq(struct ibv_cq *cq, int cqe);
/* cq.c: a CQ of `cqe` entries for create_cq and create_cq_ex; with_ts keeps completion times */
struct uroce_cq *uroce_cq_new(struct ibv_context *ibctx, int cqe, struct ibv_comp_channel *ch,
			      int vector, struct uroce_pd *pdom, bool with_ts);
/* cq_ex.c */
struct ibv_cq_ex *uroce_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *attr);
int uroce_query_rt_values(struct ibv_context *ctx, struct ibv_values_ex *values);
/* pd_mr.c */
int uroce_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd, void *addr, size_t length,
		   int access);
/* odp.c: on-demand paging */
int uroce_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		    struct ibv_sge *sg_list, uint32_t num_sge);
/* Fault [p, p+len) in, writable if `write`: false if the memory cannot be (not mapped, read-only). */
bool uroce_odp_fault_in(void *p, uint64_t len, bool write);
/* What the kernel offers for implicit regions (MADV_POPULATE_*, Linux 5.14): probed once. */
bool uroce_odp_implicit_ok(void);
/* dm.c */
struct ibv_dm *uroce_alloc_dm(struct ibv_context *ctx, struct ibv_alloc_dm_attr *attr);
int uroce_free_dm(struct ibv_dm *dm);
struct ibv_mr *uroce_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm, uint64_t off, size_t length,
			       unsigned int access);
/* parent_domain.c */
struct ibv_td *uroce_alloc_td(struct ibv_context *ctx, struct ibv_td_init_attr *attr);
int uroce_dealloc_td(struct ibv_td *td);
struct ibv_pd *uroce_alloc_parent_domain(struct ibv_context *ctx,
					 struct ibv_parent_domain_init_attr *attr);
/* A parent domain's end (dealloc_pd); EBUSY while objects are in it. */
int uroce_dealloc_parent_domain(struct uroce_pd *pdom);
/* Zeroed memory from a parent domain's allocator into *out (NULL when the
 * domain has none or it says IBV_ALLOCATOR_USE_DEFAULT); ENOMEM if it fails. */
int uroce_pd_alloc(struct uroce_pd *pdom, size_t size, uint64_t type, void **out);
void uroce_pd_free(struct uroce_pd *pdom, void *ptr, uint64_t type);
/* For ur_qp_init.alloc: the parent domain's allocator for a QP's work queues, or NULL. */
const struct ur_alloc *uroce_pd_queue_alloc(struct uroce_pd *pd);
struct ibv_qp *uroce_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
struct ibv_qp *uroce_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr);
int uroce_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
int uroce_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		   struct ibv_qp_init_attr *init);
int uroce_destroy_qp(struct ibv_qp *qp);
/* QP 1 of the context's device, UD, for the connection manager (rdmacm_gsi.c). */
struct ibv_qp *uroce_create_gsi_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
int uroce_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
/* post_wr.c: the ibv_wr_* builders for send_ops_flags; a positive errno if one is not offered. */
int uroce_qp_ex_init(struct uroce_qp *uqp, uint64_t send_ops_flags);
int uroce_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
struct ibv_srq *uroce_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr);
int uroce_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask);
int uroce_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int uroce_destroy_srq(struct ibv_srq *srq);
int uroce_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
struct ibv_srq *uroce_create_srq_ex(struct ibv_context *ctx, struct ibv_srq_init_attr_ex *attr);
int uroce_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num);
struct ibv_xrcd *uroce_open_xrcd(struct ibv_context *ctx, struct ibv_xrcd_init_attr *attr);
int uroce_close_xrcd(struct ibv_xrcd *xrcd);
/* The device's last context closes: its XRC domains go (xrcd.c). */
void uroce_xrcd_take_back(struct uroce_nic *nic);
struct ibv_ah *uroce_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
int uroce_destroy_ah(struct ibv_ah *ah);
void uroce_async_event_done(struct ibv_context *ctx, struct ibv_async_event *ev);

/* Objects a context closed with, taken back as the kernel does at close (nic->lock held). */
void uroce_qp_take_back(struct uroce_nic *nic, struct uroce_qp *uqp);
void uroce_srq_take_back(struct uroce_nic *nic, struct uroce_srq *usrq);
void uroce_mr_take_back(struct uroce_nic *nic, struct uroce_mr *mr);
void uroce_mw_take_back(struct uroce_nic *nic, struct uroce_mw *mw);
void uroce_ah_take_back(struct uroce_nic *nic, struct uroce_ah *ah);
void uroce_cq_take_back(struct uroce_nic *nic, struct uroce_cq *ucq);
void uroce_pd_take_back(struct uroce_nic *nic, struct uroce_pd *pd);

/* counters_files.c: the housekeeper's periodic rewrite, or anyone's last one */
void uroce_counters_write(struct uroce_nic *nic, bool final);

/* steer.c: take the frames for our QP number blocks (nic->lock held) */
int uroce_steer_update(struct uroce_nic *nic);

#endif
