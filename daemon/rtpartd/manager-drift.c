/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "macro.h"
#include "manager-drift.h"

uint64_t drift_now(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000ULL;
}

void drift_entry_done(DriftEntry *e) {
        free(e->knob);
        free(e->domain);
        free(e->expected);
        free(e->actual);
        *e = (DriftEntry) {};
}

bool drift_entry_equal(const DriftEntry *a, const DriftEntry *b) {
        return streq_ptr(a->knob, b->knob) && streq_ptr(a->domain, b->domain) && streq_ptr(a->expected, b->expected) &&
                streq_ptr(a->actual, b->actual);
}

void drift_set_clear(DriftSet *s) {
        for (size_t i = 0; i < s->n; i++)
                drift_entry_done(&s->entries[i]);
        s->n = 0;
}

void drift_set_done(DriftSet *s) {
        drift_set_clear(s);
        free(s->entries);
        *s = (DriftSet) {};
}

DriftEntry *drift_set_find(const DriftSet *s, const char *knob) {
        for (size_t i = 0; knob && i < s->n; i++)
                if (streq(s->entries[i].knob, knob))
                        return &s->entries[i];
        return NULL;
}

static int strdup_or_null(const char *s, char **ret) {
        char *c = NULL;
        if (s && !(c = strdup(s)))
                return -ENOMEM;
        *ret = c;
        return 0;
}

int drift_set_put(DriftSet *s, const char *knob, const char *domain, const char *expected, const char *actual,
                  uint64_t since) {
        DriftEntry n = {}, *old;

        if (!knob || !domain)
                return -EINVAL;
        old = drift_set_find(s, knob);
        if (old && streq(old->domain, domain) && streq_ptr(old->expected, expected) && streq_ptr(old->actual, actual))
                return 0;
        if (strdup_or_null(knob, &n.knob) < 0 || strdup_or_null(domain, &n.domain) < 0 ||
            strdup_or_null(expected, &n.expected) < 0 || strdup_or_null(actual, &n.actual) < 0) {
                drift_entry_done(&n);
                return -ENOMEM;
        }
        n.since = since;
        if (old) {
                drift_entry_done(old);
                *old = n;
                return 1;
        }
        if (s->n == s->allocated) {
                size_t a = s->allocated ? s->allocated * 2 : 16;
                DriftEntry *p = realloc(s->entries, a * sizeof(DriftEntry));
                if (!p) {
                        drift_entry_done(&n);
                        return -ENOMEM;
                }
                s->entries = p;
                s->allocated = a;
        }
        s->entries[s->n++] = n;
        return 1;
}

int drift_set_put_entry(DriftSet *s, const DriftEntry *e) {
        return drift_set_put(s, e->knob, e->domain, e->expected, e->actual, e->since);
}

bool drift_set_remove(DriftSet *s, const char *knob) {
        DriftEntry *e = drift_set_find(s, knob);
        if (!e)
                return false;
        size_t i = (size_t) (e - s->entries);
        drift_entry_done(e);
        /* The order is the order found in: what Watch and Correct list. */
        memmove(&s->entries[i], &s->entries[i + 1], (s->n - i - 1) * sizeof(DriftEntry));
        s->n--;
        return true;
}

json_t *drift_entry_to_json(const DriftEntry *e) {
        return json_pack("{s:s, s:s, s:s?, s:s?}", "knob", e->knob, "domain", e->domain, "expected", e->expected,
                         "actual", e->actual);
}

json_t *drift_entries_to_json(const DriftEntry *entries, size_t n) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < n; i++)
                if (json_array_append_new(a, drift_entry_to_json(&entries[i])) < 0) {
                        json_decref(a);
                        return NULL;
                }
        return a;
}

/* ---- StringSet ---- */

void string_set_done(StringSet *s) {
        for (size_t i = 0; i < s->n; i++)
                free(s->items[i]);
        free(s->items);
        *s = (StringSet) {};
}

/* The index of item, or where it would go. */
static size_t string_set_position(const StringSet *s, const char *item, bool *ret_found) {
        size_t lo = 0, hi = s->n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = strcmp(s->items[mid], item);
                if (c == 0) {
                        *ret_found = true;
                        return mid;
                }
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *ret_found = false;
        return lo;
}

bool string_set_contains(const StringSet *s, const char *item) {
        bool found = false;
        if (item)
                (void) string_set_position(s, item, &found);
        return found;
}

static int strcmp_ptr(const void *a, const void *b) {
        return strcmp(*(char * const *) a, *(char * const *) b);
}

int string_set_take(StringSet *s, char **items, size_t n) {
        if (n > 0)
                qsort(items, n, sizeof(char *), strcmp_ptr);
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
                if (k > 0 && streq(items[k - 1], items[i]))
                        free(items[i]);
                else
                        items[k++] = items[i];
        string_set_done(s);
        *s = (StringSet) { .items = items, .n = k, .allocated = n };
        return 0;
}

void string_set_keep(StringSet *s, const StringSet *only) {
        size_t k = 0;
        for (size_t i = 0; i < s->n; i++)
                if (string_set_contains(only, s->items[i]))
                        s->items[k++] = s->items[i];
                else
                        free(s->items[i]);
        s->n = k;
}

int string_set_add(StringSet *s, const char *item) {
        bool found;
        size_t i = string_set_position(s, item, &found);
        if (found)
                return 0;
        if (s->n == s->allocated) {
                size_t a = s->allocated ? s->allocated * 2 : 16;
                char **p = realloc(s->items, a * sizeof(char *));
                if (!p)
                        return -ENOMEM;
                s->items = p;
                s->allocated = a;
        }
        char *c = strdup(item);
        if (!c)
                return -ENOMEM;
        memmove(&s->items[i + 1], &s->items[i], (s->n - i) * sizeof(char *));
        s->items[i] = c;
        s->n++;
        return 1;
}
