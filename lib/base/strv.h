/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"

/* NULL-terminated string vectors. strv_push takes ownership of s (also on failure). */
int strv_push(char ***l, char *s);
int strv_extend(char ***l, const char *s);
size_t strv_length(char * const *l);
bool strv_contains(char * const *l, const char *s);
void strv_sort(char **l);

/* The value of VAR=... in the text of a shell-style environment file (/etc/default/grub,
 * /etc/default/irqbalance): the last assignment wins, one level of quotes goes, comments and
 * other lines are ignored. NULL if unset (or on OOM). */
char *env_text_get(const char *text, const char *var);

/* Growable string buffer for building output. */
typedef struct StrBuf {
        char *s;
        size_t len, cap;
        bool oom;
} StrBuf;

void strbuf_append(StrBuf *b, const char *s);
void strbuf_appendf(StrBuf *b, const char *fmt, ...) _printf_(2, 3);
/* Room for n more bytes and a NUL at the end: where to write them (the caller then adds n to len
 * and writes the NUL), or NULL on OOM. */
char *strbuf_room(StrBuf *b, size_t n);
/* Returns the string (caller frees) or NULL on OOM; the buffer is left empty. */
char *strbuf_steal(StrBuf *b);
void strbuf_done(StrBuf *b);

/* Whether s is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above
 * U+10FFFF), as JSON strings must be. */
bool utf8_valid(const char *s);
