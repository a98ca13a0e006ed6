/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "strv.h"
#include "test-tree.h"
#include "test-util.h"

/* The engine's crash recovery on journals of every shape, on a copy of the vm fixture. */

static char *host_dir;

static void setup(void) {
        host_dir = tree_copy_host("vm");
}

static void teardown(void) {
        tree_remove(host_dir);
        free(host_dir);
        host_dir = NULL;
}

/* The engine's recovery, as a command runs it: the journal opened and locked. */
static int recover(Root *root, Host *host, EngineResult *res) {
        _cleanup_(journal_store_freep) JournalStore *journal = test_journal_locked(root);
        return engine_recover(root, journal, host, res);
}

/* Recovers the transaction of `journal` and returns the note it left (caller frees). */
static char *recover_note(const char *journal) {
        Root *root;
        Host *host;
        test_write(host_dir, "var/lib/rtpart/state.json", journal);
        test_open_host(host_dir, &root, &host);
        EngineResult res = {};
        ck_assert_int_eq(recover(root, host, &res), 0);
        ck_assert(res.recovered);
        ck_assert_ptr_nonnull(res.notes);
        char *n = strdup(res.notes[0]);
        engine_result_done(&res);
        host_free(host);
        root_free(root);
        return n;
}

START_TEST(test_recover_names_what_it_knows) {
        _cleanup_free_ char *full = recover_note(
                "{\"version\": 1, \"originals\": {}, \"transaction\": {\"op\": \"apply\", \"profile\": \"lab\","
                " \"started\": \"2026-12-03T05:00:00Z\", \"steps\": []}}");
        ck_assert_str_eq(full, "an interrupted apply of lab (started 2026-12-03T05:00:00Z) was rolled back");
        /* A transaction without op, profile or start time reads as a sentence, not "an
         * interrupted  of  (started )". */
        _cleanup_free_ char *bare =
                recover_note("{\"version\": 1, \"originals\": {}, \"transaction\": {\"steps\": []}}");
        ck_assert_str_eq(bare, "an interrupted transaction was rolled back");
        _cleanup_free_ char *part = recover_note(
                "{\"version\": 1, \"originals\": {}, \"transaction\": {\"op\": \"revert\", \"steps\": []}}");
        ck_assert_str_eq(part, "an interrupted revert was rolled back");
}
END_TEST

static Journal *load_journal(void) {
        Root *root;
        ck_assert_int_eq(root_new(host_dir, &root), 0);
        Journal *j = test_journal_load(root);
        root_free(root);
        return j;
}

/* A recovery puts every step's "before" back, forgets the originals the transaction recorded,
 * keeps the older ones, and says so in last_error. */
START_TEST(test_recover_restores_and_forgets) {
        test_write(host_dir, "proc/sys/vm/swappiness", "10\n");
        _cleanup_free_ char *n = recover_note(
                "{\"version\": 1, \"originals\": {"
                "\"sysctl/vm.swappiness\": {\"domain\": \"sysctl\", \"kind\": \"auto\", \"path\": \"proc/sys/vm/swappiness\", \"value\": \"60\"},"
                "\"sysctl/kernel.x\": {\"domain\": \"sysctl\", \"kind\": \"auto\", \"path\": null, \"value\": \"1\"}},"
                " \"transaction\": {\"op\": \"apply\", \"profile\": \"lab\", \"steps\": [{\"domain\": \"sysctl\","
                " \"kind\": \"auto\", \"path\": \"proc/sys/vm/swappiness\", \"knob\": \"sysctl/vm.swappiness\","
                " \"before\": \"60\", \"after\": \"10\"}], \"new_originals\": [\"sysctl/vm.swappiness\"]}}");
        ck_assert_str_eq(n, "an interrupted apply of lab was rolled back");
        _cleanup_free_ char *v = tree_read(host_dir, "proc/sys/vm/swappiness");
        ck_assert_str_eq(v, "60\n");
        _cleanup_(journal_freep) Journal *j = load_journal();
        ck_assert(!j->transaction_open);
        ck_assert_ptr_null(journal_find_original(j, "sysctl/vm.swappiness"));
        ck_assert_ptr_nonnull(journal_find_original(j, "sysctl/kernel.x"));
        ck_assert(j->has_last_error);
        ck_assert_ptr_null(j->last_error.knob);
        ck_assert_str_eq(j->last_error.message, n);
}
END_TEST

/* What apply and revert leave in the journal. */
START_TEST(test_apply_revert_journal) {
        _cleanup_free_ char *swappiness = tree_read(host_dir, "proc/sys/vm/swappiness");
        EngineResult res = {};
        ck_assert_int_eq(tree_apply(host_dir, "realtime-virtual-host", &res), 0);
        size_t written = res.written;
        ck_assert_uint_gt(written, 0);
        engine_result_done(&res);

        _cleanup_(journal_freep) Journal *j = load_journal();
        ck_assert_str_eq(j->profile, "realtime-virtual-host");
        ck_assert_ptr_nonnull(j->hash);
        ck_assert_ptr_nonnull(j->source);
        ck_assert(!j->transaction_open);
        ck_assert(!j->has_last_error);
        /* Every written knob has its first value kept, and is applied with what the profile
         * wants, which is what the host now holds. */
        ck_assert_uint_eq(journal_count_originals(j), written);
        for (size_t i = 0; i < j->n_applied; i++) {
                const JournalKnob *a = &j->applied[i];
                if (!a->path || a->domain != DOMAIN_SYSCTL)
                        continue;
                _cleanup_free_ char *now = tree_read(host_dir, a->path);
                ck_assert_ptr_nonnull(now);
                ck_assert_msg(value_equal(a->kind, now, a->value), "%s: %s, not %s", a->id, now, strempty(a->value));
        }
        const JournalKnob *o = journal_find_original(j, "sysctl/vm.swappiness");
        if (o) {
                ck_assert_int_eq(o->domain, DOMAIN_SYSCTL);
                ck_assert_ptr_nonnull(journal_find_applied(j, "sysctl/vm.swappiness"));
                ck_assert_msg(value_equal(o->kind, swappiness, o->value), "original %s", strempty(o->value));
        }

        ck_assert_int_eq(tree_revert(host_dir), 0);
        _cleanup_(journal_freep) Journal *r = load_journal();
        ck_assert_ptr_null(r->profile);
        ck_assert_ptr_null(r->hash);
        ck_assert_ptr_null(r->source);
        ck_assert_ptr_null(r->applied_at);
        ck_assert_uint_eq(r->n_applied, 0);
        ck_assert_uint_eq(r->n_unmovable, 0);
        ck_assert_uint_eq(journal_count_originals(r), 0);
        ck_assert(!r->transaction_open);
        _cleanup_free_ char *back = tree_read(host_dir, "proc/sys/vm/swappiness");
        ck_assert_str_eq(back, swappiness);
}
END_TEST

/* What a kill -9 between a temp file and its rename leaves behind goes with the next run's
 * recovery (and so with apply and revert): rtpart's own temporaries only, never another's. */
START_TEST(test_recovery_removes_stale_temporaries) {
        ck_assert_int_eq(tree_apply(host_dir, "realtime-virtual-host", NULL), 0);
        static const char * const stale[] = { "etc/default/.#irqbalance.99999.tmp",
                                              "var/lib/rtpart/.#state.json.12345.tmp" };
        static const char * const foreign[] = { "etc/default/.#other.1.tmp", "etc/default/.#irqbalance.x.tmp",
                                                "etc/default/irqbalance.99999.tmp" };
        for (size_t i = 0; i < ELEMENTSOF(stale); i++)
                test_write(host_dir, stale[i], "half written");
        for (size_t i = 0; i < ELEMENTSOF(foreign); i++)
                test_write(host_dir, foreign[i], "not rtpart's");

        Root *root;
        Host *host;
        test_open_host(host_dir, &root, &host);
        EngineResult res = {};
        ck_assert_int_eq(recover(root, host, &res), 0);
        for (size_t i = 0; i < ELEMENTSOF(stale); i++)
                ck_assert_msg(!tree_exists(host_dir, stale[i]), "%s left behind", stale[i]);
        for (size_t i = 0; i < ELEMENTSOF(foreign); i++)
                ck_assert_msg(tree_exists(host_dir, foreign[i]), "%s removed", foreign[i]);
        ck_assert_ptr_nonnull(res.notes);
        ck_assert(strv_contains(res.notes, "removed 2 temporary files an interrupted run left behind"));
        engine_result_done(&res);
        host_free(host);
        root_free(root);

        /* Revert starts with the same recovery. */
        test_write(host_dir, stale[0], "half written");
        ck_assert_int_eq(tree_revert(host_dir), 0);
        ck_assert(!tree_exists(host_dir, stale[0]));
}
END_TEST

static Suite *engine_suite(void) {
        Suite *s = suite_create("engine");
        TCase *tc = tcase_create("recover");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_recover_names_what_it_knows);
        tcase_add_test(tc, test_recover_restores_and_forgets);
        suite_add_tcase(s, tc);

        tc = tcase_create("journal");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, test_apply_revert_journal);
        tcase_add_test(tc, test_recovery_removes_stale_temporaries);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return test_run(engine_suite());
}
