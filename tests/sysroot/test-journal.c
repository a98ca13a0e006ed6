/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "journal.h"
#include "test-tree.h"
#include "test-util.h"

/* The journal: typed at load, the same bytes at save, and strict about entries that parse but
 * are wrong (issue 11.8: they were skipped in silence and their originals forgotten). */

/* A journal with every field, compact; as the writer writes it, it is this indented. */
#define EVERY_FIELD \
        "{\"version\": 2, \"profile\": \"lab\", \"hash\": \"fnv1a64:0123456789abcdef\"," \
        " \"applied_at\": \"2026-12-03T05:00:00Z\"," \
        " \"originals\": {\"irq/41/affinity\": {\"domain\": \"irq\", \"kind\": \"cpu-list\"," \
        " \"path\": \"proc/irq/41/smp_affinity_list\", \"reboot\": false, \"value\": \"0-7\"}," \
        " \"boot/isolcpus\": {\"domain\": \"boot\", \"kind\": \"bootarg\", \"path\": null, \"reboot\": true," \
        " \"value\": null, \"files\": {\"boot/loader/entries/a.conf\": null, \"boot/loader/entries/b.conf\": \"3\"}}}," \
        " \"applied\": [{\"domain\": \"irq\", \"kind\": \"cpu-list\", \"path\": \"proc/irq/41/smp_affinity_list\"," \
        " \"reboot\": false, \"desired\": \"0\", \"knob\": \"irq/41/affinity\"}," \
        " {\"domain\": \"boot\", \"kind\": \"bootarg\", \"path\": null, \"reboot\": true, \"desired\": \"2-7\"," \
        " \"knob\": \"boot/isolcpus\"}]," \
        " \"unmovable\": {\"irq/0/affinity\": \"the kernel manages this IRQ's affinity\"}," \
        " \"transaction\": {\"op\": \"apply\", \"profile\": \"lab\", \"started\": \"2026-12-03T05:00:00Z\"," \
        " \"steps\": [{\"domain\": \"sysctl\", \"kind\": \"auto\", \"path\": \"proc/sys/vm/swappiness\"," \
        " \"reboot\": false, \"knob\": \"sysctl/vm.swappiness\", \"before\": \"60\", \"after\": \"10\"," \
        " \"restore\": true}, {\"domain\": \"irq\", \"kind\": \"cpu-list\", \"path\": \"proc/irq/41/smp_affinity_list\"," \
        " \"reboot\": false, \"knob\": \"irq/41/affinity\", \"before\": \"0-7\", \"after\": null}]," \
        " \"new_originals\": [\"irq/41/affinity\"]}," \
        " \"last_error\": {\"knob\": \"irq/41/affinity\", \"path\": \"proc/irq/41/smp_affinity_list\", \"errno\": 5," \
        " \"detail\": null, \"message\": \"writing irq/41/affinity failed\", \"at\": \"2026-12-03T05:00:01Z\"}," \
        " \"profile_path\": \"/etc/rtpart/profiles/lab.json\"," \
        " \"source\": {\"summary\": \"lab\", \"irq\": {\"default\": \"housekeeping\"}, \"ratio\": 0.5}}"

static Journal *parse_ok(const char *text);

/* text as the journal's writer lays it out (one line per knob entry, a final newline): what
 * journal_format() makes of it, which must hold the same JSON as text, key for key. */
static char *as_written(const char *text) {
        _cleanup_(journal_freep) Journal *j = parse_ok(text);
        char *out = NULL;
        ck_assert_int_eq(journal_format(j, &out, NULL), 0);
        json_error_t jerr;
        json_t *want = json_loads(text, 0, &jerr), *got = json_loads(out, 0, &jerr);
        ck_assert_msg(want, "%s", jerr.text);
        ck_assert_msg(got, "%s: %s", jerr.text, out);
        ck_assert_msg(json_equal(want, got), "%s", out);
        json_decref(want);
        json_decref(got);
        size_t n = strlen(out);
        ck_assert(n >= 2 && streq(out + n - 2, "}\n"));
        return out;
}

static Journal *parse_ok(const char *text) {
        Journal *j = NULL;
        Error e = {};
        int r = journal_parse(text, strlen(text), "state.json", &j, &e);
        ck_assert_msg(r == 0, "journal_parse: %d: %s", r, strempty(e.message));
        ck_assert_ptr_null(e.message);
        return j;
}

/* A journal refused, as the user reads it: "FILE: ENTRY: WHAT" (caller frees). */
static char *parse_refused(const char *text) {
        Journal *j = NULL;
        _cleanup_(error_done) Error e = {};
        ck_assert_int_eq(journal_parse(text, strlen(text), "state.json", &j, &e), -EBADMSG);
        ck_assert_ptr_null(j);
        ck_assert_int_eq(e.code, -EBADMSG);
        ck_assert_str_eq(strempty(e.file), "state.json");
        ck_assert_ptr_nonnull(e.message);
        return error_format(&e, NULL);
}

/* Load → save gives the same bytes. */
static void assert_round_trip(const char *text) {
        _cleanup_(journal_freep) Journal *j = parse_ok(text);
        _cleanup_free_ char *out = NULL;
        size_t size = 0;
        ck_assert_int_eq(journal_format(j, &out, &size), 0);
        ck_assert_uint_eq(size, strlen(out));
        ck_assert_str_eq(out, text);
}

START_TEST(test_every_field) {
        _cleanup_free_ char *text = as_written(EVERY_FIELD);
        _cleanup_(journal_freep) Journal *j = parse_ok(text);
        /* Each knob entry on a line of its own, written whole (journal_format() streams them). */
        ck_assert_ptr_nonnull(strstr(text,
                                     "\n   {\"domain\": \"sysctl\", \"kind\": \"auto\", \"path\": "
                                     "\"proc/sys/vm/swappiness\", \"reboot\": false, \"knob\": "
                                     "\"sysctl/vm.swappiness\", \"before\": \"60\", \"after\": \"10\", "
                                     "\"restore\": true},\n"));

        ck_assert_str_eq(j->profile, "lab");
        ck_assert_str_eq(j->hash, "fnv1a64:0123456789abcdef");
        ck_assert_str_eq(j->applied_at, "2026-12-03T05:00:00Z");
        ck_assert_str_eq(j->profile_path, "/etc/rtpart/profiles/lab.json");
        ck_assert_str_eq(j->source, "{\"summary\":\"lab\",\"irq\":{\"default\":\"housekeeping\"},\"ratio\":0.5}");

        ck_assert_uint_eq(journal_count_originals(j), 2);
        const JournalKnob *o = journal_find_original(j, "irq/41/affinity");
        ck_assert_ptr_nonnull(o);
        ck_assert_int_eq(o->domain, DOMAIN_IRQ);
        ck_assert_int_eq(o->kind, VALUE_CPU_LIST);
        ck_assert_str_eq(o->path, "proc/irq/41/smp_affinity_list");
        ck_assert_str_eq(o->value, "0-7");
        ck_assert(!o->reboot);
        o = journal_find_original(j, "boot/isolcpus");
        ck_assert_ptr_nonnull(o);
        ck_assert_int_eq(o->domain, DOMAIN_BOOT);
        ck_assert_int_eq(o->kind, VALUE_BOOTARG);
        ck_assert_ptr_null(o->path);
        ck_assert_ptr_null(o->value);
        ck_assert(o->reboot);
        /* Issue 11.1: a boot argument's original in each BLS entry. */
        ck_assert_uint_eq(o->n_files, 2);
        ck_assert_ptr_null(journal_find_original_file(o, "boot/loader/entries/a.conf")->value);
        ck_assert_str_eq(journal_find_original_file(o, "boot/loader/entries/b.conf")->value, "3");
        ck_assert_ptr_null(journal_find_original_file(o, "boot/loader/entries/c.conf"));
        ck_assert_uint_eq(journal_find_original(j, "irq/41/affinity")->n_files, 0);
        ck_assert_ptr_null(journal_find_original(j, "irq/42/affinity"));

        ck_assert_uint_eq(j->n_applied, 2);
        const JournalKnob *a = journal_find_applied(j, "boot/isolcpus");
        ck_assert_ptr_eq(a, &j->applied[1]);
        ck_assert_str_eq(a->value, "2-7");
        ck_assert(a->reboot);
        ck_assert_str_eq(journal_find_applied(j, "irq/41/affinity")->value, "0");

        ck_assert_str_eq(journal_find_unmovable(j, "irq/0/affinity"), "the kernel manages this IRQ's affinity");
        ck_assert_ptr_null(journal_find_unmovable(j, "irq/41/affinity"));

        ck_assert(j->transaction_open);
        const JournalTransaction *t = &j->transaction;
        ck_assert_int_eq(t->op, JOURNAL_OP_APPLY);
        ck_assert_str_eq(t->profile, "lab");
        ck_assert_str_eq(t->started, "2026-12-03T05:00:00Z");
        ck_assert_uint_eq(t->n_steps, 2);
        ck_assert_str_eq(t->steps[0].id, "sysctl/vm.swappiness");
        ck_assert_int_eq(t->steps[0].domain, DOMAIN_SYSCTL);
        ck_assert_str_eq(t->steps[0].before, "60");
        ck_assert_str_eq(t->steps[0].after, "10");
        ck_assert(t->steps[0].restore);
        ck_assert(!t->steps[1].restore);
        ck_assert_ptr_null(t->steps[1].after);
        ck_assert_uint_eq(t->n_new_originals, 1);
        ck_assert_str_eq(t->new_originals[0], "irq/41/affinity");

        ck_assert(j->has_last_error);
        ck_assert_str_eq(j->last_error.knob, "irq/41/affinity");
        ck_assert_int_eq(j->last_error.error, 5);
        ck_assert_ptr_null(j->last_error.detail);
        ck_assert_str_eq(j->last_error.at, "2026-12-03T05:00:01Z");

        assert_round_trip(text);
}
END_TEST

/* A journal of version 1 (every rtpart before "also") loads into the same entries, and is written
 * as version 2. */
START_TEST(test_version_1) {
        _cleanup_free_ char *text = as_written(EVERY_FIELD);
        char *v = strstr(text, "\"version\": 2");
        ck_assert_ptr_nonnull(v);
        _cleanup_free_ char *old = strdup(text);
        old[v - text + strlen("\"version\": ")] = '1';
        _cleanup_(journal_freep) Journal *j = parse_ok(old);
        ck_assert_uint_eq(journal_count_originals(j), 2);
        ck_assert_str_eq(journal_find_original(j, "irq/41/affinity")->value, "0-7");
        ck_assert_uint_eq(j->n_applied, 2);
        ck_assert_uint_eq(j->transaction.n_steps, 2);
        _cleanup_free_ char *out = NULL;
        ck_assert_int_eq(journal_format(j, &out, NULL), 0);
        ck_assert_str_eq(out, text);
}
END_TEST

START_TEST(test_short_forms) {
        /* A rolled back transaction's last_error, nothing applied, no transaction. */
        _cleanup_free_ char *text = as_written(
                "{\"version\": 2, \"profile\": null, \"hash\": null, \"applied_at\": null, \"originals\": {},"
                " \"applied\": [], \"unmovable\": {}, \"transaction\": null,"
                " \"last_error\": {\"message\": \"an interrupted apply was rolled back\", \"at\": \"2026-12-03T05:00:00Z\"},"
                " \"profile_path\": null, \"source\": null}");
        _cleanup_(journal_freep) Journal *j = parse_ok(text);
        ck_assert(!j->transaction_open);
        ck_assert(j->has_last_error);
        ck_assert_ptr_null(j->last_error.knob);
        ck_assert_ptr_null(j->profile);
        ck_assert_ptr_null(j->source);
        assert_round_trip(text);

        /* An older writer's journal loads, and is written with every key. */
        _cleanup_(journal_freep) Journal *old = parse_ok("{\"version\": 1, \"originals\": {}}");
        ck_assert_uint_eq(old->n_applied, 0);
        ck_assert_uint_eq(old->n_unmovable, 0);
        _cleanup_free_ char *out = NULL;
        ck_assert_int_eq(journal_format(old, &out, NULL), 0);
        _cleanup_free_ char *want = as_written(
                "{\"version\": 2, \"profile\": null, \"hash\": null, \"applied_at\": null, \"originals\": {},"
                " \"applied\": [], \"unmovable\": {}, \"transaction\": null, \"last_error\": null,"
                " \"profile_path\": null, \"source\": null}");
        ck_assert_str_eq(out, want);

        /* No file: an empty journal. */
        Journal *none = NULL;
        Error e = {};
        ck_assert_int_eq(journal_parse(NULL, 0, "state.json", &none, &e), 0);
        ck_assert_uint_eq(none->n_originals, 0);
        ck_assert(!none->transaction_open);
        journal_free(none);
}
END_TEST

/* Strings as JSON holds them: quotes, backslashes, control characters and UTF-8 come back exact;
 * what is not UTF-8 is refused, never written as a journal that cannot be read. */
START_TEST(test_strings) {
        static const char * const values[] = { "a \"quoted\" \\ value", "tab\there\nnewline\x01\x1f", "CPU 0–3 ✓",
                                               "\xf0\x9f\x98\x80", "" };
        _cleanup_(journal_freep) Journal *j = NULL;
        ck_assert_int_eq(journal_new(&j), 0);
        for (size_t i = 0; i < ELEMENTSOF(values); i++) {
                char id[32];
                snprintf(id, sizeof(id), "sysfs/odd%zu", i);
                Knob k = { .id = id, .domain = DOMAIN_SYSFS, .kind = VALUE_AUTO, .path = (char *) "sys/x\"y" };
                ck_assert_int_eq(journal_add_original(j, &k, values[i]), 0);
        }
        _cleanup_free_ char *text = NULL;
        ck_assert_int_eq(journal_format(j, &text, NULL), 0);
        _cleanup_(journal_freep) Journal *back = parse_ok(text);
        for (size_t i = 0; i < ELEMENTSOF(values); i++) {
                char id[32];
                snprintf(id, sizeof(id), "sysfs/odd%zu", i);
                ck_assert_str_eq(journal_find_original(back, id)->value, values[i]);
                ck_assert_str_eq(journal_find_original(back, id)->path, "sys/x\"y");
        }
        assert_round_trip(text);

        static const char * const bad[] = { "\xff", "a\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                ck_assert_msg(!utf8_valid(bad[i]), "%zu", i);
                _cleanup_(journal_freep) Journal *x = NULL;
                ck_assert_int_eq(journal_new(&x), 0);
                Knob k = {
                        .id = (char *) "sysfs/bad", .domain = DOMAIN_SYSFS, .kind = VALUE_AUTO, .path = (char *) "sys/b"
                };
                ck_assert_int_eq(journal_add_original(x, &k, bad[i]), 0);
                _cleanup_free_ char *t = NULL;
                ck_assert_int_eq(journal_format(x, &t, NULL), -EILSEQ);
                ck_assert_ptr_null(t);
        }
        /* The same inside a run ("also" with "values"): the second knob's value is no UTF-8. */
        _cleanup_(journal_freep) Journal *run = NULL;
        ck_assert_int_eq(journal_new(&run), 0);
        Knob k1 = { .id = (char *) "irq/1/affinity",
                    .domain = DOMAIN_IRQ,
                    .kind = VALUE_CPU_LIST,
                    .path = (char *) "proc/irq/1/smp_affinity_list" };
        Knob k2 = { .id = (char *) "irq/2/affinity",
                    .domain = DOMAIN_IRQ,
                    .kind = VALUE_CPU_LIST,
                    .path = (char *) "proc/irq/2/smp_affinity_list" };
        ck_assert_int_eq(journal_add_original(run, &k1, "0-3"), 0);
        ck_assert_int_eq(journal_add_original(run, &k2, "\xff"), 0);
        _cleanup_free_ char *rt = NULL;
        ck_assert_int_eq(journal_format(run, &rt, NULL), -EILSEQ);
        ck_assert_ptr_null(rt);
        ck_assert(utf8_valid("plain") && utf8_valid("\xc3\xa9") && utf8_valid("\xf4\x8f\xbf\xbf"));
}
END_TEST

/* Knobs found by id among many, with removals and additions (the engine's use). */
START_TEST(test_many_knobs) {
        _cleanup_(journal_freep) Journal *j = NULL;
        ck_assert_int_eq(journal_new(&j), 0);
        for (unsigned i = 0; i < 16384; i++) {
                char id[32], path[64];
                snprintf(id, sizeof(id), "irq/%u/affinity", i);
                snprintf(path, sizeof(path), "proc/irq/%u/smp_affinity_list", i);
                Knob k = { .id = id, .domain = DOMAIN_IRQ, .kind = VALUE_CPU_LIST, .path = path };
                ck_assert_int_eq(journal_add_original(j, &k, "0-63"), 0);
                ck_assert_int_eq(journal_set_unmovable(j, id, "managed"), 0);
        }
        journal_remove_original(j, "irq/7/affinity");
        ck_assert_ptr_null(journal_find_original(j, "irq/7/affinity"));
        ck_assert_uint_eq(journal_count_originals(j), 16383);
        Knob again = { .id = (char *) "irq/7/affinity", .domain = DOMAIN_IRQ, .kind = VALUE_CPU_LIST };
        ck_assert_int_eq(journal_add_original(j, &again, "1"), 0);
        ck_assert_str_eq(journal_find_original(j, "irq/7/affinity")->value, "1");
        ck_assert_str_eq(journal_find_original(j, "irq/16383/affinity")->path, "proc/irq/16383/smp_affinity_list");
        ck_assert_str_eq(journal_find_unmovable(j, "irq/9999/affinity"), "managed");
        ck_assert_ptr_null(journal_find_original(j, "irq/16384/affinity"));

        /* Saved and loaded again: the same file. */
        _cleanup_free_ char *text = NULL;
        ck_assert_int_eq(journal_format(j, &text, NULL), 0);
        assert_round_trip(text);
}
END_TEST

/* Knobs alike but for a number are written as one entry with "also" (and "values" or "befores"
 * where those differ): the journal grows with the kinds of change, not with the host's IRQs and
 * CPUs. Loaded again, every entry is back, in its order, with its own id, path and value. */
static void add_irq_like(Journal *j, unsigned n, bool step) {
        JournalKnob *l = step ? NULL : calloc(n, sizeof(JournalKnob));
        ck_assert(step || l);
        for (unsigned i = 0; i < n; i++) {
                char id[32], path[64], value[32];
                snprintf(id, sizeof(id), "irq/%u/affinity", i);
                snprintf(path, sizeof(path), "proc/irq/%u/smp_affinity_list", i);
                /* The first half alike, the second each its own (irqbalance spread them). */
                snprintf(value, sizeof(value), "%u-%u", i < n / 2 ? 0 : i % 64, 63);
                Knob k = { .id = id, .domain = DOMAIN_IRQ, .kind = VALUE_CPU_LIST, .path = path };
                if (step)
                        ck_assert_int_eq(journal_add_step(j, &k, value, "0", false), 0);
                else
                        ck_assert_int_eq(journal_add_original(j, &k, value), 0);
                if (!step)
                        ck_assert_int_eq(journal_knob_make(j, &k, "0", &l[i]), 0);
        }
        if (!step)
                ck_assert_int_eq(journal_set_applied(j, l, n), 0);
}

static void assert_same_knobs(const JournalKnob *a, size_t na, const JournalKnob *b, size_t nb) {
        size_t i = 0, k = 0;
        for (;; i++, k++) {
                while (i < na && a[i].removed)
                        i++;
                while (k < nb && b[k].removed)
                        k++;
                if (i >= na || k >= nb)
                        break;
                ck_assert_str_eq(a[i].id, b[k].id);
                ck_assert_pstr_eq(a[i].path, b[k].path);
                ck_assert_pstr_eq(a[i].value, b[k].value);
                ck_assert_int_eq(a[i].domain, b[k].domain);
                ck_assert_int_eq(a[i].kind, b[k].kind);
                ck_assert_int_eq(a[i].reboot, b[k].reboot);
        }
        ck_assert_uint_eq(i >= na, k >= nb);
}

START_TEST(test_also) {
        _cleanup_(journal_freep) Journal *j = NULL;
        ck_assert_int_eq(journal_new(&j), 0);
        add_irq_like(j, 8192, false);
        /* Per CPU, the number twice in the path; one with a leading zero stays alone. */
        for (unsigned c = 0; c < 1024; c++) {
                char id[32], path[96];
                snprintf(id, sizeof(id), "cpu/%u/governor", c);
                snprintf(path, sizeof(path), "sys/devices/system/cpu/cpu%u/cpufreq/scaling_governor", c);
                Knob k = { .id = id, .domain = DOMAIN_CPU, .kind = VALUE_AUTO, .path = path };
                ck_assert_int_eq(journal_add_original(j, &k, c == 5 ? NULL : "powersave"), 0);
        }
        Knob z = { .id = (char *) "cpu/07/governor", .domain = DOMAIN_CPU, .kind = VALUE_AUTO, .path = (char *) "p" };
        ck_assert_int_eq(journal_add_original(j, &z, "x"), 0);
        journal_remove_original(j, "irq/100/affinity");
        ck_assert_int_eq(journal_begin(j, JOURNAL_OP_APPLY, "lab", "2026-12-03T05:00:00Z"), 0);
        add_irq_like(j, 8192, true);

        _cleanup_free_ char *text = NULL;
        size_t size;
        ck_assert_int_eq(journal_format(j, &text, &size), 0);
        /* Version 1 wrote all 8192 IRQs in full, 3 times (4.4 MB): the values that differ remain. */
        ck_assert_msg(size < 160 * 1024, "%zu bytes", size);
        ck_assert_ptr_nonnull(strstr(text, "\"also\": \"1-99,101-4096\""));
        ck_assert_ptr_nonnull(strstr(text, "\"also\": \"1-4096\""));
        ck_assert_ptr_nonnull(strstr(text, "\"also\": \"4098-8191\""));

        _cleanup_(journal_freep) Journal *back = parse_ok(text);
        assert_same_knobs(j->originals, j->n_originals, back->originals, back->n_originals);
        ck_assert_uint_eq(journal_count_originals(back), 8191 + 1024 + 1);
        assert_same_knobs(j->applied, j->n_applied, back->applied, back->n_applied);
        ck_assert_uint_eq(back->n_applied, 8192);
        ck_assert_ptr_null(journal_find_original(back, "irq/100/affinity"));
        ck_assert_ptr_null(journal_find_original(back, "cpu/5/governor")->value);
        ck_assert_str_eq(journal_find_original(back, "cpu/1023/governor")->path,
                         "sys/devices/system/cpu/cpu1023/cpufreq/scaling_governor");
        ck_assert_str_eq(journal_find_original(back, "cpu/07/governor")->value, "x");
        ck_assert_uint_eq(back->transaction.n_steps, 8192);
        for (size_t i = 0; i < 8192; i++) {
                const JournalStep *a = &j->transaction.steps[i], *b = &back->transaction.steps[i];
                ck_assert_str_eq(a->id, b->id);
                ck_assert_str_eq(a->path, b->path);
                ck_assert_str_eq(a->before, b->before);
                ck_assert_str_eq(a->after, b->after);
        }
        assert_round_trip(text);
}
END_TEST

/* ---- strict load ---- */

typedef struct BadCase {
        const char *originals; /* the "originals" object */
        const char *rest;      /* more top-level members, after it */
        const char *message;   /* journal_parse()'s, exactly */
} BadCase;

#define ORIG_OK \
        "{\"irq/41/affinity\": {\"domain\": \"irq\", \"kind\": \"cpu-list\", \"path\": \"p\", \"value\": \"0-7\"}}"
#define STEP(extra) \
        "{\"domain\": \"irq\", \"kind\": \"cpu-list\", \"path\": \"p\", \"knob\": \"irq/41/affinity\", " extra "}"

static const BadCase bad_cases[] = {
        { "{\"irq/41/affinity\": {\"domain\": \"irqq\", \"kind\": \"cpu-list\", \"path\": \"p\", \"value\": \"0-7\"}}",
          "", "state.json: originals[\"irq/41/affinity\"]: unknown domain \"irqq\"" },
        { "{\"irq/41/affinity\": {\"domain\": \"irq\", \"kind\": \"cpulist\", \"path\": \"p\", \"value\": \"0-7\"}}",
          "", "state.json: originals[\"irq/41/affinity\"]: unknown kind \"cpulist\"" },
        { "{\"irq/41/affinity\": {\"domain\": \"irq\", \"kind\": \"cpu-list\", \"path\": \"p\", \"value\": 7}}", "",
          "state.json: originals[\"irq/41/affinity\"]: \"value\" is an integer, not a string or null" },
        { "{\"irq/41/affinity\": {\"domain\": \"irq\", \"kind\": \"cpu-list\", \"path\": \"p\", \"value\": [\"0\"]}}",
          "", "state.json: originals[\"irq/41/affinity\"]: \"value\" is an array, not a string or null" },
        { "{\"irq/41/affinity\": {\"domain\": \"irq\", \"kind\": \"cpu-list\", \"path\": \"p\"}}", "",
          "state.json: originals[\"irq/41/affinity\"]: \"value\" is missing" },
        { "{\"irq/41/affinity\": {\"kind\": \"cpu-list\", \"path\": \"p\", \"value\": \"0\"}}", "",
          "state.json: originals[\"irq/41/affinity\"]: \"domain\" is missing" },
        { "{\"irq/41/affinity\": {\"domain\": 3, \"kind\": \"cpu-list\", \"path\": \"p\", \"value\": \"0\"}}", "",
          "state.json: originals[\"irq/41/affinity\"]: \"domain\" is an integer, not a string" },
        { "{\"irq/41/affinity\": {\"domain\": \"irq\", \"kind\": \"cpu-list\", \"path\": 4, \"value\": \"0\"}}", "",
          "state.json: originals[\"irq/41/affinity\"]: \"path\" is an integer, not a string or null" },
        { "{\"irq/41/affinity\": \"0-7\"}", "",
          "state.json: originals[\"irq/41/affinity\"]: is a string, not an object" },
        { "{\"boot/isolcpus\": {\"domain\": \"boot\", \"kind\": \"bootarg\", \"value\": null, \"files\": []}}", "",
          "state.json: originals[\"boot/isolcpus\"]: \"files\" is an array, not an object" },
        { "{\"boot/isolcpus\": {\"domain\": \"boot\", \"kind\": \"bootarg\", \"value\": null, \"files\": {\"a.conf\": 3}}}",
          "", "state.json: originals[\"boot/isolcpus\"]: \"files\"[\"a.conf\"] is an integer, not a string or null" },
        { ORIG_OK,
          ", \"applied\": [{\"domain\": \"irqq\", \"kind\": \"cpu-list\", \"desired\": \"0\", \"knob\": \"irq/41/affinity\"}]",
          "state.json: applied[0] (irq/41/affinity): unknown domain \"irqq\"" },
        { ORIG_OK,
          ", \"applied\": [{\"domain\": \"irq\", \"kind\": \"cpu-list\", \"desired\": 0, \"knob\": \"irq/41/affinity\"}]",
          "state.json: applied[0] (irq/41/affinity): \"desired\" is an integer, not a string or null" },
        { ORIG_OK, ", \"applied\": [{\"domain\": \"irq\", \"kind\": \"cpu-list\", \"desired\": \"0\"}]",
          "state.json: applied[0]: \"knob\" is missing" },
        { ORIG_OK,
          ", \"applied\": [{\"domain\": \"irq\", \"kind\": \"cpu-list\", \"desired\": \"0\", \"knob\": \"k\", \"reboot\": \"no\"}]",
          "state.json: applied[0] (k): \"reboot\" is a string, not true or false" },
        { ORIG_OK, ", \"applied\": {}", "state.json: \"applied\" is an object, not an array" },
        { ORIG_OK, ", \"unmovable\": {\"irq/0/affinity\": 1}",
          "state.json: unmovable[\"irq/0/affinity\"]: is an integer, not a string" },
        { ORIG_OK, ", \"transaction\": {\"op\": \"undo\", \"steps\": []}",
          "state.json: transaction: unknown op \"undo\"" },
        { ORIG_OK, ", \"transaction\": {\"op\": \"apply\", \"steps\": [" STEP("\"before\": \"0\", \"after\": 1") "]}",
          "state.json: transaction.steps[0] (irq/41/affinity): \"after\" is an integer, not a string or null" },
        { ORIG_OK,
          ", \"transaction\": {\"op\": \"apply\", \"steps\": [{\"domain\": \"irq\", \"kind\": \"x\", \"knob\": \"k\", \"before\": null, \"after\": null}]}",
          "state.json: transaction.steps[0] (k): unknown kind \"x\"" },
        { ORIG_OK, ", \"transaction\": {\"op\": \"apply\", \"steps\": [], \"new_originals\": [1]}",
          "state.json: transaction: \"new_originals\"[0] is an integer, not a string" },
        { ORIG_OK, ", \"transaction\": 1", "state.json: transaction: is an integer, not an object or null" },
        { ORIG_OK, ", \"last_error\": {\"errno\": \"EIO\"}",
          "state.json: last_error: \"errno\" is a string, not an integer" },
        { ORIG_OK, ", \"profile\": 7", "state.json: \"profile\" is an integer, not a string or null" },
        { ORIG_OK, ", \"source\": \"lab\"", "state.json: \"source\" is a string, not an object or null" },
        { "{\"irq/41/affinity\": {\"domain\": \"irq\", \"kind\": \"cpu-list\", \"path\": \"p\", \"value\": \"0\", \"also\": 42}}",
          "", "state.json: originals[\"irq/41/affinity\"]: \"also\" is an integer, not a string" },
        { "{\"irq/41/affinity\": {\"domain\": \"irq\", \"kind\": \"cpu-list\", \"path\": \"p\", \"value\": \"0\", \"also\": \"40\"}}",
          "", "state.json: originals[\"irq/41/affinity\"]: \"also\" has 40-40: not ascending, or too many knobs" },
        { "{\"irq/41/affinity\": {\"domain\": \"irq\", \"kind\": \"cpu-list\", \"path\": \"p\", \"value\": \"0\", \"also\": \"42-\"}}",
          "", "state.json: originals[\"irq/41/affinity\"]: \"also\" has a range without its end" },
        { "{\"irq/41/affinity\": {\"domain\": \"irq\", \"kind\": \"cpu-list\", \"path\": \"p\", \"value\": \"0\", \"also\": \"42;43\"}}",
          "",
          "state.json: originals[\"irq/41/affinity\"]: \"also\" is not a list of ascending numbers and ranges (\"42-97,120\")" },
        { "{\"irq/41/affinity\": {\"domain\": \"irq\", \"kind\": \"cpu-list\", \"path\": \"p\", \"value\": \"0\", \"also\": \"42-999999999\"}}",
          "",
          "state.json: originals[\"irq/41/affinity\"]: \"also\" has 42-999999999: not ascending, or too many knobs" },
        { "{\"irq/default\": {\"domain\": \"irq\", \"kind\": \"cpu-list\", \"path\": \"p\", \"value\": \"0\", \"also\": \"1\"}}",
          "", "state.json: originals[\"irq/default\"]: \"also\" is given, but the knob id has no number to replace" },
        { "{\"irq/41/affinity\": {\"domain\": \"irq\", \"kind\": \"cpu-list\", \"path\": \"p\", \"value\": \"0\", \"also\": \"42-43\", \"values\": [\"1\"]}}",
          "",
          "state.json: originals[\"irq/41/affinity\"]: \"values\" is not an array of one value for each knob of \"also\" (2)" },
        { "{\"irq/41/affinity\": {\"domain\": \"irq\", \"kind\": \"cpu-list\", \"path\": \"p\", \"value\": \"0\", \"also\": \"42\", \"values\": [1]}}",
          "", "state.json: originals[\"irq/41/affinity\"]: \"values\"[0] is an integer, not a string or null" },
        { ORIG_OK,
          ", \"transaction\": {\"op\": \"apply\", \"steps\": [" STEP(
                  "\"before\": \"0\", \"after\": \"1\", \"also\": \"42\", \"befores\": {}") "]}",
          "state.json: transaction.steps[0] (irq/41/affinity): \"befores\" is not an array of one value for each knob of \"also\" (1)" },
        { "[]", "", "state.json: \"originals\" is an array, not an object" },
};

START_TEST(test_wrong_entry) {
        const BadCase *c = &bad_cases[_i];
        _cleanup_free_ char *text = NULL;
        ck_assert_int_ge(asprintf(&text, "{\"version\": 1, \"originals\": %s%s}", c->originals, c->rest), 0);
        _cleanup_free_ char *msg = parse_refused(text);
        ck_assert_str_eq(msg, c->message);
}
END_TEST

START_TEST(test_not_a_journal) {
        static const char * const texts[] = { "",
                                              "{",
                                              "[]",
                                              "{\"version\": 3, \"originals\": {}}",
                                              "{\"version\": 0, \"originals\": {}}",
                                              "{\"originals\": {}}" };
        for (size_t i = 0; i < ELEMENTSOF(texts); i++) {
                _cleanup_free_ char *msg = parse_refused(texts[i]);
                ck_assert_msg(strncmp(msg, "state.json: not ", 16) == 0, "%s", msg);
        }
}
END_TEST

/* ---- journals written by apply and revert, on the fixtures ---- */

static char *host_dir;

static void setup(void) {
        host_dir = NULL;
}

static void teardown(void) {
        if (host_dir)
                tree_remove(host_dir);
        free(host_dir);
        host_dir = NULL;
}

static void assert_file_round_trip(const char *what) {
        _cleanup_free_ char *text = tree_read(host_dir, "var/lib/rtpart/state.json");
        ck_assert_msg(text, "%s: no journal", what);
        assert_round_trip(text);
}

static const char * const hosts[] = { "vm", "intel-2s", "epyc" };

START_TEST(test_apply_round_trip) {
        host_dir = tree_copy_host(hosts[_i]);
        EngineResult res = {};
        ck_assert_int_eq(tree_apply(host_dir, "realtime-virtual-host", &res), 0);
        ck_assert_uint_gt(res.written, 0);
        engine_result_done(&res);
        assert_file_round_trip("apply");

        /* What apply recorded: the profile, an original and an applied entry per written knob. */
        Root *root;
        ck_assert_int_eq(root_new(host_dir, &root), 0);
        _cleanup_(journal_freep) Journal *j = test_journal_load(root);
        ck_assert_str_eq(j->profile, "realtime-virtual-host");
        ck_assert_ptr_nonnull(j->hash);
        ck_assert_ptr_nonnull(j->source);
        ck_assert_ptr_nonnull(j->applied_at);
        ck_assert(!j->transaction_open);
        ck_assert(!j->has_last_error);
        ck_assert_uint_gt(j->n_applied, 0);
        for (size_t i = 0; i < j->n_applied; i++)
                ck_assert_ptr_eq(journal_find_applied(j, j->applied[i].id), &j->applied[i]);
        root_free(root);

        /* The same profile again: nothing to write, the same journal. */
        _cleanup_free_ char *before = tree_read(host_dir, "var/lib/rtpart/state.json");
        ck_assert_int_eq(tree_apply(host_dir, "realtime-virtual-host", &res), 0);
        ck_assert_uint_eq(res.written, 0);
        engine_result_done(&res);
        _cleanup_free_ char *after = tree_read(host_dir, "var/lib/rtpart/state.json");
        ck_assert_str_eq(after, before);

        /* Another profile: the previous one's knobs restored, its originals forgotten. */
        ck_assert_int_eq(tree_apply(host_dir, "cpu-partitioning", &res), 0);
        engine_result_done(&res);
        assert_file_round_trip("apply over another profile");

        ck_assert_int_eq(tree_revert(host_dir), 0);
        assert_file_round_trip("revert");
        ck_assert_int_eq(root_new(host_dir, &root), 0);
        _cleanup_(journal_freep) Journal *r = test_journal_load(root);
        ck_assert_ptr_null(r->profile);
        ck_assert_uint_eq(r->n_applied, 0);
        ck_assert_uint_eq(r->n_unmovable, 0);
        root_free(root);
}
END_TEST

/* Whether a transaction is open, as every command asks before it starts: from the writer's layout
 * without a parse, from any other layout by parsing it, the same answer either way. */
START_TEST(test_transaction_open) {
        host_dir = tree_copy_host("vm");
        Root *root;
        JournalStore *journal;
        ck_assert_int_eq(root_new(host_dir, &root), 0);
        ck_assert_int_eq(journal_store_open(root, &journal), 0);
        ck_assert(!journal_store_transaction_open(journal)); /* no journal */

        _cleanup_(journal_freep) Journal *j = parse_ok(EVERY_FIELD);
        ck_assert(j->transaction_open);
        _cleanup_free_ char *open_text = NULL;
        ck_assert_int_eq(journal_format(j, &open_text, NULL), 0);
        test_write(host_dir, "var/lib/rtpart/state.json", open_text);
        ck_assert(journal_store_transaction_open(journal));

        journal_end(j);
        _cleanup_free_ char *closed = NULL;
        ck_assert_int_eq(journal_format(j, &closed, NULL), 0);
        ck_assert_ptr_nonnull(strstr(closed, "\n \"transaction\": null,\n"));
        test_write(host_dir, "var/lib/rtpart/state.json", closed);
        ck_assert(!journal_store_transaction_open(journal));

        /* Compact, and indented by jansson (the writer before): parsed. */
        json_t *doc = json_loads(open_text, 0, NULL);
        ck_assert_ptr_nonnull(doc);
        _cleanup_free_ char *compact = json_dumps(doc, JSON_COMPACT), *indented = json_dumps(doc, JSON_INDENT(1));
        test_write(host_dir, "var/lib/rtpart/state.json", compact);
        ck_assert(journal_store_transaction_open(journal));
        test_write(host_dir, "var/lib/rtpart/state.json", indented);
        ck_assert(journal_store_transaction_open(journal));

        /* A line " \"transaction\": null" before the document's own member, of an object nested in
         * it (an unknown member first, as another writer may put it): parsed, and open. */
        json_t *front = json_pack("{s:{s:n}}", "zzz", "transaction");
        ck_assert_ptr_nonnull(front);
        ck_assert_int_eq(json_object_update(front, doc), 0);
        _cleanup_free_ char *nested = json_dumps(front, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
        json_decref(front);
        _cleanup_free_ char *flat = NULL;
        char *at = strstr(nested, "\n  \"transaction\": null"); /* one space in, as the top-level ones */
        ck_assert_ptr_nonnull(at);
        ck_assert(at < strstr(nested, "\n \"transaction\": {"));
        ck_assert_int_ge(asprintf(&flat, "%.*s%s", (int) (at - nested + 1), nested, at + 2), 0);
        test_write(host_dir, "var/lib/rtpart/state.json", flat);
        ck_assert(journal_store_transaction_open(journal));
        json_decref(doc);

        test_write(host_dir, "var/lib/rtpart/state.json", "not json");
        ck_assert(!journal_store_transaction_open(journal));
        journal_store_free(journal);
        root_free(root);
}
END_TEST

/* ---- a wrong journal refused by the engine and by rtpartctl, changing nothing ---- */

/* Applies realtime-virtual-host to a copy of the vm fixture, then spoils the first original of
 * the journal as `how` says; returns its id. */
static char *spoil_journal(const char *how) {
        host_dir = tree_copy_host("vm");
        ck_assert_int_eq(tree_apply(host_dir, "realtime-virtual-host", NULL), 0);
        _cleanup_free_ char *text = tree_read(host_dir, "var/lib/rtpart/state.json");
        json_t *doc = json_loads(text, 0, NULL);
        ck_assert_ptr_nonnull(doc);
        json_t *originals = json_object_get(doc, "originals");
        void *it = json_object_iter(originals);
        ck_assert_ptr_nonnull(it);
        char *id = strdup(json_object_iter_key(it));
        json_t *e = json_object_iter_value(it);
        if (streq(how, "domain"))
                json_object_set_new(e, "domain", json_string("irqq"));
        else if (streq(how, "kind"))
                json_object_set_new(e, "kind", json_string("cpulist"));
        else if (streq(how, "value"))
                json_object_set_new(e, "value", json_integer(7));
        else
                ck_abort_msg("%s", how);
        _cleanup_free_ char *dump = json_dumps(doc, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
        json_decref(doc);
        test_write(host_dir, "var/lib/rtpart/state.json", dump);
        return id;
}

static const char * const spoils[] = { "domain", "kind", "value" };

static char *spoil_message(const char *how, const char *id) {
        char *m;
        if (streq(how, "domain"))
                ck_assert_int_ge(asprintf(&m, "originals[\"%s\"]: unknown domain \"irqq\"", id), 0);
        else if (streq(how, "kind"))
                ck_assert_int_ge(asprintf(&m, "originals[\"%s\"]: unknown kind \"cpulist\"", id), 0);
        else
                ck_assert_int_ge(asprintf(&m, "originals[\"%s\"]: \"value\" is an integer, not a string or null", id),
                                 0);
        return m;
}

START_TEST(test_engine_refuses) {
        const char *how = spoils[_i];
        _cleanup_free_ char *id = spoil_journal(how), *msg = spoil_message(how, id);
        _cleanup_free_ char *tree = tree_snapshot(host_dir),
                            *journal = tree_read(host_dir, "var/lib/rtpart/state.json");
        Root *root;
        Host *host;
        test_open_host(host_dir, &root, &host);

        EngineResult res = {};
        JournalStore *store = test_journal_locked(root);
        ck_assert_int_eq(engine_revert(root, store, host, &res), -EBADMSG);
        ck_assert_uint_eq(res.written, 0);
        ck_assert_int_eq(res.error.code, -EBADMSG);
        ck_assert_ptr_null(res.error.pointer); /* not a knob's write */
        ck_assert_msg(res.error.message && strstr(res.error.message, msg), "%s", strempty(res.error.message));
        engine_result_done(&res);
        ck_assert_int_eq(engine_recover(root, store, host, &res), -EBADMSG);
        engine_result_done(&res);
        journal_store_free(store);
        host_free(host);
        root_free(root);
        ck_assert_int_eq(tree_apply(host_dir, "cpu-partitioning", &res), -EBADMSG);
        ck_assert_ptr_nonnull(strstr(strempty(res.error.message), msg));
        engine_result_done(&res);

        _cleanup_free_ char *tree_after = tree_snapshot(host_dir),
                            *journal_after = tree_read(host_dir, "var/lib/rtpart/state.json");
        tree_assert_same(tree, tree_after, "the tree after a refused journal");
        ck_assert_str_eq(journal_after, journal);
}
END_TEST

/* The real rtpartctl: revert, apply and verify of a wrong journal are exit 1 naming the entry,
 * and change neither the host nor the journal. */
START_TEST(test_rtpartctl_refuses) {
        const char *how = spoils[_i];
        _cleanup_free_ char *id = spoil_journal(how), *msg = spoil_message(how, id);
        _cleanup_free_ char *tree = tree_snapshot(host_dir),
                            *journal = tree_read(host_dir, "var/lib/rtpart/state.json");
        static const char * const verbs[] = { "revert", "apply cpu-partitioning", "verify", "status" };

        for (size_t v = 0; v < ELEMENTSOF(verbs); v++) {
                _cleanup_free_ char *out = NULL, *args = NULL;
                ck_assert_int_ge(asprintf(&args, "--no-daemon %s", verbs[v]), 0);
                int st = tree_ctl(host_dir, &out, args);
                ck_assert_msg(st == 1, "rtpartctl %s on a journal with a wrong %s: exit %d, not 1: %s", verbs[v], how,
                              st, strempty(out));
                ck_assert_msg(strstr(strempty(out), msg), "rtpartctl %s: the message does not name the entry (%s): %s",
                              verbs[v], msg, strempty(out));
                _cleanup_free_ char *tree_after = tree_snapshot(host_dir),
                                    *journal_after = tree_read(host_dir, "var/lib/rtpart/state.json");
                tree_assert_same(tree, tree_after, verbs[v]);
                ck_assert_msg(streq(journal_after, journal), "rtpartctl %s changed the journal", verbs[v]);
        }
}
END_TEST

static Suite *journal_suite(void) {
        Suite *s = suite_create("journal");
        TCase *tc = tcase_create("format");
        tcase_add_test(tc, test_every_field);
        tcase_add_test(tc, test_short_forms);
        tcase_add_test(tc, test_many_knobs);
        tcase_add_test(tc, test_strings);
        tcase_add_test(tc, test_version_1);
        tcase_add_test(tc, test_also);
        suite_add_tcase(s, tc);

        tc = tcase_create("strict");
        tcase_add_loop_test(tc, test_wrong_entry, 0, ELEMENTSOF(bad_cases));
        tcase_add_test(tc, test_not_a_journal);
        suite_add_tcase(s, tc);

        tc = tcase_create("apply");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 120);
        tcase_add_loop_test(tc, test_apply_round_trip, 0, ELEMENTSOF(hosts));
        tcase_add_loop_test(tc, test_engine_refuses, 0, ELEMENTSOF(spoils));
        tcase_add_test(tc, test_transaction_open);
        suite_add_tcase(s, tc);

        tc = tcase_create("rtpartctl");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 120);
        tcase_add_loop_test(tc, test_rtpartctl_refuses, 0, ELEMENTSOF(spoils));
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return test_run(journal_suite());
}
