/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hugepages.h"
#include "numa.h"
#include "strv.h"
#include "test-tree.h"

/* The hugepages backend on the fake hosts, their pools answered by the simulator as the kernel
 * does (tests/sim/sim-hugetlb.c: up to the node's free memory, 1G pages up to the fragmentation
 * bound of the host's .mkhost.json: intel-2s 4 on node 0 and 2 on node 1, epyc 8 and 8, vm 1). */

#define NODE "sys/devices/system/node"
#define POOL(n, kb) NODE "/node" #n "/hugepages/hugepages-" #kb "kB/nr_hugepages"

/* 1G on the isolated CPUs' nodes, 2M on every node, 1G the default size. */
static const char profile_both[] =
        "{ \"hugepages\": { \"default_size\": \"1G\", \"pages\": [ { \"size\": \"1G\", \"nodes\": \"isolated\", "
        "\"count\": 3 }, { \"size\": \"2M\", \"count\": 512 } ] } }";

static char *prof_dir;

static void setup(void) {
        prof_dir = test_tmpdir();
}

static void teardown(void) {
        test_rmtree(prof_dir);
        free(prof_dir);
        prof_dir = NULL;
}

/* A plan of json on a host tree (path), which must succeed. */
static Plan *plan_on(const char *path, const char *json) {
        Root *root;
        Host *host;
        test_open_host(path, &root, &host);
        Plan *p = test_plan_ok(root, host, prof_dir, "hp", json);
        host_free(host);
        root_free(root);
        return p;
}

static void plan_err_on(const char *path, const char *json, const char *pointer, const char *fragment) {
        Root *root;
        Host *host;
        test_open_host(path, &root, &host);
        test_plan_err(root, host, prof_dir, "lab", json, pointer, fragment);
        host_free(host);
        root_free(root);
}

static const Knob *knob(const Plan *p, const char *id) {
        const Knob *k = plan_find(p, id);
        ck_assert_msg(k, "no knob %s", id);
        return k;
}

static size_t count_prefix(const Plan *p, const char *prefix) {
        size_t n = 0;
        for (size_t i = 0; i < p->n_knobs; i++)
                n += startswith(p->knobs[i].id, prefix);
        return n;
}

static char *profile_file(const char *json) {
        return test_profile(prof_dir, "hp", json);
}

/* ---- plan ---- */

START_TEST(test_plan_intel) {
        _cleanup_free_ char *fx = fixture_host("intel-2s");
        _cleanup_(plan_freep) Plan *p = plan_on(fx, profile_both);
        const Knob *k = knob(p, "hugepages/node1/2M");
        ck_assert_str_eq(k->path, POOL(1, 2048));
        ck_assert_str_eq(k->current, "0");
        ck_assert_str_eq(k->desired, "512");
        ck_assert_int_eq(k->domain, DOMAIN_HUGEPAGES);
        ck_assert(!k->reboot);
        k = knob(p, "hugepages/node0/1G");
        ck_assert_str_eq(k->path, POOL(0, 1048576));
        ck_assert_str_eq(k->desired, "3");
        ck_assert_msg(k->reboot, "1G pools are also reserved at boot");
        ck_assert_uint_eq(count_prefix(p, "hugepages/"), 4);
        /* The boot arguments are the boot domain's knobs, in the order the kernel needs them. */
        const char *args[][2] = { { "boot/default_hugepagesz", "1G" },
                                  { "boot/hugepagesz", "1G" },
                                  { "boot/hugepages", "0:3,1:3" } };
        size_t prev = 0;
        for (size_t i = 0; i < ELEMENTSOF(args); i++) {
                k = knob(p, args[i][0]);
                ck_assert_int_eq(k->domain, DOMAIN_BOOT);
                ck_assert_str_eq(k->desired, args[i][1]);
                ck_assert(k->reboot);
                ck_assert_ptr_null(k->path);
                ck_assert_msg(strstr(strempty(k->note), "hugepages section"), "%s note: %s", k->id, k->note);
                ck_assert_uint_gt((size_t) (k - p->knobs) + 1, prev);
                prev = (size_t) (k - p->knobs) + 1;
        }
        ck_assert_uint_lt((size_t) (knob(p, "boot/hugepages") - p->knobs),
                          (size_t) (knob(p, "hugepages/node0/2M") - p->knobs));
        /* Each node's memory and what its pages take. */
        ck_assert_msg(
                plan_has_note(p, "node 0 has 96.0 GiB (86.4 GiB free); its huge pages take 4.0 GiB (3 × 1G, 512 × 2M)"),
                "no memory note");
        ck_assert(plan_has_note(p, "node 1 has 96.0 GiB"));
}
END_TEST

START_TEST(test_plan_nodes) {
        _cleanup_free_ char *fx = fixture_host("intel-2s");
        static const struct {
                const char *cpus, *nodes;
                bool node0, node1;
        } cases[] = {
                { "", "\"nodes\": \"isolated\",", true, true },
                { "\"cpus\": { \"isolated\": \"8-15,24-31\" },", "\"nodes\": \"isolated\",", false, true },
                { "\"cpus\": { \"isolated\": \"8-15,24-31\" },", "\"nodes\": \"housekeeping\",", true, false },
                { "", "\"nodes\": \"node:1\",", false, true },
                { "", "\"nodes\": \"package:0\",", true, false },
                { "", "\"nodes\": \"2,0\",", true, false },
                { "", "\"nodes\": \"0-1\",", true, true },
                { "", "", true, true },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *json = NULL;
                ck_assert(asprintf(&json,
                                   "{ %s \"hugepages\": { \"pages\": [ { \"size\": \"2M\", %s \"count\": 8 } ] } }",
                                   cases[i].cpus, cases[i].nodes) >= 0);
                if (strstr(json, "\"2,0\"")) {
                        plan_err_on(fx, json, "/hugepages/pages/0/nodes",
                                    "NUMA node 2 does not exist or has no memory (nodes with memory: 0-1)");
                        continue;
                }
                _cleanup_(plan_freep) Plan *p = plan_on(fx, json);
                ck_assert_msg(!!plan_find(p, "hugepages/node0/2M") == cases[i].node0, "case %zu node 0", i);
                ck_assert_msg(!!plan_find(p, "hugepages/node1/2M") == cases[i].node1, "case %zu node 1", i);
                /* No gigantic pages, no boot argument. */
                ck_assert_uint_eq(count_prefix(p, "boot/"), 0);
        }
}
END_TEST

START_TEST(test_plan_refuses) {
        _cleanup_free_ char *fx = fixture_host("intel-2s");
        static const struct {
                const char *json, *pointer, *fragment;
        } cases[] = {
                { "{ \"hugepages\": { \"pages\": [ { \"size\": \"1G\", \"nodes\": \"1\", \"count\": 91 } ] } }",
                  "/hugepages/pages/0/count",
                  "node 1 has 96.0 GiB of memory (86.4 GiB free); the huge pages asked for it take 91.0 GiB (91 × 1G), "
                  "more than the 90.0 GiB it can hold while keeping 6.0 GiB for everything else; ask for fewer" },
                { "{ \"hugepages\": { \"pages\": [ { \"size\": \"16M\", \"count\": 1 } ] } }",
                  "/hugepages/pages/0/size",
                  "16M pages are not offered by this host; it offers 2M and 1G (sys/kernel/mm/hugepages)" },
                { "{ \"hugepages\": { \"default_size\": \"64K\" } }", "/hugepages/default_size",
                  "64K pages are not offered by this host" },
                { "{ \"hugepages\": { \"pages\": [ { \"size\": \"2M\", \"nodes\": \"bogus\", \"count\": 1 } ] } }",
                  "/hugepages/pages/0/nodes", "neither node numbers" },
                { "{ \"hugepages\": { \"pages\": [ { \"size\": \"2M\", \"count\": \"${n}\" } ] }, \"variables\": { \"n\": \"lots\" } }",
                  "/hugepages/pages/0/count", "\"lots\" is not a number of pages" },
                { "{ \"hugepages\": { \"pages\": [ { \"size\": \"1G\", \"count\": 1 } ] }, \"boot\": { \"args\": { "
                  "\"hugepagesz\": \"2M\" } } }",
                  "/boot/args/hugepagesz", "hugepagesz is set by the hugepages section (\"boot_size\"); remove it" },
                { "{ \"hugepages\": { \"default_size\": \"2M\" }, \"boot\": { \"args\": { \"default_hugepagesz\": false } } }",
                  "/boot/args/default_hugepagesz", "set by the hugepages section (\"default_size\")" },
                { "{ \"hugepages\": { \"pages\": [ { \"size\": \"2M\", \"count\": 1 }, { \"size\": \"2M\", \"nodes\": "
                  "\"node:1\", \"count\": 2 } ] } }",
                  "/hugepages/pages/1", "node 1 gets 2M pages from /hugepages/pages/0 already" },
                { "{ \"hugepages\": { \"boot_size\": \"1G\", \"pages\": [ { \"size\": \"2M\", \"count\": 1 } ] } }",
                  "/hugepages/boot_size", "no pages of 1G are asked for" },
                { "{ \"hugepages\": { \"pages\": [ { \"size\": \"2M\" } ] } }", "/hugepages/pages/0",
                  "missing \"count\"" },
                { "{ \"hugepages\": { \"pages\": [ { \"size\": \"1X\", \"count\": 1 } ] } }", "/hugepages/pages/0/size",
                  "\"1X\" is not a page size" },
                { "{ \"hugepages\": { \"pages\": [ { \"size\": \"2M\", \"count\": 1.5 } ] } }",
                  "/hugepages/pages/0/count", "the count is a number of pages" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                plan_err_on(fx, cases[i].json, cases[i].pointer, cases[i].fragment);
}
END_TEST

/* What cannot fit is refused by rtpartctl too: exit 2, the node and its memory named. */
START_TEST(test_plan_refuses_ctl) {
        _cleanup_free_ char *fx = fixture_host("epyc"), *out = NULL, *args = NULL;
        _cleanup_free_ char *path = profile_file(
                "{ \"hugepages\": { \"pages\": [ { \"size\": \"2M\", \"nodes\": \"0\", \"count\": 62000 } ] } }");
        ck_assert(asprintf(&args, "--no-daemon plan '%s'", path) >= 0);
        ck_assert_int_eq(tree_ctl(fx, &out, args), 2);
        ck_assert_msg(strstr(out,
                             "/hugepages/pages/0/count: node 0 has 128.0 GiB of memory (115.2 GiB free); the huge "
                             "pages asked for it take 121.1 GiB (62000 × 2M)"),
                      "%s", out);
}
END_TEST

/* The bootloader's own hugepages= would be replaced by rtpart's: refused, with the fix. */
START_TEST(test_plan_refuses_configured) {
        _cleanup_free_ char *t = tree_copy_host("intel-2s");
        test_write(t, "etc/default/grub",
                   "GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet hugepages=64\"\nGRUB_CMDLINE_LINUX=\"\"\n");
        plan_err_on(t, profile_both, "/hugepages", "hugepages= for the default page size");
        /* Without boot arguments of its own, nothing is replaced. */
        _cleanup_(plan_freep) Plan *p = plan_on(
                t, "{ \"hugepages\": { \"boot_size\": \"none\", \"pages\": [ { \"size\": \"1G\", \"count\": 1 } ] } }");
        ck_assert_uint_eq(count_prefix(p, "boot/"), 0);
        ck_assert(!knob(p, "hugepages/node0/1G")->reboot);
        tree_remove(t);
}
END_TEST

/* GRUB's defaults that cannot be read without running them: the plan says why, shows the running
 * kernel's command line for the boot knobs, and still plans the pools. */
START_TEST(test_plan_grub_unreadable) {
        _cleanup_free_ char *t = tree_copy_host("intel-2s");
        test_write(t, "etc/default/grub", "GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX=\"$(cat /etc/args)\"\n");
        _cleanup_(plan_freep) Plan *p = plan_on(t, profile_both);
        ck_assert(plan_has_note(p,
                                "hugepages: 1G pages the kernel cannot give at runtime cannot be reserved at "
                                "boot: /etc/default/grub, line 2: a command substitution"));
        ck_assert_ptr_null(knob(p, "boot/hugepages")->current);
        ck_assert_str_eq(knob(p, "hugepages/node1/1G")->desired, "3");
        tree_remove(t);
}
END_TEST

/* A kernel before 5.16 takes one hugepages= count, which it spreads over the nodes in turn. */
START_TEST(test_plan_old_kernel) {
        _cleanup_free_ char *t = tree_copy_host("intel-2s");
        test_write(t, "proc/sys/kernel/osrelease", "4.18.0-513.el8.x86_64\n");
        _cleanup_(plan_freep) Plan *p = plan_on(t, profile_both);
        ck_assert_str_eq(knob(p, "boot/hugepages")->desired, "6");
        plan_err_on(t, "{ \"hugepages\": { \"pages\": [ { \"size\": \"1G\", \"nodes\": \"1\", \"count\": 2 } ] } }",
                    "/hugepages",
                    "this host runs Linux 4.18.0-513.el8.x86_64, whose hugepages= takes no count per node");
        tree_remove(t);
}
END_TEST

START_TEST(test_plan_vm) {
        _cleanup_free_ char *fx = fixture_host("vm");
        _cleanup_(plan_freep) Plan *p = plan_on(fx, profile_both);
        ck_assert_str_eq(knob(p, "hugepages/node0/2M")->path, "sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages");
        ck_assert_str_eq(knob(p, "boot/hugepages")->desired, "3");
        ck_assert_uint_eq(count_prefix(p, "hugepages/"), 2);
        ck_assert(plan_has_note(p, "node 0 has 8.0 GiB (7.2 GiB free)"));
        plan_err_on(fx, "{ \"hugepages\": { \"pages\": [ { \"size\": \"2M\", \"nodes\": \"1\", \"count\": 1 } ] } }",
                    "/hugepages/pages/0/nodes", "this host has no NUMA nodes");
}
END_TEST

START_TEST(test_no_section) {
        _cleanup_free_ char *fx = fixture_host("intel-2s");
        _cleanup_(plan_freep) Plan *p = plan_on(fx, "{ \"sysctl\": { \"vm.swappiness\": 10 } }");
        ck_assert_uint_eq(plan_count_domain(p, DOMAIN_HUGEPAGES), 0);
        ck_assert_uint_eq(count_prefix(p, "boot/"), 0);
}
END_TEST

/* hugepages_reserved() of the profile json on the bundled host name; *ret_path: the profile's file. */
static int reserved_on(const char *name, const char *json, HugepageReservation *ret, Error *ret_error,
                       char **ret_path) {
        _cleanup_free_ char *fx = fixture_host(name), *err = NULL;
        Root *root;
        Host *host;
        Profile *p = NULL;
        Resolved *r = NULL;
        *ret_path = profile_file(json);
        test_open_host(fx, &root, &host);
        ck_assert_int_eq(test_resolve(root, host, *ret_path, &p, &r, &err), 0);
        int k = hugepages_reserved(r, root, ret, ret_error);
        resolved_free(r);
        profile_free(p);
        host_free(host);
        root_free(root);
        return k;
}

/* What the exports ask: the pools per node, without a plan. */
START_TEST(test_reserved) {
        _cleanup_free_ char *path = NULL;
        HugepageReservation res = {};
        Error e = {};
        ck_assert_int_eq(reserved_on("intel-2s",
                                     "{ \"cpus\": { \"isolated\": \"8-15,24-31\" }, \"hugepages\": { \"pages\": [ { "
                                     "\"size\": \"1G\", \"nodes\": \"isolated\", \"count\": 4 }, { \"size\": \"2M\", "
                                     "\"count\": 256 }, { \"size\": \"1G\", \"nodes\": \"0\", \"count\": 0 } ] } }",
                                     &res, &e, &path),
                         0);
        ck_assert_uint_eq(res.n_pools, 3); /* node 0's 1G count of 0 is no reservation */
        ck_assert_uint_eq(res.boot_kb, 1048576);
        ck_assert_uint_eq(res.default_kb, 0);
        const HugepagePool want[] = { { 0, 2048, 256, false }, { 1, 2048, 256, false }, { 1, 1048576, 4, true } };
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                ck_assert_uint_eq(res.pools[i].node, want[i].node);
                ck_assert_uint_eq(res.pools[i].size_kb, want[i].size_kb);
                ck_assert_uint_eq(res.pools[i].count, want[i].count);
                ck_assert_int_eq(res.pools[i].boot, want[i].boot);
        }
        hugepage_reservation_done(&res);
        error_done(&e);
}
END_TEST

/* What an export gets where the profile reserves nothing, and where its section is wrong for the
 * host: the file, the pointer and the message, as the plan gives them. */
START_TEST(test_reserved_none_and_errors) {
        static const struct {
                const char *json;
                const char *pointer; /* NULL: no error, no pools */
                const char *message;
        } cases[] = {
                { "{ \"sysctl\": { \"vm.swappiness\": 10 } }", NULL, NULL },
                { "{ \"hugepages\": { \"pages\": [ { \"size\": \"16G\", \"count\": 1 } ] } }",
                  "/hugepages/pages/0/size", "16G pages are not offered by this host" },
                { "{ \"hugepages\": { \"pages\": [ { \"size\": \"2M\", \"nodes\": \"7\", \"count\": 1 } ] } }",
                  "/hugepages/pages/0/nodes", "node" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *path = NULL;
                HugepageReservation res = {};
                Error e = {};
                int k = reserved_on("intel-2s", cases[i].json, &res, &e, &path);
                if (!cases[i].pointer) {
                        ck_assert_int_eq(k, 0);
                        ck_assert_uint_eq(res.n_pools, 0);
                        ck_assert_ptr_null(res.pools);
                } else {
                        ck_assert_int_eq(k, -EINVAL);
                        ck_assert_str_eq(e.file, path);
                        ck_assert_str_eq(e.pointer, cases[i].pointer);
                        ck_assert_msg(strstr(e.message, cases[i].message), "%s", e.message);
                }
                hugepage_reservation_done(&res);
                error_done(&e);
        }
}
END_TEST

START_TEST(test_sizes) {
        static const struct {
                const char *in;
                uint64_t kb;
                const char *out;
        } ok[] = { { "2M", 2048, "2M" },      { "1G", 1048576, "1G" },     { "1GB", 1048576, "1G" },
                   { "2048kB", 2048, "2M" },  { "64K", 64, "64K" },        { "1024M", 1048576, "1G" },
                   { "2097152", 2048, "2M" }, { "16GiB", 16777216, "16G" } };
        for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
                uint64_t kb;
                ck_assert_int_eq(hugepage_size_parse(ok[i].in, &kb), 0);
                ck_assert_uint_eq(kb, ok[i].kb);
                _cleanup_free_ char *f = hugepage_size_format(kb);
                ck_assert_str_eq(f, ok[i].out);
        }
        static const char * const bad[] = { "", "G", "0", "2X", "1.5G", "-2M", "2M ", "100" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                uint64_t kb;
                ck_assert_msg(hugepage_size_parse(bad[i], &kb) == -EINVAL, "'%s' parsed", bad[i]);
        }
}
END_TEST

/* ---- apply, verify, revert ---- */

/* Verify with the tree's own running command line. */
static void verify_tree(const char *t, VerifyResult *ret) {
        Root *root;
        _cleanup_free_ char *cmdline = tree_read(t, "proc/cmdline");
        ck_assert_int_eq(root_new(t, &root), 0);
        Journal *j = test_journal_load(root);
        ck_assert_int_eq(engine_verify(root, j, strempty(cmdline), ret), 0);
        journal_free(j);
        root_free(root);
}

static bool pending(const VerifyResult *v, const char *id) {
        return strv_contains(v->reboot_pending, id);
}

static void assert_pool(const char *t, const char *rel, const char *text) {
        tree_assert_file(t, rel, text);
}

static int apply_json(const char *t, const char *json, EngineResult *res) {
        _cleanup_free_ char *path = profile_file(json);
        return tree_apply(t, path, res);
}

static bool has_note(const EngineResult *res, const char *fragment) {
        for (char **n = res->notes; n && *n; n++)
                if (strstr(*n, fragment))
                        return true;
        return false;
}

/* Apply, verify and revert on each bootloader: the tree comes back byte for byte (pools, free
 * counts, the nodes' meminfo, the bootloader's files). */
START_TEST(test_apply_revert_exact) {
        static const struct {
                const char *host, *short_pool;
                const char *boot_file;
        } hosts[] = {
                { "intel-2s", "hugepages/node1/1G", "etc/default/grub.d/rtpart.cfg" },
                { "epyc", NULL, "boot/loader/entries/8e0d4b6a2c1f4e9d9a7b5c3e1f0a2b4c-6.1.0-30-rt-amd64.conf" },
                { "vm", "hugepages/node0/1G", "etc/kernel/cmdline" },
        };
        for (size_t i = 0; i < ELEMENTSOF(hosts); i++) {
                _cleanup_free_ char *t = tree_copy_host(hosts[i].host), *before = tree_snapshot(t);
                EngineResult res = {};
                ck_assert_int_eq(apply_json(t, profile_both, &res), 0);
                ck_assert_msg(res.written == 7 || (streq(hosts[i].host, "vm") && res.written == 5), "%s: %zu written",
                              hosts[i].host, res.written);
                _cleanup_free_ char *boot = tree_read(t, hosts[i].boot_file);
                ck_assert_msg(boot && strstr(boot, "default_hugepagesz=1G hugepagesz=1G hugepages="), "%s: %s",
                              hosts[i].host, strempty(boot));
                VerifyResult v = {};
                verify_tree(t, &v);
                ck_assert_uint_eq(v.n_drift, 0);
                ck_assert(pending(&v, "boot/hugepages") || pending(&v, "hugepages"));
                for (char **p = v.reboot_pending; p && *p; p++)
                        ck_assert_msg(!startswith(*p, "hugepages/") || streq_ptr(*p, hosts[i].short_pool),
                                      "%s: %s pending", hosts[i].host, *p);
                if (hosts[i].short_pool)
                        ck_assert_msg(pending(&v, hosts[i].short_pool), "%s: %s not pending", hosts[i].host,
                                      hosts[i].short_pool);
                verify_result_done(&v);
                engine_result_done(&res);
                ck_assert_int_eq(tree_revert(t), 0);
                _cleanup_free_ char *after = tree_snapshot(t);
                tree_assert_same(before, after, hosts[i].host);
                tree_remove(t);
        }
}
END_TEST

/* 1G pages the kernel cannot give at runtime come by boot argument: reboot pending, then after the
 * reboot in sync; the 2M pools, which a reboot empties, are filled again by the next apply (what
 * rtpartd does when it starts). */
START_TEST(test_boot_fallback) {
        _cleanup_free_ char *t = tree_copy_host("intel-2s"), *before = tree_snapshot(t);
        EngineResult res = {};
        ck_assert_int_eq(apply_json(t, profile_both, &res), 0);
        assert_pool(t, POOL(0, 1048576), "3\n");
        assert_pool(t, POOL(1, 1048576), "2\n"); /* the bound of node 1 */
        assert_pool(t, POOL(1, 2048), "512\n");
        tree_assert_file(t, NODE "/node1/hugepages/hugepages-1048576kB/free_hugepages", "2\n");
        tree_assert_file(t, "sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages", "5\n");
        ck_assert_msg(
                has_note(&res,
                         "hugepages/node1/1G: node 1 got 2 of the 3 1G pages now; the rest come at the next boot"),
                "no note of the short pool");
        engine_result_done(&res);

        /* The next boot gets them: GRUB's drop-in, as grub-mkconfig's shell makes of it. */
        Root *root;
        ck_assert_int_eq(root_new(t, &root), 0);
        _cleanup_free_ char *configured = NULL, *why = NULL;
        ck_assert_int_eq(boot_configured_cmdline(root, &configured, &why), 0);
        ck_assert_msg(strstr(configured, "default_hugepagesz=1G hugepagesz=1G hugepages=0:3,1:3"),
                      "the next boot's command line: %s", configured);

        /* The pool reads as what the next boot gives while it is pending. */
        Knob k = { .id = (char *) "hugepages/node1/1G", .path = (char *) POOL(1, 1048576), .kind = VALUE_AUTO };
        _cleanup_free_ char *v1 = NULL;
        ck_assert_int_eq(backend_hugepages.read(root, &k, &v1), 0);
        ck_assert_str_eq(v1, "3");
        root_free(root);

        VerifyResult v = {};
        verify_tree(t, &v);
        ck_assert_uint_eq(v.n_drift, 0);
        ck_assert(pending(&v, "hugepages/node1/1G") && !pending(&v, "hugepages/node0/1G"));
        ck_assert(pending(&v, "boot/hugepagesz") && pending(&v, "boot/hugepages") &&
                  pending(&v, "boot/default_hugepagesz"));
        verify_result_done(&v);

        /* The reboot: the kernel reserves the 1G pages from its command line; runtime pools are
         * empty. */
        test_write(t, "proc/cmdline",
                   "BOOT_IMAGE=/boot/vmlinuz-6.1.0-30-rt-amd64 ro quiet default_hugepagesz=1G hugepagesz=1G "
                   "hugepages=0:3,1:3\n");
        for (int n = 0; n < 2; n++) {
                char rel[128];
                snprintf(rel, sizeof(rel), NODE "/node%d/hugepages/hugepages-1048576kB/nr_hugepages", n);
                test_write(t, rel, "3\n");
                snprintf(rel, sizeof(rel), NODE "/node%d/hugepages/hugepages-1048576kB/free_hugepages", n);
                test_write(t, rel, "3\n");
                snprintf(rel, sizeof(rel), NODE "/node%d/hugepages/hugepages-2048kB/nr_hugepages", n);
                test_write(t, rel, "0\n");
                snprintf(rel, sizeof(rel), NODE "/node%d/hugepages/hugepages-2048kB/free_hugepages", n);
                test_write(t, rel, "0\n");
        }
        v = (VerifyResult) {};
        verify_tree(t, &v);
        ck_assert_uint_eq(v.n_drift, 2); /* the 2M pools */
        ck_assert_uint_eq(strv_length(v.reboot_pending), 0);
        verify_result_done(&v);
        ck_assert_int_eq(apply_json(t, profile_both, &res), 0);
        ck_assert_uint_eq(res.written, 2);
        engine_result_done(&res);
        v = (VerifyResult) {};
        verify_tree(t, &v);
        ck_assert_uint_eq(v.n_drift, 0);
        ck_assert_uint_eq(strv_length(v.reboot_pending), 0);
        verify_result_done(&v);

        /* Revert: the pools and the bootloader as they were (the command line is the reboot's). */
        ck_assert_int_eq(tree_revert(t), 0);
        assert_pool(t, POOL(1, 1048576), "0\n");
        ck_assert(!tree_exists(t, "etc/default/grub.d/rtpart.cfg"));
        tree_remove(t);
}
END_TEST

/* A pool the kernel fills short, with no boot reservation for it, fails the apply; the pages it
 * got go back with everything else: the tree is as it was. */
START_TEST(test_short_fails) {
        static const char * const profiles[] = {
                "{ \"hugepages\": { \"pages\": [ { \"size\": \"2M\", \"count\": 1024 } ] } }",
                "{ \"hugepages\": { \"boot_size\": \"none\", \"pages\": [ { \"size\": \"1G\", \"count\": 3 } ] } }",
        };
        for (size_t i = 0; i < ELEMENTSOF(profiles); i++) {
                _cleanup_free_ char *t = tree_copy_host("intel-2s");
                /* 2M pages: node 1 has 1 GB free; 1G pages: its fragmentation bound, 2. */
                _cleanup_free_ char *mi = tree_read(t, NODE "/node1/meminfo");
                char *at = strstr(mi, "MemFree:") + strlen("MemFree:");
                if (i == 0) {
                        memcpy(at, "         1000000", 16);
                        test_write(t, NODE "/node1/meminfo", mi);
                }
                _cleanup_free_ char *before = tree_snapshot(t);
                EngineResult res = {};
                ck_assert_int_eq(apply_json(t, profiles[i], &res), -ENOMEM);
                ck_assert(res.rolled_back && !res.rollback_incomplete);
                ck_assert_str_eq(res.error.pointer, i == 0 ? "hugepages/node1/2M" : "hugepages/node1/1G");
                ck_assert_msg(strstr(strempty(res.error.detail),
                                     i == 0 ? "node 1 got 488 of the 1024 2M pages asked for (976 MiB free there)"
                                            : "node 1 got 2 of the 3 1G pages asked for"),
                              "%s", strempty(res.error.detail));
                engine_result_done(&res);
                _cleanup_free_ char *after = tree_snapshot(t);
                tree_assert_same(before, after, profiles[i]);
                tree_remove(t);
        }
}
END_TEST

/* A pool changed behind rtpart's back is drift; its file is the one to watch. */
START_TEST(test_drift) {
        _cleanup_free_ char *t = tree_copy_host("epyc");
        ck_assert_int_eq(apply_json(t, profile_both, NULL), 0);
        test_write(t, POOL(1, 2048), "100\n");
        VerifyResult v = {};
        verify_tree(t, &v);
        ck_assert_uint_eq(v.n_drift, 1);
        ck_assert_str_eq(v.drift[0].knob, "hugepages/node1/2M");
        ck_assert_int_eq(v.drift[0].domain, DOMAIN_HUGEPAGES);
        ck_assert_str_eq(v.drift[0].expected, "512");
        ck_assert_str_eq(v.drift[0].actual, "100");
        verify_result_done(&v);
        Knob k = { .id = (char *) "hugepages/node1/2M", .path = (char *) POOL(1, 2048) };
        _cleanup_strv_free_ char **paths = NULL;
        ck_assert_int_eq(backend_hugepages.watch(&k, &paths), 1);
        ck_assert_str_eq(paths[0], POOL(1, 2048));
        /* rtpartctl says so too. */
        _cleanup_free_ char *out = NULL;
        ck_assert_int_eq(tree_ctl(t, &out, "--no-daemon verify"), 3);
        ck_assert_msg(strstr(out, "hugepages/node1/2M") && strstr(out, "expected 512, found 100"), "%s", out);
        tree_remove(t);
}
END_TEST

/* The writes in the simulator's write log, and the last one whose line holds fragment (0: none). */
static size_t count_writes(const char *path, const char *fragment, size_t *ret_last) {
        FILE *f = fopen(path, "re");
        char line[1024];
        size_t n = 0;
        *ret_last = 0;
        if (!f)
                return 0;
        while (fgets(line, sizeof(line), f))
                if (++n && strstr(line, fragment))
                        *ret_last = n;
        fclose(f);
        return n;
}

/* Every write of an apply failing (EIO) or the process killed right after it: the tree is as it
 * was once the apply has failed, or once the next command has rolled the interrupted one back
 * (and revert has put back what a committed one changed). The second profile's apply fails of
 * itself (a 1G pool filled short, with no boot reservation: its pages go back): its writes fail
 * up to that pool's last, not in the rollback that follows (one failure at a time, as the sweep
 * of tests/sysroot/fault_sweep.py); it is killed at every one. */
START_TEST(test_faults) {
        static const char * const profiles[] = {
                profile_both,
                "{ \"hugepages\": { \"boot_size\": \"none\", \"pages\": [ { \"size\": \"2M\", \"count\": 8 }, { "
                "\"size\": \"1G\", \"count\": 3 } ] } }",
        };
        for (size_t i = 0; i < ELEMENTSOF(profiles); i++) {
                _cleanup_free_ char *t = tree_copy_host("vm"), *before = tree_snapshot(t),
                                    *path = profile_file(profiles[i]);
                _cleanup_free_ char *apply = NULL, *log = NULL;
                size_t points = 0, last_pool = 0;
                ck_assert(asprintf(&apply, "--no-daemon apply '%s'", path) >= 0);
                ck_assert(asprintf(&log, "%s/writes.log", prof_dir) >= 0);
                /* Counted on the second run: the first also makes the journal's directory. */
                for (int run = 0; run < 2; run++) {
                        (void) unlink(log);
                        ck_assert_int_eq(setenv("RTPART_TEST_WRITE_LOG", log, 1), 0);
                        int rc = tree_ctl(t, NULL, apply);
                        ck_assert_int_eq(unsetenv("RTPART_TEST_WRITE_LOG"), 0);
                        ck_assert_int_eq(rc, i == 0 ? 0 : 1);
                        points = count_writes(log, "hugepages-1048576kB/nr_hugepages", &last_pool);
                        ck_assert_int_eq(tree_ctl(t, NULL, "--no-daemon revert"), 0);
                }
                ck_assert_uint_ge(points, 10);
                ck_assert_uint_gt(last_pool, 0);
                for (size_t k = 1; k <= points; k++)
                        for (int crash = 0; crash < 2; crash++) {
                                const char *var = crash ? "RTPART_TEST_CRASH_AFTER" : "RTPART_TEST_FAIL_AT";
                                char num[16];
                                if (!crash && i == 1 && k > last_pool)
                                        continue;
                                snprintf(num, sizeof(num), "%zu", k);
                                ck_assert_int_eq(setenv(var, num, 1), 0);
                                (void) tree_ctl(t, NULL, apply);
                                ck_assert_int_eq(unsetenv(var), 0);
                                _cleanup_free_ char *out = NULL, *what = NULL;
                                int rc = tree_ctl(t, &out, "--no-daemon status");
                                ck_assert_msg(rc == 0 || rc == 3 || rc == 4, "status after point %zu: %d: %s", k, rc,
                                              out);
                                ck_assert_int_eq(tree_ctl(t, NULL, "--no-daemon revert"), 0);
                                _cleanup_free_ char *after = tree_snapshot(t);
                                ck_assert(asprintf(&what, "profile %zu, %s at write %zu", i,
                                                   crash ? "killed" : "failing", k) >= 0);
                                tree_assert_same(before, after, what);
                        }
                tree_remove(t);
        }
}
END_TEST

int main(void) {
        Suite *s = suite_create("backend-hugepages");
        TCase *p = tcase_create("plan");
        tcase_add_checked_fixture(p, setup, teardown);
        tcase_set_timeout(p, 120);
        tcase_add_test(p, test_plan_intel);
        tcase_add_test(p, test_plan_nodes);
        tcase_add_test(p, test_plan_refuses);
        tcase_add_test(p, test_plan_refuses_ctl);
        tcase_add_test(p, test_plan_refuses_configured);
        tcase_add_test(p, test_plan_grub_unreadable);
        tcase_add_test(p, test_plan_old_kernel);
        tcase_add_test(p, test_plan_vm);
        tcase_add_test(p, test_no_section);
        tcase_add_test(p, test_reserved);
        tcase_add_test(p, test_reserved_none_and_errors);
        tcase_add_test(p, test_sizes);
        suite_add_tcase(s, p);
        TCase *a = tcase_create("apply");
        tcase_add_checked_fixture(a, setup, teardown);
        tcase_set_timeout(a, 300); /* copies of the fake hosts */
        tcase_add_test(a, test_apply_revert_exact);
        tcase_add_test(a, test_boot_fallback);
        tcase_add_test(a, test_short_fails);
        tcase_add_test(a, test_drift);
        tcase_add_test(a, test_faults);
        suite_add_tcase(s, a);
        return test_run(s);
}
