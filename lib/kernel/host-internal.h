/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What host discovery uses inside, for its tests and fuzz targets. */

#include "host.h"

/* From this many possible CPUs on, host_discover() takes the IRQs' names from
 * /sys/kernel/irq/N/actions (three system calls per IRQ) instead of /proc/interrupts, whose size
 * and cost grow with IRQs × CPUs (a count column per CPU, formatted by the kernel on every read:
 * 93 MB at 1024 CPUs and 8192 IRQs). Below it /proc/interrupts is the cheaper read: on the
 * 32- and 64-CPU fake hosts (118 and 161 IRQs) the per-IRQ files cost 1.0 and 1.6 ms more CPU
 * time per plan; at 1024 CPUs they cost the same on a fake host, whose /proc/interrupts is a
 * plain file, and save the kernel's formatting of 8 million counts on a real one. */
#define HOST_IRQ_SYSFS_MIN_CPUS 256U

/* host_discover() reads proc/interrupts through a buffer of this size (grown for a longer line):
 * a few reads on the hosts that read the file (fewer than HOST_IRQ_SYSFS_MIN_CPUS CPUs: a row of
 * 255 counts is 3 KB), and no more of rtpartd's resident memory than that (the whole 135 KB file
 * of a 128-CPU host went into a 1 MiB buffer). */
#define HOST_INTERRUPTS_BUFSIZE (64U << 10)

/* Reads h->root's proc/interrupts into h->irqs the way host_discover() does: streamed through a
 * buffer of bufsize bytes, line by line (host_parse_interrupts() parses a whole text with the same
 * line parser). Affinities are not read. -ENOENT without the file, -EBADMSG without a header. */
int host_read_interrupts(Host *h, bool want_counts, size_t bufsize);

/* Takes the cgroup v2, cgroup v1 cpuset and resctrl mounts out of the text of proc/self/mountinfo
 * (mountinfo) or proc/mounts into h, mount points root-relative and unescaped ("\\040" is a
 * blank), the first of each kind winning, and sets h->cgroup_mode. The text is cut up. */
int host_parse_mounts(Host *h, char *text, bool mountinfo);

/* host_discover()'s parts in other files: the IRQs (host-irq.c; with their per-CPU counts when
 * want_counts), and the cgroup and resctrl mounts, then what resctrl offers (host-mounts.c). */
int host_discover_irqs(Host *h, bool want_counts);
int host_discover_mounts(Host *h);
int host_discover_resctrl(Host *h);
