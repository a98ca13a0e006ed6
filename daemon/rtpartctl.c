/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "config.h"
#include "engine.h"
#include "host.h"
#include "profile.h"
#include "root.h"
#include "strv.h"

enum {
        EXIT_OK = 0,
        EXIT_FAILED = 1,
        EXIT_USAGE = 2,         /* bad usage or invalid profile */
        EXIT_DRIFT = 3,
        EXIT_REBOOT = 4,
};

static const char *arg_root = "/";
static const char *arg_state_dir = NULL;
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
               "\n"
               "PROFILE is a name (looked up in /etc/rtpart/profiles, then\n"
               "/usr/share/rtpart/profiles, both under --root) or a path to a .json file.\n"
               "\n"
               "Options:\n"
               "  -r, --root=DIR    Operate on the host tree under DIR instead of /\n"
               "  -j, --json        Print one JSON document\n"
               "  -a, --all         plan: also list knobs already at their desired value\n"
               "      --no-daemon   Do not contact rtpartd; work on the host directly\n"
               "      --state-dir=DIR  Keep the journal in DIR instead of /var/lib/rtpart\n"
               "                    under the root\n"
               "  -h, --help        Show this help\n"
               "      --version     Show the version\n"
               "\n"
               "Exit status: 0 done, 1 failed, 2 bad usage or invalid profile,\n"
               "3 verify found drift, 4 a reboot is needed for boot-time knobs.\n"
               "See rtpartctl(1) and rtpart.profile(5).\n");
}

static int print_json(json_t *doc) {
        int r = json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        fputc('\n', stdout);
        return r < 0 || fflush(stdout) != 0 ? EXIT_FAILED : EXIT_OK;
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
                _cleanup_free_ char *p = root_display_path(root, "sys/devices/system/cpu/online");
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

/* ---- list ---- */

static int verb_list(int argc, char **argv) {
        _cleanup_(root_freep) Root *root = NULL;
        ProfileInfo *l = NULL;
        size_t n = 0;
        int r;

        if (argc > 1) {
                log_error("list takes no argument");
                return EXIT_USAGE;
        }
        r = open_root(&root);
        if (r != EXIT_OK)
                return r;
        r = profile_list(root, &l, &n);
        if (r < 0) {
                log_error("cannot list profiles: %s", strerror(-r));
                return EXIT_FAILED;
        }

        if (arg_json) {
                json_t *arr = json_array();
                for (size_t i = 0; i < n; i++)
                        json_array_append_new(arr, json_pack("{s:s, s:s?, s:s, s:s, s:b}",
                                                             "name", l[i].name,
                                                             "summary", l[i].summary,
                                                             "path", l[i].path,
                                                             "origin", l[i].user ? "user" : "system",
                                                             "overrides_system", l[i].shadows));
                r = print_json(arr);
                json_decref(arr);
        } else {
                size_t w = 4;
                for (size_t i = 0; i < n; i++)
                        w = MAX(w, strlen(l[i].name));
                if (n == 0)
                        printf("No profiles found in /%s or /%s under %s.\n", PROFILE_DIR_USER, PROFILE_DIR_SYSTEM, arg_root);
                for (size_t i = 0; i < n; i++)
                        printf("%-*s  %s%s\n", (int) w, l[i].name, l[i].summary ? l[i].summary : "(no summary)",
                               l[i].user ? l[i].shadows ? "  [user, overrides shipped]" : "  [user]" : "");
                r = EXIT_OK;
        }
        profile_info_free_many(l, n);
        return r;
}

/* ---- show ---- */

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
        if ((r = open_root(&root)) != EXIT_OK || (r = discover(root, &host)) != EXIT_OK)
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

/* ---- plan ---- */

static const char *domain_header(Domain d, const Host *h, char *buf, size_t size) {
        switch (d) {
        case DOMAIN_BOOT:
                snprintf(buf, size, "boot (kernel command line, effective after reboot; bootloader: %s)",
                         bootloader_to_string(h->bootloader));
                return buf;
        case DOMAIN_CPUSET:
                snprintf(buf, size, "cpuset (cgroup %s%s)", cgroup_mode_to_string(h->cgroup_mode),
                         h->systemd_running ? ", slices through systemd" : "");
                return buf;
        default:
                return domain_to_string(d);
        }
}

static int plan_print_text(const Plan *plan, const Host *host, Root *root) {
        _cleanup_free_ char *iso = cpu_set_format_list(&plan->isolated), *hk = cpu_set_format_list(&plan->housekeeping);
        size_t reboot, changes = plan_count_changes(plan, &reboot);
        size_t width = 8;
        bool domains[_DOMAIN_MAX] = {};

        printf("Profile %s for %s (%u CPUs online, %u NUMA node%s, cgroup %s)\n", plan->profile,
               root->is_host ? "this host" : root->path, cpu_set_count(&host->online), host->n_nodes,
               host->n_nodes == 1 ? "" : "s", cgroup_mode_to_string(host->cgroup_mode));
        printf("  housekeeping CPUs: %s\n  isolated CPUs:     %s\n", strempty(hk), strempty(iso));

        for (size_t i = 0; i < plan->n_knobs; i++)
                if (plan->knobs[i].changed || arg_all)
                        width = MAX(width, MIN(strlen(plan->knobs[i].id), (size_t) 44));

        for (int d = 0; d < _DOMAIN_MAX; d++) {
                bool header = false;
                for (size_t i = 0; i < plan->n_knobs; i++) {
                        const Knob *k = &plan->knobs[i];
                        if (k->domain != (Domain) d || !(k->changed || arg_all))
                                continue;
                        if (!header) {
                                char buf[160];
                                printf("\n%s\n", domain_header((Domain) d, host, buf, sizeof(buf)));
                                header = true;
                        }
                        domains[d] = true;
                        _cleanup_free_ char *cur = value_display(k->kind, k->current);
                        _cleanup_free_ char *want = k->desired ? value_display(k->kind, k->desired) : strdup("(removed)");
                        if (k->changed)
                                printf("  %-*s  %s → %s", (int) width, k->id, strempty(cur), strempty(want));
                        else
                                printf("  %-*s  %s (unchanged)", (int) width, k->id, strempty(cur));
                        if (k->note)
                                printf("  [%s]", k->note);
                        fputc('\n', stdout);
                }
        }

        if (plan->notes) {
                printf("\nNotes:\n");
                for (char **n = plan->notes; *n; n++)
                        printf("  - %s\n", *n);
        }
        size_t nd = 0;
        for (int d = 0; d < _DOMAIN_MAX; d++)
                for (size_t i = 0; i < plan->n_knobs; i++)
                        if (plan->knobs[i].domain == (Domain) d && plan->knobs[i].changed) {
                                nd++;
                                break;
                        }
        printf("\n%zu change%s in %zu domain%s (%zu need%s a reboot), %zu knob%s already as desired.\n", changes,
               changes == 1 ? "" : "s", nd, nd == 1 ? "" : "s", reboot, reboot == 1 ? "s" : "", plan->n_knobs - changes,
               plan->n_knobs - changes == 1 ? "" : "s");
        (void) domains;
        return fflush(stdout) == 0 ? EXIT_OK : EXIT_FAILED;
}

static int plan_print_json(const Plan *plan) {
        _cleanup_free_ char *iso = cpu_set_format_list(&plan->isolated), *hk = cpu_set_format_list(&plan->housekeeping);
        json_t *changes = json_array(), *unchanged = json_array(), *notes = json_array();
        size_t reboot;

        for (size_t i = 0; i < plan->n_knobs; i++) {
                const Knob *k = &plan->knobs[i];
                if (k->changed)
                        json_array_append_new(changes, json_pack("{s:s, s:s, s:s?, s:s?, s:b}",
                                                                 "knob", k->id,
                                                                 "domain", domain_to_string(k->domain),
                                                                 "current", k->current,
                                                                 "desired", k->desired,
                                                                 "reboot", k->reboot));
                else
                        json_array_append_new(unchanged, json_pack("{s:s, s:s, s:s?}",
                                                                   "knob", k->id,
                                                                   "domain", domain_to_string(k->domain),
                                                                   "value", k->current));
        }
        for (char **n = plan->notes; n && *n; n++)
                json_array_append_new(notes, json_string(*n));
        size_t n = plan_count_changes(plan, &reboot);
        json_t *doc = json_pack("{s:s, s:{s:s, s:s}, s:o, s:o, s:o, s:{s:I, s:I, s:I}}",
                                "profile", plan->profile,
                                "cpus", "isolated", strempty(iso), "housekeeping", strempty(hk),
                                "changes", changes,
                                "unchanged", unchanged,
                                "notes", notes,
                                "summary", "changes", (json_int_t) n, "reboot", (json_int_t) reboot,
                                "unchanged", (json_int_t) (plan->n_knobs - n));
        if (!doc)
                return EXIT_FAILED;
        int r = print_json(doc);
        json_decref(doc);
        return r;
}

static int verb_plan(int argc, char **argv) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_(host_freep) Host *host = NULL;
        _cleanup_(profile_freep) Profile *p = NULL;
        _cleanup_(resolved_freep) Resolved *res = NULL;
        _cleanup_(plan_freep) Plan *plan = NULL;
        ProfileError e = {};
        int r;

        if (argc != 2) {
                log_error("plan needs exactly one PROFILE");
                return EXIT_USAGE;
        }
        if ((r = open_root(&root)) != EXIT_OK || (r = discover(root, &host)) != EXIT_OK)
                return r;
        r = load_and_resolve(root, host, argv[1], &p, &res);
        if (r != EXIT_OK)
                return r;
        r = plan_build(res, root, &plan, &e);
        if (r < 0) {
                if (r == -EINVAL && e.message) {
                        r = report_profile_error(&e, r);
                        profile_error_done(&e);
                        return r;
                }
                profile_error_done(&e);
                log_error("cannot build the plan: %s", strerror(-r));
                return EXIT_FAILED;
        }
        return arg_json ? plan_print_json(plan) : plan_print_text(plan, host, root);
}


/* ---- apply / revert / verify / status ---- */

static void print_notes(char **notes) {
        for (char **n = notes; n && *n; n++)
                printf("  note: %s\n", *n);
}

static json_t *notes_json(char **notes) {
        json_t *a = json_array();
        for (char **n = notes; n && *n; n++)
                json_array_append_new(a, json_string(*n));
        return a;
}

static int take_lock(Root *root, int *ret_fd) {
        int fd = engine_lock(root, /* wait= */ false);
        if (fd == -EWOULDBLOCK) {
                fprintf(stderr, "rtpartctl: another rtpartctl or rtpartd is changing this host; waiting…\n");
                fd = engine_lock(root, /* wait= */ true);
        }
        if (fd < 0) {
                const char *dir;
                Root *sr = state_root(root, &dir);
                _cleanup_free_ char *p = root_display_path(sr, dir);
                log_error("cannot lock %s: %s%s", strempty(p), strerror(-fd),
                          fd == -EACCES || fd == -EROFS || fd == -EPERM ? " (changing the host needs root)" : "");
                return EXIT_FAILED;
        }
        *ret_fd = fd;
        return EXIT_OK;
}

static int report_failure(const EngineResult *res, int r) {
        if (arg_json) {
                json_t *doc = json_pack("{s:b, s:{s:s?, s:s?, s:i, s:s}, s:b, s:o}",
                                        "ok", 0,
                                        "error", "knob", res->failed_knob, "path", res->failed_path,
                                        "errno", res->failed_errno, "message", strerror(res->failed_errno ? res->failed_errno : -r),
                                        "rolled_back", res->rolled_back,
                                        "notes", notes_json(res->notes));
                print_json(doc);
                json_decref(doc);
        }
        if (res->failed_knob) {
                log_error("writing %s (%s) failed: %s; %s", res->failed_knob, res->failed_path ? res->failed_path : "no file",
                          strerror(res->failed_errno),
                          res->rollback_incomplete ? "the changes of this run were undone except those noted below"
                                                   : "every change of this run was undone; the host is as it was before");
        } else
                log_error("%s", strerror(-r));
        if (!arg_json)
                for (char **n = res->notes; n && *n; n++)
                        fprintf(stderr, "  note: %s\n", *n);
        return EXIT_FAILED;
}

static int verb_apply(int argc, char **argv) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_(host_freep) Host *host = NULL;
        _cleanup_(profile_freep) Profile *p = NULL;
        _cleanup_(resolved_freep) Resolved *res = NULL;
        _cleanup_(plan_freep) Plan *plan = NULL;
        _cleanup_close_ int lock = -EBADF;
        ProfileError e = {};
        EngineResult er = {};
        int r;

        if (argc != 2) {
                log_error("apply needs exactly one PROFILE");
                return EXIT_USAGE;
        }
        if ((r = open_root(&root)) != EXIT_OK || (r = discover(root, &host)) != EXIT_OK)
                return r;
        r = load_and_resolve(root, host, argv[1], &p, &res);
        if (r != EXIT_OK)
                return r;
        if ((r = take_lock(root, &lock)) != EXIT_OK)
                return r;
        r = plan_build(res, root, &plan, &e);
        if (r < 0) {
                r = r == -EINVAL && e.message ? report_profile_error(&e, r) : (log_error("cannot build the plan: %s", strerror(-r)), EXIT_FAILED);
                profile_error_done(&e);
                return r;
        }

        r = engine_apply(root, host, res, plan, &er);
        if (r < 0) {
                r = report_failure(&er, r);
                engine_result_done(&er);
                return r;
        }

        size_t reboot = 0;
        for (size_t i = 0; i < plan->n_knobs; i++)
                if (plan->knobs[i].changed && plan->knobs[i].reboot)
                        reboot++;
        if (arg_json) {
                json_t *doc = json_pack("{s:b, s:s, s:I, s:I, s:I, s:I, s:I, s:b, s:b, s:o}",
                                        "ok", 1, "profile", plan->profile,
                                        "changed", (json_int_t) er.written, "unchanged", (json_int_t) er.unchanged,
                                        "unmovable", (json_int_t) er.refused, "skipped", (json_int_t) er.skipped,
                                        "restored", (json_int_t) er.restored, "reboot_required", reboot > 0,
                                        "recovered", er.recovered, "notes", notes_json(er.notes));
                r = print_json(doc);
                json_decref(doc);
                engine_result_done(&er);
                return r;
        }
        if (er.written == 0 && er.restored == 0 && er.refused == 0)
                printf("%s is already applied: nothing to change (%zu knob%s as desired).\n", plan->profile, er.unchanged,
                       er.unchanged == 1 ? "" : "s");
        else {
                printf("Applied %s: %zu knob%s changed, %zu already as desired", plan->profile, er.written,
                       er.written == 1 ? "" : "s", er.unchanged);
                if (er.restored)
                        printf(", %zu of the previous profile restored", er.restored);
                if (er.refused)
                        printf(", %zu refused by the kernel (recorded as unmovable)", er.refused);
                if (er.skipped)
                        printf(", %zu not writable here", er.skipped);
                printf(".\n");
        }
        if (reboot)
                printf("A reboot is needed for %zu boot argument%s to take effect.\n", reboot, reboot == 1 ? "" : "s");
        print_notes(er.notes);
        engine_result_done(&er);
        return EXIT_OK;
}

static int verb_revert(int argc, char **argv) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_(host_freep) Host *host = NULL;
        _cleanup_close_ int lock = -EBADF;
        EngineResult er = {};
        int r;

        if (argc != 1) {
                log_error("revert takes no argument");
                return EXIT_USAGE;
        }
        if ((r = open_root(&root)) != EXIT_OK || (r = discover(root, &host)) != EXIT_OK)
                return r;
        if ((r = take_lock(root, &lock)) != EXIT_OK)
                return r;
        r = engine_revert(root, host, &er);
        if (arg_json) {
                json_t *doc = json_pack("{s:b, s:I, s:I, s:b, s:o}", "ok", r >= 0, "restored", (json_int_t) er.written,
                                        "failed", (json_int_t) er.failed, "recovered", er.recovered, "notes", notes_json(er.notes));
                print_json(doc);
                json_decref(doc);
        } else if (r >= 0) {
                if (er.written == 0 && er.skipped == 0)
                        printf("Nothing to revert: every knob rtpart changed is at its original value.\n");
                else
                        printf("Reverted: %zu knob%s restored to the value they had before rtpart.\n", er.written,
                               er.written == 1 ? "" : "s");
                print_notes(er.notes);
        } else {
                if (er.failed_knob)
                        log_error("%zu knob%s could not be restored (first: %s: %s); they stay in the journal and a later "
                                  "revert retries them", er.failed, er.failed == 1 ? "" : "s", er.failed_knob,
                                  strerror(er.failed_errno));
                else
                        log_error("revert failed: %s", strerror(-r));
                for (char **n = er.notes; n && *n; n++)
                        fprintf(stderr, "  note: %s\n", *n);
        }
        engine_result_done(&er);
        return r < 0 ? EXIT_FAILED : EXIT_OK;
}

static int read_cmdline(Root *root, char **ret) {
        int r = root_read_line(root, "proc/cmdline", ret);
        if (r == -ENOENT)
                return (*ret = strdup("")) ? 0 : -ENOMEM;
        return r;
}

static int verb_verify(int argc, char **argv) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_free_ char *cmdline = NULL;
        VerifyResult v = {};
        int r;

        if (argc != 1) {
                log_error("verify takes no argument");
                return EXIT_USAGE;
        }
        if ((r = open_root(&root)) != EXIT_OK)
                return r;
        r = read_cmdline(root, &cmdline);
        if (r >= 0)
                r = engine_verify(root, cmdline, &v);
        if (r < 0) {
                const char *dir;
                Root *sr = state_root(root, &dir);
                _cleanup_free_ char *p = root_display_path(sr, dir);
                log_error("cannot verify: %s%s%s", r == -EBADMSG ? strempty(p) : "", r == -EBADMSG ? " is not an rtpart journal" : "",
                          r == -EBADMSG ? "" : strerror(-r));
                return EXIT_FAILED;
        }

        bool reboot = strv_length(v.reboot_pending) > 0;
        int ret = v.n_drift > 0 ? EXIT_DRIFT : reboot ? EXIT_REBOOT : EXIT_OK;
        if (arg_json) {
                json_t *drift = json_array();
                for (size_t i = 0; i < v.n_drift; i++)
                        json_array_append_new(drift, json_pack("{s:s, s:s, s:s?, s:s?}", "knob", v.drift[i].knob,
                                                               "domain", domain_to_string(v.drift[i].domain),
                                                               "expected", v.drift[i].expected, "actual", v.drift[i].actual));
                json_t *pending = json_array(), *unmov = json_array();
                for (char **i = v.reboot_pending; i && *i; i++)
                        json_array_append_new(pending, json_string(*i));
                for (char **i = v.unmovable; i && *i; i++)
                        json_array_append_new(unmov, json_string(*i));
                json_t *doc = json_pack("{s:s?, s:b, s:b, s:o, s:o, s:o, s:I}", "profile", v.profile,
                                        "in_sync", v.n_drift == 0, "reboot_required", reboot, "drift", drift,
                                        "reboot_pending", pending, "unmovable", unmov, "checked", (json_int_t) v.checked);
                if (print_json(doc) != EXIT_OK)
                        ret = EXIT_FAILED;
                json_decref(doc);
        } else if (!v.profile)
                printf("No profile is applied.\n");
        else {
                if (v.n_drift == 0)
                        printf("%s: in sync (%zu knobs checked).\n", v.profile, v.checked);
                else {
                        printf("%s: %zu of %zu knobs drifted:\n", v.profile, v.n_drift, v.checked);
                        for (size_t i = 0; i < v.n_drift; i++) {
                                ValueKind kind = VALUE_AUTO;
                                (void) kind;
                                printf("  %-40s expected %s, found %s\n", v.drift[i].knob, v.drift[i].expected ? v.drift[i].expected : "(absent)",
                                       v.drift[i].actual ? v.drift[i].actual : "(absent)");
                        }
                }
                if (reboot) {
                        printf("Configured but not in the running kernel (reboot pending):");
                        for (char **i = v.reboot_pending; *i; i++)
                                printf(" %s", *i + (startswith(*i, "boot/") ? 5 : 0));
                        printf("\n");
                }
                if (v.unmovable)
                        printf("%zu item%s the kernel does not let anyone move (informational; see status).\n",
                               strv_length(v.unmovable), strv_length(v.unmovable) == 1 ? "" : "s");
        }
        if (v.transaction_open)
                fprintf(stderr, "rtpartctl: the journal holds an interrupted transaction; the next apply, revert or rtpartd start rolls it back\n");
        verify_result_done(&v);
        return ret;
}

static int verb_status(int argc, char **argv) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_free_ char *cmdline = NULL;
        VerifyResult v = {};
        json_t *state = NULL;
        int r;

        if (argc != 1) {
                log_error("status takes no argument");
                return EXIT_USAGE;
        }
        if ((r = open_root(&root)) != EXIT_OK)
                return r;
        r = read_cmdline(root, &cmdline);
        if (r >= 0)
                r = engine_verify(root, cmdline, &v);
        if (r >= 0)
                r = state_load(root, &state);
        if (r < 0) {
                log_error("cannot read the journal: %s", strerror(-r));
                verify_result_done(&v);
                return EXIT_FAILED;
        }
        json_t *last = json_object_get(state, "last_error");
        size_t originals = json_object_size(json_object_get(state, "originals"));
        bool reboot = strv_length(v.reboot_pending) > 0;
        if (arg_json) {
                json_t *unmov = json_array();
                for (char **i = v.unmovable; i && *i; i++)
                        json_array_append_new(unmov, json_string(*i));
                json_t *doc = json_pack("{s:s?, s:s?, s:I, s:I, s:b, s:o, s:I, s:O, s:b}", "profile", v.profile,
                                        "applied_at", v.applied_at, "knobs", (json_int_t) v.checked,
                                        "drift", (json_int_t) v.n_drift, "reboot_required", reboot, "unmovable", unmov,
                                        "originals", (json_int_t) originals, "last_error", last ? last : json_null(),
                                        "transaction_open", v.transaction_open);
                r = print_json(doc);
                json_decref(doc);
        } else {
                if (v.profile)
                        printf("Profile:     %s (applied %s)\n", v.profile, strempty(v.applied_at));
                else
                        printf("Profile:     none applied\n");
                printf("Knobs:       %zu owned, %zu drifted\n", v.checked, v.n_drift);
                printf("Reboot:      %s\n", reboot ? "needed for boot arguments" : "not needed");
                printf("Originals:   %zu values journalled for revert\n", originals);
                if (v.unmovable) {
                        printf("Unmovable:   %zu (the kernel keeps these where they are):\n", strv_length(v.unmovable));
                        for (char **i = v.unmovable; *i; i++)
                                printf("  %s\n", *i);
                }
                const char *msg = json_string_value(json_object_get(last, "message"));
                if (msg)
                        printf("Last error:  %s (%s)\n", msg, strempty(json_string_value(json_object_get(last, "at"))));
                if (v.transaction_open)
                        printf("Journal:     an interrupted transaction is open; the next apply or revert rolls it back\n");
                r = EXIT_OK;
        }
        json_decref(state);
        verify_result_done(&v);
        return r;
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
};

int main(int argc, char **argv) {
        enum { ARG_NO_DAEMON = 0x100, ARG_VERSION, ARG_STATE_DIR };
        static const struct option options[] = {
                { "root", required_argument, NULL, 'r' },
                { "json", no_argument, NULL, 'j' },
                { "all", no_argument, NULL, 'a' },
                { "no-daemon", no_argument, NULL, ARG_NO_DAEMON },
                { "state-dir", required_argument, NULL, ARG_STATE_DIR },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                {}
        };
        int c;

        /* "+" : stop at the first non-option, so that options after the command are the verb's. We
         * accept global options anywhere by re-running getopt on the verb's arguments below. */
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
        (void) arg_no_daemon; /* rtpartd does not exist yet: every command works on the host directly */

        /* A transaction a crash left open is rolled back before anything else is done. */
        {
                _cleanup_(root_freep) Root *root = NULL;
                if (root_new(arg_root, &root) >= 0 && (!arg_state_dir || root_set_state_dir(root, arg_state_dir) >= 0) &&
                    engine_transaction_open(root)) {
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
        }

        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(verbs[i].name, argv[optind]))
                        return verbs[i].run(argc - optind, argv + optind);

        log_error("unknown command '%s'; try 'rtpartctl --help'", argv[optind]);
        return EXIT_USAGE;
}
