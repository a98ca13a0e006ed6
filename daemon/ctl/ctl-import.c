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
#include "tuned-import.h"

/* import-tuned: a tuned profile (lib/interop/tuned-*.c) as an rtpart profile, evaluated on the host
 * of --root. */

typedef struct ImportHost {
        Root *root;
        Host *host;
} ImportHost;

static void import_split(void *userdata, unsigned cores_per_node, CpuSet *ret_isolated) {
        ImportHost *ih = userdata;
        CpuSet hk;
        host_default_split(ih->host, cores_per_node, &hk, ret_isolated);
}

/* A directory the user gave is read as it is; the host's files under --root. */
static int import_read(void *userdata, const char *path, bool host_path, char **ret) {
        ImportHost *ih = userdata;
        if (host_path) {
                while (*path == '/')
                        path++;
                return root_read_file(ih->root, path, ret, NULL);
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

int verb_import_tuned(int argc, char **argv) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_(host_freep) Host *host = NULL;
        _cleanup_(tuned_import_done) TunedImport t = {};
        _cleanup_(error_done) Error e = {};
        int r;

        if ((r = ctl_open_root(&root)) != 0)
                return r;
        if ((r = ctl_discover(root, &host)) != 0)
                return r;

        ImportHost ih = { .root = root, .host = host };
        TunedEnv env = {
                .online = host->online,
                .present = host->present,
                .split = import_split,
                .read_file = import_read,
                .userdata = &ih,
        };
        /* A tuned profile name has no '/'. */
        r = tuned_import(&env, argv[1], /* dir= */ strchr(argv[1], '/') != NULL, &t, &e);
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
