/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "backend.h"

static int resctrl_plan(PlanCtx *ctx) {
        return 0;
}

const Backend backend_resctrl = {
        .domain = DOMAIN_RESCTRL,
        .name = "resctrl",
        .plan = resctrl_plan,
        .read = knob_read_file,
};
