/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The huge pages a profile reserves, per NUMA node and page size (the "hugepages" section; its
 * backend is lib/backends/hugepages.c): for what must know them without planning the host, such
 * as the exports (Nova's reserved_huge_pages, libvirt's huge page backing). */

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "profile.h"
#include "root.h"

typedef struct HugepagePool {
        unsigned node;    /* NUMA node id (0 on a host without NUMA) */
        uint64_t size_kb; /* page size in KiB: 2048 for 2M, 1048576 for 1G */
        uint64_t count;   /* pages of that size the node holds */
        bool boot;        /* reserved by boot arguments too (hugepagesz=, hugepages=) */
} HugepagePool;

typedef struct HugepageReservation {
        HugepagePool *pools; /* count > 0 only, by node, then by size */
        size_t n_pools;
        uint64_t default_kb; /* "default_size" (default_hugepagesz=), 0: not set */
        uint64_t boot_kb;    /* the size reserved at boot, 0: none */
} HugepageReservation;

/* The huge pages r's profile reserves on the host of root (r->host's), as the plan would reserve
 * them: nodes resolved (a class names the nodes holding its CPUs), sizes checked against what the
 * host offers. An empty reservation when the profile has no hugepages section. A profile error
 * is -EINVAL with the file, the JSON pointer and the fix in *ret_error, as plan_build() gives it. */
int hugepages_reserved(const Resolved *r, Root *root, HugepageReservation *ret, Error *ret_error);
void hugepage_reservation_done(HugepageReservation *r);
