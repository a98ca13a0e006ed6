/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* libvirt's qemu hook (/etc/libvirt/hooks/qemu.d/, libvirt >= 6.5): at "prepare", before a domain
 * starts, its <vcpupin>s are checked against the ledger. A domain of the ledger must pin vCPU i
 * to exactly the CPU the ledger gives it, and every vCPU it has; no domain may pin a vCPU or its
 * emulator onto a CPU another VM of the ledger holds. */

#include <stddef.h>

#include "cpu-set.h"
#include "ledger.h"

typedef struct HookPin {
        unsigned vcpu;
        CpuSet cpus;
} HookPin;

typedef struct HookDomain {
        char *name;
        unsigned vcpus; /* <vcpu>: 0 when absent */
        HookPin *pins;
        size_t n_pins;
        CpuSet emulator; /* <emulatorpin cpuset=>: empty when absent */
} HookDomain;

void hook_domain_done(HookDomain *d);

/* The parts of a domain XML document the check reads: <name>, <vcpu>, <cputune>'s <vcpupin> and
 * <emulatorpin>. -EINVAL with *ret_error ("no <name>", "vcpupin 2: cpuset 'x' is no CPU list")
 * for a document it cannot read so. */
int hook_domain_parse(const char *xml, size_t size, HookDomain *ret, char **ret_error);

/* 0 when the domain may start; -EPERM and *ret_reason (what is wrong and the fix) when not. */
int hook_check(const Ledger *l, const HookDomain *d, char **ret_reason);
