/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* rtpartctl check hardware: what the host shows of the settings that limit latency before any
 * tuning matters, each with a verdict and what fixes it, and the hwlat and SMI figures of
 * hwlat.h put together in one document.
 *
 * The settings, by id: smt (sys/devices/system/cpu/smt/active), idle (the cpuidle driver and the
 * deepest state the checked CPUs may enter, given their disabled states, the PM QoS target and
 * their resume latency limits), turbo (intel_pstate/no_turbo, cpufreq/boost), pstate
 * (intel_pstate or amd_pstate's mode, else the cpufreq driver), governor, tsc (constant_tsc and
 * nonstop_tsc in proc/cpuinfo), clocksource, tsc_watchdog (tsc=reliable on the command line),
 * nmi_watchdog, irqbalance (running, and the CPUs it is banned from), thp, preempt (PREEMPT_RT:
 * sys/kernel/realtime, the kernel's version string) and nx_huge_pages (kvm's parameter). A
 * verdict is "ok", "warn" or "bad"; the fixes are audit-advice.c's (audit_advice_hardware()),
 * the profile settings they name checked against the shipped profiles. */

#include <jansson.h>
#include <stdbool.h>

#include "cpu-set.h"
#include "root.h"

/* What the host is: for the report's heading, the SMI counter and the TSC. */
typedef struct HardwareHost {
        char *hostname;
        char *release; /* uname -r */
        char *version; /* uname -v */
        char *vendor;  /* vendor_id of proc/cpuinfo: "GenuineIntel" */
        char *model;   /* model name */
        char *flags;   /* the first CPU's flags, space-separated */
        bool virtual;  /* the "hypervisor" flag */
} HardwareHost;

int hardware_host(Root *root, HardwareHost *ret);
void hardware_host_done(HardwareHost *h);
/* {"hostname", "kernel", "version", "cpu", "vendor", "virtual"}. */
json_t *hardware_host_json(const HardwareHost *h);

/* The settings as the host shows them for cpus: [{"id", "setting", "found", "verdict", "fix"}]. */
int hardware_settings(Root *root, const HardwareHost *h, const CpuSet *cpus, json_t **ret);

/* The check hardware document: {"host", "cpus", "source", "settings", "settings_verdict" (the
 * worst), "hwlat" (hwlat_document(), or {"ran": false, "reason"}), "smi", "verdict"}. The verdict
 * is "over" when hwlat found a gap above the limit or a setting is bad, "incomplete" when hwlat
 * did not run, else "within". hwlat, smi and settings are taken. */
int hardware_document(const HardwareHost *h, const char *cpus, const char *source, json_t *settings, json_t *hwlat,
                      json_t *smi, json_t **ret);
