/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <systemd/sd-event.h>
#include <time.h>
#include <unistd.h>

#include "manager.h"
#include "test-util.h"
#include "varlink.h"

/* The varlink server (framing, pipelining, "more", "oneway", errors, malformed and oversized
 * input) with a small test interface, and org.rtpart.Manager on a copy of the vm fake host; the
 * client end is a plain socket, driven here while the server runs in the same event loop. */

static sd_event *event;

typedef struct Client {
        int fd;
        char *buf;
        size_t len, cap;
        bool eof;
} Client;

static uint64_t now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

static void client_send_raw(Client *c, const void *data, size_t len) {
        const char *p = data;
        while (len > 0) {
                ssize_t n = send(c->fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (n < 0 && errno == EAGAIN) {
                        ck_assert_int_ge(sd_event_run(event, 10 * 1000), 0);
                        continue;
                }
                if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
                        return; /* the server gave up on us; what it said is still to be read */
                ck_assert_msg(n > 0, "send: %s", strerror(errno));
                p += n;
                len -= (size_t) n;
        }
}

static void client_send(Client *c, const char *json) {
        client_send_raw(c, json, strlen(json) + 1);
}

static void client_fill(Client *c) {
        for (;;) {
                if (c->cap - c->len < 4096) {
                        c->cap = c->cap * 2 + 65536;
                        c->buf = realloc(c->buf, c->cap);
                        ck_assert_ptr_nonnull(c->buf);
                }
                ssize_t n = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);
                if (n == 0)
                        c->eof = true;
                if (n <= 0)
                        return;
                c->len += (size_t) n;
        }
}

/* The next message from the server, or NULL if the connection closed (or timeout). */
static json_t *client_recv(Client *c, unsigned timeout_ms) {
        uint64_t end = now_ms() + timeout_ms;
        for (;;) {
                client_fill(c);
                char *nul = c->len ? memchr(c->buf, 0, c->len) : NULL;
                if (nul) {
                        size_t l = (size_t) (nul - c->buf);
                        json_error_t err;
                        json_t *m = json_loadb(c->buf, l, 0, &err);
                        ck_assert_msg(m, "server sent invalid JSON: %s", err.text);
                        memmove(c->buf, nul + 1, c->len - l - 1);
                        c->len -= l + 1;
                        return m;
                }
                if (c->eof || now_ms() > end)
                        return NULL;
                ck_assert_int_ge(sd_event_run(event, 10 * 1000), 0);
        }
}

static json_t *client_call(Client *c, const char *json) {
        client_send(c, json);
        json_t *m = client_recv(c, 5000);
        ck_assert_msg(m, "no reply to %s", json);
        return m;
}

static const char *error_of(json_t *m) {
        return json_string_value(json_object_get(m, "error"));
}

static json_t *params_of(json_t *m) {
        return json_object_get(m, "parameters");
}

/* ---- a test interface ---- */

static VarlinkCall *kept;
static bool disconnected;

static int t_echo(VarlinkCall *call, json_t *params, VarlinkCallFlags flags, void *userdata) {
        return varlink_call_reply(call, json_deep_copy(params));
}

static int t_count(VarlinkCall *call, json_t *params, VarlinkCallFlags flags, void *userdata) {
        json_int_t n = json_integer_value(json_object_get(params, "n"));
        if (!(flags & VARLINK_CALL_MORE))
                return varlink_call_error(call, VARLINK_ERROR_EXPECTED_MORE, NULL);
        for (json_int_t i = 0; i < n; i++)
                ck_assert_int_ge(varlink_call_notify(call, json_pack("{s:I}", "i", i)), 0);
        return varlink_call_reply(call, json_pack("{s:I}", "i", n));
}

static int t_whoami(VarlinkCall *call, json_t *params, VarlinkCallFlags flags, void *userdata) {
        uid_t uid;
        int r = varlink_call_get_peer_uid(call, &uid);
        if (r < 0)
                return r;
        return varlink_call_reply(call, json_pack("{s:I}", "uid", (json_int_t) uid));
}

static void on_disconnect(VarlinkCall *call, void *userdata) {
        disconnected = true;
        kept = varlink_call_unref(kept);
}

static int t_hold(VarlinkCall *call, json_t *params, VarlinkCallFlags flags, void *userdata) {
        kept = varlink_call_ref(call);
        varlink_call_set_disconnect(call, on_disconnect, NULL);
        return varlink_call_notify(call, json_pack("{s:s}", "state", "holding"));
}

static int t_fail(VarlinkCall *call, json_t *params, VarlinkCallFlags flags, void *userdata) {
        return -EROFS;
}

/* A reply of "n" bytes. */
static int t_big(VarlinkCall *call, json_t *params, VarlinkCallFlags flags, void *userdata) {
        size_t n = (size_t) json_integer_value(json_object_get(params, "n"));
        char *text = malloc(n + 1);
        ck_assert_ptr_nonnull(text);
        memset(text, 'x', n);
        text[n] = 0;
        json_t *r = json_pack("{s:s}", "x", text);
        free(text);
        return varlink_call_reply(call, r);
}

/* Notifies 4 KiB at a time until the server will not take more (the peer does not read). */
static unsigned flood_sent;
static int flood_result;
static int t_flood(VarlinkCall *call, json_t *params, VarlinkCallFlags flags, void *userdata) {
        char text[4096];
        memset(text, 'f', sizeof(text) - 1);
        text[sizeof(text) - 1] = 0;
        for (flood_sent = 0; flood_sent < 100000; flood_sent++) {
                flood_result = varlink_call_notify(call, json_pack("{s:s}", "x", text));
                if (flood_result < 0)
                        return 0;
        }
        return varlink_call_reply(call, NULL);
}

/* Keeps the server busy for "ms" milliseconds, then answers "n". */
static int t_busy(VarlinkCall *call, json_t *params, VarlinkCallFlags flags, void *userdata) {
        usleep((useconds_t) json_integer_value(json_object_get(params, "ms")) * 1000);
        return varlink_call_reply(call, json_pack("{s:O?}", "n", json_object_get(params, "n")));
}

static const VarlinkMethod test_methods[] = { { "org.example.test.Echo", t_echo },
                                              { "org.example.test.Count", t_count },
                                              { "org.example.test.WhoAmI", t_whoami },
                                              { "org.example.test.Hold", t_hold },
                                              { "org.example.test.Fail", t_fail },
                                              { "org.example.test.Big", t_big },
                                              { "org.example.test.Flood", t_flood },
                                              { "org.example.test.Busy", t_busy },
                                              {} };

static VarlinkServer *server;
static Client client;

static void proto_setup(void) {
        int fds[2];
        ck_assert_int_ge(sd_event_new(&event), 0);
        ck_assert_int_ge(varlink_server_new(event, &server), 0);
        ck_assert_int_ge(varlink_server_set_info(server, "rtpart", "test", "1", "https://example.org"), 0);
        ck_assert_int_ge(varlink_server_add_interface(server, "org.example.test",
                                                      "interface org.example.test\nmethod Echo() -> ()\n", test_methods,
                                                      NULL),
                         0);
        /* The other bounds alone; test_busy_uid_waits_root_does_not turns the time shares on. */
        varlink_server_set_time_shares(server, false);
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
        ck_assert_int_ge(varlink_server_add_connection(server, fds[0]), 0);
        client = (Client) { .fd = fds[1] };
        kept = NULL;
        disconnected = false;
}

static void proto_teardown(void) {
        close(client.fd);
        free(client.buf);
        kept = varlink_call_unref(kept);
        server = varlink_server_free(server);
        event = sd_event_unref(event);
}

START_TEST(test_get_info) {
        _cleanup_(json_decrefp) json_t *m = client_call(&client, "{\"method\":\"org.varlink.service.GetInfo\"}");
        ck_assert_ptr_null(error_of(m));
        json_t *p = params_of(m);
        ck_assert_str_eq(json_string_value(json_object_get(p, "vendor")), "rtpart");
        json_t *ifs = json_object_get(p, "interfaces");
        ck_assert_int_eq(json_array_size(ifs), 2);
        ck_assert_str_eq(json_string_value(json_array_get(ifs, 0)), "org.varlink.service");
        ck_assert_str_eq(json_string_value(json_array_get(ifs, 1)), "org.example.test");

        _cleanup_(json_decrefp) json_t *d = client_call(&client,
                                                        "{\"method\":\"org.varlink.service.GetInterfaceDescription\","
                                                        "\"parameters\":{\"interface\":\"org.example.test\"}}");
        ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(params_of(d), "description")), "method Echo"));
        _cleanup_(json_decrefp) json_t *s = client_call(&client,
                                                        "{\"method\":\"org.varlink.service.GetInterfaceDescription\","
                                                        "\"parameters\":{\"interface\":\"org.varlink.service\"}}");
        ck_assert_ptr_nonnull(
                strstr(json_string_value(json_object_get(params_of(s), "description")), "error ExpectedMore"));
        _cleanup_(json_decrefp) json_t *u = client_call(&client,
                                                        "{\"method\":\"org.varlink.service.GetInterfaceDescription\","
                                                        "\"parameters\":{\"interface\":\"org.nope\"}}");
        ck_assert_str_eq(error_of(u), VARLINK_ERROR_INTERFACE_NOT_FOUND);
}
END_TEST

START_TEST(test_unknown_names_keep_the_connection) {
        _cleanup_(json_decrefp) json_t *a = client_call(&client, "{\"method\":\"org.example.test.Nope\"}");
        ck_assert_str_eq(error_of(a), VARLINK_ERROR_METHOD_NOT_FOUND);
        _cleanup_(json_decrefp) json_t *b = client_call(&client, "{\"method\":\"org.nope.Call\"}");
        ck_assert_str_eq(error_of(b), VARLINK_ERROR_INTERFACE_NOT_FOUND);
        ck_assert_str_eq(json_string_value(json_object_get(params_of(b), "interface")), "org.nope");
        _cleanup_(json_decrefp) json_t *c =
                client_call(&client, "{\"method\":\"org.example.test.Echo\",\"parameters\":{\"x\":1}}");
        ck_assert_ptr_null(error_of(c));
        ck_assert_int_eq(json_integer_value(json_object_get(params_of(c), "x")), 1);
        _cleanup_(json_decrefp) json_t *f = client_call(&client, "{\"method\":\"org.example.test.Fail\"}");
        ck_assert_str_eq(error_of(f), VARLINK_ERROR_SYSTEM);
        ck_assert_int_eq(json_integer_value(json_object_get(params_of(f), "errno")), EROFS);
}
END_TEST

START_TEST(test_pipelined_calls_answer_in_order) {
        /* Three calls in one write, the middle one streaming. */
        const char msgs[] = "{\"method\":\"org.example.test.Echo\",\"parameters\":{\"n\":1}}\0"
                            "{\"method\":\"org.example.test.Count\",\"parameters\":{\"n\":3},\"more\":true}\0"
                            "{\"method\":\"org.example.test.Echo\",\"parameters\":{\"n\":2}}";
        client_send_raw(&client, msgs, sizeof(msgs));
        _cleanup_(json_decrefp) json_t *a = client_recv(&client, 5000);
        ck_assert_int_eq(json_integer_value(json_object_get(params_of(a), "n")), 1);
        for (int i = 0; i < 3; i++) {
                _cleanup_(json_decrefp) json_t *c = client_recv(&client, 5000);
                ck_assert_ptr_nonnull(c);
                ck_assert(json_is_true(json_object_get(c, "continues")));
                ck_assert_int_eq(json_integer_value(json_object_get(params_of(c), "i")), i);
        }
        _cleanup_(json_decrefp) json_t *last = client_recv(&client, 5000);
        ck_assert_ptr_null(json_object_get(last, "continues"));
        ck_assert_int_eq(json_integer_value(json_object_get(params_of(last), "i")), 3);
        _cleanup_(json_decrefp) json_t *b = client_recv(&client, 5000);
        ck_assert_int_eq(json_integer_value(json_object_get(params_of(b), "n")), 2);
}
END_TEST

START_TEST(test_more_required) {
        _cleanup_(json_decrefp) json_t *a =
                client_call(&client, "{\"method\":\"org.example.test.Count\",\"parameters\":{\"n\":3}}");
        ck_assert_str_eq(error_of(a), VARLINK_ERROR_EXPECTED_MORE);
}
END_TEST

START_TEST(test_oneway_gets_no_answer) {
        client_send(&client, "{\"method\":\"org.example.test.Echo\",\"parameters\":{\"n\":1},\"oneway\":true}");
        _cleanup_(json_decrefp) json_t *b =
                client_call(&client, "{\"method\":\"org.example.test.Echo\",\"parameters\":{\"n\":2}}");
        ck_assert_int_eq(json_integer_value(json_object_get(params_of(b), "n")), 2);
}
END_TEST

START_TEST(test_malformed_input_closes) {
        static const char * const bad[] = {
                "{\"method\":",        /* not JSON */
                "[1,2,3]",             /* not an object */
                "{\"parameters\":{}}", /* no method */
                "{\"method\":\"org.example.test.Echo\",\"parameters\":[1]}",
                "{\"method\":\"org.example.test.Echo\",\"more\":\"yes\"}",
                "{\"method\":\"org.example.test.Echo\",\"more\":true,\"oneway\":true}",
                "{\"method\":\"a\",\"method\":\"b\"}", /* duplicate key */
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                proto_teardown();
                proto_setup();
                client_send(&client, bad[i]);
                _cleanup_(json_decrefp) json_t *m = client_recv(&client, 5000);
                ck_assert_msg(m, "no error for %s", bad[i]);
                ck_assert_str_eq(error_of(m), VARLINK_ERROR_INVALID_PARAMETER);
                _cleanup_(json_decrefp) json_t *none = client_recv(&client, 5000);
                ck_assert_msg(!none && client.eof, "connection not closed after %s", bad[i]);
                /* The server shut its side down and drops what the client still sends (so that
                 * the client's writes do not fail before it reads the error); the connection is
                 * gone once the client closes too. */
                ck_assert_int_le(varlink_server_n_connections(server), 1);
                ck_assert_int_eq(send(client.fd, "{}", 3, MSG_NOSIGNAL), 3);
                close(client.fd);
                client.fd = -EBADF;
                for (int t = 0; t < 100 && varlink_server_n_connections(server) > 0; t++)
                        ck_assert_int_ge(sd_event_run(event, 10 * 1000), 0);
                ck_assert_int_eq(varlink_server_n_connections(server), 0);
        }
}
END_TEST

/* A client that goes on sending after its error does not keep the connection past
 * VARLINK_DRAIN_MAX, and is answered before. */
START_TEST(test_failed_connection_drains_bounded) {
        client_send(&client, "[1]");
        _cleanup_(json_decrefp) json_t *m = client_recv(&client, 5000);
        ck_assert_str_eq(error_of(m), VARLINK_ERROR_INVALID_PARAMETER);
        static char chunk[65536];
        size_t sent = 0;
        for (int round = 0; round < 10000 && varlink_server_n_connections(server) > 0; round++) {
                ssize_t k = send(client.fd, chunk, sizeof(chunk), MSG_DONTWAIT | MSG_NOSIGNAL);
                if (k > 0)
                        sent += (size_t) k;
                ck_assert_int_ge(sd_event_run(event, 1000), 0);
        }
        ck_assert_int_eq(varlink_server_n_connections(server), 0);
        ck_assert_uint_gt(sent, VARLINK_DRAIN_MAX);
        ck_assert_uint_lt(sent, VARLINK_DRAIN_MAX + (4U << 20)); /* the drain bound, plus socket buffers */
        ck_assert_uint_eq(varlink_server_buffered_bytes(server), 0);
}
END_TEST

/* The server refused the message (InvalidParameter naming `parameter`), and closed the connection. */
static void assert_refused_and_closed(const char *parameter) {
        _cleanup_(json_decrefp) json_t *m = client_recv(&client, 5000);
        ck_assert_ptr_nonnull(m);
        ck_assert_str_eq(error_of(m), VARLINK_ERROR_INVALID_PARAMETER);
        ck_assert_str_eq(json_string_value(json_object_get(params_of(m), "parameter")), parameter);
        ck_assert_ptr_null(client_recv(&client, 5000));
        ck_assert(client.eof);
}

START_TEST(test_oversized_message_closes) {
        size_t n = VARLINK_MESSAGE_MAX + 4096;
        char *big = malloc(n);
        ck_assert_ptr_nonnull(big);
        memset(big, ' ', n);
        const char *head = "{\"method\":\"org.example.test.Echo\",\"parameters\":{\"x\":\"";
        memcpy(big, head, strlen(head));
        /* No NUL anywhere: the server must give up, not buffer for ever. */
        client_send_raw(&client, big, n);
        free(big);
        assert_refused_and_closed("message too long");
}
END_TEST

START_TEST(test_peer_uid) {
        _cleanup_(json_decrefp) json_t *m = client_call(&client, "{\"method\":\"org.example.test.WhoAmI\"}");
        ck_assert_int_eq(json_integer_value(json_object_get(params_of(m), "uid")), geteuid());
}
END_TEST

START_TEST(test_streaming_client_goes_away) {
        _cleanup_(json_decrefp) json_t *m =
                client_call(&client, "{\"method\":\"org.example.test.Hold\",\"more\":true}");
        ck_assert(json_is_true(json_object_get(m, "continues")));
        ck_assert_ptr_nonnull(kept);
        ck_assert(varlink_call_is_connected(kept));
        close(client.fd);
        client.fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        for (int i = 0; i < 100 && !disconnected; i++)
                ck_assert_int_ge(sd_event_run(event, 10 * 1000), 0);
        ck_assert(disconnected);
        ck_assert_int_eq(varlink_server_n_connections(server), 0);
}
END_TEST

START_TEST(test_listen_address_long_path) {
        /* Longer than sun_path: bound through the directory's fd. */
        _cleanup_free_ char *dir = test_tmpdir(), *deep = NULL, *cmd = NULL, *sock = NULL;
        ck_assert(asprintf(&deep, "%s/%0100d/%0100d", dir, 0, 1) >= 0);
        ck_assert(asprintf(&cmd, "mkdir -p '%s'", deep) >= 0);
        ck_assert_int_eq(system(cmd), 0);
        ck_assert(asprintf(&sock, "%s/org.example.test", deep) >= 0);
        ck_assert_int_ge(varlink_server_listen_address(server, sock, 0666), 0);

        int dfd = open(deep, O_PATH | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(dfd, 0);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/org.example.test", dfd);
        Client c = { .fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0) };
        ck_assert_int_eq(connect(c.fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        close(dfd);
        _cleanup_(json_decrefp) json_t *m =
                client_call(&c, "{\"method\":\"org.example.test.Echo\",\"parameters\":{\"n\":7}}");
        ck_assert_int_eq(json_integer_value(json_object_get(params_of(m), "n")), 7);
        close(c.fd);
        free(c.buf);
        server = varlink_server_free(server);
        ck_assert_int_ne(access(sock, F_OK), 0); /* removed again */
        test_rmtree(dir);
}
END_TEST

/* ---- the client, against the server in the same loop ---- */

/* The next message for the client, running the server between looks. */
static int client_next(VarlinkClient *c, json_t **ret) {
        for (int i = 0; i < 500; i++) {
                int r = varlink_client_recv(c, 0, ret);
                if (r != -EAGAIN)
                        return r;
                ck_assert_int_ge(sd_event_run(event, 10 * 1000), 0);
        }
        return -ETIMEDOUT;
}

START_TEST(test_client) {
        _cleanup_free_ char *dir = test_tmpdir(), *deep = NULL, *cmd = NULL, *sock = NULL;
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        json_t *m = NULL;

        /* Nobody there: the caller's cue to work alone. */
        ck_assert(asprintf(&sock, "%s/nobody", dir) >= 0);
        ck_assert_int_eq(varlink_client_connect(sock, &c), -ENOENT);
        ck_assert_int_eq(varlink_client_connect("relative", &c), -EINVAL);
        free(sock);

        /* A path longer than sun_path, as the server binds it. */
        ck_assert(asprintf(&deep, "%s/%0100d", dir, 0) >= 0);
        ck_assert(asprintf(&cmd, "mkdir -p '%s'", deep) >= 0);
        ck_assert_int_eq(system(cmd), 0);
        ck_assert(asprintf(&sock, "%s/org.example.test", deep) >= 0);
        ck_assert_int_ge(varlink_server_listen_address(server, sock, 0666), 0);
        ck_assert_int_eq(varlink_client_connect(sock, &c), 0);
        ck_assert_int_eq(varlink_client_recv(c, 0, &m), -EAGAIN);

        /* Pipelined: a call, a "more" call, an error; answered in order. */
        ck_assert_int_eq(varlink_client_send(c, "org.example.test.Echo", json_pack("{s:s}", "x", "y"), 0), 0);
        ck_assert_int_eq(
                varlink_client_send(c, "org.example.test.Count", json_pack("{s:i}", "n", 3), VARLINK_CALL_MORE), 0);
        ck_assert_int_eq(varlink_client_send(c, "org.example.test.Fail", NULL, 0), 0);
        ck_assert_int_eq(client_next(c, &m), 0);
        ck_assert_str_eq(json_string_value(json_object_get(params_of(m), "x")), "y");
        json_decref(m);
        for (int i = 0; i <= 3; i++) {
                ck_assert_int_eq(client_next(c, &m), 0);
                ck_assert_int_eq(json_integer_value(json_object_get(params_of(m), "i")), i);
                ck_assert(json_is_true(json_object_get(m, "continues")) == (i < 3));
                json_decref(m);
        }
        ck_assert_int_eq(client_next(c, &m), 0);
        ck_assert_str_eq(error_of(m), VARLINK_ERROR_SYSTEM);
        json_decref(m);

        /* The server goes away: the client hears it. */
        server = varlink_server_free(server);
        ck_assert_int_eq(varlink_client_recv(c, 1000 * 1000, &m), -ECONNRESET);
        c = varlink_client_free(c);
        test_rmtree(dir);
}
END_TEST

START_TEST(test_client_call_timeout) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        _cleanup_free_ char *dir = test_tmpdir(), *sock = NULL, *error = NULL;
        json_t *p = NULL;
        ck_assert(asprintf(&sock, "%s/s", dir) >= 0);
        ck_assert_int_ge(varlink_server_listen_address(server, sock, 0666), 0);
        ck_assert_int_eq(varlink_client_connect(sock, &c), 0);
        /* The loop does not run: nobody answers within the timeout. */
        ck_assert_int_eq(varlink_client_call(c, "org.example.test.Echo", NULL, 20 * 1000, &p, &error), -ETIMEDOUT);
        server = varlink_server_free(server);
        test_rmtree(dir);
}
END_TEST

/* ---- what one user can take ---- */

static unsigned n_refused_reports, last_n_refused;
static uid_t last_refused_uid;
static int last_refused_reason;

static void on_refused(VarlinkServer *s, uid_t uid, int reason, unsigned n_refused, void *userdata) {
        n_refused_reports++;
        last_refused_uid = uid;
        last_refused_reason = reason;
        last_n_refused = n_refused;
}

/* A connection served as if its peer were uid; returns the client's end, or -errno. */
static int connect_as(uid_t uid) {
        int fds[2];
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
        int r = varlink_server_add_connection_uid(server, fds[0], uid);
        if (r < 0) {
                /* Refused: it says why; once the client sent its call, it is closed. */
                Client c = { .fd = fds[1] };
                _cleanup_(json_decrefp) json_t *m = client_recv(&c, 1000);
                ck_assert_ptr_nonnull(m);
                ck_assert_str_eq(error_of(m), VARLINK_ERROR_TOO_MANY_CONNECTIONS);
                ck_assert_ptr_nonnull(json_string_value(json_object_get(params_of(m), "message")));
                client_send(&c, "{\"method\":\"org.example.test.Echo\"}");
                ck_assert_ptr_null(client_recv(&c, 1000));
                ck_assert(c.eof);
                free(c.buf);
                close(fds[1]);
                return r;
        }
        return fds[1];
}

static void echo_on(int fd, int n) {
        Client c = { .fd = fd };
        char msg[128];
        snprintf(msg, sizeof(msg), "{\"method\":\"org.example.test.Echo\",\"parameters\":{\"n\":%d}}", n);
        _cleanup_(json_decrefp) json_t *m = client_call(&c, msg);
        ck_assert_int_eq(json_integer_value(json_object_get(params_of(m), "n")), n);
        free(c.buf);
}

/* A message of many small values (each "{}" is a JSON object of some hundred bytes once parsed: a
 * message within VARLINK_MESSAGE_MAX would take ~80 MiB) is refused before it is parsed. */
START_TEST(test_many_values_refused) {
        const char *head = "{\"method\":\"org.example.test.Echo\",\"parameters\":{\"n\":1,\"x\":[";
        size_t n = VARLINK_MESSAGE_VALUES_MAX + 1, len = strlen(head) + 3 * n + 3;
        char *msg = malloc(len + 1);
        ck_assert_ptr_nonnull(msg);
        char *p = stpcpy(msg, head);
        for (size_t i = 0; i < n; i++)
                p = stpcpy(p, i ? ",{}" : "{} ");
        p = stpcpy(p, "]}}");
        client_send_raw(&client, msg, (size_t) (p - msg) + 1);
        free(msg);
        assert_refused_and_closed("message has too many values");
        /* Commas and brackets inside a string (escaped quotes too) are not values: served. */
        Client c = { .fd = connect_as(0) };
        head = "{\"method\":\"org.example.test.Echo\",\"parameters\":{\"n\":3,\"s\":\"\\\"";
        msg = malloc(strlen(head) + 3 * n + 8);
        ck_assert_ptr_nonnull(msg);
        p = stpcpy(msg, head);
        for (size_t i = 0; i < n; i++)
                p = stpcpy(p, ",{[");
        p = stpcpy(p, "\"}}");
        client_send_raw(&c, msg, (size_t) (p - msg) + 1);
        free(msg);
        _cleanup_(json_decrefp) json_t *r = client_recv(&c, 5000);
        ck_assert_ptr_nonnull(r);
        ck_assert_int_eq(json_integer_value(json_object_get(params_of(r), "n")), 3);
        free(c.buf);
        close(c.fd);
}
END_TEST

START_TEST(test_connections_per_uid) {
        int fds[VARLINK_CONNECTIONS_PER_UID_MAX + 1];
        varlink_server_set_refused(server, on_refused, NULL);
        n_refused_reports = 0;
        size_t base = varlink_server_n_connections(server);

        for (unsigned i = 0; i < VARLINK_CONNECTIONS_PER_UID_MAX; i++)
                ck_assert_int_ge(fds[i] = connect_as(1000), 0);
        ck_assert_int_eq(varlink_server_n_connections(server), base + VARLINK_CONNECTIONS_PER_UID_MAX);
        /* The 17th of uid 1000 is refused, and reported once however often it is tried. */
        for (int i = 0; i < 5; i++)
                ck_assert_int_eq(connect_as(1000), -EUSERS);
        ck_assert_int_eq(n_refused_reports, 1);
        ck_assert_int_eq(last_refused_uid, 1000);
        ck_assert_int_eq(last_refused_reason, -EUSERS);
        ck_assert_int_eq(last_n_refused, 1);
        /* Another user, and root, are not held back by it; the old connections still answer. */
        int other = connect_as(1001), root = connect_as(0);
        ck_assert_int_ge(other, 0);
        ck_assert_int_ge(root, 0);
        echo_on(other, 1);
        echo_on(root, 2);
        echo_on(fds[0], 3);
        /* One of uid 1000 goes: one more may come. */
        close(fds[0]);
        for (int i = 0; i < 100 && varlink_server_n_connections(server) > base + VARLINK_CONNECTIONS_PER_UID_MAX + 1;
             i++)
                ck_assert_int_ge(sd_event_run(event, 10 * 1000), 0);
        ck_assert_int_ge(fds[0] = connect_as(1000), 0);
        ck_assert_int_eq(connect_as(1000), -EUSERS);
        ck_assert_int_eq(n_refused_reports, 1);
        for (unsigned i = 0; i < VARLINK_CONNECTIONS_PER_UID_MAX; i++)
                close(fds[i]);
        close(other);
        close(root);
}
END_TEST

START_TEST(test_connections_root_reserve) {
        static int fds[VARLINK_CONNECTIONS_MAX + 1];
        size_t n = 0;
        int r;

        varlink_server_set_refused(server, on_refused, NULL);
        n_refused_reports = 0;
        /* Users other than root, 16 each, until the server takes no more of them. */
        for (uid_t uid = 1000;; uid++) {
                for (unsigned i = 0; i < VARLINK_CONNECTIONS_PER_UID_MAX; i++) {
                        r = connect_as(uid);
                        if (r < 0)
                                break;
                        fds[n++] = r;
                }
                if (r < 0)
                        break;
        }
        ck_assert_int_eq(r, -EMFILE);
        ck_assert_int_eq(varlink_server_n_connections(server),
                         VARLINK_CONNECTIONS_MAX - VARLINK_CONNECTIONS_ROOT_RESERVE);
        ck_assert_int_eq(n_refused_reports, 1);
        ck_assert_int_eq(connect_as(5000), -EMFILE); /* a fresh uid too */
        ck_assert_int_eq(last_refused_reason, -EMFILE);
        /* The last slots are root's, and root is served. */
        while (varlink_server_n_connections(server) < VARLINK_CONNECTIONS_MAX) {
                ck_assert_int_ge(r = connect_as(0), 0);
                fds[n++] = r;
        }
        echo_on(fds[n - 1], 4);
        ck_assert_int_eq(connect_as(0), -EMFILE);
        ck_assert_int_eq(varlink_server_n_connections(server), VARLINK_CONNECTIONS_MAX);
        for (size_t i = 0; i < n; i++)
                close(fds[i]);
}
END_TEST

START_TEST(test_client_reads_the_refusal) {
        static int fds[VARLINK_CONNECTIONS_MAX];
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        _cleanup_free_ char *dir = test_tmpdir(), *sock = NULL, *error = NULL;
        json_t *p = NULL;
        size_t n = 0;

        ck_assert(asprintf(&sock, "%s/s", dir) >= 0);
        ck_assert_int_ge(varlink_server_listen_address(server, sock, 0666), 0);
        while (varlink_server_n_connections(server) < VARLINK_CONNECTIONS_MAX)
                ck_assert_int_ge(fds[n++] = connect_as(0), 0);
        ck_assert_int_eq(varlink_client_connect(sock, &c), 0);
        for (int i = 0; i < 10; i++) /* accepted, refused, closed */
                ck_assert_int_ge(sd_event_run(event, 10 * 1000), 0);
        ck_assert_int_eq(varlink_client_call(c, "org.example.test.Echo", NULL, 1000 * 1000, &p, &error), 0);
        ck_assert_str_eq(error, VARLINK_ERROR_TOO_MANY_CONNECTIONS);
        json_decref(p);
        for (size_t i = 0; i < n; i++)
                close(fds[i]);
        server = varlink_server_free(server);
        test_rmtree(dir);
}
END_TEST

/* A refused client that sends its call before it reads (what every client does) gets the refusal:
 * the server reads the call before it closes, so the send does not fail with EPIPE. One that
 * sends nothing is closed after VARLINK_LINGER_USEC; past VARLINK_LINGER_MAX lingering, at once. */
START_TEST(test_refused_client_sends_first) {
        static int fds[VARLINK_CONNECTIONS_PER_UID_MAX], silent[VARLINK_LINGER_MAX];
        int pair[2];

        for (unsigned i = 0; i < VARLINK_CONNECTIONS_PER_UID_MAX; i++)
                ck_assert_int_ge(fds[i] = connect_as(1000), 0);
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
        ck_assert_int_eq(varlink_server_add_connection_uid(server, pair[0], 1000), -EUSERS);
        for (int i = 0; i < 10; i++)
                (void) sd_event_run(event, 0);
        const char call[] = "{\"method\":\"org.example.test.Echo\"}";
        ck_assert_int_eq(send(pair[1], call, sizeof(call), MSG_NOSIGNAL), (ssize_t) sizeof(call));
        Client c = { .fd = pair[1] };
        _cleanup_(json_decrefp) json_t *m = client_recv(&c, 5000);
        ck_assert_ptr_nonnull(m);
        ck_assert_str_eq(error_of(m), VARLINK_ERROR_TOO_MANY_CONNECTIONS);
        ck_assert_ptr_null(client_recv(&c, 5000));
        ck_assert(c.eof);
        free(c.buf);
        close(pair[1]);

        /* Silent ones: VARLINK_LINGER_MAX linger, the next is closed at once. */
        for (unsigned i = 0; i < VARLINK_LINGER_MAX; i++) {
                ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
                ck_assert_int_eq(varlink_server_add_connection_uid(server, pair[0], 1000), -EUSERS);
                silent[i] = pair[1];
        }
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
        ck_assert_int_eq(varlink_server_add_connection_uid(server, pair[0], 1000), -EUSERS);
        Client past = { .fd = pair[1] };
        _cleanup_(json_decrefp) json_t *pm = client_recv(&past, 1000);
        ck_assert_ptr_nonnull(pm);
        ck_assert_ptr_null(client_recv(&past, 1000));
        ck_assert(past.eof);
        free(past.buf);
        close(pair[1]);
        Client first = { .fd = silent[0] };
        _cleanup_(json_decrefp) json_t *fm = client_recv(&first, 1000);
        ck_assert_ptr_nonnull(fm);
        ck_assert_ptr_null(client_recv(&first, VARLINK_LINGER_USEC / 1000 + 5000));
        ck_assert(first.eof);
        free(first.buf);
        for (unsigned i = 0; i < VARLINK_LINGER_MAX; i++)
                close(silent[i]);
        for (unsigned i = 0; i < VARLINK_CONNECTIONS_PER_UID_MAX; i++)
                close(fds[i]);
}
END_TEST

/* A uid other than 0 whose calls keep the server busy waits once it owes more than the burst: a
 * call of root sent after four pipelined 60 ms calls of uid 1000 is answered before their last,
 * and every one of them is still answered. Root's own are never held back. */
START_TEST(test_busy_uid_waits_root_does_not) {
        varlink_server_set_time_shares(server, true);
        Client user = { .fd = connect_as(1000) }, boss = { .fd = connect_as(0) };
        const int n = 4;
        for (int i = 0; i < n; i++) {
                char msg[128];
                snprintf(msg, sizeof(msg), "{\"method\":\"org.example.test.Busy\",\"parameters\":{\"ms\":60,\"n\":%d}}",
                         i);
                client_send(&user, msg);
        }
        (void) sd_event_run(event, 0); /* the user's calls are read first */
        client_send(&boss, "{\"method\":\"org.example.test.Echo\",\"parameters\":{\"n\":99}}");
        _cleanup_(json_decrefp) json_t *b = client_recv(&boss, 10000);
        ck_assert_ptr_nonnull(b);
        ck_assert_int_eq(json_integer_value(json_object_get(params_of(b), "n")), 99);
        /* Root's answer is there; the user's last is not yet. */
        int got = 0;
        for (json_t *m; (m = client_recv(&user, 0)); json_decref(m))
                got++;
        ck_assert_int_lt(got, n);
        for (; got < n; got++) {
                _cleanup_(json_decrefp) json_t *m = client_recv(&user, 20000);
                ck_assert_ptr_nonnull(m);
                ck_assert_int_eq(json_integer_value(json_object_get(params_of(m), "n")), got);
        }
        /* Root pipelines the same and is answered in one go, ahead of a user's call sent after. */
        for (int i = 0; i < n; i++)
                client_send(&boss, "{\"method\":\"org.example.test.Busy\",\"parameters\":{\"ms\":60}}");
        for (int i = 0; i < n; i++) {
                _cleanup_(json_decrefp) json_t *m = client_recv(&boss, 10000);
                ck_assert_ptr_nonnull(m);
        }
        free(user.buf);
        free(boss.buf);
        close(user.fd);
        close(boss.fd);
}
END_TEST

/* Runs the loop until it has nothing left to do at once. */
static void run_until_quiet(void) {
        for (int i = 0; i < 10000; i++)
                if (sd_event_run(event, 1000) == 0)
                        return;
        ck_abort_msg("the server never stops working");
}

START_TEST(test_idle_timeout) {
        const uint64_t slow = test_slow(); /* under valgrind every step is slower */
        varlink_server_set_idle_timeout(server, 100 * 1000 * slow);
        int held = connect_as(1000), busy = connect_as(1000);
        Client h = { .fd = held };
        /* A subscription is not idle; a client that calls now and then is not either. */
        _cleanup_(json_decrefp) json_t *m = client_call(&h, "{\"method\":\"org.example.test.Hold\",\"more\":true}");
        ck_assert(json_is_true(json_object_get(m, "continues")));
        uint64_t start = now_ms();
        while (now_ms() < start + 400 * slow) {
                echo_on(busy, 1);
                uint64_t t = now_ms();
                while (now_ms() < t + 50 * slow)
                        ck_assert_int_ge(sd_event_run(event, 10 * 1000), 0);
        }
        /* The idle one (proto_setup's) went after 100 ms; the others stay. */
        ck_assert_ptr_null(client_recv(&client, 0));
        ck_assert(client.eof);
        ck_assert_int_eq(varlink_server_n_connections(server), 2);
        ck_assert(!disconnected);
        /* The subscription ends: its connection is idle from then on, and goes too. */
        ck_assert_int_ge(varlink_call_reply(kept, NULL), 0);
        kept = varlink_call_unref(kept);
        start = now_ms();
        while (varlink_server_n_connections(server) > 0 && now_ms() < start + 2000 * slow)
                ck_assert_int_ge(sd_event_run(event, 10 * 1000), 0);
        ck_assert_int_eq(varlink_server_n_connections(server), 0);
        ck_assert_uint_ge(now_ms() - start, 90 * slow);
        /* With no connection left the timer is off: a connection that comes and goes before its
         * idle time leaves nothing to wake the loop. */
        int brief = connect_as(1000);
        close(brief);
        run_until_quiet();
        ck_assert_int_eq(varlink_server_n_connections(server), 0);
        ck_assert_int_eq(sd_event_run(event, 300 * 1000 * slow), 0);
        free(h.buf);
        close(held);
        close(busy);
}
END_TEST

START_TEST(test_back_pressure) {
        /* 10,000 pipelined calls from a client that does not read: the server stops reading once
         * a reply waits, so what it queues stays within one reply. */
        const size_t reply = 2048;
        char call[128];
        size_t len = (size_t) snprintf(call, sizeof(call),
                                       "{\"method\":\"org.example.test.Big\",\"parameters\":{\"n\":%zu}}", reply) +
                1;
        size_t total = 10000 * len, sent = 0, max_queued = 0;
        char *calls = malloc(total);
        ck_assert_ptr_nonnull(calls);
        for (size_t i = 0; i < 10000; i++)
                memcpy(calls + i * len, call, len);
        for (int stuck = 0; sent < total && stuck < 50;) {
                ssize_t n = send(client.fd, calls + sent, total - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (n > 0) {
                        sent += (size_t) n;
                        stuck = 0;
                } else {
                        ck_assert_int_eq(errno, EAGAIN);
                        stuck++;
                }
                run_until_quiet();
                max_queued = MAX(max_queued, varlink_server_queued_bytes(server));
        }
        ck_assert_msg(sent < total, "the server read all %zu bytes of calls while no reply was read", total);
        ck_assert_msg(max_queued <= reply + 64, "queued %zu bytes for a client that does not read", max_queued);

        /* It was back-pressure, not loss: reading, the client gets every reply, in order. */
        size_t got = 0;
        while (got < 10000) {
                if (sent < total) {
                        ssize_t n = send(client.fd, calls + sent, total - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
                        if (n > 0)
                                sent += (size_t) n;
                }
                _cleanup_(json_decrefp) json_t *m = client_recv(&client, 5000);
                ck_assert_msg(m, "reply %zu missing", got);
                ck_assert_int_eq(strlen(json_string_value(json_object_get(params_of(m), "x"))), reply);
                got++;
                ck_assert_uint_le(varlink_server_queued_bytes(server), reply + 64);
        }
        free(calls);
}
END_TEST

/* Clients that send the start of a large message on every connection they may open hold input
 * memory only up to the bounds: per uid, and for every uid but 0 together; root is still served. */
static void feed_partial(int *fds, size_t n, size_t bytes) {
        static char chunk[65536];
        memset(chunk, ' ', sizeof(chunk));
        size_t sent[VARLINK_CONNECTIONS_MAX] = {};
        for (int round = 0; round < 1000; round++) {
                bool progress = false;
                for (size_t i = 0; i < n; i++) {
                        if (sent[i] >= bytes)
                                continue;
                        ssize_t k =
                                send(fds[i], chunk, MIN(sizeof(chunk), bytes - sent[i]), MSG_DONTWAIT | MSG_NOSIGNAL);
                        if (k > 0) {
                                sent[i] += (size_t) k;
                                progress = true;
                        }
                }
                run_until_quiet();
                if (!progress)
                        return;
        }
}

START_TEST(test_input_bounds) {
        const size_t part = 900 << 10; /* below VARLINK_MESSAGE_MAX: no message is too long */
        const size_t fixture = varlink_server_n_connections(server);
        int fds[5 * VARLINK_CONNECTIONS_PER_UID_MAX];
        size_t n = 0;
        for (unsigned i = 0; i < VARLINK_CONNECTIONS_PER_UID_MAX; i++)
                ck_assert_int_ge(fds[n++] = connect_as(1000), 0);
        feed_partial(fds, n, part);
        size_t b = varlink_server_buffered_bytes(server);
        ck_assert_msg(b <= VARLINK_UID_INPUT_MAX, "uid 1000 holds %zu bytes of input", b);
        ck_assert_msg(b >= VARLINK_UID_INPUT_MAX / 2, "the test did not come near the bound: %zu", b);
        /* More users: together they stay under the bound for every uid but 0. */
        for (uid_t u = 2000; u < 2004; u++)
                for (unsigned i = 0; i < VARLINK_CONNECTIONS_PER_UID_MAX; i++)
                        ck_assert_int_ge(fds[n++] = connect_as(u), 0);
        feed_partial(fds, n, part);
        b = varlink_server_buffered_bytes(server);
        ck_assert_msg(b <= VARLINK_INPUT_MAX, "other uids hold %zu bytes of input", b);
        /* Root is served meanwhile, and so is another user's small call: every connection has
         * room for one message of VARLINK_INPUT_FLOOR whatever the others hold. */
        int root = connect_as(0);
        echo_on(root, 7);
        close(root);
        int other = connect_as(3000);
        echo_on(other, 8);
        close(other);
        /* Gone clients give their input back. */
        for (size_t i = 0; i < n; i++)
                close(fds[i]);
        run_until_quiet();
        ck_assert_uint_eq(varlink_server_buffered_bytes(server), 0);
        ck_assert_int_eq(varlink_server_n_connections(server), fixture);
}
END_TEST

START_TEST(test_output_bounds) {
        /* Held back calls wait for longer than the idle timeout under valgrind. */
        varlink_server_set_idle_timeout(server, VARLINK_IDLE_TIMEOUT_USEC * test_slow());
        /* A stream to a peer that does not read ends at VARLINK_STREAM_OUTPUT_MAX. */
        client_send(&client, "{\"method\":\"org.example.test.Flood\",\"more\":true}");
        run_until_quiet();
        ck_assert_int_eq(flood_result, -ENOBUFS);
        ck_assert_uint_lt(flood_sent, 100000);
        run_until_quiet();
        ck_assert_int_eq(varlink_server_n_connections(server), 0);
        ck_assert_uint_eq(varlink_server_queued_bytes(server), 0);

        /* One user's 16 connections, each asking for two 768 KiB replies and reading none: the
         * uid's connections stop taking calls once it has VARLINK_UID_OUTPUT_MAX queued. */
        const size_t reply = 768 << 10;
        int fds[VARLINK_CONNECTIONS_PER_UID_MAX];
        char call[128];
        snprintf(call, sizeof(call), "{\"method\":\"org.example.test.Big\",\"parameters\":{\"n\":%zu}}", reply);
        for (unsigned i = 0; i < VARLINK_CONNECTIONS_PER_UID_MAX; i++) {
                ck_assert_int_ge(fds[i] = connect_as(1000), 0);
                for (int j = 0; j < 2; j++)
                        ck_assert_int_eq(send(fds[i], call, strlen(call) + 1, MSG_DONTWAIT | MSG_NOSIGNAL),
                                         (ssize_t) strlen(call) + 1);
        }
        run_until_quiet();
        size_t q = varlink_server_queued_bytes(server);
        ck_assert_msg(q <= VARLINK_UID_OUTPUT_MAX + reply + 64, "uid 1000 holds %zu bytes queued", q);
        ck_assert_msg(q >= VARLINK_UID_OUTPUT_MAX, "the test did not reach the bound: %zu", q);
        /* Another user is still served, and root. */
        int other = connect_as(1001), root = connect_as(0);
        echo_on(other, 5);
        echo_on(root, 6);
        /* Held back connections (no byte of a reply yet) whose clients hang up go, without
         * spinning the loop. */
        size_t n = varlink_server_n_connections(server), closed = 0;
        for (unsigned i = 0; i < VARLINK_CONNECTIONS_PER_UID_MAX; i++) {
                struct pollfd pfd = { .fd = fds[i], .events = POLLIN };
                if (poll(&pfd, 1, 0) == 0) {
                        close(fds[i]);
                        fds[i] = -EBADF;
                        closed++;
                }
        }
        ck_assert_uint_gt(closed, 0);
        run_until_quiet();
        ck_assert_int_eq(varlink_server_n_connections(server), n - closed);
        for (unsigned i = 0; i < VARLINK_CONNECTIONS_PER_UID_MAX; i++)
                if (fds[i] < 0) {
                        ck_assert_int_ge(fds[i] = connect_as(1000), 0);
                        for (int j = 0; j < 2; j++)
                                ck_assert_int_eq(send(fds[i], call, strlen(call) + 1, MSG_DONTWAIT | MSG_NOSIGNAL),
                                                 (ssize_t) strlen(call) + 1);
                }
        run_until_quiet();
        /* Read by their clients, the replies drain, and the held back calls are answered. */
        Client cs[VARLINK_CONNECTIONS_PER_UID_MAX];
        unsigned got = 0;
        for (unsigned i = 0; i < VARLINK_CONNECTIONS_PER_UID_MAX; i++)
                cs[i] = (Client) { .fd = fds[i] };
        for (uint64_t end = now_ms() + 60000 * test_slow();
             got < 2 * VARLINK_CONNECTIONS_PER_UID_MAX && now_ms() < end;) {
                for (unsigned i = 0; i < VARLINK_CONNECTIONS_PER_UID_MAX; i++) {
                        json_t *m = client_recv(&cs[i], 0);
                        if (!m)
                                continue;
                        ck_assert_int_eq(strlen(json_string_value(json_object_get(params_of(m), "x"))), reply);
                        json_decref(m);
                        got++;
                }
                q = varlink_server_queued_bytes(server);
                ck_assert_msg(q <= VARLINK_UID_OUTPUT_MAX + reply + 64, "uid 1000 holds %zu bytes queued", q);
        }
        ck_assert_int_eq(got, 2 * VARLINK_CONNECTIONS_PER_UID_MAX);
        for (unsigned i = 0; i < VARLINK_CONNECTIONS_PER_UID_MAX; i++)
                free(cs[i].buf);
        run_until_quiet();
        ck_assert_uint_eq(varlink_server_queued_bytes(server), 0);
        for (unsigned i = 0; i < VARLINK_CONNECTIONS_PER_UID_MAX; i++)
                close(fds[i]);
        close(other);
        close(root);
}
END_TEST

/* A message of n bytes, its NUL included, asking Echo for a string. */
static char *message_of_size(size_t n) {
        const char *head = "{\"method\":\"org.example.test.Echo\",\"parameters\":{\"x\":\"", *tail = "\"}}";
        char *m = malloc(n);
        ck_assert_ptr_nonnull(m);
        memset(m, 'a', n);
        memcpy(m, head, strlen(head));
        memcpy(m + n - 1 - strlen(tail), tail, strlen(tail));
        m[n - 1] = 0;
        return m;
}

START_TEST(test_message_limit_exact) {
        /* VARLINK_MESSAGE_MAX bytes with the NUL: taken. */
        _cleanup_free_ char *ok = message_of_size(VARLINK_MESSAGE_MAX),
                            *over = message_of_size(VARLINK_MESSAGE_MAX + 1);
        client_send_raw(&client, ok, VARLINK_MESSAGE_MAX);
        _cleanup_(json_decrefp) json_t *a = client_recv(&client, 5000);
        ck_assert_ptr_nonnull(a);
        ck_assert_ptr_null(error_of(a));
        ck_assert_int_eq(strlen(json_string_value(json_object_get(params_of(a), "x"))),
                         VARLINK_MESSAGE_MAX -
                                 strlen("{\"method\":\"org.example.test.Echo\",\"parameters\":{\"x\":\"\"}}") - 1);
        /* One byte more: refused, and the connection closes. */
        client_send_raw(&client, over, VARLINK_MESSAGE_MAX + 1);
        assert_refused_and_closed("message too long");
}
END_TEST

/* ---- org.rtpart.Manager on a fake host ---- */

static char *host_dir;
static Root *mroot;
static Manager *manager;

static void manager_setup(void) {
        _cleanup_free_ char *cmd = NULL;
        proto_setup();
        host_dir = test_copy_host("vm");
        ck_assert(asprintf(&cmd,
                           "mkdir -p '%s/usr/share/rtpart/profiles' '%s/etc/rtpart/profiles' && "
                           "cp '%s'/profiles/*.json '%s/usr/share/rtpart/profiles/'",
                           host_dir, host_dir, SOURCE_DIR, host_dir) >= 0);
        ck_assert_int_eq(system(cmd), 0);
        test_write(host_dir, "etc/rtpart/profiles/rt-correct.json",
                   "{\"summary\": \"realtime, drift corrected\", \"include\": \"realtime\", "
                   "\"drift\": {\"policy\": \"report\", \"domains\": {\"sysctl\": \"correct\"}}}\n");
        ck_assert_int_ge(root_new(host_dir, &mroot), 0);
        ManagerOptions o = { .debounce_usec = 5000 };
        ck_assert_int_ge(manager_new(event, mroot, &o, &manager), 0);
        ck_assert_int_ge(manager_varlink_attach(manager, server), 0);
        ck_assert_int_ge(manager_startup(manager), 0);
}

static void manager_teardown(void) {
        manager = manager_free(manager);
        proto_teardown();
        mroot = root_free(mroot);
        test_rmtree(host_dir);
        free(host_dir);
}

/* A client whose SO_PEERCRED says uid 65534: the credentials of a socketpair are those of its
 * creator, so create it with that effective uid. */
static Client unprivileged_client(void) {
        int fds[2];
        ck_assert_int_eq(seteuid(65534), 0);
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
        ck_assert_int_eq(seteuid(0), 0);
        ck_assert_int_ge(varlink_server_add_connection(server, fds[0]), 0);
        return (Client) { .fd = fds[1] };
}

START_TEST(test_manager_read_calls) {
        _cleanup_(json_decrefp) json_t *info =
                client_call(&client,
                            "{\"method\":\"org.varlink.service.GetInterfaceDescription\","
                            "\"parameters\":{\"interface\":\"org.rtpart.Manager\"}}");
        const char *desc = json_string_value(json_object_get(params_of(info), "description"));
        ck_assert_ptr_nonnull(desc);
        ck_assert_ptr_nonnull(strstr(desc, "interface org.rtpart.Manager\n"));
        ck_assert_ptr_nonnull(strstr(desc, "method Watch() -> ("));

        _cleanup_(json_decrefp) json_t *l = client_call(&client, "{\"method\":\"org.rtpart.Manager.ListProfiles\"}");
        json_t *profiles = json_object_get(params_of(l), "profiles");
        bool found = false;
        size_t i;
        json_t *p;
        json_array_foreach (profiles, i, p)
                found = found || streq(json_string_value(json_object_get(p, "name")), "realtime");
        ck_assert(found);

        _cleanup_(json_decrefp) json_t *plan = client_call(&client,
                                                           "{\"method\":\"org.rtpart.Manager.Plan\","
                                                           "\"parameters\":{\"profile\":\"realtime\"}}");
        ck_assert_ptr_null(error_of(plan));
        ck_assert_str_eq(json_string_value(json_object_get(params_of(plan), "profile")), "realtime");
        ck_assert_int_gt(json_array_size(json_object_get(params_of(plan), "changes")), 0);
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(params_of(plan), "cpus"), "isolated")),
                         "1-3");

        _cleanup_(json_decrefp) json_t *bad = client_call(&client,
                                                          "{\"method\":\"org.rtpart.Manager.Plan\","
                                                          "\"parameters\":{\"profile\":\"no-such-profile\"}}");
        ck_assert_str_eq(error_of(bad), "org.rtpart.Manager.InvalidProfile");
        ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(params_of(bad), "message")), "no-such-profile"));

        _cleanup_(json_decrefp) json_t *noarg = client_call(&client, "{\"method\":\"org.rtpart.Manager.Plan\"}");
        ck_assert_str_eq(error_of(noarg), VARLINK_ERROR_INVALID_PARAMETER);

        _cleanup_(json_decrefp) json_t *st = client_call(&client, "{\"method\":\"org.rtpart.Manager.Status\"}");
        ck_assert(json_is_null(json_object_get(params_of(st), "profile")));

        _cleanup_(json_decrefp) json_t *w = client_call(&client, "{\"method\":\"org.rtpart.Manager.Watch\"}");
        ck_assert_str_eq(error_of(w), VARLINK_ERROR_EXPECTED_MORE);
}
END_TEST

/* Root only: a peer of another uid is made with seteuid(). */
START_TEST(test_manager_refuses_non_root) {
        Client c = unprivileged_client();
        _cleanup_(json_decrefp) json_t *a = client_call(&c,
                                                        "{\"method\":\"org.rtpart.Manager.Apply\","
                                                        "\"parameters\":{\"profile\":\"realtime\"}}");
        ck_assert_str_eq(error_of(a), "org.rtpart.Manager.PermissionDenied");
        _cleanup_(json_decrefp) json_t *r = client_call(&c, "{\"method\":\"org.rtpart.Manager.Revert\"}");
        ck_assert_str_eq(error_of(r), "org.rtpart.Manager.PermissionDenied");
        _cleanup_(json_decrefp) json_t *v = client_call(&c, "{\"method\":\"org.rtpart.Manager.Verify\"}");
        ck_assert_ptr_null(error_of(v));
        /* A file is read as root: only root names one; names are open to all. */
        _cleanup_(json_decrefp) json_t *pf = client_call(&c,
                                                         "{\"method\":\"org.rtpart.Manager.Plan\","
                                                         "\"parameters\":{\"profile\":\"/etc/shadow.json\"}}");
        ck_assert_str_eq(error_of(pf), "org.rtpart.Manager.PermissionDenied");
        _cleanup_(json_decrefp) json_t *pn = client_call(&c,
                                                         "{\"method\":\"org.rtpart.Manager.Plan\","
                                                         "\"parameters\":{\"profile\":\"realtime\"}}");
        ck_assert_ptr_null(error_of(pn));
        close(c.fd);
        free(c.buf);
        _cleanup_free_ char *state = NULL;
        ck_assert(asprintf(&state, "%s/var/lib/rtpart/state.json", host_dir) >= 0);
        ck_assert_int_ne(access(state, F_OK), 0); /* nothing was applied */
}
END_TEST

static char *read_knob(const char *rel) {
        _cleanup_free_ char *path = NULL;
        char buf[256] = {};
        ck_assert(asprintf(&path, "%s/%s", host_dir, rel) >= 0);
        FILE *f = fopen(path, "re");
        ck_assert_ptr_nonnull(f);
        ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
        fclose(f);
        buf[strcspn(buf, "\n")] = 0;
        return strdup(buf);
}

/* Root only: Apply needs a root peer. */
START_TEST(test_manager_watch_reports_and_corrects) {
        _cleanup_(json_decrefp) json_t *a = client_call(&client,
                                                        "{\"method\":\"org.rtpart.Manager.Apply\","
                                                        "\"parameters\":{\"profile\":\"rt-correct\"}}");
        ck_assert_msg(!error_of(a), "Apply: %s", json_dumps(a, 0));
        ck_assert(json_is_true(json_object_get(params_of(a), "ok")));

        Client w = { .fd = -1 };
        int fds[2];
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
        ck_assert_int_ge(varlink_server_add_connection(server, fds[0]), 0);
        w.fd = fds[1];
        _cleanup_(json_decrefp) json_t *first =
                client_call(&w, "{\"method\":\"org.rtpart.Manager.Watch\",\"more\":true}");
        ck_assert_str_eq(json_string_value(json_object_get(params_of(first), "event")), "status");
        ck_assert(json_is_true(json_object_get(params_of(first), "in_sync")));

        /* sysctl: corrected; irq: only reported. */
        test_write(host_dir, "proc/sys/vm/swappiness", "60\n");
        _cleanup_(json_decrefp) json_t *d = client_recv(&w, 2000);
        ck_assert_msg(d, "no drift event within 2 s");
        ck_assert_str_eq(json_string_value(json_object_get(params_of(d), "event")), "drift");
        json_t *e = json_array_get(json_object_get(params_of(d), "drift"), 0);
        ck_assert_str_eq(json_string_value(json_object_get(e, "knob")), "sysctl/vm.swappiness");
        ck_assert_str_eq(json_string_value(json_object_get(e, "actual")), "60");
        ck_assert_str_eq(json_string_value(json_object_get(e, "expected")), "10");
        _cleanup_(json_decrefp) json_t *c = client_recv(&w, 2000);
        ck_assert_msg(c, "no corrected event");
        ck_assert_str_eq(json_string_value(json_object_get(params_of(c), "event")), "corrected");
        ck_assert(json_is_true(json_object_get(params_of(c), "in_sync")));
        _cleanup_free_ char *v = read_knob("proc/sys/vm/swappiness");
        ck_assert_str_eq(v, "10");

        test_write(host_dir, "proc/irq/default_smp_affinity", "f\n");
        _cleanup_(json_decrefp) json_t *d2 = client_recv(&w, 2000);
        ck_assert_msg(d2, "no drift event for the irq knob");
        e = json_array_get(json_object_get(params_of(d2), "drift"), 0);
        ck_assert_str_eq(json_string_value(json_object_get(e, "knob")), "irq/default_affinity");
        ck_assert_int_eq(json_integer_value(json_object_get(params_of(d2), "drift_count")), 1);
        _cleanup_(json_decrefp) json_t *none = client_recv(&w, 300);
        ck_assert_ptr_null(none); /* report only: no correction */
        _cleanup_free_ char *irq = read_knob("proc/irq/default_smp_affinity");
        ck_assert_str_eq(irq, "f");

        /* Correct on request, then Revert: the stream sees both. */
        _cleanup_(json_decrefp) json_t *cr = client_call(&client, "{\"method\":\"org.rtpart.Manager.Correct\"}");
        ck_assert_msg(!error_of(cr), "Correct: %s", json_dumps(cr, 0));
        ck_assert_int_eq(json_integer_value(json_object_get(params_of(cr), "drift")), 0);
        _cleanup_(json_decrefp) json_t *c2 = client_recv(&w, 2000);
        ck_assert_str_eq(json_string_value(json_object_get(params_of(c2), "event")), "corrected");
        _cleanup_(json_decrefp) json_t *rv = client_call(&client, "{\"method\":\"org.rtpart.Manager.Revert\"}");
        ck_assert(json_is_true(json_object_get(params_of(rv), "ok")));
        _cleanup_(json_decrefp) json_t *r2 = client_recv(&w, 2000);
        ck_assert_str_eq(json_string_value(json_object_get(params_of(r2), "event")), "reverted");
        _cleanup_free_ char *sw = read_knob("proc/sys/vm/swappiness");
        ck_assert_str_eq(sw, "60"); /* the vm host's original */
        close(w.fd);
        free(w.buf);
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("varlink");
        TCase *tc = tcase_create("protocol");
        tcase_add_checked_fixture(tc, proto_setup, proto_teardown);
        tcase_add_test(tc, test_get_info);
        tcase_add_test(tc, test_unknown_names_keep_the_connection);
        tcase_add_test(tc, test_pipelined_calls_answer_in_order);
        tcase_add_test(tc, test_more_required);
        tcase_add_test(tc, test_oneway_gets_no_answer);
        tcase_add_test(tc, test_malformed_input_closes);
        tcase_add_test(tc, test_many_values_refused);
        tcase_add_test(tc, test_failed_connection_drains_bounded);
        tcase_add_test(tc, test_oversized_message_closes);
        tcase_add_test(tc, test_peer_uid);
        tcase_add_test(tc, test_streaming_client_goes_away);
        tcase_add_test(tc, test_listen_address_long_path);
        tcase_add_test(tc, test_client);
        tcase_add_test(tc, test_client_call_timeout);
        suite_add_tcase(s, tc);

        TCase *tl = tcase_create("limits");
        tcase_add_checked_fixture(tl, proto_setup, proto_teardown);
        tcase_set_timeout(tl, 60);
        tcase_add_test(tl, test_connections_per_uid);
        tcase_add_test(tl, test_connections_root_reserve);
        tcase_add_test(tl, test_client_reads_the_refusal);
        tcase_add_test(tl, test_refused_client_sends_first);
        tcase_add_test(tl, test_busy_uid_waits_root_does_not);
        tcase_add_test(tl, test_idle_timeout);
        tcase_add_test(tl, test_back_pressure);
        tcase_add_test(tl, test_output_bounds);
        tcase_add_test(tl, test_input_bounds);
        tcase_add_test(tl, test_message_limit_exact);
        suite_add_tcase(s, tl);

        TCase *tm = tcase_create("manager");
        tcase_add_checked_fixture(tm, manager_setup, manager_teardown);
        tcase_set_timeout(tm, 60);
        tcase_add_test(tm, test_manager_read_calls);
        suite_add_tcase(s, tm);

        TCase *tr = tcase_create("manager-root");
        tcase_add_checked_fixture(tr, manager_setup, manager_teardown);
        tcase_set_timeout(tr, 60);
        tcase_add_test(tr, test_manager_refuses_non_root);
        tcase_add_test(tr, test_manager_watch_reports_and_corrects);
        test_add_root_tcase(s, tr, "Apply needs a root peer, and a peer of another uid is made with seteuid()");
        return s;
}

int main(void) {
        return test_run(suite());
}
