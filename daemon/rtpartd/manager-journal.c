/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manager-internal.h"
#include "profile.h"
#include "strv.h"

/* The journal as the daemon holds it, and what follows from it: the profile it names prepared for
 * the host (and refused when it does not resolve to the journal's hash), the drift settings, the
 * files watched. */

#define DEFAULT_INTERVAL_USEC (60 * 1000000ULL)

static int profile_failure(ManagerError *e, Error *pe, int r) {
        if (r == -ENOMEM) {
                error_done(pe);
                return -ENOMEM;
        }
        _cleanup_free_ char *msg = error_format(pe, "invalid profile");
        /* Content (and a name that is not found) is the caller's to fix; I/O is ours. */
        manager_error_set(e, r == -EINVAL || r == -ENOENT ? MANAGER_ERROR_INVALID_PROFILE : MANAGER_ERROR_FAILED, r,
                          "%s", msg ? msg : "invalid profile");
        error_done(pe);
        return r;
}

/* The prepare pipeline's failure (lib/engine/prepare.h), in the caller's words. */
static int prepare_failure(Manager *m, PrepareError *pe, int r, ManagerError *e) {
        switch (pe->step) {
        case PREPARE_STEP_HOST:
                manager_error_set(e, MANAGER_ERROR_FAILED, r, "cannot read the host's topology under %s: %s",
                                  m->root->path, strerror(-r));
                break;
        case PREPARE_STEP_PROFILE:
                r = profile_failure(e, &pe->error, r);
                break;
        default:
                manager_error_set(e, MANAGER_ERROR_FAILED, r, "cannot build the plan for %s: %s", strempty(pe->name),
                                  strerror(-r));
        }
        prepare_error_done(pe);
        return r;
}

/* Host, resolution and plan of a profile already built (taken). */
static int prepare_built(Manager *m, Profile *profile, bool want_plan, Prepared *ret, ManagerError *e) {
        PrepareError pe = {};
        int r = prepare_profile_built(m->root, profile, want_plan ? PREPARE_PLAN : 0, ret, &pe);
        return r < 0 ? prepare_failure(m, &pe, r, e) : 0;
}

int manager_prepare(Manager *m, const char *name, bool want_plan, Prepared *ret, ManagerError *e) {
        PrepareError pe = {};
        int r;

        if (!name || !*name)
                return manager_error_set(e, MANAGER_ERROR_INVALID_PROFILE, -EINVAL,
                                         "no profile given; name one of ListProfiles or an absolute path");
        if (profile_is_path(name) && name[0] != '/')
                return manager_error_set(
                        e, MANAGER_ERROR_INVALID_PROFILE, -EINVAL,
                        "%s: rtpartd cannot resolve a relative path; give the absolute path or a profile name", name);
        /* A FIFO, a device or another user's file is refused when opened, before it is read: the
         * event loop never waits on a profile. */
        r = prepare_profile(m->root, name, want_plan ? PREPARE_PLAN : 0, ret, &pe);
        return r < 0 ? prepare_failure(m, &pe, r, e) : 0;
}

/* The journal's profile as root applied it: the document the journal keeps ("source"), never the
 * file at "profile_path", which whoever can write there may have changed or replaced since. A
 * journal written before there was a "source" gets the profile of its name from the profile
 * directories (where apply's ownership checks hold), with a note. */
static int journal_profile(Manager *m, Profile **ret, ManagerError *e) {
        const char *name = m->journal ? m->journal->profile : NULL;
        Error pe = {};
        int r;

        if (!name)
                return manager_error_set(e, MANAGER_ERROR_NOT_APPLIED, -ENOENT, "no profile is applied");
        if (m->journal->source) {
                json_error_t jerr;
                _cleanup_(json_decrefp) json_t *doc = json_loads(m->journal->source, 0, &jerr);
                if (!doc)
                        return manager_error_set(e, MANAGER_ERROR_FAILED, -EBADMSG,
                                                 "the journal's copy of %s is not JSON (%s); apply it again", name,
                                                 jerr.text);
                r = profile_from_document(backend_profile_schema(), name, doc, ret, &pe);
        } else {
                log_notice(
                        "The journal of %s predates stored profiles: loading %s by name from the profile directories, "
                        "not from %s; apply it again to store it",
                        name, name, strempty(m->journal->profile_path));
                if (profile_is_path(name))
                        return manager_error_set(e, MANAGER_ERROR_INVALID_PROFILE, -EINVAL,
                                                 "%s is no profile name; apply the profile again", name);
                r = profile_load(m->root, backend_profile_schema(), name, ret, &pe);
        }
        return r < 0 ? profile_failure(e, &pe, r) : 0;
}

/* Host, resolution and plan of the journal's profile. A resolution whose hash is not the journal's
 * (its stored document edited by hand, the profile directories' file edited since for an older
 * journal, a host whose CPUs changed) is refused, wherever it is asked for (the start-up re-apply,
 * corrections, new objects, the settings): what the host holds is then only compared, never
 * written, until the profile is applied again. */
int manager_prepare_journal(Manager *m, bool want_plan, Prepared *ret, ManagerError *e) {
        Profile *profile = NULL;
        Prepared p = {};
        int r = journal_profile(m, &profile, e);
        if (r < 0)
                return r;
        r = prepare_built(m, profile, want_plan, &p, e);
        if (r < 0)
                return r;
        _cleanup_free_ char *hash = journal_hash(p.resolved->doc);
        if (!hash) {
                prepared_done(&p);
                return -ENOMEM;
        }
        if (!streq_ptr(hash, m->journal->hash)) {
                manager_error_set(
                        e, MANAGER_ERROR_FAILED, -ESTALE,
                        "%s resolves to %s, not to the journal's %s: nothing is written, drift is only reported; "
                        "apply the profile again",
                        m->journal->profile, hash, strempty(m->journal->hash));
                prepared_done(&p);
                return -ESTALE;
        }
        *ret = p;
        return 0;
}

void manager_settings_reset(Manager *m) {
        for (int d = 0; d < _DOMAIN_MAX; d++)
                m->policy[d] = DRIFT_REPORT;
        m->policy_default = DRIFT_REPORT;
        m->profile_interval_usec = 0;
        manager_task_settings(m, NULL);
}

/* The resolved profile's "drift" section: policy, per-domain policies, interval_s. */
static void settings_from_resolved(Manager *m, const Resolved *r) {
        json_t *drift = json_object_get(r->doc, "drift");
        DriftPolicy def = drift_policy_from_string(json_string_value(json_object_get(drift, "policy")));
        if (def < 0)
                def = DRIFT_REPORT;
        for (int d = 0; d < _DOMAIN_MAX; d++)
                m->policy[d] = def;
        m->policy_default = def;
        const char *key;
        json_t *v;
        json_object_foreach (json_object_get(drift, "domains"), key, v) {
                Domain d = domain_from_string(key);
                DriftPolicy p = drift_policy_from_string(json_string_value(v));
                if (d >= 0 && p >= 0)
                        m->policy[d] = p;
        }
        json_int_t s = json_integer_value(json_object_get(drift, "interval_s"));
        m->profile_interval_usec = s > 0 ? (uint64_t) s * 1000000ULL : 0;
        manager_task_settings(m, r);
}

void manager_apply_interval(Manager *m) {
        uint64_t usec = m->options.interval_usec ? m->options.interval_usec
                : m->profile_interval_usec       ? m->profile_interval_usec
                                                 : DEFAULT_INTERVAL_USEC;
        if (m->watcher && watcher_get_interval(m->watcher) != usec)
                (void) watcher_set_interval(m->watcher, usec);
}

/* Through the root, which says whether its CPUs are the ones this process runs on (the kernel's)
 * or shows the pinning to a test (the simulator's); a plain tree cannot. */
static void pin_self(Manager *m, const CpuSet *housekeeping) {
        if (!m->options.pin || cpu_set_is_empty(housekeeping))
                return;
        _cleanup_free_ char *list = cpu_set_format_list(housekeeping);
        int r = root_pin_self(m->root, housekeeping);
        if (r == -EOPNOTSUPP)
                return;
        if (r < 0)
                (void) log_warning_errno(r, "Cannot pin rtpartd to the housekeeping CPUs %s: %m", strempty(list));
        else
                log_debug("Pinned to housekeeping CPUs %s", strempty(list));
}

void manager_settings_take(Manager *m, const Resolved *r) {
        free(m->settings_hash);
        m->settings_hash = journal_hash(r->doc);
        settings_from_resolved(m, r);
        manager_apply_interval(m);
        pin_self(m, &r->housekeeping);
}

/* Re-reads the profile's settings when the journal names another profile or content. */
static void settings_refresh(Manager *m) {
        const char *hash = m->journal ? m->journal->hash : NULL;
        if (streq_ptr(hash, m->settings_hash))
                return;
        free(m->settings_hash);
        m->settings_hash = hash ? strdup(hash) : NULL;
        manager_settings_reset(m);
        if (m->journal && m->journal->profile) {
                Prepared p = {};
                ManagerError e = {};
                if (manager_prepare_journal(m, /* want_plan= */ false, &p, &e) >= 0) {
                        settings_from_resolved(m, p.resolved);
                        pin_self(m, &p.resolved->housekeeping);
                } else {
                        _cleanup_free_ char *msg = manager_error_message(&e);
                        log_warning("Cannot read the drift settings of %s: %s; reporting drift only",
                                    m->journal->profile, strempty(msg));
                }
                manager_error_done(&e);
                prepared_done(&p);
        }
        manager_apply_interval(m);
}

/* The files to watch, each with its knob; the paths are owned. */
typedef struct WatchList {
        WatchFile *files;
        size_t n, cap;
} WatchList;

static void watch_list_done(WatchList *l) {
        for (size_t i = 0; i < l->n; i++)
                free((char *) l->files[i].path);
        free(l->files);
        *l = (WatchList) {};
}

/* The files each applied knob's backend names (an IRQ's smp_affinity_list and smp_affinity; no
 * file for a thread or a boot argument). */
static int watch_list_build(const Journal *j, WatchList *l, StringSet *unfiled) {
        for (size_t i = 0; i < j->n_applied; i++) {
                Knob kn = journal_knob(&j->applied[i]);
                const Backend *b = backend_for(kn.domain);
                _cleanup_strv_free_ char **paths = NULL;
                int r = b && b->watch ? b->watch(&kn, &paths) : 0;
                if (r < 0)
                        return r;
                if ((r == 0 || !paths || !paths[0]) && string_set_add(unfiled, kn.id) < 0)
                        return -ENOMEM;
                for (char **p = paths; r > 0 && *p; p++) {
                        if (GROW_ARRAY(l->files, l->cap, l->n, 64) < 0)
                                return -ENOMEM;
                        l->files[l->n++] = (WatchFile) { j->applied[i].id, TAKE_PTR(*p) };
                }
        }
        return 0;
}

void manager_watch_refresh(Manager *m) {
        _cleanup_(watch_list_done) WatchList l = {};
        uint64_t key = 0;

        if (!m->watcher || !m->journal || m->starting)
                return;
        string_set_done(&m->live.unfiled);
        if (watch_list_build(m->journal, &l, &m->live.unfiled) < 0) {
                m->watching = false; /* Verify then reads every knob */
                return;
        }
        const WatchFile *files = l.files;
        size_t n = l.n;
        /* What the watcher has is known by its digest: the same files again are only a flush of the
         * events our own writes raised. */
        for (size_t i = 0; i < n; i++) {
                key = key * 31 + journal_digest(files[i].knob, strlen(files[i].knob));
                key = key * 31 + journal_digest(files[i].path, strlen(files[i].path));
        }
        if (m->watching && m->watch_key == key) {
                watcher_flush(m->watcher);
                return;
        }
        size_t missing = 0;
        int r = watcher_set_files(m->watcher, files, n, &missing);
        if (r < 0)
                (void) log_warning_errno(r, "Cannot watch the knob files: %m; only the safety timer looks at them");
        else
                log_debug("Watching %d knob files (%zu missing, left to the safety timer)", r, missing);
        m->watching = r >= 0;
        m->watch_key = key;
}

/* Reads state.json again when its bytes changed; what the daemon keeps of it is the Journal. A
 * journal that is refused leaves the one held as it was, and its message in m->journal_error. */
int manager_journal_reload(Manager *m, bool *ret_changed) {
        _cleanup_(error_done) Error je = {};
        Journal *j = NULL;
        /* The store opens the file without waiting and refuses what it may not trust (a FIFO or a
         * device there, another user's file) as a journal that is not one: -EBADMSG, and je names
         * the file and the fix. */
        int r = journal_store_load_if_changed(m->store, m->journal ? m->journal->digest : 0, &j, &je);
        manager_trim_later(m); /* the file was read, and maybe parsed */
        _cleanup_free_ char *why = r == -EBADMSG && je.message ? error_format(&je, NULL) : NULL;
        if (why && !streq_ptr(why, m->journal_error)) {
                if (m->journal) /* else the caller refuses to start */
                        log_warning("%s; keeping the journal as last read, and changing nothing", why);
                free(m->journal_error);
                m->journal_error = TAKE_PTR(why);
        }
        if (r < 0)
                return r;
        free(m->journal_error);
        m->journal_error = NULL;
        if (ret_changed)
                *ret_changed = r > 0;
        if (r == 0)
                return 0;
        journal_free(m->journal);
        m->journal = j;
        m->live.valid = false; /* its knobs are read in full before Verify answers from events */
        if (!streq_ptr(j->profile, m->profile)) {
                free(m->profile);
                m->profile = j->profile ? strdup(j->profile) : NULL;
        }
        /* Drift of knobs the journal no longer has is no drift. */
        for (size_t i = m->drift.n; i-- > 0;)
                if (!journal_find_applied(m->journal, m->drift.entries[i].knob))
                        (void) drift_set_remove(&m->drift, m->drift.entries[i].knob);
        settings_refresh(m);
        manager_watch_refresh(m);
        return 0;
}
