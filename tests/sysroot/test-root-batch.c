/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Batches at the Root seam: root_read_many() and root_write_many() give every file its own
 * outcome (the kernel's errno for that file), on a fake tree (the simulator's ops, whose writes
 * stay countable for fault injection) and on this machine's "/" (read-only: /proc/self). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test-util.h"

START_TEST(test_read_many_tree) {
        _cleanup_free_ char *dir = test_tmpdir(), *cmd = NULL;
        test_write(dir, "a/one", "1\n");
        test_write(dir, "a/long", "hello world\n");
        test_write(dir, "a/dir/inside", "x\n");
        test_write(dir, "secret", "outside a\n");
        ck_assert(asprintf(&cmd, "ln -s ../secret '%s/a/up'", dir) >= 0);
        ck_assert_int_eq(system(cmd), 0);

        Root *root;
        ck_assert_int_eq(root_new(dir, &root), 0);
        char b[5][64];
        RootReadItem items[] = {
                { .rel = "one", .buf = b[0], .size = sizeof(b[0]) },
                { .rel = "long", .buf = b[1], .size = 6 }, /* one read of at most 5 bytes */
                { .rel = "dir", .buf = b[2], .size = sizeof(b[2]) },
                { .rel = "missing", .buf = b[3], .size = sizeof(b[3]) },
                { .rel = "up", .buf = b[4], .size = sizeof(b[4]) }, /* climbs above the batch's directory */
        };
        int dfd = root_open(root, "a", O_RDONLY | O_DIRECTORY, 0);
        ck_assert_int_ge(dfd, 0);
        ck_assert_int_eq(root_read_many(root, dfd, items, ELEMENTSOF(items)), 0);
        ck_assert_int_eq(items[0].result, 2);
        ck_assert_str_eq(b[0], "1\n");
        ck_assert_int_eq(items[1].result, 5);
        ck_assert_str_eq(b[1], "hello");
        ck_assert_int_eq(items[2].result, -EISDIR);
        ck_assert_int_eq(items[3].result, -ENOENT);
        ck_assert_int_eq(items[4].result, -EXDEV);
        close(dfd);

        /* From the root itself: paths relative to it. */
        RootReadItem top[] = {
                { .rel = "a/one", .buf = b[0], .size = sizeof(b[0]) },
                { .rel = "a/nothing", .buf = b[1], .size = sizeof(b[1]) },
        };
        ck_assert_int_eq(root_read_many(root, -EBADF, top, ELEMENTSOF(top)), 0);
        ck_assert_int_eq(top[0].result, 2);
        ck_assert_int_eq(top[1].result, -ENOENT);

        /* A buffer that cannot hold a byte and its NUL is the caller's mistake. */
        RootReadItem tiny = { .rel = "a/one", .buf = b[0], .size = 1 };
        ck_assert_int_eq(root_read_many(root, -EBADF, &tiny, 1), -EINVAL);
        root_free(root);
        test_rmtree(dir);
}
END_TEST

START_TEST(test_write_many_tree) {
        _cleanup_free_ char *dir = test_tmpdir(), *log = NULL;
        test_write(dir, "k/a", "0\n");
        test_write(dir, "k/b", "0\n");
        test_write(dir, "k/c", "0\n");
        test_write(dir, "k/dir/x", "0\n");
        ck_assert(asprintf(&log, "%s/write.log", dir) >= 0);

        Root *root;
        ck_assert_int_eq(root_new(dir, &root), 0);
        RootWriteItem items[] = {
                { .rel = "k/a", .value = "1" }, { .rel = "k/missing", .value = "1" }, { .rel = "k/dir", .value = "1" },
                { .rel = "k/b", .value = "2" }, { .rel = "k/c", .value = "3" },
        };
        ck_assert_int_eq(root_write_many(root, items, ELEMENTSOF(items)), 0);
        ck_assert_int_eq(items[0].result, 0);
        ck_assert_int_eq(items[1].result, -ENOENT);
        ck_assert_int_eq(items[2].result, -EISDIR);
        ck_assert_int_eq(items[3].result, 0);
        ck_assert_int_eq(items[4].result, 0);
        _cleanup_free_ char *a = NULL, *c = NULL;
        ck_assert_int_eq(root_read_line(root, "k/a", &a), 0);
        ck_assert_str_eq(a, "1");

        /* Each file of a batch is one write of the simulator's count: the 4th of this batch (k/b)
         * fails as fault injection says, every other is made and keeps its own result. */
        ck_assert_int_eq(setenv("RTPART_TEST_FAIL_AT", "9", 1), 0); /* 5 counted above */
        ck_assert_int_eq(setenv("RTPART_TEST_FAIL_ERRNO", "EPERM", 1), 0);
        ck_assert_int_eq(setenv("RTPART_TEST_WRITE_LOG", log, 1), 0);
        items[0].value = "5";
        items[4].value = "7";
        ck_assert_int_eq(root_write_many(root, items, ELEMENTSOF(items)), 0);
        ck_assert_int_eq(unsetenv("RTPART_TEST_FAIL_AT"), 0);
        ck_assert_int_eq(unsetenv("RTPART_TEST_WRITE_LOG"), 0);
        ck_assert_int_eq(items[0].result, 0);
        ck_assert_int_eq(items[1].result, -ENOENT);
        ck_assert_int_eq(items[2].result, -EISDIR);
        ck_assert_int_eq(items[3].result, -EPERM);
        ck_assert_int_eq(items[4].result, 0);
        free(a);
        a = NULL;
        ck_assert_int_eq(root_read_line(root, "k/a", &a), 0);
        ck_assert_str_eq(a, "5");
        _cleanup_free_ char *b = NULL;
        ck_assert_int_eq(root_read_line(root, "k/b", &b), 0);
        ck_assert_str_eq(b, "2"); /* not written */
        ck_assert_int_eq(root_read_line(root, "k/c", &c), 0);
        ck_assert_str_eq(c, "7");
        FILE *f = fopen(log, "re");
        ck_assert_ptr_nonnull(f);
        unsigned lines = 0;
        char line[256];
        while (fgets(line, sizeof(line), f))
                lines++;
        fclose(f);
        ck_assert_uint_eq(lines, 5);
        unlink(log);
        root_free(root);
        test_rmtree(dir);
}
END_TEST

/* This machine's kernel, read-only: more files than one submission holds, every other one
 * missing, so that each result is checked to be its own file's. */
START_TEST(test_read_many_kernel) {
        Root *root;
        ck_assert_int_eq(root_new("/", &root), 0);
        enum { N = 1000 };
        RootReadItem *items = calloc(N, sizeof(RootReadItem));
        char(*bufs)[512] = calloc(N, 512);
        ck_assert(items && bufs);
        for (size_t i = 0; i < N; i++)
                items[i] = (RootReadItem) {
                        .rel = i % 5 == 4 ? "proc/self"
                                : i % 2   ? "proc/self/no-such-file"
                                          : "proc/self/stat",
                        .buf = bufs[i],
                        .size = i == 2 ? 4 : 512,
                };
        ck_assert_int_eq(root_read_many(root, -EBADF, items, N), 0);
        char want[32];
        snprintf(want, sizeof(want), "%d (", (int) getpid());
        for (size_t i = 0; i < N; i++) {
                if (i % 5 == 4)
                        ck_assert_int_eq(items[i].result, -EISDIR);
                else if (i % 2)
                        ck_assert_int_eq(items[i].result, -ENOENT);
                else if (i == 2) {
                        ck_assert_int_eq(items[i].result, 3);
                        ck_assert_uint_eq(strlen(bufs[i]), 3);
                } else {
                        ck_assert_int_gt(items[i].result, 20);
                        ck_assert_uint_eq(strlen(bufs[i]), (size_t) items[i].result);
                        ck_assert(strncmp(bufs[i], want, strlen(want)) == 0);
                }
        }
        /* Below a directory fd of the kernel's root. */
        int dfd = root_open(root, "proc/self", O_RDONLY | O_DIRECTORY, 0);
        ck_assert_int_ge(dfd, 0);
        items[0] = (RootReadItem) { .rel = "stat", .buf = bufs[0], .size = 512 };
        items[1] = (RootReadItem) { .rel = "nothing", .buf = bufs[1], .size = 512 };
        ck_assert_int_eq(root_read_many(root, dfd, items, 2), 0);
        ck_assert_int_gt(items[0].result, 20);
        ck_assert_int_eq(items[1].result, -ENOENT);
        close(dfd);
        free(items);
        free(bufs);
        root_free(root);
}
END_TEST

/* What root_cache_fill() kept answers reads (the file changed behind it: the kept text, proof that
 * no system call read it) until a write through the root, after which reads are the file's. */
START_TEST(test_cache) {
        _cleanup_free_ char *dir = test_tmpdir();
        test_write(dir, "k/a", "1\n");
        test_write(dir, "k/b", "2\n");
        char big[3000];
        memset(big, 'x', sizeof(big) - 2);
        big[sizeof(big) - 2] = '\n';
        big[sizeof(big) - 1] = 0;
        test_write(dir, "k/big", big);

        Root *root;
        ck_assert_int_eq(root_new(dir, &root), 0);
        char *paths[] = { "k/a", "/k/b", "k/missing", "k/a", "k/big", NULL };
        ck_assert_int_eq(root_cache_fill(root, paths, ELEMENTSOF(paths)), 0);
        test_write(dir, "k/a", "changed\n");
        test_write(dir, "k/missing", "now here\n");
        _cleanup_free_ char *a = NULL, *b = NULL, *whole = NULL, *other = NULL;
        ck_assert_int_eq(root_read_line(root, "k/a", &a), 0);
        ck_assert_str_eq(a, "1");
        ck_assert_int_eq(root_read_line(root, "k/b", &b), 0);
        ck_assert_str_eq(b, "2");
        ck_assert_int_eq(root_read_line(root, "k/missing", &other), -ENOENT);
        size_t size;
        ck_assert_int_eq(root_read_file(root, "k/big", &whole, &size), 0); /* too long to keep: read */
        ck_assert_uint_eq(size, sizeof(big) - 1);

        /* A write drops what was kept. */
        ck_assert_int_eq(root_write_value(root, "k/b", "3"), 0);
        free(a);
        a = NULL;
        ck_assert_int_eq(root_read_line(root, "k/a", &a), 0);
        ck_assert_str_eq(a, "changed");
        ck_assert_int_eq(root_read_line(root, "k/missing", &other), 0);
        ck_assert_str_eq(other, "now here");

        /* Dropped by hand too; filling again reads anew. */
        ck_assert_int_eq(root_cache_fill(root, paths, 2), 0);
        test_write(dir, "k/a", "again\n");
        free(a);
        a = NULL;
        ck_assert_int_eq(root_read_line(root, "k/a", &a), 0);
        ck_assert_str_eq(a, "changed");
        root_cache_drop(root);
        free(a);
        a = NULL;
        ck_assert_int_eq(root_read_line(root, "k/a", &a), 0);
        ck_assert_str_eq(a, "again");
        root_free(root);
        test_rmtree(dir);
}
END_TEST

/* root_canonicalize() asks the kernel where an open landed; the answers are the walk's: symlinks
 * (absolute ones from the root) resolved inside the tree, a missing file lexically, a root given
 * through a symlink. */
START_TEST(test_canonicalize) {
        _cleanup_free_ char *dir = test_tmpdir(), *cmd = NULL, *alias = NULL;
        test_write(dir, "sys/devices/system/machinecheck/machinecheck0/ignore_ce", "0\n");
        test_write(dir, "sys/devices/virtual/workqueue/writeback/cpumask", "3\n");
        ck_assert(asprintf(&alias, "%s-alias", dir) >= 0);
        ck_assert(asprintf(&cmd,
                           "mkdir -p '%s/sys/bus/workqueue/devices' && "
                           "ln -s /sys/devices/virtual/workqueue/writeback '%s/sys/bus/workqueue/devices/writeback' && "
                           "ln -s ../devices/system/machinecheck '%s/sys/bus/mc' && ln -s '%s' '%s'",
                           dir, dir, dir, dir, alias) >= 0);
        ck_assert_int_eq(system(cmd), 0);
        const char *roots[] = { dir, alias };
        for (size_t i = 0; i < ELEMENTSOF(roots); i++) {
                Root *root;
                ck_assert_int_eq(root_new(roots[i], &root), 0);
                static const char * const cases[][2] = {
                        { "sys/bus/workqueue/devices/writeback/cpumask",
                          "sys/devices/virtual/workqueue/writeback/cpumask" },
                        { "/sys/bus/mc/machinecheck0/ignore_ce",
                          "sys/devices/system/machinecheck/machinecheck0/ignore_ce" },
                        { "sys/devices/system/machinecheck/machinecheck0/ignore_ce",
                          "sys/devices/system/machinecheck/machinecheck0/ignore_ce" },
                        { "sys/../../sys/bus/mc", "sys/devices/system/machinecheck" },
                        { "sys/bus/mc/missing", "sys/devices/system/machinecheck/missing" },
                };
                for (size_t c = 0; c < ELEMENTSOF(cases); c++) {
                        _cleanup_free_ char *canon = NULL;
                        ck_assert_int_eq(root_canonicalize(root, cases[c][0], &canon), 0);
                        ck_assert_str_eq(canon, cases[c][1]);
                }
                root_free(root);
        }
        unlink(alias);
        test_rmtree(dir);
}
END_TEST

int main(void) {
        Suite *s = suite_create("root-batch");
        TCase *tc = tcase_create("batch");
        tcase_add_test(tc, test_read_many_tree);
        tcase_add_test(tc, test_write_many_tree);
        tcase_add_test(tc, test_read_many_kernel);
        tcase_add_test(tc, test_cache);
        tcase_add_test(tc, test_canonicalize);
        suite_add_tcase(s, tc);
        return test_run(s);
}
