/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* User tasks on isolated CPUs: whether a task may run on a profile's isolated CPUs although it
 * is not in a place the profile made for them, and moving it off them.
 *
 * A task is a thread, named by its id (the process id for a process's main thread). It is "on
 * isolated CPUs" when its allowed CPUs (Cpus_allowed_list in /proc/PID/status) meet the isolated
 * set, and it is in the wrong place unless one of these holds:
 *
 *   - it is a kernel thread (the kthread domain places those);
 *   - its cpuset cgroup is one of the profile's partitions, or below one ("/rtpart-rt",
 *     "/rtpart-rt/vm1"): the v1 cpuset hierarchy's line of /proc/PID/cgroup where there is one,
 *     else the v2 line "0::";
 *   - an allow entry matches it: a shell pattern over its comm ("qemu-*"), or an entry that
 *     starts with '/', a cgroup that it is in or below ("/machine.slice"). An entry that starts
 *     with '!' is an exception: a task that it matches is never allowed by an entry (but still
 *     by a partition). */

#include <stdbool.h>

#include "cpu-set.h"
#include "root.h"

typedef struct Task {
        int pid; /* the thread's id */
        char *comm;
        char *cgroup; /* the cpuset hierarchy's path ("/", "/user.slice/…"), NULL if none */
        CpuSet cpus_allowed;
        unsigned flags;  /* PROC_PF_* */
        unsigned policy; /* PROC_SCHED_* */
        bool kernel;     /* a kernel thread */
} Task;

typedef struct TaskRules {
        CpuSet isolated;
        char **partitions; /* cgroup paths of the profile's partitions ("/rtpart-rt") */
        char **allow;      /* allow entries, as above */
} TaskRules;

void task_done(Task *t);
void task_rules_done(TaskRules *r);

/* The cpuset cgroup in the text of /proc/PID/cgroup: the path of the v1 line whose controllers
 * include "cpuset", else the path of the v2 line ("0::PATH"). -ENOENT if neither is there. */
int task_cgroup_parse(const char *text, char **ret);

/* Reads proc/PID/stat, status and cgroup under the root. -ENOENT (or -ESRCH) when the task is
 * gone, -EINVAL when the files do not read as a task's. */
int task_read(Root *root, int pid, Task *ret);

/* Whether the task's place lets it use isolated CPUs (a partition, or an allow entry). */
bool task_is_allowed(const TaskRules *r, const Task *t);
/* A user task whose allowed CPUs meet the isolated ones while its place does not let it. */
bool task_on_isolated(const TaskRules *r, const Task *t);
/* Every allow entry that is not an exception matches any comm ("*"): nothing to check. */
bool task_rules_allow_all(const TaskRules *r);

/* Why a task on isolated CPUs is not moved: NULL when it may be. Realtime and deadline tasks stay
 * (on housekeeping CPUs they could starve the system's own work), and so do tasks the kernel
 * pins (PF_NO_SETAFFINITY). */
const char *task_move_refusal(const Task *t);
/* The CPUs a task is moved to: its allowed CPUs without the isolated ones, or the housekeeping
 * CPUs when none is left. */
void task_move_target(const Task *t, const CpuSet *isolated, const CpuSet *housekeeping, CpuSet *ret);

/* sched_setaffinity() of a thread (0: the caller) to cpus; -EINVAL for an empty set. Real host
 * only: the caller decides whether the root is the host. */
int task_set_affinity(int tid, const CpuSet *cpus);
/* sched_setscheduler() keeping the thread's reset-on-fork flag (nice stays on its own). */
int task_set_scheduler(int tid, unsigned policy, unsigned priority);
