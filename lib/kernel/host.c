/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host-internal.h"
#include "host.h"
#include "strv.h"

static const char * const cgroup_mode_table[_CGROUP_MODE_MAX] = {
        [CGROUP_NONE] = "none",
        [CGROUP_V1] = "v1",
        [CGROUP_HYBRID] = "hybrid",
        [CGROUP_V2] = "v2",
};

static const char * const bootloader_table[_BOOTLOADER_MAX] = {
        [BOOTLOADER_NONE] = "none",
        [BOOTLOADER_GRUB] = "grub",
        [BOOTLOADER_BLS] = "bls",
        [BOOTLOADER_KERNEL_CMDLINE] = "kernel-install",
};

static const char * const cpu_vendor_table[_CPU_VENDOR_MAX] = {
        [CPU_VENDOR_OTHER] = "other",
        [CPU_VENDOR_INTEL] = "intel",
        [CPU_VENDOR_AMD] = "amd",
};

const char *cgroup_mode_to_string(CgroupMode m) {
        return m >= 0 && m < _CGROUP_MODE_MAX ? cgroup_mode_table[m] : NULL;
}

const char *bootloader_to_string(BootLoader b) {
        return b >= 0 && b < _BOOTLOADER_MAX ? bootloader_table[b] : NULL;
}

const char *cpu_vendor_to_string(CpuVendor v) {
        return v >= 0 && v < _CPU_VENDOR_MAX ? cpu_vendor_table[v] : NULL;
}

Host *host_free(Host *h) {
        if (!h)
                return NULL;
        free(h->cpus);
        free(h->nodes);
        free(h->l3);
        for (size_t i = 0; i < h->n_irqs; i++) {
                free(h->irqs[i].chip);
                free(h->irqs[i].hwirq);
                free(h->irqs[i].actions);
                free(h->irqs[i].counts);
        }
        free(h->irqs);
        for (size_t i = 0; i < h->n_irq_affinities; i++)
                free(h->irq_affinities[i].set);
        free(h->irq_affinities);
        free(h->irq_columns);
        free(h->cmdline);
        free(h->kernel_release);
        free(h->cgroup2_mount);
        free(h->cpuset_v1_mount);
        free(h->resctrl.mount);
        free(h->resctrl.domains);
        free(h);
        return NULL;
}

/* ---- CPUs and topology ---- */

static int discover_cpus(Host *h) {
        Root *r = h->root;
        int k;

        k = root_read_cpu_list(r, "sys/devices/system/cpu/online", &h->online);
        if (k < 0)
                return k;
        if (cpu_set_is_empty(&h->online))
                return -ENODEV;
        if (root_read_cpu_list(r, "sys/devices/system/cpu/possible", &h->possible) < 0)
                h->possible = h->online;
        if (root_read_cpu_list(r, "sys/devices/system/cpu/present", &h->present) < 0)
                h->present = h->online;
        cpu_set_or(&h->possible, &h->online);
        (void) root_read_cpu_list(r, "sys/devices/system/cpu/isolated", &h->boot_isolated);
        (void) root_read_cpu_list(r, "sys/devices/system/cpu/nohz_full", &h->boot_nohz_full);

        h->n_cpu_ids = (unsigned) cpu_set_last(&h->possible) + 1;
        h->cpus = calloc(h->n_cpu_ids, sizeof(HostCpu));
        if (!h->cpus)
                return -ENOMEM;
        for (unsigned c = 0; c < h->n_cpu_ids; c++)
                h->cpus[c] = (HostCpu) { .core = -1, .package = -1, .node = 0, .l3 = -1 };

        /* Read one file per group, not per CPU: a sibling list names the whole core, a package
         * list the whole package, an L3 shared list the whole cache domain. */
        CPU_SET_FOREACH (c, &h->online) {
                HostCpu *hc = &h->cpus[c];
                char path[128];

                if (hc->core < 0) {
                        CpuSet sib;
                        snprintf(path, sizeof(path), "sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", c);
                        if (root_read_cpu_list(r, path, &sib) < 0 || !cpu_set_has(&sib, (unsigned) c)) {
                                cpu_set_zero(&sib);
                                cpu_set_add(&sib, (unsigned) c);
                        }
                        cpu_set_and(&sib, &h->online);
                        int first = cpu_set_next(&sib, 0);
                        CPU_SET_FOREACH (s, &sib)
                                if (h->cpus[s].core < 0)
                                        h->cpus[s].core = first;
                }
                if (hc->package < 0) {
                        unsigned pkg = 0;
                        CpuSet pk;
                        snprintf(path, sizeof(path), "sys/devices/system/cpu/cpu%d/topology/physical_package_id", c);
                        (void) root_read_uint(r, path, &pkg);
                        snprintf(path, sizeof(path), "sys/devices/system/cpu/cpu%d/topology/package_cpus_list", c);
                        if (root_read_cpu_list(r, path, &pk) < 0) {
                                snprintf(path, sizeof(path), "sys/devices/system/cpu/cpu%d/topology/core_siblings_list",
                                         c);
                                if (root_read_cpu_list(r, path, &pk) < 0)
                                        cpu_set_zero(&pk);
                        }
                        cpu_set_add(&pk, (unsigned) c);
                        cpu_set_and(&pk, &h->online);
                        CPU_SET_FOREACH (s, &pk)
                                if (h->cpus[s].package < 0)
                                        h->cpus[s].package = (int) pkg;
                }
                if (hc->l3 < 0) {
                        unsigned level = 0, id = 0;
                        CpuSet shared;
                        snprintf(path, sizeof(path), "sys/devices/system/cpu/cpu%d/cache/index3/level", c);
                        if (root_read_uint(r, path, &level) < 0 || level != 3)
                                continue;
                        snprintf(path, sizeof(path), "sys/devices/system/cpu/cpu%d/cache/index3/id", c);
                        if (root_read_uint(r, path, &id) < 0)
                                continue;
                        snprintf(path, sizeof(path), "sys/devices/system/cpu/cpu%d/cache/index3/shared_cpu_list", c);
                        if (root_read_cpu_list(r, path, &shared) < 0)
                                cpu_set_zero(&shared);
                        cpu_set_add(&shared, (unsigned) c);
                        cpu_set_and(&shared, &h->online);

                        CacheDomain *d = NULL;
                        for (size_t i = 0; i < h->n_l3; i++)
                                if (h->l3[i].id == id)
                                        d = &h->l3[i];
                        if (!d) {
                                CacheDomain *n = realloc(h->l3, (h->n_l3 + 1) * sizeof(CacheDomain));
                                if (!n)
                                        return -ENOMEM;
                                h->l3 = n;
                                d = &h->l3[h->n_l3++];
                                *d = (CacheDomain) { .id = id };
                        }
                        CPU_SET_FOREACH (s, &shared)
                                if (h->cpus[s].l3 < 0) {
                                        h->cpus[s].l3 = (int) id;
                                        cpu_set_add(&d->cpus, (unsigned) s);
                                }
                }
        }
        return 0;
}

static int discover_nodes(Host *h) {
        DIR *d;
        struct dirent *de;
        int k;

        k = root_opendir(h->root, "sys/devices/system/node", &d);
        if (k < 0) {
                /* No NUMA directory (a small VM, CONFIG_NUMA=n): one node with every CPU. */
                h->numa = false;
                h->nodes = calloc(1, sizeof(CpuSet));
                if (!h->nodes)
                        return -ENOMEM;
                h->nodes[0] = h->online;
                h->n_nodes = 1;
                return 0;
        }
        h->numa = true;
        while ((de = readdir(d))) {
                unsigned id;
                char tail;
                if (sscanf(de->d_name, "node%u%c", &id, &tail) != 1 || id > 4096)
                        continue;
                char path[512];
                CpuSet cpus;
                snprintf(path, sizeof(path), "sys/devices/system/node/%s/cpulist", de->d_name);
                if (root_read_cpu_list(h->root, path, &cpus) < 0)
                        continue;
                if (id >= h->n_nodes) {
                        CpuSet *n = realloc(h->nodes, (id + 1) * sizeof(CpuSet));
                        if (!n) {
                                closedir(d);
                                return -ENOMEM;
                        }
                        for (unsigned i = h->n_nodes; i <= id; i++)
                                cpu_set_zero(&n[i]);
                        h->nodes = n;
                        h->n_nodes = id + 1;
                }
                cpu_set_and(&cpus, &h->online);
                h->nodes[id] = cpus;
                CPU_SET_FOREACH (c, &cpus)
                        h->cpus[c].node = (int) id;
        }
        closedir(d);
        if (h->n_nodes == 0) {
                h->nodes = calloc(1, sizeof(CpuSet));
                if (!h->nodes)
                        return -ENOMEM;
                h->nodes[0] = h->online;
                h->n_nodes = 1;
        }
        return 0;
}

bool host_node_cpus(const Host *h, unsigned node, CpuSet *ret) {
        if (node >= h->n_nodes || cpu_set_is_empty(&h->nodes[node]))
                return false;
        *ret = h->nodes[node];
        return true;
}

bool host_package_cpus(const Host *h, unsigned package, CpuSet *ret) {
        CpuSet s = {};
        CPU_SET_FOREACH (c, &h->online)
                if (h->cpus[c].package == (int) package)
                        cpu_set_add(&s, (unsigned) c);
        if (cpu_set_is_empty(&s))
                return false;
        *ret = s;
        return true;
}

bool host_l3_cpus(const Host *h, unsigned id, CpuSet *ret) {
        for (size_t i = 0; i < h->n_l3; i++)
                if (h->l3[i].id == id) {
                        *ret = h->l3[i].cpus;
                        return true;
                }
        return false;
}

void host_default_split(const Host *h, unsigned cores_per_node, CpuSet *ret_housekeeping, CpuSet *ret_isolated) {
        CpuSet hk = {};

        for (unsigned n = 0; n < h->n_nodes; n++) {
                unsigned taken = 0;
                CPU_SET_FOREACH (c, &h->nodes[n]) {
                        if (taken >= cores_per_node)
                                break;
                        int core = h->cpus[c].core >= 0 ? h->cpus[c].core : c;
                        if (core != c || cpu_set_has(&hk, (unsigned) c))
                                continue; /* a sibling of a core already taken, or not a core's first CPU */
                        CPU_SET_FOREACH (s, &h->nodes[n])
                                if (h->cpus[s].core == core)
                                        cpu_set_add(&hk, (unsigned) s);
                        cpu_set_add(&hk, (unsigned) c);
                        taken++;
                }
        }
        CpuSet iso = h->online;
        cpu_set_andnot(&iso, &hk);
        *ret_housekeeping = hk;
        *ret_isolated = iso;
}

/* ---- the rest ---- */

int host_find_bootloader(Root *r, BootLoader *ret, char ***ret_entries) {
        _cleanup_strv_free_ char **entries = NULL;
        int k = root_glob(r, "boot/loader/entries/*.conf", &entries);
        if (k >= 0 && strv_length(entries) == 0) {
                strv_free(entries);
                entries = NULL;
                k = root_glob(r, "boot/efi/loader/entries/*.conf", &entries);
        }
        if (k < 0)
                return k;
        bool bls = strv_length(entries) > 0;
        bool kcmd = root_exists(r, "etc/kernel/cmdline");

        if (bls)
                *ret = kcmd ? BOOTLOADER_KERNEL_CMDLINE : BOOTLOADER_BLS;
        else if (root_exists(r, "etc/default/grub") || root_is_dir(r, "etc/default/grub.d"))
                *ret = BOOTLOADER_GRUB;
        else
                *ret = kcmd ? BOOTLOADER_KERNEL_CMDLINE : BOOTLOADER_NONE;
        if (ret_entries)
                *ret_entries = TAKE_PTR(entries);
        return 0;
}

BootLoader host_detect_bootloader(Root *r) {
        BootLoader b;
        return host_find_bootloader(r, &b, NULL) < 0 ? BOOTLOADER_NONE : b;
}

static void discover_vendor(Host *h) {
        _cleanup_close_ int fd = root_open(h->root, "proc/cpuinfo", O_RDONLY, 0);
        char buf[4096];

        h->vendor = CPU_VENDOR_OTHER;
        if (fd < 0)
                return;
        ssize_t n = read(fd, buf, sizeof(buf) - 1); /* the first stanza is enough */
        if (n <= 0)
                return;
        buf[n] = 0;
        if (strstr(buf, "GenuineIntel"))
                h->vendor = CPU_VENDOR_INTEL;
        else if (strstr(buf, "AuthenticAMD") || strstr(buf, "HygonGenuine"))
                h->vendor = CPU_VENDOR_AMD;
}

int host_discover(Root *root, HostDiscoverFlags flags, Host **ret) {
        _cleanup_(host_freep) Host *h = NULL;
        int k;

        h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        h->root = root;

        k = discover_cpus(h);
        if (k < 0)
                return k;
        k = discover_nodes(h);
        if (k < 0)
                return k;
        if (flags & HOST_DISCOVER_NO_IRQS)
                h->default_irq_affinity = h->online;
        else {
                k = host_discover_irqs(h, flags & HOST_DISCOVER_IRQ_COUNTS);
                if (k < 0)
                        return k;
        }
        k = host_discover_mounts(h);
        if (k < 0)
                return k;
        k = host_discover_resctrl(h);
        if (k < 0)
                return k;

        if (root_read_line(root, "proc/cmdline", &h->cmdline) < 0) {
                h->cmdline = strdup("");
                if (!h->cmdline)
                        return -ENOMEM;
        }
        (void) root_read_line(root, "proc/sys/kernel/osrelease", &h->kernel_release);
        _cleanup_free_ char *version = NULL;
        if (root_read_line(root, "proc/version", &version) >= 0)
                h->preempt_rt = strstr(version, "PREEMPT_RT") || strstr(version, "PREEMPT RT");
        if (!h->preempt_rt) {
                unsigned rt = 0;
                h->preempt_rt = root_read_uint(root, "sys/kernel/realtime", &rt) >= 0 && rt == 1;
        }
        discover_vendor(h);
        h->bootloader = host_detect_bootloader(root);
        h->systemd_running = root_is_dir(root, "run/systemd/system");

        *ret = TAKE_PTR(h);
        return 0;
}
