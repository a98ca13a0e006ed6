/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* resctrl (Intel RDT / AMD QoS) text formats and state, shared by the resctrl backend and its
 * tests. A schemata value is what follows "RESOURCE:" on one line of a group's schemata
 * file, with the whitespace removed: "0=7f0;1=7f0" (cache masks in hex) or "0=100;1=100" (MB). */

#include <stddef.h>
#include <stdint.h>

#include "root.h"

/* Finds the line for `resource` ("L3", "L3CODE", "L3DATA", "MB", …) in the text of a schemata
 * file, as the kernel prints it ("    L3:0=7ff;1=7ff\n      MB:0=100;1=100\n"), and returns its
 * value without whitespace ("0=7ff;1=7ff"). -ENOENT if no line names the resource, -EINVAL if
 * the line is not "ID=VALUE;…". */
int resctrl_schemata_parse(const char *text, const char *resource, char **ret);

/* The domain ids of a schemata value ("0=7ff;1=7ff" → {0, 1}), in the order given. */
int resctrl_schemata_domains(const char *value, unsigned **ret, size_t *ret_n);

/* A capacity bitmask as the profile gives it: hex digits with an optional 0x prefix. */
int resctrl_mask_parse(const char *s, uint64_t *ret);

/* The same value on every domain: "0=7f0;1=7f0", cache masks zero-padded to the width the kernel
 * prints for `cbm_bits` bits (0 for a decimal value, as MB). */
char *resctrl_schemata_format(const unsigned *domains, size_t n, uint64_t value, unsigned cbm_bits);

/* How resctrl is mounted at `path` according to the root's proc/self/mountinfo: "mounted",
 * followed by ",cdp", ",cdpl2", ",mba_MBps" for the options rtpart cares about (in that order);
 * NULL (0 returned) when nothing of type resctrl is mounted there. */
int resctrl_read_mount(Root *root, const char *path, char **ret);
