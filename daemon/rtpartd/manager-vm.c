/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* VmAdd, VmRemove, VmList: the ledger of which VM holds which isolated CPUs (lib/ledger), changed
 * under the journal's lock, its VMs placed on the applied profile's split. */
#include <stdlib.h>

#include "ledger.h"
#include "manager-internal.h"

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
        *ret = ledger_to_json(l);
        return *ret ? 0 : -ENOMEM;
}
