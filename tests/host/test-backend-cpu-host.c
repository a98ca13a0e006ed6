/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pm-qos.h"
#include "strv.h"
#include "test-util.h"

/* The cpu backend's write verb on this machine's kernel (suite host, as root): the PM QoS request
 * held through /dev/cpu_dma_latency and an idle state's disable file, each recorded first and
 * restored after. A case the machine cannot run is skipped (77) with the reason; meson runs each
 * case as a test of its own (test-backend-cpu-host-CASE). */

#define CPU "sys/devices/system/cpu"

static Root *root;

static void setup(void) {
        ck_assert_int_eq(root_new("/", &root), 0);
        ck_assert(root_is_system(root));
}

static void teardown(void) {
        cpu_pm_qos_set_holder(false);
        root = root_free(root);
}

static char *read_value(const Knob *k) {
        char *v = (char *) 0x1;
        int r = backend_cpu.read(root, k, &v);
        ck_assert_msg(r == 0, "read %s: %d", k->id, r);
        return v;
}

/* The kernel's target as another process sees it: the aggregate over all requests. */
static long long target_elsewhere(void) {
        int32_t v = -1;
        pid_t child;
        int pipefd[2];
        ck_assert_int_eq(pipe2(pipefd, O_CLOEXEC), 0);
        child = fork();
        ck_assert_int_ge(child, 0);
        if (child == 0) {
                int fd = open("/dev/cpu_dma_latency", O_RDONLY | O_CLOEXEC);
                if (fd < 0 || read(fd, &v, sizeof(v)) != sizeof(v))
                        _exit(1);
                _exit(write(pipefd[1], &v, sizeof(v)) == sizeof(v) ? 0 : 1);
        }
        close(pipefd[1]);
        ck_assert_int_eq(read(pipefd[0], &v, sizeof(v)), (ssize_t) sizeof(v));
        close(pipefd[0]);
        int status;
        ck_assert_int_eq(waitpid(child, &status, 0), child);
        return v;
}

static const Knob pm_qos = {
        .id = (char *) "cpu/pm_qos",
        .domain = DOMAIN_CPU,
        .kind = VALUE_AUTO,
        .path = (char *) "dev/cpu_dma_latency",
};

/* The PM QoS target as read before a case changes it, also as seen from another process; NULL
 * (the case skipped) without /dev/cpu_dma_latency. */
static char *pm_qos_original(const char *what, long long *ret) {
        if (!root_exists(root, "dev/cpu_dma_latency")) {
                test_skip("no /dev/cpu_dma_latency on this machine (CONFIG_CPU_IDLE): %s not tested", what);
                return NULL;
        }
        char *orig = read_value(&pm_qos);
        ck_assert_ptr_nonnull(orig);
        *ret = atoll(orig);
        ck_assert_int_eq(target_elsewhere(), *ret);
        return orig;
}

/* rtpartctl reads the target and does not hold a request: its write is skipped. */
START_TEST(test_pm_qos) {
        long long o;
        _cleanup_free_ char *orig = pm_qos_original("PM QoS", &o);
        if (!orig)
                return;

        ck_assert_int_eq(backend_write(&backend_cpu, root, &pm_qos, "20"), KNOB_SKIPPED);
        ck_assert_int_eq(target_elsewhere(), o);
}
END_TEST

/* rtpartd holds the request: visible to every other process while it lives, then dropped. */
START_TEST(test_pm_qos_hold) {
        long long o;
        _cleanup_free_ char *orig = pm_qos_original("PM QoS hold", &o);
        if (!orig)
                return;
        if (o <= 20) {
                test_skip("the PM QoS target is already %lld µs (another process holds a request): a hold of 20 and "
                          "7 µs would not show; stop that holder to test it",
                          o);
                return;
        }
        cpu_pm_qos_set_holder(true);
        ck_assert_int_eq(backend_write(&backend_cpu, root, &pm_qos, "20"), 0);
        ck_assert(cpu_pm_qos_held(NULL));
        _cleanup_free_ char *v = read_value(&pm_qos);
        ck_assert_str_eq(v, "20");
        ck_assert_int_eq(target_elsewhere(), 20);
        ck_assert_int_eq(backend_write(&backend_cpu, root, &pm_qos, "7"), 0);
        ck_assert_int_eq(target_elsewhere(), 7);

        /* restored: the recorded target again, and no request of ours left when it is the default */
        ck_assert_int_eq(backend_write(&backend_cpu, root, &pm_qos, orig), 0);
        _cleanup_free_ char *v2 = read_value(&pm_qos);
        ck_assert_str_eq(v2, orig);
        ck_assert_int_eq(target_elsewhere(), o);
        if (o >= CPU_PM_QOS_DEFAULT_US)
                ck_assert(!cpu_pm_qos_held(NULL));

        /* turning the holder off drops a request */
        ck_assert_int_eq(backend_write(&backend_cpu, root, &pm_qos, "9"), 0);
        ck_assert_int_eq(target_elsewhere(), 9);
        cpu_pm_qos_set_holder(false);
        ck_assert(!cpu_pm_qos_held(NULL));
        ck_assert_int_eq(target_elsewhere(), o);
}
END_TEST

START_TEST(test_idle_disable) {
        /* the deepest idle state of the last online CPU */
        CpuSet online;
        ck_assert_int_eq(root_read_cpu_list(root, CPU "/online", &online), 0);
        int cpu = cpu_set_last(&online);
        ck_assert_int_ge(cpu, 0);
        char path[128];
        int state = -1;
        for (int s = 1; s < 16; s++) {
                snprintf(path, sizeof(path), CPU "/cpu%d/cpuidle/state%d/disable", cpu, s);
                if (root_exists(root, path))
                        state = s;
        }
        if (state < 0) {
                test_skip("CPU %d has no idle state but POLL: idle disable not tested", cpu);
                return;
        }
        snprintf(path, sizeof(path), CPU "/cpu%d/cpuidle/state%d/disable", cpu, state);
        Knob k = {
                .id = (char *) "cpu/x/idle/x/disable",
                .domain = DOMAIN_CPU,
                .kind = VALUE_AUTO,
                .path = path,
        };
        _cleanup_free_ char *orig = read_value(&k);
        ck_assert_ptr_nonnull(orig);
        const char *other = streq(orig, "0") ? "1" : "0";
        ck_assert_int_eq(backend_write(&backend_cpu, root, &k, other), 0);
        _cleanup_free_ char *v = read_value(&k);
        ck_assert_str_eq(v, other);
        ck_assert_int_eq(backend_write(&backend_cpu, root, &k, orig), 0);
        _cleanup_free_ char *v2 = read_value(&k);
        ck_assert_str_eq(v2, orig);
}
END_TEST

START_TEST(test_governor) {
        char path[128];
        snprintf(path, sizeof(path), CPU "/cpu0/cpufreq/scaling_governor");
        if (!root_exists(root, path)) {
                test_skip("no cpufreq on this machine (%s): governor not tested", path);
                return;
        }
        Knob k = {
                .id = (char *) "cpu/0/governor",
                .domain = DOMAIN_CPU,
                .kind = VALUE_AUTO,
                .path = path,
        };
        _cleanup_free_ char *orig = read_value(&k);
        ck_assert_ptr_nonnull(orig);
        /* the same governor again: the write path without changing the machine */
        ck_assert_int_eq(backend_write(&backend_cpu, root, &k, orig), 0);
        _cleanup_free_ char *v = read_value(&k);
        ck_assert_str_eq(v, orig);
}
END_TEST

int main(int argc, char *argv[]) {
        if (geteuid() != 0) {
                printf("SKIP: not root: /dev/cpu_dma_latency and cpuidle's disable files need root\n");
                return 77;
        }
        if (access("/sys/devices/system/cpu", R_OK) < 0) {
                printf("SKIP: no /sys on this machine\n");
                return 77;
        }
        /* one case per meson test (tests/host/meson.build), as each may be skipped on its own */
        const struct {
                const char *name;
                const TTest *test;
        } cases[] = {
                { "pm-qos", test_pm_qos },
                { "pm-qos-hold", test_pm_qos_hold },
                { "idle", test_idle_disable },
                { "governor", test_governor },
        };
        Suite *s = suite_create("backend-cpu-host");
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                TCase *tc = tcase_create(cases[i].name);
                tcase_add_checked_fixture(tc, setup, teardown);
                tcase_set_timeout(tc, 60);
                tcase_add_test(tc, cases[i].test);
                suite_add_tcase(s, tc);
        }
        return test_run_case(s, argc > 1 ? argv[1] : NULL);
}
