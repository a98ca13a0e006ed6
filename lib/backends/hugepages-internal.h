/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the hugepages backend's files share: hugepages.c (the section, the pools' knobs, the plan)
 * and hugepages-boot.c (the boot arguments that reserve pages: read from command lines, planned as
 * boot knobs). */

#include "backend.h"
#include "cpu-set.h"
#include "hugepages.h"

/* The most pages one pool may be asked for. */
#define COUNT_MAX (UINT64_C(1) << 32)
/* The size hugepages= reserves before any hugepagesz= when default_hugepagesz= is not given:
 * x86's (HPAGE_SHIFT 21). */
#define ARCH_DEFAULT_KB 2048U

/* The section resolved against the host. */
typedef struct Section {
        bool numa;
        CpuSet nodes; /* with memory */
        uint64_t *sizes;
        size_t n_sizes;
        HugepageReservation res; /* pools of count 0 too, sorted */
        size_t *entry;           /* per pool: its index in "pages" */
        size_t cap_pools, cap_entry;
} Section;

/* A pool count as the kernel writes it (and a profile's, up to 2^32); false if it is none. */
bool hugepages_parse_count(const char *s, uint64_t *ret);
/* The pages of size_kb node gets at boot from the bootloader's configuration (configured) and from
 * the running kernel's command line (running). */
int hugepages_boot_pools(Root *root, unsigned node, uint64_t size_kb, uint64_t *ret_configured, uint64_t *ret_running);
/* The boot knobs of the section: default_hugepagesz=, and hugepagesz= with the per-node
 * hugepages= for the boot size; refused where the boot section or the bootloader's configuration
 * sets them. */
int hugepages_plan_boot_args(PlanCtx *ctx, const Section *s);
