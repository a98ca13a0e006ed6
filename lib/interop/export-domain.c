/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "macro.h"
#include "strv.h"

/* A libvirt domain XML document (export libvirt --domain), read only as far as the merge needs:
 * every element's span checked against its end tag, the domain's children and grandchildren
 * located, every other byte kept as it is. */

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
        size_t stack[256], depth; /* the open elements (indexes of elems) */
        bool root_done;
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

/* Markup that is no element at x->pos (a comment, CDATA, a processing instruction, a declaration):
 * 1 when skipped, 0 when it is a tag. */
static int scan_markup(XmlScan *x, size_t at) {
        const char *t = x->text + at;
        size_t left = x->size - at;
        if (left >= 4 && memcmp(t, "<!--", 4) == 0) {
                x->pos += 4;
                return skip_past(x, "-->") ? 1 : scan_fail(x, at, "comment not closed with -->");
        }
        if (left >= 9 && memcmp(t, "<![CDATA[", 9) == 0)
                return skip_past(x, "]]>") ? 1 : scan_fail(x, at, "CDATA section not closed with ]]>");
        if (left >= 2 && t[1] == '?')
                return skip_past(x, "?>") ? 1 : scan_fail(x, at, "processing instruction not closed with ?>");
        if (left < 2 || t[1] != '!')
                return 0;
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
        return 1;
}

/* The end of the tag whose name ends at ne: its '>' outside quotes (XML allows no '<' in a tag,
 * quoted or not), or an error. */
static int tag_end(XmlScan *x, size_t at, size_t ns, size_t ne, size_t *ret) {
        char q = 0;
        for (size_t p = ne; p < x->size; p++) {
                char c = x->text[p];
                if (c == '<')
                        return scan_fail(x, at, "'<' inside the tag <%.*s>", (int) (ne - ns), x->text + ns);
                if (q) {
                        if (c == q)
                                q = 0;
                } else if (c == '"' || c == '\'')
                        q = c;
                else if (c == '>') {
                        *ret = p;
                        return 0;
                }
        }
        return scan_fail(x, at, "tag <%.*s> not closed with >", (int) (ne - ns), x->text + ns);
}

static int scan_close(XmlScan *x, size_t at, size_t ns, size_t ne, size_t p) {
        for (size_t k = ne; k < p; k++)
                if (!isspace((unsigned char) x->text[k]))
                        return scan_fail(x, at, "%.*s> holds more than the element's name", (int) (p - at),
                                         x->text + at);
        if (x->depth == 0)
                return scan_fail(x, at, "</%.*s> closes no element", (int) (ne - ns), x->text + ns);
        XmlElement *open = &x->elems[x->stack[x->depth - 1]];
        if (open->len != ne - ns || memcmp(open->name, x->text + ns, open->len) != 0)
                return scan_fail(x, at, "<%.*s> (line %u) closed by </%.*s>", (int) open->len, open->name,
                                 line_of(x->text, open->start), (int) (ne - ns), x->text + ns);
        open->close = at;
        open->end = x->pos;
        if (--x->depth == 0)
                x->root_done = true;
        return 0;
}

static int scan_open(XmlScan *x, size_t at, size_t ns, size_t ne, size_t p) {
        bool empty = x->text[p - 1] == '/';
        if (x->root_done)
                return scan_fail(x, at, "a second root element <%.*s>", (int) (ne - ns), x->text + ns);
        if (x->depth >= ELEMENTSOF(x->stack))
                return scan_fail(x, at, "elements nested deeper than %zu", ELEMENTSOF(x->stack));
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
                .depth = x->depth,
                .attrs = x->text + ne,
                .attrs_len = p - ne - empty,
        };
        if (!empty)
                x->stack[x->depth++] = x->n_elems;
        else if (x->depth == 0)
                x->root_done = true;
        x->n_elems++;
        return 0;
}

/* A start or end tag at x->pos. */
static int scan_tag(XmlScan *x, size_t at) {
        bool closing = x->size - at >= 2 && x->text[at + 1] == '/';
        size_t ns = at + 1 + closing, ne = ns, p = 0;
        while (ne < x->size && is_name_char(x->text[ne]))
                ne++;
        if (ne == ns)
                return scan_fail(x, at, "'<' starts no tag (write &lt; for a literal '<')");
        int r = tag_end(x, at, ns, ne, &p);
        if (r < 0)
                return r;
        x->pos = p + 1;
        return closing ? scan_close(x, at, ns, ne, p) : scan_open(x, at, ns, ne, p);
}

/* The whole document: every element's span checked against its end tag, the elements down to
 * depth 2 recorded. */
static int scan(XmlScan *x) {
        while (x->pos < x->size) {
                size_t at = x->pos;
                if (x->text[at] != '<') {
                        if (x->depth == 0 && !isspace((unsigned char) x->text[at]))
                                return scan_fail(x, at, "text outside the root element");
                        x->pos++;
                        continue;
                }
                int r = scan_markup(x, at);
                if (r == 0)
                        r = scan_tag(x, at);
                if (r < 0)
                        return r;
        }
        if (x->depth > 0) {
                XmlElement *open = &x->elems[x->stack[x->depth - 1]];
                return scan_fail(x, open->start, "<%.*s> is never closed", (int) open->len, open->name);
        }
        if (!x->root_done)
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

/* A child of <domain>: <vcpu>, <iothreads>, and the elements export replaces. */
static int domain_child(XmlScan *x, ExportDomain *d, const XmlElement *e) {
        if (elem_is(e, "vcpu"))
                return content_uint(x->text, e, &d->vcpus) ? 0
                                                           : scan_fail(x, e->start, "<vcpu> holds no number of vCPUs");
        if (elem_is(e, "iothreads") && d->n_iothreads == 0) {
                unsigned n = 0;
                if (!content_uint(x->text, e, &n) || n > 4096)
                        return scan_fail(x, e->start, "<iothreads> holds no number of I/O threads");
                if (n > 0 && !(d->iothreads = calloc(n, sizeof(unsigned))))
                        return -ENOMEM;
                for (unsigned k = 0; k < n; k++)
                        d->iothreads[d->n_iothreads++] = k + 1;
                return 0;
        }
        if (!elem_is(e, "cputune") && !elem_is(e, "numatune") && !elem_is(e, "memoryBacking"))
                return 0;
        if (d->n_remove >= ELEMENTSOF(d->remove))
                return scan_fail(x, e->start, "too many <%.*s> elements", (int) e->len, e->name);
        d->remove[d->n_remove].start = line_start(x->text, e->start);
        d->remove[d->n_remove].end = line_end(x->text, x->size, e->end);
        d->n_remove++;
        return 0;
}

/* A grandchild: <iothreadids>' <iothread> ids, <memoryBacking>'s children to keep. */
static int domain_grandchild(XmlScan *x, ExportDomain *d, const XmlElement *parent, const XmlElement *e) {
        if (elem_is(parent, "iothreadids") && elem_is(e, "iothread")) {
                /* <iothreadids> names the ids; they replace the 1…N of <iothreads>. */
                unsigned id;
                if (!attr_uint(e, "id", &id))
                        return scan_fail(x, e->start, "<iothread> without a numeric id");
                if (parent[1].start == e->start)
                        d->n_iothreads = 0; /* the first of the list */
                unsigned *n = realloc(d->iothreads, (d->n_iothreads + 1) * sizeof(unsigned));
                if (!n)
                        return -ENOMEM;
                d->iothreads = n;
                d->iothreads[d->n_iothreads++] = id;
                return 0;
        }
        if (elem_is(parent, "memoryBacking") && !elem_is(e, "hugepages") && !elem_is(e, "locked")) {
                _cleanup_free_ char *keep = strndup(x->text + e->start, e->end - e->start);
                if (!keep || strv_extend(&d->memory_keep, keep) < 0)
                        return -ENOMEM;
        }
        return 0;
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
                        first = first ?: e;
                        vcpu = elem_is(e, "vcpu") ? e : vcpu;
                        r = domain_child(&x, &d, e);
                } else if (e->depth == 2)
                        r = domain_grandchild(&x, &d, &x.elems[parent], e);
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
