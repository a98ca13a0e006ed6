/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The journal: var/lib/rtpart/state.json under the root. One JSON document, replaced atomically
 * (temp file, fsync, rename, fsync dir) on every change:
 *
 *   { "version": 1,
 *     "profile": NAME | null, "hash": "fnv1a64:…", "applied_at": "2026-12-03T05:00:00Z",
 *     "profile_path": FILE | null,     where it was read from, for people only
 *     "source": PROFILE | null,        the applied profile merged over its includes, before
 *                                      resolution (Profile.doc): what rtpartd applies again, never
 *                                      the file; "hash" is of its resolution. Journals written
 *                                      before it have none: rtpartd then loads NAME by name.
 *     "originals": { KNOB: { "domain", "kind", "path", "value" } },   first value rtpart saw
 *     "applied":   [ { "knob", "domain", "kind", "path", "desired", "reboot" } ],
 *     "unmovable": { KNOB: REASON },
 *     "transaction": null | { "op": "apply"|"revert", "profile", "started",
 *                             "steps": [ { "knob", "domain", "kind", "path", "before", "after" } ] },
 *     "last_error": null | { "knob", "path", "errno", "message", "at" } }
 */

#include <jansson.h>
#include <stdint.h>

#include "backend.h"
#include "root.h"

#define STATE_DIR "var/lib/rtpart"

/* The journal's directory: var/lib/rtpart under the root, or the --state-dir root. */
Root *state_root(Root *root, const char **ret_dir);

/* Reads the journal; a missing file is a fresh, empty state. A file that is not a journal is
 * -EBADMSG (never silently replaced: it holds the originals). */
int state_load(Root *root, json_t **ret);
/* The two halves of state_load(): the file's bytes (NULL when there is no journal yet), and the
 * document they make (a fresh, empty state for NULL). */
int state_read(Root *root, char **ret_text, size_t *ret_size);
int state_parse(const char *text, json_t **ret);
int state_save(Root *root, json_t *state);

/* A knob description stored in the journal (domain, kind, path) → a Knob for the backends. The
 * returned knob borrows the strings of the JSON object. */
int state_entry_knob(json_t *entry, const char *id, Knob *ret);
json_t *state_entry_new(const Knob *k, const char *value_key, const char *value);

char *state_now_iso8601(void);
/* FNV-1a over n bytes. */
uint64_t state_digest(const void *p, size_t n);
/* Content hash of a JSON document (stable: keys sorted). */
char *state_hash(const json_t *doc);
