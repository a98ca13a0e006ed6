/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "method.h"
#include "strv.h"

#define METHOD_ERROR_PERMISSION_DENIED "PermissionDenied"

struct MethodCall {
        unsigned n_ref;
        const MethodBinding *binding;
        const Method *method;
        sd_bus_message *message; /* a D-Bus call, or */
        VarlinkCall *varlink;    /* a varlink call */
        bool root;
        void (*cancel)(MethodCall *c, void *userdata);
        void *cancel_userdata;
};

/* ---- errors ---- */

void manager_error_done(ManagerError *e) {
        error_done(&e->error);
        json_decref(e->details);
        *e = (ManagerError) {};
}

static int manager_error_setv(ManagerError *e, const char *name, int code, const char *parameter, const char *fmt,
                              va_list ap) {
        _cleanup_free_ char *msg = NULL, *pointer = NULL;
        manager_error_done(e);
        e->name = name;
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        if (parameter && asprintf(&pointer, "/%s", parameter) < 0)
                pointer = NULL;
        (void) error_set(&e->error, code, NULL, pointer, "%s", strempty(msg));
        return code;
}

int manager_error_set(ManagerError *e, const char *name, int code, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = manager_error_setv(e, name, code, NULL, fmt, ap);
        va_end(ap);
        return r;
}

int manager_error_set_parameter(ManagerError *e, const char *name, const char *parameter, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = manager_error_setv(e, name, -EINVAL, parameter, fmt, ap);
        va_end(ap);
        return r;
}

char *manager_error_message(const ManagerError *e) {
        if (e->error.file)
                return error_format(&e->error, e->name);
        return strdup(e->error.message && *e->error.message ? e->error.message : strempty(e->name));
}

/* ---- the table ---- */

static const Method *find_method(const MethodInterface *iface, const char *name) {
        for (const Method *m = iface->methods; name && m->name; m++)
                if (streq(m->name, name))
                        return m;
        return NULL;
}

char *method_varlink_description(const MethodInterface *iface) {
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        if (!f)
                return NULL;
        fputs(iface->varlink_preamble, f);
        for (const Method *m = iface->methods; m->name; m++)
                if (m->varlink)
                        fprintf(f, "\n%s", m->varlink);
        for (const MethodErrorName *e = iface->errors; e->name; e++)
                fprintf(f, "\n%s", e->varlink);
        if (fclose(f) < 0) {
                free(text);
                return NULL;
        }
        return text;
}

/* ---- calls ---- */

MethodCall *method_call_ref(MethodCall *c) {
        if (c)
                c->n_ref++;
        return c;
}

MethodCall *method_call_unref(MethodCall *c) {
        if (!c || --c->n_ref > 0)
                return NULL;
        if (c->varlink)
                varlink_call_set_disconnect(c->varlink, NULL, NULL);
        sd_bus_message_unref(c->message);
        varlink_call_unref(c->varlink);
        free(c);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(MethodCall *, method_call_unref);

bool method_call_is_root(MethodCall *c) {
        return c->root;
}

static void on_varlink_disconnect(VarlinkCall *vc, void *userdata) {
        MethodCall *c = userdata;
        void (*cancel)(MethodCall * c, void *userdata) = c->cancel;
        c->cancel = NULL;
        if (cancel)
                cancel(c, c->cancel_userdata);
}

void method_call_set_cancel(MethodCall *c, void (*func)(MethodCall *c, void *userdata), void *userdata) {
        c->cancel = func;
        c->cancel_userdata = userdata;
        if (c->varlink)
                varlink_call_set_disconnect(c->varlink, func ? on_varlink_disconnect : NULL, func ? c : NULL);
}

static char *dbus_error_name(const MethodBinding *b, const char *name) {
        char *s;
        return asprintf(&s, "%s.Error.%s", b->interface->dbus_name, name) < 0 ? NULL : s;
}

static int dbus_send(MethodCall *c, json_t *doc) {
        _cleanup_(json_decrefp) json_t *ref = doc;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        if (!doc)
                return -ENOMEM;
        int r = sd_bus_message_new_method_return(c->message, &reply);
        if (r < 0)
                return r;
        if (c->method->dbus_reply)
                r = c->method->dbus_reply(reply, doc);
        else {
                _cleanup_free_ char *text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
                r = text ? sd_bus_message_append(reply, "s", text) : -ENOMEM;
        }
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int varlink_fail(MethodCall *c, ManagerError *e, int r) {
        if (!e->name)
                return varlink_call_error(c->varlink, VARLINK_ERROR_SYSTEM, json_pack("{s:i}", "errno", -r));
        /* A parameter of the call at fault: varlink says so with its own error. */
        if (e->error.pointer && !e->error.file)
                return varlink_call_error_invalid_parameter(c->varlink, e->error.pointer + 1);
        _cleanup_free_ char *name = NULL, *msg = manager_error_message(e);
        if (asprintf(&name, "%s.%s", c->binding->interface->varlink_name, e->name) < 0 || !msg)
                return -ENOMEM;
        json_t *p = json_pack("{s:s}", "message", msg);
        if (p && e->details)
                (void) json_object_set(p, "details", e->details);
        return varlink_call_error(c->varlink, name, p);
}

int method_call_reply(MethodCall *c, json_t *doc) {
        if (c->varlink) {
                varlink_call_set_disconnect(c->varlink, NULL, NULL);
                return varlink_call_reply(c->varlink, doc);
        }
        return dbus_send(c, doc);
}

int method_call_fail(MethodCall *c, ManagerError *e) {
        int r, code = e->error.code < 0 ? e->error.code : -EIO;
        if (c->varlink) {
                varlink_call_set_disconnect(c->varlink, NULL, NULL);
                r = varlink_fail(c, e, code);
        } else if (!e->name)
                r = sd_bus_reply_method_errno(c->message, code, NULL);
        else {
                _cleanup_free_ char *name = dbus_error_name(c->binding, e->name), *msg = manager_error_message(e);
                r = name && msg ? sd_bus_reply_method_errorf(c->message, name, "%s", msg) : -ENOMEM;
        }
        manager_error_done(e);
        return r;
}

/* Runs m's function; 0 (answered now) or 1 (later). */
static int call_run(MethodCall *c, json_t *params, json_t **ret, ManagerError *e) {
        return c->method->func(c, params, c->binding->userdata, ret, e);
}

/* ---- D-Bus ---- */

/* Changing the host needs uid 0: the D-Bus policy lets anyone call, the sender's credentials
 * decide. Over a direct connection (tests) they are the socket peer's. */
static int sender_is_root(sd_bus_message *msg) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        uid_t uid = (uid_t) -1;
        int r = sd_bus_query_sender_creds(msg, SD_BUS_CREDS_EUID, &creds);
        if (r >= 0)
                r = sd_bus_creds_get_euid(creds, &uid);
        return r < 0 ? r : uid == 0;
}

/* The arguments, by the names of the declaration, into a JSON object. */
static int dbus_read_params(sd_bus_message *msg, const Method *m, json_t **ret) {
        _cleanup_(json_decrefp) json_t *p = json_object();
        const char *name = m->dbus.x.method.names;
        int r;

        if (!p)
                return -ENOMEM;
        for (const char *t = strempty(m->dbus.x.method.signature); *t; t++, name += strlen(name) + 1) {
                if (!strchr("suibtx", *t))
                        return -EINVAL; /* the table declares basic types only */
                union {
                        const char *s;
                        uint32_t u;
                        int32_t i;
                        int b;
                        uint64_t t;
                        int64_t x;
                } v;
                r = sd_bus_message_read_basic(msg, *t, &v);
                if (r < 0)
                        return r;
                json_t *j = *t == 's' ? json_string(v.s)
                        : *t == 'u'   ? json_integer((json_int_t) v.u)
                        : *t == 'i'   ? json_integer((json_int_t) v.i)
                        : *t == 'b'   ? json_boolean(v.b)
                        : *t == 't'   ? json_integer((json_int_t) v.t)
                                      : json_integer((json_int_t) v.x);
                if (!j || json_object_set_new(p, name, j) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(p);
        return 0;
}

static int dbus_handler(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        MethodBinding *b = userdata;
        const Method *m = find_method(b->interface, sd_bus_message_get_member(msg));
        _cleanup_(method_call_unrefp) MethodCall *c = NULL;
        _cleanup_(json_decrefp) json_t *params = NULL;
        json_t *doc = NULL;
        ManagerError e = {};

        if (!m)
                return -EOPNOTSUPP;
        int r = sender_is_root(msg);
        if (m->needs_root && r <= 0) {
                _cleanup_free_ char *name = dbus_error_name(b, METHOD_ERROR_PERMISSION_DENIED);
                if (!name)
                        return -ENOMEM;
                return sd_bus_error_setf(error, name, "%s %s and needs root (uid 0); the caller is %s", m->name,
                                         m->needs_root, r < 0 ? "unknown" : "not root");
        }
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        *c = (MethodCall) { .n_ref = 1, .binding = b, .method = m, .message = sd_bus_message_ref(msg), .root = r > 0 };
        r = dbus_read_params(msg, m, &params);
        if (r < 0)
                return r;
        r = call_run(c, params, &doc, &e);
        if (r > 0)
                return 1; /* answered later */
        if (r >= 0)
                return dbus_send(c, doc);
        if (!e.name) {
                manager_error_done(&e);
                return r;
        }
        _cleanup_free_ char *name = dbus_error_name(b, e.name), *text = manager_error_message(&e);
        manager_error_done(&e);
        if (!name || !text)
                return -ENOMEM;
        return sd_bus_error_setf(error, name, "%s", text);
}

/* The names and errnos D-Bus clients map the errors to: kept for the process (sd-bus keeps the
 * array), one per interface. */
static int dbus_add_error_map(const MethodBinding *b) {
        static struct {
                const MethodInterface *interface;
                sd_bus_error_map *map;
        } maps[4];
        size_t i = 0, n = 0;

        while (i < ELEMENTSOF(maps) && maps[i].interface && maps[i].interface != b->interface)
                i++;
        if (i == ELEMENTSOF(maps))
                return -E2BIG;
        if (!maps[i].interface) {
                for (const MethodErrorName *e = b->interface->errors; e->name; e++)
                        n++;
                sd_bus_error_map *map = calloc(n + 1, sizeof(sd_bus_error_map));
                if (!map)
                        return -ENOMEM;
                n = 0;
                for (const MethodErrorName *e = b->interface->errors; e->name; e++)
                        if (e->code > 0) {
                                map[n] = (sd_bus_error_map) { dbus_error_name(b, e->name), e->code };
                                if (!map[n++].name)
                                        return -ENOMEM; /* what was made stays: this is rare and once */
                        }
                map[n] = (sd_bus_error_map) SD_BUS_ERROR_MAP_END;
                maps[i].interface = b->interface;
                maps[i].map = map;
        }
        return sd_bus_error_add_map(maps[i].map);
}

int method_dbus_add(MethodBinding *b, sd_bus *bus, const char *path) {
        size_t n = 0;
        for (const Method *m = b->interface->methods; m->name; m++)
                n += m->dbus.type != 0;
        if (b->slot)
                return -EBUSY;
        int r = dbus_add_error_map(b);
        if (r < 0)
                return r;
        sd_bus_vtable *v = calloc(n + 2, sizeof(sd_bus_vtable));
        if (!v)
                return -ENOMEM;
        v[0] = (sd_bus_vtable) SD_BUS_VTABLE_START(0);
        n = 1;
        for (const Method *m = b->interface->methods; m->name; m++) {
                if (m->dbus.type == 0)
                        continue;
                if (!streq_ptr(m->dbus.x.method.member, m->name)) {
                        free(v);
                        return -EINVAL;
                }
                v[n] = m->dbus;
                v[n++].x.method.handler = dbus_handler;
        }
        v[n] = (sd_bus_vtable) SD_BUS_VTABLE_END;
        r = sd_bus_add_object_vtable(bus, &b->slot, path, b->interface->dbus_name, v, b);
        if (r < 0) {
                free(v);
                return r;
        }
        b->vtable = v;
        return 0;
}

void method_dbus_remove(MethodBinding *b) {
        b->slot = sd_bus_slot_unref(b->slot);
        free(b->vtable);
        b->vtable = NULL;
}

/* ---- varlink ---- */

static int varlink_handler(VarlinkCall *vc, json_t *params, VarlinkCallFlags flags, void *userdata) {
        MethodBinding *b = userdata;
        const char *dot = strrchr(varlink_call_method(vc), '.');
        const Method *m = find_method(b->interface, dot ? dot + 1 : NULL);
        _cleanup_(method_call_unrefp) MethodCall *c = NULL;
        json_t *doc = NULL;
        ManagerError e = {};
        uid_t uid;

        if (!m)
                return varlink_call_error(vc, VARLINK_ERROR_METHOD_NOT_FOUND,
                                          json_pack("{s:s}", "method", varlink_call_method(vc)));
        bool root = varlink_call_get_peer_uid(vc, &uid) >= 0 && uid == 0;
        if (m->needs_root && !root) {
                char msg[256], name[256];
                snprintf(msg, sizeof(msg), "%s %s and needs root (uid 0)", m->name, m->needs_root);
                snprintf(name, sizeof(name), "%s.%s", b->interface->varlink_name, METHOD_ERROR_PERMISSION_DENIED);
                return varlink_call_error(vc, name, json_pack("{s:s}", "message", msg));
        }
        if (m->varlink_func)
                return m->varlink_func(vc, params, flags, b->userdata);
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        *c = (MethodCall) { .n_ref = 1, .binding = b, .method = m, .varlink = varlink_call_ref(vc), .root = root };
        int r = call_run(c, params, &doc, &e);
        if (r > 0)
                return 0; /* answered later */
        if (r >= 0)
                return varlink_call_reply(vc, doc);
        r = varlink_fail(c, &e, r);
        manager_error_done(&e);
        return r;
}

int method_varlink_add(MethodBinding *b, VarlinkServer *s) {
        _cleanup_free_ char *description = method_varlink_description(b->interface);
        _cleanup_free_ VarlinkMethod *methods = NULL;
        _cleanup_strv_free_ char **names = NULL;
        size_t n = 0;

        if (!description)
                return -ENOMEM;
        for (const Method *m = b->interface->methods; m->name; m++)
                n += m->varlink != NULL;
        methods = calloc(n + 1, sizeof(VarlinkMethod));
        if (!methods)
                return -ENOMEM;
        n = 0;
        for (const Method *m = b->interface->methods; m->name; m++) {
                char *name;
                if (!m->varlink)
                        continue;
                if (asprintf(&name, "%s.%s", b->interface->varlink_name, m->name) < 0 || strv_push(&names, name) < 0)
                        return -ENOMEM;
                methods[n++] = (VarlinkMethod) { name, varlink_handler };
        }
        /* The server keeps its own copies. */
        return varlink_server_add_interface(s, b->interface->varlink_name, description, methods, b);
}
