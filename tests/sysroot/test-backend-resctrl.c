/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resctrl.h"
#include "strv.h"
#include "test-tree.h"
#include "test-util.h"

/* The resctrl backend's plan on fake hosts: intel-2s (cbm_mask 7ff, 11 ways, min_cbm_bits 1,
 * 16 CLOSIDs, MB with 8 CLOSIDs, min_bandwidth 10, bandwidth_gran 10, L3 ids 0-1), epyc (AMD,
 * cbm_mask ffff, sparse masks, L3 ids 0-7) and vm (no resctrl). */

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

/* Runs a shell command inside the copied host. */
static void sh(const char *cmd) {
        _cleanup_free_ char *full = NULL;
        ck_assert(asprintf(&full, "cd '%s' && %s", host_dir, cmd) >= 0);
        ck_assert_msg(system(full) == 0, "failed: %s", cmd);
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
        ck_assert_int_eq(k->domain, DOMAIN_RESCTRL);
        if (path)
                ck_assert_str_eq(k->path, path);
        ck_assert_msg(streq_ptr(k->desired, desired), "%s: desired '%s', expected '%s'", id, strempty(k->desired),
                      strempty(desired));
        return k;
}

/* ---- parsers ---- */

START_TEST(test_schemata_parse) {
        const char *text = "    L3CODE:0=7ff;1=7ff\n    L3DATA:0=0ff;1=0f0\n        MB:0= 50;1=100\n";
        char *v = NULL;

        ck_assert_int_eq(resctrl_schemata_parse(text, "L3DATA", &v), 0);
        ck_assert_str_eq(v, "0=0ff;1=0f0");
        free(v);
        ck_assert_int_eq(resctrl_schemata_parse(text, "MB", &v), 0);
        ck_assert_str_eq(v, "0=50;1=100");
        free(v);
        ck_assert_int_eq(resctrl_schemata_parse(text, "L3CODE", &v), 0);
        ck_assert_str_eq(v, "0=7ff;1=7ff");
        free(v);
        /* "L3" is a prefix of "L3CODE" but not its line. */
        ck_assert_int_eq(resctrl_schemata_parse(text, "L3", &v), -ENOENT);
        ck_assert_int_eq(resctrl_schemata_parse("", "L3", &v), -ENOENT);
        ck_assert_int_eq(resctrl_schemata_parse("L3:0=7ff;1=\n", "L3", &v), -EINVAL);
        ck_assert_int_eq(resctrl_schemata_parse("L3:0=xyz\n", "L3", &v), -EINVAL);
        ck_assert_int_eq(resctrl_schemata_parse("L3:\n", "L3", &v), -EINVAL);
        ck_assert_int_eq(resctrl_schemata_parse("L3:0=7ff", "L3", &v), 0); /* no final newline */
        ck_assert_str_eq(v, "0=7ff");
        free(v);

        unsigned *ids = NULL;
        size_t n = 0;
        ck_assert_int_eq(resctrl_schemata_domains("0=7ff;2=7ff;1=3", &ids, &n), 0);
        ck_assert_uint_eq(n, 3);
        ck_assert_uint_eq(ids[0], 0);
        ck_assert_uint_eq(ids[1], 2);
        ck_assert_uint_eq(ids[2], 1);
        free(ids);

        uint64_t m;
        ck_assert_int_eq(resctrl_mask_parse("0x7f0", &m), 0);
        ck_assert_uint_eq(m, 0x7f0);
        ck_assert_int_eq(resctrl_mask_parse("FF", &m), 0);
        ck_assert_uint_eq(m, 0xff);
        ck_assert_int_eq(resctrl_mask_parse("0x", &m), -EINVAL);
        ck_assert_int_eq(resctrl_mask_parse("12g", &m), -EINVAL);
        ck_assert_int_eq(resctrl_mask_parse("11111111111111111", &m), -EINVAL);

        unsigned doms[] = { 0, 1 };
        _cleanup_free_ char *s = resctrl_schemata_format(doms, 2, 0xf, 11);
        ck_assert_str_eq(s, "0=00f;1=00f");
        _cleanup_free_ char *mb = resctrl_schemata_format(doms, 2, 60, 0);
        ck_assert_str_eq(mb, "0=60;1=60");
}
END_TEST

/* ---- intel-2s ---- */

START_TEST(test_intel_ways_percent_mask) {
        use_host("intel-2s");
        _cleanup_(plan_freep) Plan *p =
                plan_ok("{\"cat\": {\"groups\": ["
                        " {\"name\": \"rt\", \"cpus\": \"2-5\", \"l3\": {\"ways\": 4}, \"exclusive\": true},"
                        " {\"name\": \"vm\", \"cpus\": \"6-7\", \"l3\": {\"percent\": 30}},"
                        " {\"name\": \"io\", \"cpus\": \"9\", \"l3\": {\"mask\": \"0x3\"}}]}}");

        /* rt: the top 4 ways (7-10); vm: 30% of 11 = 3 ways, the highest run below rt (4-6);
         * default: everything but the exclusive rt. */
        const Knob *k = knob(p, "resctrl/default/schemata/L3", "sys/fs/resctrl/schemata", "0=07f;1=07f");
        ck_assert_str_eq(k->current, "0=7ff;1=7ff");
        ck_assert(k->changed);
        ck_assert_int_eq(k->kind, VALUE_SCHEMATA);
        k = knob(p, "resctrl/rt/schemata/L3", "sys/fs/resctrl/rt/schemata", "0=780;1=780");
        ck_assert_ptr_null(k->current);
        ck_assert_ptr_nonnull(k->note);
        ck_assert_msg(strstr(k->note, "ways 7-10"), "note: %s", k->note);
        knob(p, "resctrl/vm/schemata/L3", "sys/fs/resctrl/vm/schemata", "0=070;1=070");
        knob(p, "resctrl/io/schemata/L3", "sys/fs/resctrl/io/schemata", "0=003;1=003");
        k = knob(p, "resctrl/rt/cpus", "sys/fs/resctrl/rt/cpus_list", "2-5");
        ck_assert_int_eq(k->kind, VALUE_CPU_LIST);
        knob(p, "resctrl/vm/cpus", "sys/fs/resctrl/vm/cpus_list", "6-7");
        knob(p, "resctrl/rt/mode", "sys/fs/resctrl/rt/mode", "exclusive");
        knob(p, "resctrl/vm/mode", "sys/fs/resctrl/vm/mode", "shareable");
        knob(p, "resctrl/io/mode", "sys/fs/resctrl/io/mode", "shareable");
        ck_assert_ptr_null(plan_find(p, "resctrl/rt/schemata/MB"));
        ck_assert_uint_eq(plan_count_domain(p, DOMAIN_RESCTRL), 11);

        /* The mount first (owned as it is: mounted), then the default group, before the groups
         * whose mode needs it shrunk. */
        k = knob(p, "resctrl/mount", "sys/fs/resctrl", "mounted");
        ck_assert_str_eq(k->current, "mounted");
        ck_assert(!k->changed);
        ck_assert_str_eq(p->knobs[0].id, "resctrl/mount");
        ck_assert_str_eq(p->knobs[1].id, "resctrl/default/schemata/L3");
}
END_TEST

START_TEST(test_intel_no_shrink) {
        use_host("intel-2s");
        /* Without exclusive groups the default group is left alone. */
        _cleanup_(plan_freep) Plan *p =
                plan_ok("{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2-5\", \"l3\": {\"percent\": 50}}]}}");
        ck_assert_ptr_null(plan_find(p, "resctrl/default/schemata/L3"));
        knob(p, "resctrl/rt/schemata/L3", NULL, "0=7e0;1=7e0"); /* 5.5 rounds to 6 ways */

        /* shrink_default false: exclusive, but the default group is the user's, and the kernel's
         * refusal is foretold. */
        _cleanup_(plan_freep) Plan *q =
                plan_ok("{\"cat\": {\"shrink_default\": false, \"groups\": "
                        "[{\"name\": \"rt\", \"cpus\": \"2-5\", \"l3\": {\"ways\": 2}, \"exclusive\": true}]}}");
        ck_assert_ptr_null(plan_find(q, "resctrl/default/schemata/L3"));
        knob(q, "resctrl/rt/schemata/L3", NULL, "0=600;1=600");
        ck_assert(plan_has_note(q, "shrink_default is false"));
}
END_TEST

START_TEST(test_intel_mb) {
        use_host("intel-2s");
        _cleanup_(plan_freep) Plan *p =
                plan_ok("{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"mb\": 55},"
                        " {\"name\": \"be\", \"cpus\": \"3\", \"mb\": 30}]}}");
        const Knob *k = knob(p, "resctrl/rt/schemata/MB", "sys/fs/resctrl/rt/schemata", "0=60;1=60");
        ck_assert_int_eq(k->kind, VALUE_SCHEMATA);
        ck_assert(plan_has_note(p, "mb 55% is rounded up to 60%"));
        knob(p, "resctrl/be/schemata/MB", NULL, "0=30;1=30");
        ck_assert_ptr_null(plan_find(p, "resctrl/rt/schemata/L3"));

        plan_err("{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"mb\": 5}]}}", "/cat/groups/0/mb",
                 "min_bandwidth 10");
}
END_TEST

START_TEST(test_intel_mask_errors) {
        use_host("intel-2s");
        plan_err("{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"l3\": {\"mask\": \"0x1000\"}}]}}",
                 "/cat/groups/0/l3", "mask 0x1000 exceeds this host's cbm_mask 0x7ff (11 ways)");
        plan_err("{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"l3\": {\"mask\": \"0x505\"}}]}}",
                 "/cat/groups/0/l3", "mask 0x505 is not contiguous");
        plan_err("{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"l3\": {\"mask\": \"0x505\"}}]}}",
                 "/cat/groups/0/l3", "use e.g. 0x780");
        plan_err("{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"l3\": {\"mask\": \"0\"}}]}}",
                 "/cat/groups/0/l3", "mask 0 selects no cache ways; this host has 11 ways");
        plan_err("{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"l3\": {\"mask\": \"zz\"}}]}}",
                 "/cat/groups/0/l3", "not a capacity bitmask");
        plan_err("{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"l3\": {\"ways\": 12}}]}}",
                 "/cat/groups/0/l3", "12 ways exceed this host's 11 ways (cbm_mask 0x7ff)");
        plan_err("{\"cat\": {\"groups\": [{\"name\": \"a\", \"cpus\": \"2\", \"l3\": {\"ways\": 8}},"
                 " {\"name\": \"b\", \"cpus\": \"3\", \"l3\": {\"percent\": 40}}]}}",
                 "/cat/groups/1/l3", "4 contiguous ways do not fit: this host has 11 ways (cbm_mask 0x7ff)");
        plan_err("{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"l3code\": {\"ways\": 2}}]}}",
                 "/cat/groups/0/l3code", "CDP is not enabled; mount resctrl with -o cdp or use \"l3\"");
        plan_err("{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"l3data\": {\"ways\": 2}}]}}",
                 "/cat/groups/0/l3data", "CDP is not enabled");
}
END_TEST

START_TEST(test_intel_group_errors) {
        use_host("intel-2s");
        /* CPUs belong to one group. */
        plan_err(
                "{\"cat\": {\"groups\": [{\"name\": \"a\", \"cpus\": \"2-5\"}, {\"name\": \"b\", \"cpus\": \"5-6\"}]}}",
                "/cat/groups/1/cpus", "CPUs 5 are also in group \"a\"");
        plan_err("{\"cat\": {\"groups\": [{\"name\": \"default\", \"cpus\": \"2\"}]}}", "/cat/groups/0",
                 "\"default\" cannot be used as a group name");
        /* Exclusive groups share no ways, either way round. */
        plan_err(
                "{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"l3\": {\"mask\": \"0x780\"}, \"exclusive\": true},"
                " {\"name\": \"vm\", \"cpus\": \"3\", \"l3\": {\"mask\": \"0x700\"}}]}}",
                "/cat/groups/1/l3", "overlap those of exclusive group \"rt\" (0x780)");
        plan_err("{\"cat\": {\"groups\": [{\"name\": \"vm\", \"cpus\": \"3\", \"l3\": {\"mask\": \"0x0f0\"}},"
                 " {\"name\": \"rt\", \"cpus\": \"2\", \"l3\": {\"mask\": \"0x180\"}, \"exclusive\": true}]}}",
                 "/cat/groups/1/l3",
                 "this group is exclusive but its ways 0x180 overlap those of group \"vm\" (0x0f0)");
        plan_err("{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"exclusive\": true}]}}",
                 "/cat/groups/0/exclusive", "needs cache ways of its own");
        /* The default group needs min_cbm_bits outside the exclusive groups. */
        plan_err(
                "{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"l3\": {\"ways\": 11}, \"exclusive\": true}]}}",
                "/cat/groups/0/l3", "leaving the default group 0x000: fewer than min_cbm_bits 1");
        /* MB has 8 CLOSIDs on this host, L3 16: the kernel takes the smaller, minus the default group. */
        plan_err(
                "{\"cat\": {\"groups\": [{\"name\": \"g0\", \"cpus\": \"1\"}, {\"name\": \"g1\", \"cpus\": \"2\"},"
                " {\"name\": \"g2\", \"cpus\": \"3\"}, {\"name\": \"g3\", \"cpus\": \"4\"}, {\"name\": \"g4\", \"cpus\": \"5\"},"
                " {\"name\": \"g5\", \"cpus\": \"6\"}, {\"name\": \"g6\", \"cpus\": \"7\"}, {\"name\": \"g7\", \"cpus\": \"9\"}]}}",
                "/cat/groups/7", "8 CLOSIDs (info/MB/num_closids; the kernel uses the smallest of L3 16, MB 8)");
        /* Seven fit. */
        _cleanup_(plan_freep) Plan *p = plan_ok(
                "{\"cat\": {\"groups\": [{\"name\": \"g0\", \"cpus\": \"1\"}, {\"name\": \"g1\", \"cpus\": \"2\"},"
                " {\"name\": \"g2\", \"cpus\": \"3\"}, {\"name\": \"g3\", \"cpus\": \"4\"}, {\"name\": \"g4\", \"cpus\": \"5\"},"
                " {\"name\": \"g5\", \"cpus\": \"6\"}, {\"name\": \"g6\", \"cpus\": \"7\"}]}}");
        knob(p, "resctrl/g6/cpus", NULL, "7");
}
END_TEST

START_TEST(test_intel_min_bits_closids) {
        copy_host("intel-2s");
        test_write(host_dir, "sys/fs/resctrl/info/L3/min_cbm_bits", "2\n");
        test_write(host_dir, "sys/fs/resctrl/info/L3/num_closids", "4\n");
        sh("rm -rf sys/fs/resctrl/info/MB");
        open_host();
        plan_err("{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"l3\": {\"mask\": \"0x400\"}}]}}",
                 "/cat/groups/0/l3", "mask 0x400 has 1 bit; this host's min_cbm_bits is 2");
        plan_err("{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"l3\": {\"ways\": 1}}]}}",
                 "/cat/groups/0/l3", "1 way is fewer than this host's min_cbm_bits 2");
        /* 1% of 11 ways rounds to 0: raised to min_cbm_bits. */
        _cleanup_(plan_freep) Plan *p =
                plan_ok("{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"l3\": {\"percent\": 1}}]}}");
        knob(p, "resctrl/rt/schemata/L3", NULL, "0=600;1=600");
        plan_err("{\"cat\": {\"groups\": [{\"name\": \"a\", \"cpus\": \"1\"}, {\"name\": \"b\", \"cpus\": \"2\"},"
                 " {\"name\": \"c\", \"cpus\": \"3\"}, {\"name\": \"d\", \"cpus\": \"4\"}]}}",
                 "/cat/groups/3",
                 "4 CLOSIDs (info/L3/num_closids) and the default group holds one, so at most 3 groups");
        /* Without MB on the host, "mb" is an error that says so. */
        plan_err("{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"mb\": 50}]}}", "/cat/groups/0/mb",
                 "no memory bandwidth allocation");
        /* Exclusive groups leave min_cbm_bits (2) to the default group. */
        plan_err(
                "{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"l3\": {\"ways\": 10}, \"exclusive\": true}]}}",
                "/cat/groups/0/l3", "fewer than min_cbm_bits 2");
}
END_TEST

START_TEST(test_intel_shareable_bits) {
        copy_host("intel-2s");
        test_write(host_dir, "sys/fs/resctrl/info/L3/shareable_bits", "600\n");
        open_host();
        plan_err(
                "{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"l3\": {\"mask\": \"0x780\"}, \"exclusive\": true}]}}",
                "/cat/groups/0/l3", "overlap this host's shareable_bits 0x600");
        /* Allocated exclusive ways stay below the shareable bits; shareable groups may use them. */
        _cleanup_(plan_freep) Plan *p = plan_ok(
                "{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"l3\": {\"ways\": 4}, \"exclusive\": true},"
                " {\"name\": \"be\", \"cpus\": \"3\", \"l3\": {\"ways\": 2}}]}}");
        knob(p, "resctrl/rt/schemata/L3", NULL, "0=1e0;1=1e0");
        knob(p, "resctrl/be/schemata/L3", NULL, "0=600;1=600");
        /* The default group keeps the largest contiguous run outside rt: 0x01f (0x600 is smaller). */
        knob(p, "resctrl/default/schemata/L3", NULL, "0=01f;1=01f");
        /* be holds 0x600: no way is left to nobody, and no note says one is. */
        ck_assert(!plan_has_note(p, "stay unused"));
        /* Without be, 0x600 is left to no group: the note names it. */
        _cleanup_(plan_freep) Plan *q = plan_ok(
                "{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"l3\": {\"ways\": 4}, \"exclusive\": true}]}}");
        knob(q, "resctrl/default/schemata/L3", NULL, "0=01f;1=01f");
        ck_assert(plan_has_note(q, "ways 9-10 stay unused"));
}
END_TEST

START_TEST(test_intel_cdp) {
        copy_host("intel-2s");
        sh("mv sys/fs/resctrl/info/L3 sys/fs/resctrl/info/L3CODE && cp -a sys/fs/resctrl/info/L3CODE sys/fs/resctrl/info/L3DATA");
        test_write(host_dir, "sys/fs/resctrl/info/L3CODE/num_closids", "8\n");
        test_write(host_dir, "sys/fs/resctrl/info/L3DATA/num_closids", "8\n");
        test_write(host_dir, "sys/fs/resctrl/schemata", "L3CODE:0=7ff;1=7ff\nL3DATA:0=7ff;1=7ff\n    MB:0=100;1=100\n");
        open_host();
        ck_assert(host->resctrl.cdp);

        /* "l3" sets code and data alike; l3code/l3data separately, code allocated first. */
        _cleanup_(plan_freep) Plan *p = plan_ok(
                "{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2-3\", \"l3\": {\"ways\": 4}, \"exclusive\": true},"
                " {\"name\": \"vm\", \"cpus\": \"4\", \"l3code\": {\"ways\": 2}, \"l3data\": {\"mask\": \"0x00c\"}}]}}");
        knob(p, "resctrl/rt/schemata/L3CODE", "sys/fs/resctrl/rt/schemata", "0=780;1=780");
        knob(p, "resctrl/rt/schemata/L3DATA", "sys/fs/resctrl/rt/schemata", "0=780;1=780");
        ck_assert_ptr_null(plan_find(p, "resctrl/rt/schemata/L3"));
        knob(p, "resctrl/vm/schemata/L3CODE", NULL, "0=060;1=060");
        knob(p, "resctrl/vm/schemata/L3DATA", NULL, "0=00c;1=00c");
        const Knob *k = knob(p, "resctrl/default/schemata/L3CODE", "sys/fs/resctrl/schemata", "0=07f;1=07f");
        ck_assert_str_eq(k->current, "0=7ff;1=7ff");
        knob(p, "resctrl/default/schemata/L3DATA", "sys/fs/resctrl/schemata", "0=07f;1=07f");

        /* CDP halves the CLOSIDs: 8, so 7 groups at most. */
        plan_err(
                "{\"cat\": {\"groups\": [{\"name\": \"g0\", \"cpus\": \"1\"}, {\"name\": \"g1\", \"cpus\": \"2\"},"
                " {\"name\": \"g2\", \"cpus\": \"3\"}, {\"name\": \"g3\", \"cpus\": \"4\"}, {\"name\": \"g4\", \"cpus\": \"5\"},"
                " {\"name\": \"g5\", \"cpus\": \"6\"}, {\"name\": \"g6\", \"cpus\": \"7\"}, {\"name\": \"g7\", \"cpus\": \"9\"}]}}",
                "/cat/groups/7", "8 CLOSIDs");
        /* The exclusive check sees code and data together. */
        plan_err("{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"l3code\": {\"mask\": \"0x700\"}, "
                 "\"l3data\": {\"mask\": \"0x0e0\"}, \"exclusive\": true},"
                 " {\"name\": \"vm\", \"cpus\": \"3\", \"l3data\": {\"mask\": \"0x600\"}}]}}",
                 "/cat/groups/1/l3data", "exclusive group \"rt\" (0x7e0)");
}
END_TEST

START_TEST(test_intel_existing_groups) {
        copy_host("intel-2s");
        test_write(host_dir, "sys/fs/resctrl/rt/schemata", "    L3:0=780;1=7f0\n    MB:0=100;1=100\n");
        test_write(host_dir, "sys/fs/resctrl/rt/cpus_list", "2-5\n");
        test_write(host_dir, "sys/fs/resctrl/rt/mode", "shareable\n");
        test_write(host_dir, "sys/fs/resctrl/other/schemata", "    L3:0=7ff;1=7ff\n");
        open_host();
        _cleanup_(plan_freep) Plan *p = plan_ok(
                "{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2-5\", \"l3\": {\"ways\": 4}, \"exclusive\": true}]}}");
        const Knob *k = knob(p, "resctrl/rt/schemata/L3", NULL, "0=780;1=780");
        ck_assert_str_eq(k->current, "0=780;1=7f0");
        ck_assert(k->changed);
        k = knob(p, "resctrl/rt/cpus", NULL, "2-5");
        ck_assert_str_eq(k->current, "2-5");
        ck_assert(!k->changed);
        k = knob(p, "resctrl/rt/mode", NULL, "exclusive");
        ck_assert_str_eq(k->current, "shareable");
        ck_assert(k->changed);
        ck_assert(plan_has_note(p, "not in this profile are left alone: other"));

        /* The read verb re-reads one resource's line. */
        char *v = NULL;
        k = plan_find(p, "resctrl/rt/schemata/L3");
        test_write(host_dir, "sys/fs/resctrl/rt/schemata", "    L3:0=780;1=780\n    MB:0=100;1=100\n");
        ck_assert_int_eq(backend_resctrl.read(root, k, &v), 0);
        ck_assert_str_eq(v, "0=780;1=780");
        ck_assert(value_equal(k->kind, v, k->desired));
        free(v);
        Knob mb = *k;
        mb.id = (char *) "resctrl/rt/schemata/MB";
        ck_assert_int_eq(backend_resctrl.read(root, &mb, &v), 0);
        ck_assert_str_eq(v, "0=100;1=100");
        free(v);
        mb.id = (char *) "resctrl/rt/schemata/L3CODE";
        ck_assert_int_eq(backend_resctrl.read(root, &mb, &v), 0);
        ck_assert_ptr_null(v);
        k = plan_find(p, "resctrl/rt/mode");
        ck_assert_int_eq(backend_resctrl.read(root, k, &v), 0);
        ck_assert_str_eq(v, "shareable");
        free(v);
        sh("rm -rf sys/fs/resctrl/rt");
        ck_assert_int_eq(backend_resctrl.read(root, k, &v), 0);
        ck_assert_ptr_null(v);
}
END_TEST

/* ---- epyc ---- */

START_TEST(test_epyc) {
        use_host("epyc");
        ck_assert_uint_eq(host->resctrl.n_domains, 8);
        _cleanup_(plan_freep) Plan *p = plan_ok(
                "{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2-5\", \"l3\": {\"percent\": 50}, \"exclusive\": true},"
                " {\"name\": \"be\", \"cpus\": \"6\", \"l3\": {\"mask\": \"0x0055\"}}]}}");
        /* Sparse masks are fine on AMD; 50% of 16 ways is the top 8. */
        knob(p, "resctrl/rt/schemata/L3", "sys/fs/resctrl/rt/schemata",
             "0=ff00;1=ff00;2=ff00;3=ff00;4=ff00;5=ff00;6=ff00;7=ff00");
        knob(p, "resctrl/be/schemata/L3", NULL, "0=0055;1=0055;2=0055;3=0055;4=0055;5=0055;6=0055;7=0055");
        const Knob *k = knob(p, "resctrl/default/schemata/L3", "sys/fs/resctrl/schemata",
                             "0=00ff;1=00ff;2=00ff;3=00ff;4=00ff;5=00ff;6=00ff;7=00ff");
        ck_assert_str_eq(k->current, "0=ffff;1=ffff;2=ffff;3=ffff;4=ffff;5=ffff;6=ffff;7=ffff");

        /* AMD's MB is not a percentage. */
        plan_err("{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"mb\": 50}]}}", "/cat/groups/0/mb",
                 "1/8 GB/s");
        plan_err("{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"l3\": {\"mask\": \"0x10000\"}}]}}",
                 "/cat/groups/0/l3", "exceeds this host's cbm_mask 0xffff (16 ways)");
}
END_TEST

START_TEST(test_epyc_sparse_default) {
        copy_host("epyc");
        /* A kernel before 6.8 has no sparse_masks file: AMD still takes sparse masks. */
        sh("rm -f sys/fs/resctrl/info/L3/sparse_masks");
        open_host();
        _cleanup_(plan_freep) Plan *p = plan_ok(
                "{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"l3\": {\"mask\": \"0x0ff0\"}, \"exclusive\": true}]}}");
        /* The default group keeps both sides of rt's ways. */
        knob(p, "resctrl/default/schemata/L3", NULL, "0=f00f;1=f00f;2=f00f;3=f00f;4=f00f;5=f00f;6=f00f;7=f00f");
}
END_TEST

/* ---- hosts without (mounted) resctrl ---- */

START_TEST(test_vm_no_resctrl) {
        use_host("vm");
        _cleanup_(plan_freep) Plan *p = plan_ok(
                "{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2-3\", \"l3\": {\"ways\": 4}, \"mb\": 50}]}}");
        ck_assert_uint_eq(plan_count_domain(p, DOMAIN_RESCTRL), 0);
        ck_assert(plan_has_note(p, "cat: resctrl is not available on this host"));
}
END_TEST

START_TEST(test_not_mounted) {
        copy_host("vm");
        test_write(host_dir, "proc/filesystems", "nodev\tsysfs\nnodev\tproc\nnodev\tresctrl\n\text4\n");
        open_host();
        ck_assert(host->resctrl.supported);
        ck_assert(!host->resctrl.mounted);
        _cleanup_(plan_freep) Plan *p =
                plan_ok("{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2-3\", \"l3\": {\"ways\": 4}}]}}");
        const Knob *k = knob(p, "resctrl/rt/cpus", "sys/fs/resctrl/rt/cpus_list", "2-3");
        ck_assert_ptr_null(k->current);
        /* Apply mounts it (not under --root: there is no kernel to mount anything). */
        k = knob(p, "resctrl/mount", "sys/fs/resctrl", "mounted");
        ck_assert_ptr_null(k->current);
        ck_assert_uint_eq(plan_count_domain(p, DOMAIN_RESCTRL), 2);
        ck_assert(plan_has_note(p, "not mounted"));
        ck_assert(plan_has_note(p, "cannot be checked"));
        /* Groups that split code and data have it mounted with CDP. */
        _cleanup_(plan_freep) Plan *q =
                plan_ok("{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2-3\", \"l3code\": {\"ways\": 4}}]}}");
        knob(q, "resctrl/mount", NULL, "mounted,cdp");
        /* Under --root nothing is mounted and the groups wait for it: skipped, not written. */
        k = plan_find(q, "resctrl/mount");
        ck_assert_int_eq(backend_write(&backend_resctrl, root, k, k->desired), KNOB_SKIPPED);
        k = plan_find(q, "resctrl/rt/cpus");
        ck_assert_int_eq(backend_write(&backend_resctrl, root, k, k->desired), KNOB_SKIPPED);
        ck_assert(!tree_exists(host_dir, "sys/fs/resctrl/rt"));
        /* CPUs are still checked. */
        plan_err(
                "{\"cat\": {\"groups\": [{\"name\": \"a\", \"cpus\": \"1-2\"}, {\"name\": \"b\", \"cpus\": \"2-3\"}]}}",
                "/cat/groups/1/cpus", "CPUs 2 are also in group \"a\"");
}
END_TEST

/* ---- write: apply, verify, revert through the engine on fake hosts ---- */

/* intel-2s with CDP on: resctrl mounted -o cdp, L3CODE/L3DATA of 8 CLOSIDs each. */
static void make_cdp(void) {
        sh("mv sys/fs/resctrl/info/L3 sys/fs/resctrl/info/L3CODE && cp -a sys/fs/resctrl/info/L3CODE sys/fs/resctrl/info/L3DATA");
        test_write(host_dir, "sys/fs/resctrl/info/L3CODE/num_closids", "8\n");
        test_write(host_dir, "sys/fs/resctrl/info/L3DATA/num_closids", "8\n");
        /* show_doms(): names padded to the longest, "L3CODE". */
        test_write(host_dir, "sys/fs/resctrl/schemata", "L3CODE:0=7ff;1=7ff\nL3DATA:0=7ff;1=7ff\n    MB:0=100;1=100\n");
        test_write(host_dir, "sys/fs/resctrl/size",
                   "L3CODE:0=11534336;1=11534336\nL3DATA:0=11534336;1=11534336\n    MB:0=100;1=100\n");
        sh("sed -i 's/ - resctrl resctrl rw$/ - resctrl resctrl rw,cdp/' proc/1/mountinfo && "
           "sed -i 's/^resctrl \\/sys\\/fs\\/resctrl resctrl rw,relatime /resctrl \\/sys\\/fs\\/resctrl resctrl rw,relatime,cdp /' proc/1/mounts");
}

START_TEST(test_apply_intel_cdp_mba) {
        copy_host("intel-2s");
        make_cdp();
        _cleanup_free_ char *before = tree_snapshot(host_dir), *drift = NULL;
        _cleanup_free_ char *prof = test_profile(
                prof_dir, "lab",
                "{\"cat\": {\"groups\": ["
                " {\"name\": \"rt\", \"cpus\": \"2-7\", \"l3code\": {\"ways\": 3}, \"l3data\": {\"ways\": 2},"
                "  \"exclusive\": true, \"mb\": 55},"
                " {\"name\": \"vm\", \"cpus\": \"9-11\", \"l3\": {\"mask\": \"0x00c\"}, \"mb\": 30}]}}");

        ck_assert_int_eq(tree_apply(host_dir, prof, NULL), 0);
        /* The kernel's files: the default group shrunk to the ways outside rt, each group in the
         * kernel's format (MB padded to 3 digits), CPUs taken from the default group. */
        tree_assert_file(host_dir, "sys/fs/resctrl/schemata",
                         "L3CODE:0=03f;1=03f\nL3DATA:0=03f;1=03f\n    MB:0=100;1=100\n");
        tree_assert_file(host_dir, "sys/fs/resctrl/rt/schemata",
                         "L3CODE:0=700;1=700\nL3DATA:0=0c0;1=0c0\n    MB:0= 60;1= 60\n");
        tree_assert_file(host_dir, "sys/fs/resctrl/vm/schemata",
                         "L3CODE:0=00c;1=00c\nL3DATA:0=00c;1=00c\n    MB:0= 30;1= 30\n");
        tree_assert_file(host_dir, "sys/fs/resctrl/rt/size",
                         "L3CODE:0=3145728;1=3145728\nL3DATA:0=2097152;1=2097152\n    MB:0=60;1=60\n");
        tree_assert_file(host_dir, "sys/fs/resctrl/rt/cpus_list", "2-7\n");
        tree_assert_file(host_dir, "sys/fs/resctrl/rt/cpus", "000000fc\n");
        tree_assert_file(host_dir, "sys/fs/resctrl/vm/cpus_list", "9-11\n");
        tree_assert_file(host_dir, "sys/fs/resctrl/cpus_list", "0-1,8,12-31\n");
        tree_assert_file(host_dir, "sys/fs/resctrl/cpus", "fffff103\n");
        tree_assert_file(host_dir, "sys/fs/resctrl/rt/mode", "exclusive\n");
        tree_assert_file(host_dir, "sys/fs/resctrl/vm/mode", "shareable\n");
        tree_assert_file(host_dir, "sys/fs/resctrl/rt/tasks", "");
        tree_assert_file(host_dir, "sys/fs/resctrl/info/last_cmd_status", "ok\n");
        ck_assert(tree_exists(host_dir, "sys/fs/resctrl/rt/mon_data/mon_L3_01/llc_occupancy"));

        ck_assert_msg(tree_verify(host_dir, &drift) == 0, "drift: %s", strempty(drift));
        /* A neighbour changing rt's bandwidth is drift, read through the kernel's padding. */
        test_write(host_dir, "sys/fs/resctrl/rt/schemata",
                   "L3CODE:0=700;1=700\nL3DATA:0=0c0;1=0c0\n    MB:0=100;1= 60\n");
        ck_assert_uint_eq(tree_verify(host_dir, &drift), 1);
        ck_assert_str_eq(drift, "resctrl/rt/schemata/MB: expected '0=60;1=60', actual '0=100;1=60'");

        ck_assert_int_eq(tree_revert(host_dir), 0);
        _cleanup_free_ char *after = tree_snapshot(host_dir);
        tree_assert_same(before, after, "revert");
}
END_TEST

START_TEST(test_apply_epyc) {
        copy_host("epyc");
        _cleanup_free_ char *before = tree_snapshot(host_dir), *drift = NULL;
        _cleanup_free_ char *prof = test_profile(
                prof_dir, "lab",
                "{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"1-15\", \"l3\": {\"mask\": \"0xf0f0\"}, \"exclusive\": true},"
                " {\"name\": \"be\", \"cpus\": \"16-19\", \"l3\": {\"percent\": 25}}]}}");

        ck_assert_int_eq(tree_apply(host_dir, prof, NULL), 0);
        /* AMD takes sparse masks; MB starts at its default 2048 (1/8 GB/s units). */
        tree_assert_file(host_dir, "sys/fs/resctrl/schemata",
                         "    L3:0=0f0f;1=0f0f;2=0f0f;3=0f0f;4=0f0f;5=0f0f;6=0f0f;7=0f0f\n"
                         "    MB:0=2048;1=2048;2=2048;3=2048;4=2048;5=2048;6=2048;7=2048\n");
        tree_assert_file(host_dir, "sys/fs/resctrl/rt/schemata",
                         "    L3:0=f0f0;1=f0f0;2=f0f0;3=f0f0;4=f0f0;5=f0f0;6=f0f0;7=f0f0\n"
                         "    MB:0=2048;1=2048;2=2048;3=2048;4=2048;5=2048;6=2048;7=2048\n");
        tree_assert_file(host_dir, "sys/fs/resctrl/be/schemata",
                         "    L3:0=0f00;1=0f00;2=0f00;3=0f00;4=0f00;5=0f00;6=0f00;7=0f00\n"
                         "    MB:0=2048;1=2048;2=2048;3=2048;4=2048;5=2048;6=2048;7=2048\n");
        _cleanup_free_ char *size = tree_read(host_dir, "sys/fs/resctrl/rt/size");
        ck_assert_ptr_nonnull(size);
        ck_assert_msg(startswith(size, "    L3:0=16777216;1=16777216;"), "size: %s", size); /* 8 of 16 ways of 32 MiB */
        tree_assert_file(host_dir, "sys/fs/resctrl/rt/cpus_list", "1-15\n");
        tree_assert_file(host_dir, "sys/fs/resctrl/rt/cpus", "00000000,0000fffe\n");
        tree_assert_file(host_dir, "sys/fs/resctrl/be/cpus_list", "16-19\n");
        tree_assert_file(host_dir, "sys/fs/resctrl/cpus_list", "0,20-63\n");
        tree_assert_file(host_dir, "sys/fs/resctrl/rt/mode", "exclusive\n");
        ck_assert_msg(tree_verify(host_dir, &drift) == 0, "drift: %s", strempty(drift));
        ck_assert_int_eq(tree_revert(host_dir), 0);
        _cleanup_free_ char *after = tree_snapshot(host_dir);
        tree_assert_same(before, after, "revert");
}
END_TEST

/* The kernel refuses what the plan could not see (another program's exclusive group): the write
 * fails with last_cmd_status kept, and apply undoes every write of the run. */
START_TEST(test_kernel_refusal) {
        copy_host("intel-2s");
        test_write(host_dir, "sys/fs/resctrl/schemata", "    L3:0=1ff;1=1ff\n    MB:0=100;1=100\n");
        test_write(host_dir, "sys/fs/resctrl/size", "    L3:0=9437184;1=9437184\n    MB:0=100;1=100\n");
        sh("mkdir sys/fs/resctrl/other && cp sys/fs/resctrl/tasks sys/fs/resctrl/other/tasks && : > sys/fs/resctrl/other/tasks");
        test_write(host_dir, "sys/fs/resctrl/other/schemata", "    L3:0=600;1=600\n    MB:0=100;1=100\n");
        test_write(host_dir, "sys/fs/resctrl/other/mode", "exclusive\n");
        test_write(host_dir, "sys/fs/resctrl/other/cpus_list", "\n");
        test_write(host_dir, "sys/fs/resctrl/other/cpus", "00000000\n");
        _cleanup_free_ char *before = tree_snapshot(host_dir);
        _cleanup_free_ char *prof = test_profile(
                prof_dir, "lab",
                "{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2-5\", \"l3\": {\"mask\": \"0x300\"}, \"exclusive\": true}]}}");
        EngineResult res = {};
        ck_assert_int_eq(tree_apply(host_dir, prof, &res), -EINVAL);
        ck_assert(res.rolled_back);
        ck_assert(!res.rollback_incomplete);
        ck_assert_str_eq(res.error.pointer, "resctrl/rt/schemata/L3");
        engine_result_done(&res);
        _cleanup_free_ char *after = tree_snapshot(host_dir);
        tree_assert_same(before, after, "rolled back");

        /* The write verb itself, and the kernel's reason. */
        open_host();
        Knob rt = { .id = (char *) "resctrl/rt/schemata/L3",
                    .domain = DOMAIN_RESCTRL,
                    .kind = VALUE_SCHEMATA,
                    .path = (char *) "sys/fs/resctrl/rt/schemata" };
        _cleanup_(knob_result_done) KnobResult w = {};
        ck_assert_int_eq(backend_resctrl.write(root, &rt, "0=300;1=300", NULL, &w), -EINVAL);
        ck_assert_int_eq(w.status, KNOB_FAILED);
        ck_assert_int_eq(w.error, -EINVAL);
        ck_assert_str_eq(w.reason, "Overlaps with exclusive group");
        knob_result_done(&w);
        ck_assert_int_eq(backend_resctrl.write(root, &rt, "0=180;1=180", NULL, &w), 0);
        ck_assert_int_eq(w.status, KNOB_DONE);
        ck_assert_ptr_null(w.reason);
        Knob mode = { .id = (char *) "resctrl/rt/mode",
                      .domain = DOMAIN_RESCTRL,
                      .kind = VALUE_AUTO,
                      .path = (char *) "sys/fs/resctrl/rt/mode" };
        /* The default group (1ff) still shares 180: exclusive mode is refused until it shrinks. */
        knob_result_done(&w);
        ck_assert_int_eq(backend_resctrl.write(root, &mode, "exclusive", NULL, &w), -EINVAL);
        ck_assert_str_eq(w.reason, "Schemata overlaps");
        ck_assert_int_eq(backend_write(&backend_resctrl, root, &mode, NULL), 0);
        ck_assert(!tree_exists(host_dir, "sys/fs/resctrl/rt"));
        tree_assert_file(host_dir, "sys/fs/resctrl/cpus_list", "0-31\n");
}
END_TEST

START_TEST(test_out_of_closids) {
        copy_host("intel-2s");
        test_write(host_dir, "sys/fs/resctrl/info/L3/num_closids", "2\n");
        test_write(host_dir, "sys/fs/resctrl/info/MB/num_closids", "2\n");
        sh("mkdir -p sys/fs/resctrl/other && cp sys/fs/resctrl/schemata sys/fs/resctrl/mode sys/fs/resctrl/other/");
        _cleanup_free_ char *before = tree_snapshot(host_dir);
        _cleanup_free_ char *prof =
                test_profile(prof_dir, "lab",
                             "{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2-5\", \"l3\": {\"ways\": 2}}]}}");
        EngineResult res = {};
        ck_assert_int_eq(tree_apply(host_dir, prof, &res), -ENOSPC);
        ck_assert(res.rolled_back);
        /* The engine takes the kernel's reason from the write's result. */
        ck_assert_str_eq(res.error.detail, "out of CLOSIDs");
        engine_result_done(&res);
        /* As on a real kernel, the refusal's reason stays in last_cmd_status. */
        tree_assert_file(host_dir, "sys/fs/resctrl/info/last_cmd_status", "out of CLOSIDs\n");
        test_write(host_dir, "sys/fs/resctrl/info/last_cmd_status", "ok\n");
        _cleanup_free_ char *after = tree_snapshot(host_dir);
        tree_assert_same(before, after, "rolled back");
        open_host();
        Knob cpus = { .id = (char *) "resctrl/rt/cpus",
                      .domain = DOMAIN_RESCTRL,
                      .kind = VALUE_CPU_LIST,
                      .path = (char *) "sys/fs/resctrl/rt/cpus_list" };
        /* The group the write made is removed again, and the reason is the mkdir's. */
        _cleanup_(knob_result_done) KnobResult w = {};
        ck_assert_int_eq(backend_resctrl.write(root, &cpus, "2-5", NULL, &w), -ENOSPC);
        ck_assert_int_eq(w.status, KNOB_FAILED);
        ck_assert_str_eq(w.reason, "out of CLOSIDs");
}
END_TEST

START_TEST(test_read_mount) {
        copy_host("intel-2s");
        make_cdp();
        open_host();
        char *v = NULL;
        ck_assert_int_eq(resctrl_read_mount(root, "sys/fs/resctrl", &v), 0);
        ck_assert_str_eq(v, "mounted,cdp");
        free(v);
        ck_assert_int_eq(resctrl_read_mount(root, "/sys/fs/resctrl", &v), 0);
        ck_assert_str_eq(v, "mounted,cdp");
        free(v);
        ck_assert_int_eq(resctrl_read_mount(root, "sys/fs/cgroup", &v), 0);
        ck_assert_ptr_null(v);
        /* Without mountinfo, /proc/mounts. */
        sh("rm proc/1/mountinfo");
        ck_assert_int_eq(resctrl_read_mount(root, "sys/fs/resctrl", &v), 0);
        ck_assert_str_eq(v, "mounted,cdp");
        free(v);
        sh("rm proc/1/mounts");
        ck_assert_int_eq(resctrl_read_mount(root, "sys/fs/resctrl", &v), 0);
        ck_assert_ptr_null(v);
}
END_TEST

/* Every invalid request is refused (exit 2) before anything is written. */
START_TEST(test_invalid_changes_nothing) {
        copy_host("intel-2s");
        _cleanup_free_ char *before = tree_snapshot(host_dir);
        const char *bad[] = {
                "{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"l3\": {\"mask\": \"0x1000\"}}]}}",
                "{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"l3\": {\"mask\": \"0x505\"}}]}}",
                "{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"l3\": {\"ways\": 12}}]}}",
                "{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"l3code\": {\"ways\": 2}}]}}",
                "{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"mb\": 5}]}}",
                "{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"l3\": {\"ways\": 11}, \"exclusive\": true}]}}",
                "{\"cat\": {\"groups\": [{\"name\": \"a\", \"cpus\": \"2\", \"l3\": {\"mask\": \"0x780\"}, \"exclusive\": true},"
                " {\"name\": \"b\", \"cpus\": \"3\", \"l3\": {\"mask\": \"0x700\"}}]}}",
                "{\"cat\": {\"groups\": [{\"name\": \"g0\", \"cpus\": \"1\"}, {\"name\": \"g1\", \"cpus\": \"2\"},"
                " {\"name\": \"g2\", \"cpus\": \"3\"}, {\"name\": \"g3\", \"cpus\": \"4\"}, {\"name\": \"g4\", \"cpus\": \"5\"},"
                " {\"name\": \"g5\", \"cpus\": \"6\"}, {\"name\": \"g6\", \"cpus\": \"7\"}, {\"name\": \"g7\", \"cpus\": \"9\"}]}}",
                "{\"cat\": {\"groups\": [{\"name\": \"a\", \"cpus\": \"2-5\"}, {\"name\": \"b\", \"cpus\": \"5-6\"}]}}",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_free_ char *prof = test_profile(prof_dir, "lab", bad[i]), *args = NULL, *out = NULL;
                ck_assert(asprintf(&args, "apply '%s'", prof) >= 0);
                int st = tree_ctl(host_dir, &out, args);
                ck_assert_msg(st == 2, "exit %d for %s: %s", st, bad[i], strempty(out));
                ck_assert_msg(strstr(out, "lab.json: /cat/groups/"), "no pointer: %s", out);
        }
        _cleanup_free_ char *after = tree_snapshot(host_dir);
        tree_assert_same(before, after, "refused profiles");
}
END_TEST

/* A crash (SIGKILL) after any single change of apply: the next run rolls back to the original. */
START_TEST(test_crash_every_step) {
        static const char *json =
                "{\"cpus\": {\"isolated\": \"4-15,20-31\"},"
                " \"cpuset\": {\"partitions\": [{\"name\": \"rtpart-rt\", \"cpus\": \"isolated\"}]},"
                " \"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"isolated\", \"l3\": {\"ways\": 6}, \"exclusive\": true,"
                " \"mb\": 50}]}}";
        copy_host("intel-2s");
        _cleanup_free_ char *prof = test_profile(prof_dir, "lab", json), *before = tree_snapshot(host_dir);
        _cleanup_free_ char *args = NULL, *out = NULL;
        ck_assert(asprintf(&args, "--json plan '%s'", prof) >= 0);
        ck_assert_int_eq(tree_ctl(host_dir, &out, args), 0);
        size_t changes = 0;
        for (const char *p = out; (p = strstr(p, "\"knob\"")); p++)
                changes++;
        ck_assert_uint_ge(changes, 8);
        tree_remove(host_dir);
        free(host_dir);
        host_dir = NULL;
        /* The simulator crashes after the Nth change of the kernel's state; a knob write is one or
         * more of them. Crash at every one, until the apply runs past the last. */
        for (size_t n = 1;; n++) {
                ck_assert_uint_lt(n, 10 * changes);
                host_dir = tree_copy_host("intel-2s");
                _cleanup_free_ char *a = NULL, *o = NULL;
                ck_assert(asprintf(&a, "apply '%s'", prof) >= 0);
                char nb[32];
                snprintf(nb, sizeof(nb), "%zu", n);
                setenv("RTPART_TEST_CRASH_AFTER", nb, 1);
                int st = tree_ctl(host_dir, &o, a);
                unsetenv("RTPART_TEST_CRASH_AFTER");
                if (st == 0) { /* past the last change: done */
                        tree_remove(host_dir);
                        free(host_dir);
                        host_dir = NULL;
                        break;
                }
                free(o);
                o = NULL;
                ck_assert_int_eq(tree_ctl(host_dir, &o, "status"), 0);
                /* Killed after the journal's commit (its last write): the apply is done. Else
                 * what the journal held is rolled back, or nothing was changed yet (the state
                 * directory made, the reserve, the journal's temporary before its rename). */
                if (strstr(o, "lab (applied"))
                        ck_assert_msg(!strstr(o, "rolled back"), "after crash %zu: %s", n, o);
                else {
                        ck_assert_msg(strstr(o, "rolled back") || n <= 3, "after crash %zu: %s", n, o);
                        _cleanup_free_ char *after = tree_snapshot(host_dir);
                        char what[64];
                        snprintf(what, sizeof(what), "crash after write %zu", n);
                        tree_assert_same(before, after, what);
                }
                tree_remove(host_dir);
                free(host_dir);
                host_dir = NULL;
        }
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("backend-resctrl");
        TCase *tc = tcase_create("parse");
        tcase_add_test(tc, test_schemata_parse);
        suite_add_tcase(s, tc);

        tc = tcase_create("plan");
        tcase_add_checked_fixture(tc, NULL, teardown);
        tcase_add_test(tc, test_intel_ways_percent_mask);
        tcase_add_test(tc, test_intel_no_shrink);
        tcase_add_test(tc, test_intel_mb);
        tcase_add_test(tc, test_intel_mask_errors);
        tcase_add_test(tc, test_intel_group_errors);
        tcase_add_test(tc, test_intel_min_bits_closids);
        tcase_add_test(tc, test_intel_shareable_bits);
        tcase_add_test(tc, test_intel_cdp);
        tcase_add_test(tc, test_intel_existing_groups);
        tcase_add_test(tc, test_epyc);
        tcase_add_test(tc, test_epyc_sparse_default);
        tcase_add_test(tc, test_vm_no_resctrl);
        tcase_add_test(tc, test_not_mounted);
        suite_add_tcase(s, tc);

        tc = tcase_create("write");
        tcase_add_checked_fixture(tc, NULL, teardown);
        tcase_set_timeout(tc, 240);
        tcase_add_test(tc, test_apply_intel_cdp_mba);
        tcase_add_test(tc, test_apply_epyc);
        tcase_add_test(tc, test_kernel_refusal);
        tcase_add_test(tc, test_out_of_closids);
        tcase_add_test(tc, test_invalid_changes_nothing);
        tcase_add_test(tc, test_crash_every_step);
        tcase_add_test(tc, test_read_mount);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return test_run(suite());
}
