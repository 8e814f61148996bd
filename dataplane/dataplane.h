/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The dataplane: one port per opened device (DPDK inside the application
 * process only for a DPDK port: af_xdp, tap, PCI), moving Ethernet frames
 * for the transport engine. It answers and resolves ARP and IPv6 neighbour
 * discovery itself, can capture and impair traffic, and exposes only plain
 * C types: nothing here includes DPDK, so the provider never does either.
 *
 * Not thread-safe: the provider calls it with its progress lock held.
 */
#ifndef UROCE_DATAPLANE_H
#define UROCE_DATAPLANE_H

#include <stdbool.h>
#include <stdint.h>

struct uroce_dp;

#define UROCE_DP_MAX_ADDRS 16
/* Loopback between processes: one bell per QP number block, a 64-byte
 * line each, in memory every user of the device maps (peer_loop.h). */
#define UROCE_DP_BELL_BYTES 64
/*
 * A buffer that holds any RoCE frame: at path MTU 4096 with the largest
 * header stack (VLAN, IPv6, UDP, BTH, RETH, ImmDt, SR extension, ICRC) one
 * is under 4250 bytes, and af_packet writes a frame 66 bytes into its ring
 * slot; 4608 holds 4542 (8 slots per 9 pages). af_packet's ring slots and a
 * program's memif buffers through the device daemon are this size.
 */
#define UROCE_DP_ROCE_FRAME_ROOM 4608u

struct uroce_dp_config {
	const char *name;       /* device name, for logs and file prefixes */
	const char *port;       /* af_packet | af_xdp | tap | memif[:ARGS] | pci:BDF */
	const char *netdev;     /* the interface (af_packet, af_xdp) */
	uint8_t mac[6];         /* our MAC address */
	unsigned eth_mtu;       /* largest IP packet on the wire */
	/* our addresses, as GIDs (IPv4-mapped or IPv6): ARP/ND answers come
	 * from the kernel when it owns them, from us when answer_neigh is set */
	uint8_t addrs[UROCE_DP_MAX_ADDRS][16];
	unsigned naddrs;
	bool answer_neigh;
	const char *capture;    /* pcap file of every RoCE frame, or NULL */
	const char *impair;     /* loss/reorder/dup/CE injection spec, or NULL */
	uint64_t seed;          /* for impairments */
	/* for DPDK's EAL, which the first open in a process starts (eal.c) */
	int debug;              /* the debug log's level: from 2, EAL logs at info */
	bool keep_dpdk_log;     /* the debug log asked for at all: DPDK's level stays */
	bool no_huge;           /* plain memory even when hugepages are free */
	bool no_gso;            /* af_packet: every frame on its own, no batches (udp_gso.c) */
	bool steered;           /* af_packet: no RoCE frame until uroce_dp_steer names our blocks */
	uint64_t *counters;     /* where to count (e.g. shared memory), or NULL */
	void *loop_bells;       /* 4096 bells of UROCE_DP_BELL_BYTES, shared, or NULL:
				 * then frames to other processes' QPs are dropped */
	const char *loop_dir;   /* with loop_bells: the device's directory, where the
				 * owners of QP blocks bind their sockets */
	void (*log)(void *arg, const char *line);
	void *log_arg;
};

/*
 * A long-lived thread that moves frames (the progress thread) registers
 * with DPDK where a DPDK port started EAL: with an lcore id of its own it
 * gets a per-thread mbuf cache instead of an atomic ring operation for each
 * mbuf it allocates or frees (without EAL, as on af_packet and memif, it is
 * a no-op). Unregister before the thread ends.
 */
void uroce_dp_thread_register(void);
void uroce_dp_thread_unregister(void);

int uroce_dp_open(const struct uroce_dp_config *cfg, struct uroce_dp **out);
void uroce_dp_close(struct uroce_dp *dp);

/* Hand up to `max` received RoCE frames to fn; returns how many frames were read. */
typedef void (*uroce_dp_rx_fn)(void *arg, const uint8_t *frame, uint32_t len);
unsigned uroce_dp_rx(struct uroce_dp *dp, uroce_dp_rx_fn fn, void *arg, unsigned max,
		     uint64_t now_ns);
/* Whether the oldest frame waiting in the port's receive ring came 10 ms or
 * more before `now_ns` (DP_RX_WAIT_LATE_NS; false where the port does not say
 * when frames came). With the lock uroce_dp_rx is called under. */
bool uroce_dp_rx_backlog_late(struct uroce_dp *dp, uint64_t now_ns);
/*
 * The QP number blocks (number >> shift) this process holds now: frames to
 * our own MAC for them stay in the process, frames for any other block go
 * to the process that holds it (peer_loop.h), and other processes' frames
 * for ours are taken in.
 */
int uroce_dp_own_blocks(struct uroce_dp *dp, const uint32_t *blocks, unsigned n, unsigned shift);
/* What a sleeping progress thread also waits on: frames from other processes (-1: none). */
int uroce_dp_loop_fd(struct uroce_dp *dp);
/* It woke on that fd: look at every sender on the next receive. */
void uroce_dp_loop_woken(struct uroce_dp *dp);
/* Before sleeping on that fd: other processes' senders are to wake us.
 * False when frames came meanwhile (do not sleep); disarm once awake. */
bool uroce_dp_loop_arm(struct uroce_dp *dp);
void uroce_dp_loop_disarm(struct uroce_dp *dp);
/* Frames to our own MAC wait in the loopback ring: no fd will say so, pass again. */
bool uroce_dp_loop_pending(const struct uroce_dp *dp);

/* Whether the port's link is up: false only for a memif client whose
 * server is gone (the device daemon's attachment, until it reconnects). */
bool uroce_dp_link_up(const struct uroce_dp *dp);
/* The device's port went down or came back (provider/daemon_link.c): while
 * down, not even frames between the device's own QPs flow. */
void uroce_dp_set_port_down(struct uroce_dp *dp, bool down);
/* A memif client's last try found nobody listening (no socket, or refused). */
bool uroce_dp_peer_absent(const struct uroce_dp *dp);

/* Frames the port can take now without waiting (memif: free slots). */
unsigned uroce_dp_tx_space(struct uroce_dp *dp);
/* Transmit: borrow a frame buffer, fill it, give it back with its length
 * (0 = unused). The put returns true for a frame to a process of the device
 * that is behind (frames wait for it already): its sender should pause. */
int uroce_dp_tx_get(struct uroce_dp *dp, uint8_t **data, uint32_t *cap, void **cookie);
bool uroce_dp_tx_put(struct uroce_dp *dp, void *cookie, uint32_t len);
/* Send what was put; returns frames sent. */
unsigned uroce_dp_tx_flush(struct uroce_dp *dp, uint64_t now_ns);

/*
 * Find the MAC of `gid` (IPv4-mapped or IPv6): 0 with mac filled, -EAGAIN
 * while a request is out (call again), -EHOSTUNREACH after the retries.
 */
int uroce_dp_neigh_lookup(struct uroce_dp *dp, const uint8_t gid[16], uint8_t mac[6],
			  uint64_t now_ns);

/* Slow-path upkeep, every few hundred ms: collects the kernel's count of
 * frames dropped on a full receive ring (dp_rx_ring_drops). */
void uroce_dp_housekeeping(struct uroce_dp *dp);

/*
 * Take only received frames whose destination QP >> shift is in blocks[n]
 * (and ARP/ND): other processes own the rest (steer_bpf.c). May be called
 * again with more blocks. -EOPNOTSUPP on ports without a filterable socket.
 */
int uroce_dp_steer(struct uroce_dp *dp, const uint32_t *blocks, unsigned n, unsigned shift);

/* An fd that becomes readable when frames may be waiting, or -1 if none. */
int uroce_dp_wait_fd(struct uroce_dp *dp);

/*
 * A port without such an fd (memif) may still signal the next frame when
 * asked, after 2 ms without frames: returns an fd to poll for POLLIN, -1
 * when the port cannot (or not yet), -EAGAIN when frames came meanwhile
 * (do not sleep). The signal stays on until
 * uroce_dp_disarm_wakeup, which the thread that armed it calls once awake
 * (frames others take meanwhile may wake it once more). Both under the
 * engine's lock.
 */
int uroce_dp_arm_wakeup(struct uroce_dp *dp, uint64_t now);
/* The same without the 2 ms: for a thread that would otherwise nap and look
 * again (the device daemon), a signal per sleep costs less than the naps.
 * -ENOTCONN: a memif client whose server is gone (it reconnects when the
 * port is read, every 100 ms). A memif wire lent out (uroce_dp_lend):
 * its control socket, or a server's listening one, to hear its peer come
 * and go. */
int uroce_dp_arm_wakeup_now(struct uroce_dp *dp);
void uroce_dp_disarm_wakeup(struct uroce_dp *dp);

/* Dataplane counters (see dp_counters.h): names and values. */
unsigned uroce_dp_counters(const struct uroce_dp *dp, const char *const **names,
			   const uint64_t **values);

/* Every ARP/ND frame received, after the port handled it, also to fn (NULL: none). */
void uroce_dp_set_neigh_seen(struct uroce_dp *dp,
			     void (*fn)(void *arg, const uint8_t *frame, uint32_t len), void *arg);

/*
 * Pass-through, the device daemon's side (pass_through.c): lend the wire's
 * memif rings, loan number gen, to the program at the other end of `sock` (0, -EBUSY when
 * they cannot be: not memif, not connected, faults or capture on), take
 * them back when it yields or is gone, or by force from one that did not
 * answer (the wire's connection then starts again). Meanwhile the port carries nothing
 * of ours; frames the borrower relays from the wire are switched with
 * uroce_dp_rx_relayed (to fn if RoCE for our MAC, ARP/ND to neigh_seen).
 */
bool uroce_dp_can_lend(const struct uroce_dp *dp);
int uroce_dp_lend(struct uroce_dp *dp, int sock, uint32_t gen);
void uroce_dp_take_back(struct uroce_dp *dp, bool by_force);
void uroce_dp_rx_relayed(struct uroce_dp *dp, const uint8_t *frame, uint32_t len,
			 uroce_dp_rx_fn fn, void *arg);

/*
 * The device daemon's switch (dev_switch.c): the wire port `wire` shared by
 * the programs that attach to `socket` as memif clients. Frames from the
 * wire go to the program whose pid owner(block of the destination QP)
 * names (0: nobody), ARP/ND to all, programs' frames to the wire.
 */
struct uroce_switch;
struct uroce_switch_config {
	struct uroce_dp *wire;
	const char *socket;
	unsigned block_shift;
	bool pass_through; /* lend a memif wire to a program alone on the device */
	int (*owner)(void *arg, unsigned block);
	void *owner_arg;
	uint64_t *counters; /* the dataplane part of a counter row, or NULL */
	void (*log)(void *arg, const char *line);
	void *log_arg;
};
int uroce_switch_open(const struct uroce_switch_config *c, struct uroce_switch **out);
void uroce_switch_close(struct uroce_switch *sw);
/* One pass: programs come and go, frames move both ways. How many moved. */
unsigned uroce_switch_pass(struct uroce_switch *sw, uint64_t now_ns);
/* Sleep until a frame or a program comes, at most timeout_ns. */
int uroce_switch_wait(struct uroce_switch *sw, uint64_t timeout_ns);

#endif
