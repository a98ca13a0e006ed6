/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The journal: var/lib/rtpart/state.json under the root (or state.json in the --state-dir). One
 * JSON document, replaced atomically on every change (temp file, fsync, rename, fsync of the
 * directory: a transaction is two durable commits, its intent and its end). The temp file's data
 * is on disk before the rename: a power loss between a rename and a later sync of the file alone
 * can leave an empty state.json on filesystems that do not flush a file renamed over another
 * (xfs), and that would lose every original:
 *
 *   { "version": 2,
 *     "profile": NAME | null, "hash": "fnv1a64:…", "applied_at": "2026-12-03T05:00:00Z",
 *     "originals": { KNOB: { "domain", "kind", "path", "reboot", "value",     first value rtpart saw
 *                            "files"?, "also"?, "values"? } },
 *     "applied":   [ { "domain", "kind", "path", "reboot", "desired", "knob", "also"? } ],
 *     "unmovable": { KNOB: REASON },
 *     "transaction": null | { "op": "apply"|"revert", "profile", "started",
 *                             "steps": [ { "domain", "kind", "path", "reboot", "knob", "before",
 *                                          "after", "restore"?, "also"?, "befores"? } ],
 *                             "new_originals": [ KNOB ] },
 *     "last_error": null | { "knob", "path", "errno", "detail", "message", "at" }
 *                        | { "message", "at" },          a rolled back interrupted transaction
 *     "profile_path": FILE | null,     where it was read from, for people only
 *     "source": PROFILE | null }       the applied profile merged over its includes, before
 *                                      resolution (Profile.doc): what rtpartd applies again, never
 *                                      the file; "hash" is of its resolution. Journals written
 *                                      before it have none: rtpartd then loads NAME by name.
 *
 * "domain" and "kind" are the names of Domain and ValueKind; "path" is root-relative or null (boot
 * arguments, kernel threads); "value", "desired", "before" and "after" are a string or null
 * (absent); "reboot" and "restore" are booleans, false when left out. "applied" and "unmovable"
 * may be missing (older writers). Keys not listed here are not kept.
 *
 * "files" is { PATH: VALUE } for a knob its backend writes to several files (a boot argument in
 * every BLS entry, and in /etc/kernel/cmdline): the value each file had, recorded when rtpart
 * first wrote the knob (and for a file that appeared since, when it first wrote that one: its
 * value, or "value" when it holds what rtpart applied, copied from rtpart's), "value" staying the
 * one the plan showed. Revert and rollback write each file's own value back; steps
 * then carry the file as their "path". An original without "files" (a journal written before
 * they were kept) has its one value written to every file, as then.
 *
 * "also" (version 2) makes one entry of a run of consecutive ones alike but for a number: the
 * entry's number is the first run of digits in its knob id (no leading zero); "also" lists other
 * numbers as ascending ranges ("42-97,120"), each standing for the entry with every run of digits
 * equal to its number replaced by that one, in the id and the path. An original's "values" (a
 * step's "befores") has, when they differ from the entry's, the value of each one, in the order
 * of "also". An original with "files" has no "also". Version 1 (no "also") loads as before; it
 * is written as version 2, which rtpart before it refuses rather than drop the knobs "also"
 * stands for.
 *
 * In memory the journal is typed: it is parsed once at load, where an entry that is wrong (an
 * unknown domain or kind, a value that is not a string or null) refuses the whole journal with a
 * message naming the entry, and serialised once at save, in the order above. Strings live in
 * blocks owned by the journal; knobs are found by id through hash indexes. */

#include <jansson.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "knob.h"
#include "root.h"

#define JOURNAL_DIR "var/lib/rtpart"
/* What journal_format() writes; journal_parse() reads it and version 1 (which has no "also"). */
#define JOURNAL_VERSION 2

typedef enum JournalOp {
        JOURNAL_OP_APPLY,
        JOURNAL_OP_REVERT,
        _JOURNAL_OP_MAX,
        _JOURNAL_OP_INVALID = -EINVAL,
} JournalOp;

const char *journal_op_to_string(JournalOp op);
JournalOp journal_op_from_string(const char *s);

/* One file's original of a knob that lives in several. */
typedef struct JournalFile {
        const char *path;
        const char *value; /* NULL: absent */
} JournalFile;

/* An original ("value": what rtpart first saw) or an applied knob ("value": what the profile
 * wants). */
typedef struct JournalKnob {
        const char *id;
        const char *path;  /* NULL: none */
        const char *value; /* NULL: absent */
        Domain domain;
        ValueKind kind;
        bool reboot;
        bool removed;       /* an original forgotten since load: not found, not saved */
        JournalFile *files; /* an original's "files" (owned by the journal); NULL: none */
        size_t n_files;
} JournalKnob;

typedef struct JournalUnmovable {
        const char *id;
        const char *reason;
} JournalUnmovable;

typedef struct JournalStep {
        const char *id;
        const char *path;
        const char *before; /* NULL: absent */
        const char *after;
        Domain domain;
        ValueKind kind;
        bool reboot;
        bool restore; /* a knob of the previous profile going back to its original */
} JournalStep;

typedef struct JournalTransaction {
        JournalOp op; /* _JOURNAL_OP_INVALID: not recorded (a hand-written journal) */
        const char *profile;
        const char *started;
        JournalStep *steps;
        size_t n_steps, cap_steps;
        const char **new_originals; /* originals first recorded by it: dropped on rollback */
        size_t n_new_originals, cap_new_originals;
} JournalTransaction;

typedef struct JournalLastError {
        const char *knob; /* NULL: not a write (a rolled back transaction) */
        const char *path;
        int error; /* "errno", positive */
        const char *detail;
        const char *message;
        const char *at;
} JournalLastError;

/* A hash index of an array whose elements begin with their id (a const char *): JournalKnob, Knob,
 * char *. Slot → 1 + position, 0: empty. */
typedef struct JournalIndex {
        uint32_t *slots;
        size_t n_slots;
} JournalIndex;

int journal_index_build(JournalIndex *x, const void *items, size_t size, size_t n);
/* The position of the first element with this id, or -1. */
ssize_t journal_index_find(const JournalIndex *x, const void *items, size_t size, const char *id);
void journal_index_done(JournalIndex *x);

typedef struct JournalChunk JournalChunk;

typedef struct Journal {
        uint64_t digest;     /* of state.json's bytes as read (0: not read) */
        const char *profile; /* NULL: nothing applied */
        const char *profile_path;
        const char *hash;
        const char *applied_at;
        const char *source; /* "source" as compact JSON text; NULL: none */

        JournalKnob *originals; /* in journal order; entries may be removed */
        size_t n_originals, cap_originals;
        JournalKnob *applied; /* in journal order */
        size_t n_applied, cap_applied;
        JournalUnmovable *unmovable;
        size_t n_unmovable, cap_unmovable;
        bool transaction_open;
        JournalTransaction transaction;
        bool has_last_error;
        JournalLastError last_error;

        JournalIndex originals_index, applied_index, unmovable_index;
        JournalChunk *chunks; /* the strings */
} Journal;

/* An empty journal: nothing applied, no originals. */
int journal_new(Journal **ret);
Journal *journal_free(Journal *j);
DEFINE_TRIVIAL_CLEANUP_FUNC(Journal *, journal_free);

/* The journal those bytes make (an empty one for NULL); name is the file as messages call it. A
 * document that is not a journal, or has a wrong entry, is -EBADMSG and e says where (file: name,
 * pointer: the entry, "originals[\"irq/41/affinity\"]") and what is wrong; -ENOMEM is out of
 * memory. */
int journal_parse(const char *text, size_t size, const char *name, Journal **ret, Error *e);
/* The document of j, as journal_store_save() writes it: written a knob entry at a time, one line
 * each, never as a tree of the whole. -EILSEQ when a string of it is not UTF-8 (JSON holds no
 * other). */
int journal_format(const Journal *j, char **ret_text, size_t *ret_size);

/* ---- the journal's directory, opened (journal-store.c) ----
 *
 * A command opens the journal of its root once and hands the object on: it holds the directory
 * (var/lib/rtpart under the root, or the --state-dir root), the file's name as the user sees it,
 * and, once taken, the lock that serializes changes between rtpartctl and rtpartd.
 *
 * The file is read only when rtpart may trust it: a regular file (opened non-blocking and not
 * through a symlink, so a FIFO planted there is refused, not waited on), owned by root or by the
 * user running rtpart (a --root tree of the user's own, run as that user: what profiles accept
 * too), and writable by no one else. A journal that is not one it trusts is refused as one that
 * is not a journal: -EBADMSG, the Error naming the file, what is wrong and the fix. A refused
 * journal is never written over: every change starts by loading it. */
typedef struct JournalStore JournalStore;

int journal_store_open(Root *root, JournalStore **ret);
JournalStore *journal_store_free(JournalStore *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(JournalStore *, journal_store_free);
/* The lock file (made if missing, checked as the journal is): held until journal_store_unlock()
 * or free. -EWOULDBLOCK when another process holds it and !wait; -EBADMSG with e for a lock file
 * rtpart does not trust. Taking it again is a no-op. */
int journal_store_lock(JournalStore *s, bool wait, Error *e);
void journal_store_unlock(JournalStore *s);
/* For _cleanup_: unlocks *s (NULL: nothing), which stays open. */
void journal_store_unlockp(JournalStore **s);
bool journal_store_locked(const JournalStore *s);
/* The root the directory is in (the root, or the --state-dir one), the directory relative to it,
 * and the file and directory as the user names them ("/var/lib/rtpart/state.json"). */
Root *journal_store_root(const JournalStore *s);
const char *journal_store_dir(const JournalStore *s);
const char *journal_store_display(const JournalStore *s);
const char *journal_store_display_dir(const JournalStore *s);
/* name in the directory (relative to journal_store_root()): a place for what must be kept as long
 * as the journal, such as a bootloader file's bytes before rtpart first edited it. */
char *journal_store_path(const JournalStore *s, const char *name);

/* The file's bytes (NULL and size 0 when there is no journal yet). */
int journal_store_read(JournalStore *s, char **ret_text, size_t *ret_size, Error *e);
/* journal_store_read() then journal_parse(). A missing file is an empty journal. */
int journal_store_load(JournalStore *s, Journal **ret, Error *e);
/* journal_store_load(), unless the file's bytes hash to unless_digest (that of a journal already
 * held): then nothing is parsed, and it returns 0 with *ret = NULL. Else 1 and the journal. */
int journal_store_load_if_changed(JournalStore *s, uint64_t unless_digest, Journal **ret, Error *e);
/* Whether the file holds an open transaction: its "transaction" member alone, no knob of it read
 * (every command asks before it starts; a large host's journal takes ten times longer to load
 * whole). false when there is no file, it is not JSON or not one rtpart trusts. */
bool journal_store_transaction_open(JournalStore *s);
/* Replaces the file by j's document, or by text (a document journal_format() made). */
int journal_store_save(JournalStore *s, const Journal *j);
int journal_store_write(JournalStore *s, const char *text, size_t size);

/* A file of the directory other than the journal (name: "ledger.json"), read only when rtpart may
 * trust it as it trusts the journal (NULL and size 0 when there is none), and replaced as the
 * journal is: atomically, durable when it returns. */
int journal_store_read_beside(JournalStore *s, const char *name, char **ret_text, size_t *ret_size, Error *e);
int journal_store_write_beside(JournalStore *s, const char *name, const char *text, size_t size);

/* The reserve: a file beside the journal as large as a transaction's last write of it may need,
 * made before its first write and released (unlinked) just before that last write, so that a full
 * filesystem fails a transaction before it changes anything. release: true if there was one. */
int journal_store_reserve(JournalStore *s, size_t size);
bool journal_store_release(JournalStore *s);
/* What a run killed in the middle leaves in the directory: temporaries (the journal's, and those
 * of what is kept beside it) and the reserve. Removes what it can and returns how many it removed;
 * has_leftovers: whether there are any, removing none. */
int journal_store_remove_temporaries(JournalStore *s);
bool journal_store_has_leftovers(JournalStore *s);

/* A copy of s in j's strings, for the fields of j and of its entries (NULL for NULL). */
int journal_strdup(Journal *j, const char *s, const char **ret);
/* Sets one of j's string fields (&j->profile, &j->transaction.started, …) to a copy of s. */
int journal_set(Journal *j, const char **field, const char *s);
/* Stores a profile document as "source" (NULL: none). */
int journal_set_source(Journal *j, const json_t *doc);

const JournalKnob *journal_find_original(const Journal *j, const char *id);
/* Records k's first value (k must have no original yet). */
int journal_add_original(Journal *j, const Knob *k, const char *value);
void journal_remove_original(Journal *j, const char *id);
/* The value path had when rtpart first wrote the knob there (o's "files"), or NULL if o has none
 * recorded for it. */
const JournalFile *journal_find_original_file(const JournalKnob *o, const char *path);
/* Records value as the original of the knob id (which must have an original) in file path, unless
 * one is recorded for path already. */
int journal_add_original_file(Journal *j, const char *id, const char *path, const char *value);
size_t journal_count_originals(const Journal *j);

const JournalKnob *journal_find_applied(const Journal *j, const char *id);
/* A knob for the applied list, its strings copied into j. */
int journal_knob_make(Journal *j, const Knob *k, const char *value, JournalKnob *ret);
/* Replaces the applied list by the n entries of l (a malloc'd array, taken on success; their strings
 * are j's). */
int journal_set_applied(Journal *j, JournalKnob *l, size_t n);

/* Why the knob with this id is recorded as unmovable, or NULL if it is not. */
const char *journal_find_unmovable(const Journal *j, const char *id);
int journal_set_unmovable(Journal *j, const char *id, const char *reason);
void journal_clear_unmovable(Journal *j);

/* Opens a transaction (none must be open). */
int journal_begin(Journal *j, JournalOp op, const char *profile, const char *started);
int journal_add_step(Journal *j, const Knob *k, const char *before, const char *after, bool restore);
int journal_add_new_original(Journal *j, const char *id);
/* Closes the transaction: committed or rolled back, it is forgotten. */
void journal_end(Journal *j);

/* knob NULL: the short form, a message and when. */
int journal_set_last_error(Journal *j, const char *knob, const char *path, int error, const char *detail,
                           const char *message, const char *at);
void journal_clear_last_error(Journal *j);
/* "last_error" as the journal has it: null, or the object (NULL on OOM). */
json_t *journal_last_error_to_json(const Journal *j);

/* A journal entry as the backends take it; it borrows the journal's strings. */
Knob journal_knob(const JournalKnob *k);
Knob journal_step_knob(const JournalStep *s);

char *journal_now_iso8601(void);
/* FNV-1a over n bytes. */
uint64_t journal_digest(const void *p, size_t n);
/* The journal's "hash" of a resolved profile document (stable: keys sorted); NULL on OOM. */
char *journal_hash(const json_t *doc);
