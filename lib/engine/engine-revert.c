/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Revert: every original put back, the profile forgotten; what cannot be put back stays in the
 * journal for a later revert. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine-internal.h"
#include "strv.h"

/* Writes every step of the open transaction, last first, whatever the others answer: keep[i] is set
 * for the originals that could not be restored. Returns the first failure's errno, or 0. */
static int restore_all(EngineRun *run, bool *keep) {
        Journal *j = run->journal;
        EngineResult *res = run->res;
        const JournalTransaction *t = &j->transaction;
        const char *counted = NULL; /* a knob of several files counts once */
        int first_err = 0;
        for (size_t i = t->n_steps; i-- > 0;) {
                Knob kn = journal_step_knob(&t->steps[i]);
                _cleanup_(knob_result_done) KnobResult w = {};
                (void) engine_write(run, &kn, t->steps[i].after, &w);
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
                                error_done(&res->error);
                                res->error = (Error) {
                                        .code = w.error,
                                        .pointer = strdup(kn.id),
                                        .file = kn.path ? strdup(kn.path) : NULL,
                                };
                        }
                        engine_note_not_restored(res, &kn, &w, &res->error.detail);
                        continue;
                }
                if (w.status == KNOB_DONE)
                        run->touched[kn.domain] = true;
                if (streq_ptr(counted, kn.id))
                        continue;
                counted = kn.id;
                if (w.status == KNOB_SKIPPED)
                        res->skipped++;
                else if (w.status == KNOB_DONE)
                        res->written++;
        }
        return first_err;
}

static int revert_run(EngineRun *run) {
        Journal *j = run->journal;
        _cleanup_free_ char *now = journal_now_iso8601();
        _cleanup_free_ bool *keep = NULL;
        int k;

        if (!now)
                return -ENOMEM;
        k = journal_begin(j, JOURNAL_OP_REVERT, j->profile, now);
        if (k < 0)
                return k;
        for (size_t i = 0; i < j->n_originals; i++) {
                const JournalKnob *orig = &j->originals[i];
                if (orig->removed)
                        continue;
                k = engine_add_restore_steps(run->root, j, orig, /* restore= */ false, /* skip_equal= */ false);
                if (k < 0)
                        return k;
        }
        keep = calloc(MAX(j->n_originals, (size_t) 1), sizeof(bool));
        if (!keep)
                return -ENOMEM;
        /* Its last write has fewer originals and no applied list, transaction or error. */
        if (j->transaction.n_steps > 0 && (k = engine_journal_open(run, 0)) < 0)
                return k;

        /* Revert does not stop at the first failure: it restores all it can, keeps what it could
         * not in the journal (a later revert retries them) and says which. Reverse order: the
         * last knob changed is the first put back. */
        int first_err = restore_all(run, keep);
        /* Every original is forgotten but those of knobs it could not restore (all their files:
         * a later revert writes each one's own value again). */
        for (size_t i = 0; i < j->n_originals; i++)
                if (!keep[i])
                        j->originals[i].removed = true;
        engine_run_flush(run);

        j->profile = j->profile_path = j->source = j->hash = j->applied_at = NULL;
        k = journal_set_applied(j, NULL, 0);
        if (k < 0)
                return k;
        journal_clear_unmovable(j);
        journal_end(j);
        k = engine_journal_close(run);
        return k < 0 ? k : first_err;
}

int engine_revert(Root *root, JournalStore *store, const Host *host, EngineResult *res) {
        EngineRun run;
        int k = engine_run_start(&run, root, store, host, res);
        if (k >= 0)
                k = engine_run_load(&run);
        if (k >= 0)
                k = engine_run_finish(&run, revert_run(&run));
        engine_run_done(&run);
        return k;
}
