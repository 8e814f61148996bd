/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cm_relisten ADDR PORT: binds an rdma_cm id to ADDR:PORT (which opens the
 * device), says "bound", waits for a line on stdin, then listens. Between
 * the two, test/net/cm_relink.sh deletes the device and adds it again and
 * starts another listener on PORT of the new device. Our locks are in the
 * old device's lock file, where the port's name is free: the listen must
 * fail (ENODEV) and leave the new device's listener alone
 * (provider/rdmacm_route.c, uroce_shared_current). Prints the outcome;
 * exit 0 when the listen failed with ENODEV, 1 otherwise. Stock librdmacm
 * API only; run with uroce's rdma_cm preloaded (`uroce env`).
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <rdma/rdma_cma.h>

int main(int argc, char **argv)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	char line[16];
	int err;

	if (argc != 3 || inet_pton(AF_INET, argv[1], &a.sin_addr) != 1) {
		fprintf(stderr, "usage: cm_relisten ADDR PORT\n");
		return 2;
	}
	a.sin_port = htons((uint16_t)atoi(argv[2]));
	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(id, (struct sockaddr *)&a)) {
		perror("cm_relisten: bind");
		return 2;
	}
	printf("bound\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 2;
	err = rdma_listen(id, 1) ? errno : 0;
	printf("listen: %s\n", err ? strerror(err) : "ok");
	fflush(stdout);
	return err == ENODEV ? 0 : 1;
}
