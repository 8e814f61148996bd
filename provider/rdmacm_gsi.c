/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The connection manager's side of each uroce device, in the program: our
 * own context on the device, its QP 1 (the GSI, UD, Q_Key 0x80010000) that
 * sends and receives the CM's MADs, and one thread for the process that
 * takes the MADs in, hands each to the endpoint it names (transport/cm.c),
 * answers the ones nobody takes as Linux's CM does, and runs the
 * endpoints' resend and TimeWait timers. Frames for QP 1 reach the
 * process that writes the device's counters (provider/steer.c), so on a
 * device several programs share, the CM serves that one (docs/rdma-cm.md).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "rdmacm.h"
#include "uroce.h"

pthread_mutex_t urcm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct urcm_dev *devs;
static bool devs_scanned;
static pthread_t thread;
static int wake_fd = -1;
static pthread_cond_t sent = PTHREAD_COND_INITIALIZER;

#define FLUSH_WAIT_NS 500000000ull

uint64_t urcm_now(void)
{
	return uroce_now_ns();
}

uint32_t urcm_random(void)
{
	uint32_t v;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint32_t)(urcm_now() * 2654435761u);
	return v;
}

struct urcm_dev *urcm_devs(void)
{
	return devs;
}

static int dev_add(struct ibv_device *d)
{
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	struct urcm_dev *dev;
	struct ibv_context *ctx = ibv_open_device(d);

	if (!ctx)
		return -errno;
	if (!uroce_is_ours(ctx) || ibv_query_port(ctx, 1, &pa)) {
		ibv_close_device(ctx);
		return 0;
	}
	dev = calloc(1, sizeof(*dev));
	if (!dev) {
		ibv_close_device(ctx);
		return -ENOMEM;
	}
	dev->verbs = ctx;
	dev->route_fd = -1;
	dev->mtu = (uint8_t)pa.active_mtu;
	if (!ibv_query_device(ctx, &da)) {
		dev->max_resp = (uint8_t)(da.max_qp_rd_atom > 255 ? 255 : da.max_qp_rd_atom);
		dev->max_init =
		    (uint8_t)(da.max_qp_init_rd_atom > 255 ? 255 : da.max_qp_init_rd_atom);
	}
	dev->guid = ibv_get_device_guid(d);
	for (int i = 0; i < pa.gid_tbl_len && i < 16; i++)
		if (!ibv_query_gid(ctx, 1, i, &dev->gids[i]))
			dev->ngids = i + 1;
	dev->pd = ibv_alloc_pd(ctx);
	if (!dev->pd) {
		ibv_close_device(ctx);
		free(dev);
		return -ENOMEM;
	}
	dev->next = devs;
	devs = dev;
	return 0;
}

/* Every uroce device of the namespace, opened once (lock held). */
int urcm_dev_open_all(void)
{
	struct ibv_device **list;
	int n, err = 0;

	if (devs_scanned)
		return 0;
	list = ibv_get_device_list(&n);
	if (!list)
		return -errno;
	/* one scan: a device that will not open (another provider's, or one
	 * gone meanwhile) is left out, not retried and added twice */
	for (int i = 0; i < n; i++)
		if (!uroce_is_our_device(list[i]))
			continue;
		else if (dev_add(list[i]))
			err = -ENODEV;
	ibv_free_device_list(list);
	devs_scanned = true;
	return devs ? 0 : err;
}

/* The address as a GID: IPv4 as ::ffff:a.b.c.d, as RoCEv2 GIDs carry it. */
bool urcm_addr_gid(const struct sockaddr *a, union ibv_gid *g)
{
	if (a->sa_family == AF_INET) {
		ur_gid_from_v4(to_ur_gid(g),
			       (const uint8_t *)&((const struct sockaddr_in *)a)->sin_addr);
		return true;
	}
	if (a->sa_family == AF_INET6) {
		memcpy(g->raw, &((const struct sockaddr_in6 *)a)->sin6_addr, 16);
		return true;
	}
	return false;
}

struct urcm_dev *urcm_dev_by_addr(const struct sockaddr *a, int *gid_index)
{
	union ibv_gid g;

	if (!urcm_addr_gid(a, &g) || urcm_dev_open_all())
		return NULL;
	for (struct urcm_dev *d = devs; d; d = d->next)
		for (int i = 0; i < d->ngids; i++)
			if (!memcmp(d->gids[i].raw, g.raw, 16)) {
				*gid_index = i;
				return d;
			}
	return NULL;
}

/*
 * The GIDs of a received datagram's 40-byte GRH area: over RoCEv2 with IPv4
 * it holds the IPv4 header in its last 20 bytes (as rdma-core's providers
 * fill it), over IPv6 the IPv6 header, whose addresses are the GIDs.
 */
void urcm_grh_gids(const struct ibv_grh *grh, union ibv_gid *remote, union ibv_gid *local)
{
	const uint8_t *b = (const uint8_t *)grh;

	if (b[0] >> 4 != 6) { /* an IPv6 header starts with its version; the IPv4 case with zeros */
		ur_gid_from_v4(to_ur_gid(remote), b + 20 + 12);
		ur_gid_from_v4(to_ur_gid(local), b + 20 + 16);
		return;
	}
	*remote = grh->sgid;
	*local = grh->dgid;
}

struct urcm_dev *urcm_dev_first(int family, int *gid_index)
{
	if (urcm_dev_open_all())
		return NULL;
	for (struct urcm_dev *d = devs; d; d = d->next)
		for (int i = 0; i < d->ngids; i++) {
			if (ur_gid_is_v4(to_ur_gid(&d->gids[i])) == (family == AF_INET)) {
				*gid_index = i;
				return d;
			}
		}
	return NULL;
}

static uint8_t *slot(struct urcm_dev *dev, unsigned i)
{
	return dev->buf + (size_t)i * URCM_SLOT_BYTES;
}

static int post_recv_slot(struct urcm_dev *dev, unsigned i)
{
	struct ibv_sge sge = {(uintptr_t)slot(dev, i), URCM_SLOT_BYTES, dev->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1}, *bad;

	return ibv_post_recv(dev->gsi, &wr, &bad);
}

int urcm_send(struct urcm_dev *dev, struct ibv_ah *ah, const struct ur_cm_mad *m)
{
	unsigned i = URCM_GSI_SLOTS + dev->send_next++ % URCM_GSI_SEND_SLOTS;
	struct ibv_sge sge = {(uintptr_t)slot(dev, i), UR_MAD_LEN, dev->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = i,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;
	int err;

	if (!dev->gsi || !ah)
		return -ENOTCONN;
	/* every send slot still on its way: this MAD is lost, as on a busy
	 * wire, and the endpoint's timer sends it again */
	if (dev->sends_out >= URCM_GSI_SEND_SLOTS)
		return -EAGAIN;
	err = ur_cm_mad_encode(m, slot(dev, i), UR_MAD_LEN);
	if (err)
		return err;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = UR_GSI_QPN;
	wr.wr.ud.remote_qkey = UR_GSI_QKEY;
	err = ibv_post_send(dev->gsi, &wr, &bad);
	if (err)
		return -err;
	dev->sends_out++;
	return 0;
}

void urcm_flush(struct urcm_dev *dev)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += FLUSH_WAIT_NS;
	until.tv_sec += until.tv_nsec / 1000000000;
	until.tv_nsec %= 1000000000;
	while (dev && dev->sends_out &&
	       pthread_cond_timedwait(&sent, &urcm_lock, &until) != ETIMEDOUT)
		;
}

/* A listener for the REQ or SIDR_REQ m on dev: its port space and port, and its address. */
static struct urcm_id *find_listener(struct urcm_dev *dev, const struct ur_cm_mad *m)
{
	bool sidr = m->hdr.attr_id == UR_CM_ATTR_SIDR_REQ;
	uint64_t sid = sidr ? m->sidr_req.service_id : m->req.service_id;
	const uint8_t *pdata = sidr ? m->sidr_req.private_data : m->req.private_data;
	struct ur_cm_ip_hdr h;
	uint16_t ps, port;
	union ibv_gid dst;

	if (!ur_cm_ip_service_parse(sid, &ps, &port) ||
	    ur_cm_ip_hdr_decode(&h, pdata, UR_CM_IP_HDR_LEN))
		return NULL;
	if (h.ip_version == 4)
		ur_gid_from_v4(to_ur_gid(&dst), &h.dst_ip[12]);
	else
		memcpy(dst.raw, h.dst_ip, 16);
	for (struct urcm_id *l = urcm_ids(); l; l = l->next) {
		union ibv_gid bound;
		const struct sockaddr *sa = &l->id.route.addr.src_addr;

		if (l->state != URCM_LISTEN || (uint16_t)l->id.ps != ps ||
		    ntohs(rdma_get_src_port(&l->id)) != port || (l->dev && l->dev != dev))
			continue;
		/* a listener bound to an address takes only what is sent to it */
		if (!is_wildcard(sa) && urcm_addr_gid(sa, &bound) && memcmp(bound.raw, dst.raw, 16))
			continue;
		return l;
	}
	return NULL;
}

/*
 * A REQ or SIDR_REQ for a port nobody listens on waits a moment before the
 * REJ that says so: a program's rdma_listen can lag its peer's connect by a
 * scheduling slice on a busy host (perftest -R listens right after a
 * handshake whose other end connects at once, and its retry after a REJ
 * uses memory it freed). A listen in time takes it; else the REJ goes, as
 * Linux's CM answers (reject check: well within a second).
 */
#define URCM_HOLD_NS (250 * 1000 * 1000ull)
#define URCM_HOLD_SLOTS 8
#define URCM_HOLD_RECHECK_NS (1000 * 1000ull)

/* What may become of a MAD nobody here takes. */
enum { MAD_MAY_HOLD = 1, MAD_MAY_FORWARD = 2 };

static struct held_req {
	struct urcm_dev *dev; /* NULL: the slot is free */
	uint64_t until;
	unsigned flags; /* MAD_MAY_FORWARD: it came from the wire, not another program */
	struct ibv_wc wc;
	uint8_t buf[sizeof(struct ibv_grh) + UR_MAD_LEN];
} held[URCM_HOLD_SLOTS];

static bool hold(struct urcm_dev *dev, const struct ibv_wc *wc, const uint8_t *buf,
		 const struct ur_cm_mad *m, unsigned flags)
{
	struct held_req *free_slot = NULL;

	if (m->hdr.attr_id != UR_CM_ATTR_REQ && m->hdr.attr_id != UR_CM_ATTR_SIDR_REQ)
		return false;
	for (unsigned i = 0; i < URCM_HOLD_SLOTS; i++) {
		if (!held[i].dev) {
			free_slot = free_slot ? free_slot : &held[i];
			continue;
		}
		/* the same REQ again (its resend): one is held already */
		if (held[i].dev == dev && !memcmp(held[i].buf, buf, sizeof(held[i].buf)))
			return true;
	}
	if (!free_slot)
		return false;
	*free_slot = (struct held_req){
	    .dev = dev, .until = urcm_now() + URCM_HOLD_NS, .flags = flags, .wc = *wc};
	memcpy(free_slot->buf, buf, sizeof(free_slot->buf));
	return true;
}

static void on_mad_now(struct urcm_dev *dev, const struct ibv_wc *wc, const uint8_t *buf,
		       unsigned flags);

/* Held REQs a listener here or in another program now takes, or whose time is up (lock held). */
static void run_held(uint64_t now, uint64_t *next)
{
	for (unsigned i = 0; i < URCM_HOLD_SLOTS; i++) {
		struct held_req h = held[i];
		struct ur_cm_mad m;
		bool here, passed = false;

		if (!h.dev)
			continue;
		held[i].dev = NULL;
		if (ur_cm_mad_decode(&m, h.buf + sizeof(struct ibv_grh), UR_MAD_LEN))
			continue;
		here = find_listener(h.dev, &m) != NULL;
		if (!here && h.until > now && (h.flags & MAD_MAY_FORWARD))
			passed = urcm_route_forward(h.dev, &h.wc, h.buf, &m);
		if (here || passed)
			uroce_log(NULL, 1, "rdma_cm: a REQ waited %.1f ms for its listener",
				  (double)(now + URCM_HOLD_NS - h.until) / 1e6);
		if (here || h.until <= now) {
			on_mad_now(h.dev, &h.wc, h.buf, 0); /* taken, or refused: REJ */
		} else if (!passed) {
			/* a listen in another program rings no bell here: look again soon */
			uint64_t again =
			    h.flags & MAD_MAY_FORWARD ? now + URCM_HOLD_RECHECK_NS : h.until;

			held[i].dev = h.dev;
			if (again > h.until)
				again = h.until;
			if (again < *next)
				*next = again;
		}
	}
}

/* A MAD from QP 1 of a peer (lock held). */
static void on_mad(struct urcm_dev *dev, const struct ibv_wc *wc, const uint8_t *buf)
{
	on_mad_now(dev, wc, buf, MAD_MAY_HOLD | MAD_MAY_FORWARD);
}

/* One another program of the device passed on (rdmacm_route.c). */
static void on_passed_mad(struct urcm_dev *dev, const struct ibv_wc *wc, const uint8_t *buf)
{
	on_mad_now(dev, wc, buf, MAD_MAY_HOLD);
}

static void on_mad_now(struct urcm_dev *dev, const struct ibv_wc *wc, const uint8_t *buf,
		       unsigned flags)
{
	const struct ibv_grh *grh = (const void *)buf;
	struct ur_cm_mad m, reply;
	struct ur_cm_out out;
	struct urcm_id *id = NULL;
	union ibv_gid peer, local;
	uint32_t dest;

	if (wc->byte_len < sizeof(*grh) + UR_MAD_LEN ||
	    ur_cm_mad_decode(&m, buf + sizeof(*grh), UR_MAD_LEN))
		return;
	/*
	 * What this MAD leads to may need the sender's MAC: a passive id's AH
	 * (a REQ), its QP moved to RTR (a REP), an answer to a stray. Found
	 * first, with the lock dropped if it takes ARP/ND, and before any id
	 * is looked up, so nothing found under the lock is kept across it
	 * (wc and buf are the caller's, its receive slot not reposted yet).
	 */
	urcm_grh_gids(grh, &peer, &local);
	(void)urcm_neigh_unlocked(dev, &peer);
	dest = ur_cm_mad_dest_id(&m);
	for (struct urcm_id *i = urcm_ids(); i; i = i->next) {
		if (!i->cm_live || i->dev != dev)
			continue;
		if (dest ? i->cm.local_comm_id == dest
			 : i->passive && i->cm.remote_comm_id == ur_cm_mad_src_id(&m)) {
			id = i; /* dest 0: a REQ again, for an id made for the first */
			break;
		}
	}
	if (!id && !dest) {
		struct urcm_id *l = find_listener(dev, &m);

		if (l) {
			id = urcm_passive_id(l, dev, wc, grh);
			/* backlog full: no answer, so the REQ comes again (Linux's CM) */
			if (!id)
				return;
		}
	}
	if (id) {
		if (!ur_cm_on_mad(&id->cm, urcm_now(), &m, &out))
			urcm_out(id, &out);
		return;
	}
	/* another program of the device's, or nobody: a REQ to a closed port
	 * gets REJ "invalid service ID" */
	if ((flags & MAD_MAY_FORWARD) && urcm_route_forward(dev, wc, buf, &m))
		return;
	if (!dest && (flags & MAD_MAY_HOLD) && hold(dev, wc, buf, &m, flags))
		return;
	if (ur_cm_answer_stray(&m, &reply)) {
		struct ibv_ah *ah;

		/* what a user asks first when a connect is refused */
		uroce_log(NULL, 1, "rdma_cm: %s (service ID 0x%016" PRIx64 ") taken by nobody: %s",
			  ur_cm_attr_name(m.hdr.attr_id),
			  m.hdr.attr_id == UR_CM_ATTR_REQ ? m.req.service_id : 0,
			  ur_cm_attr_name(reply.hdr.attr_id));
		ah = ibv_create_ah_from_wc(dev->pd, (struct ibv_wc *)wc, (struct ibv_grh *)grh, 1);

		if (ah) {
			urcm_send(dev, ah, &reply);
			ibv_destroy_ah(ah);
		}
	}
}

static void drain(struct urcm_dev *dev)
{
	struct ibv_wc wc[16];
	int n;

	while ((n = ibv_poll_cq(dev->cq, 16, wc)) > 0)
		for (int i = 0; i < n; i++) {
			if (wc[i].wr_id >= URCM_GSI_SLOTS) { /* a send: it left */
				if (dev->sends_out)
					dev->sends_out--;
				pthread_cond_broadcast(&sent);
				continue;
			}
			if (wc[i].status == IBV_WC_SUCCESS)
				on_mad(dev, &wc[i], slot(dev, (unsigned)wc[i].wr_id));
			if (wc[i].status != IBV_WC_WR_FLUSH_ERR)
				post_recv_slot(dev, (unsigned)wc[i].wr_id);
		}
}

static void run_timers(uint64_t now, uint64_t *next)
{
	*next = UINT64_MAX;
	for (struct urcm_id *id = urcm_ids(); id; id = id->next) {
		struct ur_cm_out out;

		if (!id->cm_live)
			continue;
		if (ur_cm_deadline(&id->cm) <= now) {
			ur_cm_on_timer(&id->cm, now, &out);
			urcm_out(id, &out);
		}
		if (id->cm_live && ur_cm_deadline(&id->cm) < *next)
			*next = ur_cm_deadline(&id->cm);
	}
}

#define URCM_POLL_MAX 64

/*
 * The device died under us (daemon_link.c went fatal: its daemon is gone
 * for good, and it kicks us): every id on it hears
 * RDMA_CM_EVENT_DEVICE_REMOVAL once, as the kernel's CM tells the ids of
 * a device being removed; the program is to destroy them. Ids bound to
 * the wildcard are not on any one device and hear nothing. The device's
 * async events are the application's: librdmacm never reads them.
 */
static void tell_removal(struct urcm_dev *dev)
{
	if (dev->removed || !atomic_load(&to_unic(dev->verbs)->fatal))
		return;
	dev->removed = true;
	for (struct urcm_id *id = urcm_ids(); id; id = id->next)
		if (id->dev == dev && !id->removal_told)
			id->removal_told = urcm_event(id, RDMA_CM_EVENT_DEVICE_REMOVAL, 0) != NULL;
}

static void *cm_thread(void *arg)
{
	(void)arg;
	for (;;) {
		struct pollfd p[URCM_POLL_MAX];
		struct urcm_dev *of[URCM_POLL_MAX];
		bool is_cq[URCM_POLL_MAX];
		unsigned n = 1, k;
		uint64_t now, next, v;
		int timeout;

		p[0] = (struct pollfd){.fd = wake_fd, .events = POLLIN};
		pthread_mutex_lock(&urcm_lock);
		now = urcm_now();
		for (struct urcm_dev *d = devs; d && n < URCM_POLL_MAX; d = d->next) {
			tell_removal(d);
			if (!d->gsi)
				continue;
			drain(d);
			/* armed without telling the progress thread that the
			 * application waits on events: this thread is the
			 * provider's own, and a MAD that comes while the
			 * application polls is moved by its passes */
			uroce_cq_arm(d->cq, 0);
			drain(d); /* what came before the arm raises no event */
			of[n] = d;
			is_cq[n] = true;
			p[n++] = (struct pollfd){.fd = d->chan->fd, .events = POLLIN};
			/* and what the device's other programs pass on to us */
			k = urcm_route_fds(d, p + n, of + n, URCM_POLL_MAX - n);
			for (unsigned i = n; i < n + k; i++)
				is_cq[i] = false;
			n += k;
		}
		run_timers(now, &next);
		run_held(now, &next);
		pthread_mutex_unlock(&urcm_lock);
		timeout = next == UINT64_MAX ? -1
			  : next <= now	     ? 0
					     : (int)((next - now + 999999) / 1000000);
		if (poll(p, n, timeout) <= 0)
			continue;
		if ((p[0].revents & POLLIN) && read(wake_fd, &v, sizeof(v)) < 0)
			continue;
		for (unsigned i = 1; i < n; i++) {
			struct ibv_cq *cq;
			void *cq_ctx;

			if (!(p[i].revents & POLLIN))
				continue;
			if (!is_cq[i]) {
				pthread_mutex_lock(&urcm_lock);
				urcm_route_rx(of[i], p[i].fd, on_passed_mad);
				pthread_mutex_unlock(&urcm_lock);
			} else if (!ibv_get_cq_event(of[i]->chan, &cq, &cq_ctx)) {
				ibv_ack_cq_events(cq, 1);
			}
		}
	}
	return NULL;
}

void urcm_kick(void)
{
	uint64_t one = 1;

	if (wake_fd >= 0 && write(wake_fd, &one, sizeof(one)) < 0)
		return;
}

/* What a failed urcm_gsi_start made goes, so that a later call starts afresh. */
static void gsi_undo(struct urcm_dev *dev)
{
	if (dev->gsi)
		ibv_destroy_qp(dev->gsi);
	if (dev->mr)
		ibv_dereg_mr(dev->mr);
	if (dev->cq)
		ibv_destroy_cq(dev->cq);
	if (dev->chan)
		ibv_destroy_comp_channel(dev->chan);
	free(dev->buf);
	dev->gsi = NULL;
	dev->mr = NULL;
	dev->cq = NULL;
	dev->chan = NULL;
	dev->buf = NULL;
}

/* The GSI QP through INIT, RTR and RTS with every receive slot posted: 0 or -errno. */
static int gsi_ready(struct urcm_dev *dev)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = UR_GSI_QKEY};

	if (ibv_modify_qp(dev->gsi, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		return -errno;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(dev->gsi, &a, IBV_QP_STATE))
		return -errno;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (ibv_modify_qp(dev->gsi, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		return -errno;
	for (unsigned i = 0; i < URCM_GSI_SLOTS; i++)
		if (post_recv_slot(dev, i))
			return -errno;
	return 0;
}

/* Lock held. */
int urcm_gsi_start(struct urcm_dev *dev)
{
	struct ibv_qp_init_attr ia = {.qp_type = IBV_QPT_UD,
				      .cap = {.max_send_wr = URCM_GSI_SEND_SLOTS,
					      .max_recv_wr = URCM_GSI_SLOTS,
					      .max_send_sge = 1,
					      .max_recv_sge = 1}};
	size_t bytes = (size_t)(URCM_GSI_SLOTS + URCM_GSI_SEND_SLOTS) * URCM_SLOT_BYTES;
	int err;

	if (dev->gsi)
		return 0;
	if (wake_fd < 0) {
		wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (wake_fd < 0)
			return -ENOMEM;
		if (pthread_create(&thread, NULL, cm_thread, NULL)) {
			close(wake_fd);
			wake_fd = -1;
			return -ENOMEM;
		}
		pthread_setname_np(thread, "uroce-cm");
		pthread_detach(thread);
	}
	dev->chan = ibv_create_comp_channel(dev->verbs);
	dev->cq = dev->chan ? ibv_create_cq(dev->verbs, URCM_GSI_SLOTS + URCM_GSI_SEND_SLOTS, NULL,
					    dev->chan, 0)
			    : NULL;
	dev->buf = aligned_alloc(4096, bytes);
	dev->mr = dev->buf ? ibv_reg_mr(dev->pd, dev->buf, bytes, IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!dev->cq || !dev->mr) {
		gsi_undo(dev);
		return -ENOMEM;
	}
	ia.send_cq = ia.recv_cq = dev->cq;
	dev->gsi = uroce_create_gsi_qp(dev->pd, &ia);
	err = dev->gsi ? gsi_ready(dev) : -errno;
	if (err) {
		uroce_log(NULL, 1, "rdma_cm: %s: QP 1 did not start: %s",
			  ibv_get_device_name(dev->verbs->device), strerror(-err));
		gsi_undo(dev);
		return err;
	}
	/* without a slot, MADs for us that reach another program stay there */
	if (urcm_route_start(dev))
		uroce_log(NULL, 1, "rdma_cm: %s: no slot for MADs between programs",
			  ibv_get_device_name(dev->verbs->device));
	urcm_kick();
	return 0;
}

static void *serve_thread(void *arg)
{
	char *name = arg;
	int err;

	pthread_mutex_lock(&urcm_lock);
	err = urcm_dev_open_all();
	for (struct urcm_dev *d = devs; d && !err; d = d->next)
		if (!strcmp(ibv_get_device_name(d->verbs->device), name))
			err = urcm_gsi_start(d);
	pthread_mutex_unlock(&urcm_lock);
	if (err)
		uroce_log(NULL, 1, "rdma_cm: %s: no CM for other hosts' MADs here: %s", name,
			  strerror(-err));
	free(name);
	return NULL;
}

/*
 * The device's housekeeper (provider/steer.c) receives the wire's MADs for
 * QP 1, whatever its program: its CM answers a REQ nobody listens for with
 * REJ, and passes the others' MADs on (rdmacm_route.c). Started from a
 * thread of its own: the CM opens a context of its own on the device.
 */
void urcm_serve(const char *name)
{
	char *copy = strdup(name);
	pthread_t t;

	if (!copy || pthread_create(&t, NULL, serve_thread, copy)) {
		free(copy);
		return;
	}
	pthread_detach(t);
}

/*
 * A program that exits with connections up: they end as the kernel's CM
 * ends them when the process's file closes, with a DREQ each, so that the
 * peers see DISCONNECTED now rather than after their retries.
 */
__attribute__((destructor)) static void urcm_exit(void)
{
	if (!devs)
		return;
	pthread_mutex_lock(&urcm_lock);
	for (struct urcm_id *id = urcm_ids(); id; id = id->next) {
		struct ur_cm_out out;

		if (id->cm_live && id->cm.state == UR_CM_ESTABLISHED &&
		    !ur_cm_disconnect(&id->cm, urcm_now(), &out) && out.send)
			urcm_send(id->dev, id->ah, out.send);
	}
	for (struct urcm_dev *d = devs; d; d = d->next)
		urcm_flush(d);
	pthread_mutex_unlock(&urcm_lock);
}
