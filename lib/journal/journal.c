/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "journal-internal.h"
#include "strv.h"

static const char * const journal_op_table[_JOURNAL_OP_MAX] = {
        [JOURNAL_OP_APPLY] = "apply",
        [JOURNAL_OP_REVERT] = "revert",
};

const char *journal_op_to_string(JournalOp op) {
        return op >= 0 && op < _JOURNAL_OP_MAX ? journal_op_table[op] : NULL;
}

JournalOp journal_op_from_string(const char *s) {
        for (int i = 0; s && i < _JOURNAL_OP_MAX; i++)
                if (streq(s, journal_op_table[i]))
                        return (JournalOp) i;
        return _JOURNAL_OP_INVALID;
}

/* ---- strings: bump-allocated in chunks, freed with the journal ---- */

#define CHUNK_DATA (4096 - sizeof(JournalChunk))

struct JournalChunk {
        JournalChunk *next;
        size_t size, used;
        char data[];
};

int journal_strdup(Journal *j, const char *s, const char **ret) {
        if (!s) {
                *ret = NULL;
                return 0;
        }
        size_t n = strlen(s) + 1;
        JournalChunk *c = j->chunks;
        if (!c || c->size - c->used < n) {
                /* A large string (the profile's source) gets a chunk of its own, behind the one
                 * being filled, so that the room left there is not lost. */
                bool own = n > CHUNK_DATA / 4;
                size_t size = own ? n : CHUNK_DATA;
                JournalChunk *nc = malloc(sizeof(JournalChunk) + size);
                if (!nc)
                        return -ENOMEM;
                nc->size = size;
                nc->used = 0;
                if (own && c) {
                        nc->next = c->next;
                        c->next = nc;
                } else {
                        nc->next = c;
                        j->chunks = nc;
                }
                c = nc;
        }
        char *p = memcpy(c->data + c->used, s, n);
        c->used += n;
        *ret = p;
        return 0;
}

int journal_set(Journal *j, const char **field, const char *s) {
        const char *p;
        int k = journal_strdup(j, s, &p);
        if (k < 0)
                return k;
        *field = p;
        return 0;
}

int journal_set_source(Journal *j, const json_t *doc) {
        if (!doc) {
                j->source = NULL;
                return 0;
        }
        _cleanup_free_ char *text = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (!text)
                return -ENOMEM;
        return journal_set(j, &j->source, text);
}

/* ---- indexes: open addressing over arrays whose elements start with their id ---- */

static const char *item_id(const void *items, size_t size, size_t i) {
        return *(const char * const *) ((const char *) items + i * size);
}

static void index_put(JournalIndex *x, const char *id, size_t pos) {
        size_t mask = x->n_slots - 1;
        for (size_t s = journal_digest(id, strlen(id)) & mask;; s = (s + 1) & mask)
                if (x->slots[s] == 0) {
                        x->slots[s] = (uint32_t) (pos + 1);
                        return;
                }
}

void journal_index_done(JournalIndex *x) {
        free(x->slots);
        *x = (JournalIndex) {};
}

int journal_index_build(JournalIndex *x, const void *items, size_t size, size_t n) {
        if (n >= UINT32_MAX / 4)
                return -E2BIG;
        size_t slots = 16;
        while (slots < 2 * n)
                slots *= 2;
        JournalIndex nx = { .slots = calloc(slots, sizeof(uint32_t)), .n_slots = slots };
        if (!nx.slots)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                index_put(&nx, item_id(items, size, i), i);
        journal_index_done(x);
        *x = nx;
        return 0;
}

/* Adds items[n - 1], growing the index when it is half full. */
static int index_add(JournalIndex *x, const void *items, size_t size, size_t n) {
        if (2 * n > x->n_slots)
                return journal_index_build(x, items, size, n);
        index_put(x, item_id(items, size, n - 1), n - 1);
        return 0;
}

/* The first element with this id that accept() takes (NULL: any), or -1. */
static ssize_t index_find(const JournalIndex *x, const void *items, size_t size, const char *id,
                          bool (*accept)(const void *item)) {
        if (!id || x->n_slots == 0)
                return -1;
        size_t mask = x->n_slots - 1;
        for (size_t s = journal_digest(id, strlen(id)) & mask; x->slots[s] != 0; s = (s + 1) & mask) {
                size_t pos = x->slots[s] - 1;
                const void *item = (const char *) items + pos * size;
                if (streq(item_id(items, size, pos), id) && (!accept || accept(item)))
                        return (ssize_t) pos;
        }
        return -1;
}

ssize_t journal_index_find(const JournalIndex *x, const void *items, size_t size, const char *id) {
        return index_find(x, items, size, id, NULL);
}

/* ---- the journal ---- */

int journal_new(Journal **ret) {
        Journal *j = calloc(1, sizeof(Journal));
        if (!j)
                return -ENOMEM;
        j->transaction.op = _JOURNAL_OP_INVALID;
        *ret = j;
        return 0;
}

static void transaction_done(JournalTransaction *t) {
        free(t->steps);
        free(t->new_originals);
        *t = (JournalTransaction) { .op = _JOURNAL_OP_INVALID };
}

Journal *journal_free(Journal *j) {
        if (!j)
                return NULL;
        for (size_t i = 0; i < j->n_originals; i++)
                free(j->originals[i].files);
        free(j->originals);
        free(j->applied);
        free(j->unmovable);
        transaction_done(&j->transaction);
        journal_index_done(&j->originals_index);
        journal_index_done(&j->applied_index);
        journal_index_done(&j->unmovable_index);
        while (j->chunks) {
                JournalChunk *c = j->chunks;
                j->chunks = c->next;
                free(c);
        }
        free(j);
        return NULL;
}

static bool knob_live(const void *item) {
        return !((const JournalKnob *) item)->removed;
}

const JournalKnob *journal_find_original(const Journal *j, const char *id) {
        ssize_t i = index_find(&j->originals_index, j->originals, sizeof(JournalKnob), id, knob_live);
        return i < 0 ? NULL : &j->originals[i];
}

int journal_knob_make(Journal *j, const Knob *k, const char *value, JournalKnob *ret) {
        JournalKnob e = { .domain = k->domain, .kind = k->kind, .reboot = k->reboot };
        int r;
        if ((r = journal_strdup(j, k->id, &e.id)) < 0 || (r = journal_strdup(j, k->path, &e.path)) < 0 ||
            (r = journal_strdup(j, value, &e.value)) < 0)
                return r;
        *ret = e;
        return 0;
}

/* Appends e to a list of knobs and to its index. */
static int knobs_append(JournalKnob **l, size_t *n, size_t *cap, JournalIndex *x, const JournalKnob *e) {
        int r = GROW_ARRAY(*l, *cap, *n, 16);
        if (r < 0)
                return r;
        (*l)[(*n)++] = *e;
        r = index_add(x, *l, sizeof(JournalKnob), *n);
        if (r < 0)
                (*n)--;
        return r;
}

int journal_originals_append(Journal *j, const JournalKnob *e) {
        return knobs_append(&j->originals, &j->n_originals, &j->cap_originals, &j->originals_index, e);
}

int journal_add_original(Journal *j, const Knob *k, const char *value) {
        JournalKnob e;
        int r = journal_knob_make(j, k, value, &e);
        if (r < 0)
                return r;
        return journal_originals_append(j, &e);
}

void journal_remove_original(Journal *j, const char *id) {
        JournalKnob *k = (JournalKnob *) journal_find_original(j, id);
        if (k)
                k->removed = true;
}

const JournalFile *journal_find_original_file(const JournalKnob *o, const char *path) {
        for (size_t i = 0; o && path && i < o->n_files; i++)
                if (streq(o->files[i].path, path))
                        return &o->files[i];
        return NULL;
}

/* Appends path's original to o (its strings copied into j). */
int journal_original_file_append(Journal *j, JournalKnob *o, const char *path, const char *value) {
        JournalFile f;
        int r;
        if ((r = journal_strdup(j, path, &f.path)) < 0 || (r = journal_strdup(j, value, &f.value)) < 0)
                return r;
        JournalFile *l = realloc(o->files, (o->n_files + 1) * sizeof(JournalFile));
        if (!l)
                return -ENOMEM;
        l[o->n_files++] = f;
        o->files = l;
        return 0;
}

int journal_add_original_file(Journal *j, const char *id, const char *path, const char *value) {
        JournalKnob *o = (JournalKnob *) journal_find_original(j, id);
        if (!o || !path)
                return -EINVAL;
        if (journal_find_original_file(o, path))
                return 0;
        return journal_original_file_append(j, o, path, value);
}

size_t journal_count_originals(const Journal *j) {
        size_t n = 0;
        for (size_t i = 0; i < j->n_originals; i++)
                n += !j->originals[i].removed;
        return n;
}

const JournalKnob *journal_find_applied(const Journal *j, const char *id) {
        ssize_t i = index_find(&j->applied_index, j->applied, sizeof(JournalKnob), id, NULL);
        return i < 0 ? NULL : &j->applied[i];
}

int journal_set_applied(Journal *j, JournalKnob *l, size_t n) {
        JournalIndex x = {};
        int r = journal_index_build(&x, l, sizeof(JournalKnob), n);
        if (r < 0)
                return r;
        free(j->applied);
        journal_index_done(&j->applied_index);
        j->applied = l;
        j->n_applied = j->cap_applied = n;
        j->applied_index = x;
        return 0;
}

int journal_applied_append(Journal *j, const JournalKnob *e) {
        return knobs_append(&j->applied, &j->n_applied, &j->cap_applied, &j->applied_index, e);
}

const char *journal_find_unmovable(const Journal *j, const char *id) {
        ssize_t i = index_find(&j->unmovable_index, j->unmovable, sizeof(JournalUnmovable), id, NULL);
        return i < 0 ? NULL : strempty(j->unmovable[i].reason);
}

int journal_set_unmovable(Journal *j, const char *id, const char *reason) {
        ssize_t i = index_find(&j->unmovable_index, j->unmovable, sizeof(JournalUnmovable), id, NULL);
        if (i >= 0)
                return journal_set(j, &j->unmovable[i].reason, reason);
        JournalUnmovable u;
        int r;
        if ((r = journal_strdup(j, id, &u.id)) < 0 || (r = journal_strdup(j, reason, &u.reason)) < 0)
                return r;
        r = GROW_ARRAY(j->unmovable, j->cap_unmovable, j->n_unmovable, 16);
        if (r < 0)
                return r;
        j->unmovable[j->n_unmovable++] = u;
        r = index_add(&j->unmovable_index, j->unmovable, sizeof(JournalUnmovable), j->n_unmovable);
        if (r < 0)
                j->n_unmovable--;
        return r;
}

void journal_clear_unmovable(Journal *j) {
        j->n_unmovable = 0;
        if (j->unmovable_index.slots)
                memset(j->unmovable_index.slots, 0, j->unmovable_index.n_slots * sizeof(uint32_t));
}

int journal_begin(Journal *j, JournalOp op, const char *profile, const char *started) {
        JournalTransaction t = { .op = op };
        int r;
        if ((r = journal_strdup(j, profile, &t.profile)) < 0 || (r = journal_strdup(j, started, &t.started)) < 0)
                return r;
        transaction_done(&j->transaction);
        j->transaction = t;
        j->transaction_open = true;
        return 0;
}

int journal_steps_append(Journal *j, const JournalStep *s) {
        JournalTransaction *t = &j->transaction;
        int r = GROW_ARRAY(t->steps, t->cap_steps, t->n_steps, 16);
        if (r < 0)
                return r;
        t->steps[t->n_steps++] = *s;
        return 0;
}

int journal_add_step(Journal *j, const Knob *k, const char *before, const char *after, bool restore) {
        JournalStep s = { .domain = k->domain, .kind = k->kind, .reboot = k->reboot, .restore = restore };
        int r;
        if ((r = journal_strdup(j, k->id, &s.id)) < 0 || (r = journal_strdup(j, k->path, &s.path)) < 0 ||
            (r = journal_strdup(j, before, &s.before)) < 0 || (r = journal_strdup(j, after, &s.after)) < 0)
                return r;
        return journal_steps_append(j, &s);
}

int journal_new_originals_append(Journal *j, const char *id) {
        JournalTransaction *t = &j->transaction;
        int r = GROW_ARRAY(t->new_originals, t->cap_new_originals, t->n_new_originals, 16);
        if (r < 0)
                return r;
        t->new_originals[t->n_new_originals++] = id;
        return 0;
}

int journal_add_new_original(Journal *j, const char *id) {
        const char *s;
        int r = journal_strdup(j, id, &s);
        if (r < 0)
                return r;
        return journal_new_originals_append(j, s);
}

void journal_end(Journal *j) {
        transaction_done(&j->transaction);
        j->transaction_open = false;
}

int journal_set_last_error(Journal *j, const char *knob, const char *path, int error, const char *detail,
                           const char *message, const char *at) {
        JournalLastError le = { .error = error };
        int r;
        if ((r = journal_strdup(j, knob, &le.knob)) < 0 || (r = journal_strdup(j, path, &le.path)) < 0 ||
            (r = journal_strdup(j, detail, &le.detail)) < 0 || (r = journal_strdup(j, message, &le.message)) < 0 ||
            (r = journal_strdup(j, at, &le.at)) < 0)
                return r;
        j->last_error = le;
        j->has_last_error = true;
        return 0;
}

void journal_clear_last_error(Journal *j) {
        j->last_error = (JournalLastError) {};
        j->has_last_error = false;
}

Knob journal_knob(const JournalKnob *k) {
        return (Knob) {
                .id = (char *) k->id,
                .domain = k->domain,
                .kind = k->kind,
                .path = (char *) k->path,
                .reboot = k->reboot,
        };
}

Knob journal_step_knob(const JournalStep *s) {
        return (Knob) {
                .id = (char *) s->id,
                .domain = s->domain,
                .kind = s->kind,
                .path = (char *) s->path,
                .reboot = s->reboot,
        };
}

/* ---- small things ---- */

char *journal_now_iso8601(void) {
        time_t t = time(NULL);
        struct tm tm;
        char buf[32];
        if (!gmtime_r(&t, &tm) || strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
                return NULL;
        return strdup(buf);
}

uint64_t journal_digest(const void *p, size_t n) {
        uint64_t h = UINT64_C(0xcbf29ce484222325); /* FNV-1a */
        for (const unsigned char *c = p; n > 0; c++, n--) {
                h ^= *c;
                h *= UINT64_C(0x100000001b3);
        }
        return h;
}

char *journal_hash(const json_t *doc) {
        _cleanup_free_ char *text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
        if (!text)
                return NULL;
        uint64_t h = journal_digest(text, strlen(text));
        char *s;
        return asprintf(&s, "fnv1a64:%016llx", (unsigned long long) h) < 0 ? NULL : s;
}
