/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target for the varlink server's input path (daemon/wire/varlink-*.c): the bytes are what a
 * client sends on one connection (NUL-framed messages), written into a socketpair the server
 * serves, then the client end shuts down its side. The server parses, checks and dispatches every
 * message (org.varlink.service and a small test interface whose methods check their parameters
 * the way rtpartd's do). What must hold:
 *   - the server ends the connection by itself, in a bounded number of event loop iterations;
 *   - everything it sends is NUL-framed JSON objects, each a reply ("parameters" an object,
 *     "continues" a boolean if present) or an error ("error" a string);
 *   - no more final replies than messages sent, plus one for a protocol error;
 *   - once the connection is gone the server holds no input or output bytes for it.
 * The same bytes then go the other way, as a server's replies to rtpartctl's client
 * (varlink_client_recv): every message it returns is the JSON object between two NULs, in order,
 * and it ends with the connection (or a message that is not an object), never waiting. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "varlink.h"

static sd_event *event;
static VarlinkServer *server;
static char dir[64], sock_path[100];
static int listen_fd = -EBADF;

static void cleanup(void) {
        unlink(sock_path);
        rmdir(dir);
}

static int m_echo(VarlinkCall *call, json_t *params, VarlinkCallFlags flags, void *userdata) {
        return varlink_call_reply(call, json_deep_copy(params));
}

/* {"n": 0…8} notifications, then the final reply; like rtpartd's Watch. */
static int m_count(VarlinkCall *call, json_t *params, VarlinkCallFlags flags, void *userdata) {
        json_t *n = json_object_get(params, "n");
        if (!json_is_integer(n) || json_integer_value(n) < 0 || json_integer_value(n) > 8)
                return varlink_call_error_invalid_parameter(call, "n");
        if (!(flags & VARLINK_CALL_MORE))
                return varlink_call_error(call, VARLINK_ERROR_EXPECTED_MORE, NULL);
        for (json_int_t i = 0; i < json_integer_value(n); i++) {
                int r = varlink_call_notify(call, json_pack("{s:I}", "i", i));
                if (r < 0)
                        return r;
        }
        return varlink_call_reply(call, json_pack("{s:I}", "i", json_integer_value(n)));
}

/* {"profile": string} as rtpartd's Plan and Apply take it. */
static int m_profile(VarlinkCall *call, json_t *params, VarlinkCallFlags flags, void *userdata) {
        const char *profile = json_string_value(json_object_get(params, "profile"));
        if (!profile || !*profile)
                return varlink_call_error_invalid_parameter(call, "profile");
        return varlink_call_reply(call, json_pack("{s:s}", "profile", profile));
}

static int m_fail(VarlinkCall *call, json_t *params, VarlinkCallFlags flags, void *userdata) {
        return -EIO;
}

static const VarlinkMethod methods[] = {
        { "org.rtpart.Fuzz.Echo", m_echo },
        { "org.rtpart.Fuzz.Count", m_count },
        { "org.rtpart.Fuzz.Profile", m_profile },
        { "org.rtpart.Fuzz.Fail", m_fail },
        {},
};

static void setup(void) {
        if (sd_event_new(&event) < 0 || varlink_server_new(event, &server) < 0 ||
            varlink_server_set_info(server, "rtpart", "rtpartd", "fuzz", "https://example.org") < 0 ||
            varlink_server_add_interface(server, "org.rtpart.Fuzz", "interface org.rtpart.Fuzz\nmethod Echo() -> ()\n",
                                         methods, NULL) < 0)
                abort();

        /* A socket the client connects to, served by hand. */
        snprintf(dir, sizeof(dir), "/tmp/rtpart-fuzz-varlink-XXXXXX");
        if (!mkdtemp(dir))
                abort();
        snprintf(sock_path, sizeof(sock_path), "%s/s", dir);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
        listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(listen_fd, 4) < 0)
                abort();
        atexit(cleanup);
}

/* The bytes as a server's replies: what the client makes of them. */
static void check_client(const uint8_t *data, size_t size) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        if (varlink_client_connect(sock_path, &c) < 0)
                abort();
        int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
                abort();
        /* Less than a socket buffer: all of it is there before the client reads. */
        if (send(fd, data, size, MSG_NOSIGNAL) != (ssize_t) size)
                abort();
        close(fd);

        const uint8_t *p = data, *end = data + size;
        for (;;) {
                json_t *m = NULL;
                int r = varlink_client_recv(c, 0, &m);
                const uint8_t *nul = memchr(p, 0, (size_t) (end - p));
                if (r == -ECONNRESET) {
                        if (nul)
                                abort(); /* a whole message left unread */
                        return;
                }
                if (!nul)
                        abort(); /* a message where the bytes have none */
                json_t *want = json_loadb((const char *) p, (size_t) (nul - p), 0, NULL);
                p = nul + 1;
                if (r == -EBADMSG) {
                        bool object = json_is_object(want);
                        json_decref(want);
                        if (object)
                                abort();
                        return;
                }
                if (r < 0 || !json_is_object(m) || !json_equal(m, want))
                        abort();
                json_decref(m);
                json_decref(want);
        }
}

/* Checks one message the server sent; returns whether it was a final reply. */
static bool check_message(const char *text, size_t len) {
        json_error_t jerr;
        json_t *m = json_loadb(text, len, 0, &jerr);
        if (!m || !json_is_object(m))
                abort();
        json_t *error = json_object_get(m, "error"), *params = json_object_get(m, "parameters"),
               *continues = json_object_get(m, "continues");
        if (error ? !json_is_string(error) : !json_is_object(params))
                abort();
        if (params && !json_is_object(params))
                abort();
        if (continues && (!json_is_boolean(continues) || error))
                abort();
        bool final = !json_is_true(continues);
        json_decref(m);
        return final;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size > 65536)
                return 0;
        if (!server)
                setup();
        int fds[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds) < 0)
                abort();
        if (varlink_server_add_connection(server, fds[0]) < 0)
                abort();

        size_t sent = 0, n_msgs = 0, n_final = 0, out_len = 0, out_cap = 0;
        char *out = NULL;
        bool shut = false, eof = false;
        for (const uint8_t *p = data; p < data + size; p++)
                n_msgs += *p == 0;

        for (unsigned iter = 0; !eof; iter++) {
                if (iter > 100000)
                        abort(); /* the server never ended the connection */
                if (sent < size) {
                        ssize_t n = send(fds[1], data + sent, size - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
                        if (n > 0)
                                sent += (size_t) n;
                        else if (n < 0 && errno != EAGAIN)
                                sent = size; /* the server closed: it stops reading */
                }
                if (sent == size && !shut) {
                        (void) shutdown(fds[1], SHUT_WR);
                        shut = true;
                }
                for (;;) {
                        if (out_cap - out_len < 65536) {
                                out_cap = out_cap * 2 + 65536;
                                out = realloc(out, out_cap);
                                if (!out)
                                        abort();
                        }
                        ssize_t n = recv(fds[1], out + out_len, out_cap - out_len, MSG_DONTWAIT);
                        if (n == 0 || (n < 0 && errno == ECONNRESET))
                                eof = true;
                        if (n <= 0)
                                break;
                        out_len += (size_t) n;
                }
                if (!eof && sd_event_run(event, 100 * 1000) < 0)
                        abort();
        }
        close(fds[1]);

        /* The connection is gone once the client saw its end; let the loop finish with it. */
        for (unsigned i = 0; i < 100 && varlink_server_n_connections(server) > 0; i++)
                (void) sd_event_run(event, 0);
        if (varlink_server_n_connections(server) != 0 || varlink_server_queued_bytes(server) != 0 ||
            varlink_server_buffered_bytes(server) != 0)
                abort();

        size_t off = 0;
        while (off < out_len) {
                char *nul = memchr(out + off, 0, out_len - off);
                if (!nul)
                        abort(); /* a message without its NUL */
                n_final += check_message(out + off, (size_t) (nul - (out + off)));
                off = (size_t) (nul - out) + 1;
        }
        if (n_final > n_msgs + 1)
                abort();
        free(out);

        check_client(data, size);
        return 0;
}
