/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "hardware.h"
#include "hwlat.h"
#include "journal.h"
#include "latency.h"
#include "report.h"

/* check hardware, check latency, and check (hardware → audit → latency, one report): measured on
 * the host directly (lib/observe/). The tracers are the caller's for the window, and tracefs is
 * put back after it, also when interrupted, and by the next run after a kill. */

static volatile sig_atomic_t stop = 0;

static void on_signal(int sig) {
        stop = 1;
}

const char *ctl_tracefs(Root *root, bool *ret_mounted) {
        const char *dir = tracefs_find(root);
        *ret_mounted = false;
        /* Not mounted: mounted for the run, unmounted after it (ctl_tracefs_done). */
        if (!dir && root_can(root, ROOT_CAN_MOUNT) && root_is_dir(root, "sys/kernel/tracing") &&
            root_mount(root, "sys/kernel/tracing", "tracefs", NULL) >= 0) {
                dir = tracefs_find(root);
                *ret_mounted = dir != NULL;
        }
        return dir;
}

void ctl_tracefs_done(Root *root, bool mounted) {
        if (mounted)
                (void) root_umount(root, "sys/kernel/tracing");
}

int ctl_tracefs_recover(Root *root) {
        _cleanup_free_ char *recovered = NULL;
        int r = tracefs_recover(root, &recovered);
        if (r < 0)
                return log_error_errno(r, "cannot put back tracefs as an interrupted run left it (%s): %m",
                                       "/run/rtpart/tracefs.json");
        if (recovered)
                fprintf(stderr, "%s\n", recovered);
        return 0;
}

volatile sig_atomic_t *ctl_catch_interrupts(bool on) {
        static struct sigaction old_int, old_term;
        if (on) {
                struct sigaction sa = { .sa_handler = on_signal };
                sigemptyset(&sa.sa_mask);
                stop = 0;
                (void) sigaction(SIGINT, &sa, &old_int);
                (void) sigaction(SIGTERM, &sa, &old_term);
        } else {
                (void) sigaction(SIGINT, &old_int, NULL);
                (void) sigaction(SIGTERM, &old_term, NULL);
        }
        return &stop;
}

static int write_file(const char *path, const char *text) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
        if (fd < 0)
                return log_error_errno(-errno, "cannot write %s: %m", path);
        size_t n = strlen(text);
        if (write(fd, text, n) != (ssize_t) n)
                return log_error_errno(-EIO, "cannot write %s: %m", path);
        return 0;
}

/* ---- latency ---- */

/* 0 measured; 1 when nothing here can measure it (*ret_reason says why); or a failure, said. */
static int measure_latency(Root *root, const AuditTarget *x, LatencyResult *res, char **ret_reason) {
        bool mounted;
        const char *dir = ctl_tracefs(root, &mounted);
        int r;

        if (dir && tracefs_has_tracer(root, dir, "timerlat")) {
                volatile sig_atomic_t *stopped = ctl_catch_interrupts(true);
                if (isatty(STDERR_FILENO))
                        fprintf(stderr, "Measuring with timerlat for %u s…\n", arg_seconds);
                r = latency_run_timerlat(root, dir, mounted, &x->s.cpus, arg_seconds, stopped, res);
                (void) ctl_catch_interrupts(false);
                ctl_tracefs_done(root, mounted);
                if (r < 0)
                        return log_error_errno(r, "timerlat failed: %m (tracefs is as it was)");
                if (*stopped) {
                        log_error("interrupted after %.1f s; tracefs is as it was", res->seconds);
                        return EXIT_FAILED;
                }
                return 0;
        }
        ctl_tracefs_done(root, mounted);

        const char *why = dir ? "tracing/available_tracers does not list it" : "tracefs is not mounted";
        if (!root_can(root, ROOT_CAN_RUN_PROGRAMS))
                return asprintf(ret_reason, "%s has no timerlat tracer (%s), and cyclictest runs only on this host",
                                root->path, why) < 0
                        ? log_oom()
                        : 1;
        r = latency_run_cyclictest(root, &x->s.cpus, arg_seconds, res);
        if (r == -ENOENT)
                return asprintf(ret_reason,
                                "the kernel has no timerlat tracer (%s; Debian's linux-image-rt-amd64 has it, as does "
                                "any kernel built with CONFIG_TIMERLAT_TRACER), and cyclictest is not installed (apt "
                                "install rt-tests)",
                                why) < 0
                        ? log_oom()
                        : 1;
        if (r < 0)
                return log_error_errno(r, "cyclictest failed: %m");
        fprintf(stderr, "The kernel has no timerlat tracer: measured with cyclictest (thread latency only).\n");
        return 0;
}

/* The latency document of res, with the CPUs and where they come from. */
static int latency_doc(const LatencyResult *res, const AuditTarget *x, unsigned limit, json_t **ret) {
        _cleanup_free_ char *list = cpu_set_format_list(&x->s.cpus);
        _cleanup_(json_decrefp) json_t *doc = NULL;
        if (!list || latency_document(res, limit, &doc, NULL) < 0 ||
            json_object_set_new(doc, "cpus", json_string(list)) < 0 ||
            json_object_set_new(doc, "source", json_string(x->source)) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(doc);
        return 0;
}

static int check_latency(Root *root, const AuditTarget *x) {
        _cleanup_(latency_result_done) LatencyResult res = {};
        _cleanup_(json_decrefp) json_t *doc = NULL;
        _cleanup_free_ char *reason = NULL, *svg = NULL;
        int r = measure_latency(root, x, &res, &reason);
        if (r == 1) {
                log_error("cannot measure latency here: %s", reason);
                return EXIT_FAILED;
        }
        if (r != 0)
                return r;
        if (latency_doc(&res, x, x->limit_us, &doc) < 0 || (arg_svg && latency_svg(&res, x->limit_us, &svg) < 0))
                return log_oom();
        if (svg && (r = write_file(arg_svg, svg)) < 0)
                return r;
        return render_latency(doc);
}

/* ---- hardware ---- */

static json_t *hwlat_not_run(const char *dir) {
        return json_pack("{s:b, s:s}", "ran", false, "reason",
                         dir ? "the kernel has no hwlat tracer (CONFIG_HWLAT_TRACER; tracing/available_tracers does "
                               "not list it)"
                             : "no tracefs (/sys/kernel/tracing)");
}

/* hwlat on the CPUs, the SMI count around it, and the settings: the document. */
static int measure_hardware(Root *root, const AuditTarget *x, unsigned limit, json_t **ret) {
        _cleanup_(hardware_host_done) HardwareHost h = {};
        _cleanup_(smi_counts_done) SmiCounts smi = {};
        _cleanup_(hwlat_result_done) HwlatResult res = {};
        _cleanup_(json_decrefp) json_t *settings = NULL, *hwlat = NULL, *smi_doc = NULL;
        _cleanup_free_ char *list = cpu_set_format_list(&x->s.cpus);
        bool mounted;
        int r;

        if (!list || hardware_host(root, &h) < 0 || hardware_settings(root, &h, &x->s.cpus, &settings) < 0 ||
            smi_counts_begin(root, &x->s.cpus, h.vendor, h.virtual, &smi) < 0)
                return log_oom();
        const char *dir = ctl_tracefs(root, &mounted);
        if (dir && tracefs_has_tracer(root, dir, "hwlat")) {
                volatile sig_atomic_t *stopped = ctl_catch_interrupts(true);
                if (isatty(STDERR_FILENO))
                        fprintf(stderr, "Measuring CPUs %s with hwlat for %u s (interrupts off half of each second)…\n",
                                list, arg_seconds);
                r = hwlat_run(root, dir, mounted, &x->s.cpus, arg_seconds, limit, stopped, &res);
                (void) ctl_catch_interrupts(false);
                ctl_tracefs_done(root, mounted);
                if (r < 0)
                        return log_error_errno(r, "hwlat failed: %m (tracefs is as it was)");
                if (*stopped) {
                        log_error("interrupted after %.1f s; tracefs is as it was", res.seconds);
                        return EXIT_FAILED;
                }
                r = hwlat_document(&res, &hwlat);
        } else {
                ctl_tracefs_done(root, mounted);
                hwlat = hwlat_not_run(dir);
                r = hwlat ? 0 : -ENOMEM;
        }
        smi_counts_end(root, &smi);
        if (r < 0 || smi_document(&smi, &smi_doc) < 0 ||
            hardware_document(&h, list, x->source, TAKE_PTR(settings), TAKE_PTR(hwlat), TAKE_PTR(smi_doc), ret) < 0)
                return log_oom();
        return 0;
}

/* A section's verdict as an exit status: 3 over a limit, 1 (said) when a measurement could not
 * run, else 0. */
static int verdict_status(const char *verdict, const char *what) {
        if (streq_ptr(verdict, "over"))
                return EXIT_DRIFT;
        if (streq_ptr(verdict, "incomplete")) {
                log_error("%s is incomplete: a measurement could not run (the report says which and why)", what);
                return EXIT_FAILED;
        }
        return EXIT_OK;
}

/* s, then blanks to width characters (not bytes: "µs"). */
static void print_padded(const char *s, int width) {
        int n = 0;
        for (const char *p = s; *p; p++)
                n += ((unsigned char) *p & 0xc0) != 0x80;
        printf("%s%*s", s, MAX(width - n, 1), "");
}

static void render_hardware_text(json_t *doc) {
        json_t *host = json_object_get(doc, "host"), *hwlat = json_object_get(doc, "hwlat"),
               *smi = json_object_get(doc, "smi"), *e;
        size_t i;
        printf("Hardware of CPUs %s (%s): %s, %s, %s\n", strempty(jstr(doc, "cpus")), strempty(jstr(doc, "source")),
               strempty(jstr(host, "hostname")), strempty(jstr(host, "kernel")), strempty(jstr(host, "cpu")));
        if (jtrue(hwlat, "ran")) {
                _cleanup_free_ char *line = hwlat_summary(hwlat);
                printf("%s: %s\n", strempty(line),
                       streq_ptr(jstr(hwlat, "verdict"), "over") ? "OVER" : strempty(jstr(hwlat, "verdict")));
                json_array_foreach (json_object_get(hwlat, "cpu"), i, e) {
                        long long windows = json_integer_value(json_object_get(e, "samples"));
                        printf("  CPU %lld: largest gap %lld µs, %lld window%s, %lld over, NMIs %lld\n",
                               (long long) json_integer_value(json_object_get(e, "cpu")),
                               (long long) json_integer_value(json_object_get(e, "max_us")), windows,
                               windows == 1 ? "" : "s", (long long) json_integer_value(json_object_get(e, "over")),
                               (long long) json_integer_value(json_object_get(e, "nmi")));
                }
        } else
                printf("hwlat not run: %s\n", strempty(jstr(hwlat, "reason")));
        if (jtrue(smi, "available"))
                printf("SMIs in the window: %lld (MSR_SMI_COUNT)\n",
                       (long long) json_integer_value(json_object_get(smi, "count")));
        else
                printf("SMI count not available: %s\n", strempty(jstr(smi, "reason")));
        printf("\nSettings:\n");
        json_array_foreach (json_object_get(doc, "settings"), i, e) {
                printf("  %-22s ", strempty(jstr(e, "setting")));
                print_padded(strempty(jstr(e, "found")), 56);
                printf("%s\n", strempty(jstr(e, "verdict")));
                if (jstr(e, "fix"))
                        printf("  %-22s → %s\n", "", jstr(e, "fix"));
        }
        printf("Verdict: %s\n", strempty(jstr(doc, "verdict")));
}

static int check_hardware(Root *root, const AuditTarget *x) {
        _cleanup_(json_decrefp) json_t *doc = NULL;
        int r = measure_hardware(root, x, x->hwlat_max_us ?: CHECK_HWLAT_MAX_US, &doc);
        if (r != 0)
                return r;
        if (arg_json)
                r = render_json(doc);
        else {
                render_hardware_text(doc);
                r = fflush(stdout) == 0 ? 0 : -EIO;
        }
        return r != 0 ? r : verdict_status(jstr(doc, "verdict"), "check hardware");
}

/* ---- check: the three in one report ---- */

static CheckLimits check_limits(const AuditTarget *x, char **ret_from) {
        unsigned set = !!x->hwlat_max_us + !!x->limit_us + (x->noise_max_percent > 0);
        CheckLimits l = {
                .hwlat_max_us = x->hwlat_max_us ?: CHECK_HWLAT_MAX_US,
                .latency_max_us = x->limit_us ?: CHECK_LATENCY_MAX_US,
                .noise_max_percent = x->noise_max_percent > 0 ? x->noise_max_percent : CHECK_NOISE_MAX_PERCENT,
        };
        if (set == 0 || asprintf(ret_from, "the profile %s%s", x->profile, set < 3 ? " and the defaults" : "") < 0)
                *ret_from = NULL;
        l.from = *ret_from ?: "the defaults";
        return l;
}

/* A figure of the report with its unit: whole from 100 on, else three digits ("0.0103 %"). */
static void number(char buf[static 64], double v, const char *unit) {
        snprintf(buf, 64, v >= 100 ? "%.0f %s" : "%.3g %s", v, unit);
}

static void render_check_text(json_t *report) {
        json_t *host = json_object_get(report, "host"), *c;
        size_t i;
        printf("Check of CPUs %s (%s) on %s, %s; limits from %s: %s\n\n", strempty(jstr(report, "cpus")),
               strempty(jstr(report, "source")), strempty(jstr(host, "hostname")), strempty(jstr(host, "kernel")),
               strempty(jstr(json_object_get(report, "limits"), "from")), strempty(jstr(report, "verdict")));
        json_array_foreach (json_object_get(report, "checks"), i, c) {
                const char *unit = strempty(jstr(c, "unit"));
                char value[64] = "-", limit[64];
                if (!jstr(c, "reason"))
                        number(value, json_number_value(json_object_get(c, "value")), unit);
                number(limit, json_number_value(json_object_get(c, "limit")), unit);
                printf("  %-9s ", strempty(jstr(c, "check")));
                print_padded(value, 12);
                printf("limit ");
                print_padded(limit, 10);
                printf("%s", streq_ptr(jstr(c, "verdict"), "over") ? "OVER" : strempty(jstr(c, "verdict")));
                if (jstr(c, "reason"))
                        printf(": %s", jstr(c, "reason"));
                else if (json_object_get(c, "cpu"))
                        printf(" (CPU %lld)", (long long) json_integer_value(json_object_get(c, "cpu")));
                printf("\n");
        }
        printf("\n== Hardware ==\n");
        render_hardware_text(json_object_get(report, "hardware"));
        printf("\n== Audit ==\n");
        (void) render_audit(json_object_get(report, "audit"));
        printf("\n== Latency ==\n");
        if (json_is_object(json_object_get(report, "latency")))
                (void) render_latency(json_object_get(report, "latency"));
        else
                printf("not measured\n");
}

typedef struct CheckRun {
        json_t *hardware, *audit, *latency;
        char *latency_reason, *svg;
} CheckRun;

static void check_run_done(CheckRun *c) {
        json_decref(c->hardware);
        json_decref(c->audit);
        json_decref(c->latency);
        free(c->latency_reason);
        free(c->svg);
}

/* hardware → audit → latency, each for --seconds. */
static int check_measure(Root *root, AuditTarget *x, const CheckLimits *l, CheckRun *c) {
        _cleanup_(latency_result_done) LatencyResult res = {};
        int r = measure_hardware(root, x, l->hwlat_max_us, &c->hardware);
        if (r == 0)
                r = ctl_audit_measure(root, x, &c->audit);
        if (r == 0)
                r = measure_latency(root, x, &res, &c->latency_reason);
        if (r != 0)
                return r == 1 ? 0 : r;
        if (latency_doc(&res, x, l->latency_max_us, &c->latency) < 0 ||
            (arg_html && latency_svg(&res, l->latency_max_us, &c->svg) < 0))
                return log_oom();
        return 0;
}

static int check_all(Root *root, AuditTarget *x) {
        _cleanup_(check_run_done) CheckRun c = {};
        _cleanup_(json_decrefp) json_t *report = NULL;
        _cleanup_free_ char *from = NULL, *date = journal_now_iso8601(), *list = cpu_set_format_list(&x->s.cpus),
                            *html = NULL;
        CheckLimits l = check_limits(x, &from);
        if (!date || !list)
                return log_oom();
        int r = check_measure(root, x, &l, &c);
        if (r != 0)
                return r;
        CheckInput in = {
                .host = json_object_get(c.hardware, "host"),
                .profile = x->profile,
                .cpus = list,
                .source = x->source,
                .date = date,
                .seconds = arg_seconds,
                .limits = l,
                .hardware = c.hardware,
                .audit = c.audit,
                .audit_reason = jstr(json_object_get(c.audit, "osnoise"), "reason"),
                .latency = c.latency,
                .latency_reason = c.latency_reason,
        };
        if (check_report_document(&in, &report) < 0 || (arg_html && check_report_html(report, c.svg, &html) < 0))
                return log_oom();
        if (html && (r = write_file(arg_html, html)) < 0)
                return r;
        if (arg_json)
                r = render_json(report);
        else {
                render_check_text(report);
                r = fflush(stdout) == 0 ? 0 : -EIO;
        }
        return r != 0 ? r : verdict_status(jstr(report, "verdict"), "check");
}

int verb_check(int argc, char **argv) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_(audit_target_done) AuditTarget x = {};
        const char *what = argc > 1 ? argv[1] : NULL;
        int r;

        if (what && !streq(what, "hardware") && !streq(what, "latency")) {
                log_error("check knows 'hardware' and 'latency' (or neither, for all three), not '%s'", what);
                return EXIT_USAGE;
        }
        if (arg_svg && !streq_ptr(what, "latency")) {
                log_error("--svg is check latency's; check%s%s writes its charts with --html", what ? " " : "",
                          strempty(what));
                return EXIT_USAGE;
        }
        if (arg_html && what) {
                log_error("--html writes the report of check (all three); check %s does not take it", what);
                return EXIT_USAGE;
        }
        r = ctl_open_root(&root);
        if (r != 0)
                return r;
        /* A run killed before it could put tracefs back (kill -9, a power cut): put it back now. */
        r = ctl_tracefs_recover(root);
        if (r != 0)
                return r;
        r = ctl_scope(root, arg_cpus, /* or_online= */ streq_ptr(what, "hardware"), &x);
        if (r != 0)
                return r;
        if (streq_ptr(what, "latency"))
                return check_latency(root, &x);
        if (streq_ptr(what, "hardware"))
                return check_hardware(root, &x);
        return check_all(root, &x);
}
