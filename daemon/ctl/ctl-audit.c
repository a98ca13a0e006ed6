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

/* audit: what disturbed the isolated CPUs over a window (lib/observe/audit.h). Works on the host
 * directly: it only reads, and the window is the caller's own time. */

int ctl_scope(Root *root, const char *cpus, AuditTarget *x) {
        _cleanup_(journal_freep) Journal *j = NULL;
        _cleanup_(error_done) Error je = {};
        _cleanup_free_ char *error = NULL, *why = NULL;

        int r = ctl_read_journal(root, &j, &je);
        if (r < 0 && r != -ENOENT && je.message)
                why = error_format(&je, NULL);
        if (r < 0 && r != -ENOENT)
                log_warning("the journal cannot be read (%s); going without the applied profile", why ?: strerror(-r));
        r = audit_target(root, r >= 0 ? j : NULL, cpus, x, &error);
        if (r == -EINVAL && cpus) {
                log_error("--cpus=%s: %s; give the CPUs to observe", cpus, error);
                return EXIT_USAGE;
        }
        if (r == -ENOENT) {
                log_error("%s; give them with --cpus=LIST", error);
                return EXIT_USAGE;
        }
        if (r < 0)
                return log_oom();
        x->s.self = (int) getpid();
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

typedef struct Snapshots {
        Root *root;
        AuditSnapshot *a, *b;
        bool failed;
} Snapshots;

/* The window's two snapshots, taken while the osnoise tracer runs. */
static int take_snapshot(bool begin, void *userdata) {
        Snapshots *s = userdata;
        int r = begin ? audit_snapshot(s->root, 0, s->a) : audit_snapshot(s->root, AUDIT_SNAPSHOT_PLACES, s->b);
        s->failed = r < 0;
        return r;
}

int verb_audit(int argc, char **argv) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_(audit_target_done) AuditTarget x = {};
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

        if (osnoise) {
                /* The snapshots inside the tracer's window: its own setting up and taking down
                 * (ftrace's code patching IPIs every CPU) is not the host's noise. */
                Snapshots snaps = { .root = root, .a = &a, .b = &b };
                volatile sig_atomic_t *stopped = ctl_catch_interrupts(true);
                if (isatty(STDERR_FILENO))
                        fprintf(stderr, "Observing CPUs %s for %u s (the osnoise tracer runs on them)…\n", list,
                                arg_seconds);
                r = latency_run_osnoise(root, dir, mounted, &x.s.cpus, arg_seconds, stopped, take_snapshot, &snaps,
                                        &noise);
                (void) ctl_catch_interrupts(false);
                ctl_tracefs_done(root, mounted);
                if (r < 0 && snaps.failed)
                        return log_error_errno(r, "cannot read the host's counters (/proc/interrupts): %m");
                if (r < 0)
                        return log_error_errno(r,
                                               "the osnoise tracer failed: %m (tracefs is as it was; "
                                               "--no-osnoise audits without it)");
                if (*stopped) {
                        log_error("interrupted: nothing observed; tracefs is as it was");
                        return EXIT_FAILED;
                }
                x.s.osnoise = &noise;
        } else {
                r = audit_snapshot(root, 0, &a);
                if (r < 0)
                        return log_error_errno(r, "cannot read the host's counters (/proc/interrupts): %m");
                if (!wait_window(arg_seconds, list)) {
                        log_error("interrupted: nothing observed");
                        return EXIT_FAILED;
                }
                r = audit_snapshot(root, AUDIT_SNAPSHOT_PLACES, &b);
                if (r < 0)
                        return log_error_errno(r, "cannot read the host's counters (/proc/interrupts): %m");
        }
        x.s.osnoise_reason = why;
        r = audit_document(&x.s, &a, &b, &doc);
        if (r < 0)
                return log_oom();
        return render_audit(doc);
}
