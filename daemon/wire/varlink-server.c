/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "varlink-internal.h"

static void linger_free(VarlinkLinger *l);
static void interface_done(VarlinkInterface *i);

int varlink_server_new(sd_event *event, VarlinkServer **ret) {
        VarlinkServer *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->event = sd_event_ref(event);
        s->listen_fd = -EBADF;
        s->idle_timeout_usec = VARLINK_IDLE_TIMEOUT_USEC;
        s->overflow_user.uid = VARLINK_UID_INVALID;
        s->time_shares = true;
        *ret = s;
        return 0;
}

VarlinkServer *varlink_server_free(VarlinkServer *s) {
        if (!s)
                return NULL;
        while (s->connections)
                connection_free(s->connections);
        while (s->users) {
                VarlinkUser *u = s->users;
                s->users = u->next;
                free(u);
        }
        while (s->lingering)
                linger_free(s->lingering);
        sd_event_source_disable_unref(s->throttle_source);
        sd_event_source_disable_unref(s->idle_source);
        sd_event_source_disable_unref(s->listen_source);
        if (s->listen_fd >= 0)
                close(s->listen_fd);
        if (s->bound_path)
                (void) unlink(s->bound_path);
        free(s->bound_path);
        for (size_t i = 0; i < s->n_interfaces; i++)
                interface_done(&s->interfaces[i]);
        free(s->interfaces);
        free(s->vendor);
        free(s->product);
        free(s->version);
        free(s->url);
        sd_event_unref(s->event);
        free(s);
        return NULL;
}

static int set_string(char **p, const char *v) {
        char *n = strdup(strempty(v));
        if (!n)
                return -ENOMEM;
        free(*p);
        *p = n;
        return 0;
}

int varlink_server_set_info(VarlinkServer *s, const char *vendor, const char *product, const char *version,
                            const char *url) {
        if (set_string(&s->vendor, vendor) < 0 || set_string(&s->product, product) < 0 ||
            set_string(&s->version, version) < 0 || set_string(&s->url, url) < 0)
                return -ENOMEM;
        return 0;
}

static void interface_done(VarlinkInterface *i) {
        for (size_t k = 0; i->methods && i->methods[k].name; k++)
                free((char *) i->methods[k].name);
        free((VarlinkMethod *) i->methods);
        free((char *) i->name);
        free((char *) i->description);
}

int varlink_server_add_interface(VarlinkServer *s, const char *name, const char *description,
                                 const VarlinkMethod *methods, void *userdata) {
        size_t n = 0;
        while (methods[n].name)
                n++;
        VarlinkInterface i = { strdup(name), strdup(description), calloc(n + 1, sizeof(VarlinkMethod)), userdata };
        VarlinkMethod *copy = (VarlinkMethod *) i.methods;
        for (size_t k = 0; copy && k < n; k++)
                if ((copy[k] = (VarlinkMethod) { strdup(methods[k].name), methods[k].func }).name == NULL) {
                        interface_done(&i);
                        return -ENOMEM;
                }
        VarlinkInterface *a = realloc(s->interfaces, (s->n_interfaces + 1) * sizeof(VarlinkInterface));
        if (!i.name || !i.description || !copy || !a) {
                interface_done(&i);
                return -ENOMEM;
        }
        s->interfaces = a;
        s->interfaces[s->n_interfaces++] = i;
        return 0;
}

const VarlinkInterface *server_find_interface(VarlinkServer *s, const char *name, size_t len) {
        for (size_t i = 0; i < s->n_interfaces; i++)
                if (strlen(s->interfaces[i].name) == len && strncmp(s->interfaces[i].name, name, len) == 0)
                        return &s->interfaces[i];
        return NULL;
}

size_t varlink_server_n_connections(VarlinkServer *s) {
        return s->n_connections;
}

size_t varlink_server_queued_bytes(VarlinkServer *s) {
        return s->queued;
}

size_t varlink_server_buffered_bytes(VarlinkServer *s) {
        return s->buffered;
}

void varlink_server_set_refused(VarlinkServer *s, VarlinkRefusedFunc func, void *userdata) {
        s->refused = func;
        s->refused_userdata = userdata;
}

uint64_t server_now(VarlinkServer *s) {
        uint64_t now;
        if (sd_event_now(s->event, CLOCK_MONOTONIC, &now) < 0)
                now = 0;
        return MAX(now, (uint64_t) 1);
}

uint64_t varlink_now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

static VarlinkUser *server_find_user(VarlinkServer *s, uid_t uid) {
        for (VarlinkUser *u = s->users; u; u = u->next)
                if (u->uid == uid)
                        return u;
        return NULL;
}

static uint64_t busy_owed(const VarlinkBusy *b, unsigned share, uint64_t now) {
        uint64_t paid = now > b->at ? (now - b->at) / share : 0;
        return b->owed > paid ? b->owed - paid : 0;
}

/* A user entry that holds nothing, owes nothing and reports nothing soon goes: one that owes
 * time stays, or a client that connects anew for each call would never owe any. */
void server_prune_users(VarlinkServer *s, uint64_t now) {
        for (VarlinkUser **p = &s->users; *p;) {
                VarlinkUser *u = *p;
                if (u->n_connections == 0 && u->queued == 0 && busy_owed(&u->busy, VARLINK_UID_BUSY_SHARE, now) == 0 &&
                    (u->refused_usec == 0 || now >= u->refused_usec + VARLINK_REFUSED_LOG_INTERVAL_USEC)) {
                        *p = u->next;
                        s->n_users--;
                        free(u);
                } else
                        p = &u->next;
        }
}

static VarlinkUser *server_add_user(VarlinkServer *s, uid_t uid) {
        VarlinkUser *u = server_find_user(s, uid);
        if (u)
                return u;
        u = calloc(1, sizeof(*u));
        if (!u)
                return NULL;
        u->uid = uid;
        u->next = s->users;
        s->users = u;
        s->n_users++;
        return u;
}

/* ---- the server's time ----
 *
 * One call runs at a time, so a uid whose calls take long (a Plan on a host of 1024 CPUs) delays
 * everybody's, root's and the daemon's own work (drift detection) included. What a call of a uid
 * other than 0 took is owed, per uid and by all of them together, and paid back as time passes, at
 * 1 µs per VARLINK_UID_BUSY_SHARE (VARLINK_OTHERS_BUSY_SHARE) µs. While more than
 * VARLINK_BUSY_BURST_USEC is owed, the uid's connections take no call: they are read no further,
 * and their clients wait; nothing is refused. */

static void busy_charge(VarlinkBusy *b, unsigned share, uint64_t now, uint64_t usec) {
        b->owed = busy_owed(b, share, now) + usec;
        b->at = now;
}

/* When what b owes is down to the burst again; 0 if it is now. */
static uint64_t busy_ready(const VarlinkBusy *b, unsigned share, uint64_t now) {
        uint64_t owed = busy_owed(b, share, now);
        return owed > VARLINK_BUSY_BURST_USEC ? now + (owed - VARLINK_BUSY_BURST_USEC) * share : 0;
}

void varlink_server_set_time_shares(VarlinkServer *s, bool on) {
        s->time_shares = on;
        if (!on)
                server_wake_throttled(s);
}

void server_charge(VarlinkServer *s, VarlinkConnection *c, uint64_t usec) {
        if (connection_is_root(c) || !s->time_shares)
                return;
        uint64_t now = varlink_now_usec();
        busy_charge(&c->user->busy, VARLINK_UID_BUSY_SHARE, now, usec);
        busy_charge(&s->busy_others, VARLINK_OTHERS_BUSY_SHARE, now, usec);
}

static int server_on_throttle(sd_event_source *src, uint64_t usec, void *userdata) {
        server_wake_throttled(userdata);
        return 0;
}

bool server_may_dispatch(VarlinkServer *s, VarlinkConnection *c) {
        if (connection_is_root(c) || !s->time_shares)
                return true;
        uint64_t now = varlink_now_usec();
        uint64_t ready = MAX(busy_ready(&c->user->busy, VARLINK_UID_BUSY_SHARE, now),
                             busy_ready(&s->busy_others, VARLINK_OTHERS_BUSY_SHARE, now));
        if (ready == 0)
                return true;
        c->throttled = true;
        /* One timer for the server, at the earliest time a throttled connection may go on. */
        uint64_t at = ready;
        int enabled = SD_EVENT_OFF;
        if (s->throttle_source) {
                (void) sd_event_source_get_enabled(s->throttle_source, &enabled);
                if (enabled != SD_EVENT_OFF)
                        (void) sd_event_source_get_time(s->throttle_source, &at);
                at = MIN(at, ready);
                (void) sd_event_source_set_time(s->throttle_source, at);
                (void) sd_event_source_set_enabled(s->throttle_source, SD_EVENT_ONESHOT);
        } else if (sd_event_add_time(s->event, &s->throttle_source, CLOCK_MONOTONIC, at, 1000, server_on_throttle, s) >=
                   0)
                (void) sd_event_source_set_description(s->throttle_source, "varlink-throttle");
        else
                c->throttled = false; /* without a timer it would wait for ever: let it go */
        return !c->throttled;
}

/* ---- refused connections ---- */

/* A refused connection is not closed at once: a client that sends its call before it reads would
 * see its write fail (EPIPE, the socket closed under it) and never the refusal, which waits unread
 * in its socket. It is read, and what it sends dropped, until its first message ends (its NUL),
 * it closes, it sent VARLINK_MESSAGE_MAX, or VARLINK_LINGER_USEC pass; then closed. At most
 * VARLINK_LINGER_MAX linger at once: past them, a refused connection is closed at once. */
struct VarlinkLinger {
        VarlinkLinger *next, *prev;
        VarlinkServer *server;
        int fd;
        sd_event_source *io, *timer;
        size_t read;
};

static void linger_free(VarlinkLinger *l) {
        VarlinkServer *s = l->server;
        if (l->prev)
                l->prev->next = l->next;
        else
                s->lingering = l->next;
        if (l->next)
                l->next->prev = l->prev;
        s->n_lingering--;
        sd_event_source_disable_unref(l->io);
        sd_event_source_disable_unref(l->timer);
        close(l->fd);
        free(l);
}

static int linger_on_io(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        VarlinkLinger *l = userdata;
        char buf[4096];
        for (;;) {
                ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN && !(revents & (EPOLLHUP | EPOLLERR)))
                        return 0;
                /* The first message is in (the peer reads the refusal next), or the peer is gone. */
                if (n <= 0 || memchr(buf, 0, (size_t) n) || (l->read += (size_t) n) >= VARLINK_MESSAGE_MAX)
                        break;
        }
        linger_free(l);
        return 0;
}

static int linger_on_timer(sd_event_source *src, uint64_t usec, void *userdata) {
        linger_free(userdata);
        return 0;
}

/* Takes fd: it lingers, or it is closed. */
static void server_linger(VarlinkServer *s, int fd) {
        _cleanup_close_ int cfd = fd;
        if (s->n_lingering >= VARLINK_LINGER_MAX)
                return;
        VarlinkLinger *l = calloc(1, sizeof(*l));
        if (!l)
                return;
        *l = (VarlinkLinger) { .server = s, .fd = TAKE_FD(cfd), .next = s->lingering };
        if (l->next)
                l->next->prev = l;
        s->lingering = l;
        s->n_lingering++;
        if (sd_event_add_io(s->event, &l->io, l->fd, EPOLLIN, linger_on_io, l) < 0 ||
            sd_event_add_time_relative(s->event, &l->timer, CLOCK_MONOTONIC, VARLINK_LINGER_USEC, 10000,
                                       linger_on_timer, l) < 0) {
                linger_free(l);
                return;
        }
        (void) sd_event_source_set_description(l->io, "varlink-linger");
}

/* One error reply to a connection not taken, which then lingers (above); the refusal is reported
 * once per * uid per interval, with the number refused since. Takes fd. */
static void server_refuse(VarlinkServer *s, int fd, uid_t uid, int reason) {
        char msg[200];
        if (reason == -EUSERS)
                snprintf(msg, sizeof(msg), "too many connections from uid %u: at most %u at once per user",
                         (unsigned) uid, VARLINK_CONNECTIONS_PER_UID_MAX);
        else
                snprintf(msg, sizeof(msg), "too many connections: at most %u at once, the last %u of them for root",
                         VARLINK_CONNECTIONS_MAX, VARLINK_CONNECTIONS_ROOT_RESERVE);
        _cleanup_(json_decrefp) json_t *m =
                json_pack("{s:s, s:{s:s}}", "error", VARLINK_ERROR_TOO_MANY_CONNECTIONS, "parameters", "message", msg);
        _cleanup_free_ char *text = m ? json_dumps(m, JSON_COMPACT) : NULL;
        if (text) /* a fresh socket's buffer takes it whole, or the peer is gone */
                (void) send(fd, text, strlen(text) + 1, MSG_DONTWAIT | MSG_NOSIGNAL);
        server_linger(s, fd);

        uint64_t now = server_now(s);
        server_prune_users(s, now);
        VarlinkUser *u = server_find_user(s, uid);
        if (!u && s->n_users < VARLINK_USERS_MAX)
                u = server_add_user(s, uid);
        if (!u)
                u = &s->overflow_user;
        u->n_refused++;
        if (u->refused_usec != 0 && now < u->refused_usec + VARLINK_REFUSED_LOG_INTERVAL_USEC)
                return;
        if (s->refused)
                s->refused(s, uid, reason, u->n_refused, s->refused_userdata);
        u->refused_usec = now;
        u->n_refused = 0;
}

static int server_add_connection(VarlinkServer *s, int fd, uid_t uid, bool uid_valid) {
        _cleanup_close_ int cfd = fd;
        bool root = uid_is_root(uid, uid_valid);
        int r;

        if (!uid_valid)
                uid = VARLINK_UID_INVALID; /* one more uid, not root's */
        /* Root takes any slot; everybody else leaves the last ones to root. */
        VarlinkUser *u = server_find_user(s, uid);
        r = 0;
        if (s->n_connections >= VARLINK_CONNECTIONS_MAX ||
            (!root && s->n_connections >= VARLINK_CONNECTIONS_MAX - VARLINK_CONNECTIONS_ROOT_RESERVE))
                r = -EMFILE;
        else if (!root && u && u->n_connections >= VARLINK_CONNECTIONS_PER_UID_MAX)
                r = -EUSERS;
        int fl = fcntl(cfd, F_GETFL);
        if (fl < 0 || fcntl(cfd, F_SETFL, fl | O_NONBLOCK) < 0 || fcntl(cfd, F_SETFD, FD_CLOEXEC) < 0)
                return -errno;
        if (r < 0) {
                server_refuse(s, TAKE_FD(cfd), uid, r);
                return r;
        }
        u = server_add_user(s, uid);
        if (!u)
                return -ENOMEM;
        r = connection_new(s, cfd, uid, uid_valid, u);
        if (r >= 0)
                cfd = -EBADF; /* the connection's */
        return r;
}

int varlink_server_add_connection(VarlinkServer *s, int fd) {
        struct ucred uc;
        socklen_t sl = sizeof(uc);
        bool valid = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &sl) >= 0 && sl == sizeof(uc) &&
                uc.uid != VARLINK_UID_INVALID;
        return server_add_connection(s, fd, valid ? uc.uid : VARLINK_UID_INVALID, valid);
}

int varlink_server_add_connection_uid(VarlinkServer *s, int fd, uid_t uid) {
        return server_add_connection(s, fd, uid, uid != VARLINK_UID_INVALID);
}

static int server_on_accept(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        VarlinkServer *s = userdata;
        for (;;) {
                int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (cfd < 0)
                        return 0; /* EAGAIN, or a connection that died before we took it */
                /* Over a limit the new connection gets its refusal and lingers until it sent its
                 * call: the old ones are served. */
                (void) varlink_server_add_connection(s, cfd);
        }
}

int varlink_server_listen_fd(VarlinkServer *s, int fd) {
        _cleanup_close_ int lfd = fd;
        if (s->listen_source)
                return -EBUSY;
        int fl = fcntl(lfd, F_GETFL);
        if (fl < 0 || fcntl(lfd, F_SETFL, fl | O_NONBLOCK) < 0)
                return -errno;
        int r = sd_event_add_io(s->event, &s->listen_source, lfd, EPOLLIN, server_on_accept, s);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(s->listen_source, "varlink-listen");
        s->listen_fd = TAKE_FD(lfd);
        return 0;
}

int varlink_server_listen_address(VarlinkServer *s, const char *path, mode_t mode) {
        struct sockaddr_un sa;
        _cleanup_close_ int fd = -EBADF, dfd = -EBADF;
        struct stat st;

        if (!path || path[0] != '/')
                return -EINVAL;
        if (lstat(path, &st) >= 0) {
                if (!S_ISSOCK(st.st_mode))
                        return -EEXIST;
                (void) unlink(path); /* left by an earlier run */
        }
        int r = socket_address(path, &sa, &dfd);
        if (r < 0)
                return r;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        mode_t old = umask(~mode & 0777);
        r = bind(fd, (struct sockaddr *) &sa, sizeof(sa));
        umask(old);
        if (r < 0)
                return -errno;
        if (listen(fd, SOMAXCONN) < 0) {
                r = -errno;
                (void) unlink(path);
                return r;
        }
        r = varlink_server_listen_fd(s, TAKE_FD(fd));
        if (r < 0) {
                (void) unlink(path);
                return r;
        }
        free(s->bound_path);
        s->bound_path = strdup(path);
        return 0;
}
