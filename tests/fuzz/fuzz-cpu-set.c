/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target for CPU lists, CPU masks and CPU expressions. The first byte picks what the
 * rest is: 0 a list, 1 a mask, 2 a CPU expression on a 16-CPU 2-node host. What must hold:
 *   - a list that parses formats to a canonical list that parses to the same set, and formats to
 *     itself again; the same set survives the trip through the mask form;
 *   - a mask that parses survives the trip through the list form, and its mask form parses back;
 *   - an expression's set is online CPUs only (every selector is), and one that fails says why. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu-set.h"
#include "host.h"
#include "profile.h"

static void check_round_trip(const CpuSet *s) {
        _cleanup_free_ char *list = cpu_set_format_list(s);
        CpuSet back;
        if (!list || cpu_set_parse_list(list, &back, NULL) < 0 || !cpu_set_equal(s, &back))
                abort();
        _cleanup_free_ char *again = cpu_set_format_list(&back);
        if (!again || strcmp(list, again) != 0)
                abort();

        int last = cpu_set_last(s);
        _cleanup_free_ char *mask = cpu_set_format_mask(s, last < 0 ? 1 : (unsigned) last + 1);
        if (!mask || cpu_set_parse_mask(mask, &back, NULL) < 0 || !cpu_set_equal(s, &back))
                abort();
        unsigned n = 0;
        CPU_SET_FOREACH (c, s)
                n++;
        if (n != cpu_set_count(s) || cpu_set_is_empty(s) != (n == 0))
                abort();
}

static Host host;
static HostCpu cpus[16];
static CpuSet nodes[2];
static CacheDomain l3[2];

static void setup(void) {
        cpu_set_add_range(&host.online, 0, 15);
        host.possible = host.present = host.online;
        host.n_cpu_ids = 16;
        for (int c = 0; c < 16; c++) {
                cpus[c] = (HostCpu) {
                        .core = c % 8, .package = c % 8 < 4 ? 0 : 1, .node = c % 8 < 4 ? 0 : 1, .l3 = c % 8 < 4 ? 0 : 1
                };
                cpu_set_add(&nodes[cpus[c].node], (unsigned) c);
                cpu_set_add(&l3[cpus[c].l3].cpus, (unsigned) c);
        }
        l3[1].id = 1;
        host.cpus = cpus;
        host.nodes = nodes;
        host.n_nodes = 2;
        host.numa = true;
        host.l3 = l3;
        host.n_l3 = 2;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size < 1 || size > 4096)
                return 0;
        if (host.n_cpu_ids == 0)
                setup();
        _cleanup_free_ char *s = strndup((const char *) data + 1, size - 1);
        if (!s)
                return 0;
        CpuSet set;
        CpuSetError err = {};

        switch (data[0] % 3) {
        case 0:
                if (cpu_set_parse_list(s, &set, &err) >= 0)
                        check_round_trip(&set);
                else if (!err.reason || err.pos > strlen(s))
                        abort();
                break;
        case 1:
                if (cpu_set_parse_mask(s, &set, &err) >= 0)
                        check_round_trip(&set);
                else if (!err.reason || err.pos > strlen(s))
                        abort();
                break;
        case 2: {
                CpuSet iso = {}, hk = {};
                cpu_set_add_range(&hk, 0, 1);
                cpu_set_add_range(&hk, 8, 9);
                iso = host.online;
                cpu_set_andnot(&iso, &hk);
                _cleanup_free_ char *msg = NULL;
                bool classes = strlen(s) % 2; /* with and without the classes defined */
                int k = cpu_expr_parse(s, &host, classes ? &iso : NULL, classes ? &hk : NULL, &set, &msg);
                if (k >= 0 && !cpu_set_is_subset(&set, &host.online))
                        abort();
                if (k == -EINVAL && !msg)
                        abort();
                if (k >= 0)
                        check_round_trip(&set);
                break;
        }
        }
        return 0;
}
