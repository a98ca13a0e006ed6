/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pm-qos.h"
#include "strv.h"
#include "test-util.h"

/* The cpu and module backends on small fake hosts built here: 8 Intel CPUs with cpufreq,
 * EPB, four idle states and KVM loaded. */

#define CPU "sys/devices/system/cpu"

static char *host_dir, *prof_dir;
static Root *root;
static Host *host;

static void mkdirs(const char *path) {
        _cleanup_free_ char *p = strdup(path);
        ck_assert_ptr_nonnull(p);
        for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
                *s = 0;
                ck_assert(mkdir(p, 0755) == 0 || errno == EEXIST);
                *s = '/';
        }
}

static void put_bytes(const char *dir, const char *rel, const void *data, size_t n, mode_t mode) {
        _cleanup_free_ char *path = NULL;
        ck_assert(asprintf(&path, "%s/%s", dir, rel) >= 0);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 && errno == ENOENT) {
                mkdirs(path);
                fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        }
        ck_assert_msg(fd >= 0, "cannot write %s", path);
        ck_assert_int_eq(write(fd, data, n), (ssize_t) n);
        ck_assert_int_eq(close(fd), 0);
        ck_assert_int_eq(chmod(path, mode), 0);
}

static void put(const char *dir, const char *rel, const char *text) {
        put_bytes(dir, rel, text, strlen(text), 0644);
}

static void putf(const char *dir, const char *text, const char *fmt, ...) _printf_(3, 4);
static void putf(const char *dir, const char *text, const char *fmt, ...) {
        char rel[256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(rel, sizeof(rel), fmt, ap);
        va_end(ap);
        put(dir, rel, text);
}

static void rm(const char *dir, const char *rel) {
        _cleanup_free_ char *cmd = NULL;
        ck_assert(asprintf(&cmd, "rm -rf '%s/'%s", dir, rel) >= 0);
        ck_assert_int_eq(system(cmd), 0);
}

static const struct {
        const char *name;
        const char *latency;
} idle_states[] = {
        { "POLL", "0" },
        { "C1", "2" },
        { "C1E", "10" },
        { "C6", "133" },
};

static void cpu_files(const char *dir, int c) {
        putf(dir, "powersave\n", CPU "/cpu%d/cpufreq/scaling_governor", c);
        putf(dir, "performance powersave\n", CPU "/cpu%d/cpufreq/scaling_available_governors", c);
        putf(dir, c == 3 ? "0\n" : "6\n", CPU "/cpu%d/power/energy_perf_bias", c);
        for (size_t s = 0; s < ELEMENTSOF(idle_states); s++) {
                putf(dir, idle_states[s].latency, CPU "/cpu%d/cpuidle/state%zu/latency", c, s);
                putf(dir, idle_states[s].name, CPU "/cpu%d/cpuidle/state%zu/name", c, s);
                putf(dir, c == 5 && s == 3 ? "1\n" : "0\n", CPU "/cpu%d/cpuidle/state%zu/disable", c, s);
        }
}

static void setup(void) {
        host_dir = test_mini_host(8, false, 0);
        prof_dir = test_tmpdir();
        for (int c = 0; c < 8; c++)
                cpu_files(host_dir, c);
        put(host_dir, CPU "/intel_pstate/no_turbo", "0\n");
        put(host_dir, "dev/cpu_dma_latency", "2000000000\n");

        put(host_dir, "sys/module/kvm/parameters/halt_poll_ns", "200000\n");
        put(host_dir, "sys/module/kvm/parameters/nx_huge_pages", "N\n");
        put_bytes(host_dir, "sys/module/kvm/parameters/kvmclock_periodic_sync", "Y\n", 2, 0444);
        put(host_dir, "sys/module/kvm/parameters/enable_pmu", "Y\n");
        put(host_dir, "sys/module/kvm_intel/parameters/ple_gap", "128\n");
        put_bytes(host_dir, "sys/module/kvm_intel/parameters/nested", "Y\n", 2, 0444);
        put(host_dir, "sys/module/kvm_intel/initstate", "live\n");

        test_open_host(host_dir, &root, &host);
}

static void teardown(void) {
        cpu_pm_qos_set_holder(false);
        host = host_free(host);
        root = root_free(root);
        test_rmtree(host_dir);
        test_rmtree(prof_dir);
        free(host_dir);
        free(prof_dir);
}

/* After changing the tree: discover again (the vendor, the online CPUs). */
static void reopen(void) {
        host = host_free(host);
        root = root_free(root);
        test_open_host(host_dir, &root, &host);
}

static Plan *plan_ok(const char *json) {
        _cleanup_free_ char *path = test_profile(prof_dir, "p", json);
        _cleanup_free_ char *err = NULL;
        Plan *p = NULL;
        int k = test_plan(root, host, path, &p, &err);
        ck_assert_msg(k == 0, "plan failed: %d %s", k, strempty(err));
        return p;
}

static void plan_error(const char *json, const char *pointer, const char *fragment) {
        _cleanup_free_ char *path = test_profile(prof_dir, "bad", json);
        _cleanup_free_ char *err = NULL, *want = NULL;
        Plan *p = NULL;
        int k = test_plan(root, host, path, &p, &err);
        ck_assert_msg(k == -EINVAL, "expected -EINVAL, got %d (%s)", k, strempty(err));
        ck_assert_ptr_null(p);
        ck_assert(asprintf(&want, "bad.json: %s: ", pointer) >= 0);
        ck_assert_msg(strstr(err, want), "error '%s' lacks '%s'", err, want);
        ck_assert_msg(strstr(err, fragment), "error '%s' lacks '%s'", err, fragment);
}

static const Knob *knob(const Plan *p, const char *id) {
        const Knob *k = plan_find(p, id);
        ck_assert_msg(k, "no knob %s", id);
        return k;
}

static void expect(const Plan *p, const char *id, const char *path, const char *current, const char *desired,
                   bool changed, bool reboot) {
        const Knob *k = knob(p, id);
        ck_assert_str_eq(k->path, path);
        if (current)
                ck_assert_str_eq(k->current, current);
        else
                ck_assert_ptr_null(k->current);
        ck_assert_str_eq(k->desired, desired);
        ck_assert_msg(k->changed == changed, "%s: changed is %d", id, k->changed);
        ck_assert_msg(k->reboot == reboot, "%s: reboot is %d", id, k->reboot);
}

static size_t count_prefix(const Plan *p, const char *prefix) {
        size_t n = 0;
        for (size_t i = 0; i < p->n_knobs; i++)
                if (startswith(p->knobs[i].id, prefix))
                        n++;
        return n;
}

static size_t count_notes(const Plan *p, const char *fragment) {
        size_t n = 0;
        for (char **i = p->notes; i && *i; i++)
                if (strstr(*i, fragment))
                        n++;
        return n;
}

static char *read_knob(const Plan *p, Domain d, const char *id) {
        const Knob *k = knob(p, id);
        char *v = (char *) 0x1;
        int r = backend_for(d)->read(root, k, &v);
        ck_assert_msg(r == 0, "read %s: %d", id, r);
        return v;
}

/* ---- cpu ---- */

static const char full[] =
        "{\"cpus\": {\"isolated\": \"2-7\"},"
        " \"cpu\": {\"cpus\": \"isolated\", \"governor\": \"performance\", \"energy_perf_bias\": \"performance\","
        "          \"idle_max_latency_us\": 5, \"pm_qos_latency_us\": 0, \"no_turbo\": true}}";

START_TEST(test_governor_epb) {
        _cleanup_(plan_freep) Plan *p = plan_ok(full);

        expect(p, "cpu/2/governor", CPU "/cpu2/cpufreq/scaling_governor", "powersave", "performance", true, false);
        expect(p, "cpu/7/governor", CPU "/cpu7/cpufreq/scaling_governor", "powersave", "performance", true, false);
        ck_assert_ptr_null(plan_find(p, "cpu/0/governor")); /* not selected */
        ck_assert_ptr_null(plan_find(p, "cpu/1/governor"));
        ck_assert_uint_eq(count_prefix(p, "cpu/"), 6 * (1 + 1 + 2) + 2);

        /* names become the number the file shows; compared as numbers */
        expect(p, "cpu/2/energy_perf_bias", CPU "/cpu2/power/energy_perf_bias", "6", "0", true, false);
        expect(p, "cpu/3/energy_perf_bias", CPU "/cpu3/power/energy_perf_bias", "0", "0", false, false);
        ck_assert_int_eq(knob(p, "cpu/2/energy_perf_bias")->domain, DOMAIN_CPU);
}
END_TEST

START_TEST(test_epb_values) {
        _cleanup_(plan_freep) Plan *a = plan_ok("{\"cpu\": {\"energy_perf_bias\": \"balance-power\"}}");
        expect(a, "cpu/0/energy_perf_bias", CPU "/cpu0/power/energy_perf_bias", "6", "8", true, false);
        _cleanup_(plan_freep) Plan *b = plan_ok("{\"cpu\": {\"energy_perf_bias\": \"normal\"}}");
        expect(b, "cpu/0/energy_perf_bias", CPU "/cpu0/power/energy_perf_bias", "6", "6", false, false);
        _cleanup_(plan_freep) Plan *c = plan_ok("{\"cpu\": {\"energy_perf_bias\": \"15\"}}");
        expect(c, "cpu/7/energy_perf_bias", CPU "/cpu7/power/energy_perf_bias", "6", "15", true, false);
        /* no "cpus": every online CPU */
        ck_assert_uint_eq(count_prefix(c, "cpu/"), 8);

        plan_error("{\"cpu\": {\"energy_perf_bias\": \"fast\"}}", "/cpu/energy_perf_bias", "balance-performance");
        plan_error("{\"cpu\": {\"energy_perf_bias\": \"16\"}}", "/cpu/energy_perf_bias", "0 (performance) to 15");

        /* AMD: no EPB files */
        for (int cpu = 0; cpu < 8; cpu++) {
                char rel[64];
                snprintf(rel, sizeof(rel), CPU "/cpu%d/power", cpu);
                rm(host_dir, rel);
        }
        _cleanup_(plan_freep) Plan *d = plan_ok("{\"cpu\": {\"energy_perf_bias\": \"performance\"}}");
        ck_assert_uint_eq(count_prefix(d, "cpu/"), 0);
        ck_assert_uint_eq(count_notes(d, "cpu: no power/energy_perf_bias"), 1);
}
END_TEST

START_TEST(test_governor_unavailable) {
        plan_error("{\"cpu\": {\"governor\": \"schedutil\"}}", "/cpu/governor",
                   "governor \"schedutil\" is not available on this host; available: performance powersave");
        /* a governor that is a prefix of an available one is not available */
        plan_error("{\"cpu\": {\"governor\": \"perf\"}}", "/cpu/governor", "available: performance powersave");
}
END_TEST

START_TEST(test_no_cpufreq) {
        for (int cpu = 0; cpu < 8; cpu++) {
                char rel[64];
                snprintf(rel, sizeof(rel), CPU "/cpu%d/cpufreq", cpu);
                rm(host_dir, rel);
        }
        _cleanup_(plan_freep) Plan *p =
                plan_ok("{\"cpu\": {\"governor\": \"schedutil\", \"energy_perf_bias\": \"performance\"}}");
        /* one note for the host, not one per CPU; the governor is not checked without cpufreq */
        ck_assert_uint_eq(count_prefix(p, "cpu/0/governor"), 0);
        ck_assert_uint_eq(count_notes(p, "cpu: no cpufreq on this host; governor skipped"), 1);
        ck_assert_uint_eq(count_notes(p, "cpufreq"), 1);
        ck_assert_ptr_nonnull(plan_find(p, "cpu/0/energy_perf_bias"));

        /* some CPUs only */
        cpu_files(host_dir, 4);
        _cleanup_(plan_freep) Plan *q = plan_ok("{\"cpu\": {\"governor\": \"performance\"}}");
        ck_assert_uint_eq(count_prefix(q, "cpu/"), 1);
        ck_assert_ptr_nonnull(plan_find(q, "cpu/4/governor"));
        ck_assert_uint_eq(count_notes(q, "cpu: CPUs 0-3,5-7 have no cpufreq; governor not set there"), 1);
}
END_TEST

START_TEST(test_idle) {
        _cleanup_(plan_freep) Plan *p = plan_ok(full);

        /* latency > 5 µs: C1E (10) and C6 (133); never C1 (2) or POLL */
        expect(p, "cpu/2/idle/C1E/disable", CPU "/cpu2/cpuidle/state2/disable", "0", "1", true, false);
        expect(p, "cpu/2/idle/C6/disable", CPU "/cpu2/cpuidle/state3/disable", "0", "1", true, false);
        expect(p, "cpu/5/idle/C6/disable", CPU "/cpu5/cpuidle/state3/disable", "1", "1", false, false);
        ck_assert_ptr_null(plan_find(p, "cpu/2/idle/C1/disable"));
        ck_assert_ptr_null(plan_find(p, "cpu/2/idle/POLL/disable"));
        ck_assert_ptr_null(plan_find(p, "cpu/0/idle/C6/disable"));
        ck_assert_ptr_nonnull(strstr(knob(p, "cpu/2/idle/C6/disable")->note, "133"));

        /* the threshold is exclusive: a state at exactly the limit stays enabled */
        _cleanup_(plan_freep) Plan *q = plan_ok("{\"cpu\": {\"idle_max_latency_us\": 10}}");
        ck_assert_ptr_null(plan_find(q, "cpu/0/idle/C1E/disable"));
        ck_assert_ptr_nonnull(plan_find(q, "cpu/0/idle/C6/disable"));
        ck_assert_uint_eq(count_prefix(q, "cpu/"), 8);

        /* 0 µs: every state but POLL, even if state0 were a real C-state */
        put(host_dir, CPU "/cpu1/cpuidle/state0/name", "C1_ACPI");
        _cleanup_(plan_freep) Plan *r = plan_ok("{\"cpu\": {\"cpus\": \"1\", \"idle_max_latency_us\": 0}}");
        ck_assert_uint_eq(count_prefix(r, "cpu/"), 3);
        ck_assert_ptr_nonnull(plan_find(r, "cpu/1/idle/C1/disable"));
        ck_assert_ptr_null(plan_find(r, "cpu/1/idle/C1_ACPI/disable"));

        /* a deeper state named POLL is never disabled either */
        put(host_dir, CPU "/cpu1/cpuidle/state1/name", "POLL");
        _cleanup_(plan_freep) Plan *s = plan_ok("{\"cpu\": {\"cpus\": \"1\", \"idle_max_latency_us\": 0}}");
        ck_assert_uint_eq(count_prefix(s, "cpu/"), 2);
}
END_TEST

START_TEST(test_no_cpuidle) {
        for (int cpu = 0; cpu < 8; cpu++) {
                char rel[64];
                snprintf(rel, sizeof(rel), CPU "/cpu%d/cpuidle", cpu);
                rm(host_dir, rel);
        }
        _cleanup_(plan_freep) Plan *p = plan_ok("{\"cpu\": {\"idle_max_latency_us\": 5}}");
        ck_assert_uint_eq(count_prefix(p, "cpu/"), 0);
        ck_assert_uint_eq(count_notes(p, "cpu: no cpuidle on this host; idle_max_latency_us skipped"), 1);
}
END_TEST

START_TEST(test_pm_qos) {
        _cleanup_(plan_freep) Plan *p = plan_ok(full);
        expect(p, "cpu/pm_qos", "dev/cpu_dma_latency", "2000000000", "0", true, false);

        /* the 4 bytes a real /dev/cpu_dma_latency returns */
        int32_t v = 42;
        put_bytes(host_dir, "dev/cpu_dma_latency", &v, sizeof(v), 0600);
        _cleanup_(plan_freep) Plan *q = plan_ok("{\"cpu\": {\"pm_qos_latency_us\": 42}}");
        expect(q, "cpu/pm_qos", "dev/cpu_dma_latency", "42", "42", false, false);
        v = 0;
        put_bytes(host_dir, "dev/cpu_dma_latency", &v, sizeof(v), 0600);
        _cleanup_free_ char *r = read_knob(q, DOMAIN_CPU, "cpu/pm_qos");
        ck_assert_str_eq(r, "0");

        rm(host_dir, "dev/cpu_dma_latency");
        _cleanup_(plan_freep) Plan *s = plan_ok("{\"cpu\": {\"pm_qos_latency_us\": 20}}");
        expect(s, "cpu/pm_qos", "dev/cpu_dma_latency", NULL, "20", true, false);
        _cleanup_free_ char *gone = read_knob(s, DOMAIN_CPU, "cpu/pm_qos");
        ck_assert_ptr_null(gone);

        plan_error("{\"cpu\": {\"pm_qos_latency_us\": 4000000000}}", "/cpu/pm_qos_latency_us", "at most 2147483647");
}
END_TEST

START_TEST(test_no_epb_message) {
        rm(host_dir, CPU "/cpu*/power/energy_perf_bias");
        /* On an Intel host its absence is not explained by the vendor. */
        put(host_dir, "proc/cpuinfo", "processor\t: 0\nvendor_id\t: GenuineIntel\n");
        reopen();
        _cleanup_(plan_freep) Plan *i = plan_ok("{\"cpu\": {\"energy_perf_bias\": \"performance\"}}");
        ck_assert_uint_eq(count_notes(i, "no power/energy_perf_bias (the kernel offers it where the CPU has the EPB"),
                          1);
        ck_assert_uint_eq(count_notes(i, "Intel"), 0);
        put(host_dir, "proc/cpuinfo", "processor\t: 0\nvendor_id\t: AuthenticAMD\n");
        reopen();
        _cleanup_(plan_freep) Plan *a = plan_ok("{\"cpu\": {\"energy_perf_bias\": \"performance\"}}");
        ck_assert_uint_eq(count_notes(a, "(an Intel CPU feature)"), 1);
}
END_TEST

START_TEST(test_no_turbo) {
        _cleanup_(plan_freep) Plan *p = plan_ok(full);
        expect(p, "cpu/no_turbo", CPU "/intel_pstate/no_turbo", "0", "1", true, false);
        _cleanup_(plan_freep) Plan *q = plan_ok("{\"cpu\": {\"no_turbo\": false}}");
        expect(q, "cpu/no_turbo", CPU "/intel_pstate/no_turbo", "0", "0", false, false);

        /* AMD (or intel_pstate off): cpufreq boost, inverted */
        put(host_dir, "proc/cpuinfo", "processor\t: 0\nvendor_id\t: AuthenticAMD\n");
        put(host_dir, CPU "/cpufreq/boost", "1\n");
        reopen();
        _cleanup_(plan_freep) Plan *a = plan_ok("{\"cpu\": {\"no_turbo\": true}}");
        expect(a, "cpu/no_turbo", CPU "/cpufreq/boost", "1", "0", true, false);
        _cleanup_(plan_freep) Plan *b = plan_ok("{\"cpu\": {\"no_turbo\": false}}");
        expect(b, "cpu/no_turbo", CPU "/cpufreq/boost", "1", "1", false, false);

        /* neither */
        rm(host_dir, CPU "/cpufreq/boost");
        _cleanup_(plan_freep) Plan *c = plan_ok("{\"cpu\": {\"no_turbo\": true}}");
        ck_assert_ptr_null(plan_find(c, "cpu/no_turbo"));
        ck_assert_uint_eq(count_notes(c, "cpu: no turbo control on this host"), 1);
}
END_TEST

START_TEST(test_cpu_read) {
        _cleanup_(plan_freep) Plan *p = plan_ok(full);
        put(host_dir, CPU "/cpu2/cpufreq/scaling_governor", "performance\n");
        _cleanup_free_ char *g = read_knob(p, DOMAIN_CPU, "cpu/2/governor");
        ck_assert_str_eq(g, "performance");
        _cleanup_free_ char *i = read_knob(p, DOMAIN_CPU, "cpu/5/idle/C6/disable");
        ck_assert_str_eq(i, "1");
        _cleanup_free_ char *q = read_knob(p, DOMAIN_CPU, "cpu/pm_qos");
        ck_assert_str_eq(q, "2000000000");
        rm(host_dir, CPU "/cpu2/cpufreq");
        _cleanup_free_ char *gone = read_knob(p, DOMAIN_CPU, "cpu/2/governor");
        ck_assert_ptr_null(gone);
}
END_TEST

START_TEST(test_no_section) {
        _cleanup_(plan_freep) Plan *p = plan_ok("{\"cpus\": {\"isolated\": \"2-7\"}}");
        ck_assert_uint_eq(count_prefix(p, "cpu/"), 0);
        ck_assert_uint_eq(count_prefix(p, "module/"), 0);
        ck_assert_uint_eq(count_notes(p, "cpu:"), 0);
        ck_assert_uint_eq(count_notes(p, "module:"), 0);
}
END_TEST

START_TEST(test_many_cpus) {
        /* 1024 CPUs with cpufreq and 4 idle states: each file once, well under a second. */
        _cleanup_free_ char *dir = test_tmpdir_tmpfs();
        put(dir, CPU "/online", "0-1023\n");
        put(dir, "proc/cpuinfo", "vendor_id\t: GenuineIntel\n");
        for (int c = 0; c < 1024; c++)
                cpu_files(dir, c);
        Root *r;
        Host *h;
        test_open_host(dir, &r, &h);
        _cleanup_free_ char *path = test_profile(
                prof_dir, "big",
                "{\"cpu\": {\"governor\": \"performance\", \"energy_perf_bias\": \"performance\", \"idle_max_latency_us\": 5}}");
        _cleanup_free_ char *err = NULL;
        Plan *p = NULL;
        int k = test_plan(r, h, path, &p, &err);
        ck_assert_msg(k == 0, "%s", strempty(err));
        ck_assert_uint_eq(count_prefix(p, "cpu/"), 1024 * 4);
        expect(p, "cpu/1023/idle/C6/disable", CPU "/cpu1023/cpuidle/state3/disable", "0", "1", true, false);
        plan_free(p);
        host_free(h);
        root_free(r);
        test_rmtree(dir);
}
END_TEST

/* ---- module ---- */

START_TEST(test_modules) {
        _cleanup_(plan_freep) Plan *p = plan_ok(
                "{\"modules\": {\"kvm\": {\"halt_poll_ns\": 0, \"nx_huge_pages\": \"N\", \"kvmclock_periodic_sync\": false},"
                "               \"kvm_intel\": {\"ple_gap\": 0}}}");
        expect(p, "module/kvm/halt_poll_ns", "sys/module/kvm/parameters/halt_poll_ns", "200000", "0", true, false);
        expect(p, "module/kvm/nx_huge_pages", "sys/module/kvm/parameters/nx_huge_pages", "N", "N", false, false);
        expect(p, "module/kvm_intel/ple_gap", "sys/module/kvm_intel/parameters/ple_gap", "128", "0", true, false);
        ck_assert_int_eq(knob(p, "module/kvm/halt_poll_ns")->domain, DOMAIN_MODULE);
        ck_assert_ptr_null(knob(p, "module/kvm/halt_poll_ns")->note);

        /* mode 0444: only at module load, so reboot and a modprobe.d note; the current value is the
         * configured one (no drop-in yet: absent), the running one is in the note */
        expect(p, "module/kvm/kvmclock_periodic_sync", "sys/module/kvm/parameters/kvmclock_periodic_sync", NULL, "N",
               true, true);
        ck_assert_ptr_nonnull(
                strstr(knob(p, "module/kvm/kvmclock_periodic_sync")->note, "/etc/modprobe.d/rtpart.conf"));
        ck_assert_ptr_nonnull(strstr(knob(p, "module/kvm/kvmclock_periodic_sync")->note, "running: Y"));
        size_t reboot;
        ck_assert_uint_eq(plan_count_changes(p, &reboot), 3);
        ck_assert_uint_eq(reboot, 1);
        ck_assert_uint_eq(count_prefix(p, "module/"), 4);
}
END_TEST

START_TEST(test_module_values) {
        /* booleans in every spelling compare with Y/N; a number param keeps numbers */
        _cleanup_(plan_freep) Plan *p = plan_ok(
                "{\"modules\": {\"kvm\": {\"nx_huge_pages\": \"off\", \"enable_pmu\": true, \"kvmclock_periodic_sync\": 1,"
                "                         \"halt_poll_ns\": false},"
                "               \"kvm-intel\": {\"nested\": \"Y\", \"ple_gap\": \"128\"}}}");
        expect(p, "module/kvm/nx_huge_pages", "sys/module/kvm/parameters/nx_huge_pages", "N", "N", false, false);
        expect(p, "module/kvm/enable_pmu", "sys/module/kvm/parameters/enable_pmu", "Y", "Y", false, false);
        /* load-time parameters compare with the drop-in, which has no line yet */
        expect(p, "module/kvm/kvmclock_periodic_sync", "sys/module/kvm/parameters/kvmclock_periodic_sync", NULL, "1",
               true, true);
        expect(p, "module/kvm/halt_poll_ns", "sys/module/kvm/parameters/halt_poll_ns", "200000", "0", true, false);
        /* "kvm-intel" is sysfs's kvm_intel */
        expect(p, "module/kvm_intel/nested", "sys/module/kvm_intel/parameters/nested", NULL, "Y", true, true);
        expect(p, "module/kvm_intel/ple_gap", "sys/module/kvm_intel/parameters/ple_gap", "128", "128", false, false);
        ck_assert_uint_eq(plan_count_changes(p, NULL), 3);

        /* with the drop-in saying so, they are in sync (the running "Y" is the form, "1" the same) */
        put(host_dir, "etc/modprobe.d/rtpart.conf",
            "options kvm kvmclock_periodic_sync=1\noptions kvm_intel nested=Y\n");
        _cleanup_(plan_freep) Plan *c = plan_ok(
                "{\"modules\": {\"kvm\": {\"kvmclock_periodic_sync\": 1}, \"kvm-intel\": {\"nested\": \"Y\"}}}");
        expect(c, "module/kvm/kvmclock_periodic_sync", "sys/module/kvm/parameters/kvmclock_periodic_sync", "1", "1",
               false, true);
        expect(c, "module/kvm_intel/nested", "sys/module/kvm_intel/parameters/nested", "Y", "Y", false, true);

        /* null removes an inherited value */
        _cleanup_(plan_freep) Plan *q = plan_ok("{\"modules\": {\"kvm\": {\"halt_poll_ns\": null, \"ple\": null}}}");
        ck_assert_uint_eq(count_prefix(q, "module/"), 0);
        ck_assert_uint_eq(count_notes(q, "module:"), 0);
}
END_TEST

START_TEST(test_module_missing) {
        /* not loaded: one note per module, no knobs, no error */
        _cleanup_(plan_freep) Plan *p =
                plan_ok("{\"modules\": {\"kvm_amd\": {\"avic\": true, \"npt\": 1}, \"kvm\": {\"halt_poll_ns\": 0}}}");
        ck_assert_uint_eq(count_notes(p, "module: kvm_amd is not loaded"), 1);
        ck_assert_uint_eq(count_notes(p, "module:"), 1);
        ck_assert_uint_eq(count_prefix(p, "module/kvm_amd/"), 0);
        ck_assert_ptr_nonnull(plan_find(p, "module/kvm/halt_poll_ns"));

        /* loaded, but no such parameter: the error lists what it has */
        plan_error("{\"modules\": {\"kvm\": {\"halt_poll\": 0}}}", "/modules/kvm/halt_poll",
                   "module kvm has no parameter \"halt_poll\"; its parameters are: enable_pmu, halt_poll_ns, "
                   "kvmclock_periodic_sync, nx_huge_pages");
        plan_error("{\"modules\": {\"kvm_intel\": {\"ple_gap\": 0, \"ple_window\": 0}}}",
                   "/modules/kvm_intel/ple_window", "its parameters are: nested, ple_gap");
        plan_error("{\"modules\": {\"kvm\": {\"../x\": 0}}}", "/modules/kvm/..~1x", "not a parameter name");
}
END_TEST

/* A load-time parameter's value goes into /etc/modprobe.d, where a newline would add a line of its
 * own ("install kvm /bin/sh ..."), and kmod puts a module's configured options into the shell
 * command of an install line that uses $CMDLINE_OPTS: values are refused at plan time, with the
 * pointer, whether the parameter is set now or at load time. */
START_TEST(test_module_value_injection) {
        static const char * const bad[] = {
                "1\\ninstall kvm /bin/sh -c id",
                "$(id>/tmp/pwned)",
                "`id`",
                "1;id",
                "1 2",
                "\\\"1\\\"",
                "#1",
                "1\\\\",
                "a|b",
                "a&b",
                "a>b",
                "\\u00e9",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                for (size_t j = 0; j < 2; j++) {
                        const char *param = j ? "kvmclock_periodic_sync" : "halt_poll_ns";
                        _cleanup_free_ char *json = NULL, *ptr = NULL;
                        ck_assert(asprintf(&json, "{\"modules\": {\"kvm\": {\"%s\": \"%s\"}}}", param, bad[i]) >= 0);
                        ck_assert(asprintf(&ptr, "/modules/kvm/%s", param) >= 0);
                        plan_error(json, ptr, "module parameter values use letters, digits and _.,:=/+@%-");
                }
        plan_error("{\"modules\": {\"kvm\": {\"-x\": 0}}}", "/modules/kvm/-x", "not a parameter name");
        plan_error("{\"modules\": {\"kvm\": {\"a\\nb\": 0}}}", "/modules/kvm/a\nb", "not a parameter name");
        /* what modules really take stays accepted */
        _cleanup_(plan_freep) Plan *p =
                plan_ok("{\"modules\": {\"kvm\": {\"halt_poll_ns\": 0, \"nx_huge_pages\": \"off\", "
                        "\"kvmclock_periodic_sync\": \"N\"}}}");
        ck_assert_ptr_nonnull(plan_find(p, "module/kvm/kvmclock_periodic_sync"));
}
END_TEST

START_TEST(test_module_read) {
        _cleanup_(plan_freep) Plan *p = plan_ok("{\"modules\": {\"kvm\": {\"halt_poll_ns\": 0}}}");
        put(host_dir, "sys/module/kvm/parameters/halt_poll_ns", "0\n");
        _cleanup_free_ char *v = read_knob(p, DOMAIN_MODULE, "module/kvm/halt_poll_ns");
        ck_assert_str_eq(v, "0");
        rm(host_dir, "sys/module/kvm");
        _cleanup_free_ char *gone = read_knob(p, DOMAIN_MODULE, "module/kvm/halt_poll_ns");
        ck_assert_ptr_null(gone);
}
END_TEST

/* ---- writes ---- */

/* Every entry under dir with its type, mode and content hash, one line each, sorted: two equal
 * snapshots are byte-for-byte equal trees. */
static char **snap_lines;
static size_t snap_skip;

static int snap_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
        char buf[8192], line[8192];
        uint64_t h = UINT64_C(0xcbf29ce484222325);
        if (type == FTW_F) {
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                ck_assert_msg(fd >= 0, "cannot read %s", path);
                for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;)
                        for (ssize_t i = 0; i < n; i++) {
                                h ^= (unsigned char) buf[i];
                                h *= UINT64_C(0x100000001b3);
                        }
                close(fd);
        } else if (type == FTW_SL) {
                ssize_t n = readlink(path, buf, sizeof(buf) - 1);
                ck_assert(n >= 0);
                buf[n] = 0;
                for (char *c = buf; *c; c++) {
                        h ^= (unsigned char) *c;
                        h *= UINT64_C(0x100000001b3);
                }
        }
        snprintf(line, sizeof(line), "%s %d %o %016llx", path + snap_skip, type, (unsigned) st->st_mode,
                 (unsigned long long) h);
        ck_assert_int_eq(strv_extend(&snap_lines, line), 0);
        return 0;
}

static char *snapshot(const char *dir) {
        snap_lines = NULL;
        snap_skip = strlen(dir);
        ck_assert_int_eq(nftw(dir, snap_entry, 32, FTW_PHYS), 0);
        strv_sort(snap_lines);
        StrBuf b = {};
        for (char **l = snap_lines; l && *l; l++)
                strbuf_appendf(&b, "%s\n", *l);
        strv_free(snap_lines);
        snap_lines = NULL;
        return strbuf_steal(&b);
}

/* Lines of a differing snapshot, for the message. */
static char *snapshot_diff(const char *a, const char *b) {
        StrBuf out = {};
        const char *sides[2] = { a, b }, *sign[2] = { "-", "+" };
        for (int i = 0; i < 2; i++)
                for (const char *l = sides[i]; *l;) {
                        size_t n = strcspn(l, "\n");
                        _cleanup_free_ char *line = strndup(l, n), *pat = NULL;
                        ck_assert(asprintf(&pat, "%s\n", line) >= 0);
                        /* whole lines only: each snapshot line ends with a newline */
                        const char *other = sides[1 - i];
                        bool found = startswith(other, pat);
                        _cleanup_free_ char *mid = NULL;
                        ck_assert(asprintf(&mid, "\n%s", pat) >= 0);
                        found = found || strstr(other, mid);
                        if (!found)
                                strbuf_appendf(&out, "%s %s\n", sign[i], line);
                        l += n + (l[n] ? 1 : 0);
                }
        return strbuf_steal(&out);
}

static void assert_same_tree(const char *before, const char *dir) {
        _cleanup_free_ char *after = snapshot(dir);
        if (!streq(before, after)) {
                _cleanup_free_ char *d = snapshot_diff(before, after);
                ck_abort_msg("the tree differs:\n%s", strempty(d));
        }
}

static int write_knob(Root *r, const Knob *k, const char *value) {
        return backend_write(backend_for(k->domain), r, k, value);
}

static char *read_value(Root *r, const Knob *k) {
        char *v = (char *) 0x1;
        int x = backend_for(k->domain)->read(r, k, &v);
        ck_assert_msg(x == 0, "read %s: %d", k->id, x);
        return v;
}

static char *file(const char *dir, const char *rel) {
        _cleanup_free_ char *path = NULL;
        ck_assert(asprintf(&path, "%s/%s", dir, rel) >= 0);
        FILE *f = fopen(path, "re");
        if (!f)
                return NULL;
        StrBuf b = {};
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof(buf) - 1, f)) > 0) {
                buf[n] = 0;
                strbuf_append(&b, buf);
        }
        fclose(f);
        char *s = strbuf_steal(&b);
        return s ? s : strdup("");
}

/* A changed cpu or module knob with a file behind it (not the PM QoS request). */
static bool file_knob(const Knob *k) {
        return (k->domain == DOMAIN_CPU || k->domain == DOMAIN_MODULE) && k->changed && !streq(k->id, "cpu/pm_qos");
}

/* Applies every changed cpu/module knob (desired, then read back), then restores each one's
 * current value in reverse, as a revert does. */
static void apply_and_restore(Root *r, const Plan *p, const char *dir, const char *before) {
        size_t written = 0;
        for (size_t i = 0; i < p->n_knobs; i++) {
                const Knob *k = &p->knobs[i];
                if (!file_knob(k))
                        continue;
                int x = write_knob(r, k, k->desired);
                ck_assert_msg(x == 0, "write %s=%s: %d", k->id, k->desired, x);
                _cleanup_free_ char *v = read_value(r, k);
                ck_assert_msg(value_equal(k->kind, v, k->desired), "%s: wrote %s, read %s", k->id, k->desired,
                              strempty(v));
                written++;
        }
        ck_assert_uint_gt(written, 0);
        for (size_t i = p->n_knobs; i-- > 0;) {
                const Knob *k = &p->knobs[i];
                if (!file_knob(k))
                        continue;
                int x = write_knob(r, k, k->current);
                ck_assert_msg(x == 0, "restore %s=%s: %d", k->id, strempty(k->current), x);
                _cleanup_free_ char *v = read_value(r, k);
                ck_assert_msg(value_equal(k->kind, v, k->current), "%s: restored %s, read %s", k->id,
                              strempty(k->current), strempty(v));
        }
        assert_same_tree(before, dir);
}

START_TEST(test_cpu_write) {
        _cleanup_free_ char *before = snapshot(host_dir);
        _cleanup_(plan_freep) Plan *p = plan_ok(full);
        apply_and_restore(root, p, host_dir, before);

        /* the files hold what the kernel would show */
        ck_assert_int_eq(write_knob(root, knob(p, "cpu/2/governor"), "performance"), 0);
        _cleanup_free_ char *g = file(host_dir, CPU "/cpu2/cpufreq/scaling_governor");
        ck_assert_str_eq(g, "performance\n");
        ck_assert_int_eq(write_knob(root, knob(p, "cpu/4/energy_perf_bias"), "0"), 0);
        _cleanup_free_ char *e = file(host_dir, CPU "/cpu4/power/energy_perf_bias");
        ck_assert_str_eq(e, "0\n");

        /* the CPU went offline (no cpufreq directory): nothing takes the value */
        rm(host_dir, CPU "/cpu3/cpufreq");
        ck_assert_int_eq(write_knob(root, knob(p, "cpu/3/governor"), "performance"), KNOB_SKIPPED);
        /* NULL: the file did not exist when rtpart came, nothing to put back */
        ck_assert_int_eq(write_knob(root, knob(p, "cpu/3/governor"), NULL), 0);
        /* a real failure is an error */
        rm(host_dir, CPU "/cpu6/cpuidle/state3/disable");
        _cleanup_free_ char *d = NULL;
        ck_assert(asprintf(&d, "%s/" CPU "/cpu6/cpuidle/state3/disable", host_dir) >= 0);
        ck_assert_int_eq(mkdir(d, 0755), 0);
        ck_assert_int_eq(write_knob(root, knob(p, "cpu/6/idle/C6/disable"), "1"), -EISDIR);
}
END_TEST

START_TEST(test_pm_qos_write) {
        _cleanup_(plan_freep) Plan *p = plan_ok(full);
        const Knob *k = knob(p, "cpu/pm_qos");

        /* rtpartctl: nothing would hold the request */
        ck_assert(!cpu_pm_qos_holder_enabled());
        ck_assert_int_eq(write_knob(root, k, "0"), KNOB_SKIPPED);
        ck_assert_int_eq(write_knob(root, k, "2000000000"), KNOB_SKIPPED);
        ck_assert(!cpu_pm_qos_held(NULL));

        /* rtpartd: held in this process; under a fake root only in memory, the file untouched */
        cpu_pm_qos_set_holder(true);
        ck_assert_int_eq(write_knob(root, k, "0"), 0);
        int32_t us = -1;
        ck_assert(cpu_pm_qos_held(&us));
        ck_assert_int_eq(us, 0);
        _cleanup_free_ char *v = read_value(root, k);
        ck_assert_str_eq(v, "0");
        _cleanup_free_ char *f = file(host_dir, "dev/cpu_dma_latency");
        ck_assert_str_eq(f, "2000000000\n");
        /* updated in place */
        ck_assert_int_eq(write_knob(root, k, "3"), 0);
        ck_assert(cpu_pm_qos_held(&us));
        ck_assert_int_eq(us, 3);
        /* back to the recorded default: released */
        ck_assert_int_eq(write_knob(root, k, "2000000000"), 0);
        ck_assert(!cpu_pm_qos_held(NULL));
        _cleanup_free_ char *v2 = read_value(root, k);
        ck_assert_str_eq(v2, "2000000000");
        ck_assert_int_eq(write_knob(root, k, "7"), 0);
        ck_assert_int_eq(write_knob(root, k, NULL), 0);
        ck_assert(!cpu_pm_qos_held(NULL));

        /* another holder already asks for exactly this: nothing to hold */
        put(host_dir, "dev/cpu_dma_latency", "10\n");
        ck_assert_int_eq(write_knob(root, k, "10"), 0);
        ck_assert(!cpu_pm_qos_held(NULL));
        /* a stricter value is held, and the target is the minimum */
        ck_assert_int_eq(write_knob(root, k, "4"), 0);
        _cleanup_free_ char *v3 = read_value(root, k);
        ck_assert_str_eq(v3, "4");
        cpu_pm_qos_release();

        ck_assert_int_eq(write_knob(root, k, "-1"), -EINVAL);
        ck_assert_int_eq(write_knob(root, k, "fast"), -EINVAL);
        ck_assert_int_eq(write_knob(root, k, "4294967296"), -EINVAL);
        ck_assert(!cpu_pm_qos_held(NULL));

        /* no device: nothing to hold */
        rm(host_dir, "dev/cpu_dma_latency");
        ck_assert_int_eq(write_knob(root, k, "5"), KNOB_SKIPPED);
        ck_assert_int_eq(cpu_pm_qos_hold(root, 5), -ENOENT);
        ck_assert(!cpu_pm_qos_held(NULL));

        /* turning the holder off drops the request */
        put(host_dir, "dev/cpu_dma_latency", "2000000000\n");
        ck_assert_int_eq(write_knob(root, k, "5"), 0);
        cpu_pm_qos_set_holder(false);
        ck_assert(!cpu_pm_qos_held(NULL));
}
END_TEST

/* ---- module writes ---- */

static const char module_profile[] = "{\"modules\": {\"kvm\": {\"halt_poll_ns\": 0, \"kvmclock_periodic_sync\": false},"
                                     "               \"kvm-intel\": {\"nested\": false, \"ple_gap\": 0}}}";

#define DROPIN "etc/modprobe.d/rtpart.conf"

START_TEST(test_module_write_runtime) {
        _cleanup_free_ char *before = snapshot(host_dir);
        _cleanup_(plan_freep) Plan *p = plan_ok(module_profile);
        const Knob *k = knob(p, "module/kvm/halt_poll_ns");
        ck_assert_int_eq(write_knob(root, k, "0"), 0);
        _cleanup_free_ char *f = file(host_dir, "sys/module/kvm/parameters/halt_poll_ns");
        ck_assert_str_eq(f, "0\n");
        ck_assert_ptr_null(file(host_dir, DROPIN));
        ck_assert_int_eq(write_knob(root, k, "200000"), 0);
        assert_same_tree(before, host_dir);
        /* NULL: unreadable when rtpart came, nothing to put back */
        ck_assert_int_eq(write_knob(root, k, NULL), 0);
        /* the module went away: nothing takes the value */
        rm(host_dir, "sys/module/kvm");
        ck_assert_int_eq(write_knob(root, k, "0"), KNOB_SKIPPED);
        _cleanup_free_ char *gone = read_value(root, k);
        ck_assert_ptr_null(gone);
}
END_TEST

START_TEST(test_module_dropin) {
        /* etc/modprobe.d exists (as on every real host): created, updated, removed; the directory stays */
        put(host_dir, "etc/modprobe.d/other.conf", "options kvm ignore_msrs=1\n");
        _cleanup_free_ char *before = snapshot(host_dir);
        _cleanup_(plan_freep) Plan *p = plan_ok(module_profile);
        const Knob *sync = knob(p, "module/kvm/kvmclock_periodic_sync"), *nested = knob(p, "module/kvm_intel/nested");
        ck_assert_ptr_null(sync->current);
        ck_assert_ptr_null(nested->current);

        ck_assert_int_eq(write_knob(root, sync, "N"), 0);
        ck_assert_int_eq(write_knob(root, nested, "N"), 0);
        _cleanup_free_ char *c1 = file(host_dir, DROPIN);
        ck_assert_ptr_nonnull(c1);
        ck_assert_ptr_nonnull(strstr(c1, "\noptions kvm kvmclock_periodic_sync=N\noptions kvm_intel nested=N\n"));
        ck_assert_ptr_null(strstr(c1, "created"));
        ck_assert(startswith(c1, "# "));
        /* the running value is untouched: it takes effect at the next load */
        _cleanup_free_ char *running = file(host_dir, "sys/module/kvm/parameters/kvmclock_periodic_sync");
        ck_assert_str_eq(running, "Y\n");
        /* read returns the configured value */
        _cleanup_free_ char *v = read_value(root, sync);
        ck_assert_str_eq(v, "N");
        _cleanup_free_ char *o = file(host_dir, "etc/modprobe.d/other.conf");
        ck_assert_str_eq(o, "options kvm ignore_msrs=1\n");

        /* update in place */
        ck_assert_int_eq(write_knob(root, sync, "Y"), 0);
        _cleanup_free_ char *c2 = file(host_dir, DROPIN);
        ck_assert_ptr_nonnull(strstr(c2, "\noptions kvm kvmclock_periodic_sync=Y\noptions kvm_intel nested=N\n"));
        ck_assert_int_eq(write_knob(root, sync, "N"), 0);
        _cleanup_free_ char *c3 = file(host_dir, DROPIN);
        ck_assert_str_eq(c3, c1);

        /* a planned second time: in sync */
        _cleanup_(plan_freep) Plan *q = plan_ok(module_profile);
        ck_assert(!knob(q, "module/kvm/kvmclock_periodic_sync")->changed);
        ck_assert(!knob(q, "module/kvm_intel/nested")->changed);

        /* the journal's knobs carry no reboot flag: the file's mode decides */
        Knob bare = *sync;
        bare.reboot = false;
        _cleanup_free_ char *v2 = read_value(root, &bare);
        ck_assert_str_eq(v2, "N");

        /* removed line by line, in any order; the last one takes the file with it */
        ck_assert_int_eq(write_knob(root, &bare, NULL), 0);
        _cleanup_free_ char *c4 = file(host_dir, DROPIN);
        ck_assert_ptr_null(strstr(c4, "kvmclock_periodic_sync"));
        ck_assert_ptr_nonnull(strstr(c4, "options kvm_intel nested=N\n"));
        _cleanup_free_ char *v3 = read_value(root, sync);
        ck_assert_ptr_null(v3);
        ck_assert_int_eq(write_knob(root, nested, NULL), 0);
        ck_assert_ptr_null(file(host_dir, DROPIN));
        assert_same_tree(before, host_dir);
        /* removing what is not there changes nothing */
        ck_assert_int_eq(write_knob(root, nested, NULL), 0);
        assert_same_tree(before, host_dir);
}
END_TEST

START_TEST(test_module_dropin_no_dir) {
        /* no etc/modprobe.d: rtpart creates it, says so in the file, and removes it with the file */
        put(host_dir, "etc/hostname", "mini\n");
        rm(host_dir, "etc/modprobe.d");
        _cleanup_free_ char *before = snapshot(host_dir);
        _cleanup_(plan_freep) Plan *p = plan_ok(module_profile);
        const Knob *sync = knob(p, "module/kvm/kvmclock_periodic_sync");
        ck_assert_int_eq(write_knob(root, sync, "N"), 0);
        _cleanup_free_ char *c = file(host_dir, DROPIN);
        ck_assert_ptr_nonnull(strstr(c, "# rtpart created /etc/modprobe.d"));
        ck_assert_int_eq(write_knob(root, sync, NULL), 0);
        assert_same_tree(before, host_dir);

        /* … but not when something else went into the directory meanwhile */
        ck_assert_int_eq(write_knob(root, sync, "N"), 0);
        put(host_dir, "etc/modprobe.d/kvm.conf", "options kvm ignore_msrs=1\n");
        ck_assert_int_eq(write_knob(root, sync, NULL), 0);
        ck_assert_ptr_null(file(host_dir, DROPIN));
        _cleanup_free_ char *kept = file(host_dir, "etc/modprobe.d/kvm.conf");
        ck_assert_ptr_nonnull(kept);
}
END_TEST

START_TEST(test_module_dropin_foreign) {
        /* a drop-in someone wrote before rtpart: its lines and mode stay as they were */
        const char text[] = "# local\noptions kvm-intel  nested=1 ple_gap=64\noptions kvm kvmclock_periodic_sync=Y\n";
        put_bytes(host_dir, DROPIN, text, strlen(text), 0600);
        put_bytes(host_dir, "sys/module/kvm_intel/parameters/ple_gap", "128\n", 4, 0444); /* as in vmx.c */
        _cleanup_free_ char *before = snapshot(host_dir);
        _cleanup_(plan_freep) Plan *p = plan_ok(module_profile);
        const Knob *nested = knob(p, "module/kvm_intel/nested"), *ple = knob(p, "module/kvm_intel/ple_gap");
        const Knob *sync = knob(p, "module/kvm/kvmclock_periodic_sync");
        ck_assert_str_eq(nested->current, "1");
        ck_assert_str_eq(sync->current, "Y");
        ck_assert(ple->reboot);
        ck_assert_str_eq(ple->current, "64");

        ck_assert_int_eq(write_knob(root, nested, "N"), 0);
        ck_assert_int_eq(write_knob(root, ple, "0"), 0);
        ck_assert_int_eq(write_knob(root, sync, "N"), 0);
        _cleanup_free_ char *c = file(host_dir, DROPIN);
        ck_assert_str_eq(c, "# local\noptions kvm-intel  nested=N ple_gap=0\noptions kvm kvmclock_periodic_sync=N\n");
        struct stat st;
        _cleanup_free_ char *path = NULL;
        ck_assert(asprintf(&path, "%s/" DROPIN, host_dir) >= 0);
        ck_assert_int_eq(stat(path, &st), 0);
        ck_assert_uint_eq(st.st_mode & 07777, 0600);

        ck_assert_int_eq(write_knob(root, sync, "Y"), 0);
        ck_assert_int_eq(write_knob(root, ple, "64"), 0);
        ck_assert_int_eq(write_knob(root, nested, "1"), 0);
        assert_same_tree(before, host_dir);

        /* a value with spaces is quoted; one that would break the syntax is refused */
        ck_assert_int_eq(write_knob(root, ple, "a b"), 0);
        _cleanup_free_ char *q = file(host_dir, DROPIN);
        ck_assert_ptr_nonnull(strstr(q, "ple_gap=\"a b\""));
        _cleanup_free_ char *qv = read_value(root, ple);
        ck_assert_str_eq(qv, "a b");
        ck_assert_int_eq(write_knob(root, ple, "x\noptions evil y=1"), -EINVAL);
        ck_assert_int_eq(write_knob(root, ple, "64"), 0);
        assert_same_tree(before, host_dir);

        /* the last line that sets a parameter wins, as with modprobe; NULL removes every one */
        put(host_dir, DROPIN, "options kvm kvmclock_periodic_sync=Y\noptions kvm kvmclock_periodic_sync=N\n");
        _cleanup_free_ char *last = read_value(root, sync);
        ck_assert_str_eq(last, "N");
        ck_assert_int_eq(write_knob(root, sync, "1"), 0);
        _cleanup_free_ char *c2 = file(host_dir, DROPIN);
        ck_assert_str_eq(c2, "options kvm kvmclock_periodic_sync=Y\noptions kvm kvmclock_periodic_sync=1\n");
        ck_assert_int_eq(write_knob(root, sync, NULL), 0);
        _cleanup_free_ char *c3 = file(host_dir, DROPIN);
        ck_assert_str_eq(c3, ""); /* not rtpart's file: emptied, not removed */

        /* a directory where the drop-in should be is an error, not a value */
        rm(host_dir, DROPIN);
        _cleanup_free_ char *dd = NULL;
        ck_assert(asprintf(&dd, "%s/" DROPIN, host_dir) >= 0);
        ck_assert_int_eq(mkdir(dd, 0755), 0);
        ck_assert_int_eq(write_knob(root, sync, "N"), -EISDIR);
}
END_TEST

START_TEST(test_module_unloaded) {
        /* a load-time knob of a module that was unloaded since: still the drop-in */
        _cleanup_(plan_freep) Plan *p = plan_ok(module_profile);
        const Knob *sync = knob(p, "module/kvm/kvmclock_periodic_sync");
        ck_assert_int_eq(write_knob(root, sync, "N"), 0);
        rm(host_dir, "sys/module/kvm");
        Knob bare = *sync;
        bare.reboot = false;
        _cleanup_free_ char *v = read_value(root, &bare);
        ck_assert_str_eq(v, "N");
        ck_assert_int_eq(write_knob(root, &bare, NULL), 0);
        ck_assert_ptr_null(file(host_dir, DROPIN));
        /* now nothing says it is load-time: a runtime knob of a module that is not there */
        _cleanup_free_ char *v2 = read_value(root, &bare);
        ck_assert_ptr_null(v2);
        ck_assert_int_eq(write_knob(root, &bare, "N"), KNOB_SKIPPED);
        ck_assert_int_eq(write_knob(root, sync, "N"), 0); /* the knob's reboot flag still says so */
        _cleanup_free_ char *c = file(host_dir, DROPIN);
        ck_assert_ptr_nonnull(strstr(c, "options kvm kvmclock_periodic_sync=N\n"));
}
END_TEST

/* ---- the bundled fake hosts (the build makes them: tests/fixtures/meson.build) ---- */

static const char fixture_profile[] =
        "{\"cpu\": {\"governor\": \"performance\", \"idle_max_latency_us\": 10, \"no_turbo\": true},"
        " \"modules\": {\"kvm\": {\"halt_poll_ns\": 0, \"kvmclock_periodic_sync\": false},"
        "             \"kvm_intel\": {\"ple_gap\": 0}, \"kvm_amd\": {\"avic\": true}}}";

static Plan *fixture_plan(const char *name, Root **ret_root, Host **ret_host) {
        _cleanup_free_ char *dir = fixture_host(name);
        test_open_host(dir, ret_root, ret_host);
        _cleanup_free_ char *path = test_profile(prof_dir, "p", fixture_profile);
        _cleanup_free_ char *err = NULL;
        Plan *p = NULL;
        ck_assert_msg(test_plan(*ret_root, *ret_host, path, &p, &err) == 0, "%s: %s", name, strempty(err));
        return p;
}

/* Every knob's planned current value is what read returns and what the file holds. */
static void check_reads(Root *r, const Plan *p) {
        for (size_t i = 0; i < p->n_knobs; i++) {
                const Knob *k = &p->knobs[i];
                if (k->domain != DOMAIN_CPU && k->domain != DOMAIN_MODULE)
                        continue;
                _cleanup_free_ char *v = NULL;
                ck_assert_int_eq(backend_for(k->domain)->read(r, k, &v), 0);
                ck_assert_msg(value_equal(k->kind, v, k->current), "%s: read %s, planned %s", k->id, strempty(v),
                              strempty(k->current));
        }
}

START_TEST(test_fixture_intel) {
        Root *r;
        Host *h;
        Plan *p = fixture_plan("intel-2s", &r, &h);
        _cleanup_free_ char *gov = NULL;
        ck_assert_int_eq(root_read_line(r, CPU "/cpu0/cpufreq/scaling_governor", &gov), 0);
        expect(p, "cpu/0/governor", CPU "/cpu0/cpufreq/scaling_governor", gov, "performance",
               !streq(gov, "performance"), false);
        ck_assert_uint_eq(count_prefix(p, "cpu/") - count_prefix(p, "cpu/no_turbo"),
                          cpu_set_count(&h->online) * (1 + count_prefix(p, "cpu/0/idle/")));
        ck_assert_str_eq(knob(p, "cpu/no_turbo")->path, CPU "/intel_pstate/no_turbo");
        ck_assert_str_eq(knob(p, "cpu/no_turbo")->desired, "1");
        ck_assert(!knob(p, "module/kvm/halt_poll_ns")->reboot);
        ck_assert(knob(p, "module/kvm/kvmclock_periodic_sync")->reboot);
        ck_assert(knob(p, "module/kvm_intel/ple_gap")->reboot); /* 0444 in vmx.c */
        ck_assert_uint_eq(count_notes(p, "module: kvm_amd is not loaded"), 1);
        check_reads(r, p);
        plan_free(p);
        host_free(h);
        root_free(r);
}
END_TEST

START_TEST(test_fixture_intel_write) {
        /* on a copy of intel-2s: every cpu and module knob written, read back, restored; the tree is
         * byte-for-byte the original */
        _cleanup_free_ char *dir = test_copy_host("intel-2s");
        _cleanup_free_ char *before = snapshot(dir);
        Root *r;
        Host *h;
        test_open_host(dir, &r, &h);
        _cleanup_free_ char *path =
                test_profile(prof_dir, "w",
                             "{\"cpu\": {\"governor\": \"performance\", \"energy_perf_bias\": \"performance\","
                             "          \"idle_max_latency_us\": 10, \"no_turbo\": true},"
                             " \"modules\": {\"kvm\": {\"halt_poll_ns\": 0, \"nx_huge_pages\": true,"
                             "                      \"kvmclock_periodic_sync\": false},"
                             "             \"kvm_intel\": {\"ple_gap\": 0}}}");
        _cleanup_free_ char *err = NULL;
        Plan *p = NULL;
        ck_assert_msg(test_plan(r, h, path, &p, &err) == 0, "%s", strempty(err));
        ck_assert(knob(p, "cpu/0/governor")->changed);
        ck_assert(knob(p, "cpu/no_turbo")->changed);
        ck_assert(knob(p, "module/kvm_intel/ple_gap")->changed);
        apply_and_restore(r, p, dir, before);
        plan_free(p);
        host_free(h);
        root_free(r);
        test_rmtree(dir);
}
END_TEST

START_TEST(test_fixture_epyc) {
        Root *r;
        Host *h;
        Plan *p = fixture_plan("epyc", &r, &h);
        ck_assert_str_eq(knob(p, "cpu/no_turbo")->path, CPU "/cpufreq/boost");
        ck_assert_str_eq(knob(p, "cpu/no_turbo")->desired, "0");
        ck_assert_ptr_nonnull(plan_find(p, "module/kvm_amd/avic"));
        ck_assert_uint_eq(count_notes(p, "module: kvm_intel is not loaded"), 1);
        ck_assert_uint_eq(count_prefix(p, "module/kvm_intel/"), 0);
        check_reads(r, p);
        plan_free(p);
        host_free(h);
        root_free(r);
}
END_TEST

START_TEST(test_fixture_vm) {
        Root *r;
        Host *h;
        Plan *p = fixture_plan("vm", &r, &h);
        ck_assert_uint_eq(count_prefix(p, "module/"), 0);
        ck_assert_uint_eq(count_notes(p, "module: kvm is not loaded"), 1);
        ck_assert_uint_eq(count_notes(p, "cpu: no cpufreq on this host"), 1);
        ck_assert_uint_eq(count_notes(p, "cpu: no turbo control"), 1);
        ck_assert_uint_eq(count_prefix(p, "cpu/0/governor"), 0);
        plan_free(p);
        host_free(h);
        root_free(r);
}
END_TEST

int main(void) {
        Suite *s = suite_create("backend-cpu");
        TCase *c = tcase_create("cpu");
        tcase_add_checked_fixture(c, setup, teardown);
        tcase_set_timeout(c, 120);
        tcase_add_test(c, test_governor_epb);
        tcase_add_test(c, test_epb_values);
        tcase_add_test(c, test_governor_unavailable);
        tcase_add_test(c, test_no_cpufreq);
        tcase_add_test(c, test_idle);
        tcase_add_test(c, test_no_cpuidle);
        tcase_add_test(c, test_pm_qos);
        tcase_add_test(c, test_no_turbo);
        tcase_add_test(c, test_no_epb_message);
        tcase_add_test(c, test_cpu_read);
        tcase_add_test(c, test_no_section);
        tcase_add_test(c, test_many_cpus);
        tcase_add_test(c, test_cpu_write);
        tcase_add_test(c, test_pm_qos_write);
        suite_add_tcase(s, c);
        TCase *m = tcase_create("module");
        tcase_add_checked_fixture(m, setup, teardown);
        tcase_set_timeout(m, 60);
        tcase_add_test(m, test_modules);
        tcase_add_test(m, test_module_values);
        tcase_add_test(m, test_module_missing);
        tcase_add_test(m, test_module_read);
        tcase_add_test(m, test_module_write_runtime);
        tcase_add_test(m, test_module_dropin);
        tcase_add_test(m, test_module_value_injection);
        tcase_add_test(m, test_module_dropin_no_dir);
        tcase_add_test(m, test_module_dropin_foreign);
        tcase_add_test(m, test_module_unloaded);
        suite_add_tcase(s, m);
        /* A fake host missing fails its test (fixture_host()). */
        TCase *fx = tcase_create("fixtures");
        tcase_add_checked_fixture(fx, setup, teardown);
        tcase_set_timeout(fx, 120); /* copies of a 42 MB fake host */
        tcase_add_test(fx, test_fixture_intel);
        tcase_add_test(fx, test_fixture_intel_write);
        tcase_add_test(fx, test_fixture_epyc);
        tcase_add_test(fx, test_fixture_vm);
        suite_add_tcase(s, fx);
        return test_run(s);
}
