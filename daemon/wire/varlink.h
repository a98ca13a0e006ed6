/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A small varlink server (https://varlink.org) on sd-event: JSON messages, each terminated by a
 * NUL byte, over a unix stream socket. Calls on one connection are answered in order, one at a
 * time (a client may pipeline them); a call with "more" may answer many times until it sends a
 * final reply; "oneway" calls get no answer. A message longer than VARLINK_MESSAGE_MAX, a message
 * that is not a JSON object naming a method, or a stream that outgrows its output bounds (a peer
 * that stopped reading) ends the connection, after an error reply where one can be sent.
 * org.varlink.service (GetInfo, GetInterfaceDescription) is built in.
 *
 * The socket is open to every local user; what one user can take is bounded, and root always
 * gets in:
 * - The peer's uid comes from SO_PEERCRED at accept.
 * - Connections: VARLINK_CONNECTIONS_MAX in all; each uid other than 0 at most
 *   VARLINK_CONNECTIONS_PER_UID_MAX at once; other uids together never take the last
 *   VARLINK_CONNECTIONS_ROOT_RESERVE slots, which are uid 0's. A refused connection gets one
 *   VARLINK_ERROR_TOO_MANY_CONNECTIONS reply and lingers: it is read (and what it sends dropped)
 *   until its first message ends, it closes, or VARLINK_LINGER_USEC pass, then closed, so that a
 *   client that sends its call before it reads gets the refusal, not EPIPE (at most
 *   VARLINK_LINGER_MAX linger; past them a refused connection is closed at once). Refusals are
 *   reported through the refused callback at most once per uid per
 *   VARLINK_REFUSED_LOG_INTERVAL_USEC.
 * - Time: calls run one at a time, so one that takes long delays everybody's. The time the calls
 *   of a uid other than 0 take is owed by that uid and paid back at 1 µs per
 *   VARLINK_UID_BUSY_SHARE µs passing (every uid but 0 together: per VARLINK_OTHERS_BUSY_SHARE
 *   µs); while one owes more than VARLINK_BUSY_BURST_USEC, its connections take no call (nor are
 *   they read): their clients wait, nothing is refused, and a call of root's waits at most for the
 *   one call running.
 * - Idle: a connection with no call in progress (a "more" subscription is one) for
 *   VARLINK_IDLE_TIMEOUT_USEC is closed. One timer for the server, off while no connection is
 *   idle.
 * - Output: a connection's next request is not read nor dispatched while it has unsent reply
 *   bytes (its client blocks once the kernel's socket buffer is full). A "more" stream whose
 *   queued notifications exceed VARLINK_STREAM_OUTPUT_MAX is ended (connection closed), as
 *   is one that takes its uid past VARLINK_UID_OUTPUT_MAX or, for uids other than 0, all of
 *   them past VARLINK_OUTPUT_MAX. No connection of a uid takes a call while that uid has
 *   VARLINK_UID_OUTPUT_MAX queued, nor one of a uid other than 0 while they all have
 *   VARLINK_OUTPUT_MAX queued. A final reply is always queued whole, so each bound is passed by
 *   at most one reply: total queued output <= VARLINK_OUTPUT_MAX (16 MiB, every uid but 0) +
 *   VARLINK_UID_OUTPUT_MAX (4 MiB, uid 0) + 2 replies (rtpartd's largest is a Plan document,
 *   95 KiB compact for the 64-CPU EPYC fixture; it grows with the host's CPUs and IRQs). A call
 *   kept open and answered later adds its one reply (rtpartd keeps none but streams).
 * - Input: one message, its NUL included, is at most VARLINK_MESSAGE_MAX, and so is one
 *   connection's input buffer. Every connection may buffer VARLINK_INPUT_FLOOR whatever the
 *   others hold (a small call is always read); beyond it, the buffers of one uid's connections
 *   together are at most VARLINK_UID_INPUT_MAX, and those of every uid but 0 together
 *   VARLINK_INPUT_MAX: a buffer that would pass a bound stops growing, and its connection is not
 *   read until others shrink (or the idle timeout ends it). Total buffered input <=
 *   VARLINK_INPUT_MAX (16 MiB, every uid but 0) + VARLINK_UID_INPUT_MAX (4 MiB, uid 0) +
 *   VARLINK_CONNECTIONS_MAX * VARLINK_INPUT_FLOOR (4 MiB). A message is parsed only when it has
 *   at most VARLINK_MESSAGE_VALUES_MAX values (the '{', '[' and ',' outside its strings; else it
 *   is a protocol error, as a message too long is): parsed, it takes at most about a MiB beside
 *   its text, not the ~80 MiB of a 1 MiB "[{},{},…]". */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "macro.h"

#define VARLINK_MESSAGE_MAX (1U << 20)   /* one incoming message, NUL included */
#define VARLINK_MESSAGE_VALUES_MAX 4096U /* objects, arrays and commas of one incoming message */
#define VARLINK_CONNECTIONS_MAX 256U
#define VARLINK_CONNECTIONS_PER_UID_MAX 16U  /* for every uid but 0 */
#define VARLINK_CONNECTIONS_ROOT_RESERVE 16U /* of VARLINK_CONNECTIONS_MAX, for uid 0 only */
#define VARLINK_IDLE_TIMEOUT_USEC (60U * 1000000ULL)
#define VARLINK_STREAM_OUTPUT_MAX (1U << 20) /* queued notifications of one "more" call */
#define VARLINK_UID_OUTPUT_MAX (4U << 20)    /* queued output of one uid's connections */
#define VARLINK_OUTPUT_MAX (16U << 20)       /* queued output of every uid but 0, together */
#define VARLINK_DRAIN_MAX (4U << 20)         /* input dropped after a protocol error */
#define VARLINK_UID_INPUT_MAX (4U << 20)     /* input buffers of one uid's connections */
#define VARLINK_INPUT_MAX (16U << 20)        /* input buffers of every uid but 0, together */
#define VARLINK_INPUT_FLOOR (16U << 10)      /* of each connection's input buffer, beside the bounds */
#define VARLINK_REFUSED_LOG_INTERVAL_USEC (60U * 1000000ULL)
#define VARLINK_LINGER_MAX 64U                   /* refused connections read until their call */
#define VARLINK_LINGER_USEC (2U * 1000000ULL)    /* … for at most this long */
#define VARLINK_UID_BUSY_SHARE 8U                /* a uid but 0: 1/8 of the server's time … */
#define VARLINK_OTHERS_BUSY_SHARE 3U             /* every uid but 0 together: 1/3 … */
#define VARLINK_BUSY_BURST_USEC (100U * 1000ULL) /* … beyond a burst of 100 ms */
#define VARLINK_UID_INVALID ((uid_t) -1)
/* What a client the server does not take reads before the connection closes. */
#define VARLINK_ERROR_TOO_MANY_CONNECTIONS "org.rtpart.Manager.TooManyConnections"
/* What a client accepts as one message (the largest reply rtpartd makes is far below). */
#define VARLINK_CLIENT_MESSAGE_MAX (64U << 20)

typedef struct VarlinkServer VarlinkServer;
typedef struct VarlinkCall VarlinkCall;

typedef enum VarlinkCallFlags {
        VARLINK_CALL_MORE = 1 << 0,
        VARLINK_CALL_ONEWAY = 1 << 1,
} VarlinkCallFlags;

/* Handles one call. It answers through varlink_call_reply()/_error() now, or keeps a reference to
 * the call and answers later (a "more" call notifies any number of times first). Returning a
 * negative errno without answering sends VARLINK_ERROR_SYSTEM with {"errno": N}. */
typedef int (*VarlinkMethodFunc)(VarlinkCall *call, json_t *parameters, VarlinkCallFlags flags, void *userdata);

typedef struct VarlinkMethod {
        const char *name; /* fully qualified: "org.rtpart.Manager.Plan" */
        VarlinkMethodFunc func;
} VarlinkMethod;

/* The errors of org.varlink.service. */
#define VARLINK_ERROR_INTERFACE_NOT_FOUND "org.varlink.service.InterfaceNotFound"
#define VARLINK_ERROR_METHOD_NOT_FOUND "org.varlink.service.MethodNotFound"
#define VARLINK_ERROR_METHOD_NOT_IMPLEMENTED "org.varlink.service.MethodNotImplemented"
#define VARLINK_ERROR_INVALID_PARAMETER "org.varlink.service.InvalidParameter"
#define VARLINK_ERROR_PERMISSION_DENIED "org.varlink.service.PermissionDenied"
#define VARLINK_ERROR_EXPECTED_MORE "org.varlink.service.ExpectedMore"
/* A method failed with an errno and said nothing more (as systemd's services spell it). */
#define VARLINK_ERROR_SYSTEM "io.systemd.System"

int varlink_server_new(sd_event *event, VarlinkServer **ret);
VarlinkServer *varlink_server_free(VarlinkServer *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(VarlinkServer *, varlink_server_free);

/* What GetInfo answers. The strings are copied. */
int varlink_server_set_info(VarlinkServer *s, const char *vendor, const char *product, const char *version,
                            const char *url);
/* Adds an interface: its name, its description in the varlink interface definition language (as
 * GetInterfaceDescription returns it) and its methods (terminated by an entry with name NULL),
 * which get userdata. The server keeps copies of them. */
int varlink_server_add_interface(VarlinkServer *s, const char *name, const char *description,
                                 const VarlinkMethod *methods, void *userdata);

/* Listens on a unix socket at an absolute path (an old socket file there is replaced), with the
 * given mode. Paths longer than sockaddr_un allows are bound through their directory's fd. */
int varlink_server_listen_address(VarlinkServer *s, const char *path, mode_t mode);
/* Listens on a socket already bound and listening (socket activation). Takes the fd. */
int varlink_server_listen_fd(VarlinkServer *s, int fd);
/* Serves one connected socket (accept()ed elsewhere, or one end of a socketpair). Takes the fd. */
int varlink_server_add_connection(VarlinkServer *s, int fd);
/* The same, for a peer of the given uid whatever SO_PEERCRED says (tests). Both refuse a
 * connection over the limits above (-EMFILE: all slots, or all but root's, are taken; -EUSERS:
 * the uid has its VARLINK_CONNECTIONS_PER_UID_MAX) after sending it the refusal; it lingers (above). */
int varlink_server_add_connection_uid(VarlinkServer *s, int fd, uid_t uid);
size_t varlink_server_n_connections(VarlinkServer *s);
/* Unsent reply bytes held for all connections. */
size_t varlink_server_queued_bytes(VarlinkServer *s);
/* Bytes allocated for all connections' input buffers. */
size_t varlink_server_buffered_bytes(VarlinkServer *s);
/* Whether the calls of uids other than 0 are held back by the time they took (on unless set: tests
 * of the other bounds turn it off). */
void varlink_server_set_time_shares(VarlinkServer *s, bool on);
/* VARLINK_IDLE_TIMEOUT_USEC unless set (tests); 0 turns the idle timeout off. */
void varlink_server_set_idle_timeout(VarlinkServer *s, uint64_t usec);
/* Called when a connection is refused, at most once per uid per VARLINK_REFUSED_LOG_INTERVAL_USEC:
 * the uid (VARLINK_UID_INVALID when unknown), -EMFILE or -EUSERS, and how many connections of that uid
 * were refused since the last call (this one included). */
typedef void (*VarlinkRefusedFunc)(VarlinkServer *s, uid_t uid, int reason, unsigned n_refused, void *userdata);
void varlink_server_set_refused(VarlinkServer *s, VarlinkRefusedFunc func, void *userdata);

/* ---- inside a method ---- */

VarlinkCall *varlink_call_ref(VarlinkCall *c);
VarlinkCall *varlink_call_unref(VarlinkCall *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(VarlinkCall *, varlink_call_unref);

/* The final reply. parameters may be NULL ({}); the reference is taken in every case. */
int varlink_call_reply(VarlinkCall *c, json_t *parameters);
/* One of many replies of a "more" call ("continues": true). */
int varlink_call_notify(VarlinkCall *c, json_t *parameters);
/* The final reply as an error. parameters may be NULL; the reference is taken. */
int varlink_call_error(VarlinkCall *c, const char *error, json_t *parameters);
/* Convenience: org.varlink.service.InvalidParameter naming the parameter. */
int varlink_call_error_invalid_parameter(VarlinkCall *c, const char *parameter);

/* Credentials of the peer, from SO_PEERCRED when the connection was made. */
int varlink_call_get_peer_uid(VarlinkCall *c, uid_t *ret);
const char *varlink_call_method(VarlinkCall *c);
/* false once the connection is gone: a kept call then only waits for its last unref. */
bool varlink_call_is_connected(VarlinkCall *c);
/* Called once if the connection closes while the call is still open (a streaming call's client
 * went away). */
void varlink_call_set_disconnect(VarlinkCall *c, void (*func)(VarlinkCall *c, void *userdata), void *userdata);

/* ---- a client (rtpartctl, tests) ---- */

typedef struct VarlinkClient VarlinkClient;

/* Connects to the unix socket at path (absolute; a path longer than sockaddr_un allows goes
 * through its directory's fd). -ENOENT, -ECONNREFUSED …: nobody listens there. */
int varlink_client_connect(const char *path, VarlinkClient **ret);
/* A client on fd, a stream socket already connected (taken in every case). */
int varlink_client_new(int fd, VarlinkClient **ret);
VarlinkClient *varlink_client_free(VarlinkClient *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(VarlinkClient *, varlink_client_free);
int varlink_client_get_fd(VarlinkClient *c);

/* Sends one call (parameters may be NULL; the reference is taken in every case). */
int varlink_client_send(VarlinkClient *c, const char *method, json_t *parameters, VarlinkCallFlags flags);
/* The next message: 0 and *ret ({"parameters", "continues"} or {"error", "parameters"}).
 * timeout_usec 0 only looks at what already arrived (-EAGAIN: no whole message yet), UINT64_MAX
 * waits as long as it takes. -ECONNRESET: the server closed the connection; -ETIMEDOUT; -EBADMSG:
 * not a JSON object, or a message beyond VARLINK_CLIENT_MESSAGE_MAX. */
int varlink_client_recv(VarlinkClient *c, uint64_t timeout_usec, json_t **ret);
/* One call and its reply: 0 with *ret_parameters (never NULL) and *ret_error NULL, or, for an error
 * reply, *ret_error (the error's name) and its parameters. A server that refused the connection
 * before the call went out still answers: its refusal is the reply. */
int varlink_client_call(VarlinkClient *c, const char *method, json_t *parameters, uint64_t timeout_usec,
                        json_t **ret_parameters, char **ret_error);
