/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The journal's C types into its document, a knob entry at a time. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "journal-internal.h"
#include "strv.h"

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
        if (!journal_entry_number(l[0].id, &x, &len, &last))
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
                if (!knobs_alike(&l[0], &l[i], v) ||
                    !journal_same_but_number(l[0].id, l[0].path, l[i].id, l[i].path, last, &m))
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
        if (!journal_entry_number(l[0].id, &x, &len, &last))
                return 0;
        bool any = n > 1 && !streq_ptr(l[0].before, l[1].before);
        for (size_t i = 1; i < n && steps_alike(&l[0], &l[i], any) &&
             journal_same_but_number(l[0].id, l[0].path, l[i].id, l[i].path, last, &m);
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
