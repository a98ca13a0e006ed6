/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "cmdline.h" /* Host.cmdline is read with cmdline_get() */
#include "cpu-set.h"
#include "root.h"

typedef enum CgroupMode {
        CGROUP_NONE,
        CGROUP_V1,     /* controllers on /sys/fs/cgroup/<ctrl>, no cgroup2 */
        CGROUP_HYBRID, /* v1 controllers plus cgroup2 at /sys/fs/cgroup/unified */
        CGROUP_V2,     /* cgroup2 on /sys/fs/cgroup */
        _CGROUP_MODE_MAX,
        _CGROUP_MODE_INVALID = -EINVAL,
} CgroupMode;

typedef enum BootLoader {
        BOOTLOADER_NONE,
        BOOTLOADER_GRUB,           /* /etc/default/grub + grub.d drop-ins, update-grub */
        BOOTLOADER_BLS,            /* /boot/loader/entries/ *.conf `options` lines (grubby) */
        BOOTLOADER_KERNEL_CMDLINE, /* /etc/kernel/cmdline (kernel-install, systemd-boot, UKIs) */
        _BOOTLOADER_MAX,
        _BOOTLOADER_INVALID = -EINVAL,
} BootLoader;

typedef enum CpuVendor {
        CPU_VENDOR_OTHER,
        CPU_VENDOR_INTEL,
        CPU_VENDOR_AMD,
        _CPU_VENDOR_MAX,
        _CPU_VENDOR_INVALID = -EINVAL,
} CpuVendor;

typedef struct HostCpu {
        int core;    /* lowest CPU number among its SMT siblings: identifies the core */
        int package; /* physical_package_id */
        int node;    /* NUMA node, 0 where the host has none */
        int l3;      /* cache/index3/id, -1 where there is no L3 */
} HostCpu;

typedef struct CacheDomain {
        unsigned id;
        CpuSet cpus;
} CacheDomain;

typedef struct Irq {
        unsigned number;
        /* chip and hwirq come from /proc/interrupts only: NULL when the IRQs were found in
         * /sys/kernel/irq (host_discover() on a host of 256 CPUs or more, unless counts were
         * asked for or the kernel has no /sys/kernel/irq). */
        char *chip;             /* "IR-PCI-MSIX-0000:3b:00.0" */
        char *hwirq;            /* "1-edge" */
        char *actions;          /* "eth1-TxRx-0", "PCIe PME, aerdrv" (shared) or "" */
        uint64_t total;         /* sum of the per-CPU counts; 0 unless counts were asked for */
        uint64_t *counts;       /* per CPU number, n_cpu_ids long; NULL unless asked for */
        bool has_affinity;      /* proc/irq/N/smp_affinity(_list) readable */
        const CpuSet *affinity; /* then the CPUs it names: one of the host's irq_affinities, which
                                 * IRQs of the same affinity share (a CpuSet is 1 KiB; 8192 IRQs
                                 * have a handful of distinct ones) */
} Irq;

typedef struct ResctrlResource {
        bool present;
        unsigned num_closids;
        /* cache resources */
        uint64_t cbm_mask;
        unsigned cbm_bits; /* width of cbm_mask */
        unsigned min_cbm_bits;
        uint64_t shareable_bits;
        int sparse_masks; /* 1 non-contiguous masks allowed, 0 not, -1 file absent */
        /* MB */
        unsigned min_bandwidth, bandwidth_gran;
        bool delay_linear;
} ResctrlResource;

typedef struct Resctrl {
        bool supported; /* the kernel offers the filesystem */
        bool mounted;
        char *mount; /* root-relative mount point when mounted */
        bool cdp;    /* L3CODE/L3DATA instead of L3 */
        ResctrlResource l3, l3code, l3data, mb;
        unsigned *domains; /* L3 cache ids, sorted */
        size_t n_domains;
} Resctrl;

typedef struct Host {
        Root *root; /* not owned */

        CpuSet online, possible, present;
        CpuSet boot_isolated, boot_nohz_full; /* what the running kernel was booted with */
        unsigned n_cpu_ids;                   /* highest possible CPU + 1 */
        HostCpu *cpus;                        /* indexed by CPU number, n_cpu_ids long */

        bool numa;     /* sys/devices/system/node exists */
        CpuSet *nodes; /* CPUs per node id, n_nodes long (holes are empty) */
        unsigned n_nodes;

        CacheDomain *l3;
        size_t n_l3;

        Irq *irqs;
        size_t n_irqs;
        int *irq_columns; /* /proc/interrupts column → CPU number; none when it was not read */
        size_t n_irq_columns;
        struct HostIrqAffinity {
                uint64_t hash;
                CpuSet *set;
        } * irq_affinities; /* the distinct sets Irq.affinity points to, each with its hash */
        size_t n_irq_affinities, cap_irq_affinities;
        CpuSet default_irq_affinity;

        char *cmdline;
        char *kernel_release;
        bool preempt_rt;
        CpuVendor vendor;

        CgroupMode cgroup_mode;
        char *cgroup2_mount;   /* root-relative, NULL if none */
        char *cpuset_v1_mount; /* root-relative, NULL if none */
        bool cgroup2_cpuset;   /* cpuset listed in the v2 root's cgroup.controllers */

        Resctrl resctrl;

        BootLoader bootloader;
        bool systemd_running;
} Host;

typedef enum HostDiscoverFlags {
        HOST_DISCOVER_IRQ_COUNTS = 1 << 0,
        /* No IRQs at all (n_irqs 0, default_irq_affinity the online CPUs): for what only puts
         * back what the journal holds (revert, the recovery of an interrupted transaction). */
        HOST_DISCOVER_NO_IRQS = 1 << 1,
} HostDiscoverFlags;

/* Reads everything rtpart needs to know about the host under root. Missing optional parts
 * (resctrl, NUMA, cgroups) are recorded as absent; only a host without online CPUs is an error. */
int host_discover(Root *root, HostDiscoverFlags flags, Host **ret);
Host *host_free(Host *h);
DEFINE_TRIVIAL_CLEANUP_FUNC(Host *, host_free);

/* Parses /proc/interrupts text into h->irqs (affinities not read). */
int host_parse_interrupts(Host *h, const char *text, bool want_counts);

/* The default split: the first `cores_per_node` cores (with their SMT siblings) of every NUMA node
 * are housekeeping, every other online CPU is isolated. */
void host_default_split(const Host *h, unsigned cores_per_node, CpuSet *ret_housekeeping, CpuSet *ret_isolated);

/* CPUs of a NUMA node / package / L3 domain; false if the host has no such id. */
bool host_node_cpus(const Host *h, unsigned node, CpuSet *ret);
bool host_package_cpus(const Host *h, unsigned package, CpuSet *ret);
bool host_l3_cpus(const Host *h, unsigned id, CpuSet *ret);
const Irq *host_find_irq(const Host *h, unsigned number);

/* Which bootloader configuration holds the kernel command line: BLS entries (with /etc/kernel/cmdline
 * when kernel-install owns them), GRUB's /etc/default/grub, or /etc/kernel/cmdline alone; and
 * (ret_entries, optional) the BLS entries, root-relative and sorted (boot/loader/entries/ *.conf, else
 * boot/efi/loader/entries/ *.conf; an empty list where there are none), found with the same glob. */
int host_find_bootloader(Root *r, BootLoader *ret, char ***ret_entries);
/* The same, without the entries; BOOTLOADER_NONE where the root cannot be read. */
BootLoader host_detect_bootloader(Root *r);

const char *cgroup_mode_to_string(CgroupMode m);
const char *bootloader_to_string(BootLoader b);
const char *cpu_vendor_to_string(CpuVendor v);
