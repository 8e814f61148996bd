/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The NIC as this process holds it: one per device, made by the first
 * context opened on it and shared by every later one, as the contexts of
 * a process share a RoCE NIC. One engine, so QPs of different contexts
 * reach each other through the device's own GIDs (the port loops frames to
 * its own MAC back in) and their QP numbers, keys and PD numbers are
 * unique; one port, one progress thread, one row of counters. A context
 * costs its own struct and event queue, not a dataplane: what made the
 * fifth open of a process fail with ENOMEM (docs/shared-device.md).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "port_config.h"
#include "uroce.h"

/* The process's open devices; opens and closes are rare, one lock does. */
static pthread_mutex_t nics_lock = PTHREAD_MUTEX_INITIALIZER;
static struct uroce_nic *nics;

/* The dataplane's own lines (ports, rings, neighbours) at the debug log's second level */
static void dp_log_line(void *arg, const char *line)
{
	uroce_log(arg, 2, "%s", line);
}

static int open_dataplane(struct uroce_nic *nic)
{
	struct uroce_dp_config dc;

	uroce_port_config(&nic->cfg, &nic->conf, &dc);
	if (uroce_port_via_daemon(&nic->conf, nic->devdir, nic->dp_port, sizeof(nic->dp_port))) {
		/* the daemon owns the port and answers for our addresses */
		uroce_log(nic, 1, "%s: port %s through the device daemon", nic->conf.name,
			  nic->conf.port);
		dc.port = nic->dp_port;
		dc.answer_neigh = false;
	}
	dc.capture = nic->cfg.capture[0] ? nic->cfg.capture : NULL;
	dc.impair = nic->cfg.impair[0] ? nic->cfg.impair : NULL;
	dc.counters = uroce_shared_row(&nic->shared) + UR_CTR_COUNT;
	dc.loop_bells = nic->shared.bells;
	dc.loop_dir = nic->devdir;
	dc.steered = true; /* uroce_steer_update opens it to our QP numbers */
	dc.log = dp_log_line;
	dc.log_arg = nic;
	return uroce_dp_open(&dc, &nic->dp);
}

/* The configuration's complaints, in this device's debug log. */
static void config_report(void *arg, int level, const char *line)
{
	uroce_log(arg, level, "%s", line);
}

static void nic_free(struct uroce_nic *nic)
{
	if (nic->wake_fd >= 0)
		close(nic->wake_fd);
	pthread_mutex_destroy(&nic->lock);
	free(nic);
}

/* Engine, port, steering and progress thread for device `name`. */
static int nic_open(const char *name, struct uroce_nic **out)
{
	struct uroce_nic *nic = calloc(1, sizeof(*nic));
	int err;

	if (!nic)
		return -ENOMEM;
	nic->wake_fd = -1;
	nic->sleep_fd = -1;
	nic->shared.lock_fd = -1;
	uroce_answerer_lock_init(&nic->lock);
	/* the device's file and the environment, read once, here */
	err = uroce_config_load(&nic->cfg, name, &nic->conf, config_report, nic);
	if (err)
		goto err_free;
	uroce_limits_init(nic);
	uroce_dev_dir(name, nic->devdir, sizeof(nic->devdir));
	nic->active_mtu = nic->cfg.active_mtu;
	uroce_log(nic, 1, "open %s: netdev %s port %s, active MTU %u (interface MTU %u), mode %s, %u GIDs",
		  name, nic->conf.netdev, nic->conf.port, nic->active_mtu, nic->conf.netdev_mtu,
		  nic->cfg.engine.retx_mode == UR_RETX_SR ? "sr" : "gbn", nic->conf.ngids);

	err = uroce_shared_open(nic->devdir, &nic->shared);
	if (err == -EPROTO) {
		uroce_log(nic, 0, "%s was made by another version of uroce (its files in %s): "
			  "`uroce link del %s` and add it again", name, nic->devdir, name);
		goto err_free;
	} else if (err) {
		uroce_log(nic, 0, "cannot claim QP numbers on %s: %s", name, strerror(-err));
		goto err_free;
	}
	uroce_log(nic, 1, "%s: congestion control %s, line rate %u Mb/s", name,
		  nic->cfg.engine.dcqcn ? "dcqcn" : nic->cfg.engine.ecn_np ? "np" : "none",
		  nic->cfg.engine.link_rate_mbps);
	err = ur_dev_create(&nic->cfg.engine, &uroce_host_ops, nic, uroce_shared_row(&nic->shared),
			    &nic->engine);
	if (err)
		goto err_shared;
	uroce_qpn_init(nic);
	err = open_dataplane(nic);
	if (err) {
		uroce_log(nic, 0, "cannot start the dataplane on %s (port %s): %s", nic->conf.netdev,
			  nic->conf.port, strerror(-err));
		goto err_engine;
	}
	uroce_daemon_link_init(nic);
	/* from here on the port takes only frames for our QP numbers */
	uroce_shared_try_writer(&nic->shared);
	err = uroce_steer_update(nic);
	if (err)
		goto err_dp;
	nic->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (nic->wake_fd < 0) {
		err = -errno;
		goto err_dp;
	}
	err = uroce_progress_start(nic);
	if (err)
		goto err_dp;
	*out = nic;
	return 0;

err_dp:
	uroce_dp_close(nic->dp);
err_engine:
	ur_dev_destroy(nic->engine);
err_shared:
	uroce_shared_close(&nic->shared);
err_free:
	nic_free(nic);
	return err ? err : -EIO;
}

static void nic_close(struct uroce_nic *nic)
{
	uroce_progress_stop(nic);
	uroce_dp_close(nic->dp);
	ur_dev_destroy(nic->engine);
	uroce_shared_close(&nic->shared);
	uroce_log(nic, 1, "closed %s", nic->conf.name);
	nic_free(nic);
}

int uroce_nic_get(const char *name, struct uroce_nic **out)
{
	struct uroce_nic *nic;
	int err = 0;

	pthread_mutex_lock(&nics_lock);
	for (nic = nics; nic; nic = nic->next)
		if (!strcmp(nic->conf.name, name))
			break;
	if (!nic) {
		err = nic_open(name, &nic);
		if (!err) {
			nic->next = nics;
			nics = nic;
		}
	}
	if (!err) {
		nic->users++;
		*out = nic;
	}
	pthread_mutex_unlock(&nics_lock);
	return err;
}

/*
 * What the context still held goes, as the kernel takes back what a closed
 * file held: its QPs stop (no more events or packets for them), then its
 * SRQs, and its MRs are deregistered so no peer reaches that memory. Its
 * AHs, CQs and PDs go last (nothing uses them any more): the device's
 * counts against max_ah, max_cq and max_pd are shared by its contexts, so
 * a process that opens and closes contexts untidily would otherwise run
 * into them.
 */
static void take_back(struct uroce_nic *nic, struct uroce_context *ctx)
{
	unsigned nqp = 0, nsrq = 0, nmr = 0, nah = 0, ncq = 0, npd = 0;

	pthread_mutex_lock(&nic->lock);
	while (ctx->qps.next != &ctx->qps) {
		uroce_qp_take_back(nic, to_type(ctx->qps.next, struct uroce_qp, link));
		nqp++;
	}
	while (ctx->srqs.next != &ctx->srqs) {
		uroce_srq_take_back(nic, to_type(ctx->srqs.next, struct uroce_srq, link));
		nsrq++;
	}
	while (ctx->mws.next != &ctx->mws) /* windows before the regions they are bound to */
		uroce_mw_take_back(nic, to_type(ctx->mws.next, struct uroce_mw, link));
	while (ctx->mrs.next != &ctx->mrs) {
		uroce_mr_take_back(nic, to_type(ctx->mrs.next, struct uroce_mr, link));
		nmr++;
	}
	while (ctx->ahs.next != &ctx->ahs) {
		uroce_ah_take_back(nic, to_type(ctx->ahs.next, struct uroce_ah, link));
		nah++;
	}
	/* CQs before PDs: a CQ's ring may be its parent domain's memory */
	while (ctx->cqs.next != &ctx->cqs) {
		uroce_cq_take_back(nic, to_type(ctx->cqs.next, struct uroce_cq, link));
		ncq++;
	}
	while (ctx->pds.next != &ctx->pds) {
		uroce_pd_take_back(nic, to_type(ctx->pds.next, struct uroce_pd, link));
		npd++;
	}
	pthread_mutex_unlock(&nic->lock);
	if (nqp + nsrq + nmr + nah + ncq + npd)
		uroce_log(nic, 1,
			  "context closed with %u QPs, %u SRQs, %u MRs, %u AHs, %u CQs, %u PDs "
			  "(and parent domains): destroyed",
			  nqp, nsrq, nmr, nah, ncq, npd);
}

void uroce_nic_put(struct uroce_nic *nic, struct uroce_context *ctx)
{
	take_back(nic, ctx);
	pthread_mutex_lock(&nics_lock);
	if (--nic->users) {
		pthread_mutex_unlock(&nics_lock);
		return;
	}
	for (struct uroce_nic **p = &nics; *p; p = &(*p)->next)
		if (*p == nic) {
			*p = nic->next;
			break;
		}
	uroce_xrcd_take_back(nic);
	nic_close(nic);
	pthread_mutex_unlock(&nics_lock);
}

/*
 * A program that exits with a device still open (most do not close it, and
 * the connection manager's own context never closes) leaves the
 * hw_counters files with its final counts, as a close would: the files are
 * what operators read after a run.
 */
__attribute__((destructor)) static void nics_exit(void)
{
	/* a thread caught mid-open at exit must not stop the exit */
	if (pthread_mutex_trylock(&nics_lock))
		return;
	for (struct uroce_nic *nic = nics; nic; nic = nic->next)
		uroce_counters_write(nic, true);
	pthread_mutex_unlock(&nics_lock);
}
