/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The kernel's cgroup operations through libcgroup (root-cgroup.h). What libcgroup 2.0.2 does for
 * each call, and so why an operation goes through it or not:
 *
 * - cgroup_init() reads /proc/cgroups and /proc/mounts (and each cgroup2 mount's
 *   cgroup.controllers) into a table of one mount point per controller; it parses no
 *   configuration file (/etc/cgconfig.conf is cgroup_config_load_config()'s, never called here).
 *   Its cgroup names are relative to the controller's mount point, so an operation goes through
 *   it only where its cpuset controller is mounted at the hierarchy rtpart names: a v1 cpuset
 *   hierarchy, or a v2 one that has the cpuset controller. Any other hierarchy (v2 without
 *   cpuset, a second mount of the same hierarchy) is not one it can address: direct.
 * - Its default logger prints on standard output, which rtpartctl --json owns: a logger that
 *   drops every message is set before cgroup_init() (lib/ never prints).
 * - cgroup_create_cgroup() is mkdir -p (mode 0775, umask applied) of the cgroup's directory, an
 *   existing one taken for success; on v2 it also writes "+cpuset" to the parent's
 *   cgroup.subtree_control, which the cpuset backend has enabled before (its journalled
 *   cpuset/root/controller knob), so that write changes nothing.
 * - cgroup_modify_cgroup() opens each file O_RDWR and writes its value with one write(2) per line,
 *   without a newline (the kernel's cgroup files strip it either way), an empty line not at all;
 *   a write's errno is kept (ECGOTHER, cgroup_get_last_errno()). Every file rtpart writes is
 *   readable (O_RDWR on a file the kernel gives no read, cgroup.kill, would be EACCES).
 * - cgroup_attach_task_pid() writes the id to v1's "tasks" or v2's "cgroup.procs" (a domain
 *   cgroup) or "cgroup.threads" (a threaded one), with one fprintf + fflush: one write(2).
 * - cgroup_delete_cgroup_ext(CGFLAG_DELETE_EMPTY_ONLY) is rmdir(2) of the directory, as the
 *   seam's rmdir; without the flag it moves the tasks to the parent first.
 *
 * The ECG* codes become the kernel's errno where libcgroup kept it; where it dropped it (an open(2)
 * or mkdir(2) refused for another reason than EPERM: ECGROUPNOTALLOWED, ECGROUPVALUENOTEXIST) the
 * same operation is asked of the kernel directly, whose errno is then the answer. */
#include <dlfcn.h>
#include <libcgroup.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup.h"
#include "config.h"
#include "root-cgroup.h"

#define LIBCGROUP_FUNCTIONS(X) \
        X(cgroup_set_logger) \
        X(cgroup_init) \
        X(cgroup_get_subsys_mount_point) \
        X(cgroup_new_cgroup) \
        X(cgroup_add_controller) \
        X(cgroup_add_value_string) \
        X(cgroup_create_cgroup) \
        X(cgroup_modify_cgroup) \
        X(cgroup_attach_task_pid) \
        X(cgroup_delete_cgroup_ext) \
        X(cgroup_free) \
        X(cgroup_get_last_errno)
#define DECLARE_SYM(f) static __typeof__(f) *sym_##f;
LIBCGROUP_FUNCTIONS(DECLARE_SYM)
#undef DECLARE_SYM

/* libcgroup's buffer for a value (CG_CONTROL_VALUE_MAX, not in its headers): a longer one is
 * refused by cgroup_add_value_string(), which says so on standard error. */
#define LIBCGROUP_VALUE_MAX 4096

static bool loaded, initialized;
static char *load_error;
static RootCgroupCounts counts;

const char *root_cgroup_library_error(void) {
        return load_error;
}

RootCgroupCounts root_cgroup_counts(void) {
        return counts;
}

static void drop_message(void *userdata, int level, const char *fmt, va_list ap) {
}

int root_cgroup_library_load(const char *soname) {
        if (loaded)
                return 0;
        /* Kept for the life of the process: the pointers below stay valid. */
        void *dl = dlopen(soname, RTLD_NOW | RTLD_NODELETE);
        const char *why = dl ? NULL : dlerror() ?: "not found";
#define LOAD_SYM(f) \
        if (!why && !(sym_##f = (__typeof__(f) *) dlsym(dl, #f))) \
                why = dlerror() ?: #f " not found";
        LIBCGROUP_FUNCTIONS(LOAD_SYM)
#undef LOAD_SYM
        free(load_error);
        load_error = NULL;
        if (!why) {
                sym_cgroup_set_logger(drop_message, 0, NULL);
                loaded = true;
                return 0;
        }
        if (asprintf(&load_error,
                     "cgroups on this host are changed through libcgroup, and %s cannot be loaded (%s); install "
                     "libcgroup (Debian: libcgroup2), or set RTPART_LIBCGROUP=0 to write the cgroup files directly",
                     soname, why) < 0)
                load_error = NULL;
        if (dl)
                dlclose(dl);
        return -ELIBACC;
}

/* libcgroup's answer as a negative errno, or ROOT_CGROUP_DIRECT where it kept none. */
static int answer(int code) {
        switch (code) {
        case 0:
                return 0;
        case ECGOTHER: {
                int e = sym_cgroup_get_last_errno();
                return e > 0 ? -e : -EIO;
        }
        case ECGROUPNOTOWNER: /* open(2), fopen(3) or mkdir(2) said EPERM */
                return -EPERM;
        case ECGROUPNOTEXIST: /* fopen(3) of the tasks file said ENOENT */
                return -ENOENT;
        case ECGNONEMPTY:
                return -EBUSY;
        case ECGROUPNOTALLOWED:       /* open(2) or mkdir(2) refused, its errno dropped */
        case ECGROUPVALUENOTEXIST:    /* open(2) of the file refused, its errno dropped */
        case ECGROUPSUBSYSNOTMOUNTED: /* its table has no cpuset there (mounts changed since) */
        case ECGROUPNOTMOUNTED:       /* no cgroup mount in /proc/mounts, or v2's parent lacks +cpuset */
                return ROOT_CGROUP_DIRECT;
        default: /* the way rtpart calls it: a value too long, no memory */
                return -EIO;
        }
}

static bool mounted_at(const char *mount) {
        _cleanup_free_ char *mp = NULL;
        if (sym_cgroup_get_subsys_mount_point("cpuset", &mp) != 0 || !mp || mp[0] != '/')
                return false;
        size_t n = strlen(mount), m = strlen(mp + 1);
        while (n > 0 && mount[n - 1] == '/')
                n--;
        while (m > 0 && mp[m] == '/')
                m--;
        return n == m && strncmp(mp + 1, mount, n) == 0;
}

/* 1: libcgroup addresses the hierarchy mounted at mount (its cpuset controller's); 0: it does not
 * (RTPART_LIBCGROUP=0, or another hierarchy); or a negative errno. */
static int library_for(const char *mount) {
        static int off = -1;
        if (off < 0) {
                const char *e = secure_getenv("RTPART_LIBCGROUP");
                off = e && streq(e, "0");
        }
        if (off)
                return 0;
        int k = root_cgroup_library_load(LIBCGROUP_SONAME);
        if (k < 0)
                return k;
        if (initialized && mounted_at(mount))
                return 1;
        /* First use, or the mounts changed since (rtpartd runs for months): read them again. */
        k = answer(sym_cgroup_init());
        if (k != 0) /* ROOT_CGROUP_DIRECT: no cgroup hierarchy mounted at all */
                return k == ROOT_CGROUP_DIRECT ? 0 : k;
        initialized = true;
        return mounted_at(mount);
}

static void cgroup_freep(struct cgroup **cg) {
        if (*cg)
                sym_cgroup_free(cg);
}

/* The cgroup in libcgroup's terms: the name below the mount ("/" the hierarchy's root: an empty
 * name is read out of bounds by its path building), its cpuset controller. */
static int cgroup_of(const char *name, struct cgroup **ret, struct cgroup_controller **ret_controller) {
        _cleanup_(cgroup_freep) struct cgroup *cg = sym_cgroup_new_cgroup(name ?: "/");
        if (!cg)
                return -ENOMEM;
        struct cgroup_controller *c = sym_cgroup_add_controller(cg, "cpuset");
        if (!c)
                return -ENOMEM;
        *ret = TAKE_PTR(cg);
        if (ret_controller)
                *ret_controller = c;
        return 0;
}

static char *object_path(const char *mount, const char *name, const char *file) {
        char *s;
        return asprintf(&s, "%s%s%s%s%s", mount, name ? "/" : "", strempty(name), file ? "/" : "", strempty(file)) < 0
                ? NULL
                : s;
}

/* Counts the way an operation took and returns its answer. */
static int took(int k) {
        if (k == ROOT_CGROUP_DIRECT)
                counts.direct++;
        else
                counts.library++;
        return k;
}

/* The start of each operation: ROOT_CGROUP_DIRECT (counted) where libcgroup does not address the
 * hierarchy, a negative errno, or 0 with the cgroup in libcgroup's terms and its root-relative
 * path (ret_path optional). */
static int prepare(const char *mount, const char *name, struct cgroup **ret, struct cgroup_controller **ret_controller,
                   char **ret_path) {
        int k = library_for(mount);
        if (k <= 0)
                return k < 0 ? k : took(ROOT_CGROUP_DIRECT);
        _cleanup_free_ char *path = object_path(mount, name, NULL);
        if (!path)
                return -ENOMEM;
        k = cgroup_of(name, ret, ret_controller);
        if (k < 0)
                return k;
        if (ret_path)
                *ret_path = TAKE_PTR(path);
        return 0;
}

int root_cgroup_mkdir(Root *r, const char *mount, const char *name) {
        _cleanup_(cgroup_freep) struct cgroup *cg = NULL;
        _cleanup_free_ char *path = NULL;
        int k = prepare(mount, name, &cg, NULL, &path);
        if (k != 0)
                return k;
        /* mkdir(2)'s own answers, which libcgroup's mkdir -p does not give: it makes the missing
         * parents and takes an existing directory for success. */
        if (root_exists(r, path))
                return took(-EEXIST);
        char *slash = strrchr(path, '/');
        *slash = 0;
        bool parent = root_is_dir(r, path);
        *slash = '/';
        if (!parent)
                return took(-ENOENT);
        /* ignore_ownership: no chown/chmod pass, the files stay as the kernel made them. */
        return took(answer(sym_cgroup_create_cgroup(cg, 1)));
}

int root_cgroup_rmdir(Root *r, const char *mount, const char *name) {
        _cleanup_(cgroup_freep) struct cgroup *cg = NULL;
        _cleanup_free_ char *path = NULL;
        int k = prepare(mount, name, &cg, NULL, &path);
        if (k != 0)
                return k;
        /* rmdir(2)'s ENOENT, which libcgroup takes for success (the group is gone either way). */
        if (!root_exists(r, path))
                return took(-ENOENT);
        k = answer(sym_cgroup_delete_cgroup_ext(cg, CGFLAG_DELETE_EMPTY_ONLY));
        /* libcgroup 2.0.2 answers 0 when that rmdir(2) fails with EBUSY (cgroup_delete_cgroup_ext()
         * keeps ECGNONEMPTY only behind a first error of another kind): the directory still there
         * after a success is that EBUSY. */
        if (k == 0 && root_exists(r, path))
                k = -EBUSY;
        return took(k);
}

/* A task id as libcgroup takes it (pid_t), else -1. */
static pid_t parse_id(const char *value) {
        if (!value || !*value || strspn(value, "0123456789") != strlen(value) || strlen(value) > 9)
                return -1;
        return (pid_t) atoi(value);
}

/* Whether writing value to file is the move libcgroup's cgroup_attach_task_pid() makes, and of
 * which id: v1's "tasks" (a thread), or v2's "cgroup.procs" of a domain cgroup or the root.
 * libcgroup picks the file itself: on v1 "tasks" where rtpart may ask "cgroup.procs" (a whole
 * process), on v2 "cgroup.threads" in a threaded cgroup; those are direct. */
static pid_t task_move(Root *r, const char *mount, const char *name, const char *file, const char *value) {
        pid_t id = parse_id(value);
        if (id < 0 || (!streq(file, "tasks") && !streq(file, "cgroup.procs")))
                return -1;
        bool v2 = cgroup_is_v2(r, mount);
        if (v2 != streq(file, "cgroup.procs"))
                return -1;
        if (!v2 || !name)
                return id;
        _cleanup_free_ char *p = object_path(mount, name, "cgroup.type"), *type = NULL;
        if (!p || root_read_line(r, p, &type) < 0)
                return -1;
        return streq(type, "domain") || streq(type, "domain threaded") ? id : -1;
}

int root_cgroup_write(Root *r, const char *mount, const char *name, const char *file, const char *value) {
        /* One write(2) of exactly value, as the seam's write: a value of one line (libcgroup
         * writes each line with a write(2) of its own, and an empty one not at all), shorter than
         * its buffer. A partition's cpuset.cpus.partition ("isolated") is so one write. */
        if (!value || !*value || strchr(value, '\n') || strlen(value) >= LIBCGROUP_VALUE_MAX || strchr(file, '/'))
                return took(ROOT_CGROUP_DIRECT);
        _cleanup_(cgroup_freep) struct cgroup *cg = NULL;
        struct cgroup_controller *c;
        int k = prepare(mount, name, &cg, &c, NULL);
        if (k != 0)
                return k;
        pid_t id = task_move(r, mount, name, file, value);
        if (id < 0 && (streq(file, "tasks") || streq(file, "cgroup.procs") || streq(file, "cgroup.threads")))
                /* A task file libcgroup would not write as asked (task_move()). */
                return took(ROOT_CGROUP_DIRECT);
        if (id >= 0)
                return took(answer(sym_cgroup_attach_task_pid(cg, id)));
        k = sym_cgroup_add_value_string(c, file, value);
        if (k != 0)
                return answer(k);
        return took(answer(sym_cgroup_modify_cgroup(cg)));
}
