/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
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

/* ---- a domain document ---- */

void export_domain_done(ExportDomain *d) {
        free(d->iothreads);
        strv_free(d->memory_keep);
        free(d->indent);
        *d = (ExportDomain) {};
}

/* An element met while scanning, down to the domain's grandchildren. */
typedef struct XmlElement {
        const char *name;
        size_t len;
        size_t start, content, close, end; /* '<' of the start tag, after its '>', '<' of the end tag
                                            * (content for an empty element), after the end tag's '>' */
        size_t depth;                      /* 0: the root */
        const char *attrs;                 /* the start tag's attributes */
        size_t attrs_len;
} XmlElement;

typedef struct XmlScan {
        const char *text;
        size_t size, pos;
        XmlElement *elems;
        size_t n_elems;
        char *error;
} XmlScan;

static unsigned line_of(const char *text, size_t pos) {
        unsigned l = 1;
        for (size_t i = 0; i < pos; i++)
                l += text[i] == '\n';
        return l;
}

_printf_(3, 4) static int scan_fail(XmlScan *x, size_t at, const char *fmt, ...) {
        _cleanup_free_ char *m = NULL;
        va_list ap;
        va_start(ap, fmt);
        int k = vasprintf(&m, fmt, ap);
        va_end(ap);
        if (k < 0 || asprintf(&x->error, "line %u: %s", line_of(x->text, at), m) < 0)
                return -ENOMEM;
        return -EINVAL;
}

/* Skips past `end` from the current position; false when the text ends first. */
static bool skip_past(XmlScan *x, const char *end) {
        size_t l = strlen(end);
        for (; x->pos + l <= x->size; x->pos++)
                if (memcmp(x->text + x->pos, end, l) == 0) {
                        x->pos += l;
                        return true;
                }
        return false;
}

static bool is_name_char(char c) {
        return isalnum((unsigned char) c) || c == '_' || c == '-' || c == '.' || c == ':' || (unsigned char) c >= 0x80;
}

/* The whole document: every element's span checked against its end tag, the elements down to
 * depth 2 recorded. */
static int scan(XmlScan *x) {
        size_t stack[256], depth = 0;
        bool root_done = false;

        while (x->pos < x->size) {
                const char *t = x->text + x->pos;
                size_t at = x->pos, left = x->size - x->pos;
                if (*t != '<') {
                        if (depth == 0 && !isspace((unsigned char) *t))
                                return scan_fail(x, at, "text outside the root element");
                        x->pos++;
                        continue;
                }
                if (left >= 4 && memcmp(t, "<!--", 4) == 0) {
                        x->pos += 4;
                        if (!skip_past(x, "-->"))
                                return scan_fail(x, at, "comment not closed with -->");
                } else if (left >= 9 && memcmp(t, "<![CDATA[", 9) == 0) {
                        if (!skip_past(x, "]]>"))
                                return scan_fail(x, at, "CDATA section not closed with ]]>");
                } else if (left >= 2 && t[1] == '?') {
                        if (!skip_past(x, "?>"))
                                return scan_fail(x, at, "processing instruction not closed with ?>");
                } else if (left >= 2 && t[1] == '!') {
                        /* <!DOCTYPE …>, with an internal subset in brackets */
                        int brackets = 0;
                        for (x->pos++; x->pos < x->size; x->pos++) {
                                char c = x->text[x->pos];
                                if (c == '[')
                                        brackets++;
                                else if (c == ']')
                                        brackets--;
                                else if (c == '>' && brackets <= 0)
                                        break;
                        }
                        if (x->pos >= x->size)
                                return scan_fail(x, at, "declaration not closed with >");
                        x->pos++;
                } else {
                        bool closing = left >= 2 && t[1] == '/';
                        size_t ns = at + 1 + closing, ne = ns;
                        while (ne < x->size && is_name_char(x->text[ne]))
                                ne++;
                        if (ne == ns)
                                return scan_fail(x, at, "'<' starts no tag (write &lt; for a literal '<')");
                        /* Up to '>' outside quotes; XML allows no '<' in a tag, quoted or not. */
                        size_t p = ne;
                        char q = 0;
                        for (; p < x->size; p++) {
                                char c = x->text[p];
                                if (c == '<')
                                        return scan_fail(x, at, "'<' inside the tag <%.*s>", (int) (ne - ns),
                                                         x->text + ns);
                                if (q) {
                                        if (c == q)
                                                q = 0;
                                } else if (c == '"' || c == '\'')
                                        q = c;
                                else if (c == '>')
                                        break;
                        }
                        if (p >= x->size)
                                return scan_fail(x, at, "tag <%.*s> not closed with >", (int) (ne - ns), x->text + ns);
                        if (closing)
                                for (size_t k = ne; k < p; k++)
                                        if (!isspace((unsigned char) x->text[k]))
                                                return scan_fail(x, at, "%.*s> holds more than the element's name",
                                                                 (int) (p - at), x->text + at);
                        bool empty = !closing && x->text[p - 1] == '/';
                        x->pos = p + 1;
                        if (closing) {
                                if (depth == 0)
                                        return scan_fail(x, at, "</%.*s> closes no element", (int) (ne - ns),
                                                         x->text + ns);
                                XmlElement *open = &x->elems[stack[depth - 1]];
                                if (open->len != ne - ns || memcmp(open->name, x->text + ns, open->len) != 0)
                                        return scan_fail(x, at, "<%.*s> (line %u) closed by </%.*s>", (int) open->len,
                                                         open->name, line_of(x->text, open->start), (int) (ne - ns),
                                                         x->text + ns);
                                open->close = at;
                                open->end = x->pos;
                                depth--;
                                if (depth == 0)
                                        root_done = true;
                                continue;
                        }
                        if (root_done)
                                return scan_fail(x, at, "a second root element <%.*s>", (int) (ne - ns), x->text + ns);
                        if (depth >= ELEMENTSOF(stack))
                                return scan_fail(x, at, "elements nested deeper than %zu", ELEMENTSOF(stack));
                        XmlElement *n = realloc(x->elems, (x->n_elems + 1) * sizeof(XmlElement));
                        if (!n)
                                return -ENOMEM;
                        x->elems = n;
                        x->elems[x->n_elems] = (XmlElement) {
                                .name = x->text + ns,
                                .len = ne - ns,
                                .start = at,
                                .content = x->pos,
                                .close = x->pos,
                                .end = x->pos,
                                .depth = depth,
                                .attrs = x->text + ne,
                                .attrs_len = p - ne - empty,
                        };
                        if (empty) {
                                if (depth == 0)
                                        root_done = true;
                        } else
                                stack[depth++] = x->n_elems;
                        x->n_elems++;
                }
        }
        if (depth > 0) {
                XmlElement *open = &x->elems[stack[depth - 1]];
                return scan_fail(x, open->start, "<%.*s> is never closed", (int) open->len, open->name);
        }
        if (!root_done)
                return scan_fail(x, x->size, "no root element");
        return 0;
}

static bool elem_is(const XmlElement *e, const char *name) {
        return e->len == strlen(name) && memcmp(e->name, name, e->len) == 0;
}

/* The value of attribute `name` of a start tag, as a number; false when absent or not one. */
static bool attr_uint(const XmlElement *e, const char *name, unsigned *ret) {
        size_t l = strlen(name);
        for (size_t i = 0; i + l + 2 <= e->attrs_len; i++) {
                const char *a = e->attrs + i;
                if (!isspace((unsigned char) a[-1]) || memcmp(a, name, l) != 0)
                        continue;
                const char *v = a + l;
                while (isspace((unsigned char) *v))
                        v++;
                if (*v++ != '=')
                        continue;
                while (isspace((unsigned char) *v))
                        v++;
                if (*v != '\'' && *v != '"')
                        continue;
                char *end;
                unsigned long n = strtoul(v + 1, &end, 10);
                if (end == v + 1 || *end != *v)
                        return false;
                *ret = (unsigned) n;
                return true;
        }
        return false;
}

/* The text of an element as a number ("  4 "); false when it is none. */
static bool content_uint(const char *text, const XmlElement *e, unsigned *ret) {
        if (e->end <= e->content)
                return false;
        _cleanup_free_ char *s = strndup(text + e->content, e->end - e->content);
        if (!s)
                return false;
        char *end;
        unsigned long n = strtoul(s, &end, 10);
        while (isspace((unsigned char) *end))
                end++;
        if (end == s || *end != '<')
                return false;
        *ret = (unsigned) n;
        return true;
}

/* The start of the line of pos when only blanks precede it there, else pos. */
static size_t line_start(const char *text, size_t pos) {
        size_t p = pos;
        while (p > 0 && (text[p - 1] == ' ' || text[p - 1] == '\t'))
                p--;
        return p == 0 || text[p - 1] == '\n' ? p : pos;
}

/* After the newline that ends the line of pos when only blanks follow it there, else pos. */
static size_t line_end(const char *text, size_t size, size_t pos) {
        size_t p = pos;
        while (p < size && (text[p] == ' ' || text[p] == '\t' || text[p] == '\r'))
                p++;
        return p < size && text[p] == '\n' ? p + 1 : p == size ? p : pos;
}

int export_domain_parse(const char *text, size_t size, ExportDomain *ret, char **ret_error) {
        _cleanup_(export_domain_done) ExportDomain d = { .text = text, .size = size };
        XmlScan x = { .text = text, .size = size };
        int r;

        *ret_error = NULL;
        if (memchr(text, 0, size)) {
                *ret_error = strdup("the file holds a NUL byte: it is no XML text");
                return *ret_error ? -EINVAL : -ENOMEM;
        }
        r = scan(&x);
        if (r >= 0 && !elem_is(&x.elems[0], "domain"))
                r = scan_fail(&x, x.elems[0].start, "the root element is <%.*s>, not <domain>", (int) x.elems[0].len,
                              x.elems[0].name);
        if (r < 0) {
                free(x.elems);
                *ret_error = x.error;
                return r;
        }

        const XmlElement *domain = &x.elems[0], *vcpu = NULL, *first = NULL;
        if (domain->end == domain->content)
                r = scan_fail(&x, domain->start, "<domain/> is empty: a domain needs at least <name> and <os>");
        size_t parent = 0;
        for (size_t i = 1; r >= 0 && i < x.n_elems; i++) {
                const XmlElement *e = &x.elems[i];
                if (e->depth == 1) {
                        parent = i;
                        if (!first)
                                first = e;
                        if (elem_is(e, "vcpu")) {
                                vcpu = e;
                                if (!content_uint(text, e, &d.vcpus))
                                        r = scan_fail(&x, e->start, "<vcpu> holds no number of vCPUs");
                        } else if (elem_is(e, "iothreads") && d.n_iothreads == 0) {
                                unsigned n = 0;
                                if (!content_uint(text, e, &n) || n > 4096)
                                        r = scan_fail(&x, e->start, "<iothreads> holds no number of I/O threads");
                                else if (n > 0 && !(d.iothreads = calloc(n, sizeof(unsigned))))
                                        r = -ENOMEM;
                                for (unsigned k = 0; r >= 0 && k < n; k++)
                                        d.iothreads[d.n_iothreads++] = k + 1;
                        } else if (elem_is(e, "cputune") || elem_is(e, "numatune") || elem_is(e, "memoryBacking")) {
                                if (d.n_remove >= ELEMENTSOF(d.remove))
                                        r = scan_fail(&x, e->start, "too many <%.*s> elements", (int) e->len, e->name);
                                else {
                                        d.remove[d.n_remove].start = line_start(text, e->start);
                                        d.remove[d.n_remove].end = line_end(text, size, e->end);
                                        d.n_remove++;
                                }
                        }
                } else if (e->depth == 2 && elem_is(&x.elems[parent], "iothreadids") && elem_is(e, "iothread")) {
                        /* <iothreadids> names the ids; they replace the 1…N of <iothreads>. */
                        unsigned id;
                        if (!attr_uint(e, "id", &id))
                                r = scan_fail(&x, e->start, "<iothread> without a numeric id");
                        else {
                                if (elem_is(&x.elems[parent], "iothreadids") && x.elems[parent + 1].start == e->start)
                                        d.n_iothreads = 0; /* the first of the list */
                                unsigned *n = realloc(d.iothreads, (d.n_iothreads + 1) * sizeof(unsigned));
                                if (!n)
                                        r = -ENOMEM;
                                else {
                                        d.iothreads = n;
                                        d.iothreads[d.n_iothreads++] = id;
                                }
                        }
                } else if (e->depth == 2 && elem_is(&x.elems[parent], "memoryBacking") && !elem_is(e, "hugepages") &&
                           !elem_is(e, "locked")) {
                        _cleanup_free_ char *keep = strndup(text + e->start, e->end - e->start);
                        if (!keep || strv_extend(&d.memory_keep, keep) < 0)
                                r = -ENOMEM;
                }
        }
        if (r < 0) {
                free(x.elems);
                *ret_error = x.error;
                return r;
        }

        /* The children's indent: that of the first child on a line of its own. */
        size_t ls = first ? line_start(text, first->start) : 0;
        if (first && ls != first->start)
                d.indent = strndup(text + ls, first->start - ls);
        else
                d.indent = strdup("  ");
        if (!d.indent) {
                free(x.elems);
                return -ENOMEM;
        }
        /* Where the first element replaced was; else after <vcpu>; else before </domain>. */
        if (d.n_remove > 0)
                d.insert_at = d.remove[0].start;
        else if (vcpu)
                d.insert_at = line_end(text, size, vcpu->end);
        else
                d.insert_at = line_start(text, domain->close);
        free(x.elems);
        *ret = d;
        d = (ExportDomain) {};
        return 0;
}

char *export_domain_merge(const ExportDomain *d, const char *xml) {
        StrBuf b = {};
        size_t pos = 0;
        bool inserted = false;
        bool own_line = d->insert_at == 0 || d->text[d->insert_at - 1] == '\n';

        for (size_t i = 0; i <= d->n_remove; i++) {
                size_t stop = i < d->n_remove ? d->remove[i].start : d->size;
                if (!inserted && d->insert_at <= stop && d->insert_at >= pos) {
                        _cleanup_free_ char *part = strndup(d->text + pos, d->insert_at - pos);
                        strbuf_append(&b, part ? part : "");
                        if (!own_line)
                                strbuf_append(&b, "\n");
                        strbuf_append(&b, xml);
                        pos = d->insert_at;
                        inserted = true;
                }
                _cleanup_free_ char *part = strndup(d->text + pos, stop - pos);
                if (!part) {
                        strbuf_done(&b);
                        return NULL;
                }
                strbuf_append(&b, part);
                if (i < d->n_remove)
                        pos = d->remove[i].end;
        }
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
