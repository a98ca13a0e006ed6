/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Apply, verify, revert and crash recovery over the journal; shared by rtpartctl --no-daemon and
 * rtpartd. lib/ never prints: everything the user should hear is returned.
 *
 * A command opens its journal once (journal_store_open()), takes its lock and hands both on: the
 * calls that change the host (apply, revert, recover) need the lock held (-ENOLCK otherwise), and
 * load and save the journal through the store they are given. */

#include "backend.h"
#include "error.h"
#include "journal.h"

typedef struct EngineResult {
        size_t written;           /* knobs changed by this run */
        size_t unchanged;         /* already at their desired value */
        size_t refused;           /* expected kernel refusals, recorded as unmovable */
        size_t skipped;           /* cannot be written on this root (see notes) */
        size_t restored;          /* knobs of the previous profile put back to their originals */
        size_t failed;            /* revert: knobs that could not be restored (kept in the journal) */
        bool recovered;           /* an interrupted transaction was rolled back first */
        bool rolled_back;         /* this run failed and undid every write it had made */
        bool rollback_incomplete; /* … and some of those undo writes failed too */
        bool journal_failed;      /* the journal's last write of the run failed */
        char **notes;
        /* What failed (error.code: its negative errno). A knob's write: error.pointer is the knob's
         * id, error.file its root-relative path (NULL: none), error.detail the kernel's reason
         * where it gives one (resctrl, cpuset), and there is no message. Anything else (the
         * journal refused, its file not written, a run rolled back as a whole): error.message
         * says what, where and what became of the run's changes, and no pointer is set. */
        Error error;
} EngineResult;

void engine_result_done(EngineResult *r);

/* Rolls back a transaction a previous run left open (a crash, kill -9), and removes what such a
 * run left of a file it was replacing, beside the journal and beside every file a backend replaces
 * (Backend.replaces), whether or not the journal names it. Loads and saves the journal itself. */
int engine_recover(Root *root, JournalStore *store, const Host *host, EngineResult *res);
/* Whether engine_recover() has something to do: an open transaction, or what a run killed before
 * its transaction was journalled left (the journal's reserve, a temporary file). */
bool engine_needs_recovery(Root *root, JournalStore *store);

/* Applies a plan: all or nothing. Returns 0, or the negative errno of the write that failed
 * (res says which knob or file; every write of this run has been undone before it returns). The
 * journal's last write of the transaction has room reserved before the first write (a file beside
 * the journal, unlinked just before it): a full filesystem fails the apply before it changes
 * anything; a journal that cannot be saved even so rolls the apply back. */
int engine_apply(Root *root, JournalStore *store, const Host *host, const Resolved *resolved, const Plan *plan,
                 EngineResult *res);
/* engine_apply() for the knobs of plan named in ids only (drift to correct, IRQs and kernel threads
 * new to the journal): they are written as engine_apply() writes (originals and transaction
 * journalled first, all or nothing) and recorded as applied; every other knob of the journal, the
 * profile and its hash stay as they are, and nothing is restored. plan must be of the applied
 * profile: -ESTALE otherwise. */
int engine_apply_knobs(Root *root, JournalStore *store, const Host *host, const Plan *plan, char * const *ids, size_t n,
                       EngineResult *res);
/* Restores every original value and forgets the profile. A journal that cannot record that (its
 * last write fails) puts back what this run changed: the profile stays applied, as the journal
 * says. */
int engine_revert(Root *root, JournalStore *store, const Host *host, EngineResult *res);

typedef struct Drift {
        char *knob;
        Domain domain;
        char *expected;
        char *actual; /* NULL: absent */
} Drift;

typedef struct VerifyResult {
        char *profile; /* NULL: nothing applied */
        char *applied_at;
        size_t checked;
        Drift *drift;
        size_t n_drift;
        char **reboot_pending; /* boot knobs configured but not in the running kernel */
        char **unmovable;      /* "irq/0/affinity: reason" */
        char **vanished;       /* knobs whose object is gone (an IRQ of a removed device) */
        bool transaction_open;
} VerifyResult;

void verify_result_done(VerifyResult *v);
/* Checks every applied knob of journal (journal_store_load()). running_cmdline: the running
 * kernel's command line (for boot knobs: configured ≠ running means a reboot is pending).
 * Read-only. */
int engine_verify(Root *root, const Journal *journal, const char *running_cmdline, VerifyResult *ret);
/* engine_verify() for the journal's knobs named in ids (n of them) only: what rtpartd checks when
 * inotify says some files changed. Knobs of ids the journal does not have are not counted. */
int engine_verify_knobs(Root *root, const Journal *journal, const char *running_cmdline, char * const *ids, size_t n,
                        VerifyResult *ret);

/* A knob the kernel refused at an earlier apply (the journal's unmovable knobs: a managed IRQ, a
 * per-CPU kernel thread) is one apply leaves alone, so a plan shown to the user lists it as no
 * change, with the kernel's reason as its note. j NULL (no journal could be read): nothing. */
int engine_mark_refused(Plan *plan, const Journal *j);
