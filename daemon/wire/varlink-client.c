/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "varlink-internal.h"

/* The client (rtpartctl, tests): one connection, calls sent and replies read in order, blocking
 * with a timeout. */

/* The address of the socket at `path` (absolute). A path too long for sun_path goes through its
 * directory's fd (*ret_dfd, to be closed after bind or connect). */
int socket_address(const char *path, struct sockaddr_un *sa, int *ret_dfd) {
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
        return varlink_client_new(TAKE_FD(fd), ret);
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
                json_pack("{s:s, s:o}", "method", method, "parameters", parameters ? parameters : json_object());
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
