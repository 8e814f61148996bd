/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `uroce-lab bottleneck IF IF...`: a small learning Ethernet switch between
 * network namespaces whose every output port is a congestion point: it
 * sends at a configured rate, queues what arrives faster (drop-tail beyond
 * a buffer), and marks ECN CE RED-style by queue depth (K_min, K_max,
 * P_max) on packets as they leave, as DCQCN's switches do. The kernel here
 * has tc htb/tbf but neither netem nor red, so the marking has to happen in
 * a program: this one, on AF_PACKET sockets (no DPDK needed), one thread.
 *
 * uroce over af_packet sends a QP's consecutive frames as one batch for the
 * kernel's UDP segmentation (dataplane/udp_gso.c), and a veth hands it
 * over whole: the switch cuts it into its frames, so that each is queued,
 * marked and timed on its own, as on a wire.
 *
 * Every interval it prints, per output port, what it sent (in total and
 * from each input port), the deepest queue, marks and drops; --csv writes
 * the same rows.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lab.h"
#include "netem.h"
#include "udp_gso.h"

/* the most a batch adds beyond a frame's buffer: 64 KB of IP packet */
#define BATCH_SPILL 65536

#define MAX_PORTS 8
#define FRAME_MAX 10240
#define RX_BURST 32
#define MAC_TABLE 256
#define WIRE_OVERHEAD 24 /* preamble, start delimiter, FCS, inter-frame gap */

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

struct frame {
	struct frame *next;
	uint32_t len;
	uint8_t in; /* input port */
	uint8_t data[FRAME_MAX];
};

struct port {
	char name[IF_NAMESIZE];
	int fd;
	int ifindex;
	/* output queue */
	struct frame *head, *tail;
	uint64_t qbytes;
	uint64_t next_free_ns;
	/* totals */
	uint64_t rx_pkts, tx_pkts, tx_bytes, drops, marked, qmax;
	uint64_t rx_lost;    /* received, too long to forward (not a batch of uroce's) */
	uint64_t rx_batched; /* of rx_pkts, frames cut from uroce's batches */
	uint64_t rx_nobuf;   /* frames cut from a batch with no buffer left to hold them */
	/* this interval */
	uint64_t i_bytes, i_from[MAX_PORTS], i_qmax, i_marked, i_drops;
};

struct bn {
	struct port port[MAX_PORTS];
	unsigned nports;
	uint64_t rate_bps;
	uint64_t burst_ns;   /* how far a late loop turn may catch up */
	uint64_t buffer;
	struct netem_red red;
	struct frame *free_frames;
	unsigned nframes;
	struct {
		uint8_t mac[6];
		uint8_t port;
	} macs[MAC_TABLE];
	unsigned nmacs;
	struct sim_rng rng;     /* RED's coin, seeded */
	uint8_t spill[BATCH_SPILL];            /* a batch's bytes past a frame's buffer */
	uint8_t batch[FRAME_MAX + BATCH_SPILL]; /* a batch whole, to be cut */
	FILE *csv;
	bool quiet;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct frame *frame_get(struct bn *b)
{
	struct frame *f = b->free_frames;

	if (f) {
		b->free_frames = f->next;
		return f;
	}
	/* the pool grows up to what the buffers can hold, then drops decide */
	if (b->nframes > b->nports * (b->buffer / 1024 + 2 * RX_BURST))
		return NULL;
	f = malloc(sizeof(*f));
	if (f)
		b->nframes++;
	return f;
}

static void frame_put(struct bn *b, struct frame *f)
{
	f->next = b->free_frames;
	b->free_frames = f;
}

static int open_port(struct port *p, const char *ifname)
{
	struct sockaddr_ll sll = {0};
	struct packet_mreq mr = {0};
	int one = 1, rcvbuf = 8 << 20;

	snprintf(p->name, sizeof(p->name), "%s", ifname);
	p->ifindex = (int)if_nametoindex(ifname);
	if (!p->ifindex) {
		fprintf(stderr, "uroce-lab bottleneck: no interface '%s' here\n", ifname);
		return -1;
	}
	p->fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_ALL));
	if (p->fd < 0) {
		fprintf(stderr, "uroce-lab bottleneck: packet socket: %s (needs root)\n", strerror(errno));
		return -1;
	}
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = htons(ETH_P_ALL);
	sll.sll_ifindex = p->ifindex;
	if (bind(p->fd, (struct sockaddr *)&sll, sizeof(sll))) {
		fprintf(stderr, "uroce-lab bottleneck: bind %s: %s\n", ifname, strerror(errno));
		return -1;
	}
	mr.mr_ifindex = p->ifindex;
	mr.mr_type = PACKET_MR_PROMISC;
	setsockopt(p->fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr));
	/* our own transmissions are not input */
	setsockopt(p->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
	/* tell us which frames carry an unfinished (offloaded) checksum */
	setsockopt(p->fd, SOL_PACKET, PACKET_AUXDATA, &one, sizeof(one));
	/* and which are batches, and of what size (a virtio_net_hdr before each) */
	if (setsockopt(p->fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one))) {
		fprintf(stderr, "uroce-lab bottleneck: PACKET_VNET_HDR on %s: %s\n", ifname,
			strerror(errno));
		return -1;
	}
	if (setsockopt(p->fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)))
		setsockopt(p->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	return 0;
}

static int mac_lookup(const struct bn *b, const uint8_t *mac)
{
	for (unsigned i = 0; i < b->nmacs; i++)
		if (!memcmp(b->macs[i].mac, mac, 6))
			return b->macs[i].port;
	return -1;
}

static void mac_learn(struct bn *b, const uint8_t *mac, unsigned port)
{
	for (unsigned i = 0; i < b->nmacs; i++) {
		if (!memcmp(b->macs[i].mac, mac, 6)) {
			b->macs[i].port = (uint8_t)port;
			return;
		}
	}
	if (b->nmacs < MAC_TABLE && !(mac[0] & 1)) {
		memcpy(b->macs[b->nmacs].mac, mac, 6);
		b->macs[b->nmacs++].port = (uint8_t)port;
	}
}

/*
 * A veth hands over TCP and UDP with the checksum left to the NIC (checksum
 * offload): only the pseudo-header sum is in place. A real wire would carry
 * the finished one, so finish it before forwarding: the sum over the whole
 * segment, that partial value included, complemented.
 */
static void finish_csum(struct frame *f)
{
	bool v6;
	unsigned off = netem_ip_offset(f->data, f->len, &v6), l4, len, at;
	const uint8_t *ip = f->data + off;
	uint8_t proto;
	uint32_t sum = 0;

	if (!off)
		return;
	if (!v6) {
		l4 = off + (ip[0] & 0xf) * 4u;
		len = (unsigned)(ip[2] << 8 | ip[3]);
		if (len < (ip[0] & 0xf) * 4u || off + len > f->len)
			return;
		len -= l4 - off;
		proto = ip[9];
	} else {
		l4 = off + 40;
		len = (unsigned)(ip[4] << 8 | ip[5]);
		if (l4 + len > f->len)
			return;
		proto = ip[6];
	}
	if (proto == 6)
		at = l4 + 16;
	else if (proto == 17)
		at = l4 + 6;
	else
		return;
	if (at + 2 > l4 + len)
		return;
	for (unsigned i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)f->data[l4 + i] << 8 | f->data[l4 + i + 1];
	if (len & 1)
		sum += (uint32_t)f->data[l4 + len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	sum = ~sum & 0xffff;
	if (proto == 17 && !sum)
		sum = 0xffff;
	f->data[at] = (uint8_t)(sum >> 8);
	f->data[at + 1] = (uint8_t)sum;
}

static void enqueue(struct bn *b, struct port *out, struct frame *f)
{
	if (out->qbytes + f->len > b->buffer) {
		out->drops++;
		out->i_drops++;
		frame_put(b, f);
		return;
	}
	f->next = NULL;
	if (out->tail)
		out->tail->next = f;
	else
		out->head = f;
	out->tail = f;
	out->qbytes += f->len;
	if (out->qbytes > out->qmax)
		out->qmax = out->qbytes;
	if (out->qbytes > out->i_qmax)
		out->i_qmax = out->qbytes;
}

/* A frame from port pi to where its destination was learnt, or to every other port. */
static void forward(struct bn *b, unsigned pi, struct frame *f)
{
	int dst;

	f->in = (uint8_t)pi;
	b->port[pi].rx_pkts++;
	mac_learn(b, f->data + 6, pi);
	dst = mac_lookup(b, f->data);
	if (dst >= 0) {
		if ((unsigned)dst == pi)
			frame_put(b, f); /* already on that segment */
		else
			enqueue(b, &b->port[dst], f);
		return;
	}
	/* broadcast, multicast or unknown: flood (ARP, ND) */
	for (unsigned o = 0; o < b->nports; o++) {
		struct frame *c;

		if (o == pi)
			continue;
		c = frame_get(b);
		if (!c)
			break;
		memcpy(c->data, f->data, f->len);
		c->len = f->len;
		c->in = f->in;
		enqueue(b, &b->port[o], c);
	}
	frame_put(b, f);
}

/* A batch of uroce frames, len bytes at data: each frame forwarded on its own. */
static void forward_batch(struct bn *b, unsigned pi, uint8_t *data, uint32_t len, uint16_t size)
{
	struct dp_gso_cut cut;
	uint8_t *seg;
	uint32_t slen;

	if (dp_gso_cut_start(&cut, data, len, size)) {
		b->port[pi].rx_lost++; /* no batch of uroce's: nothing a frame can hold */
		return;
	}
	while ((seg = dp_gso_cut_next(&cut, &slen))) {
		struct frame *f = frame_get(b);

		if (!f) {
			b->port[pi].rx_nobuf++; /* the buffers are full: as a full queue would */
			continue;
		}
		if (slen > FRAME_MAX) {
			frame_put(b, f);
			b->port[pi].rx_lost++;
			continue;
		}
		memcpy(f->data, seg, slen);
		f->len = slen;
		b->port[pi].rx_batched++;
		forward(b, pi, f);
	}
}

static void receive(struct bn *b, unsigned pi)
{
	struct port *in = &b->port[pi];

	for (unsigned n = 0; n < RX_BURST; n++) {
		struct frame *f = frame_get(b);
		struct virtio_net_hdr vh;
		struct sockaddr_ll from;
		union {
			struct cmsghdr h;
			char buf[CMSG_SPACE(sizeof(struct tpacket_auxdata))];
		} ctl;
		struct iovec iov[3];
		struct msghdr msg = {0};
		struct cmsghdr *cm;
		ssize_t len;

		if (!f)
			return;
		iov[0] = (struct iovec){&vh, sizeof(vh)};
		iov[1] = (struct iovec){f->data, sizeof(f->data)};
		iov[2] = (struct iovec){b->spill, sizeof(b->spill)};
		msg.msg_name = &from;
		msg.msg_namelen = sizeof(from);
		msg.msg_iov = iov;
		msg.msg_iovlen = 3;
		msg.msg_control = ctl.buf;
		msg.msg_controllen = sizeof(ctl.buf);
		len = recvmsg(in->fd, &msg, MSG_TRUNC);
		if (len <= 0) {
			frame_put(b, f);
			return; /* nothing more to read */
		}
		len -= (ssize_t)sizeof(vh);
		if (len < 14 || len > (ssize_t)(sizeof(f->data) + sizeof(b->spill)) ||
		    from.sll_pkttype == PACKET_OUTGOING) {
			frame_put(b, f);
			continue;
		}
		if (vh.gso_type == VIRTIO_NET_HDR_GSO_UDP_L4) {
			uint8_t *whole = f->data;

			if (len > (ssize_t)sizeof(f->data)) {
				memcpy(b->batch, f->data, sizeof(f->data));
				memcpy(b->batch + sizeof(f->data), b->spill,
				       (size_t)len - sizeof(f->data));
				whole = b->batch;
			}
			forward_batch(b, pi, whole, (uint32_t)len, vh.gso_size);
			frame_put(b, f);
			continue;
		}
		if (len > (ssize_t)sizeof(f->data)) {
			frame_put(b, f); /* longer than any frame: a TCP batch, not ours */
			in->rx_lost++;
			continue;
		}
		f->len = (uint32_t)len;
		for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
			struct tpacket_auxdata aux;

			if (cm->cmsg_level != SOL_PACKET || cm->cmsg_type != PACKET_AUXDATA)
				continue;
			memcpy(&aux, CMSG_DATA(cm), sizeof(aux));
			if (aux.tp_status & TP_STATUS_CSUMNOTREADY)
				finish_csum(f);
		}
		forward(b, pi, f);
	}
}

/* One frame out, behind the virtio_net_hdr the socket wants (all zero: one frame, checksum done). */
static ssize_t send_frame(struct port *p, struct frame *f)
{
	struct virtio_net_hdr vh = {0};
	struct iovec iov[2] = {{&vh, sizeof(vh)}, {f->data, f->len}};
	struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 2};
	ssize_t r = sendmsg(p->fd, &msg, 0);

	return r < (ssize_t)sizeof(vh) ? -1 : r - (ssize_t)sizeof(vh);
}

static uint64_t wire_ns(const struct bn *b, uint32_t len)
{
	return (uint64_t)(len + WIRE_OVERHEAD) * 8 * 1000000000ull / b->rate_bps;
}

/* Send what the port's rate allows by now. */
static void transmit(struct bn *b, struct port *p, uint64_t now)
{
	/* a loop turn that ran late (the CPU was busy elsewhere) catches up on
	 * what the port would have sent, up to burst_ns of it: a token bucket, so
	 * the port keeps its rate on average on a shared machine */
	uint64_t credit = b->burst_ns;

	while (p->head && p->next_free_ns <= now) {
		struct frame *f = p->head;

		/* RED on the queue the frame leaves: one queueing delay sooner
		 * feedback than marking on arrival */
		if (netem_red_mark(&b->red, p->qbytes, &b->rng, f->data, f->len)) {
			p->marked++;
			p->i_marked++;
		}
		p->head = f->next;
		if (!p->head)
			p->tail = NULL;
		p->qbytes -= f->len;
		if (send_frame(p, f) == (ssize_t)f->len) {
			p->tx_pkts++;
			p->tx_bytes += f->len;
			p->i_bytes += f->len;
			p->i_from[f->in] += f->len;
		} else {
			p->drops++;
			p->i_drops++;
		}
		if (p->next_free_ns + credit < now)
			p->next_free_ns = now - credit;
		p->next_free_ns += wire_ns(b, f->len);
		frame_put(b, f);
	}
}

static void report(struct bn *b, double t, double dt)
{
	for (unsigned i = 0; i < b->nports; i++) {
		struct port *p = &b->port[i];

		if (!p->i_bytes && !p->i_drops)
			continue;
		if (!b->quiet) {
			printf("%8.1f  %-10s %9.1f Mb/s  qmax %7.1f KB  marked %6llu  drops %6llu  from",
			       t, p->name, (double)p->i_bytes * 8 / dt / 1e6, (double)p->i_qmax / 1024,
			       (unsigned long long)p->i_marked, (unsigned long long)p->i_drops);
			for (unsigned j = 0; j < b->nports; j++)
				if (j != i)
					printf(" %s %.1f", b->port[j].name,
					       (double)p->i_from[j] * 8 / dt / 1e6);
			printf("\n");
		}
		if (b->csv) {
			fprintf(b->csv, "%.3f,%s,%.3f,%.1f,%llu,%llu", t, p->name,
				(double)p->i_bytes * 8 / dt / 1e6, (double)p->i_qmax / 1024,
				(unsigned long long)p->i_marked, (unsigned long long)p->i_drops);
			for (unsigned j = 0; j < b->nports; j++)
				fprintf(b->csv, ",%.3f", (double)p->i_from[j] * 8 / dt / 1e6);
			fprintf(b->csv, "\n");
		}
		p->i_bytes = p->i_qmax = p->i_marked = p->i_drops = 0;
		memset(p->i_from, 0, sizeof(p->i_from));
	}
	fflush(stdout);
	if (b->csv)
		fflush(b->csv);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: uroce-lab bottleneck IF IF [IF...] [options]\n"
		"\n"
		"A learning switch joining the interfaces (run it in the namespace that holds\n"
		"them); every output port sends at --rate, queues the rest, drops beyond\n"
		"--buffer, and marks ECN CE by queue depth (RED: none below K_min, up to\n"
		"P_max at K_max, all above) on packets as they leave.\n"
		"\n"
		"  --rate R       output rate of every port, e.g. 500M, 1G (1G)\n"
		"  --burst T      catch up at most T of sending after a late wake-up (1ms)\n"
		"  --buffer S     output queue limit, drop-tail (1M)\n"
		"  --kmin S       RED K_min (20K)\n"
		"  --kmax S       RED K_max (200K); 0 disables marking\n"
		"  --pmax P       RED P_max (0.1)\n"
		"  --interval T   report period (1s)\n"
		"  --duration T   stop after T (run until SIGINT/SIGTERM)\n"
		"  --csv FILE     t,port,mbps,qmax_kb,marked,drops,then Mb/s from each port\n"
		"  --seed S       RED's random numbers (1)\n"
		"  --quiet        no per-interval lines\n");
}

int cmd_bottleneck(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"rate", required_argument, NULL, 'r'},     {"buffer", required_argument, NULL, 'b'},
		{"kmin", required_argument, NULL, 'k'},     {"kmax", required_argument, NULL, 'K'},
		{"pmax", required_argument, NULL, 'p'},     {"interval", required_argument, NULL, 'i'},
		{"duration", required_argument, NULL, 'd'}, {"csv", required_argument, NULL, 'c'},
		{"seed", required_argument, NULL, 's'},     {"quiet", no_argument, NULL, 'q'},
		{"burst", required_argument, NULL, 'B'},
		{"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
	};
	static struct bn b;
	uint64_t seed = 1, interval_ps = 1000000000000ull, duration_ps = 0, t0, next_report;
	struct pollfd pfd[MAX_PORTS];
	int c;

	memset(&b, 0, sizeof(b));
	b.rate_bps = 1000000000ull;
	b.burst_ns = 1000000;
	b.buffer = 1 << 20;
	b.red.kmin = 20 * 1024;
	b.red.kmax = 200 * 1024;
	b.red.pmax = 0.1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		bool ok = true;

		switch (c) {
		case 'r':
			ok = parse_rate(optarg, &b.rate_bps);
			break;
		case 'b':
			ok = parse_size(optarg, &b.buffer) && b.buffer >= FRAME_MAX;
			break;
		case 'k':
			ok = parse_size(optarg, &b.red.kmin);
			break;
		case 'K':
			ok = parse_size(optarg, &b.red.kmax);
			break;
		case 'p':
			ok = parse_double(optarg, &b.red.pmax) && b.red.pmax >= 0 && b.red.pmax <= 1;
			break;
		case 'i':
			ok = parse_time_ps(optarg, &interval_ps) && interval_ps >= 1000000000ull;
			break;
		case 'd':
			ok = parse_time_ps(optarg, &duration_ps);
			break;
		case 'c':
			b.csv = fopen(optarg, "w");
			ok = b.csv != NULL;
			break;
		case 's':
			ok = parse_u64(optarg, &seed);
			break;
		case 'q':
			b.quiet = true;
			break;
		case 'B': {
			uint64_t ps;

			ok = parse_time_ps(optarg, &ps);
			b.burst_ns = ps / 1000;
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
		if (!ok) {
			fprintf(stderr, "uroce-lab bottleneck: bad value '%s'\n", optarg);
			return 2;
		}
	}
	if (argc - optind < 2 || argc - optind > MAX_PORTS || (b.red.kmax && b.red.kmin > b.red.kmax)) {
		usage(stderr);
		return 2;
	}
	sim_rng_seed(&b.rng, seed);
	for (int i = optind; i < argc; i++) {
		if (open_port(&b.port[b.nports], argv[i]))
			return 1;
		pfd[b.nports].fd = b.port[b.nports].fd;
		pfd[b.nports].events = POLLIN;
		b.nports++;
	}
	if (b.csv) {
		fprintf(b.csv, "t_s,port,mbps,qmax_kb,marked,drops");
		for (unsigned j = 0; j < b.nports; j++)
			fprintf(b.csv, ",from_%s", b.port[j].name);
		fprintf(b.csv, "\n");
	}
	/* wake-ups as late as the default 50 us slack would cost rate */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	printf("bottleneck: %u ports at %.3f Gb/s each (bursts up to %.1f ms), buffer %.0f KB, "
	       "RED K_min %.0f KB K_max %.0f KB P_max %.2f (on dequeue)\n",
	       b.nports, (double)b.rate_bps / 1e9, (double)b.burst_ns / 1e6, (double)b.buffer / 1024,
	       (double)b.red.kmin / 1024, (double)b.red.kmax / 1024, b.red.pmax);
	fflush(stdout);
	t0 = now_ns();
	next_report = t0 + interval_ps / 1000;
	while (!stop) {
		uint64_t now = now_ns(), wake = next_report;
		bool busy = false;

		for (unsigned i = 0; i < b.nports; i++)
			receive(&b, i);
		now = now_ns();
		for (unsigned i = 0; i < b.nports; i++) {
			transmit(&b, &b.port[i], now);
			if (b.port[i].head) {
				busy = true;
				if (b.port[i].next_free_ns < wake)
					wake = b.port[i].next_free_ns;
			}
		}
		if (now >= next_report) {
			report(&b, (double)(now - t0) / 1e9, (double)interval_ps / 1e12);
			next_report += interval_ps / 1000;
		}
		if (duration_ps && now - t0 >= duration_ps / 1000)
			break;
		/* sleep until a frame arrives or the next one may leave; spin the last stretch */
		if (wake > now + 30000 || !busy) {
			uint64_t wait = (wake > now ? wake - now : 0);
			struct timespec ts;

			if (busy)
				wait -= 20000;
			ts.tv_sec = (time_t)(wait / 1000000000ull);
			ts.tv_nsec = (long)(wait % 1000000000ull);
			ppoll(pfd, b.nports, &ts, NULL);
		}
	}
	printf("\nbottleneck totals after %.1f s:\n", (double)(now_ns() - t0) / 1e9);
	for (unsigned i = 0; i < b.nports; i++) {
		struct port *p = &b.port[i];
		struct tpacket_stats st = {0};
		socklen_t sl = sizeof(st);

		getsockopt(p->fd, SOL_PACKET, PACKET_STATISTICS, &st, &sl);
		printf("  %-10s in %8llu pkts (%llu cut from batches)   out %8llu pkts %10.1f MB   "
		       "marked %7llu   dropped %6llu   qmax %7.1f KB   socket drops %u   too long %llu   "
		       "no buffer %llu\n",
		       p->name, (unsigned long long)p->rx_pkts, (unsigned long long)p->rx_batched,
		       (unsigned long long)p->tx_pkts,
		       (double)p->tx_bytes / 1e6, (unsigned long long)p->marked,
		       (unsigned long long)p->drops, (double)p->qmax / 1024, st.tp_drops,
		       (unsigned long long)p->rx_lost, (unsigned long long)p->rx_nobuf);
		close(p->fd);
	}
	if (b.csv)
		fclose(b.csv);
	while (b.free_frames) {
		struct frame *f = b.free_frames;

		b.free_frames = f->next;
		free(f);
	}
	for (unsigned i = 0; i < b.nports; i++) {
		while (b.port[i].head) {
			struct frame *f = b.port[i].head;

			b.port[i].head = f->next;
			free(f);
		}
	}
	return 0;
}
