/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "proc.h"
#include "test-util.h"

/* Lines as Linux 6.1 prints them. */
static const char kthreadd_stat[] =
        "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 26 0 0 18446744073709551615 0 0 0 0 0 0 0 "
        "2147483647 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
static const char ksoftirqd_stat[] =
        "14 (ksoftirqd/0) S 2 0 0 0 -1 69238848 0 0 0 0 0 41 0 0 -3 0 1 0 27 0 0 18446744073709551615 0 0 0 0 0 0 "
        "0 2147483647 0 0 0 0 17 0 2 1 0 0 0 0 0 0 0 0 0 0 0\n";
static const char cat_stat[] =
        "13063 (cat) R 12980 12980 4954 0 -1 4194304 102 0 0 0 0 0 0 0 20 0 1 0 1844497 3133440 390 "
        "18446744073709551615 94639765626880 94639765646761 140727932543808 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 "
        "94639765662768 94639765664384 94640745574400 140727932545666 140727932545686 140727932545686 "
        "140727932547051 0\n";

START_TEST(test_stat_kthreads) {
        ProcStat s;
        ck_assert_int_eq(proc_stat_parse(kthreadd_stat, &s), 0);
        ck_assert_int_eq(s.pid, 2);
        ck_assert_str_eq(s.comm, "kthreadd");
        ck_assert_int_eq(s.state, 'S');
        ck_assert_int_eq(s.ppid, 0);
        ck_assert_uint_eq(s.flags, 2129984);
        ck_assert(s.flags & PROC_PF_KTHREAD);
        ck_assert(!(s.flags & PROC_PF_NO_SETAFFINITY));
        ck_assert_uint_eq(s.rt_priority, 0);
        ck_assert_uint_eq(s.policy, PROC_SCHED_OTHER);
        proc_stat_done(&s);

        ck_assert_int_eq(proc_stat_parse(ksoftirqd_stat, &s), 0);
        ck_assert_int_eq(s.pid, 14);
        ck_assert_str_eq(s.comm, "ksoftirqd/0");
        ck_assert_int_eq(s.ppid, 2);
        ck_assert_uint_eq(s.cpu_ticks, 41); /* utime 0 + stime 41 */
        ck_assert_uint_eq(s.start_ticks, 27);
        ck_assert_int_eq(s.processor, 0);
        ck_assert(s.flags & PROC_PF_KTHREAD);
        ck_assert(s.flags & PROC_PF_NO_SETAFFINITY);
        ck_assert_uint_eq(s.rt_priority, 2);
        ck_assert_uint_eq(s.policy, PROC_SCHED_FIFO);
        proc_stat_done(&s);

        /* rsslim and addresses above LLONG_MAX are fine */
        ck_assert_int_eq(proc_stat_parse(cat_stat, &s), 0);
        ck_assert_str_eq(s.comm, "cat");
        ck_assert_int_eq(s.ppid, 12980);
        ck_assert(!(s.flags & PROC_PF_KTHREAD));
        proc_stat_done(&s);
}
END_TEST

START_TEST(test_stat_odd_comm) {
        /* A task may call itself "a) (b) S 1": the comm runs to the LAST ')'. */
        ProcStat s;
        ck_assert_int_eq(proc_stat_parse("77 (a) (b) S 1) R 5 0 0 0 -1 64 0 0 0 0 0 0 0 0 -51 0 1 0 9 0 0 "
                                         "18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 3 50 2 0 0 0\n",
                                         &s),
                         0);
        ck_assert_str_eq(s.comm, "a) (b) S 1");
        ck_assert_int_eq(s.state, 'R');
        ck_assert_int_eq(s.ppid, 5);
        ck_assert_uint_eq(s.flags, 64);
        ck_assert_uint_eq(s.rt_priority, 50);
        ck_assert_uint_eq(s.policy, PROC_SCHED_RR);
        ck_assert_int_eq(s.processor, 3);
        ck_assert_uint_eq(s.start_ticks, 9);
        proc_stat_done(&s);

        ck_assert_int_eq(proc_stat_parse("8 (with space) S 2 0 0 0 -1 2097216 0 0 0 0 0 0 0 0 20 0 1 0 9 0 0 0 0 0 0 "
                                         "0 0 0 0 0 0 0 0 0 17 0 0 5",
                                         &s),
                         0);
        ck_assert_str_eq(s.comm, "with space");
        ck_assert_uint_eq(s.policy, PROC_SCHED_IDLE);
        proc_stat_done(&s);

        ck_assert_int_eq(proc_stat_parse("9 () S 2 0 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 9 0 0 0 0 0 0 "
                                         "0 0 0 0 0 0 0 0 0 17 0 0 0",
                                         &s),
                         0);
        ck_assert_str_eq(s.comm, "");
        proc_stat_done(&s);
}
END_TEST

START_TEST(test_stat_invalid) {
        ProcStat s;
        ck_assert_int_eq(proc_stat_parse(NULL, &s), -EINVAL);
        ck_assert_int_eq(proc_stat_parse("", &s), -EINVAL);
        ck_assert_int_eq(proc_stat_parse("garbage", &s), -EINVAL);
        ck_assert_int_eq(proc_stat_parse("12 (x S 2", &s), -EINVAL);
        ck_assert_int_eq(proc_stat_parse("x (a) S 2 0 0 0 -1 0", &s), -EINVAL);
        /* cut before field 41 (policy) */
        ck_assert_int_eq(proc_stat_parse("2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 26 0 0", &s),
                         -EINVAL);
        /* a letter where a number belongs */
        ck_assert_int_eq(proc_stat_parse("2 (k) S 0 0 0 0 -1 x 0 0 0 0 0 0 0 0 20 0 1 0 26 0 0 0 0 0 0 "
                                         "0 0 0 0 0 0 0 0 0 17 0 0 0",
                                         &s),
                         -EINVAL);
        /* rt_priority out of range */
        ck_assert_int_eq(proc_stat_parse("2 (k) S 0 0 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 26 0 0 0 0 0 0 "
                                         "0 0 0 0 0 0 0 0 0 17 0 100 1",
                                         &s),
                         -EINVAL);
        /* trailing junk glued to field 41 */
        ck_assert_int_eq(proc_stat_parse("2 (k) S 0 0 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 26 0 0 0 0 0 0 "
                                         "0 0 0 0 0 0 0 0 0 17 0 0 0x",
                                         &s),
                         -EINVAL);
}
END_TEST

START_TEST(test_status) {
        ProcStatus s;
        ck_assert_int_eq(proc_status_parse("Name:\tkthreadd\nUmask:\t0000\nState:\tS (sleeping)\nTgid:\t2\nPid:\t2\n"
                                           "PPid:\t0\nKthread:\t1\nCpus_allowed:\tff\nCpus_allowed_list:\t0-3,5\n"
                                           "Mems_allowed_list:\t0\n",
                                           &s),
                         0);
        ck_assert_int_eq(s.ppid, 0);
        ck_assert_int_eq(s.kthread, 1);
        ck_assert(s.has_cpus_allowed);
        _cleanup_free_ char *l = cpu_set_format_list(&s.cpus_allowed);
        ck_assert_str_eq(l, "0-3,5"); /* the list wins over the mask */

        /* older kernels: no Kthread line; mask only */
        ck_assert_int_eq(proc_status_parse("Name:\tx\nPPid:\t2\nCpus_allowed:\t00000000,00000101\n", &s), 0);
        ck_assert_int_eq(s.ppid, 2);
        ck_assert_int_eq(s.kthread, -1);
        ck_assert(s.has_cpus_allowed);
        _cleanup_free_ char *m = cpu_set_format_list(&s.cpus_allowed);
        ck_assert_str_eq(m, "0,8");

        ck_assert_int_eq(proc_status_parse("Name:\tx\n", &s), 0);
        ck_assert_int_eq(s.ppid, -1);
        ck_assert(!s.has_cpus_allowed);

        /* "PPidX" is not "PPid" */
        ck_assert_int_eq(proc_status_parse("PPidX:\t7\n", &s), 0);
        ck_assert_int_eq(s.ppid, -1);

        ck_assert_int_eq(proc_status_parse("Cpus_allowed_list:\t0-x\n", &s), -EINVAL);
        ck_assert_int_eq(proc_status_parse("Kthread:\t7\n", &s), -EINVAL);
        ck_assert_int_eq(proc_status_parse(NULL, &s), -EINVAL);
}
END_TEST

START_TEST(test_policy_names) {
        ck_assert_str_eq(proc_policy_to_string(PROC_SCHED_FIFO), "fifo");
        ck_assert_str_eq(proc_policy_to_string(PROC_SCHED_OTHER), "other");
        ck_assert_str_eq(proc_policy_to_string(PROC_SCHED_DEADLINE), "deadline");
        ck_assert_ptr_null(proc_policy_to_string(4)); /* SCHED_ISO: never merged */
        ck_assert_ptr_null(proc_policy_to_string(99));
        ck_assert_int_eq(proc_policy_from_string("rr"), PROC_SCHED_RR);
        ck_assert_int_eq(proc_policy_from_string("idle"), PROC_SCHED_IDLE);
        ck_assert_int_eq(proc_policy_from_string("FIFO"), -EINVAL);
        ck_assert_int_eq(proc_policy_from_string(NULL), -EINVAL);
}
END_TEST

START_TEST(test_sched_values) {
        unsigned policy = 77, prio = 77;
        char *s;

        /* every value the kthread read verb produces parses back to what it came from */
        static const struct {
                unsigned policy, prio;
                const char *text;
        } round[] = {
                { PROC_SCHED_OTHER, 0, "other:0" },
                { PROC_SCHED_FIFO, 2, "fifo:2" },
                { PROC_SCHED_RR, 99, "rr:99" },
                { PROC_SCHED_BATCH, 0, "batch:0" },
                { PROC_SCHED_IDLE, 0, "idle:0" },
                { PROC_SCHED_DEADLINE, 0, "deadline:0" },
                { 4, 0, "4:0" },
                { 7, 0, "7:0" },
        };
        for (size_t i = 0; i < ELEMENTSOF(round); i++) {
                ck_assert_int_eq(proc_sched_format(round[i].policy, round[i].prio, &s), 0);
                ck_assert_str_eq(s, round[i].text);
                free(s);
                ck_assert_int_eq(proc_sched_parse(round[i].text, &policy, &prio), 0);
                ck_assert_uint_eq(policy, round[i].policy);
                ck_assert_uint_eq(prio, round[i].prio);
        }
        ck_assert_int_eq(proc_sched_parse("1:50", &policy, &prio), 0);
        ck_assert_uint_eq(policy, PROC_SCHED_FIFO);
        ck_assert_uint_eq(prio, 50);

        /* what sched_setscheduler() would refuse, refused here; outputs untouched */
        policy = prio = 77;
        const char *bad[] = { "fifo:0",  "fifo:100", "rr:",           "other:1",          "batch:5", "fifo",
                              ":2",      "",         "FIFO:2",        "fifo:-1",          "fifo: 2", "fifo:2 ",
                              "fifo:2x", "-1:0",     "99999999999:0", "fifo:00000000002x" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                ck_assert_msg(proc_sched_parse(bad[i], &policy, &prio) == -EINVAL, "'%s' parsed", bad[i]);
        ck_assert_int_eq(proc_sched_parse(NULL, &policy, &prio), -EINVAL);
        ck_assert_uint_eq(policy, 77);
        ck_assert_uint_eq(prio, 77);
}
END_TEST

int main(void) {
        Suite *s = suite_create("proc");
        TCase *tc = tcase_create("parse");
        tcase_add_test(tc, test_stat_kthreads);
        tcase_add_test(tc, test_stat_odd_comm);
        tcase_add_test(tc, test_stat_invalid);
        tcase_add_test(tc, test_status);
        tcase_add_test(tc, test_policy_names);
        tcase_add_test(tc, test_sched_values);
        suite_add_tcase(s, tc);
        return test_run(s);
}
