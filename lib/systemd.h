/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What rtpart asks of systemd over its D-Bus API, where systemd owns the cgroup tree. */

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

/* The "ay" systemd uses for CPU sets (cpu_set_to_dbus()): bit c%8 of byte c/8 is CPU c; as many
 * bytes as the highest CPU needs, none for the empty set. */
int systemd_cpu_set_to_bytes(const CpuSet *cpus, uint8_t **ret, size_t *ret_n);
