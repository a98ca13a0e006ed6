/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The knob interface itself: every backend declares its whole life, and what it declares (a
 * refusal's reason, the files to watch, the running value, the heading) is what the engine and
 * the daemon get. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "strv.h"
#include "test-util.h"

#define KNOWN_FLAGS \
        (BACKEND_REBOOT_ONLY | BACKEND_OBJECTS_VANISH | BACKEND_NEEDS_DAEMON | BACKEND_FOLLOWS_FORKS | \
         BACKEND_HOTPLUG_MOVES | BACKEND_KERNEL_SETS)

START_TEST(test_table_complete) {
        size_t n;
        const Backend * const *t = backend_table(&n);
        unsigned seen[_DOMAIN_MAX] = {};

        ck_assert_uint_eq(n, _DOMAIN_MAX);
        for (size_t i = 0; i < n; i++) {
                const Backend *b = t[i];
                ck_assert_ptr_nonnull(b->name);
                ck_assert_msg(b->domain >= 0 && b->domain < _DOMAIN_MAX, "%s: domain %d", b->name, b->domain);
                ck_assert_str_eq(domain_to_string(b->domain), b->name);
                ck_assert_ptr_eq(backend_for(b->domain), b);
                seen[b->domain]++;
                ck_assert_msg(b->schema, "%s: its profile section's schema", b->name);
                ck_assert_msg(b->plan && b->read, "%s: plan and read", b->name);
                ck_assert_msg(b->write, "%s: write (every domain is writable for now)", b->name);
                ck_assert_msg(b->watch, "%s: watch", b->name);
                ck_assert_msg(!(b->flags & ~KNOWN_FLAGS), "%s: unknown flags %#x", b->name, (unsigned) b->flags);
                ck_assert_msg(!(b->flags & BACKEND_REBOOT_ONLY) || b->running, "%s: reboot-only without running",
                              b->name);
        }
        for (int d = 0; d < _DOMAIN_MAX; d++)
                ck_assert_msg(seen[d] == 1, "domain %s: %u backends", domain_to_string((Domain) d), seen[d]);
        /* What the kernel changes itself when a CPU goes or comes: rtpartd reads it again after a
         * hotplug, as no file event says so. */
        static const Domain moved[] = { DOMAIN_IRQ, DOMAIN_KTHREAD, DOMAIN_CPUSET };
        for (size_t i = 0; i < ELEMENTSOF(moved); i++)
                ck_assert_msg(backend_for(moved[i])->flags & BACKEND_HOTPLUG_MOVES, "%s: hotplug",
                              domain_to_string(moved[i]));
        ck_assert(!(backend_for(DOMAIN_SYSCTL)->flags & BACKEND_HOTPLUG_MOVES));
        /* What drivers set themselves, with no file event (virtio_net's queue IRQs and XPS when its
         * channels change): read again at every verify, placed again after every write. */
        static const Domain driver_set[] = { DOMAIN_IRQ, DOMAIN_NET };
        for (size_t i = 0; i < ELEMENTSOF(driver_set); i++)
                ck_assert_msg(backend_for(driver_set[i])->flags & BACKEND_KERNEL_SETS, "%s: kernel sets",
                              domain_to_string(driver_set[i]));
        ck_assert(!(backend_for(DOMAIN_SYSCTL)->flags & BACKEND_KERNEL_SETS));
}
END_TEST

static char **watch(const Backend *b, const char *id, const char *path) {
        Knob k = { .id = (char *) id, .domain = b->domain, .path = (char *) path };
        char **l = (char **) 0x1;
        int r = b->watch(&k, &l);
        ck_assert_int_ge(r, 0);
        ck_assert_int_eq((size_t) r, strv_length(l));
        return l;
}

START_TEST(test_watch) {
        _cleanup_strv_free_ char **irq = watch(&backend_irq, "irq/41/affinity", "proc/irq/41/smp_affinity_list");
        ck_assert_uint_eq(strv_length(irq), 2);
        ck_assert_str_eq(irq[0], "proc/irq/41/smp_affinity_list");
        ck_assert_str_eq(irq[1], "proc/irq/41/smp_affinity"); /* another inode over the same value */
        _cleanup_strv_free_ char **def = watch(&backend_irq, "irq/default_affinity", "proc/irq/default_smp_affinity");
        ck_assert_uint_eq(strv_length(def), 1);
        _cleanup_strv_free_ char **sysctl =
                watch(&backend_sysctl, "sysctl/kernel.timer_migration", "proc/sys/kernel/timer_migration");
        ck_assert_uint_eq(strv_length(sysctl), 1);
        ck_assert_str_eq(sysctl[0], "proc/sys/kernel/timer_migration");
        _cleanup_strv_free_ char **gov =
                watch(&backend_cpu, "cpu/3/governor", "sys/devices/system/cpu/cpu3/cpufreq/scaling_governor");
        ck_assert_uint_eq(strv_length(gov), 1);
        /* Seen otherwise: a character device held open, a thread's proc/PID/stat, boot files. */
        ck_assert_ptr_null(watch(&backend_cpu, "cpu/pm_qos", "dev/cpu_dma_latency"));
        ck_assert_ptr_null(watch(&backend_kthread, "kthread/ksoftirqd/3/sched", "proc/30/stat"));
        ck_assert_ptr_null(watch(&backend_boot, "boot/isolcpus", "etc/default/grub"));
        ck_assert_ptr_null(watch(&backend_sysfs, "sysfs/none", NULL));
}
END_TEST

/* A kernel that refuses every IRQ affinity write with the given errno, as for a managed IRQ. */
static int refusal_errno;
static int refusing_write_value(Root *r, const char *rel, const char *value) {
        return refusal_errno;
}

START_TEST(test_irq_refused) {
        _cleanup_free_ char *dir = test_tmpdir();
        test_write(dir, "proc/irq/41/smp_affinity_list", "0-3\n");
        test_write(dir, "proc/irq/default_smp_affinity", "f\n");
        _cleanup_(root_freep) Root *root = NULL;
        ck_assert_int_eq(root_new(dir, &root), 0);
        const RootOps *tree_ops = root->ops;
        RootOps ops = *tree_ops;
        ops.write_value = refusing_write_value;
        root->ops = &ops;

        Knob k = { .id = (char *) "irq/41/affinity",
                   .domain = DOMAIN_IRQ,
                   .kind = VALUE_CPU_LIST,
                   .path = (char *) "proc/irq/41/smp_affinity_list" };
        int errnos[] = { -EIO /* up to 6.11 */, -EPERM /* since 6.12 */ };
        for (size_t i = 0; i < ELEMENTSOF(errnos); i++) {
                _cleanup_(knob_result_done) KnobResult w = {};
                refusal_errno = errnos[i];
                ck_assert_int_eq(backend_irq.write(root, &k, "0-1", NULL, &w), KNOB_REFUSED);
                ck_assert_int_eq(w.status, KNOB_REFUSED);
                ck_assert_int_eq(w.error, 0);
                ck_assert_str_eq(w.reason, "the kernel manages this IRQ's affinity (managed or per-CPU interrupt)");
                ck_assert_str_eq(w.reason, backend_irq.refusal_reason);
        }
        /* The default affinity is never managed: the same errno is a failure. */
        Knob def = { .id = (char *) "irq/default_affinity",
                     .domain = DOMAIN_IRQ,
                     .kind = VALUE_CPU_MASK,
                     .path = (char *) "proc/irq/default_smp_affinity" };
        _cleanup_(knob_result_done) KnobResult w = {};
        refusal_errno = -EIO;
        ck_assert_int_eq(backend_irq.write(root, &def, "3", NULL, &w), -EIO);
        ck_assert_int_eq(w.status, KNOB_FAILED);
        ck_assert_int_eq(w.error, -EIO);
        ck_assert_ptr_null(w.reason);
        root->ops = tree_ops;
        test_rmtree(dir);
}
END_TEST

START_TEST(test_boot_running_and_heading) {
        Knob k = { .id = (char *) "boot/isolcpus", .domain = DOMAIN_BOOT, .kind = VALUE_BOOTARG };
        _cleanup_free_ char *v = NULL, *none = NULL;
        ck_assert_int_ge(backend_boot.running(&k, "BOOT_IMAGE=/vmlinuz isolcpus=managed_irq,2-7 quiet", &v), 0);
        ck_assert_str_eq(v, "managed_irq,2-7");
        (void) backend_boot.running(&k, "BOOT_IMAGE=/vmlinuz quiet", &none);
        ck_assert_ptr_null(none);

        json_t *host = json_pack("{s:s, s:s, s:b}", "bootloader", "grub", "cgroup", "v2", "systemd", 1);
        _cleanup_free_ char *boot = backend_boot.heading(host), *cpuset = backend_cpuset.heading(host);
        ck_assert_str_eq(boot, "boot (kernel command line, effective after reboot; bootloader: grub)");
        ck_assert_str_eq(cpuset, "cpuset (cgroup v2, slices through systemd)");
        json_decref(host);
}
END_TEST

static Suite *backend_suite(void) {
        Suite *s = suite_create("backend");
        TCase *tc = tcase_create("interface");
        tcase_add_test(tc, test_table_complete);
        tcase_add_test(tc, test_watch);
        tcase_add_test(tc, test_irq_refused);
        tcase_add_test(tc, test_boot_running_and_heading);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return test_run(backend_suite());
}
