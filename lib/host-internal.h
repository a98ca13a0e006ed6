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

/* Takes the cgroup v2, cgroup v1 cpuset and resctrl mounts out of the text of proc/self/mountinfo
 * (mountinfo) or proc/mounts into h, mount points root-relative and unescaped ("\\040" is a
 * blank), the first of each kind winning, and sets h->cgroup_mode. The text is cut up. */
int host_parse_mounts(Host *h, char *text, bool mountinfo);
