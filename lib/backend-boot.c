/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"

/* Boot arguments: the desired value of each kernel parameter, compared with what the running kernel
 * was booted with (/proc/cmdline). They all take a reboot. Writing them to the bootloader is the
 * apply verb's job; the plan says which bootloader that will be. */

static int boot_plan(PlanCtx *ctx) {
        json_t *args = json_object_get(json_object_get(ctx->resolved->doc, "boot"), "args");
        const char *name;
        json_t *v;
        int k;

        if (!json_object_size(args))
                return 0;
        if (ctx->host->bootloader == BOOTLOADER_NONE) {
                k = plan_note(ctx, "boot: no bootloader configuration found (GRUB, BLS entries or /etc/kernel/cmdline); "
                                   "boot arguments are listed but cannot be written on this host");
                if (k < 0)
                        return k;
        }

        json_object_foreach(args, name, v) {
                _cleanup_free_ char *id = NULL, *current = NULL;
                const char *desired;

                if (json_is_string(v))
                        desired = json_string_value(v);
                else if (json_is_true(v))
                        desired = "";
                else
                        desired = NULL; /* false/null: the argument must not be there */

                if (asprintf(&id, "boot/%s", name) < 0)
                        return -ENOMEM;
                k = cmdline_get(ctx->host->cmdline, name, &current);
                if (k < 0)
                        return k;
                k = plan_add(ctx, id, VALUE_BOOTARG, NULL, current, desired, /* reboot= */ true, NULL);
                if (k < 0)
                        return k;
        }
        return 0;
}

static int boot_read(Root *root, const Knob *k, char **ret) {
        _cleanup_free_ char *cmdline = NULL;
        int r = root_read_line(root, "proc/cmdline", &cmdline);
        if (r < 0)
                return r;
        return cmdline_get(cmdline, k->id + strlen("boot/"), ret);
}

const Backend backend_boot = {
        .domain = DOMAIN_BOOT,
        .name = "boot",
        .plan = boot_plan,
        .read = boot_read,
};
