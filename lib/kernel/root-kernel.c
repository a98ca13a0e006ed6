/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "root-cgroup.h"
#include "root.h"
#include "systemd.h"
#include "task.h"

/* The kernel's ops (root.h): what rtpart asks of the running kernel, for the root "/" only. */

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

/* Kernel objects, cgroup v2 and v1 alike, and resctrl's groups. A cgroup's go through libcgroup
 * (root-cgroup.c) unless it answers ROOT_CGROUP_DIRECT; resctrl's, and those, are mkdir(2) and
 * rmdir(2) as on a tree (the kernel makes and removes the files; cgroup_rmdir() has moved the tasks
 * out first) and one write(2) of the value to the object's file, whose errno is the kernel's
 * answer to it. */
static int kernel_mkdir_object(Root *r, RootFs fs, const char *mount, const char *name) {
        int k = fs == ROOT_FS_CGROUP ? root_cgroup_mkdir(r, mount, name) : ROOT_CGROUP_DIRECT;
        return k == ROOT_CGROUP_DIRECT ? root_plain_tree_ops.mkdir_object(r, fs, mount, name) : k;
}

static int kernel_rmdir_object(Root *r, RootFs fs, const char *mount, const char *name) {
        int k = fs == ROOT_FS_CGROUP ? root_cgroup_rmdir(r, mount, name) : ROOT_CGROUP_DIRECT;
        return k == ROOT_CGROUP_DIRECT ? root_plain_tree_ops.rmdir_object(r, fs, mount, name) : k;
}

static int kernel_write_object(Root *r, RootFs fs, const char *mount, const char *name, const char *file,
                               const char *value) {
        int k = fs == ROOT_FS_CGROUP ? root_cgroup_write(r, mount, name, file, value) : ROOT_CGROUP_DIRECT;
        if (k != ROOT_CGROUP_DIRECT)
                return k;
        _cleanup_free_ char *p = object_path(mount, name, file);
        return p ? kernel_write_value(r, p, value) : -ENOMEM;
}

static int kernel_set_affinity(Root *r, int tid, const CpuSet *cpus) {
        return task_set_affinity(tid, cpus);
}

static int kernel_set_scheduler(Root *r, int tid, unsigned policy, unsigned priority) {
        return task_set_scheduler(tid, policy, priority);
}

static int kernel_pin_self(Root *r, const CpuSet *cpus) {
        return task_set_affinity(0, cpus);
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

static int kernel_try_restart_unit(Root *r, const char *unit) {
        return systemd_try_restart_unit(NULL, unit, NULL);
}

/* The child's standard output, read to its end. */
static int read_all(int fd, char **ret) {
        _cleanup_free_ char *text = NULL;
        size_t n = 0, cap = 0;
        for (;;) {
                if (n + 4096 > cap) {
                        char *t = realloc(text, cap = cap * 2 + 8192);
                        if (!t)
                                return -ENOMEM;
                        text = t;
                }
                ssize_t k = read(fd, text + n, cap - n - 1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                n += (size_t) k;
        }
        text[n] = 0;
        *ret = TAKE_PTR(text);
        return 0;
}

static int kernel_run_program(Root *r, char * const *argv, char **ret_output) {
        int pipefd[2];
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return -errno;
        pid_t pid = fork();
        if (pid < 0) {
                close(pipefd[0]);
                close(pipefd[1]);
                return -errno;
        }
        if (pid == 0) {
                (void) dup2(pipefd[1], STDOUT_FILENO);
                int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
                if (null >= 0)
                        (void) dup2(null, STDERR_FILENO);
                execvp(argv[0], argv);
                _exit(errno == ENOENT ? 127 : 126);
        }
        close(pipefd[1]);
        _cleanup_free_ char *text = NULL;
        int k = read_all(pipefd[0], &text);
        close(pipefd[0]);
        int status = 0;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
                return -ENOENT;
        if (k < 0)
                return k;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return -EPROTO;
        *ret_output = TAKE_PTR(text);
        return 0;
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
                ROOT_CAN_MOUNT | ROOT_CAN_WATCH_PROCESSES | ROOT_CAN_RESTART_UNITS | ROOT_CAN_RUN_PROGRAMS |
                ROOT_CAN_PIN_SELF,
        .write_value = kernel_write_value,
        .mkdir_object = kernel_mkdir_object,
        .rmdir_object = kernel_rmdir_object,
        .write_object = kernel_write_object,
        .set_affinity = kernel_set_affinity,
        .set_scheduler = kernel_set_scheduler,
        .pin_self = kernel_pin_self,
        .pm_qos_open = kernel_pm_qos_open,
        .update_bootloader = root_run_shell,
        .try_restart_unit = kernel_try_restart_unit,
        .run_program = kernel_run_program,
        .mount = kernel_mount,
        .umount = kernel_umount,
        ROOT_FILE_OPS,
};
