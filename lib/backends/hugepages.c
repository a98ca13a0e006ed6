/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "hugepages-internal.h"
#include "hugepages.h"
#include "numa.h"
#include "strv.h"

/* The "hugepages" section of a profile: pools of huge pages per NUMA node ("pages": [{"size": "1G",
 * "nodes": "isolated", "count": 8}]: the count on each node named by number, "0,1", or by a CPU
 * expression for the nodes holding its CPUs; every node with memory without "nodes"; a host without
 * NUMA is node 0), "default_size" and "boot_size".
 *
 * Knobs: hugepages/node<N>/<size> (hugepages/node1/1G) on the node's pool, its
 * sys/devices/system/node/node<N>/hugepages/hugepages-<kB>kB/nr_hugepages (sys/kernel/mm/hugepages/…
 * without NUMA), written and read back: the kernel allocates what it can and says how many it holds.
 * Gigantic pages (larger than the page allocator's largest block: 1G on x86) need a free, aligned,
 * contiguous range each, which a running host's fragmentation takes away; so the boot size
 * ("boot_size", by default the gigantic one) is also reserved by hugepagesz=<size>
 * hugepages=<node>:<count>,… (the per-node form of 5.16+), boot knobs the boot backend plans.
 * A pool of the boot size the kernel fills short at runtime is done as far as it goes, the rest
 * reserved at the next boot: its knob is a reboot knob whose value, while the boot arguments give
 * the node more pages than the running kernel was booted with and the pool holds fewer, is the
 * configured count (so verify says "reboot pending", not drift, until the reboot; the running
 * pool is what verify compares then). A pool of any other size filled short fails the write: the
 * apply is rolled back, naming the node, what it holds and what is free there. "default_size" is
 * default_hugepagesz=, a boot argument alone. */

static const SchemaField page_fields[] = {
        { "size", &schema_string },
        { "nodes", &schema_string },
        { "count", &schema_scalar },
        {},
};
static const Schema page_schema = { SCHEMA_OBJECT, .fields = page_fields };
static const Schema pages_schema = { SCHEMA_ARRAY, .items = &page_schema };
static const SchemaField hugepages_fields[] = {
        { "default_size", &schema_string },
        { "boot_size", &schema_string },
        { "pages", &pages_schema },
        {},
};
static const Schema hugepages_schema = { SCHEMA_OBJECT, .fields = hugepages_fields };
static const SchemaField hugepages_section = { "hugepages", &hugepages_schema };

/* The page allocator's largest block with 4 KiB base pages (MAX_ORDER 10): larger pages are
 * gigantic. */
#define BUDDY_MAX_KB 4096U
static bool gigantic(uint64_t kb) {
        return kb > BUDDY_MAX_KB;
}

/* ---- the section as one file writes it ---- */

static int check_size(const char *file, json_t *v, const char *ptr, bool none_ok, Error *e) {
        uint64_t kb;
        const char *s = json_string_value(v);
        if (!s || (none_ok && streq(s, "none")) || strstr(s, "${") || hugepage_size_parse(s, &kb) >= 0)
                return 0;
        return error_set(
                e, -EINVAL, file, ptr,
                "\"%s\" is not a page size; write it as the kernel's hugepagesz= does, e.g. \"2M\" or \"1G\"%s", s,
                none_ok ? ", or \"none\"" : "");
}

static int check_page(const char *file, json_t *page, const char *ptr, Error *e) {
        _cleanup_free_ char *ps = json_pointer_append(ptr, "size"), *pc = json_pointer_append(ptr, "count"),
                            *pn = json_pointer_append(ptr, "nodes");
        json_t *count = json_object_get(page, "count");
        const char *nodes = json_string_value(json_object_get(page, "nodes"));
        int k;
        if (!ps || !pc || !pn)
                return -ENOMEM;
        if (!json_object_get(page, "size"))
                return error_set(e, -EINVAL, file, ptr, "missing \"size\" (the page size, e.g. \"1G\")");
        if ((k = check_size(file, json_object_get(page, "size"), ps, false, e)) < 0)
                return k;
        if (!count)
                return error_set(e, -EINVAL, file, ptr, "missing \"count\" (the pages of this size on each node)");
        uint64_t n;
        bool ok = json_is_integer(count)
                ? json_integer_value(count) >= 0 && (uint64_t) json_integer_value(count) <= COUNT_MAX
                : json_is_string(count)
                ? strstr(json_string_value(count), "${") || hugepages_parse_count(json_string_value(count), &n)
                : false;
        if (!ok)
                return error_set(e, -EINVAL, file, pc,
                                 "the count is a number of pages from 0 to %" PRIu64
                                 " (or a \"${variable}\" holding one)",
                                 COUNT_MAX);
        if (nodes && !*nodes)
                return error_set(
                        e, -EINVAL, file, pn,
                        "empty; name node numbers (\"0,1\") or the CPUs whose nodes are meant (\"isolated\"), or leave \"nodes\" out for every node");
        return 0;
}

static int hugepages_check(const char *file, json_t *sec, const char *pointer, Error *e) {
        _cleanup_free_ char *pd = json_pointer_append(pointer, "default_size"),
                            *pb = json_pointer_append(pointer, "boot_size"),
                            *pp = json_pointer_append(pointer, "pages");
        int k;
        if (!pd || !pb || !pp)
                return -ENOMEM;
        if ((k = check_size(file, json_object_get(sec, "default_size"), pd, false, e)) < 0 ||
            (k = check_size(file, json_object_get(sec, "boot_size"), pb, true, e)) < 0)
                return k;
        size_t i;
        json_t *page;
        json_array_foreach (json_object_get(sec, "pages"), i, page) {
                _cleanup_free_ char *p = json_pointer_append_index(pp, i);
                if (!p)
                        return -ENOMEM;
                if ((k = check_page(file, page, p, e)) < 0)
                        return k;
        }
        return 0;
}

/* ---- the section resolved against the host ---- */

static void section_done(Section *s) {
        free(s->sizes);
        free(s->res.pools);
        free(s->entry);
        *s = (Section) {};
}

static int pool_cmp(const void *a, const void *b) {
        const HugepagePool *x = a, *y = b;
        if (x->node != y->node)
                return x->node < y->node ? -1 : 1;
        return x->size_kb < y->size_kb ? -1 : x->size_kb > y->size_kb;
}

/* "2M and 1G": the sizes the host offers. */
static char *sizes_phrase(const Section *s) {
        StrBuf b = {};
        for (size_t i = 0; i < s->n_sizes; i++) {
                _cleanup_free_ char *f = hugepage_size_format(s->sizes[i]);
                strbuf_appendf(&b, "%s%s", i == 0 ? "" : i + 1 == s->n_sizes ? " and " : ", ", strempty(f));
        }
        return strbuf_steal(&b);
}

/* A size of the section at ptr, which the host must offer. */
static int resolve_size(PlanCtx *ctx, const Section *s, const char *text, const char *ptr, uint64_t *ret) {
        uint64_t kb;
        if (hugepage_size_parse(text, &kb) < 0)
                return plan_fail(ctx, ptr,
                                 "\"%s\" is not a page size; write it as hugepagesz= does, e.g. \"2M\" or \"1G\"",
                                 text);
        for (size_t i = 0; i < s->n_sizes; i++)
                if (s->sizes[i] == kb) {
                        *ret = kb;
                        return 0;
                }
        _cleanup_free_ char *offered = sizes_phrase(s), *f = hugepage_size_format(kb);
        if (s->n_sizes == 0)
                return plan_fail(ctx, ptr,
                                 "this kernel offers no huge pages (no sys/kernel/mm/hugepages: built without "
                                 "hugetlbfs); remove the hugepages section");
        return plan_fail(ctx, ptr, "%s pages are not offered by this host; it offers %s (sys/kernel/mm/hugepages)",
                         strempty(f), strempty(offered));
}

static bool is_node_list(const char *s) {
        for (const char *c = s; *c; c++)
                if (!isdigit((unsigned char) *c) && !strchr(",- ", *c))
                        return false;
        return *s;
}

/* The nodes of item i ("nodes" at ptr, NULL: every node with memory). */
static int resolve_nodes(PlanCtx *ctx, const Section *s, const char *text, const char *ptr, CpuSet *ret) {
        _cleanup_free_ char *have = cpu_set_format_list(&s->nodes), *msg = NULL;
        CpuSet set = {}, cpus;
        if (!have)
                return -ENOMEM;
        if (!text) {
                *ret = s->nodes;
                return 0;
        }
        if (is_node_list(text)) {
                if (cpu_set_parse_list(text, &set, NULL) < 0)
                        return plan_fail(ctx, ptr, "\"%s\" is not a list of node numbers such as \"0,1\" or \"0-3\"",
                                         text);
                CPU_SET_FOREACH (n, &set)
                        if (!cpu_set_has(&s->nodes, (unsigned) n))
                                return s->numa
                                        ? plan_fail(
                                                  ctx, ptr,
                                                  "NUMA node %d does not exist or has no memory (nodes with memory: %s)",
                                                  n, have)
                                        : plan_fail(
                                                  ctx, ptr,
                                                  "this host has no NUMA nodes: its memory is node 0's; write \"0\" or leave \"nodes\" out");
                *ret = set;
                return 0;
        }
        int k = cpu_expr_parse(text, ctx->host, &ctx->resolved->isolated, &ctx->resolved->housekeeping, &cpus, &msg);
        if (k < 0)
                return k == -ENOMEM
                        ? k
                        : plan_fail(ctx, ptr, "neither node numbers (\"0,1\") nor CPUs whose nodes are meant: %s",
                                    strempty(msg));
        CPU_SET_FOREACH (c, &cpus) {
                unsigned node = s->numa && (unsigned) c < ctx->host->n_cpu_ids ? (unsigned) ctx->host->cpus[c].node : 0;
                if (cpu_set_has(&s->nodes, node))
                        cpu_set_add(&set, node);
        }
        if (cpu_set_is_empty(&set)) {
                _cleanup_free_ char *l = cpu_set_format_list(&cpus);
                return plan_fail(ctx, ptr, "no node with memory holds CPUs %s (nodes with memory: %s)", strempty(l),
                                 have);
        }
        *ret = set;
        return 0;
}

static int add_pool(Section *s, unsigned node, uint64_t kb, uint64_t count, size_t entry) {
        if (GROW_ARRAY(s->res.pools, s->cap_pools, s->res.n_pools, 8) < 0 ||
            GROW_ARRAY(s->entry, s->cap_entry, s->res.n_pools, 8) < 0)
                return -ENOMEM;
        s->res.pools[s->res.n_pools] = (HugepagePool) { .node = node, .size_kb = kb, .count = count };
        s->entry[s->res.n_pools++] = entry;
        return 0;
}

/* One item of "pages": a pool per node it names, none of them named by an earlier item. */
static int resolve_page(PlanCtx *ctx, Section *s, size_t i, json_t *page) {
        uint64_t kb, count;
        CpuSet nodes;
        json_t *c = json_object_get(page, "count");
        char ptr[64];
        int k;
        snprintf(ptr, sizeof(ptr), "/hugepages/pages/%zu/size", i);
        if ((k = resolve_size(ctx, s, json_string_value(json_object_get(page, "size")), ptr, &kb)) < 0)
                return k;
        snprintf(ptr, sizeof(ptr), "/hugepages/pages/%zu/count", i);
        if (json_is_integer(c) && json_integer_value(c) >= 0)
                count = (uint64_t) json_integer_value(c);
        else if (!hugepages_parse_count(json_string_value(c), &count))
                return plan_fail(ctx, ptr, "\"%s\" is not a number of pages from 0 to %" PRIu64,
                                 strempty(json_string_value(c)), COUNT_MAX);
        snprintf(ptr, sizeof(ptr), "/hugepages/pages/%zu/nodes", i);
        if ((k = resolve_nodes(ctx, s, json_string_value(json_object_get(page, "nodes")), ptr, &nodes)) < 0)
                return k;
        CPU_SET_FOREACH (n, &nodes) {
                for (size_t j = 0; j < s->res.n_pools; j++)
                        if (s->res.pools[j].node == (unsigned) n && s->res.pools[j].size_kb == kb) {
                                _cleanup_free_ char *f = hugepage_size_format(kb);
                                return plan_fail_item(ctx, "/hugepages/pages", i, NULL,
                                                      "node %d gets %s pages from /hugepages/pages/%zu already; give "
                                                      "each node its count of a size once",
                                                      n, strempty(f), s->entry[j]);
                        }
                if ((k = add_pool(s, (unsigned) n, kb, count, i)) < 0)
                        return k;
        }
        return 0;
}

/* The size reserved at boot: "boot_size" ("none": none), else the gigantic size the pages ask for;
 * none when no page of it is asked for. */
static int resolve_boot_size(PlanCtx *ctx, Section *s, json_t *sec) {
        const char *text = json_string_value(json_object_get(sec, "boot_size"));
        uint64_t kb = 0, total = 0;
        int k;
        if (text && streq(text, "none"))
                return 0;
        if (text) {
                if ((k = resolve_size(ctx, s, text, "/hugepages/boot_size", &kb)) < 0)
                        return k;
        } else
                for (size_t i = 0; i < s->res.n_pools; i++) {
                        uint64_t p = s->res.pools[i].size_kb;
                        if (!gigantic(p) || s->res.pools[i].count == 0 || p == kb)
                                continue;
                        if (kb) {
                                _cleanup_free_ char *a = hugepage_size_format(MIN(kb, p)),
                                                    *b = hugepage_size_format(MAX(kb, p));
                                return plan_fail(ctx, "/hugepages",
                                                 "pages of %s and of %s are both reserved at boot by default, and the "
                                                 "kernel's command line gets one hugepagesz= from rtpart; set "
                                                 "\"boot_size\" to the one to reserve at boot, or \"none\"",
                                                 strempty(a), strempty(b));
                        }
                        kb = p;
                }
        for (size_t i = 0; i < s->res.n_pools; i++)
                if (s->res.pools[i].size_kb == kb)
                        total += s->res.pools[i].count;
        if (text && total == 0) {
                _cleanup_free_ char *f = hugepage_size_format(kb);
                return plan_fail(ctx, "/hugepages/boot_size",
                                 "no pages of %s are asked for; name the size of pages in \"pages\", or \"none\"",
                                 strempty(f));
        }
        s->res.boot_kb = total > 0 ? kb : 0;
        for (size_t i = 0; i < s->res.n_pools; i++)
                s->res.pools[i].boot = s->res.boot_kb && s->res.pools[i].size_kb == s->res.boot_kb;
        return 0;
}

static int section_resolve(PlanCtx *ctx, Section *s) {
        json_t *sec = json_object_get(ctx->resolved->doc, "hugepages");
        const char *def = json_string_value(json_object_get(sec, "default_size"));
        size_t i;
        json_t *page;
        int k;

        *s = (Section) {};
        if (json_array_size(json_object_get(sec, "pages")) == 0 && !def)
                return 0;
        if ((k = numa_memory_nodes(ctx->root, &s->numa, &s->nodes)) < 0 ||
            (k = hugepage_sizes(ctx->root, &s->sizes, &s->n_sizes)) < 0)
                return k;
        json_array_foreach (json_object_get(sec, "pages"), i, page)
                if ((k = resolve_page(ctx, s, i, page)) < 0)
                        return k;
        if (def && (k = resolve_size(ctx, s, def, "/hugepages/default_size", &s->res.default_kb)) < 0)
                return k;
        /* Sorted with the items they came from. */
        for (size_t a = 1; a < s->res.n_pools; a++)
                for (size_t b = a; b > 0 && pool_cmp(&s->res.pools[b - 1], &s->res.pools[b]) > 0; b--) {
                        HugepagePool t = s->res.pools[b];
                        s->res.pools[b] = s->res.pools[b - 1];
                        s->res.pools[b - 1] = t;
                        size_t e = s->entry[b];
                        s->entry[b] = s->entry[b - 1];
                        s->entry[b - 1] = e;
                }
        return resolve_boot_size(ctx, s, sec);
}

int hugepages_reserved(const Resolved *r, Root *root, HugepageReservation *ret, Error *ret_error) {
        PlanCtx ctx = { .resolved = r, .host = r->host, .root = root, .error = ret_error };
        _cleanup_(section_done) Section s = {};
        int k = section_resolve(&ctx, &s);
        if (k < 0)
                return k;
        HugepageReservation res = { .default_kb = s.res.default_kb, .boot_kb = s.res.boot_kb };
        for (size_t i = 0; i < s.res.n_pools; i++)
                if (s.res.pools[i].count > 0)
                        s.res.pools[res.n_pools++] = s.res.pools[i];
        res.pools = res.n_pools ? TAKE_PTR(s.res.pools) : NULL;
        *ret = res;
        return 0;
}

void hugepage_reservation_done(HugepageReservation *r) {
        free(r->pools);
        *r = (HugepageReservation) {};
}

/* The node and size of a knob id "hugepages/node1/1G". */
static int knob_pool(const Knob *k, unsigned *ret_node, uint64_t *ret_kb) {
        char size[32];
        if (sscanf(k->id, "hugepages/node%u/%31s", ret_node, size) != 2)
                return -EINVAL;
        return hugepage_size_parse(size, ret_kb);
}

/* ---- verbs ---- */

/* The pool's count; while the bootloader's configuration gives the node more pages of the size
 * than the running kernel was booted with and the pool holds fewer, that configured count (the
 * rest of the pages come at the next boot; see the top of the file). */
static int pool_read(Root *root, const Knob *k, char **ret) {
        _cleanup_free_ char *nr = NULL;
        uint64_t have, configured, running, kb;
        unsigned node;
        int r = knob_read_file(root, k, &nr);
        if (r < 0)
                return r;
        if (!hugepages_parse_count(nr, &have) || knob_pool(k, &node, &kb) < 0 ||
            hugepages_boot_pools(root, node, kb, &configured, &running) < 0 || configured == running ||
            have >= configured) {
                *ret = TAKE_PTR(nr);
                return 0;
        }
        return asprintf(ret, "%" PRIu64, configured) < 0 ? -ENOMEM : 0;
}

static int pool_write_count(Root *root, const Knob *k, const char *value, KnobResult *ret) {
        _cleanup_free_ char *before = NULL, *back = NULL, *f = NULL, *freetext = NULL;
        uint64_t want, got, kb, configured, running;
        unsigned node;
        int r;

        if (!value)
                return 0; /* the pool did not exist before: nothing to put back */
        if (!k->path || !hugepages_parse_count(value, &want) || knob_pool(k, &node, &kb) < 0)
                return -EINVAL;
        r = root_read_line(root, k->path, &before);
        if (r < 0)
                return r;
        r = root_write_value(root, k->path, value);
        /* EINVAL: a gigantic pool cannot grow at runtime (a kernel without CONFIG_CONTIG_ALLOC);
         * it holds what it held, which the read below says. */
        if (r < 0 && !(r == -EINVAL && gigantic(kb)))
                return r;
        ret->partial = r >= 0; /* the pool may have changed, whatever comes next */
        r = root_read_line(root, k->path, &back);
        if (r < 0)
                return r;
        if (!hugepages_parse_count(back, &got))
                return -EBADMSG;
        if (got == want)
                return 0;
        f = hugepage_size_format(kb);
        if (got > want) {
                knob_result_reason(ret, "node %u holds %" PRIu64 " %s pages, not the %" PRIu64 " asked for", node, got,
                                   strempty(f), want);
                return -EBUSY;
        }
        r = hugepages_boot_pools(root, node, kb, &configured, &running);
        if (r < 0)
                return r;
        if (configured >= want) {
                /* The rest are reserved at the next boot. */
                knob_result_reason(
                        ret, "node %u got %" PRIu64 " of the %" PRIu64 " %s pages now; the rest come at the next boot",
                        node, got, want, strempty(f));
                return 0;
        }
        /* A write that fails leaves the pool as it was: the pages it got go back (and should
         * that fail, the apply puts them back as it undoes the writes before: partial). */
        r = root_write_value(root, k->path, before);
        if (r < 0)
                return r;
        bool numa;
        CpuSet nodes;
        NodeMemory m;
        if (numa_memory_nodes(root, &numa, &nodes) >= 0 && numa_node_memory(root, numa, node, &m) >= 0)
                freetext = memory_format_kb(m.free_kb);
        knob_result_reason(ret, "node %u got %" PRIu64 " of the %" PRIu64 " %s pages asked for%s%s%s; %s", node, got,
                           want, strempty(f), freetext ? " (" : "", strempty(freetext), freetext ? " free there)" : "",
                           gigantic(kb) ? "each needs a free, aligned, contiguous range of its size: reserve them at "
                                          "boot (\"boot_size\")"
                                        : "free memory on that node, reserve fewer, or reserve them at boot "
                                          "(\"boot_size\")");
        return -ENOMEM;
}

static int pool_write(Root *root, const Knob *k, const char *value, const KnobKeep *keep, KnobResult *ret) {
        *ret = (KnobResult) {};
        return knob_result_finish(ret, pool_write_count(root, k, value, ret));
}

/* The node's pool file, and on NUMA the machine's pool of the size too: a write there (or to
 * vm.nr_hugepages, for the default size, which the safety timer sees) changes the node's pool
 * without an event on the node's file. */
static int pool_watch(const Knob *k, char ***ret_paths) {
        _cleanup_strv_free_ char **l = NULL;
        unsigned node;
        uint64_t kb;
        if (!k->path)
                return knob_watch_none(k, ret_paths);
        if (strv_extend(&l, k->path) < 0)
                return -ENOMEM;
        if (knob_pool(k, &node, &kb) >= 0 && strstr(k->path, "/node")) {
                _cleanup_free_ char *machine = hugepage_pool_path(/* numa= */ false, node, kb);
                if (!machine || strv_extend(&l, machine) < 0)
                        return -ENOMEM;
        }
        *ret_paths = TAKE_PTR(l);
        return 1;
}

/* ---- plan ---- */

/* "8 × 1G, 1024 × 2M" of node's pools, their total in *ret_kb and what they add to what the node
 * holds now in *ret_more_kb. */
static char *node_pages(const Section *s, unsigned node, const uint64_t *current, uint64_t *ret_kb,
                        uint64_t *ret_more_kb) {
        StrBuf b = {};
        *ret_kb = *ret_more_kb = 0;
        for (size_t i = s->res.n_pools; i-- > 0;) {
                const HugepagePool *p = &s->res.pools[i];
                if (p->node != node || p->count == 0)
                        continue;
                _cleanup_free_ char *f = hugepage_size_format(p->size_kb);
                strbuf_appendf(&b, "%s%" PRIu64 " × %s", b.len ? ", " : "", p->count, strempty(f));
                *ret_kb += p->count * p->size_kb;
                if (p->count > current[i])
                        *ret_more_kb += (p->count - current[i]) * p->size_kb;
        }
        return strbuf_steal(&b);
}

/* Each node's memory, what its pools take, refused where they cannot fit: at least 1/16 of the
 * node (and 256 MiB) stays outside huge pages, for the kernel and everything else. */
static int plan_memory(PlanCtx *ctx, const Section *s, const uint64_t *current) {
        CPU_SET_FOREACH (node, &s->nodes) {
                uint64_t take, more;
                NodeMemory m;
                _cleanup_free_ char *what = node_pages(s, (unsigned) node, current, &take, &more);
                if (!what)
                        return -ENOMEM;
                if (take == 0)
                        continue;
                int k = numa_node_memory(ctx->root, s->numa, (unsigned) node, &m);
                if (k < 0) {
                        k = plan_note(ctx,
                                      "hugepages: node %d: its memory is unknown (%s), so the fit of %s is not checked",
                                      node, strerror(-k), what);
                        if (k < 0)
                                return k;
                        continue;
                }
                uint64_t keep = MAX(m.total_kb / 16, UINT64_C(256) << 10),
                         room = m.total_kb > keep ? m.total_kb - keep : 0;
                _cleanup_free_ char *tot = memory_format_kb(m.total_kb), *fr = memory_format_kb(m.free_kb),
                                    *tk = memory_format_kb(take), *rm = memory_format_kb(room),
                                    *kp = memory_format_kb(keep), *mo = memory_format_kb(more);
                if (!tot || !fr || !tk || !rm || !kp || !mo)
                        return -ENOMEM;
                if (take > room) {
                        size_t e = 0;
                        for (size_t i = 0; i < s->res.n_pools; i++)
                                if (s->res.pools[i].node == (unsigned) node && s->res.pools[i].count > 0)
                                        e = MAX(e, s->entry[i]);
                        return plan_fail_item(ctx, "/hugepages/pages", e, "count",
                                              "node %d has %s of memory (%s free); the huge pages asked for it take %s "
                                              "(%s), more than the %s it can hold while keeping %s for everything "
                                              "else; ask for fewer",
                                              node, tot, fr, tk, what, rm, kp);
                }
                k = plan_note(ctx, "hugepages: node %d has %s (%s free); its huge pages take %s (%s)%s%s%s", node, tot,
                              fr, tk, what, more > m.free_kb ? ", " : "", more > m.free_kb ? mo : "",
                              more > m.free_kb ? " more than is free now: the kernel reclaims what it can for them"
                                               : "");
                if (k < 0)
                        return k;
        }
        return 0;
}

static int hugepages_plan(PlanCtx *ctx) {
        _cleanup_(section_done) Section s = {};
        _cleanup_free_ uint64_t *current = NULL;
        int k = section_resolve(ctx, &s);
        if (k < 0)
                return k;
        if ((k = hugepages_plan_boot_args(ctx, &s)) < 0)
                return k;
        current = calloc(MAX(s.res.n_pools, (size_t) 1), sizeof(uint64_t));
        if (!current)
                return -ENOMEM;
        for (size_t i = 0; i < s.res.n_pools; i++) {
                const HugepagePool *p = &s.res.pools[i];
                _cleanup_free_ char *size = hugepage_size_format(p->size_kb), *id = NULL, *want = NULL, *cur = NULL;
                _cleanup_free_ char *path = hugepage_pool_path(s.numa, p->node, p->size_kb);
                if (!size || !path || asprintf(&id, "hugepages/node%u/%s", p->node, size) < 0 ||
                    asprintf(&want, "%" PRIu64, p->count) < 0)
                        return -ENOMEM;
                Knob probe = { .id = id, .path = path };
                k = pool_read(ctx->root, &probe, &cur);
                if (k == -ENOENT)
                        return plan_fail_item(ctx, "/hugepages/pages", s.entry[i], "size",
                                              "node %u has no pool of %s pages (no %s)", p->node, size, path);
                if (k < 0)
                        return k;
                (void) hugepages_parse_count(cur, &current[i]);
                Knob *kn;
                k = plan_add(ctx, id, VALUE_AUTO, path, cur, want, /* reboot= */ p->boot, &kn);
                if (k < 0)
                        return k;
                if (p->boot &&
                    asprintf(&kn->note,
                             "what the kernel cannot give now, it reserves at the next boot (boot/hugepages)") < 0)
                        return -ENOMEM;
        }
        return plan_memory(ctx, &s, current);
}

static char *hugepages_heading(json_t *host) {
        return strdup("hugepages (huge page pools per NUMA node, nodeN/hugepages/hugepages-SIZEkB/nr_hugepages)");
}

const Backend backend_hugepages = {
        .domain = DOMAIN_HUGEPAGES,
        .name = "hugepages",
        .schema = &hugepages_section,
        .check = hugepages_check,
        .plan = hugepages_plan,
        .read = pool_read,
        .write = pool_write,
        .watch = pool_watch,
        .heading = hugepages_heading,
        .knob_noun = "huge page pool",
};
