/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
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
#include <sys/socket.h>
#include <unistd.h>

#include "watch-internal.h"

/* The watcher's kernel events from netlink: uevents (devices added or bound, CPUs going offline or
 * coming online), links brought up, and the proc connector (new kernel threads; with task events,
 * user tasks forked, exec'd, renamed or gone). */

#define KTHREAD_DELAY_USEC (500 * 1000ULL) /* kthreadd forks, the thread then names itself */
#define TASK_PENDING_MAX 4096U             /* task ids kept per debounce; beyond: overflow */

/* ---- uevents and links ---- */

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
                        watcher_device_event(w, action, devpath);
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
                        watcher_device_event(w, "up", name);
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
        r = watcher_device_timer_add(w);
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

void watcher_netlink_done(Watcher *w) {
        sd_event_source_disable_unref(w->uevent_source);
        sd_event_source_disable_unref(w->link_source);
        if (w->uevent_fd >= 0)
                close(w->uevent_fd);
        if (w->link_fd >= 0)
                close(w->link_fd);
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
}
