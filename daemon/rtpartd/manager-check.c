/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "document.h"
#include "manager-internal.h"
#include "strv.h"

/* What the daemon knows of the host against the journal: drift found (by file events, the safety
 * timer, a full read) and what the policy does about it, and the answers built from that live
 * state (Verify, Status, Describe). */

/* How often one knob is written back per CORRECT_WINDOW before rtpartd stops fighting whoever
 * keeps changing it (irqbalance, tuned, a script) and only reports. */
#define CORRECT_BURST 10
#define CORRECT_WINDOW_USEC (60 * 1000000ULL)

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

static int read_cmdline(Root *root, char **ret) {
        int r = root_read_line(root, "proc/cmdline", ret);
        if (r == -ENOENT)
                return (*ret = strdup("")) ? 0 : -ENOMEM;
        return r;
}

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
                int r = manager_apply_selected(m, fix, &written, NULL, &err);
                if (r < 0) {
                        _cleanup_free_ char *msg = manager_error_message(&err);
                        log_error("Cannot correct the drift: %s", strempty(msg));
                }
                manager_error_done(&err);
                /* Read them again: what is back in line was corrected. */
                if (manager_check_knobs(m, fix, &still) < 0) /* unknown: as it was */
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
int manager_check_knobs(Manager *m, char **ids, DriftSet *ret_found) {
        _cleanup_free_ char *cmdline = NULL;
        VerifyResult v = {};
        int r = 0;
        /* The running kernel's command line matters to boot knobs only, which no file event
         * names: the common check reads nothing but the knobs. */
        for (char **i = ids; i && *i && r >= 0 && !cmdline; i++)
                if (startswith(*i, "boot/"))
                        r = read_cmdline(m->root, &cmdline);
        if (r >= 0 && !m->journal)
                r = manager_journal_reload(m, NULL);
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

void manager_check_some(Manager *m, char **ids) {
        _cleanup_(drift_set_done) DriftSet found = {};
        if (manager_check_knobs(m, ids, &found) >= 0)
                drift_update(m, &found, ids);
}

/* The applied knobs whose backends have flag. */
void manager_check_flagged(Manager *m, BackendFlags flag) {
        _cleanup_strv_free_ char **ids = NULL;
        for (size_t i = 0; m->journal && i < m->journal->n_applied; i++) {
                const Backend *b = backend_for(m->journal->applied[i].domain);
                if (b && (b->flags & flag))
                        (void) strv_extend(&ids, m->journal->applied[i].id);
        }
        if (ids)
                manager_check_some(m, ids);
}

/* Every knob, through the engine: drift, pending reboots, vanished objects. */
int manager_check_all(Manager *m, VerifyResult *ret) {
        _cleanup_free_ char *cmdline = NULL;
        VerifyResult v = {};
        int r = read_cmdline(m->root, &cmdline);
        if (r >= 0)
                r = manager_journal_reload(m, NULL);
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
        manager_trim_later(m); /* the whole journal was read */
        if (ret)
                *ret = v;
        else
                verify_result_done(&v);
        return 0;
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
                /* Values a driver sets raise no file event (procfs announces only writes through
                 * the file): never taken as evented. */
                bool evented = !string_set_contains(&m->live.unfiled, k->id) && !string_set_contains(&gone, k->id) &&
                        !(b && (b->flags & BACKEND_KERNEL_SETS));
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
                if (manager_check_knobs(m, ids, &found) < 0)
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

/* Verify as C types, from the live state: file events are taken in first (a write just made shows),
 * and what no event announces is read again (knobs without a watched file; after a CPU hotplug,
 * what the kernel moves itself). With ret_daemon, what only the daemon knows of it: {"live": bool
 * (false: every knob was read for this answer), "freshness": {DOMAIN: {"checked_usec":
 * CLOCK_REALTIME µs when all its knobs were last read, "age_ms": how long ago, "watched": whether
 * file events announce every change of it}}}. */
static int verify_result(Manager *m, VerifyResult *ret, json_t **ret_daemon, ManagerError *e) {
        bool watched[_DOMAIN_MAX], live;
        int r = manager_journal_reload(m, NULL);
        if (r >= 0) {
                live = m->profile && m->journal && live_refresh(m, watched);
                if (live) {
                        r = live_result(m, ret);
                        manager_properties_update(m);
                } else
                        r = manager_check_all(m, ret);
        }
        if (r < 0) {
                if (r == -EBADMSG)
                        manager_error_set(e, MANAGER_ERROR_FAILED, r, "%s", strempty(m->journal_error));
                else
                        manager_error_set(e, MANAGER_ERROR_FAILED, r, "cannot verify: %s", strerror(-r));
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
        int r = verify_result(m, &v, &daemon, e);
        if (r < 0)
                return r;
        *ret = document_verify(&v);
        verify_result_done(&v);
        if (*ret && json_object_set_new(*ret, "daemon", daemon) < 0) {
                json_decref(*ret);
                *ret = NULL;
        } else if (!*ret)
                json_decref(daemon);
        manager_trim_later(m);
        return *ret ? 0 : -ENOMEM;
}

json_t *manager_drift_list(Manager *m) {
        json_t *drift = drift_entries_to_json(m->drift.entries, m->drift.n);
        for (size_t i = 0; drift && i < m->tasks.n; i++)
                if (json_array_append_new(drift, drift_entry_to_json(&m->tasks.entries[i])) < 0) {
                        json_decref(drift);
                        return NULL;
                }
        return drift;
}

int manager_describe(Manager *m, json_t **ret, ManagerError *e) {
        json_t *drift = manager_drift_list(m);
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

int manager_status(Manager *m, json_t **ret, ManagerError *e) {
        VerifyResult v = {};
        _cleanup_(json_decrefp) json_t *live = NULL;
        int r = verify_result(m, &v, &live, e);
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
        manager_trim_later(m);
        *ret = doc;
        return doc ? 0 : -ENOMEM;
}
