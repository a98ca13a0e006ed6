/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* rtpartd's logic: one Manager owns the root, the journal as last read, the drift it knows of and
 * the watcher. Its calls are declared once for D-Bus and varlink (manager-methods.c: the wire's
 * method table), and every answer is the JSON document `rtpartctl --json` prints for the same
 * command; manager-dbus.c and manager-varlink.c add what only one wire has (properties and
 * signals; Watch streams). manager-internal.h maps its files. */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "backend.h"
#include "engine.h"
#include "log.h"
#include "manager-drift.h"
#include "method.h"
#include "root.h"
#include "task.h"
#include "varlink.h"
#include "watch.h"

/* ---- the manager ---- */

typedef enum DriftPolicy {
        DRIFT_REPORT,
        DRIFT_CORRECT,
        _DRIFT_POLICY_MAX,
        _DRIFT_POLICY_INVALID = -EINVAL,
} DriftPolicy;

/* Why a call failed: a ManagerError (method.h), named by one of these, the last component of the
 * error's name on both interfaces: org.rtpart.Manager1.Error.<name> and org.rtpart.Manager.<name>. */
#define MANAGER_ERROR_INVALID_PROFILE "InvalidProfile" /* "FILE: POINTER: MESSAGE", or not found */
#define MANAGER_ERROR_PERMISSION_DENIED "PermissionDenied"
#define MANAGER_ERROR_NOT_APPLIED "NotApplied" /* Correct with no active profile */
#define MANAGER_ERROR_FAILED "Failed"          /* the host refused; message says where */
#define MANAGER_ERROR_INVALID_ARGUMENT "InvalidArgument"
#define MANAGER_ERROR_BUSY "Busy" /* too many of these calls at once */

typedef struct Manager Manager;
typedef struct ManagerAudit ManagerAudit;
typedef struct ManagerNewcomers ManagerNewcomers;

/* ---- what the manager announces ----
 *
 * The manager knows no front end: D-Bus (manager-dbus.c) and varlink (manager-varlink.c) each
 * register a listener when attached, and the manager calls every listener's hooks in the order
 * registered. Every hook may be NULL. */

typedef enum ManagerDriftEvent {
        MANAGER_DRIFT_DETECTED,  /* new or changed drift (DriftDetected; "drift") */
        MANAGER_DRIFT_CORRECTED, /* drift written back (Corrected; "corrected") */
        _MANAGER_DRIFT_EVENT_MAX,
        _MANAGER_DRIFT_EVENT_INVALID = -EINVAL,
} ManagerDriftEvent;

typedef struct ManagerListener {
        /* A profile was applied: by an Apply (or the start-up re-apply), or, with external, by
         * another program writing the journal. */
        void (*applied)(Manager *m, const char *profile, bool external, void *userdata);
        /* Every knob was reverted by a Revert. */
        void (*reverted)(Manager *m, void *userdata);
        /* Drift found or corrected: the entries this event is about (not every known one). */
        void (*drift)(Manager *m, ManagerDriftEvent event, const DriftEntry *entries, size_t n, void *userdata);
        /* An Apply (or the start-up re-apply) failed; what it wrote was undone. */
        void (*apply_failed)(Manager *m, const char *profile, void *userdata);
        /* An Audit call's window ended: its document. */
        void (*audited)(Manager *m, const json_t *doc, void *userdata);
        /* ActiveProfile, InSync, RebootRequired or DriftCount changed. */
        void (*properties_changed)(Manager *m, void *userdata);
        /* The manager is freed: the listener lets go of it. */
        void (*detach)(Manager *m, void *userdata);
        void *userdata;
} ManagerListener;

/* The listener is copied; userdata identifies it for manager_remove_listener(). */
int manager_add_listener(Manager *m, const ManagerListener *l);
void manager_remove_listener(Manager *m, void *userdata);

typedef struct ManagerOptions {
        uint64_t interval_usec;       /* 0: the profile's drift.interval_s, else 60 s */
        uint64_t debounce_usec;       /* 0: the watcher's default (5 ms) */
        bool pin;                     /* pin the daemon to housekeeping CPUs (real host only) */
        bool uevents, proc_connector; /* kernel event sources beside inotify */
} ManagerOptions;

struct Manager {
        sd_event *event;
        Root *root; /* not owned */
        ManagerOptions options;
        Watcher *watcher;
        sd_event_source *trim_source; /* gives the heap back after a call (post source) */

        JournalStore *store; /* the journal's directory, opened once */
        Journal *journal;    /* state.json as last read */
        char *journal_error; /* why state.json as it is now was refused, NULL */
        uint64_t watch_key;  /* digest of the (knob, path) list the watcher has */
        bool watching;       /* … and whether it has one */
        bool starting;       /* manager_startup() before its watch: the knob files are not watched yet */
        bool placing_again;  /* place_again() runs: its own writes start no other */
        char *profile;       /* active profile (the journal's), NULL */
        char *settings_hash; /* the journal hash the settings below were read for */
        DriftPolicy policy[_DOMAIN_MAX];
        DriftPolicy policy_default; /* the profile's "drift" policy, before per-domain ones */
        uint64_t profile_interval_usec;
        /* Objects the kernel makes while the daemon runs, one per backend that declares them
         * (manager-newcomers.c). */
        ManagerNewcomers **newcomers;
        size_t n_newcomers;

        /* What Verify and Status answer from (manager-check.c): the last full read of every knob
         * (start-up, safety check, reload, a changed journal) and what file events and the reads
         * since have established. */
        struct {
                bool valid;                      /* a full read since the journal was loaded */
                bool hotplug;                    /* a CPU went or came since: BACKEND_HOTPLUG_MOVES
                                                  * domains are read again */
                uint64_t read_usec[_DOMAIN_MAX]; /* CLOCK_REALTIME µs when all its knobs were read */
                char **reboot_pending, **vanished;
                StringSet unfiled; /* applied knobs with no file to watch (threads, boot arguments) */
        } live;

        DriftSet drift;      /* the journal's knobs found drifted, in the order found */
        json_t *corrections; /* knob id → [count, window start] */
        StringSet not_owned; /* knobs a backend cannot write here (left out of the
                                         * journal by the engine): not "new" again and again */
        bool reboot_required;
        uint64_t drift_events;  /* drift reports since start */
        uint64_t safety_checks; /* safety-timer ticks since start */

        /* User tasks on isolated CPUs (manager-task.c). */
        TaskRules task_rules;
        CpuSet task_housekeeping; /* where a task is moved, and its "expected" value */
        DriftPolicy task_policy;  /* drift.domains.task only: never drift.policy's */
        bool task_check;          /* the real host, isolated CPUs, not every task allowed */
        DriftSet tasks;           /* "task/PID", domain "task", in the order found */
        uint64_t tasks_unlisted;  /* found beyond MANAGER_TASKS_MAX at the last check */
        struct {
                bool valid, in_sync, reboot_required;
                unsigned drift_count;
                char *profile;
        } emitted; /* property values last announced */

        ManagerListener *listeners;
        size_t n_listeners;

        /* the methods (manager-methods.c), for both front ends */
        MethodBinding methods;
        /* the two front ends' own state (manager.c does not touch it) */
        sd_bus *bus;
        sd_bus_slot *bus_slot; /* the properties and signals */
        VarlinkServer *varlink;
        VarlinkCall **streams; /* open Watch/Monitor calls */
        /* Audit calls in their window (manager-audit.c). */
        ManagerAudit **audits;
        size_t n_audits;
        size_t n_streams;
};

int manager_new(sd_event *event, Root *root, const ManagerOptions *options, Manager **ret);
Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);

/* Rolls back an interrupted transaction, re-applies the journal's profile against the host as it
 * is now (the tuning survives a reboot), pins the daemon, and starts watching. */
int manager_startup(Manager *m);

/* The calls of both interfaces. Each returns 0 and the document, or a negative errno and e. */
int manager_list_profiles(Manager *m, json_t **ret, ManagerError *e);
int manager_plan(Manager *m, const char *profile, json_t **ret, ManagerError *e);
int manager_apply(Manager *m, const char *profile, json_t **ret, ManagerError *e);
int manager_verify(Manager *m, json_t **ret, ManagerError *e);

/* ---- Audit (manager-audit.c) ---- */

#define MANAGER_AUDITS_MAX 4U
#define MANAGER_AUDIT_SECONDS_MAX 3600U

/* The end of an Audit: the document (the callee's), or e with why it failed. */
typedef void (*ManagerAuditDone)(Manager *m, json_t *doc, ManagerError *e, void *userdata);
/* Starts observing cpus (NULL: the isolated ones, as rtpartctl audit chooses them) for `seconds`;
 * done is called from the event loop when the window ends, unless cancelled first. Errors:
 * InvalidArgument (seconds out of 1…3600, cpus no list, no CPUs to observe), Busy. */
int manager_audit(Manager *m, unsigned seconds, const char *cpus, ManagerAuditDone done, void *userdata,
                  ManagerAudit **ret, ManagerError *e);
void manager_audit_cancel(Manager *m, ManagerAudit *a);
/* Ends every audit: each done is called with the error "rtpartd is stopping". */
void manager_audits_free(Manager *m);
int manager_revert(Manager *m, json_t **ret, ManagerError *e);
int manager_status(Manager *m, json_t **ret, ManagerError *e);
/* Every property and the known drift in one document, for D-Bus Describe and varlink Describe:
 * {profile, in_sync, reboot_required, drift_count, drift: [{knob, domain, expected, actual}],
 *  tasks_unlisted, watched_files, interval_s}. */
int manager_describe(Manager *m, json_t **ret, ManagerError *e);
/* Writes every drifted knob back now, whatever the policy. */
int manager_correct(Manager *m, json_t **ret, ManagerError *e);
/* The drift known, the knobs' then the user tasks': [{knob, domain, expected, actual}]. */
json_t *manager_drift_list(Manager *m);

/* The ledger (manager-vm.c): a VM placed on the applied profile's isolated CPUs and recorded, one
 * removed (its document answered), the whole ledger. A request the ledger refuses (a name taken
 * or invalid, no room: the message says how many cores are free on which nodes) is
 * InvalidArgument; VmAdd with no profile applied NotApplied. */
typedef struct LedgerRequest LedgerRequest;
int manager_vm_add(Manager *m, const LedgerRequest *req, json_t **ret, ManagerError *e);
int manager_vm_remove(Manager *m, const char *name, json_t **ret, ManagerError *e);
int manager_vm_list(Manager *m, json_t **ret, ManagerError *e);

/* A Plan/Apply argument that names a file (profile_is_path()) is read by rtpartd as root: Plan
 * takes one from root only (MANAGER_PLAN_PATH_DENIED), as Apply does anyway. */
#define MANAGER_PLAN_PATH_DENIED \
        "rtpartd reads profile files as root, so only root may name one; give a profile name, or " \
        "plan the file with rtpartctl --no-daemon"

/* Properties. */
const char *manager_active_profile(Manager *m);
bool manager_in_sync(Manager *m);
unsigned manager_drift_count(Manager *m);
bool manager_reboot_required(Manager *m);

/* Re-reads the journal and re-checks every knob (SIGHUP, the safety timer). */
void manager_reload(Manager *m);

/* ---- inside the daemon: manager.c for manager-task.c and the front ends ---- */

/* Announces changed properties (D-Bus PropertiesChanged, sd_notify STATUS). */
void manager_properties_update(Manager *m);
/* To every listener's drift hook: a D-Bus signal (DriftDetected, Corrected), a varlink stream
 * event (drift, corrected). */
void manager_emit_drift(Manager *m, ManagerDriftEvent event, const DriftEntry *entries, size_t n);
/* To every listener's audited hook. */
void manager_emit_audited(Manager *m, const json_t *doc);
/* Whether one more correction of id fits the rate limit (10 a minute). */
bool manager_correction_allowed(Manager *m, const char *id);

/* ---- user tasks on isolated CPUs (manager-task.c) ---- */

#define MANAGER_TASKS_MAX 1024U /* task drift entries kept */
#define MANAGER_TASKS_BURST 16U /* task drift entries in one DriftDetected signal or event */

/* Reads the task settings of a resolved profile (NULL: none applied) and turns the proc
 * connector's task events on or off to match. */
void manager_task_settings(Manager *m, const Resolved *r);
/* Looks at every process (and every task already reported). */
void manager_task_scan(Manager *m);
/* The proc connector's findings (watch.h, tasks_changed). */
void manager_task_events(Manager *m, const int *pids, size_t n_pids, const int *gone, size_t n_gone, bool overflow);

DriftPolicy drift_policy_from_string(const char *s);
const char *drift_policy_to_string(DriftPolicy p);

/* ---- the front ends (manager-methods.c, manager-dbus.c, manager-varlink.c) ---- */

#define MANAGER_DBUS_NAME "org.rtpart.Manager1"
#define MANAGER_DBUS_PATH "/org/rtpart/Manager1"
#define MANAGER_DBUS_INTERFACE "org.rtpart.Manager1"
#define MANAGER_DBUS_ERROR_PREFIX "org.rtpart.Manager1.Error."
#define MANAGER_VARLINK_INTERFACE "org.rtpart.Manager"

/* org.rtpart.Manager1 and org.rtpart.Manager: every method once (manager-methods.c). */
extern const MethodInterface manager_interface;
/* Drift as a D-Bus a(ssss) from [{knob, domain, expected, actual}] (null values: "(absent)"). */
int manager_dbus_append_drift(sd_bus_message *m, json_t *drift);
/* varlink's Watch and Monitor: the current state, then every event, until the caller goes. */
int manager_varlink_watch(VarlinkCall *call, json_t *params, VarlinkCallFlags flags, void *userdata);

/* Registers the object on a bus (the system bus, or one end of a socketpair in tests): the table's
 * methods, the properties and signals, and the listener that sends the signals. */
int manager_dbus_attach(Manager *m, sd_bus *bus);
void manager_dbus_detach(Manager *m);

/* Adds org.rtpart.Manager to a varlink server, and the listener that feeds every open Watch call
 * {"event": "drift"|"corrected"|"applied"|"reverted", …}. */
int manager_varlink_attach(Manager *m, VarlinkServer *server);
void manager_varlink_detach(Manager *m);
