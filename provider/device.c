/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Device discovery and contexts: libibverbs finds our devices in the sysfs
 * tree `uroce link add` wrote; a context is its verbs objects and event
 * queue on the process's NIC for the device (nic.c), which the first open
 * starts and every later one shares.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "uroce.h"

static const struct verbs_context_ops uroce_ctx_ops;

bool uroce_is_ours(const struct ibv_context *ctx)
{
	return ctx && verbs_get_device(ctx->device)->ops == &uroce_dev_ops;
}

bool uroce_is_our_device(struct ibv_device *dev)
{
	return dev && verbs_get_device(dev)->ops == &uroce_dev_ops;
}

/* Ours when `uroce link add` wrote a config for this name in this namespace. */
static bool uroce_match_device(struct verbs_sysfs_dev *sysfs_dev)
{
	struct uroce_devconf c;

	return uroce_devconf_load(sysfs_dev->ibdev_name, &c) == 0 &&
	       !strcmp(c.uverbs, sysfs_dev->sysfs_name);
}

static struct verbs_device *uroce_alloc_device(struct verbs_sysfs_dev *sysfs_dev)
{
	struct uroce_device *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	snprintf(d->name, sizeof(d->name), "%s", sysfs_dev->ibdev_name);
	return &d->vdev;
}

static void uroce_uninit_device(struct verbs_device *vdev)
{
	free(to_type(vdev, struct uroce_device, vdev));
}

static uint64_t guid_from_mac(const uint8_t m[6])
{
	uint8_t g[8] = {m[0] ^ 2, m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]};
	uint64_t be;

	memcpy(&be, g, 8); /* already in network order */
	return be;
}

static int uroce_query_device_ex(struct ibv_context *ibctx,
				 const struct ibv_query_device_ex_input *input,
				 struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct uroce_nic *nic = to_unic(ibctx);
	struct ibv_device_attr_ex a;

	(void)input;
	memset(&a, 0, sizeof(a));
	snprintf(a.orig_attr.fw_ver, sizeof(a.orig_attr.fw_ver), "%s", "0.1.0");
	a.orig_attr.node_guid = guid_from_mac(nic->conf.mac);
	a.orig_attr.sys_image_guid = a.orig_attr.node_guid;
	a.orig_attr.max_mr_size = 1ull << 46;
	a.orig_attr.page_size_cap = 0xfffff000;
	a.orig_attr.vendor_id = 0xffffff;   /* no IEEE OUI: a software device, like Soft-RoCE */
	a.orig_attr.vendor_part_id = 0x5552; /* "UR" */
	a.orig_attr.hw_ver = 0;
	a.orig_attr.max_qp = (int)nic->limit[UROCE_OBJ_QP];
	a.orig_attr.max_qp_wr = UR_MAX_WR;
	a.orig_attr.device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT |
				       IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_N_NOTIFY_CQ |
				       IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B |
				       IBV_DEVICE_XRC;
	a.orig_attr.max_mw = (int)nic->limit[UROCE_OBJ_MW]; /* mw.c; mlx5's flags */
	a.orig_attr.max_sge = UR_MAX_SGE;
	a.orig_attr.max_sge_rd = UR_MAX_SGE;
	a.orig_attr.max_cq = (int)nic->limit[UROCE_OBJ_CQ];
	a.orig_attr.max_cqe = UR_MAX_CQE;
	a.orig_attr.max_mr = (int)nic->limit[UROCE_OBJ_MR];
	a.orig_attr.max_pd = (int)nic->limit[UROCE_OBJ_PD];
	/* what the engine holds and issues: the link's rd_atom, 16 by default */
	a.orig_attr.max_qp_rd_atom = (int)ur_dev_config(nic->engine)->max_qp_rd_atom;
	a.orig_attr.max_res_rd_atom = a.orig_attr.max_qp_rd_atom * a.orig_attr.max_qp;
	a.orig_attr.max_qp_init_rd_atom = (int)ur_dev_config(nic->engine)->max_qp_init_rd_atom;
	a.orig_attr.atomic_cap = IBV_ATOMIC_HCA;
	a.orig_attr.max_ah = (int)nic->limit[UROCE_OBJ_AH];
	a.orig_attr.max_srq = (int)nic->limit[UROCE_OBJ_SRQ];
	a.orig_attr.max_srq_wr = UR_MAX_WR;
	a.orig_attr.max_srq_sge = UR_MAX_SGE;
	a.orig_attr.max_pkeys = 1;
	a.orig_attr.local_ca_ack_delay = 15;
	a.orig_attr.phys_port_cnt = 1;
	a.phys_port_cnt_ex = a.orig_attr.phys_port_cnt;
	a.device_cap_flags_ex = a.orig_attr.device_cap_flags;
	/* completion timestamps: the engine's 64-bit nanosecond clock (cq_ex.c) */
	a.completion_timestamp_mask = UINT64_MAX;
	a.hca_core_clock = 1000000; /* kHz */
	a.max_dm_size = UROCE_MAX_DM;
	/* the CPU is the NIC: every access faults pages in as any load or store
	 * does (docs/verbs.md, on-demand paging) */
	a.odp_caps.general_caps = IBV_ODP_SUPPORT;
	if (uroce_odp_implicit_ok())
		a.odp_caps.general_caps |= IBV_ODP_SUPPORT_IMPLICIT;
	a.odp_caps.per_transport_caps.rc_odp_caps =
	    IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
	    IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;
	a.odp_caps.per_transport_caps.uc_odp_caps = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
						    IBV_ODP_SUPPORT_WRITE |
						    IBV_ODP_SUPPORT_SRQ_RECV;
	a.odp_caps.per_transport_caps.ud_odp_caps =
	    IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_SRQ_RECV;
	memcpy(attr, &a, attr_size < sizeof(a) ? attr_size : sizeof(a));
	return 0;
}

static int uroce_query_port(struct ibv_context *ibctx, uint8_t port, struct ibv_port_attr *attr)
{
	struct uroce_nic *nic = to_unic(ibctx);

	if (port != 1)
		return uroce_refuse(nic, EINVAL, "query_port",
				    "port %u: the device has port 1 only", port);
	/* the daemon's attachment is the port's link (daemon_link.c) */
	attr->state = nic->port_up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
	attr->max_mtu = IBV_MTU_4096;
	attr->active_mtu = ur_mtu_enum(nic->active_mtu);
	attr->gid_tbl_len = (int)nic->conf.ngids;
	attr->port_cap_flags = IBV_PORT_CM_SUP;
	attr->max_msg_sz = 1u << 31;
	attr->pkey_tbl_len = 1;
	attr->max_vl_num = 1;
	attr->active_width = 2;  /* 4X */
	attr->active_speed = 4;  /* QDR: a nominal 40 Gb/s, like Soft-RoCE shows a rate */
	attr->phys_state = nic->port_up ? 5 : 3; /* LinkUp, Disabled */
	attr->link_layer = IBV_LINK_LAYER_ETHERNET;
	return 0;
}

static struct verbs_context *uroce_alloc_context(struct ibv_device *ibdev, int cmd_fd,
						 void *private_data)
{
	struct uroce_device *dev = to_type(verbs_get_device(ibdev), struct uroce_device, vdev);
	struct uroce_context *ctx;
	int sv[2], err;

	(void)private_data;
	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, vctx, 0);
	if (!ctx)
		return NULL;
	uroce_link_init(&ctx->qps);
	uroce_link_init(&ctx->srqs);
	uroce_link_init(&ctx->mrs);
	uroce_link_init(&ctx->mws);
	uroce_link_init(&ctx->pds);
	uroce_link_init(&ctx->cqs);
	uroce_link_init(&ctx->ahs);
	/* async events: ibv_get_async_event reads whole 16-byte records from async_fd */
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
		err = -errno;
		goto err_free;
	}
	ctx->vctx.context.async_fd = sv[0];
	ctx->async_wr = sv[1];
	err = uroce_nic_get(dev->name, &ctx->nic);
	if (err)
		goto err_sock;
	verbs_set_ops(&ctx->vctx, &uroce_ctx_ops);
	ctx->vctx.context.num_comp_vectors = 1;
	pthread_mutex_lock(&ctx->nic->lock);
	err = uroce_daemon_link_join(ctx->nic, ctx);
	pthread_mutex_unlock(&ctx->nic->lock);
	if (err)
		goto err_nic;
	return &ctx->vctx;

err_nic:
	uroce_nic_put(ctx->nic, ctx);
err_sock:
	close(sv[0]);
	close(sv[1]);
err_free:
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
	errno = err < 0 ? -err : EIO;
	return NULL;
}

static void uroce_free_context(struct ibv_context *ibctx)
{
	struct uroce_context *ctx = to_uctx(ibctx);

	pthread_mutex_lock(&ctx->nic->lock);
	uroce_daemon_link_leave(ctx);
	pthread_mutex_unlock(&ctx->nic->lock);
	uroce_nic_put(ctx->nic, ctx);
	close(ctx->async_wr);
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
}

static const struct verbs_context_ops uroce_ctx_ops = {
	.advise_mr = uroce_advise_mr,
	.alloc_dm = uroce_alloc_dm,
	.alloc_mw = uroce_alloc_mw,
	.alloc_parent_domain = uroce_alloc_parent_domain,
	.alloc_pd = uroce_alloc_pd,
	.alloc_td = uroce_alloc_td,
	.async_event = uroce_async_event_done,
	.bind_mw = uroce_bind_mw,
	.cq_event = uroce_cq_event,
	.create_ah = uroce_create_ah,
	.create_cq = uroce_create_cq,
	.create_cq_ex = uroce_create_cq_ex,
	.create_qp = uroce_create_qp,
	.create_qp_ex = uroce_create_qp_ex,
	.create_srq = uroce_create_srq,
	.dealloc_mw = uroce_dealloc_mw,
	.create_srq_ex = uroce_create_srq_ex,
	.get_srq_num = uroce_get_srq_num,
	.open_xrcd = uroce_open_xrcd,
	.close_xrcd = uroce_close_xrcd,
	.dealloc_pd = uroce_dealloc_pd,
	.dealloc_td = uroce_dealloc_td,
	.dereg_mr = uroce_dereg_mr,
	.destroy_ah = uroce_destroy_ah,
	.destroy_cq = uroce_destroy_cq,
	.destroy_qp = uroce_destroy_qp,
	.destroy_srq = uroce_destroy_srq,
	.free_context = uroce_free_context,
	.free_dm = uroce_free_dm,
	.modify_qp = uroce_modify_qp,
	.modify_srq = uroce_modify_srq,
	.poll_cq = uroce_poll_cq,
	.post_recv = uroce_post_recv,
	.post_send = uroce_post_send,
	.post_srq_recv = uroce_post_srq_recv,
	.query_device_ex = uroce_query_device_ex,
	.query_port = uroce_query_port,
	.query_qp = uroce_query_qp,
	.query_rt_values = uroce_query_rt_values,
	.query_srq = uroce_query_srq,
	.reg_dm_mr = uroce_reg_dm_mr,
	.reg_mr = uroce_reg_mr,
	.req_notify_cq = uroce_req_notify_cq,
	.rereg_mr = uroce_rereg_mr,
	.resize_cq = uroce_resize_cq,
};

const struct verbs_device_ops uroce_dev_ops = {
	.name = "uroce",
	.match_min_abi_version = 0,
	.match_max_abi_version = 100,
	.match_device = uroce_match_device,
	.alloc_context = uroce_alloc_context,
	.alloc_device = uroce_alloc_device,
	.uninit_device = uroce_uninit_device,
};

UR_VERBS_PROVIDER_REGISTER(uroce_dev_ops)

/*
 * Loaded with LD_PRELOAD (as `uroce env` sets up), we run before main():
 * point libibverbs at the uroce devices of the namespace this process runs
 * in, unless SYSFS_PATH names something else (config.c).
 */
__attribute__((constructor)) static void uroce_select_sysfs(void)
{
	uroce_config_point_sysfs();
}
