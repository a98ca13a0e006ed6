/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim-kernel.h"
#include "test-tree.h"
#include "test-util.h"

/* The kernel simulator (tests/sim/sim-kernel.c) against what the kernel does, on small trees made
 * here: resctrl (rdtgroup.c, ctrlmondata.c), cgroup v2 cpusets (partitions, cgroup-v2.rst) and
 * cgroup v1 cpusets (cpusets.rst). */

static char *dir;
static Root *root;

static void setup(void) {
        dir = test_tmpdir();
}

static void teardown(void) {
        root = root_free(root);
        test_rmtree(dir);
        free(dir);
        dir = NULL;
}

static void open_root(void) {
        ck_assert_int_eq(root_new(dir, &root), 0);
}

#define W(rel, text) test_write(dir, (rel), (text))
#define F(rel, text) tree_assert_file(dir, (rel), (text))

/* A thread for proc/: PID pid of process tgid with PF_* flags. */
static void task(long tgid, long pid, unsigned flags) {
        char rel[96], stat[256];
        snprintf(rel, sizeof(rel), "proc/%ld/task/%ld/stat", tgid, pid);
        snprintf(stat, sizeof(stat),
                 "%ld (t%ld) S 1 %ld %ld 0 -1 %u 0 0 0 0 0 0 0 0 20 0 1 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 "
                 "0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
                 pid, pid, tgid, tgid, flags);
        W(rel, stat);
}

/* ---- resctrl ---- */

static void resctrl_tree(void) {
        W("proc/cpuinfo", "processor\t: 0\nvendor_id\t: GenuineIntel\n");
        W("sys/devices/system/cpu/cpu0/cache/index3/id", "0\n");
        W("sys/devices/system/cpu/cpu0/cache/index3/size", "11264K\n");
        W("sys/devices/system/cpu/cpu8/cache/index3/id", "1\n");
        W("sys/devices/system/cpu/cpu8/cache/index3/size", "11264K\n");
        W("sys/fs/resctrl/schemata", "    L3:0=7ff;1=7ff\n    MB:0=100;1=100\n");
        W("sys/fs/resctrl/size", "    L3:0=11534336;1=11534336\n    MB:0=100;1=100\n");
        W("sys/fs/resctrl/cpus", "ffff\n");
        W("sys/fs/resctrl/cpus_list", "0-15\n");
        W("sys/fs/resctrl/mode", "shareable\n");
        W("sys/fs/resctrl/tasks", "1\n2\n");
        W("sys/fs/resctrl/mon_data/mon_L3_00/llc_occupancy", "123\n");
        W("sys/fs/resctrl/mon_groups/.keep", "");
        W("sys/fs/resctrl/info/last_cmd_status", "ok\n");
        W("sys/fs/resctrl/info/L3/cbm_mask", "7ff\n");
        W("sys/fs/resctrl/info/L3/min_cbm_bits", "1\n");
        W("sys/fs/resctrl/info/L3/num_closids", "4\n");
        W("sys/fs/resctrl/info/L3/shareable_bits", "0\n");
        W("sys/fs/resctrl/info/L3/sparse_masks", "0\n");
        W("sys/fs/resctrl/info/MB/min_bandwidth", "10\n");
        W("sys/fs/resctrl/info/MB/bandwidth_gran", "10\n");
        W("sys/fs/resctrl/info/MB/num_closids", "8\n");
        open_root();
}

#define RC "sys/fs/resctrl"

static void expect_status(int k, int err, const char *status) {
        ck_assert_int_eq(k, err);
        _cleanup_free_ char *want = NULL;
        ck_assert(asprintf(&want, "%s\n", status) >= 0);
        F(RC "/info/last_cmd_status", want);
}

START_TEST(test_resctrl_mkdir_write_rmdir) {
        resctrl_tree();
        ck_assert_int_eq(sim_resctrl_mkdir(root, RC, "g1"), 0);
        /* The control files of a new group, every resource at its default. */
        F(RC "/g1/schemata", "    L3:0=7ff;1=7ff\n    MB:0=100;1=100\n");
        F(RC "/g1/size", "    L3:0=11534336;1=11534336\n    MB:0=100;1=100\n");
        F(RC "/g1/cpus", "0000\n");
        F(RC "/g1/cpus_list", "\n");
        F(RC "/g1/mode", "shareable\n");
        F(RC "/g1/tasks", "");
        F(RC "/g1/mon_data/mon_L3_00/llc_occupancy", "0\n");
        ck_assert(tree_exists(dir, RC "/g1/mon_groups"));
        ck_assert_int_eq(sim_resctrl_mkdir(root, RC, "g1"), -EEXIST);

        /* Schemata writes are merged into the kernel's format: MB padded to the widest value,
         * rounded up to bandwidth_gran; one resource and domain at a time. */
        ck_assert_int_eq(sim_resctrl_write(root, RC, "g1", "schemata", "MB:0=10"), 0);
        F(RC "/g1/schemata", "    L3:0=7ff;1=7ff\n    MB:0= 10;1=100\n");
        ck_assert_int_eq(sim_resctrl_write(root, RC, "g1", "schemata", "MB:1=15"), 0);
        F(RC "/g1/schemata", "    L3:0=7ff;1=7ff\n    MB:0= 10;1= 20\n");
        ck_assert_int_eq(sim_resctrl_write(root, RC, "g1", "schemata", "L3:0=7f0;1=70"), 0);
        F(RC "/g1/schemata", "    L3:0=7f0;1=070\n    MB:0= 10;1= 20\n");
        F(RC "/g1/size", "    L3:0=7340032;1=3145728\n    MB:0=10;1=20\n");

        /* What the kernel refuses, with its last_cmd_status. */
        expect_status(sim_resctrl_write(root, RC, "g1", "schemata", "L3:0=505"), -EINVAL,
                      "The mask 505 has non-consecutive 1-bits");
        expect_status(sim_resctrl_write(root, RC, "g1", "schemata", "L3:0=1000"), -EINVAL, "Mask out of range");
        expect_status(sim_resctrl_write(root, RC, "g1", "schemata", "L3:0=0"), -EINVAL, "Mask out of range");
        expect_status(sim_resctrl_write(root, RC, "g1", "schemata", "L3:0=xyz"), -EINVAL,
                      "Non-hex character in the mask xyz");
        expect_status(sim_resctrl_write(root, RC, "g1", "schemata", "L3:2=7"), -EINVAL, "Unknown domain 2 for L3");
        expect_status(sim_resctrl_write(root, RC, "g1", "schemata", "L2:0=1"), -EINVAL,
                      "Unknown or unsupported resource name 'L2'");
        expect_status(sim_resctrl_write(root, RC, "g1", "schemata", "MB:0=5"), -EINVAL,
                      "MB value 5 out of range [10,100]");
        F(RC "/g1/schemata", "    L3:0=7f0;1=070\n    MB:0= 10;1= 20\n");
        ck_assert_int_eq(sim_resctrl_write(root, RC, "g1", "schemata", "L3:1=7f0"), 0);
        F(RC "/info/last_cmd_status", "ok\n");

        /* CPUs move between groups; the default group takes back what others drop, and cannot drop any. */
        ck_assert_int_eq(sim_resctrl_write(root, RC, "g1", "cpus_list", "2-3"), 0);
        F(RC "/g1/cpus_list", "2-3\n");
        F(RC "/g1/cpus", "000c\n");
        F(RC "/cpus_list", "0-1,4-15\n");
        F(RC "/cpus", "fff3\n");
        ck_assert_int_eq(sim_resctrl_write(root, RC, "g1", "cpus_list", "3"), 0);
        F(RC "/cpus_list", "0-2,4-15\n");
        expect_status(sim_resctrl_write(root, RC, NULL, "cpus_list", "0-1"), -EINVAL,
                      "Can't drop CPUs from default group");

        /* Exclusive mode needs ways nobody else has, the default group's included. */
        expect_status(sim_resctrl_write(root, RC, "g1", "mode", "exclusive"), -EINVAL, "Schemata overlaps");
        ck_assert_int_eq(sim_resctrl_write(root, RC, NULL, "schemata", "L3:0=00f;1=00f"), 0);
        F(RC "/schemata", "    L3:0=00f;1=00f\n    MB:0=100;1=100\n");
        F(RC "/size", "    L3:0=4194304;1=4194304\n    MB:0=100;1=100\n");
        ck_assert_int_eq(sim_resctrl_write(root, RC, "g1", "mode", "exclusive"), 0);
        F(RC "/g1/mode", "exclusive\n");
        expect_status(sim_resctrl_write(root, RC, NULL, "schemata", "L3:0=0ff"), -EINVAL,
                      "Overlaps with exclusive group");
        expect_status(sim_resctrl_write(root, RC, "g1", "mode", "pseudo"), -EINVAL, "Unknown or unsupported mode");

        /* A new group gets the ways no exclusive group holds; CLOSIDs run out at num_closids. */
        ck_assert_int_eq(sim_resctrl_mkdir(root, RC, "g2"), 0);
        F(RC "/g2/schemata", "    L3:0=00f;1=00f\n    MB:0=100;1=100\n");
        ck_assert_int_eq(sim_resctrl_mkdir(root, RC, "g3"), 0);
        expect_status(sim_resctrl_mkdir(root, RC, "g4"), -ENOSPC, "out of CLOSIDs");
        ck_assert(!tree_exists(dir, RC "/g4"));

        /* rmdir: CPUs and tasks back to the default group, files gone. */
        W(RC "/g1/tasks", "7\n");
        ck_assert_int_eq(sim_resctrl_rmdir(root, RC, "g1"), 0);
        ck_assert(!tree_exists(dir, RC "/g1"));
        F(RC "/cpus_list", "0-15\n");
        F(RC "/cpus", "ffff\n");
        F(RC "/tasks", "1\n2\n7\n");
        ck_assert_int_eq(sim_resctrl_rmdir(root, RC, "g1"), -ENOENT);
}
END_TEST

START_TEST(test_resctrl_no_space) {
        resctrl_tree();
        W(RC "/info/L3/min_cbm_bits", "2\n");
        ck_assert_int_eq(sim_resctrl_mkdir(root, RC, "x"), 0);
        ck_assert_int_eq(sim_resctrl_write(root, RC, NULL, "schemata", "L3:0=001;1=001"), -EINVAL);
        ck_assert_int_eq(sim_resctrl_write(root, RC, NULL, "schemata", "L3:0=003;1=003"), 0);
        ck_assert_int_eq(sim_resctrl_write(root, RC, "x", "schemata", "L3:0=7fc;1=7fc"), 0);
        ck_assert_int_eq(sim_resctrl_write(root, RC, "x", "mode", "exclusive"), 0);
        /* A new group could only have ways 0-1 … and needs 2: fine; with 1 way left it is not. */
        ck_assert_int_eq(sim_resctrl_mkdir(root, RC, "y"), 0);
        F(RC "/y/schemata", "    L3:0=003;1=003\n    MB:0=100;1=100\n");
        ck_assert_int_eq(sim_resctrl_rmdir(root, RC, "y"), 0);
        ck_assert_int_eq(sim_resctrl_write(root, RC, "x", "mode", "shareable"), 0);
        ck_assert_int_eq(sim_resctrl_write(root, RC, NULL, "schemata", "L3:0=600;1=003"), 0);
        ck_assert_int_eq(sim_resctrl_write(root, RC, "x", "schemata", "L3:0=1fe;1=7fc"), 0);
        ck_assert_int_eq(sim_resctrl_write(root, RC, "x", "schemata", "L3:0=0fc"), 0);
        ck_assert_int_eq(sim_resctrl_write(root, RC, NULL, "schemata", "L3:0=700"), 0);
        ck_assert_int_eq(sim_resctrl_write(root, RC, "x", "schemata", "L3:0=0fe"), 0);
        ck_assert_int_eq(sim_resctrl_write(root, RC, "x", "mode", "exclusive"), 0);
        /* Domain 0 leaves 0x701 to others: the lowest contiguous run is bit 0 alone. */
        expect_status(sim_resctrl_mkdir(root, RC, "y"), -ENOSPC, "No space on L3:0");
}
END_TEST

START_TEST(test_resctrl_amd) {
        resctrl_tree();
        W("proc/cpuinfo", "processor\t: 0\nvendor_id\t: AuthenticAMD\n");
        W(RC "/schemata", "    L3:0=ffff;1=ffff\n    MB:0=2048;1=2048\n");
        W(RC "/info/L3/cbm_mask", "ffff\n");
        W(RC "/info/L3/sparse_masks", "1\n");
        W(RC "/info/MB/min_bandwidth", "0\n");
        W(RC "/info/MB/bandwidth_gran", "1\n");
        ck_assert_int_eq(sim_resctrl_mkdir(root, RC, "g"), 0);
        F(RC "/g/schemata", "    L3:0=ffff;1=ffff\n    MB:0=2048;1=2048\n");
        /* Sparse masks pass; MB takes AMD's absolute values. */
        ck_assert_int_eq(sim_resctrl_write(root, RC, "g", "schemata", "L3:0=f0f0;1=0f0f"), 0);
        ck_assert_int_eq(sim_resctrl_write(root, RC, "g", "schemata", "MB:0=64"), 0);
        F(RC "/g/schemata", "    L3:0=f0f0;1=0f0f\n    MB:0=  64;1=2048\n");
        expect_status(sim_resctrl_write(root, RC, "g", "schemata", "MB:0=4096"), -EINVAL,
                      "MB value 4096 out of range [0,2048]");
}
END_TEST

/* ---- cgroup v2 ---- */

#define CG "sys/fs/cgroup"

static void v2_tree(bool exclusive) {
        W(CG "/cgroup.controllers", "cpuset cpu io memory pids\n");
        W(CG "/cgroup.subtree_control", "cpu memory\n");
        W(CG "/cgroup.procs", "1\n5\n");
        W(CG "/cgroup.threads", "1\n5\n6\n");
        W(CG "/cpuset.cpus.effective", "0-7\n");
        W(CG "/cpuset.mems.effective", "0-1\n");
        if (exclusive)
                W(CG "/cpuset.cpus.isolated", "\n");
        task(1, 1, 0x400100);
        task(5, 5, 0x400100);
        task(5, 6, 0x400040);
        open_root();
}

START_TEST(test_v2_partition) {
        v2_tree(true);
        ck_assert_int_eq(sim_cgroup_write(root, CG, NULL, "cgroup.subtree_control", "+cpuset"), 0);
        F(CG "/cgroup.subtree_control", "cpuset cpu memory\n");
        ck_assert_int_eq(sim_cgroup_write(root, CG, NULL, "cgroup.subtree_control", "+rdma"), -ENOENT);

        ck_assert_int_eq(sim_cgroup_mkdir(root, CG, "a"), 0);
        F(CG "/a/cgroup.controllers", "cpuset cpu memory\n");
        F(CG "/a/cgroup.type", "domain\n");
        F(CG "/a/cgroup.procs", "");
        F(CG "/a/cpuset.cpus", "\n");
        F(CG "/a/cpuset.cpus.effective", "0-7\n");
        F(CG "/a/cpuset.cpus.exclusive", "\n");
        F(CG "/a/cpuset.cpus.partition", "member\n");
        F(CG "/a/cpuset.mems.effective", "0-1\n");

        /* The write is taken; the reason shows on read, in the kernel's words. */
        ck_assert_int_eq(sim_cgroup_write(root, CG, "a", "cpuset.cpus.partition", "isolated"), 0);
        F(CG "/a/cpuset.cpus.partition", "isolated invalid (cpuset.cpus and cpuset.cpus.exclusive are empty)\n");
        ck_assert_int_eq(sim_cgroup_write(root, CG, "a", "cpuset.cpus", "0-7"), 0);
        F(CG "/a/cpuset.cpus.partition", "isolated invalid (Parent unable to distribute cpu downstream)\n");
        ck_assert_int_eq(sim_cgroup_write(root, CG, "a", "cpuset.cpus", "6,7"), 0);
        F(CG "/a/cpuset.cpus", "6-7\n");
        F(CG "/a/cpuset.cpus.effective", "6-7\n");
        F(CG "/a/cpuset.cpus.partition", "isolated\n");
        F(CG "/cpuset.cpus.isolated", "6-7\n");
        ck_assert_int_eq(sim_cgroup_write(root, CG, "a", "cpuset.cpus.partition", "bogus"), -EINVAL);

        /* A valid partition's CPUs are nobody else's; a sibling holding CPUs first invalidates a new
         * partition, which turns valid when they are free; exclusive CPUs are nobody else's either. */
        ck_assert_int_eq(sim_cgroup_mkdir(root, CG, "b"), 0);
        ck_assert_int_eq(sim_cgroup_write(root, CG, "b", "cpuset.cpus", "5-6"), -EINVAL);
        ck_assert_int_eq(sim_cgroup_mkdir(root, CG, "c"), 0);
        ck_assert_int_eq(sim_cgroup_write(root, CG, "c", "cpuset.cpus", "4"), 0);
        ck_assert_int_eq(sim_cgroup_write(root, CG, "b", "cpuset.cpus", "4-5"), 0);
        ck_assert_int_eq(sim_cgroup_write(root, CG, "b", "cpuset.cpus.partition", "root"), 0);
        F(CG "/b/cpuset.cpus.partition", "root invalid (Cpu list in cpuset.cpus not exclusive)\n");
        ck_assert_int_eq(sim_cgroup_write(root, CG, "a", "cpuset.cpus.exclusive", "6-7"), 0);
        ck_assert_int_eq(sim_cgroup_write(root, CG, "b", "cpuset.cpus.exclusive", "6"), -EINVAL);
        ck_assert_int_eq(sim_cgroup_write(root, CG, "b", "cpuset.cpus.exclusive", "9"), -EINVAL);
        ck_assert_int_eq(sim_cgroup_rmdir(root, CG, "c"), 0);
        ck_assert_int_eq(sim_cgroup_write(root, CG, "b", "cpuset.cpus", "4-5"), 0);
        F(CG "/b/cpuset.cpus.partition", "root\n");
        F(CG "/cpuset.cpus.isolated", "6-7\n");

        /* A process moves with its threads; a cgroup with tasks cannot go. */
        ck_assert_int_eq(sim_cgroup_write(root, CG, "a", "cgroup.procs", "5"), 0);
        F(CG "/cgroup.procs", "1\n");
        F(CG "/cgroup.threads", "1\n");
        F(CG "/a/cgroup.procs", "5\n");
        F(CG "/a/cgroup.threads", "5\n6\n");
        ck_assert_int_eq(sim_cgroup_write(root, CG, "a", "cgroup.procs", "77"), -ESRCH);
        ck_assert_int_eq(sim_cgroup_rmdir(root, CG, "a"), -EBUSY);
        ck_assert_int_eq(sim_cgroup_write(root, CG, NULL, "cgroup.procs", "5"), 0);
        F(CG "/cgroup.procs", "1\n5\n");
        ck_assert_int_eq(sim_cgroup_rmdir(root, CG, "a"), 0);
        ck_assert(!tree_exists(dir, CG "/a"));
        F(CG "/cpuset.cpus.isolated", "\n");
}
END_TEST

START_TEST(test_v2_before_6_7) {
        v2_tree(false);
        W(CG "/cgroup.subtree_control", "cpu\n");
        /* Without cpuset enabled for children, a child has no cpuset files. */
        ck_assert_int_eq(sim_cgroup_mkdir(root, CG, "a"), 0);
        ck_assert(!tree_exists(dir, CG "/a/cpuset.cpus"));
        ck_assert_int_eq(sim_cgroup_rmdir(root, CG, "a"), 0);
        ck_assert_int_eq(sim_cgroup_write(root, CG, NULL, "cgroup.subtree_control", "+cpuset"), 0);
        ck_assert_int_eq(sim_cgroup_mkdir(root, CG, "a"), 0);
        ck_assert(tree_exists(dir, CG "/a/cpuset.cpus.partition"));
        ck_assert(!tree_exists(dir, CG "/a/cpuset.cpus.exclusive"));
}
END_TEST

/* "+cpuset" in a cgroup's subtree_control gives its existing children the controller: their
 * cgroup.controllers lists it and they get its files, with the parent's effective CPUs and nodes;
 * "-cpuset" takes both away, refused while a child still enables it for its own children. A
 * cgroup other than the root with processes enables no controller (no internal processes). */
START_TEST(test_v2_subtree_control_children) {
        v2_tree(true);
        ck_assert_int_eq(sim_cgroup_mkdir(root, CG, "a"), 0);
        ck_assert_int_eq(sim_cgroup_mkdir(root, CG "/a", "b"), 0);
        F(CG "/a/cgroup.controllers", "cpu memory\n");
        ck_assert(!tree_exists(dir, CG "/a/cpuset.cpus"));

        ck_assert_int_eq(sim_cgroup_write(root, CG, NULL, "cgroup.subtree_control", "+cpuset"), 0);
        F(CG "/a/cgroup.controllers", "cpuset cpu memory\n");
        F(CG "/a/cpuset.cpus", "\n");
        F(CG "/a/cpuset.cpus.effective", "0-7\n");
        F(CG "/a/cpuset.cpus.exclusive", "\n");
        F(CG "/a/cpuset.cpus.partition", "member\n");
        F(CG "/a/cpuset.mems", "\n");
        F(CG "/a/cpuset.mems.effective", "0-1\n");
        ck_assert(!tree_exists(dir, CG "/a/b/cpuset.cpus")); /* a does not give it to b */
        F(CG "/a/b/cgroup.controllers", "\n");
        ck_assert_int_eq(sim_cgroup_write(root, CG, "a", "cpuset.cpus", "2-3"), 0);

        ck_assert_int_eq(sim_cgroup_write(root, CG, "a", "cgroup.subtree_control", "+cpuset"), 0);
        F(CG "/a/b/cgroup.controllers", "cpuset\n");
        F(CG "/a/b/cpuset.cpus.effective", "2-3\n");
        ck_assert_int_eq(sim_cgroup_write(root, CG, NULL, "cgroup.subtree_control", "-cpuset"), -EBUSY);
        ck_assert_int_eq(sim_cgroup_write(root, CG, "a", "cgroup.subtree_control", "-cpuset"), 0);
        ck_assert(!tree_exists(dir, CG "/a/b/cpuset.cpus"));
        ck_assert_int_eq(sim_cgroup_write(root, CG, NULL, "cgroup.subtree_control", "-cpuset"), 0);
        F(CG "/cgroup.subtree_control", "cpu memory\n");
        F(CG "/a/cgroup.controllers", "cpu memory\n");
        ck_assert(!tree_exists(dir, CG "/a/cpuset.cpus"));
        ck_assert(!tree_exists(dir, CG "/a/cpuset.cpus.partition"));

        ck_assert_int_eq(sim_cgroup_write(root, CG, "a", "cgroup.procs", "5"), 0);
        ck_assert_int_eq(sim_cgroup_write(root, CG, "a", "cgroup.subtree_control", "+cpu"), -EBUSY);
}
END_TEST

/* ---- cgroup v1 ---- */

#define V1 "sys/fs/cgroup/cpuset"

static void v1_tree(const char *pre) {
        char rel[128];
        snprintf(rel, sizeof(rel), V1 "/%scpus", pre);
        W(rel, "0-3\n");
        snprintf(rel, sizeof(rel), V1 "/%smems", pre);
        W(rel, "0\n");
        W(V1 "/tasks", "1\n2\n5\n6\n");
        W(V1 "/cgroup.procs", "1\n2\n5\n");
        task(1, 1, 0x400100);
        task(2, 2, 0x4208040); /* a per-CPU kernel thread: PF_NO_SETAFFINITY */
        task(5, 5, 0x400100);
        task(5, 6, 0x400040);
        open_root();
}

START_TEST(test_v1_cpuset) {
        v1_tree("cpuset.");
        ck_assert_int_eq(sim_cgroup_mkdir(root, V1, "x"), 0);
        F(V1 "/x/cpuset.cpus", "\n");
        F(V1 "/x/cpuset.mems", "\n");
        F(V1 "/x/cpuset.cpu_exclusive", "0\n");
        F(V1 "/x/cpuset.sched_load_balance", "1\n");
        F(V1 "/x/tasks", "");
        F(V1 "/x/notify_on_release", "0\n");

        /* No task may join a cpuset without CPUs and memory nodes. */
        ck_assert_int_eq(sim_cgroup_write(root, V1, "x", "tasks", "5"), -ENOSPC);
        ck_assert_int_eq(sim_cgroup_write(root, V1, "x", "cpuset.cpus", "4"), -EINVAL);
        ck_assert_int_eq(sim_cgroup_write(root, V1, "x", "cpuset.cpus", "2,3"), 0);
        F(V1 "/x/cpuset.cpus", "2-3\n");
        F(V1 "/x/cpuset.effective_cpus", "2-3\n");
        ck_assert_int_eq(sim_cgroup_write(root, V1, "x", "cpuset.mems", "0"), 0);

        /* Threads move one by one; pinned kernel threads and unknown ids are refused. */
        ck_assert_int_eq(sim_cgroup_write(root, V1, "x", "tasks", "2"), -EINVAL);
        ck_assert_int_eq(sim_cgroup_write(root, V1, "x", "tasks", "99"), -ESRCH);
        ck_assert_int_eq(sim_cgroup_write(root, V1, "x", "tasks", "6"), 0);
        F(V1 "/tasks", "1\n2\n5\n");
        F(V1 "/cgroup.procs", "1\n2\n5\n");
        F(V1 "/x/tasks", "6\n");
        F(V1 "/x/cgroup.procs", "5\n");
        ck_assert_int_eq(sim_cgroup_write(root, V1, "x", "tasks", "5"), 0);
        F(V1 "/cgroup.procs", "1\n2\n");
        ck_assert_int_eq(sim_cgroup_rmdir(root, V1, "x"), -EBUSY);

        /* A cpuset below another: its CPUs lie in its parent's, which cannot shrink below them
         * (EBUSY); a task moves in from wherever in the hierarchy it is; one with tasks keeps CPUs. */
        ck_assert_int_eq(sim_cgroup_mkdir(root, V1 "/x", "z"), 0);
        ck_assert_int_eq(sim_cgroup_write(root, V1 "/x", "z", "cpuset.cpus", "3"), 0);
        ck_assert_int_eq(sim_cgroup_write(root, V1 "/x", "z", "cpuset.mems", "0"), 0);
        ck_assert_int_eq(sim_cgroup_write(root, V1, "x", "cpuset.cpus", "2"), -EBUSY);
        ck_assert_int_eq(sim_cgroup_write(root, V1 "/x", "z", "tasks", "1"), 0);
        F(V1 "/tasks", "2\n");
        F(V1 "/x/z/tasks", "1\n");
        ck_assert_int_eq(sim_cgroup_write(root, V1 "/x", "z", "cpuset.cpus", ""), -ENOSPC);
        ck_assert_int_eq(sim_cgroup_write(root, V1, NULL, "tasks", "1"), 0);
        F(V1 "/x/z/tasks", "");
        ck_assert_int_eq(sim_cgroup_write(root, V1 "/x", "z", "cpuset.cpus", ""), 0);
        ck_assert_int_eq(sim_cgroup_write(root, V1, "x", "cpuset.cpus", ""), -ENOSPC); /* x has tasks */
        ck_assert_int_eq(sim_cgroup_rmdir(root, V1 "/x", "z"), 0);

        /* Exclusive siblings do not overlap. */
        ck_assert_int_eq(sim_cgroup_write(root, V1, "x", "cpuset.cpu_exclusive", "1"), 0);
        ck_assert_int_eq(sim_cgroup_mkdir(root, V1, "y"), 0);
        ck_assert_int_eq(sim_cgroup_write(root, V1, "y", "cpuset.cpus", "3"), -EINVAL);
        ck_assert_int_eq(sim_cgroup_write(root, V1, "y", "cpuset.cpus", "0-1"), 0);
        ck_assert_int_eq(sim_cgroup_write(root, V1, "y", "cpuset.cpus", "1-2"), -EINVAL);
        ck_assert_int_eq(sim_cgroup_write(root, V1, "x", "cpuset.cpu_exclusive", "0"), 0);
        ck_assert_int_eq(sim_cgroup_write(root, V1, "y", "cpuset.cpus", "1-2"), 0);
        ck_assert_int_eq(sim_cgroup_write(root, V1, "x", "cpuset.cpu_exclusive", "1"), -EINVAL);

        /* Back to the root, then away. */
        ck_assert_int_eq(sim_cgroup_write(root, V1, NULL, "tasks", "5"), 0);
        ck_assert_int_eq(sim_cgroup_write(root, V1, NULL, "tasks", "6"), 0);
        F(V1 "/tasks", "1\n2\n5\n6\n");
        F(V1 "/cgroup.procs", "1\n2\n5\n");
        ck_assert_int_eq(sim_cgroup_rmdir(root, V1, "x"), 0);
        ck_assert_int_eq(sim_cgroup_rmdir(root, V1, "y"), 0);
        ck_assert(!tree_exists(dir, V1 "/x"));
}
END_TEST

START_TEST(test_v1_noprefix) {
        v1_tree("");
        ck_assert_int_eq(sim_cgroup_mkdir(root, V1, "x"), 0);
        F(V1 "/x/cpus", "\n");
        F(V1 "/x/sched_load_balance", "1\n");
        ck_assert(!tree_exists(dir, V1 "/x/cpuset.cpus"));
        ck_assert_int_eq(sim_cgroup_write(root, V1, "x", "cpus", "1"), 0);
        F(V1 "/x/effective_cpus", "1\n");
}
END_TEST

/* ---- the root ops ---- */

/* A tree gets the simulator's table in a program linked with it, "/" the kernel's. */
START_TEST(test_ops_chosen_at_link_time) {
        _cleanup_(root_freep) Root *sys = NULL;
        open_root();
        ck_assert_ptr_eq(root->ops, &sim_root_ops);
        ck_assert(!root_is_system(root));
        ck_assert(!root_can(root, ROOT_CAN_SCHEDULE) && !root_can(root, ROOT_CAN_MOUNT));
        ck_assert(root_can(root, ROOT_CAN_HOLD_PM_QOS));
        ck_assert_int_eq(root_new("/", &sys), 0);
        ck_assert_ptr_eq(sys->ops, &root_kernel_ops);
        ck_assert(root_is_system(sys) && root_can(sys, ROOT_CAN_SCHEDULE));
}
END_TEST

/* What the shipped programs do under --root: files, nothing more. The simulator moves a
 * selection's brackets; the plain tree writes the value. */
START_TEST(test_plain_tree_ops) {
        W("sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n");
        W("sys/fs/cgroup/cgroup.controllers", "cpuset cpu\n");
        open_root();
        ck_assert_int_eq(root_write_value(root, "sys/kernel/mm/transparent_hugepage/enabled", "never"), 0);
        F("sys/kernel/mm/transparent_hugepage/enabled", "always madvise [never]\n");

        root->ops = &root_plain_tree_ops;
        ck_assert_int_eq(root_write_value(root, "sys/kernel/mm/transparent_hugepage/enabled", "always"), 0);
        F("sys/kernel/mm/transparent_hugepage/enabled", "always\n");
        ck_assert_int_eq(root_write_value(root, "sys/kernel/mm/nothing", "1"), -ENOENT);
        ck_assert_int_eq(root_mkdir_object(root, ROOT_FS_CGROUP, "sys/fs/cgroup", "a"), 0);
        ck_assert(root_is_dir(root, "sys/fs/cgroup/a") && !root_exists(root, "sys/fs/cgroup/a/cpuset.cpus"));
        ck_assert_int_eq(root_mkdir_object(root, ROOT_FS_CGROUP, "sys/fs/cgroup", "a"), -EEXIST);
        ck_assert_int_eq(root_rmdir_object(root, ROOT_FS_CGROUP, "sys/fs/cgroup", "a"), 0);
        CpuSet cpus = {};
        cpu_set_add(&cpus, 0);
        ck_assert_int_eq(root_set_affinity(root, 0, &cpus), -EOPNOTSUPP);
        ck_assert_int_eq(root_pm_qos_open(root), -EOPNOTSUPP);
        ck_assert_int_eq(root_mount(root, "sys/fs/resctrl", "resctrl", NULL), -EOPNOTSUPP);
        ck_assert_int_eq(root_update_bootloader(root, "true"), -EOPNOTSUPP);
        ck_assert_int_eq(root_try_restart_unit(root, "irqbalance.service"), -EOPNOTSUPP);
}
END_TEST

/* irqbalance reads its banned CPUs only at start: after a write, its backend asks the root to
 * restart it where systemd runs (the kernel's root: TryRestartUnit over D-Bus), which the simulator
 * records; where no systemd runs it says so. */
START_TEST(test_irqbalance_restart_through_root) {
        W("etc/default/irqbalance", "#IRQBALANCE_ONESHOT=\n");
        W("run/systemd/system/.keep", "");
        open_root();
        size_t before = strv_length((char **) sim_restarted_units());
        Knob k = { .id = (char *) "irqbalance/banned_cpus",
                   .domain = DOMAIN_IRQBALANCE,
                   .kind = VALUE_CPU_LIST,
                   .path = (char *) "etc/default/irqbalance" };
        ck_assert_int_eq(backend_write(&backend_irqbalance, root, &k, "2-3"), 0);
        F("etc/default/irqbalance", "#IRQBALANCE_ONESHOT=\nIRQBALANCE_BANNED_CPULIST=\"2-3\"\n");
        _cleanup_free_ char *note = NULL, *note2 = NULL;
        ck_assert_int_eq(backend_irqbalance.flush(root, NULL, &note), 0);
        ck_assert_ptr_null(note);
        char * const *units = sim_restarted_units();
        ck_assert_uint_eq(strv_length((char **) units), before + 1);
        ck_assert_str_eq(units[before], "irqbalance.service");

        ck_assert_int_eq(root_unlink(root, "run/systemd/system/.keep"), 0);
        ck_assert_int_eq(root_rmdir(root, "run/systemd/system"), 0);
        ck_assert_int_eq(backend_irqbalance.flush(root, NULL, &note2), 0);
        ck_assert_str_eq(note2, "restart irqbalance for its banned CPU list to take effect");
        ck_assert_uint_eq(strv_length((char **) sim_restarted_units()), before + 1);
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("kernel-sim");
        TCase *tc = tcase_create("resctrl");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_resctrl_mkdir_write_rmdir);
        tcase_add_test(tc, test_resctrl_no_space);
        tcase_add_test(tc, test_resctrl_amd);
        suite_add_tcase(s, tc);
        tc = tcase_create("cgroup");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_v2_partition);
        tcase_add_test(tc, test_v2_before_6_7);
        tcase_add_test(tc, test_v2_subtree_control_children);
        tcase_add_test(tc, test_v1_cpuset);
        tcase_add_test(tc, test_v1_noprefix);
        suite_add_tcase(s, tc);
        tc = tcase_create("ops");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_ops_chosen_at_link_time);
        tcase_add_test(tc, test_plain_tree_ops);
        tcase_add_test(tc, test_irqbalance_restart_through_root);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return test_run(suite());
}
