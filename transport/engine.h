/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The uroce transport engine: everything a host (the DPDK dataplane or the
 * simulator) calls. The engine is sans-I/O: time comes in as an argument in
 * nanoseconds, frames come in as bytes, frames go out through the host's
 * tx_get/tx_put, and the host asks when the engine next needs attention.
 *
 * Threading: one thread at a time runs any ur_dev_* / ur_qp_* function
 * (the host serialises them, e.g. with a progress lock), except the
 * poster/poller helpers in queue.h, ur_qp_state() and ur_qp_doorbell(),
 * which an application thread may call at any time.
 */
#ifndef UR_ENGINE_H
#define UR_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "counters.h"
#include "mr.h"
#include "queue.h"
#include "verbs_types.h"

struct ur_dev;
struct ur_qp;
struct ur_srq;

/* No deadline: the engine needs no attention until something arrives or is posted. */
#ifndef UR_TIME_NEVER
#define UR_TIME_NEVER UINT64_MAX
#endif

/* A transmit buffer lent by the host: the engine writes one whole frame. */
struct ur_txbuf {
	uint8_t *data;
	uint32_t cap;
	void *cookie; /* the host's handle (e.g. an mbuf) */
	/* the engine zeroes it before tx_get; a host's tx_put may set it when
	 * the frame's receiver is behind (a process of the same device whose
	 * ring is full): its QP then sends nothing more for this long, as a
	 * NIC's loopback holds a sender back */
	uint32_t hold_ns;
};

struct ur_host_ops {
	/* Lend a buffer of at least UR_FRAME_MAX bytes; -ENOBUFS when the port is full. */
	int (*tx_get)(void *host, struct ur_txbuf *b);
	/* Hand back a buffer holding a frame of `len` bytes to send (len 0: unused). */
	void (*tx_put)(void *host, struct ur_txbuf *b, uint32_t len);
	/* An armed CQ received a completion. */
	void (*cq_event)(void *host, struct ur_cq *cq);
	/* An affiliated asynchronous event; obj is the QP, SRQ or CQ's host_ctx. */
	void (*async_event)(void *host, enum ur_async_event ev, void *obj);
	/* 64 random bits (keys, initial values); a seeded PRNG in the simulator. */
	uint64_t (*random)(void *host);
	/* Optional: one line explaining a QP transition or its first error. */
	void (*log)(void *host, const char *line);
	/* Optional: fault in [p, p+len) of a sparse (implicit on-demand)
	 * region before the engine touches it; false: it cannot be. */
	bool (*fault_in)(void *p, uint64_t len, bool write);
};

/* Largest frame the engine builds: 4096 payload + every header + ICRC. */
#define UR_FRAME_MAX 4224

enum ur_retx_mode {
	UR_RETX_GBN = 0, /* IBTA go-back-N only */
	UR_RETX_SR,      /* selective repeat when the peer agrees */
};

/*
 * DCQCN reaction-point parameters, named after mlx5's knobs
 * (sysfs ecn/roce_rp/ and mlxconfig RPG_ and DCE_TCP_ settings), with
 * the same units; ur_dcqcn_params_default() fills NVIDIA's documented
 * firmware defaults. transport/dcqcn.h says how each one is used.
 */
struct ur_dcqcn_params {
	uint32_t rpg_time_reset_us;      /* rate-increase timer period (300) */
	uint32_t rpg_byte_reset;         /* rate-increase byte counter, bytes; 0 = off (32767) */
	uint32_t rpg_threshold;          /* F: fast-recovery events before increasing (1) */
	uint32_t rpg_max_rate_mbps;      /* release the limiter at this rate; 0 = line rate (0) */
	uint32_t rpg_ai_rate_mbps;       /* additive increase of the target rate (5) */
	uint32_t rpg_hai_rate_mbps;      /* hyper increase of the target rate (50) */
	uint32_t rpg_gd;                 /* cut: rate -= rate * alpha / 2^rpg_gd, alpha in 1/1024 (11) */
	uint32_t rpg_min_dec_fac;        /* a cut keeps at least this percentage of the rate (50) */
	uint32_t rpg_min_rate_mbps;      /* floor of the current and target rates (1) */
	uint32_t rate_to_set_on_first_cnp_mbps; /* rate of a new limiter; 0 = line rate (0) */
	uint32_t dce_tcp_g;              /* alpha keeps dce_tcp_g/1024 of itself per update (1019) */
	uint32_t dce_tcp_rtt_us;         /* alpha decay period without CNPs (1) */
	uint32_t rate_reduce_monitor_period_us; /* at most one cut per period (4) */
	uint32_t initial_alpha_value;    /* alpha of a new limiter, 1/1024 (1023) */
	bool clamp_tgt_rate;             /* every cut sets the target rate to the current (0) */
	bool clamp_tgt_rate_after_time_inc; /* also after a timer increase, not only a byte one (1) */
};

struct ur_dev_config {
	uint32_t max_mtu;          /* largest path MTU in bytes (256..4096) */
	uint32_t ack_req_every;    /* requester sets AckReq at least every N packets */
	uint32_t max_inflight;     /* unacknowledged packets per QP */
	uint32_t max_peer_inflight; /* ...and of all QPs toward one peer together */
	uint32_t peer_qpn_shift;   /* a peer is a GID and a block of 1 << this QP numbers */
	uint32_t max_qp_rd_atom;   /* responder resources per QP: max_dest_rd_atomic's limit,
				    * advertised, and held (1..UR_MAX_RD_ATOMIC) */
	uint32_t max_qp_init_rd_atom; /* initiator depth: READs/atomics a QP keeps outstanding
				       * at most, whatever larger max_rd_atomic it is given */
	uint8_t data_ecn;          /* ECN codepoint of data packets (ECT(0) = 2) */
	uint8_t cnp_dscp;          /* DSCP of CNPs */
	uint64_t cnp_interval_ns;  /* min_time_between_cnps: at most one CNP per QP per interval */
	uint32_t link_rate_mbps;   /* line rate, for DCQCN */
	bool dcqcn;                /* react to CNPs */
	bool ecn_np;               /* send CNPs for CE-marked packets */
	enum ur_retx_mode retx_mode;
	uint32_t sr_window;        /* SR: packets accepted ahead of the expected PSN (power of 2) */
	uint64_t sr_rto_low_ns;    /* SR: retransmission timeout with few packets in flight */
	uint64_t sr_rto_high_ns;   /* SR: retransmission timeout otherwise */
	uint32_t sr_low_inflight;  /* SR: "few" means fewer than this */
	uint64_t sr_rto_start_ns;  /* SR: the RTO's floor until a QP has timed 64 round trips (0: none) */
	uint64_t sr_rto_stall_ns;  /* SR: with many in flight, the RTO's floor for host stalls, not doubled (0: none) */
	uint64_t ack_delay_ns;     /* a QP sending requests holds a plain ACK this long for one to ride behind (0: never) */
	struct ur_dcqcn_params dcqcn_params;
};

void ur_dev_config_default(struct ur_dev_config *cfg);
/* NVIDIA's documented DCQCN defaults (ur_dev_config_default uses them). */
void ur_dcqcn_params_default(struct ur_dcqcn_params *p);
/* The DCQCN paper's settings (dcqcn.c says which); use a 50 us CNP interval with them. */
void ur_dcqcn_params_paper(struct ur_dcqcn_params *p);
#define UR_DCQCN_PAPER_CNP_INTERVAL_NS 50000

/*
 * Create a device. `counters` may point at UR_CTR_COUNT uint64_t the host
 * wants counted into (e.g. shared memory); NULL lets the engine own them.
 */
int ur_dev_create(const struct ur_dev_config *cfg, const struct ur_host_ops *ops, void *host,
		  uint64_t *counters, struct ur_dev **out);
void ur_dev_destroy(struct ur_dev *dev);
uint64_t *ur_dev_counters(struct ur_dev *dev);
const struct ur_dev_config *ur_dev_config(const struct ur_dev *dev);

/* Process one received frame. */
void ur_dev_rx(struct ur_dev *dev, const uint8_t *frame, uint32_t len, uint64_t now);
/* Run doorbells and due timers. */
void ur_dev_poll(struct ur_dev *dev, uint64_t now);
/* Run doorbells only: the host defers the timers (ur_dev_poll) a while. */
void ur_dev_run_doorbells(struct ur_dev *dev, uint64_t now);
/* Build and hand over up to `budget` frames; returns how many. */
unsigned ur_dev_tx(struct ur_dev *dev, uint64_t now, unsigned budget);
/* The host lost the CPU in the middle of the poll and transmit stages it
 * ran at `at`, and had it back at `now`: what they sent left at `now`. */
void ur_dev_tx_late(struct ur_dev *dev, uint64_t at, uint64_t now);
/* True when ur_dev_tx would send something now. */
bool ur_dev_tx_pending(const struct ur_dev *dev);
/* Any thread: true when an application rang a doorbell the engine has not seen. */
bool ur_dev_doorbell_pending(const struct ur_dev *dev);
/* When ur_dev_poll must next run (UR_TIME_NEVER when idle). */
uint64_t ur_dev_next_deadline(const struct ur_dev *dev);
/*
 * The longest a host need sleep between passes, however far the deadline:
 * a retransmit timer armed meanwhile falls due no sooner, so a host that
 * sleeps no longer need not be woken each time a send arms one
 * (UR_TIME_NEVER when no QP has an ACK timeout).
 */
uint64_t ur_dev_quiet_ns(const struct ur_dev *dev);

/* Memory regions. */
int ur_dev_reg_mr(struct ur_dev *dev, uint64_t iova, void *base, uint64_t length,
		  uint32_t access, uint32_t pd, struct ur_mr **out);
/* Unbinds the windows bound to it (the provider refuses while any are: EBUSY). */
void ur_dev_dereg_mr(struct ur_dev *dev, struct ur_mr *mr);

/* Memory windows (mw.c): type 1 or 2 (enum ibv_mw_type), unbound until a bind. */
int ur_dev_alloc_mw(struct ur_dev *dev, unsigned type, uint32_t pd, struct ur_mr **out);
void ur_dev_dealloc_mw(struct ur_dev *dev, struct ur_mr *mw);

/* Shared receive queues. */
int ur_srq_create(struct ur_dev *dev, uint32_t max_wr, uint32_t max_sge, uint32_t pd,
		  void *host_ctx, struct ur_srq **out);
void ur_srq_destroy(struct ur_srq *srq);
struct ur_wq *ur_srq_wq(struct ur_srq *srq);
/* The SRQ's number (XRCETH, ibv_get_srq_num): unique on the device while it lives. */
uint32_t ur_srq_num(const struct ur_srq *srq);
/* Make it an XRC SRQ of domain `xrcd` (non-zero) whose receives complete on `cq`. */
void ur_srq_set_xrc(struct ur_srq *srq, uint32_t xrcd, struct ur_cq *cq);
/* Arm the limit event: fires once when fewer than `limit` WQEs remain (0 disarms). */
void ur_srq_set_limit(struct ur_srq *srq, uint32_t limit);
uint32_t ur_srq_limit(const struct ur_srq *srq);

/* Queue pairs. */
struct ur_qp_init {
	enum ur_qp_type type;
	uint32_t qpn;
	uint32_t pd;
	uint32_t xrcd;        /* XRC_RECV: its XRC domain (non-zero) */
	struct ur_cq *send_cq; /* none for XRC_RECV */
	struct ur_cq *recv_cq; /* none for XRC_SEND and XRC_RECV */
	struct ur_srq *srq;
	/* requested capacities; ur_qp_create writes back what it granted */
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
	bool sq_sig_all;
	void *host_ctx;
	const struct ur_alloc *alloc; /* the work queues' memory; NULL: malloc */
};

/* Engine limits, advertised by query_device. */
#define UR_MAX_WR 16384
#define UR_MAX_SGE 32
#define UR_MAX_INLINE 512
/* The largest max_qp_rd_atom a device may be configured with (Soft-RoCE's) */
#define UR_MAX_RD_ATOMIC 128
/* ...and the default, mlx5's: see docs/rd_atomic.md for why not 128 */
#define UR_DEFAULT_RD_ATOMIC 16
#define UR_MAX_CQE (1u << 20)

int ur_qp_create(struct ur_dev *dev, struct ur_qp_init *init, struct ur_qp **out);
void ur_qp_destroy(struct ur_qp *qp);
/* An ACK held for a request to ride behind leaves on the next transmit
 * (before destroy); false if none was held. */
bool ur_qp_release_ack(struct ur_qp *qp);
/* Returns 0 or -EINVAL for an illegal transition or attribute set (IBTA 10.3.1). */
int ur_qp_modify(struct ur_qp *qp, const struct ur_qp_attr *attr, uint32_t mask, uint64_t now);
/* What ur_qp_modify checks before it changes anything: 0, or -EINVAL with
 * the attribute behind the refusal named in `why` (may be NULL). */
int ur_qp_modify_check(const struct ur_qp *qp, const struct ur_qp_attr *attr, uint32_t mask,
		       char *why, size_t len);
void ur_qp_query(const struct ur_qp *qp, struct ur_qp_attr *attr);
struct ur_wq *ur_qp_sq(struct ur_qp *qp);
struct ur_wq *ur_qp_rq(struct ur_qp *qp);
uint32_t ur_qp_num(const struct ur_qp *qp);
enum ur_qp_type ur_qp_service(const struct ur_qp *qp); /* RC, UC, UD, XRC_SEND or XRC_RECV */
void *ur_qp_host_ctx(const struct ur_qp *qp);
/* Any thread: the QP's current state. */
enum ur_qp_state ur_qp_state(const struct ur_qp *qp);
/* Any thread: WQEs were published on the QP's queues. */
void ur_qp_doorbell(struct ur_qp *qp);
/* Update the destination MAC once the neighbour is resolved. */
void ur_qp_set_dmac(struct ur_qp *qp, const uint8_t dmac[6]);
/* DCQCN: the QP's current rate in kb/s, or 0 when it is not rate limited. */
uint64_t ur_qp_rate_kbps(const struct ur_qp *qp);
/* Whether the QP currently runs selective repeat (negotiated with its peer). */
bool ur_qp_selective(const struct ur_qp *qp);

const char *ur_qp_state_name(enum ur_qp_state s);
const char *ur_wc_status_name(enum ur_wc_status s);

#endif
