/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <string.h>

#include "document.h"
#include "strv.h"

json_t *document_strv(char * const *l) {
        json_t *a = json_array();
        for (char * const *i = l; a && i && *i; i++)
                json_array_append_new(a, json_string(*i));
        return a;
}

json_t *document_list(const ProfileInfo *l, size_t n) {
        json_t *arr = json_array();
        for (size_t i = 0; arr && i < n; i++)
                json_array_append_new(arr,
                                      json_pack("{s:s, s:s?, s:s, s:s, s:b}", "name", l[i].name, "summary",
                                                l[i].summary, "path", l[i].path, "origin",
                                                l[i].user ? "user" : "system", "overrides_system", l[i].shadows));
        return arr;
}

static json_t *knob_entry(const Knob *k) {
        /* The file behind the knob, as seen from the root (under --root DIR: below DIR). */
        _cleanup_free_ char *path = NULL;
        if (k->path && asprintf(&path, "/%s", k->path) < 0)
                return NULL;
        json_t *e = k->changed
                ? json_pack("{s:s, s:s, s:s?, s:s?, s:s?, s:b, s:s}", "knob", k->id, "domain",
                            domain_to_string(k->domain), "path", path, "current", k->current, "desired", k->desired,
                            "reboot", k->reboot, "kind", value_kind_to_string(k->kind))
                : json_pack("{s:s, s:s, s:s?, s:s?, s:s}", "knob", k->id, "domain", domain_to_string(k->domain), "path",
                            path, "value", k->current, "kind", value_kind_to_string(k->kind));
        if (e && k->note)
                json_object_set_new(e, "note", json_string(k->note));
        return e;
}

json_t *document_plan(const Plan *plan, const Host *host) {
        _cleanup_free_ char *iso = cpu_set_format_list(&plan->isolated), *hk = cpu_set_format_list(&plan->housekeeping);
        json_t *changes = json_array(), *unchanged = json_array();
        size_t reboot;

        for (size_t i = 0; i < plan->n_knobs; i++)
                json_array_append_new(plan->knobs[i].changed ? changes : unchanged, knob_entry(&plan->knobs[i]));
        size_t n = plan_count_changes(plan, &reboot);
        return json_pack("{s:s, s:{s:s, s:s}, s:{s:I, s:I, s:s, s:s, s:b}, s:o, s:o, s:o, s:{s:I, s:I, s:I}}",
                         "profile", plan->profile, "cpus", "isolated", strempty(iso), "housekeeping", strempty(hk),
                         "host", "cpus_online", (json_int_t) cpu_set_count(&host->online), "nodes",
                         (json_int_t) host->n_nodes, "cgroup", cgroup_mode_to_string(host->cgroup_mode), "bootloader",
                         bootloader_to_string(host->bootloader), "systemd", host->systemd_running, "changes", changes,
                         "unchanged", unchanged, "notes", document_strv(plan->notes), "summary", "changes",
                         (json_int_t) n, "reboot", (json_int_t) reboot, "unchanged", (json_int_t) (plan->n_knobs - n));
}

json_t *document_apply(const Plan *plan, const EngineResult *er) {
        size_t reboot = 0;
        json_t *ids = json_array();
        for (size_t i = 0; ids && i < plan->n_knobs; i++)
                if (plan->knobs[i].changed && plan->knobs[i].reboot) {
                        reboot++;
                        if (json_array_append_new(ids, json_string(plan->knobs[i].id)) < 0) {
                                json_decref(ids);
                                ids = NULL;
                        }
                }
        /* Whether this run changed the host at all: what configuration management reports. */
        bool host_changed = er->written > 0 || er->restored > 0 || er->recovered;
        return json_pack("{s:b, s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:b, s:I, s:o, s:b, s:o}", "ok", 1, "profile",
                         plan->profile, "host_changed", host_changed, "changed", (json_int_t) er->written, "unchanged",
                         (json_int_t) er->unchanged, "unmovable", (json_int_t) er->refused, "skipped",
                         (json_int_t) er->skipped, "restored", (json_int_t) er->restored, "reboot_required", reboot > 0,
                         "reboot_changes", (json_int_t) reboot, "reboot_knobs", ids, "recovered", er->recovered,
                         "notes", document_strv(er->notes));
}

char *document_reboot_phrase(json_t *ids) {
        size_t counts[_DOMAIN_MAX] = {}, i;
        json_t *e;
        json_array_foreach (ids, i, e) {
                Domain d = knob_id_domain(strempty(json_string_value(e)));
                if (d >= 0)
                        counts[d]++;
        }
        return knob_count_phrase(counts);
}

static json_t *error_entry(const EngineResult *er, int r) {
        const Error *e = &er->error;
        int err = e->code ? -e->code : -r;
        /* A knob's write has its knob and errno; anything else (a refused journal: the entry and
         * what is wrong with it) its message. */
        const char *msg = e->message ?: strerror(err);
        return json_pack("{s:s?, s:s?, s:i, s:s, s:s?}", "knob", e->pointer, "path", e->file, "errno", err, "message",
                         msg, "detail", e->detail);
}

json_t *document_apply_failure(const EngineResult *er, int r) {
        return json_pack("{s:b, s:o, s:b, s:b, s:o}", "ok", 0, "error", error_entry(er, r), "rolled_back",
                         er->rolled_back, "rollback_incomplete", er->rollback_incomplete, "notes",
                         document_strv(er->notes));
}

json_t *document_revert(const EngineResult *er, int r) {
        return json_pack("{s:b, s:I, s:I, s:I, s:b, s:o, s:o}", "ok", r >= 0, "restored", (json_int_t) er->written,
                         "failed", (json_int_t) er->failed, "skipped", (json_int_t) er->skipped, "recovered",
                         er->recovered, "error", r < 0 ? error_entry(er, r) : json_null(), "notes",
                         document_strv(er->notes));
}

json_t *document_drift(const char *knob, Domain d, const char *expected, const char *actual) {
        return json_pack("{s:s, s:s, s:s?, s:s?}", "knob", knob, "domain", domain_to_string(d), "expected", expected,
                         "actual", actual);
}

static json_t *drift_entries(const VerifyResult *v) {
        json_t *drift = json_array();
        for (size_t i = 0; drift && i < v->n_drift; i++)
                json_array_append_new(
                        drift,
                        document_drift(v->drift[i].knob, v->drift[i].domain, v->drift[i].expected, v->drift[i].actual));
        return drift;
}

json_t *document_verify(const VerifyResult *v) {
        json_t *drift = drift_entries(v);
        return json_pack("{s:s?, s:b, s:b, s:o, s:o, s:o, s:I, s:b}", "profile", v->profile, "in_sync", v->n_drift == 0,
                         "reboot_required", strv_length(v->reboot_pending) > 0, "drift", drift, "reboot_pending",
                         document_strv(v->reboot_pending), "unmovable", document_strv(v->unmovable), "checked",
                         (json_int_t) v->checked, "transaction_open", v->transaction_open);
}

json_t *document_status(const VerifyResult *v, const Journal *j) {
        return json_pack("{s:s?, s:s?, s:I, s:I, s:o, s:b, s:o, s:o, s:I, s:o, s:b}", "profile", v->profile,
                         "applied_at", v->applied_at, "knobs", (json_int_t) v->checked, "drift",
                         (json_int_t) v->n_drift, "drifted", drift_entries(v), "reboot_required",
                         strv_length(v->reboot_pending) > 0, "reboot_pending", document_strv(v->reboot_pending),
                         "unmovable", document_strv(v->unmovable), "originals", (json_int_t) journal_count_originals(j),
                         "last_error", journal_last_error_to_json(j), "transaction_open", v->transaction_open);
}
