/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "profile.h"
#include "strv.h"
#include "tuned-active.h"

void tuned_active_done(TunedActive *t) {
        if (!t)
                return;
        free(t->profiles);
        *t = (TunedActive) {};
}

/* A file's first line, "" when it is missing or empty. */
static int read_name(Root *root, const char *rel, char **ret) {
        int r = root_read_line(root, rel, ret);
        if (r == -ENOMEM)
                return r;
        if (r < 0 && !(*ret = strdup("")))
                return -ENOMEM;
        return 0;
}

/* tuned's process: run/tuned/tuned.pid, and a process of that id named "tuned" (the daemon is a
 * Python script: its comm is the script's name, its command line "python3 … /usr/sbin/tuned …"). */
static int tuned_pid(Root *root) {
        _cleanup_free_ char *line = NULL, *comm = NULL, *cmdline = NULL;
        size_t size = 0;
        char *end;
        if (root_read_line(root, "run/tuned/tuned.pid", &line) < 0)
                return 0;
        errno = 0;
        long pid = strtol(line, &end, 10);
        if (errno || *end || pid <= 0 || pid > INT32_MAX)
                return 0;
        if (root_read_linef(root, &comm, "proc/%ld/comm", pid) >= 0 && streq(comm, "tuned"))
                return (int) pid;
        _cleanup_free_ char *rel = NULL;
        if (asprintf(&rel, "proc/%ld/cmdline", pid) < 0 || root_read_file(root, rel, &cmdline, &size) < 0)
                return 0;
        for (const char *a = cmdline; a < cmdline + size; a += strlen(a) + 1) {
                const char *base = strrchr(a, '/');
                if (streq(base ? base + 1 : a, "tuned"))
                        return (int) pid;
        }
        return 0;
}

int tuned_active_read(Root *root, TunedActive *ret) {
        _cleanup_free_ char *active = NULL, *post = NULL;
        if (read_name(root, "etc/tuned/active_profile", &active) < 0 ||
            read_name(root, "etc/tuned/post_loaded_profile", &post) < 0)
                return -ENOMEM;
        /* Blanks only between names, as tuned_import_names() takes them. */
        StrBuf b = {};
        strbuf_append(&b, "");
        for (char *sp = NULL, *t = strtok_r(active, " \t", &sp); t; t = strtok_r(NULL, " \t", &sp))
                strbuf_appendf(&b, "%s%s", b.len ? " " : "", t);
        if (*post && !strchr(post, ' '))
                strbuf_appendf(&b, "%s%s", b.len ? " " : "", post);
        _cleanup_free_ char *profiles = strbuf_steal(&b);
        if (!profiles)
                return -ENOMEM;
        *ret = (TunedActive) { .pid = tuned_pid(root) };
        if (*profiles)
                ret->profiles = TAKE_PTR(profiles);
        return 0;
}

static void env_split(void *userdata, unsigned cores_per_node, CpuSet *ret_isolated) {
        TunedHost *th = userdata;
        CpuSet hk;
        host_default_split(th->host, cores_per_node, &hk, ret_isolated);
}

static int env_read(void *userdata, const char *path, bool host_path, char **ret) {
        TunedHost *th = userdata;
        if (!host_path || path[0] != '/')
                return -ENOENT; /* a path of the user's: none here */
        return root_read_file(th->root, path + 1, ret, NULL);
}

TunedEnv tuned_env_of_host(TunedHost *th) {
        return (TunedEnv) {
                .online = th->host->online,
                .present = th->host->present,
                .split = env_split,
                .read_file = env_read,
                .userdata = th,
        };
}

void tuned_overlap_done(TunedOverlap *o) {
        if (!o)
                return;
        tuned_active_done(&o->active);
        strv_free(o->knobs);
        strv_free(o->values);
        free(o->unknown);
        *o = (TunedOverlap) {};
}

/* tuned's profile planned on the host: 0 and *ret, or -EINVAL and why in *ret_why. */
static int plan_tuned(Root *root, const Host *host, const char *profiles, Plan **ret, char **ret_why) {
        TunedHost th = { root, host };
        TunedEnv env = tuned_env_of_host(&th);
        _cleanup_(tuned_import_done) TunedImport t = {};
        _cleanup_(error_done) Error e = {};
        _cleanup_(profile_freep) Profile *p = NULL;
        _cleanup_(resolved_freep) Resolved *res = NULL;

        int r = tuned_import_names(&env, profiles, &t, &e);
        if (r >= 0)
                r = profile_from_document(backend_profile_schema(), profiles, t.profile, &p, &e);
        if (r >= 0)
                r = profile_resolve(p, host, &res, &e);
        if (r >= 0)
                r = plan_build(res, root, ret, &e);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                /* Its message without the file that names the document rtpart made of it. */
                *ret_why = e.message ? strdup(e.message) : strdup(strerror(-r));
                return *ret_why ? -EINVAL : -ENOMEM;
        }
        return 0;
}

static const Knob *plan_knob(const Plan *p, const char *id) {
        for (size_t i = 0; i < p->n_knobs; i++)
                if (streq(p->knobs[i].id, id))
                        return &p->knobs[i];
        return NULL;
}

int tuned_overlap_find(Root *root, const Host *host, const Plan *plan, TunedOverlap *ret) {
        _cleanup_(tuned_overlap_done) TunedOverlap o = {};
        _cleanup_(plan_freep) Plan *theirs = NULL;
        int r = tuned_active_read(root, &o.active);
        if (r < 0)
                return r;
        if (o.active.profiles) {
                r = plan_tuned(root, host, o.active.profiles, &theirs, &o.unknown);
                if (r == -ENOMEM)
                        return r;
        }
        for (size_t i = 0; theirs && i < plan->n_knobs; i++) {
                const Knob *k = plan_knob(theirs, plan->knobs[i].id);
                if (k && (strv_extend(&o.knobs, k->id) < 0 || strv_extend(&o.values, strempty(k->desired)) < 0))
                        return -ENOMEM;
        }
        *ret = o;
        o = (TunedOverlap) {};
        return 0;
}

bool tuned_overlap_conflicts(const TunedOverlap *o) {
        return o->active.pid > 0 && o->active.profiles && (o->unknown || strv_length(o->knobs) > 0);
}

static int note_knob(Knob *k, const char *profiles, const char *value) {
        _cleanup_free_ char *n = NULL;
        bool same = streq(strempty(k->desired), value);
        if (asprintf(&n, "%s%stuned's profile %s sets it too%s%s", strempty(k->note), k->note ? "; " : "", profiles,
                     same ? ", to the same value" : ", to ",
                     same             ? ""
                             : *value ? value
                                      : "(removed)") < 0)
                return -ENOMEM;
        free(k->note);
        k->note = TAKE_PTR(n);
        return 0;
}

/* The one line of the plan's notes. */
static char *overlap_message(const TunedOverlap *o) {
        const TunedActive *a = &o->active;
        bool runs = a->pid > 0;
        _cleanup_free_ char *who = NULL;
        char *m = NULL;
        int k = runs ? asprintf(&who, "tuned runs (pid %d) with the profile %s", a->pid, a->profiles)
                     : asprintf(&who,
                                "tuned is not running, but when it starts it applies its active profile %s "
                                "(/etc/tuned/active_profile)",
                                a->profiles);
        if (k < 0)
                return NULL;
        size_t n = strv_length(o->knobs);
        if (o->unknown)
                k = asprintf(&m, "%s, which rtpart cannot read (%s): it may set the same knobs as this plan", who,
                             o->unknown);
        else if (n == 0)
                k = asprintf(&m, "%s, which sets none of this plan's knobs", who);
        else
                k = asprintf(&m,
                             "%s, which sets %zu of this plan's knobs too (each says \"tuned's profile … sets it "
                             "too\"): %s. %s, or import its profile (rtpartctl import-tuned --active) and apply "
                             "that instead%s",
                             who, n,
                             runs ? "the two would undo each other's writes" : "it would write them over rtpart's",
                             runs ? "Stop and disable tuned (systemctl disable --now tuned)"
                                  : "Disable tuned (systemctl disable tuned; or tuned-adm off)",
                             runs ? "; apply refuses while tuned runs, unless --force" : "");
        return k < 0 ? NULL : m;
}

int tuned_overlap_note(Plan *plan, const TunedOverlap *o) {
        if (!o->active.profiles)
                return 0;
        for (size_t i = 0, j = 0; o->knobs && o->knobs[j] && i < plan->n_knobs; i++) {
                if (!streq(plan->knobs[i].id, o->knobs[j]))
                        continue;
                if (note_knob(&plan->knobs[i], o->active.profiles, o->values[j++]) < 0)
                        return -ENOMEM;
        }
        char *m = overlap_message(o);
        if (!m || strv_push(&plan->notes, m) < 0)
                return -ENOMEM;
        return 0;
}

int tuned_overlap_mark(Root *root, const Host *host, Plan *plan) {
        _cleanup_(tuned_overlap_done) TunedOverlap o = {};
        int r = tuned_overlap_find(root, host, plan, &o);
        return r < 0 ? r : tuned_overlap_note(plan, &o);
}
