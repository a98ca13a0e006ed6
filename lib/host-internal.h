/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What host discovery uses inside, for its tests and fuzz targets. */

#include "host.h"

/* host_discover() reads proc/interrupts through a buffer of this size (grown for a longer line). */
#define HOST_INTERRUPTS_BUFSIZE (1U << 20)

/* Reads h->root's proc/interrupts into h->irqs the way host_discover() does: streamed through a
 * buffer of bufsize bytes, line by line (host_parse_interrupts() parses a whole text with the same
 * line parser). Affinities are not read. -ENOENT without the file, -EBADMSG without a header. */
int host_read_interrupts(Host *h, bool want_counts, size_t bufsize);
