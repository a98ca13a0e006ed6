/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Verify: every applied knob read again and compared, semantically; drift, reboots pending, knobs
 * whose object vanished. Read-only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine-internal.h"
#include "strv.h"

void verify_result_done(VerifyResult *v) {
        for (size_t i = 0; i < v->n_drift; i++) {
                free(v->drift[i].knob);
                free(v->drift[i].expected);
                free(v->drift[i].actual);
        }
        free(v->drift);
        free(v->profile);
        free(v->applied_at);
        strv_free(v->reboot_pending);
        strv_free(v->unmovable);
        strv_free(v->vanished);
        *v = (VerifyResult) {};
}

static int index_cmp(const void *a, const void *b) {
        uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;
        return x < y ? -1 : x > y;
}

static int unmovable_cmp(const void *a, const void *b) {
        return strcmp((*(const JournalUnmovable * const *) a)->id, (*(const JournalUnmovable * const *) b)->id);
}

/* The applied knobs of ids, as positions in j->applied, ascending (*ret_n of them). */
static int pick_ids(const Journal *j, char * const *ids, size_t n_ids, uint32_t **ret, size_t *ret_n) {
        uint32_t *pick = malloc(MAX(n_ids, (size_t) 1) * sizeof(uint32_t));
        size_t n = 0;
        if (!pick)
                return -ENOMEM;
        for (size_t i = 0; i < n_ids; i++) {
                const JournalKnob *e = journal_find_applied(j, ids[i]);
                if (e)
                        pick[n++] = (uint32_t) (e - j->applied);
        }
        qsort(pick, n, sizeof(uint32_t), index_cmp);
        *ret = pick;
        *ret_n = n;
        return 0;
}

/* "KNOB: reason" of every unmovable knob, by id. */
static int list_unmovable(const Journal *j, char ***ret) {
        _cleanup_free_ const JournalUnmovable **um = malloc(MAX(j->n_unmovable, (size_t) 1) * sizeof(*um));
        if (!um)
                return -ENOMEM;
        for (size_t i = 0; i < j->n_unmovable; i++)
                um[i] = &j->unmovable[i];
        qsort(um, j->n_unmovable, sizeof(*um), unmovable_cmp);
        for (size_t i = 0; i < j->n_unmovable; i++) {
                char *s;
                if (asprintf(&s, "%s: %s", um[i]->id, strempty(um[i]->reason)) >= 0)
                        (void) strv_push(ret, s);
        }
        return 0;
}

/* One applied knob read and compared: drift, vanished, or (for a boot knob) a reboot pending. */
static int verify_knob(Root *root, const JournalKnob *e, const char *running_cmdline, VerifyResult *v) {
        Knob kn = journal_knob(e);
        const Backend *b = backend_for(kn.domain);
        const char *want = e->value;
        _cleanup_free_ char *cur = NULL;
        v->checked++;
        if (!b || !b->read)
                return 0;
        int k = b->read(root, &kn, &cur);
        if ((k == -ENOENT || (k >= 0 && !cur)) && (b->flags & BACKEND_OBJECTS_VANISH)) {
                /* The IRQ went with its device, the thread exited: nothing to hold, nothing
                 * drifted. */
                (void) strv_extend(&v->vanished, kn.id);
                return 0;
        }
        if (k < 0 && k != -ENOENT) {
                free(cur);
                cur = NULL;
        }
        if (!value_equal(kn.kind, cur, want)) {
                Drift *d = realloc(v->drift, (v->n_drift + 1) * sizeof(Drift));
                if (!d)
                        return -ENOMEM;
                v->drift = d;
                v->drift[v->n_drift++] = (Drift) {
                        .knob = strdup(kn.id),
                        .domain = kn.domain,
                        .expected = want ? strdup(want) : NULL,
                        .actual = cur ? strdup(cur) : NULL,
                };
                return 0;
        }
        if (!(b->flags & BACKEND_REBOOT_ONLY) && !kn.reboot)
                return 0;
        /* Configured as wanted; is it what the running system uses? */
        _cleanup_free_ char *running = NULL;
        bool live;
        if (b->running) {
                (void) b->running(&kn, running_cmdline, &running);
                live = value_equal(kn.kind, running, want);
        } else
                live = kn.path && root_read_line(root, kn.path, &running) >= 0 && value_equal(kn.kind, running, want);
        if (!live)
                (void) strv_extend(&v->reboot_pending, kn.id);
        return 0;
}

/* engine_verify() of a journal (all), or engine_verify_knobs(): the knobs of ids only, found by id,
 * checked in journal order. */
static int verify_core(Root *root, const Journal *j, const char *running_cmdline, bool all, char * const *ids,
                       size_t n_ids, VerifyResult *ret) {
        _cleanup_free_ uint32_t *pick = NULL;
        _cleanup_(verify_result_done) VerifyResult v = {};
        size_t n = j->n_applied;
        int k = 0;

        if (!all && (k = pick_ids(j, ids, n_ids, &pick, &n)) < 0)
                return k;
        v.profile = j->profile ? strdup(j->profile) : NULL;
        v.applied_at = j->applied_at ? strdup(j->applied_at) : NULL;
        v.transaction_open = j->transaction_open;
        if ((k = list_unmovable(j, &v.unmovable)) < 0)
                return k;

        /* Every knob's file read at once, in batches: thousands of them on a big host. */
        _cleanup_free_ char **paths = malloc(MAX(n, (size_t) 1) * sizeof(char *));
        if (!paths)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                paths[i] = (char *) j->applied[pick ? pick[i] : i].path;
        (void) root_cache_fill(root, paths, n); /* without it, each file is read on its own */
        for (size_t i = 0; i < n; i++) {
                if (pick && i > 0 && pick[i] == pick[i - 1])
                        continue; /* an id given twice */
                k = verify_knob(root, &j->applied[pick ? pick[i] : i], running_cmdline, &v);
                if (k < 0)
                        break;
        }
        root_cache_drop(root);
        if (k < 0)
                return k;
        *ret = v;
        v = (VerifyResult) {};
        return 0;
}

int engine_verify(Root *root, const Journal *journal, const char *running_cmdline, VerifyResult *ret) {
        return verify_core(root, journal, running_cmdline, /* all= */ true, NULL, 0, ret);
}

int engine_verify_knobs(Root *root, const Journal *journal, const char *running_cmdline, char * const *ids, size_t n,
                        VerifyResult *ret) {
        return verify_core(root, journal, running_cmdline, /* all= */ false, ids, ids ? n : 0, ret);
}
