/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The verbs vocabulary the engine speaks: QP states, types, access flags,
 * attribute masks, work request opcodes and completion statuses. Numeric
 * values equal libibverbs' so the provider converts with a cast (it
 * static_asserts each equality); the engine itself never sees verbs headers.
 */
#ifndef UR_VERBS_TYPES_H
#define UR_VERBS_TYPES_H

#include <stdint.h>

#include "frame.h"

enum ur_qp_state {
	UR_QPS_RESET,
	UR_QPS_INIT,
	UR_QPS_RTR,
	UR_QPS_RTS,
	UR_QPS_SQD,
	UR_QPS_SQE,
	UR_QPS_ERR,
	UR_QPS_COUNT,
};

enum ur_qp_type {
	UR_QPT_RC = 2,
	UR_QPT_UC = 3,
	UR_QPT_UD = 4,
	UR_QPT_XRC_SEND = 9,  /* XRC initiator (annex A14) */
	UR_QPT_XRC_RECV = 10, /* XRC target */
};

enum ur_access {
	UR_ACCESS_LOCAL_WRITE = 1,
	UR_ACCESS_REMOTE_WRITE = 2,
	UR_ACCESS_REMOTE_READ = 4,
	UR_ACCESS_REMOTE_ATOMIC = 8,
	UR_ACCESS_MW_BIND = 16,
	UR_ACCESS_ZERO_BASED = 32,
	UR_ACCESS_ON_DEMAND = 64,
	UR_ACCESS_HUGETLB = 128,
	UR_ACCESS_RELAXED_ORDERING = 1 << 20,
};

enum ur_qp_attr_mask {
	UR_QP_STATE = 1 << 0,
	UR_QP_CUR_STATE = 1 << 1,
	UR_QP_EN_SQD_ASYNC_NOTIFY = 1 << 2,
	UR_QP_ACCESS_FLAGS = 1 << 3,
	UR_QP_PKEY_INDEX = 1 << 4,
	UR_QP_PORT = 1 << 5,
	UR_QP_QKEY = 1 << 6,
	UR_QP_AV = 1 << 7,
	UR_QP_PATH_MTU = 1 << 8,
	UR_QP_TIMEOUT = 1 << 9,
	UR_QP_RETRY_CNT = 1 << 10,
	UR_QP_RNR_RETRY = 1 << 11,
	UR_QP_RQ_PSN = 1 << 12,
	UR_QP_MAX_QP_RD_ATOMIC = 1 << 13,
	UR_QP_ALT_PATH = 1 << 14,
	UR_QP_MIN_RNR_TIMER = 1 << 15,
	UR_QP_SQ_PSN = 1 << 16,
	UR_QP_MAX_DEST_RD_ATOMIC = 1 << 17,
	UR_QP_PATH_MIG_STATE = 1 << 18,
	UR_QP_CAP = 1 << 19,
	UR_QP_DEST_QPN = 1 << 20,
	UR_QP_RATE_LIMIT = 1 << 25,
};

/* Send work request opcodes (enum ibv_wr_opcode). */
enum ur_wr_opcode {
	UR_WR_RDMA_WRITE = 0,
	UR_WR_RDMA_WRITE_WITH_IMM = 1,
	UR_WR_SEND = 2,
	UR_WR_SEND_WITH_IMM = 3,
	UR_WR_RDMA_READ = 4,
	UR_WR_ATOMIC_CMP_AND_SWP = 5,
	UR_WR_ATOMIC_FETCH_AND_ADD = 6,
	UR_WR_LOCAL_INV = 7,
	UR_WR_BIND_MW = 8,
	UR_WR_SEND_WITH_INV = 9,
	UR_WR_OPCODE_COUNT,
};

/* Send flags (enum ibv_send_flags). */
enum ur_send_flags {
	UR_SEND_FENCE = 1 << 0,
	UR_SEND_SIGNALED = 1 << 1,
	UR_SEND_SOLICITED = 1 << 2,
	UR_SEND_INLINE = 1 << 3,
};

/* Completion status (enum ibv_wc_status). */
enum ur_wc_status {
	UR_WC_SUCCESS = 0,
	UR_WC_LOC_LEN_ERR = 1,
	UR_WC_LOC_QP_OP_ERR = 2,
	UR_WC_LOC_EEC_OP_ERR = 3,
	UR_WC_LOC_PROT_ERR = 4,
	UR_WC_WR_FLUSH_ERR = 5,
	UR_WC_MW_BIND_ERR = 6,
	UR_WC_BAD_RESP_ERR = 7,
	UR_WC_LOC_ACCESS_ERR = 8,
	UR_WC_REM_INV_REQ_ERR = 9,
	UR_WC_REM_ACCESS_ERR = 10,
	UR_WC_REM_OP_ERR = 11,
	UR_WC_RETRY_EXC_ERR = 12,
	UR_WC_RNR_RETRY_EXC_ERR = 13,
	UR_WC_LOC_RDD_VIOL_ERR = 14,
	UR_WC_REM_INV_RD_REQ_ERR = 15,
	UR_WC_REM_ABORT_ERR = 16,
	UR_WC_INV_EECN_ERR = 17,
	UR_WC_INV_EEC_STATE_ERR = 18,
	UR_WC_FATAL_ERR = 19,
	UR_WC_RESP_TIMEOUT_ERR = 20,
	UR_WC_GENERAL_ERR = 21,
	UR_WC_STATUS_COUNT,
};

/* Completion opcode (enum ibv_wc_opcode). */
enum ur_wc_opcode {
	UR_WC_SEND = 0,
	UR_WC_RDMA_WRITE = 1,
	UR_WC_RDMA_READ = 2,
	UR_WC_COMP_SWAP = 3,
	UR_WC_FETCH_ADD = 4,
	UR_WC_BIND_MW = 5,
	UR_WC_LOCAL_INV = 6,
	UR_WC_RECV = 1 << 7,
	UR_WC_RECV_RDMA_WITH_IMM = (1 << 7) + 1,
};

/* Completion flags (enum ibv_wc_flags). */
enum ur_wc_flags {
	UR_WC_GRH = 1 << 0,
	UR_WC_WITH_IMM = 1 << 1,
	UR_WC_WITH_INV = 1 << 3,
};

/*
 * What a UD receive completion over RoCE reports in ibv_wc.sl: the kind of
 * packet that arrived, which tells where in the 40-byte GRH area the
 * addresses are (A17.4.5.1: the completion flags IPv4, IPv6 or RoCE). The
 * layout is mlx5's (its PRM's roce_pkt_type, copied to wc.sl by rdma-core's
 * mlx5 provider): bit 3 set when the frame has a UDP header, bits 2:0 the
 * L3 header type. UCX's UD transport reads bits 2:0 to find the
 * destination address it filters on; 2 means "IPv4 in the last 20 bytes".
 */
enum ur_wc_roce_pkt {
	UR_WC_ROCE_L3_GRH = 0,
	UR_WC_ROCE_L3_IPV6 = 1,
	UR_WC_ROCE_L3_IPV4 = 2,
	UR_WC_ROCE_UDP = 1 << 3,
	UR_WC_ROCEV2_IPV6 = UR_WC_ROCE_UDP | UR_WC_ROCE_L3_IPV6,
	UR_WC_ROCEV2_IPV4 = UR_WC_ROCE_UDP | UR_WC_ROCE_L3_IPV4,
};

/* Asynchronous events (enum ibv_event_type). */
enum ur_async_event {
	UR_EVENT_CQ_ERR = 0,
	UR_EVENT_QP_FATAL = 1,
	UR_EVENT_QP_REQ_ERR = 2,
	UR_EVENT_QP_ACCESS_ERR = 3,
	UR_EVENT_COMM_EST = 4,
	UR_EVENT_SQ_DRAINED = 5,
	UR_EVENT_PATH_MIG = 6,
	UR_EVENT_PATH_MIG_ERR = 7,
	UR_EVENT_DEVICE_FATAL = 8,
	UR_EVENT_PORT_ACTIVE = 9,
	UR_EVENT_PORT_ERR = 10,
	UR_EVENT_LID_CHANGE = 11,
	UR_EVENT_PKEY_CHANGE = 12,
	UR_EVENT_SM_CHANGE = 13,
	UR_EVENT_SRQ_ERR = 14,
	UR_EVENT_SRQ_LIMIT_REACHED = 15,
	UR_EVENT_QP_LAST_WQE_REACHED = 16,
	UR_EVENT_CLIENT_REREGISTER = 17,
	UR_EVENT_GID_CHANGE = 18,
};

/* IB path MTU enum (enum ibv_mtu): 1 = 256 ... 5 = 4096. */
static inline uint32_t ur_mtu_bytes(unsigned mtu_enum)
{
	return (mtu_enum >= 1 && mtu_enum <= 5) ? 128u << mtu_enum : 0;
}

static inline unsigned ur_mtu_enum(uint32_t bytes)
{
	unsigned e = 0;

	for (unsigned i = 1; i <= 5; i++)
		if (ur_mtu_bytes(i) <= bytes)
			e = i;
	return e;
}

/* Scatter/gather element, laid out like struct ibv_sge. */
struct ur_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

/* Address vector: what ibv_ah_attr says, after GID and neighbour resolution. */
struct ur_av {
	struct ur_path path;
	uint8_t sgid_index;
	uint8_t sl;
	uint8_t static_rate;
	uint8_t resolved; /* destination MAC known */
};

/* What modify_qp/query_qp carry (a subset of struct ibv_qp_attr, same meaning). */
struct ur_qp_attr {
	enum ur_qp_state qp_state;
	enum ur_qp_state cur_qp_state;
	unsigned path_mtu;          /* ibv_mtu enum */
	uint32_t qkey;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qp_num;
	uint32_t qp_access_flags;
	uint32_t max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data;
	struct ur_av av;
	uint16_t pkey_index;
	uint8_t en_sqd_async_notify;
	uint8_t sq_draining;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;
	uint8_t port_num;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint32_t rate_limit;        /* kbps, 0 = unlimited */
};

#endif
