/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Checking a JSON value against a Schema, with "did you mean" for mistyped keys and values. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "profile.h"
#include "schema.h"
#include "strv.h"

const Schema schema_string = { SCHEMA_STRING };
const Schema schema_cpus = { SCHEMA_CPUS };
const Schema schema_bool = { SCHEMA_BOOL };
const Schema schema_strings = { SCHEMA_STRINGS };
const Schema schema_scalar = { SCHEMA_SCALAR };
const Schema schema_scalar_or_null = { SCHEMA_SCALAR_OR_NULL };
const Schema schema_bootarg = { SCHEMA_BOOTARG };
const Schema schema_strings_array = { SCHEMA_ARRAY, .items = &schema_string };
const Schema schema_nonneg = { SCHEMA_INT, .min = 0, .max = 1L << 40 };
const Schema schema_percent = { SCHEMA_INT, .min = 1, .max = 100 };
const Schema schema_cores = { SCHEMA_INT, .min = 1, .max = 4096 };
const Schema schema_prio = { SCHEMA_INT, .min = 0, .max = 99 };
const Schema schema_interval = { SCHEMA_INT, .min = 1, .max = 86400 };
const Schema schema_values = { SCHEMA_MAP, .items = &schema_scalar_or_null };

const Schema *schema_child(const Schema *s, const char *key) {
        if (s->kind == SCHEMA_MAP)
                return s->items;
        if (s->kind == SCHEMA_OBJECT)
                for (const SchemaField *f = s->fields; f->key; f++)
                        if (streq(f->key, key))
                                return f->schema;
        return NULL;
}

int schema_check(const char *file, const char *ptr, json_t *v, const Schema *s, Error *e) {
        if (!s || s->kind != SCHEMA_OBJECT || !json_is_object(v))
                return 0;
        /* This object's own checks, then the objects below it (a vendor overlay's sections). */
        for (int below = 0; below < 2; below++)
                for (const SchemaField *f = s->fields; f->key; f++) {
                        json_t *child = json_object_get(v, f->key);
                        if (!child || (!below && !f->check))
                                continue;
                        _cleanup_free_ char *p = json_pointer_append(ptr, f->key);
                        if (!p)
                                return -ENOMEM;
                        int k = below ? schema_check(file, p, child, f->schema, e) : f->check(file, child, p, e);
                        if (k < 0)
                                return k;
                }
        return 0;
}

static unsigned edit_distance(const char *a, const char *b) {
        size_t la = strlen(a), lb = strlen(b);
        if (la > 64 || lb > 64)
                return 99;
        unsigned d[65][65];
        for (size_t i = 0; i <= la; i++)
                d[i][0] = (unsigned) i;
        for (size_t j = 0; j <= lb; j++)
                d[0][j] = (unsigned) j;
        for (size_t i = 1; i <= la; i++)
                for (size_t j = 1; j <= lb; j++) {
                        unsigned c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
                        c = MIN(c, d[i - 1][j] + 1);
                        c = MIN(c, d[i][j - 1] + 1);
                        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                                c = MIN(c, d[i - 2][j - 2] + 1);
                        d[i][j] = c;
                }
        return d[la][lb];
}

const char *schema_closest(const char *key, const char * const *candidates, size_t n) {
        const char *best = NULL;
        unsigned best_d = 99;
        for (size_t i = 0; i < n; i++) {
                unsigned dist = edit_distance(key, candidates[i]);
                if (dist < best_d) {
                        best_d = dist;
                        best = candidates[i];
                }
        }
        size_t len = strlen(key);
        if (best && best_d <= (len <= 4 ? 1U : len <= 8 ? 2U : 3U))
                return best;
        /* An abbreviation ("prio" for "priority") or an over-long form. */
        for (size_t i = 0; len >= 3 && i < n; i++)
                if (startswith(candidates[i], key) || startswith(key, candidates[i]))
                        return candidates[i];
        return NULL;
}

static int validate_object(const char *file, const char *ptr, const json_t *v, const SchemaField *fields, Error *e) {
        const char *key;
        json_t *child;
        int k;

        if (!json_is_object(v))
                return error_set(e, -EINVAL, file, ptr, "expected an object, found %s", json_kind(v));
        json_object_foreach ((json_t *) v, key, child) {
                const SchemaField *f = NULL;
                for (const SchemaField *i = fields; i->key; i++)
                        if (streq(i->key, key)) {
                                f = i;
                                break;
                        }
                _cleanup_free_ char *p = json_pointer_append(ptr, key);
                if (!p)
                        return -ENOMEM;
                if (!f) {
                        const char *names[64];
                        size_t n = 0;
                        StrBuf known = {};
                        for (const SchemaField *i = fields; i->key && n < ELEMENTSOF(names); i++) {
                                names[n++] = i->key;
                                strbuf_appendf(&known, "%s%s", n > 1 ? ", " : "", i->key);
                        }
                        const char *hint = schema_closest(key, names, n);
                        _cleanup_free_ char *list = strbuf_steal(&known);
                        if (hint)
                                return error_set(e, -EINVAL, file, p, "unknown key \"%s\"; did you mean \"%s\"?", key,
                                                 hint);
                        return error_set(e, -EINVAL, file, p, "unknown key \"%s\"; known keys here: %s", key,
                                         strempty(list));
                }
                k = schema_validate(file, p, child, f->schema, e);
                if (k < 0)
                        return k;
        }
        return 0;
}

/* A string that must be one of `choices`: the closest one, or the list, when it is not. */
static int validate_choice(const char *file, const char *ptr, const char *val, const char * const *choices, Error *e) {
        size_t n = 0;
        StrBuf b = {};
        for (const char * const *c = choices; *c; c++, n++) {
                if (streq(*c, val)) {
                        strbuf_done(&b);
                        return 0;
                }
                strbuf_appendf(&b, "%s\"%s\"", n ? ", " : "", *c);
        }
        _cleanup_free_ char *list = strbuf_steal(&b);
        const char *hint = schema_closest(val, choices, n);
        if (hint)
                return error_set(e, -EINVAL, file, ptr, "\"%s\" is not valid; did you mean \"%s\"?", val, hint);
        return error_set(e, -EINVAL, file, ptr, "\"%s\" is not valid; use one of %s", val, strempty(list));
}

int schema_validate(const char *file, const char *ptr, const json_t *v, const Schema *s, Error *e) {
        int k;

        switch (s->kind) {
        case SCHEMA_STRING:
        case SCHEMA_CPUS:
                if (!json_is_string(v))
                        return error_set(e, -EINVAL, file, ptr, "expected %s, found %s",
                                         s->kind == SCHEMA_CPUS ? "a CPU list string such as \"2-7,10\" or \"isolated\""
                                                                : "a string",
                                         json_kind(v));
                if (s->choices)
                        return validate_choice(file, ptr, json_string_value(v), s->choices, e);
                return 0;
        case SCHEMA_INT:
                if (!json_is_integer(v))
                        return error_set(e, -EINVAL, file, ptr, "expected an integer, found %s", json_kind(v));
                if (json_integer_value(v) < s->min || json_integer_value(v) > s->max)
                        return error_set(e, -EINVAL, file, ptr, "%lld is out of range; use %ld to %ld",
                                         (long long) json_integer_value(v), s->min, s->max);
                return 0;
        case SCHEMA_NUMBER:
                if (!json_is_number(v))
                        return error_set(e, -EINVAL, file, ptr, "expected a number, found %s", json_kind(v));
                if (json_number_value(v) < (double) s->min || json_number_value(v) > (double) s->max)
                        return error_set(e, -EINVAL, file, ptr, "%g is out of range; use %ld to %ld",
                                         json_number_value(v), s->min, s->max);
                return 0;
        case SCHEMA_BOOL:
                if (!json_is_boolean(v))
                        return error_set(e, -EINVAL, file, ptr, "expected true or false, found %s", json_kind(v));
                return 0;
        case SCHEMA_SCALAR_OR_NULL:
                if (json_is_null(v))
                        return 0;
                _fallthrough_;
        case SCHEMA_SCALAR:
                if (!json_is_string(v) && !json_is_number(v) && !json_is_boolean(v))
                        return error_set(e, -EINVAL, file, ptr, "expected a string, number or boolean, found %s%s",
                                         json_kind(v),
                                         s->kind == SCHEMA_SCALAR_OR_NULL ? " (null removes an inherited value)" : "");
                return 0;
        case SCHEMA_BOOTARG:
                if (!json_is_string(v) && !json_is_boolean(v) && !json_is_null(v))
                        return error_set(
                                e, -EINVAL, file, ptr,
                                "expected a string value, true for a bare flag, or false/null to remove the argument; found %s",
                                json_kind(v));
                return 0;
        case SCHEMA_STRINGS:
                if (json_is_string(v))
                        return 0;
                if (!json_is_array(v))
                        return error_set(e, -EINVAL, file, ptr, "expected a string or an array of strings, found %s",
                                         json_kind(v));
                _fallthrough_;
        case SCHEMA_ARRAY: {
                if (!json_is_array(v))
                        return error_set(e, -EINVAL, file, ptr, "expected an array, found %s", json_kind(v));
                size_t i;
                json_t *item;
                json_array_foreach (v, i, item) {
                        _cleanup_free_ char *p = json_pointer_append_index(ptr, i);
                        if (!p)
                                return -ENOMEM;
                        k = schema_validate(file, p, item, s->items ? s->items : &schema_string, e);
                        if (k < 0)
                                return k;
                }
                return 0;
        }
        case SCHEMA_OBJECT:
                return validate_object(file, ptr, v, s->fields, e);
        case SCHEMA_MAP: {
                if (!json_is_object(v))
                        return error_set(e, -EINVAL, file, ptr, "expected an object, found %s", json_kind(v));
                const char *key;
                json_t *child;
                json_object_foreach ((json_t *) v, key, child) {
                        _cleanup_free_ char *p = json_pointer_append(ptr, key);
                        if (!p)
                                return -ENOMEM;
                        if (!*key)
                                return error_set(e, -EINVAL, file, p, "empty key");
                        k = schema_validate(file, p, child, s->items, e);
                        if (k < 0)
                                return k;
                }
                return 0;
        }
        case _SCHEMA_KIND_MAX:
        case _SCHEMA_KIND_INVALID:
                break;
        }
        return 0;
}