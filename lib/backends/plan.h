/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The plan: a resolved profile turned into knobs, with the host's current value of each. Every
 * backend adds its domain's knobs (Backend.plan), in the order of the backend table. */

#include <stdbool.h>

#include "error.h"
#include "host.h"
#include "knob.h"
#include "profile.h"
#include "root.h"

typedef struct Plan {
        char *profile;
        CpuSet isolated, housekeeping;
        Knob *knobs;
        size_t n_knobs, cap_knobs;
        char **notes; /* host-level remarks ("resctrl not available: cat skipped") */
} Plan;

/* What a backend's plan verb sees. */
typedef struct PlanCtx {
        Plan *plan;
        const Resolved *resolved;
        const Host *host;
        Root *root;
        Error *error;
} PlanCtx;

/* Adds a knob; takes ownership of nothing (copies). current/desired may be NULL. */
int plan_add(PlanCtx *ctx, const char *id, ValueKind kind, const char *path, const char *current, const char *desired,
             bool reboot, Knob **ret);
int plan_note(PlanCtx *ctx, const char *fmt, ...) _printf_(2, 3);
/* A profile error at a JSON pointer of the resolved profile (the file is found from the pointer). */
int plan_fail(PlanCtx *ctx, const char *pointer, const char *fmt, ...) _printf_(3, 4);
/* The same at item i of an array ("/cat/groups", 2, "l3" → /cat/groups/2/l3; key may be NULL). */
int plan_fail_item(PlanCtx *ctx, const char *list, size_t i, const char *key, const char *fmt, ...) _printf_(5, 6);
/* A plan error at pointer unless value (NULL: nothing to check) is within the rules of kernel and
 * module parameter values (backend.h: bootarg_value_invalid()). kind is "kernel" or "module";
 * readers names what reads the file ("the kernel command line and …"). */
int plan_check_param_value(PlanCtx *ctx, const char *pointer, const char *kind, const char *readers, const char *value);

/* Builds the plan: every backend in table order. */
int plan_build(const Resolved *r, Root *root, Plan **ret, Error *ret_error);
Plan *plan_free(Plan *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(Plan *, plan_free);
size_t plan_count_changes(const Plan *p, size_t *ret_reboot);
