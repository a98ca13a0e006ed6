/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Crash recovery: the transaction a killed run left open rolled back, and what it left of files it
 * was replacing removed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine-internal.h"
#include "strv.h"

/* What a run killed between a temporary and its rename leaves (".#NAME.PID.tmp" and the like, see
 * root_write_file_atomic()), removed, or with !remove counted: beside the journal and what is kept
 * beside it, and beside every file a backend replaces whole (Backend.replaces), whether or not the
 * journal names it (a GRUB drop-in has no path in the journal). Kernel files under proc/, sys/
 * and dev/ are written in place, never through a temporary. */
static int leftovers(Root *root, JournalStore *store, bool remove) {
        int n = remove ? journal_store_remove_temporaries(store) : journal_store_has_leftovers(store);
        if (n < 0)
                return n;
        size_t n_table;
        const Backend * const *table = backend_table(&n_table);
        for (size_t i = 0; i < n_table; i++)
                for (const char * const *p = table[i]->replaces; p && *p; p++) {
                        int k = remove ? root_remove_temporaries(root, *p) : root_count_temporaries(root, *p);
                        if (k > 0)
                                n += k;
                }
        return n;
}

static int recover_journal(EngineRun *run) {
        Journal *j = run->journal;
        const JournalTransaction *t = &j->transaction;
        int k = leftovers(run->root, run->store, /* remove= */ true);
        if (k > 0)
                engine_note(run->res, "removed %d temporary file%s an interrupted run left behind", k,
                            k == 1 ? "" : "s");
        if (!j->transaction_open)
                return 0;
        size_t fails = engine_undo(run, t, t->n_steps);
        engine_drop_new_originals(j);
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
        k = journal_store_save(run->store, j);
        if (k < 0)
                return k;
        engine_run_flush(run);
        run->res->recovered = true;
        engine_note(run->res, "%s", msg);
        return 0;
}

int engine_run_load(EngineRun *run) {
        _cleanup_(error_done) Error e = {};
        int k = journal_store_load(run->store, &run->journal, &e);
        if (k < 0) {
                /* Refused: the whole of it, file and entry, is the run's message. */
                error_done(&run->res->error);
                run->res->error.code = k;
                if (e.message)
                        run->res->error.message = error_format(&e, NULL);
                return k;
        }
        return recover_journal(run);
}

int engine_recover(Root *root, JournalStore *store, const Host *host, EngineResult *res) {
        EngineRun run;
        int k = engine_run_start(&run, root, store, host, res);
        if (k >= 0)
                k = engine_run_load(&run);
        engine_run_done(&run);
        return k;
}

bool engine_needs_recovery(Root *root, JournalStore *store) {
        return journal_store_transaction_open(store) || leftovers(root, store, /* remove= */ false) > 0;
}
