/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "journal.h"
#include "strv.h"
#include "test-util.h"

static char *host_dir, *prof_dir;
static Root *root;
static Host *host;

static void setup(void) {
        host_dir = test_mini_host(16, true, 2); /* 8 cores × 2 threads, 2 nodes: 0-3,8-11 | 4-7,12-15 */
        prof_dir = test_tmpdir();
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

/* Loads JSON written as profile NAME and expects an error containing every given fragment. */
static void expect_error(const char *name, const char *json, const char *pointer, const char *fragment) {
        _cleanup_free_ char *path = test_profile(prof_dir, name, json);
        _cleanup_free_ char *err = NULL;
        Profile *p = NULL;
        Resolved *r = NULL;
        int k = test_resolve(root, host, path, &p, &r, &err);
        ck_assert_msg(k == -EINVAL, "%s: expected -EINVAL, got %d (%s)", name, k, strempty(err));
        ck_assert_ptr_nonnull(err);
        if (pointer) {
                _cleanup_free_ char *want = NULL;
                ck_assert(asprintf(&want, ": %s: ", pointer) >= 0);
                ck_assert_msg(strstr(err, want), "%s: error '%s' lacks pointer '%s'", name, err, pointer);
        }
        ck_assert_msg(strstr(err, fragment), "%s: error '%s' lacks '%s'", name, err, fragment);
        ck_assert_msg(strstr(err, ".json"), "%s: error '%s' does not name the file", name, err);
}

static Resolved *resolve_ok(const char *name, const char *json, Profile **ret_p) {
        _cleanup_free_ char *path = test_profile(prof_dir, name, json);
        _cleanup_free_ char *err = NULL;
        Resolved *r = NULL;
        int k = test_resolve(root, host, path, ret_p, &r, &err);
        ck_assert_msg(k == 0, "%s: %s", name, strempty(err));
        return r;
}

/* The profile resolves to these classes. */
static void expect_split(const char *name, const char *json, const char *isolated, const char *housekeeping) {
        Profile *p = NULL;
        Resolved *r = resolve_ok(name, json, &p);
        _cleanup_free_ char *iso = cpu_set_format_list(&r->isolated), *hk = cpu_set_format_list(&r->housekeeping);
        ck_assert_msg(streq(iso, isolated) && streq(hk, housekeeping), "%s: isolated %s, housekeeping %s", name, iso,
                      hk);
        resolved_free(r);
        profile_free(p);
}

#define RESOLVED_STR(r, ...) json_string_value(json_object_get_path((r)->doc, __VA_ARGS__))

static json_t *json_object_get_path(json_t *doc, const char *a, const char *b) {
        json_t *x = json_object_get(doc, a);
        return b ? json_object_get(x, b) : x;
}

START_TEST(test_syntax_errors) {
        expect_error("syntax", "{\"sysctl\": {\"a.b\": 1,}}", NULL, "not valid JSON");
        expect_error("syntax2", "{\n\"sysctl\": \n}", NULL, "syntax2.json:3:");
        expect_error("toplevel", "[1,2]", "/", "expected an object");
        expect_error("dupkey", "{\"sysctl\": {}, \"sysctl\": {}}", NULL, "duplicate");
}
END_TEST

START_TEST(test_unknown_keys) {
        expect_error("typo", "{\"sysclt\": {}}", "/sysclt", "did you mean \"sysctl\"");
        expect_error("typo2", "{\"irq\": {\"defualt_affinity\": \"0\"}}", "/irq/defualt_affinity",
                     "did you mean \"default_affinity\"");
        expect_error("unknown", "{\"zzzzzzzz\": 1}", "/zzzzzzzz", "known keys here:");
        expect_error("unknown2", "{\"kthreads\": {\"rules\": [{\"match\": \"x\", \"prio\": 2}]}}",
                     "/kthreads/rules/0/prio", "did you mean \"priority\"");
}
END_TEST

START_TEST(test_type_errors) {
        expect_error("type1", "{\"summary\": 3}", "/summary", "expected a string, found an integer");
        expect_error("type2", "{\"irq\": {\"affinity\": 3}}", "/irq/affinity", "CPU list");
        expect_error("type3", "{\"sysctl\": {\"vm.swappiness\": [1]}}", "/sysctl/vm.swappiness", "found an array");
        expect_error("type4", "{\"cpus\": {\"housekeeping_cores_per_node\": 0}}", "/cpus/housekeeping_cores_per_node",
                     "out of range");
        expect_error("type5", "{\"kthreads\": {\"rules\": [{\"match\": \"x\", \"policy\": \"fifoo\"}]}}",
                     "/kthreads/rules/0/policy", "did you mean \"fifo\"");
        expect_error("type4b", "{\"cpus\": {\"vcpu_siblings\": \"togther\"}}", "/cpus/vcpu_siblings",
                     "did you mean \"together\"");
        expect_error("type6", "{\"drift\": {\"policy\": \"xyzzy\"}}", "/drift/policy",
                     "use one of \"report\", \"correct\"");
        expect_error("type6b", "{\"drift\": {\"task_allow\": \"qemu-*\"}}", "/drift/task_allow", "found a string");
        expect_error("type6c", "{\"drift\": {\"task_allow\": [\"qemu-*\", 3]}}", "/drift/task_allow/1",
                     "expected a string");
        expect_error("type6d", "{\"drift\": {\"task_allow\": [\"qemu-*\", \"!\"]}}", "/drift/task_allow/1",
                     "an empty entry matches nothing");
        expect_error("type7", "{\"boot\": {\"args\": {\"nohz\": 1}}}", "/boot/args/nohz", "true for a bare flag");
        expect_error("type8", "{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"1\", \"exclusive\": \"yes\"}]}}",
                     "/cat/groups/0/exclusive", "expected true or false");
        expect_error("type9", "{\"include\": 5}", "/include", "a string or an array of strings");
        expect_error("type10", "{\"variables\": {\"a\": {}}}", "/variables/a", "expected a string, number or boolean");
}
END_TEST

START_TEST(test_name_errors) {
        expect_error("n1", "{\"sysctl\": {\"/proc/sys/vm/swappiness\": 1}}", "/sysctl/~1proc~1sys~1vm~1swappiness",
                     "dotted form");
        expect_error("n2", "{\"sysfs\": {\"kernel/mm/ksm/run\": 1}}", "/sysfs/kernel~1mm~1ksm~1run", "under /sys");
        expect_error("n3", "{\"sysfs\": {\"/sys/../etc/passwd\": 1}}", NULL, "under /sys");
        expect_error("n4", "{\"boot\": {\"args\": {\"nohz_full=1\": true}}}", "/boot/args/nohz_full=1",
                     "kernel parameter name");
        expect_error("n5", "{\"boot\": {\"args\": {\"nohz_full\": \"1 quiet\"}}}", "/boot/args/nohz_full", "spaces");
        expect_error("n6", "{\"cpuset\": {\"partitions\": [{\"cpus\": \"1\"}]}}", "/cpuset/partitions/0",
                     "missing \"name\"");
        expect_error("n7", "{\"cpuset\": {\"partitions\": [{\"name\": \"a/b\", \"cpus\": \"1\"}]}}",
                     "/cpuset/partitions/0", "may hold only");
        expect_error(
                "n8",
                "{\"cat\": {\"groups\": [{\"name\": \"a\", \"cpus\": \"1\"}, {\"name\": \"a\", \"cpus\": \"2\"}]}}",
                "/cat/groups/1", "used twice");
        expect_error("n9", "{\"cat\": {\"groups\": [{\"name\": \"info\", \"cpus\": \"1\"}]}}", "/cat/groups/0",
                     "cannot be used");
        expect_error(
                "n10",
                "{\"cat\": {\"groups\": [{\"name\": \"a\", \"cpus\": \"1\", \"l3\": {\"ways\": 2, \"percent\": 5}}]}}",
                "/cat/groups/0/l3", "exactly one of");
        expect_error(
                "n11",
                "{\"cat\": {\"groups\": [{\"name\": \"a\", \"cpus\": \"1\", \"l3\": {\"ways\": 2}, \"l3code\": {\"ways\": 2}}]}}",
                "/cat/groups/0/l3", "not both");
        expect_error("n12", "{\"irq\": {\"rules\": [{\"cpus\": \"1\"}]}}", "/irq/rules/0", "missing \"match\"");
        expect_error("n13", "{\"cat\": {\"groups\": [{\"name\": \"a\"}]}}", "/cat/groups/0", "missing \"cpus\"");
        expect_error("n14", "{\"modules\": {\"kvm intel\": {}}}", "/modules/kvm intel", "module name");
}
END_TEST

START_TEST(test_cpu_errors) {
        expect_error("c1", "{\"irq\": {\"rules\": [{\"match\": \"eth*\", \"cpus\": \"64\"}]}}", "/irq/rules/0/cpus",
                     "CPU 64 does not exist (online: 0-15)");
        expect_error("c2", "{\"irq\": {\"affinity\": \"0-3x\"}}", "/irq/affinity", "not a CPU list");
        expect_error("c3", "{\"irq\": {\"affinity\": \"node:7\"}}", "/irq/affinity", "NUMA node 7 does not exist");
        /* 2^32 + 1 is no node 1: ids never wrap. */
        expect_error("c3w", "{\"irq\": {\"affinity\": \"node:4294967297\"}}", "/irq/affinity",
                     "NUMA node 4294967297 does not exist");
        expect_error("c3p", "{\"irq\": {\"affinity\": \"package:18446744073709551617\"}}", "/irq/affinity",
                     "package 18446744073709551617 does not exist");
        expect_error("c4", "{\"irq\": {\"affinity\": \"housekeep\"}}", "/irq/affinity",
                     "did you mean \"housekeeping\"");
        expect_error("c5", "{\"cpus\": {\"isolated\": \"1-3\", \"housekeeping\": \"0-1\"}}", "/cpus/isolated",
                     "both isolated and housekeeping");
        expect_error("c6", "{\"cpus\": {\"isolated\": \"all\"}}", "/cpus/isolated", "no housekeeping CPU");
        expect_error("c7", "{\"cpus\": {\"housekeeping\": \"all\"}}", "/cpus/housekeeping", "nothing to isolate");
        expect_error("c9", "{\"cpus\": {\"isolated\": \"14-17\"}}", "/cpus/isolated", "CPU 16-17 do not exist");
        expect_error("c10", "{\"irq\": {\"affinity\": \"l3:3\"}}", "/irq/affinity", "L3 cache domain 3 does not exist");
        expect_error("c11", "{\"cpus\": {\"housekeeping_cores_per_node\": 4}}", "/cpus", "nothing to isolate");
}
END_TEST

START_TEST(test_variable_errors) {
        expect_error("v1", "{\"boot\": {\"args\": {\"nohz_full\": \"${isolatd}\"}}}", "/boot/args/nohz_full",
                     "did you mean \"${isolated}\"");
        expect_error("v2", "{\"boot\": {\"args\": {\"nohz_full\": \"${qqqqqqqqqqqq}\"}}}", "/boot/args/nohz_full",
                     "define it under \"variables\"");
        expect_error("v3", "{\"variables\": {\"a\": \"${b}\", \"b\": \"x${a}\"}, \"sysctl\": {\"vm.x\": \"${a}\"}}",
                     "/sysctl/vm.x", "refers to itself");
        expect_error("v4", "{\"sysctl\": {\"vm.x\": \"${a\"}}", "/sysctl/vm.x", "unterminated");
        expect_error("v5", "{\"variables\": {\"iso\": \"99\"}, \"cpus\": {\"isolated\": \"${iso}\"}}", "/cpus/isolated",
                     "CPU 99 does not exist");
}
END_TEST

START_TEST(test_include_errors) {
        expect_error("i1", "{\"include\": \"no-such-profile\"}", "/include", "included profile \"no-such-profile\"");
        _cleanup_free_ char *a = test_profile(prof_dir, "cyc-a", "{\"include\": \"cyc-b.json\"}");
        _cleanup_free_ char *b = test_profile(prof_dir, "cyc-b", "{\"include\": [\"cyc-a.json\"]}");
        _cleanup_free_ char *err = NULL;
        Profile *p = NULL;
        Resolved *r = NULL;
        ck_assert_int_eq(test_resolve(root, host, a, &p, &r, &err), -EINVAL);
        ck_assert_msg(strstr(err, "include cycle") && strstr(err, "cyc-a.json -> ") && strstr(err, "/include/0"), "%s",
                      err);

        /* Includes by "./" paths are named as the files they are (issue 11.10: "././c2.json"). */
        _cleanup_free_ char *c = test_profile(prof_dir, "cyc-c", "{\"include\": \"./cyc-d.json\"}");
        _cleanup_free_ char *d = test_profile(prof_dir, "cyc-d", "{\"include\": \".//cyc-c.json\"}");
        _cleanup_free_ char *chain = NULL;
        ck_assert_int_ge(asprintf(&chain, "include cycle: %s -> %s -> %s;", c, d, c), 0);
        free(err);
        err = NULL;
        ck_assert_int_eq(test_resolve(root, host, c, &p, &r, &err), -EINVAL);
        ck_assert_msg(strstr(err, chain) && !strstr(err, "/./") && !strstr(err, "//"), "%s", err);

        /* An error in an included file names that file, not the including one. */
        _cleanup_free_ char *base = test_profile(prof_dir, "base-bad", "{\"irq\": {\"affinity\": \"99\"}}");
        _cleanup_free_ char *top = test_profile(prof_dir, "top", "{\"include\": \"base-bad.json\", \"sysctl\": {}}");
        free(err);
        err = NULL;
        ck_assert_int_eq(test_resolve(root, host, top, &p, &r, &err), -EINVAL);
        ck_assert_msg(strstr(err, "base-bad.json: /irq/affinity: CPU 99"), "%s", err);

        /* A structural error in an included file is found when that file is read. */
        _cleanup_free_ char *base2 = test_profile(prof_dir, "base-typo", "{\"irqq\": {}}");
        _cleanup_free_ char *top2 = test_profile(prof_dir, "top2", "{\"include\": \"base-typo.json\"}");
        free(err);
        err = NULL;
        ck_assert_int_eq(test_resolve(root, host, top2, &p, &r, &err), -EINVAL);
        ck_assert_msg(strstr(err, "base-typo.json: /irqq: unknown key"), "%s", err);

        /* Profiles by name: unknown and malformed names. */
        free(err);
        err = NULL;
        ck_assert_int_eq(test_resolve(root, host, "no-such-name", &p, &r, &err), -ENOENT);
        ck_assert_msg(strstr(err, "no such profile") && strstr(err, "rtpartctl list"), "%s", err);
        free(err);
        err = NULL;
        ck_assert_int_eq(test_resolve(root, host, "bad name!", &p, &r, &err), -EINVAL);
        ck_assert_msg(strstr(err, "not a profile name"), "%s", err);
}
END_TEST

START_TEST(test_single_cpu_host) {
        char *one = test_mini_host(1, false, 0);
        Root *r1;
        Host *h1;
        test_open_host(one, &r1, &h1);
        _cleanup_free_ char *path = test_profile(prof_dir, "any", "{\"sysctl\": {}}");
        _cleanup_free_ char *err = NULL;
        Profile *p = NULL;
        Resolved *r = NULL;
        ck_assert_int_eq(test_resolve(r1, h1, path, &p, &r, &err), -EINVAL);
        ck_assert_msg(strstr(err, "nothing to isolate") && strstr(err, "single online CPU"), "%s", err);
        host_free(h1);
        root_free(r1);
        test_rmtree(one);
        free(one);
}
END_TEST

START_TEST(test_default_split) {
        Profile *p = NULL;
        Resolved *r = resolve_ok("split", "{}", &p);
        _cleanup_free_ char *iso = cpu_set_format_list(&r->isolated), *hk = cpu_set_format_list(&r->housekeeping);
        /* first core of each node with its sibling: core 0 (0,8) and core 4 (4,12) */
        ck_assert_str_eq(hk, "0,4,8,12");
        ck_assert_str_eq(iso, "1-3,5-7,9-11,13-15");
        resolved_free(r);
        profile_free(p);

        r = resolve_ok("split2", "{\"cpus\": {\"housekeeping_cores_per_node\": 2, \"vcpu_siblings\": \"together\"}}",
                       &p);
        _cleanup_free_ char *hk2 = cpu_set_format_list(&r->housekeeping);
        ck_assert_str_eq(hk2, "0-1,4-5,8-9,12-13");
        /* export libvirt reads it from the resolved document */
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r->doc, "cpus"), "vcpu_siblings")),
                         "together");
        resolved_free(r);
        profile_free(p);

        expect_split("split3", "{\"cpus\": {\"isolated\": \"node:1,!4,!12\"}}", "5-7,13-15", "0-4,8-12");
        /* Within the expressions that define the classes, "isolated" and "housekeeping" are the
         * default split's (README's example: node 1 without its first core, 4 and 12), by
         * housekeeping_cores_per_node as the default split is. */
        expect_split("split4", "{\"cpus\": {\"isolated\": \"node:1,!housekeeping\"}}", "5-7,13-15", "0-4,8-12");
        expect_split("split5", "{\"cpus\": {\"housekeeping_cores_per_node\": 2, \"housekeeping\": \"housekeeping,2\"}}",
                     "3,6-7,10-11,14-15", "0-2,4-5,8-9,12-13");
        expect_split("split6", "{\"cpus\": {\"isolated\": \"housekeeping\"}}", "0,4,8,12", "1-3,5-7,9-11,13-15");
        expect_split("split7", "{\"cpus\": {\"isolated\": \"isolated,!node:0\", \"housekeeping\": \"node:0\"}}",
                     "5-7,13-15", "0-3,8-11");

        /* SMT siblings (CPU c and c+8 here) split between the classes: a note per core, which the
         * plan carries first; the default split and whole cores make none. */
        r = resolve_ok("smt", "{\"cpus\": {\"isolated\": \"1,8,2-3,10-11\"}}", &p);
        ck_assert_uint_eq(strv_length(r->notes), 2);
        ck_assert(startswith(r->notes[0], "cpus: CPU 1 (isolated) and CPU 9 (housekeeping) are SMT siblings"));
        ck_assert(startswith(r->notes[1], "cpus: CPU 8 (isolated) and CPU 0 (housekeeping) are SMT siblings"));
        Plan *plan = NULL;
        ck_assert_int_eq(plan_build(r, root, &plan, NULL), 0);
        ck_assert_str_eq(plan->notes[0], r->notes[0]);
        ck_assert_str_eq(plan->notes[1], r->notes[1]);
        plan_free(plan);
        resolved_free(r);
        profile_free(p);
        r = resolve_ok("smt2", "{\"cpus\": {\"isolated\": \"node:1,!housekeeping\"}}", &p);
        ck_assert_ptr_null(r->notes);
        resolved_free(r);
        profile_free(p);
        r = resolve_ok("smt3", "{}", &p);
        ck_assert_ptr_null(r->notes);
        resolved_free(r);
        profile_free(p);

        /* rtpartd's task settings pass through resolution as written. */
        r = resolve_ok("tasks",
                       "{\"drift\": {\"task_allow\": [\"qemu-*\", \"/machine.slice\", \"!qemu-bad\"], "
                       "\"domains\": {\"task\": \"correct\"}}}",
                       &p);
        json_t *allow = json_object_get(json_object_get(r->doc, "drift"), "task_allow");
        ck_assert_uint_eq(json_array_size(allow), 3);
        ck_assert_str_eq(json_string_value(json_array_get(allow, 2)), "!qemu-bad");
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get_path(r->doc, "drift", "domains"), "task")),
                         "correct");
        resolved_free(r);
        profile_free(p);
}
END_TEST

START_TEST(test_merge_and_variables) {
        _cleanup_free_ char *base = test_profile(
                prof_dir, "base",
                "{\"summary\": \"base\", \"variables\": {\"swap\": 10, \"pfx\": \"managed_irq,domain,\"},"
                " \"boot\": {\"args\": {\"isolcpus\": \"${pfx}${isolated}\", \"quiet\": true, \"nosoftlockup\": true}},"
                " \"sysctl\": {\"vm.swappiness\": \"${swap}\", \"kernel.x\": 1},"
                " \"irq\": {\"rules\": [{\"match\": \"a\", \"cpus\": \"1\"}, {\"match\": \"b\", \"cpus\": \"2\"}]},"
                " \"vendor\": {\"intel\": {\"boot\": {\"args\": {\"intel_pstate\": \"disable\"}}},"
                "              \"amd\": {\"boot\": {\"args\": {\"amd_pstate\": \"disable\"}}}}}");
        Profile *p = NULL;
        Resolved *r = resolve_ok(
                "child",
                "{\"include\": \"base.json\", \"summary\": \"child\", \"variables\": {\"swap\": 5},"
                " \"boot\": {\"args\": {\"quiet\": null, \"nohz_full\": \"${isolated}\", \"cost\": \"$$5\"}},"
                " \"sysctl\": {\"kernel.x\": null},"
                " \"sysfs\": {\"/sys/x/cpumask\": \"${housekeeping_mask}\"},"
                " \"irq\": {\"rules\": [{\"match\": \"c\", \"cpus\": \"node:1\"}]}}",
                &p);

        json_t *args = json_object_get(json_object_get(r->doc, "boot"), "args");
        ck_assert_str_eq(json_string_value(json_object_get(args, "isolcpus")), "managed_irq,domain,1-3,5-7,9-11,13-15");
        ck_assert_str_eq(json_string_value(json_object_get(args, "nohz_full")), "1-3,5-7,9-11,13-15");
        ck_assert(json_is_true(json_object_get(args, "nosoftlockup")));
        ck_assert(json_is_null(json_object_get(args, "quiet"))); /* null: remove */
        ck_assert_str_eq(json_string_value(json_object_get(args, "cost")), "$5");
        ck_assert_str_eq(json_string_value(json_object_get(args, "intel_pstate")), "disable"); /* vendor overlay */
        ck_assert_ptr_null(json_object_get(args, "amd_pstate"));
        ck_assert_ptr_null(json_object_get(r->doc, "vendor"));
        ck_assert_ptr_null(json_object_get(r->doc, "variables"));
        ck_assert_str_eq(RESOLVED_STR(r, "sysctl", "vm.swappiness"), "5"); /* the child's variable wins */
        ck_assert_str_eq(RESOLVED_STR(r, "sysfs", "/sys/x/cpumask"), "1111");
        ck_assert_str_eq(RESOLVED_STR(r, "summary", NULL), "child");
        /* arrays replace */
        json_t *rules = json_object_get(json_object_get(r->doc, "irq"), "rules");
        ck_assert_uint_eq(json_array_size(rules), 1);
        ck_assert_str_eq(json_string_value(json_object_get(json_array_get(rules, 0), "cpus")), "4-7,12-15");
        ck_assert_uint_eq(strv_length(p->files), 2);
        ck_assert(strstr(p->files[0], "base.json"));
        ck_assert_str_eq(p->name, "child");
        resolved_free(r);
        profile_free(p);
}
END_TEST

START_TEST(test_lookup_and_list) {
        /* Shipped and user profiles under the root: the user one wins. */
        test_write(host_dir, "usr/share/rtpart/profiles/alpha.json", "{\"summary\": \"shipped alpha\"}");
        test_write(host_dir, "usr/share/rtpart/profiles/beta.json", "{\"summary\": \"shipped beta\"}");
        test_write(host_dir, "etc/rtpart/profiles/alpha.json", "{\"summary\": \"user alpha\", \"include\": \"beta\"}");
        test_write(host_dir, "usr/share/rtpart/profiles/README", "not a profile");
        /* Listed only under a name plan takes: none of these is one. */
        test_write(host_dir, "etc/rtpart/profiles/$(touch${IFS}x).json", "{\"summary\": \"evil\"}");
        test_write(host_dir, "etc/rtpart/profiles/a.json.json", "{\"summary\": \"path\"}");
        test_write(host_dir, "etc/rtpart/profiles/.hidden.json", "{\"summary\": \"hidden\"}");
        test_write(host_dir, "etc/rtpart/profiles/sp ace.json", "{\"summary\": \"space\"}");

        Profile *p = NULL;
        Error e = {};
        ck_assert_int_eq(profile_load(root, backend_profile_schema(), "alpha", &p, &e), 0);
        ck_assert_str_eq(p->summary, "user alpha");
        ck_assert_str_eq(p->name, "alpha");
        ck_assert_uint_eq(strv_length(p->files), 2);
        ck_assert(strstr(p->files[0], "usr/share/rtpart/profiles/beta.json"));
        profile_free(p);

        /* An override in /etc may include the shipped profile of its own name, by name: it gets
         * the shipped one, not itself (rtpart.profile(5), INCLUDE). */
        test_write(host_dir, "etc/rtpart/profiles/beta.json", "{\"summary\": \"user beta\", \"include\": \"beta\"}");
        p = NULL;
        ck_assert_int_eq(profile_load(root, backend_profile_schema(), "beta", &p, &e), 0);
        ck_assert_str_eq(p->summary, "user beta");
        ck_assert_uint_eq(strv_length(p->files), 2);
        ck_assert(strstr(p->files[0], "usr/share/rtpart/profiles/beta.json"));
        ck_assert(strstr(p->files[1], "etc/rtpart/profiles/beta.json"));
        profile_free(p);
        _cleanup_free_ char *beta_user = NULL;
        ck_assert_int_ge(asprintf(&beta_user, "%s/etc/rtpart/profiles/beta.json", host_dir), 0);
        ck_assert_int_eq(unlink(beta_user), 0);

        /* Under a root that does not have it, a name is also looked up among the program's own
         * shipped profiles (rtpartctl(1)): outside the root. */
        p = NULL;
        ck_assert_int_eq(profile_load(root, backend_profile_schema(), "realtime-virtual-host", &p, &e), 0);
        ck_assert(!startswith(p->files[strv_length(p->files) - 1], host_dir));
        profile_free(p);

        ProfileInfo *l;
        size_t n;
        ck_assert_int_eq(profile_list(root, &l, &n), 0);
        /* The root's two, then the program's own shipped profiles (this binary runs from its build
         * directory, so those of the source tree), sorted by name. */
        const ProfileInfo *alpha = NULL, *beta = NULL, *rvh = NULL;
        for (size_t i = 0; i < n; i++) {
                if (i)
                        ck_assert_int_lt(strcmp(l[i - 1].name, l[i].name), 0);
                if (streq(l[i].name, "alpha"))
                        alpha = &l[i];
                if (streq(l[i].name, "beta"))
                        beta = &l[i];
                if (streq(l[i].name, "realtime-virtual-host"))
                        rvh = &l[i];
        }
        ck_assert_ptr_nonnull(alpha);
        ck_assert_str_eq(alpha->summary, "user alpha");
        ck_assert(alpha->user && alpha->shadows);
        ck_assert(strstr(alpha->path, "etc/rtpart/profiles/alpha.json"));
        ck_assert_ptr_nonnull(beta);
        ck_assert(!beta->user && !beta->shadows);
        ck_assert_ptr_nonnull(rvh);
        ck_assert(strstr(rvh->path, "profiles/realtime-virtual-host.json"));
        ck_assert_uint_eq(n, 6);
        profile_info_free_many(l, n);
}
END_TEST

/* Loading path is refused with -EINVAL, an error naming `file` (default: path) and containing
 * fragment. A load that waited on a FIFO or read without end would hang here, and the case's
 * timeout would fail it: no clock is read. */
static void expect_refused(const char *path, const char *file, const char *fragment) {
        _cleanup_free_ char *err = NULL;
        Profile *p = NULL;
        Resolved *r = NULL;
        int k = test_resolve(root, host, path, &p, &r, &err);
        ck_assert_msg(k == -EINVAL, "%s: expected -EINVAL, got %d (%s)", path, k, strempty(err));
        ck_assert_msg(err && strstr(err, fragment), "%s: error '%s' lacks '%s'", path, strempty(err), fragment);
        _cleanup_free_ char *named = NULL;
        ck_assert(asprintf(&named, "%s: ", file ? file : path) >= 0);
        ck_assert_msg(startswith(err, named), "%s: error '%s' does not begin with the file", path, err);
}

START_TEST(test_not_a_regular_file) {
        _cleanup_free_ char *fifo = NULL, *top = NULL;
        ck_assert(asprintf(&fifo, "%s/fifo.json", prof_dir) >= 0);
        ck_assert_int_eq(mkfifo(fifo, 0600), 0);
        expect_refused(fifo, NULL, "not a regular file (a FIFO)");
        expect_refused("/dev/zero", NULL, "not a regular file (a character device)");
        expect_refused(prof_dir, NULL, "not a regular file (a directory)");

        /* An include is read as the profile is: a FIFO there is refused too, naming it. */
        top = test_profile(prof_dir, "top-fifo", "{\"include\": \"fifo.json\"}");
        expect_refused(top, fifo, "not a regular file (a FIFO)");
        _cleanup_free_ char *top2 = test_profile(prof_dir, "top-zero", "{\"include\": \"/dev/zero\"}");
        expect_refused(top2, "/dev/zero", "not a regular file");
}
END_TEST

START_TEST(test_size_and_nul) {
        /* Larger than 1 MiB: valid JSON, padded with spaces. */
        _cleanup_free_ char *big = NULL;
        ck_assert(asprintf(&big, "%s/big.json", prof_dir) >= 0);
        FILE *f = fopen(big, "we");
        ck_assert_ptr_nonnull(f);
        fputs("{\"sysctl\": {}", f);
        for (size_t i = 0; i < 1024 * 1024; i++)
                fputc(' ', f);
        fputs("}", f);
        ck_assert_int_eq(fclose(f), 0);
        expect_refused(big, NULL, "larger than 1 MiB");

        /* Just under the limit is fine. */
        ck_assert_int_eq(truncate(big, 1024 * 1024 - 1), 0);
        f = fopen(big, "r+e");
        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(fseek(f, -1, SEEK_END), 0);
        fputc('}', f);
        ck_assert_int_eq(fclose(f), 0);
        _cleanup_free_ char *err = NULL;
        Profile *p = NULL;
        Resolved *r = NULL;
        ck_assert_msg(test_resolve(root, host, big, &p, &r, &err) == 0, "%s", strempty(err));
        resolved_free(r);
        profile_free(p);

        /* A NUL byte: what follows it was ignored before; now the profile is refused. */
        _cleanup_free_ char *nul = NULL;
        ck_assert(asprintf(&nul, "%s/nul.json", prof_dir) >= 0);
        f = fopen(nul, "we");
        ck_assert_ptr_nonnull(f);
        static const char bytes[] = "{\"sysctl\": {}}\0{\"sysctl\": {\"kernel.core_pattern\": \"|/x\"}}";
        ck_assert_uint_eq(fwrite(bytes, 1, sizeof(bytes) - 1, f), sizeof(bytes) - 1);
        ck_assert_int_eq(fclose(f), 0);
        expect_refused(nul, NULL, "a NUL byte at offset 14");
}
END_TEST

START_TEST(test_mode) {
        _cleanup_free_ char *path = test_profile(prof_dir, "mine", "{\"sysctl\": {\"vm.swappiness\": 1}}");
        _cleanup_free_ char *err = NULL;
        Profile *p = NULL;
        Resolved *r = NULL;

        ck_assert_int_eq(chmod(path, 0666), 0);
        expect_refused(path, NULL, "world-writable (mode 0666)");
        ck_assert_int_eq(chmod(path, 0646), 0);
        expect_refused(path, NULL, "chmod go-w");
        ck_assert_int_eq(chmod(path, 0644), 0);
        ck_assert_msg(test_resolve(root, host, path, &p, &r, &err) == 0, "%s", strempty(err)); /* the reader's own */
        resolved_free(r);
        profile_free(p);
}
END_TEST

/* Root only: gives files to another uid and group. */
START_TEST(test_owner) {
        _cleanup_free_ char *path = test_profile(prof_dir, "mine", "{\"sysctl\": {\"vm.swappiness\": 1}}");
        _cleanup_free_ char *err = NULL;
        Profile *p = NULL;
        Resolved *r = NULL;

        /* Group-writable: refused unless the group is root's. */
        ck_assert_int_eq(chmod(path, 0664), 0);
        ck_assert_int_eq(chown(path, 0, 0), 0);
        free(err);
        err = NULL;
        ck_assert_msg(test_resolve(root, host, path, &p, &r, &err) == 0, "%s", strempty(err));
        resolved_free(r);
        profile_free(p);
        ck_assert_int_eq(chown(path, 0, 65534), 0);
        expect_refused(path, NULL, "group-writable (mode 0664)");

        /* Owned by another uid: root (and rtpartd) takes only root's files. */
        ck_assert_int_eq(chmod(path, 0644), 0);
        ck_assert_int_eq(chown(path, 65534, 0), 0);
        expect_refused(path, NULL, "owned by uid 65534, not by root");
        _cleanup_free_ char *top = test_profile(prof_dir, "top-foreign", "{\"include\": \"mine.json\"}");
        expect_refused(top, path, "owned by uid 65534");

        /* By name under the root the same. */
        test_write(host_dir, "etc/rtpart/profiles/theirs.json", "{\"sysctl\": {}}");
        _cleanup_free_ char *theirs = NULL;
        ck_assert(asprintf(&theirs, "%s/etc/rtpart/profiles/theirs.json", host_dir) >= 0);
        ck_assert_int_eq(chown(theirs, 65534, 65534), 0);
        free(err);
        err = NULL;
        ck_assert_int_eq(test_resolve(root, host, "theirs", &p, &r, &err), -EINVAL);
        ck_assert_msg(strstr(err, "theirs.json: owned by uid 65534") && strstr(err, "chown root:"), "%s", err);
}
END_TEST

START_TEST(test_expansion_bounds) {
        /* 2^30 copies of a 1000-byte string, and 2^30 references to an empty one. */
        for (int empty = 0; empty <= 1; empty++) {
                StrBuf b = {};
                strbuf_appendf(&b, "{\"variables\": {\"v0\": \"%s\"", empty ? "" : "0123456789");
                for (int i = 1; i <= 30; i++)
                        strbuf_appendf(&b, ", \"v%d\": \"${v%d}${v%d}${v%d}\"", i, i - 1, i - 1, i - 1);
                strbuf_append(&b, "}, \"sysctl\": {\"kernel.x\": \"${v30}\"}}");
                _cleanup_free_ char *json = strbuf_steal(&b);
                _cleanup_free_ char *path = test_profile(prof_dir, empty ? "expo-empty" : "expo", json);
                _cleanup_free_ char *err = NULL;
                Profile *p = NULL;
                Resolved *r = NULL;
                ck_assert_int_eq(test_resolve(root, host, path, &p, &r, &err), -EINVAL);
                ck_assert_msg(strstr(err, ": /sysctl/kernel.x: ") && strstr(err, "variable \"${v"), "%s", err);
                ck_assert_msg(strstr(err, empty ? "16 MiB" : "more than 64 KiB"), "%s", err);
                profile_free(p);
        }
        /* A value may be large, up to the bound. */
        _cleanup_free_ char *ok = test_profile(
                prof_dir, "wide",
                "{\"variables\": {\"a\": \"0123456789abcdef\", \"b\": \"${a}${a}${a}${a}${a}${a}${a}${a}\","
                " \"c\": \"${b}${b}${b}${b}${b}${b}${b}${b}\", \"d\": \"${c}${c}${c}${c}${c}${c}${c}${c}\"},"
                " \"sysctl\": {\"kernel.x\": \"${d}${d}${d}${d}${d}${d}${d}${d}\"}}");
        Profile *p = NULL;
        Resolved *r = NULL;
        _cleanup_free_ char *err = NULL;
        ck_assert_msg(test_resolve(root, host, ok, &p, &r, &err) == 0, "%s", strempty(err));
        ck_assert_uint_eq(strlen(RESOLVED_STR(r, "sysctl", "kernel.x")), 65536);
        resolved_free(r);
        profile_free(p);
}
END_TEST

START_TEST(test_from_document) {
        _cleanup_free_ char *base =
                test_profile(prof_dir, "docbase",
                             "{\"variables\": {\"sw\": 10}, \"sysctl\": {\"vm.swappiness\": \"${sw}\"},"
                             " \"vendor\": {\"intel\": {\"sysctl\": {\"kernel.a\": 1}}}}");
        _cleanup_free_ char *top = test_profile(
                prof_dir, "doctop",
                "{\"include\": \"docbase.json\", \"summary\": \"top\", \"irq\": {\"affinity\": \"housekeeping\"}}");
        _cleanup_free_ char *err = NULL;
        Profile *p = NULL, *q = NULL;
        Resolved *r = NULL, *r2 = NULL;
        Error e = {};
        ck_assert_msg(test_resolve(root, host, top, &p, &r, &err) == 0, "%s", strempty(err));
        ck_assert_ptr_null(json_object_get(p->doc, "include"));

        /* The merged document makes the same profile again, with no file read. */
        ck_assert_int_eq(profile_from_document(backend_profile_schema(), "doctop", p->doc, &q, &e), 0);
        ck_assert_str_eq(q->name, "doctop");
        ck_assert_str_eq(q->summary, "top");
        ck_assert_ptr_null(q->path);
        ck_assert_int_eq(profile_resolve(q, host, &r2, &e), 0);
        _cleanup_free_ char *h1 = journal_hash(r->doc), *h2 = journal_hash(r2->doc);
        ck_assert_str_eq(h1, h2);
        ck_assert_str_eq(RESOLVED_STR(r2, "sysctl", "vm.swappiness"), "10");
        resolved_free(r2);
        profile_free(q);

        /* A document is checked as a file is: a hand-edited journal gives nothing invalid. */
        json_t *bad = json_pack("{s:{s:i}}", "sysctl", "../../x", 1);
        ck_assert_int_eq(profile_from_document(backend_profile_schema(), "doctop", bad, &q, &e), -EINVAL);
        _cleanup_free_ char *msg = error_format(&e, "invalid profile");
        ck_assert_msg(strstr(msg, "/sysctl/..~1..~1x") && strstr(msg, "doctop"), "%s", msg);
        error_done(&e);
        json_decref(bad);
        bad = json_pack("{s:s}", "include", "/tmp/x.json");
        ck_assert_int_eq(profile_from_document(backend_profile_schema(), "doctop", bad, &q, &e), -EINVAL);
        error_done(&e);
        json_decref(bad);
        resolved_free(r);
        profile_free(p);
}
END_TEST

START_TEST(test_cpu_expr) {
        CpuSet iso, hk, s;
        char *msg = NULL;
        ck_assert_int_eq(cpu_set_parse_list("1-7", &iso, NULL), 0);
        ck_assert_int_eq(cpu_set_parse_list("0", &hk, NULL), 0);
        ck_assert_int_eq(cpu_expr_parse("isolated,!node:1", host, &iso, &hk, &s, &msg), 0);
        _cleanup_free_ char *a = cpu_set_format_list(&s);
        ck_assert_str_eq(a, "1-3");
        ck_assert_int_eq(cpu_expr_parse(" all , !0-13 ", host, &iso, &hk, &s, &msg), 0);
        _cleanup_free_ char *b = cpu_set_format_list(&s);
        ck_assert_str_eq(b, "14-15");
        ck_assert_int_eq(cpu_expr_parse("package:0", host, &iso, &hk, &s, &msg), 0);
        ck_assert_uint_eq(cpu_set_count(&s), 16);
        ck_assert_int_eq(cpu_expr_parse("package:1", host, &iso, &hk, &s, &msg), -EINVAL);
        ck_assert(strstr(msg, "package 1"));
        free(msg);
}
END_TEST

int main(void) {
        Suite *s = suite_create("profile");
        TCase *tc = tcase_create("core");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_syntax_errors);
        tcase_add_test(tc, test_unknown_keys);
        tcase_add_test(tc, test_type_errors);
        tcase_add_test(tc, test_name_errors);
        tcase_add_test(tc, test_cpu_errors);
        tcase_add_test(tc, test_variable_errors);
        tcase_add_test(tc, test_include_errors);
        tcase_add_test(tc, test_single_cpu_host);
        tcase_add_test(tc, test_default_split);
        tcase_add_test(tc, test_merge_and_variables);
        tcase_add_test(tc, test_lookup_and_list);
        tcase_add_test(tc, test_cpu_expr);
        tcase_add_test(tc, test_not_a_regular_file);
        tcase_add_test(tc, test_size_and_nul);
        tcase_add_test(tc, test_mode);
        tcase_add_test(tc, test_expansion_bounds);
        tcase_add_test(tc, test_from_document);
        suite_add_tcase(s, tc);

        TCase *tr = tcase_create("root");
        tcase_add_checked_fixture(tr, setup, teardown);
        tcase_add_test(tr, test_owner);
        test_add_root_tcase(s, tr, "giving a profile to another uid or group (chown) needs root");
        return test_run(s);
}
