/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* tuned on the same host. tuned applies its active profile when it starts (and keeps it while it
 * runs); where that profile sets knobs an rtpart plan sets too, the two undo each other's writes.
 * What tuned has active is read through the root, as every file rtpart reads:
 *
 *   etc/tuned/active_profile       the profile(s) tuned applies ("a b": merged in order), empty
 *                                  after tuned-adm off
 *   etc/tuned/post_loaded_profile  one more, applied after them
 *   run/tuned/tuned.pid            tuned's process, while it runs (proc/PID names it "tuned")
 *
 * Which knobs tuned's profile sets is found by importing it (tuned-import.h) and planning it on
 * the same host: the knob ids both plans have. */

#include <stdbool.h>

#include "backend.h"
#include "host.h"
#include "root.h"
#include "tuned-import.h"

typedef struct TunedActive {
        char *profiles; /* blank-separated, post-loaded last; NULL: no profile set */
        int pid;        /* tuned's, 0: not running */
} TunedActive;

/* 0 and *ret (empty when tuned is not installed), or a negative errno (-ENOMEM). */
int tuned_active_read(Root *root, TunedActive *ret);
void tuned_active_done(TunedActive *t);

/* The environment tuned's profiles are evaluated in: the host's CPUs, rtpart's default split,
 * tuned's files under the root. userdata is the Root and the Host, kept by the caller. */
typedef struct TunedHost {
        Root *root;
        const Host *host;
} TunedHost;
TunedEnv tuned_env_of_host(TunedHost *th);

typedef struct TunedOverlap {
        TunedActive active;
        char **knobs;  /* ids of the plan's knobs that tuned's profile sets too, in plan order */
        char **values; /* what tuned's profile sets each to ("" for removed), alongside knobs */
        char *unknown; /* why tuned's knobs cannot be told (its profile did not import or plan), NULL */
} TunedOverlap;

/* Which of plan's knobs tuned's active profile sets too, on host (the plan's). 0 and *ret (with
 * no knobs when tuned has no active profile), or -ENOMEM. */
int tuned_overlap_find(Root *root, const Host *host, const Plan *plan, TunedOverlap *ret);
void tuned_overlap_done(TunedOverlap *o);
/* Says it in the plan: a note on each knob tuned sets too, and one for the plan, with the fix.
 * Nothing without an active tuned profile. */
int tuned_overlap_note(Plan *plan, const TunedOverlap *o);
/* Apply must not go on (without --force): tuned runs, and its profile sets knobs of the plan, or
 * which it sets cannot be told. */
bool tuned_overlap_conflicts(const TunedOverlap *o);
/* tuned_overlap_find() and tuned_overlap_note() at once, for a plan shown to the user. */
int tuned_overlap_mark(Root *root, const Host *host, Plan *plan);
