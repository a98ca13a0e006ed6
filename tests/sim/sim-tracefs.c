/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sim-internal.h"
#include "sim-kernel.h"
#include "strv.h"

/* The kernel's side of timerlat in a tree's tracefs (sys/kernel/tracing): current_tracer set to
 * "timerlat" puts, for each CPU of osnoise/cpus, 20 wake-ups into trace_pipe (a regular file here;
 * the reader reads to its end and waits), with latencies the tests know:
 *
 *   irq     (1000 + 100·i + CPU) ns,   thread  (3000 + 500·i + CPU) ns,   i = 0 … 19
 *
 * so a CPU's thread latency runs from 3.0 µs to 12.5 µs, between them a "user-ret" line and a
 * header, which are no samples. "osnoise" puts three periods per CPU (see below), "hwlat" three
 * windows per CPU of tracing_cpumask (see sim_hwlat()). */

/* Adds n to MSR_SMI_COUNT in the tree's dev/cpu/CPU/msr, where there is one. */
static void smi_add(Root *r, int cpu, uint64_t n) {
        _cleanup_close_ int fd = root_openf(r, O_RDWR | O_NOCTTY, "dev/cpu/%d/msr", cpu);
        uint64_t v;
        if (fd >= 0 && pread(fd, &v, sizeof(v), 0x34) == (ssize_t) sizeof(v)) {
                v += n;
                (void) !pwrite(fd, &v, sizeof(v), 0x34);
        }
}

/* hwlat with tracing on: for each CPU of tracing_cpumask three windows whose gaps are, for
 * i = 0 … 2, inner (3 + 5·i + CPU) µs and outer (2 + 5·i) µs (the largest 13 + CPU), the last
 * with an NMI; only those above tracing_thresh are written, as the kernel writes them. Two SMIs
 * come on each of those CPUs while it runs, and tracing_max_latency is the largest gap written. */
static void sim_hwlat(Root *r, const char *dir, StrBuf *b) {
        char path[300];
        CpuSet cpus = {};
        unsigned thresh = 0, max = 0;
        _cleanup_free_ char *on = NULL;
        snprintf(path, sizeof(path), "%s/tracing_on", dir);
        if (root_read_line(r, path, &on) < 0 || !streq(on, "1"))
                return;
        snprintf(path, sizeof(path), "%s/tracing_cpumask", dir);
        if (root_read_cpu_mask(r, path, &cpus) < 0)
                return;
        snprintf(path, sizeof(path), "%s/tracing_thresh", dir);
        (void) root_read_uint(r, path, &thresh);
        thresh = thresh ?: 10; /* the kernel's default when it is 0 */
        strbuf_append(b, "# tracer: hwlat\n#\n");
        for (unsigned i = 0; i < 3; i++)
                CPU_SET_FOREACH (c, &cpus) {
                        unsigned inner = 3 + 5 * i + (unsigned) c, outer = 2 + 5 * i;
                        if (MAX(inner, outer) <= thresh)
                                continue;
                        max = MAX(max, MAX(inner, outer));
                        strbuf_appendf(b,
                                       "           <...>-1729    [%03d] d...   67%u.473449: #%u     inner/outer(us): "
                                       "%4u/%-5u ts:1581527483.343962693 count:%u%s\n",
                                       c, i, i * cpu_set_count(&cpus) + 1, inner, outer, i + 1,
                                       i == 2 ? " nmi-total:5000 nmi-count:1" : "");
                }
        CPU_SET_FOREACH (c, &cpus)
                smi_add(r, c, 2);
        if (max > 0)
                (void) sim_putf(r, dir, "tracing_max_latency", 0644, "%u\n", max);
}

void sim_tracefs_written(Root *r, const char *rel, const char *value) {
        size_t n = strlen(rel);
        const char *tail = "tracing/current_tracer";
        if (n < strlen(tail) || !streq(rel + n - strlen(tail), tail) ||
            (!streq(value, "timerlat") && !streq(value, "osnoise") && !streq(value, "hwlat")))
                return;
        char dir[256], path[300];
        snprintf(dir, sizeof(dir), "%.*s", (int) (n - strlen("current_tracer") - 1), rel);
        StrBuf b = {};
        if (streq(value, "hwlat")) {
                sim_hwlat(r, dir, &b);
                goto write;
        }
        CpuSet cpus = {};
        snprintf(path, sizeof(path), "%s/osnoise/cpus", dir);
        if (root_read_cpu_list(r, path, &cpus) < 0)
                return;
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
