/* SPDX-License-Identifier: BSD-2-Clause */
/* What every stock-libibverbs test program here needs (verbs_util.h). */
#define _GNU_SOURCE
#include "verbs_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

const char *vtest_name = "?";
int vtest_failures;

void vtest_die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", vtest_name, what, strerror(errno));
	exit(1);
}

struct ibv_context *vtest_open_device(const char *name)
{
	struct ibv_context *ctx = NULL;
	struct ibv_device **list;
	int n;

	list = ibv_get_device_list(&n);
	if (!list || !n)
		vtest_die("no RDMA devices");
	for (int i = 0; i < n && !ctx; i++)
		if (!name || !strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (!ctx)
		vtest_die("open device");
	ibv_free_device_list(list);
	return ctx;
}

void vtest_connect_rc(struct ibv_qp *qp, uint32_t dqpn, const union ibv_gid *dgid, int sgid_index,
		      uint32_t psn, unsigned int access)
{
	struct ibv_qp_attr a = {0};

	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = access;
	if (ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		vtest_die("INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = psn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *dgid;
	a.ah_attr.grh.sgid_index = (uint8_t)sgid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		vtest_die("RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	if (ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			      IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
		vtest_die("RTS");
}

struct ibv_wc vtest_wait_wc(struct ibv_cq *cq)
{
	struct ibv_wc wc = {0};

	for (int i = 0; i < 2000000; i++) {
		if (ibv_poll_cq(cq, 1, &wc) == 1)
			return wc;
		if (i > 1000)
			usleep(10);
	}
	CHECK(0, "no completion within the deadline");
	wc.status = IBV_WC_GENERAL_ERR;
	return wc;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int vtest_tcp_connect(const char *host, const char *port, int wait_s)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res, *a;
	uint64_t end = now_ms() + (uint64_t)wait_s * 1000;
	int fd, one = 1;

	if (getaddrinfo(host, port, &hints, &res))
		return -1;
	for (;;) {
		for (a = res; a; a = a->ai_next) {
			fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
			if (fd < 0)
				continue;
			if (!connect(fd, a->ai_addr, a->ai_addrlen)) {
				freeaddrinfo(res);
				setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
				return fd;
			}
			close(fd);
		}
		if (now_ms() > end)
			break;
		usleep(100000); /* the server may still be starting */
	}
	freeaddrinfo(res);
	return -1;
}

int vtest_tcp_accept(const char *port)
{
	struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT};
	int lfd, fd, one = 1, zero = 0;

	sa.sin6_port = htons((uint16_t)atoi(port));
	lfd = socket(AF_INET6, SOCK_STREAM, 0);
	if (lfd < 0)
		return -1;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* IPv4 clients too */
	setsockopt(lfd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1)) {
		close(lfd);
		return -1;
	}
	fd = accept(lfd, NULL, NULL);
	close(lfd);
	if (fd >= 0)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}
