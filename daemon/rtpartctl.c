/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "config.h"
#include "document.h"
#include "engine.h"
#include "host.h"
#include "profile.h"
#include "root.h"
#include "strv.h"
#include "varlink.h"

/* Every command that rtpartd serves is a document: built here (working on the host directly) or
 * by rtpartd (daemon/document.c either way), then printed by the same code below, as JSON or as
 * text. Talking to rtpartd or not, the output and the exit status are the same. */

enum {
        EXIT_OK = 0,
        EXIT_FAILED = 1,
        EXIT_USAGE = 2,         /* bad usage or invalid profile */
        EXIT_DRIFT = 3,
        EXIT_REBOOT = 4,
};

#define VARLINK_SOCKET "run/rtpartd/org.rtpart.Manager"
#define VARLINK_INTERFACE "org.rtpart.Manager"
/* An apply that regenerates grub.cfg on a big host takes a while; a daemon that hangs does not
 * hang rtpartctl forever. */
#define DAEMON_TIMEOUT_USEC (10 * 60 * 1000000ULL)

static const char *arg_root = "/";
static const char *arg_state_dir = NULL;
static const char *arg_varlink_socket = NULL;
static bool arg_json = false;
static bool arg_all = false;
static bool arg_no_daemon = false;

_printf_(1, 2)
static int log_error(const char *fmt, ...) {
        va_list ap;
        fputs("rtpartctl: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        return -1;
}

static void help(void) {
        printf("Usage: rtpartctl [OPTIONS] COMMAND [ARG]\n"
               "\n"
               "Partition and tune a realtime (KVM) host from a JSON profile.\n"
               "\n"
               "Commands:\n"
               "  list              List the installed profiles\n"
               "  show PROFILE      Print PROFILE resolved for this host, as JSON\n"
               "  plan PROFILE      Show what applying PROFILE would change; changes nothing\n"
               "  apply PROFILE     Apply PROFILE: all or nothing, originals journalled\n"
               "  verify            Check every knob of the applied profile; exit 3 on drift,\n"
               "                    4 when only a reboot is pending for boot arguments\n"
               "  revert            Put back every original value and forget the profile\n"
               "  status            Show the applied profile, drift, pending reboot, unmovable items\n"
               "  watch             Print drift as rtpartd sees it, one line per knob, until\n"
               "                    interrupted (needs rtpartd)\n"
               "\n"
               "PROFILE is a name (looked up in /etc/rtpart/profiles, then\n"
               "/usr/share/rtpart/profiles, both under --root) or a path to a .json file.\n"
               "When rtpartd runs, the commands go through it; else they work on the host\n"
               "directly, with the same output.\n"
               "\n"
               "Options:\n"
               "  -r, --root=DIR    Operate on the host tree under DIR instead of /\n"
               "  -j, --json        Print one JSON document (watch: one object per line)\n"
               "  -a, --all         plan: also list knobs already at their desired value\n"
               "      --no-daemon   Do not contact rtpartd; work on the host directly\n"
               "      --varlink-socket=PATH\n"
               "                    Talk to the rtpartd listening on PATH instead of\n"
               "                    /run/rtpartd/org.rtpart.Manager under the root\n"
               "      --state-dir=DIR  Keep the journal in DIR instead of /var/lib/rtpart\n"
               "                    under the root (works on the host directly)\n"
               "  -h, --help        Show this help\n"
               "      --version     Show the version\n"
               "\n"
               "Exit status: 0 done, 1 failed, 2 bad usage or invalid profile,\n"
               "3 verify found drift, 4 a reboot is needed for boot-time knobs.\n"
               "See rtpartctl(1), rtpart.profile(5) and rtpartd(8).\n");
}

static int print_json(json_t *doc) {
        int r = json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        fputc('\n', stdout);
        return r < 0 || fflush(stdout) != 0 ? EXIT_FAILED : EXIT_OK;
}

static const char *jstr(json_t *o, const char *key) {
        return json_string_value(json_object_get(o, key));
}

static size_t jsize(json_t *o, const char *key) {
        json_int_t v = json_integer_value(json_object_get(o, key));
        return v > 0 ? (size_t) v : 0;
}

static bool jtrue(json_t *o, const char *key) {
        return json_is_true(json_object_get(o, key));
}

static int open_root(Root **ret) {
        int r = root_new(arg_root, ret);
        if (r < 0) {
                log_error("cannot open root directory %s: %s", arg_root, strerror(-r));
                return EXIT_USAGE;
        }
        if (arg_state_dir) {
                r = root_set_state_dir(*ret, arg_state_dir);
                if (r < 0) {
                        *ret = root_free(*ret);
                        log_error("cannot use state directory %s: %s", arg_state_dir, strerror(-r));
                        return EXIT_USAGE;
                }
        }
        return EXIT_OK;
}

static int discover(Root *root, Host **ret) {
        int r = host_discover(root, 0, ret);
        if (r == -ENODEV) {
                log_error("%s: no online CPUs found in sys/devices/system/cpu/online", root->path);
                return EXIT_FAILED;
        }
        if (r < 0) {
                log_error("cannot read the host's topology under %s: %s", root->path, strerror(-r));
                return EXIT_FAILED;
        }
        return EXIT_OK;
}

static int report_profile_error(ProfileError *e, int r) {
        if (r == -ENOMEM) {
                log_error("out of memory");
                return EXIT_FAILED;
        }
        _cleanup_free_ char *msg = profile_error_format(e);
        fprintf(stderr, "%s\n", msg ? msg : "invalid profile");
        /* A profile that cannot be read for an I/O reason is a failure; anything about its
         * content (including a missing name) is bad usage. */
        return r == -EINVAL || r == -ENOENT ? EXIT_USAGE : EXIT_FAILED;
}

static int load_and_resolve(Root *root, const Host *host, const char *name, Profile **ret_p, Resolved **ret_r) {
        _cleanup_(profile_freep) Profile *p = NULL;
        ProfileError e = {};
        int r;

        r = profile_load(root, name, &p, &e);
        if (r < 0) {
                r = report_profile_error(&e, r);
                profile_error_done(&e);
                return r;
        }
        r = profile_resolve(p, host, ret_r, &e);
        if (r < 0) {
                r = report_profile_error(&e, r);
                profile_error_done(&e);
                return r;
        }
        *ret_p = TAKE_PTR(p);
        return EXIT_OK;
}

static int take_lock(Root *root, int *ret_fd) {
        int fd = engine_lock(root, /* wait= */ false);
        if (fd == -EWOULDBLOCK) {
                fprintf(stderr, "rtpartctl: another rtpartctl or rtpartd is changing this host; waiting…\n");
                fd = engine_lock(root, /* wait= */ true);
        }
        if (fd < 0) {
                const char *dir;
                Root *sr = journal_root(root, &dir);
                _cleanup_free_ char *p = root_display_path(sr, dir);
                log_error("cannot lock %s: %s%s", strempty(p), strerror(-fd),
                          fd == -EACCES || fd == -EROFS || fd == -EPERM ? " (changing the host needs root)" : "");
                return EXIT_FAILED;
        }
        *ret_fd = fd;
        return EXIT_OK;
}

static int read_cmdline(Root *root, char **ret) {
        int r = root_read_line(root, "proc/cmdline", ret);
        if (r == -ENOENT)
                return (*ret = strdup("")) ? 0 : -ENOMEM;
        return r;
}

/* A transaction a crash left open is rolled back before a command works on the host directly
 * (rtpartd does so itself when it serves the command). */
static void recover(Root *root) {
        if (!engine_transaction_open(root))
                return;
        _cleanup_(host_freep) Host *host = NULL;
        _cleanup_close_ int lock = -EBADF;
        EngineResult er = {};
        int r = -EPERM;
        if (host_discover(root, 0, &host) >= 0 && (lock = engine_lock(root, true)) >= 0)
                r = engine_recover(root, host, &er);
        if (r < 0)
                log_error("the journal holds an interrupted transaction that could not be rolled back: %s%s",
                          strerror(-r), r == -EACCES || r == -EPERM ? " (run as root)" : "");
        else
                for (char **n = er.notes; n && *n; n++)
                        fprintf(stderr, "rtpartctl: %s\n", *n);
        engine_result_done(&er);
}

/* ---- the documents, made here ---- */

/* Each returns EXIT_OK and the document, or an exit status (the message printed) and, when the
 * failure has one (a failed apply or revert), its document. */
typedef int (*LocalFunc)(Root *root, const char *arg, json_t **ret_doc);

static int local_list(Root *root, const char *arg, json_t **ret_doc) {
        ProfileInfo *l = NULL;
        size_t n = 0;
        int r = profile_list(root, &l, &n);
        if (r < 0) {
                log_error("cannot list profiles: %s", strerror(-r));
                return EXIT_FAILED;
        }
        *ret_doc = document_list(l, n);
        profile_info_free_many(l, n);
        return *ret_doc ? EXIT_OK : EXIT_FAILED;
}

/* A profile planned for the host. */
typedef struct Planned {
        Host *host;
        Profile *profile;
        Resolved *resolved;
        Plan *plan;
} Planned;

static void planned_done(Planned *p) {
        plan_free(p->plan);
        resolved_free(p->resolved);
        profile_free(p->profile);
        host_free(p->host);
        *p = (Planned) {};
}

/* With ret_lock, the journal's lock is taken once the profile is known to be valid (a wrong one is
 * said without waiting) and before the plan reads the host (what it reads is what this run
 * changes). */
static int plan_profile(Root *root, const char *name, int *ret_lock, Planned *ret) {
        Planned p = {};
        ProfileError e = {};
        int r;

        if ((r = discover(root, &p.host)) != EXIT_OK || (r = load_and_resolve(root, p.host, name, &p.profile, &p.resolved)) != EXIT_OK ||
            (ret_lock && (r = take_lock(root, ret_lock)) != EXIT_OK)) {
                planned_done(&p);
                return r;
        }
        r = plan_build(p.resolved, root, &p.plan, &e);
        if (r < 0) {
                if (r == -EINVAL && e.message)
                        r = report_profile_error(&e, r);
                else {
                        log_error("cannot build the plan: %s", strerror(-r));
                        r = EXIT_FAILED;
                }
                profile_error_done(&e);
                planned_done(&p);
                return r;
        }
        *ret = p;
        return EXIT_OK;
}

static int local_plan(Root *root, const char *name, json_t **ret_doc) {
        Planned p = {};
        int r = plan_profile(root, name, NULL, &p);
        if (r != EXIT_OK)
                return r;
        *ret_doc = document_plan(p.plan, p.host);
        planned_done(&p);
        return *ret_doc ? EXIT_OK : EXIT_FAILED;
}

static int local_apply(Root *root, const char *name, json_t **ret_doc) {
        _cleanup_close_ int lock = -EBADF;
        Planned p = {};
        EngineResult er = {};
        int r;

        if ((r = plan_profile(root, name, &lock, &p)) != EXIT_OK)
                return r;
        r = engine_apply(root, p.host, p.resolved, p.plan, &er);
        *ret_doc = r < 0 ? document_apply_failure(&er, r) : document_apply(p.plan, &er);
        engine_result_done(&er);
        planned_done(&p);
        if (!*ret_doc)
                return EXIT_FAILED;
        return r < 0 ? EXIT_FAILED : EXIT_OK;
}

static int local_revert(Root *root, const char *arg, json_t **ret_doc) {
        _cleanup_(host_freep) Host *host = NULL;
        _cleanup_close_ int lock = -EBADF;
        EngineResult er = {};
        int r;

        if ((r = discover(root, &host)) != EXIT_OK || (r = take_lock(root, &lock)) != EXIT_OK)
                return r;
        r = engine_revert(root, host, &er);
        *ret_doc = document_revert(&er, r);
        engine_result_done(&er);
        if (!*ret_doc)
                return EXIT_FAILED;
        return r < 0 ? EXIT_FAILED : EXIT_OK;
}

static int local_verify(Root *root, const char *arg, json_t **ret_doc) {
        _cleanup_free_ char *cmdline = NULL;
        _cleanup_(journal_freep) Journal *j = NULL;
        _cleanup_(journal_error_done) JournalError je = {};
        VerifyResult v = {};
        int r = read_cmdline(root, &cmdline);
        if (r >= 0)
                r = journal_load(root, &j, &je);
        if (r >= 0)
                r = engine_verify(root, j, cmdline, &v);
        if (r < 0) {
                if (je.message)
                        log_error("cannot verify: %s", je.message);
                else
                        log_error("cannot verify: %s", strerror(-r));
                return EXIT_FAILED;
        }
        *ret_doc = document_verify(&v);
        verify_result_done(&v);
        return *ret_doc ? EXIT_OK : EXIT_FAILED;
}

static int local_status(Root *root, const char *arg, json_t **ret_doc) {
        _cleanup_free_ char *cmdline = NULL;
        _cleanup_(journal_freep) Journal *j = NULL;
        _cleanup_(journal_error_done) JournalError je = {};
        VerifyResult v = {};
        int r = read_cmdline(root, &cmdline);
        if (r >= 0)
                r = journal_load(root, &j, &je);
        if (r >= 0)
                r = engine_verify(root, j, cmdline, &v);
        if (r < 0) {
                log_error("cannot read the journal: %s", je.message ?: strerror(-r));
                return EXIT_FAILED;
        }
        *ret_doc = document_status(&v, j);
        verify_result_done(&v);
        return *ret_doc ? EXIT_OK : EXIT_FAILED;
}

/* ---- the documents, asked of rtpartd ---- */

static bool is_path(const char *s) {
        size_t n = strlen(s);
        return strchr(s, '/') || (n > 5 && streq(s + n - 5, ".json"));
}

/* A profile argument as rtpartd needs it (an absolute path: its working directory is not ours),
 * and how to say its messages in the caller's words again. */
typedef struct ProfileArg {
        const char *given;
        char *abs;              /* NULL for a name */
        char *cwd;              /* set when abs was made from a relative path */
} ProfileArg;

static void profile_arg_done(ProfileArg *a) {
        free(a->abs);
        free(a->cwd);
        *a = (ProfileArg) {};
}

static int profile_arg_init(const char *given, ProfileArg *ret) {
        ProfileArg a = { .given = given };
        if (is_path(given)) {
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
 * them, as rtpartctl itself names them ("lab.json", "./base.json" for a file it includes). */
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
                        return asprintf(&out, "%s%s", strchr(a->given, '/') ? "" : "./", msg + n + 1) < 0 ? NULL : out;
        }
        return strdup(msg);
}

/* 1 and the connection; 0 when rtpartd is not to be used or does not listen (the caller works on
 * the host directly); a negative errno after a message. */
static int daemon_connect(Root *root, bool needed, VarlinkClient **ret) {
        _cleanup_free_ char *path = NULL;
        char buf[64];
        int r;

        /* --state-dir names a journal rtpartd does not keep. */
        if (!needed && (arg_no_daemon || arg_state_dir))
                return 0;
        if (arg_varlink_socket)
                path = strdup(arg_varlink_socket);
        else if (root_is_system(root))
                path = strdup("/" VARLINK_SOCKET);
        else {
                /* Through the root's fd: however long the root's path, and wherever it was given
                 * from. */
                snprintf(buf, sizeof(buf), "/proc/self/fd/%d/%s", root->fd, VARLINK_SOCKET);
                path = strdup(buf);
        }
        if (!path)
                return log_error("out of memory"), -ENOMEM;
        r = varlink_client_connect(path, ret);
        if (r >= 0)
                return 1;
        if (arg_varlink_socket) {
                log_error("cannot connect to rtpartd at %s: %s", arg_varlink_socket, strerror(-r));
                return r;
        }
        return 0; /* absent, or nobody accepts: not running */
}

static int daemon_error(const char *error, json_t *params, const ProfileArg *pa, json_t **ret_doc) {
        const char *msg = jstr(params, "message");
        if (streq(error, VARLINK_INTERFACE ".InvalidProfile")) {
                _cleanup_free_ char *m = profile_arg_message(pa, msg);
                fprintf(stderr, "%s\n", m ? m : "invalid profile");
                return EXIT_USAGE;
        }
        if (streq(error, VARLINK_INTERFACE ".PermissionDenied") || streq(error, VARLINK_ERROR_PERMISSION_DENIED)) {
                log_error("rtpartd refused: %s; run rtpartctl as root", msg ? msg : "permission denied");
                return EXIT_FAILED;
        }
        if (streq(error, VARLINK_INTERFACE ".Failed") && json_is_object(json_object_get(params, "details"))) {
                *ret_doc = json_incref(json_object_get(params, "details"));
                return EXIT_FAILED;
        }
        if (msg)
                log_error("%s", msg);
        else if (streq(error, VARLINK_ERROR_SYSTEM))
                log_error("rtpartd failed: %s", strerror((int) json_integer_value(json_object_get(params, "errno"))));
        else
                log_error("rtpartd answered %s", error);
        return EXIT_FAILED;
}

/* EXIT_OK and the document; an exit status after a message (and, for a failed apply or revert,
 * its document); or, with nothing printed and *ret_reason set, -ECONNREFUSED when rtpartd did not
 * take the connection (too many are open) or dropped it before it answered. */
static int daemon_call(VarlinkClient *c, const char *method, const ProfileArg *pa, const char *unwrap, json_t **ret_doc,
                       char **ret_reason) {
        _cleanup_(json_decrefp) json_t *params = NULL;
        _cleanup_free_ char *error = NULL;
        char name[128];

        snprintf(name, sizeof(name), VARLINK_INTERFACE ".%s", method);
        int r = varlink_client_call(c, name, pa ? json_pack("{s:s}", "profile", profile_arg_send(pa)) : NULL,
                                    DAEMON_TIMEOUT_USEC, &params, &error);
        if (r == -ECONNRESET || streq_ptr(error, VARLINK_ERROR_TOO_MANY_CONNECTIONS)) {
                const char *msg = error ? jstr(params, "message") : NULL;
                *ret_reason = strdup(msg ?: error ? "too many connections" : "it closed the connection before answering");
                return -ECONNREFUSED;
        }
        if (r == -ETIMEDOUT) {
                log_error("rtpartd did not answer %s within %llu s", method, DAEMON_TIMEOUT_USEC / 1000000ULL);
                return EXIT_FAILED;
        }
        if (r < 0) {
                log_error("lost the connection to rtpartd: %s", r == -ECONNRESET ? "it closed it" : strerror(-r));
                return EXIT_FAILED;
        }
        if (error)
                return daemon_error(error, params, pa, ret_doc);
        json_t *doc = unwrap ? json_object_get(params, unwrap) : params;
        if (!doc) {
                log_error("rtpartd answered %s without \"%s\"", method, unwrap);
                return EXIT_FAILED;
        }
        *ret_doc = json_incref(doc);
        return EXIT_OK;
}

/* The document of a command: from rtpartd when it runs, else made here. */
static int get_document(Root *root, const char *method, const char *arg, bool use_daemon, LocalFunc local,
                        json_t **ret_doc) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        _cleanup_free_ char *reason = NULL;
        ProfileArg pa = {};
        int r = use_daemon ? daemon_connect(root, /* needed= */ false, &c) : 0;
        if (r < 0)
                return EXIT_FAILED;
        if (r > 0) {
                if (arg && profile_arg_init(arg, &pa) < 0)
                        return log_error("out of memory"), EXIT_FAILED;
                r = daemon_call(c, method, arg ? &pa : NULL, streq(method, "ListProfiles") ? "profiles" : NULL, ret_doc,
                                &reason);
                profile_arg_done(&pa);
                if (r != -ECONNREFUSED)
                        return r;
                /* A running rtpartd that has no room for us: anyone may close connections but
                 * their own, so root, whom nobody may lock out, goes on without it. */
                if (geteuid() != 0 || arg_varlink_socket) {
                        log_error("rtpartd did not take the connection: %s; %s", reason ?: "out of memory",
                                  arg_varlink_socket ? "try again later" : "try again later, or run rtpartctl as root");
                        return EXIT_FAILED;
                }
                fprintf(stderr, "rtpartctl: warning: rtpartd did not take the connection (%s); working on the host "
                        "directly, as with --no-daemon\n", reason ?: "out of memory");
        }
        recover(root);
        return local(root, arg, ret_doc);
}

/* ---- the documents, printed ---- */

static void print_notes(json_t *notes, FILE *f) {
        size_t i;
        json_t *n;
        json_array_foreach(notes, i, n)
                fprintf(f, "  note: %s\n", json_string_value(n));
}

static int print_list(json_t *doc) {
        size_t w = 4, i, n = json_array_size(doc);
        json_t *e;
        if (arg_json)
                return print_json(doc);
        json_array_foreach(doc, i, e)
                w = MAX(w, strlen(strempty(jstr(e, "name"))));
        if (n == 0)
                printf("No profiles found in /%s or /%s under %s.\n", PROFILE_DIR_USER, PROFILE_DIR_SYSTEM, arg_root);
        json_array_foreach(doc, i, e) {
                bool user = streq_ptr(jstr(e, "origin"), "user");
                printf("%-*s  %s%s\n", (int) w, strempty(jstr(e, "name")), jstr(e, "summary") ?: "(no summary)",
                       user ? jtrue(e, "overrides_system") ? "  [user, overrides shipped]" : "  [user]" : "");
        }
        return fflush(stdout) == 0 ? EXIT_OK : EXIT_FAILED;
}

static void print_domain_header(Domain d, json_t *host) {
        switch (d) {
        case DOMAIN_BOOT:
                printf("\nboot (kernel command line, effective after reboot; bootloader: %s)\n", strempty(jstr(host, "bootloader")));
                return;
        case DOMAIN_CPUSET:
                printf("\ncpuset (cgroup %s%s)\n", strempty(jstr(host, "cgroup")),
                       jtrue(host, "systemd") ? ", slices through systemd" : "");
                return;
        default:
                printf("\n%s\n", domain_to_string(d));
        }
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

static int print_plan(json_t *doc, Root *root) {
        json_t *host = json_object_get(doc, "host"), *cpus = json_object_get(doc, "cpus");
        json_t *changes = json_object_get(doc, "changes"), *unchanged = json_object_get(doc, "unchanged");
        json_t *summary = json_object_get(doc, "summary");
        size_t width = 8, i, nd = 0, n_nodes = jsize(host, "nodes");
        size_t changes_n = jsize(summary, "changes"), reboot = jsize(summary, "reboot"), same = jsize(summary, "unchanged");
        json_t *k;

        if (arg_json)
                return print_json(doc);
        printf("Profile %s for %s (%zu CPUs online, %zu NUMA node%s, cgroup %s)\n", strempty(jstr(doc, "profile")),
               root_is_system(root) ? "this host" : root->path, jsize(host, "cpus_online"), n_nodes, n_nodes == 1 ? "" : "s",
               strempty(jstr(host, "cgroup")));
        printf("  housekeeping CPUs: %s\n  isolated CPUs:     %s\n", strempty(jstr(cpus, "housekeeping")),
               strempty(jstr(cpus, "isolated")));

        json_array_foreach(changes, i, k)
                width = MAX(width, MIN(strlen(strempty(jstr(k, "knob"))), (size_t) 44));
        if (arg_all)
                json_array_foreach(unchanged, i, k)
                        width = MAX(width, MIN(strlen(strempty(jstr(k, "knob"))), (size_t) 44));

        /* By domain, in the order of the backends; with --all, a domain's knobs already as
         * desired after its changes. */
        for (int d = 0; d < _DOMAIN_MAX; d++) {
                bool header = false, any_change = false;
                for (int pass = 0; pass < (arg_all ? 2 : 1); pass++)
                        json_array_foreach(pass == 0 ? changes : unchanged, i, k) {
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
                json_array_foreach(notes, i, k)
                        printf("  - %s\n", json_string_value(k));
        }
        printf("\n%zu change%s in %zu domain%s (%zu need%s a reboot), %zu knob%s already as desired.\n", changes_n,
               changes_n == 1 ? "" : "s", nd, nd == 1 ? "" : "s", reboot, reboot == 1 ? "s" : "", same,
               same == 1 ? "" : "s");
        return fflush(stdout) == 0 ? EXIT_OK : EXIT_FAILED;
}

static int print_apply(json_t *doc) {
        if (arg_json)
                return print_json(doc);
        const char *profile = strempty(jstr(doc, "profile"));
        size_t changed = jsize(doc, "changed"), unchanged = jsize(doc, "unchanged"), restored = jsize(doc, "restored"),
               refused = jsize(doc, "unmovable"), skipped = jsize(doc, "skipped"), reboot = jsize(doc, "reboot_changes");
        if (changed == 0 && restored == 0 && refused == 0)
                printf("%s is already applied: nothing to change (%zu knob%s as desired).\n", profile, unchanged,
                       unchanged == 1 ? "" : "s");
        else {
                printf("Applied %s: %zu knob%s changed, %zu already as desired", profile, changed, changed == 1 ? "" : "s",
                       unchanged);
                if (restored)
                        printf(", %zu of the previous profile restored", restored);
                if (refused)
                        printf(", %zu refused by the kernel (recorded as unmovable)", refused);
                if (skipped)
                        printf(", %zu not writable here", skipped);
                printf(".\n");
        }
        if (reboot)
                printf("A reboot is needed for %zu boot argument%s to take effect.\n", reboot, reboot == 1 ? "" : "s");
        print_notes(json_object_get(doc, "notes"), stdout);
        return fflush(stdout) == 0 ? EXIT_OK : EXIT_FAILED;
}

static int print_apply_failure(json_t *doc) {
        json_t *error = json_object_get(doc, "error");
        if (arg_json)
                (void) print_json(doc);
        if (jstr(error, "knob"))
                log_error("writing %s (%s) failed: %s%s%s%s; %s", jstr(error, "knob"), jstr(error, "path") ?: "no file",
                          strempty(jstr(error, "message")), jstr(error, "detail") ? " (kernel: " : "",
                          strempty(jstr(error, "detail")), jstr(error, "detail") ? ")" : "",
                          jtrue(doc, "rollback_incomplete") ? "the changes of this run were undone except those noted below"
                                                            : "every change of this run was undone; the host is as it was before");
        else
                log_error("%s", strempty(jstr(error, "message")));
        if (!arg_json)
                print_notes(json_object_get(doc, "notes"), stderr);
        return EXIT_FAILED;
}

static int print_revert(json_t *doc) {
        bool ok = jtrue(doc, "ok");
        json_t *error = json_object_get(doc, "error");
        size_t restored = jsize(doc, "restored"), failed = jsize(doc, "failed");
        if (arg_json)
                (void) print_json(doc);
        else if (ok) {
                if (restored == 0 && jsize(doc, "skipped") == 0)
                        printf("Nothing to revert: every knob rtpart changed is at its original value.\n");
                else
                        printf("Reverted: %zu knob%s restored to the value they had before rtpart.\n", restored,
                               restored == 1 ? "" : "s");
                print_notes(json_object_get(doc, "notes"), stdout);
        } else {
                if (jstr(error, "knob"))
                        log_error("%zu knob%s could not be restored (first: %s: %s); they stay in the journal and a later "
                                  "revert retries them", failed, failed == 1 ? "" : "s", jstr(error, "knob"),
                                  strempty(jstr(error, "message")));
                else
                        log_error("revert failed: %s", strempty(jstr(error, "message")));
                print_notes(json_object_get(doc, "notes"), stderr);
        }
        return ok ? EXIT_OK : EXIT_FAILED;
}

static int print_verify(json_t *doc) {
        json_t *drift = json_object_get(doc, "drift"), *pending = json_object_get(doc, "reboot_pending");
        json_t *unmovable = json_object_get(doc, "unmovable"), *e;
        const char *profile = jstr(doc, "profile");
        size_t n_drift = json_array_size(drift), checked = jsize(doc, "checked"), i;
        bool reboot = jtrue(doc, "reboot_required");
        int ret = n_drift > 0 ? EXIT_DRIFT : reboot ? EXIT_REBOOT : EXIT_OK;

        if (arg_json) {
                if (print_json(doc) != EXIT_OK)
                        ret = EXIT_FAILED;
        } else if (!profile)
                printf("No profile is applied.\n");
        else {
                if (n_drift == 0)
                        printf("%s: in sync (%zu knobs checked).\n", profile, checked);
                else {
                        printf("%s: %zu of %zu knobs drifted:\n", profile, n_drift, checked);
                        json_array_foreach(drift, i, e)
                                printf("  %-40s expected %s, found %s\n", strempty(jstr(e, "knob")),
                                       jstr(e, "expected") ?: "(absent)", jstr(e, "actual") ?: "(absent)");
                }
                if (reboot) {
                        printf("Configured but not in the running kernel (reboot pending):");
                        json_array_foreach(pending, i, e) {
                                const char *id = strempty(json_string_value(e));
                                printf(" %s", id + (startswith(id, "boot/") ? 5 : 0));
                        }
                        printf("\n");
                }
                size_t nu = json_array_size(unmovable);
                if (nu > 0)
                        printf("%zu item%s the kernel does not let anyone move (informational; see status).\n", nu,
                               nu == 1 ? "" : "s");
        }
        if (jtrue(doc, "transaction_open"))
                fprintf(stderr, "rtpartctl: the journal holds an interrupted transaction; the next apply, revert or rtpartd start rolls it back\n");
        if (!arg_json && fflush(stdout) != 0)
                ret = EXIT_FAILED;
        return ret;
}

static int print_status(json_t *doc) {
        json_t *unmovable = json_object_get(doc, "unmovable"), *last = json_object_get(doc, "last_error");
        json_t *daemon = json_object_get(doc, "daemon"), *e;
        const char *profile = jstr(doc, "profile");
        size_t i;

        if (arg_json)
                return print_json(doc);
        if (profile)
                printf("Profile:     %s (applied %s)\n", profile, strempty(jstr(doc, "applied_at")));
        else
                printf("Profile:     none applied\n");
        printf("Knobs:       %zu owned, %zu drifted\n", jsize(doc, "knobs"), jsize(doc, "drift"));
        printf("Reboot:      %s\n", jtrue(doc, "reboot_required") ? "needed for boot arguments" : "not needed");
        printf("Originals:   %zu values journalled for revert\n", jsize(doc, "originals"));
        if (json_array_size(unmovable) > 0) {
                printf("Unmovable:   %zu (the kernel keeps these where they are):\n", json_array_size(unmovable));
                json_array_foreach(unmovable, i, e)
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
                       "since it started\n", jsize(daemon, "watched_files"), jsize(daemon, "interval_s"),
                       jsize(daemon, "drift_events"), jsize(daemon, "drift_events") == 1 ? "" : "s");
        if (jtrue(daemon, "task_check"))
                printf("Tasks:       %zu user task%s may run on isolated CPUs (rtpartctl watch names them)\n",
                       jsize(daemon, "tasks_on_isolated"), jsize(daemon, "tasks_on_isolated") == 1 ? "" : "s");
        return fflush(stdout) == 0 ? EXIT_OK : EXIT_FAILED;
}

/* ---- the verbs ---- */

static int verb_list(int argc, char **argv) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_(json_decrefp) json_t *doc = NULL;
        int r;

        if (argc > 1) {
                log_error("list takes no argument");
                return EXIT_USAGE;
        }
        if ((r = open_root(&root)) != EXIT_OK)
                return r;
        if ((r = get_document(root, "ListProfiles", NULL, true, local_list, &doc)) != EXIT_OK)
                return r;
        return print_list(doc);
}

static int verb_show(int argc, char **argv) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_(host_freep) Host *host = NULL;
        _cleanup_(profile_freep) Profile *p = NULL;
        _cleanup_(resolved_freep) Resolved *res = NULL;
        int r;

        if (argc != 2) {
                log_error("show needs exactly one PROFILE");
                return EXIT_USAGE;
        }
        if ((r = open_root(&root)) != EXIT_OK)
                return r;
        recover(root);
        if ((r = discover(root, &host)) != EXIT_OK)
                return r;
        r = load_and_resolve(root, host, argv[1], &p, &res);
        if (r != EXIT_OK)
                return r;

        json_t *out = json_object();
        json_object_set_new(out, "name", json_string(res->name));
        json_t *files = json_array();
        for (char **f = p->files; f && *f; f++)
                json_array_append_new(files, json_string(*f));
        json_object_set_new(out, "files", files);
        json_object_update(out, res->doc);
        r = print_json(out);
        json_decref(out);
        return r;
}

static int verb_plan(int argc, char **argv) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_(json_decrefp) json_t *doc = NULL;
        int r;

        if (argc != 2) {
                log_error("plan needs exactly one PROFILE");
                return EXIT_USAGE;
        }
        if ((r = open_root(&root)) != EXIT_OK)
                return r;
        /* rtpartd reads a file as root: it names files for root only. Anyone else reads their
         * own file, here. */
        bool daemon = !is_path(argv[1]) || geteuid() == 0;
        if ((r = get_document(root, "Plan", argv[1], daemon, local_plan, &doc)) != EXIT_OK)
                return r;
        return print_plan(doc, root);
}

static int verb_apply(int argc, char **argv) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_(json_decrefp) json_t *doc = NULL;
        int r;

        if (argc != 2) {
                log_error("apply needs exactly one PROFILE");
                return EXIT_USAGE;
        }
        if ((r = open_root(&root)) != EXIT_OK)
                return r;
        r = get_document(root, "Apply", argv[1], true, local_apply, &doc);
        if (r == EXIT_FAILED && doc)
                return print_apply_failure(doc);
        if (r != EXIT_OK)
                return r;
        return print_apply(doc);
}

static int verb_revert(int argc, char **argv) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_(json_decrefp) json_t *doc = NULL;
        int r;

        if (argc != 1) {
                log_error("revert takes no argument");
                return EXIT_USAGE;
        }
        if ((r = open_root(&root)) != EXIT_OK)
                return r;
        r = get_document(root, "Revert", NULL, true, local_revert, &doc);
        if (!doc)
                return r;
        return print_revert(doc);
}

static int verb_verify(int argc, char **argv) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_(json_decrefp) json_t *doc = NULL;
        int r;

        if (argc != 1) {
                log_error("verify takes no argument");
                return EXIT_USAGE;
        }
        if ((r = open_root(&root)) != EXIT_OK)
                return r;
        if ((r = get_document(root, "Verify", NULL, true, local_verify, &doc)) != EXIT_OK)
                return r;
        return print_verify(doc);
}

static int verb_status(int argc, char **argv) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_(json_decrefp) json_t *doc = NULL;
        int r;

        if (argc != 1) {
                log_error("status takes no argument");
                return EXIT_USAGE;
        }
        if ((r = open_root(&root)) != EXIT_OK)
                return r;
        if ((r = get_document(root, "Status", NULL, true, local_status, &doc)) != EXIT_OK)
                return r;
        return print_status(doc);
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
static int print_event(json_t *p) {
        const char *event = strempty(jstr(p, "event"));
        _cleanup_free_ char *now = jstr(p, "time") ? NULL : now_iso8601_ms();
        const char *time = jstr(p, "time") ?: strempty(now);
        size_t i;
        json_t *d;

        if (streq(event, "applied") || streq(event, "reverted")) {
                if (arg_json) {
                        _cleanup_(json_decrefp) json_t *o = json_pack("{s:s, s:s, s:s?}", "time", time, "event", event,
                                                                      "profile", jstr(p, "profile"));
                        if (!o || json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER) < 0)
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
                json_array_foreach(json_object_get(p, "drift"), i, d) {
                        if (arg_json) {
                                _cleanup_(json_decrefp) json_t *o = json_pack(
                                        "{s:s, s:s, s:s?, s:s?, s:O?, s:O?}", "time", time,
                                        "event", corrected ? "corrected" : "drift", "knob", jstr(d, "knob"),
                                        "domain", jstr(d, "domain"), "expected", json_object_get(d, "expected"),
                                        "actual", json_object_get(d, "actual"));
                                if (!o || json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER) < 0)
                                        return -EIO;
                                fputc('\n', stdout);
                        } else
                                printf("%s  %-40s expected %s, found %s%s\n", time, strempty(jstr(d, "knob")),
                                       jstr(d, "expected") ?: "(absent)", jstr(d, "actual") ?: "(absent)",
                                       corrected ? "  corrected" : "");
                }
        return fflush(stdout) == 0 ? 0 : -EIO;
}

static int verb_watch(int argc, char **argv) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        _cleanup_close_ int sfd = -EBADF;
        sigset_t mask;
        int r;

        if (argc != 1) {
                log_error("watch takes no argument");
                return EXIT_USAGE;
        }
        if (arg_no_daemon) {
                log_error("watch streams what rtpartd sees; it has no --no-daemon mode");
                return EXIT_USAGE;
        }
        if ((r = open_root(&root)) != EXIT_OK)
                return r;
        r = daemon_connect(root, /* needed= */ true, &c);
        if (r < 0)
                return EXIT_FAILED;
        if (r == 0) {
                log_error("rtpartd is not running; watch needs it");
                return EXIT_FAILED;
        }

        /* Interrupted is the normal end: SIGINT and SIGTERM are read, not delivered. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0 || (sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
                log_error("cannot handle SIGINT: %s", strerror(errno));
                return EXIT_FAILED;
        }
        r = varlink_client_send(c, VARLINK_INTERFACE ".Watch", NULL, VARLINK_CALL_MORE);
        /* A connection rtpartd did not take says why: read on. */
        if (r < 0 && r != -ECONNRESET) {
                log_error("lost the connection to rtpartd: %s", strerror(-r));
                return EXIT_FAILED;
        }
        for (;;) {
                _cleanup_(json_decrefp) json_t *m = NULL;
                r = varlink_client_recv(c, 0, &m);
                if (r == -EAGAIN) {
                        struct pollfd p[2] = {
                                { .fd = varlink_client_get_fd(c), .events = POLLIN },
                                { .fd = sfd, .events = POLLIN },
                        };
                        if (poll(p, 2, -1) < 0 && errno != EINTR) {
                                log_error("poll: %s", strerror(errno));
                                return EXIT_FAILED;
                        }
                        if (p[1].revents & POLLIN)
                                return EXIT_OK;
                        continue;
                }
                if (r == -ECONNRESET) {
                        log_error("rtpartd closed the connection (it stopped)");
                        return EXIT_FAILED;
                }
                if (r < 0) {
                        log_error("lost the connection to rtpartd: %s", strerror(-r));
                        return EXIT_FAILED;
                }
                const char *error = jstr(m, "error");
                if (error) {
                        _cleanup_(json_decrefp) json_t *ignored = NULL;
                        return daemon_error(error, json_object_get(m, "parameters"), NULL, &ignored);
                }
                json_t *p = json_object_get(m, "parameters");
                if (streq_ptr(jstr(p, "event"), "status") && !arg_json) {
                        size_t n = jsize(p, "drift_count");
                        if (jstr(p, "profile") && n == 0)
                                fprintf(stderr, "Watching %s: in sync; Ctrl-C to stop.\n", jstr(p, "profile"));
                        else if (jstr(p, "profile"))
                                fprintf(stderr, "Watching %s: %zu knob%s drifted; Ctrl-C to stop.\n", jstr(p, "profile"),
                                        n, n == 1 ? "" : "s");
                        else
                                fprintf(stderr, "No profile applied yet; watching. Ctrl-C to stop.\n");
                }
                if (print_event(p) < 0)
                        return EXIT_FAILED;
                if (!jtrue(m, "continues"))
                        return EXIT_OK;
        }
}

typedef struct Verb {
        const char *name;
        int (*run)(int argc, char **argv);
} Verb;

static const Verb verbs[] = {
        { "list", verb_list },
        { "show", verb_show },
        { "plan", verb_plan },
        { "apply", verb_apply },
        { "verify", verb_verify },
        { "revert", verb_revert },
        { "status", verb_status },
        { "watch", verb_watch },
};

int main(int argc, char **argv) {
        enum { ARG_NO_DAEMON = 0x100, ARG_VERSION, ARG_STATE_DIR, ARG_VARLINK };
        static const struct option options[] = {
                { "root", required_argument, NULL, 'r' },
                { "json", no_argument, NULL, 'j' },
                { "all", no_argument, NULL, 'a' },
                { "no-daemon", no_argument, NULL, ARG_NO_DAEMON },
                { "varlink-socket", required_argument, NULL, ARG_VARLINK },
                { "state-dir", required_argument, NULL, ARG_STATE_DIR },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                {}
        };
        int c;

        /* GNU getopt permutes: options may come before or after the command. */
        while ((c = getopt_long(argc, argv, "r:jah", options, NULL)) >= 0)
                switch (c) {
                case 'r':
                        arg_root = optarg;
                        break;
                case 'j':
                        arg_json = true;
                        break;
                case 'a':
                        arg_all = true;
                        break;
                case ARG_NO_DAEMON:
                        arg_no_daemon = true;
                        break;
                case ARG_VARLINK:
                        if (optarg[0] != '/') {
                                log_error("--varlink-socket needs an absolute path, not '%s'", optarg);
                                return EXIT_USAGE;
                        }
                        arg_varlink_socket = optarg;
                        break;
                case ARG_STATE_DIR:
                        arg_state_dir = optarg;
                        break;
                case 'h':
                        help();
                        return EXIT_OK;
                case ARG_VERSION:
                        printf("rtpartctl %s\n", PACKAGE_VERSION);
                        return EXIT_OK;
                default:
                        fprintf(stderr, "Try 'rtpartctl --help'.\n");
                        return EXIT_USAGE;
                }

        if (optind >= argc) {
                log_error("missing command; try 'rtpartctl --help'");
                return EXIT_USAGE;
        }
        if (arg_no_daemon && arg_varlink_socket) {
                log_error("--no-daemon and --varlink-socket contradict each other");
                return EXIT_USAGE;
        }

        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(verbs[i].name, argv[optind]))
                        return verbs[i].run(argc - optind, argv + optind);

        log_error("unknown command '%s'; try 'rtpartctl --help'", argv[optind]);
        return EXIT_USAGE;
}
