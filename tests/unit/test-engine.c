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

/* Recovers the transaction of `journal` and returns the note it left (caller frees). */
static char *recover_note(const char *journal) {
        Root *root;
        Host *host;
        test_write(host_dir, "var/lib/rtpart/state.json", journal);
        test_open_host(host_dir, &root, &host);
        EngineResult res = {};
        ck_assert_int_eq(engine_recover(root, host, &res), 0);
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
        _cleanup_free_ char *bare = recover_note("{\"version\": 1, \"originals\": {}, \"transaction\": {\"steps\": []}}");
        ck_assert_str_eq(bare, "an interrupted transaction was rolled back");
        _cleanup_free_ char *part = recover_note("{\"version\": 1, \"originals\": {}, \"transaction\": {\"op\": \"revert\", \"steps\": []}}");
        ck_assert_str_eq(part, "an interrupted revert was rolled back");
}
END_TEST

static Suite *engine_suite(void) {
        Suite *s = suite_create("engine");
        TCase *tc = tcase_create("recover");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_recover_names_what_it_knows);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return test_run(engine_suite());
}
