/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Methods declared once. An interface is one table (MethodInterface): each of its methods names
 * its D-Bus declaration (SD_BUS_METHOD_WITH_ARGS, as hostnamed declares its vtable), its varlink
 * declaration (its lines of the interface description), who may call it, and the one function
 * both wires call. The D-Bus vtable, the varlink dispatch and the varlink interface description
 * are made from the table. A call takes its parameters as a JSON object (varlink's parameters;
 * D-Bus's arguments by their names) and answers a document: the wire marshals documents in and
 * out and knows nothing of what they hold. */

#include <jansson.h>
#include <stdbool.h>
#include <systemd/sd-bus.h>

#include "error.h"
#include "varlink.h"

/* Why a call failed: the library's Error (its message; file and pointer where a file is at fault,
 * or pointer alone, "/seconds", where one of the call's own parameters is), the error's name on
 * the wire (the last component: IFACE.Error.NAME on D-Bus, IFACE.NAME on varlink; NULL: the
 * errno's own error) and its details (varlink's "details": a failed Apply's document). On varlink,
 * an error that points at a parameter of the call is org.varlink.service.InvalidParameter. */
typedef struct ManagerError {
        Error error;
        const char *name;
        json_t *details;
} ManagerError;

void manager_error_done(ManagerError *e);
/* Replaces what e holds; returns code. */
int manager_error_set(ManagerError *e, const char *name, int code, const char *fmt, ...) _printf_(4, 5);
/* The same, pointing at the call's parameter `parameter` ("seconds"). */
int manager_error_set_parameter(ManagerError *e, const char *name, const char *parameter, const char *fmt, ...)
        _printf_(4, 5);
/* The message for the caller: "FILE: POINTER: MESSAGE" for an error in a file, else the message (or
 * the name); NULL on OOM. */
char *manager_error_message(const ManagerError *e);

typedef struct MethodCall MethodCall;

/* A method's function: 0 and *ret, the document it answers with; 1 when it answers later (it took
 * a reference on call, and ends it with method_call_reply() or method_call_fail()); or a negative
 * errno with e (or e left empty: the errno's own error). params is never NULL. */
typedef int (*MethodFunc)(MethodCall *call, json_t *params, void *userdata, json_t **ret, ManagerError *e);

typedef struct Method {
        const char *name; /* "Plan": D-Bus member, varlink method INTERFACE.Plan */
        /* Its D-Bus declaration: SD_BUS_METHOD_WITH_ARGS(name, arguments, result, NULL, flags); the
         * handler is the table's. Its arguments are basic types (s, u, i, b, t, x), given to func by
         * their names. Left zero: the method is varlink's only. */
        sd_bus_vtable dbus;
        /* Appends doc to a D-Bus reply as the declared result. NULL: the document as one JSON
         * string (the result "s"). */
        int (*dbus_reply)(sd_bus_message *reply, json_t *doc);
        /* Its varlink declaration: comment lines, then "method NAME(…) -> (…)". NULL: D-Bus only. */
        const char *varlink;
        /* Its varlink handler, for what func cannot say (a "more" stream); NULL: func. */
        VarlinkMethodFunc varlink_func;
        /* Why only uid 0 may call it ("changes the host"); NULL: everyone may. */
        const char *needs_root;
        MethodFunc func;
} Method;

/* An error a method may answer with. */
typedef struct MethodErrorName {
        const char *name;    /* "InvalidProfile" */
        int code;            /* the errno D-Bus clients map it to (sd_bus_error_map); 0: none */
        const char *varlink; /* its varlink declaration: comment lines, then "error NAME (…)" */
} MethodErrorName;

typedef struct MethodInterface {
        const char *dbus_name;         /* "org.rtpart.Manager1" */
        const char *varlink_name;      /* "org.rtpart.Manager" */
        const char *varlink_preamble;  /* the description before the methods: comments, "interface
                                        * NAME", its types */
        const Method *methods;         /* in the order of both declarations; name NULL ends it */
        const MethodErrorName *errors; /* name NULL ends it */
} MethodInterface;

/* The interface served for userdata (what every function of it gets), on a bus object, a varlink
 * server or both. It must outlive both. */
typedef struct MethodBinding {
        const MethodInterface *interface;
        void *userdata;
        sd_bus_vtable *vtable; /* the D-Bus methods, made by method_dbus_add() */
        sd_bus_slot *slot;
} MethodBinding;

/* Registers the interface's methods on the bus object path (properties and signals are the
 * caller's own vtable on the same path and interface) and its errors' names. */
int method_dbus_add(MethodBinding *b, sd_bus *bus, const char *path);
void method_dbus_remove(MethodBinding *b);
/* Adds the interface (its methods, and its description made from the table) to a varlink server. */
int method_varlink_add(MethodBinding *b, VarlinkServer *s);
/* The varlink interface description, as method_varlink_add() gives it. */
char *method_varlink_description(const MethodInterface *iface);

/* ---- inside a method ---- */

MethodCall *method_call_ref(MethodCall *c);
MethodCall *method_call_unref(MethodCall *c);
/* Whether the caller is uid 0 (D-Bus: the sender's effective uid; varlink: SO_PEERCRED). */
bool method_call_is_root(MethodCall *c);
/* The answer of a call whose function returned 1: doc (taken), or e (cleared). */
int method_call_reply(MethodCall *c, json_t *doc);
int method_call_fail(MethodCall *c, ManagerError *e);
/* Called once if the caller goes away before the answer (varlink only). NULL: nothing. */
void method_call_set_cancel(MethodCall *c, void (*func)(MethodCall *c, void *userdata), void *userdata);
