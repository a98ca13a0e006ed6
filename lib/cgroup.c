/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dlfcn.h>
#include <fcntl.h>
#include <libcgroup.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "config.h"
#include "fake-kernel.h"

/* ---- the kernel's explanation ---- */

static _Thread_local char status[512];

const char *cpuset_last_status(void) {
        return status[0] ? status : NULL;
}

void cpuset_status_clear(void) {
        status[0] = 0;
}

void cpuset_status_set(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        (void) vsnprintf(status, sizeof(status), fmt, ap);
        va_end(ap);
}

/* ---- how ---- */

typedef enum Via {
        VIA_SYSCALLS,   /* real host, cgroup v2 */
        VIA_LIBCGROUP,  /* real host, cgroup v1 */
        VIA_FAKE,       /* a fake tree */
} Via;

static Via via(Root *r, const char *hier) {
        if (!r->is_host)
                return VIA_FAKE;
        return cgroup_is_v2(r, hier) ? VIA_SYSCALLS : VIA_LIBCGROUP;
}

static char *cg_dir(const char *hier, const char *name) {
        char *s;
        return asprintf(&s, "%s%s%s", hier, name ? "/" : "", strempty(name)) < 0 ? NULL : s;
}

/* libcgroup is loaded the first time a v1 cpuset is changed, not at every start: cgroup v2 hosts
 * never need it, and it (with the libpthread it brings) costs ~100 KiB of resident memory in a
 * daemon that otherwise has nothing to do with it. */
#define LIBCGROUP_FUNCTIONS(X)                                                                      \
        X(cgroup_init) X(cgroup_get_last_errno) X(cgroup_new_cgroup) X(cgroup_add_controller)       \
        X(cgroup_free) X(cgroup_create_cgroup) X(cgroup_set_value_string) X(cgroup_modify_cgroup)   \
        X(cgroup_attach_task_pid) X(cgroup_delete_cgroup)
#define DECLARE_SYM(f) static __typeof__(f) *sym_##f;
LIBCGROUP_FUNCTIONS(DECLARE_SYM)

static int libcgroup_load(void) {
        static bool loaded = false;
        if (loaded)
                return 0;
        /* Kept for the life of the process: the pointers below stay valid. */
        void *dl = dlopen(LIBCGROUP_SONAME, RTLD_NOW | RTLD_NODELETE);
        if (!dl) {
                cpuset_status_set("cgroup v1 needs %s (libcgroup): %s", LIBCGROUP_SONAME, strempty(dlerror()));
                return -EOPNOTSUPP;
        }
#define LOAD_SYM(f)                                                                                 \
        if (!(sym_##f = (__typeof__(f) *) dlsym(dl, #f))) {                                         \
                cpuset_status_set("%s has no %s: %s", LIBCGROUP_SONAME, #f, strempty(dlerror()));   \
                dlclose(dl);                                                                        \
                return -EOPNOTSUPP;                                                                 \
        }
        LIBCGROUP_FUNCTIONS(LOAD_SYM)
#undef LOAD_SYM
        loaded = true;
        return 0;
}

/* libcgroup's answer as a negative errno. */
static int cg_errno(int k) {
        switch (k) {
        case 0:
                return 0;
        case ECGOTHER: {
                int e = sym_cgroup_get_last_errno();
                return e > 0 ? -e : -EIO;
        }
        case ECGROUPNOTEXIST:
        case ECGROUPVALUENOTEXIST:
                return -ENOENT;
        case ECGROUPNOTMOUNTED:
        case ECGROUPSUBSYSNOTMOUNTED:
                return -ENODEV;
        case ECGROUPNOTOWNER:
        case ECGROUPNOTALLOWED:
                return -EPERM;
        case ECGNONEMPTY:
                return -EBUSY;
        case ECGINVAL:
                return -EINVAL;
        default:
                return -EIO;
        }
}

/* A libcgroup handle on `name` in the cpuset hierarchy ("" is its root). */
static int cg_open(const char *name, struct cgroup **ret, struct cgroup_controller **ret_ctrl) {
        static bool initialized = false;
        if (!initialized) {
                int k = libcgroup_load();
                if (k < 0)
                        return k;
                k = cg_errno(sym_cgroup_init());
                if (k < 0)
                        return k;
                initialized = true;
        }
        struct cgroup *cg = sym_cgroup_new_cgroup(strempty(name));
        if (!cg)
                return -ENOMEM;
        struct cgroup_controller *ctrl = sym_cgroup_add_controller(cg, "cpuset");
        if (!ctrl) {
                sym_cgroup_free(&cg);
                return -ENOMEM;
        }
        *ret = cg;
        if (ret_ctrl)
                *ret_ctrl = ctrl;
        return 0;
}

static void cg_freep(struct cgroup **cg) {
        if (*cg)
                sym_cgroup_free(cg);
}

/* ---- operations ---- */

bool cgroup_is_v2(Root *r, const char *hier) {
        _cleanup_free_ char *p = NULL;
        return asprintf(&p, "%s/cgroup.controllers", hier) >= 0 && root_exists(r, p);
}

bool cgroup_exists(Root *r, const char *hier, const char *name) {
        _cleanup_free_ char *dir = cg_dir(hier, name);
        return dir && root_is_dir(r, dir);
}

int cgroup_mkdir(Root *r, const char *hier, const char *name) {
        _cleanup_(cg_freep) struct cgroup *cg = NULL;
        int k;

        if (cgroup_exists(r, hier, name))
                return 0;
        switch (via(r, hier)) {
        case VIA_SYSCALLS: {
                _cleanup_close_ int fd = root_open(r, hier, O_RDONLY | O_DIRECTORY, 0);
                if (fd < 0)
                        return fd;
                return mkdirat(fd, name, 0755) < 0 && errno != EEXIST ? -errno : 0;
        }
        case VIA_LIBCGROUP:
                k = cg_open(name, &cg, NULL);
                return k < 0 ? k : cg_errno(sym_cgroup_create_cgroup(cg, /* ignore_ownership= */ 0));
        case VIA_FAKE:
                return fake_cgroup_mkdir(r, hier, name);
        }
        return -EINVAL;
}

int cgroup_write_file(Root *r, const char *hier, const char *name, const char *file, const char *value) {
        _cleanup_(cg_freep) struct cgroup *cg = NULL;
        struct cgroup_controller *ctrl;
        int k;

        switch (via(r, hier)) {
        case VIA_SYSCALLS: {
                _cleanup_free_ char *dir = cg_dir(hier, name), *p = NULL;
                if (!dir || asprintf(&p, "%s/%s", dir, file) < 0)
                        return -ENOMEM;
                return root_write_value(r, p, value);
        }
        case VIA_LIBCGROUP:
                k = cg_open(name, &cg, &ctrl);
                if (k < 0)
                        return k;
                k = cg_errno(sym_cgroup_set_value_string(ctrl, file, value));
                return k < 0 ? k : cg_errno(sym_cgroup_modify_cgroup(cg));
        case VIA_FAKE:
                return fake_cgroup_write(r, hier, name, file, value);
        }
        return -EINVAL;
}

int cgroup_move_task(Root *r, const char *hier, const char *name, long id) {
        _cleanup_(cg_freep) struct cgroup *cg = NULL;
        char v[32];
        int k;

        snprintf(v, sizeof(v), "%ld", id);
        switch (via(r, hier)) {
        case VIA_SYSCALLS:
                return cgroup_write_file(r, hier, name, "cgroup.procs", v);
        case VIA_LIBCGROUP:
                k = cg_open(name, &cg, NULL);
                return k < 0 ? k : cg_errno(sym_cgroup_attach_task_pid(cg, (pid_t) id));
        case VIA_FAKE:
                return fake_cgroup_write(r, hier, name, cgroup_is_v2(r, hier) ? "cgroup.procs" : "tasks", v);
        }
        return -EINVAL;
}

int cgroup_read_tasks(Root *r, const char *hier, const char *name, long **ret, size_t *ret_n) {
        _cleanup_free_ char *dir = cg_dir(hier, name), *p = NULL, *text = NULL;
        _cleanup_free_ long *ids = NULL;
        size_t n = 0;

        if (!dir || asprintf(&p, "%s/%s", dir, cgroup_is_v2(r, hier) ? "cgroup.procs" : "tasks") < 0)
                return -ENOMEM;
        int k = root_read_file(r, p, &text, NULL);
        if (k < 0)
                return k;
        for (char *s = text; *s;) {
                char *end;
                long v = strtol(s, &end, 10);
                if (end == s) {
                        s++;
                        continue;
                }
                long *m = realloc(ids, (n + 1) * sizeof(long));
                if (!m)
                        return -ENOMEM;
                ids = m;
                ids[n++] = v;
                s = end;
        }
        *ret = TAKE_PTR(ids);
        *ret_n = n;
        return 0;
}

int cgroup_rmdir(Root *r, const char *hier, const char *name) {
        _cleanup_(cg_freep) struct cgroup *cg = NULL;
        _cleanup_free_ long *ids = NULL;
        size_t n = 0;
        int k;

        if (!name || !cgroup_exists(r, hier, name))
                return 0;
        /* rmdir(2) fails while tasks remain: they go to the root first (a task that exited
         * meanwhile is fine). */
        k = cgroup_read_tasks(r, hier, name, &ids, &n);
        if (k < 0 && k != -ENOENT)
                return k;
        for (size_t i = 0; i < n; i++) {
                k = cgroup_move_task(r, hier, NULL, ids[i]);
                if (k < 0 && k != -ESRCH)
                        return k;
        }
        switch (via(r, hier)) {
        case VIA_SYSCALLS: {
                _cleanup_close_ int fd = root_open(r, hier, O_RDONLY | O_DIRECTORY, 0);
                if (fd < 0)
                        return fd;
                return unlinkat(fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT ? -errno : 0;
        }
        case VIA_LIBCGROUP:
                k = cg_open(name, &cg, NULL);
                return k < 0 ? k : cg_errno(sym_cgroup_delete_cgroup(cg, /* ignore_migration= */ 0));
        case VIA_FAKE:
                return fake_cgroup_rmdir(r, hier, name);
        }
        return -EINVAL;
}
