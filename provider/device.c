/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Device discovery and contexts: libibverbs finds our devices in the sysfs
 * tree `uroce link add` wrote; opening one starts the transport engine, the
 * DPDK port and the progress thread for this process.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "uroce.h"

static const struct verbs_context_ops uroce_ctx_ops;

bool uroce_is_ours(const struct ibv_context *ctx)
{
	return ctx && verbs_get_device(ctx->device)->ops == &uroce_dev_ops;
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
	struct uroce_context *ctx = to_uctx(ibctx);
	struct ibv_device_attr_ex a;

	(void)input;
	memset(&a, 0, sizeof(a));
	snprintf(a.orig_attr.fw_ver, sizeof(a.orig_attr.fw_ver), "%s", "0.1.0");
	a.orig_attr.node_guid = guid_from_mac(ctx->conf.mac);
	a.orig_attr.sys_image_guid = a.orig_attr.node_guid;
	a.orig_attr.max_mr_size = 1ull << 46;
	a.orig_attr.page_size_cap = 0xfffff000;
	a.orig_attr.vendor_id = 0xffffff;   /* no IEEE OUI: a software device, like Soft-RoCE */
	a.orig_attr.vendor_part_id = 0x5552; /* "UR" */
	a.orig_attr.hw_ver = 0;
	a.orig_attr.max_qp = (int)ctx->limit[UROCE_OBJ_QP];
	a.orig_attr.max_qp_wr = UR_MAX_WR;
	a.orig_attr.device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT |
				       IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_N_NOTIFY_CQ;
	a.orig_attr.max_sge = UR_MAX_SGE;
	a.orig_attr.max_sge_rd = UR_MAX_SGE;
	a.orig_attr.max_cq = (int)ctx->limit[UROCE_OBJ_CQ];
	a.orig_attr.max_cqe = UR_MAX_CQE;
	a.orig_attr.max_mr = (int)ctx->limit[UROCE_OBJ_MR];
	a.orig_attr.max_pd = (int)ctx->limit[UROCE_OBJ_PD];
	/* what the engine holds and issues: the link's rd_atom, 16 by default */
	a.orig_attr.max_qp_rd_atom = (int)ur_dev_config(ctx->engine)->max_qp_rd_atom;
	a.orig_attr.max_res_rd_atom = a.orig_attr.max_qp_rd_atom * a.orig_attr.max_qp;
	a.orig_attr.max_qp_init_rd_atom = (int)ur_dev_config(ctx->engine)->max_qp_init_rd_atom;
	a.orig_attr.atomic_cap = IBV_ATOMIC_HCA;
	a.orig_attr.max_ah = (int)ctx->limit[UROCE_OBJ_AH];
	a.orig_attr.max_srq = (int)ctx->limit[UROCE_OBJ_SRQ];
	a.orig_attr.max_srq_wr = UR_MAX_WR;
	a.orig_attr.max_srq_sge = UR_MAX_SGE;
	a.orig_attr.max_pkeys = 1;
	a.orig_attr.local_ca_ack_delay = 15;
	a.orig_attr.phys_port_cnt = 1;
	a.phys_port_cnt_ex = a.orig_attr.phys_port_cnt;
	a.device_cap_flags_ex = a.orig_attr.device_cap_flags;
	memcpy(attr, &a, attr_size < sizeof(a) ? attr_size : sizeof(a));
	return 0;
}

static int uroce_query_port(struct ibv_context *ibctx, uint8_t port, struct ibv_port_attr *attr)
{
	struct uroce_context *ctx = to_uctx(ibctx);

	if (port != 1)
		return uroce_refuse(ctx, EINVAL, "query_port",
				    "port %u: the device has port 1 only", port);
	attr->state = IBV_PORT_ACTIVE;
	attr->max_mtu = IBV_MTU_4096;
	attr->active_mtu = ur_mtu_enum(ctx->active_mtu);
	attr->gid_tbl_len = (int)ctx->conf.ngids;
	attr->port_cap_flags = IBV_PORT_CM_SUP;
	attr->max_msg_sz = 1u << 31;
	attr->pkey_tbl_len = 1;
	attr->max_vl_num = 1;
	attr->active_width = 2;  /* 4X */
	attr->active_speed = 4;  /* QDR: a nominal 40 Gb/s, like Soft-RoCE shows a rate */
	attr->phys_state = 5;    /* LinkUp */
	attr->link_layer = IBV_LINK_LAYER_ETHERNET;
	return 0;
}

/* The dataplane's own lines (ports, rings, neighbours) at the debug log's second level */
static void dp_log_line(void *arg, const char *line)
{
	uroce_log(arg, 2, "%s", line);
}

static int open_dataplane(struct uroce_context *ctx)
{
	struct uroce_dp_config dc;

	memset(&dc, 0, sizeof(dc));
	dc.name = ctx->conf.name;
	dc.port = ctx->conf.port;
	dc.netdev = ctx->conf.netdev;
	memcpy(dc.mac, ctx->conf.mac, 6);
	dc.eth_mtu = ctx->conf.netdev_mtu;
	for (unsigned i = 0; i < ctx->conf.ngids && i < UROCE_DP_MAX_ADDRS; i++)
		memcpy(dc.addrs[dc.naddrs++], ctx->conf.gids[i].raw, 16);
	/* memif has no kernel behind it to answer ARP for our addresses */
	dc.answer_neigh = !strncmp(ctx->conf.port, "memif", 5);
	dc.capture = ctx->cfg.capture[0] ? ctx->cfg.capture : NULL;
	dc.impair = ctx->cfg.impair[0] ? ctx->cfg.impair : NULL;
	dc.counters = uroce_shared_row(&ctx->shared) + UR_CTR_COUNT;
	dc.seed = ctx->cfg.seed;
	dc.debug = ctx->cfg.debug;
	dc.keep_dpdk_log = ctx->cfg.debug_set;
	dc.no_huge = ctx->cfg.no_huge;
	dc.log = dp_log_line;
	dc.log_arg = ctx;
	return uroce_dp_open(&dc, &ctx->dp);
}

/* The configuration's complaints, in this context's debug log. */
static void config_report(void *arg, int level, const char *line)
{
	uroce_log(arg, level, "%s", line);
}

static struct verbs_context *uroce_alloc_context(struct ibv_device *ibdev, int cmd_fd,
						 void *private_data)
{
	struct uroce_device *dev = to_type(verbs_get_device(ibdev), struct uroce_device, vdev);
	struct uroce_context *ctx;
	int sv[2] = {-1, -1}, err;

	(void)private_data;
	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, vctx, 0);
	if (!ctx)
		return NULL;
	ctx->async_wr = -1;
	ctx->wake_fd = -1;
	ctx->shared.lock_fd = -1;
	pthread_mutex_init(&ctx->lock, NULL);
	/* the device's file and the environment, read once, here */
	err = uroce_config_load(&ctx->cfg, dev->name, &ctx->conf, config_report, ctx);
	if (err)
		goto err_free;
	uroce_limits_init(ctx);
	uroce_dev_dir(dev->name, ctx->devdir, sizeof(ctx->devdir));
	ctx->active_mtu = ctx->cfg.active_mtu;
	uroce_log(ctx, 1, "open %s: netdev %s port %s, active MTU %u (interface MTU %u), mode %s, %u GIDs",
		  dev->name, ctx->conf.netdev, ctx->conf.port, ctx->active_mtu, ctx->conf.netdev_mtu,
		  ctx->cfg.engine.retx_mode == UR_RETX_SR ? "sr" : "gbn", ctx->conf.ngids);

	err = uroce_shared_open(ctx->devdir, &ctx->shared);
	if (err) {
		uroce_log(ctx, 0, "cannot claim QP numbers on %s: %s", dev->name, strerror(-err));
		goto err_free;
	}
	uroce_log(ctx, 1, "%s: congestion control %s, line rate %u Mb/s", dev->name,
		  ctx->cfg.engine.dcqcn ? "dcqcn" : ctx->cfg.engine.ecn_np ? "np" : "none",
		  ctx->cfg.engine.link_rate_mbps);
	err = ur_dev_create(&ctx->cfg.engine, &uroce_host_ops, ctx, uroce_shared_row(&ctx->shared),
			    &ctx->engine);
	if (err)
		goto err_shared;
	uroce_qpn_init(ctx);
	err = open_dataplane(ctx);
	if (err) {
		uroce_log(ctx, 0, "cannot start the dataplane on %s (port %s): %s",
			  ctx->conf.netdev, ctx->conf.port, strerror(-err));
		goto err_engine;
	}
	/* from here on the port takes only frames for our QP numbers */
	uroce_shared_try_writer(&ctx->shared);
	err = uroce_steer_update(ctx);
	if (err)
		goto err_dp;
	/* async events: ibv_get_async_event reads whole 16-byte records from async_fd */
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		goto err_dp;
	ctx->vctx.context.async_fd = sv[0];
	ctx->async_wr = sv[1];
	ctx->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ctx->wake_fd < 0)
		goto err_dp;
	verbs_set_ops(&ctx->vctx, &uroce_ctx_ops);
	ctx->vctx.context.num_comp_vectors = 1;
	err = uroce_progress_start(ctx);
	if (err)
		goto err_dp;
	uroce_async_event(ctx, IBV_EVENT_PORT_ACTIVE, 1);
	return &ctx->vctx;

err_dp:
	uroce_dp_close(ctx->dp);
err_engine:
	ur_dev_destroy(ctx->engine);
err_shared:
	uroce_shared_close(&ctx->shared);
err_free:
	if (ctx->async_wr >= 0)
		close(ctx->async_wr);
	if (ctx->wake_fd >= 0)
		close(ctx->wake_fd);
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
	errno = err ? (err < 0 ? -err : err) : EIO;
	return NULL;
}

static void uroce_free_context(struct ibv_context *ibctx)
{
	struct uroce_context *ctx = to_uctx(ibctx);

	uroce_progress_stop(ctx);
	uroce_dp_close(ctx->dp);
	ur_dev_destroy(ctx->engine);
	uroce_shared_close(&ctx->shared);
	close(ctx->async_wr);
	close(ctx->wake_fd);
	uroce_log(ctx, 1, "closed %s", ctx->conf.name);
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
}

static const struct verbs_context_ops uroce_ctx_ops = {
	.alloc_pd = uroce_alloc_pd,
	.async_event = uroce_async_event_done,
	.cq_event = uroce_cq_event,
	.create_ah = uroce_create_ah,
	.create_cq = uroce_create_cq,
	.create_qp = uroce_create_qp,
	.create_qp_ex = uroce_create_qp_ex,
	.create_srq = uroce_create_srq,
	.dealloc_pd = uroce_dealloc_pd,
	.dereg_mr = uroce_dereg_mr,
	.destroy_ah = uroce_destroy_ah,
	.destroy_cq = uroce_destroy_cq,
	.destroy_qp = uroce_destroy_qp,
	.destroy_srq = uroce_destroy_srq,
	.free_context = uroce_free_context,
	.modify_qp = uroce_modify_qp,
	.modify_srq = uroce_modify_srq,
	.poll_cq = uroce_poll_cq,
	.post_recv = uroce_post_recv,
	.post_send = uroce_post_send,
	.post_srq_recv = uroce_post_srq_recv,
	.query_device_ex = uroce_query_device_ex,
	.query_port = uroce_query_port,
	.query_qp = uroce_query_qp,
	.query_srq = uroce_query_srq,
	.reg_mr = uroce_reg_mr,
	.req_notify_cq = uroce_req_notify_cq,
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
