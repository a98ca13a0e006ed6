/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* rtpartctl check: hardware, then audit, then latency on the isolated CPUs in one run, against
 * the profile's limits (its check section, rtpart.profile(5)), in one report: a JSON document,
 * and the same as one self-contained HTML file (the charts inline as SVG, nothing fetched, no
 * script) to send to a colleague. */

#include <jansson.h>

/* The limits where the profile sets none (rtpart.profile(5), check). hwlat: OpenShift's
 * cnf-tests hold hwlatdetect to 20 µs; latency: what a tuned PREEMPT_RT host meets with room;
 * noise: a nohz_full CPU's osnoise noise is a few µs a second (< 0.01 %), a ticking one's 0.1 % or
 * more. */
#define CHECK_HWLAT_MAX_US 20U
#define CHECK_LATENCY_MAX_US 50U
#define CHECK_NOISE_MAX_PERCENT 0.1

typedef struct CheckLimits {
        unsigned hwlat_max_us, latency_max_us;
        double noise_max_percent;
        const char *from; /* "the profile NAME", "the defaults" or "the profile NAME and the defaults" */
} CheckLimits;

/* What one run of check measured. Each section is its own document (hardware_document(),
 * audit_document(), latency_document()), or NULL with the reason it could not be measured. */
typedef struct CheckInput {
        json_t *host; /* hardware_host_json() */
        const char *profile;
        const char *cpus, *source;
        const char *date; /* when it ran, ISO 8601 */
        unsigned seconds;
        CheckLimits limits;
        json_t *hardware;
        json_t *audit;
        const char *audit_reason;   /* without osnoise figures: why */
        json_t *latency;            /* with the limit, for its verdict */
        const char *latency_reason; /* why not */
} CheckInput;

/* The report: {"host", "profile", "cpus", "source", "date", "seconds", "limits":
 * {"hwlat_max_us", "latency_max_us", "noise_max_percent", "from"}, "checks": [{"check" ("hwlat",
 * "settings", "noise", "latency"), "value", "limit", "unit", "verdict" ("within", "over", "not
 * measured"), "reason", "cpu"}], "verdict" ("within", "over", "incomplete"), "hardware",
 * "audit", "latency"}. The sections are referenced, not taken. */
int check_report_document(const CheckInput *in, json_t **ret);

/* The report as one HTML file; latency_svg the latency histograms (latency_svg()), may be NULL. */
int check_report_html(json_t *report, const char *latency_svg, char **ret);
