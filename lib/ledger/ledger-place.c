/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Where a new VM goes: free isolated cores (or CPUs), on one NUMA node whenever one has room. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger.h"
#include "strv.h"

/* What a VM is placed in: a whole core (the isolated CPUs of it), or one isolated CPU when the
 * profile lets siblings be split. */
typedef struct Unit {
        CpuSet cpus;
        unsigned first; /* the CPU a vCPU runs on */
        unsigned node;
} Unit;

typedef struct Units {
        Unit *units; /* free ones, in CPU order */
        size_t n;
        unsigned n_nodes;   /* node ids + 1 */
        unsigned *per_node; /* free units per node, n_nodes long */
} Units;

static void units_done(Units *u) {
        free(u->units);
        free(u->per_node);
        *u = (Units) {};
}

static unsigned cpu_node(const Host *h, unsigned cpu) {
        return cpu < h->n_cpu_ids && h->cpus[cpu].node >= 0 ? (unsigned) h->cpus[cpu].node : 0;
}

static unsigned cpu_core(const Host *h, unsigned cpu) {
        return cpu < h->n_cpu_ids && h->cpus[cpu].core >= 0 ? (unsigned) h->cpus[cpu].core : cpu;
}

/* The free units of the split, none of whose CPUs another VM holds. */
static int units_free(const Host *h, const LedgerSplit *split, const CpuSet *held, Units *ret) {
        Units u = { .n_nodes = h->n_nodes ?: 1 };
        CpuSet seen = {};
        u.units = calloc(cpu_set_count(&split->isolated) ?: 1, sizeof(Unit));
        u.per_node = calloc(u.n_nodes, sizeof(unsigned));
        if (!u.units || !u.per_node) {
                units_done(&u);
                return -ENOMEM;
        }
        /* Core by core: split siblings are consecutive units, so a VM fills a core before the next. */
        CPU_SET_FOREACH (c, &split->isolated) {
                if (cpu_set_has(&seen, (unsigned) c))
                        continue;
                CpuSet core = {};
                CPU_SET_FOREACH (s, &split->isolated)
                        if (cpu_core(h, (unsigned) s) == cpu_core(h, (unsigned) c))
                                cpu_set_add(&core, (unsigned) s);
                cpu_set_or(&seen, &core);
                CPU_SET_FOREACH (s, &core) {
                        Unit unit = { .first = (unsigned) s, .node = cpu_node(h, (unsigned) s) };
                        if (split->split_siblings)
                                cpu_set_add(&unit.cpus, (unsigned) s);
                        else
                                unit.cpus = core; /* the core's other isolated CPUs come with it */
                        if (!cpu_set_intersects(&unit.cpus, held) && unit.node < u.n_nodes) {
                                u.units[u.n++] = unit;
                                u.per_node[unit.node]++;
                        }
                        if (!split->split_siblings)
                                break;
                }
        }
        *ret = u;
        return 0;
}

/* "node 0: 1 (CPUs 7), node 1: 2 (CPUs 13,15)", or "none". */
static char *describe_free(const Units *u) {
        char *out = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&out, &size);
        if (!f)
                return NULL;
        bool any = false;
        for (unsigned node = 0; node < u->n_nodes; node++) {
                CpuSet cpus = {};
                if (u->per_node[node] == 0)
                        continue;
                for (size_t i = 0; i < u->n; i++)
                        if (u->units[i].node == node)
                                cpu_set_add(&cpus, u->units[i].first);
                _cleanup_free_ char *list = cpu_set_format_list(&cpus);
                fprintf(f, "%snode %u: %u (CPUs %s)", any ? ", " : "", node, u->per_node[node], strempty(list));
                any = true;
        }
        if (!any)
                fputs("none", f);
        return fclose(f) == 0 ? out : (free(out), NULL);
}

static int refuse_full(const Units *u, const LedgerSplit *split, const LedgerRequest *req, unsigned need, Error *e) {
        _cleanup_free_ char *where = describe_free(u);
        const char *what = split->split_siblings ? "CPUs" : "cores";
        unsigned total = (unsigned) u->n;
        if (!where)
                return -ENOMEM;
        if (req->node >= 0)
                return error_set(e, -ENOSPC, NULL, NULL,
                                 "vm %s: %u vCPUs%s need %u free isolated %s on node %d, which has %u; %u %s are "
                                 "free in all (%s); give another --node, fewer --vcpus, or remove a VM (rtpartctl vm "
                                 "remove)",
                                 req->name, req->n_vcpus,
                                 req->emulator_policy == LEDGER_EMULATOR_ISOLATE ? " and an isolated emulator" : "",
                                 need, what, req->node, u->per_node[req->node], total, what, where);
        unsigned fit = total > need - req->n_vcpus ? total - (need - req->n_vcpus) : 0;
        char fewer[64] = "";
        if (fit > 0)
                snprintf(fewer, sizeof(fewer), "give --vcpus %u or fewer, ", fit);
        return error_set(e, -ENOSPC, NULL, NULL,
                         "vm %s: %u vCPUs%s need %u free isolated %s%s; %u are free (%s); %sremove a VM (rtpartctl vm "
                         "remove), or isolate more CPUs (cpus.isolated)",
                         req->name, req->n_vcpus,
                         req->emulator_policy == LEDGER_EMULATOR_ISOLATE ? " and an isolated emulator" : "", need, what,
                         split->split_siblings ? "" : " (a core per vCPU: cpus.vcpu_siblings is \"apart\")", total,
                         where, fewer);
}

/* The nodes in the order they are filled: node alone when asked; else the lowest-numbered one
 * with room for all; else those with the most free units first. */
static void node_order(const Units *u, const LedgerRequest *req, unsigned need, unsigned *order, unsigned *ret_n) {
        if (req->node >= 0) {
                order[0] = (unsigned) req->node;
                *ret_n = 1;
                return;
        }
        for (unsigned node = 0; node < u->n_nodes; node++)
                if (u->per_node[node] >= need) {
                        order[0] = node;
                        *ret_n = 1;
                        return;
                }
        unsigned n = 0;
        for (unsigned node = 0; node < u->n_nodes; node++)
                if (u->per_node[node] > 0)
                        order[n++] = node;
        /* An insertion sort: most free first, the lower node first among equals. */
        for (unsigned i = 1; i < n; i++)
                for (unsigned j = i; j > 0 && u->per_node[order[j]] > u->per_node[order[j - 1]]; j--) {
                        unsigned t = order[j];
                        order[j] = order[j - 1];
                        order[j - 1] = t;
                }
        *ret_n = n;
}

static int check_request(const Ledger *l, const Host *h, const LedgerSplit *split, const LedgerRequest *req, Error *e) {
        unsigned cache = req->cache_percent;
        if (!ledger_name_is_valid(req->name))
                return error_set(e, -EINVAL, NULL, NULL,
                                 "'%s' is no VM name: give 1 to %d letters, digits, '_', '.', '+' or '-', not "
                                 "starting with '.' or '-'",
                                 strempty(req->name), LEDGER_NAME_MAX);
        if (ledger_find(l, req->name))
                return error_set(e, -EEXIST, NULL, NULL,
                                 "vm %s is in the ledger already; remove it first (rtpartctl vm remove %s)", req->name,
                                 req->name);
        if (req->n_vcpus == 0)
                return error_set(e, -EINVAL, NULL, NULL, "vm %s: --vcpus must be 1 or more", req->name);
        CpuSet node_cpus;
        if (req->node >= 0 && !(h->numa ? host_node_cpus(h, (unsigned) req->node, &node_cpus) : req->node == 0))
                return error_set(e, -EINVAL, NULL, NULL, "vm %s: the host has no NUMA node %d (it has %u)", req->name,
                                 req->node, h->n_nodes ?: 1);
        if (req->emulator_policy == LEDGER_EMULATOR_SHARE && cpu_set_is_empty(&split->housekeeping))
                return error_set(e, -EINVAL, NULL, NULL,
                                 "vm %s: the profile leaves no housekeeping CPU for the emulator; give --emulator "
                                 "isolate",
                                 req->name);
        for (size_t i = 0; l && i < l->n_vms; i++)
                cache += l->vms[i].cache_percent;
        if (cache > 100)
                return error_set(e, -EINVAL, NULL, NULL,
                                 "vm %s: --cache %u%% is more than the %u%% of the guests' L3 share other VMs leave",
                                 req->name, req->cache_percent, 100 - (cache - req->cache_percent));
        return 0;
}

static int emulator_shared(const Host *h, const LedgerSplit *split, LedgerVm *vm) {
        CpuSet node_cpus;
        cpu_set_zero(&vm->emulator);
        CPU_SET_FOREACH (node, &vm->nodes)
                if (!h->numa || host_node_cpus(h, (unsigned) node, &node_cpus)) {
                        if (!h->numa)
                                node_cpus = h->online;
                        cpu_set_and(&node_cpus, &split->housekeeping);
                        cpu_set_or(&vm->emulator, &node_cpus);
                }
        if (cpu_set_is_empty(&vm->emulator))
                vm->emulator = split->housekeeping;
        return 0;
}

int ledger_place(const Ledger *l, const Host *h, const LedgerSplit *split, const LedgerRequest *req, LedgerVm *ret,
                 Error *e) {
        _cleanup_(units_done) Units u = {};
        _cleanup_(ledger_vm_done) LedgerVm vm = {};
        _cleanup_free_ unsigned *order = NULL;
        unsigned need = req->n_vcpus + (req->emulator_policy == LEDGER_EMULATOR_ISOLATE), n_order = 0, got = 0;
        CpuSet held, emulator = {};

        int r = check_request(l, h, split, req, e);
        if (r < 0)
                return r;
        ledger_reserved(l, &held);
        if ((r = units_free(h, split, &held, &u)) < 0)
                return r;
        if (!(order = calloc(u.n_nodes, sizeof(unsigned))))
                return -ENOMEM;
        if (req->node >= 0 ? u.per_node[req->node] < need : u.n < need)
                return refuse_full(&u, split, req, need, e);
        node_order(&u, req, need, order, &n_order);

        vm = (LedgerVm) { .n_vcpus = req->n_vcpus,
                          .emulator_policy = req->emulator_policy,
                          .cache_percent = req->cache_percent };
        vm.vcpu_cpus = calloc(req->n_vcpus, sizeof(unsigned));
        vm.name = strdup(req->name);
        vm.added = journal_now_iso8601();
        if (!vm.vcpu_cpus || !vm.name || !vm.added)
                return -ENOMEM;
        if (req->hugepages && (r = ledger_hugepages_normalize(req->hugepages, &vm.hugepages)) < 0)
                return r == -ENOMEM
                        ? r
                        : error_set(e, -EINVAL, NULL, NULL, "vm %s: '%s' is no huge page size; give e.g. 2M or 1G",
                                    req->name, req->hugepages);
        for (unsigned k = 0; k < n_order && got < need; k++)
                for (size_t i = 0; i < u.n && got < need; i++) {
                        const Unit *unit = &u.units[i];
                        if (unit->node != order[k])
                                continue;
                        cpu_set_or(&vm.reserved, &unit->cpus);
                        if (got < req->n_vcpus) {
                                cpu_set_add(&vm.nodes, unit->node);
                                vm.vcpu_cpus[got] = unit->first;
                        } else
                                emulator = unit->cpus; /* the last unit: the isolated emulator's */
                        got++;
                }
        /* vCPU i on the i-th CPU in ascending order, as the document lists them. */
        for (unsigned i = 1; i < vm.n_vcpus; i++)
                for (unsigned j = i; j > 0 && vm.vcpu_cpus[j] < vm.vcpu_cpus[j - 1]; j--) {
                        unsigned t = vm.vcpu_cpus[j];
                        vm.vcpu_cpus[j] = vm.vcpu_cpus[j - 1];
                        vm.vcpu_cpus[j - 1] = t;
                }
        if (req->emulator_policy == LEDGER_EMULATOR_ISOLATE)
                vm.emulator = emulator;
        else
                (void) emulator_shared(h, split, &vm);
        *ret = vm;
        vm = (LedgerVm) {};
        return 0;
}

void ledger_split_from_resolved(const json_t *doc, const CpuSet *isolated, const CpuSet *housekeeping,
                                LedgerSplit *ret) {
        const char *sib = json_string_value(json_object_get(json_object_get(doc, "cpus"), "vcpu_siblings"));
        *ret = (LedgerSplit) { .isolated = *isolated,
                               .housekeeping = *housekeeping,
                               .split_siblings = streq_ptr(sib, "together") };
}
