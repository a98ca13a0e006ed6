/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* NUMA nodes' memory and the kernel's huge page pools, as sysfs and procfs show them: which nodes
 * have memory (sys/devices/system/node/has_memory), how much each has and how much of it is free
 * (the node's meminfo), the huge page sizes the kernel offers (sys/kernel/mm/hugepages/
 * hugepages-<kB>kB) and a node's pool of one size (its nr_hugepages). A kernel without NUMA (no
 * sys/devices/system/node) is one node, 0, with the machine's memory (proc/meminfo) and the
 * machine's pools. */

#include <stdbool.h>
#include <stdint.h>

#include "cpu-set.h"
#include "root.h"

/* The node ids with memory, as a set (CpuSet holds ids up to CPU_SET_MAX); *ret_numa false and {0}
 * without NUMA. */
int numa_memory_nodes(Root *root, bool *ret_numa, CpuSet *ret_nodes);

typedef struct NodeMemory {
        uint64_t total_kb; /* MemTotal: what the kernel manages, its huge pages included */
        uint64_t free_kb;  /* MemFree: huge pages, free or not, are not part of it */
} NodeMemory;

/* MemTotal and MemFree of a node (numa), or of the machine. */
int numa_node_memory(Root *root, bool numa, unsigned node, NodeMemory *ret);

/* The huge page sizes the kernel offers, in KiB, ascending; 0 and NULL when it offers none (no
 * sys/kernel/mm/hugepages: a kernel without hugetlbfs). */
int hugepage_sizes(Root *root, uint64_t **ret_kb, size_t *ret_n);
/* The root-relative nr_hugepages file of a node's pool of size_kb (numa), or the machine's. */
char *hugepage_pool_path(bool numa, unsigned node, uint64_t size_kb);
/* A size as the kernel's memparse() reads hugepagesz=: a number of bytes with an optional K, M, G
 * or T (a "B", "iB" after it, or "kB", is allowed too): "1G", "2M", "2048kB". -EINVAL when it is
 * none, or not a whole number of KiB. */
int hugepage_size_parse(const char *s, uint64_t *ret_kb);
/* The shortest form hugepagesz= takes: "1G", "2M", "64K". */
char *hugepage_size_format(uint64_t kb);
/* An amount of memory for people: "96.0 GiB", "512 MiB", "64 KiB". */
char *memory_format_kb(uint64_t kb);
