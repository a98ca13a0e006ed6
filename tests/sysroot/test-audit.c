/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "audit-advice.h"
#include "audit.h"
#include "profile.h"
#include "strv.h"
#include "test-util.h"

/* lib/observe/audit.c: the counter tables of /proc/interrupts and /proc/softirqs, and the document that
 * compares two snapshots, from snapshots made by hand: what is noise on which CPU, the tick, the
 * threads, and what each fix says. */

static const char interrupts_a[] =
        "           CPU0       CPU1       CPU2       CPU3       \n"
        " 36:          0        100          0          0 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\n"
        " 41:          5          0          0          0 IR-PCI-MSI 524288-edge      eth0-TxRx-0\n"
        " 42:          5          0          0          0 IR-PCI-MSI 524289-edge      eth0-TxRx-1\n"
        "NMI:          0          0          0          0   Non-maskable interrupts\n"
        "LOC:       1000       1000       1000       1000   Local timer interrupts\n"
        "RES:          0          3          0          0   Rescheduling interrupts\n"
        "ERR:          0\n";

static const char interrupts_b[] =
        "           CPU0       CPU1       CPU2       CPU3       \n"
        " 36:          0        100          0         40 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\n"
        " 41:          5          0         12          0 IR-PCI-MSI 524288-edge      eth0-TxRx-0\n"
        " 42:          5          0          0          7 IR-PCI-MSI 524289-edge      eth0-TxRx-1\n"
        " 43:          0          0          0          9 IR-PCI-MSI 524290-edge      eth0-TxRx-2\n"
        "NMI:          0          0          0          0   Non-maskable interrupts\n"
        "LOC:       3000       1002       3000       1002   Local timer interrupts\n"
        "RES:          0          3          0          4   Rescheduling interrupts\n"
        "ERR:          0\n";

static const char softirqs_a[] = "                    CPU0       CPU1       CPU2       CPU3       \n"
                                 "          HI:          0          0          0          0\n"
                                 "       TIMER:         10         10         10         10\n"
                                 "      NET_RX:          0          0          0          0\n";
static const char softirqs_b[] = "                    CPU0       CPU1       CPU2       CPU3       \n"
                                 "          HI:          0          0          0          0\n"
                                 "       TIMER:         10         10         10         10\n"
                                 "      NET_RX:          0          0         30          0\n";

START_TEST(test_counter_table) {
        CounterTable t = {};
        ck_assert_int_eq(counter_table_parse(interrupts_a, &t), 0);
        ck_assert_uint_eq(t.n_cpus, 4);
        ck_assert_uint_eq(t.n_rows, 7);
        const CounterRow *r = counter_table_find(&t, "36");
        ck_assert_ptr_nonnull(r);
        ck_assert_uint_eq(r->counts[1], 100);
        ck_assert_str_eq(r->text, "PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0");
        r = counter_table_find(&t, "LOC");
        ck_assert_uint_eq(r->counts[3], 1000);
        ck_assert_str_eq(r->text, "Local timer interrupts");
        /* A short row counts what it has. */
        r = counter_table_find(&t, "ERR");
        ck_assert_uint_eq(r->counts[0], 0);
        ck_assert_str_eq(r->text, "");
        ck_assert_ptr_null(counter_table_find(&t, "99"));
        counter_table_done(&t);

        ck_assert_int_eq(counter_table_parse(softirqs_b, &t), 0);
        ck_assert_uint_eq(counter_table_find(&t, "NET_RX")->counts[2], 30);
        counter_table_done(&t);

        /* Columns that skip offline CPUs: counts land at their CPU numbers. */
        ck_assert_int_eq(counter_table_parse("  CPU0  CPU5\n 7:  1  2  chip 3-edge x\n", &t), 0);
        ck_assert_uint_eq(t.n_cpus, 6);
        ck_assert_uint_eq(counter_table_find(&t, "7")->counts[5], 2);
        counter_table_done(&t);

        /* The header parsed as host discovery parses it (interrupts.h): tabs between columns, and
         * nothing but "CPUn" words. */
        ck_assert_int_eq(counter_table_parse("\tCPU0\tCPU2\n 7:  1  2  chip 3-edge x\n", &t), 0);
        ck_assert_uint_eq(t.n_cpus, 3);
        ck_assert_uint_eq(counter_table_find(&t, "7")->counts[2], 2);
        counter_table_done(&t);
        ck_assert_int_eq(counter_table_parse("  CPU0x  CPU1\n", &t), -EBADMSG);

        ck_assert_int_eq(counter_table_parse("", &t), -EBADMSG);
        ck_assert_int_eq(counter_table_parse("hello\n 1: 2\n", &t), -EBADMSG);
        ck_assert_int_eq(counter_table_parse("CPU99999\n", &t), -EBADMSG);
}
END_TEST

static AuditThread thread(int tid, const char *comm, bool kernel, uint64_t ticks, int cpu, const char *allowed,
                          const char *cgroup) {
        AuditThread t = {
                .pid = tid, .tid = tid, .start_ticks = 7, .cpu_ticks = ticks, .processor = cpu, .kernel = kernel
        };
        t.comm = strdup(comm);
        if (allowed) {
                ck_assert_int_eq(cpu_set_parse_list(allowed, &t.allowed, NULL), 0);
                t.has_allowed = true;
        }
        t.cgroup = cgroup ? strdup(cgroup) : NULL;
        return t;
}

static void snapshots(AuditSnapshot *a, AuditSnapshot *b) {
        *a = (AuditSnapshot) { .usec = 1000000 };
        *b = (AuditSnapshot) { .usec = 3000000 }; /* 2 s */
        ck_assert_int_eq(counter_table_parse(interrupts_a, &a->interrupts), 0);
        ck_assert_int_eq(counter_table_parse(interrupts_b, &b->interrupts), 0);
        ck_assert_int_eq(counter_table_parse(softirqs_a, &a->softirqs), 0);
        ck_assert_int_eq(counter_table_parse(softirqs_b, &b->softirqs), 0);
        a->has_softirqs = b->has_softirqs = true;
        a->threads = calloc(8, sizeof(AuditThread));
        b->threads = calloc(8, sizeof(AuditThread));
        /* by tid, as audit_snapshot() sorts them */
        a->threads[a->n_threads++] = thread(10, "ksoftirqd/2", true, 5, 2, NULL, NULL);
        a->threads[a->n_threads++] = thread(20, "busy", false, 100, 2, NULL, NULL);
        a->threads[a->n_threads++] = thread(30, "vcpu0", false, 100, 3, NULL, NULL);
        a->threads[a->n_threads++] = thread(40, "idle-user", false, 1, 0, NULL, NULL);
        a->threads[a->n_threads++] = thread(50, "self", false, 1, 2, NULL, NULL);
        b->threads[b->n_threads++] = thread(10, "ksoftirqd/2", true, 9, 2, "2", NULL);
        b->threads[b->n_threads++] = thread(20, "busy", false, 300, 2, "0-3", "/user.slice");
        b->threads[b->n_threads++] = thread(30, "vcpu0", false, 300, 3, "3", "/rtpart-rt/vm1");
        b->threads[b->n_threads++] = thread(40, "idle-user", false, 1, 0, "0-3", "/user.slice");
        b->threads[b->n_threads++] = thread(50, "self", false, 9, 2, "0-3", "/");
        b->threads[b->n_threads++] = thread(60, "newcomer", false, 4, 3, "3", "/");
}

static bool strv_contains_fragment(char **l, const char *fragment) {
        for (char **x = l; x && *x; x++)
                if (strstr(*x, fragment))
                        return true;
        return false;
}

static json_t *cpu_of(json_t *doc, int cpu) {
        size_t i;
        json_t *c;
        json_array_foreach (json_object_get(doc, "cpu"), i, c)
                if (json_integer_value(json_object_get(c, "cpu")) == cpu)
                        return c;
        ck_abort_msg("no CPU %d in the document", cpu);
        return NULL;
}

static json_t *find_by(json_t *list, const char *key, const char *value) {
        size_t i;
        json_t *e;
        json_array_foreach (list, i, e) {
                json_t *v = json_object_get(e, key);
                if ((json_is_string(v) && streq(json_string_value(v), value)) ||
                    (json_is_integer(v) && json_integer_value(v) == atoi(value)))
                        return e;
        }
        return NULL;
}

START_TEST(test_document) {
        AuditSnapshot a, b;
        snapshots(&a, &b);
        char *partitions[] = { "/rtpart-rt", NULL }, *managed[] = { "irq/42/affinity", NULL },
             *applied[] = { "irq/36/affinity", "irq/41/affinity", NULL };
        AuditScope s = { .source = "--cpus",
                         .partitions = partitions,
                         .irqs_managed = managed,
                         .irqs_applied = applied,
                         .profile = "realtime",
                         .self = 50,
                         .clock_ticks = 100 };
        ck_assert_int_eq(cpu_set_parse_list("1-3", &s.cpus, NULL), 0);
        ck_assert_int_eq(cpu_set_parse_list("3", &s.nohz_full, NULL), 0);
        json_t *doc = NULL;
        ck_assert_int_eq(audit_document(&s, &a, &b, &doc), 0);

        ck_assert_str_eq(json_string_value(json_object_get(doc, "cpus")), "1-3");
        ck_assert_str_eq(json_string_value(json_object_get(doc, "verdict")), "noisy");
        ck_assert_str_eq(json_string_value(json_object_get(doc, "noisy_cpus")), "2-3");
        ck_assert(json_real_value(json_object_get(doc, "seconds")) == 2.0);

        /* CPU 1: LOC +2 in 2 s is a stopped tick; nothing else: quiet. Only may-run threads. */
        json_t *c1 = cpu_of(doc, 1);
        ck_assert_str_eq(json_string_value(json_object_get(c1, "verdict")), "quiet");
        ck_assert(json_is_true(json_object_get(json_object_get(c1, "tick"), "stopped")));
        ck_assert_uint_eq(json_array_size(json_object_get(c1, "interrupts")), 0);
        ck_assert_uint_eq(json_array_size(json_object_get(c1, "threads")), 0);
        /* busy and idle-user may run on 1 (not self, not the partition's vcpu0). */
        ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(c1, "may_run"), "count")), 2);

        /* CPU 2: IRQ 41 (placed by rtpart, yet it fired), NET_RX, the tick running (not nohz_full),
         * the busy task and ksoftirqd/2 ran; self is left out. */
        json_t *c2 = cpu_of(doc, 2);
        ck_assert_str_eq(json_string_value(json_object_get(c2, "verdict")), "noisy");
        json_t *irq41 = find_by(json_object_get(c2, "interrupts"), "irq", "41");
        ck_assert_ptr_nonnull(irq41);
        ck_assert_int_eq(json_integer_value(json_object_get(irq41, "count")), 12);
        ck_assert(json_real_value(json_object_get(irq41, "rate")) == 6.0);
        ck_assert_str_eq(json_string_value(json_object_get(irq41, "name")), "eth0-TxRx-0");
        ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(irq41, "fix")), "rtpart placed IRQ 41"));
        json_t *rx = find_by(json_object_get(c2, "softirqs"), "kind", "NET_RX");
        ck_assert_int_eq(json_integer_value(json_object_get(rx, "count")), 30);
        ck_assert_ptr_null(find_by(json_object_get(c2, "softirqs"), "kind", "TIMER"));
        json_t *tick = json_object_get(c2, "tick");
        ck_assert(!json_is_true(json_object_get(tick, "stopped")));
        ck_assert_int_eq(json_integer_value(json_object_get(tick, "count")), 2000);
        ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(tick, "fix")), "not nohz_full"));
        json_t *busy = find_by(json_object_get(c2, "threads"), "comm", "busy");
        ck_assert_ptr_nonnull(busy);
        ck_assert(json_real_value(json_object_get(busy, "cpu_ms")) == 2000.0);
        ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(busy, "fix")), "cpuset.partitions"));
        json_t *ksoft = find_by(json_object_get(c2, "threads"), "comm", "ksoftirqd/2");
        ck_assert_ptr_nonnull(ksoft);
        ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(ksoft, "fix")), "softirq"));
        ck_assert_ptr_null(find_by(json_object_get(c2, "threads"), "comm", "self"));

        /* CPU 3 (nohz_full): IRQ 36 placed, 42 managed (refused), 43 not in the profile, RES; the
         * tick stopped; vcpu0 is in the partition and is not listed; newcomer (new, ran) is. */
        json_t *c3 = cpu_of(doc, 3);
        json_t *in = json_object_get(c3, "interrupts");
        ck_assert_ptr_nonnull(
                strstr(json_string_value(json_object_get(find_by(in, "irq", "42"), "fix")), "managed_irq"));
        json_t *irq43 = find_by(in, "irq", "43");
        ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(irq43, "fix")),
                                     "add {\"match\": \"eth0-TxRx-2\", \"cpus\": \"housekeeping\"} to irq.rules"));
        json_t *res = find_by(in, "row", "RES");
        ck_assert_int_eq(json_integer_value(json_object_get(res, "count")), 4);
        ck_assert(json_is_true(json_object_get(json_object_get(c3, "tick"), "stopped")));
        ck_assert(json_is_true(json_object_get(c3, "nohz_full")));
        ck_assert_ptr_null(find_by(json_object_get(c3, "threads"), "comm", "vcpu0"));
        ck_assert_ptr_nonnull(find_by(json_object_get(c3, "threads"), "comm", "newcomer"));

        json_decref(doc);
        audit_snapshot_done(&a);
        audit_snapshot_done(&b);
}
END_TEST

/* Every thread that may run on an audited CPU is named, however many there are: a task pinned only
 * to the audited CPU is there (per CPU, with the pinned ones, and in the document's list, first)
 * even behind 20 threads that could run anywhere. */
START_TEST(test_may_run_every_thread) {
        AuditSnapshot a = { .usec = 1000000 }, b = { .usec = 2000000 };
        ck_assert_int_eq(counter_table_parse(interrupts_a, &a.interrupts), 0);
        ck_assert_int_eq(counter_table_parse(interrupts_a, &b.interrupts), 0);
        a.threads = calloc(1, sizeof(AuditThread));
        b.threads = calloc(22, sizeof(AuditThread));
        for (int i = 0; i < 20; i++) {
                char comm[16];
                snprintf(comm, sizeof(comm), "anywhere%d", i);
                b.threads[b.n_threads++] = thread(100 + i, comm, false, 0, 0, "0-3", "/system.slice/x.service");
        }
        b.threads[b.n_threads++] = thread(200, "pinned-app", false, 0, 0, "3", "/user.slice");
        b.threads[b.n_threads++] = thread(201, "kworker/3:1", true, 0, 3, "3", "/"); /* per-CPU: not listed */
        AuditScope s = { .source = "--cpus", .clock_ticks = 100 };
        ck_assert_int_eq(cpu_set_parse_list("3", &s.cpus, NULL), 0);
        json_t *doc = NULL;
        ck_assert_int_eq(audit_document(&s, &a, &b, &doc), 0);

        json_t *may = json_object_get(cpu_of(doc, 3), "may_run");
        ck_assert_int_eq(json_integer_value(json_object_get(may, "count")), 21);
        json_t *pinned = json_object_get(may, "pinned");
        ck_assert_uint_eq(json_array_size(pinned), 1);
        ck_assert_str_eq(json_string_value(json_object_get(json_array_get(pinned, 0), "comm")), "pinned-app");
        ck_assert_uint_eq(json_array_size(json_object_get(may, "first")), 16);

        json_t *all = json_object_get(doc, "may_run");
        ck_assert_uint_eq(json_array_size(all), 21);
        json_t *first = json_array_get(all, 0);
        ck_assert_str_eq(json_string_value(json_object_get(first, "comm")), "pinned-app");
        ck_assert(json_is_true(json_object_get(first, "pinned")));
        ck_assert_str_eq(json_string_value(json_object_get(first, "cpus")), "3");
        ck_assert(json_is_false(json_object_get(json_array_get(all, 20), "pinned")));
        ck_assert_ptr_null(find_by(all, "comm", "kworker/3:1"));

        json_decref(doc);
        audit_snapshot_done(&a);
        audit_snapshot_done(&b);
}
END_TEST

/* A shipped profile as its file says, its includes merged (objects key by key, later over earlier);
 * vendor overlays aside. */
static json_t *shipped_profile(const char *name) {
        _cleanup_free_ char *path = NULL;
        ck_assert_int_ge(asprintf(&path, "%s/profiles/%s.json", SOURCE_DIR, name), 0);
        json_error_t e;
        json_t *doc = json_load_file(path, 0, &e);
        ck_assert_msg(doc, "%s: %s", path, e.text);
        const char *include = json_string_value(json_object_get(doc, "include"));
        if (!include)
                return doc;
        json_t *merged = shipped_profile(include);
        ck_assert_int_eq(json_object_update_recursive(merged, doc), 0);
        json_decref(doc);
        return merged;
}

/* A value at a JSON pointer ("/sysfs/~1sys~1…"), NULL if there is none. */
static json_t *at_pointer(json_t *doc, const char *pointer) {
        for (const char *p = pointer; doc && *p == '/';) {
                const char *e = strchrnul(p + 1, '/');
                _cleanup_free_ char *tok = strndup(p + 1, (size_t) (e - p - 1));
                char *w = tok;
                for (const char *q = tok; *q; q++)
                        *w++ = q[0] == '~' && (q[1] == '1' || q[1] == '0') ? (*++q == '1' ? '/' : '~') : *q;
                *w = 0;
                doc = json_object_get(doc, tok);
                p = e;
        }
        return doc;
}

/* The advice names settings as the shipped profiles set them (audit advised
 * kernel.timer_migration=1 where every profile sets 0, and "kthread.rules", which no profile has):
 * each setting a fix names is one a profile may have, with the value every shipped profile that
 * sets it gives it; no fix names a setting outside the table. */
START_TEST(test_advice_agrees_with_profiles) {
        _cleanup_free_ char *dir = NULL;
        ck_assert_int_ge(asprintf(&dir, "%s/profiles", SOURCE_DIR), 0);
        _cleanup_strv_free_ char **names = NULL;
        DIR *d = opendir(dir);
        ck_assert_ptr_nonnull(d);
        for (struct dirent *de; (de = readdir(d));) {
                size_t n = strlen(de->d_name);
                if (n > 5 && streq(de->d_name + n - 5, ".json"))
                        ck_assert_int_eq(strv_push(&names, strndup(de->d_name, n - 5)), 0);
        }
        closedir(d);
        ck_assert_uint_ge(strv_length(names), 4);

        size_t n;
        const AuditSetting *settings = audit_settings(&n);
        for (size_t i = 0; i < n; i++) {
                const AuditSetting *s = &settings[i];
                json_error_t e;
                _cleanup_(json_decrefp) json_t *want = json_loads(s->value, JSON_DECODE_ANY, &e);
                ck_assert_msg(want, "%s: value %s is not JSON", s->key, s->value);
                /* A profile may have it: alone in a profile, the schema takes it. */
                _cleanup_free_ char *copy = strdup(s->pointer);
                _cleanup_(json_decrefp) json_t *alone = json_object();
                json_t *o = alone;
                char *last = strrchr(copy, '/');
                *last = 0;
                for (char *sp = NULL, *tok = strtok_r(copy, "/", &sp); tok; tok = strtok_r(NULL, "/", &sp))
                        o = json_object_get(o, tok)
                                ?: (json_object_set_new(o, tok, json_object()), json_object_get(o, tok));
                _cleanup_free_ char *key = strdup(last + 1);
                char *w = key;
                for (const char *q = key; *q; q++)
                        *w++ = q[0] == '~' && q[1] == '1' ? (q++, '/') : *q;
                *w = 0;
                json_object_set(o, key, want);
                Profile *p = NULL;
                Error err = {};
                ck_assert_msg(profile_from_document(backend_profile_schema(), "advice", alone, &p, &err) == 0,
                              "%s: %s: %s", s->key, s->pointer, strempty(err.message));
                profile_free(p);
                if (s->example)
                        continue;
                /* Every shipped profile that sets it gives it the value advised; one at least does. */
                size_t setting = 0;
                for (char **name = names; *name; name++) {
                        _cleanup_(json_decrefp) json_t *doc = shipped_profile(*name);
                        json_t *v = at_pointer(doc, s->pointer);
                        if (!v)
                                continue;
                        setting++;
                        _cleanup_free_ char *got = json_dumps(v, JSON_ENCODE_ANY);
                        ck_assert_msg(json_equal(v, want), "audit advises %s %s, the shipped profile %s sets %s",
                                      s->pointer, s->value, *name, got);
                }
                ck_assert_msg(setting > 0, "audit advises %s, which no shipped profile sets", s->pointer);
        }
        /* Every "@key@" of the texts is a setting of the table. */
        _cleanup_strv_free_ char **texts = audit_advice_texts();
        ck_assert_uint_gt(strv_length(texts), 20);
        for (char **x = texts; *x; x++)
                ck_assert_msg(!strchr(*x, '@'), "a fix names a setting outside the table: %s", *x);
        ck_assert(strv_contains_fragment(texts, "sysctl.\"kernel.timer_migration\" = 0"));
}
END_TEST

/* The snapshot of a fake host: its counters and every thread of its proc/, with places. */
START_TEST(test_snapshot_fixture) {
        _cleanup_free_ char *path = fixture_host("vm");
        _cleanup_(root_freep) Root *root = NULL;
        AuditSnapshot s = {};
        ck_assert_int_ge(root_new(path, &root), 0);
        ck_assert_int_eq(audit_snapshot(root, AUDIT_SNAPSHOT_PLACES, &s), 0);
        ck_assert_uint_gt(s.interrupts.n_rows, 0);
        ck_assert_uint_gt(s.n_threads, 10);
        for (size_t i = 1; i < s.n_threads; i++)
                ck_assert_int_lt(s.threads[i - 1].tid, s.threads[i].tid);
        bool found = false;
        for (size_t i = 0; i < s.n_threads; i++)
                if (streq(s.threads[i].comm, "rcu_preempt")) {
                        found = true;
                        ck_assert(s.threads[i].kernel);
                        ck_assert(s.threads[i].has_allowed);
                }
        ck_assert(found);
        audit_snapshot_done(&s);
}
END_TEST

static Suite *audit_suite(void) {
        Suite *s = suite_create("audit");
        TCase *tc = tcase_create("audit");
        tcase_add_test(tc, test_counter_table);
        tcase_add_test(tc, test_document);
        tcase_add_test(tc, test_snapshot_fixture);
        tcase_add_test(tc, test_may_run_every_thread);
        tcase_add_test(tc, test_advice_agrees_with_profiles);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return test_run(audit_suite());
}
