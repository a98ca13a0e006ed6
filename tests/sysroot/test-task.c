/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

#include "proc.h"
#include "strv.h"
#include "task.h"
#include "test-util.h"

static CpuSet cpus(const char *list) {
        CpuSet s;
        ck_assert_int_eq(cpu_set_parse_list(list, &s, NULL), 0);
        return s;
}

static void assert_cgroup(const char *text, const char *want) {
        char *got = NULL;
        int r = task_cgroup_parse(text, &got);
        if (!want) {
                ck_assert_msg(r == -ENOENT, "'%s' gave %d '%s'", text, r, strempty(got));
                return;
        }
        ck_assert_msg(r == 0, "'%s' gave %d", text, r);
        ck_assert_str_eq(got, want);
        free(got);
}

START_TEST(test_cgroup_parse) {
        /* Hybrid, as this kind of machine has it: the v1 cpuset line wins over the v2 one. */
        assert_cgroup("9:name=systemd:/\n4:memory:/x/y\n3:cpuset:/rtpart-rt\n1:cpu:/\n0::/\n", "/rtpart-rt");
        /* Pure v2. */
        assert_cgroup("0::/user.slice/user-0.slice/session-1.scope\n", "/user.slice/user-0.slice/session-1.scope");
        assert_cgroup("0::/machine.slice", "/machine.slice"); /* no final newline */
        /* Controllers that share a hierarchy. */
        assert_cgroup("5:cpu,cpuset,cpuacct:/rtpart-nrt\n0::/\n", "/rtpart-nrt");
        /* A controller whose name only starts like cpuset is not it. */
        assert_cgroup("2:cpusetx:/b\n", NULL);
        assert_cgroup("4:memory:/a\n", NULL);
        assert_cgroup("", NULL);
        assert_cgroup("garbage\n", NULL);
        /* A v1 cpuset and no v2 line. */
        assert_cgroup("3:cpuset:/\n", "/");
}
END_TEST

static Task task(const char *comm, const char *cgroup, const char *allowed) {
        return (Task) { .pid = 4242, .comm = (char *) comm, .cgroup = (char *) cgroup, .cpus_allowed = cpus(allowed) };
}

START_TEST(test_rules) {
        char *partitions[] = { (char *) "/rtpart-rt", NULL };
        char *allow[] = { (char *) "qemu-*", (char *) "/machine.slice", (char *) "!qemu-bad", NULL };
        TaskRules r = { .isolated = cpus("1-3"), .partitions = partitions, .allow = allow };
        Task t;

        t = task("bash", "/user.slice", "0-3");
        ck_assert(task_on_isolated(&r, &t));
        t = task("bash", "/user.slice", "0");
        ck_assert(!task_on_isolated(&r, &t)); /* housekeeping only */
        t = task("bash", NULL, "3");
        ck_assert(task_on_isolated(&r, &t)); /* no cgroup: no partition either */
        t = task("kworker/1:0", "/", "1");
        t.kernel = true;
        ck_assert(!task_on_isolated(&r, &t)); /* the kthread domain's */

        /* A partition and what is below it; not a name that merely starts alike. */
        t = task("vcpu", "/rtpart-rt", "1");
        ck_assert(task_is_allowed(&r, &t));
        t = task("vcpu", "/rtpart-rt/vm1", "1");
        ck_assert(!task_on_isolated(&r, &t));
        t = task("vcpu", "/rtpart-rtx", "1");
        ck_assert(task_on_isolated(&r, &t));

        /* Allow entries: comm patterns, cgroups, exceptions. */
        t = task("qemu-system-x86", "/", "0-3");
        ck_assert(!task_on_isolated(&r, &t));
        t = task("bash", "/machine.slice/machine-qemu.scope", "0-3");
        ck_assert(!task_on_isolated(&r, &t));
        t = task("bash", "/machine.slicer", "0-3");
        ck_assert(task_on_isolated(&r, &t));
        t = task("qemu-bad", "/machine.slice", "0-3");
        ck_assert(task_on_isolated(&r, &t)); /* the exception beats both entries */
        t = task("qemu-bad", "/rtpart-rt", "0-3");
        ck_assert(!task_on_isolated(&r, &t)); /* but not a partition */

        /* "/" holds every cgroup. */
        char *root_only[] = { (char *) "/", NULL };
        TaskRules r2 = { .isolated = cpus("1"), .allow = root_only };
        t = task("bash", "/user.slice", "0-1");
        ck_assert(!task_on_isolated(&r2, &t));
        t = task("bash", NULL, "0-1");
        ck_assert(task_on_isolated(&r2, &t));
        ck_assert(!task_rules_allow_all(&r2));
}
END_TEST

START_TEST(test_allow_all) {
        char *star[] = { (char *) "bash", (char *) "*", NULL };
        char *star_but[] = { (char *) "*", (char *) "!rtpart-probe*", NULL };
        char *some[] = { (char *) "qemu-*", NULL };
        TaskRules r = { .allow = star };
        ck_assert(task_rules_allow_all(&r));
        r.allow = star_but;
        ck_assert(!task_rules_allow_all(&r));
        r.allow = some;
        ck_assert(!task_rules_allow_all(&r));
        r.allow = NULL;
        ck_assert(!task_rules_allow_all(&r));

        /* "*" with an exception: only what the exception names is checked. */
        r = (TaskRules) { .isolated = cpus("1"), .allow = star_but };
        Task t = task("rtpart-probe", "/", "1");
        ck_assert(task_on_isolated(&r, &t));
        t = task("sshd", "/", "1");
        ck_assert(!task_on_isolated(&r, &t));
}
END_TEST

START_TEST(test_move) {
        Task t = task("app", "/", "0-3");
        CpuSet target, iso = cpus("1-3"), hk = cpus("0");

        ck_assert_ptr_null(task_move_refusal(&t));
        t.policy = PROC_SCHED_BATCH;
        ck_assert_ptr_null(task_move_refusal(&t));
        t.policy = PROC_SCHED_IDLE;
        ck_assert_ptr_null(task_move_refusal(&t));
        t.policy = PROC_SCHED_FIFO;
        ck_assert_ptr_nonnull(strstr(task_move_refusal(&t), "realtime"));
        t.policy = PROC_SCHED_RR;
        ck_assert_ptr_nonnull(task_move_refusal(&t));
        t.policy = PROC_SCHED_DEADLINE;
        ck_assert_ptr_nonnull(task_move_refusal(&t));
        t.policy = PROC_SCHED_OTHER;
        t.flags = PROC_PF_NO_SETAFFINITY;
        ck_assert_ptr_nonnull(strstr(task_move_refusal(&t), "pins"));

        /* Its own CPUs without the isolated ones; the housekeeping CPUs when none is left. */
        t = task("app", "/", "0-3");
        task_move_target(&t, &iso, &hk, &target);
        ck_assert(cpu_set_equal(&target, &hk));
        t = task("app", "/", "1-2");
        task_move_target(&t, &iso, &hk, &target);
        ck_assert(cpu_set_equal(&target, &hk));
        t = task("app", "/", "0,2,4-5");
        task_move_target(&t, &iso, &hk, &target);
        CpuSet want = cpus("0,4-5");
        ck_assert(cpu_set_equal(&target, &want));
}
END_TEST

START_TEST(test_read_fixture) {
        _cleanup_free_ char *path = test_copy_host("vm");
        Root *root = NULL;
        Task t;

        ck_assert_int_eq(root_new(path, &root), 0);
        ck_assert_int_eq(task_read(root, 408, &t), 0);
        ck_assert_int_eq(t.pid, 408);
        ck_assert_str_eq(t.comm, "bash");
        ck_assert_str_eq(t.cgroup, "/");
        CpuSet all = cpus("0-3");
        ck_assert(cpu_set_equal(&t.cpus_allowed, &all));
        ck_assert(!t.kernel);
        ck_assert_uint_eq(t.policy, PROC_SCHED_OTHER);
        task_done(&t);

        /* kthreadd and one of its children are kernel threads. */
        ck_assert_int_eq(task_read(root, 2, &t), 0);
        ck_assert(t.kernel);
        task_done(&t);
        ck_assert_int_eq(task_read(root, 10, &t), 0);
        ck_assert(t.kernel);
        task_done(&t);

        /* Gone. */
        ck_assert_int_eq(task_read(root, 999999, &t), -ENOENT);

        /* A task in a partition, on CPU 1 only, and one without a cgroup file. */
        test_write(path, "proc/4242/stat",
                   "4242 (vcpu 0) S 1 4242 4242 0 -1 4194560 0 0 0 0 0 0 0 0 -2 0 1 0 50 0 0 18446744073709551615 0 "
                   "0 0 0 0 0 0 0 0 0 0 0 17 1 1 1 0 0 0 0 0 0 0 0 0 0 0\n");
        test_write(path, "proc/4242/status", "Name:\tvcpu 0\nPPid:\t1\nKthread:\t0\nCpus_allowed_list:\t1\n");
        test_write(path, "proc/4242/cgroup", "0::/rtpart-rt/vm1\n");
        ck_assert_int_eq(task_read(root, 4242, &t), 0);
        ck_assert_str_eq(t.comm, "vcpu 0");
        ck_assert_str_eq(t.cgroup, "/rtpart-rt/vm1");
        ck_assert_uint_eq(t.policy, PROC_SCHED_FIFO);
        ck_assert_ptr_nonnull(task_move_refusal(&t));
        CpuSet one = cpus("1");
        ck_assert(cpu_set_equal(&t.cpus_allowed, &one));
        task_done(&t);
        _cleanup_free_ char *cg = NULL;
        ck_assert_int_ge(asprintf(&cg, "%s/proc/4242/cgroup", path), 0);
        ck_assert_int_eq(unlink(cg), 0);
        ck_assert_int_eq(task_read(root, 4242, &t), 0);
        ck_assert_ptr_null(t.cgroup);
        task_done(&t);

        /* Files that are not a task's. */
        test_write(path, "proc/4243/stat", "nonsense\n");
        test_write(path, "proc/4243/status", "Name:\tx\n");
        ck_assert_int_eq(task_read(root, 4243, &t), -EINVAL);

        root_free(root);
        test_rmtree(path);
}
END_TEST

START_TEST(test_read_self) {
        Root *root = NULL;
        Task t;
        cpu_set_t set;

        /* This process on the real /proc: what sched_getaffinity() says, and not a kernel thread. */
        ck_assert_int_eq(root_new("/", &root), 0);
        ck_assert_int_eq(task_read(root, getpid(), &t), 0);
        ck_assert(!t.kernel);
        ck_assert_str_eq(t.comm, "test-task");
        CPU_ZERO(&set);
        ck_assert_int_eq(sched_getaffinity(0, sizeof(set), &set), 0);
        for (unsigned cpu = 0; cpu < CPU_SETSIZE; cpu++)
                ck_assert_msg(!!CPU_ISSET(cpu, &set) == cpu_set_has(&t.cpus_allowed, cpu), "CPU %u", cpu);

        /* Setting the affinity it has is allowed and changes nothing; an empty set is refused. */
        ck_assert_int_eq(task_set_affinity(0, &t.cpus_allowed), 0);
        CpuSet empty = {};
        ck_assert_int_eq(task_set_affinity(0, &empty), -EINVAL);
        Task again;
        ck_assert_int_eq(task_read(root, getpid(), &again), 0);
        ck_assert(cpu_set_equal(&again.cpus_allowed, &t.cpus_allowed));
        task_done(&again);
        task_done(&t);
        root_free(root);
}
END_TEST

int main(void) {
        Suite *s = suite_create("task");
        TCase *tc = tcase_create("rules");
        tcase_add_test(tc, test_cgroup_parse);
        tcase_add_test(tc, test_rules);
        tcase_add_test(tc, test_allow_all);
        tcase_add_test(tc, test_move);
        suite_add_tcase(s, tc);
        tc = tcase_create("read");
        tcase_add_test(tc, test_read_fixture);
        tcase_add_test(tc, test_read_self);
        suite_add_tcase(s, tc);
        return test_run(s);
}
