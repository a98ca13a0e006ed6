/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The JSON documents of the commands: what `rtpartctl --json` prints, what rtpartd answers over
 * D-Bus and varlink, and what rtpartctl's text output is formatted from. Built here, once, for
 * both programs, so that the two ways of running a command cannot answer differently. The keys
 * are documented in rtpartctl(1), JSON OUTPUT. */

#include <jansson.h>

#include "backend.h"
#include "engine.h"
#include "profile.h"

/* list: an array of {name, summary, path, origin, overrides_system}. */
json_t *document_list(const ProfileInfo *l, size_t n);
/* plan: {profile, cpus, host, changes, unchanged, notes, summary}. */
json_t *document_plan(const Plan *plan, const Host *host);
/* apply, done: {ok: true, profile, changed, unchanged, unmovable, skipped, restored,
 * reboot_required, reboot_changes, reboot_knobs, recovered, notes}. */
json_t *document_apply(const Plan *plan, const EngineResult *er);
/* A list of knob ids (reboot_knobs, reboot_pending) as people read it: "11 boot arguments and 2
 * module parameters"; NULL on OOM. */
char *document_reboot_phrase(json_t *ids);
/* apply, failed (r: the engine's negative errno): {ok: false, error: {knob, path, errno, message},
 * rolled_back, rollback_incomplete, notes}. */
json_t *document_apply_failure(const EngineResult *er, int r);
/* revert (r: the engine's return): {ok, restored, failed, skipped, recovered, error, notes}. */
json_t *document_revert(const EngineResult *er, int r);
/* verify: {profile, in_sync, reboot_required, drift, reboot_pending, unmovable, checked,
 * transaction_open}. */
json_t *document_verify(const VerifyResult *v);
/* status: {profile, applied_at, knobs, drift (how many), drifted (the drift entries, as verify's
 * drift), reboot_required, reboot_pending, unmovable, originals, last_error, transaction_open}; j is
 * the journal. */
json_t *document_status(const VerifyResult *v, const Journal *j);
/* One drift entry: {knob, domain, expected, actual}. */
json_t *document_drift(const char *knob, Domain d, const char *expected, const char *actual);
json_t *document_strv(char * const *l);
