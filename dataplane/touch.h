/* SPDX-License-Identifier: BSD-2-Clause */
/* Touch pages before traffic does (warm.c says why). */
#ifndef UROCE_TOUCH_H
#define UROCE_TOUCH_H

#include <stddef.h>
#include <stdint.h>

/*
 * Touch each page of [addr, addr + len) once without changing it: an atomic
 * OR of zero, since the kernel or a memif peer may be writing the same bytes.
 */
static inline void dp_touch_pages(void *addr, size_t len)
{
	for (size_t off = 0; off < len; off += 4096)
		__atomic_fetch_or((uint8_t *)addr + off, 0, __ATOMIC_RELAXED);
}

#endif
