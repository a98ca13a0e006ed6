/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The running VMs of the ledger: a qemu process whose -name guest=NAME is a VM of the ledger, and
 * its vCPU threads, each expected on the CPU the ledger gives its vCPU. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger.h"
#include "task.h"

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

int ledger_running(const Ledger *l, Root *root, LedgerRunning **ret, size_t *ret_n) {
        LedgerRunning *out = NULL;
        size_t n = 0;
        DIR *d = NULL;
        int r = root_opendir(root, "proc", &d);
        if (r < 0)
                return r;
        for (struct dirent *de; r >= 0 && (de = readdir(d));) {
                _cleanup_free_ char *cmdline = NULL, *guest = NULL;
                size_t size;
                char rel[64];
                int pid = atoi(de->d_name);
                if (pid <= 0)
                        continue;
                snprintf(rel, sizeof(rel), "proc/%d/cmdline", pid);
                if (root_read_file(root, rel, &cmdline, &size) < 0 ||
                    ledger_guest_parse_cmdline(cmdline, size, &guest) < 0 || !ledger_find(l, guest))
                        continue;
                snprintf(rel, sizeof(rel), "proc/%d/task", pid);
                DIR *td = NULL;
                if (root_opendir(root, rel, &td) < 0)
                        continue;
                for (struct dirent *te; r >= 0 && (te = readdir(td));) {
                        Task t = {};
                        LedgerVcpuThread v;
                        int tid = atoi(te->d_name);
                        if (tid <= 0 || task_read(root, tid, &t) < 0)
                                continue;
                        if (ledger_vcpu_thread(l, root, tid, t.comm, &v) > 0) {
                                LedgerRunning *o = realloc(out, (n + 1) * sizeof(LedgerRunning));
                                if (!o)
                                        r = -ENOMEM;
                                else {
                                        out = o;
                                        out[n++] = (LedgerRunning) { .vm = v.vm,
                                                                     .vcpu = v.vcpu,
                                                                     .cpu = v.cpu,
                                                                     .tid = tid,
                                                                     .cpus = t.cpus_allowed };
                                }
                        }
                        task_done(&t);
                }
                closedir(td);
        }
        closedir(d);
        if (r < 0) {
                free(out);
                return r;
        }
        *ret = out;
        *ret_n = n;
        return 0;
}

bool ledger_running_drifted(const LedgerRunning *t) {
        CpuSet want = {};
        if (t->cpu < 0)
                return true;
        cpu_set_add(&want, (unsigned) t->cpu);
        return !cpu_set_equal(&want, &t->cpus);
}

json_t *ledger_to_json_running(const Ledger *l, Root *root) {
        _cleanup_(json_decrefp) json_t *doc = ledger_to_json(l);
        _cleanup_free_ LedgerRunning *run = NULL;
        size_t n = 0;
        if (!doc)
                return NULL;
        if (ledger_running(l, root, &run, &n) < 0)
                n = 0; /* what runs cannot be told here: the ledger alone */
        json_t *vms = json_object_get(doc, "vms");
        for (size_t i = 0; i < l->n_vms; i++) {
                json_t *threads = json_array(), *vm = json_array_get(vms, i);
                if (!threads || json_object_set_new(vm, "vcpu_threads", threads) < 0)
                        return NULL;
                for (size_t k = 0; k < n; k++) {
                        if (run[k].vm != &l->vms[i])
                                continue;
                        _cleanup_free_ char *cpus = cpu_set_format_list(&run[k].cpus);
                        json_t *o = json_pack("{s:i, s:i, s:s, s:b}", "vcpu", (json_int_t) run[k].vcpu, "tid",
                                              (json_int_t) run[k].tid, "cpus", strempty(cpus), "drift",
                                              ledger_running_drifted(&run[k]));
                        if (!o || json_array_append_new(threads, o) < 0)
                                return NULL;
                }
        }
        return TAKE_PTR(doc);
}
