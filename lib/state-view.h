/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The journal as rtpartd holds it between events: only what watching and checking the applied
 * knobs needs, packed in one block with no JSON objects (about 120 bytes a knob where the parsed
 * state.json costs some 1.6 KiB: originals, per-key hash tables), knobs found by id in O(log n).
 * Read-only: a changed state.json is a new view. */

#include <stdint.h>

#include "state.h"

typedef struct StateViewKnob {
        const char *id;
        const char *path;       /* NULL: none (boot arguments, kernel threads) */
        const char *desired;    /* NULL: to be absent */
        Domain domain;
        ValueKind kind;
        bool reboot;
} StateViewKnob;

typedef struct StateViewUnmovable {
        const char *id;
        const char *reason;
} StateViewUnmovable;

typedef struct StateView {
        uint64_t digest;                /* of state.json's bytes (0: built from a document) */
        const char *profile;            /* NULL: nothing applied */
        const char *profile_path;
        const char *hash;
        const char *applied_at;
        const char *source;             /* the journal's "source" as compact JSON text, NULL: none */
        bool transaction_open;
        StateViewKnob *applied;         /* in journal order */
        size_t n_applied;
        uint32_t *by_id;                /* indexes into applied, sorted by id */
        StateViewUnmovable *unmovable;  /* sorted by id */
        size_t n_unmovable;
} StateView;

/* Builds the view of a journal document (state_load()). Entries the backends could not use (no
 * id, unknown domain or kind) are left out, as every reader of the journal skips them. */
int state_view_new(json_t *state, StateView **ret);
/* Reads state.json. When its bytes hash to unless_digest (the digest of a view already held),
 * nothing is parsed: returns 0 and *ret = NULL. Else returns 1 and the new view. A file that is
 * not a journal is -EBADMSG, as for state_load(). */
int state_view_load(Root *root, uint64_t unless_digest, StateView **ret);
StateView *state_view_free(StateView *v);
DEFINE_TRIVIAL_CLEANUP_FUNC(StateView *, state_view_free);

/* The applied knob with this id, or NULL. */
const StateViewKnob *state_view_find(const StateView *v, const char *id);
/* Why the knob with this id is recorded as unmovable, or NULL if it is not. */
const char *state_view_unmovable(const StateView *v, const char *id);
/* The knob as the backends take it; it borrows the view's strings. */
Knob state_view_knob(const StateViewKnob *k);
