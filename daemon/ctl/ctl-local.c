/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "engine.h"
#include "journal.h"

/* Working on the host directly: what the local halves of the verbs share. */

int ctl_open_root(Root **ret) {
        _cleanup_(root_freep) Root *root = NULL;
        int r = root_new(arg_root, &root);
        if (r < 0) {
                log_error("cannot open root directory %s: %s", arg_root, strerror(-r));
                return EXIT_USAGE;
        }
        if (arg_state_dir) {
                r = root_set_state_dir(root, arg_state_dir);
                if (r < 0) {
                        log_error("cannot use state directory %s: %s", arg_state_dir, strerror(-r));
                        return EXIT_USAGE;
                }
        }
        *ret = TAKE_PTR(root);
        return 0;
}

static int host_failure(Root *root, int r) {
        if (r == -ENODEV)
                return log_error_errno(r, "%s: no online CPUs found in sys/devices/system/cpu/online", root->path);
        return log_error_errno(r, "cannot read the host's topology under %s: %m", root->path);
}

int ctl_discover(Root *root, Host **ret) {
        /* Only revert asks: what it puts back is in the journal, the IRQs are not needed. */
        int r = host_discover(root, HOST_DISCOVER_NO_IRQS, ret);
        return r < 0 ? host_failure(root, r) : 0;
}

int ctl_prepare_failure(Root *root, PrepareError *pe, int r) {
        switch (pe->step) {
        case PREPARE_STEP_HOST:
                r = host_failure(root, r);
                break;
        case PREPARE_STEP_PROFILE: {
                if (r == -ENOMEM) {
                        r = log_oom();
                        break;
                }
                _cleanup_free_ char *msg = error_format(&pe->error, "invalid profile");
                /* The message names file, JSON pointer and the fix, and is the whole line. */
                fprintf(stderr, "%s\n", msg ? msg : "invalid profile");
                /* A profile that cannot be read for an I/O reason is a failure; anything about its
                 * content (including a missing name) is bad usage. */
                if (r == -EINVAL || r == -ENOENT)
                        r = EXIT_USAGE;
                break;
        }
        default:
                r = log_error_errno(r, "cannot build the plan: %m");
        }
        prepare_error_done(pe);
        return r;
}

/* Why the state directory could not be locked or written (r: the negative errno), for the end of a
 * message: a user without the rights, or a state directory no one may write. "" if nothing to add. */
static const char *state_dir_hint(int r) {
        if (r == -EROFS)
                return " (the state directory is on a read-only filesystem; rtpart keeps its journal there)";
        if ((r == -EACCES || r == -EPERM) && geteuid() != 0)
                return " (changing the host needs root)";
        if (r == -EACCES || r == -EPERM)
                return " (even root may not write the state directory: check its permissions, attributes and mount)";
        return "";
}

int ctl_open_journal(Root *root, JournalStore **ret) {
        int r = journal_store_open(root, ret);
        return r < 0 ? log_oom() : 0;
}

int ctl_read_journal(Root *root, Journal **ret, Error *ret_error) {
        _cleanup_(journal_store_freep) JournalStore *journal = NULL;
        int r = journal_store_open(root, &journal);
        return r < 0 ? r : journal_store_load(journal, ret, ret_error);
}

int ctl_take_lock(JournalStore *journal) {
        _cleanup_(error_done) Error e = {};
        int r = journal_store_lock(journal, /* wait= */ false, &e);
        if (r == -EWOULDBLOCK) {
                log_info("another rtpartctl or rtpartd is changing this host; waiting…");
                r = journal_store_lock(journal, /* wait= */ true, &e);
        }
        if (r < 0 && e.message) {
                _cleanup_free_ char *msg = error_format(&e, NULL);
                return log_error_errno(r, "cannot lock the journal: %s", strempty(msg));
        }
        if (r < 0)
                return log_error_errno(r, "cannot lock %s: %m%s", journal_store_display_dir(journal),
                                       state_dir_hint(r));
        return 0;
}

void ctl_recover(Root *root, JournalStore *journal) {
        if (!engine_needs_recovery(root, journal))
                return;
        _cleanup_(host_freep) Host *host = NULL;
        _cleanup_(journal_store_unlockp) JournalStore *locked = NULL;
        EngineResult er = {};
        int r = -EPERM;
        if (host_discover(root, HOST_DISCOVER_NO_IRQS, &host) >= 0 &&
            (r = journal_store_lock(journal, /* wait= */ true, NULL)) >= 0) {
                locked = journal;
                r = engine_recover(root, journal, host, &er);
        }
        if (r < 0)
                log_error("the journal holds an interrupted transaction that could not be rolled back: %s%s",
                          er.error.message ?: strerror(-r), state_dir_hint(r));
        else
                for (char **n = er.notes; n && *n; n++)
                        log_info("%s", *n);
        engine_result_done(&er);
}
