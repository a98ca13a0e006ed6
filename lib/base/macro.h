/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _pure_ __attribute__((pure))
#define _fallthrough_ __attribute__((fallthrough))
#define _likely_(x) __builtin_expect(!!(x), 1)
#define _unlikely_(x) __builtin_expect(!!(x), 0)

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* Room for one more element in the array p of cap elements, n of them used: doubles it (from
 * `initial`) when full. 0, or -ENOMEM with p and cap unchanged. */
#define GROW_ARRAY(p, cap, n, initial) \
        ({ \
                int _ga = 0; \
                if ((n) >= (cap)) { \
                        size_t _gc = (cap) ? (cap) *2 : (initial); \
                        __typeof__(p) _gp = realloc((p), _gc * sizeof(*(p))); \
                        if (_gp) { \
                                (p) = _gp; \
                                (cap) = _gc; \
                        } else \
                                _ga = -ENOMEM; \
                } \
                _ga; \
        })

#define TAKE_PTR(p) \
        ({ \
                __typeof__(p) _tp = (p); \
                (p) = NULL; \
                _tp; \
        })

#define TAKE_FD(fd) \
        ({ \
                int _tfd = (fd); \
                (fd) = -EBADF; \
                _tfd; \
        })

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline void closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                (void) close(*fd);
                errno = saved;
        }
}
#define _cleanup_close_ _cleanup_(closep)

static inline void strv_free(char **l) {
        if (!l)
                return;
        for (char **i = l; *i; i++)
                free(*i);
        free(l);
}
static inline void strv_freep(char ***l) {
        strv_free(*l);
}
#define _cleanup_strv_free_ _cleanup_(strv_freep)

#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func) \
        static inline void func##p(type *p) { \
                if (*p) \
                        (void) func(*p); \
        }

static inline bool streq(const char *a, const char *b) {
        return strcmp(a, b) == 0;
}

static inline bool streq_ptr(const char *a, const char *b) {
        if (!a || !b)
                return a == b;
        return streq(a, b);
}

static inline const char *strempty(const char *s) {
        return s ? s : "";
}

static inline bool startswith(const char *s, const char *prefix) {
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Returns negative errno from a function that sets errno and returns -1. */
#define NEG_ERRNO() (errno > 0 ? -errno : -EIO)
