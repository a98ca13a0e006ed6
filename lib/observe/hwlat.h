/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the hardware and firmware take from the CPUs (rtpartctl check hardware).
 *
 * The kernel's hwlat tracer (Documentation/trace/hwlat_detector.rst) spins on a CPU with
 * interrupts off for hwlat_detector/width µs of every hwlat_detector/window and watches the time
 * stamp counter: a gap in it is time the CPU was taken away by something the kernel does not see,
 * an SMI, a hypervisor, an NMI (counted apart). Each window whose largest gap exceeds
 * tracing_thresh is one line of the trace:
 *
 *   <...>-1729  [001] d...  678.473449: #1     inner/outer(us):   11/12    ts:1581527483.343962693 count:6
 *
 * "inner" a gap between two reads of one loop, "outer" one between loops; count (5.x kernels on)
 * how many gaps of the window exceeded the threshold, and "nmi-total:N nmi-count:N" where NMIs
 * came. The tracer visits the CPUs of tracing_cpumask, all at once where hwlat_detector/mode
 * offers "per-cpu" (5.14 on), one per window otherwise. tracefs is saved and put back as check
 * latency does (tracefs.h).
 *
 * The SMI count is the CPUs' MSR_SMI_COUNT (MSR 0x34, Intel since Nehalem), read through the msr
 * module's dev/cpu/N/msr at offset 0x34 before and after the window. */

#include <jansson.h>
#include <signal.h>
#include <stdint.h>

#include "cpu-set.h"
#include "root.h"

typedef struct HwlatSample {
        uint64_t inner_us, outer_us;
        unsigned count; /* 0 where the kernel prints none */
        unsigned nmi_count;
} HwlatSample;

typedef struct HwlatCpu {
        unsigned cpu;
        unsigned samples; /* windows with a gap above the threshold */
        unsigned over;    /* of those, windows with a gap above the limit */
        uint64_t max_us;  /* the largest gap */
        unsigned nmi;     /* NMIs in those windows */
} HwlatCpu;

typedef struct HwlatResult {
        double seconds;
        unsigned width_us, window_us, threshold_us, limit_us;
        const char *mode; /* "per-cpu" or "round-robin" */
        HwlatCpu *cpus;
        size_t n_cpus;
} HwlatResult;

/* One line of hwlat's trace: 1, its CPU and figures; 0 for a line that is no sample. */
int hwlat_parse_line(const char *line, unsigned *ret_cpu, HwlatSample *ret);

/* Runs hwlat on cpus for `seconds` (interruptible as latency_run_timerlat()), every gap above
 * 1 µs recorded, those above limit_us (0: none) counted. */
int hwlat_run(Root *root, const char *tracefs, bool mounted, const CpuSet *cpus, unsigned seconds, unsigned limit_us,
              volatile sig_atomic_t *stop, HwlatResult *ret);
void hwlat_result_done(HwlatResult *r);

/* {"ran": true, "seconds", "mode", "width_us", "window_us", "threshold_us", "limit_us", "max_us",
 * "samples", "over", "verdict" ("within", "over", or "measured" without a limit), "cpu": [{"cpu",
 * "samples", "max_us", "over", "nmi"}]}. */
int hwlat_document(const HwlatResult *r, json_t **ret);
/* That document in a sentence: "hwlat over 5.0 s (per-cpu, 500000 µs of every 1000000 with
 * interrupts off): largest gap 3 µs, 11 windows above 1 µs, 0 above the limit of 20 µs". */
char *hwlat_summary(json_t *doc);

/* MSR_SMI_COUNT of cpu. -ENOENT: no dev/cpu/N/msr (the msr module is not loaded); -EACCES or
 * -EPERM: reading MSRs needs CAP_SYS_RAWIO; -EIO: the CPU has no such MSR. */
int smi_read(Root *root, unsigned cpu, uint64_t *ret);

typedef struct SmiCounts {
        bool available;
        char *reason; /* why not */
        size_t n;
        unsigned *cpus;
        uint64_t *before, *after;
} SmiCounts;

/* The SMI counts of cpus now, or why they cannot be read (vendor: "GenuineIntel", "AuthenticAMD"
 * … from proc/cpuinfo; virtual: the CPU runs under a hypervisor). */
int smi_counts_begin(Root *root, const CpuSet *cpus, const char *vendor, bool virtual, SmiCounts *ret);
/* The counts again, after the window. */
void smi_counts_end(Root *root, SmiCounts *c);
void smi_counts_done(SmiCounts *c);
/* {"available", "reason", "count" (the most any CPU counted in the window), "cpu": [{"cpu",
 * "before", "after"}]}. */
int smi_document(const SmiCounts *c, json_t **ret);
