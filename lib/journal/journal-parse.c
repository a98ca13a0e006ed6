/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The journal's document into C types, every entry checked: a journal that is wrong anywhere is
 * refused whole, with the entry and what is wrong with it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "journal-internal.h"
#include "json-util.h"
#include "strv.h"

/* ---- load: the document into C types, every entry checked ---- */

typedef struct Parser {
        Journal *j;
        const char *name; /* the file, for messages */
        Error *e;
} Parser;

/* Refuses the journal: e says the file, the entry (where, NULL: the document) and what is wrong. */
_printf_(3, 4) static int refuse(Parser *p, const char *where, const char *fmt, ...) {
        _cleanup_free_ char *what = NULL;
        va_list ap;
        va_start(ap, fmt);
        int n = vasprintf(&what, fmt, ap);
        va_end(ap);
        if (n < 0)
                return -ENOMEM;
        return error_set(p->e, -EBADMSG, p->name, where, "%s", what);
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
        if (!journal_entry_number(id, &x, &len, &last))
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
        if (!journal_entry_number(id, &x, &len, &h))
                return -EINVAL;
        _cleanup_free_ char *eid = journal_expand_number(id, x, len, m, &oom),
                            *epath = journal_expand_number(path, x, len, m, &oom);
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
                int r = journal_original_file_append(p->j, o, path, json_string_value(v));
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
                    (r = journal_originals_append(p->j, &k)) < 0) {
                        free(k.files);
                        return r;
                }
                for (size_t a = 0; a < n_also; a++) {
                        k = head;
                        if ((r = also_expand(p->j, head.id, head.path, also[a], &k.id, &k.path)) < 0 ||
                            (values &&
                             (r = journal_strdup(p->j, json_string_value(json_array_get(values, a)), &k.value)) < 0) ||
                            (r = journal_originals_append(p->j, &k)) < 0)
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
                if ((r = parse_also(p, where, e, k.id, &also, &n_also)) < 0 ||
                    (r = journal_applied_append(p->j, &k)) < 0)
                        return r;
                for (size_t a = 0; a < n_also; a++) {
                        JournalKnob m = k;
                        if ((r = also_expand(p->j, k.id, k.path, also[a], &m.id, &m.path)) < 0 ||
                            (r = journal_applied_append(p->j, &m)) < 0)
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
                    (r = journal_steps_append(p->j, &s)) < 0)
                        return r;
                for (size_t a = 0; a < n_also; a++) {
                        JournalStep m = s;
                        if ((r = also_expand(p->j, s.id, s.path, also[a], &m.id, &m.path)) < 0 ||
                            (befores &&
                             (r = journal_strdup(p->j, json_string_value(json_array_get(befores, a)), &m.before)) <
                                     0) ||
                            (r = journal_steps_append(p->j, &m)) < 0)
                                return r;
                }
        }
        json_array_foreach (fresh, i, e) {
                const char *id;
                if (!json_is_string(e))
                        return refuse(p, where, "\"new_originals\"[%zu] is %s, not a string", i, json_kind(e));
                if ((r = journal_strdup(p->j, json_string_value(e), &id)) < 0 ||
                    (r = journal_new_originals_append(p->j, id)) < 0)
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
int journal_parse_digested(const char *text, size_t size, uint64_t digest, const char *name, Journal **ret, Error *e) {
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

int journal_parse(const char *text, size_t size, const char *name, Journal **ret, Error *e) {
        return journal_parse_digested(text, size, journal_digest(strempty(text), text ? size : 0), name, ret, e);
}
