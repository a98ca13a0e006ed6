/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "metrics.h"
#include "root.h"

/* The text exposition format (prometheus.io/docs/instrumenting/exposition_formats): "# HELP name
 * text", "# TYPE name gauge|counter", then "name{label="value"} number" lines. Names carry the
 * unit (_seconds) and counters end _total; a count over an audit's window is a gauge (it is not
 * cumulative). Numbers are printed from integers, so the text does not depend on a locale. */

static void family(FILE *f, const char *name, const char *type, const char *help) {
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value: backslash, double quote and line feed escaped. */
static void label_value(FILE *f, const char *s) {
        for (; *s; s++)
                switch (*s) {
                case '\\':
                        fputs("\\\\", f);
                        break;
                case '"':
                        fputs("\\\"", f);
                        break;
                case '\n':
                        fputs("\\n", f);
                        break;
                default:
                        fputc(*s, f);
                }
}

static void seconds(FILE *f, uint64_t usec) {
        fprintf(f, "%" PRIu64 ".%03u\n", usec / 1000000U, (unsigned) (usec % 1000000U / 1000U));
}

static void per_domain(FILE *f, const MetricsState *s, const char *name, bool drifted) {
        for (size_t i = 0; i < s->n_domains; i++) {
                if (!drifted && s->domains[i].no_knobs)
                        continue;
                fprintf(f, "%s{domain=\"", name);
                label_value(f, s->domains[i].name);
                fprintf(f, "\"} %u\n", drifted ? s->domains[i].drifted : s->domains[i].owned);
        }
}

typedef enum AuditField {
        AUDIT_INTERRUPTS,
        AUDIT_TICK,
        AUDIT_SOFTIRQS,
        AUDIT_THREADS,
        AUDIT_NOISY,
        _AUDIT_FIELD_MAX,
} AuditField;

static const struct {
        const char *name, *help;
} audit_fields[_AUDIT_FIELD_MAX] = {
        [AUDIT_INTERRUPTS] = { "rtpart_audit_interrupts",
                               "Interrupts on the CPU in the last audit's window: device IRQs and the architecture's "
                               "(IPIs, NMIs ...), not the tick." },
        [AUDIT_TICK] = { "rtpart_audit_tick_interrupts",
                         "Local timer (scheduler tick) interrupts on the CPU in the last audit's window." },
        [AUDIT_SOFTIRQS] = { "rtpart_audit_softirqs", "Softirqs run on the CPU in the last audit's window." },
        [AUDIT_THREADS] = { "rtpart_audit_noise_threads",
                            "Threads outside the profile's partitions that ran on the CPU in the last audit's "
                            "window." },
        [AUDIT_NOISY] = { "rtpart_audit_noisy", "Whether the last audit found the CPU noisy (1) or quiet (0)." },
};

static uint64_t audit_value(const MetricsAuditCpu *c, AuditField field) {
        switch (field) {
        case AUDIT_INTERRUPTS:
                return c->interrupts;
        case AUDIT_TICK:
                return c->tick;
        case AUDIT_SOFTIRQS:
                return c->softirqs;
        case AUDIT_THREADS:
                return c->threads;
        default:
                return c->noisy;
        }
}

int metrics_render(const MetricsState *s, char **ret) {
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        if (!f)
                return -ENOMEM;

        if (s->profile) {
                family(f, "rtpart_profile_info", "gauge", "The rtpart profile applied to the host, as a label.");
                fputs("rtpart_profile_info{profile=\"", f);
                label_value(f, s->profile);
                fputs("\"} 1\n", f);
        }
        family(f, "rtpart_profile_applied", "gauge", "Whether an rtpart profile is applied (1) or none (0).");
        fprintf(f, "rtpart_profile_applied %d\n", s->profile != NULL);
        family(f, "rtpart_in_sync", "gauge",
               "Whether every knob has its profile value and no user task runs on isolated CPUs (1), or not (0).");
        fprintf(f, "rtpart_in_sync %d\n", s->in_sync);
        family(f, "rtpart_reboot_required", "gauge",
               "Whether boot-time knobs wait for a reboot to take effect (1), or not (0).");
        fprintf(f, "rtpart_reboot_required %d\n", s->reboot_required);
        family(f, "rtpart_drifted_knobs", "gauge",
               "Knobs whose value is not the profile's, by domain (domain task: user tasks on isolated CPUs).");
        per_domain(f, s, "rtpart_drifted_knobs", /* drifted= */ true);
        family(f, "rtpart_owned_knobs", "gauge", "Knobs the applied profile set and rtpartd watches, by domain.");
        per_domain(f, s, "rtpart_owned_knobs", /* drifted= */ false);
        family(f, "rtpart_drift_events_total", "counter",
               "Drift reports (new or changed drift) since rtpartd started.");
        fprintf(f, "rtpart_drift_events_total %" PRIu64 "\n", s->drift_events);

        if (s->apply_usec > 0) {
                family(f, "rtpart_last_apply_timestamp_seconds", "gauge",
                       "When the last apply (an Apply call, the start-up re-apply, or rtpartctl --no-daemon apply) "
                       "ended, in seconds since the epoch.");
                fputs("rtpart_last_apply_timestamp_seconds ", f);
                seconds(f, s->apply_usec);
                family(f, "rtpart_last_apply_success", "gauge",
                       "Whether the last apply succeeded (1) or failed and was undone (0).");
                fprintf(f, "rtpart_last_apply_success %d\n", s->apply_ok);
        }

        if (s->audit && s->audit->usec > 0) {
                family(f, "rtpart_last_audit_timestamp_seconds", "gauge",
                       "When the last audit (rtpartd's Audit call) ended, in seconds since the epoch.");
                fputs("rtpart_last_audit_timestamp_seconds ", f);
                seconds(f, s->audit->usec);
                family(f, "rtpart_last_audit_window_seconds", "gauge", "How long the last audit observed.");
                fputs("rtpart_last_audit_window_seconds ", f);
                seconds(f, s->audit->window_usec);
                for (AuditField field = 0; field < _AUDIT_FIELD_MAX; field++) {
                        family(f, audit_fields[field].name, "gauge", audit_fields[field].help);
                        for (size_t i = 0; i < s->audit->n_cpus; i++)
                                fprintf(f, "%s{cpu=\"%u\"} %" PRIu64 "\n", audit_fields[field].name,
                                        s->audit->cpus[i].cpu, audit_value(&s->audit->cpus[i], field));
                }
        }

        if (fclose(f) != 0)
                return -ENOMEM;
        *ret = TAKE_PTR(text);
        return 0;
}

/* The sum of the "count"s of an array of sources. */
static uint64_t sum_counts(const json_t *a) {
        uint64_t n = 0;
        size_t i;
        const json_t *e;
        json_array_foreach (a, i, e) {
                json_int_t c = json_integer_value(json_object_get(e, "count"));
                if (c > 0)
                        n += (uint64_t) c;
        }
        return n;
}

void metrics_audit_done(MetricsAudit *a) {
        free(a->cpus);
        *a = (MetricsAudit) {};
}

int metrics_audit_from_json(const json_t *doc, uint64_t usec, MetricsAudit *ret) {
        const json_t *cpus = json_object_get(doc, "cpu");
        const json_t *secs = json_object_get(doc, "seconds");
        if (!json_is_array(cpus) || !json_is_number(secs) || json_number_value(secs) < 0)
                return -EBADMSG;

        size_t n = json_array_size(cpus);
        _cleanup_free_ MetricsAuditCpu *v = n ? calloc(n, sizeof(MetricsAuditCpu)) : NULL;
        if (n && !v)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const json_t *c = json_array_get(cpus, i);
                json_int_t cpu = json_integer_value(json_object_get(c, "cpu"));
                if (!json_is_integer(json_object_get(c, "cpu")) || cpu < 0 || cpu > UINT32_MAX)
                        return -EBADMSG;
                json_int_t tick = json_integer_value(json_object_get(json_object_get(c, "tick"), "count"));
                const char *verdict = json_string_value(json_object_get(c, "verdict"));
                v[i] = (MetricsAuditCpu) {
                        .cpu = (unsigned) cpu,
                        .interrupts = sum_counts(json_object_get(c, "interrupts")),
                        .tick = tick > 0 ? (uint64_t) tick : 0,
                        .softirqs = sum_counts(json_object_get(c, "softirqs")),
                        .threads = json_array_size(json_object_get(c, "threads")),
                        .noisy = verdict && streq(verdict, "noisy"),
                };
        }
        *ret = (MetricsAudit) {
                .usec = usec,
                .window_usec = (uint64_t) (json_number_value(secs) * 1e6 + 0.5),
                .cpus = TAKE_PTR(v),
                .n_cpus = n,
        };
        return 0;
}

int metrics_write(Root *r, const char *dir, const char *text) {
        _cleanup_free_ char *rel = NULL;
        struct stat st;
        /* node_exporter's package makes the directory; rtpartd never does. */
        int k = root_stat(r, dir, &st);
        if (k < 0)
                return k;
        if (!S_ISDIR(st.st_mode))
                return -ENOTDIR;
        if (asprintf(&rel, "%s/%s", dir, METRICS_FILE) < 0)
                return -ENOMEM;
        /* No fsync of its own would be needed (a file lost to a crash is written again when rtpartd
         * starts), but the root's atomic replacement is the one that holds against what others
         * may plant in a directory they can write: a FIFO or a file at the temporary's name. */
        return root_write_file_atomic(r, rel, text, strlen(text), 0644);
}
