/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "cgroup.h"
#include "config.h"
#include "cpuset-internal.h"
#include "proc.h"
#include "root-cgroup.h"
#include "strv.h"
#include "systemd.h"

/* The "cpuset" section of a profile: partitions, and the slices confined to the rest. */
static const char * const partition_modes[] = { "isolated", "root", "member", NULL };
static const Schema partition_mode_schema = { SCHEMA_STRING, .choices = partition_modes };
static const SchemaField partition_fields[] = { { "name", &schema_string },
                                                { "cpus", &schema_cpus },
                                                { "mode", &partition_mode_schema },
                                                { "mems", &schema_string },
                                                {} };
static const Schema partition_schema = { SCHEMA_OBJECT, .fields = partition_fields };
static const Schema partitions_schema = { SCHEMA_ARRAY, .items = &partition_schema };
static const SchemaField cpuset_fields[] = {
        { "partitions", &partitions_schema }, { "confine", &schema_strings_array }, { "confine_cpus", &schema_cpus }, {}
};
static const Schema cpuset_schema = { SCHEMA_OBJECT, .fields = cpuset_fields };
static const SchemaField cpuset_section = { "cpuset", &cpuset_schema };

/* cpusets: the profile's "partitions" become cgroups whose CPUs nothing else may use, and the
 * "confine" cgroups (systemd's slices) are kept on the housekeeping CPUs. Knobs:
 *
 * cgroup v2 (partition roots, Documentation/admin-guide/cgroup-v2.rst):
 *   cpuset/<part>/cpus            <cg2>/<part>/cpuset.cpus            CPU list
 *   cpuset/<part>/cpus.exclusive  <cg2>/<part>/cpuset.cpus.exclusive  CPU list (kernels ≥ 6.7)
 *   cpuset/<part>/mems            <cg2>/<part>/cpuset.mems            node list, when given
 *   cpuset/<part>/partition       <cg2>/<part>/cpuset.cpus.partition  "isolated" | "root" | "member"
 *   cpuset/<slice>/cpus           <cg2>/<slice>/cpuset.cpus           CPU list (AllowedCPUs= under systemd)
 *   cpuset/root/controller        <cg2>/cgroup.subtree_control        "+cpuset" | "-cpuset" (without systemd)
 *
 * cgroup v1 (Documentation/admin-guide/cgroup-v1/cpusets.rst):
 *   cpuset/<part>/cpus, /mems, /cpu_exclusive ("1"), /sched_load_balance ("0" isolated, "1" root)
 *   cpuset/rtpart-nrt/cpus, /mems, /sched_load_balance   the housekeeping cpuset every task moves to
 *   cpuset/rtpart-nrt/tasks                              <v1>/rtpart-nrt/tasks: "movable" once no
 *                                                        user-space task is left in the root cpuset,
 *                                                        else "N user tasks in the root cpuset"
 *   cpuset/root/sched_load_balance                       <v1>/cpuset.sched_load_balance
 *
 * Knobs are listed in the order a writer applies them: CPUs before modes, the cgroup created by
 * the first knob that needs it. Writing any knob of a cgroup as absent (NULL, the original of a
 * cgroup rtpart created) removes the cgroup, its tasks moved to the root first; revert goes in
 * reverse order, so the mode goes first and takes the cgroup with it.
 *
 * Where systemd runs and owns the tree (ROOT_CAN_ASK_SYSTEMD and run/systemd/system), a confined
 * slice's CPUs are set with AllowedCPUs= over D-Bus (systemd.h), never by writing its cgroup.
 * Elsewhere the slice's cpuset.cpus is written directly as the stand-in for what systemd would
 * write there. Every cgroup change goes through the root's ops: see cgroup.h. */

/* Whether a cgroup.subtree_control line lists the controller. */
bool cpuset_controller_enabled(const char *list, const char *ctrl) {
        size_t n = strlen(ctrl);
        for (const char *p = list; p && (p = strstr(p, ctrl)); p += n)
                if ((p == list || p[-1] == ' ') && (p[n] == 0 || p[n] == ' ' || p[n] == '\n'))
                        return true;
        return false;
}

/* ---- read and write ---- */

int cpuset_v1_children(Root *root, const char *dir, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        DIR *d;
        int k = root_opendir(root, dir, &d);
        if (k < 0)
                return k;
        for (struct dirent *de; (de = readdir(d));) {
                _cleanup_free_ char *tasks = NULL;
                if (de->d_name[0] == '.' || asprintf(&tasks, "%s/%s/tasks", dir, de->d_name) < 0)
                        continue;
                if (root_exists(root, tasks) && (k = strv_extend(&l, de->d_name)) < 0)
                        break;
        }
        closedir(d);
        if (k < 0)
                return k;
        strv_sort(l);
        *ret = l ? TAKE_PTR(l) : calloc(1, sizeof(char *));
        return *ret ? 0 : -ENOMEM;
}

/* A knob's parts: "cpuset/<knob name>/<what>" with path "<hier>/<name>/<file>", or "<hier>/<file>"
 * for the hierarchy's root ("cpuset/root/…", name NULL). The cgroup's name is the knob's, except
 * for a partition where systemd owns the tree: its slice (systemd_partition_slice()). */
typedef struct CpusetKnob {
        char *hier;
        char *name; /* the cgroup directory */
        bool slice; /* a partition's slice, made by systemd */
        const char *what;
        const char *file;
} CpusetKnob;

static void cpuset_knob_done(CpusetKnob *c) {
        free(c->hier);
        free(c->name);
}

static int cpuset_knob_parse(const Knob *k, CpusetKnob *ret) {
        /* The knob's name is all but the last component: a v1 cpuset below another one
         * ("cpuset/machine/qemu-1/cpus") has a '/' in it. */
        const char *id = k->id + strlen("cpuset/"), *slash = strrchr(id, '/');
        const char *file = k->path ? strrchr(k->path, '/') : NULL;
        if (!startswith(k->id, "cpuset/") || !slash || !file)
                return -EINVAL;
        file++;
        _cleanup_free_ char *knob_name = strndup(id, (size_t) (slash - id));
        if (!knob_name)
                return -ENOMEM;
        bool is_root = streq(knob_name, "root");
        /* <hier>/<name>/<file>: the cgroup is the directory the file is in. */
        size_t dir_len = (size_t) (file - 1 - k->path);
        const char *name = NULL;
        if (!is_root) {
                name = memrchr(k->path, '/', dir_len);
                if (!name || name == k->path)
                        return -EINVAL;
                name++;
        }
        char *hier = strndup(k->path, is_root ? dir_len : (size_t) (name - 1 - k->path));
        char *dir = is_root ? NULL : strndup(name, (size_t) (file - 1 - name));
        if (!hier || (!is_root && !dir)) {
                free(hier);
                free(dir);
                return -ENOMEM;
        }
        const char *base = strrchr(knob_name, '/');
        *ret = (CpusetKnob) {
                .hier = hier,
                .name = dir,
                .slice = dir && !streq(dir, base ? base + 1 : knob_name),
                .what = slash + 1,
                .file = file,
        };
        return 0;
}

static bool is_nrt_tasks(const CpusetKnob *c) {
        return c->name && streq(c->name, NRT_CPUSET) && streq(c->what, "tasks");
}

/* PF_* flags of a thread, from its stat file (procfs lets a thread's id be opened directly; a
 * fake tree has it below its process's task/ directory). */
static int task_flags(Root *root, long tid, unsigned *ret) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        if (asprintf(&path, "proc/%ld/stat", tid) < 0)
                return -ENOMEM;
        if (root_read_file(root, path, &text, NULL) < 0) {
                _cleanup_strv_free_ char **m = NULL;
                free(path);
                if (asprintf(&path, "proc/[0-9]*/task/%ld/stat", tid) < 0)
                        return -ENOMEM;
                int k = root_glob(root, path, &m);
                if (k < 0)
                        return k;
                if (!m[0] || root_read_file(root, m[0], &text, NULL) < 0)
                        return -ESRCH;
        }
        ProcStat ps;
        int k = proc_stat_parse(text, &ps);
        if (k < 0)
                return k;
        *ret = ps.flags;
        proc_stat_done(&ps);
        return 0;
}

/* cpuset/rtpart-nrt/tasks: NULL while the housekeeping cpuset does not exist; "movable" once no
 * user-space task is left in the root cpuset; else how many are. Kernel threads do not count:
 * which of them the kernel lets move differs between versions (PF_NO_SETAFFINITY ones never,
 * kthreadd on newer kernels neither), and a value verify compares must not depend on that. */
static int read_nrt_tasks(Root *root, const CpusetKnob *c, char **ret) {
        _cleanup_free_ long *ids = NULL;
        size_t n, user = 0;

        if (!cgroup_exists(root, c->hier, c->name)) {
                *ret = NULL;
                return 0;
        }
        int k = cgroup_read_tasks(root, c->hier, NULL, &ids, &n);
        if (k < 0)
                return k;
        for (size_t i = 0; i < n; i++) {
                unsigned flags;
                if (task_flags(root, ids[i], &flags) >= 0 && !(flags & PROC_PF_KTHREAD))
                        user++;
        }
        if (user == 0)
                return (*ret = strdup(NRT_MOVABLE)) ? 0 : -ENOMEM;
        return asprintf(ret, "%zu user task%s in the root cpuset", user, user == 1 ? "" : "s") < 0 ? -ENOMEM : 0;
}

/* "movable": every task of the root cpuset that the kernel lets go moves into rtpart-nrt, in
 * passes until none is left to move (tasks fork meanwhile). Anything else (the original, or
 * NULL): every task of rtpart-nrt goes back to the root. */
static int write_nrt_tasks(Root *root, const CpusetKnob *c, const char *value, KnobResult *ret) {
        _cleanup_free_ long *ids = NULL;
        size_t n;
        int k;

        if (!value || !streq(value, NRT_MOVABLE)) {
                if (!cgroup_exists(root, c->hier, c->name))
                        return 0;
                k = cgroup_read_tasks(root, c->hier, c->name, &ids, &n);
                if (k < 0)
                        return k;
                for (size_t i = 0; i < n; i++) {
                        k = cgroup_move_task(root, c->hier, NULL, ids[i]);
                        if (k < 0 && k != -ESRCH) /* ESRCH: exited meanwhile */
                                return k;
                }
                return 0;
        }
        for (unsigned pass = 0; pass < 8; pass++) {
                size_t moved = 0;
                free(ids);
                ids = NULL;
                k = cgroup_read_tasks(root, c->hier, NULL, &ids, &n);
                if (k < 0)
                        return k;
                for (size_t i = 0; i < n; i++) {
                        k = cgroup_move_task(root, c->hier, c->name, ids[i]);
                        switch (k) {
                        case 0:
                                moved++;
                                break;
                        case -EINVAL: /* a thread the kernel pins (PF_NO_SETAFFINITY, kthreadd): stays */
                        case -ESRCH:  /* exited meanwhile */
                                break;
                        default:
                                knob_result_reason(ret, "moving task %ld into %s: %s", ids[i], c->name, strerror(-k));
                                return k;
                        }
                }
                if (moved == 0)
                        break;
        }
        return 0;
}

/* cgroup v2: the cpuset files of a child exist only while its parent enables the controller. */
static int enable_cpuset(Root *root, const char *hier) {
        _cleanup_free_ char *path = NULL, *cur = NULL;
        if (asprintf(&path, "%s/cgroup.subtree_control", hier) < 0)
                return -ENOMEM;
        int k = root_read_line(root, path, &cur);
        if (k < 0)
                return k;
        if (cpuset_controller_enabled(cur, "cpuset"))
                return 0;
        return cgroup_write_file(root, hier, NULL, "cgroup.subtree_control", "+cpuset");
}

/* systemd answers a property change before it writes the cgroup: wait, up to 5 s, until the
 * cgroup's file shows `value` (a CPU or node list; NULL: until the cgroup is gone). */
static int wait_for_systemd(Root *root, const CpusetKnob *c, const char *file, const char *value, KnobResult *ret) {
        _cleanup_free_ char *path = NULL;
        CpuSet want = {};
        if (asprintf(&path, "%s/%s/%s", c->hier, c->name, file) < 0)
                return -ENOMEM;
        if (value && cpu_set_parse_list(value, &want, NULL) < 0)
                return -EINVAL;
        for (unsigned i = 0; i < 2500; i++) {
                _cleanup_free_ char *got = NULL;
                CpuSet s;
                int k = root_read_line(root, path, &got);
                if (!value ? cpuset_absent(k) && !cgroup_exists(root, c->hier, c->name)
                           : k >= 0 && cpu_set_parse_list(got, &s, NULL) >= 0 && cpu_set_equal(&s, &want))
                        return 0;
                (void) usleep(2000);
        }
        knob_result_reason(ret, "systemd accepted the change of %s but its %s did not follow within 5 s", c->name,
                           file);
        return -ETIMEDOUT;
}

static int set_allowed_cpus(const CpusetKnob *c, const CpuSet *s, KnobResult *ret) {
        _cleanup_free_ char *err = NULL;
        int k = systemd_set_allowed_cpus(NULL, c->name, s, &err);
        if (k < 0)
                knob_result_reason(ret, "systemd refused AllowedCPUs= for %s: %s", c->name, err ? err : strerror(-k));
        return k;
}

/* A confined slice's CPUs through systemd: AllowedCPUs=, reset when the original was empty.
 * systemd does not write a reset into a running unit's cgroup (its cpuset.cpus keeps the old CPUs,
 * systemd issue 43846), so a reset first gives the slice every CPU the root has (no partition is
 * left by then: partitions are reverted first), and then empties AllowedCPUs=: the slice ends on
 * all CPUs, and systemd's setting is empty, as it was. */
static int write_allowed_cpus(Root *root, const CpusetKnob *c, const char *value, KnobResult *ret) {
        CpuSet s = {};
        int k;
        if (value && cpu_set_parse_list(value, &s, NULL) < 0)
                return -EINVAL;
        if (!cpu_set_is_empty(&s)) {
                k = set_allowed_cpus(c, &s, ret);
                return k < 0 ? k : wait_for_systemd(root, c, "cpuset.cpus", value, ret);
        }
        _cleanup_free_ char *eff = NULL, *list = NULL;
        CpuSet all;
        if (asprintf(&eff, "%s/cpuset.cpus.effective", c->hier) < 0)
                return -ENOMEM;
        if (root_read_cpu_list(root, eff, &all) >= 0 && !cpu_set_is_empty(&all)) {
                if (!(list = cpu_set_format_list(&all)))
                        return -ENOMEM;
                k = set_allowed_cpus(c, &all, ret);
                if (k >= 0)
                        k = wait_for_systemd(root, c, "cpuset.cpus", list, ret);
                if (k < 0)
                        return k;
        }
        return set_allowed_cpus(c, &s, ret);
}

static int check_partition(Root *root, const Knob *k, const char *value, KnobResult *ret);

/* Whether a cgroup or any below it holds a task: cgroup.events "populated 1". */
static bool cgroup_populated(Root *root, const CpusetKnob *c) {
        _cleanup_free_ char *text = NULL, *path = NULL;
        if (asprintf(&path, "%s/%s/cgroup.events", c->hier, c->name) < 0 || root_read_file(root, path, &text, NULL) < 0)
                return false;
        return strstr(text, "populated 1") != NULL;
}

/* A partition's slice where systemd owns the tree. systemd makes and removes it and writes its
 * CPUs and memory nodes (AllowedCPUs=, AllowedMemoryNodes=, for now only: rtpartd makes it again at
 * boot); rtpart writes only cpuset.cpus.partition (unless systemd has CPUSetPartition=) and
 * cpuset.cpus.exclusive, files systemd leaves alone. */
static int write_partition_slice(Root *root, const Knob *k, const CpusetKnob *c, const char *value, KnobResult *ret) {
        _cleanup_free_ char *err = NULL;
        bool exists = cgroup_exists(root, c->hier, c->name);
        CpuSet s = {};
        int r;

        if (!value) {
                if (!exists)
                        return 0;
                if (cgroup_populated(root, c)) {
                        /* Stopping the slice would stop every unit in it: the realtime work itself. */
                        knob_result_reason(ret,
                                           "%s still runs tasks; stop them or move them out of the slice first (rtpart "
                                           "does not stop them)",
                                           c->name);
                        return -EBUSY;
                }
                (void) cgroup_write_file(root, c->hier, c->name, "cpuset.cpus.partition", "member");
                r = systemd_stop_unit(NULL, c->name, &err);
                if (r < 0) {
                        knob_result_reason(ret, "systemd refused to stop %s: %s", c->name, err ? err : strerror(-r));
                        return r;
                }
                return wait_for_systemd(root, c, "cgroup.procs", NULL, ret);
        }

        if (streq(c->what, "cpus") || streq(c->what, "mems")) {
                bool cpus = streq(c->what, "cpus");
                if (cpu_set_parse_list(value, &s, NULL) < 0)
                        return -EINVAL;
                if (cpus && !exists) {
                        const char *id = k->id + strlen("cpuset/");
                        _cleanup_free_ char *desc = NULL;
                        if (asprintf(&desc, "rtpart cpuset partition %.*s", (int) strcspn(id, "/"), id) < 0)
                                return -ENOMEM;
                        r = systemd_start_slice(NULL, c->name, desc, &s, &err);
                } else
                        r = systemd_set_cpus(NULL, c->name, cpus ? "AllowedCPUs" : "AllowedMemoryNodes", &s,
                                             /* runtime= */ true, &err);
                if (r < 0) {
                        knob_result_reason(ret, "systemd refused %s %s for %s: %s", exists ? "to set" : "to start with",
                                           cpus ? "AllowedCPUs=" : "AllowedMemoryNodes=", c->name,
                                           err ? err : strerror(-r));
                        return r;
                }
                return wait_for_systemd(root, c, c->file, value, ret);
        }

        if (!exists) {
                knob_result_reason(ret, "%s does not exist: its CPUs come first", c->name);
                return -ENOENT;
        }
        if (streq(c->what, "partition") && systemd_set_partition(NULL, c->name, value, NULL) >= 0)
                return check_partition(root, k, value, ret);
        r = cgroup_write_file(root, c->hier, c->name, c->file, value);
        if (r >= 0 && streq(c->what, "partition"))
                r = check_partition(root, k, value, ret);
        return r;
}

/* The kernel takes any partition mode and reports trouble only when read:
 * "isolated invalid (Cpu list in cpuset.cpus not exclusive)". */
static int check_partition(Root *root, const Knob *k, const char *value, KnobResult *ret) {
        _cleanup_free_ char *got = NULL;
        int r = root_read_line(root, k->path, &got);
        if (r >= 0 && !streq(got, value)) {
                knob_result_reason(ret, "%s", got);
                r = -EINVAL;
        }
        return r;
}

/* cgroup v1 refuses (EINVAL) an exclusive cpuset that shares CPUs with a sibling, and CPUs an
 * exclusive sibling holds (validate_change()): the reason names the siblings in the way. */
static void v1_overlap_reason(Root *root, const CpusetKnob *c, const char *value, KnobResult *ret) {
        _cleanup_strv_free_ char **siblings = NULL;
        _cleanup_free_ char *mine_text = NULL, *path = NULL;
        const char *pre = startswith(c->file, "cpuset.") ? "cpuset." : "";
        CpuSet mine = {}, all = {};
        StrBuf who = {};

        if (streq(c->what, "cpus"))
                mine_text = strdup(value);
        else if (asprintf(&path, "%s/%s/%scpus", c->hier, c->name, pre) >= 0)
                (void) root_read_line(root, path, &mine_text);
        if (!mine_text || cpu_set_parse_list(mine_text, &mine, NULL) < 0 ||
            cpuset_v1_children(root, c->hier, &siblings) < 0)
                return;
        for (char **s = siblings; *s; s++) {
                _cleanup_free_ char *p = NULL, *text = NULL;
                CpuSet theirs;
                if (streq(*s, c->name) || asprintf(&p, "%s/%s/%scpus", c->hier, *s, pre) < 0 ||
                    root_read_line(root, p, &text) < 0 || cpu_set_parse_list(text, &theirs, NULL) < 0 ||
                    !cpu_set_intersects(&theirs, &mine))
                        continue;
                cpu_set_and(&theirs, &mine);
                cpu_set_or(&all, &theirs);
                strbuf_appendf(&who, "%s%s", who.len ? ", " : "", *s);
        }
        _cleanup_free_ char *names = strbuf_steal(&who), *list = cpu_set_format_list(&all);
        bool many = names && strchr(names, ',');
        if (names && *names)
                knob_result_reason(ret,
                                   "%s %s of %s %s also in the cpuset%s %s, and cgroup v1 lets no sibling share CPUs "
                                   "with an exclusive cpuset; take %s off %s, or make the partition \"member\"",
                                   cpu_set_count(&all) == 1 ? "CPU" : "CPUs", strempty(list), c->name,
                                   cpu_set_count(&all) == 1 ? "is" : "are", many ? "s" : "", names,
                                   cpu_set_count(&all) == 1 ? "it" : "them", many ? "them" : "it");
}

static int cpuset_write_value(Root *root, const Knob *k, const char *value, KnobResult *ret) {
        _cleanup_(cpuset_knob_done) CpusetKnob c = {};
        int r;

        r = cpuset_knob_parse(k, &c);
        if (r < 0)
                return r;
        if (!c.name)
                /* A file of the hierarchy's root (v1 sched_load_balance): always there. */
                return value ? cgroup_write_file(root, c.hier, NULL, c.file, value) : 0;

        bool v2 = cgroup_is_v2(root, c.hier);
        if (!v2 && is_nrt_tasks(&c))
                return write_nrt_tasks(root, &c, value, ret);
        if (v2 && c.slice && systemd_owns_cgroups(root))
                return write_partition_slice(root, k, &c, value, ret);
        if (v2 && streq(c.what, "cpus") && systemd_owns_cgroups(root) && systemd_is_unit_cgroup(c.name) &&
            cgroup_exists(root, c.hier, c.name))
                /* Never write into a cgroup systemd manages: it would overwrite it anyway. */
                return write_allowed_cpus(root, &c, value, ret);

        if (!value) {
                /* The cgroup did not exist before rtpart: remove it (the partition ends first). */
                if (!cgroup_exists(root, c.hier, c.name))
                        return 0;
                if (v2) {
                        _cleanup_free_ char *p = NULL;
                        if (asprintf(&p, "%s/%s/cpuset.cpus.partition", c.hier, c.name) < 0)
                                return -ENOMEM;
                        if (root_exists(root, p))
                                (void) cgroup_write_file(root, c.hier, c.name, "cpuset.cpus.partition", "member");
                }
                return cgroup_rmdir(root, c.hier, c.name);
        }

        bool created = false;
        if (!cgroup_exists(root, c.hier, c.name)) {
                if (v2) {
                        r = enable_cpuset(root, c.hier);
                        if (r < 0)
                                return r;
                }
                r = cgroup_mkdir(root, c.hier, c.name);
                if (r < 0)
                        return r;
                created = true;
        }
        r = cgroup_write_file(root, c.hier, c.name, c.file, value);
        if (r >= 0 && v2 && streq(c.what, "partition"))
                r = check_partition(root, k, value, ret);
        if (r == -EINVAL && !v2 && (streq(c.what, "cpu_exclusive") || streq(c.what, "cpus")))
                v1_overlap_reason(root, &c, value, ret);
        if (r < 0 && created)
                /* A refused write leaves nothing behind: not the cgroup it created either (the
                 * journal knows only of the write). */
                (void) cgroup_rmdir(root, c.hier, c.name);
        return r;
}

int cpuset_read(Root *root, const Knob *k, char **ret) {
        _cleanup_(cpuset_knob_done) CpusetKnob c = {};
        bool parsed = cpuset_knob_parse(k, &c) >= 0;
        if (parsed && is_nrt_tasks(&c) && !cgroup_is_v2(root, c.hier))
                return read_nrt_tasks(root, &c, ret);
        int r = knob_read_file(root, k, ret);
        if (r >= 0 && parsed && !c.name && streq(c.what, "controller")) {
                /* cpuset/root/controller: "+cpuset" or "-cpuset", as written to the file. */
                char *v = strdup(cpuset_controller_enabled(*ret, "cpuset") ? "+cpuset" : "-cpuset");
                free(*ret);
                *ret = v;
                return v ? 0 : -ENOMEM;
        }
        if (cpuset_absent(r)) {
                *ret = NULL;
                return 0;
        }
        return r;
}

static int cpuset_write(Root *root, const Knob *k, const char *value, const KnobKeep *keep, KnobResult *ret) {
        *ret = (KnobResult) {};
        int r = cpuset_write_value(root, k, value, ret);
        if (r == -ELIBACC && root_cgroup_library_error())
                knob_result_reason(ret, "%s", root_cgroup_library_error());
        return knob_result_finish(ret, r);
}

static char *cpuset_heading(json_t *host) {
        char *s;
        return asprintf(&s, "cpuset (cgroup %s%s)", strempty(json_string_value(json_object_get(host, "cgroup"))),
                        json_is_true(json_object_get(host, "systemd")) ? ", slices through systemd" : "") < 0
                ? NULL
                : s;
}

/* Partitions: named groups; "root" and the v1 housekeeping cpuset's name are taken. */
static int cpuset_check(const char *file, json_t *section, const char *pointer, Error *e) {
        static const char * const reserved[] = { "root", NRT_CPUSET, NULL };
        _cleanup_free_ char *p = json_pointer_append(pointer, "partitions");
        return p ? backend_check_named_groups(file, json_object_get(section, "partitions"), p, reserved, e) : -ENOMEM;
}

const Backend backend_cpuset = {
        .domain = DOMAIN_CPUSET,
        .name = "cpuset",
        .schema = &cpuset_section,
        .check = cpuset_check,
        .plan = cpuset_plan,
        .read = cpuset_read,
        .write = cpuset_write,
        .watch = knob_watch_file,
        .heading = cpuset_heading,
        .flags = BACKEND_HOTPLUG_MOVES,
};
