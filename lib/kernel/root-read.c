/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Reading the root's files: whole, a line, a number or a CPU set, and the read cache that answers
 * from files read together beforehand (root_cache_fill). */
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "root.h"
#include "strv.h"

static const char *skip_slashes(const char *rel) {
        while (*rel == '/')
                rel++;
        return rel;
}

int root_read_fd(int fd, char **ret, size_t *ret_size) {
        size_t cap = 4096, len = 0;
        _cleanup_free_ char *buf = NULL;
        char small[4096];

        /* Most knob files are a line: one read into the stack, one exact allocation. */
        ssize_t first;
        do
                first = read(fd, small, sizeof(small));
        while (first < 0 && errno == EINTR);
        if (first < 0)
                return -errno;
        if ((size_t) first < sizeof(small)) {
                ssize_t more;
                do
                        more = read(fd, small + first, sizeof(small) - (size_t) first);
                while (more < 0 && errno == EINTR);
                if (more == 0) {
                        buf = malloc((size_t) first + 1);
                        if (!buf)
                                return -ENOMEM;
                        memcpy(buf, small, (size_t) first);
                        buf[first] = 0;
                        if (ret_size)
                                *ret_size = (size_t) first;
                        *ret = TAKE_PTR(buf);
                        return 0;
                }
                if (more < 0)
                        return -errno;
                first += more;
        }
        struct stat st;
        if (fstat(fd, &st) >= 0 && S_ISREG(st.st_mode) && (size_t) st.st_size >= (size_t) first)
                /* The file, its NUL and a byte for the read that says end of file: a file that
                 * does not grow is never reallocated. sysfs says 4096, procfs says 0: both fine. */
                cap = (size_t) st.st_size + 2;
        cap = MAX(cap, (size_t) first * 2 + 1);
        buf = malloc(cap);
        if (!buf)
                return -ENOMEM;
        memcpy(buf, small, (size_t) first);
        len = (size_t) first;
        for (;;) {
                if (cap - len < 2) {
                        cap *= 2;
                        char *n = realloc(buf, cap);
                        if (!n)
                                return -ENOMEM;
                        buf = n;
                }
                ssize_t k = read(fd, buf + len, cap - len - 1);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                len += (size_t) k;
        }
        buf[len] = 0;
        if (ret_size)
                *ret_size = len;
        *ret = TAKE_PTR(buf);
        return 0;
}

/* ---- the read cache (root_cache_fill) ---- */

typedef struct RootCacheEntry {
        char *rel;
        char *text; /* NULL: the read failed with error */
        size_t size;
        int error;
        bool kept; /* else: not kept, read from the file */
} RootCacheEntry;

typedef struct RootCache {
        RootCacheEntry *entries; /* sorted by rel */
        size_t n;
} RootCache;

/* Batches of this many files, each read into a buffer of this size. */
#define CACHE_BATCH ROOT_BATCH
#define CACHE_BUF 1024U

static int cache_entry_cmp(const void *a, const void *b) {
        return strcmp(((const RootCacheEntry *) a)->rel, ((const RootCacheEntry *) b)->rel);
}

void root_cache_drop(Root *r) {
        if (!r->cache)
                return;
        for (size_t i = 0; i < r->cache->n; i++) {
                free(r->cache->entries[i].rel);
                free(r->cache->entries[i].text);
        }
        free(r->cache->entries);
        free(r->cache);
        r->cache = NULL;
}

int root_cache_fill(Root *r, char * const *rels, size_t n) {
        root_cache_drop(r);
        RootCache *c = calloc(1, sizeof(RootCache));
        if (!c)
                return -ENOMEM;
        c->entries = calloc(MAX(n, (size_t) 1), sizeof(RootCacheEntry));
        if (!c->entries) {
                free(c);
                return -ENOMEM;
        }
        r->cache = c;
        for (size_t i = 0; i < n; i++) {
                if (!rels[i])
                        continue;
                c->entries[c->n].rel = strdup(skip_slashes(rels[i]));
                if (!c->entries[c->n].rel) {
                        root_cache_drop(r);
                        return -ENOMEM;
                }
                c->n++;
        }
        qsort(c->entries, c->n, sizeof(RootCacheEntry), cache_entry_cmp);
        size_t kept = 0; /* without duplicates */
        for (size_t i = 0; i < c->n; i++) {
                if (kept > 0 && streq(c->entries[kept - 1].rel, c->entries[i].rel)) {
                        free(c->entries[i].rel);
                        continue;
                }
                c->entries[kept++] = c->entries[i];
        }
        c->n = kept;

        size_t batch = MIN(c->n, (size_t) CACHE_BATCH);
        _cleanup_free_ RootReadItem *items = calloc(MAX(batch, (size_t) 1), sizeof(RootReadItem));
        _cleanup_free_ char *bufs = malloc(MAX(batch, (size_t) 1) * CACHE_BUF);
        if (!items || !bufs) {
                root_cache_drop(r);
                return -ENOMEM;
        }
        for (size_t first = 0; first < c->n; first += CACHE_BATCH) {
                size_t m = MIN(c->n - first, (size_t) CACHE_BATCH);
                for (size_t i = 0; i < m; i++)
                        items[i] = (RootReadItem) {
                                .rel = c->entries[first + i].rel,
                                .buf = bufs + i * CACHE_BUF,
                                .size = CACHE_BUF,
                        };
                int k = root_read_many(r, -EBADF, items, m);
                if (k < 0) {
                        root_cache_drop(r);
                        return k;
                }
                for (size_t i = 0; i < m; i++) {
                        RootCacheEntry *e = &c->entries[first + i];
                        /* A file that filled the buffer may hold more: not kept. Nor is one that
                         * could not be read for a reason a second read may not have (EINTR…):
                         * only a missing file is kept as such. */
                        if (items[i].result >= 0 && (size_t) items[i].result < CACHE_BUF - 1) {
                                e->text = malloc((size_t) items[i].result + 1);
                                if (!e->text) {
                                        root_cache_drop(r);
                                        return -ENOMEM;
                                }
                                memcpy(e->text, items[i].buf, (size_t) items[i].result + 1);
                                e->size = (size_t) items[i].result;
                                e->kept = true;
                        } else if (items[i].result == -ENOENT) {
                                e->error = -ENOENT;
                                e->kept = true;
                        }
                }
        }
        return 0;
}

/* 1 and the kept text (or 0 and its error) for a kept file; -ENOKEY when it was not kept. */
static int cache_lookup(Root *r, const char *rel, char **ret, size_t *ret_size) {
        if (!r->cache)
                return -ENOKEY;
        RootCacheEntry key = { .rel = (char *) skip_slashes(rel) };
        const RootCacheEntry *e =
                bsearch(&key, r->cache->entries, r->cache->n, sizeof(RootCacheEntry), cache_entry_cmp);
        if (!e || !e->kept)
                return -ENOKEY;
        if (!e->text)
                return e->error;
        char *t = malloc(e->size + 1);
        if (!t)
                return -ENOMEM;
        memcpy(t, e->text, e->size + 1);
        *ret = t;
        if (ret_size)
                *ret_size = e->size;
        return 0;
}

int root_read_file(Root *r, const char *rel, char **ret, size_t *ret_size) {
        int c = cache_lookup(r, rel, ret, ret_size);
        if (c != -ENOKEY)
                return c;
        _cleanup_close_ int fd = root_open(r, rel, O_RDONLY, 0);
        if (fd < 0)
                return fd;
        return root_read_fd(fd, ret, ret_size);
}

static char *strip_line(char *s) {
        char *nl = strchr(s, '\n');
        if (nl)
                *nl = 0;
        size_t n = strlen(s);
        while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
                s[--n] = 0;
        char *b = s;
        while (*b == ' ' || *b == '\t')
                b++;
        if (b != s)
                memmove(s, b, strlen(b) + 1);
        return s;
}

int root_read_line(Root *r, const char *rel, char **ret) {
        char *s;
        int k = root_read_file(r, rel, &s, NULL);
        if (k < 0)
                return k;
        *ret = strip_line(s);
        return 0;
}

int root_read_linef(Root *r, char **ret, const char *fmt, ...) {
        char path[PATH_MAX];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(path, sizeof(path), fmt, ap);
        va_end(ap);
        if (n < 0 || (size_t) n >= sizeof(path))
                return -ENAMETOOLONG;
        return root_read_line(r, path, ret);
}

int root_read_uint(Root *r, const char *rel, unsigned *ret) {
        _cleanup_free_ char *s = NULL;
        int k = root_read_line(r, rel, &s);
        if (k < 0)
                return k;
        char *end;
        errno = 0;
        unsigned long v = strtoul(s, &end, 0);
        if (errno || end == s || *end || v > UINT_MAX)
                return -EINVAL;
        *ret = (unsigned) v;
        return 0;
}

int root_read_cpu_list(Root *r, const char *rel, CpuSet *ret) {
        _cleanup_free_ char *s = NULL;
        int k = root_read_line(r, rel, &s);
        if (k < 0)
                return k;
        return cpu_set_parse_list(s, ret, NULL);
}

int root_read_cpu_mask(Root *r, const char *rel, CpuSet *ret) {
        _cleanup_free_ char *s = NULL;
        int k = root_read_line(r, rel, &s);
        if (k < 0)
                return k;
        return cpu_set_parse_mask(s, ret, NULL);
}
