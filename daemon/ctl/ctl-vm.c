/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "ledger.h"

/* vm add, vm remove, vm list: the ledger of which VM holds which isolated CPUs, through rtpartd
 * (VmAdd, VmRemove, VmList) when it runs, else on the host directly under the journal's lock. */

/* A refusal of the ledger's (the request's fault: a name taken, no room) is bad usage; the rest
 * (the file refused, the disk) failed. */
static int ledger_failure(const char *what, Error *e, int r) {
        _cleanup_free_ char *msg = error_format(e, NULL);
        if (r == -EINVAL || r == -EEXIST || r == -ENOENT || r == -ENOSPC) {
                log_error("%s", msg ?: strerror(-r));
                return EXIT_USAGE;
        }
        return log_error_errno(r, "%s: %s", what, msg ?: strerror(-r));
}

static int local_add(Root *root, JournalStore *journal, const char *name, json_t **ret_doc) {
        _cleanup_(prepared_done) Prepared p = {};
        _cleanup_(journal_freep) Journal *j = NULL;
        _cleanup_(error_done) Error e = {};
        LedgerSplit split;
        LedgerRequest req = { .name = name,
                              .n_vcpus = arg_vcpus,
                              .node = arg_node,
                              .emulator_policy = ledger_emulator_from_string(arg_emulator ?: "share"),
                              .cache_percent = arg_cache,
                              .hugepages = arg_hugepages };

        int r = journal_store_load(journal, &j, &e);
        if (r < 0)
                return ledger_failure("cannot read the journal", &e, r);
        if (!j->profile) {
                log_error("no profile is applied: a VM is placed on the applied profile's isolated CPUs; apply one "
                          "first (rtpartctl apply PROFILE)");
                return EXIT_USAGE;
        }
        r = ctl_prepare_applied(root, NULL, /* flags= */ 0, &p);
        if (r != 0)
                return r;
        ledger_split_from_resolved(p.resolved->doc, &p.resolved->isolated, &p.resolved->housekeeping, &split);
        if ((r = ctl_take_lock(journal)) < 0)
                return r;
        r = ledger_add(journal, p.host, &split, &req, ret_doc, &e);
        return r < 0 ? ledger_failure("cannot record the VM", &e, r) : 0;
}

static int local_remove(Root *root, JournalStore *journal, const char *name, json_t **ret_doc) {
        _cleanup_(error_done) Error e = {};
        int r = ctl_take_lock(journal);
        if (r < 0)
                return r;
        r = ledger_remove(journal, name, ret_doc, &e);
        return r < 0 ? ledger_failure("cannot remove the VM", &e, r) : 0;
}

static int local_list(Root *root, JournalStore *journal, const char *arg, json_t **ret_doc) {
        _cleanup_(ledger_freep) Ledger *l = NULL;
        _cleanup_(error_done) Error e = {};
        int r = ledger_load(journal, &l, &e);
        if (r < 0)
                return ledger_failure("cannot read the ledger", &e, r);
        *ret_doc = ledger_to_json_running(l, root);
        return *ret_doc ? 0 : log_oom();
}

static int render_vm(json_t *vm, const char *done) {
        if (arg_json)
                return render_json(vm);
        const char *nodes = strempty(jstr(vm, "nodes"));
        printf("%s %s: %zu vCPUs on CPUs %s (node%s %s), holding %s; emulator on %s (%s)\n", done, jstr(vm, "name"),
               jsize(vm, "vcpus"), jstr(vm, "cpus"), strpbrk(nodes, ",-") ? "s" : "", nodes, jstr(vm, "reserved"),
               jstr(vm, "emulator"), jstr(vm, "emulator_policy"));
        return 0;
}

static int render_vm_list(json_t *doc) {
        json_t *vms = json_object_get(doc, "vms"), *vm;
        size_t i;
        if (arg_json)
                return render_json(doc);
        if (json_array_size(vms) == 0) {
                printf("No VM in the ledger.\n");
                return 0;
        }
        printf("%-20s %5s %-16s %-5s %-16s %-8s %5s %-9s %s\n", "NAME", "VCPUS", "CPUS", "NODES", "EMULATOR", "POLICY",
               "CACHE", "HUGEPAGES", "RUNNING");
        json_array_foreach (vms, i, vm) {
                json_t *threads = json_object_get(vm, "vcpu_threads"), *t;
                size_t k, drifted = 0;
                json_array_foreach (threads, k, t)
                        drifted += jtrue(t, "drift");
                printf("%-20s %5zu %-16s %-5s %-16s %-8s %4zu%% %-9s %s\n", jstr(vm, "name"), jsize(vm, "vcpus"),
                       jstr(vm, "cpus"), jstr(vm, "nodes"), jstr(vm, "emulator"), jstr(vm, "emulator_policy"),
                       jsize(vm, "cache_percent"), jstr(vm, "hugepages") ?: "-",
                       json_array_size(threads) == 0 ? "no"
                               : drifted             ? "drift"
                                                     : "yes");
                json_array_foreach (threads, k, t)
                        if (jtrue(t, "drift"))
                                printf("  vCPU %zu (thread %zu) may run on CPUs %s, not its CPU\n", jsize(t, "vcpu"),
                                       jsize(t, "tid"), jstr(t, "cpus"));
        }
        return 0;
}

/* VmAdd's parameters, from the options. */
static json_t *add_params(const char *name) {
        json_t *p =
                json_pack("{s:s, s:i, s:i, s:s, s:i}", "name", name, "vcpus", (json_int_t) arg_vcpus, "node",
                          (json_int_t) arg_node, "emulator", arg_emulator ?: "share", "cache", (json_int_t) arg_cache);
        if (p && arg_hugepages && json_object_set_new(p, "hugepages", json_string(arg_hugepages)) < 0)
                return json_decref(p), NULL;
        return p;
}

int verb_vm(int argc, char **argv) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_(json_decrefp) json_t *doc = NULL, *params = NULL;
        const char *sub = argv[1], *name = argc > 2 ? argv[2] : NULL;
        bool add = streq(sub, "add"), remove = streq(sub, "remove"), list = streq(sub, "list");

        if (!add && !remove && !list) {
                log_error("vm takes add, remove or list, not '%s'", sub);
                return EXIT_USAGE;
        }
        if (list ? name != NULL : name == NULL) {
                log_error(list ? "vm list takes no NAME" : "vm %s needs the VM's NAME", sub);
                return EXIT_USAGE;
        }
        if (add && arg_vcpus == 0) {
                log_error("vm add needs --vcpus N, the number of vCPUs to reserve CPUs for");
                return EXIT_USAGE;
        }
        if (!add && (arg_vcpus || arg_node >= 0 || arg_emulator || arg_cache || arg_hugepages)) {
                log_error("vm %s takes no --vcpus, --node, --emulator, --cache nor --hugepages (vm add's)", sub);
                return EXIT_USAGE;
        }
        int r = ctl_open_root(&root);
        if (r != 0)
                return r;
        params = add ? add_params(name) : name ? json_pack("{s:s}", "name", name) : NULL;
        if ((add || remove) && !params)
                return log_oom();
        r = ctl_get_document_params(root,
                                    add              ? "VmAdd"
                                            : remove ? "VmRemove"
                                                     : "VmList",
                                    params, name,
                                    add              ? local_add
                                            : remove ? local_remove
                                                     : local_list,
                                    &doc);
        if (r != 0)
                return r;
        return list ? render_vm_list(doc) : render_vm(doc, add ? "Reserved" : "Removed");
}
