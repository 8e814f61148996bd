/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * memif, the shared-memory packet interface of VPP and DPDK (protocol
 * version 2.0, memif_wire.h), spoken by uroce itself (memif_ctl.c,
 * memif_ring.c) rather than through DPDK's PMD.
 *
 * Why: the PMD copies every frame twice on its way through uroce. On
 * transmit it copies our finished frame from an mbuf into the shared ring,
 * on receive from the ring into an mbuf that we then read once more, and
 * both copies are 16-byte SSE loops (Debian builds DPDK for the baseline
 * CPU). Here a received frame is handed up in place, straight from the
 * shared buffer, and a frame to send is built in the shared buffer itself
 * (or copied in with the C library's memcpy when a peer's buffers are too
 * small for one). The wire stays memif, so either end may be DPDK's PMD or
 * VPP.
 *
 * One queue pair per interface, one interface per socket. Everything the
 * peer writes in shared memory is checked before use: a descriptor that
 * points outside the peer's regions is counted and skipped, never followed.
 */
#ifndef UROCE_MEMIF_H
#define UROCE_MEMIF_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define DP_MEMIF_MAX_REGIONS 4
/* A uroce program's region for its two rings (2 x 2048 slots of 9.2 KB at
 * MTU 9000 is 38 MB), with room to spare: what the device daemon maps. */
#define DP_MEMIF_PROGRAM_REGION_MAX (256ull << 20)

struct memif_ring;
struct memif_msg;

struct dp_memif {
	bool server;
	bool any_id;	      /* server of many clients: takes the id a client names */
	bool connected;
	bool region_given;    /* client: a server was handed our memory (it is not reused) */
	int connect_err;      /* client: what its last connect found (0, or -errno) */
	uint32_t id;	      /* the interface id both ends name */
	char path[108];	      /* the control socket */
	uint32_t bsize;	      /* the buffer size of rings we create (client) */
	uint8_t log2_ring;    /* the ring size we create (client) or allow (server) */
	int listen_fd;	      /* server: the listening socket, else -1 */
	int ctl_fd;	      /* the connection to the peer, -1 while there is none */
	uint64_t next_ctl_ns; /* the next look at the control sockets */

	/* the shared memory, mapped; a client created it, a server was given it */
	void *region[DP_MEMIF_MAX_REGIONS];
	uint64_t region_size[DP_MEMIF_MAX_REGIONS];
	int region_fd[DP_MEMIF_MAX_REGIONS];
	unsigned nregions;

	/* client to server ring and server to client ring, and their eventfds */
	struct memif_ring *c2s, *s2c;
	int c2s_fd, s2c_fd;
	uint16_t ring_size;
	uint16_t rx_last;      /* the next slot to read on the ring we receive on */
	uint16_t rx_end;       /* the producer's index as we last read it (bounded) */
	uint16_t rx_seen;      /* slots read in the current receive burst, not yet given back */
	uint16_t tx_next;      /* the next slot we write (memif_ring.c) */
	uint16_t tx_published; /* the peer sees the slots before this one */
	uint16_t tx_end;       /* slots before this one are free to write, as last read */
	unsigned tx_frames;    /* frames written, not yet published */
	bool tx_reserved;      /* the slot at tx_next is lent out (dp_memif_tx_reserve) */
	bool armed;	       /* the peer is asked to signal the next frame (dp_memif_arm) */
	bool stamps;	       /* the peer stamps its frames (rx_wait.h): read them */
	uint32_t tx_stamp;     /* written with each frame we send (0: none) */
	uint32_t rx_stamp;     /* the last frame's stamp, if the peer stamps */
	uint8_t *tx_buf;       /* and its buffer */
	uint8_t *gather;       /* a frame that came in pieces (a peer's smaller buffers) */
	uint32_t gather_cap;
	uint64_t bad_desc; /* descriptors from the peer that point outside its regions */
	/* pass-through (memif_lend.c): rings lent to us by the process that
	 * holds the connection, or ours lent out (then left alone) */
	bool borrowed, lent_out;
	uint32_t lost; /* connections lost so far: a loan of an older one is stale */
	uint16_t rx_flags; /* the last frame's descriptor flags (DP_MEMIF_DESC_*) */
	uint16_t tx_flags; /* given to each frame we write */
	uint8_t loan_region[2];	 /* a loan arriving: where its rings lie, */
	uint64_t loan_offset[2]; /* [0] server to client, [1] client to server */
	/* uroce's own control messages (memif_lend.c), with the fd passed, if any, to close */
	void (*on_msg)(void *arg, const struct memif_msg *msg, int fd);
	void *msg_arg;
	void (*log)(void *arg, const char *line);
	void *log_arg;
};

/*
 * Open from the port's arguments "role=server|client,id=N,socket=PATH", and
 * for a client "bsize=BYTES,rsize=LOG2" (DPDK's memif keys; others are
 * ignored; bsize defaults to `bsize`, rsize to 11). A server listens; a
 * client connects, waiting up to `wait_ms` for its server. 0 or -errno.
 */
/* The buffer size `args` names (bsize=N, rounded down to 128), or 0. */
uint32_t dp_memif_args_bsize(const char *args);
int dp_memif_open(struct dp_memif *m, const char *args, uint32_t bsize, unsigned wait_ms,
		  void (*log)(void *, const char *), void *log_arg);
void dp_memif_close(struct dp_memif *m);

/*
 * A server of many clients on one socket (the device daemon): listen, then
 * take each waiting client into a dp_memif of its own, whatever interface
 * id it names (m->id says which), shaking hands at once. dp_memif_listen
 * returns the listening fd or -errno; dp_memif_take 0, -EAGAIN when nobody
 * waits, -ECONNREFUSED when the client was refused (told why: `refuse`,
 * when not NULL, refuses it before any setup), or another -errno when
 * accepting failed. *pid is the client's process (SO_PEERCRED). A region
 * a client of many hands over is at most DP_MEMIF_PROGRAM_REGION_MAX,
 * sealed, and neither populated nor touched here. Then dp_memif_upkeep and the rest as for
 * one client; dp_memif_close when it has gone.
 */
int dp_memif_listen(const char *path);
int dp_memif_take(int listen_fd, const char *path, struct dp_memif *m, pid_t *pid,
		  const char *refuse, void (*log)(void *, const char *), void *log_arg);

/* Connection upkeep, at most every millisecond: a server takes a client, a
 * client reconnects, either notices its peer leave. */
void dp_memif_upkeep(struct dp_memif *m, uint64_t now);
/* End the connection (a client connects again at its next upkeeps, a
 * server takes the next client): its shared memory is abandoned. */
void dp_memif_hang_up(struct dp_memif *m, const char *why);
/* A client's last try found nobody listening (no socket file, or refused);
 * a server that listens but fails the handshake is not absent. */
bool dp_memif_peer_absent(const struct dp_memif *m);

/* The next received frame, or NULL: in place in the shared buffer, valid
 * until dp_memif_rx_done(). */
const uint8_t *dp_memif_rx_next(struct dp_memif *m, uint32_t *len);
/* Whether the peer has published frames not read yet. */
bool dp_memif_rx_pending(const struct dp_memif *m);
/* The stamp (rx_wait.h) of the oldest frame not read yet, or 0: none, or
 * unstamped. */
uint32_t dp_memif_rx_oldest_stamp(const struct dp_memif *m);
/* Give the slots of the frames read back to the peer. */
void dp_memif_rx_done(struct dp_memif *m);

/*
 * Before sleeping: ask the peer to signal the next frame on its ring's
 * eventfd (memif's interrupt). Returns the fd to poll for POLLIN (a server
 * with no client: its listening socket), -1 for a client not connected,
 * -EAGAIN when frames came meanwhile (do not sleep).
 * dp_memif_disarm, by the thread that armed it once awake, asks it to stop
 * again and empties the eventfd.
 */
int dp_memif_arm(struct dp_memif *m);
void dp_memif_disarm(struct dp_memif *m);
/* The same, leaving the eventfd as it is: for a thread that waits on it in
 * an edge-triggered epoll set, where only new signals wake it and a count
 * left behind costs nothing (the device daemon's switch: a read per program
 * per wake-up was 16 system calls) */
void dp_memif_disarm_keep(struct dp_memif *m);
/* The eventfd the peer signals our receive ring on (-1: none). */
int dp_memif_rx_signal_fd(const struct dp_memif *m);
/* Stop the peer's signals without taking the one that may be pending. */
void dp_memif_mask(struct dp_memif *m);

/* Copy frames[0..n) into the ring, in order while there is room, and
 * publish: how many went out. */
unsigned dp_memif_tx(struct dp_memif *m, const uint8_t *const *frames, const uint32_t *lens,
		     unsigned n);

/*
 * Or build a frame in the ring itself: lend out the next buffer if it holds
 * at least `need` bytes (its capacity in *cap), else NULL (not connected,
 * ring full, buffers smaller, one lent out already). Commit it with the
 * frame's length, 0 to give it back; publish to let the peer see what was
 * committed (returns how many frames that was).
 */
uint8_t *dp_memif_tx_reserve(struct dp_memif *m, uint32_t need, uint32_t *cap);
void dp_memif_tx_commit(struct dp_memif *m, uint32_t len);
unsigned dp_memif_tx_publish(struct dp_memif *m);
/* Connected, and no slot free to write. */
bool dp_memif_tx_full(struct dp_memif *m);
/* Slots free to write (0 when not connected). */
unsigned dp_memif_tx_space(struct dp_memif *m);
/* Connected with more than `keep` slots free: reads the peer's index only
 * when what it last read says no (the per-frame check of a sender). */
bool dp_memif_tx_room_over(struct dp_memif *m, unsigned keep);

/*
 * Pass-through (memif_lend.c, docs/shared-device.md 4.6): the process that
 * holds a connection lends its rings, shared memory and eventfds to another
 * process over a unix socket, and takes them back later, while it keeps the
 * connection itself. Neither moves the other's cursors: both read them from
 * the rings (dp_memif_resync), so the hand-over loses nothing that was
 * published and given back, and a borrower that dies loses only what it had
 * not published.
 *
 * DP_MEMIF_DESC_WIRE, between a device daemon and a program only: a frame the
 * program took from the lent wire for another program (program to daemon),
 * or another program's frame for the wire (daemon to program).
 */
#define DP_MEMIF_DESC_WIRE 0x8000u

/* Send m's rings (connected; published, read frames given back) over sock
 * as loan number `gen` (never 0): 0 or -errno. */
int dp_memif_lend(const struct dp_memif *m, int sock, uint32_t gen);
/* An empty loan, to borrow into. */
void dp_memif_loan_start(struct dp_memif *loan);
/* One message of a loan into `loan` (started empty): 1 when the
 * loan is complete and usable, 0 for more, -errno when it is bad (then
 * released). The fd is taken, used or closed. */
int dp_memif_borrow(struct dp_memif *loan, const struct memif_msg *msg, int fd);
/* Give a loan back (published and given back before, or lost): unmapped, fds closed. */
void dp_memif_give_back(struct dp_memif *loan);
/* The rings' cursors read from the rings themselves: after a loan came back. */
void dp_memif_resync(struct dp_memif *m);
/* RECALL or YIELD of loan `gen` on m's connection: 0 or -errno. */
int dp_memif_send_loan(struct dp_memif *m, uint16_t type, uint32_t gen);
/* The type of a uroce message (on_msg), and the loan it is about. */
uint16_t dp_memif_msg_type(const struct memif_msg *msg);
uint32_t dp_memif_msg_gen(const struct memif_msg *msg);
/*
 * A loan taken back without its YIELD (a borrower stopped, or in a
 * debugger), said in the attachment m between a daemon (revoke) and its
 * program (revoked): the program looks at each pass and touches the rings
 * no more.
 */
void dp_memif_revoke(struct dp_memif *m, uint32_t gen);
bool dp_memif_revoked(const struct dp_memif *m, uint32_t gen);

#endif
