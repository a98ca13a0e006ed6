/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "macro.h"
#include "profile.h"
#include "strv.h"

/* The huge pages a guest's memory is backed by: the pools of the profile's "hugepages" section.
 *
 * This reads the section itself, as rtpart.profile(5) gives it, until the hugepages backend's
 * hugepages_reserved() (lib/backends/hugepages.h) is in the library: export_hugepages_read() is
 * then that call, its HugepagePool the same facts as ExportHugePool. Without the section, the
 * pools the host holds now. */

void export_huge_pages_done(ExportHugePages *p) {
        free(p->pools);
        *p = (ExportHugePages) {};
}

static int pool_add(ExportHugePages *hp, unsigned node, uint64_t size_kb, uint64_t count) {
        if (count == 0)
                return 0;
        for (size_t i = 0; i < hp->n_pools; i++)
                if (hp->pools[i].node == node && hp->pools[i].size_kb == size_kb) {
                        hp->pools[i].count = count; /* a later item wins */
                        return 0;
                }
        ExportHugePool *n = realloc(hp->pools, (hp->n_pools + 1) * sizeof(ExportHugePool));
        if (!n)
                return -ENOMEM;
        hp->pools = n;
        hp->pools[hp->n_pools++] = (ExportHugePool) { .node = node, .size_kb = size_kb, .count = count };
        return 0;
}

/* A page size as hugepagesz= takes it ("2M", "1G", "2048kB", "1GB") in KiB; 0 if it is none. */
static uint64_t size_parse(const char *s) {
        char *end;
        if (!s || !isdigit((unsigned char) *s))
                return 0;
        unsigned long long n = strtoull(s, &end, 10), mult;
        switch (tolower((unsigned char) *end)) {
        case 'k':
                mult = 1;
                break;
        case 'm':
                mult = 1024;
                break;
        case 'g':
                mult = 1024 * 1024;
                break;
        default:
                return 0;
        }
        end++;
        if (*end == 'B' || *end == 'b')
                end++;
        return *end ? 0 : n * mult;
}

/* The nodes an item names: node numbers ("0,1", "0-3"), else a CPU expression whose CPUs' nodes
 * they are; absent: every node. */
static int item_nodes(const Host *h, const char *nodes, const CpuSet *iso, const CpuSet *hk, CpuSet *ret,
                      char **ret_message) {
        CpuSet all = {};
        for (unsigned n = 0; n < (h->numa ? h->n_nodes : 1); n++)
                if (!h->numa || !cpu_set_is_empty(&h->nodes[n]))
                        cpu_set_add(&all, n);
        if (!nodes) {
                *ret = all;
                return 0;
        }
        if (strspn(nodes, "0123456789,-") == strlen(nodes))
                return cpu_set_parse_list(nodes, ret, NULL) < 0 ? (*ret_message = strdup("not a node list"), -EINVAL)
                                                                : 0;
        CpuSet cpus;
        int k = cpu_expr_parse(nodes, h, iso, hk, &cpus, ret_message);
        if (k < 0)
                return k;
        *ret = (CpuSet) {};
        CPU_SET_FOREACH (c, &cpus)
                cpu_set_add(ret, (unsigned) c < h->n_cpu_ids && h->cpus[c].node >= 0 ? (unsigned) h->cpus[c].node : 0);
        cpu_set_and(ret, &all);
        return 0;
}

static int read_section(const Host *h, const json_t *sec, const CpuSet *iso, const CpuSet *hk, ExportHugePages *hp,
                        char **ret_message) {
        json_t *pages = json_object_get(sec, "pages"), *item;
        size_t i;

        hp->from_profile = true;
        hp->default_kb = size_parse(json_string_value(json_object_get(sec, "default_size")));
        json_array_foreach (pages, i, item) {
                uint64_t size = size_parse(json_string_value(json_object_get(item, "size")));
                json_t *c = json_object_get(item, "count");
                uint64_t count = json_is_integer(c) ? (uint64_t) json_integer_value(c)
                                                    : strtoull(strempty(json_string_value(c)), NULL, 10);
                CpuSet nodes;
                if (size == 0) {
                        *ret_message = strdup("not a page size such as \"2M\" or \"1G\"");
                        return -EINVAL;
                }
                int k = item_nodes(h, json_string_value(json_object_get(item, "nodes")), iso, hk, &nodes, ret_message);
                CPU_SET_FOREACH (n, &nodes)
                        if (k >= 0)
                                k = pool_add(hp, (unsigned) n, size, count);
                if (k < 0)
                        return k;
        }
        return 0;
}

/* What the host holds now: each node's pools (sys/devices/system/node/nodeN/hugepages/…), or the
 * machine's as node 0 on a host without NUMA. */
static int read_host(Root *root, const Host *h, ExportHugePages *hp) {
        for (unsigned n = 0; n < (h->numa ? h->n_nodes : 1); n++) {
                _cleanup_strv_free_ char **dirs = NULL;
                char pattern[128];
                if (h->numa)
                        snprintf(pattern, sizeof(pattern), "sys/devices/system/node/node%u/hugepages/hugepages-*kB", n);
                else
                        snprintf(pattern, sizeof(pattern), "sys/kernel/mm/hugepages/hugepages-*kB");
                if (root_glob(root, pattern, &dirs) < 0)
                        continue;
                for (char **d = dirs; d && *d; d++) {
                        const char *base = strrchr(*d, '/');
                        uint64_t kib = strtoull((base ? base + 1 : *d) + strlen("hugepages-"), NULL, 10);
                        unsigned count = 0;
                        char path[512];
                        snprintf(path, sizeof(path), "%s/nr_hugepages", *d);
                        if (root_read_uint(root, path, &count) < 0)
                                continue;
                        int k = pool_add(hp, n, kib, count);
                        if (k < 0)
                                return k;
                }
        }
        return 0;
}

int export_hugepages_read(Root *root, const Host *h, const json_t *doc, const CpuSet *isolated,
                          const CpuSet *housekeeping, ExportHugePages *ret, char **ret_message) {
        _cleanup_(export_huge_pages_done) ExportHugePages hp = {};
        json_t *sec = json_object_get(doc, "hugepages");
        int k;

        *ret_message = NULL;
        k = sec ? read_section(h, sec, isolated, housekeeping, &hp, ret_message) : read_host(root, h, &hp);
        if (k < 0)
                return k;
        *ret = hp;
        hp = (ExportHugePages) {};
        return 0;
}
