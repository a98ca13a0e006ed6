/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "strv.h"
#include "test-util.h"

/* The bundled hosts' directory: RTPART_HOSTS_DIR (meson's test environment), else the build's. */
static const char *hosts_dir(void) {
        const char *d = getenv("RTPART_HOSTS_DIR");
        return d && *d ? d : HOSTS_DIR;
}

char *fixture_host(const char *name) {
        char *p;
        struct stat st;
        ck_assert(asprintf(&p, "%s/%s", hosts_dir(), name) >= 0);
        ck_assert_msg(stat(p, &st) == 0 && S_ISDIR(st.st_mode),
                      "fake host %s missing: the build makes it (ninja -C BUILD tests/fixtures/hosts.stamp, "
                      "tests/fixtures/meson.build)",
                      p);
        return p;
}

char *test_tmpdir(void) {
        char *t = strdup("/tmp/rtpart-test-XXXXXX");
        ck_assert_ptr_nonnull(t);
        ck_assert_ptr_nonnull(mkdtemp(t));
        return t;
}

char *test_copy_host(const char *name) {
        _cleanup_free_ char *src = fixture_host(name), *cmd = NULL;
        char *dst = test_tmpdir();
        ck_assert(asprintf(&cmd, "cp -a '%s/.' '%s/'", src, dst) >= 0);
        ck_assert_int_eq(system(cmd), 0);
        return dst;
}

char *test_tmpdir_tmpfs(void) {
        char *t = strdup("/dev/shm/rtpart-test-XXXXXX");
        ck_assert_ptr_nonnull(t);
        if (mkdtemp(t))
                return t;
        free(t);
        return test_tmpdir();
}

void test_rmtree(const char *path) {
        _cleanup_free_ char *cmd = NULL;
        if (!path || (!startswith(path, "/tmp/rtpart-test-") && !startswith(path, "/dev/shm/rtpart-test-")))
                return;
        ck_assert(asprintf(&cmd, "rm -rf '%s'", path) >= 0);
        (void) system(cmd);
}

void test_write(const char *root, const char *rel, const char *text) {
        _cleanup_free_ char *path = NULL, *cmd = NULL;
        ck_assert(asprintf(&path, "%s/%s", root, rel) >= 0);
        ck_assert(asprintf(&cmd, "mkdir -p \"$(dirname '%s')\"", path) >= 0);
        ck_assert_int_eq(system(cmd), 0);
        FILE *f = fopen(path, "we");
        ck_assert_msg(f, "cannot write %s", path);
        fputs(text, f);
        ck_assert_int_eq(fclose(f), 0);
}

void test_open_host(const char *path, Root **ret_root, Host **ret_host) {
        Root *root;
        Host *host;
        int r = root_new(path, &root);
        ck_assert_msg(r >= 0, "root_new(%s): %s", path, strerror(-r));
        r = host_discover(root, 0, &host);
        ck_assert_msg(r >= 0, "host_discover(%s): %s", path, strerror(-r));
        *ret_root = root;
        *ret_host = host;
}

void test_fixture(const char *name, bool copy, char **ret_dir, char **ret_prof_dir, Root **ret_root, Host **ret_host) {
        if (copy) {
                _cleanup_free_ char *src = fixture_host(name), *cmd = NULL;
                *ret_dir = test_tmpdir_tmpfs();
                ck_assert(asprintf(&cmd, "cp -a '%s/.' '%s/'", src, *ret_dir) >= 0);
                ck_assert_int_eq(system(cmd), 0);
        } else
                *ret_dir = fixture_host(name);
        *ret_prof_dir = test_tmpdir();
        if (ret_root)
                test_open_host(*ret_dir, ret_root, ret_host);
}

void test_fixture_clear(char **host_dir, char **prof_dir, Root **root, Host **host) {
        test_fixture_done(*root, *host, *host_dir, *prof_dir);
        *root = NULL;
        *host = NULL;
        *host_dir = *prof_dir = NULL;
}

void test_fixture_done(Root *root, Host *host, char *host_dir, char *prof_dir) {
        host_free(host);
        root_free(root);
        test_rmtree(host_dir);
        test_rmtree(prof_dir);
        free(host_dir);
        free(prof_dir);
}

int test_resolve(Root *root, const Host *host, const char *profile, Profile **ret_p, Resolved **ret_r,
                 char **ret_error) {
        Error e = {};
        Profile *p = NULL;
        int r = profile_load(root, backend_profile_schema(), profile, &p, &e);
        if (r >= 0) {
                r = profile_resolve(p, host, ret_r, &e);
                if (r < 0)
                        p = profile_free(p);
        }
        if (r < 0) {
                if (ret_error)
                        *ret_error = error_format(&e, "invalid profile");
                error_done(&e);
                return r;
        }
        *ret_p = p;
        if (ret_error)
                *ret_error = NULL;
        return 0;
}

int test_plan(Root *root, const Host *host, const char *profile, Plan **ret_plan, char **ret_error) {
        Profile *p = NULL;
        Resolved *res = NULL;
        Error e = {};
        int r = test_resolve(root, host, profile, &p, &res, ret_error);
        if (r < 0)
                return r;
        r = plan_build(res, root, ret_plan, &e);
        if (r < 0 && ret_error)
                *ret_error = error_format(&e, "invalid profile");
        error_done(&e);
        resolved_free(res);
        profile_free(p);
        return r;
}

const Knob *plan_find(const Plan *p, const char *id) {
        for (size_t i = 0; i < p->n_knobs; i++)
                if (streq(p->knobs[i].id, id))
                        return &p->knobs[i];
        return NULL;
}

size_t plan_count_domain(const Plan *p, Domain d) {
        size_t n = 0;
        for (size_t i = 0; i < p->n_knobs; i++)
                n += p->knobs[i].domain == d;
        return n;
}

bool plan_has_note(const Plan *p, const char *fragment) {
        for (char **n = p->notes; n && *n; n++)
                if (strstr(*n, fragment))
                        return true;
        return false;
}

Plan *test_plan_ok(Root *root, const Host *host, const char *dir, const char *name, const char *json) {
        _cleanup_free_ char *path = test_profile(dir, name, json), *err = NULL;
        Plan *p = NULL;
        int k = test_plan(root, host, path, &p, &err);
        ck_assert_msg(k == 0, "plan failed (%d): %s", k, strempty(err));
        return p;
}

void test_plan_err(Root *root, const Host *host, const char *dir, const char *name, const char *json,
                   const char *pointer, const char *fragment) {
        _cleanup_free_ char *path = test_profile(dir, name, json), *err = NULL, *want = NULL;
        Plan *p = NULL;
        int k = test_plan(root, host, path, &p, &err);
        ck_assert_msg(k == -EINVAL, "expected -EINVAL, got %d (%s) for %s", k, strempty(err), json);
        ck_assert_ptr_null(p);
        ck_assert_ptr_nonnull(err);
        ck_assert(asprintf(&want, "%s.json: %s: ", name, pointer) >= 0);
        ck_assert_msg(strstr(err, want), "error '%s' lacks '%s'", err, want);
        ck_assert_msg(strstr(err, fragment), "error '%s' lacks '%s'", err, fragment);
}

static const char *root_skip_reason;
static unsigned root_skipped;

void test_add_root_tcase(Suite *s, TCase *tc, const char *why) {
        if (geteuid() == 0) {
                suite_add_tcase(s, tc);
                return;
        }
        root_skip_reason = why;
        root_skipped++;
}

unsigned test_slow(void) {
        const char *e = getenv("RTPART_TEST_SLOW");
        unsigned v = e ? (unsigned) strtoul(e, NULL, 10) : 0;
        return v > 0 ? v : 1;
}

/* What test_skip() recorded, in memory shared with the processes Check forks for its tests. */
typedef struct SkipLog {
        unsigned n;
        size_t len;
        char text[8192];
} SkipLog;
static SkipLog *skips;

void test_skip(const char *fmt, ...) {
        ck_assert_msg(skips, "test_skip() outside test_run()");
        va_list ap;
        va_start(ap, fmt);
        char *reason = NULL;
        int k = vasprintf(&reason, fmt, ap);
        va_end(ap);
        ck_assert_int_ge(k, 0);
        skips->n++;
        size_t room = sizeof(skips->text) - skips->len;
        int w = snprintf(skips->text + skips->len, room, "SKIP: %s\n", reason);
        if (w > 0)
                skips->len += (size_t) w < room ? (size_t) w : room - 1;
        free(reason);
}

static int run(Suite *s, const char *tcase, bool fork) {
        if (!skips) {
                /* no ck_assert here: it works only inside a test */
                skips = mmap(NULL, sizeof(SkipLog), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
                if (skips == MAP_FAILED) {
                        perror("mmap");
                        abort();
                }
        }
        SRunner *sr = srunner_create(s);
        if (fork)
                srunner_set_fork_status(sr, CK_FORK);
        srunner_run(sr, NULL, tcase, CK_NORMAL);
        int failed = srunner_ntests_failed(sr);
        int ran = srunner_ntests_run(sr);
        srunner_free(sr);
        if (failed > 0)
                return EXIT_FAILURE;
        if (tcase && ran == 0) {
                printf("no test case '%s' in this program\n", tcase);
                return EXIT_FAILURE;
        }
        if (skips->n > 0 || root_skipped > 0) {
                fputs(skips->text, stdout);
                if (root_skipped > 0)
                        printf("SKIP: not root: %u test case(s) left out: %s\n", root_skipped, root_skip_reason);
                return 77;
        }
        return EXIT_SUCCESS;
}

int test_run(Suite *s) {
        return run(s, NULL, false);
}

int test_run_case(Suite *s, const char *tcase) {
        return run(s, tcase, false);
}

int test_run_forked(Suite *s) {
        return run(s, NULL, true);
}

char *test_mini_host(unsigned cpus, bool smt, unsigned nodes) {
        char *root = test_tmpdir();
        char buf[256], rel[256];
        unsigned cores = smt ? cpus / 2 : cpus;

        snprintf(buf, sizeof(buf), "0-%u\n", cpus - 1);
        test_write(root, "sys/devices/system/cpu/online", cpus == 1 ? "0\n" : buf);
        test_write(root, "sys/devices/system/cpu/possible", cpus == 1 ? "0\n" : buf);
        for (unsigned c = 0; c < cpus; c++) {
                unsigned core = c % cores;
                snprintf(rel, sizeof(rel), "sys/devices/system/cpu/cpu%u/topology/thread_siblings_list", c);
                if (smt)
                        snprintf(buf, sizeof(buf), "%u,%u\n", core, core + cores);
                else
                        snprintf(buf, sizeof(buf), "%u\n", c);
                test_write(root, rel, buf);
                snprintf(rel, sizeof(rel), "sys/devices/system/cpu/cpu%u/topology/physical_package_id", c);
                test_write(root, rel, "0\n");
        }
        for (unsigned n = 0; n < nodes; n++) {
                StrBuf b = {};
                unsigned per = cores / nodes;
                for (unsigned c = n * per; c < (n + 1) * per; c++) {
                        strbuf_appendf(&b, "%s%u", b.len ? "," : "", c);
                        if (smt)
                                strbuf_appendf(&b, ",%u", c + cores);
                }
                strbuf_append(&b, "\n");
                _cleanup_free_ char *list = strbuf_steal(&b);
                /* normalize through the parser so the file holds a canonical list */
                CpuSet s;
                ck_assert_int_eq(cpu_set_parse_list(list, &s, NULL), 0);
                _cleanup_free_ char *canon = cpu_set_format_list(&s);
                snprintf(rel, sizeof(rel), "sys/devices/system/node/node%u/cpulist", n);
                snprintf(buf, sizeof(buf), "%s\n", canon);
                test_write(root, rel, buf);
        }
        test_write(root, "proc/cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/vda ro quiet\n");
        test_write(root, "proc/cpuinfo", "processor\t: 0\nvendor_id\t: GenuineIntel\n");
        return root;
}

char *test_profile(const char *dir, const char *name, const char *json) {
        char *path;
        ck_assert(asprintf(&path, "%s/%s.json", dir, name) >= 0);
        FILE *f = fopen(path, "we");
        ck_assert_ptr_nonnull(f);
        fputs(json, f);
        ck_assert_int_eq(fclose(f), 0);
        return path;
}

JournalStore *test_journal_locked(Root *root) {
        JournalStore *s = NULL;
        ck_assert_int_eq(journal_store_open(root, &s), 0);
        ck_assert_int_eq(journal_store_lock(s, /* wait= */ true, NULL), 0);
        return s;
}

Journal *test_journal_load(Root *root) {
        _cleanup_(journal_store_freep) JournalStore *s = NULL;
        _cleanup_(error_done) Error e = {};
        Journal *j = NULL;
        ck_assert_int_eq(journal_store_open(root, &s), 0);
        int k = journal_store_load(s, &j, &e);
        ck_assert_msg(k == 0, "journal: %s", strempty(e.message));
        return j;
}
