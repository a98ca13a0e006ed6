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

/* openat2(2)'s resolve flags, for C library headers older than Linux 5.6 (root.c, root-batch.c). */
#ifndef RESOLVE_IN_ROOT
#define RESOLVE_IN_ROOT 0x10
#endif
#ifndef RESOLVE_BENEATH
#define RESOLVE_BENEATH 0x08
#endif
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

typedef struct RootOps RootOps;

/* One file of a batch read (root_read_many): rel below the batch's directory, read with one
 * read(2) of at most size - 1 bytes into the caller's buf, NUL-terminated. result is the number of
 * bytes read, or this file's own negative errno (the kernel's, from its open or its read). */
typedef struct RootReadItem {
        const char *rel;
        char *buf;
        size_t size; /* of buf, at least 2 */
        ssize_t result;
} RootReadItem;

/* One file of a batch write (root_write_many): value plus a newline, one write(2) to an existing
 * file, as root_write_value() does it. result is 0 or this file's own negative errno. */
typedef struct RootWriteItem {
        const char *rel;
        const char *value;
        int result;
} RootWriteItem;

typedef struct Root {
        int fd;
        char *path;      /* as given, for messages */
        char *real_path; /* realpath() of path, once root_canonicalize() needed it */
        bool is_host;    /* the real "/": only root.c reads it; others ask root_is_system()/root_can() */
        RootResolve resolve;
        const RootOps *ops;
        struct Root *state;      /* where the journal lives when not under this root (--state-dir) */
        struct RootCache *cache; /* root_cache_fill() */
} Root;

/* What a backend may ask of the kernel behind a root beyond reading and writing files. A backend
 * asks root_can() instead of where it runs; the answer is its root's ops table's. */
typedef enum RootCan {
        /* Thread ids read from the root's proc/ are this kernel's live tasks, and its CPUs are the
         * ones this process runs on: sched_setaffinity()/sched_setscheduler() reach them, and the
         * daemon may move tasks off isolated ones. */
        ROOT_CAN_SCHEDULE = 1u << 0,
        /* A systemd manager runs for this root and answers on the system bus (when the root also
         * has run/systemd/system): slices' AllowedCPUs=, restarting irqbalance. */
        ROOT_CAN_ASK_SYSTEMD = 1u << 1,
        /* The root's bootloader configuration is this system's: its update command (update-grub)
         * regenerates what the next boot reads. */
        ROOT_CAN_UPDATE_BOOTLOADER = 1u << 2,
        /* root_pm_qos_open() gives a PM QoS CPU latency request that lasts while its fd is open. */
        ROOT_CAN_HOLD_PM_QOS = 1u << 3,
        /* root_mount()/root_umount() mount a kernel filesystem (resctrl) at a path of the root. */
        ROOT_CAN_MOUNT = 1u << 4,
        /* The kernel's process events (the proc connector) are about the tasks in the root's proc/. */
        ROOT_CAN_WATCH_PROCESSES = 1u << 5,
        /* root_try_restart_unit() restarts a unit of the service manager that runs for this root
         * (where the root also has run/systemd/system). */
        ROOT_CAN_RESTART_UNITS = 1u << 6,
        /* root_run_program() runs a program (a measuring tool: cyclictest) on the root's host. */
        ROOT_CAN_RUN_PROGRAMS = 1u << 7,
        /* root_pin_self() pins this process (the daemon, to the root's housekeeping CPUs): the
         * kernel's CPUs are the ones it runs on; a simulator shows the pinning instead. */
        ROOT_CAN_PIN_SELF = 1u << 8,
} RootCan;

/* Which kernel filesystem holds an object made with root_mkdir_object(). */
typedef enum RootFs {
        ROOT_FS_CGROUP, /* a cgroup v2 hierarchy or a v1 cpuset one */
        ROOT_FS_RESCTRL,
        _ROOT_FS_MAX,
        _ROOT_FS_INVALID = -EINVAL,
} RootFs;

/* The one seam between rtpart and the kernel. lib/ has two tables: the kernel's, for "/" (system
 * calls on procfs, sysfs, cgroupfs and resctrl), and a plain directory tree's for any other --root
 * (a tree to read and write as files, nothing more: no capabilities). What a kernel does after a
 * write is simulated under tests/sim/ only, which replaces the tree's table at link time (see
 * root_tree_ops()). Every function returns 0 or a negative errno, the kernel's where it answered.
 *
 * Kernel objects: mount is the root-relative mount of the filesystem holding them (a cgroup
 * hierarchy, resctrl's mount point), name a directory directly below it (NULL in object_write:
 * the mount's own directory). */
struct RootOps {
        const char *name; /* "kernel", "tree", …: for debugging */
        unsigned can;     /* RootCan flags */
        /* One write(2) of value plus a newline to an existing file. */
        int (*write_value)(Root *r, const char *rel, const char *value);
        /* -EEXIST / -ENOENT as mkdir(2) / rmdir(2) give them; -EBUSY while an object is in use. */
        int (*mkdir_object)(Root *r, RootFs fs, const char *mount, const char *name);
        int (*rmdir_object)(Root *r, RootFs fs, const char *mount, const char *name);
        /* value without a newline, to mount/name/file; a task id to a cgroup's "tasks" or
         * "cgroup.procs" moves the task. */
        int (*write_object)(Root *r, RootFs fs, const char *mount, const char *name, const char *file,
                            const char *value);
        /* ROOT_CAN_SCHEDULE */
        int (*set_affinity)(Root *r, int tid, const CpuSet *cpus);
        int (*set_scheduler)(Root *r, int tid, unsigned policy, unsigned priority);
        /* ROOT_CAN_PIN_SELF: pins this process (the daemon, to the root's housekeeping CPUs). */
        int (*pin_self)(Root *r, const CpuSet *cpus);
        /* ROOT_CAN_HOLD_PM_QOS: an fd whose 4-byte writes (a native s32, µs) set this process's
         * request and whose close drops it; -ENOENT if the root has no dev/cpu_dma_latency. */
        int (*pm_qos_open)(Root *r);
        /* ROOT_CAN_UPDATE_BOOTLOADER: runs the shell command that regenerates the bootloader's
         * configuration; -EPROTO if it failed. */
        int (*update_bootloader)(Root *r, const char *command);
        /* ROOT_CAN_RESTART_UNITS: restarts the unit if it is running, as systemd's TryRestartUnit
         * (a daemon that reads its configuration only at start: irqbalance). */
        int (*try_restart_unit)(Root *r, const char *unit);
        /* ROOT_CAN_RUN_PROGRAMS: runs argv (argv[0] looked up in PATH), its standard output into
         * *ret_output (NUL-terminated), standard error discarded. -ENOENT when the program is not
         * installed, -EPROTO when it does not exit with status 0. */
        int (*run_program)(Root *r, char * const *argv, char **ret_output);
        /* ROOT_CAN_MOUNT */
        int (*mount)(Root *r, const char *rel, const char *fstype, const char *options);
        int (*umount)(Root *r, const char *rel);
        /* The files rtpart owns whole (configuration files, drop-ins, the journal) and their
         * directories. Every table has them (the root_file_* functions below do them with system
         * calls); a simulator may wrap them. */
        int (*replace_file)(Root *r, const char *rel, const char *data, size_t size, mode_t mode);
        int (*reserve_file)(Root *r, const char *rel, size_t size);
        int (*unlink_file)(Root *r, const char *rel);
        int (*make_dir)(Root *r, const char *rel, mode_t mode);
        int (*remove_dir)(Root *r, const char *rel);
        /* Batches (optional: NULL is root.c's loop over one file at a time). read_many opens every
         * rel below dirfd (an fd from root_open(), or -EBADF for the root itself) as root_openat()
         * does; write_many writes as write_value does, in order, every item whatever the one before
         * it answered. Both fill in every item's result and return 0, or a negative errno when the
         * batch as a whole could not run (then no result is meaningful). */
        int (*read_many)(Root *r, int dirfd, RootReadItem *items, size_t n);
        int (*write_many)(Root *r, RootWriteItem *items, size_t n);
};

/* The two tables of lib/. */
extern const RootOps root_kernel_ops;
extern const RootOps root_plain_tree_ops;
/* The table root_new() gives a root other than "/". lib/ defines it weak, returning
 * &root_plain_tree_ops; the simulator (tests/sim/, linked whole into the test programs and the
 * not-installed sim builds of rtpartctl and rtpartd) defines it strong. daemon/ and lib/ never
 * name the simulator: which table a tree gets is decided by what the program was linked with. */
const RootOps *root_tree_ops(void);

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

/* Many small files at once (see RootReadItem, RootWriteItem): through the root's ops, which may
 * hand them to the kernel together (io_uring on "/"). 0 or a negative errno for the batch as a
 * whole; each item's own outcome is in its result. */
int root_read_many(Root *r, int dirfd, RootReadItem *items, size_t n);
/* How many files a caller puts in one root_read_many(): what io_uring takes in one submission, and
 * few enough that a batch's buffers (a few hundred bytes to 1 KiB each) stay below malloc's mmap
 * threshold: they come from the heap and are used again by the next batch, where 256 1 KiB
 * buffers were a fresh mapping touched whole each time (rtpartd's peak resident memory). */
#define ROOT_BATCH 64U
int root_write_many(Root *r, RootWriteItem *items, size_t n);
/* For ops tables: the same, one file after the other with the single-file calls; and reads handed
 * to the kernel together where it can (io_uring), else root_read_each() (what root_read_many()
 * does for a table without read_many). */
int root_read_each(Root *r, int dirfd, RootReadItem *items, size_t n);
int root_read_batched(Root *r, int dirfd, RootReadItem *items, size_t n);
int root_write_each(Root *r, RootWriteItem *items, size_t n);

/* Reads the files rels (root-relative) together, in batches (root_read_many), and keeps what each
 * held, or its errno: until root_cache_drop(), root_read_file() (and the root_read_* built on it)
 * of one of them answers from what was kept, without a system call. Any write through this
 * root (root_write_value(), root_write_many(), root_write_object(), root_write_file_atomic(),
 * root_unlink()…) drops what was kept, so a read after a write is the kernel's. A file longer
 * than a batch's buffer is not kept. For a command that reads thousands of knob files once
 * (verify). */
int root_cache_fill(Root *r, char * const *rels, size_t n);
void root_cache_drop(Root *r);

/* What is left to read of fd, NUL-terminated; ret_size optional. Grows as needed (procfs sizes
 * are lies). */
int root_read_fd(int fd, char **ret, size_t *ret_size);
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

/* Connects a stream socket to the AF_UNIX socket rel of the root, found as root_open() finds a
 * file (a symlink on the way resolves inside the root): 0 and the connected fd (O_CLOEXEC), or a
 * negative errno: -ENOTSOCK when rel is no socket, connect(2)'s errno (-ECONNREFUSED when nobody
 * listens). */
int root_connect_unix(Root *r, const char *rel, int *ret_fd);

/* The root is this system's "/" (messages say "this host" rather than the root's path). */
bool root_is_system(Root *r);
static inline bool root_can(Root *r, RootCan what) {
        return (r->ops->can & what) == what;
}

/* Through the root's ops (see RootOps): writes value to an existing file (procfs, sysfs), one
 * write(2), the kernel's errno on refusal. */
int root_write_value(Root *r, const char *rel, const char *value);
int root_mkdir_object(Root *r, RootFs fs, const char *mount, const char *name);
int root_rmdir_object(Root *r, RootFs fs, const char *mount, const char *name);
int root_write_object(Root *r, RootFs fs, const char *mount, const char *name, const char *file, const char *value);
/* -EOPNOTSUPP where the root cannot (root_can()). */
int root_set_affinity(Root *r, int tid, const CpuSet *cpus);
static inline int root_pin_self(Root *r, const CpuSet *cpus) {
        return root_can(r, ROOT_CAN_PIN_SELF) ? r->ops->pin_self(r, cpus) : -EOPNOTSUPP;
}
int root_set_scheduler(Root *r, int tid, unsigned policy, unsigned priority);
int root_pm_qos_open(Root *r);
int root_update_bootloader(Root *r, const char *command);
static inline int root_try_restart_unit(Root *r, const char *unit) {
        return root_can(r, ROOT_CAN_RESTART_UNITS) ? r->ops->try_restart_unit(r, unit) : -EOPNOTSUPP;
}
int root_run_program(Root *r, char * const *argv, char **ret_output);
int root_mount(Root *r, const char *rel, const char *fstype, const char *options);
int root_umount(Root *r, const char *rel);

/* For ops tables: one write(2) of data to rel opened with O_WRONLY|O_NOCTTY|flags. */
int root_write_once(Root *r, const char *rel, int flags, const char *data);
/* Runs command with /bin/sh, RTPART_ROOT set to the root's path and output discarded; -EPROTO
 * unless it exits 0. */
int root_run_shell(Root *r, const char *command);
/* Through the root's ops: replaces a regular file atomically (a temporary beside it, fsync,
 * rename, fsync of the directory); its parent directories are made first. The temporary is
 * ".#BASE.PID.tmp", or ".#BASE.PID-XXXXXXXX.tmp" (random hex) where that name is taken: always a
 * regular file this process has just made (O_EXCL, O_NOFOLLOW, O_NONBLOCK), never a name that was
 * there before it (a FIFO, a symlink or a file another user planted in a directory they may
 * write), so the file rtpart leaves is its own. */
int root_write_file_atomic(Root *r, const char *rel, const char *data, size_t size, mode_t mode);
/* Through the root's ops: makes rel a file of size bytes with its blocks allocated
 * (posix_fallocate), so that unlinking it frees room for a write that must not fail for lack of
 * it. -ENOSPC (or the filesystem's quota errno) when there is no such room. */
int root_reserve_file(Root *r, const char *rel, size_t size);
/* Through the root's ops: unlink(2), rmdir(2). */
int root_unlink(Root *r, const char *rel);
int root_rmdir(Root *r, const char *rel);
/* For ops tables: what the ops of the same names do on any filesystem, with system calls. */
int root_file_replace(Root *r, const char *rel, const char *data, size_t size, mode_t mode);
/* root_file_replace() in its two halves, for a table that wraps each (the simulator counts both,
 * so a crash can fall between them): the temporary made, written and synced (_begin), then
 * renamed over the file and the directory synced (_commit). root_temp_done() removes a temporary
 * that was not renamed. */
typedef struct RootTemp {
        int dfd;    /* the directory; -EBADF: none */
        char *name; /* the temporary in it; NULL once renamed */
        char *base; /* the file it replaces */
} RootTemp;
int root_file_replace_begin(Root *r, const char *rel, const char *data, size_t size, mode_t mode, RootTemp *ret);
int root_file_replace_commit(RootTemp *t);
void root_temp_done(RootTemp *t);
int root_file_reserve(Root *r, const char *rel, size_t size);
int root_file_unlink(Root *r, const char *rel);
int root_file_mkdir(Root *r, const char *rel, mode_t mode);
int root_file_rmdir(Root *r, const char *rel);
#define ROOT_FILE_OPS \
        .replace_file = root_file_replace, .reserve_file = root_file_reserve, .unlink_file = root_file_unlink, \
        .make_dir = root_file_mkdir, .remove_dir = root_file_rmdir
/* Removes what root_write_file_atomic() of rel left behind when its process died between the
 * temporary and the rename: the temporaries beside rel (both names above), but this process's own.
 * rel may be a shell pattern ("boot/loader/entries/ *.conf", "*" for every file of a directory; its
 * directory part is globbed too). Callers hold the journal lock, so no other rtpart process is
 * writing one. Returns how many it removed; a missing directory is 0. */
int root_remove_temporaries(Root *r, const char *rel);
/* How many of those there are, removing none. */
int root_count_temporaries(Root *r, const char *rel);
/* rel and its missing parents, each made through the root's ops. */
int root_mkdir_p(Root *r, const char *rel, mode_t mode);
