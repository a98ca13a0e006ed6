/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What rtpart asks of systemd over its D-Bus API: the CPUs of slices, where systemd owns the cgroup
 * tree, and restarting a unit (the kernel's root op, root-kernel.c). The calls load libsystemd the
 * first time (rtpartctl does not link it); where it cannot be loaded they return -EOPNOTSUPP with
 * the loader's reason in *ret_error. */

#include <systemd/sd-bus.h>

#include "cpu-set.h"
#include "root.h"

/* Whether systemd runs on this host and so owns the cgroups of its units: the real root with
 * run/systemd/system (sd_booted()). Under a fake root never: the tree has no systemd to ask. */
bool systemd_owns_cgroups(Root *r);

/* Whether a cgroup name is one of systemd's units ("system.slice", "init.scope", …). */
bool systemd_is_unit_cgroup(const char *name);

/* Sets AllowedCPUs= of a unit: org.freedesktop.systemd1.Manager.SetUnitProperties(unit,
 * runtime=false, [("AllowedCPUs", ay)]), so systemd applies it now and keeps it in
 * /etc/systemd/system.control across reboots and daemon reloads. cpus NULL or empty resets it (all
 * CPUs). bus NULL: the system bus. On failure *ret_error (optional) gets systemd's message. */
int systemd_set_allowed_cpus(sd_bus *bus, const char *unit, const CpuSet *cpus, char **ret_error);

/* Sets a CPU or NUMA node set property of a unit ("AllowedCPUs", "AllowedMemoryNodes"), for now
 * only (runtime) or also across reboots. */
int systemd_set_cpus(sd_bus *bus, const char *unit, const char *property, const CpuSet *cpus, bool runtime,
                     char **ret_error);

/* The slice that stands for the cpuset partition `name` where systemd owns the cgroup tree:
 * `name` escaped as systemd escapes unit names ("rtpart-rt" → "rtpart\x2drt.slice": a '-' would
 * make it the child of another slice, and a partition's parent must be the root) plus ".slice". */
char *systemd_partition_slice(const char *name);

/* Starts the transient slice `unit` with AllowedCPUs= `cpus` (StartTransientUnit): systemd makes
 * its cgroup and writes its cpuset.cpus. When the unit already exists (a unit's Slice= named it),
 * sets its AllowedCPUs= for now and starts it. Returns once systemd accepted the job; the cgroup
 * appears when the job runs. */
int systemd_start_slice(sd_bus *bus, const char *unit, const char *description, const CpuSet *cpus, char **ret_error);

/* TryRestartUnit(unit, "replace"): restarts the unit if it is active; returns once systemd
 * queued the job. */
int systemd_try_restart_unit(sd_bus *bus, const char *unit, char **ret_error);

/* StopUnit(unit, "fail"): systemd removes the unit's cgroup. */
int systemd_stop_unit(sd_bus *bus, const char *unit, char **ret_error);

/* CPUSetPartition= (member|root|isolated) for now, where systemd has the property (from 2026);
 * older systemd refuses it and the caller writes cpuset.cpus.partition itself, the one cpuset file
 * of the slice systemd does not manage there. */
int systemd_set_partition(sd_bus *bus, const char *unit, const char *mode, char **ret_error);

/* The "ay" systemd uses for CPU sets (cpu_set_to_dbus()): bit c%8 of byte c/8 is CPU c; as many
 * bytes as the highest CPU needs, none for the empty set. */
int systemd_cpu_set_to_bytes(const CpuSet *cpus, uint8_t **ret, size_t *ret_n);
