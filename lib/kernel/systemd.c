/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "strv.h"
#include "systemd.h"

/* libsystemd is loaded the first time systemd is asked, not at every start. rtpartctl asks it
 * only where systemd owns the cgroup of a partition's slice, and mapping libsystemd with the six
 * libraries it brings (libcap, libgcrypt, libgpg-error, liblz4, liblzma, libzstd) costs every
 * process about 2 ms before its first knob: a fifth of a whole apply on a real kernel. rtpartd
 * links it (sd-event, sd-bus), and there dlopen() finds it loaded. */
#define LIBSYSTEMD_FUNCTIONS(X) \
        X(sd_bus_open_system) \
        X(sd_bus_flush_close_unref) \
        X(sd_bus_message_new_method_call) \
        X(sd_bus_message_append) \
        X(sd_bus_message_append_array) \
        X(sd_bus_message_open_container) \
        X(sd_bus_message_close_container) \
        X(sd_bus_message_unref) \
        X(sd_bus_call) \
        X(sd_bus_error_free)
#define DECLARE_SYM(f) static __typeof__(f) *sym_##f;
LIBSYSTEMD_FUNCTIONS(DECLARE_SYM)
#undef DECLARE_SYM

/* 0, or -EOPNOTSUPP with the loader's reason in *ret_error (optional). */
static int libsystemd_load(char **ret_error) {
        static bool loaded = false;
        if (loaded)
                return 0;
        /* Kept for the life of the process: the pointers below stay valid. */
        void *dl = dlopen(LIBSYSTEMD_SONAME, RTLD_NOW | RTLD_NODELETE);
        const char *why = dl ? NULL : dlerror() ?: "not found";
#define LOAD_SYM(f) \
        if (!why && !(sym_##f = (__typeof__(f) *) dlsym(dl, #f))) \
                why = dlerror() ?: #f " not found";
        LIBSYSTEMD_FUNCTIONS(LOAD_SYM)
#undef LOAD_SYM
        if (!why) {
                loaded = true;
                return 0;
        }
        if (ret_error && asprintf(ret_error, "asking systemd needs %s: %s", LIBSYSTEMD_SONAME, why) < 0)
                *ret_error = NULL;
        if (dl)
                dlclose(dl);
        return -EOPNOTSUPP;
}

static void bus_closep(sd_bus **bus) {
        if (*bus)
                sym_sd_bus_flush_close_unref(*bus);
}

static void message_unrefp(sd_bus_message **m) {
        if (*m)
                sym_sd_bus_message_unref(*m);
}

static void error_freep(sd_bus_error *e) {
        if (e->name || e->message)
                sym_sd_bus_error_free(e);
}

bool systemd_owns_cgroups(Root *r) {
        return root_can(r, ROOT_CAN_ASK_SYSTEMD) && root_is_dir(r, "run/systemd/system");
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
                CPU_SET_FOREACH (c, cpus)
                        b[c / 8] |= (uint8_t) (1U << (c % 8));
        *ret = b;
        *ret_n = n;
        return 0;
}

char *systemd_partition_slice(const char *name) {
        StrBuf b = {};
        for (const char *p = name; *p; p++) {
                unsigned char ch = (unsigned char) *p;
                if (ch == '/')
                        strbuf_append(&b, "-");
                else if ((ch < 128 && (isalnum(ch) || ch == ':' || ch == '_' || ch == '.')) &&
                         !(ch == '.' && p == name))
                        strbuf_appendf(&b, "%c", ch);
                else
                        strbuf_appendf(&b, "\\x%02x", ch);
        }
        strbuf_append(&b, ".slice");
        return strbuf_steal(&b);
}

/* A call to systemd's manager; *bus NULL: on a system bus connection of its own (*own). */
static int new_call(sd_bus **bus, sd_bus **own, const char *method, sd_bus_message **ret, char **ret_error) {
        int k = libsystemd_load(ret_error);
        if (k < 0)
                return k;
        if (!*bus) {
                k = sym_sd_bus_open_system(own);
                if (k < 0)
                        return k;
                *bus = *own;
        }
        return sym_sd_bus_message_new_method_call(*bus, ret, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                                  "org.freedesktop.systemd1.Manager", method);
}

/* Appends ("Name", <ay>) for a CPU or NUMA node set to an open a(sv). */
static int append_set(sd_bus_message *m, const char *property, const CpuSet *set) {
        _cleanup_free_ uint8_t *bytes = NULL;
        size_t n;
        int k = systemd_cpu_set_to_bytes(set, &bytes, &n);
        if (k >= 0)
                k = sym_sd_bus_message_open_container(m, 'r', "sv");
        if (k >= 0)
                k = sym_sd_bus_message_append(m, "s", property);
        if (k >= 0)
                k = sym_sd_bus_message_open_container(m, 'v', "ay");
        if (k >= 0)
                k = sym_sd_bus_message_append_array(m, 'y', bytes, n);
        for (int i = 0; i < 2 && k >= 0; i++)
                k = sym_sd_bus_message_close_container(m);
        return k;
}

static int call(sd_bus *bus, sd_bus_message *m, char **ret_error, char **ret_error_name) {
        _cleanup_(message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(error_freep) sd_bus_error error = SD_BUS_ERROR_NULL;
        int k = sym_sd_bus_call(bus, m, 0, &error, &reply);
        if (k < 0 && ret_error && error.message)
                *ret_error = strdup(error.message);
        if (k < 0 && ret_error_name && error.name)
                *ret_error_name = strdup(error.name);
        return k < 0 ? k : 0;
}

int systemd_set_cpus(sd_bus *bus, const char *unit, const char *property, const CpuSet *cpus, bool runtime,
                     char **ret_error) {
        _cleanup_(bus_closep) sd_bus *own = NULL;
        _cleanup_(message_unrefp) sd_bus_message *m = NULL;
        int k = new_call(&bus, &own, "SetUnitProperties", &m, ret_error);
        if (k >= 0)
                k = sym_sd_bus_message_append(m, "sb", unit, (int) runtime);
        if (k >= 0)
                k = sym_sd_bus_message_open_container(m, 'a', "(sv)");
        if (k >= 0)
                k = append_set(m, property, cpus);
        if (k >= 0)
                k = sym_sd_bus_message_close_container(m);
        if (k < 0)
                return k;
        return call(bus, m, ret_error, NULL);
}

int systemd_set_allowed_cpus(sd_bus *bus, const char *unit, const CpuSet *cpus, char **ret_error) {
        return systemd_set_cpus(bus, unit, "AllowedCPUs", cpus, /* runtime= */ false, ret_error);
}

int systemd_start_slice(sd_bus *bus, const char *unit, const char *description, const CpuSet *cpus, char **ret_error) {
        _cleanup_(bus_closep) sd_bus *own = NULL;
        _cleanup_(message_unrefp) sd_bus_message *m = NULL, *start = NULL;
        _cleanup_free_ char *name = NULL, *msg = NULL;
        int k = new_call(&bus, &own, "StartTransientUnit", &m, ret_error);
        if (k >= 0)
                k = sym_sd_bus_message_append(m, "ss", unit, "fail");
        if (k >= 0)
                k = sym_sd_bus_message_open_container(m, 'a', "(sv)");
        if (k >= 0)
                k = sym_sd_bus_message_append(m, "(sv)", "Description", "s", description);
        if (k >= 0)
                k = append_set(m, "AllowedCPUs", cpus);
        if (k >= 0)
                k = sym_sd_bus_message_close_container(m);
        if (k >= 0)
                k = sym_sd_bus_message_append(m, "a(sa(sv))", 0);
        if (k < 0)
                return k;
        k = call(bus, m, &msg, &name);
        if (k >= 0)
                return 0;
        if (!name || !streq(name, "org.freedesktop.systemd1.UnitExists")) {
                if (ret_error)
                        *ret_error = TAKE_PTR(msg);
                return k;
        }
        /* Already known to systemd (a unit named it in Slice= and so made it exist): give it the
         * CPUs for now and start it. */
        k = systemd_set_cpus(bus, unit, "AllowedCPUs", cpus, /* runtime= */ true, ret_error);
        if (k >= 0)
                k = new_call(&bus, &own, "StartUnit", &start, ret_error);
        if (k >= 0)
                k = sym_sd_bus_message_append(start, "ss", unit, "replace");
        if (k >= 0)
                k = call(bus, start, ret_error, NULL);
        return k;
}

/* Manager.METHOD(unit, mode), for the unit's job. */
static int unit_job(sd_bus *bus, const char *method, const char *unit, const char *mode, char **ret_error) {
        _cleanup_(bus_closep) sd_bus *own = NULL;
        _cleanup_(message_unrefp) sd_bus_message *m = NULL;
        int k = new_call(&bus, &own, method, &m, ret_error);
        if (k >= 0)
                k = sym_sd_bus_message_append(m, "ss", unit, mode);
        if (k < 0)
                return k;
        return call(bus, m, ret_error, NULL);
}

int systemd_stop_unit(sd_bus *bus, const char *unit, char **ret_error) {
        return unit_job(bus, "StopUnit", unit, "fail", ret_error);
}

int systemd_try_restart_unit(sd_bus *bus, const char *unit, char **ret_error) {
        return unit_job(bus, "TryRestartUnit", unit, "replace", ret_error);
}

int systemd_set_partition(sd_bus *bus, const char *unit, const char *mode, char **ret_error) {
        _cleanup_(bus_closep) sd_bus *own = NULL;
        _cleanup_(message_unrefp) sd_bus_message *m = NULL;
        int k = new_call(&bus, &own, "SetUnitProperties", &m, ret_error);
        if (k >= 0)
                k = sym_sd_bus_message_append(m, "sba(sv)", unit, 1, 1, "CPUSetPartition", "s", mode);
        if (k < 0)
                return k;
        return call(bus, m, ret_error, NULL);
}
