/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* VmAdd, VmRemove, VmList: the ledger of which VM holds which isolated CPUs (lib/ledger), changed
 * under the journal's lock, its VMs placed on the applied profile's split. */
#include <stdio.h>
#include <stdlib.h>

#include "ledger.h"
#include "manager-internal.h"
#include "task.h"

/* A ledger's refusal (a request wrong in itself, a name not there, no room) is the caller's:
 * InvalidArgument; anything else (the file refused, the disk) failed. */
static int ledger_failure(ManagerError *e, Error *le, int r) {
        _cleanup_free_ char *msg = error_format(le, NULL);
        bool caller = r == -EINVAL || r == -EEXIST || r == -ENOENT || r == -ENOSPC;
        return manager_error_set(e, caller ? MANAGER_ERROR_INVALID_ARGUMENT : MANAGER_ERROR_FAILED, r, "%s",
                                 msg ?: strerror(-r));
}

int manager_vm_add(Manager *m, const LedgerRequest *req, json_t **ret, ManagerError *e) {
        _cleanup_(journal_store_unlockp) JournalStore *lock = NULL;
        _cleanup_(prepared_done) Prepared p = {};
        _cleanup_(error_done) Error le = {};
        LedgerSplit split;

        if (!m->journal || !m->journal->profile)
                return manager_error_set(e, MANAGER_ERROR_NOT_APPLIED, -ENOENT,
                                         "no profile is applied: a VM is placed on the applied profile's isolated "
                                         "CPUs; apply one first");
        int r = manager_prepare_journal(m, /* want_plan= */ false, &p, e);
        if (r < 0)
                return r;
        ledger_split_from_resolved(p.resolved->doc, &p.resolved->isolated, &p.resolved->housekeeping, &split);
        if ((r = manager_take_lock(m, &lock, e)) < 0)
                return r;
        r = ledger_add(m->store, p.host, &split, req, ret, &le);
        if (r < 0)
                return ledger_failure(e, &le, r);
        log_info("VM %s reserved", req->name);
        return 0;
}

int manager_vm_remove(Manager *m, const char *name, json_t **ret, ManagerError *e) {
        _cleanup_(journal_store_unlockp) JournalStore *lock = NULL;
        _cleanup_(error_done) Error le = {};
        int r = manager_take_lock(m, &lock, e);
        if (r < 0)
                return r;
        r = ledger_remove(m->store, name, ret, &le);
        if (r < 0)
                return ledger_failure(e, &le, r);
        log_info("VM %s removed from the ledger", name);
        return 0;
}

int manager_vm_list(Manager *m, json_t **ret, ManagerError *e) {
        _cleanup_(ledger_freep) Ledger *l = NULL;
        _cleanup_(error_done) Error le = {};
        int r = ledger_load(m->store, &l, &le);
        if (r < 0)
                return ledger_failure(e, &le, r);
        *ret = ledger_to_json_running(l, m->root);
        return *ret ? 0 : -ENOMEM;
}

/* ---- running VMs: their vCPU threads on the ledger's CPUs ---- */

Ledger *manager_vm_ledger(Manager *m) {
        _cleanup_(error_done) Error le = {};
        Ledger *l = NULL;
        int r = ledger_load(m->store, &l, &le);
        if (r < 0) {
                _cleanup_free_ char *msg = error_format(&le, NULL);
                log_warning("Cannot read the ledger: %s; VMs' vCPU threads are not checked", msg ?: strerror(-r));
                return NULL;
        }
        if (l->n_vms == 0)
                return ledger_free(l);
        return l;
}

int manager_vm_task(Manager *m, const Ledger *l, const Task *t, DriftEntry *ret) {
        LedgerVcpuThread v;
        CpuSet want = {};
        if (t->kernel || ledger_vcpu_thread(l, m->root, t->pid, t->comm, &v) <= 0)
                return 0;
        if (v.cpu >= 0)
                cpu_set_add(&want, (unsigned) v.cpu);
        if (v.cpu >= 0 && cpu_set_equal(&want, &t->cpus_allowed))
                return 1;
        _cleanup_free_ char *cpus = cpu_set_format_list(&t->cpus_allowed), *actual = NULL, *knob = NULL;
        _cleanup_free_ char *expected = NULL, *domain = strdup("vm");
        if (!cpus || !domain || asprintf(&knob, "task/%d", t->pid) < 0 ||
            asprintf(&actual, "%s (%s of VM %s)", cpus, t->comm, v.vm->name) < 0 ||
            (v.cpu >= 0 ? asprintf(&expected, "%d", v.cpu) : asprintf(&expected, "(vCPU %u not reserved)", v.vcpu)) < 0)
                return -ENOMEM;
        *ret = (DriftEntry) {
                .knob = TAKE_PTR(knob),
                .domain = TAKE_PTR(domain),
                .expected = TAKE_PTR(expected),
                .actual = TAKE_PTR(actual),
        };
        return 2;
}

bool manager_vm_correct(Manager *m, int tid, const char *expected) {
        CpuSet want;
        if (cpu_set_parse_list(expected, &want, NULL) < 0 || cpu_set_is_empty(&want))
                return false; /* a vCPU the ledger has no CPU for: only reported */
        int r = root_set_affinity(m->root, tid, &want);
        if (r < 0) {
                (void) log_warning_errno(r, "Cannot move vCPU thread %d to CPU %s: %m", tid, expected);
                return false;
        }
        log_notice("Corrected: vCPU thread %d moved to CPU %s", tid, expected);
        return true;
}

int manager_vm_threads(Manager *m, const Ledger *l, int **tids, size_t *n) {
        _cleanup_free_ LedgerRunning *run = NULL;
        size_t k = 0;
        int r = ledger_running(l, m->root, &run, &k);
        if (r < 0)
                return r;
        int *p = realloc(*tids, (*n + k + 1) * sizeof(int));
        if (!p)
                return -ENOMEM;
        *tids = p;
        for (size_t i = 0; i < k; i++)
                (*tids)[(*n)++] = run[i].tid;
        return 0;
}
