/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strv.h"

size_t strv_length(char * const *l) {
        size_t n = 0;
        if (l)
                while (l[n])
                        n++;
        return n;
}

int strv_push(char ***l, char *s) {
        if (!s)
                return -ENOMEM;
        size_t n = strv_length(*l);
        char **m = realloc(*l, (n + 2) * sizeof(char *));
        if (!m) {
                free(s);
                return -ENOMEM;
        }
        m[n] = s;
        m[n + 1] = NULL;
        *l = m;
        return 0;
}

int strv_extend(char ***l, const char *s) {
        return strv_push(l, strdup(s));
}

bool strv_contains(char * const *l, const char *s) {
        if (l)
                for (; *l; l++)
                        if (streq(*l, s))
                                return true;
        return false;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char * const *) a, *(char * const *) b);
}

void strv_sort(char **l) {
        if (l)
                qsort(l, strv_length(l), sizeof(char *), cmp_str);
}

static void strbuf_reserve(StrBuf *b, size_t extra) {
        if (b->oom || b->cap - b->len > extra)
                return;
        size_t cap = MAX(b->cap * 2, b->len + extra + 64);
        char *n = realloc(b->s, cap);
        if (!n) {
                b->oom = true;
                return;
        }
        b->s = n;
        b->cap = cap;
}

char *strbuf_room(StrBuf *b, size_t n) {
        strbuf_reserve(b, n + 1);
        return b->oom ? NULL : b->s + b->len;
}

void strbuf_append(StrBuf *b, const char *s) {
        size_t n = strlen(s);
        strbuf_reserve(b, n + 1);
        if (b->oom)
                return;
        memcpy(b->s + b->len, s, n + 1);
        b->len += n;
}

void strbuf_appendf(StrBuf *b, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(NULL, 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
                b->oom = true;
                return;
        }
        strbuf_reserve(b, (size_t) n + 1);
        if (b->oom)
                return;
        va_start(ap, fmt);
        vsnprintf(b->s + b->len, (size_t) n + 1, fmt, ap);
        va_end(ap);
        b->len += (size_t) n;
}

char *strbuf_steal(StrBuf *b) {
        char *s = b->oom ? NULL : b->s ? b->s : strdup("");
        if (b->oom)
                free(b->s);
        *b = (StrBuf) {};
        return s;
}

void strbuf_done(StrBuf *b) {
        free(b->s);
        *b = (StrBuf) {};
}

char *env_text_get(const char *text, const char *var) {
        size_t n = strlen(var);
        char *found = NULL;
        for (const char *p = text; p && *p;) {
                const char *eol = strchrnul(p, '\n');
                while (p < eol && isspace((unsigned char) *p))
                        p++;
                if (strncmp(p, var, n) == 0 && p[n] == '=') {
                        const char *v = p + n + 1, *e = eol;
                        while (e > v && isspace((unsigned char) e[-1]))
                                e--;
                        if (e - v >= 2 && (*v == '"' || *v == '\'') && e[-1] == *v) {
                                v++;
                                e--;
                        }
                        free(found);
                        found = strndup(v, (size_t) (e - v));
                }
                p = *eol ? eol + 1 : eol;
        }
        return found;
}

bool utf8_valid(const char *s) {
        for (const unsigned char *c = (const unsigned char *) s; *c;) {
                if (*c < 0x80) {
                        c++;
                        continue;
                }
                unsigned n;
                uint32_t cp, min;
                if ((*c & 0xe0) == 0xc0)
                        n = 1, min = 0x80, cp = *c & 0x1f;
                else if ((*c & 0xf0) == 0xe0)
                        n = 2, min = 0x800, cp = *c & 0x0f;
                else if ((*c & 0xf8) == 0xf0)
                        n = 3, min = 0x10000, cp = *c & 0x07;
                else
                        return false;
                c++;
                for (unsigned i = 0; i < n; i++, c++) {
                        if ((*c & 0xc0) != 0x80) /* also the NUL at the end */
                                return false;
                        cp = (cp << 6) | (*c & 0x3f);
                }
                if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
                        return false;
        }
        return true;
}
