/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A profile made ready for a host, the way every command that works on one starts: the host's
 * topology (host_discover), the profile (profile_load, or a Profile already built from the
 * journal's document), its resolution against the host (profile_resolve), and the plan
 * (plan_build). rtpartctl and rtpartd run this pipeline alike; each says the errors in its own
 * words, from the step that failed. */

#include <errno.h>

#include "backend.h"
#include "host.h"
#include "profile.h"
#include "root.h"

typedef struct Prepared {
        Host *host;
        Profile *profile;
        Resolved *resolved;
        Plan *plan; /* NULL without PREPARE_PLAN, until prepare_plan() */
} Prepared;

void prepared_done(Prepared *p);

typedef enum PrepareFlags {
        PREPARE_PLAN = 1 << 0, /* build the plan too */
} PrepareFlags;

typedef enum PrepareStep {
        PREPARE_STEP_HOST,    /* host_discover() failed: -ENODEV when no CPU is online */
        PREPARE_STEP_PROFILE, /* the profile's fault (or it was not found, or not read): error says
                                 * where, from profile_load/profile_resolve/plan_build */
        PREPARE_STEP_PLAN,    /* plan_build() failed for another reason than the profile */
        _PREPARE_STEP_MAX,
        _PREPARE_STEP_INVALID = -EINVAL,
} PrepareStep;

typedef struct PrepareError {
        PrepareStep step;
        char *name;  /* the profile's name, once it was read (for messages) */
        Error error; /* code: the failing step's negative errno; for PREPARE_STEP_PROFILE, where in
                      * the profile (file, JSON pointer) and the fix */
} PrepareError;

void prepare_error_done(PrepareError *e);

/* The profile named (profile_load: a name in the profile directories, or a path) ready for the
 * root's host. Returns 0 and *ret, or the failing step's negative errno and *ret_error (which
 * the caller clears with prepare_error_done() either way). The profile is read before the host. */
int prepare_profile(Root *root, const char *name_or_path, PrepareFlags flags, Prepared *ret, PrepareError *ret_error);
/* The same for a profile already built (profile_from_document); profile is taken, also on failure. */
int prepare_profile_built(Root *root, Profile *profile, PrepareFlags flags, Prepared *ret, PrepareError *ret_error);
/* The plan of a profile prepared without PREPARE_PLAN (rtpartctl takes the journal's lock in
 * between: the plan reads what the run then changes). */
int prepare_plan(Root *root, Prepared *p, PrepareError *ret_error);
