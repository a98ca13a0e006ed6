/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"
#include "host.h"
#include "strv.h"
#include "tuned-active.h"

/* import-tuned: a tuned profile (lib/interop/tuned-*.c) as an rtpart profile, evaluated on the host
 * of --root. */

/* A directory the user gave is read as it is; the host's files under --root. */
static int import_read(void *userdata, const char *path, bool host_path, char **ret) {
        TunedHost *th = userdata;
        if (host_path) {
                while (*path == '/')
                        path++;
                return root_read_file(th->root, path, ret, NULL);
        }
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return S_ISDIR(st.st_mode) ? -EISDIR : -EBADFD;
        if (st.st_size > 1024 * 1024)
                return -EFBIG;
        char *buf = malloc((size_t) st.st_size + 1);
        if (!buf)
                return -ENOMEM;
        size_t n = 0;
        for (;;) {
                ssize_t k = read(fd, buf + n, (size_t) st.st_size - n);
                if (k < 0) {
                        free(buf);
                        return -errno;
                }
                if (k == 0 || (n += (size_t) k) == (size_t) st.st_size)
                        break;
        }
        buf[n] = 0;
        *ret = buf;
        return 0;
}

static int write_output(const char *text) {
        if (!arg_output) {
                fputs(text, stdout);
                return fflush(stdout) == 0 ? 0 : log_error_errno(-EIO, "Failed to write the profile: %m");
        }
        _cleanup_free_ char *tmp = NULL;
        if (asprintf(&tmp, "%s.XXXXXX", arg_output) < 0)
                return log_oom();
        _cleanup_close_ int fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return log_error_errno(-errno, "Failed to create %s: %m", tmp);
        size_t len = strlen(text);
        bool ok = fchmod(fd, 0644) == 0 && write(fd, text, len) == (ssize_t) len && fsync(fd) == 0;
        int r = ok ? 0 : -errno;
        if (ok && rename(tmp, arg_output) < 0)
                r = -errno;
        if (r < 0) {
                (void) unlink(tmp);
                return log_error_errno(r ?: -EIO, "Failed to write %s: %m", arg_output);
        }
        return 0;
}

/* The profile to import: NAME|DIR, or with --active what tuned has active. */
static int import_source(Root *root, int argc, char **argv, char **ret) {
        if (arg_active && argc > 1) {
                log_error("import-tuned takes NAME|DIR or --active, not both");
                return EXIT_USAGE;
        }
        if (!arg_active && argc < 2) {
                log_error("import-tuned needs a tuned profile: NAME|DIR, or --active for the one tuned has active");
                return EXIT_USAGE;
        }
        if (!arg_active)
                return (*ret = strdup(argv[1])) ? 0 : log_oom();
        _cleanup_(tuned_active_done) TunedActive a = {};
        if (tuned_active_read(root, &a) < 0)
                return log_oom();
        if (!a.profiles) {
                log_error("tuned has no active profile: %s/etc/tuned/active_profile is missing or empty",
                          root_is_system(root) ? "" : root->path);
                return EXIT_USAGE;
        }
        if (!a.pid)
                log_info("tuned is not running; importing the profile it applies when it starts: %s", a.profiles);
        *ret = TAKE_PTR(a.profiles);
        return 0;
}

int verb_import_tuned(int argc, char **argv) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_(host_freep) Host *host = NULL;
        _cleanup_(tuned_import_done) TunedImport t = {};
        _cleanup_(error_done) Error e = {};
        _cleanup_free_ char *source = NULL;
        int r;

        if ((r = ctl_open_root(&root)) != 0)
                return r;
        if ((r = import_source(root, argc, argv, &source)) != 0)
                return r;
        if ((r = ctl_discover(root, &host)) != 0)
                return r;

        TunedHost th = { .root = root, .host = host };
        TunedEnv env = tuned_env_of_host(&th);
        env.read_file = import_read; /* and a directory the user gave */
        /* A tuned profile name has no '/'. */
        r = arg_active ? tuned_import_names(&env, source, &t, &e)
                       : tuned_import(&env, source, /* dir= */ strchr(source, '/') != NULL, &t, &e);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0) {
                _cleanup_free_ char *m = error_format(&e, "cannot import");
                if (!m)
                        return log_oom();
                log_error("%s", m);
                /* A profile tuned would not load either is bad usage; a file unreadable, a failure. */
                return r == -EINVAL ? EXIT_USAGE : r;
        }

        for (size_t i = 0; i < t.n_notes; i++) {
                TunedNote *n = &t.notes[i];
                fprintf(stderr, "%s:%u: [%s]%s%s: %s%s\n", n->file, n->line, n->section, n->option ? " " : "",
                        strempty(n->option), n->unsupported ? "unsupported: " : "note: ", n->message);
        }

        _cleanup_free_ char *text = json_dumps(t.profile, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        _cleanup_free_ char *nl = NULL;
        if (!text || asprintf(&nl, "%s\n", text) < 0)
                return log_oom();
        if ((r = write_output(nl)) < 0)
                return r;
        if (t.n_unsupported > 0) {
                fprintf(stderr,
                        "%zu tuned option%s not imported (listed above as unsupported); the profile %s has "
                        "the rest\n",
                        t.n_unsupported, t.n_unsupported == 1 ? " was" : "s were", arg_output ?: "written");
                return EXIT_PARTIAL;
        }
        return 0;
}

/* The knobs of the refusal's message: the first few, and how many more. */
static char *knob_list(char **knobs) {
        StrBuf b = {};
        size_t n = strv_length(knobs);
        strbuf_append(&b, "");
        for (size_t i = 0; i < MIN(n, (size_t) 6); i++)
                strbuf_appendf(&b, "%s%s", i ? ", " : "", knobs[i]);
        if (n > 6)
                strbuf_appendf(&b, " and %zu more", n - 6);
        return strbuf_steal(&b);
}

int ctl_tuned_check(const char *profile) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_(tuned_active_done) TunedActive a = {};
        _cleanup_(prepared_done) Prepared p = {};
        _cleanup_(tuned_overlap_done) TunedOverlap o = {};
        PrepareError pe = {};
        int r;

        if (arg_force)
                return 0;
        if ((r = ctl_open_root(&root)) != 0)
                return r;
        if (tuned_active_read(root, &a) < 0)
                return log_oom();
        if (a.pid == 0 || !a.profiles)
                return 0; /* nothing to ask of the plan */
        r = prepare_profile(root, profile, PREPARE_PLAN, &p, &pe);
        if (r < 0)
                return ctl_prepare_failure(root, &pe, r);
        prepare_error_done(&pe);
        if (tuned_overlap_find(root, p.host, p.plan, &o) < 0)
                return log_oom();
        if (!tuned_overlap_conflicts(&o))
                return 0;
        _cleanup_free_ char *list = knob_list(o.knobs);
        if (!list)
                return log_oom();
        if (o.unknown)
                log_error("tuned runs (pid %d) with the profile %s, which rtpart cannot read (%s), so it may set the "
                          "same knobs as %s: nothing was changed",
                          o.active.pid, o.active.profiles, o.unknown, profile);
        else
                log_error("tuned runs (pid %d) with the profile %s, which sets %zu knobs of %s too (%s; 'rtpartctl "
                          "plan %s' marks them): the two would undo each other's writes, so nothing was changed",
                          o.active.pid, o.active.profiles, strv_length(o.knobs), profile, list, profile);
        log_error("stop and disable tuned first (systemctl disable --now tuned), or apply its profile as rtpart's "
                  "(rtpartctl import-tuned --active -o FILE; rtpartctl apply FILE), or add --force to apply all the "
                  "same");
        return EXIT_USAGE;
}
