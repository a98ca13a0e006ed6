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
 * Every write to the tree counts as one fault point, numbered from 1 in the order the process
 * makes them: a value written, a kernel object made, written or removed, a whole file replaced
 * (configuration files and the journal, also under --state-dir: two points, its temporary written
 * and its rename), a file reserved or unlinked, a directory made or removed, the bootloader
 * updated. Both hooks count the same points:
 *
 *   RTPART_TEST_CRASH_AFTER=N   the process kills itself (SIGKILL, as a crash would) right after
 *                               the Nth write (done or failed), so tests can prove recovery at
 *                               every step of a transaction.
 *   RTPART_TEST_FAIL_AT=K       the Kth write is not made and fails with RTPART_TEST_FAIL_ERRNO
 *                               (EIO, EPERM, ENOSPC or a number; EIO when unset); the others are
 *                               made as usual.
 *   RTPART_TEST_WRITE_LOG=FILE  a line "N OP PATH RESULT" is appended to FILE for every write, so
 *                               that a test knows how many points a run has and what each is.
 *   RTPART_BOOTLOADER_UPDATE=C  the root can update its bootloader, and the command C (run with
 *                               RTPART_ROOT set to the tree) stands in for update-grub.
 *   RTPART_TEST_UNIT_LOG=FILE   a line "try-restart UNIT" is appended to FILE for every unit the
 *                               process asks the root to restart (no write: not a fault point).
 *   RTPART_TEST_PIN_LOG=FILE    rtpartd pinning itself (no fault point: nothing of the tree is
 *                               written) appends the CPU list to FILE.
 *
 * Programs run (root_run_program()) are stand-ins, where the tree has them: sim-programs.c. */

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
        return root_file_replace(r, rel, text, n, st.st_mode & 07777); /* part of a write: not counted */
}

static unsigned writes = 0;

static unsigned env_unsigned(const char *name) {
        const char *e = getenv(name);
        return e && *e ? (unsigned) strtoul(e, NULL, 10) : 0;
}

static int fail_errno(void) {
        static const struct {
                const char *name;
                int error;
        } names[] = {
                { "EIO", EIO },     { "EPERM", EPERM },   { "ENOSPC", ENOSPC }, { "EACCES", EACCES },
                { "EROFS", EROFS }, { "EDQUOT", EDQUOT }, { "ENOMEM", ENOMEM }, { "EBUSY", EBUSY },
        };
        const char *e = getenv("RTPART_TEST_FAIL_ERRNO");
        if (!e || !*e)
                return EIO;
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (streq(e, names[i].name))
                        return names[i].error;
        int n = atoi(e);
        return n > 0 ? n : EIO;
}

/* A write is about to be made: counted, and failed here (a negative errno) at the point
 * RTPART_TEST_FAIL_AT names; 0 to make it. */
static int write_begin(void) {
        writes++;
        return writes == env_unsigned("RTPART_TEST_FAIL_AT") ? -fail_errno() : 0;
}

/* The write write_begin() counted returned k: logged, and the crash hook's point. */
static int write_end(const char *op, const char *rel, int k) {
        const char *log = getenv("RTPART_TEST_WRITE_LOG");
        if (log && *log) {
                _cleanup_close_ int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0644);
                if (fd >= 0)
                        (void) dprintf(fd, "%u %s %s %s\n", writes, op, rel && *rel ? rel : ".",
                                       k < 0 ? strerror(-k) : "ok");
        }
        if (writes == env_unsigned("RTPART_TEST_CRASH_AFTER"))
                (void) kill(getpid(), SIGKILL);
        return k;
}

/* Runs the write expr (an int) as one counted write named op, of rel. What the simulated kernel
 * writes while doing it (a resctrl group's files, mon_groups/) is part of it, not counted. */
static unsigned nested = 0;
#define COUNTED_WRITE(op, rel, expr) \
        ({ \
                int _k = nested > 0 ? 0 : write_begin(); \
                if (nested > 0) \
                        _k = (expr); \
                else { \
                        nested++; \
                        if (_k == 0) \
                                _k = (expr); \
                        nested--; \
                        _k = write_end(op, rel, _k); \
                } \
                _k; \
        })

/* Where the kernel shows the effect of a write differently from the bytes written, mirror it: a
 * selection file ("always [madvise] never", what was read of it in old) moves its brackets. NULL:
 * the value as written. */
static char *emulate_selection(char *old, const char *value) {
        if (!strchr(old, '[') || strchr(value, ' '))
                return NULL;
        StrBuf b = {};
        bool found = false;
        char *save = NULL;
        for (char *t = strtok_r(old, " \n", &save); t; t = strtok_r(NULL, " \n", &save)) {
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

/* A knob file of the tree takes the value as the kernel's would: afterwards it reads back exactly
 * the value and a newline (or the selection, emulate_selection()). The fewest calls a plain file
 * allows, since the benchmark times whole processes on such trees: open, fstat (a file linked
 * elsewhere too is copied first, sim_unshare_file()), pread of what it held, pwrite at 0 and, only
 * where the old content was longer, ftruncate. */
static int do_write_value(Root *r, const char *rel, const char *value) {
        _cleanup_close_ int fd = root_open(r, rel, O_RDWR | O_NOCTTY, 0);
        if (fd < 0)
                return fd;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
                int k = sim_unshare_file(r, rel);
                if (k < 0)
                        return k;
                close(fd);
                fd = root_open(r, rel, O_RDWR | O_NOCTTY, 0);
                if (fd < 0)
                        return fd;
        }
        char old[4096];
        ssize_t n_old = pread(fd, old, sizeof(old) - 1, 0);
        if (n_old < 0)
                return -errno;
        old[n_old] = 0;
        _cleanup_free_ char *data = emulate_selection(old, value);
        if (!data && asprintf(&data, "%s\n", value) < 0)
                return -ENOMEM;
        size_t n = strlen(data);
        ssize_t w = pwrite(fd, data, n, 0);
        if (w < 0)
                return -errno;
        if ((size_t) w != n)
                return -EIO;
        if ((size_t) st.st_size > n && ftruncate(fd, (off_t) n) < 0)
                return -errno;
        sim_tracefs_written(r, rel, value);
        return 0;
}

static int write_value(Root *r, const char *rel, const char *value) {
        return COUNTED_WRITE("write", rel, do_write_value(r, rel, value));
}

static int mkdir_object(Root *r, RootFs fs, const char *mount, const char *name) {
        return COUNTED_WRITE("mkdir-object", name,
                             fs == ROOT_FS_RESCTRL ? sim_resctrl_mkdir(r, mount, name)
                                                   : sim_cgroup_mkdir(r, mount, name));
}

static int rmdir_object(Root *r, RootFs fs, const char *mount, const char *name) {
        return COUNTED_WRITE("rmdir-object", name,
                             fs == ROOT_FS_RESCTRL ? sim_resctrl_rmdir(r, mount, name)
                                                   : sim_cgroup_rmdir(r, mount, name));
}

static int write_object(Root *r, RootFs fs, const char *mount, const char *name, const char *file, const char *value) {
        return COUNTED_WRITE("write-object", file,
                             fs == ROOT_FS_RESCTRL ? sim_resctrl_write(r, mount, name, file, value)
                                                   : sim_cgroup_write(r, mount, name, file, value));
}

/* Two points: the temporary made and written ("replace-temp"), then renamed over the file
 * ("replace"); a crash after the first leaves the temporary, as one between them on a real host
 * would, for the recovery to find. */
static int replace_file(Root *r, const char *rel, const char *data, size_t size, mode_t mode) {
        _cleanup_(root_temp_done) RootTemp t = { .dfd = -EBADF };
        int k = COUNTED_WRITE("replace-temp", rel, root_file_replace_begin(r, rel, data, size, mode, &t));
        if (k < 0)
                return k;
        return COUNTED_WRITE("replace", rel, root_file_replace_commit(&t));
}

static int reserve_file(Root *r, const char *rel, size_t size) {
        return COUNTED_WRITE("reserve", rel, root_file_reserve(r, rel, size));
}

static int unlink_file(Root *r, const char *rel) {
        return COUNTED_WRITE("unlink", rel, root_file_unlink(r, rel));
}

static int make_dir(Root *r, const char *rel, mode_t mode) {
        return COUNTED_WRITE("mkdir", rel, root_file_mkdir(r, rel, mode));
}

static int remove_dir(Root *r, const char *rel) {
        return COUNTED_WRITE("rmdir", rel, root_file_rmdir(r, rel));
}

/* The request itself is held by the cpu backend, which folds it into its read of the tree's
 * regular file (pm-qos.h); the fd only has to take the writes. */
static int pm_qos_open(Root *r) {
        if (!root_exists(r, "dev/cpu_dma_latency"))
                return -ENOENT;
        int fd = open("/dev/null", O_WRONLY | O_CLOEXEC | O_NOCTTY);
        return fd < 0 ? -errno : fd;
}

/* The daemon's CPUs are the machine's, not the tree's: the pinning is shown, not made. */
static int pin_self(Root *r, const CpuSet *cpus) {
        const char *log = getenv("RTPART_TEST_PIN_LOG");
        _cleanup_free_ char *list = cpu_set_format_list(cpus);
        if (!list)
                return -ENOMEM;
        if (log && *log) {
                _cleanup_close_ int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0644);
                if (fd < 0 || dprintf(fd, "%s\n", list) < 0)
                        return -errno;
        }
        return 0;
}

static int update_bootloader(Root *r, const char *command) {
        const char *stand_in = getenv("RTPART_BOOTLOADER_UPDATE");
        return COUNTED_WRITE("update-bootloader", "", root_run_shell(r, stand_in && *stand_in ? stand_in : command));
}

/* Nothing to restart behind a tree: the request is recorded (sim_restarted_units()), and logged. */
static char **restarted = NULL;

char * const *sim_restarted_units(void) {
        return restarted;
}

static int try_restart_unit(Root *r, const char *unit) {
        const char *log = getenv("RTPART_TEST_UNIT_LOG");
        if (log && *log) {
                _cleanup_close_ int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0644);
                if (fd >= 0)
                        (void) dprintf(fd, "try-restart %s\n", unit);
        }
        return strv_extend(&restarted, unit);
}

#define SIM_OPS \
        .write_value = write_value, .mkdir_object = mkdir_object, .rmdir_object = rmdir_object, \
        .write_object = write_object, .pm_qos_open = pm_qos_open, .pin_self = pin_self, \
        .update_bootloader = update_bootloader, .replace_file = replace_file, .reserve_file = reserve_file, \
        .unlink_file = unlink_file, .make_dir = make_dir, .remove_dir = remove_dir, \
        .try_restart_unit = try_restart_unit, .run_program = sim_run_program

/* No ROOT_CAN_SCHEDULE, _WATCH_PROCESSES, _ASK_SYSTEMD or _MOUNT: a tree's PIDs are nobody's
 * threads, and no systemd or mount table stands behind it. A unit restarted is recorded, and
 * rtpartd pinning itself shown (RTPART_TEST_PIN_LOG). */
const RootOps sim_root_ops = {
        .name = "simulator",
        .can = ROOT_CAN_HOLD_PM_QOS | ROOT_CAN_RESTART_UNITS | ROOT_CAN_RUN_PROGRAMS | ROOT_CAN_PIN_SELF,
        SIM_OPS,
};

static const RootOps sim_root_ops_bootloader = {
        .name = "simulator",
        .can = ROOT_CAN_HOLD_PM_QOS | ROOT_CAN_UPDATE_BOOTLOADER | ROOT_CAN_RESTART_UNITS | ROOT_CAN_RUN_PROGRAMS |
                ROOT_CAN_PIN_SELF,
        SIM_OPS,
};

const RootOps *root_tree_ops(void) {
        const char *e = getenv("RTPART_BOOTLOADER_UPDATE");
        return e && *e ? &sim_root_ops_bootloader : &sim_root_ops;
}
