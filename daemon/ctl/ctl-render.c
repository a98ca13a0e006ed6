/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "backend.h"
#include "config.h"
#include "ctl.h"
#include "document.h"
#include "strv.h"

/* The documents printed: as JSON (--json), or as text for people. Each renderer takes the
 * document as lib/engine/document.c builds it, whether rtpartd or rtpartctl made it. */

/* A failure to write stdout: said by nobody (stdout may be a closed pipe), status 1. */
static int flushed(void) {
        return fflush(stdout) == 0 ? 0 : -EIO;
}

int render_json(json_t *doc) {
        int r = json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
        fputc('\n', stdout);
        return r < 0 ? -EIO : flushed();
}

const char *jstr(json_t *o, const char *key) {
        return json_string_value(json_object_get(o, key));
}

size_t jsize(json_t *o, const char *key) {
        json_int_t v = json_integer_value(json_object_get(o, key));
        return v > 0 ? (size_t) v : 0;
}

bool jtrue(json_t *o, const char *key) {
        return json_is_true(json_object_get(o, key));
}

static void print_notes(json_t *notes, FILE *f) {
        size_t i;
        json_t *n;
        json_array_foreach (notes, i, n)
                fprintf(f, "  note: %s\n", json_string_value(n));
}

int render_list(json_t *doc) {
        size_t w = 4, i, n = json_array_size(doc);
        json_t *e;
        if (arg_json)
                return render_json(doc);
        json_array_foreach (doc, i, e)
                w = MAX(w, strlen(strempty(jstr(e, "name"))));
        if (n == 0)
                printf("No profiles found in /%s or /%s under %s.\n", PROFILE_DIR_USER, PROFILE_DIR_SYSTEM, arg_root);
        json_array_foreach (doc, i, e) {
                bool user = streq_ptr(jstr(e, "origin"), "user");
                printf("%-*s  %s%s\n", (int) w, strempty(jstr(e, "name")), jstr(e, "summary") ?: "(no summary)",
                       user ? jtrue(e, "overrides_system") ? "  [user, overrides shipped]" : "  [user]" : "");
        }
        return flushed();
}

static void print_domain_header(Domain d, json_t *host) {
        const Backend *b = backend_for(d);
        _cleanup_free_ char *heading = b && b->heading ? b->heading(host) : NULL;
        printf("\n%s\n", heading ?: domain_to_string(d));
}

static void print_knob(json_t *k, bool changed, size_t width) {
        ValueKind kind = value_kind_from_string(jstr(k, "kind"));
        if (kind < 0)
                kind = VALUE_AUTO;
        if (changed) {
                const char *desired = jstr(k, "desired");
                _cleanup_free_ char *cur = value_display(kind, jstr(k, "current"));
                _cleanup_free_ char *want = desired ? value_display(kind, desired) : strdup("(removed)");
                printf("  %-*s  %s → %s", (int) width, jstr(k, "knob"), strempty(cur), strempty(want));
        } else {
                _cleanup_free_ char *cur = value_display(kind, jstr(k, "value"));
                printf("  %-*s  %s (unchanged)", (int) width, jstr(k, "knob"), strempty(cur));
        }
        if (jstr(k, "note"))
                printf("  [%s]", jstr(k, "note"));
        fputc('\n', stdout);
}

/* plan --summary: a domain's changes, those that need a reboot, and its knobs already as desired. */
typedef struct DomainCount {
        size_t changes, reboot, unchanged;
} DomainCount;

static DomainCount domain_count(json_t *doc, Domain d) {
        DomainCount n = {};
        size_t i;
        json_t *k;
        json_array_foreach (json_object_get(doc, "changes"), i, k)
                if (domain_from_string(jstr(k, "domain")) == d) {
                        n.changes++;
                        n.reboot += jtrue(k, "reboot");
                }
        json_array_foreach (json_object_get(doc, "unchanged"), i, k)
                n.unchanged += domain_from_string(jstr(k, "domain")) == d;
        return n;
}

/* "  8192 changes, 3 already as desired: irq/0/affinity, irq/1/affinity, irq/2/affinity and 8189
 * more" */
#define SUMMARY_KNOBS 3
static void print_domain_count(json_t *doc, Domain d, const DomainCount *n) {
        size_t i, shown = 0;
        json_t *k;
        printf("  %zu change%s", n->changes, n->changes == 1 ? "" : "s");
        if (n->reboot > 0)
                printf(" (%zu need%s a reboot)", n->reboot, n->reboot == 1 ? "s" : "");
        printf(", %zu already as desired:", n->unchanged);
        json_array_foreach (json_object_get(doc, "changes"), i, k) {
                if (domain_from_string(jstr(k, "domain")) != d)
                        continue;
                if (shown == SUMMARY_KNOBS)
                        break;
                printf("%s %s", shown++ > 0 ? "," : "", strempty(jstr(k, "knob")));
        }
        if (n->changes > shown)
                printf(" and %zu more", n->changes - shown);
        fputc('\n', stdout);
}

/* plan --summary --json: the plan without its knobs, and per domain its counts. */
static int render_plan_summary_json(json_t *doc) {
        _cleanup_(json_decrefp) json_t *out = json_copy(doc), *domains = json_object();
        if (!out || !domains)
                return log_oom();
        json_object_del(out, "changes");
        json_object_del(out, "unchanged");
        for (int d = 0; d < _DOMAIN_MAX; d++) {
                DomainCount n = domain_count(doc, (Domain) d);
                if (n.changes + n.unchanged > 0 &&
                    json_object_set_new(domains, domain_to_string((Domain) d),
                                        json_pack("{s:I, s:I, s:I}", "changes", (json_int_t) n.changes, "reboot",
                                                  (json_int_t) n.reboot, "unchanged", (json_int_t) n.unchanged)) < 0)
                        return log_oom();
        }
        if (json_object_set(out, "domains", domains) < 0)
                return log_oom();
        return render_json(out);
}

int render_plan(json_t *doc, Root *root) {
        json_t *host = json_object_get(doc, "host"), *cpus = json_object_get(doc, "cpus");
        json_t *changes = json_object_get(doc, "changes"), *unchanged = json_object_get(doc, "unchanged");
        json_t *summary = json_object_get(doc, "summary");
        size_t width = 8, i, nd = 0, n_nodes = jsize(host, "nodes");
        size_t changes_n = jsize(summary, "changes"), reboot = jsize(summary, "reboot"),
               same = jsize(summary, "unchanged");
        json_t *k;

        if (arg_json && arg_summary)
                return render_plan_summary_json(doc);
        if (arg_json)
                return render_json(doc);
        printf("Profile %s for %s (%zu CPUs online, %zu NUMA node%s, cgroup %s)\n", strempty(jstr(doc, "profile")),
               root_is_system(root) ? "this host" : root->path, jsize(host, "cpus_online"), n_nodes,
               n_nodes == 1 ? "" : "s", strempty(jstr(host, "cgroup")));
        printf("  housekeeping CPUs: %s\n  isolated CPUs:     %s\n", strempty(jstr(cpus, "housekeeping")),
               strempty(jstr(cpus, "isolated")));

        json_array_foreach (changes, i, k)
                width = MAX(width, MIN(strlen(strempty(jstr(k, "knob"))), (size_t) 44));
        if (arg_all)
                json_array_foreach (unchanged, i, k)
                        width = MAX(width, MIN(strlen(strempty(jstr(k, "knob"))), (size_t) 44));

        /* By domain, in the order of the backends; with --all, a domain's knobs already as
         * desired after its changes; with --summary, a line of counts. */
        for (int d = 0; d < _DOMAIN_MAX && arg_summary; d++) {
                DomainCount n = domain_count(doc, (Domain) d);
                if (n.changes == 0)
                        continue;
                print_domain_header((Domain) d, host);
                print_domain_count(doc, (Domain) d, &n);
                nd++;
        }
        for (int d = 0; d < _DOMAIN_MAX && !arg_summary; d++) {
                bool header = false, any_change = false;
                for (int pass = 0; pass < (arg_all ? 2 : 1); pass++)
                        json_array_foreach (pass == 0 ? changes : unchanged, i, k) {
                                if (domain_from_string(jstr(k, "domain")) != (Domain) d)
                                        continue;
                                if (!header) {
                                        print_domain_header((Domain) d, host);
                                        header = true;
                                }
                                any_change = any_change || pass == 0;
                                print_knob(k, pass == 0, width);
                        }
                if (any_change)
                        nd++;
        }

        json_t *notes = json_object_get(doc, "notes");
        if (json_array_size(notes) > 0) {
                printf("\nNotes:\n");
                json_array_foreach (notes, i, k)
                        printf("  - %s\n", json_string_value(k));
        }
        printf("\n%zu change%s in %zu domain%s (%zu need%s a reboot), %zu knob%s already as desired.\n", changes_n,
               changes_n == 1 ? "" : "s", nd, nd == 1 ? "" : "s", reboot, reboot == 1 ? "s" : "", same,
               same == 1 ? "" : "s");
        return flushed();
}

int render_apply(json_t *doc) {
        if (arg_json)
                return render_json(doc);
        const char *profile = strempty(jstr(doc, "profile"));
        size_t changed = jsize(doc, "changed"), unchanged = jsize(doc, "unchanged"), restored = jsize(doc, "restored"),
               refused = jsize(doc, "unmovable"), skipped = jsize(doc, "skipped"),
               reboot = jsize(doc, "reboot_changes");
        if (changed == 0 && restored == 0 && refused == 0)
                printf("%s is already applied: nothing to change (%zu knob%s as desired).\n", profile, unchanged,
                       unchanged == 1 ? "" : "s");
        else {
                printf("Applied %s: %zu knob%s changed, %zu already as desired", profile, changed,
                       changed == 1 ? "" : "s", unchanged);
                if (restored)
                        printf(", %zu of the previous profile restored", restored);
                if (refused)
                        printf(", %zu refused by the kernel (recorded as unmovable)", refused);
                if (skipped)
                        printf(", %zu not writable here", skipped);
                printf(".\n");
        }
        if (reboot) {
                _cleanup_free_ char *what = document_reboot_phrase(json_object_get(doc, "reboot_knobs"));
                if (what && *what)
                        printf("A reboot is needed for %s to take effect.\n", what);
                else
                        printf("A reboot is needed for %zu knob%s to take effect.\n", reboot, reboot == 1 ? "" : "s");
        }
        print_notes(json_object_get(doc, "notes"), stdout);
        return flushed();
}

int render_apply_failure(json_t *doc) {
        json_t *error = json_object_get(doc, "error");
        if (arg_json)
                (void) render_json(doc);
        if (jstr(error, "knob"))
                log_error("writing %s (%s) failed: %s%s%s%s; %s", jstr(error, "knob"), jstr(error, "path") ?: "no file",
                          strempty(jstr(error, "message")), jstr(error, "detail") ? " (kernel: " : "",
                          strempty(jstr(error, "detail")), jstr(error, "detail") ? ")" : "",
                          jtrue(doc, "rollback_incomplete")
                                  ? "the changes of this run were undone except those noted below"
                                  : "every change of this run was undone; the host is as it was before");
        else
                log_error("%s", strempty(jstr(error, "message")));
        if (!arg_json)
                print_notes(json_object_get(doc, "notes"), stderr);
        return EXIT_FAILED;
}

int render_revert(json_t *doc) {
        bool ok = jtrue(doc, "ok");
        json_t *error = json_object_get(doc, "error");
        size_t restored = jsize(doc, "restored"), failed = jsize(doc, "failed");
        if (arg_json)
                (void) render_json(doc);
        else if (ok) {
                if (restored == 0 && jsize(doc, "skipped") == 0)
                        printf("Nothing to revert: every knob rtpart changed is at its original value.\n");
                else
                        printf("Reverted: %zu knob%s restored to the value they had before rtpart.\n", restored,
                               restored == 1 ? "" : "s");
                print_notes(json_object_get(doc, "notes"), stdout);
        } else {
                if (jstr(error, "knob"))
                        log_error(
                                "%zu knob%s could not be restored (first: %s: %s); they stay in the journal and a later "
                                "revert retries them",
                                failed, failed == 1 ? "" : "s", jstr(error, "knob"), strempty(jstr(error, "message")));
                else
                        log_error("revert failed: %s", strempty(jstr(error, "message")));
                print_notes(json_object_get(doc, "notes"), stderr);
        }
        return ok ? EXIT_OK : EXIT_FAILED;
}

/* How fresh rtpartd's answer is ("daemon": {"live", "freshness"}): one line, or none for an
 * answer of rtpartctl's own. */
static void print_freshness(const char *label, json_t *daemon) {
        json_t *fresh = json_object_get(daemon, "freshness"), *d;
        const char *name;
        if (!json_is_object(fresh))
                return;
        if (!jtrue(daemon, "live")) {
                printf("%srtpartd read every knob for this answer\n", label);
                return;
        }
        /* The oldest full read, and the domains whose changes no file event announces (read again
         * for this answer). */
        uint64_t oldest = 0;
        StrBuf b = {};
        json_object_foreach (fresh, name, d) {
                oldest = MAX(oldest, (uint64_t) json_integer_value(json_object_get(d, "age_ms")));
                if (!jtrue(d, "watched"))
                        strbuf_appendf(&b, "%s%s", b.len ? ", " : "", name);
        }
        _cleanup_free_ char *reread = strbuf_steal(&b);
        printf("%srtpartd's live state: file events up to now%s%s; every knob read %" PRIu64 ".%" PRIu64
               " s ago at most\n",
               label, reread && *reread ? ", read now: " : "", strempty(reread), oldest / 1000, oldest % 1000 / 100);
}

/* One drift entry: "PREFIX" then "KNOB  expected E, found A" on a line. */
static void print_drift(const char *prefix, json_t *e) {
        printf("%s%-40s expected %s, found %s\n", prefix, strempty(jstr(e, "knob")), jstr(e, "expected") ?: "(absent)",
               jstr(e, "actual") ?: "(absent)");
}

int render_verify(json_t *doc) {
        json_t *drift = json_object_get(doc, "drift"), *pending = json_object_get(doc, "reboot_pending");
        json_t *unmovable = json_object_get(doc, "unmovable"), *e;
        const char *profile = jstr(doc, "profile");
        size_t n_drift = json_array_size(drift), checked = jsize(doc, "checked"), i;
        bool reboot = jtrue(doc, "reboot_required");
        int ret = n_drift > 0 ? EXIT_DRIFT : reboot ? EXIT_REBOOT : EXIT_OK;

        if (arg_json) {
                if (render_json(doc) < 0)
                        ret = -EIO;
        } else if (!profile)
                printf("No profile is applied.\n");
        else {
                if (n_drift == 0)
                        printf("%s: in sync (%zu knobs checked).\n", profile, checked);
                else {
                        printf("%s: %zu of %zu knobs drifted:\n", profile, n_drift, checked);
                        json_array_foreach (drift, i, e)
                                print_drift("  ", e);
                }
                if (reboot) {
                        printf("Configured but not in the running kernel (reboot pending):");
                        json_array_foreach (pending, i, e) {
                                const char *id = strempty(json_string_value(e));
                                printf(" %s", id + (startswith(id, "boot/") ? 5 : 0));
                        }
                        printf("\n");
                }
                size_t nu = json_array_size(unmovable);
                if (nu > 0)
                        printf("%zu item%s the kernel does not let anyone move (informational; see status).\n", nu,
                               nu == 1 ? "" : "s");
                print_freshness("Checked: ", json_object_get(doc, "daemon"));
        }
        if (jtrue(doc, "transaction_open"))
                log_notice(
                        "the journal holds an interrupted transaction; the next apply, revert or rtpartd start rolls it back");
        if (!arg_json && fflush(stdout) != 0)
                ret = -EIO;
        return ret;
}

int render_status(json_t *doc) {
        json_t *unmovable = json_object_get(doc, "unmovable"), *last = json_object_get(doc, "last_error");
        json_t *daemon = json_object_get(doc, "daemon"), *e;
        const char *profile = jstr(doc, "profile");
        size_t i;

        if (arg_json)
                return render_json(doc);
        if (profile)
                printf("Profile:     %s (applied %s)\n", profile, strempty(jstr(doc, "applied_at")));
        else
                printf("Profile:     none applied\n");
        printf("Knobs:       %zu owned, %zu drifted%s\n", jsize(doc, "knobs"), jsize(doc, "drift"),
               json_array_size(json_object_get(doc, "drifted")) > 0 ? ":" : "");
        json_array_foreach (json_object_get(doc, "drifted"), i, e)
                print_drift("  ", e);
        if (jtrue(doc, "reboot_required")) {
                _cleanup_free_ char *what = document_reboot_phrase(json_object_get(doc, "reboot_pending"));
                printf("Reboot:      needed%s%s\n", what && *what ? " for " : "", what && *what ? what : "");
        } else
                printf("Reboot:      not needed\n");
        printf("Originals:   %zu values journalled for revert\n", jsize(doc, "originals"));
        if (json_array_size(unmovable) > 0) {
                printf("Unmovable:   %zu (the kernel keeps these where they are):\n", json_array_size(unmovable));
                json_array_foreach (unmovable, i, e)
                        printf("  %s\n", json_string_value(e));
        }
        const char *msg = jstr(last, "message");
        if (msg)
                printf("Last error:  %s (%s)\n", msg, strempty(jstr(last, "at")));
        if (jtrue(doc, "transaction_open"))
                printf("Journal:     an interrupted transaction is open; the next apply or revert rolls it back\n");
        /* What only rtpartd knows, when it answered. */
        if (json_is_object(daemon))
                printf("Daemon:      rtpartd watches %zu files, checks everything every %zu s; %zu drift event%s "
                       "since it started\n",
                       jsize(daemon, "watched_files"), jsize(daemon, "interval_s"), jsize(daemon, "drift_events"),
                       jsize(daemon, "drift_events") == 1 ? "" : "s");
        print_freshness("Checked:     ", daemon);
        if (jtrue(daemon, "task_check"))
                printf("Tasks:       %zu user task%s may run on isolated CPUs (rtpartctl watch names them)\n",
                       jsize(daemon, "tasks_on_isolated"), jsize(daemon, "tasks_on_isolated") == 1 ? "" : "s");
        return flushed();
}

/* ---- watch ---- */

static char *now_iso8601_ms(void) {
        struct timeval tv;
        struct tm tm;
        char buf[40];
        char *s;
        gettimeofday(&tv, NULL);
        if (!gmtime_r(&tv.tv_sec, &tm) || strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
                return NULL;
        return asprintf(&s, "%s.%03ldZ", buf, (long) (tv.tv_usec / 1000)) < 0 ? NULL : s;
}

/* One line per knob of a drift or corrected event, one per applied or reverted event. */
int render_watch_event(json_t *p) {
        const char *event = strempty(jstr(p, "event"));
        _cleanup_free_ char *now = jstr(p, "time") ? NULL : now_iso8601_ms();
        const char *time = jstr(p, "time") ?: strempty(now);
        size_t i;
        json_t *d;

        if (streq(event, "applied") || streq(event, "reverted")) {
                if (arg_json) {
                        _cleanup_(json_decrefp) json_t *o = json_pack("{s:s, s:s, s:s?}", "time", time, "event", event,
                                                                      "profile", jstr(p, "profile"));
                        if (!o || json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII) < 0)
                                return -EIO;
                        fputc('\n', stdout);
                } else if (streq(event, "applied"))
                        printf("%s  applied %s\n", time, strempty(jstr(p, "profile")));
                else
                        printf("%s  reverted\n", time);
        }
        /* The first reply ("status") carries the drift there already is. */
        bool corrected = streq(event, "corrected");
        if (corrected || streq(event, "drift") || streq(event, "status"))
                json_array_foreach (json_object_get(p, "drift"), i, d) {
                        if (arg_json) {
                                _cleanup_(json_decrefp) json_t *o =
                                        json_pack("{s:s, s:s, s:s?, s:s?, s:O?, s:O?}", "time", time, "event",
                                                  corrected ? "corrected" : "drift", "knob", jstr(d, "knob"), "domain",
                                                  jstr(d, "domain"), "expected", json_object_get(d, "expected"),
                                                  "actual", json_object_get(d, "actual"));
                                if (!o ||
                                    json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII) < 0)
                                        return -EIO;
                                fputc('\n', stdout);
                        } else
                                printf("%s  %-40s expected %s, found %s%s\n", time, strempty(jstr(d, "knob")),
                                       jstr(d, "expected") ?: "(absent)", jstr(d, "actual") ?: "(absent)",
                                       corrected ? "  corrected" : "");
                }
        return flushed();
}

/* ---- audit ---- */

/* One source of a CPU's noise: "  LABEL  what  count (rate/s)", then what would remove it. */
static void audit_line(const char *head, const char *what, json_int_t count, double rate, const char *fix) {
        printf("  %-11s %-36s %12lld  (%.1f/s)\n", head, what, (long long) count, rate);
        if (fix)
                printf("  %-11s → %s\n", "", fix);
}

/* The threads that may run on a CPU: those pinned to the audited CPUs first, every one of them,
 * then the first others (--json lists every thread, in the document's "may_run"). */
static void render_may_run(json_t *may) {
        json_t *pinned = json_object_get(may, "pinned"), *first = json_object_get(may, "first"), *e;
        json_int_t n = json_integer_value(json_object_get(may, "count"));
        size_t j, shown = json_array_size(pinned) + json_array_size(first);
        if (n <= 0)
                return;
        printf("  %-11s %lld thread%s outside the profile's partitions may run here", "may run", (long long) n,
               n == 1 ? "" : "s");
        json_array_foreach (pinned, j, e)
                printf("%s %s (%lld)", j ? "," : "; pinned to the audited CPUs:", strempty(jstr(e, "comm")),
                       (long long) json_integer_value(json_object_get(e, "tid")));
        json_array_foreach (first, j, e)
                printf("%s %s (%lld)",
                       j                                 ? ","
                               : json_array_size(pinned) ? "; others:"
                                                         : ":",
                       strempty(jstr(e, "comm")), (long long) json_integer_value(json_object_get(e, "tid")));
        printf("%s\n", (size_t) n > shown ? ", … (--json lists every one)" : "");
}

int render_audit(json_t *doc) {
        json_t *cpu, *e;
        size_t i, j;
        int noisy = streq_ptr(jstr(doc, "verdict"), "noisy") ? EXIT_DRIFT : EXIT_OK;

        if (arg_json) {
                int r = render_json(doc);
                return r != 0 ? r : noisy;
        }
        printf("Audit of CPUs %s (%s) over %.1f s: %s%s%s\n", strempty(jstr(doc, "cpus")),
               strempty(jstr(doc, "source")), json_real_value(json_object_get(doc, "seconds")),
               noisy ? "noisy: CPUs " : "every CPU quiet", noisy ? strempty(jstr(doc, "noisy_cpus")) : "", "");
        const char *why = jstr(json_object_get(doc, "osnoise"), "reason");
        if (why)
                printf("(no osnoise figures: %s)\n", why);
        json_array_foreach (json_object_get(doc, "cpu"), i, cpu) {
                json_t *tick = json_object_get(cpu, "tick"), *may = json_object_get(cpu, "may_run");
                printf("\nCPU %lld: %s%s\n", (long long) json_integer_value(json_object_get(cpu, "cpu")),
                       strempty(jstr(cpu, "verdict")), jtrue(cpu, "nohz_full") ? " (nohz_full)" : "");
                json_array_foreach (json_object_get(cpu, "interrupts"), j, e) {
                        char what[64];
                        if (streq_ptr(jstr(e, "source"), "irq"))
                                snprintf(what, sizeof(what), "IRQ %lld %s",
                                         (long long) json_integer_value(json_object_get(e, "irq")),
                                         strempty(jstr(e, "name")));
                        else
                                snprintf(what, sizeof(what), "%s %s", strempty(jstr(e, "row")),
                                         strempty(jstr(e, "name")));
                        audit_line(j == 0 ? "interrupts" : "", what, json_integer_value(json_object_get(e, "count")),
                                   json_real_value(json_object_get(e, "rate")), jstr(e, "fix"));
                }
                json_array_foreach (json_object_get(cpu, "softirqs"), j, e)
                        audit_line(j == 0 ? "softirqs" : "", strempty(jstr(e, "kind")),
                                   json_integer_value(json_object_get(e, "count")),
                                   json_real_value(json_object_get(e, "rate")), jstr(e, "fix"));
                if (jtrue(tick, "stopped"))
                        printf("  %-11s stopped (%.1f/s)\n", "tick", json_real_value(json_object_get(tick, "rate")));
                else
                        audit_line("tick", "LOC local timer", json_integer_value(json_object_get(tick, "count")),
                                   json_real_value(json_object_get(tick, "rate")), jstr(tick, "fix"));
                json_array_foreach (json_object_get(cpu, "threads"), j, e) {
                        char what[96];
                        snprintf(what, sizeof(what), "%s %s (pid %lld, tid %lld)",
                                 jtrue(e, "kernel") ? "kthread" : "task", strempty(jstr(e, "comm")),
                                 (long long) json_integer_value(json_object_get(e, "pid")),
                                 (long long) json_integer_value(json_object_get(e, "tid")));
                        printf("  %-11s %-36s ran %.1f ms\n", j == 0 ? "threads" : "", what,
                               json_real_value(json_object_get(e, "cpu_ms")));
                        if (jstr(e, "fix"))
                                printf("  %-11s → %s\n", "", jstr(e, "fix"));
                }
                json_t *on = json_object_get(cpu, "osnoise");
                if (json_is_object(on))
                        printf("  %-11s %.3f%% of the CPU available; noise %lld µs, max single %lld µs; "
                               "interfered: hw %lld, nmi %lld, irq %lld, softirq %lld, thread %lld\n",
                               "osnoise", json_real_value(json_object_get(on, "available_percent")),
                               (long long) json_integer_value(json_object_get(on, "noise_us")),
                               (long long) json_integer_value(json_object_get(on, "max_single_us")),
                               (long long) json_integer_value(json_object_get(on, "hw")),
                               (long long) json_integer_value(json_object_get(on, "nmi")),
                               (long long) json_integer_value(json_object_get(on, "irq")),
                               (long long) json_integer_value(json_object_get(on, "softirq")),
                               (long long) json_integer_value(json_object_get(on, "thread")));
                render_may_run(may);
        }
        int r = flushed();
        return r != 0 ? r : noisy;
}

/* ---- check latency ---- */

static void latency_row(const char *what, json_t *s) {
        printf("  %-7s %9lld %8.1f %8.1f %8lld %8.1f%s\n", what,
               (long long) json_integer_value(json_object_get(s, "samples")),
               json_real_value(json_object_get(s, "min_us")), json_real_value(json_object_get(s, "avg_us")),
               (long long) json_integer_value(json_object_get(s, "p99_us")),
               json_real_value(json_object_get(s, "max_us")), jtrue(s, "over_limit") ? "  over the limit" : "");
}

int render_latency(json_t *doc) {
        int over = streq_ptr(jstr(doc, "verdict"), "over") ? EXIT_DRIFT : EXIT_OK;
        json_int_t limit = json_integer_value(json_object_get(doc, "limit_us"));
        json_t *cpu;
        size_t i;

        if (arg_json) {
                int r = render_json(doc);
                return r != 0 ? r : over;
        }
        printf("Latency of CPUs %s (%s), %s over %.1f s", strempty(jstr(doc, "cpus")), strempty(jstr(doc, "source")),
               strempty(jstr(doc, "tool")), json_real_value(json_object_get(doc, "seconds")));
        if (limit > 0)
                printf(": %s the profile's limit of %lld µs\n", over ? "OVER" : "within", (long long) limit);
        else
                printf("\n");
        json_array_foreach (json_object_get(doc, "cpu"), i, cpu) {
                printf("\nCPU %lld    samples   min µs   avg µs   p99 µs   max µs\n",
                       (long long) json_integer_value(json_object_get(cpu, "cpu")));
                if (json_is_object(json_object_get(cpu, "irq")))
                        latency_row("irq", json_object_get(cpu, "irq"));
                latency_row("thread", json_object_get(cpu, "thread"));
        }
        int r = flushed();
        return r != 0 ? r : over;
}
