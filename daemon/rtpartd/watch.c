/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "strv.h"
#include "watch-internal.h"

/* What inotify sees on this kernel (6.18, measured as root by writing a file's own value back to
 * it and waiting 300 ms for an event):
 *
 *   /proc/sys/vm/stat_interval           IN_MODIFY within 0.06 ms
 *   /proc/irq/default_smp_affinity       IN_MODIFY within 0.03 ms
 *   /proc/irq/N/smp_affinity_list        IN_MODIFY within 0.02 ms
 *   /sys/devices/virtual/workqueue/cpumask, cgroup v1 cpuset.cpus   IN_MODIFY
 *
 * vfs_write() raises IN_MODIFY for every file, procfs and sysfs included. Two gaps, both measured:
 *
 *   - A write to /proc/irq/N/smp_affinity raises nothing on smp_affinity_list (another inode with
 *     the same value behind it): the manager watches both files of an IRQ knob.
 *   - After the dentry cache is dropped (echo 2 > /proc/sys/vm/drop_caches, or memory pressure), a
 *     write to /proc/sys/vm/stat_interval raised NO event on a watch added by path: proc_sys
 *     looks the name up again and makes a new inode, and the watch stays on the old one. Holding an
 *     O_PATH fd on the file keeps the dentry, so later opens find the same inode, and the event
 *     arrives again (measured the same way). Every watched file is pinned so.
 *
 * Writes the kernel makes itself (an IRQ's affinity changed by CPU hotplug, a cgroup's effective
 * CPUs, a sysctl changed by a module) raise nothing; the safety timer re-checks those. */

#define WATCH_MASK (IN_MODIFY | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)
#define DEFAULT_DEBOUNCE_USEC (5 * 1000ULL)
#define DEFAULT_INTERVAL_USEC (60 * 1000000ULL)

static void entries_clear(Watcher *w) {
        for (size_t i = 0; i < w->n_entries; i++) {
                free(w->entries[i].path);
                if (w->entries[i].pin >= 0)
                        close(w->entries[i].pin);
                strv_free(w->entries[i].knobs);
        }
        free(w->entries);
        w->entries = NULL;
        w->n_entries = 0;
        free(w->by_wd);
        w->by_wd = NULL;
        w->n_by_wd = 0;
        w->n_pending = 0;
        w->inotify_source = sd_event_source_disable_unref(w->inotify_source);
        if (w->inotify_fd >= 0)
                close(w->inotify_fd);
        w->inotify_fd = -EBADF;
        if (w->debounce_source)
                (void) sd_event_source_set_enabled(w->debounce_source, SD_EVENT_OFF);
}

Watcher *watcher_free(Watcher *w) {
        if (!w)
                return NULL;
        entries_clear(w);
        sd_event_source_disable_unref(w->debounce_source);
        sd_event_source_disable_unref(w->tick_source);
        watcher_netlink_done(w);
        sd_event_source_disable_unref(w->device_source);
        free(w->device_action);
        free(w->device_path);
        sd_event_source_disable_unref(w->journal_source);
        if (w->journal_fd >= 0)
                close(w->journal_fd);
        sd_event_source_disable_unref(w->objects_source);
        if (w->objects_fd >= 0)
                close(w->objects_fd);
        sd_event_unref(w->event);
        free(w);
        return NULL;
}

static int on_tick(sd_event_source *s, uint64_t usec, void *userdata) {
        Watcher *w = userdata;
        (void) sd_event_source_set_time_relative(s, w->interval_usec);
        (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        if (w->cb.tick)
                w->cb.tick(w, w->userdata);
        return 0;
}

static int on_debounce(sd_event_source *s, uint64_t usec, void *userdata);

int watcher_new(sd_event *event, Root *root, const WatchCallbacks *cb, void *userdata, Watcher **ret) {
        _cleanup_(watcher_freep) Watcher *w = calloc(1, sizeof(*w));
        int r;

        if (!w)
                return -ENOMEM;
        w->event = sd_event_ref(event);
        w->root = root;
        w->cb = *cb;
        w->userdata = userdata;
        w->inotify_fd = w->proc_fd = w->journal_fd = w->objects_fd = w->uevent_fd = w->link_fd = -EBADF;
        w->debounce_usec = DEFAULT_DEBOUNCE_USEC;
        w->interval_usec = DEFAULT_INTERVAL_USEC;

        /* Accuracy of a microsecond: the debounce is all the latency of a drift report, and the
         * timer runs only after an event. */
        r = sd_event_add_time_relative(event, &w->debounce_source, CLOCK_MONOTONIC, w->debounce_usec, 1, on_debounce,
                                       w);
        if (r < 0)
                return r;
        (void) sd_event_source_set_enabled(w->debounce_source, SD_EVENT_OFF);
        (void) sd_event_source_set_description(w->debounce_source, "watch-debounce");

        /* Accuracy of a second: the loop may fold the tick into another wake-up. */
        r = sd_event_add_time_relative(event, &w->tick_source, CLOCK_MONOTONIC, w->interval_usec, 1000000, on_tick, w);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(w->tick_source, "watch-safety-timer");
        *ret = TAKE_PTR(w);
        return 0;
}

void watcher_set_debounce(Watcher *w, uint64_t usec) {
        w->debounce_usec = usec;
}

int watcher_set_interval(Watcher *w, uint64_t usec) {
        if (usec == 0)
                return -EINVAL;
        w->interval_usec = usec;
        int r = sd_event_source_set_time_relative(w->tick_source, usec);
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(w->tick_source, SD_EVENT_ONESHOT);
}

uint64_t watcher_get_interval(Watcher *w) {
        return w->interval_usec;
}

size_t watcher_n_files(Watcher *w) {
        size_t n = 0;
        for (size_t i = 0; i < w->n_entries; i++)
                if (w->entries[i].wd >= 0)
                        n++;
        return n;
}

/* ---- inotify ---- */

static int map_wd(Watcher *w, int wd, size_t idx) {
        if ((size_t) wd >= w->n_by_wd) {
                size_t n = MAX((size_t) wd + 1, w->n_by_wd * 2);
                int *m = realloc(w->by_wd, n * sizeof(int));
                if (!m)
                        return -ENOMEM;
                for (size_t i = w->n_by_wd; i < n; i++)
                        m[i] = -1;
                w->by_wd = m;
                w->n_by_wd = n;
        }
        w->by_wd[wd] = (int) idx;
        return 0;
}

static WatchEntry *entry_for_wd(Watcher *w, int wd) {
        if (wd < 0 || (size_t) wd >= w->n_by_wd || w->by_wd[wd] < 0)
                return NULL;
        return &w->entries[w->by_wd[wd]];
}

/* Pins e->path and adds its watch. Two paths of one inode (a symlinked sysfs directory) get one
 * wd: the second entry's knobs join the first's. Returns 0, or a negative errno (ENOENT …). */
static int entry_watch(Watcher *w, size_t idx) {
        WatchEntry *e = &w->entries[idx];
        char p[64];
        struct stat st;
        int fd, wd;

        fd = root_open(w->root, e->path, O_PATH, 0);
        if (fd < 0)
                return fd;
        if (fstat(fd, &st) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
        wd = inotify_add_watch(w->inotify_fd, p, WATCH_MASK);
        if (wd < 0) {
                int r = -errno; /* ENOSPC: fs.inotify.max_user_watches */
                close(fd);
                return r;
        }
        WatchEntry *other = entry_for_wd(w, wd);
        if (other && other != e) {
                for (char **k = e->knobs; k && *k; k++)
                        if (!strv_contains(other->knobs, *k))
                                (void) strv_extend(&other->knobs, *k);
                close(fd);
                return 0;
        }
        if (e->pin >= 0)
                close(e->pin);
        e->pin = fd;
        e->wd = wd;
        e->dev = st.st_dev;
        e->ino = st.st_ino;
        return map_wd(w, wd, idx);
}

/* Reads every inotify event queued on fd and hands each to fn (NULL: they are dropped). The
 * knob files, the objects directory and the journal's directory each have their instance. */
static void inotify_read(Watcher *w, int fd, void (*fn)(Watcher *w, const struct inotify_event *ev, void *userdata),
                         void *userdata) {
        char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));

        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n <= 0)
                        return;
                for (char *p = buf; fn && p < buf + n;) {
                        const struct inotify_event *ev = (const struct inotify_event *) p;
                        p += sizeof(*ev) + ev->len;
                        fn(w, ev, userdata);
                }
        }
}

static void entry_set_pending(Watcher *w, WatchEntry *e) {
        if (!e->pending) {
                e->pending = true;
                w->n_pending++;
        }
}

static void on_file_event(Watcher *w, const struct inotify_event *ev, void *userdata) {
        if (ev->mask & IN_Q_OVERFLOW) {
                /* Events were lost: every file counts as changed. */
                for (size_t i = 0; i < w->n_entries; i++)
                        entry_set_pending(w, &w->entries[i]);
                return;
        }
        WatchEntry *e = entry_for_wd(w, ev->wd);
        if (!e)
                return;
        if (ev->mask & (IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED))
                e->repin = true;
        if (ev->mask & IN_IGNORED) {
                w->by_wd[ev->wd] = -1;
                e->wd = -1;
        }
        entry_set_pending(w, e);
}

static int on_inotify(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Watcher *w = userdata;
        inotify_read(w, fd, on_file_event, NULL);
        if (w->n_pending > 0 && sd_event_source_get_enabled(w->debounce_source, NULL) == 0) {
                (void) sd_event_source_set_time_relative(w->debounce_source, w->debounce_usec);
                (void) sd_event_source_set_enabled(w->debounce_source, SD_EVENT_ONESHOT);
        }
        return 0;
}

/* The file may have been replaced (rename over it, a sysfs object re-created): watch what the
 * path names now. */
static void entry_repin(Watcher *w, size_t idx) {
        WatchEntry *e = &w->entries[idx];
        struct stat st;
        e->repin = false;
        if (e->wd >= 0 && root_stat(w->root, e->path, &st) >= 0 && st.st_dev == e->dev && st.st_ino == e->ino)
                return; /* same file: a chmod, nothing to redo */
        if (e->wd >= 0) {
                (void) inotify_rm_watch(w->inotify_fd, e->wd);
                w->by_wd[e->wd] = -1;
                e->wd = -1;
        }
        if (e->pin >= 0)
                close(e->pin);
        e->pin = -EBADF;
        (void) entry_watch(w, idx); /* gone for good: the timer looks at it */
}

static int on_debounce(sd_event_source *s, uint64_t usec, void *userdata) {
        Watcher *w = userdata;
        _cleanup_(json_decrefp) json_t *seen = json_object();
        _cleanup_strv_free_ char **knobs = NULL;

        for (size_t i = 0; i < w->n_entries && w->n_pending > 0; i++) {
                WatchEntry *e = &w->entries[i];
                if (!e->pending)
                        continue;
                e->pending = false;
                w->n_pending--;
                if (e->repin)
                        entry_repin(w, i);
                e = &w->entries[i];
                for (char **k = e->knobs; k && *k; k++)
                        if (seen && !json_object_get(seen, *k)) {
                                json_object_set_new(seen, *k, json_true());
                                (void) strv_extend(&knobs, *k);
                        }
        }
        w->n_pending = 0;
        if (knobs && w->cb.knobs_changed)
                w->cb.knobs_changed(w, knobs, w->userdata);
        return 0;
}

void watcher_drain(Watcher *w) {
        if (w->inotify_fd >= 0)
                (void) on_inotify(NULL, w->inotify_fd, EPOLLIN, w);
        if (w->n_pending == 0)
                return;
        (void) sd_event_source_set_enabled(w->debounce_source, SD_EVENT_OFF);
        (void) on_debounce(NULL, 0, w);
}

char **watcher_unwatched_knobs(Watcher *w, bool *ret_oom) {
        char **l = NULL;
        *ret_oom = false;
        for (size_t i = 0; i < w->n_entries; i++) {
                if (w->entries[i].wd >= 0)
                        continue;
                for (char **k = w->entries[i].knobs; k && *k; k++)
                        if (!strv_contains(l, *k) && strv_extend(&l, *k) < 0) {
                                *ret_oom = true;
                                return l;
                        }
        }
        return l;
}

void watcher_flush(Watcher *w) {
        if (w->inotify_fd < 0)
                return;
        inotify_read(w, w->inotify_fd, NULL, NULL);
        for (size_t i = 0; i < w->n_entries; i++)
                w->entries[i].pending = false;
        w->n_pending = 0;
        (void) sd_event_source_set_enabled(w->debounce_source, SD_EVENT_OFF);
}

int watcher_set_files(Watcher *w, const WatchFile *files, size_t n, size_t *ret_missing) {
        _cleanup_(json_decrefp) json_t *index = json_object();
        size_t missing = 0;
        int r;

        entries_clear(w);
        if (!index)
                return -ENOMEM;
        w->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (w->inotify_fd < 0)
                return -errno;
        r = sd_event_add_io(w->event, &w->inotify_source, w->inotify_fd, EPOLLIN, on_inotify, w);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(w->inotify_source, "watch-inotify");

        /* One entry per path, with every knob that lives there. */
        for (size_t i = 0; i < n; i++) {
                json_t *pos = json_object_get(index, files[i].path);
                if (pos) {
                        WatchEntry *e = &w->entries[json_integer_value(pos)];
                        if (!strv_contains(e->knobs, files[i].knob) && strv_extend(&e->knobs, files[i].knob) < 0)
                                return -ENOMEM;
                        continue;
                }
                if (w->n_entries % 64 == 0) {
                        WatchEntry *m = realloc(w->entries, (w->n_entries + 64) * sizeof(WatchEntry));
                        if (!m)
                                return -ENOMEM;
                        w->entries = m;
                }
                WatchEntry *e = &w->entries[w->n_entries];
                *e = (WatchEntry) { .path = strdup(files[i].path), .pin = -EBADF, .wd = -1 };
                if (!e->path || strv_extend(&e->knobs, files[i].knob) < 0)
                        return -ENOMEM;
                json_object_set_new(index, files[i].path, json_integer((json_int_t) w->n_entries));
                w->n_entries++;
        }
        size_t watched = 0;
        for (size_t i = 0; i < w->n_entries; i++) {
                r = entry_watch(w, i);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        missing++;
                else
                        watched++;
        }
        if (ret_missing)
                *ret_missing = missing;
        return (int) MIN(watched, (size_t) INT32_MAX);
}

/* ---- devices: the coalesced device_added of uevents, links and object directories ---- */

static int on_device_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Watcher *w = userdata;
        if (w->cb.device_added)
                w->cb.device_added(w, strempty(w->device_action), strempty(w->device_path), w->userdata);
        return 0;
}

void watcher_device_event(Watcher *w, const char *action, const char *path) {
        char *a = strdup(action), *d = path ? strdup(path) : NULL;
        free(w->device_action);
        free(w->device_path);
        w->device_action = a;
        w->device_path = d;
        if (!w->device_source)
                return;
        /* Trailing: a hotplug burst is one call, after the last event. */
        (void) sd_event_source_set_time_relative(w->device_source, DEVICE_DELAY_USEC);
        (void) sd_event_source_set_enabled(w->device_source, SD_EVENT_ONESHOT);
}

int watcher_device_timer_add(Watcher *w) {
        if (w->device_source)
                return 0;
        int r = sd_event_add_time_relative(w->event, &w->device_source, CLOCK_MONOTONIC, DEVICE_DELAY_USEC, 1000,
                                           on_device_timer, w);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(w->device_source, "watch-device");
        return sd_event_source_set_enabled(w->device_source, SD_EVENT_OFF);
}

/* A directory whose entries are objects (proc/irq/N): a new entry is a device event. */
static void on_object_event(Watcher *w, const struct inotify_event *ev, void *userdata) {
        if (ev->len > 0 && (ev->mask & (IN_CREATE | IN_MOVED_TO)))
                watcher_device_event(w, "created", ev->name);
}

static int on_objects(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        inotify_read(userdata, fd, on_object_event, NULL);
        return 0;
}

/* An inotify instance of its own on the directory rel of root (pinned, as the knob files are). */
static int dir_watch(Watcher *w, Root *root, const char *rel, uint32_t mask, sd_event_io_handler_t handler,
                     const char *description, int *ret_fd, sd_event_source **ret_source) {
        _cleanup_close_ int fd = -EBADF, pin = -EBADF;
        char p[64];
        int r;

        pin = root_open(root, rel, O_PATH | O_DIRECTORY, 0);
        if (pin < 0)
                return pin;
        fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (fd < 0)
                return -errno;
        snprintf(p, sizeof(p), "/proc/self/fd/%d", pin);
        if (inotify_add_watch(fd, p, mask) < 0)
                return -errno;
        r = sd_event_add_io(w->event, ret_source, fd, EPOLLIN, handler, w);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(*ret_source, description);
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int watcher_watch_objects(Watcher *w, const char *rel) {
        if (w->objects_fd >= 0)
                return 0;
        int r = watcher_device_timer_add(w);
        if (r < 0)
                return r;
        return dir_watch(w, w->root, rel, IN_CREATE | IN_MOVED_TO | IN_ONLYDIR, on_objects, "watch-objects",
                         &w->objects_fd, &w->objects_source);
}

/* ---- the journal ---- */

static void on_journal_event(Watcher *w, const struct inotify_event *ev, void *userdata) {
        bool *changed = userdata;
        if (ev->len > 0 && streq(ev->name, "state.json"))
                *changed = true;
}

static int on_journal(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Watcher *w = userdata;
        bool changed = false;
        inotify_read(w, fd, on_journal_event, &changed);
        if (changed && w->cb.journal_changed)
                w->cb.journal_changed(w, w->userdata);
        return 0;
}

int watcher_watch_journal(Watcher *w, Root *state_root, const char *dir) {
        if (w->journal_fd >= 0)
                return 0;
        return dir_watch(w, state_root, dir, IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE, on_journal, "watch-journal",
                         &w->journal_fd, &w->journal_source);
}
