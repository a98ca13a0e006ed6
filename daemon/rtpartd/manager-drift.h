/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What rtpartd knows of drift, as C types: one DriftEntry per knob (or user task) whose value is
 * not the profile's, kept in the order first found; and the StringSet of knobs a backend cannot
 * write on this root. JSON is made of them at the edges only (drift_entries_to_json). */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct DriftEntry {
        char *knob;     /* "sysctl/kernel.timer_migration", "task/4242" */
        char *domain;   /* domain_to_string(), or "task" */
        char *expected; /* NULL: the value should not be there */
        char *actual;   /* NULL: the value is not there */
        uint64_t since; /* CLOCK_REALTIME µs when found with these values */
} DriftEntry;

typedef struct DriftSet {
        DriftEntry *entries;
        size_t n, allocated;
} DriftSet;

/* CLOCK_REALTIME in µs: a DriftEntry's since. */
uint64_t drift_now(void);

void drift_entry_done(DriftEntry *e);
bool drift_entry_equal(const DriftEntry *a, const DriftEntry *b); /* knob, domain and values */

void drift_set_done(DriftSet *s);
void drift_set_clear(DriftSet *s);
DriftEntry *drift_set_find(const DriftSet *s, const char *knob);
/* Adds the entry, or replaces the values of the knob's entry (keeping its place, and its since
 * when the values are the same). Returns 1 if it is new or changed, 0 if it was already so. */
int drift_set_put(DriftSet *s, const char *knob, const char *domain, const char *expected, const char *actual,
                  uint64_t since);
int drift_set_put_entry(DriftSet *s, const DriftEntry *e);
/* Returns whether knob was there. */
bool drift_set_remove(DriftSet *s, const char *knob);

/* [{knob, domain, expected, actual}, …]: the drift entry of rtpartctl --json. */
json_t *drift_entry_to_json(const DriftEntry *e);
json_t *drift_entries_to_json(const DriftEntry *entries, size_t n);

/* A set of strings, sorted for lookups. */
typedef struct StringSet {
        char **items;
        size_t n, allocated;
} StringSet;

void string_set_done(StringSet *s);
bool string_set_contains(const StringSet *s, const char *item);
/* Returns 1 if added, 0 if already there (cheap at the end: in sorted order). */
int string_set_add(StringSet *s, const char *item);
/* Replaces s by the n strings of items (an array of n malloc'ed strings, taken, itself malloc'ed),
 * sorted once; repeats are dropped. */
int string_set_take(StringSet *s, char **items, size_t n);
/* Drops from s what `only` does not have. */
void string_set_keep(StringSet *s, const StringSet *only);
static inline size_t string_set_size(const StringSet *s) {
        return s->n;
}
