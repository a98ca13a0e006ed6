/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>
#include <time.h>
#include <unistd.h>

#include "manager.h"
#include "test-util.h"

/* org.rtpart.Manager1 over a socketpair, no bus daemon: one end is the server (sd_bus_set_server)
 * with the manager's object on a copy of the vm fake host, the other a client. Both run in one
 * event loop; calls are asynchronous and the loop turns until the reply is there. */

static sd_event *event;
static char *host_dir;
static Root *root;
static Manager *manager;
static sd_bus *server, *client;

typedef struct Signals {
        unsigned drift, corrected, applied, props;
        char *last_knob;
        char *last_profile;
} Signals;
static Signals sig;

static uint64_t now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

static void bus_pair(int fds[2], sd_bus **ret_server, sd_bus **ret_client) {
        sd_id128_t id;
        sd_bus *s, *c;
        ck_assert_int_ge(sd_id128_randomize(&id), 0);
        ck_assert_int_ge(sd_bus_new(&s), 0);
        ck_assert_int_ge(sd_bus_set_fd(s, fds[0], fds[0]), 0);
        ck_assert_int_ge(sd_bus_set_server(s, 1, id), 0);
        /* ANONYMOUS: the test makes peers whose SO_PEERCRED differs from its own uid. */
        ck_assert_int_ge(sd_bus_set_anonymous(s, 1), 0);
        ck_assert_int_ge(sd_bus_new(&c), 0);
        ck_assert_int_ge(sd_bus_set_fd(c, fds[1], fds[1]), 0);
        ck_assert_int_ge(sd_bus_set_anonymous(c, 1), 0);
        ck_assert_int_ge(sd_bus_attach_event(s, event, 0), 0);
        ck_assert_int_ge(sd_bus_attach_event(c, event, 0), 0);
        ck_assert_int_ge(sd_bus_start(s), 0);
        ck_assert_int_ge(sd_bus_start(c), 0);
        *ret_server = s;
        *ret_client = c;
}

static int on_signal(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        const char *member = sd_bus_message_get_member(m);
        if (streq(member, "ProfileApplied")) {
                const char *p;
                ck_assert_int_ge(sd_bus_message_read(m, "s", &p), 0);
                free(sig.last_profile);
                sig.last_profile = strdup(p);
                sig.applied++;
        } else if (streq(member, "DriftDetected") || streq(member, "Corrected")) {
                const char *knob, *domain, *exp, *act;
                ck_assert_int_ge(sd_bus_message_enter_container(m, 'a', "(ssss)"), 0);
                ck_assert_int_gt(sd_bus_message_read(m, "(ssss)", &knob, &domain, &exp, &act), 0);
                free(sig.last_knob);
                sig.last_knob = strdup(knob);
                if (streq(member, "DriftDetected"))
                        sig.drift++;
                else
                        sig.corrected++;
        } else if (streq(member, "PropertiesChanged"))
                sig.props++;
        return 0;
}

static void setup(void) {
        _cleanup_free_ char *cmd = NULL;
        int fds[2];

        sig = (Signals) {};
        ck_assert_int_ge(sd_event_new(&event), 0);
        host_dir = test_copy_host("vm");
        ck_assert(asprintf(&cmd, "mkdir -p '%s/usr/share/rtpart/profiles' && cp '%s'/profiles/*.json '%s/usr/share/rtpart/profiles/'",
                           host_dir, SOURCE_DIR, host_dir) >= 0);
        ck_assert_int_eq(system(cmd), 0);
        test_write(host_dir, "etc/rtpart/profiles/rt-correct.json",
                   "{\"include\": \"realtime\", \"drift\": {\"policy\": \"correct\"}}\n");
        ck_assert_int_ge(root_new(host_dir, &root), 0);
        ManagerOptions o = { .debounce_usec = 5000 };
        ck_assert_int_ge(manager_new(event, root, &o, &manager), 0);

        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds), 0);
        bus_pair(fds, &server, &client);
        ck_assert_int_ge(manager_dbus_attach(manager, server), 0);
        ck_assert_int_ge(manager_startup(manager), 0);
        ck_assert_int_ge(sd_bus_match_signal(client, NULL, NULL, MANAGER_DBUS_PATH, NULL, NULL, on_signal, NULL), 0);
}

static void teardown(void) {
        manager = manager_free(manager);
        client = sd_bus_flush_close_unref(client);
        server = sd_bus_flush_close_unref(server);
        event = sd_event_unref(event);
        root = root_free(root);
        test_rmtree(host_dir);
        free(host_dir);
        free(sig.last_knob);
        free(sig.last_profile);
}

typedef struct Pending {
        bool done;
        sd_bus_message *reply;
} Pending;

static int on_reply(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Pending *p = userdata;
        p->reply = sd_bus_message_ref(m);
        p->done = true;
        return 0;
}

/* Sends msg on bus c and turns the loop until the reply arrives. */
static sd_bus_message *call_msg(sd_bus *c, sd_bus_message *msg) {
        Pending p = {};
        ck_assert_int_ge(sd_bus_call_async(c, NULL, msg, on_reply, &p, 30 * 1000000ULL), 0);
        sd_bus_message_unref(msg);
        uint64_t end = now_ms() + 30000;
        while (!p.done && now_ms() < end)
                ck_assert_int_ge(sd_event_run(event, 100 * 1000), 0);
        ck_assert_msg(p.done, "no reply");
        return p.reply;
}

static sd_bus_message *new_call(sd_bus *c, const char *iface, const char *member) {
        sd_bus_message *m;
        ck_assert_int_ge(sd_bus_message_new_method_call(c, &m, NULL, MANAGER_DBUS_PATH, iface, member), 0);
        return m;
}

static sd_bus_message *call0(sd_bus *c, const char *member) {
        return call_msg(c, new_call(c, MANAGER_DBUS_INTERFACE, member));
}

static sd_bus_message *call_s(sd_bus *c, const char *member, const char *arg) {
        sd_bus_message *m = new_call(c, MANAGER_DBUS_INTERFACE, member);
        ck_assert_int_ge(sd_bus_message_append(m, "s", arg), 0);
        return call_msg(c, m);
}

/* The reply's JSON string, parsed; fails the test on an error reply. */
static json_t *reply_json(sd_bus_message *r) {
        const sd_bus_error *e = sd_bus_message_get_error(r);
        ck_assert_msg(!e, "error reply: %s: %s", e ? e->name : "", e ? e->message : "");
        const char *s;
        ck_assert_int_ge(sd_bus_message_read(r, "s", &s), 0);
        json_error_t err;
        json_t *doc = json_loads(s, 0, &err);
        ck_assert_msg(doc, "not JSON: %s", err.text);
        sd_bus_message_unref(r);
        return doc;
}

static void assert_error(sd_bus_message *r, const char *name, const char *in_message) {
        const sd_bus_error *e = sd_bus_message_get_error(r);
        ck_assert_msg(e, "expected error %s, got a reply", name);
        ck_assert_str_eq(e->name, name);
        if (in_message)
                ck_assert_msg(strstr(e->message, in_message), "'%s' not in '%s'", in_message, e->message);
        sd_bus_message_unref(r);
}

static sd_bus_message *get_property(sd_bus *c, const char *name) {
        sd_bus_message *m = new_call(c, "org.freedesktop.DBus.Properties", "Get");
        ck_assert_int_ge(sd_bus_message_append(m, "ss", MANAGER_DBUS_INTERFACE, name), 0);
        sd_bus_message *r = call_msg(c, m);
        ck_assert_ptr_null(sd_bus_message_get_error(r));
        return r;
}

static char *get_string(sd_bus *c, const char *name) {
        sd_bus_message *r = get_property(c, name);
        const char *s;
        ck_assert_int_ge(sd_bus_message_read(r, "v", "s", &s), 0);
        char *d = strdup(s);
        sd_bus_message_unref(r);
        return d;
}

static bool get_bool(sd_bus *c, const char *name) {
        sd_bus_message *r = get_property(c, name);
        int b;
        ck_assert_int_ge(sd_bus_message_read(r, "v", "b", &b), 0);
        sd_bus_message_unref(r);
        return b;
}

static unsigned get_u(sd_bus *c, const char *name) {
        sd_bus_message *r = get_property(c, name);
        uint32_t u;
        ck_assert_int_ge(sd_bus_message_read(r, "v", "u", &u), 0);
        sd_bus_message_unref(r);
        return u;
}

static void wait_for(unsigned *counter, unsigned want, unsigned timeout_ms) {
        uint64_t end = now_ms() + timeout_ms;
        while (*counter < want && now_ms() < end)
                ck_assert_int_ge(sd_event_run(event, 10 * 1000), 0);
}

START_TEST(test_introspect) {
        sd_bus_message *r = call_msg(client, new_call(client, "org.freedesktop.DBus.Introspectable", "Introspect"));
        const char *xml;
        ck_assert_int_ge(sd_bus_message_read(r, "s", &xml), 0);
        static const char * const want[] = {
                "<interface name=\"org.rtpart.Manager1\">",
                "<method name=\"Plan\">",
                "<arg type=\"s\" name=\"profile\" direction=\"in\"/>",
                "<arg type=\"a(ss)\" name=\"profiles\" direction=\"out\"/>",
                "<signal name=\"DriftDetected\">",
                "<arg type=\"a(ssss)\" name=\"drift\"/>",
                "<property name=\"DriftCount\" type=\"u\" access=\"read\">",
                "<method name=\"Correct\">",
        };
        for (size_t i = 0; i < ELEMENTSOF(want); i++)
                ck_assert_msg(strstr(xml, want[i]), "introspection lacks %s", want[i]);
        sd_bus_message_unref(r);
}
END_TEST

START_TEST(test_read_methods) {
        sd_bus_message *r = call0(client, "ListProfiles");
        ck_assert_ptr_null(sd_bus_message_get_error(r));
        const char *name, *summary;
        bool found = false;
        ck_assert_int_ge(sd_bus_message_enter_container(r, 'a', "(ss)"), 0);
        while (sd_bus_message_read(r, "(ss)", &name, &summary) > 0)
                if (streq(name, "realtime")) {
                        found = true;
                        ck_assert_int_gt(strlen(summary), 0);
                }
        ck_assert(found);
        sd_bus_message_unref(r);

        _cleanup_(json_decrefp) json_t *plan = reply_json(call_s(client, "Plan", "realtime"));
        ck_assert_str_eq(json_string_value(json_object_get(plan, "profile")), "realtime");
        ck_assert_int_gt(json_array_size(json_object_get(plan, "changes")), 0);
        ck_assert_int_gt(json_integer_value(json_object_get(json_object_get(plan, "summary"), "changes")), 0);

        assert_error(call_s(client, "Plan", "no-such-profile"), MANAGER_DBUS_ERROR_PREFIX "InvalidProfile", "no-such-profile");
        /* Paths: only a root peer names a file. */
        if (geteuid() == 0)
                assert_error(call_s(client, "Plan", "relative/dir/x.json"), MANAGER_DBUS_ERROR_PREFIX "InvalidProfile",
                             "absolute path");
        else
                assert_error(call_s(client, "Plan", "relative/dir/x.json"),
                             MANAGER_DBUS_ERROR_PREFIX "PermissionDenied", NULL);
        /* An invalid profile names the file, the JSON pointer and the problem. */
        test_write(host_dir, "etc/rtpart/profiles/broken.json", "{\"irq\": {\"affinity\": \"64-70\"}}\n");
        _cleanup_free_ char *path = NULL;
        ck_assert(asprintf(&path, "%s/etc/rtpart/profiles/broken.json", host_dir) >= 0);
        assert_error(call_s(client, "Plan", "broken"), MANAGER_DBUS_ERROR_PREFIX "InvalidProfile", "/irq/affinity");
        if (geteuid() == 0)
                assert_error(call_s(client, "Plan", path), MANAGER_DBUS_ERROR_PREFIX "InvalidProfile", "/irq/affinity");
        else
                assert_error(call_s(client, "Plan", path), MANAGER_DBUS_ERROR_PREFIX "PermissionDenied", NULL);

        _cleanup_(json_decrefp) json_t *v = reply_json(call0(client, "Verify"));
        ck_assert(json_is_null(json_object_get(v, "profile")));
        ck_assert(json_is_true(json_object_get(v, "in_sync")));
        _cleanup_(json_decrefp) json_t *st = reply_json(call0(client, "Status"));
        ck_assert_int_eq(json_integer_value(json_object_get(st, "knobs")), 0);

        _cleanup_free_ char *active = get_string(client, "ActiveProfile");
        ck_assert_str_eq(active, "");
        ck_assert(get_bool(client, "InSync"));
        ck_assert_int_eq(get_u(client, "DriftCount"), 0);
}
END_TEST

/* Root only (a peer of another uid is made with seteuid). */
START_TEST(test_non_root_is_refused) {
        /* SO_PEERCRED of a socketpair is its creator's effective uid. */
        int fds[2];
        sd_bus *s2, *c2;
        ck_assert_int_eq(seteuid(65534), 0);
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds), 0);
        ck_assert_int_eq(seteuid(0), 0);
        manager_dbus_detach(manager);
        bus_pair(fds, &s2, &c2);
        ck_assert_int_ge(manager_dbus_attach(manager, s2), 0);

        assert_error(call_s(c2, "Apply", "realtime"), MANAGER_DBUS_ERROR_PREFIX "PermissionDenied", "needs root");
        assert_error(call0(c2, "Revert"), MANAGER_DBUS_ERROR_PREFIX "PermissionDenied", NULL);
        assert_error(call0(c2, "Correct"), MANAGER_DBUS_ERROR_PREFIX "PermissionDenied", NULL);
        _cleanup_(json_decrefp) json_t *v = reply_json(call0(c2, "Verify"));
        _cleanup_(json_decrefp) json_t *p = reply_json(call_s(c2, "Plan", "realtime"));
        /* A file is read as root: only root names one. */
        assert_error(call_s(c2, "Plan", "/etc/shadow.json"), MANAGER_DBUS_ERROR_PREFIX "PermissionDenied", "only root");
        _cleanup_free_ char *active = get_string(c2, "ActiveProfile");
        ck_assert_str_eq(active, "");

        manager_dbus_detach(manager);
        sd_bus_flush_close_unref(c2);
        sd_bus_flush_close_unref(s2);
}
END_TEST

/* Not root: the test's own peer may not change the host. */
START_TEST(test_apply_needs_root) {
        assert_error(call_s(client, "Apply", "realtime"), MANAGER_DBUS_ERROR_PREFIX "PermissionDenied", NULL);
}
END_TEST

/* Root only, as are the tests below: Apply needs a root peer. */
START_TEST(test_apply_drift_correct_revert) {
        _cleanup_(json_decrefp) json_t *a = reply_json(call_s(client, "Apply", "realtime"));
        ck_assert(json_is_true(json_object_get(a, "ok")));
        ck_assert_int_gt(json_integer_value(json_object_get(a, "changed")), 0);
        wait_for(&sig.applied, 1, 2000);
        wait_for(&sig.props, 1, 2000);
        ck_assert_int_eq(sig.applied, 1);
        ck_assert_str_eq(sig.last_profile, "realtime");
        ck_assert_int_gt(sig.props, 0);
        _cleanup_free_ char *active = get_string(client, "ActiveProfile");
        ck_assert_str_eq(active, "realtime");
        ck_assert(get_bool(client, "InSync"));
        ck_assert(get_bool(client, "RebootRequired")); /* boot arguments are configured, not running */

        /* Report: a write behind the daemon's back is a signal and a property change. */
        unsigned props = sig.props;
        test_write(host_dir, "proc/sys/kernel/timer_migration", "1\n");
        wait_for(&sig.drift, 1, 2000);
        ck_assert_int_eq(sig.drift, 1);
        ck_assert_str_eq(sig.last_knob, "sysctl/kernel.timer_migration");
        wait_for(&sig.props, props + 1, 2000);
        ck_assert_int_gt(sig.props, props);
        ck_assert(!get_bool(client, "InSync"));
        ck_assert_int_eq(get_u(client, "DriftCount"), 1);
        _cleanup_(json_decrefp) json_t *v = reply_json(call0(client, "Verify"));
        ck_assert(json_is_false(json_object_get(v, "in_sync")));
        ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(v, "drift"), 0), "knob")),
                         "sysctl/kernel.timer_migration");

        /* Correct on request. */
        _cleanup_(json_decrefp) json_t *c = reply_json(call0(client, "Correct"));
        ck_assert_int_eq(json_integer_value(json_object_get(c, "drift")), 0);
        wait_for(&sig.corrected, 1, 2000);
        ck_assert_int_eq(sig.corrected, 1);
        ck_assert(get_bool(client, "InSync"));

        /* A profile with policy "correct" puts values back by itself. */
        _cleanup_(json_decrefp) json_t *a2 = reply_json(call_s(client, "Apply", "rt-correct"));
        ck_assert(json_is_true(json_object_get(a2, "ok")));
        test_write(host_dir, "proc/sys/vm/dirty_ratio", "40\n");
        wait_for(&sig.corrected, 2, 2000);
        ck_assert_int_eq(sig.corrected, 2);
        ck_assert_str_eq(sig.last_knob, "sysctl/vm.dirty_ratio");
        _cleanup_(json_decrefp) json_t *v2 = reply_json(call0(client, "Verify"));
        ck_assert(json_is_true(json_object_get(v2, "in_sync")));

        _cleanup_(json_decrefp) json_t *r = reply_json(call0(client, "Revert"));
        ck_assert(json_is_true(json_object_get(r, "ok")));
        _cleanup_free_ char *after = get_string(client, "ActiveProfile");
        ck_assert_str_eq(after, "");
        assert_error(call0(client, "Correct"), MANAGER_DBUS_ERROR_PREFIX "NotApplied", NULL);
}
END_TEST

START_TEST(test_restart_reapplies) {
        _cleanup_(json_decrefp) json_t *a = reply_json(call_s(client, "Apply", "realtime"));
        ck_assert(json_is_true(json_object_get(a, "ok")));
        /* "Reboot": the runtime knob is back at the kernel's value; a new daemon sets it again. */
        test_write(host_dir, "proc/sys/vm/swappiness", "60\n");
        manager = manager_free(manager);
        ManagerOptions o = {};
        ck_assert_int_ge(manager_new(event, root, &o, &manager), 0);
        ck_assert_int_ge(manager_startup(manager), 0);
        ck_assert_str_eq(manager_active_profile(manager), "realtime");
        ck_assert(manager_in_sync(manager));
        _cleanup_free_ char *p = NULL;
        char buf[16] = {};
        ck_assert(asprintf(&p, "%s/proc/sys/vm/swappiness", host_dir) >= 0);
        FILE *f = fopen(p, "re");
        ck_assert_ptr_nonnull(f);
        ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
        fclose(f);
        ck_assert_str_eq(buf, "10\n");
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("manager-dbus");
        TCase *tc = tcase_create("socketpair");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_introspect);
        tcase_add_test(tc, test_read_methods);
        if (geteuid() != 0)
                tcase_add_test(tc, test_apply_needs_root);
        suite_add_tcase(s, tc);

        TCase *tr = tcase_create("root");
        tcase_add_checked_fixture(tr, setup, teardown);
        tcase_set_timeout(tr, 60);
        tcase_add_test(tr, test_non_root_is_refused);
        tcase_add_test(tr, test_apply_drift_correct_revert);
        tcase_add_test(tr, test_restart_reapplies);
        test_add_root_tcase(s, tr, "Apply, Correct and Revert need a root peer, and a peer of another uid is made with "
                                   "seteuid()");
        return s;
}

int main(void) {
        return test_run(suite());
}
