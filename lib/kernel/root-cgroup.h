/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The kernel's cgroup operations (root-kernel.c: mkdir_object, rmdir_object and write_object of a
 * ROOT_FS_CGROUP object, v1 cpuset and v2 alike) through libcgroup, loaded (dlopen) the first time
 * a command changes a cgroup, so that one that changes none does not map it. Only the kernel's
 * root "/" comes here: libcgroup knows the hierarchies from /proc/mounts and makes its paths from
 * their mount points, so it cannot address a cgroup under any other root (a --root tree keeps its
 * file operations, and so does the simulator).
 *
 * Each returns 0 or a negative errno: the kernel's own where libcgroup keeps it
 * (cgroup_get_last_errno()), so that the cpuset backend's kernel refusals (EINVAL of an
 * exclusive cpuset's overlap, EBUSY, ENOSPC) read as they did; -ELIBACC when libcgroup cannot be
 * loaded (root_cgroup_library_error() says why and what to do). Or ROOT_CGROUP_DIRECT: the
 * operation is not one libcgroup makes as rtpart asks it (why: beside each case in
 * root-cgroup.c), and the caller makes it with its own system call (mkdir(2), rmdir(2), one
 * write(2)). With RTPART_LIBCGROUP=0 in the environment every operation is direct. */

#include "root.h"

#define ROOT_CGROUP_DIRECT 1

int root_cgroup_mkdir(Root *r, const char *mount, const char *name);
int root_cgroup_rmdir(Root *r, const char *mount, const char *name);
int root_cgroup_write(Root *r, const char *mount, const char *name, const char *file, const char *value);

/* Why the last load of libcgroup failed, with what to do, or NULL. */
const char *root_cgroup_library_error(void);

/* Loads libcgroup from soname (the operations load LIBCGROUP_SONAME themselves): 0, or -ELIBACC
 * with the reason kept for root_cgroup_library_error(). */
int root_cgroup_library_load(const char *soname);

/* How many cgroup operations this process made through libcgroup, and how many directly. */
typedef struct RootCgroupCounts {
        unsigned library;
        unsigned direct;
} RootCgroupCounts;
RootCgroupCounts root_cgroup_counts(void);
