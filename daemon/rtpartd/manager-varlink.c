/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "manager.h"

/* org.rtpart.Manager: the methods are the table's (manager-methods.c); here is what only varlink
 * has: Watch (alias Monitor) streaming drift to every caller that keeps its call open, and the
 * log of connections refused. */

/* When an event happened, to the millisecond: "2026-12-03T05:05:28.123Z". */
static char *now_iso8601_ms(char buf[static 48]) {
        struct timespec ts;
        struct tm tm;
        char sec[24];
        clock_gettime(CLOCK_REALTIME, &ts);
        if (!gmtime_r(&ts.tv_sec, &tm) || strftime(sec, sizeof(sec), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
                return NULL;
        snprintf(buf, 48, "%s.%03dZ", sec, (int) (ts.tv_nsec / 1000000L));
        return buf;
}

static json_t *event_json(Manager *m, const char *event, json_t *drift) {
        char time[48];
        return json_pack("{s:s, s:s?, s:s?, s:b, s:I, s:o}", "event", event, "time", now_iso8601_ms(time), "profile",
                         manager_active_profile(m), "in_sync", manager_in_sync(m), "drift_count",
                         (json_int_t) manager_drift_count(m), "drift", drift ? json_incref(drift) : json_array());
}

static void stream_remove(Manager *m, VarlinkCall *call) {
        for (size_t i = 0; i < m->n_streams; i++)
                if (m->streams[i] == call) {
                        m->streams[i] = m->streams[--m->n_streams];
                        varlink_call_unref(call);
                        return;
                }
}

static void on_stream_disconnect(VarlinkCall *call, void *userdata) {
        stream_remove(userdata, call);
}

int manager_varlink_watch(VarlinkCall *call, json_t *params, VarlinkCallFlags flags, void *userdata) {
        Manager *m = userdata;
        if (!(flags & VARLINK_CALL_MORE))
                return varlink_call_error(call, VARLINK_ERROR_EXPECTED_MORE, NULL);
        VarlinkCall **n = realloc(m->streams, (m->n_streams + 1) * sizeof(VarlinkCall *));
        if (!n)
                return -ENOMEM;
        m->streams = n;
        m->streams[m->n_streams++] = varlink_call_ref(call);
        varlink_call_set_disconnect(call, on_stream_disconnect, m);
        _cleanup_(json_decrefp) json_t *all = manager_drift_list(m);
        return varlink_call_notify(call, event_json(m, "status", all));
}

/* ---- the manager's events, to every open Watch call ---- */

static void emit(Manager *m, const char *event, json_t *drift) {
        /* Backwards: a failed send drops the stream from the array. */
        for (size_t i = m->n_streams; i-- > 0;) {
                VarlinkCall *c = m->streams[i];
                if (!varlink_call_is_connected(c) || varlink_call_notify(c, event_json(m, event, drift)) < 0) {
                        varlink_call_set_disconnect(c, NULL, NULL);
                        stream_remove(m, c);
                }
        }
}

/* Once per uid per minute at most: a user holding many connections does not flood the log. */
static void on_refused(VarlinkServer *s, uid_t uid, int reason, unsigned n_refused, void *userdata) {
        if (reason == -EUSERS)
                log_warning("varlink: refused %u connection%s of uid %u: it has %u open, the most one user may have",
                            n_refused, n_refused == 1 ? "" : "s", (unsigned) uid, VARLINK_CONNECTIONS_PER_UID_MAX);
        else
                log_warning("varlink: refused %u connection%s of uid %d: %u are open, the last %u kept for root",
                            n_refused, n_refused == 1 ? "" : "s", uid == VARLINK_UID_INVALID ? -1 : (int) uid,
                            (unsigned) varlink_server_n_connections(s), VARLINK_CONNECTIONS_ROOT_RESERVE);
}

static void on_drift(Manager *m, ManagerDriftEvent event, const DriftEntry *entries, size_t n, void *userdata) {
        _cleanup_(json_decrefp) json_t *drift = drift_entries_to_json(entries, n);
        if (drift)
                emit(m, event == MANAGER_DRIFT_CORRECTED ? "corrected" : "drift", drift);
}

static void on_applied(Manager *m, const char *profile, bool external, void *userdata) {
        /* Another program's apply reaches a stream as the drift check that follows it. */
        if (!external)
                emit(m, "applied", NULL);
}

static void on_reverted(Manager *m, void *userdata) {
        emit(m, "reverted", NULL);
}

static void on_detach(Manager *m, void *userdata) {
        manager_varlink_detach(m);
}

int manager_varlink_attach(Manager *m, VarlinkServer *server) {
        int r = method_varlink_add(&m->methods, server);
        if (r < 0)
                return r;
        r = manager_add_listener(m,
                                 &(const ManagerListener) {
                                         .applied = on_applied,
                                         .reverted = on_reverted,
                                         .drift = on_drift,
                                         .detach = on_detach,
                                         .userdata = &m->streams, /* identifies this listener */
                                 });
        if (r < 0)
                return r;
        varlink_server_set_refused(server, on_refused, m);
        m->varlink = server;
        return 0;
}

void manager_varlink_detach(Manager *m) {
        manager_remove_listener(m, &m->streams);
        while (m->n_streams > 0) {
                VarlinkCall *c = m->streams[m->n_streams - 1];
                varlink_call_set_disconnect(c, NULL, NULL);
                stream_remove(m, c);
        }
        free(m->streams);
        m->streams = NULL;
        m->varlink = NULL;
}
