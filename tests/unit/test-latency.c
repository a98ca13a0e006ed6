/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "latency.h"
#include "test-util.h"

/* lib/observe/latency.c without a tracer: timerlat's trace lines, the statistics, cyclictest's histogram
 * output, the document's verdict against a limit, and the picture. */

START_TEST(test_timerlat_lines) {
        unsigned cpu;
        bool thread;
        uint64_t ns;
        ck_assert_int_eq(
                latency_parse_timerlat_line("          <idle>-0       [003] d.h1.    54.029328: #1     context    "
                                            "irq timer_latency       932 ns",
                                            &cpu, &thread, &ns),
                1);
        ck_assert_uint_eq(cpu, 3);
        ck_assert(!thread);
        ck_assert_uint_eq(ns, 932);
        ck_assert_int_eq(
                latency_parse_timerlat_line("           <...>-867     [012] .....    54.029339: #1     context "
                                            "thread timer_latency     11700 ns",
                                            &cpu, &thread, &ns),
                1);
        ck_assert_uint_eq(cpu, 12);
        ck_assert(thread);
        ck_assert_uint_eq(ns, 11700);
        /* Microseconds (timerlat's "print in µs" builds). */
        ck_assert_int_eq(latency_parse_timerlat_line("x-1 [001] ..... 1.0: #9 context thread timer_latency 17 us", &cpu,
                                                     &thread, &ns),
                         1);
        ck_assert_uint_eq(ns, 17000);
        /* No samples: headers, another context, broken lines. */
        const char *no[] = {
                "# tracer: timerlat",
                "#         TASK-PID      CPU#   |||||   TIMESTAMP  ID            CONTEXT                 LATENCY",
                "x-1 [001] ..... 1.0: #9 context user-ret timer_latency 17 ns",
                "x-1 [001] ..... 1.0: #9 context thread timer_latency 17",
                "x-1 [001] ..... 1.0: #9 context thread timer_latency ns",
                "x-1 [abc] ..... 1.0: #9 context thread timer_latency 17 ns",
                "x-1 [99999] ..... 1.0: #9 context thread timer_latency 17 ns",
                "x-1 [001] ..... 1.0: #9 context thread timer_latency 99999999999999999999999 ns",
                "",
                "[001",
        };
        for (size_t i = 0; i < ELEMENTSOF(no); i++)
                ck_assert_msg(latency_parse_timerlat_line(no[i], &cpu, &thread, &ns) == 0, "%s", no[i]);
}
END_TEST

START_TEST(test_stats) {
        LatencyStats s = {};
        ck_assert_uint_eq(latency_stats_percentile_us(&s, 99), 0);
        for (unsigned i = 1; i <= 100; i++)
                latency_stats_add(&s, i * 1000 - 1); /* 0.999 … 99.999 µs */
        ck_assert_uint_eq(s.samples, 100);
        ck_assert_uint_eq(s.min_ns, 999);
        ck_assert_uint_eq(s.max_ns, 99999);
        ck_assert_uint_eq(latency_stats_percentile_us(&s, 50), 50);
        ck_assert_uint_eq(latency_stats_percentile_us(&s, 99), 99);
        ck_assert_uint_eq(latency_stats_percentile_us(&s, 100), 100);
        /* Beyond the histogram: the maximum. */
        latency_stats_add(&s, 5000000);
        ck_assert_uint_eq(s.hist[LATENCY_HIST_US], 1);
        ck_assert_uint_eq(latency_stats_percentile_us(&s, 100), 5000);
}
END_TEST

static const char cyclictest_out[] = "# /dev/cpu_dma_latency set to 0us\n"
                                     "000000 000000 000000\n"
                                     "000002 000010 000000\n"
                                     "000003 000080 000090\n"
                                     "000007 000010 000009\n"
                                     "000050 000000 000001\n"
                                     "# Total: 000000100 000000100\n"
                                     "# Min Latencies: 00002 00003\n"
                                     "# Avg Latencies: 00003 00003\n"
                                     "# Max Latencies: 00007 00050\n"
                                     "# Histogram Overflows: 00000 00000\n";

START_TEST(test_cyclictest) {
        CpuSet cpus = {};
        LatencyResult r = {};
        ck_assert_int_eq(cpu_set_parse_list("2,5", &cpus, NULL), 0);
        ck_assert_int_eq(latency_parse_cyclictest(cyclictest_out, &cpus, &r), 0);
        ck_assert_str_eq(r.tool, "cyclictest");
        ck_assert(!r.has_irq);
        ck_assert_uint_eq(r.n_cpus, 2);
        LatencyCpu *c2 = latency_cpu(&r, 2), *c5 = latency_cpu(&r, 5);
        ck_assert_ptr_nonnull(c2);
        ck_assert_ptr_null(latency_cpu(&r, 3));
        ck_assert_uint_eq(c2->thread.samples, 100);
        ck_assert_uint_eq(c2->thread.min_ns, 2000);
        ck_assert_uint_eq(c2->thread.max_ns, 7000);
        ck_assert_uint_eq(c5->thread.samples, 100);
        ck_assert_uint_eq(c5->thread.max_ns, 50000);
        ck_assert_uint_eq(c5->thread.hist[3], 90);

        json_t *doc = NULL;
        bool over = false;
        ck_assert_int_eq(latency_document(&r, 20, &doc, &over), 0);
        ck_assert(over);
        ck_assert_str_eq(json_string_value(json_object_get(doc, "verdict")), "over");
        json_t *t5 = json_object_get(json_array_get(json_object_get(doc, "cpu"), 1), "thread");
        ck_assert(json_is_true(json_object_get(t5, "over_limit")));
        ck_assert(json_real_value(json_object_get(t5, "max_us")) == 50.0);
        ck_assert(json_is_null(json_object_get(json_array_get(json_object_get(doc, "cpu"), 0), "irq")));
        json_decref(doc);
        ck_assert_int_eq(latency_document(&r, 60, &doc, &over), 0);
        ck_assert(!over);
        ck_assert_str_eq(json_string_value(json_object_get(doc, "verdict")), "within");
        json_decref(doc);
        ck_assert_int_eq(latency_document(&r, 0, &doc, &over), 0);
        ck_assert_str_eq(json_string_value(json_object_get(doc, "verdict")), "measured");
        json_decref(doc);

        char *svg = NULL;
        ck_assert_int_eq(latency_svg(&r, 20, &svg), 0);
        ck_assert(strncmp(svg, "<svg ", 5) == 0);
        ck_assert_ptr_nonnull(strstr(svg, "CPU 5: cyclictest thread latency, 100 samples, max 50.0 µs"));
        ck_assert_ptr_nonnull(strstr(svg, "stroke-dasharray")); /* the limit */
        /* Bars on a log scale, 90 px for CPU 5's tallest (90 samples): 9 samples are
         * (log10 9 + 1) / (log10 90 + 1) of it, 1 sample 1 / (log10 90 + 1). */
        ck_assert_ptr_nonnull(strstr(svg, "height=\"90.0\""));
        ck_assert_ptr_nonnull(strstr(svg, "height=\"59.5\""));
        ck_assert_ptr_nonnull(strstr(svg, "height=\"30.5\""));
        ck_assert_ptr_nonnull(strstr(svg, "</svg>\n"));
        free(svg);
        latency_result_done(&r);

        ck_assert_int_eq(latency_parse_cyclictest("# nothing\n", &cpus, &r), -EBADMSG);
}
END_TEST

START_TEST(test_osnoise_lines) {
        unsigned cpu;
        OsnoiseSample s;
        ck_assert_int_eq(
                latency_parse_osnoise_line("           <...>-859     [002] ....    81.637220: 1000000        190  "
                                           "99.98100       9     18      0   1007     18      1",
                                           &cpu, &s),
                1);
        ck_assert_uint_eq(cpu, 2);
        ck_assert_uint_eq(s.runtime_us, 1000000);
        ck_assert_uint_eq(s.noise_us, 190);
        ck_assert_uint_eq(s.max_single_us, 9);
        ck_assert_uint_eq(s.hw, 18);
        ck_assert_uint_eq(s.nmi, 0);
        ck_assert_uint_eq(s.irq, 1007);
        ck_assert_uint_eq(s.softirq, 18);
        ck_assert_uint_eq(s.thread, 1);
        const char *no[] = {
                "# tracer: osnoise",
                "           <...>-859     [002] ....    81.637220: 1000000        190  99.98100       9     18",
                "           <...>-859     [002] ....    81.637220: 1000000        190  99.98100  9 18 0 1007 18 1 7",
                "           <...>-859     [002] ....    81.637220: 1000000       -190  99.98100  9 18 0 1007 18 1",
                "           <...>-859     [x02] ....    81.637220: 1000000        190  99.98100  9 18 0 1007 18 1",
                "osnoise: a note without numbers",
                /* Found by fuzz-tracing: a float cast of 1e30 was undefined. */
                "           <...>-859     [002] ....    81.637220: 1e30        190  99.98100  9 18 0 1007 18 1",
                "           <...>-859     [002] ....    81.637220: 1000000        190  1e300  9 18 0 1007 18 1",
        };
        for (size_t i = 0; i < ELEMENTSOF(no); i++)
                ck_assert_msg(latency_parse_osnoise_line(no[i], &cpu, &s) == 0, "%s", no[i]);
}
END_TEST

/* Programs run through the root's ops (root_run_program(), the kernel's table for "/"): their
 * output, a program not installed, one that fails; a plain tree runs none. */
START_TEST(test_run_program) {
        _cleanup_(root_freep) Root *root = NULL, *tree = NULL;
        _cleanup_free_ char *out = NULL;
        ck_assert_int_eq(root_new("/", &root), 0);
        ck_assert(root_can(root, ROOT_CAN_RUN_PROGRAMS));
        char *echo[] = { (char *) "echo", (char *) "a", (char *) "b", NULL };
        ck_assert_int_eq(root_run_program(root, echo, &out), 0);
        ck_assert_str_eq(out, "a b\n");
        char *missing[] = { (char *) "rtpart-no-such-program", NULL }, *fails[] = { (char *) "false", NULL };
        ck_assert_int_eq(root_run_program(root, missing, &out), -ENOENT);
        ck_assert_int_eq(root_run_program(root, fails, &out), -EPROTO);
        ck_assert_str_eq(out, "a b\n"); /* untouched on failure */
        /* A tree's own table (the plain one, without the simulator) runs nothing. */
        _cleanup_free_ char *dir = test_tmpdir();
        ck_assert_int_eq(root_new(dir, &tree), 0);
        if (!root_can(tree, ROOT_CAN_RUN_PROGRAMS))
                ck_assert_int_eq(latency_run_cyclictest(tree, &(CpuSet) {}, 1, &(LatencyResult) {}), -EOPNOTSUPP);
        test_rmtree(dir);
}
END_TEST

static Suite *latency_suite(void) {
        Suite *s = suite_create("latency");
        TCase *tc = tcase_create("latency");
        tcase_add_test(tc, test_timerlat_lines);
        tcase_add_test(tc, test_stats);
        tcase_add_test(tc, test_cyclictest);
        tcase_add_test(tc, test_osnoise_lines);
        tcase_add_test(tc, test_run_program);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return test_run(latency_suite());
}
