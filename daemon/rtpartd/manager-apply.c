/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "document.h"
#include "host.h"
#include "manager-internal.h"
#include "profile.h"
#include "strv.h"
#include "tuned-active.h"

/* What the daemon writes: a profile applied whole (Apply, the start-up re-apply), the journal's
 * profile applied again to some knobs (drift to correct, new objects), Revert; and Plan and
 * ListProfiles beside them. */

static bool knob_is_new(Manager *m, const Knob *k) {
        return !journal_find_applied(m->journal, k->id) && !string_set_contains(&m->not_owned, k->id) &&
                !journal_find_unmovable(m->journal, k->id);
}

/* The journal's lock, held until *ret is unlocked (journal_store_unlockp()). */
int manager_take_lock(Manager *m, JournalStore **ret, ManagerError *e) {
        _cleanup_(error_done) Error le = {};
        int r = journal_store_lock(m->store, /* wait= */ true, &le);
        if (r < 0) {
                _cleanup_free_ char *why = le.message ? error_format(&le, NULL) : NULL;
                manager_error_set(e, MANAGER_ERROR_FAILED, r, "cannot take the journal lock: %s", why ?: strerror(-r));
                return r;
        }
        *ret = m->store;
        return 0;
}

static int engine_failure(ManagerError *e, const EngineResult *res, int r) {
        const Error *f = &res->error;
        if (f->pointer)
                manager_error_set(e, MANAGER_ERROR_FAILED, r, "writing %s (%s) failed: %s%s%s%s; %s", f->pointer,
                                  f->file ? f->file : "no file", strerror(-f->code), f->detail ? " (kernel: " : "",
                                  strempty(f->detail), f->detail ? ")" : "",
                                  res->rollback_incomplete ? "the changes of this run were undone except those noted"
                                                           : "every change of this run was undone");
        else
                manager_error_set(e, MANAGER_ERROR_FAILED, r, "%s", f->message ?: strerror(-r));
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

static int apply_selected(Manager *m, char **ids, const char *ifname, size_t *ret_written, Host **ret_host,
                          DriftSet *ret_corrected, ManagerError *e);

/* After a run that wrote: the knobs drivers set themselves when another is written
 * (BACKEND_KERNEL_SETS: virtio_net places its queues' IRQs, and their XPS, when its channels are
 * set), read again and written again where they were moved. The run planned them before its
 * writes: one found as desired then was not written, and stays where the driver put it. */
static void place_again(Manager *m, DriftSet *ret_corrected) {
        _cleanup_strv_free_ char **ids = NULL;
        ManagerError e = {};
        size_t written = 0;
        for (size_t i = 0; m->journal && i < m->journal->n_applied; i++) {
                const Backend *b = backend_for(m->journal->applied[i].domain);
                if (b && (b->flags & BACKEND_KERNEL_SETS) && strv_extend(&ids, m->journal->applied[i].id) < 0)
                        return;
        }
        if (!ids)
                return;
        int r = apply_selected(m, ids, NULL, &written, NULL, ret_corrected, &e);
        if (r < 0) {
                _cleanup_free_ char *msg = manager_error_message(&e);
                log_warning("Cannot place again what drivers moved after the writes of %s: %s", m->profile,
                            strempty(msg));
        } else if (written > 0)
                log_notice("Placed %zu knob%s again per %s: their drivers had moved them when other knobs were "
                           "written",
                           written, written == 1 ? "" : "s", m->profile);
        manager_error_done(&e);
}

/* manager_apply_selected(), and with ifname the knobs that hold that interface's state (the
 * backends' interface_knobs) as ids; ret_corrected (optional): the knobs written, as drift
 * entries (what they were, what they are now). */
static int apply_selected(Manager *m, char **ids, const char *ifname, size_t *ret_written, Host **ret_host,
                          DriftSet *ret_corrected, ManagerError *e) {
        _cleanup_(journal_store_unlockp) JournalStore *lock = NULL;
        _cleanup_strv_free_ char **sel = NULL, **fresh = NULL, **own = NULL;
        Prepared p = {};
        EngineResult er = {};
        size_t writes = 0;
        int r;

        *ret_written = 0;
        if (!m->journal || !m->journal->profile)
                return 0;
        r = manager_prepare_journal(m, /* want_plan= */ true, &p, e);
        if (r < 0)
                return r;
        if (ifname && (r = engine_interface_knobs(m->root, p.plan, ifname, &own)) < 0) {
                prepared_done(&p);
                return manager_error_set(e, MANAGER_ERROR_FAILED, r, "cannot find %s's knobs: %s", ifname,
                                         strerror(-r));
        }
        if (ifname)
                ids = own;
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
                if (k->changed && ret_corrected && r >= 0)
                        r = drift_set_put(ret_corrected, k->id, domain_to_string(k->domain), k->desired, k->current,
                                          drift_now());
                if (k->changed)
                        writes++;
        }
        if (r < 0 || (writes == 0 && !fresh)) {
                if (r >= 0 && ret_host)
                        *ret_host = TAKE_PTR(p.host);
                prepared_done(&p);
                return r;
        }
        r = manager_take_lock(m, &lock, e);
        if (r >= 0) {
                r = engine_apply_knobs(m->root, m->store, p.host, p.plan, sel, strv_length(sel), &er);
                if (r == -ESTALE)
                        manager_error_set(e, MANAGER_ERROR_FAILED, r,
                                          "the applied profile changed meanwhile; nothing written");
                else if (r < 0)
                        engine_failure(e, &er, r);
        }
        *ret_written = er.written;
        for (char **n = er.notes; n && *n; n++)
                log_debug("%s", *n);
        engine_result_done(&er);
        if (r >= 0 && ret_host)
                *ret_host = TAKE_PTR(p.host);
        prepared_done(&p);
        journal_store_unlock(TAKE_PTR(lock));
        (void) manager_journal_reload(m, NULL);
        /* New knobs the engine did not record (their backend cannot write them on this root)
         * are not tried again until the next full apply. */
        for (char **f = fresh; r >= 0 && f && *f; f++)
                if (!journal_find_applied(m->journal, *f))
                        (void) string_set_add(&m->not_owned, *f);
        watcher_flush(m->watcher);
        manager_trim_later(m);
        if (r >= 0 && *ret_written > 0 && !m->placing_again) {
                m->placing_again = true;
                place_again(m, ret_corrected);
                m->placing_again = false;
        }
        return r;
}

int manager_apply_selected(Manager *m, char **ids, size_t *ret_written, Host **ret_host, ManagerError *e) {
        return apply_selected(m, ids, NULL, ret_written, ret_host, NULL, e);
}

int manager_apply_interface(Manager *m, const char *ifname, size_t *ret_written, DriftSet *ret_corrected,
                            ManagerError *e) {
        return apply_selected(m, NULL, ifname, ret_written, NULL, ret_corrected, e);
}

int manager_apply_full(Manager *m, const char *name, json_t **ret, ManagerError *e) {
        _cleanup_(journal_store_unlockp) JournalStore *lock = NULL;
        Prepared p = {};
        EngineResult er = {};
        int r;

        /* The journal's document (or, for an older journal, the profile of its name) only as it was
         * applied: one that does not resolve to the journal's hash is not written. */
        if (name)
                r = manager_prepare(m, name, /* want_plan= */ true, &p, e);
        else
                r = manager_prepare_journal(m, /* want_plan= */ true, &p, e);
        if (r < 0)
                return r;
        r = manager_take_lock(m, &lock, e);
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
                manager_emit_apply_failed(m, p.plan->profile);
                prepared_done(&p);
                (void) manager_journal_reload(m, NULL);
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
        manager_settings_take(m, p.resolved);
        (void) manager_journal_reload(m, NULL);
        for (size_t i = 0; m->journal && i < p.plan->n_knobs; i++)
                if (knob_is_new(m, &p.plan->knobs[i]))
                        (void) string_set_add(&m->not_owned, p.plan->knobs[i].id);
        if (er.written > 0) {
                m->placing_again = true;
                place_again(m, NULL);
                m->placing_again = false;
        }
        watcher_flush(m->watcher);
        manager_emit_applied(m, p.plan->profile, /* external= */ false);
        (void) manager_check_all(m, NULL);
        engine_result_done(&er);
        prepared_done(&p);
        manager_trim_later(m);
        *ret = doc;
        return doc ? 0 : -ENOMEM;
}

bool manager_adopt_new(Manager *m, const char *why, Host **ret_host) {
        ManagerError e = {};
        size_t written = 0;
        if (!m->profile)
                return false;
        int r = manager_apply_selected(m, NULL, &written, ret_host, &e);
        if (r < 0) {
                _cleanup_free_ char *msg = manager_error_message(&e);
                log_warning("Cannot place new objects (%s): %s", why, strempty(msg));
        } else if (written > 0)
                log_info("Placed %zu new knob%s per %s (%s)", written, written == 1 ? "" : "s", m->profile, why);
        manager_error_done(&e);
        return r >= 0;
}

int manager_list_profiles(Manager *m, json_t **ret, ManagerError *e) {
        ProfileInfo *l = NULL;
        size_t n = 0;
        int r = profile_list(m->root, &l, &n);
        if (r < 0) {
                manager_error_set(e, MANAGER_ERROR_FAILED, r, "cannot list profiles: %s", strerror(-r));
                return r;
        }
        json_t *arr = document_list(l, n);
        profile_info_free_many(l, n);
        manager_trim_later(m);
        *ret = arr;
        return arr ? 0 : -ENOMEM;
}

int manager_plan(Manager *m, const char *profile, json_t **ret, ManagerError *e) {
        Prepared p = {};
        int r = manager_prepare(m, profile, /* want_plan= */ true, &p, e);
        if (r < 0)
                return r;
        /* The journal as the daemon holds it: refused knobs are no change. */
        r = engine_mark_refused(p.plan, m->journal);
        if (r >= 0) /* and the knobs tuned sets too, where it has a profile */
                r = tuned_overlap_mark(m->root, p.host, p.plan);
        json_t *doc = r >= 0 ? document_plan(p.plan, p.host) : NULL;
        prepared_done(&p);
        manager_trim_later(m);
        *ret = doc;
        return doc ? 0 : -ENOMEM;
}

int manager_apply(Manager *m, const char *profile, json_t **ret, ManagerError *e) {
        return manager_apply_full(m, profile, ret, e);
}

int manager_correct(Manager *m, json_t **ret, ManagerError *e) {
        _cleanup_strv_free_ char **ids = NULL;
        _cleanup_(drift_set_done) DriftSet corrected = {};
        size_t written = 0;

        if (!m->profile)
                return manager_error_set(e, MANAGER_ERROR_NOT_APPLIED, -ENOENT,
                                         "no profile is applied: nothing to correct");
        (void) manager_check_all(m, NULL); /* may correct some already, per the policy */
        for (size_t i = 0; i < m->drift.n; i++)
                (void) strv_extend(&ids, m->drift.entries[i].knob);
        if (ids) {
                _cleanup_(drift_set_done) DriftSet before = {}, still = {};
                for (size_t i = 0; i < m->drift.n; i++)
                        if (drift_set_put_entry(&before, &m->drift.entries[i]) < 0)
                                return -ENOMEM;
                int r = manager_apply_selected(m, ids, &written, NULL, e);
                if (r < 0)
                        return r;
                if (manager_check_knobs(m, ids, &still) < 0) /* cannot tell: as it was */
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

int manager_revert(Manager *m, json_t **ret, ManagerError *e) {
        _cleanup_(journal_store_unlockp) JournalStore *lock = NULL;
        _cleanup_(host_freep) Host *host = NULL;
        EngineResult er = {};
        int r = host_discover(m->root, 0, &host);
        if (r < 0) {
                manager_error_set(e, MANAGER_ERROR_FAILED, r, "cannot read the host's topology: %s", strerror(-r));
                return r;
        }
        r = manager_take_lock(m, &lock, e);
        if (r < 0)
                return r;
        r = engine_revert(m->root, m->store, host, &er);
        journal_store_unlock(TAKE_PTR(lock));
        json_t *doc = document_revert(&er, r);
        if (r < 0) {
                if (er.error.pointer)
                        manager_error_set(e, MANAGER_ERROR_FAILED, r,
                                          "%zu knob%s could not be restored (first: %s: %s); they stay in "
                                          "the journal and a later revert retries them",
                                          er.failed, er.failed == 1 ? "" : "s", er.error.pointer,
                                          strerror(-er.error.code));
                else
                        manager_error_set(e, MANAGER_ERROR_FAILED, r, "revert failed: %s",
                                          er.error.message ?: strerror(-r));
                e->details = doc;
                doc = NULL;
        } else
                log_info("Reverted: %zu knobs restored to their original values", er.written);
        engine_result_done(&er);
        (void) manager_journal_reload(m, NULL);
        drift_set_clear(&m->drift);
        m->reboot_required = false;
        watcher_flush(m->watcher);
        host = host_free(host);
        manager_trim_later(m);
        manager_emit_reverted(m);
        manager_properties_update(m);
        if (r < 0)
                return r;
        *ret = doc;
        return doc ? 0 : -ENOMEM;
}
