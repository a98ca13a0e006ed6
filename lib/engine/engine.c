/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "engine.h"
#include "strv.h"

/* What became of a knob of the plan (flags per knob) and of a step (per step). */
enum {
        PLAN_PICKED = 1 << 0,   /* in the subset to apply */
        PLAN_SKIPPED = 1 << 1,  /* its backend cannot write it here */
        PLAN_CONSUMED = 1 << 2, /* its new applied entry has found its place */
        PLAN_WRITTEN = 1 << 3,  /* counted as written */
        STEP_SKIPPED = 1 << 0,
        STEP_FORGET = 1 << 1, /* a restored knob: its original goes on commit */
};

void engine_result_done(EngineResult *r) {
        free(r->failed_knob);
        free(r->failed_path);
        free(r->failed_detail);
        free(r->failed_message);
        strv_free(r->notes);
        journal_error_done(&r->journal_error);
        *r = (EngineResult) {};
}

void verify_result_done(VerifyResult *v) {
        for (size_t i = 0; i < v->n_drift; i++) {
                free(v->drift[i].knob);
                free(v->drift[i].expected);
                free(v->drift[i].actual);
        }
        free(v->drift);
        free(v->profile);
        free(v->applied_at);
        strv_free(v->reboot_pending);
        strv_free(v->unmovable);
        strv_free(v->vanished);
        *v = (VerifyResult) {};
}

_printf_(2, 3) static void note(EngineResult *r, const char *fmt, ...) {
        char *s;
        va_list ap;
        va_start(ap, fmt);
        int n = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (n >= 0 && !strv_contains(r->notes, s))
                (void) strv_push(&r->notes, s);
        else if (n >= 0)
                free(s);
}

/* Writes through the knob's backend; *ret says what became of it (knob_result_done() it). */
static int write_knob(Root *root, const Knob *k, const char *value, KnobResult *ret) {
        const Backend *b = backend_for(k->domain);
        if (!b || !b->write) {
                *ret = (KnobResult) {};
                return knob_result_finish(ret, KNOB_SKIPPED);
        }
        return b->write(root, k, value, ret);
}

/* The kernel's (or systemd's) own reason in a write's result, taken out of it; NULL if none. */
static char *take_reason(KnobResult *w) {
        if (w->reason && !*w->reason) {
                free(w->reason);
                w->reason = NULL;
        }
        return TAKE_PTR(w->reason);
}

/* Notes a knob that could not be put back, with the reason. */
static void note_not_restored(EngineResult *res, const Knob *k, KnobResult *w, char **ret_detail) {
        _cleanup_free_ char *detail = take_reason(w);
        note(res, "could not restore %s (%s): %s%s%s%s", k->id, strempty(k->path), strerror(-w->error),
             detail ? " (" : "", strempty(detail), detail ? ")" : "");
        if (ret_detail && !*ret_detail)
                *ret_detail = TAKE_PTR(detail);
}

static void flush_domains(Root *root, const Host *host, const bool touched[_DOMAIN_MAX], EngineResult *res) {
        for (int d = 0; d < _DOMAIN_MAX; d++) {
                const Backend *b = backend_for((Domain) d);
                if (!touched[d] || !b || !b->flush)
                        continue;
                char *msg = NULL;
                int k = b->flush(root, host, &msg);
                if (k < 0)
                        note(res, "%s: %s%s%s", b->name,
                             msg ? msg : "could not make the change take effect: ", msg ? "" : strerror(-k), "");
                else if (msg)
                        note(res, "%s: %s", b->name, msg);
                free(msg);
        }
}

/* Undoes steps [0, n) in reverse: each gets its "before" value back. */
static size_t undo_steps(Root *root, const JournalTransaction *t, size_t n, bool touched[_DOMAIN_MAX],
                         EngineResult *res) {
        size_t failures = 0;
        for (size_t i = n; i-- > 0;) {
                Knob k = journal_step_knob(&t->steps[i]);
                _cleanup_(knob_result_done) KnobResult w = {};
                int r = write_knob(root, &k, t->steps[i].before, &w);
                if (r < 0) {
                        failures++;
                        note_not_restored(res, &k, &w, NULL);
                } else
                        touched[k.domain] = true;
        }
        return failures;
}

static void drop_new_originals(Journal *j) {
        for (size_t i = 0; i < j->transaction.n_new_originals; i++)
                journal_remove_original(j, j->transaction.new_originals[i]);
}

/* The journal's reserve: a file beside the journal as large as the journal's last write of a
 * transaction may need, made before the transaction's first write and unlinked just before that
 * last write, so that a full filesystem fails a transaction before it changes anything rather
 * than after. A crash leaves it to the recovery that follows. */
#define RESERVE_NAME ".#state.json.reserve"
/* Beyond the estimate: the last error's message and the kernel's reason in it, the times. */
#define RESERVE_SLACK ((size_t) 16384)

static int reserve_path(Root *root, Root **ret_sr, char **ret) {
        const char *dir;
        *ret_sr = journal_root(root, &dir);
        return asprintf(ret, "%s/" RESERVE_NAME, dir) < 0 ? -ENOMEM : 0;
}

/* Unlinks the reserve, if there is one; true if there was. */
static bool release_room(Root *root) {
        _cleanup_free_ char *p = NULL;
        Root *sr;
        if (reserve_path(root, &sr, &p) < 0 || !root_exists(sr, p))
                return false;
        return root_unlink(sr, p) >= 0;
}

/* The journal file as the user sees it, for messages. */
static char *journal_display(Root *root) {
        const char *dir;
        Root *sr = journal_root(root, &dir);
        _cleanup_free_ char *file = NULL;
        if (asprintf(&file, "%s/state.json", dir) < 0)
                return NULL;
        return root_display_path(sr, file);
}

_printf_(2, 3) static void failed_message(EngineResult *res, const char *fmt, ...) {
        char *s;
        va_list ap;
        va_start(ap, fmt);
        int n = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (n < 0)
                return;
        free(res->failed_message);
        res->failed_message = s;
}

/* Journals j's open transaction before its first write, with room reserved for the journal's last
 * write of it: the journal as it is now and extra bytes. When it fails nothing is changed (but a
 * missing state directory) and res says why. */
static int journal_open(Root *root, const Journal *j, size_t extra, EngineResult *res) {
        _cleanup_free_ char *text = NULL, *display = NULL, *rpath = NULL;
        size_t size;
        Root *sr;
        const char *dir;
        int k = journal_format(j, &text, &size);
        if (k < 0)
                return k;
        size_t room = size + extra + RESERVE_SLACK;
        sr = journal_root(root, &dir);
        if ((k = reserve_path(root, &sr, &rpath)) < 0)
                return k;
        k = root_mkdir_p(sr, dir, 0755);
        if (k >= 0)
                k = root_reserve_file(sr, rpath, room);
        if (k < 0) {
                display = root_display_path(sr, dir);
                failed_message(res,
                               "no room for the journal in %s (%zu KiB needed to record this %s): %s; nothing was "
                               "changed: free some space there",
                               strempty(display), (room + 1023) / 1024,
                               journal_op_to_string(j->transaction.op) ?: "transaction", strerror(-k));
                res->failed_errno = -k;
                return k;
        }
        k = journal_write(root, text, size);
        if (k < 0) {
                (void) release_room(root);
                display = journal_display(root);
                failed_message(res, "saving the journal %s failed: %s; nothing was changed", strempty(display),
                               strerror(-k));
                res->failed_errno = -k;
        }
        return k;
}

/* What the journal's last write of an apply may need beyond the journal with the transaction open:
 * the applied list of every knob of the plan (picked: those of ids), the profile's source. */
static size_t apply_room(const Plan *plan, const Resolved *resolved, const uint8_t *pflags, bool subset) {
        size_t room = PATH_MAX + 256; /* profile, profile_path, hash, applied_at */
        for (size_t i = 0; i < plan->n_knobs; i++) {
                const Knob *k = &plan->knobs[i];
                if (subset && !(pflags[i] & PLAN_PICKED))
                        continue;
                /* Keys, domain, kind, indentation: < 160 bytes (journal_format). */
                room += strlen(k->id) + strlen(strempty(k->path)) + strlen(strempty(k->desired)) + 160;
        }
        const Profile *prof = resolved ? resolved->profile : NULL;
        if (prof && prof->doc) {
                /* Indented deeper in the journal than alone: twice its size is enough. */
                _cleanup_free_ char *text = json_dumps(prof->doc, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
                room += 2 * strlen(strempty(text));
        }
        return room;
}

/* A transaction this run journalled and could not close (the journal's last write failed, memory
 * ran out after the first write): what it changed is put back before it returns, the journal
 * loaded again from its file (which still holds the transaction). err: why. */
static int roll_back_open(Root *root, const Host *host, int err, EngineResult *res) {
        _cleanup_(journal_freep) Journal *j = NULL;
        _cleanup_(journal_error_done) JournalError e = {};
        _cleanup_free_ char *display = journal_display(root), *now = journal_now_iso8601(), *msg = NULL;
        bool touched[_DOMAIN_MAX] = {};

        (void) release_room(root);
        int k = journal_load(root, &j, &e);
        if (k < 0) {
                note(res, "the journal %s could not be read to undo this run: %s; the next run rolls it back",
                     strempty(display), strerror(-k));
                return err;
        }
        if (!j->transaction_open) {
                /* Its last write is in place; what failed after it was syncing its directory. */
                note(res, "the journal %s was saved, but syncing its directory failed: %s", strempty(display),
                     strerror(-err));
                return 0;
        }
        const char *op = journal_op_to_string(j->transaction.op) ?: "transaction";
        size_t fails = undo_steps(root, &j->transaction, j->transaction.n_steps, touched, res);
        drop_new_originals(j);
        if (res->journal_failed)
                k = asprintf(&msg, "saving the journal %s failed: %s; every change of this %s was undone%s",
                             strempty(display), strerror(-err), op, fails ? " except the ones noted" : "");
        else
                k = asprintf(&msg, "the %s failed: %s; every change of it was undone%s", op, strerror(-err),
                             fails ? " except the ones noted" : "");
        if (k < 0 || !now)
                return err;
        k = journal_set_last_error(j, /* knob= */ NULL, NULL, 0, NULL, msg, now);
        if (k >= 0) {
                journal_end(j);
                k = journal_save(root, j);
        }
        if (k < 0)
                note(res, "the journal %s still shows the %s as interrupted (%s): the next run rolls it back again",
                     strempty(display), op, strerror(-k));
        flush_domains(root, host, touched, res);
        res->rolled_back = true;
        res->rollback_incomplete = fails > 0;
        res->failed_errno = -err;
        free(res->failed_message);
        res->failed_message = TAKE_PTR(msg);
        /* The run as a whole was undone: a knob it could not write is not the news. */
        free(res->failed_knob);
        free(res->failed_detail);
        res->failed_knob = res->failed_detail = NULL;
        return err;
}

/* The journal's last write of a transaction, into the room reserved for it: once it is in place,
 * the transaction is no longer *opened. */
static int journal_close(Root *root, const Journal *j, EngineResult *res, bool *opened) {
        (void) release_room(root);
        int k = journal_save(root, j);
        if (k >= 0 && opened)
                *opened = false;
        if (k < 0 && opened)
                res->journal_failed = true;
        return k;
}

/* Rolls back the transaction j holds, if any, and saves j. */
/* A crash between a temp file and its rename leaves ".#NAME.PID.tmp" beside the file rtpart
 * replaces: the journal, and the configuration files its knobs live in (kernel files under proc/,
 * sys/ and dev/ are written in place, never through a temp file). They go with the recovery. */
static void remove_temporaries(Root *root, const Journal *j, EngineResult *res) {
        const char *dir;
        Root *sr = journal_root(root, &dir);
        _cleanup_free_ char *state = NULL;
        size_t n = 0;
        int k;
        if (asprintf(&state, "%s/state.json", dir) >= 0 && (k = root_remove_temporaries(sr, state)) > 0)
                n += (size_t) k;
        if (release_room(root))
                n++;
        _cleanup_strv_free_ char **seen = NULL;
        for (size_t i = 0; i < j->n_originals + j->transaction.n_steps; i++) {
                const char *path =
                        i < j->n_originals ? j->originals[i].path : j->transaction.steps[i - j->n_originals].path;
                if (!path || startswith(path, "proc/") || startswith(path, "sys/") || startswith(path, "dev/") ||
                    strv_contains(seen, path))
                        continue;
                if (strv_extend(&seen, path) < 0)
                        break;
                k = root_remove_temporaries(root, path);
                if (k > 0)
                        n += (size_t) k;
        }
        for (size_t i = 0; i < j->n_originals; i++)
                for (size_t f = 0; f < j->originals[i].n_files; f++) {
                        const char *path = j->originals[i].files[f].path;
                        if (strv_contains(seen, path) || strv_extend(&seen, path) < 0)
                                continue;
                        k = root_remove_temporaries(root, path);
                        if (k > 0)
                                n += (size_t) k;
                }
        if (n > 0)
                note(res, "removed %zu temporary file%s an interrupted run left behind", n, n == 1 ? "" : "s");
}

int engine_mark_refused(Plan *plan, const Journal *j) {
        if (!j || j->n_unmovable == 0)
                return 0;
        for (size_t i = 0; i < plan->n_knobs; i++) {
                Knob *k = &plan->knobs[i];
                const char *reason = k->changed ? journal_find_unmovable(j, k->id) : NULL;
                if (!reason)
                        continue;
                char *note = NULL;
                if (asprintf(&note, "refused by the kernel at the last apply: %s", reason) < 0)
                        return -ENOMEM;
                free(k->note);
                k->note = note;
                k->changed = false;
        }
        return 0;
}

static int recover_journal(Root *root, const Host *host, Journal *j, EngineResult *res) {
        const JournalTransaction *t = &j->transaction;
        bool touched[_DOMAIN_MAX] = {};
        int k;

        remove_temporaries(root, j, res);
        if (!j->transaction_open)
                return 0;
        size_t fails = undo_steps(root, t, t->n_steps, touched, res);
        drop_new_originals(j);
        /* Only what the journal says: a transaction without its op, profile or start time (an
         * older or hand-edited journal) is still named sensibly. */
        const char *op = journal_op_to_string(t->op);
        _cleanup_free_ char *now = journal_now_iso8601(), *msg = NULL;
        StrBuf b = {};
        strbuf_appendf(&b, "an interrupted %s", op ?: "transaction");
        if (t->profile && *t->profile)
                strbuf_appendf(&b, " of %s", t->profile);
        if (t->started && *t->started)
                strbuf_appendf(&b, " (started %s)", t->started);
        strbuf_appendf(&b, " was rolled back%s", fails ? "; some values could not be restored" : "");
        msg = strbuf_steal(&b);
        if (!msg || !now)
                return -ENOMEM;
        k = journal_set_last_error(j, /* knob= */ NULL, NULL, 0, NULL, msg, now);
        if (k < 0)
                return k;
        journal_end(j);
        k = journal_save(root, j);
        if (k < 0)
                return k;
        flush_domains(root, host, touched, res);
        res->recovered = true;
        note(res, "%s", msg);
        return 0;
}

int engine_recover(Root *root, const Host *host, EngineResult *res) {
        _cleanup_(journal_freep) Journal *j = NULL;
        int k = journal_load(root, &j, &res->journal_error);
        if (k < 0)
                return k;
        return recover_journal(root, host, j, res);
}

static bool backend_has(const Knob *k, BackendFlags f) {
        const Backend *b = backend_for(k->domain);
        return b && (b->flags & f);
}

/* The files a knob lives in when its backend writes it to several (a boot argument in every BLS
 * entry): a strv, or NULL when it lives in one place (its own path, or none). */
static int knob_files(Root *root, const Knob *k, char ***ret) {
        const Backend *b = backend_for(k->domain);
        *ret = NULL;
        if (!b || !b->files || !b->read || k->path)
                return 0;
        int r = b->files(root, k, ret);
        return r < 0 ? r : 0;
}

/* The value of k in one of its files; absent is NULL. */
static int read_in_file(Root *root, const Knob *k, const char *path, char **ret) {
        Knob f = *k;
        f.path = (char *) path;
        *ret = NULL;
        int r = backend_for(k->domain)->read(root, &f, ret);
        return r == -ENOENT ? 0 : r;
}

/* The steps that put an original back: one, or for a knob with an original per file, one for each
 * file that differs from its own. A file rtpart has no original of (a boot entry added since) gets
 * the knob's original when it holds what rtpart applied (kernel-install copied rtpart's
 * arguments into it), and is left alone otherwise (it is the user's). Without skip_equal a knob of
 * one place gets its step even when it holds its original. Returns the number of steps added. */
static int add_restore_steps(Root *root, Journal *j, const JournalKnob *orig, bool restore, bool skip_equal) {
        Knob kn = journal_knob(orig);
        const Backend *b = backend_for(kn.domain);
        _cleanup_strv_free_ char **files = NULL;
        int k;

        if (orig->n_files > 0)
                k = knob_files(root, &kn, &files);
        else
                k = 0;
        if (k < 0)
                return k;
        if (orig->n_files == 0 || !files) {
                _cleanup_free_ char *cur = NULL;
                if (b && b->read)
                        (void) b->read(root, &kn, &cur);
                if (skip_equal && value_equal(kn.kind, cur, orig->value))
                        return 0;
                k = journal_add_step(j, &kn, cur, orig->value, restore);
                return k < 0 ? k : 1;
        }
        const JournalKnob *applied = journal_find_applied(j, kn.id);
        int n = 0;
        for (char **f = files; *f; f++) {
                const JournalFile *of = journal_find_original_file(orig, *f);
                _cleanup_free_ char *cur = NULL;
                k = read_in_file(root, &kn, *f, &cur);
                if (k < 0)
                        return k;
                const char *want = of ? of->value : orig->value;
                if (!of && !(applied && value_equal(kn.kind, cur, applied->value)))
                        continue;
                if (value_equal(kn.kind, cur, want))
                        continue;
                Knob kf = kn;
                kf.path = *f;
                k = journal_add_step(j, &kf, cur, want, restore);
                if (k < 0)
                        return k;
                n++;
        }
        return n;
}

/* Why the kernel refused a write, as the journal keeps it for an unmovable knob. */
static const char *refusal_reason(const Knob *k, const KnobResult *w) {
        const Backend *b = backend_for(k->domain);
        if (w->reason && *w->reason)
                return w->reason;
        return b && b->refusal_reason ? b->refusal_reason : "the kernel refused the value";
}

static int fail(Root *root, Journal *j, const Knob *k, KnobResult *w, size_t done, bool touched[_DOMAIN_MAX],
                const Host *host, EngineResult *res) {
        int err = w->error;
        _cleanup_free_ char *detail = take_reason(w);
        size_t fails = undo_steps(root, &j->transaction, done, touched, res);
        drop_new_originals(j);
        _cleanup_free_ char *now = journal_now_iso8601(), *msg = NULL;
        if (asprintf(&msg, "writing %s failed: %s%s%s%s; every change of this run was undone%s", k->id, strerror(-err),
                     detail ? " (kernel: " : "", strempty(detail), detail ? ")" : "",
                     fails ? " except the ones noted" : "") < 0)
                msg = NULL;
        int r = msg && now ? journal_set_last_error(j, k->id, k->path, -err, detail, msg, now) : -ENOMEM;
        if (r >= 0) {
                journal_end(j);
                r = journal_close(root, j, res, NULL);
        }
        /* Not saved: the transaction stays open in the journal, and the next run rolls it back
         * again (the same writes). */
        flush_domains(root, host, touched, res);
        res->rolled_back = true;
        res->rollback_incomplete = fails > 0;
        res->failed_knob = strdup(k->id);
        res->failed_path = k->path ? strdup(k->path) : NULL;
        res->failed_errno = -err;
        res->failed_detail = TAKE_PTR(detail);
        return r < 0 ? r : err;
}

/* What apply and revert start with: the journal, an interrupted transaction rolled back. */
static int recover_and_load(Root *root, const Host *host, EngineResult *res, Journal **ret) {
        _cleanup_(journal_freep) Journal *j = NULL;
        int k = journal_load(root, &j, &res->journal_error);
        if (k < 0)
                return k;
        k = recover_journal(root, host, j, res);
        if (k < 0)
                return k;
        *ret = TAKE_PTR(j);
        return 0;
}

/* The applied list after a subset apply: the journal's knobs in their order, those of the subset
 * renewed (or gone, when the kernel refused them or they cannot be written here; kept as they
 * were when the plan does not have them); new ones after. */
static int subset_applied(Journal *j, const Plan *plan, const JournalIndex *plan_index, uint8_t *pflags,
                          const JournalKnob *fresh, const bool *dropped, JournalKnob **ret, size_t *ret_n) {
        JournalKnob *l = malloc(MAX(j->n_applied + plan->n_knobs, (size_t) 1) * sizeof(JournalKnob));
        size_t n = 0;
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < j->n_applied; i++) {
                const JournalKnob *e = &j->applied[i];
                ssize_t p = journal_index_find(plan_index, plan->knobs, sizeof(Knob), e->id);
                if (p < 0 || !(pflags[p] & PLAN_PICKED) || (pflags[p] & PLAN_CONSUMED)) {
                        l[n++] = *e;
                        continue;
                }
                pflags[p] |= PLAN_CONSUMED;
                if (!dropped[p])
                        l[n++] = fresh[p];
        }
        for (size_t p = 0; p < plan->n_knobs; p++)
                if ((pflags[p] & PLAN_PICKED) && !(pflags[p] & PLAN_CONSUMED) && !dropped[p]) {
                        pflags[p] |= PLAN_CONSUMED;
                        l[n++] = fresh[p];
                }
        *ret = l;
        *ret_n = n;
        return 0;
}

/* The note on the knobs apply could not write: how many of each domain, and why (the backend's
 * reason, else that it cannot write them on this root). */
/* One group of the skipped note: n knobs of domain d, and why. */
static void append_skipped(StrBuf *b, Root *root, Domain d, size_t n, const char *reason) {
        size_t counts[_DOMAIN_MAX] = {};
        counts[d] = n;
        _cleanup_free_ char *what = knob_count_phrase(counts);
        strbuf_appendf(b, "%s%s (%s)", b->len ? ", " : "", strempty(what),
                       reason                         ? reason
                               : root_is_system(root) ? "its backend cannot write them on this host"
                                                      : "its backend cannot write them under --root");
}

/* Says which knobs were left as they are, domain by domain and reason by reason: those whose
 * backend cannot write here at all (unwritable, counted per domain, never steps) and the steps
 * a write skipped. */
static void note_skipped(Root *root, const JournalTransaction *t, const uint8_t *sflags, const char * const *reason,
                         const size_t *unwritable, EngineResult *res) {
        _cleanup_free_ bool *said = calloc(MAX(t->n_steps, (size_t) 1), sizeof(bool));
        StrBuf b = {};
        if (!said)
                return;
        for (Domain d = 0; d < _DOMAIN_MAX; d++) {
                if (unwritable[d] > 0)
                        append_skipped(&b, root, d, unwritable[d], backend_for(d)->writes_need_reason);
                for (size_t i = 0; i < t->n_steps; i++) {
                        if (!(sflags[i] & STEP_SKIPPED) || said[i] || t->steps[i].domain != d)
                                continue;
                        size_t n = 0;
                        for (size_t k = i; k < t->n_steps; k++)
                                if ((sflags[k] & STEP_SKIPPED) && !said[k] && t->steps[k].domain == d &&
                                    streq_ptr(reason[k], reason[i])) {
                                        said[k] = true;
                                        n++;
                                }
                        append_skipped(&b, root, d, n, reason[i]);
                }
        }
        _cleanup_free_ char *list = strbuf_steal(&b);
        note(res, "%zu knob%s left as they are and not recorded as applied: %s", res->skipped,
             res->skipped == 1 ? "" : "s", strempty(list));
}

/* Makes room in *l for n elements. */
static int reserve_sizes(size_t **l, size_t *cap, size_t n) {
        if (n <= *cap)
                return 0;
        size_t c = MAX(n, 2 * *cap);
        size_t *p = realloc(*l, c * sizeof(size_t));
        if (!p)
                return -ENOMEM;
        *l = p;
        *cap = c;
        return 0;
}

/* engine_apply(), or with subset engine_apply_knobs(): the knobs of the plan named in ids are
 * written and recorded; the rest of the journal stays as it is. */
static int apply_core(Root *root, const Host *host, const Resolved *resolved, const Plan *plan, bool subset,
                      char * const *ids, size_t n_ids, EngineResult *res, bool *opened) {
        _cleanup_(journal_freep) Journal *j = NULL;
        _cleanup_(journal_index_done) JournalIndex plan_index = {};
        _cleanup_free_ uint8_t *pflags = NULL, *sflags = NULL;
        _cleanup_free_ const char **skip_reason = NULL; /* the journal's strings */
        _cleanup_free_ size_t *step_src = NULL;
        _cleanup_free_ JournalKnob *fresh = NULL;
        _cleanup_free_ bool *dropped = NULL;
        _cleanup_free_ char *now = NULL;
        size_t unwritable[_DOMAIN_MAX] = {}; /* knobs per domain whose backend cannot write here */
        int k;

        k = recover_and_load(root, host, res, &j);
        if (k < 0)
                return k;
        /* Plan knobs found by id: 10k+ knobs on a big host make pairwise scans quadratic. */
        k = journal_index_build(&plan_index, plan->knobs, sizeof(Knob), plan->n_knobs);
        if (k < 0)
                return k;
        pflags = calloc(MAX(plan->n_knobs, (size_t) 1), sizeof(uint8_t));
        now = journal_now_iso8601();
        if (!pflags || !now)
                return -ENOMEM;
        for (size_t i = 0; subset && i < n_ids; i++) {
                ssize_t p = ids[i] ? journal_index_find(&plan_index, plan->knobs, sizeof(Knob), ids[i]) : -1;
                if (p >= 0)
                        pflags[p] |= PLAN_PICKED;
        }
        k = journal_begin(j, JOURNAL_OP_APPLY, plan->profile, now);
        if (k < 0)
                return k;
        size_t first_new = j->n_originals;

        /* 1. What this run will write: every changed knob, and every knob of the previous profile
         *    that this one no longer manages (back to its original). Restores first, last applied
         *    first: a resctrl group goes before the default group it shrank, a cgroup before the
         *    slices it needed room from, and new values find them gone. */
        for (size_t i = subset ? 0 : j->n_applied; i-- > 0;) {
                const char *id = j->applied[i].id;
                const JournalKnob *orig = journal_find_original(j, id);
                if (!orig || journal_index_find(&plan_index, plan->knobs, sizeof(Knob), id) >= 0)
                        continue;
                Knob kn = journal_knob(orig);
                if (backend_has(&kn, BACKEND_OBJECTS_VANISH)) {
                        const Backend *b = backend_for(kn.domain);
                        _cleanup_free_ char *cur = NULL;
                        if (b->read)
                                (void) b->read(root, &kn, &cur);
                        if (!cur && !value_equal(kn.kind, cur, orig->value)) {
                                /* Gone with its device or thread: nothing left to put back. */
                                journal_remove_original(j, id);
                                continue;
                        }
                }
                k = add_restore_steps(root, j, orig, /* restore= */ true, /* skip_equal= */ true);
                if (k < 0)
                        return k;
                if (k > 0)
                        res->restored++;
        }

        size_t n_restores = j->transaction.n_steps, cap_src = 0;
        k = reserve_sizes(&step_src, &cap_src, n_restores + plan->n_knobs + 1);
        if (k < 0)
                return k;
        for (size_t i = 0; i < n_restores; i++)
                step_src[i] = SIZE_MAX;
        for (size_t i = 0; i < plan->n_knobs; i++) {
                const Knob *kn = &plan->knobs[i];
                if (subset && !(pflags[i] & PLAN_PICKED))
                        continue;
                if (!kn->changed) {
                        res->unchanged++;
                        continue;
                }
                if (journal_find_unmovable(j, kn->id))
                        continue; /* the kernel said no before; it will again */
                const Backend *b = backend_for(kn->domain);
                if (b && b->writes_need && !root_can(root, b->writes_need)) {
                        /* Not written, so not owned, and no step: nothing of it goes in the journal. */
                        pflags[i] |= PLAN_SKIPPED;
                        unwritable[kn->domain]++;
                        res->skipped++;
                        continue;
                }
                _cleanup_strv_free_ char **files = NULL;
                k = knob_files(root, kn, &files);
                if (k < 0)
                        return k;
                const JournalKnob *orig = journal_find_original(j, kn->id);
                bool first = !orig;
                if (first) {
                        if ((k = journal_add_original(j, kn, kn->current)) < 0 ||
                            (k = journal_add_new_original(j, kn->id)) < 0)
                                return k;
                        orig = journal_find_original(j, kn->id);
                }
                if (!files) {
                        k = journal_add_step(j, kn, kn->current, kn->desired, /* restore= */ false);
                        if (k < 0)
                                return k;
                        step_src[j->transaction.n_steps - 1] = i;
                        continue;
                }
                /* It lives in several files: each one's own value is its original (recorded for
                 * a file new since the first apply too, unless the original comes from a journal
                 * that kept none per file) and the step that changes it. A new file that holds
                 * what rtpart applied got it from rtpart (kernel-install copies the configured
                 * arguments): its original is the knob's. */
                const JournalKnob *was = first ? NULL : journal_find_applied(j, kn->id);
                k = reserve_sizes(&step_src, &cap_src, j->transaction.n_steps + strv_length(files) + plan->n_knobs - i);
                if (k < 0)
                        return k;
                for (char **f = files; *f; f++) {
                        _cleanup_free_ char *cur = NULL;
                        k = read_in_file(root, kn, *f, &cur);
                        if (k < 0)
                                return k;
                        const char *original = was && value_equal(kn->kind, cur, was->value) ? orig->value : cur;
                        if ((first || orig->n_files > 0) &&
                            (k = journal_add_original_file(j, kn->id, *f, original)) < 0)
                                return k;
                        if (value_equal(kn->kind, cur, kn->desired))
                                continue;
                        Knob kf = *kn;
                        kf.path = *f;
                        k = journal_add_step(j, &kf, cur, kn->desired, /* restore= */ false);
                        if (k < 0)
                                return k;
                        step_src[j->transaction.n_steps - 1] = i;
                }
        }

        /* 2. Journal the transaction before the first write, with room for its last write. */
        bool touched[_DOMAIN_MAX] = {};
        const JournalTransaction *t = &j->transaction;
        if (t->n_steps > 0) {
                k = journal_open(root, j, apply_room(plan, resolved, pflags, subset), res);
                if (k < 0)
                        return k;
                *opened = true;
        }

        /* 3. Write. */
        sflags = calloc(MAX(t->n_steps, (size_t) 1), sizeof(uint8_t));
        skip_reason = calloc(MAX(t->n_steps, (size_t) 1), sizeof(char *));
        if (!sflags || !skip_reason)
                return -ENOMEM;
        for (size_t i = 0; i < t->n_steps; i++) {
                const JournalStep *s = &t->steps[i];
                Knob kn = journal_step_knob(s);
                _cleanup_(knob_result_done) KnobResult w = {};
                k = write_knob(root, &kn, s->after, &w);
                if (w.status == KNOB_REFUSED) {
                        k = journal_set_unmovable(j, kn.id, refusal_reason(&kn, &w));
                        if (k < 0)
                                return k;
                        res->refused++;
                        continue;
                }
                if (w.status == KNOB_SKIPPED) {
                        /* Not written, so not owned: no original to keep, nothing to verify. */
                        sflags[i] |= STEP_SKIPPED;
                        _cleanup_free_ char *why = take_reason(&w);
                        k = journal_strdup(j, why, &skip_reason[i]);
                        if (k < 0)
                                return k;
                        if (step_src[i] != SIZE_MAX)
                                pflags[step_src[i]] |= PLAN_SKIPPED;
                        res->skipped++;
                        continue;
                }
                if (w.error == -ENOENT && s->restore) {
                        /* The previous profile's object vanished between read and write. */
                        sflags[i] |= STEP_FORGET;
                        continue;
                }
                if (w.status == KNOB_FAILED)
                        return fail(root, j, &kn, &w, i, touched, host, res);
                touched[kn.domain] = true;
                if (s->restore)
                        /* Back at its original and no longer managed: forgotten on commit (a
                         * rollback still needs it). */
                        sflags[i] |= STEP_FORGET;
                else if (!(pflags[step_src[i]] & PLAN_WRITTEN)) {
                        /* A knob of several files is one knob written. */
                        pflags[step_src[i]] |= PLAN_WRITTEN;
                        res->written++;
                }
        }
        if (res->written > 0 || res->restored > 0)
                flush_domains(root, host, touched, res);
        if (res->skipped > 0)
                note_skipped(root, t, sflags, skip_reason, unwritable, res);

        /* 4. Commit: the profile, what it wants of every knob, and no open transaction. */
        for (size_t i = 0; i < t->n_steps; i++)
                if (sflags[i] & STEP_FORGET)
                        journal_remove_original(j, t->steps[i].id);
        fresh = calloc(MAX(plan->n_knobs, (size_t) 1), sizeof(JournalKnob));
        dropped = calloc(MAX(plan->n_knobs, (size_t) 1), sizeof(bool));
        if (!fresh || !dropped)
                return -ENOMEM;
        size_t n_fresh = 0;
        for (size_t i = 0; i < plan->n_knobs; i++) {
                const Knob *kn = &plan->knobs[i];
                if (subset && !(pflags[i] & PLAN_PICKED))
                        continue;
                if (journal_find_unmovable(j, kn->id)) {
                        dropped[i] = true; /* no longer applied */
                        continue;
                }
                if (pflags[i] & PLAN_SKIPPED) {
                        /* Not written: an original first recorded by this run goes again. */
                        const JournalKnob *o = journal_find_original(j, kn->id);
                        if (o && (size_t) (o - j->originals) >= first_new)
                                journal_remove_original(j, kn->id);
                        dropped[i] = true;
                        continue;
                }
                k = journal_knob_make(j, kn, kn->desired, subset ? &fresh[i] : &fresh[n_fresh++]);
                if (k < 0)
                        return k;
        }
        JournalKnob *applied = TAKE_PTR(fresh);
        size_t n_applied = n_fresh;
        if (subset) {
                _cleanup_free_ JournalKnob *renewed = applied;
                k = subset_applied(j, plan, &plan_index, pflags, renewed, dropped, &applied, &n_applied);
                if (k < 0)
                        return k;
        }
        k = journal_set_applied(j, applied, n_applied);
        if (k < 0) {
                free(applied);
                return k;
        }
        journal_end(j);
        journal_clear_last_error(j);
        if (subset)
                return journal_close(root, j, res, opened);

        _cleanup_free_ char *hash = journal_hash(resolved->doc);
        if (!hash)
                return -ENOMEM;
        bool same = streq_ptr(j->profile, plan->profile) && streq_ptr(j->hash, hash);
        if ((k = journal_set(j, &j->profile, plan->profile)) < 0 || (k = journal_set(j, &j->hash, hash)) < 0)
                return k;
        /* What rtpartd applies again (at start, to new IRQs and threads, to correct drift) is the
         * profile as it is now, merged over its includes, never the file it came from: that may
         * change or go. The path is for people; a profile built from "source" keeps it. */
        const Profile *prof = resolved->profile;
        if (!prof || prof->path) {
                _cleanup_free_ char *real = prof ? realpath(prof->path, NULL) : NULL;
                k = journal_set(j, &j->profile_path, real ?: prof ? prof->path : NULL);
                if (k < 0)
                        return k;
        }
        k = journal_set_source(j, prof ? prof->doc : NULL);
        if (k < 0)
                return k;
        if (!same || res->written > 0 || !j->applied_at) {
                k = journal_set(j, &j->applied_at, now);
                if (k < 0)
                        return k;
        }
        return journal_close(root, j, res, opened);
}

/* A run that journalled its transaction (*opened) and failed without rolling it back has it rolled
 * back here, before it returns. */
static int finish(Root *root, const Host *host, int k, bool opened, EngineResult *res) {
        if (k < 0 && opened && !res->rolled_back)
                return roll_back_open(root, host, k, res);
        (void) release_room(root);
        return k;
}

int engine_apply(Root *root, const Host *host, const Resolved *resolved, const Plan *plan, EngineResult *res) {
        bool opened = false;
        int k = apply_core(root, host, resolved, plan, /* subset= */ false, NULL, 0, res, &opened);
        return finish(root, host, k, opened, res);
}

static int revert_core(Root *root, const Host *host, EngineResult *res, bool *opened) {
        _cleanup_(journal_freep) Journal *j = NULL;
        _cleanup_free_ char *now = NULL;
        _cleanup_free_ bool *keep = NULL;
        int k;

        k = recover_and_load(root, host, res, &j);
        if (k < 0)
                return k;
        now = journal_now_iso8601();
        if (!now)
                return -ENOMEM;
        k = journal_begin(j, JOURNAL_OP_REVERT, j->profile, now);
        if (k < 0)
                return k;
        for (size_t i = 0; i < j->n_originals; i++) {
                const JournalKnob *orig = &j->originals[i];
                if (orig->removed)
                        continue;
                k = add_restore_steps(root, j, orig, /* restore= */ false, /* skip_equal= */ false);
                if (k < 0)
                        return k;
        }
        keep = calloc(MAX(j->n_originals, (size_t) 1), sizeof(bool));
        if (!keep)
                return -ENOMEM;

        bool touched[_DOMAIN_MAX] = {};
        const JournalTransaction *t = &j->transaction;
        if (t->n_steps > 0) {
                /* Its last write has fewer originals and no applied list, transaction or error. */
                k = journal_open(root, j, 0, res);
                if (k < 0)
                        return k;
                *opened = true;
        }

        /* Revert does not stop at the first failure: it restores all it can, keeps what it could
         * not in the journal (a later revert retries them) and says which. Reverse order: the
         * last knob changed is the first put back. */
        int first_err = 0;
        const char *counted = NULL; /* a knob of several files counts once */
        for (size_t i = t->n_steps; i-- > 0;) {
                Knob kn = journal_step_knob(&t->steps[i]);
                _cleanup_(knob_result_done) KnobResult w = {};
                (void) write_knob(root, &kn, t->steps[i].after, &w);
                const JournalKnob *orig = journal_find_original(j, kn.id);
                /* A refusal of a knob the kernel did not refuse at apply (EIO or EPERM now) is not
                 * a restore either: the original stays, for a later revert. One it refused then
                 * (a managed IRQ) it owns: its original goes, as before. */
                if (w.status == KNOB_FAILED || (w.status == KNOB_REFUSED && !journal_find_unmovable(j, kn.id))) {
                        if (w.error >= 0)
                                w.error = -EIO;
                        if (orig && !keep[orig - j->originals]) {
                                keep[orig - j->originals] = true;
                                res->failed++;
                        }
                        if (!first_err) {
                                first_err = w.error;
                                res->failed_knob = strdup(kn.id);
                                res->failed_path = kn.path ? strdup(kn.path) : NULL;
                                res->failed_errno = -w.error;
                        }
                        note_not_restored(res, &kn, &w, &res->failed_detail);
                        continue;
                }
                if (w.status == KNOB_DONE)
                        touched[kn.domain] = true;
                if (streq_ptr(counted, kn.id))
                        continue;
                counted = kn.id;
                if (w.status == KNOB_SKIPPED)
                        res->skipped++;
                else if (w.status == KNOB_DONE)
                        res->written++;
        }
        /* Every original is forgotten but those of knobs it could not restore (all their files:
         * a later revert writes each one's own value again). */
        for (size_t i = 0; i < j->n_originals; i++)
                if (!keep[i])
                        j->originals[i].removed = true;
        flush_domains(root, host, touched, res);

        j->profile = j->profile_path = j->source = j->hash = j->applied_at = NULL;
        k = journal_set_applied(j, NULL, 0);
        if (k < 0)
                return k;
        journal_clear_unmovable(j);
        journal_end(j);
        k = journal_close(root, j, res, opened);
        if (k < 0)
                return k;
        return first_err;
}

int engine_revert(Root *root, const Host *host, EngineResult *res) {
        bool opened = false;
        int k = revert_core(root, host, res, &opened);
        return finish(root, host, k, opened, res);
}

int engine_lock(Root *root, bool wait) {
        const char *dir;
        Root *sr = journal_root(root, &dir);
        _cleanup_free_ char *lock = NULL;
        if (asprintf(&lock, "%s/lock", dir) < 0)
                return -ENOMEM;
        int k = root_mkdir_p(sr, dir, 0755);
        if (k < 0)
                return k;
        int fd = root_open(sr, lock, O_RDWR | O_CREAT | O_NOFOLLOW, 0600);
        if (fd < 0)
                return fd;
        if (flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB)) < 0) {
                k = -errno;
                close(fd);
                return k;
        }
        return fd;
}

bool engine_transaction_open(Root *root) {
        return journal_transaction_open(root);
}

bool engine_needs_recovery(Root *root) {
        if (engine_transaction_open(root))
                return true;
        const char *dir;
        Root *sr = journal_root(root, &dir);
        DIR *d;
        if (root_opendir(sr, dir, &d) < 0)
                return false;
        bool found = false;
        struct dirent *de;
        while (!found && (de = readdir(d)))
                found = startswith(de->d_name, ".#state.json.");
        closedir(d);
        return found;
}

static int index_cmp(const void *a, const void *b) {
        uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;
        return x < y ? -1 : x > y;
}

static int unmovable_cmp(const void *a, const void *b) {
        return strcmp((*(const JournalUnmovable * const *) a)->id, (*(const JournalUnmovable * const *) b)->id);
}

/* engine_verify() of a journal (all), or engine_verify_knobs(): the knobs of ids only, found by id,
 * checked in journal order. */
static int verify_core(Root *root, const Journal *j, const char *running_cmdline, bool all, char * const *ids,
                       size_t n_ids, VerifyResult *ret) {
        _cleanup_free_ uint32_t *pick = NULL;
        _cleanup_free_ const JournalUnmovable **um = NULL;
        size_t n = j->n_applied;
        int k;

        if (!all) {
                pick = malloc(MAX(n_ids, (size_t) 1) * sizeof(uint32_t));
                if (!pick)
                        return -ENOMEM;
                n = 0;
                for (size_t i = 0; i < n_ids; i++) {
                        const JournalKnob *e = journal_find_applied(j, ids[i]);
                        if (e)
                                pick[n++] = (uint32_t) (e - j->applied);
                }
                qsort(pick, n, sizeof(uint32_t), index_cmp);
        }

        /* Unmovable knobs by id. */
        um = malloc(MAX(j->n_unmovable, (size_t) 1) * sizeof(*um));
        if (!um)
                return -ENOMEM;
        for (size_t i = 0; i < j->n_unmovable; i++)
                um[i] = &j->unmovable[i];
        qsort(um, j->n_unmovable, sizeof(*um), unmovable_cmp);

        VerifyResult v = {};
        v.profile = j->profile ? strdup(j->profile) : NULL;
        v.applied_at = j->applied_at ? strdup(j->applied_at) : NULL;
        v.transaction_open = j->transaction_open;
        for (size_t i = 0; i < j->n_unmovable; i++) {
                char *s;
                if (asprintf(&s, "%s: %s", um[i]->id, strempty(um[i]->reason)) >= 0)
                        (void) strv_push(&v.unmovable, s);
        }

        /* Every knob's file read at once, in batches: thousands of them on a big host. */
        _cleanup_free_ char **paths = malloc(MAX(n, (size_t) 1) * sizeof(char *));
        if (!paths) {
                verify_result_done(&v);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++)
                paths[i] = (char *) j->applied[pick ? pick[i] : i].path;
        (void) root_cache_fill(root, paths, n); /* without it, each file is read on its own */

        for (size_t i = 0; i < n; i++) {
                if (pick && i > 0 && pick[i] == pick[i - 1])
                        continue; /* an id given twice */
                const JournalKnob *e = &j->applied[pick ? pick[i] : i];
                Knob kn = journal_knob(e);
                const Backend *b = backend_for(kn.domain);
                const char *want = e->value;
                _cleanup_free_ char *cur = NULL;
                v.checked++;
                if (!b || !b->read)
                        continue;
                k = b->read(root, &kn, &cur);
                if ((k == -ENOENT || (k >= 0 && !cur)) && (b->flags & BACKEND_OBJECTS_VANISH)) {
                        /* The IRQ went with its device, the thread exited: nothing to hold, nothing
                         * drifted. */
                        (void) strv_extend(&v.vanished, kn.id);
                        continue;
                }
                if (k < 0 && k != -ENOENT)
                        cur = NULL;
                if (!value_equal(kn.kind, cur, want)) {
                        Drift *d = realloc(v.drift, (v.n_drift + 1) * sizeof(Drift));
                        if (!d) {
                                root_cache_drop(root);
                                verify_result_done(&v);
                                return -ENOMEM;
                        }
                        v.drift = d;
                        v.drift[v.n_drift++] = (Drift) {
                                .knob = strdup(kn.id),
                                .domain = kn.domain,
                                .expected = want ? strdup(want) : NULL,
                                .actual = cur ? strdup(cur) : NULL,
                        };
                        continue;
                }
                if ((b->flags & BACKEND_REBOOT_ONLY) || kn.reboot) {
                        /* Configured as wanted; is it what the running system uses? */
                        _cleanup_free_ char *running = NULL;
                        bool live;
                        if (b->running) {
                                (void) b->running(&kn, running_cmdline, &running);
                                live = value_equal(kn.kind, running, want);
                        } else
                                live = kn.path && root_read_line(root, kn.path, &running) >= 0 &&
                                        value_equal(kn.kind, running, want);
                        if (!live)
                                (void) strv_extend(&v.reboot_pending, kn.id);
                }
        }
        root_cache_drop(root);
        *ret = v;
        return 0;
}

int engine_verify(Root *root, const Journal *journal, const char *running_cmdline, VerifyResult *ret) {
        return verify_core(root, journal, running_cmdline, /* all= */ true, NULL, 0, ret);
}

int engine_verify_knobs(Root *root, const Journal *journal, const char *running_cmdline, char * const *ids, size_t n,
                        VerifyResult *ret) {
        return verify_core(root, journal, running_cmdline, /* all= */ false, ids, ids ? n : 0, ret);
}

int engine_apply_knobs(Root *root, const Host *host, const Plan *plan, char * const *ids, size_t n, EngineResult *res) {
        _cleanup_(journal_freep) Journal *j = NULL;
        int k = journal_load(root, &j, &res->journal_error);
        if (k < 0)
                return k;
        if (!streq_ptr(j->profile, plan->profile))
                return -ESTALE; /* a subset of another profile than the applied one */
        bool opened = false;
        k = apply_core(root, host, NULL, plan, /* subset= */ true, ids, ids ? n : 0, res, &opened);
        return finish(root, host, k, opened, res);
}
