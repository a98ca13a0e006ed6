/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "ledger.h"
#include "manager.h"
#include "profile.h"

/* org.rtpart.Manager1 (D-Bus, on /org/rtpart/Manager1) and org.rtpart.Manager (varlink): one table
 * of their methods, each declared for both wires and answered by one function. D-Bus is typed
 * where the shape is fixed (ListProfiles, GetDrift, VerifyTyped: drift as a(ssss), knob, domain,
 * expected, actual, "(absent)" for a value that is not there); its other methods answer with the
 * JSON document rtpartctl --json prints for the same command, as one string, which varlink sends
 * as the reply's parameters. The properties and signals are D-Bus's (manager-dbus.c); Watch and
 * Monitor stream varlink events (manager-varlink.c). */

#define ABSENT "(absent)"

/* A VM of the ledger, as varlink declares it (the type Vm, and VmAdd's and VmRemove's replies). */
#define LEDGER_VM_VARLINK \
        "name: string, vcpus: int, cpus: string, reserved: string, emulator: string,\n" \
        "  emulator_policy: (share, isolate), nodes: string, cache_percent: int, hugepages: ?string,\n" \
        "  added: string"

/* ---- the functions ---- */

static int call_list_profiles(MethodCall *call, json_t *params, void *userdata, json_t **ret, ManagerError *e) {
        json_t *doc = NULL;
        int r = manager_list_profiles(userdata, &doc, e);
        if (r < 0)
                return r;
        *ret = json_pack("{s:o}", "profiles", doc);
        return *ret ? 0 : -ENOMEM;
}

static int param_profile(json_t *params, const char **ret, ManagerError *e) {
        const char *p = json_string_value(json_object_get(params, "profile"));
        if (!p)
                return manager_error_set_parameter(e, MANAGER_ERROR_INVALID_ARGUMENT, "profile",
                                                   "profile is a profile name or an absolute path");
        *ret = p;
        return 0;
}

static int call_plan(MethodCall *call, json_t *params, void *userdata, json_t **ret, ManagerError *e) {
        const char *profile = NULL;
        int r = param_profile(params, &profile, e);
        if (r < 0)
                return r;
        if (profile_is_path(profile) && !method_call_is_root(call))
                return manager_error_set(e, MANAGER_ERROR_PERMISSION_DENIED, -EACCES, "%s", MANAGER_PLAN_PATH_DENIED);
        return manager_plan(userdata, profile, ret, e);
}

static int call_apply(MethodCall *call, json_t *params, void *userdata, json_t **ret, ManagerError *e) {
        const char *profile = NULL;
        int r = param_profile(params, &profile, e);
        return r < 0 ? r : manager_apply(userdata, profile, ret, e);
}

static int call_verify(MethodCall *call, json_t *params, void *userdata, json_t **ret, ManagerError *e) {
        return manager_verify(userdata, ret, e);
}

static int call_revert(MethodCall *call, json_t *params, void *userdata, json_t **ret, ManagerError *e) {
        return manager_revert(userdata, ret, e);
}

static int call_correct(MethodCall *call, json_t *params, void *userdata, json_t **ret, ManagerError *e) {
        return manager_correct(userdata, ret, e);
}

static int call_status(MethodCall *call, json_t *params, void *userdata, json_t **ret, ManagerError *e) {
        return manager_status(userdata, ret, e);
}

static int call_describe(MethodCall *call, json_t *params, void *userdata, json_t **ret, ManagerError *e) {
        return manager_describe(userdata, ret, e);
}

static int call_get_drift(MethodCall *call, json_t *params, void *userdata, json_t **ret, ManagerError *e) {
        *ret = manager_drift_list(userdata);
        return *ret ? 0 : -ENOMEM;
}

/* Audit: answered when its window ends (manager-audit.c); a varlink caller that goes away first
 * cancels it. */
typedef struct AuditCall {
        Manager *manager;
        MethodCall *call;
        ManagerAudit *audit;
} AuditCall;

static void audit_done(Manager *m, json_t *doc, ManagerError *e, void *userdata) {
        AuditCall *a = userdata;
        method_call_set_cancel(a->call, NULL, NULL);
        if (doc)
                (void) method_call_reply(a->call, doc);
        else
                (void) method_call_fail(a->call, e);
        method_call_unref(a->call);
        free(a);
}

static void audit_cancel(MethodCall *call, void *userdata) {
        AuditCall *a = userdata;
        manager_audit_cancel(a->manager, a->audit);
        method_call_unref(a->call);
        free(a);
}

static int call_audit(MethodCall *call, json_t *params, void *userdata, json_t **ret, ManagerError *e) {
        json_t *s = json_object_get(params, "seconds"), *cpus = json_object_get(params, "cpus");
        if (s && !json_is_integer(s))
                return manager_error_set_parameter(e, MANAGER_ERROR_INVALID_ARGUMENT, "seconds",
                                                   "seconds is a number, 1 to %u", MANAGER_AUDIT_SECONDS_MAX);
        if (cpus && !json_is_string(cpus))
                return manager_error_set_parameter(e, MANAGER_ERROR_INVALID_ARGUMENT, "cpus",
                                                   "cpus is a CPU list (\"2-7,10\")");
        json_int_t seconds = s ? json_integer_value(s) : 5;
        AuditCall *a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        *a = (AuditCall) { .manager = userdata, .call = method_call_ref(call) };
        int r = manager_audit(userdata, seconds < 0 || seconds > UINT_MAX ? 0 : (unsigned) seconds,
                              json_string_value(cpus), audit_done, a, &a->audit, e);
        if (r < 0) {
                method_call_unref(a->call);
                free(a);
                return r;
        }
        method_call_set_cancel(call, audit_cancel, a);
        return 1;
}

/* VmAdd's parameters: name and vcpus; node (-1 or absent: any), emulator ("share", "isolate";
 * "" or absent: share), cache (percent), hugepages ("" or absent: none). */
static int call_vm_add(MethodCall *call, json_t *params, void *userdata, json_t **ret, ManagerError *e) {
        json_t *vcpus = json_object_get(params, "vcpus"), *node = json_object_get(params, "node");
        json_t *cache = json_object_get(params, "cache");
        const char *emulator = json_string_value(json_object_get(params, "emulator"));
        const char *huge = json_string_value(json_object_get(params, "hugepages"));
        LedgerRequest req = { .name = json_string_value(json_object_get(params, "name")), .node = -1 };

        if (!req.name)
                return manager_error_set_parameter(e, MANAGER_ERROR_INVALID_ARGUMENT, "name", "name is the VM's name");
        if (!json_is_integer(vcpus) || json_integer_value(vcpus) < 1 || json_integer_value(vcpus) > 4096)
                return manager_error_set_parameter(e, MANAGER_ERROR_INVALID_ARGUMENT, "vcpus",
                                                   "vcpus is a number of vCPUs, 1 to 4096");
        if (node && !json_is_null(node) &&
            (!json_is_integer(node) || json_integer_value(node) < -1 || json_integer_value(node) > 4095))
                return manager_error_set_parameter(e, MANAGER_ERROR_INVALID_ARGUMENT, "node",
                                                   "node is a NUMA node number, or -1 for any");
        if (cache && !json_is_null(cache) &&
            (!json_is_integer(cache) || json_integer_value(cache) < 0 || json_integer_value(cache) > 100))
                return manager_error_set_parameter(e, MANAGER_ERROR_INVALID_ARGUMENT, "cache",
                                                   "cache is a percentage, 0 to 100");
        req.emulator_policy = emulator && *emulator ? ledger_emulator_from_string(emulator) : LEDGER_EMULATOR_SHARE;
        if (req.emulator_policy < 0)
                return manager_error_set_parameter(e, MANAGER_ERROR_INVALID_ARGUMENT, "emulator",
                                                   "emulator is \"share\" or \"isolate\"");
        req.n_vcpus = (unsigned) json_integer_value(vcpus);
        if (json_is_integer(node))
                req.node = (int) json_integer_value(node);
        if (json_is_integer(cache))
                req.cache_percent = (unsigned) json_integer_value(cache);
        req.hugepages = huge && *huge ? huge : NULL;
        return manager_vm_add(userdata, &req, ret, e);
}

static int call_vm_remove(MethodCall *call, json_t *params, void *userdata, json_t **ret, ManagerError *e) {
        const char *name = json_string_value(json_object_get(params, "name"));
        if (!name)
                return manager_error_set_parameter(e, MANAGER_ERROR_INVALID_ARGUMENT, "name", "name is the VM's name");
        return manager_vm_remove(userdata, name, ret, e);
}

static int call_vm_list(MethodCall *call, json_t *params, void *userdata, json_t **ret, ManagerError *e) {
        return manager_vm_list(userdata, ret, e);
}

/* ---- D-Bus's typed answers ---- */

static int append_profiles(sd_bus_message *reply, json_t *doc) {
        size_t i;
        json_t *p;
        int r = sd_bus_message_open_container(reply, 'a', "(ss)");
        json_array_foreach (json_object_get(doc, "profiles"), i, p)
                if (r >= 0)
                        r = sd_bus_message_append(reply, "(ss)", json_string_value(json_object_get(p, "name")),
                                                  strempty(json_string_value(json_object_get(p, "summary"))));
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

static const char *value_or_absent(json_t *entry, const char *key) {
        return json_string_value(json_object_get(entry, key)) ?: ABSENT;
}

/* [{knob, domain, expected, actual}] as a(ssss). */
static int append_drift(sd_bus_message *reply, json_t *drift) {
        size_t i;
        json_t *d;
        int r = sd_bus_message_open_container(reply, 'a', "(ssss)");
        json_array_foreach (drift, i, d)
                if (r >= 0)
                        r = sd_bus_message_append(reply, "(ssss)", value_or_absent(d, "knob"),
                                                  value_or_absent(d, "domain"), value_or_absent(d, "expected"),
                                                  value_or_absent(d, "actual"));
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

int manager_dbus_append_drift(sd_bus_message *m, json_t *drift) {
        return append_drift(m, drift);
}

static int append_strv(sd_bus_message *reply, json_t *list) {
        size_t i;
        json_t *s;
        int r = sd_bus_message_open_container(reply, 'a', "s");
        json_array_foreach (list, i, s)
                if (r >= 0)
                        r = sd_bus_message_append(reply, "s", strempty(json_string_value(s)));
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

/* Verify's document as (b in_sync, b reboot_required, a(ssss) drift, as reboot_pending,
 * as unmovable, u checked). */
static int append_verify(sd_bus_message *reply, json_t *doc) {
        int r = sd_bus_message_append(reply, "bb", json_is_true(json_object_get(doc, "in_sync")),
                                      json_is_true(json_object_get(doc, "reboot_required")));
        if (r >= 0)
                r = append_drift(reply, json_object_get(doc, "drift"));
        if (r >= 0)
                r = append_strv(reply, json_object_get(doc, "reboot_pending"));
        if (r >= 0)
                r = append_strv(reply, json_object_get(doc, "unmovable"));
        if (r >= 0)
                r = sd_bus_message_append(reply, "u", (uint32_t) json_integer_value(json_object_get(doc, "checked")));
        return r;
}

/* ---- the table ---- */

#define CHANGES_THE_HOST "changes the host"
/* Audit reads every task's place, and takes a snapshot of them twice. */
#define READS_EVERY_TASK "reads every task of the host"

static const Method manager_methods[] = {
        {
                .name = "ListProfiles",
                .dbus = SD_BUS_METHOD_WITH_ARGS("ListProfiles", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(ss)", profiles), NULL,
                                                SD_BUS_VTABLE_UNPRIVILEGED),
                .dbus_reply = append_profiles,
                .varlink = "# The installed profiles: /etc/rtpart/profiles, then /usr/share/rtpart/profiles.\n"
                           "method ListProfiles() -> (profiles: []ProfileInfo)\n",
                .func = call_list_profiles,
        },
        {
                .name = "Plan",
                .dbus = SD_BUS_METHOD_WITH_ARGS("Plan", SD_BUS_ARGS("s", profile), SD_BUS_RESULT("s", plan), NULL,
                                                SD_BUS_VTABLE_UNPRIVILEGED),
                .varlink =
                        "# What applying a profile (a name, or an absolute path) would change. Changes nothing.\n"
                        "method Plan(profile: string) -> (\n"
                        "  profile: string,\n"
                        "  cpus: (isolated: string, housekeeping: string),\n"
                        "  host: (cpus_online: int, nodes: int, cgroup: string, bootloader: string, systemd: bool),\n"
                        "  changes: []Change,\n"
                        "  unchanged: []Unchanged,\n"
                        "  notes: []string,\n"
                        "  summary: (changes: int, reboot: int, unchanged: int)\n"
                        ")\n",
                .func = call_plan,
        },
        {
                .name = "Apply",
                .dbus = SD_BUS_METHOD_WITH_ARGS("Apply", SD_BUS_ARGS("s", profile), SD_BUS_RESULT("s", result), NULL,
                                                SD_BUS_VTABLE_UNPRIVILEGED),
                .varlink = "# Applies a profile: all or nothing, originals journalled. Needs uid 0.\n"
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
                           ")\n",
                .needs_root = CHANGES_THE_HOST,
                .func = call_apply,
        },
        {
                .name = "Verify",
                .dbus = SD_BUS_METHOD_WITH_ARGS("Verify", SD_BUS_NO_ARGS, SD_BUS_RESULT("s", result), NULL,
                                                SD_BUS_VTABLE_UNPRIVILEGED),
                .varlink =
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
                        ")\n",
                .func = call_verify,
        },
        {
                .name = "Revert",
                .dbus = SD_BUS_METHOD_WITH_ARGS("Revert", SD_BUS_NO_ARGS, SD_BUS_RESULT("s", result), NULL,
                                                SD_BUS_VTABLE_UNPRIVILEGED),
                .varlink = "# Puts back every original value and forgets the profile. Needs uid 0.\n"
                           "method Revert() -> (\n"
                           "  ok: bool,\n"
                           "  restored: int,\n"
                           "  failed: int,\n"
                           "  skipped: int,\n"
                           "  recovered: bool,\n"
                           "  error: ?WriteError,\n"
                           "  notes: []string\n"
                           ")\n",
                .needs_root = CHANGES_THE_HOST,
                .func = call_revert,
        },
        {
                .name = "Correct",
                .dbus = SD_BUS_METHOD_WITH_ARGS("Correct", SD_BUS_NO_ARGS, SD_BUS_RESULT("s", result), NULL,
                                                SD_BUS_VTABLE_UNPRIVILEGED),
                .varlink =
                        "# Writes every drifted knob back now, whatever the drift policy. Needs uid 0.\n"
                        "method Correct() -> (ok: bool, profile: string, written: int, corrected: []Drift, drift: int)\n",
                .needs_root = CHANGES_THE_HOST,
                .func = call_correct,
        },
        {
                .name = "Status",
                .dbus = SD_BUS_METHOD_WITH_ARGS("Status", SD_BUS_NO_ARGS, SD_BUS_RESULT("s", status), NULL,
                                                SD_BUS_VTABLE_UNPRIVILEGED),
                .varlink =
                        "# The applied profile, drift, pending reboot, unmovable items, and the daemon's own state.\n"
                        "method Status() -> (\n"
                        "  profile: ?string,\n"
                        "  applied_at: ?string,\n"
                        "  knobs: int,\n"
                        "  drift: int,\n"
                        "  drifted: []Drift,\n"
                        "  reboot_required: bool,\n"
                        "  reboot_pending: []string,\n"
                        "  unmovable: []string,\n"
                        "  originals: int,\n"
                        "  last_error: ?object,\n"
                        "  transaction_open: bool,\n"
                        "  daemon: (watched_files: int, interval_s: int, drift_events: int, safety_checks: int, policy: string,\n"
                        "          streams: int, task_check: bool, tasks_on_isolated: int, live: bool,\n"
                        "          freshness: [string](checked_usec: int, age_ms: int, watched: bool))\n"
                        ")\n",
                .func = call_status,
        },
        {
                .name = "GetDrift",
                .dbus = SD_BUS_METHOD_WITH_ARGS("GetDrift", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(ssss)", drift), NULL,
                                                SD_BUS_VTABLE_UNPRIVILEGED),
                .dbus_reply = append_drift,
                .func = call_get_drift,
        },
        {
                .name = "VerifyTyped",
                .dbus = SD_BUS_METHOD_WITH_ARGS("VerifyTyped", SD_BUS_NO_ARGS,
                                                SD_BUS_RESULT("b", in_sync, "b", reboot_required, "a(ssss)", drift,
                                                              "as", reboot_pending, "as", unmovable, "u", checked),
                                                NULL, SD_BUS_VTABLE_UNPRIVILEGED),
                .dbus_reply = append_verify,
                .func = call_verify,
        },
        {
                .name = "Describe",
                .dbus = SD_BUS_METHOD_WITH_ARGS("Describe", SD_BUS_NO_ARGS, SD_BUS_RESULT("s", json), NULL,
                                                SD_BUS_VTABLE_UNPRIVILEGED),
                .varlink = "# Every property and the drift known now, without reading the host: the document D-Bus\n"
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
                           ")\n",
                .func = call_describe,
        },
        {
                .name = "Watch",
                .varlink =
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
                        ")\n",
                .varlink_func = manager_varlink_watch,
        },
        {
                .name = "Audit",
                .dbus = SD_BUS_METHOD_WITH_ARGS("Audit", SD_BUS_ARGS("u", seconds), SD_BUS_RESULT("s", audit), NULL,
                                                SD_BUS_VTABLE_UNPRIVILEGED),
                .varlink =
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
                        ")\n",
                .needs_root = READS_EVERY_TASK,
                .func = call_audit,
        },
        {
                .name = "VmAdd",
                .dbus = SD_BUS_METHOD_WITH_ARGS(
                        "VmAdd",
                        SD_BUS_ARGS("s", name, "u", vcpus, "i", node, "s", emulator, "u", cache, "s", hugepages),
                        SD_BUS_RESULT("s", vm), NULL, SD_BUS_VTABLE_UNPRIVILEGED),
                .varlink =
                        "# Reserves isolated CPUs of the applied profile for a VM, recorded in the ledger: a core\n"
                        "# per vCPU (unless cpus.vcpu_siblings is \"together\"), on one NUMA node whenever one has\n"
                        "# room (node: that one; -1 or null: any), never another VM's; the emulator on housekeeping\n"
                        "# CPUs (\"share\") or an isolated core of its own (\"isolate\"). No room: InvalidArgument\n"
                        "# naming how many cores are free on which nodes. Needs uid 0.\n"
                        "method VmAdd(name: string, vcpus: int, node: ?int, emulator: ?string, cache: ?int,\n"
                        "             hugepages: ?string) -> (" LEDGER_VM_VARLINK ")\n",
                .needs_root = CHANGES_THE_HOST,
                .func = call_vm_add,
        },
        {
                .name = "VmRemove",
                .dbus = SD_BUS_METHOD_WITH_ARGS("VmRemove", SD_BUS_ARGS("s", name), SD_BUS_RESULT("s", vm), NULL,
                                                SD_BUS_VTABLE_UNPRIVILEGED),
                .varlink = "# Frees a VM's CPUs: its entry leaves the ledger (and is answered). Needs uid 0.\n"
                           "method VmRemove(name: string) -> (" LEDGER_VM_VARLINK ")\n",
                .needs_root = CHANGES_THE_HOST,
                .func = call_vm_remove,
        },
        {
                .name = "VmList",
                .dbus = SD_BUS_METHOD_WITH_ARGS("VmList", SD_BUS_NO_ARGS, SD_BUS_RESULT("s", ledger), NULL,
                                                SD_BUS_VTABLE_UNPRIVILEGED),
                .varlink = "# The ledger: every VM and the CPUs it holds, in the order they were added; each\n"
                           "# with vcpu_threads ([{vcpu, tid, cpus, drift}]): its running qemu's vCPU threads.\n"
                           "method VmList() -> (version: int, vms: []object)\n",
                .func = call_vm_list,
        },
        {
                .name = "Monitor",
                .varlink = "# The same as Watch.\n"
                           "method Monitor() -> (\n"
                           "  event: (status, drift, corrected, applied, reverted),\n"
                           "  time: string,\n"
                           "  profile: ?string,\n"
                           "  in_sync: bool,\n"
                           "  drift_count: int,\n"
                           "  drift: []Drift\n"
                           ")\n",
                .varlink_func = manager_varlink_watch,
        },
        {}
};

static const MethodErrorName manager_errors[] = {
        {
                MANAGER_ERROR_INVALID_PROFILE,
                EINVAL,
                "# The profile is not valid for this host, or not found: \"FILE: POINTER: MESSAGE\".\n"
                "error InvalidProfile (message: string)\n",
        },
        {
                MANAGER_ERROR_PERMISSION_DENIED,
                EACCES,
                "# The call changes the host, or Plan names a file (read as root), and the caller is not root.\n"
                "error PermissionDenied (message: string)\n",
        },
        {
                MANAGER_ERROR_INVALID_ARGUMENT,
                0,
                "# Audit: seconds out of range, cpus no CPU list, or no isolated CPUs to observe. VmAdd,\n"
                "# VmRemove: a name taken, invalid or not in the ledger, a node the host lacks, no room.\n"
                "error InvalidArgument (message: string)\n",
        },
        {
                MANAGER_ERROR_BUSY,
                0,
                "# Audit: as many audits as may run at once are running.\n"
                "error Busy (message: string)\n",
        },
        {
                MANAGER_ERROR_NOT_APPLIED,
                ENOENT,
                "# Correct or VmAdd was called with no profile applied.\n"
                "error NotApplied (message: string)\n",
        },
        {
                MANAGER_ERROR_FAILED,
                EIO,
                "# The host refused a change (every change of the call was undone) or could not be read.\n"
                "# details: the document of a failed Apply ({ok: false, error: WriteError, rolled_back,\n"
                "# rollback_incomplete, notes}) or Revert.\n"
                "error Failed (message: string, details: ?object)\n",
        },
        {
                /* The varlink server's own (varlink.h): D-Bus never answers with it. */
                "TooManyConnections",
                0,
                "# Sent instead of any reply by a connection rtpartd did not take, which it then closes: the\n"
                "# peer's user has 16 connections open, or all but the 16 kept for root are taken.\n"
                "error TooManyConnections (message: string)\n",
        },
        {}
};

const MethodInterface manager_interface = {
        .dbus_name = MANAGER_DBUS_INTERFACE,
        .varlink_name = MANAGER_VARLINK_INTERFACE,
        .varlink_preamble =
                "# rtpartd: partitions and tunes a realtime (KVM) host, watches every value it set and\n"
                "# reports (or corrects) drift. Every reply is the document `rtpartctl --json` prints for\n"
                "# the same command. Reading is open to everyone; Apply, Revert, Correct, VmAdd and VmRemove\n"
                "# need uid 0.\n"
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
                "# A VM of the ledger: vCPU i runs on the i-th CPU of cpus; reserved is every CPU it holds\n"
                "# (cpus, their idle SMT siblings, an isolated emulator core); CPU and node lists as \"2-5,9\".\n"
                "type Vm (" LEDGER_VM_VARLINK ")\n"
                "\n"
                "# A write that failed: the knob and file (null when the failure was not a knob's), errno.\n"
                "type WriteError (\n"
                "  knob: ?string,\n"
                "  path: ?string,\n"
                "  errno: int,\n"
                "  message: string\n"
                ")\n",
        .methods = manager_methods,
        .errors = manager_errors,
};
