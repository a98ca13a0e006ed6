/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strv.h"
#include "test-util.h"

/* The cpuset backend's plan on fake hosts: intel-2s (cgroup v2 with cpuset.cpus.exclusive,
 * systemd; CPUs 0-7,16-23 on node 0, 8-15,24-31 on node 1), epyc (cgroup v2 without
 * cpuset.cpus.exclusive; 64 CPUs), vm (cgroup v1 cpuset at /sys/fs/cgroup/cpuset, 4 CPUs). */

static char *host_dir, *prof_dir;
static Root *root;
static Host *host;

static void copy_host(const char *name) {
        host_dir = test_copy_host(name);
        prof_dir = test_tmpdir();
}

/* Opens the committed fixture itself, for tests that change nothing in it. */
static void use_host(const char *name) {
        host_dir = fixture_host(name);
        prof_dir = test_tmpdir();
        test_open_host(host_dir, &root, &host);
}

static void open_host(void) {
        test_open_host(host_dir, &root, &host);
}

static void teardown(void) {
        host = host_free(host);
        root = root_free(root);
        test_rmtree(host_dir);
        test_rmtree(prof_dir);
        free(host_dir);
        free(prof_dir);
        host_dir = prof_dir = NULL;
}

static Plan *plan_ok(const char *json) {
        _cleanup_free_ char *path = test_profile(prof_dir, "lab", json), *err = NULL;
        Plan *p = NULL;
        int k = test_plan(root, host, path, &p, &err);
        ck_assert_msg(k == 0, "plan failed (%d): %s", k, strempty(err));
        return p;
}

static void plan_err(const char *json, const char *pointer, const char *fragment) {
        _cleanup_free_ char *path = test_profile(prof_dir, "lab", json), *err = NULL, *want = NULL;
        Plan *p = NULL;
        int k = test_plan(root, host, path, &p, &err);
        ck_assert_msg(k == -EINVAL, "expected -EINVAL, got %d (%s) for %s", k, strempty(err), json);
        ck_assert_ptr_null(p);
        ck_assert_ptr_nonnull(err);
        ck_assert(asprintf(&want, "lab.json: %s: ", pointer) >= 0);
        ck_assert_msg(strstr(err, want), "error '%s' lacks '%s'", err, want);
        ck_assert_msg(strstr(err, fragment), "error '%s' lacks '%s'", err, fragment);
}

static const Knob *knob(const Plan *p, const char *id, const char *path, const char *desired) {
        const Knob *k = plan_find(p, id);
        ck_assert_msg(k, "no knob %s", id);
        ck_assert_int_eq(k->domain, DOMAIN_CPUSET);
        if (path)
                ck_assert_str_eq(k->path, path);
        ck_assert_msg(streq_ptr(k->desired, desired), "%s: desired '%s', expected '%s'", id, strempty(k->desired),
                      strempty(desired));
        return k;
}

static size_t count_domain(const Plan *p, Domain d) {
        size_t n = 0;
        for (size_t i = 0; i < p->n_knobs; i++)
                n += p->knobs[i].domain == d;
        return n;
}

static bool has_note(const Plan *p, const char *fragment) {
        for (char **n = p->notes; n && *n; n++)
                if (strstr(*n, fragment))
                        return true;
        return false;
}

static size_t index_of(const Plan *p, const char *id) {
        for (size_t i = 0; i < p->n_knobs; i++)
                if (streq(p->knobs[i].id, id))
                        return i;
        ck_abort_msg("no knob %s", id);
        return 0;
}

/* ---- cgroup v2 ---- */

START_TEST(test_intel_v2) {
        use_host("intel-2s");
        ck_assert(host->cgroup2_cpuset);
        _cleanup_(plan_freep) Plan *p = plan_ok(
                "{\"cpus\": {\"isolated\": \"4-15,20-31\"},"
                " \"cpuset\": {\"partitions\": [{\"name\": \"rtpart-rt\", \"cpus\": \"4-11\", \"mode\": \"isolated\"},"
                " {\"name\": \"rtpart-vm\", \"cpus\": \"12-15,20-31\", \"mode\": \"root\", \"mems\": \"1\"}]}}");

        const Knob *k = knob(p, "cpuset/rtpart-rt/cpus", "sys/fs/cgroup/rtpart-rt/cpuset.cpus", "4-11");
        ck_assert_int_eq(k->kind, VALUE_CPU_LIST);
        ck_assert_ptr_null(k->current);
        ck_assert(k->changed);
        k = knob(p, "cpuset/rtpart-rt/cpus.exclusive", "sys/fs/cgroup/rtpart-rt/cpuset.cpus.exclusive", "4-11");
        ck_assert_int_eq(k->kind, VALUE_CPU_LIST);
        knob(p, "cpuset/rtpart-rt/partition", "sys/fs/cgroup/rtpart-rt/cpuset.cpus.partition", "isolated");
        ck_assert_ptr_null(plan_find(p, "cpuset/rtpart-rt/mems"));
        knob(p, "cpuset/rtpart-vm/cpus", "sys/fs/cgroup/rtpart-vm/cpuset.cpus", "12-15,20-31");
        knob(p, "cpuset/rtpart-vm/cpus.exclusive", NULL, "12-15,20-31");
        knob(p, "cpuset/rtpart-vm/mems", "sys/fs/cgroup/rtpart-vm/cpuset.mems", "1");
        knob(p, "cpuset/rtpart-vm/partition", NULL, "root");
        /* CPUs before the partition mode. */
        ck_assert_uint_lt(index_of(p, "cpuset/rtpart-rt/cpus"), index_of(p, "cpuset/rtpart-rt/partition"));
        ck_assert_uint_lt(index_of(p, "cpuset/rtpart-rt/cpus.exclusive"), index_of(p, "cpuset/rtpart-rt/partition"));

        /* The default confinement, to the housekeeping CPUs, through systemd. */
        const char *slices[] = { "system.slice", "user.slice", "init.scope" };
        for (size_t i = 0; i < ELEMENTSOF(slices); i++) {
                char id[64], path[96];
                snprintf(id, sizeof(id), "cpuset/%s/cpus", slices[i]);
                snprintf(path, sizeof(path), "sys/fs/cgroup/%s/cpuset.cpus", slices[i]);
                k = knob(p, id, path, "0-3,16-19");
                ck_assert_str_eq(k->current, "");
                ck_assert(k->changed);
                ck_assert_str_eq(k->note, "systemd AllowedCPUs=");
        }
        ck_assert_ptr_null(plan_find(p, "cpuset/machine.slice/cpus"));
        ck_assert_uint_eq(count_domain(p, DOMAIN_CPUSET), 10);
        ck_assert(has_note(p, "AllowedCPUs="));
}
END_TEST

START_TEST(test_intel_v2_current) {
        copy_host("intel-2s");
        test_write(host_dir, "sys/fs/cgroup/rtpart-rt/cpuset.cpus", "4-15,20-31\n");
        test_write(host_dir, "sys/fs/cgroup/rtpart-rt/cpuset.cpus.exclusive", "\n");
        test_write(host_dir, "sys/fs/cgroup/rtpart-rt/cpuset.cpus.partition",
                   "isolated invalid (Cpu list in cpuset.cpus not exclusive)\n");
        test_write(host_dir, "sys/fs/cgroup/system.slice/cpuset.cpus", "0-3,16-19\n");
        open_host();
        _cleanup_(plan_freep) Plan *p = plan_ok(
                "{\"cpus\": {\"isolated\": \"4-15,20-31\"},"
                " \"cpuset\": {\"partitions\": [{\"name\": \"rtpart-rt\", \"cpus\": \"isolated\"}]}}");
        const Knob *k = knob(p, "cpuset/rtpart-rt/cpus", NULL, "4-15,20-31");
        ck_assert_str_eq(k->current, "4-15,20-31");
        ck_assert(!k->changed);
        /* The mode defaults to isolated; an invalid partition is kept verbatim and differs. */
        k = knob(p, "cpuset/rtpart-rt/partition", NULL, "isolated");
        ck_assert_str_eq(k->current, "isolated invalid (Cpu list in cpuset.cpus not exclusive)");
        ck_assert(k->changed);
        k = knob(p, "cpuset/system.slice/cpus", NULL, "0-3,16-19");
        ck_assert(!k->changed);

        /* The read verb sees later changes, and an absent file as NULL. */
        char *v = NULL;
        test_write(host_dir, "sys/fs/cgroup/rtpart-rt/cpuset.cpus.partition", "isolated\n");
        ck_assert_int_eq(backend_cpuset.read(root, k = plan_find(p, "cpuset/rtpart-rt/partition"), &v), 0);
        ck_assert_str_eq(v, "isolated");
        ck_assert(value_equal(k->kind, v, k->desired));
        free(v);
        _cleanup_free_ char *cmd = NULL;
        ck_assert(asprintf(&cmd, "rm -rf '%s/sys/fs/cgroup/rtpart-rt'", host_dir) >= 0);
        ck_assert_int_eq(system(cmd), 0);
        ck_assert_int_eq(backend_cpuset.read(root, k, &v), 0);
        ck_assert_ptr_null(v);
}
END_TEST

START_TEST(test_intel_v2_confine) {
        use_host("intel-2s");
        /* "confine": [] leaves the slices alone. */
        _cleanup_(plan_freep) Plan *p = plan_ok(
                "{\"cpus\": {\"isolated\": \"4-15,20-31\"},"
                " \"cpuset\": {\"confine\": [], \"partitions\": [{\"name\": \"rt\", \"cpus\": \"4-7\"}]}}");
        ck_assert_ptr_null(plan_find(p, "cpuset/system.slice/cpus"));
        ck_assert_uint_eq(count_domain(p, DOMAIN_CPUSET), 3);

        /* A section without partitions only confines; a cgroup the host lacks is noted. */
        _cleanup_(plan_freep) Plan *q = plan_ok(
                "{\"cpus\": {\"isolated\": \"4-15,20-31\"},"
                " \"cpuset\": {\"confine\": [\"system.slice\", \"nosuch.slice\"], \"confine_cpus\": \"0-1\"}}");
        knob(q, "cpuset/system.slice/cpus", "sys/fs/cgroup/system.slice/cpuset.cpus", "0-1");
        ck_assert_ptr_null(plan_find(q, "cpuset/nosuch.slice/cpus"));
        ck_assert_ptr_null(plan_find(q, "cpuset/user.slice/cpus"));
        ck_assert_uint_eq(count_domain(q, DOMAIN_CPUSET), 1);
        ck_assert(has_note(q, "not on this host, so not confined: nosuch.slice"));
}
END_TEST

START_TEST(test_intel_v2_errors) {
        use_host("intel-2s");
        plan_err("{\"cpus\": {\"isolated\": \"4-15,20-31\"}, \"cpuset\": {\"partitions\": ["
                 "{\"name\": \"a\", \"cpus\": \"4-7\"}, {\"name\": \"b\", \"cpus\": \"6-9\"}]}}",
                 "/cpuset/partitions/1/cpus", "CPUs 6-7 are also in partition \"a\"");
        plan_err("{\"cpus\": {\"isolated\": \"4-15,20-31\"}, \"cpuset\": {\"partitions\": ["
                 "{\"name\": \"a\", \"cpus\": \"2-5\"}]}}",
                 "/cpuset/partitions/0/cpus", "CPUs 2-3 are also in confine_cpus (0-3,16-19)");
        plan_err("{\"cpus\": {\"isolated\": \"4-15,20-31\"}, \"cpuset\": {\"confine_cpus\": \"4\", \"partitions\": ["
                 "{\"name\": \"a\", \"cpus\": \"0-3,16-19\", \"mode\": \"root\"}]}}",
                 "/cpuset/partitions/0/cpus", "take every housekeeping CPU (0-3,16-19)");
        plan_err("{\"cpus\": {\"isolated\": \"4-15,20-31\"}, \"cpuset\": {\"partitions\": ["
                 "{\"name\": \"a\", \"cpus\": \"4-7\", \"mems\": \"0-2\"}]}}",
                 "/cpuset/partitions/0/mems", "NUMA node 2 does not exist on this host (nodes: 0-1)");
        plan_err("{\"cpus\": {\"isolated\": \"4-15,20-31\"}, \"cpuset\": {\"partitions\": ["
                 "{\"name\": \"a\", \"cpus\": \"4-7\", \"mems\": \"x\"}]}}",
                 "/cpuset/partitions/0/mems", "not a list of NUMA nodes");
        plan_err("{\"cpus\": {\"isolated\": \"4-15,20-31\"}, \"cpuset\": {\"partitions\": ["
                 "{\"name\": \"root\", \"cpus\": \"4-7\"}]}}",
                 "/cpuset/partitions/0/name", "\"root\" is reserved");
        plan_err("{\"cpus\": {\"isolated\": \"4-15,20-31\"}, \"cpuset\": {\"partitions\": ["
                 "{\"name\": \"system.slice\", \"cpus\": \"4-7\"}]}}",
                 "/cpuset/partitions/0/name", "also in \"confine\"");
        plan_err("{\"cpus\": {\"isolated\": \"4-15,20-31\"}, \"cpuset\": {\"partitions\": ["
                 "{\"name\": \"a\", \"cpus\": \"!all\", \"mode\": \"isolated\"}]}}",
                 "/cpuset/partitions/0/cpus", "no CPUs");
        plan_err("{\"cpus\": {\"isolated\": \"4-15,20-31\"}, \"cpuset\": {\"confine\": [\"system.slice\", \"../x\"]}}",
                 "/cpuset/confine/1", "not a cgroup name");
        plan_err("{\"cpus\": {\"isolated\": \"4-15,20-31\"}, \"cpuset\": {\"confine_cpus\": \"!all\"}}",
                 "/cpuset/confine_cpus", "no CPUs");
}
END_TEST

START_TEST(test_intel_v2_no_controller) {
        copy_host("intel-2s");
        test_write(host_dir, "sys/fs/cgroup/cgroup.controllers", "cpu io memory hugetlb pids rdma misc\n");
        open_host();
        ck_assert(!host->cgroup2_cpuset);
        _cleanup_(plan_freep) Plan *p = plan_ok(
                "{\"cpus\": {\"isolated\": \"4-15,20-31\"},"
                " \"cpuset\": {\"partitions\": [{\"name\": \"rt\", \"cpus\": \"4-7\"}]}}");
        ck_assert_uint_eq(count_domain(p, DOMAIN_CPUSET), 0);
        ck_assert(has_note(p, "cpuset controller is not in /sys/fs/cgroup/cgroup.controllers"));
}
END_TEST

START_TEST(test_intel_v2_subtree_control) {
        copy_host("intel-2s");
        test_write(host_dir, "sys/fs/cgroup/cgroup.subtree_control", "cpu io memory pids\n");
        open_host();
        _cleanup_(plan_freep) Plan *p = plan_ok(
                "{\"cpus\": {\"isolated\": \"4-15,20-31\"},"
                " \"cpuset\": {\"partitions\": [{\"name\": \"rt\", \"cpus\": \"4-7\"}]}}");
        ck_assert(has_note(p, "+cpuset"));
        knob(p, "cpuset/rt/cpus", NULL, "4-7");
}
END_TEST

/* ---- epyc: cgroup v2 before 6.7 ---- */

START_TEST(test_epyc_v2) {
        use_host("epyc");
        _cleanup_(plan_freep) Plan *p = plan_ok(
                "{\"cpus\": {\"isolated\": \"4-31,36-63\"},"
                " \"cpuset\": {\"partitions\": [{\"name\": \"rt\", \"cpus\": \"8-15\", \"mems\": \"0\"},"
                " {\"name\": \"misc\", \"cpus\": \"16-17\", \"mode\": \"member\"}]}}");
        knob(p, "cpuset/rt/cpus", "sys/fs/cgroup/rt/cpuset.cpus", "8-15");
        knob(p, "cpuset/rt/mems", "sys/fs/cgroup/rt/cpuset.mems", "0");
        knob(p, "cpuset/rt/partition", "sys/fs/cgroup/rt/cpuset.cpus.partition", "isolated");
        /* No cpuset.cpus.isolated in the root: no cpuset.cpus.exclusive either. */
        ck_assert_ptr_null(plan_find(p, "cpuset/rt/cpus.exclusive"));
        knob(p, "cpuset/misc/cpus", NULL, "16-17");
        knob(p, "cpuset/misc/partition", NULL, "member");
        knob(p, "cpuset/system.slice/cpus", NULL, "0-3,32-35");
        knob(p, "cpuset/init.scope/cpus", NULL, "0-3,32-35");
        ck_assert_uint_eq(count_domain(p, DOMAIN_CPUSET), 8);
}
END_TEST

/* ---- vm: cgroup v1 ---- */

START_TEST(test_vm_v1) {
        use_host("vm");
        ck_assert_ptr_nonnull(host->cpuset_v1_mount);
        _cleanup_(plan_freep) Plan *p = plan_ok(
                "{\"cpus\": {\"isolated\": \"2-3\"},"
                " \"cpuset\": {\"partitions\": [{\"name\": \"rt\", \"cpus\": \"2\", \"mode\": \"isolated\"},"
                " {\"name\": \"vm\", \"cpus\": \"3\", \"mode\": \"root\"}]}}");
        const char *v1 = host->cpuset_v1_mount;
        char path[256];

        snprintf(path, sizeof(path), "%s/rt/cpuset.cpus", v1);
        const Knob *k = knob(p, "cpuset/rt/cpus", path, "2");
        ck_assert_ptr_null(k->current);
        snprintf(path, sizeof(path), "%s/rt/cpuset.mems", v1);
        knob(p, "cpuset/rt/mems", path, "0");
        snprintf(path, sizeof(path), "%s/rt/cpuset.cpu_exclusive", v1);
        knob(p, "cpuset/rt/cpu_exclusive", path, "1");
        snprintf(path, sizeof(path), "%s/rt/cpuset.sched_load_balance", v1);
        knob(p, "cpuset/rt/sched_load_balance", path, "0");
        knob(p, "cpuset/vm/cpus", NULL, "3");
        knob(p, "cpuset/vm/cpu_exclusive", NULL, "1");
        knob(p, "cpuset/vm/sched_load_balance", NULL, "1");
        snprintf(path, sizeof(path), "%s/rtpart-nrt/cpuset.cpus", v1);
        knob(p, "cpuset/rtpart-nrt/cpus", path, "0-1");
        knob(p, "cpuset/rtpart-nrt/mems", NULL, "0");
        knob(p, "cpuset/rtpart-nrt/sched_load_balance", NULL, "1");
        snprintf(path, sizeof(path), "%s/cpuset.sched_load_balance", v1);
        k = knob(p, "cpuset/root/sched_load_balance", path, "0");
        ck_assert_str_eq(k->current, "1");
        ck_assert(k->changed);
        ck_assert_ptr_null(plan_find(p, "cpuset/system.slice/cpus"));
        ck_assert_uint_eq(count_domain(p, DOMAIN_CPUSET), 12);
        ck_assert(has_note(p, "moves every movable task into the housekeeping cpuset rtpart-nrt"));
        /* CPUs before modes; the root stops balancing last. */
        ck_assert_uint_lt(index_of(p, "cpuset/rt/cpus"), index_of(p, "cpuset/rt/cpu_exclusive"));
        ck_assert_uint_lt(index_of(p, "cpuset/rt/mems"), index_of(p, "cpuset/rt/cpu_exclusive"));
        ck_assert_uint_lt(index_of(p, "cpuset/rtpart-nrt/sched_load_balance"), index_of(p, "cpuset/root/sched_load_balance"));
        ck_assert_uint_lt(index_of(p, "cpuset/vm/sched_load_balance"), index_of(p, "cpuset/root/sched_load_balance"));

        /* Only root partitions: the root keeps balancing; member partitions are plain cpusets. */
        _cleanup_(plan_freep) Plan *q = plan_ok(
                "{\"cpus\": {\"isolated\": \"2-3\"}, \"cpuset\": {\"confine\": [], \"partitions\": ["
                "{\"name\": \"vm\", \"cpus\": \"2\", \"mode\": \"root\"}, {\"name\": \"m\", \"cpus\": \"3\", \"mode\": \"member\"}]}}");
        ck_assert_ptr_null(plan_find(q, "cpuset/root/sched_load_balance"));
        ck_assert_ptr_null(plan_find(q, "cpuset/rtpart-nrt/cpus"));
        knob(q, "cpuset/m/cpus", NULL, "3");
        knob(q, "cpuset/m/mems", NULL, "0");
        ck_assert_ptr_null(plan_find(q, "cpuset/m/cpu_exclusive"));
        ck_assert_uint_eq(count_domain(q, DOMAIN_CPUSET), 6);

        plan_err("{\"cpus\": {\"isolated\": \"2-3\"}, \"cpuset\": {\"partitions\": ["
                 "{\"name\": \"a\", \"cpus\": \"2-3\"}, {\"name\": \"b\", \"cpus\": \"3\"}]}}",
                 "/cpuset/partitions/1/cpus", "CPUs 3 are also in partition \"a\"");
        plan_err("{\"cpus\": {\"isolated\": \"2-3\"}, \"cpuset\": {\"partitions\": ["
                 "{\"name\": \"rtpart-nrt\", \"cpus\": \"2-3\"}]}}",
                 "/cpuset/partitions/0/name", "reserved");
        plan_err("{\"cpus\": {\"isolated\": \"2-3\"}, \"cpuset\": {\"partitions\": ["
                 "{\"name\": \"a\", \"cpus\": \"2\", \"mems\": \"1\"}]}}",
                 "/cpuset/partitions/0/mems", "NUMA node 1 does not exist on this host (nodes: 0)");
}
END_TEST

START_TEST(test_no_cgroup) {
        host_dir = test_mini_host(4, false, 0);
        prof_dir = test_tmpdir();
        open_host();
        _cleanup_(plan_freep) Plan *p = plan_ok(
                "{\"cpus\": {\"isolated\": \"2-3\"}, \"cpuset\": {\"partitions\": [{\"name\": \"rt\", \"cpus\": \"2-3\"}]}}");
        ck_assert_uint_eq(count_domain(p, DOMAIN_CPUSET), 0);
        ck_assert(has_note(p, "no cgroup cpuset hierarchy"));
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("backend-cpuset");
        TCase *tc = tcase_create("plan");
        tcase_add_checked_fixture(tc, NULL, teardown);
        tcase_add_test(tc, test_intel_v2);
        tcase_add_test(tc, test_intel_v2_current);
        tcase_add_test(tc, test_intel_v2_confine);
        tcase_add_test(tc, test_intel_v2_errors);
        tcase_add_test(tc, test_intel_v2_no_controller);
        tcase_add_test(tc, test_intel_v2_subtree_control);
        tcase_add_test(tc, test_epyc_v2);
        tcase_add_test(tc, test_vm_v1);
        tcase_add_test(tc, test_no_cgroup);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return test_run(suite());
}
