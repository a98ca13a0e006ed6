/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "manager.h"

/* org.rtpart.Manager: the calls of org.rtpart.Manager1, with the documents as the reply's
 * parameters instead of a JSON string, and Watch (alias Monitor) streaming drift. */

const char manager_varlink_description[] =
        "# rtpartd: partitions and tunes a realtime (KVM) host, watches every value it set and\n"
        "# reports (or corrects) drift. Every reply is the document `rtpartctl --json` prints for\n"
        "# the same command. Reading is open to everyone; Apply, Revert and Correct need uid 0.\n"
        "interface org.rtpart.Manager\n"
        "\n"
        "# One value that is not what the profile wants. A value that is not there is null.\n"
        "type Drift (\n"
        "  knob: string,\n"
        "  domain: string,\n"
        "  expected: ?string,\n"
        "  actual: ?string\n"
        ")\n"
        "\n"
        "type ProfileInfo (\n"
        "  name: string,\n"
        "  summary: ?string,\n"
        "  path: string,\n"
        "  origin: (user, system),\n"
        "  overrides_system: bool\n"
        ")\n"
        "\n"
        "# kind: how values compare (auto, cpu-list, cpu-mask, select, bootarg, schemata); note: shown\n"
        "# beside the knob (an IRQ's handlers, why it takes a reboot).\n"
        "type Change (\n"
        "  knob: string,\n"
        "  domain: string,\n"
        "  current: ?string,\n"
        "  desired: ?string,\n"
        "  reboot: bool,\n"
        "  kind: string,\n"
        "  note: ?string\n"
        ")\n"
        "\n"
        "type Unchanged (\n"
        "  knob: string,\n"
        "  domain: string,\n"
        "  value: ?string,\n"
        "  kind: string,\n"
        "  note: ?string\n"
        ")\n"
        "\n"
        "# A write that failed: the knob and file (null when the failure was not a knob's), errno.\n"
        "type WriteError (\n"
        "  knob: ?string,\n"
        "  path: ?string,\n"
        "  errno: int,\n"
        "  message: string\n"
        ")\n"
        "\n"
        "# The installed profiles: /etc/rtpart/profiles, then /usr/share/rtpart/profiles.\n"
        "method ListProfiles() -> (profiles: []ProfileInfo)\n"
        "\n"
        "# What applying a profile (a name, or an absolute path) would change. Changes nothing.\n"
        "method Plan(profile: string) -> (\n"
        "  profile: string,\n"
        "  cpus: (isolated: string, housekeeping: string),\n"
        "  host: (cpus_online: int, nodes: int, cgroup: string, bootloader: string, systemd: bool),\n"
        "  changes: []Change,\n"
        "  unchanged: []Unchanged,\n"
        "  notes: []string,\n"
        "  summary: (changes: int, reboot: int, unchanged: int)\n"
        ")\n"
        "\n"
        "# Applies a profile: all or nothing, originals journalled. Needs uid 0.\n"
        "method Apply(profile: string) -> (\n"
        "  ok: bool,\n"
        "  profile: string,\n"
        "  host_changed: bool,\n"
        "  changed: int,\n"
        "  unchanged: int,\n"
        "  unmovable: int,\n"
        "  skipped: int,\n"
        "  restored: int,\n"
        "  reboot_required: bool,\n"
        "  reboot_changes: int,\n"
        "  reboot_knobs: []string,\n"
        "  recovered: bool,\n"
        "  notes: []string\n"
        ")\n"
        "\n"
        "# How the host stands against the applied profile, from rtpartd's live state: the file\n"
        "# events queued are taken in first, and what no event announces is read again. daemon.live\n"
        "# is false when every knob was read for this answer; freshness has, per domain, when all its\n"
        "# knobs were last read (checked_usec, CLOCK_REALTIME; age_ms) and whether file events\n"
        "# announce every change of it (watched).\n"
        "method Verify() -> (\n"
        "  profile: ?string,\n"
        "  in_sync: bool,\n"
        "  reboot_required: bool,\n"
        "  drift: []Drift,\n"
        "  reboot_pending: []string,\n"
        "  unmovable: []string,\n"
        "  checked: int,\n"
        "  transaction_open: bool,\n"
        "  daemon: (live: bool, freshness: [string](checked_usec: int, age_ms: int, watched: bool))\n"
        ")\n"
        "\n"
        "# Puts back every original value and forgets the profile. Needs uid 0.\n"
        "method Revert() -> (\n"
        "  ok: bool,\n"
        "  restored: int,\n"
        "  failed: int,\n"
        "  skipped: int,\n"
        "  recovered: bool,\n"
        "  error: ?WriteError,\n"
        "  notes: []string\n"
        ")\n"
        "\n"
        "# Writes every drifted knob back now, whatever the drift policy. Needs uid 0.\n"
        "method Correct() -> (ok: bool, profile: string, written: int, corrected: []Drift, drift: int)\n"
        "\n"
        "# The applied profile, drift, pending reboot, unmovable items, and the daemon's own state.\n"
        "method Status() -> (\n"
        "  profile: ?string,\n"
        "  applied_at: ?string,\n"
        "  knobs: int,\n"
        "  drift: int,\n"
        "  reboot_required: bool,\n"
        "  reboot_pending: []string,\n"
        "  unmovable: []string,\n"
        "  originals: int,\n"
        "  last_error: ?object,\n"
        "  transaction_open: bool,\n"
        "  daemon: (watched_files: int, interval_s: int, drift_events: int, safety_checks: int, policy: string,\n"
        "          streams: int, task_check: bool, tasks_on_isolated: int, live: bool,\n"
        "          freshness: [string](checked_usec: int, age_ms: int, watched: bool))\n"
        ")\n"
        "\n"
        "# Every property and the drift known now, without reading the host: the document D-Bus\n"
        "# Describe answers. tasks_unlisted: user tasks on isolated CPUs beyond the ones listed.\n"
        "method Describe() -> (\n"
        "  profile: ?string,\n"
        "  in_sync: bool,\n"
        "  reboot_required: bool,\n"
        "  drift_count: int,\n"
        "  drift: []Drift,\n"
        "  tasks_unlisted: int,\n"
        "  watched_files: int,\n"
        "  interval_s: int\n"
        ")\n"
        "\n"
        "# Streams events; needs \"more\". The first reply is the current state (event \"status\"),\n"
        "# then one reply per event: \"drift\" (new drift found), \"corrected\" (drift written back),\n"
        "# \"applied\" (a profile was applied), \"reverted\". time: when, UTC, to the millisecond.\n"
        "method Watch() -> (\n"
        "  event: (status, drift, corrected, applied, reverted),\n"
        "  time: string,\n"
        "  profile: ?string,\n"
        "  in_sync: bool,\n"
        "  drift_count: int,\n"
        "  drift: []Drift\n"
        ")\n"
        "\n"
        "# What disturbed the isolated CPUs (the applied profile's, else the kernel's; or cpus) over\n"
        "# seconds (default 5, at most 3600): rtpartctl audit's document, without osnoise figures.\n"
        "# Answered when the window ends; at most 4 run at once. Needs uid 0.\n"
        "method Audit(seconds: ?int, cpus: ?string) -> (\n"
        "  seconds: float,\n"
        "  cpus: string,\n"
        "  source: string,\n"
        "  profile: ?string,\n"
        "  verdict: string,\n"
        "  noisy_cpus: string,\n"
        "  osnoise: object,\n"
        "  cpu: []object\n"
        ")\n"
        "\n"
        "# The same as Watch.\n"
        "method Monitor() -> (\n"
        "  event: (status, drift, corrected, applied, reverted),\n"
        "  time: string,\n"
        "  profile: ?string,\n"
        "  in_sync: bool,\n"
        "  drift_count: int,\n"
        "  drift: []Drift\n"
        ")\n"
        "\n"
        "# The profile is not valid for this host, or not found: \"FILE: POINTER: MESSAGE\".\n"
        "error InvalidProfile (message: string)\n"
        "\n"
        "# The call changes the host, or Plan names a file (read as root), and the caller is not root.\n"
        "error PermissionDenied (message: string)\n"
        "\n"
        "# Audit: seconds out of range, cpus no CPU list, or no isolated CPUs to observe.\n"
        "error InvalidArgument (message: string)\n"
        "\n"
        "# Audit: as many audits as may run at once are running.\n"
        "error Busy (message: string)\n"
        "\n"
        "# Correct was called with no profile applied.\n"
        "error NotApplied (message: string)\n"
        "\n"
        "# The host refused a change (every change of the call was undone) or could not be read.\n"
        "# details: the document of a failed Apply ({ok: false, error: WriteError, rolled_back,\n"
        "# rollback_incomplete, notes}) or Revert.\n"
        "error Failed (message: string, details: ?object)\n"
        "\n"
        "# Sent instead of any reply by a connection rtpartd did not take, which it then closes: the\n"
        "# peer's user has 16 connections open, or all but the 16 kept for root are taken.\n"
        "error TooManyConnections (message: string)\n";

static int reply_error(VarlinkCall *call, ManagerError *e, int r) {
        if (!e->name)
                return r;
        char name[128];
        snprintf(name, sizeof(name), MANAGER_VARLINK_INTERFACE ".%s", e->name);
        json_t *p = json_pack("{s:s}", "message", e->message ? e->message : e->name);
        if (p && e->details)
                json_object_set(p, "details", e->details);
        manager_error_done(e);
        return varlink_call_error(call, name, p);
}

static bool peer_is_root(VarlinkCall *call) {
        uid_t uid;
        return varlink_call_get_peer_uid(call, &uid) >= 0 && uid == 0;
}

static int check_root_because(VarlinkCall *call, const char *because) {
        if (peer_is_root(call))
                return 0;
        char msg[256];
        const char *method = strrchr(varlink_call_method(call), '.');
        snprintf(msg, sizeof(msg), "%s %s and needs root (uid 0)", method ? method + 1 : "the call", because);
        (void) varlink_call_error(call, MANAGER_VARLINK_INTERFACE ".PermissionDenied",
                                  json_pack("{s:s}", "message", msg));
        return -EACCES;
}

static int check_root(VarlinkCall *call) {
        return check_root_because(call, "changes the host");
}

static int method_list_profiles(VarlinkCall *call, json_t *params, VarlinkCallFlags flags, void *userdata) {
        ManagerError e = {};
        json_t *doc = NULL;
        int r = manager_list_profiles(userdata, &doc, &e);
        if (r < 0)
                return reply_error(call, &e, r);
        return varlink_call_reply(call, json_pack("{s:o}", "profiles", doc));
}

static int method_plan(VarlinkCall *call, json_t *params, VarlinkCallFlags flags, void *userdata) {
        ManagerError e = {};
        json_t *doc = NULL;
        const char *profile = json_string_value(json_object_get(params, "profile"));
        if (!profile)
                return varlink_call_error_invalid_parameter(call, "profile");
        if (profile_is_path(profile) && !peer_is_root(call))
                return varlink_call_error(call, MANAGER_VARLINK_INTERFACE ".PermissionDenied",
                                          json_pack("{s:s}", "message", MANAGER_PLAN_PATH_DENIED));
        int r = manager_plan(userdata, profile, &doc, &e);
        if (r < 0)
                return reply_error(call, &e, r);
        return varlink_call_reply(call, doc);
}

static int method_apply(VarlinkCall *call, json_t *params, VarlinkCallFlags flags, void *userdata) {
        ManagerError e = {};
        json_t *doc = NULL;
        const char *profile = json_string_value(json_object_get(params, "profile"));
        if (!profile)
                return varlink_call_error_invalid_parameter(call, "profile");
        if (check_root(call) < 0)
                return 0;
        int r = manager_apply(userdata, profile, &doc, &e);
        if (r < 0)
                return reply_error(call, &e, r);
        return varlink_call_reply(call, doc);
}

typedef int (*ManagerCall)(Manager *m, json_t **ret, ManagerError *e);

static int simple(VarlinkCall *call, Manager *m, ManagerCall f, bool privileged) {
        ManagerError e = {};
        json_t *doc = NULL;
        if (privileged && check_root(call) < 0)
                return 0;
        int r = f(m, &doc, &e);
        if (r < 0)
                return reply_error(call, &e, r);
        return varlink_call_reply(call, doc);
}

static int method_verify(VarlinkCall *call, json_t *params, VarlinkCallFlags flags, void *userdata) {
        return simple(call, userdata, manager_verify, false);
}

static int method_revert(VarlinkCall *call, json_t *params, VarlinkCallFlags flags, void *userdata) {
        return simple(call, userdata, manager_revert, true);
}

static int method_correct(VarlinkCall *call, json_t *params, VarlinkCallFlags flags, void *userdata) {
        return simple(call, userdata, manager_correct, true);
}

static int method_status(VarlinkCall *call, json_t *params, VarlinkCallFlags flags, void *userdata) {
        return simple(call, userdata, manager_status, false);
}

static int method_describe(VarlinkCall *call, json_t *params, VarlinkCallFlags flags, void *userdata) {
        return simple(call, userdata, manager_describe, false);
}

/* Audit: answered when its window ends (manager-audit.c); a caller that goes away first cancels
 * it. */
typedef struct AuditCall {
        Manager *manager;
        VarlinkCall *call;
        ManagerAudit *audit;
} AuditCall;

static void on_audit_done(Manager *m, json_t *doc, const ManagerError *e, void *userdata) {
        AuditCall *c = userdata;
        varlink_call_set_disconnect(c->call, NULL, NULL);
        if (doc)
                (void) varlink_call_reply(c->call, doc);
        else {
                char name[128];
                snprintf(name, sizeof(name), MANAGER_VARLINK_INTERFACE ".%s", e->name);
                (void) varlink_call_error(c->call, name, json_pack("{s:s}", "message", strempty(e->message)));
        }
        varlink_call_unref(c->call);
        free(c);
}

static void on_audit_disconnect(VarlinkCall *call, void *userdata) {
        AuditCall *c = userdata;
        manager_audit_cancel(c->manager, c->audit);
        varlink_call_unref(c->call);
        free(c);
}

static int method_audit(VarlinkCall *call, json_t *params, VarlinkCallFlags flags, void *userdata) {
        Manager *m = userdata;
        ManagerError e = {};
        json_t *s = json_object_get(params, "seconds"), *cpus = json_object_get(params, "cpus");
        if (s &&
            (!json_is_integer(s) || json_integer_value(s) < 1 || json_integer_value(s) > MANAGER_AUDIT_SECONDS_MAX))
                return varlink_call_error_invalid_parameter(call, "seconds");
        if (cpus && !json_is_string(cpus))
                return varlink_call_error_invalid_parameter(call, "cpus");
        /* Root only: it reads every task's place, and takes a snapshot of them twice. */
        if (check_root_because(call, "reads every task of the host") < 0)
                return 0;
        AuditCall *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        *c = (AuditCall) { .manager = m, .call = varlink_call_ref(call) };
        int r = manager_audit(m, s ? (unsigned) json_integer_value(s) : 5, json_string_value(cpus), on_audit_done, c,
                              &c->audit, &e);
        if (r < 0) {
                varlink_call_unref(c->call);
                free(c);
                return reply_error(call, &e, r);
        }
        varlink_call_set_disconnect(call, on_audit_disconnect, c);
        return 0;
}

/* When an event happened, to the millisecond: "2026-12-03T05:05:28.123Z". */
static char *now_iso8601_ms(char buf[static 48]) {
        struct timespec ts;
        struct tm tm;
        char sec[24];
        clock_gettime(CLOCK_REALTIME, &ts);
        if (!gmtime_r(&ts.tv_sec, &tm) || strftime(sec, sizeof(sec), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
                return NULL;
        snprintf(buf, 48, "%s.%03dZ", sec, (int) (ts.tv_nsec / 1000000L));
        return buf;
}

static json_t *event_json(Manager *m, const char *event, json_t *drift) {
        char time[48];
        return json_pack("{s:s, s:s?, s:s?, s:b, s:I, s:o}", "event", event, "time", now_iso8601_ms(time), "profile",
                         manager_active_profile(m), "in_sync", manager_in_sync(m), "drift_count",
                         (json_int_t) manager_drift_count(m), "drift", drift ? json_incref(drift) : json_array());
}

static void stream_remove(Manager *m, VarlinkCall *call) {
        for (size_t i = 0; i < m->n_streams; i++)
                if (m->streams[i] == call) {
                        m->streams[i] = m->streams[--m->n_streams];
                        varlink_call_unref(call);
                        return;
                }
}

static void on_stream_disconnect(VarlinkCall *call, void *userdata) {
        stream_remove(userdata, call);
}

static int method_watch(VarlinkCall *call, json_t *params, VarlinkCallFlags flags, void *userdata) {
        Manager *m = userdata;
        if (!(flags & VARLINK_CALL_MORE))
                return varlink_call_error(call, VARLINK_ERROR_EXPECTED_MORE, NULL);
        VarlinkCall **n = realloc(m->streams, (m->n_streams + 1) * sizeof(VarlinkCall *));
        if (!n)
                return -ENOMEM;
        m->streams = n;
        m->streams[m->n_streams++] = varlink_call_ref(call);
        varlink_call_set_disconnect(call, on_stream_disconnect, m);
        _cleanup_(json_decrefp) json_t *all = drift_entries_to_json(m->drift.entries, m->drift.n);
        for (size_t i = 0; all && i < m->tasks.n; i++)
                json_array_append_new(all, drift_entry_to_json(&m->tasks.entries[i]));
        return varlink_call_notify(call, event_json(m, "status", all));
}

/* ---- the manager's events, to every open Watch call ---- */

static void emit(Manager *m, const char *event, json_t *drift) {
        /* Backwards: a failed send drops the stream from the array. */
        for (size_t i = m->n_streams; i-- > 0;) {
                VarlinkCall *c = m->streams[i];
                if (!varlink_call_is_connected(c) || varlink_call_notify(c, event_json(m, event, drift)) < 0) {
                        varlink_call_set_disconnect(c, NULL, NULL);
                        stream_remove(m, c);
                }
        }
}

static const VarlinkMethod manager_methods[] = { { MANAGER_VARLINK_INTERFACE ".ListProfiles", method_list_profiles },
                                                 { MANAGER_VARLINK_INTERFACE ".Plan", method_plan },
                                                 { MANAGER_VARLINK_INTERFACE ".Apply", method_apply },
                                                 { MANAGER_VARLINK_INTERFACE ".Verify", method_verify },
                                                 { MANAGER_VARLINK_INTERFACE ".Revert", method_revert },
                                                 { MANAGER_VARLINK_INTERFACE ".Correct", method_correct },
                                                 { MANAGER_VARLINK_INTERFACE ".Status", method_status },
                                                 { MANAGER_VARLINK_INTERFACE ".Describe", method_describe },
                                                 { MANAGER_VARLINK_INTERFACE ".Watch", method_watch },
                                                 { MANAGER_VARLINK_INTERFACE ".Audit", method_audit },
                                                 { MANAGER_VARLINK_INTERFACE ".Monitor", method_watch },
                                                 {} };

/* Once per uid per minute at most: a user holding many connections does not flood the log. */
static void on_refused(VarlinkServer *s, uid_t uid, int reason, unsigned n_refused, void *userdata) {
        if (reason == -EUSERS)
                log_warning("varlink: refused %u connection%s of uid %u: it has %u open, the most one user may have",
                            n_refused, n_refused == 1 ? "" : "s", (unsigned) uid, VARLINK_CONNECTIONS_PER_UID_MAX);
        else
                log_warning("varlink: refused %u connection%s of uid %d: %u are open, the last %u kept for root",
                            n_refused, n_refused == 1 ? "" : "s", uid == VARLINK_UID_INVALID ? -1 : (int) uid,
                            (unsigned) varlink_server_n_connections(s), VARLINK_CONNECTIONS_ROOT_RESERVE);
}

static void on_drift(Manager *m, ManagerDriftEvent event, const DriftEntry *entries, size_t n, void *userdata) {
        _cleanup_(json_decrefp) json_t *drift = drift_entries_to_json(entries, n);
        if (drift)
                emit(m, event == MANAGER_DRIFT_CORRECTED ? "corrected" : "drift", drift);
}

static void on_applied(Manager *m, const char *profile, bool external, void *userdata) {
        /* Another program's apply reaches a stream as the drift check that follows it. */
        if (!external)
                emit(m, "applied", NULL);
}

static void on_reverted(Manager *m, void *userdata) {
        emit(m, "reverted", NULL);
}

static void on_detach(Manager *m, void *userdata) {
        manager_varlink_detach(m);
}

int manager_varlink_attach(Manager *m, VarlinkServer *server) {
        int r = varlink_server_add_interface(server, MANAGER_VARLINK_INTERFACE, manager_varlink_description,
                                             manager_methods, m);
        if (r < 0)
                return r;
        r = manager_add_listener(m,
                                 &(const ManagerListener) {
                                         .applied = on_applied,
                                         .reverted = on_reverted,
                                         .drift = on_drift,
                                         .detach = on_detach,
                                         .userdata = &m->streams, /* identifies this listener */
                                 });
        if (r < 0)
                return r;
        varlink_server_set_refused(server, on_refused, m);
        m->varlink = server;
        return 0;
}

void manager_varlink_detach(Manager *m) {
        manager_remove_listener(m, &m->streams);
        while (m->n_streams > 0) {
                VarlinkCall *c = m->streams[m->n_streams - 1];
                varlink_call_set_disconnect(c, NULL, NULL);
                stream_remove(m, c);
        }
        free(m->streams);
        m->streams = NULL;
        m->varlink = NULL;
}
