/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target for what audit and check read: counter tables (/proc/interrupts and
 * /proc/softirqs as lib/observe/audit.c parses them), timerlat, osnoise and hwlat trace lines, and
 * cyclictest's histogram output (lib/observe/latency.c, hwlat.c). What must hold: a table's rows have counts for every CPU
 * column it declares and a label; a sample's CPU is below CPU_SET_MAX; statistics built from
 * parsed samples keep min ≤ max and a percentile within [min, max] rounded up to the µs. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "hwlat.h"
#include "latency.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *s = strndup((const char *) data, size);
        if (!s)
                return 0;

        CounterTable t = {};
        if (counter_table_parse(s, &t) >= 0) {
                if (t.n_cpus == 0 || t.n_cpus > CPU_SET_MAX)
                        abort();
                for (size_t i = 0; i < t.n_rows; i++)
                        if (!t.rows[i].label || !*t.rows[i].label || !t.rows[i].text || !t.rows[i].counts)
                                abort();
                counter_table_done(&t);
        }

        LatencyStats st = {};
        for (char *save = NULL, *line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                unsigned cpu;
                bool thread;
                uint64_t ns;
                OsnoiseSample o;
                if (latency_parse_timerlat_line(line, &cpu, &thread, &ns) > 0) {
                        if (cpu >= CPU_SET_MAX)
                                abort();
                        latency_stats_add(&st, ns);
                }
                if (latency_parse_osnoise_line(line, &cpu, &o) > 0 && cpu >= CPU_SET_MAX)
                        abort();
                HwlatSample h;
                if (hwlat_parse_line(line, &cpu, &h) > 0 && cpu >= CPU_SET_MAX)
                        abort();
        }
        if (st.samples > 0) {
                if (st.min_ns > st.max_ns)
                        abort();
                uint64_t p = latency_stats_percentile_us(&st, 99.0);
                if (p < st.min_ns / 1000 || p > (st.max_ns + 999) / 1000)
                        abort();
        }
        free(s);

        /* cyclictest's output, for CPUs 2 and 5. */
        s = strndup((const char *) data, size);
        CpuSet cpus = {};
        cpu_set_add(&cpus, 2);
        cpu_set_add(&cpus, 5);
        LatencyResult r = {};
        if (s && latency_parse_cyclictest(s, &cpus, &r) >= 0) {
                if (r.n_cpus != 2)
                        abort();
                latency_result_done(&r);
        }
        free(s);
        return 0;
}
