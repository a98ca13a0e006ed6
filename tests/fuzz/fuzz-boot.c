/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target for the bootloader files the boot backend reads and edits (lib/backends/boot.c):
 * GRUB's etc/default/grub and rtpart's drop-in, BLS entries' "options" lines, and
 * etc/kernel/cmdline. The input is NUL-separated: MODE, FILE1, FILE2, KEY and an optional VALUE
 * (none: the argument is removed). MODE's first byte picks the layout: 0 GRUB (FILE1 the defaults,
 * FILE2 the drop-in, if not empty), 1 BLS (two entries), 2 kernel-install (FILE1
 * etc/kernel/cmdline, FILE2 an entry). The files go into a tree, and the backend's own verbs run
 * on it. What must hold, as for a knob the engine applies and reverts:
 *   - after a write of a value the plan would accept, reading the argument gives that value;
 *   - writing back what was read before (revert), when the backend takes it, reads back as it
 *     was read;
 *   - GRUB's variables as env_text_get() finds them never span lines. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "root.h"
#include "strv.h"

static char dir[64];
static Root *root;

static const char * const files[] = {
        "etc/default/grub",
        "etc/default/grub.d/rtpart.cfg",
        "boot/loader/entries/a.conf",
        "boot/loader/entries/b-6.1.0-rt.conf",
        "etc/kernel/cmdline",
        "var/lib/rtpart/boot-backup/boot%loader%entries%a.conf",
        "var/lib/rtpart/boot-backup/boot%loader%entries%b-6.1.0-rt.conf",
        "var/lib/rtpart/boot-backup/etc%kernel%cmdline",
};

static void cleanup(void) {
        char cmd[PATH_MAX + 16];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        (void) system(cmd);
}

static void put(const char *rel, const char *text, size_t n) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", dir, rel);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, text, n) != (ssize_t) n)
                abort();
        close(fd);
}

static void setup(void) {
        const char * const dirs[] = { "etc",      "etc/default",    "etc/default/grub.d",         "etc/kernel",
                                      "boot",     "boot/loader",    "boot/loader/entries",        "var",
                                      "var/lib",  "var/lib/rtpart", "var/lib/rtpart/boot-backup", "proc",
                                      "proc/sys", "proc/sys/kernel" };
        /* tmpfs where there is one: every input rewrites the files. */
        snprintf(dir, sizeof(dir), "%s/rtpart-fuzz-boot-XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
        if (!mkdtemp(dir))
                abort();
        atexit(cleanup);
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                char path[PATH_MAX];
                snprintf(path, sizeof(path), "%s/%s", dir, dirs[i]);
                if (mkdir(path, 0755) < 0)
                        abort();
        }
        put("proc/sys/kernel/osrelease", "6.1.0-rt\n", 9);
        if (root_new(dir, &root) < 0)
                abort();
}

/* A value the plan lets through for a kernel argument (plan_check_param_value). */
static bool plan_accepts(const char *v) {
        return !v || (!bootarg_value_invalid(v) && !strpbrk(v, " \t\"'"));
}

static int read_arg(const Knob *k, char **ret) {
        *ret = NULL;
        return backend_boot.read(root, k, ret);
}

static int write_arg(const Knob *k, const char *value) {
        KnobKeep keep = { .root = root, .dir = "var/lib/rtpart/boot-backup" }; /* as the engine lends it */
        KnobResult r = {};
        int n = backend_boot.write(root, k, value, &keep, &r);
        knob_result_done(&r);
        return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (!root)
                setup();
        if (size > 16384)
                return 0;
        _cleanup_free_ char *buf = malloc(size + 1);
        if (!buf)
                return 0;
        memcpy(buf, data, size);
        buf[size] = 0;

        /* MODE \0 FILE1 \0 FILE2 \0 KEY [\0 VALUE] */
        const char *part[5] = {};
        size_t len[5] = {}, np = 0;
        for (const char *p = buf, *end = buf + size; np < 5 && p <= end; np++) {
                const char *z = memchr(p, 0, (size_t) (end - p) + 1);
                part[np] = p;
                len[np] = (size_t) (z - p);
                p = z + 1;
        }
        if (np < 4 || len[0] < 1 || len[3] == 0)
                return 0;
        int mode = (unsigned char) part[0][0] % 3;

        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                char path[PATH_MAX];
                snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
                (void) unlink(path);
        }
        if (mode == 0) {
                put(files[0], part[1], len[1]);
                if (len[2] > 0)
                        put(files[1], part[2], len[2]);
                for (size_t i = 0; i < 2; i++) {
                        _cleanup_free_ char *l = env_text_get(part[1 + i], "GRUB_CMDLINE_LINUX");
                        if (l && strchr(l, '\n'))
                                abort();
                }
        } else if (mode == 1) {
                put(files[2], part[1], len[1]);
                put(files[3], part[2], len[2]);
        } else {
                put(files[4], part[1], len[1]);
                put(files[2], part[2], len[2]);
        }

        _cleanup_free_ char *id = NULL, *before = NULL, *after = NULL, *reverted = NULL;
        if (asprintf(&id, "boot/%s", part[3]) < 0)
                abort();
        Knob k = { .id = id, .domain = DOMAIN_BOOT, .kind = VALUE_BOOTARG, .reboot = true };
        const char *value = np == 5 ? part[4] : NULL;
        if (!plan_accepts(value))
                return 0; /* the engine writes only what a plan accepted, and originals */

        if (read_arg(&k, &before) < 0)
                return 0;
        int r = write_arg(&k, value);
        if (r != KNOB_DONE)
                return 0;
        if (read_arg(&k, &after) < 0)
                abort();
        if (!streq_ptr(after, value))
                abort();
        /* Revert: the value read first goes back (where the backend takes it). */
        if (write_arg(&k, before) == KNOB_DONE && (read_arg(&k, &reverted) < 0 || !streq_ptr(reverted, before)))
                abort();
        return 0;
}
