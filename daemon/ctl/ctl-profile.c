/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "ctl.h"
#include "document.h"
#include "engine.h"
#include "journal.h"
#include "tuned-active.h"

/* list, show, plan: what the profiles are, and what one would change. */

static int local_list(Root *root, JournalStore *journal, const char *arg, json_t **ret_doc) {
        ProfileInfo *l = NULL;
        size_t n = 0;
        int r = profile_list(root, &l, &n);
        if (r < 0)
                return log_error_errno(r, "cannot list profiles: %m");
        *ret_doc = document_list(l, n);
        profile_info_free_many(l, n);
        return *ret_doc ? 0 : -ENOMEM;
}

int verb_list(int argc, char **argv) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_(json_decrefp) json_t *doc = NULL;
        int r = ctl_document("ListProfiles", NULL, true, local_list, &root, &doc);
        return r != 0 ? r : render_list(doc);
}

/* show resolves on the host directly: rtpartd serves no such call. */
int verb_show(int argc, char **argv) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_(prepared_done) Prepared p = {};
        PrepareError pe = {};
        int r;

        _cleanup_(journal_store_freep) JournalStore *journal = NULL;
        if ((r = ctl_open_root(&root)) != 0 || (r = ctl_open_journal(root, &journal)) < 0)
                return r;
        ctl_recover(root, journal);
        r = prepare_profile(root, argv[1], /* flags= */ 0, &p, &pe);
        if (r < 0)
                return ctl_prepare_failure(root, &pe, r);
        prepare_error_done(&pe);

        _cleanup_(json_decrefp) json_t *out = json_object();
        json_t *files = json_array();
        if (!out || !files) {
                json_decref(files);
                return log_oom();
        }
        json_object_set_new(out, "name", json_string(p.resolved->name));
        for (char **f = p.profile->files; f && *f; f++)
                json_array_append_new(files, json_string(*f));
        json_object_set_new(out, "files", files);
        json_object_update(out, p.resolved->doc);
        return render_json(out);
}

static int local_plan(Root *root, JournalStore *journal, const char *name, json_t **ret_doc) {
        _cleanup_(prepared_done) Prepared p = {};
        PrepareError pe = {};
        int r = prepare_profile(root, name, PREPARE_PLAN, &p, &pe);
        if (r < 0)
                return ctl_prepare_failure(root, &pe, r);
        prepare_error_done(&pe);
        /* A journal this user cannot read (or none yet, or a broken one, which apply reports)
         * marks nothing. */
        _cleanup_(journal_freep) Journal *j = NULL;
        if (journal_store_load(journal, &j, NULL) < 0)
                j = NULL;
        r = engine_mark_refused(p.plan, j);
        if (r >= 0)
                r = tuned_overlap_mark(root, p.host, p.plan);
        if (r < 0)
                return log_error_errno(r, "cannot build the plan: %m");
        *ret_doc = document_plan(p.plan, p.host);
        return *ret_doc ? 0 : -ENOMEM;
}

int verb_plan(int argc, char **argv) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_(json_decrefp) json_t *doc = NULL;
        /* rtpartd reads a file as root: it names files for root only. Anyone else reads their
         * own file, here. */
        bool daemon = !profile_is_path(argv[1]) || geteuid() == 0;
        int r = ctl_document("Plan", argv[1], daemon, local_plan, &root, &doc);
        return r != 0 ? r : render_plan(doc, root);
}
