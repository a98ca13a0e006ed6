/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "varlink-internal.h"

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
        const VarlinkInterface *i = server_find_interface(s, name, strlen(name));
        if (!i)
                return varlink_call_error(call, VARLINK_ERROR_INTERFACE_NOT_FOUND,
                                          json_pack("{s:s}", "interface", name));
        return varlink_call_reply(call, json_pack("{s:s}", "description", i->description));
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

int connection_dispatch(VarlinkConnection *c, const char *text, size_t len) {
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
                const VarlinkInterface *i = server_find_interface(s, method, (size_t) (dot - method));
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
                        r = m->func(call, params, call->flags, i->userdata);
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
