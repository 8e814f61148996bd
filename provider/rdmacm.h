/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rdma_cm for uroce devices, in the program: librdmacm's API (channels,
 * ids, addresses, QPs, connections and synchronous endpoints, one file
 * each) over IBTA connection management on each device's QP 1 (rdmacm_gsi.c),
 * with transport/cm.c's state machine per connection. Loaded with
 * LD_PRELOAD (what `uroce env` sets up), the rdma_* functions here take
 * the place of librdmacm's, which would need the kernel's rdma_ucm.
 * docs/rdma-cm.md has the design.
 */
#ifndef UROCE_RDMACM_H
#define UROCE_RDMACM_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <stdbool.h>
#include <stdint.h>

#include "cm.h"
#include "cm_ip.h"
#include "uroce.h"

/* What librdmacm exports, uroce.map lists */
#define API __attribute__((visibility("default")))

#define URCM_GSI_SLOTS 64	/* receive buffers of a GSI QP */
#define URCM_GSI_SEND_SLOTS 64	/* send buffers, used round robin */
#define URCM_SLOT_BYTES 512	/* a GRH (40) and a MAD (256), rounded up */
#define URCM_PACKET_LIFETIME 16 /* as Linux's CM assumes over RoCE (cma.c) */
#define URCM_RESPONSE_TIMEOUT 20
#define URCM_MAX_CM_RETRIES 15
#define URCM_UDP_QKEY 0x01234567u /* RDMA_UDP_QKEY: what UD ids use */

/* A uroce device the CM uses: our own context on it, its GSI QP. */
/* A port this program listens on, as the device's other programs see it. */
struct urcm_port {
	struct urcm_port *next;
	struct urcm_id *owner; /* a listener of ours on the port */
	uint16_t ps, port;
	int fd;
	uint64_t ino; /* its file (rdmacm_route.c) */
};

struct urcm_dev {
	struct urcm_dev *next;
	struct ibv_context *verbs;
	struct ibv_pd *pd; /* for the GSI, and QPs made without one */
	struct ibv_comp_channel *chan;
	struct ibv_cq *cq;
	struct ibv_qp *gsi; /* NULL until a listen or a connect needs it */
	struct ibv_mr *mr;
	uint8_t *buf; /* receive slots, then send slots */
	unsigned send_next;
	unsigned sends_out; /* MADs posted, not yet sent */
	uint64_t guid;
	uint8_t mtu;		    /* the port's active MTU, IB enum */
	uint8_t max_resp, max_init; /* max_qp_rd_atom, max_qp_init_rd_atom */
	int route_fd;		    /* our slot's socket (rdmacm_route.c), or -1 */
	unsigned slot;		    /* the top bits of our communication IDs; 0: none */
	struct urcm_port *ports;    /* the ports we listen on, named for other programs */
	bool removed;		    /* IBV_EVENT_DEVICE_FATAL came: its ids were told */
	int ngids;
	union ibv_gid gids[16];
};

enum urcm_state {
	URCM_IDLE,
	URCM_BOUND,
	URCM_ADDR_QUERY,
	URCM_ADDR_RESOLVED,
	URCM_ROUTE_RESOLVED,
	URCM_LISTEN,
	URCM_CONNECT,  /* REQ or SIDR_REQ sent */
	URCM_REQ_RCVD, /* a passive id, before accept or reject */
	URCM_ACCEPTED, /* REP sent, waiting for the RTU */
	URCM_CONNECTED,
	URCM_DISCONNECTED,
};

struct urcm_channel {
	struct rdma_event_channel ch; /* ch.fd: read end of a pipe, a byte per event */
	int wr_fd;
	struct urcm_event *head, **tail;
	unsigned waiters; /* threads inside rdma_get_cm_event */
	bool dead;	  /* destroyed while one waited: it stays, they wait on */
	/* which threads read it: an event thread other than the one that
	 * destroys it may be on its way back (rdma_destroy_event_channel) */
	bool read_once, readers_differ;
	pthread_t reader;
};

struct urcm_event {
	struct rdma_cm_event ev;
	struct urcm_event *next;
	uint8_t pdata[UR_CM_REP_PDATA]; /* the largest private data an event carries */
};

/*
 * What librdmacm's own code (rsockets, in librdmacm.so, calls its internal
 * ucma_complete on our ids) reads of an id: the head of its private id,
 * struct cma_id_private in rdma-core v44's cma.c. Only `sync` is read.
 */
struct urcm_lib_view {
	void *cma_dev;
	void *connect;
	size_t connect_len;
	int events_completed;
	int connect_error;
	int sync; /* 1: the id's calls wait for their event on id.channel */
};

struct urcm_id {
	struct rdma_cm_id id;
	struct urcm_lib_view lib; /* right after id, as in librdmacm */
	struct urcm_id *next;	  /* every id of the process */
	struct urcm_dev *dev;	  /* NULL while bound to the wildcard */
	enum urcm_state state;
	struct ur_cm_id cm;	  /* the connection's endpoint, once there is one */
	bool cm_live;		  /* cm is in use: its timer runs, MADs find it */
	struct urcm_id *listener; /* a passive id: who listened, while it exists */
	bool passive;		  /* made by a REQ or SIDR_REQ */
	int backlog;
	int sgid_index;
	struct ibv_ah *ah; /* the GSI's address of the peer's QP 1 */
	uint32_t psn;	   /* where our QP starts sending */
	uint8_t tos;
	uint8_t ack_timeout; /* rdma_set_option(RDMA_OPTION_ID_ACK_TIMEOUT), 0: ours */
	bool reuseaddr, afonly;
	bool removal_told; /* RDMA_CM_EVENT_DEVICE_REMOVAL queued */
	bool own_cqs; /* rdma_create_qp made the CQs */
	/* a synchronous id (made without a channel): its calls wait for their
	 * event here and leave it in id.event until the next, as librdmacm's */
	struct rdma_event_channel *sync;
	struct ibv_qp_init_attr *ep_attr; /* a passive endpoint's: QPs for rdma_get_request */
	struct ibv_pd *ep_pd;
	unsigned events_out; /* handed to the program, not yet acknowledged */
	pthread_cond_t acked;
};

static_assert(offsetof(struct urcm_id, lib) == sizeof(struct rdma_cm_id) &&
		  offsetof(struct urcm_lib_view, sync) == 4 * sizeof(void *),
	      "librdmacm v44's struct cma_id_private");

/* The process's CM: one lock for all of it (connection set-up is not a fast path). */
extern pthread_mutex_t urcm_lock;

/* rdmacm_route.c: CM MADs between the programs of one device (lock held) */
#define URCM_SLOT_SHIFT 20 /* communication IDs: slot << 20 | 20 random bits */
#define URCM_SLOTS 4095
typedef void (*urcm_mad_fn)(struct urcm_dev *dev, const struct ibv_wc *wc, const uint8_t *buf);
/* Bind this program's slot on dev (0, or -errno: then IDs are random, MADs stay here). */
int urcm_route_start(struct urcm_dev *dev);
/* A new communication ID of ours on dev. */
uint32_t urcm_comm_id(const struct urcm_dev *dev);
/* REQs to the listener id's port, from other programs of dev, come to us. */
int urcm_route_listen(struct urcm_id *id, struct urcm_dev *dev);
void urcm_route_unlisten(struct urcm_id *id);
/* Pass the MAD m (as received: wc, buf) to the program of dev it is for: true if sent. */
bool urcm_route_forward(struct urcm_dev *dev, const struct ibv_wc *wc, const uint8_t *buf,
			const struct ur_cm_mad *m);
/* dev's sockets to poll (of[i]: whose), at most max; then what came on one, to fn. */
unsigned urcm_route_fds(struct urcm_dev *dev, struct pollfd *p, struct urcm_dev **of, unsigned max);
void urcm_route_rx(struct urcm_dev *dev, int fd, urcm_mad_fn fn);

/* rdmacm_addr.c */
/* The address's IP as text, for the log. */
const char *urcm_addr_str(const struct sockaddr *a, char *buf, size_t len);

/* rdmacm_gsi.c */
/* Our context on the uroce device holding this address (IPv4 or IPv6), and the GID's index. */
struct urcm_dev *urcm_dev_by_addr(const struct sockaddr *a, int *gid_index);
/* The first device with a GID of the family (AF_INET: IPv4-mapped), for a loopback bind. */
struct urcm_dev *urcm_dev_first(int family, int *gid_index);
/* Every uroce device of the namespace (for a wildcard listen), opened. */
int urcm_dev_open_all(void);
struct urcm_dev *urcm_devs(void);
/* The device's QP 1 and its thread, made the first time. */
int urcm_gsi_start(struct urcm_dev *dev);
/*
 * Make sure an AH to gid, or a QP moved to it, will not wait on the network
 * with urcm_lock held (held on entry): when gid's MAC is not known yet, the
 * lock is dropped while it is found (ARP/ND, up to 3 s) and taken again,
 * so the program's other rdma_cm calls and the CM thread go on meanwhile.
 * Returns true when the lock was dropped: whatever the caller looked up or
 * checked under it before may have changed, and must be again.
 */
bool urcm_neigh_unlocked(struct urcm_dev *dev, const union ibv_gid *gid);
/* The address as a GID (IPv4-mapped for IPv4); false for another family. */
bool urcm_addr_gid(const struct sockaddr *a, union ibv_gid *g);
/* The peer's and our GID of a received datagram, from its GRH area. */
void urcm_grh_gids(const struct ibv_grh *grh, union ibv_gid *remote, union ibv_gid *local);
/* Send m from QP 1 to the peer's QP 1 at ah. */
int urcm_send(struct urcm_dev *dev, struct ibv_ah *ah, const struct ur_cm_mad *m);
/* What one endpoint call produced: its MAD out, its event to the program. */
void urcm_out(struct urcm_id *id, const struct ur_cm_out *out);
/*
 * Wait (lock held) up to a while for the MADs posted to leave: a program
 * that disconnects and exits at once takes its CM with it, and its DREQ
 * must be on the wire by then (the kernel's CM would resend it after).
 */
void urcm_flush(struct urcm_dev *dev);
/* The CM thread sleeps until the earliest deadline: say a new one may be earlier. */
void urcm_kick(void);
uint64_t urcm_now(void);
uint32_t urcm_random(void);

/* rdmacm_channel.c */
/* Queue an event for the program on the id's channel (lock held). */
struct urcm_event *urcm_event(struct urcm_id *id, enum rdma_cm_event_type type, int status);
/* Take the queued events that name id off channel c (lock held): freed, or onto `to`. */
void urcm_move_events(struct urcm_channel *c, struct urcm_id *id, struct urcm_channel *to);

/* rdmacm_id.c */
struct urcm_id *urcm_ids(void);
struct urcm_id *urcm_new_id(struct rdma_event_channel *ch, void *context, enum rdma_port_space ps,
			    enum ibv_qp_type qp_type);

/* rdmacm_addr.c: the id's verbs, PD, port and source GID from its device */
void urcm_set_gids(struct urcm_id *id);

/* rdmacm_qp.c: the QP's states as the kernel's CM moves them */
struct ur_cm_qp_attr;
int urcm_qp_connect(struct urcm_id *id, const struct ur_cm_qp_attr *c);
void urcm_qp_to_error(struct urcm_id *id);

/* rdmacm_conn.c */
void urcm_on_rep(struct urcm_id *id);
struct urcm_id *urcm_passive_id(struct urcm_id *listener, struct urcm_dev *dev,
				const struct ibv_wc *wc, const struct ibv_grh *grh);

/* rdmacm_ep.c: a synchronous id's wait for the outcome of its call */
int urcm_sync_wait(struct urcm_id *id, enum rdma_cm_event_type want);
/* Make id synchronous on a channel of its own (0), or -1 with errno. */
int urcm_make_sync(struct urcm_id *id);
/* Give back the event a synchronous id holds (librdmacm's id->event). */
void urcm_sync_release(struct urcm_id *id);

/* A verbs GID as the engine's (the same 16 bytes). */
static inline struct ur_gid *to_ur_gid(union ibv_gid *g)
{
	return (struct ur_gid *)g->raw;
}

static inline struct urcm_id *to_urcm(struct rdma_cm_id *id)
{
	return to_type(id, struct urcm_id, id);
}

static inline struct urcm_channel *to_uchan(struct rdma_event_channel *ch)
{
	return to_type(ch, struct urcm_channel, ch);
}

static inline int urcm_fail(int err)
{
	errno = err;
	return -1;
}

static inline socklen_t addr_len(const struct sockaddr *a)
{
	return a->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

static inline bool is_wildcard(const struct sockaddr *a)
{
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr == INADDR_ANY;
	return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)a)->sin6_addr);
}

static inline bool is_loopback(const struct sockaddr *a)
{
	if (a->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127;
	return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)a)->sin6_addr);
}

static inline uint16_t *port_of(struct sockaddr *a)
{
	return a->sa_family == AF_INET6 ? &((struct sockaddr_in6 *)a)->sin6_port
					: &((struct sockaddr_in *)a)->sin_port;
}

static inline void out_send(struct urcm_id *id, int err, const struct ur_cm_out *out)
{
	if (!err)
		urcm_out(id, out);
}

#endif
