/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim-kernel.h"
#include "strv.h"

/* The simulator's root ops: a fake host tree with a simulated kernel behind it. lib/ gives every
 * root other than "/" the table root_tree_ops() returns; its definition here is strong and
 * replaces lib/'s weak one in every program linked with this library (linked whole, so that this
 * file is always in: nothing else in it is referenced by name). The environment is read here,
 * in test code, never in lib/:
 *
 *   RTPART_TEST_CRASH_AFTER=N   the process kills itself (SIGKILL, as a crash would) right after
 *                               the Nth change of the kernel's state (a value written, an object
 *                               made, written or removed), so tests can prove recovery at every
 *                               step of a transaction.
 *   RTPART_BOOTLOADER_UPDATE=C  the root can update its bootloader, and the command C (run with
 *                               RTPART_ROOT set to the tree) stands in for update-grub. */

int sim_unshare_file(Root *r, const char *rel) {
        struct stat st;
        if (root_stat(r, rel, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink <= 1)
                return 0;
        /* Copy, then rename over: the other links keep the old inode. */
        _cleanup_free_ char *text = NULL;
        size_t n;
        int k = root_read_file(r, rel, &text, &n);
        if (k < 0)
                return k;
        return root_write_file_atomic(r, rel, text, n, st.st_mode & 07777);
}

/* A change of the kernel's state is done: the crash hook counts it. */
static void changed(void) {
        static unsigned changes = 0;
        const char *e = getenv("RTPART_TEST_CRASH_AFTER");
        changes++;
        if (e && (unsigned) atoi(e) == changes)
                (void) kill(getpid(), SIGKILL);
}

/* Where the kernel shows the effect of a write differently from the bytes written, mirror it: a
 * selection file ("always [madvise] never") moves its brackets. NULL: the value as written. */
static char *emulate_selection(int fd, const char *value) {
        char buf[4096];
        ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
        if (n <= 0)
                return NULL;
        buf[n] = 0;
        if (!strchr(buf, '[') || strchr(value, ' '))
                return NULL;
        StrBuf b = {};
        bool found = false;
        char *save = NULL;
        for (char *t = strtok_r(buf, " \n", &save); t; t = strtok_r(NULL, " \n", &save)) {
                size_t len = strlen(t);
                if (t[0] == '[' && len > 1 && t[len - 1] == ']') {
                        t[len - 1] = 0;
                        t++;
                }
                bool sel = streq(t, value);
                found = found || sel;
                strbuf_appendf(&b, "%s%s%s%s", b.len ? " " : "", sel ? "[" : "", t, sel ? "]" : "");
        }
        strbuf_append(&b, "\n");
        char *out = strbuf_steal(&b);
        if (!found) {
                free(out);
                return NULL;
        }
        return out;
}

static int write_value(Root *r, const char *rel, const char *value) {
        int k = sim_unshare_file(r, rel);
        if (k < 0)
                return k;
        _cleanup_close_ int fd = root_open(r, rel, O_RDWR | O_NOCTTY, 0);
        if (fd < 0)
                return fd;
        _cleanup_free_ char *data = emulate_selection(fd, value);
        if (!data && asprintf(&data, "%s\n", value) < 0)
                return -ENOMEM;
        /* A plain file holds exactly the value, as the kernel's file reads back. */
        if (ftruncate(fd, 0) < 0)
                return -errno;
        size_t n = strlen(data);
        ssize_t w = write(fd, data, n); /* offset 0: just opened; pread did not move it */
        if (w < 0)
                return -errno;
        if ((size_t) w != n)
                return -EIO;
        sim_tracefs_written(r, rel, value);
        changed();
        return 0;
}

static int mkdir_object(Root *r, RootFs fs, const char *mount, const char *name) {
        int k = fs == ROOT_FS_RESCTRL ? sim_resctrl_mkdir(r, mount, name) : sim_cgroup_mkdir(r, mount, name);
        if (k >= 0)
                changed();
        return k;
}

static int rmdir_object(Root *r, RootFs fs, const char *mount, const char *name) {
        int k = fs == ROOT_FS_RESCTRL ? sim_resctrl_rmdir(r, mount, name) : sim_cgroup_rmdir(r, mount, name);
        if (k >= 0)
                changed();
        return k;
}

static int write_object(Root *r, RootFs fs, const char *mount, const char *name, const char *file, const char *value) {
        int k = fs == ROOT_FS_RESCTRL ? sim_resctrl_write(r, mount, name, file, value)
                                      : sim_cgroup_write(r, mount, name, file, value);
        if (k >= 0)
                changed();
        return k;
}

/* The request itself is held by the cpu backend, which folds it into its read of the tree's
 * regular file (pm-qos.h); the fd only has to take the writes. */
static int pm_qos_open(Root *r) {
        if (!root_exists(r, "dev/cpu_dma_latency"))
                return -ENOENT;
        int fd = open("/dev/null", O_WRONLY | O_CLOEXEC | O_NOCTTY);
        return fd < 0 ? -errno : fd;
}

static int update_bootloader(Root *r, const char *command) {
        const char *stand_in = getenv("RTPART_BOOTLOADER_UPDATE");
        return root_run_shell(r, stand_in && *stand_in ? stand_in : command);
}

#define SIM_OPS \
        .write_value = write_value, .mkdir_object = mkdir_object, .rmdir_object = rmdir_object, \
        .write_object = write_object, .pm_qos_open = pm_qos_open, .update_bootloader = update_bootloader

/* No ROOT_CAN_SCHEDULE, _WATCH_PROCESSES, _ASK_SYSTEMD or _MOUNT: a tree's PIDs are nobody's
 * threads, and no systemd or mount table stands behind it. */
const RootOps sim_root_ops = {
        .name = "simulator",
        .can = ROOT_CAN_HOLD_PM_QOS,
        SIM_OPS,
};

static const RootOps sim_root_ops_bootloader = {
        .name = "simulator",
        .can = ROOT_CAN_HOLD_PM_QOS | ROOT_CAN_UPDATE_BOOTLOADER,
        SIM_OPS,
};

const RootOps *root_tree_ops(void) {
        const char *e = getenv("RTPART_BOOTLOADER_UPDATE");
        return e && *e ? &sim_root_ops_bootloader : &sim_root_ops;
}
