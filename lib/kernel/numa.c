/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* NUMA nodes' memory and the kernel's huge page pools (numa.h). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numa.h"
#include "strv.h"

#define NODE_DIR "sys/devices/system/node"
#define HUGEPAGES_DIR "sys/kernel/mm/hugepages"

int numa_memory_nodes(Root *root, bool *ret_numa, CpuSet *ret_nodes) {
        CpuSet s = {};
        if (!root_is_dir(root, NODE_DIR)) {
                cpu_set_add(&s, 0);
                *ret_numa = false;
                *ret_nodes = s;
                return 0;
        }
        /* has_memory (N_MEMORY) since 2.6.23; "online" on a kernel without it. */
        int k = root_read_cpu_list(root, NODE_DIR "/has_memory", &s);
        if (k == -ENOENT)
                k = root_read_cpu_list(root, NODE_DIR "/online", &s);
        if (k < 0)
                return k;
        *ret_numa = true;
        *ret_nodes = s;
        return 0;
}

/* The value in kB of "KEY:" in a meminfo text (a node's lines start "Node N "). */
static int meminfo_kb(const char *text, const char *key, uint64_t *ret) {
        for (const char *line = text; line && *line;) {
                const char *end = strchrnul(line, '\n');
                const char *k = strstr(line, key);
                if (k && k < end && (k == line || k[-1] == ' ')) {
                        char *e;
                        errno = 0;
                        unsigned long long v = strtoull(k + strlen(key), &e, 10);
                        if (errno || e == k + strlen(key))
                                return -EBADMSG;
                        *ret = v;
                        return 0;
                }
                line = *end ? end + 1 : end;
        }
        return -EBADMSG;
}

int numa_node_memory(Root *root, bool numa, unsigned node, NodeMemory *ret) {
        _cleanup_free_ char *text = NULL, *path = NULL;
        NodeMemory m;
        int k;
        if (numa && asprintf(&path, NODE_DIR "/node%u/meminfo", node) < 0)
                return -ENOMEM;
        k = root_read_file(root, numa ? path : "proc/meminfo", &text, NULL);
        if (k < 0)
                return k;
        if ((k = meminfo_kb(text, "MemTotal:", &m.total_kb)) < 0 || (k = meminfo_kb(text, "MemFree:", &m.free_kb)) < 0)
                return k;
        *ret = m;
        return 0;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

int hugepage_sizes(Root *root, uint64_t **ret_kb, size_t *ret_n) {
        _cleanup_free_ uint64_t *l = NULL;
        size_t n = 0, cap = 0;
        DIR *d;
        int k = root_opendir(root, HUGEPAGES_DIR, &d);
        if (k == -ENOENT) {
                *ret_kb = NULL;
                *ret_n = 0;
                return 0;
        }
        if (k < 0)
                return k;
        for (struct dirent *de; (de = readdir(d));) {
                unsigned long long kb;
                char tail[4];
                /* "hugepages-2048kB": hugetlb_sysfs_add_hstate() names them so. */
                if (sscanf(de->d_name, "hugepages-%llu%3s", &kb, tail) != 2 || !streq(tail, "kB") || kb == 0)
                        continue;
                if (GROW_ARRAY(l, cap, n, 4) < 0) {
                        closedir(d);
                        return -ENOMEM;
                }
                l[n++] = kb;
        }
        closedir(d);
        if (n > 1)
                qsort(l, n, sizeof(uint64_t), cmp_u64);
        *ret_kb = TAKE_PTR(l);
        *ret_n = n;
        return 0;
}

char *hugepage_pool_path(bool numa, unsigned node, uint64_t size_kb) {
        char *p;
        int n = numa ? asprintf(&p, NODE_DIR "/node%u/hugepages/hugepages-%llukB/nr_hugepages", node,
                                (unsigned long long) size_kb)
                     : asprintf(&p, HUGEPAGES_DIR "/hugepages-%llukB/nr_hugepages", (unsigned long long) size_kb);
        return n < 0 ? NULL : p;
}

int hugepage_size_parse(const char *s, uint64_t *ret_kb) {
        if (!s || !isdigit((unsigned char) *s))
                return -EINVAL;
        char *e;
        errno = 0;
        unsigned long long v = strtoull(s, &e, 10);
        if (errno)
                return -EINVAL;
        unsigned shift = 0;
        switch (*e) {
        case 'k':
        case 'K':
                shift = 10;
                break;
        case 'm':
        case 'M':
                shift = 20;
                break;
        case 'g':
        case 'G':
                shift = 30;
                break;
        case 't':
        case 'T':
                shift = 40;
                break;
        default:
                break;
        }
        if (shift)
                e++;
        if (!streq(e, "") && !(shift && (streq(e, "B") || streq(e, "iB"))))
                return -EINVAL;
        if (v == 0 || v > (UINT64_MAX >> shift))
                return -EINVAL;
        uint64_t bytes = v << shift;
        if (bytes % 1024)
                return -EINVAL;
        *ret_kb = bytes / 1024;
        return 0;
}

char *hugepage_size_format(uint64_t kb) {
        char *s;
        int n = kb % (UINT64_C(1) << 30) == 0   ? asprintf(&s, "%lluT", (unsigned long long) (kb >> 30))
                : kb % (UINT64_C(1) << 20) == 0 ? asprintf(&s, "%lluG", (unsigned long long) (kb >> 20))
                : kb % 1024 == 0                ? asprintf(&s, "%lluM", (unsigned long long) (kb >> 10))
                                                : asprintf(&s, "%lluK", (unsigned long long) kb);
        return n < 0 ? NULL : s;
}

char *memory_format_kb(uint64_t kb) {
        char *s;
        int n = kb >= (UINT64_C(1) << 20)   ? asprintf(&s, "%.1f GiB", (double) kb / (1 << 20))
                : kb >= (UINT64_C(1) << 10) ? asprintf(&s, "%llu MiB", (unsigned long long) (kb >> 10))
                                            : asprintf(&s, "%llu KiB", (unsigned long long) kb);
        return n < 0 ? NULL : s;
}
