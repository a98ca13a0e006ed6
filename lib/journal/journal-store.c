/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The journal's directory, opened once per command: its file read (only if rtpart may trust it) and
 * replaced, its lock, the reserve beside it, what a crash left there, and what is kept beside it. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "journal-internal.h"
#include "strv.h"

#define JOURNAL_FILE "state.json"
/* The journal's reserve: see journal_store_reserve(). */
#define RESERVE_NAME ".#state.json.reserve"

struct JournalStore {
        Root *root;    /* where the directory is: the root, or the --state-dir root (borrowed) */
        char *dir;     /* root-relative: JOURNAL_DIR, or "." in a --state-dir */
        char *file;    /* dir/state.json */
        char *reserve; /* dir/RESERVE_NAME */
        char *display; /* the file as the user names it */
        char *display_dir;
        int lock_fd; /* -EBADF: not locked */
};

static char *path_in(const char *dir, const char *name) {
        char *s;
        if (streq(dir, "."))
                return strdup(name);
        return asprintf(&s, "%s/%s", dir, name) < 0 ? NULL : s;
}

int journal_store_open(Root *root, JournalStore **ret) {
        _cleanup_(journal_store_freep) JournalStore *s = calloc(1, sizeof(JournalStore));
        if (!s)
                return -ENOMEM;
        s->lock_fd = -EBADF;
        s->root = root->state ?: root;
        s->dir = strdup(root->state ? "." : JOURNAL_DIR);
        if (!s->dir)
                return -ENOMEM;
        s->file = path_in(s->dir, JOURNAL_FILE);
        s->reserve = path_in(s->dir, RESERVE_NAME);
        if (!s->file || !s->reserve)
                return -ENOMEM;
        s->display = root_display_path(s->root, s->file);
        s->display_dir = root_display_path(s->root, s->dir);
        if (!s->display || !s->display_dir)
                return -ENOMEM;
        *ret = TAKE_PTR(s);
        return 0;
}

JournalStore *journal_store_free(JournalStore *s) {
        if (!s)
                return NULL;
        journal_store_unlock(s);
        free(s->dir);
        free(s->file);
        free(s->reserve);
        free(s->display);
        free(s->display_dir);
        free(s);
        return NULL;
}

Root *journal_store_root(const JournalStore *s) {
        return s->root;
}

const char *journal_store_dir(const JournalStore *s) {
        return s->dir;
}

const char *journal_store_display(const JournalStore *s) {
        return s->display;
}

const char *journal_store_display_dir(const JournalStore *s) {
        return s->display_dir;
}

char *journal_store_path(const JournalStore *s, const char *name) {
        return path_in(s->dir, name);
}

/* ---- trust ---- */

/* Whether the file open as fd (st its fstat) is one rtpart may take as its journal or lock: a
 * regular file, owned by root or by this process's user, which no one else may write. 0, or
 * -EBADMSG and e says what is wrong and the fix. */
static int check_trusted(const char *display, const struct stat *st, Error *e) {
        const char *fix = "if rtpart made it, give it back to root (chown root:root, chmod 0644); else remove it "
                          "and apply the profile again";
        if (!S_ISREG(st->st_mode))
                return error_set(e, -EBADMSG, display, NULL,
                                 "is not a regular file (%s): rtpart reads no journal from it; remove it and apply "
                                 "the profile again",
                                 S_ISFIFO(st->st_mode)           ? "a FIFO"
                                         : S_ISDIR(st->st_mode)  ? "a directory"
                                         : S_ISSOCK(st->st_mode) ? "a socket"
                                                                 : "a device");
        /* Root's journal is root's; a --root tree of a user's own, run as that user, is theirs. */
        if (st->st_uid != 0 && st->st_uid != geteuid())
                return error_set(e, -EBADMSG, display, NULL,
                                 "is owned by uid %u, neither root nor the user running rtpart: rtpart does not trust "
                                 "it; %s",
                                 (unsigned) st->st_uid, fix);
        if (st->st_mode & 0022)
                return error_set(e, -EBADMSG, display, NULL,
                                 "may be written by %s (mode %04o): rtpart does not trust it; %s",
                                 st->st_mode & 0002 ? "anyone" : "its group", (unsigned) (st->st_mode & 07777), fix);
        return 0;
}

/* Opens name (in the directory) to read, never blocking (a FIFO planted there) nor through a
 * symlink, and checks it may be trusted. -ENOENT when there is none. */
static int open_trusted(const JournalStore *s, const char *rel, int flags, Error *e) {
        _cleanup_free_ char *display = root_display_path(s->root, rel);
        if (!display)
                return -ENOMEM;
        _cleanup_close_ int fd = root_open(s->root, rel, flags | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY, 0600);
        if (fd == -ELOOP)
                return error_set(e, -EBADMSG, display, NULL,
                                 "is a symbolic link: rtpart reads no journal through one; remove it and apply the "
                                 "profile again");
        if (fd == -ENXIO) /* a FIFO opened to write, with no reader */
                return error_set(e, -EBADMSG, display, NULL, "is a FIFO: remove it and apply the profile again");
        if (fd < 0)
                return fd;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        int k = check_trusted(display, &st, e);
        if (k < 0)
                return k;
        /* Reads and writes wait as on any file from here on. */
        if (fcntl(fd, F_SETFL, 0) < 0)
                return -errno;
        return TAKE_FD(fd);
}

/* ---- the lock ---- */

int journal_store_lock(JournalStore *s, bool wait, Error *e) {
        if (s->lock_fd >= 0)
                return 0;
        _cleanup_free_ char *lock = path_in(s->dir, "lock");
        if (!lock)
                return -ENOMEM;
        int k = root_mkdir_p(s->root, s->dir, 0755);
        if (k < 0)
                return k;
        _cleanup_close_ int fd = open_trusted(s, lock, O_RDWR | O_CREAT, e);
        if (fd < 0)
                return fd;
        if (flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB)) < 0)
                return -errno;
        s->lock_fd = TAKE_FD(fd);
        return 0;
}

void journal_store_unlock(JournalStore *s) {
        if (s && s->lock_fd >= 0) {
                close(s->lock_fd);
                s->lock_fd = -EBADF;
        }
}

void journal_store_unlockp(JournalStore **s) {
        if (*s)
                journal_store_unlock(*s);
}

bool journal_store_locked(const JournalStore *s) {
        return s->lock_fd >= 0;
}

/* ---- the file ---- */

/* The bytes of rel in the directory when rtpart may trust it; NULL when there is no such file. */
static int read_trusted(JournalStore *s, const char *rel, char **ret_text, size_t *ret_size, Error *e) {
        _cleanup_close_ int fd = open_trusted(s, rel, O_RDONLY, e);
        char *text = NULL;
        size_t size = 0;
        if (fd < 0 && fd != -ENOENT)
                return fd;
        if (fd >= 0) {
                int k = root_read_fd(fd, &text, &size);
                if (k < 0)
                        return k;
        }
        *ret_text = text;
        if (ret_size)
                *ret_size = size;
        return 0;
}

int journal_store_read(JournalStore *s, char **ret_text, size_t *ret_size, Error *e) {
        return read_trusted(s, s->file, ret_text, ret_size, e);
}

int journal_store_load_if_changed(JournalStore *s, uint64_t unless_digest, Journal **ret, Error *e) {
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        int k = journal_store_read(s, &text, &size, e);
        if (k < 0)
                return k;
        /* Hashed once: to compare with the journal held, and as the new one's digest. */
        uint64_t digest = journal_digest(strempty(text), text ? size : 0);
        if (unless_digest != 0 && digest == unless_digest) {
                *ret = NULL;
                return 0;
        }
        k = journal_parse_digested(text, size, digest, s->display, ret, e);
        return k < 0 ? k : 1;
}

int journal_store_load(JournalStore *s, Journal **ret, Error *e) {
        int k = journal_store_load_if_changed(s, 0, ret, e);
        return k < 0 ? k : 0;
}

bool journal_store_transaction_open(JournalStore *s) {
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        if (journal_store_read(s, &text, &size, NULL) < 0 || !text)
                return false;
        /* rtpart's writers (journal_format(), and indented jansson before it) begin every top-level
         * member on a line of its own after one space, nested ones deeper; a string holds no raw
         * newline. So a member "transaction" there is the document's own, and when it is the one
         * such line and null, no transaction is open: known without parsing the rest. Anything
         * else (another writer's layout) is parsed. */
        static const char key[] = "\n \"transaction\": ";
        const char *at = memmem(text, size, key, strlen(key));
        if (at && startswith(at + strlen(key), "null") &&
            !memmem(at + 1, size - (size_t) (at + 1 - text), key, strlen(key)))
                return false;
        _cleanup_(json_decrefp) json_t *doc = json_loadb(text, size, 0, NULL);
        return json_is_object(json_object_get(doc, "transaction"));
}

int journal_store_write(JournalStore *s, const char *text, size_t size) {
        int k = root_mkdir_p(s->root, s->dir, 0755);
        if (k < 0)
                return k;
        return root_write_file_atomic(s->root, s->file, text, size, 0644);
}

int journal_store_save(JournalStore *s, const Journal *j) {
        _cleanup_free_ char *text = NULL;
        size_t size;
        int k = journal_format(j, &text, &size);
        if (k < 0)
                return k;
        return journal_store_write(s, text, size);
}

/* ---- what is kept beside it ---- */

int journal_store_read_beside(JournalStore *s, const char *name, char **ret_text, size_t *ret_size, Error *e) {
        _cleanup_free_ char *rel = path_in(s->dir, name);
        if (!rel)
                return -ENOMEM;
        return read_trusted(s, rel, ret_text, ret_size, e);
}

int journal_store_write_beside(JournalStore *s, const char *name, const char *text, size_t size) {
        _cleanup_free_ char *rel = path_in(s->dir, name);
        if (!rel)
                return -ENOMEM;
        int k = root_mkdir_p(s->root, s->dir, 0755);
        if (k < 0)
                return k;
        return root_write_file_atomic(s->root, rel, text, size, 0644);
}

/* ---- the reserve and what a crash leaves ---- */

int journal_store_reserve(JournalStore *s, size_t size) {
        int k = root_mkdir_p(s->root, s->dir, 0755);
        if (k < 0)
                return k;
        return root_reserve_file(s->root, s->reserve, size);
}

bool journal_store_release(JournalStore *s) {
        if (!root_exists(s->root, s->reserve))
                return false;
        return root_unlink(s->root, s->reserve) >= 0;
}

/* What a crash left in the directory: the temporaries of the journal and of what is kept beside
 * it (a directory deep), and the reserve; removed, or with !remove counted. */
static int leftovers(JournalStore *s, bool remove) {
        _cleanup_free_ char *every = path_in(s->dir, "*"), *below = path_in(s->dir, "*/*");
        if (!every || !below)
                return -ENOMEM;
        int n = 0;
        for (const char *p = every; p; p = p == every ? below : NULL) {
                int k = remove ? root_remove_temporaries(s->root, p) : root_count_temporaries(s->root, p);
                if (k > 0) /* one that cannot be removed (an immutable directory) stops no other */
                        n += k;
        }
        if (!remove)
                return n + root_exists(s->root, s->reserve);
        return n + journal_store_release(s);
}

int journal_store_remove_temporaries(JournalStore *s) {
        return leftovers(s, /* remove= */ true);
}

bool journal_store_has_leftovers(JournalStore *s) {
        return leftovers(s, /* remove= */ false) > 0;
}
