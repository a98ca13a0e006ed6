/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target for the mount tables host discovery reads (lib/kernel/host.c host_parse_mounts): the
 * input as proc/self/mountinfo and as proc/mounts. What must hold: every mount point found is
 * root-relative (no leading '/'), NUL-free by construction, and the cgroup mode agrees with the
 * mounts found (v2 and hybrid have a cgroup2 mount, none has neither kind). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host-internal.h"

static void check(const uint8_t *data, size_t size, bool mountinfo) {
        char *text = strndup((const char *) data, size);
        Host *h = calloc(1, sizeof(Host));
        if (!text || !h) {
                free(text);
                free(h);
                return;
        }
        if (host_parse_mounts(h, text, mountinfo) >= 0) {
                const char *mounts[] = { h->cgroup2_mount, h->cpuset_v1_mount, h->resctrl.mount };
                for (size_t i = 0; i < 3; i++)
                        if (mounts[i] && mounts[i][0] == '/')
                                abort();
                if ((h->cgroup_mode == CGROUP_V2 || h->cgroup_mode == CGROUP_HYBRID) && !h->cgroup2_mount)
                        abort();
                if (h->cgroup_mode == CGROUP_NONE && (h->cgroup2_mount || h->cpuset_v1_mount))
                        abort();
                if (h->resctrl.mount && !h->resctrl.mounted)
                        abort();
        }
        free(text);
        host_free(h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        check(data, size, true);
        check(data, size, false);
        return 0;
}
