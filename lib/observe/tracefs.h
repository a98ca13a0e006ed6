/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* tracefs for a measuring window (check latency, check hardware, audit): where it is, which
 * tracers the kernel has, and one run of a tracer whose settings are saved first, into
 * run/rtpart/tracefs.json under the root, and put back byte for byte after it, whatever happens
 * (an error, a signal). A run killed before it could put them back (kill -9, a power cut) leaves
 * that file, and the next run restores from it first (tracefs_recover()). */

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "root.h"

/* Where tracefs is under the root ("sys/kernel/tracing", or "sys/kernel/debug/tracing"), NULL
 * when it is not mounted. */
const char *tracefs_find(Root *root);
/* Whether the tracefs at dir lists `tracer` in available_tracers. */
bool tracefs_has_tracer(Root *root, const char *dir, const char *tracer);
/* The value of dir/file as a run saves it: its first line, without the newline; of a choice file
 * ("none [round-robin] per-cpu"), the word chosen. NULL when it cannot be read. */
char *tracefs_read(Root *root, const char *dir, const char *file);

/* Restores what a run killed before it could left in run/rtpart/tracefs.json: 1 when it did
 * (and says so in *ret_message), 0 when there was nothing to restore. */
int tracefs_recover(Root *root, char **ret_message);

typedef struct TracefsSetting {
        const char *file, *value;
} TracefsSetting;

/* One run: the tracer and the files set for it. Every file of setup (one of the files a run may
 * change: osnoise/…, hwlat_detector/…, tracing_cpumask, tracing_thresh, tracing_max_latency) is
 * saved, then written in order once the tracer is stopped; a file this kernel does not have is
 * left out. A write the kernel refuses with EINVAL (hwlat's width above the window it has now)
 * is tried again after the others. */
typedef struct TracefsRun {
        const char *tracer; /* current_tracer: "timerlat", "osnoise", "hwlat" */
        const char *by;     /* who ran it, for a recovery's message: "latency check" */
        const TracefsSetting *setup;
        size_t n_setup;
} TracefsRun;

typedef void (*TracefsLineFunc)(const char *line, void *userdata);
/* Called once the tracer runs (begin) and once more before it is taken down: a caller's own
 * measurement of the same window. A negative errno ends the run. */
typedef int (*TracefsWindowFunc)(bool begin, void *userdata);

/* Runs run->tracer for `seconds` (interruptible: *stop set from a signal handler ends the window
 * early, and the state is put back all the same), every line of trace_pipe to f. mounted: the
 * caller mounted tracefs for this run (a recovery after a crash unmounts it). *ret_seconds: how
 * long the tracer ran. */
int tracefs_run(Root *root, const char *dir, bool mounted, const TracefsRun *run, unsigned seconds,
                volatile sig_atomic_t *stop, TracefsLineFunc f, void *userdata, TracefsWindowFunc window,
                void *window_data, double *ret_seconds);

/* A trace line's CPU: the first "[NNN]" after the task; *ret_end at its ']'. False for a
 * comment, an empty line or a line without one. */
bool tracefs_line_cpu(const char *line, unsigned *ret_cpu, char **ret_end);
