/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A small varlink server (https://varlink.org) on sd-event: JSON messages, each terminated by a
 * NUL byte, over a unix stream socket. Calls on one connection are answered in order, one at a
 * time (a client may pipeline them); a call with "more" may answer many times until it sends a
 * final reply; "oneway" calls get no answer. Input beyond VARLINK_MESSAGE_MAX without a NUL, a
 * message that is not a JSON object naming a method, or an output queue beyond
 * VARLINK_OUTPUT_MAX (a peer that stopped reading) ends the connection, after an error reply where
 * one can be sent. org.varlink.service (GetInfo, GetInterfaceDescription) is built in. */

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "macro.h"

#define VARLINK_MESSAGE_MAX (1U << 20)          /* one incoming message */
#define VARLINK_OUTPUT_MAX (16U << 20)          /* queued replies of one connection */
#define VARLINK_CONNECTIONS_MAX 256U

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
        const char *name;       /* fully qualified: "org.rtpart.Manager.Plan" */
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
 * GetInterfaceDescription returns it) and its methods (terminated by an entry with name NULL).
 * Both arrays must outlive the server. */
int varlink_server_add_interface(VarlinkServer *s, const char *name, const char *description,
                                 const VarlinkMethod *methods);
void varlink_server_set_userdata(VarlinkServer *s, void *userdata);

/* Listens on a unix socket at an absolute path (an old socket file there is replaced), with the
 * given mode. Paths longer than sockaddr_un allows are bound through their directory's fd. */
int varlink_server_listen_address(VarlinkServer *s, const char *path, mode_t mode);
/* Listens on a socket already bound and listening (socket activation). Takes the fd. */
int varlink_server_listen_fd(VarlinkServer *s, int fd);
/* Serves one connected socket (accept()ed elsewhere, or one end of a socketpair). Takes the fd. */
int varlink_server_add_connection(VarlinkServer *s, int fd);
size_t varlink_server_n_connections(VarlinkServer *s);

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
VarlinkClient *varlink_client_free(VarlinkClient *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(VarlinkClient *, varlink_client_free);
int varlink_client_get_fd(VarlinkClient *c);

/* Sends one call (parameters may be NULL; the reference is taken in every case). */
int varlink_client_send(VarlinkClient *c, const char *method, json_t *parameters, VarlinkCallFlags flags);
/* The next message: 0 and *ret ({"parameters", "continues"} or {"error", "parameters"}).
 * timeout_usec 0 only looks at what already arrived (-EAGAIN: no whole message yet), UINT64_MAX
 * waits as long as it takes. -ECONNRESET: the server closed the connection; -ETIMEDOUT; -EBADMSG:
 * not a JSON object, or a message beyond VARLINK_OUTPUT_MAX. */
int varlink_client_recv(VarlinkClient *c, uint64_t timeout_usec, json_t **ret);
/* One call and its reply: 0 with *ret_parameters (never NULL) and *ret_error NULL, or, for an error
 * reply, *ret_error (the error's name) and its parameters. */
int varlink_client_call(VarlinkClient *c, const char *method, json_t *parameters, uint64_t timeout_usec,
                        json_t **ret_parameters, char **ret_error);
