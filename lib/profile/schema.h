/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The shape of a profile document: what each key may hold, checked before anything is resolved,
 * with messages that name the JSON pointer and the fix. The core keys live in profile.c; each
 * domain's section lives in its backend file (Backend.schema, Backend.check), and the backends
 * layer composes the document's schema of both (backend_profile_schema()). */

#include <jansson.h>

#include "error.h"

typedef enum SchemaKind {
        SCHEMA_STRING,
        SCHEMA_CPUS, /* a CPU expression (string) */
        SCHEMA_INT,
        SCHEMA_BOOL,
        SCHEMA_SCALAR, /* string, number or boolean (sysctl and sysfs values) */
        SCHEMA_SCALAR_OR_NULL,
        SCHEMA_BOOTARG, /* string, true (bare flag), false or null (remove) */
        SCHEMA_STRINGS, /* string or array of strings */
        SCHEMA_OBJECT,
        SCHEMA_ARRAY,
        SCHEMA_MAP, /* free keys, each value of one schema */
        _SCHEMA_KIND_MAX,
        _SCHEMA_KIND_INVALID = -EINVAL,
} SchemaKind;

typedef struct Schema Schema;

/* What a schema cannot say of a value (names, required keys, combinations), asked once the whole
 * document has its shape: an error at a pointer below ptr (v's own), or 0. */
typedef int (*SchemaCheck)(const char *file, json_t *v, const char *ptr, Error *e);

/* One key of an object, or a whole profile section: its key, what it holds and, where the schema
 * cannot say it all, the check of its value (NULL: none). */
typedef struct SchemaField {
        const char *key;
        const Schema *schema;
        SchemaCheck check;
} SchemaField;

struct Schema {
        SchemaKind kind;
        const SchemaField *fields;   /* SCHEMA_OBJECT, NULL-key terminated */
        const Schema *items;         /* SCHEMA_ARRAY, SCHEMA_MAP */
        const char * const *choices; /* SCHEMA_STRING: allowed values */
        long min, max;               /* SCHEMA_INT */
};

/* The building blocks every section uses. */
extern const Schema schema_string, schema_cpus, schema_bool, schema_strings, schema_scalar, schema_scalar_or_null,
        schema_bootarg, schema_strings_array;
extern const Schema schema_nonneg;   /* 0 … 2^40 */
extern const Schema schema_percent;  /* 1 … 100 */
extern const Schema schema_cores;    /* 1 … 4096 */
extern const Schema schema_prio;     /* 0 … 99 */
extern const Schema schema_interval; /* 1 … 86400 (seconds) */
extern const Schema schema_values;   /* free keys, each a scalar or null (sysctl, sysfs) */

/* Checks v, found at ptr in file, against s. On a mismatch returns -EINVAL with the pointer, what
 * was expected and, for a mistyped key or value, the closest allowed one. */
int schema_validate(const char *file, const char *ptr, const json_t *v, const Schema *s, Error *e);

/* Runs the checks (SchemaField.check) of v, an object of schema s found at ptr in file: those of
 * its own fields first, then those below them; v has been validated against s. The first error
 * is returned. */
int schema_check(const char *file, const char *ptr, json_t *v, const Schema *s, Error *e);

/* The schema of key in an object or map of schema s; NULL when s does not know key. */
const Schema *schema_child(const Schema *s, const char *key);

/* The candidate a mistyped word most likely meant ("prio" → "priority"), or NULL: for "did you
 * mean" in messages. */
const char *schema_closest(const char *key, const char * const *candidates, size_t n);
