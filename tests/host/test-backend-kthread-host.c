/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc.h"
#include "strv.h"
#include "test-util.h"

/* The kthread backend's write verb on this machine's kernel (suite host, as root): on a thread and
 * on a child process this test starts with a name of its own, each value recorded first and
 * restored after; a per-CPU kernel thread's refusal; a task that is not ours left alone. */

static Root *root;

static void setup(void) {
        ck_assert_int_eq(root_new("/", &root), 0);
        ck_assert(root_is_system(root));
}

static void teardown(void) {
        root = root_free(root);
}

/* ---- a thread of ours with a known comm ---- */

typedef struct Worker {
        pthread_t thread;
        pid_t tid;
        char comm[16];
        int ready[2]; /* the thread writes its TID here once named */
        int quit[2];  /* closed to stop it */
} Worker;

static void *worker_main(void *arg) {
        Worker *w = arg;
        pid_t tid = (pid_t) syscall(SYS_gettid);
        char c;
        (void) prctl(PR_SET_NAME, w->comm, 0, 0, 0);
        if (write(w->ready[1], &tid, sizeof(tid)) != sizeof(tid))
                return NULL;
        while (read(w->quit[0], &c, 1) < 0 && errno == EINTR)
                ;
        return NULL;
}

static void worker_start(Worker *w) {
        *w = (Worker) {};
        snprintf(w->comm, sizeof(w->comm), "rtpt-%d", (int) getpid() % 10000000);
        ck_assert_int_eq(pipe2(w->ready, O_CLOEXEC), 0);
        ck_assert_int_eq(pipe2(w->quit, O_CLOEXEC), 0);
        ck_assert_int_eq(pthread_create(&w->thread, NULL, worker_main, w), 0);
        ck_assert_int_eq(read(w->ready[0], &w->tid, sizeof(w->tid)), (ssize_t) sizeof(w->tid));
}

static void worker_stop(Worker *w) {
        close(w->quit[1]);
        ck_assert_int_eq(pthread_join(w->thread, NULL), 0);
        close(w->quit[0]);
        close(w->ready[0]);
        close(w->ready[1]);
}

static Knob make_knob(char *id, char *path, bool affinity) {
        return (Knob) {
                .id = id,
                .domain = DOMAIN_KTHREAD,
                .kind = affinity ? VALUE_CPU_LIST : VALUE_AUTO,
                .path = path,
        };
}

static void expect_sched(pid_t tid, int policy, int prio) {
        struct sched_param p = {};
        int got = sched_getscheduler(tid);
        ck_assert_int_ge(got, 0);
        ck_assert_int_eq(got & ~SCHED_RESET_ON_FORK, policy);
        ck_assert_int_eq(sched_getparam(tid, &p), 0);
        ck_assert_int_eq(p.sched_priority, prio);
}

static char *read_value(const Knob *k) {
        char *v = (char *) 0x1;
        ck_assert_int_eq(backend_kthread.read(root, k, &v), 0);
        return v;
}

/* Drives the sched knob of tid (named comm) through fifo:2, other:0 and back to where it was. */
static void sched_cycle(pid_t tid, const char *comm) {
        _cleanup_free_ char *id = NULL, *path = NULL, *orig = NULL;
        struct sched_param op = {};
        ck_assert(asprintf(&id, "kthread/%s/sched", comm) >= 0);
        ck_assert(asprintf(&path, "proc/%d/stat", (int) tid) >= 0);
        Knob k = make_knob(id, path, false);

        /* recorded first: the kernel's view and the read verb's */
        int orig_policy = sched_getscheduler(tid);
        ck_assert_int_ge(orig_policy, 0);
        ck_assert_int_eq(sched_getparam(tid, &op), 0);
        orig = read_value(&k);
        ck_assert_ptr_nonnull(orig);

        int r = backend_write(&backend_kthread, root, &k, "fifo:2");
        ck_assert_msg(r == 0, "write fifo:2 on %d: %d (%s)", (int) tid, r, r < 0 ? strerror(-r) : "");
        expect_sched(tid, SCHED_FIFO, 2);
        _cleanup_free_ char *v1 = read_value(&k);
        ck_assert_str_eq(v1, "fifo:2");

        ck_assert_int_eq(backend_write(&backend_kthread, root, &k, "rr:3"), 0);
        expect_sched(tid, SCHED_RR, 3);

        ck_assert_int_eq(backend_write(&backend_kthread, root, &k, "other:0"), 0);
        expect_sched(tid, SCHED_OTHER, 0);
        _cleanup_free_ char *v2 = read_value(&k);
        ck_assert_str_eq(v2, "other:0");

        /* a value the kernel refuses for its own reasons is an error, not a refusal */
        ck_assert_int_eq(backend_write(&backend_kthread, root, &k, "fifo:0"), -EINVAL);

        /* restored: exactly what was recorded */
        ck_assert_int_eq(backend_write(&backend_kthread, root, &k, orig), 0);
        expect_sched(tid, orig_policy & ~SCHED_RESET_ON_FORK, op.sched_priority);
        _cleanup_free_ char *v3 = read_value(&k);
        ck_assert_str_eq(v3, orig);
}

/* Drives the affinity knob of tid through its first allowed CPU and back. */
static void affinity_cycle(pid_t tid, const char *comm) {
        _cleanup_free_ char *id = NULL, *path = NULL, *orig = NULL, *one = NULL;
        cpu_set_t before, now;
        ck_assert(asprintf(&id, "kthread/%s/affinity", comm) >= 0);
        ck_assert(asprintf(&path, "proc/%d/stat", (int) tid) >= 0);
        Knob k = make_knob(id, path, true);

        ck_assert_int_eq(sched_getaffinity(tid, sizeof(before), &before), 0);
        orig = read_value(&k);
        ck_assert_ptr_nonnull(orig);
        CpuSet s;
        ck_assert_int_eq(cpu_set_parse_list(orig, &s, NULL), 0);
        ck_assert_int_eq(cpu_set_count(&s), (unsigned) CPU_COUNT(&before));
        int first = cpu_set_next(&s, 0);
        ck_assert_int_ge(first, 0);
        ck_assert(asprintf(&one, "%d", first) >= 0);

        ck_assert_int_eq(backend_write(&backend_kthread, root, &k, one), 0);
        ck_assert_int_eq(sched_getaffinity(tid, sizeof(now), &now), 0);
        ck_assert_int_eq(CPU_COUNT(&now), 1);
        ck_assert(CPU_ISSET(first, &now));
        _cleanup_free_ char *v = read_value(&k);
        ck_assert_str_eq(v, one);

        /* restored */
        ck_assert_int_eq(backend_write(&backend_kthread, root, &k, orig), 0);
        ck_assert_int_eq(sched_getaffinity(tid, sizeof(now), &now), 0);
        ck_assert(CPU_EQUAL(&now, &before));
        _cleanup_free_ char *v2 = read_value(&k);
        ck_assert_str_eq(v2, orig);
}

START_TEST(test_thread_sched) {
        Worker w;
        worker_start(&w);
        sched_cycle(w.tid, w.comm);
        worker_stop(&w);
}
END_TEST

START_TEST(test_thread_affinity) {
        Worker w;
        worker_start(&w);
        affinity_cycle(w.tid, w.comm);
        worker_stop(&w);
}
END_TEST

START_TEST(test_child_process) {
        char comm[16];
        int ready[2];
        snprintf(comm, sizeof(comm), "rtpc-%d", (int) getpid() % 10000000);
        ck_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
        pid_t child = fork();
        ck_assert_int_ge(child, 0);
        if (child == 0) {
                (void) prctl(PR_SET_NAME, comm, 0, 0, 0);
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
                if (write(ready[1], "x", 1) != 1)
                        _exit(1);
                for (;;)
                        pause();
        }
        char c;
        ck_assert_int_eq(read(ready[0], &c, 1), 1);
        close(ready[0]);
        close(ready[1]);
        sched_cycle(child, comm);
        affinity_cycle(child, comm);

        /* gone: nothing to hold, nothing to restore */
        _cleanup_free_ char *path = NULL, *id = NULL;
        ck_assert(asprintf(&id, "kthread/%s/sched", comm) >= 0);
        ck_assert(asprintf(&path, "proc/%d/stat", (int) child) >= 0);
        Knob k = make_knob(id, path, false);
        ck_assert_int_eq(kill(child, SIGKILL), 0);
        ck_assert_int_eq(waitpid(child, NULL, 0), child);
        ck_assert_int_eq(backend_write(&backend_kthread, root, &k, "fifo:2"), KNOB_SKIPPED);
        ck_assert_int_eq(backend_write(&backend_kthread, root, &k, NULL), 0);
        _cleanup_free_ char *v = read_value(&k);
        ck_assert_ptr_null(v);
}
END_TEST

START_TEST(test_foreign_task) {
        /* PID 1 is no kernel thread and not ours: neither read nor written, even by its PID. The
         * value written is its own, so that a failure of this test changes nothing either. */
        _cleanup_free_ char *text = NULL, *id = NULL, *cur = NULL;
        ProcStat st;
        ck_assert_int_eq(root_read_file(root, "proc/1/stat", &text, NULL), 0);
        ck_assert_int_eq(proc_stat_parse(text, &st), 0);
        ck_assert_int_eq(proc_sched_format(st.policy, st.rt_priority, &cur), 0);
        ck_assert(asprintf(&id, "kthread/%s/sched", st.comm) >= 0);
        proc_stat_done(&st);
        Knob k = make_knob(id, (char *) "proc/1/stat", false);
        _cleanup_free_ char *v = read_value(&k);
        ck_assert_ptr_null(v);
        ck_assert_int_eq(backend_write(&backend_kthread, root, &k, cur), KNOB_SKIPPED);
}
END_TEST

START_TEST(test_pinned_refused) {
        /* a per-CPU kernel thread (PF_NO_SETAFFINITY): the kernel's EINVAL is KNOB_REFUSED. Its
         * own affinity is what is written, so nothing would change even if the kernel took it. */
        DIR *d = NULL;
        ck_assert_int_eq(root_opendir(root, "proc", &d), 0);
        int pid = 0;
        _cleanup_free_ char *comm = NULL, *cpus = NULL;
        for (struct dirent *de; !pid && (de = readdir(d));) {
                _cleanup_free_ char *text = NULL, *status = NULL;
                ProcStat st;
                ProcStatus s;
                int n = atoi(de->d_name);
                if (n <= 0 || root_read_linef(root, &text, "proc/%d/stat", n) < 0 || proc_stat_parse(text, &st) < 0)
                        continue;
                if ((st.flags & PROC_PF_KTHREAD) && (st.flags & PROC_PF_NO_SETAFFINITY) &&
                    startswith(st.comm, "ksoftirqd/")) {
                        char path[64];
                        snprintf(path, sizeof(path), "proc/%d/status", n);
                        if (root_read_file(root, path, &status, NULL) >= 0 && proc_status_parse(status, &s) >= 0 &&
                            s.has_cpus_allowed) {
                                pid = n;
                                comm = strdup(st.comm);
                                cpus = cpu_set_format_list(&s.cpus_allowed);
                        }
                }
                proc_stat_done(&st);
        }
        closedir(d);
        if (!pid) {
                test_skip("no ksoftirqd thread in this /proc (a PID namespace of its own?): the kernel's refusal "
                          "for a per-CPU thread not tested");
                return;
        }
        _cleanup_free_ char *id = NULL, *path = NULL;
        ck_assert(asprintf(&id, "kthread/%s/affinity", comm) >= 0);
        ck_assert(asprintf(&path, "proc/%d/stat", pid) >= 0);
        Knob k = make_knob(id, path, true);
        _cleanup_free_ char *v = read_value(&k);
        ck_assert_str_eq(v, cpus);
        ck_assert_int_eq(backend_write(&backend_kthread, root, &k, cpus), KNOB_REFUSED);
}
END_TEST

int main(int argc, char *argv[]) {
        if (geteuid() != 0) {
                printf("SKIP: not root: setting another thread's realtime priority needs CAP_SYS_NICE\n");
                return 77;
        }
        if (access("/proc/self/stat", R_OK) < 0) {
                printf("SKIP: no /proc on this machine\n");
                return 77;
        }
        /* A cgroup without a realtime budget (CONFIG_RT_GROUP_SCHED) refuses SCHED_FIFO to all. */
        pid_t probe = fork();
        if (probe == 0) {
                struct sched_param p = { .sched_priority = 1 };
                _exit(sched_setscheduler(0, SCHED_FIFO, &p) < 0 ? 1 : 0);
        }
        int status = 0;
        if (probe < 0 || waitpid(probe, &status, 0) != probe || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                printf("SKIP: SCHED_FIFO is refused here (no realtime budget in this cgroup?)\n");
                return 77;
        }

        Suite *s = suite_create("backend-kthread-host");
        TCase *tc = tcase_create("write");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_thread_sched);
        tcase_add_test(tc, test_thread_affinity);
        tcase_add_test(tc, test_child_process);
        tcase_add_test(tc, test_foreign_task);
        suite_add_tcase(s, tc);
        /* its own meson test (test-backend-kthread-host-pinned): it may be skipped */
        tc = tcase_create("pinned");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_pinned_refused);
        suite_add_tcase(s, tc);
        return test_run_case(s, argc > 1 ? argv[1] : NULL);
}
