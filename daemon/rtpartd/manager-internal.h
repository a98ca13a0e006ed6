/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the parts of the manager share (manager.h is what the front ends and rtpartd.c see):
 *   manager.c            life cycle, properties, listeners, the watcher's events
 *   manager-journal.c    the journal held, its profile prepared, drift settings, watched files
 *   manager-check.c      drift found and corrected, and the answers from the live state
 *   manager-apply.c      what writes: Apply, corrections and new objects, Revert; Plan
 *   manager-newcomers.c  objects the kernel makes while rtpartd runs (Backend.newcomers) */

#include "manager.h"
#include "prepare.h"

/* ---- manager.c ---- */

/* Gives the heap back once the loop is done with this turn (after a call, a full read). */
void manager_trim_later(Manager *m);
void manager_emit_applied(Manager *m, const char *profile, bool external);
void manager_emit_apply_failed(Manager *m, const char *profile);
void manager_emit_reverted(Manager *m);

/* ---- manager-journal.c ---- */

/* Reads state.json again when its bytes changed; what the daemon keeps of it is the Journal. A
 * journal that is refused leaves the one held as it was, and its message in m->journal_error. */
int manager_journal_reload(Manager *m, bool *ret_changed);
/* Host, resolution and (with want_plan) plan of a profile named by a caller, or of the journal's
 * own profile: refused unless it resolves to the journal's hash. */
int manager_prepare(Manager *m, const char *name, bool want_plan, Prepared *ret, ManagerError *e);
int manager_prepare_journal(Manager *m, bool want_plan, Prepared *ret, ManagerError *e);
/* The drift settings of no profile, and of a resolution just applied (the daemon pins itself to
 * its housekeeping CPUs). */
void manager_settings_reset(Manager *m);
void manager_settings_take(Manager *m, const Resolved *r);
/* The safety timer's interval: the option's, else the profile's, else 60 s. */
void manager_apply_interval(Manager *m);
/* The watcher's files, from the journal's applied knobs. */
void manager_watch_refresh(Manager *m);

/* ---- manager-check.c ---- */

/* Every knob, through the engine: drift, pending reboots, vanished objects (ret optional). */
int manager_check_all(Manager *m, VerifyResult *ret);
/* Reads the knobs ids of the journal and compares: the drift found. */
int manager_check_knobs(Manager *m, char **ids, DriftSet *ret_found);
/* The same, folded into what is known (reported, corrected per the policy). */
void manager_check_some(Manager *m, char **ids);
/* The applied knobs whose backends have flag. */
void manager_check_flagged(Manager *m, BackendFlags flag);

/* ---- manager-apply.c ---- */

/* The journal's lock, waiting for it (*ret: the store, for journal_store_unlockp). */
int manager_take_lock(Manager *m, JournalStore **ret, ManagerError *e);

/* Applies the profile name, or with name NULL the journal's profile again (at start-up). */
int manager_apply_full(Manager *m, const char *name, json_t **ret, ManagerError *e);
/* Applies the journal's profile again to the knobs in ids (drift to correct) and to the knobs new
 * to the journal (IRQs of a new device, new kernel threads), through the engine's subset apply:
 * nothing else is touched. ret_host (optional): the host the plan was made on, when one was. */
int manager_apply_selected(Manager *m, char **ids, size_t *ret_written, Host **ret_host, ManagerError *e);
/* Applies the journal's profile again to the knobs that hold network interface ifname's state
 * (Backend.interface_knobs: its channels, its queues' masks, its device's IRQs) and to the knobs
 * new to the journal, after the interface came, came back or was reset. ret_corrected: the knobs
 * it wrote, as drift entries. */
int manager_apply_interface(Manager *m, const char *ifname, size_t *ret_written, DriftSet *ret_corrected,
                            ManagerError *e);
/* New objects (why: "new IRQs"): knobs the journal does not have yet are set per the profile.
 * Returns false when no plan was made; ret_host as manager_apply_selected()'s. */
bool manager_adopt_new(Manager *m, const char *why, Host **ret_host);

/* ---- manager-newcomers.c ---- */

/* Takes what is there as placed, and watches for more (at start-up, after the re-apply). */
void manager_newcomers_start(Manager *m);
/* A look at every backend's objects (the safety check; force: plan anyway, SIGHUP). */
void manager_newcomers_look(Manager *m, bool force);
/* A device event: a look now, and a series of them after it. */
void manager_newcomers_device_added(Manager *m);
/* Network interfaces that came, came back or came up (action: the watcher's): the knobs of each
 * that the backends name (Backend.interface_knobs) are applied again from the journal, logged and
 * sent as a drift-corrected event. */
void manager_newcomers_interfaces(Manager *m, const char *action, char **ifnames);
void manager_newcomers_free(Manager *m);

/* ---- manager-vm.c: the running VMs of the ledger ----
 *
 * A thread named "CPU n/KVM" or "CPU n/TCG" of a qemu process whose -name guest=NAME is a VM of the
 * ledger belongs on the CPU the ledger gives vCPU n: checked with the user tasks (manager-task.c:
 * its proc connector events, and every full check, where no event announces sched_setaffinity()),
 * as drift "task/TID" of the domain "vm", and never as a user task on isolated CPUs. */

typedef struct Ledger Ledger;
typedef struct Task Task;
/* The ledger, NULL when it has no VM (or cannot be read: said once per check). */
Ledger *manager_vm_ledger(Manager *m);
/* 0: t is no vCPU thread of l's VMs; 1: one on its CPU; 2: one off it, *ret its drift entry. */
int manager_vm_task(Manager *m, const Ledger *l, const Task *t, DriftEntry *ret);
/* Moves vCPU thread tid onto expected (the entry's CPU): true when done. */
bool manager_vm_correct(Manager *m, int tid, const char *expected);
/* Appends the thread ids of every process whose guest is a VM of l to *tids (n long). */
int manager_vm_threads(Manager *m, const Ledger *l, int **tids, size_t *n);
