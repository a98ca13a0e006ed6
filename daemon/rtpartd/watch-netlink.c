/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <fcntl.h>
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

#include "config.h"
#include "dlopen-note.h"
#include "libnl.h"
#include "watch-internal.h"

/* The watcher's kernel events from netlink: uevents (devices added or bound, CPUs going offline or
 * coming online), links brought up, and the proc connector (new kernel threads; with task events,
 * user tasks forked, exec'd, renamed or gone). Each is a libnl socket (libnl-3: the socket, its
 * reads, message validation and attribute parsing; libnl-route-3: a link message as a link
 * object), loaded when rtpartd first listens (libnl.h): without libnl, rtpartd says so and new
 * devices wait for its safety check. */

DLOPEN_NOTE(libnl_route_note,
            "[{\"soname\":[\"" LIBNL_SONAME "\",\"" LIBNL_ROUTE_SONAME "\"],\"feature\":\"kernel-events\","
            "\"description\":\"rtpartd's uevent, link and proc connector sockets\",\"priority\":\"recommended\"}]");

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

/* One datagram from a netlink socket (nl_recv(): its length, and *ret a new buffer), or 0 when
 * there is none or it is not the kernel's (only the kernel speaks on the groups rtpartd joins:
 * anything else is dropped). *more: whether to read again (a datagram was there, or the kernel
 * dropped some in a burst: ENOBUFS, which libnl says as NLE_NOMEM, and *lost). */
static int netlink_recv(struct nl_sock *sk, unsigned char **ret, bool *more, bool *lost) {
        struct sockaddr_nl from = {};
        *ret = NULL;
        int n = sym_nl_recv(sk, &from, ret, NULL);
        *lost = n == -NLE_NOMEM;
        *more = n > 0 || *lost;
        if (n > 0 && from.nl_pid == 0)
                return n;
        free(*ret);
        *ret = NULL;
        return 0;
}

static int on_uevent(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Watcher *w = userdata;
        bool more = true, lost;

        for (unsigned round = 0; round < 64 && more; round++) {
                _cleanup_free_ unsigned char *data = NULL;
                int n = netlink_recv(w->uevent_sk, &data, &more, &lost);
                if (n <= 0)
                        continue;
                /* "ACTION@DEVPATH\0KEY=VALUE\0...": not a netlink message, its words end in NUL */
                _cleanup_free_ char *buf = malloc(n + 1);
                if (!buf)
                        continue;
                memcpy(buf, data, n);
                buf[n] = 0;
                const char *action = uevent_get(buf, n, "ACTION");
                const char *devpath = action ? uevent_get(buf, n, "DEVPATH") : NULL;
                if (action && (streq(action, "online") || streq(action, "offline")) && devpath &&
                    startswith(devpath, "/devices/system/cpu/cpu") && w->cb.cpus_changed)
                        w->cb.cpus_changed(w, w->userdata);
                const char *subsystem = action ? uevent_get(buf, n, "SUBSYSTEM") : NULL;
                const char *iface = subsystem && streq(subsystem, "net") ? uevent_get(buf, n, "INTERFACE") : NULL;
                if (iface && (streq(action, "add") || streq(action, "move")))
                        watcher_interface_event(w, action, iface);
                else if (action && (streq(action, "add") || streq(action, "bind")))
                        watcher_device_event(w, action, devpath);
        }
        return 0;
}

/* A link object of an RTM_NEWLINK (libnl-route-3 parsed it, its attributes checked against its
 * policy): an interface that is up. */
static void on_link_object(struct nl_object *obj, void *arg) {
        Watcher *w = arg;
        struct rtnl_link *link = (struct rtnl_link *) obj;
        if (!(sym_rtnl_link_get_flags(link) & IFF_UP))
                return;
        const char *ifname = sym_rtnl_link_get_name(link);
        if (ifname && *ifname)
                watcher_interface_event(w, "up", ifname);
        else {
                char name[32];
                snprintf(name, sizeof(name), "ifindex %d", sym_rtnl_link_get_ifindex(link));
                watcher_device_event(w, "up", name);
        }
}

/* Every message libnl read off the link socket, each checked (nlmsg_ok()) by nl_recvmsgs(). */
static int on_link_message(struct nl_msg *msg, void *arg) {
        if (sym_nlmsg_get_src(msg)->nl_pid != 0)
                return NL_SKIP;
        if (sym_nlmsg_hdr(msg)->nlmsg_type == RTM_NEWLINK)
                (void) sym_nl_msg_parse(msg, on_link_object, arg);
        return NL_OK;
}

/* A network interface brought up: its driver requested its IRQs in ndo_open(), before the kernel
 * set IFF_UP and sent this RTM_NEWLINK; no uevent says so. */
static int on_link(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Watcher *w = userdata;
        for (unsigned round = 0; round < 64; round++) {
                int k = sym_nl_recvmsgs_default(w->link_sk);
                if (k < 0 && k != -NLE_NOMEM && k != -NLE_MSG_TRUNC && k != -NLE_MSG_OVERFLOW)
                        break; /* NLE_AGAIN: read them all */
        }
        return 0;
}

/* A libnl socket of protocol, non-blocking, in multicast group (a number, not a bitmask), with
 * room for a burst between two reads (a driver probing many devices, every fork on the host).
 * No sequence numbers: what comes on a group is the kernel's own, asked by nobody. */
static int netlink_open(Watcher *w, int protocol, int group, struct nl_sock **ret, int *ret_fd) {
        int k = w->netlink_error ? -EOPNOTSUPP : libnl_load(LIBNL_ROUTE, "rtpartd's kernel events", &w->netlink_error);
        if (k < 0)
                return k;
        struct nl_sock *sk = sym_nl_socket_alloc();
        if (!sk)
                return -ENOMEM;
        sym_nl_socket_disable_seq_check(sk);
        sym_nl_socket_disable_auto_ack(sk);
        k = sym_nl_connect(sk, protocol);
        if (k >= 0)
                k = sym_nl_socket_set_nonblocking(sk);
        if (k >= 0)
                k = sym_nl_socket_add_membership(sk, group);
        if (k < 0) {
                sym_nl_socket_free(sk);
                return k == -NLE_PERM ? -EPERM : k == -NLE_NOACCESS ? -EACCES : -EIO;
        }
        (void) sym_nl_socket_set_buffer_size(sk, 1024 * 1024, 0);
        int fd = sym_nl_socket_get_fd(sk);
        (void) fcntl(fd, F_SETFD, FD_CLOEXEC);
        *ret = sk;
        *ret_fd = fd;
        return 0;
}

int watcher_enable_uevents(Watcher *w) {
        int r;

        if (w->uevent_fd >= 0)
                return 0;
        r = watcher_device_timer_add(w);
        if (r < 0)
                return r;
        r = netlink_open(w, NETLINK_KOBJECT_UEVENT, 1, &w->uevent_sk, &w->uevent_fd);
        if (r < 0)
                return r;
        r = sd_event_add_io(w->event, &w->uevent_source, w->uevent_fd, EPOLLIN, on_uevent, w);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(w->uevent_source, "watch-uevent");

        /* Links are a bonus: without them a NIC's IRQs wait for the safety check, as before. */
        if (netlink_open(w, NETLINK_ROUTE, RTNLGRP_LINK, &w->link_sk, &w->link_fd) < 0)
                return 0;
        if (sym_nl_socket_modify_cb(w->link_sk, NL_CB_VALID, NL_CB_CUSTOM, on_link_message, w) >= 0 &&
            sd_event_add_io(w->event, &w->link_source, w->link_fd, EPOLLIN, on_link, w) >= 0)
                (void) sd_event_source_set_description(w->link_source, "watch-link");
        return 0;
}

/* PROC_CN_MCAST_LISTEN or _IGNORE: a connector message (NLMSG_DONE, as the connector takes it). */
static void send_proc_op(struct nl_sock *sk, enum proc_cn_mcast_op op) {
        char buf[sizeof(struct cn_msg) + sizeof(op)] __attribute__((aligned(8))) = {};
        struct cn_msg *cn = (struct cn_msg *) buf;
        cn->id.idx = CN_IDX_PROC;
        cn->id.val = CN_VAL_PROC;
        cn->len = sizeof(op);
        memcpy(cn->data, &op, sizeof(op));
        (void) sym_nl_send_simple(sk, NLMSG_DONE, 0, buf, sizeof(buf));
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

/* One proc connector event; sets *kthreads or *tasks when it is one of theirs. */
static void proc_event(Watcher *w, const struct proc_event *ev, bool *kthreads, bool *tasks) {
        switch (ev->what) {
        case PROC_EVENT_FORK:
                if (ev->event_data.fork.parent_tgid == 2)
                        *kthreads = true;
                else if (w->task_events) {
                        task_push(w, &w->task_pids, &w->n_task_pids, ev->event_data.fork.child_pid);
                        *tasks = true;
                }
                break;
        case PROC_EVENT_EXEC:
        case PROC_EVENT_COMM:
                /* exec and comm carry the task's id at the same place */
                if (w->task_events) {
                        task_push(w, &w->task_pids, &w->n_task_pids, ev->event_data.exec.process_pid);
                        *tasks = true;
                }
                break;
        case PROC_EVENT_EXIT:
                if (w->task_events) {
                        task_push(w, &w->task_gone, &w->n_task_gone, ev->event_data.exit.process_pid);
                        *tasks = true;
                }
                break;
        default:
                break;
        }
}

static int on_proc(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Watcher *w = userdata;
        bool kthreads = false, tasks = false, more = true, lost;

        while (more) {
                _cleanup_free_ unsigned char *buf = NULL;
                int n = netlink_recv(w->proc_sk, &buf, &more, &lost);
                if (lost) {
                        /* Overrun: events were lost, look anyway. */
                        kthreads = true;
                        if (w->task_events)
                                tasks = w->task_overflow = true;
                        continue;
                }
                /* Each message checked by libnl (whole, its header) before its payload is read. */
                for (struct nlmsghdr *nh = (struct nlmsghdr *) buf; n > 0 && sym_nlmsg_ok(nh, n);
                     nh = sym_nlmsg_next(nh, &n)) {
                        if (!sym_nlmsg_valid_hdr(nh, sizeof(struct cn_msg) + sizeof(struct proc_event)))
                                continue;
                        const struct cn_msg *cn = sym_nlmsg_data(nh);
                        if (cn->id.idx != CN_IDX_PROC)
                                continue;
                        /* The event follows a 36-byte header: copied out, as its 64-bit fields
                         * (timestamp_ns) are not aligned where the message holds them. */
                        struct proc_event ev;
                        memcpy(&ev, cn->data, sizeof(ev));
                        proc_event(w, &ev, &kthreads, &tasks);
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
        struct nl_sock *sk = NULL;
        int fd, r;

        if (w->proc_fd >= 0)
                return 0;
        /* Every fork on the host can reach this socket: netlink_open() leaves room for a burst. */
        r = netlink_open(w, NETLINK_CONNECTOR, CN_IDX_PROC, &sk, &fd);
        if (r < 0)
                return r;
        w->proc_sk = sk;
        r = proc_attach_filter(fd, w->task_events);
        if (r < 0)
                return r;
        send_proc_op(sk, PROC_CN_MCAST_LISTEN);
        w->proc_fd = fd;
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
        return 0;
}

const char *watcher_netlink_error(const Watcher *w) {
        return w->netlink_error;
}

void watcher_netlink_done(Watcher *w) {
        sd_event_source_disable_unref(w->uevent_source);
        sd_event_source_disable_unref(w->link_source);
        /* nl_socket_free() closes the socket */
        if (w->uevent_sk)
                sym_nl_socket_free(w->uevent_sk);
        if (w->link_sk)
                sym_nl_socket_free(w->link_sk);
        sd_event_source_disable_unref(w->proc_source);
        sd_event_source_disable_unref(w->kthread_source);
        sd_event_source_disable_unref(w->task_source);
        free(w->task_pids);
        free(w->task_gone);
        free(w->netlink_error);
        if (w->proc_sk) {
                /* The kernel counts listeners; one that leaves without saying so keeps the proc
                 * connector busy for every process on the host. */
                if (w->proc_fd >= 0)
                        send_proc_op(w->proc_sk, PROC_CN_MCAST_IGNORE);
                sym_nl_socket_free(w->proc_sk);
        }
}
