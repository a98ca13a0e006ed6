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
#include "sim-internal.h"
#include "strv.h"

/* What the simulator's kernel objects share (sim-internal.h): files of the tree and task lists.
 * The objects themselves: sim-cgroup.c, sim-resctrl.c. */

/* ---- files of the tree ---- */

/* "a/b/c", leaving out NULL and empty parts. */
char *sim_path_join(const char *a, const char *b, const char *c) {
        StrBuf s = {};
        const char *parts[] = { a, b, c };
        for (size_t i = 0; i < ELEMENTSOF(parts); i++)
                if (parts[i] && *parts[i])
                        strbuf_appendf(&s, "%s%s", s.len ? "/" : "", parts[i]);
        return strbuf_steal(&s);
}

/* The whole file, or NULL if it cannot be read. */
char *sim_get(Root *r, const char *a, const char *b, const char *c) {
        _cleanup_free_ char *p = sim_path_join(a, b, c);
        char *t = NULL;
        if (!p || root_read_file(r, p, &t, NULL) < 0)
                return NULL;
        return t;
}

bool sim_get_set(Root *r, const char *a, const char *b, const char *c, CpuSet *ret) {
        _cleanup_free_ char *t = sim_get(r, a, b, c);
        return t && cpu_set_parse_list(t, ret, NULL) >= 0;
}

bool sim_exists(Root *r, const char *a, const char *b, const char *c) {
        _cleanup_free_ char *p = sim_path_join(a, b, c);
        return p && root_exists(r, p);
}

/* Replaces a file's content (creating it with `mode`); an existing file keeps its mode. */
int sim_put(Root *r, const char *dir, const char *file, const char *text, mode_t mode) {
        _cleanup_free_ char *p = sim_path_join(dir, file, NULL);
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

_printf_(5, 6) int sim_putf(Root *r, const char *dir, const char *file, mode_t mode, const char *fmt, ...) {
        _cleanup_free_ char *t = NULL;
        va_list ap;
        va_start(ap, fmt);
        int n = vasprintf(&t, fmt, ap);
        va_end(ap);
        return n < 0 ? -ENOMEM : sim_put(r, dir, file, t, mode);
}

int sim_put_list(Root *r, const char *dir, const char *file, const CpuSet *s, mode_t mode) {
        _cleanup_free_ char *l = cpu_set_format_list(s);
        return l ? sim_putf(r, dir, file, mode, "%s\n", l) : -ENOMEM;
}

/* Removes dir with everything below it (only ever a group directory rtpart created). */
int sim_remove_tree(Root *r, const char *dir) {
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
                        _cleanup_free_ char *sub = sim_path_join(dir, de->d_name, NULL);
                        k = sub ? sim_remove_tree(r, sub) : -ENOMEM;
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
int sim_list_dirs(Root *r, const char *dir, const char * const *skip, char ***ret) {
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

void sim_ids_done(SimIds *ids) {
        free(ids->v);
        *ids = (SimIds) {};
}

static int cmp_long(const void *a, const void *b) {
        long x = *(const long *) a, y = *(const long *) b;
        return x < y ? -1 : x > y;
}

int sim_ids_parse(const char *text, SimIds *ret) {
        SimIds ids = {};
        for (const char *p = text ? text : ""; *p;) {
                char *end;
                long v = strtol(p, &end, 10);
                if (end == p) {
                        p++;
                        continue;
                }
                long *m = realloc(ids.v, (ids.n + 1) * sizeof(long));
                if (!m) {
                        sim_ids_done(&ids);
                        return -ENOMEM;
                }
                ids.v = m;
                ids.v[ids.n++] = v;
                p = end;
        }
        *ret = ids;
        return 0;
}

bool sim_ids_has(const SimIds *ids, long v) {
        for (size_t i = 0; i < ids->n; i++)
                if (ids->v[i] == v)
                        return true;
        return false;
}

int sim_ids_add(SimIds *ids, long v) {
        if (sim_ids_has(ids, v))
                return 0;
        long *m = realloc(ids->v, (ids->n + 1) * sizeof(long));
        if (!m)
                return -ENOMEM;
        ids->v = m;
        ids->v[ids->n++] = v;
        qsort(ids->v, ids->n, sizeof(long), cmp_long);
        return 0;
}

void sim_ids_del(SimIds *ids, long v) {
        for (size_t i = 0; i < ids->n; i++)
                if (ids->v[i] == v) {
                        memmove(ids->v + i, ids->v + i + 1, (ids->n - i - 1) * sizeof(long));
                        ids->n--;
                        return;
                }
}

int sim_put_ids(Root *r, const char *dir, const char *file, const SimIds *ids) {
        StrBuf b = {};
        for (size_t i = 0; i < ids->n; i++)
                strbuf_appendf(&b, "%ld\n", ids->v[i]);
        _cleanup_free_ char *t = strbuf_steal(&b);
        return t ? sim_put(r, dir, file, t, 0644) : -ENOMEM;
}

int sim_get_ids(Root *r, const char *dir, const char *file, SimIds *ret) {
        _cleanup_free_ char *t = sim_get(r, dir, file, NULL);
        return sim_ids_parse(t, ret);
}

/* A thread's process and PF_* flags from proc/: the leader's own directory, or any process's
 * task/ directory for other threads (the fake trees, like procfs' readdir, list only leaders). */
int sim_task_lookup(Root *r, long tid, long *ret_tgid, unsigned *ret_flags) {
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
