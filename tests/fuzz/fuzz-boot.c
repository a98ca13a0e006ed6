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
 *   except where the write gives a GRUB argument back to the base (grub_gives_back()): then it
 *   reads as the base has it;
 *   - rtpart's GRUB drop-in is inert: outside comments and single-quoted strings it has no
 *     command substitution, no backslash but before a quote, and no expansion but of its own
 *     variables and GRUB's two;
 *   - sourced by /bin/sh (with the base's values in the environment and no PATH), it gives
 *     GRUB_CMDLINE_LINUX and _DEFAULT byte for byte as grub_values() computes them. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend.h"
#include "boot-internal.h"
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

/* Outside comments and single quotes: only rtpart's own expansions, nothing that runs. */
static bool dropin_inert(const char *t) {
        static const char * const ok[] = { "rtpart_v", "{rtpart_v", "{rtpart_t", "{GRUB_CMDLINE_LINUX-}",
                                           "{GRUB_CMDLINE_LINUX_DEFAULT-}" };
        for (const char *p = t; *p; p++) {
                if (*p == '#' && (p == t || p[-1] == '\n')) {
                        p = strchrnul(p, '\n');
                        if (!*p)
                                break;
                } else if (*p == '\'') {
                        p = strchr(p + 1, '\'');
                        if (!p)
                                return false;
                } else if (*p == '\\' && p[1] == '\'')
                        p++; /* '\'': a quote inside single quotes, as shell_quote() writes it */
                else if (*p == '`' || *p == '\\')
                        return false;
                else if (*p == '$') {
                        bool good = false;
                        for (size_t i = 0; i < ELEMENTSOF(ok); i++)
                                good = good || startswith(p + 1, ok[i]);
                        if (!good)
                                return false;
                }
        }
        return true;
}

/* What /bin/sh makes of the drop-in, the base's values in its environment: "LINUX\001DEFAULT". */
static char *sourced(const char *l, const char *d) {
        char path[PATH_MAX];
        int fds[2];
        snprintf(path, sizeof(path), "%s/%s", dir, files[1]);
        if (pipe2(fds, O_CLOEXEC) < 0)
                abort();
        pid_t pid = fork();
        if (pid < 0)
                abort();
        if (pid == 0) {
                char *envl = NULL, *envd = NULL;
                if (asprintf(&envl, "GRUB_CMDLINE_LINUX=%s", l) < 0 ||
                    asprintf(&envd, "GRUB_CMDLINE_LINUX_DEFAULT=%s", d) < 0)
                        _exit(126);
                char *envp[] = { envl, envd, (char *) "PATH=/nonexistent", NULL };
                /* libFuzzer's timer (SIGALRM) would outlive the exec and kill the shell. */
                (void) setitimer(ITIMER_REAL, &(struct itimerval) {}, NULL);
                if (dup2(fds[1], STDOUT_FILENO) < 0 || chdir(dir) < 0)
                        _exit(126);
                execle("/bin/sh", "sh", "-c",
                       "set -e; . \"$0\"; printf '%s\\001%s' \"$GRUB_CMDLINE_LINUX\" \"$GRUB_CMDLINE_LINUX_DEFAULT\"",
                       path, (char *) NULL, envp);
                _exit(127);
        }
        close(fds[1]);
        StrBuf b = {};
        char buf[4096];
        ssize_t n;
        while ((n = read(fds[0], buf, sizeof(buf) - 1)) != 0) {
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        abort();
                buf[n] = 0;
                strbuf_append(&b, buf);
        }
        close(fds[0]);
        int st, w;
        while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
                ;
        if (w < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
                abort();
        return strbuf_steal(&b);
}

/* The drop-in as written is inert and does what grub_values() says. */
static void check_dropin(void) {
        _cleanup_(grub_done) Grub g = {};
        _cleanup_free_ char *why = NULL, *l = NULL, *d = NULL, *text = NULL, *want = NULL, *got = NULL;
        if (root_read_file(root, files[1], &text, NULL) < 0)
                return; /* none */
        if (!dropin_inert(text) || grub_load(root, &g, &why) < 0 || grub_values(&g, &l, &d) < 0)
                abort();
        if (strchr(g.linux_, 0x01) || strchr(g.default_, 0x01))
                return; /* the separator of sourced() */
        if (asprintf(&want, "%s\001%s", l, d) < 0)
                abort();
        got = sourced(g.linux_, g.default_);
        if (!got || !streq(got, want))
                abort();
}

/* What a read gives after writing value: value, or the base's own when the write gives the
 * argument back to it. */
static char *expected_after(int mode, const Knob *k, const char *value) {
        _cleanup_(grub_done) Grub g = {};
        _cleanup_free_ char *why = NULL;
        char *v = NULL;
        if (mode != 0 || grub_load(root, &g, &why) < 0 || !grub_gives_back(&g, k->id + strlen("boot/"), value))
                return value ? strdup(value) : NULL;
        g.dropin = false; /* the base alone */
        if (grub_get(&g, k->id + strlen("boot/"), &v) < 0)
                abort();
        return v;
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
        _cleanup_free_ char *want = expected_after(mode, &k, value);
        int r = write_arg(&k, value);
        if (r != KNOB_DONE)
                return 0;
        if (read_arg(&k, &after) < 0)
                abort();
        if (!streq_ptr(after, want))
                abort();
        if (mode == 0)
                check_dropin();
        /* Revert: the value read first goes back (where the backend takes it). */
        _cleanup_free_ char *want_back = expected_after(mode, &k, before);
        if (write_arg(&k, before) == KNOB_DONE && (read_arg(&k, &reverted) < 0 || !streq_ptr(reverted, want_back)))
                abort();
        if (mode == 0)
                check_dropin();
        return 0;
}
