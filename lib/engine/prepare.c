/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdlib.h>
#include <string.h>

#include "prepare.h"

void prepared_done(Prepared *p) {
        plan_free(p->plan);
        resolved_free(p->resolved);
        profile_free(p->profile);
        host_free(p->host);
        *p = (Prepared) {};
}

void prepare_error_done(PrepareError *e) {
        free(e->name);
        error_done(&e->error);
        *e = (PrepareError) { .step = _PREPARE_STEP_INVALID };
}

static int fail(PrepareError *e, PrepareStep step, int r) {
        e->step = step;
        e->error.code = r;
        return r;
}

int prepare_plan(Root *root, Prepared *p, PrepareError *ret_error) {
        int r;

        ret_error->step = _PREPARE_STEP_INVALID; /* keeps the name prepare_profile_built() gave it */
        r = plan_build(p->resolved, root, &p->plan, &ret_error->error);
        if (r < 0) {
                /* A backend that finds the profile wrong for this host names the pointer. */
                bool profile = r == -EINVAL && (ret_error->error.message || ret_error->error.file);
                return fail(ret_error, profile ? PREPARE_STEP_PROFILE : PREPARE_STEP_PLAN, r);
        }
        return 0;
}

int prepare_profile_built(Root *root, Profile *profile, PrepareFlags flags, Prepared *ret, PrepareError *ret_error) {
        Prepared p = { .profile = profile };
        int r;

        *ret_error = (PrepareError) { .step = _PREPARE_STEP_INVALID, .name = strdup(profile->name) };
        if (!ret_error->name) {
                prepared_done(&p);
                return -ENOMEM;
        }
        r = host_discover(root, 0, &p.host);
        if (r < 0) {
                prepared_done(&p);
                return fail(ret_error, PREPARE_STEP_HOST, r);
        }
        r = profile_resolve(p.profile, p.host, &p.resolved, &ret_error->error);
        if (r < 0) {
                prepared_done(&p);
                return fail(ret_error, PREPARE_STEP_PROFILE, r);
        }
        if (flags & PREPARE_PLAN) {
                r = prepare_plan(root, &p, ret_error);
                if (r < 0) {
                        prepared_done(&p);
                        return r;
                }
        }
        prepare_error_done(ret_error); /* nothing failed: callers that clear only on failure leak nothing */
        *ret = p;
        return 0;
}

int prepare_profile(Root *root, const char *name_or_path, PrepareFlags flags, Prepared *ret, PrepareError *ret_error) {
        Profile *profile = NULL;
        int r;

        *ret_error = (PrepareError) { .step = _PREPARE_STEP_INVALID };
        r = profile_load(root, backend_profile_schema(), name_or_path, &profile, &ret_error->error);
        if (r < 0)
                return fail(ret_error, PREPARE_STEP_PROFILE, r);
        return prepare_profile_built(root, profile, flags, ret, ret_error);
}
