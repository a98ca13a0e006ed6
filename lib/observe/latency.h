/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Wake-up latency of a set of CPUs (rtpartctl check latency), measured by the kernel's timerlat
 * tracer through tracefs (Documentation/trace/timerlat-tracer.rst), the interface rtla uses:
 * osnoise/cpus limits it to the CPUs, current_tracer=timerlat starts a per-CPU timer every
 * osnoise/timerlat_period_us, and trace_pipe gives one line per wake-up and context:
 *
 *   <idle>-0     [003] d.h1.  54.029328: #1     context    irq timer_latency       932 ns
 *   <...>-867    [003] .....  54.029339: #1     context thread timer_latency     11700 ns
 *
 * The tracefs files changed are saved first, into run/rtpart/tracefs.json under the root, and put
 * back byte for byte afterwards; a run killed before it could put them back leaves that file, and
 * the next one restores from it first. Where the kernel has no timerlat, cyclictest (rt-tests) is
 * run instead when it is installed. */

#include <jansson.h>
#include <signal.h>
#include <stdint.h>

#include "cpu-set.h"
#include "root.h"

#define LATENCY_HIST_US 1000U /* 1 µs buckets up to this; above: overflow */

typedef struct LatencyStats {
        uint64_t samples;
        uint64_t min_ns, max_ns, sum_ns;
        uint64_t hist[LATENCY_HIST_US + 1]; /* [LATENCY_HIST_US]: overflows */
} LatencyStats;

typedef struct LatencyCpu {
        unsigned cpu;
        LatencyStats irq, thread;
} LatencyCpu;

typedef struct LatencyResult {
        const char *tool; /* "timerlat" or "cyclictest" */
        double seconds;
        LatencyCpu *cpus;
        size_t n_cpus;
        bool has_irq; /* cyclictest measures the thread only */
} LatencyResult;

void latency_result_done(LatencyResult *r);
LatencyCpu *latency_cpu(LatencyResult *r, unsigned cpu);
void latency_stats_add(LatencyStats *s, uint64_t ns);
/* The p-th percentile (0 < p ≤ 100) from the histogram, in µs (the bucket's upper edge). */
uint64_t latency_stats_percentile_us(const LatencyStats *s, double p);

/* One line of timerlat's trace: 1 and its CPU, context (false: irq, true: thread) and latency;
 * 0 for a line that is no timerlat sample (headers, other contexts); -EINVAL never. */
int latency_parse_timerlat_line(const char *line, unsigned *ret_cpu, bool *ret_thread, uint64_t *ret_ns);

/* Where tracefs is under the root ("sys/kernel/tracing", or "sys/kernel/debug/tracing"), NULL
 * when it is not mounted. */
const char *latency_tracefs(Root *root);
/* Whether the tracefs at dir lists `tracer` in available_tracers. */
bool latency_has_tracer(Root *root, const char *dir, const char *tracer);

/* Restores what a run killed before it could left in run/rtpart/tracefs.json: 1 when it did
 * (and says so in *ret_message), 0 when there was nothing to restore. */
int latency_recover(Root *root, char **ret_message);

/* Runs timerlat on cpus for `seconds` (interruptible: *stop set from a signal handler ends the
 * window early, and the state is put back all the same). mounted: the caller mounted tracefs for
 * this run (a recovery after a crash unmounts it). */
int latency_run_timerlat(Root *root, const char *tracefs, bool mounted, const CpuSet *cpus, unsigned seconds,
                         volatile sig_atomic_t *stop, LatencyResult *ret);

/* osnoise (Documentation/trace/osnoise-tracer.rst): a thread on each CPU measures, period after
 * period, the time taken from it, by source. One line per period and CPU:
 *
 *   <...>-859  [002] ....  81.637220:  1000000   190  99.98100   9   18   0   1007   18   1
 *
 * runtime µs, noise µs, % of the CPU available, the largest single noise µs, then how many times
 * hardware (SMIs, a hypervisor), NMIs, IRQs, softirqs and threads interfered. */
typedef struct OsnoiseSample {
        uint64_t runtime_us, noise_us, max_single_us;
        uint64_t hw, nmi, irq, softirq, thread;
} OsnoiseSample;

typedef struct OsnoiseCpu {
        unsigned cpu;
        unsigned periods;
        OsnoiseSample total; /* sums; max_single_us the largest */
} OsnoiseCpu;

typedef struct OsnoiseResult {
        double seconds;
        OsnoiseCpu *cpus;
        size_t n_cpus;
} OsnoiseResult;

/* 1 and the line's CPU and figures, 0 for a line that is none. */
int latency_parse_osnoise_line(const char *line, unsigned *ret_cpu, OsnoiseSample *ret);
/* Called once the tracer runs (begin) and once more before it is taken down: a caller's own
 * measurement of the same window (audit's snapshots). A negative errno ends the run. */
typedef int (*LatencyWindowFunc)(bool begin, void *userdata);
int latency_run_osnoise(Root *root, const char *tracefs, bool mounted, const CpuSet *cpus, unsigned seconds,
                        volatile sig_atomic_t *stop, LatencyWindowFunc window, void *window_data, OsnoiseResult *ret);
const OsnoiseCpu *osnoise_cpu(const OsnoiseResult *r, unsigned cpu);
void osnoise_result_done(OsnoiseResult *r);

/* Runs `cyclictest` on the root's host (root_run_program()) on cpus: one thread per CPU, 1 ms
 * interval, priority 95. -ENOENT when it is not installed, -EOPNOTSUPP where the root runs no
 * programs. */
int latency_run_cyclictest(Root *root, const CpuSet *cpus, unsigned seconds, LatencyResult *ret);
/* Its histogram output (-h), thread i being the i-th CPU of cpus. */
int latency_parse_cyclictest(const char *text, const CpuSet *cpus, LatencyResult *ret);

/* {"tool", "seconds", "limit_us", "verdict", "cpu": [{"cpu", "irq": {...}, "thread": {"samples",
 * "min_us", "avg_us", "p99_us", "max_us", "over_limit", "histogram": [[us, count], …]}}]};
 * limit_us 0: none. *ret_over: some CPU's max exceeds the limit. */
int latency_document(const LatencyResult *r, unsigned limit_us, json_t **ret, bool *ret_over);
/* The thread latency histograms as a small SVG (log-scale counts over µs), one panel per CPU. */
int latency_svg(const LatencyResult *r, unsigned limit_us, char **ret);
