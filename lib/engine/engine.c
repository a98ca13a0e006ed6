/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What every run that changes the host shares: its start and end, writes through the backends,
 * their undo, and the journal's first and last write of a transaction. Apply, revert, recovery and
 * verify are in engine-*.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine-internal.h"
#include "strv.h"

void engine_result_done(EngineResult *r) {
        strv_free(r->notes);
        error_done(&r->error);
        *r = (EngineResult) {};
}

void engine_note(EngineResult *r, const char *fmt, ...) {
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

void engine_fail(EngineResult *res, int code, const char *fmt, ...) {
        char *s;
        va_list ap;
        va_start(ap, fmt);
        int n = vasprintf(&s, fmt, ap);
        va_end(ap);
        error_done(&res->error);
        res->error.code = code;
        res->error.message = n < 0 ? NULL : s;
}

int engine_run_start(EngineRun *run, Root *root, JournalStore *store, const Host *host, EngineResult *res) {
        *run = (EngineRun) { .root = root, .store = store, .host = host, .res = res };
        /* Changes are serialized by the journal's lock: a caller that does not hold it would race
         * another rtpartctl or rtpartd. */
        if (!journal_store_locked(store))
                return -ENOLCK;
        for (Domain d = 0; d < _DOMAIN_MAX; d++) {
                _cleanup_free_ char *name = NULL;
                if (asprintf(&name, "%s-backup", domain_to_string(d)) < 0)
                        return -ENOMEM;
                run->keep_dirs[d] = journal_store_path(store, name);
                if (!run->keep_dirs[d])
                        return -ENOMEM;
                run->keeps[d] = (KnobKeep) { .root = journal_store_root(store), .dir = run->keep_dirs[d] };
        }
        return 0;
}

void engine_run_done(EngineRun *run) {
        for (Domain d = 0; d < _DOMAIN_MAX; d++)
                free(run->keep_dirs[d]);
        journal_free(run->journal);
        *run = (EngineRun) {};
}

int engine_write(EngineRun *run, const Knob *k, const char *value, KnobResult *ret) {
        const Backend *b = backend_for(k->domain);
        if (!b || !b->write) {
                *ret = (KnobResult) {};
                return knob_result_finish(ret, KNOB_SKIPPED);
        }
        return b->write(run->root, k, value, &run->keeps[k->domain], ret);
}

char *engine_take_reason(KnobResult *w) {
        if (w->reason && !*w->reason) {
                free(w->reason);
                w->reason = NULL;
        }
        return TAKE_PTR(w->reason);
}

void engine_note_not_restored(EngineResult *res, const Knob *k, KnobResult *w, char **ret_detail) {
        _cleanup_free_ char *detail = engine_take_reason(w);
        engine_note(res, "could not restore %s (%s): %s%s%s%s", k->id, strempty(k->path), strerror(-w->error),
                    detail ? " (" : "", strempty(detail), detail ? ")" : "");
        if (ret_detail && !*ret_detail)
                *ret_detail = TAKE_PTR(detail);
}

void engine_run_flush(EngineRun *run) {
        for (Domain d = 0; d < _DOMAIN_MAX; d++) {
                const Backend *b = backend_for(d);
                if (!run->touched[d] || !b || !b->flush)
                        continue;
                run->touched[d] = false;
                char *msg = NULL;
                int k = b->flush(run->root, run->host, &msg);
                if (k < 0)
                        engine_note(run->res, "%s: %s%s%s", b->name,
                                    msg ? msg : "could not make the change take effect: ", msg ? "" : strerror(-k), "");
                else if (msg)
                        engine_note(run->res, "%s: %s", b->name, msg);
                free(msg);
        }
}

size_t engine_undo(EngineRun *run, const JournalTransaction *t, size_t n) {
        size_t failures = 0;
        for (size_t i = n; i-- > 0;) {
                Knob k = journal_step_knob(&t->steps[i]);
                _cleanup_(knob_result_done) KnobResult w = {};
                int r = engine_write(run, &k, t->steps[i].before, &w);
                if (r < 0) {
                        failures++;
                        engine_note_not_restored(run->res, &k, &w, NULL);
                } else
                        run->touched[k.domain] = true;
        }
        return failures;
}

void engine_drop_new_originals(Journal *j) {
        for (size_t i = 0; i < j->transaction.n_new_originals; i++)
                journal_remove_original(j, j->transaction.new_originals[i]);
}

/* ---- the journal's first and last write of a transaction ---- */

/* Beyond the estimate: the last error's message and the kernel's reason in it, the times. */
#define RESERVE_SLACK ((size_t) 16384)

int engine_journal_open(EngineRun *run, size_t extra) {
        _cleanup_free_ char *text = NULL;
        const Journal *j = run->journal;
        size_t size;
        int k = journal_format(j, &text, &size);
        if (k < 0)
                return k;
        size_t room = size + extra + RESERVE_SLACK;
        k = journal_store_reserve(run->store, room);
        if (k < 0) {
                engine_fail(run->res, k,
                            "no room for the journal in %s (%zu KiB needed to record this %s): %s; nothing was "
                            "changed: free some space there",
                            journal_store_display_dir(run->store), (room + 1023) / 1024,
                            journal_op_to_string(j->transaction.op) ?: "transaction", strerror(-k));
                return k;
        }
        k = journal_store_write(run->store, text, size);
        if (k < 0) {
                (void) journal_store_release(run->store);
                engine_fail(run->res, k, "saving the journal %s failed: %s; nothing was changed",
                            journal_store_display(run->store), strerror(-k));
                return k;
        }
        run->opened = true;
        return 0;
}

int engine_journal_close(EngineRun *run) {
        (void) journal_store_release(run->store);
        int k = journal_store_save(run->store, run->journal);
        if (k >= 0)
                run->opened = false;
        else if (run->opened)
                run->res->journal_failed = true;
        return k;
}

/* A transaction this run journalled and could not close (the journal's last write failed, memory
 * ran out after the first write): what it changed is put back before it returns, the journal
 * loaded again from its file (which still holds the transaction). err: why. */
static int roll_back_open(EngineRun *run, int err) {
        _cleanup_(journal_freep) Journal *j = NULL;
        _cleanup_(error_done) Error e = {};
        _cleanup_free_ char *now = journal_now_iso8601(), *msg = NULL;
        const char *display = journal_store_display(run->store);
        EngineResult *res = run->res;

        (void) journal_store_release(run->store);
        int k = journal_store_load(run->store, &j, &e);
        if (k < 0) {
                engine_note(res, "the journal %s could not be read to undo this run: %s; the next run rolls it back",
                            display, strerror(-k));
                return err;
        }
        if (!j->transaction_open) {
                /* Its last write is in place; what failed after it was syncing its directory. */
                engine_note(res, "the journal %s was saved, but syncing its directory failed: %s", display,
                            strerror(-err));
                return 0;
        }
        const char *op = journal_op_to_string(j->transaction.op) ?: "transaction";
        size_t fails = engine_undo(run, &j->transaction, j->transaction.n_steps);
        engine_drop_new_originals(j);
        if (res->journal_failed)
                k = asprintf(&msg, "saving the journal %s failed: %s; every change of this %s was undone%s", display,
                             strerror(-err), op, fails ? " except the ones noted" : "");
        else
                k = asprintf(&msg, "the %s failed: %s; every change of it was undone%s", op, strerror(-err),
                             fails ? " except the ones noted" : "");
        if (k < 0 || !now)
                return err;
        k = journal_set_last_error(j, /* knob= */ NULL, NULL, 0, NULL, msg, now);
        if (k >= 0) {
                journal_end(j);
                k = journal_store_save(run->store, j);
        }
        if (k < 0)
                engine_note(res,
                            "the journal %s still shows the %s as interrupted (%s): the next run rolls it back again",
                            display, op, strerror(-k));
        engine_run_flush(run);
        res->rolled_back = true;
        res->rollback_incomplete = fails > 0;
        /* The run as a whole was undone: a knob it could not write is not the news. */
        engine_fail(res, err, "%s", msg);
        return err;
}

int engine_run_finish(EngineRun *run, int k) {
        if (k < 0 && run->opened && !run->res->rolled_back)
                return roll_back_open(run, k);
        (void) journal_store_release(run->store);
        return k;
}

/* ---- putting originals back ---- */

int engine_knob_files(Root *root, const Knob *k, char ***ret) {
        const Backend *b = backend_for(k->domain);
        *ret = NULL;
        if (!b || !b->files || !b->read || k->path)
                return 0;
        int r = b->files(root, k, ret);
        return r < 0 ? r : 0;
}

int engine_read_in_file(Root *root, const Knob *k, const char *path, char **ret) {
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
int engine_add_restore_steps(Root *root, Journal *j, const JournalKnob *orig, bool restore, bool skip_equal) {
        Knob kn = journal_knob(orig);
        const Backend *b = backend_for(kn.domain);
        _cleanup_strv_free_ char **files = NULL;
        int k = orig->n_files > 0 ? engine_knob_files(root, &kn, &files) : 0;
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
                k = engine_read_in_file(root, &kn, *f, &cur);
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
