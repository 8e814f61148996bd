/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Device counters. One X-macro list generates the enum and the names; the
 * names that exist on mlx5 NICs (hw_counters in sysfs) keep their exact
 * spelling so monitoring scripts work unchanged. Every dropped packet is
 * counted under exactly one rx_drop_* reason.
 */
#ifndef UR_COUNTERS_H
#define UR_COUNTERS_H

#include <stdint.h>

#define UR_COUNTERS(X)                                                                             \
	/* mlx5 names */                                                                           \
	X(out_of_sequence, "responder: packets that arrived with a PSN ahead of the expected one")  \
	X(packet_seq_err, "requester: NAK sequence error packets received")                        \
	X(local_ack_timeout_err, "requester: local ACK timeouts (transport retries)")               \
	X(duplicate_request, "responder: duplicate request packets received")                       \
	X(rnr_nak_retry_err, "requester: RNR NAK packets received")                                 \
	X(implied_nak_seq_err, "requester: ACKs/responses that implied a lost READ/atomic response") \
	X(out_of_buffer, "responder: SENDs that found no receive WQE (RNR NAK sent)")               \
	X(req_cqe_error, "requester: error completions (not flush)")                                \
	X(req_cqe_flush_error, "requester: flush completions")                                      \
	X(resp_cqe_error, "responder: error completions (not flush)")                               \
	X(resp_cqe_flush_error, "responder: flush completions")                                     \
	X(req_remote_access_errors, "requester: remote access error NAKs received")                 \
	X(req_remote_invalid_request, "requester: invalid request NAKs received")                   \
	X(resp_local_length_error, "responder: receive buffer too small")                           \
	X(resp_remote_access_errors, "responder: remote access errors (NAK sent)")                  \
	X(rx_write_requests, "responder: RDMA WRITE request packets processed")                     \
	X(rx_read_requests, "responder: RDMA READ requests processed")                              \
	X(rx_atomic_requests, "responder: atomic requests processed")                               \
	X(np_ecn_marked_roce_packets, "notification point: RoCE packets received with ECN CE")      \
	X(np_cnp_sent, "notification point: CNPs sent")                                             \
	X(rp_cnp_handled, "reaction point: CNPs that reduced a QP's rate")                          \
	X(rp_cnp_ignored, "reaction point: CNPs received for no rate-limited QP")                   \
	/* uroce's own */                                                                          \
	X(tx_packets, "RoCE packets transmitted")                                                   \
	X(tx_bytes, "RoCE frame bytes transmitted")                                                 \
	X(rx_packets, "RoCE packets received and accepted")                                         \
	X(rx_bytes, "RoCE frame bytes received and accepted")                                       \
	X(retransmitted_packets, "requester: packets sent again (go-back-N or selective)")          \
	X(tx_acks, "responder: ACK packets sent")                                                   \
	X(tx_naks, "responder: NAK packets sent (sequence, RNR and error)")                         \
	X(resp_stale_replays, "responder: replays of duplicate READs/atomics dropped as stale")     \
	X(rx_acks, "requester: ACK packets received")                                               \
	X(rx_naks, "requester: NAK packets received")                                               \
	X(rnr_retry_exceeded, "requester: RNR retry count exhausted")                               \
	X(retry_exceeded, "requester: transport retry count exhausted")                             \
	X(una_caught_up, "requester: oldest unacknowledged PSN moved up to the oldest WQE not done") \
	X(ack_timer_stalled, "requester: ACK timers 10 ms late (a stalled host), restarted")      \
	X(sr_sacks_sent, "selective repeat: ACKs sent reporting a gap")                             \
	X(sr_sacks_received, "selective repeat: ACKs received reporting a gap")                     \
	X(sr_selective_retx, "selective repeat: packets retransmitted selectively")                 \
	X(sr_read_reasked, "selective repeat: READs asked again from a missing response alone")     \
	X(sr_ooo_placed, "selective repeat: out-of-order packets placed directly")                  \
	X(sr_duplicates, "selective repeat: duplicate packets received")                            \
	X(sr_timeouts, "selective repeat: RTO_low/RTO_high retransmission timeouts")               \
	X(sr_reorder_lost, "selective repeat: packets deemed lost by the reordering window (RACK)") \
	X(sr_spurious_retx, "selective repeat: retransmissions answered by the original")           \
	X(sr_negotiated, "selective repeat: QPs that agreed with their peer")                     \
	X(cq_overflow, "completions lost because a CQ was full")                                    \
	X(tx_no_buffer, "transmissions deferred because the port had no buffer")                   \
	X(tx_held_for_receiver, "packets after which their QP paused for a receiver behind")       \
	X(tx_buffer_too_small, "packets not built: the port's buffer is shorter than the path MTU") \
	X(tx_no_neighbour, "packets not sent because the peer MAC is unresolved")                   \
	X(rx_drop_not_roce, "frames that were not RoCEv2 (other traffic on the port)")              \
	X(rx_drop_truncated, "frames whose lengths do not add up")                                  \
	X(rx_drop_bad_ip, "frames with a bad IP header (version, length, checksum, fragment)")      \
	X(rx_drop_bad_bth, "frames with a bad BTH (TVer, unknown opcode, pad count)")               \
	X(rx_icrc_errors, "frames with a bad ICRC")                                                 \
	X(rx_drop_unknown_qp, "packets for a QP number that does not exist here")                   \
	X(rx_drop_bad_qp_state, "packets for a QP in a state that cannot receive")                  \
	X(rx_drop_wrong_transport, "packets whose opcode is not of the QP's transport type")        \
	X(rx_drop_wrong_peer, "packets from an address or QP other than the connected peer")        \
	X(rx_drop_bad_pkey, "packets with a P_Key that does not match")                             \
	X(rx_drop_bad_opcode_seq, "requests out of opcode sequence (NAK invalid request sent)")    \
	X(rx_drop_out_of_window, "out-of-sequence packets dropped silently after the NAK")          \
	X(rx_drop_error_nak_pending, "requests dropped while an error NAK waits to leave")          \
	X(rx_drop_ghost_ack, "ACKs/responses for nothing outstanding")                              \
	X(rx_drop_bad_response, "responses that do not fit the outstanding request")                \
	X(rx_drop_qkey, "UD datagrams with a wrong Q_Key")                                          \
	X(rx_drop_uc_message, "UC messages dropped whole: a packet missing, or refused")             \
	X(rx_drop_uc_resync, "UC packets discarded until the next message starts (after a drop)")  \
	X(rx_drop_no_buffer, "UC/UD packets dropped because no receive WQE was posted")             \
	X(ud_send_too_long, "UD sends longer than the path MTU: not sent, no error (C10-93.1.1)")  \
	X(rx_drop_unsupported, "packets of a kind this device does not implement")                 \
	X(mw_binds, "memory window binds and unbinds done")                                         \
	X(mw_bind_errors, "memory window binds refused (IBV_WC_MW_BIND_ERR)")                      \
	X(mw_invalidations, "memory windows invalidated (LOCAL_INV, SEND with Invalidate)")        \
	X(resp_mw_refused, "responder: remote accesses and invalidations a memory window refused") \
	X(rx_drop_sr_early_invalidate, "selective repeat: SEND with Invalidate ahead of missing PSNs, dropped to come again in order") \
	X(rx_drop_xrc_srq, "XRC requests naming no SRQ of the target's XRC domain (NAK sent)")

enum ur_counter {
#define UR_COUNTER_ENUM(name, desc) UR_CTR_##name,
	UR_COUNTERS(UR_COUNTER_ENUM)
#undef UR_COUNTER_ENUM
	UR_CTR_COUNT
};

extern const char *const ur_counter_names[UR_CTR_COUNT];
extern const char *const ur_counter_descs[UR_CTR_COUNT];

#endif
