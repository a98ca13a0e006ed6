/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-id128.h>

#include "systemd.h"
#include "test-util.h"

/* AllowedCPUs= through systemd's D-Bus API, against a fake org.freedesktop.systemd1.Manager on
 * the other end of a socketpair (no bus daemon, no systemd). */

typedef struct FakeManager {
        int fd;
        const char *fail;       /* answer SetUnitProperties with this error instead of success */
        const char *fail_start; /* answer StartTransientUnit with this D-Bus error name */
        unsigned expect;        /* calls to serve before hanging up (0: 1) */
        unsigned calls;
        bool called;
        char unit[64];
        int runtime;
        char property[64];
        uint8_t bytes[128];
        size_t n_bytes;
        char log[1024]; /* "Method unit arg Name=value …; " per call */
        int error;
} FakeManager;

static void logf_(FakeManager *f, const char *fmt, ...) _printf_(2, 3);
static void logf_(FakeManager *f, const char *fmt, ...) {
        size_t n = strlen(f->log);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(f->log + n, sizeof(f->log) - n, fmt, ap);
        va_end(ap);
}

/* Reads an a(sv) of "s" and "ay" values into the log as " Name=value" (ay as hex bytes). */
static int read_properties(sd_bus_message *m, FakeManager *f) {
        int r = sd_bus_message_enter_container(m, 'a', "(sv)");
        while (r >= 0 && (r = sd_bus_message_enter_container(m, 'r', "sv")) > 0) {
                const char *name, *contents;
                char type;
                r = sd_bus_message_read(m, "s", &name);
                if (r >= 0)
                        r = sd_bus_message_peek_type(m, &type, &contents);
                if (r >= 0)
                        r = sd_bus_message_enter_container(m, 'v', contents);
                if (r >= 0 && streq(contents, "ay")) {
                        const uint8_t *p;
                        size_t n;
                        r = sd_bus_message_read_array(m, 'y', (const void **) &p, &n);
                        logf_(f, " %s=", name);
                        for (size_t i = 0; r >= 0 && i < n; i++)
                                logf_(f, "%02x", p[i]);
                        snprintf(f->property, sizeof(f->property), "%s", name);
                        f->n_bytes = MIN(n, sizeof(f->bytes));
                        if (r >= 0 && n > 0)
                                memcpy(f->bytes, p, f->n_bytes);
                } else if (r >= 0) {
                        const char *v;
                        r = sd_bus_message_read(m, "s", &v);
                        if (r >= 0)
                                logf_(f, " %s=%s", name, v);
                        snprintf(f->property, sizeof(f->property), "%s", name);
                }
                for (int i = 0; r >= 0 && i < 2; i++)
                        r = sd_bus_message_exit_container(m);
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        return r;
}

static int method_set_unit_properties(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        FakeManager *f = userdata;
        const char *unit;
        int runtime, r;

        f->called = true;
        f->calls++;
        r = sd_bus_message_read(m, "sb", &unit, &runtime);
        if (r >= 0) {
                logf_(f, "SetUnitProperties %s %s", unit, runtime ? "runtime" : "persistent");
                r = read_properties(m, f);
        }
        if (r < 0) {
                f->error = r;
                return r;
        }
        logf_(f, "; ");
        snprintf(f->unit, sizeof(f->unit), "%s", unit);
        f->runtime = runtime;
        if (f->fail)
                return sd_bus_error_set(error, "org.freedesktop.systemd1.NoSuchUnit", f->fail);
        return sd_bus_reply_method_return(m, NULL);
}

static int method_start_transient(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        FakeManager *f = userdata;
        const char *unit, *mode;
        f->called = true;
        f->calls++;
        int r = sd_bus_message_read(m, "ss", &unit, &mode);
        if (r >= 0) {
                logf_(f, "StartTransientUnit %s %s", unit, mode);
                r = read_properties(m, f);
        }
        if (r >= 0)
                r = sd_bus_message_skip(m, "a(sa(sv))");
        if (r < 0) {
                f->error = r;
                return r;
        }
        logf_(f, "; ");
        if (f->fail_start)
                return sd_bus_error_setf(error, f->fail_start, "Unit %s already exists.", unit);
        return sd_bus_reply_method_return(m, "o", "/org/freedesktop/systemd1/job/1");
}

static int method_start_stop(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        FakeManager *f = userdata;
        const char *unit, *mode;
        f->called = true;
        f->calls++;
        int r = sd_bus_message_read(m, "ss", &unit, &mode);
        if (r < 0) {
                f->error = r;
                return r;
        }
        logf_(f, "%s %s %s; ", sd_bus_message_get_member(m), unit, mode);
        return sd_bus_reply_method_return(m, "o", "/org/freedesktop/systemd1/job/2");
}

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("SetUnitProperties", "sba(sv)", "", method_set_unit_properties, 0),
        SD_BUS_METHOD("StartTransientUnit", "ssa(sv)a(sa(sv))", "o", method_start_transient, 0),
        SD_BUS_METHOD("StartUnit", "ss", "o", method_start_stop, 0),
        SD_BUS_METHOD("StopUnit", "ss", "o", method_start_stop, 0),
        SD_BUS_VTABLE_END,
};

static void *serve(void *arg) {
        FakeManager *f = arg;
        sd_bus *s = NULL;
        sd_id128_t id;
        int r = sd_id128_randomize(&id);
        if (r >= 0)
                r = sd_bus_new(&s);
        if (r >= 0)
                r = sd_bus_set_fd(s, f->fd, f->fd);
        if (r >= 0)
                r = sd_bus_set_server(s, 1, id);
        if (r >= 0)
                r = sd_bus_add_object_vtable(s, NULL, "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
                                             manager_vtable, f);
        if (r >= 0)
                r = sd_bus_start(s);
        for (unsigned i = 0; r >= 0 && i < 200; i++) {
                r = sd_bus_process(s, NULL);
                if (r > 0)
                        continue;
                if (r == 0 && f->calls >= MAX(f->expect, 1u)) {
                        (void) sd_bus_flush(s);
                        break;
                }
                if (r >= 0)
                        r = sd_bus_wait(s, 50000);
        }
        /* The client hanging up after its answer is the end of the conversation, not an error. */
        if (r < 0 && !f->error && !(f->called && (r == -ECONNRESET || r == -EPIPE)))
                f->error = r;
        sd_bus_flush_close_unref(s);
        return NULL;
}

typedef enum Op { OP_ALLOWED, OP_START, OP_STOP, OP_PARTITION, OP_MEMS } Op;

/* Runs one of systemd.h's calls against a fake manager; returns its result. */
static int run(FakeManager *f, Op op, const char *unit, const CpuSet *cpus, char **ret_error) {
        int fds[2];
        pthread_t t;
        sd_bus *c = NULL;
        int r = -EINVAL;
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
        f->fd = fds[0];
        ck_assert_int_eq(pthread_create(&t, NULL, serve, f), 0);
        ck_assert_int_ge(sd_bus_new(&c), 0);
        ck_assert_int_ge(sd_bus_set_fd(c, fds[1], fds[1]), 0);
        ck_assert_int_ge(sd_bus_start(c), 0);
        switch (op) {
        case OP_ALLOWED:
                r = systemd_set_allowed_cpus(c, unit, cpus, ret_error);
                break;
        case OP_START:
                r = systemd_start_slice(c, unit, "rtpart cpuset partition rt", cpus, ret_error);
                break;
        case OP_STOP:
                r = systemd_stop_unit(c, unit, ret_error);
                break;
        case OP_PARTITION:
                r = systemd_set_partition(c, unit, "isolated", ret_error);
                break;
        case OP_MEMS:
                r = systemd_set_cpus(c, unit, "AllowedMemoryNodes", cpus, true, ret_error);
                break;
        }
        sd_bus_flush_close_unref(c);
        ck_assert_int_eq(pthread_join(t, NULL), 0);
        ck_assert_int_eq(f->error, 0);
        return r;
}

static int call(FakeManager *f, const char *unit, const CpuSet *cpus, char **ret_error) {
        return run(f, OP_ALLOWED, unit, cpus, ret_error);
}

START_TEST(test_allowed_cpus) {
        FakeManager f = {};
        CpuSet s;
        ck_assert_int_eq(cpu_set_parse_list("0,8,16,24", &s, NULL), 0);
        ck_assert_int_eq(call(&f, "system.slice", &s, NULL), 0);
        ck_assert(f.called);
        ck_assert_str_eq(f.unit, "system.slice");
        ck_assert_int_eq(f.runtime, 0); /* persistent, and so also now */
        ck_assert_str_eq(f.property, "AllowedCPUs");
        /* cpu_set_to_dbus(): bit c%8 of byte c/8. */
        ck_assert_uint_eq(f.n_bytes, 4);
        for (size_t i = 0; i < 4; i++)
                ck_assert_uint_eq(f.bytes[i], 1);
}
END_TEST

START_TEST(test_reset) {
        FakeManager f = {};
        CpuSet empty = {};
        ck_assert_int_eq(call(&f, "user.slice", &empty, NULL), 0);
        ck_assert_str_eq(f.unit, "user.slice");
        ck_assert_uint_eq(f.n_bytes, 0); /* an empty set: all CPUs again */
        FakeManager g = {};
        ck_assert_int_eq(call(&g, "init.scope", NULL, NULL), 0);
        ck_assert_uint_eq(g.n_bytes, 0);
}
END_TEST

START_TEST(test_refused) {
        FakeManager f = { .fail = "Unit nosuch.slice not loaded." };
        CpuSet s;
        char *err = NULL;
        ck_assert_int_eq(cpu_set_parse_list("0-1", &s, NULL), 0);
        ck_assert_int_lt(call(&f, "nosuch.slice", &s, &err), 0);
        ck_assert_str_eq(err, "Unit nosuch.slice not loaded.");
        free(err);
}
END_TEST

START_TEST(test_helpers) {
        uint8_t *b;
        size_t n;
        CpuSet s;
        ck_assert_int_eq(cpu_set_parse_list("1-3,9,63", &s, NULL), 0);
        ck_assert_int_eq(systemd_cpu_set_to_bytes(&s, &b, &n), 0);
        ck_assert_uint_eq(n, 8);
        ck_assert_uint_eq(b[0], 0x0e);
        ck_assert_uint_eq(b[1], 0x02);
        ck_assert_uint_eq(b[7], 0x80);
        free(b);
        ck_assert(systemd_is_unit_cgroup("system.slice"));
        ck_assert(systemd_is_unit_cgroup("init.scope"));
        ck_assert(!systemd_is_unit_cgroup("rtpart-rt"));
        ck_assert(!systemd_is_unit_cgroup(".slice"));
        /* Under a fake root systemd never owns anything, run/systemd/system or not. */
        Root *r;
        _cleanup_free_ char *fx = fixture_host("intel-2s");
        ck_assert_int_eq(root_new(fx, &r), 0);
        ck_assert(root_is_dir(r, "run/systemd/system"));
        ck_assert(!systemd_owns_cgroups(r));
        root_free(r);
}
END_TEST

START_TEST(test_partition_slice) {
        /* systemd's unit name escaping: '-' would make a child of another slice. */
        _cleanup_free_ char *a = systemd_partition_slice("rtpart-rt"), *b = systemd_partition_slice("rt"),
                            *c = systemd_partition_slice("a b.c"), *d = systemd_partition_slice(".x");
        ck_assert_str_eq(a, "rtpart\\x2drt.slice");
        ck_assert_str_eq(b, "rt.slice");
        ck_assert_str_eq(c, "a\\x20b.c.slice");
        ck_assert_str_eq(d, "\\x2ex.slice");
}
END_TEST

START_TEST(test_start_slice) {
        FakeManager f = {};
        CpuSet s;
        ck_assert_int_eq(cpu_set_parse_list("2-3", &s, NULL), 0);
        ck_assert_int_eq(run(&f, OP_START, "rtpart\\x2drt.slice", &s, NULL), 0);
        ck_assert_str_eq(f.log,
                         "StartTransientUnit rtpart\\x2drt.slice fail Description=rtpart cpuset partition rt "
                         "AllowedCPUs=0c; ");

        /* Already there (a unit's Slice= made it): AllowedCPUs= for now, then started. */
        FakeManager g = { .fail_start = "org.freedesktop.systemd1.UnitExists", .expect = 3 };
        ck_assert_int_eq(run(&g, OP_START, "rt.slice", &s, NULL), 0);
        ck_assert_str_eq(g.log,
                         "StartTransientUnit rt.slice fail Description=rtpart cpuset partition rt AllowedCPUs=0c; "
                         "SetUnitProperties rt.slice runtime AllowedCPUs=0c; StartUnit rt.slice replace; ");

        /* Any other refusal is the answer, with systemd's message. */
        FakeManager h = { .fail_start = "org.freedesktop.systemd1.TransactionIsDestructive" };
        char *err = NULL;
        ck_assert_int_lt(run(&h, OP_START, "rt.slice", &s, &err), 0);
        ck_assert_str_eq(err, "Unit rt.slice already exists.");
        free(err);
}
END_TEST

START_TEST(test_stop_partition_mems) {
        FakeManager f = {};
        ck_assert_int_eq(run(&f, OP_STOP, "rt.slice", NULL, NULL), 0);
        ck_assert_str_eq(f.log, "StopUnit rt.slice fail; ");
        FakeManager g = {};
        ck_assert_int_eq(run(&g, OP_PARTITION, "rt.slice", NULL, NULL), 0);
        ck_assert_str_eq(g.log, "SetUnitProperties rt.slice runtime CPUSetPartition=isolated; ");
        FakeManager h = {};
        CpuSet n;
        ck_assert_int_eq(cpu_set_parse_list("1", &n, NULL), 0);
        ck_assert_int_eq(run(&h, OP_MEMS, "rt.slice", &n, NULL), 0);
        ck_assert_str_eq(h.log, "SetUnitProperties rt.slice runtime AllowedMemoryNodes=02; ");
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("systemd");
        TCase *tc = tcase_create("AllowedCPUs");
        tcase_add_test(tc, test_allowed_cpus);
        tcase_add_test(tc, test_reset);
        tcase_add_test(tc, test_refused);
        tcase_add_test(tc, test_helpers);
        tcase_add_test(tc, test_partition_slice);
        tcase_add_test(tc, test_start_slice);
        tcase_add_test(tc, test_stop_partition_mems);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return test_run(suite());
}
