/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A VM of the ledger as the export takes a guest's share of the host. */
#include <stdlib.h>
#include <string.h>

#include "export-ledger.h"

/* "2M", "1G", "64kB" (the ledger's form) in KiB; 0 for anything else. */
static uint64_t size_kib(const char *s) {
        char *end;
        uint64_t n = s ? strtoull(s, &end, 10) : 0;
        if (!s || end == s)
                return 0;
        return streq(end, "G") ? n << 20 : streq(end, "M") ? n << 10 : streq(end, "kB") ? n : 0;
}

int export_reservation_from_vm(const ExportSplit *s, const LedgerVm *vm, ExportReservation *ret) {
        ExportReservation r = {
                .n_vcpus = vm->n_vcpus,
                .nodes = vm->nodes,
                .emulator = vm->emulator,
                .hugepage_kib = vm->hugepages ? size_kib(vm->hugepages) : s->huge.default_kb,
        };
        r.cpus = malloc(vm->n_vcpus * sizeof(unsigned));
        if (!r.cpus)
                return -ENOMEM;
        memcpy(r.cpus, vm->vcpu_cpus, vm->n_vcpus * sizeof(unsigned));
        /* Its percentage of the ways kept for guests, on the cache that has the fewest free. */
        unsigned fewest = 0;
        for (size_t i = 0; i < s->n_caches; i++) {
                unsigned n = (unsigned) __builtin_popcountll(s->caches[i].ways);
                if (i == 0 || n < fewest)
                        fewest = n;
        }
        if (vm->cache_percent > 0 && fewest > 0)
                r.cache_ways = MAX(1U, fewest * vm->cache_percent / 100);
        *ret = r;
        return 0;
}
