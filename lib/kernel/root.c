/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "root.h"
#include "strv.h"

struct rtpart_open_how {
        uint64_t flags;
        uint64_t mode;
        uint64_t resolve;
};

/* Symlinks followed in one resolution, as the kernel allows (MAXSYMLINKS). */
#define ROOT_MAX_HOPS 40

int root_new_full(const char *path, RootResolve resolve, Root **ret) {
        _cleanup_free_ Root *r = NULL;
        _cleanup_close_ int fd = -EBADF;

        if (!path || !*path)
                path = "/";
        fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->path = strdup(path);
        if (!r->path)
                return -ENOMEM;
        char real[PATH_MAX];
        r->is_host = realpath(path, real) && streq(real, "/");
        r->resolve = resolve;
        /* The kernel answers only for its own "/"; any other tree gets the tree table, which the
         * simulator replaces in the programs linked with it. */
        r->ops = r->is_host ? &root_kernel_ops : root_tree_ops();
        r->fd = TAKE_FD(fd);
        *ret = TAKE_PTR(r);
        return 0;
}

int root_new(const char *path, Root **ret) {
        return root_new_full(path, ROOT_RESOLVE_KERNEL, ret);
}

Root *root_free(Root *r) {
        if (!r)
                return NULL;
        root_cache_drop(r);
        if (r->fd >= 0)
                close(r->fd);
        root_free(r->state);
        free(r->real_path);
        free(r->path);
        free(r);
        return NULL;
}

int root_set_state_dir(Root *r, const char *dir) {
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        Root *s;
        int k = root_new_full(dir, r->resolve, &s);
        if (k < 0)
                return k;
        s->is_host = false;
        /* The journal only: files, nothing a kernel acts on; the tree's table all the same, so that
         * a simulator wrapping the file ops sees the journal's writes too. */
        s->ops = root_tree_ops();
        root_free(r->state);
        r->state = s;
        return 0;
}

/* The directories a walk has entered below its start, as O_PATH fds: ".." pops one, so that it
 * never goes above the start whatever the tree's own ".." entries say. */
typedef struct WalkStack {
        int *fds;
        size_t n, cap;
} WalkStack;

static int walk_top(const WalkStack *s, int start) {
        return s->n > 0 ? s->fds[s->n - 1] : start;
}

static void walk_pop(WalkStack *s) {
        if (s->n > 0)
                close(s->fds[--s->n]);
}

static void walk_done(WalkStack *s) {
        while (s->n > 0)
                walk_pop(s);
        free(s->fds);
        s->fds = NULL;
        s->cap = 0;
}

static int walk_push(WalkStack *s, int fd) {
        if (GROW_ARRAY(s->fds, s->cap, s->n, 16) < 0)
                return -ENOMEM;
        s->fds[s->n++] = fd;
        return 0;
}

/* What openat2 does, in user space, for kernels without it (< 5.6): resolves rel from start one
 * component at a time with O_PATH|O_NOFOLLOW, reads every symlink and resolves its target itself.
 * in_root (RESOLVE_IN_ROOT): ".." stops at start and an absolute target starts over from start.
 * Otherwise (RESOLVE_BENEATH): either is an escape, EXDEV. Only the last component is opened with
 * the caller's flags, and with O_NOFOLLOW: a symlink swapped in meanwhile is ELOOP, not followed. */
static int walk_open(int start, const char *rel, int flags, mode_t mode, bool in_root) {
        _cleanup_(walk_done) WalkStack stack = {};
        _cleanup_free_ char *todo = strdup(rel);
        unsigned hops = 0;
        int k;

        if (!todo)
                return -ENOMEM;
        if (!in_root && rel[0] == '/')
                return -EXDEV;
        for (;;) {
                char *p = todo;
                while (*p == '/')
                        p++;
                if (!*p) /* nothing left: the directory the walk stands in */
                        break;
                char *slash = strchr(p, '/');
                _cleanup_free_ char *seg = slash ? strndup(p, (size_t) (slash - p)) : strdup(p);
                if (!seg)
                        return -ENOMEM;
                const char *rest = slash ? slash : "";
                bool trailing = slash && !rest[strspn(rest, "/")]; /* "dir/": must be a directory */
                bool last = !*rest || trailing;
                memmove(todo, rest, strlen(rest) + 1);

                if (streq(seg, "."))
                        continue;
                if (streq(seg, "..")) {
                        if (stack.n == 0 && !in_root)
                                return -EXDEV;
                        walk_pop(&stack);
                        continue;
                }

                int dfd = walk_top(&stack, start);
                struct stat st;
                if (fstatat(dfd, seg, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        if (errno != ENOENT || !last || !(flags & O_CREAT))
                                return -errno;
                        st.st_mode = S_IFREG; /* to be created by the open below */
                }
                if (S_ISLNK(st.st_mode) && !(last && (flags & O_NOFOLLOW) && !trailing)) {
                        char target[PATH_MAX];
                        ssize_t n = readlinkat(dfd, seg, target, sizeof(target) - 1);
                        if (n < 0)
                                return -errno;
                        target[n] = 0;
                        if (n == 0)
                                return -ENOENT;
                        if (++hops > ROOT_MAX_HOPS)
                                return -ELOOP;
                        if (target[0] == '/') {
                                if (!in_root)
                                        return -EXDEV;
                                while (stack.n > 0)
                                        walk_pop(&stack);
                        }
                        _cleanup_free_ char *joined = NULL;
                        if (asprintf(&joined, "%s%s", target, todo) < 0) /* todo is "" or "/…" */
                                return -ENOMEM;
                        free(todo);
                        todo = TAKE_PTR(joined);
                        continue;
                }
                if (last) {
                        int fd = openat(dfd, seg, flags | O_NOFOLLOW | (trailing ? O_DIRECTORY : 0), mode);
                        return fd < 0 ? -errno : fd;
                }
                if (!S_ISDIR(st.st_mode))
                        return -ENOTDIR;
                int fd = openat(dfd, seg, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0)
                        return -errno;
                k = walk_push(&stack, fd);
                if (k < 0) {
                        close(fd);
                        return k;
                }
        }
        int fd = openat(walk_top(&stack, start), ".", flags, mode);
        return fd < 0 ? -errno : fd;
}

/* openat2 with resolve flags; the kernel's errno for this file, whatever it is. Only ENOSYS (a
 * kernel before 5.6) switches this root to the walk in user space, never to an unconfined open. */
static int root_openat2(Root *r, int dirfd, const char *rel, int flags, mode_t mode, uint64_t resolve) {
        struct rtpart_open_how how = {
                .flags = (uint64_t) flags,
                .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
                .resolve = resolve,
        };
        for (unsigned attempt = 0;; attempt++) {
                int fd = (int) syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
                if (fd >= 0)
                        return fd;
                /* EAGAIN: a rename or mount raced the lookup; the kernel asks to retry. */
                if (errno == EAGAIN && attempt < 8)
                        continue;
                if (errno == ENOSYS)
                        r->resolve = ROOT_RESOLVE_USERSPACE;
                return -errno;
        }
}

static const char *skip_slashes(const char *rel) {
        while (*rel == '/')
                rel++;
        return rel;
}

/* rel as the *at() calls take it below the root: no leading '/', "." for the root itself. */
static const char *at_rel(const char *rel) {
        rel = skip_slashes(rel);
        return *rel ? rel : ".";
}

int root_open(Root *r, const char *rel, int flags, mode_t mode) {
        int fd;

        rel = at_rel(rel);
        flags |= O_CLOEXEC;
        if (r->is_host) { /* "/" has no outside: the kernel's own resolution is the confinement */
                fd = openat(r->fd, rel, flags, mode);
                return fd < 0 ? -errno : fd;
        }
        if (r->resolve == ROOT_RESOLVE_KERNEL) {
                fd = root_openat2(r, r->fd, rel, flags, mode, RESOLVE_IN_ROOT);
                if (fd != -ENOSYS)
                        return fd;
        }
        return walk_open(r->fd, rel, flags, mode, /* in_root= */ true);
}

int root_openat(Root *r, int dirfd, const char *rel, int flags) {
        flags |= O_CLOEXEC;
        if (r->is_host) {
                int fd = openat(dirfd, rel, flags);
                return fd < 0 ? -errno : fd;
        }
        /* Below a directory of the tree, a symlink may still not climb out of it: EXDEV, and the
         * caller resolves from the root instead. */
        if (r->resolve == ROOT_RESOLVE_KERNEL) {
                int fd = root_openat2(r, dirfd, rel, flags, 0, RESOLVE_BENEATH);
                if (fd != -ENOSYS)
                        return fd;
        }
        return walk_open(dirfd, rel, flags, 0, /* in_root= */ false);
}

int root_openf(Root *r, int flags, const char *fmt, ...) {
        char path[PATH_MAX];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(path, sizeof(path), fmt, ap);
        va_end(ap);
        if (n < 0 || (size_t) n >= sizeof(path))
                return -ENAMETOOLONG;
        return root_open(r, path, flags, 0);
}

int root_opendir(Root *r, const char *rel, DIR **ret) {
        int fd = root_open(r, rel, O_RDONLY | O_DIRECTORY, 0);
        if (fd < 0)
                return fd;
        DIR *d = fdopendir(fd);
        if (!d) {
                int e = errno;
                close(fd);
                return -e;
        }
        *ret = d;
        return 0;
}

int root_stat(Root *r, const char *rel, struct stat *ret) {
        if (r->is_host) /* as root_open(): the kernel's resolution, one call */
                return fstatat(r->fd, at_rel(rel), ret, 0) < 0 ? -errno : 0;
        _cleanup_close_ int fd = root_open(r, rel, O_PATH, 0);
        if (fd < 0)
                return fd;
        if (fstat(fd, ret) < 0)
                return -errno;
        return 0;
}

bool root_exists(Root *r, const char *rel) {
        if (r->is_host)
                return faccessat(r->fd, at_rel(rel), F_OK, AT_EACCESS) >= 0;
        /* The O_PATH open answers it: no fstat. */
        _cleanup_close_ int fd = root_open(r, rel, O_PATH, 0);
        return fd >= 0;
}

bool root_is_dir(Root *r, const char *rel) {
        struct stat st;
        return root_stat(r, rel, &st) >= 0 && S_ISDIR(st.st_mode);
}

static int glob_rec(Root *r, const char *base, const char *rest, char ***list) {
        const char *slash = strchr(rest, '/');
        size_t seglen = slash ? (size_t) (slash - rest) : strlen(rest);
        _cleanup_free_ char *seg = strndup(rest, seglen);
        int k;

        if (!seg)
                return -ENOMEM;
        if (!strpbrk(seg, "*?[")) {
                _cleanup_free_ char *p = NULL;
                if (asprintf(&p, "%s%s%s", base, *base ? "/" : "", seg) < 0)
                        return -ENOMEM;
                if (!slash)
                        return root_exists(r, p) ? strv_push(list, TAKE_PTR(p)) : 0;
                return glob_rec(r, p, slash + 1, list);
        }

        DIR *d;
        k = root_opendir(r, *base ? base : ".", &d);
        if (k < 0)
                return k == -ENOENT || k == -ENOTDIR ? 0 : k;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.' && seg[0] != '.')
                        continue;
                if (fnmatch(seg, de->d_name, FNM_PERIOD) != 0)
                        continue;
                _cleanup_free_ char *p = NULL;
                if (asprintf(&p, "%s%s%s", base, *base ? "/" : "", de->d_name) < 0) {
                        closedir(d);
                        return -ENOMEM;
                }
                k = slash ? glob_rec(r, p, slash + 1, list) : strv_push(list, TAKE_PTR(p));
                if (k < 0) {
                        closedir(d);
                        return k;
                }
        }
        closedir(d);
        return 0;
}

int root_glob(Root *r, const char *pattern, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        while (*pattern == '/')
                pattern++;
        int k = glob_rec(r, "", pattern, &l);
        if (k < 0)
                return k;
        strv_sort(l);
        *ret = l ? TAKE_PTR(l) : calloc(1, sizeof(char *));
        return *ret ? 0 : -ENOMEM;
}

/* The kernel's resolution of rel (an O_PATH open, confined as root_open() confines it), read back
 * through /proc/self/fd: two system calls instead of a readlink per component. -ENOKEY where that
 * cannot answer (no /proc, a missing file, a tree reached through another mount): the caller
 * walks instead. */
static int canonicalize_fd(Root *r, const char *rel, char **ret) {
        _cleanup_close_ int fd = root_open(r, rel, O_PATH, 0);
        if (fd < 0)
                return fd == -ENOMEM ? fd : -ENOKEY;
        char link[64], target[PATH_MAX];
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof(target) - 1);
        if (n <= 0 || target[0] != '/')
                return -ENOKEY;
        target[n] = 0;
        if (!r->real_path) {
                char top[PATH_MAX];
                if (!realpath(r->path, top))
                        return -ENOKEY;
                r->real_path = strdup(top);
                if (!r->real_path)
                        return -ENOMEM;
        }
        const char *top = r->real_path;
        size_t tl = streq(top, "/") ? 0 : strlen(top);
        static const char deleted[] = " (deleted)";
        if (strncmp(target, top, tl) != 0 || (target[tl] != '/' && target[tl] != 0) ||
            ((size_t) n >= sizeof(deleted) - 1 && streq(target + n - (sizeof(deleted) - 1), deleted)))
                return -ENOKEY;
        char *s = strdup(target[tl] ? target + tl + 1 : "");
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int root_canonicalize(Root *r, const char *rel, char **ret) {
        int c = canonicalize_fd(r, rel, ret);
        if (c != -ENOKEY)
                return c;

        /* Walk component by component, following symlinks inside the root. */
        _cleanup_free_ char *out = strdup("");
        _cleanup_free_ char *todo = NULL;
        unsigned hops = 0;

        while (*rel == '/')
                rel++;
        todo = strdup(rel);
        if (!out || !todo)
                return -ENOMEM;

        while (*todo) {
                char *slash = strchr(todo, '/');
                _cleanup_free_ char *seg = slash ? strndup(todo, (size_t) (slash - todo)) : strdup(todo);
                _cleanup_free_ char *rest = strdup(slash ? slash + 1 : "");
                if (!seg || !rest)
                        return -ENOMEM;
                free(todo);
                todo = TAKE_PTR(rest);

                if (!*seg || streq(seg, "."))
                        continue;
                if (streq(seg, "..")) {
                        char *p = strrchr(out, '/');
                        if (p)
                                *p = 0;
                        else
                                out[0] = 0;
                        continue;
                }
                _cleanup_free_ char *cand = NULL;
                if (asprintf(&cand, "%s%s%s", out, *out ? "/" : "", seg) < 0)
                        return -ENOMEM;
                char target[PATH_MAX];
                ssize_t n = readlinkat(r->fd, cand, target, sizeof(target) - 1);
                if (n < 0) {
                        free(out);
                        out = TAKE_PTR(cand);
                        continue;
                }
                if (++hops > 40)
                        return -ELOOP;
                target[n] = 0;
                _cleanup_free_ char *joined = NULL;
                if (asprintf(&joined, "%s%s%s", target, *todo ? "/" : "", todo) < 0)
                        return -ENOMEM;
                free(todo);
                todo = TAKE_PTR(joined);
                if (target[0] == '/')
                        out[0] = 0;
        }
        *ret = TAKE_PTR(out);
        return 0;
}

char *root_display_path(Root *r, const char *rel) {
        char *s;
        while (*rel == '/' || (rel[0] == '.' && rel[1] == '/'))
                rel += *rel == '/' ? 1 : 2;
        if (r->is_host || streq(r->path, "/"))
                return asprintf(&s, "/%s", rel) < 0 ? NULL : s;
        size_t n = strlen(r->path);
        return asprintf(&s, "%s%s%s", r->path, n && r->path[n - 1] == '/' ? "" : "/", rel) < 0 ? NULL : s;
}

bool root_is_system(Root *r) {
        return r->is_host;
}

int root_write_once(Root *r, const char *rel, int flags, const char *data) {
        _cleanup_close_ int fd = root_open(r, rel, O_WRONLY | O_NOCTTY | flags, 0);
        if (fd < 0)
                return fd;
        size_t n = strlen(data);
        ssize_t k = write(fd, data, n);
        if (k < 0)
                return -errno;
        return (size_t) k == n ? 0 : -EIO;
}

int root_read_each(Root *r, int dirfd, RootReadItem *items, size_t n) {
        for (size_t i = 0; i < n; i++) {
                RootReadItem *it = &items[i];
                _cleanup_close_ int fd =
                        dirfd >= 0 ? root_openat(r, dirfd, it->rel, O_RDONLY) : root_open(r, it->rel, O_RDONLY, 0);
                if (fd < 0) {
                        it->result = fd;
                        continue;
                }
                ssize_t k;
                do
                        k = read(fd, it->buf, it->size - 1);
                while (k < 0 && errno == EINTR);
                it->result = k < 0 ? -errno : k;
                if (k >= 0)
                        it->buf[k] = 0;
        }
        return 0;
}

int root_write_each(Root *r, RootWriteItem *items, size_t n) {
        for (size_t i = 0; i < n; i++)
                items[i].result = r->ops->write_value(r, items[i].rel, items[i].value);
        return 0;
}

int root_read_many(Root *r, int dirfd, RootReadItem *items, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!items[i].buf || items[i].size < 2)
                        return -EINVAL;
        return r->ops->read_many ? r->ops->read_many(r, dirfd, items, n) : root_read_batched(r, dirfd, items, n);
}

int root_write_many(Root *r, RootWriteItem *items, size_t n) {
        root_cache_drop(r);
        return r->ops->write_many ? r->ops->write_many(r, items, n) : root_write_each(r, items, n);
}

int root_write_value(Root *r, const char *rel, const char *value) {
        root_cache_drop(r);
        return r->ops->write_value(r, rel, value);
}

int root_mkdir_object(Root *r, RootFs fs, const char *mount, const char *name) {
        root_cache_drop(r);
        return r->ops->mkdir_object(r, fs, mount, name);
}

int root_rmdir_object(Root *r, RootFs fs, const char *mount, const char *name) {
        root_cache_drop(r);
        return r->ops->rmdir_object(r, fs, mount, name);
}

int root_write_object(Root *r, RootFs fs, const char *mount, const char *name, const char *file, const char *value) {
        root_cache_drop(r);
        return r->ops->write_object(r, fs, mount, name, file, value);
}

int root_set_affinity(Root *r, int tid, const CpuSet *cpus) {
        root_cache_drop(r);
        return root_can(r, ROOT_CAN_SCHEDULE) ? r->ops->set_affinity(r, tid, cpus) : -EOPNOTSUPP;
}

int root_set_scheduler(Root *r, int tid, unsigned policy, unsigned priority) {
        root_cache_drop(r);
        return root_can(r, ROOT_CAN_SCHEDULE) ? r->ops->set_scheduler(r, tid, policy, priority) : -EOPNOTSUPP;
}

int root_pm_qos_open(Root *r) {
        return root_can(r, ROOT_CAN_HOLD_PM_QOS) ? r->ops->pm_qos_open(r) : -EOPNOTSUPP;
}

int root_update_bootloader(Root *r, const char *command) {
        root_cache_drop(r);
        return root_can(r, ROOT_CAN_UPDATE_BOOTLOADER) ? r->ops->update_bootloader(r, command) : -EOPNOTSUPP;
}

int root_run_program(Root *r, char * const *argv, char **ret_output) {
        return root_can(r, ROOT_CAN_RUN_PROGRAMS) ? r->ops->run_program(r, argv, ret_output) : -EOPNOTSUPP;
}

int root_mount(Root *r, const char *rel, const char *fstype, const char *options) {
        root_cache_drop(r);
        return root_can(r, ROOT_CAN_MOUNT) ? r->ops->mount(r, rel, fstype, options) : -EOPNOTSUPP;
}

int root_umount(Root *r, const char *rel) {
        root_cache_drop(r);
        return root_can(r, ROOT_CAN_MOUNT) ? r->ops->umount(r, rel) : -EOPNOTSUPP;
}
