/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>

#include "ctl.h"
#include "document.h"
#include "engine.h"

/* apply, revert: the commands that change the host, under the journal's lock. */

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
