/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>

#include "ctl.h"
#include "document.h"
#include "engine.h"
#include "journal.h"
#include "varlink.h"

/* verify, status, watch: how the host stands against the applied profile. */

/* Every knob of the journal's profile against the host, the boot arguments against the running
 * kernel's /proc/cmdline ("" when absent). The journal is returned for status; a journal that is
 * not one, or holds a wrong entry, or is not one rtpart trusts, is refused and ret_error says why. */
static int verify_host(Root *root, JournalStore *journal, VerifyResult *ret, Journal **ret_journal, Error *ret_error) {
        _cleanup_free_ char *cmdline = NULL;
        _cleanup_(journal_freep) Journal *j = NULL;
        int r = root_read_line(root, "proc/cmdline", &cmdline);
        if (r == -ENOENT)
                r = (cmdline = strdup("")) ? 0 : -ENOMEM;
        if (r >= 0)
                r = journal_store_load(journal, &j, ret_error);
        if (r >= 0)
                r = engine_verify(root, j, cmdline, ret);
        if (r >= 0 && ret_journal)
                *ret_journal = TAKE_PTR(j);
        return r;
}

/* verify_host()'s failure said: what, and where the journal was refused. */
static int verify_failure(int r, const char *what, const Error *e) {
        if (!e->message)
                return log_error_errno(r, "%s: %m", what);
        _cleanup_free_ char *msg = error_format(e, NULL);
        return log_error_errno(r, "%s: %s", what, strempty(msg));
}

static int local_verify(Root *root, JournalStore *journal, const char *arg, json_t **ret_doc) {
        _cleanup_(error_done) Error je = {};
        VerifyResult v = {};
        int r = verify_host(root, journal, &v, NULL, &je);
        if (r < 0)
                return verify_failure(r, "cannot verify", &je);
        *ret_doc = document_verify(&v);
        verify_result_done(&v);
        return *ret_doc ? 0 : -ENOMEM;
}

int verb_verify(int argc, char **argv) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_(json_decrefp) json_t *doc = NULL;
        int r = ctl_document("Verify", NULL, true, local_verify, &root, &doc);
        return r != 0 ? r : render_verify(doc);
}

static int local_status(Root *root, JournalStore *journal, const char *arg, json_t **ret_doc) {
        _cleanup_(journal_freep) Journal *j = NULL;
        _cleanup_(error_done) Error je = {};
        VerifyResult v = {};
        int r = verify_host(root, journal, &v, &j, &je);
        if (r < 0)
                return verify_failure(r, "cannot read the journal", &je);
        *ret_doc = document_status(&v, j);
        verify_result_done(&v);
        return *ret_doc ? 0 : -ENOMEM;
}

int verb_status(int argc, char **argv) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_(json_decrefp) json_t *doc = NULL;
        int r = ctl_document("Status", NULL, true, local_status, &root, &doc);
        return r != 0 ? r : render_status(doc);
}

/* The first reply of the stream ("status") said to the person watching. */
static void watch_banner(json_t *p) {
        size_t n = jsize(p, "drift_count");
        if (jstr(p, "profile") && n == 0)
                fprintf(stderr, "Watching %s: in sync; Ctrl-C to stop.\n", jstr(p, "profile"));
        else if (jstr(p, "profile"))
                fprintf(stderr, "Watching %s: %zu knob%s drifted; Ctrl-C to stop.\n", jstr(p, "profile"), n,
                        n == 1 ? "" : "s");
        else
                fprintf(stderr, "No profile applied yet; watching. Ctrl-C to stop.\n");
}

int verb_watch(int argc, char **argv) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        _cleanup_close_ int sfd = -EBADF;
        sigset_t mask;
        int r;

        if (arg_no_daemon) {
                log_error("watch streams what rtpartd sees; it has no --no-daemon mode");
                return EXIT_USAGE;
        }
        if ((r = ctl_open_root(&root)) != 0)
                return r;
        r = ctl_daemon_connect(root, /* needed= */ true, &c);
        if (r < 0)
                return r;
        if (r == 0)
                return log_error_errno(-ECONNREFUSED, "rtpartd is not running; watch needs it");

        /* Interrupted is the normal end: SIGINT and SIGTERM are read, not delivered. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0 || (sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0)
                return log_error_errno(-errno, "cannot handle SIGINT: %m");
        r = varlink_client_send(c, CTL_VARLINK_INTERFACE ".Watch", NULL, VARLINK_CALL_MORE);
        /* A connection rtpartd did not take says why: read on. */
        if (r < 0 && r != -ECONNRESET)
                return log_error_errno(r, "lost the connection to rtpartd: %m");
        for (;;) {
                _cleanup_(json_decrefp) json_t *m = NULL;
                r = varlink_client_recv(c, 0, &m);
                if (r == -EAGAIN) {
                        struct pollfd p[2] = {
                                { .fd = varlink_client_get_fd(c), .events = POLLIN },
                                { .fd = sfd, .events = POLLIN },
                        };
                        if (poll(p, 2, -1) < 0 && errno != EINTR)
                                return log_error_errno(-errno, "poll: %m");
                        if (p[1].revents & POLLIN)
                                return 0;
                        continue;
                }
                if (r == -ECONNRESET)
                        return log_error_errno(r, "rtpartd closed the connection (it stopped)");
                if (r < 0)
                        return log_error_errno(r, "lost the connection to rtpartd: %m");
                const char *error = jstr(m, "error");
                if (error) {
                        _cleanup_(json_decrefp) json_t *ignored = NULL;
                        return ctl_daemon_error("Watch", error, json_object_get(m, "parameters"), &ignored);
                }
                json_t *p = json_object_get(m, "parameters");
                r = ctl_reply_check("Watch", p);
                if (r < 0)
                        return r;
                if (streq_ptr(jstr(p, "event"), "status") && !arg_json)
                        watch_banner(p);
                r = render_watch_event(p);
                if (r < 0)
                        return r;
                if (!jtrue(m, "continues"))
                        return 0;
        }
}
