/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "backend.h"

static int cpuset_plan(PlanCtx *ctx) {
        return 0;
}

const Backend backend_cpuset = {
        .domain = DOMAIN_CPUSET,
        .name = "cpuset",
        .plan = cpuset_plan,
        .read = knob_read_file,
};
