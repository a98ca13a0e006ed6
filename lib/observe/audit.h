/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What disturbed a set of CPUs over a window: two snapshots of the host's counters and threads,
 * and the document that compares them (rtpartctl audit, rtpartd's Audit call).
 *
 * A snapshot holds /proc/interrupts (device IRQs by number and the architecture's rows: LOC, RES,
 * CAL, TLB, NMI, IWI …), /proc/softirqs, and every thread's CPU time, last CPU and allowed CPUs
 * (/proc/PID/task/TID/stat and status). The document says, per CPU, what interrupted it (counts
 * and rates), whether its scheduler tick stopped, which threads ran there or may run there that
 * the profile did not put there, a verdict (quiet or noisy) and for each source what in the profile
 * would remove it, where rtpart knows. */

#include <jansson.h>
#include <stdint.h>

#include "cpu-set.h"
#include "latency.h"
#include "root.h"

/* A table of per-CPU counters as /proc/interrupts and /proc/softirqs print them: a header of
 * "CPUn" columns, then rows "LABEL: count count … [description]". */
typedef struct CounterRow {
        char *label;      /* "36", "LOC", "NET_RX" */
        char *text;       /* what follows the counts: "IR-PCI-MSI 1-edge eth0" or "Local timer
                           * interrupts"; "" for softirqs */
        uint64_t *counts; /* per CPU number, n_cpus long */
} CounterRow;

typedef struct CounterTable {
        CounterRow *rows;
        size_t n_rows;
        unsigned n_cpus; /* 1 + the highest CPU number of the header */
} CounterTable;

/* -EBADMSG when the text has no CPU header. A row with fewer counts than columns (ERR:, MIS:)
 * counts 0 for the rest. */
int counter_table_parse(const char *text, CounterTable *ret);
void counter_table_done(CounterTable *t);
const CounterRow *counter_table_find(const CounterTable *t, const char *label);

typedef struct AuditThread {
        int pid, tid;
        uint64_t start_ticks; /* with tid, who it is */
        uint64_t cpu_ticks;
        int processor;
        char *comm;
        bool kernel;
        bool has_allowed; /* only in the second snapshot */
        CpuSet allowed;
        char *cgroup; /* ditto; NULL if none */
} AuditThread;

typedef struct AuditSnapshot {
        uint64_t usec; /* CLOCK_MONOTONIC */
        CounterTable interrupts, softirqs;
        bool has_softirqs;
        AuditThread *threads; /* by tid */
        size_t n_threads;
} AuditSnapshot;

typedef enum AuditSnapshotFlags {
        AUDIT_SNAPSHOT_PLACES = 1 << 0, /* also every thread's allowed CPUs and cgroup */
} AuditSnapshotFlags;

/* -ENOENT when the root has no proc/interrupts. Threads that vanish while read are left out. */
int audit_snapshot(Root *root, AuditSnapshotFlags flags, AuditSnapshot *ret);
void audit_snapshot_done(AuditSnapshot *s);

typedef struct AuditScope {
        CpuSet cpus;                  /* observed */
        const char *source;           /* "the profile realtime-virtual-host", "--cpus", … */
        CpuSet nohz_full;             /* the running kernel's */
        char **partitions;            /* cgroups of the profile's partitions ("/rtpart-rt"), may be NULL */
        char **irqs_managed;          /* knob ids the kernel refused at apply ("irq/41/affinity") */
        char **irqs_applied;          /* the IRQ knob ids the journal holds */
        const char *profile;          /* the applied profile, NULL */
        int self;                     /* a process to leave out (the caller), 0 for none */
        unsigned clock_ticks;         /* sysconf(_SC_CLK_TCK) */
        const OsnoiseResult *osnoise; /* what osnoise measured in the window, NULL: not run */
        const char *osnoise_reason;   /* why not */
} AuditScope;

/* The document (rtpartctl(1), AUDIT): {"seconds", "cpus", "source", "profile", "verdict",
 * "noisy_cpus", "cpu": [{"cpu", "verdict", "nohz_full", "interrupts": […], "softirqs": […],
 * "tick": {…}, "threads": […], "may_run": {"count", "pinned": […], "first": […]}, "osnoise": {…}
 * or null}], "osnoise": {"ran", "reason"}, "may_run": [every thread that may run on an audited
 * CPU, once]}. The osnoise and timerlat tracers' own threads are not listed; the fixes are
 * audit-advice.c's. */
int audit_document(const AuditScope *scope, const AuditSnapshot *a, const AuditSnapshot *b, json_t **ret);

/* What audit_target() found: the AuditScope, the strings it points to, the latency limit. */
typedef struct AuditTarget {
        AuditScope s;
        char *source;
        char *profile;
        unsigned limit_us; /* check.latency_max_us, 0: none */
} AuditTarget;

void audit_target_done(AuditTarget *t);

/* The CPUs to observe and what the applied profile (the journal j, may be NULL) says of them:
 * cpus (a CPU list, may be NULL), else the profile's isolated CPUs, else the running kernel's
 * isolated and nohz_full ones; the profile's partitions, the IRQs it placed and those the kernel
 * refused, its check.latency_max_us. -EINVAL when cpus is no CPU list, -ENOENT when there are no
 * CPUs to observe, each with *ret_error. */
struct Journal;
int audit_target(Root *root, const struct Journal *j, const char *cpus, AuditTarget *ret, char **ret_error);
