/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The header line of /proc/interrupts and /proc/softirqs, as the kernel prints it: one "CPUn"
 * column per online CPU ("           CPU0       CPU1       CPU5"), offline CPUs left out. The
 * one parser of it, for host discovery (host.c) and audit's counter tables (audit.c). */

#include <stddef.h>

/* The CPU number of each count column of the header line text[0..len), in order, into
 * *ret_columns (an array the caller frees) and *ret_n. -EBADMSG when it is no such header (a word
 * that is not "CPUn", a CPU number of CPU_SET_MAX or more, no column at all). Parsed by hand,
 * within len: the header of a 1024-CPU host is one line of a 90 MB text. */
int interrupts_header_parse(const char *text, size_t len, int **ret_columns, size_t *ret_n);
