/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "host.h"
#include "manager-internal.h"
#include "strv.h"

/* The manager's life (new, start-up, free), what it announces (properties, listeners) and what
 * makes it look (the watcher's events, the safety timer, SIGHUP). What it does on each is in
 * manager-check.c, manager-apply.c and manager-newcomers.c. */

static const char * const drift_policy_table[_DRIFT_POLICY_MAX] = {
        [DRIFT_REPORT] = "report",
        [DRIFT_CORRECT] = "correct",
};

DriftPolicy drift_policy_from_string(const char *s) {
        for (int i = 0; s && i < _DRIFT_POLICY_MAX; i++)
                if (streq(drift_policy_table[i], s))
                        return (DriftPolicy) i;
        return _DRIFT_POLICY_INVALID;
}

const char *drift_policy_to_string(DriftPolicy p) {
        return p >= 0 && p < _DRIFT_POLICY_MAX ? drift_policy_table[p] : NULL;
}

/* A call builds the host's topology, the profile, the plan, a whole journal or an answer of
 * hundreds of knobs, and frees them again: give the heap back once the answer is out (the loop
 * runs post sources after every other), so that the daemon idles at its own size, not at its
 * largest. The long-lived data is small and packed (the Journal); what malloc_trim() cannot give
 * back is the pages it shares with them. */
static int on_trim(sd_event_source *s, void *userdata) {
        (void) malloc_trim(0);
        return 0;
}

void manager_trim_later(Manager *m) {
        if (m->trim_source)
                (void) sd_event_source_set_enabled(m->trim_source, SD_EVENT_ONESHOT);
}

const char *manager_active_profile(Manager *m) {
        return m->profile;
}

unsigned manager_drift_count(Manager *m) {
        return (unsigned) (m->drift.n + m->tasks.n);
}

bool manager_in_sync(Manager *m) {
        return manager_drift_count(m) == 0;
}

bool manager_reboot_required(Manager *m) {
        return m->reboot_required;
}

void manager_properties_update(Manager *m) {
        bool in_sync = manager_in_sync(m);
        unsigned count = manager_drift_count(m);
        if (m->emitted.valid && m->emitted.in_sync == in_sync && m->emitted.drift_count == count &&
            m->emitted.reboot_required == m->reboot_required && streq_ptr(m->emitted.profile, m->profile))
                return;
        m->emitted.valid = true;
        m->emitted.in_sync = in_sync;
        m->emitted.drift_count = count;
        m->emitted.reboot_required = m->reboot_required;
        free(m->emitted.profile);
        m->emitted.profile = m->profile ? strdup(m->profile) : NULL;
        for (size_t i = 0; i < m->n_listeners; i++)
                if (m->listeners[i].properties_changed)
                        m->listeners[i].properties_changed(m, m->listeners[i].userdata);
        if (!m->profile)
                (void) sd_notify(0, "STATUS=No profile applied; waiting for Apply");
        else
                (void) sd_notifyf(0, "STATUS=%s: %s%s; watching %zu files", m->profile,
                                  in_sync ? "in sync" : "drift detected", m->reboot_required ? ", reboot pending" : "",
                                  m->watcher ? watcher_n_files(m->watcher) : 0);
}

int manager_add_listener(Manager *m, const ManagerListener *l) {
        ManagerListener *n = realloc(m->listeners, (m->n_listeners + 1) * sizeof(ManagerListener));
        if (!n)
                return -ENOMEM;
        m->listeners = n;
        m->listeners[m->n_listeners++] = *l;
        return 0;
}

void manager_remove_listener(Manager *m, void *userdata) {
        for (size_t i = 0; i < m->n_listeners; i++)
                if (m->listeners[i].userdata == userdata) {
                        memmove(&m->listeners[i], &m->listeners[i + 1],
                                (m->n_listeners - i - 1) * sizeof(ManagerListener));
                        m->n_listeners--;
                        return;
                }
}

void manager_emit_drift(Manager *m, ManagerDriftEvent event, const DriftEntry *entries, size_t n) {
        for (size_t i = 0; i < m->n_listeners; i++)
                if (m->listeners[i].drift)
                        m->listeners[i].drift(m, event, entries, n, m->listeners[i].userdata);
}

void manager_emit_applied(Manager *m, const char *profile, bool external) {
        for (size_t i = 0; i < m->n_listeners; i++)
                if (m->listeners[i].applied)
                        m->listeners[i].applied(m, profile, external, m->listeners[i].userdata);
}

void manager_emit_apply_failed(Manager *m, const char *profile) {
        for (size_t i = 0; i < m->n_listeners; i++)
                if (m->listeners[i].apply_failed)
                        m->listeners[i].apply_failed(m, profile, m->listeners[i].userdata);
}

void manager_emit_audited(Manager *m, const json_t *doc) {
        for (size_t i = 0; i < m->n_listeners; i++)
                if (m->listeners[i].audited)
                        m->listeners[i].audited(m, doc, m->listeners[i].userdata);
}

void manager_emit_reverted(Manager *m) {
        for (size_t i = 0; i < m->n_listeners; i++)
                if (m->listeners[i].reverted)
                        m->listeners[i].reverted(m, m->listeners[i].userdata);
}

static void on_knobs_changed(Watcher *w, char **knobs, void *userdata) {
        Manager *m = userdata;
        log_debug("Knob files changed: %zu knob(s), first %s", strv_length(knobs), strempty(knobs[0]));
        manager_check_some(m, knobs);
}

static void on_device_added(Watcher *w, const char *action, const char *devpath, void *userdata) {
        Manager *m = userdata;
        log_debug("Device event: %s %s", action, devpath);
        manager_newcomers_device_added(m);
}

static void on_kthreads_forked(Watcher *w, void *userdata) {
        Manager *m = userdata;
        log_debug("kthreadd forked: checking kernel threads");
        manager_check_flagged(m, BACKEND_FOLLOWS_FORKS);
        (void) manager_adopt_new(m, "new kernel threads", NULL);
}

static void on_tasks_changed(Watcher *w, const int *pids, size_t n_pids, const int *gone, size_t n_gone, bool overflow,
                             void *userdata) {
        manager_task_events(userdata, pids, n_pids, gone, n_gone, overflow);
}

/* Rolls back a transaction the journal holds open: one a crash interrupted, or one whose run could
 * not close it (its journal's last write failed even after putting the host back). With !wait, only
 * when no run holds the lock (an open transaction is then someone's apply in progress). */
static int recover_open(Manager *m, bool wait) {
        _cleanup_(host_freep) Host *host = NULL;
        _cleanup_(journal_store_unlockp) JournalStore *lock = NULL;
        EngineResult er = {};
        int r;

        if (!engine_needs_recovery(m->root, m->store))
                return 0;
        r = journal_store_lock(m->store, wait, NULL);
        if (r == -EWOULDBLOCK)
                return 0;
        if (r < 0)
                return log_error_errno(r, "Cannot take the journal lock: %m");
        lock = m->store;
        r = host_discover(m->root, 0, &host);
        if (r < 0)
                return log_error_errno(r, "Cannot read the host's topology under %s: %m", m->root->path);
        r = engine_recover(m->root, m->store, host, &er);
        if (r < 0)
                (void) log_error_errno(r, "Cannot roll back the interrupted transaction: %m");
        for (char **n = er.notes; n && *n; n++)
                log_warning("%s", *n);
        engine_result_done(&er);
        return 0;
}

static void safety_check(Manager *m) {
        (void) manager_journal_reload(m, NULL);
        if (m->journal && m->journal->transaction_open && recover_open(m, /* wait= */ false) >= 0)
                (void) manager_journal_reload(m, NULL);
        if (!m->profile)
                return;
        (void) manager_check_all(m, NULL);
        manager_newcomers_look(m, /* force= */ false);
}

static void on_cpus_changed(Watcher *w, void *userdata) {
        Manager *m = userdata;
        log_debug("A CPU went offline or came online: what the kernel moves is read again at the next look");
        m->live.hotplug = true;
}

static void on_tick(Watcher *w, void *userdata) {
        Manager *m = userdata;
        m->safety_checks++;
        safety_check(m);
}

static void on_journal_changed(Watcher *w, void *userdata) {
        Manager *m = userdata;
        bool changed = false;
        _cleanup_free_ char *before = m->profile ? strdup(m->profile) : NULL;
        if (manager_journal_reload(m, &changed) < 0 || !changed)
                return;
        if (m->journal && m->journal->transaction_open)
                return; /* someone is applying; the commit will be another change */
        log_info("The journal was changed by another program; active profile: %s", strempty(m->profile));
        if (!streq_ptr(before, m->profile) && m->profile)
                manager_emit_applied(m, m->profile, /* external= */ true);
        if (m->profile)
                (void) manager_check_all(m, NULL);
        else {
                drift_set_clear(&m->drift);
                m->reboot_required = false;
        }
        manager_properties_update(m);
}

void manager_reload(Manager *m) {
        (void) manager_journal_reload(m, NULL);
        if (m->profile) {
                (void) manager_check_all(m, NULL);
                /* Asked for: every new object the journal lacks is placed, whatever the last look
                 * made of it. */
                manager_newcomers_look(m, /* force= */ true);
        }
        manager_properties_update(m);
}

int manager_new(sd_event *event, Root *root, const ManagerOptions *options, Manager **ret) {
        _cleanup_(manager_freep) Manager *m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->event = sd_event_ref(event);
        m->root = root;
        m->options = *options;
        int r = journal_store_open(root, &m->store);
        if (r < 0)
                return r;
        m->corrections = json_object();
        if (!m->corrections)
                return -ENOMEM;
        m->methods = (MethodBinding) { .interface = &manager_interface, .userdata = m };
        manager_settings_reset(m);
        static const WatchCallbacks cb = {
                .knobs_changed = on_knobs_changed,
                .device_added = on_device_added,
                .kthreads_forked = on_kthreads_forked,
                .tasks_changed = on_tasks_changed,
                .tick = on_tick,
                .journal_changed = on_journal_changed,
                .cpus_changed = on_cpus_changed,
        };
        r = watcher_new(event, root, &cb, m, &m->watcher);
        if (r < 0)
                return r;
        r = sd_event_add_post(event, &m->trim_source, on_trim, m);
        if (r < 0)
                return r;
        (void) sd_event_source_set_enabled(m->trim_source, SD_EVENT_OFF);
        (void) sd_event_source_set_description(m->trim_source, "manager-trim");
        if (options->debounce_usec)
                watcher_set_debounce(m->watcher, options->debounce_usec);
        manager_apply_interval(m);
        *ret = TAKE_PTR(m);
        return 0;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        /* Audits in their window are answered (an error) while their front ends are there. */
        manager_audits_free(m);
        /* The front ends let go, last attached first. */
        while (m->n_listeners > 0) {
                ManagerListener l = m->listeners[--m->n_listeners];
                if (l.detach)
                        l.detach(m, l.userdata);
        }
        free(m->listeners);
        watcher_free(m->watcher);
        sd_event_source_disable_unref(m->trim_source);
        manager_newcomers_free(m);
        journal_free(m->journal);
        journal_store_free(m->store);
        free(m->journal_error);
        drift_set_done(&m->drift);
        strv_free(m->live.reboot_pending);
        strv_free(m->live.vanished);
        string_set_done(&m->live.unfiled);
        json_decref(m->corrections);
        string_set_done(&m->not_owned);
        drift_set_done(&m->tasks);
        task_rules_done(&m->task_rules);
        free(m->profile);
        free(m->settings_hash);
        free(m->emitted.profile);
        sd_event_unref(m->event);
        free(m);
        return NULL;
}

int manager_startup(Manager *m) {
        _cleanup_(host_freep) Host *host = NULL;
        int r;

        /* 1. An apply or revert a crash interrupted is rolled back first. */
        r = recover_open(m, /* wait= */ true);
        if (r < 0)
                return r;

        /* 2. The journal. Its knob files are watched once the profile is applied again (4.), then
         *    checked all: the watcher's lists are not held beside the re-apply (on 1024 CPUs, 2 MB
         *    of rtpartd's peak). */
        m->starting = true;
        r = manager_journal_reload(m, NULL);
        m->starting = r >= 0;
        if (r == -EBADMSG)
                return log_error_errno(r, "%s; refusing to touch the host or the journal",
                                       m->journal_error ?: "The journal is not an rtpart journal");
        if (r < 0)
                return log_error_errno(r, "Cannot read the journal: %m");

        /* 3. The active profile, again: after a reboot the runtime knobs are back at the kernel's
         *    defaults, and IRQ numbers and kernel threads may differ. */
        if (m->profile) {
                _cleanup_(json_decrefp) json_t *doc = NULL;
                ManagerError e = {};
                log_info("Re-applying %s as applied%s%s%s", m->profile, m->journal->profile_path ? " (from " : "",
                         strempty(m->journal->profile_path), m->journal->profile_path ? ")" : "");
                r = manager_apply_full(m, /* name= */ NULL, &doc, &e);
                if (r < 0) {
                        _cleanup_free_ char *msg = manager_error_message(&e);
                        log_error("Cannot re-apply %s: %s; watching what the journal holds", m->profile, strempty(msg));
                }
                manager_error_done(&e);
        } else
                log_info("No profile applied; waiting for Apply");

        /* 4. Watch. */
        m->starting = false;
        Root *sr = journal_store_root(m->store);
        const char *dir = journal_store_dir(m->store);
        if (root_mkdir_p(sr, dir, 0755) >= 0) {
                r = watcher_watch_journal(m->watcher, sr, dir);
                if (r < 0)
                        (void) log_warning_errno(r,
                                                 "Cannot watch the journal directory: %m; changes by rtpartctl "
                                                 "--no-daemon are seen at the next safety check");
        }
        if (m->options.uevents) {
                r = watcher_enable_uevents(m->watcher);
                if (r < 0)
                        (void) log_warning_errno(r,
                                                 "Cannot listen to kernel uevents: %m; new devices' IRQs are placed "
                                                 "at the next safety check");
        }
        if (m->options.proc_connector && root_can(m->root, ROOT_CAN_WATCH_PROCESSES)) {
                r = watcher_enable_proc_connector(m->watcher);
                if (r < 0)
                        (void) log_warning_errno(r,
                                                 "Cannot listen to the proc connector: %m; new kernel threads are "
                                                 "checked at the next safety check");
        }
        manager_watch_refresh(m);
        manager_newcomers_start(m);
        if (m->profile)
                (void) manager_check_all(m, NULL);
        manager_properties_update(m);
        manager_trim_later(m);
        log_info("Watching %zu knob files; safety check every %llu s", watcher_n_files(m->watcher),
                 (unsigned long long) (watcher_get_interval(m->watcher) / 1000000ULL));
        return 0;
}
