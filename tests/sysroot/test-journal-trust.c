/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The journal is taken only when rtpart may trust it (issue 22.8): a state.json that is a FIFO
 * once hung verify, and one any user could write (mode 0666, or another user's) was loaded and its
 * values applied. Such a journal, or lock file, is refused: by the library (-EBADMSG, the file and
 * the fix named) and by rtpartctl (exit 1), and nothing is written over it. The case of another
 * user's journal needs root to chown (else 77, with the reason). */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine.h"
#include "test-tree.h"
#include "test-util.h"

#define STATE "var/lib/rtpart/state.json"

static char *host_dir;

static void setup(void) {
        host_dir = tree_copy_host("vm");
}

static void teardown(void) {
        tree_remove(host_dir);
        free(host_dir);
        host_dir = NULL;
}

static char *tree_path(const char *rel) {
        char *p;
        ck_assert(asprintf(&p, "%s/%s", host_dir, rel) >= 0);
        return p;
}

/* The journal of the tree loaded through the library: its return, and the message as the user
 * reads it in *ret_msg (NULL when none). A read that would block fails the test by SIGALRM. */
static int load(char **ret_msg) {
        Root *root;
        JournalStore *s;
        Journal *j = NULL;
        _cleanup_(error_done) Error e = {};
        ck_assert_int_eq(root_new(host_dir, &root), 0);
        ck_assert_int_eq(journal_store_open(root, &s), 0);
        alarm(20);
        int k = journal_store_load(s, &j, &e);
        bool open = journal_store_transaction_open(s);
        alarm(0);
        ck_assert(!open);
        *ret_msg = e.message ? error_format(&e, NULL) : NULL;
        journal_free(j);
        journal_store_free(s);
        root_free(root);
        return k;
}

static void assert_refused(const char *what, const char *want) {
        _cleanup_free_ char *msg = NULL, *file = tree_path(STATE);
        ck_assert_msg(load(&msg) == -EBADMSG, "%s: not refused", what);
        ck_assert_msg(msg && strstr(msg, file), "%s: the message does not name %s: %s", what, file, strempty(msg));
        ck_assert_msg(strstr(msg, want), "%s: the message does not say '%s': %s", what, want, msg);
}

START_TEST(test_fifo_refused) {
        _cleanup_free_ char *file = tree_path(STATE);
        test_write(host_dir, "var/lib/rtpart/keep", "");
        ck_assert_int_eq(mkfifo(file, 0644), 0);
        assert_refused("a FIFO", "is not a regular file (a FIFO)");
}
END_TEST

START_TEST(test_writable_refused) {
        ck_assert_int_eq(tree_apply(host_dir, "realtime-virtual-host", NULL), 0);
        _cleanup_free_ char *file = tree_path(STATE), *msg = NULL;
        ck_assert_int_eq(load(&msg), 0); /* as apply leaves it: 0644, this user's own tree */
        ck_assert_int_eq(chmod(file, 0666), 0);
        assert_refused("mode 0666", "may be written by anyone (mode 0666)");
        ck_assert_int_eq(chmod(file, 0664), 0);
        assert_refused("mode 0664", "may be written by its group (mode 0664)");
}
END_TEST

START_TEST(test_symlink_refused) {
        ck_assert_int_eq(tree_apply(host_dir, "realtime-virtual-host", NULL), 0);
        _cleanup_free_ char *file = tree_path(STATE), *moved = tree_path("var/lib/rtpart/elsewhere.json");
        ck_assert_int_eq(rename(file, moved), 0);
        ck_assert_int_eq(symlink("elsewhere.json", file), 0);
        assert_refused("a symlink", "is a symbolic link");
}
END_TEST

START_TEST(test_lock_fifo_refused) {
        _cleanup_free_ char *lock = tree_path("var/lib/rtpart/lock");
        test_write(host_dir, "var/lib/rtpart/keep", "");
        ck_assert_int_eq(mkfifo(lock, 0600), 0);
        Root *root;
        JournalStore *s;
        _cleanup_(error_done) Error e = {};
        ck_assert_int_eq(root_new(host_dir, &root), 0);
        ck_assert_int_eq(journal_store_open(root, &s), 0);
        alarm(20);
        ck_assert_int_eq(journal_store_lock(s, /* wait= */ false, &e), -EBADMSG);
        alarm(0);
        ck_assert(!journal_store_locked(s));
        ck_assert_ptr_nonnull(strstr(strempty(e.message), "a FIFO"));
        journal_store_free(s);
        root_free(root);
}
END_TEST

/* rtpartctl on an untrusted journal: every verb that reads it is exit 1, with the file and the fix
 * named, and neither the tree nor the journal changes. */
static void assert_ctl_refuses(const char *want) {
        static const char * const verbs[] = { "verify", "status", "revert", "apply cpu-partitioning" };
        _cleanup_free_ char *tree = tree_snapshot(host_dir), *file = tree_path(STATE);
        struct stat before, after;
        ck_assert_int_eq(lstat(file, &before), 0);
        for (size_t v = 0; v < ELEMENTSOF(verbs); v++) {
                _cleanup_free_ char *out = NULL, *args = NULL;
                ck_assert_int_ge(asprintf(&args, "--no-daemon %s", verbs[v]), 0);
                int st = tree_ctl(host_dir, &out, args);
                ck_assert_msg(st == 1, "rtpartctl %s: exit %d, not 1: %s", verbs[v], st, strempty(out));
                ck_assert_msg(strstr(strempty(out), file) && strstr(out, want),
                              "rtpartctl %s: the message does not name %s and say '%s': %s", verbs[v], file, want,
                              strempty(out));
                _cleanup_free_ char *tree_after = tree_snapshot(host_dir);
                tree_assert_same(tree, tree_after, verbs[v]);
                ck_assert_int_eq(lstat(file, &after), 0);
                ck_assert_msg(after.st_ino == before.st_ino && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec &&
                                      after.st_mtim.tv_sec == before.st_mtim.tv_sec,
                              "rtpartctl %s wrote over the journal", verbs[v]);
        }
}

START_TEST(test_rtpartctl_fifo) {
        _cleanup_free_ char *file = tree_path(STATE);
        test_write(host_dir, "var/lib/rtpart/keep", "");
        ck_assert_int_eq(mkfifo(file, 0644), 0);
        assert_ctl_refuses("a FIFO");
}
END_TEST

START_TEST(test_rtpartctl_writable) {
        ck_assert_int_eq(tree_apply(host_dir, "realtime-virtual-host", NULL), 0);
        _cleanup_free_ char *file = tree_path(STATE);
        ck_assert_int_eq(chmod(file, 0666), 0);
        assert_ctl_refuses("chmod 0644");
}
END_TEST

/* Another user's journal (root running rtpart on a journal nobody owns), mode 0644: refused; the
 * same file given back to root: taken. */
START_TEST(test_foreign_owner_refused) {
        ck_assert_int_eq(tree_apply(host_dir, "realtime-virtual-host", NULL), 0);
        _cleanup_free_ char *file = tree_path(STATE), *msg = NULL;
        ck_assert_int_eq(chown(file, 65534, 65534), 0);
        assert_refused("owned by uid 65534", "is owned by uid 65534");
        assert_ctl_refuses("chown root:root");
        ck_assert_int_eq(chown(file, 0, 0), 0);
        ck_assert_int_eq(load(&msg), 0);
}
END_TEST

int main(void) {
        Suite *s = suite_create("journal-trust");
        TCase *tc = tcase_create("library");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_fifo_refused);
        tcase_add_test(tc, test_writable_refused);
        tcase_add_test(tc, test_symlink_refused);
        tcase_add_test(tc, test_lock_fifo_refused);
        suite_add_tcase(s, tc);

        tc = tcase_create("rtpartctl");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_rtpartctl_fifo);
        tcase_add_test(tc, test_rtpartctl_writable);
        suite_add_tcase(s, tc);

        tc = tcase_create("owner");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_foreign_owner_refused);
        test_add_root_tcase(s, tc, "a journal of another user's needs root to chown");
        return test_run(s);
}
