/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <string.h>

#include "sim-kernel.h"
#include "strv.h"

/* The kernel's side of timerlat in a tree's tracefs (sys/kernel/tracing): current_tracer set to
 * "timerlat" puts, for each CPU of osnoise/cpus, 20 wake-ups into trace_pipe (a regular file here;
 * the reader reads to its end and waits), with latencies the tests know:
 *
 *   irq     (1000 + 100·i + CPU) ns,   thread  (3000 + 500·i + CPU) ns,   i = 0 … 19
 *
 * so a CPU's thread latency runs from 3.0 µs to 12.5 µs, between them a "user-ret" line and a
 * header, which are no samples. "osnoise" puts three periods per CPU (see below). */

void sim_tracefs_written(Root *r, const char *rel, const char *value) {
        size_t n = strlen(rel);
        const char *tail = "tracing/current_tracer";
        if (n < strlen(tail) || !streq(rel + n - strlen(tail), tail) ||
            (!streq(value, "timerlat") && !streq(value, "osnoise")))
                return;
        char dir[256], path[300];
        snprintf(dir, sizeof(dir), "%.*s", (int) (n - strlen("current_tracer") - 1), rel);
        CpuSet cpus = {};
        snprintf(path, sizeof(path), "%s/osnoise/cpus", dir);
        if (root_read_cpu_list(r, path, &cpus) < 0)
                return;
        StrBuf b = {};
        if (streq(value, "osnoise")) {
                /* Three periods per CPU: 1 s of runtime, (100 + CPU) µs of noise each, the largest
                 * single one 9 µs in the last; hw 1, nmi 0, irq 1000, softirq 18, thread 2 each. */
                strbuf_append(&b, "# tracer: osnoise\n#\n");
                for (unsigned i = 0; i < 3; i++)
                        CPU_SET_FOREACH (c, &cpus)
                                strbuf_appendf(&b,
                                               "           <...>-859     [%03d] ....    8%u.637220: 1000000 %9u  "
                                               "99.98100 %7u      1      0   1000     18      2\n",
                                               c, i, 100 + (unsigned) c, i == 2 ? 9u : 4u);
                goto write;
        }
        strbuf_append(&b, "# tracer: timerlat\n#\n");
        for (unsigned i = 0; i < 20; i++)
                CPU_SET_FOREACH (c, &cpus) {
                        strbuf_appendf(&b,
                                       "          <idle>-0       [%03d] d.h1.    54.%06u: #%u     context    irq "
                                       "timer_latency %9u ns\n",
                                       c, i, i + 1, 1000 + 100 * i + (unsigned) c);
                        strbuf_appendf(&b,
                                       "     timerlat/%d-867     [%03d] .....    54.%06u: #%u     context thread "
                                       "timer_latency %9u ns\n",
                                       c, c, i, i + 1, 3000 + 500 * i + (unsigned) c);
                        if (i == 10)
                                strbuf_appendf(&b,
                                               "     timerlat/%d-867     [%03d] .....    54.%06u: #%u     context "
                                               "user-ret timer_latency %9u ns\n",
                                               c, c, i, i + 1, 999999u);
                }
write:;
        _cleanup_free_ char *text = strbuf_steal(&b);
        snprintf(path, sizeof(path), "%s/trace_pipe", dir);
        if (text)
                (void) root_file_replace(r, path, text, strlen(text), 0444); /* the kernel's: no write of ours */
}
