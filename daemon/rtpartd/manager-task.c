/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger.h"
#include "manager-internal.h"
#include "strv.h"
#include "systemd.h"

/* User tasks on isolated CPUs, as drift of the domain "task" (task.h says which tasks count).
 *
 * When: the proc connector's fork, exec, comm and exit events (coalesced for the debounce), and a
 * look at every process with each full check (the safety timer, SIGHUP, an apply). No event
 * announces sched_setaffinity() or a move between cgroups: those are seen at the next full check.
 * Only where the root can schedule (ROOT_CAN_SCHEDULE): a tree's tasks are nobody's.
 *
 * Not a flood: one entry per task id, reported when it is new or its values changed, forgotten when
 * the task exits or leaves the isolated CPUs; at most MANAGER_TASKS_BURST entries in one signal (the
 * rest are counted in the log, in DriftCount and listed by a Watch stream's first reply), at most
 * MANAGER_TASKS_MAX kept.
 *
 * Correction moves a task only with drift.domains.task "correct" (drift.policy alone never does),
 * with sched_setaffinity() onto its allowed CPUs without the isolated ones (the housekeeping CPUs
 * when none is left), and never a realtime task. */

static int task_id(char buf[static 32], int pid) {
        return snprintf(buf, 32, "task/%d", pid);
}

static void task_forget(Manager *m, const char *id) {
        (void) drift_set_remove(&m->tasks, id);
        (void) json_object_del(m->corrections, id);
}

void manager_task_settings(Manager *m, const Resolved *r) {
        _cleanup_strv_free_ char **partitions = NULL, **allow = NULL;
        json_t *drift = r ? json_object_get(r->doc, "drift") : NULL, *v;
        size_t i;

        task_rules_done(&m->task_rules);
        cpu_set_zero(&m->task_housekeeping);
        m->task_policy = DRIFT_REPORT;
        if (r) {
                /* Only CPUs isolated now count: until the reboot that brings isolcpus= or nohz_full=,
                 * every task may still run on the CPUs the profile isolates, and that is no drift.
                 * Now: the kernel's isolated and nohz_full CPUs, and the profile's partitions. */
                CpuSet now = {}, s;
                if (root_read_cpu_list(m->root, "sys/devices/system/cpu/isolated", &s) >= 0)
                        cpu_set_or(&now, &s);
                if (root_read_cpu_list(m->root, "sys/devices/system/cpu/nohz_full", &s) >= 0)
                        cpu_set_or(&now, &s);
                json_array_foreach (json_object_get(json_object_get(r->doc, "cpuset"), "partitions"), i, v) {
                        const char *name = json_string_value(json_object_get(v, "name"));
                        const char *cpus = json_string_value(json_object_get(v, "cpus"));
                        if (cpus && cpu_set_parse_list(cpus, &s, NULL) >= 0)
                                cpu_set_or(&now, &s);
                        if (!name)
                                continue;
                        /* The partition's cgroup: its own name, or where systemd owns the tree its
                         * slice (systemd_partition_slice()); either one is the partition's. */
                        _cleanup_free_ char *slice = systemd_partition_slice(name);
                        char *c = NULL, *d = NULL;
                        if (!slice || asprintf(&c, "/%s", name) < 0 || strv_push(&partitions, c) < 0 ||
                            asprintf(&d, "/%s", slice) < 0 || strv_push(&partitions, d) < 0)
                                return;
                }
                json_array_foreach (json_object_get(drift, "task_allow"), i, v)
                        if (json_is_string(v) && strv_extend(&allow, json_string_value(v)) < 0)
                                return;
                DriftPolicy p = drift_policy_from_string(
                        json_string_value(json_object_get(json_object_get(drift, "domains"), "task")));
                if (p >= 0)
                        m->task_policy = p;
                m->task_rules.isolated = r->isolated;
                cpu_set_and(&m->task_rules.isolated, &now);
                m->task_housekeeping = r->housekeeping;
                m->task_rules.partitions = TAKE_PTR(partitions);
                m->task_rules.allow = TAKE_PTR(allow);
        }
        bool on = r && root_can(m->root, ROOT_CAN_SCHEDULE) && !cpu_set_is_empty(&m->task_rules.isolated) &&
                !task_rules_allow_all(&m->task_rules);
        if (on != m->task_check)
                log_debug("User tasks on isolated CPUs: %s", on ? "checked" : "not checked");
        m->task_check = on;
        if (m->watcher) {
                int k = watcher_set_task_events(m->watcher, on);
                if (k < 0)
                        (void) log_warning_errno(k,
                                                 "Cannot filter the proc connector for task events: %m; user tasks "
                                                 "are checked at the next safety check");
        }
        if (!on) {
                drift_set_clear(&m->tasks);
                m->tasks_unlisted = 0;
        }
}

/* knob "task/PID", domain "task", expected the housekeeping CPUs, actual "CPUS (COMM in CGROUP)". */
static int task_entry(Manager *m, const Task *t, DriftEntry *ret) {
        _cleanup_free_ char *expected = cpu_set_format_list(&m->task_housekeeping);
        _cleanup_free_ char *cpus = cpu_set_format_list(&t->cpus_allowed), *actual = NULL, *knob = NULL, *domain = NULL;
        char id[32];

        task_id(id, t->pid);
        if (!expected || !cpus ||
            asprintf(&actual, "%s (%s in %s)", cpus, strempty(t->comm), t->cgroup ? t->cgroup : "no cgroup") < 0 ||
            !(knob = strdup(id)) || !(domain = strdup("task")))
                return -ENOMEM;
        *ret = (DriftEntry) {
                .knob = TAKE_PTR(knob),
                .domain = TAKE_PTR(domain),
                .expected = TAKE_PTR(expected),
                .actual = TAKE_PTR(actual),
        };
        return 0;
}

static void tasks_report(Manager *m, const DriftSet *fresh) {
        size_t n = fresh->n;

        if (n == 0)
                return;
        m->drift_events++;
        for (size_t i = 0; i < n && i < MANAGER_TASKS_BURST; i++)
                log_warning("Drift: %s may run on isolated CPUs: allowed %s, the profile wants %s",
                            fresh->entries[i].knob, fresh->entries[i].actual, fresh->entries[i].expected);
        if (n > MANAGER_TASKS_BURST)
                log_warning("Drift: %zu more user tasks may run on isolated CPUs, not listed one by one (DriftCount "
                            "counts them; a Watch stream's first reply lists them)",
                            n - MANAGER_TASKS_BURST);
        manager_emit_drift(m, MANAGER_DRIFT_DETECTED, fresh->entries, MIN(n, (size_t) MANAGER_TASKS_BURST));
}

/* Moves one task off the isolated CPUs. Returns true if it is off them now. */
static bool task_correct(Manager *m, int pid, const char *id) {
        _cleanup_free_ char *cpus = NULL;
        Task t = {};
        CpuSet target;
        bool done = false;

        if (task_read(m->root, pid, &t) < 0)
                return false; /* gone: the exit event forgets it */
        const char *why = task_move_refusal(&t);
        if (why) {
                log_notice("%s (%s) is left on the isolated CPUs: %s; allow it in drift.task_allow, or move it", id,
                           strempty(t.comm), why);
                task_done(&t);
                return false;
        }
        task_move_target(&t, &m->task_rules.isolated, &m->task_housekeeping, &target);
        cpus = cpu_set_format_list(&target);
        int k = root_set_affinity(m->root, pid, &target);
        if (k < 0)
                (void) log_warning_errno(k, "Cannot move %s (%s) to CPUs %s: %m", id, strempty(t.comm), strempty(cpus));
        task_done(&t);
        if (k >= 0 && task_read(m->root, pid, &t) >= 0) {
                done = !task_on_isolated(&m->task_rules, &t);
                if (done)
                        log_notice("Corrected: %s (%s) moved to CPUs %s", id, strempty(t.comm), strempty(cpus));
                task_done(&t);
        }
        return done;
}

static void tasks_correct(Manager *m, const DriftSet *fresh) {
        _cleanup_(drift_set_done) DriftSet corrected = {};

        for (size_t i = 0; i < fresh->n; i++) {
                const char *id = fresh->entries[i].knob;
                int pid = atoi(id + strlen("task/"));
                /* A VM's vCPU thread goes back to its CPU under the profile's policy; a user task
                 * moves only with drift.domains.task "correct". */
                bool vm = streq_ptr(fresh->entries[i].domain, "vm");
                if ((vm ? m->policy_default : m->task_policy) != DRIFT_CORRECT)
                        continue;
                if (pid <= 0 || !manager_correction_allowed(m, id) ||
                    !(vm ? manager_vm_correct(m, pid, fresh->entries[i].expected) : task_correct(m, pid, id)))
                        continue;
                if (corrected.n < MANAGER_TASKS_BURST)
                        (void) drift_set_put_entry(&corrected, &fresh->entries[i]);
                (void) drift_set_remove(&m->tasks, id);
        }
        if (corrected.n > 0)
                manager_emit_drift(m, MANAGER_DRIFT_CORRECTED, corrected.entries, corrected.n);
}

static int pid_compare(const void *a, const void *b) {
        int x = *(const int *) a, y = *(const int *) b;
        return (x > y) - (x < y);
}

/* Looks at the given task ids (sorted and made unique here): a task on isolated CPUs is kept,
 * reported when new or changed, and moved if the policy says so; any other is forgotten. */
static void tasks_check(Manager *m, int *pids, size_t n) {
        _cleanup_(drift_set_done) DriftSet fresh = {};
        _cleanup_(ledger_freep) Ledger *ledger = manager_vm_ledger(m);
        uint64_t now = drift_now();
        char id[32];

        if (n > 0)
                qsort(pids, n, sizeof(int), pid_compare);
        for (size_t i = 0; i < n; i++) {
                Task t = {};
                if (i > 0 && pids[i] == pids[i - 1])
                        continue;
                task_id(id, pids[i]);
                DriftEntry e = {};
                int k = task_read(m->root, pids[i], &t);
                if (k == -ENOMEM)
                        break;
                /* A VM's vCPU thread: on its CPU or drifted, never a user task. */
                int vm = k >= 0 && ledger ? manager_vm_task(m, ledger, &t, &e) : 0;
                if (k < 0 || vm == 1 || (vm == 0 && !task_on_isolated(&m->task_rules, &t))) {
                        /* gone, not a task's files, or nowhere it should not be */
                        task_forget(m, id);
                        if (k >= 0)
                                task_done(&t);
                        continue;
                }
                k = vm < 0 ? vm : vm == 0 ? task_entry(m, &t, &e) : 0;
                task_done(&t);
                if (k < 0)
                        break;
                const DriftEntry *old = drift_set_find(&m->tasks, id);
                if (!old && m->tasks.n >= MANAGER_TASKS_MAX)
                        m->tasks_unlisted++;
                else if (drift_set_put(&m->tasks, e.knob, e.domain, e.expected, e.actual, now) > 0)
                        (void) drift_set_put_entry(&fresh, drift_set_find(&m->tasks, id));
                drift_entry_done(&e);
        }
        tasks_report(m, &fresh);
        tasks_correct(m, &fresh);
        manager_properties_update(m);
}

static int pids_push(int **pids, size_t *n, size_t *cap, int pid) {
        if (*n == *cap) {
                size_t c = *cap ? *cap * 2 : 512;
                int *p = realloc(*pids, c * sizeof(int));
                if (!p)
                        return -ENOMEM;
                *pids = p;
                *cap = c;
        }
        (*pids)[(*n)++] = pid;
        return 0;
}

void manager_task_scan(Manager *m) {
        _cleanup_free_ int *pids = NULL;
        size_t n = 0, cap = 0;
        DIR *d = NULL;

        if (!m->task_check)
                return;
        /* Every process (its main thread), and every task already reported (threads too). */
        int k = root_opendir(m->root, "proc", &d);
        if (k < 0) {
                (void) log_warning_errno(k, "Cannot list the tasks in /proc: %m");
                return;
        }
        struct dirent *de;
        while ((de = readdir(d))) {
                char *end;
                long pid = strtol(de->d_name, &end, 10);
                if (end == de->d_name || *end || pid <= 0 || pid > INT32_MAX)
                        continue;
                if (pids_push(&pids, &n, &cap, (int) pid) < 0)
                        break;
        }
        closedir(d);
        for (size_t i = 0; i < m->tasks.n; i++)
                (void) pids_push(&pids, &n, &cap, atoi(m->tasks.entries[i].knob + strlen("task/")));
        /* The running VMs' threads: a vCPU thread moved by hand is seen here (no event says so). */
        _cleanup_(ledger_freep) Ledger *ledger = manager_vm_ledger(m);
        if (ledger && manager_vm_threads(m, ledger, &pids, &n) >= 0)
                cap = n;
        m->tasks_unlisted = 0;
        tasks_check(m, pids, n);
}

void manager_task_events(Manager *m, const int *pids, size_t n_pids, const int *gone, size_t n_gone, bool overflow) {
        char id[32];

        if (!m->task_check)
                return;
        for (size_t i = 0; i < n_gone; i++) {
                task_id(id, gone[i]);
                task_forget(m, id);
        }
        if (overflow) {
                log_debug("Task events were lost or too many: looking at every task");
                manager_task_scan(m);
                return;
        }
        _cleanup_free_ int *copy = n_pids > 0 ? malloc(n_pids * sizeof(int)) : NULL;
        if (copy)
                memcpy(copy, pids, n_pids * sizeof(int));
        tasks_check(m, copy, copy ? n_pids : 0);
}
