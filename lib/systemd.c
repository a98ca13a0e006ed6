/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdlib.h>
#include <string.h>

#include "systemd.h"

bool systemd_owns_cgroups(Root *r) {
        return r->is_host && root_is_dir(r, "run/systemd/system");
}

bool systemd_is_unit_cgroup(const char *name) {
        static const char * const suffixes[] = { ".slice", ".scope", ".service" };
        size_t n = strlen(name);
        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
                size_t s = strlen(suffixes[i]);
                if (n > s && streq(name + n - s, suffixes[i]))
                        return true;
        }
        return false;
}

int systemd_cpu_set_to_bytes(const CpuSet *cpus, uint8_t **ret, size_t *ret_n) {
        int last = cpus ? cpu_set_last(cpus) : -1;
        size_t n = last < 0 ? 0 : (size_t) last / 8 + 1;
        uint8_t *b = calloc(MAX(n, (size_t) 1), 1);
        if (!b)
                return -ENOMEM;
        if (n > 0)
                CPU_SET_FOREACH(c, cpus)
                        b[c / 8] |= (uint8_t) (1U << (c % 8));
        *ret = b;
        *ret_n = n;
        return 0;
}

int systemd_set_allowed_cpus(sd_bus *bus, const char *unit, const CpuSet *cpus, char **ret_error) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *own = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ uint8_t *bytes = NULL;
        size_t n;
        int k;

        if (!bus) {
                k = sd_bus_open_system(&own);
                if (k < 0)
                        return k;
                bus = own;
        }
        k = systemd_cpu_set_to_bytes(cpus, &bytes, &n);
        if (k < 0)
                return k;
        k = sd_bus_message_new_method_call(bus, &m, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                           "org.freedesktop.systemd1.Manager", "SetUnitProperties");
        if (k >= 0)
                k = sd_bus_message_append(m, "sb", unit, /* runtime= */ 0);
        if (k >= 0)
                k = sd_bus_message_open_container(m, 'a', "(sv)");
        if (k >= 0)
                k = sd_bus_message_open_container(m, 'r', "sv");
        if (k >= 0)
                k = sd_bus_message_append(m, "s", "AllowedCPUs");
        if (k >= 0)
                k = sd_bus_message_open_container(m, 'v', "ay");
        if (k >= 0)
                k = sd_bus_message_append_array(m, 'y', bytes, n);
        for (int i = 0; i < 3 && k >= 0; i++)
                k = sd_bus_message_close_container(m);
        if (k < 0)
                return k;
        k = sd_bus_call(bus, m, 0, &error, &reply);
        if (k < 0 && ret_error && error.message)
                *ret_error = strdup(error.message);
        return k < 0 ? k : 0;
}
