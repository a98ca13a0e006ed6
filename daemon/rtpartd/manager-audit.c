/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit.h"
#include "log.h"
#include "manager.h"

/* Audit calls: what disturbed the isolated CPUs over a window (lib/observe/audit.h), without holding the
 * event loop for it: one snapshot now, a timer, the second snapshot and the document when it
 * fires. At most MANAGER_AUDITS_MAX run at once; a caller that goes away cancels its own; a
 * stopping daemon ends every one (done with an error, so that its front end lets go).
 *
 * rtpartd runs no tracer for it (the osnoise figures are rtpartctl audit's): a tracer is the
 * host's for the window, and a call from far away should not take it. */

struct ManagerAudit {
        Manager *manager;
        AuditTarget target;
        AuditSnapshot first;
        sd_event_source *timer;
        ManagerAuditDone done;
        void *userdata;
};

static void audit_free(ManagerAudit *a) {
        if (!a)
                return;
        sd_event_source_disable_unref(a->timer);
        audit_snapshot_done(&a->first);
        audit_target_done(&a->target);
        free(a);
}

static void audit_remove(Manager *m, ManagerAudit *a) {
        for (size_t i = 0; i < m->n_audits; i++)
                if (m->audits[i] == a) {
                        m->audits[i] = m->audits[--m->n_audits];
                        break;
                }
        audit_free(a);
}

static int on_audit_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        ManagerAudit *a = userdata;
        Manager *m = a->manager;
        _cleanup_(audit_snapshot_done) AuditSnapshot second = {};
        ManagerError e = {};
        json_t *doc = NULL;

        int r = audit_snapshot(m->root, AUDIT_SNAPSHOT_PLACES, &second);
        if (r >= 0)
                r = audit_document(&a->target.s, &a->first, &second, &doc);
        if (r < 0)
                manager_error_set(&e, MANAGER_ERROR_FAILED, r, "cannot read the host's counters: %s", strerror(-r));
        if (doc)
                manager_emit_audited(m, doc);
        /* The caller is answered last: it may cancel others, never this one (taken off first). */
        ManagerAuditDone done = a->done;
        void *ud = a->userdata;
        audit_remove(m, a);
        done(m, doc, r < 0 ? &e : NULL, ud);
        manager_error_done(&e);
        return 0;
}

int manager_audit(Manager *m, unsigned seconds, const char *cpus, ManagerAuditDone done, void *userdata,
                  ManagerAudit **ret, ManagerError *e) {
        _cleanup_free_ char *why = NULL;
        ManagerAudit *a = NULL;
        int r;

        if (seconds < 1 || seconds > MANAGER_AUDIT_SECONDS_MAX)
                return manager_error_set_parameter(e, MANAGER_ERROR_INVALID_ARGUMENT, "seconds",
                                                   "seconds is 1 to %u, not %u", MANAGER_AUDIT_SECONDS_MAX, seconds);
        if (m->n_audits >= MANAGER_AUDITS_MAX)
                return manager_error_set(e, MANAGER_ERROR_BUSY, -EBUSY,
                                         "%u audits are running; ask again when one ends", MANAGER_AUDITS_MAX);
        a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        *a = (ManagerAudit) { .manager = m, .done = done, .userdata = userdata };
        r = audit_target(m->root, m->journal, cpus, &a->target, &why);
        if (r == -EINVAL || r == -ENOENT) {
                manager_error_set(e, MANAGER_ERROR_INVALID_ARGUMENT, r, "%s", strempty(why));
                audit_free(a);
                return r;
        }
        if (r >= 0) {
                a->target.s.self = (int) getpid();
                a->target.s.osnoise_reason = "rtpartd runs no tracer for Audit; rtpartctl audit runs osnoise";
                r = audit_snapshot(m->root, 0, &a->first);
        }
        if (r >= 0)
                r = sd_event_add_time_relative(m->event, &a->timer, CLOCK_MONOTONIC, (uint64_t) seconds * 1000000ULL,
                                               10000, on_audit_timer, a);
        ManagerAudit **n = r >= 0 ? realloc(m->audits, (m->n_audits + 1) * sizeof(ManagerAudit *)) : NULL;
        if (!n) {
                audit_free(a);
                return manager_error_set(e, MANAGER_ERROR_FAILED, r < 0 ? r : -ENOMEM, "cannot start an audit: %s",
                                         strerror(r < 0 ? -r : ENOMEM));
        }
        (void) sd_event_source_set_description(a->timer, "manager-audit");
        m->audits = n;
        m->audits[m->n_audits++] = a;
        log_debug("Audit of %s for %u s started", a->target.source, seconds);
        if (ret)
                *ret = a;
        return 0;
}

void manager_audit_cancel(Manager *m, ManagerAudit *a) {
        if (a)
                audit_remove(m, a);
}

void manager_audits_free(Manager *m) {
        while (m->n_audits > 0) {
                ManagerAudit *a = m->audits[m->n_audits - 1];
                ManagerAuditDone done = a->done;
                void *ud = a->userdata;
                ManagerError e = {};
                audit_remove(m, a);
                manager_error_set(&e, MANAGER_ERROR_FAILED, -ESHUTDOWN, "rtpartd is stopping");
                done(m, NULL, &e, ud);
                manager_error_done(&e);
        }
        free(m->audits);
        m->audits = NULL;
}
