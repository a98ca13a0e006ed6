/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "backend.h"

static int module_plan(PlanCtx *ctx) {
        return 0;
}

const Backend backend_module = {
        .domain = DOMAIN_MODULE,
        .name = "module",
        .plan = module_plan,
        .read = knob_read_file,
};
