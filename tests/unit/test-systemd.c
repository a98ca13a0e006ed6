/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <pthread.h>
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
        const char *fail;       /* answer with this error instead of success */
        bool called;
        char unit[64];
        int runtime;
        char property[64];
        uint8_t bytes[128];
        size_t n_bytes;
        int error;
} FakeManager;

static int method_set_unit_properties(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        FakeManager *f = userdata;
        const char *unit, *property;
        const void *p;
        size_t n;
        int runtime, r;

        f->called = true;
        r = sd_bus_message_read(m, "sb", &unit, &runtime);
        if (r >= 0)
                r = sd_bus_message_enter_container(m, 'a', "(sv)");
        if (r >= 0)
                r = sd_bus_message_enter_container(m, 'r', "sv");
        if (r >= 0)
                r = sd_bus_message_read(m, "s", &property);
        if (r >= 0)
                r = sd_bus_message_enter_container(m, 'v', "ay");
        if (r >= 0)
                r = sd_bus_message_read_array(m, 'y', &p, &n);
        if (r < 0) {
                f->error = r;
                return r;
        }
        snprintf(f->unit, sizeof(f->unit), "%s", unit);
        snprintf(f->property, sizeof(f->property), "%s", property);
        f->runtime = runtime;
        f->n_bytes = MIN(n, sizeof(f->bytes));
        memcpy(f->bytes, p, f->n_bytes);
        if (f->fail)
                return sd_bus_error_set(error, "org.freedesktop.systemd1.NoSuchUnit", f->fail);
        return sd_bus_reply_method_return(m, NULL);
}

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("SetUnitProperties", "sba(sv)", "", method_set_unit_properties, 0),
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
                if (r == 0 && f->called) {
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

/* Calls systemd_set_allowed_cpus() against a fake manager; returns its result. */
static int call(FakeManager *f, const char *unit, const CpuSet *cpus, char **ret_error) {
        int fds[2];
        pthread_t t;
        sd_bus *c = NULL;
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
        f->fd = fds[0];
        ck_assert_int_eq(pthread_create(&t, NULL, serve, f), 0);
        ck_assert_int_ge(sd_bus_new(&c), 0);
        ck_assert_int_ge(sd_bus_set_fd(c, fds[1], fds[1]), 0);
        ck_assert_int_ge(sd_bus_start(c), 0);
        int r = systemd_set_allowed_cpus(c, unit, cpus, ret_error);
        sd_bus_flush_close_unref(c);
        ck_assert_int_eq(pthread_join(t, NULL), 0);
        ck_assert_int_eq(f->error, 0);
        return r;
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

static Suite *suite(void) {
        Suite *s = suite_create("systemd");
        TCase *tc = tcase_create("AllowedCPUs");
        tcase_add_test(tc, test_allowed_cpus);
        tcase_add_test(tc, test_reset);
        tcase_add_test(tc, test_refused);
        tcase_add_test(tc, test_helpers);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return test_run(suite());
}
