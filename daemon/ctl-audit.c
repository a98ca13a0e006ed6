/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "ctl.h"
#include "journal.h"
#include "latency.h"
#include "profile.h"
#include "strv.h"
#include "systemd.h"

/* audit: what disturbed the isolated CPUs over a window (lib/audit.h). Works on the host
 * directly: it only reads, and the window is the caller's own time. */

void ctl_scope_done(CtlScope *x) {
        strv_free(x->s.partitions);
        strv_free(x->s.irqs_managed);
        strv_free(x->s.irqs_applied);
        free(x->source);
        free(x->profile);
}

/* The applied profile as the journal holds it, resolved for this host: its isolated CPUs and the
 * cgroups of its partitions. 0 when there is none to use. */
static int scope_from_journal(Root *root, Journal *j, CtlScope *x, CpuSet *ret_isolated) {
        _cleanup_(json_decrefp) json_t *doc = NULL;
        Profile *profile = NULL;
        ProfileError pe = {};
        PrepareError e = {};
        Prepared p = {};
        size_t i;
        json_t *v;

        if (!j->profile || !j->source)
                return 0;
        doc = json_loads(j->source, 0, NULL);
        if (!doc || profile_from_document(j->profile, doc, &profile, &pe) < 0) {
                profile_error_done(&pe);
                return 0;
        }
        if (prepare_profile_built(root, profile, 0, &p, &e) < 0) {
                prepare_error_done(&e);
                return 0;
        }
        *ret_isolated = p.resolved->isolated;
        json_int_t limit =
                json_integer_value(json_object_get(json_object_get(p.resolved->doc, "check"), "latency_max_us"));
        x->limit_us = limit > 0 ? (unsigned) limit : 0;
        json_array_foreach (json_object_get(json_object_get(p.resolved->doc, "cpuset"), "partitions"), i, v) {
                const char *name = json_string_value(json_object_get(v, "name"));
                _cleanup_free_ char *slice = name ? systemd_partition_slice(name) : NULL;
                char *c = NULL, *d = NULL;
                if (!name)
                        continue;
                if (!slice || asprintf(&c, "/%s", name) < 0 || strv_push(&x->s.partitions, c) < 0 ||
                    asprintf(&d, "/%s", slice) < 0 || strv_push(&x->s.partitions, d) < 0) {
                        prepared_done(&p);
                        return -ENOMEM;
                }
        }
        prepared_done(&p);
        return 1;
}

int ctl_scope(Root *root, const char *cpus, CtlScope *x) {
        _cleanup_(journal_freep) Journal *j = NULL;
        _cleanup_(journal_error_done) JournalError je = {};
        CpuSet isolated = {}, s;
        int r;

        /* The running kernel's nohz_full CPUs: where the tick should stop. */
        if (root_read_cpu_list(root, "sys/devices/system/cpu/nohz_full", &s) >= 0)
                x->s.nohz_full = s;

        r = journal_load(root, &j, &je);
        if (r < 0 && r != -ENOENT)
                log_warning("the journal cannot be read (%s); auditing without the applied profile",
                            je.message ?: strerror(-r));
        if (r >= 0 && j->profile) {
                x->profile = strdup(j->profile);
                if (!x->profile)
                        return -ENOMEM;
                for (size_t i = 0; i < j->n_applied; i++)
                        if (strncmp(j->applied[i].id, "irq/", 4) == 0 &&
                            strv_extend(&x->s.irqs_applied, j->applied[i].id) < 0)
                                return -ENOMEM;
                for (size_t i = 0; i < j->n_unmovable; i++)
                        if (strncmp(j->unmovable[i].id, "irq/", 4) == 0 &&
                            strv_extend(&x->s.irqs_managed, j->unmovable[i].id) < 0)
                                return -ENOMEM;
                r = scope_from_journal(root, j, x, &isolated);
                if (r < 0)
                        return log_oom();
        }

        if (cpus) {
                CpuSetError ce = {};
                if (cpu_set_parse_list(cpus, &x->s.cpus, &ce) < 0 || cpu_set_is_empty(&x->s.cpus)) {
                        log_error("--cpus=%s: not a CPU list (\"2-7\", \"3,5\"); give the CPUs to observe", cpus);
                        return EXIT_USAGE;
                }
                x->source = strdup("--cpus");
        } else if (!cpu_set_is_empty(&isolated)) {
                x->s.cpus = isolated;
                (void) asprintf(&x->source, "the isolated CPUs of %s", x->profile);
        } else {
                if (root_read_cpu_list(root, "sys/devices/system/cpu/isolated", &s) >= 0)
                        cpu_set_or(&x->s.cpus, &s);
                cpu_set_or(&x->s.cpus, &x->s.nohz_full);
                if (cpu_set_is_empty(&x->s.cpus)) {
                        log_error("no isolated CPUs to observe: no profile with isolated CPUs is applied, and "
                                  "the kernel isolates none (isolcpus=, nohz_full=); give them with --cpus=LIST");
                        return EXIT_USAGE;
                }
                x->source = strdup("the kernel's isolated and nohz_full CPUs");
        }
        if (!x->source)
                return log_oom();
        x->s.source = x->source;
        x->s.profile = x->profile;
        x->s.self = (int) getpid();
        long t = sysconf(_SC_CLK_TCK);
        x->s.clock_ticks = t > 0 ? (unsigned) t : 100;
        return 0;
}

/* Waits for `seconds`, counting down on a terminal; false when SIGINT or SIGTERM came first. */
static bool wait_window(unsigned seconds, const char *cpus) {
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        _cleanup_close_ int fd = signalfd(-1, &mask, SFD_CLOEXEC);
        bool tty = isatty(STDERR_FILENO);
        bool done = true;

        for (unsigned left = seconds; left > 0; left--) {
                if (tty)
                        fprintf(stderr, "\rObserving CPUs %s: %u s left ", cpus, left);
                struct pollfd p = { .fd = fd, .events = POLLIN };
                if (fd >= 0 && poll(&p, 1, 1000) > 0) {
                        done = false;
                        break;
                }
                if (fd < 0)
                        sleep(1);
        }
        if (tty)
                fputs("\r\033[K", stderr);
        sigprocmask(SIG_UNBLOCK, &mask, NULL);
        return done;
}

int verb_audit(int argc, char **argv) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_(ctl_scope_done) CtlScope x = {};
        _cleanup_(audit_snapshot_done) AuditSnapshot a = {}, b = {};
        _cleanup_(json_decrefp) json_t *doc = NULL;
        _cleanup_(osnoise_result_done) OsnoiseResult noise = {};
        int r;

        r = ctl_open_root(&root);
        if (r != 0)
                return r;
        r = ctl_scope(root, arg_cpus, &x);
        if (r != 0)
                return r;
        _cleanup_free_ char *list = cpu_set_format_list(&x.s.cpus);
        if (!list)
                return log_oom();

        /* A run of check latency or audit killed before it put tracefs back: put it back first. */
        _cleanup_free_ char *recovered = NULL;
        r = latency_recover(root, &recovered);
        if (r < 0)
                return log_error_errno(r, "cannot put back tracefs as an interrupted run left it (%s): %m",
                                       "run/rtpart/tracefs.json");
        if (recovered)
                fprintf(stderr, "%s\n", recovered);

        /* The window: the osnoise tracer's, where the kernel has it; else a plain wait. */
        bool mounted = false;
        const char *dir = arg_no_osnoise ? NULL : ctl_tracefs(root, &mounted);
        _cleanup_free_ char *why = NULL;
        bool osnoise = dir && latency_has_tracer(root, dir, "osnoise");
        if (arg_no_osnoise)
                why = strdup("--no-osnoise");
        else if (!osnoise)
                why = strdup(dir ? "the kernel has no osnoise tracer (CONFIG_OSNOISE_TRACER; tracing/available_tracers "
                                   "does not list it)"
                                 : "no tracefs (/sys/kernel/tracing)");
        if (!osnoise)
                ctl_tracefs_done(root, mounted);

        r = audit_snapshot(root, 0, &a);
        if (r < 0) {
                if (osnoise)
                        ctl_tracefs_done(root, mounted);
                return log_error_errno(r, "cannot read the host's counters (/proc/interrupts): %m");
        }
        if (osnoise) {
                volatile sig_atomic_t *stopped = ctl_catch_interrupts(true);
                if (isatty(STDERR_FILENO))
                        fprintf(stderr, "Observing CPUs %s for %u s (the osnoise tracer runs on them)…\n", list,
                                arg_seconds);
                r = latency_run_osnoise(root, dir, mounted, &x.s.cpus, arg_seconds, stopped, &noise);
                (void) ctl_catch_interrupts(false);
                ctl_tracefs_done(root, mounted);
                if (r < 0)
                        return log_error_errno(r,
                                               "the osnoise tracer failed: %m (tracefs is as it was; "
                                               "--no-osnoise audits without it)");
                if (*stopped) {
                        log_error("interrupted: nothing observed; tracefs is as it was");
                        return EXIT_FAILED;
                }
                x.s.osnoise = &noise;
        } else if (!wait_window(arg_seconds, list)) {
                log_error("interrupted: nothing observed");
                return EXIT_FAILED;
        }
        x.s.osnoise_reason = why;
        r = audit_snapshot(root, AUDIT_SNAPSHOT_PLACES, &b);
        if (r < 0)
                return log_error_errno(r, "cannot read the host's counters (/proc/interrupts): %m");
        r = audit_document(&x.s, &a, &b, &doc);
        if (r < 0)
                return log_oom();
        return render_audit(doc);
}
