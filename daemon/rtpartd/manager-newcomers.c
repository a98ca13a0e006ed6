/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "manager-internal.h"
#include "strv.h"

/* Objects the kernel makes while rtpartd runs, for every backend that declares them
 * (Backend.newcomers, backend.h says when and why): the entries of its directory are read after a
 * device event, at each of its steps after it, and at every safety check. An entry not seen
 * before makes a plan, which places what the plan's discovery found; an entry that discovery has
 * not found yet waits, and is looked for again, never taken as placed. */

struct ManagerNewcomers {
        Manager *manager;
        const Backend *backend;
        StringSet known;   /* entries placed by a plan (or there at start) */
        StringSet waiting; /* entries a plan's discovery has not found yet */
        size_t step;       /* of the series of looks after a device event */
        bool stepping;     /* a look of the series is running */
        sd_event_source *timer;
};

static const BackendNewcomers *declared(const ManagerNewcomers *nc) {
        return nc->backend->newcomers;
}

/* The objects in the directory now (thousands of IRQs: sorted once). */
static int read_entries(ManagerNewcomers *nc, StringSet *ret) {
        const BackendNewcomers *d = declared(nc);
        _cleanup_strv_free_ char **l = NULL;
        size_t n = 0, cap = 0;
        DIR *dir = NULL;
        int r = root_opendir(nc->manager->root, d->dir, &dir);
        if (r < 0)
                return r;
        for (struct dirent *de; r >= 0 && (de = readdir(dir));) {
                if (d->is_object && !d->is_object(de->d_name))
                        continue;
                if (GROW_ARRAY(l, cap, n + 1, 64) < 0 || !(l[n] = strdup(de->d_name)))
                        r = -ENOMEM;
                else
                        l[++n] = NULL;
        }
        closedir(dir);
        if (r < 0)
                return r;
        return string_set_take(ret, TAKE_PTR(l), n);
}

static void steps_start(ManagerNewcomers *nc) {
        nc->step = 0;
        if (nc->timer && declared(nc)->steps_usec[0] > 0) {
                (void) sd_event_source_set_time_relative(nc->timer, declared(nc)->steps_usec[0]);
                (void) sd_event_source_set_enabled(nc->timer, SD_EVENT_ONESHOT);
        }
}

/* Plans when an entry is there that is neither placed nor waiting, or (again) while some wait
 * and `again`, or always with `force` (SIGHUP). */
static void look(ManagerNewcomers *nc, bool again, bool force) {
        const BackendNewcomers *d = declared(nc);
        Manager *m = nc->manager;
        _cleanup_(string_set_done) StringSet now = {}, found = {};
        _cleanup_(host_freep) Host *host = NULL;
        _cleanup_strv_free_ char **discovered = NULL;
        StringSet known = {}, waiting = {};
        char why[64];
        bool fresh = false;

        if (read_entries(nc, &now) < 0)
                return;
        /* An entry gone is forgotten: an object that comes later may get its name again. */
        string_set_keep(&nc->known, &now);
        string_set_keep(&nc->waiting, &now);
        for (size_t i = 0; i < now.n && !fresh; i++)
                fresh = !string_set_contains(&nc->known, now.items[i]) &&
                        !string_set_contains(&nc->waiting, now.items[i]);
        if (!force && !fresh && !(again && nc->waiting.n > 0))
                return;
        snprintf(why, sizeof(why), "new %ss", d->noun);
        bool planned = manager_adopt_new(m, why, &host);
        if (host && d->discovered(host, &discovered) < 0)
                return;
        for (char **x = discovered; x && *x; x++)
                if (string_set_add(&found, *x) < 0)
                        return;
        for (size_t i = 0; i < now.n; i++) {
                const char *o = now.items[i];
                /* Waits: one new to us that the discovery of a plan that was made did not find. A
                 * plan that could not be made (no profile, a journal refused) is said once, not
                 * tried again at every look. */
                bool wait =
                        m->profile && planned && !string_set_contains(&nc->known, o) && !string_set_contains(&found, o);
                if (wait && !string_set_contains(&nc->waiting, o))
                        log_debug("%s %s is in /%s but not yet in %s; looking again", d->noun, o, d->dir, d->discovery);
                if (string_set_add(wait ? &waiting : &known, o) < 0) {
                        string_set_done(&known);
                        string_set_done(&waiting);
                        return;
                }
        }
        string_set_done(&nc->known);
        string_set_done(&nc->waiting);
        nc->known = known;
        nc->waiting = waiting;
        /* A series of looks follows, unless one is under way (this look may be one of it). */
        if (waiting.n > 0 && nc->timer && !nc->stepping) {
                int on = SD_EVENT_OFF;
                (void) sd_event_source_get_enabled(nc->timer, &on);
                if (on == SD_EVENT_OFF)
                        steps_start(nc);
        }
}

static int on_step(sd_event_source *s, uint64_t usec, void *userdata) {
        ManagerNewcomers *nc = userdata;
        const BackendNewcomers *d = declared(nc);
        nc->stepping = true;
        look(nc, /* again= */ true, /* force= */ false);
        nc->stepping = false;
        if (d->steps_usec[++nc->step] > 0) {
                (void) sd_event_source_set_time_relative(s, d->steps_usec[nc->step]);
                (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        } else if (nc->waiting.n > 0)
                log_debug("%zu %s(s) in /%s still not in %s; looking again at the next device event and safety check",
                          nc->waiting.n, d->noun, d->dir, d->discovery);
        return 0;
}

static ManagerNewcomers *newcomers_free(ManagerNewcomers *nc) {
        if (!nc)
                return NULL;
        sd_event_source_disable_unref(nc->timer);
        string_set_done(&nc->known);
        string_set_done(&nc->waiting);
        free(nc);
        return NULL;
}

/* One backend's: what is there now is taken as placed (the full apply before placed it), and its
 * directory is watched for entries made in a tree. */
static int newcomers_new(Manager *m, const Backend *b, ManagerNewcomers **ret) {
        ManagerNewcomers *nc = calloc(1, sizeof(*nc));
        if (!nc)
                return -ENOMEM;
        *nc = (ManagerNewcomers) { .manager = m, .backend = b };
        int r = read_entries(nc, &nc->known);
        if (r >= 0)
                r = sd_event_add_time_relative(m->event, &nc->timer, CLOCK_MONOTONIC, b->newcomers->steps_usec[0], 1000,
                                               on_step, nc);
        if (r < 0) {
                newcomers_free(nc);
                return r;
        }
        (void) sd_event_source_set_enabled(nc->timer, SD_EVENT_OFF);
        (void) sd_event_source_set_description(nc->timer, "manager-newcomers");
        r = watcher_watch_objects(m->watcher, b->newcomers->dir);
        if (r < 0)
                log_debug_errno(r, "Cannot watch %s: %m", b->newcomers->dir);
        *ret = nc;
        return 0;
}

void manager_newcomers_start(Manager *m) {
        size_t n;
        const Backend * const *table = backend_table(&n);
        for (size_t i = 0; i < n; i++) {
                const Backend *b = table[i];
                if (!b->newcomers || !root_is_dir(m->root, b->newcomers->dir))
                        continue;
                ManagerNewcomers **a = realloc(m->newcomers, (m->n_newcomers + 1) * sizeof(ManagerNewcomers *));
                if (!a)
                        return;
                m->newcomers = a;
                int r = newcomers_new(m, b, &m->newcomers[m->n_newcomers]);
                if (r < 0) {
                        (void) log_warning_errno(r, "Cannot look for new %s objects: %m; placed at the next apply",
                                                 b->name);
                        continue;
                }
                m->n_newcomers++;
        }
}

void manager_newcomers_look(Manager *m, bool force) {
        for (size_t i = 0; i < m->n_newcomers; i++)
                look(m->newcomers[i], /* again= */ true, force);
}

void manager_newcomers_device_added(Manager *m) {
        for (size_t i = 0; i < m->n_newcomers; i++) {
                look(m->newcomers[i], /* again= */ true, /* force= */ false);
                /* The kernel makes them after the device's event: look again a few times. */
                steps_start(m->newcomers[i]);
        }
}

void manager_newcomers_free(Manager *m) {
        for (size_t i = 0; i < m->n_newcomers; i++)
                newcomers_free(m->newcomers[i]);
        free(m->newcomers);
        m->newcomers = NULL;
        m->n_newcomers = 0;
}
