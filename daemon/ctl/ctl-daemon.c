/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctl.h"
#include "varlink.h"

/* The documents of the commands, asked of rtpartd over its varlink socket; made here when it
 * does not run, or (for root) when it does not take the connection. */

#define VARLINK_SOCKET "run/rtpartd/org.rtpart.Manager"
/* An apply that regenerates grub.cfg on a big host takes a while; a daemon that hangs does not
 * hang rtpartctl forever. */
#define DAEMON_TIMEOUT_USEC (10 * 60 * 1000000ULL)

/* A profile argument as rtpartd needs it (an absolute path: its working directory is not ours),
 * and how to say its messages in the caller's words again. */
typedef struct ProfileArg {
        const char *given;
        char *abs; /* NULL for a name */
        char *cwd; /* set when abs was made from a relative path */
} ProfileArg;

static void profile_arg_done(ProfileArg *a) {
        free(a->abs);
        free(a->cwd);
        *a = (ProfileArg) {};
}

static int profile_arg_init(const char *given, ProfileArg *ret) {
        ProfileArg a = { .given = given };
        if (profile_is_path(given)) {
                if (given[0] == '/')
                        a.abs = strdup(given);
                else {
                        a.cwd = getcwd(NULL, 0);
                        if (!a.cwd || asprintf(&a.abs, "%s/%s", a.cwd, given) < 0)
                                a.abs = NULL;
                }
                if (!a.abs) {
                        profile_arg_done(&a);
                        return -ENOMEM;
                }
        }
        *ret = a;
        return 0;
}

static const char *profile_arg_send(const ProfileArg *a) {
        return a->abs ?: a->given;
}

/* rtpartd names the files of a relative path as absolute ones; put them back as the user gave
 * them, as rtpartctl itself names them ("lab.json", "base.json" for a file it includes). */
static char *profile_arg_message(const ProfileArg *a, const char *msg) {
        size_t n;
        char *out;
        if (!msg)
                return strdup("invalid profile");
        if (a && a->cwd) {
                n = strlen(a->abs);
                if (strncmp(msg, a->abs, n) == 0 && msg[n] == ':')
                        return asprintf(&out, "%s%s", a->given, msg + n) < 0 ? NULL : out;
                n = strlen(a->cwd);
                if (strncmp(msg, a->cwd, n) == 0 && msg[n] == '/')
                        return strdup(msg + n + 1);
        }
        return strdup(msg);
}

/* rtpartctl speaks only to an rtpartd of root's or of the caller's own: a socket another user
 * serves (one planted under --root, or a daemon of theirs) gets no call, and its answers are never
 * printed. */
static int check_peer(VarlinkClient *c, const char *where) {
        struct ucred cred = {};
        socklen_t len = sizeof(cred);
        if (getsockopt(varlink_client_get_fd(c), SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
                return log_error_errno(-errno, "cannot tell who serves %s: %m", where);
        if (cred.uid == 0 || cred.uid == geteuid())
                return 0;
        return log_error_errno(-EPERM,
                               "%s is served by uid %u (pid %d), neither root nor you; rtpartctl talks only to an "
                               "rtpartd of root's or your own: remove the socket, or use --no-daemon",
                               where, (unsigned) cred.uid, (int) cred.pid);
}

int ctl_daemon_connect(Root *root, bool needed, VarlinkClient **ret) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        int r, fd;

        /* --state-dir names a journal rtpartd does not keep. */
        if (!needed && (arg_no_daemon || arg_state_dir))
                return 0;
        if (arg_varlink_socket) {
                r = varlink_client_connect(arg_varlink_socket, &c);
                if (r < 0)
                        return log_error_errno(r, "cannot connect to rtpartd at %s: %m", arg_varlink_socket);
        } else {
                /* Found in the root as every other file is: a symlink on the way resolves inside it
                 * and never reaches another tree's rtpartd or the system's. */
                r = root_connect_unix(root, VARLINK_SOCKET, &fd);
                if (r >= 0)
                        r = varlink_client_new(fd, &c);
                if (r == -ENOMEM)
                        return log_oom();
                if (r < 0)
                        return 0; /* absent, or nobody accepts: not running */
        }
        _cleanup_free_ char *where =
                arg_varlink_socket ? strdup(arg_varlink_socket) : root_display_path(root, VARLINK_SOCKET);
        if (!where)
                return log_oom();
        r = check_peer(c, where);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(c);
        return 1;
}

static int daemon_error(const char *method, const char *error, json_t *params, const ProfileArg *pa, json_t **ret_doc) {
        const char *msg = jstr(params, "message");
        if (streq(error, CTL_VARLINK_INTERFACE ".InvalidProfile")) {
                _cleanup_free_ char *m = profile_arg_message(pa, msg);
                fprintf(stderr, "%s\n", m ? m : "invalid profile");
                return EXIT_USAGE;
        }
        if (startswith(method, "Vm") &&
            (streq(error, CTL_VARLINK_INTERFACE ".InvalidArgument") ||
             streq(error, CTL_VARLINK_INTERFACE ".NotApplied")) &&
            msg) {
                /* The ledger's refusal: the request's fault, said as rtpartctl says its own. */
                fprintf(stderr, "%s\n", msg);
                return EXIT_USAGE;
        }
        if (streq(error, CTL_VARLINK_INTERFACE ".PermissionDenied") || streq(error, VARLINK_ERROR_PERMISSION_DENIED))
                return log_error_errno(-EACCES, "rtpartd refused: %s; run rtpartctl as root",
                                       msg ? msg : "permission denied");
        if (streq(error, CTL_VARLINK_INTERFACE ".Failed") && json_is_object(json_object_get(params, "details"))) {
                /* A failed apply's or revert's document, printed as rtpartctl prints its own. */
                int r = ctl_reply_check(streq(method, "Apply") ? "ApplyFailure" : method,
                                        json_object_get(params, "details"));
                if (r < 0)
                        return r;
                *ret_doc = json_incref(json_object_get(params, "details"));
                return -EIO;
        }
        if (msg)
                return log_error_errno(-EIO, "%s", msg);
        if (streq(error, VARLINK_ERROR_SYSTEM))
                return log_error_errno(-EIO, "rtpartd failed: %s",
                                       strerror((int) json_integer_value(json_object_get(params, "errno"))));
        return log_error_errno(-EIO, "rtpartd answered %s", error);
}

int ctl_daemon_error(const char *method, const char *error, json_t *params, json_t **ret_doc) {
        return daemon_error(method, error, params, NULL, ret_doc);
}

/* 0 and the document; a negative errno or an exit status after a message (and, for a failed apply
 * or revert, its document); or, with nothing said and *ret_reason set, -ECONNREFUSED when rtpartd
 * did not take the connection (too many are open) or dropped it before it answered. */
static int daemon_call(VarlinkClient *c, const char *method, const ProfileArg *pa, json_t *send, const char *unwrap,
                       json_t **ret_doc, char **ret_reason) {
        _cleanup_(json_decrefp) json_t *params = NULL;
        _cleanup_free_ char *error = NULL;
        char name[128];

        snprintf(name, sizeof(name), CTL_VARLINK_INTERFACE ".%s", method);
        int r = varlink_client_call(c, name,
                                    pa ? json_pack("{s:s}", "profile", profile_arg_send(pa)) : json_incref(send),
                                    DAEMON_TIMEOUT_USEC, &params, &error);
        if (r == -ECONNRESET || streq_ptr(error, VARLINK_ERROR_TOO_MANY_CONNECTIONS)) {
                const char *msg = error ? jstr(params, "message") : NULL;
                *ret_reason = strdup(msg
                                             ?: error ? "too many connections"
                                                      : "it closed the connection before answering");
                return -ECONNREFUSED;
        }
        if (r == -ETIMEDOUT)
                return log_error_errno(r, "rtpartd did not answer %s within %llu s", method,
                                       DAEMON_TIMEOUT_USEC / 1000000ULL);
        if (r < 0)
                return log_error_errno(r == -ECONNREFUSED ? -EIO : r, "lost the connection to rtpartd: %s",
                                       strerror(-r));
        if (error)
                return daemon_error(method, error, params, pa, ret_doc);
        json_t *doc = unwrap ? json_object_get(params, unwrap) : params;
        if (!doc)
                return log_error_errno(-EBADMSG, "rtpartd answered %s without \"%s\"", method, unwrap);
        r = ctl_reply_check(method, doc);
        if (r < 0)
                return r;
        *ret_doc = json_incref(doc);
        return 0;
}

/* ctl_get_document() and ctl_get_document_params() alike: the profile arg sent as "profile", or
 * send (NULL: no parameters) as they are. */
static int get_document(Root *root, const char *method, const char *arg, json_t *send, bool use_daemon, LocalFunc local,
                        json_t **ret_doc) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        _cleanup_free_ char *reason = NULL;
        ProfileArg pa = {};
        int r = use_daemon ? ctl_daemon_connect(root, /* needed= */ false, &c) : 0;
        if (r < 0)
                return r;
        if (r > 0) {
                bool profile = arg && !send;
                if (profile && profile_arg_init(arg, &pa) < 0)
                        return log_oom();
                r = daemon_call(c, method, profile ? &pa : NULL, send,
                                streq(method, "ListProfiles") ? "profiles" : NULL, ret_doc, &reason);
                profile_arg_done(&pa);
                if (r != -ECONNREFUSED)
                        return r;
                /* A running rtpartd that has no room for us: anyone may close connections but
                 * their own, so root, whom nobody may lock out, goes on without it. */
                if (geteuid() != 0 || arg_varlink_socket)
                        return log_error_errno(
                                r, "rtpartd did not take the connection: %s; %s", reason ?: "out of memory",
                                arg_varlink_socket ? "try again later" : "try again later, or run rtpartctl as root");
                log_warning(
                        "rtpartd did not take the connection (%s); working on the host directly, as with --no-daemon",
                        reason ?: "out of memory");
        }
        _cleanup_(journal_store_freep) JournalStore *journal = NULL;
        r = ctl_open_journal(root, &journal);
        if (r < 0)
                return r;
        ctl_recover(root, journal);
        return local(root, journal, arg, ret_doc);
}

int ctl_get_document(Root *root, const char *method, const char *arg, bool use_daemon, LocalFunc local,
                     json_t **ret_doc) {
        return get_document(root, method, arg, NULL, use_daemon, local, ret_doc);
}

int ctl_get_document_params(Root *root, const char *method, json_t *params, const char *arg, LocalFunc local,
                            json_t **ret_doc) {
        return get_document(root, method, arg, params, /* use_daemon= */ true, local, ret_doc);
}

int ctl_document(const char *method, const char *arg, bool use_daemon, LocalFunc local, Root **ret_root,
                 json_t **ret_doc) {
        int r = ctl_open_root(ret_root);
        if (r != 0)
                return r;
        return ctl_get_document(*ret_root, method, arg, use_daemon, local, ret_doc);
}
