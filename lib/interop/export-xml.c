/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export-internal.h"
#include "macro.h"
#include "strv.h"

/* An XML document read only as far as export's merge needs: every element's span checked against
 * its end tag, each element's name, attributes and place recorded, every byte left as it is. */

unsigned xml_line_of(const char *text, size_t pos) {
        unsigned l = 1;
        for (size_t i = 0; i < pos; i++)
                l += text[i] == '\n';
        return l;
}

int xml_fail(XmlScan *x, size_t at, const char *fmt, ...) {
        _cleanup_free_ char *m = NULL;
        va_list ap;
        va_start(ap, fmt);
        int k = vasprintf(&m, fmt, ap);
        va_end(ap);
        if (k < 0 || asprintf(&x->error, "line %u: %s", xml_line_of(x->text, at), m) < 0)
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
                return skip_past(x, "-->") ? 1 : xml_fail(x, at, "comment not closed with -->");
        }
        if (left >= 9 && memcmp(t, "<![CDATA[", 9) == 0)
                return skip_past(x, "]]>") ? 1 : xml_fail(x, at, "CDATA section not closed with ]]>");
        if (left >= 2 && t[1] == '?')
                return skip_past(x, "?>") ? 1 : xml_fail(x, at, "processing instruction not closed with ?>");
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
                return xml_fail(x, at, "declaration not closed with >");
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
                        return xml_fail(x, at, "'<' inside the tag <%.*s>", (int) (ne - ns), x->text + ns);
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
        return xml_fail(x, at, "tag <%.*s> not closed with >", (int) (ne - ns), x->text + ns);
}

static int scan_close(XmlScan *x, size_t at, size_t ns, size_t ne, size_t p) {
        for (size_t k = ne; k < p; k++)
                if (!isspace((unsigned char) x->text[k]))
                        return xml_fail(x, at, "%.*s> holds more than the element's name", (int) (p - at),
                                        x->text + at);
        if (x->depth == 0)
                return xml_fail(x, at, "</%.*s> closes no element", (int) (ne - ns), x->text + ns);
        XmlElement *open = &x->elems[x->stack[x->depth - 1]];
        if (open->len != ne - ns || memcmp(open->name, x->text + ns, open->len) != 0)
                return xml_fail(x, at, "<%.*s> (line %u) closed by </%.*s>", (int) open->len, open->name,
                                xml_line_of(x->text, open->start), (int) (ne - ns), x->text + ns);
        open->close = at;
        open->end = x->pos;
        if (--x->depth == 0)
                x->root_done = true;
        return 0;
}

static int scan_open(XmlScan *x, size_t at, size_t ns, size_t ne, size_t p) {
        bool empty = x->text[p - 1] == '/';
        if (x->root_done)
                return xml_fail(x, at, "a second root element <%.*s>", (int) (ne - ns), x->text + ns);
        if (x->depth >= ELEMENTSOF(x->stack))
                return xml_fail(x, at, "elements nested deeper than %zu", ELEMENTSOF(x->stack));
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
                .parent = x->depth > 0 ? x->stack[x->depth - 1] : SIZE_MAX,
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
                return xml_fail(x, at, "'<' starts no tag (write &lt; for a literal '<')");
        int r = tag_end(x, at, ns, ne, &p);
        if (r < 0)
                return r;
        x->pos = p + 1;
        return closing ? scan_close(x, at, ns, ne, p) : scan_open(x, at, ns, ne, p);
}

/* The whole document: every element's span checked against its end tag, the elements down to
 * depth 2 recorded. */
int xml_scan(XmlScan *x) {
        while (x->pos < x->size) {
                size_t at = x->pos;
                if (x->text[at] != '<') {
                        if (x->depth == 0 && !isspace((unsigned char) x->text[at]))
                                return xml_fail(x, at, "text outside the root element");
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
                return xml_fail(x, open->start, "<%.*s> is never closed", (int) open->len, open->name);
        }
        if (!x->root_done)
                return xml_fail(x, x->size, "no root element");
        return 0;
}

bool xml_is(const XmlElement *e, const char *name) {
        return e->len == strlen(name) && memcmp(e->name, name, e->len) == 0;
}

bool xml_attr_next(const XmlElement *e, size_t *pos, XmlAttr *ret) {
        const char *a = e->attrs, *end = e->attrs + e->attrs_len;
        const char *p = a + *pos;

        while (p < end && isspace((unsigned char) *p))
                p++;
        const char *ns = p;
        while (p < end && is_name_char(*p))
                p++;
        if (p == ns)
                return false;
        const char *ne = p;
        while (p < end && isspace((unsigned char) *p))
                p++;
        if (p >= end || *p++ != '=')
                return false;
        while (p < end && isspace((unsigned char) *p))
                p++;
        if (p >= end || (*p != '\'' && *p != '"'))
                return false;
        const char *q = memchr(p + 1, *p, (size_t) (end - p - 1));
        if (!q)
                return false;
        *ret = (XmlAttr) {
                .name = ns,
                .name_len = (size_t) (ne - ns),
                .value = p + 1,
                .value_len = (size_t) (q - p - 1),
                .start = ns,
                .end = q + 1,
        };
        *pos = (size_t) (q + 1 - a);
        return true;
}

static bool attr_find(const XmlElement *e, const char *name, XmlAttr *ret) {
        size_t pos = 0;
        while (xml_attr_next(e, &pos, ret))
                if (ret->name_len == strlen(name) && memcmp(ret->name, name, ret->name_len) == 0)
                        return true;
        return false;
}

char *xml_attr(const XmlElement *e, const char *name) {
        XmlAttr a;
        return attr_find(e, name, &a) ? strndup(a.value, a.value_len) : NULL;
}

bool xml_attr_is(const XmlElement *e, const char *name, const char *value) {
        XmlAttr a;
        return attr_find(e, name, &a) && a.value_len == strlen(value) && memcmp(a.value, value, a.value_len) == 0;
}

bool xml_attr_uint(const XmlElement *e, const char *name, unsigned *ret) {
        XmlAttr a;
        if (!attr_find(e, name, &a) || a.value_len == 0 || !isdigit((unsigned char) a.value[0]))
                return false;
        char *end;
        unsigned long n = strtoul(a.value, &end, 10);
        if (end != a.value + a.value_len || n > UINT_MAX)
                return false;
        *ret = (unsigned) n;
        return true;
}

char *xml_attrs_without(const XmlElement *e, const char * const *names) {
        StrBuf b = {};
        XmlAttr a;
        size_t pos = 0;

        strbuf_append(&b, "");
        while (xml_attr_next(e, &pos, &a)) {
                bool drop = false;
                for (const char * const *n = names; *n && !drop; n++)
                        drop = a.name_len == strlen(*n) && memcmp(a.name, *n, a.name_len) == 0;
                if (!drop)
                        strbuf_appendf(&b, " %.*s", (int) (a.end - a.start), a.start);
        }
        return strbuf_steal(&b);
}

char *xml_text(const XmlScan *x, const XmlElement *e) {
        return strndup(x->text + e->start, e->end - e->start);
}

bool xml_content_uint(const char *text, const XmlElement *e, unsigned *ret) {
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
size_t xml_line_start(const char *text, size_t pos) {
        size_t p = pos;
        while (p > 0 && (text[p - 1] == ' ' || text[p - 1] == '\t'))
                p--;
        return p == 0 || text[p - 1] == '\n' ? p : pos;
}

/* After the newline that ends the line of pos when only blanks follow it there, else pos. */
size_t xml_line_end(const char *text, size_t size, size_t pos) {
        size_t p = pos;
        while (p < size && (text[p] == ' ' || text[p] == '\t' || text[p] == '\r'))
                p++;
        return p < size && text[p] == '\n' ? p + 1 : p == size ? p : pos;
}

/* A child of <domain>: <vcpu>, <iothreads>, and the elements export replaces. */
