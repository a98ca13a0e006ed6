/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmdline.h"
#include "strv.h"

const char *cmdline_next(const char *p, const char *e, const char **ret_start) {
        bool quoted = false;

        while (p < e && isspace((unsigned char) *p))
                p++;
        *ret_start = p;
        while (p < e && (quoted || !isspace((unsigned char) *p))) {
                if (*p == '"')
                        quoted = !quoted;
                p++;
        }
        return p;
}

int cmdline_split(const char *s, char ***ret) {
        const char *p = s ? s : "", *e = p + strlen(p), *start;
        char **l = NULL;

        while ((p = cmdline_next(p, e, &start)) > start)
                if (strv_push(&l, strndup(start, (size_t) (p - start))) < 0) {
                        strv_free(l);
                        return -ENOMEM;
                }
        if (!l && !(l = calloc(1, sizeof(char *))))
                return -ENOMEM;
        *ret = l;
        return 0;
}

/* The name's and the value's spans, as next_arg() cuts them. */
static void parse_arg(const char *a, size_t n, size_t *ret_name_len, const char **ret_value, size_t *ret_value_len) {
        bool quoted = n > 0 && a[0] == '"';
        const char *eq;

        if (quoted) {
                a++;
                n--;
        }
        /* A '=' at the very start is no separator: the kernel looks for one past the name's
         * first byte. */
        eq = n > 1 ? memchr(a + 1, '=', n - 1) : NULL;
        /* A closing quote ends a quoted argument or a quoted value: drop it. */
        bool value_quoted = eq && eq + 1 < a + n && eq[1] == '"';
        size_t end = n;
        if ((quoted || value_quoted) && end > 0 && a[end - 1] == '"' && !(value_quoted && a + end - 1 == eq + 1))
                end--;
        if (!eq) {
                *ret_name_len = end;
                *ret_value = NULL;
                *ret_value_len = 0;
                return;
        }
        *ret_name_len = (size_t) (eq - a);
        *ret_value = eq + 1 + value_quoted;
        *ret_value_len = (size_t) (a + end - *ret_value);
}

static const char *arg_name(const char *arg) {
        return arg[0] == '"' ? arg + 1 : arg;
}

int cmdline_parse_arg(const char *arg, size_t n, char **ret_name, char **ret_value) {
        const char *v;
        size_t nl, vl;

        parse_arg(arg, n, &nl, &v, &vl);
        _cleanup_free_ char *name = strndup(arg_name(arg), nl);
        _cleanup_free_ char *value = v && ret_value ? strndup(v, vl) : NULL;
        if (!name || (v && ret_value && !value))
                return -ENOMEM;
        *ret_name = TAKE_PTR(name);
        if (ret_value)
                *ret_value = TAKE_PTR(value);
        return 0;
}

bool cmdline_arg_is(const char *arg, const char *key) {
        const char *v;
        size_t nl, vl;

        parse_arg(arg, strlen(arg), &nl, &v, &vl);
        return nl == strlen(key) && strncmp(arg_name(arg), key, nl) == 0;
}

bool cmdline_arg_ends_kernel(const char *arg, size_t n) {
        const char *v;
        size_t nl, vl;

        parse_arg(arg, n, &nl, &v, &vl);
        return !v && nl == 2 && strncmp(arg_name(arg), "--", 2) == 0;
}

int cmdline_get(const char *cmdline, const char *key, char **ret) {
        const char *p = cmdline ? cmdline : "", *e = p + strlen(p), *start, *v;
        size_t klen = strlen(key), nl, vl;
        _cleanup_free_ char *found = NULL;

        while ((p = cmdline_next(p, e, &start)) > start) {
                if (cmdline_arg_ends_kernel(start, (size_t) (p - start)))
                        break;
                parse_arg(start, (size_t) (p - start), &nl, &v, &vl);
                const char *name = arg_name(start);
                if (nl != klen || strncmp(name, key, klen) != 0)
                        continue;
                free(found);
                found = v ? strndup(v, vl) : strdup("");
                if (!found)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(found);
        return 0;
}
