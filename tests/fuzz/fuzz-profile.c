/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target for the profile parser: load (syntax, schema, includes), resolve against a
 * 16-CPU 2-node host (variables, CPU expressions, classes) and build the plan. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "host.h"
#include "profile.h"
#include "root.h"

static char host_dir[] = "/tmp/rtpart-fuzz-host-XXXXXX";
static char profile_path[PATH_MAX];
static Root *root;
static Host *host;

static void put(const char *rel, const char *text) {
        char path[PATH_MAX], dir[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", host_dir, rel);
        for (char *p = path + strlen(host_dir) + 1; (p = strchr(p, '/')); p++) {
                snprintf(dir, sizeof(dir), "%.*s", (int) (p - path), path);
                (void) mkdir(dir, 0755);
        }
        FILE *f = fopen(path, "we");
        if (!f)
                abort();
        fputs(text, f);
        fclose(f);
}

static void cleanup(void) {
        char cmd[PATH_MAX + 16];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", host_dir);
        (void) system(cmd);
}

static void setup(void) {
        if (!mkdtemp(host_dir))
                abort();
        atexit(cleanup);
        put("sys/devices/system/cpu/online", "0-15\n");
        for (int c = 0; c < 16; c++) {
                char rel[128], v[32];
                snprintf(rel, sizeof(rel), "sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", c);
                snprintf(v, sizeof(v), "%d,%d\n", c % 8, c % 8 + 8);
                put(rel, v);
                snprintf(rel, sizeof(rel), "sys/devices/system/cpu/cpu%d/cache/index3/level", c);
                put(rel, "3\n");
                snprintf(rel, sizeof(rel), "sys/devices/system/cpu/cpu%d/cache/index3/id", c);
                put(rel, c % 8 < 4 ? "0\n" : "1\n");
        }
        put("sys/devices/system/node/node0/cpulist", "0-3,8-11\n");
        put("sys/devices/system/node/node1/cpulist", "4-7,12-15\n");
        put("proc/cmdline", "root=/dev/sda ro quiet\n");
        put("proc/interrupts",
            "           CPU0       CPU1\n  24:          1          0  IO-APIC   5-edge      eth0-TxRx-0\nNMI: 0 0 Non-maskable\n");
        put("proc/irq/24/smp_affinity_list", "0-15\n");
        put("proc/sys/vm/swappiness", "60\n");
        snprintf(profile_path, sizeof(profile_path), "%s/fuzz.json", host_dir);
        if (root_new(host_dir, &root) < 0 || host_discover(root, 0, &host) < 0)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (!root)
                setup();
        if (size > 65536)
                return 0;
        int fd = open(profile_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, data, size) != (ssize_t) size)
                abort();
        close(fd);

        Profile *p = NULL;
        Resolved *r = NULL;
        Plan *plan = NULL;
        Error e = {};
        if (profile_load(root, backend_profile_schema(), profile_path, &p, &e) >= 0 &&
            profile_resolve(p, host, &r, &e) >= 0)
                (void) plan_build(r, root, &plan, &e);
        char *msg = error_format(&e, "invalid profile");
        free(msg);
        error_done(&e);
        plan_free(plan);
        resolved_free(r);
        profile_free(p);
        return 0;
}
