/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Helpers for tests that write into fake hosts: copies on tmpfs (the fixtures have ~14k files;
 * copying them to a disk takes seconds, to /dev/shm a fraction), a snapshot of a tree to prove it
 * unchanged, the engine's apply/verify/revert on it, and the real rtpartctl binary. Header-only,
 * so that each test executable stays one source file plus test-util.c. */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "engine.h"
#include "strv.h"
#include "test-util.h"

/* A copy of the bundled host NAME (fixture_host()) on tmpfs where there is one. */
static inline char *tree_copy_host(const char *name) {
        char *dst = NULL, *prof = NULL;
        test_fixture(name, /* copy= */ true, &dst, &prof, NULL, NULL);
        test_rmtree(prof);
        free(prof);
        return dst;
}

static inline void tree_remove(const char *path) {
        test_rmtree(path);
}

/* Runs a shell command with its output captured; returns the exit status. */
static inline int tree_sh(char **ret_out, const char *fmt, ...) _printf_(2, 3);
static inline int tree_sh(char **ret_out, const char *fmt, ...) {
        _cleanup_free_ char *cmd = NULL;
        va_list ap;
        va_start(ap, fmt);
        int n = vasprintf(&cmd, fmt, ap);
        va_end(ap);
        ck_assert(n >= 0);
        FILE *f = popen(cmd, "re");
        ck_assert_ptr_nonnull(f);
        StrBuf b = {};
        char buf[4096];
        size_t k;
        while ((k = fread(buf, 1, sizeof(buf) - 1, f)) > 0) {
                buf[k] = 0;
                strbuf_append(&b, buf);
        }
        int st = pclose(f);
        char *out = strbuf_steal(&b);
        if (ret_out)
                *ret_out = out;
        else
                free(out);
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Every path of the tree but the journal (var/lib/rtpart) with its type, mode and content hash
 * (a symlink: its target), one sorted line each. */
static inline char *tree_snapshot(const char *root) {
        char *out = NULL;
        int st = tree_sh(
                &out,
                "cd '%s' && { find . -path ./var/lib/rtpart -prune -o -printf '%%p %%y %%m %%l\\n'; "
                "find . -path ./var/lib/rtpart -prune -o -type f -print0 | xargs -0 -r sha256sum; } | LC_ALL=C sort",
                root);
        ck_assert_int_eq(st, 0);
        return out;
}

/* Fails with the first lines where two snapshots differ. */
static inline void tree_assert_same(const char *before, const char *after, const char *what) {
        if (streq(before, after))
                return;
        const char *a = before, *b = after;
        while (*a && *b) {
                const char *ea = strchrnul(a, '\n'), *eb = strchrnul(b, '\n');
                if (ea - a != eb - b || strncmp(a, b, (size_t) (ea - a)) != 0)
                        ck_abort_msg("%s: trees differ at\n  before: %.*s\n  after:  %.*s", what, (int) (ea - a), a,
                                     (int) (eb - b), b);
                a = *ea ? ea + 1 : ea;
                b = *eb ? eb + 1 : eb;
        }
        ck_abort_msg("%s: trees differ at the end: before '%.200s', after '%.200s'", what, a, b);
}

/* A file of the tree, whole (NULL if missing). */
static inline char *tree_read(const char *root, const char *rel) {
        _cleanup_free_ char *p = NULL;
        char *t = NULL;
        ck_assert(asprintf(&p, "%s/%s", root, rel) >= 0);
        FILE *f = fopen(p, "re");
        if (!f)
                return NULL;
        StrBuf b = {};
        char buf[4096];
        size_t k;
        while ((k = fread(buf, 1, sizeof(buf) - 1, f)) > 0) {
                buf[k] = 0;
                strbuf_append(&b, buf);
        }
        fclose(f);
        t = strbuf_steal(&b);
        return t;
}

#define tree_assert_file(root, rel, text) \
        do { \
                _cleanup_free_ char *_t = tree_read((root), (rel)); \
                ck_assert_msg(_t, "%s is missing", (rel)); \
                ck_assert_msg(streq(_t, (text)), "%s: '%s', expected '%s'", (rel), _t, (text)); \
        } while (0)

static inline bool tree_exists(const char *root, const char *rel) {
        _cleanup_free_ char *p = NULL;
        struct stat st;
        ck_assert(asprintf(&p, "%s/%s", root, rel) >= 0);
        return lstat(p, &st) == 0;
}

/* The engine on a tree: plan a profile file and apply it. Returns apply's result (0 or the
 * failed write's negative errno); *ret (optional) gets the engine's account. */
static inline int tree_apply(const char *root_path, const char *profile, EngineResult *ret) {
        Root *root;
        Host *host;
        Profile *p = NULL;
        Resolved *r = NULL;
        _cleanup_free_ char *err = NULL;
        test_open_host(root_path, &root, &host);
        int k = test_resolve(root, host, profile, &p, &r, &err);
        ck_assert_msg(k == 0, "profile: %s", strempty(err));
        Plan *plan = NULL;
        Error pe = {};
        k = plan_build(r, root, &plan, &pe);
        ck_assert_msg(k == 0, "plan: %d", k);
        error_done(&pe);
        EngineResult res = {};
        JournalStore *journal = test_journal_locked(root);
        k = engine_apply(root, journal, host, r, plan, &res);
        journal_store_free(journal);
        if (ret)
                *ret = res;
        else
                engine_result_done(&res);
        plan_free(plan);
        resolved_free(r);
        profile_free(p);
        host_free(host);
        root_free(root);
        return k;
}

/* Verify: returns the number of drifted knobs; *ret_first (optional) names the first. */
static inline size_t tree_verify(const char *root_path, char **ret_first) {
        Root *root;
        ck_assert_int_eq(root_new(root_path, &root), 0);
        VerifyResult v = {};
        Journal *j = test_journal_load(root);
        ck_assert_int_eq(engine_verify(root, j, "", &v), 0);
        journal_free(j);
        size_t n = v.n_drift;
        if (ret_first) {
                *ret_first = NULL;
                if (n > 0)
                        ck_assert(asprintf(ret_first, "%s: expected '%s', actual '%s'", v.drift[0].knob,
                                           strempty(v.drift[0].expected), strempty(v.drift[0].actual)) >= 0);
        }
        verify_result_done(&v);
        root_free(root);
        return n;
}

static inline int tree_revert(const char *root_path) {
        Root *root;
        Host *host;
        test_open_host(root_path, &root, &host);
        EngineResult res = {};
        JournalStore *journal = test_journal_locked(root);
        int k = engine_revert(root, journal, host, &res);
        journal_store_free(journal);
        engine_result_done(&res);
        host_free(host);
        root_free(root);
        return k;
}

/* The sim build of rtpartctl (RTPARTCTL from meson: tests/sim/rtpartctl, the real program linked
 * with the kernel simulator) on the tree; returns its exit status, *ret_out (optional) its stdout
 * and stderr. */
static inline int tree_ctl(const char *root_path, char **ret_out, const char *args) {
        const char *ctl = getenv("RTPARTCTL");
        _cleanup_free_ char *def = NULL;
        if (!ctl) {
                ck_assert(asprintf(&def, "%s/tests/sim/rtpartctl", BUILD_DIR) >= 0);
                ctl = def;
        }
        return tree_sh(ret_out, "'%s' --root '%s' %s 2>&1", ctl, root_path, args);
}
