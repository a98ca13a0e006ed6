/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <check.h>
#include <stdbool.h>

#include "backend.h"
#include "host.h"
#include "journal.h"
#include "profile.h"
#include "root.h"

/* Path of a bundled fake host, made by the build (tests/fixtures/meson.build): BUILD/tests/fixtures/
 * hosts/NAME, or RTPART_HOSTS_DIR/NAME. Fails the test when it is missing. */
char *fixture_host(const char *name);

/* Copies a fake host into a fresh temporary directory (so a test may add or change files);
 * returns its path. Remove it with test_rmtree(). */
char *test_copy_host(const char *name);
/* Creates an empty temporary directory: in /tmp; on tmpfs (/dev/shm) where there is one, for trees
 * of thousands of files, which take seconds to write and remove on a disk. */
char *test_tmpdir(void);
char *test_tmpdir_tmpfs(void);
/* Removes a tree made by one of the two above (any other path is left alone). */
void test_rmtree(const char *path);
/* Writes text to ROOT/rel, creating parent directories. */
void test_write(const char *root, const char *rel, const char *text);

/* A suite's fake host, in the suite's own variables: *ret_dir is a copy of the bundled host NAME on
 * tmpfs (copy: to change before test_open_host()) or the bundled host itself (to read only);
 * *ret_prof_dir an empty directory for profiles; with ret_root, the host is opened. */
void test_fixture(const char *name, bool copy, char **ret_dir, char **ret_prof_dir, Root **ret_root, Host **ret_host);
/* Undoes a suite's fixture: frees the host and the root, removes and frees both temporary
 * directories (any of them may be NULL; the bundled host itself is never removed). */
void test_fixture_done(Root *root, Host *host, char *host_dir, char *prof_dir);
/* The same, and sets the four variables to NULL. */
void test_fixture_clear(char **host_dir, char **prof_dir, Root **root, Host **host);

/* Opens a root, discovers its host; aborts the test on failure. */
void test_open_host(const char *path, Root **ret_root, Host **ret_host);

/* Loads and resolves a profile; on failure stores the formatted error (caller frees) and returns
 * the negative errno. */
int test_resolve(Root *root, const Host *host, const char *profile, Profile **ret_p, Resolved **ret_r,
                 char **ret_error);
/* Same, plus the plan. */
int test_plan(Root *root, const Host *host, const char *profile, Plan **ret_plan, char **ret_error);
const Knob *plan_find(const Plan *p, const char *id);
size_t plan_count_domain(const Plan *p, Domain d);
bool plan_has_note(const Plan *p, const char *fragment);
/* Writes json as profile NAME.json into dir and plans it: must succeed / must be refused with
 * -EINVAL at `pointer` ("NAME.json: POINTER: …") with a message containing `fragment`. */
Plan *test_plan_ok(Root *root, const Host *host, const char *dir, const char *name, const char *json);
void test_plan_err(Root *root, const Host *host, const char *dir, const char *name, const char *json,
                   const char *pointer, const char *fragment);

/* How many times longer a test waits for what takes time: RTPART_TEST_SLOW (meson test --setup
 * valgrind sets it), else 1. */
unsigned test_slow(void);

/* Runs a suite, returns the exit status for main(): failure when a test failed, else 77 (skip)
 * when a test called test_skip() or a root-only test case was left out, else success. */
int test_run(Suite *s);
/* Runs only the test case named tcase of s (every one when NULL): a program whose cases may be
 * skipped one by one is registered in meson once per case, so that a skip hides no pass. */
int test_run_case(Suite *s, const char *tcase);
/* Runs s with each test in a process of its own even where CK_FORK=no (meson's valgrind setup):
 * for tests that leave their process changed for good (a seccomp filter). */
int test_run_forked(Suite *s);
/* In a test: it did not check what it is for, because of what the reason says (the machine lacks
 * a device, another program holds a value). The test returns after it; test_run() prints the
 * reason and returns 77 unless a test failed. Works with and without CK_FORK. */
void test_skip(const char *fmt, ...) _printf_(1, 2);
/* Adds tc, whose tests need root, to s when running as root. Otherwise leaves it out and records
 * why: test_run() then runs the rest and, if none of it failed, prints the reason and returns 77
 * (skip), so that a run without root is never reported as a pass. */
void test_add_root_tcase(Suite *s, TCase *tc, const char *why);

/* A minimal fake host in a new temporary directory: `cpus` CPUs, SMT pairs (n, n+cpus/2) when
 * smt, `nodes` NUMA nodes splitting the cores evenly (0 = no node directory). */
char *test_mini_host(unsigned cpus, bool smt, unsigned nodes);
/* Writes a profile file into dir and returns its path. */
char *test_profile(const char *dir, const char *name, const char *json);

/* The root's journal opened and locked, as a command that changes the host holds it (free it with
 * journal_store_free()). */
JournalStore *test_journal_locked(Root *root);
/* The root's journal loaded; it must be one rtpart takes. */
Journal *test_journal_load(Root *root);

/* A backend's write verb, its result checked against its return and then dropped: KNOB_DONE,
 * KNOB_REFUSED, KNOB_SKIPPED or the negative errno. What it keeps goes where the engine's would,
 * beside the root's journal (var/lib/rtpart/DOMAIN-backup). */
static inline int backend_write(const Backend *b, Root *r, const Knob *k, const char *value) {
        KnobResult w = { .reason = (char *) 0x1 };
        char dir[64];
        snprintf(dir, sizeof(dir), "var/lib/rtpart/%s-backup", domain_to_string(b->domain));
        KnobKeep keep = { .root = r, .dir = dir };
        int x = b->write(r, k, value, &keep, &w);
        ck_assert_int_eq(x < 0 ? KNOB_FAILED : x, w.status);
        ck_assert_int_eq(x < 0 ? x : 0, w.error);
        knob_result_done(&w);
        return x;
}
