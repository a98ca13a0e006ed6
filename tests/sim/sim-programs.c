/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sim-kernel.h"
#include "strv.h"

/* Programs run on a fake host (root_run_program()): one that the tree has in usr/bin runs, as a
 * stand-in that prints what the real one would; any other is not installed (-ENOENT).
 *
 *   cyclictest -t N -a LIST -D S -h 1000 …   one thread per CPU of LIST, each with 20 samples:
 *                                            10 of 2 µs, 9 of 4 µs and one of (10 + CPU) µs, as
 *                                            its histogram (-h) prints them */

static int cyclictest(char * const *argv, char **ret) {
        CpuSet cpus = {};
        for (char * const *a = argv; *a; a++)
                if (streq(*a, "-a") && a[1] && cpu_set_parse_list(a[1], &cpus, NULL) < 0)
                        return -EPROTO;
        if (cpu_set_is_empty(&cpus))
                return -EPROTO;
        StrBuf b = {};
        strbuf_append(&b, "# /dev/cpu_dma_latency set to 0us\n");
        for (unsigned us = 0; us < 1000; us++) {
                bool any = false;
                char row[16];
                snprintf(row, sizeof(row), "%06u", us);
                StrBuf line = {};
                strbuf_append(&line, row);
                CPU_SET_FOREACH (c, &cpus) {
                        unsigned n = us == 2 ? 10 : us == 4 ? 9 : us == 10 + (unsigned) c ? 1 : 0;
                        any = any || n > 0;
                        strbuf_appendf(&line, " %06u", n);
                }
                _cleanup_free_ char *l = strbuf_steal(&line);
                if (any && l)
                        strbuf_appendf(&b, "%s\n", l);
        }
        strbuf_append(&b, "# Max Latencies:");
        CPU_SET_FOREACH (c, &cpus)
                strbuf_appendf(&b, " %05u", 10 + (unsigned) c);
        strbuf_append(&b, "\n");
        *ret = strbuf_steal(&b);
        return *ret ? 0 : -ENOMEM;
}

int sim_run_program(Root *r, char * const *argv, char **ret_output) {
        char rel[256];
        snprintf(rel, sizeof(rel), "usr/bin/%s", argv[0]);
        if (strchr(argv[0], '/') || !root_exists(r, rel))
                return -ENOENT;
        if (streq(argv[0], "cyclictest"))
                return cyclictest(argv, ret_output);
        return -ENOENT;
}
