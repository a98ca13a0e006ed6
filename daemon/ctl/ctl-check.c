/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "latency.h"

/* check latency: wake-up latency on the isolated CPUs (lib/observe/latency.h). Works on the host
 * directly: the tracer is the caller's for the window, and tracefs is put back after it. */

static volatile sig_atomic_t stop = 0;

static void on_signal(int sig) {
        stop = 1;
}

const char *ctl_tracefs(Root *root, bool *ret_mounted) {
        const char *dir = latency_tracefs(root);
        *ret_mounted = false;
        /* Not mounted: mounted for the run, unmounted after it (ctl_tracefs_done). */
        if (!dir && root_can(root, ROOT_CAN_MOUNT) && root_is_dir(root, "sys/kernel/tracing") &&
            root_mount(root, "sys/kernel/tracing", "tracefs", NULL) >= 0) {
                dir = latency_tracefs(root);
                *ret_mounted = dir != NULL;
        }
        return dir;
}

void ctl_tracefs_done(Root *root, bool mounted) {
        if (mounted)
                (void) root_umount(root, "sys/kernel/tracing");
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

static int write_svg(const LatencyResult *res, unsigned limit_us) {
        _cleanup_free_ char *svg = NULL;
        int r = latency_svg(res, limit_us, &svg);
        if (r < 0)
                return log_oom();
        _cleanup_close_ int fd = open(arg_svg, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
        if (fd < 0)
                return log_error_errno(-errno, "cannot write %s: %m", arg_svg);
        size_t n = strlen(svg);
        if (write(fd, svg, n) != (ssize_t) n)
                return log_error_errno(-EIO, "cannot write %s: %m", arg_svg);
        return 0;
}

static int measure(Root *root, const AuditTarget *x, LatencyResult *res) {
        bool mounted;
        const char *dir = ctl_tracefs(root, &mounted);
        int r;

        if (dir && latency_has_tracer(root, dir, "timerlat")) {
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

        if (!root_can(root, ROOT_CAN_RUN_PROGRAMS)) {
                log_error("%s has no timerlat tracer (%s), and cyclictest runs only on this host", root->path,
                          dir ? "tracing/available_tracers does not list it" : "no tracefs");
                return EXIT_FAILED;
        }
        r = latency_run_cyclictest(root, &x->s.cpus, arg_seconds, res);
        if (r == -ENOENT) {
                log_error("cannot measure latency here: the kernel has no timerlat tracer (%s; Debian's "
                          "linux-image-rt-amd64 has it, as does any kernel built with CONFIG_TIMERLAT_TRACER), and "
                          "cyclictest is not installed (apt install rt-tests)",
                          dir ? "tracing/available_tracers does not list it" : "tracefs is not mounted");
                return EXIT_FAILED;
        }
        if (r < 0)
                return log_error_errno(r, "cyclictest failed: %m");
        fprintf(stderr, "The kernel has no timerlat tracer: measured with cyclictest (thread latency only).\n");
        return 0;
}

int verb_check(int argc, char **argv) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_(audit_target_done) AuditTarget x = {};
        _cleanup_(json_decrefp) json_t *doc = NULL;
        _cleanup_free_ char *recovered = NULL;
        LatencyResult res = {};
        int r;

        if (!streq(argv[1], "latency")) {
                log_error("check knows only 'latency', not '%s'", argv[1]);
                return EXIT_USAGE;
        }
        r = ctl_open_root(&root);
        if (r != 0)
                return r;
        /* A run killed before it could put tracefs back (kill -9, a power cut): put it back now. */
        r = latency_recover(root, &recovered);
        if (r < 0)
                return log_error_errno(r, "cannot put back tracefs as an interrupted check left it (%s): %m",
                                       "run/rtpart/tracefs.json");
        if (recovered)
                fprintf(stderr, "%s\n", recovered);
        r = ctl_scope(root, arg_cpus, &x);
        if (r != 0)
                return r;
        r = measure(root, &x, &res);
        if (r != 0) {
                latency_result_done(&res);
                return r;
        }
        _cleanup_free_ char *list = cpu_set_format_list(&x.s.cpus);
        r = list ? latency_document(&res, x.limit_us, &doc, NULL) : -ENOMEM;
        if (r >= 0 && json_object_set_new(doc, "cpus", json_string(list)) < 0)
                r = -ENOMEM;
        if (r >= 0)
                r = json_object_set_new(doc, "source", json_string(x.source)) < 0 ? -ENOMEM : 0;
        if (r >= 0 && arg_svg)
                r = write_svg(&res, x.limit_us);
        latency_result_done(&res);
        if (r < 0)
                return r == -ENOMEM ? log_oom() : r;
        return render_latency(doc);
}
