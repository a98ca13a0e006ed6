/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "varlink-internal.h"

static void connection_account(VarlinkConnection *c);

/* ---- what connections hold: output, time ---- */

/* Between messages a connection holds no buffers: a Watch stream stays open for days, and the
 * answer to an Apply is tens of KiB. */
static void connection_release_output(VarlinkConnection *c) {
        if (c->out_off < c->out_len)
                return;
        free(c->out);
        c->out = NULL;
        c->out_cap = c->out_len = c->out_off = 0;
}

/* Queues one message and its NUL; tries to write it right away. A final reply is always queued
 * (the connection takes no other call until it is sent); a notification of a stream ends the
 * connection when what stays queued passes the stream's, its uid's or everybody's bound. */
int connection_send(VarlinkConnection *c, json_t *msg, bool stream) {
        VarlinkServer *s = c->server;
        _cleanup_free_ char *text = json_dumps(msg, JSON_COMPACT);
        if (!text)
                return -ENOMEM;
        size_t len = strlen(text) + 1;
        if (c->out_off > 0 && c->out_off == c->out_len)
                c->out_off = c->out_len = 0;
        if (c->out_len + len > c->out_cap) {
                size_t cap = MAX(c->out_cap * 2, c->out_len + len + 4096);
                char *n = realloc(c->out, cap);
                if (!n)
                        return -ENOMEM;
                c->out = n;
                c->out_cap = cap;
        }
        memcpy(c->out + c->out_len, text, len);
        c->out_len += len;

        while (c->out_off < c->out_len) {
                ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN)
                                c->dead = true;
                        break;
                }
                c->out_off += (size_t) n;
        }
        connection_release_output(c);
        connection_account(c);
        if (stream &&
            (c->queued > VARLINK_STREAM_OUTPUT_MAX || c->user->queued > VARLINK_UID_OUTPUT_MAX ||
             (!connection_is_root(c) && s->queued_others > VARLINK_OUTPUT_MAX))) {
                /* The peer stopped reading (a Watch client that hangs): drop it rather than grow. */
                c->dead = true;
                connection_update(c);
                return -ENOBUFS;
        }
        connection_update(c);
        return 0;
}

static void server_wake_stalled(VarlinkServer *s) {
        for (VarlinkConnection *c = s->connections; c; c = c->next)
                if (c->stalled) {
                        c->stalled = false;
                        (void) sd_event_source_set_enabled(c->defer, SD_EVENT_ONESHOT);
                }
}

void server_wake_throttled(VarlinkServer *s) {
        for (VarlinkConnection *c = s->connections; c; c = c->next)
                if (c->throttled) {
                        c->throttled = false;
                        (void) sd_event_source_set_enabled(c->defer, SD_EVENT_ONESHOT);
                        connection_update(c);
                }
}

/* Brings the uid's and the server's count of unsent output up to date with the connection's.
 * Output that falls below a bound lets the connections held back by it go on. */
static void connection_account(VarlinkConnection *c) {
        VarlinkServer *s = c->server;
        VarlinkUser *u = c->user;
        size_t now = c->out_len - c->out_off;

        if (now == c->queued)
                return;
        bool uid_full = u->queued >= VARLINK_UID_OUTPUT_MAX, others_full = s->queued_others >= VARLINK_OUTPUT_MAX;
        u->queued = u->queued - c->queued + now;
        s->queued = s->queued - c->queued + now;
        if (!connection_is_root(c))
                s->queued_others = s->queued_others - c->queued + now;
        c->queued = now;
        if ((uid_full && u->queued < VARLINK_UID_OUTPUT_MAX) || (others_full && s->queued_others < VARLINK_OUTPUT_MAX))
                server_wake_stalled(s);
}

/* Whether the connection may read and dispatch its next call: not while its own replies are
 * unsent, nor while its uid's output, or (but for root) everybody's, is at its bound, nor (but for
 * root) while its uid owes the server's time. */
static bool connection_may_take_call(VarlinkConnection *c) {
        VarlinkServer *s = c->server;
        if (c->out_off < c->out_len)
                return false;
        if (c->user->queued >= VARLINK_UID_OUTPUT_MAX ||
            (!connection_is_root(c) && s->queued_others >= VARLINK_OUTPUT_MAX)) {
                c->stalled = true;
                return false;
        }
        return server_may_dispatch(s, c);
}

/* Input buffers are counted as allocated, per uid and (but for root) for every uid together: a
 * client that sends the start of a large message on every connection it may open holds memory
 * until the idle timeout ends the connection. A buffer that may not grow stops reading its
 * connection (the kernel's socket buffer holds the rest; the client blocks). */
static void server_wake_starved(VarlinkServer *s) {
        /* Every message read frees a buffer: the walk only when some connection waits for it. */
        for (VarlinkConnection *c = s->connections; c && s->n_starved > 0; c = c->next)
                if (c->starved) {
                        c->starved = false;
                        s->n_starved--;
                        connection_update(c);
                }
}

static void connection_set_input(VarlinkConnection *c, char *buf, size_t cap) {
        VarlinkServer *s = c->server;
        bool shrink = cap < c->in_cap;
        c->user->buffered = c->user->buffered - c->in_cap + cap;
        s->buffered = s->buffered - c->in_cap + cap;
        if (!connection_is_root(c))
                s->buffered_others = s->buffered_others - c->in_cap + cap;
        c->in = buf;
        c->in_cap = cap;
        if (shrink)
                server_wake_starved(s);
}

static bool connection_may_grow_input(VarlinkConnection *c, size_t grow) {
        VarlinkServer *s = c->server;
        /* The first VARLINK_INPUT_FLOOR bytes are every connection's, whatever the others hold: a
         * few users' large messages or pipelined floods at the bounds do not keep everybody's
         * small calls unread until the idle timeout. */
        if (c->in_cap + grow <= VARLINK_INPUT_FLOOR)
                return true;
        if (c->user->buffered + grow > VARLINK_UID_INPUT_MAX ||
            (!connection_is_root(c) && s->buffered_others + grow > VARLINK_INPUT_MAX)) {
                if (!c->starved)
                        s->n_starved++;
                c->starved = true;
                return false;
        }
        return true;
}

static int server_on_idle(sd_event_source *src, uint64_t usec, void *userdata);

/* The timer on at `usec` (CLOCK_MONOTONIC), or off for UINT64_MAX. */
static void server_arm_idle(VarlinkServer *s, uint64_t usec) {
        if (usec == UINT64_MAX) {
                if (s->idle_source)
                        (void) sd_event_source_set_enabled(s->idle_source, SD_EVENT_OFF);
                return;
        }
        uint64_t accuracy = MAX(MIN(s->idle_timeout_usec / 10, (uint64_t) 1000000), (uint64_t) 1);
        if (!s->idle_source) {
                if (sd_event_add_time(s->event, &s->idle_source, CLOCK_MONOTONIC, usec, accuracy, server_on_idle, s) <
                    0)
                        return; /* idle connections then stay: they are still bounded in number */
                (void) sd_event_source_set_description(s->idle_source, "varlink-idle");
                return;
        }
        (void) sd_event_source_set_time(s->idle_source, usec);
        (void) sd_event_source_set_time_accuracy(s->idle_source, accuracy);
        (void) sd_event_source_set_enabled(s->idle_source, SD_EVENT_ONESHOT);
}

/* Closes the connections idle for the timeout and sets the timer for the next one to be, or
 * turns it off: no wake-up while no connection is idle. */
static void server_check_idle(VarlinkServer *s, uint64_t now) {
        uint64_t next = UINT64_MAX;
        for (VarlinkConnection *c = s->connections, *n; c; c = n) {
                n = c->next;
                if (c->idle_since == 0 || s->idle_timeout_usec == 0)
                        continue;
                if (now >= c->idle_since + s->idle_timeout_usec)
                        connection_free(c);
                else
                        next = MIN(next, c->idle_since + s->idle_timeout_usec);
        }
        server_arm_idle(s, next);
}

static int server_on_idle(sd_event_source *src, uint64_t usec, void *userdata) {
        VarlinkServer *s = userdata;
        server_check_idle(s, server_now(s));
        return 0;
}

void varlink_server_set_idle_timeout(VarlinkServer *s, uint64_t usec) {
        s->idle_timeout_usec = usec;
        server_check_idle(s, server_now(s));
}

/* No call in progress from now on. The timer, when on, is set for the earliest deadline, which is
 * no later than this one's. */
static void connection_set_idle(VarlinkConnection *c) {
        VarlinkServer *s = c->server;
        int enabled = SD_EVENT_OFF;

        if (c->idle_since != 0)
                return;
        c->idle_since = server_now(s);
        if (s->idle_timeout_usec == 0)
                return;
        if (s->idle_source)
                (void) sd_event_source_get_enabled(s->idle_source, &enabled);
        if (enabled == SD_EVENT_OFF)
                server_arm_idle(s, c->idle_since + s->idle_timeout_usec);
}

/* ---- connections ---- */

void connection_fail(VarlinkConnection *c, const char *error, const char *parameter) {
        /* A protocol violation: one error reply (not tied to a call), then the connection closes. */
        _cleanup_(json_decrefp) json_t *m =
                json_pack("{s:s, s:{s:s}}", "error", error, "parameters", "parameter", parameter);
        if (m)
                (void) connection_send(c, m, /* stream= */ false);
        c->closing = true;
        c->failed = true;
        connection_update(c);
}

/* Runs the complete messages in the input buffer, one call at a time. */
static void connection_process(VarlinkConnection *c) {
        size_t off = 0;
        while (!c->current && !c->closing && !c->dead && connection_may_take_call(c)) {
                char *nul = c->in_len > off ? memchr(c->in + off, 0, c->in_len - off) : NULL;
                if (!nul) {
                        /* A message, its NUL included, is at most VARLINK_MESSAGE_MAX. */
                        if (c->in_len - off >= VARLINK_MESSAGE_MAX)
                                connection_fail(c, VARLINK_ERROR_INVALID_PARAMETER, "message too long");
                        break;
                }
                size_t len = (size_t) (nul - (c->in + off));
                uint64_t start = varlink_now_usec();
                int r = connection_dispatch(c, c->in + off, len);
                server_charge(c->server, c, varlink_now_usec() - start);
                if (r < 0) {
                        c->dead = true;
                        break;
                }
                off += len + 1;
        }
        if (off > 0) {
                memmove(c->in, c->in + off, c->in_len - off);
                c->in_len -= off;
        }
        if (c->in_len == 0) {
                free(c->in);
                connection_set_input(c, NULL, 0);
        }
        /* The peer is done sending and nothing is left to answer: close once flushed. A streaming
         * call whose client shut down its side is over too. */
        if (c->eof && (!c->current || (c->current->flags & VARLINK_CALL_MORE)) &&
            !(c->in_len > 0 && memchr(c->in, 0, c->in_len))) {
                if (c->current)
                        c->dead = true;
                else
                        c->closing = true;
        }
        if (!c->dead && !c->closing && !c->current)
                connection_set_idle(c);
        connection_update(c);
}

static int connection_read(VarlinkConnection *c) {
        for (;;) {
                if (c->in_len >= VARLINK_MESSAGE_MAX)
                        return 0; /* enough to decide; the rest waits for the current call */
                if (c->in_cap - c->in_len < 4096 && c->in_cap < VARLINK_MESSAGE_MAX) {
                        size_t cap =
                                MIN(MAX(c->in_cap * 2, (size_t) VARLINK_INPUT_FLOOR), (size_t) VARLINK_MESSAGE_MAX);
                        if (connection_may_grow_input(c, cap - c->in_cap)) {
                                char *n = realloc(c->in, cap);
                                if (!n)
                                        return -ENOMEM;
                                connection_set_input(c, n, cap);
                        } else if (c->in_len == c->in_cap)
                                return 0; /* full, and may not grow: wait for others to shrink */
                }
                ssize_t n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return 0;
                        return -errno;
                }
                if (n == 0) {
                        c->eof = true;
                        return 0;
                }
                c->in_len += (size_t) n;
        }
}

static int connection_write(VarlinkConnection *c) {
        while (c->out_off < c->out_len) {
                ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return 0;
                        return -errno;
                }
                c->out_off += (size_t) n;
                connection_account(c);
        }
        connection_release_output(c);
        return 0;
}

/* Whether the connection is over and may be freed. A connection closed for a protocol violation
 * whose peer may still be sending (a message past VARLINK_MESSAGE_MAX, pipelined calls after a bad
 * one) is not closed at once: closing a socket with unread input makes the peer's next write
 * fail, and a client such as socat then exits before it reads the error reply. Once the reply is
 * written, our side is shut down and the peer's input read and dropped, up to
 * VARLINK_DRAIN_MAX, until it closes or the idle timeout ends the connection. */
static bool connection_finished(VarlinkConnection *c) {
        if (c->dead)
                return true;
        if (!c->closing || c->out_off < c->out_len)
                return false;
        if (!c->failed || c->eof)
                return true;
        if (!c->draining) {
                c->draining = true;
                (void) shutdown(c->fd, SHUT_WR);
                free(c->in);
                connection_set_input(c, NULL, 0);
                c->in_len = 0;
                c->idle_since = 0;
                connection_set_idle(c);
        }
        return false;
}

static int connection_drain(VarlinkConnection *c) {
        char buf[16384];
        for (;;) {
                ssize_t n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
                if (n < 0)
                        return errno == EINTR ? 0 : errno == EAGAIN ? 0 : -errno;
                if (n == 0)
                        return -ECONNRESET; /* the peer is done: close */
                c->drained += (size_t) n;
                if (c->drained > VARLINK_DRAIN_MAX)
                        return -EMSGSIZE;
        }
}

void connection_update(VarlinkConnection *c) {
        if (c->draining) {
                (void) sd_event_source_set_io_events(c->io, EPOLLIN);
                return;
        }
        if (c->dead || (c->closing && c->out_off == c->out_len)) {
                /* Freed from the loop, never under a caller that may still use the connection. */
                (void) sd_event_source_set_enabled(c->defer, SD_EVENT_ONESHOT);
                return;
        }
        uint32_t events = 0;
        /* Requests wait in the kernel while replies are unread: the client blocks, not we grow. */
        if (!c->eof && !c->closing && c->in_len < VARLINK_MESSAGE_MAX && c->out_off == c->out_len && !c->stalled &&
            !c->throttled && !(c->starved && c->in_len == c->in_cap))
                events |= EPOLLIN;
        if (c->out_off < c->out_len)
                events |= EPOLLOUT;
        (void) sd_event_source_set_io_events(c->io, events);
}

static int connection_on_io(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        VarlinkConnection *c = userdata;

        if (c->draining) {
                if (connection_drain(c) < 0 || revents & (EPOLLHUP | EPOLLERR))
                        connection_free(c);
                return 0;
        }
        if (revents & EPOLLOUT && connection_write(c) < 0)
                c->dead = true;
        if (!c->dead && revents & (EPOLLIN | EPOLLHUP)) {
                if (connection_read(c) < 0)
                        c->dead = true;
                else if (revents & EPOLLHUP && !(revents & EPOLLIN))
                        c->eof = true;
        }
        if (!c->dead)
                connection_process(c);
        /* Hung up (epoll reports that whatever we ask for): what waits for its replies to be read,
         * for others' to drain or for room to read the rest of its message never will, and would
         * wake us on every turn meanwhile. Nor will a call still to be answered (an Audit in its
         * window, a Watch stream) be read: its disconnect hook lets its method let go now. A
         * client that only shut its writing side (SHUT_WR) raises no EPOLLHUP and is answered. */
        if (revents & EPOLLHUP && !c->dead && !c->closing &&
            (c->stalled || c->starved || c->throttled || c->out_off < c->out_len || (c->current && !c->current->done)))
                c->dead = true;
        if (revents & EPOLLHUP && c->failed)
                c->eof = true; /* nothing more to drain */
        if (connection_finished(c))
                connection_free(c);
        else
                connection_update(c);
        return 0;
}

static int connection_on_defer(sd_event_source *src, void *userdata) {
        VarlinkConnection *c = userdata;
        if (c->draining)
                return 0;
        if (!c->dead)
                connection_process(c);
        if (connection_finished(c))
                connection_free(c);
        else
                connection_update(c);
        return 0;
}

int connection_new(VarlinkServer *s, int fd, uid_t uid, bool uid_valid, VarlinkUser *user) {
        VarlinkConnection *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->server = s;
        c->uid = uid;
        c->uid_valid = uid_valid;
        c->user = user;
        int r = sd_event_add_io(s->event, &c->io, fd, EPOLLIN, connection_on_io, c);
        if (r >= 0)
                r = sd_event_add_defer(s->event, &c->defer, connection_on_defer, c);
        if (r >= 0)
                r = sd_event_source_set_enabled(c->defer, SD_EVENT_OFF);
        if (r < 0) {
                sd_event_source_disable_unref(c->io);
                sd_event_source_disable_unref(c->defer);
                free(c);
                return r;
        }
        (void) sd_event_source_set_description(c->io, "varlink-connection");
        c->fd = fd;
        c->next = s->connections;
        if (c->next)
                c->next->prev = c;
        s->connections = c;
        s->n_connections++;
        user->n_connections++;
        connection_set_idle(c);
        return 0;
}

void connection_free(VarlinkConnection *c) {
        VarlinkServer *s = c->server;
        VarlinkCall *call = TAKE_PTR(c->current);
        if (call) {
                call->conn = NULL;
                if (!call->done && call->disconnect)
                        call->disconnect(call, call->disconnect_userdata);
                varlink_call_unref(call);
        }
        if (c->prev)
                c->prev->next = c->next;
        else
                s->connections = c->next;
        if (c->next)
                c->next->prev = c->prev;
        s->n_connections--;
        c->out_off = c->out_len;
        connection_account(c);
        free(c->in);
        if (c->starved)
                s->n_starved--;
        c->starved = false;
        connection_set_input(c, NULL, 0);
        if (--c->user->n_connections == 0)
                server_prune_users(s, server_now(s));
        if (s->n_connections == 0)
                server_arm_idle(s, UINT64_MAX);
        sd_event_source_disable_unref(c->io);
        sd_event_source_disable_unref(c->defer);
        close(c->fd);
        free(c->out);
        free(c);
}
