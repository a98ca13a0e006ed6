/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What makes rtpartd look at the host again, from kernel events, with no polling:
 *
 *   inotify     IN_MODIFY/IN_ATTRIB/IN_DELETE_SELF/IN_MOVE_SELF on every knob file. Each file is
 *               pinned by an O_PATH fd: procfs makes a new inode for a /proc/sys file whose dentry
 *               was reclaimed, and a watch on the old inode would never fire again (measured, see
 *               watch.c). Events are coalesced for `debounce` (a burst of writes is one check).
 *   uevents     NETLINK_KOBJECT_UEVENT, kernel group 1: devices that are added or bound may bring
 *               new IRQs.
 *   links       NETLINK_ROUTE, RTNLGRP_LINK: an interface brought up has just requested its IRQs.
 *   objects     inotify IN_CREATE on one directory (proc/irq) of a tree.
 *   proc conn.  NETLINK_CONNECTOR/CN_IDX_PROC with a BPF filter that lets through only forks by
 *               kthreadd (new kernel threads); real host only. With task events on (the profile
 *               has isolated CPUs to keep user tasks off), also every fork, exec, comm change and
 *               exit: the ids of tasks that may have landed on isolated CPUs, and of tasks gone.
 *   timer       one safety re-check every `interval` for what no event announces (boot
 *               configuration, writes the kernel makes itself, watches that could not be added).
 *
 * The watcher knows files and knob ids, not the journal: the manager gives it the set. */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "macro.h"
#include "root.h"

typedef struct Watcher Watcher;

typedef struct WatchCallbacks {
        /* Knob files changed (NULL-terminated ids; the watcher frees them after the call). */
        void (*knobs_changed)(Watcher *w, char **knobs, void *userdata);
        /* A device was added or bound (uevent), a network interface came up (rtnetlink; path
         * "ifindex N") or an entry appeared in the objects directory (action "created", path its
         * name): coalesced for 5 ms, `action`/`devpath` of the last one. */
        void (*device_added)(Watcher *w, const char *action, const char *devpath, void *userdata);
        /* kthreadd forked (coalesced): new kernel threads exist. */
        void (*kthreads_forked)(Watcher *w, void *userdata);
        /* User tasks were forked, exec'd or renamed (ids to check) or exited (ids gone), coalesced
         * for `debounce`. overflow: events were lost or more came than are kept, so every task
         * needs a look. The arrays are the watcher's, valid during the call. */
        void (*tasks_changed)(Watcher *w, const int *pids, size_t n_pids, const int *gone, size_t n_gone, bool overflow,
                              void *userdata);
        /* The safety timer. */
        void (*tick)(Watcher *w, void *userdata);
        /* The journal's directory changed (state.json replaced by someone). */
        void (*journal_changed)(Watcher *w, void *userdata);
        /* A CPU went offline or came online (uevent): the kernel may have moved IRQs, threads and
         * cpusets' CPUs itself, which no file event says. */
        void (*cpus_changed)(Watcher *w, void *userdata);
        /* Network interfaces that came (uevent "add" or "move" of subsystem net: a new NIC, its
         * driver bound again, a rename) or came up (rtnetlink RTM_NEWLINK with IFF_UP: a link down
         * and up), whose drivers may have reset their channels, queues and IRQs: coalesced with
         * device_added and called after it, `action` the last event's ("add", "move", "up"),
         * `ifnames` each interface once (NULL-terminated; the watcher's, valid during the call). */
        void (*interfaces_changed)(Watcher *w, const char *action, char **ifnames, void *userdata);
} WatchCallbacks;

typedef struct WatchFile {
        const char *knob;
        const char *path; /* root-relative */
} WatchFile;

int watcher_new(sd_event *event, Root *root, const WatchCallbacks *cb, void *userdata, Watcher **ret);
Watcher *watcher_free(Watcher *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(Watcher *, watcher_free);

/* Replaces the watched set (a fresh inotify instance: events of earlier writes, our own included,
 * are dropped). Files that do not exist are left to the timer. Returns how many files are watched
 * (ret_missing: how many could not be). */
int watcher_set_files(Watcher *w, const WatchFile *files, size_t n, size_t *ret_missing);
size_t watcher_n_files(Watcher *w);
/* Throws away queued inotify events (after our own writes). */
void watcher_flush(Watcher *w);
/* Reads the queued inotify events now, and calls knobs_changed for every pending one without
 * waiting for the debounce: what a file write has changed is then known, however recent. */
void watcher_drain(Watcher *w);
/* The knobs of files that are not watched now (missing when the set was given, or gone since):
 * only reading them says what they are. A strv (NULL: none, or out of memory: *ret_oom). */
char **watcher_unwatched_knobs(Watcher *w, bool *ret_oom);

void watcher_set_debounce(Watcher *w, uint64_t usec);
int watcher_set_interval(Watcher *w, uint64_t usec);
uint64_t watcher_get_interval(Watcher *w);

/* Both are best effort: without the privilege or kernel support they return the error and the
 * daemon goes on with inotify and the timer. Their sockets are libnl's, loaded by the first:
 * -EOPNOTSUPP when it cannot be, with the reason in watcher_netlink_error(). */
int watcher_enable_uevents(Watcher *w);
int watcher_enable_proc_connector(Watcher *w);
const char *watcher_netlink_error(const Watcher *w);
/* Whether the proc connector also passes user tasks' events (tasks_changed); may be set before
 * the proc connector is enabled. */
int watcher_set_task_events(Watcher *w, bool on);
/* Watches the directory rel of the root (proc/irq) for new entries: device_added. Procfs raises no
 * inotify event when the kernel makes a directory itself (proc_mkdir() makes no fsnotify call), so
 * on "/" this sees only what a tree's writer does; the kernel's new IRQs are found from uevents,
 * links and the safety timer. */
int watcher_watch_objects(Watcher *w, const char *rel);
/* Watches the directory holding state.json (absolute path of that directory). */
int watcher_watch_journal(Watcher *w, Root *state_root, const char *dir);
