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

/* Temporaries as a killed run leaves them (stale), and files of the same directories that are not
 * rtpart's (foreign). */
static void plant(const char * const *stale, size_t n_stale, const char * const *foreign, size_t n_foreign) {
        for (size_t i = 0; i < n_stale; i++)
                test_write(host_dir, stale[i], "half written");
        for (size_t i = 0; i < n_foreign; i++)
                test_write(host_dir, foreign[i], "not rtpart's");
}

static void assert_swept(const char * const *stale, size_t n_stale, const char * const *foreign, size_t n_foreign) {
        for (size_t i = 0; i < n_stale; i++)
                ck_assert_msg(!tree_exists(host_dir, stale[i]), "%s left behind", stale[i]);
        for (size_t i = 0; i < n_foreign; i++)
                ck_assert_msg(tree_exists(host_dir, foreign[i]), "%s removed", foreign[i]);
}

/* What a kill -9 between a temp file and its rename leaves behind goes with the next run's
 * recovery (and so with apply and revert): rtpart's own temporaries only, never another's. */
START_TEST(test_recovery_removes_stale_temporaries) {
        ck_assert_int_eq(tree_apply(host_dir, "realtime-virtual-host", NULL), 0);
        static const char * const stale[] = { "etc/default/.#irqbalance.99999.tmp",
                                              "var/lib/rtpart/.#state.json.12345.tmp" };
        static const char * const foreign[] = { "etc/default/.#other.1.tmp", "etc/default/.#irqbalance.x.tmp",
                                                "etc/default/irqbalance.99999.tmp" };
        plant(stale, ELEMENTSOF(stale), foreign, ELEMENTSOF(foreign));

        Root *root;
        Host *host;
        test_open_host(host_dir, &root, &host);
        EngineResult res = {};
        ck_assert_int_eq(recover(root, host, &res), 0);
        assert_swept(stale, ELEMENTSOF(stale), foreign, ELEMENTSOF(foreign));
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

/* Issue 22.7: a run killed between a temporary and its rename left it beside a file the journal
 * does not name (the GRUB drop-in: a boot argument has no path in the journal), and every later
 * command left it there. Recovery sweeps beside every file a backend replaces, and beside the
 * journal and what is kept with it, with no journal at all; and says there is something to do. */
START_TEST(test_recovery_sweeps_unnamed_files) {
        static const char * const stale[] = {
                "etc/default/grub.d/.#rtpart.cfg.99999.tmp",
                "boot/loader/entries/.#rtpart-test.conf.4242-0badf00d.tmp",
                "etc/modprobe.d/.#rtpart.conf.777.tmp",
                "var/lib/rtpart/boot-backup/.#etc%default%grub.d%rtpart.cfg.1234.tmp",
        };
        static const char * const foreign[] = { "etc/default/grub.d/.#other.cfg.5.tmp",
                                                "etc/modprobe.d/.#rtpart.conf.tmp" };
        plant(stale, ELEMENTSOF(stale), foreign, ELEMENTSOF(foreign));

        Root *root;
        Host *host;
        test_open_host(host_dir, &root, &host);
        JournalStore *journal = test_journal_locked(root);
        ck_assert(engine_needs_recovery(root, journal));
        EngineResult res = {};
        ck_assert_int_eq(engine_recover(root, journal, host, &res), 0);
        assert_swept(stale, ELEMENTSOF(stale), foreign, ELEMENTSOF(foreign));
        ck_assert(strv_contains(res.notes, "removed 4 temporary files an interrupted run left behind"));
        ck_assert(!engine_needs_recovery(root, journal));
        engine_result_done(&res);
        journal_store_free(journal);
        host_free(host);
        root_free(root);
}
END_TEST

static const Drift *find_drift(const VerifyResult *v, const char *knob) {
        for (size_t i = 0; i < v->n_drift; i++)
                if (streq(v->drift[i].knob, knob))
                        return &v->drift[i];
        return NULL;
}

static void assert_drift(const VerifyResult *v, const char *knob, Domain domain, const char *expected,
                         const char *actual) {
        const Drift *d = find_drift(v, knob);
        ck_assert_msg(d, "%s: no drift reported", knob);
        ck_assert_int_eq(d->domain, domain);
        ck_assert_str_eq(strempty(d->expected), expected);
        ck_assert_msg(streq_ptr(d->actual, actual), "%s: actual '%s', not '%s'", knob, strempty(d->actual),
                      strempty(actual));
}

/* Issue 28: the drift list verify gives, as rtpartctl verify --json and rtpartd report it: a
 * sysctl changed, a knob file gone (absent), an IRQ moved; each with its knob, domain, what the
 * profile wants and what the host has; the rest in sync. */
START_TEST(test_verify_drift_list) {
        ck_assert_int_eq(tree_apply(host_dir, "realtime-virtual-host", NULL), 0);
        Root *root;
        ck_assert_int_eq(root_new(host_dir, &root), 0);
        _cleanup_(journal_freep) Journal *j = test_journal_load(root);
        VerifyResult v = {};
        ck_assert_int_eq(engine_verify(root, j, "", &v), 0);
        ck_assert_uint_eq(v.n_drift, 0);
        ck_assert_uint_eq(v.checked, j->n_applied);
        verify_result_done(&v);

        test_write(host_dir, "proc/sys/vm/swappiness", "60\n");
        _cleanup_free_ char *gone = NULL;
        ck_assert(asprintf(&gone, "%s/proc/sys/kernel/timer_migration", host_dir) >= 0);
        ck_assert_int_eq(unlink(gone), 0);
        test_write(host_dir, "proc/irq/4/smp_affinity_list", "0-3\n");
        ck_assert_int_eq(engine_verify(root, j, "", &v), 0);
        ck_assert_uint_eq(v.n_drift, 3);
        assert_drift(&v, "sysctl/vm.swappiness", DOMAIN_SYSCTL, "10", "60");
        assert_drift(&v, "sysctl/kernel.timer_migration", DOMAIN_SYSCTL, "0", NULL);
        assert_drift(&v, "irq/4/affinity", DOMAIN_IRQ, "0", "0-3");
        ck_assert_str_eq(strempty(v.profile), "realtime-virtual-host");
        ck_assert_uint_eq(v.checked, j->n_applied);
        ck_assert(!v.transaction_open);

        /* The same, of a few knobs only (what rtpartd checks when inotify names files). */
        char *ids[] = { (char *) "irq/4/affinity", (char *) "sysctl/vm.dirty_ratio", (char *) "irq/4/affinity",
                        (char *) "no/such/knob" };
        verify_result_done(&v);
        ck_assert_int_eq(engine_verify_knobs(root, j, "", ids, ELEMENTSOF(ids), &v), 0);
        ck_assert_uint_eq(v.checked, 2);
        ck_assert_uint_eq(v.n_drift, 1);
        assert_drift(&v, "irq/4/affinity", DOMAIN_IRQ, "0", "0-3");
        verify_result_done(&v);
        root_free(root);
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
        tcase_add_test(tc, test_recovery_sweeps_unnamed_files);
        tcase_add_test(tc, test_verify_drift_list);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return test_run(engine_suite());
}
