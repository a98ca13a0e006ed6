/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "varlink.h"

static const char varlink_service_description[] =
        "# The Varlink Service Interface is provided by every varlink service. It\n"
        "# describes the service and the interfaces it implements.\n"
        "interface org.varlink.service\n"
        "\n"
        "# Get a list of all the interfaces a service provides and information\n"
        "# about the implementation.\n"
        "method GetInfo() -> (\n"
        "  vendor: string,\n"
        "  product: string,\n"
        "  version: string,\n"
        "  url: string,\n"
        "  interfaces: []string\n"
        ")\n"
        "\n"
        "# Get the description of an interface that is implemented by this service.\n"
        "method GetInterfaceDescription(interface: string) -> (description: string)\n"
        "\n"
        "# The requested interface was not found.\n"
        "error InterfaceNotFound (interface: string)\n"
        "\n"
        "# The requested method was not found\n"
        "error MethodNotFound (method: string)\n"
        "\n"
        "# The interface defines the requested method, but the service does not\n"
        "# implement it.\n"
        "error MethodNotImplemented (method: string)\n"
        "\n"
        "# One of the passed parameters is invalid.\n"
        "error InvalidParameter (parameter: string)\n"
        "\n"
        "# Client is denied access\n"
        "error PermissionDenied ()\n"
        "\n"
        "# Method is expected to be called with 'more' set to true, but wasn't\n"
        "error ExpectedMore ()\n";

typedef struct VarlinkInterface {
        const char *name;
        const char *description;
        const VarlinkMethod *methods;
} VarlinkInterface;

typedef struct VarlinkConnection VarlinkConnection;

/* What one uid holds: its connections and their unsent output, and when its refusals were last
 * reported. Kept while it has connections, or while a refusal report is recent. */
typedef struct VarlinkUser {
        struct VarlinkUser *next;
        uid_t uid;
        unsigned n_connections;
        size_t queued;
        size_t buffered;       /* input buffers of its connections (allocated bytes) */
        uint64_t refused_usec; /* when a refusal was last reported; 0: never */
        unsigned n_refused;    /* refusals not reported yet */
} VarlinkUser;

/* Users kept for refusal reports only, beyond those with connections: past this, refusals of new
 * uids are reported under one shared entry. */
#define VARLINK_USERS_MAX (2 * VARLINK_CONNECTIONS_MAX)

struct VarlinkServer {
        sd_event *event;
        void *userdata;
        char *vendor, *product, *version, *url;
        VarlinkInterface *interfaces;
        size_t n_interfaces;
        int listen_fd;
        sd_event_source *listen_source;
        char *bound_path; /* a socket file we created, removed again on free */
        VarlinkConnection *connections;
        size_t n_connections;
        VarlinkUser *users, overflow_user;
        size_t n_users;
        size_t queued, queued_others;     /* unsent output: all of it, that of uids other than 0 */
        size_t buffered, buffered_others; /* input buffers: all of them, those of uids other than 0 */
        size_t n_starved;                 /* connections whose input buffer may not grow */
        uint64_t idle_timeout_usec;
        sd_event_source *idle_source; /* on while a connection is idle */
        VarlinkRefusedFunc refused;
        void *refused_userdata;
};

struct VarlinkConnection {
        VarlinkServer *server;
        VarlinkConnection *next, *prev;
        int fd;
        sd_event_source *io, *defer;
        uid_t uid;
        bool uid_valid;
        VarlinkUser *user;
        size_t queued;       /* out_len - out_off, as counted in user and server */
        uint64_t idle_since; /* no call in progress since; 0 while one is */
        bool stalled;        /* held back by its uid's or everybody's output bound */
        bool starved;        /* its input buffer may not grow: its uid's or everybody's input bound */
        char *in;
        size_t in_len, in_cap;
        char *out;
        size_t out_len, out_cap, out_off;
        VarlinkCall *current; /* the call being answered; later messages wait in `in` */
        bool eof;             /* the peer sent everything it will send */
        bool closing;         /* close once the output is written */
        bool failed;          /* … after a protocol violation: drain the peer's input first */
        bool draining;        /* our side shut down; the peer's input is read and dropped */
        size_t drained;
        bool dead; /* close now (I/O error, overrun) */
};

struct VarlinkCall {
        unsigned n_ref;
        VarlinkConnection *conn; /* NULL once the connection is gone */
        char *method;
        VarlinkCallFlags flags;
        bool done;
        void (*disconnect)(VarlinkCall *c, void *userdata);
        void *disconnect_userdata;
};

static void connection_update(VarlinkConnection *c);
static void connection_free(VarlinkConnection *c);
static void connection_account(VarlinkConnection *c);

int varlink_server_new(sd_event *event, VarlinkServer **ret) {
        VarlinkServer *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->event = sd_event_ref(event);
        s->listen_fd = -EBADF;
        s->idle_timeout_usec = VARLINK_IDLE_TIMEOUT_USEC;
        s->overflow_user.uid = VARLINK_UID_INVALID;
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
        sd_event_source_disable_unref(s->idle_source);
        sd_event_source_disable_unref(s->listen_source);
        if (s->listen_fd >= 0)
                close(s->listen_fd);
        if (s->bound_path)
                (void) unlink(s->bound_path);
        free(s->bound_path);
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

int varlink_server_add_interface(VarlinkServer *s, const char *name, const char *description,
                                 const VarlinkMethod *methods) {
        VarlinkInterface *n = realloc(s->interfaces, (s->n_interfaces + 1) * sizeof(VarlinkInterface));
        if (!n)
                return -ENOMEM;
        s->interfaces = n;
        s->interfaces[s->n_interfaces++] = (VarlinkInterface) { name, description, methods };
        return 0;
}

void varlink_server_set_userdata(VarlinkServer *s, void *userdata) {
        s->userdata = userdata;
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

static uint64_t server_now(VarlinkServer *s) {
        uint64_t now;
        if (sd_event_now(s->event, CLOCK_MONOTONIC, &now) < 0)
                now = 0;
        return MAX(now, (uint64_t) 1);
}

static bool uid_is_root(uid_t uid, bool valid) {
        return valid && uid == 0;
}

static bool connection_is_root(VarlinkConnection *c) {
        return uid_is_root(c->uid, c->uid_valid);
}

static VarlinkUser *server_find_user(VarlinkServer *s, uid_t uid) {
        for (VarlinkUser *u = s->users; u; u = u->next)
                if (u->uid == uid)
                        return u;
        return NULL;
}

/* A user entry that holds nothing and reports nothing soon goes. */
static void server_prune_users(VarlinkServer *s, uint64_t now) {
        for (VarlinkUser **p = &s->users; *p;) {
                VarlinkUser *u = *p;
                if (u->n_connections == 0 && u->queued == 0 &&
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

/* ---- calls ---- */

VarlinkCall *varlink_call_ref(VarlinkCall *c) {
        if (c)
                c->n_ref++;
        return c;
}

VarlinkCall *varlink_call_unref(VarlinkCall *c) {
        if (!c || --c->n_ref > 0)
                return NULL;
        free(c->method);
        free(c);
        return NULL;
}

int varlink_call_get_peer_uid(VarlinkCall *c, uid_t *ret) {
        if (!c->conn)
                return -ENOTCONN;
        if (!c->conn->uid_valid)
                return -ENODATA;
        *ret = c->conn->uid;
        return 0;
}

const char *varlink_call_method(VarlinkCall *c) {
        return c->method;
}

bool varlink_call_is_connected(VarlinkCall *c) {
        return c->conn && !c->conn->dead;
}

void varlink_call_set_disconnect(VarlinkCall *c, void (*func)(VarlinkCall *c, void *userdata), void *userdata) {
        c->disconnect = func;
        c->disconnect_userdata = userdata;
}

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
static int connection_send(VarlinkConnection *c, json_t *msg, bool stream) {
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

static int call_send(VarlinkCall *c, json_t *msg, bool final) {
        _cleanup_(json_decrefp) json_t *m = msg;
        if (!m)
                return -ENOMEM;
        if (c->done)
                return -EALREADY;
        if (final)
                c->done = true;
        VarlinkConnection *conn = c->conn;
        if (!conn || conn->dead)
                return -ENOTCONN;
        int r = 0;
        if (!(c->flags & VARLINK_CALL_ONEWAY))
                r = connection_send(conn, m, /* stream= */ !final);
        if (final && conn->current == c) {
                conn->current = NULL;
                varlink_call_unref(c);
                /* Later pipelined calls wait in the buffer: go on with them from the loop. */
                (void) sd_event_source_set_enabled(conn->defer, SD_EVENT_ONESHOT);
        }
        return r;
}

static json_t *params_or_empty(json_t *p) {
        return p ? p : json_object();
}

int varlink_call_reply(VarlinkCall *c, json_t *parameters) {
        return call_send(c, json_pack("{s:o}", "parameters", params_or_empty(parameters)), true);
}

int varlink_call_notify(VarlinkCall *c, json_t *parameters) {
        if (!(c->flags & VARLINK_CALL_MORE)) {
                json_decref(parameters);
                return -EINVAL;
        }
        return call_send(c, json_pack("{s:o, s:b}", "parameters", params_or_empty(parameters), "continues", true),
                         false);
}

int varlink_call_error(VarlinkCall *c, const char *error, json_t *parameters) {
        return call_send(c, json_pack("{s:s, s:o}", "error", error, "parameters", params_or_empty(parameters)), true);
}

int varlink_call_error_invalid_parameter(VarlinkCall *c, const char *parameter) {
        return varlink_call_error(c, VARLINK_ERROR_INVALID_PARAMETER, json_pack("{s:s}", "parameter", parameter));
}

/* ---- org.varlink.service ---- */

static const VarlinkInterface *find_interface(VarlinkServer *s, const char *name, size_t len) {
        for (size_t i = 0; i < s->n_interfaces; i++)
                if (strlen(s->interfaces[i].name) == len && strncmp(s->interfaces[i].name, name, len) == 0)
                        return &s->interfaces[i];
        return NULL;
}

static int service_get_info(VarlinkCall *call, VarlinkServer *s) {
        json_t *ifs = json_array();
        if (!ifs)
                return -ENOMEM;
        json_array_append_new(ifs, json_string("org.varlink.service"));
        for (size_t i = 0; i < s->n_interfaces; i++)
                json_array_append_new(ifs, json_string(s->interfaces[i].name));
        return varlink_call_reply(call,
                                  json_pack("{s:s, s:s, s:s, s:s, s:o}", "vendor", strempty(s->vendor), "product",
                                            strempty(s->product), "version", strempty(s->version), "url",
                                            strempty(s->url), "interfaces", ifs));
}

static int service_get_description(VarlinkCall *call, VarlinkServer *s, json_t *params) {
        json_t *v = json_object_get(params, "interface");
        const char *name = json_string_value(v);
        if (!name)
                return varlink_call_error_invalid_parameter(call, "interface");
        if (streq(name, "org.varlink.service"))
                return varlink_call_reply(call, json_pack("{s:s}", "description", varlink_service_description));
        const VarlinkInterface *i = find_interface(s, name, strlen(name));
        if (!i)
                return varlink_call_error(call, VARLINK_ERROR_INTERFACE_NOT_FOUND,
                                          json_pack("{s:s}", "interface", name));
        return varlink_call_reply(call, json_pack("{s:s}", "description", i->description));
}

/* ---- what connections hold: output, time ---- */

static void server_wake_stalled(VarlinkServer *s) {
        for (VarlinkConnection *c = s->connections; c; c = c->next)
                if (c->stalled) {
                        c->stalled = false;
                        (void) sd_event_source_set_enabled(c->defer, SD_EVENT_ONESHOT);
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
 * unsent, nor while its uid's output, or (but for root) everybody's, is at its bound. */
static bool connection_may_take_call(VarlinkConnection *c) {
        VarlinkServer *s = c->server;
        if (c->out_off < c->out_len)
                return false;
        if (c->user->queued >= VARLINK_UID_OUTPUT_MAX ||
            (!connection_is_root(c) && s->queued_others >= VARLINK_OUTPUT_MAX)) {
                c->stalled = true;
                return false;
        }
        return true;
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

static void connection_fail(VarlinkConnection *c, const char *error, const char *parameter) {
        /* A protocol violation: one error reply (not tied to a call), then the connection closes. */
        _cleanup_(json_decrefp) json_t *m =
                json_pack("{s:s, s:{s:s}}", "error", error, "parameters", "parameter", parameter);
        if (m)
                (void) connection_send(c, m, /* stream= */ false);
        c->closing = true;
        c->failed = true;
        connection_update(c);
}

/* Whether the message holds more than VARLINK_MESSAGE_VALUES_MAX values: the '{', '[' and ','
 * outside strings, counted before the message is parsed. */
static bool message_has_too_many_values(const char *text, size_t len) {
        size_t n = 0;
        bool string = false;
        for (size_t i = 0; i < len; i++) {
                char ch = text[i];
                if (string) {
                        if (ch == '\\')
                                i++;
                        else if (ch == '"')
                                string = false;
                } else if (ch == '"')
                        string = true;
                else if ((ch == '{' || ch == '[' || ch == ',') && ++n > VARLINK_MESSAGE_VALUES_MAX)
                        return true;
        }
        return false;
}

static int connection_dispatch(VarlinkConnection *c, const char *text, size_t len) {
        VarlinkServer *s = c->server;
        json_error_t jerr;

        c->idle_since = 0; /* the client is active: its idle time starts again after this call */
        if (message_has_too_many_values(text, len)) {
                /* Parsed, "[{},{},…]" takes ~80 times its size (a JSON object per 3 bytes). */
                connection_fail(c, VARLINK_ERROR_INVALID_PARAMETER, "message has too many values");
                return 0;
        }
        _cleanup_(json_decrefp) json_t *msg = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
        const char *method;
        json_t *params, *more, *oneway;

        if (!msg || !json_is_object(msg)) {
                connection_fail(c, VARLINK_ERROR_INVALID_PARAMETER, msg ? "message is not a JSON object" : jerr.text);
                return 0;
        }
        method = json_string_value(json_object_get(msg, "method"));
        params = json_object_get(msg, "parameters");
        more = json_object_get(msg, "more");
        oneway = json_object_get(msg, "oneway");
        if (!method) {
                connection_fail(c, VARLINK_ERROR_INVALID_PARAMETER, "method");
                return 0;
        }
        if ((params && !json_is_object(params)) || (more && !json_is_boolean(more)) ||
            (oneway && !json_is_boolean(oneway)) || (json_is_true(more) && json_is_true(oneway))) {
                connection_fail(c, VARLINK_ERROR_INVALID_PARAMETER,
                                params && !json_is_object(params) ? "parameters"
                                        : json_is_true(oneway)    ? "oneway"
                                                                  : "more");
                return 0;
        }

        VarlinkCall *call = calloc(1, sizeof(*call));
        if (!call)
                return -ENOMEM;
        *call = (VarlinkCall) {
                .n_ref = 1,
                .conn = c,
                .method = strdup(method),
                .flags =
                        (json_is_true(more) ? VARLINK_CALL_MORE : 0) | (json_is_true(oneway) ? VARLINK_CALL_ONEWAY : 0),
        };
        if (!call->method) {
                free(call);
                return -ENOMEM;
        }
        c->current = call;
        _cleanup_(json_decrefp) json_t *empty = params ? NULL : json_object();
        if (!params)
                params = empty;

        /* Held until the end of this function: a synchronous final reply drops the connection's. */
        _cleanup_(varlink_call_unrefp) VarlinkCall *hold = varlink_call_ref(call);
        int r;
        const char *dot = strrchr(method, '.');
        if (streq(method, "org.varlink.service.GetInfo"))
                r = service_get_info(call, s);
        else if (streq(method, "org.varlink.service.GetInterfaceDescription"))
                r = service_get_description(call, s, params);
        else if (!dot || dot == method)
                r = varlink_call_error(call, VARLINK_ERROR_INTERFACE_NOT_FOUND,
                                       json_pack("{s:s}", "interface", method));
        else {
                const VarlinkInterface *i = find_interface(s, method, (size_t) (dot - method));
                const VarlinkMethod *m = NULL;
                for (const VarlinkMethod *j = i ? i->methods : NULL; j && j->name && !m; j++)
                        if (streq(j->name, method))
                                m = j;
                if (!i) {
                        _cleanup_free_ char *iname = strndup(method, (size_t) (dot - method));
                        r = varlink_call_error(call, VARLINK_ERROR_INTERFACE_NOT_FOUND,
                                               json_pack("{s:s?}", "interface", iname));
                } else if (!m)
                        r = varlink_call_error(call, VARLINK_ERROR_METHOD_NOT_FOUND,
                                               json_pack("{s:s}", "method", method));
                else
                        r = m->func(call, params, call->flags, s->userdata);
        }
        if (r < 0 && !call->done)
                (void) varlink_call_error(call, VARLINK_ERROR_SYSTEM, json_pack("{s:i}", "errno", -r));
        if (call->flags & VARLINK_CALL_ONEWAY && !call->done) {
                /* Nobody waits for an answer: the call is over as far as the connection goes. */
                call->done = true;
                if (c->current == call) {
                        c->current = NULL;
                        varlink_call_unref(call);
                }
        }
        return 0;
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
                if (connection_dispatch(c, c->in + off, len) < 0) {
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

static void connection_update(VarlinkConnection *c) {
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
            !(c->starved && c->in_len == c->in_cap))
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
            (c->stalled || c->starved || c->out_off < c->out_len || (c->current && !c->current->done)))
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

static void connection_free(VarlinkConnection *c) {
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

/* One error reply to a connection not taken, then it is closed; the refusal is reported once per
 * uid per interval, with the number refused since. */
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
        if (r < 0) {
                server_refuse(s, cfd, uid, r);
                return r;
        }
        int fl = fcntl(cfd, F_GETFL);
        if (fl < 0 || fcntl(cfd, F_SETFL, fl | O_NONBLOCK) < 0 || fcntl(cfd, F_SETFD, FD_CLOEXEC) < 0)
                return -errno;
        u = server_add_user(s, uid);
        if (!u)
                return -ENOMEM;
        VarlinkConnection *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->server = s;
        c->uid = uid;
        c->uid_valid = uid_valid;
        c->user = u;
        r = sd_event_add_io(s->event, &c->io, cfd, EPOLLIN, connection_on_io, c);
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
        c->fd = TAKE_FD(cfd);
        c->next = s->connections;
        if (c->next)
                c->next->prev = c;
        s->connections = c;
        s->n_connections++;
        u->n_connections++;
        connection_set_idle(c);
        return 0;
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
                /* Over a limit the new connection gets its refusal and is closed at once: the old
                 * ones are served. */
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

/* The address of the socket at `path` (absolute). A path too long for sun_path goes through its
 * directory's fd (*ret_dfd, to be closed after bind or connect). */
static int socket_address(const char *path, struct sockaddr_un *sa, int *ret_dfd) {
        *sa = (struct sockaddr_un) { .sun_family = AF_UNIX };
        if (!path || path[0] != '/')
                return -EINVAL;
        if (strlen(path) < sizeof(sa->sun_path)) {
                strcpy(sa->sun_path, path);
                return 0;
        }
        const char *slash = strrchr(path, '/');
        _cleanup_free_ char *dir = strndup(path, (size_t) (slash - path));
        if (!dir)
                return -ENOMEM;
        int dfd = open(*dir ? dir : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        *ret_dfd = dfd;
        int n = snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d/%s", dfd, slash + 1);
        if (n < 0 || (size_t) n >= sizeof(sa->sun_path))
                return -ENAMETOOLONG;
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

/* ---- the client ---- */

struct VarlinkClient {
        int fd;
        char *in;
        size_t in_len, in_cap;
};

VarlinkClient *varlink_client_free(VarlinkClient *c) {
        if (!c)
                return NULL;
        if (c->fd >= 0)
                close(c->fd);
        free(c->in);
        free(c);
        return NULL;
}

int varlink_client_get_fd(VarlinkClient *c) {
        return c->fd;
}

int varlink_client_connect(const char *path, VarlinkClient **ret) {
        struct sockaddr_un sa;
        _cleanup_close_ int fd = -EBADF, dfd = -EBADF;

        int r = socket_address(path, &sa, &dfd);
        if (r < 0)
                return r;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return -errno;
        VarlinkClient *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->fd = TAKE_FD(fd);
        *ret = c;
        return 0;
}

int varlink_client_new(int fd, VarlinkClient **ret) {
        VarlinkClient *c = calloc(1, sizeof(*c));
        if (!c) {
                close(fd);
                return -ENOMEM;
        }
        c->fd = fd;
        *ret = c;
        return 0;
}

int varlink_client_send(VarlinkClient *c, const char *method, json_t *parameters, VarlinkCallFlags flags) {
        _cleanup_(json_decrefp) json_t *msg =
                json_pack("{s:s, s:o}", "method", method, "parameters", params_or_empty(parameters));
        if (!msg)
                return -ENOMEM;
        if (flags & VARLINK_CALL_MORE)
                json_object_set_new(msg, "more", json_true());
        if (flags & VARLINK_CALL_ONEWAY)
                json_object_set_new(msg, "oneway", json_true());
        _cleanup_free_ char *text = json_dumps(msg, JSON_COMPACT);
        if (!text)
                return -ENOMEM;
        size_t len = strlen(text) + 1, off = 0;
        while (off < len) {
                ssize_t n = send(c->fd, text + off, len - off, MSG_NOSIGNAL);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return errno == EPIPE ? -ECONNRESET : -errno;
                }
                off += (size_t) n;
        }
        return 0;
}

static uint64_t client_now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

int varlink_client_recv(VarlinkClient *c, uint64_t timeout_usec, json_t **ret) {
        uint64_t end = timeout_usec == UINT64_MAX ? UINT64_MAX : client_now_usec() + timeout_usec;
        size_t scanned = 0;

        for (;;) {
                char *nul = c->in_len > scanned ? memchr(c->in + scanned, 0, c->in_len - scanned) : NULL;
                if (nul) {
                        size_t len = (size_t) (nul - c->in);
                        json_t *m = json_loadb(c->in, len, 0, NULL);
                        memmove(c->in, nul + 1, c->in_len - len - 1);
                        c->in_len -= len + 1;
                        if (!json_is_object(m)) {
                                json_decref(m);
                                return -EBADMSG;
                        }
                        *ret = m;
                        return 0;
                }
                scanned = c->in_len;
                if (c->in_len > VARLINK_CLIENT_MESSAGE_MAX)
                        return -EBADMSG;
                if (c->in_cap - c->in_len < 4096) {
                        size_t cap = MAX(c->in_cap * 2, (size_t) 65536);
                        char *n = realloc(c->in, cap);
                        if (!n)
                                return -ENOMEM;
                        c->in = n;
                        c->in_cap = cap;
                }
                ssize_t n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, MSG_DONTWAIT);
                if (n > 0) {
                        c->in_len += (size_t) n;
                        continue;
                }
                if (n == 0)
                        return -ECONNRESET;
                if (errno == EINTR)
                        continue;
                if (errno != EAGAIN)
                        return -errno;
                if (timeout_usec == 0)
                        return -EAGAIN;
                uint64_t now = client_now_usec();
                if (now >= end)
                        return -ETIMEDOUT;
                struct pollfd p = { .fd = c->fd, .events = POLLIN };
                int t = end == UINT64_MAX ? -1 : (int) MIN((end - now + 999) / 1000, (uint64_t) INT32_MAX);
                if (poll(&p, 1, t) < 0 && errno != EINTR)
                        return -errno;
        }
}

int varlink_client_call(VarlinkClient *c, const char *method, json_t *parameters, uint64_t timeout_usec,
                        json_t **ret_parameters, char **ret_error) {
        _cleanup_(json_decrefp) json_t *m = NULL;
        int r = varlink_client_send(c, method, parameters, 0);
        if (r < 0) {
                /* A server that did not take the connection said why before it closed it. */
                if (r != -ECONNRESET || varlink_client_recv(c, 0, &m) < 0 || !json_object_get(m, "error"))
                        return r;
        } else {
                r = varlink_client_recv(c, timeout_usec, &m);
                if (r < 0)
                        return r;
        }
        const char *error = json_string_value(json_object_get(m, "error"));
        json_t *p = json_object_get(m, "parameters");
        char *e = error ? strdup(error) : NULL;
        if (error && !e)
                return -ENOMEM;
        *ret_parameters = p ? json_incref(p) : json_object();
        *ret_error = e;
        return 0;
}
