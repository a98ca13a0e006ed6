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
#include "strv.h"
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
        ck_assert(
                asprintf(
                        &cmd,
                        "mkdir -p '%s/usr/share/rtpart/profiles' && cp '%s'/profiles/*.json '%s/usr/share/rtpart/profiles/'",
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
                "<method name=\"GetDrift\">",
                "<method name=\"VerifyTyped\">",
                "<arg type=\"as\" name=\"reboot_pending\" direction=\"out\"/>",
                "<method name=\"Describe\">",
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

        assert_error(call_s(client, "Plan", "no-such-profile"), MANAGER_DBUS_ERROR_PREFIX "InvalidProfile",
                     "no-such-profile");
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

/* ---- the typed members, and Describe against varlink's ---- */

/* GetDrift's entries as [{knob, domain, expected, actual}]. */
static json_t *read_drift_array(sd_bus_message *r) {
        const char *knob, *domain, *exp, *act;
        json_t *a = json_array();
        ck_assert_int_ge(sd_bus_message_enter_container(r, 'a', "(ssss)"), 0);
        while (sd_bus_message_read(r, "(ssss)", &knob, &domain, &exp, &act) > 0)
                json_array_append_new(a,
                                      json_pack("{s:s, s:s, s:s, s:s}", "knob", knob, "domain", domain, "expected", exp,
                                                "actual", act));
        ck_assert_int_ge(sd_bus_message_exit_container(r), 0);
        return a;
}

static json_t *get_drift(void) {
        sd_bus_message *r = call0(client, "GetDrift");
        ck_assert_ptr_null(sd_bus_message_get_error(r));
        json_t *a = read_drift_array(r);
        sd_bus_message_unref(r);
        return a;
}

/* VerifyTyped's answer as {in_sync, reboot_required, drift, reboot_pending, unmovable, checked}. */
static json_t *verify_typed(void) {
        sd_bus_message *r = call0(client, "VerifyTyped");
        const sd_bus_error *e = sd_bus_message_get_error(r);
        ck_assert_msg(!e, "error reply: %s", e ? e->message : "");
        int in_sync, reboot;
        char **pending = NULL, **unmovable = NULL;
        uint32_t checked;
        ck_assert_int_ge(sd_bus_message_read(r, "bb", &in_sync, &reboot), 0);
        json_t *drift = read_drift_array(r);
        ck_assert_int_ge(sd_bus_message_read_strv(r, &pending), 0);
        ck_assert_int_ge(sd_bus_message_read_strv(r, &unmovable), 0);
        ck_assert_int_ge(sd_bus_message_read(r, "u", &checked), 0);
        json_t *doc = json_pack("{s:b, s:b, s:o, s:I, s:I, s:I}", "in_sync", in_sync, "reboot_required", reboot,
                                "drift", drift, "reboot_pending", (json_int_t) strv_length(pending), "unmovable",
                                (json_int_t) strv_length(unmovable), "checked", (json_int_t) checked);
        strv_free(pending);
        strv_free(unmovable);
        sd_bus_message_unref(r);
        return doc;
}

/* One varlink call on a connection of the manager's varlink server; the reply's parameters. */
static json_t *varlink_call_once(int fd, const char *method) {
        _cleanup_free_ char *req = NULL;
        char buf[65536];
        size_t n = 0;
        int len = asprintf(&req, "{\"method\": \"%s\"}", method);
        ck_assert_int_gt(len, 0);
        ck_assert_int_eq(write(fd, req, (size_t) len + 1), len + 1); /* with the NUL */
        uint64_t end = now_ms() + 10000;
        while (now_ms() < end && (n == 0 || buf[n - 1] != '\0')) {
                ck_assert_int_ge(sd_event_run(event, 10 * 1000), 0);
                ssize_t k = read(fd, buf + n, sizeof(buf) - n);
                if (k > 0)
                        n += (size_t) k;
        }
        ck_assert_msg(n > 0 && buf[n - 1] == '\0', "no varlink reply to %s", method);
        json_error_t err;
        json_t *m = json_loads(buf, 0, &err);
        ck_assert_msg(m, "not JSON: %s", err.text);
        ck_assert_msg(!json_object_get(m, "error"), "varlink error %s", json_string_value(json_object_get(m, "error")));
        json_t *p = json_incref(json_object_get(m, "parameters"));
        json_decref(m);
        return p;
}

/* Describe over D-Bus and over varlink: the same document. */
static void assert_describe_same(VarlinkServer *vs, int fd, json_t **ret) {
        json_t *d = reply_json(call0(client, "Describe"));
        _cleanup_(json_decrefp) json_t *v = varlink_call_once(fd, MANAGER_VARLINK_INTERFACE ".Describe");
        _cleanup_free_ char *ds = json_dumps(d, JSON_SORT_KEYS), *vs_text = json_dumps(v, JSON_SORT_KEYS);
        ck_assert_msg(json_equal(d, v), "D-Bus Describe %s, varlink Describe %s", ds, vs_text);
        *ret = d;
}

START_TEST(test_typed_members) {
        _cleanup_(varlink_server_freep) VarlinkServer *vs = NULL;
        int fds[2];
        ck_assert_int_ge(varlink_server_new(event, &vs), 0);
        ck_assert_int_ge(manager_varlink_attach(manager, vs), 0);
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds), 0);
        ck_assert_int_ge(varlink_server_add_connection(vs, fds[0]), 0);

        /* Nothing applied: nothing drifted. */
        _cleanup_(json_decrefp) json_t *g0 = get_drift(), *t0 = verify_typed(), *d0 = NULL;
        ck_assert_int_eq(json_array_size(g0), 0);
        ck_assert(json_is_true(json_object_get(t0, "in_sync")));
        assert_describe_same(vs, fds[1], &d0);
        ck_assert(json_is_null(json_object_get(d0, "profile")));
        ck_assert(json_is_true(json_object_get(d0, "in_sync")));
        ck_assert_int_eq(json_integer_value(json_object_get(d0, "drift_count")), 0);

        if (geteuid() == 0) {
                _cleanup_(json_decrefp) json_t *a = reply_json(call_s(client, "Apply", "realtime"));
                ck_assert(json_is_true(json_object_get(a, "ok")));
                test_write(host_dir, "proc/sys/kernel/timer_migration", "1\n");
                wait_for(&sig.drift, 1, 2000);
                ck_assert_int_eq(sig.drift, 1);

                _cleanup_(json_decrefp) json_t *g = get_drift();
                ck_assert_int_eq(json_array_size(g), 1);
                json_t *e = json_array_get(g, 0);
                ck_assert_str_eq(json_string_value(json_object_get(e, "knob")), "sysctl/kernel.timer_migration");
                ck_assert_str_eq(json_string_value(json_object_get(e, "domain")), "sysctl");
                ck_assert_str_eq(json_string_value(json_object_get(e, "expected")), "0");
                ck_assert_str_eq(json_string_value(json_object_get(e, "actual")), "1");
                ck_assert_int_eq(get_u(client, "DriftCount"), json_array_size(g));

                /* VerifyTyped says what Verify's document says. */
                _cleanup_(json_decrefp) json_t *t = verify_typed(), *v = reply_json(call0(client, "Verify"));
                ck_assert(json_is_false(json_object_get(t, "in_sync")));
                ck_assert(json_equal(json_object_get(t, "in_sync"), json_object_get(v, "in_sync")));
                ck_assert(json_equal(json_object_get(t, "reboot_required"), json_object_get(v, "reboot_required")));
                ck_assert(json_equal(json_object_get(t, "drift"), json_object_get(v, "drift")));
                ck_assert_int_eq(json_integer_value(json_object_get(t, "reboot_pending")),
                                 json_array_size(json_object_get(v, "reboot_pending")));
                ck_assert_int_eq(json_integer_value(json_object_get(t, "checked")),
                                 json_integer_value(json_object_get(v, "checked")));

                _cleanup_(json_decrefp) json_t *d = NULL;
                assert_describe_same(vs, fds[1], &d);
                ck_assert_str_eq(json_string_value(json_object_get(d, "profile")), "realtime");
                ck_assert(json_is_false(json_object_get(d, "in_sync")));
                ck_assert(json_is_true(json_object_get(d, "reboot_required")));
                ck_assert_int_eq(json_integer_value(json_object_get(d, "drift_count")), 1);
                ck_assert(json_equal(json_object_get(d, "drift"), g));
                ck_assert_int_gt(json_integer_value(json_object_get(d, "watched_files")), 0);
        }
        manager_varlink_detach(manager);
        close(fds[1]);
}
END_TEST

/* ---- the listener list ---- */

typedef struct Heard {
        unsigned applied, reverted, drift, corrected, props;
        char last_knob[128];
} Heard;

static void heard_applied(Manager *m, const char *profile, bool external, void *userdata) {
        ((Heard *) userdata)->applied++;
}

static void heard_reverted(Manager *m, void *userdata) {
        ((Heard *) userdata)->reverted++;
}

static void heard_drift(Manager *m, ManagerDriftEvent ev, const DriftEntry *entries, size_t n, void *userdata) {
        Heard *h = userdata;
        if (ev == MANAGER_DRIFT_CORRECTED)
                h->corrected++;
        else
                h->drift++;
        if (n > 0)
                snprintf(h->last_knob, sizeof(h->last_knob), "%s", entries[n - 1].knob);
}

static void heard_props(Manager *m, void *userdata) {
        ((Heard *) userdata)->props++;
}

START_TEST(test_listeners) {
        Heard one = {}, two = {};
        ManagerListener l = {
                .applied = heard_applied,
                .reverted = heard_reverted,
                .drift = heard_drift,
                .properties_changed = heard_props,
        };
        l.userdata = &one;
        ck_assert_int_ge(manager_add_listener(manager, &l), 0);
        l.userdata = &two;
        ck_assert_int_ge(manager_add_listener(manager, &l), 0);

        /* An event reaches every listener, D-Bus's too (a signal). */
        DriftEntry e = { .knob = (char *) "sysctl/test", .domain = (char *) "sysctl", .expected = (char *) "0" };
        manager_emit_drift(manager, MANAGER_DRIFT_DETECTED, &e, 1);
        ck_assert_int_eq(one.drift, 1);
        ck_assert_int_eq(two.drift, 1);
        ck_assert_str_eq(two.last_knob, "sysctl/test");
        wait_for(&sig.drift, 1, 2000);
        ck_assert_int_eq(sig.drift, 1);
        ck_assert_str_eq(sig.last_knob, "sysctl/test");

        if (geteuid() == 0) {
                _cleanup_(json_decrefp) json_t *a = reply_json(call_s(client, "Apply", "realtime"));
                ck_assert(json_is_true(json_object_get(a, "ok")));
                ck_assert_int_eq(one.applied, 1);
                ck_assert_int_eq(two.applied, 1);
                ck_assert_int_gt(two.props, 0);
                test_write(host_dir, "proc/sys/kernel/timer_migration", "1\n");
                wait_for(&two.drift, 2, 2000);
                ck_assert_int_eq(one.drift, 2);
                ck_assert_int_eq(two.drift, 2);
                ck_assert_str_eq(one.last_knob, "sysctl/kernel.timer_migration");
                _cleanup_(json_decrefp) json_t *c = reply_json(call0(client, "Correct"));
                ck_assert_int_eq(one.corrected, 1);
                ck_assert_int_eq(two.corrected, 1);
                _cleanup_(json_decrefp) json_t *r = reply_json(call0(client, "Revert"));
                ck_assert_int_eq(one.reverted, 1);
                ck_assert_int_eq(two.reverted, 1);
        }

        /* A listener removed hears nothing more; the others still do. */
        manager_remove_listener(manager, &one);
        unsigned before = one.drift;
        manager_emit_drift(manager, MANAGER_DRIFT_DETECTED, &e, 1);
        ck_assert_int_eq(one.drift, before);
        ck_assert_int_eq(two.drift, before + 1);
        manager_remove_listener(manager, &two);
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
        tcase_add_test(tr, test_typed_members);
        tcase_add_test(tr, test_listeners);
        test_add_root_tcase(s, tr,
                            "Apply, Correct and Revert need a root peer, and a peer of another uid is made with "
                            "seteuid()");
        return s;
}

int main(void) {
        return test_run(suite());
}
