/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the cpuset backend's files share: cpuset.c (schema, read, write) and cpuset-plan.c. */

#include "backend.h"

/* cgroup v1: the housekeeping cpuset every movable task goes to, and the value of its tasks knob
 * once no user-space task is left in the root cpuset. */
#define NRT_CPUSET "rtpart-nrt"
#define NRT_MOVABLE "movable"

/* A file or cgroup that is not there. */
static inline bool cpuset_absent(int k) {
        return k == -ENOENT || k == -ENOTDIR;
}

/* Whether a cgroup.subtree_control line lists the controller. */
bool cpuset_controller_enabled(const char *list, const char *ctrl);
int cpuset_read(Root *root, const Knob *k, char **ret);
/* cgroup v1: the cpusets directly below dir (directories with a tasks file), sorted; none: an
 * empty list. */
int cpuset_v1_children(Root *root, const char *dir, char ***ret);
int cpuset_plan(PlanCtx *ctx);
