/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cpu-set.h"
#include "proc.h"
#include "sim-kernel.h"
#include "strv.h"

/* See sim-kernel.h. Only the simulator's root ops (sim-root.c) call into this file. */

/* ---- files of the tree ---- */

/* "a/b/c", leaving out NULL and empty parts. */
static char *path_join(const char *a, const char *b, const char *c) {
        StrBuf s = {};
        const char *parts[] = { a, b, c };
        for (size_t i = 0; i < ELEMENTSOF(parts); i++)
                if (parts[i] && *parts[i])
                        strbuf_appendf(&s, "%s%s", s.len ? "/" : "", parts[i]);
        return strbuf_steal(&s);
}

/* The whole file, or NULL if it cannot be read. */
static char *get(Root *r, const char *a, const char *b, const char *c) {
        _cleanup_free_ char *p = path_join(a, b, c);
        char *t = NULL;
        if (!p || root_read_file(r, p, &t, NULL) < 0)
                return NULL;
        return t;
}

static bool get_set(Root *r, const char *a, const char *b, const char *c, CpuSet *ret) {
        _cleanup_free_ char *t = get(r, a, b, c);
        return t && cpu_set_parse_list(t, ret, NULL) >= 0;
}

static bool exists(Root *r, const char *a, const char *b, const char *c) {
        _cleanup_free_ char *p = path_join(a, b, c);
        return p && root_exists(r, p);
}

/* Replaces a file's content (creating it with `mode`); an existing file keeps its mode. */
static int put(Root *r, const char *dir, const char *file, const char *text, mode_t mode) {
        _cleanup_free_ char *p = path_join(dir, file, NULL);
        if (!p)
                return -ENOMEM;
        int u = sim_unshare_file(r, p);
        if (u < 0)
                return u;
        _cleanup_close_ int fd = root_open(r, p, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode);
        if (fd == -EACCES) {
                /* a read-only file this kernel made before, and a user without CAP_DAC_OVERRIDE
                 * (the tests as non-root): the kernel writes its own files all the same */
                int k = root_unlink(r, p);
                if (k < 0)
                        return k;
                fd = root_open(r, p, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode);
        }
        if (fd < 0)
                return fd;
        size_t n = strlen(text);
        for (size_t done = 0; done < n;) {
                ssize_t k = write(fd, text + done, n - done);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                done += (size_t) k;
        }
        return 0;
}

_printf_(5, 6) static int putf(Root *r, const char *dir, const char *file, mode_t mode, const char *fmt, ...) {
        _cleanup_free_ char *t = NULL;
        va_list ap;
        va_start(ap, fmt);
        int n = vasprintf(&t, fmt, ap);
        va_end(ap);
        return n < 0 ? -ENOMEM : put(r, dir, file, t, mode);
}

static int put_list(Root *r, const char *dir, const char *file, const CpuSet *s, mode_t mode) {
        _cleanup_free_ char *l = cpu_set_format_list(s);
        return l ? putf(r, dir, file, mode, "%s\n", l) : -ENOMEM;
}

/* Removes dir with everything below it (only ever a group directory rtpart created). */
static int remove_tree(Root *r, const char *dir) {
        _cleanup_close_ int fd = root_open(r, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
        if (fd < 0)
                return fd;
        DIR *d = fdopendir(fd);
        if (!d)
                return -errno;
        fd = -EBADF; /* owned by d now */
        struct dirent *de;
        int k = 0;
        while ((de = readdir(d)) && k >= 0) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                struct stat st;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        k = -errno;
                else if (S_ISDIR(st.st_mode)) {
                        _cleanup_free_ char *sub = path_join(dir, de->d_name, NULL);
                        k = sub ? remove_tree(r, sub) : -ENOMEM;
                } else if (unlinkat(dirfd(d), de->d_name, 0) < 0)
                        k = -errno;
        }
        closedir(d);
        if (k < 0)
                return k;
        _cleanup_free_ char *parent = strdup(dir);
        if (!parent)
                return -ENOMEM;
        char *slash = strrchr(parent, '/');
        const char *base = slash ? slash + 1 : dir;
        if (slash)
                *slash = 0;
        _cleanup_close_ int pfd = root_open(r, slash ? parent : ".", O_RDONLY | O_DIRECTORY, 0);
        if (pfd < 0)
                return pfd;
        return unlinkat(pfd, base, AT_REMOVEDIR) < 0 ? -errno : 0;
}

/* Subdirectories of dir, sorted, without dot entries and the names in `skip`. */
static int list_dirs(Root *r, const char *dir, const char * const *skip, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        DIR *d;
        int k = root_opendir(r, dir, &d);
        if (k < 0)
                return k;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                bool skipped = false;
                for (const char * const *s = skip; s && *s && !skipped; s++)
                        skipped = streq(*s, de->d_name);
                struct stat st;
                if (skipped || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
                        continue;
                k = strv_extend(&l, de->d_name);
                if (k < 0) {
                        closedir(d);
                        return k;
                }
        }
        closedir(d);
        strv_sort(l);
        *ret = l ? TAKE_PTR(l) : calloc(1, sizeof(char *));
        return *ret ? 0 : -ENOMEM;
}

/* ---- task lists ("1\n2\n…", sorted as cgroup v1 prints them) ---- */

typedef struct Ids {
        long *v;
        size_t n;
} Ids;

static void ids_done(Ids *ids) {
        free(ids->v);
        *ids = (Ids) {};
}

static int cmp_long(const void *a, const void *b) {
        long x = *(const long *) a, y = *(const long *) b;
        return x < y ? -1 : x > y;
}

static int ids_parse(const char *text, Ids *ret) {
        Ids ids = {};
        for (const char *p = text ? text : ""; *p;) {
                char *end;
                long v = strtol(p, &end, 10);
                if (end == p) {
                        p++;
                        continue;
                }
                long *m = realloc(ids.v, (ids.n + 1) * sizeof(long));
                if (!m) {
                        ids_done(&ids);
                        return -ENOMEM;
                }
                ids.v = m;
                ids.v[ids.n++] = v;
                p = end;
        }
        *ret = ids;
        return 0;
}

static bool ids_has(const Ids *ids, long v) {
        for (size_t i = 0; i < ids->n; i++)
                if (ids->v[i] == v)
                        return true;
        return false;
}

static int ids_add(Ids *ids, long v) {
        if (ids_has(ids, v))
                return 0;
        long *m = realloc(ids->v, (ids->n + 1) * sizeof(long));
        if (!m)
                return -ENOMEM;
        ids->v = m;
        ids->v[ids->n++] = v;
        qsort(ids->v, ids->n, sizeof(long), cmp_long);
        return 0;
}

static void ids_del(Ids *ids, long v) {
        for (size_t i = 0; i < ids->n; i++)
                if (ids->v[i] == v) {
                        memmove(ids->v + i, ids->v + i + 1, (ids->n - i - 1) * sizeof(long));
                        ids->n--;
                        return;
                }
}

static int put_ids(Root *r, const char *dir, const char *file, const Ids *ids) {
        StrBuf b = {};
        for (size_t i = 0; i < ids->n; i++)
                strbuf_appendf(&b, "%ld\n", ids->v[i]);
        _cleanup_free_ char *t = strbuf_steal(&b);
        return t ? put(r, dir, file, t, 0644) : -ENOMEM;
}

static int get_ids(Root *r, const char *dir, const char *file, Ids *ret) {
        _cleanup_free_ char *t = get(r, dir, file, NULL);
        return ids_parse(t, ret);
}

/* A thread's process and PF_* flags from proc/: the leader's own directory, or any process's
 * task/ directory for other threads (the fake trees, like procfs' readdir, list only leaders). */
static int task_lookup(Root *r, long tid, long *ret_tgid, unsigned *ret_flags) {
        _cleanup_free_ char *stat = NULL, *path = NULL;
        long tgid = tid;
        if (asprintf(&path, "proc/%ld/task/%ld/stat", tid, tid) < 0)
                return -ENOMEM;
        if (root_read_file(r, path, &stat, NULL) < 0) {
                _cleanup_strv_free_ char **m = NULL;
                free(path);
                if (asprintf(&path, "proc/[0-9]*/task/%ld/stat", tid) < 0)
                        return -ENOMEM;
                int k = root_glob(r, path, &m);
                if (k < 0)
                        return k;
                if (!m[0] || root_read_file(r, m[0], &stat, NULL) < 0)
                        return -ESRCH;
                tgid = strtol(m[0] + strlen("proc/"), NULL, 10);
        }
        ProcStat ps;
        if (proc_stat_parse(stat, &ps) < 0)
                return -ESRCH;
        *ret_flags = ps.flags;
        proc_stat_done(&ps);
        *ret_tgid = tgid;
        return 0;
}

/* ---- cgroups ---- */

static bool is_v2(Root *r, const char *hier) {
        return exists(r, hier, "cgroup.controllers", NULL);
}

/* v1 cpuset files carry the "cpuset." prefix unless the hierarchy is mounted with noprefix. */
static const char *v1_prefix(Root *r, const char *hier) {
        return exists(r, hier, "cpuset.cpus", NULL) ? "cpuset." : "";
}

static char *v1_file(Root *r, const char *hier, const char *key) {
        char *s;
        return asprintf(&s, "%s%s", v1_prefix(r, hier), key) < 0 ? NULL : s;
}

static bool v1_get_set(Root *r, const char *hier, const char *name, const char *key, CpuSet *ret) {
        _cleanup_free_ char *f = v1_file(r, hier, key);
        return f && get_set(r, hier, name, f, ret);
}

static int mkdir_v2(Root *r, const char *hier, const char *dir) {
        _cleanup_free_ char *sub = get(r, hier, "cgroup.subtree_control", NULL);
        _cleanup_free_ char *eff = get(r, hier, "cpuset.cpus.effective", NULL),
                            *meff = get(r, hier, "cpuset.mems.effective", NULL);
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
        int k;

        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                k = put(r, dir, files[i].file, files[i].text, files[i].mode);
                if (k < 0)
                        return k;
        }
        _cleanup_free_ char *padded = NULL;
        if (asprintf(&padded, " %s ", sub ? sub : "") < 0)
                return -ENOMEM;
        for (char *c = padded; *c; c++)
                if (*c == '\n')
                        *c = ' ';
        if (!strstr(padded, " cpuset "))
                return 0; /* the parent does not give its children the cpuset controller */
        k = put(r, dir, "cpuset.cpus", "\n", 0644);
        if (k >= 0)
                k = put(r, dir, "cpuset.cpus.effective", eff ? eff : "\n", 0444);
        /* cpuset.cpus.exclusive came with the root's cpuset.cpus.isolated (6.7). */
        if (k >= 0 &&
            (exists(r, hier, "cpuset.cpus.isolated", NULL) || exists(r, hier, "cpuset.cpus.exclusive", NULL))) {
                k = put(r, dir, "cpuset.cpus.exclusive", "\n", 0644);
                if (k >= 0)
                        k = put(r, dir, "cpuset.cpus.exclusive.effective", "\n", 0444);
        }
        if (k >= 0)
                k = put(r, dir, "cpuset.cpus.partition", "member\n", 0644);
        if (k >= 0)
                k = put(r, dir, "cpuset.mems", "\n", 0644);
        if (k >= 0)
                k = put(r, dir, "cpuset.mems.effective", meff ? meff : "\n", 0444);
        return k;
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
                int k = put(r, dir, f, files[i].text, files[i].mode);
                if (k < 0)
                        return k;
        }
        return 0;
}

int sim_cgroup_mkdir(Root *r, const char *hier, const char *name) {
        _cleanup_free_ char *dir = path_join(hier, name, NULL);
        if (!dir)
                return -ENOMEM;
        _cleanup_close_ int hfd = root_open(r, hier, O_RDONLY | O_DIRECTORY, 0);
        if (hfd < 0)
                return hfd;
        if (mkdirat(hfd, name, 0755) < 0)
                return -errno;
        int k = is_v2(r, hier) ? mkdir_v2(r, hier, dir) : mkdir_v1(r, hier, dir);
        if (k < 0)
                (void) remove_tree(r, dir);
        return k;
}

/* v2: the CPUs a partition root claims: cpuset.cpus.exclusive when set, else cpuset.cpus. */
static void partition_cpus(Root *r, const char *hier, const char *name, CpuSet *ret) {
        CpuSet cpus = {}, excl = {};
        (void) get_set(r, hier, name, "cpuset.cpus", &cpus);
        (void) get_set(r, hier, name, "cpuset.cpus.exclusive", &excl);
        *ret = cpu_set_is_empty(&excl) ? cpus : excl;
}

/* "isolated", "root" or "member" from the first word of cpuset.cpus.partition, and whether the
 * kernel marked it invalid. */
static void partition_read(Root *r, const char *hier, const char *name, char mode[static 16], bool *ret_valid) {
        _cleanup_free_ char *t = get(r, hier, name, "cpuset.cpus.partition");
        mode[0] = 0;
        if (t)
                (void) sscanf(t, "%15s", mode);
        *ret_valid = t && !strstr(t, "invalid");
}

/* The root's cpuset.cpus.isolated (6.7): the CPUs of every valid isolated partition. */
static void update_root_isolated(Root *r, const char *hier) {
        _cleanup_strv_free_ char **children = NULL;
        CpuSet iso = {};
        if (!exists(r, hier, "cpuset.cpus.isolated", NULL) || list_dirs(r, hier, NULL, &children) < 0)
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
        (void) put_list(r, hier, "cpuset.cpus.isolated", &iso, 0444);
}

/* What cpuset.cpus.partition reads after `mode` is written: the mode, or "<mode> invalid
 * (reason)" with the reasons of kernel/cgroup/cpuset.c perr_strings[], checked in the order
 * update_prstate() meets them. The exclusivity rule is 6.1's (no CPU of a sibling's cpuset.cpus
 * or cpuset.cpus.exclusive), the strictest of the kernels rtpart supports. */
static int partition_state(Root *r, const char *hier, const char *name, const char *mode, char **ret) {
        const char *reason = NULL;
        CpuSet want, parent = {};

        partition_cpus(r, hier, name, &want);
        (void) get_set(r, hier, "cpuset.cpus.effective", NULL, &parent);
        if (cpu_set_is_empty(&want))
                reason = "cpuset.cpus and cpuset.cpus.exclusive are empty";
        else if (!cpu_set_is_subset(&want, &parent))
                reason = "Invalid cpu list in cpuset.cpus.exclusive";
        if (!reason) {
                _cleanup_strv_free_ char **sib = NULL;
                int k = list_dirs(r, hier, NULL, &sib);
                if (k < 0)
                        return k;
                CpuSet left = parent;
                cpu_set_andnot(&left, &want);
                for (char **s = sib; *s && !reason; s++) {
                        if (streq(*s, name))
                                continue;
                        CpuSet c = {}, x = {};
                        (void) get_set(r, hier, *s, "cpuset.cpus", &c);
                        (void) get_set(r, hier, *s, "cpuset.cpus.exclusive", &x);
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
        _cleanup_free_ char *dir = path_join(hier, name, NULL);
        k = dir ? putf(r, dir, "cpuset.cpus.partition", 0644, "%s\n", state) : -ENOMEM;
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
        _cleanup_free_ char *dir = path_join(hier, rel, NULL);
        int k = dir ? strv_extend(list, rel) : -ENOMEM;
        if (k < 0)
                return k;
        k = list_dirs(r, dir, NULL, &sub);
        if (k < 0)
                return k;
        for (char **s = sub; *s; s++) {
                _cleanup_free_ char *child = path_join(rel, *s, NULL);
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
                _cleanup_free_ char *dir = path_join(hier, *c, NULL);
                Ids ids = {};
                if (!dir || get_ids(r, dir, file, &ids) < 0)
                        return -ENOMEM;
                bool has = ids_has(&ids, id);
                ids_done(&ids);
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
        _cleanup_(ids_done) Ids tasks = {}, procs = {};
        int k = get_ids(r, dir, "tasks", &tasks);
        if (k < 0)
                return k;
        for (size_t i = 0; i < tasks.n; i++) {
                long tgid = tasks.v[i];
                unsigned flags;
                (void) task_lookup(r, tasks.v[i], &tgid, &flags);
                k = ids_add(&procs, tgid);
                if (k < 0)
                        return k;
        }
        return put_ids(r, dir, "cgroup.procs", &procs);
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
        int k = task_lookup(r, id, &tgid, &flags);
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
        _cleanup_free_ char *src = NULL, *dst_dir = path_join(hier, name, NULL);
        if (!dst_dir)
                return -ENOMEM;
        k = find_task(r, hier, file, id, &src);
        if (k < 0)
                return k;
        if (src && streq(src, strempty(name)))
                return 0;
        _cleanup_free_ char *src_dir = src ? path_join(hier, src, NULL) : NULL;
        _cleanup_(ids_done) Ids from = {}, to = {};
        if (src_dir) {
                k = get_ids(r, src_dir, file, &from);
                if (k < 0)
                        return k;
                ids_del(&from, id);
                k = put_ids(r, src_dir, file, &from);
                if (k < 0)
                        return k;
        }
        k = get_ids(r, dst_dir, file, &to);
        if (k >= 0)
                k = ids_add(&to, id);
        if (k >= 0)
                k = put_ids(r, dst_dir, file, &to);
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
        _cleanup_(ids_done) Ids tf = {}, tt = {};
        if (src_dir && (k = get_ids(r, src_dir, "cgroup.threads", &tf)) < 0)
                return k;
        if ((k = get_ids(r, dst_dir, "cgroup.threads", &tt)) < 0)
                return k;
        for (char **t = threads; *t; t++) {
                long tid = strtol(strrchr(*t, '/') + 1, NULL, 10);
                ids_del(&tf, tid);
                if ((k = ids_add(&tt, tid)) < 0)
                        return k;
        }
        if (src_dir && (k = put_ids(r, src_dir, "cgroup.threads", &tf)) < 0)
                return k;
        return put_ids(r, dst_dir, "cgroup.threads", &tt);
}

int sim_cgroup_rmdir(Root *r, const char *hier, const char *name) {
        _cleanup_free_ char *dir = path_join(hier, name, NULL);
        _cleanup_strv_free_ char **children = NULL;
        _cleanup_(ids_done) Ids ids = {};
        bool v2 = is_v2(r, hier);
        int k;

        if (!dir)
                return -ENOMEM;
        if (!root_is_dir(r, dir))
                return -ENOENT;
        k = get_ids(r, dir, v2 ? "cgroup.procs" : "tasks", &ids);
        if (k < 0)
                return k;
        k = list_dirs(r, dir, NULL, &children);
        if (k < 0)
                return k;
        if (ids.n > 0 || children[0])
                return -EBUSY;
        k = remove_tree(r, dir);
        if (k >= 0 && v2)
                update_root_isolated(r, hier);
        return k;
}

/* "+cpuset -io": the controllers in the order the kernel lists them (cgroup.controllers). */
static int write_subtree_control(Root *r, const char *dir, const char *value) {
        _cleanup_free_ char *avail = get(r, dir, "cgroup.controllers", NULL),
                            *cur = get(r, dir, "cgroup.subtree_control", NULL);
        _cleanup_strv_free_ char **on = NULL;
        char *save = NULL;
        int k;

        for (char *t = strtok_r(cur, " \n", &save); t; t = strtok_r(NULL, " \n", &save))
                if ((k = strv_extend(&on, t)) < 0)
                        return k;
        _cleanup_free_ char *v = strdup(value);
        if (!v)
                return -ENOMEM;
        for (char *t = strtok_r(v, " \n", &save); t; t = strtok_r(NULL, " \n", &save)) {
                if ((t[0] != '+' && t[0] != '-') || !t[1])
                        return -EINVAL;
                _cleanup_free_ char *padded = NULL;
                if (asprintf(&padded, " %s ", strempty(avail)) < 0)
                        return -ENOMEM;
                for (char *c = padded; *c; c++)
                        if (*c == '\n')
                                *c = ' ';
                char word[64];
                snprintf(word, sizeof(word), " %s ", t + 1);
                if (!strstr(padded, word))
                        return -ENOENT; /* cgroup_subtree_control_write(): not available here */
                if (t[0] == '+' && !strv_contains(on, t + 1)) {
                        if ((k = strv_extend(&on, t + 1)) < 0)
                                return k;
                } else if (t[0] == '-')
                        for (char **o = on; o && *o; o++)
                                if (streq(*o, t + 1))
                                        (*o)[0] = 0;
        }
        StrBuf b = {};
        _cleanup_free_ char *order = avail ? strdup(avail) : NULL;
        for (char *t = order ? strtok_r(order, " \n", &save) : NULL; t; t = strtok_r(NULL, " \n", &save))
                if (strv_contains(on, t))
                        strbuf_appendf(&b, "%s%s", b.len ? " " : "", t);
        strbuf_append(&b, "\n");
        _cleanup_free_ char *out = strbuf_steal(&b);
        return out ? put(r, dir, "cgroup.subtree_control", out, 0644) : -ENOMEM;
}

static int write_v2(Root *r, const char *hier, const char *name, const char *dir, const char *file, const char *value) {
        CpuSet s = {}, parent = {};
        int k;

        if (streq(file, "cgroup.procs"))
                return attach(r, hier, name, file, value);
        if (streq(file, "cgroup.subtree_control"))
                return write_subtree_control(r, dir, value);
        if (!name ||
            (!streq(file, "cpuset.cpus") && !streq(file, "cpuset.cpus.exclusive") && !streq(file, "cpuset.mems") &&
             !streq(file, "cpuset.cpus.partition")))
                return putf(r, dir, file, 0644, "%s\n", value);
        if (!exists(r, dir, file, NULL))
                return -ENOENT;

        if (streq(file, "cpuset.cpus.partition")) {
                if (!streq(value, "member") && !streq(value, "root") && !streq(value, "isolated"))
                        return -EINVAL;
                return write_partition(r, hier, name, value);
        }
        if (cpu_set_parse_list(value, &s, NULL) < 0)
                return -EINVAL;
        bool mems = streq(file, "cpuset.mems");
        (void) get_set(r, hier, mems ? "cpuset.mems.effective" : "cpuset.cpus.effective", NULL, &parent);
        if (streq(file, "cpuset.cpus.exclusive")) {
                /* validate_change(): exclusive CPUs lie in the parent's and are no sibling's. */
                _cleanup_strv_free_ char **sib = NULL;
                if (!cpu_set_is_subset(&s, &parent))
                        return -EINVAL;
                k = list_dirs(r, hier, NULL, &sib);
                if (k < 0)
                        return k;
                for (char **o = sib; *o; o++) {
                        CpuSet x = {};
                        if (!streq(*o, name) && get_set(r, hier, *o, "cpuset.cpus.exclusive", &x) &&
                            cpu_set_intersects(&x, &s))
                                return -EINVAL;
                }
        }
        if (streq(file, "cpuset.cpus")) {
                /* validate_change() (6.1): a partition root's CPUs are exclusive; no sibling may claim them. */
                _cleanup_strv_free_ char **sib = NULL;
                k = list_dirs(r, hier, NULL, &sib);
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
        k = put_list(r, dir, file, &s, 0644);
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
        if (exists(r, dir, eff_file, NULL) && (k = put_list(r, dir, eff_file, &eff, 0444)) < 0)
                return k;
        return mems ? 0 : recheck_partition(r, hier, name);
}

static int write_v1(Root *r, const char *hier, const char *name, const char *dir, const char *file, const char *value) {
        const char *pre = v1_prefix(r, hier);
        const char *key = startswith(file, pre) ? file + strlen(pre) : file;
        CpuSet s = {}, parent = {};
        int k;

        if (streq(file, "tasks") || streq(file, "cgroup.procs"))
                return attach(r, hier, name, "tasks", value);
        if (!name || (!streq(key, "cpus") && !streq(key, "mems") && !streq(key, "cpu_exclusive")))
                return putf(r, dir, file, 0644, "%s\n", value);
        if (!exists(r, dir, file, NULL))
                return -ENOENT;

        _cleanup_strv_free_ char **sib = NULL;
        k = list_dirs(r, hier, NULL, &sib);
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
                return putf(r, dir, file, 0644, "%s\n", on ? "1" : "0");
        }
        if (cpu_set_parse_list(value, &s, NULL) < 0)
                return -EINVAL;
        (void) v1_get_set(r, hier, NULL, key, &parent);
        if (!cpu_set_is_subset(&s, &parent))
                return -EINVAL; /* validate_change(): a cpuset's CPUs and nodes lie in its parent's */
        if (streq(key, "cpus")) {
                _cleanup_free_ char *excl_file = v1_file(r, hier, "cpu_exclusive"), *mine_excl = NULL;
                if (!excl_file)
                        return -ENOMEM;
                mine_excl = get(r, dir, excl_file, NULL);
                bool mine = mine_excl && atoi(mine_excl) == 1;
                for (char **o = sib; *o; o++) {
                        if (streq(*o, name))
                                continue;
                        _cleanup_free_ char *e = get(r, hier, *o, excl_file);
                        CpuSet c = {};
                        if ((mine || (e && atoi(e) == 1)) && v1_get_set(r, hier, *o, "cpus", &c) &&
                            cpu_set_intersects(&c, &s))
                                return -EINVAL;
                }
        }
        k = put_list(r, dir, file, &s, 0644);
        if (k < 0)
                return k;
        _cleanup_free_ char *eff = v1_file(r, hier, streq(key, "cpus") ? "effective_cpus" : "effective_mems");
        if (!eff)
                return -ENOMEM;
        return exists(r, dir, eff, NULL) ? put_list(r, dir, eff, &s, 0444) : 0;
}

int sim_cgroup_write(Root *r, const char *hier, const char *name, const char *file, const char *value) {
        _cleanup_free_ char *dir = path_join(hier, name, NULL);
        if (!dir)
                return -ENOMEM;
        if (!root_is_dir(r, dir))
                return -ENOENT;
        return is_v2(r, hier) ? write_v2(r, hier, name, dir, file, value) : write_v1(r, hier, name, dir, file, value);
}

/* ---- resctrl ---- */

/* One line of a schemata file as the kernel prints it (show_doms()): the resource name padded
 * to max_name_width, then "id=value" per domain, values padded to max_data_width. */
typedef struct SchemaLine {
        char *prefix; /* "    L3": the name with its padding */
        char *name;   /* "L3" */
        size_t n;
        unsigned *ids;
        char **vals; /* as printed, padding included: "7ff", " 10" */
} SchemaLine;

typedef struct Schemata {
        SchemaLine *l;
        size_t n;
} Schemata;

static void schemata_done(Schemata *s) {
        for (size_t i = 0; i < s->n; i++) {
                free(s->l[i].prefix);
                free(s->l[i].name);
                free(s->l[i].ids);
                for (size_t j = 0; j < s->l[i].n; j++)
                        free(s->l[i].vals[j]);
                free(s->l[i].vals);
        }
        free(s->l);
        *s = (Schemata) {};
}

static int schemata_parse(const char *text, Schemata *ret) {
        _cleanup_(schemata_done) Schemata s = {};
        for (const char *p = text ? text : ""; *p;) {
                const char *eol = strchrnul(p, '\n'), *colon = memchr(p, ':', (size_t) (eol - p));
                if (!colon) {
                        p = *eol ? eol + 1 : eol;
                        continue;
                }
                SchemaLine *m = realloc(s.l, (s.n + 1) * sizeof(SchemaLine));
                if (!m)
                        return -ENOMEM;
                s.l = m;
                SchemaLine *l = &s.l[s.n++];
                *l = (SchemaLine) { .prefix = strndup(p, (size_t) (colon - p)) };
                const char *nb = p;
                while (nb < colon && *nb == ' ')
                        nb++;
                l->name = strndup(nb, (size_t) (colon - nb));
                if (!l->prefix || !l->name)
                        return -ENOMEM;
                for (const char *q = colon + 1; q < eol;) {
                        const char *end = memchr(q, ';', (size_t) (eol - q));
                        if (!end)
                                end = eol;
                        const char *eq = memchr(q, '=', (size_t) (end - q));
                        if (!eq)
                                return -EINVAL;
                        unsigned *ids = realloc(l->ids, (l->n + 1) * sizeof(unsigned));
                        if (ids)
                                l->ids = ids;
                        char **vals = realloc(l->vals, (l->n + 1) * sizeof(char *));
                        if (vals)
                                l->vals = vals;
                        if (!ids || !vals)
                                return -ENOMEM;
                        l->ids[l->n] = (unsigned) strtoul(q, NULL, 10);
                        if (!(l->vals[l->n] = strndup(eq + 1, (size_t) (end - eq - 1))))
                                return -ENOMEM;
                        l->n++;
                        q = *end == ';' ? end + 1 : end;
                }
                p = *eol ? eol + 1 : eol;
        }
        *ret = s;
        s = (Schemata) {};
        return 0;
}

static char *schemata_format(const Schemata *s) {
        StrBuf b = {};
        for (size_t i = 0; i < s->n; i++) {
                strbuf_appendf(&b, "%s:", s->l[i].prefix);
                for (size_t j = 0; j < s->l[i].n; j++)
                        strbuf_appendf(&b, "%s%u=%s", j ? ";" : "", s->l[i].ids[j], s->l[i].vals[j]);
                strbuf_append(&b, "\n");
        }
        return strbuf_steal(&b);
}

static SchemaLine *schemata_find(const Schemata *s, const char *name) {
        for (size_t i = 0; i < s->n; i++)
                if (streq(s->l[i].name, name))
                        return &s->l[i];
        return NULL;
}

static int line_domain(const SchemaLine *l, unsigned id) {
        for (size_t j = 0; j < l->n; j++)
                if (l->ids[j] == id)
                        return (int) j;
        return -1;
}

static uint64_t line_mask(const SchemaLine *l, unsigned id) {
        int j = l ? line_domain(l, id) : -1;
        return j < 0 ? 0 : strtoull(l->vals[j], NULL, 16);
}

/* A value in the width the kernel printed its predecessor with: %0*x for masks, %*u for MB. */
static char *format_value(const char *old, bool cache, uint64_t v) {
        char *s;
        int w = (int) strlen(old);
        if (cache)
                return asprintf(&s, "%0*llx", w, (unsigned long long) v) < 0 ? NULL : s;
        return asprintf(&s, "%*llu", w, (unsigned long long) v) < 0 ? NULL : s;
}

typedef struct ResInfo {
        bool cache;
        uint64_t cbm;
        unsigned bits, min_bits;
        uint64_t shareable;
        bool sparse;
        unsigned min_bw, gran, max_bw;
        unsigned num_closids;
} ResInfo;

static unsigned info_uint(Root *r, const char *mount, const char *res, const char *file, unsigned dflt, int base) {
        _cleanup_free_ char *dir = path_join(mount, "info", res), *t = get(r, dir, file, NULL);
        return t ? (unsigned) strtoul(t, NULL, base) : dflt;
}

static bool host_is_amd(Root *r) {
        _cleanup_free_ char *t = NULL;
        return root_read_file(r, "proc/cpuinfo", &t, NULL) >= 0 && strstr(t, "AuthenticAMD");
}

static void res_info(Root *r, const char *mount, const char *res, ResInfo *ret) {
        _cleanup_free_ char *dir = path_join(mount, "info", res), *cbm = get(r, dir, "cbm_mask", NULL);
        ResInfo i = { .num_closids = info_uint(r, mount, res, "num_closids", 0, 10) };
        if (cbm) {
                i.cache = true;
                i.cbm = strtoull(cbm, NULL, 16);
                i.bits = (unsigned) __builtin_popcountll(i.cbm);
                i.min_bits = info_uint(r, mount, res, "min_cbm_bits", 1, 10);
                i.shareable = info_uint(r, mount, res, "shareable_bits", 0, 16);
                _cleanup_free_ char *sp = get(r, dir, "sparse_masks", NULL);
                i.sparse = sp ? atoi(sp) == 1 : host_is_amd(r);
        } else {
                /* Intel MBA is a percentage (default 100); AMD's limit is in 1/8 GB/s, default 2048. */
                bool amd = host_is_amd(r);
                i.min_bw = info_uint(r, mount, res, "min_bandwidth", 0, 10);
                i.gran = info_uint(r, mount, res, "bandwidth_gran", 1, 10);
                i.max_bw = amd ? 2048 : 100;
        }
        *ret = i;
}

static bool mask_contiguous(uint64_t m) {
        if (m == 0)
                return true;
        m >>= __builtin_ctzll(m);
        return (m & (m + 1)) == 0;
}

/* The kernel's control groups: "" (the default group) first, then the directories. */
static int resctrl_groups(Root *r, const char *mount, char ***ret) {
        static const char * const skip[] = { "info", "mon_groups", "mon_data", NULL };
        _cleanup_strv_free_ char **l = NULL, **dirs = NULL;
        int k = list_dirs(r, mount, skip, &dirs);
        if (k < 0)
                return k;
        k = strv_extend(&l, "");
        for (char **d = dirs; *d && k >= 0; d++)
                k = strv_extend(&l, *d);
        if (k < 0)
                return k;
        *ret = TAKE_PTR(l);
        return 0;
}

static int group_schemata(Root *r, const char *mount, const char *g, Schemata *ret) {
        _cleanup_free_ char *dir = path_join(mount, g, NULL), *t = dir ? get(r, dir, "schemata", NULL) : NULL;
        return schemata_parse(t, ret);
}

static bool group_exclusive(Root *r, const char *mount, const char *g) {
        _cleanup_free_ char *dir = path_join(mount, g, NULL), *t = dir ? get(r, dir, "mode", NULL) : NULL;
        return t && startswith(t, "exclusive");
}

/* "L3CODE" ↔ "L3DATA": with CDP a CLOSID's code and data masks share the same ways. */
static char *cdp_peer(const char *res) {
        size_t n = strlen(res);
        char *s;
        if (n > 4 && streq(res + n - 4, "CODE"))
                return asprintf(&s, "%.*sDATA", (int) (n - 4), res) < 0 ? NULL : s;
        if (n > 4 && streq(res + n - 4, "DATA"))
                return asprintf(&s, "%.*sCODE", (int) (n - 4), res) < 0 ? NULL : s;
        return NULL;
}

/* rdtgroup_cbm_overlaps(): whether mask m of resource res in domain id overlaps the ways of
 * another group (only exclusive ones, if asked) in res or its CDP peer. */
static bool overlaps(Root *r, const char *mount, char **groups, const char *self, const char *res, unsigned id,
                     uint64_t m, bool only_exclusive) {
        _cleanup_free_ char *peer = cdp_peer(res);
        for (char **g = groups; *g; g++) {
                if (streq(*g, self) || (only_exclusive && !group_exclusive(r, mount, *g)))
                        continue;
                _cleanup_(schemata_done) Schemata s = {};
                if (group_schemata(r, mount, *g, &s) < 0)
                        continue;
                if ((line_mask(schemata_find(&s, res), id) & m) ||
                    (peer && (line_mask(schemata_find(&s, peer), id) & m)))
                        return true;
        }
        return false;
}

_printf_(3, 4) static void set_status(Root *r, const char *mount, const char *fmt, ...) {
        _cleanup_free_ char *t = NULL, *dir = path_join(mount, "info", NULL);
        va_list ap;
        va_start(ap, fmt);
        int n = vasprintf(&t, fmt, ap);
        va_end(ap);
        if (n >= 0 && dir && exists(r, dir, "last_cmd_status", NULL))
                (void) putf(r, dir, "last_cmd_status", 0444, "%s\n", t);
}

/* The cache's size in bytes for domain id (sysfs cache/indexN/size of a CPU with that id). The
 * CPUs of every other domain met on the way (its shared_cpu_list) are not read again: two reads
 * per domain, not one per CPU, on a 1024-CPU tree. */
static uint64_t cache_bytes_find(Root *r, unsigned level, unsigned id) {
        DIR *d;
        if (root_opendir(r, "sys/devices/system/cpu", &d) < 0)
                return 0;
        CpuSet seen = {};
        uint64_t bytes = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                unsigned cpu;
                char tail;
                if (sscanf(de->d_name, "cpu%u%c", &cpu, &tail) != 1 || cpu_set_has(&seen, cpu))
                        continue;
                char base[128], path[160];
                _cleanup_free_ char *v = NULL, *size = NULL;
                snprintf(base, sizeof(base), "sys/devices/system/cpu/cpu%u/cache/index%u", cpu, level);
                if (root_read_linef(r, &v, "%s/id", base) < 0)
                        continue;
                if ((unsigned) strtoul(v, NULL, 10) != id) {
                        CpuSet shared = {};
                        snprintf(path, sizeof(path), "%s/shared_cpu_list", base);
                        if (root_read_cpu_list(r, path, &shared) >= 0)
                                cpu_set_or(&seen, &shared);
                        continue;
                }
                if (root_read_linef(r, &size, "%s/size", base) >= 0) {
                        char *end;
                        bytes = strtoull(size, &end, 10);
                        bytes = *end == 'K' ? bytes << 10 : *end == 'M' ? bytes << 20 : bytes;
                }
                break;
        }
        closedir(d);
        return bytes;
}

/* The same, remembered per tree, level and id: a tree's caches do not change, and on 1024 CPUs
 * the search reads a file of every CPU for each domain of every schemata write. */
static uint64_t cache_bytes(Root *r, unsigned level, unsigned id) {
        static struct {
                char *tree;
                unsigned level, id;
                uint64_t bytes;
        } known[64];
        static size_t n_known = 0;
        for (size_t i = 0; i < n_known; i++)
                if (known[i].level == level && known[i].id == id && streq(known[i].tree, r->path))
                        return known[i].bytes;
        uint64_t b = cache_bytes_find(r, level, id);
        char *tree = n_known < ELEMENTSOF(known) ? strdup(r->path) : NULL;
        if (tree)
                known[n_known++] = (__typeof__(known[0])) { tree, level, id, b };
        return b;
}

/* rdtgroup_size_show(): bytes of cache per domain, bandwidth values as they are. */
static int update_size(Root *r, const char *mount, const char *dir, const Schemata *s) {
        if (!exists(r, dir, "size", NULL))
                return 0;
        StrBuf b = {};
        for (size_t i = 0; i < s->n; i++) {
                const SchemaLine *l = &s->l[i];
                ResInfo info;
                res_info(r, mount, l->name, &info);
                strbuf_appendf(&b, "%s:", l->prefix);
                for (size_t j = 0; j < l->n; j++) {
                        unsigned long long v;
                        if (info.cache) {
                                unsigned level = startswith(l->name, "L2") ? 2 : 3;
                                uint64_t m = strtoull(l->vals[j], NULL, 16);
                                v = info.bits ? cache_bytes(r, level, l->ids[j]) / info.bits *
                                                (unsigned) __builtin_popcountll(m)
                                              : 0;
                        } else
                                v = strtoull(l->vals[j], NULL, 10);
                        strbuf_appendf(&b, "%s%u=%llu", j ? ";" : "", l->ids[j], v);
                }
                strbuf_append(&b, "\n");
        }
        _cleanup_free_ char *t = strbuf_steal(&b);
        return t ? put(r, dir, "size", t, 0444) : -ENOMEM;
}

/* The width of the kernel's CPU masks here: as many bits as the default group's mask shows. */
static unsigned mask_bits(Root *r, const char *mount) {
        _cleanup_free_ char *t = get(r, mount, "cpus", NULL);
        unsigned n = 0;
        for (const char *c = t; c && *c; c++)
                n += isxdigit((unsigned char) *c) ? 4 : 0;
        return n;
}

static int put_group_cpus(Root *r, const char *mount, const char *dir, const CpuSet *s) {
        _cleanup_free_ char *mask = cpu_set_format_mask(s, mask_bits(r, mount));
        if (!mask)
                return -ENOMEM;
        int k = putf(r, dir, "cpus", 0644, "%s\n", mask);
        return k < 0 ? k : put_list(r, dir, "cpus_list", s, 0644);
}

int sim_resctrl_mkdir(Root *r, const char *mount, const char *group) {
        _cleanup_strv_free_ char **groups = NULL;
        _cleanup_(schemata_done) Schemata s = {};
        _cleanup_free_ char *dir = path_join(mount, group, NULL);
        int k;

        if (!dir)
                return -ENOMEM;
        if (root_exists(r, dir))
                return -EEXIST;
        k = resctrl_groups(r, mount, &groups);
        if (k >= 0)
                k = group_schemata(r, mount, "", &s);
        if (k < 0)
                return k;

        /* closid_alloc(): the smallest num_closids of the allocation resources. */
        unsigned closids = 0;
        for (size_t i = 0; i < s.n; i++) {
                ResInfo info;
                res_info(r, mount, s.l[i].name, &info);
                if (info.num_closids && (!closids || info.num_closids < closids))
                        closids = info.num_closids;
        }
        if (closids && strv_length(groups) >= closids) {
                set_status(r, mount, "out of CLOSIDs");
                return -ENOSPC;
        }

        /* rdtgroup_init_alloc(): caches get every way no exclusive group holds (on hosts without
         * sparse masks the lowest contiguous run of them, cbm_ensure_valid()), MB its default. */
        for (size_t i = 0; i < s.n; i++) {
                SchemaLine *l = &s.l[i];
                ResInfo info;
                res_info(r, mount, l->name, &info);
                for (size_t j = 0; j < l->n; j++) {
                        uint64_t v;
                        if (info.cache) {
                                uint64_t excl = 0;
                                _cleanup_free_ char *peer = cdp_peer(l->name);
                                for (char **g = groups; *g; g++) {
                                        _cleanup_(schemata_done) Schemata o = {};
                                        if (!group_exclusive(r, mount, *g) || group_schemata(r, mount, *g, &o) < 0)
                                                continue;
                                        excl |= line_mask(schemata_find(&o, l->name), l->ids[j]);
                                        if (peer)
                                                excl |= line_mask(schemata_find(&o, peer), l->ids[j]);
                                }
                                v = info.cbm & ~excl;
                                if (!info.sparse && v) {
                                        unsigned lo = (unsigned) __builtin_ctzll(v);
                                        uint64_t x = v >> lo;
                                        v = ((x ^ (x + 1)) >> 1) << lo; /* the ones below x's first zero */
                                }
                                if ((unsigned) __builtin_popcountll(v) < MAX(info.min_bits, 1U)) {
                                        set_status(r, mount, "No space on %s:%u", l->name, l->ids[j]);
                                        return -ENOSPC;
                                }
                        } else if (info.max_bw && streq(l->name, "MB"))
                                v = info.max_bw;
                        else
                                continue; /* other resources: the default group's value */
                        char *nv = format_value(l->vals[j], info.cache, v);
                        if (!nv)
                                return -ENOMEM;
                        free(l->vals[j]);
                        l->vals[j] = nv;
                }
        }

        _cleanup_close_ int mfd = root_open(r, mount, O_RDONLY | O_DIRECTORY, 0);
        if (mfd < 0)
                return mfd;
        if (mkdirat(mfd, group, 0755) < 0)
                return -errno;
        _cleanup_free_ char *text = schemata_format(&s);
        CpuSet none = {};
        k = text ? put(r, dir, "schemata", text, 0644) : -ENOMEM;
        if (k >= 0)
                k = put_group_cpus(r, mount, dir, &none);
        if (k >= 0)
                k = put(r, dir, "mode", "shareable\n", 0644);
        if (k >= 0)
                k = put(r, dir, "tasks", "", 0644);
        if (k >= 0 && exists(r, mount, "size", NULL))
                k = put(r, dir, "size", "", 0444);
        if (k >= 0)
                k = update_size(r, mount, dir, &s);
        if (k >= 0 && exists(r, mount, "mon_groups", NULL)) {
                _cleanup_free_ char *mg = path_join(dir, "mon_groups", NULL);
                k = mg ? root_mkdir_p(r, mg, 0755) : -ENOMEM;
        }
        /* mon_data: the default group's monitoring files, counting from zero. */
        _cleanup_strv_free_ char **mon = NULL;
        _cleanup_free_ char *pattern = path_join(mount, "mon_data/*/*", NULL);
        if (k >= 0)
                k = pattern ? root_glob(r, pattern, &mon) : -ENOMEM;
        for (char **m = mon; k >= 0 && m && *m; m++) {
                _cleanup_free_ char *target = path_join(dir, *m + strlen(mount) + 1, NULL);
                if (!target) {
                        k = -ENOMEM;
                        break;
                }
                char *slash = strrchr(target, '/');
                *slash = 0;
                k = root_mkdir_p(r, target, 0755);
                if (k >= 0)
                        k = put(r, target, slash + 1, "0\n", 0444);
        }
        if (k < 0) {
                (void) remove_tree(r, dir);
                return k;
        }
        set_status(r, mount, "ok");
        return 0;
}

int sim_resctrl_rmdir(Root *r, const char *mount, const char *group) {
        _cleanup_free_ char *dir = path_join(mount, group, NULL);
        CpuSet mine = {}, def = {};
        _cleanup_(ids_done) Ids tasks = {}, dtasks = {};
        int k;

        if (!dir)
                return -ENOMEM;
        if (!root_is_dir(r, dir))
                return -ENOENT;
        /* rdtgroup_rmdir_ctrl(): CPUs and tasks go back to the default group. */
        (void) get_set(r, dir, "cpus_list", NULL, &mine);
        (void) get_set(r, mount, "cpus_list", NULL, &def);
        cpu_set_or(&def, &mine);
        k = put_group_cpus(r, mount, mount, &def);
        if (k >= 0)
                k = get_ids(r, dir, "tasks", &tasks);
        if (k >= 0)
                k = get_ids(r, mount, "tasks", &dtasks);
        for (size_t i = 0; k >= 0 && i < tasks.n; i++)
                k = ids_add(&dtasks, tasks.v[i]);
        if (k >= 0 && tasks.n > 0)
                k = put_ids(r, mount, "tasks", &dtasks);
        if (k >= 0)
                k = remove_tree(r, dir);
        if (k >= 0)
                set_status(r, mount, "ok");
        return k;
}

static int write_schemata(Root *r, const char *mount, const char *g, const char *dir, const char *value) {
        _cleanup_strv_free_ char **groups = NULL;
        _cleanup_(schemata_done) Schemata s = {}, in = {};
        int k;

        k = resctrl_groups(r, mount, &groups);
        if (k >= 0)
                k = group_schemata(r, mount, g, &s);
        if (k < 0)
                return k;
        if (!strchr(value, ':') || !strchr(value, '=') || schemata_parse(value, &in) < 0 || in.n != 1) {
                set_status(r, mount, "Missing ':' or '=' in \"%s\"", value);
                return -EINVAL;
        }
        SchemaLine *want = &in.l[0], *line = schemata_find(&s, want->name);
        if (!line) {
                set_status(r, mount, "Unknown or unsupported resource name '%s'", want->name);
                return -EINVAL;
        }
        ResInfo info;
        res_info(r, mount, want->name, &info);
        bool self_excl = group_exclusive(r, mount, g);

        /* Everything is checked before anything changes (rdtgroup_schemata_write()). */
        for (size_t j = 0; j < want->n; j++) {
                const char *v = want->vals[j];
                unsigned id = want->ids[j];
                char *end;
                int d = line_domain(line, id);
                if (d < 0) {
                        set_status(r, mount, "Unknown domain %u for %s", id, want->name);
                        return -EINVAL;
                }
                while (*v == ' ')
                        v++;
                if (info.cache) {
                        errno = 0;
                        uint64_t m = strtoull(v, &end, 16);
                        if (!*v || *end || errno) {
                                set_status(r, mount, "Non-hex character in the mask %s", v);
                                return -EINVAL;
                        }
                        if ((info.min_bits > 0 && m == 0) || (m & ~info.cbm)) {
                                set_status(r, mount, "Mask out of range");
                                return -EINVAL;
                        }
                        if (!info.sparse && !mask_contiguous(m)) {
                                set_status(r, mount, "The mask %llx has non-consecutive 1-bits",
                                           (unsigned long long) m);
                                return -EINVAL;
                        }
                        if ((unsigned) __builtin_popcountll(m) < info.min_bits) {
                                set_status(r, mount, "Need at least %u bits in the mask", info.min_bits);
                                return -EINVAL;
                        }
                        if (overlaps(r, mount, groups, g, want->name, id, m, true)) {
                                set_status(r, mount, "Overlaps with exclusive group");
                                return -EINVAL;
                        }
                        if (self_excl && overlaps(r, mount, groups, g, want->name, id, m, false)) {
                                set_status(r, mount, "Overlaps with other group");
                                return -EINVAL;
                        }
                } else {
                        errno = 0;
                        unsigned long bw = strtoul(v, &end, 10);
                        if (!*v || *end || errno) {
                                set_status(r, mount, "Non-decimal digit in MB value %s", v);
                                return -EINVAL;
                        }
                        if (info.max_bw && (bw < info.min_bw || bw > info.max_bw)) {
                                set_status(r, mount, "MB value %lu out of range [%u,%u]", bw, info.min_bw, info.max_bw);
                                return -EINVAL;
                        }
                }
        }
        for (size_t j = 0; j < want->n; j++) {
                int d = line_domain(line, want->ids[j]);
                uint64_t v = info.cache ? strtoull(want->vals[j], NULL, 16) : strtoull(want->vals[j], NULL, 10);
                if (!info.cache && info.gran > 1) /* bw_validate(): rounded up to the granularity */
                        v = (v + info.gran - 1) / info.gran * info.gran;
                char *nv = format_value(line->vals[d], info.cache, v);
                if (!nv)
                        return -ENOMEM;
                free(line->vals[d]);
                line->vals[d] = nv;
        }
        _cleanup_free_ char *text = schemata_format(&s);
        k = text ? put(r, dir, "schemata", text, 0644) : -ENOMEM;
        return k < 0 ? k : update_size(r, mount, dir, &s);
}

/* cpus_ctrl_write(): a group takes its CPUs from every other group; CPUs it drops return to the
 * default group, which itself cannot drop any. */
static int write_cpus(Root *r, const char *mount, const char *g, const char *value) {
        _cleanup_strv_free_ char **groups = NULL;
        CpuSet want, old = {};
        int k;

        if (cpu_set_parse_list(value, &want, NULL) < 0) {
                set_status(r, mount, "Bad CPU list/mask");
                return -EINVAL;
        }
        k = resctrl_groups(r, mount, &groups);
        if (k < 0)
                return k;
        _cleanup_free_ char *dir = path_join(mount, g, NULL);
        if (!dir)
                return -ENOMEM;
        (void) get_set(r, dir, "cpus_list", NULL, &old);
        if (!*g && !cpu_set_is_subset(&old, &want)) {
                set_status(r, mount, "Can't drop CPUs from default group");
                return -EINVAL;
        }
        CpuSet dropped = old;
        cpu_set_andnot(&dropped, &want);
        for (char **o = groups; *o; o++) {
                if (streq(*o, g))
                        continue;
                _cleanup_free_ char *od = path_join(mount, *o, NULL);
                CpuSet c = {};
                if (!od)
                        return -ENOMEM;
                (void) get_set(r, od, "cpus_list", NULL, &c);
                CpuSet n = c;
                cpu_set_andnot(&n, &want);
                if (!**o)
                        cpu_set_or(&n, &dropped);
                if (!cpu_set_equal(&n, &c) && (k = put_group_cpus(r, mount, od, &n)) < 0)
                        return k;
        }
        return put_group_cpus(r, mount, dir, &want);
}

/* rdtgroup_mode_write(): exclusive only while no other group (the default one included) and no
 * shareable bit overlaps the group's ways. */
static int write_mode(Root *r, const char *mount, const char *g, const char *dir, const char *value) {
        if (!streq(value, "shareable") && !streq(value, "exclusive")) {
                set_status(r, mount, "Unknown or unsupported mode");
                return -EINVAL;
        }
        if (streq(value, "exclusive")) {
                _cleanup_strv_free_ char **groups = NULL;
                _cleanup_(schemata_done) Schemata s = {};
                bool has_cache = false;
                int k = resctrl_groups(r, mount, &groups);
                if (k >= 0)
                        k = group_schemata(r, mount, g, &s);
                if (k < 0)
                        return k;
                for (size_t i = 0; i < s.n; i++) {
                        ResInfo info;
                        res_info(r, mount, s.l[i].name, &info);
                        if (!info.cache)
                                continue;
                        has_cache = true;
                        for (size_t j = 0; j < s.l[i].n; j++) {
                                uint64_t m = strtoull(s.l[i].vals[j], NULL, 16);
                                if ((m & info.shareable) ||
                                    overlaps(r, mount, groups, g, s.l[i].name, s.l[i].ids[j], m, false)) {
                                        set_status(r, mount, "Schemata overlaps");
                                        return -EINVAL;
                                }
                        }
                }
                if (!has_cache) {
                        set_status(r, mount, "Cannot be exclusive without CAT/CDP");
                        return -EINVAL;
                }
        }
        return putf(r, dir, "mode", 0644, "%s\n", value);
}

int sim_resctrl_write(Root *r, const char *mount, const char *group, const char *file, const char *value) {
        const char *g = group ? group : "";
        _cleanup_free_ char *dir = path_join(mount, g, NULL);
        int k;

        if (!dir)
                return -ENOMEM;
        if (!exists(r, dir, file, NULL))
                return -ENOENT;
        if (streq(file, "schemata"))
                k = write_schemata(r, mount, g, dir, value);
        else if (streq(file, "cpus_list"))
                k = write_cpus(r, mount, g, value);
        else if (streq(file, "mode"))
                k = write_mode(r, mount, g, dir, value);
        else
                k = putf(r, dir, file, 0644, "%s\n", value);
        if (k >= 0)
                set_status(r, mount, "ok");
        return k;
}
