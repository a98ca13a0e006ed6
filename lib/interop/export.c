/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "macro.h"
#include "resctrl.h"
#include "strv.h"

static const char * const siblings_names[_EXPORT_SIBLINGS_MAX] = {
        [EXPORT_SIBLINGS_APART] = "apart",
        [EXPORT_SIBLINGS_TOGETHER] = "together",
};

const char *export_siblings_to_string(ExportSiblings s) {
        return s >= 0 && s < _EXPORT_SIBLINGS_MAX ? siblings_names[s] : NULL;
}

ExportSiblings export_siblings_from_string(const char *s) {
        for (int i = 0; s && i < _EXPORT_SIBLINGS_MAX; i++)
                if (streq(siblings_names[i], s))
                        return (ExportSiblings) i;
        return _EXPORT_SIBLINGS_INVALID;
}

void export_split_done(ExportSplit *s) {
        for (size_t i = 0; i < s->n_groups; i++) {
                free(s->groups[i].name);
                free(s->groups[i].caches);
        }
        free(s->groups);
        strv_free(s->notes);
        *s = (ExportSplit) {};
}

/* ---- the split, from the plan ---- */

/* The size of L3 cache `id` in KiB, from the sysfs of one of its CPUs ("11264K"); 0 if unknown,
 * with the file that says it in ret_file (NULL when no CPU of the host has that cache). */
static uint64_t l3_size_kib(Root *root, const Host *h, unsigned id, char **ret_file) {
        CpuSet cpus;
        *ret_file = NULL;
        if (!host_l3_cpus(h, id, &cpus) || cpu_set_is_empty(&cpus))
                return 0;
        _cleanup_free_ char *v = NULL;
        if (asprintf(ret_file, "/sys/devices/system/cpu/cpu%d/cache/index3/size", cpu_set_next(&cpus, 0)) < 0) {
                *ret_file = NULL;
                return 0;
        }
        if (root_read_line(root, *ret_file + 1, &v) < 0)
                return 0;
        char *end;
        unsigned long long n = strtoull(v, &end, 10);
        if (end == v)
                return 0;
        if (*end == 'M')
                n *= 1024;
        else if (*end != 'K')
                return 0;
        return n;
}

static ExportCatGroup *group_get(ExportSplit *s, const char *name, size_t len) {
        for (size_t i = 0; i < s->n_groups; i++)
                if (strlen(s->groups[i].name) == len && strncmp(s->groups[i].name, name, len) == 0)
                        return &s->groups[i];
        ExportCatGroup *n = realloc(s->groups, (s->n_groups + 1) * sizeof(ExportCatGroup));
        if (!n)
                return NULL;
        s->groups = n;
        ExportCatGroup *g = &s->groups[s->n_groups];
        *g = (ExportCatGroup) { .name = strndup(name, len) };
        if (!g->name)
                return NULL;
        s->n_groups++;
        return g;
}

static int split_note(ExportSplit *s, const char *fmt, ...) _printf_(2, 3);
static int split_note(ExportSplit *s, const char *fmt, ...) {
        char *m = NULL;
        va_list ap;
        va_start(ap, fmt);
        int k = vasprintf(&m, fmt, ap);
        va_end(ap);
        return k < 0 ? -ENOMEM : strv_push(&s->notes, m);
}

/* 1 when cache id's size in the group can be told; else 0, after a note that says why not. */
static int cache_note(ExportSplit *s, const char *group, unsigned id, unsigned cbm_bits, uint64_t size,
                      const char *file) {
        if (cbm_bits == 0)
                return split_note(s,
                                  "no <cache id='%u'> in <cachetune> for resctrl group %s: the width of the L3 "
                                  "cache masks is unknown (/sys/fs/resctrl/info/L3/cbm_mask)",
                                  id, group);
        if (size == 0 && !file)
                return split_note(s,
                                  "no <cache id='%u'> in <cachetune> for resctrl group %s: no CPU of this host has "
                                  "L3 cache %u",
                                  id, group, id);
        if (size == 0)
                return split_note(s,
                                  "no <cache id='%u'> in <cachetune> for resctrl group %s: the size of L3 cache %u "
                                  "is unknown (%s is missing or not a size such as \"32768K\"), so its ways cannot "
                                  "be given in KiB; add the element by hand (the group's ways times the cache size "
                                  "divided by %u)",
                                  id, group, id, file, cbm_bits);
        return 1;
}

/* One knob of the plan's resctrl groups: "resctrl/G/cpus" or "resctrl/G/schemata/L3…". */
static int split_add_knob(Root *root, const Host *h, ExportSplit *s, const Knob *k) {
        if (!startswith(k->id, "resctrl/") || !k->desired)
                return 0;
        const char *rest = k->id + strlen("resctrl/");
        const char *slash = strchr(rest, '/');
        if (!slash || (slash - rest == 7 && strncmp(rest, "default", 7) == 0))
                return 0;
        const char *what = slash + 1, *type;
        if (streq(what, "schemata/L3"))
                type = "both";
        else if (streq(what, "schemata/L3CODE"))
                type = "code";
        else if (streq(what, "schemata/L3DATA"))
                type = "data";
        else if (streq(what, "cpus"))
                type = NULL;
        else
                return 0;

        ExportCatGroup *g = group_get(s, rest, (size_t) (slash - rest));
        if (!g)
                return -ENOMEM;
        if (!type) {
                (void) cpu_set_parse_list(k->desired, &g->cpus, NULL); /* unparsable: no CPUs, no cachetune */
                return 0;
        }

        const ResctrlResource *rr = streq(type, "both") ? &h->resctrl.l3
                : streq(type, "code")                   ? &h->resctrl.l3code
                                                        : &h->resctrl.l3data;
        for (const char *p = k->desired; *p;) {
                char *end;
                unsigned long id = strtoul(p, &end, 10);
                if (end == p || *end != '=')
                        break;
                uint64_t mask;
                const char *v = end + 1, *semi = strchrnul(v, ';');
                _cleanup_free_ char *m = strndup(v, (size_t) (semi - v));
                if (!m)
                        return -ENOMEM;
                _cleanup_free_ char *file = NULL;
                uint64_t size = l3_size_kib(root, h, (unsigned) id, &file);
                int known = cache_note(s, g->name, (unsigned) id, rr->cbm_bits, size, file);
                if (known < 0)
                        return known;
                if (resctrl_mask_parse(m, &mask) >= 0 && known > 0) {
                        ExportCache *c = realloc(g->caches, (g->n_caches + 1) * sizeof(ExportCache));
                        if (!c)
                                return -ENOMEM;
                        g->caches = c;
                        g->caches[g->n_caches++] = (ExportCache) {
                                .id = (unsigned) id,
                                .type = type,
                                .kib = (uint64_t) __builtin_popcountll(mask) * (size / rr->cbm_bits),
                        };
                }
                p = *semi ? semi + 1 : semi;
        }
        return 0;
}

/* The largest huge page size with pages reserved (sys/kernel/mm/hugepages/hugepages-SIZEkB). */
static uint64_t hugepage_kib(Root *root) {
        _cleanup_strv_free_ char **dirs = NULL;
        uint64_t best = 0;
        if (root_glob(root, "sys/kernel/mm/hugepages/hugepages-*kB", &dirs) < 0)
                return 0;
        for (char **d = dirs; d && *d; d++) {
                const char *base = strrchr(*d, '/');
                unsigned long long kib = strtoull((base ? base + 1 : *d) + strlen("hugepages-"), NULL, 10);
                unsigned n = 0;
                char path[512];
                snprintf(path, sizeof(path), "%s/nr_hugepages", *d);
                if (root_read_uint(root, path, &n) >= 0 && n > 0 && kib > best)
                        best = kib;
        }
        return best;
}

int export_split_from_plan(Root *root, const Host *h, const Plan *plan, const json_t *doc, ExportSplit *ret) {
        ExportSplit s = { .isolated = plan->isolated, .housekeeping = plan->housekeeping };
        const char *sib = json_string_value(json_object_get(json_object_get(doc, "cpus"), "vcpu_siblings"));
        int r = 0;

        s.siblings = sib ? export_siblings_from_string(sib) : EXPORT_SIBLINGS_APART;
        if (s.siblings < 0)
                s.siblings = EXPORT_SIBLINGS_APART; /* the schema allows no other value */
        for (size_t i = 0; i < plan->n_knobs; i++) {
                r = split_add_knob(root, h, &s, &plan->knobs[i]);
                if (r < 0) {
                        export_split_done(&s);
                        return r;
                }
        }
        /* Only groups that give the L3 cache a mask make a <cachetune>. */
        size_t w = 0;
        for (size_t i = 0; i < s.n_groups; i++) {
                ExportCatGroup *g = &s.groups[i];
                if (g->n_caches > 0 && !cpu_set_is_empty(&g->cpus)) {
                        s.groups[w++] = *g;
                        continue;
                }
                if (g->n_caches > 0 &&
                    split_note(&s, "no <cachetune> for resctrl group %s: the plan gives it no CPUs", g->name) < 0)
                        r = -ENOMEM;
                free(g->name);
                free(g->caches);
        }
        s.n_groups = w;
        if (r < 0) {
                export_split_done(&s);
                return r;
        }
        s.hugepage_kib = hugepage_kib(root);
        *ret = s;
        return 0;
}

/* ---- pinning ---- */

void export_pins_done(ExportPins *p) {
        free(p->cpus);
        *p = (ExportPins) {};
}

/* The CPUs vCPUs may take on one node, in the order they take them: cores in CPU number order;
 * per core its lowest isolated CPU (apart) or all its isolated CPUs (together). */
static unsigned node_slots(const Host *h, const ExportSplit *s, const CpuSet *node, unsigned *ret) {
        CpuSet cand = *node, cores = {};
        unsigned n = 0;
        cpu_set_and(&cand, &s->isolated);
        CPU_SET_FOREACH (c, &cand) {
                int core = (unsigned) c < h->n_cpu_ids && h->cpus[c].core >= 0 ? h->cpus[c].core : c;
                if (cpu_set_has(&cores, (unsigned) core))
                        continue;
                cpu_set_add(&cores, (unsigned) core);
                if (s->siblings == EXPORT_SIBLINGS_APART) {
                        if (ret)
                                ret[n] = (unsigned) c;
                        n++;
                        continue;
                }
                CPU_SET_FOREACH (t, &cand) {
                        int tc = (unsigned) t < h->n_cpu_ids && h->cpus[t].core >= 0 ? h->cpus[t].core : t;
                        if (tc != core)
                                continue;
                        if (ret)
                                ret[n] = (unsigned) t;
                        n++;
                }
        }
        return n;
}

int export_pin(const Host *h, const ExportSplit *s, unsigned n, ExportPins *ret, unsigned *ret_capacity) {
        CpuSet single = h->online;
        const CpuSet *nodes = h->numa && h->n_nodes > 0 ? h->nodes : &single;
        unsigned n_nodes = h->numa && h->n_nodes > 0 ? h->n_nodes : 1;
        _cleanup_free_ unsigned *room = calloc(n_nodes, sizeof(unsigned));
        _cleanup_free_ unsigned *order = calloc(n_nodes, sizeof(unsigned));
        unsigned total = 0, used = 0;

        if (!room || !order)
                return -ENOMEM;
        for (unsigned i = 0; i < n_nodes; i++) {
                room[i] = node_slots(h, s, &nodes[i], NULL);
                total += room[i];
                order[i] = i;
        }
        *ret_capacity = total;
        if (n == 0 || n > total)
                return -ENOSPC;

        /* One node when one has room; else the roomiest first (stable: lower ids first). */
        unsigned one = n_nodes;
        for (unsigned i = 0; i < n_nodes && one == n_nodes; i++)
                if (room[i] >= n)
                        one = i;
        if (one < n_nodes) {
                order[0] = one;
                used = 1;
        } else {
                for (unsigned i = 1; i < n_nodes; i++)
                        for (unsigned j = i; j > 0 && room[order[j]] > room[order[j - 1]]; j--) {
                                unsigned t = order[j];
                                order[j] = order[j - 1];
                                order[j - 1] = t;
                        }
                used = n_nodes;
        }

        ExportPins p = { .n_vcpus = n, .cpus = calloc(n, sizeof(unsigned)) };
        _cleanup_free_ unsigned *slots = calloc(CPU_SET_MAX, sizeof(unsigned));
        if (!p.cpus || !slots) {
                free(p.cpus);
                return -ENOMEM;
        }
        unsigned v = 0;
        for (unsigned i = 0; i < used && v < n; i++) {
                unsigned k = node_slots(h, s, &nodes[order[i]], slots);
                if (k == 0)
                        continue;
                cpu_set_add(&p.nodes, order[i]);
                CpuSet hk = nodes[order[i]];
                cpu_set_and(&hk, &s->housekeeping);
                cpu_set_or(&p.emulator, &hk);
                for (unsigned j = 0; j < k && v < n; j++)
                        p.cpus[v++] = slots[j];
        }
        if (cpu_set_is_empty(&p.emulator))
                p.emulator = s->housekeeping;

        CpuSet pinned = {};
        for (unsigned i = 0; i < n; i++)
                cpu_set_add(&pinned, p.cpus[i]);
        for (size_t i = 0; i < s->n_groups && !p.cat; i++)
                if (cpu_set_is_subset(&pinned, &s->groups[i].cpus))
                        p.cat = &s->groups[i];
        *ret = p;
        return 0;
}

/* ---- libvirt XML ---- */

static void append_vcpus(StrBuf *b, unsigned n) {
        if (n == 1)
                strbuf_append(b, "0");
        else
                strbuf_appendf(b, "0-%u", n - 1);
}

char *export_libvirt_xml(const Host *h, const ExportSplit *s, const ExportPins *p, const ExportXmlOptions *o) {
        const char *in = o->indent ? o->indent : "  ", *st = in[0] == '\t' ? "\t" : "  ";
        _cleanup_free_ char *emu = cpu_set_format_list(&p->emulator), *nodes = cpu_set_format_list(&p->nodes);
        StrBuf b = {};

        if (!emu || !nodes)
                return NULL;
        if (o->with_vcpu)
                strbuf_appendf(&b, "%s<vcpu placement='static'>%u</vcpu>\n", in, p->n_vcpus);
        if (o->with_iothread)
                strbuf_appendf(&b, "%s<iothreads>1</iothreads>\n", in);

        strbuf_appendf(&b, "%s<cputune>\n", in);
        for (unsigned i = 0; i < p->n_vcpus; i++)
                strbuf_appendf(&b, "%s%s<vcpupin vcpu='%u' cpuset='%u'/>\n", in, st, i, p->cpus[i]);
        strbuf_appendf(&b, "%s%s<emulatorpin cpuset='%s'/>\n", in, st, emu);
        if (o->with_iothread)
                strbuf_appendf(&b, "%s%s<iothreadpin iothread='1' cpuset='%s'/>\n", in, st, emu);
        for (size_t i = 0; i < o->n_iothreads; i++)
                strbuf_appendf(&b, "%s%s<iothreadpin iothread='%u' cpuset='%s'/>\n", in, st, o->iothreads[i], emu);
        strbuf_appendf(&b, "%s%s<vcpusched vcpus='", in, st);
        append_vcpus(&b, p->n_vcpus);
        strbuf_append(&b, "' scheduler='fifo' priority='1'/>\n");
        if (p->cat) {
                /* The caches the vCPUs run on, each as big as the profile's group has it there. */
                strbuf_appendf(&b, "%s%s<cachetune vcpus='", in, st);
                append_vcpus(&b, p->n_vcpus);
                strbuf_append(&b, "'>\n");
                for (size_t i = 0; i < p->cat->n_caches; i++) {
                        const ExportCache *c = &p->cat->caches[i];
                        CpuSet l3;
                        bool used = false;
                        if (host_l3_cpus(h, c->id, &l3))
                                for (unsigned v = 0; v < p->n_vcpus; v++)
                                        used = used || cpu_set_has(&l3, p->cpus[v]);
                        if (used)
                                strbuf_appendf(&b,
                                               "%s%s%s<cache id='%u' level='3' type='%s' size='%llu' unit='KiB'/>\n",
                                               in, st, st, c->id, c->type, (unsigned long long) c->kib);
                }
                strbuf_appendf(&b, "%s%s</cachetune>\n", in, st);
        }
        strbuf_appendf(&b, "%s</cputune>\n", in);

        if (h->numa)
                strbuf_appendf(&b, "%s<numatune>\n%s%s<memory mode='strict' nodeset='%s'/>\n%s</numatune>\n", in, in,
                               st, nodes, in);

        strbuf_appendf(&b, "%s<memoryBacking>\n", in);
        if (s->hugepage_kib > 0)
                strbuf_appendf(&b, "%s%s<hugepages>\n%s%s%s<page size='%llu' unit='KiB'/>\n%s%s</hugepages>\n", in, st,
                               in, st, st, (unsigned long long) s->hugepage_kib, in, st);
        strbuf_appendf(&b, "%s%s<locked/>\n", in, st);
        for (char * const *k = o->memory_keep; k && *k; k++)
                strbuf_appendf(&b, "%s%s%s\n", in, st, *k);
        strbuf_appendf(&b, "%s</memoryBacking>\n", in);
        return strbuf_steal(&b);
}

/* ---- nova and kubelet ---- */

char *export_nova(const ExportSplit *s, const char *profile) {
        _cleanup_free_ char *iso = cpu_set_format_list(&s->isolated), *hk = cpu_set_format_list(&s->housekeeping);
        char *out;
        if (!iso || !hk)
                return NULL;
        if (asprintf(&out,
                     "# The CPU split of profile %s on this host.\n"
                     "# nova.conf: dedicated (pinned, hw:cpu_policy=dedicated) guests on the isolated CPUs,\n"
                     "# emulator threads and shared guests on the housekeeping CPUs.\n"
                     "[compute]\n"
                     "cpu_dedicated_set = %s\n"
                     "cpu_shared_set = %s\n"
                     "\n"
                     "# kubelet (KubeletConfiguration, with cpuManagerPolicy: static): the housekeeping CPUs\n"
                     "# are the system's, the isolated ones go to Guaranteed pods.\n"
                     "reservedSystemCPUs: \"%s\"\n",
                     profile, iso, hk, hk) < 0)
                return NULL;
        return out;
}
