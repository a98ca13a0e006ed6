/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Apply, all or nothing: the steps journalled (originals first), written, committed; a write that
 * fails puts back every one before it. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine-internal.h"
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

typedef struct Apply {
        EngineRun *run;
        const Resolved *resolved; /* NULL for a subset */
        const Plan *plan;
        bool subset;
        JournalIndex plan_index;  /* plan knobs by id: 10k+ on a big host make pairwise scans quadratic */
        uint8_t *pflags;          /* per plan knob */
        uint8_t *sflags;          /* per step */
        const char **skip_reason; /* per step: why a write was skipped (the journal's strings) */
        size_t *step_src;         /* per step: its plan knob, SIZE_MAX for a restore */
        size_t cap_src;
        size_t unwritable[_DOMAIN_MAX]; /* knobs per domain whose backend cannot write here */
        size_t first_new;               /* originals from here on were first recorded by this run */
        char *now;
} Apply;

static void apply_done(Apply *a) {
        journal_index_done(&a->plan_index);
        free(a->pflags);
        free(a->sflags);
        free(a->skip_reason);
        free(a->step_src);
        free(a->now);
}

static int reserve_sources(Apply *a, size_t n) {
        if (n <= a->cap_src)
                return 0;
        size_t c = MAX(n, 2 * a->cap_src);
        size_t *p = realloc(a->step_src, c * sizeof(size_t));
        if (!p)
                return -ENOMEM;
        a->step_src = p;
        a->cap_src = c;
        return 0;
}

static ssize_t plan_find(const Apply *a, const char *id) {
        return journal_index_find(&a->plan_index, a->plan->knobs, sizeof(Knob), id);
}

/* Every knob of the previous profile that this one no longer manages goes back to its original.
 * Restores first, last applied first: a resctrl group goes before the default group it shrank, a
 * cgroup before the slices it needed room from, and new values find them gone. */
static int add_restores(Apply *a) {
        Journal *j = a->run->journal;
        Root *root = a->run->root;
        for (size_t i = a->subset ? 0 : j->n_applied; i-- > 0;) {
                const char *id = j->applied[i].id;
                const JournalKnob *orig = journal_find_original(j, id);
                if (!orig || plan_find(a, id) >= 0)
                        continue;
                Knob kn = journal_knob(orig);
                const Backend *b = backend_for(kn.domain);
                if (b && (b->flags & BACKEND_OBJECTS_VANISH)) {
                        _cleanup_free_ char *cur = NULL;
                        if (b->read)
                                (void) b->read(root, &kn, &cur);
                        if (!cur && !value_equal(kn.kind, cur, orig->value)) {
                                /* Gone with its device or thread: nothing left to put back. */
                                journal_remove_original(j, id);
                                continue;
                        }
                }
                int k = engine_add_restore_steps(root, j, orig, /* restore= */ true, /* skip_equal= */ true);
                if (k < 0)
                        return k;
                if (k > 0)
                        a->run->res->restored++;
        }
        return 0;
}

/* The steps of plan knob i that lives in several files: each one's own value is its original
 * (recorded for a file new since the first apply too, unless the original comes from a journal
 * that kept none per file) and the step that changes it. A new file that holds what rtpart applied
 * got it from rtpart (kernel-install copies the configured arguments): its original is the
 * knob's. */
static int add_file_steps(Apply *a, size_t i, char **files, const JournalKnob *orig, bool first) {
        Journal *j = a->run->journal;
        const Knob *kn = &a->plan->knobs[i];
        const JournalKnob *was = first ? NULL : journal_find_applied(j, kn->id);
        int k = reserve_sources(a, j->transaction.n_steps + strv_length(files) + a->plan->n_knobs - i);
        if (k < 0)
                return k;
        for (char **f = files; *f; f++) {
                _cleanup_free_ char *cur = NULL;
                k = engine_read_in_file(a->run->root, kn, *f, &cur);
                if (k < 0)
                        return k;
                const char *original = was && value_equal(kn->kind, cur, was->value) ? orig->value : cur;
                if ((first || orig->n_files > 0) && (k = journal_add_original_file(j, kn->id, *f, original)) < 0)
                        return k;
                if (value_equal(kn->kind, cur, kn->desired))
                        continue;
                Knob kf = *kn;
                kf.path = *f;
                k = journal_add_step(j, &kf, cur, kn->desired, /* restore= */ false);
                if (k < 0)
                        return k;
                a->step_src[j->transaction.n_steps - 1] = i;
        }
        return 0;
}

/* The steps of every changed knob of the plan (of the subset), its original recorded first. */
static int add_writes(Apply *a) {
        Journal *j = a->run->journal;
        EngineResult *res = a->run->res;
        size_t n_restores = j->transaction.n_steps;
        int k = reserve_sources(a, n_restores + a->plan->n_knobs + 1);
        if (k < 0)
                return k;
        for (size_t i = 0; i < n_restores; i++)
                a->step_src[i] = SIZE_MAX;
        for (size_t i = 0; i < a->plan->n_knobs; i++) {
                const Knob *kn = &a->plan->knobs[i];
                if (a->subset && !(a->pflags[i] & PLAN_PICKED))
                        continue;
                if (!kn->changed) {
                        res->unchanged++;
                        continue;
                }
                if (journal_find_unmovable(j, kn->id))
                        continue; /* the kernel said no before; it will again */
                const Backend *b = backend_for(kn->domain);
                if (b && b->writes_need && !root_can(a->run->root, b->writes_need)) {
                        /* Not written, so not owned, and no step: nothing of it goes in the journal. */
                        a->pflags[i] |= PLAN_SKIPPED;
                        a->unwritable[kn->domain]++;
                        res->skipped++;
                        continue;
                }
                _cleanup_strv_free_ char **files = NULL;
                k = engine_knob_files(a->run->root, kn, &files);
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
                k = files ? add_file_steps(a, i, files, orig, first)
                          : journal_add_step(j, kn, kn->current, kn->desired, /* restore= */ false);
                if (k < 0)
                        return k;
                if (!files)
                        a->step_src[j->transaction.n_steps - 1] = i;
        }
        return 0;
}

/* What the journal's last write of an apply may need beyond the journal with the transaction open:
 * the applied list of every knob of the plan (picked: those of ids), the profile's source. */
static size_t apply_room(const Apply *a) {
        size_t room = PATH_MAX + 256; /* profile, profile_path, hash, applied_at */
        for (size_t i = 0; i < a->plan->n_knobs; i++) {
                const Knob *k = &a->plan->knobs[i];
                if (a->subset && !(a->pflags[i] & PLAN_PICKED))
                        continue;
                /* Keys, domain, kind, indentation: < 160 bytes (journal_format). */
                room += strlen(k->id) + strlen(strempty(k->path)) + strlen(strempty(k->desired)) + 160;
        }
        const Profile *prof = a->resolved ? a->resolved->profile : NULL;
        if (prof && prof->doc) {
                /* Indented deeper in the journal than alone: twice its size is enough. */
                _cleanup_free_ char *text = json_dumps(prof->doc, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
                room += 2 * strlen(strempty(text));
        }
        return room;
}

/* Why the kernel refused a write, as the journal keeps it for an unmovable knob. */
static const char *refusal_reason(const Knob *k, const KnobResult *w) {
        const Backend *b = backend_for(k->domain);
        if (w->reason && *w->reason)
                return w->reason;
        return b && b->refusal_reason ? b->refusal_reason : "the kernel refused the value";
}

/* Step done (of t) failed: every step before it undone, the journal closed with the failure. */
static int apply_fail(EngineRun *run, const Knob *k, KnobResult *w, size_t done) {
        Journal *j = run->journal;
        EngineResult *res = run->res;
        int err = w->error;
        _cleanup_free_ char *detail = engine_take_reason(w);
        size_t fails = engine_undo(run, &j->transaction, done);
        engine_drop_new_originals(j);
        _cleanup_free_ char *now = journal_now_iso8601(), *msg = NULL;
        if (asprintf(&msg, "writing %s failed: %s%s%s%s; every change of this run was undone%s", k->id, strerror(-err),
                     detail ? " (kernel: " : "", strempty(detail), detail ? ")" : "",
                     fails ? " except the ones noted" : "") < 0)
                msg = NULL;
        int r = msg && now ? journal_set_last_error(j, k->id, k->path, -err, detail, msg, now) : -ENOMEM;
        if (r >= 0) {
                journal_end(j);
                r = engine_journal_close(run);
        }
        /* Not saved: the transaction stays open in the journal, and the next run rolls it back
         * again (the same writes). */
        engine_run_flush(run);
        res->rolled_back = true;
        res->rollback_incomplete = fails > 0;
        error_done(&res->error);
        res->error = (Error) {
                .code = err,
                .pointer = strdup(k->id),
                .file = k->path ? strdup(k->path) : NULL,
                .detail = TAKE_PTR(detail),
        };
        return r < 0 ? r : err;
}

/* A step skipped (its backend cannot write it on this root now): not written, so not owned, no
 * original to keep, nothing to verify. */
static int step_skipped(Apply *a, size_t i, KnobResult *w) {
        _cleanup_free_ char *why = engine_take_reason(w);
        a->sflags[i] |= STEP_SKIPPED;
        int k = journal_strdup(a->run->journal, why, &a->skip_reason[i]);
        if (k < 0)
                return k;
        if (a->step_src[i] != SIZE_MAX)
                a->pflags[a->step_src[i]] |= PLAN_SKIPPED;
        a->run->res->skipped++;
        return 0;
}

/* Writes every step in order; the first that fails ends the run (apply_fail()). */
static int write_steps(Apply *a) {
        EngineRun *run = a->run;
        Journal *j = run->journal;
        const JournalTransaction *t = &j->transaction;
        int k;
        a->sflags = calloc(MAX(t->n_steps, (size_t) 1), sizeof(uint8_t));
        a->skip_reason = calloc(MAX(t->n_steps, (size_t) 1), sizeof(char *));
        if (!a->sflags || !a->skip_reason)
                return -ENOMEM;
        for (size_t i = 0; i < t->n_steps; i++) {
                const JournalStep *s = &t->steps[i];
                Knob kn = journal_step_knob(s);
                _cleanup_(knob_result_done) KnobResult w = {};
                (void) engine_write(run, &kn, s->after, &w);
                if (w.status == KNOB_REFUSED) {
                        if ((k = journal_set_unmovable(j, kn.id, refusal_reason(&kn, &w))) < 0)
                                return k;
                        run->res->refused++;
                } else if (w.status == KNOB_SKIPPED) {
                        if ((k = step_skipped(a, i, &w)) < 0)
                                return k;
                } else if (w.error == -ENOENT && s->restore)
                        a->sflags[i] |= STEP_FORGET; /* the object vanished between read and write */
                else if (w.status == KNOB_FAILED)
                        return apply_fail(run, &kn, &w, i);
                else {
                        run->touched[kn.domain] = true;
                        if (s->restore)
                                /* Back at its original and no longer managed: forgotten on commit
                                 * (a rollback still needs it). */
                                a->sflags[i] |= STEP_FORGET;
                        else if (!(a->pflags[a->step_src[i]] & PLAN_WRITTEN)) {
                                /* A knob of several files is one knob written. */
                                a->pflags[a->step_src[i]] |= PLAN_WRITTEN;
                                run->res->written++;
                        }
                }
        }
        return 0;
}

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
static void note_skipped(const Apply *a) {
        const JournalTransaction *t = &a->run->journal->transaction;
        EngineResult *res = a->run->res;
        _cleanup_free_ bool *said = calloc(MAX(t->n_steps, (size_t) 1), sizeof(bool));
        StrBuf b = {};
        if (!said)
                return;
        for (Domain d = 0; d < _DOMAIN_MAX; d++) {
                if (a->unwritable[d] > 0)
                        append_skipped(&b, a->run->root, d, a->unwritable[d], backend_for(d)->writes_need_reason);
                for (size_t i = 0; i < t->n_steps; i++) {
                        if (!(a->sflags[i] & STEP_SKIPPED) || said[i] || t->steps[i].domain != d)
                                continue;
                        size_t n = 0;
                        for (size_t k = i; k < t->n_steps; k++)
                                if ((a->sflags[k] & STEP_SKIPPED) && !said[k] && t->steps[k].domain == d &&
                                    streq_ptr(a->skip_reason[k], a->skip_reason[i])) {
                                        said[k] = true;
                                        n++;
                                }
                        append_skipped(&b, a->run->root, d, n, a->skip_reason[i]);
                }
        }
        _cleanup_free_ char *list = strbuf_steal(&b);
        engine_note(res, "%zu knob%s left as they are and not recorded as applied: %s", res->skipped,
                    res->skipped == 1 ? "" : "s", strempty(list));
}

/* The applied list after a subset apply: the journal's knobs in their order, those of the subset
 * renewed (or gone, when the kernel refused them or they cannot be written here; kept as they
 * were when the plan does not have them); new ones after. */
static int subset_applied(Apply *a, const JournalKnob *fresh, const bool *dropped, JournalKnob **ret, size_t *ret_n) {
        Journal *j = a->run->journal;
        const Plan *plan = a->plan;
        JournalKnob *l = malloc(MAX(j->n_applied + plan->n_knobs, (size_t) 1) * sizeof(JournalKnob));
        size_t n = 0;
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < j->n_applied; i++) {
                const JournalKnob *e = &j->applied[i];
                ssize_t p = plan_find(a, e->id);
                if (p < 0 || !(a->pflags[p] & PLAN_PICKED) || (a->pflags[p] & PLAN_CONSUMED)) {
                        l[n++] = *e;
                        continue;
                }
                a->pflags[p] |= PLAN_CONSUMED;
                if (!dropped[p])
                        l[n++] = fresh[p];
        }
        for (size_t p = 0; p < plan->n_knobs; p++)
                if ((a->pflags[p] & PLAN_PICKED) && !(a->pflags[p] & PLAN_CONSUMED) && !dropped[p]) {
                        a->pflags[p] |= PLAN_CONSUMED;
                        l[n++] = fresh[p];
                }
        *ret = l;
        *ret_n = n;
        return 0;
}

/* The commit's applied list: what the plan wants of every knob written or unchanged; the restored
 * knobs' originals forgotten. */
static int commit_applied(Apply *a) {
        Journal *j = a->run->journal;
        const Plan *plan = a->plan;
        const JournalTransaction *t = &j->transaction;
        for (size_t i = 0; i < t->n_steps; i++)
                if (a->sflags[i] & STEP_FORGET)
                        journal_remove_original(j, t->steps[i].id);
        _cleanup_free_ JournalKnob *fresh = calloc(MAX(plan->n_knobs, (size_t) 1), sizeof(JournalKnob));
        _cleanup_free_ bool *dropped = calloc(MAX(plan->n_knobs, (size_t) 1), sizeof(bool));
        if (!fresh || !dropped)
                return -ENOMEM;
        size_t n_fresh = 0;
        for (size_t i = 0; i < plan->n_knobs; i++) {
                const Knob *kn = &plan->knobs[i];
                if (a->subset && !(a->pflags[i] & PLAN_PICKED))
                        continue;
                if (journal_find_unmovable(j, kn->id)) {
                        dropped[i] = true; /* no longer applied */
                        continue;
                }
                if (a->pflags[i] & PLAN_SKIPPED) {
                        /* Not written: an original first recorded by this run goes again. */
                        const JournalKnob *o = journal_find_original(j, kn->id);
                        if (o && (size_t) (o - j->originals) >= a->first_new)
                                journal_remove_original(j, kn->id);
                        dropped[i] = true;
                        continue;
                }
                int k = journal_knob_make(j, kn, kn->desired, a->subset ? &fresh[i] : &fresh[n_fresh++]);
                if (k < 0)
                        return k;
        }
        JournalKnob *applied = TAKE_PTR(fresh);
        size_t n_applied = n_fresh;
        if (a->subset) {
                _cleanup_free_ JournalKnob *renewed = applied;
                int k = subset_applied(a, renewed, dropped, &applied, &n_applied);
                if (k < 0)
                        return k;
        }
        int k = journal_set_applied(j, applied, n_applied);
        if (k < 0)
                free(applied);
        return k;
}

/* The commit's profile: its name and hash, where it came from, its document (what rtpartd applies
 * again, at start, to new IRQs and threads, to correct drift: the profile as it is now, merged
 * over its includes, never the file it came from, which may change or go), and when it was
 * applied. */
static int commit_profile(Apply *a) {
        Journal *j = a->run->journal;
        _cleanup_free_ char *hash = journal_hash(a->resolved->doc);
        int k;
        if (!hash)
                return -ENOMEM;
        bool same = streq_ptr(j->profile, a->plan->profile) && streq_ptr(j->hash, hash);
        if ((k = journal_set(j, &j->profile, a->plan->profile)) < 0 || (k = journal_set(j, &j->hash, hash)) < 0)
                return k;
        /* The path is for people; a profile built from "source" keeps it. */
        const Profile *prof = a->resolved->profile;
        if (!prof || prof->path) {
                _cleanup_free_ char *real = prof ? realpath(prof->path, NULL) : NULL;
                k = journal_set(j, &j->profile_path, real ?: prof ? prof->path : NULL);
                if (k < 0)
                        return k;
        }
        k = journal_set_source(j, prof ? prof->doc : NULL);
        if (k < 0)
                return k;
        if (!same || a->run->res->written > 0 || !j->applied_at)
                return journal_set(j, &j->applied_at, a->now);
        return 0;
}

/* engine_apply(), or with subset engine_apply_knobs(): the knobs of the plan named in ids are
 * written and recorded; the rest of the journal stays as it is. */
static int apply_run(Apply *a, char * const *ids, size_t n_ids) {
        EngineRun *run = a->run;
        const Plan *plan = a->plan;
        int k;

        k = journal_index_build(&a->plan_index, plan->knobs, sizeof(Knob), plan->n_knobs);
        if (k < 0)
                return k;
        a->pflags = calloc(MAX(plan->n_knobs, (size_t) 1), sizeof(uint8_t));
        a->now = journal_now_iso8601();
        if (!a->pflags || !a->now)
                return -ENOMEM;
        for (size_t i = 0; a->subset && i < n_ids; i++) {
                ssize_t p = ids[i] ? plan_find(a, ids[i]) : -1;
                if (p >= 0)
                        a->pflags[p] |= PLAN_PICKED;
        }
        Journal *j = run->journal;
        k = journal_begin(j, JOURNAL_OP_APPLY, plan->profile, a->now);
        if (k < 0)
                return k;
        a->first_new = j->n_originals;

        /* 1. What this run will write. 2. Journal it before the first write, with room for the
         *    last. 3. Write. 4. Commit: the profile, what it wants of every knob, no transaction. */
        if ((k = add_restores(a)) < 0 || (k = add_writes(a)) < 0)
                return k;
        if (j->transaction.n_steps > 0 && (k = engine_journal_open(run, apply_room(a))) < 0)
                return k;
        if ((k = write_steps(a)) != 0)
                return k;
        if (run->res->written > 0 || run->res->restored > 0)
                engine_run_flush(run);
        if (run->res->skipped > 0)
                note_skipped(a);
        if ((k = commit_applied(a)) < 0)
                return k;
        journal_end(j);
        journal_clear_last_error(j);
        if (!a->subset && (k = commit_profile(a)) < 0)
                return k;
        return engine_journal_close(run);
}

static int apply(Root *root, JournalStore *store, const Host *host, const Resolved *resolved, const Plan *plan,
                 char * const *ids, size_t n, EngineResult *res) {
        EngineRun run;
        Apply a = { .run = &run, .resolved = resolved, .plan = plan, .subset = !resolved };
        int k = engine_run_start(&run, root, store, host, res);
        if (k >= 0)
                k = engine_run_load(&run);
        if (k >= 0 && a.subset && !streq_ptr(run.journal->profile, plan->profile))
                k = -ESTALE; /* a subset of another profile than the applied one */
        else if (k >= 0)
                k = engine_run_finish(&run, apply_run(&a, ids, n));
        apply_done(&a);
        engine_run_done(&run);
        return k;
}

int engine_apply(Root *root, JournalStore *store, const Host *host, const Resolved *resolved, const Plan *plan,
                 EngineResult *res) {
        return apply(root, store, host, resolved, plan, NULL, 0, res);
}

int engine_apply_knobs(Root *root, JournalStore *store, const Host *host, const Plan *plan, char * const *ids, size_t n,
                       EngineResult *res) {
        return apply(root, store, host, NULL, plan, ids, ids ? n : 0, res);
}
