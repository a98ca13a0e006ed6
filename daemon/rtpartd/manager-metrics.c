/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "journal.h"
#include "manager-metrics.h"
#include "metrics.h"

/* What the metrics say changes with the manager's state (an apply, a revert, drift found or
 * cleared, the reboot-pending flag, the journal written by another program, new IRQs placed) and
 * with the two things the manager does not keep, which its listener hooks bring here: the last
 * apply's time and result, and the last audit. Rather than a call at every place the state
 * changes, a post source looks at what the metrics are made of after each turn of the event loop
 * that dispatched something (never on a timer of its own, so an idle daemon stays asleep): the
 * text is rendered only when that changed, and the file written only when the text differs from
 * the last one written or tried. The knobs owned per domain are counted once per journal. */

/* What the text is made of, but the strings and the audit (which come with their own changes). */
typedef struct Inputs {
        unsigned owned[_DOMAIN_MAX];
        unsigned drifted[_DOMAIN_MAX + 1]; /* the last: user tasks */
        bool applied, in_sync, reboot_required, apply_ok;
        uint64_t drift_events, apply_usec, audit_usec;
        const char *profile; /* compared by value */
} Inputs;

struct ManagerMetrics {
        Manager *manager; /* NULL once the manager is freed */
        Root *root;
        char *dir;     /* relative to root */
        char *display; /* dir as the user names it */
        sd_event_source *post;
        char *last;     /* the text last written or tried */
        int last_error; /* the last write's error, 0: written, 1: none tried yet */
        uint64_t apply_usec;
        bool apply_ok;
        MetricsAudit audit;
        bool have_inputs;
        Inputs inputs; /* of the text last rendered; profile points to profile below */
        char *profile;
        const Journal *owned_journal; /* owned[] below was counted for this journal … */
        uint64_t owned_digest;        /* … as read with this digest */
        size_t owned_n;
        unsigned owned[_DOMAIN_MAX];
};

static uint64_t now_realtime_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000ULL;
}

/* The journal's "applied_at" (UTC, "2026-12-03T05:00:00Z"), 0 if it is none. */
static uint64_t journal_applied_usec(const Journal *j) {
        struct tm tm = {};
        const char *end = j && j->applied_at ? strptime(j->applied_at, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
        if (!end)
                return 0;
        time_t t = timegm(&tm);
        return t > 0 ? (uint64_t) t * 1000000ULL : 0;
}

static void inputs_get(ManagerMetrics *mm, Inputs *ret) {
        Manager *m = mm->manager;
        const Journal *j = m->journal;

        if (!j)
                memset(mm->owned, 0, sizeof(mm->owned));
        else if (j != mm->owned_journal || j->digest != mm->owned_digest || j->n_applied != mm->owned_n) {
                memset(mm->owned, 0, sizeof(mm->owned));
                for (size_t i = 0; i < j->n_applied; i++)
                        if (j->applied[i].domain >= 0 && j->applied[i].domain < _DOMAIN_MAX)
                                mm->owned[j->applied[i].domain]++;
        }
        mm->owned_journal = j;
        mm->owned_digest = j ? j->digest : 0;
        mm->owned_n = j ? j->n_applied : 0;

        *ret = (Inputs) {
                .applied = m->profile != NULL,
                .in_sync = manager_in_sync(m),
                .reboot_required = manager_reboot_required(m),
                .apply_ok = mm->apply_ok,
                .drift_events = m->drift_events,
                .apply_usec = mm->apply_usec,
                .audit_usec = mm->audit.usec,
                .profile = m->profile,
        };
        memcpy(ret->owned, mm->owned, sizeof(ret->owned));
        for (size_t i = 0; i < m->drift.n; i++) {
                Domain d = domain_from_string(m->drift.entries[i].domain);
                if (d >= 0)
                        ret->drifted[d]++;
        }
        ret->drifted[_DOMAIN_MAX] = (unsigned) m->tasks.n;
}

static bool inputs_equal(const Inputs *a, const Inputs *b) {
        return memcmp(a->owned, b->owned, sizeof(a->owned)) == 0 &&
                memcmp(a->drifted, b->drifted, sizeof(a->drifted)) == 0 && a->applied == b->applied &&
                a->in_sync == b->in_sync && a->reboot_required == b->reboot_required && a->apply_ok == b->apply_ok &&
                a->drift_events == b->drift_events && a->apply_usec == b->apply_usec &&
                a->audit_usec == b->audit_usec && streq_ptr(a->profile, b->profile);
}

static int render(ManagerMetrics *mm, const Inputs *in, char **ret) {
        MetricsDomain domains[_DOMAIN_MAX + 1] = {};
        size_t n = 0;

        for (Domain d = 0; d < _DOMAIN_MAX; d++)
                domains[n++] = (MetricsDomain) {
                        .name = domain_to_string(d),
                        .owned = in->owned[d],
                        .drifted = in->drifted[d],
                };
        domains[n++] = (MetricsDomain) { .name = "task", .drifted = in->drifted[_DOMAIN_MAX], .no_knobs = true };

        MetricsState s = {
                .profile = in->profile,
                .in_sync = in->in_sync,
                .reboot_required = in->reboot_required,
                .domains = domains,
                .n_domains = n,
                .drift_events = in->drift_events,
                .apply_usec = in->apply_usec,
                .apply_ok = in->apply_ok,
                .audit = &mm->audit,
        };
        return metrics_render(&s, ret);
}

void manager_metrics_flush(ManagerMetrics *mm) {
        _cleanup_free_ char *text = NULL;
        Inputs in;
        if (!mm->manager)
                return;
        inputs_get(mm, &in);
        if (mm->have_inputs && inputs_equal(&in, &mm->inputs))
                return;
        int r = render(mm, &in, &text);
        if (r < 0) {
                log_debug_errno(r, "Cannot render the metrics: %m");
                return;
        }
        /* Kept with its own copy of the profile's name: the manager's may be freed. */
        char *profile = in.profile ? strdup(in.profile) : NULL;
        if (in.profile && !profile)
                return;
        free(mm->profile);
        mm->profile = profile;
        mm->inputs = in;
        mm->inputs.profile = profile;
        mm->have_inputs = true;
        if (mm->last && streq(mm->last, text))
                return;
        r = metrics_write(mm->root, mm->dir, text);
        if (r != mm->last_error) {
                if (r == -ENOENT || r == -ENOTDIR)
                        log_info("No directory %s: no metrics are written (install prometheus-node-exporter, or "
                                 "give rtpartd --metrics-dir=DIR)",
                                 mm->display);
                else if (r < 0)
                        (void) log_warning_errno(r, "Cannot write the metrics %s/%s: %m", mm->display, METRICS_FILE);
                else
                        log_info("Writing metrics to %s/%s", mm->display, METRICS_FILE);
        }
        mm->last_error = r;
        free(mm->last);
        mm->last = TAKE_PTR(text);
}

static int on_post(sd_event_source *s, void *userdata) {
        manager_metrics_flush(userdata);
        return 0;
}

static void on_applied(Manager *m, const char *profile, bool external, void *userdata) {
        ManagerMetrics *mm = userdata;
        mm->apply_usec = external ? journal_applied_usec(m->journal) : 0;
        if (mm->apply_usec == 0)
                mm->apply_usec = now_realtime_usec();
        mm->apply_ok = true;
}

static void on_apply_failed(Manager *m, const char *profile, void *userdata) {
        ManagerMetrics *mm = userdata;
        mm->apply_usec = now_realtime_usec();
        mm->apply_ok = false;
}

static void on_audited(Manager *m, const json_t *doc, void *userdata) {
        ManagerMetrics *mm = userdata;
        MetricsAudit a = {};
        int r = metrics_audit_from_json(doc, now_realtime_usec(), &a);
        if (r < 0) {
                log_debug_errno(r, "Cannot take the audit's counts for the metrics: %m");
                return;
        }
        metrics_audit_done(&mm->audit);
        mm->audit = a;
}

static void on_detach(Manager *m, void *userdata) {
        ManagerMetrics *mm = userdata;
        mm->post = sd_event_source_disable_unref(mm->post);
        mm->manager = NULL;
}

int manager_metrics_attach(Manager *m, Root *root, const char *dir, ManagerMetrics **ret) {
        _cleanup_(manager_metrics_freep) ManagerMetrics *mm = calloc(1, sizeof(*mm));
        if (!mm)
                return -ENOMEM;
        mm->last_error = 1;
        mm->root = root;
        mm->dir = strdup(dir);
        mm->display = root_display_path(root, dir);
        if (!mm->dir || !mm->display)
                return -ENOMEM;
        int r = sd_event_add_post(m->event, &mm->post, on_post, mm);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(mm->post, "manager-metrics");
        r = manager_add_listener(m,
                                 &(const ManagerListener) {
                                         .applied = on_applied,
                                         .apply_failed = on_apply_failed,
                                         .audited = on_audited,
                                         .detach = on_detach,
                                         .userdata = mm,
                                 });
        if (r < 0)
                return r;
        mm->manager = m;
        *ret = TAKE_PTR(mm);
        return 0;
}

ManagerMetrics *manager_metrics_free(ManagerMetrics *mm) {
        if (!mm)
                return NULL;
        if (mm->manager)
                manager_remove_listener(mm->manager, mm);
        sd_event_source_disable_unref(mm->post);
        metrics_audit_done(&mm->audit);
        free(mm->profile);
        free(mm->last);
        free(mm->dir);
        free(mm->display);
        free(mm);
        return NULL;
}
