/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include "config.h"
#include "document.h"
#include "host.h"
#include "manager.h"
#include "prepare.h"
#include "profile.h"
#include "strv.h"
#include "task.h"
#include "tuned-active.h"

/* How often one knob is written back per CORRECT_WINDOW before rtpartd stops fighting whoever
 * keeps changing it (irqbalance, tuned, a script) and only reports. */
#define CORRECT_BURST 10
#define CORRECT_WINDOW_USEC (60 * 1000000ULL)
#define DEFAULT_INTERVAL_USEC (60 * 1000000ULL)

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

void manager_error_done(ManagerError *e) {
        free(e->message);
        json_decref(e->details);
        *e = (ManagerError) {};
}

_printf_(3, 4) static int manager_error_set(ManagerError *e, const char *name, const char *fmt, ...) {
        va_list ap;
        manager_error_done(e);
        e->name = name;
        va_start(ap, fmt);
        if (vasprintf(&e->message, fmt, ap) < 0)
                e->message = NULL;
        va_end(ap);
        return -EINVAL;
}

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

/* ---- small helpers ---- */

/* A call builds the host's topology, the profile, the plan, a whole journal or an answer of
 * hundreds of knobs, and frees them again: give the heap back once the answer is out (the loop
 * runs post sources after every other), so that the daemon idles at its own size, not at its
 * largest. The long-lived data is small and packed (the Journal); what malloc_trim() cannot give
 * back is the pages it shares with them. */
static int on_trim(sd_event_source *s, void *userdata) {
        (void) malloc_trim(0);
        return 0;
}

static void trim_later(Manager *m) {
        if (m->trim_source)
                (void) sd_event_source_set_enabled(m->trim_source, SD_EVENT_ONESHOT);
}

static int read_cmdline(Root *root, char **ret) {
        int r = root_read_line(root, "proc/cmdline", ret);
        if (r == -ENOENT)
                return (*ret = strdup("")) ? 0 : -ENOMEM;
        return r;
}

static int profile_failure(ManagerError *e, Error *pe, int r) {
        if (r == -ENOMEM) {
                error_done(pe);
                return -ENOMEM;
        }
        _cleanup_free_ char *msg = error_format(pe, "invalid profile");
        /* Content (and a name that is not found) is the caller's to fix; I/O is ours. */
        manager_error_set(e, r == -EINVAL || r == -ENOENT ? MANAGER_ERROR_INVALID_PROFILE : MANAGER_ERROR_FAILED, "%s",
                          msg ? msg : "invalid profile");
        error_done(pe);
        return r;
}

/* The prepare pipeline's failure (lib/engine/prepare.h), in the caller's words. */
static int prepare_failure(Manager *m, PrepareError *pe, int r, ManagerError *e) {
        switch (pe->step) {
        case PREPARE_STEP_HOST:
                manager_error_set(e, MANAGER_ERROR_FAILED, "cannot read the host's topology under %s: %s",
                                  m->root->path, strerror(-r));
                break;
        case PREPARE_STEP_PROFILE:
                r = profile_failure(e, &pe->error, r);
                break;
        default:
                manager_error_set(e, MANAGER_ERROR_FAILED, "cannot build the plan for %s: %s", strempty(pe->name),
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

static int prepare(Manager *m, const char *name, bool want_plan, Prepared *ret, ManagerError *e) {
        PrepareError pe = {};
        int r;

        if (!name || !*name)
                return manager_error_set(e, MANAGER_ERROR_INVALID_PROFILE,
                                         "no profile given; name one of ListProfiles or an absolute path");
        if (profile_is_path(name) && name[0] != '/')
                return manager_error_set(
                        e, MANAGER_ERROR_INVALID_PROFILE,
                        "%s: rtpartd cannot resolve a relative path; give the absolute path or a profile name", name);
        /* A FIFO, a device or another user's file is refused when opened, before it is read: the
         * event loop never waits on a profile. */
        r = prepare_profile(m->root, name, want_plan ? PREPARE_PLAN : 0, ret, &pe);
        return r < 0 ? prepare_failure(m, &pe, r, e) : 0;
}

/* ---- the journal and what follows from it ---- */

/* The journal's profile as root applied it: the document the journal keeps ("source"), never the
 * file at "profile_path", which whoever can write there may have changed or replaced since. A
 * journal written before there was a "source" gets the profile of its name from the profile
 * directories (where apply's ownership checks hold), with a note. */
static int journal_profile(Manager *m, Profile **ret, ManagerError *e) {
        const char *name = m->journal ? m->journal->profile : NULL;
        Error pe = {};
        int r;

        if (!name)
                return manager_error_set(e, MANAGER_ERROR_NOT_APPLIED, "no profile is applied");
        if (m->journal->source) {
                json_error_t jerr;
                _cleanup_(json_decrefp) json_t *doc = json_loads(m->journal->source, 0, &jerr);
                if (!doc)
                        return manager_error_set(e, MANAGER_ERROR_FAILED,
                                                 "the journal's copy of %s is not JSON (%s); apply it again", name,
                                                 jerr.text);
                r = profile_from_document(backend_profile_schema(), name, doc, ret, &pe);
        } else {
                log_notice(
                        "The journal of %s predates stored profiles: loading %s by name from the profile directories, "
                        "not from %s; apply it again to store it",
                        name, name, strempty(m->journal->profile_path));
                if (profile_is_path(name))
                        return manager_error_set(e, MANAGER_ERROR_INVALID_PROFILE,
                                                 "%s is no profile name; apply the profile again", name);
                r = profile_load(m->root, backend_profile_schema(), name, ret, &pe);
        }
        return r < 0 ? profile_failure(e, &pe, r) : 0;
}

/* Host, resolution and plan of the journal's profile. With check_hash, a resolution whose hash is
 * not the journal's (the profile directories' file edited since, a hand-edited journal) is refused:
 * what the host holds is then only compared, never written, until the profile is applied again. */
static int prepare_journal(Manager *m, bool want_plan, bool check_hash, Prepared *ret, ManagerError *e) {
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
        if (check_hash && !streq_ptr(hash, m->journal->hash)) {
                manager_error_set(
                        e, MANAGER_ERROR_FAILED,
                        "%s resolves to %s, not to the journal's %s: nothing is written, drift is only reported; "
                        "apply the profile again",
                        m->journal->profile, hash, strempty(m->journal->hash));
                prepared_done(&p);
                return -ESTALE;
        }
        *ret = p;
        return 0;
}

static void settings_reset(Manager *m) {
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

static void apply_interval(Manager *m) {
        uint64_t usec = m->options.interval_usec ? m->options.interval_usec
                : m->profile_interval_usec       ? m->profile_interval_usec
                                                 : DEFAULT_INTERVAL_USEC;
        if (m->watcher && watcher_get_interval(m->watcher) != usec)
                (void) watcher_set_interval(m->watcher, usec);
}

static void pin_self(Manager *m, const CpuSet *housekeeping) {
        if (!m->options.pin || !root_can(m->root, ROOT_CAN_SCHEDULE) || cpu_set_is_empty(housekeeping))
                return;
        _cleanup_free_ char *list = cpu_set_format_list(housekeeping);
        int r = task_set_affinity(0, housekeeping);
        if (r < 0)
                (void) log_warning_errno(r, "Cannot pin rtpartd to the housekeeping CPUs %s: %m", strempty(list));
        else
                log_debug("Pinned to housekeeping CPUs %s", strempty(list));
}

/* Re-reads the profile's settings when the journal names another profile or content. */
static void settings_refresh(Manager *m) {
        const char *hash = m->journal ? m->journal->hash : NULL;
        if (streq_ptr(hash, m->settings_hash))
                return;
        free(m->settings_hash);
        m->settings_hash = hash ? strdup(hash) : NULL;
        settings_reset(m);
        if (m->journal && m->journal->profile) {
                Prepared p = {};
                ManagerError e = {};
                if (prepare_journal(m, /* want_plan= */ false, /* check_hash= */ true, &p, &e) >= 0) {
                        settings_from_resolved(m, p.resolved);
                        pin_self(m, &p.resolved->housekeeping);
                } else
                        log_warning("Cannot read the drift settings of %s: %s; reporting drift only",
                                    m->journal->profile, strempty(e.message));
                manager_error_done(&e);
                prepared_done(&p);
        }
        apply_interval(m);
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

static void watch_refresh(Manager *m) {
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
static int journal_reload(Manager *m, bool *ret_changed) {
        _cleanup_(error_done) Error je = {};
        Journal *j = NULL;
        int r = journal_store_load_if_changed(m->store, m->journal ? m->journal->digest : 0, &j, &je);
        trim_later(m); /* the file was read, and maybe parsed */
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
        watch_refresh(m);
        return 0;
}

/* ---- properties ---- */

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

/* ---- listeners ---- */

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

static void emit_applied(Manager *m, const char *profile, bool external) {
        for (size_t i = 0; i < m->n_listeners; i++)
                if (m->listeners[i].applied)
                        m->listeners[i].applied(m, profile, external, m->listeners[i].userdata);
}

static void emit_apply_failed(Manager *m, const char *profile) {
        for (size_t i = 0; i < m->n_listeners; i++)
                if (m->listeners[i].apply_failed)
                        m->listeners[i].apply_failed(m, profile, m->listeners[i].userdata);
}

void manager_emit_audited(Manager *m, const json_t *doc) {
        for (size_t i = 0; i < m->n_listeners; i++)
                if (m->listeners[i].audited)
                        m->listeners[i].audited(m, doc, m->listeners[i].userdata);
}

static void emit_reverted(Manager *m) {
        for (size_t i = 0; i < m->n_listeners; i++)
                if (m->listeners[i].reverted)
                        m->listeners[i].reverted(m, m->listeners[i].userdata);
}

/* ---- drift ---- */

bool manager_correction_allowed(Manager *m, const char *id) {
        uint64_t now = now_usec();
        json_t *c = json_object_get(m->corrections, id);
        json_int_t count = json_integer_value(json_array_get(c, 0));
        uint64_t start = (uint64_t) json_integer_value(json_array_get(c, 1));
        if (!c || now - start > CORRECT_WINDOW_USEC) {
                json_object_set_new(m->corrections, id, json_pack("[I, I]", (json_int_t) 1, (json_int_t) now));
                return true;
        }
        if (count >= CORRECT_BURST) {
                if (count == CORRECT_BURST)
                        log_warning("%s changed again after %d corrections within %llu s: something keeps setting it; "
                                    "reporting only until that stops",
                                    id, CORRECT_BURST, (unsigned long long) (CORRECT_WINDOW_USEC / 1000000ULL));
                json_array_set_new(c, 0, json_integer(count + 1));
                return false;
        }
        json_array_set_new(c, 0, json_integer(count + 1));
        return true;
}

static int apply_selected(Manager *m, char **ids, size_t *ret_written, IrqSet *ret_listed, ManagerError *e);
static int check_knobs(Manager *m, char **ids, DriftSet *ret_found);

/* Folds one check's findings into what is known: checked (NULL: every knob) is what was read,
 * found the drift among them. Reports what is new, corrects what the policy says to. */
static void drift_update(Manager *m, const DriftSet *found, char **checked) {
        _cleanup_(drift_set_done) DriftSet fresh = {};
        uint64_t now = drift_now();

        if (!checked) {
                for (size_t i = m->drift.n; i-- > 0;)
                        if (!drift_set_find(found, m->drift.entries[i].knob))
                                (void) drift_set_remove(&m->drift, m->drift.entries[i].knob);
        } else
                for (char **c = checked; *c; c++)
                        if (!drift_set_find(found, *c))
                                (void) drift_set_remove(&m->drift, *c);
        for (size_t i = 0; i < found->n; i++) {
                const DriftEntry *e = &found->entries[i];
                if (drift_set_put(&m->drift, e->knob, e->domain, e->expected, e->actual, now) > 0)
                        (void) drift_set_put_entry(&fresh, drift_set_find(&m->drift, e->knob));
        }

        if (fresh.n > 0) {
                m->drift_events++;
                for (size_t i = 0; i < fresh.n; i++)
                        log_warning("Drift: %s is %s, the profile wants %s", fresh.entries[i].knob,
                                    fresh.entries[i].actual ?: "(absent)", fresh.entries[i].expected ?: "(absent)");
                manager_emit_drift(m, MANAGER_DRIFT_DETECTED, fresh.entries, fresh.n);
        }

        /* What the policy says to write back. */
        _cleanup_strv_free_ char **fix = NULL;
        for (size_t i = 0; i < fresh.n; i++) {
                Domain d = domain_from_string(fresh.entries[i].domain);
                const char *knob = fresh.entries[i].knob;
                if (d >= 0 && m->policy[d] == DRIFT_CORRECT && manager_correction_allowed(m, knob))
                        (void) strv_extend(&fix, knob);
        }
        if (fix) {
                _cleanup_(drift_set_done) DriftSet still = {}, corrected = {};
                ManagerError err = {};
                size_t written = 0;
                int r = apply_selected(m, fix, &written, NULL, &err);
                if (r < 0)
                        log_error("Cannot correct the drift: %s", strempty(err.message));
                manager_error_done(&err);
                /* Read them again: what is back in line was corrected. */
                if (check_knobs(m, fix, &still) < 0) /* unknown: as it was */
                        for (size_t i = 0; i < fresh.n; i++)
                                (void) drift_set_put_entry(&still, &fresh.entries[i]);
                for (char **f = fix; *f; f++) {
                        const DriftEntry *was = drift_set_find(found, *f);
                        if (drift_set_find(&still, *f) || !was)
                                continue;
                        (void) drift_set_put_entry(&corrected, was);
                        (void) drift_set_remove(&m->drift, *f);
                        log_notice("Corrected: %s set back to %s", *f, was->expected ?: "(absent)");
                }
                for (size_t i = 0; i < still.n; i++)
                        (void) drift_set_put_entry(&m->drift, &still.entries[i]);
                if (corrected.n > 0)
                        manager_emit_drift(m, MANAGER_DRIFT_CORRECTED, corrected.entries, corrected.n);
        }
        manager_properties_update(m);
}

/* The engine's drift as the manager keeps it. */
static int drift_from_verify(const VerifyResult *v, uint64_t now, DriftSet *ret) {
        for (size_t i = 0; i < v->n_drift; i++) {
                int r = drift_set_put(ret, v->drift[i].knob, domain_to_string(v->drift[i].domain), v->drift[i].expected,
                                      v->drift[i].actual, now);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* What a read of the knobs ids found of one kind (now: reboot pending, vanished) replaces what the
 * live state had of them in *l. */
static void live_note(char ***l, char **ids, char **now) {
        size_t n = 0;
        for (size_t i = 0; *l && (*l)[i]; i++)
                if (strv_contains(ids, (*l)[i]))
                        free((*l)[i]);
                else
                        (*l)[n++] = (*l)[i];
        if (*l)
                (*l)[n] = NULL;
        for (char **x = now; x && *x; x++)
                if (!strv_contains(*l, *x))
                        (void) strv_extend(l, *x);
}

static char **strv_copy_or_null(char * const *l) {
        char **c = NULL;
        for (size_t i = 0; l && l[i]; i++)
                if (strv_extend(&c, l[i]) < 0) {
                        strv_free(c);
                        return NULL;
                }
        return c;
}

/* Reads the given knobs of the journal and compares (the engine's verify of a subset): the drift
 * found. */
static int check_knobs(Manager *m, char **ids, DriftSet *ret_found) {
        _cleanup_free_ char *cmdline = NULL;
        VerifyResult v = {};
        int r = 0;
        /* The running kernel's command line matters to boot knobs only, which no file event
         * names: the common check reads nothing but the knobs. */
        for (char **i = ids; i && *i && r >= 0 && !cmdline; i++)
                if (startswith(*i, "boot/"))
                        r = read_cmdline(m->root, &cmdline);
        if (r >= 0 && !m->journal)
                r = journal_reload(m, NULL);
        if (r >= 0)
                r = engine_verify_knobs(m->root, m->journal, strempty(cmdline), ids, strv_length(ids), &v);
        if (r < 0)
                return log_warning_errno(r, "Cannot check %s: %m", strempty(ids ? ids[0] : NULL));
        live_note(&m->live.reboot_pending, ids, v.reboot_pending);
        live_note(&m->live.vanished, ids, v.vanished);
        DriftSet found = {};
        r = drift_from_verify(&v, drift_now(), &found);
        verify_result_done(&v);
        if (r < 0) {
                drift_set_done(&found);
                return r;
        }
        *ret_found = found;
        return 0;
}

static void check_some(Manager *m, char **ids) {
        _cleanup_(drift_set_done) DriftSet found = {};
        if (check_knobs(m, ids, &found) >= 0)
                drift_update(m, &found, ids);
}

/* The applied knobs whose backends have flag. */
static void check_flagged(Manager *m, BackendFlags flag) {
        _cleanup_strv_free_ char **ids = NULL;
        for (size_t i = 0; m->journal && i < m->journal->n_applied; i++) {
                const Backend *b = backend_for(m->journal->applied[i].domain);
                if (b && (b->flags & flag))
                        (void) strv_extend(&ids, m->journal->applied[i].id);
        }
        if (ids)
                check_some(m, ids);
}

/* Every knob, through the engine: drift, pending reboots, vanished objects. */
static int check_all(Manager *m, VerifyResult *ret) {
        _cleanup_free_ char *cmdline = NULL;
        VerifyResult v = {};
        int r = read_cmdline(m->root, &cmdline);
        if (r >= 0)
                r = journal_reload(m, NULL);
        if (r >= 0)
                r = engine_verify(m->root, m->journal, cmdline, &v);
        if (r < 0)
                return r;
        _cleanup_(drift_set_done) DriftSet found = {};
        if (drift_from_verify(&v, drift_now(), &found) < 0) {
                verify_result_done(&v);
                return -ENOMEM;
        }
        m->reboot_required = strv_length(v.reboot_pending) > 0;
        drift_update(m, &found, NULL);
        strv_free(m->live.reboot_pending);
        strv_free(m->live.vanished);
        m->live.reboot_pending = strv_copy_or_null(v.reboot_pending);
        m->live.vanished = strv_copy_or_null(v.vanished);
        uint64_t now = drift_now();
        for (size_t d = 0; d < _DOMAIN_MAX; d++)
                m->live.read_usec[d] = now;
        m->live.valid = true;
        m->live.hotplug = false;
        manager_task_scan(m);
        trim_later(m); /* the whole journal was read */
        if (ret)
                *ret = v;
        else
                verify_result_done(&v);
        return 0;
}

/* ---- applying ---- */

static bool knob_is_new(Manager *m, const Knob *k) {
        return !journal_find_applied(m->journal, k->id) && !string_set_contains(&m->not_owned, k->id) &&
                !journal_find_unmovable(m->journal, k->id);
}

/* The journal's lock, held until *ret is unlocked (journal_store_unlockp()). */
static int take_lock(Manager *m, JournalStore **ret, ManagerError *e) {
        _cleanup_(error_done) Error le = {};
        int r = journal_store_lock(m->store, /* wait= */ true, &le);
        if (r < 0) {
                _cleanup_free_ char *why = le.message ? error_format(&le, NULL) : NULL;
                manager_error_set(e, MANAGER_ERROR_FAILED, "cannot take the journal lock: %s", why ?: strerror(-r));
                return r;
        }
        *ret = m->store;
        return 0;
}

static int engine_failure(ManagerError *e, const EngineResult *res, int r) {
        const Error *f = &res->error;
        if (f->pointer)
                manager_error_set(e, MANAGER_ERROR_FAILED, "writing %s (%s) failed: %s%s%s%s; %s", f->pointer,
                                  f->file ? f->file : "no file", strerror(-f->code), f->detail ? " (kernel: " : "",
                                  strempty(f->detail), f->detail ? ")" : "",
                                  res->rollback_incomplete ? "the changes of this run were undone except those noted"
                                                           : "every change of this run was undone");
        else
                manager_error_set(e, MANAGER_ERROR_FAILED, "%s", f->message ?: strerror(-r));
        e->details = document_apply_failure(res, r);
        return r;
}

/* A knob the journal has is put back to what the journal says the applied profile wants (its file
 * may have been edited since, without an apply). */
static void knob_use_journal(Manager *m, Knob *k) {
        const JournalKnob *entry = journal_find_applied(m->journal, k->id);
        if (!entry)
                return;
        const char *want = entry->value;
        if (streq_ptr(want, k->desired))
                return;
        char *n = want ? strdup(want) : NULL;
        if (want && !n)
                return;
        free(k->desired);
        k->desired = n;
        k->changed = !value_equal(k->kind, k->current, k->desired);
}

/* Applies the journal's profile again to the knobs in ids (drift to correct) and to the knobs new
 * to the journal (IRQs of a new device, new kernel threads), through the engine's subset apply:
 * nothing else is touched. ret_listed (optional): the IRQs /proc/interrupts listed for the plan. */
static int apply_selected(Manager *m, char **ids, size_t *ret_written, IrqSet *ret_listed, ManagerError *e) {
        _cleanup_(journal_store_unlockp) JournalStore *lock = NULL;
        _cleanup_strv_free_ char **sel = NULL, **fresh = NULL;
        Prepared p = {};
        EngineResult er = {};
        size_t writes = 0;
        int r;

        *ret_written = 0;
        if (!m->journal || !m->journal->profile)
                return 0;
        r = prepare_journal(m, /* want_plan= */ true, /* check_hash= */ true, &p, e);
        if (r < 0)
                return r;
        if (ret_listed) {
                /* host_discover() keeps /proc/interrupts' order: by number. */
                ret_listed->v = malloc(MAX(p.host->n_irqs, (size_t) 1) * sizeof(unsigned));
                if (!ret_listed->v) {
                        prepared_done(&p);
                        return -ENOMEM;
                }
                for (size_t i = 0; i < p.host->n_irqs; i++)
                        ret_listed->v[i] = p.host->irqs[i].number;
                ret_listed->n = p.host->n_irqs;
        }
        for (size_t i = 0; i < p.plan->n_knobs; i++) {
                Knob *k = &p.plan->knobs[i];
                if (strv_contains(ids, k->id))
                        knob_use_journal(m, k);
                else if (knob_is_new(m, k)) {
                        /* Recorded even when already as desired: from now on it is watched. */
                        if (strv_extend(&fresh, k->id) < 0)
                                r = -ENOMEM;
                        if (k->changed)
                                log_debug("New knob %s: setting it to %s", k->id, strempty(k->desired));
                } else
                        continue;
                if (strv_extend(&sel, k->id) < 0)
                        r = -ENOMEM;
                if (k->changed)
                        writes++;
        }
        if (r < 0 || (writes == 0 && !fresh)) {
                prepared_done(&p);
                return r;
        }
        r = take_lock(m, &lock, e);
        if (r >= 0) {
                r = engine_apply_knobs(m->root, m->store, p.host, p.plan, sel, strv_length(sel), &er);
                if (r == -ESTALE)
                        manager_error_set(e, MANAGER_ERROR_FAILED,
                                          "the applied profile changed meanwhile; nothing written");
                else if (r < 0)
                        engine_failure(e, &er, r);
        }
        *ret_written = er.written;
        for (char **n = er.notes; n && *n; n++)
                log_debug("%s", *n);
        engine_result_done(&er);
        prepared_done(&p);
        journal_store_unlock(TAKE_PTR(lock));
        (void) journal_reload(m, NULL);
        /* New knobs the engine did not record (their backend cannot write them on this root)
         * are not tried again until the next full apply. */
        for (char **f = fresh; r >= 0 && f && *f; f++)
                if (!journal_find_applied(m->journal, *f))
                        (void) string_set_add(&m->not_owned, *f);
        watcher_flush(m->watcher);
        trim_later(m);
        return r;
}

/* Applies the profile name, or with name NULL the journal's profile again (at start-up). */
static int apply_full(Manager *m, const char *name, json_t **ret, ManagerError *e) {
        _cleanup_(journal_store_unlockp) JournalStore *lock = NULL;
        Prepared p = {};
        EngineResult er = {};
        int r;

        /* The journal's own document is root's and applies to the host as it is now; a profile
         * found by name for an older journal must be the one that was applied. */
        if (name)
                r = prepare(m, name, /* want_plan= */ true, &p, e);
        else
                r = prepare_journal(m, /* want_plan= */ true, /* check_hash= */ !m->journal->source, &p, e);
        if (r < 0)
                return r;
        r = take_lock(m, &lock, e);
        if (r < 0) {
                prepared_done(&p);
                return r;
        }
        /* The engine loads the journal itself and rewrites it: the copy held here is read again
         * after, and not kept through the apply, the daemon's largest moment. */
        m->journal = journal_free(m->journal);
        r = engine_apply(m->root, m->store, p.host, p.resolved, p.plan, &er);
        journal_store_unlock(TAKE_PTR(lock));
        string_set_done(&m->not_owned);
        if (r < 0) {
                engine_failure(e, &er, r);
                engine_result_done(&er);
                emit_apply_failed(m, p.plan->profile);
                prepared_done(&p);
                (void) journal_reload(m, NULL);
                return r;
        }
        json_t *doc = document_apply(p.plan, &er);
        _cleanup_free_ char *reboot = document_reboot_phrase(json_object_get(doc, "reboot_knobs"));
        log_info("Applied %s: %zu knob%s changed, %zu already as desired%s%s", p.plan->profile, er.written,
                 er.written == 1 ? "" : "s", er.unchanged, reboot && *reboot ? "; a reboot is needed for " : "",
                 reboot && *reboot ? reboot : "");
        for (char **n = er.notes; n && *n; n++)
                log_info("  %s", *n);

        /* The settings come from this resolution (the journal's hash is its hash); the journal, the
         * watches and drift follow. */
        free(m->settings_hash);
        m->settings_hash = journal_hash(p.resolved->doc);
        settings_from_resolved(m, p.resolved);
        apply_interval(m);
        pin_self(m, &p.resolved->housekeeping);
        (void) journal_reload(m, NULL);
        for (size_t i = 0; m->journal && i < p.plan->n_knobs; i++)
                if (knob_is_new(m, &p.plan->knobs[i]))
                        (void) string_set_add(&m->not_owned, p.plan->knobs[i].id);
        watcher_flush(m->watcher);
        emit_applied(m, p.plan->profile, /* external= */ false);
        (void) check_all(m, NULL);
        engine_result_done(&er);
        prepared_done(&p);
        trim_later(m);
        *ret = doc;
        return doc ? 0 : -ENOMEM;
}

/* ---- the calls ---- */

int manager_list_profiles(Manager *m, json_t **ret, ManagerError *e) {
        ProfileInfo *l = NULL;
        size_t n = 0;
        int r = profile_list(m->root, &l, &n);
        if (r < 0) {
                manager_error_set(e, MANAGER_ERROR_FAILED, "cannot list profiles: %s", strerror(-r));
                return r;
        }
        json_t *arr = document_list(l, n);
        profile_info_free_many(l, n);
        trim_later(m);
        *ret = arr;
        return arr ? 0 : -ENOMEM;
}

int manager_plan(Manager *m, const char *profile, json_t **ret, ManagerError *e) {
        Prepared p = {};
        int r = prepare(m, profile, /* want_plan= */ true, &p, e);
        if (r < 0)
                return r;
        /* The journal as the daemon holds it: refused knobs are no change. */
        r = engine_mark_refused(p.plan, m->journal);
        if (r >= 0) /* and the knobs tuned sets too, where it has a profile */
                r = tuned_overlap_mark(m->root, p.host, p.plan);
        json_t *doc = r >= 0 ? document_plan(p.plan, p.host) : NULL;
        prepared_done(&p);
        trim_later(m);
        *ret = doc;
        return doc ? 0 : -ENOMEM;
}

int manager_apply(Manager *m, const char *profile, json_t **ret, ManagerError *e) {
        return apply_full(m, profile, ret, e);
}

int manager_correct(Manager *m, json_t **ret, ManagerError *e) {
        _cleanup_strv_free_ char **ids = NULL;
        _cleanup_(drift_set_done) DriftSet corrected = {};
        size_t written = 0;

        if (!m->profile)
                return manager_error_set(e, MANAGER_ERROR_NOT_APPLIED, "no profile is applied: nothing to correct");
        (void) check_all(m, NULL); /* may correct some already, per the policy */
        for (size_t i = 0; i < m->drift.n; i++)
                (void) strv_extend(&ids, m->drift.entries[i].knob);
        if (ids) {
                _cleanup_(drift_set_done) DriftSet before = {}, still = {};
                for (size_t i = 0; i < m->drift.n; i++)
                        if (drift_set_put_entry(&before, &m->drift.entries[i]) < 0)
                                return -ENOMEM;
                int r = apply_selected(m, ids, &written, NULL, e);
                if (r < 0)
                        return r;
                if (check_knobs(m, ids, &still) < 0) /* cannot tell: as it was */
                        for (size_t i = 0; i < before.n; i++)
                                (void) drift_set_put_entry(&still, &before.entries[i]);
                for (size_t i = 0; i < before.n; i++)
                        if (!drift_set_find(&still, before.entries[i].knob)) {
                                (void) drift_set_put_entry(&corrected, &before.entries[i]);
                                (void) drift_set_remove(&m->drift, before.entries[i].knob);
                        }
                if (corrected.n > 0) {
                        log_notice("Corrected %zu drifted knob%s on request", corrected.n, corrected.n == 1 ? "" : "s");
                        manager_emit_drift(m, MANAGER_DRIFT_CORRECTED, corrected.entries, corrected.n);
                }
                manager_properties_update(m);
        }
        *ret = json_pack("{s:b, s:s, s:I, s:o, s:I}", "ok", 1, "profile", m->profile, "written", (json_int_t) written,
                         "corrected", drift_entries_to_json(corrected.entries, corrected.n), "drift",
                         (json_int_t) manager_drift_count(m));
        return *ret ? 0 : -ENOMEM;
}

static int applied_pos_cmp(const void *a, const void *b, void *userdata) {
        const Journal *j = userdata;
        const JournalKnob *x = journal_find_applied(j, ((const Drift *) a)->knob),
                          *y = journal_find_applied(j, ((const Drift *) b)->knob);
        return x < y ? -1 : x > y;
}

static int applied_id_cmp(const void *a, const void *b, void *userdata) {
        const Journal *j = userdata;
        const JournalKnob *x = journal_find_applied(j, *(char * const *) a),
                          *y = journal_find_applied(j, *(char * const *) b);
        return x < y ? -1 : x > y;
}

/* The VerifyResult the live state makes: the known drift in journal order, the pending reboots and
 * vanished objects as last read; nothing read but the journal's unmovable list. */
static int live_result(Manager *m, VerifyResult *ret) {
        VerifyResult v = {};
        int r = engine_verify_knobs(m->root, m->journal, "", NULL, 0, &v);
        if (r < 0)
                return r;
        v.checked = m->journal->n_applied;
        v.drift = calloc(MAX(m->drift.n, (size_t) 1), sizeof(Drift));
        v.reboot_pending = strv_copy_or_null(m->live.reboot_pending);
        v.vanished = strv_copy_or_null(m->live.vanished);
        if (!v.drift || (m->live.reboot_pending && !v.reboot_pending) || (m->live.vanished && !v.vanished)) {
                verify_result_done(&v);
                return -ENOMEM;
        }
        for (size_t i = 0; i < m->drift.n; i++) {
                const DriftEntry *e = &m->drift.entries[i];
                Drift *d = &v.drift[v.n_drift++];
                *d = (Drift) {
                        .knob = strdup(e->knob),
                        .domain = domain_from_string(e->domain),
                        .expected = e->expected ? strdup(e->expected) : NULL,
                        .actual = e->actual ? strdup(e->actual) : NULL,
                };
                if (!d->knob || (e->expected && !d->expected) || (e->actual && !d->actual)) {
                        verify_result_done(&v);
                        return -ENOMEM;
                }
        }
        /* In journal order, as a read of every knob finds them (qsort_r takes no NULL array, even
         * of none). */
        if (v.n_drift > 0)
                qsort_r(v.drift, v.n_drift, sizeof(Drift), applied_pos_cmp, m->journal);
        if (v.reboot_pending)
                qsort_r(v.reboot_pending, strv_length(v.reboot_pending), sizeof(char *), applied_id_cmp, m->journal);
        if (v.vanished)
                qsort_r(v.vanished, strv_length(v.vanished), sizeof(char *), applied_id_cmp, m->journal);
        *ret = v;
        return 0;
}

/* Brings the live state up to now without a full read: the file events queued are taken in, and
 * the knobs no event announces are read again. Returns whether it could (else a full read is
 * due). */
static bool live_refresh(Manager *m, bool watched[_DOMAIN_MAX]) {
        _cleanup_strv_free_ char **ids = NULL;
        bool oom = false, all[_DOMAIN_MAX], any[_DOMAIN_MAX] = {};

        for (size_t d = 0; d < _DOMAIN_MAX; d++)
                all[d] = watched[d] = true;
        if (!m->live.valid || !m->watching || !m->watcher)
                return false;
        watcher_drain(m->watcher);
        if (!m->live.valid) /* a correction wrote the journal */
                return false;
        _cleanup_strv_free_ char **unwatched = watcher_unwatched_knobs(m->watcher, &oom);
        _cleanup_(string_set_done) StringSet gone = {};
        for (char **u = unwatched; u && *u && !oom; u++)
                oom = string_set_add(&gone, *u) < 0;
        if (oom)
                return false;
        for (size_t i = 0; i < m->journal->n_applied; i++) {
                const JournalKnob *k = &m->journal->applied[i];
                const Backend *b = backend_for(k->domain);
                bool evented = !string_set_contains(&m->live.unfiled, k->id) && !string_set_contains(&gone, k->id);
                bool moved = m->live.hotplug && b && (b->flags & BACKEND_HOTPLUG_MOVES);
                if (!evented)
                        watched[k->domain] = false;
                any[k->domain] = true;
                if (evented && !moved) {
                        all[k->domain] = false;
                        continue;
                }
                if (strv_extend(&ids, k->id) < 0)
                        return false;
        }
        if (ids) {
                _cleanup_(drift_set_done) DriftSet found = {};
                if (check_knobs(m, ids, &found) < 0)
                        return false;
                drift_update(m, &found, ids);
        }
        uint64_t now = drift_now();
        for (size_t d = 0; d < _DOMAIN_MAX; d++)
                if (any[d] && all[d])
                        m->live.read_usec[d] = now;
        m->live.hotplug = false;
        return true;
}

static json_t *live_freshness(Manager *m, bool live, const bool watched[_DOMAIN_MAX]) {
        bool has[_DOMAIN_MAX] = {};
        uint64_t now = drift_now();
        for (size_t i = 0; m->journal && i < m->journal->n_applied; i++)
                has[m->journal->applied[i].domain] = true;
        json_t *f = json_object();
        for (size_t d = 0; f && d < _DOMAIN_MAX; d++) {
                if (!has[d])
                        continue;
                uint64_t at = m->live.read_usec[d];
                if (json_object_set_new(f, domain_to_string((Domain) d),
                                        json_pack("{s:I, s:I, s:b}", "checked_usec", (json_int_t) at, "age_ms",
                                                  (json_int_t) (now > at ? (now - at) / 1000 : 0), "watched",
                                                  watched[d])) < 0) {
                        json_decref(f);
                        return NULL;
                }
        }
        return f ? json_pack("{s:b, s:o}", "live", live, "freshness", f) : NULL;
}

int manager_verify_result(Manager *m, VerifyResult *ret, json_t **ret_daemon, ManagerError *e) {
        bool watched[_DOMAIN_MAX], live;
        int r = journal_reload(m, NULL);
        if (r >= 0) {
                live = m->profile && m->journal && live_refresh(m, watched);
                if (live) {
                        r = live_result(m, ret);
                        manager_properties_update(m);
                } else
                        r = check_all(m, ret);
        }
        if (r < 0) {
                if (r == -EBADMSG)
                        manager_error_set(e, MANAGER_ERROR_FAILED, "%s", strempty(m->journal_error));
                else
                        manager_error_set(e, MANAGER_ERROR_FAILED, "cannot verify: %s", strerror(-r));
                return r;
        }
        if (ret_daemon) {
                if (!live)
                        for (size_t d = 0; d < _DOMAIN_MAX; d++)
                                watched[d] = false;
                *ret_daemon = live_freshness(m, live, watched);
                if (!*ret_daemon) {
                        verify_result_done(ret);
                        return -ENOMEM;
                }
        }
        return 0;
}

int manager_verify(Manager *m, json_t **ret, ManagerError *e) {
        VerifyResult v = {};
        json_t *daemon = NULL;
        int r = manager_verify_result(m, &v, &daemon, e);
        if (r < 0)
                return r;
        *ret = document_verify(&v);
        verify_result_done(&v);
        if (*ret && json_object_set_new(*ret, "daemon", daemon) < 0) {
                json_decref(*ret);
                *ret = NULL;
        } else if (!*ret)
                json_decref(daemon);
        trim_later(m);
        return *ret ? 0 : -ENOMEM;
}

int manager_describe(Manager *m, json_t **ret, ManagerError *e) {
        json_t *drift = drift_entries_to_json(m->drift.entries, m->drift.n);
        for (size_t i = 0; drift && i < m->tasks.n; i++)
                if (json_array_append_new(drift, drift_entry_to_json(&m->tasks.entries[i])) < 0) {
                        json_decref(drift);
                        drift = NULL;
                }
        if (!drift)
                return -ENOMEM;
        *ret = json_pack("{s:s?, s:b, s:b, s:I, s:o, s:I, s:I, s:I}", "profile", manager_active_profile(m), "in_sync",
                         manager_in_sync(m), "reboot_required", manager_reboot_required(m), "drift_count",
                         (json_int_t) manager_drift_count(m), "drift", drift, "tasks_unlisted",
                         (json_int_t) m->tasks_unlisted, "watched_files",
                         (json_int_t) (m->watcher ? watcher_n_files(m->watcher) : 0), "interval_s",
                         (json_int_t) (m->watcher ? watcher_get_interval(m->watcher) / 1000000ULL : 0));
        return *ret ? 0 : -ENOMEM;
}

int manager_revert(Manager *m, json_t **ret, ManagerError *e) {
        _cleanup_(journal_store_unlockp) JournalStore *lock = NULL;
        _cleanup_(host_freep) Host *host = NULL;
        EngineResult er = {};
        int r = host_discover(m->root, 0, &host);
        if (r < 0) {
                manager_error_set(e, MANAGER_ERROR_FAILED, "cannot read the host's topology: %s", strerror(-r));
                return r;
        }
        r = take_lock(m, &lock, e);
        if (r < 0)
                return r;
        r = engine_revert(m->root, m->store, host, &er);
        journal_store_unlock(TAKE_PTR(lock));
        json_t *doc = document_revert(&er, r);
        if (r < 0) {
                if (er.error.pointer)
                        manager_error_set(e, MANAGER_ERROR_FAILED,
                                          "%zu knob%s could not be restored (first: %s: %s); they stay in "
                                          "the journal and a later revert retries them",
                                          er.failed, er.failed == 1 ? "" : "s", er.error.pointer,
                                          strerror(-er.error.code));
                else
                        manager_error_set(e, MANAGER_ERROR_FAILED, "revert failed: %s",
                                          er.error.message ?: strerror(-r));
                e->details = doc;
                doc = NULL;
        } else
                log_info("Reverted: %zu knobs restored to their original values", er.written);
        engine_result_done(&er);
        (void) journal_reload(m, NULL);
        drift_set_clear(&m->drift);
        m->reboot_required = false;
        watcher_flush(m->watcher);
        host = host_free(host);
        trim_later(m);
        emit_reverted(m);
        manager_properties_update(m);
        if (r < 0)
                return r;
        *ret = doc;
        return doc ? 0 : -ENOMEM;
}

int manager_status(Manager *m, json_t **ret, ManagerError *e) {
        VerifyResult v = {};
        _cleanup_(json_decrefp) json_t *live = NULL;
        int r = manager_verify_result(m, &v, &live, e);
        if (r < 0)
                return r;
        json_t *doc = document_status(&v, m->journal);
        /* What only the daemon knows. */
        if (doc)
                json_object_set_new(
                        doc, "daemon",
                        json_pack("{s:I, s:I, s:I, s:I, s:s, s:I, s:b, s:I, s:O, s:O}", "watched_files",
                                  (json_int_t) (m->watcher ? watcher_n_files(m->watcher) : 0), "interval_s",
                                  (json_int_t) (m->watcher ? watcher_get_interval(m->watcher) / 1000000ULL : 0),
                                  "drift_events", (json_int_t) m->drift_events, "safety_checks",
                                  (json_int_t) m->safety_checks, "policy", drift_policy_to_string(m->policy_default),
                                  "streams", (json_int_t) m->n_streams, "task_check", m->task_check,
                                  "tasks_on_isolated", (json_int_t) (m->tasks.n + m->tasks_unlisted), "live",
                                  json_object_get(live, "live"), "freshness", json_object_get(live, "freshness")));
        verify_result_done(&v);
        trim_later(m);
        *ret = doc;
        return doc ? 0 : -ENOMEM;
}

/* ---- events ---- */

static void on_knobs_changed(Watcher *w, char **knobs, void *userdata) {
        Manager *m = userdata;
        log_debug("Knob files changed: %zu knob(s), first %s", strv_length(knobs), strempty(knobs[0]));
        check_some(m, knobs);
}

/* ---- new IRQs ----
 *
 * /proc/irq/N appears at request_irq() (and, for IRQs that existed at boot, stays after
 * free_irq()). No event names it: procfs raises no inotify event for a directory the kernel makes,
 * and a driver requests its IRQs after the uevent of its device (at probe) or when its interface is
 * brought up (ndo_open(), before the RTM_NEWLINK that says IFF_UP). So the watcher's device events
 * (uevents, links, proc/irq entries made in a tree) start a short series of looks at proc/irq, one
 * readdir each; a number neither placed nor waiting makes a plan, which places what
 * /proc/interrupts lists. A number /proc/interrupts does not list yet waits, and is looked for
 * again at every step of the series and at every safety check, never taken as done. */

static const uint64_t irq_steps_usec[] = { 20 * 1000ULL, 100 * 1000ULL, 500 * 1000ULL, 2000 * 1000ULL, 5000 * 1000ULL };

static void irq_set_done(IrqSet *s) {
        free(s->v);
        *s = (IrqSet) {};
}

static bool irq_set_has(const IrqSet *s, unsigned v) {
        size_t lo = 0, hi = s->n;
        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (s->v[mid] == v)
                        return true;
                if (s->v[mid] < v)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return false;
}

/* Drops from s what `only` does not have. */
static void irq_set_keep(IrqSet *s, const IrqSet *only) {
        size_t n = 0;
        for (size_t i = 0; i < s->n; i++)
                if (irq_set_has(only, s->v[i]))
                        s->v[n++] = s->v[i];
        s->n = n;
}

static int uint_cmp(const void *a, const void *b) {
        unsigned x = *(const unsigned *) a, y = *(const unsigned *) b;
        return x < y ? -1 : x > y;
}

/* The numbers of proc/irq, sorted. */
static int irq_set_read(Root *root, IrqSet *ret) {
        _cleanup_free_ unsigned *v = NULL;
        size_t n = 0, cap = 0;
        DIR *d = NULL;
        int r = root_opendir(root, "proc/irq", &d);
        if (r < 0)
                return r;
        struct dirent *de;
        while ((de = readdir(d))) {
                char *end;
                errno = 0;
                unsigned long x = strtoul(de->d_name, &end, 10);
                if (end == de->d_name || *end || errno || x > UINT_MAX)
                        continue;
                if (n == cap) {
                        unsigned *nv = realloc(v, (cap = MAX(cap * 2, (size_t) 64)) * sizeof(unsigned));
                        if (!nv) {
                                closedir(d);
                                return -ENOMEM;
                        }
                        v = nv;
                }
                v[n++] = (unsigned) x;
        }
        closedir(d);
        qsort(v, n, sizeof(unsigned), uint_cmp);
        *ret = (IrqSet) { .v = TAKE_PTR(v), .n = n };
        return 0;
}

/* New IRQs or kernel threads: knobs the journal does not have yet are set per the profile.
 * ret_listed as apply_selected()'s; false when no plan was made. */
static bool adopt_new(Manager *m, const char *why, IrqSet *ret_listed) {
        ManagerError e = {};
        size_t written = 0;
        if (!m->profile)
                return false;
        int r = apply_selected(m, NULL, &written, ret_listed, &e);
        if (r < 0)
                log_warning("Cannot place new objects (%s): %s", why, strempty(e.message));
        else if (written > 0)
                log_info("Placed %zu new knob%s per %s (%s)", written, written == 1 ? "" : "s", m->profile, why);
        manager_error_done(&e);
        return r >= 0;
}

static void irq_steps_start(Manager *m) {
        m->irq_step = 0;
        if (m->irq_source) {
                (void) sd_event_source_set_time_relative(m->irq_source, irq_steps_usec[0]);
                (void) sd_event_source_set_enabled(m->irq_source, SD_EVENT_ONESHOT);
        }
}

/* Looks at proc/irq; plans when a number is there that is neither placed nor waiting, or (again)
 * while some wait and `again`, or always with `force` (SIGHUP). */
static void irqs_check(Manager *m, const char *why, bool again, bool force) {
        _cleanup_(irq_set_done) IrqSet now = {}, listed = {};
        IrqSet known = {}, waiting = {};
        bool fresh = false;

        if (irq_set_read(m->root, &now) < 0)
                return;
        /* A number gone is forgotten: a device that comes later may get it again. */
        irq_set_keep(&m->irqs_known, &now);
        irq_set_keep(&m->irqs_waiting, &now);
        for (size_t i = 0; i < now.n; i++)
                if (!irq_set_has(&m->irqs_known, now.v[i]) && !irq_set_has(&m->irqs_waiting, now.v[i]))
                        fresh = true;
        if (!force && !fresh && !(again && m->irqs_waiting.n > 0))
                return;
        bool planned = adopt_new(m, why, &listed);
        known.v = malloc(MAX(now.n, (size_t) 1) * sizeof(unsigned));
        waiting.v = malloc(MAX(now.n, (size_t) 1) * sizeof(unsigned));
        if (!known.v || !waiting.v) {
                free(known.v);
                free(waiting.v);
                return;
        }
        for (size_t i = 0; i < now.n; i++) {
                unsigned q = now.v[i];
                /* Waits: a number new to us that /proc/interrupts did not list for a plan that was
                 * made. A plan that could not be made (no profile, a journal that is refused) is
                 * said once, not tried again at every look. */
                if (m->profile && planned && !irq_set_has(&m->irqs_known, q) && !irq_set_has(&listed, q))
                        waiting.v[waiting.n++] = q;
                else
                        known.v[known.n++] = q;
        }
        for (size_t i = 0; i < waiting.n; i++)
                if (!irq_set_has(&m->irqs_waiting, waiting.v[i]))
                        log_debug("IRQ %u is in /proc/irq but not yet in /proc/interrupts; looking again",
                                  waiting.v[i]);
        irq_set_done(&m->irqs_known);
        irq_set_done(&m->irqs_waiting);
        m->irqs_known = known;
        m->irqs_waiting = waiting;
        /* A series of looks follows, unless one is under way (this look may be one of it). */
        if (waiting.n > 0 && m->irq_source && !m->irq_stepping) {
                int on = SD_EVENT_OFF;
                (void) sd_event_source_get_enabled(m->irq_source, &on);
                if (on == SD_EVENT_OFF)
                        irq_steps_start(m);
        }
}

static int on_irq_step(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        m->irq_stepping = true;
        irqs_check(m, "new IRQs", /* again= */ true, /* force= */ false);
        m->irq_stepping = false;
        if (++m->irq_step < ELEMENTSOF(irq_steps_usec)) {
                (void) sd_event_source_set_time_relative(s, irq_steps_usec[m->irq_step]);
                (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        } else if (m->irqs_waiting.n > 0)
                log_debug("%zu IRQ(s) in /proc/irq still not in /proc/interrupts; looking again at the next "
                          "device event and safety check",
                          m->irqs_waiting.n);
        return 0;
}

/* The numbers there now are taken as done (at start, after the full apply). */
static void irqs_reset(Manager *m) {
        IrqSet now = {};
        if (irq_set_read(m->root, &now) < 0)
                return;
        irq_set_done(&m->irqs_known);
        irq_set_done(&m->irqs_waiting);
        m->irqs_known = now;
}

static void on_device_added(Watcher *w, const char *action, const char *devpath, void *userdata) {
        Manager *m = userdata;
        log_debug("Device event: %s %s", action, devpath);
        irqs_check(m, "new IRQs", /* again= */ true, /* force= */ false);
        /* A driver requests its IRQs after its device's event: look again a few times. */
        irq_steps_start(m);
}

static void on_kthreads_forked(Watcher *w, void *userdata) {
        Manager *m = userdata;
        log_debug("kthreadd forked: checking kernel threads");
        check_flagged(m, BACKEND_FOLLOWS_FORKS);
        (void) adopt_new(m, "new kernel threads", NULL);
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
        (void) journal_reload(m, NULL);
        if (m->journal && m->journal->transaction_open && recover_open(m, /* wait= */ false) >= 0)
                (void) journal_reload(m, NULL);
        if (!m->profile)
                return;
        (void) check_all(m, NULL);
        irqs_check(m, "new IRQs", /* again= */ true, /* force= */ false);
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
        if (journal_reload(m, &changed) < 0 || !changed)
                return;
        if (m->journal && m->journal->transaction_open)
                return; /* someone is applying; the commit will be another change */
        log_info("The journal was changed by another program; active profile: %s", strempty(m->profile));
        if (!streq_ptr(before, m->profile) && m->profile)
                emit_applied(m, m->profile, /* external= */ true);
        if (m->profile)
                (void) check_all(m, NULL);
        else {
                drift_set_clear(&m->drift);
                m->reboot_required = false;
        }
        manager_properties_update(m);
}

void manager_reload(Manager *m) {
        (void) journal_reload(m, NULL);
        if (m->profile) {
                (void) check_all(m, NULL);
                /* Asked for: every IRQ and kernel thread the journal lacks is placed, whatever the
                 * last look at proc/irq made of it. */
                irqs_check(m, "new IRQs", /* again= */ true, /* force= */ true);
        }
        manager_properties_update(m);
}

/* ---- life cycle ---- */

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
        settings_reset(m);
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
        apply_interval(m);
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
        sd_event_source_disable_unref(m->irq_source);
        irq_set_done(&m->irqs_known);
        irq_set_done(&m->irqs_waiting);
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
        r = journal_reload(m, NULL);
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
                r = apply_full(m, /* name= */ NULL, &doc, &e);
                if (r < 0)
                        log_error("Cannot re-apply %s: %s; watching what the journal holds", m->profile,
                                  strempty(e.message));
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
        watch_refresh(m);
        irqs_reset(m);
        if (root_is_dir(m->root, "proc/irq")) {
                r = sd_event_add_time_relative(m->event, &m->irq_source, CLOCK_MONOTONIC, irq_steps_usec[0], 1000,
                                               on_irq_step, m);
                if (r >= 0) {
                        (void) sd_event_source_set_enabled(m->irq_source, SD_EVENT_OFF);
                        (void) sd_event_source_set_description(m->irq_source, "manager-irq-steps");
                }
                r = watcher_watch_objects(m->watcher, "proc/irq");
                if (r < 0)
                        log_debug_errno(r, "Cannot watch proc/irq: %m");
        }
        if (m->profile)
                (void) check_all(m, NULL);
        manager_properties_update(m);
        trim_later(m);
        log_info("Watching %zu knob files; safety check every %llu s", watcher_n_files(m->watcher),
                 (unsigned long long) (watcher_get_interval(m->watcher) / 1000000ULL));
        return 0;
}
