/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dlfcn.h>
#include <fcntl.h>
#include <libcgroup.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "config.h"
#include "root.h"
#include "task.h"

/* The kernel's ops (root.h): what rtpart asks of the running kernel, for the root "/" only. */

/* libcgroup is loaded the first time a v1 cpuset is changed, not at every start: cgroup v2 hosts
 * never need it, and it (with the libpthread it brings) costs ~100 KiB of resident memory in a
 * daemon that otherwise has nothing to do with it. */
#define LIBCGROUP_FUNCTIONS(X) \
        X(cgroup_init) \
        X(cgroup_get_last_errno) \
        X(cgroup_new_cgroup) \
        X(cgroup_add_controller) \
        X(cgroup_free) \
        X(cgroup_create_cgroup) \
        X(cgroup_set_value_string) \
        X(cgroup_modify_cgroup) \
        X(cgroup_attach_task_pid) \
        X(cgroup_delete_cgroup)
#define DECLARE_SYM(f) static __typeof__(f) *sym_##f;
LIBCGROUP_FUNCTIONS(DECLARE_SYM)

static int libcgroup_load(void) {
        static bool loaded = false;
        if (loaded)
                return 0;
        /* Kept for the life of the process: the pointers below stay valid. */
        void *dl = dlopen(LIBCGROUP_SONAME, RTLD_NOW | RTLD_NODELETE);
        if (!dl)
                return -EOPNOTSUPP; /* the cpuset backend says what is missing */
#define LOAD_SYM(f) \
        if (!(sym_##f = (__typeof__(f) *) dlsym(dl, #f))) { \
                dlclose(dl); \
                return -EOPNOTSUPP; \
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

/* A v1 cgroup hierarchy (no cgroup.controllers in its root) goes through libcgroup. */
static bool via_libcgroup(Root *r, RootFs fs, const char *mount) {
        return fs == ROOT_FS_CGROUP && !cgroup_is_v2(r, mount);
}

static char *object_path(const char *mount, const char *name, const char *file) {
        char *s;
        return asprintf(&s, "%s%s%s%s%s", mount, name ? "/" : "", strempty(name), file ? "/" : "", strempty(file)) < 0
                ? NULL
                : s;
}

static int kernel_write_value(Root *r, const char *rel, const char *value) {
        _cleanup_free_ char *data = NULL;
        /* A trailing newline, as echo writes it: procfs and sysfs take it, and the kernel's answer
         * to this very write is the errno we report. */
        if (asprintf(&data, "%s\n", value) < 0)
                return -ENOMEM;
        return root_write_once(r, rel, 0, data);
}

static int kernel_mkdir_object(Root *r, RootFs fs, const char *mount, const char *name) {
        _cleanup_(cg_freep) struct cgroup *cg = NULL;
        if (via_libcgroup(r, fs, mount)) {
                int k = cg_open(name, &cg, NULL);
                return k < 0 ? k : cg_errno(sym_cgroup_create_cgroup(cg, /* ignore_ownership= */ 0));
        }
        /* cgroup v2, resctrl: mkdir(2), as on a tree; the kernel makes the files. */
        return root_plain_tree_ops.mkdir_object(r, fs, mount, name);
}

static int kernel_rmdir_object(Root *r, RootFs fs, const char *mount, const char *name) {
        _cleanup_(cg_freep) struct cgroup *cg = NULL;
        if (via_libcgroup(r, fs, mount)) {
                int k = cg_open(name, &cg, NULL);
                return k < 0 ? k : cg_errno(sym_cgroup_delete_cgroup(cg, /* ignore_migration= */ 0));
        }
        return root_plain_tree_ops.rmdir_object(r, fs, mount, name);
}

static int kernel_write_object(Root *r, RootFs fs, const char *mount, const char *name, const char *file,
                               const char *value) {
        _cleanup_(cg_freep) struct cgroup *cg = NULL;
        struct cgroup_controller *ctrl;
        int k;

        if (via_libcgroup(r, fs, mount)) {
                if (streq(file, "tasks")) {
                        char *end;
                        errno = 0;
                        long id = strtol(value, &end, 10);
                        if (errno || end == value || *end || id <= 0)
                                return -EINVAL;
                        k = cg_open(name, &cg, NULL);
                        return k < 0 ? k : cg_errno(sym_cgroup_attach_task_pid(cg, (pid_t) id));
                }
                k = cg_open(name, &cg, &ctrl);
                if (k < 0)
                        return k;
                k = cg_errno(sym_cgroup_set_value_string(ctrl, file, value));
                return k < 0 ? k : cg_errno(sym_cgroup_modify_cgroup(cg));
        }
        _cleanup_free_ char *p = object_path(mount, name, file);
        return p ? kernel_write_value(r, p, value) : -ENOMEM;
}

static int kernel_set_affinity(Root *r, int tid, const CpuSet *cpus) {
        return task_set_affinity(tid, cpus);
}

static int kernel_set_scheduler(Root *r, int tid, unsigned policy, unsigned priority) {
        return task_set_scheduler(tid, policy, priority);
}

static int kernel_pm_qos_open(Root *r) {
        return root_open(r, "dev/cpu_dma_latency", O_WRONLY | O_NOCTTY, 0);
}

int root_run_shell(Root *r, const char *command) {
        pid_t pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                setenv("RTPART_ROOT", r->path, 1);
                int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
                if (null >= 0) {
                        dup2(null, STDOUT_FILENO);
                        dup2(null, STDERR_FILENO);
                }
                execl("/bin/sh", "sh", "-c", command, (char *) NULL);
                _exit(127);
        }
        int status;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EPROTO;
}

static int kernel_mount(Root *r, const char *rel, const char *fstype, const char *options) {
        _cleanup_free_ char *abs = NULL;
        if (asprintf(&abs, "/%s", rel) < 0)
                return -ENOMEM;
        return mount(fstype, abs, fstype, MS_NOSUID | MS_NODEV | MS_NOEXEC, options) < 0 ? -errno : 0;
}

static int kernel_umount(Root *r, const char *rel) {
        _cleanup_free_ char *abs = NULL;
        if (asprintf(&abs, "/%s", rel) < 0)
                return -ENOMEM;
        return umount2(abs, 0) < 0 ? -errno : 0;
}

const RootOps root_kernel_ops = {
        .name = "kernel",
        .can = ROOT_CAN_SCHEDULE | ROOT_CAN_ASK_SYSTEMD | ROOT_CAN_UPDATE_BOOTLOADER | ROOT_CAN_HOLD_PM_QOS |
                ROOT_CAN_MOUNT | ROOT_CAN_WATCH_PROCESSES,
        .write_value = kernel_write_value,
        .mkdir_object = kernel_mkdir_object,
        .rmdir_object = kernel_rmdir_object,
        .write_object = kernel_write_object,
        .set_affinity = kernel_set_affinity,
        .set_scheduler = kernel_set_scheduler,
        .pm_qos_open = kernel_pm_qos_open,
        .update_bootloader = root_run_shell,
        .mount = kernel_mount,
        .umount = kernel_umount,
        ROOT_FILE_OPS,
};
