/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "journal.h"
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

void journal_error_done(JournalError *e) {
        free(e->message);
        *e = (JournalError) {};
}

Root *journal_root(Root *root, const char **ret_dir) {
        *ret_dir = root->state ? "." : JOURNAL_DIR;
        return root->state ? root->state : root;
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

static int originals_append(Journal *j, const JournalKnob *e) {
        return knobs_append(&j->originals, &j->n_originals, &j->cap_originals, &j->originals_index, e);
}

int journal_add_original(Journal *j, const Knob *k, const char *value) {
        JournalKnob e;
        int r = journal_knob_make(j, k, value, &e);
        if (r < 0)
                return r;
        return originals_append(j, &e);
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
static int original_file_append(Journal *j, JournalKnob *o, const char *path, const char *value) {
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
        return original_file_append(j, o, path, value);
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

static int applied_append(Journal *j, const JournalKnob *e) {
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

static int steps_append(Journal *j, const JournalStep *s) {
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
        return steps_append(j, &s);
}

static int new_originals_append(Journal *j, const char *id) {
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
        return new_originals_append(j, s);
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

/* ---- load: the document into C types, every entry checked ---- */

typedef struct Parser {
        Journal *j;
        const char *name; /* the file, for messages */
        JournalError *e;
} Parser;

_printf_(3, 4) static int refuse(Parser *p, const char *where, const char *fmt, ...) {
        _cleanup_free_ char *what = NULL;
        va_list ap;
        va_start(ap, fmt);
        int n = vasprintf(&what, fmt, ap);
        va_end(ap);
        if (n < 0)
                return -ENOMEM;
        free(p->e->message);
        p->e->message = NULL;
        if (asprintf(&p->e->message, "%s: %s%s%s", p->name, strempty(where), where ? ": " : "", what) < 0) {
                p->e->message = NULL;
                return -ENOMEM;
        }
        return -EBADMSG;
}

static const char *json_kind(const json_t *v) {
        switch (json_typeof(v)) {
        case JSON_OBJECT:
                return "an object";
        case JSON_ARRAY:
                return "an array";
        case JSON_STRING:
                return "a string";
        case JSON_INTEGER:
        case JSON_REAL:
                return "a number";
        case JSON_TRUE:
        case JSON_FALSE:
                return "a boolean";
        default:
                return "null";
        }
}

/* A string or null field; a missing one is an error when required. */
static int get_string(Parser *p, const char *where, json_t *o, const char *key, bool required, const char **ret) {
        json_t *v = json_object_get(o, key);
        if (!v && required)
                return refuse(p, where, "\"%s\" is missing", key);
        if (v && !json_is_string(v) && !json_is_null(v))
                return refuse(p, where, "\"%s\" is %s, not a string or null", key, json_kind(v));
        return journal_strdup(p->j, json_string_value(v), ret);
}

static int get_bool(Parser *p, const char *where, json_t *o, const char *key, bool *ret) {
        json_t *v = json_object_get(o, key);
        if (v && !json_is_boolean(v))
                return refuse(p, where, "\"%s\" is %s, not true or false", key, json_kind(v));
        *ret = json_is_true(v);
        return 0;
}

static bool entry_number(const char *id, const char **ret_x, size_t *ret_len, unsigned long *ret);
static char *expand_number(const char *s, const char *x, size_t len, unsigned long m, bool *oom);

/* More knobs than a journal of any host has in one run: a bound on what "also" may expand to. */
#define ALSO_MAX ((size_t) 1 << 20)

/* The numbers of e's "also" (none without one): ascending ranges, each above id's own number. */
static int parse_also(Parser *p, const char *where, json_t *e, const char *id, unsigned long **ret, size_t *ret_n) {
        json_t *v = json_object_get(e, "also");
        const char *x;
        size_t len, n = 0, cap = 0;
        unsigned long last;
        *ret = NULL;
        *ret_n = 0;
        if (!v)
                return 0;
        if (!json_is_string(v))
                return refuse(p, where, "\"also\" is %s, not a string", json_kind(v));
        if (!entry_number(id, &x, &len, &last))
                return refuse(p, where, "\"also\" is given, but the knob id has no number to replace");
        _cleanup_free_ unsigned long *l = NULL;
        for (const char *c = json_string_value(v);;) {
                char *end;
                if (*c < '0' || *c > '9')
                        return refuse(p, where,
                                      "\"also\" is not a list of ascending numbers and ranges (\"42-97,120\")");
                unsigned long a = strtoul(c, &end, 10), b = a;
                if (*end == '-') {
                        c = end + 1;
                        if (*c < '0' || *c > '9')
                                return refuse(p, where, "\"also\" has a range without its end");
                        b = strtoul(c, &end, 10);
                }
                if (a <= last || b < a || b > 999999999UL || b - a >= ALSO_MAX - n)
                        return refuse(p, where, "\"also\" has %lu-%lu: not ascending, or too many knobs", a, b);
                if (n + (b - a + 1) > cap) {
                        size_t c2 = MAX(2 * cap, n + (b - a + 1));
                        unsigned long *m = realloc(l, c2 * sizeof(unsigned long));
                        if (!m)
                                return -ENOMEM;
                        l = m;
                        cap = c2;
                }
                for (unsigned long m = a; m <= b; m++)
                        l[n++] = m;
                last = b;
                if (*end == '\0')
                        break;
                if (*end != ',')
                        return refuse(p, where,
                                      "\"also\" is not a list of ascending numbers and ranges (\"42-97,120\")");
                c = end + 1;
        }
        *ret = TAKE_PTR(l);
        *ret_n = n;
        return 0;
}

/* e's key ("values", "befores"): n strings or nulls, one per number of "also"; NULL when left out. */
static int parse_also_values(Parser *p, const char *where, json_t *e, const char *key, size_t n, json_t **ret) {
        json_t *v = json_object_get(e, key);
        *ret = NULL;
        if (!v)
                return 0;
        if (!json_is_array(v) || json_array_size(v) != n)
                return refuse(p, where, "\"%s\" is not an array of one value for each knob of \"also\" (%zu)", key, n);
        for (size_t i = 0; i < n; i++) {
                json_t *x = json_array_get(v, i);
                if (!json_is_string(x) && !json_is_null(x))
                        return refuse(p, where, "\"%s\"[%zu] is %s, not a string or null", key, i, json_kind(x));
        }
        *ret = v;
        return 0;
}

/* id and path of an entry with "also", for its number m, in j's strings. */
static int also_expand(Journal *j, const char *id, const char *path, unsigned long m, const char **ret_id,
                       const char **ret_path) {
        const char *x;
        size_t len;
        unsigned long h;
        bool oom = false;
        if (!entry_number(id, &x, &len, &h))
                return -EINVAL;
        _cleanup_free_ char *eid = expand_number(id, x, len, m, &oom), *epath = expand_number(path, x, len, m, &oom);
        if (oom || !eid)
                return -ENOMEM;
        int r = journal_strdup(j, eid, ret_id);
        return r < 0 ? r : journal_strdup(j, epath, ret_path);
}

/* The knob description every entry has: domain, kind, path, reboot. */
static int get_knob(Parser *p, const char *where, json_t *o, Domain *ret_domain, ValueKind *ret_kind,
                    const char **ret_path, bool *ret_reboot) {
        if (!json_is_object(o))
                return refuse(p, where, "is %s, not an object", json_kind(o));
        json_t *d = json_object_get(o, "domain"), *k = json_object_get(o, "kind");
        if (!json_is_string(d))
                return refuse(p, where, d ? "\"domain\" is %s, not a string" : "\"domain\" is missing%s",
                              d ? json_kind(d) : "");
        Domain domain = domain_from_string(json_string_value(d));
        if (domain < 0)
                return refuse(p, where, "unknown domain \"%s\"", json_string_value(d));
        if (!json_is_string(k))
                return refuse(p, where, k ? "\"kind\" is %s, not a string" : "\"kind\" is missing%s",
                              k ? json_kind(k) : "");
        ValueKind kind = value_kind_from_string(json_string_value(k));
        if (kind < 0)
                return refuse(p, where, "unknown kind \"%s\"", json_string_value(k));
        int r = get_string(p, where, o, "path", /* required= */ false, ret_path);
        if (r < 0)
                return r;
        r = get_bool(p, where, o, "reboot", ret_reboot);
        if (r < 0)
                return r;
        *ret_domain = domain;
        *ret_kind = kind;
        return 0;
}

/* "applied[3] (irq/41/affinity)": an array entry, by position and, where it has one, its knob. */
static char *array_where(const char *array, size_t i, json_t *e) {
        const char *id = json_string_value(json_object_get(e, "knob"));
        char *s;
        if (asprintf(&s, "%s[%zu]%s%s%s", array, i, id ? " (" : "", strempty(id), id ? ")" : "") < 0)
                return NULL;
        return s;
}

/* An original's "files": { PATH: VALUE }, each value a string or null. */
static int parse_original_files(Parser *p, const char *where, json_t *files, JournalKnob *o) {
        const char *path;
        json_t *v;
        if (!files)
                return 0;
        if (!json_is_object(files))
                return refuse(p, where, "\"files\" is %s, not an object", json_kind(files));
        json_object_foreach (files, path, v) {
                if (!json_is_string(v) && !json_is_null(v))
                        return refuse(p, where, "\"files\"[\"%s\"] is %s, not a string or null", path, json_kind(v));
                int r = original_file_append(p->j, o, path, json_string_value(v));
                if (r < 0)
                        return r;
        }
        return 0;
}

static int parse_originals(Parser *p, json_t *originals) {
        const char *id;
        json_t *e;
        json_object_foreach (originals, id, e) {
                _cleanup_free_ char *where = NULL;
                JournalKnob k = {};
                if (asprintf(&where, "originals[\"%s\"]", id) < 0)
                        return -ENOMEM;
                int r = get_knob(p, where, e, &k.domain, &k.kind, &k.path, &k.reboot);
                if (r < 0)
                        return r;
                _cleanup_free_ unsigned long *also = NULL;
                size_t n_also;
                if ((r = get_string(p, where, e, "value", /* required= */ true, &k.value)) < 0 ||
                    (r = journal_strdup(p->j, id, &k.id)) < 0 ||
                    (r = parse_also(p, where, e, id, &also, &n_also)) < 0 ||
                    (r = parse_original_files(p, where, json_object_get(e, "files"), &k)) < 0) {
                        free(k.files);
                        return r;
                }
                if (n_also > 0 && k.n_files > 0) {
                        free(k.files);
                        return refuse(p, where,
                                      "\"also\" and \"files\" together: a knob of several files is "
                                      "written alone");
                }
                json_t *values;
                JournalKnob head = k;
                if ((r = parse_also_values(p, where, e, "values", n_also, &values)) < 0 ||
                    (r = originals_append(p->j, &k)) < 0) {
                        free(k.files);
                        return r;
                }
                for (size_t a = 0; a < n_also; a++) {
                        k = head;
                        if ((r = also_expand(p->j, head.id, head.path, also[a], &k.id, &k.path)) < 0 ||
                            (values &&
                             (r = journal_strdup(p->j, json_string_value(json_array_get(values, a)), &k.value)) < 0) ||
                            (r = originals_append(p->j, &k)) < 0)
                                return r;
                }
        }
        return 0;
}

static int parse_applied(Parser *p, json_t *applied) {
        size_t i;
        json_t *e;
        json_array_foreach (applied, i, e) {
                _cleanup_free_ char *where = array_where("applied", i, e);
                JournalKnob k = {};
                if (!where)
                        return -ENOMEM;
                int r = get_knob(p, where, e, &k.domain, &k.kind, &k.path, &k.reboot);
                if (r < 0)
                        return r;
                if ((r = get_string(p, where, e, "knob", /* required= */ true, &k.id)) < 0 ||
                    (r = get_string(p, where, e, "desired", /* required= */ true, &k.value)) < 0)
                        return r;
                if (!k.id)
                        return refuse(p, where, "\"knob\" is null, not a string");
                _cleanup_free_ unsigned long *also = NULL;
                size_t n_also;
                if ((r = parse_also(p, where, e, k.id, &also, &n_also)) < 0 || (r = applied_append(p->j, &k)) < 0)
                        return r;
                for (size_t a = 0; a < n_also; a++) {
                        JournalKnob m = k;
                        if ((r = also_expand(p->j, k.id, k.path, also[a], &m.id, &m.path)) < 0 ||
                            (r = applied_append(p->j, &m)) < 0)
                                return r;
                }
        }
        return 0;
}

static int parse_unmovable(Parser *p, json_t *unmovable) {
        const char *id;
        json_t *e;
        json_object_foreach (unmovable, id, e) {
                if (!json_is_string(e)) {
                        _cleanup_free_ char *where = NULL;
                        if (asprintf(&where, "unmovable[\"%s\"]", id) < 0)
                                return -ENOMEM;
                        return refuse(p, where, "is %s, not a string", json_kind(e));
                }
                int r = journal_set_unmovable(p->j, id, json_string_value(e));
                if (r < 0)
                        return r;
        }
        return 0;
}

static int parse_transaction(Parser *p, json_t *tx) {
        const char *where = "transaction";
        JournalTransaction *t = &p->j->transaction;
        json_t *op = json_object_get(tx, "op"), *steps = json_object_get(tx, "steps"),
               *fresh = json_object_get(tx, "new_originals");
        int r;

        if (!json_is_object(tx))
                return refuse(p, where, "is %s, not an object or null", json_kind(tx));
        /* An older or hand-written transaction may leave out its op, profile and start. */
        if (op && !json_is_null(op)) {
                if (!json_is_string(op))
                        return refuse(p, where, "\"op\" is %s, not a string", json_kind(op));
                t->op = journal_op_from_string(json_string_value(op));
                if (t->op < 0)
                        return refuse(p, where, "unknown op \"%s\"", json_string_value(op));
        }
        if ((r = get_string(p, where, tx, "profile", false, &t->profile)) < 0 ||
            (r = get_string(p, where, tx, "started", false, &t->started)) < 0)
                return r;
        if (steps && !json_is_array(steps))
                return refuse(p, where, "\"steps\" is %s, not an array", json_kind(steps));
        if (fresh && !json_is_array(fresh))
                return refuse(p, where, "\"new_originals\" is %s, not an array", json_kind(fresh));
        p->j->transaction_open = true;

        size_t i;
        json_t *e;
        json_array_foreach (steps, i, e) {
                _cleanup_free_ char *sw = array_where("transaction.steps", i, e);
                JournalStep s = {};
                if (!sw)
                        return -ENOMEM;
                if ((r = get_knob(p, sw, e, &s.domain, &s.kind, &s.path, &s.reboot)) < 0 ||
                    (r = get_string(p, sw, e, "knob", true, &s.id)) < 0 ||
                    (r = get_string(p, sw, e, "before", true, &s.before)) < 0 ||
                    (r = get_string(p, sw, e, "after", true, &s.after)) < 0 ||
                    (r = get_bool(p, sw, e, "restore", &s.restore)) < 0)
                        return r;
                if (!s.id)
                        return refuse(p, sw, "\"knob\" is null, not a string");
                _cleanup_free_ unsigned long *also = NULL;
                size_t n_also;
                json_t *befores;
                if ((r = parse_also(p, sw, e, s.id, &also, &n_also)) < 0 ||
                    (r = parse_also_values(p, sw, e, "befores", n_also, &befores)) < 0 ||
                    (r = steps_append(p->j, &s)) < 0)
                        return r;
                for (size_t a = 0; a < n_also; a++) {
                        JournalStep m = s;
                        if ((r = also_expand(p->j, s.id, s.path, also[a], &m.id, &m.path)) < 0 ||
                            (befores &&
                             (r = journal_strdup(p->j, json_string_value(json_array_get(befores, a)), &m.before)) <
                                     0) ||
                            (r = steps_append(p->j, &m)) < 0)
                                return r;
                }
        }
        json_array_foreach (fresh, i, e) {
                const char *id;
                if (!json_is_string(e))
                        return refuse(p, where, "\"new_originals\"[%zu] is %s, not a string", i, json_kind(e));
                if ((r = journal_strdup(p->j, json_string_value(e), &id)) < 0 ||
                    (r = new_originals_append(p->j, id)) < 0)
                        return r;
        }
        return 0;
}

static int parse_last_error(Parser *p, json_t *le) {
        const char *where = "last_error";
        JournalLastError l = {};
        int r;

        if (!json_is_object(le))
                return refuse(p, where, "is %s, not an object or null", json_kind(le));
        json_t *err = json_object_get(le, "errno");
        if (err && !json_is_integer(err))
                return refuse(p, where, "\"errno\" is %s, not an integer", json_kind(err));
        l.error = (int) json_integer_value(err);
        if ((r = get_string(p, where, le, "knob", false, &l.knob)) < 0 ||
            (r = get_string(p, where, le, "path", false, &l.path)) < 0 ||
            (r = get_string(p, where, le, "detail", false, &l.detail)) < 0 ||
            (r = get_string(p, where, le, "message", false, &l.message)) < 0 ||
            (r = get_string(p, where, le, "at", false, &l.at)) < 0)
                return r;
        p->j->last_error = l;
        p->j->has_last_error = true;
        return 0;
}

static int parse_document(Parser *p, json_t *doc) {
        json_t *version = json_object_get(doc, "version"), *originals = json_object_get(doc, "originals"),
               *applied = json_object_get(doc, "applied"), *unmovable = json_object_get(doc, "unmovable"),
               *source = json_object_get(doc, "source"), *tx = json_object_get(doc, "transaction"),
               *le = json_object_get(doc, "last_error");
        Journal *j = p->j;
        int r;

        if (!json_is_object(doc))
                return refuse(p, NULL, "not an rtpart journal: the document is %s, not an object", json_kind(doc));
        /* Version 1 has no "also"; a writer of version 1 would drop the knobs it stands for. */
        if (!json_is_integer(version) || json_integer_value(version) < 1 ||
            json_integer_value(version) > JOURNAL_VERSION)
                return refuse(p, NULL, "not an rtpart journal of version 1 or %d: \"version\" is %s", JOURNAL_VERSION,
                              version ? json_is_integer(version) ? "another number" : json_kind(version) : "missing");
        if (!json_is_object(originals))
                return refuse(p, NULL, "\"originals\" is %s, not an object",
                              originals ? json_kind(originals) : "missing");
        if (applied && !json_is_array(applied))
                return refuse(p, NULL, "\"applied\" is %s, not an array", json_kind(applied));
        if (unmovable && !json_is_object(unmovable))
                return refuse(p, NULL, "\"unmovable\" is %s, not an object", json_kind(unmovable));
        if (source && !json_is_object(source) && !json_is_null(source))
                return refuse(p, NULL, "\"source\" is %s, not an object or null", json_kind(source));

        if ((r = get_string(p, NULL, doc, "profile", false, &j->profile)) < 0 ||
            (r = get_string(p, NULL, doc, "profile_path", false, &j->profile_path)) < 0 ||
            (r = get_string(p, NULL, doc, "hash", false, &j->hash)) < 0 ||
            (r = get_string(p, NULL, doc, "applied_at", false, &j->applied_at)) < 0)
                return r;
        if (json_is_object(source)) {
                _cleanup_free_ char *text = json_dumps(source, JSON_COMPACT | JSON_PRESERVE_ORDER);
                if (!text || (r = journal_strdup(j, text, &j->source)) < 0)
                        return -ENOMEM;
        }
        if ((r = parse_originals(p, originals)) < 0 || (r = parse_applied(p, applied)) < 0 ||
            (r = parse_unmovable(p, unmovable)) < 0)
                return r;
        if (tx && !json_is_null(tx) && (r = parse_transaction(p, tx)) < 0)
                return r;
        if (le && !json_is_null(le) && (r = parse_last_error(p, le)) < 0)
                return r;
        return 0;
}

static void shrink_knobs(JournalKnob **l, size_t n, size_t *cap) {
        if (n == 0 || n == *cap)
                return;
        JournalKnob *m = realloc(*l, n * sizeof(JournalKnob));
        if (m) {
                *l = m;
                *cap = n;
        }
}

/* journal_parse() with the digest of text already computed. */
static int parse_digested(const char *text, size_t size, uint64_t digest, const char *name, Journal **ret,
                          JournalError *e) {
        _cleanup_(journal_freep) Journal *j = NULL;
        int r = journal_new(&j);
        if (r < 0)
                return r;
        if (text) {
                json_error_t jerr;
                json_t *doc = json_loadb(text, size, 0, &jerr);
                Parser p = { .j = j, .name = name ?: "state.json", .e = e };
                if (!doc)
                        return refuse(&p, NULL, "not JSON: %s (line %d)", jerr.text, jerr.line);
                r = parse_document(&p, doc);
                json_decref(doc);
                if (r < 0)
                        return r;
                /* The lists grew by doubling: held as long as the journal is (all of rtpartd's
                 * life), they keep only what they hold. */
                shrink_knobs(&j->originals, j->n_originals, &j->cap_originals);
                shrink_knobs(&j->applied, j->n_applied, &j->cap_applied);
        }
        j->digest = digest;
        *ret = TAKE_PTR(j);
        return 0;
}

int journal_parse(const char *text, size_t size, const char *name, Journal **ret, JournalError *e) {
        return parse_digested(text, size, journal_digest(strempty(text), text ? size : 0), name, ret, e);
}

int journal_read(Root *root, char **ret_text, size_t *ret_size) {
        const char *dir;
        Root *sr = journal_root(root, &dir);
        _cleanup_free_ char *file = NULL;
        if (asprintf(&file, "%s/state.json", dir) < 0)
                return -ENOMEM;
        char *text = NULL;
        size_t size = 0;
        /* Non-blocking: a FIFO (or a device) there is refused at once, never waited on. */
        _cleanup_close_ int fd = root_open(sr, file, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
        struct stat st;
        if (fd == -ENOENT)
                fd = -EBADF;
        else if (fd < 0)
                return fd;
        else if (fstat(fd, &st) < 0)
                return -errno;
        else if (!S_ISREG(st.st_mode))
                return -EBADFD;
        int k = fd >= 0 ? root_read_fd(fd, &text, &size) : 0;
        if (k < 0)
                return k;
        *ret_text = text;
        if (ret_size)
                *ret_size = size;
        return 0;
}

int journal_load_if_changed(Root *root, uint64_t unless_digest, Journal **ret, JournalError *e) {
        _cleanup_free_ char *text = NULL, *name = NULL, *file = NULL;
        size_t size = 0;
        int k = journal_read(root, &text, &size);
        if (k < 0)
                return k;
        /* Hashed once: to compare with the journal held, and as the new one's digest. */
        uint64_t digest = journal_digest(strempty(text), text ? size : 0);
        if (unless_digest != 0 && digest == unless_digest) {
                *ret = NULL;
                return 0;
        }
        const char *dir;
        Root *sr = journal_root(root, &dir);
        if (asprintf(&file, "%s/state.json", dir) < 0)
                return -ENOMEM;
        name = root_display_path(sr, file);
        if (!name)
                return -ENOMEM;
        k = parse_digested(text, size, digest, name, ret, e);
        return k < 0 ? k : 1;
}

int journal_load(Root *root, Journal **ret, JournalError *e) {
        int k = journal_load_if_changed(root, 0, ret, e);
        return k < 0 ? k : 0;
}

bool journal_transaction_open(Root *root) {
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        if (journal_read(root, &text, &size) < 0 || !text)
                return false;
        /* rtpart's writers (journal_format(), and indented jansson before it) begin every top-level
         * member on a line of its own after one space, nested ones deeper; a string holds no raw
         * newline. So a member "transaction" there is the document's own, and when it is the one
         * such line and null, no transaction is open: known without parsing the rest. Anything
         * else (another writer's layout) is parsed. */
        static const char key[] = "\n \"transaction\": ";
        const char *at = memmem(text, size, key, strlen(key));
        if (at && startswith(at + strlen(key), "null") &&
            !memmem(at + 1, size - (size_t) (at + 1 - text), key, strlen(key)))
                return false;
        _cleanup_(json_decrefp) json_t *doc = json_loadb(text, size, 0, NULL);
        return json_is_object(json_object_get(doc, "transaction"));
}

/* ---- save: the C types into the document, every step checked ---- */

/* ---- "also": consecutive entries alike but for a number, written as one ----
 *
 * An entry's number is the first run of digits in its knob id ("41" in irq/41/affinity), written
 * without leading zeros. A run of entries that agree in everything but their id and path, where
 * each one's id and path are the first one's with every run of digits equal to its number replaced
 * by another number, ascending, is written as the first entry with "also": the other numbers as a
 * list of ranges ("42-97,120"). 8192 IRQs placed alike take one entry, not 8192. */

#define NUMBER_MAX_DIGITS 9

/* The id's number: its first run of digits, if it has no leading zero and at most 9 digits. */
static bool entry_number(const char *id, const char **ret_x, size_t *ret_len, unsigned long *ret) {
        const char *x = id ? strpbrk(id, "0123456789") : NULL;
        if (!x)
                return false;
        size_t n = strspn(x, "0123456789");
        if (n > NUMBER_MAX_DIGITS || (n > 1 && x[0] == '0'))
                return false;
        *ret_x = x;
        *ret_len = n;
        *ret = strtoul(x, NULL, 10);
        return true;
}

/* s with every run of digits that is x (len bytes) replaced by m; NULL for NULL (and on OOM, with
 * *oom set). Called for every knob an "also" stands for (8192 per IRQ entry): copies, no printf. */
static char *expand_number(const char *s, const char *x, size_t len, unsigned long m, bool *oom) {
        if (!s)
                return NULL;
        char num[24], *e = num + sizeof(num);
        do
                *--e = (char) ('0' + m % 10);
        while ((m /= 10) > 0);
        size_t nlen = (size_t) (num + sizeof(num) - e), slen = strlen(s);
        /* Each run of len digits may grow to nlen: at most slen / len of them. */
        char *out = malloc(slen + (nlen > len ? slen / len * (nlen - len) : 0) + 1), *o = out;
        if (!out) {
                *oom = true;
                return NULL;
        }
        for (const char *c = s; *c;) {
                size_t d = strspn(c, "0123456789");
                if (d == 0) {
                        size_t n = strcspn(c, "0123456789");
                        memcpy(o, c, n);
                        o += n;
                        c += n;
                        continue;
                }
                if (d == len && memcmp(c, x, len) == 0) {
                        memcpy(o, e, nlen);
                        o += nlen;
                } else {
                        memcpy(o, c, d);
                        o += d;
                }
                c += d;
        }
        *o = 0;
        return out;
}

/* Whether t is expand_number(s, x, len, m), where num (nlen bytes) is m in decimal: compared as it
 * would be built, nothing allocated (the writer asks it of every pair of neighbouring entries). */
static bool is_expansion(const char *s, const char *x, size_t len, const char *num, size_t nlen, const char *t) {
        for (const char *c = s; *c;) {
                size_t d = strspn(c, "0123456789");
                if (d == 0)
                        d = strcspn(c, "0123456789");
                else if (d == len && memcmp(c, x, len) == 0) {
                        if (strncmp(t, num, nlen) != 0)
                                return false;
                        t += nlen;
                        c += d;
                        continue;
                }
                if (strncmp(t, c, d) != 0)
                        return false;
                t += d;
                c += d;
        }
        return *t == '\0';
}

/* Whether (id, path) is the head's with the number m in place of the head's, m > *last. */
static bool same_but_number(const char *hid, const char *hpath, const char *id, const char *path, unsigned long last,
                            unsigned long *ret_m) {
        const char *hx, *x;
        size_t hlen, len;
        unsigned long h, m;
        if (!entry_number(hid, &hx, &hlen, &h) || !entry_number(id, &x, &len, &m) || m <= last ||
            (hx - hid) != (x - id) || (!hpath) != (!path))
                return false;
        /* m's digits are id's own (entry_number() takes them without leading zeros). */
        if (!is_expansion(hid, hx, hlen, x, len, id) || (hpath && !is_expansion(hpath, hx, hlen, x, len, path)))
                return false;
        *ret_m = m;
        return true;
}

/* Collects the "also" ranges of a run of entries: add() each number in ascending order. */
typedef struct Also {
        StrBuf b;
        unsigned long first, last;
        size_t n;
} Also;

static void also_flush(Also *a) {
        if (a->n == 0)
                return;
        strbuf_appendf(&a->b, "%s%lu", a->b.len ? "," : "", a->first);
        if (a->last != a->first)
                strbuf_appendf(&a->b, "-%lu", a->last);
}

static void also_add(Also *a, unsigned long m) {
        if (a->n > 0 && m == a->last + 1) {
                a->last = m;
                return;
        }
        also_flush(a);
        a->first = a->last = m;
        a->n++;
}

static json_t *string_or_null(const char *s) {
        return s ? json_string(s) : json_null();
}

/* Sets key to v (taken, also on failure); false on failure. */
static bool set(json_t *o, const char *key, json_t *v) {
        return v && json_object_set_new(o, key, v) == 0;
}

/* The live original after position i (i: SIZE_MAX for the first), or n. */
static size_t next_original(const Journal *j, size_t i) {
        for (i = i == SIZE_MAX ? 0 : i + 1; i < j->n_originals && j->originals[i].removed; i++)
                ;
        return i;
}

static bool knobs_alike(const JournalKnob *a, const JournalKnob *b, bool any_value) {
        return a->domain == b->domain && a->kind == b->kind && a->reboot == b->reboot &&
                (any_value || streq_ptr(a->value, b->value)) && a->n_files == 0 && b->n_files == 0;
}

/* Values of a run's entries after its head, where they differ: "values" of originals, "befores"
 * of steps, one per number of "also". Left out when every one is the head's. */
typedef struct AlsoValues {
        StrBuf l; /* the values as JSON text, ", " between them */
        bool differ;
} AlsoValues;

static bool put_string(StrBuf *b, const char *s);

static bool also_value(AlsoValues *v, const char *head, const char *value) {
        v->differ = v->differ || !streq_ptr(head, value);
        if (v->l.len)
                strbuf_append(&v->l, ", ");
        return put_string(&v->l, value); /* false: out of memory, or not UTF-8 */
}

/* The position of the last entry after l[0] (of n) that "also" takes in, into a (0: none); with
 * v, values may differ and go into v. */
static size_t knob_run(const JournalKnob *l, size_t n, Also *a, AlsoValues *v, bool *ok) {
        const char *x;
        size_t len, taken = 0;
        unsigned long last, m;
        if (!entry_number(l[0].id, &x, &len, &last))
                return 0;
        /* A run that begins alike stays alike: the values of those that differ go with their own. */
        for (size_t i = 1; v && i < n; i++)
                if (!l[i].removed) {
                        if (streq_ptr(l[0].value, l[i].value))
                                v = NULL;
                        break;
                }
        for (size_t i = 1; i < n; i++) {
                if (l[i].removed)
                        continue; /* forgotten: not written, and no end of the run */
                if (!knobs_alike(&l[0], &l[i], v) || !same_but_number(l[0].id, l[0].path, l[i].id, l[i].path, last, &m))
                        break;
                also_add(a, m);
                if (v && !also_value(v, l[0].value, l[i].value))
                        *ok = false;
                last = m;
                taken = i;
        }
        return taken;
}

static bool steps_alike(const JournalStep *a, const JournalStep *b, bool any_before) {
        return a->domain == b->domain && a->kind == b->kind && a->reboot == b->reboot && a->restore == b->restore &&
                streq_ptr(a->after, b->after) && (any_before || streq_ptr(a->before, b->before));
}

static size_t step_run(const JournalStep *l, size_t n, Also *a, AlsoValues *v, bool *ok) {
        const char *x;
        size_t len, taken = 0;
        unsigned long last, m;
        if (!entry_number(l[0].id, &x, &len, &last))
                return 0;
        bool any = n > 1 && !streq_ptr(l[0].before, l[1].before);
        for (size_t i = 1; i < n && steps_alike(&l[0], &l[i], any) &&
             same_but_number(l[0].id, l[0].path, l[i].id, l[i].path, last, &m);
             i++) {
                also_add(a, m);
                if (!also_value(v, l[0].before, l[i].before))
                        *ok = false;
                last = m;
                taken++;
        }
        return taken;
}

/* The document is written as text, each entry of originals, applied and steps straight from the C
 * types, one line each: the text is the only thing of the host's size in memory, never a tree of
 * the whole document beside it (the one of a large host's transaction is megabytes). jansson
 * writes only the few top-level members (put_member). */

/* Appends v (taken) as JSON text, on one line; false on failure. */
static bool put_json(StrBuf *b, json_t *v) {
        if (!v)
                return false;
        char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
        json_decref(v);
        if (!t)
                return false;
        strbuf_append(b, t);
        free(t);
        return !b->oom;
}

/* "key": v (taken), after a comma and newline when not first, indented by pad spaces. */
static bool put_member(StrBuf *b, unsigned pad, bool first, const char *key, json_t *v) {
        strbuf_appendf(b, "%s%*s", first ? "" : ",\n", (int) pad, "");
        if (!put_string(b, key)) {
                json_decref(v);
                return false;
        }
        strbuf_append(b, ": ");
        return put_json(b, v);
}

/* s as a JSON string, or null for NULL; false where s is not UTF-8, which JSON cannot hold (as
 * json_string() refuses it), or out of memory. */
static bool put_string(StrBuf *b, const char *s) {
        if (!s) {
                strbuf_append(b, "null");
                return !b->oom;
        }
        if (!utf8_valid(s))
                return false;
        static const char hex[] = "0123456789abcdef";
        size_t n = 2;
        for (const unsigned char *c = (const unsigned char *) s; *c; c++)
                n += *c == '"' || *c == '\\' ? 2 : *c < 0x20 ? 6 : 1;
        char *o = strbuf_room(b, n);
        if (!o)
                return false;
        *o++ = '"';
        for (const unsigned char *c = (const unsigned char *) s; *c; c++)
                if (*c == '"' || *c == '\\') {
                        *o++ = '\\';
                        *o++ = (char) *c;
                } else if (*c < 0x20) {
                        memcpy(o, "\\u00", 4);
                        o[4] = hex[*c >> 4];
                        o[5] = hex[*c & 15];
                        o += 6;
                } else
                        *o++ = (char) *c;
        *o++ = '"';
        b->len += n;
        b->s[b->len] = 0;
        return true;
}

/* The knob description every entry begins with: {"domain", "kind", "path", "reboot". */
static bool put_head(StrBuf *b, Domain d, ValueKind k, const char *path, bool reboot) {
        strbuf_appendf(b, "{\"domain\": \"%s\", \"kind\": \"%s\", \"path\": ", domain_to_string(d),
                       value_kind_to_string(k));
        bool ok = put_string(b, path);
        strbuf_append(b, reboot ? ", \"reboot\": true" : ", \"reboot\": false");
        return ok && !b->oom;
}

/* , "key": s */
static bool put_field(StrBuf *b, const char *key, const char *s) {
        strbuf_appendf(b, ", \"%s\": ", key);
        return put_string(b, s);
}

/* "also" and the values of the run, where it has more than its head. */
static bool put_also(StrBuf *b, Also *a, AlsoValues *v, const char *key) {
        if (a->n > 0) {
                also_flush(a);
                strbuf_appendf(b, ", \"also\": \"%s\"", strempty(a->b.s));
        }
        if (v && v->differ)
                strbuf_appendf(b, ", \"%s\": [%s]", key, strempty(v->l.s));
        return !b->oom;
}

static bool put_originals(StrBuf *b, const Journal *j) {
        bool first = true;
        strbuf_append(b, "{");
        for (size_t i = next_original(j, SIZE_MAX); i < j->n_originals;) {
                const JournalKnob *k = &j->originals[i];
                strbuf_append(b, first ? "\n  " : ",\n  ");
                bool ok = put_string(b, k->id);
                strbuf_append(b, ": ");
                ok = ok && put_head(b, k->domain, k->kind, k->path, k->reboot) && put_field(b, "value", k->value);
                if (ok && k->n_files > 0) {
                        strbuf_append(b, ", \"files\": {");
                        for (size_t f = 0; ok && f < k->n_files; f++) {
                                strbuf_append(b, f ? ", " : "");
                                ok = put_string(b, k->files[f].path);
                                strbuf_append(b, ": ");
                                ok = ok && put_string(b, k->files[f].value);
                        }
                        strbuf_append(b, "}");
                }
                Also a = {};
                AlsoValues v = {};
                size_t taken = ok ? knob_run(k, j->n_originals - i, &a, &v, &ok) : 0;
                ok = ok && put_also(b, &a, &v, "values");
                strbuf_done(&a.b);
                strbuf_done(&v.l);
                strbuf_append(b, "}");
                if (!ok || b->oom)
                        return false;
                first = false;
                i = next_original(j, i + taken);
        }
        strbuf_append(b, first ? "}" : "\n }");
        return !b->oom;
}

static bool put_applied(StrBuf *b, const Journal *j) {
        strbuf_append(b, "[");
        for (size_t i = 0; i < j->n_applied;) {
                const JournalKnob *k = &j->applied[i];
                Also al = {};
                bool ok = true;
                size_t taken = knob_run(k, j->n_applied - i, &al, NULL, &ok); /* none removed */
                strbuf_append(b, i == 0 ? "\n  " : ",\n  ");
                ok = ok && put_head(b, k->domain, k->kind, k->path, k->reboot) && put_field(b, "desired", k->value) &&
                        put_field(b, "knob", k->id) && put_also(b, &al, NULL, NULL);
                strbuf_done(&al.b);
                strbuf_append(b, "}");
                if (!ok || b->oom)
                        return false;
                i += 1 + taken;
        }
        strbuf_append(b, j->n_applied == 0 ? "]" : "\n ]");
        return !b->oom;
}

static json_t *format_unmovable(const Journal *j) {
        json_t *o = json_object();
        for (size_t i = 0; o && i < j->n_unmovable; i++)
                if (!set(o, j->unmovable[i].id, json_string(strempty(j->unmovable[i].reason)))) {
                        json_decref(o);
                        return NULL;
                }
        return o;
}

static bool put_transaction(StrBuf *b, const Journal *j) {
        const JournalTransaction *t = &j->transaction;
        if (!j->transaction_open)
                return put_json(b, json_null());
        json_t *fresh = json_array();
        for (size_t i = 0; fresh && i < t->n_new_originals; i++)
                if (json_array_append_new(fresh, json_string(t->new_originals[i])) < 0) {
                        json_decref(fresh);
                        fresh = NULL;
                }
        strbuf_append(b, "{\n");
        if (!put_member(b, 2, true, "op", string_or_null(journal_op_to_string(t->op))) ||
            !put_member(b, 2, false, "profile", string_or_null(t->profile)) ||
            !put_member(b, 2, false, "started", string_or_null(t->started)) ||
            !put_member(b, 2, false, "new_originals", fresh))
                return false;
        strbuf_append(b, ",\n  \"steps\": [");
        for (size_t i = 0; i < t->n_steps;) {
                const JournalStep *s = &t->steps[i];
                Also a = {};
                AlsoValues v = {};
                bool ok = true;
                size_t taken = step_run(s, t->n_steps - i, &a, &v, &ok);
                strbuf_append(b, i == 0 ? "\n   " : ",\n   ");
                ok = ok && put_head(b, s->domain, s->kind, s->path, s->reboot) && put_field(b, "knob", s->id) &&
                        put_field(b, "before", s->before) && put_field(b, "after", s->after);
                if (s->restore)
                        strbuf_append(b, ", \"restore\": true");
                ok = ok && put_also(b, &a, &v, "befores");
                strbuf_done(&a.b);
                strbuf_done(&v.l);
                strbuf_append(b, "}");
                if (!ok || b->oom)
                        return false;
                i += 1 + taken;
        }
        strbuf_append(b, t->n_steps == 0 ? "]\n }" : "\n  ]\n }");
        return !b->oom;
}

json_t *journal_last_error_to_json(const Journal *j) {
        const JournalLastError *l = &j->last_error;
        if (!j->has_last_error)
                return json_null();
        if (!l->knob)
                return json_pack("{s:o, s:o}", "message", string_or_null(l->message), "at", string_or_null(l->at));
        return json_pack("{s:s, s:o, s:i, s:o, s:o, s:o}", "knob", l->knob, "path", string_or_null(l->path), "errno",
                         l->error, "detail", string_or_null(l->detail), "message", string_or_null(l->message), "at",
                         string_or_null(l->at));
}

int journal_format(const Journal *j, char **ret_text, size_t *ret_size) {
        json_t *source = NULL;
        if (j->source) {
                source = json_loads(j->source, 0, NULL);
                if (!source)
                        return -ENOMEM; /* it was JSON when it was stored */
        }
        StrBuf b = {};
        strbuf_append(&b, "{\n");
        bool ok = put_member(&b, 1, true, "version", json_integer(JOURNAL_VERSION)) &&
                put_member(&b, 1, false, "profile", string_or_null(j->profile)) &&
                put_member(&b, 1, false, "hash", string_or_null(j->hash)) &&
                put_member(&b, 1, false, "applied_at", string_or_null(j->applied_at)) &&
                put_member(&b, 1, false, "profile_path", string_or_null(j->profile_path)) &&
                put_member(&b, 1, false, "last_error", journal_last_error_to_json(j)) &&
                put_member(&b, 1, false, "unmovable", format_unmovable(j));
        strbuf_append(&b, ",\n \"transaction\": ");
        ok = ok && put_transaction(&b, j);
        strbuf_append(&b, ",\n \"originals\": ");
        ok = ok && put_originals(&b, j);
        strbuf_append(&b, ",\n \"applied\": ");
        ok = ok && put_applied(&b, j) && put_member(&b, 1, false, "source", TAKE_PTR(source) ?: json_null());
        json_decref(source);
        strbuf_append(&b, "\n}\n");
        size_t n = b.len;
        bool oom = b.oom;
        char *out = strbuf_steal(&b);
        if (!ok || !out) {
                free(out);
                /* what is not memory is a string that is no UTF-8 (a knob's value, a path) */
                return oom || ok ? -ENOMEM : -EILSEQ;
        }
        if (ret_size)
                *ret_size = n;
        *ret_text = out;
        return 0;
}

int journal_write(Root *root, const char *text, size_t size) {
        _cleanup_free_ char *file = NULL;
        const char *dir;
        Root *sr = journal_root(root, &dir);
        if (asprintf(&file, "%s/state.json", dir) < 0)
                return -ENOMEM;
        int k = root_mkdir_p(sr, dir, 0755);
        if (k < 0)
                return k;
        return root_write_file_atomic(sr, file, text, size, 0644);
}

int journal_save(Root *root, const Journal *j) {
        _cleanup_free_ char *text = NULL;
        size_t size;
        int k = journal_format(j, &text, &size);
        if (k < 0)
                return k;
        return journal_write(root, text, size);
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
