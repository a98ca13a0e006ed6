/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export-internal.h"
#include "strv.h"

/* A libvirt domain XML document (export libvirt --domain): the parts export writes located, with
 * what it keeps of them, and the merge that puts its elements there and keeps every other byte. */

void export_domain_done(ExportDomain *d) {
        free(d->indent);
        free(d->step);
        free(d->vcpu_attrs);
        free(d->vcpu_cpuset);
        free(d->vcpu_placement);
        free(d->iothreads);
        strv_free(d->cputune_keep);
        strv_free(d->cputune_dropped);
        strv_free(d->cputune_replaced);
        free(d->numatune);
        strv_free(d->memory_keep);
        strv_free(d->memory_replaced);
        free(d->cpu_attrs);
        free(d->cpu_mode);
        strv_free(d->cpu_keep);
        strv_free(d->cpu_dropped);
        free(d->cpu_topology);
        free(d->cpu_tsc);
        free(d->cpu_numa);
        free(d->pmu);
        free(d->memballoon);
        free(d->features.indent);
        free(d->devices.indent);
        *d = (ExportDomain) {};
}

/* ---- the parse ---- */

static bool is_any(const XmlElement *e, const char * const *names) {
        for (; *names; names++)
                if (xml_is(e, *names))
                        return true;
        return false;
}

static int set_span(XmlScan *x, ExportSpan *s, const XmlElement *e) {
        if (s->found)
                return xml_fail(x, e->start, "a second <%.*s> (the first is on line %u): a domain has one",
                                (int) e->len, e->name, xml_line_of(x->text, s->start));
        *s = (ExportSpan) {
                .start = xml_line_start(x->text, e->start),
                .end = xml_line_end(x->text, x->size, e->end),
                .found = true,
        };
        return 0;
}

/* Where something goes at pos: there when pos starts a line; else right after what precedes it
 * on its line but blanks, so that what goes there ends that line without taking the blanks into
 * the line it makes. */
static size_t insertion_point(const char *text, size_t pos) {
        size_t p = xml_line_start(text, pos);
        if (p == 0 || text[p - 1] == '\n')
                return p;
        while (p > 0 && (text[p - 1] == ' ' || text[p - 1] == '\t' || text[p - 1] == '\r'))
                p--;
        return p;
}

static int set_parent(XmlScan *x, ExportParent *p, const XmlElement *e) {
        int k = set_span(x, &p->at, e);
        if (k < 0)
                return k;
        p->empty = e->close == e->content && x->text[e->content - 2] == '/';
        p->close = insertion_point(x->text, e->close);
        return 0;
}

/* An element as written, its lines after the first without the indent of its own line, so that it
 * can be written at another. */
static char *text_dedented(const XmlScan *x, const XmlElement *e) {
        size_t ls = xml_line_start(x->text, e->start), il = ls == e->start ? 0 : e->start - ls;
        _cleanup_free_ char *t = xml_text(x, e);
        StrBuf b = {};

        if (!t)
                return NULL;
        strbuf_append(&b, "");
        for (const char *l = t; *l;) {
                const char *nl = strchrnul(l, '\n');
                if (l != t && il > 0 && (size_t) (nl - l) >= il && memcmp(l, x->text + ls, il) == 0)
                        l += il;
                strbuf_appendf(&b, "%.*s%s", (int) (nl - l), l, *nl ? "\n" : "");
                l = *nl ? nl + 1 : nl;
        }
        return strbuf_steal(&b);
}

/* Appends an element as written to *list (a NULL-terminated list), or, list NULL, to *text as a
 * line. */
static int keep_text(const XmlScan *x, const XmlElement *e, char ***list, char **text) {
        _cleanup_free_ char *t = text_dedented(x, e);
        if (!t)
                return -ENOMEM;
        if (list)
                return strv_extend(list, t);
        char *n;
        if (asprintf(&n, "%s%s\n", strempty(*text), t) < 0)
                return -ENOMEM;
        free(*text);
        *text = n;
        return 0;
}

/* <memory>'s size in KiB, with its unit (libvirt's: b, KB, k/KiB, MB, M/MiB, GB, G/GiB, TB,
 * T/TiB; KiB when none). */
static uint64_t memory_kib(const XmlScan *x, const XmlElement *e) {
        static const struct {
                const char *unit;
                double kib;
        } units[] = {
                { "b", 1.0 / 1024 },  { "bytes", 1.0 / 1024 }, { "KB", 1000.0 / 1024 }, { "k", 1 },
                { "KiB", 1 },         { "MB", 1e6 / 1024 },    { "M", 1024 },           { "MiB", 1024 },
                { "GB", 1e9 / 1024 }, { "G", 1048576 },        { "GiB", 1048576 },      { "TB", 1e12 / 1024 },
                { "T", 1073741824 },  { "TiB", 1073741824 },
        };
        _cleanup_free_ char *unit = xml_attr(e, "unit"), *v = strndup(x->text + e->content, e->close - e->content);
        double kib = 1;
        char *end;

        if (!v)
                return 0;
        for (size_t i = 0; unit && i < ELEMENTSOF(units); i++)
                if (streq(unit, units[i].unit))
                        kib = units[i].kib;
        unsigned long long n = strtoull(v, &end, 10);
        while (isspace((unsigned char) *end))
                end++;
        double total = (double) n * kib;
        return end == v || *end || total >= 1e18 ? 0 : (uint64_t) total; /* 0: no size libvirt would take */
}

/* A child of <domain>: <vcpu>, <memory>, <iothreads>, the parts export replaces, and the parents
 * it adds to. */
static int domain_child(XmlScan *x, ExportDomain *d, const XmlElement *e) {
        static const char * const vcpu_own[] = { "placement", "cpuset", NULL },
                                  * const cpu_own[] = { "mode", "match", NULL };

        int k;
        if (xml_is(e, "vcpu")) {
                if ((k = set_span(x, &d->at[EXPORT_PART_VCPU], e)) < 0)
                        return k;
                if (!xml_content_uint(x->text, e, &d->vcpus))
                        return xml_fail(x, e->start, "<vcpu> holds no number of vCPUs");
                d->vcpu_cpuset = xml_attr(e, "cpuset");
                d->vcpu_placement = xml_attr(e, "placement");
                d->vcpu_attrs = xml_attrs_without(e, vcpu_own);
                return d->vcpu_attrs ? 0 : -ENOMEM;
        }
        if (xml_is(e, "memory"))
                d->memory_kib = memory_kib(x, e);
        if (xml_is(e, "iothreads") && d->n_iothreads == 0) {
                unsigned n = 0;
                if (!xml_content_uint(x->text, e, &n) || n > 4096)
                        return xml_fail(x, e->start, "<iothreads> holds no number of I/O threads");
                if (n > 0 && !(d->iothreads = calloc(n, sizeof(unsigned))))
                        return -ENOMEM;
                for (unsigned i = 0; i < n; i++)
                        d->iothreads[d->n_iothreads++] = i + 1;
                return 0;
        }
        if (xml_is(e, "cputune"))
                return set_span(x, &d->at[EXPORT_PART_CPUTUNE], e);
        if (xml_is(e, "numatune")) {
                k = set_span(x, &d->at[EXPORT_PART_NUMATUNE], e);
                return k < 0 ? k : keep_text(x, e, NULL, &d->numatune);
        }
        if (xml_is(e, "memoryBacking"))
                return set_span(x, &d->at[EXPORT_PART_MEMORY_BACKING], e);
        if (xml_is(e, "cpu")) {
                if ((k = set_span(x, &d->at[EXPORT_PART_CPU], e)) < 0)
                        return k;
                d->cpu_mode = xml_attr(e, "mode");
                d->cpu_attrs = xml_attrs_without(e, cpu_own);
                return d->cpu_attrs ? 0 : -ENOMEM;
        }
        if (xml_is(e, "features"))
                return set_parent(x, &d->features, e);
        if (xml_is(e, "devices"))
                return set_parent(x, &d->devices, e);
        return 0;
}

/* <cpu>'s children: its topology (and how many vCPUs it makes), its tsc-deadline feature, its
 * NUMA cells, what host-passthrough takes from the host (model, vendor), the rest kept. */
static int cpu_child(XmlScan *x, ExportDomain *d, const XmlElement *e) {
        static const char * const dropped[] = { "model", "vendor", NULL };
        if (xml_is(e, "topology")) {
                static const char * const dims[] = { "sockets", "dies", "cores", "threads" };
                uint64_t product = 1;
                for (size_t i = 0; i < ELEMENTSOF(dims); i++) {
                        unsigned v = 1;
                        if (!xml_attr_uint(e, dims[i], &v) && i != 1)
                                v = 0;
                        product = MIN(product * v, (uint64_t) UINT_MAX);
                }
                d->cpu_topology_vcpus = (unsigned) product;
                return keep_text(x, e, NULL, &d->cpu_topology);
        }
        if (xml_is(e, "feature") && xml_attr_is(e, "name", "tsc-deadline"))
                return keep_text(x, e, NULL, &d->cpu_tsc);
        if (xml_is(e, "numa"))
                return keep_text(x, e, NULL, &d->cpu_numa);
        return keep_text(x, e, is_any(e, dropped) ? &d->cpu_dropped : &d->cpu_keep, NULL);
}

/* A grandchild: <iothreadids>' ids, and the children of the parts export replaces. */
static int domain_grandchild(XmlScan *x, ExportDomain *d, const XmlElement *parent, const XmlElement *e) {
        static const char * const cputune_keep[] = { "shares",         "global_period",
                                                     "global_quota",   "emulator_period",
                                                     "emulator_quota", "iothread_period",
                                                     "iothread_quota", "emulatorsched",
                                                     "iothreadsched",  NULL },
                                  * const cputune_dropped[] = { "period", "quota", NULL },
                                  * const memory_replaced[] = { "hugepages", "locked", "nosharepages", NULL };

        if (xml_is(parent, "iothreadids") && xml_is(e, "iothread")) {
                /* <iothreadids> names the ids; they replace the 1…N of <iothreads>. */
                unsigned id;
                if (!xml_attr_uint(e, "id", &id))
                        return xml_fail(x, e->start, "<iothread> without a numeric id");
                if (parent[1].start == e->start)
                        d->n_iothreads = 0; /* the first of the list */
                unsigned *n = realloc(d->iothreads, (d->n_iothreads + 1) * sizeof(unsigned));
                if (!n)
                        return -ENOMEM;
                d->iothreads = n;
                d->iothreads[d->n_iothreads++] = id;
                return 0;
        }
        if (xml_is(parent, "cputune")) {
                if (is_any(e, cputune_keep))
                        return keep_text(x, e, &d->cputune_keep, NULL);
                if (is_any(e, cputune_dropped))
                        return keep_text(x, e, &d->cputune_dropped, NULL);
                return keep_text(x, e, &d->cputune_replaced, NULL);
        }
        if (xml_is(parent, "memoryBacking"))
                return is_any(e, memory_replaced) ? keep_text(x, e, &d->memory_replaced, NULL)
                                                  : keep_text(x, e, &d->memory_keep, NULL);
        if (xml_is(parent, "cpu"))
                return cpu_child(x, d, e);
        if (xml_is(parent, "features") && xml_is(e, "pmu")) {
                int k = set_span(x, &d->at[EXPORT_PART_PMU], e);
                d->pmu_off = xml_attr_is(e, "state", "off");
                return k < 0 ? k : keep_text(x, e, NULL, &d->pmu);
        }
        if (xml_is(parent, "devices") && xml_is(e, "memballoon")) {
                int k = set_span(x, &d->at[EXPORT_PART_MEMBALLOON], e);
                d->memballoon_none = xml_attr_is(e, "model", "none") && e->close == e->content;
                return k < 0 ? k : keep_text(x, e, NULL, &d->memballoon);
        }
        return 0;
}

/* The indent of a parent's children: that of its first child on a line of its own. */
static int child_indent(const XmlScan *x, ExportParent *p, const XmlElement *e) {
        size_t ls = xml_line_start(x->text, e->start);
        if (p->indent || ls == e->start)
                return 0;
        p->indent = strndup(x->text + ls, e->start - ls);
        return p->indent ? 0 : -ENOMEM;
}

/* Every element below <domain>, down to <cpu>'s NUMA cells. */
static int domain_walk(XmlScan *x, ExportDomain *d, const XmlElement **ret_first, const XmlElement **ret_vcpu) {
        int r = 0;
        for (size_t i = 1; r >= 0 && i < x->n_elems; i++) {
                const XmlElement *e = &x->elems[i], *parent = &x->elems[e->parent];
                if (e->depth == 1) {
                        *ret_first = *ret_first ?: e;
                        *ret_vcpu = xml_is(e, "vcpu") ? e : *ret_vcpu;
                        r = domain_child(x, d, e);
                } else if (e->depth == 2) {
                        r = domain_grandchild(x, d, parent, e);
                        if (r >= 0 && xml_is(parent, "features"))
                                r = child_indent(x, &d->features, e);
                        if (r >= 0 && xml_is(parent, "devices"))
                                r = child_indent(x, &d->devices, e);
                } else if (e->depth == 3 && xml_is(e, "cell") && xml_is(parent, "numa") &&
                           xml_is(&x->elems[parent->parent], "cpu"))
                        d->cpu_cells++;
        }
        return r;
}

/* The children's indent (that of the first child on a line of its own), one level of it, and
 * where missing parts go. */
static int domain_layout(XmlScan *x, ExportDomain *d, const XmlElement *first, const XmlElement *vcpu) {
        const XmlElement *domain = &x->elems[0];
        size_t ls = first ? xml_line_start(x->text, first->start) : 0;

        d->indent = first && ls != first->start ? strndup(x->text + ls, first->start - ls) : strdup("  ");
        d->step = strdup(d->indent[0] ? d->indent : "  ");
        if (!d->indent || !d->step)
                return -ENOMEM;
        for (ExportParent *p = &d->features; p; p = p == &d->features ? &d->devices : NULL)
                if (p->at.found && !p->indent && asprintf(&p->indent, "%s%s", d->indent, d->step) < 0) {
                        p->indent = NULL;
                        return -ENOMEM;
                }
        d->insert_at = vcpu ? xml_line_end(x->text, x->size, vcpu->end) : insertion_point(x->text, domain->close);
        return 0;
}

int export_domain_parse(const char *text, size_t size, ExportDomain *ret, char **ret_error) {
        _cleanup_(export_domain_done) ExportDomain d = { .text = text, .size = size };
        XmlScan x = { .text = text, .size = size };
        const XmlElement *first = NULL, *vcpu = NULL;
        int r;

        *ret_error = NULL;
        if (memchr(text, 0, size)) {
                *ret_error = strdup("the file holds a NUL byte: it is no XML text");
                return *ret_error ? -EINVAL : -ENOMEM;
        }
        r = xml_scan(&x);
        if (r >= 0 && !xml_is(&x.elems[0], "domain"))
                r = xml_fail(&x, x.elems[0].start, "the root element is <%.*s>, not <domain>", (int) x.elems[0].len,
                             x.elems[0].name);
        if (r >= 0 && x.elems[0].end == x.elems[0].content)
                r = xml_fail(&x, x.elems[0].start, "<domain/> is empty: a domain needs at least <name> and <os>");
        if (r >= 0)
                r = domain_walk(&x, &d, &first, &vcpu);
        if (r >= 0)
                r = domain_layout(&x, &d, first, vcpu);
        free(x.elems);
        if (r < 0) {
                *ret_error = x.error;
                return r;
        }
        free(x.error);
        *ret = d;
        d = (ExportDomain) {};
        return 0;
}

/* ---- the merge ---- */

void export_elements_done(ExportElements *e) {
        for (size_t i = 0; i < _EXPORT_PART_MAX; i++)
                free(e->part[i]);
        strv_free(e->notes);
        *e = (ExportElements) {};
}

typedef struct Edit {
        size_t start, end;
        char *text;
} Edit;

/* Each line of text with indent before it, the last without its newline unless newline_last. */
static void append_lines(StrBuf *b, const char *text, const char *indent, bool newline_last) {
        for (const char *l = text; l && *l;) {
                const char *nl = strchrnul(l, '\n');
                bool last = !*nl || !nl[1];
                strbuf_appendf(b, "%s%.*s%s", indent, (int) (nl - l), l, !last || newline_last ? "\n" : "");
                l = *nl ? nl + 1 : nl;
        }
}

/* The child part wrapped in its parent ("features", "devices"), for a domain that has none. */
static char *wrapped(const char *parent, const char *part, const char *step) {
        StrBuf b = {};
        strbuf_appendf(&b, "<%s>\n", parent);
        append_lines(&b, part, step, true);
        strbuf_appendf(&b, "</%s>\n", parent);
        return strbuf_steal(&b);
}

static int edit_add(Edit *edits, size_t *n, size_t start, size_t end, char *text) {
        if (!text)
                return -ENOMEM;
        edits[(*n)++] = (Edit) { .start = start, .end = end, .text = text };
        return 0;
}

/* The part for the span [pos, end) (an insertion where they are the same): its lines indented,
 * starting a line and ending one where the span does; a part of one line in place of an element
 * that follows others on its line stays there, as it is (an insertion always starts a line). So the part is where it was when the
 * document is merged again. */
static char *lines_at(const ExportDomain *d, size_t pos, size_t end, const char *part, const char *indent) {
        StrBuf b = {};
        size_t len = strlen(part);
        bool mid_start = pos > 0 && d->text[pos - 1] != '\n';
        bool ends_line = pos == end ? !mid_start : d->text[end - 1] == '\n';

        strbuf_append(&b, "");
        if (mid_start && pos < end && len > 0 && memchr(part, '\n', len) == part + len - 1)
                strbuf_appendf(&b, "%.*s%s", (int) (len - 1), part, ends_line ? "\n" : "");
        else {
                if (mid_start)
                        strbuf_append(&b, "\n");
                append_lines(&b, part, indent, ends_line);
        }
        return strbuf_steal(&b);
}

/* <pmu/> into <features>, <memballoon/> into <devices>. */
static int edit_child(const ExportDomain *d, const ExportElements *e, ExportPart p, const ExportParent *parent,
                      const char *name, Edit *edits, size_t *n, StrBuf *insert) {
        const ExportSpan *at = &d->at[p];
        if (e->keep[p] || !e->part[p])
                return 0;
        if (at->found)
                return edit_add(edits, n, at->start, at->end,
                                lines_at(d, at->start, at->end, e->part[p], parent->indent));
        if (parent->at.found && !parent->empty)
                return edit_add(edits, n, parent->close, parent->close,
                                lines_at(d, parent->close, parent->close, e->part[p], parent->indent));
        _cleanup_free_ char *w = wrapped(name, e->part[p], e->step);
        if (!w)
                return -ENOMEM;
        if (parent->at.found) /* <features/> */
                return edit_add(edits, n, parent->at.start, parent->at.end,
                                lines_at(d, parent->at.start, parent->at.end, w, d->indent));
        append_lines(insert, w, d->indent, true);
        return 0;
}

static int edits_make(const ExportDomain *d, const ExportElements *e, Edit *edits, size_t *n) {
        static const ExportPart top[] = { EXPORT_PART_VCPU, EXPORT_PART_CPUTUNE, EXPORT_PART_NUMATUNE,
                                          EXPORT_PART_MEMORY_BACKING, EXPORT_PART_CPU };
        StrBuf insert = {};
        int k = 0;

        strbuf_append(&insert, "");
        for (size_t i = 0; k >= 0 && i < ELEMENTSOF(top); i++) {
                const ExportSpan *at = &d->at[top[i]];
                const char *part = e->part[top[i]];
                if (e->keep[top[i]])
                        continue;
                if (at->found)
                        k = edit_add(edits, n, at->start, at->end,
                                     part ? lines_at(d, at->start, at->end, part, d->indent) : strdup(""));
                else if (part)
                        append_lines(&insert, part, d->indent, true);
        }
        if (k >= 0)
                k = edit_child(d, e, EXPORT_PART_PMU, &d->features, "features", edits, n, &insert);
        if (k >= 0)
                k = edit_child(d, e, EXPORT_PART_MEMBALLOON, &d->devices, "devices", edits, n, &insert);
        _cleanup_free_ char *ins = strbuf_steal(&insert);
        if (k < 0 || !ins)
                return k < 0 ? k : -ENOMEM;
        if (!*ins)
                return 0;
        char *t = lines_at(d, d->insert_at, d->insert_at, ins, "");
        return t ? edit_add(edits, n, d->insert_at, d->insert_at, t) : -ENOMEM;
}

char *export_domain_merge(const ExportDomain *d, const ExportElements *e) {
        Edit edits[_EXPORT_PART_MAX + 2] = {};
        size_t n = 0, pos = 0;
        StrBuf b = {};
        int k = edits_make(d, e, edits, &n);

        for (size_t i = 1; i < n; i++) /* by start, an insertion before a replacement there */
                for (size_t j = i; j > 0 &&
                     (edits[j].start < edits[j - 1].start ||
                      (edits[j].start == edits[j - 1].start && edits[j].end < edits[j - 1].end));
                     j--) {
                        Edit t = edits[j];
                        edits[j] = edits[j - 1];
                        edits[j - 1] = t;
                }
        strbuf_append(&b, "");
        for (size_t i = 0; k >= 0 && i < n; i++) {
                strbuf_appendf(&b, "%.*s%s", (int) (edits[i].start - pos), d->text + pos, edits[i].text);
                pos = edits[i].end;
        }
        if (k >= 0)
                strbuf_appendf(&b, "%.*s", (int) (d->size - pos), d->text + pos);
        for (size_t i = 0; i < n; i++)
                free(edits[i].text);
        if (k < 0) {
                strbuf_done(&b);
                return NULL;
        }
        return strbuf_steal(&b);
}

char *export_elements_fragment(const ExportElements *e, const char *indent) {
        static const ExportPart top[] = { EXPORT_PART_VCPU,     EXPORT_PART_IOTHREADS,      EXPORT_PART_CPUTUNE,
                                          EXPORT_PART_NUMATUNE, EXPORT_PART_MEMORY_BACKING, EXPORT_PART_CPU };
        StrBuf b = {};

        strbuf_append(&b, "");
        for (size_t i = 0; i < ELEMENTSOF(top); i++)
                append_lines(&b, e->part[top[i]], indent, true);
        _cleanup_free_ char *f = e->part[EXPORT_PART_PMU] ? wrapped("features", e->part[EXPORT_PART_PMU], e->step)
                                                          : NULL,
                            *v = e->part[EXPORT_PART_MEMBALLOON]
                ? wrapped("devices", e->part[EXPORT_PART_MEMBALLOON], e->step)
                : NULL;
        append_lines(&b, f, indent, true);
        append_lines(&b, v, indent, true);
        return strbuf_steal(&b);
}
