/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The unreliable datagram service (IBTA 9.8): every message is one SEND
 * Only packet with a DETH naming the Q_Key and the source QP. The requester
 * addresses each work request through its own address handle; the
 * responder checks the Q_Key, ignores the PSN, and places the GRH in the
 * first 40 bytes of the receive buffer before the payload.
 */
#include <string.h>

#include "psn.h"
#include "qp.h"
#include "qp_error.h"
#include "recv_wqe.h"
#include "ud.h"

/* Route the next packet by the WQE's address handle and remote QP. */
void ur_ud_prepare(struct ur_qp *qp, const struct ur_send_wqe *w)
{
	struct ur_path path = w->ud_av->path;

	/* one source port per destination QP: ECMP keeps a flow on one path */
	path.udp_sport = ur_roce_udp_sport(path.flow_label, qp->qpn, w->ud_qpn);
	ur_frame_tmpl_init(&qp->tmpl, &path);
	qp->ud_av = w->ud_av;
}

/*
 * The DETH of a datagram (9.3.2). A Q_Key with its high-order bit set in
 * the work request means "use the QP's own Q_Key": controlled Q_Keys
 * (high bit set) are for privileged consumers, which set them on the QP.
 */
void ur_ud_fill_deth(struct ur_qp *qp, const struct ur_send_wqe *w, struct ur_deth *deth)
{
	ur_deth_set_qkey(deth, (w->ud_qkey & 0x80000000u) ? qp->attr.qkey : w->ud_qkey);
	ur_deth_set_sqpn(deth, qp->qpn);
}

static void ud_complete(struct ur_qp *qp, const struct ur_pkt *pkt, const struct ur_deth *deth)
{
	struct ur_responder *rs = &qp->resp;
	struct ur_cqe cqe = {
	    .wr_id = rs->rwqe->wr_id,
	    .status = UR_WC_SUCCESS,
	    .opcode = UR_WC_RECV,
	    .wc_flags = UR_WC_GRH,
	    .byte_len = UR_GRH_LEN + pkt->payload_len,
	    .qp_num = qp->qpn,
	    .src_qp = ur_deth_sqpn(deth),
	    .solicited = ur_bth_se(pkt->bth),
	    .sl = pkt->ipv6 ? UR_WC_ROCEV2_IPV6 : UR_WC_ROCEV2_IPV4,
	};

	if (pkt->op->hdrs & UR_HDR_IMMDT) {
		cqe.wc_flags |= UR_WC_WITH_IMM;
		cqe.imm = ur_immdt_raw(
		    (const struct ur_immdt *)((const uint8_t *)pkt->bth + pkt->op->off_immdt));
	}
	rs->have_rwqe = false;
	rs->rq_done++;
	ur_qp_post_cqe(qp, qp->rcq, &cqe);
}

/*
 * A datagram arrived for this QP. Each failure drops it silently and
 * counts it, as the unacknowledged service has no one to tell (class D of
 * 9.9.3.1); a receive WQE it had claimed stays claimed for the next one.
 */
void ur_ud_resp_rx(struct ur_qp *qp, const struct ur_pkt *pkt)
{
	const struct ur_deth *deth =
	    (const struct ur_deth *)((const uint8_t *)pkt->bth + pkt->op->off_deth);
	struct ur_responder *rs = &qp->resp;
	uint8_t grh[UR_GRH_LEN];

	if (!rs->have_rwqe) {
		if (!ur_resp_take_rwqe(qp, rs->rwqe)) {
			ur_count(qp->dev, UR_CTR_out_of_buffer);
			ur_count(qp->dev, UR_CTR_rx_drop_no_buffer);
			return;
		}
		rs->have_rwqe = true;
	}
	if (UR_GRH_LEN + pkt->payload_len > rs->rwqe->length) {
		ur_count(qp->dev, UR_CTR_resp_local_length_error);
		return;
	}
	ur_pkt_grh(pkt, grh);
	if (ur_resp_scatter(qp, rs->rwqe, 0, grh, UR_GRH_LEN) ||
	    ur_resp_scatter(qp, rs->rwqe, UR_GRH_LEN, pkt->payload, pkt->payload_len)) {
		struct ur_cqe cqe = {
		    .wr_id = rs->rwqe->wr_id,
		    .status = UR_WC_LOC_PROT_ERR,
		    .opcode = UR_WC_RECV,
		    .qp_num = qp->qpn,
		};

		/* a malformed receive WQE fails the QP (class A) */
		ur_qp_log_error(qp, "UD receive WQE wr_id %#llx has a bad lkey",
				(unsigned long long)rs->rwqe->wr_id);
		ur_count(qp->dev, UR_CTR_resp_cqe_error);
		rs->have_rwqe = false;
		rs->rq_done++;
		ur_qp_post_cqe(qp, qp->rcq, &cqe);
		ur_qp_to_error(qp, true);
		return;
	}
	rs->epsn = ur_psn_add(pkt->psn, 1); /* kept for query only: UD ignores PSNs */
	ud_complete(qp, pkt, deth);
}
