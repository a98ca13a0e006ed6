/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the parts of the varlink server share: the server (varlink-server.c: connections taken or
 * refused, users, listening), its connections (varlink-connection.c: input, output, the bounds
 * and timers of varlink.h) and the calls on them (varlink-call.c: a message parsed and
 * dispatched, the replies, org.varlink.service). The client is varlink-client.c. */

#include <sys/un.h>

#include "varlink.h"

typedef struct VarlinkInterface {
        const char *name;
        const char *description;
        const VarlinkMethod *methods;
        void *userdata;
} VarlinkInterface;

/* Time a uid's calls kept the server busy and is still owed (VARLINK_UID_BUSY_SHARE): owed
 * µs as of `at` (CLOCK_MONOTONIC µs), paid back at 1 µs per `share` µs of time passing. */
typedef struct VarlinkBusy {
        uint64_t owed, at;
} VarlinkBusy;

typedef struct VarlinkConnection VarlinkConnection;

/* What one uid holds: its connections and their unsent output, the server's time it owes, and when
 * its refusals were last reported. Kept while it has connections, owes time, or while a refusal
 * report is recent. */
typedef struct VarlinkUser {
        struct VarlinkUser *next;
        uid_t uid;
        unsigned n_connections;
        size_t queued;
        size_t buffered;       /* input buffers of its connections (allocated bytes) */
        uint64_t refused_usec; /* when a refusal was last reported; 0: never */
        unsigned n_refused;    /* refusals not reported yet */
        VarlinkBusy busy;      /* for uids other than 0 */
} VarlinkUser;

/* Users kept for refusal reports only, beyond those with connections: past this, refusals of new
 * uids are reported under one shared entry. */
#define VARLINK_USERS_MAX (2 * VARLINK_CONNECTIONS_MAX)

typedef struct VarlinkLinger VarlinkLinger;

struct VarlinkServer {
        sd_event *event;
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
        VarlinkLinger *lingering; /* refused connections read until their first message */
        size_t n_lingering;
        bool time_shares;                 /* VARLINK_UID_BUSY_SHARE applies */
        VarlinkBusy busy_others;          /* the time every uid but 0 owes, together */
        sd_event_source *throttle_source; /* on while a connection waits for its uid's time */
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
        bool throttled;      /* held back until its uid has paid back the server's time */
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

/* ---- varlink-server.c ---- */

uint64_t server_now(VarlinkServer *s);
/* CLOCK_MONOTONIC now, in µs (the loop's time is that of its last wake-up). */
uint64_t varlink_now_usec(void);
static inline bool uid_is_root(uid_t uid, bool valid) {
        return valid && uid == 0;
}
static inline bool connection_is_root(VarlinkConnection *c) {
        return uid_is_root(c->uid, c->uid_valid);
}
/* Drops the user entries that hold, owe and report nothing. */
void server_prune_users(VarlinkServer *s, uint64_t now);
const VarlinkInterface *server_find_interface(VarlinkServer *s, const char *name, size_t len);
/* The time a call of c took (usec), owed by its uid unless it is root. */
void server_charge(VarlinkServer *s, VarlinkConnection *c, uint64_t usec);
/* Whether c's uid may have a call dispatched now; if not, c is throttled until it may. */
bool server_may_dispatch(VarlinkServer *s, VarlinkConnection *c);
/* The address of the socket at path (absolute). A path too long for sun_path goes through its
 * directory's fd (*ret_dfd, to be closed after bind or connect). */
int socket_address(const char *path, struct sockaddr_un *sa, int *ret_dfd);

/* ---- varlink-connection.c ---- */

/* Serves the peer on fd (non-blocking; taken on success), counted for user. */
int connection_new(VarlinkServer *s, int fd, uid_t uid, bool uid_valid, VarlinkUser *user);
void connection_free(VarlinkConnection *c);
/* Sets the connection's events from its state, or has it freed from the loop. */
void connection_update(VarlinkConnection *c);
/* Queues one message (see varlink-connection.c). */
int connection_send(VarlinkConnection *c, json_t *msg, bool stream);
/* A protocol violation: one error reply (not tied to a call), then the connection closes. */
void connection_fail(VarlinkConnection *c, const char *error, const char *parameter);
/* Lets the connections held back by their uid's time go on. */
void server_wake_throttled(VarlinkServer *s);

/* ---- varlink-call.c ---- */

/* Parses one message (text, len bytes, no NUL) and runs its call; a negative errno ends the
 * connection. */
int connection_dispatch(VarlinkConnection *c, const char *text, size_t len);
