/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cpu-set.h"
#include "proc.h"
#include "sim-internal.h"
#include "strv.h"

/* The kernel's side of cgroupfs for the simulator (sim-kernel.h): cgroup v2 cpusets and v1
 * cpusets. */

static bool is_v2(Root *r, const char *hier) {
        return sim_exists(r, hier, "cgroup.controllers", NULL);
}

/* v1 cpuset files carry the "cpuset." prefix unless the hierarchy is mounted with noprefix. */
static const char *v1_prefix(Root *r, const char *hier) {
        return sim_exists(r, hier, "cpuset.cpus", NULL) ? "cpuset." : "";
}

static char *v1_file(Root *r, const char *hier, const char *key) {
        char *s;
        return asprintf(&s, "%s%s", v1_prefix(r, hier), key) < 0 ? NULL : s;
}

static bool v1_get_set(Root *r, const char *hier, const char *name, const char *key, CpuSet *ret) {
        _cleanup_free_ char *f = v1_file(r, hier, key);
        return f && sim_get_set(r, hier, name, f, ret);
}

/* Whether a controller list ("cpuset cpu io\n") has ctrl. */
static bool lists(const char *list, const char *ctrl) {
        size_t n = strlen(ctrl);
        for (const char *p = list ? strstr(list, ctrl) : NULL; p; p = strstr(p + n, ctrl))
                if ((p == list || p[-1] == ' ') && (p[n] == 0 || p[n] == ' ' || p[n] == '\n'))
                        return true;
        return false;
}

/* The cpuset files of the cgroup dir whose parent (parent) gives it the controller
 * (cpuset_css_alloc()): no CPUs or nodes of its own, the parent's effective ones. */
static int add_cpuset_files(Root *r, const char *parent, const char *dir) {
        _cleanup_free_ char *eff = sim_get(r, parent, "cpuset.cpus.effective", NULL),
                            *meff = sim_get(r, parent, "cpuset.mems.effective", NULL);
        int k = sim_put(r, dir, "cpuset.cpus", "\n", 0644);
        if (k >= 0)
                k = sim_put(r, dir, "cpuset.cpus.effective", eff ? eff : "\n", 0444);
        /* cpuset.cpus.exclusive came with the root's cpuset.cpus.isolated (6.7). */
        if (k >= 0 &&
            (sim_exists(r, parent, "cpuset.cpus.isolated", NULL) ||
             sim_exists(r, parent, "cpuset.cpus.exclusive", NULL))) {
                k = sim_put(r, dir, "cpuset.cpus.exclusive", "\n", 0644);
                if (k >= 0)
                        k = sim_put(r, dir, "cpuset.cpus.exclusive.effective", "\n", 0444);
        }
        if (k >= 0)
                k = sim_put(r, dir, "cpuset.cpus.partition", "member\n", 0644);
        if (k >= 0)
                k = sim_put(r, dir, "cpuset.mems", "\n", 0644);
        if (k >= 0)
                k = sim_put(r, dir, "cpuset.mems.effective", meff ? meff : "\n", 0444);
        return k;
}

/* The controller's files go with it (cgroup_apply_control_disable()). */
static int remove_cpuset_files(Root *r, const char *dir) {
        static const char * const files[] = { "cpuset.cpus",           "cpuset.cpus.effective",
                                              "cpuset.cpus.exclusive", "cpuset.cpus.exclusive.effective",
                                              "cpuset.cpus.partition", "cpuset.mems",
                                              "cpuset.mems.effective" };
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                _cleanup_free_ char *p = sim_path_join(dir, files[i], NULL);
                if (!p)
                        return -ENOMEM;
                int k = root_file_unlink(r, p);
                if (k < 0 && k != -ENOENT)
                        return k;
        }
        return 0;
}

static int mkdir_v2(Root *r, const char *hier, const char *dir) {
        _cleanup_free_ char *sub = sim_get(r, hier, "cgroup.subtree_control", NULL);
        struct {
                const char *file;
                mode_t mode;
                const char *text;
        } files[] = {
                { "cgroup.controllers", 0444, sub ? sub : "\n" },
                { "cgroup.events", 0444, "populated 0\nfrozen 0\n" },
                { "cgroup.freeze", 0644, "0\n" },
                { "cgroup.max.depth", 0644, "max\n" },
                { "cgroup.max.descendants", 0644, "max\n" },
                { "cgroup.procs", 0644, "" },
                { "cgroup.subtree_control", 0644, "\n" },
                { "cgroup.threads", 0644, "" },
                { "cgroup.type", 0644, "domain\n" },
        };

        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                int k = sim_put(r, dir, files[i].file, files[i].text, files[i].mode);
                if (k < 0)
                        return k;
        }
        if (!lists(sub, "cpuset"))
                return 0; /* the parent does not give its children the cpuset controller */
        return add_cpuset_files(r, hier, dir);
}

static int mkdir_v1(Root *r, const char *hier, const char *dir) {
        const char *pre = v1_prefix(r, hier);
        /* kernel/cgroup/cpuset.c legacy_files[], cgroup1_base_files[]; clone_children is 0, so a
         * new cpuset starts with no CPUs and no memory nodes. */
        static const struct {
                const char *file;
                bool cpuset;
                mode_t mode;
                const char *text;
        } files[] = {
                { "cgroup.clone_children", false, 0644, "0\n" },
                { "cgroup.procs", false, 0644, "" },
                { "cpu_exclusive", true, 0644, "0\n" },
                { "cpus", true, 0644, "\n" },
                { "effective_cpus", true, 0444, "\n" },
                { "effective_mems", true, 0444, "\n" },
                { "mem_exclusive", true, 0644, "0\n" },
                { "mem_hardwall", true, 0644, "0\n" },
                { "memory_migrate", true, 0644, "0\n" },
                { "memory_pressure", true, 0444, "0\n" },
                { "memory_spread_page", true, 0644, "0\n" },
                { "memory_spread_slab", true, 0644, "0\n" },
                { "mems", true, 0644, "\n" },
                { "sched_load_balance", true, 0644, "1\n" },
                { "sched_relax_domain_level", true, 0644, "-1\n" },
                { "notify_on_release", false, 0644, "0\n" },
                { "tasks", false, 0644, "" },
        };
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                _cleanup_free_ char *f = NULL;
                if (asprintf(&f, "%s%s", files[i].cpuset ? pre : "", files[i].file) < 0)
                        return -ENOMEM;
                int k = sim_put(r, dir, f, files[i].text, files[i].mode);
                if (k < 0)
                        return k;
        }
        return 0;
}

int sim_cgroup_mkdir(Root *r, const char *hier, const char *name) {
        _cleanup_free_ char *dir = sim_path_join(hier, name, NULL);
        if (!dir)
                return -ENOMEM;
        _cleanup_close_ int hfd = root_open(r, hier, O_RDONLY | O_DIRECTORY, 0);
        if (hfd < 0)
                return hfd;
        if (mkdirat(hfd, name, 0755) < 0)
                return -errno;
        int k = is_v2(r, hier) ? mkdir_v2(r, hier, dir) : mkdir_v1(r, hier, dir);
        if (k < 0)
                (void) sim_remove_tree(r, dir);
        return k;
}

/* v2: the CPUs a partition root claims: cpuset.cpus.exclusive when set, else cpuset.cpus. */
static void partition_cpus(Root *r, const char *hier, const char *name, CpuSet *ret) {
        CpuSet cpus = {}, excl = {};
        (void) sim_get_set(r, hier, name, "cpuset.cpus", &cpus);
        (void) sim_get_set(r, hier, name, "cpuset.cpus.exclusive", &excl);
        *ret = cpu_set_is_empty(&excl) ? cpus : excl;
}

/* "isolated", "root" or "member" from the first word of cpuset.cpus.partition, and whether the
 * kernel marked it invalid. */
static void partition_read(Root *r, const char *hier, const char *name, char mode[static 16], bool *ret_valid) {
        _cleanup_free_ char *t = sim_get(r, hier, name, "cpuset.cpus.partition");
        mode[0] = 0;
        if (t)
                (void) sscanf(t, "%15s", mode);
        *ret_valid = t && !strstr(t, "invalid");
}

/* The root's cpuset.cpus.isolated (6.7): the CPUs of every valid isolated partition. */
static void update_root_isolated(Root *r, const char *hier) {
        _cleanup_strv_free_ char **children = NULL;
        CpuSet iso = {};
        if (!sim_exists(r, hier, "cpuset.cpus.isolated", NULL) || sim_list_dirs(r, hier, NULL, &children) < 0)
                return;
        for (char **c = children; *c; c++) {
                char mode[16];
                bool valid;
                partition_read(r, hier, *c, mode, &valid);
                if (valid && streq(mode, "isolated")) {
                        CpuSet s;
                        partition_cpus(r, hier, *c, &s);
                        cpu_set_or(&iso, &s);
                }
        }
        (void) sim_put_list(r, hier, "cpuset.cpus.isolated", &iso, 0444);
}

/* What cpuset.cpus.partition reads after `mode` is written: the mode, or "<mode> invalid
 * (reason)" with the reasons of kernel/cgroup/cpuset.c perr_strings[], checked in the order
 * update_prstate() meets them. The exclusivity rule is 6.1's (no CPU of a sibling's cpuset.cpus
 * or cpuset.cpus.exclusive), the strictest of the kernels rtpart supports. */
static int partition_state(Root *r, const char *hier, const char *name, const char *mode, char **ret) {
        const char *reason = NULL;
        CpuSet want, parent = {};

        partition_cpus(r, hier, name, &want);
        (void) sim_get_set(r, hier, "cpuset.cpus.effective", NULL, &parent);
        if (cpu_set_is_empty(&want))
                reason = "cpuset.cpus and cpuset.cpus.exclusive are empty";
        else if (!cpu_set_is_subset(&want, &parent))
                reason = "Invalid cpu list in cpuset.cpus.exclusive";
        if (!reason) {
                _cleanup_strv_free_ char **sib = NULL;
                int k = sim_list_dirs(r, hier, NULL, &sib);
                if (k < 0)
                        return k;
                CpuSet left = parent;
                cpu_set_andnot(&left, &want);
                for (char **s = sib; *s && !reason; s++) {
                        if (streq(*s, name))
                                continue;
                        CpuSet c = {}, x = {};
                        (void) sim_get_set(r, hier, *s, "cpuset.cpus", &c);
                        (void) sim_get_set(r, hier, *s, "cpuset.cpus.exclusive", &x);
                        if (cpu_set_intersects(&want, &c) || cpu_set_intersects(&want, &x))
                                reason = "Cpu list in cpuset.cpus not exclusive";
                        char m[16];
                        bool valid;
                        partition_read(r, hier, *s, m, &valid);
                        if (valid && (streq(m, "root") || streq(m, "isolated"))) {
                                CpuSet p;
                                partition_cpus(r, hier, *s, &p);
                                cpu_set_andnot(&left, &p);
                        }
                }
                if (!reason && cpu_set_is_empty(&left))
                        reason = "Parent unable to distribute cpu downstream";
        }
        char *s;
        if (reason ? asprintf(&s, "%s invalid (%s)", mode, reason) < 0 : !(s = strdup(mode)))
                return -ENOMEM;
        *ret = s;
        return 0;
}

static int write_partition(Root *r, const char *hier, const char *name, const char *mode) {
        _cleanup_free_ char *state = NULL;
        int k = streq(mode, "member") ? ((state = strdup(mode)) ? 0 : -ENOMEM)
                                      : partition_state(r, hier, name, mode, &state);
        if (k < 0)
                return k;
        _cleanup_free_ char *dir = sim_path_join(hier, name, NULL);
        k = dir ? sim_putf(r, dir, "cpuset.cpus.partition", 0644, "%s\n", state) : -ENOMEM;
        if (k >= 0)
                update_root_isolated(r, hier);
        return k;
}

/* A partition root whose CPUs change is checked again, as update_cpumask() does. */
static int recheck_partition(Root *r, const char *hier, const char *name) {
        char mode[16];
        bool valid;
        partition_read(r, hier, name, mode, &valid);
        if (!streq(mode, "root") && !streq(mode, "isolated"))
                return 0;
        return write_partition(r, hier, name, mode);
}

/* Every cgroup directory of the hierarchy, the root ("") first. */
static int all_cgroups(Root *r, const char *hier, const char *rel, char ***list) {
        _cleanup_strv_free_ char **sub = NULL;
        _cleanup_free_ char *dir = sim_path_join(hier, rel, NULL);
        int k = dir ? strv_extend(list, rel) : -ENOMEM;
        if (k < 0)
                return k;
        k = sim_list_dirs(r, dir, NULL, &sub);
        if (k < 0)
                return k;
        for (char **s = sub; *s; s++) {
                _cleanup_free_ char *child = sim_path_join(rel, *s, NULL);
                k = child ? all_cgroups(r, hier, child, list) : -ENOMEM;
                if (k < 0)
                        return k;
        }
        return 0;
}

/* The cgroup whose `file` lists id; NULL if none. */
static int find_task(Root *r, const char *hier, const char *file, long id, char **ret) {
        _cleanup_strv_free_ char **l = NULL;
        int k = all_cgroups(r, hier, "", &l);
        if (k < 0)
                return k;
        for (char **c = l; *c; c++) {
                _cleanup_free_ char *dir = sim_path_join(hier, *c, NULL);
                SimIds ids = {};
                if (!dir || sim_get_ids(r, dir, file, &ids) < 0)
                        return -ENOMEM;
                bool has = sim_ids_has(&ids, id);
                sim_ids_done(&ids);
                if (has) {
                        *ret = strdup(*c);
                        return *ret ? 0 : -ENOMEM;
                }
        }
        *ret = NULL;
        return 0;
}

/* v1: cgroup.procs is the sorted set of the processes of the threads in tasks. */
static int v1_update_procs(Root *r, const char *dir) {
        _cleanup_(sim_ids_done) SimIds tasks = {}, procs = {};
        int k = sim_get_ids(r, dir, "tasks", &tasks);
        if (k < 0)
                return k;
        for (size_t i = 0; i < tasks.n; i++) {
                long tgid = tasks.v[i];
                unsigned flags;
                (void) sim_task_lookup(r, tasks.v[i], &tgid, &flags);
                k = sim_ids_add(&procs, tgid);
                if (k < 0)
                        return k;
        }
        return sim_put_ids(r, dir, "cgroup.procs", &procs);
}

/* The mount of the hierarchy hier (a cgroup directory) is in: the topmost directory above it that
 * still has `file` (a task moves from wherever in the hierarchy it is). */
static char *hierarchy_root(Root *r, const char *hier, const char *file) {
        char *top = strdup(hier);
        for (char *slash; top && (slash = strrchr(top, '/'));) {
                *slash = 0;
                if (!sim_exists(r, top, file, NULL)) {
                        *slash = '/';
                        break;
                }
        }
        return top;
}

/* Writing an id to tasks (v1) or cgroup.procs (v2): cgroup_procs_write_start() and
 * cpuset_can_attach() refuse threads the kernel pins (EINVAL) and, in v1, a cpuset without
 * CPUs or memory nodes (ENOSPC). */
static int attach(Root *r, const char *hier, const char *name, const char *file, const char *value) {
        bool v2 = is_v2(r, hier);
        char *end;
        long id = strtol(value, &end, 10);
        if (end == value || *end || id <= 0)
                return -EINVAL;
        long tgid;
        unsigned flags;
        int k = sim_task_lookup(r, id, &tgid, &flags);
        if (k < 0)
                return k;
        if (flags & PROC_PF_NO_SETAFFINITY)
                return -EINVAL;
        if (!v2 && name) {
                CpuSet cpus = {}, mems = {};
                (void) v1_get_set(r, hier, name, "cpus", &cpus);
                (void) v1_get_set(r, hier, name, "mems", &mems);
                if (cpu_set_is_empty(&cpus) || cpu_set_is_empty(&mems))
                        return -ENOSPC;
        }
        _cleanup_free_ char *src = NULL, *dst_dir = sim_path_join(hier, name, NULL),
                            *top = hierarchy_root(r, hier, file);
        if (!dst_dir || !top)
                return -ENOMEM;
        k = find_task(r, top, file, id, &src);
        if (k < 0)
                return k;
        _cleanup_free_ char *src_dir = src ? sim_path_join(top, src, NULL) : NULL;
        if (src_dir && streq(src_dir, dst_dir))
                return 0;
        _cleanup_(sim_ids_done) SimIds from = {}, to = {};
        if (src_dir) {
                k = sim_get_ids(r, src_dir, file, &from);
                if (k < 0)
                        return k;
                sim_ids_del(&from, id);
                k = sim_put_ids(r, src_dir, file, &from);
                if (k < 0)
                        return k;
        }
        k = sim_get_ids(r, dst_dir, file, &to);
        if (k >= 0)
                k = sim_ids_add(&to, id);
        if (k >= 0)
                k = sim_put_ids(r, dst_dir, file, &to);
        if (k < 0)
                return k;
        if (!v2) {
                if (src_dir) {
                        k = v1_update_procs(r, src_dir);
                        if (k < 0)
                                return k;
                }
                return v1_update_procs(r, dst_dir);
        }
        /* v2 moves the whole process: its threads follow in cgroup.threads. */
        _cleanup_free_ char *pattern = NULL;
        _cleanup_strv_free_ char **threads = NULL;
        if (asprintf(&pattern, "proc/%ld/task/[0-9]*", id) < 0)
                return -ENOMEM;
        k = root_glob(r, pattern, &threads);
        if (k < 0)
                return k;
        _cleanup_(sim_ids_done) SimIds tf = {}, tt = {};
        if (src_dir && (k = sim_get_ids(r, src_dir, "cgroup.threads", &tf)) < 0)
                return k;
        if ((k = sim_get_ids(r, dst_dir, "cgroup.threads", &tt)) < 0)
                return k;
        for (char **t = threads; *t; t++) {
                long tid = strtol(strrchr(*t, '/') + 1, NULL, 10);
                sim_ids_del(&tf, tid);
                if ((k = sim_ids_add(&tt, tid)) < 0)
                        return k;
        }
        if (src_dir && (k = sim_put_ids(r, src_dir, "cgroup.threads", &tf)) < 0)
                return k;
        return sim_put_ids(r, dst_dir, "cgroup.threads", &tt);
}

int sim_cgroup_rmdir(Root *r, const char *hier, const char *name) {
        _cleanup_free_ char *dir = sim_path_join(hier, name, NULL);
        _cleanup_strv_free_ char **children = NULL;
        _cleanup_(sim_ids_done) SimIds ids = {};
        bool v2 = is_v2(r, hier);
        int k;

        if (!dir)
                return -ENOMEM;
        if (!root_is_dir(r, dir))
                return -ENOENT;
        k = sim_get_ids(r, dir, v2 ? "cgroup.procs" : "tasks", &ids);
        if (k < 0)
                return k;
        k = sim_list_dirs(r, dir, NULL, &children);
        if (k < 0)
                return k;
        if (ids.n > 0 || children[0])
                return -EBUSY;
        k = sim_remove_tree(r, dir);
        if (k >= 0 && v2)
                update_root_isolated(r, hier);
        return k;
}

/* A change of dir's cgroup.subtree_control reaches its children (cgroup_apply_control()): their
 * cgroup.controllers is the new list, and the cpuset files come or go with "cpuset" in it. */
static int apply_control(Root *r, const char *dir, const char *before, const char *after) {
        _cleanup_strv_free_ char **children = NULL;
        int k = sim_list_dirs(r, dir, NULL, &children);
        if (k < 0)
                return k;
        bool was = lists(before, "cpuset"), is = lists(after, "cpuset");
        for (char **c = children; *c; c++) {
                _cleanup_free_ char *child = sim_path_join(dir, *c, NULL);
                if (!child)
                        return -ENOMEM;
                if (!sim_exists(r, child, "cgroup.controllers", NULL))
                        continue; /* not a cgroup */
                k = sim_put(r, child, "cgroup.controllers", after, 0444);
                if (k >= 0 && is && !was)
                        k = add_cpuset_files(r, dir, child);
                else if (k >= 0 && was && !is)
                        k = remove_cpuset_files(r, child);
                if (k < 0)
                        return k;
        }
        return 0;
}

/* cgroup_subtree_control_write(): a controller that is not in cgroup.controllers is ENOENT; one a
 * child still enables for its own children cannot be disabled (EBUSY), and a cgroup other than
 * the root that holds processes enables none (EBUSY, the no internal processes rule). */
static int check_subtree_change(Root *r, const char *dir, bool is_root, char **on, char **off) {
        _cleanup_strv_free_ char **children = NULL;
        _cleanup_free_ char *procs = sim_get(r, dir, "cgroup.procs", NULL);
        if (!is_root && on && on[0] && procs && *procs)
                return -EBUSY;
        int k = sim_list_dirs(r, dir, NULL, &children);
        if (k < 0)
                return k;
        for (char **c = children; *c; c++) {
                _cleanup_free_ char *sub = sim_get(r, dir, *c, "cgroup.subtree_control");
                for (char **o = off; o && *o; o++)
                        if (lists(sub, *o))
                                return -EBUSY;
        }
        return 0;
}

/* "+cpuset -io": the controllers in the order the kernel lists them (cgroup.controllers). */
static int write_subtree_control(Root *r, const char *dir, bool is_root, const char *value) {
        _cleanup_free_ char *avail = sim_get(r, dir, "cgroup.controllers", NULL),
                            *cur = sim_get(r, dir, "cgroup.subtree_control", NULL), *v = strdup(value);
        _cleanup_strv_free_ char **enable = NULL, **disable = NULL;
        char *save = NULL;
        int k;

        if (!v)
                return -ENOMEM;
        for (char *t = strtok_r(v, " \n", &save); t; t = strtok_r(NULL, " \n", &save)) {
                if ((t[0] != '+' && t[0] != '-') || !t[1])
                        return -EINVAL;
                if (!lists(avail, t + 1))
                        return -ENOENT; /* not available here */
                if ((k = strv_extend(t[0] == '+' ? &enable : &disable, t + 1)) < 0)
                        return k;
        }
        k = check_subtree_change(r, dir, is_root, enable, disable);
        if (k < 0)
                return k;
        StrBuf b = {};
        _cleanup_free_ char *order = avail ? strdup(avail) : NULL;
        for (char *t = order ? strtok_r(order, " \n", &save) : NULL; t; t = strtok_r(NULL, " \n", &save))
                if ((lists(cur, t) || strv_contains(enable, t)) && !strv_contains(disable, t))
                        strbuf_appendf(&b, "%s%s", b.len ? " " : "", t);
        strbuf_append(&b, "\n");
        _cleanup_free_ char *out = strbuf_steal(&b);
        if (!out)
                return -ENOMEM;
        k = sim_put(r, dir, "cgroup.subtree_control", out, 0644);
        return k < 0 ? k : apply_control(r, dir, cur, out);
}

static int write_v2(Root *r, const char *hier, const char *name, const char *dir, const char *file, const char *value) {
        CpuSet s = {}, parent = {};
        int k;

        if (streq(file, "cgroup.procs"))
                return attach(r, hier, name, file, value);
        if (streq(file, "cgroup.subtree_control"))
                return write_subtree_control(r, dir, !name, value);
        if (!name ||
            (!streq(file, "cpuset.cpus") && !streq(file, "cpuset.cpus.exclusive") && !streq(file, "cpuset.mems") &&
             !streq(file, "cpuset.cpus.partition")))
                return sim_putf(r, dir, file, 0644, "%s\n", value);
        if (!sim_exists(r, dir, file, NULL))
                return -ENOENT;

        if (streq(file, "cpuset.cpus.partition")) {
                if (!streq(value, "member") && !streq(value, "root") && !streq(value, "isolated"))
                        return -EINVAL;
                return write_partition(r, hier, name, value);
        }
        if (cpu_set_parse_list(value, &s, NULL) < 0)
                return -EINVAL;
        bool mems = streq(file, "cpuset.mems");
        (void) sim_get_set(r, hier, mems ? "cpuset.mems.effective" : "cpuset.cpus.effective", NULL, &parent);
        if (streq(file, "cpuset.cpus.exclusive")) {
                /* validate_change(): exclusive CPUs lie in the parent's and are no sibling's. */
                _cleanup_strv_free_ char **sib = NULL;
                if (!cpu_set_is_subset(&s, &parent))
                        return -EINVAL;
                k = sim_list_dirs(r, hier, NULL, &sib);
                if (k < 0)
                        return k;
                for (char **o = sib; *o; o++) {
                        CpuSet x = {};
                        if (!streq(*o, name) && sim_get_set(r, hier, *o, "cpuset.cpus.exclusive", &x) &&
                            cpu_set_intersects(&x, &s))
                                return -EINVAL;
                }
        }
        if (streq(file, "cpuset.cpus")) {
                /* validate_change() (6.1): a partition root's CPUs are exclusive; no sibling may claim them. */
                _cleanup_strv_free_ char **sib = NULL;
                k = sim_list_dirs(r, hier, NULL, &sib);
                if (k < 0)
                        return k;
                for (char **o = sib; *o; o++) {
                        char m[16];
                        bool valid;
                        CpuSet p;
                        if (streq(*o, name))
                                continue;
                        partition_read(r, hier, *o, m, &valid);
                        partition_cpus(r, hier, *o, &p);
                        if (valid && (streq(m, "root") || streq(m, "isolated")) && cpu_set_intersects(&p, &s))
                                return -EINVAL;
                }
        }
        k = sim_put_list(r, dir, file, &s, 0644);
        if (k < 0)
                return k;
        /* The effective set: what was asked within the parent's, or the parent's if nothing was. */
        CpuSet eff = s;
        cpu_set_and(&eff, &parent);
        if (cpu_set_is_empty(&s) && !streq(file, "cpuset.cpus.exclusive"))
                eff = parent;
        _cleanup_free_ char *eff_file = NULL;
        if (asprintf(&eff_file, "%s.effective", file) < 0)
                return -ENOMEM;
        if (sim_exists(r, dir, eff_file, NULL) && (k = sim_put_list(r, dir, eff_file, &eff, 0444)) < 0)
                return k;
        return mems ? 0 : recheck_partition(r, hier, name);
}

/* Whether a v1 cpuset or one below it holds a task. */
static bool v1_populated(Root *r, const char *dir) {
        _cleanup_free_ char *tasks = sim_get(r, dir, "tasks", NULL);
        _cleanup_strv_free_ char **children = NULL;
        if (tasks && *tasks)
                return true;
        if (sim_list_dirs(r, dir, NULL, &children) < 0)
                return false;
        for (char **c = children; *c; c++) {
                _cleanup_free_ char *sub = sim_path_join(dir, *c, NULL);
                if (sub && v1_populated(r, sub))
                        return true;
        }
        return false;
}

/* validate_change() on the legacy hierarchy: the cpusets below keep lying in this one's CPUs or
 * nodes (EBUSY), and one with tasks (there or below) keeps some (ENOSPC). */
static int v1_check_children(Root *r, const char *hier, const char *dir, const char *key, const CpuSet *s) {
        _cleanup_strv_free_ char **children = NULL;
        if (cpu_set_is_empty(s) && v1_populated(r, dir))
                return -ENOSPC;
        int k = sim_list_dirs(r, dir, NULL, &children);
        if (k < 0)
                return k;
        for (char **c = children; *c; c++) {
                CpuSet cs = {};
                _cleanup_free_ char *f = v1_file(r, hier, key);
                if (!f)
                        return -ENOMEM;
                if (sim_get_set(r, dir, *c, f, &cs) && !cpu_set_is_subset(&cs, s))
                        return -EBUSY;
        }
        return 0;
}

static int write_v1(Root *r, const char *hier, const char *name, const char *dir, const char *file, const char *value) {
        const char *pre = v1_prefix(r, hier);
        const char *key = startswith(file, pre) ? file + strlen(pre) : file;
        CpuSet s = {}, parent = {};
        int k;

        if (streq(file, "tasks") || streq(file, "cgroup.procs"))
                return attach(r, hier, name, "tasks", value);
        if (!name || (!streq(key, "cpus") && !streq(key, "mems") && !streq(key, "cpu_exclusive")))
                return sim_putf(r, dir, file, 0644, "%s\n", value);
        if (!sim_exists(r, dir, file, NULL))
                return -ENOENT;

        _cleanup_strv_free_ char **sib = NULL;
        k = sim_list_dirs(r, hier, NULL, &sib);
        if (k < 0)
                return k;
        if (streq(key, "cpu_exclusive")) {
                bool on = streq(value, "1");
                if (!on && !streq(value, "0"))
                        return -EINVAL;
                CpuSet mine = {};
                (void) v1_get_set(r, hier, name, "cpus", &mine);
                for (char **o = sib; on && *o; o++) {
                        CpuSet c = {};
                        if (!streq(*o, name) && v1_get_set(r, hier, *o, "cpus", &c) && cpu_set_intersects(&c, &mine))
                                return -EINVAL; /* validate_change(): exclusive siblings do not overlap */
                }
                return sim_putf(r, dir, file, 0644, "%s\n", on ? "1" : "0");
        }
        if (cpu_set_parse_list(value, &s, NULL) < 0)
                return -EINVAL;
        (void) v1_get_set(r, hier, NULL, key, &parent);
        if (!cpu_set_is_subset(&s, &parent))
                return -EINVAL; /* validate_change(): a cpuset's CPUs and nodes lie in its parent's */
        k = v1_check_children(r, hier, dir, key, &s);
        if (k < 0)
                return k;
        if (streq(key, "cpus")) {
                _cleanup_free_ char *excl_file = v1_file(r, hier, "cpu_exclusive"), *mine_excl = NULL;
                if (!excl_file)
                        return -ENOMEM;
                mine_excl = sim_get(r, dir, excl_file, NULL);
                bool mine = mine_excl && atoi(mine_excl) == 1;
                for (char **o = sib; *o; o++) {
                        if (streq(*o, name))
                                continue;
                        _cleanup_free_ char *e = sim_get(r, hier, *o, excl_file);
                        CpuSet c = {};
                        if ((mine || (e && atoi(e) == 1)) && v1_get_set(r, hier, *o, "cpus", &c) &&
                            cpu_set_intersects(&c, &s))
                                return -EINVAL;
                }
        }
        k = sim_put_list(r, dir, file, &s, 0644);
        if (k < 0)
                return k;
        _cleanup_free_ char *eff = v1_file(r, hier, streq(key, "cpus") ? "effective_cpus" : "effective_mems");
        if (!eff)
                return -ENOMEM;
        return sim_exists(r, dir, eff, NULL) ? sim_put_list(r, dir, eff, &s, 0444) : 0;
}

int sim_cgroup_write(Root *r, const char *hier, const char *name, const char *file, const char *value) {
        _cleanup_free_ char *dir = sim_path_join(hier, name, NULL);
        if (!dir)
                return -ENOMEM;
        if (!root_is_dir(r, dir))
                return -ENOENT;
        return is_v2(r, hier) ? write_v2(r, hier, name, dir, file, value) : write_v1(r, hier, name, dir, file, value);
}
