/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "metrics.h"
#include "strv.h"
#include "test-util.h"

/* daemon/rtpartd/metrics.c: the text exposition format of rtpartd's metrics (every family with HELP and
 * TYPE before its samples, names by the conventions, label values escaped), the counts taken from
 * an audit document, and the atomic writer. */

static const MetricsDomain domains[] = {
        { .name = "irq", .owned = 35, .drifted = 2 },
        { .name = "sysctl", .owned = 12, .drifted = 0 },
        { .name = "task", .drifted = 3, .no_knobs = true },
};

static MetricsAuditCpu audit_cpus[] = {
        { .cpu = 2, .interrupts = 7, .tick = 5, .softirqs = 3, .threads = 1, .noisy = true },
        { .cpu = 3, .interrupts = 0, .tick = 1, .softirqs = 0, .threads = 0, .noisy = false },
};

static const MetricsAudit audit = {
        .usec = 1796324754377123ULL,
        .window_usec = 5000000ULL,
        .cpus = audit_cpus,
        .n_cpus = ELEMENTSOF(audit_cpus),
};

static MetricsState full_state(const char *profile) {
        return (MetricsState) {
                .profile = profile,
                .in_sync = false,
                .reboot_required = true,
                .domains = domains,
                .n_domains = ELEMENTSOF(domains),
                .drift_events = 4,
                .apply_usec = 1796324700000999ULL,
                .apply_ok = true,
                .audit = &audit,
        };
}

static char *render(const MetricsState *s) {
        char *text = NULL;
        ck_assert_int_eq(metrics_render(s, &text), 0);
        ck_assert_ptr_nonnull(text);
        return text;
}

static bool has_line(const char *text, const char *line) {
        size_t n = strlen(line);
        for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                if (strncmp(p, line, n) == 0 && (p[n] == '\n' || p[n] == 0))
                        return true;
        return false;
}

/* Checks the text line by line against the exposition format as node_exporter's parser takes it:
 * "# HELP NAME TEXT" then "# TYPE NAME gauge|counter" open a family, which appears once; a sample
 * is "NAME[{label="value",…}] NUMBER" of the open family; counters end _total and no name ends
 * _count, _sum or _bucket. Returns the family names, in order. */
static char **check_format(const char *text) {
        regex_t help, type, sample;
        char **names = NULL;
        ck_assert_int_eq(regcomp(&help, "^# HELP (rtpart_[a-z_]+) [^\n]+$", REG_EXTENDED), 0);
        ck_assert_int_eq(regcomp(&type, "^# TYPE (rtpart_[a-z_]+) (gauge|counter)$", REG_EXTENDED), 0);
        ck_assert_int_eq(
                regcomp(&sample,
                        "^(rtpart_[a-z_]+)(\\{[a-z_]+=\"([^\"\\\\\n]|\\\\[\"\\\\n])*\"(,[a-z_]+=\"([^\"\\\\\n]|"
                        "\\\\[\"\\\\n])*\")*\\})? (0|[1-9][0-9]*)(\\.[0-9]+)?$",
                        REG_EXTENDED),
                0);
        ck_assert_msg(*text && text[strlen(text) - 1] == '\n', "the text must end with a line feed");

        _cleanup_free_ char *copy = strdup(text);
        char *family = NULL, *save = NULL;
        bool typed = false;
        ck_assert_ptr_nonnull(copy);
        for (char *line = strtok_r(copy, "\n", &save), **l = &line; line; line = strtok_r(NULL, "\n", &save)) {
                regmatch_t m[3];
                if (regexec(&help, *l, 2, m, 0) == 0) {
                        ck_assert_msg(!family || typed, "HELP without TYPE before: %s", *l);
                        free(family);
                        family = strndup(*l + m[1].rm_so, (size_t) (m[1].rm_eo - m[1].rm_so));
                        ck_assert_msg(!strv_contains(names, family), "family %s appears twice", family);
                        ck_assert_int_ge(strv_extend(&names, family), 0);
                        typed = false;
                        size_t n = strlen(family);
                        ck_assert_msg(!(n > 6 && streq(family + n - 6, "_count")) &&
                                              !(n > 4 && streq(family + n - 4, "_sum")),
                                      "%s: a suffix of histograms and summaries", family);
                } else if (regexec(&type, *l, 3, m, 0) == 0) {
                        ck_assert_msg(family && !typed, "TYPE without HELP: %s", *l);
                        ck_assert_msg(strncmp(*l + m[1].rm_so, family, strlen(family)) == 0 &&
                                              (size_t) (m[1].rm_eo - m[1].rm_so) == strlen(family),
                                      "TYPE of another family: %s", *l);
                        bool counter = strncmp(*l + m[2].rm_so, "counter", 7) == 0;
                        size_t n = strlen(family);
                        ck_assert_msg(counter == (n > 6 && streq(family + n - 6, "_total")),
                                      "%s: counters, and only they, end _total", family);
                        typed = true;
                } else {
                        ck_assert_msg(regexec(&sample, *l, 2, m, 0) == 0, "not a sample line: '%s'", *l);
                        ck_assert_msg(family && typed, "sample before its HELP and TYPE: %s", *l);
                        ck_assert_msg(strncmp(*l + m[1].rm_so, family, strlen(family)) == 0 &&
                                              (size_t) (m[1].rm_eo - m[1].rm_so) == strlen(family),
                                      "sample of another family than %s: %s", family, *l);
                }
        }
        ck_assert_msg(!family || typed, "HELP without TYPE at the end");
        free(family);
        regfree(&help);
        regfree(&type);
        regfree(&sample);
        return names;
}

START_TEST(test_every_metric) {
        MetricsState s = full_state("realtime-virtual-host");
        _cleanup_free_ char *text = render(&s);
        _cleanup_strv_free_ char **names = check_format(text);
        static const char * const expected[] = {
                "rtpart_profile_info",
                "rtpart_profile_applied",
                "rtpart_in_sync",
                "rtpart_reboot_required",
                "rtpart_drifted_knobs",
                "rtpart_owned_knobs",
                "rtpart_drift_events_total",
                "rtpart_last_apply_timestamp_seconds",
                "rtpart_last_apply_success",
                "rtpart_last_audit_timestamp_seconds",
                "rtpart_last_audit_window_seconds",
                "rtpart_audit_interrupts",
                "rtpart_audit_tick_interrupts",
                "rtpart_audit_softirqs",
                "rtpart_audit_noise_threads",
                "rtpart_audit_noisy",
        };
        ck_assert_uint_eq(strv_length(names), ELEMENTSOF(expected));
        for (size_t i = 0; i < ELEMENTSOF(expected); i++)
                ck_assert_str_eq(names[i], expected[i]);

        static const char * const samples[] = {
                "rtpart_profile_info{profile=\"realtime-virtual-host\"} 1",
                "rtpart_profile_applied 1",
                "rtpart_in_sync 0",
                "rtpart_reboot_required 1",
                "rtpart_drifted_knobs{domain=\"irq\"} 2",
                "rtpart_drifted_knobs{domain=\"sysctl\"} 0",
                "rtpart_drifted_knobs{domain=\"task\"} 3",
                "rtpart_owned_knobs{domain=\"irq\"} 35",
                "rtpart_owned_knobs{domain=\"sysctl\"} 12",
                "rtpart_drift_events_total 4",
                "rtpart_last_apply_timestamp_seconds 1796324700.000",
                "rtpart_last_apply_success 1",
                "rtpart_last_audit_timestamp_seconds 1796324754.377",
                "rtpart_last_audit_window_seconds 5.000",
                "rtpart_audit_interrupts{cpu=\"2\"} 7",
                "rtpart_audit_interrupts{cpu=\"3\"} 0",
                "rtpart_audit_tick_interrupts{cpu=\"2\"} 5",
                "rtpart_audit_tick_interrupts{cpu=\"3\"} 1",
                "rtpart_audit_softirqs{cpu=\"2\"} 3",
                "rtpart_audit_noise_threads{cpu=\"2\"} 1",
                "rtpart_audit_noisy{cpu=\"2\"} 1",
                "rtpart_audit_noisy{cpu=\"3\"} 0",
        };
        for (size_t i = 0; i < ELEMENTSOF(samples); i++)
                ck_assert_msg(has_line(text, samples[i]), "no line '%s' in:\n%s", samples[i], text);
        /* User tasks are no knobs: drifted, never owned. */
        ck_assert_ptr_null(strstr(text, "rtpart_owned_knobs{domain=\"task\"}"));

        /* A failed apply. */
        s.apply_ok = false;
        _cleanup_free_ char *failed = render(&s);
        ck_assert(has_line(failed, "rtpart_last_apply_success 0"));
}
END_TEST

START_TEST(test_nothing_known) {
        /* No profile, no apply, no audit: their families are left out, the rest says so. */
        MetricsState s = { .in_sync = true };
        _cleanup_free_ char *text = render(&s);
        _cleanup_strv_free_ char **names = check_format(text);
        ck_assert(!strv_contains(names, "rtpart_profile_info"));
        ck_assert(!strv_contains(names, "rtpart_last_apply_timestamp_seconds"));
        ck_assert(!strv_contains(names, "rtpart_last_apply_success"));
        ck_assert(!strv_contains(names, "rtpart_last_audit_timestamp_seconds"));
        ck_assert(!strv_contains(names, "rtpart_audit_interrupts"));
        ck_assert(has_line(text, "rtpart_profile_applied 0"));
        ck_assert(has_line(text, "rtpart_in_sync 1"));
        ck_assert(has_line(text, "rtpart_reboot_required 0"));
        ck_assert(has_line(text, "rtpart_drift_events_total 0"));

        /* An audit of usec 0 is none. */
        MetricsAudit none = {};
        s.audit = &none;
        _cleanup_free_ char *again = render(&s);
        ck_assert_str_eq(again, text);
}
END_TEST

START_TEST(test_label_escaping) {
        static const struct {
                const char *value, *escaped;
        } cases[] = {
                { "lab", "lab" },
                { "a\"b", "a\\\"b" },
                { "back\\slash", "back\\\\slash" },
                { "two\nlines", "two\\nlines" },
                { "/etc/rtpart/profiles/\"x\\y\n.json", "/etc/rtpart/profiles/\\\"x\\\\y\\n.json" },
                { "", "" },
                { "ünïcode {} = ,", "ünïcode {} = ," },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                MetricsState s = full_state(cases[i].value);
                _cleanup_free_ char *text = render(&s);
                _cleanup_free_ char *line = NULL;
                ck_assert_int_ge(asprintf(&line, "rtpart_profile_info{profile=\"%s\"} 1", cases[i].escaped), 0);
                ck_assert_msg(has_line(text, line), "no line '%s' in:\n%s", line, text);
                _cleanup_strv_free_ char **names = check_format(text);
                ck_assert(strv_contains(names, "rtpart_profile_info"));
        }
}
END_TEST

START_TEST(test_audit_from_json) {
        json_error_t err;
        _cleanup_(json_decrefp) json_t *doc =
                json_loads("{\"seconds\": 2.0004, \"cpus\": \"2-3\", \"verdict\": \"noisy\", \"cpu\": ["
                           " {\"cpu\": 2, \"verdict\": \"noisy\","
                           "  \"interrupts\": [{\"source\": \"irq\", \"irq\": 41, \"count\": 5},"
                           "                  {\"source\": \"arch\", \"row\": \"RES\", \"count\": 2}],"
                           "  \"softirqs\": [{\"kind\": \"TIMER\", \"count\": 3}, {\"kind\": \"RCU\", \"count\": 4}],"
                           "  \"tick\": {\"count\": 2000, \"stopped\": false},"
                           "  \"threads\": [{\"pid\": 1, \"comm\": \"a\"}, {\"pid\": 2, \"comm\": \"b\"}]},"
                           " {\"cpu\": 3, \"verdict\": \"quiet\", \"interrupts\": [], \"softirqs\": [],"
                           "  \"tick\": {\"count\": 2, \"stopped\": true}, \"threads\": []}]}",
                           0, &err);
        ck_assert_msg(doc, "%s", err.text);
        MetricsAudit a = {};
        ck_assert_int_eq(metrics_audit_from_json(doc, 42, &a), 0);
        ck_assert_uint_eq(a.usec, 42);
        ck_assert_uint_eq(a.window_usec, 2000400);
        ck_assert_uint_eq(a.n_cpus, 2);
        ck_assert_uint_eq(a.cpus[0].cpu, 2);
        ck_assert_uint_eq(a.cpus[0].interrupts, 7);
        ck_assert_uint_eq(a.cpus[0].softirqs, 7);
        ck_assert_uint_eq(a.cpus[0].tick, 2000);
        ck_assert_uint_eq(a.cpus[0].threads, 2);
        ck_assert(a.cpus[0].noisy);
        ck_assert_uint_eq(a.cpus[1].cpu, 3);
        ck_assert_uint_eq(a.cpus[1].interrupts, 0);
        ck_assert_uint_eq(a.cpus[1].tick, 2);
        ck_assert(!a.cpus[1].noisy);
        metrics_audit_done(&a);
        ck_assert_ptr_null(a.cpus);

        static const char * const bad[] = {
                "{}",
                "{\"seconds\": 1}",
                "{\"cpu\": []}",
                "{\"seconds\": -1, \"cpu\": []}",
                "{\"seconds\": 1, \"cpu\": [{\"verdict\": \"quiet\"}]}",
                "{\"seconds\": 1, \"cpu\": [{\"cpu\": -2}]}",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_(json_decrefp) json_t *b = json_loads(bad[i], 0, NULL);
                ck_assert_ptr_nonnull(b);
                MetricsAudit x = {};
                ck_assert_int_eq(metrics_audit_from_json(b, 1, &x), -EBADMSG);
                ck_assert_ptr_null(x.cpus);
        }
}
END_TEST

static char *read_text(const char *path) {
        FILE *f = fopen(path, "re");
        ck_assert_ptr_nonnull(f);
        char buf[4096];
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = 0;
        return strdup(buf);
}

static unsigned count_entries(const char *dir) {
        DIR *d = opendir(dir);
        ck_assert_ptr_nonnull(d);
        unsigned n = 0;
        struct dirent *de;
        while ((de = readdir(d)))
                if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                        n++;
        closedir(d);
        return n;
}

START_TEST(test_atomic_write) {
        _cleanup_free_ char *dir = test_tmpdir(), *path = NULL, *text = NULL;
        _cleanup_(root_freep) Root *root = NULL;
        struct stat st1, st2;
        ck_assert_int_ge(asprintf(&path, "%s/%s", dir, METRICS_FILE), 0);
        ck_assert_int_ge(root_new(dir, &root), 0);

        /* Readable by the collector's user whatever the umask. */
        mode_t old = umask(077);
        ck_assert_int_eq(metrics_write(root, ".", "rtpart_in_sync 1\n"), 0);
        umask(old);
        ck_assert_int_eq(stat(path, &st1), 0);
        ck_assert_uint_eq(st1.st_mode & 07777, 0644);
        text = read_text(path);
        ck_assert_str_eq(text, "rtpart_in_sync 1\n");
        ck_assert_uint_eq(count_entries(dir), 1); /* no temporary file left */

        /* Replaced by rename: a new inode, never the old one rewritten in place. */
        ck_assert_int_eq(metrics_write(root, ".", "rtpart_in_sync 0\n"), 0);
        ck_assert_int_eq(stat(path, &st2), 0);
        ck_assert_uint_ne(st1.st_ino, st2.st_ino);
        free(text);
        text = read_text(path);
        ck_assert_str_eq(text, "rtpart_in_sync 0\n");
        ck_assert_uint_eq(count_entries(dir), 1);

        /* A missing directory is ENOENT, and nothing is made. */
        ck_assert_int_eq(metrics_write(root, "no-such-dir", "x 1\n"), -ENOENT);
        ck_assert_uint_eq(count_entries(dir), 1);
        /* A file where the directory should be is ENOTDIR. */
        ck_assert_int_eq(metrics_write(root, METRICS_FILE, "x 1\n"), -ENOTDIR);
        /* A directory that is a symlink out of the root resolves inside it: nothing outside. */
        _cleanup_free_ char *outside = test_tmpdir(), *link = NULL;
        ck_assert_int_ge(asprintf(&link, "%s/out", dir), 0);
        ck_assert_int_eq(symlink(outside, link), 0);
        ck_assert_int_eq(metrics_write(root, "out", "x 1\n"), -ENOENT);
        ck_assert_uint_eq(count_entries(outside), 0);
        test_rmtree(outside);
        test_rmtree(dir);
}
END_TEST

int main(void) {
        Suite *s = suite_create("metrics");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_every_metric);
        tcase_add_test(tc, test_nothing_known);
        tcase_add_test(tc, test_label_escaping);
        tcase_add_test(tc, test_audit_from_json);
        tcase_add_test(tc, test_atomic_write);
        suite_add_tcase(s, tc);
        return test_run(s);
}
