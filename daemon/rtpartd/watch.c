/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
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
#include "watch.h"

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
#define DEVICE_DELAY_USEC (5 * 1000ULL)    /* a hotplug burst is one call; the manager looks again later */
#define KTHREAD_DELAY_USEC (500 * 1000ULL) /* kthreadd forks, the thread then names itself */
#define TASK_PENDING_MAX 4096U             /* task ids kept per debounce; beyond: overflow */
#define DEFAULT_DEBOUNCE_USEC (5 * 1000ULL)
#define DEFAULT_INTERVAL_USEC (60 * 1000000ULL)

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

static void send_proc_op(int fd, enum proc_cn_mcast_op op) {
        char buf[NLMSG_SPACE(sizeof(struct cn_msg) + sizeof(enum proc_cn_mcast_op))] __attribute__((aligned(8))) = {};
        struct nlmsghdr *nh = (struct nlmsghdr *) buf;
        struct cn_msg *cn = NLMSG_DATA(nh);

        nh->nlmsg_len = NLMSG_LENGTH(sizeof(struct cn_msg) + sizeof(op));
        nh->nlmsg_type = NLMSG_DONE;
        nh->nlmsg_pid = 0;
        cn->id.idx = CN_IDX_PROC;
        cn->id.val = CN_VAL_PROC;
        cn->len = sizeof(op);
        memcpy(cn->data, &op, sizeof(op));
        (void) send(fd, nh, nh->nlmsg_len, MSG_NOSIGNAL);
}

Watcher *watcher_free(Watcher *w) {
        if (!w)
                return NULL;
        entries_clear(w);
        sd_event_source_disable_unref(w->debounce_source);
        sd_event_source_disable_unref(w->tick_source);
        sd_event_source_disable_unref(w->uevent_source);
        sd_event_source_disable_unref(w->link_source);
        sd_event_source_disable_unref(w->device_source);
        if (w->uevent_fd >= 0)
                close(w->uevent_fd);
        if (w->link_fd >= 0)
                close(w->link_fd);
        free(w->device_action);
        free(w->device_path);
        sd_event_source_disable_unref(w->proc_source);
        sd_event_source_disable_unref(w->kthread_source);
        sd_event_source_disable_unref(w->task_source);
        free(w->task_pids);
        free(w->task_gone);
        if (w->proc_fd >= 0) {
                /* The kernel counts listeners; one that leaves without saying so keeps the proc
                 * connector busy for every process on the host. */
                send_proc_op(w->proc_fd, PROC_CN_MCAST_IGNORE);
                close(w->proc_fd);
        }
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

static int on_inotify(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Watcher *w = userdata;
        char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));

        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n <= 0)
                        break;
                for (char *p = buf; p < buf + n;) {
                        const struct inotify_event *ev = (const struct inotify_event *) p;
                        p += sizeof(*ev) + ev->len;
                        if (ev->mask & IN_Q_OVERFLOW) {
                                /* Events were lost: every file counts as changed. */
                                for (size_t i = 0; i < w->n_entries; i++)
                                        if (!w->entries[i].pending) {
                                                w->entries[i].pending = true;
                                                w->n_pending++;
                                        }
                                continue;
                        }
                        WatchEntry *e = entry_for_wd(w, ev->wd);
                        if (!e)
                                continue;
                        if (ev->mask & (IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED))
                                e->repin = true;
                        if (ev->mask & IN_IGNORED) {
                                w->by_wd[ev->wd] = -1;
                                e->wd = -1;
                        }
                        if (!e->pending) {
                                e->pending = true;
                                w->n_pending++;
                        }
                }
        }
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
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        if (w->inotify_fd < 0)
                return;
        while (read(w->inotify_fd, buf, sizeof(buf)) > 0)
                ;
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

/* ---- devices: uevents, links and object directories ---- */

static int on_device_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Watcher *w = userdata;
        if (w->cb.device_added)
                w->cb.device_added(w, strempty(w->device_action), strempty(w->device_path), w->userdata);
        return 0;
}

/* Keeps what happened for the coalesced device_added call (the last event's words). */
static void device_event(Watcher *w, const char *action, const char *path) {
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

static int device_timer_add(Watcher *w) {
        if (w->device_source)
                return 0;
        int r = sd_event_add_time_relative(w->event, &w->device_source, CLOCK_MONOTONIC, DEVICE_DELAY_USEC, 1000,
                                           on_device_timer, w);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(w->device_source, "watch-device");
        return sd_event_source_set_enabled(w->device_source, SD_EVENT_OFF);
}

static const char *uevent_get(const char *buf, size_t len, const char *key) {
        size_t kl = strlen(key);
        for (const char *p = buf; p < buf + len; p += strlen(p) + 1)
                if (strncmp(p, key, kl) == 0 && p[kl] == '=')
                        return p + kl + 1;
        return NULL;
}

/* One datagram from a netlink socket into buf; its length, or 0 when there is none (or it is not
 * the kernel's: only the kernel speaks on the groups rtpartd joins, anything else is ignored). A
 * datagram longer than buf is cut to it: a uevent is at most 2 KiB of environment, and of a link
 * message only the header is read. */
static size_t netlink_recv(int fd, char *buf, size_t size, bool *more) {
        for (;;) {
                struct sockaddr_nl nla = {};
                socklen_t alen = sizeof(nla);
                ssize_t n = recvfrom(fd, buf, size, MSG_DONTWAIT, (struct sockaddr *) &nla, &alen);
                if (n < 0 && errno == EINTR)
                        continue;
                /* ENOBUFS: the kernel dropped some (a burst); the next read goes on. */
                *more = n >= 0 || errno == ENOBUFS;
                if (n <= 0 || nla.nl_pid != 0)
                        return 0;
                return MIN((size_t) n, size);
        }
}

static int on_uevent(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Watcher *w = userdata;
        char buf[8192];
        bool more = true;

        for (unsigned round = 0; round < 64 && more; round++) {
                size_t n = netlink_recv(fd, buf, sizeof(buf) - 1, &more);
                if (n == 0)
                        continue;
                buf[n] = 0;
                const char *action = uevent_get(buf, n, "ACTION");
                const char *devpath = action ? uevent_get(buf, n, "DEVPATH") : NULL;
                if (action && (streq(action, "online") || streq(action, "offline")) && devpath &&
                    startswith(devpath, "/devices/system/cpu/cpu") && w->cb.cpus_changed)
                        w->cb.cpus_changed(w, w->userdata);
                if (action && (streq(action, "add") || streq(action, "bind")))
                        device_event(w, action, devpath);
        }
        return 0;
}

/* A network interface brought up: its driver requested its IRQs in ndo_open(), before the kernel
 * set IFF_UP and sent this RTM_NEWLINK; no uevent says so. */
static int on_link(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Watcher *w = userdata;
        char buf[8192] __attribute__((aligned(NLMSG_ALIGNTO)));
        bool more = true;

        for (unsigned round = 0; round < 64 && more; round++) {
                int len = (int) netlink_recv(fd, buf, sizeof(buf), &more); /* int: what NLMSG_NEXT() takes */
                for (struct nlmsghdr *h = (struct nlmsghdr *) buf; len > 0 && NLMSG_OK(h, len);
                     h = NLMSG_NEXT(h, len)) {
                        if (h->nlmsg_type != RTM_NEWLINK || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct ifinfomsg)))
                                continue;
                        const struct ifinfomsg *ifi = NLMSG_DATA(h);
                        char name[IF_NAMESIZE + 8];
                        if (!(ifi->ifi_flags & IFF_UP))
                                continue;
                        snprintf(name, sizeof(name), "ifindex %d", ifi->ifi_index);
                        device_event(w, "up", name);
                }
        }
        return 0;
}

/* A non-blocking netlink socket of protocol that receives its multicast group (not a bitmask). */
static int netlink_open(int protocol, int group) {
        _cleanup_close_ int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, protocol);
        if (fd < 0)
                return -errno;
        struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 ||
            setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group, sizeof(group)) < 0)
                return -errno;
        /* A driver probing many devices sends a burst: room for it between two reads. */
        (void) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &(int) { 1024 * 1024 }, sizeof(int));
        return TAKE_FD(fd);
}

int watcher_enable_uevents(Watcher *w) {
        int r;

        if (w->uevent_fd >= 0)
                return 0;
        r = device_timer_add(w);
        if (r < 0)
                return r;
        w->uevent_fd = netlink_open(NETLINK_KOBJECT_UEVENT, 1);
        if (w->uevent_fd < 0)
                return w->uevent_fd;
        r = sd_event_add_io(w->event, &w->uevent_source, w->uevent_fd, EPOLLIN, on_uevent, w);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(w->uevent_source, "watch-uevent");

        /* Links are a bonus: without them a NIC's IRQs wait for the safety check, as before. */
        w->link_fd = netlink_open(NETLINK_ROUTE, RTNLGRP_LINK);
        if (w->link_fd >= 0 && sd_event_add_io(w->event, &w->link_source, w->link_fd, EPOLLIN, on_link, w) >= 0)
                (void) sd_event_source_set_description(w->link_source, "watch-link");
        return 0;
}

/* A directory whose entries are objects (proc/irq/N): a new entry is a device event. */
static int on_objects(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Watcher *w = userdata;
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n <= 0)
                        break;
                for (char *p = buf; p < buf + n;) {
                        const struct inotify_event *ev = (const struct inotify_event *) p;
                        p += sizeof(*ev) + ev->len;
                        if (ev->len > 0 && (ev->mask & (IN_CREATE | IN_MOVED_TO)))
                                device_event(w, "created", ev->name);
                }
        }
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
        int r = device_timer_add(w);
        if (r < 0)
                return r;
        return dir_watch(w, w->root, rel, IN_CREATE | IN_MOVED_TO | IN_ONLYDIR, on_objects, "watch-objects",
                         &w->objects_fd, &w->objects_source);
}

/* ---- proc connector ---- */

static int on_kthread_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Watcher *w = userdata;
        if (w->cb.kthreads_forked)
                w->cb.kthreads_forked(w, w->userdata);
        return 0;
}

static int on_task_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Watcher *w = userdata;
        _cleanup_free_ int *pids = TAKE_PTR(w->task_pids), *gone = TAKE_PTR(w->task_gone);
        size_t n_pids = w->n_task_pids, n_gone = w->n_task_gone;
        bool overflow = w->task_overflow;

        w->n_task_pids = w->n_task_gone = 0;
        w->task_overflow = false;
        if (w->cb.tasks_changed && w->task_events)
                w->cb.tasks_changed(w, pids, n_pids, gone, n_gone, overflow, w->userdata);
        return 0;
}

/* Keeps a task id for the next tasks_changed; past TASK_PENDING_MAX only "look at all" is kept. */
static void task_push(Watcher *w, int **list, size_t *n, int pid) {
        if (w->task_overflow || pid <= 0)
                return;
        if (*n > 0 && (*list)[*n - 1] == pid)
                return; /* a fork and its exec, back to back */
        if (*n >= TASK_PENDING_MAX) {
                w->task_overflow = true;
                return;
        }
        if (*n % 256 == 0) {
                int *m = realloc(*list, (*n + 256) * sizeof(int));
                if (!m) {
                        w->task_overflow = true;
                        return;
                }
                *list = m;
        }
        (*list)[(*n)++] = pid;
}

static int on_proc(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Watcher *w = userdata;
        char buf[4096] __attribute__((aligned(8)));
        bool kthreads = false, tasks = false;

        for (;;) {
                ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
                if (n < 0 && errno == ENOBUFS) {
                        /* Overrun: events were lost, look anyway. */
                        kthreads = true;
                        if (w->task_events)
                                tasks = w->task_overflow = true;
                        continue;
                }
                if (n <= 0)
                        break;
                for (struct nlmsghdr *nh = (struct nlmsghdr *) buf; NLMSG_OK(nh, (size_t) n); nh = NLMSG_NEXT(nh, n)) {
                        struct cn_msg *cn = NLMSG_DATA(nh);
                        if (nh->nlmsg_len < NLMSG_LENGTH(sizeof(*cn) + sizeof(struct proc_event)) ||
                            cn->id.idx != CN_IDX_PROC)
                                continue;
                        struct proc_event *ev = (struct proc_event *) cn->data;
                        switch (ev->what) {
                        case PROC_EVENT_FORK:
                                if (ev->event_data.fork.parent_tgid == 2)
                                        kthreads = true;
                                else if (w->task_events) {
                                        task_push(w, &w->task_pids, &w->n_task_pids, ev->event_data.fork.child_pid);
                                        tasks = true;
                                }
                                break;
                        case PROC_EVENT_EXEC:
                        case PROC_EVENT_COMM:
                                /* exec and comm carry the task's id at the same place */
                                if (w->task_events) {
                                        task_push(w, &w->task_pids, &w->n_task_pids, ev->event_data.exec.process_pid);
                                        tasks = true;
                                }
                                break;
                        case PROC_EVENT_EXIT:
                                if (w->task_events) {
                                        task_push(w, &w->task_gone, &w->n_task_gone, ev->event_data.exit.process_pid);
                                        tasks = true;
                                }
                                break;
                        default:
                                break;
                        }
                }
        }
        if (kthreads && sd_event_source_get_enabled(w->kthread_source, NULL) == 0) {
                (void) sd_event_source_set_time_relative(w->kthread_source, KTHREAD_DELAY_USEC);
                (void) sd_event_source_set_enabled(w->kthread_source, SD_EVENT_ONESHOT);
        }
        /* Leading edge, like the knob files: a burst of forks is one check, `debounce` after the
         * first of them. */
        if (tasks && sd_event_source_get_enabled(w->task_source, NULL) == 0) {
                (void) sd_event_source_set_time_relative(w->task_source, w->debounce_usec);
                (void) sd_event_source_set_enabled(w->task_source, SD_EVENT_ONESHOT);
        }
        return 0;
}

/* In the kernel, not here: only what is asked for wakes rtpartd. BPF loads words in network byte
 * order, so the constants are compared as htonl() of themselves. */
static int proc_attach_filter(int fd, bool tasks) {
        const unsigned base = NLMSG_LENGTH(0) + offsetof(struct cn_msg, data);
        /* Forks whose parent is kthreadd (PID 2): new kernel threads. */
        struct sock_filter kthreads_only[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, base + offsetof(struct proc_event, what)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, htonl(PROC_EVENT_FORK), 0, 3),
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, base + offsetof(struct proc_event, event_data.fork.parent_tgid)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, htonl(2), 0, 1),
                BPF_STMT(BPF_RET | BPF_K, 0xffffffff),
                BPF_STMT(BPF_RET | BPF_K, 0),
        };
        /* Every fork, exec, comm change and exit; not uid/gid/sid/ptrace/coredump changes. */
        struct sock_filter with_tasks[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, base + offsetof(struct proc_event, what)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, htonl(PROC_EVENT_FORK), 3, 0),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, htonl(PROC_EVENT_EXEC), 2, 0),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, htonl(PROC_EVENT_EXIT), 1, 0),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, htonl(PROC_EVENT_COMM), 0, 1),
                BPF_STMT(BPF_RET | BPF_K, 0xffffffff),
                BPF_STMT(BPF_RET | BPF_K, 0),
        };
        struct sock_fprog prog = tasks
                ? (struct sock_fprog) { .len = ELEMENTSOF(with_tasks), .filter = with_tasks }
                : (struct sock_fprog) { .len = ELEMENTSOF(kthreads_only), .filter = kthreads_only };
        /* A second SO_ATTACH_FILTER replaces the first. */
        return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0 ? -errno : 0;
}

int watcher_set_task_events(Watcher *w, bool on) {
        if (w->task_events == on)
                return 0;
        w->task_events = on;
        if (!on) {
                w->n_task_pids = w->n_task_gone = 0;
                w->task_overflow = false;
                if (w->task_source)
                        (void) sd_event_source_set_enabled(w->task_source, SD_EVENT_OFF);
        }
        return w->proc_fd >= 0 ? proc_attach_filter(w->proc_fd, on) : 0;
}

int watcher_enable_proc_connector(Watcher *w) {
        _cleanup_close_ int fd = -EBADF;
        int r;

        if (w->proc_fd >= 0)
                return 0;
        fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_CONNECTOR);
        if (fd < 0)
                return -errno;
        struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC };
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return -errno;
        r = proc_attach_filter(fd, w->task_events);
        if (r < 0)
                return r;
        /* Every fork on the host can reach this socket: room for a burst between two reads. */
        (void) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &(int) { 1024 * 1024 }, sizeof(int));

        send_proc_op(fd, PROC_CN_MCAST_LISTEN);
        r = sd_event_add_io(w->event, &w->proc_source, fd, EPOLLIN, on_proc, w);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(w->proc_source, "watch-proc-connector");
        r = sd_event_add_time_relative(w->event, &w->kthread_source, CLOCK_MONOTONIC, KTHREAD_DELAY_USEC, 10000,
                                       on_kthread_timer, w);
        if (r < 0)
                return r;
        (void) sd_event_source_set_enabled(w->kthread_source, SD_EVENT_OFF);
        r = sd_event_add_time_relative(w->event, &w->task_source, CLOCK_MONOTONIC, w->debounce_usec, 1, on_task_timer,
                                       w);
        if (r < 0)
                return r;
        (void) sd_event_source_set_enabled(w->task_source, SD_EVENT_OFF);
        (void) sd_event_source_set_description(w->task_source, "watch-tasks");
        w->proc_fd = TAKE_FD(fd);
        return 0;
}

/* ---- the journal ---- */

static int on_journal(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Watcher *w = userdata;
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        bool changed = false;

        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n <= 0)
                        break;
                for (char *p = buf; p < buf + n;) {
                        const struct inotify_event *ev = (const struct inotify_event *) p;
                        p += sizeof(*ev) + ev->len;
                        if (ev->len > 0 && streq(ev->name, "state.json"))
                                changed = true;
                }
        }
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
