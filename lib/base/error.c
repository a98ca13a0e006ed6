/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "strv.h"

void error_done(Error *e) {
        if (!e)
                return;
        free(e->file);
        free(e->pointer);
        free(e->message);
        free(e->detail);
        *e = (Error) {};
}

static int error_setv(Error *e, int code, const char *file, unsigned line, const char *pointer, const char *fmt,
                      va_list ap) {
        if (!e)
                return code;
        error_done(e);
        if (vasprintf(&e->message, fmt, ap) < 0)
                e->message = NULL;
        e->file = file ? strdup(file) : NULL;
        e->pointer = pointer ? strdup(pointer) : NULL;
        e->line = line;
        e->code = code;
        return code;
}

int error_set(Error *e, int code, const char *file, const char *pointer, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = error_setv(e, code, file, 0, pointer, fmt, ap);
        va_end(ap);
        return r;
}

int error_set_line(Error *e, int code, const char *file, unsigned line, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = error_setv(e, code, file, line, NULL, fmt, ap);
        va_end(ap);
        return r;
}

void error_move(Error *dst, Error *src) {
        error_done(dst);
        *dst = *src;
        *src = (Error) {};
}

char *error_format(const Error *e, const char *fallback) {
        StrBuf b = {};
        if (e->file) {
                strbuf_append(&b, e->file);
                if (e->line > 0)
                        strbuf_appendf(&b, ":%u", e->line);
                strbuf_append(&b, ": ");
        }
        if (e->pointer)
                strbuf_appendf(&b, "%s: ", *e->pointer ? e->pointer : "/");
        strbuf_append(&b, e->message ? e->message : fallback ? fallback : "failed");
        return strbuf_steal(&b);
}
