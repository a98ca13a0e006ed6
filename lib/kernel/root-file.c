/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The files rtpart owns whole (configuration files, drop-ins, the journal) and their directories:
 * replaced atomically through a temporary of its own, reserved, unlinked; and what a crash left of
 * a replacement removed. The ops of the same names in every table call these. */
#include <ctype.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "root.h"
#include "strv.h"

static int split_parent(const char *rel, char **ret_dir, const char **ret_base) {
        while (*rel == '/')
                rel++;
        const char *slash = strrchr(rel, '/');
        *ret_dir = slash ? strndup(rel, (size_t) (slash - rel)) : strdup(".");
        *ret_base = slash ? slash + 1 : rel;
        return *ret_dir ? 0 : -ENOMEM;
}

/* The directory rel is in, opened (an fd), and rel's last component (in rel). */
static int open_parent(Root *r, const char *rel, const char **ret_base) {
        _cleanup_free_ char *dir = NULL;
        int k = split_parent(rel, &dir, ret_base);
        if (k < 0)
                return k;
        return root_open(r, dir, O_RDONLY | O_DIRECTORY, 0);
}

int root_mkdir_p(Root *r, const char *rel, mode_t mode) {
        _cleanup_free_ char *p = strdup(rel);
        if (!p)
                return -ENOMEM;
        for (char *s = p;; s++) {
                if (*s == '/' || *s == 0) {
                        char c = *s;
                        *s = 0;
                        if (*p && !root_is_dir(r, p)) {
                                int k = r->ops->make_dir(r, p, mode);
                                if (k < 0 && k != -EEXIST)
                                        return k;
                        }
                        if (c == 0)
                                break;
                        *s = c;
                }
        }
        return 0;
}

/* ---- temporaries ----
 *
 * A file is replaced through a temporary beside it, ".#BASE.PID.tmp", or where that name is
 * taken (a file planted there in a directory others may write, a crashed run's with the same PID)
 * ".#BASE.PID-XXXXXXXX.tmp" with random hex: always a new file of this process's own, made with
 * O_EXCL, never a name someone else made. */

#define TEMP_TRIES 16

/* The temporary's name for base: the plain one at try 0, else one with a random part. */
static char *temp_name(const char *base, unsigned try) {
        char *s;
        uint32_t x = 0;
        if (try > 0 && getrandom(&x, sizeof(x), GRND_NONBLOCK) != sizeof(x))
                x = (uint32_t) random() ^ ((uint32_t) getpid() << 16) ^ try;
        int n = try == 0 ? asprintf(&s, ".#%s.%d.tmp", base, (int) getpid())
                         : asprintf(&s, ".#%s.%d-%08x.tmp", base, (int) getpid(), (unsigned) x);
        return n < 0 ? NULL : s;
}

/* Whether name is a temporary of a file whose name matches the shell pattern base, and of which
 * process (*ret_pid). */
static bool temp_parse(const char *name, const char *base, long *ret_pid) {
        size_t n = strlen(name);
        if (n < 2 + 1 + 1 + 4 || !startswith(name, ".#") || !streq(name + n - 4, ".tmp"))
                return false;
        const char *end = name + n - 4; /* the ".tmp" */
        const char *hex = end;
        while (hex > name && isxdigit((unsigned char) hex[-1]) && end - hex < 8)
                hex--;
        if (end - hex == 8 && hex > name && hex[-1] == '-')
                end = hex - 1; /* "-XXXXXXXX" */
        const char *digits = end;
        while (digits > name && isdigit((unsigned char) digits[-1]))
                digits--;
        if (digits == end || digits - name < 4 || digits[-1] != '.')
                return false;
        _cleanup_free_ char *b = strndup(name + 2, (size_t) (digits - 1 - (name + 2)));
        if (!b || !*b || fnmatch(base, b, FNM_PERIOD) != 0)
                return false;
        *ret_pid = strtol(digits, NULL, 10);
        return true;
}

/* Removes (or counts) the temporaries of base (a pattern) in the directory dir, but this
 * process's own. */
static int temporaries_in(Root *r, const char *dir, const char *base, bool remove) {
        _cleanup_close_ int dfd = root_open(r, dir, O_RDONLY | O_DIRECTORY, 0);
        if (dfd == -ENOENT || dfd == -ENOTDIR)
                return 0;
        if (dfd < 0)
                return dfd;
        int fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return -errno;
        DIR *d = fdopendir(fd);
        if (!d) {
                int k = -errno;
                close(fd);
                return k;
        }
        int removed = 0, k = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                long pid;
                if (!temp_parse(de->d_name, base, &pid) || pid == (long) getpid())
                        continue;
                if (!remove || unlinkat(dfd, de->d_name, 0) >= 0)
                        removed++;
                else if (errno != ENOENT && errno != EISDIR) {
                        k = -errno;
                        break;
                }
        }
        closedir(d);
        return k < 0 ? k : removed;
}

static int temporaries(Root *r, const char *rel, bool remove) {
        _cleanup_free_ char *dir = NULL;
        const char *base;
        int k = split_parent(rel, &dir, &base);
        if (k < 0)
                return k;
        if (!strpbrk(dir, "*?["))
                return temporaries_in(r, dir, base, remove);
        _cleanup_strv_free_ char **dirs = NULL;
        k = root_glob(r, dir, &dirs);
        if (k < 0)
                return k;
        int n = 0;
        for (char **d = dirs; d && *d; d++) {
                k = temporaries_in(r, *d, base, remove);
                if (k < 0)
                        return k;
                n += k;
        }
        return n;
}

int root_remove_temporaries(Root *r, const char *rel) {
        return temporaries(r, rel, /* remove= */ true);
}

int root_count_temporaries(Root *r, const char *rel) {
        return temporaries(r, rel, /* remove= */ false);
}

int root_file_mkdir(Root *r, const char *rel, mode_t mode) {
        const char *base;
        _cleanup_close_ int dfd = open_parent(r, rel, &base);
        if (dfd < 0)
                return dfd;
        return mkdirat(dfd, base, mode) < 0 ? -errno : 0;
}

void root_temp_done(RootTemp *t) {
        if (t->name && t->dfd >= 0)
                (void) unlinkat(t->dfd, t->name, 0);
        if (t->dfd >= 0)
                close(t->dfd);
        free(t->name);
        free(t->base);
        *t = (RootTemp) { .dfd = -EBADF };
}

/* Makes a new temporary beside base in dfd: O_EXCL, never through a symlink, a FIFO or a device
 * (O_NONBLOCK: nothing waits for a reader), and a regular file this process owns alone. */
static int temp_create(int dfd, const char *base, mode_t mode, char **ret_name) {
        for (unsigned try = 0; try < TEMP_TRIES; try++) {
                _cleanup_free_ char *name = temp_name(base, try);
                if (!name)
                        return -ENOMEM;
                int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
                                mode);
                if (fd < 0 && errno == EEXIST)
                        continue; /* someone's name: never reused */
                if (fd < 0)
                        return -errno;
                struct stat st;
                if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_nlink != 1) {
                        close(fd);
                        return -EPERM; /* not what O_EXCL made: leave it to whoever did */
                }
                *ret_name = TAKE_PTR(name);
                return fd;
        }
        return -EEXIST;
}

static int write_all(int fd, const char *data, size_t size) {
        for (size_t done = 0; done < size;) {
                ssize_t n = write(fd, data + done, size - done);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                done += (size_t) n;
        }
        return 0;
}

int root_file_replace_begin(Root *r, const char *rel, const char *data, size_t size, mode_t mode, RootTemp *ret) {
        _cleanup_(root_temp_done) RootTemp t = { .dfd = -EBADF };
        const char *base;
        int k;
        t.dfd = open_parent(r, rel, &base);
        if (t.dfd < 0)
                return t.dfd;
        t.base = strdup(base);
        if (!t.base)
                return -ENOMEM;
        _cleanup_close_ int fd = temp_create(t.dfd, base, mode, &t.name);
        if (fd < 0)
                return fd;
        k = write_all(fd, data, size);
        if (k >= 0 && (fchmod(fd, mode) < 0 || fsync(fd) < 0))
                k = -errno;
        if (k < 0)
                return k; /* the temporary goes with t */
        *ret = t;
        t = (RootTemp) { .dfd = -EBADF };
        return 0;
}

int root_file_replace_commit(RootTemp *t) {
        if (!t->name)
                return -EINVAL;
        if (renameat(t->dfd, t->name, t->dfd, t->base) < 0)
                return -errno; /* the temporary goes with root_temp_done() */
        free(t->name);
        t->name = NULL;
        return fsync(t->dfd) < 0 ? -errno : 0;
}

int root_file_replace(Root *r, const char *rel, const char *data, size_t size, mode_t mode) {
        _cleanup_(root_temp_done) RootTemp t = { .dfd = -EBADF };
        int k = root_file_replace_begin(r, rel, data, size, mode, &t);
        return k < 0 ? k : root_file_replace_commit(&t);
}

int root_file_reserve(Root *r, const char *rel, size_t size) {
        const char *base;
        _cleanup_close_ int dfd = open_parent(r, rel, &base);
        if (dfd < 0)
                return dfd;
        /* A new file of its own, as for a temporary: one left at the name (a crashed run's, or
         * planted) is removed first. */
        int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
        _cleanup_close_ int fd = openat(dfd, base, flags, 0600);
        if (fd < 0 && errno == EEXIST && unlinkat(dfd, base, 0) >= 0)
                fd = openat(dfd, base, flags, 0600);
        if (fd < 0)
                return -errno;
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid())
                return -EPERM;
        /* posix_fallocate() returns the errno; where the filesystem cannot preallocate, glibc
         * writes the blocks itself. */
        int k = size > 0 ? posix_fallocate(fd, 0, (off_t) size) : 0;
        if (k != 0) {
                (void) unlinkat(dfd, base, 0);
                return -k;
        }
        return 0;
}

static int unlink_in_parent(Root *r, const char *rel, int flags) {
        const char *base;
        _cleanup_close_ int dfd = open_parent(r, rel, &base);
        if (dfd < 0)
                return dfd;
        return unlinkat(dfd, base, flags) < 0 ? -errno : 0;
}

int root_file_unlink(Root *r, const char *rel) {
        return unlink_in_parent(r, rel, 0);
}

int root_file_rmdir(Root *r, const char *rel) {
        return unlink_in_parent(r, rel, AT_REMOVEDIR);
}

int root_write_file_atomic(Root *r, const char *rel, const char *data, size_t size, mode_t mode) {
        root_cache_drop(r);
        _cleanup_free_ char *dir = NULL;
        const char *base;
        int k = split_parent(rel, &dir, &base);
        if (k < 0)
                return k;
        k = root_mkdir_p(r, dir, 0755);
        if (k < 0)
                return k;
        return r->ops->replace_file(r, rel, data, size, mode);
}

int root_reserve_file(Root *r, const char *rel, size_t size) {
        return r->ops->reserve_file(r, rel, size);
}

int root_unlink(Root *r, const char *rel) {
        root_cache_drop(r);
        return r->ops->unlink_file(r, rel);
}

int root_rmdir(Root *r, const char *rel) {
        root_cache_drop(r);
        return r->ops->remove_dir(r, rel);
}
