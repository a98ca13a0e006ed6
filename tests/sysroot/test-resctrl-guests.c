/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdlib.h>
#include <string.h>

#include "strv.h"
#include "test-util.h"

/* The ways the resctrl backend's plan keeps for guests (cat.guests: no group and not the default
 * group holds them, so that libvirt can make each guest's <cachetune> group of them), on the
 * committed fake hosts: intel-2s (cbm_mask 7ff, 11 ways, 16 CLOSIDs, MB with 8, min_bandwidth
 * 10, bandwidth_gran 10) and epyc (AMD, cbm_mask ffff, sparse masks, L3 ids 0-7). */

static char *prof_dir;
static Root *root;
static Host *host;

static void use_host(const char *name) {
        _cleanup_free_ char *dir = fixture_host(name);
        prof_dir = test_tmpdir();
        test_open_host(dir, &root, &host);
}

static void teardown(void) {
        test_fixture_done(root, host, NULL, prof_dir);
        root = NULL;
        host = NULL;
        prof_dir = NULL;
}

static Plan *plan_ok(const char *json) {
        return test_plan_ok(root, host, prof_dir, "lab", json);
}

static void plan_err(const char *json, const char *pointer, const char *fragment) {
        test_plan_err(root, host, prof_dir, "lab", json, pointer, fragment);
}

static const Knob *knob(const Plan *p, const char *id, const char *desired) {
        const Knob *k = plan_find(p, id);
        ck_assert_msg(k, "no knob %s", id);
        ck_assert_msg(streq_ptr(k->desired, desired), "%s: desired '%s', expected '%s'", id, strempty(k->desired),
                      desired);
        return k;
}

START_TEST(test_intel_guests) {
        use_host("intel-2s");
        /* The shipped realtime-virtual-host's split: rt 30% exclusive at the top, the guests' 40%
         * below it, the default group the rest; no group and not the default group holds the
         * guests' ways. */
        _cleanup_(plan_freep) Plan *p =
                plan_ok("{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2-5\", \"l3\": {\"percent\": 30}, "
                        "\"exclusive\": true}], \"guests\": {\"l3\": {\"percent\": 40}, \"mb\": 55}}}");
        knob(p, "resctrl/rt/schemata/L3", "0=700;1=700");
        const Knob *k = knob(p, "resctrl/default/schemata/L3", "0=00f;1=00f");
        ck_assert_msg(strstr(k->note, "outside exclusive groups and the guests' ways"), "%s", k->note);
        ck_assert(plan_has_note(p, "cat: ways 4-7 (0x0f0, 4 of 11) are kept for guests"));
        ck_assert(plan_has_note(p, "6 CLOSIDs are left for those groups"));
        ck_assert(plan_has_note(p, "guests: mb 55% is rounded up to 60%"));
        ck_assert_ptr_null(plan_find(p, "resctrl/guests/schemata/L3")); /* libvirt makes the guests' groups */

        /* Without an exclusive group the default group still gives the guests' ways up; a group
         * given ways is allocated around them, and the ways left to no group are noted. */
        _cleanup_(plan_freep) Plan *q =
                plan_ok("{\"cat\": {\"groups\": [{\"name\": \"be\", \"cpus\": \"2\", \"l3\": {\"ways\": 2}}], "
                        "\"guests\": {\"l3\": {\"mask\": \"0x700\"}}}}");
        knob(q, "resctrl/be/schemata/L3", "0=0c0;1=0c0");
        knob(q, "resctrl/default/schemata/L3", "0=0ff;1=0ff");
        ck_assert(plan_has_note(q, "ways 8-10 (0x700, 3 of 11) are kept for guests"));
        ck_assert(!plan_has_note(q, "stay unused"));

        /* Only guests: the default group is shrunk for them. */
        _cleanup_(plan_freep) Plan *g = plan_ok("{\"cat\": {\"guests\": {\"l3\": {\"ways\": 4}}}}");
        knob(g, "resctrl/default/schemata/L3", "0=07f;1=07f");
        ck_assert_uint_eq(plan_count_domain(g, DOMAIN_RESCTRL), 2); /* the mount and the default group */

        /* shrink_default false: the user's default group holds them, and the plan says so. */
        _cleanup_(plan_freep) Plan *u =
                plan_ok("{\"cat\": {\"shrink_default\": false, \"guests\": {\"l3\": {\"ways\": 4}}}}");
        ck_assert_ptr_null(plan_find(u, "resctrl/default/schemata/L3"));
        ck_assert(plan_has_note(u, "holds ways kept for guests (0x780)"));
}
END_TEST

START_TEST(test_intel_guests_errors) {
        use_host("intel-2s");
        /* a group's mask over the guests' ways */
        plan_err("{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"l3\": {\"mask\": \"0x0f0\"}}], "
                 "\"guests\": {\"l3\": {\"mask\": \"0x1c0\"}}}}",
                 "/cat/groups/0/l3", "ways 0x0f0 overlap the ways kept for guests (/cat/guests/l3: 0x1c0)");
        /* the default group left with nothing */
        plan_err("{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"l3\": {\"ways\": 6}, "
                 "\"exclusive\": true}], \"guests\": {\"l3\": {\"ways\": 5}}}}",
                 "/cat/guests/l3", "leaving the default group 0x000: fewer than min_cbm_bits 1");
        /* more than is left */
        plan_err("{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2\", \"l3\": {\"ways\": 8}}], "
                 "\"guests\": {\"l3\": {\"ways\": 4}}}}",
                 "/cat/guests/l3", "4 contiguous ways do not fit");
        plan_err("{\"cat\": {\"guests\": {\"l3\": {\"ways\": 12}}}}", "/cat/guests/l3", "12 ways exceed");
        plan_err("{\"cat\": {\"guests\": {\"mb\": 5}}}", "/cat/guests/mb", "min_bandwidth 10");
        plan_err("{\"cat\": {\"guests\": {\"l3\": {\"share\": 5}}}}", "/cat/guests/l3/share", "unknown key");
}
END_TEST

START_TEST(test_epyc_guests) {
        use_host("epyc");
        /* Sparse masks: the default group keeps every way but the groups' and the guests'. */
        _cleanup_(plan_freep) Plan *p =
                plan_ok("{\"cat\": {\"groups\": [{\"name\": \"rt\", \"cpus\": \"2-5\", \"l3\": {\"percent\": 30}, "
                        "\"exclusive\": true}], \"guests\": {\"l3\": {\"percent\": 40}}}}");
        knob(p, "resctrl/rt/schemata/L3", "0=f800;1=f800;2=f800;3=f800;4=f800;5=f800;6=f800;7=f800");
        knob(p, "resctrl/default/schemata/L3", "0=001f;1=001f;2=001f;3=001f;4=001f;5=001f;6=001f;7=001f");
        ck_assert(plan_has_note(p, "ways 5-10 (0x07e0, 6 of 16) are kept for guests"));
        plan_err("{\"cat\": {\"guests\": {\"mb\": 50}}}", "/cat/guests/mb", "1/8 GB/s");
}
END_TEST

int main(void) {
        Suite *s = suite_create("resctrl-guests");
        TCase *tc = tcase_create("plan");
        tcase_add_checked_fixture(tc, NULL, teardown);
        tcase_add_test(tc, test_intel_guests);
        tcase_add_test(tc, test_intel_guests_errors);
        tcase_add_test(tc, test_epyc_guests);
        suite_add_tcase(s, tc);
        return test_run(s);
}
