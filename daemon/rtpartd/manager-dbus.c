/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdlib.h>

#include "manager.h"

/* org.rtpart.Manager1 on /org/rtpart/Manager1: the methods are the table's (manager-methods.c);
 * here are what only D-Bus has, the properties and the signals, which carry drift as a(ssss). */

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
        SD_BUS_SIGNAL_WITH_ARGS("DriftDetected", SD_BUS_ARGS("a(ssss)", drift), 0),
        SD_BUS_SIGNAL_WITH_ARGS("Corrected", SD_BUS_ARGS("a(ssss)", drift), 0),
        SD_BUS_SIGNAL_WITH_ARGS("ProfileApplied", SD_BUS_ARGS("s", profile), 0),
        SD_BUS_VTABLE_END
};

/* ---- the manager's events, as signals ---- */

static void on_drift(Manager *m, ManagerDriftEvent event, const DriftEntry *entries, size_t n, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = NULL;
        _cleanup_(json_decrefp) json_t *drift = drift_entries_to_json(entries, n);

        if (!m->bus || !drift)
                return;
        if (sd_bus_message_new_signal(m->bus, &msg, MANAGER_DBUS_PATH, MANAGER_DBUS_INTERFACE,
                                      event == MANAGER_DRIFT_CORRECTED ? "Corrected" : "DriftDetected") < 0 ||
            manager_dbus_append_drift(msg, drift) < 0)
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
        r = sd_bus_add_object_vtable(bus, &m->bus_slot, MANAGER_DBUS_PATH, MANAGER_DBUS_INTERFACE, manager_vtable, m);
        if (r >= 0)
                r = method_dbus_add(&m->methods, bus, MANAGER_DBUS_PATH);
        if (r >= 0)
                r = manager_add_listener(m,
                                         &(const ManagerListener) {
                                                 .applied = on_applied,
                                                 .drift = on_drift,
                                                 .properties_changed = on_properties_changed,
                                                 .detach = on_detach,
                                                 .userdata = &m->bus_slot, /* identifies this listener */
                                         });
        if (r < 0) {
                method_dbus_remove(&m->methods);
                m->bus_slot = sd_bus_slot_unref(m->bus_slot);
                return r;
        }
        m->bus = sd_bus_ref(bus);
        return 0;
}

void manager_dbus_detach(Manager *m) {
        manager_remove_listener(m, &m->bus_slot);
        method_dbus_remove(&m->methods);
        m->bus_slot = sd_bus_slot_unref(m->bus_slot);
        m->bus = sd_bus_unref(m->bus);
}
