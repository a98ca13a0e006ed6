/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Parsers for /proc/PID/stat and /proc/PID/status. They take the file's text, never a path: the
 * callers open the files under the root. */

#include <stdbool.h>
#include <stdint.h>

#include "cpu-set.h"
#include "macro.h"

/* task->flags bits shown in field 9 of /proc/PID/stat (include/linux/sched.h). */
#define PROC_PF_KTHREAD 0x00200000U        /* a kernel thread */
#define PROC_PF_NO_SETAFFINITY 0x04000000U /* the kernel pins it: sched_setaffinity() fails */

/* Scheduling policies as field 41 shows them (include/uapi/linux/sched.h). */
#define PROC_SCHED_OTHER 0U
#define PROC_SCHED_FIFO 1U
#define PROC_SCHED_RR 2U
#define PROC_SCHED_BATCH 3U
#define PROC_SCHED_IDLE 5U
#define PROC_SCHED_DEADLINE 6U

typedef struct ProcStat {
        int pid;              /* field 1 */
        char *comm;           /* field 2 without the parentheses; may hold spaces and ')' */
        char state;           /* field 3 */
        int ppid;             /* field 4 */
        unsigned flags;       /* field 9, PF_* */
        unsigned rt_priority; /* field 40, 0 for non-realtime policies */
        unsigned policy;      /* field 41, PROC_SCHED_* */
        uint64_t cpu_ticks;   /* fields 14 + 15, utime + stime, in clock ticks */
        uint64_t start_ticks; /* field 22, when it started (with the id, who it is) */
        int processor;        /* field 39, the CPU it last ran on */
} ProcStat;

/* Parses the one line of /proc/PID/stat. The comm is everything between the first '(' and the
 * LAST ')': a thread may name itself "a) b". Returns -EINVAL if the text is not a stat line or
 * ends before field 41 (kernels before 2.6.22 had no policy field). */
int proc_stat_parse(const char *text, ProcStat *ret);
void proc_stat_done(ProcStat *s);

typedef struct ProcStatus {
        int ppid;              /* "PPid:", -1 if absent */
        int kthread;           /* "Kthread:" (Linux 6.x), -1 if absent, else 0 or 1 */
        bool has_cpus_allowed; /* "Cpus_allowed_list:" or "Cpus_allowed:" was found */
        CpuSet cpus_allowed;
} ProcStatus;

/* Picks the fields above out of /proc/PID/status; a missing field is not an error, a malformed
 * CPU list or mask is (-EINVAL). Prefers Cpus_allowed_list over the Cpus_allowed mask. */
int proc_status_parse(const char *text, ProcStatus *ret);

/* Policy name as profiles spell it ("fifo", "rr", "other", "batch", "idle", "deadline"), NULL if
 * unknown; and back (-EINVAL if unknown). */
const char *proc_policy_to_string(unsigned policy);
int proc_policy_from_string(const char *s);

/* A thread's scheduling as rtpart's kthread knobs spell it: "<policy>:<priority>" ("fifo:2",
 * "other:0"); a policy without a name is its number ("7:0"). Parsing takes both spellings and
 * checks what sched_setscheduler() would: 1…99 for fifo and rr, 0 for every other policy
 * (-EINVAL otherwise). */
int proc_sched_format(unsigned policy, unsigned priority, char **ret);
int proc_sched_parse(const char *s, unsigned *ret_policy, unsigned *ret_priority);
