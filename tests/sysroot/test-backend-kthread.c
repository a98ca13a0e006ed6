/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "proc.h"
#include "strv.h"
#include "test-util.h"

#define KT 0x00208040U            /* PF_KTHREAD | PF_FORKNOEXEC | PF_NOFREEZE */
#define PERCPU (KT | 0x04000000U) /* + PF_NO_SETAFFINITY */
#define WORKER (PERCPU | 0x20U)   /* + PF_WQ_WORKER */
#define USER 0x00400100U          /* PF_RANDOMIZE | PF_SUPERPRIV */

static char *host_dir, *prof_dir;
static Root *root;
static Host *host;

/* mkdir -p without a shell: the 1024-CPU test writes thousands of files. */
static void mkdirs(const char *path) {
        _cleanup_free_ char *p = strdup(path);
        ck_assert_ptr_nonnull(p);
        for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
                *s = 0;
                ck_assert(mkdir(p, 0755) == 0 || errno == EEXIST);
                *s = '/';
        }
}

static void put(const char *dir, const char *rel, const char *text) {
        _cleanup_free_ char *path = NULL;
        ck_assert(asprintf(&path, "%s/%s", dir, rel) >= 0);
        FILE *f = fopen(path, "we");
        if (!f && errno == ENOENT) {
                mkdirs(path);
                f = fopen(path, "we");
        }
        ck_assert_msg(f, "cannot write %s", path);
        fputs(text, f);
        ck_assert_int_eq(fclose(f), 0);
}

/* A task as Linux 6.1 shows it: stat (52 fields) and the status lines rtpart reads. */
static void task_full(const char *dir, int pid, int ppid, const char *comm, unsigned flags, unsigned prio,
                      unsigned policy, const char *cpus, int kthread_line, bool with_status) {
        char rel[64], stat[512], status[512];
        int sched_prio = policy == PROC_SCHED_FIFO || policy == PROC_SCHED_RR ? -1 - (int) prio : 20;
        snprintf(stat, sizeof(stat),
                 "%d (%s) S %d 0 0 0 -1 %u 0 0 0 0 0 12 0 0 %d 0 1 0 27 0 0 18446744073709551615 0 0 0 0 0 0 0 "
                 "2147483647 0 0 0 0 17 0 %u %u 0 0 0 0 0 0 0 0 0 0 0\n",
                 pid, comm, ppid, flags, sched_prio, prio, policy);
        snprintf(rel, sizeof(rel), "proc/%d/stat", pid);
        put(dir, rel, stat);
        if (!with_status)
                return; /* nothing reads a pinned thread's status: spares files in the big test */
        int n = snprintf(status, sizeof(status),
                         "Name:\t%s\nUmask:\t0000\nState:\tS (sleeping)\nTgid:\t%d\nPid:\t%d\nPPid:\t%d\n", comm, pid,
                         pid, ppid);
        if (kthread_line >= 0)
                n += snprintf(status + n, sizeof(status) - (size_t) n, "Kthread:\t%d\n", kthread_line);
        snprintf(status + n, sizeof(status) - (size_t) n,
                 "Cpus_allowed:\tff\nCpus_allowed_list:\t%s\nMems_allowed_list:\t0\n", cpus);
        snprintf(rel, sizeof(rel), "proc/%d/status", pid);
        put(dir, rel, status);
}

static void task(const char *dir, int pid, const char *comm, unsigned flags, unsigned prio, unsigned policy,
                 const char *cpus) {
        task_full(dir, pid, pid == 2 ? 0 : 2, comm, flags, prio, policy, cpus, (flags & KT) ? 1 : 0, true);
}

static void remove_task(const char *dir, int pid) {
        _cleanup_free_ char *cmd = NULL;
        ck_assert(asprintf(&cmd, "rm -rf '%s/proc/%d'", dir, pid) >= 0);
        ck_assert_int_eq(system(cmd), 0);
}

static void setup(void) {
        host_dir = test_mini_host(8, false, 0);
        prof_dir = test_tmpdir();

        task_full(host_dir, 1, 0, "systemd", USER, 0, PROC_SCHED_OTHER, "0-7", 0, true);
        task(host_dir, 2, "kthreadd", KT, 0, PROC_SCHED_OTHER, "0-7");
        task(host_dir, 10, "ksoftirqd/0", PERCPU, 0, PROC_SCHED_OTHER, "0");
        task(host_dir, 11, "ksoftirqd/1", PERCPU, 2, PROC_SCHED_FIFO, "1");
        task(host_dir, 12, "rcuc/0", PERCPU, 1, PROC_SCHED_FIFO, "0");
        task(host_dir, 13, "ktimers/0", PERCPU, 1, PROC_SCHED_FIFO, "0");
        task(host_dir, 20, "kswapd0", KT, 0, PROC_SCHED_OTHER, "0-7");
        task(host_dir, 30, "nfsd", KT, 0, PROC_SCHED_OTHER, "0-7");
        task(host_dir, 31, "nfsd", KT, 0, PROC_SCHED_OTHER, "2-3");
        task(host_dir, 40, "dup", PERCPU, 0, PROC_SCHED_OTHER, "4");
        task(host_dir, 41, "dup", KT, 0, PROC_SCHED_BATCH, "0-7");
        task(host_dir, 50, "kworker/0:1-events", WORKER, 0, PROC_SCHED_OTHER, "0");
        task(host_dir, 60, "odd) name", KT, 0, PROC_SCHED_OTHER, "0-7");
        task(host_dir, 80, "irq/41-eth1-TxRx", KT, 50, PROC_SCHED_FIFO, "3");
        /* user space */
        task_full(host_dir, 70, 1, "bash", USER, 0, PROC_SCHED_OTHER, "0-7", 0, true);
        task_full(host_dir, 72, 1, "noaslr", 0, 0, PROC_SCHED_OTHER, "0-7", 0, true);
        /* fake-tree cases: no flags but "Kthread: 1"; PF_KTHREAD missing but a child of kthreadd */
        task_full(host_dir, 71, 0, "flagless", 0, 0, PROC_SCHED_OTHER, "0-7", 1, true);
        task_full(host_dir, 73, 2, "child2", 0x40, 0, PROC_SCHED_OTHER, "0-7", -1, true);
        /* not a task */
        put(host_dir, "proc/99/stat", "garbage\n");
        put(host_dir, "proc/self/stat", "garbage\n");

        test_open_host(host_dir, &root, &host);
}

static void teardown(void) {
        host = host_free(host);
        root = root_free(root);
        test_rmtree(host_dir);
        test_rmtree(prof_dir);
        free(host_dir);
        free(prof_dir);
}

static Plan *plan_ok(const char *json) {
        return test_plan_ok(root, host, prof_dir, "p", json);
}

static void plan_error(const char *json, const char *pointer, const char *fragment) {
        test_plan_err(root, host, prof_dir, "bad", json, pointer, fragment);
}

static const Knob *knob(const Plan *p, const char *id) {
        const Knob *k = plan_find(p, id);
        ck_assert_msg(k, "no knob %s", id);
        ck_assert_int_eq(k->domain, DOMAIN_KTHREAD);
        return k;
}

static void expect(const Plan *p, const char *id, const char *path, const char *current, const char *desired,
                   bool changed) {
        const Knob *k = knob(p, id);
        ck_assert_str_eq(k->path, path);
        if (current)
                ck_assert_str_eq(k->current, current);
        else
                ck_assert_ptr_null(k->current);
        ck_assert_str_eq(k->desired, desired);
        ck_assert_msg(k->changed == changed, "%s: changed is %d", id, k->changed);
        ck_assert(!k->reboot);
}

/* realtime-virtual-host's rules, plus two to test first-match and rules without a policy */
#define RVH_KTHREADS \
        "\"kthreads\": {\"rules\": [" \
        "   {\"match\": \"ksoftirqd/*\", \"policy\": \"fifo\", \"priority\": 2}," \
        "   {\"match\": \"rcuc/*\", \"policy\": \"fifo\", \"priority\": 4}," \
        "   {\"match\": \"ktimers/*\", \"policy\": \"fifo\", \"priority\": 2}," \
        "   {\"match\": \"kswapd*\", \"cpus\": \"1\"}," \
        "   {\"match\": \"ksw*\", \"policy\": \"fifo\", \"priority\": 9}," \
        "   {\"match\": \"dup\", \"policy\": \"other\"}]}"

static const char rvh[] = "{\"cpus\": {\"isolated\": \"2-7\"}, " RVH_KTHREADS "}";
static const char rvh_default_split[] = "{" RVH_KTHREADS "}";

START_TEST(test_sched) {
        _cleanup_(plan_freep) Plan *p = plan_ok(rvh);

        expect(p, "kthread/ksoftirqd/0/sched", "proc/10/stat", "other:0", "fifo:2", true);
        expect(p, "kthread/ksoftirqd/1/sched", "proc/11/stat", "fifo:2", "fifo:2", false);
        expect(p, "kthread/rcuc/0/sched", "proc/12/stat", "fifo:1", "fifo:4", true);
        expect(p, "kthread/ktimers/0/sched", "proc/13/stat", "fifo:1", "fifo:2", true);
        /* the first matching rule wins: kswapd* has no policy, so no sched knob even though
         * ksw* would give one */
        ck_assert_ptr_null(plan_find(p, "kthread/kswapd0/sched"));
        ck_assert_ptr_null(plan_find(p, "kthread/kthreadd/sched"));
        ck_assert_ptr_null(plan_find(p, "kthread/nfsd/sched"));
        ck_assert_int_eq(knob(p, "kthread/ksoftirqd/0/sched")->kind, VALUE_AUTO);
}
END_TEST

START_TEST(test_affinity) {
        _cleanup_(plan_freep) Plan *p = plan_ok(rvh);

        /* housekeeping (0-1) by default; kthreadd included */
        expect(p, "kthread/kthreadd/affinity", "proc/2/stat", "0-7", "0-1", true);
        expect(p, "kthread/kswapd0/affinity", "proc/20/stat", "0-7", "1", true); /* the rule's cpus */
        expect(p, "kthread/odd) name/affinity", "proc/60/stat", "0-7", "0-1", true);
        expect(p, "kthread/flagless/affinity", "proc/71/stat", "0-7", "0-1", true);
        expect(p, "kthread/child2/affinity", "proc/73/stat", "0-7", "0-1", true);
        ck_assert_int_eq(knob(p, "kthread/kthreadd/affinity")->kind, VALUE_CPU_LIST);

        /* per-CPU threads: no affinity knob, counted in a note */
        ck_assert_ptr_null(plan_find(p, "kthread/ksoftirqd/0/affinity"));
        ck_assert_ptr_null(plan_find(p, "kthread/rcuc/0/affinity"));
        ck_assert_ptr_null(plan_find(p, "kthread/kworker/0:1-events/affinity"));
        ck_assert_msg(plan_has_note(p, "kthread: 6 per-CPU kernel threads are pinned by the kernel"),
                      "pinned note missing");

        /* IRQ threads follow their IRQ: no affinity knob of ours */
        ck_assert_ptr_null(plan_find(p, "kthread/irq/41-eth1-TxRx/affinity"));
        ck_assert_msg(plan_has_note(p, "kthread: 1 IRQ threads follow their IRQ's affinity"),
                      "IRQ thread note missing");

        /* user space is never touched */
        ck_assert_ptr_null(plan_find(p, "kthread/systemd/affinity"));
        ck_assert_ptr_null(plan_find(p, "kthread/bash/affinity"));
        ck_assert_ptr_null(plan_find(p, "kthread/noaslr/affinity"));

        /* 4 sched (ksoftirqd ×2, rcuc, ktimers) + 2 dup sched; affinity: kthreadd, kswapd0,
         * nfsd ×2, dup (the movable one), odd, flagless, child2 */
        ck_assert_uint_eq(plan_count_domain(p, DOMAIN_KTHREAD), 6 + 8);
}
END_TEST

START_TEST(test_same_comm) {
        _cleanup_(plan_freep) Plan *p = plan_ok(rvh);

        /* the lowest PID keeps the plain id; later ones get "#<pid>" */
        expect(p, "kthread/nfsd/affinity", "proc/30/stat", "0-7", "0-1", true);
        expect(p, "kthread/nfsd/affinity#31", "proc/31/stat", "2-3", "0-1", true);
        ck_assert_ptr_null(knob(p, "kthread/nfsd/affinity")->note);
        ck_assert_ptr_nonnull(strstr(knob(p, "kthread/nfsd/affinity#31")->note, "PID 30"));
        ck_assert_ptr_null(plan_find(p, "kthread/nfsd/affinity#30"));

        /* "dup": 40 is pinned, 41 movable. Both have sched knobs (40 first); only 41 has an
         * affinity knob, and as the only movable "dup" it keeps the plain id. */
        expect(p, "kthread/dup/sched", "proc/40/stat", "other:0", "other:0", false);
        expect(p, "kthread/dup/sched#41", "proc/41/stat", "batch:0", "other:0", true);
        expect(p, "kthread/dup/affinity", "proc/41/stat", "0-7", "0-1", true);
        ck_assert_ptr_null(plan_find(p, "kthread/dup/affinity#41"));
}
END_TEST

START_TEST(test_section_affinity) {
        _cleanup_(plan_freep) Plan *p =
                plan_ok("{\"cpus\": {\"isolated\": \"2-7\"}, \"kthreads\": {\"affinity\": \"0,7\","
                        " \"rules\": [{\"match\": \"nfsd\", \"cpus\": \"housekeeping\"}]}}");
        expect(p, "kthread/kthreadd/affinity", "proc/2/stat", "0-7", "0,7", true);
        expect(p, "kthread/nfsd/affinity", "proc/30/stat", "0-7", "0-1", true);
        /* a rule may still set an IRQ thread's priority, never its affinity */
        _cleanup_(plan_freep) Plan *q =
                plan_ok("{\"cpus\": {\"isolated\": \"2-7\"}, \"kthreads\": {\"rules\": ["
                        " {\"match\": \"irq/*-eth1-*\", \"policy\": \"fifo\", \"priority\": 60, \"cpus\": \"0\"}]}}");
        expect(q, "kthread/irq/41-eth1-TxRx/sched", "proc/80/stat", "fifo:50", "fifo:60", true);
        ck_assert_ptr_null(plan_find(q, "kthread/irq/41-eth1-TxRx/affinity"));
        /* no rule with a policy: no sched knobs at all */
        for (size_t i = 0; i < p->n_knobs; i++)
                ck_assert_msg(!strstr(p->knobs[i].id, "/sched"), "unexpected %s", p->knobs[i].id);
}
END_TEST

START_TEST(test_no_section) {
        _cleanup_(plan_freep) Plan *p = plan_ok("{\"cpus\": {\"isolated\": \"2-7\"}, \"sysctl\": {}}");
        ck_assert_uint_eq(plan_count_domain(p, DOMAIN_KTHREAD), 0);
        ck_assert(!plan_has_note(p, "kthread:"));
}
END_TEST

START_TEST(test_no_proc) {
        _cleanup_free_ char *cmd = NULL;
        ck_assert(asprintf(&cmd, "rm -rf '%s/proc/'[0-9]*", host_dir) >= 0);
        ck_assert_int_eq(system(cmd), 0);
        _cleanup_(plan_freep) Plan *p = plan_ok(rvh);
        ck_assert_uint_eq(plan_count_domain(p, DOMAIN_KTHREAD), 0);
        ck_assert(plan_has_note(p, "kthread: no kernel threads found"));
}
END_TEST

START_TEST(test_priority_validation) {
        plan_error("{\"kthreads\": {\"rules\": [{\"match\": \"a\", \"policy\": \"fifo\", \"priority\": 0}]}}",
                   "/kthreads/rules/0/priority", "from 1 to 99, not 0");
        plan_error("{\"kthreads\": {\"rules\": [{\"match\": \"a\", \"policy\": \"rr\"}]}}",
                   "/kthreads/rules/0/priority", "needs a priority from 1 to 99");
        plan_error("{\"kthreads\": {\"rules\": [{\"match\": \"a\", \"policy\": \"fifo\", \"priority\": 2},"
                   " {\"match\": \"b\", \"policy\": \"other\", \"priority\": 5}]}}",
                   "/kthreads/rules/1/priority", "must be 0, not 5");
        plan_error("{\"kthreads\": {\"rules\": [{\"match\": \"a\", \"policy\": \"idle\", \"priority\": 1}]}}",
                   "/kthreads/rules/0/priority", "must be 0");
        plan_error("{\"kthreads\": {\"rules\": [{\"match\": \"a\", \"priority\": 3, \"cpus\": \"0\"}]}}",
                   "/kthreads/rules/0/priority", "needs a policy");
        /* the schema's own range check comes first */
        plan_error("{\"kthreads\": {\"rules\": [{\"match\": \"a\", \"policy\": \"fifo\", \"priority\": 100}]}}",
                   "/kthreads/rules/0/priority", "out of range");

        /* valid edges */
        _cleanup_(plan_freep) Plan *p = plan_ok("{\"cpus\": {\"isolated\": \"2-7\"}, \"kthreads\": {\"rules\": ["
                                                " {\"match\": \"rcuc/*\", \"policy\": \"rr\", \"priority\": 99},"
                                                " {\"match\": \"ktimers/*\", \"policy\": \"batch\", \"priority\": 0},"
                                                " {\"match\": \"ksoftirqd/*\", \"policy\": \"idle\"}]}}");
        expect(p, "kthread/rcuc/0/sched", "proc/12/stat", "fifo:1", "rr:99", true);
        expect(p, "kthread/ktimers/0/sched", "proc/13/stat", "fifo:1", "batch:0", true);
        expect(p, "kthread/ksoftirqd/1/sched", "proc/11/stat", "fifo:2", "idle:0", true);
}
END_TEST

static char *read_knob(const Plan *p, const char *id) {
        const Knob *k = knob(p, id);
        const Backend *b = backend_for(DOMAIN_KTHREAD);
        char *v = (char *) 0x1;
        ck_assert_ptr_eq(b, &backend_kthread);
        int r = b->read(root, k, &v);
        ck_assert_msg(r == 0, "read %s: %d", id, r);
        return v;
}

START_TEST(test_read) {
        _cleanup_(plan_freep) Plan *p = plan_ok(rvh);
        _cleanup_free_ char *a = read_knob(p, "kthread/kswapd0/affinity");
        ck_assert_str_eq(a, "0-7");
        _cleanup_free_ char *s = read_knob(p, "kthread/ksoftirqd/0/sched");
        ck_assert_str_eq(s, "other:0");
        _cleanup_free_ char *o = read_knob(p, "kthread/odd) name/affinity");
        ck_assert_str_eq(o, "0-7");

        /* the write happened: read sees it */
        task(host_dir, 10, "ksoftirqd/0", PERCPU, 2, PROC_SCHED_FIFO, "0");
        task(host_dir, 20, "kswapd0", KT, 0, PROC_SCHED_OTHER, "1");
        _cleanup_free_ char *s2 = read_knob(p, "kthread/ksoftirqd/0/sched");
        ck_assert_str_eq(s2, "fifo:2");
        _cleanup_free_ char *a2 = read_knob(p, "kthread/kswapd0/affinity");
        ck_assert_str_eq(a2, "1");

        /* a reboot: kswapd0 has another PID, and its old PID is some other task. Found by comm. */
        task(host_dir, 20, "kcompactd0", KT, 0, PROC_SCHED_OTHER, "0-7");
        task(host_dir, 95, "kswapd0", KT, 0, PROC_SCHED_OTHER, "0,1");
        _cleanup_free_ char *a3 = read_knob(p, "kthread/kswapd0/affinity");
        ck_assert_str_eq(a3, "0-1");

        /* "#pid" ids are that PID only */
        _cleanup_free_ char *n1 = read_knob(p, "kthread/nfsd/affinity#31");
        ck_assert_str_eq(n1, "2-3");
        _cleanup_free_ char *n0 = read_knob(p, "kthread/nfsd/affinity");
        ck_assert_str_eq(n0, "0-7");
        remove_task(host_dir, 31);
        _cleanup_free_ char *n2 = read_knob(p, "kthread/nfsd/affinity#31");
        ck_assert_ptr_null(n2);

        /* the affinity knob of "dup" is the movable one (41), even though 40 has the lower PID */
        _cleanup_free_ char *d = read_knob(p, "kthread/dup/affinity");
        ck_assert_str_eq(d, "0-7");
        _cleanup_free_ char *ds = read_knob(p, "kthread/dup/sched");
        ck_assert_str_eq(ds, "other:0");
        _cleanup_free_ char *ds41 = read_knob(p, "kthread/dup/sched#41");
        ck_assert_str_eq(ds41, "batch:0");

        /* gone entirely: absent, not an error */
        remove_task(host_dir, 60);
        _cleanup_free_ char *g = read_knob(p, "kthread/odd) name/affinity");
        ck_assert_ptr_null(g);
}
END_TEST

START_TEST(test_many) {
        /* 1024 CPUs × 3 per-CPU threads + 1000 movable ones with 500 distinct names: planning
         * must stay well under a second (no quadratic name matching). */
        _cleanup_free_ char *dir = test_tmpdir_tmpfs();
        char comm[32];
        put(dir, "sys/devices/system/cpu/online", "0-7\n");
        put(dir, "proc/cpuinfo", "vendor_id\t: GenuineIntel\n");
        task(dir, 2, "kthreadd", KT, 0, PROC_SCHED_OTHER, "0-7");
        for (int c = 0; c < 1024; c++) {
                const char *names[] = { "ksoftirqd", "rcuc", "ktimers" };
                for (int j = 0; j < 3; j++) {
                        snprintf(comm, sizeof(comm), "%s/%d", names[j], c);
                        task_full(dir, 1000 + c * 3 + j, 2, comm, PERCPU, 0, PROC_SCHED_OTHER, "0", 1, false);
                }
        }
        for (int i = 0; i < 1000; i++) {
                snprintf(comm, sizeof(comm), "worker%d", i % 500);
                task(dir, 10000 + i, comm, KT, 0, PROC_SCHED_OTHER, "0-7");
        }
        Root *r;
        Host *h;
        test_open_host(dir, &r, &h);
        _cleanup_free_ char *path = test_profile(prof_dir, "p", rvh);
        _cleanup_free_ char *err = NULL;
        Plan *p = NULL;
        int k = test_plan(r, h, path, &p, &err);
        ck_assert_msg(k == 0, "plan failed: %d %s", k, strempty(err));
        expect(p, "kthread/ksoftirqd/1023/sched", "proc/4069/stat", "other:0", "fifo:2", true);
        expect(p, "kthread/worker499/affinity", "proc/10499/stat", "0-7", "0-1", true);
        expect(p, "kthread/worker499/affinity#10999", "proc/10999/stat", "0-7", "0-1", true);
        ck_assert_uint_eq(plan_count_domain(p, DOMAIN_KTHREAD), 3072 + 1001);
        ck_assert(plan_has_note(p, "kthread: 3072 per-CPU kernel threads"));
        plan_free(p);
        host_free(h);
        root_free(r);
        test_rmtree(dir);
}
END_TEST

/* ---- writes ---- */

START_TEST(test_write_fake_root) {
        /* Scheduling is a syscall on this kernel's PIDs: under a fake root every write is skipped
         * (the engine then neither owns nor journals the knob), restores included, and the tree is
         * left alone. */
        _cleanup_(plan_freep) Plan *p = plan_ok(rvh);
        _cleanup_free_ char *stat_before = NULL, *stat_after = NULL;
        ck_assert_int_eq(root_read_file(root, "proc/10/stat", &stat_before, NULL), 0);
        size_t n = 0;
        for (size_t i = 0; i < p->n_knobs; i++) {
                const Knob *k = &p->knobs[i];
                if (k->domain != DOMAIN_KTHREAD)
                        continue;
                ck_assert_int_eq(backend_write(&backend_kthread, root, k, k->desired), KNOB_SKIPPED);
                ck_assert_int_eq(backend_write(&backend_kthread, root, k, k->current), KNOB_SKIPPED);
                n++;
        }
        ck_assert_uint_gt(n, 5);
        ck_assert_int_eq(root_read_file(root, "proc/10/stat", &stat_after, NULL), 0);
        ck_assert_str_eq(stat_before, stat_after);
        _cleanup_free_ char *v = read_knob(p, "kthread/ksoftirqd/0/sched");
        ck_assert_str_eq(v, "other:0");

        /* a knob naming a pinned thread by hand reads its affinity (the write would get the
         * kernel's refusal on a real host) */
        Knob pin = {
                .id = (char *) "kthread/ksoftirqd/0/affinity",
                .domain = DOMAIN_KTHREAD,
                .kind = VALUE_CPU_LIST,
                .path = (char *) "proc/10/stat",
        };
        _cleanup_free_ char *pv = NULL;
        ck_assert_int_eq(backend_kthread.read(root, &pin, &pv), 0);
        ck_assert_str_eq(pv, "0");
        ck_assert_int_eq(backend_write(&backend_kthread, root, &pin, "0"), KNOB_SKIPPED);

        /* a knob id that is not the kthread backend's is an error, whatever the root */
        Knob bad = *knob(p, "kthread/ksoftirqd/0/sched");
        bad.id = (char *) "kthread/ksoftirqd/0/nice";
        ck_assert_int_eq(backend_write(&backend_kthread, root, &bad, "fifo:2"), -EINVAL);
        bad.id = (char *) "irq/41/affinity";
        ck_assert_int_eq(backend_write(&backend_kthread, root, &bad, "0"), -EINVAL);
}
END_TEST

START_TEST(test_fixture_write) {
        /* the committed RT host under --root: every kthread knob skipped, nothing written */
        _cleanup_free_ char *dir = fixture_host("intel-2s");
        Root *r;
        Host *h;
        test_open_host(dir, &r, &h);
        _cleanup_free_ char *path = test_profile(prof_dir, "p", rvh_default_split);
        _cleanup_free_ char *err = NULL;
        Plan *p = NULL;
        ck_assert_msg(test_plan(r, h, path, &p, &err) == 0, "%s", strempty(err));
        ck_assert(!root_is_system(r) && !root_can(r, ROOT_CAN_SCHEDULE));
        for (size_t i = 0; i < p->n_knobs; i++)
                if (p->knobs[i].domain == DOMAIN_KTHREAD)
                        ck_assert_int_eq(backend_write(&backend_kthread, r, &p->knobs[i], p->knobs[i].desired),
                                         KNOB_SKIPPED);
        plan_free(p);
        host_free(h);
        root_free(r);
}
END_TEST

/* ---- the bundled fake hosts (the build makes them: tests/fixtures/meson.build) ---- */

START_TEST(test_fixture_rt) {
        /* intel-2s: an RT kernel, so rcuc/ktimers at FIFO 1 and threaded IRQ handlers */
        _cleanup_free_ char *dir = fixture_host("intel-2s");
        Root *r;
        Host *h;
        test_open_host(dir, &r, &h);
        _cleanup_free_ char *path = test_profile(prof_dir, "p", rvh_default_split);
        _cleanup_free_ char *err = NULL, *hk = NULL, *all = NULL;
        Plan *p = NULL;
        ck_assert_msg(test_plan(r, h, path, &p, &err) == 0, "%s", strempty(err));
        hk = cpu_set_format_list(&p->housekeeping);
        all = cpu_set_format_list(&h->online);

        expect(p, "kthread/kthreadd/affinity", "proc/2/stat", all, hk, true);
        expect(p, "kthread/ksoftirqd/0/sched", knob(p, "kthread/ksoftirqd/0/sched")->path, "other:0", "fifo:2", true);
        expect(p, "kthread/rcuc/1/sched", knob(p, "kthread/rcuc/1/sched")->path, "fifo:1", "fifo:4", true);
        ck_assert_ptr_null(plan_find(p, "kthread/ksoftirqd/0/affinity"));
        ck_assert_ptr_null(plan_find(p, "kthread/rcuc/1/affinity"));
        ck_assert_ptr_nonnull(plan_find(p, "kthread/kswapd0/affinity"));
        ck_assert(plan_has_note(p, "per-CPU kernel threads are pinned by the kernel"));
        ck_assert(plan_has_note(p, "IRQ threads follow their IRQ's affinity"));
        for (size_t i = 0; i < p->n_knobs; i++) {
                const Knob *k = &p->knobs[i];
                if (k->domain != DOMAIN_KTHREAD)
                        continue;
                ck_assert(startswith(k->path, "proc/"));
                ck_assert_msg(!startswith(k->id, "kthread/irq/") || strstr(k->id, "/sched"),
                              "IRQ thread affinity knob %s", k->id);
                ck_assert_msg(!startswith(k->id, "kthread/kworker/") || strstr(k->id, "/sched"),
                              "kworker affinity knob %s", k->id);
                _cleanup_free_ char *v = NULL;
                ck_assert_int_eq(backend_kthread.read(r, k, &v), 0);
                ck_assert_msg(value_equal(k->kind, v, k->current), "%s: read %s, planned %s", k->id, strempty(v),
                              strempty(k->current));
        }
        plan_free(p);
        host_free(h);
        root_free(r);
}
END_TEST

START_TEST(test_fixture_vm) {
        _cleanup_free_ char *dir = fixture_host("vm");
        Root *r;
        Host *h;
        test_open_host(dir, &r, &h);
        _cleanup_free_ char *path = test_profile(prof_dir, "p", rvh_default_split);
        _cleanup_free_ char *err = NULL, *hk = NULL, *all = NULL;
        Plan *p = NULL;
        ck_assert_msg(test_plan(r, h, path, &p, &err) == 0, "%s", strempty(err));
        /* not an RT kernel: no rcuc or ktimers threads, so no knobs for those rules */
        ck_assert_ptr_null(plan_find(p, "kthread/rcuc/0/sched"));
        ck_assert_ptr_nonnull(plan_find(p, "kthread/ksoftirqd/0/sched"));
        hk = cpu_set_format_list(&p->housekeeping);
        all = cpu_set_format_list(&h->online);
        expect(p, "kthread/kthreadd/affinity", "proc/2/stat", all, hk, true);
        plan_free(p);
        host_free(h);
        root_free(r);
}
END_TEST

int main(void) {
        Suite *s = suite_create("backend-kthread");
        TCase *tc = tcase_create("plan");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, test_sched);
        tcase_add_test(tc, test_affinity);
        tcase_add_test(tc, test_same_comm);
        tcase_add_test(tc, test_section_affinity);
        tcase_add_test(tc, test_no_section);
        tcase_add_test(tc, test_no_proc);
        tcase_add_test(tc, test_priority_validation);
        tcase_add_test(tc, test_read);
        tcase_add_test(tc, test_many);
        tcase_add_test(tc, test_write_fake_root);
        suite_add_tcase(s, tc);
        /* A fake host missing fails its test (fixture_host()). */
        TCase *fx = tcase_create("fixtures");
        tcase_add_checked_fixture(fx, setup, teardown);
        tcase_add_test(fx, test_fixture_rt);
        tcase_add_test(fx, test_fixture_write);
        tcase_add_test(fx, test_fixture_vm);
        suite_add_tcase(s, fx);
        return test_run(s);
}
