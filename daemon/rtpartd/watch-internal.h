/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the watcher's two halves share: watch.c (inotify on knob files, object directories and the
 * journal; the timers) and watch-netlink.c (uevents, links, the proc connector). */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "watch.h"

#define DEVICE_DELAY_USEC (5 * 1000ULL) /* a hotplug burst is one call; the manager looks again later */

typedef struct WatchEntry {
        char *path;
        int pin; /* O_PATH fd: keeps the dentry, and so the inode, alive */
        int wd;
        dev_t dev;
        ino_t ino;
        char **knobs;
        bool pending, repin;
} WatchEntry;

struct Watcher {
        sd_event *event;
        Root *root;
        WatchCallbacks cb;
        void *userdata;

        int inotify_fd;
        sd_event_source *inotify_source;
        WatchEntry *entries;
        size_t n_entries;
        int *by_wd; /* wd → entry index, -1 */
        size_t n_by_wd;
        size_t n_pending;
        uint64_t debounce_usec;
        sd_event_source *debounce_source;

        uint64_t interval_usec;
        sd_event_source *tick_source;

        int uevent_fd, link_fd;
        sd_event_source *uevent_source, *link_source, *device_source;
        char *device_action, *device_path;

        int proc_fd;
        sd_event_source *proc_source, *kthread_source;
        bool task_events;
        sd_event_source *task_source;
        int *task_pids, *task_gone;
        size_t n_task_pids, n_task_gone;
        bool task_overflow;

        int journal_fd;
        sd_event_source *journal_source;

        int objects_fd;
        sd_event_source *objects_source;
};

/* Keeps what happened for the coalesced device_added call (the last event's words), and (re)starts
 * its timer. */
void watcher_device_event(Watcher *w, const char *action, const char *path);
/* The timer of device_added calls, made once. */
int watcher_device_timer_add(Watcher *w);
/* Lets go of the netlink sockets (watch-netlink.c). */
void watcher_netlink_done(Watcher *w);
