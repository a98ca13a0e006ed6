/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The sysroot: every path rtpart touches is relative to one root directory ("/" on a real host,
 * a fake tree in tests). Paths given to these functions never start with '/'; symlinks inside the
 * tree resolve within it (openat2 RESOLVE_IN_ROOT where the kernel has it). */

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "cpu-set.h"
#include "macro.h"

/* How a fake tree's paths are resolved. Both stay inside the root: a ".." stops at it, a symlink
 * resolves against it (an absolute one from the root), and a path that cannot be opened so fails
 * with the kernel's errno for that one file; nothing falls back to an unconfined open. */
typedef enum RootResolve {
        ROOT_RESOLVE_KERNEL,    /* openat2 RESOLVE_IN_ROOT; becomes USERSPACE on ENOSYS (< 5.6) */
        ROOT_RESOLVE_USERSPACE, /* a walk component by component with O_PATH|O_NOFOLLOW */
        _ROOT_RESOLVE_MAX,
        _ROOT_RESOLVE_INVALID = -EINVAL,
} RootResolve;

typedef struct Root {
        int fd;
        char *path;     /* as given, for messages */
        bool is_host;   /* the real "/" */
        RootResolve resolve;
        struct Root *state; /* where the journal lives when not under this root (--state-dir) */
} Root;

int root_new(const char *path, Root **ret);
/* Same, with the resolution chosen (tests reach the user-space walk on any kernel). */
int root_new_full(const char *path, RootResolve resolve, Root **ret);
Root *root_free(Root *r);
/* Keeps the journal (state.json, lock) in dir instead of var/lib/rtpart under the root. */
int root_set_state_dir(Root *r, const char *dir);
DEFINE_TRIVIAL_CLEANUP_FUNC(Root *, root_free);

/* Returns an O_CLOEXEC fd or negative errno. */
int root_open(Root *r, const char *rel, int flags, mode_t mode);
int root_openf(Root *r, int flags, const char *fmt, ...) _printf_(3, 4);
int root_opendir(Root *r, const char *rel, DIR **ret);
/* Opens rel below a directory fd obtained from root_open (for loops over thousands of files);
 * stays below dirfd (RESOLVE_BENEATH): a ".." or symlink climbing above it is -EXDEV, and the
 * caller resolves from the root instead. */
int root_openat(Root *r, int dirfd, const char *rel, int flags);
int root_stat(Root *r, const char *rel, struct stat *ret);
bool root_exists(Root *r, const char *rel);
bool root_is_dir(Root *r, const char *rel);

/* Whole file, NUL-terminated; ret_size optional. Grows as needed (procfs sizes are lies). */
int root_read_file(Root *r, const char *rel, char **ret, size_t *ret_size);
/* First line without the trailing newline and surrounding whitespace. */
int root_read_line(Root *r, const char *rel, char **ret);
int root_read_linef(Root *r, char **ret, const char *fmt, ...) _printf_(3, 4);
int root_read_uint(Root *r, const char *rel, unsigned *ret);
int root_read_cpu_list(Root *r, const char *rel, CpuSet *ret);
int root_read_cpu_mask(Root *r, const char *rel, CpuSet *ret);

/* Expands shell wildcards in a root-relative path ("sys/devices/virtual/workqueue/ * /cpumask");
 * results are root-relative, sorted. No match is an empty list, not an error. */
int root_glob(Root *r, const char *pattern, char ***ret);
/* The canonical root-relative path of rel (symlinks resolved inside the root). */
int root_canonicalize(Root *r, const char *rel, char **ret);

/* For messages: the path as the user would see it ("/proc/cmdline", or "ROOT/proc/cmdline"). */
char *root_display_path(Root *r, const char *rel);

/* Writes value to an existing file (procfs, sysfs, cgroupfs): one write(2), O_TRUNC so that plain
 * files in fake trees hold exactly the value. Returns the kernel's errno on refusal. */
int root_write_value(Root *r, const char *rel, const char *value);
/* In a fake tree, gives rel an inode of its own if it shares one (a hard link), so that a write
 * changes this path only. No-op on the real root. */
int root_unshare_file(Root *r, const char *rel);
/* Replaces a regular file atomically: temp file, fsync, rename, fsync of the directory. */
int root_write_file_atomic(Root *r, const char *rel, const char *data, size_t size, mode_t mode);
int root_unlink(Root *r, const char *rel);
int root_mkdir_p(Root *r, const char *rel, mode_t mode);
