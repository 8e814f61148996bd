/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The dataplane's counters, without DPDK: the `uroce` tool names them too.
 * They follow the engine's counters in each row of a device's shared
 * counter file.
 */
#ifndef UROCE_DP_COUNTERS_H
#define UROCE_DP_COUNTERS_H

/* Dataplane counters: one X-macro list for the enum and the names. */
#define DP_COUNTERS(X)                                                                             \
	X(dp_rx_frames, "frames read from the port")                                               \
	X(dp_rx_ring_drops, "frames the kernel dropped on our full receive ring (af_packet, AF_XDP)") \
	X(dp_rx_not_for_us, "frames for another MAC address")                                      \
	X(dp_rx_other, "frames that are neither RoCE nor ARP/ND (left to the kernel)")             \
	X(dp_rx_arp, "ARP frames handled")                                                         \
	X(dp_rx_nd, "IPv6 neighbour discovery frames handled")                                     \
	X(dp_tx_frames, "frames handed to the port")                                               \
	X(dp_tx_gso_frames, "of those, frames sent in batches of one QP's frames (af_packet GSO)") \
	X(dp_rx_gso_frames, "frames received in batches and cut apart (af_packet GSO)")         \
	X(dp_rx_gso_lost, "batches lost whole: no room for them on the receive socket (af_packet GSO)") \
	X(dp_tx_dropped, "frames the port would not take after retries")                           \
	X(dp_tx_no_mbuf, "no transmit buffer: no mbuf, or memif's ring full")                      \
	X(dp_tx_loopback, "frames to our own MAC delivered locally")                               \
	X(dp_tx_loopback_drops, "frames to our own MAC dropped: the loopback ring was full")       \
	X(dp_tx_loopback_no_owner, "frames to our own MAC for QP numbers no process holds")        \
	X(dp_neigh_requests, "ARP requests and neighbour solicitations sent")                      \
	X(dp_neigh_replies, "ARP replies and neighbour advertisements sent")                       \
	X(dp_neigh_failed, "neighbours given up on")                                               \
	X(dp_impair_dropped, "transmitted frames dropped by injected loss")                        \
	X(dp_impair_rx_dropped, "received frames dropped by injected loss")                        \
	X(dp_impair_duplicated, "transmitted frames duplicated by injection")                      \
	X(dp_impair_rx_duplicated, "received frames duplicated by injection")                      \
	X(dp_impair_reordered, "transmitted frames delayed by injected reordering")                \
	X(dp_impair_rx_reordered, "received frames delayed by injected reordering")                \
	X(dp_impair_ce_marked, "transmitted frames CE-marked by injection")                        \
	X(dp_impair_rx_ce_marked, "received frames CE-marked by injection")                        \
	X(dp_rx_no_mbuf, "received frames dropped for want of a buffer to hold them (faults on)")  \
	X(dp_memif_bad_desc, "memif descriptors from the peer that point outside its memory")     \
	X(dp_switch_no_owner, "device daemon: wire frames for QP numbers no attached program holds") \
	X(dp_switch_full, "device daemon: frames dropped, the receiving program's ring was full") \
	X(dp_tx_loopback_link_down, "frames to our own MAC dropped: the port was down (daemon gone)") \
	X(dp_switch_ce_marked, "device daemon: RoCE frames CE-marked, a program's ring or the port's backing up") \
	X(dp_rx_waited_10ms, "frames that waited 10 ms or more in the receive ring: the host ran something else") \
	X(dp_rx_waited_50ms, "of those, frames that waited 50 ms or more: as long as a short QP timeout") \
	X(dp_tx_loopback_refused, "frames to another process of the device dropped: it has 256 senders already") \
	X(dp_late_passes, "passes the late answerer ran: no thread of the program ran one for a tick while frames or timers waited") \
	X(dp_late_backlog_passes, "passes the late answerer ran: the oldest frame in the receive ring had waited 10 ms while the program's passes came too seldom") \
	X(dp_wire_borrowed, "pass-through: times this program was lent the device daemon's wire, alone on the device") \
	X(dp_relayed_to_daemon, "pass-through: frames from the lent wire for other programs (and ARP/ND), handed to the daemon") \
	X(dp_relayed_to_wire, "pass-through: other programs' frames the daemon handed us, put on the lent wire") \
	X(dp_relay_dropped, "pass-through: frames to relay dropped, the ring full") \
	X(dp_switch_frames, "device daemon: frames its switch moved between the wire and the programs")

enum dp_counter {
#define DP_COUNTER_ENUM(name, desc) DP_CTR_##name,
	DP_COUNTERS(DP_COUNTER_ENUM)
#undef DP_COUNTER_ENUM
	DP_CTR_COUNT
};

extern const char *const uroce_dp_counter_names[DP_CTR_COUNT];

#endif
