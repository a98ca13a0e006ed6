/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>

#include "backend.h"
#include "ctl.h"
#include "document.h"
#include "engine.h"
#include "strv.h"

/* apply, revert: the commands that change the host, under the journal's lock. */

/* After an apply that wrote: the knobs drivers set themselves when another is written
 * (BACKEND_KERNEL_SETS: virtio_net places its queues' IRQs when its channels are set), read again
 * and written again where they were moved; the apply had read them as placed before its writes. */
static int place_again(Root *root, JournalStore *journal, const char *name, EngineResult *er) {
        _cleanup_(prepared_done) Prepared p = {};
        _cleanup_strv_free_ char **ids = NULL;
        PrepareError pe = {};
        EngineResult again = {};
        int r = prepare_profile(root, name, PREPARE_PLAN, &p, &pe);
        if (r < 0) {
                prepare_error_done(&pe);
                return r;
        }
        for (size_t i = 0; i < p.plan->n_knobs; i++) {
                const Knob *k = &p.plan->knobs[i];
                const Backend *b = backend_for(k->domain);
                if (k->changed && b && (b->flags & BACKEND_KERNEL_SETS) && strv_extend(&ids, k->id) < 0)
                        return -ENOMEM;
        }
        if (!ids)
                return 0;
        r = engine_apply_knobs(root, journal, p.host, p.plan, ids, strv_length(ids), &again);
        if (r >= 0) {
                er->written += again.written;
                er->unchanged -= MIN(er->unchanged, again.written);
        }
        engine_result_done(&again);
        return r;
}

static int local_apply(Root *root, JournalStore *journal, const char *name, json_t **ret_doc) {
        _cleanup_(prepared_done) Prepared p = {};
        PrepareError pe = {};
        EngineResult er = {};
        int r;

        /* The lock is taken once the profile is known to be valid (a wrong one is said without
         * waiting) and before the plan reads the host (what it reads is what this run changes). */
        r = prepare_profile(root, name, /* flags= */ 0, &p, &pe);
        if (r < 0)
                return ctl_prepare_failure(root, &pe, r);
        if ((r = ctl_take_lock(journal)) < 0)
                return r;
        r = prepare_plan(root, &p, &pe);
        if (r < 0)
                return ctl_prepare_failure(root, &pe, r);
        prepare_error_done(&pe);

        r = engine_apply(root, journal, p.host, p.resolved, p.plan, &er);
        if (r >= 0 && er.written > 0)
                (void) place_again(root, journal, name, &er);
        *ret_doc = r < 0 ? document_apply_failure(&er, r) : document_apply(p.plan, &er);
        engine_result_done(&er);
        if (!*ret_doc)
                return -ENOMEM;
        return r < 0 ? r : 0;
}

int verb_apply(int argc, char **argv) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_(json_decrefp) json_t *doc = NULL;
        int r = ctl_tuned_check(argv[1]);
        if (r != 0)
                return r;
        r = ctl_document("Apply", argv[1], true, local_apply, &root, &doc);
        if (r < 0 && doc)
                return render_apply_failure(doc);
        if (r != 0)
                return r;
        return render_apply(doc);
}

static int local_revert(Root *root, JournalStore *journal, const char *arg, json_t **ret_doc) {
        _cleanup_(host_freep) Host *host = NULL;
        EngineResult er = {};
        int r;

        if ((r = ctl_discover(root, &host)) < 0 || (r = ctl_take_lock(journal)) < 0)
                return r;
        r = engine_revert(root, journal, host, &er);
        *ret_doc = document_revert(&er, r);
        engine_result_done(&er);
        if (!*ret_doc)
                return -ENOMEM;
        return r < 0 ? r : 0;
}

int verb_revert(int argc, char **argv) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_(json_decrefp) json_t *doc = NULL;
        int r = ctl_document("Revert", NULL, true, local_revert, &root, &doc);
        if (!doc)
                return r;
        return render_revert(doc);
}
