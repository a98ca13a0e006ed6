/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Host discovery on the bundled fake hosts (tests/fixtures) and on a generated 1024-CPU host. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strv.h"
#include "test-util.h"

static Host *open_fixture(const char *name, Root **ret_root) {
        _cleanup_free_ char *path = fixture_host(name);
        Host *h;
        test_open_host(path, ret_root, &h);
        return h;
}

static void assert_list(const CpuSet *s, const char *want) {
        _cleanup_free_ char *l = cpu_set_format_list(s);
        ck_assert_str_eq(l, want);
}

START_TEST(test_intel_2s) {
        Root *root;
        Host *h = open_fixture("intel-2s", &root);

        assert_list(&h->online, "0-31");
        ck_assert(h->numa);
        ck_assert_uint_eq(h->n_nodes, 2);
        assert_list(&h->nodes[0], "0-7,16-23");
        assert_list(&h->nodes[1], "8-15,24-31");
        /* SMT siblings n and n+16 share a core */
        ck_assert_int_eq(h->cpus[16].core, 0);
        ck_assert_int_eq(h->cpus[25].core, 9);
        ck_assert_int_eq(h->cpus[9].package, 1);
        ck_assert_int_eq(h->cpus[16].package, 0);
        ck_assert_uint_eq(h->n_l3, 2);
        ck_assert_int_eq(h->cpus[24].l3, 1);

        ck_assert_int_eq(h->vendor, CPU_VENDOR_INTEL);
        ck_assert_int_eq(h->cgroup_mode, CGROUP_V2);
        ck_assert_str_eq(h->cgroup2_mount, "sys/fs/cgroup");
        ck_assert(h->cgroup2_cpuset);
        ck_assert(h->systemd_running);
        ck_assert_int_eq(h->bootloader, BOOTLOADER_GRUB);
        ck_assert(h->preempt_rt);

        ck_assert(h->resctrl.supported && h->resctrl.mounted);
        ck_assert_str_eq(h->resctrl.mount, "sys/fs/resctrl");
        ck_assert(h->resctrl.l3.present);
        ck_assert_uint_eq(h->resctrl.l3.cbm_mask, 0x7ff);
        ck_assert_uint_eq(h->resctrl.l3.cbm_bits, 11);
        ck_assert_uint_eq(h->resctrl.l3.num_closids, 16);
        ck_assert_uint_eq(h->resctrl.l3.min_cbm_bits, 1);
        ck_assert(h->resctrl.mb.present);
        ck_assert_uint_eq(h->resctrl.mb.bandwidth_gran, 10);
        ck_assert(!h->resctrl.cdp);
        ck_assert_uint_eq(h->resctrl.n_domains, 2);

        /* IRQs: numbered rows only, sorted, names and affinities read (32 CPUs: from
         * /proc/interrupts) */
        ck_assert_uint_gt(h->n_irqs, 50);
        ck_assert_uint_eq(h->n_irq_columns, 32);
        bool found_nic = false;
        for (size_t i = 0; i < h->n_irqs; i++) {
                if (i)
                        ck_assert_uint_gt(h->irqs[i].number, h->irqs[i - 1].number);
                if (streq(h->irqs[i].actions, "eth1-TxRx-0")) {
                        found_nic = true;
                        ck_assert(h->irqs[i].has_affinity);
                        ck_assert(!cpu_set_is_empty(h->irqs[i].affinity));
                }
        }
        ck_assert(found_nic);
        const Irq *timer = host_find_irq(h, 0);
        ck_assert_ptr_nonnull(timer);
        ck_assert_str_eq(timer->actions, "timer");
        ck_assert_str_eq(timer->chip, "IR-IO-APIC"); /* interrupt remapping on */
        /* shared handlers as /proc/interrupts names them, which rules match */
        ck_assert_str_eq(host_find_irq(h, 26)->actions, "PCIe PME, aerdrv");
        assert_list(&h->default_irq_affinity, "0-31");

        CpuSet hk, iso;
        host_default_split(h, 1, &hk, &iso);
        assert_list(&hk, "0,8,16,24");
        assert_list(&iso, "1-7,9-15,17-23,25-31");

        host_free(h);
        root_free(root);
}
END_TEST

START_TEST(test_epyc) {
        Root *root;
        Host *h = open_fixture("epyc", &root);

        assert_list(&h->online, "0-63");
        ck_assert_int_eq(h->vendor, CPU_VENDOR_AMD);
        ck_assert_int_eq(h->bootloader, BOOTLOADER_BLS);
        ck_assert_int_eq(h->cgroup_mode, CGROUP_V2);
        /* several L3 domains per socket: 8 in all, each of 4 cores + siblings */
        ck_assert_uint_eq(h->n_l3, 8);
        for (size_t i = 0; i < h->n_l3; i++)
                ck_assert_uint_eq(cpu_set_count(&h->l3[i].cpus), 8);
        ck_assert_int_eq(h->cpus[32].core, 0);
        ck_assert_int_ne(h->cpus[4].l3, h->cpus[0].l3);
        ck_assert_int_eq(h->cpus[36].l3, h->cpus[4].l3);
        ck_assert_uint_eq(h->resctrl.l3.cbm_mask, 0xffff);
        ck_assert_int_eq(h->resctrl.l3.sparse_masks, 1);
        ck_assert_uint_eq(h->resctrl.n_domains, 8);
        ck_assert_uint_eq(h->n_nodes, 2);

        CpuSet hk, iso, l3;
        host_default_split(h, 1, &hk, &iso);
        ck_assert_uint_eq(cpu_set_count(&hk), 4);
        ck_assert(cpu_set_has(&hk, 0) && cpu_set_has(&hk, 32));
        ck_assert(host_l3_cpus(h, h->resctrl.domains[1], &l3));
        ck_assert_uint_eq(cpu_set_count(&l3), 8);
        host_free(h);
        root_free(root);
}
END_TEST

START_TEST(test_vm) {
        Root *root;
        Host *h = open_fixture("vm", &root);

        assert_list(&h->online, "0-3");
        ck_assert(!h->numa); /* no node directory: one node with every CPU */
        ck_assert_uint_eq(h->n_nodes, 1);
        assert_list(&h->nodes[0], "0-3");
        ck_assert_uint_eq(h->n_l3, 0);
        ck_assert_int_eq(h->cpus[2].l3, -1);
        ck_assert(!h->resctrl.supported && !h->resctrl.mounted);
        ck_assert(h->cgroup_mode == CGROUP_V1 || h->cgroup_mode == CGROUP_HYBRID);
        ck_assert_str_eq(h->cpuset_v1_mount, "sys/fs/cgroup/cpuset");
        ck_assert(!h->systemd_running);
        ck_assert_int_eq(h->bootloader, BOOTLOADER_KERNEL_CMDLINE);

        CpuSet hk, iso;
        host_default_split(h, 1, &hk, &iso);
        assert_list(&hk, "0");
        assert_list(&iso, "1-3");
        host_free(h);
        root_free(root);
}
END_TEST

START_TEST(test_big_generated) {
        /* tmpfs: the big host is ~330k files, which a disk-backed /tmp writes 10x slower. */
        _cleanup_free_ char *dir = strdup("/dev/shm/rtpart-test-XXXXXX"), *cmd = NULL, *host = NULL;
        ck_assert_ptr_nonnull(dir);
        ck_assert_ptr_nonnull(mkdtemp(dir));
        ck_assert(asprintf(&host, "%s/big", dir) >= 0);
        ck_assert(asprintf(&cmd, "python3 '%s/mkhost.py' big '%s' >/dev/null", FIXTURE_DIR, host) >= 0);
        ck_assert_int_eq(system(cmd), 0);

        Root *root;
        Host *h;
        test_open_host(host, &root, &h);
        ck_assert_uint_eq(cpu_set_count(&h->online), 1024);
        ck_assert_uint_eq(h->n_cpu_ids, 1024);
        ck_assert_uint_eq(h->n_irqs, 8192);
        ck_assert_uint_eq(h->n_irq_columns, 0); /* /sys/kernel/irq: /proc/interrupts not read */
        ck_assert_uint_eq(h->n_nodes, 8);
        for (size_t i = 0; i < h->n_irqs; i++)
                ck_assert(h->irqs[i].has_affinity || h->irqs[i].number < 16);
        /* IRQs of one affinity share one set: the host's IRQs are not 8192 copies of a 1 KiB set
         * (9 MB that were rtpartd's largest allocation at start-up on this host). */
        size_t all = 0;
        const CpuSet *first = NULL;
        for (size_t i = 0; i < h->n_irqs; i++)
                if (h->irqs[i].has_affinity && cpu_set_count(h->irqs[i].affinity) == 1024) {
                        first = first ?: h->irqs[i].affinity;
                        ck_assert_ptr_eq(h->irqs[i].affinity, first);
                        all++;
                }
        ck_assert_uint_gt(all, 7000);
        ck_assert_uint_lt(h->n_irq_affinities, 256);
        /* The kernel's 32-word mask of default_smp_affinity was read as 1024 CPUs. */
        ck_assert_uint_eq(cpu_set_count(&h->default_irq_affinity), 1024);
        CpuSet hk, iso;
        host_default_split(h, 1, &hk, &iso);
        ck_assert_uint_eq(cpu_set_count(&hk), 16); /* 8 nodes × one core × 2 threads */
        ck_assert_uint_eq(cpu_set_count(&iso), 1008);

        Host *hc;
        ck_assert_int_eq(host_discover(root, HOST_DISCOVER_IRQ_COUNTS, &hc), 0);
        ck_assert_ptr_nonnull(hc->irqs[100].counts);
        ck_assert_uint_eq(hc->n_irq_columns, 1024);
        ck_assert_uint_eq(hc->n_irqs, 8192);
        for (size_t i = 0; i < hc->n_irqs; i++) { /* both ways find the same IRQs and names */
                ck_assert_uint_eq(hc->irqs[i].number, h->irqs[i].number);
                ck_assert_str_eq(hc->irqs[i].actions, h->irqs[i].actions);
                ck_assert_int_eq(hc->irqs[i].has_affinity, h->irqs[i].has_affinity);
        }
        host_free(hc);

        /* 1024 CPUs: the names come from /sys/kernel/irq, and /proc/interrupts (made unparsable
         * here: reading it would fail discovery) is not read. */
        _cleanup_free_ char *ip = NULL;
        ck_assert(asprintf(&ip, "%s/proc/interrupts", host) >= 0);
        ck_assert_int_eq(unlink(ip), 0); /* a hard link of the tree's: not written in place */
        FILE *g = fopen(ip, "we");
        ck_assert_ptr_nonnull(g);
        fputs("garbage\n", g);
        ck_assert_int_eq(fclose(g), 0);
        Host *hs;
        ck_assert_int_eq(host_discover(root, 0, &hs), 0);
        ck_assert_uint_eq(hs->n_irqs, 8192);
        ck_assert_uint_eq(hs->n_irq_columns, 0);
        ck_assert_str_eq(hs->irqs[8000].actions, h->irqs[8000].actions);
        ck_assert_ptr_null(hs->irqs[8000].chip);
        host_free(hs);
        host_free(h);
        root_free(root);
        free(cmd);
        ck_assert(asprintf(&cmd, "rm -rf '%s'", dir) >= 0);
        ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(test_interrupts_parser) {
        Host h = { .n_cpu_ids = 4 };
        const char *text = "           CPU0       CPU2       \n"
                           "  0:         46          0   IO-APIC   2-edge      timer\n"
                           "  8:          0          1   IO-APIC   8-edge      rtc0\n"
                           " 24:          5          7  PCI-MSI 524288-edge      nvme0q0, nvme1q0\n"
                           " 30:          0          0  IR-PCI-MSIX-0000:3b:00.0    1-edge      \n"
                           "  9:          0          0   IO-APIC   9-fasteoi   acpi\n"
                           "NMI:          0          0   Non-maskable interrupts\n"
                           "ERR:          0\n";
        ck_assert_int_eq(host_parse_interrupts(&h, text, true), 0);
        ck_assert_uint_eq(h.n_irqs, 5);
        ck_assert_uint_eq(h.n_irq_columns, 2);
        ck_assert_int_eq(h.irq_columns[1], 2);
        ck_assert_uint_eq(h.irqs[2].number, 9); /* sorted */
        const Irq *q = host_find_irq(&h, 24);
        ck_assert_ptr_nonnull(q);
        ck_assert_str_eq(q->chip, "PCI-MSI");
        ck_assert_str_eq(q->hwirq, "524288-edge");
        ck_assert_str_eq(q->actions, "nvme0q0, nvme1q0");
        ck_assert_uint_eq(q->total, 12);
        ck_assert_uint_eq(q->counts[2], 7);
        ck_assert_str_eq(host_find_irq(&h, 30)->actions, "");
        ck_assert_ptr_null(host_find_irq(&h, 31));

        for (size_t i = 0; i < h.n_irqs; i++) {
                free(h.irqs[i].chip);
                free(h.irqs[i].hwirq);
                free(h.irqs[i].actions);
                free(h.irqs[i].counts);
        }
        free(h.irqs);
        free(h.irq_columns);

        Host bad = {};
        ck_assert_int_eq(host_parse_interrupts(&bad, "garbage\n", false), -EBADMSG);
        free(bad.irq_columns);
}
END_TEST

/* On a host of 256 possible CPUs or more, where /sys/kernel/irq exists, host discovery takes the
 * IRQs from it and never reads /proc/interrupts (made unparsable here: reading it would fail
 * discovery); without it, or on a smaller host, /proc/interrupts is read as before. */
START_TEST(test_irqs_from_sysfs) {
        _cleanup_free_ char *dir = test_copy_host("vm");
        Root *root;
        Host *h;
        test_open_host(dir, &root, &h); /* 4 CPUs: /proc/interrupts, the cheaper read there */
        ck_assert_uint_eq(h->n_irqs, 34);
        ck_assert_uint_eq(h->n_irq_columns, 4);
        host_free(h);
        root_free(root);

        test_write(dir, "sys/devices/system/cpu/possible", "0-255\n");
        test_write(dir, "proc/interrupts", "garbage\n");
        test_open_host(dir, &root, &h);
        ck_assert_uint_eq(h->n_irqs, 34);
        ck_assert_uint_eq(h->n_irq_columns, 0);
        ck_assert_str_eq(host_find_irq(h, 24)->actions, "PCIe PME, pciehp");
        ck_assert_str_eq(host_find_irq(h, 31)->actions, "virtio0-input.0");
        ck_assert_ptr_null(host_find_irq(h, 2)); /* a directory without a handler: no row */
        ck_assert(host_find_irq(h, 32)->has_affinity);
        host_free(h);

        /* An affinity list longer than a batch's buffer (every other CPU of 4096, 9 KB) is read
         * again whole, not cut. */
        {
                StrBuf b = {};
                for (unsigned c = 0; c < 4096; c += 2)
                        strbuf_appendf(&b, "%s%u", c ? "," : "", c);
                strbuf_append(&b, "\n");
                _cleanup_free_ char *l = strbuf_steal(&b);
                ck_assert_uint_gt(strlen(l), 4096);
                test_write(dir, "proc/irq/33/smp_affinity_list", l);
                root_free(root);
                test_open_host(dir, &root, &h);
                ck_assert(host_find_irq(h, 33)->has_affinity);
                ck_assert_uint_eq(cpu_set_count(host_find_irq(h, 33)->affinity), 2048);
                ck_assert(cpu_set_has(host_find_irq(h, 33)->affinity, 4094));
                host_free(h);
        }

        /* Revert's discovery reads no IRQ at all. */
        ck_assert_int_eq(host_discover(root, HOST_DISCOVER_NO_IRQS, &h), 0);
        ck_assert_uint_eq(h->n_irqs, 0);
        ck_assert_uint_eq(cpu_set_count(&h->default_irq_affinity), 4);
        host_free(h);

        /* Counts come from /proc/interrupts alone: asking for them reads it (and fails here). */
        ck_assert_int_eq(host_discover(root, HOST_DISCOVER_IRQ_COUNTS, &h), -EBADMSG);
        root_free(root);

        /* A kernel without /sys/kernel/irq (before 5.2): /proc/interrupts, with chips. */
        _cleanup_free_ char *fresh = test_copy_host("vm"), *cmd = NULL;
        ck_assert(asprintf(&cmd, "rm -rf '%s/sys/kernel/irq'", fresh) >= 0);
        ck_assert_int_eq(system(cmd), 0);
        test_open_host(fresh, &root, &h);
        ck_assert_uint_eq(h->n_irqs, 34);
        ck_assert_uint_eq(h->n_irq_columns, 4);
        ck_assert_str_eq(host_find_irq(h, 24)->actions, "PCIe PME, pciehp");
        ck_assert_str_eq(host_find_irq(h, 0)->chip, "IO-APIC");
        ck_assert(host_find_irq(h, 32)->has_affinity);
        host_free(h);
        root_free(root);
        test_rmtree(dir);
        test_rmtree(fresh);
}
END_TEST

START_TEST(test_missing_optional_parts) {
        /* A bare tree with only the online CPUs: everything else is absent, not an error. */
        char *dir = test_tmpdir();
        test_write(dir, "sys/devices/system/cpu/online", "0-1\n");
        Root *root;
        Host *h;
        test_open_host(dir, &root, &h);
        ck_assert_uint_eq(h->n_irqs, 0);
        ck_assert_int_eq(h->cgroup_mode, CGROUP_NONE);
        ck_assert_int_eq(h->bootloader, BOOTLOADER_NONE);
        ck_assert_str_eq(h->cmdline, "");
        ck_assert_int_eq(h->cpus[1].core, 1);
        host_free(h);

        /* No CPU list at all is an error. */
        test_write(dir, "sys/devices/system/cpu/online", "\n");
        ck_assert_int_eq(host_discover(root, 0, &h), -ENODEV);
        root_free(root);
        test_rmtree(dir);
        free(dir);
}
END_TEST

START_TEST(test_symlinks_stay_in_root) {
        /* An absolute symlink inside a fake tree resolves inside the tree, never on the real host. */
        char *dir = test_tmpdir();
        _cleanup_free_ char *cmd = NULL;
        test_write(dir, "sys/devices/virtual/workqueue/writeback/cpumask", "3\n");
        test_write(dir, "proc/cmdline", "fake\n");
        ck_assert(asprintf(&cmd,
                           "mkdir -p %s/sys/bus/workqueue/devices && ln -s /sys/devices/virtual/workqueue/writeback "
                           "%s/sys/bus/workqueue/devices/writeback && ln -s /proc/cmdline %s/cmdline-link",
                           dir, dir, dir) >= 0);
        ck_assert_int_eq(system(cmd), 0);
        Root *root;
        ck_assert_int_eq(root_new(dir, &root), 0);
        _cleanup_free_ char *v = NULL, *c = NULL, *canon = NULL;
        ck_assert_int_eq(root_read_line(root, "sys/bus/workqueue/devices/writeback/cpumask", &v), 0);
        ck_assert_str_eq(v, "3");
        ck_assert_int_eq(root_read_line(root, "cmdline-link", &c), 0);
        ck_assert_str_eq(c, "fake");
        ck_assert_int_eq(root_canonicalize(root, "sys/bus/workqueue/devices/writeback/cpumask", &canon), 0);
        ck_assert_str_eq(canon, "sys/devices/virtual/workqueue/writeback/cpumask");
        char **g = NULL;
        ck_assert_int_eq(root_glob(root, "/sys/devices/virtual/workqueue/*/cpumask", &g), 0);
        ck_assert_uint_eq(strv_length(g), 1);
        ck_assert_str_eq(g[0], "sys/devices/virtual/workqueue/writeback/cpumask");
        strv_free(g);
        ck_assert_int_eq(root_glob(root, "sys/nothing/*/x", &g), 0);
        ck_assert_uint_eq(strv_length(g), 0);
        strv_free(g);
        root_free(root);
        test_rmtree(dir);
        free(dir);
}
END_TEST

int main(void) {
        Suite *s = suite_create("host");
        TCase *tc = tcase_create("fixtures");
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, test_intel_2s);
        tcase_add_test(tc, test_epyc);
        tcase_add_test(tc, test_vm);
        tcase_add_test(tc, test_big_generated);
        tcase_add_test(tc, test_interrupts_parser);
        tcase_add_test(tc, test_irqs_from_sysfs);
        tcase_add_test(tc, test_missing_optional_parts);
        tcase_add_test(tc, test_symlinks_stay_in_root);
        suite_add_tcase(s, tc);
        return test_run(s);
}
