/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "root-cgroup.h"
#include "test-util.h"

/* The kernel's cgroup operations on this machine's v1 cpuset hierarchy (suite host, as root):
 * through libcgroup, with the kernel's own errno where the kernel refuses (a CPU list it does not
 * take, an exclusive cpuset's overlap, a task it does not move, a cpuset in use), mkdir(2)'s and
 * rmdir(2)'s EEXIST and ENOENT, and RTPART_LIBCGROUP=0 making every operation direct. Only
 * test-unique cpusets (rtpart-test-cg-PID-…) are made, and removed; the only task moved is a child
 * of this test, ended by PID. */

static Root *root;
static char *mount; /* root-relative */
static char *abs_mount;
static char *cpus; /* the root cpuset's last CPU */
static char *mems; /* the root cpuset's first memory node */
static pid_t child = -1;
static pid_t main_pid;

static char *name_of(const char *what) {
        char *s;
        ck_assert_int_ge(asprintf(&s, "rtpart-test-cg-%d-%s", (int) main_pid, what), 0);
        return s;
}

/* No ck_assert here: main() calls it too, outside any test. */
static char *abs_path(const char *name, const char *file) {
        char *s;
        if (asprintf(&s, "%s/%s%s%s", abs_mount, name, file ? "/" : "", file ? file : "") < 0)
                abort();
        return s;
}

/* What the kernel answers to one write(2) of value to the cgroup's file: 0 or its -errno. */
static int kernel_answer(const char *name, const char *file, const char *value) {
        _cleanup_free_ char *p = abs_path(name, file);
        int fd = open(p, O_WRONLY | O_CLOEXEC); /* no ck_assert: main() calls it too */
        if (fd < 0)
                return -errno;
        int k = write(fd, value, strlen(value)) < 0 ? -errno : 0;
        close(fd);
        return k;
}

/* Every cpuset this test made, its tasks moved to the root first. From teardown and, as Check
 * runs no teardown after a failed assertion, from main() once the tests are done. */
static void remove_test_cpusets(void) {
        DIR *d = opendir(abs_mount);
        char prefix[64];
        snprintf(prefix, sizeof(prefix), "rtpart-test-cg-%d-", (int) main_pid);
        for (struct dirent *de; d && (de = readdir(d));) {
                if (!startswith(de->d_name, prefix))
                        continue;
                _cleanup_free_ char *tasks = abs_path(de->d_name, "tasks"), *dir = abs_path(de->d_name, NULL);
                FILE *f = fopen(tasks, "re");
                for (int t; f && fscanf(f, "%d", &t) == 1;) {
                        char id[16];
                        snprintf(id, sizeof(id), "%d", t);
                        (void) kernel_answer("", "tasks", id);
                }
                if (f)
                        fclose(f);
                if (rmdir(dir) < 0)
                        fprintf(stderr, "could not remove %s: %m\n", dir);
        }
        if (d)
                closedir(d);
}

static void setup(void) {
        ck_assert_int_eq(root_new("/", &root), 0);
}

static void teardown(void) {
        if (child > 0) {
                (void) kill(child, SIGKILL);
                (void) waitpid(child, NULL, 0);
                child = -1;
        }
        remove_test_cpusets();
        root = root_free(root);
}

/* A cpuset with the last CPU and the first memory node. */
static char *make_cpuset(const char *what) {
        char *name = name_of(what);
        ck_assert_int_eq(root_mkdir_object(root, ROOT_FS_CGROUP, mount, name), 0);
        ck_assert_int_eq(root_write_object(root, ROOT_FS_CGROUP, mount, name, "cpuset.cpus", cpus), 0);
        ck_assert_int_eq(root_write_object(root, ROOT_FS_CGROUP, mount, name, "cpuset.mems", mems), 0);
        return name;
}

START_TEST(test_make_write_remove) {
        RootCgroupCounts before = root_cgroup_counts();
        _cleanup_free_ char *a = make_cpuset("a"), *nested = NULL, *p = abs_path(a, "cpuset.cpus"), *got = NULL;
        ck_assert_int_eq(root_read_line(root, p + 1, &got), 0);
        ck_assert_str_eq(got, cpus);
        ck_assert_int_eq(root_mkdir_object(root, ROOT_FS_CGROUP, mount, a), -EEXIST);
        nested = name_of("missing/a");
        ck_assert_int_eq(root_mkdir_object(root, ROOT_FS_CGROUP, mount, nested), -ENOENT);
        /* A CPU this machine does not have: the kernel's own errno, whichever it is. */
        int k = root_write_object(root, ROOT_FS_CGROUP, mount, a, "cpuset.cpus", "99999");
        ck_assert_int_lt(k, 0);
        ck_assert_int_eq(k, kernel_answer(a, "cpuset.cpus", "99999"));
        ck_assert_int_eq(root_rmdir_object(root, ROOT_FS_CGROUP, mount, a), 0);
        ck_assert(!root_exists(root, p + 1));
        ck_assert_int_eq(root_rmdir_object(root, ROOT_FS_CGROUP, mount, a), -ENOENT);
        RootCgroupCounts after = root_cgroup_counts();
        ck_assert_uint_eq(after.direct, before.direct);
        ck_assert_uint_eq(after.library, before.library + 8);
}
END_TEST

/* The name of a top-level cpuset this test did not make whose CPUs include cpu, or NULL. */
static char *foreign_sibling_holding(const char *cpu) {
        DIR *d = opendir(abs_mount);
        char *found = NULL, prefix[64];
        unsigned want = (unsigned) strtoul(cpu, NULL, 10);
        snprintf(prefix, sizeof(prefix), "rtpart-test-cg-%d-", (int) main_pid);
        for (struct dirent *de; d && !found && (de = readdir(d));) {
                if (de->d_type != DT_DIR || de->d_name[0] == '.' || startswith(de->d_name, prefix))
                        continue;
                _cleanup_free_ char *path = abs_path(de->d_name, "cpuset.cpus");
                char text[256] = "";
                FILE *f = fopen(path, "re");
                bool read = f && fgets(text, sizeof(text), f);
                if (f)
                        fclose(f);
                CpuSet set;
                text[strcspn(text, "\n")] = 0;
                if (read && cpu_set_parse_list(text, &set, NULL) >= 0 && cpu_set_has(&set, want))
                        found = strdup(de->d_name);
        }
        if (d)
                closedir(d);
        return found;
}

START_TEST(test_exclusive_overlap) {
        _cleanup_free_ char *a = make_cpuset("a"), *b = make_cpuset("b");
        /* cgroup v1 lets no sibling share CPUs with an exclusive cpuset (validate_change()). */
        ck_assert_int_eq(root_write_object(root, ROOT_FS_CGROUP, mount, a, "cpuset.cpu_exclusive", "1"), -EINVAL);
        ck_assert_int_eq(root_rmdir_object(root, ROOT_FS_CGROUP, mount, b), 0);
        _cleanup_free_ char *holder = foreign_sibling_holding(cpus);
        if (holder) {
                /* A cpuset this test did not make (libvirt's machine, say) holds the CPU too: the
                 * kernel refuses exclusivity for it as for b, so the case cannot show the write. */
                ck_assert_int_eq(root_write_object(root, ROOT_FS_CGROUP, mount, a, "cpuset.cpu_exclusive", "1"),
                                 -EINVAL);
                test_skip("exclusive_overlap: the cpuset %s, not this test's, holds CPU %s: an exclusive "
                          "write cannot succeed beside it",
                          holder, cpus);
                return;
        }
        ck_assert_int_eq(root_write_object(root, ROOT_FS_CGROUP, mount, a, "cpuset.cpu_exclusive", "1"), 0);
        ck_assert_int_eq(root_write_object(root, ROOT_FS_CGROUP, mount, a, "cpuset.cpu_exclusive", "0"), 0);
        ck_assert_uint_eq(root_cgroup_counts().direct, 0);
}
END_TEST

/* A kernel thread the kernel never lets move (PF_NO_SETAFFINITY): a CPU's migration thread. */
static pid_t pinned_kthread(void) {
        DIR *d = opendir("/proc");
        pid_t found = -1;
        for (struct dirent *de; d && found < 0 && (de = readdir(d));) {
                _cleanup_free_ char *comm = NULL;
                char p[64];
                int pid = atoi(de->d_name);
                snprintf(p, sizeof(p), "proc/%d/comm", pid);
                if (pid > 0 && root_read_line(root, p, &comm) >= 0 && streq(comm, "migration/0"))
                        found = pid;
        }
        if (d)
                closedir(d);
        return found;
}

START_TEST(test_tasks) {
        _cleanup_free_ char *a = make_cpuset("a"), *in = NULL, *id = NULL, *where = NULL;
        child = fork();
        ck_assert_int_ge(child, 0);
        if (child == 0) {
                /* Ends with the test's process, whether or not its teardown runs. */
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                pause();
                _exit(0);
        }
        ck_assert_int_ge(asprintf(&id, "%d", (int) child), 0);
        ck_assert_int_eq(root_write_object(root, ROOT_FS_CGROUP, mount, a, "tasks", id), 0);
        ck_assert_int_ge(asprintf(&in, "proc/%d/cpuset", (int) child), 0);
        ck_assert_int_eq(root_read_line(root, in, &where), 0);
        ck_assert_str_eq(where + 1, a);
        /* In use: rmdir(2)'s EBUSY, which libcgroup 2.0.2 reports as success. */
        ck_assert_int_eq(root_rmdir_object(root, ROOT_FS_CGROUP, mount, a), -EBUSY);
        ck_assert(cgroup_exists(root, mount, a));
        pid_t kt = pinned_kthread();
        if (kt > 0) {
                _cleanup_free_ char *kid = NULL;
                ck_assert_int_ge(asprintf(&kid, "%d", (int) kt), 0);
                ck_assert_int_eq(root_write_object(root, ROOT_FS_CGROUP, mount, a, "tasks", kid), -EINVAL);
        }
        ck_assert_int_eq(root_write_object(root, ROOT_FS_CGROUP, mount, a, "tasks", "999999999"), -ESRCH);
        /* Back to the hierarchy's root, then the cpuset goes. */
        ck_assert_int_eq(root_write_object(root, ROOT_FS_CGROUP, mount, NULL, "tasks", id), 0);
        free(where);
        ck_assert_int_eq(root_read_line(root, in, &where), 0);
        ck_assert_str_eq(where, "/");
        ck_assert_int_eq(root_rmdir_object(root, ROOT_FS_CGROUP, mount, a), 0);
        ck_assert_uint_eq(root_cgroup_counts().direct, 0);
}
END_TEST

START_TEST(test_direct) {
        /* Each test runs in a process of its own, which has not read the switch yet. */
        ck_assert_int_eq(setenv("RTPART_LIBCGROUP", "0", 1), 0);
        _cleanup_free_ char *a = make_cpuset("a");
        ck_assert_int_eq(root_rmdir_object(root, ROOT_FS_CGROUP, mount, a), 0);
        ck_assert_uint_eq(root_cgroup_counts().library, 0);
        ck_assert_uint_eq(root_cgroup_counts().direct, 4);
}
END_TEST

START_TEST(test_value_libcgroup_would_not_write) {
        _cleanup_free_ char *a = make_cpuset("a");
        RootCgroupCounts before = root_cgroup_counts();
        /* Empty: libcgroup writes nothing at all. Two lines: it writes two. Direct, both. */
        ck_assert_int_eq(root_write_object(root, ROOT_FS_CGROUP, mount, a, "cpuset.mems", ""), 0);
        (void) root_write_object(root, ROOT_FS_CGROUP, mount, a, "cpuset.mems", "0\n0");
        ck_assert_uint_eq(root_cgroup_counts().direct, before.direct + 2);
        ck_assert_uint_eq(root_cgroup_counts().library, before.library);
}
END_TEST

int main(void) {
        if (geteuid() != 0) {
                printf("SKIP: not root: making cpusets needs root\n");
                return 77;
        }
        _cleanup_(root_freep) Root *r = NULL;
        _cleanup_(host_freep) Host *h = NULL;
        int k = root_new("/", &r);
        if (k >= 0)
                k = host_discover(r, 0, &h);
        if (k < 0) {
                fprintf(stderr, "cannot discover this host: %s\n", strerror(-k));
                return EXIT_FAILURE;
        }
        if (!h->cpuset_v1_mount) {
                printf("SKIP: no cgroup v1 cpuset hierarchy on this machine\n");
                return 77;
        }
        _cleanup_free_ char *p = NULL, *nodes = NULL;
        CpuSet s;
        mount = h->cpuset_v1_mount;
        if (asprintf(&abs_mount, "/%s", mount) < 0 || asprintf(&p, "%s/cpuset.cpus", mount) < 0)
                return EXIT_FAILURE;
        if (root_read_cpu_list(r, p, &s) < 0 || cpu_set_is_empty(&s)) {
                printf("SKIP: %s has no readable cpuset.cpus (a v1 mount without the prefix)\n", mount);
                return 77;
        }
        free(p);
        if (asprintf(&cpus, "%d", cpu_set_last(&s)) < 0 || asprintf(&p, "%s/cpuset.mems", mount) < 0 ||
            root_read_line(r, p, &nodes) < 0 || !(mems = strndup(nodes, strcspn(nodes, ",-"))))
                return EXIT_FAILURE;

        main_pid = getpid();
        Suite *suite = suite_create("cgroup-host");
        TCase *tc = tcase_create("libcgroup");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_make_write_remove);
        tcase_add_test(tc, test_exclusive_overlap);
        tcase_add_test(tc, test_tasks);
        tcase_add_test(tc, test_direct);
        tcase_add_test(tc, test_value_libcgroup_would_not_write);
        suite_add_tcase(suite, tc);
        k = test_run(suite);
        usleep(100 * 1000); /* a failed test's child, killed as its parent ended, has left */
        remove_test_cpusets();
        free(abs_mount);
        free(cpus);
        free(mems);
        return k;
}
