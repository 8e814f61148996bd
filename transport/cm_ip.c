/* SPDX-License-Identifier: BSD-2-Clause */
#include <errno.h>
#include <string.h>

#include "cm_ip.h"
#include "ur_util.h"

uint64_t ur_cm_ip_service_id(uint16_t port_space, uint16_t port)
{
	return UR_CM_IP_SID_PREFIX << 24 | (uint64_t)(port_space & 0xff) << 16 | port;
}

bool ur_cm_ip_service_parse(uint64_t sid, uint16_t *port_space, uint16_t *port)
{
	if (sid >> 24 != UR_CM_IP_SID_PREFIX)
		return false;
	*port_space = (uint16_t)(sid >> 16 & 0xffff);
	*port = (uint16_t)sid;
	return true;
}

int ur_cm_ip_hdr_decode(struct ur_cm_ip_hdr *h, const uint8_t *pdata, size_t len)
{
	if (len < UR_CM_IP_HDR_LEN)
		return -EMSGSIZE;
	h->version = pdata[0];
	h->ip_version = pdata[1] >> 4;
	h->src_port = ur_get_be16(pdata + 2);
	memcpy(h->src_ip, pdata + 4, 16);
	memcpy(h->dst_ip, pdata + 20, 16);
	/* A11.6: a receiver rejects a major version it does not know. */
	if (h->version >> 4 != UR_CM_IP_VERSION >> 4 || (h->ip_version != 4 && h->ip_version != 6))
		return -EPROTO;
	return 0;
}

int ur_cm_ip_hdr_encode(const struct ur_cm_ip_hdr *h, uint8_t *pdata, size_t len)
{
	if (len < UR_CM_IP_HDR_LEN)
		return -EMSGSIZE;
	if (h->ip_version != 4 && h->ip_version != 6)
		return -EINVAL;
	pdata[0] = h->version;
	pdata[1] = (uint8_t)(h->ip_version << 4);
	ur_put_be16(pdata + 2, h->src_port);
	memcpy(pdata + 4, h->src_ip, 16);
	memcpy(pdata + 20, h->dst_ip, 16);
	return 0;
}
