/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What a QP costs, measured with the stock libibverbs only (so it measures
 * any provider): open a device, create N RC QPs on one CQ, take each to INIT
 * (with -c, on to RTR and RTS towards an IPv4 peer, posting nothing), and
 * report the process's memory before and after, per QP:
 *   rss  resident pages (what the QPs have touched so far),
 *   data the data segment and anonymous mappings (what they have allocated),
 * and how long creation and the transitions took.
 *   qp_mem [-d DEV] [-n N] [-g GID_INDEX] [-c IPV4] [-w SEND_WR] [-r RECV_WR]
 * Prints one line of key=value pairs; exits 1 if fewer than N QPs could be
 * created or moved, saying which call failed first and with which errno.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct mem {
	long rss_kib;
	long data_kib;
};

static struct mem mem_now(void)
{
	struct mem m = {-1, -1};
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return m;
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "VmRSS: %ld kB", &m.rss_kib);
		sscanf(line, "VmData: %ld kB", &m.data_kib);
	}
	fclose(f);
	return m;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct ibv_device *find_dev(struct ibv_device **list, const char *name)
{
	for (int i = 0; list && list[i]; i++)
		if (!name || !strcmp(ibv_get_device_name(list[i]), name))
			return list[i];
	return NULL;
}

/* RTR then RTS towards the peer's IPv4-mapped GID; the destination QPN is
 * made up, which is harmless because nothing is ever posted. */
static int connect_qp(struct ibv_qp *qp, const union ibv_gid *dgid, int sgid,
		      enum ibv_mtu mtu, uint32_t i)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = mtu,
		.dest_qp_num = 0x100 + i,
		.rq_psn = 0,
		.max_dest_rd_atomic = 1,
		.min_rnr_timer = 12,
		.ah_attr = {.is_global = 1, .port_num = 1,
			    .grh = {.dgid = *dgid, .sgid_index = (uint8_t)sgid, .hop_limit = 64}},
	};
	int err;

	err = ibv_modify_qp(qp, &a,
			    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a,
			     IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

int main(int argc, char **argv)
{
	const char *dev_name = NULL, *peer = NULL, *failed = NULL;
	int n = 10000, gid_index = 1, send_wr = 128, recv_wr = 128, opt, err = 0;
	struct ibv_qp_init_attr init = {.qp_type = IBV_QPT_RC};
	struct ibv_qp_attr to_init = {.qp_state = IBV_QPS_INIT, .port_num = 1,
				      .qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
							 IBV_ACCESS_REMOTE_READ};
	union ibv_gid dgid = {0};
	struct ibv_port_attr port;
	struct ibv_device **list;
	struct ibv_device *dev;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp **qps;
	struct mem m0, m1, m2;
	double t0, t1, t2, t3;
	int made = 0, moved = 0;

	while ((opt = getopt(argc, argv, "d:n:g:c:w:r:")) != -1) {
		switch (opt) {
		case 'd': dev_name = optarg; break;
		case 'n': n = atoi(optarg); break;
		case 'g': gid_index = atoi(optarg); break;
		case 'c': peer = optarg; break;
		case 'w': send_wr = atoi(optarg); break;
		case 'r': recv_wr = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: qp_mem [-d DEV] [-n N] [-g GID_INDEX] [-c IPV4] "
					"[-w SEND_WR] [-r RECV_WR]\n");
			return 2;
		}
	}
	if (n < 1)
		return 2;
	if (peer) {
		struct in_addr ip;

		if (inet_pton(AF_INET, peer, &ip) != 1) {
			fprintf(stderr, "qp_mem: %s is not an IPv4 address\n", peer);
			return 2;
		}
		/* IPv4-mapped: ::ffff:a.b.c.d, as RoCE v2 GIDs of IPv4 addresses are */
		dgid.raw[10] = 0xff;
		dgid.raw[11] = 0xff;
		memcpy(&dgid.raw[12], &ip, 4);
	}
	list = ibv_get_device_list(NULL);
	dev = find_dev(list, dev_name);
	if (!dev) {
		fprintf(stderr, "qp_mem: no device %s\n", dev_name ? dev_name : "");
		return 1;
	}
	ctx = ibv_open_device(dev);
	if (!ctx || ibv_query_port(ctx, 1, &port)) {
		fprintf(stderr, "qp_mem: cannot open %s: %s\n", ibv_get_device_name(dev),
			strerror(errno));
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 4096, NULL, NULL, 0) : NULL;
	qps = calloc((size_t)n, sizeof(*qps));
	if (!cq || !qps) {
		fprintf(stderr, "qp_mem: cannot allocate a PD and a CQ: %s\n", strerror(errno));
		return 1;
	}
	init.send_cq = cq;
	init.recv_cq = cq;
	init.cap.max_send_wr = (uint32_t)send_wr;
	init.cap.max_recv_wr = (uint32_t)recv_wr;
	init.cap.max_send_sge = 1;
	init.cap.max_recv_sge = 1;

	m0 = mem_now();
	t0 = now_s();
	for (; made < n; made++) {
		qps[made] = ibv_create_qp(pd, &init);
		if (!qps[made]) {
			err = errno;
			failed = "ibv_create_qp";
			break;
		}
	}
	t1 = now_s();
	m1 = mem_now();
	for (; !failed && moved < made; moved++) {
		err = ibv_modify_qp(qps[moved], &to_init,
				    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					    IBV_QP_ACCESS_FLAGS);
		if (!err && peer)
			err = connect_qp(qps[moved], &dgid, gid_index, port.active_mtu,
					 (uint32_t)moved);
		if (err) {
			failed = peer ? "ibv_modify_qp (INIT, RTR or RTS)" : "ibv_modify_qp (INIT)";
			break;
		}
	}
	t2 = now_s();
	m2 = mem_now();
	for (int i = 0; i < made; i++)
		ibv_destroy_qp(qps[i]);
	t3 = now_s();

	printf("qp_mem device=%s wanted=%d created=%d moved=%d state=%s send_wr=%d recv_wr=%d "
	       "rss_base_kib=%ld rss_created_kib=%ld rss_moved_kib=%ld "
	       "data_base_kib=%ld data_moved_kib=%ld "
	       "rss_per_qp_created_b=%.0f rss_per_qp_b=%.0f data_per_qp_b=%.0f "
	       "create_us_per_qp=%.1f modify_us_per_qp=%.1f destroy_us_per_qp=%.1f",
	       ibv_get_device_name(dev), n, made, moved, peer ? "RTS" : "INIT", send_wr, recv_wr,
	       m0.rss_kib, m1.rss_kib, m2.rss_kib, m0.data_kib, m2.data_kib,
	       made ? (double)(m1.rss_kib - m0.rss_kib) * 1024 / made : 0.0,
	       made ? (double)(m2.rss_kib - m0.rss_kib) * 1024 / made : 0.0,
	       made ? (double)(m2.data_kib - m0.data_kib) * 1024 / made : 0.0,
	       made ? (t1 - t0) * 1e6 / made : 0.0, moved ? (t2 - t1) * 1e6 / moved : 0.0,
	       made ? (t3 - t2) * 1e6 / made : 0.0);
	if (failed)
		printf(" first_error=\"%s: %s\"", failed, strerror(err));
	printf("\n");
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	free(qps);
	return failed ? 1 : 0;
}
