/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The running VMs of the ledger: a qemu process whose -name guest=NAME is a VM of the ledger, and
 * its vCPU threads, each expected on the CPU the ledger gives its vCPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger.h"

int ledger_vcpu_parse_comm(const char *comm, unsigned *ret) {
        /* qemu names a vCPU thread "CPU %d/%s" with the accelerator's name (KVM, TCG) when started
         * with -name ...,debug-threads=on, as libvirt starts it. */
        const char *p = startswith(comm, "CPU ") ? comm + 4 : NULL;
        char *end;
        if (!p || *p < '0' || *p > '9')
                return -EINVAL;
        unsigned long n = strtoul(p, &end, 10);
        if (*end != '/' || !end[1] || n > 65535)
                return -EINVAL;
        *ret = (unsigned) n;
        return 0;
}

/* qemu's -name value: "guest=NAME,debug-threads=on" or "NAME" (a comma doubled stands for one). */
static int name_value(const char *v, char **ret) {
        const char *p = startswith(v, "guest=") ? v + 6 : v;
        char *out = malloc(strlen(p) + 1), *o = out;
        if (!out)
                return -ENOMEM;
        for (; *p; p++) {
                if (*p == ',' && p[1] != ',')
                        break;
                if (*p == ',')
                        p++;
                *o++ = *p;
        }
        *o = 0;
        *ret = out;
        return 0;
}

int ledger_guest_parse_cmdline(const char *buf, size_t size, char **ret) {
        const char *end = buf + size;
        for (const char *a = buf; a < end; a += strnlen(a, (size_t) (end - a)) + 1) {
                size_t n = strnlen(a, (size_t) (end - a));
                if (a + n >= end)
                        break; /* the last argument, unterminated: no value follows it */
                if (!streq(a, "-name") && !streq(a, "--name"))
                        continue;
                const char *v = a + n + 1;
                if (v >= end || strnlen(v, (size_t) (end - v)) == (size_t) (end - v))
                        return -ENOENT;
                return name_value(v, ret);
        }
        return -ENOENT;
}

int ledger_vcpu_thread(const Ledger *l, Root *root, int tid, const char *comm, LedgerVcpuThread *ret) {
        _cleanup_free_ char *status = NULL, *cmdline = NULL, *guest = NULL;
        unsigned vcpu;
        size_t size;
        char rel[64];

        if (!l || l->n_vms == 0 || !comm || ledger_vcpu_parse_comm(comm, &vcpu) < 0)
                return 0;
        /* The process it is a thread of: its command line names the guest. */
        snprintf(rel, sizeof(rel), "proc/%d/status", tid);
        if (root_read_file(root, rel, &status, NULL) < 0)
                return 0;
        const char *tgid = strstr(status, "\nTgid:");
        if (!tgid)
                return 0;
        snprintf(rel, sizeof(rel), "proc/%d/cmdline", atoi(tgid + 6));
        if (root_read_file(root, rel, &cmdline, &size) < 0 || ledger_guest_parse_cmdline(cmdline, size, &guest) < 0)
                return 0;
        const LedgerVm *vm = ledger_find(l, guest);
        if (!vm)
                return 0;
        *ret = (LedgerVcpuThread) {
                .vm = vm,
                .vcpu = vcpu,
                .cpu = vcpu < vm->n_vcpus ? (int) vm->vcpu_cpus[vcpu] : -1,
        };
        return 1;
}
