/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* rtpartd's Prometheus metrics: what the daemon knows, as the text exposition format that
 * node_exporter's textfile collector reads (rtpartd(8), METRICS). The renderer takes plain values
 * and knows no manager; the writer replaces one file of a directory atomically. The manager's side
 * (when to render, where to write) is manager-metrics.c. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "root.h"

#define METRICS_DIR_DEFAULT "var/lib/prometheus/node-exporter" /* under the root; Debian's */
#define METRICS_FILE "rtpart.prom"

typedef struct MetricsDomain {
        const char *name; /* domain_to_string(), or "task" */
        unsigned owned;   /* knobs the journal holds as applied */
        unsigned drifted; /* knobs (user tasks for "task") found drifted */
        bool no_knobs;    /* "task": no rtpart_owned_knobs for it */
} MetricsDomain;

/* One CPU of an audit document (lib/observe/audit.h): counts over the audit's window. */
typedef struct MetricsAuditCpu {
        unsigned cpu;
        uint64_t interrupts; /* device IRQs and the architecture's rows but the tick */
        uint64_t tick;       /* local timer interrupts (LOC) */
        uint64_t softirqs;
        uint64_t threads; /* threads that ran there outside the profile's partitions */
        bool noisy;
} MetricsAuditCpu;

typedef struct MetricsAudit {
        uint64_t usec;        /* CLOCK_REALTIME µs when it ended; 0: no audit */
        uint64_t window_usec; /* its length */
        MetricsAuditCpu *cpus;
        size_t n_cpus;
} MetricsAudit;

typedef struct MetricsState {
        const char *profile; /* NULL: none applied */
        bool in_sync, reboot_required;
        const MetricsDomain *domains;
        size_t n_domains;
        uint64_t drift_events; /* drift reports since the daemon started */
        uint64_t apply_usec;   /* CLOCK_REALTIME µs of the last apply; 0: none known */
        bool apply_ok;
        const MetricsAudit *audit; /* NULL or usec 0: none */
} MetricsState;

/* The exposition text: every family with # HELP and # TYPE, families without a value left out
 * (the profile, the last apply, the last audit). Label values are escaped (\\, \", \n). */
int metrics_render(const MetricsState *s, char **ret);

/* The per-CPU counts of an audit document ({"seconds", "cpu": [{"cpu", "verdict", "interrupts",
 * "softirqs", "tick", "threads"}]}), ended at usec. -EBADMSG when it is not one. */
int metrics_audit_from_json(const json_t *doc, uint64_t usec, MetricsAudit *ret);
void metrics_audit_done(MetricsAudit *a);

/* Replaces dir/METRICS_FILE (dir root-relative) by text through the root's atomic replacement (a
 * temporary ".#…tmp", which the collector's *.prom glob does not match, of mode 0644, renamed
 * over it): under --root, a directory that is a symlink resolves inside the tree. -ENOENT or
 * -ENOTDIR when dir is missing. */
int metrics_write(Root *r, const char *dir, const char *text);
