/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the engine's files share: one run of a command that changes the host (apply, revert,
 * recover), and the steps every one of them takes. */

#include "engine.h"

typedef struct EngineRun {
        Root *root;
        JournalStore *store; /* locked */
        const Host *host;
        EngineResult *res;
        Journal *journal;          /* engine_run_load() */
        bool touched[_DOMAIN_MAX]; /* domains written since the last engine_run_flush() */
        bool opened;               /* its transaction is journalled and not yet closed */
        char *keep_dirs[_DOMAIN_MAX];
        KnobKeep keeps[_DOMAIN_MAX]; /* what each domain's writes may keep (KnobKeep) */
} EngineRun;

/* A run on root, its journal's store (which must be locked: -ENOLCK) and host, saying what became
 * of it in res. */
int engine_run_start(EngineRun *run, Root *root, JournalStore *store, const Host *host, EngineResult *res);
void engine_run_done(EngineRun *run);
/* The journal loaded (refused: res says why), an interrupted transaction rolled back first. */
int engine_run_load(EngineRun *run);
/* The end of a run that returns k: one that journalled its transaction (run->opened) and failed
 * without rolling it back has it rolled back here; the reserve goes. Returns k, or 0 when what
 * failed was the sync after the journal's last write. */
int engine_run_finish(EngineRun *run, int k);

_printf_(2, 3) void engine_note(EngineResult *r, const char *fmt, ...);
/* Sets res->error to a failure that is no knob's: code, and the message (what, where, what became
 * of the changes). */
_printf_(3, 4) void engine_fail(EngineResult *res, int code, const char *fmt, ...);

/* Writes through the knob's backend; *ret says what became of it (knob_result_done() it). */
int engine_write(EngineRun *run, const Knob *k, const char *value, KnobResult *ret);
/* The kernel's (or systemd's) own reason in a write's result, taken out of it; NULL if none. */
char *engine_take_reason(KnobResult *w);
/* Notes a knob that could not be put back, with the reason (given to *ret_detail if it is NULL). */
void engine_note_not_restored(EngineResult *res, const Knob *k, KnobResult *w, char **ret_detail);
/* Makes the writes of every touched domain take effect (Backend.flush), once. */
void engine_run_flush(EngineRun *run);
/* Undoes steps [0, n) of t in reverse: each gets its "before" value back. Returns the failures. */
size_t engine_undo(EngineRun *run, const JournalTransaction *t, size_t n);
/* Forgets the originals the open transaction recorded first. */
void engine_drop_new_originals(Journal *j);

/* Journals the open transaction before its first write, with room reserved for the journal's last
 * write of it: the journal as it is now and extra bytes. When it fails nothing is changed (but a
 * missing state directory) and res says why. */
int engine_journal_open(EngineRun *run, size_t extra);
/* The journal's last write of a transaction, into the room reserved for it: once it is in place,
 * the transaction is no longer open. */
int engine_journal_close(EngineRun *run);

/* The files a knob lives in when its backend writes it to several (a boot argument in every BLS
 * entry): a strv, or NULL when it lives in one place (its own path, or none). */
int engine_knob_files(Root *root, const Knob *k, char ***ret);
/* The value of k in one of its files; absent is NULL. */
int engine_read_in_file(Root *root, const Knob *k, const char *path, char **ret);
/* The steps that put an original back (see engine.c); the number added. */
int engine_add_restore_steps(Root *root, Journal *j, const JournalKnob *orig, bool restore, bool skip_equal);
