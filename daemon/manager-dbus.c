/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manager.h"

/* org.rtpart.Manager1 on /org/rtpart/Manager1. Every answer is the JSON document rtpartctl --json
 * prints for the same command, as one string; signals carry drift as a(ssss): knob, domain,
 * expected, actual ("(absent)" for a value that is not there). */

#define ABSENT "(absent)"

static const sd_bus_error_map manager_errors[] = {
        SD_BUS_ERROR_MAP(MANAGER_DBUS_ERROR_PREFIX MANAGER_ERROR_INVALID_PROFILE, EINVAL),
        SD_BUS_ERROR_MAP(MANAGER_DBUS_ERROR_PREFIX MANAGER_ERROR_PERMISSION_DENIED, EACCES),
        SD_BUS_ERROR_MAP(MANAGER_DBUS_ERROR_PREFIX MANAGER_ERROR_NOT_APPLIED, ENOENT),
        SD_BUS_ERROR_MAP(MANAGER_DBUS_ERROR_PREFIX MANAGER_ERROR_FAILED, EIO),
        SD_BUS_ERROR_MAP_END
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

static int check_root(sd_bus_message *msg, sd_bus_error *error) {
        int r = sender_is_root(msg);
        if (r <= 0)
                return sd_bus_error_setf(error, MANAGER_DBUS_ERROR_PREFIX MANAGER_ERROR_PERMISSION_DENIED,
                                         "%s changes the host and needs root (uid 0); the caller is %s",
                                         sd_bus_message_get_member(msg), r < 0 ? "unknown" : "not root");
        return 0;
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
        json_array_foreach(doc, i, p) {
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
        SD_BUS_METHOD_WITH_ARGS("ListProfiles",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("a(ss)", profiles),
                                method_list_profiles,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Plan",
                                SD_BUS_ARGS("s", profile),
                                SD_BUS_RESULT("s", plan),
                                method_plan,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Apply",
                                SD_BUS_ARGS("s", profile),
                                SD_BUS_RESULT("s", result),
                                method_apply,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Verify",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("s", result),
                                method_verify,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Revert",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("s", result),
                                method_revert,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Correct",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("s", result),
                                method_correct,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Status",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("s", status),
                                method_status,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("DriftDetected", SD_BUS_ARGS("a(ssss)", drift), 0),
        SD_BUS_SIGNAL_WITH_ARGS("Corrected", SD_BUS_ARGS("a(ssss)", drift), 0),
        SD_BUS_SIGNAL_WITH_ARGS("ProfileApplied", SD_BUS_ARGS("s", profile), 0),
        SD_BUS_VTABLE_END
};

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
        m->bus = sd_bus_ref(bus);
        return 0;
}

void manager_dbus_detach(Manager *m) {
        m->bus_slot = sd_bus_slot_unref(m->bus_slot);
        m->bus = sd_bus_unref(m->bus);
}

void manager_dbus_emit_drift(Manager *m, const char *signal, json_t *drift) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = NULL;
        size_t i;
        json_t *d;

        if (!m->bus)
                return;
        if (sd_bus_message_new_signal(m->bus, &msg, MANAGER_DBUS_PATH, MANAGER_DBUS_INTERFACE, signal) < 0 ||
            sd_bus_message_open_container(msg, 'a', "(ssss)") < 0)
                return;
        json_array_foreach(drift, i, d) {
                const char *exp = json_string_value(json_object_get(d, "expected"));
                const char *act = json_string_value(json_object_get(d, "actual"));
                if (sd_bus_message_append(msg, "(ssss)", json_string_value(json_object_get(d, "knob")),
                                          json_string_value(json_object_get(d, "domain")), exp ? exp : ABSENT,
                                          act ? act : ABSENT) < 0)
                        return;
        }
        if (sd_bus_message_close_container(msg) < 0)
                return;
        (void) sd_bus_send(m->bus, msg, NULL);
}

void manager_dbus_emit_applied(Manager *m, const char *profile) {
        if (m->bus)
                (void) sd_bus_emit_signal(m->bus, MANAGER_DBUS_PATH, MANAGER_DBUS_INTERFACE, "ProfileApplied", "s",
                                          strempty(profile));
}

void manager_dbus_emit_properties(Manager *m) {
        if (m->bus)
                (void) sd_bus_emit_properties_changed(m->bus, MANAGER_DBUS_PATH, MANAGER_DBUS_INTERFACE, "ActiveProfile",
                                                      "InSync", "RebootRequired", "DriftCount", NULL);
}
