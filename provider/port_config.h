/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef UROCE_PORT_CONFIG_H
#define UROCE_PORT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "dataplane.h"

struct uroce_config;
struct uroce_devconf;

#define UROCE_DAEMON_SOCKET_MAX 108 /* sun_path */

/* The device's own port, as the device's configuration and cfg describe it. */
void uroce_port_config(const struct uroce_config *cfg, const struct uroce_devconf *conf,
		       struct uroce_dp_config *dc);
/* Whether a port of this kind is shared through a device daemon (all but af_packet). */
bool uroce_port_wants_daemon(const char *port);
/* The daemon's socket, where programs attach. */
void uroce_daemon_socket(const char *devdir, char *buf, size_t len);
/* A program's port while the device has a daemon: true and the memif port string in `port`. */
bool uroce_port_via_daemon(const struct uroce_devconf *conf, const char *devdir, char *port,
			   size_t len);

#endif
