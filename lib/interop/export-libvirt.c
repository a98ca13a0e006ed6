/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export-internal.h"
#include "strv.h"

/* A realtime guest's elements, as libvirt's kvm-realtime guide asks for them: every vCPU pinned
 * to a CPU of its own and run SCHED_FIFO, the emulator and I/O threads on housekeeping CPUs, the
 * L3 ways the profile keeps for guests, memory strict on the vCPUs' nodes in locked huge pages,
 * guest NUMA cells where the vCPUs span nodes, the host's CPU passed through with its TSC
 * deadline timer, no PMU, no memory balloon. In a domain (--domain), what those elements replace
 * is kept where it does not get in the way and named in a note where it does. */

_printf_(2, 3) static int note(ExportElements *e, const char *fmt, ...) {
        char *m = NULL;
        va_list ap;
        va_start(ap, fmt);
        int k = vasprintf(&m, fmt, ap);
        va_end(ap);
        return k < 0 ? -ENOMEM : strv_push(&e->notes, m);
}

/* An element as written with the whitespace between its tags taken out, so that the same
 * element indented otherwise compares equal. */
static char *squeeze(const char *s) {
        StrBuf b = {};
        strbuf_append(&b, "");
        for (const char *p = s; p && *p; p++) {
                if (isspace((unsigned char) *p)) {
                        const char *q = p;
                        while (isspace((unsigned char) *q))
                                q++;
                        if ((p == s || p[-1] == '>') && (*q == '<' || *q == 0)) {
                                p = q - 1;
                                continue;
                        }
                }
                strbuf_appendf(&b, "%c", *p);
        }
        return strbuf_steal(&b);
}

static bool same_elements(char * const *theirs, const char *ours) {
        StrBuf b = {};
        strbuf_append(&b, "");
        for (char * const *t = theirs; t && *t; t++)
                strbuf_append(&b, *t);
        _cleanup_free_ char *all = strbuf_steal(&b), *a = squeeze(all), *o = squeeze(ours);
        return a && o && streq(a, o);
}

/* "<vcpupin> ×4, <emulatorpin>": the names of elements as written. */
static char *element_names(char * const *elems) {
        StrBuf b = {};
        strbuf_append(&b, "");
        for (char * const *t = elems; t && *t; t++) {
                const char *n = *t + 1;
                size_t len = strcspn(n, " \t\r\n/>"), same = 1;
                bool seen = false;
                for (char * const *u = elems; u < t && !seen; u++)
                        seen = strncmp(*u + 1, n, len) == 0 && strchr(" \t\r\n/>", (*u)[1 + len]);
                if (seen)
                        continue;
                for (char * const *u = t + 1; *u; u++)
                        same += strncmp(*u + 1, n, len) == 0 && strchr(" \t\r\n/>", (*u)[1 + len]);
                strbuf_appendf(&b, "%s<%.*s>", b.len ? ", " : "", (int) len, n);
                if (same > 1)
                        strbuf_appendf(&b, " ×%zu", same);
        }
        return strbuf_steal(&b);
}

/* Each line of text with indent before it. */
static void append_indented(StrBuf *b, const char *text, const char *indent) {
        for (const char *l = text; l && *l;) {
                const char *nl = strchrnul(l, '\n');
                strbuf_appendf(b, "%s%.*s\n", indent, (int) (nl - l), l);
                l = *nl ? nl + 1 : nl;
        }
}

static void append_vcpus(StrBuf *b, unsigned n) {
        if (n == 1)
                strbuf_append(b, "0");
        else
                strbuf_appendf(b, "0-%u", n - 1);
}

/* ---- <vcpu> ---- */

/* What a domain's <vcpu cpuset> held that the pins do not. */
static int note_vcpu_cpuset(const Host *h, const ExportSplit *s, const ExportDomain *d, const CpuSet *old,
                            const CpuSet *pinned, const char *set, ExportElements *e) {
        CpuSet hk = *old, gone = *old, other = *old;
        cpu_set_and(&hk, &s->housekeeping);
        cpu_set_andnot(&gone, &h->online);
        cpu_set_andnot(&other, &hk);
        cpu_set_andnot(&other, &gone);
        cpu_set_andnot(&other, pinned);
        _cleanup_free_ char *a = cpu_set_format_list(&hk), *b = cpu_set_format_list(&gone),
                            *c = cpu_set_format_list(&other);
        static const char * const pre[3] = { "housekeeping CPUs ", "CPUs this host does not have (",
                                             "CPUs none of its vCPUs is pinned to (" },
                                  * const post[3] = { ", which the guest must stay off", ")", ")" };
        const char *sets[3] = { a, b, c };
        StrBuf held = {};
        size_t n = 0;

        if (!a || !b || !c)
                return -ENOMEM;
        for (size_t i = 0; i < 3; i++)
                n += *sets[i] != 0;
        strbuf_append(&held, "");
        for (size_t i = 0, j = 0; i < 3; i++) {
                if (!*sets[i])
                        continue;
                strbuf_append(&held, j == 0 ? ": it held " : j + 1 == n ? " and " : ", ");
                strbuf_appendf(&held, "%s%s%s", pre[i], sets[i], post[i]);
                j++;
        }
        _cleanup_free_ char *w = strbuf_steal(&held);
        if (!w)
                return -ENOMEM;
        return note(e, "<vcpu cpuset='%s'> becomes cpuset='%s', the CPUs its vCPUs are pinned to (<vcpupin>)%s",
                    d->vcpu_cpuset, set, w);
}

static int make_vcpu(const Host *h, const ExportSplit *s, const ExportReservation *r, const ExportDomain *d,
                     const CpuSet *pinned, ExportElements *e) {
        _cleanup_free_ char *set = cpu_set_format_list(pinned);
        CpuSet old = {};
        int k = 0;

        if (!set ||
            asprintf(&e->part[EXPORT_PART_VCPU], "<vcpu placement='static' cpuset='%s'%s>%u</vcpu>\n", set,
                     d ? strempty(d->vcpu_attrs) : "", r->n_vcpus) < 0)
                return -ENOMEM;
        if (!d || !d->at[EXPORT_PART_VCPU].found)
                return 0;
        bool same_set =
                d->vcpu_cpuset && cpu_set_parse_list(d->vcpu_cpuset, &old, NULL) >= 0 && cpu_set_equal(&old, pinned);
        if (same_set && d->vcpu_placement && streq(d->vcpu_placement, "static")) {
                e->keep[EXPORT_PART_VCPU] = true;
                return 0;
        }
        if (d->vcpu_placement && !streq(d->vcpu_placement, "static"))
                k = note(e,
                         "<vcpu placement='%s'> becomes placement='static': numad's placement would move the vCPUs "
                         "off their pins",
                         d->vcpu_placement);
        if (k < 0 || !d->vcpu_cpuset || same_set)
                return k;
        return note_vcpu_cpuset(h, s, d, &old, pinned, set, e);
}

/* ---- <cputune> ---- */

/* Why a guest of this split has no <cachetune>. */
static int note_no_cachetune(const Host *h, const ExportSplit *s, const ExportReservation *r, ExportElements *e) {
        if (s->cat && r->cache_ways == 0)
                return note(e,
                            "no <cachetune>: on the L3 caches the vCPUs use, the profile's resctrl groups and the "
                            "default group hold every way (%s), so libvirt has none to make the guest's group of; keep "
                            "ways for guests with cat.guests.l3 in the profile (rtpart.profile(5))",
                            strempty(s->holders));
        if (s->cat || !(h->resctrl.l3.present || h->resctrl.cdp))
                return 0;
        return note(e,
                    "no <cachetune>: the profile gives the L3 cache no resctrl groups, so the default group holds "
                    "every way and libvirt has none for a guest; keep ways for guests with cat.guests.l3 in the "
                    "profile (rtpart.profile(5))");
}

/* One <cache> of the guest's <cachetune>: its share of the ways free on cache c. */
static int cachetune_entry(const ExportReservation *r, const ExportCacheFree *c, ExportElements *e, StrBuf *b) {
        unsigned run = export_largest_run(c->ways), ways = MIN(r->cache_ways, run);
        if (c->way_kib == 0)
                return note(e,
                            "no <cache id='%u'> in <cachetune>: the size of L3 cache %u is unknown "
                            "(/sys/devices/system/cpu/cpuN/cache/index3/size of its CPUs is missing or not a size such "
                            "as \"32768K\"), so its ways cannot be given in KiB; add the element by hand (%u ways "
                            "times the cache size over the ways of info/L3/cbm_mask)",
                            c->id, c->id, r->cache_ways);
        if (ways < c->min_ways)
                return note(e,
                            "no <cache id='%u'> in <cachetune>: cache %u has %u contiguous ways free (%s), fewer "
                            "than the %u the guest needs",
                            c->id, c->id, run, c->type, MAX(r->cache_ways, c->min_ways));
        if (ways < r->cache_ways) {
                int k = note(
                        e,
                        "<cache id='%u'> in <cachetune> has %u ways, not %u: cache %u has no more contiguous ways free",
                        c->id, ways, r->cache_ways, c->id);
                if (k < 0)
                        return k;
        }
        strbuf_appendf(b, "%s<cache id='%u' level='3' type='%s' size='%llu' unit='KiB'/>\n", e->step, c->id, c->type,
                       (unsigned long long) ways * c->way_kib);
        return 1;
}

/* <cachetune> for the guest's ways on each cache its vCPUs use, <memorytune> for its bandwidth. */
static int make_cache_tune(const Host *h, const ExportSplit *s, const ExportReservation *r, ExportElements *e,
                           StrBuf *b) {
        StrBuf c = {};
        int any = 0, k = 0;

        strbuf_append(&c, "");
        for (size_t i = 0; r->cache_ways > 0 && i < s->n_caches && k >= 0; i++)
                if (export_cache_used(h, &s->caches[i], r)) {
                        k = cachetune_entry(r, &s->caches[i], e, &c);
                        any += k > 0;
                }
        _cleanup_free_ char *caches = strbuf_steal(&c);
        if (k < 0 || !caches)
                return -ENOMEM;
        if (any) {
                strbuf_append(b, "<cachetune vcpus='");
                append_vcpus(b, r->n_vcpus);
                strbuf_appendf(b, "'>\n%s</cachetune>\n", caches);
        } else if ((k = note_no_cachetune(h, s, r, e)) < 0)
                return k;
        if (s->guest_mb == 0 || !s->mb)
                return 0;
        strbuf_append(b, "<memorytune vcpus='");
        append_vcpus(b, r->n_vcpus);
        strbuf_append(b, "'>\n");
        for (size_t i = 0; i < h->n_l3; i++) {
                bool used = false;
                for (unsigned v = 0; v < r->n_vcpus; v++)
                        used = used || cpu_set_has(&h->l3[i].cpus, r->cpus[v]);
                if (used)
                        strbuf_appendf(b, "%s<node id='%u' bandwidth='%u'/>\n", e->step, h->l3[i].id, s->guest_mb);
        }
        strbuf_append(b, "</memorytune>\n");
        return 0;
}

/* The notes for what the domain's <cputune> had that the guest's does not. */
static int note_cputune(const ExportDomain *d, const char *ours, ExportElements *e) {
        int k = 0;
        if (d->cputune_dropped) {
                _cleanup_free_ char *names = element_names(d->cputune_dropped);
                k = note(e,
                         "<cputune>: %s dropped: they limit the vCPUs' CFS bandwidth, and the vCPUs run SCHED_FIFO "
                         "(<vcpusched>), which CFS bandwidth does not limit; a realtime vCPU has its CPU to itself",
                         strempty(names));
        }
        if (k < 0 || !d->cputune_replaced || same_elements(d->cputune_replaced, ours))
                return k;
        _cleanup_free_ char *names = element_names(d->cputune_replaced);
        return note(e, "<cputune>: its %s replaced by the guest's pins, scheduling and cache from the profile",
                    strempty(names));
}

static int make_cputune(const Host *h, const ExportSplit *s, const ExportReservation *r, const ExportDomain *d,
                        ExportElements *e) {
        _cleanup_free_ char *emu = cpu_set_format_list(&r->emulator);
        StrBuf own = {}, b = {};
        int k;

        if (!emu)
                return -ENOMEM;
        strbuf_append(&own, "");
        for (unsigned i = 0; i < r->n_vcpus; i++)
                strbuf_appendf(&own, "<vcpupin vcpu='%u' cpuset='%u'/>\n", i, r->cpus[i]);
        strbuf_appendf(&own, "<emulatorpin cpuset='%s'/>\n", emu);
        if (!d)
                strbuf_appendf(&own, "<iothreadpin iothread='1' cpuset='%s'/>\n", emu);
        for (size_t i = 0; d && i < d->n_iothreads; i++)
                strbuf_appendf(&own, "<iothreadpin iothread='%u' cpuset='%s'/>\n", d->iothreads[i], emu);
        strbuf_append(&own, "<vcpusched vcpus='");
        append_vcpus(&own, r->n_vcpus);
        strbuf_append(&own, "' scheduler='fifo' priority='1'/>\n");
        k = make_cache_tune(h, s, r, e, &own);
        _cleanup_free_ char *ours = strbuf_steal(&own);
        if (k < 0 || !ours)
                return -ENOMEM;
        if (d && (k = note_cputune(d, ours, e)) < 0)
                return k;

        strbuf_append(&b, "<cputune>\n");
        for (char **t = d ? d->cputune_keep : NULL; t && *t; t++)
                strbuf_appendf(&b, "%s%s\n", e->step, *t);
        append_indented(&b, ours, e->step);
        strbuf_append(&b, "</cputune>\n");
        e->part[EXPORT_PART_CPUTUNE] = strbuf_steal(&b);
        return e->part[EXPORT_PART_CPUTUNE] ? 0 : -ENOMEM;
}

/* ---- NUMA cells, <numatune>, <memoryBacking> ---- */

/* The guest's NUMA cells: one per host node when its vCPUs span several, each with the vCPUs on
 * that node and a share of the memory in proportion, whole pages each. */
typedef struct Cells {
        unsigned n;     /* cells rtpart writes; 0: none */
        unsigned total; /* cells the guest has: those, or the domain's own */
        unsigned node[64];
        uint64_t kib[64];
        char *cpus[64];
} Cells;

static void cells_done(Cells *c) {
        for (unsigned i = 0; i < c->n; i++)
                free(c->cpus[i]);
}

static unsigned node_of(const Host *h, unsigned cpu) {
        return cpu < h->n_cpu_ids && h->cpus[cpu].node >= 0 ? (unsigned) h->cpus[cpu].node : 0;
}

static int cells_make(const Host *h, const ExportReservation *r, const ExportDomain *d, uint64_t memory,
                      ExportElements *e, Cells *c) {
        unsigned k = cpu_set_count(&r->nodes), i = 0;
        uint64_t page = r->hugepage_kib ?: 4, units = memory / page, left = units;
        _cleanup_free_ char *nodes = cpu_set_format_list(&r->nodes);

        c->total = d ? d->cpu_cells : 0;
        if (k <= 1 || k > ELEMENTSOF(c->node))
                return 0;
        if (memory == 0)
                return note(e,
                            "no guest NUMA cells: the vCPUs span host nodes %s, and the guest's memory is not known; "
                            "give --memory SIZE (or --domain with its <memory>) to have one cell per node written "
                            "(<cpu><numa>); without them the guest sees one node and cannot keep its work near its "
                            "memory",
                            strempty(nodes));
        if (units < k)
                return note(e, "no guest NUMA cells: %llu KiB of memory do not make %u cells of whole %llu KiB pages",
                            (unsigned long long) memory, k, (unsigned long long) page);
        if (memory % page) {
                int q = note(e,
                             "the guest's memory (%llu KiB) is not a multiple of its %llu KiB huge pages: its NUMA "
                             "cells hold %llu KiB together, which libvirt takes as its memory",
                             (unsigned long long) memory, (unsigned long long) page,
                             (unsigned long long) (units * page));
                if (q < 0)
                        return q;
        }
        CPU_SET_FOREACH (n, &r->nodes) {
                CpuSet vcpus = {};
                for (unsigned v = 0; v < r->n_vcpus; v++)
                        if (node_of(h, r->cpus[v]) == (unsigned) n)
                                cpu_set_add(&vcpus, v);
                uint64_t share = i + 1 == k ? left : units * cpu_set_count(&vcpus) / r->n_vcpus;
                left -= share;
                c->node[i] = (unsigned) n;
                c->kib[i] = share * page;
                if (!(c->cpus[i] = cpu_set_format_list(&vcpus)))
                        return -ENOMEM;
                c->n = ++i;
        }
        c->total = c->n;
        return 0;
}

static int make_numatune(const Host *h, const ExportReservation *r, const ExportDomain *d, const Cells *c,
                         ExportElements *e) {
        _cleanup_free_ char *nodes = cpu_set_format_list(&r->nodes);
        StrBuf b = {};

        if (!nodes)
                return -ENOMEM;
        if (!h->numa)
                return d && d->numatune ? note(e, "<numatune> removed: this host has no NUMA nodes") : 0;
        strbuf_appendf(&b, "<numatune>\n%s<memory mode='strict' nodeset='%s'/>\n", e->step, nodes);
        for (unsigned i = 0; i < c->n; i++)
                strbuf_appendf(&b, "%s<memnode cellid='%u' mode='strict' nodeset='%u'/>\n", e->step, i, c->node[i]);
        strbuf_append(&b, "</numatune>\n");
        e->part[EXPORT_PART_NUMATUNE] = strbuf_steal(&b);
        if (!e->part[EXPORT_PART_NUMATUNE])
                return -ENOMEM;
        if (!d || !d->numatune)
                return 0;
        _cleanup_free_ char *a = squeeze(d->numatune), *o = squeeze(e->part[EXPORT_PART_NUMATUNE]);
        if (!a || !o)
                return -ENOMEM;
        return streq(a, o)
                ? 0
                : note(e, "<numatune> replaced: the guest's memory is strict on node %s, where its vCPUs run", nodes);
}

/* Whether the pools of the guest's nodes hold its memory (per cell, or all of it on its node). */
static int note_pools(const ExportSplit *s, const ExportReservation *r, uint64_t memory, const Cells *c,
                      ExportElements *e) {
        for (unsigned i = 0; i < (c->n ?: 1) && memory && r->hugepage_kib; i++) {
                unsigned node = c->n ? c->node[i] : (unsigned) cpu_set_next(&r->nodes, 0);
                uint64_t need = c->n ? c->kib[i] : memory, have = 0;
                for (size_t p = 0; p < s->huge.n_pools; p++)
                        if (s->huge.pools[p].node == node && s->huge.pools[p].size_kb == r->hugepage_kib)
                                have = s->huge.pools[p].count * r->hugepage_kib;
                if (need <= have)
                        continue;
                int k = note(e,
                             "node %u holds %llu KiB of %llu KiB huge pages, less than the %llu KiB of the guest's "
                             "memory there: the guest does not start until %s reserves more",
                             node, (unsigned long long) have, (unsigned long long) r->hugepage_kib,
                             (unsigned long long) need,
                             s->huge.from_profile ? "the profile's hugepages section" : "the host");
                if (k < 0)
                        return k;
        }
        return 0;
}

static int make_memory_backing(const ExportSplit *s, const ExportReservation *r, const ExportDomain *d, const Cells *c,
                               ExportElements *e) {
        _cleanup_free_ char *nodes = cpu_set_format_list(&r->nodes);
        StrBuf own = {}, b = {};
        int k = 0;

        strbuf_append(&own, "");
        if (r->hugepage_kib) {
                strbuf_appendf(&own, "<hugepages>\n%s<page size='%llu' unit='KiB'", e->step,
                               (unsigned long long) r->hugepage_kib);
                if (c->total > 1)
                        strbuf_appendf(&own, " nodeset='0-%u'", c->total - 1);
                else if (c->total == 1)
                        strbuf_append(&own, " nodeset='0'");
                strbuf_append(&own, "/>\n</hugepages>\n");
        } else
                k = note(e,
                         "no huge pages back the guest's memory: %s %s %s none %s; a realtime guest's memory "
                         "belongs in locked huge pages: reserve them with the profile's hugepages section "
                         "(rtpart.profile(5))",
                         cpu_set_count(&r->nodes) > 1 ? "nodes" : "node", strempty(nodes),
                         cpu_set_count(&r->nodes) > 1 ? "hold" : "holds",
                         s->huge.from_profile ? "of the profile's hugepages section" : "on this host");
        strbuf_append(&own, "<locked/>\n<nosharepages/>\n");
        _cleanup_free_ char *ours = strbuf_steal(&own);
        if (k < 0 || !ours)
                return -ENOMEM;
        if (d && d->memory_replaced && !same_elements(d->memory_replaced, ours)) {
                _cleanup_free_ char *names = element_names(d->memory_replaced);
                if ((k = note(e, "<memoryBacking>: its %s replaced by the guest's huge pages, locked and unshared",
                              strempty(names))) < 0)
                        return k;
        }
        strbuf_append(&b, "<memoryBacking>\n");
        append_indented(&b, ours, e->step);
        for (char **t = d ? d->memory_keep : NULL; t && *t; t++)
                strbuf_appendf(&b, "%s%s\n", e->step, *t);
        strbuf_append(&b, "</memoryBacking>\n");
        e->part[EXPORT_PART_MEMORY_BACKING] = strbuf_steal(&b);
        return e->part[EXPORT_PART_MEMORY_BACKING] ? 0 : -ENOMEM;
}

/* ---- <cpu>, <pmu/>, <memballoon/> ---- */

/* The topology of the pins: one socket of n cores, or n/2 cores of two threads where the vCPUs
 * come in SMT sibling pairs. */
static void append_topology(const Host *h, const ExportReservation *r, StrBuf *b) {
        bool pairs = r->n_vcpus % 2 == 0;
        for (unsigned v = 0; pairs && v < r->n_vcpus; v += 2) {
                unsigned a = r->cpus[v], c = r->cpus[v + 1];
                pairs = a < h->n_cpu_ids && c < h->n_cpu_ids && h->cpus[a].core >= 0 &&
                        h->cpus[a].core == h->cpus[c].core;
        }
        strbuf_appendf(b, "<topology sockets='1' dies='1' cores='%u' threads='%u'/>\n",
                       pairs ? r->n_vcpus / 2 : r->n_vcpus, pairs ? 2 : 1);
}

static int note_cpu(const ExportDomain *d, const ExportReservation *r, ExportElements *e) {
        int k = 0;
        if (d->at[EXPORT_PART_CPU].found && !(d->cpu_mode && streq(d->cpu_mode, "host-passthrough")))
                k = note(e,
                         "<cpu mode='%s'> becomes mode='host-passthrough': the guest gets the host's CPU unchanged, "
                         "its TSC deadline timer with it",
                         d->cpu_mode ?: "custom");
        if (k >= 0 && d->cpu_dropped) {
                _cleanup_free_ char *names = element_names(d->cpu_dropped);
                k = note(e, "<cpu>: its %s dropped: host-passthrough takes the host's", strempty(names));
        }
        if (k >= 0 && d->cpu_topology && d->cpu_topology_vcpus != r->n_vcpus)
                k = note(e, "<cpu>: its <topology> makes %u vCPUs, not %u: replaced by one socket of the pinned cores",
                         d->cpu_topology_vcpus, r->n_vcpus);
        return k;
}

/* tsc-deadline: required where the host's CPUs have the timer. */
static int append_tsc(const ExportSplit *s, const ExportDomain *d, ExportElements *e, StrBuf *b) {
        static const char ours[] = "<feature policy='require' name='tsc-deadline'/>";
        const char *theirs = d ? d->cpu_tsc : NULL;

        if (s->tsc_deadline) {
                strbuf_appendf(b, "%s\n", ours);
                if (!theirs)
                        return 0;
                _cleanup_free_ char *t = squeeze(theirs);
                return t && streq(t, ours)
                        ? 0
                        : note(e, "<cpu>: its %.*s becomes %s", (int) strcspn(theirs, "\n"), theirs, ours);
        }
        if (theirs && (strstr(theirs, "require") || strstr(theirs, "force")))
                return note(e,
                            "<cpu>: its %.*s dropped: this host's CPUs have no TSC deadline timer (no "
                            "tsc_deadline_timer in /proc/cpuinfo), so a guest that requires it does not start",
                            (int) strcspn(theirs, "\n"), theirs);
        if (theirs)
                strbuf_appendf(b, "%.*s\n", (int) strcspn(theirs, "\n"), theirs);
        return note(e,
                    "no tsc-deadline feature required: this host's CPUs have no TSC deadline timer (no "
                    "tsc_deadline_timer in /proc/cpuinfo); the guest's timer interrupts go through the slower "
                    "APIC timer modes");
}

static int make_cpu(const Host *h, const ExportSplit *s, const ExportReservation *r, const ExportDomain *d,
                    const Cells *c, ExportElements *e) {
        StrBuf own = {}, b = {};
        int k = d ? note_cpu(d, r, e) : 0;

        strbuf_append(&own, "");
        if (d && d->cpu_topology && d->cpu_topology_vcpus == r->n_vcpus)
                strbuf_append(&own, d->cpu_topology);
        else
                append_topology(h, r, &own);
        for (char **t = d ? d->cpu_keep : NULL; t && *t; t++)
                strbuf_appendf(&own, "%s\n", *t);
        if (k >= 0)
                k = append_tsc(s, d, e, &own);
        if (c->n > 0) {
                strbuf_append(&own, "<numa>\n");
                for (unsigned i = 0; i < c->n; i++)
                        strbuf_appendf(&own, "%s<cell id='%u' cpus='%s' memory='%llu' unit='KiB'/>\n", e->step, i,
                                       c->cpus[i], (unsigned long long) c->kib[i]);
                strbuf_append(&own, "</numa>\n");
                if (k >= 0 && d && d->cpu_numa)
                        k = note(e, "<cpu>: its <numa> replaced by one cell per host node the vCPUs run on");
        } else if (d && d->cpu_numa)
                strbuf_append(&own, d->cpu_numa);
        _cleanup_free_ char *ours = strbuf_steal(&own);
        if (k < 0 || !ours)
                return -ENOMEM;
        strbuf_appendf(&b, "<cpu mode='host-passthrough'%s>\n", d && d->cpu_attrs ? d->cpu_attrs : "");
        append_indented(&b, ours, e->step);
        strbuf_append(&b, "</cpu>\n");
        e->part[EXPORT_PART_CPU] = strbuf_steal(&b);
        return e->part[EXPORT_PART_CPU] ? 0 : -ENOMEM;
}

static int make_features(const ExportDomain *d, ExportElements *e) {
        int k = 0;
        if (d && d->pmu_off)
                e->keep[EXPORT_PART_PMU] = true;
        else if (!(e->part[EXPORT_PART_PMU] = strdup("<pmu state='off'/>\n")))
                return -ENOMEM;
        else if (d && d->pmu)
                k = note(e,
                         "<features>: its %.*s becomes <pmu state='off'/>: a virtual PMU's counters are saved and "
                         "restored at the guest's exits, time its realtime vCPUs lose",
                         (int) strcspn(d->pmu, "\n"), d->pmu);
        if (k < 0)
                return k;
        if (d && d->memballoon_none) {
                e->keep[EXPORT_PART_MEMBALLOON] = true;
                return 0;
        }
        if (!(e->part[EXPORT_PART_MEMBALLOON] = strdup("<memballoon model='none'/>\n")))
                return -ENOMEM;
        if (d && d->memballoon)
                return note(e,
                            "<devices>: its <memballoon> becomes <memballoon model='none'/>: a balloon takes the "
                            "guest's memory back and gives it again, which locked huge pages rule out and a realtime "
                            "guest cannot wait for");
        return 0;
}

int export_libvirt_elements(const Host *h, const ExportSplit *s, const ExportReservation *r, const ExportXmlOptions *o,
                            ExportElements *ret) {
        _cleanup_(export_elements_done) ExportElements e = {};
        _cleanup_(cells_done) Cells cells = {};
        const ExportDomain *d = o->domain;
        uint64_t memory = o->memory_kib ?: d ? d->memory_kib : 0;
        CpuSet pinned = {};
        int k;

        snprintf(e.step, sizeof(e.step), "%s", d && strlen(d->step) < sizeof(e.step) ? d->step : "  ");
        for (unsigned v = 0; v < r->n_vcpus; v++)
                cpu_set_add(&pinned, r->cpus[v]);
        k = make_vcpu(h, s, r, d, &pinned, &e);
        if (k >= 0 && !d && !(e.part[EXPORT_PART_IOTHREADS] = strdup("<iothreads>1</iothreads>\n")))
                k = -ENOMEM;
        if (k >= 0)
                k = make_cputune(h, s, r, d, &e);
        if (k >= 0)
                k = cells_make(h, r, d, memory, &e, &cells);
        if (k >= 0)
                k = make_numatune(h, r, d, &cells, &e);
        if (k >= 0)
                k = make_memory_backing(s, r, d, &cells, &e);
        if (k >= 0)
                k = note_pools(s, r, memory, &cells, &e);
        if (k >= 0)
                k = make_cpu(h, s, r, d, &cells, &e);
        if (k >= 0)
                k = make_features(d, &e);
        if (k < 0)
                return k;
        *ret = e;
        e = (ExportElements) {};
        return 0;
}
