/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manager.h"
#include "strv.h"

/* org.rtpart.Manager1 on /org/rtpart/Manager1. Typed where the shape is fixed: the properties,
 * ListProfiles, GetDrift, VerifyTyped and the signals carry drift as a(ssss): knob, domain,
 * expected, actual ("(absent)" for a value that is not there). Plan, Apply, Verify, Revert, Correct
 * and Status answer with the JSON document rtpartctl --json prints for the same command, as one
 * string; Describe with the document varlink's Describe answers (manager_describe()). */

#define ABSENT "(absent)"

static const sd_bus_error_map manager_errors[] = {
        SD_BUS_ERROR_MAP(MANAGER_DBUS_ERROR_PREFIX MANAGER_ERROR_INVALID_PROFILE, EINVAL),
        SD_BUS_ERROR_MAP(MANAGER_DBUS_ERROR_PREFIX MANAGER_ERROR_PERMISSION_DENIED, EACCES),
        SD_BUS_ERROR_MAP(MANAGER_DBUS_ERROR_PREFIX MANAGER_ERROR_NOT_APPLIED, ENOENT),
        SD_BUS_ERROR_MAP(MANAGER_DBUS_ERROR_PREFIX MANAGER_ERROR_FAILED, EIO), SD_BUS_ERROR_MAP_END
};

static int reply_json(sd_bus_message *msg, json_t *doc) {
        _cleanup_free_ char *text = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
        json_decref(doc);
        if (!text)
                return -ENOMEM;
        return sd_bus_reply_method_return(msg, "s", text);
}

static int reply_error(ManagerError *e, int r, sd_bus_error *error) {
        if (!e->name)
                return r; /* sd-bus answers with the errno's own error */
        char name[128];
        snprintf(name, sizeof(name), MANAGER_DBUS_ERROR_PREFIX "%s", e->name);
        r = sd_bus_error_setf(error, name, "%s", e->message ? e->message : e->name);
        manager_error_done(e);
        return r;
}

/* Changing the host needs uid 0: the D-Bus policy lets anyone call, the sender's credentials
 * decide. Over a direct connection (tests) they are the socket peer's. */
static int sender_is_root(sd_bus_message *msg) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        uid_t uid = (uid_t) -1;
        int r = sd_bus_query_sender_creds(msg, SD_BUS_CREDS_EUID, &creds);
        if (r >= 0)
                r = sd_bus_creds_get_euid(creds, &uid);
        return r < 0 ? r : uid == 0;
}

static int check_root_because(sd_bus_message *msg, const char *because, sd_bus_error *error) {
        int r = sender_is_root(msg);
        if (r <= 0)
                return sd_bus_error_setf(error, MANAGER_DBUS_ERROR_PREFIX MANAGER_ERROR_PERMISSION_DENIED,
                                         "%s %s and needs root (uid 0); the caller is %s",
                                         sd_bus_message_get_member(msg), because, r < 0 ? "unknown" : "not root");
        return 0;
}

static int check_root(sd_bus_message *msg, sd_bus_error *error) {
        return check_root_because(msg, "changes the host", error);
}

static int method_list_profiles(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Manager *m = userdata;
        ManagerError e = {};
        json_t *doc = NULL;
        size_t i;
        json_t *p;

        int r = manager_list_profiles(m, &doc, &e);
        if (r < 0)
                return reply_error(&e, r, error);
        _cleanup_(json_decrefp) json_t *ref = doc;
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', "(ss)");
        if (r < 0)
                return r;
        json_array_foreach (doc, i, p) {
                r = sd_bus_message_append(reply, "(ss)", json_string_value(json_object_get(p, "name")),
                                          strempty(json_string_value(json_object_get(p, "summary"))));
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_plan(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        ManagerError e = {};
        const char *profile;
        json_t *doc = NULL;

        int r = sd_bus_message_read(msg, "s", &profile);
        if (r < 0)
                return r;
        if (profile_is_path(profile) && sender_is_root(msg) <= 0)
                return sd_bus_error_setf(error, MANAGER_DBUS_ERROR_PREFIX MANAGER_ERROR_PERMISSION_DENIED, "%s",
                                         MANAGER_PLAN_PATH_DENIED);
        r = manager_plan(m, profile, &doc, &e);
        if (r < 0)
                return reply_error(&e, r, error);
        return reply_json(msg, doc);
}

static int method_apply(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        ManagerError e = {};
        const char *profile;
        json_t *doc = NULL;

        int r = sd_bus_message_read(msg, "s", &profile);
        if (r < 0)
                return r;
        r = check_root(msg, error);
        if (r < 0)
                return r;
        r = manager_apply(m, profile, &doc, &e);
        if (r < 0)
                return reply_error(&e, r, error);
        return reply_json(msg, doc);
}

typedef int (*ManagerCall)(Manager *m, json_t **ret, ManagerError *e);

static int method_simple(sd_bus_message *msg, Manager *m, ManagerCall call, bool privileged, sd_bus_error *error) {
        ManagerError e = {};
        json_t *doc = NULL;
        int r;

        if (privileged) {
                r = check_root(msg, error);
                if (r < 0)
                        return r;
        }
        r = call(m, &doc, &e);
        if (r < 0)
                return reply_error(&e, r, error);
        return reply_json(msg, doc);
}

/* Audit: answered when its window ends (manager-audit.c). */
static void on_audit_done(Manager *m, json_t *doc, const ManagerError *e, void *userdata) {
        sd_bus_message *msg = userdata;
        if (doc)
                (void) reply_json(msg, doc);
        else {
                char name[128];
                snprintf(name, sizeof(name), MANAGER_DBUS_ERROR_PREFIX "%s", e->name);
                (void) sd_bus_reply_method_errorf(msg, name, "%s", strempty(e->message));
        }
        sd_bus_message_unref(msg);
}

static int method_audit(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        ManagerError e = {};
        uint32_t seconds;

        int r = sd_bus_message_read(msg, "u", &seconds);
        if (r < 0)
                return r;
        /* Root only: it reads every task's place, and takes a snapshot of them twice. */
        r = check_root_because(msg, "reads every task of the host", error);
        if (r < 0)
                return r;
        r = manager_audit(m, seconds, NULL, on_audit_done, sd_bus_message_ref(msg), NULL, &e);
        if (r < 0) {
                sd_bus_message_unref(msg);
                return reply_error(&e, r, error);
        }
        return 1; /* answered when the window ends */
}

static int method_verify(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return method_simple(msg, userdata, manager_verify, false, error);
}

static int method_revert(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return method_simple(msg, userdata, manager_revert, true, error);
}

static int method_status(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return method_simple(msg, userdata, manager_status, false, error);
}

static int method_correct(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return method_simple(msg, userdata, manager_correct, true, error);
}

static int method_describe(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return method_simple(msg, userdata, manager_describe, false, error);
}

/* Into an open a(ssss). */
static int append_entries(sd_bus_message *msg, const DriftEntry *entries, size_t n) {
        int r = 0;
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = sd_bus_message_append(msg, "(ssss)", entries[i].knob, entries[i].domain,
                                          entries[i].expected ?: ABSENT, entries[i].actual ?: ABSENT);
        return r;
}

static int append_drift(sd_bus_message *msg, const DriftEntry *entries, size_t n) {
        int r = sd_bus_message_open_container(msg, 'a', "(ssss)");
        if (r >= 0)
                r = append_entries(msg, entries, n);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(msg);
}

static int method_get_drift(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Manager *m = userdata;
        int r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        /* The knobs, then the user tasks: one array, as DriftCount counts them. */
        r = sd_bus_message_open_container(reply, 'a', "(ssss)");
        if (r >= 0)
                r = append_entries(reply, m->drift.entries, m->drift.n);
        if (r >= 0)
                r = append_entries(reply, m->tasks.entries, m->tasks.n);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

/* Verify's document as C types: (b in_sync, b reboot_required, a(ssss) drift, as reboot_pending,
 * as unmovable, u checked). */
static int method_verify_typed(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        ManagerError e = {};
        VerifyResult v = {};

        int r = manager_verify_result(userdata, &v, NULL, &e);
        if (r < 0)
                return reply_error(&e, r, error);
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_append(reply, "bb", v.n_drift == 0, strv_length(v.reboot_pending) > 0);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(ssss)");
        for (size_t i = 0; r >= 0 && i < v.n_drift; i++)
                r = sd_bus_message_append(reply, "(ssss)", v.drift[i].knob, domain_to_string(v.drift[i].domain),
                                          v.drift[i].expected ?: ABSENT, v.drift[i].actual ?: ABSENT);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = sd_bus_message_append_strv(reply, v.reboot_pending);
        if (r >= 0)
                r = sd_bus_message_append_strv(reply, v.unmovable);
        if (r >= 0)
                r = sd_bus_message_append(reply, "u", (uint32_t) v.checked);
        verify_result_done(&v);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int property_get_active_profile(sd_bus *bus, const char *path, const char *interface, const char *property,
                                       sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", strempty(manager_active_profile(userdata)));
}

static int property_get_in_sync(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "b", manager_in_sync(userdata));
}

static int property_get_reboot_required(sd_bus *bus, const char *path, const char *interface, const char *property,
                                        sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "b", manager_reboot_required(userdata));
}

static int property_get_drift_count(sd_bus *bus, const char *path, const char *interface, const char *property,
                                    sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "u", (uint32_t) manager_drift_count(userdata));
}

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("ActiveProfile", "s", property_get_active_profile, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("InSync", "b", property_get_in_sync, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("RebootRequired", "b", property_get_reboot_required, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("DriftCount", "u", property_get_drift_count, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_METHOD_WITH_ARGS("ListProfiles", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(ss)", profiles), method_list_profiles,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Plan", SD_BUS_ARGS("s", profile), SD_BUS_RESULT("s", plan), method_plan,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Apply", SD_BUS_ARGS("s", profile), SD_BUS_RESULT("s", result), method_apply,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Verify", SD_BUS_NO_ARGS, SD_BUS_RESULT("s", result), method_verify,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Revert", SD_BUS_NO_ARGS, SD_BUS_RESULT("s", result), method_revert,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Correct", SD_BUS_NO_ARGS, SD_BUS_RESULT("s", result), method_correct,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Status", SD_BUS_NO_ARGS, SD_BUS_RESULT("s", status), method_status,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetDrift", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(ssss)", drift), method_get_drift,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("VerifyTyped", SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("b", in_sync, "b", reboot_required, "a(ssss)", drift, "as",
                                              reboot_pending, "as", unmovable, "u", checked),
                                method_verify_typed, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Audit", SD_BUS_ARGS("u", seconds), SD_BUS_RESULT("s", audit), method_audit,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Describe", SD_BUS_NO_ARGS, SD_BUS_RESULT("s", json), method_describe,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("DriftDetected", SD_BUS_ARGS("a(ssss)", drift), 0),
        SD_BUS_SIGNAL_WITH_ARGS("Corrected", SD_BUS_ARGS("a(ssss)", drift), 0),
        SD_BUS_SIGNAL_WITH_ARGS("ProfileApplied", SD_BUS_ARGS("s", profile), 0),
        SD_BUS_VTABLE_END
};

/* ---- the manager's events, as signals ---- */

static void on_drift(Manager *m, ManagerDriftEvent event, const DriftEntry *entries, size_t n, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = NULL;

        if (!m->bus)
                return;
        if (sd_bus_message_new_signal(m->bus, &msg, MANAGER_DBUS_PATH, MANAGER_DBUS_INTERFACE,
                                      event == MANAGER_DRIFT_CORRECTED ? "Corrected" : "DriftDetected") < 0 ||
            append_drift(msg, entries, n) < 0)
                return;
        (void) sd_bus_send(m->bus, msg, NULL);
}

static void on_applied(Manager *m, const char *profile, bool external, void *userdata) {
        if (m->bus)
                (void) sd_bus_emit_signal(m->bus, MANAGER_DBUS_PATH, MANAGER_DBUS_INTERFACE, "ProfileApplied", "s",
                                          strempty(profile));
}

static void on_properties_changed(Manager *m, void *userdata) {
        if (m->bus)
                (void) sd_bus_emit_properties_changed(m->bus, MANAGER_DBUS_PATH, MANAGER_DBUS_INTERFACE,
                                                      "ActiveProfile", "InSync", "RebootRequired", "DriftCount", NULL);
}

static void on_detach(Manager *m, void *userdata) {
        manager_dbus_detach(m);
}

int manager_dbus_attach(Manager *m, sd_bus *bus) {
        int r;

        if (m->bus)
                return -EBUSY;
        r = sd_bus_error_add_map(manager_errors);
        if (r < 0)
                return r;
        r = sd_bus_add_object_vtable(bus, &m->bus_slot, MANAGER_DBUS_PATH, MANAGER_DBUS_INTERFACE, manager_vtable, m);
        if (r < 0)
                return r;
        r = manager_add_listener(m,
                                 &(const ManagerListener) {
                                         .applied = on_applied,
                                         .drift = on_drift,
                                         .properties_changed = on_properties_changed,
                                         .detach = on_detach,
                                         .userdata = &m->bus_slot, /* identifies this listener */
                                 });
        if (r < 0) {
                m->bus_slot = sd_bus_slot_unref(m->bus_slot);
                return r;
        }
        m->bus = sd_bus_ref(bus);
        return 0;
}

void manager_dbus_detach(Manager *m) {
        manager_remove_listener(m, &m->bus_slot);
        m->bus_slot = sd_bus_slot_unref(m->bus_slot);
        m->bus = sd_bus_unref(m->bus);
}
