/* SPDX-License-Identifier: BSD-2-Clause */
#include <stddef.h>

#include "opcode.h"
#include "service.h"

static const struct ur_service services[] = {
	{.type = UR_QPT_RC, .name = "RC", .column = 0, .transport = UR_TRANSPORT_RC,
	 .acknowledged = true, .connected = true, .selective = true},
	{.type = UR_QPT_UC, .name = "UC", .column = 1, .transport = UR_TRANSPORT_UC,
	 .connected = true, .drops_messages = true},
	{.type = UR_QPT_UD, .name = "UD", .column = 2, .transport = UR_TRANSPORT_UD},
	{.type = UR_QPT_XRC_SEND, .name = "XRC_SEND", .column = 3, .transport = UR_TRANSPORT_XRC,
	 .acknowledged = true, .connected = true, .xrc_ini = true},
	{.type = UR_QPT_XRC_RECV, .name = "XRC_RECV", .column = 4, .transport = UR_TRANSPORT_XRC,
	 .acknowledged = true, .connected = true, .xrc_tgt = true},
};

const struct ur_service *ur_service_of(enum ur_qp_type type)
{
	for (size_t i = 0; i < sizeof(services) / sizeof(services[0]); i++)
		if (services[i].type == type)
			return &services[i];
	return NULL;
}
