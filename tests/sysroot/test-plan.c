/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "journal.h"
#include "strv.h"
#include "test-tree.h"
#include "test-util.h"

/* The plan against what an apply left behind: after apply, plan has nothing left to change, and a
 * knob the kernel refused (recorded in the journal as unmovable) is no change either, as apply
 * leaves it alone. On a copy of the vm fixture (4 CPUs, cgroup v1). */

static char *host_dir;

static void setup(void) {
        host_dir = tree_copy_host("vm");
}

static void teardown(void) {
        tree_remove(host_dir);
        free(host_dir);
        host_dir = NULL;
}

/* The plan as rtpartctl plan shows it: built, then the journal's refused knobs marked. */
static Plan *plan_now(const char *profile) {
        Root *root;
        Host *host;
        Plan *plan = NULL;
        _cleanup_free_ char *err = NULL;
        test_open_host(host_dir, &root, &host);
        ck_assert_msg(test_plan(root, host, profile, &plan, &err) == 0, "plan: %s", strempty(err));
        _cleanup_(journal_freep) Journal *j = test_journal_load(root);
        ck_assert_int_eq(engine_mark_refused(plan, j), 0);
        host_free(host);
        root_free(root);
        return plan;
}

/* The first IRQ knob the plan changes. */
static const Knob *first_irq_change(const Plan *p) {
        for (size_t i = 0; i < p->n_knobs; i++)
                if (p->knobs[i].domain == DOMAIN_IRQ && p->knobs[i].changed &&
                    !streq(p->knobs[i].id, "irq/default_affinity"))
                        return &p->knobs[i];
        return NULL;
}

START_TEST(test_plan_after_apply_changes_nothing) {
        _cleanup_(plan_freep) Plan *before = plan_now("realtime-virtual-host");
        ck_assert_uint_gt(plan_count_changes(before, NULL), 0);
        EngineResult res = {};
        ck_assert_int_eq(tree_apply(host_dir, "realtime-virtual-host", &res), 0);
        _cleanup_(plan_freep) Plan *after = plan_now("realtime-virtual-host");
        /* What a fake root cannot take (thread scheduling, PM QoS need the real host) is skipped by
         * apply and stays a change; nothing else does. */
        for (size_t i = 0; i < after->n_knobs; i++)
                ck_assert_msg(!after->knobs[i].changed || after->knobs[i].domain == DOMAIN_KTHREAD ||
                                      after->knobs[i].domain == DOMAIN_CPU,
                              "%s still a change after apply: %s -> %s", after->knobs[i].id,
                              strempty(after->knobs[i].current), strempty(after->knobs[i].desired));
        ck_assert_uint_eq(plan_count_changes(after, NULL), res.skipped);
        engine_result_done(&res);
}
END_TEST

START_TEST(test_refused_is_no_change) {
        _cleanup_(plan_freep) Plan *before = plan_now("realtime-virtual-host");
        const Knob *irq = first_irq_change(before);
        ck_assert_msg(irq, "the vm fixture has IRQs to move");
        size_t changes = plan_count_changes(before, NULL);
        _cleanup_free_ char *id = strdup(irq->id), *path = strdup(irq->path), *orig = strdup(irq->current);

        /* An apply where the kernel refused that IRQ (a managed IRQ): the journal records it as
         * unmovable and its file keeps the kernel's value. */
        EngineResult res = {};
        ck_assert_int_eq(tree_apply(host_dir, "realtime-virtual-host", &res), 0);
        size_t skipped = res.skipped;
        engine_result_done(&res);
        _cleanup_free_ char *state_text = tree_read(host_dir, "var/lib/rtpart/state.json");
        json_error_t jerr;
        _cleanup_(json_decrefp) json_t *state = json_loads(state_text, 0, &jerr);
        ck_assert_ptr_nonnull(state);
        ck_assert_int_eq(json_object_set_new(json_object_get(state, "unmovable"), id,
                                             json_string("the kernel manages this IRQ's affinity")),
                         0);
        _cleanup_free_ char *dump = json_dumps(state, JSON_INDENT(2));
        test_write(host_dir, "var/lib/rtpart/state.json", dump);
        _cleanup_free_ char *line = NULL;
        ck_assert_int_ge(asprintf(&line, "%s\n", orig), 0);
        test_write(host_dir, path, line);

        _cleanup_(plan_freep) Plan *after = plan_now("realtime-virtual-host");
        const Knob *k = plan_find(after, id);
        ck_assert_ptr_nonnull(k);
        ck_assert_msg(!k->changed, "%s was refused by the kernel, yet plan lists it as a change", id);
        ck_assert_ptr_nonnull(k->note);
        ck_assert_msg(strstr(k->note, "refused by the kernel"), "note: %s", k->note);
        ck_assert_uint_eq(plan_count_changes(after, NULL), skipped);
        /* rtpartctl plan says the same. */
        _cleanup_free_ char *out = NULL;
        ck_assert_int_eq(tree_ctl(host_dir, &out, "--no-daemon --json plan realtime-virtual-host"), 0);
        _cleanup_(json_decrefp) json_t *doc = json_loads(out, 0, &jerr);
        ck_assert_msg(doc, "plan --json: %s", jerr.text);
        bool listed_unchanged = false;
        size_t i;
        json_t *e;
        json_array_foreach (json_object_get(doc, "changes"), i, e)
                ck_assert_msg(!streq_ptr(json_string_value(json_object_get(e, "knob")), id), "%s listed as a change",
                              id);
        json_array_foreach (json_object_get(doc, "unchanged"), i, e)
                if (streq_ptr(json_string_value(json_object_get(e, "knob")), id))
                        listed_unchanged = strstr(strempty(json_string_value(json_object_get(e, "note"))),
                                                  "refused by the kernel") != NULL;
        ck_assert_msg(listed_unchanged, "%s not listed as refused", id);

        /* Without the journal's word it is a change again. */
        ck_assert_int_eq(tree_revert(host_dir), 0);
        _cleanup_(plan_freep) Plan *fresh = plan_now("realtime-virtual-host");
        ck_assert_uint_eq(plan_count_changes(fresh, NULL), changes);
}
END_TEST

static Suite *plan_suite(void) {
        Suite *s = suite_create("plan");
        TCase *tc = tcase_create("after-apply");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_plan_after_apply_changes_nothing);
        tcase_add_test(tc, test_refused_is_no_change);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return test_run(plan_suite());
}
