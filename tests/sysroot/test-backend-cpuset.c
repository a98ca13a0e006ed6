/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup.h"
#include "proc.h"
#include "sim-kernel.h"
#include "strv.h"
#include "test-tree.h"
#include "test-util.h"

/* The cpuset backend's plan on fake hosts: intel-2s (cgroup v2 with cpuset.cpus.exclusive,
 * systemd; CPUs 0-7,16-23 on node 0, 8-15,24-31 on node 1), epyc (cgroup v2 without
 * cpuset.cpus.exclusive; 64 CPUs), vm (cgroup v1 cpuset at /sys/fs/cgroup/cpuset, 4 CPUs). */

static char *host_dir, *prof_dir;
static Root *root;
static Host *host;

/* The fake host: a copy to edit with test_write() before open_host(), or the bundled one itself
 * for tests that change nothing in it. */
static void copy_host(const char *name) {
        test_fixture(name, /* copy= */ true, &host_dir, &prof_dir, NULL, NULL);
}

static void use_host(const char *name) {
        test_fixture(name, /* copy= */ false, &host_dir, &prof_dir, &root, &host);
}

static void open_host(void) {
        test_open_host(host_dir, &root, &host);
}

static void teardown(void) {
        test_fixture_clear(&host_dir, &prof_dir, &root, &host);
}

static Plan *plan_ok(const char *json) {
        return test_plan_ok(root, host, prof_dir, "lab", json);
}

/* Expects plan_build to reject the profile at `pointer` with a message containing `fragment`. */
static void plan_err(const char *json, const char *pointer, const char *fragment) {
        test_plan_err(root, host, prof_dir, "lab", json, pointer, fragment);
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

        const Knob *k = knob(p, "cpuset/rtpart-rt/cpus", "sys/fs/cgroup/rtpart\\x2drt.slice/cpuset.cpus", "4-11");
        ck_assert_int_eq(k->kind, VALUE_CPU_LIST);
        ck_assert_ptr_null(k->current);
        ck_assert(k->changed);
        k = knob(p, "cpuset/rtpart-rt/cpus.exclusive", "sys/fs/cgroup/rtpart\\x2drt.slice/cpuset.cpus.exclusive",
                 "4-11");
        ck_assert_int_eq(k->kind, VALUE_CPU_LIST);
        knob(p, "cpuset/rtpart-rt/partition", "sys/fs/cgroup/rtpart\\x2drt.slice/cpuset.cpus.partition", "isolated");
        /* systemd runs there: each partition is a slice of its own, directly under the root. */
        ck_assert(plan_has_note(p, "partition rtpart-rt is the slice rtpart\\x2drt.slice: systemd creates it"));
        ck_assert(plan_has_note(p, "systemd-run --slice=rtpart\\x2drt.slice (under --root"));
        ck_assert_ptr_null(plan_find(p, "cpuset/rtpart-rt/mems"));
        knob(p, "cpuset/rtpart-vm/cpus", "sys/fs/cgroup/rtpart\\x2dvm.slice/cpuset.cpus", "12-15,20-31");
        knob(p, "cpuset/rtpart-vm/cpus.exclusive", NULL, "12-15,20-31");
        knob(p, "cpuset/rtpart-vm/mems", "sys/fs/cgroup/rtpart\\x2dvm.slice/cpuset.mems", "1");
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
                /* Under --root apply writes the file: the knob says so, not AllowedCPUs=. */
                ck_assert_str_eq(k->note, "cpuset.cpus (no systemd to ask under --root)");
        }
        ck_assert_ptr_null(plan_find(p, "cpuset/machine.slice/cpus"));
        ck_assert_uint_eq(plan_count_domain(p, DOMAIN_CPUSET), 10);
        ck_assert(plan_has_note(p, "AllowedCPUs="));
}
END_TEST

START_TEST(test_intel_v2_current) {
        copy_host("intel-2s");
        test_write(host_dir, "sys/fs/cgroup/rtpart\\x2drt.slice/cpuset.cpus", "4-15,20-31\n");
        test_write(host_dir, "sys/fs/cgroup/rtpart\\x2drt.slice/cpuset.cpus.exclusive", "\n");
        test_write(host_dir, "sys/fs/cgroup/rtpart\\x2drt.slice/cpuset.cpus.partition",
                   "isolated invalid (Cpu list in cpuset.cpus not exclusive)\n");
        test_write(host_dir, "sys/fs/cgroup/system.slice/cpuset.cpus", "0-3,16-19\n");
        open_host();
        _cleanup_(plan_freep) Plan *p =
                plan_ok("{\"cpus\": {\"isolated\": \"4-15,20-31\"},"
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
        test_write(host_dir, "sys/fs/cgroup/rtpart\\x2drt.slice/cpuset.cpus.partition", "isolated\n");
        ck_assert_int_eq(backend_cpuset.read(root, k = plan_find(p, "cpuset/rtpart-rt/partition"), &v), 0);
        ck_assert_str_eq(v, "isolated");
        ck_assert(value_equal(k->kind, v, k->desired));
        free(v);
        _cleanup_free_ char *cmd = NULL;
        ck_assert(asprintf(&cmd, "rm -rf '%s/sys/fs/cgroup/rtpart\\x2drt.slice'", host_dir) >= 0);
        ck_assert_int_eq(system(cmd), 0);
        ck_assert_int_eq(backend_cpuset.read(root, k, &v), 0);
        ck_assert_ptr_null(v);
}
END_TEST

START_TEST(test_intel_v2_confine) {
        use_host("intel-2s");
        /* "confine": [] leaves the slices alone. */
        _cleanup_(plan_freep) Plan *p =
                plan_ok("{\"cpus\": {\"isolated\": \"4-15,20-31\"},"
                        " \"cpuset\": {\"confine\": [], \"partitions\": [{\"name\": \"rt\", \"cpus\": \"4-7\"}]}}");
        ck_assert_ptr_null(plan_find(p, "cpuset/system.slice/cpus"));
        ck_assert_uint_eq(plan_count_domain(p, DOMAIN_CPUSET), 3);

        /* A section without partitions only confines; a cgroup the host lacks is noted. */
        _cleanup_(plan_freep) Plan *q =
                plan_ok("{\"cpus\": {\"isolated\": \"4-15,20-31\"},"
                        " \"cpuset\": {\"confine\": [\"system.slice\", \"nosuch.slice\"], \"confine_cpus\": \"0-1\"}}");
        knob(q, "cpuset/system.slice/cpus", "sys/fs/cgroup/system.slice/cpuset.cpus", "0-1");
        ck_assert_ptr_null(plan_find(q, "cpuset/nosuch.slice/cpus"));
        ck_assert_ptr_null(plan_find(q, "cpuset/user.slice/cpus"));
        ck_assert_uint_eq(plan_count_domain(q, DOMAIN_CPUSET), 1);
        ck_assert(plan_has_note(q, "not on this host, so not confined: nosuch.slice"));
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
                 "/cpuset/partitions/0", "\"root\" cannot be used as a group name");
        plan_err("{\"cpus\": {\"isolated\": \"4-15,20-31\"}, \"cpuset\": {\"partitions\": ["
                 "{\"name\": \"system.slice\", \"cpus\": \"4-7\"}]}}",
                 "/cpuset/partitions/0/name", "\"system.slice\" is a systemd unit name; name the partition without");
        plan_err("{\"cpus\": {\"isolated\": \"4-15,20-31\"}, \"cpuset\": {\"confine\": [\"lab\"], \"partitions\": ["
                 "{\"name\": \"lab\", \"cpus\": \"4-7\"}]}}",
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
        _cleanup_(plan_freep) Plan *p =
                plan_ok("{\"cpus\": {\"isolated\": \"4-15,20-31\"},"
                        " \"cpuset\": {\"partitions\": [{\"name\": \"rt\", \"cpus\": \"4-7\"}]}}");
        ck_assert_uint_eq(plan_count_domain(p, DOMAIN_CPUSET), 0);
        ck_assert(plan_has_note(p, "cpuset controller is not in /sys/fs/cgroup/cgroup.controllers"));
}
END_TEST

START_TEST(test_intel_v2_subtree_control) {
        copy_host("intel-2s");
        test_write(host_dir, "sys/fs/cgroup/cgroup.subtree_control", "cpu io memory pids\n");
        open_host();
        _cleanup_(plan_freep) Plan *p =
                plan_ok("{\"cpus\": {\"isolated\": \"4-15,20-31\"},"
                        " \"cpuset\": {\"partitions\": [{\"name\": \"rt\", \"cpus\": \"4-7\"}]}}");
        ck_assert(plan_has_note(p, "+cpuset"));
        knob(p, "cpuset/rt/cpus", NULL, "4-7");
}
END_TEST

/* ---- epyc: cgroup v2 before 6.7 ---- */

START_TEST(test_epyc_v2) {
        use_host("epyc");
        _cleanup_(plan_freep) Plan *p =
                plan_ok("{\"cpus\": {\"isolated\": \"4-31,36-63\"},"
                        " \"cpuset\": {\"partitions\": [{\"name\": \"rt\", \"cpus\": \"8-15\", \"mems\": \"0\"},"
                        " {\"name\": \"misc\", \"cpus\": \"16-17\", \"mode\": \"member\"}]}}");
        knob(p, "cpuset/rt/cpus", "sys/fs/cgroup/rt.slice/cpuset.cpus", "8-15");
        knob(p, "cpuset/rt/mems", "sys/fs/cgroup/rt.slice/cpuset.mems", "0");
        knob(p, "cpuset/rt/partition", "sys/fs/cgroup/rt.slice/cpuset.cpus.partition", "isolated");
        /* No cpuset.cpus.isolated in the root: no cpuset.cpus.exclusive either. */
        ck_assert_ptr_null(plan_find(p, "cpuset/rt/cpus.exclusive"));
        knob(p, "cpuset/misc/cpus", NULL, "16-17");
        knob(p, "cpuset/misc/partition", NULL, "member");
        knob(p, "cpuset/system.slice/cpus", NULL, "0-3,32-35");
        knob(p, "cpuset/init.scope/cpus", NULL, "0-3,32-35");
        ck_assert_uint_eq(plan_count_domain(p, DOMAIN_CPUSET), 8);
}
END_TEST

/* ---- vm: cgroup v1 ---- */

START_TEST(test_vm_v1) {
        use_host("vm");
        ck_assert_ptr_nonnull(host->cpuset_v1_mount);
        _cleanup_(plan_freep) Plan *p =
                plan_ok("{\"cpus\": {\"isolated\": \"2-3\"},"
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
        /* Moving every task into the housekeeping cpuset is a knob of its own, after its cpuset. */
        snprintf(path, sizeof(path), "%s/rtpart-nrt/tasks", v1);
        k = knob(p, "cpuset/rtpart-nrt/tasks", path, "movable");
        ck_assert_ptr_null(k->current);
        ck_assert(k->changed);
        ck_assert_uint_lt(index_of(p, "cpuset/rtpart-nrt/mems"), index_of(p, "cpuset/rtpart-nrt/tasks"));
        snprintf(path, sizeof(path), "%s/cpuset.sched_load_balance", v1);
        k = knob(p, "cpuset/root/sched_load_balance", path, "0");
        ck_assert_str_eq(k->current, "1");
        ck_assert(k->changed);
        ck_assert_ptr_null(plan_find(p, "cpuset/system.slice/cpus"));
        ck_assert_uint_eq(plan_count_domain(p, DOMAIN_CPUSET), 13);
        ck_assert(plan_has_note(p, "moves every movable task into the housekeeping cpuset rtpart-nrt"));
        /* CPUs before modes; the root stops balancing last. */
        ck_assert_uint_lt(index_of(p, "cpuset/rt/cpus"), index_of(p, "cpuset/rt/cpu_exclusive"));
        ck_assert_uint_lt(index_of(p, "cpuset/rt/mems"), index_of(p, "cpuset/rt/cpu_exclusive"));
        ck_assert_uint_lt(index_of(p, "cpuset/rtpart-nrt/sched_load_balance"),
                          index_of(p, "cpuset/root/sched_load_balance"));
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
        ck_assert_uint_eq(plan_count_domain(q, DOMAIN_CPUSET), 6);

        plan_err("{\"cpus\": {\"isolated\": \"2-3\"}, \"cpuset\": {\"partitions\": ["
                 "{\"name\": \"a\", \"cpus\": \"2-3\"}, {\"name\": \"b\", \"cpus\": \"3\"}]}}",
                 "/cpuset/partitions/1/cpus", "CPUs 3 are also in partition \"a\"");
        plan_err("{\"cpus\": {\"isolated\": \"2-3\"}, \"cpuset\": {\"partitions\": ["
                 "{\"name\": \"rtpart-nrt\", \"cpus\": \"2-3\"}]}}",
                 "/cpuset/partitions/0", "\"rtpart-nrt\" cannot be used as a group name");
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
        ck_assert_uint_eq(plan_count_domain(p, DOMAIN_CPUSET), 0);
        ck_assert(plan_has_note(p, "no cgroup cpuset hierarchy"));
}
END_TEST

/* ---- write: apply, verify, revert through the engine on fake hosts ---- */

START_TEST(test_apply_v2_intel) {
        copy_host("intel-2s");
        _cleanup_free_ char *before = tree_snapshot(host_dir), *drift = NULL;
        _cleanup_free_ char *prof = test_profile(
                prof_dir, "lab",
                "{\"cpus\": {\"isolated\": \"4-15,20-31\"},"
                " \"cpuset\": {\"partitions\": [{\"name\": \"rtpart-rt\", \"cpus\": \"4-11\", \"mode\": \"isolated\"},"
                " {\"name\": \"rtpart-vm\", \"cpus\": \"12-15,20-31\", \"mode\": \"root\", \"mems\": \"1\"}]}}");
        ck_assert_int_eq(tree_apply(host_dir, prof, NULL), 0);

        /* Partitions as the kernel shows them, the root's isolated CPUs, and the slices (under
         * --root their cpuset.cpus stands in for systemd's AllowedCPUs=). */
        tree_assert_file(host_dir, "sys/fs/cgroup/rtpart\\x2drt.slice/cpuset.cpus", "4-11\n");
        tree_assert_file(host_dir, "sys/fs/cgroup/rtpart\\x2drt.slice/cpuset.cpus.exclusive", "4-11\n");
        tree_assert_file(host_dir, "sys/fs/cgroup/rtpart\\x2drt.slice/cpuset.cpus.effective", "4-11\n");
        tree_assert_file(host_dir, "sys/fs/cgroup/rtpart\\x2drt.slice/cpuset.cpus.partition", "isolated\n");
        tree_assert_file(host_dir, "sys/fs/cgroup/rtpart\\x2drt.slice/cgroup.controllers",
                         "cpuset cpu io memory pids\n");
        tree_assert_file(host_dir, "sys/fs/cgroup/rtpart\\x2drt.slice/cgroup.procs", "");
        tree_assert_file(host_dir, "sys/fs/cgroup/rtpart\\x2dvm.slice/cpuset.cpus", "12-15,20-31\n");
        tree_assert_file(host_dir, "sys/fs/cgroup/rtpart\\x2dvm.slice/cpuset.mems", "1\n");
        tree_assert_file(host_dir, "sys/fs/cgroup/rtpart\\x2dvm.slice/cpuset.mems.effective", "1\n");
        tree_assert_file(host_dir, "sys/fs/cgroup/rtpart\\x2dvm.slice/cpuset.cpus.partition", "root\n");
        tree_assert_file(host_dir, "sys/fs/cgroup/cpuset.cpus.isolated", "4-11\n");
        tree_assert_file(host_dir, "sys/fs/cgroup/system.slice/cpuset.cpus", "0-3,16-19\n");
        tree_assert_file(host_dir, "sys/fs/cgroup/init.scope/cpuset.cpus", "0-3,16-19\n");
        ck_assert_msg(tree_verify(host_dir, &drift) == 0, "drift: %s", strempty(drift));

        /* The kernel invalidating the partition later is drift, with its reason. */
        test_write(host_dir, "sys/fs/cgroup/rtpart\\x2drt.slice/cpuset.cpus.partition",
                   "isolated invalid (Cpu list in cpuset.cpus not exclusive)\n");
        ck_assert_uint_eq(tree_verify(host_dir, &drift), 1);
        ck_assert_str_eq(drift,
                         "cpuset/rtpart-rt/partition: expected 'isolated', actual "
                         "'isolated invalid (Cpu list in cpuset.cpus not exclusive)'");

        ck_assert_int_eq(tree_revert(host_dir), 0);
        _cleanup_free_ char *after = tree_snapshot(host_dir);
        tree_assert_same(before, after, "revert");
}
END_TEST

/* The kernel takes "isolated" and then reads back "isolated invalid (reason)": a failed write,
 * rolled back, with the kernel's reason. */
START_TEST(test_v2_invalid_partition) {
        copy_host("intel-2s");
        test_write(host_dir, "sys/fs/cgroup/machine.slice/cpuset.cpus", "8-9\n");
        _cleanup_free_ char *before = tree_snapshot(host_dir);
        _cleanup_free_ char *prof = test_profile(
                prof_dir, "lab",
                "{\"cpus\": {\"isolated\": \"4-15,20-31\"},"
                " \"cpuset\": {\"confine\": [], \"partitions\": [{\"name\": \"rtpart-rt\", \"cpus\": \"4-11\"}]}}");
        EngineResult res = {};
        ck_assert_int_eq(tree_apply(host_dir, prof, &res), -EINVAL);
        ck_assert_str_eq(res.error.pointer, "cpuset/rtpart-rt/partition");
        ck_assert(res.rolled_back && !res.rollback_incomplete);
        engine_result_done(&res);
        _cleanup_free_ char *after = tree_snapshot(host_dir);
        tree_assert_same(before, after, "rolled back");

        open_host();
        Knob cpus = { .id = (char *) "cpuset/rtpart-rt/cpus",
                      .domain = DOMAIN_CPUSET,
                      .kind = VALUE_CPU_LIST,
                      .path = (char *) "sys/fs/cgroup/rtpart\\x2drt.slice/cpuset.cpus" };
        Knob part = { .id = (char *) "cpuset/rtpart-rt/partition",
                      .domain = DOMAIN_CPUSET,
                      .kind = VALUE_AUTO,
                      .path = (char *) "sys/fs/cgroup/rtpart\\x2drt.slice/cpuset.cpus.partition" };
        ck_assert_int_eq(backend_write(&backend_cpuset, root, &cpus, "4-11"), 0);
        /* The kernel takes the mode and says why it is invalid when read: the write's reason. */
        _cleanup_(knob_result_done) KnobResult w = {};
        ck_assert_int_eq(backend_cpuset.write(root, &part, "isolated", NULL, &w), -EINVAL);
        ck_assert_int_eq(w.status, KNOB_FAILED);
        ck_assert_int_eq(w.error, -EINVAL);
        ck_assert_str_eq(w.reason, "isolated invalid (Cpu list in cpuset.cpus not exclusive)");
        knob_result_done(&w);
        ck_assert_int_eq(backend_cpuset.write(root, &cpus, "4-7", NULL, &w), 0);
        ck_assert_int_eq(w.status, KNOB_DONE);
        ck_assert_ptr_null(w.reason);
        ck_assert_int_eq(backend_write(&backend_cpuset, root, &part, "isolated"), 0);
        tree_assert_file(host_dir, "sys/fs/cgroup/cpuset.cpus.isolated", "4-7\n");
        /* Absent again: member, then gone. */
        ck_assert_int_eq(backend_write(&backend_cpuset, root, &part, NULL), 0);
        ck_assert(!tree_exists(host_dir, "sys/fs/cgroup/rtpart\\x2drt.slice"));
        tree_assert_file(host_dir, "sys/fs/cgroup/cpuset.cpus.isolated", "\n");
}
END_TEST

START_TEST(test_v2_enable_controller) {
        /* Without systemd the partition is a cgroup of its own name. */
        copy_host("epyc");
        _cleanup_free_ char *out = NULL;
        ck_assert_int_eq(tree_sh(&out, "rm -r '%s/run/systemd'", host_dir), 0);
        test_write(host_dir, "sys/fs/cgroup/cgroup.subtree_control", "cpu io memory pids\n");
        _cleanup_free_ char *prof = test_profile(
                prof_dir, "lab",
                "{\"cpus\": {\"isolated\": \"4-31,36-63\"},"
                " \"cpuset\": {\"confine\": [], \"partitions\": [{\"name\": \"rt\", \"cpus\": \"8-15\", \"mems\": \"0\"}]}}");
        ck_assert_int_eq(tree_apply(host_dir, prof, NULL), 0);
        tree_assert_file(host_dir, "sys/fs/cgroup/cgroup.subtree_control", "cpuset cpu io memory pids\n");
        tree_assert_file(host_dir, "sys/fs/cgroup/rt/cpuset.cpus.partition", "isolated\n");
        ck_assert(!tree_exists(host_dir, "sys/fs/cgroup/rt/cpuset.cpus.exclusive")); /* before 6.7 */
        ck_assert_uint_eq(tree_verify(host_dir, NULL), 0);
        ck_assert_int_eq(tree_revert(host_dir), 0);
        ck_assert(!tree_exists(host_dir, "sys/fs/cgroup/rt"));
        /* Apply enabled the controller for the root's children: revert disables it again. */
        tree_assert_file(host_dir, "sys/fs/cgroup/cgroup.subtree_control", "cpu io memory pids\n");
        /* Where it was enabled before, revert leaves it enabled. */
        test_write(host_dir, "sys/fs/cgroup/cgroup.subtree_control", "cpuset cpu io memory pids\n");
        ck_assert_int_eq(tree_apply(host_dir, prof, NULL), 0);
        ck_assert_int_eq(tree_revert(host_dir), 0);
        tree_assert_file(host_dir, "sys/fs/cgroup/cgroup.subtree_control", "cpuset cpu io memory pids\n");
}
END_TEST

/* A v2 host whose root does not give its children cpuset, and so no cgroup below it has cpuset
 * files, as the kernel shows it: apply enables the controller (the kernel then makes every
 * child's cpuset files), confines the slices, makes the partition; revert takes all of it back,
 * to the byte. */
START_TEST(test_v2_enable_controller_confined) {
        copy_host("epyc");
        _cleanup_free_ char *out = NULL;
        ck_assert_int_eq(
                tree_sh(&out,
                        "cd '%s/sys/fs/cgroup' && rm -r '%s/run/systemd' && "
                        "find . -mindepth 2 -name 'cpuset.*' -delete && "
                        "for f in $(find . -mindepth 2 -name cgroup.controllers -o -name cgroup.subtree_control); do "
                        "sed -i 's/cpuset //; s/^cpuset$//' \"$f\"; done && "
                        "echo 'cpu io memory pids' > cgroup.subtree_control",
                        host_dir, host_dir),
                0);
        ck_assert(!tree_exists(host_dir, "sys/fs/cgroup/system.slice/cpuset.cpus"));
        tree_assert_file(host_dir, "sys/fs/cgroup/system.slice/cgroup.controllers", "cpu io memory pids\n");
        _cleanup_free_ char *before = tree_snapshot(host_dir), *first = NULL;
        _cleanup_free_ char *prof =
                test_profile(prof_dir, "lab",
                             "{\"cpus\": {\"isolated\": \"4-31,36-63\"},"
                             " \"cpuset\": {\"partitions\": [{\"name\": \"rt\", \"cpus\": \"8-15\"}]}}");
        ck_assert_int_eq(tree_apply(host_dir, prof, NULL), 0);
        tree_assert_file(host_dir, "sys/fs/cgroup/cgroup.subtree_control", "cpuset cpu io memory pids\n");
        tree_assert_file(host_dir, "sys/fs/cgroup/system.slice/cgroup.controllers", "cpuset cpu io memory pids\n");
        tree_assert_file(host_dir, "sys/fs/cgroup/system.slice/cpuset.cpus", "0-3,32-35\n");
        tree_assert_file(host_dir, "sys/fs/cgroup/init.scope/cpuset.cpus", "0-3,32-35\n");
        tree_assert_file(host_dir, "sys/fs/cgroup/rt/cpuset.cpus.partition", "isolated\n");
        ck_assert_uint_eq(tree_verify(host_dir, &first), 0);
        ck_assert_int_eq(tree_revert(host_dir), 0);
        _cleanup_free_ char *after = tree_snapshot(host_dir);
        tree_assert_same(before, after, "revert after enabling cpuset");
}
END_TEST

static unsigned fixture_task_flags(const char *dir, const char *tid) {
        _cleanup_free_ char *out = NULL;
        ck_assert_int_eq(
                tree_sh(&out, "cd '%s' && cat proc/%s/stat 2>/dev/null || cat proc/*/task/%s/stat", dir, tid, tid), 0);
        ProcStat ps;
        ck_assert_int_eq(proc_stat_parse(out, &ps), 0);
        unsigned f = ps.flags;
        proc_stat_done(&ps);
        return f;
}

START_TEST(test_apply_v1_vm) {
        copy_host("vm");
        _cleanup_free_ char *before = tree_snapshot(host_dir), *drift = NULL;
        _cleanup_free_ char *prof = test_profile(
                prof_dir, "lab",
                "{\"cpus\": {\"isolated\": \"2-3\"},"
                " \"cpuset\": {\"partitions\": [{\"name\": \"rt\", \"cpus\": \"2-3\", \"mode\": \"isolated\"}]}}");
        ck_assert_int_eq(tree_apply(host_dir, prof, NULL), 0);

        const char *v1 = "sys/fs/cgroup/cpuset";
        char path[256];
        snprintf(path, sizeof(path), "%s/rt/cpuset.cpus", v1);
        tree_assert_file(host_dir, path, "2-3\n");
        snprintf(path, sizeof(path), "%s/rt/cpuset.effective_cpus", v1);
        tree_assert_file(host_dir, path, "2-3\n");
        snprintf(path, sizeof(path), "%s/rt/cpuset.mems", v1);
        tree_assert_file(host_dir, path, "0\n");
        snprintf(path, sizeof(path), "%s/rt/cpuset.cpu_exclusive", v1);
        tree_assert_file(host_dir, path, "1\n");
        snprintf(path, sizeof(path), "%s/rt/cpuset.sched_load_balance", v1);
        tree_assert_file(host_dir, path, "0\n");
        snprintf(path, sizeof(path), "%s/rtpart-nrt/cpuset.cpus", v1);
        tree_assert_file(host_dir, path, "0-1\n");
        snprintf(path, sizeof(path), "%s/cpuset.sched_load_balance", v1);
        tree_assert_file(host_dir, path, "0\n");

        /* Every task moved but the ones the kernel pins (PF_NO_SETAFFINITY); cgroup.procs follows. */
        snprintf(path, sizeof(path), "%s/tasks", v1);
        _cleanup_free_ char *left = tree_read(host_dir, path);
        snprintf(path, sizeof(path), "%s/rtpart-nrt/tasks", v1);
        _cleanup_free_ char *moved = tree_read(host_dir, path);
        ck_assert_ptr_nonnull(left);
        ck_assert_ptr_nonnull(moved);
        size_t n_left = 0, n_moved = 0;
        char *save = NULL;
        for (char *t = strtok_r(left, "\n", &save); t; t = strtok_r(NULL, "\n", &save), n_left++)
                ck_assert_msg(fixture_task_flags(host_dir, t) & PROC_PF_NO_SETAFFINITY, "task %s stayed", t);
        for (char *t = strtok_r(moved, "\n", &save); t; t = strtok_r(NULL, "\n", &save), n_moved++)
                ck_assert_msg(!(fixture_task_flags(host_dir, t) & PROC_PF_NO_SETAFFINITY), "task %s moved", t);
        ck_assert_uint_eq(n_left, 54);
        ck_assert_uint_eq(n_moved, 26);
        snprintf(path, sizeof(path), "%s/rtpart-nrt/cgroup.procs", v1);
        _cleanup_free_ char *procs = tree_read(host_dir, path);
        ck_assert_ptr_nonnull(strstr(procs, "\n401\n405\n")); /* 402-404 are threads of 401 */
        ck_assert_msg(tree_verify(host_dir, &drift) == 0, "drift: %s", strempty(drift));

        /* A user task back in the root cpuset is drift. */
        open_host();
        ck_assert_int_eq(cgroup_move_task(root, v1, NULL, 1), 0);
        ck_assert_uint_eq(tree_verify(host_dir, &drift), 1);
        ck_assert_str_eq(drift, "cpuset/rtpart-nrt/tasks: expected 'movable', actual '1 user task in the root cpuset'");

        ck_assert_int_eq(tree_revert(host_dir), 0);
        _cleanup_free_ char *after = tree_snapshot(host_dir);
        tree_assert_same(before, after, "revert");
}
END_TEST

/* Another exclusive cpuset the plan could not see: the kernel refuses overlapping CPUs. */
START_TEST(test_v1_exclusive_conflict) {
        copy_host("vm");
        open_host();
        const char *v1 = "sys/fs/cgroup/cpuset";
        ck_assert_int_eq(sim_cgroup_mkdir(root, v1, "other"), 0);
        ck_assert_int_eq(sim_cgroup_write(root, v1, "other", "cpuset.cpus", "3"), 0);
        ck_assert_int_eq(sim_cgroup_write(root, v1, "other", "cpuset.mems", "0"), 0);
        ck_assert_int_eq(sim_cgroup_write(root, v1, "other", "cpuset.cpu_exclusive", "1"), 0);
        _cleanup_free_ char *before = tree_snapshot(host_dir);
        _cleanup_free_ char *prof = test_profile(
                prof_dir, "lab",
                "{\"cpus\": {\"isolated\": \"2-3\"},"
                " \"cpuset\": {\"confine\": [], \"partitions\": [{\"name\": \"rt\", \"cpus\": \"2-3\"}]}}");
        EngineResult res = {};
        ck_assert_int_eq(tree_apply(host_dir, prof, &res), -EINVAL);
        ck_assert_str_eq(res.error.pointer, "cpuset/rt/cpus");
        engine_result_done(&res);
        _cleanup_free_ char *after = tree_snapshot(host_dir);
        tree_assert_same(before, after, "rolled back");
}
END_TEST

/* libvirt's cpusets on a v1 host: "machine" and a VM's below it hold every CPU, which an exclusive
 * partition may share with no sibling (the kernel refuses its cpu_exclusive). */
static void v1_machine(const char *vcpu_cpus) {
        static const char *v1 = "sys/fs/cgroup/cpuset";
        static const char * const dirs[] = { "machine", "machine/qemu-1-rt", "machine/qemu-1-rt/vcpu0" };
        copy_host("vm");
        open_host();
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                _cleanup_free_ char *parent = NULL;
                const char *slash = strrchr(dirs[i], '/');
                ck_assert(asprintf(&parent, "%s%s%.*s", v1, slash ? "/" : "", slash ? (int) (slash - dirs[i]) : 0,
                                   dirs[i]) >= 0);
                const char *name = slash ? slash + 1 : dirs[i];
                ck_assert_int_eq(sim_cgroup_mkdir(root, parent, name), 0);
                ck_assert_int_eq(sim_cgroup_write(root, parent, name, "cpuset.cpus",
                                                  i == ELEMENTSOF(dirs) - 1 ? vcpu_cpus : "0-3"),
                                 0);
                ck_assert_int_eq(sim_cgroup_write(root, parent, name, "cpuset.mems", "0"), 0);
        }
        /* A task in the VM's vCPU cpuset. */
        ck_assert_int_eq(sim_cgroup_write(root, "sys/fs/cgroup/cpuset/machine/qemu-1-rt", "vcpu0", "tasks", "405"), 0);
        host = host_free(host);
        root = root_free(root);
}

static const char v1_rt[] =
        "{\"cpus\": {\"isolated\": \"2-3\"},"
        " \"cpuset\": {\"partitions\": [{\"name\": \"rt\", \"cpus\": \"2-3\", \"mode\": \"isolated\"}]}}";

/* The siblings go off the partition's CPUs first, children before their parent; revert gives the
 * CPUs back, every file as it was. */
START_TEST(test_v1_machine_shrunk) {
        v1_machine("0-3");
        _cleanup_free_ char *before = tree_snapshot(host_dir), *drift = NULL;
        open_host();
        _cleanup_(plan_freep) Plan *p = plan_ok(v1_rt);
        const Knob *vcpu = knob(p, "cpuset/machine/qemu-1-rt/vcpu0/cpus",
                                "sys/fs/cgroup/cpuset/machine/qemu-1-rt/vcpu0/cpuset.cpus", "0-1");
        ck_assert_str_eq(vcpu->current, "0-3");
        knob(p, "cpuset/machine/qemu-1-rt/cpus", NULL, "0-1");
        knob(p, "cpuset/machine/cpus", "sys/fs/cgroup/cpuset/machine/cpuset.cpus", "0-1");
        ck_assert_uint_lt(index_of(p, "cpuset/machine/qemu-1-rt/vcpu0/cpus"), index_of(p, "cpuset/machine/cpus"));
        ck_assert_uint_lt(index_of(p, "cpuset/machine/cpus"), index_of(p, "cpuset/rt/cpu_exclusive"));
        ck_assert(plan_has_note(p, "the cpuset machine holds CPUs of the exclusive partitions (2-3)"));

        _cleanup_free_ char *prof = test_profile(prof_dir, "lab", v1_rt);
        ck_assert_int_eq(tree_apply(host_dir, prof, NULL), 0);
        tree_assert_file(host_dir, "sys/fs/cgroup/cpuset/machine/cpuset.cpus", "0-1\n");
        tree_assert_file(host_dir, "sys/fs/cgroup/cpuset/machine/qemu-1-rt/vcpu0/cpuset.cpus", "0-1\n");
        tree_assert_file(host_dir, "sys/fs/cgroup/cpuset/rt/cpuset.cpu_exclusive", "1\n");
        ck_assert_msg(tree_verify(host_dir, &drift) == 0, "drift: %s", strempty(drift));
        ck_assert_int_eq(tree_revert(host_dir), 0);
        _cleanup_free_ char *after = tree_snapshot(host_dir);
        tree_assert_same(before, after, "revert");
}
END_TEST

/* A vCPU pinned to the partition's CPUs alone cannot be shrunk: the plan says what to do, and
 * apply fails at cpu_exclusive naming the sibling, and changes nothing. */
START_TEST(test_v1_machine_blocked) {
        v1_machine("3");
        _cleanup_free_ char *before = tree_snapshot(host_dir);
        open_host();
        _cleanup_(plan_freep) Plan *p = plan_ok(v1_rt);
        ck_assert_ptr_null(plan_find(p, "cpuset/machine/cpus"));
        ck_assert(plan_has_note(p,
                                "cannot be taken off the cpuset machine/qemu-1-rt/vcpu0 (it would be left "
                                "without CPUs)"));
        ck_assert(plan_has_note(p, "pin it to housekeeping CPUs, or start it in the partition"));

        _cleanup_free_ char *prof = test_profile(prof_dir, "lab", v1_rt);
        EngineResult res = {};
        ck_assert_int_eq(tree_apply(host_dir, prof, &res), -EINVAL);
        ck_assert_str_eq(res.error.pointer, "cpuset/rt/cpu_exclusive");
        ck_assert_msg(res.error.detail && strstr(res.error.detail, "CPUs 2-3 of rt are also in the cpuset machine"),
                      "%s", strempty(res.error.detail));
        engine_result_done(&res);
        _cleanup_free_ char *after = tree_snapshot(host_dir);
        tree_assert_same(before, after, "rolled back");
}
END_TEST

START_TEST(test_invalid_changes_nothing) {
        copy_host("intel-2s");
        _cleanup_free_ char *before = tree_snapshot(host_dir);
        const char *bad[] = {
                "{\"cpus\": {\"isolated\": \"4-15,20-31\"}, \"cpuset\": {\"partitions\": ["
                "{\"name\": \"a\", \"cpus\": \"4-7\"}, {\"name\": \"b\", \"cpus\": \"6-9\"}]}}",
                "{\"cpus\": {\"isolated\": \"4-15,20-31\"}, \"cpuset\": {\"partitions\": [{\"name\": \"a\", \"cpus\": \"2-5\"}]}}",
                "{\"cpus\": {\"isolated\": \"4-15,20-31\"}, \"cpuset\": {\"partitions\": ["
                "{\"name\": \"a\", \"cpus\": \"4-7\", \"mems\": \"0-2\"}]}}",
                "{\"cpus\": {\"isolated\": \"4-15,20-31\"}, \"cpuset\": {\"partitions\": [{\"name\": \"root\", \"cpus\": \"4-7\"}]}}",
                "{\"cpus\": {\"isolated\": \"4-15,20-31\"}, \"cpuset\": {\"confine_cpus\": \"!all\"}}",
                "{\"cpus\": {\"isolated\": \"4-15,20-31\"}, \"cpuset\": {\"confine\": [\"../x\"]}}",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_free_ char *prof = test_profile(prof_dir, "lab", bad[i]), *args = NULL, *out = NULL;
                ck_assert(asprintf(&args, "apply '%s'", prof) >= 0);
                int st = tree_ctl(host_dir, &out, args);
                ck_assert_msg(st == 2, "exit %d for %s: %s", st, bad[i], strempty(out));
                ck_assert_msg(strstr(out, "lab.json: /cpuset/"), "no pointer: %s", out);
        }
        _cleanup_free_ char *after = tree_snapshot(host_dir);
        tree_assert_same(before, after, "refused profiles");
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

        tc = tcase_create("write");
        tcase_add_checked_fixture(tc, NULL, teardown);
        tcase_set_timeout(tc, 240);
        tcase_add_test(tc, test_apply_v2_intel);
        tcase_add_test(tc, test_v2_invalid_partition);
        tcase_add_test(tc, test_v2_enable_controller);
        tcase_add_test(tc, test_v2_enable_controller_confined);
        tcase_add_test(tc, test_apply_v1_vm);
        tcase_add_test(tc, test_v1_exclusive_conflict);
        tcase_add_test(tc, test_v1_machine_shrunk);
        tcase_add_test(tc, test_v1_machine_blocked);
        tcase_add_test(tc, test_invalid_changes_nothing);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return test_run(suite());
}
