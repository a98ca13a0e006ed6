/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sim-kernel.h"
#include "strv.h"

/* The kernel's side of a huge page pool (mm/hugetlb.c: __nr_hugepages_store_common(),
 * set_max_huge_pages()) in a tree: a count written to a node's
 * sys/devices/system/node/nodeN/hugepages/hugepages-<kB>kB/nr_hugepages (or, on a tree without
 * sys/devices/system/node, the machine's sys/kernel/mm/hugepages/…) is what the pool should hold.
 *
 *   growing    pages are taken from the node's free memory (its meminfo's MemFree, the machine's
 *              proc/meminfo without NUMA) while it lasts; gigantic pages (larger than 4 MiB) stop
 *              at the fragmentation bound the tree's .mkhost.json sets for the node
 *              ("hugetlb": {"gigantic_runtime_max": {"NODE": N}}: the most such pages the node
 *              holds after a runtime allocation; no bound for a node it does not name), as a real
 *              kernel finds only so many free aligned ranges. The write succeeds either way: the
 *              pool holds what it got, and nr_hugepages says so.
 *   shrinking  free pages go back to the node's free memory; pages in use (nr_hugepages less
 *              free_hugepages) beyond the new count become surplus pages, and nr_hugepages reads
 *              the count written.
 * free_hugepages, surplus_hugepages, the node's MemFree/MemUsed (and HugePages_Total/Free for 2M,
 * the default size) and the machine's pool files of the size (the nodes' sum) follow. A count that
 * is no number is EINVAL. Not emulated: overcommit, reservations, a global write on a NUMA tree. */

#define NODE_DIR "sys/devices/system/node"
#define POOLS_DIR "sys/kernel/mm/hugepages"

typedef struct Pool {
        bool numa;
        unsigned node;
        unsigned long long kb;
        char dir[256];
} Pool;

static bool parse_pool(Root *r, const char *rel, Pool *ret) {
        int n = 0;
        Pool p = {};
        if (sscanf(rel, NODE_DIR "/node%u/hugepages/hugepages-%llukB/nr_hugepages%n", &p.node, &p.kb, &n) == 2 &&
            rel[n] == 0)
                p.numa = true;
        else if (!(sscanf(rel, POOLS_DIR "/hugepages-%llukB/nr_hugepages%n", &p.kb, &n) == 1 && rel[n] == 0) ||
                 root_is_dir(r, NODE_DIR))
                return false;
        snprintf(p.dir, sizeof(p.dir), "%.*s", (int) (strlen(rel) - strlen("/nr_hugepages")), rel);
        *ret = p;
        return true;
}

bool sim_hugetlb_pool(Root *r, const char *rel) {
        Pool p;
        return strstr(rel, "nr_hugepages") && parse_pool(r, rel, &p);
}

static unsigned long long read_count(Root *r, const char *dir, const char *file) {
        _cleanup_free_ char *p = NULL, *line = NULL;
        if (asprintf(&p, "%s/%s", dir, file) < 0 || root_read_line(r, p, &line) < 0)
                return 0;
        return strtoull(line, NULL, 10);
}

/* Replaces a file's content, keeping its mode (a write of the kernel's, not counted). */
static int put(Root *r, const char *rel, const char *text) {
        struct stat st;
        mode_t mode = root_stat(r, rel, &st) >= 0 ? st.st_mode & 07777 : 0444;
        return root_file_replace(r, rel, text, strlen(text), mode);
}

static int put_count(Root *r, const char *dir, const char *file, unsigned long long v) {
        _cleanup_free_ char *p = NULL, *t = NULL;
        if (asprintf(&p, "%s/%s", dir, file) < 0 || asprintf(&t, "%llu\n", v) < 0)
                return -ENOMEM;
        if (!root_exists(r, p))
                return 0;
        return put(r, p, t);
}

/* The number after "KEY:" in meminfo text, its digits' place in *ret_at and *ret_len. */
static bool meminfo_find(const char *text, const char *key, unsigned long long *ret, size_t *ret_at, size_t *ret_len) {
        const char *k = strstr(text, key);
        if (!k)
                return false;
        const char *d = k + strlen(key);
        while (*d == ' ')
                d++;
        size_t n = strspn(d, "0123456789");
        if (n == 0)
                return false;
        *ret = strtoull(d, NULL, 10);
        *ret_at = (size_t) (d - text);
        *ret_len = n;
        return true;
}

/* Sets the number after "KEY:", right-aligned in the room the old one and its padding had. */
static char *meminfo_set(const char *text, const char *key, unsigned long long v) {
        unsigned long long old;
        size_t at, len;
        if (!text || !meminfo_find(text, key, &old, &at, &len))
                return text ? strdup(text) : NULL;
        size_t start = strstr(text, key) - text + strlen(key), width = at + len - start;
        char *out;
        return asprintf(&out, "%.*s%*llu%s", (int) start, text, (int) width, v, text + at + len) < 0 ? NULL : out;
}

/* The node's free memory moved by delta KiB (negative: taken). */
static int meminfo_move(Root *r, const Pool *p, long long delta, unsigned long long nr, unsigned long long fr) {
        char path[128];
        _cleanup_free_ char *text = NULL;
        if (p->numa)
                snprintf(path, sizeof(path), NODE_DIR "/node%u/meminfo", p->node);
        else
                snprintf(path, sizeof(path), "proc/meminfo");
        if (root_read_file(r, path, &text, NULL) < 0)
                return 0;
        unsigned long long freekb, used;
        size_t at, len;
        if (!meminfo_find(text, "MemFree:", &freekb, &at, &len))
                return 0;
        _cleanup_free_ char *a = meminfo_set(text, "MemFree:", (unsigned long long) ((long long) freekb + delta));
        _cleanup_free_ char *b = a && meminfo_find(a, "MemUsed:", &used, &at, &len)
                ? meminfo_set(a, "MemUsed:", (unsigned long long) ((long long) used - delta))
                : (a ? strdup(a) : NULL);
        _cleanup_free_ char *c = b && p->kb == 2048 ? meminfo_set(b, "HugePages_Total:", nr) : (b ? strdup(b) : NULL);
        _cleanup_free_ char *d = c && p->kb == 2048 ? meminfo_set(c, "HugePages_Free:", fr) : (c ? strdup(c) : NULL);
        if (!d)
                return -ENOMEM;
        return put(r, path, d);
}

static bool memfree(Root *r, const Pool *p, unsigned long long *ret) {
        char path[128];
        _cleanup_free_ char *text = NULL;
        size_t at, len;
        snprintf(path, sizeof(path), p->numa ? NODE_DIR "/node%u/meminfo" : "proc/meminfo", p->node);
        return root_read_file(r, path, &text, NULL) >= 0 && meminfo_find(text, "MemFree:", ret, &at, &len);
}

/* The node's fragmentation bound for gigantic pages, or ULLONG_MAX. */
static unsigned long long gigantic_bound(Root *r, unsigned node) {
        _cleanup_free_ char *text = NULL;
        char key[16];
        if (root_read_file(r, ".mkhost.json", &text, NULL) < 0)
                return ULLONG_MAX;
        json_t *doc = json_loads(text, 0, NULL);
        snprintf(key, sizeof(key), "%u", node);
        json_t *v = json_object_get(json_object_get(json_object_get(doc, "hugetlb"), "gigantic_runtime_max"), key);
        unsigned long long b = json_is_integer(v) && json_integer_value(v) >= 0
                ? (unsigned long long) json_integer_value(v)
                : ULLONG_MAX;
        json_decref(doc);
        return b;
}

/* The machine's pool files of the size: the nodes' sums. */
static int machine_pool(Root *r, const Pool *p) {
        char dir[128], glob[160];
        unsigned long long sum[3] = {};
        static const char * const files[] = { "nr_hugepages", "free_hugepages", "surplus_hugepages" };
        _cleanup_strv_free_ char **nodes = NULL;
        snprintf(glob, sizeof(glob), NODE_DIR "/node*/hugepages/hugepages-%llukB", p->kb);
        if (!p->numa || root_glob(r, glob, &nodes) < 0)
                return 0;
        for (char **n = nodes; n && *n; n++)
                for (size_t i = 0; i < ELEMENTSOF(files); i++)
                        sum[i] += read_count(r, *n, files[i]);
        snprintf(dir, sizeof(dir), POOLS_DIR "/hugepages-%llukB", p->kb);
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                int k = put_count(r, dir, files[i], sum[i]);
                if (k < 0)
                        return k;
        }
        return 0;
}

int sim_hugetlb_write(Root *r, const char *rel, const char *value) {
        Pool p;
        char *end;
        if (!parse_pool(r, rel, &p))
                return -ENOENT;
        if (!isdigit((unsigned char) *value))
                return -EINVAL;
        errno = 0;
        unsigned long long want = strtoull(value, &end, 10);
        if (errno || (*end && !isspace((unsigned char) *end)))
                return -EINVAL;
        unsigned long long nr = read_count(r, p.dir, "nr_hugepages"), fr = read_count(r, p.dir, "free_hugepages"),
                           surplus = read_count(r, p.dir, "surplus_hugepages"), mem;
        long long delta;
        if (want >= nr) {
                unsigned long long got = want;
                if (memfree(r, &p, &mem))
                        got = MIN(got, nr + mem / p.kb);
                if (p.kb > 4096)
                        got = MIN(got, MAX(nr, gigantic_bound(r, p.node)));
                fr += got - nr;
                delta = -(long long) ((got - nr) * p.kb);
                nr = got;
        } else {
                unsigned long long release = nr - want, from_free = MIN(release, fr);
                fr -= from_free;
                surplus += release - from_free;
                delta = (long long) (from_free * p.kb);
                nr = want;
        }
        int k;
        if ((k = put_count(r, p.dir, "nr_hugepages", nr)) < 0 || (k = put_count(r, p.dir, "free_hugepages", fr)) < 0 ||
            (k = put_count(r, p.dir, "surplus_hugepages", surplus)) < 0 || (k = meminfo_move(r, &p, delta, nr, fr)) < 0)
                return k;
        return machine_pool(r, &p);
}
