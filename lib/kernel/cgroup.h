/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The cgroup operations of the cpuset backend, one function per operation. Changes go through
 * the root's ops (root.h: mkdir/rmdir/write of a ROOT_FS_CGROUP object): on "/" system calls on
 * cgroupfs, v2 and v1 alike (errors carry the kernel's errno), on a tree
 * whatever that root's table does (plain files, or the simulator in tests).
 *
 * hier is the hierarchy's root-relative mount ("sys/fs/cgroup" for v2, "sys/fs/cgroup/cpuset"
 * for a v1 cpuset); name a cgroup directly below it, NULL for the hierarchy's root. Functions
 * return 0 or a negative errno as the kernel gave it. */

#include <stdbool.h>
#include <stddef.h>

#include "root.h"

/* cgroup v2 (cgroup.controllers in the hierarchy's root) rather than a v1 cpuset. */
bool cgroup_is_v2(Root *r, const char *hier);
bool cgroup_exists(Root *r, const char *hier, const char *name);
/* Creates the cgroup (its parent must exist). An existing one is fine. */
int cgroup_mkdir(Root *r, const char *hier, const char *name);
/* Writes value (without a newline) to the cgroup's control file. */
int cgroup_write_file(Root *r, const char *hier, const char *name, const char *file, const char *value);
/* Moves a task into the cgroup (name NULL: the root): a thread id through v1's tasks file, a
 * process through v2's cgroup.procs. */
int cgroup_move_task(Root *r, const char *hier, const char *name, long id);
/* The ids in the cgroup's tasks (v1) or cgroup.procs (v2) file. */
int cgroup_read_tasks(Root *r, const char *hier, const char *name, long **ret, size_t *ret_n);
/* Moves the cgroup's tasks to the root, then removes the cgroup. 0 if there is no such cgroup. */
int cgroup_rmdir(Root *r, const char *hier, const char *name);
