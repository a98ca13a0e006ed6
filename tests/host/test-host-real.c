/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Host discovery on this machine's real /proc and /sys (read-only: changes nothing). */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test-util.h"

static Root *root;
static Host *host;

static void setup(void) {
        test_open_host("/", &root, &host);
}

static void teardown(void) {
        host = host_free(host);
        root = root_free(root);
}

START_TEST(test_cpus) {
        ck_assert(root_is_system(root));
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        ck_assert_int_eq((long) cpu_set_count(&host->online), n);
        /* Every CPU this process may run on is online, and has a core, a package and a node. */
        cpu_set_t mask;
        ck_assert_int_eq(sched_getaffinity(0, sizeof(mask), &mask), 0);
        for (int c = 0; c < CPU_SETSIZE; c++)
                if (CPU_ISSET(c, &mask)) {
                        ck_assert(cpu_set_has(&host->online, (unsigned) c));
                        ck_assert_int_ge(host->cpus[c].core, 0);
                        ck_assert_int_ge(host->cpus[c].package, 0);
                        ck_assert_int_ge(host->cpus[c].node, 0);
                }
        /* The nodes partition the online CPUs. */
        CpuSet all = {};
        for (unsigned i = 0; i < host->n_nodes; i++) {
                ck_assert(!cpu_set_intersects(&all, &host->nodes[i]));
                cpu_set_or(&all, &host->nodes[i]);
        }
        ck_assert(cpu_set_equal(&all, &host->online));
        /* L3 domains, where the machine reports them, partition their CPUs too. */
        CpuSet l3 = {};
        for (size_t i = 0; i < host->n_l3; i++) {
                ck_assert(!cpu_set_intersects(&l3, &host->l3[i].cpus));
                cpu_set_or(&l3, &host->l3[i].cpus);
        }
        ck_assert(cpu_set_is_subset(&l3, &host->online));
}
END_TEST

START_TEST(test_irqs) {
        _cleanup_free_ char *text = NULL;
        ck_assert_int_eq(root_read_file(root, "proc/interrupts", &text, NULL), 0);
        /* Count numbered rows ourselves and compare. */
        size_t rows = 0;
        for (char *l = strchr(text, '\n'); l && l[1]; l = strchr(l + 1, '\n')) {
                char *p = l + 1;
                while (*p == ' ')
                        p++;
                unsigned n;
                char colon;
                if (sscanf(p, "%u%c", &n, &colon) == 2 && colon == ':')
                        rows++;
        }
        ck_assert_uint_eq(host->n_irqs, rows);
        ck_assert_uint_eq(host->n_irq_columns, cpu_set_count(&host->online));
        for (size_t i = 0; i < host->n_irqs; i++) {
                const Irq *q = &host->irqs[i];
                char path[64];
                CpuSet s;
                if (i > 0)
                        ck_assert_uint_gt(q->number, host->irqs[i - 1].number);
                snprintf(path, sizeof(path), "proc/irq/%u/smp_affinity_list", q->number);
                if (root_read_cpu_list(root, path, &s) < 0) {
                        ck_assert(!q->has_affinity || root_exists(root, path) == false);
                        continue;
                }
                ck_assert(q->has_affinity);
                ck_assert(cpu_set_equal(&s, q->affinity));
                ck_assert_ptr_nonnull(q->chip);
                ck_assert_ptr_nonnull(q->actions);
        }
        CpuSet def;
        ck_assert_int_eq(root_read_cpu_mask(root, "proc/irq/default_smp_affinity", &def), 0);
        ck_assert(cpu_set_equal(&def, &host->default_irq_affinity));
}
END_TEST

START_TEST(test_counts) {
        Host *h2;
        ck_assert_int_eq(host_discover(root, HOST_DISCOVER_IRQ_COUNTS, &h2), 0);
        for (size_t i = 0; i < h2->n_irqs; i++) {
                uint64_t sum = 0;
                ck_assert_ptr_nonnull(h2->irqs[i].counts);
                for (unsigned c = 0; c < h2->n_cpu_ids; c++)
                        sum += h2->irqs[i].counts[c];
                ck_assert_uint_eq(sum, h2->irqs[i].total);
        }
        host_free(h2);
}
END_TEST

START_TEST(test_mounts_and_cmdline) {
        _cleanup_free_ char *cmdline = NULL, *mounts = NULL;
        ck_assert_int_eq(root_read_line(root, "proc/cmdline", &cmdline), 0);
        ck_assert_str_eq(cmdline, host->cmdline);

        ck_assert_int_eq(root_read_file(root, "proc/self/mountinfo", &mounts, NULL), 0);
        bool v2 = strstr(mounts, " - cgroup2 ") != NULL, v1 = strstr(mounts, " - cgroup ") != NULL;
        if (v1 && v2)
                ck_assert_int_eq(host->cgroup_mode, CGROUP_HYBRID);
        else if (v1)
                ck_assert_int_eq(host->cgroup_mode, CGROUP_V1);
        else if (v2)
                ck_assert(host->cgroup_mode == CGROUP_V2 || host->cgroup_mode == CGROUP_HYBRID);
        else
                ck_assert_int_eq(host->cgroup_mode, CGROUP_NONE);
        if (host->cpuset_v1_mount)
                ck_assert(root_exists(root, host->cpuset_v1_mount));
        ck_assert_int_eq(host->resctrl.mounted, strstr(mounts, " - resctrl ") != NULL);
        ck_assert_int_eq(host->systemd_running, access("/run/systemd/system", F_OK) == 0);
}
END_TEST

int main(void) {
        Suite *s = suite_create("host-real");
        TCase *tc = tcase_create("discover");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_cpus);
        tcase_add_test(tc, test_irqs);
        tcase_add_test(tc, test_counts);
        tcase_add_test(tc, test_mounts_and_cmdline);
        suite_add_tcase(s, tc);
        return test_run(s);
}
